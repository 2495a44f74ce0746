/*
 * model.c: the cycle-approximate analytic model of one TensorCore running
 * one kernel under one tile config. sim_plan_build() works out, once per
 * kernel, the combined tile grid and how every input, result, MXU and VPU
 * follow it; sim_plan_estimate() costs a config from that in closed form
 * (no step-by-step loop), so tile search can cost millions of configs.
 * sim_kernel_estimate() (sim.h) wraps the two; sim/explain.c prints them.
 * Units: ns, core cycles (hw->clock_hz), bytes padded to layout tiles.
 * Governing notes: docs/ARCHITECTURE.md "Kernels, tiles and the analytic
 * model", docs/TPU.md sections 2 and 3; unit formulas in hw/hw_*.c.
 */
#include "model.h"

#include <math.h>
#include <string.h>

#include "hw_units.h"

/* ====================================================================== */
/* Dimension maps: which grid dim each dim of a value follows.             */
/* ====================================================================== */

/*
 * Every array value of the kernel gets, per logical dim, the "space" dim it
 * follows: 0..R-1 are the logical dims of the tiled space (sim_tile_space_
 * shape), KOFF + j the logical dims of the convolution/dot kernel operand
 * (rhs); -1: the value does not follow the grid there (a block reads the
 * whole dim). win[] marks convolution input dims widened by a window: the
 * kernel spatial dim whose taps slide over it. Maps come from the target
 * outwards (forward through users, backward through operands): identity
 * through elementwise ops, broadcast/transpose/reduce dimension lists,
 * reshapes by equal leading and trailing dims.
 */
#define KOFF SIM_MAX_GRID
#define MAP_NONE (-1)

struct dmap {
	int8_t src[SIM_MAX_GRID];
	int8_t win[SIM_MAX_GRID];
	bool set;
};

static void map_none(struct dmap *m)
{
	memset(m->src, MAP_NONE, sizeof m->src);
	memset(m->win, MAP_NONE, sizeof m->win);
	m->set = true;
}

static void map_identity(struct dmap *m, int rank)
{
	map_none(m);
	for (int i = 0; i < rank && i < SIM_MAX_GRID; i++)
		m->src[i] = (int8_t)i;
}

/* Whether dims list l (may be NULL) names dim x. */
static bool ints_has(const struct ir_ints *l, int64_t x)
{
	for (int j = 0; l && j < l->n; j++)
		if (l->v[j] == x)
			return true;
	return false;
}

static bool is_array(const struct ir_instr *in)
{
	return in->shape.type != IR_TYPE_TUPLE &&
	       in->shape.rank <= SIM_MAX_GRID;
}

/* Maps between shapes of different rank (reshape, bitcast): dims of equal
 * size paired from the front, then from the back, then the first unequal
 * pair proportionally; the rest follow nothing. */
static void map_reshape(const struct ir_shape *from, const struct dmap *fm,
			const struct ir_shape *to, struct dmap *out)
{
	map_none(out);
	int i = 0;
	while (i < from->rank && i < to->rank &&
	       from->dims[i] == to->dims[i]) {
		out->src[i] = fm->src[i];
		out->win[i] = fm->win[i];
		i++;
	}
	int a = from->rank - 1, b = to->rank - 1;
	while (a >= i && b >= i && from->dims[a] == to->dims[b]) {
		out->src[b] = fm->src[a];
		out->win[b] = fm->win[a];
		a--;
		b--;
	}
	/* the first dims that differ split or merge: row-major order keeps
	 * a block of the outer one a proportional, contiguous range of the
	 * other (the access scales it by the size ratio) */
	if (i <= a && i <= b)
		out->src[i] = fm->src[i];
}

/* Copies src (and win) dim by dim when ranks agree. */
static bool map_copy(const struct ir_shape *to, const struct dmap *fm,
		     int from_rank, struct dmap *out, bool with_win)
{
	if (to->rank != from_rank)
		return false;
	map_none(out);
	for (int i = 0; i < to->rank; i++) {
		out->src[i] = fm->src[i];
		if (with_win)
			out->win[i] = fm->win[i];
	}
	return true;
}

/* Ops whose operands' dims relate to their result's by no map rule
 * (contractions, index-driven and control ops): maps stop there in both
 * directions. */
static bool map_opaque(enum ir_op op)
{
	switch (op) {
	case IR_OP_CONVOLUTION:
	case IR_OP_DOT:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_SORT:
	case IR_OP_CUSTOM_CALL:
	case IR_OP_TUPLE:
	case IR_OP_GET_TUPLE_ELEMENT:
	case IR_OP_WHILE:
	case IR_OP_CALL:
	case IR_OP_CONDITIONAL:
		return true;
	default:
		return false;
	}
}

static bool comp_backward(const struct ir_computation *c,
			  const struct dmap *root_map, int opi,
			  struct dmap *out);

/* Operand opi's map from instruction in's map m (backward). */
static bool backward_rule(const struct ir_instr *in, const struct dmap *m,
			  int opi, struct dmap *out)
{
	const struct ir_instr *op = in->operands[opi];
	if (!is_array(op) || !is_array(in) || map_opaque(in->op))
		return false;
	const struct ir_ints *dims = in->attrs.dimensions;
	switch (in->op) {
	case IR_OP_BROADCAST:
		if (!dims || dims->n != op->shape.rank)
			return false;
		map_none(out);
		for (int i = 0; i < dims->n; i++)
			if (dims->v[i] >= 0 && dims->v[i] < in->shape.rank)
				out->src[i] = m->src[dims->v[i]];
		return true;
	case IR_OP_TRANSPOSE:
		if (!dims || dims->n != op->shape.rank)
			return false;
		map_none(out);
		for (int i = 0; i < dims->n; i++)
			if (dims->v[i] >= 0 && dims->v[i] < op->shape.rank)
				out->src[dims->v[i]] = m->src[i];
		return true;
	case IR_OP_REDUCE: {
		if (opi >= in->n_operands / 2 || !dims)
			return op->shape.rank == 0 ? (map_none(out), true)
						   : false;
		map_none(out);
		int o = 0;
		for (int i = 0; i < op->shape.rank; i++)
			if (!ints_has(dims, i) && o < in->shape.rank)
				out->src[i] = m->src[o++];
		return true;
	}
	case IR_OP_FUSION:
		if (in->n_called < 1)
			return false;
		return comp_backward(in->called[0], m, opi, out);
	case IR_OP_RESHAPE:
	case IR_OP_BITCAST:
	case IR_OP_DYNAMIC_RESHAPE:
		map_reshape(&in->shape, m, &op->shape, out);
		return true;
	default:
		if (op->shape.rank == 0) {
			map_none(out);
			return true;
		}
		/* elementwise and same-rank data movement (slice, pad,
		 * concatenate, reverse, dynamic-update-slice, select...) */
		return map_copy(&op->shape, m, in->shape.rank, out, true);
	}
}

/* in's map from operand opi's map om (forward). */
static bool forward_rule(const struct ir_instr *in, int opi,
			 const struct dmap *om, struct dmap *out)
{
	const struct ir_instr *op = in->operands[opi];
	if (!is_array(op) || !is_array(in) || op->shape.rank == 0 ||
	    map_opaque(in->op))
		return false;
	const struct ir_ints *dims = in->attrs.dimensions;
	switch (in->op) {
	case IR_OP_BROADCAST:
		if (!dims || dims->n != op->shape.rank)
			return false;
		map_none(out);
		for (int i = 0; i < dims->n; i++)
			if (dims->v[i] >= 0 && dims->v[i] < in->shape.rank)
				out->src[dims->v[i]] = om->src[i];
		return true;
	case IR_OP_TRANSPOSE:
		if (!dims || dims->n != op->shape.rank)
			return false;
		map_none(out);
		for (int i = 0; i < dims->n; i++)
			if (dims->v[i] >= 0 && dims->v[i] < op->shape.rank)
				out->src[i] = om->src[dims->v[i]];
		return true;
	case IR_OP_REDUCE: {
		if (opi >= in->n_operands / 2 || !dims)
			return false;
		map_none(out);
		int o = 0;
		for (int i = 0; i < op->shape.rank; i++)
			if (!ints_has(dims, i) && o < SIM_MAX_GRID)
				out->src[o++] = om->src[i];
		return true;
	}
	case IR_OP_RESHAPE:
	case IR_OP_BITCAST:
	case IR_OP_DYNAMIC_RESHAPE:
		map_reshape(&op->shape, om, &in->shape, out);
		return true;
	case IR_OP_FUSION:
		if (!ir_shape_equal_dims(&in->shape, &op->shape))
			return false;
		return map_copy(&in->shape, om, op->shape.rank, out, false);
	default:
		return map_copy(&in->shape, om, op->shape.rank, out, false);
	}
}

/* Fills in holes of dst (MAP_NONE) from src: several operands of one
 * elementwise op may each know different dims (a broadcast knows fewer). */
static void map_merge(struct dmap *dst, const struct dmap *src, int rank)
{
	for (int i = 0; i < rank && i < SIM_MAX_GRID; i++)
		if (dst->src[i] == MAP_NONE)
			dst->src[i] = src->src[i];
}

