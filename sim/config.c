/*
 * config.c: a kernel's tile config against its plan, and the model's best
 * one. Checks a config (ranks, ranges, the output-feature dim shared by
 * output and kernel bounds) and completes it, finds the default config
 * (every candidate of tile.c costed by model.c, the best kept) and costs a
 * kernel (sim_kernel_estimate: plan, check, estimate). It sits above
 * tile.c (grids, candidates) and model.c (the cost of one config), which
 * read neither it nor each other's callers: no import circle.
 */
#include "model.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- checking a config against a plan ------------------------------------------- */

/* sim_plan_check with the default config searched on hw. */
static enum ts_status check_on(const struct sim_plan *p,
			       const struct hw_spec *hw,
			       const struct sim_tile_config *cfg,
			       struct sim_tile_config *full, struct ts_diag *d)
{
	/* Bounds the config does not give come from the model's best. */
	struct sim_tile_config c = {0};
	bool complete = cfg && cfg->n_out == p->out.rank;
	for (int kd = 0; complete && p->has_kernel && kd < p->kern.rank; kd++)
		complete = cfg->n_kernel > 0 || p->kern_shared[kd] >= 0;
	if (!complete)
		sim_plan_default(p, hw, &c);
	else {
		c.n_out = p->out.rank;
		c.n_kernel = p->has_kernel ? p->kern.rank : 0;
	}
	if (cfg && cfg->n_out > 0) {
		if (cfg->n_out != p->out.rank) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: output_bounds has %d entries, the "
				    "tile grid has %d",
				    p->k->name, cfg->n_out, p->out.rank);
			return TS_ERR_MISUSE;
		}
		c.n_out = cfg->n_out;
		memcpy(c.out_bounds, cfg->out_bounds, sizeof c.out_bounds);
	}
	for (int i = 0; i < c.n_out; i++) {
		if (c.out_bounds[i] < 1 || c.out_bounds[i] > p->out.tiles[i]) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: output_bounds[%d] = %lld is outside "
				    "1..%lld (the tile grid)",
				    p->k->name, i, (long long)c.out_bounds[i],
				    (long long)p->out.tiles[i]);
			return TS_ERR_MISUSE;
		}
	}
	if (cfg && cfg->n_kernel > 0) {
		if (!p->has_kernel || cfg->n_kernel != p->kern.rank) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: kernel_bounds has %d entries, the "
				    "kernel tile grid has %d",
				    p->k->name, cfg->n_kernel,
				    p->has_kernel ? p->kern.rank : 0);
			return TS_ERR_MISUSE;
		}
		c.n_kernel = cfg->n_kernel;
		memcpy(c.kernel_bounds, cfg->kernel_bounds,
		       sizeof c.kernel_bounds);
	}
	for (int i = 0; i < c.n_kernel; i++) {
		if (c.kernel_bounds[i] < 1 ||
		    c.kernel_bounds[i] > p->kern.tiles[i]) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: kernel_bounds[%d] = %lld is outside "
				    "1..%lld (the kernel tile grid)",
				    p->k->name, i,
				    (long long)c.kernel_bounds[i],
				    (long long)p->kern.tiles[i]);
			return TS_ERR_MISUSE;
		}
	}
	/* Shared dims: derive the kernel bound from the output bound when the
	 * caller gave output bounds only (or only kernel bounds), else they
	 * must cover the same elements (TPU.md section 3). */
	bool gave_out = cfg && cfg->n_out > 0;
	bool gave_kern = cfg && cfg->n_kernel > 0;
	for (int kd = 0; kd < c.n_kernel; kd++) {
		int od = p->kern_shared[kd];
		if (od < 0)
			continue;
		if (gave_kern && !gave_out) {
			/* out bound from the kernel bound */
			int64_t e = ir_min64(ir_mul_sat(c.kernel_bounds[kd], p->kern.tile[kd]),
					  p->kern.elems[kd]);
			int64_t ob = (e + p->out.tile[od] - 1) / p->out.tile[od];
			c.out_bounds[od] = ob;
		}
		int64_t kb = sim_plan_shared_bound(p, kd, od, c.out_bounds[od]);
		if (gave_kern && gave_out) {
			if (kb != c.kernel_bounds[kd]) {
				ts_diag_set(d, NULL, 0, 0,
					    "%s: kernel_bounds[%d] = %lld (%lld "
					    "elements) and output_bounds[%d] = "
					    "%lld (%lld elements) must cover the "
					    "same output features",
					    p->k->name, kd,
					    (long long)c.kernel_bounds[kd],
					    (long long)ir_min64(c.kernel_bounds[kd] *
							       p->kern.tile[kd],
							     p->kern.elems[kd]),
					    od, (long long)c.out_bounds[od],
					    (long long)ir_min64(c.out_bounds[od] *
							       p->out.tile[od],
							     p->out.elems[od]));
				return TS_ERR_MISUSE;
			}
		} else if (kb < 0) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: output_bounds[%d] = %lld covers no "
				    "whole number of kernel tiles (%lld "
				    "elements each)",
				    p->k->name, od, (long long)c.out_bounds[od],
				    (long long)p->kern.tile[kd]);
			return TS_ERR_MISUSE;
		} else {
			c.kernel_bounds[kd] = kb;
		}
	}
	*full = c;
	return TS_OK;
}

