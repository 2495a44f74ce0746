/*
 * hlo_parse_int.h: the insides of the HLO text parser (docs/HLO.md section
 * 1), shared by its four files and nothing else (the interface is ir.h):
 *   hlo_lex.c    errors and locations, growable vectors and name tables,
 *                the keyword table, whitespace and comments, names,
 *                integers, strings and the skipping of values;
 *   hlo_shape.c  shapes and layouts;
 *   hlo_attrs.c  attribute values, which attributes an opcode takes or
 *                needs, and the module header's aliasing lists;
 *   hlo_parse.c  instructions, computations, modules: hlo_parse().
 * A hand-written recursive-descent parser working directly on the bytes:
 * no token stream and no per-token allocation; names are looked up in
 * arena-free hash tables and resolved per scope in a second pass.
 */
#ifndef HLO_PARSE_INT_H
#define HLO_PARSE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

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
extern const uint8_t hp_char_class[256];

static inline bool has_class(int c, int cls)
{
	return (unsigned)c < 256 && (hp_char_class[c] & cls);
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
	/* line cache for hp_locate(): line number of lc_pos and its line start */
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

/* ---- hlo_lex.c ---- */

/* hp_fail, hp_fail_lc, hp_expected, hp_nomem record the first error (at a
 * byte, at line:col, "expected X, got Y", out of memory) and return false;
 * each function's comment is at its definition. */

bool hp_accept(struct hp_parser *p, int c);
bool hp_expect_char(struct hp_parser *p, int c, const char *what);
bool hp_expected(struct hp_parser *p, const char *what);
__attribute__((format(printf, 3, 4)))
bool hp_fail(struct hp_parser *p, const char *at, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
bool hp_fail_lc(struct hp_parser *p, uint32_t line, uint32_t col, const char *fmt, ...);
void hp_kw_add(struct hp_parser *p, const char *s, int op, int type, int attr);
const struct hp_kw *hp_kw_get(const struct hp_parser *p, const char *s,
			      size_t len);
uint32_t hp_line_of(struct hp_parser *p, const char *at);
void hp_locate(struct hp_parser *p, const char *at, uint32_t *line,
	       uint32_t *col);
bool hp_nomem(struct hp_parser *p);
bool hp_push_ints(struct hp_parser *p, int value, size_t count);
bool hp_read_int(struct hp_parser *p, int64_t *out);
bool hp_read_name(struct hp_parser *p, const char **s, uint32_t *n);
bool hp_read_string(struct hp_parser *p, const char **out);
const char *hp_skip_group(struct hp_parser *p, const char *q);
const char *hp_skip_string(struct hp_parser *p, const char *q);
bool hp_skip_value(struct hp_parser *p, bool glued_only);
const char *hp_skip_ws_from(struct hp_parser *p, const char *q);
bool hp_starts_instr(struct hp_parser *p, const char *q);
void hp_table_free(struct hp_table *t);
void *hp_table_get(struct hp_table *t, const char *key, uint32_t len);
void *hp_table_put(struct hp_parser *p, struct hp_table *t, const char *key,
		   uint32_t len, void *val);
void hp_table_reset(struct hp_table *t);
int hp_tok_len(const struct hp_parser *p, const char *at);
void hp_vec_free(struct hp_vec *v);
void *hp_vec_push(struct hp_parser *p, struct hp_vec *v, size_t elem);
bool hp_word_is(const char *s, size_t n, const char *w);

/* ---- hlo_shape.c ---- */

bool hp_enter(struct hp_parser *p);
bool hp_parse_shape(struct hp_parser *p, struct ir_shape *out);
bool hp_parse_shape_after_word(struct hp_parser *p, const char *ws,
			       size_t wn, struct ir_shape *out);

/* ---- hlo_attrs.c ---- */

void hp_kw_init(struct hp_parser *p);
bool hp_parse_aliasing(struct hp_parser *p, bool donor);
bool hp_parse_int_attr(struct hp_parser *p, int64_t *out, const char *attr);
bool hp_parse_int_list(struct hp_parser *p, struct ir_ints *out,
		       const char *attr);
bool hp_parse_attrs(struct hp_parser *p, struct hp_level *lv,
		    struct ir_instr *in, bool allow_attrs);

/* ---- hlo_parse.c ---- */

bool hp_parse_computation(struct hp_parser *p, bool inline_body,
			  const char *gen_name, struct ir_computation **out);

/* ---- inline lexical helpers (hlo_lex.c has the rest) ---- */

static inline int cur(const struct hp_parser *p)
{
	return p->p < p->end ? (unsigned char)*p->p : -1;
}

static inline int peek_at(const struct hp_parser *p, const char *q)
{
	return q < p->end ? (unsigned char)*q : -1;
}

/* skip_ws_from with the common cases inline: no blank, or one space. */
static inline const char *ws_end(struct hp_parser *p, const char *q)
{
	if (q < p->end) {
		if (!(hp_char_class[(unsigned char)*q] & (CC_S | CC_SLASH)))
			return q;
		if (*q == ' ' && q + 1 < p->end &&
		    !(hp_char_class[(unsigned char)q[1]] & (CC_S | CC_SLASH)))
			return q + 1;
	}
	return hp_skip_ws_from(p, q);
}

static inline void skip_ws(struct hp_parser *p)
{
	p->p = ws_end(p, p->p);
}

/* Length of the word [A-Za-z0-9_.-]* at q, not taking the '-' of "->". */
static inline size_t word_len(const struct hp_parser *p, const char *q)
{
	const char *s = q, *e = p->end;
	uint8_t k;
	while (q < e && ((k = hp_char_class[(unsigned char)*q]) & CC_W)) {
		if ((k & CC_DASH) && q + 1 < e && q[1] == '>')
			break;
		q++;
	}
	return (size_t)(q - s);
}

#endif /* HLO_PARSE_INT_H */
