/*
 * plan_vpu.c: the VPU work of a kernel's members, the second concern of a
 * plan (sim/plan.c builds the rest): per instruction over its whole padded
 * shape, config independent, and the XLU work of a kernel's relayouts.
 * Units: core cycles of one TensorCore (hw->clock_hz); vregs of 8 x 128
 * 32-bit values. Unit formulas in hw/hw_vpu.c; docs/MODEL.md "VPU".
 */
#include "model.h"
#include "plan_int.h"
#include "kernels_int.h"

#include "hw_units.h"

double sim_shape_vregs(const struct hw_spec *hw, const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double v = 0;
		for (int i = 0; i < s->n_elems; i++)
			v += sim_shape_vregs(hw, &s->elems[i]);
		return v;
	}
	struct sim_tgrid g;
	if (s->rank > SIM_MAX_GRID || sim_tile_grid(s, &g, NULL) != TS_OK)
		return hw_vpu_vregs(hw, (double)ir_shape_elems(s), 32);
	double e = g.pad_factor;
	for (int i = 0; i < g.rank; i++)
		e *= (double)(g.tiles[i] * g.tile[i]);
	/* the VPU works on 8 x 128 registers whatever the layout tile */
	if (g.rank >= 1 && g.tile[g.rank - 1] < hw->vpu_lanes)
		e *= (double)hw->vpu_lanes / (double)g.tile[g.rank - 1];
	return hw_vpu_vregs(hw, e, (int)g.bits);
}

/* The axis a reduce runs along, from its input's physical layout: the
 * minor-most dim is the lanes, the second-minor the sublanes. */
static enum hw_reduce_axis reduce_axis(const struct sim_tgrid *g,
				       const struct ir_ints *dims)
{
	enum hw_reduce_axis ax = HW_REDUCE_MAJOR;
	for (int j = 0; dims && j < dims->n; j++) {
		for (int i = 0; i < g->rank; i++) {
			if (g->logical[i] != dims->v[j] || g->elems[i] <= 1)
				continue;
			if (i == g->rank - 1)
				ax = HW_REDUCE_LANE;
			else if (i == g->rank - 2 && ax == HW_REDUCE_MAJOR)
				ax = HW_REDUCE_SUBLANE;
		}
	}
	return ax;
}

/*
 * A reduce-window over whole dims (sim_window_whole_dims: every output
 * sees the whole row, XLA's row max of attention) is a reduce of those
 * dims and a broadcast back, cycles:
 *   hw_vpu_reduce_cycles(in_vregs, out_vregs, axis)   as a reduce
 * out_vregs: the vregs of the input with the reduced dims' tiles taken
 * out; axis: the lane or sublane dim when a reduced dim lies there (the
 * reduce's rule). The broadcast back is free, as a broadcast operand
 * (a splat into registers) is everywhere else. Assumes the emitter
 * reduces each row once: sliding the window (size - 1 combines per
 * output) would recompute the same row D times; XLA's own cost analysis
 * recognises the same form (HandleReduceWindow, "reduce followed by a
 * broadcast"). Known wrong: the broadcast of a lane-reduced value across
 * lanes takes XLU work not counted. Source: TPU.md section 2 rule 7.
 */
static double whole_window_cycles(const struct hw_spec *hw,
				  const struct sim_tgrid *g, double in_v,
				  const bool *whole)
{
	double out_v = 1;
	enum hw_reduce_axis ax = HW_REDUCE_MAJOR;
	for (int i = 0; i < g->rank; i++) {
		int d = g->logical[i];
		if (!whole[d]) {
			out_v *= (double)g->tiles[i];
			continue;
		}
		if (g->elems[i] <= 1)
			continue;
		if (i == g->rank - 1)
			ax = HW_REDUCE_LANE;
		else if (i == g->rank - 2 && ax == HW_REDUCE_MAJOR)
			ax = HW_REDUCE_SUBLANE;
	}
	return hw_vpu_reduce_cycles(hw, in_v, out_v, ax, HW_VPU_SIMPLE);
}