/* Parameter opi's map of a nested fused computation c from its root map. */
static bool comp_backward(const struct ir_computation *c,
			  const struct dmap *root_map, int opi,
			  struct dmap *out)
{
	if (!c || !c->root || c->n_instrs <= 0)
		return false;
	struct dmap *m = ts_calloc((size_t)c->n_instrs, sizeof *m);
	if (!m)
		return false;
	bool ok = false;
	m[c->root->index] = *root_map;
	m[c->root->index].set = true;
	for (int i = c->n_instrs - 1; i >= 0; i--) {
		const struct ir_instr *in = c->instrs[i];
		if (!m[i].set)
			continue;
		for (int j = 0; j < in->n_operands; j++) {
			const struct ir_instr *op = in->operands[j];
			if (op->parent != c || m[op->index].set)
				continue;
			struct dmap t;
			if (backward_rule(in, &m[i], j, &t))
				m[op->index] = t;
		}
	}
	if (opi < c->n_params && c->params[opi] && m[c->params[opi]->index].set) {
		*out = m[c->params[opi]->index];
		ok = true;
	}
	ts_free(m);
	return ok;
}

/* Propagation over the kernel's members. */
struct prop {
	const struct sim_kernel *k;
	const struct ir_computation *comp; /* parent of the members */
	int *pos;                          /* comp->n_instrs: member index or -1 */
	struct dmap *mm;                   /* per member */
	struct dmap *im;                   /* per input */
};

static int input_index(const struct prop *pr, const struct ir_instr *v)
{
	for (int i = 0; i < pr->k->n_inputs; i++)
		if (pr->k->inputs[i] == v)
			return i;
	return -1;
}

/* The map slot of a value: a member's, or an input's (a fusion parameter
 * stands for its input). */
static struct dmap *slot(struct prop *pr, const struct ir_instr *v)
{
	if (v->parent == pr->comp && v->index >= 0 &&
	    v->index < pr->comp->n_instrs && pr->pos[v->index] >= 0)
		return &pr->mm[pr->pos[v->index]];
	int i = input_index(pr, v);
	return i >= 0 ? &pr->im[i] : NULL;
}

static void set_slot(struct prop *pr, const struct ir_instr *v,
		     const struct dmap *m)
{
	struct dmap *s = slot(pr, v);
	if (!s || s->set)
		return;
	*s = *m;
	s->set = true;
	if (v->op == IR_OP_PARAMETER && v->attrs.parameter_number >= 0 &&
	    v->attrs.parameter_number < pr->k->n_inputs &&
	    pr->k->instr && pr->k->instr->op == IR_OP_FUSION)
		if (!pr->im[v->attrs.parameter_number].set)
			pr->im[v->attrs.parameter_number] = *s;
}

static void prop_forward(struct prop *pr)
{
	for (int i = 0; i < pr->k->n_members; i++) {
		const struct ir_instr *in = pr->k->members[i];
		if (pr->mm[i].set || !is_array(in))
			continue;
		struct dmap acc;
		bool have = false;
		for (int j = 0; j < in->n_operands; j++) {
			struct dmap *om = slot(pr, in->operands[j]);
			struct dmap t;
			if (!om || !om->set || !forward_rule(in, j, om, &t))
				continue;
			if (!have)
				acc = t;
			else
				map_merge(&acc, &t, in->shape.rank);
			have = true;
		}
		if (have) {
			acc.set = true;
			pr->mm[i] = acc;
		}
	}
}

static void prop_backward(struct prop *pr)
{
	for (int i = pr->k->n_members - 1; i >= 0; i--) {
		const struct ir_instr *in = pr->k->members[i];
		if (!pr->mm[i].set)
			continue;
		for (int j = 0; j < in->n_operands; j++) {
			struct dmap *om = slot(pr, in->operands[j]);
			if (!om || om->set)
				continue;
			struct dmap t;
			if (backward_rule(in, &pr->mm[i], j, &t))
				set_slot(pr, in->operands[j], &t);
		}
	}
}

/* Seeds the target: the space is the identity; a convolution's or dot's
 * operands get their special maps (input features and rhs dims follow the
 * kernel space KOFF + j, convolution spatial dims get windows). */
static void prop_seed(struct prop *pr, const struct ir_instr *t)
{
	struct dmap m;
	if (t->op == IR_OP_REDUCE) {
		const struct ir_shape *s = sim_tile_space_shape(t);
		map_identity(&m, s->rank);
		for (int j = 0; j < t->n_operands / 2; j++)
			if (is_array(t->operands[j]) &&
			    ir_shape_equal_dims(&t->operands[j]->shape, s))
				set_slot(pr, t->operands[j], &m);
		return;
	}
	map_identity(&m, t->shape.rank);
	set_slot(pr, t, &m);
	if (t->op == IR_OP_CONVOLUTION && t->attrs.conv && t->n_operands >= 2) {
		const struct ir_conv_dims *cd = t->attrs.conv;
		struct dmap l;
		map_none(&l);
		if (cd->lhs_batch >= 0 && cd->lhs_batch < SIM_MAX_GRID)
			l.src[cd->lhs_batch] = (int8_t)cd->out_batch;
		if (cd->lhs_feature >= 0 && cd->lhs_feature < SIM_MAX_GRID)
			l.src[cd->lhs_feature] = (int8_t)(KOFF + cd->rhs_in);
		for (int s = 0; s < cd->n_spatial; s++) {
			int ld = cd->lhs_spatial[s];
			if (ld < 0 || ld >= SIM_MAX_GRID)
				continue;
			l.src[ld] = (int8_t)cd->out_spatial[s];
			l.win[ld] = (int8_t)(KOFF + cd->rhs_spatial[s]);
		}
		set_slot(pr, t->operands[0], &l);
	} else if (t->op == IR_OP_DOT && t->attrs.dot && t->n_operands >= 2) {
		const struct ir_dot_dims *dd = t->attrs.dot;
		const struct ir_shape *ls = &t->operands[0]->shape;
		struct dmap l;
		map_none(&l);
		int o = 0;
		for (int i = 0; i < dd->lhs_batch.n; i++)
			if (dd->lhs_batch.v[i] < SIM_MAX_GRID)
				l.src[dd->lhs_batch.v[i]] = (int8_t)o++;
		for (int i = 0; i < ls->rank && i < SIM_MAX_GRID; i++)
			if (!ints_has(&dd->lhs_batch, i) &&
			    !ints_has(&dd->lhs_contracting, i))
				l.src[i] = (int8_t)o++;
		for (int i = 0; i < dd->lhs_contracting.n &&
				i < dd->rhs_contracting.n; i++)
			if (dd->lhs_contracting.v[i] < SIM_MAX_GRID)
				l.src[dd->lhs_contracting.v[i]] =
					(int8_t)(KOFF + dd->rhs_contracting.v[i]);
		set_slot(pr, t->operands[0], &l);
	} else {
		return;
	}
	/* the rhs (kernel operand) is the kernel space itself */
	struct dmap r;
	map_none(&r);
	for (int j = 0; j < t->operands[1]->shape.rank && j < SIM_MAX_GRID; j++)
		r.src[j] = (int8_t)(KOFF + j);
	set_slot(pr, t->operands[1], &r);
}

/* ====================================================================== */
/* Plan building                                                           */
/* ====================================================================== */

/* The combined grid dim a map entry names, or -1. */
static int combined_dim(const struct sim_plan *p, int src)
{
	if (src < 0)
		return -1;
	if (src < KOFF) {
		for (int i = 0; i < p->out.rank; i++)
			if (p->out.logical[i] == src)
				return p->out_dim[i];
		return -1;
	}
	if (!p->has_kernel)
		return -1;
	for (int i = 0; i < p->kern.rank; i++)
		if (p->kern.logical[i] == src - KOFF)
			return p->kern_dim[i];
	return -1;
}

static bool in_vmem(const struct ir_shape *s)
{
	/* S(1) is VMEM; S(6)/S(7) hold scalars on chip (TPU.md section 3:
	 * the scalar learning rate lives in S(6)). */
	int ms = s->layout.memory_space;
	return ms == 1 || ms == 6 || ms == 7;
}

/* Adds one access for an array value with map m (NULL: follows nothing). */
static enum ts_status add_access(struct sim_plan *p, const struct ir_instr *v,
				 const struct ir_shape *s, const struct dmap *m,
				 bool output, const struct ir_instr *target,
				 struct ts_diag *d)
{
	struct sim_tgrid g;
	if (s->type == IR_TYPE_TUPLE || s->rank > SIM_MAX_GRID ||
	    sim_tile_grid(s, &g, d) != TS_OK) {
		p->other_bytes += ir_shape_padded_bytes(s);
		return TS_OK;
	}
	if (p->n_access >= SIM_PLAN_MAX_ACCESS) {
		p->other_bytes += ir_shape_padded_bytes(s);
		return TS_OK;
	}
	struct sim_plan_access *a = &p->acc[p->n_access++];
	memset(a, 0, sizeof *a);
	a->name = v->name;
	a->rank = g.rank;
	a->elem_bytes = g.bits / 8.0;
	a->pad_factor = g.pad_factor;
	a->output = output;
	a->in_vmem = in_vmem(s);
	a->type = s->type;
	double bytes = g.pad_factor * a->elem_bytes;
	const struct ir_window *w =
		target && target->op == IR_OP_CONVOLUTION ? target->attrs.window
							  : NULL;
	const struct ir_conv_dims *cd =
		target && target->op == IR_OP_CONVOLUTION ? target->attrs.conv
							  : NULL;
	for (int i = 0; i < g.rank; i++) {
		struct sim_plan_adim *ad = &a->dims[i];
		int L = g.logical[i];
		ad->elems = g.elems[i];
		ad->tile = g.tile[i];
		ad->grid = m ? combined_dim(p, m->src[L]) : -1;
		ad->win = m ? combined_dim(p, m->win[L]) : -1;
		ad->scale = 1.0;
		ad->dilation = 1;
		ad->lhs_dilate = 1;
		if (ad->grid >= 0) {
			double ge = (double)p->dims[ad->grid].elems;
			ad->scale = ge > 0 ? (double)ad->elems / ge : 1.0;
		}
		if (ad->win >= 0 && w && cd) {
			/* which spatial dim: the out spatial this dim follows */
			for (int sdim = 0; sdim < cd->n_spatial && sdim < w->n;
			     sdim++) {
				if (m->src[L] != cd->out_spatial[sdim])
					continue;
				ad->scale = (double)w->dims[sdim].stride;
				ad->dilation = w->dims[sdim].rhs_dilate > 0
						       ? w->dims[sdim].rhs_dilate
						       : 1;
				ad->lhs_dilate = w->dims[sdim].lhs_dilate > 0
							 ? w->dims[sdim].lhs_dilate
							 : 1;
			}
		}
		int64_t pe = ir_round_up(ad->elems, ad->tile);
		bytes *= (double)pe;
	}
	a->bytes = bytes;
	return TS_OK;
}

