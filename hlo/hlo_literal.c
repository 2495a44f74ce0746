/*
 * hlo_literal.c: XLA's checks of a constant's literal text against its shape,
 * without keeping any value (contract and messages in hlo_literal.h). Three
 * parts: a lexer for the tokens a literal can hold (hlo_lexer.cc), the
 * per-type value checks (SetValueInLiteralHelper, CheckParsedValueIsInRange)
 * and the structure (ParseTupleLiteral, ParseDenseLiteral).
 *
 * XLA's parser records an error and goes on in a few places (it ignores the
 * result of add_one_elem_seen for plain values and of the ',' between tuple
 * elements); a module is refused only when a parse function returns false,
 * and the text then shown is every recorded error, first one first. rec()
 * keeps that first error; the functions return false exactly where XLA's do.
 * So some texts XLA accepts are accepted here too: f32[2] constant(5) (sets
 * element 0), constant(,) for any array, {1 2} without commas, a tuple
 * without its commas, f32[2,3] {..., 1}.
 */
#include "hlo_literal.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIT_MAX_RANK 128                         /* as the HLO parser allows */
#define LIT_QUIET_NAN (UINT64_C(1) << 51)        /* QuietNanWithoutPayload<double> */
#define LIT_F64_PAYLOADS ((UINT64_C(1) << 52) - 1) /* NanPayloadBitMask<double> */
#define LIT_MAX_DIGITS 800 /* > 767: enough significant digits to round any decimal */

enum lit_kind {
	LIT_EOF,     /* e: where the literal's ')' is */
	LIT_BAD,     /* anything else XLA lexes (names, strings, kError, ...) */
	LIT_LBRACE,
	LIT_RBRACE,
	LIT_LPAREN,
	LIT_RPAREN,
	LIT_COMMA,
	LIT_DOTS,    /* ... */
	LIT_INT,     /* -?[0-9]+ */
	LIT_DECIMAL, /* float pattern, nan, -nan, nan(0xP) */
	LIT_INF,
	LIT_NEG_INF,
	LIT_TRUE,
	LIT_FALSE,
};

struct lit_tok {
	enum lit_kind kind;
	const char *at;   /* first byte */
	int64_t i;        /* LIT_INT: value as XLA's lexer keeps it */
	double d;         /* LIT_DECIMAL: value, +-inf when it overflows double */
	uint64_t payload; /* LIT_DECIMAL NaN: payload, LIT_QUIET_NAN for plain nan */
};

struct lit {
	const char *p;                  /* next byte to lex */
	const char *end;                /* e */
	struct lit_tok tok;             /* current token */
	struct hlo_literal_error *err;  /* XLA's first recorded error */
	bool recorded;                  /* err is set */
};

/* Records an error (only the first counts, as XLA prints its errors in
 * order) and returns false. */
__attribute__((format(printf, 3, 4)))
static bool rec(struct lit *L, const char *at, const char *fmt, ...)
{
	if (!L->recorded) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(L->err->msg, sizeof L->err->msg, fmt, ap);
		va_end(ap);
		L->err->at = at;
		L->recorded = true;
	}
	return false;
}

/* ==== lexer (hlo_lexer.cc) ============================================== */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int hex_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Bytes from c in set (set has no '\0'). */
static size_t span(const char *c, const char *e, const char *set)
{
	const char *q = c;
	while (q < e && *q && strchr(set, *q))
		q++;
	return (size_t)(q - c);
}

/* XLA's float pattern, [-]?((\d+|\d+[.]\d*|\d*[.]\d+)([eE][+-]?\d+)) or
 * [-]?(\d+[.]\d*|\d*[.]\d+): its end, or NULL. */