/*
 * reduce-window (pooling), cycles:
 *   in_vregs x sum over window dims d with size w_d > 1 of
 *       (w_d - 1) x (combiner + shuffle_d)
 *   + out_vregs x compaction (lane xlu cost when the lane dim is strided)
 * shuffle_d: lane dim -> hw->xlu_lane_permute_cost (a cross-lane permute on
 * the XLU), sublane dim -> one simple op, major dims -> 0 (whole vregs
 * combine). Assumes every input vreg takes part in every window step and
 * that padding adds no work. Known wrong: overlapping windows reuse loads;
 * the XLA emitter may transpose instead. Source: TPU.md section 2 rule 7.
 */
static double window_vpu_cycles(const struct hw_spec *hw,
				const struct ir_instr *in)
{
	const struct ir_window *w = in->attrs.window;
	if (in->n_operands < 1 || !w)
		return 0.0;
	const struct ir_shape *s = &in->operands[0]->shape;
	struct sim_tgrid g;
	if (s->rank > SIM_MAX_GRID || s->rank != w->n ||
	    sim_tile_grid(s, &g, NULL) != TS_OK)
		return 0.0;
	double in_v = sim_shape_vregs(hw, s);
	bool whole[SIM_MAX_GRID];
	if (sim_window_whole_dims(in, whole)) /* variadic: per input */
		return (double)(in->n_operands / 2 > 0 ? in->n_operands / 2 : 1) *
		       whole_window_cycles(hw, &g, in_v, whole);
	double out_v = in->shape.type == IR_TYPE_TUPLE
			       ? in_v
			       : sim_shape_vregs(hw, &in->shape);
	double simple = hw->vpu_class_cost[HW_VPU_SIMPLE];
	double slots = 0, compact = 0;
	for (int i = 0; i < g.rank; i++) {
		const struct ir_window_dim *wd = &w->dims[g.logical[i]];
		double shuffle = i == g.rank - 1	 ? hw->xlu_lane_permute_cost
				 : i == g.rank - 2 ? simple
						   : 0.0;
		if (wd->size > 1)
			slots += (double)(wd->size - 1) * (simple + shuffle);
		if (i == g.rank - 1 && wd->stride > 1)
			compact = hw->xlu_lane_permute_cost;
	}
	double alus = hw->vpu_alus > 0 ? hw->vpu_alus : 1;
	return (in_v * slots + out_v * compact) / alus;
}

/* Simple ops (by class cost) of one application of in->called[which]
 * (sim_body_mix). */
static double applied_ops(const struct hw_spec *hw, const struct ir_instr *in,
			  int which)
{
	struct sim_op_mix mix;
	sim_body_mix(in, which, &mix);
	double simple = hw->vpu_class_cost[HW_VPU_SIMPLE], ops = 0;
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		ops += mix.vpu[c] * hw->vpu_class_cost[c];
	return simple > 0 ? ops / simple : ops;
}

static double comp_vpu_cycles(const struct hw_spec *hw,
			      const struct ir_computation *c, int depth)
{
	double cyc = 0;
	if (!c || depth > 8)
		return 0;
	for (int i = 0; i < c->n_instrs; i++)
		cyc += sim_instr_vpu_cycles(hw, c->instrs[i], depth + 1);
	return cyc;
}

/*
 * VPU cycles of one instruction over its whole (padded) shape:
 *   elementwise/transcendental: vregs x cost[class] / alus
 *   reduce: fold across vregs, then in-register along the layout axis,
 *     once per op of the reducer (an argmax's compares and selects, in
 *     simple ops by class cost), at least once per input
 *   select-and-scatter: the select's ops over the operand's windows (as a
 *     reduce-window), the scatter's once per source element
 *   data movement inside a kernel (copy, transpose, slice, pad,
 *     concatenate, dynamic-(update-)slice, reverse, gather, scatter,
 *     reshape): one simple op per output vreg (load/store/select)
 *   broadcast, parameter, constant, bitcast, tuple: free (register
 *     splats and address arithmetic)
 *   divide by a value computed from constants only, or by a broadcast,
 *     in the kernel or in another (outside: a fused module costs what
 *     the unfused one did): a multiply (XLA's algebraic simplifier, which
 *     runs before fusion, rewrites A / C to A x (1/C);
 *     tpuv4-ops batch_norm_inference names its kernel
 *     convert_multiply_fusion; a broadcast divisor is inverted once per
 *     source element, not per output element: tpuv4-ops layer/rms norm
 *     normalise kernels, x / broadcast(sqrt(var)), cost about 1.5 slots
 *     per vreg beyond their f16 conversions, where a full divide costs 7)
 * Assumes every op is materialised once per element (no recomputation of
 * shared subexpressions) and that fused ops never spill. Known wrong:
 * broadcasts along lanes cost XLU shuffles; gathers are address-bound.
 */
