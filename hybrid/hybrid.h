/*
 * hybrid.h: the tasks, where the analytic model (sim/) and the learned one
 * (learned/) meet: hybrid estimates (analytic x the learned correction),
 * tile-size search (hyb_tile_*) and the fusion policies that decide by
 * predicted time (hyb_fusion_*). hybrid/README.md says what this room owns
 * and what it may call.
 */
#ifndef HYBRID_H
#define HYBRID_H

#include "gnn.h"
#include "model.h"
#include "sim.h"

/* ---- hybrid estimates (hybrid/hyb_model.c) ----------------------------------
 * A learned model (learned/gnn.h) on a kernel: its graph is embedded once
 * (hyb_embed), then each estimate of the kernel (a config, a spec) costs
 * only the model's head (hyb_kernel_predict). */

struct hyb_embedding {
	double emb[2 * GNN_MAX_HIDDEN];
	double excess; /* how far the graph lies outside the training range */
	uint64_t ops;  /* the graph's op mix (gnn_trust) */
};

/* Embeds kernel k's graph. TS_ERR_NOMEM only. */
enum ts_status hyb_embed(const struct gnn_model *m, const struct sim_kernel *k,
			 struct hyb_embedding *e);

/*
 * The learned time (ns) of kernel k costed as est on hw:
 *   residual model:      est->time_ns x exp(r)   (the hybrid estimate)
 *   learned-only model:  exp(log time)           (no analytic input)
 * host_timed: the kernel runs in a host-timed measurement (validation);
 * false for run and tile. An unmodelled or zero-time kernel keeps its
 * analytic time (0) under a residual model. A learned time that is not
 * finite and positive (a model whose parameters overflow on features far
 * outside its training range: gnn_model_read refuses one that overflows
 * inside it) falls back to the analytic est->time_ns and sets *fell_back
 * (when not NULL; never cleared, so one flag can gather many kernels).
 */
double hyb_kernel_predict(const struct gnn_model *m,
			  const struct hyb_embedding *e,
			  const struct sim_kernel *k,
			  const struct sim_estimate *est,
			  const struct hw_spec *hw, bool host_timed,
			  bool *fell_back);

/* True when residual model m does not know kernel e's op mix as run and
 * tile cost it (device-timed): its correction is scaled by
 * m->novel_trust (gnn_trust). */
bool hyb_novel(const struct gnn_model *m, const struct hyb_embedding *e);

/* The hybrid fusion policy's cost (struct hyb_fuse_cost, ctx a struct
 * hyb_fuse_ctx): a candidate kernel's analytic time with its best tile
 * config, times the model's correction (corrected: its op mix is known,
 * hyb_novel). A kernel's graph is embedded once per content: the search's
 * candidates share graphs (a kernel of more than GNN_MAX_NODES
 * instructions is embedded by its last ones: a chain's, whichever its
 * length; the layers of a model), kept by a 64-bit digest (a collision
 * would reuse another graph's embedding; at the sizes here, thousands of
 * graphs, its odds are below 1e-12). */
struct hyb_embed_cache {
	struct ts_u64map at;     /* digest -> index in v */
	struct hyb_embedding *v;
	int n, cap;              /* graphs embedded */
};
struct hyb_fuse_ctx {
	const struct gnn_model *model;
	const struct hw_spec *hw;
	struct hyb_embed_cache embeds; /* zeroed: empty; hyb_fuse_ctx_free */
};
struct hyb_fuse_kernel;
void hyb_fuse_cost_hybrid(void *ctx, const struct sim_kernel *k,
			  struct hyb_fuse_kernel *out);
/* Frees what the cost kept in c (its embeddings). */
void hyb_fuse_ctx_free(struct hyb_fuse_ctx *c);

/* Loads a model file; "default" names the model shipped with tpusim
 * (TPUSIM_DEFAULT_MODEL, learned/default.gnn in the source tree). */
enum ts_status hyb_model_load(const char *path, struct gnn_model *m,
			      struct ts_diag *d);
/* The file hyb_model_load reads for name: TPUSIM_DEFAULT_MODEL for
 * "default", else name itself (NULL stays NULL). Not owned. */
const char *hyb_model_path(const char *name);

/* ---- tile-size search (hybrid/hyb_tile.c) ---------------------------------- */

#define HYB_TILE_MAX_TOP 32