/* ---- VPU work of the members (config independent) ---- */

static double shape_vregs(const struct hw_spec *hw, const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double v = 0;
		for (int i = 0; i < s->n_elems; i++)
			v += shape_vregs(hw, &s->elems[i]);
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

static double instr_vpu_cycles(const struct hw_spec *hw,
			       const struct ir_instr *in, int depth);

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
	double in_v = shape_vregs(hw, s);
	double out_v = in->shape.type == IR_TYPE_TUPLE
			       ? in_v
			       : shape_vregs(hw, &in->shape);
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

static double comp_vpu_cycles(const struct hw_spec *hw,
			      const struct ir_computation *c, int depth)
{
	double cyc = 0;
	if (!c || depth > 8)
		return 0;
	for (int i = 0; i < c->n_instrs; i++)
		cyc += instr_vpu_cycles(hw, c->instrs[i], depth + 1);
	return cyc;
}

/*
 * VPU cycles of one instruction over its whole (padded) shape:
 *   elementwise/transcendental: vregs x cost[class] / alus
 *   reduce: fold across vregs, then in-register along the layout axis
 *   data movement inside a kernel (copy, transpose, slice, pad,
 *     concatenate, dynamic-(update-)slice, reverse, gather, scatter,
 *     reshape): one simple op per output vreg (load/store/select)
 *   broadcast, parameter, constant, bitcast, tuple: free (register
 *     splats and address arithmetic)
 *   divide by a value computed from constants only, or by a broadcast:
 *     a multiply (XLA's algebraic simplifier rewrites A / C to A x (1/C);
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

static double instr_vpu_cycles(const struct hw_spec *hw,
			       const struct ir_instr *in, int depth)
{
	if (in->op == IR_OP_DIVIDE && in->n_operands == 2 &&
	    (in->operands[1]->op == IR_OP_BROADCAST ||
	     from_constants(in->operands[1], 0)))
		return hw_vpu_op_cycles(hw, shape_vregs(hw, &in->shape),
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
			return hw_vpu_op_cycles(hw, shape_vregs(hw, s),
						HW_VPU_SIMPLE);
		double in_v = shape_vregs(hw, s);
		double out_v = 1;
		const struct ir_ints *dims = in->attrs.dimensions;
		for (int i = 0; i < g.rank; i++)
			if (!ints_has(dims, g.logical[i]))
				out_v *= (double)g.tiles[i];
		double per_input = (double)(in->n_operands / 2 > 0 ? in->n_operands / 2 : 1);
		return per_input * hw_vpu_reduce_cycles(hw, in_v, out_v,
							reduce_axis(&g, dims),
							HW_VPU_SIMPLE);
	}
	case IR_OP_REDUCE_WINDOW:
		return window_vpu_cycles(hw, in);
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
		return hw_vpu_op_cycles(hw, shape_vregs(hw, &in->shape),
					ir_op_vpu_class(in->op));
	if (cls == IR_CLASS_DATA_MOVEMENT)
		return hw_vpu_op_cycles(hw, shape_vregs(hw, &in->shape),
					HW_VPU_SIMPLE);
	return 0.0;
}

/* Members that feed the target's operand `side` (0 lhs, 1 rhs) without
 * passing through the target: their VPU work repeats with every fetch of
 * that operand (a prologue). Marks them in mark[] (member positions). */
static void mark_feeders(const struct prop *pr, const struct ir_instr *v,
			 uint8_t *mark, uint8_t bit, int depth)
{
	if (depth > 64 || v->parent != pr->comp || v->index < 0 ||
	    v->index >= pr->comp->n_instrs)
		return;
	int m = pr->pos[v->index];
	if (m < 0 || (mark[m] & bit))
		return;
	mark[m] |= bit;
	for (int j = 0; j < v->n_operands; j++)
		mark_feeders(pr, v->operands[j], mark, bit, depth + 1);
}

/* ---- kernel kinds ---- */

/* A reshape, bitcast or copy that leaves the bytes in place: after
 * dropping unit dims, the same physical dims, tiles and width. */
static bool layout_preserving(const struct ir_shape *a,
			      const struct ir_shape *b)
{
	struct sim_tgrid ga, gb;
	if (sim_tile_grid(a, &ga, NULL) != TS_OK ||
	    sim_tile_grid(b, &gb, NULL) != TS_OK || ga.bits != gb.bits)
		return false;
	int i = 0, j = 0;
	for (;;) {
		while (i < ga.rank && ga.elems[i] == 1 && ga.tile[i] == 1)
			i++;
		while (j < gb.rank && gb.elems[j] == 1 && gb.tile[j] == 1)
			j++;
		if (i == ga.rank || j == gb.rank)
			return i == ga.rank && j == gb.rank;
		if (ga.elems[i] != gb.elems[j] || ga.tile[i] != gb.tile[j])
			return false;
		i++;
		j++;
	}
}

/* True when every value the kernel writes is empty (a zero dimension):
 * there is nothing to compute, read or write. */
static bool writes_nothing(const struct sim_kernel *k)
{
	if (k->n_outputs == 0)
		return false;
	for (int i = 0; i < k->n_outputs; i++)
		if (ir_shape_padded_bytes(&k->outputs[i]->shape) > 0)
			return false;
	return true;
}

static bool kernel_is_free(const struct sim_kernel *k)
{
	if (writes_nothing(k))
		return true;
	int work = 0;
	for (int i = 0; i < k->n_members; i++) {
		const struct ir_instr *in = k->members[i];
		switch (in->op) {
		case IR_OP_PARAMETER:
		case IR_OP_TUPLE:
		case IR_OP_GET_TUPLE_ELEMENT:
		case IR_OP_BITCAST:
		case IR_OP_CONSTANT:
			break;
		case IR_OP_RESHAPE:
		case IR_OP_COPY:
		case IR_OP_TRANSPOSE:
			/* a copy-start's stand-in (sim/kernels.c) moves its
			 * bytes between memory spaces whatever the layouts */
			if (in->n_operands == 1 && in != k->lowered &&
			    layout_preserving(&in->shape, &in->operands[0]->shape))
				break;
			work++;
			break;
		default:
			work++;
		}
	}
	return work == 0;
}

void sim_collective_of(const struct sim_kernel *k, enum hw_collective *c,
		       double *bytes, int64_t *devices)
{
	enum ir_op op = k->instr ? k->instr->op : IR_OP_INVALID;
	if (op == IR_OP_ASYNC_START)
		op = k->instr->wrapped_op;
	switch (op) {
	case IR_OP_ALL_REDUCE:
	case IR_OP_ALL_REDUCE_START:
	case IR_OP_COLLECTIVE_REDUCE:
		*c = HW_COLL_ALL_REDUCE;
		break;
	case IR_OP_ALL_GATHER:
	case IR_OP_ALL_GATHER_START:
		*c = HW_COLL_ALL_GATHER;
		break;
	case IR_OP_REDUCE_SCATTER:
		*c = HW_COLL_REDUCE_SCATTER;
		break;
	case IR_OP_ALL_TO_ALL:
	case IR_OP_RAGGED_ALL_TO_ALL:
		*c = HW_COLL_ALL_TO_ALL;
		break;
	default: /* collective-permute, broadcast, send/recv: one hop */
		*c = HW_COLL_PERMUTE;
		break;
	}
	*bytes = *c == HW_COLL_ALL_GATHER ? k->work.bytes_written
					  : k->work.bytes_read;
	*devices = k->group_devices;
}

/* ---- the combined grid of a convolution or dot ---- */

/* Roles of the kernel (rhs) logical dims and the out dims they share. */
static void kernel_roles(const struct ir_instr *t, int rk, int *role,
			 int *shared_out_logical)
{
	for (int j = 0; j < rk; j++) {
		role[j] = SIM_ROLE_K;
		shared_out_logical[j] = -1;
	}
	if (t->op == IR_OP_CONVOLUTION && t->attrs.conv) {
		const struct ir_conv_dims *cd = t->attrs.conv;
		for (int s = 0; s < cd->n_spatial; s++)
			if (cd->rhs_spatial[s] >= 0 && cd->rhs_spatial[s] < rk)
				role[cd->rhs_spatial[s]] = SIM_ROLE_TAP;
		if (cd->rhs_out >= 0 && cd->rhs_out < rk) {
			role[cd->rhs_out] = SIM_ROLE_N;
			shared_out_logical[cd->rhs_out] = cd->out_feature;
		}
		return;
	}
	if (t->op == IR_OP_DOT && t->attrs.dot) {
		const struct ir_dot_dims *dd = t->attrs.dot;
		int nb = dd->rhs_batch.n;
		for (int i = 0; i < nb; i++)
			if (dd->rhs_batch.v[i] < rk) {
				role[dd->rhs_batch.v[i]] = SIM_ROLE_BATCH;
				shared_out_logical[dd->rhs_batch.v[i]] = i;
			}
		/* output dims: batch, lhs free, rhs free */
		int lhs_free = t->operands[0]->shape.rank - dd->lhs_batch.n -
			       dd->lhs_contracting.n;
		int o = nb + lhs_free;
		for (int j = 0; j < rk; j++) {
			if (!ints_has(&dd->rhs_batch, j) &&
			    !ints_has(&dd->rhs_contracting, j)) {
				role[j] = SIM_ROLE_N;
				shared_out_logical[j] = o++;
			}
		}
	}
}

static int mxu_passes(const struct hw_spec *hw, const struct ir_instr *t)
{
	bool f32 = false;
	for (int i = 0; i < 2 && i < t->n_operands; i++) {
		enum ir_type ty = t->operands[i]->shape.type;
		f32 |= ty == IR_TYPE_F32 || ty == IR_TYPE_F64 || ty == IR_TYPE_C64;
	}
	if (!f32)
		return 1;
	/* f32 at HIGHEST: hw->mxu_f32_passes bf16 passes; HIGH (bf16_3x):
	 * half of them; DEFAULT: one bf16 pass (TPU default precision). */
	enum ir_precision pr = t->attrs.precision[0] > t->attrs.precision[1]
				       ? t->attrs.precision[0]
				       : t->attrs.precision[1];
	int full = hw->mxu_f32_passes > 0 ? hw->mxu_f32_passes : 1;
	if (pr == IR_PRECISION_HIGHEST)
		return full;
	if (pr == IR_PRECISION_HIGH)
		return (full + 1) / 2;
	return 1;
}

enum ts_status sim_plan_build(const struct sim_kernel *k,
			      const struct hw_spec *hw, struct sim_plan *p,
			      struct ts_diag *d)
{
	memset(p, 0, sizeof *p);
	p->k = k;
	p->mxu_groups = 1;
	p->tap_density = 1.0;
	if (k->kind == SIM_KERNEL_UNMODELLED) {
		p->kind = SIM_PLAN_UNMODELLED;
		return TS_OK;
	}
	if (k->kind == SIM_KERNEL_COLLECTIVE) {
		p->kind = SIM_PLAN_COLLECTIVE;
		enum hw_collective c;
		double bytes;
		int64_t n;
		sim_collective_of(k, &c, &bytes, &n);
		p->ici_ns = hw_ici_collective_ns(hw, c, bytes, n);
		p->other_bytes = 2.0 * bytes;
		return TS_OK;
	}
	if (kernel_is_free(k)) {
		p->kind = SIM_PLAN_FREE;
		return TS_OK;
	}
	p->kind = SIM_PLAN_TILED;
	/* kernel extraction's tiled instruction, unless it sits inside a
	 * nested fused computation the maps below do not reach */
	const struct ir_computation *comp =
		k->n_members > 0 ? k->members[0]->parent : NULL;
	const struct ir_instr *t =
		k->tiled && (!comp || k->tiled->parent == comp)
			? k->tiled
			: sim_tile_target(k);
	if (!t) {
		ts_diag_set(d, NULL, 0, 0, "%s: kernel has no instructions",
			    k->name ? k->name : "?");
		return TS_ERR_UNSUPPORTED_OP;
	}
	p->target = t;
	enum ts_status st = sim_tile_grid(sim_tile_space_shape(t), &p->out, d);
	if (st != TS_OK)
		return st;
	bool mxu = (t->op == IR_OP_CONVOLUTION && t->attrs.conv) ||
		   (t->op == IR_OP_DOT && t->attrs.dot);
	if (mxu && t->n_operands >= 2) {
		st = sim_tile_grid(&t->operands[1]->shape, &p->kern, d);
		if (st != TS_OK)
			return st;
		p->has_kernel = true;
	}

	/* Combined grid: out dims, then kernel dims not shared. */
	int role_l[SIM_MAX_GRID], shared_l[SIM_MAX_GRID];
	for (int i = 0; i < p->out.rank; i++) {
		p->out_dim[i] = p->n_dims;
		struct sim_plan_dim *dm = &p->dims[p->n_dims++];
		dm->tiles = p->out.tiles[i];
		dm->tile = p->out.tile[i];
		dm->elems = p->out.elems[i];
		dm->role = SIM_ROLE_M;
		dm->src = i;
	}
	if (p->has_kernel) {
		kernel_roles(t, p->kern.rank, role_l, shared_l);
		for (int i = 0; i < p->kern.rank; i++) {
			int L = p->kern.logical[i];
			p->kern_shared[i] = -1;
			if (shared_l[L] >= 0)
				for (int o = 0; o < p->out.rank; o++)
					if (p->out.logical[o] == shared_l[L])
						p->kern_shared[i] = o;
			if (p->kern_shared[i] >= 0) {
				int o = p->kern_shared[i];
				p->kern_dim[i] = o;
				p->dims[o].role = (enum sim_dim_role)role_l[L];
				continue;
			}
			struct sim_plan_dim *dm = &p->dims[p->n_dims];
			p->kern_dim[i] = p->n_dims++;
			dm->tiles = p->kern.tiles[i];
			dm->tile = p->kern.tile[i];
			dm->elems = p->kern.elems[i];
			dm->role = (enum sim_dim_role)role_l[L];
			dm->src = p->out.rank + i;
		}
		p->mxu_passes = mxu_passes(hw, t);
		p->mxu_groups = t->attrs.feature_group_count > 1
					? t->attrs.feature_group_count
					: 1;
		if (t->op == IR_OP_CONVOLUTION && t->attrs.conv &&
		    t->attrs.conv->out_feature >= 0 &&
		    t->attrs.conv->out_feature < t->shape.rank)
			p->mxu_cout = t->shape.dims[t->attrs.conv->out_feature];
		if (t->op == IR_OP_CONVOLUTION && t->attrs.window) {
			double win = 1, outsp = 1;
			const struct ir_conv_dims *cd = t->attrs.conv;
			for (int s = 0; s < t->attrs.window->n; s++) {
				if (t->attrs.window->dims[s].size > 1)
					p->mxu_windowed = true;
				if (t->attrs.window->dims[s].lhs_dilate > 1)
					p->tap_density /= (double)t->attrs.window->dims[s]
								  .lhs_dilate;
				win *= (double)t->attrs.window->dims[s].size;
				if (cd && s < cd->n_spatial &&
				    cd->out_spatial[s] < t->shape.rank)
					outsp *= (double)t->shape.dims[cd->out_spatial[s]];
			}
			p->mxu_fold_taps = win > outsp;
		}
		double macs = 0;
		if (sim_instr_macs(t, NULL, &macs, NULL) == TS_OK)
			p->mxu_macs = macs;
		/* Output-feature dims outermost: a block of weights stays in
		 * VMEM while every row block streams past it, and is fetched
		 * once per feature block (weight-stationary grid order). */
		struct sim_plan_dim tmp[SIM_PLAN_MAX_DIMS];
		int perm[SIM_PLAN_MAX_DIMS], n = 0;
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < p->out.rank; i++)
				if ((p->dims[i].role == SIM_ROLE_N) == (pass == 0))
					perm[n++] = i;
		memcpy(tmp, p->dims, sizeof tmp);
		for (int j = 0; j < n; j++) {
			p->dims[j] = tmp[perm[j]];
			p->out_dim[perm[j]] = j;
		}
		for (int i = 0; i < p->kern.rank; i++)
			if (p->kern_shared[i] >= 0)
				p->kern_dim[i] = p->out_dim[p->kern_shared[i]];
	}

	/* Dimension maps over the members. */
	struct prop pr = {.k = k, .comp = comp};
	uint8_t *mark = NULL;
	if (comp) {
		pr.pos = ts_malloc(sizeof(int) * (size_t)(comp->n_instrs + 1));
		pr.mm = ts_calloc((size_t)k->n_members + 1, sizeof *pr.mm);
		pr.im = ts_calloc((size_t)k->n_inputs + 1, sizeof *pr.im);
		mark = ts_calloc((size_t)k->n_members + 1, 1);
		if (!pr.pos || !pr.mm || !pr.im || !mark) {
			st = TS_ERR_NOMEM;
			ts_diag_set(d, NULL, 0, 0, "out of memory planning %s",
				    k->name);
			goto out;
		}
		for (int i = 0; i < comp->n_instrs; i++)
			pr.pos[i] = -1;
		for (int i = 0; i < k->n_members; i++) {
			const struct ir_instr *in = k->members[i];
			if (in->parent == comp && in->index >= 0 &&
			    in->index < comp->n_instrs)
				pr.pos[in->index] = i;
		}
		prop_seed(&pr, t);
		for (int pass = 0; pass < 2; pass++) {
			prop_forward(&pr);
			prop_backward(&pr);
		}
	}

	/* Inputs. */
	for (int i = 0; i < k->n_inputs; i++) {
		const struct ir_instr *v = k->inputs[i];
		const struct dmap *m = pr.im && pr.im[i].set ? &pr.im[i] : NULL;
		st = add_access(p, v, &v->shape, m, false, t, d);
		if (st != TS_OK)
			goto out;
	}
	/* Outputs: the root value(s) the kernel writes. */
	{
		const struct ir_instr *roots[64];
		int n = 0;
		const struct ir_instr *root = NULL;
		if (k->instr && k->instr->op == IR_OP_FUSION &&
		    k->instr->n_called > 0)
			root = k->instr->called[0]->root;
		if (root && root->op == IR_OP_TUPLE) {
			for (int i = 0; i < root->n_operands && n < 64; i++)
				roots[n++] = root->operands[i];
		} else if (root) {
			roots[n++] = root;
		} else if (k->n_outputs > 0) {
			for (int i = 0; i < k->n_outputs && n < 64; i++)
				roots[n++] = k->outputs[i];
		} else if (k->instr) {
			roots[n++] = k->instr;
		}
		for (int i = 0; i < n; i++) {
			const struct ir_instr *v = roots[i];
			const struct dmap *m = NULL;
			if (pr.mm && v->parent == comp && v->index >= 0 &&
			    v->index < comp->n_instrs && pr.pos[v->index] >= 0 &&
			    pr.mm[pr.pos[v->index]].set)
				m = &pr.mm[pr.pos[v->index]];
			if (v->shape.type == IR_TYPE_TUPLE) {
				for (int e = 0; e < v->shape.n_elems; e++) {
					st = add_access(p, v, &v->shape.elems[e],
							NULL, true, t, d);
					if (st != TS_OK)
						goto out;
				}
				continue;
			}
			st = add_access(p, v, &v->shape, m, true, t, d);
			if (st != TS_OK)
				goto out;
		}
	}

	/* VPU work; prologues of the MXU operands. */
	for (int i = 0; i < k->n_members; i++)
		p->vpu_cycles += instr_vpu_cycles(hw, k->members[i], 0);
	if (k->n_members == 0 && k->instr)
		p->vpu_cycles += instr_vpu_cycles(hw, k->instr, 0);
	if (p->has_kernel && comp && mark) {
		for (int side = 0; side < 2; side++)
			mark_feeders(&pr, t->operands[side], mark,
				     (uint8_t)(1u << side), 0);
		for (int side = 0; side < 2; side++) {
			double cyc = 0;
			for (int i = 0; i < k->n_members; i++)
				if (mark[i] & (1u << side))
					cyc += instr_vpu_cycles(hw, k->members[i], 0);
			/* a 32-bit operand is rounded to bf16 on the VPU
			 * before it enters the MXU (one op per vreg per
			 * pass; the MXU takes bf16, TPU.md section 2 rule 1) */
			const struct ir_shape *os = &t->operands[side]->shape;
			double conv = ir_type_bits(os->type) > 16
					      ? hw_vpu_op_cycles(hw, shape_vregs(hw, os) *
								 p->mxu_passes,
							 HW_VPU_SIMPLE)
					      : 0.0;
			p->vpu_cycles += conv;
			cyc += conv;
			/* the largest input feeding that side */
			int best = -1;
			for (int a = 0; a < p->n_access; a++) {
				if (p->acc[a].output || a >= k->n_inputs)
					continue;
				const struct ir_instr *v = k->inputs[a];
				/* the operand itself (an unfused dot), or an
				 * input of the members that feed it */
				bool feeds = v == t->operands[side];
				for (int mi = 0; mi < k->n_members && !feeds; mi++)
					if ((mark[mi] & (1u << side)) &&
					    (k->members[mi] == v ||
					     (k->members[mi]->op == IR_OP_PARAMETER &&
					      k->members[mi]->attrs.parameter_number == a)))
						feeds = true;
				if (feeds && (best < 0 || p->acc[a].bytes >
								   p->acc[best].bytes))
					best = a;
			}
			if (best < 0)
				continue;
			/* a 16-bit operand (bf16, packed two per 32-bit word)
			 * of a windowed convolution is unpacked to one value
			 * per word in VMEM before its shifted windows are
			 * pushed into the MXU: a staging copy of twice its
			 * bytes per buffer (see estimate()) */
			int ob = ir_type_bits(os->type);
			if (p->mxu_windowed && ob == 16 &&
			    p->acc[best].elem_bytes * 8.0 == ob)
				p->acc[best].stage_ratio = 32.0 / ob;
			if (cyc > 0) {
				/* its prologue repeats with every fetch */
				p->acc[best].prologue_cycles += cyc;
				p->vpu_cycles -= cyc;
			}
		}
	}
	/* f16 arrays are converted to/from f32 on every load and store
	 * (hw_vpu_f16_convert_cycles); charged per pass, like a prologue */
	for (int a = 0; a < p->n_access; a++)
		if (p->acc[a].type == IR_TYPE_F16)
			p->acc[a].convert_cycles = hw_vpu_f16_convert_cycles(
				hw,
				hw_vpu_vregs(hw, p->acc[a].bytes /
							 p->acc[a].elem_bytes,
					     32),
				p->acc[a].output);
	/* megacore: large kernels split their steps across the cores; a
	 * reduce-window (pooling) kernel is not split: tpuv4-ops max/avg
	 * pooling runs at the same time per element from 98 K to 268 M
	 * elements, with no drop where other kernels gain a second core */
	double space = 1;
	for (int i = 0; i < p->out.rank; i++)
		space *= (double)p->out.elems[i];
	p->cores = t->op == IR_OP_REDUCE_WINDOW ? 1
						 : hw_spec_kernel_cores(hw, space);
	p->acc_vregs_per_elem = p->has_kernel ? 1.0 / (hw->vpu_sublanes * hw->vpu_lanes)
					   : 0.0;
	p->flops = 2.0 * p->mxu_macs + k->work.flops - 2.0 * k->work.mxu_macs;
	if (p->flops < 2.0 * p->mxu_macs)
		p->flops = 2.0 * p->mxu_macs;
	p->hw = hw;
out:
	ts_free(pr.pos);
	ts_free(pr.mm);
	ts_free(pr.im);
	ts_free(mark);
	return st;
}

