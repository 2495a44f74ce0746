/*
 * hyb_model.c: hybrid estimates, the analytic model corrected by the learned
 * residual (learned/gnn.h): time = analytic x exp(r). The kernel's graph is
 * embedded once; each config or spec then runs only the network's head, so
 * a tile search with a model costs little more than without.
 */
#include "hybrid.h"

#include <math.h>
#include <string.h>

enum ts_status hyb_embed(const struct gnn_model *m, const struct sim_kernel *k,
			 struct hyb_embedding *e)
{
	struct gnn_graph g;
	struct gnn_graph_acts a = {0};
	memset(e, 0, sizeof *e);
	enum ts_status st = gnn_graph_build(k, &g);
	if (st == TS_OK)
		st = gnn_embed(m, &g, &a);
	if (st == TS_OK) {
		memcpy(e->emb, a.emb, (size_t)2 * m->hidden * sizeof *e->emb);
		e->excess = a.excess;
		e->ops = a.ops;
	}
	gnn_graph_acts_free(&a);
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

void hyb_fuse_cost_hybrid(void *ctx, const struct sim_kernel *k,
			  struct hyb_fuse_kernel *out)
{
	const struct hyb_fuse_ctx *c = ctx;
	struct sim_estimate est;
	struct hyb_embedding e;
	struct ts_diag d = {0};
	*out = (struct hyb_fuse_kernel){NAN, NAN, false, true};
	if (sim_kernel_estimate(k, c->hw, NULL, &est, &d) != TS_OK ||
	    hyb_embed(c->model, k, &e) != TS_OK)
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

enum ts_status hyb_model_load(const char *path, struct gnn_model *m,
			      struct ts_diag *d)
{
	return gnn_model_load(hyb_model_path(path), m, d);
}
