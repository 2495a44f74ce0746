/*
 * cmd_whatif.c: `tpusim whatif GRAPH.hlo --hw SPEC [--set P=V] --sweep
 * P=VALUES ...`: a hardware what-if study. The kernels are built once;
 * each point of the grid (the product of the sweeps) is the spec with its
 * values applied as if the file said them (hw_spec_apply), and the program
 * is costed on it: program time, each unit's busy time, how many kernels
 * each unit bounds, kernels that stop fitting VMEM, kernels whose best tile
 * config changes against the base point. Then, at the base point (the spec
 * with the --set values), the elasticity of program time to each swept
 * field: d ln T / d ln x by central differences.
 */
#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TPUSIM_MPI
#include <dlfcn.h>

#include "whatif_mpi.h"
#endif

#define WHATIF_MAX_SWEEPS 4
#define WHATIF_MAX_VALUES 64    /* per sweep */
#define WHATIF_MAX_POINTS 4096  /* the whole grid */

/* What a sweep changes: a spec field, or the slice the program runs on
 * (docs/MODEL.md "Collectives on a slice"): `slices`, the data-parallel
 * slices a group over all of the module's slices spans (hw_slice
 * span_count: weak scaling, the per-device program as compiled); or
 * `topology`, the shape of each slice (the same chips laid out
 * otherwise). */
enum sweep_kind { SWEEP_FIELD, SWEEP_SLICES, SWEEP_TOPOLOGY };

struct sweep {
	const char *text;                 /* as given */
	enum sweep_kind kind;
	const struct hw_field_info *field; /* its name (and range, int) */
	int n;
	double v[WHATIF_MAX_VALUES];      /* TOPOLOGY: the index into shape */
	struct hw_slice shape[WHATIF_MAX_VALUES]; /* TOPOLOGY */
};

_Static_assert(TS_ARRAY_LEN(((struct cmd_whatif_plot *)0)->labels[0]) >=
		       WHATIF_MAX_VALUES,
	       "a plot labels every value of a sweep");

static const struct hw_field_info slices_field = {
	"slices", "", 1, HW_SLICE_MAX_COUNT, true};
static const struct hw_field_info topology_field = {"topology", "", 0, 0,
						     false};

struct whatif_opts {
	int n_sweeps;
	struct sweep sweeps[WHATIF_MAX_SWEEPS];
	const char *csv;                  /* --csv FILE */
	const char *plots;                /* --plots DIR */
	bool hold_tiles;                  /* --hold-tiles */
	const char *trace;                /* --trace DIR */
};

enum { OPT_SWEEP = CMD_OPT_OWN, OPT_CSV, OPT_PLOTS, OPT_HOLD_TILES,
       OPT_TRACE };

static const struct option whatif_options[] = {
	{"sweep", required_argument, NULL, OPT_SWEEP},
	{"csv", required_argument, NULL, OPT_CSV},
	{"plots", required_argument, NULL, OPT_PLOTS},
	{"hold-tiles", no_argument, NULL, OPT_HOLD_TILES},
	{"trace", required_argument, NULL, OPT_TRACE},
	{0},
};

/* "topology=S1,S2,..." (v: its text after '=') into w: each a slice
 * shape as --topology takes it. */
static int parse_shapes(const struct cmd_ctx *ctx, const char *arg,
			const char *v, struct sweep *w)
{
	for (w->n = 0;; w->n++) {
		size_t len = strcspn(v, ",");
		char t[64];
		struct ts_diag d = {0};
		if (w->n == WHATIF_MAX_VALUES) {
			cmd_error(ctx, "--sweep %s: more than %d values", arg,
				  WHATIF_MAX_VALUES);
			return CMD_EXIT_USAGE;
		}
		snprintf(t, sizeof t, "%.*s", (int)(len < 63 ? len : 63), v);
		if (len >= sizeof t ||
		    hw_slice_parse(t, &w->shape[w->n], &d) != TS_OK) {
			cmd_error(ctx, "--sweep %s: '%.*s': %s", arg, (int)len, v,
				  len >= sizeof t ? "too long" : d.msg);
			return CMD_EXIT_USAGE;
		}
		w->v[w->n] = w->n;
		if (!v[len])
			break;
		v += len + 1;
	}
	w->n++;
	return CMD_EXIT_OK;
}

static int parse_values(const struct cmd_ctx *ctx, const char *arg,
			const char *v, struct sweep *w);

/* Parses "P=a,b,c", "P=lo:hi:xF" (lo, lo F, lo F^2, ... up to hi) or
 * "P=lo:hi:+S" (lo, lo + S, ... up to hi) into w; P a spec field or
 * `slices` (whole numbers), or "topology=S1,S2,..." (parse_shapes). */
static int parse_sweep(const struct cmd_ctx *ctx, const char *arg,
		       struct sweep *w)
{
	w->text = arg;
	w->kind = SWEEP_FIELD;
	const char *v;
	if (!strncmp(arg, "topology=", 9)) {
		w->kind = SWEEP_TOPOLOGY;
		w->field = &topology_field;
		return parse_shapes(ctx, arg, arg + 9, w);
	}
	if (!strncmp(arg, "slices=", 7)) {
		w->kind = SWEEP_SLICES;
		w->field = &slices_field;
		v = arg + 7;
	} else if (!(w->field = cmd_spec_assignment(
			     ctx, "--sweep", arg,
			     "PATH=VALUES (e.g. hbm.bw_bytes_per_s=450e9,900e9)",
			     &v))) {
		return CMD_EXIT_USAGE;
	} else if (!strncmp(w->field->path, "xla.", 4)) {
		/* how XLA compiles the module for the spec (sim/rewrite.c,
		 * sim/schedule.c): decided once, when it is loaded */
		cmd_error(ctx, "--sweep %s: %s says how XLA compiles the "
			       "module, decided once before the points; run "
			       "`tpusim run --set %s=V` for each value",
			  arg, w->field->path, w->field->path);
		return CMD_EXIT_USAGE;
	}
	int rc = parse_values(ctx, arg, v, w);
	for (int i = 0; rc == CMD_EXIT_OK && w->kind == SWEEP_SLICES && i < w->n;
	     i++)
		if (w->v[i] != floor(w->v[i]) || w->v[i] < slices_field.min ||
		    w->v[i] > slices_field.max) {
			cmd_error(ctx, "--sweep %s: %.15g slices: expected a "
				       "whole number from 1 to %d",
				  arg, w->v[i], HW_SLICE_MAX_COUNT);
			rc = CMD_EXIT_USAGE;
		}
	return rc;
}