static bool from_constants(const struct ir_instr *v, int depth)
{
	if (v->op == IR_OP_CONSTANT)
		return true;
	enum ir_class c = ir_op_class(v->op);
	if (depth > 16 || v->n_operands < 1 || v->op == IR_OP_PARAMETER ||
	    v->op == IR_OP_RNG || v->op == IR_OP_IOTA ||
	    (c != IR_CLASS_ELEMENTWISE && c != IR_CLASS_TRANSCENDENTAL &&
	     c != IR_CLASS_DATA_MOVEMENT))
		return false;
	for (int j = 0; j < v->n_operands; j++)
		if (!from_constants(v->operands[j], depth + 1))
			return false;
	return true;
}

/* The instruction that computes the value v stands for: a fused
 * computation's parameter is its one caller's operand, a fusion's result
 * (or an element of it) its computation's root (or that tuple's operand);
 * through nested fusions. */
static const struct ir_instr *outside(const struct ir_instr *v)
{
	for (int depth = 0; depth < 8; depth++) {
		const struct ir_instr *f = v->parent ? v->parent->caller : NULL;
		const struct ir_instr *u = v;
		int64_t p = v->attrs.parameter_number;
		if (v->op == IR_OP_PARAMETER && f && f->op == IR_OP_FUSION &&
		    p >= 0 && p < f->n_operands)
			u = f->operands[p];
		else if (v->op == IR_OP_FUSION && v->n_called > 0)
			u = v->called[0]->root;
		else if (v->op == IR_OP_GET_TUPLE_ELEMENT &&
			 v->n_operands > 0 &&
			 v->operands[0]->op == IR_OP_FUSION &&
			 v->operands[0]->n_called > 0) {
			const struct ir_instr *r =
				v->operands[0]->called[0]->root;
			int64_t i = v->attrs.tuple_index;
			if (r && r->op == IR_OP_TUPLE && i >= 0 &&
			    i < r->n_operands)
				u = r->operands[i];
		}
		if (!u || u == v)
			break;
		v = u;
	}
	return v;
}

