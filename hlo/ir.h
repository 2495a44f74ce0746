/*
 * ir.h: tpusim's in-memory form of an XLA HLO module. Built by hlo_parse,
 * read by kernel extraction and the analytic model. Everything of one module
 * (computations, instructions, shapes, strings) lives in the module's arena
 * and is freed by ir_module_free(). No tensor data is stored: constants keep
 * their shape only. Design: hlo/README.md, docs/ARCHITECTURE.md "The IR".
 */
#ifndef IR_H
#define IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ts.h"

/* ---- element types ------------------------------------------------------ */

enum ir_type {
	IR_TYPE_INVALID = 0,
#define X(e, s, bits, fp) IR_TYPE_##e,
#include "ir_types.def"
#undef X
	IR_TYPE_TUPLE, /* not a primitive: the shape is a tuple of elems[] */
	IR_TYPE_COUNT
};

const char *ir_type_name(enum ir_type t);       /* "f32"; "tuple" for tuples */
int ir_type_bits(enum ir_type t);               /* unpacked storage bits */

/* ---- opcodes ------------------------------------------------------------ */

enum ir_op {
	IR_OP_INVALID = 0,
#define X(e, s, cls, vpu, lo, hi) IR_OP_##e,
#include "ir_ops.def"
#undef X
	IR_OP_COUNT
};

/* Cost classes, docs/HLO.md section 2. */
enum ir_class {
	IR_CLASS_FREE = 0,       /* no device work: parameter, tuple, bitcast... */
	IR_CLASS_ELEMENTWISE,    /* cheap VPU work per element */
	IR_CLASS_TRANSCENDENTAL, /* elementwise on the EUP / long VPU sequences */
	IR_CLASS_DATA_MOVEMENT,  /* bytes, no arithmetic */
	IR_CLASS_REDUCTION,      /* reduce, reduce-window, ... */
	IR_CLASS_CONTRACTION,    /* MXU: dot, convolution */
	IR_CLASS_CONTROL,        /* fusion, call, while, conditional, async */
	IR_CLASS_COLLECTIVE,     /* cross-chip communication */
	IR_CLASS_OTHER,          /* custom-call, sort, fft, ...: modelled case by case */
	IR_CLASS_COUNT
};

const char *ir_op_name(enum ir_op op);          /* HLO spelling */
enum ir_class ir_op_class(enum ir_op op);
/* Operands the op takes, as XLA's parser counts them: *max is -1 when
 * there is no upper bound (tuple, fusion, reduce, ...). */
void ir_op_arity(enum ir_op op, int *min, int *max);
/* Exact lookup of an opcode word of length n; IR_OP_INVALID if none. */
enum ir_op ir_op_from_name(const char *s, size_t n);

/* ---- size arithmetic ------------------------------------------------------ */

/*
 * Sizes (elements, tiles, blocks, bytes) are non-negative int64. The parser
 * refuses a shape whose element count or bytes pass 2^63, but padding,
 * blocking and products of grid dimensions can still pass it: these
 * saturate at INT64_MAX instead of wrapping (the cost is then absurd but
 * finite and positive). For non-negative arguments, m > 0.
 */
static inline int64_t ir_mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
static inline int64_t ir_min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}
static inline int64_t ir_ceil_div(int64_t a, int64_t m)
{
	return a / m + (a % m != 0);
}
/* a rounded up to a multiple of m */
static inline int64_t ir_round_up(int64_t a, int64_t m)
{
	return ir_mul_sat(ir_ceil_div(a, m), m);
}

/* ---- shapes and layouts --------------------------------------------------- */

/* One tile of a layout: T(8,128) has rank 2, dims {8,128}. A dimension
 * written '*' (combine) is stored as IR_TILE_COMBINE. */
#define IR_TILE_COMBINE (-1)
#define IR_MAX_TILE_RANK 8
struct ir_tile {
	int rank;                        /* 1..IR_MAX_TILE_RANK */
	int64_t dims[IR_MAX_TILE_RANK];  /* elements per tile, minor-most last */
};

/* Dynamic-ness of one dimension. */
enum ir_dim_kind {
	IR_DIM_STATIC = 0,
	IR_DIM_BOUNDED,   /* "<=N": dynamic, at most N (cost with N) */
	IR_DIM_UNBOUNDED, /* "?": unknown size; dims[i] holds 0 */
};

