/*
 * ir_verify.c: the checks XLA's HloVerifier and shape inference make on a
 * parsed module. A module that parses but declares a shape its operands
 * cannot produce, or breaks an op's structure, is refused at the
 * instruction (file:line:col), as XLA refuses it, instead of being costed
 * on a shape that does not exist.
 *
 * Structure (every instruction):
 *   operand counts     as ir_ops.def gives them (XLA's parser's counts);
 *   conditional        a scalar PRED predicate with true/false
 *                      computations or a scalar S32 index with
 *                      branch_computations; one branch per operand, each
 *                      taking one parameter of that operand's dimensions
 *                      and returning the conditional's;
 *   while              condition and body take the loop's shape, the body
 *                      returns it, the condition returns pred[];
 *   async ops          a start's shape ((operands), outputs, state), an
 *                      update's its operand's; update/done take one
 *                      async op and agree with its
 *                      start on wrapped op, computation and thread; one
 *                      async-start per wrapped computation;
 *   infeed             a non-empty tuple shape;
 *   computations       a declared "-> shape" is its root's (element types
 *                      included).
 * Shapes (static dimensions; dynamic ones, layouts and, but for the
 * computation result, element types are not compared):
 *   elementwise ops    every array operand of the result's rank has its
 *                      dimensions (rank-0 operands pass: select/clamp);
 *   dot                result = batch dims, lhs free dims, rhs free dims;
 *                      contracting and batch extents agree;
 *   convolution        features, batch groups and window output extents;
 *   reduce             inputs without the reduced dims (distinct, in range);
 *   reduce-window      window output extents per dimension;
 *   reshape            the same element count;
 *   broadcast          one dimensions= entry per operand dim, in range,
 *                      extents equal;
 *   slice              0 <= start <= limit <= extent, stride >= 1, result
 *                      extent ceil((limit - start) / stride);
 *   dynamic-slice      sizes within the operand, result = sizes;
 *   pad                lo + hi + n + (n - 1) x interior, interior >= 0;
 *   gather             offset and batch dims as InferGatherShape places
 *                      them, slice sizes within the operand;
 *   concatenate        equal ranks and extents but along the dimension,
 *                      whose extents add up;
 *   copy, reverse, scatter, select-and-scatter, dynamic-update-slice and
 *   one-operand all-reduce / all-to-all: operand 0's dimensions (an update
 *                      within the operand);
 *   iota               iota_dimension in range;
 *   bitcast-convert    the operand's dims, plus or minus a minor dim of
 *                      the width ratio;
 *   get-tuple-element  the index names an element of the tuple operand,
 *                      of the result's dimensions;
 *   fusion, call       one parameter of the called computation per
 *                      operand, of the operand's dimensions, and a root of
 *                      the result's dimensions and element types (each
 *                      element's, for a tuple; a tuple for a tuple).
 * Not checked: transpose (XLA's own corpus has a transpose whose declared
 * shape its dimensions= contradict, which XLA's parser reads), a
 * convolution's window sizes against its kernel (likewise), random number
 * ops (their operands are state), sort and multi-operand collectives,
 * all-gather and reduce-scatter extents (the group size is not always
 * known), custom calls, and scatter's index and update operands.
 */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Ranks a dot result can have: twice the parser's largest rank. */