double sim_instr_vpu_cycles(const struct hw_spec *hw,
			    const struct ir_instr *in, int depth)
{
	const struct ir_instr *divisor =
		in->op == IR_OP_DIVIDE && in->n_operands == 2
			? outside(in->operands[1])
			: NULL;
	if (divisor && (divisor->op == IR_OP_BROADCAST ||
			from_constants(divisor, 0)))
		return hw_vpu_op_cycles(hw, sim_shape_vregs(hw, &in->shape),
					HW_VPU_SIMPLE);
	enum ir_class cls = ir_op_class(in->op);
	switch (in->op) {
	case IR_OP_FUSION:
		return in->n_called > 0 ? comp_vpu_cycles(hw, in->called[0], depth)
					: 0.0;
	case IR_OP_REDUCE: {
		if (in->n_operands < 1)
			return 0;
		const struct ir_shape *s = &in->operands[0]->shape;
		struct sim_tgrid g;
		if (s->rank > SIM_MAX_GRID || sim_tile_grid(s, &g, NULL) != TS_OK)
			return hw_vpu_op_cycles(hw, sim_shape_vregs(hw, s),
						HW_VPU_SIMPLE);
		double in_v = sim_shape_vregs(hw, s);
		double out_v = 1;
		const struct ir_ints *dims = in->attrs.dimensions;
		for (int i = 0; i < g.rank; i++)
			if (!sim_ints_has(dims, g.logical[i]))
				out_v *= (double)g.tiles[i];
		/* the reducer's ops per element (an argmax's compares and
		 * selects), at least one per input */
		double ops = applied_ops(hw, in, 0);
		double per_input = (double)(in->n_operands / 2 > 0 ? in->n_operands / 2 : 1);
		return (ops > per_input ? ops : per_input) *
		       hw_vpu_reduce_cycles(hw, in_v, out_v, reduce_axis(&g, dims),
					    HW_VPU_SIMPLE);
	}
	case IR_OP_REDUCE_WINDOW:
		return window_vpu_cycles(hw, in);
	case IR_OP_SELECT_AND_SCATTER: {
		/* the select over every window of the operand, as a
		 * reduce-window runs, once per op of select; then scatter's
		 * ops once per source element */
		double src = in->n_operands > 1
				     ? sim_shape_vregs(hw, &in->operands[1]->shape)
				     : 0.0;
		return applied_ops(hw, in, 0) * window_vpu_cycles(hw, in) +
		       hw_vpu_op_cycles(hw, src * applied_ops(hw, in, 1),
					HW_VPU_SIMPLE);
	}
	case IR_OP_DYNAMIC_UPDATE_SLICE:
	case IR_OP_SCATTER: { /* in place: the update's elements */
		const struct ir_instr *u = sim_inplace_update(in);
		return hw_vpu_op_cycles(hw, sim_shape_vregs(hw, u ? &u->shape
							       : &in->shape),
					HW_VPU_SIMPLE);
	}
	case IR_OP_BROADCAST:
	case IR_OP_BITCAST:
	case IR_OP_CONSTANT:
	case IR_OP_PARAMETER:
	case IR_OP_TUPLE:
	case IR_OP_GET_TUPLE_ELEMENT:
	case IR_OP_CONVOLUTION:
	case IR_OP_DOT:
		return 0.0;
	default:
		break;
	}
	if (cls == IR_CLASS_ELEMENTWISE || cls == IR_CLASS_TRANSCENDENTAL)
		return hw_vpu_op_cycles(hw, sim_shape_vregs(hw, &in->shape),
					sim_op_vpu_class(in->op));
	if (cls == IR_CLASS_DATA_MOVEMENT)
		return hw_vpu_op_cycles(hw, sim_shape_vregs(hw, &in->shape),
					HW_VPU_SIMPLE);
	return 0.0;
}

/* Whether a copy or transpose puts a different logical dim on the lanes
 * than its operand has there (both dims longer than one element). */
static bool moves_lanes(const struct ir_instr *in)
{
	if ((in->op != IR_OP_COPY && in->op != IR_OP_TRANSPOSE) ||
	    in->n_operands != 1 || !sim_is_array(in) || in->shape.rank < 2)
		return false;
	const struct ir_shape *a = &in->operands[0]->shape, *r = &in->shape;
	if (a->type == IR_TYPE_TUPLE || a->rank != r->rank)
		return false;
	int oa[SIM_MAX_GRID], orr[SIM_MAX_GRID];
	ir_shape_major_to_minor(a, oa);
	ir_shape_major_to_minor(r, orr);
	int lane = orr[r->rank - 1], from = lane;
	if (in->op == IR_OP_TRANSPOSE) {
		const struct ir_ints *perm = in->attrs.dimensions;
		if (!perm || perm->n != r->rank || perm->v[lane] < 0 ||
		    perm->v[lane] >= a->rank)
			return false;
		from = (int)perm->v[lane];
	}
	return from != oa[a->rank - 1] && r->dims[lane] > 1 &&
	       a->dims[oa[a->rank - 1]] > 1;
}

/* Whether instruction v is one of kernel k's members. */
static bool is_member(const struct sim_kernel *k, const struct ir_instr *v)
{
	for (int i = 0; i < k->n_members; i++)
		if (k->members[i] == v)
			return true;
	return false;
}

