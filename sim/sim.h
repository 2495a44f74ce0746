/*
 * sim.h: from an ir_module to a list of kernels and their estimated times.
 *
 *   sim_program_build()    walks the entry computation in schedule order and
 *                          lists what runs on the TensorCore (one kernel per
 *                          fusion, convolution, dot, copy, reduce, ...), with
 *                          loop trip counts as multiplicities;
 *   sim_kernel_estimate()  costs one kernel under one tile config on one
 *                          hw_spec (the analytic model, sim/model.c);
 *   sim_program_estimate() costs every kernel and sums the program.
 *
 * Plan and estimate are separate (ggml's graph_plan / graph_compute): the
 * tile config is an input of the estimate, chosen by the caller or by the
 * kernel's default.
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hw_spec.h"
#include "hw_units.h"
#include "ir.h"

#define SIM_MAX_GRID 8 /* rank of a tile grid (physical dims of a tensor) */

/* A tile config: block sizes per tile-grid dimension, TpuGraphs style.
 * n_out == 0 means "use the kernel's default". */
struct sim_tile_config {
	int n_out;                        /* entries in out_bounds */
	int64_t out_bounds[SIM_MAX_GRID]; /* blocks over the output grid, in tiles */
	int n_kernel;                     /* entries in kernel_bounds (0: none) */
	int64_t kernel_bounds[SIM_MAX_GRID]; /* blocks over the kernel operand grid */
};

/* Parses "output_bounds=12x4x4x3;kernel_bounds=3x1x24x3" (either part may be
 * absent; empty text is the default config). Errors name the column. */
enum ts_status sim_tile_config_parse(const char *text,
				     struct sim_tile_config *cfg,
				     struct ts_diag *d);
/* Room for the longest text form: both parts, SIM_MAX_GRID 20-digit
 * bounds each. */
#define SIM_TILE_CONFIG_TEXT_MAX (32 + 2 * SIM_MAX_GRID * 21)
/* Writes the config back in the same text form. */
size_t sim_tile_config_format(const struct sim_tile_config *cfg, char *buf,
			      size_t cap);

enum sim_kernel_kind {
	SIM_KERNEL_FUSION = 0,   /* fusion instruction */
	SIM_KERNEL_CONVOLUTION,  /* unfused convolution */
	SIM_KERNEL_DOT,          /* unfused dot */
	SIM_KERNEL_COPY,         /* copy / transpose / layout change */
	SIM_KERNEL_REDUCE,       /* unfused reduce / reduce-window */
	SIM_KERNEL_ELEMENTWISE,  /* unfused elementwise op */
	SIM_KERNEL_DATA,         /* other data movement (slice, pad, gather, ...) */
	SIM_KERNEL_COLLECTIVE,   /* all-reduce, all-gather, ... (ICI) */
	SIM_KERNEL_UNMODELLED,   /* custom-call (other than the library calls
	                            costed as dots/convolutions), infeed, ...:
	                            listed, zero time */
	SIM_KERNEL_KIND_COUNT
};
const char *sim_kernel_kind_name(enum sim_kernel_kind k);

/* The analytic result for one kernel under one config. */
struct sim_estimate {
	bool feasible;          /* false: working set exceeds VMEM */
	bool modelled;          /* false: unmodelled op, time is 0 */
	bool untiled;           /* no tile grid for this form (a rank above
	                           8, ...): costed by the roofline instead,
	                           sim_kernel_estimate says why */
	int relaid;             /* inputs relaid out by a copy first, as
	                           they stream with fewer bytes so
	                           (sim_plan_choose); 0: none */
	double time_ns;         /* estimated kernel time */
	enum hw_unit bound;     /* unit the time is attributed to */
	int64_t steps;          /* tile steps (grid iterations) */
	int cores;              /* TensorCores the work is split over (megacore:
	                           the output blocks dealt out); 1 otherwise */
	double mxu_cycles;      /* total MXU busy cycles, all cores */
	double vpu_cycles;      /* total VPU busy cycles, all cores */
	double dma_cycles;      /* total HBM DMA cycles (at the core clock) */
	double overhead_ns;     /* fixed per-kernel plus per-step costs */
	double vmem_bytes;      /* double-buffered working set of one step */
	double flops;           /* arithmetic work (2 per MAC), whole kernel */
	double mxu_util;        /* fraction of the MXU peak over time_ns
	                           (hw_mxu_utilisation); 0 without MXU work */
	double bytes_read;      /* HBM bytes read, padded to layout tiles */
	double bytes_written;   /* HBM bytes written, padded */
	struct sim_tile_config config; /* the config costed (default filled in) */
};

/*
 * Whole-kernel work, counted from the IR (sim/cost.c), independent of tiles
 * and hardware: what a roofline needs and what reports show.
 */
struct sim_work {
	double flops;            /* 2 per multiply-accumulate on the MXU, plus
	                            1 per elementwise/reduction op (HloCostAnalysis) */
	double mxu_macs;         /* multiply-accumulates of dots/convolutions */
	double mxu_int8_macs;    /* of them, int8 x int8 ones (sim_int8_contraction:
	                            at hw mxu.int8_rate times the bf16 rate) */
	double vpu_elem_ops[HW_VPU_CLASS_COUNT]; /* elementwise ops per VPU cost
	                            class, counted on padded elements */
	double transcendentals;  /* elements of transcendental ops */
	double bytes_read;       /* HBM bytes read, padded to layout tiles */
	double bytes_written;    /* HBM bytes written, padded to layout tiles */
	double constant_bytes;   /* of bytes_read, literal constants the
	                            kernel reads (cost.c constant_bytes) */
	double ici_bytes;        /* a collective's payload: the buffer each
	                            device holds in full (its operands; an
	                            all-gather's gathered result), padded, in
	                            whatever memory space it lives (VMEM
	                            buffers cross ICI too); 0 otherwise */
};

