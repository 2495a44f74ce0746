/*
 * test_hlo_literal.c: hlo_literal_check (hlo/hlo_literal.h) against XLA's
 * literal rules, one test per rule, each with texts XLA accepts and texts it
 * refuses. Every expected message and offset is derived by hand from
 * hlo_parser.cc / hlo_lexer.cc in the comment above it (offsets count from
 * the first byte of the literal text, 0-based).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo_literal.h"
#include "test_util.h"

/* Dims of the shapes the tests build (a ring: 4096 entries outlast the
 * shapes of any one test). */
static int64_t dim_pool[4096];
static int dim_used;

/* An array shape: arr(IR_TYPE_F32, 2, 2, 3) is f32[2,3]. */
static struct ir_shape arr(enum ir_type t, int rank, ...)
{
	struct ir_shape s;
	va_list ap;
	memset(&s, 0, sizeof s);
	s.type = t;
	s.rank = rank;
	if (dim_used + rank > (int)(sizeof dim_pool / sizeof dim_pool[0]))
		dim_used = 0;
	s.dims = &dim_pool[dim_used];
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		dim_pool[dim_used++] = va_arg(ap, int64_t);
	va_end(ap);
	return s;
}

/* A tuple of n shapes (elems must outlive the check). */
static struct ir_shape tup(int n, struct ir_shape *elems)
{
	struct ir_shape s;
	memset(&s, 0, sizeof s);
	s.type = IR_TYPE_TUPLE;
	s.n_elems = n;
	s.elems = elems;
	return s;
}

#define D(x) ((int64_t)(x))

static void ok(struct ir_shape sh, const char *text)
{
	struct hlo_literal_error err;
	if (!hlo_literal_check(text, text + strlen(text), &sh, &err))
		fail_msg("'%s' refused at +%d: %s", text, (int)(err.at - text), err.msg);
	assert_string_equal(err.msg, "");
}

static void bad(struct ir_shape sh, const char *text, int off, const char *msg)
{
	struct hlo_literal_error err;
	if (hlo_literal_check(text, text + strlen(text), &sh, &err))
		fail_msg("'%s' accepted, want: %s", text, msg);
	if (strcmp(err.msg, msg) != 0 || err.at - text != off)
		fail_msg("'%s': got +%d: %s\n want +%d: %s", text, (int)(err.at - text),
			 err.msg, off, msg);
}

/* Lexer: whitespace is space, tab, \n, \r; comments anywhere between tokens.
 * An unclosed comment is XLA's kError: the token type is wrong at its '/'. */
static void test_whitespace_and_comments(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F32, 4, D(2), D(0), D(4), D(3)), "{ { /*i0=0*/ }, { /*i0=1*/ } }");
	ok(arr(IR_TYPE_F32, 2, D(1), D(2)), "\t{\r\n{1, // one\n 2}\n}  ");
	bad(arr(IR_TYPE_F32, 1, D(2)), "{1, /* 2}", 4, "unexpected token type in a literal");
	/* '\f' is not whitespace to XLA's lexer */
	bad(arr(IR_TYPE_F32, 1, D(1)), "{\f1}", 1, "unexpected token type in a literal");
}

/* "..." at nest level 1 stands for every element of the array; a scalar has
 * no level 1 ('{' already passes rank 0), deeper is refused. */
static void test_elided(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F32, 2, D(67), D(89)), "{...}");
	ok(arr(IR_TYPE_PRED, 1, D(0)), "{ ... }");
	bad(arr(IR_TYPE_F32, 0), "{...}", 0, "expects nested array in rank 0, but sees larger");
	/* "{{...}}": the second '{' at offset 1, the dots at offset 2, level 2 */
	bad(arr(IR_TYPE_F32, 2, D(2), D(3)), "{{...}}", 2,
	    "expects `...` at nest level 1, but sees it at nest level 2");
	/* ".." is no token */
	bad(arr(IR_TYPE_F32, 1, D(2)), "{..}", 1, "unexpected token type in a literal");
}

