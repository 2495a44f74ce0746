/*
 * hyb_fusion.c: the `analytic` and `hybrid` fusion policies, which
 * decide an unfused module's fusion by predicted time instead of by XLA's
 * rules alone, and the no-fusion baseline of `fuse --report`.
 *
 * The decision space is the xla policy's (sim/grouping.c, seen through
 * sim/fusion_space.c: sim.h "fusion decisions"): consumers first,
 * each instruction is either computed inside the kernels of its users or
 * is a kernel of its own. The rules are of two sorts. Legality (what a
 * kernel can hold: a dot's operands take only format ops, collectives and
 * custom calls accept nothing, one core per kernel, no cycles) is kept by
 * every policy. Heuristics (recompute cheap producers in every user,
 * never fuse an expensive op through a broadcast, fuse a reduce or dot
 * into its one elementwise user, an expensive op joins its earliest user)
 * are what the analytic and hybrid policies may overturn.
 *
 * Greedy search, per grouped computation (the entry and control-flow
 * bodies): start from the xla policy's grouping; visit the instructions
 * whose fusion the rules decide (live, not free, not constant-derived, not
 * the root; cheap, expensive and core ops) consumers first, as XLA's
 * InstructionFusion does; try each the other way:
 *   - fused somewhere  -> a kernel of its own (SIM_FUSE_OWN);
 *   - its own kernel   -> recomputed in every user kernel
 *                         (SIM_FUSE_RECOMPUTE; tried only where legal, and
 *                         never for a reduce, dot or convolution);
 * regroup the computation with that decision and keep it when
 *
 *   T = sum over the computation's kernels of cost(kernel)   [ns, one run]
 *
 * drops by more than HYB_FUSE_MIN_GAIN (0.1%) of T: a smaller gain is
 * within the model's own error and not worth departing from XLA's rules
 * (and keeps the search from chasing rounding). cost is the analytic model's time of the
 * kernel with its best tile config (sim_kernel_estimate), or the hybrid's
 * (hyb_model.c: analytic x the learned correction). Decisions rest on
 * physics, not on the model's corners: among the kernels one alternative
 * has and the other has not, one outside the plausibility envelope
 * (sim_kernel_plausible: an infeasible config or over 10x its roofline)
 * rules the decision out, and one whose op mix the learned model does not
 * know (hyb_novel: its correction not trusted) makes the hybrid compare
 * both alternatives analytic, never a corrected kernel against an
 * uncorrected one. A kernel's HBM traffic,
 * VPU work (recomputed producers counted in every kernel that holds them),
 * VMEM working set and the per-kernel overhead are all in that time, so
 * "HBM traffic removed against recomputation and VMEM pressure" is the
 * model's own trade, not a second formula. Kernels are costed once per
 * distinct (members, outputs) set of a computation: a cache per
 * computation (members are named by their index in it) keyed by a 64-bit
 * FNV-1a hash of both (sim_fusion_space_key; a collision would reuse
 * another set's time; at the sizes here, a few thousand sets, its odds
 * are below 1e-12). A decision that makes an instruction a kernel of its
 * own is first weighed, where one is known, by a floor on what replaces
 * the one kernel it splits (sim_fusion_space_split_floor: two launches
 * and the same VPU work, from the base alone: floored()), and turned down
 * when that floor is already above the bar; for the analytic policy
 * exactly what costing would decide (test_fusion test_floor_exact), for
 * the hybrid a rule. A chain's or a tree's trials, each splitting the
 * computation's one kernel, cost O(1) so, not O(N). A decision not turned
 * down there is weighed by the kernels it changes
 * alone (sim_fusion_space_delta: the sum by difference, within rounding of
 * the sum over the kernels): one whose time so found is above the bar
 * (0.1% under the time before) by more than that rounding is turned down
 * there; the rest (and those whose change reaches a reduce that has or had
 * a sibling to merge with, or a cycle) are costed over the whole
 * computation as above, which decides.
 *
 * The analytic policy then keeps its decisions only if the program with
 * them, memory-space assignment and async overlap included, is no slower
 * than xla's (keep_if_faster); the hybrid one keeps them as found.
 * Known limits: one pass, one decision at a time (a pair of changes that
 * only pays together is not found); a while body is judged by one run of
 * its kernels (its trip count scales both sides equally); async overlap
 * is ignored (T sums kernels); sibling multi-output merging stays XLA's;
 * the floor leaves out the pieces' first loads and last stores beyond
 * their latency, so where those exceed the bar's 0.1% of T (a long chain
 * of large arrays: 1,000 ops on f32[1024,1024] on v5e) or a split kernel
 * shares members with another or holds a dot, trials are still costed
 * member by member, O(N) each.
 * Source: the greedy producer-consumer search of Kaufman et al. (MLSys
 * 2021) for the fusion task, with the cost model in place of measurement.
 */