/* One costed config. */
struct hyb_tile_pick {
	struct sim_tile_config config; /* complete (kernel bounds included) */
	struct sim_estimate est;       /* its estimate: analytic, or with a
	                                  model time_ns is the hybrid time */
	double analytic_ns;            /* the analytic time */
	bool fell_back;                /* the learned time was not finite:
	                                  time_ns is the analytic one
	                                  (hyb_kernel_predict) */
};

struct hyb_tile_opts {
	int top_k;           /* configs kept, best first (1..HYB_TILE_MAX_TOP) */
	int per_dim;         /* candidate bounds per grid dim (0: all, see
	                        sim_plan_enumerate) */
	int64_t max_configs; /* cap on configs costed; per_dim shrinks until
	                        the candidate product fits (0: 4,000,000) */
	const struct gnn_model *model; /* rank by the hybrid (or learned-only)
	                        time: the kernel's graph embedded once, the
	                        model's head per config; NULL: analytic */
};

struct hyb_tile_result {
	bool tunable;        /* the kernel has a tile grid (else n_top 0) */
	int64_t n_costed;    /* configs costed */
	int64_t n_feasible;  /* of those, fitting VMEM */
	int64_t n_fell_back; /* of those, fell_back: costed analytic */
	int n_top;           /* entries in top */
	struct hyb_tile_pick top[HYB_TILE_MAX_TOP]; /* feasible, best first:
	                        time, then fewer steps, then smaller bounds */
	struct hyb_tile_pick def;  /* the default config (sim_plan_default) */
	int per_dim;         /* the per-dim cap finally used (0: none) */
};

/*
 * Enumerates the VMEM-feasible tile configs of kernel k (sim_plan_
 * enumerate), costs each with the analytic model (corrected by o->model
 * when given) and keeps the best top_k. Deterministic. Fails only as sim_plan_build() does (unsupported
 * forms, out of memory).
 */
enum ts_status hyb_tile_search(const struct sim_kernel *k,
			       const struct hw_spec *hw,
			       const struct hyb_tile_opts *o,
			       struct hyb_tile_result *r, struct ts_diag *d);

/* ---- fusion policies (hybrid/hyb_fusion.c) --------------------------------- */

/* A candidate kernel as a policy times it: ns for one run (NaN when it
 * cannot), the analytic ns, whether ns carries a learned correction
 * (false for a novel op mix: then the correction is not trusted), and
 * whether the analytic estimate is inside the envelope
 * (sim_kernel_plausible). */
struct hyb_fuse_kernel {
	double ns, analytic_ns;
	bool corrected, plausible;
};
/* How a policy times a candidate kernel. The analytic policy:
 * hyb_fuse_cost_analytic (ctx the spec); the hybrid one:
 * hyb_fuse_cost_hybrid (ctx a struct hyb_fuse_ctx). */
struct hyb_fuse_cost {
	void (*kernel)(void *ctx, const struct sim_kernel *k,
		       struct hyb_fuse_kernel *out);
	void *ctx;
	const char *name;     /* "analytic", "hybrid" */
	const struct hw_spec *hw; /* the spec the analytic time is on, for
	                             the search's floors (hyb_fusion.c); NULL
	                             when kernel is not the analytic model's
	                             (no floors) */
};
/* The analytic cost: sim_kernel_estimate on hw (ctx), best tile config
 * (corrected: true, there being no correction to distrust). */
void hyb_fuse_cost_analytic(void *hw, const struct sim_kernel *k,
			    struct hyb_fuse_kernel *out);

/*
 * Decides an unfused module's fusion by predicted time (hyb_fusion.c says
 * how): starting from the xla policy's decisions, each instruction whose
 * fusion the rules decide is tried the other way (a kernel of its own, or
 * recomputed in every user kernel) and kept so when the cost's sum over
 * the computation's kernels drops. cost NULL: the xla policy (no decision
 * changed). A compiled module gets a plan that decides nothing.
 * TS_ERR_NOMEM, or an error from building a kernel.
 */
enum ts_status hyb_fusion_plan_build(const struct ir_module *m,
				     const struct hyb_fuse_cost *cost,
				     struct sim_fusion_plan *plan,
				     struct ts_diag *d);
/* The plan that fuses nothing: every instruction whose fusion the rules
 * decide is a kernel of its own (policy "none": the module before any
 * fusion, the baseline of `fuse --report`). */
enum ts_status hyb_fusion_plan_none(const struct ir_module *m,
				    struct sim_fusion_plan *plan,
				    struct ts_diag *d);

#endif /* HYBRID_H */