/* Rank 0: one bare value (XLA prints constant(42)); braces pass rank 0. */
static void test_scalar(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_S32, 0), "42");
	ok(arr(IR_TYPE_F32, 0), " -0 ");
	bad(arr(IR_TYPE_F32, 0), "{5}", 0, "expects nested array in rank 0, but sees larger");
	/* one token is the whole literal: "1 2" leaves '2' (offset 2) where ')' goes */
	bad(arr(IR_TYPE_S32, 0), "1 2", 2, "expects ')' after constant literal");
	/* nothing at all: the ')' (end, offset 0) is not a value */
	bad(arr(IR_TYPE_S32, 0), "", 0, "unexpected token type in a literal");
}

/* Rank r: braces exactly r deep, level i holding dims[i] entries. */
static void test_nesting_and_counts(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F32, 2, D(2), D(3)), "{{1,2,3},{4,5,6}}");
	ok(arr(IR_TYPE_F32, 1, D(0)), "{}");
	ok(arr(IR_TYPE_F32, 2, D(2), D(0)), "{{},{}}");
	/* values at level 1 of a rank-2 array: first error at '1' (offset 1) */
	bad(arr(IR_TYPE_F32, 2, D(2), D(3)), "{1, 2, 3, 4, 5, 6}", 1,
	    "expects nested array in rank 2, but sees 1");
	/* {1,{2}}: the '{' at offset 3 opens level 2 of a rank-1 array */
	bad(arr(IR_TYPE_F32, 1, D(2)), "{1,{2}}", 3,
	    "expects nested array in rank 1, but sees larger");
	/* the 4th sub-array of dimension 1 (size 3) opens at offset 26 */
	bad(arr(IR_TYPE_F32, 3, D(2), D(3), D(2)), "{{{1, 2}, {3, 4}, {5, 6}, {7, 8}}}", 26,
	    "expects 3 elements in the [0]th element, but sees more");
	/* {{1,2},{3,4,5}}: the first inner '}' (offset 5) closes 2 of 3 */
	bad(arr(IR_TYPE_F32, 2, D(2), D(3)), "{{1,2},{3,4,5}}", 5,
	    "expects 3 elements in the [0]th element, but sees 2");
	/* {{1}}: the outer '}' (offset 4) closes 1 of 2 rows */
	bad(arr(IR_TYPE_F32, 2, D(2), D(1)), "{{1}}", 4,
	    "expects 2 elements in the []th element, but sees 1");
	/* a third value (offset 5) in f32[2]: first error, before the index one */
	bad(arr(IR_TYPE_F32, 1, D(2)), "{1,2,3}", 5,
	    "expects 2 elements on the minor-most dimension, but sees more");
	bad(arr(IR_TYPE_F32, 1, D(0)), "{1}", 1,
	    "expects 0 elements on the minor-most dimension, but sees more");
	bad(arr(IR_TYPE_F32, 2, D(2), D(3)), "}{1, 2, 3}, {4, 5, 6}}", 0, "unexpected '}' token");
	/* end of the text (offset 5) inside the braces: the ')' is no value */
	bad(arr(IR_TYPE_F32, 1, D(2)), "{1, 2", 5, "unexpected token type in a literal");
}

/* What XLA accepts because it records an error and goes on: ',' is skipped
 * anywhere, a value outside braces fills element 0, "," alone is a literal. */
static void test_xla_leniency(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F32, 1, D(2)), "{1 2}");
	ok(arr(IR_TYPE_F32, 1, D(2)), "{,1,,2,}");
	ok(arr(IR_TYPE_F32, 1, D(2)), "5");
	ok(arr(IR_TYPE_S32, 0), ",");
	ok(arr(IR_TYPE_F32, 2, D(2), D(3)), "{..., 1}");
	/* but f32[0] has no element 0 for it: the index check fails, and XLA
	 * shows the error it recorded first */
	bad(arr(IR_TYPE_F32, 1, D(0)), "5", 0,
	    "expects nested array in rank 1, but sees 0");
}