/* ====================================================================== */
/* Estimating one config                                                   */
/* ====================================================================== */


static void dim_blocks(const struct sim_plan_dim *dm, int64_t bound,
		       struct sim_blocks *b)
{
	b->bound = bound;
	b->nb = ir_ceil_div(dm->tiles, bound);
	int64_t full = ir_mul_sat(bound, dm->tile);
	if (full > dm->elems)
		full = dm->elems;
	b->full = full;
	int64_t rest = dm->elems - ir_mul_sat(b->nb - 1, full);
	if (rest == full || b->nb == 1) {
		b->n_full = b->nb;
		b->last = full;
		b->n_last = 0;
		if (b->nb == 1)
			b->full = dm->elems < full ? dm->elems : full;
	} else {
		b->n_full = b->nb - 1;
		b->last = rest > 0 ? rest : 1;
		b->n_last = 1;
	}
}

static int64_t pad_to(int64_t e, int64_t t)
{
	return t > 1 ? ir_round_up(e, t) : e;
}

/* Elements of an access dim in a block: grid block a, window block w. */
static int64_t adim_extent(const struct sim_plan_adim *ad, int64_t a, int64_t w)
{
	if (ad->win < 0 && ad->scale == 1.0)
		return a < ad->elems ? a : ad->elems;
	double e;
	if (ad->win >= 0) {
		/* convolution input: (out - 1) x stride + (taps - 1) x
		 * dilation + 1, over the base dilation */
		e = (double)(a - 1) * ad->scale + (double)(w - 1) * ad->dilation + 1;
		if (ad->lhs_dilate > 1)
			e = ceil(e / (double)ad->lhs_dilate);
	} else {
		e = ceil((double)a * ad->scale);
	}
	if (e > (double)ad->elems)
		e = (double)ad->elems;
	if (e < 1)
		e = 1;
	return (int64_t)e;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Blocks that straddle the access's tiles. When a grid dim's blocks are
 * not a whole number of the access's own tiles along the dim it follows
 * (a copy whose major dim becomes the sublane dim of the other layout:
 * blocks of 7 rows over 8-row tiles), block k covers elements [k f, k f +
 * f) and moves every tile it touches:
 *   tiles(k) = floor((k f + f - 1) / t) - floor(k f / t) + 1
 * Summed over the n full blocks (closed form, g = gcd(f, t)):
 *   n + floor(n f / t) - floor(n g / t)
 * the ragged last block starts at n f; the buffer holds the largest block,
 * floor((f - 1 + t - g) / t) + 1 tiles. Replaces the sum of padded extents
 * (*s), the first (largest) and last block extents (elements) of an
 * unwindowed, unscaled dim. Assumes blocks start at multiples of f from the
 * array's origin. Source: TPU.md section 2 rule 3 (aligned (8,128)
 * transfers; anything else moves whole tiles).
 */