#include "hybrid.h"

#include <math.h>
#include <string.h>

#define HYB_FUSE_MIN_GAIN 1e-3

void hyb_fuse_cost_analytic(void *hw, const struct sim_kernel *k,
			    struct hyb_fuse_kernel *out)
{
	struct sim_estimate e;
	struct ts_diag d = {0};
	*out = (struct hyb_fuse_kernel){NAN, NAN, true, true};
	if (sim_kernel_estimate(k, hw, NULL, &e, &d) != TS_OK)
		return;
	out->ns = out->analytic_ns = e.time_ns;
	out->plausible = sim_kernel_plausible(k, &e, hw);
}

/* Kernel costs by (members, outputs) key. */
struct cache {
	struct ts_u64map at; /* key -> index in v */
	struct hyb_fuse_kernel *v;
	int n, cap;
};

static void cache_free(struct cache *c)
{
	ts_u64map_free(&c->at);
	ts_free(c->v);
	memset(c, 0, sizeof *c);
}

/* The cost stored under key (*found), or a new slot for it; NULL when
 * memory runs out. It points into the cache until its next insertion. */
static struct hyb_fuse_kernel *cache_slot(struct cache *c, uint64_t key,
					  bool *found)
{
	int i = ts_u64map_get(&c->at, key);
	*found = i >= 0;
	if (*found)
		return &c->v[i];
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 256;
		struct hyb_fuse_kernel *v =
			ts_realloc(c->v, (size_t)cap * sizeof *v);
		if (!v)
			return NULL;
		c->v = v;
		c->cap = cap;
	}
	if (!ts_u64map_set(&c->at, key, c->n))
		return NULL;
	return &c->v[c->n++];
}

/* The cost stored under key, NULL when there is none (no change to c). */
static const struct hyb_fuse_kernel *cache_find(const struct cache *c,
						uint64_t key)
{
	int i = ts_u64map_get(&c->at, key);
	return i >= 0 ? &c->v[i] : NULL;
}

/* A list of kernel keys with room to sort them. */
struct keys {
	uint64_t *v, *tmp;
	int n, cap;
};

/* Room for n keys in k (its keys kept). */
static bool keys_reserve(struct keys *k, int n)
{
	if (n <= k->cap)
		return true;
	uint64_t *v = ts_realloc(k->v, (size_t)n * sizeof *v);
	if (v)
		k->v = v;
	uint64_t *t = v ? ts_realloc(k->tmp, (size_t)n * sizeof *t) : NULL;
	if (t)
		k->tmp = t;
	if (!v || !t)
		return false;
	k->cap = n;
	return true;
}

static void keys_free(struct keys *k)
{
	ts_free(k->v);
	ts_free(k->tmp);
	memset(k, 0, sizeof *k);
}

struct search {
	const struct ir_module *m;
	const struct sim_fusion_space *base; /* of the computation searched:
	                                        what no decision changes */
	const struct hyb_fuse_cost *cost;
	struct cache cache;
	struct keys gone, in; /* a trial's kernels, by delta (settled()) */
	struct sim_fusion_space *trial; /* the computation's trials' space */
	struct sim_fusion_plan *plan;
	struct ts_diag *d;
};