struct sim_member_memo;

struct sim_kernel {
	const struct ir_instr *instr;  /* the top-level instruction */
	const char *name;              /* instr->name */
	enum sim_kernel_kind kind;
	enum ir_op main_op;            /* dominant op: convolution, reduce, copy, ... */
	const struct ir_instr *tiled;  /* instruction whose iteration space the
	                                  output bounds tile (TPU.md section 3) */
	double multiplicity;           /* runs per program: product of enclosing
	                                  loop trip counts (a while condition
	                                  runs trip + 1 times), times 1/n for
	                                  each enclosing n-branch conditional */
	int loop_depth;                /* enclosing while loops */
	bool as_written;               /* in a loop's condition, which XLA
	                                  and `fuse` leave as written (no
	                                  value of it placed in VMEM) */
	bool tunable;                  /* has a tile grid worth searching */
	/* What the kernel computes and reads. For a fusion: members are the
	 * fused computation's instructions in order (parameters included),
	 * inputs[i] is the fusion's operand i (= parameter i). For an unfused
	 * op: members = {instr}, inputs = its operands. For a group formed from
	 * a pre-optimization module (sim/kernels.c), members are the grouped
	 * entry instructions and inputs the values they read from outside. */
	int n_members;
	const struct ir_instr **members; /* ts_malloc'd, owned by the program */
	int n_inputs;
	const struct ir_instr **inputs;  /* ts_malloc'd, owned by the program */
	/* Values the kernel writes to HBM: {instr} for a fusion or an unfused
	 * op (a tuple-shaped fusion writes every leaf); for a group, the
	 * members whose value is used outside the group (multi-output). */
	int n_outputs;
	const struct ir_instr **outputs; /* ts_malloc'd, owned by the program */
	int64_t group_devices;         /* a collective's devices: its replica
	                                  group's size, else every device of
	                                  the module (replica_count x
	                                  num_partitions); 1 for other kernels */
	const struct ir_groups *groups; /* a collective's device groups (its
	                                  replica_groups or source_target_pairs;
	                                  NULL: one group of group_devices, or
	                                  not known); NULL for other kernels */
	bool async_work;               /* the async work of a pair (sim_async):
	                                  it runs beside the TensorCore */
	bool starts_program;           /* the program's first kernel on the
	                                  TensorCore: its time holds the
	                                  program's start (sim_program_start_ns) */
	bool chained;                  /* a fusion between the start and done
	                                  of a collective chain (XLA's async
	                                  collective fusion): its clone of the
	                                  collective moves nothing more */
	bool trip_count_assumed;       /* some enclosing while had neither a
	                                  known_trip_count nor one derivable
	                                  from its condition: multiplicity uses
	                                  opts->default_trip_count (or 1) */
	/* A library call costed as what it computes (a cuBLAS gemm as a dot,
	 * a cuDNN convolution as a convolution): the stand-in instruction
	 * that instr, members, inputs and outputs then point to (ts_malloc'd,
	 * owned by the program; sim/kernels.c "Library calls"; name stays
	 * the call's), the copy or slice of an async DMA (dma below), or the
	 * copy of a relayout (relayout below; named "<value>.relayout"); NULL
	 * otherwise. */
	struct ir_instr *lowered;
	bool relayout;                 /* lowered is the copy XLA's layout
	                                  assignment puts after a result
	                                  computed in another order
	                                  (sim/kernels.c "Relayouts") */
	bool dma;                      /* an async transfer the DMA engines
	                                  run (copy-start, slice-start, ...:
	                                  lowered is the copy or slice it
	                                  makes): costed as the bytes it moves
	                                  at HBM bandwidth, no grid */
	bool prefetch;                 /* the copy of one of the program's
	                                  prefetches (sim_program.prefetches;
	                                  kernels.c): inputs[0] its parameter */
	bool evict;                    /* the copy of an eviction: its value
	                                  (inputs[0]) written into VMEM and
	                                  copied to HBM for its later readers
	                                  (kernels.c, sim/placement.c) */
	bool idle;                     /* a prefetch or eviction placement
	                                  did not place
	                                  (sim_program_place: no room on the
	                                  spec, or no gain): it moves
	                                  nothing, its readers read HBM */
	struct sim_member_memo *memo;  /* the fusion search's memo of the
	                                  members' computation (sim/memo.c),
	                                  borrowed: such a kernel is costed
	                                  only while the space it came from
	                                  (sim_fusion_space_kernel) lives;
	                                  NULL otherwise */
	int n_vmem;                    /* values of its inputs and outputs
	                                  memory-space assignment keeps in
	                                  VMEM (sim_program_place): they move
	                                  no HBM bytes; ts_malloc'd */
	const struct ir_instr **vmem;
	struct sim_work work;          /* counted by sim_program_build(),
	                                  again by sim_program_place() */
	struct sim_estimate est;       /* filled by sim_program_estimate() */
};

/* How the trip count of a while loop was found: its known_trip_count,
 * derived from its induction variable (sim_while_trip_count), or assumed
 * (--trip-count, else 1). */
enum sim_trip_source { SIM_TRIP_KNOWN, SIM_TRIP_DERIVED, SIM_TRIP_ASSUMED };
const char *sim_trip_source_name(enum sim_trip_source s); /* "derived" */

/* One while loop of a program and the count its multiplicities use. */
struct sim_loop {
	const struct ir_instr *instr;
	int64_t trip_count;
	enum sim_trip_source source;
};