static void straddle(const struct sim_plan_adim *ad, const struct sim_blocks *g,
		     double *s, double *e_first, double *e_last)
{
	int64_t t = ad->tile, f = g->full;
	if (t <= 1 || f <= 0 || f % t == 0 || g->nb <= 1)
		return;
	int64_t n = g->n_full, gg = gcd64(f, t);
	double tiles = (double)n + (double)(ir_mul_sat(n, f) / t) -
		       (double)(ir_mul_sat(n, gg) / t);
	double last_tiles = 0;
	if (g->n_last) {
		int64_t st = ir_mul_sat(n, f), e = g->last;
		if (st > ad->elems - e)
			e = ad->elems - st;
		last_tiles = e > 0 ? (double)((st + e - 1) / t - st / t + 1) : 0.0;
	}
	double big = (double)((f - 1 + t - gg) / t + 1);
	*s = (tiles + last_tiles) * (double)t;
	*e_first = big * (double)t;
	*e_last = (g->n_last ? last_tiles : big) * (double)t;
}

/*
 * Bytes an access moves. For the set D of grid dims it follows, steps run
 * lexicographically, so its block changes F = prod_{d <= j} nb(d) times
 * (j = innermost dim of D with more than one block); it is fetched again
 * for each block of an outer dim it does not follow: R = prod_{d <= j, d
 * not in D} nb(d). Total = R x prod over its dims of the sum over blocks of
 * the padded block extent (block extents along different dims multiply, so
 * the sum over all blocks factorises). Padded: each block extent rounds up
 * to the operand's own tile (a block of 5 rows of a T(8,128) array moves 8
 * rows), and a block not aligned to those tiles moves every tile it
 * touches (straddle()). Also counts the contiguous runs moved (below).
 * Assumes each access dim follows a distinct grid dim.
 */
