/*
 * test_tile_search.c: the default tile config (sim_plan_default, a branch
 * and bound that skips every subtree whose floor, sim_plan_floor, exceeds
 * the best time so far or overflows VMEM) is the config that costing every
 * candidate picks. The reference here costs each candidate of the same set
 * (sim_plan_enumerate with sim_plan_default_per_dim) and keeps the first by
 * sim_config_better, as the search did before it pruned: the same bounds
 * and the same estimate, bit for bit (kernels no candidate fits included).
 * Every kernel of data/hlo-corpus, data/tpugraphs-tile-v3 and
 * data/tpuv3-allreduce, every other module of data/hlo-programs (the
 * Llama-3.1-405B step among them, whose largest kernels fit no candidate)
 * and every 20th of data/tpuv4-ops, on v3 (one core per kernel), v4 (megacore) and v5p; the
 * sanitizer build takes every 10th file and every 200th of tpuv4-ops. At
 * every candidate the floors of the whole config are at most its
 * estimate, and at every candidate that fits VMEM so are those of every
 * partial config the search floors on its way to it (its order of free
 * dims, those of one candidate always chosen; each partial's floors
 * computed once), none of which may say that nothing
 * fits. A control: the same search with its floors raised 25% cuts the best of a
 * convolution shaped like fusion.191 and picks a slower config, so a floor
 * that is not one would be caught. The remembered default (config.c) is
 * checked the same way on a spec changed in fields its key leaves out.
 * The same checks on two 3D convolutions shaped like a U-Net's, on a
 * dot whose blocks straddle its operands' tiles and on two kernels whose
 * outputs have one candidate per dim (mostly) need only the sources'
 * hwspecs (TPUSIM_SOURCE), as the control does; the rest skips without
 * TPUSIM_SHARED.
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

#include "model.h"
#include "test_util.h"

#ifdef TPUSIM_SANITIZED
#define SAMPLE 10
#else
#define SAMPLE 1
#endif

struct ref {
	const struct sim_plan *p;
	const struct hw_spec *hw;
	struct sim_tile_config cfg;
	struct sim_estimate est;
	int64_t n;
	bool partials; /* check the floors of cfg's partial configs too */
	/* the floors of the partial configs with 0.. free dims chosen last
	 * asked for (candidates come in odometer order: each partial's floors
	 * are computed once, not once per candidate) */
	struct sim_tile_config part[2 * SIM_MAX_GRID];
	struct sim_plan_floors floors[2 * SIM_MAX_GRID];
	double mxu[2 * SIM_MAX_GRID];
	int n_part;
	/* dims with one candidate (out dim i, kernel dim kd as out.rank +
	 * kd): the search sets them before its walk, so no partial config it
	 * floors leaves them unchosen */
	bool fixed[2 * SIM_MAX_GRID];
};

/* The free dims in the search's order (sim_plan_search): the kernel dims
 * not shared with an output dim, then the output dims, each with the dims
 * of more tiles first (ties in grid order), those with one candidate left
 * out (fixed); kernel dim kd as out.rank + kd. Returns their count. */
static int search_order(const struct sim_plan *p, const bool *fixed,
			int *dims)
{
	int n = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool kern = pass == 0;
		int rank = kern ? (p->has_kernel ? p->kern.rank : 0) : p->out.rank;
		const int64_t *tiles = kern ? p->kern.tiles : p->out.tiles;
		int first = n;
		for (int i = 0; i < rank; i++) {
			if ((kern && p->kern_shared[i] >= 0) ||
			    fixed[kern ? p->out.rank + i : i])
				continue;
			int at = n++;
			while (at > first &&
			       tiles[dims[at - 1] - (kern ? p->out.rank : 0)] < tiles[i]) {
				dims[at] = dims[at - 1];
				at--;
			}
			dims[at] = kern ? p->out.rank + i : i;
		}
	}
	return n;
}

/* Fails when a floor of a config that cfg completes (its bounds from free
 * dim `chosen` on read as not chosen, in the search's order) is above
 * cfg's estimate e, or says that no completion fits VMEM (cfg fits). */