/* Tuples: "( lit, lit )", one literal per element; "()" for any tuple. */
static void test_tuple(void **state)
{
	(void)state;
	struct ir_shape e2[2] = { arr(IR_TYPE_F32, 2, D(2), D(1)), arr(IR_TYPE_F32, 1, D(2)) };
	ok(tup(2, e2), "( { {1}, {2} }, {2, 42} )");
	ok(tup(2, e2), "()");
	/* ({{1},{2}}): ')' at offset 10 where the ',' and 2nd element go */
	bad(tup(2, e2), "({{1},{2}})", 10, "expects ',' to separate tuple elements");
	bad(tup(2, e2), "{1}", 0, "expects '(' in front of tuple elements");
	struct ir_shape s2[2] = { arr(IR_TYPE_S32, 0), arr(IR_TYPE_S32, 0) };
	/* (1, 2, 3): the second ',' (offset 5) where ')' goes */
	bad(tup(2, s2), "(1, 2, 3)", 5, "expects ')' at the end of the tuple with 2elements");
	ok(tup(2, s2), "(1 2)"); /* the missing ',' is only recorded */
	struct ir_shape in[2] = { arr(IR_TYPE_S32, 0), arr(IR_TYPE_PRED, 0) };
	struct ir_shape nest[2] = { tup(2, in), arr(IR_TYPE_F32, 0) };
	ok(tup(2, nest), "((1, true), 2.5)");
	/* "2.5" (offset 5) for the pred[] inside */
	bad(tup(2, nest), "((1, 2.5), 2.5)", 5, "expects integer for primitive type: PRED");
}

/* pred: true/false or any integer (cast to bool, so never out of range). */
static void test_pred(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_PRED, 1, D(3)), "{true, false, 1}");
	ok(arr(IR_TYPE_PRED, 0), "5");
	bad(arr(IR_TYPE_PRED, 0), "1.0", 0, "expects integer for primitive type: PRED");
	/* "true1" is one identifier */
	bad(arr(IR_TYPE_PRED, 0), "true1", 0, "unexpected token type in a literal");
}

/* Integer types: integer tokens only, CheckParsedValueIsInRange: signed in
 * [min, max]; unsigned: the int64 cast to uint64 at most max. */
static void test_integers(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_S4, 0), "-8");
	bad(arr(IR_TYPE_S4, 0), "8", 0,
	    "value 8 is out of range for literal's primitive type S4 namely [-8, 7].");
	bad(arr(IR_TYPE_S4, 0), "-9", 0,
	    "value -9 is out of range for literal's primitive type S4 namely [-8, 7].");
	bad(arr(IR_TYPE_U4, 0), "-1", 0,
	    "value -1 is out of range for literal's primitive type U4 namely [0, 15].");
	bad(arr(IR_TYPE_U4, 0), "16", 0,
	    "value 16 is out of range for literal's primitive type U4 namely [0, 15].");
	ok(arr(IR_TYPE_U64, 0), "-1");
	ok(arr(IR_TYPE_U64, 0), "9223372036854775808");
	ok(arr(IR_TYPE_U64, 0), "18446744073709551615");
	/* past uint64: the lexer's kError */
	bad(arr(IR_TYPE_U64, 0), "18446744073709551616", 0, "unexpected token type in a literal");
	bad(arr(IR_TYPE_S64, 0), "-9223372036854775809", 0, "unexpected token type in a literal");
	ok(arr(IR_TYPE_S64, 0), "9223372036854775808"); /* its bits: INT64_MIN */
	bad(arr(IR_TYPE_U32, 0), "4294967296", 0,
	    "value 4294967296 is out of range for literal's primitive type U32 namely [0, 4294967295].");
	/* {1, -129}: '-' at offset 4 */
	bad(arr(IR_TYPE_S8, 1, D(2)), "{1, -129}", 4,
	    "value -129 is out of range for literal's primitive type S8 namely [-128, 127].");
	ok(arr(IR_TYPE_S1, 0), "-1");
	bad(arr(IR_TYPE_S1, 0), "1", 0,
	    "value 1 is out of range for literal's primitive type S1 namely [-1, 0].");
	bad(arr(IR_TYPE_U1, 0), "2", 0,
	    "value 2 is out of range for literal's primitive type U1 namely [0, 1].");
	bad(arr(IR_TYPE_S32, 0), "1.5", 0, "expects integer for primitive type: S32");
	bad(arr(IR_TYPE_S32, 0), "1e5", 0, "expects integer for primitive type: S32");
	bad(arr(IR_TYPE_U8, 0), "inf", 0, "expects integer for primitive type: U8");
	/* 1x2 (DxD) and 1_2 (pad) are tokens of their own: bad at offset 1 */
	bad(arr(IR_TYPE_S32, 1, D(1)), "{1x2}", 1, "unexpected token type in a literal");
	bad(arr(IR_TYPE_S32, 1, D(1)), "{1_2}", 1, "unexpected token type in a literal");
}