struct ir_layout {
	bool present;            /* a {...} layout was written */
	int *minor_to_major;     /* rank entries (arena); NULL when !present */
	int n_tiles;             /* tiles in T(...)(...) */
	struct ir_tile *tiles;   /* n_tiles entries (arena) */
	int element_size_bits;   /* E(n), 0 if absent */
	int memory_space;        /* S(n): 0 HBM, 1 VMEM, 3 CMEM, 5 host, ... */
	int64_t tail_padding;    /* L(n), 0 if absent */
};

/* What ir_shape_major_to_minor and ir_shape_padded_bytes worked out for
 * an array shape, kept with it: the fusion search asks for the same
 * shapes' sizes and orders millions of times. They fill it in through
 * const pointers (one thread); all zero (nothing known) in a new shape,
 * and a copy whose dims or layout then change must zero it. */
enum { IR_MEMO_ORDER = 1, IR_MEMO_PADDED = 2 };
struct ir_shape_memo {
	uint8_t known;           /* IR_MEMO_* */
	int16_t sublane, lane;   /* the compact order's pair (ir_shape.c) */
	double padded_bytes;
};

struct ir_shape {
	enum ir_type type;       /* IR_TYPE_TUPLE for tuples */
	int rank;                /* array rank; 0 for scalars and tuples */
	int64_t *dims;           /* rank entries (arena), bound for dynamic dims */
	uint8_t *dim_kind;       /* rank entries of enum ir_dim_kind, or NULL if all static */
	struct ir_layout layout;
	int n_elems;             /* tuple element count */
	struct ir_shape *elems;  /* n_elems entries (arena) */
	struct ir_shape_memo memo;
};

/* Elements of an array shape (dynamic dims at their bound); 0 for tuples. */
int64_t ir_shape_elems(const struct ir_shape *s);
/* Bytes of the logical (unpadded) array: elems x element bits / 8, rounded
 * up; tuples sum their leaves. */
double ir_shape_bytes(const struct ir_shape *s);
/*
 * Bytes the array occupies in TPU memory: every tiled physical dimension
 * padded up to its tile extent, element size from E(n) or the type, the
 * second tile level (2,1)/(4,1) packing narrow types into 32-bit words. An
 * array without tiles gets the default TPU tiling for its width (docs/HLO.md
 * 1.6, docs/TPU.md section 2 rule 2). Tuples sum their leaves.
 */
double ir_shape_padded_bytes(const struct ir_shape *s);
/* Of that padding, what the tiles after the first add: the factor by
 * which they pad the first tile's extents (1 for T(8,128)(2,1); 8/7 for
 * T(7,128)(2,1)); 1 for tuples and arrays with one tile or none. */
double ir_shape_further_tiles(const struct ir_shape *s);
/* Physical order: out[i] = logical dim index of the i-th most major dim
 * (reversed minor_to_major; descending default when no layout). An array
 * of rank >= 2 written without tiles (a pre-optimization module) gets the
 * order XLA TPU would assign: the default with the lane and sublane dims
 * chosen to minimise padding (rule and evidence in ir_shape.c). */
void ir_shape_major_to_minor(const struct ir_shape *s, int *out);
/* The first layout tile of an array written without tiles: T(8,128) for
 * rank >= 2, T(t) with t the next power of two >= n in [256, 1024] for
 * rank 1, T(256) for scalars (docs/TPU.md section 3). */
void ir_shape_default_tile(const struct ir_shape *s, struct ir_tile *t);
/* Writes the shape as HLO text ("f32[8,128]{1,0:T(8,128)}") into buf. */
size_t ir_shape_format(const struct ir_shape *s, char *buf, size_t cap);
/* Same dimensions (tuples: element by element); layouts are ignored.
 * _compatible also wants the same element types (XLA's
 * ShapeUtil::Compatible). */
bool ir_shape_equal_dims(const struct ir_shape *a, const struct ir_shape *b);
bool ir_shape_compatible(const struct ir_shape *a, const struct ir_shape *b);

/* ---- attributes ------------------------------------------------------------ */