/* Trip count of a while loop from its induction variable, the pattern of
 * XLA's while-loop analysis (sim/loops.c); false when it does not match. */
bool sim_while_trip_count(const struct ir_instr *w, int64_t *trip);

/* An asynchronous pair: a start (copy-start, all-reduce-start, ...,
 * async-start), its done in the same computation, and the kernels the
 * schedule puts between them, whose work overlaps the transfer. */
struct sim_async {
	const struct ir_instr *start, *done;
	int first, n;                  /* kernels[first .. first + n): the
	                                  async work (the start's kernels) */
	int between, n_between;        /* kernels[between .. + n_between):
	                                  the work between start and done */
	double async_ns;               /* async work, time x multiplicity */
	double hidden_ns;              /* of it, hidden behind the work
	                                  between (sim_program_total): its
	                                  time less the wait at its done,
	                                  negative where that wait was longer
	                                  (queued behind earlier transfers) */
	double queued_ns;              /* how long its transfer waited
	                                  behind earlier ones on its link */
	double end_ns;                 /* when its transfer ends on the
	                                  program's timeline; < 0 once its
	                                  done is past (program.c) */
};

struct sim_fusion_plan;

/* A grouped computation's order with asynchronous collectives placed as
 * XLA's latency-hiding scheduler places them (sim/schedule.c): per
 * instruction, the place in it of its node (an async collective's
 * start), -1 for none, and of an async collective's done, -1 for any
 * other. */
struct sim_schedule {
	const struct ir_computation *c;
	int *rank, *done;
};

struct sim_program_opts {
	int64_t default_trip_count;    /* trip count for loops with neither a
	                                  known nor a derivable one
	                                  (--trip-count); <= 0: 1 */
	const struct sim_fusion_plan *fusion; /* an unfused module's fusion
	                                  decisions (hyb_fusion_plan_build);
	                                  NULL: the xla policy */
	double vmem_room;              /* bytes of VMEM memory-space
	                                  assignment has on the spec the
	                                  program is for (sim_vmem_room);
	                                  0: none (no cross-program
	                                  prefetch, sim_prefetch_candidate) */
	const struct hw_spec *schedule_hw; /* the spec whose XLA runs large
	                                  all-reduces asynchronously
	                                  (xla.async_all_reduce_bytes): an
	                                  unfused module's are scheduled as
	                                  on it (sim/schedule.c, by its
	                                  kernels' rooflines); NULL: none */
};

struct sim_program {
	const struct ir_module *module;
	int n_kernels;
	struct sim_kernel *kernels;    /* schedule order (ts_malloc'd) */
	double total_ns;               /* program time: sum of time x
	                                  multiplicity less the async time
	                                  hidden behind other work
	                                  (sim_program_total) */
	int n_unmodelled;              /* kernels listed with zero time */
	int n_assumed_trip_counts;     /* loops[] entries with source ASSUMED */
	int n_loops;
	struct sim_loop *loops;        /* each while instruction reached, in
	                                  walk order (ts_malloc'd) */
	int n_async;
	struct sim_async *async;       /* async pairs in schedule order, each
	                                  with its done (ts_malloc'd) */
	bool fused_xla;                /* an unfused module: its kernels are
	                                  the groups XLA's fusion would make
	                                  (grouping.c, the `xla` policy;
	                                  tpusim fuse writes them out), or
	                                  a policy's (below) */
	const char *fusion_policy;     /* an unfused module's: "xla",
	                                  "analytic", "hybrid"; NULL else */
	int fusion_flips;              /* its decisions that differ from the
	                                  xla policy's */
	int n_placed;                  /* values memory-space assignment keeps
	                                  in VMEM (sim_program_place) */
	double placed_bytes;           /* their bytes, summed */
	bool placed;                   /* placed, for placed_key
	                                  (sim_placement_key) */
	uint64_t placed_key;
	const struct ir_instr *prefetched; /* an unfused module's entry
	                                  parameter XLA prefetches into VMEM
	                                  across programs (its copy is a
	                                  kernel and an async pair of its
	                                  own; sim_prefetch_candidate), or
	                                  NULL */
	int n_prefetches;
	const struct ir_instr **prefetches; /* the values whose copy into
	                                  VMEM is a kernel and an async
	                                  pair (sim_prefetches):
	                                  prefetched first, when there is
	                                  one (ts_malloc'd, or NULL) */
	int n_schedules;
	struct sim_schedule *schedules; /* the grouped computations whose
	                                  all-reduces run asynchronously
	                                  (sim_program_opts.schedule_hw) */
};

/* The VMEM memory-space assignment may fill on hw, bytes: vmem.bytes -
 * vmem.scoped_bytes, at least 0 (sim/placement.c). */
double sim_vmem_room(const struct hw_spec *hw);

/* The entry parameter of unfused module m that XLA's memory-space
 * assignment prefetches into VMEM across programs when room bytes are
 * free, or NULL (sim/placement.c: the largest that is used only as
 * weights). */
const struct ir_instr *sim_prefetch_candidate(const struct ir_module *m,
					      double room);

/* The values of unfused module m that no kernel writes and memory-space
 * assignment may copy into VMEM when room (> 0) bytes are free: cross
 * (the cross-program prefetch, or NULL) first, then the entry's
 * parameters in their order and the elements of its loops' and calls'
 * results in the text's, then the same of each loop body (its state's
 * elements, its parameter itself where the state is an array), those
 * every live use of which is a kernel's (or, for a state element, the
 * body's result passing it on unchanged in its place)
 * (sim/placement.c; room decides at placement, so that a whatif point
 * with more room may place a larger one). Their count and the list in
 * *out (ts_malloc'd; NULL when room is none), or -1 when memory runs
 * out. */
