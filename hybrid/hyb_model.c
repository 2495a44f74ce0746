/*
 * hyb_model.c: hybrid estimates, the analytic model corrected by the learned
 * residual (learned/gnn.h): time = analytic x exp(r). The kernel's graph is
 * embedded once; each config or spec then runs only the network's head, so
 * a tile search with a model costs little more than without.
 */
#include "hybrid.h"

#include <math.h>
#include <string.h>

/* Embeds graph g into e (zeroed by the caller). TS_ERR_NOMEM only. */
static enum ts_status embed_graph(const struct gnn_model *m,
				  const struct gnn_graph *g,
				  struct hyb_embedding *e)
{
	struct gnn_graph_acts a = {0};
	enum ts_status st = gnn_embed(m, g, &a);
	if (st == TS_OK) {
		memcpy(e->emb, a.emb, (size_t)2 * m->hidden * sizeof *e->emb);
		e->excess = a.excess;
		e->ops = a.ops;
	}
	gnn_graph_acts_free(&a);
	return st;
}

enum ts_status hyb_embed(const struct gnn_model *m, const struct sim_kernel *k,
			 struct hyb_embedding *e)
{
	struct gnn_graph g;
	memset(e, 0, sizeof *e);
	enum ts_status st = gnn_graph_build(k, &g);
	if (st == TS_OK)
		st = embed_graph(m, &g, e);
	gnn_graph_free(&g);
	return st;
}

double hyb_kernel_predict(const struct gnn_model *m,
			  const struct hyb_embedding *e,
			  const struct sim_kernel *k,
			  const struct sim_estimate *est,
			  const struct hw_spec *hw, bool host_timed,
			  bool *fell_back)
{
	if (m->kind == GNN_RESIDUAL && !(est->time_ns > 0))
		return est->time_ns;
	double kf[GNN_KERNEL_F];
	struct gnn_head_acts h;
	gnn_kernel_features(k, est, hw, host_timed, kf);
	double raw = gnn_head(m, e->emb, kf, &h);
	double out = gnn_output(m, raw, fmax(e->excess, h.excess),
				 gnn_trust(m, e->ops, kf), NULL);
	double t = m->kind == GNN_LEARNED_ONLY ? exp(out)
					       : est->time_ns * exp(out);
	if (t > 0 && isfinite(t))
		return t;
	if (fell_back)
		*fell_back = true;
	return est->time_ns;
}

bool hyb_novel(const struct gnn_model *m, const struct hyb_embedding *e)
{
	double kf[GNN_KERNEL_F] = {0}; /* host_timed 0 */
	return m->kind == GNN_RESIDUAL &&
	       !gnn_model_knows(m, gnn_mix_key(e->ops, kf));
}

/* A digest of graph g, never 0: FNV-1a over its size, op mix, node
 * features (each double as two 32-bit words) and operand edges (its
 * users are their other side): all its embedding reads besides the
 * model. */
static uint64_t graph_key(const struct gnn_graph *g)
{
	uint64_t h = ts_fnv1a_word(TS_FNV1A_BASIS, (uint64_t)g->n);
	h = ts_fnv1a_word(h, g->ops);
	for (size_t i = 0; i < (size_t)g->n * GNN_NODE_F; i++) {
		uint64_t w;
		memcpy(&w, &g->x[i], sizeof w);
		h = ts_fnv1a_word(ts_fnv1a_word(h, w & UINT32_MAX), w >> 32);
	}
	for (int v = 0; v < g->n; v++)
		h = ts_fnv1a_word(h, (uint64_t)(g->in_off[v + 1] - g->in_off[v]));
	for (int e = 0; e < g->in_off[g->n]; e++)
		h = ts_fnv1a_word(h, (uint64_t)g->in_idx[e]);
	return h ? h : 1;
}

/* Kernel k's embedding under c's model: from c's cache when a graph with
 * its digest was embedded before, else embedded and kept there. */
static enum ts_status cached_embed(struct hyb_fuse_ctx *c,
				   const struct sim_kernel *k,
				   struct hyb_embedding *e)
{
	struct hyb_embed_cache *ec = &c->embeds;
	struct gnn_graph g;
	memset(e, 0, sizeof *e);
	enum ts_status st = gnn_graph_build(k, &g);
	uint64_t key = st ? 0 : graph_key(&g);
	int i = st ? -1 : ts_u64map_get(&ec->at, key);
	if (i >= 0)
		*e = ec->v[i];
	else if (!st && !(st = embed_graph(c->model, &g, e))) {
		if (ec->n == ec->cap) {
			int cap = ec->cap ? 2 * ec->cap : 64;
			struct hyb_embedding *v =
				ts_realloc(ec->v, (size_t)cap * sizeof *v);
			if (v) {
				ec->v = v;
				ec->cap = cap;
			}
		}
		/* out of memory: embedded, not kept */
		if (ec->n < ec->cap && ts_u64map_set(&ec->at, key, ec->n))
			ec->v[ec->n++] = *e;
	}
	gnn_graph_free(&g);
	return st;
}

void hyb_fuse_cost_hybrid(void *ctx, const struct sim_kernel *k,
			  struct hyb_fuse_kernel *out)
{
	struct hyb_fuse_ctx *c = ctx;
	struct sim_estimate est;
	struct hyb_embedding e;
	struct ts_diag d = {0};
	*out = (struct hyb_fuse_kernel){NAN, NAN, false, true};
	if (sim_kernel_estimate(k, c->hw, NULL, &est, &d) != TS_OK ||
	    cached_embed(c, k, &e) != TS_OK)
		return;
	/* a correction that is not finite: the analytic time, uncorrected
	 * (a candidate, not a kernel of the program: not reported) */
	bool fell_back = false;
	out->ns = hyb_kernel_predict(c->model, &e, k, &est, c->hw, false,
				     &fell_back);
	out->analytic_ns = est.time_ns;
	out->corrected = !fell_back && !hyb_novel(c->model, &e);
	out->plausible = sim_kernel_plausible(k, &est, c->hw);
}

const char *hyb_model_path(const char *name)
{
	return name && !strcmp(name, "default") ? TPUSIM_DEFAULT_MODEL : name;
}

void hyb_fuse_ctx_free(struct hyb_fuse_ctx *c)
{
	ts_u64map_free(&c->embeds.at);
	ts_free(c->embeds.v);
	memset(&c->embeds, 0, sizeof c->embeds);
}

enum ts_status hyb_model_load(const char *path, struct gnn_model *m,
			      struct ts_diag *d)
{
	return gnn_model_load(hyb_model_path(path), m, d);
}
