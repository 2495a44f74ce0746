/*
 * test_util.c: the shared test helpers of test_util.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include "test_util.h"

void tu_build_file(const char *file, const char *text, size_t len,
		   const struct sim_program_opts *opts, struct tu_built *b)
{
	memset(b, 0, sizeof *b);
	struct ts_diag d = {0};
	if (hlo_parse(file, text, len, &b->m, &b->n, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("parse failed: %s", d.msg);
	}
	if (sim_program_build(b->m[0], opts, &b->p, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("build failed: %s", d.msg);
	}
}

void tu_build(const char *text, struct tu_built *b)
{
	tu_build_file("t.hlo", text, strlen(text), NULL, b);
}

void tu_built_free(struct tu_built *b)
{
	sim_program_free(&b->p);
	for (int i = 0; i < b->n; i++)
		ir_module_free(b->m[i]);
	ts_free(b->m);
	memset(b, 0, sizeof *b);
}

const struct sim_kernel *tu_kernel(const struct tu_built *b, const char *name)
{
	for (int i = 0; i < b->p.n_kernels; i++)
		if (strcmp(b->p.kernels[i].name, name) == 0)
			return &b->p.kernels[i];
	fail_msg("no kernel named %s", name);
	return NULL;
}

bool tu_load_spec(const char *gen, struct hw_spec *hw)
{
	const char *src = getenv("TPUSIM_SOURCE");
	if (!src) {
		print_message("TPUSIM_SOURCE unset (hwspecs/%s.yaml): skipped\n",
			      gen);
		return false;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/hwspecs/%s.yaml", src, gen);
	struct ts_diag d = {0};
	if (hw_spec_load(path, hw, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("cannot load %s: %s", path, d.msg);
	}
	return true;
}

const char *tu_tmpdir(void)
{
	const char *dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

void tu_tmp_path(char *buf, size_t n, const char *stem, const char *ext)
{
	snprintf(buf, n, "%s/%s_%d%s", tu_tmpdir(), stem, (int)getpid(), ext);
}

void tu_rm_tree(const char *path)
{
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			tu_rm_tree(sub);
		}
		closedir(d);
	}
	remove(path);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tu_each_hlo(const char *data, const char *folder, int every,
		 void (*fn)(const char *rel, const char *text, size_t len,
			    void *ctx),
		 void *ctx)
{
	char dir_path[1100];
	snprintf(dir_path, sizeof dir_path, "%s/%s", data, folder);
	DIR *dir = opendir(dir_path);
	if (!dir)
		fail_msg("cannot open %s", dir_path);
	char **names = NULL;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".hlo") != 0)
			continue;
		names = realloc(names, (size_t)(n + 1) * sizeof *names);
		assert_non_null(names);
		names[n] = strdup(e->d_name);
		assert_non_null(names[n++]);
	}
	closedir(dir);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	for (int i = 0; i < n; i++) {
		if (i % every == 0) {
			char path[1536], rel[512];
			snprintf(path, sizeof path, "%s/%s", dir_path, names[i]);
			snprintf(rel, sizeof rel, "%s/%s", folder, names[i]);
			char *text;
			size_t len;
			struct ts_diag d = {0};
			if (ts_read_file(path, &text, &len, &d) != TS_OK)
				fail_msg("%s: %s", path, d.msg);
			fn(rel, text, len, ctx);
			ts_free(text);
		}
		free(names[i]);
	}
	free(names);
}
