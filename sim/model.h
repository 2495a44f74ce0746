/*
 * model.h: the analytic TensorCore model behind sim_kernel_estimate(), split
 * into a plan (sim_plan_build: what a kernel's tile grid is and how each
 * operand, result, MXU and VPU follow it; config independent, built once)
 * and a cheap estimate per tile config (sim_plan_estimate), so that tile
 * search (hybrid/hyb_tile.c) and benchmarks cost millions of configs. Tile
 * grids, default configs and config enumeration are in sim/tile.c; the
 * plan is built in sim/plan.c, the model's equations are in sim/model.c. docs/TPU.md section 3 explains
 * grids and bounds.
 */
#ifndef SIM_MODEL_H
#define SIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim.h"

/* ---- tile grids (sim/tile.c) ----------------------------------------------- */

/*
 * The tile grid of one array: its dims in physical (major-to-minor) order,
 * the last k divided by the layout's first tile (k = tile rank), rounded up.
 * Arrays written without tiles get the tile and physical order XLA TPU
 * would assign (ir_shape_default_tile, ir_shape_major_to_minor in
 * hlo/ir_shape.c: T(8,128) or a 1-D T(256|512|1024), least padding).
 */
struct sim_tgrid {
	int rank;                        /* grid dims = array rank (0: scalar) */
	int logical[SIM_MAX_GRID];       /* logical dim at each physical position */
	int64_t elems[SIM_MAX_GRID];     /* extent in elements */
	int64_t tile[SIM_MAX_GRID];      /* tile extent along it, elements (1 = untiled) */
	int64_t tiles[SIM_MAX_GRID];     /* ceil(elems / tile): the grid */
	double bits;                     /* stored bits per element (>= 8) */
	double pad_factor;               /* extra padding of tile dims the array
	                                    lacks (a rank-1 array under T(8,128)
	                                    fills 8 rows) and of the tiles after
	                                    the first (ir_shape_further_tiles):
	                                    >= 1 */
};

/* Fills g from an array shape. TS_ERR_UNSUPPORTED_OP for tuples and ranks
 * above SIM_MAX_GRID (message names the shape). */
enum ts_status sim_tile_grid(const struct ir_shape *s, struct sim_tgrid *g,
			     struct ts_diag *d);

/*
 * The instruction whose iteration space a kernel's output_bounds tile
 * (TPU.md section 3): a convolution or dot among the members (the largest
 * by output elements), else a reduce among them (the largest input; its
 * *input* is the space: a reduction fusion iterates over what it reduces,
 * also when an elementwise epilogue follows the reduce, as the grouping of
 * unfused modules has it, so a fused module costs what its unfused source
 * does), else the root (the largest tuple element). For an unfused kernel,
 * the instruction itself. NULL only for an empty kernel.
 */
const struct ir_instr *sim_tile_target(const struct sim_kernel *k);
/* The root values of a kernel (at most cap, SIM_MAX_ROOTS will do): a
 * fused computation's root (its tuple elements), a group's one output (its
 * tuple elements) or outputs, an unfused op itself. */
#define SIM_MAX_ROOTS 64
int sim_kernel_roots(const struct sim_kernel *k, const struct ir_instr **out,
		     int cap);

/* The shape the output bounds tile: the target's result, or a reduce
 * target's first input. */
const struct ir_shape *sim_tile_space_shape(const struct ir_instr *target);

/* ---- the plan ------------------------------------------------------------- */

enum sim_plan_kind {
	SIM_PLAN_TILED = 0,    /* a grid loop: loop fusions, copies, reduces,
	                          convolution and dot fusions */
	SIM_PLAN_FREE,         /* bitcast-like: no device work, zero time */
	SIM_PLAN_COLLECTIVE,   /* ICI bytes */
	SIM_PLAN_UNMODELLED,   /* custom-call, infeed...: listed, zero time */
	SIM_PLAN_DECLARED,     /* a Pallas kernel (custom-call with a declared
	                          cost, ir_declared): its roofline */
	SIM_PLAN_DMA,          /* an async transfer (sim_kernel.dma): bytes
	                          at HBM bandwidth, other_bytes of them */
	SIM_PLAN_KIND_COUNT
};