static void check_partials(struct ref *r, const struct sim_tile_config *cfg,
			   const struct sim_estimate *e)
{
	const struct sim_plan *p = r->p;
	int dims[2 * SIM_MAX_GRID];
	int n_free = search_order(p, r->fixed, dims);
	for (int chosen = 0; chosen < n_free; chosen++) {
		struct sim_tile_config part = *cfg;
		for (int f = chosen; f < n_free; f++) {
			int d = dims[f];
			if (d >= p->out.rank) {
				part.kernel_bounds[d - p->out.rank] = 0;
				continue;
			}
			part.out_bounds[d] = 0;
			for (int kd = 0; kd < part.n_kernel; kd++)
				if (p->kern_shared[kd] == d)
					part.kernel_bounds[kd] = 0;
		}
		if (chosen >= r->n_part ||
		    memcmp(&part, &r->part[chosen], sizeof part) != 0) {
			r->part[chosen] = part;
			sim_plan_floor(p, r->hw, &part, &r->floors[chosen]);
			r->mxu[chosen] = sim_plan_mxu_floor(p, r->hw, &part);
			r->n_part = chosen + 1;
		}
		const struct sim_plan_floors fl = r->floors[chosen];
		double mxu = r->mxu[chosen];
		if (!fl.fits || fl.time_ns > e->time_ns * (1 + 1e-9) ||
		    mxu > e->time_ns * (1 + 1e-9)) {
			char s[256], c[256];
			sim_tile_config_format(&part, s, sizeof s);
			sim_tile_config_format(cfg, c, sizeof c);
			fail_msg("%s on %s, %s: floor %.17g ns (MXU floor %.17g "
				 "ns%s) above the estimate %.17g ns of %s, "
				 "which fits", p->k->name, r->hw->name, s,
				 fl.time_ns, mxu, fl.fits ? "" : ", none fits",
				 e->time_ns, c);
		}
	}
}

static bool keep(const struct sim_tile_config *cfg, void *ctx)
{
	struct ref *r = ctx;
	struct sim_estimate e;
	sim_plan_estimate(r->p, r->hw, cfg, &e);
	/* at a whole config the floor is a floor of its own estimate */
	struct sim_plan_floors f;
	sim_plan_floor(r->p, r->hw, cfg, &f);
	double mxu = sim_plan_mxu_floor(r->p, r->hw, cfg);
	if (isfinite(e.time_ns) && (f.time_ns > e.time_ns * (1 + 1e-9) ||
				    mxu > e.time_ns * (1 + 1e-9))) {
		char s[256];
		sim_tile_config_format(cfg, s, sizeof s);
		fail_msg("%s on %s, %s: floor %.17g ns (MXU floor %.17g ns) "
			 "above the estimate %.17g ns", r->p->k->name,
			 r->hw->name, s, f.time_ns, mxu, e.time_ns);
	}
	/* a config the search does not cost for its VMEM floor is one the
	 * estimate calls infeasible */
	if (e.feasible && (!f.fits || !sim_plan_fits(r->p, r->hw, cfg))) {
		char s[256];
		sim_tile_config_format(cfg, s, sizeof s);
		fail_msg("%s on %s, %s: fits VMEM (%.17g bytes), but its VMEM "
			 "floor says no config like it does", r->p->k->name,
			 r->hw->name, s, e.vmem_bytes);
	}
	if (r->partials && e.feasible && isfinite(e.time_ns))
		check_partials(r, cfg, &e);
	if (r->n++ == 0 || sim_config_better(&e, cfg, &r->est, &r->cfg)) {
		r->cfg = *cfg;
		r->est = e;
	}
	return true;
}

/* Marks in r->fixed each dim whose bound differs from the first config's
 * in none of the candidates (called on every candidate, first to last). */