/* One alternative of a computation: its kernels' keys (ascending) and the
 * sums of their costs, as timed and analytic. */
struct alt {
	struct keys k;
	double ns, analytic_ns;
};

/* The cost of kernel k of space sp, whose key is key: from the cache, else
 * costed and kept there (unmodelled: 0, as run). *out points into the
 * cache until its next insertion. */
static enum ts_status kernel_cost(struct search *s,
				  const struct sim_fusion_space *sp, int k,
				  uint64_t key, const struct hyb_fuse_kernel **out)
{
	bool found;
	struct hyb_fuse_kernel *v = cache_slot(&s->cache, key, &found);
	*out = v;
	if (!v)
		return TS_ERR_NOMEM;
	if (found)
		return TS_OK;
	struct sim_kernel kn = {0};
	bool none;
	enum ts_status st = sim_fusion_space_kernel(sp, k, &kn, &none, s->d);
	*v = (struct hyb_fuse_kernel){0, 0, true, true};
	if (!st && !none)
		s->cost->kernel(s->cost->ctx, &kn, v);
	if (!isfinite(v->ns) || !isfinite(v->analytic_ns))
		v->ns = v->analytic_ns = 0; /* unmodelled: 0, as run */
	sim_kernel_release(&kn);
	s->plan->n_costed++;
	return st;
}

/* Costs computation c under force into a (its keys and sums). */
static enum ts_status comp_time(struct search *s,
				const struct ir_computation *c,
				const signed char *force, struct alt *a)
{
	struct sim_fusion_space *g;
	enum ts_status st = sim_fusion_space_build(s->m, c, force, s->base, &g);
	a->k.n = 0;
	a->ns = a->analytic_ns = 0;
	int n_k = st ? 0 : sim_fusion_space_kernels(g);
	if (!st && !keys_reserve(&a->k, n_k))
		st = TS_ERR_NOMEM;
	for (int k = 0; !st && k < n_k; k++) {
		uint64_t key = sim_fusion_space_key(g, k);
		const struct hyb_fuse_kernel *v;
		if ((st = kernel_cost(s, g, k, key, &v)))
			break;
		a->k.v[a->k.n++] = key;
		a->ns += v->ns;
		a->analytic_ns += v->analytic_ns;
	}
	ts_sort_u64(a->k.v, (size_t)a->k.n, a->k.tmp);
	sim_fusion_space_free(g);
	return st;
}

/* What the kernels one list has and the other has not come to (the
 * symmetric difference of two ascending lists of keys, each costed in the
 * cache): does any leave the envelope, does any go without its learned
 * correction, and (sums, or NULL) the costs of x's own and of y's own,
 * timed and analytic. */
static void differing(const struct search *s, const struct keys *x,
		      const struct keys *y, bool *implausible, bool *uncorrected,
		      double sums[4])
{
	*implausible = *uncorrected = false;
	int i = 0, j = 0;
	while (i < x->n || j < y->n) {
		uint64_t key;
		int own; /* 0: x's, 1: y's */
		if (j >= y->n || (i < x->n && x->v[i] < y->v[j])) {
			key = x->v[i++];
			own = 0;
		} else if (i >= x->n || y->v[j] < x->v[i]) {
			key = y->v[j++];
			own = 1;
		} else {
			i++;
			j++;
			continue;
		}
		const struct hyb_fuse_kernel *v = cache_find(&s->cache, key);
		TS_ASSERT(v);
		*implausible = *implausible || !v->plausible;
		*uncorrected = *uncorrected || !v->corrected;
		if (sums) {
			sums[own] += v->ns;
			sums[2 + own] += v->analytic_ns;
		}
	}
}

/* The times a decision compares, the best so far's (before) and the
 * alternative's (after): both corrected, or both analytic when a kernel
 * they differ in goes without its correction. */
static void times(bool uncorrected, double best_ns, double best_analytic,
		  double ns, double analytic_ns, double *before, double *after)
{
	*before = uncorrected ? best_analytic : best_ns;
	*after = uncorrected ? analytic_ns : ns;
}

