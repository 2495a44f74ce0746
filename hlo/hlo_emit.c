/*
 * hlo_emit.c: writing HLO text back out (the fusion and unfusion passes,
 * sim/fusion.c and sim/unfuse.c). An instruction is re-emitted from its
 * own text, the byte spans the parser recorded (its right-hand side and
 * operand list), so shapes, layouts and attributes stay as written and
 * only names change; headers are written from the IR. A
 * control-predecessors attribute is left out: it only orders a schedule
 * and names instructions the passes rename or remove (a compiled module's
 * fusions), and tpusim's costs do not read it.
 */
#include "hlo_emit.h"

#include <ctype.h>
#include <string.h>

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void hlo_emit_span(struct hlo_emit *e, uint32_t a, uint32_t b, bool trim_front,
		   bool trim_back)
{
	while (trim_front && a < b && blank(e->text[a]))
		a++;
	while (trim_back && b > a && blank(e->text[b - 1]))
		b--;
	if (b > a)
		fwrite(e->text + a, 1, b - a, e->out);
}

void hlo_emit_shape(struct hlo_emit *e, const struct ir_shape *s)
{
	char small[512];
	size_t n = ir_shape_format(s, small, sizeof small);
	if (n < sizeof small) {
		fputs(small, e->out);
		return;
	}
	char *big = ts_malloc(n + 1);
	if (big) {
		ir_shape_format(s, big, n + 1);
		fputs(big, e->out);
		ts_free(big);
	}
}

/* Where the attribute at i of the span [a, b) begins, with the comma
 * before it: the first comma back over blanks; a (no attribute) when the
 * text before i is no comma (i is inside another name: "xbackend_...").
 */
static uint32_t attr_start(const struct hlo_emit *e, uint32_t a, uint32_t i)
{
	while (i > a && blank(e->text[i - 1]))
		i--;
	return i > a && e->text[i - 1] == ',' ? i - 1 : a;
}

uint32_t hlo_emit_find_attr(const struct hlo_emit *e, uint32_t a, uint32_t b,
			    const char *key)
{
	size_t n = strlen(key);
	bool quoted = false;
	int depth = 0;
	for (uint32_t i = a; i < b && i < e->len; i++) {
		char c = e->text[i];
		if (c == '"' && (i == a || e->text[i - 1] != '\\'))
			quoted = !quoted;
		if (quoted)
			continue;
		if (depth == 0 && b - i >= n && !memcmp(e->text + i, key, n) &&
		    attr_start(e, a, i) != a)
			return i;
		depth += (c == '(' || c == '{' || c == '[') -
			 (c == ')' || c == '}' || c == ']');
		if (depth < 0) /* the span began inside brackets: an operand
				  list's close */
			depth = 0;
	}
	return b;
}

void hlo_emit_module_header(struct hlo_emit *e, const struct ir_module *m,
			    bool scheduled)
{
	if (!(m->header_end > m->header_begin && m->header_end <= e->len))
		return;
	/* the header as written, less any is_scheduled= attribute
	 * (hlo_emit_find_attr: not text inside a layout or a string, nor
	 * another attribute's value, that happens to read so) */
	static const char key[] = "is_scheduled=";
	uint32_t a = m->header_begin, b = m->header_end;
	while (b > a && blank(e->text[b - 1])) /* "HloModule m\n": its line */
		b--;
	uint32_t k = hlo_emit_find_attr(e, a, b, key);
	if (k == b) {
		hlo_emit_span(e, a, b, false, false);
	} else {
		uint32_t ke = k + sizeof key - 1;
		while (ke < b && e->text[ke] != ',' && !blank(e->text[ke]))
			ke++;
		hlo_emit_span(e, a, attr_start(e, a, k), false, false);
		hlo_emit_span(e, ke, b, false, false);
	}
	if (scheduled)
		fputs(", is_scheduled=true", e->out);
	fputc('\n', e->out);
}