/*
 * Real floating types: the double converted to the type (round to nearest
 * even); a finite value that converts to inf / NaN is out of range:
 *   f16 max 65504, half ulp 16: 65519 -> 65504, 65520 ties to inf;
 *   bf16 max 3.38953e38, overflow from 2^128 - 2^119 = 3.39618e38;
 *   f32 max 3.40282347e38, 3.4028235e38 rounds to it.
 */
static void test_float_range(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F16, 0), "65504");
	ok(arr(IR_TYPE_F16, 0), "65519");
	bad(arr(IR_TYPE_F16, 0), "-65520", 0,
	    "value -65520 is out of range for literal's primitive type F16 namely [-65504, 65504].");
	/* double -> float first (Eigen): 65519.99999999999 becomes 65520.0f */
	bad(arr(IR_TYPE_F16, 0), "65519.99999999999", 0,
	    "value 65520 is out of range for literal's primitive type F16 namely [-65504, 65504].");
	/* the same with 15 digits (decimal_value's one-operation path:
	 * 655199999999999 / 1e10) and its neighbours */
	bad(arr(IR_TYPE_F16, 0), "65519.9999999999", 0,
	    "value 65520 is out of range for literal's primitive type F16 namely [-65504, 65504].");
	ok(arr(IR_TYPE_F16, 0), "65519.99");
	bad(arr(IR_TYPE_F16, 0), "-6552.0e1", 0,
	    "value -65520 is out of range for literal's primitive type F16 namely [-65504, 65504].");
	ok(arr(IR_TYPE_F32, 0), "340282346638528.e24"); /* 10^24: strtod's path */
	ok(arr(IR_TYPE_F64, 0), "-0.000000000000000000000001"); /* 1 / 10^24 */
	ok(arr(IR_TYPE_BF16, 0), "3.39e38");
	ok(arr(IR_TYPE_BF16, 0), "-65505"); /* XLA's ConstantBf16NoOverflow */
	bad(arr(IR_TYPE_BF16, 0), "1e100", 0,
	    "value 1e+100 is out of range for literal's primitive type BF16 namely "
	    "[-3.38953e+38, 3.38953e+38].");
	ok(arr(IR_TYPE_F32, 0), "3.4028235e38");
	bad(arr(IR_TYPE_F32, 0), "-3.5e38", 0,
	    "value -3.5e+38 is out of range for literal's primitive type F32 namely "
	    "[-3.40282e+38, 3.40282e+38].");
	ok(arr(IR_TYPE_F64, 0), "1.7976931348623157e308");
	bad(arr(IR_TYPE_F64, 0), "-1.8e308", 0,
	    "Constant is out of range for double (+/-1.79769e+308) and so is unparsable.");
	bad(arr(IR_TYPE_F32, 1, D(1)), "{1.8e308}", 1,
	    "Constant is out of range for double (+/-1.79769e+308) and so is unparsable.");
	/* 1 and 400 zeros: a long token, still one double (1e400: too big) */
	char big[420] = "1";
	memset(big + 1, '0', 400);
	strcpy(big + 401, ".0");
	bad(arr(IR_TYPE_F64, 0), big, 0,
	    "Constant is out of range for double (+/-1.79769e+308) and so is unparsable.");
	/* an int token is its int64 bits: 2^63 is -2^63 */
	bad(arr(IR_TYPE_F16, 0), "9223372036854775808", 0,
	    "value -9.22337e+18 is out of range for literal's primitive type F16 namely "
	    "[-65504, 65504].");
	ok(arr(IR_TYPE_F16, 0), "18446744073709551615"); /* -1 */
}