#define VERIFY_MAX_DIMS 256
/* Ranks the window, pad and gather rules compare (the parser's limit). */
#define HP_VERIFY_RANK 128

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
	/* per computation: the first async-start calling it, once checked
	 * (instructions are checked in module order), or NULL */
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
	if (in->op == IR_OP_ASYNC_START) {
		if (s->type != IR_TYPE_TUPLE || s->n_elems < 2 ||
		    s->elems[0].type != IR_TYPE_TUPLE)
			return refuse(v, "expects the shape ((async-operands), "
					 "async-outputs, state)");
		if (!in->n_called)
			return true;
		const struct ir_instr **first = &v->first_start[in->called[0]->index];
		if (*first)
			return refuse(v, "computation %s is called by more than "
					 "one async op (also by %s)", in->called[0]->name,
				      (*first)->name);
		*first = in;
		return true;
	}
	const struct ir_instr *st = in->operands[0];
	if (st->op != IR_OP_ASYNC_START && st->op != IR_OP_ASYNC_UPDATE)
		return refuse(v, "expects a single async op as its operand, not "
				 "%s (%s)", st->name, ir_op_name(st->op));
	/* an update's shape is its operand's, so of the start's form */
	if (in->op == IR_OP_ASYNC_UPDATE &&
	    !ir_shape_compatible(&in->shape, &st->shape))
		return refuse(v, "expects its shape to be its operand's");
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


/*
 * Output extent of one windowed dimension (XLA: ShapeInference's
 * InferWindowOutputShape and window_util::StridedBound), in 128 bits as the
 * attributes may hold any int64:
 *   padded = (in - 1) * lhs_dilate + 1 + pad_lo + pad_hi   (pads alone if in = 0)
 *   window = (size - 1) * rhs_dilate + 1
 *   out    = window > padded ? 0 : (padded - window) / stride + 1
 * -1 for a window XLA refuses (size, stride or a dilation below 1, or a
 * padded extent below 0).
 */
static ts_i128 window_out(int64_t in, const struct ir_window_dim *w)
{
	if (w->size < 1 || w->stride < 1 || w->lhs_dilate < 1 || w->rhs_dilate < 1)
		return -1;
	ts_i128 padded = (in > 0 ? (ts_i128)(in - 1) * w->lhs_dilate + 1 : 0) +
		      w->pad_lo + w->pad_hi;
	ts_i128 window = (ts_i128)(w->size - 1) * w->rhs_dilate + 1;
	if (padded < 0)
		return -1;
	return window > padded ? 0 : (padded - window) / w->stride + 1;
}

/* The k-th result of an op with n results: the shape itself when n is 1,
 * else element k of the tuple (NULL when the tuple has no such element). */
static const struct ir_shape *result_k(const struct ir_shape *s, int n, int k)
{
	if (n == 1)
		return s;
	if (s->type != IR_TYPE_TUPLE || s->n_elems != n)
		return NULL;
	return &s->elems[k];
}

/* Compares want[0..n) with a result shape's dimensions. */
static bool dims_are(struct vctx *v, const struct ir_shape *r, const ts_i128 *want,
		     int n, const char *what)
{
	if (!r || r->type == IR_TYPE_TUPLE)
		return bad(v, "%s: the result is not an array", what);
	if (!checkable(r))
		return true;
	if (r->rank != n)
		return bad(v, "%s: rank %d", what, n);
	for (int i = 0; i < n; i++)
		if (r->dims[i] != want[i])
			return bad(v, "%s: dimension %d is %lld", what, i,
				   (long long)want[i]);
	return true;
}

/* convolution (XLA: ShapeInference::InferConvolveShape): input features =
 * kernel input features x feature_group_count, batch / batch_group_count,
 * kernel output features, spatial extents by window_out. Window sizes are
 * not held to the kernel's extents: XLA's own corpus has a convolution
 * whose window is 3 wide over a kernel 2 wide, which its parser reads. */
