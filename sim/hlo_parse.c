/*
 * hlo_parse.c: the HLO text parser (docs/HLO.md section 1). A hand-written
 * recursive-descent parser working directly on the bytes: no token stream and
 * no per-token allocation; names are looked up in arena-free hash tables and
 * resolved per scope in a second pass (instructions per computation,
 * computations per module). Attributes that affect cost are parsed into
 * struct ir_attrs, all others are skipped by the atom rule of section 1.10.
 */
#include "hlo_literal.h"
#include "ir.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define HP_MAX_DEPTH 256  /* nesting of shapes, groups and inline bodies */
#define HP_MAX_RANK 128   /* dims of a shape / entries of a small int list */
#define HP_MAX_PARAMS (1 << 20) /* parameter(N): N below this */
#define HP_KW_CAP 512     /* keyword hash slots (power of two) */
#define HP_KW_MAX_LEN 40  /* longer words are never keywords */
#define HP_MSG_TOK 48     /* bytes of a token echoed in a message */

/* ---- small helpers --------------------------------------------------------- */

/* Character classes: word [A-Za-z0-9_.-], alpha [A-Za-z_], digit, space,
 * and marks for the two bytes the hot loops must look at twice. */
enum { CC_W = 1, CC_A = 2, CC_D = 4, CC_S = 8, CC_DASH = 16, CC_SLASH = 32 };
static const uint8_t char_class[256] = {
	['a'] = CC_W | CC_A, ['b'] = CC_W | CC_A, ['c'] = CC_W | CC_A,
	['d'] = CC_W | CC_A, ['e'] = CC_W | CC_A, ['f'] = CC_W | CC_A,
	['g'] = CC_W | CC_A, ['h'] = CC_W | CC_A, ['i'] = CC_W | CC_A,
	['j'] = CC_W | CC_A, ['k'] = CC_W | CC_A, ['l'] = CC_W | CC_A,
	['m'] = CC_W | CC_A, ['n'] = CC_W | CC_A, ['o'] = CC_W | CC_A,
	['p'] = CC_W | CC_A, ['q'] = CC_W | CC_A, ['r'] = CC_W | CC_A,
	['s'] = CC_W | CC_A, ['t'] = CC_W | CC_A, ['u'] = CC_W | CC_A,
	['v'] = CC_W | CC_A, ['w'] = CC_W | CC_A, ['x'] = CC_W | CC_A,
	['y'] = CC_W | CC_A, ['z'] = CC_W | CC_A, ['A'] = CC_W | CC_A,
	['B'] = CC_W | CC_A, ['C'] = CC_W | CC_A, ['D'] = CC_W | CC_A,
	['E'] = CC_W | CC_A, ['F'] = CC_W | CC_A, ['G'] = CC_W | CC_A,
	['H'] = CC_W | CC_A, ['I'] = CC_W | CC_A, ['J'] = CC_W | CC_A,
	['K'] = CC_W | CC_A, ['L'] = CC_W | CC_A, ['M'] = CC_W | CC_A,
	['N'] = CC_W | CC_A, ['O'] = CC_W | CC_A, ['P'] = CC_W | CC_A,
	['Q'] = CC_W | CC_A, ['R'] = CC_W | CC_A, ['S'] = CC_W | CC_A,
	['T'] = CC_W | CC_A, ['U'] = CC_W | CC_A, ['V'] = CC_W | CC_A,
	['W'] = CC_W | CC_A, ['X'] = CC_W | CC_A, ['Y'] = CC_W | CC_A,
	['Z'] = CC_W | CC_A, ['0'] = CC_W | CC_D, ['1'] = CC_W | CC_D,
	['2'] = CC_W | CC_D, ['3'] = CC_W | CC_D, ['4'] = CC_W | CC_D,
	['5'] = CC_W | CC_D, ['6'] = CC_W | CC_D, ['7'] = CC_W | CC_D,
	['8'] = CC_W | CC_D, ['9'] = CC_W | CC_D, ['_'] = CC_W | CC_A, ['.'] = CC_W,
	['-'] = CC_W | CC_DASH, ['/'] = CC_SLASH, [' '] = CC_S, ['\n'] = CC_S, ['\t'] = CC_S, ['\r'] = CC_S,
	['\f'] = CC_S, ['\v'] = CC_S,
};

static inline bool has_class(int c, int cls)
{
	return (unsigned)c < 256 && (char_class[c] & cls);
}
static inline bool is_digit(int c) { return has_class(c, CC_D); }
/* letters only (names may also start with '_', see name_start) */
static inline bool is_alpha(int c)
{
	return has_class(c, CC_A) && c != '_';
}
static inline bool name_start(int c) { return has_class(c, CC_A); }
static inline bool is_word_char(int c) { return has_class(c, CC_W); }
static inline bool is_space(int c) { return has_class(c, CC_S); }

/* memcmp(a, b, n) == 0 for the short keys of the tables (no call). */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

/* A growable array of elem-sized items (ts_realloc, owned by the parser). */
struct hp_vec {
	void *v;        /* cap elements */
	size_t n, cap;  /* used and allocated elements */
};

/* Name -> pointer hash table for one scope. Slots are valid when their gen
 * equals the table's gen, so a reset is one increment. */
struct hp_slot {
	const char *key;  /* not owned: text or arena */
	uint32_t len;     /* bytes of key */
	uint32_t hash;    /* hash_bytes(key, len) */
	uint32_t gen;     /* live when equal to the table's gen */
	void *val;        /* the instruction or computation */
};
struct hp_table {
	struct hp_slot *slots;
	size_t cap;   /* power of two, 0 before first use */
	size_t n;     /* live entries */
	uint32_t gen; /* current generation, starts at 1 */
};

/* Keywords: opcodes, element types and attribute names share one table. */
struct hp_kw {
	const char *s; /* static name, NULL for an empty slot */
	uint32_t len;  /* bytes of s */
	uint16_t op;   /* enum ir_op or 0 */
	uint8_t type;  /* enum ir_type or 0 */
	uint8_t attr;  /* enum hp_attr or 0 */
};

/* Attributes with a parser of their own; the rest are skipped. */
enum hp_attr {
	A_NONE = 0,
	A_DIMENSIONS, A_LHS_BATCH, A_RHS_BATCH, A_LHS_CONTRACT, A_RHS_CONTRACT,
	A_WINDOW, A_DIM_LABELS, A_FGC, A_BGC, A_SLICE, A_PADDING,
	A_OFFSET_DIMS, A_COLLAPSED, A_START_INDEX_MAP, A_OPERAND_BATCHING,
	A_START_INDICES_BATCHING, A_SLICE_SIZES, A_INDEX_VECTOR_DIM,
	A_UPDATE_WINDOW, A_INSERTED_WINDOW, A_SCATTER_TO_OPERAND,
	A_INPUT_BATCHING, A_SCATTER_INDICES_BATCHING, A_DYN_SLICE_SIZES,
	A_FFT_LENGTH, A_IOTA_DIM, A_INDEX, A_DIRECTION, A_KIND, A_CALLS,
	A_TO_APPLY, A_CONDITION, A_BODY, A_BRANCHES, A_TRUE, A_FALSE, A_SELECT,
	A_SCATTER, A_CALLED, A_TARGET, A_PRECISION, A_REPLICA_GROUPS,
	A_METADATA, A_BACKEND_CONFIG, A_K, A_THREAD, A_ACCURACY, A_CONTROL,
	A_LAYOUT_CONSTRAINTS, A_API_VERSION,
	A_COST_FREE, /* known, does not affect the modelled cost: skipped quietly */
	A_COUNT
};

static const char *const attr_names[] = {
	[A_NONE] = "",
	[A_DIMENSIONS] = "dimensions",
	[A_LHS_BATCH] = "lhs_batch_dims",
	[A_RHS_BATCH] = "rhs_batch_dims",
	[A_LHS_CONTRACT] = "lhs_contracting_dims",
	[A_RHS_CONTRACT] = "rhs_contracting_dims",
	[A_WINDOW] = "window",
	[A_DIM_LABELS] = "dim_labels",
	[A_FGC] = "feature_group_count",
	[A_BGC] = "batch_group_count",
	[A_SLICE] = "slice",
	[A_PADDING] = "padding",
	[A_OFFSET_DIMS] = "offset_dims",
	[A_COLLAPSED] = "collapsed_slice_dims",
	[A_START_INDEX_MAP] = "start_index_map",
	[A_OPERAND_BATCHING] = "operand_batching_dims",
	[A_START_INDICES_BATCHING] = "start_indices_batching_dims",
	[A_SLICE_SIZES] = "slice_sizes",
	[A_INDEX_VECTOR_DIM] = "index_vector_dim",
	[A_UPDATE_WINDOW] = "update_window_dims",
	[A_INSERTED_WINDOW] = "inserted_window_dims",
	[A_SCATTER_TO_OPERAND] = "scatter_dims_to_operand_dims",
	[A_INPUT_BATCHING] = "input_batching_dims",
	[A_SCATTER_INDICES_BATCHING] = "scatter_indices_batching_dims",
	[A_DYN_SLICE_SIZES] = "dynamic_slice_sizes",
	[A_FFT_LENGTH] = "fft_length",
	[A_IOTA_DIM] = "iota_dimension",
	[A_INDEX] = "index",
	[A_DIRECTION] = "direction",
	[A_KIND] = "kind",
	[A_CALLS] = "calls",
	[A_TO_APPLY] = "to_apply",
	[A_CONDITION] = "condition",
	[A_BODY] = "body",
	[A_BRANCHES] = "branch_computations",
	[A_TRUE] = "true_computation",
	[A_FALSE] = "false_computation",
	[A_SELECT] = "select",
	[A_SCATTER] = "scatter",
	[A_CALLED] = "called_computations",
	[A_TARGET] = "custom_call_target",
	[A_PRECISION] = "operand_precision",
	[A_REPLICA_GROUPS] = "replica_groups",
	[A_METADATA] = "metadata",
	[A_BACKEND_CONFIG] = "backend_config",
	[A_K] = "k",
	[A_THREAD] = "async_execution_thread",
	[A_ACCURACY] = "result_accuracy",
	[A_CONTROL] = "control-predecessors",
	[A_LAYOUT_CONSTRAINTS] = "operand_layout_constraints",
	[A_API_VERSION] = "api_version",
	[A_COST_FREE] = "",
};

/*
 * Attributes XLA prints that do not change what tpusim models (docs/HLO.md
 * 1.8-1.9): placement, aliasing, scheduling and debugging information, and
 * options of ops tpusim lists as unmodelled. They are skipped without a
 * note; any other unknown name is skipped with one (ir_module.unknown_attrs).
 */
static const char *const cost_free_attrs[] = {
	"sharding", "frontend_attributes", "statistics",
	"origin", "parameter_replication", "channel_id",
	"use_global_device_ids", "constrain_layout", "is_stable",
	"indices_are_sorted", "unique_indices", "inferred_dimension",
	"is_host_transfer", "infeed_config", "outfeed_config", "outfeed_shape",
	"cross_program_prefetch_index", "distribution",
	"delta", "exponent_bits", "mantissa_bits", "fft_type", "left_side",
	"lower", "unit_diagonal", "transpose_a", "epsilon", "feature_index",
	"domain",
	"custom_call_has_side_effect", "output_to_operand_aliasing", "schedule",
	"literal", "padding_type", "type", "mode", "largest", "is_composite",
	"execution_thread", "source_target_pairs", "conv_kind", "num_carries",
	"is_reverse", "is_associative", "lhs_ragged_dims", "rhs_group_dims",
	"algorithm", "sparsity", "is_cross_program_prefetch",
};
_Static_assert(TS_ARRAY_LEN(attr_names) == A_COUNT,
	       "attr_names must name every hp_attr");
_Static_assert(A_COUNT <= 64, "parse_rhs keeps the attributes seen in 64 bits");

/* Attributes an opcode cannot do without (XLA: required entries of each
 * opcode's attribute map in hlo_parser.cc). A nested instruction has no
 * attributes, so a nested broadcast is refused as XLA refuses it. */
static const struct {
	enum ir_op op;
	uint8_t attrs[5];
} required_attrs[] = {
	{IR_OP_BROADCAST, {A_DIMENSIONS}},
	{IR_OP_TRANSPOSE, {A_DIMENSIONS}},
	{IR_OP_REVERSE, {A_DIMENSIONS}},
	{IR_OP_CONCATENATE, {A_DIMENSIONS}},
	{IR_OP_REDUCE, {A_DIMENSIONS, A_TO_APPLY}},
	{IR_OP_SORT, {A_DIMENSIONS, A_TO_APPLY}},
	{IR_OP_MAP, {A_TO_APPLY}},
	{IR_OP_CALL, {A_TO_APPLY}},
	{IR_OP_ALL_REDUCE, {A_TO_APPLY}},
	{IR_OP_REDUCE_WINDOW, {A_TO_APPLY}},
	{IR_OP_SELECT_AND_SCATTER, {A_SELECT, A_SCATTER}},
	{IR_OP_COMPARE, {A_DIRECTION}},
	{IR_OP_GET_TUPLE_ELEMENT, {A_INDEX}},
	{IR_OP_SLICE, {A_SLICE}},
	{IR_OP_PAD, {A_PADDING}},
	{IR_OP_DYNAMIC_SLICE, {A_DYN_SLICE_SIZES}},
	{IR_OP_IOTA, {A_IOTA_DIM}},
	{IR_OP_WHILE, {A_CONDITION, A_BODY}},
	{IR_OP_FUSION, {A_KIND, A_CALLS}},
	{IR_OP_CUSTOM_CALL, {A_TARGET}},
	{IR_OP_GATHER, {A_OFFSET_DIMS, A_COLLAPSED, A_START_INDEX_MAP,
			A_INDEX_VECTOR_DIM, A_SLICE_SIZES}},
	{IR_OP_SCATTER, {A_UPDATE_WINDOW, A_INSERTED_WINDOW,
			 A_SCATTER_TO_OPERAND, A_INDEX_VECTOR_DIM, A_TO_APPLY}},
};

/* Whether an attribute naming computations may be written on op (XLA:
 * any other is an "unexpected attribute"). Other attributes: true. */
static bool attr_allowed(enum ir_op op, int attr)
{
	switch (attr) {
	case A_CALLS:
		return op == IR_OP_FUSION || op == IR_OP_CALL ||
		       op == IR_OP_CUSTOM_CALL || op == IR_OP_ASYNC_START ||
		       op == IR_OP_ASYNC_UPDATE || op == IR_OP_ASYNC_DONE;
	case A_TO_APPLY:
		return op == IR_OP_CALL || op == IR_OP_MAP || op == IR_OP_REDUCE ||
		       op == IR_OP_REDUCE_WINDOW || op == IR_OP_ALL_REDUCE ||
		       op == IR_OP_ALL_REDUCE_START || op == IR_OP_REDUCE_SCATTER ||
		       op == IR_OP_SORT || op == IR_OP_SCATTER ||
		       op == IR_OP_CUSTOM_CALL || op == IR_OP_COLLECTIVE_REDUCE ||
		       op == IR_OP_SCAN;
	case A_CONDITION:
	case A_BODY:
		return op == IR_OP_WHILE;
	case A_BRANCHES:
	case A_TRUE:
	case A_FALSE:
		return op == IR_OP_CONDITIONAL;
	case A_SELECT:
	case A_SCATTER:
		return op == IR_OP_SELECT_AND_SCATTER;
	case A_CALLED:
	case A_API_VERSION:
		return op == IR_OP_CUSTOM_CALL;
	case A_ACCURACY:
		/* XLA: the unary ops whose results may be approximated */
		return op == IR_OP_EXPONENTIAL || op == IR_OP_EXPONENTIAL_MINUS_ONE ||
		       op == IR_OP_LOG || op == IR_OP_LOG_PLUS_ONE ||
		       op == IR_OP_RSQRT || op == IR_OP_SQRT || op == IR_OP_CBRT ||
		       op == IR_OP_TANH || op == IR_OP_COSINE || op == IR_OP_SINE ||
		       op == IR_OP_TAN || op == IR_OP_LOGISTIC || op == IR_OP_ERF;
	default:
		return true;
	}
}

/* Order of called computations in ir_instr.called (ir.h). */
enum hp_call_rank {
	CR_CALLS = 0, CR_TO_APPLY, CR_CONDITION, CR_BODY, CR_BRANCHES, CR_TRUE,
	CR_FALSE, CR_SELECT, CR_SCATTER, CR_CALLED, CR_COUNT
};

/* A called computation of the instruction being parsed. */
struct hp_call {
	int rank;                     /* enum hp_call_rank */
	const char *name;             /* in the text, without '%' */
	uint32_t len;                 /* bytes of name */
	const char *at;               /* for the diagnostic */
	struct ir_computation *comp;  /* inline body, or NULL: look up name */
};

/* An operand (or called computation) name to resolve later. */
struct hp_ref {
	void **slot;       /* where the resolved pointer goes */
	const char *name;  /* in the text, without '%' */
	uint32_t len;      /* bytes of name */
	const char *at;    /* for the diagnostic */
	void *direct;      /* operands: a nested instruction, already resolved */
};

/* Per-nesting-level state of a computation body being parsed. */
struct hp_level {
	struct hp_table names;  /* instruction name -> struct ir_instr * */
	struct hp_table params; /* parameter number (its digits) -> instr */
	struct hp_vec instrs;   /* struct ir_instr * in text order */
	struct hp_vec refs;     /* struct hp_ref: operands defined later */
};