/* Whether making instruction at a kernel of its own is turned down by the
 * floor on the kernels it makes (sim_fusion_space_split_floor) alone,
 * analytic time, ns:
 *   T - t(K) + floor  >=  T x (1 - HYB_FUSE_MIN_GAIN) x (1 + 1e-6)
 * T the best so far's analytic time, t(K) that of the one kernel the
 * decision changes (the cache's), floor a lower bound on the analytic
 * time of what replaces it; the margin (1e-6 of the bar) keeps a
 * decision within rounding of the bar for the costing that settles it.
 * For the analytic policy this is the decision the costing would make;
 * the hybrid takes it too: a correction (e^-1 to e^1) is not trusted to
 * overturn a split that launches one kernel more for the same VPU work. */
static bool floored(const struct search *s, struct sim_fusion_space *g,
		    int at, const struct alt *best)
{
	uint64_t key;
	double floor_ns;
	if (!s->cost->hw ||
	    !sim_fusion_space_split_floor(g, s->cost->hw, at, &key, &floor_ns))
		return false;
	const struct hyb_fuse_kernel *v = cache_find(&s->cache, key);
	double bar = best->analytic_ns * (1 - HYB_FUSE_MIN_GAIN);
	return v && v->analytic_ns > 0 && bar > 0 &&
	       best->analytic_ns - v->analytic_ns + floor_ns >= bar * (1 + 1e-6);
}

/* Whether the decision force makes at instruction at (against g, the
 * space the best so far is, timed in best) is turned down (*down) by the
 * kernels it changes alone (sim_fusion_space_delta): when one of them
 * leaves the envelope, or when the time they leave is above the bar by
 * more than rounding (1e-9 of the bar: the sum by difference and the sum
 * over the kernels differ by far less). Not turned down: the computation
 * is costed whole, which decides. */
static enum ts_status settled(struct search *s, struct sim_fusion_space *g,
			      const signed char *force, int at,
			      const struct alt *best, bool *down)
{
	*down = false;
	if (force[at] == SIM_FUSE_OWN && floored(s, g, at, best)) {
		*down = true;
		s->plan->n_floored++;
		return TS_OK;
	}
	bool followed = false;
	enum ts_status st = keys_reserve(&s->gone, best->k.n) ? TS_OK
							     : TS_ERR_NOMEM;
	if (!st)
		st = sim_fusion_space_delta(g, force, at, &s->trial, s->gone.v,
					    &s->gone.n, &followed);
	if (!st)
		s->plan->n_redecided += sim_fusion_space_decided(s->trial);
	if (st || !followed)
		return st;
	const struct sim_fusion_space *d = s->trial;
	int n_in = sim_fusion_space_kernels(d);
	s->in.n = 0;
	if (!keys_reserve(&s->in, n_in))
		st = TS_ERR_NOMEM;
	for (int k = 0; !st && k < n_in; k++) {
		const struct hyb_fuse_kernel *v;
		uint64_t key = sim_fusion_space_key(d, k);
		if (!(st = kernel_cost(s, d, k, key, &v)))
			s->in.v[s->in.n++] = key;
	}
	if (st)
		return st;
	ts_sort_u64(s->gone.v, (size_t)s->gone.n, s->gone.tmp);
	ts_sort_u64(s->in.v, (size_t)s->in.n, s->in.tmp);
	bool implausible, uncorrected;
	double sums[4] = {0, 0, 0, 0};
	differing(s, &s->gone, &s->in, &implausible, &uncorrected, sums);
	double before, after;
	times(uncorrected, best->ns, best->analytic_ns,
	      best->ns - sums[0] + sums[1],
	      best->analytic_ns - sums[2] + sums[3], &before, &after);
	double bar = before * (1 - HYB_FUSE_MIN_GAIN);
	*down = implausible || !(after < bar + fabs(bar) * 1e-9);
	return TS_OK;
}

