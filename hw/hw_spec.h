/*
 * hw_spec.h: the description of one TPU generation, as loaded from
 * hwspecs/<gen>.yaml. Plain data: every field carries its unit, every value
 * in the YAML carries its source. The unit models (hw_mxu, hw_vpu, hw_mem)
 * read only this struct. What-if sweeps copy it and change fields.
 */
#ifndef HW_SPEC_H
#define HW_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "ts.h"

#define HW_NAME_MAX 32

/* Units a kernel can be bound by; also used to attribute time. */
enum hw_unit {
	HW_UNIT_NONE = 0, /* not modelled / zero time */
	HW_UNIT_MXU,      /* matrix unit */
	HW_UNIT_VPU,      /* vector unit (incl. transcendental/XLU work) */
	HW_UNIT_HBM,      /* HBM <-> VMEM DMA bandwidth */
	HW_UNIT_OVERHEAD, /* fixed per-kernel / per-step costs dominate */
	HW_UNIT_ICI,      /* inter-chip interconnect (collectives) */
	HW_UNIT_COUNT
};
const char *hw_unit_name(enum hw_unit u); /* "mxu", "vpu", "hbm", ... */

/* Relative VPU cost classes of elementwise ops, in VPU issue slots per
 * (8 x 128) vreg of 32-bit elements, by how the op is built from hardware
 * instructions: VALU ops, one push/pop of the extended unary pipeline (EUP:
 * the transcendental unit; v4 has vpow2, vlog2, vtanh, vrcp, vrsqrt), or a
 * sequence of both. docs/TPU.md section 2 rule 7; ir_ops.def assigns ops. */
enum hw_vpu_class {
	HW_VPU_SIMPLE = 0,  /* one VALU op: add, mul, compare, select, convert,
	                       min/max, bit ops */
	HW_VPU_DIVIDE,      /* divide, remainder: reciprocal + Newton steps +
	                       multiply */
	HW_VPU_TRANSCEND,   /* one EUP function + VALU scaling: exp, log, tanh,
	                       rsqrt, sqrt */
	HW_VPU_COMPOSITE,   /* several EUP/VALU steps: logistic, erf, pow,
	                       expm1, log1p, cbrt, sinh, cosh, asinh, acosh,
	                       atanh */
	HW_VPU_TRIG,        /* range reduction + polynomial: sin, cos, tan,
	                       atan2, asin, acos */
	HW_VPU_RNG,         /* rng, rng-bit-generator: random bits (integer
	                       hash or generator) + conversion to the type */
	HW_VPU_CLASS_COUNT
};

/*
 * The slice a program runs on (hw_slice.c): its chips along each torus
 * axis, and how many such slices the data-centre network (DCN) joins. Not
 * in the YAML: run, whatif and validate set it (--topology, --slices, a
 * measured set's topology and slices columns). n_dims == 0: none given;
 * collectives are then costed as a ring of their group's devices
 * (hw_ici_collective).
 */
#define HW_SLICE_MAX_DIMS 3     /* x, y, z */
#define HW_SLICE_MAX_EXTENT 256 /* chips along one axis (pods: 16 to 32) */
#define HW_SLICE_MAX_COUNT 1024 /* slices */
/* Places of a device on its slice, and the axes a collective's group may
 * span: a chip's devices, the torus axes, the slices. */
enum hw_place {
	HW_PLACE_CORE = 0, /* the device within its chip (v2, v3, v7) */
	HW_PLACE_X,
	HW_PLACE_Y,
	HW_PLACE_Z,
	HW_PLACE_SLICE,    /* which slice */
	HW_PLACE_COUNT
};

struct hw_slice {
	int n_dims;                      /* 0: no slice */
	int dims[HW_SLICE_MAX_DIMS];     /* chips along x, y, z */
	int count;                       /* slices (>= 1 when n_dims > 0) */
	int span_count;                  /* whatif --sweep slices: the
	                                    slices a group that spans all
	                                    `count` (>= 2) spans instead, the
	                                    program run data-parallel over
	                                    more or fewer slices; 0: count */
	const int32_t (*at)[HW_PLACE_COUNT]; /* NULL: devices in JAX's default
	                                    order (hw_slice_place); else device
	                                    d's place (core, x, y, z, slice: enum
	                                    hw_place) as the compile assigned
	                                    it, for d < n_at (frontdoor's
	                                    devices/ID.csv, val_devices_parse);
	                                    the caller owns the table */
	int64_t n_at;
};

struct hw_spec {
	char name[HW_NAME_MAX]; /* generation, e.g. "v3" */

	/* chip */
	int tensorcores_per_chip; /* TensorCores on one chip */
	bool megacore;            /* true: one program spans all cores of a chip
	                             (v4, v5p); false: one program per core */
	double megacore_min_elems; /* under megacore, a kernel whose iteration
	                             space (output, or a reduce's input) has at
	                             least this many elements is split across
	                             the cores; smaller ones run on one core.
	                             Elements; YAML chip.megacore_min_elems */