static bool check_convolution(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_conv_dims *cd = in->attrs.conv;
	const struct ir_window *w = in->attrs.window;
	const struct ir_shape *l = &in->operands[0]->shape;
	const struct ir_shape *r = &in->operands[1]->shape;
	if (!cd || !checkable(l) || !checkable(r))
		return true;
	int n = cd->n_spatial;
	if (l->rank != n + 2 || r->rank != n + 2 || in->shape.rank != n + 2)
		return bad(v, "dim_labels name %d dimensions", n + 2);
	if (n && (!w || w->n != n))
		return bad(v, "the window has %d dimensions for %d spatial ones",
			   w ? w->n : 0, n);
	int64_t fgc = in->attrs.feature_group_count;
	int64_t bgc = in->attrs.batch_group_count;
	if ((ts_i128)r->dims[cd->rhs_in] * fgc != l->dims[cd->lhs_feature])
		return bad(v, "input features %lld are not kernel input features "
			      "%lld x feature_group_count %lld",
			   (long long)l->dims[cd->lhs_feature],
			   (long long)r->dims[cd->rhs_in], (long long)fgc);
	if (l->dims[cd->lhs_batch] % bgc != 0)
		return bad(v, "batch %lld is not a multiple of batch_group_count "
			      "%lld", (long long)l->dims[cd->lhs_batch],
			   (long long)bgc);
	ts_i128 want[HP_VERIFY_RANK];
	if (n + 2 > HP_VERIFY_RANK)
		return true;
	want[cd->out_batch] = l->dims[cd->lhs_batch] / bgc;
	want[cd->out_feature] = r->dims[cd->rhs_out];
	for (int i = 0; i < n; i++) {
		const struct ir_window_dim *wd = &w->dims[i];
		want[cd->out_spatial[i]] = window_out(l->dims[cd->lhs_spatial[i]], wd);
		if (want[cd->out_spatial[i]] < 0)
			return bad(v, "window dimension %d is malformed", i);
	}
	return dims_are(v, &in->shape, want, n + 2, "convolution");
}

/* A reduce or reduce-window takes N inputs and N init values: *n = N. */
static bool inputs_and_inits(struct vctx *v, int *n)
{
	if (v->in->n_operands % 2)
		return refuse(v, "takes inputs and as many init values, given %d "
				 "operands", v->in->n_operands);
	*n = v->in->n_operands / 2;
	return true;
}

/* reduce (N inputs, N inits): each result is its input without the
 * dimensions= dims, which are in range and distinct. */
static bool check_reduce(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_ints *dm = in->attrs.dimensions;
	int n = 0;
	if (!inputs_and_inits(v, &n))
		return false;
	for (int k = 0; k < n; k++) {
		const struct ir_shape *o = &in->operands[k]->shape;
		if (!checkable(o) || !dm)
			continue;
		ts_i128 want[HP_VERIFY_RANK];
		int m = 0;
		for (int i = 0; i < dm->n; i++) {
			if (dm->v[i] < 0 || dm->v[i] >= o->rank)
				return bad(v, "dimensions= entry %lld out of range",
					   (long long)dm->v[i]);
			for (int j = 0; j < i; j++)
				if (dm->v[j] == dm->v[i])
					return bad(v, "dimensions= repeats %lld",
						   (long long)dm->v[i]);
		}
		for (int i = 0; i < o->rank && m < HP_VERIFY_RANK; i++)
			if (!in_list(dm, i))
				want[m++] = o->dims[i];
		if (!dims_are(v, result_k(&in->shape, n, k), want, m, "reduce"))
			return false;
	}
	return true;
}

/* reduce-window (N inputs, N inits): one window dimension per input
 * dimension, each result extent by window_out. */
static bool check_reduce_window(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_window *w = in->attrs.window;
	int n = 0;
	if (!inputs_and_inits(v, &n))
		return false;
	for (int k = 0; k < n; k++) {
		const struct ir_shape *o = &in->operands[k]->shape;
		if (!checkable(o) || !w)
			continue;
		if (w->n != o->rank)
			return bad(v, "the window has %d dimensions for rank %d",
				   w->n, o->rank);
		ts_i128 want[HP_VERIFY_RANK];
		for (int i = 0; i < o->rank && i < HP_VERIFY_RANK; i++)
			if ((want[i] = window_out(o->dims[i], &w->dims[i])) < 0)
				return bad(v, "window dimension %d is malformed", i);
		if (!dims_are(v, result_k(&in->shape, n, k), want,
			      o->rank < HP_VERIFY_RANK ? o->rank : HP_VERIFY_RANK,
			      "reduce-window"))
			return false;
	}
	return true;
}