static enum ts_status add_flip(struct sim_fusion_plan *p,
			       const struct sim_fusion_flip *f)
{
	struct sim_fusion_flip *q =
		ts_realloc(p->flips, (size_t)(p->n_flips + 1) * sizeof *q);
	if (!q)
		return TS_ERR_NOMEM;
	p->flips = q;
	p->flips[p->n_flips++] = *f;
	return TS_OK;
}

/* The greedy search over computation c; force[] (zeroed, n_instrs) gets
 * the decisions kept. */
static enum ts_status search_comp(struct search *s,
				  const struct ir_computation *c,
				  signed char *force)
{
	struct alt best = {0}, trial = {0}, swap;
	/* the first grouping is the base the others borrow from; g is the
	 * one under the decisions kept so far */
	struct sim_fusion_space *first = NULL, *g = NULL;
	enum ts_status st = sim_fusion_space_build(s->m, c, force, NULL, &first);
	s->base = g = first;
	if (!st)
		st = comp_time(s, c, force, &best);
	/* the visiting order: consumers first, fixed from the start */
	int *visit = st ? NULL : ts_malloc(((size_t)c->n_instrs + 1) * sizeof *visit);
	if (!st && !visit)
		st = TS_ERR_NOMEM;
	int n_visit = st ? 0 : sim_fusion_space_candidates(g, visit);
	for (int v = 0; !st && v < n_visit; v++) {
		int i = visit[v];
		enum sim_fuse_force alt = sim_fusion_space_alternative(g, i);
		if (alt == SIM_FUSE_DEFAULT)
			continue;
		signed char prev = force[i];
		force[i] = (signed char)alt;
		s->plan->n_trials++;
		/* most decisions are turned down by the few kernels they
		 * change; the rest are costed whole */
		bool down;
		if ((st = settled(s, g, force, i, &best, &down)))
			break;
		if (!down && (st = comp_time(s, c, force, &trial)))
			break;
		/* physics, not artefacts: no decision on a kernel outside the
		 * envelope; both sides corrected or both analytic */
		bool implausible = false, uncorrected = false;
		double before = 0, after = 0;
		if (!down) {
			differing(s, &best.k, &trial.k, &implausible,
				  &uncorrected, NULL);
			times(uncorrected, best.ns, best.analytic_ns, trial.ns,
			      trial.analytic_ns, &before, &after);
		}
		if (down || implausible ||
		    !(after < before * (1 - HYB_FUSE_MIN_GAIN))) {
			force[i] = prev;
			continue;
		}
		struct sim_fusion_flip f = {c->instrs[i], alt, before, after};
		swap = best;
		best = trial;
		trial = swap;
		/* the trials' space is made against one base */
		sim_fusion_space_free(s->trial);
		s->trial = NULL;
		if (g != first)
			sim_fusion_space_free(g);
		g = NULL;
		if (!(st = add_flip(s->plan, &f)))
			st = sim_fusion_space_build(s->m, c, force, s->base, &g);
	}
	ts_free(visit);
	if (first)
		s->plan->n_worked += sim_fusion_space_worked(first);
	keys_free(&best.k);
	keys_free(&trial.k);
	/* keys name instructions by their index in c: another computation's
	 * same indices are other kernels */
	cache_free(&s->cache);
	sim_fusion_space_free(s->trial);
	s->trial = NULL;
	if (g != first)
		sim_fusion_space_free(g);
	sim_fusion_space_free(first);
	s->base = NULL;
	return st;
}

/* The no-fusion plan's decisions for c: every decided instruction on its
 * own. */
static enum ts_status none_comp(const struct ir_module *m,
				const struct ir_computation *c,
				signed char *force)
{
	struct sim_fusion_space *g;
	enum ts_status st = sim_fusion_space_build(m, c, NULL, NULL, &g);
	int *cand = st ? NULL : ts_malloc(((size_t)c->n_instrs + 1) * sizeof *cand);
	if (!st && !cand)
		st = TS_ERR_NOMEM;
	int n = st ? 0 : sim_fusion_space_candidates(g, cand);
	for (int k = 0; k < n; k++)
		force[cand[k]] = SIM_FUSE_OWN;
	ts_free(cand);
	sim_fusion_space_free(g);
	return st;
}

