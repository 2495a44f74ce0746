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
};

__attribute__((format(printf, 2, 3)))
static bool bad(struct vctx *v, const char *fmt, ...)
{
	char msg[TS_DIAG_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char shape[128];
	ir_shape_format(&v->in->shape, shape, sizeof shape);
	ts_diag_set(v->d, v->file, v->in->line, v->in->col,
		    "%s %s: shape %s does not match its operands: %s",
		    ir_op_name(v->in->op), v->in->name, shape, msg);
	return false;
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
	for (int c = 0; c < m->n_comps; c++) {
		const struct ir_computation *comp = m->comps[c];
		for (int i = 0; i < comp->n_instrs; i++) {
			struct vctx v = {comp->instrs[i], d, m->file};
			if (!check_instr(&v))
				return TS_ERR_PARSE;
		}
	}
	return TS_OK;
}
