/*
 * hlo_lex.c: the HLO parser's lexical layer (hlo_parse_int.h): errors at
 * line:col with the source line, growable vectors and name tables, the
 * keyword table, whitespace and comments, names, integers, strings, and
 * the atom rule that skips any attribute value (docs/HLO.md 1.10).
 */
#include "hlo_lex.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Character classes: word [A-Za-z0-9_.-], alpha [A-Za-z_], digit, space,
 * and '/' (hlo_lex.h); L and D are the classes of a letter (or '_') and
 * of a digit. */
#define L (CC_W | CC_A)
#define D (CC_W | CC_D)
const uint8_t hp_char_class[256] = {
	['a'] = L, ['b'] = L, ['c'] = L, ['d'] = L, ['e'] = L, ['f'] = L,
	['g'] = L, ['h'] = L, ['i'] = L, ['j'] = L, ['k'] = L, ['l'] = L,
	['m'] = L, ['n'] = L, ['o'] = L, ['p'] = L, ['q'] = L, ['r'] = L,
	['s'] = L, ['t'] = L, ['u'] = L, ['v'] = L, ['w'] = L, ['x'] = L,
	['y'] = L, ['z'] = L, ['A'] = L, ['B'] = L, ['C'] = L, ['D'] = L,
	['E'] = L, ['F'] = L, ['G'] = L, ['H'] = L, ['I'] = L, ['J'] = L,
	['K'] = L, ['L'] = L, ['M'] = L, ['N'] = L, ['O'] = L, ['P'] = L,
	['Q'] = L, ['R'] = L, ['S'] = L, ['T'] = L, ['U'] = L, ['V'] = L,
	['W'] = L, ['X'] = L, ['Y'] = L, ['Z'] = L, ['0'] = D, ['1'] = D,
	['2'] = D, ['3'] = D, ['4'] = D, ['5'] = D, ['6'] = D, ['7'] = D,
	['8'] = D, ['9'] = D, ['_'] = L, ['.'] = CC_W,
	['-'] = CC_W, ['/'] = CC_SLASH, [' '] = CC_S, ['\n'] = CC_S,
	['\t'] = CC_S, ['\r'] = CC_S, ['\f'] = CC_S, ['\v'] = CC_S,
};
#undef L
#undef D

/* One step of the name hash: w mixed in by a multiply (which carries each
 * bit up) and a fold of the high half down (which brings them back). */
static inline uint64_t hash_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15u;
	return h ^ (h >> 32);
}

/* Hash of a name, 8 bytes a step (names are mostly 8 to 20 bytes). */
static uint32_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = n;
	for (; n >= 8; s += 8, n -= 8)
		h = hash_mix(h, load64(s));
	if (n >= 4)
		h = hash_mix(h, load32(s) | (uint64_t)load32(s + n - 4) << 32);
	else if (n)
		h = hash_mix(h, (unsigned char)s[0] | (unsigned char)s[n / 2] << 8 |
				(unsigned char)s[n - 1] << 16);
	return (uint32_t)h;
}

/* ---- errors and locations ------------------------------------------------ */