enum ts_status sim_plan_check(const struct sim_plan *p,
			      const struct sim_tile_config *cfg,
			      struct sim_tile_config *full,
			      struct ts_diag *d)
{
	return check_on(p, p->hw, cfg, full, d);
}

int64_t sim_plan_steps(const struct sim_plan *p,
		       const struct sim_tile_config *full)
{
	int64_t steps = 1;
	for (int i = 0; i < full->n_out && i < p->out.rank; i++)
		steps = ir_mul_sat(steps, ir_ceil_div(p->out.tiles[i],
						      full->out_bounds[i]));
	for (int i = 0; i < full->n_kernel && i < p->kern.rank; i++) {
		if (p->kern_shared[i] >= 0)
			continue;
		steps = ir_mul_sat(steps, ir_ceil_div(p->kern.tiles[i],
						      full->kernel_bounds[i]));
	}
	return steps;
}

/* ---- the default config ---------------------------------------------------------- */

static int cmp_bounds(const struct sim_tile_config *a,
		      const struct sim_tile_config *b)
{
	for (int i = 0; i < a->n_out && i < b->n_out; i++)
		if (a->out_bounds[i] != b->out_bounds[i])
			return a->out_bounds[i] < b->out_bounds[i] ? -1 : 1;
	for (int i = 0; i < a->n_kernel && i < b->n_kernel; i++)
		if (a->kernel_bounds[i] != b->kernel_bounds[i])
			return a->kernel_bounds[i] < b->kernel_bounds[i] ? -1 : 1;
	return 0;
}

bool sim_config_better(const struct sim_estimate *ea,
		       const struct sim_tile_config *a,
		       const struct sim_estimate *eb,
		       const struct sim_tile_config *b)
{
	if (ea->feasible != eb->feasible)
		return ea->feasible;
	if (!ea->feasible) /* neither fits: the smaller working set */
		return ea->vmem_bytes < eb->vmem_bytes;
	if (isnan(ea->time_ns) != isnan(eb->time_ns)) /* a NaN time last */
		return isnan(eb->time_ns);
	if (ea->time_ns != eb->time_ns)
		return ea->time_ns < eb->time_ns;
	if (ea->steps != eb->steps)
		return ea->steps < eb->steps;
	return cmp_bounds(a, b) < 0;
}

struct best {
	const struct sim_plan *p;
	const struct hw_spec *hw;
	struct sim_tile_config cfg;
	struct sim_estimate est;
	int64_t n;
};

static bool keep_best(const struct sim_tile_config *cfg, void *ctx)
{
	struct best *b = ctx;
	struct sim_estimate e;
	sim_plan_estimate(b->p, b->hw, cfg, &e);
	if (b->n++ == 0 || sim_config_better(&e, cfg, &b->est, &b->cfg)) {
		b->cfg = *cfg;
		b->est = e;
	}
	return true;
}

/* The floor of a partial config (sim_plan_floor): INFINITY when every
 * completion overflows VMEM. */
static double floor_of(const struct sim_tile_config *part, void *ctx)
{
	struct best *b = ctx;
	struct sim_plan_floors f;
	sim_plan_floor(b->p, b->hw, part, &f);
	return f.fits ? f.time_ns : INFINITY;
}

/* Cut a subtree whose every completion overflows VMEM, or is slower than
 * the best feasible config so far: none could beat or tie it, so the best
 * is the one costing every candidate finds (when some candidate fits;
 * sim_plan_default). */
static bool cut(double lb, void *ctx)
{
	const struct best *b = ctx;
	if (isinf(lb))
		return true;
	return b->n > 0 && b->est.feasible && isfinite(b->est.time_ns) &&
	       lb > b->est.time_ns * (1 + SIM_FLOOR_SLACK);
}