int sim_prefetches(const struct ir_module *m, double room,
		   const struct ir_instr *cross, const struct ir_instr ***out);

/* Memory-space assignment for hw (sim/placement.c): which values
 * between an unfused module's kernels live in VMEM, as XLA places them
 * after fusion where the chip has room beyond a kernel's scoped VMEM;
 * each kernel's work is counted again with them (k->vmem). Undoes the
 * placement of an earlier call first; places nothing in a compiled
 * module (its layouts say where XLA put each buffer).
 * sim_program_estimate calls it; a caller that estimates kernels one by
 * one calls it first. */
enum ts_status sim_program_place(struct sim_program *p, const struct hw_spec *hw,
				 struct ts_diag *d);

/* What sim_program_place's decision on hw depends on besides the
 * program, hashed (FNV-1a): the room (sim_vmem_room for an unfused
 * program, 0 for a compiled one) and the spec figures its order's
 * rooflines read (the MXU's peak and int8 rate, the VPU's width and
 * costs, the HBM bandwidth, the clock, the cores). Equal keys, the same
 * placement. */
uint64_t sim_placement_key(const struct hw_spec *hw, double room);
/* Whether memory-space assignment keeps value v of kernel k in VMEM. */
bool sim_kernel_in_vmem(const struct sim_kernel *k, const struct ir_instr *v);

/* An unfused (pre-optimization) module: one without any fusion
 * instruction but XLA's kCustom ones (gather, scatter and
 * all-reduce-scatter, which XLA forms before it fuses: one device's
 * module after SPMD partitioning has them; each stays a kernel as it is)
 * and not marked is_scheduled=true (XLA schedules the module it has
 * optimized; tpusim fuse marks its output so). Its kernels are decided
 * by a fusion policy; a compiled module's are its top-level ops as
 * written. */
bool sim_module_unfused(const struct ir_module *m);

/* What sim_module_rewrite did to a module. */
struct sim_rewrites {
	int windows;  /* row-max broadcasts made reduce-windows */
	int combined; /* all-reduces combined into others (k in one: k) */
	int copies;   /* outputs copied into the parameter buffer they alias */
	double copied_bytes; /* their bytes in TPU memory */
	int unfollowed; /* aliases of a nested array, not followed */
	int peer_copies; /* outputs other devices write (an all-gather's,
	                    ...), copied out of the buffer they write */
	double peer_copied_bytes; /* their bytes in TPU memory */
	int async_all_gathers; /* all-gathers marked IR_INSTR_ASYNC (run
	                          beside the TensorCore's work) */
};

/* What XLA's TPU compiler for hw does to an unfused module, where that
 * changes the kernels (sim/rewrite.c: a row max broadcast back becomes a
 * reduce-window where hw's xla.row_max_window says so; independent
 * all-reduces of one kind are combined up to xla.all_reduce_combine_bytes;
 * an output made in a buffer of its own is copied into the donated or
 * aliased parameter buffer it lives in, and one other devices write is
 * copied out of their buffer; all-gathers beside independent dots or
 * convolutions are marked async where hw's xla.async_all_gather says
 * so), done to m in place; *done: what
 * it did. A compiled module, or a spec
 * that rewrites nothing, is left as it is. Call it once, before a
 * fusion plan or a program is built from m. */
enum ts_status sim_module_rewrite(struct ir_module *m, const struct hw_spec *hw,
				  struct sim_rewrites *done, struct ts_diag *d);
/* The entry's outputs that live in a parameter's buffer: m's
 * buffer_donor entries paired with outputs as XLA pairs them
 * (sim/rewrite.c: OptimizeInputOutputBufferAlias), then its
 * input_output_alias entries, into *pairs (*n_pairs of them, allocated
 * from a). */
enum ts_status sim_module_aliases(const struct ir_module *m,
				  struct ts_arena *a, struct ir_alias **pairs,
				  int *n_pairs);
/* The most bytes sim_module_rewrite combines all-reduces into on hw:
 * xla.all_reduce_combine_bytes, below xla.async_all_reduce_bytes where
 * that is set (what runs on the SparseCores XLA does not combine); 0:
 * none. */
double sim_all_reduce_combine_limit(const struct hw_spec *hw);
/* How many of m's all-gathers XLA runs asynchronously on a spec with
 * xla.async_all_gather (sim/rewrite.c's rule), marked or not; -1 when
 * out of memory. */
int sim_async_all_gathers(const struct ir_module *m);
/* The broadcasts of row maxes that sim_module_rewrite makes windows of
 * under a spec with xla.row_max_window (0 in a compiled module); -1 when
 * out of memory. */
int sim_row_max_windows(const struct ir_module *m);

/* How dear one element of op is on the vector unit (the VPU column of
 * hlo/ir_ops.def; sim/classify.c). */
enum hw_vpu_class sim_op_vpu_class(enum ir_op op);

enum ts_status sim_program_build(const struct ir_module *m,
				 const struct sim_program_opts *opts,
				 struct sim_program *p, struct ts_diag *d);
void sim_program_free(struct sim_program *p);

/* Counts a kernel's work from the IR (sim/cost.c): MXU MACs, VPU element
 * ops per class on padded elements, HBM bytes under XLA's fusion rules
 * (docs/HLO.md 3.1). parent_cd: the constant-derived marks
 * (sim_const_derived) of a grouped kernel's computation when the caller
 * has them, else NULL (worked out here: linear in the computation's size,
 * so a program of many grouped kernels passes them). `file` names the
 * module in diagnostics. Fails with TS_ERR_PARSE on a dot/convolution
 * whose attributes do not fit its shapes. */
