/*
 * ir_verify.c: the shape checks XLA's HloVerifier makes, for the ops whose
 * result shape follows from their operands and attributes. A module that
 * parses but declares a shape its operands cannot produce is refused at the
 * instruction, as XLA refuses it, instead of being costed on a shape that
 * does not exist. Checked (static dimensions only; dynamic ones, layouts
 * and element types are not compared):
 *   elementwise ops    every array operand of the result's rank has its
 *                      dimensions (rank-0 operands pass: select/clamp);
 *   dot                result = batch dims, lhs free dims, rhs free dims;
 *                      contracting and batch extents agree;
 *   reshape            the same element count;
 *   broadcast          one dimensions= entry per operand dim, in range,
 *                      extents equal;
 *   slice              0 <= start <= limit <= extent, stride >= 1, result
 *                      extent ceil((limit - start) / stride);
 *   concatenate        equal ranks and extents but along the dimension,
 *                      whose extents add up;
 *   get-tuple-element  the index names an element of the tuple operand,
 *                      of the result's dimensions;
 *   fusion, call       one parameter of the called computation per
 *                      operand, of the operand's dimensions, and a root of
 *                      the result's.
 * Not checked: transpose (XLA's own corpus has a transpose whose declared
 * shape its dimensions= contradict, which XLA's parser reads), random
 * number ops (their operands are state, not data); and (yet): convolution,
 * reduce, reduce-window, gather, scatter,
 * pad, dynamic slices, while/conditional signatures, collectives.
 */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Ranks a dot result can have: twice the parser's largest rank. */
#define VERIFY_MAX_DIMS 256

/* Dimensions to compare: an array whose every dim is static. */
static bool checkable(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE || s->type == IR_TYPE_TOKEN)
		return false;
	for (int i = 0; s->dim_kind && i < s->rank; i++)
		if (s->dim_kind[i] != IR_DIM_STATIC)
			return false;
	return true;
}

static bool in_list(const struct ir_ints *l, int64_t x)
{
	for (int i = 0; l && i < l->n; i++)
		if (l->v[i] == x)
			return true;
	return false;
}

struct vctx {
	const struct ir_instr *in;
	struct ts_diag *d;
	const char *file;
	/* per computation: the first async-start calling it, or NULL */
	const struct ir_instr **first_start;
};