/* The dot whose result value v is: v itself, or the dot an elementwise
 * epilogue of kernel k applies to (a convert, a bias add, a ReLU's select),
 * found through the epilogue's operands of the same dims (not broadcasts or
 * constants) among k's members, visiting at most *budget ops. */
static const struct ir_instr *epilogue_dot(const struct sim_kernel *k,
					   const struct ir_instr *v,
					   const struct ir_shape *dims,
					   int *budget)
{
	if (v->op == IR_OP_DOT)
		return v;
	enum ir_class c = ir_op_class(v->op);
	if (--*budget < 0 ||
	    (c != IR_CLASS_ELEMENTWISE && c != IR_CLASS_TRANSCENDENTAL))
		return NULL;
	for (int j = 0; j < v->n_operands; j++) {
		const struct ir_instr *o = v->operands[j];
		if (o->op == IR_OP_BROADCAST || o->op == IR_OP_CONSTANT ||
		    !ir_shape_equal_dims(&o->shape, dims) || !is_member(k, o))
			continue;
		const struct ir_instr *d = epilogue_dot(k, o, dims, budget);
		if (d)
			return d;
	}
	return NULL;
}

/* Whether dims list l names only dims below rank and is n long. */
static bool dims_ok(const struct ir_ints *l, int n, int rank)
{
	if (l->n != n)
		return false;
	for (int i = 0; i < n; i++)
		if (l->v[i] < 0 || l->v[i] >= rank)
			return false;
	return true;
}

/*
 * Whether value r, written by kernel k in a given layout (tiled, as are
 * the operands of its dot), is a dot's result (or an elementwise epilogue
 * of one, epilogue_dot) with one of the dot's LHS free dims (M) on the
 * lanes. The MXU pops results with the RHS's free dims (N) on the lanes,
 * so each result vreg is then transposed on the XLU before it is stored.
 * Not when both operands are laid out as the transposed problem's (the
 * LHS's minor dim a free one, the RHS's a contracting one): the compiler
 * computes C^T = B^T A^T, whose results pop M-minor. Nor when M or N is one
 * element (a matrix-vector product), nor with a batch dim on the lanes.
 */
static bool dot_result_transposed(const struct sim_kernel *k,
				  const struct ir_instr *r)
{
	if (!sim_is_array(r) || r->shape.layout.n_tiles == 0)
		return false;
	int budget = 64;
	const struct ir_instr *d = epilogue_dot(k, r, &r->shape, &budget);
	if (!d || d->n_operands != 2 || !d->attrs.dot ||
	    !sim_is_array(d->operands[0]) || !sim_is_array(d->operands[1]) ||
	    d->operands[0]->shape.layout.n_tiles == 0 ||
	    d->operands[1]->shape.layout.n_tiles == 0 ||
	    r->shape.rank != d->shape.rank)
		return false;
	const struct ir_dot_dims *dd = d->attrs.dot;
	const struct ir_shape *a = &d->operands[0]->shape,
			      *b = &d->operands[1]->shape;
	/* the result's dims: batch, then the LHS's free, then the RHS's */
	int nb = dd->lhs_batch.n, nc = dd->lhs_contracting.n;
	int m_dims = a->rank - nb - nc, n_dims = b->rank - nb - nc;
	if (a->rank < 1 || b->rank < 1 || m_dims < 0 || n_dims < 0 ||
	    nb + m_dims + n_dims != d->shape.rank ||
	    !dims_ok(&dd->lhs_batch, nb, a->rank) ||
	    !dims_ok(&dd->rhs_batch, nb, b->rank) ||
	    !dims_ok(&dd->lhs_contracting, nc, a->rank) ||
	    !dims_ok(&dd->rhs_contracting, nc, b->rank))
		return false;
	int64_t m = 1, n = 1;
	for (int i = nb; i < d->shape.rank; i++)
		*(i < nb + m_dims ? &m : &n) *= d->shape.dims[i];
	if (m <= 1 || n <= 1)
		return false;
	int o[SIM_MAX_GRID], oa[SIM_MAX_GRID], ob[SIM_MAX_GRID];
	ir_shape_major_to_minor(&r->shape, o);
	ir_shape_major_to_minor(a, oa);
	ir_shape_major_to_minor(b, ob);
	int lane = o[r->shape.rank - 1];
	if (lane < nb || lane >= nb + m_dims || r->shape.dims[lane] <= 1)
		return false;
	int la = oa[a->rank - 1], lb = ob[b->rank - 1];
	bool mirrored = !sim_ints_has(&dd->lhs_batch, la) &&
			!sim_ints_has(&dd->lhs_contracting, la) &&
			sim_ints_has(&dd->rhs_contracting, lb);
	return !mirrored;
}