	/* MXU, per TensorCore */
	int mxu_count;            /* systolic arrays per TensorCore */
	int mxu_rows;             /* R: array rows (contraction side) */
	int mxu_cols;             /* C: array columns (output features) */
	double clock_hz;          /* TensorCore clock, Hz (MXU and VPU) */
	double mxu_macs_per_cell_cycle; /* bf16 MACs one cell does per cycle (1
	                             up to v5p; >1 where published FLOP/s need it) */
	int mxu_f32_passes;       /* bf16 passes for an f32 matmul at HIGHEST precision */
	double mxu_pass_cycles;   /* bubble cycles per weight-tile pass of an
	                             array (switching to the next tile's
	                             weights); YAML mxu.pass_cycles */
	double mxu_int8_rate;     /* MACs of an int8 x int8 contraction a cell
	                             does per bf16 MAC: the published int8 peak
	                             over the bf16 one (2 on v5e, v5p, v6e; 1
	                             where int8 runs at the bf16 rate); YAML
	                             mxu.int8_rate */

	/* VPU, per TensorCore */
	int vpu_sublanes;         /* 8 on every generation */
	int vpu_lanes;            /* 128 on every generation */
	int vpu_alus;             /* ALUs per (sublane, lane) slot */
	double vpu_class_cost[HW_VPU_CLASS_COUNT]; /* issue slots per vreg op;
	                             composite is derived from the others
	                             (hw_spec.c derive_figures), not read */
	double xlu_lane_reduce_cost; /* extra slots per vreg for a cross-lane
	                                reduction step (XLU) */
	double xlu_lane_permute_cost; /* slots per vreg for a cross-lane
	                                 permute of a window op (neighbour
	                                 lanes of a pooling window, strided
	                                 lane compaction) on the XLU; YAML
	                                 vpu.xlu_lane_permute_cost */
	double xlu_transpose_cost; /* slots per vreg of a copy or transpose
	                              that moves the lane dim: the data
	                              crosses lanes on the XLU; YAML
	                              vpu.xlu_transpose_cost */
	double vpu_f16_load_cost;  /* slots per vreg (1024 elements) to convert
	                              f16 data to f32 after a load: f16 is not
	                              a native VPU type (integer emulation);
	                              YAML vpu.f16_load_cost */
	double vpu_f16_store_cost; /* slots per vreg to convert f32 to f16
	                              before a store; YAML vpu.f16_store_cost */

	/* HBM, per chip */
	double hbm_bytes;         /* capacity, bytes */
	double hbm_bw_bytes_per_s;/* peak bandwidth, bytes/s */
	double hbm_efficiency;    /* sustained fraction of peak for streaming DMA */
	double dma_latency_ns;    /* latency of one HBM<->VMEM transfer, ns */
	double dma_chunk_ns;      /* DMA engine time per contiguous run of a
	                             strided transfer (descriptor issue and
	                             burst set-up), ns; YAML hbm.dma_chunk_ns */

	/* VMEM, per TensorCore */
	double vmem_bytes;        /* capacity, bytes */
	double vmem_scoped_bytes; /* of it, what the compiler reserves for a
	                             kernel's own buffers (XLA's scoped VMEM
	                             limit); the rest, if any, is memory-space
	                             assignment's, for values between kernels
	                             (sim/placement.c), bytes */

	/* fixed costs */
	double kernel_overhead_ns; /* per kernel launch (program step) */
	double program_overhead_ns; /* per program run: its start, in the
	                               first kernel's time (sim/config.c
	                               sim_program_start_ns) */
	double step_overhead_ns;   /* per grid step of a tiled kernel */
	double row_overhead_cycles; /* per iteration of a kernel's loop over the
	                              major (untiled) dims of a block: one row
	                              of tiles; core cycles (YAML overhead.row_cycles) */

	/* Host side of one program call, as a caller's wall clock sees it
	 * (host-timed data only; device time excludes it). See
	 * sim_program_host_ns() (sim/program.c) for the formula. */
	double host_call_ns;       /* per call: launch, argument handles,
	                              completion wait; YAML host.call_ns */
	double host_kernel_ns;     /* per kernel of the program executable
	                              (each listed once, loops not unrolled);
	                              YAML host.kernel_ns */
	double host_device_ns;     /* per device beyond the first that the
	                              program is launched on (replica_count x
	                              num_partitions); YAML host.device_ns */