void hlo_emit_signature(struct hlo_emit *e, const struct ir_computation *c)
{
	fprintf(e->out, "\n%s%%%s (", c->is_entry ? "ENTRY " : "", c->name);
	for (int i = 0; i < c->n_params; i++) {
		/* a name that opens with a digit reads back only after a '%'
		 * (hp_read_name), as the body writes it */
		const char *name = c->params[i] ? c->params[i]->name : "?";
		fprintf(e->out, "%s%s%s: ", i ? ", " : "",
			isdigit((unsigned char)name[0]) ? "%" : "", name);
		if (c->params[i])
			hlo_emit_shape(e, &c->params[i]->shape);
	}
	fputs(") -> ", e->out);
	if (c->has_result_shape)
		hlo_emit_shape(e, &c->result_shape);
	else if (c->root)
		hlo_emit_shape(e, &c->root->shape);
	fputs(" {\n", e->out);
}

/* The span [a, b) with e->backend_first written first inside its
 * backend_config={ or, quotes escaped, its backend_config="{
 * (hlo_emit_find_attr). */
static void emit_backend(struct hlo_emit *e, uint32_t a, uint32_t b)
{
	static const char brace[] = "backend_config={",
			  quoted[] = "backend_config=\"{";
	uint32_t i = e->backend_first ? hlo_emit_find_attr(e, a, b, brace) : b;
	bool in_string = false;
	if (e->backend_first && i == b) {
		i = hlo_emit_find_attr(e, a, b, quoted);
		in_string = true;
	}
	if (i < b) {
		uint32_t at = i + (in_string ? sizeof quoted : sizeof brace) - 1;
		hlo_emit_span(e, a, at, false, false);
		for (const char *c = e->backend_first; *c; c++)
			fprintf(e->out, "%s%c", in_string && *c == '"' ? "\\" : "",
				*c);
		a = at;
	}
	hlo_emit_span(e, a, b, false, true);
}

/* The span [a, b) less its control-predecessors={...} attribute (the
 * comma before it too; hlo_emit_find_attr). */
static void emit_attrs(struct hlo_emit *e, uint32_t a, uint32_t b)
{
	static const char key[] = "control-predecessors={";
	uint32_t i = hlo_emit_find_attr(e, a, b, key);
	if (i == b) {
		emit_backend(e, a, b);
		return;
	}
	uint32_t end = i + sizeof key - 1;
	while (end < b && e->text[end] != '}')
		end++;
	emit_backend(e, a, attr_start(e, a, i));
	emit_backend(e, end < b ? end + 1 : b, b);
}

/* A window's size, stride or pad (field 's', 't' or 'p') of each dim, as
 * HLO writes it: 1x3 or 0_0x1_1. */
static void put_window(struct hlo_emit *e, const struct ir_window *w,
		       char field)
{
	for (int i = 0; i < w->n; i++) {
		const struct ir_window_dim *wd = &w->dims[i];
		fputs(i ? "x" : "", e->out);
		if (field == 'p')
			fprintf(e->out, "%lld_%lld", (long long)wd->pad_lo,
				(long long)wd->pad_hi);
		else
			fprintf(e->out, "%lld", (long long)(field == 's' ? wd->size
									: wd->stride));
	}
}

/* What follows the shape of an instruction a rewrite made
 * (IR_INSTR_MADE: sim/rewrite.c makes reduce-windows, combined
 * all-reduces and the get-tuple-elements that read them), from the IR:
 * the opcode, the operands (ops, else their own names), then the
 * attributes of the instruction it was made from when it keeps their
 * text (ops_begin < ops_end: a combined all-reduce, all of its first
 * all-reduce's text after the operands), else index=, window= and the
 * computation it applies. */