/* The MXU floor of a partial or whole config (sim_plan_mxu_floor). */
static double quick_of(const struct sim_tile_config *part, void *ctx)
{
	struct best *b = ctx;
	return sim_plan_mxu_floor(b->p, b->hw, part);
}

/* Whether a whole config may fit VMEM (sim_plan_fits): one that does not
 * is one estimate() calls infeasible, never the best while any fits (when
 * none does, search_default costs every candidate again). */
static bool fits_of(const struct sim_tile_config *cfg, void *ctx)
{
	const struct best *b = ctx;
	return sim_plan_fits(b->p, b->hw, cfg);
}

/* The MXU floor only where there is MXU work to bound a config by. */
static const struct sim_search_floors floors = {NULL, floor_of, cut, fits_of};
static const struct sim_search_floors mxu_floors = {quick_of, floor_of, cut,
						    fits_of};

/* Configs the default may cost: fusion.191's full candidate product
 * (139,968) fits, so on every TpuGraphs kernel the default is the exact
 * optimum of the candidate set; a kernel with a larger product is searched
 * over fewer, evenly spread candidates per dim (sim_plan_enumerate's
 * per_dim), until the product fits. */
#define SIM_DEFAULT_MAX_CONFIGS INT64_C(150000)

/* The per-dim cap of the default's candidates, and (n) how many they are. */
static int default_per_dim(const struct sim_plan *p, int64_t *n)
{
	int per_dim = 0;
	*n = sim_plan_enumerate(p, 0, NULL, NULL);
	if (*n > SIM_DEFAULT_MAX_CONFIGS) {
		per_dim = 64;
		while (per_dim > 2 && sim_plan_enumerate(p, per_dim, NULL, NULL) >
					      SIM_DEFAULT_MAX_CONFIGS)
			per_dim--;
		*n = sim_plan_enumerate(p, per_dim, NULL, NULL);
	}
	return per_dim;
}

int sim_plan_default_per_dim(const struct sim_plan *p)
{
	int64_t n;
	return default_per_dim(p, &n);
}

/*
 * The default config is the model's best of the candidate configs
 * (sim_plan_enumerate): the one sim_config_better ranks first, found by
 * branch and bound. The free dims are chosen depth first (the kernel's
 * own before the output's: sim_plan_search), a dim's
 * choices lowest floor first (ties largest bounds first: few steps, a good
 * feasible config early); a partial config whose floors (sim_plan_floor,
 * and for a plan with MXU work the cheaper sim_plan_mxu_floor, asked
 * first) overflow VMEM or exceed the best feasible time so far is not
 * descended into, and a whole config whose MXU floor does is not costed,
 * nor one whose VMEM floor overflows (sim_plan_fits: asked of the last
 * free dim's choices, largest first, until one past the first fits). Among
 * feasible configs the order is total
 * (time, a NaN time last, steps, bounds), so the pruned search picks
 * exactly the config that costing every candidate picks. When no
 * candidate fits VMEM (or the best time is not finite) the candidates are
 * costed again, all of them, in enumeration order, so that the smallest
 * working set is chosen, ties to the first, as before. Cost:
 * the candidates' product grows as the product of log(tiles) over the
 * grid dims (139,968 for fusion.191's 7-dim convolution grid; capped at
 * SIM_DEFAULT_MAX_CONFIGS by thinning per dim), of which the search costs
 * only the configs and partial configs its floors do not cut. The same
 * candidates are what `tpusim tile` ranks, so its best is this config
 * (or, with a larger cap, one the model puts no slower).
 */
static int64_t search_default(const struct sim_plan *p,
			      const struct hw_spec *hw, int per_dim,
			      struct sim_tile_config *cfg)
{
	struct best b = {.p = p, .hw = hw};
	sim_plan_search(p, per_dim, true, keep_best,
			p->has_kernel ? &mxu_floors : &floors, &b);
	if (!(b.n && b.est.feasible && isfinite(b.est.time_ns))) {
		b.n = 0;
		sim_plan_enumerate(p, per_dim, keep_best, &b);
	}
	if (b.n)
		*cfg = b.cfg;
	return b.n;
}

