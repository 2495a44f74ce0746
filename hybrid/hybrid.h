/*
 * hybrid.h: decisions on top of the estimators: tile-size search (hyb_tile_*),
 * later fusion and what-if sweeps. See README "Source code layout".
 */
#ifndef HYBRID_H
#define HYBRID_H

#include "model.h"
#include "sim.h"

/* ---- tile-size search (hybrid/hyb_tile.c) ---------------------------------- */

#define HYB_TILE_MAX_TOP 32

/* One costed config. */
struct hyb_tile_pick {
	struct sim_tile_config config; /* complete (kernel bounds included) */
	struct sim_estimate est;       /* its analytic estimate */
};

struct hyb_tile_opts {
	int top_k;           /* configs kept, best first (1..HYB_TILE_MAX_TOP) */
	int per_dim;         /* candidate bounds per grid dim (0: all, see
	                        sim_plan_enumerate) */
	int64_t max_configs; /* cap on configs costed; per_dim shrinks until
	                        the candidate product fits (0: 4,000,000) */
};

struct hyb_tile_result {
	bool tunable;        /* the kernel has a tile grid (else n_top 0) */
	int64_t n_costed;    /* configs costed */
	int64_t n_feasible;  /* of those, fitting VMEM */
	int n_top;           /* entries in top */
	struct hyb_tile_pick top[HYB_TILE_MAX_TOP]; /* feasible, best first:
	                        time, then fewer steps, then smaller bounds */
	struct hyb_tile_pick def;  /* the default config (sim_plan_default) */
	int per_dim;         /* the per-dim cap finally used (0: none) */
};

/*
 * Enumerates the VMEM-feasible tile configs of kernel k (sim_plan_
 * enumerate), costs each with the analytic model and keeps the best
 * top_k. Deterministic. Fails only as sim_plan_build() does (unsupported
 * forms, out of memory).
 */
enum ts_status hyb_tile_search(const struct sim_kernel *k,
			       const struct hw_spec *hw,
			       const struct hyb_tile_opts *o,
			       struct hyb_tile_result *r, struct ts_diag *d);

#endif /* HYBRID_H */