/* A list of integers as written in {1,2,3}. */
struct ir_ints {
	int n;
	int64_t *v; /* n entries (arena) */
};
/* Whether a and b hold the same integers in the same order (a shape
 * index, a dims list). */
bool ir_ints_equal(const struct ir_ints *a, const struct ir_ints *b);

struct ir_dot_dims {
	struct ir_ints lhs_batch, rhs_batch;
	struct ir_ints lhs_contracting, rhs_contracting;
};

/* One dimension of window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=..}. */
struct ir_window_dim {
	int64_t size, stride;          /* stride defaults to 1 */
	int64_t pad_lo, pad_hi;        /* may be negative */
	int64_t lhs_dilate, rhs_dilate;/* default 1 */
	bool reversal;
};
struct ir_window {
	int n;                         /* spatial dims */
	struct ir_window_dim *dims;    /* n entries (arena) */
};

/* dim_labels=b01f_01io->b01f as dimension indices. Spatial dims in the order
 * of their digit (0, 1, 2...). */
struct ir_conv_dims {
	int n_spatial;
	int lhs_batch, lhs_feature;     /* indices into the lhs shape */
	int rhs_in, rhs_out;            /* kernel input and output feature dims */
	int out_batch, out_feature;
	int *lhs_spatial, *rhs_spatial, *out_spatial; /* n_spatial entries each */
};

/* slice={[a:b:s], ...} */
struct ir_slice_dim { int64_t start, limit, stride; };
struct ir_slice {
	int n;
	struct ir_slice_dim *dims;
};

/* padding=lo_hi_interior x ... */
struct ir_pad_dim { int64_t lo, hi, interior; };
struct ir_padding {
	int n;
	struct ir_pad_dim *dims;
};

struct ir_gather_dims {
	struct ir_ints offset_dims, collapsed_slice_dims, start_index_map;
	struct ir_ints operand_batching_dims, start_indices_batching_dims;
	struct ir_ints slice_sizes;
	int64_t index_vector_dim;
};

struct ir_scatter_dims {
	struct ir_ints update_window_dims, inserted_window_dims;
	struct ir_ints scatter_dims_to_operand_dims;
	struct ir_ints input_batching_dims, scatter_indices_batching_dims;
	int64_t index_vector_dim;
};

enum ir_fusion_kind {
	IR_FUSION_NONE = 0,
	IR_FUSION_LOOP,    /* kLoop */
	IR_FUSION_INPUT,   /* kInput */
	IR_FUSION_OUTPUT,  /* kOutput */
	IR_FUSION_CUSTOM,  /* kCustom */
	IR_FUSION_KIND_COUNT
};
const char *ir_fusion_kind_name(enum ir_fusion_kind k); /* "kLoop" */

enum ir_compare_dir {
	IR_CMP_NONE = 0, IR_CMP_EQ, IR_CMP_NE, IR_CMP_LT, IR_CMP_LE, IR_CMP_GT,
	IR_CMP_GE, IR_CMP_COUNT
};

/* operand_precision={default,highest} per operand; also precision_config. */
enum ir_precision {
	IR_PRECISION_DEFAULT = 0,
	IR_PRECISION_HIGH,
	IR_PRECISION_HIGHEST,
	IR_PRECISION_COUNT
};

/*
 * An iota device array, XLA's IotaTileAssignment: the devices 0 .. N-1
 * (N the product of dims) reshaped to dims, transposed by perm, then read
 * in row-major order. replica_groups=[2,4]<=[4,2]T(1,0) is dims {4, 2},
 * perm {1, 0}: the order 0 2 4 6 1 3 5 7, read as 2 groups of 4.
 */
#define IR_IOTA_MAX_DIMS 8
struct ir_iota {
	int n;                            /* dims; 0: the identity */
	int64_t dims[IR_IOTA_MAX_DIMS];   /* each >= 1 */
	int perm[IR_IOTA_MAX_DIMS];       /* a permutation of 0 .. n-1 */
};
/* Element i of the array (0 <= i < the product of t->dims); i itself when
 * t->n == 0. */
int64_t ir_iota_at(const struct ir_iota *t, int64_t i);