static bool note_fixed(const struct sim_tile_config *cfg, void *ctx)
{
	struct ref *r = ctx;
	if (r->n++ == 0) {
		r->cfg = *cfg;
		for (int i = 0; i < 2 * SIM_MAX_GRID; i++)
			r->fixed[i] = true;
		return true;
	}
	for (int i = 0; i < cfg->n_out; i++)
		if (cfg->out_bounds[i] != r->cfg.out_bounds[i])
			r->fixed[i] = false;
	for (int kd = 0; kd < cfg->n_kernel; kd++)
		if (cfg->kernel_bounds[kd] != r->cfg.kernel_bounds[kd])
			r->fixed[r->p->out.rank + kd] = false;
	return true;
}

struct totals {
	const struct hw_spec *hw;
	int files, kernels, searched;
	int64_t candidates, costed;
};

static void check_text(const char *rel, const char *text, size_t len,
		       void *ctx)
{
	struct totals *t = ctx;
	struct tu_built b;
	tu_build_file(rel, text, len, NULL, &b);
	t->files++;
	for (int i = 0; i < b.p.n_kernels; i++) {
		const struct sim_kernel *k = &b.p.kernels[i];
		struct sim_plan p;
		struct ts_diag d = {0};
		t->kernels++;
		if (sim_plan_build(k, t->hw, &p, &d) != TS_OK ||
		    p.kind != SIM_PLAN_TILED || p.out.rank == 0) {
			sim_plan_free(&p);
			continue;
		}
		struct ref r = {.p = &p, .hw = t->hw, .partials = true};
		sim_plan_enumerate(&p, sim_plan_default_per_dim(&p), note_fixed,
				   &r);
		r.n = 0;
		sim_plan_enumerate(&p, sim_plan_default_per_dim(&p), keep, &r);
		struct sim_tile_config got;
		int64_t costed = sim_plan_default(&p, t->hw, &got);
		t->searched++;
		t->candidates += r.n;
		t->costed += costed;
		struct sim_estimate e;
		sim_plan_estimate(&p, t->hw, &got, &e);
		char want_s[256], got_s[256];
		sim_tile_config_format(&r.cfg, want_s, sizeof want_s);
		sim_tile_config_format(&got, got_s, sizeof got_s);
		if (strcmp(want_s, got_s) != 0 ||
		    memcmp(&e, &r.est, sizeof e) != 0)
			fail_msg("%s %s on %s: the search picks %s (%.17g ns), "
				 "every candidate costed picks %s (%.17g ns)",
				 rel, k->name, t->hw->name, got_s, e.time_ns,
				 want_s, r.est.time_ns);
		/* the remembered default (config.c search_spec): on a spec
		 * that differs in fields the search reads for no plan, and in
		 * the MXU's, it is still what costing every candidate on that
		 * spec picks */
		struct hw_spec hw2 = *t->hw;
		snprintf(hw2.name, sizeof hw2.name, "changed");
		hw2.hbm_bytes *= 2;
		hw2.host_call_ns += 1000;
		hw2.ici_efficiency /= 2;
		hw2.mxu_count *= 2;
		hw2.mxu_pass_cycles += 64;
		struct ref r2 = {.p = &p, .hw = &hw2};
		sim_plan_enumerate(&p, sim_plan_default_per_dim(&p), keep, &r2);
		sim_plan_default(&p, &hw2, &got);
		sim_tile_config_format(&r2.cfg, want_s, sizeof want_s);
		sim_tile_config_format(&got, got_s, sizeof got_s);
		if (strcmp(want_s, got_s) != 0)
			fail_msg("%s %s on %s changed: the remembered default is "
				 "%s, every candidate costed picks %s", rel,
				 k->name, t->hw->name, got_s, want_s);
		sim_plan_free(&p);
	}
	tu_built_free(&b);
}

