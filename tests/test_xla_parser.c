/*
 * test_xla_parser.c: agreement with XLA's own parser tests
 * ($TPUSIM_SHARED/data/xla-parser-tests: module texts and what XLA does
 * with each, expectations.csv). Every text XLA accepts must read, build
 * and cost on v3; every text XLA rejects must be refused with a located
 * error. For the rejected texts listed in golden/xla_parser_rejects.txt
 * the error must also sit on the line XLA's error names and say the same
 * reason (a phrase of tpusim's message, chosen by hand against
 * xla_message). A rejected text not in that list (the set grows) only has
 * to be refused with a location. Every disagreement is printed by id
 * before the test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_spec.h"
#include "ir.h"
#include "sim.h"
#include "test_util.h"

/* One hand-checked rejection: the line of the error and a phrase of it. */
struct golden {
	char id[128];
	unsigned line;
	char phrase[256];
	bool seen;
};

/* golden/xla_parser_rejects.txt: "id<TAB>line<TAB>phrase" per line, '#'
 * comments. */
static int load_golden(struct golden *g, int cap)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/golden/xla_parser_rejects.txt",
		 getenv("TPUSIM_SOURCE"));
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (n == cap)
			fail_msg("%s: more than %d entries", path, cap);
		line[strcspn(line, "\n")] = '\0';
		char *t1 = strchr(line, '\t');
		char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t2)
			fail_msg("%s: bad line '%s'", path, line);
		*t1 = *t2 = '\0';
		snprintf(g[n].id, sizeof g[n].id, "%.127s", line);
		g[n].line = (unsigned)atoi(t1 + 1);
		snprintf(g[n].phrase, sizeof g[n].phrase, "%.255s", t2 + 1);
		g[n].seen = false;
		n++;
	}
	fclose(f);
	return n;
}

/* Parses, builds and costs every module of path on hw; on failure fills
 * d and returns false. */
static bool read_and_cost(const char *path, const struct hw_spec *hw,
			  struct ts_diag *d)
{
	char *text = NULL;
	struct ir_module **m = NULL;
	int n = 0;
	if (hlo_parse_file(path, &text, &m, &n, d) != TS_OK) {
		ts_free(text);
		return false;
	}
	bool ok = true;
	for (int i = 0; i < n; i++) {
		struct sim_program p;
		struct sim_program_opts opts = {.default_trip_count = 0};
		if (ok && sim_program_build(m[i], &opts, &p, d) == TS_OK) {
			ok = sim_program_estimate(&p, hw, d) == TS_OK &&
			     isfinite(p.total_ns) && p.total_ns >= 0;
			sim_program_free(&p);
		} else {
			ok = false;
		}
		ir_module_free(m[i]);
	}
	ts_free(m);
	ts_free(text);
	return ok;
}

static void test_agreement(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !getenv("TPUSIM_SOURCE")) {
		print_message("TPUSIM_SHARED or TPUSIM_SOURCE is not set: "
			      "skipping the XLA parser-test agreement\n");
		skip();
	}
	struct hw_spec hw;
	assert_true(tu_load_spec("v3", &hw));
	static struct golden g[256];
	int n_golden = load_golden(g, (int)TS_ARRAY_LEN(g));
	char dir[4096], path[8192];
	snprintf(dir, sizeof dir, "%s/data/xla-parser-tests", shared);
	snprintf(path, sizeof path, "%s/expectations.csv", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	char line[8192];
	int n_acc = 0, ok_acc = 0, n_rej = 0, ok_rej = 0, n_bad = 0;
	int n_hand = 0;
	bool header = true;
	while (fgets(line, sizeof line, f)) {
		if (header) {
			header = false;
			continue;
		}
		/* id, file and expect never hold commas or quotes */
		char *id = line, *file = strchr(id, ',');
		char *expect = file ? strchr(file + 1, ',') : NULL;
		char *end = expect ? strchr(expect + 1, ',') : NULL;
		if (!end)
			fail_msg("%s: bad row '%s'", path, line);
		*file++ = *expect++ = *end = '\0';
		bool accept = strcmp(expect, "accept") == 0;
		char hlo[8192];
		snprintf(hlo, sizeof hlo, "%s/%s", dir, file);
		struct ts_diag d = {0};
		bool read = read_and_cost(hlo, &hw, &d);
		if (accept) {
			n_acc++;
			if (read) {
				ok_acc++;
				continue;
			}
			n_bad++;
			print_message("DISAGREE %s: XLA accepts it, tpusim says "
				      "%u:%u: %s\n", id, d.line, d.col, d.msg);
			continue;
		}
		n_rej++;
		if (read || d.line == 0 || d.col == 0) {
			n_bad++;
			print_message("DISAGREE %s: XLA rejects it, tpusim %s%s\n",
				      id, read ? "reads it" : "refuses it without "
				      "a location: ", read ? "" : d.msg);
			continue;
		}
		struct golden *want = NULL;
		for (int i = 0; i < n_golden && !want; i++)
			if (strcmp(g[i].id, id) == 0)
				want = &g[i];
		if (want) {
			want->seen = true;
			n_hand++;
			if (d.line != want->line || !strstr(d.msg, want->phrase)) {
				n_bad++;
				print_message("DISAGREE %s: want line %u saying "
					      "'%s', tpusim says %u:%u: %s\n",
					      id, want->line, want->phrase,
					      d.line, d.col, d.msg);
				continue;
			}
		}
		ok_rej++;
	}
	fclose(f);
	for (int i = 0; i < n_golden; i++)
		if (!g[i].seen)
			fail_msg("golden entry %s is not a rejected text of the set",
				 g[i].id);
	print_message("xla-parser-tests: %d/%d accepted texts read and costed, "
		      "%d/%d rejected texts refused at their line (%d checked "
		      "against XLA's reason by hand)\n",
		      ok_acc, n_acc, ok_rej, n_rej, n_hand);
	assert_true(n_acc > 0 && n_rej > 0);
	assert_int_equal(n_bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agreement),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