/* pad: extent lo + hi + n + (n - 1) x interior per dimension, interior
 * >= 0, the padding value a scalar. */
static bool check_pad(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_padding *pd = in->attrs.padding;
	const struct ir_shape *o = &in->operands[0]->shape;
	const struct ir_shape *pv = &in->operands[1]->shape;
	if (pv->type == IR_TYPE_TUPLE || pv->rank != 0)
		return refuse(v, "the padding value must be a scalar");
	if (!pd || !checkable(o))
		return true;
	if (pd->n != o->rank)
		return bad(v, "padding= has %d dimensions for rank %d", pd->n,
			   o->rank);
	ts_i128 want[HP_VERIFY_RANK];
	for (int i = 0; i < o->rank && i < HP_VERIFY_RANK; i++) {
		const struct ir_pad_dim *x = &pd->dims[i];
		if (x->interior < 0)
			return bad(v, "negative interior padding %lld",
				   (long long)x->interior);
		int64_t e = o->dims[i];
		want[i] = (ts_i128)x->lo + x->hi + e +
			  (e > 0 ? (ts_i128)(e - 1) * x->interior : 0);
		if (want[i] < 0)
			return bad(v, "dimension %d would be negative", i);
	}
	return dims_are(v, &in->shape, want,
			o->rank < HP_VERIFY_RANK ? o->rank : HP_VERIFY_RANK, "pad");
}

/*
 * gather (XLA: ShapeInference::InferGatherShape): the result has the
 * offset dims at the offset_dims positions, sized by slice_sizes without
 * the collapsed and operand batching dims, and the batch dims of the
 * indices (without index_vector_dim) elsewhere, in order; each slice size
 * at most the operand's extent.
 */
static bool check_gather(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_gather_dims *g = in->attrs.gather;
	const struct ir_shape *o = &in->operands[0]->shape;
	const struct ir_shape *ix = &in->operands[1]->shape;
	if (!g || !checkable(o) || !checkable(ix))
		return true;
	if (g->slice_sizes.n != o->rank)
		return bad(v, "slice_sizes has %d entries for rank %d",
			   g->slice_sizes.n, o->rank);
	ts_i128 offs[HP_VERIFY_RANK], batch[HP_VERIFY_RANK];
	int n_off = 0, n_batch = 0;
	for (int i = 0; i < o->rank && i < HP_VERIFY_RANK; i++) {
		int64_t z = g->slice_sizes.v[i];
		if (z < 0 || z > o->dims[i])
			return bad(v, "slice size %lld of an extent of %lld",
				   (long long)z, (long long)o->dims[i]);
		if (!in_list(&g->collapsed_slice_dims, i) &&
		    !in_list(&g->operand_batching_dims, i))
			offs[n_off++] = z;
	}
	for (int i = 0; i < ix->rank && i < HP_VERIFY_RANK; i++)
		if (i != g->index_vector_dim)
			batch[n_batch++] = ix->dims[i];
	if (n_off != g->offset_dims.n)
		return bad(v, "offset_dims has %d entries for %d offset dimensions",
			   g->offset_dims.n, n_off);
	int n = n_off + n_batch;
	if (n > HP_VERIFY_RANK)
		return true;
	ts_i128 want[HP_VERIFY_RANK];
	int ko = 0, kb = 0;
	for (int i = 0; i < n; i++) {
		if (in_list(&g->offset_dims, i))
			want[i] = ko < n_off ? offs[ko++] : -1;
		else
			want[i] = kb < n_batch ? batch[kb++] : -1;
	}
	return dims_are(v, &in->shape, want, n, "gather");
}

/* Ops whose result has the dimensions of their first operand (the
 * collectives when they take one operand: the in-place collective-permute
 * takes four). */