static void access_cost(const struct sim_plan_access *a,
			const struct sim_blocks *bl, int n_dims,
			struct sim_acc_cost *c)
{
	bool in_d[SIM_PLAN_MAX_DIMS] = {false};
	for (int i = 0; i < a->rank; i++) {
		if (a->dims[i].grid >= 0)
			in_d[a->dims[i].grid] = true;
		if (a->dims[i].win >= 0)
			in_d[a->dims[i].win] = true;
	}
	int j = -1;
	for (int dd = 0; dd < n_dims; dd++)
		if (in_d[dd] && bl[dd].nb > 1)
			j = dd;
	double f = 1, r = 1;
	for (int dd = 0; dd <= j; dd++) {
		f *= (double)bl[dd].nb;
		if (!in_d[dd])
			r *= (double)bl[dd].nb;
	}
	double sum = a->pad_factor * a->elem_bytes;
	double first = sum, last = sum;
	/* per dim: blocks along it, and tiles summed over them / in the
	 * first / in the last block (for the chunk count below) */
	double nblk[SIM_MAX_GRID], t_sum[SIM_MAX_GRID], t_first[SIM_MAX_GRID],
		t_last[SIM_MAX_GRID];
	int stop = -1; /* minor-most dim a block covers only in part */
	for (int i = 0; i < a->rank; i++) {
		const struct sim_plan_adim *ad = &a->dims[i];
		double tl = ad->tile > 1 ? (double)ad->tile : 1.0;
		double whole = (double)pad_to(ad->elems, ad->tile);
		if (ad->grid < 0) {
			double e = whole;
			sum *= e;
			first *= e;
			last *= e;
			nblk[i] = 1;
			t_sum[i] = t_first[i] = t_last[i] = e / tl;
			continue;
		}
		const struct sim_blocks *g = &bl[ad->grid];
		const struct sim_blocks *w = ad->win >= 0 ? &bl[ad->win] : NULL;
		int64_t wv[2] = {1, 1}, wn[2] = {1, 0};
		if (w) {
			wv[0] = w->full;
			wn[0] = w->n_full;
			wv[1] = w->last;
			wn[1] = w->n_last;
		}
		int64_t gv[2] = {g->full, g->last}, gn[2] = {g->n_full, g->n_last};
		double e00 = (double)pad_to(adim_extent(ad, gv[0], wv[0]), ad->tile);
		double s = (double)gn[0] * (double)wn[0] * e00, e_last = e00;
		for (int x = 0; x < 2; x++)
			for (int y = 0; y < 2; y++) {
				if ((x == 0 && y == 0) || gn[x] == 0 || wn[y] == 0)
					continue;
				double e = (double)pad_to(adim_extent(ad, gv[x], wv[y]),
							  ad->tile);
				s += (double)gn[x] * (double)wn[y] * e;
				if (x == (gn[1] > 0) && y == (wn[1] > 0))
					e_last = e;
			}
		if (!w && ad->scale == 1.0)
			straddle(ad, g, &s, &e00, &e_last);
		sum *= s;
		first *= e00;
		last *= e_last;
		nblk[i] = (double)(gn[0] + gn[1]) * (double)(wn[0] + wn[1]);
		t_sum[i] = s / tl;
		t_first[i] = e00 / tl;
		t_last[i] = e_last / tl;
		/* split when a block covers less than the dim (a straddling
		 * block's largest extent may reach the whole dim) */
		if (e00 < whole || (!w && g->nb > 1))
			stop = i;
	}
	/*
	 * Contiguous runs (DMA chunks). In HBM the array is its tile grid in
	 * physical order, major to minor, each layout tile contiguous; a block
	 * is one run along its minor dims up to and including the minor-most
	 * dim it covers only in part (stop), and one run per index of every
	 * dim more major than that:
	 *   runs(block) = prod_{i < stop} tiles_i(block)
	 * Summed over blocks (extents along dims multiply, as for the bytes):
	 *   runs = R x prod_{i < stop} sum_blocks tiles_i x prod_{i >= stop}
	 *          blocks_i
	 * A block covering every dim is one run. Assumes blocks start on tile
	 * boundaries (a block of 7 rows that straddles two 8-row tiles is
	 * counted as one tile); the real descriptor may also merge runs that
	 * happen to abut in both HBM and VMEM.
	 */
	double runs = 1, runs_first = 1, runs_last = 1;
	for (int i = 0; i < a->rank; i++) {
		if (i < stop) {
			runs *= t_sum[i];
			runs_first *= t_first[i];
			runs_last *= t_last[i];
		} else {
			runs *= nblk[i];
		}
	}
	c->total = sum * r;
	c->transfers = f;
	c->block = first;
	c->last = last;
	c->refetch = r;
	c->reread = a->output && r > 1 ? c->total - sum : 0.0;
	c->chunks = runs * r;
	c->block_chunks = runs_first;
	c->last_chunks = runs_last;
	c->reread_chunks = a->output && r > 1 ? c->chunks - runs : 0.0;
}


/*
 * MXU cycles of the whole kernel: steps x (hw_mxu_fill_cycles +
 * hw_mxu_stream_cycles(tiles, rows)),
 * where a step's weight tiles are
 *   batch x taps x ceil(K / R) x ceil(N / C)   (per feature group)
 * or, for a convolution whose window is larger than its output (a weight
 * gradient: the window spans the input's spatial extent, the output is the
 * kernel), with the taps folded into the contraction when K < R:
 *   batch x ceil(taps / floor(R / K)) x ceil(N / C)
 * XLA's TPU emitter contracts such a convolution over batch x window as
 * one long matmul (the contraction is batch x spatial), so the array sees
 * a deep K, not thousands of K-deep taps each padded to R rows.
 * and its rows are the product of the M-dim block extents (batch, spatial
 * or lhs free dims). In a matmul (no window) either operand may be the
 * stationary one: the compiler keeps the cheaper orientation (rows <->
 * columns swapped), which matters with few rows (weight-load bound); a
 * windowed convolution streams its input and keeps the kernel stationary. A ragged last
 * block costs a full block: the compiler emits one loop body for the block
 * shape and masks the invalid part (TpuGraphs fusion.191: a 2-of-3 tap or
 * 256-of-384 feature split costs 4/3 each, within 5%). Assumes the MXU
 * result buffers accumulate within a step; across steps of a split
 * contraction the f32 accumulator is re-added on the VPU (counted
 * separately).
 */
static double mxu_total_cycles(const struct sim_plan *p,
			       const struct hw_spec *hw, const struct sim_blocks *bl,
			       int64_t steps)
{
	double rows = 1, kv = 1, nv = 1, taps = 1;
	for (int i = 0; i < p->n_dims; i++) {
		double e = (double)bl[i].full;
		switch (p->dims[i].role) {
		case SIM_ROLE_M:
			rows *= e;
			break;
		case SIM_ROLE_K:
			kv *= e;
			break;
		case SIM_ROLE_N:
			nv *= e;
			break;
		case SIM_ROLE_BATCH:
		case SIM_ROLE_TAP:
			taps *= e;
			break;
		default:
			break;
		}
	}
	double rr = hw->mxu_rows, cc = hw->mxu_cols;
	double g = (double)p->mxu_groups, grp = 1;
	taps = fmax(1.0, taps * p->tap_density);
	if (g > 1) {
		/* per group K and N shrink by g; the groups a block spans
		 * each take their own weight tiles */
		grp = fmax(1.0, fmin(g, nv * g / fmax(1.0, (double)p->mxu_cout)));
		kv = fmax(1.0, kv / g);
		nv = fmax(1.0, nv / grp);
	}
	/* weight tiles along the contraction: per tap, or taps folded into
	 * the contraction (mxu_fold_taps: floor(R / K) taps share a tile) */
	double kt = taps * ceil(kv / rr);
	if (p->mxu_fold_taps && kv < rr)
		kt = ceil(taps / floor(rr / kv));
	double t1 = grp * kt * ceil(nv / cc);
	double t2 = grp * kt * ceil(rows / cc);
	double c1 = hw_mxu_stream_cycles(hw, (int64_t)t1, (int64_t)ceil(rows),
					 p->mxu_passes);
	double c2 = hw_mxu_stream_cycles(hw, (int64_t)t2, (int64_t)ceil(nv),
					 p->mxu_passes);
	/* every step drains the array: its results leave for VMEM (the
	 * accumulator or the epilogue) before the next step's weights load */
	return (double)steps * (hw_mxu_fill_cycles(hw) +
				(p->mxu_windowed ? c1 : fmin(c1, c2)));
}