static void test_search_is_exhaustive(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !*shared) {
		print_message("TPUSIM_SHARED is not set: skipping the tile "
			      "search test\n");
		skip();
	}
	char data[1024];
	snprintf(data, sizeof data, "%s/data", shared);
	static const char *const gens[] = {"v3", "v4", "v5p"};
	for (int g = 0; g < 3; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(gens[g], &hw))
			skip();
		struct totals t = {.hw = &hw};
		tu_each_hlo(data, "hlo-corpus", SAMPLE, check_text, &t);
		tu_each_hlo(data, "hlo-programs", 2 * SAMPLE, check_text, &t);
		tu_each_hlo(data, "tpugraphs-tile-v3/modules", SAMPLE, check_text, &t);
		tu_each_hlo(data, "tpuv3-allreduce/modules", SAMPLE, check_text, &t);
		tu_each_hlo(data, "tpuv4-ops/modules", 20 * SAMPLE, check_text, &t);
		print_message("%s: %d files, %d kernels, %d searched: %lld "
			      "configs costed of %lld candidates\n",
			      gens[g], t.files, t.kernels, t.searched,
			      (long long)t.costed, (long long)t.candidates);
		assert_true(t.searched > 100 / SAMPLE);
		assert_true(t.costed < t.candidates);
	}
}

/* The search of sim_plan_default with its floors scaled by bias (the VMEM
 * cut left out: the control's kernel fits at every config it compares). */
struct biased {
	struct ref r;
	double bias;
};

static double floor_biased(const struct sim_tile_config *part, void *ctx)
{
	struct biased *b = ctx;
	struct sim_plan_floors f;
	sim_plan_floor(b->r.p, b->r.hw, part, &f);
	return f.time_ns * b->bias;
}

static bool cut_biased(double lb, void *ctx)
{
	struct biased *b = ctx;
	return b->r.n > 0 && b->r.est.feasible && lb > b->r.est.time_ns;
}

static bool keep_biased(const struct sim_tile_config *cfg, void *ctx)
{
	return keep(cfg, &((struct biased *)ctx)->r);
}

static void test_control(void **state)
{
	(void)state;
	const char *src = getenv("TPUSIM_SOURCE");
	if (!src) {
		print_message("TPUSIM_SOURCE is not set: skipping\n");
		skip();
	}
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	/* a 7-dim convolution grid with many near-best configs (the shape
	 * of TpuGraphs' fusion.191) */
	struct tu_built b;
	tu_build("HloModule c\n"
		 "ENTRY e {\n"
		 "  a = f32[32,12,12,192]{3,0,2,1:T(8,128)} parameter(0)\n"
		 "  w = f32[3,3,192,384]{3,2,1,0:T(8,128)} parameter(1)\n"
		 "  ROOT c = f32[32,12,12,384]{3,0,2,1:T(8,128)} convolution(a, w), "
		 "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
		 "}\n",
		 &b);
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(&b.p.kernels[0], &hw, &p, &d), TS_OK);
	int per_dim = sim_plan_default_per_dim(&p);
	struct biased exact = {.r = {.p = &p, .hw = &hw}, .bias = 1.0};
	struct biased high = {.r = {.p = &p, .hw = &hw}, .bias = 1.25};
	const struct sim_search_floors fl = {NULL, floor_biased, cut_biased, NULL};
	sim_plan_search(&p, per_dim, true, keep_biased, &fl, &exact);
	sim_plan_search(&p, per_dim, true, keep_biased, &fl, &high);
	struct sim_tile_config def;
	sim_plan_default(&p, &hw, &def);
	char a[256], c[256];
	sim_tile_config_format(&exact.r.cfg, a, sizeof a);
	sim_tile_config_format(&def, c, sizeof c);
	assert_string_equal(a, c);
	/* a floor 25% too high cuts the best: a slower pick */
	assert_true(high.r.est.time_ns > exact.r.est.time_ns);
	sim_plan_free(&p);
	tu_built_free(&b);
}

/* check_text on a module without data, on each spec of gens: `kernels`
 * searched, fewer configs costed than the candidates. */
static void check_on(const char *name, const char *text,
		     const char *const *gens, int n_gens, int kernels)
{
	for (int g = 0; g < n_gens; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(gens[g], &hw))
			skip();
		struct totals t = {.hw = &hw};
		check_text(name, text, strlen(text), &t);
		assert_int_equal(t.searched, kernels);
		assert_true(t.costed < t.candidates);
	}
}