static const char *match_float(const char *c, const char *e)
{
	const char *q = c + (*c == '-');
	size_t n_int = span(q, e, "0123456789");
	size_t n_frac = 0;
	bool point = false;
	q += n_int;
	if (q < e && *q == '.') {
		point = true;
		n_frac = span(++q, e, "0123456789");
		q += n_frac;
	}
	if (n_int + n_frac == 0)
		return NULL;
	if (q < e && (*q == 'e' || *q == 'E')) {
		const char *x = q + 1;
		x += x < e && (*x == '+' || *x == '-');
		size_t n_exp = span(x, e, "0123456789");
		if (n_exp)
			return x + n_exp;
	}
	return point ? q : NULL;
}

/* The lexer tries dim labels ([0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}), DxD
 * ([0-9]+(x[0-9]+)+) and pad (-?[0-9]+_-?[0-9]+...) before integers: in a
 * literal each is a bad token. */
static bool match_pattern(const char *c, const char *e)
{
	const char *q = c;
	size_t n = span(q, e, "0123456789bf?");
	if (n >= 2 && q + n < e && q[n] == '_') {
		q += n + 1;
		n = span(q, e, "0123456789io?");
		q += n;
		if (n >= 2 && q + 1 < e && q[0] == '-' && q[1] == '>' &&
		    span(q + 2, e, "0123456789bf?") >= 2)
			return true;
	}
	q = c + (*c == '-');
	n = span(q, e, "0123456789");
	if (n == 0 || q + n + 1 >= e)
		return false;
	q += n;
	if (q[0] == 'x')
		return c[0] != '-' && is_digit(q[1]);
	if (q[0] != '_')
		return false;
	q += 1 + (q[1] == '-');
	return q < e && is_digit(*q);
}

/* A decimal's value as absl::SimpleAtod gives it (correctly rounded, +-inf
 * past DBL_MAX): strtod on a copy normalised to 0.DIGITSe<exp>, the digits
 * past LIT_MAX_DIGITS folded into one sticky digit. At most 15 digits
 * times or over a power of ten up to 1e22 are one exact double operated
 * on another, which rounds as strtod does (Clinger's fast path): no copy,
 * no strtod. */
static double decimal_value(const char *c, const char *e)
{
	static const double p10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
	};
	char buf[LIT_MAX_DIGITS + 40];
	size_t n = 0, n_int = 0, lead = 0, kept = 0;
	uint64_t digits = 0; /* the first 15 kept, as an integer */
	bool frac = false, nonzero = false, sticky = false;
	if (*c == '-')
		buf[n++] = *c++;
	buf[n++] = '0';
	buf[n++] = '.';
	for (; c < e && (is_digit(*c) || *c == '.'); c++) {
		if (*c == '.') {
			frac = true;
			continue;
		}
		n_int += !frac;
		if (!nonzero && *c == '0') {
			lead++;
			continue;
		}
		nonzero = true;
		if (kept < LIT_MAX_DIGITS) {
			buf[n++] = *c;
			if (kept < 15)
				digits = digits * 10 + (uint64_t)(*c - '0');
			kept++;
		} else if (*c != '0') {
			sticky = true;
		}
	}
	if (!nonzero)
		return buf[0] == '-' ? -0.0 : 0.0;
	if (sticky)
		buf[n++] = '1';
	long e10 = 0;
	if (c < e && (*c == 'e' || *c == 'E')) {
		bool neg = *++c == '-';
		c += *c == '-' || *c == '+';
		for (; c < e && is_digit(*c); c++)
			if (e10 < 1000000)
				e10 = e10 * 10 + (*c - '0');
		e10 = neg ? -e10 : e10;
	}
	e10 += (long)n_int - (long)lead;
	long p = e10 - (long)kept; /* the value is digits * 10^p */
	if (kept <= 15 && p >= -22 && p <= 22) {
		double v = p >= 0 ? (double)digits * p10[p] : (double)digits / p10[-p];
		return buf[0] == '-' ? -v : v;
	}
	snprintf(buf + n, sizeof buf - n, "e%ld", e10);
	return strtod(buf, NULL);
}

/* nan with an optional (0xP) payload at q, as LexNanPayload reads it: P in
 * [1, 2^52 - 1], else the token is bad. */