/*
 * A collective's device groups as written, kept compactly: replica_groups
 * as explicit lists ({{0,1},{2,3}}: every id kept, at most IR_MAX_DEVICES
 * of them) or in XLA's iota form ([G,N]<=[dims]T(perm): its dims and
 * permutation only), a mesh form (mesh['a'=2,'b'=4] {'b'}) as the iota it
 * stands for, and a collective-permute's source_target_pairs as groups of
 * two {source, target}. Device j of group g: ir_groups_device().
 */
struct ir_groups {
	int64_t n_groups;                 /* >= 1 */
	const int32_t *ids;               /* explicit lists: every group's ids
	                                     in order (arena); NULL: iota */
	const int64_t *starts;            /* explicit: n_groups + 1 offsets
	                                     into ids */
	int64_t size;                     /* iota: devices per group */
	struct ir_iota iota;              /* iota: group g is elements
	                                     g x size .. g x size + size - 1 */
	struct ir_iota order;             /* a mesh's device_ids=(...): the
	                                     device at each mesh position
	                                     (n == 0: the position itself) */
};
/* Devices in group g (0 <= g < r->n_groups). */
int64_t ir_groups_len(const struct ir_groups *r, int64_t g);
/* Device j of group g (0 <= j < ir_groups_len(r, g)). */
int64_t ir_groups_device(const struct ir_groups *r, int64_t g, int64_t j);

/* What a custom kernel's author declares it does (Pallas' CostEstimate, in
 * a tpu_custom_call's backend_config): FLOPs, transcendental element ops
 * and the bytes it reads and writes. */
struct ir_declared {
	double flops, transcendentals, bytes;
};

/*
 * The attributes that affect cost. Each family is a separately allocated
 * block, NULL when the instruction did not carry it; scalar fields use -1 for
 * "absent" where 0 is a legal value.
 */
struct ir_attrs {
	struct ir_ints *dimensions;       /* dimensions={...} (reduce, broadcast, transpose, ...) */
	struct ir_dot_dims *dot;          /* dot / ragged-dot / scaled-dot */
	struct ir_window *window;         /* convolution, reduce-window, select-and-scatter */
	struct ir_conv_dims *conv;        /* dim_labels */
	struct ir_slice *slice;           /* slice={...} */
	struct ir_padding *padding;       /* pad's padding= */
	struct ir_gather_dims *gather;
	struct ir_scatter_dims *scatter;
	struct ir_ints *dynamic_slice_sizes;
	struct ir_ints *fft_length;
	int64_t feature_group_count;      /* 1 when absent */
	int64_t batch_group_count;        /* 1 when absent */
	int64_t iota_dimension;           /* -1 when absent */
	int64_t tuple_index;              /* get-tuple-element index=, -1 when absent */
	int64_t parameter_number;         /* parameter(N), -1 otherwise */
	int64_t known_trip_count;         /* while: from backend_config, -1 when absent */
	bool cross_program_prefetch;      /* copy-start with
	                                     cross_program_prefetch_index=:
	                                     XLA's prefetch of a parameter
	                                     for the program's next run too */
	int64_t channel_id;               /* channel_id=, 0 when absent (a
	                                     cross-module collective's; XLA's
	                                     async collective fusion clones one
	                                     collective into several fusions,
	                                     each with its channel) */
	int64_t replica_group_size;       /* collectives: devices per group, 0 if unknown/all */
	enum ir_op megascale_op;          /* a send or recv the megascale
	                                     runtime carries between slices
	                                     (frontend_attributes): the
	                                     collective it is part of;
	                                     IR_OP_INVALID otherwise */
	int64_t megascale_slices;         /* its slices, 0 when not known */
	struct ir_declared *declared;     /* a Pallas kernel's cost_estimate
	                                     (custom-call backend_config), NULL
	                                     when absent */
	const struct ir_groups *groups;   /* replica_groups' device lists, or a
	                                     collective-permute's
	                                     source_target_pairs; NULL: absent,
	                                     {} (every device), or a mesh form
	                                     whose lists are not kept (sub-axes,
	                                     a device order that is no iota) */
	int64_t k;                        /* topk k=, 0 when absent */
	int64_t int_value;                /* scalar integer constant's value
	                                     (IR_INSTR_INT_VALUE; u64 values
	                                     past INT64_MAX are not kept) */
	enum ir_fusion_kind fusion_kind;
	enum ir_compare_dir compare_dir;
	enum ir_precision precision[2];   /* operand_precision per operand (lhs, rhs) */
	const char *custom_call_target;   /* arena string, NULL when absent */
	const char *exec_thread;          /* async_execution_thread, NULL when
	                                     absent (XLA's default: "main") */
	/* Tile configuration recorded by the TPU compiler in backend_config
	 * window_config (output/kernel_window_bounds), empty when absent. */
	struct ir_ints window_output_bounds, window_kernel_bounds;
};

