/*
 * hlo_shape.c: shapes and layouts of HLO text (docs/HLO.md 1.1, 1.3, 1.5-1.6):
 * element types, dimensions (static, bounded, unbounded), tuples, buffers,
 * and layouts with tiles, memory spaces, element sizes, sparse level types
 * and physical shapes. Element counts and bytes must fit 63 bits.
 */
#include "hlo_parse_int.h"

#include <limits.h>
#include <string.h>

/* ---- shapes --------------------------------------------------------------- */

/* A shape is cleared by copying this one: GCC clears it in place with
 * "rep stos", whose start-up costs more than the copy's few moves. */
static const struct ir_shape no_shape;

bool hp_enter(struct hp_parser *p)
{
	if (++p->depth > HP_MAX_DEPTH) {
		p->depth--;
		return hp_fail(p, p->p, "nesting deeper than %d levels", HP_MAX_DEPTH);
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
			if (!hp_read_int(p, &v))
				return false;
			if (v <= 0)
				return hp_fail(p, at, "malformed layout: tile dimension %lld must be positive",
					    (long long)v);
			if (v > HP_MAX_TILE_DIM)
				return hp_fail(p, at, "malformed layout: tile dimension %lld is larger than %lld",
					    (long long)v, (long long)HP_MAX_TILE_DIM);
		}
		if (t->rank == IR_MAX_TILE_RANK)
			return hp_fail(p, at, "malformed layout: tile has more than %d dimensions",
				    IR_MAX_TILE_RANK);
		t->dims[t->rank++] = v;
		if (hp_accept(p, ')'))
			return true;
		if (!hp_expect_char(p, ',', "',' or ')' in a tile"))
			return false;
	}
}

