/*
 * test_plan_reuse.c: a kernel's plan built on one spec serves every spec
 * that differs from it only in fields sim_plan_spec_free names (what a
 * what-if sweep relies on to build each plan once). For every kernel of
 * every module in data/hlo-corpus, data/tpugraphs-tile-v3,
 * data/tpuv3-allreduce and data/tpuv4-ops (pooling modules among them),
 * and f32 dots at each precision, on v3 and v4, and every such field
 * changed (x2, or /2 where x2 is out of range): the estimate from the plan
 * built on the base spec, costed on the changed one (sim_plan_cost), is
 * bit for bit the estimate of the plan built on the changed spec
 * (sim_kernel_estimate). Compared with the default tile config searched
 * anew on each spec on every kernel but those of nine in ten tpuv4-ops
 * modules, which are compared at their default config on the base spec
 * (the search costs configs the same way, so it is covered by the
 * rest).
 * Controls: each of vpu.cost.simple, vpu.lanes and mxu.f32_passes, which
 * plans read, makes the two differ on some kernel, so the comparison can
 * fail. Skips without TPUSIM_SHARED.
 *
 * Plans are built once per kernel on the base spec and shared by every
 * field. The release build checks every kernel named above; the sanitizer
 * build (TPUSIM_SANITIZED), 10-30x slower, a sample: every SAMPLE-th file of
 * each folder, every 250th of tpuv4-ops (where the release build's check
 * already covers each kernel's code paths).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

/* The spec base with field f at twice (or half) its value; false when
 * neither is accepted. */
static bool changed(const struct hw_spec *base, const struct hw_field_info *f,
		    struct hw_spec *out)
{
	double v = hw_spec_get(base, f);
	double tries[2] = {v != 0 ? 2 * v : 1, v / 2};
	for (int i = 0; i < 2; i++) {
		struct ts_diag d = {0};
		*out = *base;
		if (f->is_int && tries[i] != (double)(int64_t)tries[i])
			continue;
		if (hw_spec_apply(out, 1, &f, &tries[i], NULL, &d) == TS_OK)
			return true;
	}
	return false;
}

/* The plans of a program's kernels built once on the base spec and shared
 * by every field checked (ok[i] false: kernel i has no grid, never planned:
 * the roofline costs it), with the config each is compared at: its
 * default on the base spec, or none (the default searched on each spec). */
struct plans {
	struct sim_plan *plan;
	int n;
	bool *ok;
	struct sim_tile_config *cfg;
	bool search;
};

static void plans_build(const struct sim_program *p, const struct hw_spec *hw,
			bool search, struct plans *ps)
{
	size_t n = (size_t)p->n_kernels + 1;
	ps->plan = calloc(n, sizeof *ps->plan);
	ps->ok = calloc(n, sizeof *ps->ok);
	ps->cfg = calloc(n, sizeof *ps->cfg);
	ps->search = search;
	ps->n = p->n_kernels;
	assert_non_null(ps->plan);
	assert_non_null(ps->ok);
	assert_non_null(ps->cfg);
	for (int i = 0; i < p->n_kernels; i++) {
		struct ts_diag d = {0};
		ps->ok[i] = sim_plan_build(&p->kernels[i], hw, &ps->plan[i], &d) ==
			    TS_OK;
		if (ps->ok[i] && !search)
			sim_plan_default(&ps->plan[i], hw, &ps->cfg[i]);
	}
}

static void plans_free(struct plans *ps)
{
	for (int i = 0; i < ps->n; i++)
		sim_plan_free(&ps->plan[i]);
	free(ps->plan);
	free(ps->ok);
	free(ps->cfg);
}

/* Kernels of one program whose plan on hw2 differs from the one built on
 * the base spec (as the estimates show). */
static int differing(const struct sim_program *p, const struct plans *ps,
		     const struct hw_spec *hw2, const char *file)
{
	int n = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if (!ps->ok[i])
			continue;
		struct ts_diag d = {0};
		struct sim_estimate a, b;
		const struct sim_tile_config *cfg = ps->search ? NULL : &ps->cfg[i];
		enum ts_status sa = sim_plan_cost(&ps->plan[i], hw2, cfg, &a, &d);
		enum ts_status sb = sim_kernel_estimate(k, hw2, cfg, &b, &d);
		if (sa != sb)
			fail_msg("%s %s: status %d from the reused plan, %d "
				 "built anew", file, k->name, sa, sb);
		n += sa == TS_OK && memcmp(&a, &b, sizeof a) != 0;
	}
	return n;
}

#ifdef TPUSIM_SANITIZED
#define SAMPLE 5
#else
#define SAMPLE 1
#endif

