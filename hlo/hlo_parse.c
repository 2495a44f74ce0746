/*
 * hlo_parse.c: the HLO text parser (docs/HLO.md section 1): instructions
 * and their operands, computations, modules, and hlo_parse() itself; its
 * other parts are named in hlo_parse_int.h. Names are resolved per scope
 * in a second pass (instructions per computation, computations per
 * module); shapes left out are inferred where XLA infers them.
 */
#include "hlo_parse_int.h"

#include "hlo_literal.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Looks up an opcode word; async sugar X-start/-update/-done maps to
 * async-start/-update/-done when the whole word is not an opcode. */
static enum ir_op lookup_op(const char *s, size_t n, enum ir_op *wrapped)
{
	*wrapped = IR_OP_INVALID;
	const struct hp_kw *k = hp_kw_get(s, n);
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
			k = hp_kw_get(s, n - sl);
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
			const char *q = ch == '/' ? hp_skip_ws_from(p, c) : hp_skip_string(p, c);
			if (!q || p->st != TS_OK) /* unterminated */
				return false;
			c = q;
			continue;
		}
		c++;
	}
	if (c >= p->end)
		return hp_fail(p, p->end, "unexpected end of input: '(' opened at line %u is not closed",
			    hp_line_of(p, open));
	struct hlo_literal_error err;
	if (!(in->flags & IR_INSTR_SHAPE_INFERRED) &&
	    !hlo_literal_check(open + 1, c, &in->shape, &err))
		return hp_fail(p, err.at, "%s", err.msg);
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
		hp_nomem(p);
		return NULL;
	}
	in->name = ts_arena_strndup(a, name, n);
	if (!in->name) {
		hp_nomem(p);
		return NULL;
	}
	in->parent = comp;
	in->attrs = IR_ATTRS_NONE;
	hp_locate(p, at, &in->line, &in->col);
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
	if (!hp_enter(p))
		return NULL;
	struct ir_instr *in = new_instr(p, comp, name, strlen(name), at);
	bool ok = in && parse_rhs(p, lv, in, false);
	p->depth--;
	if (!ok)
		return NULL;
	snprintf(name, sizeof name, "%s#%zu", ir_op_name(in->op), lv->instrs.n);
	in->name = ts_arena_strndup(&p->m->arena, name, strlen(name));
	if (!in->name) {
		hp_nomem(p);
		return NULL;
	}
	struct ir_instr **slot = hp_vec_push(p, &lv->instrs, sizeof *slot);
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
		bool ok = hp_parse_shape(p, &s);
		p->discard = false;
		if (!ok)
			return false;
		typed_end = p->p;
		skip_ws(p);
	} else if (c != '%') {
		const char *ws = p->p;
		size_t wn = word_len(p, ws);
		const struct hp_kw *k = wn ? hp_kw_get(ws, wn) : NULL;
		const char *after = ws_end(p, ws + wn);
		int next = peek_at(p, after);
		if ((k && k->type && next == '[') ||
		    (wn == 1 && *ws == 'b' && next == '(')) {
			struct ir_shape s;
			p->p = ws + wn;
			if (!hp_enter(p))
				return false;
			p->discard = true;
			bool ok = hp_parse_shape_after_word(p, ws, wn, k, &s);
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
	if (!hp_read_name(p, &s, &n))
		return hp_expected(p, "an operand name");
	skip_ws(p);
	/* a nested instruction, or the operand a declared shape was checked
	 * against: resolved here, not looked up again */
	struct ir_instr *resolved = NULL;
	if (cur(p) == '(') {
		p->p = start;
		resolved = parse_nested(p, lv, comp);
		if (!resolved)
			return false;
	} else if (typed_end) {
		resolved = hp_table_get(&lv->names, s, n);
		if (resolved && !declared_matches(p, resolved)) {
			char have[128];
			ir_shape_format(&resolved->shape, have, sizeof have);
			int dn = (int)(typed_end - start);
			return hp_fail(p, start, "the declared operand shape %.*s is not "
					      "compatible with the shape of the operand "
					      "instruction %s", dn > 96 ? 96 : dn, start,
				    have);
		}
	}
	struct hp_ref *r = hp_vec_push(p, &p->ops, sizeof *r);
	if (!r)
		return false;
	*r = (struct hp_ref){NULL, s, n, at, resolved};
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
		return hp_fail(p, p->p, "too many called computations");
	in->called = ts_arena_array(&p->m->arena, n, sizeof *in->called);
	if (!in->called)
		return hp_nomem(p);
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
		in->called[i] = hp_table_get(&p->comp_names, c->name, c->len);
		if (in->called[i])
			continue;
		struct hp_ref *r = hp_vec_push(p, &p->crefs, sizeof *r);
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
	if (!hp_read_name(p, &ns, &nn))
		return hp_expected(p, "an instruction name");
	if (!hp_expect_char(p, '=', "'=' after the instruction name"))
		return false;
	struct ir_instr *in = new_instr(p, comp, ns, nn, at);
	const char *rhs = p->p;
	if (!in || !parse_rhs(p, lv, in, true))
		return false;
	in->rhs_begin = (uint32_t)(rhs - p->text);
	in->rhs_end = (uint32_t)(p->p - p->text);
	skip_ws(p);
	if (p->st != TS_OK)
		return false;
	if (cur(p) >= 0 && cur(p) != '}' && !hp_starts_instr(p, p->p))
		return hp_expected(p, "',' or the next instruction");

	/* register */
	if (hp_table_put(p, &lv->names, in->name, nn, in))
		return hp_fail(p, at, "duplicate instruction name '%.*s'",
			    (int)(nn > HP_MSG_TOK ? HP_MSG_TOK : nn), ns);
	if (p->st != TS_OK)
		return false;
	struct ir_instr **slot = hp_vec_push(p, &lv->instrs, sizeof *slot);
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
		if (!hp_parse_shape(p, &in->shape))
			return false;
		have_shape = true;
	} else {
		wn = word_len(p, ws);
		p->p = ws + wn;
		const struct hp_kw *k = wn ? hp_kw_get(ws, wn) : NULL;
		int next = peek_at(p, ws_end(p, p->p));
		if ((k && k->type) || (wn == 1 && *ws == 'b' && next == '(')) {
			if (!hp_enter(p))
				return false;
			bool ok = hp_parse_shape_after_word(p, ws, wn, k, &in->shape);
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
		return hp_expected(p, "an opcode");
	}
	enum ir_op wrapped;
	in->op = lookup_op(ws, wn, &wrapped);
	in->wrapped_op = wrapped;
	if (in->op == IR_OP_INVALID) {
		if (!have_shape && peek_at(p, hp_skip_ws_from(p, p->p)) == '[')
			return hp_fail(p, ws, "unknown element type '%.*s'",
				    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
		return hp_fail(p, ws, "unknown opcode '%.*s'",
			    (int)(wn > HP_MSG_TOK ? HP_MSG_TOK : wn), ws);
	}
	if (!have_shape)
		in->flags |= IR_INSTR_SHAPE_INFERRED;
	if (!hp_expect_char(p, '(', "'(' after the opcode"))
		return false;

	/* operands */
	if (in->op == IR_OP_PARAMETER) {
		const char *nat = hp_skip_ws_from(p, p->p);
		if (!hp_read_int(p, &in->attrs.parameter_number))
			return false;
		if (in->attrs.parameter_number < 0 ||
		    in->attrs.parameter_number >= HP_MAX_PARAMS)
			return hp_fail(p, nat, "parameter number %lld out of range",
				    (long long)in->attrs.parameter_number);
		/* digits without leading zeros name the number */
		const char *key = nat;
		while (key + 1 < p->p && *key == '0')
			key++;
		struct ir_instr *twin = hp_table_put(p, &lv->params, key,
						  (uint32_t)(p->p - key), in);
		if (twin)
			return hp_fail(p, nat, "duplicate parameter number %lld (also "
					    "'%s')", (long long)in->attrs.parameter_number,
				    twin->name);
		if (p->st != TS_OK)
			return false;
		if (!hp_expect_char(p, ')', "')' after the parameter number"))
			return false;
	} else if (in->op == IR_OP_CONSTANT) {
		if (!skip_literal(p, in))
			return false;
	} else {
		size_t base = p->ops.n;
		skip_ws(p);
		in->ops_begin = (uint32_t)(p->p - p->text);
		if (cur(p) != ')') {
			for (;;) {
				if (!parse_operand(p, lv, in->parent))
					return false;
				skip_ws(p);
				if (cur(p) == ')')
					break;
				if (cur(p) != ',')
					return hp_expected(p, "',' or ')' in the operand list");
				p->p++;
			}
		}
		in->ops_end = (uint32_t)(p->p - p->text);
		p->p++; /* ')' */
		size_t n = p->ops.n - base;
		if (n > INT_MAX)
			return hp_fail(p, at, "too many operands");
		if (n) {
			in->operands = ts_arena_array(a, n, sizeof *in->operands);
			if (!in->operands)
				return hp_nomem(p);
		}
		in->n_operands = (int)n;
		for (size_t i = 0; i < n; i++) {
			struct hp_ref *r = (struct hp_ref *)p->ops.v + base + i;
			in->operands[i] = r->direct ? r->direct
				: hp_table_get(&lv->names, r->name, r->len);
			if (in->operands[i])
				continue;
			struct hp_ref *pend = hp_vec_push(p, &lv->refs, sizeof *pend);
			if (!pend)
				return false;
			r = (struct hp_ref *)p->ops.v + base + i;
			*pend = *r;
			pend->slot = (void **)&in->operands[i];
		}
		p->ops.n = base;
	}

	size_t call_base = p->calls.n;
	if (!hp_parse_attrs(p, lv, in, allow_attrs))
		return false;
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
		in->shape.dims = ts_arena_dup(&p->m->arena, dims,
					      sizeof *dims * (size_t)n);
		if (!in->shape.dims)
			return hp_nomem(p);
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
				return hp_nomem(p);
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

/* Pushes a frame of a depth-first search on p->ints: node, then width - 1
 * zeros (how far it is through its edges). */
static bool push_frame(struct hp_parser *p, int node, size_t width)
{
	int *f = hp_vec_push_n(p, &p->ints, sizeof *f, width);
	if (!f)
		return false;
	f[0] = node;
	for (size_t i = 1; i < width; i++)
		f[i] = 0;
	return true;
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
	if (!hp_push_ints(p, 0, n))
		return false;
	for (size_t s = 0; s < n; s++) {
		if (((int *)p->ints.v)[s])
			continue;
		size_t base = p->ints.n;
		if (!push_frame(p, (int)s, 2))
			return false;
		((int *)p->ints.v)[s] = 1;
		while (p->ints.n > base) {
			int *st = (int *)p->ints.v + p->ints.n - 2;
			struct ir_instr *in = c->instrs[st[0]];
			if (st[1] == in->n_operands) {
				((int *)p->ints.v)[st[0]] = 2;
				p->ints.n -= 2;
				int *o = hp_vec_push(p, &p->order, sizeof *o);
				if (!o)
					return false;
				*o = in->index;
				continue;
			}
			struct ir_instr *o = in->operands[st[1]++];
			int *color = (int *)p->ints.v + o->index;
			if (*color == 1)
				return hp_fail_lc(p, o->line, o->col,
					       "instruction '%s' depends on itself (operand cycle)",
					       o->name);
			if (*color == 2)
				continue;
			*color = 1;
			if (!push_frame(p, o->index, 2))
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
		*refs[i].slot = hp_table_get(&lv->names, refs[i].name, refs[i].len);
		if (!*refs[i].slot)
			return hp_fail(p, refs[i].at, "use of undefined instruction '%.*s'",
				    (int)(refs[i].len > HP_MSG_TOK ? HP_MSG_TOK : refs[i].len),
				    refs[i].name);
	}
	size_t n = lv->instrs.n;
	if (!n)
		return hp_fail(p, open, "computation '%s' has no instructions", c->name);
	if (n > INT_MAX)
		return hp_fail(p, open, "computation '%s' is too large", c->name);
	c->n_instrs = (int)n;
	c->instrs = ts_arena_dup(a, lv->instrs.v, n * sizeof *c->instrs);
	if (!c->instrs)
		return hp_nomem(p);
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
			return hp_nomem(p);
		for (size_t i = 0; i < n; i++) {
			struct ir_instr *in = c->instrs[i];
			if (in->op != IR_OP_PARAMETER)
				continue;
			c->params[in->attrs.parameter_number] = in;
		}
		for (int k = 0; k < c->n_params; k++)
			if (!c->params[k])
				return hp_fail(p, open, "computation '%s': parameter %d is missing",
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
			       hp_fail_lc(p, in->line, in->col,
				       "cannot infer the shape of '%s' (%s): write its result shape",
				       in->name, ir_op_name(in->op));
	}

	/* users: distinct instructions of this computation per operand */
	p->ints.n = 0;
	if (!hp_push_ints(p, -1, n))
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
		return hp_nomem(p);
	const char *ns = NULL;
	uint32_t nn = 0;
	if (inline_body) {
		c->name = ts_arena_strndup(a, gen_name, strlen(gen_name));
	} else {
		if (!hp_read_name(p, &ns, &nn))
			return hp_expected(p, "a computation name");
		c->name = ts_arena_strndup(a, ns, nn);
	}
	if (!c->name)
		return hp_nomem(p);
	hp_locate(p, at, &c->line, &c->col);
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
					if (!hp_read_name(p, &ps, &pn))
						return hp_expected(p, "a parameter name");
					if (!hp_expect_char(p, ':', "':' after the parameter name"))
						return false;
					struct ir_shape s;
					p->discard = true;
					bool ok = hp_parse_shape(p, &s);
					p->discard = false;
					if (!ok)
						return false;
					if (hp_accept(p, ')'))
						break;
					if (!hp_expect_char(p, ',', "',' or ')' in the signature"))
						return false;
				}
			} else {
				p->p++;
			}
			skip_ws(p);
			if (p->end - p->p < 2 || p->p[0] != '-' || p->p[1] != '>')
				return hp_expected(p, "'->' after the signature");
			p->p += 2;
			hp_locate(p, hp_skip_ws_from(p, p->p), &c->result_line,
			       &c->result_col);
			if (!hp_parse_shape(p, &c->result_shape))
				return false;
			c->has_result_shape = true;
		}
	}
	skip_ws(p);
	if (cur(p) != '{')
		return hp_expected(p, "'{' opening the computation body");
	const char *open = p->p;
	p->p++;
	if (p->comp_depth >= HP_MAX_DEPTH)
		return hp_fail(p, open, "nesting deeper than %d levels", HP_MAX_DEPTH);
	if (!p->levels[p->comp_depth]) {
		p->levels[p->comp_depth] = ts_calloc(1, sizeof(struct hp_level));
		if (!p->levels[p->comp_depth])
			return hp_nomem(p);
	}
	struct hp_level *lv = p->levels[p->comp_depth++];
	hp_table_reset(&lv->names);
	hp_table_reset(&lv->params);
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
			ok = hp_fail(p, p->end,
				  "unexpected end of input: '{' of computation '%s' opened at line %u is not closed",
				  c->name, hp_line_of(p, open));
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
				ok = hp_fail(p, iat, "more than one ROOT instruction in computation '%s'",
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
		if (hp_table_put(p, &p->comp_names, ns, nn, c))
			return hp_fail(p, at, "duplicate computation name '%s'", c->name);
		if (p->st != TS_OK)
			return false;
		/* "}, execution_thread=..." */
		const char *q = hp_skip_ws_from(p, p->p);
		if (q < p->end && *q == ',') {
			p->p = q + 1;
			skip_ws(p);
			const char *as = p->p;
			size_t an = word_len(p, as);
			if (!an)
				return hp_expected(p, "a computation attribute");
			p->p += an;
			if (!hp_expect_char(p, '=', "'=' after the attribute name") ||
			    !hp_skip_value(p, true))
				return false;
		}
	}
	struct ir_computation **slot = hp_vec_push(p, &p->comps, sizeof *slot);
	if (!slot)
		return false;
	*slot = c;
	*out = c;
	return true;
}