/* Roles of a dim of the combined grid for the MXU. */
enum sim_dim_role {
	SIM_ROLE_M = 0,     /* output rows streamed through the MXU (batch,
	                       spatial, lhs free dims); also every dim of a
	                       kernel without MXU work */
	SIM_ROLE_N,         /* output features (columns of the weight tile) */
	SIM_ROLE_BATCH,     /* dot batch dims: separate weight tiles */
	SIM_ROLE_TAP,       /* convolution window taps (kernel spatial dims) */
	SIM_ROLE_K,         /* contraction (input features) */
	SIM_ROLE_COUNT
};

#define SIM_PLAN_MAX_DIMS (2 * SIM_MAX_GRID)
#define SIM_FOLD_MAX_K 16 /* input features a folded window tap may have */

/* One dim of the combined iteration grid: the output grid's dims in
 * physical order, then the kernel grid's dims not shared with the output
 * (contraction and taps), innermost last; steps run in lexicographic order
 * (TPU.md section 2 rule 5: the reduction axis is the last grid axis). */
struct sim_plan_dim {
	int64_t tiles;        /* extent in tiles */
	int64_t tile;         /* elements per tile */
	int64_t elems;        /* extent in elements */
	enum sim_dim_role role;
	int src;              /* out grid dim (< n_out) or n_out + kernel grid dim */
};

/* One physical dim of an operand or result, and how its block follows the
 * grid. */
struct sim_plan_adim {
	int grid;             /* combined dim its block follows; -1: whole dim */
	int win;              /* combined dim of a convolution window widening
	                         it (halo), -1 if none */
	double scale;         /* operand elements per grid element (stride for
	                         windowed dims; size ratio for slices/pads) */
	int64_t dilation;     /* elements between window taps (rhs dilation) */
	int64_t lhs_dilate;   /* base (lhs) dilation: input elements are 1/this
	                         of the windowed extent */
	int64_t elems;        /* its extent, elements */
	int64_t tile;         /* its tile extent (padding granule), elements */
};

/* How one kernel input or output moves between HBM and VMEM. */
struct sim_plan_access {
	const char *name;     /* instruction name, for explain */
	int input;            /* index into the kernel's inputs; -1: output */
	int rank;
	struct sim_plan_adim dims[SIM_MAX_GRID]; /* physical order */
	uint32_t follows;     /* the combined dims its dims follow (grid or
	                         win), bit d for dim d */
	int form;             /* its cost form: accesses whose fields
	                         estimate()'s per-access cost reads are equal
	                         share one, numbered in order of first
	                         appearance (a fusion of many operands has few
	                         forms) */
	bool form_first;      /* the first access of its form */
	double elem_bytes;    /* bytes per element (stored bits / 8) */
	double pad_factor;    /* sim_tgrid.pad_factor of its shape */
	double bytes;         /* whole array, padded */
	bool output;          /* written back; else read */
	bool in_vmem;         /* already on chip (memory space S(1), S(6)...):
	                         no DMA */
	double stage_ratio;   /* VMEM bytes of an unpacked staging copy per
	                         byte of its block: 32 / bits for a 16-bit
	                         operand of a windowed convolution (unpacked
	                         to 32-bit words before the MXU), else 0 */
	double prologue_cycles; /* VPU cycles of fused ops that transform this
	                         input before the MXU, per full pass over it */
	enum ir_type type;    /* element type as stored */
	double convert_cycles; /* VPU cycles to convert the whole array between
	                         its stored type and f32 per pass over it (f16:
	                         hw_vpu_f16_convert_cycles; else 0) */
};

/* A contraction of the kernel the grid does not tile (a nested fusion's
 * dot or convolution, a second dot beside the tiled one): its work, as
 * the MXU sees it (plan.c collects them, model.c costs them). */
#define SIM_PLAN_MAX_UNTILED 8
struct sim_plan_mxu_op {
	double macs;          /* useful multiply-accumulates */
	int64_t k;            /* contraction depth (rows of a weight tile) */
	int64_t n;            /* output features (columns of a weight tile) */
	int passes;           /* bf16 passes per weight tile */
	bool int8;            /* int8 x int8 (sim_int8_contraction) */
};

