/*
 * hyb_tile.c: tile-size selection. Enumerates the candidate tile configs of
 * a kernel (sim/tile.c), costs each with the analytic model's plan
 * (sim/model.c: one plan per kernel, a closed-form estimate per config)
 * and keeps the best few. docs/ARCHITECTURE.md "Tasks on top".
 */
#include "hybrid.h"

#include <string.h>

/* Default cap on configs costed: about 1-4 s at the model's speed, enough
 * for every bound of every dim of the TpuGraphs kernels (fusion.191 has
 * 139,968 candidates). */
#define HYB_TILE_DEFAULT_MAX INT64_C(4000000)

struct search {
	const struct sim_plan *p;
	const struct hw_spec *hw;
	struct hyb_tile_result *r;
	int top_k;
	const struct gnn_model *model; /* NULL: analytic */
	const struct hyb_embedding *emb;
	/* the default found on the way: the candidates are the default
	 * search's, so its pick is the first by analytic estimate
	 * (sim_config_better, in enumeration order, as sim_plan_default
	 * picks) */
	bool find_default;
	struct sim_estimate def_analytic;
};

/* Costs cfg: analytic (as sim_plan_cost does: the plan, or its relaid
 * fallback where that moves fewer bytes), then the model's correction. */
static void cost(const struct search *s, const struct sim_tile_config *cfg,
		 struct hyb_tile_pick *pick)
{
	pick->config = *cfg;
	const struct sim_plan *chosen;
	struct sim_tile_config full;
	struct ts_diag d = {0};
	if (sim_plan_choose(s->p, s->hw, cfg, &chosen, &full, &pick->est, &d) !=
	    TS_OK)
		sim_plan_estimate(s->p, s->hw, cfg, &pick->est);
	pick->analytic_ns = pick->est.time_ns;
	pick->fell_back = false;
	if (s->model)
		pick->est.time_ns = hyb_kernel_predict(s->model, s->emb, s->p->k,
						       &pick->est, s->hw, false,
						       &pick->fell_back);
}

/* true when pick a ranks before pick b (sim_config_better) */
static bool better(const struct hyb_tile_pick *a, const struct hyb_tile_pick *b)
{
	return sim_config_better(&a->est, &a->config, &b->est, &b->config);
}

static bool same_config(const struct sim_tile_config *a,
			const struct sim_tile_config *b)
{
	if (a->n_out != b->n_out || a->n_kernel != b->n_kernel)
		return false;
	for (int i = 0; i < a->n_out; i++)
		if (a->out_bounds[i] != b->out_bounds[i])
			return false;
	for (int i = 0; i < a->n_kernel; i++)
		if (a->kernel_bounds[i] != b->kernel_bounds[i])
			return false;
	return true;
}

static bool visit(const struct sim_tile_config *cfg, void *ctx)
{
	struct search *s = ctx;
	struct hyb_tile_result *r = s->r;
	struct hyb_tile_pick pick;
	/* the default, costed first, is not listed twice */
	if (!s->find_default && r->n_costed > 0 &&
	    same_config(cfg, &r->def.config))
		return true;
	cost(s, cfg, &pick);
	if (s->find_default) {
		struct sim_estimate a = pick.est;
		a.time_ns = pick.analytic_ns;
		if (r->n_costed == 0 ||
		    sim_config_better(&a, cfg, &s->def_analytic,
				      &r->def.config)) {
			s->def_analytic = a;
			r->def = pick;
		}
	}
	r->n_costed++;
	r->n_fell_back += pick.fell_back;
	if (!pick.est.feasible)
		return true;
	r->n_feasible++;
	/* insertion into the sorted top list */
	int n = r->n_top;
	if (n == s->top_k && !better(&pick, &r->top[n - 1]))
		return true;
	int i = n < s->top_k ? n : n - 1;
	while (i > 0 && better(&pick, &r->top[i - 1])) {
		r->top[i] = r->top[i - 1];
		i--;
	}
	r->top[i] = pick;
	if (n < s->top_k)
		r->n_top++;
	return true;
}

/* hyb_tile_search over a built plan p of k. */
static enum ts_status search_plan(const struct sim_kernel *k,
				  const struct hw_spec *hw,
				  const struct hyb_tile_opts *o,
				  struct hyb_tile_result *r,
				  const struct sim_plan *p, struct ts_diag *d)
{
	enum ts_status st;
	struct hyb_embedding emb;
	const struct gnn_model *model = o ? o->model : NULL;
	if (model && (st = hyb_embed(model, k, &emb))) {
		ts_diag_set(d, NULL, 0, 0, "out of memory");
		return st;
	}
	struct search s = {.p = p, .hw = hw, .r = r, .model = model,
			   .emb = &emb};
	if (p->kind != SIM_PLAN_TILED || p->out.rank == 0) {
		sim_plan_default(p, hw, &r->def.config);
		cost(&s, &r->def.config, &r->def);
		return TS_OK;
	}
	r->tunable = true;
	int top_k = o && o->top_k > 0 ? o->top_k : 1;
	if (top_k > HYB_TILE_MAX_TOP)
		top_k = HYB_TILE_MAX_TOP;
	int64_t max = o && o->max_configs > 0 ? o->max_configs
					      : HYB_TILE_DEFAULT_MAX;
	int per_dim = o ? o->per_dim : 0;
	/* shrink the per-dim candidate count until the product fits */
	if (sim_plan_enumerate(p, per_dim, NULL, NULL) > max) {
		per_dim = per_dim > 0 ? per_dim : 64;
		while (per_dim > 2 &&
		       sim_plan_enumerate(p, per_dim, NULL, NULL) > max)
			per_dim--;
	}
	r->per_dim = per_dim;
	s.top_k = top_k;
	/* Over the default's own candidates the default is found on the way;
	 * else it is searched and listed first (with a smaller cap it can
	 * come from another spread): the best listed is never slower. */
	s.find_default = per_dim == sim_plan_default_per_dim(p);
	if (!s.find_default) {
		sim_plan_default(p, hw, &r->def.config);
		cost(&s, &r->def.config, &r->def);
		visit(&r->def.config, &s);
	}
	sim_plan_enumerate(p, per_dim, visit, &s);
	return TS_OK;
}

enum ts_status hyb_tile_search(const struct sim_kernel *k,
			       const struct hw_spec *hw,
			       const struct hyb_tile_opts *o,
			       struct hyb_tile_result *r, struct ts_diag *d)
{
	memset(r, 0, sizeof *r);
	struct sim_plan p;
	enum ts_status st = sim_plan_build(k, hw, &p, d);
	if (st == TS_ERR_UNSUPPORTED_OP) { /* no grid: not tunable, roofline */
		st = sim_kernel_estimate(k, hw, NULL, &r->def.est, d);
		r->def.analytic_ns = r->def.est.time_ns;
	} else if (st == TS_OK) {
		st = search_plan(k, hw, o, r, &p, d);
	}
	sim_plan_free(&p);
	return st;
}