/* The values of sweep w from v, the text after '=' (parse_sweep). */
static int parse_values(const struct cmd_ctx *ctx, const char *arg,
			const char *v, struct sweep *w)
{
	char *end;
	if (strchr(v, ':')) {
		double lo = strtod(v, &end), hi = 0, step = 0;
		char kind = 0;
		bool ok = end != v && *end == ':';
		if (ok) {
			const char *h = end + 1;
			hi = strtod(h, &end);
			ok = end != h && *end == ':' &&
			     (end[1] == 'x' || end[1] == '+');
		}
		if (ok) {
			kind = end[1];
			const char *st = end + 2;
			step = strtod(st, &end);
			ok = end != st && !*end && hi >= lo &&
			     (kind == 'x' ? step > 1 && lo > 0 : step > 0);
		}
		if (!ok) {
			cmd_error(ctx, "--sweep %s: a range is LO:HI:xFACTOR "
				       "(factor > 1, LO > 0) or LO:HI:+STEP "
				       "(step > 0), LO <= HI", arg);
			return CMD_EXIT_USAGE;
		}
		/* lo + k step or lo F^k (no accumulated rounding), up to hi
		 * and a hair beyond it (hi itself despite rounding) */
		w->n = 0;
		for (int k = 0;; k++) {
			double x = kind == 'x' ? lo * pow(step, k) : lo + k * step;
			/* to 15 digits: 0.1:0.3:+0.1 gives 0.3, not
			 * 0.30000000000000004 */
			char txt[32];
			snprintf(txt, sizeof txt, "%.15g", x);
			x = strtod(txt, NULL);
			if (!(x <= hi + fabs(hi) * 1e-12))
				break;
			if (w->n == WHATIF_MAX_VALUES) {
				cmd_error(ctx, "--sweep %s: more than %d values",
					  arg, WHATIF_MAX_VALUES);
				return CMD_EXIT_USAGE;
			}
			w->v[w->n++] = x;
		}
		return CMD_EXIT_OK;
	}
	w->n = 0;
	for (const char *p = v;;) {
		if (w->n == WHATIF_MAX_VALUES) {
			cmd_error(ctx, "--sweep %s: more than %d values", arg,
				  WHATIF_MAX_VALUES);
			return CMD_EXIT_USAGE;
		}
		w->v[w->n] = strtod(p, &end);
		if (end == p || (*end && *end != ',')) {
			cmd_error(ctx, "--sweep %s: '%s' is not a list of numbers",
				  arg, v);
			return CMD_EXIT_USAGE;
		}
		w->n++;
		if (!*end)
			break;
		p = end + 1;
	}
	return CMD_EXIT_OK;
}