/* HloModule NAME [:] (',' ATTR=VALUE)* */
static bool parse_header(struct hp_parser *p)
{
	struct ts_arena *a = &p->m->arena;
	p->m->header_begin = (uint32_t)(p->p - p->text);
	p->p += strlen("HloModule");
	skip_ws(p);
	const char *s;
	uint32_t n;
	if (!hp_read_name(p, &s, &n))
		return hp_expected(p, "a module name");
	p->m->name = ts_arena_strndup(a, s, n);
	if (!p->m->name)
		return hp_nomem(p);
	/* The old header form "HloModule name:" (XLA's parser still reads it) */
	skip_ws(p);
	if (cur(p) == ':')
		p->p++;
	for (;;) {
		p->m->header_end = (uint32_t)(p->p - p->text);
		skip_ws(p);
		if (cur(p) != ',')
			return true;
		p->p++;
		skip_ws(p);
		const char *as = p->p;
		size_t an = word_len(p, as);
		if (!an)
			return hp_expected(p, "a module attribute");
		p->p += an;
		if (!hp_expect_char(p, '=', "'=' after the attribute name"))
			return false;
		skip_ws(p);
		if (hp_word_is(as, an, "is_scheduled")) {
			const char *vs = p->p;
			size_t vn = word_len(p, vs);
			if (hp_word_is(vs, vn, "true"))
				p->m->is_scheduled = true;
			else if (!hp_word_is(vs, vn, "false"))
				return hp_fail(p, vs, "bad value for attribute 'is_scheduled': '%.*s'",
					    hp_tok_len(p, vs), vs);
			p->p += vn;
		} else if (hp_word_is(as, an, "replica_count") ||
			   hp_word_is(as, an, "num_partitions")) {
			const char *vs = p->p;
			int64_t v;
			if (!hp_read_int(p, &v))
				return false;
			if (v < 1 || v > IR_MAX_DEVICES)
				return hp_fail(p, vs, "%.*s must be in 1..%d, got %lld",
					    (int)an, as, IR_MAX_DEVICES, (long long)v);
			*(hp_word_is(as, an, "replica_count") ? &p->m->replica_count
							   : &p->m->num_partitions) = v;
		} else if (hp_word_is(as, an, "input_output_alias") ||
			   hp_word_is(as, an, "buffer_donor")) {
			if (!hp_parse_aliasing(p, hp_word_is(as, an, "buffer_donor")))
				return false;
		} else if (!hp_skip_value(p, true)) {
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
		if (!hp_read_int(p, &id))
			return false;
		skip_ws(p);
		const char *e;
		if (cur(p) == '"')
			e = hp_skip_string(p, p->p);
		else if (cur(p) == '{')
			e = hp_skip_group(p, p->p);
		else
			return hp_expected(p, "a string or '{' in the stack-frame table");
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
		return hp_nomem(p);
	}
	m->arena = a;
	p->m = m;
	p->m_header = false;
	p->m_last_close = p->p;
	hp_table_reset(&p->comp_names);
	p->comps.n = 0;
	p->crefs.n = 0;
	p->n_entry = 0;
	m->name = "";
	m->replica_count = 1;
	m->num_partitions = 1;
	m->file = ts_arena_strndup(&m->arena, p->file, strlen(p->file));
	if (!m->file)
		return hp_nomem(p);
	return true;
}

/* Rejects call cycles (a computation that calls itself, directly or not). */
static bool check_call_cycles(struct hp_parser *p)
{
	struct ir_module *m = p->m;
	p->ints.n = 0;
	if (!hp_push_ints(p, 0, (size_t)m->n_comps))
		return false;
	/* stack entries: comp index, instr index, call index */
	for (int s = 0; s < m->n_comps; s++) {
		if (((int *)p->ints.v)[s])
			continue;
		size_t base = p->ints.n;
		if (!push_frame(p, s, 3))
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
				return hp_fail_lc(p, in->line, in->col,
					       "computation '%s' calls itself through '%s'",
					       callee->name, in->name);
			if (*color == 2)
				continue;
			*color = 1;
			if (!push_frame(p, callee->index, 3))
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
		return hp_fail(p, at, "module '%s' has no computations", m->name);
	struct hp_ref *refs = p->crefs.v;
	for (size_t i = 0; i < p->crefs.n; i++) {
		*refs[i].slot = hp_table_get(&p->comp_names, refs[i].name, refs[i].len);
		if (!*refs[i].slot)
			return hp_fail(p, refs[i].at, "undefined computation '%.*s'",
				    (int)(refs[i].len > HP_MSG_TOK ? HP_MSG_TOK : refs[i].len),
				    refs[i].name);
	}
	if (p->comps.n > INT_MAX)
		return hp_fail(p, at, "too many computations");
	m->n_comps = (int)p->comps.n;
	m->comps = ts_arena_dup(&m->arena, p->comps.v, p->comps.n * sizeof *m->comps);
	if (!m->comps)
		return hp_nomem(p);
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
	if (!hp_push_ints(p, -1, (size_t)m->n_comps))
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
					callee->caller =
						callee->n_callers++ ? NULL : in;
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
			return hp_nomem(p);
		struct ir_module **o = ts_realloc(p->out, (size_t)cap * sizeof *o);
		if (!o)
			return hp_nomem(p);
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
	return hp_word_is(p->p, n, w);
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
			hp_locate(p, p->p, &p->m->line, &col);
			p->m_header = true;
			if (!parse_header(p))
				return false;
			continue;
		}
		if (!p->m) {
			if (!new_module(p))
				return false;
			uint32_t col;
			hp_locate(p, p->p, &p->m->line, &col);
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
				return hp_fail(p, at, "more than one ENTRY computation in module '%s'",
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
		return hp_fail(p, p->p, "no HLO computation found");
	return true;
}

static void parser_free(struct hp_parser *p)
{
	hp_vec_free(&p->shapes);
	hp_vec_free(&p->calls);
	hp_vec_free(&p->ops);
	hp_vec_free(&p->ints);
	hp_vec_free(&p->order);
	hp_vec_free(&p->aliases);
	hp_vec_free(&p->comps);
	hp_vec_free(&p->crefs);
	hp_table_free(&p->comp_names);
	for (int i = 0; i < HP_MAX_DEPTH && p->levels[i]; i++) {
		hp_table_free(&p->levels[i]->names);
		hp_table_free(&p->levels[i]->params);
		hp_vec_free(&p->levels[i]->instrs);
		hp_vec_free(&p->levels[i]->refs);
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
	if (len >= UINT32_MAX) { /* instruction spans are 32-bit offsets */
		ts_diag_set(d, file, 0, 0, "HLO text of %zu bytes: at most 4 GiB",
			    len);
		return TS_ERR_PARSE;
	}
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
	p->parse_body = parse_computation;
	hp_kw_init();
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