struct hp_parser {
	const char *file;             /* for diagnostics and ir_module.file */
	const char *text, *end;       /* the input, not NUL-terminated */
	const char *p;                /* cursor */
	struct ts_diag *d;            /* caller's diagnostic, may be NULL */
	enum ts_status st;            /* first error, TS_OK while none */
	int depth;                    /* shape/group nesting */
	int64_t shape_bytes;          /* exact bytes of the shape parsed last
	                                 (tuples: the sum of their elements) */
	bool discard;                 /* shapes are only checked, not stored
	                                 (typed operands, signatures) */
	/* the last shape parsed with discard: element type (IR_TYPE_TUPLE
	 * for a tuple), rank and dimensions, dynamic when any dim is */
	enum ir_type decl_type;
	int decl_rank;
	bool decl_dynamic;
	int64_t decl_dims[HP_MAX_RANK];
	int comp_depth;               /* inline computation nesting */
	/* line cache for locate(): line number of lc_pos and its line start */
	const char *lc_pos, *lc_line_start;
	uint32_t lc_line;
	const char *last_sep;         /* last "// -----" comment seen */
	struct hp_kw kw[HP_KW_CAP];   /* opcodes, types, attribute names */
	/* current module */
	struct ir_module *m;
	bool m_header;                /* an HloModule header was read */
	const char *m_last_close;     /* '}' ending its last computation */
	struct hp_table comp_names;   /* computation name -> comp */
	struct hp_vec comps;          /* struct ir_computation * */
	struct hp_vec crefs;          /* struct hp_ref to computations */
	int n_entry;                  /* ENTRY keywords seen in it */
	void *sink;                   /* resolved names nobody keeps */
	/* scratch stacks */
	struct hp_vec shapes;         /* struct ir_shape: tuple elements */
	struct hp_vec calls;          /* struct hp_call */
	struct hp_vec ops;            /* struct hp_ref: operands of one instr */
	struct hp_vec ints;           /* int: colors, stacks and stamps */
	struct hp_vec order;          /* int: instructions in post-order */
	struct hp_level *levels[HP_MAX_DEPTH]; /* allocated on first use */
	/* finished modules */
	struct ir_module **out;       /* ts_malloc'd, handed to the caller */
	int n_out, cap_out;           /* used and allocated entries of out */
};

/* ---- errors and locations ------------------------------------------------ */

static void locate(struct hp_parser *p, const char *at, uint32_t *line,
		   uint32_t *col)
{
	if (at > p->end)
		at = p->end;
	if (at < p->lc_pos) {
		p->lc_pos = p->text;
		p->lc_line_start = p->text;
		p->lc_line = 1;
	}
	const char *s = p->lc_pos;
	const char *nl;
	while ((nl = memchr(s, '\n', (size_t)(at - s))) != NULL) {
		if (p->lc_line < UINT32_MAX)
			p->lc_line++;
		s = nl + 1;
		p->lc_line_start = s;
	}
	p->lc_pos = at;
	size_t c = (size_t)(at - p->lc_line_start) + 1;
	*line = p->lc_line;
	*col = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

static uint32_t line_of(struct hp_parser *p, const char *at)
{
	uint32_t line, col;
	locate(p, at, &line, &col);
	return line;
}

/* Records the first error at line:col and returns false. */
__attribute__((format(printf, 4, 5))) static bool
fail_lc(struct hp_parser *p, uint32_t line, uint32_t col, const char *fmt, ...)
{
	if (p->st != TS_OK)
		return false;
	p->st = TS_ERR_PARSE;
	if (!p->d)
		return false;
	va_list ap;
	va_start(ap, fmt);
	ts_diag_vset(p->d, p->file, line, col, fmt, ap);
	va_end(ap);
	p->d->src = p->text;
	p->d->src_len = (size_t)(p->end - p->text);
	return false;
}

/* Records the first error at `at` and returns false. */
__attribute__((format(printf, 3, 4))) static bool
fail(struct hp_parser *p, const char *at, const char *fmt, ...)
{
	if (p->st != TS_OK)
		return false;
	uint32_t line, col;
	locate(p, at, &line, &col);
	char msg[TS_DIAG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return fail_lc(p, line, col, "%s", msg);
}

static bool nomem(struct hp_parser *p)
{
	if (p->st == TS_OK) {
		p->st = TS_ERR_NOMEM;
		if (p->d) {
			ts_diag_set(p->d, p->file, 0, 0, "out of memory");
			p->d->src = NULL;
			p->d->src_len = 0;
		}
	}
	return false;
}

/* Length of the token at `at` for echoing it in a message (0 at the end). */
static int tok_len(const struct hp_parser *p, const char *at)
{
	if (at >= p->end)
		return 0;
	const char *q = at;
	if (*q == '%')
		q++;
	while (q < p->end && is_word_char((unsigned char)*q) &&
	       q - at < HP_MSG_TOK)
		q++;
	return q == at ? 1 : (int)(q - at);
}

/* "expected X" error that quotes what was found instead. */
static bool expected(struct hp_parser *p, const char *what)
{
	if (p->p >= p->end)
		return fail(p, p->p, "expected %s, got end of input", what);
	int n = tok_len(p, p->p);
	return fail(p, p->p, "expected %s, got '%.*s'", what, n, p->p);
}

/* ---- vectors and tables -------------------------------------------------- */

static void *vec_push(struct hp_parser *p, struct hp_vec *v, size_t elem)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		if (cap > SIZE_MAX / elem) {
			nomem(p);
			return NULL;
		}
		void *nv = ts_realloc(v->v, cap * elem);
		if (!nv) {
			nomem(p);
			return NULL;
		}
		v->v = nv;
		v->cap = cap;
	}
	return (char *)v->v + elem * v->n++;
}

/* Appends `count` copies of `value` to the int scratch vector p->ints. */
static bool push_ints(struct hp_parser *p, int value, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		int *v = vec_push(p, &p->ints, sizeof *v);
		if (!v)
			return false;
		*v = value;
	}
	return true;
}

static void vec_free(struct hp_vec *v)
{
	ts_free(v->v);
	v->v = NULL;
	v->n = v->cap = 0;
}

static void table_reset(struct hp_table *t)
{
	t->n = 0;
	if (++t->gen == 0) {
		if (t->slots)
			memset(t->slots, 0, t->cap * sizeof *t->slots);
		t->gen = 1;
	}
}

static struct hp_slot *table_find(struct hp_table *t, const char *key,
				  uint32_t len, uint32_t h)
{
	if (!t->cap)
		return NULL;
	size_t mask = t->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct hp_slot *s = &t->slots[i];
		if (s->gen != t->gen)
			return s; /* empty: where it would go */
		if (s->hash == h && s->len == len && same_bytes(s->key, key, len))
			return s;
	}
}

static void *table_get(struct hp_table *t, const char *key, uint32_t len)
{
	struct hp_slot *s = table_find(t, key, len, hash_bytes(key, len));
	return s && s->gen == t->gen ? s->val : NULL;
}

/* Inserts key -> val; returns the existing value if key is present (and
 * does not insert), NULL after inserting. Sets p->st on allocation failure. */
static void *table_put(struct hp_parser *p, struct hp_table *t, const char *key,
		       uint32_t len, void *val)
{
	if (t->gen == 0)
		t->gen = 1;
	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		if (cap > SIZE_MAX / sizeof(struct hp_slot)) {
			nomem(p);
			return NULL;
		}
		struct hp_slot *ns = ts_calloc(cap, sizeof *ns);
		if (!ns) {
			nomem(p);
			return NULL;
		}
		struct hp_table nt = {ns, cap, 0, t->gen};
		for (size_t i = 0; i < t->cap; i++) {
			struct hp_slot *s = &t->slots[i];
			if (s->gen == t->gen) {
				*table_find(&nt, s->key, s->len, s->hash) = *s;
				nt.n++;
			}
		}
		ts_free(t->slots);
		*t = nt;
	}
	uint32_t h = hash_bytes(key, len);
	struct hp_slot *s = table_find(t, key, len, h);
	if (s->gen == t->gen)
		return s->val;
	*s = (struct hp_slot){key, len, h, t->gen, val};
	t->n++;
	return NULL;
}

static void table_free(struct hp_table *t)
{
	ts_free(t->slots);
	memset(t, 0, sizeof *t);
}

/* Keyword hash from the length and three bytes: O(1) per lookup; probing
 * sorts out the few collisions. */
static inline uint32_t kw_hash(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	return (uint32_t)len * 97u + u[0] * 31u + u[len - 1] * 7u + u[len / 2] * 131u;
}

static void kw_add(struct hp_parser *p, const char *s, int op, int type, int attr)
{
	uint32_t len = (uint32_t)strlen(s);
	TS_ASSERT(len > 0 && len <= HP_KW_MAX_LEN);
	for (uint32_t i = kw_hash(s, len) & (HP_KW_CAP - 1);;
	     i = (i + 1) & (HP_KW_CAP - 1)) {
		struct hp_kw *k = &p->kw[i];
		if (!k->s)
			*k = (struct hp_kw){s, len, 0, 0, 0};
		else if (k->len != len || memcmp(k->s, s, len) != 0)
			continue;
		if (op)
			k->op = (uint16_t)op;
		if (type)
			k->type = (uint8_t)type;
		if (attr)
			k->attr = (uint8_t)attr;
		return;
	}
}

static const struct hp_kw *kw_get(const struct hp_parser *p, const char *s,
				  size_t len)
{
	if (len == 0 || len > HP_KW_MAX_LEN)
		return NULL;
	for (uint32_t i = kw_hash(s, len) & (HP_KW_CAP - 1);;
	     i = (i + 1) & (HP_KW_CAP - 1)) {
		const struct hp_kw *k = &p->kw[i];
		if (!k->s)
			return NULL;
		if (k->len == len && same_bytes(k->s, s, len))
			return k;
	}
}

static void kw_init(struct hp_parser *p)
{
	_Static_assert(IR_OP_COUNT + IR_TYPE_COUNT + A_COUNT +
			       TS_ARRAY_LEN(cost_free_attrs) < HP_KW_CAP * 3 / 4,
		       "keyword table too small");
	_Static_assert(IR_OP_COUNT <= UINT16_MAX && IR_TYPE_COUNT <= UINT8_MAX &&
			       A_COUNT <= UINT8_MAX,
		       "keyword fields too narrow");
	for (int op = IR_OP_INVALID + 1; op < IR_OP_COUNT; op++)
		kw_add(p, ir_op_name((enum ir_op)op), op, 0, 0);
	for (int t = IR_TYPE_INVALID + 1; t < IR_TYPE_TUPLE; t++)
		kw_add(p, ir_type_name((enum ir_type)t), 0, t, 0);
	for (int a = A_NONE + 1; a < A_COST_FREE; a++)
		kw_add(p, attr_names[a], 0, 0, a);
	for (size_t i = 0; i < TS_ARRAY_LEN(cost_free_attrs); i++)
		kw_add(p, cost_free_attrs[i], 0, 0, A_COST_FREE);
}

/* Records a skipped attribute name tpusim does not know (the CLI prints a
 * note per distinct name); false only when the arena is exhausted. */
static bool note_unknown_attr(struct hp_parser *p, const char *s, size_t n)
{
	struct ir_module *m = p->m;
	for (int i = 0; i < m->n_unknown_attrs; i++) {
		struct ir_unknown_attr *u = &m->unknown_attrs[i];
		if (strlen(u->name) == n && memcmp(u->name, s, n) == 0) {
			u->uses++;
			return true;
		}
	}
	if (m->n_unknown_attrs == IR_MAX_UNKNOWN_ATTRS)
		return true;
	struct ir_unknown_attr *u = &m->unknown_attrs[m->n_unknown_attrs];
	u->name = ts_arena_strndup(&m->arena, s, n);
	if (!u->name)
		return false;
	locate(p, s, &u->line, &u->col);
	u->uses = 1;
	m->n_unknown_attrs++;
	return true;
}

/* ---- lexical layer -------------------------------------------------------- */

static inline int cur(const struct hp_parser *p)
{
	return p->p < p->end ? (unsigned char)*p->p : -1;
}

static inline int peek_at(const struct hp_parser *p, const char *q)
{
	return q < p->end ? (unsigned char)*q : -1;
}

/* Skips whitespace and comments from q; returns the first other byte. A
 * comment reading "// -----" is remembered as a module separator. */
static const char *skip_ws_from(struct hp_parser *p, const char *q)
{
	for (;;) {
		while (q < p->end && is_space((unsigned char)*q))
			q++;
		if (q + 1 >= p->end || *q != '/')
			return q;
		if (q[1] == '/') {
			const char *c = q + 2;
			while (c < p->end && (*c == ' ' || *c == '\t'))
				c++;
			if (p->end - c >= 5 && memcmp(c, "-----", 5) == 0 &&
			    q > p->last_sep)
				p->last_sep = q;
			/* to the end of the line: '\n', or '\r' alone (old
			 * Mac line ends, which XLA's lexer takes too) */
			const char *nl = q + 2;
			while (nl < p->end && *nl != '\n' && *nl != '\r')
				nl++;
			q = nl;
		} else if (q[1] == '*') {
			const char *c = q + 2;
			for (;;) {
				c = memchr(c, '*', (size_t)(p->end - c));
				if (!c || c + 1 >= p->end) {
					fail(p, q, "unterminated /* comment");
					return p->end;
				}
				if (c[1] == '/')
					break;
				c++;
			}
			q = c + 2;
		} else {
			return q;
		}
	}
}

/* skip_ws_from with the common cases inline: no blank, or one space. */
static inline const char *ws_end(struct hp_parser *p, const char *q)
{
	if (q < p->end) {
		if (!(char_class[(unsigned char)*q] & (CC_S | CC_SLASH)))
			return q;
		if (*q == ' ' && q + 1 < p->end &&
		    !(char_class[(unsigned char)q[1]] & (CC_S | CC_SLASH)))
			return q + 1;
	}
	return skip_ws_from(p, q);
}

static inline void skip_ws(struct hp_parser *p)
{
	p->p = ws_end(p, p->p);
}

/* Consumes c after optional whitespace. */
static bool accept(struct hp_parser *p, int c)
{
	skip_ws(p);
	if (cur(p) == c) {
		p->p++;
		return true;
	}
	return false;
}

static bool expect_char(struct hp_parser *p, int c, const char *what)
{
	if (accept(p, c))
		return true;
	return expected(p, what);
}

/* Length of the word [A-Za-z0-9_.-]* at q, not taking the '-' of "->". */
static inline size_t word_len(const struct hp_parser *p, const char *q)
{
	const char *s = q, *e = p->end;
	uint8_t k;
	while (q < e && ((k = char_class[(unsigned char)*q]) & CC_W)) {
		if ((k & CC_DASH) && q + 1 < e && q[1] == '>')
			break;
		q++;
	}
	return (size_t)(q - s);
}

/* A name: optional '%', then a word starting with a letter or '_' (a digit
 * too after '%'). Does not skip whitespace first. */
static bool read_name(struct hp_parser *p, const char **s, uint32_t *n)
{
	const char *q = p->p;
	bool pct = q < p->end && *q == '%';
	if (pct)
		q++;
	int c = peek_at(p, q);
	if (!(name_start(c) || (pct && is_digit(c))))
		return false;
	size_t len = word_len(p, q);
	if (len > UINT32_MAX)
		return fail(p, q, "name too long");
	*s = q;
	*n = (uint32_t)len;
	p->p = q + len;
	return true;
}