static int whatif_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			    const char *arg)
{
	struct whatif_opts *o = opts_v;
	int rc;
	switch (id) {
	case OPT_SWEEP:
		if (o->n_sweeps == WHATIF_MAX_SWEEPS) {
			cmd_error(ctx, "at most %d --sweep options",
				  WHATIF_MAX_SWEEPS);
			return CMD_EXIT_USAGE;
		}
		rc = parse_sweep(ctx, arg, &o->sweeps[o->n_sweeps]);
		for (int i = 0; rc == CMD_EXIT_OK && i < o->n_sweeps; i++)
			if (o->sweeps[i].field == o->sweeps[o->n_sweeps].field) {
				cmd_error(ctx, "--sweep %s: %s is swept twice "
					       "(--sweep %s)", arg,
					  o->sweeps[i].field->path,
					  o->sweeps[i].text);
				rc = CMD_EXIT_USAGE;
			}
		o->n_sweeps++;
		return rc;
	case OPT_CSV:
		o->csv = arg;
		return CMD_EXIT_OK;
	case OPT_PLOTS:
		o->plots = arg;
		return CMD_EXIT_OK;
	case OPT_HOLD_TILES:
		o->hold_tiles = true;
		return CMD_EXIT_OK;
	case OPT_TRACE:
		o->trace = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void whatif_help(FILE *out)
{
	fputs("A hardware what-if study of GRAPH.hlo's program. Each --sweep "
	      "gives a spec\nfield and its values (not the xla section's: how "
	      "XLA compiles the module,\ndecided once, when it is loaded); "
	      "several form the grid of their product (at\nmost 4096 points). "
	      "Each point is the spec "
	      "(with the --set changes) with the\npoint's values applied as if "
	      "the file said them (ranges, the checks that\nrelate fields and "
	      "the derived figures, as --set); the kernels are built\nonce and "
	      "costed at every point with their best tile config there. Per\n"
	      "point: program time; busy time of the MXU, VPU and HBM DMA "
	      "(cycles at\nthe clock, summed over kernels x runs) and fixed "
	      "overheads; how many\nkernels each unit bounds; kernels that do "
	      "not fit VMEM; kernels whose base\npoint's tile config is slower "
	      "there than the best one (retiled). Then\nthe elasticity of "
	      "program time to each swept field at the base point:\nd ln T / "
	      "d ln x by central differences (x +- 1%, or +- 1 for integer\n"
	      "fields; one-sided when a neighbour is out of the field's range; "
	      "none\nwhen the base value is 0).\n\n"
	      "Under `mpirun -n N` (a build with Open MPI: see tpusim --version) "
	      "the\npoints are split over the ranks and rank 0 writes the "
	      "report, the same\nbytes as one process's. A sweep of 100 points "
	      "or more shows its progress\nand ETA when standard error is a "
	      "terminal.\n\n"
	      "Options:\n"
	      "      --sweep P=VALUES  a field and its values: a,b,c or "
	      "LO:HI:xFACTOR or\n"
	      "                        LO:HI:+STEP, in the field's unit "
	      "(repeatable, at most 4);\n"
	      "                        or slices=N,... (weak scaling: a "
	      "module compiled for\n"
	      "                        --slices 2 or more, its groups over "
	      "all of them over\n"
	      "                        N, the per-device program as "
	      "compiled), or\n"
	      "                        topology=16x16,8x32,... (the same "
	      "chips in another\n"
	      "                        shape, devices placed x fastest); "
	      "both need --topology\n"
	      "      --csv FILE        also write one line per point\n"
	      "      --plots DIR       whatif.png into DIR (created if "
	      "absent): one sweep as\n"
	      "                        bars of program time stacked by bound "
	      "unit, two as a\n"
	      "                        heat map of program time\n"
	      "      --hold-tiles      keep each kernel's base-point tile "
	      "config at every\n"
	      "                        point (no tile search: faster; retiled "
	      "is then 0, and\n"
	      "                        a config that stops fitting VMEM counts "
	      "as infeasible)\n"
	      "      --trace DIR       each point's timeline as DIR/point_N.json "
	      "(Chrome trace\n"
	      "                        format, as run --trace; N as in the "
	      "table)\n",
	      out);
}

/* One point's figures, all doubles: a sweep split over MPI ranks sums
 * the points' arrays (each rank's zeros elsewhere), which is exact. */
struct point {
	double v[WHATIF_MAX_SWEEPS];
	double time_ns, mxu_ns, vpu_ns, dma_ns, overhead_ns;
	double bound[HW_UNIT_COUNT];    /* kernels each unit bounds */
	double bound_ns[HW_UNIT_COUNT]; /* time x runs the kernels each unit
	                                   bounds add to the program, async
	                                   overlap taken off */
	double infeasible, retiled;
};
_Static_assert(sizeof(struct point) % sizeof(double) == 0,
	       "struct point is summed over MPI ranks as doubles");

static bool same_config(const struct sim_tile_config *a,
			const struct sim_tile_config *b)
{
	return a->n_out == b->n_out && a->n_kernel == b->n_kernel &&
	       !memcmp(a->out_bounds, b->out_bounds,
		       (size_t)a->n_out * sizeof *a->out_bounds) &&
	       !memcmp(a->kernel_bounds, b->kernel_bounds,
		       (size_t)a->n_kernel * sizeof *a->kernel_bounds);
}

/*
 * Per kernel of the graph (programs in order, kernels in order): the base
 * point's config and, when every swept field is one no plan reads
 * (sim_plan_spec_free; test_plan_reuse checks it on the corpus) nor, for
 * a graph with an unfused program, placement (placement_kept), its plan
 * built once on the base spec, so that a point costs only the plan's
 * estimate (about 5x fewer cycles than building it). ok[i]: kernel i has a
 * plan; an ungriddable one has none and is costed anew (its roofline).
 * About 1.3 kB per kernel and 0.5 kB per operand.
 */
struct kstate {
	struct sim_tile_config *cfg;
	struct sim_plan *plan; /* NULL: every point builds its own */
	bool *ok;
	/* with plans: the first kernel with the same plan (sim_plan_key),
	 * or -1; a twin's costs are that kernel's, at every point */
	int *twin;
	const struct sim_kernel **kern; /* with plans: every kernel, in k_all
	                                   order */
	int *slow;                      /* this point's slower(), per kernel;
	                                   always allocated (with cfg) */
};

static enum ts_status kernel_cost(const struct kstate *ks, int i,
				  const struct sim_kernel *k,
				  const struct hw_spec *hw,
				  const struct sim_tile_config *cfg,
				  struct sim_estimate *e, struct ts_diag *d)
{
	if (ks->plan && ks->ok[i])
		return sim_plan_cost(&ks->plan[i], hw, cfg, e, d);
	return sim_kernel_estimate(k, hw, cfg, e, d);
}

/* 1 when kernel i's config held (the base point's) is slower on hw than
 * its best there (est), by more than rounding: a re-chosen tile that only
 * breaks a tie is not counted. */
static int slower(const struct kstate *ks, int i, const struct sim_kernel *k,
		  const struct hw_spec *hw, const struct sim_estimate *est)
{
	struct sim_estimate e;
	struct ts_diag d = {0};
	if (kernel_cost(ks, i, k, hw, &ks->cfg[i], &e, &d) != TS_OK)
		return 1;
	return !e.feasible || e.time_ns > est->time_ns * (1 + 1e-9);
}

/*
 * Costs every program on hw into pt. base: this is the base point; each
 * kernel's best config is recorded into ks->cfg. Otherwise a kernel is
 * costed with its best config on hw (a tile search per kernel) and counted
 * as retiled when ks->cfg's config is slower there, or, with hold, with
 * that config (no search; a config that stops fitting VMEM counts as
 * infeasible).
 */
static int cost_point(const struct cmd_ctx *ctx, struct cmd_graph *g,
		      const struct hw_spec *hw, struct point *pt,
		      const struct kstate *ks, bool base, bool hold)
{
	struct sim_tile_config *cfg = ks->cfg;
	double ghz = hw->clock_hz * 1e-9;
	int k_all = 0;
	for (int m = 0; m < g->n_progs; m++) {
		struct sim_program *p = &g->progs[m];
		/* without plans built once the sweep may move what memory-space
		 * assignment places (placement_kept): placed again on hw */
		struct ts_diag pd = {0};
		if (!ks->plan && sim_program_place(p, hw, &pd) != TS_OK) {
			cmd_diag(ctx, &pd, NULL, NULL, 0);
			return CMD_EXIT_IO;
		}
		for (int i = 0; i < p->n_kernels; i++, k_all++) {
			struct sim_kernel *k = &p->kernels[i];
			const struct sim_tile_config *held =
				hold && !base && k->tunable ? &cfg[k_all] : NULL;
			struct ts_diag d = {0};
			int tw = ks->twin ? ks->twin[k_all] : -1;
			if (tw >= 0 &&
			    (!held || same_config(held, &cfg[tw])))
				k->est = ks->kern[tw]->est;
			else if (kernel_cost(ks, k_all, k, hw, held, &k->est,
					     &d) != TS_OK) {
				cmd_diag(ctx, &d, NULL, NULL, 0);
				return CMD_EXIT_INPUT;
			}
			const struct sim_estimate *e = &k->est;
			double mult = k->multiplicity;
			pt->mxu_ns += mult * e->mxu_cycles / ghz;
			pt->vpu_ns += mult * e->vpu_cycles / ghz;
			pt->dma_ns += mult * e->dma_cycles / ghz;
			pt->overhead_ns += mult * e->overhead_ns;
			if ((int)e->bound >= 0 && e->bound < HW_UNIT_COUNT &&
			    e->modelled)
				pt->bound[e->bound]++;
			pt->infeasible += !e->feasible;
			if (base)
				cfg[k_all] = e->config;
			else if (!hold && k->tunable &&
				 !same_config(&cfg[k_all], &e->config)) {
				bool same = tw >= 0 &&
					    same_config(&cfg[k_all], &cfg[tw]);
				ks->slow[k_all] =
					same ? ks->slow[tw]
					     : slower(ks, k_all, k, hw, e);
				pt->retiled += ks->slow[k_all];
			}
		}
		pt->time_ns += sim_program_total(p);
		/* what each kernel adds to the total, async overlap taken
		 * off: the bars of the picture sum to the program time */
		for (int i = 0; i < p->n_kernels; i++) {
			const struct sim_estimate *e = &p->kernels[i].est;
			if ((int)e->bound >= 0 && e->bound < HW_UNIT_COUNT &&
			    e->modelled)
				pt->bound_ns[e->bound] +=
					sim_kernel_exposed_ns(p, i);
		}
	}
	return CMD_EXIT_OK;
}

static int n_kernels(const struct cmd_graph *g)
{
	int n = 0;
	for (int m = 0; m < g->n_progs; m++)
		n += g->progs[m].n_kernels;
	return n;
}

/* ks->twin and kern for the n kernels of g with plans: kernels
 * whose plans have the same key (an FNV-1a digest into an open-addressed
 * table of first kernels, the keys compared whole) cost the same. */
static enum ts_status find_twins(const struct cmd_graph *g, int n,
				 struct kstate *ks)
{
	size_t cap = 16;
	while (cap < 2 * (size_t)n)
		cap *= 2;
	int *first = ts_malloc(cap * sizeof *first);
	uint64_t *digest = ts_malloc(((size_t)n + 1) * sizeof *digest);
	size_t most = 0; /* the longest key */
	for (int i = 0; i < n; i++) {
		size_t len = ks->ok[i] ? sim_plan_key_len(&ks->plan[i]) : 0;
		most = len > most ? len : most;
	}
	unsigned char *a = ts_malloc(most + 1);
	unsigned char *b = ts_malloc(most + 1);
	ks->twin = ts_malloc(((size_t)n + 1) * sizeof *ks->twin);
	ks->kern = ts_malloc(((size_t)n + 1) * sizeof *ks->kern);
	enum ts_status st = first && digest && a && b && ks->twin && ks->kern
				    ? TS_OK
				    : TS_ERR_NOMEM;
	for (size_t s = 0; !st && s < cap; s++)
		first[s] = -1;
	for (int m = 0, i = 0; !st && m < g->n_progs; m++)
		for (int j = 0; j < g->progs[m].n_kernels; j++, i++) {
			ks->kern[i] = &g->progs[m].kernels[j];
			ks->twin[i] = -1;
			/* a program's first kernel holds its start
			 * (sim_program_start_ns), which its plan does not
			 * say: costed apart, never a twin */
			if (!ks->ok[i] || ks->kern[i]->starts_program)
				continue;
			size_t len = sim_plan_key(&ks->plan[i], a);
			digest[i] = ts_fnv1a(TS_FNV1A_BASIS, a, len);
			size_t s = digest[i] & (cap - 1);
			for (; first[s] >= 0; s = (s + 1) & (cap - 1)) {
				int f = first[s];
				if (digest[f] == digest[i] &&
				    sim_plan_key(&ks->plan[f], b) == len &&
				    memcmp(a, b, len) == 0)
					break;
			}
			if (first[s] >= 0)
				ks->twin[i] = first[s];
			else
				first[s] = i;
		}
	ts_free(first);
	ts_free(digest);
	ts_free(a);
	ts_free(b);
	return st;
}

/* Whether every value of every field sweep, applied alone to the base
 * spec, leaves an unfused program's memory-space assignment as it is
 * (sim_placement_key: its room and the figures its order reads). */
static bool placement_kept(const struct cmd_ctx *ctx,
			   const struct whatif_opts *o)
{
	uint64_t base = sim_placement_key(&ctx->hw, sim_vmem_room(&ctx->hw));
	for (int s = 0; s < o->n_sweeps; s++) {
		const struct sweep *w = &o->sweeps[s];
		for (int i = 0; w->kind == SWEEP_FIELD && i < w->n; i++) {
			struct hw_spec hw = ctx->hw;
			struct ts_diag d = {0};
			if (hw_spec_apply(&hw, 1, &w->field, &w->v[i], NULL,
					  &d) != TS_OK ||
			    sim_placement_key(&hw, sim_vmem_room(&hw)) != base)
				return false;
		}
	}
	return true;
}

/* ks->plan and ok on the base spec when every sweep is over a field no
 * plan reads and, in a graph with an unfused program, that leaves its
 * memory-space assignment (which a plan holds) as it is; else leaves them
 * NULL. TS_ERR_NOMEM only (a kernel whose plan fails is left to
 * kernel_cost, which reports its error). */
static enum ts_status build_plans(const struct cmd_ctx *ctx,
				  const struct cmd_graph *g,
				  const struct whatif_opts *o, struct kstate *ks)
{
	bool unfused = false;
	for (int m = 0; m < g->n_progs; m++)
		unfused = unfused || g->progs[m].fused_xla;
	for (int s = 0; s < o->n_sweeps; s++)
		if (!sim_plan_spec_free(o->sweeps[s].field))
			return TS_OK;
	if (unfused && !placement_kept(ctx, o))
		return TS_OK;
	int n = n_kernels(g);
	ks->plan = ts_calloc((size_t)n + 1, sizeof *ks->plan);
	ks->ok = ts_calloc((size_t)n + 1, sizeof *ks->ok);
	if (!ks->plan || !ks->ok)
		return TS_ERR_NOMEM;
	for (int m = 0, i = 0; m < g->n_progs; m++)
		for (int j = 0; j < g->progs[m].n_kernels; j++, i++) {
			struct ts_diag d = {0};
			ks->ok[i] = sim_plan_build(&g->progs[m].kernels[j],
						   &ctx->hw, &ks->plan[i],
						   &d) == TS_OK;
		}
	return find_twins(g, n, ks);
}

/* Sweep w's slice at value x on hw (a `slices` or `topology` sweep). */
static void slice_at(const struct sweep *w, double x, struct hw_spec *hw)
{
	if (w->kind == SWEEP_SLICES) {
		hw->slice.span_count = (int)x;
	} else {
		int count = hw->slice.count, span = hw->slice.span_count;
		hw->slice = w->shape[(int)x];
		hw->slice.count = count;
		hw->slice.span_count = span;
	}
}

/* The spec at the values vals[0..n) of the sweeps (on top of ctx->hw):
 * the spec fields applied at once, as if the file said them, then the
 * slice. */
static int spec_at(const struct cmd_ctx *ctx, const struct whatif_opts *o,
		   const double *vals, struct hw_spec *hw)
{
	const struct hw_field_info *f[WHATIF_MAX_SWEEPS];
	double fv[WHATIF_MAX_SWEEPS];
	int nf = 0;
	*hw = ctx->hw;
	for (int s = 0; s < o->n_sweeps; s++)
		if (o->sweeps[s].kind == SWEEP_FIELD) {
			f[nf] = o->sweeps[s].field;
			fv[nf++] = vals[s];
		} else {
			slice_at(&o->sweeps[s], vals[s], hw);
		}
	struct ts_diag d = {0};
	if (hw_spec_apply(hw, nf, f, fv, NULL, &d) != TS_OK) {
		cmd_error(ctx, "--sweep: %s", d.msg);
		return CMD_EXIT_USAGE;
	}
	return CMD_EXIT_OK;
}

/* Whether the slice sweeps of o can run on ctx's slice (a `slices`
 * sweep: the module compiled for two slices or more, so that some
 * collective crosses them) and every point's slice fits the
 * generation and the programs (sim_program_check_slice). */
static int check_slices(const struct cmd_ctx *ctx, const struct whatif_opts *o,
			const struct cmd_graph *g, const struct hw_spec *hw)
{
	bool any = false;
	for (int s = 0; s < o->n_sweeps; s++) {
		const struct sweep *w = &o->sweeps[s];
		if (w->kind == SWEEP_FIELD)
			continue;
		any = true;
		if (!ctx->hw.slice.n_dims) {
			cmd_error(ctx, "--sweep %s: give the slice the module "
				       "was compiled for (--topology, --slices)",
				  w->text);
			return CMD_EXIT_USAGE;
		}
		if (w->kind == SWEEP_SLICES && ctx->hw.slice.count < 2) {
			cmd_error(ctx, "--sweep %s: the module runs on one "
				       "slice, so no collective crosses slices "
				       "to scale: compile it for two or more "
				       "(--slices N)", w->text);
			return CMD_EXIT_USAGE;
		}
	}
	if (!any)
		return CMD_EXIT_OK;
	struct ts_diag d = {0};
	enum ts_status st = hw_slice_check(hw, &hw->slice, &d);
	for (int m = 0; st == TS_OK && m < g->n_progs; m++)
		st = sim_program_check_slice(&g->progs[m], hw, &d);
	if (st != TS_OK) {
		char shape[64];
		hw_slice_format(&hw->slice, shape, sizeof shape);
		cmd_error(ctx, "--sweep: the point at %s: %s", shape, d.msg);
		return CMD_EXIT_USAGE;
	}
	return CMD_EXIT_OK;
}

/* Sweep w's value at the base spec (a topology sweep's has none: NaN). */
static double sweep_base(const struct cmd_ctx *ctx, const struct sweep *w)
{
	switch (w->kind) {
	case SWEEP_SLICES:
		return ctx->hw.slice.count;
	case SWEEP_TOPOLOGY:
		return NAN;
	default:
		return hw_spec_get(&ctx->hw, w->field);
	}
}

/* d ln T / d ln x of sweep w's field at the base spec (time t0): a central
 * difference, or a one-sided one when a neighbour is out of the field's
 * range (an integer field at 1, a fraction at its limit); NaN when neither
 * neighbour is in range. */
static double elasticity(const struct cmd_ctx *ctx, struct cmd_graph *g,
			 const struct sweep *w, double t0,
			 const struct kstate *ks, bool hold)
{
	double x0 = sweep_base(ctx, w);
	if (w->kind == SWEEP_TOPOLOGY || !(x0 > 0)) /* ln 0: no elasticity */
		return NAN;
	double x[3] = {w->field->is_int ? x0 - 1 : x0 / 1.01, x0,
		       w->field->is_int ? x0 + 1 : x0 * 1.01};
	double t[3] = {NAN, t0, NAN};
	for (int i = 0; i < 3; i += 2) {
		struct hw_spec hw = ctx->hw;
		struct ts_diag d = {0};
		struct point pt = {0};
		if (w->kind == SWEEP_SLICES)
			slice_at(w, x[i], &hw);
		if (x[i] > 0 &&
		    (w->kind == SWEEP_SLICES ||
		     hw_spec_apply(&hw, 1, &w->field, &x[i], NULL, &d) ==
			     TS_OK) &&
		    cost_point(ctx, g, &hw, &pt, ks, false, hold) ==
			    CMD_EXIT_OK &&
		    pt.time_ns > 0)
			t[i] = pt.time_ns;
	}
	int lo = isnan(t[0]) ? 1 : 0, hi = isnan(t[2]) ? 1 : 2;
	if (lo == hi || !(t[1] > 0))
		return NAN;
	return (log(t[hi]) - log(t[lo])) / (log(x[hi]) - log(x[lo]));
}

enum { C_POINT = 0, C_TIME, C_MXU, C_VPU, C_DMA, C_OVERHEAD, C_B_MXU,
       C_B_VPU, C_B_HBM, C_B_ICI, C_B_OVERHEAD, C_INFEASIBLE, C_RETILED,
       C_FIXED };

static const struct cmd_col fixed_cols[C_FIXED] = {
	[C_POINT] = {"point", "#", CMD_UNIT_INT, 0},
	[C_TIME] = {"time_ns", "time", CMD_UNIT_TIME_NS, 0},
	[C_MXU] = {"mxu_ns", "mxu", CMD_UNIT_TIME_NS, 0},
	[C_VPU] = {"vpu_ns", "vpu", CMD_UNIT_TIME_NS, 0},
	[C_DMA] = {"dma_ns", "dma", CMD_UNIT_TIME_NS, 0},
	[C_OVERHEAD] = {"overhead_ns", "overhead", CMD_UNIT_TIME_NS, 0},
	[C_B_MXU] = {"mxu_bound", "mxu#", CMD_UNIT_INT, 0},
	[C_B_VPU] = {"vpu_bound", "vpu#", CMD_UNIT_INT, 0},
	[C_B_HBM] = {"hbm_bound", "hbm#", CMD_UNIT_INT, 0},
	[C_B_ICI] = {"ici_bound", "ici#", CMD_UNIT_INT, 0},
	[C_B_OVERHEAD] = {"overhead_bound", "ovh#", CMD_UNIT_INT, 0},
	[C_INFEASIBLE] = {"infeasible", "infeas", CMD_UNIT_INT, 0},
	[C_RETILED] = {"retiled", "retiled", CMD_UNIT_INT, 0},
};

/* The text of sweep w's value x: a topology sweep's shape, else the
 * number (labels of the plot). */
static void value_text(const struct sweep *w, double x, char *buf, size_t cap)
{
	if (w->kind == SWEEP_TOPOLOGY)
		hw_slice_format(&w->shape[(int)x], buf, cap);
	else
		snprintf(buf, cap, "%.4g", x);
}

static enum ts_status fill_row(struct cmd_table *t, int i,
			       const struct whatif_opts *o,
			       const struct point *pt)
{
	enum ts_status st = cmd_table_add_row(t);
	if (st)
		return st;
	cmd_table_set_num(t, C_POINT, i);
	cmd_table_set_num(t, C_TIME, pt->time_ns);
	cmd_table_set_num(t, C_MXU, pt->mxu_ns);
	cmd_table_set_num(t, C_VPU, pt->vpu_ns);
	cmd_table_set_num(t, C_DMA, pt->dma_ns);
	cmd_table_set_num(t, C_OVERHEAD, pt->overhead_ns);
	cmd_table_set_num(t, C_B_MXU, pt->bound[HW_UNIT_MXU]);
	cmd_table_set_num(t, C_B_VPU, pt->bound[HW_UNIT_VPU]);
	cmd_table_set_num(t, C_B_HBM, pt->bound[HW_UNIT_HBM]);
	cmd_table_set_num(t, C_B_ICI, pt->bound[HW_UNIT_ICI]);
	cmd_table_set_num(t, C_B_OVERHEAD, pt->bound[HW_UNIT_OVERHEAD]);
	cmd_table_set_num(t, C_INFEASIBLE, pt->infeasible);
	cmd_table_set_num(t, C_RETILED, pt->retiled);
	for (int s = 0; s < o->n_sweeps; s++) {
		char text[64];
		if (o->sweeps[s].kind != SWEEP_TOPOLOGY) {
			cmd_table_set_num(t, C_FIXED + s, pt->v[s]);
			continue;
		}
		value_text(&o->sweeps[s], pt->v[s], text, sizeof text);
		if ((st = cmd_table_set_text(t, C_FIXED + s, text)))
			return st;
	}
	return TS_OK;
}

/* ---- splitting a sweep over Open MPI ranks -------------------------------- */

/*
 * Under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) with a build that found
 * MPI, each rank costs the points i with i % ranks == rank, and the points
 * are summed onto rank 0 (each rank's zeros elsewhere: exact), which alone
 * reports; the output is byte-identical to a single process's. Without
 * either, one process does every point. Open MPI's calls are in a module
 * loaded here, under mpirun only (cli/mpi/whatif_mpi.h).
 */
#ifdef TPUSIM_MPI
static const struct whatif_mpi *mpi;
#endif

/* CMD_EXIT_OK, or CMD_EXIT_IO when the MPI module cannot be loaded or
 * started under mpirun. */
static int mpi_begin(const struct cmd_ctx *ctx, int *rank, int *ranks)
{
#ifdef TPUSIM_MPI
	if (!getenv("OMPI_COMM_WORLD_SIZE"))
		return CMD_EXIT_OK;
	/* global: Open MPI's own plugins resolve against its libraries */
	void *h = dlopen(TPUSIM_MPI_MODULE, RTLD_NOW | RTLD_GLOBAL);
	const struct whatif_mpi *api = h ? dlsym(h, "whatif_mpi_api") : NULL;
	if (!api) {
		cmd_error(ctx, "under mpirun, cannot load %s: %s",
			  TPUSIM_MPI_MODULE, dlerror());
		return CMD_EXIT_IO;
	}
	if (api->init(rank, ranks) != 0) {
		cmd_error(ctx, "MPI_Init failed");
		return CMD_EXIT_IO;
	}
	mpi = api;
#else
	(void)ctx;
	(void)rank;
	(void)ranks;
#endif
	return CMD_EXIT_OK;
}

/* Sums the points onto rank 0 (a rank's points other than its own are
 * zeroed first, sweep values included); the worst exit code of any rank. */
static int mpi_gather(struct point *pts, int n, int rank, int ranks, int rc)
{
#ifdef TPUSIM_MPI
	if (!mpi)
		return rc;
	int worst = mpi->max_int(rc);
	if (worst != CMD_EXIT_OK)
		return worst;
	for (int i = 0; i < n; i++)
		if (i % ranks != rank)
			memset(&pts[i], 0, sizeof pts[i]);
	mpi->sum_to_root((double *)pts, n * (int)(sizeof *pts / sizeof(double)),
			 rank);
	return worst;
#else
	(void)pts;
	(void)n;
	(void)rank;
	(void)ranks;
	return rc;
#endif
}

static void mpi_end(void)
{
#ifdef TPUSIM_MPI
	if (mpi)
		mpi->finalize();
	mpi = NULL;
#endif
}

/* --plots: the sweeps' values, the points' times and time by unit in the
 * arrays cmd_plot_whatif takes. */
static int plot_points(const struct cmd_ctx *ctx, const struct whatif_opts *o,
		       const struct point *pts, int n_points)
{
	double *times = ts_calloc((size_t)n_points + 1, sizeof *times);
	double *by_unit = ts_calloc((size_t)n_points * HW_UNIT_COUNT + 1,
				    sizeof *by_unit);
	int rc = CMD_EXIT_IO;
	if (!times || !by_unit) {
		cmd_error(ctx, "out of memory");
		goto out;
	}
	for (int i = 0; i < n_points; i++) {
		times[i] = pts[i].time_ns;
		memcpy(by_unit + (size_t)i * HW_UNIT_COUNT, pts[i].bound_ns,
		       sizeof pts[i].bound_ns);
	}
	struct cmd_whatif_plot w = {.n_sweeps = o->n_sweeps,
				    .n_points = n_points,
				    .time = times,
				    .by_unit = by_unit};
	for (int v = 0; v < o->n_sweeps && v < 2; v++) {
		w.names[v] = o->sweeps[v].field->path;
		w.n[v] = o->sweeps[v].n;
		for (int j = 0; j < o->sweeps[v].n; j++)
			value_text(&o->sweeps[v], o->sweeps[v].v[j],
				   w.labels[v][j], sizeof w.labels[v][j]);
	}
	rc = cmd_out_dir(ctx, "--plots", o->plots);
	if (rc == CMD_EXIT_OK)
		rc = cmd_plot_whatif(ctx, o->plots, &w);
out:
	ts_free(times);
	ts_free(by_unit);
	return rc;
}

/* --trace DIR's files: point_N.json, N the point (whatif_main). */
static const char *const trace_files[] = {"point_*.json", NULL};

static int whatif_main(struct cmd_ctx *ctx, void *opts_v, int argc,
		       char **argv)
{
	(void)argc;
	struct whatif_opts *o = opts_v;
	if (o->n_sweeps == 0) {
		cmd_error(ctx, "--sweep P=VALUES is required (e.g. --sweep "
			       "hbm.bw_bytes_per_s=450e9:1800e9:x2)");
		return CMD_EXIT_USAGE;
	}
	int n_points = 1;
	for (int s = 0; s < o->n_sweeps; s++) {
		if (n_points > WHATIF_MAX_POINTS / o->sweeps[s].n) {
			cmd_error(ctx, "the grid has more than %d points",
				  WHATIF_MAX_POINTS);
			return CMD_EXIT_USAGE;
		}
		n_points *= o->sweeps[s].n;
	}
	const struct cmd_file outs[] = {
		{"--csv", o->csv, CMD_FILE},
		{"--plots", o->plots, cmd_plot_whatif_files},
		{"--trace", o->trace, trace_files}};
	int rc0 = cmd_check_io(ctx, &(struct cmd_io){.outs = outs,
						    .n_outs = 3, .args = argv,
						    .n_args = 1});
	if (rc0 != CMD_EXIT_OK)
		return rc0;
	int rank = 0, ranks = 1;
	if ((rc0 = mpi_begin(ctx, &rank, &ranks)) != CMD_EXIT_OK)
		return rc0;
	struct cmd_graph g;
	struct sim_program_opts popts = {0};
	int rc = cmd_graph_load(ctx, argv[0], NULL, &popts, NULL, &g);
	struct kstate ks = {0};
	struct point *pts = ts_calloc((size_t)n_points + 1, sizeof *pts);
	struct cmd_col cols[C_FIXED + WHATIF_MAX_SWEEPS];
	struct cmd_table t;
	memcpy(cols, fixed_cols, sizeof fixed_cols);
	for (int s = 0; s < o->n_sweeps; s++)
		cols[C_FIXED + s] = (struct cmd_col){
			o->sweeps[s].field->path, o->sweeps[s].field->path,
			o->sweeps[s].kind == SWEEP_TOPOLOGY ? CMD_UNIT_TEXT
			: o->sweeps[s].field->is_int	    ? CMD_UNIT_INT
							    : CMD_UNIT_EXACT,
			0};
	cmd_table_init(&t, "points", NULL, cols, C_FIXED + o->n_sweeps);
	if (rc == CMD_EXIT_OK && o->trace)
		rc = cmd_out_dir(ctx, "--trace", o->trace);
	/* no early exit until the ranks have gathered: a rank that stopped
	 * alone would leave the others waiting in mpi_gather */
	if (rc == CMD_EXIT_OK &&
	    (!(ks.cfg = ts_calloc((size_t)n_kernels(&g) + 1, sizeof *ks.cfg)) ||
	     !(ks.slow = ts_calloc((size_t)n_kernels(&g) + 1,
				   sizeof *ks.slow)) ||
	     !pts ||
	     build_plans(ctx, &g, o, &ks) != TS_OK)) {
		cmd_error(ctx, "out of memory");
		rc = CMD_EXIT_IO;
	}
	/* every point's spec first, on every rank: a bad value stops them
	 * all at the same place */
	for (int i = 0; i < n_points && rc == CMD_EXIT_OK; i++) {
		int rest = i;
		for (int s = o->n_sweeps - 1; s >= 0; s--) {
			pts[i].v[s] = o->sweeps[s].v[rest % o->sweeps[s].n];
			rest /= o->sweeps[s].n;
		}
		struct hw_spec hw;
		rc = spec_at(ctx, o, pts[i].v, &hw);
		if (rc == CMD_EXIT_OK && g.n_progs > 0)
			rc = check_slices(ctx, o, &g, &hw);
	}
	struct point base = {0};
	if (rc == CMD_EXIT_OK)
		rc = cost_point(ctx, &g, &ctx->hw, &base, &ks, true, false);
	bool tty = isatty(fileno(ctx->err)) && n_points >= 100;
	time_t t0 = time(NULL);
	for (int i = rank; i < n_points && rc == CMD_EXIT_OK; i += ranks) {
		struct hw_spec hw;
		struct point *pt = &pts[i];
		if ((rc = spec_at(ctx, o, pt->v, &hw)) ||
		    (rc = cost_point(ctx, &g, &hw, pt, &ks, false,
					  o->hold_tiles)))
			break;
		if (o->trace) { /* the kernels hold this point's estimates */
			char path[PATH_MAX];
			snprintf(path, sizeof path, "%s/point_%d.json", o->trace,
				 i);
			if ((rc = cmd_write_trace(ctx, path, g.progs, g.n_progs,
						  &hw)))
				break;
		}
		if (tty && rank == 0 && i % (50 * ranks) == 0) {
			double el = difftime(time(NULL), t0);
			fprintf(ctx->err, "\rpoint %d/%d, %.0f s, ETA %.0f s ", i,
				n_points, el,
				i ? el / i * (n_points - i) : 0.0);
		}
	}
	if (tty && rank == 0)
		fputc('\n', ctx->err);
	rc = mpi_gather(pts, n_points, rank, ranks, rc);
	if (rc != CMD_EXIT_OK || rank != 0)
		goto out;
	for (int i = 0; i < n_points; i++) {
		if (fill_row(&t, i, o, &pts[i])) {
			cmd_error(ctx, "out of memory");
			rc = CMD_EXIT_IO;
			goto out;
		}
	}
	struct cmd_report r;
	cmd_report_begin(&r, ctx->format, ctx->out);
	cmd_report_text(&r, "file", argv[0]);
	cmd_report_text(&r, "hw", ctx->hw.name);
	if (ctx->hw_set[0])
		cmd_report_text(&r, "hw_set", ctx->hw_set);
	cmd_report_num(&r, "base_time_ns", CMD_UNIT_TIME_NS, base.time_ns);
	cmd_report_table(&r, &t);
	cmd_report_list_begin(&r, "elasticity");
	for (int s = 0; s < o->n_sweeps; s++) {
		const struct sweep *w = &o->sweeps[s];
		if (w->kind == SWEEP_TOPOLOGY)
			continue; /* no number to vary */
		cmd_report_item_begin(&r);
		cmd_report_text(&r, "field", w->field->path);
		cmd_report_num(&r, "base_value", CMD_UNIT_EXACT,
			       sweep_base(ctx, w));
		double e = elasticity(ctx, &g, w, base.time_ns, &ks,
				      o->hold_tiles);
		if (isfinite(e))
			cmd_report_num(&r, "d_ln_time_d_ln_value", CMD_UNIT_REAL,
				       e);
		cmd_report_item_end(&r);
	}
	cmd_report_list_end(&r);
	struct ts_diag d = {0};
	enum ts_status st = cmd_report_end(&r, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
	}
	if (rc == CMD_EXIT_OK && o->csv)
		rc = cmd_write_file(ctx, o->csv, cmd_table_write_csv, &t);
	if (rc == CMD_EXIT_OK && o->plots)
		rc = plot_points(ctx, o, pts, n_points);
out:
	mpi_end();
	ts_free(pts);
	cmd_table_free(&t);
	ts_free(ks.cfg);
	for (int i = 0; ks.plan && i < n_kernels(&g); i++)
		sim_plan_free(&ks.plan[i]);
	ts_free(ks.plan);
	ts_free(ks.ok);
	ts_free(ks.twin);
	ts_free(ks.kern);
	ts_free(ks.slow);
	cmd_graph_free(&g);
	return rc;
}

const struct cmd cmd_whatif = {
	.name = "whatif",
	.summary = "Sweep spec fields: time, bottlenecks, elasticities",
	.synopsis = "GRAPH.hlo --hw SPEC.yaml --sweep P=VALUES [--sweep ...] "
		    "[--set P=V ...] [--hold-tiles] [--csv FILE] [--plots DIR] "
		    "[--trace DIR]",
	.flags = CMD_NEEDS_HW | CMD_HAS_FORMAT | CMD_HAS_SLICE,
	.options = whatif_options,
	.repeatable = "sweep",
	.opts_size = sizeof(struct whatif_opts),
	.parse_opt = whatif_parse_opt,
	.help = whatif_help,
	.min_args = 1,
	.max_args = 1,
	.fn = whatif_main,
};
