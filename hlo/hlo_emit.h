/*
 * hlo_emit.h: writing HLO text back out (hlo_emit.c), for the passes that
 * rewrite a module (the fusion writer sim/fusion.c and sim/unfuse.c). An
 * instruction is re-emitted from the byte spans the parser recorded, so
 * shapes, layouts and attributes stay as written and only names change.
 */
#ifndef HLO_EMIT_H
#define HLO_EMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"

struct hlo_emit {
	const char *text;   /* the text the module was parsed from */
	size_t len;
	const char *file;   /* for diagnostics */
	FILE *out;
	struct ts_diag *d;
	const char *backend_first; /* written first inside the next
				      re-emitted backend_config={...} (its
				      key and value and a comma), or NULL */
	const char *op_as;  /* the next re-emitted instruction's opcode
			       written as this (an async collective's
			       start: "all-reduce-start",
			       "all-gather-start"), or NULL */
};

/* text[a, b), blanks trimmed at the front and/or back. */
void hlo_emit_span(struct hlo_emit *e, uint32_t a, uint32_t b, bool trim_front,
		   bool trim_back);
void hlo_emit_shape(struct hlo_emit *e, const struct ir_shape *s);
/* Where text[a, b) has the attribute that begins with key (e.g.
 * "backend_config={"): its first occurrence outside quoted strings and
 * brackets that begins an attribute (after a comma, not inside another
 * name or value); b when there is none. */
uint32_t hlo_emit_find_attr(const struct hlo_emit *e, uint32_t a, uint32_t b,
			    const char *key);
/* "HloModule NAME, ATTRS" as written less is_scheduled=, then
 * ", is_scheduled=true" when scheduled (a compiled module: fuse's output),
 * and a newline; nothing without a header. */
void hlo_emit_module_header(struct hlo_emit *e, const struct ir_module *m,
			    bool scheduled);
/* "\n[ENTRY ]%name (p: shape, ...) -> shape {\n" from the IR. */
void hlo_emit_signature(struct hlo_emit *e, const struct ir_computation *c);
/* "  [ROOT ]%name = <rhs><attrs>\n" from in's own text, its result shape
 * written from shape instead when given (NULL: as written), its operand
 * list rewritten as ops[0..n_operands) (bare names) when ops is given,
 * attrs (", key=value...", NULL for none) appended. An instruction a
 * rewrite made (IR_INSTR_MADE) is written from the IR instead, with the
 * attributes of the instruction it was made from where it keeps their
 * text (a combined all-reduce).
 * TS_ERR_UNSUPPORTED_OP (located) when in has no text of its own. */
enum ts_status hlo_emit_instr(struct hlo_emit *e, const struct ir_instr *in,
			      bool root, const char *name,
			      const struct ir_shape *shape,
			      const char *const *ops, const char *attrs);

#endif /* HLO_EMIT_H */