struct sim_plan {
	const struct sim_kernel *k;
	enum sim_plan_kind kind;
	const struct ir_instr *target;    /* sim_tile_target() */
	struct sim_tgrid out;             /* grid that output_bounds tile */
	struct sim_tgrid kern;            /* grid that kernel_bounds tile */
	bool side_coll;                   /* a collective fused beside the
	                                     conv/dot (coll* below), run at
	                                     once on the ICI */
	bool has_kernel;                  /* conv/dot: kernel_bounds apply and
	                                     the MXU does the contraction */
	int kern_shared[SIM_MAX_GRID];    /* per kernel grid dim: the out grid
	                                     dim it shares (output features,
	                                     dot batch), or -1 */
	int n_dims;                       /* combined grid dims */
	struct sim_plan_dim dims[SIM_PLAN_MAX_DIMS];
	int kern_dim[SIM_MAX_GRID];       /* combined dim of each kernel grid
	                                     dim (shared ones: the out dim's) */
	int out_dim[SIM_MAX_GRID];        /* combined dim of each out grid dim */
	int n_access;
	struct sim_plan_access *acc;      /* n_access of them, every input and
	                                     output that follows the grid (heap:
	                                     sim_plan_free) */
	int cap_access;                   /* acc's room */
	double other_bytes;               /* operands of unknown form (tuples,
	                                     ranks above SIM_MAX_GRID) and
	                                     literal constants, read once */
	double host_bytes;                /* a DMA's bytes across PCIe
	                                     (sim_dma_host_bytes) */
	/* MXU (has_kernel) */
	int mxu_passes;                   /* bf16 passes per weight tile */
	bool mxu_int8;                    /* int8 x int8: at mxu.int8_rate x
	                                     the bf16 rate */
	int64_t mxu_groups;               /* feature groups (depthwise > 1) */
	int64_t mxu_cout;                 /* output features (all groups) */
	bool mxu_windowed;                /* a convolution window wider than 1:
	                                     the kernel is the stationary operand */
	bool mxu_fold_taps;               /* window taps outnumber the output's
	                                     spatial positions (weight gradient),
	                                     or the contraction is at most
	                                     SIM_FOLD_MAX_K deep: taps fold into
	                                     the contraction */
	double mxu_macs;                  /* useful multiply-accumulates */
	double tap_density;               /* fraction of window taps that land
	                                     on real input (lhs dilation) */
	int n_mxu_untiled;                /* contractions besides the tiled
	                                     one, merged by (k, n, passes);
	                                     past SIM_PLAN_MAX_UNTILED kinds
	                                     the last takes the rest */
	struct sim_plan_mxu_op mxu_untiled[SIM_PLAN_MAX_UNTILED];
	double mxu_untiled_macs;          /* their MACs in all */
	/* VPU */
	double vpu_cycles;                /* whole kernel, config independent */
	double xlu_cycles;                /* of them, relayouts on the XLU
	                                     (sim_relayout_cycles) */
	double acc_vregs_per_elem;        /* f32 accumulator vregs per output-
	                                     space element re-added per extra
	                                     contraction step */
	double flops;                     /* 2 x MACs + VPU element ops */
	/* collectives: sim_collective_of and the groups, costed by
	 * sim_plan_ici at estimate time (so that no ICI field is read into
	 * the plan) */
	enum hw_collective coll;
	double coll_bytes;                /* each device holds in full, every
	                                     memory space (sim_work.ici_bytes) */
	int64_t coll_devices;
	int coll_bits;
	const struct ir_groups *coll_groups; /* sim_kernel.groups (not owned) */
	int64_t coll_dcn;                 /* sim_megascale_slices */
	/* megacore */
	double core_space;                /* output-space elements that
	                                     sim_plan_cores splits by; 0: never
	                                     split (a reduce-window) */
	const struct hw_spec *hw;         /* the spec it was built for
	                                     (sim_plan_check searches the
	                                     default config on it) */
	/* inputs relaid out before the kernel runs (plan.c relay_out): a
	 * copy of its own, config independent, that sim_plan_cost adds */
	int n_relaid;
	double relayout_read;             /* bytes the copies read */
	double relayout_written;          /* bytes the copies write */
	double relayout_cycles;           /* their XLU cycles */
	struct sim_plan *relaid;          /* the same grid with every input
	                                     that streams badly relaid out
	                                     (heap; NULL when none): what
	                                     sim_plan_cost takes when it moves
	                                     fewer bytes */
};

/* Builds the plan of one kernel on one spec (fills *p, whose accesses it
 * allocates: sim_plan_free it, also after a failure). Fails with
 * TS_ERR_UNSUPPORTED_OP for forms it cannot grid, TS_ERR_NOMEM. */