static const char *const controls[] = {"vpu.cost.simple", "vpu.lanes",
				       "mxu.f32_passes"};
#define N_CONTROLS (int)(sizeof controls / sizeof *controls)

struct totals {
	int files, kernels;
	int free_diff;              /* kernels x free fields that differed:
	                               must be 0 */
	int control_diff[N_CONTROLS]; /* kernels that differed, per control */
};

/* Every free and control field against the kernels of one HLO text. */
static void check_text(const char *rel, const char *text, size_t len,
		       const struct hw_spec *hw, bool search, struct totals *t)
{
	struct tu_built b;
	tu_build_file(rel, text, len, NULL, &b);
	t->files++;
	t->kernels += b.p.n_kernels;
	struct plans ps;
	plans_build(&b.p, hw, search, &ps);
	for (int i = 0; i < hw_spec_n_fields(); i++) {
		const struct hw_field_info *f = hw_spec_field_at(i);
		int control = -1;
		for (int c = 0; c < N_CONTROLS; c++)
			if (!strcmp(f->path, controls[c]))
				control = c;
		if (!sim_plan_spec_free(f) && control < 0)
			continue;
		assert_false(control >= 0 && sim_plan_spec_free(f));
		struct hw_spec hw2;
		if (!changed(hw, f, &hw2))
			fail_msg("%s: neither twice nor half of %g accepted",
				 f->path, hw_spec_get(hw, f));
		int n = differing(&b.p, &ps, &hw2, rel);
		if (n && control < 0)
			print_message("%s: %d kernels of %s differ\n", f->path,
				      n, rel);
		*(control >= 0 ? &t->control_diff[control] : &t->free_diff) += n;
	}
	plans_free(&ps);
	tu_built_free(&b);
}

/* tu_each_hlo's visitor: one file's kernels, the default config searched
 * on every search_every-th file. */
struct visit {
	const struct hw_spec *hw;
	struct totals *t;
	int search_every, seen;
};

static void check_file(const char *rel, const char *text, size_t len,
		       void *ctx)
{
	struct visit *v = ctx;
	check_text(rel, text, len, v->hw, v->seen++ % v->search_every == 0,
		   v->t);
}

/* f32 dots at each operand precision: DEFAULT takes one bf16 pass, HIGH
 * and HIGHEST take passes from mxu.f32_passes. */
static const char f32_dots[] =
	"HloModule f32_dots\n"
	"ENTRY e {\n"
	"  a = f32[512,512]{1,0} parameter(0)\n"
	"  b = f32[512,512]{1,0} parameter(1)\n"
	"  d0 = f32[512,512]{1,0} dot(a, b), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  d1 = f32[512,512]{1,0} dot(a, b), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}, operand_precision={high,high}\n"
	"  d2 = f32[512,512]{1,0} dot(a, b), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}, operand_precision={highest,highest}\n"
	"  ROOT t = (f32[512,512]{1,0}, f32[512,512]{1,0}, f32[512,512]{1,0}) "
	"tuple(d0, d1, d2)\n"
	"}\n";

static void test_plan_reuse(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !*shared) {
		print_message("TPUSIM_SHARED is not set: skipping the plan "
			      "reuse test\n");
		skip();
	}
	char data[1024];
	snprintf(data, sizeof data, "%s/data", shared);
	static const char *const gens[] = {"v3", "v4"};
	for (int g = 0; g < 2; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(gens[g], &hw))
			skip();
		struct totals t = {0};
		struct visit v = {&hw, &t, 1, 0};
		tu_each_hlo(data, "hlo-corpus", SAMPLE, check_file, &v);
		tu_each_hlo(data, "tpugraphs-tile-v3/modules", SAMPLE, check_file, &v);
		tu_each_hlo(data, "tpuv3-allreduce/modules", SAMPLE, check_file, &v);
		struct visit v4 = {&hw, &t, 10, 0};
		tu_each_hlo(data, "tpuv4-ops/modules", SAMPLE == 1 ? 1 : 250,
			    check_file, &v4);
		check_text("f32_dots.hlo", f32_dots, sizeof f32_dots - 1, &hw,
			   true, &t);
		print_message("%s: %d files, %d kernels; free fields: %d "
			      "differ; controls: %s %d, %s %d, %s %d differ\n",
			      gens[g], t.files, t.kernels, t.free_diff,
			      controls[0], t.control_diff[0], controls[1],
			      t.control_diff[1], controls[2],
			      t.control_diff[2]);
		assert_true(t.kernels > 1000 / SAMPLE);
		assert_int_equal(t.free_diff, 0);
		for (int c = 0; c < N_CONTROLS; c++)
			assert_true(t.control_diff[c] > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_reuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