/* DMA work of one phase (the first loads, the steps, the last stores):
 * every operand's transfers form one stream; the streams run concurrently
 * (dma_ns). */
struct dma_part {
	double bytes; /* bytes of all streams */
	double worst; /* ns of the slowest stream alone (hw_mem_stream_ns) */
};

static void dma_add(struct dma_part *d, const struct hw_spec *hw,
		    double bytes, double runs)
{
	if (bytes <= 0)
		return;
	d->bytes += bytes;
	d->worst = fmax(d->worst, hw_mem_stream_ns(hw, bytes, runs));
}

/*
 * ns = max(bytes / (bytes per ns), slowest stream)
 * The operands' DMAs are issued together and served concurrently: they
 * share the HBM bandwidth, and each pays the per-run cost of its own
 * descriptors, which overlaps the other streams' transfers. Assumes enough
 * DMA engines or queue depth to keep every stream in flight. Known wrong:
 * streams that contend for the same HBM channels serialise more. Source:
 * TpuGraphs fusion.245 (f32 input plus a 16-bit mask input): narrow blocks
 * cost about the bytes at the sustained rate, not bytes plus every run of
 * both inputs.
 */
static double dma_ns(const struct hw_spec *hw, const struct dma_part *d)
{
	double bpns = hw_mem_bytes_per_ns(hw);
	return fmax(bpns > 0 ? d->bytes / bpns : 0.0, d->worst);
}

/*
 * The kernel time (ns) under one config:
 *
 *   T = kernel_ns                                   launch, per kernel
 *     + latency + DMA(first loads)                  first load, unhidden
 *     + (S - 1) x ( max(compute, dma) + step_ns )   pipelined steps
 *     + compute + step_ns                           last step, unhidden
 *     + latency + DMA(last stores)                  last store, unhidden
 *
 *   S        = prod ceil(grid / bound) over the combined grid
 *   compute  = max(MXU + re-adds, VPU) cycles per step / clock / cores
 *              (the VPU feeds the MXU in the same VLIW bundles, so they
 *              overlap; cores = plan.cores, 2 for a megacore kernel split
 *              across both TensorCores; re-adds: a split contraction's
 *              partial sums, one op per result vreg per extra step, which
 *              hold up the MXU), where VPU =
 *              fused element ops + MXU result drain (one op per f32
 *              result vreg per step, one more per extra contraction step)
 *              + operand prologues x their refetches + f16 conversions
 *              (every step converts the f16 blocks it reads or writes:
 *              steps x block, at least one pass) + rows x row_cycles
 *              (rows: iterations of the loop over each block's major,
 *              untiled dims)
 *   dma      = latency (when steps load) + DMA(bytes moved - first loads -
 *              last stores) / (S - 1): the next step's loads and the
 *              previous step's stores, double-buffered behind this
 *              step's compute
 *   DMA(set) = dma_ns(): max(bytes / bw, slowest operand stream), a
 *              stream taking hw_mem_stream_ns(its bytes, its contiguous
 *              runs) = bytes / bw + runs x dma_chunk_ns
 *   bytes    = access_cost() per input and output (refetches, halos,
 *              padding to tiles, blocks straddling tiles, partial sums
 *              read back), and its runs (a block narrow in the minor dims
 *              is many runs)
 *   VMEM     = sum over accesses of 2 x block (1 x when fetched once),
 *              times 3 for a 16-bit windowed-convolution operand (its
 *              unpacked 32-bit staging copy), + an f32 accumulator block
 *              for a split contraction; more than hw->vmem_bytes is
 *              infeasible (TpuGraphs fusion.191: the two configs that
 *              failed to compile need 17.7 and 19.3 MiB, the largest that
 *              ran 14.9 MiB).
 *
 * Averages over steps stand for each step (ragged blocks and steps that
 * fetch nothing are averaged in). Known wrong: steps whose compute and DMA
 * alternate in size (a contraction split whose epilogue lands on the last
 * step) are underestimated; the per-run cost is one constant whatever the
 * run's length and direction (TpuGraphs copies suggest 2 KiB runs cost
 * more than 4 KiB ones, the reduce kernels hide it behind VPU work); loop
 * kernels whose blocks span many outer rows with a partial lane dim
 * (TpuGraphs fusion.232 13x2x4x1, 26x6x4x1, fusion.245 12x6x2x1) and the
 * one-lane-tile matmul block of fusion.261 (32x1) run 1.2-1.8x slower than
 * predicted, as if their DMA and compute did not overlap, for a reason
 * the model does not capture. Constants: hwspecs/<gen>.yaml
 * (overhead.kernel_ns, overhead.step_ns, overhead.row_cycles,
 * hbm.dma_latency_ns, hbm.dma_chunk_ns, hbm.efficiency, vpu.*), with their
 * derivations there. Source of the structure: TPU.md section 2 rules 3-5
 * and section 3 "What the runtimes say" (fewest steps is not fastest:
 * the first load and the last step are not hidden).
 */
static void estimate(const struct sim_plan *p, const struct hw_spec *hw,
		     const struct sim_tile_config *full,
		     struct sim_estimate *out, struct sim_est_detail *dt)
{
	struct sim_est_detail local;
	struct sim_est_detail *x = dt ? dt : &local;
	memset(out, 0, sizeof *out);
	out->feasible = true;
	out->cores = 1;
	out->modelled = p->kind != SIM_PLAN_UNMODELLED;
	out->config = *full;
	double clock_ghz = hw->clock_hz * 1e-9;
	double bpns = hw_mem_bytes_per_ns(hw);
	if (bpns <= 0)
		bpns = 1e-9;
	switch (p->kind) {
	case SIM_PLAN_UNMODELLED:
	case SIM_PLAN_FREE:
		out->bound = HW_UNIT_NONE;
		return;
	case SIM_PLAN_COLLECTIVE: {
		double dma = hw_mem_dma_ns(hw, p->other_bytes, 2);
		out->time_ns = hw->kernel_overhead_ns + fmax(p->ici_ns, dma);
		out->bound = p->ici_ns >= dma ? HW_UNIT_ICI : HW_UNIT_HBM;
		out->bytes_read = p->other_bytes / 2;
		out->bytes_written = p->other_bytes / 2;
		out->dma_cycles = dma * clock_ghz;
		out->overhead_ns = hw->kernel_overhead_ns;
		return;
	}
	default:
		break;
	}

	/* blocks per combined dim */
	for (int i = 0; i < p->n_dims; i++) {
		int src = p->dims[i].src;
		int64_t b = src < p->out.rank ? full->out_bounds[src]
					      : full->kernel_bounds[src - p->out.rank];
		dim_blocks(&p->dims[i], b > 0 ? b : 1, &x->bl[i]);
	}
	int64_t steps = 1, out_steps = 1;
	for (int i = 0; i < p->n_dims; i++) {
		steps *= x->bl[i].nb;
		if (p->dims[i].src < p->out.rank)
			out_steps *= x->bl[i].nb;
	}
	x->steps = steps;
	x->out_steps = out_steps;