enum ts_status sim_kernel_work(const struct sim_kernel *k, const bool *parent_cd,
			       const char *file, struct sim_work *w,
			       struct ts_diag *d);
/* Multiply-accumulates of one dot or convolution (HloCostAnalysis: dot =
 * out elems x contracted size; convolution = valid positions rule incl.
 * feature/batch groups, padding and dilations); 0 for any other op. */
enum ts_status sim_instr_macs(const struct ir_instr *in, const char *file,
			      double *macs, struct ts_diag *d);
/* Does contraction c multiply two 8-bit integer operands (s8 or u8: AQT's
 * int8 matmuls), which the MXU runs at mxu.int8_rate times the bf16 rate? */
bool sim_int8_contraction(const struct ir_instr *c);
/* A contraction's MACs per bf16 MAC slot: mxu.int8_rate for an int8 x
 * int8 one (sim_int8_contraction), else 1. */
double sim_mxu_rate(bool int8, const struct hw_spec *hw);
/* w's MXU MACs in bf16 MAC slots: mxu_macs with the int8 ones at
 * 1 / hw->mxu_int8_rate each. */
double sim_work_bf16_macs(const struct sim_work *w, const struct hw_spec *hw);
/* Is reduce-window `in` a reduce followed by a broadcast back: along
 * every dim its window is wider than 1, the window covers the whole input
 * dim from every output position (XLA's row max / row sum of attention:
 * window 2D-1, padding D-1 on both sides, stride 1, no dilation), and
 * along every other dim it takes each element once (window 1, stride 1,
 * no padding or dilation)? Then whole[d] marks the reduced dims (room for
 * the rank). cost.c says how such a window is counted. */
bool sim_window_whole_dims(const struct ir_instr *in, bool *whole);

/* Costs one kernel; cfg may be NULL (default config). A kernel the model
 * cannot grid (TS_ERR_UNSUPPORTED_OP from the plan: a rank above 8, ...)
 * is costed by sim_kernel_roofline instead and marked untiled; d then
 * holds the reason and the call returns TS_OK. */
enum ts_status sim_kernel_estimate(const struct sim_kernel *k,
				   const struct hw_spec *hw,
				   const struct sim_tile_config *cfg,
				   struct sim_estimate *out, struct ts_diag *d);

/* The start of a program, ns, which the time of the kernel that starts it
 * holds (k->starts_program: sim_program_build marks it); 0 for any other
 * kernel (sim/config.c says where it comes from). */
double sim_program_start_ns(const struct sim_kernel *k,
			    const struct hw_spec *hw);

/* Whether XLA would run nothing for kernel k (sim/plan.c): every member
 * a bitcast, a parameter, a tuple or a constant, or a reshape, transpose
 * or copy that leaves the bytes in place (after dropping unit dims, the
 * same physical dims, tiles and width; a copy only in a module before
 * layout assignment: one written with TPU tiles runs), or every result
 * empty. A fact of the HLO that the model and the roofline both read. */
bool sim_kernel_free(const struct sim_kernel *k);

/* The roofline (sim/roofline.c): a floor on the kernel's time from the
 * HLO's meaning alone, never from the model's plan: max(MXU MACs at bf16
 * peak, VPU element ops at one issue slot each, HBM bytes each moved once)
 * plus the launch; an async DMA at HBM bandwidth with no launch; ICI time
 * for collectives; 0 for a kernel XLA runs nothing for (sim_kernel_free);
 * 0 and modelled=false for unmodelled kernels. Fills time_ns, bound,
 * flops, bytes (and the unit cycles). */
enum ts_status sim_kernel_roofline(const struct sim_kernel *k,
				   const struct hw_spec *hw,
				   struct sim_estimate *out, struct ts_diag *d);

/* Writes the step-by-step derivation of one kernel's estimate (what
 * --explain prints) to out. The caller (cli/) owns the stream. */
enum ts_status sim_kernel_explain(const struct sim_kernel *k,
				  const struct hw_spec *hw,
				  const struct sim_tile_config *cfg, FILE *out,
				  struct ts_diag *d);

/* The plausibility envelope: a kernel costed above SIM_ENVELOPE_X times
 * its roofline (sim_kernel_roofline) plus SIM_ENVELOPE_NS, or at a config
 * that does not fit VMEM, is outside it: a real mechanism or a model
 * corner, which `run` names (sim_kernel_why) and the fusion policies do
 * not decide on. */
#define SIM_ENVELOPE_X 10.0
#define SIM_ENVELOPE_NS 5000.0
/* Is estimate e of kernel k inside the envelope on hw? (An unmodelled or
 * untiled kernel, or one without a roofline, is.) */
bool sim_kernel_plausible(const struct sim_kernel *k,
			  const struct sim_estimate *e,
			  const struct hw_spec *hw);

/* The term that dominates k's estimate under its config (k->est.config),
 * in words (sim/explain.c), for a warning when a kernel is far above its
 * roofline. */
enum ts_status sim_kernel_why(const struct sim_kernel *k,
			      const struct hw_spec *hw, char *buf, size_t n,
			      struct ts_diag *d);

/* The collective a collective kernel runs (hw_ici_collective), the bytes
 * each device holds in full (the gathered output for all-gather, the input
 * otherwise: sim_work.ici_bytes, every memory space), of them the bytes
 * in HBM (as cost.c counts HBM bytes: VMEM leaves none), its group's
 * devices and the element width (bits) of its result: one reading for the
 * analytic model and the roofline (sim/plan.c). */