static void emit_made(struct hlo_emit *e, const struct ir_instr *in,
		      const char *const *ops)
{
	fprintf(e->out, " %s(", ir_op_name(in->op));
	for (int j = 0; j < in->n_operands; j++)
		fprintf(e->out, "%s%%%s", j ? ", " : "",
			ops ? ops[j] : in->operands[j]->name);
	if (in->ops_begin < in->ops_end && in->ops_end < in->rhs_end &&
	    in->rhs_end <= e->len) { /* from the list's ')' on */
		emit_attrs(e, in->ops_end, in->rhs_end);
		return;
	}
	fputc(')', e->out);
	if (in->op == IR_OP_GET_TUPLE_ELEMENT)
		fprintf(e->out, ", index=%lld", (long long)in->attrs.tuple_index);
	const struct ir_window *w = in->attrs.window;
	if (w && w->n > 0) {
		bool strided = false;
		for (int i = 0; i < w->n; i++)
			strided |= w->dims[i].stride != 1;
		fputs(", window={size=", e->out);
		put_window(e, w, 's');
		if (strided) {
			fputs(" stride=", e->out);
			put_window(e, w, 't');
		}
		fputs(" pad=", e->out);
		put_window(e, w, 'p');
		fputc('}', e->out);
	}
	if (in->n_called == 1)
		fprintf(e->out, ", to_apply=%%%s", in->called[0]->name);
}

enum ts_status hlo_emit_instr(struct hlo_emit *e, const struct ir_instr *in,
			      bool root, const char *name,
			      const struct ir_shape *shape,
			      const char *const *ops, const char *attrs)
{
	if (in->flags & IR_INSTR_MADE) {
		fprintf(e->out, "  %s%%%s = ", root ? "ROOT " : "", name);
		hlo_emit_shape(e, shape ? shape : &in->shape);
		emit_made(e, in, ops);
		fprintf(e->out, "%s\n", attrs ? attrs : "");
		return TS_OK;
	}
	if (in->rhs_end <= in->rhs_begin || in->rhs_end > e->len) {
		ts_diag_set(e->d, e->file, in->line, in->col,
			    "%s: no text to re-emit (an operand nested in "
			    "another's list)", in->name);
		return TS_ERR_UNSUPPORTED_OP;
	}
	fprintf(e->out, "  %s%%%s = ", root ? "ROOT " : "", name);
	uint32_t a = in->rhs_begin;
	while (a < in->rhs_end && blank(e->text[a]))
		a++;
	if (shape) { /* the shape's text ends at a blank outside brackets
		      * that no dims or layout follow ("f32 [8]" is one), or
		      * where a name follows a bracket it closed
		      * ("f32[8]{0}negate(", which the parser reads too) */
		hlo_emit_shape(e, shape);
		uint32_t from = a;
		for (int depth = 0; a < in->rhs_end; a++) {
			char c = e->text[a];
			char before = a > from ? e->text[a - 1] : ' ';
			if (depth == 0 && (isalpha((unsigned char)c) || c == '_') &&
			    (before == ')' || before == ']' || before == '}'))
				break;
			if (depth == 0 && blank(c)) {
				uint32_t b = a;
				while (b < in->rhs_end && blank(e->text[b]))
					b++;
				if (b == in->rhs_end ||
				    (e->text[b] != '[' && e->text[b] != '{'))
					break;
				a = b;
				c = e->text[a];
			}
			depth += (c == '(' || c == '[' || c == '{') -
				 (c == ')' || c == ']' || c == '}');
		}
	}
	if (e->op_as) { /* the opcode before the operand list's '(' */
		const char *op = ir_op_name(in->op);
		size_t n = strlen(op);
		uint32_t at = in->ops_begin > a ? in->ops_begin - 1 : a;
		while (at > a && blank(e->text[at - 1]))
			at--;
		if (!ops || at < a + n || e->text[in->ops_begin - 1] != '(' ||
		    memcmp(e->text + at - n, op, n) != 0) {
			ts_diag_set(e->d, e->file, in->line, in->col,
				    "%s: its opcode is not where it is "
				    "rewritten as %s", in->name, e->op_as);
			return TS_ERR_UNSUPPORTED_OP;
		}
		hlo_emit_span(e, a, at - (uint32_t)n, false, false);
		fputs(e->op_as, e->out);
		a = at;
	}
	if (!ops || in->ops_end <= in->ops_begin) {
		emit_attrs(e, a, in->rhs_end);
	} else {
		hlo_emit_span(e, a, in->ops_begin, false, false);
		for (int j = 0; j < in->n_operands; j++)
			fprintf(e->out, "%s%%%s", j ? ", " : "", ops[j]);
		emit_attrs(e, in->ops_end, in->rhs_end);
	}
	fprintf(e->out, "%s\n", attrs ? attrs : "");
	return TS_OK;
}