enum ts_status sim_plan_build(const struct sim_kernel *k,
			      const struct hw_spec *hw, struct sim_plan *p,
			      struct ts_diag *d);
/* Frees a plan's accesses (a zeroed or freed plan is fine). */
void sim_plan_free(struct sim_plan *p);

/*
 * Checks a config against the plan: ranks equal the grids', every bound in
 * 1..grid, kernel and output bounds agree on shared dims (clipped at the
 * dim size). cfg NULL or with n_out == 0 and n_kernel == 0 is the model's
 * best (sim_plan_default); a config that gives only some bounds takes the
 * others from it. Writes the completed config (kernel bounds derived from
 * output bounds when only those were given) into *full. TS_ERR_MISUSE
 * with the offending entry named.
 */
/* Kernel-grid bound that covers the same elements as output bound ob on
 * output grid dim od (kernel grid dim kd), or -1 if no whole number of
 * kernel tiles does (tile.c). */
int64_t sim_plan_shared_bound(const struct sim_plan *p, int kd, int od,
			      int64_t ob);

enum ts_status sim_plan_check(const struct sim_plan *p,
			      const struct sim_tile_config *cfg,
			      struct sim_tile_config *full,
			      struct ts_diag *d);

/* Costs kernel p->k under cfg (NULL: the default config, searched on hw)
 * on hw: sim_plan_check, then sim_plan_estimate. p may have been built on
 * another spec that differs from hw only in fields sim_plan_spec_free
 * names (a what-if sweep builds each kernel's plan once). */
enum ts_status sim_plan_cost(const struct sim_plan *p,
			     const struct hw_spec *hw,
			     const struct sim_tile_config *cfg,
			     struct sim_estimate *out, struct ts_diag *d);
/* The time of a relaid plan's relayout copies on hw, ns (config.c). */
double sim_plan_relayout_ns(const struct sim_plan *p, const struct hw_spec *hw);
/* sim_plan_cost's choice: p under cfg (NULL: its default), or p->relaid
 * (the same grid with the inputs that stream badly relaid out first by a
 * copy, sim_plan_relayout_ns; under cfg, or its own default) when that
 * moves fewer HBM bytes, or fits VMEM where p does not: no plan that fits
 * is chosen whose traffic exceeds its fallback's. The plan chosen, its
 * completed config and its estimate (with the copies' time and bytes;
 * relaid: how many inputs they relay out). */
enum ts_status sim_plan_choose(const struct sim_plan *p,
			       const struct hw_spec *hw,
			       const struct sim_tile_config *cfg,
			       const struct sim_plan **chosen,
			       struct sim_tile_config *full,
			       struct sim_estimate *out, struct ts_diag *d);
/* TensorCores the kernel's steps are split across on hw
 * (hw_spec_kernel_cores of p->core_space; 1 when it is 0): each step's MXU
 * and VPU work divides by it. */
int sim_plan_cores(const struct sim_plan *p, const struct hw_spec *hw);
/* sim_collective_ici of a collective plan's kernel on hw, from what the
 * plan keeps. */
void sim_plan_ici(const struct sim_plan *p, const struct hw_spec *hw,
		  struct hw_ici_cost *out);
/* sim_collective_ici for collective c of `bytes` per device over `devices`
 * of `bits`-bit elements in groups r, or, when dcn_slices > 0, over one
 * group of that many slices, each device with its peers in the others
 * (the megascale runtime's exchange, sim_megascale_slices) (sim/slice.c). */
void sim_collective_cost(const struct hw_spec *hw, enum hw_collective c,
			 double bytes, int64_t devices, int bits,
			 const struct ir_groups *r, int64_t dcn_slices,
			 struct hw_ici_cost *out, int64_t *group);
/* True for a spec field no plan depends on (config.c). */
bool sim_plan_spec_free(const struct hw_field_info *f);

/* Costs a checked config (from sim_plan_check). Never fails. */
void sim_plan_estimate(const struct sim_plan *p, const struct hw_spec *hw,
		       const struct sim_tile_config *full,
		       struct sim_estimate *out);

/* ---- the terms of one estimate (explain, tile search reports) ---- */

/* Blocks of one combined grid dim under a config. */
struct sim_blocks {
	int64_t nb;       /* blocks: ceil(tiles / bound) */
	int64_t bound;    /* tiles per block */
	int64_t full;     /* elements of a full block (clipped to the dim) */
	int64_t n_full;   /* full blocks */
	int64_t last;     /* elements of the ragged last block */
	int64_t n_last;   /* 1 when the last block is ragged, else 0 */
};