/*
 * 8- and 4-bit floats (ml_dtypes): max, and where rounding overflows:
 *   e4m3fn 448 = 1.110b x 2^8: 464 ties to even 448, 465 -> NaN;
 *   e4m3 240 = 1.111b x 2^7: 248 ties up to inf; e5m2 57344: 61440 ties up;
 *   e4m3b11fnuz 30 = 1.111b x 2^4: 31 ties up; e3m4 15.5: 15.75 ties up;
 *   e8m0fnu [2^-127, 2^127], zero and negatives are NaN, 1.5 x 2^127 ties
 *   up; f4e2m1fn has no inf or NaN: overflow gives 6, never an error.
 */
static void test_small_floats(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F8E4M3FN, 0), "464");
	bad(arr(IR_TYPE_F8E4M3FN, 0), "465", 0,
	    "value 465 is out of range for literal's primitive type F8E4M3FN namely [-448, 448].");
	ok(arr(IR_TYPE_F8E4M3FN, 1, D(2)), "{inf, -inf}"); /* NaN in the type: not checked */
	ok(arr(IR_TYPE_F8E4M3, 0), "247");
	bad(arr(IR_TYPE_F8E4M3, 0), "248", 0,
	    "value 248 is out of range for literal's primitive type F8E4M3 namely [-240, 240].");
	ok(arr(IR_TYPE_F8E5M2, 0), "61439");
	bad(arr(IR_TYPE_F8E5M2, 0), "61440", 0,
	    "value 61440 is out of range for literal's primitive type F8E5M2 namely [-57344, 57344].");
	ok(arr(IR_TYPE_F8E4M3B11FNUZ, 0), "30.9");
	bad(arr(IR_TYPE_F8E4M3B11FNUZ, 0), "31", 0,
	    "value 31 is out of range for literal's primitive type F8E4M3B11FNUZ namely [-30, 30].");
	bad(arr(IR_TYPE_F8E3M4, 0), "15.75", 0,
	    "value 15.75 is out of range for literal's primitive type F8E3M4 namely [-15.5, 15.5].");
	bad(arr(IR_TYPE_F8E5M2FNUZ, 0), "-61440", 0,
	    "value -61440 is out of range for literal's primitive type F8E5M2FNUZ namely "
	    "[-57344, 57344].");
	bad(arr(IR_TYPE_F8E4M3FNUZ, 0), "248", 0,
	    "value 248 is out of range for literal's primitive type F8E4M3FNUZ namely [-240, 240].");
	ok(arr(IR_TYPE_F8E8M0FNU, 1, D(3)), "{1, 1e-50, 2.5e38}");
	bad(arr(IR_TYPE_F8E8M0FNU, 0), "0", 0,
	    "value 0 is out of range for literal's primitive type F8E8M0FNU namely "
	    "[5.87747e-39, 1.70141e+38].");
	bad(arr(IR_TYPE_F8E8M0FNU, 0), "2.6e38", 0,
	    "value 2.6e+38 is out of range for literal's primitive type F8E8M0FNU namely "
	    "[5.87747e-39, 1.70141e+38].");
	ok(arr(IR_TYPE_F4E2M1FN, 1, D(3)), "{100, inf, -1e300}");
}