	/* ICI */
	int ici_links;             /* links per chip */
	double ici_link_bw_bytes_per_s; /* one-way bandwidth of one link */
	double ici_latency_ns;     /* per collective hop */
	double ici_efficiency;     /* achieved fraction of the links' bandwidth
	                              in XLA's collectives (hw_ici_collective) */
	int ici_torus_dims;        /* axes of the torus the chips form (2 or
	                              3); ici_links / ici_torus_dims links per
	                              axis, one to each neighbour; YAML
	                              ici.torus_dims */
	int ici_wrap_chips;        /* a slice axis whose length is a multiple
	                              of this closes into a ring (wraparound
	                              links); YAML ici.wrap_chips */
	bool ici_wrap_cube;        /* true: only when every axis of the slice
	                              is such a multiple (the optical switches
	                              that close the rings join whole cubes);
	                              YAML ici.wrap_cube */

	/* DCN: the data-centre network between slices */
	double dcn_bw_bytes_per_s; /* one way, per chip (its share of its
	                              host's network); YAML dcn.bw_bytes_per_s */
	double dcn_latency_ns;     /* per transfer step between slices; YAML
	                              dcn.latency_ns */
	double pcie_bw_bytes_per_s; /* host link, one way, per chip; YAML
	                               pcie.bw_bytes_per_s */

	/* What XLA's TPU compiler for this generation does to a module
	 * before it fuses (sim/rewrite.c), where it changes the kernels */
	bool xla_row_max_window;   /* a row max broadcast back (softmax's)
	                              becomes a reduce-window over the row
	                              when the row is the second-minor dim;
	                              YAML xla.row_max_window */
	double xla_async_all_reduce_bytes; /* an all-reduce of at least this
	                              many bytes runs asynchronously beside
	                              the TensorCore, placed as XLA's
	                              latency-hiding scheduler places it
	                              (sim/schedule.c); 0: none; YAML
	                              xla.async_all_reduce_bytes */
	bool xla_async_all_gather; /* an all-gather that a dot or convolution
	                              independent of it can run beside runs
	                              asynchronously (XLA's async collective
	                              fusion), placed as XLA's latency-hiding
	                              scheduler places it (sim/rewrite.c,
	                              sim/schedule.c); YAML
	                              xla.async_all_gather */
	double xla_all_reduce_combine_bytes; /* independent all-reduces of
	                              one kind are combined into one of up
	                              to this many bytes (sim/rewrite.c);
	                              0: none; YAML
	                              xla.all_reduce_combine_bytes */

	struct hw_slice slice;     /* not in the YAML (above) */
};

/*
 * Loads and validates a spec. Unknown or duplicate keys, wrong types,
 * missing fields and out-of-range values fail with TS_ERR_SPEC and a
 * diagnostic "file:line:col: error: <field.path>: message".
 *
 * Inheritance: a spec whose top level has `inherits: PARENT.yaml` (a path
 * relative to the file that names it) starts from the parent's values and
 * sets only what differs; every field must then be set by it or an
 * ancestor, and `name` by every file. Errors: a missing or unreadable
 * parent, a cycle (a.yaml -> b.yaml -> a.yaml) and more than
 * HW_INHERIT_MAX levels are located at the `inherits` value; an error
 * inside a parent is reported in the parent's file. Text loaded from
 * memory (hw_spec_load_text) has no folder to resolve a parent against:
 * `inherits` is an error there.
 */
#define HW_INHERIT_MAX 8
/* The most a spec file may hold (the largest real one is a few KB). */
#define HW_SPEC_MAX_BYTES ((size_t)1 << 20)
enum ts_status hw_spec_load(const char *path, struct hw_spec *spec,
			    struct ts_diag *d);
/* Same, from text in memory; `name` is used as the file in diagnostics. */
enum ts_status hw_spec_load_text(const char *name, const char *text,
				 size_t len, struct hw_spec *spec,
				 struct ts_diag *d);
/* hw_spec_load keeps file:line:col but frees the text, so d->src is NULL
 * (no caret). This variant hands the text back in *text_out (ts_free it
 * after printing d), like hlo_parse_file. YAML keys: hwspecs/v3.yaml. */
enum ts_status hw_spec_load_file(const char *path, char **text_out,
				 struct hw_spec *spec, struct ts_diag *d);

/* ---- fields by path ------------------------------------------------------
 * The numeric fields of the loader's table, for tools that read or change
 * one figure by name (calibrate, what-if --set). */

struct hw_field_info {
	const char *path;  /* full dotted YAML path: "hbm.bw_bytes_per_s" */
	const char *unit;  /* "" for counts */
	double min, max;   /* accepted range, inclusive */
	bool is_int;       /* an integer field */
};

/* The numeric (int or real) field at `path`; NULL when there is none. */
const struct hw_field_info *hw_spec_field(const char *path);
/* Numeric fields in table order: count and the i-th (NULL out of range). */
int hw_spec_n_fields(void);
const struct hw_field_info *hw_spec_field_at(int i);
double hw_spec_get(const struct hw_spec *s, const struct hw_field_info *f);
/* Range- and type-checked set (an int field needs an integral value). On
 * error TS_ERR_SPEC, s unchanged and d = "<path>: <value> is out of range
 * [lo, hi] <unit>" (the loader's wording) or "<path>: <value> is not an
 * integer", without file or line; <value> is text as the user gave it
 * (1e400, not inf), or v printed when text is NULL. */