/* 3D convolutions shaped like a 3D U-Net's, with odd spatial extents (so
 * blocks come out ragged): c has 16 input features (its taps fold into
 * the contraction), c2 32 (a split contraction block takes a weight tile
 * of its own) and 1.3M output elements (above v4's and v5p's megacore
 * threshold, so both cores share its steps). The floors that cut most
 * there hold on every spec. Needs no data. */
static void test_convolutions_3d(void **state)
{
	(void)state;
	static const char *const gens[] = {"v3", "v4", "v5p"};
	check_on("conv3d.hlo",
		 "HloModule conv3d\n"
		 "ENTRY e {\n"
		 "  a = f32[2,12,12,20,16]{4,3,2,1,0} parameter(0)\n"
		 "  w = f32[3,3,3,16,32]{4,3,2,1,0} parameter(1)\n"
		 "  c = f32[2,12,12,20,32]{4,3,2,1,0} convolution(a, w), "
		 "window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f\n"
		 "  a2 = f32[1,24,24,48,32]{4,3,2,1,0} parameter(2)\n"
		 "  w2 = f32[3,3,3,32,48]{4,3,2,1,0} parameter(3)\n"
		 "  c2 = f32[1,24,24,48,48]{4,3,2,1,0} convolution(a2, w2), "
		 "window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f\n"
		 "  ROOT t = (f32[2,12,12,20,32]{4,3,2,1,0}, "
		 "f32[1,24,24,48,48]{4,3,2,1,0}) tuple(c, c2)\n"
		 "}\n",
		 gens, 3, 2);
}

/* A dot whose contraction blocks straddle the operands' tiles (50 of 128
 * lanes, grid tiles of 8 against 128): the estimate counts a straddling
 * first block as the whole array and drops the runs of a middle phase
 * left with no bytes, so the floors may count runs only where no block
 * can straddle (a floor 10% above the estimate on v5p before). Needs no
 * data. */
static void test_straddling_dot(void **state)
{
	(void)state;
	static const char *const gens[] = {"v3", "v4", "v5p", "v5e", "v6e"};
	check_on("dot.hlo",
		 "HloModule d\n"
		 "ENTRY e {\n"
		 "  a = f32[6,40,24,50]{3,2,1,0} parameter(0)\n"
		 "  b = f32[24,50,260]{2,1,0} parameter(1)\n"
		 "  ROOT d = f32[6,40,260]{2,1,0} dot(a, b), "
		 "lhs_contracting_dims={2,3}, rhs_contracting_dims={0,1}\n"
		 "}\n",
		 gens, 5, 1);
}

/* A dot whose output dims each have one candidate and whose contraction
 * has two dims of several (every partial config the search floors has
 * its output chosen: a core's share of the steps known), and a
 * convolution whose window covers its input (a 1x1 output; taps and
 * features of several). Needs no data. */
static void test_fixed_outputs(void **state)
{
	(void)state;
	static const char *const gens[] = {"v3", "v4", "v5p"};
	check_on("dot.hlo",
		 "HloModule d\n"
		 "ENTRY e {\n"
		 "  a = f32[8,96,4096]{2,1,0} parameter(0)\n"
		 "  b = f32[96,4096,128]{2,1,0} parameter(1)\n"
		 "  ROOT d = f32[8,128]{1,0} dot(a, b), "
		 "lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}\n"
		 "}\n",
		 gens, 3, 1);
	check_on("conv.hlo",
		 "HloModule c\n"
		 "ENTRY e {\n"
		 "  a = f32[8,40,40,256]{3,2,1,0} parameter(0)\n"
		 "  w = f32[40,40,256,128]{3,2,1,0} parameter(1)\n"
		 "  ROOT c = f32[8,1,1,128]{3,2,1,0} convolution(a, w), "
		 "window={size=40x40}, dim_labels=b01f_01io->b01f\n"
		 "}\n",
		 gens, 3, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_convolutions_3d),
		cmocka_unit_test(test_straddling_dot),
		cmocka_unit_test(test_fixed_outputs),
		cmocka_unit_test(test_search_is_exhaustive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