/* Float tokens: int, decimal (float pattern), inf, -inf, nan, -nan. */
static void test_float_tokens(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_F32, 1, D(6)), "{nan, 7, nan, -1, inf, -inf}");
	ok(arr(IR_TYPE_F32, 1, D(5)), "{3e+2, 1., -.5, 2E-3, 1.5e3}");
	bad(arr(IR_TYPE_F32, 0), ".5", 0, "unexpected token type in a literal");
	bad(arr(IR_TYPE_F32, 0), "infinity", 0, "unexpected token type in a literal");
	bad(arr(IR_TYPE_F32, 0), "true", 0, "expect floating point value for primitive type: F32");
	/* "1.5e": the decimal 1.5, then the word "e" (offset 3) */
	bad(arr(IR_TYPE_F32, 0), "1.5e", 3, "expects ')' after constant literal");
	/* "-" alone and "->" are no numbers */
	bad(arr(IR_TYPE_F32, 1, D(1)), "{-}", 1, "unexpected token type in a literal");
}

/*
 * NaN payloads: nan(0xP) with P in [1, 2^52 - 1] (else the lexer's kError).
 * A type with payload bits (its mantissa bits) takes P up to that mask; fn,
 * fnuz, e8m0 and f4 take none. P = 2^51 is plain nan (the quiet bit).
 */
static void test_nan_payload(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_BF16, 1, D(2)), "{-nan(0x7f), -nan(0x3f)}");
	ok(arr(IR_TYPE_BF16, 1, D(2)), "{-nan, -nan}");
	bad(arr(IR_TYPE_BF16, 1, D(1)), "{nan(0x3ff)}", 1,
	    "tries to set NaN payload 0x3ff to a literal in shape bf16[1] at linear "
	    "index 0, but the NaN payload is out of range (0x7f)");
	/* {1, nan(0x100)}: index 1, 'n' at offset 4 */
	bad(arr(IR_TYPE_BF16, 1, D(2)), "{1, nan(0x100)}", 4,
	    "tries to set NaN payload 0x100 to a literal in shape bf16[2] at linear "
	    "index 1, but the NaN payload is out of range (0x7f)");
	ok(arr(IR_TYPE_F16, 0), "nan(0x3FF)");
	bad(arr(IR_TYPE_F16, 0), "nan(0x400)", 0,
	    "tries to set NaN payload 0x400 to a literal in shape f16[] at linear "
	    "index 0, but the NaN payload is out of range (0x3ff)");
	ok(arr(IR_TYPE_F8E5M2, 0), "nan(0x3)");
	bad(arr(IR_TYPE_F8E5M2, 0), "nan(0x4)", 0,
	    "tries to set NaN payload 0x4 to a literal in shape f8e5m2[] at linear "
	    "index 0, but the NaN payload is out of range (0x3)");
	ok(arr(IR_TYPE_F8E4M3FN, 1, D(3)), "{nan, 7, -nan}");
	ok(arr(IR_TYPE_F8E4M3FN, 0), "nan(0x8000000000000)");
	bad(arr(IR_TYPE_F8E4M3FN, 1, D(1)), "{nan(0x1)}", 1,
	    "tries to set NaN payload 0x1 to a literal in shape f8e4m3fn[1] at linear "
	    "index 0, but f8e4m3fn does not support payloads");
	bad(arr(IR_TYPE_F8E4M3B11FNUZ, 1, D(1)), "{-nan(0x1)}", 1,
	    "tries to set NaN payload 0x1 to a literal in shape f8e4m3b11fnuz[1] at "
	    "linear index 0, but f8e4m3b11fnuz does not support payloads");
	ok(arr(IR_TYPE_F64, 0), "nan(0xfffffffffffff)");
	bad(arr(IR_TYPE_F64, 0), "nan(0x10000000000000)", 0, "unexpected token type in a literal");
	bad(arr(IR_TYPE_F32, 0), "nan(0x0)", 0, "unexpected token type in a literal");
	bad(arr(IR_TYPE_F32, 0), "nan(1)", 0, "unexpected token type in a literal");
}

/* Complex: "(re, im)" per element, each part within the component type's
 * [lowest, max] as is (no rounding); only the real part's payload counts. */