enum ts_status hw_spec_set(struct hw_spec *s, const struct hw_field_info *f,
			   double v, const char *text, struct ts_diag *d);
/* The spec as if its file had said fields[i]: values[i] (i < n; texts[i]
 * as given, or texts NULL): each set (hw_spec_set's checks), then the
 * checks that relate fields, then the derived figures, as the loader
 * does. On error TS_ERR_SPEC with d = "<path>: <what>", s unchanged. */
enum ts_status hw_spec_apply(struct hw_spec *s, int n,
			     const struct hw_field_info *const *fields,
			     const double *values, const char *const *texts,
			     struct ts_diag *d);
/*
 * Rewrites the spec file in_path into out_path (may be the same file) with
 * field paths[i] set to values[i] (the shortest text that reads back as the
 * same double), keeping every other byte. comments[i], when not NULL,
 * replaces the field's comment (from its '#' to the end of the line, and
 * the comment-only lines under it indented deeper than its key) by
 * "# " + comments[i]. A field in_path does not write itself (inherited) is
 * added as a line at the end of its section (the section is added when the
 * file has none). The result is loaded and checked to give the new values
 * before it is written, atomically; on error nothing is written.
 */
enum ts_status hw_spec_write_fields(const char *in_path, const char *out_path,
				    int n, const char *const *paths,
				    const double *values,
				    const char *const *comments,
				    struct ts_diag *d);

/* Derived per-program figures (one core, or the whole chip under megacore). */
int hw_spec_cores(const struct hw_spec *s);          /* cores one program uses */
/* Devices (programs) one chip runs: 1 under megacore, else one per
 * TensorCore (v2, v3, v7: 2). */
int hw_spec_chip_devices(const struct hw_spec *s);
/* Cores one kernel of `elems` iteration-space elements is split across:
 * hw_spec_cores() when megacore and elems >= megacore_min_elems, else 1. */
int hw_spec_kernel_cores(const struct hw_spec *s, double elems);
double hw_spec_hbm_bw(const struct hw_spec *s);      /* sustained bytes/s one program sees */
double hw_spec_peak_flops(const struct hw_spec *s);  /* bf16 FLOP/s one program sees */

/* ---- the slice (hw_slice.c) ----------------------------------------------- */

const char *hw_place_name(enum hw_place a); /* "cores", "x", ..., "slices" */

/* Parses a slice shape, "16x16" or "4x4x4" (1 to HW_SLICE_MAX_DIMS whole
 * numbers from 1 to HW_SLICE_MAX_EXTENT joined by 'x'), into s's n_dims and
 * dims (count untouched). TS_ERR_PARSE with d's col at the fault (file and
 * line are the caller's) otherwise. */
enum ts_status hw_slice_parse(const char *text, struct hw_slice *s,
			      struct ts_diag *d);
/* "16x16" or "4x4x4", then ", N slices" when N > 1, into buf (cap >= 1):
 * how messages and reports name a slice. */
void hw_slice_format(const struct hw_slice *s, char *buf, size_t cap);
/* Whether slice s fits generation hw: as many dimensions as its torus, a
 * count from 1 to HW_SLICE_MAX_COUNT. TS_ERR_SPEC with d's message (no
 * location) otherwise. */
enum ts_status hw_slice_check(const struct hw_spec *hw,
			      const struct hw_slice *s, struct ts_diag *d);
/* Whether s's device table (s->at; none: TS_OK) places every device of the
 * slices (hw_slice_devices on s), each on a place of its own within them.
 * TS_ERR_SPEC with d's message (no location) otherwise, TS_ERR_NOMEM. */
enum ts_status hw_slice_check_order(const struct hw_spec *hw,
				    const struct hw_slice *s, struct ts_diag *d);
/* Devices on hw->slice: slices x chips x hw_spec_chip_devices (0: none). */
int64_t hw_slice_devices(const struct hw_spec *hw);
/* Positions along axis a on hw->slice (1 for an axis it lacks). */
int64_t hw_slice_extent(const struct hw_spec *hw, enum hw_place a);
/* Device d's place on hw->slice, one coordinate per enum hw_place. */
void hw_slice_place(const struct hw_spec *hw, int64_t d,
		    int64_t place[HW_PLACE_COUNT]);
/* Whether torus axis a (HW_PLACE_X .. HW_PLACE_Z) of hw->slice has
 * wraparound links. */
bool hw_slice_wraps(const struct hw_spec *hw, enum hw_place a);

#endif /* HW_SPEC_H */