static bool same_as_operand(const struct ir_instr *in)
{
	switch (in->op) {
	case IR_OP_ALL_REDUCE:
	case IR_OP_ALL_TO_ALL:
		return in->n_operands == 1;
	case IR_OP_COPY:
	case IR_OP_REVERSE:
	case IR_OP_DYNAMIC_UPDATE_SLICE:
	case IR_OP_SCATTER:
	case IR_OP_SELECT_AND_SCATTER:
		return true;
	default:
		return false;
	}
}

/* A fusion's or call's operands against its computation's parameters,
 * and a tuple result's elements against its root's (the shape checks
 * below skip tuples). */
static bool check_call_params(struct vctx *v)
{
	const struct ir_instr *in = v->in;
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
	const struct ir_shape *s = &in->shape, *rs = c->root ? &c->root->shape
							    : NULL;
	/* a fusion's result is its root's buffer, in its memory space (every
	 * fusion of data/compiled's 5,685: the costs read one or the other) */
	bool fusion = in->op == IR_OP_FUSION;
	if (rs && fusion && s->type != IR_TYPE_TUPLE &&
	    rs->type != IR_TYPE_TUPLE &&
	    s->layout.memory_space != rs->layout.memory_space)
		return bad(v, "it is in memory space S(%d), %s's root in S(%d)",
			   s->layout.memory_space, c->name,
			   rs->layout.memory_space);
	if (!rs || (s->type != IR_TYPE_TUPLE && rs->type != IR_TYPE_TUPLE))
		return true;
	if ((s->type == IR_TYPE_TUPLE) != (rs->type == IR_TYPE_TUPLE))
		return bad(v, "%s's root is %sa tuple", c->name,
			   rs->type == IR_TYPE_TUPLE ? "" : "not ");
	if (rs->n_elems != s->n_elems)
		return bad(v, "%s's root has %d elements", c->name, rs->n_elems);
	for (int k = 0; k < s->n_elems; k++) {
		const struct ir_shape *e = &s->elems[k], *re = &rs->elems[k];
		if (checkable(e) && checkable(re) &&
		    (!ir_shape_equal_dims(e, re) || !ir_shape_compatible(e, re)))
			return bad(v, "element %d is not that of %s's root", k,
				   c->name);
		if (fusion && e->layout.memory_space != re->layout.memory_space)
			return bad(v, "element %d is in memory space S(%d), %s's "
				      "root's in S(%d)", k, e->layout.memory_space,
				   c->name, re->layout.memory_space);
	}
	return true;
}