void sim_collective_of(const struct sim_kernel *k, enum hw_collective *c,
		       double *bytes, double *hbm_bytes, int64_t *devices,
		       int *bits);

/* The bytes of an async DMA kernel's transfer (sim_kernel.dma) that cross
 * PCIe: the transferred value when either end is host memory (S(5), host
 * offload), else 0 (cost.c). */
double sim_dma_host_bytes(const struct sim_kernel *k);

/*
 * The ICI and DCN cost of collective kernel k on hw (sim/slice.c), one
 * reading for the model, the roofline and --explain: on hw->slice each of
 * its groups placed on the slice and costed axis by axis (hw_ici_torus),
 * the slowest group's cost, *group its index; without a slice, or when
 * its device lists are not known or not on the slice, the ring of
 * hw_ici_collective over its devices, *group = -1. group may be NULL.
 */
void sim_collective_ici(const struct sim_kernel *k, const struct hw_spec *hw,
			struct hw_ici_cost *out, int64_t *group);

/* Whether program p fits hw->slice (none: TS_OK): the module's devices
 * (replica_count x num_partitions) are the slice's (one slice's for a
 * per-slice program), every device its collectives' groups name is one of
 * them, and every megascale exchange spans the slice count. TS_ERR_SPEC
 * otherwise, d located at the module's header or the collective. */
/* Whether p's module runs on one slice of hw's several (its devices are
 * one slice's): a multi-slice program XLA compiled per slice (JAX's
 * MegaScale). Its exchange between the slices (over DCN) is the megascale
 * runtime's: sends and recvs whose frontend attributes name the
 * collective and its slices, each send costed as that collective over
 * DCN, async up to its recv-done (sim_program_exchanges: p holds one);
 * a program with none is costed without the exchange. */
bool sim_program_exchanges(const struct sim_program *p);
bool sim_program_per_slice(const struct sim_program *p,
			   const struct hw_spec *hw);
enum ts_status sim_program_check_slice(const struct sim_program *p,
				       const struct hw_spec *hw,
				       struct ts_diag *d);

/* Time x multiplicity of kernel i of p less its share of the async time
 * hidden behind other work (sim_program_total must have run): what it
 * adds to the program total. */
double sim_kernel_exposed_ns(const struct sim_program *p, int i);

/* Costs every kernel with its default config and fills total_ns
 * (= sim_program_total). */
enum ts_status sim_program_estimate(struct sim_program *p,
				    const struct hw_spec *hw, struct ts_diag *d);

/* The program time of module m fused by plan (NULL: the xla policy; an
 * unfused module's kernels as sim_program_build groups them) on hw, with
 * its memory-space assignment for hw alone: built, estimated and freed
 * (sim/program.c). *ns is NaN on an error. */
enum ts_status sim_module_time(const struct ir_module *m,
			       const struct sim_fusion_plan *plan,
			       const struct hw_spec *hw, double *ns,
			       struct ts_diag *d);

/* The copies memory-space assignment left idle (sim_program_place: 0
 * ns, moving nothing): p's kernels that do not run. */
int sim_program_idle_copies(const struct sim_program *p);

/* Whether XLA, on a spec with xla.async_all_reduce_bytes = min_bytes,
 * runs collective `in` asynchronously: an all-reduce of at least
 * min_bytes (> 0), or an all-gather sim_module_rewrite marked
 * (IR_INSTR_ASYNC: xla.async_all_gather); and how many of module m's of
 * op `op` (IR_OP_INVALID: of either) it runs so (sim/schedule.c). */
bool sim_async_collective(const struct ir_instr *in, double min_bytes);
int sim_async_collectives(const struct ir_module *m, double min_bytes,
			  enum ir_op op);

/* The program time from the kernels' current estimates: the sum of time
 * x multiplicity less the async time hidden behind other work; fills
 * every async pair's async_ns and hidden_ns (sim/program.c). */
double sim_program_total(struct sim_program *p);

/* The async time hidden behind other work, as sim_program_total counts
 * it, from each kernel's time x multiplicity ns[i] (n_kernels entries):
 * for times other than the kernels' estimates (validate's per-row
 * configs, the hybrid's, the rooflines). scratch: n_async pairs whose
 * times it fills in place of p's. */
double sim_program_hidden_ns(const struct sim_program *p, const double *ns,
			     struct sim_async *scratch);

/* Host-side time of one call of the program beyond its device time (what
 * a host-timed measurement adds): the spec's host.* figures applied to the
 * program's kernel count and device count (sim/program.c). */
double sim_program_host_ns(const struct sim_program *p,
			   const struct hw_spec *hw);

/* ---- fusion decisions (sim/fusion_space.c) ---- */

/*
 * The xla policy's rules (sim/grouping.c) decide an unfused module's
 * fusion; the policies that decide by predicted time (hybrid/hyb_fusion.c)
 * overturn some of those decisions, instruction by instruction, and hand
 * the result to the model as a struct sim_fusion_plan. They search the
 * space below: a computation grouped under a set of decisions.
 */

/* A policy's decision on one instruction of an unfused computation. */
enum sim_fuse_force {
	SIM_FUSE_DEFAULT = 0, /* as the xla policy's rules decide */
	SIM_FUSE_OWN,         /* a kernel of its own (not fused into users) */
	SIM_FUSE_RECOMPUTE,   /* computed inside every user kernel (where
	                         each accepts it) */
};

/* One decision that differs from the xla policy, in the order taken. */
struct sim_fusion_flip {
	const struct ir_instr *instr;
	enum sim_fuse_force force;  /* SIM_FUSE_OWN or SIM_FUSE_RECOMPUTE */
	double before_ns, after_ns; /* the computation's predicted time (sum
	                               of its kernels, one run) without and
	                               with this decision */
};