/* The attributes of an instruction that carries none: each scalar at its
 * "absent" value or XLA's default. */
#define IR_ATTRS_NONE                                                       \
	((struct ir_attrs){.feature_group_count = 1, .batch_group_count = 1,  \
			   .iota_dimension = -1, .tuple_index = -1,           \
			   .parameter_number = -1, .known_trip_count = -1})

/* ---- instructions and computations ---------------------------------------- */

struct ir_computation;

/* Instruction flags. */
enum {
	IR_INSTR_ROOT = 1u << 0,          /* marked ROOT (or last, when none is) */
	IR_INSTR_SHAPE_INFERRED = 1u << 1,/* no result shape was written */
	IR_INSTR_LITERAL_ELIDED = 1u << 2,/* constant({...}) */
	IR_INSTR_BRANCH_LIST = 1u << 3,   /* conditional with branch_computations= */
	IR_INSTR_INT_VALUE = 1u << 4,     /* a scalar integer constant: attrs.int_value */
	IR_INSTR_MADE = 1u << 5,          /* made by a rewrite (sim/rewrite.c), not
	                                     parsed: no text of its own; written
	                                     out from the IR (hlo_emit_instr),
	                                     a combined all-reduce with the
	                                     attributes' text of the one it was
	                                     made from (its offsets) */
	IR_INSTR_ASYNC = 1u << 6,         /* an all-gather XLA runs
	                                     asynchronously beside the
	                                     TensorCore's work (sim/rewrite.c
	                                     marks it, sim/schedule.c places
	                                     it) */
};

struct ir_instr {
	enum ir_op op;
	enum ir_op wrapped_op;            /* async sugar X-start/-update/-done: X
	                                     (op is async-*); IR_OP_INVALID otherwise */
	const char *name;                 /* without '%' (arena) */
	struct ir_shape shape;            /* result shape */
	int n_operands;
	struct ir_instr **operands;       /* n_operands entries (arena) */
	int n_called;
	struct ir_computation **called;   /* called computations in attribute order:
	                                     calls=, to_apply=, condition= then body=,
	                                     branch_computations / true then false,
	                                     select= then scatter= */
	struct ir_computation *parent;    /* computation holding this instruction */
	struct ir_attrs attrs;
	const char *op_name;              /* metadata op_name, NULL if none (arena) */
	uint32_t flags;                   /* IR_INSTR_* */
	int index;                        /* position in parent->instrs */
	int n_users;                      /* instructions of the same computation using it */
	uint32_t line, col;               /* where its name starts, for diagnostics */
	/* Byte offsets into the parsed text (the fusion pass re-emits an
	 * instruction from them): rhs_begin .. rhs_end is what follows '='
	 * (shape, opcode, operands, attributes); ops_begin .. ops_end the
	 * operand list inside its parentheses. 0 .. 0 for instructions the
	 * parser or a rewrite made up and nested operands. */
	uint32_t rhs_begin, rhs_end, ops_begin, ops_end;
};

struct ir_computation {
	const char *name;                 /* without '%' (arena) */
	int n_instrs;
	struct ir_instr **instrs;         /* in text order = schedule order (arena) */
	struct ir_instr *root;
	int n_params;
	struct ir_instr **params;         /* by parameter number; n_params entries */
	int index;                        /* position in module->comps */
	bool is_entry;
	bool is_fusion;                   /* called by some fusion's calls= */
	bool has_result_shape;            /* the header wrote "-> shape" */
	struct ir_shape result_shape;     /* that shape */
	uint32_t result_line, result_col; /* where it is written */
	int n_callers;                    /* instructions calling it */
	const struct ir_instr *caller;    /* the one, when n_callers == 1 */
	uint32_t line, col;
};