static bool check_instr(struct vctx *v)
{
	const struct ir_instr *in = v->in;
	const struct ir_shape *s = &in->shape;
	if ((in->op == IR_OP_FUSION || in->op == IR_OP_CALL) &&
	    !check_call_params(v))
		return false;
	if (!checkable(s) || (in->flags & IR_INSTR_SHAPE_INFERRED))
		return true;
	const struct ir_shape *o0 = in->n_operands ? &in->operands[0]->shape
						  : NULL;
	switch (in->op) {
	case IR_OP_DOT:
		return check_dot(v);
	case IR_OP_CONVOLUTION:
		return check_convolution(v);
	case IR_OP_REDUCE:
		return check_reduce(v);
	case IR_OP_REDUCE_WINDOW:
		return check_reduce_window(v);
	case IR_OP_PAD:
		return check_pad(v);
	case IR_OP_GATHER:
		return check_gather(v);
	case IR_OP_DYNAMIC_SLICE: {
		const struct ir_ints *z = in->attrs.dynamic_slice_sizes;
		if (!o0 || !checkable(o0) || !z)
			return true;
		if (z->n != o0->rank)
			return bad(v, "dynamic_slice_sizes has %d entries for rank %d",
				   z->n, o0->rank);
		ts_i128 want[HP_VERIFY_RANK];
		for (int i = 0; i < z->n && i < HP_VERIFY_RANK; i++) {
			if (z->v[i] < 0 || z->v[i] > o0->dims[i])
				return bad(v, "slice size %lld of an extent of %lld",
					   (long long)z->v[i], (long long)o0->dims[i]);
			want[i] = z->v[i];
		}
		return dims_are(v, s, want, z->n < HP_VERIFY_RANK ? z->n :
			       HP_VERIFY_RANK, "dynamic-slice");
	}
	case IR_OP_BITCAST_CONVERT: {
		/* XLA: the same dims when the widths agree; a wider input
		 * gains a minor dim of in/out bits, a narrower one loses it */
		if (!o0 || !checkable(o0))
			return true;
		int bi = ir_type_bits(o0->type), bo = ir_type_bits(s->type);
		const struct ir_shape *big = bi > bo ? s : o0;
		const struct ir_shape *small = bi > bo ? o0 : s;
		if (bi == bo || bi <= 0 || bo <= 0)
			return ir_shape_equal_dims(o0, s) ? true :
			       bad(v, "operand 0 has other dimensions");
		int64_t ratio = bi > bo ? bi / bo : bo / bi;
		if (big->rank != small->rank + 1 ||
		    big->dims[big->rank - 1] != ratio)
			return bad(v, "a %d-bit to %d-bit bitcast-convert adds or "
				      "drops a minor dimension of %lld", bi, bo,
				   (long long)ratio);
		for (int i = 0; i < small->rank; i++)
			if (small->dims[i] != big->dims[i])
				return bad(v, "dimension %d differs", i);
		return true;
	}
	case IR_OP_IOTA:
		if (in->attrs.iota_dimension < 0 ||
		    in->attrs.iota_dimension >= (s->rank ? s->rank : 1))
			return bad(v, "iota_dimension %lld out of range",
				   (long long)in->attrs.iota_dimension);
		return true;
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
			/* ceil((limit - start) / stride), without overflow
			 * for a stride near INT64_MAX. */
			int64_t n = x->limit == x->start
					    ? 0
					    : (x->limit - x->start - 1) / x->stride + 1;
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
			/* Stop once past the result's extent: the sum of
			 * huge extents would overflow. */
			if (o->dims[cd] > s->dims[cd] - sum)
				return bad(v, "the operands add up to more than "
					      "%lld along dimension %lld",
					   (long long)s->dims[cd], (long long)cd);
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
		if (c->root && checkable(&c->root->shape) &&
		    !ir_shape_equal_dims(&c->root->shape, s))
			return bad(v, "%s's root has other dimensions", c->name);
		if (c->root && checkable(&c->root->shape) &&
		    !ir_shape_compatible(&c->root->shape, s))
			return bad(v, "%s's root has another element type",
				   c->name);
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
	if (same_as_operand(in)) {
		if (o0 && checkable(o0) && !ir_shape_equal_dims(o0, s))
			return bad(v, "operand 0 has other dimensions");
		if (in->op == IR_OP_DYNAMIC_UPDATE_SLICE && o0 && checkable(o0)) {
			const struct ir_shape *u = &in->operands[1]->shape;
			if (!checkable(u))
				return true;
			if (u->rank != o0->rank)
				return bad(v, "the update has rank %d", u->rank);
			for (int i = 0; i < u->rank; i++)
				if (u->dims[i] > o0->dims[i])
					return bad(v, "the update's dimension %d (%lld) "
						      "passes the operand's %lld", i,
						   (long long)u->dims[i],
						   (long long)o0->dims[i]);
		}
		return true;
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

/* "{1,0}" of a shape index, for messages. */
static const char *index_text(const struct ir_ints *ix, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "{");
	for (int i = 0; i < ix->n && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
				      (long long)ix->v[i]);
	if (n < cap)
		snprintf(buf + n, cap - n, "}");
	return buf;
}

/* The array of s at shape index ix, NULL when s has none there. */
static const struct ir_shape *array_at(const struct ir_shape *s,
				       const struct ir_ints *ix)
{
	for (int i = 0; s && i < ix->n; i++)
		s = s->type == IR_TYPE_TUPLE && ix->v[i] < s->n_elems
			    ? &s->elems[ix->v[i]]
			    : NULL;
	return s && s->type != IR_TYPE_TUPLE && s->type != IR_TYPE_TOKEN ? s
									 : NULL;
}

/* The header's input_output_alias and buffer_donor entries name arrays
 * of the entry's parameters and result, an output of the size of the
 * parameter buffer it lives in, each output and each parameter buffer
 * once (XLA: HloInputOutputAliasConfig::Verify, SetUpAlias and
 * HloBufferDonorConfig::Verify). The size is the backend's: XLA's TPU
 * compiler pairs arrays of one padded size (data/compiled/v5e/vit_s
 * aliases a bf16[196,96]{0,1} output with a bf16[12,1536]{1,0}
 * parameter: 49,152 bytes tiled, 37,632 and 36,864 as written), another
 * backend the logical one; either will do. */
static bool check_aliases(const struct ir_module *m, struct ts_diag *d)
{
	const struct ir_computation *e = m->entry;
	for (int i = 0; e && i < m->n_aliases; i++) {
		const struct ir_alias *x = &m->aliases[i];
		const char *what = x->output.n < 0 ? "buffer_donor"
						   : "input_output_alias";
		char a[64], b[64], sa[128], sb[128];
		const struct ir_shape *ps =
			x->param < e->n_params && e->params[x->param]
				? array_at(&e->params[x->param]->shape,
					   &x->param_index)
				: NULL;
		const struct ir_shape *os =
			x->output.n < 0 ? NULL
					: array_at(&e->root->shape, &x->output);
		const char *bad = NULL;
		int j = 0;
		for (; j < i && !bad; j++) {
			const struct ir_alias *y = &m->aliases[j];
			if (y->param == x->param &&
			    ir_ints_equal(&y->param_index, &x->param_index))
				bad = "that parameter buffer is named before";
			else if (x->output.n >= 0 && y->output.n >= 0 &&
				 ir_ints_equal(&y->output, &x->output))
				bad = "that output is aliased before";
		}
		if (bad) {
			ts_diag_set(d, m->file, x->line, x->col, "%s: %s (%u:%u)",
				    what, bad, m->aliases[j - 1].line,
				    m->aliases[j - 1].col);
			return false;
		}
		if (!ps) {
			ts_diag_set(d, m->file, x->line, x->col,
				    "%s: the entry computation %s has no array "
				    "at parameter %lld, ShapeIndex %s",
				    what, e->name, (long long)x->param,
				    index_text(&x->param_index, a, sizeof a));
			return false;
		}
		if (x->output.n < 0)
			continue;
		if (!os) {
			ts_diag_set(d, m->file, x->line, x->col,
				    "%s: the entry computation %s's result has "
				    "no array at ShapeIndex %s",
				    what, e->name,
				    index_text(&x->output, a, sizeof a));
			return false;
		}
		if (ir_shape_bytes(ps) != ir_shape_bytes(os) &&
		    ir_shape_padded_bytes(ps) != ir_shape_padded_bytes(os)) {
			ts_diag_set(d, m->file, x->line, x->col,
				    "%s: output %s, %s, and parameter %lld %s, "
				    "%s, differ in size (as written and in TPU "
				    "memory)",
				    what, index_text(&x->output, a, sizeof a),
				    shape_text(os, sa, sizeof sa),
				    (long long)x->param,
				    index_text(&x->param_index, b, sizeof b),
				    shape_text(ps, sb, sizeof sb));
			return false;
		}
	}
	return true;
}

enum ts_status ir_verify(const struct ir_module *m, struct ts_diag *d)
{
	if (!check_aliases(m, d))
		return TS_ERR_PARSE;
	const struct ir_instr **starts =
		ts_calloc((size_t)m->n_comps + 1, sizeof *starts);
	if (!starts) {
		ts_diag_set(d, m->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
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