static const char *lex_nan(const char *q, const char *e, bool neg, struct lit_tok *t)
{
	uint64_t payload = LIT_QUIET_NAN;
	if (q < e && *q == '(') {
		const char *r = q + 3;
		uint64_t v = 0;
		bool overflow = false;
		if (r >= e || q[1] != '0' || q[2] != 'x' || hex_value(*r) < 0)
			return q;
		for (; r < e && hex_value(*r) >= 0; r++) {
			overflow |= (v >> 60) != 0;
			v = v << 4 | (uint64_t)hex_value(*r);
		}
		if (r >= e || *r != ')' || overflow || v == 0 || v > LIT_F64_PAYLOADS)
			return q;
		payload = v;
		q = r + 1;
	}
	t->kind = LIT_DECIMAL;
	t->d = neg ? -NAN : NAN;
	t->payload = payload;
	return q;
}

/* A token starting with a digit or '-' (LexNumberOrPattern): decimal first,
 * then the patterns, then an int64 (a larger value that fits uint64 keeps
 * its bits; past that the token is bad), then -inf and -nan. */
static const char *lex_number(const char *c, const char *e, struct lit_tok *t)
{
	const char *q = match_float(c, e);
	if (q) {
		t->kind = LIT_DECIMAL;
		t->d = decimal_value(c, q);
		return q;
	}
	if (match_pattern(c, e))
		return c + 1;
	q = c + (*c == '-');
	if (q < e && is_digit(*q)) {
		uint64_t u = 0;
		for (; q < e && is_digit(*q); q++) {
			unsigned d = (unsigned)(*q - '0');
			if (u > (UINT64_MAX - d) / 10)
				return c + 1;
			u = u * 10 + d;
		}
		if (*c == '-' && u > (uint64_t)INT64_MAX + 1)
			return c + 1;
		t->kind = LIT_INT;
		t->i = *c == '-' ? (int64_t)(0 - u) : (int64_t)u;
		return q;
	}
	if (e - c >= 4 && memcmp(c, "-inf", 4) == 0) {
		t->kind = LIT_NEG_INF;
		return c + 4;
	}
	if (e - c >= 4 && memcmp(c, "-nan", 4) == 0)
		return lex_nan(c + 4, e, true, t);
	return c + 1;
}

/* An identifier [a-zA-Z_][a-zA-Z0-9_.-]*: only true, false, inf and nan
 * mean something in a literal (a trailing ':' or '=' makes it a name). */
static const char *lex_word(const char *c, const char *e, struct lit_tok *t)
{
	const char *q = c + 1;
	while (q < e && (is_alpha(*q) || is_digit(*q) || *q == '_' || *q == '-' || *q == '.'))
		q++;
	size_t n = (size_t)(q - c);
	if (q < e && (*q == ':' || *q == '='))
		return q;
	if (n == 3 && memcmp(c, "nan", 3) == 0)
		return lex_nan(q, e, false, t);
	if (n == 4 && memcmp(c, "true", 4) == 0)
		t->kind = LIT_TRUE;
	else if (n == 5 && memcmp(c, "false", 5) == 0)
		t->kind = LIT_FALSE;
	else if (n == 3 && memcmp(c, "inf", 3) == 0)
		t->kind = LIT_INF;
	return q;
}

/* Past a comment at c ("/ *...* /" or "//" to the end of the line); NULL if
 * it is not closed or holds a NUL (XLA's kError). */
static const char *skip_comment(const char *c, const char *e)
{
	const char *q = c + 2;
	if (c[1] == '/') {
		while (q < e && *q != '\n' && *q != '\r' && *q)
			q++;
		return q < e && !*q ? NULL : q;
	}
	for (; q < e && *q; q++)
		if (q[0] == '*' && q + 1 < e && q[1] == '/')
			return q + 2;
	return NULL;
}

/* Makes L->tok the next token (HloLexer::LexToken): whitespace is space,
 * tab, \n, \r; comments go as whitespace. */