/* What one access moves under a config. */
struct sim_acc_cost {
	double total;     /* bytes moved over the kernel (writes for outputs) */
	double reread;    /* accumulating outputs: partial blocks read back */
	double transfers; /* DMAs issued */
	double block;     /* bytes of the first (largest) block */
	double last;      /* bytes of the last block */
	double refetch;   /* passes over the whole array */
	double chunks;    /* contiguous runs (DMA chunks) moved over the
	                     kernel (writes for outputs) */
	double block_chunks; /* runs of the first block */
	double last_chunks;  /* runs of the last block */
	double reread_chunks; /* runs of the partial sums read back */
};

struct sim_est_detail {
	struct sim_blocks bl[SIM_PLAN_MAX_DIMS];     /* per combined dim */
	struct sim_acc_cost *ac; /* per access (sim_est_detail_free) */
	double mxu_cycles;      /* whole kernel */
	double mxu_untiled_cycles; /* of them, the contractions the grid does
	                           not tile (sim_plan.mxu_untiled) */
	double vpu_cycles;      /* fused ops, whole kernel */
	double acc_cycles;      /* draining MXU results and re-adding partial
	                           sums of a split contraction (VPU) */
	double readd_cycles;    /* the re-adding part, which also holds up
	                           the MXU (added to its cycles) */
	double prologue_cycles; /* MXU operand prologues, times their refetches */
	double first_bytes;     /* loaded before the first step */
	double last_bytes;      /* stored after the last step */
	double transfers;       /* DMAs in all */
	double chunks;          /* contiguous runs they move, in all */
	double rows;            /* iterations of the loops over the block
	                           rows (overhead.row_cycles each) */
	double compute_step_ns; /* per step */
	double dma_step_ns;     /* per step */
	double step_ns;         /* per-step overhead */
	double first_ns, last_ns, pipeline_ns; /* the three time terms */
	int64_t steps;          /* grid steps */
	int64_t out_steps;      /* output blocks */
	int64_t split;          /* cores the output blocks are dealt to */
	double core_steps;      /* steps each core's pipeline runs (S_c) */
};

/* sim_plan_estimate() that also returns its terms (detail->ac allocated:
 * sim_est_detail_free it, also after TS_ERR_NOMEM, and before the detail
 * is filled again). */
enum ts_status sim_plan_estimate_detail(const struct sim_plan *p,
					const struct hw_spec *hw,
					const struct sim_tile_config *full,
					struct sim_estimate *out,
					struct sim_est_detail *detail,
					struct ts_diag *d);
void sim_est_detail_free(struct sim_est_detail *detail);

/* A plan's bytes without its pointers (which only name the kernel, the
 * target, the spec it came from and where its accesses are), its accesses
 * in place of the pointer to them, then its relaid plan's key if any, into out (sim_plan_key_len(p) bytes);
 * returns the length. Two plans with the same key cost the same under
 * every spec and config. */
size_t sim_plan_key_len(const struct sim_plan *p);
size_t sim_plan_key(const struct sim_plan *p, unsigned char *out);
/* The model's best config, the default (sim/config.c: rule and search
 * documented there). Returns the number of configs it costed. */
int64_t sim_plan_default(const struct sim_plan *p, const struct hw_spec *hw,
			 struct sim_tile_config *cfg);

/* Relative slack of a floor against the estimate (a subtree is cut only
 * when its time floor exceeds the best by more; a bound is ruled out only
 * when its VMEM floor exceeds VMEM by more): the floors and estimate() sum
 * their terms in different orders, so a floor that equals the estimate in
 * exact arithmetic may exceed it by a few ulps. */
#define SIM_FLOOR_SLACK 1e-9

/* A floor on sim_plan_estimate's time over every config that agrees with
 * part on its nonzero bounds (0: a dim not chosen yet) and fits VMEM, and
 * whether any such config may fit: what a search that prunes compares with
 * its best so far (sim/model.c says why it is a floor). A tiled plan
 * only. */
struct sim_plan_floors {
	double time_ns;
	bool fits; /* false: every such config overflows VMEM */
};
void sim_plan_floor(const struct sim_plan *p, const struct hw_spec *hw,
		    const struct sim_tile_config *part,
		    struct sim_plan_floors *out);