/* The search judges each computation by the sum of its kernels' times
 * (T above); the program's memory-space assignment and async overlap
 * come after it and can take more from the xla grouping than the
 * decisions gain (v5e/decoder_s unfused: one recomputed dynamic-slice,
 * its loop body 1.87 -> 1.85 ms, the program 7.71 -> 7.79 ms once the
 * values kept in VMEM change). With the analytic model's own program
 * time at hand (sim_module_time: memory-space assignment for this spec
 * alone; `run` with several --hw places for the largest room, and takes
 * --trip-count), the decisions stay only when the program with them is
 * no slower than xla's; else all are dropped (counted, with both
 * times, for `fuse` to say so). */
static enum ts_status keep_if_faster(const struct ir_module *m,
				     const struct hw_spec *hw,
				     struct sim_fusion_plan *plan,
				     struct ts_diag *d)
{
	double with = NAN, xla = NAN;
	struct ts_diag d2 = {0};
	enum ts_status st = sim_module_time(m, plan, hw, &with, &d2);
	if (st == TS_OK)
		st = sim_module_time(m, NULL, hw, &xla, &d2);
	if (st == TS_ERR_NOMEM) {
		*d = d2;
		return st;
	}
	if (st != TS_OK || !(with > xla))
		return TS_OK; /* a program it cannot cost: kept as found */
	for (int i = 0; i < plan->n_comps; i++) {
		ts_free(plan->force[i]);
		plan->force[i] = NULL;
	}
	plan->n_dropped = plan->n_flips;
	plan->n_flips = 0;
	plan->dropped_ns = with;
	plan->xla_ns = xla;
	return TS_OK;
}

static enum ts_status plan_make(const struct ir_module *m,
				const struct hyb_fuse_cost *cost, bool none,
				struct sim_fusion_plan *plan,
				struct ts_diag *d)
{
	memset(plan, 0, sizeof *plan);
	plan->policy = none ? "none" : cost ? cost->name : "xla";
	plan->n_comps = m->n_comps;
	plan->force = ts_calloc((size_t)m->n_comps + 1, sizeof *plan->force);
	bool *grouped = ts_calloc((size_t)m->n_comps + 1, sizeof *grouped);
	struct search s = {.m = m, .cost = cost, .plan = plan, .d = d};
	enum ts_status st = plan->force && grouped ? TS_OK : TS_ERR_NOMEM;
	/* a compiled module ran as written: nothing to decide */
	if (!st && (cost || none))
		sim_fusion_space_comps(m, grouped);
	for (int ci = 0; !st && ci < m->n_comps; ci++) {
		const struct ir_computation *c = m->comps[ci];
		if (!grouped[c->index])
			continue;
		signed char *f = ts_calloc((size_t)c->n_instrs + 1, sizeof *f);
		if (!f) {
			st = TS_ERR_NOMEM;
			break;
		}
		int before = plan->n_flips;
		st = none ? none_comp(m, c, f) : search_comp(&s, c, f);
		if (none || plan->n_flips > before)
			plan->force[c->index] = f;
		else
			ts_free(f);
	}
	if (!st && cost && cost->kernel == hyb_fuse_cost_analytic &&
	    plan->n_flips > 0)
		st = keep_if_faster(m, cost->ctx, plan, d);
	cache_free(&s.cache);
	keys_free(&s.gone);
	keys_free(&s.in);
	ts_free(grouped);
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, m->file, 0, 0, "out of memory");
	if (st)
		sim_fusion_plan_free(plan);
	return st;
}

enum ts_status hyb_fusion_plan_build(const struct ir_module *m,
				     const struct hyb_fuse_cost *cost,
				     struct sim_fusion_plan *plan,
				     struct ts_diag *d)
{
	return plan_make(m, cost, false, plan, d);
}

enum ts_status hyb_fusion_plan_none(const struct ir_module *m,
				    struct sim_fusion_plan *plan,
				    struct ts_diag *d)
{
	return plan_make(m, NULL, true, plan, d);
}