/* '(' INT ')' after a layout item letter. */
static bool parse_paren_int(struct hp_parser *p, int64_t *v, const char *item)
{
	skip_ws(p);
	if (cur(p) != '(')
		return hp_fail(p, p->p, "malformed layout: expected '(' after %s", item);
	p->p++;
	if (!hp_read_int(p, v))
		return false;
	return hp_expect_char(p, ')', "')'");
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
			if (!hp_read_int(p, &v))
				return false;
			if (n == HP_MAX_RANK)
				return hp_fail(p, at, "malformed layout: too many dimensions");
			if (v < 0 || v >= s->rank)
				return hp_fail(p, at,
					    "malformed layout: dimension %lld out of range for rank %d",
					    (long long)v, s->rank);
			for (int i = 0; i < n; i++)
				if (m2m[i] == v)
					return hp_fail(p, at,
						    "malformed layout: dimension %lld repeated",
						    (long long)v);
			m2m[n++] = (int)v;
			if (!hp_accept(p, ','))
				break;
		}
	}
	if (n != s->rank)
		return hp_fail(p, open,
			    "malformed layout: %d dimensions for a shape of rank %d",
			    n, s->rank);
	struct ir_layout *l = &s->layout;
	l->present = true;
	if (n && !p->discard) {
		l->minor_to_major = ts_arena_dup(a, m2m, sizeof(int) * (size_t)n);
		if (!l->minor_to_major)
			return hp_nomem(p);
	}
	if (hp_accept(p, ':')) {
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
					return hp_fail(p, p->p, "malformed layout: expected '(' after T");
				while (cur(p) == '(') {
					if (nt == (int)TS_ARRAY_LEN(tiles))
						return hp_fail(p, p->p, "malformed layout: too many tiles");
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
					return hp_fail(p, at, "malformed layout: bad %c(%lld)",
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
				if (!hp_expect_char(p, '(', "'(' after D"))
					return false;
				for (;;) {
					skip_ws(p);
					int lv = cur(p);
					if (lv != 'D' && lv != 'C' && lv != 'S' && lv != 'H')
						return hp_fail(p, p->p, "malformed layout: expected a "
								     "DimLevelType abbreviation (D, C, "
								     "S or H), got '%.*s'",
							    hp_tok_len(p, p->p), p->p);
					sparse |= lv != 'D';
					p->p++;
					while (cur(p) == '+' || cur(p) == '~')
						p->p++;
					skip_ws(p);
					if (hp_accept(p, ')'))
						break;
					if (!hp_expect_char(p, ',', "',' or ')' in D(...)"))
						return false;
				}
			} else if (c == '#' || c == '*' || c == 'P' || c == 'S') {
				if (c == 'P')
					phys = at;
				if (c == 'S')
					p->p++; /* "SC" */
				skip_ws(p);
				if (cur(p) != '(')
					return hp_fail(p, p->p, "malformed layout: expected '(' after %c", c);
				/* SC may repeat: SC(0:1)SC(1:2) */
				do {
					const char *e = hp_skip_group(p, p->p);
					if (!e)
						return false;
					p->p = e;
				} while (c == 'S' && p->end - p->p >= 3 &&
					 memcmp(p->p, "SC(", 3) == 0 && (p->p += 2));
			} else {
				return hp_fail(p, at, "malformed layout: unexpected '%c'", c);
			}
		}
		if (phys && !sparse)
			return hp_fail(p, phys, "malformed layout: it has a physical shape, "
					     "but is not for a sparse array");
		/* Padded to its tiles (the default ones when it gives none)
		 * and stored at its E(n) size, the array must fit 2^60 bytes
		 * as its elements do (parse_array_shape): every later size is
		 * a product of these. ir_shape_padded_bytes works in doubles,
		 * which hold any such product without overflow. */
		struct ir_shape view = *s;
		view.memo = (struct ir_shape_memo){0}; /* not s's */
		view.dims = s->dims ? s->dims : p->decl_dims;
		view.layout.minor_to_major = m2m;
		view.layout.tiles = tiles;
		view.layout.n_tiles = nt;
		if (ir_shape_padded_bytes(&view) > 0x1p60)
			return hp_fail(p, open, "shape too large: padded to its tiles "
					     "it exceeds 2^60 bytes");
		if (nt && !p->discard) {
			l->tiles = ts_arena_dup(a, tiles, sizeof *l->tiles * (size_t)nt);
			if (!l->tiles)
				return hp_nomem(p);
			l->n_tiles = nt;
		}
	}
	skip_ws(p);
	if (cur(p) != '}')
		return hp_expected(p, "'}' closing the layout");
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
	int64_t own_dims[HP_MAX_RANK];
	/* a discarded shape's dims are read from p->decl_dims */
	int64_t *dims = p->discard ? p->decl_dims : own_dims;
	uint8_t kinds[HP_MAX_RANK];
	bool dynamic = false;
	int n = 0;
	*out = no_shape;
	out->type = type;
	const char *open = p->p;
	if (!hp_expect_char(p, '[', "'[' after the element type"))
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
				if (!hp_read_int(p, &v))
					return false;
				if (v < 0)
					return hp_fail(p, at, "malformed shape: negative dimension %lld",
						    (long long)v);
			}
			if (n == HP_MAX_RANK)
				return hp_fail(p, at, "malformed shape: more than %d dimensions",
					    HP_MAX_RANK);
			dynamic |= k != IR_DIM_STATIC;
			dims[n] = v;
			kinds[n++] = k;
			skip_ws(p);
			if (cur(p) == ']')
				break;
			if (cur(p) != ',')
				return hp_expected(p, "',' or ']' in the dimensions");
			p->p++;
		}
	}
	p->p++; /* ']' */
	if (type == IR_TYPE_TOKEN && n)
		return hp_fail(p, p->p - 1, "malformed shape: token has dimensions");
	/* Element count and byte size must fit in 63 bits: anything larger
	 * is no array a machine holds, and every later product would
	 * overflow. */
	int64_t elems = 1;
	for (int i = 0; i < n; i++)
		if (__builtin_mul_overflow(elems, dims[i], &elems))
			return hp_fail(p, open, "shape too large: its element count "
					     "overflows 63 bits");
	int64_t bits;
	if (__builtin_mul_overflow(elems, (int64_t)ir_type_bits(type), &bits))
		return hp_fail(p, open, "shape too large: %lld elements of %d bits "
				     "exceed 2^60 bytes",
			    (long long)elems, ir_type_bits(type));
	p->shape_bytes = bits / 8 + (bits % 8 != 0);
	out->rank = n;
	if (p->discard) {
		p->decl_type = type;
		p->decl_rank = n;
		p->decl_dynamic = dynamic;
	}
	if (n && !p->discard) {
		out->dims = ts_arena_dup(a, dims, sizeof *dims * (size_t)n);
		if (!out->dims)
			return hp_nomem(p);
		if (dynamic) {
			out->dim_kind = ts_arena_dup(a, kinds, (size_t)n);
			if (!out->dim_kind)
				return hp_nomem(p);
		}
	}
	if (layout_follows(p)) {
		skip_ws(p);
		return parse_layout(p, out);
	}
	return true;
}