/*
 * The default config, remembered. Whole programs repeat kernels (the 6,287
 * kernels of the Llama-3.1-8B step have about 150 distinct plans), and a
 * what-if point searches every kernel again; the default is a function of
 * the plan's contents and of the spec fields the search reads
 * (search_spec). So the searches over at least SIM_MEMO_MIN candidates are
 * remembered in SIM_MEMO_SLOTS slots (direct mapped by an FNV-1a hash of
 * the grid, the work and a few spec fields, a new search replacing the
 * slot's old one), keyed by the plan's bytes (with its pointers, which
 * only name the kernel and spec it came from, cleared) and the search's
 * spec, compared whole on a hit: no hash is trusted, so a hit returns
 * exactly what the search would. The slots are static: tpusim runs one
 * thread (MPI ranks are processes).
 */
#define SIM_MEMO_SLOTS 128
#define SIM_MEMO_MIN 16

struct memo_slot {
	bool used;
	size_t len, cap;                     /* bytes of key, its room */
	unsigned char *key;                  /* sim_plan_key() */
	struct hw_spec hw;
	struct sim_tile_config cfg;
	int64_t n;
};
static struct memo_slot memo[SIM_MEMO_SLOTS];

size_t sim_plan_key_len(const struct sim_plan *p)
{
	return offsetof(struct sim_plan, acc) +
	       (size_t)p->n_access * sizeof *p->acc + sizeof *p -
	       offsetof(struct sim_plan, other_bytes) +
	       (p->relaid ? sim_plan_key_len(p->relaid) : 0);
}

size_t sim_plan_key(const struct sim_plan *p, unsigned char *out)
{
	_Static_assert(offsetof(struct sim_plan, k) < offsetof(struct sim_plan, acc) &&
			       offsetof(struct sim_plan, target) <
				       offsetof(struct sim_plan, acc) &&
			       offsetof(struct sim_plan, cap_access) ==
				       offsetof(struct sim_plan, acc) +
					       sizeof(struct sim_plan_access *) &&
			       offsetof(struct sim_plan, other_bytes) <=
				       offsetof(struct sim_plan, cap_access) +
					       sizeof(double) &&
			       offsetof(struct sim_plan, hw) >
				       offsetof(struct sim_plan, other_bytes) &&
			       offsetof(struct sim_plan, relaid) >
				       offsetof(struct sim_plan, other_bytes),
		       "sim_plan_key: the pointers and the accesses where it "
		       "expects them");
	size_t head = offsetof(struct sim_plan, acc);
	size_t accs = (size_t)p->n_access * sizeof *p->acc;
	size_t tail_at = offsetof(struct sim_plan, other_bytes);
	size_t tail = sizeof *p - tail_at;
	memcpy(out, p, head);
	memset(out + offsetof(struct sim_plan, k), 0, sizeof p->k);
	memset(out + offsetof(struct sim_plan, target), 0, sizeof p->target);
	for (int a = 0; a < p->n_access; a++) {
		unsigned char *q = out + head + (size_t)a * sizeof *p->acc;
		memcpy(q, &p->acc[a], sizeof *p->acc);
		memset(q + offsetof(struct sim_plan_access, name), 0,
		       sizeof p->acc[a].name);
	}
	memcpy(out + head + accs, (const unsigned char *)p + tail_at, tail);
	memset(out + head + accs + offsetof(struct sim_plan, hw) - tail_at, 0,
	       sizeof p->hw);
	memset(out + head + accs + offsetof(struct sim_plan, relaid) - tail_at,
	       0, sizeof p->relaid);
	size_t len = head + accs + tail;
	return p->relaid ? len + sim_plan_key(p->relaid, out + len) : len;
}

/* The spec as the default's search reads it: the fields no tiled plan's
 * estimate or floor reads (the name, HBM capacity, the host, ICI and DCN
 * terms, the slice, what XLA rewrites before fusion)
 * cleared, and the MXU's when the plan has none of its work (its
 * utilisation, which the ranking does not read, aside). A what-if sweep
 * over a field so cleared finds each search remembered (test_tile_search
 * changes them and compares with costing every candidate). */
static void search_spec(const struct sim_plan *p, const struct hw_spec *hw,
			struct hw_spec *s)
{
	*s = *hw;
	memset(s->name, 0, sizeof s->name);
	s->hbm_bytes = 0;
	s->host_call_ns = s->host_kernel_ns = s->host_device_ns = 0;
	s->ici_links = s->ici_torus_dims = s->ici_wrap_chips = 0;
	s->ici_wrap_cube = false;
	s->xla_row_max_window = false;
	s->xla_async_all_reduce_bytes = 0;
	s->xla_async_all_gather = false;
	s->ici_link_bw_bytes_per_s = s->ici_latency_ns = s->ici_efficiency = 0;
	s->dcn_bw_bytes_per_s = s->dcn_latency_ns = 0;
	memset(&s->slice, 0, sizeof s->slice);
	if (!p->has_kernel) {
		s->mxu_count = s->mxu_rows = s->mxu_cols = s->mxu_f32_passes = 0;
		s->mxu_macs_per_cell_cycle = s->mxu_pass_cycles = 0;
		s->mxu_int8_rate = 0;
	}
}