struct sim_fusion_plan {
	const char *policy;        /* "none", "xla", "analytic", "hybrid" */
	int n_comps;
	signed char **force;       /* per computation index: NULL (xla rules)
	                              or one enum sim_fuse_force per
	                              instruction (ts_malloc'd) */
	int n_flips;
	struct sim_fusion_flip *flips; /* ts_malloc'd */
	int n_dropped;             /* decisions the search kept and then
	                              dropped, with dropped_ns the program's
	                              time with them: it was slower than
	                              xla_ns after memory-space assignment
	                              (hyb_fusion.c keep_if_faster) */
	double dropped_ns, xla_ns;
	int n_trials;              /* decisions tried */
	int n_costed;              /* distinct candidate kernels costed */
	int n_floored;             /* decisions turned down by a floor
	                              alone (sim_fusion_space_split_floor) */
	long n_redecided;          /* decisions the trials made or asked
	                              again (sim_fusion_space_decided) */
	long n_worked;             /* members' figures (work, VPU cycles)
	                              the kernels costed worked out, not
	                              found in the memo
	                              (sim_fusion_space_worked) */
};
void sim_fusion_plan_free(struct sim_fusion_plan *plan);

/* Marks in grouped[] (by computation index, m->n_comps entries) the
 * computations whose fusion a policy decides: for an unfused module its
 * entry and the bodies of its control flow; none for a compiled one. */
void sim_fusion_space_comps(const struct ir_module *m, bool *grouped);

/* Computation c of m grouped into kernels under force (NULL: the xla
 * rules; else one enum sim_fuse_force per instruction of c). With like (a
 * space of c that outlives this one), what no decision changes is taken
 * from it, not worked out again: a search that tries many decisions on
 * one computation builds one space first and the others like it. Free it
 * with sim_fusion_space_free, also after an error (*out may be NULL then).
 * TS_ERR_NOMEM only. */
struct sim_fusion_space;
enum ts_status sim_fusion_space_build(const struct ir_module *m,
				      const struct ir_computation *c,
				      const signed char *force,
				      const struct sim_fusion_space *like,
				      struct sim_fusion_space **out);
void sim_fusion_space_free(struct sim_fusion_space *s);
/* The instructions whose fusion the rules decide (live, not
 * constant-derived, not the root; cheap, expensive and core ops), by
 * index in c, consumers first as XLA's InstructionFusion visits them; out
 * has room for c->n_instrs. Returns how many. */
int sim_fusion_space_candidates(const struct sim_fusion_space *s, int *out);
/* The other way candidate i can go here: SIM_FUSE_OWN when it is fused,
 * SIM_FUSE_RECOMPUTE when it is its own kernel and every user kernel
 * accepts it (never a reduce, dot or convolution), else SIM_FUSE_DEFAULT
 * (nothing to try). */
enum sim_fuse_force sim_fusion_space_alternative(const struct sim_fusion_space *s,
						 int i);
/* The kernels the grouping forms (0 .. n-1), each with a key: a 64-bit
 * FNV-1a hash of its members and outputs, never 0 (equal sets, equal
 * keys), and the kernel itself as sim_program_build would make it
 * (multiplicity 1; sim_kernel_release it); *none when it does no work. */
int sim_fusion_space_kernels(const struct sim_fusion_space *s);
uint64_t sim_fusion_space_key(const struct sim_fusion_space *s, int k);
enum ts_status sim_fusion_space_kernel(const struct sim_fusion_space *s, int k,
				       struct sim_kernel *out, bool *none,
				       struct ts_diag *d);
/* The kernels in which the space under force differs from base (a space
 * of the same computation whose decisions differ from force at
 * instruction at only), without grouping the rest again: into *trial (the
 * one space of every trial against base: NULL the first time, then as
 * left; sim_fusion_space_free it before base, and before a trial against
 * another base) a space of the kernels it has that base may not
 * (sim_fusion_space_kernels, _key and _kernel on it), and gone[0 ..
 * *n_gone) the keys of base's kernels they may replace (room for base's
 * kernels; a key in both is a kernel both have); every other kernel is
 * base's. *followed false when the difference reaches what this does not
 * follow (a group that a merge pass joins or may join with another:
 * sim_group_merges; a cycle): then build the space whole. TS_ERR_NOMEM
 * only. */
enum ts_status sim_fusion_space_delta(const struct sim_fusion_space *base,
				      const signed char *force, int at,
				      struct sim_fusion_space **trial,
				      uint64_t *gone, int *n_gone,
				      bool *followed);
/*
 * A floor on the kernels that replace the one holding instruction at when
 * at is made a kernel of its own (SIM_FUSE_OWN), without grouping again:
 * true, with that kernel's key (*key, of s's kernels) and, ns,
 *   *floor_ns = 2 x (kernel_overhead_ns + step_overhead_ns
 *                    + 2 x dma_latency_ns)
 *             + sum over the kernel's loop ops m of
 *               sim_instr_vpu_cycles(hw, m) / clock_hz / cores
 * cores: hw_spec_kernel_cores of the kernel's largest member
 * when that kernel is the only one the decision changes and at and its
 * root both stay kernels that run and store their value in HBM
 * (sim/fusion_space.c says when): it splits into at least those two, each
 * paying the launch, a grid step, its first load's and last store's
 * latency, and its loop ops are all still computed in them. The analytic
 * model never costs such kernels less (sim/model.c: time =
 * kernel_overhead_ns + max(first + pipeline + last, DMA); first and last
 * at least a latency each, the pipeline at least one step's overhead and
 * the VPU cycles of its members over the cores that split it); where a
 * piece has no grid (costed by its roofline, sim_kernel_estimate) that
 * may not hold. False: no such floor. s: a built space, asked on one hw.
 */