	/* memory */
	double rd = p->other_bytes, wr = 0, first = p->other_bytes, last = 0;
	double transfers = p->other_bytes > 0 ? 1 : 0, vmem = 2 * p->other_bytes;
	double runs = transfers; /* contiguous runs (DMA chunks) in all */
	/* the DMA streams of the first loads, the last stores and the
	 * steps between them (dma_add) */
	struct dma_part d_first = {first, hw_mem_stream_ns(hw, first, transfers)};
	struct dma_part d_last = {0, 0}, d_mid = {0, 0}, d_all = d_first;
	double prologue = 0;
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		struct sim_acc_cost *c = &x->ac[a];
		access_cost(ac, x->bl, p->n_dims, c);
		/* double-buffered, unless fetched once (nothing to overlap);
		 * an unpacked MXU operand keeps its staging copy per buffer */
		vmem += (c->transfers > 1 ? 2.0 : 1.0) * c->block *
			(1.0 + ac->stage_ratio);
		/* an f16 block is converted each step it is read from VMEM
		 * (into vregs, or pushed into the MXU): steps x block, at
		 * least once per pass over the array */
		prologue += ac->prologue_cycles * c->refetch +
			    ac->convert_cycles *
				    fmax(c->refetch, (double)steps * c->block /
							     fmax(ac->bytes, 1.0));
		if (ac->in_vmem)
			continue;
		transfers += c->transfers + (c->reread > 0 ? c->transfers : 0);
		double moved = c->total + c->reread;
		double moved_runs = c->chunks + c->reread_chunks;
		runs += moved_runs;
		dma_add(&d_all, hw, moved, moved_runs);
		if (ac->output) {
			wr += c->total;
			rd += c->reread;
			last += c->last;
			dma_add(&d_last, hw, c->last, c->last_chunks);
			dma_add(&d_mid, hw, moved - c->last,
				moved_runs - c->last_chunks);
		} else {
			rd += c->total;
			first += c->block;
			dma_add(&d_first, hw, c->block, c->block_chunks);
			dma_add(&d_mid, hw, moved - c->block,
				moved_runs - c->block_chunks);
		}
	}
	/* compute */
	double mxu = p->has_kernel ? mxu_total_cycles(p, hw, x->bl, steps) : 0.0;
	double acc_cyc = 0, readd_cyc = 0;
	if (p->has_kernel) {
		/* every step drains the output block's f32 results from the
		 * MXU into VMEM (one simple op per result vreg); each extra
		 * contraction step also re-adds them to the resident
		 * accumulator (one more). The re-add is on the MXU's path:
		 * a split contraction's next pass cannot start until the
		 * previous pass's results are out of the MXU result buffers
		 * and folded into the accumulator (read, add, write back),
		 * so those cycles add to the MXU's instead of overlapping
		 * it. Source: TpuGraphs fusion.261 (a weight-gradient matmul,
		 * contraction 32): contraction blocks of 8 run 1.3-1.4x the
		 * MXU time of overlapped passes. Known wrong: ignores the
		 * MXU's own accumulators, which on some generations hold a
		 * split contraction's partial sums. */
		double blk = 1.0;
		for (int i = 0; i < p->out.rank; i++)
			blk *= (double)pad_to(x->bl[p->out_dim[i]].full,
					      p->out.tile[i]);
		double blk_vregs = blk * p->acc_vregs_per_elem;
		acc_cyc = hw_vpu_op_cycles(
			hw, blk_vregs * (double)(2 * steps - out_steps),
			HW_VPU_SIMPLE);
		readd_cyc = hw_vpu_op_cycles(
			hw, blk_vregs * (double)(steps - out_steps),
			HW_VPU_SIMPLE);
		/* one f32 accumulator block stays resident */
		if (steps > out_steps)
			vmem += 4.0 * blk;
	}
	/* the loop over a block's major (untiled) dims: one iteration per
	 * row of tiles, hw->row_overhead_cycles each, ragged blocks whole */
	double rows = (double)steps;
	for (int i = 0; i < p->out.rank; i++)
		if (p->out.tile[i] == 1)
			rows *= (double)x->bl[p->out_dim[i]].full;
	double row_cyc = rows * hw->row_overhead_cycles;
	double vpu = p->vpu_cycles + acc_cyc + prologue + row_cyc;
	double n = (double)steps;
	/* megacore split: the output blocks are dealt out to the cores
	 * (a contraction is not split: its partial sums live in one
	 * core's VMEM), so a kernel uses
	 *   split = min(cores, out_steps)            cores
	 *   S_c   = ceil(out_steps / split) x S / out_steps   steps each
	 * and each core runs its own pipeline of S_c steps. The cores start
	 * together: both first loads (and both last stores) move at once,
	 * sharing the HBM bandwidth, and are not hidden; the rest of the
	 * traffic is spread over the S_c - 1 overlapped steps of either
	 * core. A config with one output block runs on one core. Assumes
	 * the split is even and both cores share one HBM (one DMA
	 * bandwidth); known wrong: an odd block count leaves one core idle
	 * for its last step (modelled: ceil), and operand blocks shared by
	 * both cores are fetched twice (modelled: the first loads double).
	 * Source: megacore (SB: one program on both TensorCores); tpuv4-ops
	 * matmuls over chip.megacore_min_elems run at the speed of few-step
	 * configs only when both cores' pipelines and their unhidden first
	 * loads are counted (see hwspecs/v4.yaml chip.megacore_min_elems). */
	int64_t split = p->cores > 1 ? (out_steps < p->cores ? out_steps
							      : p->cores)
				     : 1;
	double n_core = ceil((double)out_steps / (double)split) *
			(double)(steps / out_steps);
	double compute_step = fmax(mxu + readd_cyc, vpu) / clock_ghz / n;
	/* n - 1 steps overlap the next step's loads (and the previous
	 * step's stores); the last step's compute has nothing to hide. A
	 * step waits out the latency of the loads it needs; stores are
	 * issued and left to finish behind the next steps. Each set of
	 * transfers takes dma_ns(): the operands' streams run concurrently
	 * and share the bandwidth, each paying its own per-run costs. */
	struct dma_part c_first = {d_first.bytes * (double)split, d_first.worst};
	struct dma_part c_last = {d_last.bytes * (double)split, d_last.worst};
	struct dma_part c_mid = {
		fmax(0.0, d_mid.bytes - (double)(split - 1) *
					       (d_first.bytes + d_last.bytes)),
		d_mid.worst};
	double mid_in = rd - first * (double)split > 0
				? rd - first * (double)split
				: 0.0;
	double dma_step = n_core > 1 && c_mid.bytes > 0
				  ? (mid_in > 0 ? hw->dma_latency_ns : 0.0) +
					    dma_ns(hw, &c_mid) / (n_core - 1.0)
				  : 0.0;
	double first_ns = hw->dma_latency_ns + dma_ns(hw, &c_first);
	double last_ns = last > 0 ? hw->dma_latency_ns + dma_ns(hw, &c_last)
				  : 0.0;
	double pipe = (n_core - 1.0) * (fmax(compute_step, dma_step) +
					hw->step_overhead_ns) +
		      compute_step + hw->step_overhead_ns;
	double t = hw->kernel_overhead_ns + first_ns + pipe + last_ns;

	out->time_ns = t;
	out->steps = steps;
	out->mxu_cycles = mxu;
	out->vpu_cycles = vpu;
	double dma_busy = dma_ns(hw, &d_all); /* the DMAs alone, ns */
	out->dma_cycles = dma_busy * clock_ghz;
	out->overhead_ns = hw->kernel_overhead_ns + n * hw->step_overhead_ns;
	out->vmem_bytes = vmem;
	out->feasible = hw_mem_fits_vmem(hw, vmem);
	out->flops = p->flops;
	out->bytes_read = rd;
	out->bytes_written = wr;
	double mxu_ns = mxu / clock_ghz, vpu_ns = vpu / clock_ghz;
	/* the unit with the most busy time; DMA latencies count as
	 * overhead, with the launch and per-step costs */
	double ovh = out->overhead_ns + transfers * hw->dma_latency_ns;
	out->bound = HW_UNIT_MXU;
	double best = mxu_ns;
	if (vpu_ns > best) {
		best = vpu_ns;
		out->bound = HW_UNIT_VPU;
	}
	if (dma_busy > best) {
		best = dma_busy;
		out->bound = HW_UNIT_HBM;
	}
	if (ovh > best)
		out->bound = HW_UNIT_OVERHEAD;

	x->mxu_cycles = mxu;
	x->vpu_cycles = p->vpu_cycles;
	x->acc_cycles = acc_cyc;
	x->readd_cycles = readd_cyc;
	x->prologue_cycles = prologue;
	x->first_bytes = first;
	x->last_bytes = last;
	x->transfers = transfers;
	x->chunks = runs;
	x->rows = rows;
	x->compute_step_ns = compute_step;
	x->dma_step_ns = dma_step;
	x->step_ns = hw->step_overhead_ns;
	x->first_ns = first_ns;
	x->last_ns = last_ns;
	x->pipeline_ns = pipe;
	x->split = split;
	x->core_steps = n_core;
	out->cores = (int)split;
	out->mxu_util = hw_mxu_utilisation(hw, p->mxu_macs, p->mxu_passes,
					   out->cores, t);
}

void sim_plan_estimate(const struct sim_plan *p, const struct hw_spec *hw,
		       const struct sim_tile_config *full,
		       struct sim_estimate *out)
{
	estimate(p, hw, full, out, NULL);
}

void sim_plan_estimate_detail(const struct sim_plan *p,
			      const struct hw_spec *hw,
			      const struct sim_tile_config *full,
			      struct sim_estimate *out,
			      struct sim_est_detail *detail)
{
	memset(detail, 0, sizeof *detail);
	estimate(p, hw, full, out, detail);
}

/* ---- sim.h entry points ---- */

enum ts_status sim_kernel_estimate(const struct sim_kernel *k,
				   const struct hw_spec *hw,
				   const struct sim_tile_config *cfg,
				   struct sim_estimate *out, struct ts_diag *d)
{
	struct sim_plan p;
	enum ts_status st = sim_plan_build(k, hw, &p, d);
	if (st == TS_ERR_UNSUPPORTED_OP) {
		/* No grid for this form: the roofline (max of the units' busy
		 * times + the kernel overhead) stands in, marked, rather than
		 * failing the whole program; d keeps the reason. */
		struct ts_diag rd = {0};
		if (sim_kernel_roofline(k, hw, out, &rd) != TS_OK)
			return st;
		out->untiled = true;
		return TS_OK;
	}
	if (st != TS_OK)
		return st;
	struct sim_tile_config full;
	st = sim_plan_check(&p, cfg, &full, d);
	if (st != TS_OK)
		return st;
	sim_plan_estimate(&p, hw, &full, out);
	return TS_OK;
}