/* Room for len bytes at *buf (*cap: its room), kept for later keys. */
static bool grow_key(unsigned char **buf, size_t *cap, size_t len)
{
	if (len <= *cap)
		return true;
	unsigned char *b = ts_realloc(*buf, len);
	if (!b)
		return false;
	*buf = b;
	*cap = len;
	return true;
}

int64_t sim_plan_default(const struct sim_plan *p, const struct hw_spec *hw,
			 struct sim_tile_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	if (p->kind != SIM_PLAN_TILED || p->out.rank == 0)
		return 0;
	int64_t n_cand;
	int per_dim = default_per_dim(p, &n_cand);
	if (n_cand < SIM_MEMO_MIN)
		return search_default(p, hw, per_dim, cfg);
	struct hw_spec spec;
	search_spec(p, hw, &spec);
	/* the slot from a digest (the grid, the work, the spec's speeds);
	 * the whole key decides a hit */
	uint64_t h = ts_fnv1a(TS_FNV1A_BASIS, p->dims,
			      (size_t)p->n_dims * sizeof *p->dims);
	double digest[7] = {p->vpu_cycles,       p->mxu_macs,
			    p->other_bytes,      spec.clock_hz,
			    spec.hbm_bw_bytes_per_s, spec.vmem_bytes,
			    (double)spec.mxu_count};
	h = ts_fnv1a(h, digest, sizeof digest);
	struct memo_slot *m = &memo[h % SIM_MEMO_SLOTS];
	/* the keys live on the heap, grown to the longest seen (a plan's
	 * accesses are in it); without room the search is not remembered */
	static unsigned char *key;
	static size_t key_cap;
	size_t len = sim_plan_key_len(p);
	if (!grow_key(&key, &key_cap, len) || !grow_key(&m->key, &m->cap, len))
		return search_default(p, hw, per_dim, cfg);
	sim_plan_key(p, key);
	if (m->used && m->len == len && memcmp(m->key, key, len) == 0 &&
	    memcmp(&m->hw, &spec, sizeof spec) == 0) {
		*cfg = m->cfg;
		return m->n;
	}
	memcpy(m->key, key, len);
	m->len = len;
	int64_t n = search_default(p, hw, per_dim, cfg);
	m->used = true;
	m->hw = spec;
	m->cfg = *cfg;
	m->n = n;
	return n;
}

/* ---- sim.h entry points ---- */

/*
 * start_ns = overhead.program_ns on the program's first kernel on the
 * TensorCore, 0 on every other: ns a program run takes beyond its kernels'
 * own work and fixed costs (overhead.kernel_ns), which a profile shows
 * inside its first kernel's event. Source: tpuv4-ops details.csv, where a
 * one-kernel elementwise program's kernel event is ~880 ns at 384
 * elements but a layer norm's per-row kernels after the first take
 * 365-381 ns; fitted on v4's programs of one kernel and of several
 * (hwspecs/v4.yaml), with the fixed cost per kernel v3's, fitted on
 * kernels inside a step. Known wrong: a program whose first kernel is an
 * async copy or sits in a loop takes it at its first top-level kernel;
 * v3's data are kernels inside a step (TpuGraphs) and host-timed programs,
 * which do not show it: 0 there.
 */
double sim_program_start_ns(const struct sim_kernel *k,
			    const struct hw_spec *hw)
{
	return k && k->starts_program ? hw->program_overhead_ns : 0.0;
}

enum ts_status sim_kernel_estimate(const struct sim_kernel *k,
				   const struct hw_spec *hw,
				   const struct sim_tile_config *cfg,
				   struct sim_estimate *out, struct ts_diag *d)
{
	struct sim_plan p;
	enum ts_status st = sim_plan_build(k, hw, &p, d);
	if (st == TS_ERR_UNSUPPORTED_OP) {
		/* No grid for this form: the roofline (max of the units' busy
		 * times + the kernel overhead) stands in, marked, rather than
		 * failing the whole program; d keeps the reason. */
		sim_plan_free(&p);
		struct ts_diag rd = {0};
		if (sim_kernel_roofline(k, hw, out, &rd) != TS_OK)
			return st;
		out->untiled = true;
		return TS_OK;
	}
	if (st == TS_OK)
		st = sim_plan_cost(&p, hw, cfg, out, d);
	sim_plan_free(&p);
	return st;
}