/*
 * XLU cycles of a kernel's relayouts: a copy or transpose whose result the
 * kernel writes (a top-level one, the fused root of a fusion, or one
 * output of a group), that puts another logical dim on the lanes than its
 * operand has there (moves_lanes), and whose two layouts are given (both
 * written with tiles, as in a compiled module, or the relayout XLA puts
 * at the result, sim/kernels.c "Relayouts") moves its data across lanes
 * on the XLU:
 *   cycles = out_vregs x xlu_transpose_cost / alus
 * on top of its one simple op per vreg (sim_instr_vpu_cycles); a relayout
 * at the result runs on one core (sim_plan_build's megacore rule). Fitted
 * (hwspecs/v4.yaml) with the pooling kernels on the relayout copies XLA
 * puts after 242 of them in tpuv4-ops (sim/kernels.c "Relayouts"): their
 * profiled copy events take 0.033-0.044 ns per element from 0.3 M to
 * 59 M elements, 5-10x their HBM time. Where tpusim picks the layouts
 * (arrays written without tiles) a transpose is not charged: XLA's layout
 * assignment folds it into a layout where it can (the operand's, a dot's
 * result), and the order tpusim picks for each array alone says nothing
 * of that. The same rate is charged on the result of a dot whose given
 * layout puts M on the lanes (dot_result_transposed), not refitted: in
 * tpuv4-ops, of the 82 large GEMMs whose compiled layouts are given, the
 * model put those with a column-major result and operands of mixed
 * layouts (52) at 0.39-0.42x their measured time (median per layout
 * combination) and the others at 0.54-0.72x; with the transposes the 52
 * come out at 0.47-0.53x.
 * Known wrong: a lane move by a reshape is not detected; the rate of one
 * relayout pattern ((H, W) -> (W, H) minor pairs) is taken for every lane
 * move (the (W, C) ones there run up to 1.3x slower per element); the
 * GEMMs' transposes explain about a fifth of the time the model missed on
 * them (21%, pooled); a dot operand in a layout the MXU does not stream is
 * charged only in a relaid plan (plan.c relay_out), a result with a batch
 * dim on the lanes not at all.
 */
double sim_relayout_cycles(const struct hw_spec *hw,
			   const struct sim_kernel *k)
{
	double vregs = 0;
	for (int i = 0; i < k->n_outputs; i++) {
		const struct ir_instr *v = k->outputs[i];
		if (v->op == IR_OP_FUSION && v->n_called > 0 && v->called[0])
			v = v->called[0]->root;
		if (!v)
			continue;
		bool lanes = moves_lanes(v) &&
			     (k->relayout ||
			      (v->shape.layout.n_tiles > 0 &&
			       v->operands[0]->shape.layout.n_tiles > 0));
		if (lanes || dot_result_transposed(k, v))
			vregs += sim_shape_vregs(hw, &v->shape);
		/* a multi-output fusion writes each element of its root */
		for (int j = 0; v->op == IR_OP_TUPLE && j < v->n_operands; j++)
			if (dot_result_transposed(k, v->operands[j]))
				vregs += sim_shape_vregs(hw,
							 &v->operands[j]->shape);
	}
	return sim_xlu_relayout_cycles(hw, vregs);
}

double sim_xlu_relayout_cycles(const struct hw_spec *hw, double vregs)
{
	return vregs * hw->xlu_transpose_cost /
	       (hw->vpu_alus > 0 ? hw->vpu_alus : 1);
}