/* Whether a whole config may fit VMEM: false when its VMEM floor (the
 * one sim_plan_floor counts) exceeds VMEM by more than SIM_FLOOR_SLACK,
 * and then sim_plan_estimate calls it infeasible. A fraction of the
 * estimate's cost. A tiled plan only. */
bool sim_plan_fits(const struct sim_plan *p, const struct hw_spec *hw,
		   const struct sim_tile_config *cfg);

/* A floor on sim_plan_estimate's time like sim_plan_floor's (a partial
 * or whole config), from the steps and MXU work alone: looser, a fraction
 * of its cost; 0 without a kernel. */
double sim_plan_mxu_floor(const struct sim_plan *p, const struct hw_spec *hw,
			  const struct sim_tile_config *part);

/* The candidates per dim the default searches (sim_plan_enumerate's
 * per_dim: 0, all, unless their product passes 150,000). */
int sim_plan_default_per_dim(const struct sim_plan *p);

/* Whether config a (estimate ea) ranks before b (eb): feasible first, then
 * less time (a NaN time last), fewer steps, smaller bounds (lexicographic). The one order
 * of the default and of tile search. */
bool sim_config_better(const struct sim_estimate *ea,
		       const struct sim_tile_config *a,
		       const struct sim_estimate *eb,
		       const struct sim_tile_config *b);

/*
 * Enumerates candidate configs of a tunable plan: per grid dim every bound
 * when the dim has at most 16 tiles, else 1, 2, 4, ..., the divisors and
 * the dim itself (at most `per_dim` values, evenly spread, 0 = no cap); an
 * output dim shared with a coarser-tiled kernel dim counts in whole kernel
 * tiles; kernel shared dims are tied to the output's.
 * Calls fn for each (stops when it returns false). Returns the number of
 * configs visited; with fn NULL, visits nothing and returns the size of
 * the candidate product (an upper bound, saturating at INT64_MAX).
 */
int64_t sim_plan_enumerate(const struct sim_plan *p, int per_dim,
			   bool (*fn)(const struct sim_tile_config *cfg,
				      void *ctx),
			   void *ctx);

/* What lets sim_plan_search skip subtrees: floor gives a lower bound on
 * the time of every config under a partial config (the bounds of the dims
 * not yet chosen read 0), INFINITY when none fits VMEM; quick (or NULL)
 * a looser one that costs less, for whole configs too; cut says whether a
 * subtree with floor lb can hold nothing the search still wants; fits (or
 * NULL) whether a whole config may fit VMEM (false: the search does not
 * want it). */
struct sim_search_floors {
	double (*quick)(const struct sim_tile_config *part, void *ctx);
	double (*floor)(const struct sim_tile_config *part, void *ctx);
	bool (*cut)(double lb, void *ctx);
	bool (*fits)(const struct sim_tile_config *cfg, void *ctx);
};

/* sim_plan_enumerate that may skip subtrees: the free dims are chosen
 * depth first, the output's grid dims then the kernel's own (its order:
 * an odometer whose last dim turns fastest), or with floors the kernel's
 * own first, then the output's, each with the dims of more tiles first
 * (each dim's candidates largest first when descending; a dim with one
 * candidate is set before the walk, and "last" below is the last with
 * more); with floors (fl), the choices of a dim that each hold a few
 * configs or more (PRUNE_MIN_BELOW, sim/tile.c) are entered in the order
 * of their quick floors (else their floors), and a choice whose quick
 * floor or floor is cut is skipped with every config under it, as is a
 * config whose quick floor is cut. Descending, the last dim's choices
 * (largest first) are asked fits until one past the first fits (below the
 * whole dim, a VMEM floor only shrinks with the bound), and one that does
 * not fit is skipped. Calls leaf for each config reached (stops when it
 * returns false); returns how many. fl NULL and ascending: every config
 * in sim_plan_enumerate's order. */
int64_t sim_plan_search(const struct sim_plan *p, int per_dim, bool descending,
			bool (*leaf)(const struct sim_tile_config *cfg, void *ctx),
			const struct sim_search_floors *fl, void *ctx);

/* Steps of a checked config: prod ceil(grid / bound) over the combined
 * grid (shared dims once). */
int64_t sim_plan_steps(const struct sim_plan *p,
		       const struct sim_tile_config *full);

#endif /* SIM_MODEL_H */