/* An attribute name tpusim neither parses nor knows to be cost-free
 * (docs/HLO.md 1.10): skipped, and reported as a note by the CLI. */
#define IR_MAX_UNKNOWN_ATTRS 8
struct ir_unknown_attr {
	const char *name;                 /* attribute name (arena) */
	uint32_t line, col;               /* first use */
	int64_t uses;                     /* times it was skipped */
};

/* An entry of the module header's input_output_alias (the entry's output
 * at shape index output lives in the buffer of parameter param at
 * param_index) or buffer_donor (parameter param's buffer at param_index
 * may be taken by an output: output.n == -1). */
struct ir_alias {
	struct ir_ints output;            /* shape index into the entry's result */
	int64_t param;                    /* parameter number */
	struct ir_ints param_index;       /* shape index into that parameter */
	bool must;                        /* must-alias (else may-alias) */
	uint32_t line, col;               /* where the entry starts */
};

/* Largest replica_count or num_partitions accepted (a TPU v5p pod: 8960
 * chips; the limit only rejects typos). */
#define IR_MAX_DEVICES 65536

struct ir_module {
	struct ts_arena arena;            /* owns everything below */
	const char *name;                 /* HloModule name, "" if no header */
	const char *file;                 /* path for diagnostics (arena copy) */
	bool is_scheduled;
	int64_t replica_count;            /* header replica_count= (default 1) */
	int64_t num_partitions;           /* header num_partitions= (default 1) */
	int n_comps;
	struct ir_computation **comps;    /* in text order (callees first in printed HLO) */
	struct ir_computation *entry;
	int64_t n_instrs;                 /* all instructions of all computations */
	uint32_t line;                    /* line of the HloModule header (or first computation) */
	uint32_t header_begin, header_end; /* byte offsets of "HloModule NAME,
	                                     ATTRS" in the parsed text (0, 0:
	                                     no header) */
	int n_aliases;                    /* input_output_alias entries, then
	                                     buffer_donor ones, as written */
	struct ir_alias *aliases;         /* n_aliases entries (arena) */
	int n_unknown_attrs;              /* distinct unknown attribute names, at most
	                                     IR_MAX_UNKNOWN_ATTRS recorded */
	struct ir_unknown_attr unknown_attrs[IR_MAX_UNKNOWN_ATTRS];
};

/* The module struct itself is allocated in its own arena (first
 * allocation), so this one call frees everything. NULL is ignored. */
void ir_module_free(struct ir_module *m);

/* Finds a computation by name (without '%'); NULL when absent. */
struct ir_computation *ir_module_find_comp(const struct ir_module *m,
					   const char *name);

/* Per-opcode instruction counts over the whole module (all computations),
 * into counts[IR_OP_COUNT]. */
void ir_module_count_ops(const struct ir_module *m, int64_t *counts);

/* ---- parsing (hlo/hlo_parse.c and the files hlo_parse_int.h names) ------- */

/*
 * Parses HLO text into modules. A file may hold several modules (`// -----`
 * separators, or a second HloModule header); all are returned in *out (an
 * array of n_out module pointers, ts_free() the array, ir_module_free() each
 * module). On error returns TS_ERR_PARSE (or TS_ERR_NOMEM) and fills d with
 * file:line:col and the message; d->src points at text for the caret, so
 * text must outlive d's use. Never crashes, hangs or guesses: unknown
 * opcodes, undefined operands and duplicate names are errors; unknown
 * attributes that do not affect cost are skipped.
 */
enum ts_status hlo_parse(const char *file, const char *text, size_t len,
			 struct ir_module ***out, int *n_out, struct ts_diag *d);

/* XLA's verifier's shape rules for the ops whose result follows from the
 * operands (hlo/ir_verify.c lists them): TS_ERR_PARSE with d at the first
 * instruction whose declared shape its operands cannot produce. hlo_parse
 * runs it on every module it returns. */
enum ts_status ir_verify(const struct ir_module *m, struct ts_diag *d);

/* Reads and parses a file; *text_out receives the file text (ts_free it
 * after the diagnostic has been printed). */
enum ts_status hlo_parse_file(const char *path, char **text_out,
			      struct ir_module ***out, int *n_out,
			      struct ts_diag *d);

#endif /* IR_H */
