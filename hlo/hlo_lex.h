/*
 * hlo_lex.h: the lexical layer of the HLO text parser (docs/HLO.md section
 * 1): the reader's state (struct hp_parser: the cursor, the first error,
 * the keyword table, the line cache, the scratch vectors), character
 * classes, growable vectors, name tables, and the functions that read
 * words, numbers, strings and whitespace or skip whole values. hlo_lex.c
 * implements it and includes nothing else of the parser; the grammar
 * above it (shapes, attributes, instructions: hlo_parse_int.h) uses it.
 */
#ifndef HLO_LEX_H
#define HLO_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir.h"

#define HP_MAX_DEPTH 256  /* nesting of shapes, groups and inline bodies */
#define HP_MAX_RANK 128   /* dims of a shape / entries of a small int list */
#define HP_MAX_PARAMS (1 << 20) /* parameter(N): N below this */
#define HP_KW_BITS 10     /* log2 of the keyword hash slots */
#define HP_KW_CAP (1 << HP_KW_BITS)
#define HP_KW_MAX_LEN 40  /* longer words are never keywords */
#define HP_MSG_TOK 48     /* bytes of a token echoed in a message */
#define HP_MAX_TILE_DIM ((int64_t)1 << 24) /* a layout tile's extent */

/* ---- small helpers --------------------------------------------------------- */

/* Character classes: word [A-Za-z0-9_.-], alpha [A-Za-z_], digit, space,
 * and '/', which the blank skipper must look at twice (it may open a
 * comment). */
enum { CC_W = 1, CC_A = 2, CC_D = 4, CC_S = 8, CC_SLASH = 16 };
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

/* Loads of 8 and 4 bytes at any alignment (memcpy compiles to one move). */
static inline uint64_t load64(const char *s)
{
	uint64_t v;
	memcpy(&v, s, sizeof v);
	return v;
}
static inline uint32_t load32(const char *s)
{
	uint32_t v;
	memcpy(&v, s, sizeof v);
	return v;
}

/* memcmp(a, b, n) == 0 for the short keys of the tables (no call): 8 bytes
 * at a time, the last load overlapping the one before it. */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
	if (n >= 8) {
		for (size_t i = 0; i + 8 < n; i += 8)
			if (load64(a + i) != load64(b + i))
				return false;
		return load64(a + n - 8) == load64(b + n - 8);
	}
	if (n >= 4)
		return load32(a) == load32(b) &&
		       load32(a + n - 4) == load32(b + n - 4);
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

/* Name -> pointer hash table for one scope: the entries in insertion order,
 * and an index of 8-byte slots into them, so that probing reads a small
 * array (a 1,404-name computation's is 16 KB) and a hit on a recent name an
 * entry still in the cache. Slots are valid when their gen equals the
 * table's gen, so a reset is one increment. */
struct hp_entry {
	const char *key;  /* not owned: text or arena */
	void *val;        /* the instruction or computation */
	uint32_t len;     /* bytes of key */
	uint32_t hash;    /* hash_bytes(key, len) */
};
struct hp_slot {
	uint32_t gen;     /* live when equal to the table's gen */
	uint32_t idx;     /* its entry (fewer than 2^32: each has a name in
	                     the text, which is under 4 GB) */
};
struct hp_table {
	struct hp_slot *slots;
	size_t cap;           /* slots: power of two, 0 before first use */
	struct hp_vec e;      /* struct hp_entry: the live ones */
	uint32_t gen;         /* current generation, starts at 1 */
};

/* Keywords: opcodes, element types and attribute names share one table. */
struct hp_kw {
	const char *s; /* static name, NULL for an empty slot */
	uint32_t len;  /* bytes of s */
	uint16_t op;   /* enum ir_op or 0 */
	uint8_t type;  /* enum ir_type or 0 */
	uint8_t attr;  /* enum hp_attr or 0 */
};

struct hp_level; /* hlo_parse_int.h: one nesting level of a body */

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
	/* parses an inline computation body (hlo_parse.c sets it, the
	 * attribute reader calls it: the grammar is recursive, the files are
	 * not) */
	bool (*parse_body)(struct hp_parser *p, bool inline_body,
			   const char *gen_name, struct ir_computation **out);
	/* line cache for hp_locate(): line number of lc_pos and its line start */
	const char *lc_pos, *lc_line_start;
	uint32_t lc_line;
	const char *last_sep;         /* last "// -----" comment seen */
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
	struct hp_vec aliases;        /* struct ir_alias: one header list */
	struct hp_level *levels[HP_MAX_DEPTH]; /* allocated on first use */
	/* finished modules */
	struct ir_module **out;       /* ts_malloc'd, handed to the caller */
	int n_out, cap_out;           /* used and allocated entries of out */
};