/* Shape whose first word (type name or "b") has already been read:
 * [ws, wn) is that word, k its keyword (hp_kw_get, which the callers ask
 * first to tell a shape from an opcode) and p->p is after it. */
bool hp_parse_shape_after_word(struct hp_parser *p, const char *ws,
			       size_t wn, const struct hp_kw *k,
			       struct ir_shape *out)
{
	if (wn == 1 && *ws == 'b') {
		/* b(shape): a buffer, costed as its inner shape */
		if (!hp_expect_char(p, '(', "'(' after b"))
			return false;
		if (!hp_parse_shape(p, out))
			return false;
		return hp_expect_char(p, ')', "')' closing b(...)");
	}
	if (!k || !k->type)
		return hp_fail(p, ws, "expected a shape, got '%.*s'",
			    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
	return parse_array_shape(p, (enum ir_type)k->type, out);
}

bool hp_parse_shape(struct hp_parser *p, struct ir_shape *out)
{
	skip_ws(p);
	p->shape_bytes = 0;
	if (cur(p) == '(') {
		*out = no_shape; /* an array's is parse_array_shape's */
		if (!hp_enter(p))
			return false;
		const char *open = p->p;
		p->p++;
		size_t base = p->shapes.n;
		int64_t bytes = 0; /* the tuple's, like an array's, fit 63 bits */
		skip_ws(p);
		if (cur(p) != ')') {
			for (;;) {
				struct ir_shape e;
				if (!hp_parse_shape(p, &e))
					return false;
				if (__builtin_add_overflow(bytes, p->shape_bytes,
							   &bytes))
					return hp_fail(p, open,
						    "shape too large: the tuple's "
						    "elements take 2^63 bytes or "
						    "more");
				struct ir_shape *slot =
					hp_vec_push(p, &p->shapes, sizeof *slot);
				if (!slot)
					return false;
				*slot = e;
				skip_ws(p);
				if (cur(p) == ')')
					break;
				if (cur(p) != ',')
					return hp_expected(p, "',' or ')' in a tuple shape");
				p->p++;
			}
		}
		p->p++; /* ')' */
		size_t n = p->shapes.n - base;
		if (n > INT_MAX)
			return hp_fail(p, p->p, "tuple too large");
		out->type = IR_TYPE_TUPLE;
		out->n_elems = (int)n;
		if (n && !p->discard) {
			out->elems = ts_arena_dup(&p->m->arena,
						  (struct ir_shape *)p->shapes.v + base,
						  n * sizeof *out->elems);
			if (!out->elems)
				return hp_nomem(p);
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
		return hp_expected(p, "a shape");
	p->p += wn;
	if (!hp_enter(p))
		return false;
	bool ok = hp_parse_shape_after_word(p, ws, wn, hp_kw_get(ws, wn), out);
	p->depth--;
	return ok;
}