bool sim_fusion_space_split_floor(struct sim_fusion_space *s,
				  const struct hw_spec *hw, int at,
				  uint64_t *key, double *floor_ns);
/* The decisions the last trial into trial made or asked again (what it
 * cost the grouping: those that may differ, not the computation's). */
int sim_fusion_space_decided(const struct sim_fusion_space *trial);
/* The members' figures (work, VPU cycles) the kernels of s, and of every
 * space built like it or against it, were counted or planned with that
 * were worked out, not found in the memo they share (sim/memo.c: once per
 * instruction, and once per spec for the cycles, where a figure can be
 * kept; a figure found again costs a look-up, not counted here). */
long sim_fusion_space_worked(const struct sim_fusion_space *s);
/* Frees what a kernel from sim_fusion_space_kernel holds. */
void sim_kernel_release(struct sim_kernel *k);

/* ---- the fusion pass as HLO text (sim/fusion.c) ---- */

struct sim_fuse_stats {
	int fusions;      /* fusion instructions written */
	int multi_output; /* of those, with several outputs */
	int cycle_split;  /* kernels split out of groups that would be
	                     cyclic fusions (SIM_WHY_CYCLE) */
};

/*
 * Writes module m, parsed from text[0..len), as the fused module XLA's
 * fusion would make of it (the `xla` policy: the grouping `run` costs an
 * unfused module with; sim/fusion.c says how), or as plan decides (NULL:
 * the xla policy), as HLO text that tpusim
 * reads back to the same kernels. The values memory-space assignment
 * keeps in VMEM in placed (m's program under plan, sim_program_place;
 * NULL: none) are written in S(1). Fails with TS_ERR_UNSUPPORTED_OP (d
 * located) for forms it cannot re-emit, TS_ERR_NOMEM.
 */
enum ts_status sim_fuse_write(const struct ir_module *m, const char *text,
			      size_t len, const struct sim_fusion_plan *plan,
			      const struct sim_program *placed,
			      FILE *out, struct sim_fuse_stats *stats,
			      struct ts_diag *d);

/* Writes module m (parsed from text) with every fusion inlined into its
 * caller (sim/unfuse.c): the module before XLA fused it; an inlined
 * instruction X of fusion F is named X__in__F. *inlined counts the
 * fusions (nested ones are inlined too); a result that is a fusion's
 * own input becomes a ROOT bitcast of it. TS_ERR_UNSUPPORTED_OP (located)
 * for nested operands, TS_ERR_NOMEM. */
enum ts_status sim_unfuse_write(const struct ir_module *m, const char *text,
				size_t len, FILE *out, int *inlined,
				struct ts_diag *d);

/* How a policy's grouping (plan; NULL: the xla policy) of an unfused
 * module written by sim_unfuse_write agrees with the fusions its names
 * record. */
/* Why a producer was not fused into its users: the rule (of the xla
 * policy, or a policy's decision) that kept it a kernel of its own. */
enum sim_fuse_why {
	SIM_WHY_FUSED = 0,     /* fused (into some kernel) */
	SIM_WHY_ROOT_OP,       /* an op that is always its own kernel */
	SIM_WHY_COMP_ROOT,     /* the computation's result */
	SIM_WHY_MATERIALISE,   /* a user takes no fused operand (tuple,
	                          collective, custom call, while, ...) */
	SIM_WHY_NOT_ACCEPTED,  /* a user kernel does not accept it (a
	                          gather's table, a permuting copy, a
	                          broadcast's operand, ...) */
	SIM_WHY_CORE,          /* a reduce/dot/convolution: a dot fused only
	                          into one elementwise user, one core per
	                          kernel; a reduce never */
	SIM_WHY_REUSE,         /* an expensive op is not evaluated again
	                          through a pad */
	SIM_WHY_EXPENSIVE,     /* an expensive op with users in several
	                          kernels is not recomputed */
	SIM_WHY_EPILOGUE,      /* a dot's or convolution's epilogue stays
	                          with it: not recomputed in its users, not
	                          fused into another dot's operand */
	SIM_WHY_GATHER_TAIL,   /* the reshape that ends a gather's kernel
	                          (grouping.c gather_tail) */
	SIM_WHY_GATHER_RESHAPE, /* a reshape of that reshape's value, a
	                          kernel alone (gather_reshaped) */
	SIM_WHY_POLICY,        /* a policy's decision (SIM_FUSE_OWN) */
	SIM_WHY_ELSEWHERE,     /* fused, but into another kernel */
	SIM_WHY_CYCLE,         /* its group would be a cyclic fusion: each
	                          member its own kernel (grouping.c) */
	SIM_WHY_COUNT
};
const char *sim_fuse_why_name(enum sim_fuse_why w); /* "materialise" */

struct sim_fuse_agreement {
	int xla_kernels;   /* XLA fusions with working instructions */
	int reproduced;    /* of those, formed exactly by one group */
	int edges_xla;     /* operand edges inside one XLA fusion */
	int edges_policy;  /* operand edges inside one group */
	int edges_both;
	int missed[SIM_WHY_COUNT]; /* edges XLA fused and the policy did not,
	                              by the rule that kept the producer out */
};
enum ts_status sim_fuse_agreement(const struct ir_module *unfused,
				  const struct sim_fusion_plan *plan,
				  struct sim_fuse_agreement *a,
				  struct ts_diag *d);

#endif /* SIM_H */
