/*
 * test_corpus.c: every file of data/hlo-corpus and data/tpugraphs-tile-v3
 * parses, every module's computation count and per-opcode instruction counts
 * equal the independent counts of scripts/corpus_counts.py
 * (tests/golden/corpus_counts.txt), and every operand and called computation
 * resolves inside its own computation / module. Skips without TPUSIM_SHARED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define MAX_GOLDEN 1024

/* One golden line: file, module index, computations, per-opcode counts. */
struct golden {
	char file[256];
	int module;
	int comps;
	int64_t counts[IR_OP_COUNT];
	bool seen;
};

struct corpus {
	const char *data;          /* $TPUSIM_SHARED/data */
	struct golden *g;
	int n;
};

static struct corpus corpus_state;

static void load_golden(struct corpus *c)
{
	const char *src = getenv("TPUSIM_SOURCE");
	assert_non_null(src);
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/golden/corpus_counts.txt", src);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	c->g = calloc(MAX_GOLDEN, sizeof *c->g);
	assert_non_null(c->g);
	char line[8192];
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		assert_true(c->n < MAX_GOLDEN);
		struct golden *g = &c->g[c->n++];
		char *save = NULL;
		char *tok = strtok_r(line, " \n", &save);
		assert_non_null(tok);
		snprintf(g->file, sizeof g->file, "%s", tok);
		tok = strtok_r(NULL, " \n", &save);
		assert_non_null(tok);
		g->module = atoi(tok);
		while ((tok = strtok_r(NULL, " \n", &save))) {
			char *eq = strchr(tok, '=');
			assert_non_null(eq);
			*eq = '\0';
			long long v = atoll(eq + 1);
			if (strcmp(tok, "comps") == 0) {
				g->comps = (int)v;
				continue;
			}
			enum ir_op op = ir_op_from_name(tok, strlen(tok));
			if (op == IR_OP_INVALID)
				fail_msg("golden file: unknown opcode %s", tok);
			g->counts[op] = v;
		}
	}
	fclose(f);
	assert_true(c->n > 0);
}

static int setup(void **state)
{
	const char *shared = getenv("TPUSIM_SHARED");
	static char data[1024];
	if (!shared || !*shared) {
		*state = NULL;
		return 0;
	}
	snprintf(data, sizeof data, "%s/data", shared);
	corpus_state.data = data;
	*state = &corpus_state;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(corpus_state.g);
	return 0;
}

static struct golden *find_golden(struct corpus *c, const char *file, int module)
{
	for (int i = 0; i < c->n; i++)
		if (c->g[i].module == module && strcmp(c->g[i].file, file) == 0)
			return &c->g[i];
	return NULL;
}

/* Every reference points inside the module, operands into the same
 * computation, and the derived facts agree with each other. */
static void check_links(const struct ir_module *m, const char *file)
{
	int64_t instrs = 0;
	assert_non_null(m->entry);
	assert_true(m->entry->is_entry);
	for (int ci = 0; ci < m->n_comps; ci++) {
		const struct ir_computation *c = m->comps[ci];
		assert_int_equal(c->index, ci);
		assert_non_null(c->root);
		assert_true(c->root->flags & IR_INSTR_ROOT);
		instrs += c->n_instrs;
		for (int k = 0; k < c->n_params; k++) {
			assert_non_null(c->params[k]);
			assert_int_equal(c->params[k]->attrs.parameter_number, k);
		}
		for (int i = 0; i < c->n_instrs; i++) {
			const struct ir_instr *in = c->instrs[i];
			assert_ptr_equal(in->parent, c);
			assert_int_equal(in->index, i);
			assert_true(in->line >= 1 && in->col >= 1);
			assert_true(in->op > IR_OP_INVALID && in->op < IR_OP_COUNT);
			assert_true(in->shape.type != IR_TYPE_INVALID);
			for (int k = 0; k < in->n_operands; k++) {
				const struct ir_instr *o = in->operands[k];
				if (!o || o->parent != c)
					fail_msg("%s: %s operand %d does not resolve", file,
						 in->name, k);
			}
			for (int k = 0; k < in->n_called; k++) {
				const struct ir_computation *callee = in->called[k];
				if (!callee || callee->index >= m->n_comps ||
				    m->comps[callee->index] != callee)
					fail_msg("%s: %s called computation %d is not in the module",
						 file, in->name, k);
				assert_true(callee->n_callers >= 1);
			}
		}
	}
	assert_int_equal(m->n_instrs, instrs);
}

static void check_file(struct corpus *c, const char *rel, int *n_modules,
		       int64_t *n_instrs)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", c->data, rel);
	char *text = NULL;
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse_file(path, &text, &m, &n, &d);
	if (st != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("%s does not parse", rel);
	}
	for (int k = 0; k < n; k++) {
		struct golden *g = find_golden(c, rel, k);
		if (!g)
			fail_msg("%s module %d: no golden counts (rerun scripts/corpus_counts.py?)",
				 rel, k);
		g->seen = true;
		check_links(m[k], rel);
		if (m[k]->n_comps != g->comps)
			fail_msg("%s module %d: %d computations, golden %d", rel, k,
				 m[k]->n_comps, g->comps);
		int64_t counts[IR_OP_COUNT];
		ir_module_count_ops(m[k], counts);
		for (int op = 0; op < IR_OP_COUNT; op++)
			if (counts[op] != g->counts[op])
				fail_msg("%s module %d: %lld %s, golden %lld", rel, k,
					 (long long)counts[op], ir_op_name((enum ir_op)op),
					 (long long)g->counts[op]);
		*n_instrs += m[k]->n_instrs;
		ir_module_free(m[k]);
	}
	*n_modules += n;
	ts_free(m);
	ts_free(text);
}

static void check_folder(struct corpus *c, const char *folder, int *n_files,
			 int *n_modules, int64_t *n_instrs)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", c->data, folder);
	DIR *dir = opendir(path);
	if (!dir)
		fail_msg("cannot open %s", path);
	struct dirent *e;
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".hlo") != 0)
			continue;
		char rel[512];
		snprintf(rel, sizeof rel, "%s/%s", folder, e->d_name);
		check_file(c, rel, n_modules, n_instrs);
		(*n_files)++;
	}
	closedir(dir);
}

static void test_corpus_counts(void **state)
{
	struct corpus *c = *state;
	if (!c) {
		print_message("TPUSIM_SHARED is not set: skipping the corpus test\n");
		skip();
	}
	load_golden(c);
	int files = 0, modules = 0;
	int64_t instrs = 0;
	check_folder(c, "hlo-corpus", &files, &modules, &instrs);
	check_folder(c, "tpugraphs-tile-v3/modules", &files, &modules, &instrs);
	for (int i = 0; i < c->n; i++)
		if (!c->g[i].seen)
			fail_msg("golden module %s %d was not produced by the parser",
				 c->g[i].file, c->g[i].module);
	print_message("corpus: %d files, %d modules, %lld instructions\n", files,
		      modules, (long long)instrs);
	assert_int_equal(modules, c->n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_corpus_counts, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