void hp_locate(struct hp_parser *p, const char *at, uint32_t *line,
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

uint32_t hp_line_of(struct hp_parser *p, const char *at)
{
	uint32_t line, col;
	hp_locate(p, at, &line, &col);
	return line;
}

/* Records the first error at line:col and returns false. */
__attribute__((format(printf, 4, 5))) bool
hp_fail_lc(struct hp_parser *p, uint32_t line, uint32_t col, const char *fmt, ...)
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
__attribute__((format(printf, 3, 4))) bool
hp_fail(struct hp_parser *p, const char *at, const char *fmt, ...)
{
	if (p->st != TS_OK)
		return false;
	uint32_t line, col;
	hp_locate(p, at, &line, &col);
	char msg[TS_DIAG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return hp_fail_lc(p, line, col, "%s", msg);
}

bool hp_nomem(struct hp_parser *p)
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
int hp_tok_len(const struct hp_parser *p, const char *at)
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
bool hp_expected(struct hp_parser *p, const char *what)
{
	if (p->p >= p->end)
		return hp_fail(p, p->p, "expected %s, got end of input", what);
	int n = hp_tok_len(p, p->p);
	return hp_fail(p, p->p, "expected %s, got '%.*s'", what, n, p->p);
}

/* ---- vectors and tables -------------------------------------------------- */

/* Grows v so that count (>= 1) more elements of elem bytes fit, and hands
 * them out; NULL (and p->st set) when memory runs out. */
void *hp_vec_grow(struct hp_parser *p, struct hp_vec *v, size_t elem,
		  size_t count)
{
	size_t cap = v->cap ? v->cap : 16;
	while (cap - v->n < count) {
		if (cap > SIZE_MAX / 2 / elem) {
			hp_nomem(p);
			return NULL;
		}
		cap *= 2;
	}
	void *nv = ts_realloc(v->v, cap * elem);
	if (!nv) {
		hp_nomem(p);
		return NULL;
	}
	v->v = nv;
	v->cap = cap;
	void *first = (char *)v->v + elem * v->n;
	v->n += count;
	return first;
}

/* Appends `count` copies of `value` to the int scratch vector p->ints. */
bool hp_push_ints(struct hp_parser *p, int value, size_t count)
{
	if (count == 0)
		return true;
	int *v = hp_vec_push_n(p, &p->ints, sizeof *v, count);
	if (!v)
		return false;
	for (size_t i = 0; i < count; i++)
		v[i] = value;
	return true;
}

void hp_vec_free(struct hp_vec *v)
{
	ts_free(v->v);
	v->v = NULL;
	v->n = v->cap = 0;
}

void hp_table_reset(struct hp_table *t)
{
	t->e.n = 0;
	if (++t->gen == 0) {
		if (t->slots)
			memset(t->slots, 0, t->cap * sizeof *t->slots);
		t->gen = 1;
	}
}

/* The slot of key, or the empty one where it would go. */
static struct hp_slot *table_find(struct hp_table *t, const char *key,
				  uint32_t len, uint32_t h)
{
	if (!t->cap)
		return NULL;
	const struct hp_entry *es = t->e.v;
	size_t mask = t->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct hp_slot *s = &t->slots[i];
		if (s->gen != t->gen)
			return s;
		const struct hp_entry *e = &es[s->idx];
		if (e->hash == h && e->len == len && same_bytes(e->key, key, len))
			return s;
	}
}

static void *entry_val(const struct hp_table *t, const struct hp_slot *s)
{
	return ((const struct hp_entry *)t->e.v)[s->idx].val;
}

void *hp_table_get(struct hp_table *t, const char *key, uint32_t len)
{
	struct hp_slot *s = table_find(t, key, len, hash_bytes(key, len));
	return s && s->gen == t->gen ? entry_val(t, s) : NULL;
}

/* Doubles the slots (64 at first) and indexes the live entries again. */
static bool table_grow(struct hp_parser *p, struct hp_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	if (cap > SIZE_MAX / sizeof(struct hp_slot))
		return hp_nomem(p);
	struct hp_slot *ns = ts_calloc(cap, sizeof *ns);
	if (!ns)
		return hp_nomem(p);
	const struct hp_entry *es = t->e.v;
	for (size_t k = 0; k < t->e.n; k++) {
		size_t i = es[k].hash & (cap - 1);
		while (ns[i].gen == t->gen)
			i = (i + 1) & (cap - 1);
		ns[i] = (struct hp_slot){t->gen, (uint32_t)k};
	}
	ts_free(t->slots);
	t->slots = ns;
	t->cap = cap;
	return true;
}

/* Inserts key -> val; returns the existing value if key is present (and
 * does not insert), NULL after inserting. Sets p->st on allocation failure. */
void *hp_table_put(struct hp_parser *p, struct hp_table *t, const char *key,
		   uint32_t len, void *val)
{
	if (t->gen == 0)
		t->gen = 1;
	/* Grows past three quarters full: linear probing stays short there
	 * (2.5 probes a hit at the limit), and the slots are 8 bytes. */
	if ((t->e.n + 1) * 4 > t->cap * 3 && !table_grow(p, t))
		return NULL;
	uint32_t h = hash_bytes(key, len);
	struct hp_slot *s = table_find(t, key, len, h);
	if (s->gen == t->gen)
		return entry_val(t, s);
	struct hp_entry *e = hp_vec_push(p, &t->e, sizeof *e);
	if (!e)
		return NULL;
	*e = (struct hp_entry){key, val, len, h};
	*s = (struct hp_slot){t->gen, (uint32_t)(t->e.n - 1)};
	return NULL;
}

void hp_table_free(struct hp_table *t)
{
	ts_free(t->slots);
	hp_vec_free(&t->e);
	memset(t, 0, sizeof *t);
}

/* Keyword hash: the length and three bytes packed in a word, spread by a
 * Fibonacci multiply and taken from its top bits. O(1) per lookup; probing
 * sorts out the few collisions. */
static inline uint32_t kw_hash(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t w = u[0] | (uint32_t)u[len / 2] << 8 | (uint32_t)u[len - 1] << 16 |
		     (uint32_t)len << 24;
	return (w * 0x9e3779b1u) >> (32 - HP_KW_BITS);
}

static struct hp_kw kw_table[HP_KW_CAP];

void hp_kw_add(const char *s, int op, int type, int attr)
{
	uint32_t len = (uint32_t)strlen(s);
	TS_ASSERT(len > 0 && len <= HP_KW_MAX_LEN);
	for (uint32_t i = kw_hash(s, len);;
	     i = (i + 1) & (HP_KW_CAP - 1)) {
		struct hp_kw *k = &kw_table[i];
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

const struct hp_kw *hp_kw_get(const char *s, size_t len)
{
	if (len == 0 || len > HP_KW_MAX_LEN)
		return NULL;
	for (uint32_t i = kw_hash(s, len);;
	     i = (i + 1) & (HP_KW_CAP - 1)) {
		const struct hp_kw *k = &kw_table[i];
		if (!k->s)
			return NULL;
		if (k->len == len && same_bytes(k->s, s, len))
			return k;
	}
}

/* ---- lexical layer -------------------------------------------------------- */

/* Skips whitespace and comments from q; returns the first other byte. A
 * comment reading "// -----" is remembered as a module separator. */
const char *hp_skip_ws_from(struct hp_parser *p, const char *q)
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
			const char *nl = memchr(q + 2, '\n', (size_t)(p->end - q - 2));
			const char *cr = memchr(q + 2, '\r',
						(size_t)((nl ? nl : p->end) - q - 2));
			q = cr ? cr : nl ? nl : p->end;
		} else if (q[1] == '*') {
			const char *c = q + 2;
			for (;;) {
				c = memchr(c, '*', (size_t)(p->end - c));
				if (!c || c + 1 >= p->end) {
					hp_fail(p, q, "unterminated /* comment");
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

/* A name: optional '%', then a word starting with a letter or '_' (a digit
 * too after '%'). Does not skip whitespace first. */
bool hp_read_name(struct hp_parser *p, const char **s, uint32_t *n)
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
		return hp_fail(p, q, "name too long");
	*s = q;
	*n = (uint32_t)len;
	p->p = q + len;
	return true;
}

/* Signed decimal integer; overflow is an error. */
bool hp_read_int_any(struct hp_parser *p, int64_t *out)
{
	skip_ws(p);
	const char *start = p->p, *q = p->p;
	bool neg = q < p->end && *q == '-';
	if (neg)
		q++;
	if (!is_digit(peek_at(p, q)))
		return hp_expected(p, "an integer");
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
				return hp_fail(p, start, "integer out of range");
			v = v * 10 + dgt;
		}
	}
	p->p = q;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* Skips a quoted string starting at q (on its quote); returns the byte after
 * the closing quote, or NULL (error set) when it is not closed. */
const char *hp_skip_string(struct hp_parser *p, const char *q)
{
	char quote = *q;
	const char *s = q + 1;
	for (;;) {
		const char *c = memchr(s, quote, (size_t)(p->end - s));
		if (!c) {
			hp_fail(p, q, "unterminated string (opened at line %u)",
			     hp_line_of(p, q));
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
const char *hp_skip_group(struct hp_parser *p, const char *q)
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
				hp_fail(p, c, "nesting deeper than %d levels",
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
					hp_fail(p, c, "unexpected '%c'", *c);
				else
					hp_fail(p, c,
					     "'%c' does not match '%c' opened at line %u",
					     *c, *open_at[n - 1],
					     hp_line_of(p, open_at[n - 1]));
				return NULL;
			}
			c++;
			if (--n == 0)
				return c;
			break;
		case '"':
		case '\'':
			c = hp_skip_string(p, c);
			if (!c)
				return NULL;
			break;
		case '/':
			if (c + 1 < p->end && (c[1] == '/' || c[1] == '*')) {
				c = hp_skip_ws_from(p, c);
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
	hp_fail(p, p->end, "unexpected end of input: '%c' opened at line %u is not closed",
	     *open_at[n - 1], hp_line_of(p, open_at[n - 1]));
	return NULL;
}

/* True when the text at q starts an instruction: "ROOT", or a name followed
 * (after optional whitespace) by '='. */
bool hp_starts_instr(struct hp_parser *p, const char *q)
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
	if (!pct && hp_word_is(s, n, "ROOT"))
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
bool hp_skip_value(struct hp_parser *p, bool glued_only)
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
		    (c < 0 || is_space(c) || hp_skip_ws_from(p, p->p) != p->p))
			break;
		if (c < 0) {
			if (atoms)
				break;
			return hp_expected(p, "an attribute value");
		}
		if (c == ',' || c == '}') {
			if (atoms)
				break;
			return hp_expected(p, "an attribute value");
		}
		if (atoms && p->p != before && hp_starts_instr(p, p->p))
			break;
		if (c == '{' || c == '(' || c == '[') {
			const char *e = hp_skip_group(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == '"' || c == '\'') {
			const char *e = hp_skip_string(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == ')' || c == ']') {
			return hp_fail(p, p->p, "unexpected '%c'", c);
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
bool hp_read_string(struct hp_parser *p, const char **out)
{
	skip_ws(p);
	int q = cur(p);
	if (q != '"' && q != '\'')
		return hp_expected(p, "a string");
	const char *s = p->p;
	const char *e = hp_skip_string(p, s);
	if (!e)
		return false;
	size_t n = (size_t)(e - s) - 2;
	char *r = ts_arena_alloc(&p->m->arena, n + 1);
	if (!r)
		return hp_nomem(p);
	/* the bytes before the first backslash copied as they are */
	const char *bs = memchr(s + 1, '\\', n);
	size_t k = bs ? (size_t)(bs - s - 1) : n;
	memcpy(r, s + 1, k);
	for (const char *c = s + 1 + k; c < e - 1; c++) {
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