/* Refuses the instruction: "op name: message" at its line:col. */
__attribute__((format(printf, 2, 3)))
static bool refuse(struct vctx *v, const char *fmt, ...)
{
	char msg[TS_DIAG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ts_diag_set(v->d, v->file, v->in->line, v->in->col, "%s %s: %s",
		    ir_op_name(v->in->op), v->in->name, msg);
	return false;
}

/* A declared shape its operands cannot produce. */
__attribute__((format(printf, 2, 3)))
static bool bad(struct vctx *v, const char *fmt, ...)
{
	char msg[TS_DIAG_MSG_MAX / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char shape[128];
	ir_shape_format(&v->in->shape, shape, sizeof shape);
	return refuse(v, "shape %s does not match its operands: %s", shape, msg);
}

/* "f32[2]" of an instruction's shape, for messages. */
static const char *shape_text(const struct ir_shape *s, char *buf, size_t cap)
{
	ir_shape_format(s, buf, cap);
	return buf;
}

/*
 * conditional: a scalar PRED predicate with true_computation and
 * false_computation, or a scalar S32 index with branch_computations; one
 * branch per further operand, each taking one parameter of that operand's
 * dimensions and returning the conditional's (XLA: the parser's and
 * ShapeInference::InferConditionalShape's rules).
 */
static bool check_conditional(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_shape *b = &in->operands[0]->shape;
	char t[128];
	if (b->type == IR_TYPE_TUPLE || b->rank != 0)
		return refuse(v, "the first operand must be a scalar, not %s",
			      shape_text(b, t, sizeof t));
	if (b->type != IR_TYPE_PRED && b->type != IR_TYPE_S32)
		return refuse(v, "the first operand must be a scalar of PRED or "
				 "S32, not %s", shape_text(b, t, sizeof t));
	bool list = in->flags & IR_INSTR_BRANCH_LIST;
	if (b->type == IR_TYPE_PRED && list)
		return refuse(v, "a PRED predicate takes true_computation and "
				 "false_computation, not branch_computations");
	if (b->type == IR_TYPE_S32 && !list)
		return refuse(v, "an S32 index takes branch_computations, not "
				 "true_computation and false_computation");
	if (b->type == IR_TYPE_PRED && in->n_called != 2)
		return refuse(v, "needs both true_computation and "
				 "false_computation");
	if (in->n_called != in->n_operands - 1)
		return refuse(v, "%d branches for %d branch operands",
			      in->n_called, in->n_operands - 1);
	for (int k = 0; k < in->n_called; k++) {
		const struct ir_computation *c = in->called[k];
		if (c->n_params != 1)
			return refuse(v, "branch %s takes %d parameters, not 1",
				      c->name, c->n_params);
		if (!ir_shape_equal_dims(&c->params[0]->shape,
					 &in->operands[k + 1]->shape))
			return refuse(v, "branch %s's parameter has other "
					 "dimensions than operand %d", c->name,
				      k + 1);
		if (!ir_shape_equal_dims(&c->root->shape, &in->shape))
			return refuse(v, "branch %s returns %s", c->name,
				      shape_text(&c->root->shape, t, sizeof t));
	}
	return true;
}

/* while: condition and body take one parameter of the loop's shape; the
 * body returns that shape and the condition a scalar PRED (XLA's
 * HloVerifier::HandleWhile). */
static bool check_while(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	if (in->n_called != 2)
		return true;
	char t[128];
	for (int k = 0; k < 2; k++) {
		const struct ir_computation *c = in->called[k];
		if (c->n_params != 1)
			return refuse(v, "%s %s takes %d parameters, not 1",
				      k ? "body" : "condition", c->name, c->n_params);
		if (!ir_shape_equal_dims(&c->params[0]->shape, &in->shape))
			return refuse(v, "%s %s's parameter is %s", k ? "body" :
				      "condition", c->name,
				      shape_text(&c->params[0]->shape, t, sizeof t));
	}
	const struct ir_shape *cr = &in->called[0]->root->shape;
	if (cr->type != IR_TYPE_PRED || cr->rank != 0)
		return refuse(v, "condition %s returns %s, not pred[]",
			      in->called[0]->name, shape_text(cr, t, sizeof t));
	if (!ir_shape_equal_dims(&in->called[1]->root->shape, &in->shape))
		return refuse(v, "body %s returns %s", in->called[1]->name,
			      shape_text(&in->called[1]->root->shape, t, sizeof t));
	return true;
}

/* The op an async-start or -update wraps: its sugar opcode (X-start), else
 * the root of the computation it calls. */
static enum ir_op async_wrapped(const struct ir_instr *in)
{
	if (in->wrapped_op != IR_OP_INVALID)
		return in->wrapped_op;
	if (in->n_called && in->called[0]->root)
		return in->called[0]->root->op;
	return IR_OP_INVALID;
}

static const char *async_thread(const struct ir_instr *in)
{
	return in->attrs.exec_thread ? in->attrs.exec_thread : "main";
}

/*
 * async-start / -update / -done (XLA's parser): a start and an update have
 * the shape ((operands), outputs, state); an update or done takes one
 * async-start or -update, and agrees with its start on the wrapped op, the
 * called computation and, where it names one, the execution thread (else
 * it runs on its start's); a wrapped computation is
 * called by one async-start only.
 */
static bool check_async(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_shape *s = &in->shape;
	if (in->op != IR_OP_ASYNC_DONE &&
	    (s->type != IR_TYPE_TUPLE || s->n_elems < 2 ||
	     s->elems[0].type != IR_TYPE_TUPLE))
		return refuse(v, "expects the shape ((async-operands), "
				 "async-outputs, state)");
	if (in->op == IR_OP_ASYNC_START) {
		if (in->n_called && v->first_start[in->called[0]->index] != in)
			return refuse(v, "computation %s is called by more than "
					 "one async op (also by %s)", in->called[0]->name,
				      v->first_start[in->called[0]->index]->name);
		return true;
	}
	const struct ir_instr *st = in->operands[0];
	if (st->op != IR_OP_ASYNC_START && st->op != IR_OP_ASYNC_UPDATE)
		return refuse(v, "expects a single async op as its operand, not "
				 "%s (%s)", st->name, ir_op_name(st->op));
	while (st->op == IR_OP_ASYNC_UPDATE && st->n_operands == 1)
		st = st->operands[0];
	enum ir_op w = async_wrapped(st);
	if (in->wrapped_op != IR_OP_INVALID && w != IR_OP_INVALID &&
	    in->wrapped_op != w)
		return refuse(v, "expects the wrapped op to be %s, but got %s",
			      ir_op_name(w), ir_op_name(in->wrapped_op));
	if (in->n_called && st->n_called && in->called[0] != st->called[0])
		return refuse(v, "expects the async computation to be %s, but got "
				 "%s", st->called[0]->name, in->called[0]->name);
	if (in->attrs.exec_thread &&
	    strcmp(in->attrs.exec_thread, async_thread(st)) != 0)
		return refuse(v, "expects async_execution_thread to be %s, but got "
				 "%s", async_thread(st), in->attrs.exec_thread);
	return true;
}

/* Rules on operand counts, called computations and tuple structure,
 * whatever the shapes' dimensions. */
static bool check_structure(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	int lo, hi;
	ir_op_arity(in->op, &lo, &hi);
	if (in->n_operands < lo || (hi >= 0 && in->n_operands > hi)) {
		if (lo == hi)
			return refuse(v, "takes %d operand%s, given %d", lo,
				      lo == 1 ? "" : "s", in->n_operands);
		if (hi < 0)
			return refuse(v, "takes at least %d operand%s, given %d",
				      lo, lo == 1 ? "" : "s", in->n_operands);
		return refuse(v, "takes %d to %d operands, given %d", lo, hi,
			      in->n_operands);
	}
	switch (in->op) {
	case IR_OP_CONDITIONAL:
		return check_conditional(v);
	case IR_OP_WHILE:
		return check_while(v);
	case IR_OP_ASYNC_START:
	case IR_OP_ASYNC_UPDATE:
	case IR_OP_ASYNC_DONE:
		return check_async(v);
	case IR_OP_INFEED:
		if (in->shape.type != IR_TYPE_TUPLE || in->shape.n_elems == 0)
			return refuse(v, "infeed must have a non-empty tuple shape");
		return true;
	default:
		return true;
	}
}

static bool check_dot(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_dot_dims *dd = in->attrs.dot;
	if (!dd || in->n_operands < 2)
		return true;
	const struct ir_shape *l = &in->operands[0]->shape;
	const struct ir_shape *r = &in->operands[1]->shape;
	if (!checkable(l) || !checkable(r))
		return true;
	if (dd->lhs_contracting.n != dd->rhs_contracting.n ||
	    dd->lhs_batch.n != dd->rhs_batch.n)
		return bad(v, "contracting or batch dimension counts differ");
	const struct ir_ints *ld[2] = {&dd->lhs_contracting, &dd->lhs_batch};
	const struct ir_ints *rd[2] = {&dd->rhs_contracting, &dd->rhs_batch};
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < ld[k]->n; i++) {
			int64_t a = ld[k]->v[i], b = rd[k]->v[i];
			if (a < 0 || a >= l->rank || b < 0 || b >= r->rank)
				return bad(v, "dimension number out of range");
			if (l->dims[a] != r->dims[b])
				return bad(v, "%s extents %lld and %lld differ",
					   k ? "batch" : "contracting",
					   (long long)l->dims[a],
					   (long long)r->dims[b]);
		}
	int64_t want[VERIFY_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < dd->lhs_batch.n && n < VERIFY_MAX_DIMS; i++)
		want[n++] = l->dims[dd->lhs_batch.v[i]];
	for (int i = 0; i < l->rank && n < VERIFY_MAX_DIMS; i++)
		if (!in_list(&dd->lhs_batch, i) && !in_list(&dd->lhs_contracting, i))
			want[n++] = l->dims[i];
	for (int i = 0; i < r->rank && n < VERIFY_MAX_DIMS; i++)
		if (!in_list(&dd->rhs_batch, i) && !in_list(&dd->rhs_contracting, i))
			want[n++] = r->dims[i];
	if (n != in->shape.rank)
		return bad(v, "a dot of these operands has rank %d", n);
	for (int i = 0; i < n; i++)
		if (want[i] != in->shape.dims[i])
			return bad(v, "dimension %d is %lld", i, (long long)want[i]);
	return true;
}

static bool check_instr(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_shape *s = &in->shape;
	if (!checkable(s) || (in->flags & IR_INSTR_SHAPE_INFERRED))
		return true;
	const struct ir_shape *o0 = in->n_operands ? &in->operands[0]->shape
						  : NULL;
	switch (in->op) {
	case IR_OP_DOT:
		return check_dot(v);
	case IR_OP_RESHAPE:
		if (o0 && checkable(o0) && ir_shape_elems(o0) != ir_shape_elems(s))
			return bad(v, "reshape of %lld elements to %lld",
				   (long long)ir_shape_elems(o0),
				   (long long)ir_shape_elems(s));
		return true;
	case IR_OP_BROADCAST: {
		const struct ir_ints *dm = in->attrs.dimensions;
		if (!o0 || !checkable(o0) || !dm)
			return true;
		if (dm->n != o0->rank)
			return bad(v, "dimensions= has %d entries for an operand "
				      "of rank %d", dm->n, o0->rank);
		for (int i = 0; i < dm->n; i++) {
			if (dm->v[i] < 0 || dm->v[i] >= s->rank)
				return bad(v, "dimensions= entry %lld out of "
					      "range", (long long)dm->v[i]);
			if (s->dims[dm->v[i]] != o0->dims[i])
				return bad(v, "operand dimension %d (%lld) lands "
					      "on %lld", i, (long long)o0->dims[i],
					   (long long)s->dims[dm->v[i]]);
		}
		return true;
	}
	case IR_OP_SLICE: {
		const struct ir_slice *sl = in->attrs.slice;
		if (!o0 || !checkable(o0) || !sl)
			return true;
		if (sl->n != o0->rank || s->rank != o0->rank)
			return bad(v, "slice= has %d entries for rank %d", sl->n,
				   o0->rank);
		for (int i = 0; i < sl->n; i++) {
			const struct ir_slice_dim *x = &sl->dims[i];
			if (x->start < 0 || x->start > x->limit ||
			    x->limit > o0->dims[i] || x->stride < 1)
				return bad(v, "slice [%lld:%lld:%lld] of an extent "
					      "of %lld", (long long)x->start,
					   (long long)x->limit, (long long)x->stride,
					   (long long)o0->dims[i]);
			int64_t n = (x->limit - x->start + x->stride - 1) /
				    x->stride;
			if (n != s->dims[i])
				return bad(v, "dimension %d is %lld", i,
					   (long long)n);
		}
		return true;
	}
	case IR_OP_CONCATENATE: {
		const struct ir_ints *dm = in->attrs.dimensions;
		if (!dm || dm->n != 1 || dm->v[0] < 0 || dm->v[0] >= s->rank)
			return true;
		int64_t cd = dm->v[0], sum = 0;
		for (int k = 0; k < in->n_operands; k++) {
			const struct ir_shape *o = &in->operands[k]->shape;
			if (!checkable(o))
				return true;
			if (o->rank != s->rank)
				return bad(v, "operand %d has rank %d", k, o->rank);
			for (int i = 0; i < s->rank; i++)
				if (i != cd && o->dims[i] != s->dims[i])
					return bad(v, "operand %d differs in "
						      "dimension %d", k, i);
			sum += o->dims[cd];
		}
		if (sum != s->dims[cd])
			return bad(v, "the operands add up to %lld along "
				      "dimension %lld", (long long)sum,
				   (long long)cd);
		return true;
	}
	case IR_OP_FUSION:
	case IR_OP_CALL: {
		const struct ir_computation *c = in->n_called ? in->called[0] : NULL;
		if (!c)
			return true;
		if (c->n_params != in->n_operands)
			return bad(v, "%s takes %d parameters, given %d operands",
				   c->name, c->n_params, in->n_operands);
		for (int k = 0; k < c->n_params; k++) {
			const struct ir_shape *ps = &c->params[k]->shape;
			const struct ir_shape *os = &in->operands[k]->shape;
			if (checkable(ps) && checkable(os) && !ir_shape_equal_dims(ps, os))
				return bad(v, "operand %d has other dimensions than "
					      "parameter %d of %s", k, k, c->name);
		}
		if (c->root && checkable(&c->root->shape) &&
		    !ir_shape_equal_dims(&c->root->shape, s))
			return bad(v, "%s's root has other dimensions", c->name);
		return true;
	}
	case IR_OP_GET_TUPLE_ELEMENT: {
		if (!o0 || o0->type != IR_TYPE_TUPLE)
			return true;
		int64_t k = in->attrs.tuple_index;
		if (k < 0 || k >= o0->n_elems)
			return bad(v, "index %lld of a %d-element tuple",
				   (long long)k, o0->n_elems);
		const struct ir_shape *e = &o0->elems[k];
		if (checkable(e) && !ir_shape_equal_dims(e, s))
			return bad(v, "element %lld has other dimensions",
				   (long long)k);
		return true;
	}
	default:
		break;
	}
	enum ir_class c = ir_op_class(in->op);
	if ((c != IR_CLASS_ELEMENTWISE && c != IR_CLASS_TRANSCENDENTAL) ||
	    in->op == IR_OP_RNG || in->op == IR_OP_RNG_BIT_GENERATOR)
		return true;
	for (int k = 0; k < in->n_operands; k++) {
		const struct ir_shape *o = &in->operands[k]->shape;
		if (!checkable(o) || o->rank == 0)
			continue;
		if (!ir_shape_equal_dims(o, s))
			return bad(v, "operand %d has other dimensions", k);
	}
	return true;
}

enum ts_status ir_verify(const struct ir_module *m, struct ts_diag *d)
{
	const struct ir_instr **starts =
		ts_calloc((size_t)m->n_comps + 1, sizeof *starts);
	if (!starts) {
		ts_diag_set(d, m->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	for (int c = 0; c < m->n_comps; c++)
		for (int i = 0; i < m->comps[c]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[c]->instrs[i];
			if (in->op == IR_OP_ASYNC_START && in->n_called &&
			    !starts[in->called[0]->index])
				starts[in->called[0]->index] = in;
		}
	enum ts_status st = TS_OK;
	for (int c = 0; c < m->n_comps && st == TS_OK; c++) {
		const struct ir_computation *comp = m->comps[c];
		for (int i = 0; i < comp->n_instrs && st == TS_OK; i++) {
			struct vctx v = {comp->instrs[i], d, m->file, starts};
			if (!check_structure(&v) || !check_instr(&v))
				st = TS_ERR_PARSE;
		}
		char a[128], b[128];
		if (st == TS_OK && comp->has_result_shape &&
		    !ir_shape_compatible(&comp->result_shape, &comp->root->shape)) {
			ts_diag_set(d, m->file, comp->result_line, comp->result_col,
				    "shape of computation %s, %s, is not compatible "
				    "with that of its root instruction %s, %s",
				    comp->name,
				    shape_text(&comp->result_shape, a, sizeof a),
				    comp->root->name,
				    shape_text(&comp->root->shape, b, sizeof b));
			st = TS_ERR_PARSE;
		}
	}
	ts_free((void *)starts);
	return st;
}