/*
 * sim_plan_relayout_ns: the relayout copies of a relaid plan (plan.c
 * relay_out), ns:
 *   relayout_ns = kernel_overhead_ns
 *               + max((relayout_read + relayout_written)
 *                     / HBM bytes per ns,
 *                     relayout_cycles / clock)
 * one kernel of its own that streams each input once in and its new form
 * once out, on the XLU at the relayout rate. Assumes the copies run
 * before the kernel, as one launch, at the sustained HBM rate. Known
 * wrong: several copies are several launches. Source: the relayout copy
 * XLA's layout assignment inserts (sim/kernels.c "Relayouts").
 */
double sim_plan_relayout_ns(const struct sim_plan *p, const struct hw_spec *hw)
{
	double bw = hw_mem_bytes_per_ns(hw);
	double hbm = bw > 0 ? (p->relayout_read + p->relayout_written) / bw
			    : 0.0;
	double xlu = hw->clock_hz > 0 ? p->relayout_cycles / hw->clock_hz * 1e9
				      : 0.0;
	return hw->kernel_overhead_ns + (hbm > xlu ? hbm : xlu);
}

enum ts_status sim_plan_choose(const struct sim_plan *p,
			       const struct hw_spec *hw,
			       const struct sim_tile_config *cfg,
			       const struct sim_plan **chosen,
			       struct sim_tile_config *full,
			       struct sim_estimate *out, struct ts_diag *d)
{
	*chosen = p;
	enum ts_status st = check_on(p, hw, cfg, full, d);
	if (st != TS_OK)
		return st;
	sim_plan_estimate(p, hw, full, out);
	const struct sim_plan *r = p->relaid;
	struct sim_tile_config rfull;
	if (!r || check_on(r, hw, cfg, &rfull, NULL) != TS_OK)
		return TS_OK;
	struct sim_estimate re;
	sim_plan_estimate(r, hw, &rfull, &re);
	re.time_ns += sim_plan_relayout_ns(r, hw);
	re.bytes_read += r->relayout_read;
	re.bytes_written += r->relayout_written;
	re.relaid = r->n_relaid;
	double moved = out->bytes_read + out->bytes_written;
	if ((re.feasible && !out->feasible) ||
	    (re.feasible == out->feasible &&
	     re.bytes_read + re.bytes_written < moved)) {
		*chosen = r;
		*full = rfull;
		*out = re;
	}
	return TS_OK;
}

enum ts_status sim_plan_cost(const struct sim_plan *p,
			     const struct hw_spec *hw,
			     const struct sim_tile_config *cfg,
			     struct sim_estimate *out, struct ts_diag *d)
{
	const struct sim_plan *chosen;
	struct sim_tile_config full;
	return sim_plan_choose(p, hw, cfg, &chosen, &full, out, d);
}

/*
 * The spec fields sim_plan_build reads none of: the chip's cores, HBM,
 * ICI, DCN, the MXU array's size and speed, the overheads and the host
 * terms (a plan holds shapes, grids, bytes, VPU cycles and MXU passes;
 * model.c turns them into time with these). Not VMEM's: memory-space
 * assignment (sim/placement.c), which reads them, decides which of a
 * plan's accesses are in VMEM. A field added to one of these groups
 * in hw_spec.c joins them: test_plan_reuse checks each free field on the
 * kernels of the corpus, the tile set, the all-reduce sweep, a sample of
 * tpuv4-ops (pooling included) and f32 dots at every precision: the same
 * estimate from a plan built on a spec with the field changed and from
 * one built without.
 */
bool sim_plan_spec_free(const struct hw_field_info *f)
{
	static const char *const groups[] = {
		"chip.", "hbm.", "ici.", "dcn.", "overhead.", "host.",
	};
	static const char *const fields[] = {
		"mxu.count", "mxu.rows", "mxu.cols", "mxu.clock_hz",
		"mxu.macs_per_cell_cycle", "mxu.pass_cycles", "mxu.int8_rate",
	};
	for (size_t i = 0; i < sizeof groups / sizeof *groups; i++)
		if (!strncmp(f->path, groups[i], strlen(groups[i])))
			return true;
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
		if (!strcmp(f->path, fields[i]))
			return true;
	return false;
}