static void lex(struct lit *L)
{
	const char *c = L->p, *e = L->end;
	struct lit_tok *t = &L->tok;
	for (;;) {
		while (c < e && (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r'))
			c++;
		if (c + 1 >= e || c[0] != '/' || (c[1] != '*' && c[1] != '/'))
			break;
		const char *q = skip_comment(c, e);
		if (!q)
			break; /* a bad token at c */
		c = q;
	}
	static const char ones[] = "{}(),";
	static const enum lit_kind one_kinds[] = { LIT_LBRACE, LIT_RBRACE, LIT_LPAREN,
						   LIT_RPAREN, LIT_COMMA };
	const char *one = c < e && *c ? strchr(ones, *c) : NULL;
	const char *q = c + 1;
	t->at = c;
	t->kind = one ? one_kinds[one - ones] : LIT_BAD;
	t->payload = LIT_QUIET_NAN;
	if (c == e) {
		t->kind = LIT_EOF;
		q = c;
	} else if (*c == '.' && e - c >= 3 && c[1] == '.' && c[2] == '.') {
		t->kind = LIT_DOTS;
		q = c + 3;
	} else if (is_digit(*c) || (*c == '-' && !(c + 1 < e && c[1] == '>'))) {
		q = lex_number(c, e, t);
	} else if (is_alpha(*c) || *c == '_') {
		q = lex_word(c, e, t);
	}
	L->p = q;
}

/* ==== values (SetValueInLiteralHelper) ================================== */

/* A real floating type as XLA's CheckParsedValueIsInRange sees it: the
 * double is converted to the type (round to nearest even); a finite value
 * that converts to inf or NaN is out of range. Values from ml_dtypes
 * (float8.h, mxfloat.h) and Eigen. */
struct lit_float {
	double max;        /* numeric_limits<T>::max() */
	double lowest;     /* numeric_limits<T>::lowest(), the bound XLA prints */
	double ovf;        /* max + half an ulp: |v| past it overflows */
	bool ovf_tie;      /* |v| == ovf overflows too (max's significand is odd) */
	bool via_f32;      /* Eigen::half and bfloat16 round a double via float */
	bool saturates;    /* f4e2m1fn: no inf or NaN, infinity() is max */
	bool no_zero_sign; /* f8e8m0fnu: zero and negatives convert to NaN */
	int payload_bits;  /* NanPayloadBits<T>: mantissa bits if it has sNaNs */
};

static const struct lit_float lit_floats[IR_TYPE_COUNT] = {
	[IR_TYPE_F16] = { 65504, -65504, 65520, true, true, false, false, 10 },
	[IR_TYPE_BF16] = { 0x1.fep127, -0x1.fep127, 0x1.ffp127, true, true, false, false, 7 },
	[IR_TYPE_F32] = { FLT_MAX, -FLT_MAX, 0x1.ffffffp127, true, false, false, false, 23 },
	[IR_TYPE_F64] = { DBL_MAX, -DBL_MAX, INFINITY, false, false, false, false, 52 },
	[IR_TYPE_F8E5M2] = { 57344, -57344, 61440, true, false, false, false, 2 },
	[IR_TYPE_F8E4M3] = { 240, -240, 248, true, false, false, false, 3 },
	[IR_TYPE_F8E4M3FN] = { 448, -448, 464, false, false, false, false, 0 },
	[IR_TYPE_F8E4M3B11FNUZ] = { 30, -30, 31, true, false, false, false, 0 },
	[IR_TYPE_F8E3M4] = { 15.5, -15.5, 15.75, true, false, false, false, 4 },
	[IR_TYPE_F8E5M2FNUZ] = { 57344, -57344, 61440, true, false, false, false, 0 },
	[IR_TYPE_F8E4M3FNUZ] = { 240, -240, 248, true, false, false, false, 0 },
	[IR_TYPE_F8E8M0FNU] = { 0x1p127, 0x1p-127, 0x1.8p127, true, false, false, true, 0 },
	[IR_TYPE_F4E2M1FN] = { 6, -6, 7, true, false, true, false, 0 },
};

/* PrimitiveType_Name: "U4", "BF16"; OPAQUE_TYPE for opaque. */
static const char *upper_name(enum ir_type t, char *buf, size_t n)
{
	const char *s = t == IR_TYPE_OPAQUE ? "opaque_type" : ir_type_name(t);
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 'a' + 'A') : s[i];
	buf[i] = '\0';
	return buf;
}

/* "[a,b,c]" of n values less sub: dims for ShapeUtil::HumanString ("f32" +
 * "[2,3]"), open sub-array counts less 1 for get_index_str ("[0,1]"). */
static const char *list_str(const int64_t *v, int n, int64_t sub, char *buf, size_t size)
{
	size_t k = 0;
	buf[k++] = '[';
	for (int i = 0; i < n && k + 24 < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, i ? "," : "", v[i] - sub);
	snprintf(buf + k, size - k, "]");
	return buf;
}

static const char *shape_str(const struct ir_shape *sh, char *buf, size_t size)
{
	size_t k = (size_t)snprintf(buf, size, "%s", ir_type_name(sh->type));
	list_str(sh->dims, sh->rank, 0, buf + k, size - k);
	return buf;
}

/* absl::StrCat of a double: %g, and nan / inf / -inf. */
static const char *num_str(double v, char *buf, size_t n)
{
	if (isnan(v))
		snprintf(buf, n, "nan");
	else
		snprintf(buf, n, "%g", v);
	return buf;
}

/* The index check of SetValueInLiteralHelper, failed: value as
 * StringifyValue prints it. Only reached after the count checks recorded an
 * error (f32[0] constant(1): "but sees 0"), so that error is what is shown;
 * the check decides that the text is refused. */
static bool index_error(struct lit *L, const char *at, const char *value,
			const struct ir_shape *sh, int64_t idx)
{
	char s[96];
	return rec(L, at, "tries to set value %s to a literal in shape %s at linear "
		   "index %" PRId64 ", but the index is out of range", value,
		   shape_str(sh, s, sizeof s), idx);
}

/* handle_nan of SetValueInLiteralHelper: a type with NaN payload bits takes
 * payloads up to its mask (plain nan is its quiet NaN); the others (fn, fnuz,
 * e8m0, f4) take plain nan only. */
static bool check_nan(struct lit *L, const char *at, uint64_t payload, int bits,
		      const struct ir_shape *sh, int64_t idx)
{
	char s[96];
	if (bits > 0) {
		uint64_t mask = (UINT64_C(1) << bits) - 1;
		if (payload == LIT_QUIET_NAN)
			payload = UINT64_C(1) << (bits - 1);
		if (payload <= mask)
			return true;
		return rec(L, at, "tries to set NaN payload 0x%" PRIx64 " to a literal in "
			   "shape %s at linear index %" PRId64 ", but the NaN payload is "
			   "out of range (0x%" PRIx64 ")", payload,
			   shape_str(sh, s, sizeof s), idx, mask);
	}
	if (payload == LIT_QUIET_NAN)
		return true;
	return rec(L, at, "tries to set NaN payload 0x%" PRIx64 " to a literal in shape "
		   "%s at linear index %" PRId64 ", but %s does not support payloads",
		   payload, shape_str(sh, s, sizeof s), idx, ir_type_name(sh->type));
}

/* ParseDouble: int, decimal, inf, -inf; a decimal past DBL_MAX is refused. */
static bool parse_double(struct lit *L, double *v, uint64_t *payload)
{
	const struct lit_tok *t = &L->tok;
	*payload = t->payload;
	switch (t->kind) {
	case LIT_DECIMAL:
		if (isinf(t->d))
			return rec(L, t->at, "Constant is out of range for double (+/-%g) "
				   "and so is unparsable.", DBL_MAX);
		*v = t->d;
		return true;
	case LIT_INT:
		*v = (double)t->i; /* a uint64 token keeps its int64 bits: 2^64-1 is -1 */
		return true;
	case LIT_INF:
	case LIT_NEG_INF:
		*v = t->kind == LIT_INF ? INFINITY : -INFINITY;
		return true;
	default:
		return rec(L, t->at, "expects decimal or integer");
	}
}

/* CheckParsedValueIsInRange<T>(double): does a finite v convert to a finite
 * value of T? */
static bool float_fits(const struct lit_float *f, double v)
{
	if (!isfinite(v) || f->saturates)
		return true;
	if (f->no_zero_sign && !(v > 0))
		return false;
	double a = fabs(v);
	if (f->via_f32) {
		if (a >= 0x1.ffffffp127)
			return false; /* float overflows to inf */
		a = (double)(float)a;
	}
	return a < f->ovf || (a == f->ovf && !f->ovf_tie);
}

/* One value token at linear index idx of an array of type sh->type and
 * total elements (SetValueInLiteral for bool, int64 and double). */
static bool set_value(struct lit *L, const struct ir_shape *sh, int64_t idx, int64_t total)
{
	const struct lit_tok *t = &L->tok;
	enum ir_type ty = sh->type;
	const struct lit_float *f = &lit_floats[ty];
	char up[24], v[40], lo[40], hi[40];
	bool is_bool = t->kind == LIT_TRUE || t->kind == LIT_FALSE;
	if (ty == IR_TYPE_PRED) {
		/* true/false, or any integer cast to bool: never out of range */
		if (!is_bool && t->kind != LIT_INT)
			return rec(L, t->at, "expects integer for primitive type: PRED");
		bool b = is_bool ? t->kind == LIT_TRUE : t->i != 0;
		return idx < total || index_error(L, t->at, b ? "1" : "0", sh, idx);
	}
	if (ty >= IR_TYPE_S1 && ty <= IR_TYPE_U64) { /* ir_types.def order */
		/* XLA: ParseInt64's "expects integer", then this line */
		if (t->kind != LIT_INT)
			return rec(L, t->at, "expects integer for primitive type: %s",
				   upper_name(ty, up, sizeof up));
		int bits = ir_type_bits(ty);
		if (ty <= IR_TYPE_S64) {
			int64_t max = (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
			if (t->i > max || t->i < -max - 1)
				return rec(L, t->at, "value %" PRId64 " is out of range for "
					   "literal's primitive type %s namely [%" PRId64 ", %"
					   PRId64 "].", t->i, upper_name(ty, up, sizeof up),
					   -max - 1, max);
		} else {
			/* the int64 cast to uint64: u64 takes -1, u32 refuses -1 */
			uint64_t max = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
			if ((uint64_t)t->i > max)
				return rec(L, t->at, "value %" PRId64 " is out of range for "
					   "literal's primitive type %s namely [0, %" PRIu64 "].",
					   t->i, upper_name(ty, up, sizeof up), max);
		}
		if (idx < total)
			return true;
		snprintf(v, sizeof v, "%" PRId64, t->i);
		return index_error(L, t->at, v, sh, idx);
	}
	if (f->max == 0) /* complex (written "(re, im)"), token, opaque */
		return rec(L, t->at, "unsupported primitive type %s",
			   upper_name(ty, up, sizeof up));
	if (is_bool) /* XLA aborts (LOG(FATAL)) on true/false for a float */
		return rec(L, t->at, "expect floating point value for primitive type: %s",
			   upper_name(ty, up, sizeof up));
	double d = 0;
	uint64_t payload;
	if (!parse_double(L, &d, &payload))
		return false;
	if (!float_fits(f, d))
		return rec(L, t->at, "value %s is out of range for literal's primitive "
			   "type %s namely [%s, %s].", num_str(d, v, sizeof v),
			   upper_name(ty, up, sizeof up), num_str(f->lowest, lo, sizeof lo),
			   num_str(f->max, hi, sizeof hi));
	if (idx >= total)
		return index_error(L, t->at, num_str(d, v, sizeof v), sh, idx);
	return !isnan(d) || check_nan(L, t->at, payload, f->payload_bits, sh, idx);
}

/* ParseComplex and SetValueInLiteral(complex): "(re, im)" at L->tok. Each
 * part is compared with the component type's limits (no rounding, unlike a
 * real type); only the real part's NaN payload is checked (XLA passes the
 * real part to handle_nan for both). */
static bool set_complex(struct lit *L, const struct ir_shape *sh, int64_t idx,
			int64_t total)
{
	const char *at = L->tok.at;
	bool c64 = sh->type == IR_TYPE_C64;
	double part[2] = { 0, 0 }, lim = c64 ? FLT_MAX : DBL_MAX;
	uint64_t payload, unused;
	char up[24], v[40], lo[40], hi[40], val[96];
	lex(L);
	if (!parse_double(L, &part[0], &payload))
		return false;
	lex(L);
	if (L->tok.kind != LIT_COMMA)
		return rec(L, L->tok.at, "expect comma after real part of complex literal");
	lex(L);
	if (!parse_double(L, &part[1], &unused))
		return false;
	lex(L);
	if (L->tok.kind != LIT_RPAREN)
		return rec(L, L->tok.at, "expect ')' after complex number");
	lex(L);
	for (int i = 0; i < 2; i++)
		if (isfinite(part[i]) && fabs(part[i]) > lim)
			return rec(L, at, "%s part %s is out of range for literal's primitive "
				   "type %s, namely [%s, %s].", i ? "imaginary" : "real",
				   num_str(part[i], v, sizeof v),
				   upper_name(sh->type, up, sizeof up),
				   num_str(-lim, lo, sizeof lo), num_str(lim, hi, sizeof hi));
	if (idx >= total) {
		snprintf(val, sizeof val, "(%f, %f)", part[0], part[1]);
		return index_error(L, at, val, sh, idx);
	}
	return !isnan(part[0]) || check_nan(L, at, payload, c64 ? 23 : 52, sh, idx);
}

/* ==== structure (ParseTupleLiteral, ParseDenseLiteral) =================== */

/* add_one_elem_seen: a value must sit at nest level rank and not pass the
 * minor-most dimension. */
static bool add_one(struct lit *L, const struct ir_shape *sh, int64_t *seen, int nest)
{
	int rank = sh->rank;
	if (rank == 0)
		return true;
	if (nest != rank)
		return rec(L, L->tok.at, "expects nested array in rank %d, but sees %d",
			   rank, nest);
	if (++seen[rank - 1] > sh->dims[rank - 1])
		return rec(L, L->tok.at, "expects %" PRId64 " elements on the minor-most "
			   "dimension, but sees more", sh->dims[rank - 1]);
	return true;
}

/*
 * ParseDenseLiteral: tokens until the outer '}' closes (one token for a
 * scalar, which is written bare: {5} for f32[] is "sees larger"). Braces nest
 * exactly rank deep, level i holding dims[i] entries, checked as each opens
 * and closes; ',' is skipped wherever it is; "..." at level 1 stands for the
 * whole array.
 */
static bool check_dense(struct lit *L, const struct ir_shape *sh)
{
	int64_t seen[LIT_MAX_RANK] = { 0 };
	int rank = sh->rank, nest = 0;
	int64_t idx = 0, total = ir_shape_elems(sh);
	char ix[96];
	if (rank > LIT_MAX_RANK)
		return rec(L, L->tok.at, "rank %d is above the %d a literal may have",
			   rank, LIT_MAX_RANK);
	do {
		const struct lit_tok *t = &L->tok;
		switch (t->kind) {
		case LIT_LBRACE:
			if (++nest > rank)
				return rec(L, t->at, "expects nested array in rank %d, but "
					   "sees larger", rank);
			if (nest > 1 && ++seen[nest - 2] > sh->dims[nest - 2])
				return rec(L, t->at, "expects %" PRId64 " elements in the %sth "
					   "element, but sees more", sh->dims[nest - 2],
					   list_str(seen, nest - 2, 1, ix, sizeof ix));
			lex(L);
			break;
		case LIT_RBRACE:
			if (nest == 0)
				return rec(L, t->at, "unexpected '}' token");
			nest--;
			if (seen[nest] != sh->dims[nest])
				return rec(L, t->at, "expects %" PRId64 " elements in the %sth "
					   "element, but sees %" PRId64, sh->dims[nest],
					   list_str(seen, nest, 1, ix, sizeof ix), seen[nest]);
			seen[nest] = 0;
			lex(L);
			break;
		case LIT_LPAREN:
			if (sh->type != IR_TYPE_C64 && sh->type != IR_TYPE_C128)
				return rec(L, t->at, "unexpected '(' in literal. Parens are "
					   "only valid for complex literals");
			if (!add_one(L, sh, seen, nest) || !set_complex(L, sh, idx++, total))
				return false;
			break;
		case LIT_DOTS:
			if (nest != 1)
				return rec(L, t->at, "expects `...` at nest level 1, but sees "
					   "it at nest level %d", nest);
			seen[0] = sh->dims[0];
			lex(L);
			break;
		case LIT_COMMA:
			lex(L);
			break;
		case LIT_TRUE:
		case LIT_FALSE:
		case LIT_INT:
		case LIT_DECIMAL:
		case LIT_INF:
		case LIT_NEG_INF:
			add_one(L, sh, seen, nest); /* XLA records, and goes on */
			if (!set_value(L, sh, idx++, total))
				return false;
			lex(L);
			break;
		default:
			return rec(L, t->at, "unexpected token type in a literal");
		}
	} while (nest > 0);
	return true;
}

static bool check_literal(struct lit *L, const struct ir_shape *sh);

/* ParseTupleLiteral: "( lit, lit, ... )", one per element; "()" passes for
 * any tuple (XLA leaves the elements empty). */
static bool check_tuple(struct lit *L, const struct ir_shape *sh)
{
	if (L->tok.kind != LIT_LPAREN)
		return rec(L, L->tok.at, "expects '(' in front of tuple elements");
	lex(L);
	if (L->tok.kind != LIT_RPAREN) {
		for (int i = 0; i < sh->n_elems; i++) {
			if (i > 0 && L->tok.kind == LIT_COMMA)
				lex(L);
			else if (i > 0) /* recorded, not fatal */
				rec(L, L->tok.at, "expects ',' to separate tuple elements");
			if (!check_literal(L, &sh->elems[i]))
				return rec(L, L->tok.at, "expects the %dth element", i);
		}
	}
	if (L->tok.kind != LIT_RPAREN)
		return rec(L, L->tok.at, "expects ')' at the end of the tuple with %delements",
			   sh->n_elems);
	lex(L);
	return true;
}

/* ParseLiteral(literal, shape). A token or opaque shape is not an array:
 * XLA's CHECK(shape.IsArray()) aborts; here it is refused. */
static bool check_literal(struct lit *L, const struct ir_shape *sh)
{
	char up[24];
	if (sh->type == IR_TYPE_TUPLE)
		return check_tuple(L, sh);
	if (sh->type <= IR_TYPE_INVALID || sh->type >= IR_TYPE_COUNT ||
	    sh->type == IR_TYPE_TOKEN || sh->type == IR_TYPE_OPAQUE)
		return rec(L, L->tok.at, "unsupported primitive type %s",
			   upper_name(sh->type, up, sizeof up));
	return check_dense(L, sh);
}

bool hlo_literal_check(const char *s, const char *e, const struct ir_shape *shape,
		       struct hlo_literal_error *err)
{
	struct lit L = { .p = s, .end = e, .err = err };
	err->at = s;
	err->msg[0] = '\0';
	lex(&L);
	bool ok = check_literal(&L, shape);
	if (ok && L.tok.kind != LIT_EOF) /* ParseToken(kRparen) after the literal */
		ok = rec(&L, L.tok.at, "expects ')' after constant literal");
	if (ok) {
		err->at = s;
		err->msg[0] = '\0';
	}
	return ok;
}
