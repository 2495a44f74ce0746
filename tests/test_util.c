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

#include "hybrid.h"
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

char *tu_fuse_round_trip(const char *text, const struct hw_spec *hw,
			 const struct hyb_fuse_cost *cost, int *flips,
			 double *t0, double *t1, int *k0, int *k1,
			 struct sim_fuse_stats *fs)
{
	struct ir_module **m = NULL, **back = NULL;
	int n = 0, nb = 0;
	struct ts_diag d = {0};
	struct sim_rewrites done;
	if (hlo_parse("in.hlo", text, strlen(text), &m, &n, &d) != TS_OK)
		fail_msg("parse: %s", d.msg);
	if (sim_module_rewrite(m[0], hw, &done, &d) != TS_OK)
		fail_msg("rewrite: %s", d.msg);
	struct sim_fusion_plan plan;
	if (hyb_fusion_plan_build(m[0], cost, &plan, &d) != TS_OK)
		fail_msg("plan: %s", d.msg);
	if (flips)
		*flips = plan.n_flips;
	/* the unfused module's program on hw: its time, and the values its
	 * memory-space assignment keeps in VMEM (its cross-program prefetch
	 * among them), written in S(1) */
	struct sim_program p;
	struct sim_program_opts po = {.fusion = &plan,
				      .vmem_room = sim_vmem_room(hw),
				      .schedule_hw = hw};
	assert_int_equal(sim_program_build(m[0], &po, &p, &d), TS_OK);
	assert_int_equal(sim_program_estimate(&p, hw, &d), TS_OK);
	*t0 = sim_program_total(&p);
	*k0 = p.n_kernels - sim_program_idle_copies(&p);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	assert_non_null(f);
	if (sim_fuse_write(m[0], text, strlen(text), &plan, &p, f, fs, &d) !=
	    TS_OK)
		fail_msg("fuse: %s", d.msg);
	fclose(f);
	sim_program_free(&p);
	if (hlo_parse("out.hlo", out, len, &back, &nb, &d) != TS_OK)
		fail_msg("read back: %s\n%s", d.msg, out);
	po.fusion = NULL;
	assert_int_equal(sim_program_build(back[0], &po, &p, &d), TS_OK);
	assert_int_equal(sim_program_estimate(&p, hw, &d), TS_OK);
	*t1 = sim_program_total(&p);
	*k1 = p.n_kernels - sim_program_idle_copies(&p);
	sim_program_free(&p);
	sim_fusion_plan_free(&plan);
	for (int i = 0; i < n; i++)
		ir_module_free(m[i]);
	for (int i = 0; i < nb; i++)
		ir_module_free(back[i]);
	ts_free(m);
	ts_free(back);
	return out;
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

const char tu_placement_order_hlo[] =
	"HloModule m\n"
	"ENTRY e {\n"
	"  a = bf16[256,128]{1,0} parameter(0)\n"
	"  p = bf16[1024,128]{1,0} parameter(1)\n"
	"  w = bf16[128,1024]{1,0} parameter(2)\n"
	"  v = f32[1024,128]{1,0} parameter(3)\n"
	"  s = f32[256,1024]{1,0} dot(a, w), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  l = f32[1024,1024]{1,0} dot(p, w), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  s2 = f32[256,128]{1,0} dot(s, v), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  l2 = f32[1024,128]{1,0} dot(l, v), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  ROOT t = (f32[256,128]{1,0}, f32[1024,128]{1,0}) tuple(s2, l2)\n"
	"}\n";

const char tu_weight_prefetch_hlo[] =
	"HloModule m\n"
	"add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
	" ROOT s = f32[] add(x, y) }\n"
	"ENTRY e {\n"
	"  x = bf16[1024,1024]{1,0} parameter(0)\n"
	"  w1 = f32[1024,1024]{1,0} parameter(1)\n"
	"  w2 = f32[1024,1024]{1,0} parameter(2)\n"
	"  xf = f32[1024,1024]{1,0} convert(x)\n"
	"  a = f32[1024,1024]{1,0} dot(xf, w1), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  z = f32[] constant(0)\n"
	"  r = f32[1024]{0} reduce(a, z), dimensions={1}, to_apply=add\n"
	"  rb = f32[1024,1024]{1,0} broadcast(r), dimensions={0}\n"
	"  u = f32[1024,1024]{1,0} multiply(rb, w2)\n"
	"  dead = f32[1024,1024]{1,0} negate(w2)\n"
	"  s = f32[1024]{0} reduce(u, z), dimensions={0}, to_apply=add\n"
	"  sb = f32[1024,1024]{1,0} broadcast(s), dimensions={1}\n"
	"  ROOT v = f32[1024,1024]{1,0} add(sb, w2)\n"
	"}\n";

void tu_names(const struct tu_built *b, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (int i = 0; i < b->p.n_kernels; i++) {
		if (i)
			strncat(buf, ",", cap - strlen(buf) - 1);
		strncat(buf, b->p.kernels[i].name, cap - strlen(buf) - 1);
	}
}