static void test_complex(void **state)
{
	(void)state;
	ok(arr(IR_TYPE_C128, 1, D(2)), "{(1, 2), (-inf, nan)}");
	ok(arr(IR_TYPE_C64, 0), "( 3e38 , -3e38 )");
	bad(arr(IR_TYPE_C64, 0), "(1e100, 0)", 0,
	    "real part 1e+100 is out of range for literal's primitive type C64, "
	    "namely [-3.40282e+38, 3.40282e+38].");
	bad(arr(IR_TYPE_C64, 0), "(0, -1e100)", 0,
	    "imaginary part -1e+100 is out of range for literal's primitive type C64, "
	    "namely [-3.40282e+38, 3.40282e+38].");
	/* f32 would round 3.4028236e38 to FLT_MAX; a c64 part is not rounded */
	bad(arr(IR_TYPE_C64, 0), "(3.4028236e38, 0)", 0,
	    "real part 3.40282e+38 is out of range for literal's primitive type C64, "
	    "namely [-3.40282e+38, 3.40282e+38].");
	bad(arr(IR_TYPE_C128, 0), "(1e400, 0)", 1,
	    "Constant is out of range for double (+/-1.79769e+308) and so is unparsable.");
	bad(arr(IR_TYPE_C64, 0), "(1 2)", 3, "expect comma after real part of complex literal");
	bad(arr(IR_TYPE_C64, 0), "(1, 2, 3)", 5, "expect ')' after complex number");
	bad(arr(IR_TYPE_C64, 0), "(true, 2)", 1, "expects decimal or integer");
	bad(arr(IR_TYPE_C64, 0), "1", 0, "unsupported primitive type C64");
	bad(arr(IR_TYPE_F32, 1, D(1)), "{(1, 2)}", 1,
	    "unexpected '(' in literal. Parens are only valid for complex literals");
	bad(arr(IR_TYPE_C64, 0), "(nan(0x800000), 0)", 0,
	    "tries to set NaN payload 0x800000 to a literal in shape c64[] at linear "
	    "index 0, but the NaN payload is out of range (0x7fffff)");
	ok(arr(IR_TYPE_C64, 0), "(0, nan(0x800000))");
	/* {(1, 2), 3}: '3' (offset 9) is no complex value */
	bad(arr(IR_TYPE_C64, 1, D(2)), "{(1, 2), 3}", 9, "unsupported primitive type C64");
}

/* token and opaque are not arrays (XLA's CHECK aborts): refused. */
static void test_not_arrays(void **state)
{
	(void)state;
	bad(arr(IR_TYPE_TOKEN, 0), "", 0, "unsupported primitive type TOKEN");
	bad(arr(IR_TYPE_OPAQUE, 0), "1", 0, "unsupported primitive type OPAQUE_TYPE");
}

/* One pass: a million-element literal (about 2 MB of text). */
static void test_large(void **state)
{
	(void)state;
	const int64_t n = 1000000;
	char *text = malloc((size_t)n * 2 + 2);
	assert_non_null(text);
	char *p = text;
	*p++ = '{';
	for (int64_t i = 0; i < n; i++) {
		*p++ = (char)('0' + i % 10);
		*p++ = ',';
	}
	p[-1] = '}';
	*p = '\0';
	ok(arr(IR_TYPE_S8, 2, D(1000), D(1000)), "{...}");
	ok(arr(IR_TYPE_S8, 1, D(1000000)), text);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whitespace_and_comments),
		cmocka_unit_test(test_elided),
		cmocka_unit_test(test_scalar),
		cmocka_unit_test(test_nesting_and_counts),
		cmocka_unit_test(test_xla_leniency),
		cmocka_unit_test(test_tuple),
		cmocka_unit_test(test_pred),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_float_range),
		cmocka_unit_test(test_small_floats),
		cmocka_unit_test(test_float_tokens),
		cmocka_unit_test(test_nan_payload),
		cmocka_unit_test(test_complex),
		cmocka_unit_test(test_not_arrays),
		cmocka_unit_test(test_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
