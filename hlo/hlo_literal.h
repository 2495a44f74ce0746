/*
 * hlo_literal.h: checks the literal text of an HLO constant against its shape
 * the way XLA's HLO parser does (xla/hlo/parser/hlo_parser.cc ParseLiteral,
 * ParseDenseLiteral, SetValueInLiteralHelper, CheckParsedValueIsInRange;
 * tokens as hlo_lexer.cc lexes them). tpusim keeps no tensor data: this only
 * says whether XLA would accept the text. Rules and XLA's quirks in
 * hlo_literal.c.
 */
#ifndef HLO_LITERAL_H
#define HLO_LITERAL_H

#include <stdbool.h>

#include "ir.h"

/* Why a literal was refused: XLA's message (the first line of its error) and
 * the byte it points at. */
struct hlo_literal_error {
	const char *at; /* byte in [s, e] where the error is */
	char msg[200];  /* message without "error: " and without location */
};

/*
 * Checks the literal text [s, e) -- the bytes between constant's '(' and its
 * matching ')' -- against shape (struct ir_shape from ir.h: type, rank, dims;
 * tuples: type IR_TYPE_TUPLE, n_elems, elems). Returns true if XLA accepts
 * it; else false with *err filled (on true, err->msg is empty). One linear
 * pass over e - s bytes, no allocation, stack bounded by the tuple nesting
 * of shape.
 *
 * Messages (XLA's wording; %T an upper-case type name such as U4 or F16, %S a
 * shape such as f32[2,3], at the token named):
 *   unexpected token type in a literal
 *   unexpected '}' token
 *   expects nested array in rank %d, but sees larger
 *   expects nested array in rank %d, but sees %d
 *   expects %d elements in the [i,j]th element, but sees more | but sees %d
 *   expects %d elements on the minor-most dimension, but sees more
 *   expects `...` at nest level 1, but sees it at nest level %d
 *   unexpected '(' in literal. Parens are only valid for complex literals
 *   expects integer for primitive type: %T
 *   expect floating point value for primitive type: %T
 *   expects decimal or integer
 *   expect comma after real part of complex literal
 *   expect ')' after complex number
 *   unsupported primitive type %T
 *   Constant is out of range for double (+/-1.79769e+308) and so is unparsable.
 *   value %v is out of range for literal's primitive type %T namely [%lo, %hi].
 *   real part %v is out of range for literal's primitive type C64, namely [..].
 *   imaginary part %v ... (likewise)
 *   tries to set value %v to a literal in shape %S at linear index %d, but the
 *     index is out of range
 *   tries to set NaN payload 0x%x to a literal in shape %S at linear index %d,
 *     but the NaN payload is out of range (0x%x)
 *   tries to set NaN payload 0x%x to a literal in shape %S at linear index %d,
 *     but %t does not support payloads          (%t: lower-case type name)
 *   expects '(' in front of tuple elements
 *   expects ',' to separate tuple elements
 *   expects ')' at the end of the tuple with %delements   (sic, no space)
 *   expects ')' after constant literal
 */
bool hlo_literal_check(const char *s, const char *e, const struct ir_shape *shape,
		       struct hlo_literal_error *err);

#endif /* HLO_LITERAL_H */