static bool word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* Signed decimal integer; overflow is an error. */
static bool read_int(struct hp_parser *p, int64_t *out)
{
	skip_ws(p);
	const char *start = p->p, *q = p->p;
	bool neg = q < p->end && *q == '-';
	if (neg)
		q++;
	if (!is_digit(peek_at(p, q)))
		return expected(p, "an integer");
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	const char *d0 = q;
	while (q < p->end && is_digit(*q))
		q++;
	if (q - d0 <= 18) { /* below 10^18: cannot overflow */
		for (const char *c = d0; c < q; c++)
			v = v * 10 + (unsigned)(*c - '0');
	} else {
		for (const char *c = d0; c < q; c++) {
			unsigned dgt = (unsigned)(*c - '0');
			if (v > (lim - dgt) / 10)
				return fail(p, start, "integer out of range");
			v = v * 10 + dgt;
		}
	}
	p->p = q;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* Skips a quoted string starting at q (on its quote); returns the byte after
 * the closing quote, or NULL (error set) when it is not closed. */
static const char *skip_string(struct hp_parser *p, const char *q)
{
	char quote = *q;
	const char *s = q + 1;
	for (;;) {
		const char *c = memchr(s, quote, (size_t)(p->end - s));
		if (!c) {
			fail(p, q, "unterminated string (opened at line %u)",
			     line_of(p, q));
			return NULL;
		}
		/* escaped when preceded by an odd run of backslashes */
		const char *b = c;
		while (b > q + 1 && b[-1] == '\\')
			b--;
		if (((c - b) & 1) == 0)
			return c + 1;
		s = c + 1;
	}
}

/*
 * Skips one balanced group starting at q (on '{', '(' or '['): all three
 * bracket kinds are counted together and must match; strings and comments
 * inside are skipped. Returns the byte after the closer, NULL on error.
 */
static const char *skip_group(struct hp_parser *p, const char *q)
{
	char stack[HP_MAX_DEPTH];
	const char *open_at[HP_MAX_DEPTH];
	int n = 0;
	const char *c = q;
	while (c < p->end) {
		switch (*c) {
		case '{':
		case '(':
		case '[':
			if (n + p->depth >= HP_MAX_DEPTH) {
				fail(p, c, "nesting deeper than %d levels",
				     HP_MAX_DEPTH);
				return NULL;
			}
			stack[n] = *c == '{' ? '}' : *c == '(' ? ')' : ']';
			open_at[n++] = c;
			c++;
			break;
		case '}':
		case ')':
		case ']':
			if (n == 0 || stack[n - 1] != *c) {
				if (n == 0)
					fail(p, c, "unexpected '%c'", *c);
				else
					fail(p, c,
					     "'%c' does not match '%c' opened at line %u",
					     *c, *open_at[n - 1],
					     line_of(p, open_at[n - 1]));
				return NULL;
			}
			c++;
			if (--n == 0)
				return c;
			break;
		case '"':
		case '\'':
			c = skip_string(p, c);
			if (!c)
				return NULL;
			break;
		case '/':
			if (c + 1 < p->end && (c[1] == '/' || c[1] == '*')) {
				c = skip_ws_from(p, c);
				if (p->st != TS_OK)
					return NULL;
			} else {
				c++;
			}
			break;
		default:
			c++;
		}
	}
	fail(p, p->end, "unexpected end of input: '%c' opened at line %u is not closed",
	     *open_at[n - 1], line_of(p, open_at[n - 1]));
	return NULL;
}

/* True when the text at q starts an instruction: "ROOT", or a name followed
 * (after optional whitespace) by '='. */
static bool starts_instr(struct hp_parser *p, const char *q)
{
	if (q >= p->end)
		return false;
	const char *s = q;
	bool pct = *s == '%';
	if (pct)
		s++;
	int c = peek_at(p, s);
	if (!(name_start(c) || (pct && is_digit(c))))
		return false;
	size_t n = word_len(p, s);
	if (!pct && word_is(s, n, "ROOT"))
		return true;
	const char *e = ws_end(p, s + n);
	return e < p->end && *e == '=' && (e + 1 >= p->end || e[1] != '=');
}

/*
 * Skips an attribute value by the atom rule (docs/HLO.md 1.10): atoms are
 * strings, balanced groups and plain token runs; the value ends at a depth-0
 * ',' or '}', or before whitespace followed by the start of the next
 * instruction. With glued_only, the value ends at the first whitespace
 * (module header and computation attributes).
 */
static bool skip_value(struct hp_parser *p, bool glued_only)
{
	int atoms = 0;
	for (;;) {
		const char *before = p->p;
		if (!glued_only || atoms == 0)
			skip_ws(p);
		if (p->st != TS_OK)
			return false;
		int c = cur(p);
		if (glued_only && atoms > 0 &&
		    (c < 0 || is_space(c) || skip_ws_from(p, p->p) != p->p))
			break;
		if (c < 0) {
			if (atoms)
				break;
			return expected(p, "an attribute value");
		}
		if (c == ',' || c == '}') {
			if (atoms)
				break;
			return expected(p, "an attribute value");
		}
		if (atoms && p->p != before && starts_instr(p, p->p))
			break;
		if (c == '{' || c == '(' || c == '[') {
			const char *e = skip_group(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == '"' || c == '\'') {
			const char *e = skip_string(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == ')' || c == ']') {
			return fail(p, p->p, "unexpected '%c'", c);
		} else {
			const char *q = p->p;
			while (q < p->end) {
				char ch = *q;
				if (is_space((unsigned char)ch) || ch == ',' ||
				    ch == '{' || ch == '}' || ch == '(' ||
				    ch == ')' || ch == '[' || ch == ']' ||
				    ch == '"' || ch == '\'')
					break;
				if (ch == '/' && q + 1 < p->end &&
				    (q[1] == '/' || q[1] == '*'))
					break;
				q++;
			}
			if (q == p->p) /* a lone '/' */
				q++;
			p->p = q;
		}
		atoms++;
	}
	return true;
}

/* Copies a quoted string (p->p on the quote) into the arena, resolving
 * backslash escapes. */
static bool read_string(struct hp_parser *p, const char **out)
{
	skip_ws(p);
	int q = cur(p);
	if (q != '"' && q != '\'')
		return expected(p, "a string");
	const char *s = p->p;
	const char *e = skip_string(p, s);
	if (!e)
		return false;
	size_t n = (size_t)(e - s) - 2;
	char *r = ts_arena_alloc(&p->m->arena, n + 1);
	if (!r)
		return nomem(p);
	size_t k = 0;
	for (const char *c = s + 1; c < e - 1; c++) {
		if (*c == '\\' && c + 1 < e - 1) {
			c++;
			r[k++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c;
		} else {
			r[k++] = *c;
		}
	}
	r[k] = '\0';
	p->p = e;
	*out = r;
	return true;
}

/* ---- shapes --------------------------------------------------------------- */

static bool parse_shape(struct hp_parser *p, struct ir_shape *out);

static bool enter(struct hp_parser *p)
{
	if (++p->depth > HP_MAX_DEPTH) {
		p->depth--;
		return fail(p, p->p, "nesting deeper than %d levels", HP_MAX_DEPTH);
	}
	return true;
}

/* One tile: '(' (INT|'*') (',' (INT|'*'))* ')'. */
static bool parse_tile(struct hp_parser *p, struct ir_tile *t)
{
	p->p++; /* '(' */
	t->rank = 0;
	for (;;) {
		skip_ws(p);
		int64_t v;
		const char *at = p->p;
		if (cur(p) == '*') {
			p->p++;
			v = IR_TILE_COMBINE;
		} else {
			if (!read_int(p, &v))
				return false;
			if (v <= 0)
				return fail(p, at, "malformed layout: tile dimension %lld must be positive",
					    (long long)v);
		}
		if (t->rank == IR_MAX_TILE_RANK)
			return fail(p, at, "malformed layout: tile has more than %d dimensions",
				    IR_MAX_TILE_RANK);
		t->dims[t->rank++] = v;
		if (accept(p, ')'))
			return true;
		if (!expect_char(p, ',', "',' or ')' in a tile"))
			return false;
	}
}

/* '(' INT ')' after a layout item letter. */
static bool parse_paren_int(struct hp_parser *p, int64_t *v, const char *item)
{
	skip_ws(p);
	if (cur(p) != '(')
		return fail(p, p->p, "malformed layout: expected '(' after %s", item);
	p->p++;
	if (!read_int(p, v))
		return false;
	return expect_char(p, ')', "')'");
}

static bool parse_layout(struct hp_parser *p, struct ir_shape *s)
{
	struct ts_arena *a = &p->m->arena;
	const char *open = p->p;
	p->p++; /* '{' */
	int m2m[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (is_digit(cur(p))) {
		for (;;) {
			int64_t v;
			const char *at = p->p;
			if (!read_int(p, &v))
				return false;
			if (n == HP_MAX_RANK)
				return fail(p, at, "malformed layout: too many dimensions");
			if (v < 0 || v >= s->rank)
				return fail(p, at,
					    "malformed layout: dimension %lld out of range for rank %d",
					    (long long)v, s->rank);
			for (int i = 0; i < n; i++)
				if (m2m[i] == v)
					return fail(p, at,
						    "malformed layout: dimension %lld repeated",
						    (long long)v);
			m2m[n++] = (int)v;
			if (!accept(p, ','))
				break;
		}
	}
	if (n != s->rank)
		return fail(p, open,
			    "malformed layout: %d dimensions for a shape of rank %d",
			    n, s->rank);
	struct ir_layout *l = &s->layout;
	l->present = true;
	if (n && !p->discard) {
		l->minor_to_major = ts_arena_array(a, (size_t)n, sizeof(int));
		if (!l->minor_to_major)
			return nomem(p);
		memcpy(l->minor_to_major, m2m, sizeof(int) * (size_t)n);
	}
	if (accept(p, ':')) {
		struct ir_tile tiles[16];
		int nt = 0;
		bool sparse = false;       /* a D(...) level other than D */
		const char *phys = NULL;   /* a P(shape) item */
		for (;;) {
			skip_ws(p);
			int c = cur(p);
			const char *at = p->p;
			int64_t v;
			if (c == '}' || c < 0)
				break;
			p->p++;
			if (c == 'T') {
				skip_ws(p);
				if (cur(p) != '(')
					return fail(p, p->p, "malformed layout: expected '(' after T");
				while (cur(p) == '(') {
					if (nt == (int)TS_ARRAY_LEN(tiles))
						return fail(p, p->p, "malformed layout: too many tiles");
					if (!parse_tile(p, &tiles[nt++]))
						return false;
					skip_ws(p);
				}
			} else if (c == 'L' || c == 'E' || c == 'M' ||
				   (c == 'S' && cur(p) != 'C')) {
				char item[2] = {(char)c, 0};
				if (!parse_paren_int(p, &v, item))
					return false;
				if (v < 0 || v > INT_MAX)
					return fail(p, at, "malformed layout: bad %c(%lld)",
						    c, (long long)v);
				if (c == 'L')
					l->tail_padding = v;
				else if (c == 'E')
					l->element_size_bits = (int)v;
				else if (c == 'S')
					l->memory_space = (int)v;
			} else if (c == 'D') {
				/* D(level, ...): D, C, S or H, each maybe followed
				 * by '+' (non-unique) or '~' (unordered) */
				if (!expect_char(p, '(', "'(' after D"))
					return false;
				for (;;) {
					skip_ws(p);
					int lv = cur(p);
					if (lv != 'D' && lv != 'C' && lv != 'S' && lv != 'H')
						return fail(p, p->p, "malformed layout: expected a "
								     "DimLevelType abbreviation (D, C, "
								     "S or H), got '%.*s'",
							    tok_len(p, p->p), p->p);
					sparse |= lv != 'D';
					p->p++;
					while (cur(p) == '+' || cur(p) == '~')
						p->p++;
					skip_ws(p);
					if (accept(p, ')'))
						break;
					if (!expect_char(p, ',', "',' or ')' in D(...)"))
						return false;
				}
			} else if (c == '#' || c == '*' || c == 'P' || c == 'S') {
				if (c == 'P')
					phys = at;
				if (c == 'S')
					p->p++; /* "SC" */
				skip_ws(p);
				if (cur(p) != '(')
					return fail(p, p->p, "malformed layout: expected '(' after %c", c);
				/* SC may repeat: SC(0:1)SC(1:2) */
				do {
					const char *e = skip_group(p, p->p);
					if (!e)
						return false;
					p->p = e;
				} while (c == 'S' && p->end - p->p >= 3 &&
					 memcmp(p->p, "SC(", 3) == 0 && (p->p += 2));
			} else {
				return fail(p, at, "malformed layout: unexpected '%c'", c);
			}
		}
		if (phys && !sparse)
			return fail(p, phys, "malformed layout: it has a physical shape, "
					     "but is not for a sparse array");
		if (nt && !p->discard) {
			l->tiles = ts_arena_array(a, (size_t)nt, sizeof *l->tiles);
			if (!l->tiles)
				return nomem(p);
			memcpy(l->tiles, tiles, sizeof *l->tiles * (size_t)nt);
			l->n_tiles = nt;
		}
	}
	skip_ws(p);
	if (cur(p) != '}')
		return expected(p, "'}' closing the layout");
	p->p++;
	return true;
}

/* True when the '{' at q opens a layout: the next token is an integer, ':'
 * or '}' (docs/HLO.md 1.3). */
static bool layout_follows(struct hp_parser *p)
{
	const char *q = ws_end(p, p->p);
	if (q >= p->end || *q != '{')
		return false;
	q = ws_end(p, q + 1);
	int c = peek_at(p, q);
	return is_digit(c) || c == ':' || c == '}';
}

/* Array shape after its type word (p->p after the word). */
static bool parse_array_shape(struct hp_parser *p, enum ir_type type,
			      struct ir_shape *out)
{
	struct ts_arena *a = &p->m->arena;
	int64_t dims[HP_MAX_RANK];
	uint8_t kinds[HP_MAX_RANK];
	bool dynamic = false;
	int n = 0;
	memset(out, 0, sizeof *out);
	out->type = type;
	const char *open = p->p;
	if (!expect_char(p, '[', "'[' after the element type"))
		return false;
	skip_ws(p);
	if (cur(p) != ']') {
		for (;;) {
			skip_ws(p);
			const char *at = p->p;
			int64_t v = 0;
			uint8_t k = IR_DIM_STATIC;
			if (cur(p) == '?') {
				p->p++;
				k = IR_DIM_UNBOUNDED;
			} else {
				if (cur(p) == '<' && peek_at(p, p->p + 1) == '=') {
					p->p += 2;
					k = IR_DIM_BOUNDED;
				}
				if (!read_int(p, &v))
					return false;
				if (v < 0)
					return fail(p, at, "malformed shape: negative dimension %lld",
						    (long long)v);
			}
			if (n == HP_MAX_RANK)
				return fail(p, at, "malformed shape: more than %d dimensions",
					    HP_MAX_RANK);
			dynamic |= k != IR_DIM_STATIC;
			dims[n] = v;
			kinds[n++] = k;
			skip_ws(p);
			if (cur(p) == ']')
				break;
			if (cur(p) != ',')
				return expected(p, "',' or ']' in the dimensions");
			p->p++;
		}
	}
	p->p++; /* ']' */
	if (type == IR_TYPE_TOKEN && n)
		return fail(p, p->p - 1, "malformed shape: token has dimensions");
	/* Element count and byte size must fit in 63 bits: anything larger
	 * is no array a machine holds, and every later product would
	 * overflow. */
	int64_t elems = 1;
	for (int i = 0; i < n; i++)
		if (__builtin_mul_overflow(elems, dims[i], &elems))
			return fail(p, open, "shape too large: its element count "
					     "overflows 63 bits");
	int64_t bits;
	if (__builtin_mul_overflow(elems, (int64_t)ir_type_bits(type), &bits))
		return fail(p, open, "shape too large: %lld elements of %d bits "
				     "exceed 2^60 bytes",
			    (long long)elems, ir_type_bits(type));
	p->shape_bytes = bits / 8 + (bits % 8 != 0);
	out->rank = n;
	if (p->discard) {
		p->decl_type = type;
		p->decl_rank = n;
		p->decl_dynamic = dynamic;
		memcpy(p->decl_dims, dims, sizeof *dims * (size_t)n);
	}
	if (n && !p->discard) {
		out->dims = ts_arena_array(a, (size_t)n, sizeof *out->dims);
		if (!out->dims)
			return nomem(p);
		memcpy(out->dims, dims, sizeof *dims * (size_t)n);
		if (dynamic) {
			out->dim_kind = ts_arena_alloc(a, (size_t)n);
			if (!out->dim_kind)
				return nomem(p);
			memcpy(out->dim_kind, kinds, (size_t)n);
		}
	}
	if (layout_follows(p)) {
		skip_ws(p);
		return parse_layout(p, out);
	}
	return true;
}

/* Shape whose first word (type name or "b") has already been read:
 * [ws, wn) is that word and p->p is after it. */
static bool parse_shape_after_word(struct hp_parser *p, const char *ws,
				   size_t wn, struct ir_shape *out)
{
	if (wn == 1 && *ws == 'b') {
		/* b(shape): a buffer, costed as its inner shape */
		if (!expect_char(p, '(', "'(' after b"))
			return false;
		if (!parse_shape(p, out))
			return false;
		return expect_char(p, ')', "')' closing b(...)");
	}
	const struct hp_kw *k = kw_get(p, ws, wn);
	if (!k || !k->type)
		return fail(p, ws, "expected a shape, got '%.*s'",
			    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
	return parse_array_shape(p, (enum ir_type)k->type, out);
}

static bool parse_shape(struct hp_parser *p, struct ir_shape *out)
{
	skip_ws(p);
	memset(out, 0, sizeof *out);
	p->shape_bytes = 0;
	if (cur(p) == '(') {
		if (!enter(p))
			return false;
		const char *open = p->p;
		p->p++;
		size_t base = p->shapes.n;
		int64_t bytes = 0; /* the tuple's, like an array's, fit 63 bits */
		skip_ws(p);
		if (cur(p) != ')') {
			for (;;) {
				struct ir_shape e;
				if (!parse_shape(p, &e))
					return false;
				if (__builtin_add_overflow(bytes, p->shape_bytes,
							   &bytes))
					return fail(p, open,
						    "shape too large: the tuple's "
						    "elements take 2^63 bytes or "
						    "more");
				struct ir_shape *slot =
					vec_push(p, &p->shapes, sizeof *slot);
				if (!slot)
					return false;
				*slot = e;
				skip_ws(p);
				if (cur(p) == ')')
					break;
				if (cur(p) != ',')
					return expected(p, "',' or ')' in a tuple shape");
				p->p++;
			}
		}
		p->p++; /* ')' */
		size_t n = p->shapes.n - base;
		if (n > INT_MAX)
			return fail(p, p->p, "tuple too large");
		out->type = IR_TYPE_TUPLE;
		out->n_elems = (int)n;
		if (n && !p->discard) {
			out->elems = ts_arena_array(&p->m->arena, n, sizeof *out->elems);
			if (!out->elems)
				return nomem(p);
			memcpy(out->elems, (struct ir_shape *)p->shapes.v + base,
			       n * sizeof *out->elems);
		}
		p->shapes.n = base;
		p->depth--;
		p->shape_bytes = bytes;
		p->decl_type = IR_TYPE_TUPLE;
		return true;
	}
	const char *ws = p->p;
	size_t wn = word_len(p, ws);
	if (wn == 0)
		return expected(p, "a shape");
	p->p += wn;
	if (!enter(p))
		return false;
	bool ok = parse_shape_after_word(p, ws, wn, out);
	p->depth--;
	return ok;
}

/* ---- attribute values ---------------------------------------------------- */

static bool finish_ints(struct hp_parser *p, const int64_t *v, int n,
			struct ir_ints *out)
{
	out->n = n;
	out->v = NULL;
	if (!n)
		return true;
	out->v = ts_arena_array(&p->m->arena, (size_t)n, sizeof *v);
	if (!out->v)
		return nomem(p);
	memcpy(out->v, v, sizeof *v * (size_t)n);
	return true;
}

/* '{' [INT (',' INT)*] '}' */
static bool parse_int_list(struct hp_parser *p, struct ir_ints *out,
			   const char *attr)
{
	int64_t v[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (cur(p) != '{')
		return fail(p, p->p, "bad value for attribute '%s': expected '{'", attr);
	p->p++;
	if (!accept(p, '}')) {
		for (;;) {
			skip_ws(p);
			const char *at = p->p;
			if (n == HP_MAX_RANK)
				return fail(p, at, "bad value for attribute '%s': more than %d entries",
					    attr, HP_MAX_RANK);
			if (!is_digit(cur(p)) && cur(p) != '-')
				return fail(p, at, "bad value for attribute '%s': expected an integer",
					    attr);
			if (!read_int(p, &v[n++]))
				return false;
			if (accept(p, '}'))
				break;
			if (!accept(p, ','))
				return fail(p, p->p, "bad value for attribute '%s': expected ',' or '}'",
					    attr);
		}
	}
	return finish_ints(p, v, n, out);
}

/* A zeroed block from the module arena for an attribute, allocated the first
 * time the attribute is seen; NULL (out-of-memory error recorded) on failure. */
static void *attr_block(struct hp_parser *p, size_t size)
{
	void *b = ts_arena_alloc(&p->m->arena, size);
	if (!b)
		nomem(p);
	return b;
}

static struct ir_ints *new_ints(struct hp_parser *p, struct ir_ints **slot)
{
	if (!*slot)
		*slot = attr_block(p, sizeof **slot);
	return *slot;
}

static bool parse_int_attr(struct hp_parser *p, int64_t *out, const char *attr)
{
	skip_ws(p);
	if (!is_digit(cur(p)) && cur(p) != '-')
		return fail(p, p->p, "bad value for attribute '%s': expected an integer",
			    attr);
	return read_int(p, out);
}

/* An integer attribute that must be >= 1 (feature/batch group counts). */
static bool parse_positive_attr(struct hp_parser *p, int64_t *out,
				const char *attr)
{
	if (!parse_int_attr(p, out, attr))
		return false;
	if (*out < 1)
		return fail(p, p->p, "bad value for attribute '%s': must be positive", attr);
	return true;
}

/* DxD list "3x3x1" (or "2" for one dimension); n entries into v. */
static bool parse_dxd(struct hp_parser *p, int64_t *v, int *n, const char *what)
{
	*n = 0;
	for (;;) {
		const char *at = p->p;
		if (!is_digit(cur(p)) && cur(p) != '-')
			return fail(p, at, "bad window %s: expected an integer", what);
		if (*n == HP_MAX_RANK)
			return fail(p, at, "bad window %s: too many dimensions", what);
		if (!read_int(p, &v[(*n)++]))
			return false;
		if (cur(p) != 'x')
			return true;
		p->p++;
	}
}

/* lo_hi[_interior] x ... (pad tokens); interior optional. */
static bool parse_pad_list(struct hp_parser *p, int64_t (*v)[3], int *n,
			   bool allow_interior, const char *what)
{
	*n = 0;
	for (;;) {
		const char *at = p->p;
		if (*n == HP_MAX_RANK)
			return fail(p, at, "bad %s: too many dimensions", what);
		int64_t *d = v[(*n)++];
		d[2] = 0;
		for (int k = 0; k < 3; k++) {
			if (!is_digit(cur(p)) && cur(p) != '-')
				return fail(p, p->p, "bad %s: expected an integer", what);
			if (!read_int(p, &d[k]))
				return false;
			if (k == 2 || cur(p) != '_') {
				if (k == 0)
					return fail(p, p->p, "bad %s: expected '_'", what);
				break;
			}
			if (k == 1 && !allow_interior)
				return fail(p, p->p, "bad %s: unexpected '_'", what);
			p->p++;
		}
		if (cur(p) != 'x')
			return true;
		p->p++;
	}
}

/* window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..} */
static bool parse_window(struct hp_parser *p, struct ir_window **out)
{
	enum { W_SIZE, W_STRIDE, W_PAD, W_LHS, W_RHS, W_REV, W_COUNT };
	static const char *const names[W_COUNT] = {
		"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"};
	int64_t v[W_COUNT][HP_MAX_RANK];
	int64_t pad[HP_MAX_RANK][3];
	int cnt[W_COUNT] = {0};
	bool seen[W_COUNT] = {false};
	skip_ws(p);
	const char *open = p->p;
	if (cur(p) != '{')
		return fail(p, p->p, "bad value for attribute 'window': expected '{'");
	p->p++;
	for (;;) {
		skip_ws(p);
		if (cur(p) == '}')
			break;
		if (cur(p) == ',') {
			p->p++;
			continue;
		}
		const char *ks = p->p;
		size_t kn = word_len(p, ks);
		int f = W_COUNT;
		for (int i = 0; i < W_COUNT; i++)
			if (word_is(ks, kn, names[i]))
				f = i;
		if (f == W_COUNT)
			return fail(p, ks, "bad value for attribute 'window': unknown field '%.*s'",
				    (int)(kn ? (kn > HP_MSG_TOK ? HP_MSG_TOK : kn) : 1), ks);
		p->p += kn;
		if (!expect_char(p, '=', "'=' after the window field"))
			return false;
		skip_ws(p);
		seen[f] = true;
		if (f == W_PAD) {
			if (!parse_pad_list(p, pad, &cnt[f], false, "window pad"))
				return false;
		} else if (!parse_dxd(p, v[f], &cnt[f], names[f])) {
			return false;
		}
	}
	p->p++; /* '}' */
	int n = cnt[W_SIZE];
	if (!seen[W_SIZE] && (seen[W_STRIDE] || seen[W_PAD] || seen[W_LHS] ||
			      seen[W_RHS] || seen[W_REV]))
		return fail(p, open, "bad value for attribute 'window': no size");
	for (int f = 1; f < W_COUNT; f++)
		if (seen[f] && cnt[f] != n)
			return fail(p, open,
				    "bad value for attribute 'window': %s has %d dimensions, size has %d",
				    names[f], cnt[f], n);
	struct ts_arena *a = &p->m->arena;
	struct ir_window *w = ts_arena_alloc(a, sizeof *w);
	if (!w)
		return nomem(p);
	w->n = n;
	if (n) {
		w->dims = ts_arena_array(a, (size_t)n, sizeof *w->dims);
		if (!w->dims)
			return nomem(p);
	}
	for (int i = 0; i < n; i++) {
		struct ir_window_dim *d = &w->dims[i];
		d->size = v[W_SIZE][i];
		d->stride = seen[W_STRIDE] ? v[W_STRIDE][i] : 1;
		d->pad_lo = seen[W_PAD] ? pad[i][0] : 0;
		d->pad_hi = seen[W_PAD] ? pad[i][1] : 0;
		d->lhs_dilate = seen[W_LHS] ? v[W_LHS][i] : 1;
		d->rhs_dilate = seen[W_RHS] ? v[W_RHS][i] : 1;
		d->reversal = seen[W_REV] && v[W_REV][i] != 0;
		if (d->size < 0 || d->stride < 1 || d->lhs_dilate < 1 ||
		    d->rhs_dilate < 1)
			return fail(p, open, "bad value for attribute 'window': dimension %d out of range",
				    i);
	}
	*out = w;
	return true;
}

/* Bytes of the dim_labels value at s ("b01f_01io->b01f"): label
 * characters, '_' and "->". */
static int labels_len(const struct hp_parser *p, const char *s)
{
	const char *q = s;
	while (q < p->end && (is_alpha(*q) || is_digit(*q) || *q == '?' ||
			      *q == '_' || *q == '-' || *q == '>') &&
	       q - s < HP_MSG_TOK)
		q++;
	return (int)(q - s);
}

/* One part of dim_labels: letters a and b plus spatial digits, each at
 * most once. Fills pos_a, pos_b (-1 when absent), spatial[digit] =
 * position and n_spatial = largest digit + 1; labels_complete() checks
 * that nothing is missing. */
static bool parse_labels(struct hp_parser *p, char la, char lb, int *pos_a,
			 int *pos_b, int *spatial, int *n_spatial,
			 const char *start)
{
	int pos = 0, maxd = -1, len = 0;
	*pos_a = *pos_b = -1;
	for (int i = 0; i < 10; i++)
		spatial[i] = -1;
	while (p->p + len < p->end && (is_alpha(p->p[len]) ||
				       is_digit(p->p[len]) || p->p[len] == '?'))
		len++;
	while (p->p < p->end &&
	       (is_alpha(*p->p) || is_digit(*p->p) || *p->p == '?')) {
		char c = *p->p;
		/* XLA: a part of n labels holds digits below n, its two
		 * letters and '?' */
		if (is_digit(c) && c - '0' >= len)
			return fail(p, p->p, "bad dim_labels '%.*s': expects "
					     "[0-%d%c%c?], got '%c'",
				    labels_len(p, start), start, len - 1, la, lb, c);
		if (c == '?')
			; /* a dimension without a role (XLA accepts it) */
		else if (c == la && *pos_a < 0)
			*pos_a = pos;
		else if (c == lb && *pos_b < 0)
			*pos_b = pos;
		else if (is_digit(c) && spatial[c - '0'] < 0) {
			spatial[c - '0'] = pos;
			if (c - '0' > maxd)
				maxd = c - '0';
		} else if (c == la || c == lb || is_digit(c))
			return fail(p, p->p, "bad dim_labels '%.*s': '%c' repeated "
					     "(labels must be unique)",
				    labels_len(p, start), start, c);
		else
			return fail(p, p->p, "bad dim_labels '%.*s': unexpected '%c'",
				    labels_len(p, start), start, c);
		pos++;
		p->p++;
	}
	*n_spatial = maxd + 1;
	return true;
}

static bool labels_complete(struct hp_parser *p, const char *start, char la,
			    char lb, int pos_a, int pos_b, const int *spatial,
			    int n_spatial)
{
	if (pos_a < 0 || pos_b < 0)
		return fail(p, start, "bad dim_labels '%.*s': missing '%c' or '%c'",
			    labels_len(p, start), start, la, lb);
	for (int i = 0; i < n_spatial; i++)
		if (spatial[i] < 0)
			return fail(p, start, "bad dim_labels '%.*s': spatial dimension %d missing",
				    labels_len(p, start), start, i);
	return true;
}

/* dim_labels=b01f_01io->b01f */
static bool parse_dim_labels(struct hp_parser *p, struct ir_conv_dims **out)
{
	skip_ws(p);
	const char *start = p->p;
	int ls[10], rs[10], os[10], nl, nr, no;
	struct ir_conv_dims c = {0};
	if (!parse_labels(p, 'b', 'f', &c.lhs_batch, &c.lhs_feature, ls, &nl, start))
		return false;
	if (cur(p) != '_')
		return fail(p, p->p, "bad dim_labels: expected '_'");
	p->p++;
	if (!parse_labels(p, 'i', 'o', &c.rhs_in, &c.rhs_out, rs, &nr, start))
		return false;
	if (p->end - p->p < 2 || p->p[0] != '-' || p->p[1] != '>')
		return fail(p, p->p, "bad dim_labels: expected '->'");
	p->p += 2;
	if (!parse_labels(p, 'b', 'f', &c.out_batch, &c.out_feature, os, &no, start))
		return false;
	if (nl != nr || nl != no)
		return fail(p, start, "bad dim_labels '%.*s': input, kernel and output "
				      "must have same number of spatial dimensions "
				      "(%d, %d, %d)", labels_len(p, start), start, nl, nr, no);
	if (!labels_complete(p, start, 'b', 'f', c.lhs_batch, c.lhs_feature, ls, nl) ||
	    !labels_complete(p, start, 'i', 'o', c.rhs_in, c.rhs_out, rs, nr) ||
	    !labels_complete(p, start, 'b', 'f', c.out_batch, c.out_feature, os, no))
		return false;
	c.n_spatial = nl;
	struct ts_arena *a = &p->m->arena;
	struct ir_conv_dims *r = ts_arena_alloc(a, sizeof *r);
	if (!r)
		return nomem(p);
	*r = c;
	if (nl) {
		r->lhs_spatial = ts_arena_array(a, (size_t)nl, sizeof(int));
		r->rhs_spatial = ts_arena_array(a, (size_t)nl, sizeof(int));
		r->out_spatial = ts_arena_array(a, (size_t)nl, sizeof(int));
		if (!r->lhs_spatial || !r->rhs_spatial || !r->out_spatial)
			return nomem(p);
		memcpy(r->lhs_spatial, ls, sizeof(int) * (size_t)nl);
		memcpy(r->rhs_spatial, rs, sizeof(int) * (size_t)nl);
		memcpy(r->out_spatial, os, sizeof(int) * (size_t)nl);
	}
	*out = r;
	return true;
}

/* slice={[a:b], [a:b:s], ...} */
static bool parse_slice(struct hp_parser *p, struct ir_slice **out)
{
	struct ir_slice_dim dims[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (cur(p) != '{')
		return fail(p, p->p, "bad value for attribute 'slice': expected '{'");
	p->p++;
	if (!accept(p, '}')) {
		for (;;) {
			skip_ws(p);
			if (n == HP_MAX_RANK)
				return fail(p, p->p, "bad value for attribute 'slice': too many dimensions");
			if (cur(p) != '[')
				return fail(p, p->p, "bad value for attribute 'slice': expected '['");
			p->p++;
			struct ir_slice_dim *d = &dims[n++];
			d->stride = 1;
			if (!read_int(p, &d->start) || !expect_char(p, ':', "':'") ||
			    !read_int(p, &d->limit))
				return false;
			if (accept(p, ':') && !read_int(p, &d->stride))
				return false;
			if (!expect_char(p, ']', "']'"))
				return false;
			if (accept(p, '}'))
				break;
			if (!expect_char(p, ',', "',' or '}' in slice"))
				return false;
		}
	}
	struct ts_arena *a = &p->m->arena;
	struct ir_slice *s = ts_arena_alloc(a, sizeof *s);
	if (!s)
		return nomem(p);
	s->n = n;
	if (n) {
		s->dims = ts_arena_array(a, (size_t)n, sizeof *s->dims);
		if (!s->dims)
			return nomem(p);
		memcpy(s->dims, dims, sizeof *dims * (size_t)n);
	}
	*out = s;
	return true;
}

/* padding=0_1x2_3_1 */
static bool parse_padding(struct hp_parser *p, struct ir_padding **out)
{
	int64_t v[HP_MAX_RANK][3];
	int n = 0;
	skip_ws(p);
	if (is_digit(cur(p)) || cur(p) == '-') {
		if (!parse_pad_list(p, v, &n, true, "padding"))
			return false;
	}
	struct ts_arena *a = &p->m->arena;
	struct ir_padding *r = ts_arena_alloc(a, sizeof *r);
	if (!r)
		return nomem(p);
	r->n = n;
	if (n) {
		r->dims = ts_arena_array(a, (size_t)n, sizeof *r->dims);
		if (!r->dims)
			return nomem(p);
	}
	for (int i = 0; i < n; i++)
		r->dims[i] = (struct ir_pad_dim){v[i][0], v[i][1], v[i][2]};
	*out = r;
	return true;
}

/*
 * replica_groups: {} (all devices: 0), {{0,1},{2,3}} (size of the first
 * group), iota [G,S]<=[N] (S); the mesh form and anything else are skipped
 * and leave 0 (unknown).
 */
static bool parse_replica_groups(struct hp_parser *p, int64_t *size)
{
	skip_ws(p);
	*size = 0;
	if (cur(p) == '{') {
		p->p++;
		if (accept(p, '}'))
			return true;
		bool first = true;
		for (;;) {
			struct ir_ints g;
			if (!parse_int_list(p, &g, "replica_groups"))
				return false;
			if (first)
				*size = g.n;
			first = false;
			if (accept(p, '}'))
				return true;
			if (!accept(p, ','))
				return fail(p, p->p, "bad value for attribute 'replica_groups': expected ',' or '}'");
		}
	}
	if (cur(p) == '[') {
		p->p++;
		int64_t last = 0;
		for (;;) {
			if (!read_int(p, &last))
				return false;
			if (accept(p, ']'))
				break;
			if (!accept(p, ','))
				return fail(p, p->p, "bad value for attribute 'replica_groups': expected ',' or ']'");
		}
		*size = last;
		/* "<=[N]" and an optional "T(...)" follow */
		return cur(p) == '<' ? skip_value(p, false) : true;
	}
	return skip_value(p, false);
}

static bool parse_precision(struct hp_parser *p, enum ir_precision *prec)
{
	skip_ws(p);
	if (cur(p) != '{')
		return fail(p, p->p, "bad value for attribute 'operand_precision': expected '{'");
	p->p++;
	int n = 0;
	if (accept(p, '}'))
		return true;
	for (;;) {
		skip_ws(p);
		const char *s = p->p;
		size_t len = word_len(p, s);
		enum ir_precision v;
		if (word_is(s, len, "default") || word_is(s, len, "DEFAULT") ||
		    word_is(s, len, "packed_nibble") ||
		    word_is(s, len, "PACKED_NIBBLE"))
			v = IR_PRECISION_DEFAULT;
		else if (word_is(s, len, "high") || word_is(s, len, "HIGH"))
			v = IR_PRECISION_HIGH;
		else if (word_is(s, len, "highest") || word_is(s, len, "HIGHEST"))
			v = IR_PRECISION_HIGHEST;
		else
			return fail(p, s, "bad value for attribute 'operand_precision': '%.*s'",
				    tok_len(p, s), s);
		p->p += len;
		if (n < 2)
			prec[n] = v;
		n++;
		if (accept(p, '}'))
			return true;
		if (!accept(p, ','))
			return fail(p, p->p, "bad value for attribute 'operand_precision': expected ',' or '}'");
	}
}

/* metadata={op_type="..." op_name="..." ...}: keeps op_name. */
static bool parse_metadata(struct hp_parser *p, const char **op_name)
{
	skip_ws(p);
	if (cur(p) != '{')
		return skip_value(p, false);
	const char *open = p->p;
	p->p++;
	for (;;) {
		skip_ws(p);
		int c = cur(p);
		if (c == '}') {
			p->p++;
			return true;
		}
		if (c < 0)
			return fail(p, p->end, "unexpected end of input: '{' opened at line %u is not closed",
				    line_of(p, open));
		if (c == ',') {
			p->p++;
			continue;
		}
		const char *ks = p->p;
		size_t kn = word_len(p, ks);
		if (!kn)
			return fail(p, ks, "bad value for attribute 'metadata': unexpected '%c'", c);
		p->p += kn;
		if (!expect_char(p, '=', "'=' in metadata"))
			return false;
		skip_ws(p);
		c = cur(p);
		if (word_is(ks, kn, "op_name") && (c == '"' || c == '\'')) {
			if (!read_string(p, op_name))
				return false;
		} else if (c == '"' || c == '\'') {
			const char *e = skip_string(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == '{' || c == '(' || c == '[') {
			const char *e = skip_group(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else {
			size_t n = word_len(p, p->p);
			if (!n)
				return fail(p, p->p, "bad value for attribute 'metadata': unexpected '%c'",
					    c < 0 ? ' ' : c);
			p->p += n;
		}
	}
}

/* Finds key in [s, e); returns the byte after it or NULL. */
static const char *find_key(const char *s, const char *e, const char *key)
{
	size_t n = strlen(key);
	while (s < e && (size_t)(e - s) >= n) {
		const char *c = memchr(s, key[0], (size_t)(e - s) - n + 1);
		if (!c)
			return NULL;
		if (memcmp(c, key, n) == 0)
			return c + n;
		s = c + 1;
	}
	return NULL;
}

/* Integers inside the first [...] after key (quotes and escapes ignored). */
static bool bounds_list(struct hp_parser *p, const char *s, const char *e,
			const char *key, struct ir_ints *out)
{
	const char *c = find_key(s, e, key);
	if (!c)
		return true;
	while (c < e && *c != '[' && *c != ',' && *c != '}')
		c++;
	if (c >= e || *c != '[')
		return true;
	c++;
	int64_t v[HP_MAX_RANK];
	int n = 0;
	while (c < e && *c != ']' && n < HP_MAX_RANK) {
		if (is_digit(*c)) {
			int64_t x = 0;
			while (c < e && is_digit(*c)) {
				if (x < INT64_MAX / 10)
					x = x * 10 + (*c - '0');
				c++;
			}
			v[n++] = x;
		} else {
			c++;
		}
	}
	return finish_ints(p, v, n, out);
}

static struct ir_dot_dims *dot_of(struct hp_parser *p, struct ir_attrs *a);

/* operand_precision [\"DEFAULT\",\"HIGHEST\"] inside a backend_config
 * (cuBLAS gemm precision_config): the first two words, as the attribute. */
static void config_precision(const char *s, const char *e,
			     enum ir_precision prec[2])
{
	const char *c = find_key(s, e, "operand_precision");
	if (!c)
		return;
	while (c < e && *c != '[' && *c != '}')
		c++;
	for (int n = 0; c < e && *c != ']' && n < 2;) {
		if (!(*c >= 'A' && *c <= 'Z')) {
			c++;
			continue;
		}
		const char *w = c;
		while (c < e && *c >= 'A' && *c <= 'Z')
			c++;
		size_t len = (size_t)(c - w);
		prec[n++] = word_is(w, len, "HIGHEST") ? IR_PRECISION_HIGHEST
			    : word_is(w, len, "HIGH")  ? IR_PRECISION_HIGH
						       : IR_PRECISION_DEFAULT;
	}
}

/*
 * backend_config: a string (escaped JSON) or a raw {...}. Looked inside for
 * known_trip_count {"n":"10"}, the TPU window_config bounds and, on a
 * custom-call (a cuBLAS gemm), dot_dimension_numbers and the operand
 * precision: kept as the call's dot attributes unless it has its own.
 */
static bool parse_backend_config(struct hp_parser *p, struct ir_attrs *at,
				 bool custom_call)
{
	skip_ws(p);
	const char *s = p->p, *e;
	int c = cur(p);
	if (c == '"' || c == '\'')
		e = skip_string(p, s);
	else if (c == '{')
		e = skip_group(p, s);
	else
		return skip_value(p, false);
	if (!e)
		return false;
	p->p = e;
	const char *k = find_key(s, e, "known_trip_count");
	if (k) {
		while (k < e && !is_digit(*k) && *k != '}')
			k++;
		if (k < e && is_digit(*k)) {
			int64_t x = 0;
			while (k < e && is_digit(*k) && x < INT64_MAX / 10)
				x = x * 10 + (*k++ - '0');
			at->known_trip_count = x;
		}
	}
	const char *wc = find_key(s, e, "window_config");
	if (wc) {
		if (!bounds_list(p, wc, e, "output_window_bounds",
				 &at->window_output_bounds) ||
		    !bounds_list(p, wc, e, "kernel_window_bounds",
				 &at->window_kernel_bounds))
			return false;
	}
	const char *dn = custom_call && !at->dot
				 ? find_key(s, e, "dot_dimension_numbers")
				 : NULL;
	if (dn) {
		struct ir_dot_dims *dd = dot_of(p, at);
		if (!dd ||
		    !bounds_list(p, dn, e, "lhs_contracting_dimensions",
				 &dd->lhs_contracting) ||
		    !bounds_list(p, dn, e, "rhs_contracting_dimensions",
				 &dd->rhs_contracting) ||
		    !bounds_list(p, dn, e, "lhs_batch_dimensions",
				 &dd->lhs_batch) ||
		    !bounds_list(p, dn, e, "rhs_batch_dimensions",
				 &dd->rhs_batch))
			return false;
		config_precision(s, e, at->precision);
	}
	return true;
}

/* ---- computations and instructions --------------------------------------- */

static bool parse_computation(struct hp_parser *p, bool inline_body,
			      const char *gen_name, struct ir_computation **out);

/* A computation reference: name (optional '%') or an inline body. */
static bool parse_comp_ref(struct hp_parser *p, int rank, struct ir_instr *in,
			   const char *attr)
{
	skip_ws(p);
	struct hp_call *call = vec_push(p, &p->calls, sizeof *call);
	if (!call)
		return false;
	size_t idx = p->calls.n - 1;
	*call = (struct hp_call){rank, NULL, 0, p->p, NULL};
	if (cur(p) == '{') {
		/* "comp/instr/attr", plus a number unique within the instruction
		 * for the entries of a list attribute */
		char name[256];
		if (rank == CR_BRANCHES || rank == CR_CALLED)
			snprintf(name, sizeof name, "%s/%s/%s.%zu", in->parent->name,
				 in->name, attr, idx);
		else
			snprintf(name, sizeof name, "%s/%s/%s", in->parent->name,
				 in->name, attr);
		struct ir_computation *c;
		if (!enter(p))
			return false;
		bool ok = parse_computation(p, true, name, &c);
		p->depth--;
		if (!ok)
			return false;
		((struct hp_call *)p->calls.v)[idx].comp = c;
		return true;
	}
	const char *s;
	uint32_t n;
	if (!read_name(p, &s, &n))
		return fail(p, p->p, "bad value for attribute '%s': expected a computation name",
			    attr);
	call = (struct hp_call *)p->calls.v + idx;
	call->name = s;
	call->len = n;
	return true;
}

/* {C1, C2, ...} */
static bool parse_comp_list(struct hp_parser *p, int rank, struct ir_instr *in,
			    const char *attr)
{
	skip_ws(p);
	if (cur(p) != '{')
		return fail(p, p->p, "bad value for attribute '%s': expected '{'", attr);
	p->p++;
	if (accept(p, '}'))
		return true;
	for (;;) {
		if (!parse_comp_ref(p, rank, in, attr))
			return false;
		if (accept(p, '}'))
			return true;
		if (!accept(p, ','))
			return fail(p, p->p, "bad value for attribute '%s': expected ',' or '}'",
				    attr);
	}
}

static bool parse_enum_word(struct hp_parser *p, const char *const *names,
			    int count, int *out, const char *attr)
{
	skip_ws(p);
	const char *s = p->p;
	size_t n = word_len(p, s);
	for (int i = 1; i < count; i++)
		if (word_is(s, n, names[i])) {
			*out = i;
			p->p += n;
			return true;
		}
	return fail(p, s, "bad value for attribute '%s': '%.*s'", attr,
		    tok_len(p, s), s);
}

static struct ir_gather_dims *gather_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->gather && (a->gather = attr_block(p, sizeof *a->gather)))
		a->gather->index_vector_dim = -1;
	return a->gather;
}

static struct ir_scatter_dims *scatter_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->scatter && (a->scatter = attr_block(p, sizeof *a->scatter)))
		a->scatter->index_vector_dim = -1;
	return a->scatter;
}

static struct ir_dot_dims *dot_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->dot)
		a->dot = attr_block(p, sizeof *a->dot);
	return a->dot;
}

static const char *const fusion_kind_words[] = {
	[IR_FUSION_NONE] = "",
	[IR_FUSION_LOOP] = "kLoop",
	[IR_FUSION_INPUT] = "kInput",
	[IR_FUSION_OUTPUT] = "kOutput",
	[IR_FUSION_CUSTOM] = "kCustom",
};
_Static_assert(TS_ARRAY_LEN(fusion_kind_words) == IR_FUSION_KIND_COUNT,
	       "fusion_kind_words must cover every kind");

static const char *const cmp_words[] = {
	[IR_CMP_NONE] = "", [IR_CMP_EQ] = "EQ", [IR_CMP_NE] = "NE",
	[IR_CMP_LT] = "LT", [IR_CMP_LE] = "LE", [IR_CMP_GT] = "GT",
	[IR_CMP_GE] = "GE",
};
_Static_assert(TS_ARRAY_LEN(cmp_words) == IR_CMP_COUNT,
	       "cmp_words must cover every direction");

/*
 * result_accuracy={mode=default|highest} or {tolerance={atol=X, rtol=X,
 * ulps=N}} (XLA: ParseResultAccuracy). It does not change the cost; a
 * malformed one is refused as XLA refuses it.
 */
static bool parse_result_accuracy(struct hp_parser *p)
{
	static const char *const modes[] = {"", "default", "highest"};
	static const char *const tols[] = {"atol", "rtol", "ulps"};
	if (!expect_char(p, '{', "'{' opening result_accuracy"))
		return false;
	skip_ws(p);
	const char *ws = p->p;
	size_t wn = word_len(p, ws);
	if (!wn || !name_start(*ws))
		return fail(p, ws, "bad result_accuracy: expects attribute name, got '%.*s'",
			    tok_len(p, ws), ws);
	p->p += wn;
	if (!expect_char(p, '=', "'=' after the attribute name"))
		return false;
	skip_ws(p);
	if (word_is(ws, wn, "mode")) {
		const char *vs = p->p;
		size_t vn = word_len(p, vs);
		if (!word_is(vs, vn, modes[1]) && !word_is(vs, vn, modes[2]))
			return fail(p, vs, "bad result_accuracy: expects ResultAccuracy "
					   "type but sees: %.*s", tok_len(p, vs), vs);
		p->p += vn;
	} else if (word_is(ws, wn, "tolerance")) {
		if (!expect_char(p, '{', "'{' opening the tolerance"))
			return false;
		for (skip_ws(p); cur(p) != '}';) {
			const char *ts = p->p;
			size_t tn = word_len(p, ts);
			size_t k = 0;
			while (k < TS_ARRAY_LEN(tols) && !word_is(ts, tn, tols[k]))
				k++;
			if (k == TS_ARRAY_LEN(tols))
				return fail(p, ts, "bad result_accuracy: invalid tolerance "
						   "field '%.*s'", tok_len(p, ts), ts);
			p->p += tn;
			if (!expect_char(p, '=', "'=' after the tolerance field"))
				return false;
			skip_ws(p);
			const char *vs = p->p;
			char *e = NULL;
			char buf[64];
			size_t vn = word_len(p, vs);
			if (vn && vn < sizeof buf) {
				memcpy(buf, vs, vn);
				buf[vn] = '\0';
				if (k == 2)
					(void)strtoll(buf, &e, 10);
				else
					(void)strtod(buf, &e);
			}
			if (!e || *e != '\0')
				return fail(p, vs, "bad result_accuracy: %s expects %s, got '%.*s'",
					    tols[k], k == 2 ? "an integer" : "a number",
					    tok_len(p, vs), vs);
			p->p += vn;
			skip_ws(p);
			if (!accept(p, ',') && cur(p) != '}')
				return expected(p, "',' or '}' in the tolerance");
			skip_ws(p);
		}
		p->p++;
	} else {
		return fail(p, ws, "bad result_accuracy: invalid attribute name '%.*s'",
			    tok_len(p, ws), ws);
	}
	skip_ws(p);
	return expect_char(p, '}', "'}' closing result_accuracy");
}

/* control-predecessors={%a, %b}: names of the same computation, resolved
 * with the operands (p->sink receives them: the order is not modelled). */
static bool parse_control_preds(struct hp_parser *p, struct hp_level *lv)
{
	if (!expect_char(p, '{', "'{' opening control-predecessors"))
		return false;
	skip_ws(p);
	if (accept(p, '}'))
		return true;
	for (;;) {
		skip_ws(p);
		const char *at = p->p;
		const char *s;
		uint32_t n;
		if (!read_name(p, &s, &n))
			return expected(p, "an instruction name");
		if (!table_get(&lv->names, s, n)) {
			struct hp_ref *r = vec_push(p, &lv->refs, sizeof *r);
			if (!r)
				return false;
			*r = (struct hp_ref){&p->sink, s, n, at, NULL};
		}
		skip_ws(p);
		if (accept(p, '}'))
			return true;
		if (!expect_char(p, ',', "',' or '}' in control-predecessors"))
			return false;
	}
}

/*
 * operand_layout_constraints={shape, ...} of a custom-call: one shape per
 * operand, each compatible (dimensions and element type) with its operand
 * when that operand is already defined (XLA: "operand N is not compatible
 * with operand shape").
 */
static bool parse_layout_constraints(struct hp_parser *p, struct ir_instr *in)
{
	if (!expect_char(p, '{', "'{' opening operand_layout_constraints"))
		return false;
	int k = 0;
	for (skip_ws(p); cur(p) != '}'; k++) {
		const char *at = skip_ws_from(p, p->p);
		struct ir_shape s;
		if (!parse_shape(p, &s))
			return false;
		if (k >= in->n_operands)
			return fail(p, at, "operand_layout_constraints: more shapes than "
					   "the %d operands", in->n_operands);
		const struct ir_instr *o = in->operands[k];
		if (o && !(o->flags & IR_INSTR_SHAPE_INFERRED) &&
		    !ir_shape_compatible(&s, &o->shape))
			return fail(p, at, "operand_layout_constraints: operand %d is not "
					   "compatible with operand shape", k);
		skip_ws(p);
		if (!accept(p, ',') && cur(p) != '}')
			return expected(p, "',' or '}' in operand_layout_constraints");
		skip_ws(p);
	}
	p->p++;
	if (k != in->n_operands)
		return fail(p, p->p - 1, "operand_layout_constraints: %d shapes for %d "
					 "operands", k, in->n_operands);
	return true;
}

/* api_version= of a custom call: a CustomCallApiVersion name (XLA:
 * "Unknown API version"). XLA's parser now also refuses
 * API_VERSION_UNSPECIFIED ("Invalid API version"), but the PyTorch/XLA
 * modules of the shared corpus carry it, as older XLA printed it: it is
 * read, the one place tpusim is knowingly more lenient than XLA. */
static bool parse_api_version(struct hp_parser *p)
{
	static const char *const versions[] = {
		"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL",
		"API_VERSION_STATUS_RETURNING",
		"API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI",
	};
	skip_ws(p);
	const char *vs = p->p;
	size_t vn = word_len(p, vs);
	for (size_t i = 0; i < TS_ARRAY_LEN(versions); i++)
		if (word_is(vs, vn, versions[i])) {
			p->p += vn;
			return true;
		}
	return fail(p, vs, "Unknown API version: '%.*s'", tok_len(p, vs), vs);
}

/* Parses the value of attribute `attr` (p->p after '='). */
static bool parse_attr(struct hp_parser *p, struct hp_level *lv,
		       struct ir_instr *in, int attr)
{
	struct ir_attrs *a = &in->attrs;
	const char *an = attr_names[attr];
	enum ir_op op = in->op;
	struct ir_ints *ints = NULL;
	int v = 0;
	switch (attr) {
	case A_DIMENSIONS:
		ints = new_ints(p, &a->dimensions);
		break;
	case A_LHS_BATCH:
		ints = dot_of(p, a) ? &a->dot->lhs_batch : NULL;
		break;
	case A_RHS_BATCH:
		ints = dot_of(p, a) ? &a->dot->rhs_batch : NULL;
		break;
	case A_LHS_CONTRACT:
		ints = dot_of(p, a) ? &a->dot->lhs_contracting : NULL;
		break;
	case A_RHS_CONTRACT:
		ints = dot_of(p, a) ? &a->dot->rhs_contracting : NULL;
		break;
	case A_WINDOW:
		return parse_window(p, &a->window);
	case A_DIM_LABELS:
		return parse_dim_labels(p, &a->conv);
	case A_FGC:
		return parse_positive_attr(p, &a->feature_group_count, an);
	case A_BGC:
		return parse_positive_attr(p, &a->batch_group_count, an);
	case A_SLICE:
		return parse_slice(p, &a->slice);
	case A_PADDING:
		if (op != IR_OP_PAD)
			return skip_value(p, false);
		return parse_padding(p, &a->padding);
	case A_OFFSET_DIMS:
		ints = gather_of(p, a) ? &a->gather->offset_dims : NULL;
		break;
	case A_COLLAPSED:
		ints = gather_of(p, a) ? &a->gather->collapsed_slice_dims : NULL;
		break;
	case A_START_INDEX_MAP:
		ints = gather_of(p, a) ? &a->gather->start_index_map : NULL;
		break;
	case A_OPERAND_BATCHING:
		ints = gather_of(p, a) ? &a->gather->operand_batching_dims : NULL;
		break;
	case A_START_INDICES_BATCHING:
		ints = gather_of(p, a) ? &a->gather->start_indices_batching_dims : NULL;
		break;
	case A_SLICE_SIZES:
		if (op != IR_OP_GATHER)
			return skip_value(p, false);
		ints = gather_of(p, a) ? &a->gather->slice_sizes : NULL;
		break;
	case A_INDEX_VECTOR_DIM:
		if (op == IR_OP_GATHER)
			return gather_of(p, a) &&
			       parse_int_attr(p, &a->gather->index_vector_dim, an);
		if (op == IR_OP_SCATTER)
			return scatter_of(p, a) &&
			       parse_int_attr(p, &a->scatter->index_vector_dim, an);
		return skip_value(p, false);
	case A_UPDATE_WINDOW:
		ints = scatter_of(p, a) ? &a->scatter->update_window_dims : NULL;
		break;
	case A_INSERTED_WINDOW:
		ints = scatter_of(p, a) ? &a->scatter->inserted_window_dims : NULL;
		break;
	case A_SCATTER_TO_OPERAND:
		ints = scatter_of(p, a) ? &a->scatter->scatter_dims_to_operand_dims : NULL;
		break;
	case A_INPUT_BATCHING:
		ints = scatter_of(p, a) ? &a->scatter->input_batching_dims : NULL;
		break;
	case A_SCATTER_INDICES_BATCHING:
		ints = scatter_of(p, a) ? &a->scatter->scatter_indices_batching_dims : NULL;
		break;
	case A_DYN_SLICE_SIZES:
		ints = new_ints(p, &a->dynamic_slice_sizes);
		break;
	case A_FFT_LENGTH:
		ints = new_ints(p, &a->fft_length);
		break;
	case A_IOTA_DIM:
		return parse_int_attr(p, &a->iota_dimension, an);
	case A_INDEX:
		if (op != IR_OP_GET_TUPLE_ELEMENT)
			return skip_value(p, false);
		if (!parse_int_attr(p, &a->tuple_index, an))
			return false;
		if (a->tuple_index < 0)
			return fail(p, p->p, "bad value for attribute 'index': negative");
		return true;
	case A_K:
		if (op != IR_OP_TOPK)
			return skip_value(p, false);
		return parse_int_attr(p, &a->k, an);
	case A_DIRECTION:
		if (op != IR_OP_COMPARE)
			return skip_value(p, false);
		if (!parse_enum_word(p, cmp_words, IR_CMP_COUNT, &v, an))
			return false;
		a->compare_dir = (enum ir_compare_dir)v;
		return true;
	case A_KIND:
		if (op != IR_OP_FUSION)
			return skip_value(p, false);
		if (!parse_enum_word(p, fusion_kind_words, IR_FUSION_KIND_COUNT, &v, an))
			return false;
		a->fusion_kind = (enum ir_fusion_kind)v;
		return true;
	case A_CALLS:
		return parse_comp_ref(p, CR_CALLS, in, an);
	case A_TO_APPLY:
		return parse_comp_ref(p, CR_TO_APPLY, in, an);
	case A_CONDITION:
		return parse_comp_ref(p, CR_CONDITION, in, an);
	case A_BODY:
		return parse_comp_ref(p, CR_BODY, in, an);
	case A_BRANCHES:
		in->flags |= IR_INSTR_BRANCH_LIST;
		return parse_comp_list(p, CR_BRANCHES, in, an);
	case A_TRUE:
		return parse_comp_ref(p, CR_TRUE, in, an);
	case A_FALSE:
		return parse_comp_ref(p, CR_FALSE, in, an);
	case A_SELECT:
		return parse_comp_ref(p, CR_SELECT, in, an);
	case A_SCATTER:
		return parse_comp_ref(p, CR_SCATTER, in, an);
	case A_CALLED:
		return parse_comp_list(p, CR_CALLED, in, an);
	case A_TARGET:
		return read_string(p, &a->custom_call_target);
	case A_THREAD:
		return read_string(p, &a->exec_thread);
	case A_ACCURACY:
		return parse_result_accuracy(p);
	case A_CONTROL:
		return parse_control_preds(p, lv);
	case A_LAYOUT_CONSTRAINTS:
		return parse_layout_constraints(p, in);
	case A_API_VERSION:
		return parse_api_version(p);
	case A_PRECISION:
		return parse_precision(p, a->precision);
	case A_REPLICA_GROUPS:
		return parse_replica_groups(p, &a->replica_group_size);
	case A_METADATA:
		return parse_metadata(p, &in->op_name);
	case A_BACKEND_CONFIG:
		return parse_backend_config(p, a, op == IR_OP_CUSTOM_CALL);
	default:
		return skip_value(p, false);
	}
	if (!ints)
		return false;
	return parse_int_list(p, ints, an);
}

/* Looks up an opcode word; async sugar X-start/-update/-done maps to
 * async-start/-update/-done when the whole word is not an opcode. */
static enum ir_op lookup_op(const struct hp_parser *p, const char *s, size_t n,
			    enum ir_op *wrapped)
{
	*wrapped = IR_OP_INVALID;
	const struct hp_kw *k = kw_get(p, s, n);
	if (k && k->op)
		return (enum ir_op)k->op;
	static const struct {
		const char *suffix;
		enum ir_op op;
	} sugar[] = {{"-start", IR_OP_ASYNC_START},
		     {"-update", IR_OP_ASYNC_UPDATE},
		     {"-done", IR_OP_ASYNC_DONE}};
	for (size_t i = 0; i < TS_ARRAY_LEN(sugar); i++) {
		size_t sl = strlen(sugar[i].suffix);
		if (n > sl && memcmp(s + n - sl, sugar[i].suffix, sl) == 0) {
			k = kw_get(p, s, n - sl);
			if (k && k->op) {
				*wrapped = (enum ir_op)k->op;
				return sugar[i].op;
			}
		}
	}
	return IR_OP_INVALID;
}

/* The value of a scalar integer constant whose literal [s, e) is one
 * decimal integer (what loop analysis reads: induction variable starts,
 * steps and bounds). */
static void keep_int_value(struct ir_instr *in, const char *s, const char *e)
{
	if (in->shape.rank != 0 || in->shape.type < IR_TYPE_S1 ||
	    in->shape.type > IR_TYPE_U64) /* ir_types.def: s1..u64 in a row */
		return;
	while (s < e && is_space(*s))
		s++;
	while (e > s && is_space(e[-1]))
		e--;
	bool neg = s < e && *s == '-';
	const char *d = s + neg;
	if (d == e || e - d > 18) /* below 10^18: no overflow */
		return;
	int64_t v = 0;
	for (const char *c = d; c < e; c++) {
		if (!is_digit(*c))
			return;
		v = v * 10 + (*c - '0');
	}
	in->attrs.int_value = neg ? -v : v;
	in->flags |= IR_INSTR_INT_VALUE;
}

/* Reads constant(...) (p->p after '('): finds its closing parenthesis,
 * skipping strings and comments, and checks the literal against the
 * constant's shape as XLA's parser does (hlo_literal.c); tpusim keeps no
 * values but a scalar integer's (keep_int_value). */
static bool skip_literal(struct hp_parser *p, struct ir_instr *in)
{
	const char *open = p->p - 1;
	int depth = 1;
	const char *c = p->p;
	while (c < p->end) {
		char ch = *c;
		if (ch == '(') {
			depth++;
		} else if (ch == ')') {
			if (--depth == 0)
				break;
		} else if (ch == '.' && c + 2 < p->end && c[1] == '.' && c[2] == '.') {
			in->flags |= IR_INSTR_LITERAL_ELIDED;
		} else if (ch == '"' || ch == '\'' ||
			   (ch == '/' && c + 1 < p->end && (c[1] == '*' || c[1] == '/'))) {
			const char *q = ch == '/' ? skip_ws_from(p, c) : skip_string(p, c);
			if (!q || p->st != TS_OK) /* unterminated */
				return false;
			c = q;
			continue;
		}
		c++;
	}
	if (c >= p->end)
		return fail(p, p->end, "unexpected end of input: '(' opened at line %u is not closed",
			    line_of(p, open));
	struct hlo_literal_error err;
	if (!(in->flags & IR_INSTR_SHAPE_INFERRED) &&
	    !hlo_literal_check(open + 1, c, &in->shape, &err))
		return fail(p, err.at, "%s", err.msg);
	keep_int_value(in, open + 1, c);
	p->p = c + 1;
	return true;
}

/* A new instruction named [name, name+n) of computation comp. */
static struct ir_instr *new_instr(struct hp_parser *p, struct ir_computation *comp,
				  const char *name, size_t n, const char *at)
{
	struct ts_arena *a = &p->m->arena;
	struct ir_instr *in = ts_arena_alloc(a, sizeof *in);
	if (!in) {
		nomem(p);
		return NULL;
	}
	in->name = ts_arena_strndup(a, name, n);
	if (!in->name) {
		nomem(p);
		return NULL;
	}
	in->parent = comp;
	in->attrs.feature_group_count = 1;
	in->attrs.batch_group_count = 1;
	in->attrs.iota_dimension = -1;
	in->attrs.tuple_index = -1;
	in->attrs.parameter_number = -1;
	in->attrs.known_trip_count = -1;
	locate(p, at, &in->line, &in->col);
	return in;
}

static bool parse_rhs(struct hp_parser *p, struct hp_level *lv,
		      struct ir_instr *in, bool allow_attrs);

/*
 * A nested instruction used as an operand, [shape] opcode(operands), at
 * p->p: added to the computation before its user, under a name no text can
 * refer to ("opcode#N").
 */
static struct ir_instr *parse_nested(struct hp_parser *p, struct hp_level *lv,
				     struct ir_computation *comp)
{
	char name[64];
	snprintf(name, sizeof name, "nested#%zu", lv->instrs.n);
	const char *at = p->p;
	if (!enter(p))
		return NULL;
	struct ir_instr *in = new_instr(p, comp, name, strlen(name), at);
	bool ok = in && parse_rhs(p, lv, in, false);
	p->depth--;
	if (!ok)
		return NULL;
	snprintf(name, sizeof name, "%s#%zu", ir_op_name(in->op), lv->instrs.n);
	in->name = ts_arena_strndup(&p->m->arena, name, strlen(name));
	if (!in->name) {
		nomem(p);
		return NULL;
	}
	struct ir_instr **slot = vec_push(p, &lv->instrs, sizeof *slot);
	if (!slot)
		return NULL;
	*slot = in;
	return in;
}

/* One operand: [shape] name, or a nested instruction. */
/*
 * Whether the operand shape just declared (p->decl_*) is the shape of its
 * producer o: the same element type and dimensions, layouts aside (XLA:
 * ShapeUtil::Compatible). Only operands defined before their use are
 * checked; tuples only as tuples, dynamic dimensions not at all.
 */
static bool declared_matches(const struct hp_parser *p, const struct ir_instr *o)
{
	const struct ir_shape *h = &o->shape;
	if (o->flags & IR_INSTR_SHAPE_INFERRED)
		return true;
	if (p->decl_type == IR_TYPE_TUPLE || h->type == IR_TYPE_TUPLE)
		return p->decl_type == h->type;
	if (p->decl_dynamic || h->dim_kind)
		return true;
	if (h->type != p->decl_type || h->rank != p->decl_rank)
		return false;
	for (int i = 0; i < h->rank; i++)
		if (h->dims[i] != p->decl_dims[i])
			return false;
	return true;
}

static bool parse_operand(struct hp_parser *p, struct hp_level *lv,
			  struct ir_computation *comp)
{
	skip_ws(p);
	const char *start = p->p;
	const char *typed_end = NULL; /* end of a declared operand shape */
	int c = cur(p);
	if (c == '(') {
		struct ir_shape s;
		p->discard = true;
		bool ok = parse_shape(p, &s);
		p->discard = false;
		if (!ok)
			return false;
		typed_end = p->p;
		skip_ws(p);
	} else if (c != '%') {
		const char *ws = p->p;
		size_t wn = word_len(p, ws);
		const struct hp_kw *k = wn ? kw_get(p, ws, wn) : NULL;
		const char *after = ws_end(p, ws + wn);
		int next = peek_at(p, after);
		if ((k && k->type && next == '[') ||
		    (wn == 1 && *ws == 'b' && next == '(')) {
			struct ir_shape s;
			p->p = ws + wn;
			if (!enter(p))
				return false;
			p->discard = true;
			bool ok = parse_shape_after_word(p, ws, wn, &s);
			p->discard = false;
			p->depth--;
			if (!ok)
				return false;
			typed_end = p->p;
			skip_ws(p);
		}
	}
	const char *at = p->p;
	const char *s;
	uint32_t n;
	if (!read_name(p, &s, &n))
		return expected(p, "an operand name");
	skip_ws(p);
	struct ir_instr *nested = NULL;
	if (cur(p) == '(') {
		p->p = start;
		nested = parse_nested(p, lv, comp);
		if (!nested)
			return false;
	} else if (typed_end) {
		const struct ir_instr *o = table_get(&lv->names, s, n);
		if (o && !declared_matches(p, o)) {
			char have[128];
			ir_shape_format(&o->shape, have, sizeof have);
			int dn = (int)(typed_end - start);
			return fail(p, start, "the declared operand shape %.*s is not "
					      "compatible with the shape of the operand "
					      "instruction %s", dn > 96 ? 96 : dn, start,
				    have);
		}
	}
	struct hp_ref *r = vec_push(p, &p->ops, sizeof *r);
	if (!r)
		return false;
	*r = (struct hp_ref){NULL, s, n, at, nested};
	return true;
}

/* Inserts the calls of `in` (p->calls from base) into in->called in rank
 * order; names are resolved now when already defined, else later. */
static bool finish_calls(struct hp_parser *p, struct ir_instr *in, size_t base)
{
	size_t n = p->calls.n - base;
	if (!n)
		return true;
	if (n > INT_MAX)
		return fail(p, p->p, "too many called computations");
	in->called = ts_arena_array(&p->m->arena, n, sizeof *in->called);
	if (!in->called)
		return nomem(p);
	in->n_called = (int)n;
	/* stable order by rank: slot of each call by counting */
	size_t start[CR_COUNT + 1] = {0};
	for (size_t i = 0; i < n; i++)
		start[((struct hp_call *)p->calls.v)[base + i].rank + 1]++;
	for (int r = 0; r < CR_COUNT; r++)
		start[r + 1] += start[r];
	for (size_t k = 0; k < n; k++) {
		struct hp_call *c = (struct hp_call *)p->calls.v + base + k;
		size_t i = start[c->rank]++;
		if (c->comp) {
			in->called[i] = c->comp;
			continue;
		}
		in->called[i] = table_get(&p->comp_names, c->name, c->len);
		if (in->called[i])
			continue;
		struct hp_ref *r = vec_push(p, &p->crefs, sizeof *r);
		if (!r)
			return false;
		*r = (struct hp_ref){(void **)&in->called[i], c->name, c->len, c->at, NULL};
	}
	p->calls.n = base;
	return true;
}

static bool parse_instr(struct hp_parser *p, struct hp_level *lv,
			struct ir_computation *comp, bool *is_root)
{
	skip_ws(p);
	const char *at = p->p;
	*is_root = false;
	if (p->end - at >= 4 && memcmp(at, "ROOT", 4) == 0 &&
	    !is_word_char(peek_at(p, at + 4))) {
		*is_root = true;
		p->p += 4;
		skip_ws(p);
		at = p->p;
	}
	const char *ns;
	uint32_t nn;
	if (!read_name(p, &ns, &nn))
		return expected(p, "an instruction name");
	if (!expect_char(p, '=', "'=' after the instruction name"))
		return false;
	struct ir_instr *in = new_instr(p, comp, ns, nn, at);
	if (!in || !parse_rhs(p, lv, in, true))
		return false;
	skip_ws(p);
	if (p->st != TS_OK)
		return false;
	if (cur(p) >= 0 && cur(p) != '}' && !starts_instr(p, p->p))
		return expected(p, "',' or the next instruction");

	/* register */
	if (table_put(p, &lv->names, in->name, nn, in))
		return fail(p, at, "duplicate instruction name '%.*s'",
			    (int)(nn > HP_MSG_TOK ? HP_MSG_TOK : nn), ns);
	if (p->st != TS_OK)
		return false;
	struct ir_instr **slot = vec_push(p, &lv->instrs, sizeof *slot);
	if (!slot)
		return false;
	*slot = in;
	return true;
}

/*
 * The right-hand side of an instruction: [shape] opcode '(' operands ')'
 * and, when allow_attrs, the attribute list. Nested instructions used as
 * operands have no attributes (a comma would be ambiguous).
 */
static bool parse_rhs(struct hp_parser *p, struct hp_level *lv,
		      struct ir_instr *in, bool allow_attrs)
{
	struct ts_arena *a = &p->m->arena;
	const char *at = p->p;
	/* [shape] opcode */
	skip_ws(p);
	bool have_shape = false;
	const char *ws = p->p;
	size_t wn = 0;
	if (cur(p) == '(') {
		if (!parse_shape(p, &in->shape))
			return false;
		have_shape = true;
	} else {
		wn = word_len(p, ws);
		p->p = ws + wn;
		const struct hp_kw *k = wn ? kw_get(p, ws, wn) : NULL;
		int next = peek_at(p, ws_end(p, p->p));
		if ((k && k->type) || (wn == 1 && *ws == 'b' && next == '(')) {
			if (!enter(p))
				return false;
			bool ok = parse_shape_after_word(p, ws, wn, &in->shape);
			p->depth--;
			if (!ok)
				return false;
			have_shape = true;
		}
	}
	if (have_shape) {
		skip_ws(p);
		ws = p->p;
		wn = word_len(p, ws);
		p->p = ws + wn;
	}
	if (!wn) {
		p->p = ws;
		return expected(p, "an opcode");
	}
	enum ir_op wrapped;
	in->op = lookup_op(p, ws, wn, &wrapped);
	in->wrapped_op = wrapped;
	if (in->op == IR_OP_INVALID) {
		if (!have_shape && peek_at(p, skip_ws_from(p, p->p)) == '[')
			return fail(p, ws, "unknown element type '%.*s'",
				    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
		return fail(p, ws, "unknown opcode '%.*s'",
			    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
	}
	if (!have_shape)
		in->flags |= IR_INSTR_SHAPE_INFERRED;
	if (!expect_char(p, '(', "'(' after the opcode"))
		return false;

	/* operands */
	if (in->op == IR_OP_PARAMETER) {
		const char *nat = skip_ws_from(p, p->p);
		if (!read_int(p, &in->attrs.parameter_number))
			return false;
		if (in->attrs.parameter_number < 0 ||
		    in->attrs.parameter_number >= HP_MAX_PARAMS)
			return fail(p, nat, "parameter number %lld out of range",
				    (long long)in->attrs.parameter_number);
		/* digits without leading zeros name the number */
		const char *key = nat;
		while (key + 1 < p->p && *key == '0')
			key++;
		struct ir_instr *twin = table_put(p, &lv->params, key,
						  (uint32_t)(p->p - key), in);
		if (twin)
			return fail(p, nat, "duplicate parameter number %lld (also "
					    "'%s')", (long long)in->attrs.parameter_number,
				    twin->name);
		if (p->st != TS_OK)
			return false;
		if (!expect_char(p, ')', "')' after the parameter number"))
			return false;
	} else if (in->op == IR_OP_CONSTANT) {
		if (!skip_literal(p, in))
			return false;
	} else {
		size_t base = p->ops.n;
		skip_ws(p);
		if (cur(p) != ')') {
			for (;;) {
				if (!parse_operand(p, lv, in->parent))
					return false;
				skip_ws(p);
				if (cur(p) == ')')
					break;
				if (cur(p) != ',')
					return expected(p, "',' or ')' in the operand list");
				p->p++;
			}
		}
		p->p++; /* ')' */
		size_t n = p->ops.n - base;
		if (n > INT_MAX)
			return fail(p, at, "too many operands");
		if (n) {
			in->operands = ts_arena_array(a, n, sizeof *in->operands);
			if (!in->operands)
				return nomem(p);
		}
		in->n_operands = (int)n;
		for (size_t i = 0; i < n; i++) {
			struct hp_ref *r = (struct hp_ref *)p->ops.v + base + i;
			in->operands[i] = r->direct ? r->direct
				: table_get(&lv->names, r->name, r->len);
			if (in->operands[i])
				continue;
			struct hp_ref *pend = vec_push(p, &lv->refs, sizeof *pend);
			if (!pend)
				return false;
			r = (struct hp_ref *)p->ops.v + base + i;
			*pend = *r;
			pend->slot = (void **)&in->operands[i];
		}
		p->ops.n = base;
	}

	/* attributes */
	size_t call_base = p->calls.n;
	uint64_t seen = 0; /* bit per enum hp_attr */
	for (;;) {
		skip_ws(p);
		if (cur(p) != ',' || !allow_attrs)
			break;
		p->p++;
		skip_ws(p);
		const char *as = p->p;
		size_t an = word_len(p, as);
		if (!an || cur(p) == '%')
			return expected(p, "an attribute name");
		p->p += an;
		if (!expect_char(p, '=', "'=' after the attribute name"))
			return false;
		const struct hp_kw *k = kw_get(p, as, an);
		int attr = k ? k->attr : A_NONE;
		if (attr == A_NONE && !note_unknown_attr(p, as, an))
			return nomem(p);
		if (attr != A_NONE && attr != A_COST_FREE) {
			if (seen & (1ull << attr))
				return fail(p, as, "attribute '%s' given twice",
					    attr_names[attr]);
			seen |= 1ull << attr;
			if (!attr_allowed(in->op, attr) &&
			    !attr_allowed(in->wrapped_op, attr))
				return fail(p, as, "unexpected attribute \"%s\" for %s",
					    attr_names[attr], ir_op_name(in->op));
		}
		if (!parse_attr(p, lv, in, attr))
			return false;
	}
	for (size_t i = 0; i < TS_ARRAY_LEN(required_attrs); i++) {
		if (required_attrs[i].op != in->op)
			continue;
		for (size_t j = 0; j < TS_ARRAY_LEN(required_attrs[i].attrs); j++) {
			int r = required_attrs[i].attrs[j];
			/* a broadcast of a scalar (or of an operand not yet
			 * known) may leave its dimensions out: they are {} */
			if (in->op == IR_OP_BROADCAST && r == A_DIMENSIONS &&
			    (in->n_operands != 1 || !in->operands[0] ||
			     (in->operands[0]->shape.type != IR_TYPE_TUPLE &&
			      in->operands[0]->shape.rank == 0)))
				continue;
			if (r && !(seen & (1ull << r)) && !allow_attrs)
				return fail_lc(p, in->line, in->col,
					       "a nested %s cannot have the attribute "
					       "'%s' it needs", ir_op_name(in->op),
					       attr_names[r]);
			if (r && !(seen & (1ull << r)))
				return fail_lc(p, in->line, in->col,
					       "%s '%s' needs attribute '%s'",
					       ir_op_name(in->op), in->name,
					       attr_names[r]);
		}
	}
	return finish_calls(p, in, call_base);
}

/* A dot's result: batch dims, then the free dims of lhs and of rhs, of
 * lhs's element type (XLA: ShapeInference::InferDotOpShape). */
static bool infer_dot(struct hp_parser *p, struct ir_instr *in)
{
	const struct ir_dot_dims *dd = in->attrs.dot;
	static const struct ir_dot_dims none;
	if (!dd)
		dd = &none;
	const struct ir_shape *l = &in->operands[0]->shape;
	const struct ir_shape *r = &in->operands[1]->shape;
	if (l->type == IR_TYPE_TUPLE || r->type == IR_TYPE_TUPLE)
		return false;
	int64_t dims[2 * HP_MAX_RANK];
	int n = 0;
	for (int i = 0; i < dd->lhs_batch.n; i++) {
		int64_t d = dd->lhs_batch.v[i];
		if (d < 0 || d >= l->rank)
			return false;
		dims[n++] = l->dims[d];
	}
	const struct ir_shape *side[2] = {l, r};
	const struct ir_ints *batch[2] = {&dd->lhs_batch, &dd->rhs_batch};
	const struct ir_ints *contr[2] = {&dd->lhs_contracting,
					  &dd->rhs_contracting};
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < side[k]->rank; i++) {
			bool used = false;
			for (int j = 0; j < batch[k]->n; j++)
				used |= batch[k]->v[j] == i;
			for (int j = 0; j < contr[k]->n; j++)
				used |= contr[k]->v[j] == i;
			if (!used && n < 2 * HP_MAX_RANK)
				dims[n++] = side[k]->dims[i];
		}
	if (n > HP_MAX_RANK)
		return false;
	in->shape.type = l->type;
	in->shape.rank = n;
	if (n) {
		in->shape.dims = ts_arena_array(&p->m->arena, (size_t)n,
						sizeof *in->shape.dims);
		if (!in->shape.dims)
			return nomem(p);
		memcpy(in->shape.dims, dims, sizeof *dims * (size_t)n);
	}
	return true;
}

/* Shape of an instruction written without one (docs/HLO.md 1.10 item 5),
 * its operands' shapes being known; false when it cannot be inferred (or
 * memory ran out: p->st says which). */
static bool infer_shape(struct hp_parser *p, struct ir_instr *in)
{
	const struct ir_shape *s0 = in->n_operands ? &in->operands[0]->shape : NULL;
	switch (in->op) {
	case IR_OP_TUPLE:
		in->shape.type = IR_TYPE_TUPLE;
		in->shape.n_elems = in->n_operands;
		if (in->n_operands) {
			in->shape.elems = ts_arena_array(&p->m->arena,
							 (size_t)in->n_operands,
							 sizeof *in->shape.elems);
			if (!in->shape.elems)
				return nomem(p);
			for (int k = 0; k < in->n_operands; k++)
				in->shape.elems[k] = in->operands[k]->shape;
		}
		return true;
	case IR_OP_DOT:
		return in->n_operands == 2 && infer_dot(p, in);
	case IR_OP_CONDITIONAL:
	case IR_OP_CALL:
		/* the root of the first called computation, when that one is
		 * defined before its caller */
		if (!in->n_called || !in->called[0] || !in->called[0]->root)
			break;
		in->shape = in->called[0]->root->shape;
		return true;
	case IR_OP_WHILE:
	case IR_OP_OPT_BARRIER:
	case IR_OP_COPY:
	case IR_OP_BITCAST:
		if (!s0)
			break;
		in->shape = *s0;
		return true;
	case IR_OP_GET_TUPLE_ELEMENT:
		if (!s0 || s0->type != IR_TYPE_TUPLE || in->attrs.tuple_index < 0 ||
		    in->attrs.tuple_index >= s0->n_elems)
			break;
		in->shape = s0->elems[in->attrs.tuple_index];
		return true;
	case IR_OP_SELECT:
	case IR_OP_CLAMP:
		if (in->n_operands != 3)
			break;
		in->shape = in->operands[1]->shape;
		return true;
	case IR_OP_CONVERT:
	case IR_OP_BITCAST_CONVERT:
	case IR_OP_COMPARE:
	case IR_OP_IS_FINITE:
	case IR_OP_REAL:
	case IR_OP_IMAG:
	case IR_OP_COMPLEX:
	case IR_OP_IOTA:
	case IR_OP_RNG:
	case IR_OP_RNG_BIT_GENERATOR:
	case IR_OP_MAP:
	case IR_OP_STOCHASTIC_CONVERT:
		break;
	default:
		/* same-type elementwise ops: the shape of operand 0 */
		if ((ir_op_class(in->op) == IR_CLASS_ELEMENTWISE ||
		     ir_op_class(in->op) == IR_CLASS_TRANSCENDENTAL) &&
		    s0 && s0->type != IR_TYPE_TUPLE) {
			in->shape = *s0;
			return true;
		}
		break;
	}
	return false;
}

/* Rejects operand cycles (a use before definition is legal, a loop is not)
 * by an iterative depth-first search over operand edges, and leaves the
 * instruction indices in post-order (operands before users) in p->order. */
static bool check_operand_cycles(struct hp_parser *p, struct ir_computation *c)
{
	size_t n = (size_t)c->n_instrs;
	p->order.n = 0;
	/* ints: color[n] (0 new, 1 on stack, 2 done), then a stack of
	 * (instr, next operand) pairs */
	p->ints.n = 0;
	if (!push_ints(p, 0, n))
		return false;
	for (size_t s = 0; s < n; s++) {
		if (((int *)p->ints.v)[s])
			continue;
		size_t base = p->ints.n;
		if (!push_ints(p, (int)s, 1) || !push_ints(p, 0, 1))
			return false;
		((int *)p->ints.v)[s] = 1;
		while (p->ints.n > base) {
			int *st = (int *)p->ints.v + p->ints.n - 2;
			struct ir_instr *in = c->instrs[st[0]];
			if (st[1] == in->n_operands) {
				((int *)p->ints.v)[st[0]] = 2;
				p->ints.n -= 2;
				int *o = vec_push(p, &p->order, sizeof *o);
				if (!o)
					return false;
				*o = in->index;
				continue;
			}
			struct ir_instr *o = in->operands[st[1]++];
			int *color = (int *)p->ints.v + o->index;
			if (*color == 1)
				return fail_lc(p, o->line, o->col,
					       "instruction '%s' depends on itself (operand cycle)",
					       o->name);
			if (*color == 2)
				continue;
			*color = 1;
			if (!push_ints(p, o->index, 1) || !push_ints(p, 0, 1))
				return false;
		}
	}
	return true;
}

/* Resolves operands, root, parameters, inferred shapes and users of a
 * finished computation body. */
static bool finish_computation(struct hp_parser *p, struct hp_level *lv,
			       struct ir_computation *c, struct ir_instr *root,
			       const char *open)
{
	struct ts_arena *a = &p->m->arena;
	struct hp_ref *refs = lv->refs.v;
	for (size_t i = 0; i < lv->refs.n; i++) {
		*refs[i].slot = table_get(&lv->names, refs[i].name, refs[i].len);
		if (!*refs[i].slot)
			return fail(p, refs[i].at, "use of undefined instruction '%.*s'",
				    (int)(refs[i].len > HP_MSG_TOK ? HP_MSG_TOK : refs[i].len),
				    refs[i].name);
	}
	size_t n = lv->instrs.n;
	if (!n)
		return fail(p, open, "computation '%s' has no instructions", c->name);
	if (n > INT_MAX)
		return fail(p, open, "computation '%s' is too large", c->name);
	c->n_instrs = (int)n;
	c->instrs = ts_arena_array(a, n, sizeof *c->instrs);
	if (!c->instrs)
		return nomem(p);
	memcpy(c->instrs, lv->instrs.v, n * sizeof *c->instrs);
	c->root = root ? root : c->instrs[n - 1];
	c->root->flags |= IR_INSTR_ROOT;

	/* parameters by number, contiguous from 0 */
	int64_t max_param = -1;
	bool inferred = false;
	for (size_t i = 0; i < n; i++) {
		struct ir_instr *in = c->instrs[i];
		in->index = (int)i;
		if (in->op == IR_OP_PARAMETER && in->attrs.parameter_number > max_param)
			max_param = in->attrs.parameter_number;
		inferred |= (in->flags & IR_INSTR_SHAPE_INFERRED) != 0;
	}
	if (max_param >= 0) {
		c->n_params = (int)max_param + 1;
		c->params = ts_arena_array(a, (size_t)c->n_params, sizeof *c->params);
		if (!c->params)
			return nomem(p);
		for (size_t i = 0; i < n; i++) {
			struct ir_instr *in = c->instrs[i];
			if (in->op != IR_OP_PARAMETER)
				continue;
			c->params[in->attrs.parameter_number] = in;
		}
		for (int k = 0; k < c->n_params; k++)
			if (!c->params[k])
				return fail(p, open, "computation '%s': parameter %d is missing",
					    c->name, k);
	}

	if (!check_operand_cycles(p, c))
		return false;

	/* shapes that were not written, operands first */
	const int *order = p->order.v;
	for (size_t i = 0; inferred && i < p->order.n; i++) {
		struct ir_instr *in = c->instrs[order[i]];
		if (!(in->flags & IR_INSTR_SHAPE_INFERRED))
			continue;
		if (!infer_shape(p, in))
			return p->st != TS_OK ? false :
			       fail_lc(p, in->line, in->col,
				       "cannot infer the shape of '%s' (%s): write its result shape",
				       in->name, ir_op_name(in->op));
	}

	/* users: distinct instructions of this computation per operand */
	p->ints.n = 0;
	if (!push_ints(p, -1, n))
		return false;
	int *stamps = p->ints.v;
	for (size_t i = 0; i < n; i++) {
		struct ir_instr *in = c->instrs[i];
		for (int k = 0; k < in->n_operands; k++) {
			struct ir_instr *o = in->operands[k];
			if (stamps[o->index] != (int)i) {
				stamps[o->index] = (int)i;
				o->n_users++;
			}
		}
	}
	return true;
}

/*
 * computation := ['ENTRY'] NAME ['(' params ')' '->' shape] '{' instr+ '}'
 * The caller has consumed ENTRY. An inline body is just '{' instr+ '}'
 * named gen_name.
 */
static bool parse_computation(struct hp_parser *p, bool inline_body,
			      const char *gen_name, struct ir_computation **out)
{
	struct ts_arena *a = &p->m->arena;
	skip_ws(p);
	const char *at = p->p;
	struct ir_computation *c = ts_arena_alloc(a, sizeof *c);
	if (!c)
		return nomem(p);
	const char *ns = NULL;
	uint32_t nn = 0;
	if (inline_body) {
		c->name = ts_arena_strndup(a, gen_name, strlen(gen_name));
	} else {
		if (!read_name(p, &ns, &nn))
			return expected(p, "a computation name");
		c->name = ts_arena_strndup(a, ns, nn);
	}
	if (!c->name)
		return nomem(p);
	locate(p, at, &c->line, &c->col);
	if (!inline_body) {
		skip_ws(p);
		if (cur(p) == '(') {
			/* signature: parameters come from the body; the result
			 * shape is checked against the root (ir_verify) */
			p->p++;
			skip_ws(p);
			if (cur(p) != ')') {
				for (;;) {
					const char *ps;
					uint32_t pn;
					skip_ws(p);
					if (!read_name(p, &ps, &pn))
						return expected(p, "a parameter name");
					if (!expect_char(p, ':', "':' after the parameter name"))
						return false;
					struct ir_shape s;
					p->discard = true;
					bool ok = parse_shape(p, &s);
					p->discard = false;
					if (!ok)
						return false;
					if (accept(p, ')'))
						break;
					if (!expect_char(p, ',', "',' or ')' in the signature"))
						return false;
				}
			} else {
				p->p++;
			}
			skip_ws(p);
			if (p->end - p->p < 2 || p->p[0] != '-' || p->p[1] != '>')
				return expected(p, "'->' after the signature");
			p->p += 2;
			locate(p, skip_ws_from(p, p->p), &c->result_line,
			       &c->result_col);
			if (!parse_shape(p, &c->result_shape))
				return false;
			c->has_result_shape = true;
		}
	}
	skip_ws(p);
	if (cur(p) != '{')
		return expected(p, "'{' opening the computation body");
	const char *open = p->p;
	p->p++;
	if (p->comp_depth >= HP_MAX_DEPTH)
		return fail(p, open, "nesting deeper than %d levels", HP_MAX_DEPTH);
	if (!p->levels[p->comp_depth]) {
		p->levels[p->comp_depth] = ts_calloc(1, sizeof(struct hp_level));
		if (!p->levels[p->comp_depth])
			return nomem(p);
	}
	struct hp_level *lv = p->levels[p->comp_depth++];
	table_reset(&lv->names);
	table_reset(&lv->params);
	lv->instrs.n = 0;
	lv->refs.n = 0;
	struct ir_instr *root = NULL;
	bool ok = true;
	for (;;) {
		skip_ws(p);
		if (p->st != TS_OK) {
			ok = false;
			break;
		}
		if (cur(p) == '}')
			break;
		if (cur(p) < 0) {
			ok = fail(p, p->end,
				  "unexpected end of input: '{' of computation '%s' opened at line %u is not closed",
				  c->name, line_of(p, open));
			break;
		}
		bool is_root;
		const char *iat = p->p;
		if (!parse_instr(p, lv, c, &is_root)) {
			ok = false;
			break;
		}
		if (is_root) {
			if (root) {
				ok = fail(p, iat, "more than one ROOT instruction in computation '%s'",
					  c->name);
				break;
			}
			root = ((struct ir_instr **)lv->instrs.v)[lv->instrs.n - 1];
		}
	}
	if (ok)
		ok = finish_computation(p, lv, c, root, open);
	p->comp_depth--;
	if (!ok)
		return false;
	p->m_last_close = p->p;
	p->p++; /* '}' */
	if (!inline_body) {
		if (table_put(p, &p->comp_names, ns, nn, c))
			return fail(p, at, "duplicate computation name '%s'", c->name);
		if (p->st != TS_OK)
			return false;
		/* "}, execution_thread=..." */
		const char *q = skip_ws_from(p, p->p);
		if (q < p->end && *q == ',') {
			p->p = q + 1;
			skip_ws(p);
			const char *as = p->p;
			size_t an = word_len(p, as);
			if (!an)
				return expected(p, "a computation attribute");
			p->p += an;
			if (!expect_char(p, '=', "'=' after the attribute name") ||
			    !skip_value(p, true))
				return false;
		}
	}
	struct ir_computation **slot = vec_push(p, &p->comps, sizeof *slot);
	if (!slot)
		return false;
	*slot = c;
	*out = c;
	return true;
}

/* shape_index := '{' [INT (',' INT)*] '}' (XLA: ParseShapeIndex) */
static bool parse_shape_index(struct hp_parser *p)
{
	skip_ws(p);
	if (!accept(p, '{'))
		return fail(p, p->p, "expects '{' at the start of ShapeIndex, got '%.*s'",
			    tok_len(p, p->p), p->p);
	skip_ws(p);
	if (accept(p, '}'))
		return true;
	for (;;) {
		skip_ws(p);
		int64_t v;
		if (!is_digit(cur(p)) || !read_int(p, &v))
			return p->st != TS_OK ? false :
			       fail(p, p->p, "expects integer in ShapeIndex, got '%.*s'",
				    tok_len(p, p->p), p->p);
		skip_ws(p);
		if (accept(p, '}'))
			return true;
		if (!accept(p, ','))
			return fail(p, p->p, "expects '}' at the end of ShapeIndex, got '%.*s'",
				    tok_len(p, p->p), p->p);
	}
}

/*
 * The header's aliasing lists (XLA: ParseAliasing, ParseBufferDonor):
 *   input_output_alias={ shape_index: (INT, shape_index[, must-alias|may-alias]), ... }
 *   buffer_donor={ (INT, shape_index), ... }
 * They do not change the cost; a malformed one is refused as XLA refuses it.
 */
static bool parse_aliasing(struct hp_parser *p, bool donor)
{
	const char *what = donor ? "buffer_donor" : "input_output_alias";
	skip_ws(p);
	if (!accept(p, '{'))
		return expected(p, donor ? "'{' opening buffer_donor"
					 : "'{' opening input_output_alias");
	skip_ws(p);
	if (accept(p, '}'))
		return true;
	for (;;) {
		if (!donor) {
			if (!parse_shape_index(p))
				return false;
			skip_ws(p);
			if (!accept(p, ':'))
				return fail(p, p->p, "%s: expects ':' after the output "
						     "ShapeIndex", what);
		}
		skip_ws(p);
		if (!accept(p, '('))
			return fail(p, p->p, "%s: expects '(' before the parameter "
					     "number", what);
		skip_ws(p);
		int64_t v;
		if (!is_digit(cur(p)) || !read_int(p, &v))
			return p->st != TS_OK ? false :
			       fail(p, p->p, "%s: expects integer parameter number, "
					     "got '%.*s'", what, tok_len(p, p->p), p->p);
		skip_ws(p);
		if (!accept(p, ','))
			return fail(p, p->p, "%s: expects ',' after the parameter "
					     "number", what);
		if (!parse_shape_index(p))
			return false;
		skip_ws(p);
		if (!donor && accept(p, ',')) {
			skip_ws(p);
			const char *ks = p->p;
			size_t kn = word_len(p, ks);
			if (!word_is(ks, kn, "must-alias") && !word_is(ks, kn, "may-alias"))
				return fail(p, ks, "%s: unexpected alias kind '%.*s'", what,
					    tok_len(p, ks), ks);
			p->p += kn;
			skip_ws(p);
		}
		if (!accept(p, ')'))
			return fail(p, p->p, "%s: expects ')' after the parameter's "
					     "ShapeIndex", what);
		skip_ws(p);
		if (accept(p, '}'))
			return true;
		if (!accept(p, ','))
			return fail(p, p->p, "expects '}' at the end of %s, got '%.*s'",
				    donor ? "buffer donor description"
					  : "aliasing description",
				    tok_len(p, p->p), p->p);
	}
}

/* HloModule NAME [:] (',' ATTR=VALUE)* */
static bool parse_header(struct hp_parser *p)
{
	struct ts_arena *a = &p->m->arena;
	p->p += strlen("HloModule");
	skip_ws(p);
	const char *s;
	uint32_t n;
	if (!read_name(p, &s, &n))
		return expected(p, "a module name");
	p->m->name = ts_arena_strndup(a, s, n);
	if (!p->m->name)
		return nomem(p);
	/* The old header form "HloModule name:" (XLA's parser still reads it) */
	skip_ws(p);
	if (cur(p) == ':')
		p->p++;
	for (;;) {
		skip_ws(p);
		if (cur(p) != ',')
			return true;
		p->p++;
		skip_ws(p);
		const char *as = p->p;
		size_t an = word_len(p, as);
		if (!an)
			return expected(p, "a module attribute");
		p->p += an;
		if (!expect_char(p, '=', "'=' after the attribute name"))
			return false;
		skip_ws(p);
		if (word_is(as, an, "is_scheduled")) {
			const char *vs = p->p;
			size_t vn = word_len(p, vs);
			if (word_is(vs, vn, "true"))
				p->m->is_scheduled = true;
			else if (!word_is(vs, vn, "false"))
				return fail(p, vs, "bad value for attribute 'is_scheduled': '%.*s'",
					    tok_len(p, vs), vs);
			p->p += vn;
		} else if (word_is(as, an, "replica_count") ||
			   word_is(as, an, "num_partitions")) {
			const char *vs = p->p;
			int64_t v;
			if (!read_int(p, &v))
				return false;
			if (v < 1 || v > IR_MAX_DEVICES)
				return fail(p, vs, "%.*s must be in 1..%d, got %lld",
					    (int)an, as, IR_MAX_DEVICES, (long long)v);
			*(word_is(as, an, "replica_count") ? &p->m->replica_count
							   : &p->m->num_partitions) = v;
		} else if (word_is(as, an, "input_output_alias") ||
			   word_is(as, an, "buffer_donor")) {
			if (!parse_aliasing(p, word_is(as, an, "buffer_donor")))
				return false;
		} else if (!skip_value(p, true)) {
			return false;
		}
	}
}

/* FileNames / FunctionNames / FileLocations / StackFrames tables:
 * (INT (STRING | '{' ... '}'))* */
static bool skip_frame_table(struct hp_parser *p, size_t kw_len)
{
	p->p += kw_len;
	for (;;) {
		skip_ws(p);
		if (!is_digit(cur(p)))
			return true;
		int64_t id;
		if (!read_int(p, &id))
			return false;
		skip_ws(p);
		const char *e;
		if (cur(p) == '"')
			e = skip_string(p, p->p);
		else if (cur(p) == '{')
			e = skip_group(p, p->p);
		else
			return expected(p, "a string or '{' in the stack-frame table");
		if (!e)
			return false;
		p->p = e;
	}
}

static bool new_module(struct hp_parser *p)
{
	/* a module begun without content (only a stack-frame table) is
	 * replaced by the one a later header starts */
	ir_module_free(p->m);
	p->m = NULL;
	struct ts_arena a;
	ts_arena_init(&a);
	struct ir_module *m = ts_arena_alloc(&a, sizeof *m);
	if (!m) {
		ts_arena_free(&a);
		return nomem(p);
	}
	m->arena = a;
	p->m = m;
	p->m_header = false;
	p->m_last_close = p->p;
	table_reset(&p->comp_names);
	p->comps.n = 0;
	p->crefs.n = 0;
	p->n_entry = 0;
	m->name = "";
	m->replica_count = 1;
	m->num_partitions = 1;
	m->file = ts_arena_strndup(&m->arena, p->file, strlen(p->file));
	if (!m->file)
		return nomem(p);
	return true;
}

/* Rejects call cycles (a computation that calls itself, directly or not). */
static bool check_call_cycles(struct hp_parser *p)
{
	struct ir_module *m = p->m;
	p->ints.n = 0;
	if (!push_ints(p, 0, (size_t)m->n_comps))
		return false;
	/* stack entries: comp index, instr index, call index */
	for (int s = 0; s < m->n_comps; s++) {
		if (((int *)p->ints.v)[s])
			continue;
		size_t base = p->ints.n;
		if (!push_ints(p, s, 1) || !push_ints(p, 0, 2))
			return false;
		((int *)p->ints.v)[s] = 1;
		while (p->ints.n > base) {
			int *st = (int *)p->ints.v + p->ints.n - 3;
			struct ir_computation *c = m->comps[st[0]];
			if (st[1] == c->n_instrs) {
				((int *)p->ints.v)[st[0]] = 2;
				p->ints.n -= 3;
				continue;
			}
			struct ir_instr *in = c->instrs[st[1]];
			if (st[2] >= in->n_called) {
				st[1]++;
				st[2] = 0;
				continue;
			}
			struct ir_computation *callee = in->called[st[2]++];
			int *color = (int *)p->ints.v + callee->index;
			if (*color == 1)
				return fail_lc(p, in->line, in->col,
					       "computation '%s' calls itself through '%s'",
					       callee->name, in->name);
			if (*color == 2)
				continue;
			*color = 1;
			if (!push_ints(p, callee->index, 1) || !push_ints(p, 0, 2))
				return false;
		}
	}
	return true;
}

/* Resolves computation references and module-wide facts, then moves the
 * module to the output list. */
static bool finish_module(struct hp_parser *p, const char *at)
{
	struct ir_module *m = p->m;
	if (p->comps.n == 0)
		return fail(p, at, "module '%s' has no computations", m->name);
	struct hp_ref *refs = p->crefs.v;
	for (size_t i = 0; i < p->crefs.n; i++) {
		*refs[i].slot = table_get(&p->comp_names, refs[i].name, refs[i].len);
		if (!*refs[i].slot)
			return fail(p, refs[i].at, "undefined computation '%.*s'",
				    (int)(refs[i].len > HP_MSG_TOK ? HP_MSG_TOK : refs[i].len),
				    refs[i].name);
	}
	if (p->comps.n > INT_MAX)
		return fail(p, at, "too many computations");
	m->n_comps = (int)p->comps.n;
	m->comps = ts_arena_array(&m->arena, p->comps.n, sizeof *m->comps);
	if (!m->comps)
		return nomem(p);
	memcpy(m->comps, p->comps.v, p->comps.n * sizeof *m->comps);
	for (int i = 0; i < m->n_comps; i++) {
		struct ir_computation *c = m->comps[i];
		c->index = i;
		if (c->is_entry)
			m->entry = c;
		m->n_instrs += c->n_instrs;
	}
	if (!m->entry) {
		m->entry = m->comps[m->n_comps - 1];
		m->entry->is_entry = true;
	}
	/* callers: distinct calling instructions, by a stamp per computation */
	p->ints.n = 0;
	if (!push_ints(p, -1, (size_t)m->n_comps))
		return false;
	int *stamp = p->ints.v;
	int caller = 0;
	for (int i = 0; i < m->n_comps; i++) {
		struct ir_computation *c = m->comps[i];
		for (int k = 0; k < c->n_instrs; k++, caller++) {
			struct ir_instr *in = c->instrs[k];
			for (int j = 0; j < in->n_called; j++) {
				struct ir_computation *callee = in->called[j];
				if (stamp[callee->index] != caller) {
					stamp[callee->index] = caller;
					callee->n_callers++;
				}
				if (in->op == IR_OP_FUSION)
					callee->is_fusion = true;
			}
		}
	}
	if (!check_call_cycles(p))
		return false;
	if (p->n_out == p->cap_out) {
		int cap = p->cap_out ? p->cap_out * 2 : 4;
		if (cap > INT_MAX / 2)
			return nomem(p);
		struct ir_module **o = ts_realloc(p->out, (size_t)cap * sizeof *o);
		if (!o)
			return nomem(p);
		p->out = o;
		p->cap_out = cap;
	}
	p->out[p->n_out++] = m;
	p->m = NULL;
	return true;
}

static bool word_at(struct hp_parser *p, const char *w, size_t *len)
{
	size_t n = word_len(p, p->p);
	*len = n;
	return word_is(p->p, n, w);
}

static bool parse_text(struct hp_parser *p)
{
	for (;;) {
		skip_ws(p);
		if (p->st != TS_OK)
			return false;
		bool content = p->m && (p->m_header || p->comps.n > 0);
		/* "// -----" after a computation ends the module */
		if (content && p->comps.n > 0 && p->last_sep > p->m_last_close) {
			if (!finish_module(p, p->p))
				return false;
			content = false;
		}
		if (cur(p) < 0)
			break;
		size_t wl;
		if (word_at(p, "HloModule", &wl)) {
			if (content && !finish_module(p, p->p))
				return false;
			if (!new_module(p))
				return false;
			uint32_t col;
			locate(p, p->p, &p->m->line, &col);
			p->m_header = true;
			if (!parse_header(p))
				return false;
			continue;
		}
		if (!p->m) {
			if (!new_module(p))
				return false;
			uint32_t col;
			locate(p, p->p, &p->m->line, &col);
		}
		if (word_at(p, "FileNames", &wl) || word_at(p, "FunctionNames", &wl) ||
		    word_at(p, "FileLocations", &wl) || word_at(p, "StackFrames", &wl)) {
			if (!skip_frame_table(p, wl))
				return false;
			continue;
		}
		bool entry = false;
		const char *at = p->p;
		if (word_at(p, "ENTRY", &wl)) {
			entry = true;
			p->p += wl;
			if (++p->n_entry > 1)
				return fail(p, at, "more than one ENTRY computation in module '%s'",
					    p->m->name);
		}
		struct ir_computation *c;
		if (!parse_computation(p, false, NULL, &c))
			return false;
		c->is_entry = entry;
	}
	if (p->m && (p->m_header || p->comps.n > 0))
		return finish_module(p, p->p);
	/* a module begun for a trailing stack-frame table holds nothing */
	ir_module_free(p->m);
	p->m = NULL;
	if (p->n_out == 0)
		return fail(p, p->p, "no HLO computation found");
	return true;
}

static void parser_free(struct hp_parser *p)
{
	vec_free(&p->shapes);
	vec_free(&p->calls);
	vec_free(&p->ops);
	vec_free(&p->ints);
	vec_free(&p->order);
	vec_free(&p->comps);
	vec_free(&p->crefs);
	table_free(&p->comp_names);
	for (int i = 0; i < HP_MAX_DEPTH && p->levels[i]; i++) {
		table_free(&p->levels[i]->names);
		table_free(&p->levels[i]->params);
		vec_free(&p->levels[i]->instrs);
		vec_free(&p->levels[i]->refs);
		ts_free(p->levels[i]);
	}
}

enum ts_status hlo_parse(const char *file, const char *text, size_t len,
			 struct ir_module ***out, int *n_out, struct ts_diag *d)
{
	*out = NULL;
	*n_out = 0;
	if (!text && len)
		return TS_ERR_MISUSE;
	struct hp_parser *p = ts_calloc(1, sizeof *p);
	if (!p) {
		ts_diag_set(d, file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	p->file = file ? file : "<input>";
	p->text = text ? text : "";
	p->end = p->text + len;
	p->p = p->text;
	p->d = d;
	p->lc_pos = p->lc_line_start = p->text;
	p->lc_line = 1;
	p->last_sep = p->text; /* "none yet": compared with m_last_close */
	kw_init(p);
	bool ok = parse_text(p);
	enum ts_status st = p->st;
	for (int i = 0; ok && st == TS_OK && i < p->n_out; i++)
		if ((st = ir_verify(p->out[i], d)) != TS_OK) {
			d->file = p->file; /* not the module's copy: it goes */
			d->src = p->text;
			d->src_len = len;
			ok = false;
		}
	if (ok && st == TS_OK) {
		*out = p->out;
		*n_out = p->n_out;
	} else {
		TS_ASSERT(st != TS_OK); /* every failure records its error */
		for (int i = 0; i < p->n_out; i++)
			ir_module_free(p->out[i]);
		ts_free(p->out);
		ir_module_free(p->m);
	}
	parser_free(p);
	ts_free(p);
	return st;
}

enum ts_status hlo_parse_file(const char *path, char **text_out,
			      struct ir_module ***out, int *n_out,
			      struct ts_diag *d)
{
	size_t len;
	*out = NULL;
	*n_out = 0;
	enum ts_status st = ts_read_file(path, text_out, &len, d);
	if (st != TS_OK)
		return st;
	return hlo_parse(path, *text_out, len, out, n_out, d);
}