/* ---- hlo_lex.c ---- */

/* hp_fail, hp_fail_lc, hp_expected, hp_nomem record the first error (at a
 * byte, at line:col, "expected X, got Y", out of memory) and return false;
 * each function's comment is at its definition. */

bool hp_expected(struct hp_parser *p, const char *what);
__attribute__((format(printf, 3, 4)))
bool hp_fail(struct hp_parser *p, const char *at, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
bool hp_fail_lc(struct hp_parser *p, uint32_t line, uint32_t col, const char *fmt, ...);
/* The keyword table is static, built once (hp_kw_init): tpusim parses on
 * one thread. */
void hp_kw_add(const char *s, int op, int type, int attr);
const struct hp_kw *hp_kw_get(const char *s, size_t len);
uint32_t hp_line_of(struct hp_parser *p, const char *at);
void hp_locate(struct hp_parser *p, const char *at, uint32_t *line,
	       uint32_t *col);
bool hp_nomem(struct hp_parser *p);
bool hp_push_ints(struct hp_parser *p, int value, size_t count);
bool hp_read_int_any(struct hp_parser *p, int64_t *out);
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
void *hp_vec_grow(struct hp_parser *p, struct hp_vec *v, size_t elem,
		  size_t count);

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

/* An integer after optional blanks (hp_read_int_any), with the common case
 * inline: at most 9 decimal digits, no sign. */
static inline bool hp_read_int(struct hp_parser *p, int64_t *out)
{
	const char *q = ws_end(p, p->p), *c = q;
	const char *lim = p->end - q > 9 ? q + 9 : p->end;
	int64_t v = 0;
	unsigned d;
	while (c < lim && (d = (unsigned)(unsigned char)*c - '0') < 10) {
		v = v * 10 + d;
		c++;
	}
	if (c == q || (c < p->end && is_digit((unsigned char)*c)))
		return hp_read_int_any(p, out);
	p->p = c;
	*out = v;
	return true;
}

/* Length of the word [A-Za-z0-9_.-]* at q, not taking the '-' of "->"
 * ('>' ends a word, so that '-' can only be its last byte). Eight bytes a
 * step while eight remain: their word bytes as a mask whose lowest clear
 * bit is the end, so a word has one loop exit to predict, not one per
 * step of a byte loop. */
static inline size_t word_len(const struct hp_parser *p, const char *q)
{
	const char *s = q, *e = p->end;
	const uint8_t *cc = hp_char_class;
	for (;;) {
		if (e - q < 8) {
			while (q < e && (cc[(unsigned char)*q] & CC_W))
				q++;
			break;
		}
		uint32_t m = 0;
		for (int i = 0; i < 8; i++)
			m |= (uint32_t)(cc[(unsigned char)q[i]] & CC_W) << i;
		if (m != 0xff) {
			q += __builtin_ctz(~m);
			break;
		}
		q += 8;
	}
	if (q > s && q[-1] == '-' && q < e && *q == '>')
		q--;
	return (size_t)(q - s);
}

/* The word [s, s+n) is w. same_bytes, not memcmp: for a literal w it
 * comes down to a compare or two, not a call. */
static inline bool hp_word_is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && same_bytes(s, w, n);
}

/* Room for count more elements of v (hp_vec_grow when it must grow). */
static inline void *hp_vec_push_n(struct hp_parser *p, struct hp_vec *v,
				  size_t elem, size_t count)
{
	if (v->cap - v->n < count)
		return hp_vec_grow(p, v, elem, count);
	void *first = (char *)v->v + elem * v->n;
	v->n += count;
	return first;
}

static inline void *hp_vec_push(struct hp_parser *p, struct hp_vec *v, size_t elem)
{
	return hp_vec_push_n(p, v, elem, 1);
}

/* Skips blanks; consumes c when it comes next. */
static inline bool hp_accept(struct hp_parser *p, int c)
{
	skip_ws(p);
	if (cur(p) == c) {
		p->p++;
		return true;
	}
	return false;
}

/* hp_accept, else "expected WHAT" recorded (false). */
static inline bool hp_expect_char(struct hp_parser *p, int c, const char *what)
{
	return hp_accept(p, c) || hp_expected(p, what);
}

#endif /* HLO_LEX_H */
