/*
 * plan.c: the first half of the analytic model (model.c has the second):
 * sim_plan_build() works out, once per kernel, the combined tile grid and
 * how every input, result, MXU and VPU follow it (the VPU work of the
 * members in plan_vpu.c), so that sim_plan_estimate() can cost any config
 * of it in closed form.
 * Units: ns, core cycles (hw->clock_hz), bytes padded to layout tiles.
 * Governing notes: docs/ARCHITECTURE.md "Kernels, tiles and the analytic
 * model", docs/TPU.md sections 2 and 3; unit formulas in hw/hw_*.c.
 */
#include "kernels_int.h"
#include "model.h"
#include "plan_int.h"

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
 * reshapes by equal leading and trailing dims, a gather's batch dims back
 * to its indices, a scatter's updates to its indices.
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

/* Maps between shapes of different rank (reshape, bitcast): when the two
 * differ only by dims of size 1 (their other dims equal, in order: a
 * squeeze or an added unit dim anywhere, [2048,2816,1] <-> [1,2048,2816]),
 * those dims paired one to one; else dims of equal size paired from the
 * front, then from the back, then the first unequal pair proportionally;
 * the rest follow nothing. */
static void map_reshape(const struct ir_shape *from, const struct dmap *fm,
			const struct ir_shape *to, struct dmap *out)
{
	map_none(out);
	int a = 0, b = 0;
	for (;;) {
		while (a < from->rank && from->dims[a] == 1)
			a++;
		while (b < to->rank && to->dims[b] == 1)
			b++;
		if (a == from->rank || b == to->rank ||
		    from->dims[a] != to->dims[b])
			break;
		a++;
		b++;
	}
	if (a == from->rank && b == to->rank) {
		for (a = b = 0;; a++, b++) {
			while (a < from->rank && from->dims[a] == 1)
				a++;
			while (b < to->rank && to->dims[b] == 1)
				b++;
			if (a == from->rank || b == to->rank ||
			    b >= SIM_MAX_GRID || a >= SIM_MAX_GRID)
				return;
			out->src[b] = fm->src[a];
			out->win[b] = fm->win[a];
		}
	}
	int i = 0;
	while (i < from->rank && i < to->rank &&
	       from->dims[i] == to->dims[i]) {
		out->src[i] = fm->src[i];
		out->win[i] = fm->win[i];
		i++;
	}
	a = from->rank - 1;
	b = to->rank - 1;
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

/* A bitcast is physical: with layouts on both sides it reinterprets the
 * bytes in their major-to-minor order, so its dims pair by physical
 * position (map_reshape on the dims in that order). A bitcast that permutes
 * the logical dims, a transpose its layouts absorb
 * ([12,4096,8,1280]{3,1,2,0} -> [8,12,1280,4096]{2,3,0,1}: MaxText's MoE
 * expert matmul), pairs each dim with the one it is in memory. Without
 * layouts (a pre-optimisation module) it is a reshape. */
static void map_bitcast(const struct ir_shape *from, const struct dmap *fm,
			const struct ir_shape *to, struct dmap *out)
{
	if (!from->layout.present || !to->layout.present ||
	    from->rank > SIM_MAX_GRID || to->rank > SIM_MAX_GRID) {
		map_reshape(from, fm, to, out);
		return;
	}
	int fo[SIM_MAX_GRID], too[SIM_MAX_GRID];
	int64_t fd[SIM_MAX_GRID], td[SIM_MAX_GRID];
	ir_shape_major_to_minor(from, fo);
	ir_shape_major_to_minor(to, too);
	struct ir_shape pf = {.rank = from->rank, .dims = fd};
	struct ir_shape pt = {.rank = to->rank, .dims = td};
	struct dmap pfm, pout;
	map_none(&pfm);
	for (int i = 0; i < from->rank; i++) {
		fd[i] = from->dims[fo[i]];
		pfm.src[i] = fm->src[fo[i]];
		pfm.win[i] = fm->win[fo[i]];
	}
	for (int i = 0; i < to->rank; i++)
		td[i] = to->dims[too[i]];
	map_reshape(&pf, &pfm, &pt, &pout);
	map_none(out);
	for (int i = 0; i < to->rank; i++) {
		out->src[too[i]] = pout.src[i];
		out->win[too[i]] = pout.win[i];
	}
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

/* The map of a gather's or scatter's indices (idx_rank dims, index
 * vector dim ivd) from m, the map of the value whose dims other than
 * skip (of its rank) are the batch dims: those in order are the indices'
 * dims other than ivd, in order. */
static void indices_map(int idx_rank, int64_t ivd, const struct ir_ints *skip,
			int rank, const struct dmap *m, struct dmap *out)
{
	map_none(out);
	int o = 0;
	for (int i = 0; i < idx_rank && i < SIM_MAX_GRID; i++) {
		if (i == ivd)
			continue;
		while (o < rank && sim_ints_has(skip, o))
			o++;
		if (o < rank && o < SIM_MAX_GRID)
			out->src[i] = m->src[o++];
	}
}

static bool conv_batch_dim(const struct ir_instr *t, int s);

/* Operand opi's map of convolution t from its result's map m, where t is
 * not the kernel's target (the tile space) but a member beside it (a
 * nested fusion's QK^T beside its softmax: data/compiled's v4 and later
 * attention fusions): the lhs batch dim follows the result's batch dim,
 * the rhs output feature its feature dim, and a spatial dim that is a
 * batch written as a window (conv_batch_dim) its output dim, on each side
 * where it has the output dim's size. The contracted dims (the features,
 * a real window) follow nothing: each block reads them whole. */
static bool conv_operand_map(const struct ir_instr *t, const struct dmap *m,
			     int opi, struct dmap *out)
{
	const struct ir_conv_dims *cd = t->attrs.conv;
	const struct ir_shape *os = &t->operands[opi]->shape;
	map_none(out);
	int from = opi == 0 ? cd->lhs_batch : cd->rhs_out;
	int to = opi == 0 ? cd->out_batch : cd->out_feature;
	if (from >= 0 && from < os->rank && to >= 0 && to < t->shape.rank)
		out->src[from] = m->src[to];
	for (int s = 0; s < cd->n_spatial; s++) {
		int d = opi == 0 ? cd->lhs_spatial[s] : cd->rhs_spatial[s];
		int o = cd->out_spatial[s];
		if (conv_batch_dim(t, s) && d >= 0 && d < os->rank && o >= 0 &&
		    o < t->shape.rank && os->dims[d] == t->shape.dims[o])
			out->src[d] = m->src[o];
	}
	return true;
}

/* Operand opi's map from instruction in's map m (backward). */
static bool backward_rule(const struct ir_instr *in, const struct dmap *m,
			  int opi, struct dmap *out)
{
	const struct ir_instr *op = in->operands[opi];
	const struct ir_gather_dims *gd = in->attrs.gather;
	if (in->op == IR_OP_GATHER && opi == 1 && gd && sim_is_array(op) &&
	    sim_is_array(in)) {
		/* a gather's indices follow its batch dims (the result's
		 * dims other than offset_dims) */
		indices_map(op->shape.rank, gd->index_vector_dim,
			    &gd->offset_dims, in->shape.rank, m, out);
		return true;
	}
	if (in->op == IR_OP_CONVOLUTION && opi < 2 && in->attrs.conv &&
	    sim_is_array(op) && sim_is_array(in))
		return conv_operand_map(in, m, opi, out);
	if (!sim_is_array(op) || !sim_is_array(in) || map_opaque(in->op))
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
			if (!sim_ints_has(dims, i) && o < in->shape.rank)
				out->src[i] = m->src[o++];
		return true;
	}
	case IR_OP_FUSION:
		if (in->n_called < 1)
			return false;
		return comp_backward(in->called[0], m, opi, out);
	case IR_OP_BITCAST:
		map_bitcast(&in->shape, m, &op->shape, out);
		return true;
	case IR_OP_RESHAPE:
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

/* The map of reduce r's result(s) from its input operand opi's map om:
 * the input's dims less the reduced ones, in order. A variadic reduce's
 * results (a tuple: argmax's values and indices) all share it. */
static bool reduce_out_map(const struct ir_instr *r, int opi,
			   const struct dmap *om, struct dmap *out)
{
	const struct ir_ints *dims = r->attrs.dimensions;
	if (opi >= r->n_operands / 2 || !dims || !sim_is_array(r->operands[opi]))
		return false;
	map_none(out);
	int o = 0;
	for (int i = 0; i < r->operands[opi]->shape.rank; i++)
		if (!sim_ints_has(dims, i) && o < SIM_MAX_GRID)
			out->src[o++] = om->src[i];
	return true;
}

/* in's map from operand opi's map om (forward). */
static bool forward_rule(const struct ir_instr *in, int opi,
			 const struct dmap *om, struct dmap *out)
{
	const struct ir_instr *op = in->operands[opi];
	if (!sim_is_array(op) || !sim_is_array(in) || op->shape.rank == 0 ||
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
	case IR_OP_REDUCE:
		return reduce_out_map(in, opi, om, out);
	case IR_OP_BITCAST:
		map_bitcast(&op->shape, om, &in->shape, out);
		return true;
	case IR_OP_RESHAPE:
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
	struct ts_ptrmap pos;              /* comp's instruction at a member's
	                                      index -> the member's position
	                                      (the last, if listed twice) */
	struct sim_member_memo *memo;      /* or the same, marked in the
	                                      kernel's memo (pos unused) */
	struct ts_ptrmap in;               /* input -> its first position */
	struct dmap *mm;                   /* per member */
	struct dmap *im;                   /* per input */
};

/* The position among the kernel's members (those of comp) of the member
 * at v's place in comp, or -1. By place, not by pointer: a lowered stand-in
 * (sim/kernels.c: a library call as a dot, a copy-start as a copy) is a
 * member in the place of the instruction it stands for. */
static int member_pos(const struct prop *pr, const struct ir_instr *v)
{
	if (!pr->comp || v->parent != pr->comp || v->index < 0 ||
	    v->index >= pr->comp->n_instrs)
		return -1;
	if (pr->memo)
		return sim_member_memo_place(pr->memo, v->index);
	return ts_ptrmap_get(&pr->pos, pr->comp->instrs[v->index]);
}

/* The map slot of a value: a member's, or an input's (a fusion parameter
 * stands for its input). */
static struct dmap *slot(struct prop *pr, const struct ir_instr *v)
{
	int m = member_pos(pr, v);
	if (m >= 0)
		return &pr->mm[m];
	int i = ts_ptrmap_get(&pr->in, v);
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

/* One pass in schedule order; whether it mapped a member. */
static bool prop_forward(struct prop *pr)
{
	bool grew = false;
	for (int i = 0; i < pr->k->n_members; i++) {
		const struct ir_instr *in = pr->k->members[i];
		if (pr->mm[i].set || !sim_is_array(in))
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
			grew = true;
		}
	}
	return grew;
}

/* One pass against schedule order; whether it mapped a member or input. */
static bool prop_backward(struct prop *pr)
{
	bool grew = false;
	for (int i = pr->k->n_members - 1; i >= 0; i--) {
		const struct ir_instr *in = pr->k->members[i];
		if (!pr->mm[i].set)
			continue;
		for (int j = 0; j < in->n_operands; j++) {
			struct dmap *om = slot(pr, in->operands[j]);
			if (!om || om->set)
				continue;
			struct dmap t;
			if (backward_rule(in, &pr->mm[i], j, &t)) {
				set_slot(pr, in->operands[j], &t);
				grew = true;
			}
		}
	}
	return grew;
}

/* Seeds the target: the space is the identity; a convolution's or dot's
 * operands get their special maps (input features and rhs dims follow the
 * kernel space KOFF + j, convolution spatial dims get windows). */
/*
 * Is spatial dim s of convolution t a batch dim written as a window? XLA's
 * TPU compiler writes a dot's batch dims (attention's heads) as spatial
 * dims of a convolution ("convolution-base-dilated"): B input positions,
 * a window of B taps, base dilation B and stride B - 1, no padding, B
 * outputs. Output o then meets input position o with tap o only (x = o (B
 * - 1) + k is a multiple of B only for k = o), so each output position
 * has a weight tile of its own and reads one input position: a batch
 * (SIM_ROLE_BATCH, shared by the kernel and the output), not a window.
 * The other form (MaxText's projections on v4 and later): one input
 * position, a window of B taps padded by B - 1 on both sides, stride 1,
 * B outputs, the taps reversed or not: output o meets the one input
 * position with tap B - 1 - o only (reversed: tap o), so again each
 * output position has a weight tile of its own; the input dim, of size 1,
 * follows nothing.
 */
static bool conv_batch_dim(const struct ir_instr *t, int s)
{
	const struct ir_conv_dims *cd = t->attrs.conv;
	const struct ir_window *w = t->attrs.window;
	if (t->op != IR_OP_CONVOLUTION || !cd || !w || s < 0 ||
	    s >= cd->n_spatial || s >= w->n || t->n_operands < 2)
		return false;
	const struct ir_window_dim *wd = &w->dims[s];
	int64_t b = wd->size;
	int ld = cd->lhs_spatial[s], rd = cd->rhs_spatial[s],
	    od = cd->out_spatial[s];
	const struct ir_shape *lhs = &t->operands[0]->shape,
			     *rhs = &t->operands[1]->shape;
	if (b <= 1 || wd->rhs_dilate != 1 || ld < 0 || ld >= lhs->rank ||
	    rd < 0 || rd >= rhs->rank || od < 0 || od >= t->shape.rank ||
	    rhs->dims[rd] != b || t->shape.dims[od] != b)
		return false;
	bool dilated = wd->lhs_dilate == b && wd->stride == b - 1 &&
		       wd->pad_lo == 0 && wd->pad_hi == 0 && !wd->reversal &&
		       lhs->dims[ld] == b;
	bool padded = wd->lhs_dilate == 1 && wd->stride == 1 &&
		      wd->pad_lo == b - 1 && wd->pad_hi == b - 1 &&
		      lhs->dims[ld] == 1;
	return dilated || padded;
}

static void prop_seed(struct prop *pr, const struct ir_instr *t)
{
	struct dmap m;
	if (t->op == IR_OP_REDUCE) {
		const struct ir_shape *s = sim_tile_space_shape(t);
		map_identity(&m, s->rank);
		for (int j = 0; j < t->n_operands / 2; j++)
			if (sim_is_array(t->operands[j]) &&
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
			bool batch = conv_batch_dim(t, s);
			if (batch && t->operands[0]->shape.dims[ld] == 1)
				continue; /* the padded form's one position */
			l.src[ld] = (int8_t)cd->out_spatial[s];
			if (!batch) /* a batch: no window */
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
			if (!sim_ints_has(&dd->lhs_batch, i) &&
			    !sim_ints_has(&dd->lhs_contracting, i))
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

/* A variadic reduce's inputs tiled by one of them (the target, the
 * reduce's space): the others of the same dims follow the space as it
 * does (the reduce walks them in step), reduced dims included. */
static void seed_reduce_siblings(struct prop *pr, const struct ir_instr *t)
{
	struct dmap m;
	map_identity(&m, t->shape.rank);
	for (int i = 0; i < pr->k->n_members; i++) {
		const struct ir_instr *r = pr->k->members[i];
		int n_in = r->op == IR_OP_REDUCE ? r->n_operands / 2 : 0;
		bool reads_t = false;
		for (int j = 0; j < n_in; j++)
			reads_t |= r->operands[j] == t;
		for (int j = 0; reads_t && j < n_in; j++)
			if (r->operands[j] != t && sim_is_array(r->operands[j]) &&
			    ir_shape_equal_dims(&r->operands[j]->shape, &t->shape))
				set_slot(pr, r->operands[j], &m);
	}
}

/* In-place updates of several stacks at the same offsets (a multi-output
 * fusion of dynamic-update-slices: sim/grouping.c merge_updates), tiled
 * by one's update (the target): the others' updates of the same dims
 * follow the space as it does (they write the same window of each). */
static void seed_update_siblings(struct prop *pr, const struct ir_instr *ip,
				 const struct ir_instr *t)
{
	const struct ir_instr *roots[SIM_MAX_ROOTS];
	int n = sim_kernel_roots(pr->k, roots, SIM_MAX_ROOTS);
	struct dmap m;
	map_identity(&m, t->shape.rank);
	for (int i = 0; i < n; i++) {
		const struct ir_instr *r = roots[i];
		bool same = r != ip && r->op == IR_OP_DYNAMIC_UPDATE_SLICE &&
			    r->n_operands == ip->n_operands &&
			    sim_is_array(r->operands[1]) &&
			    ir_shape_equal_dims(&r->operands[1]->shape, &t->shape);
		for (int j = 2; same && j < r->n_operands; j++)
			same = r->operands[j] == ip->operands[j];
		if (same)
			set_slot(pr, r->operands[1], &m);
	}
}

/* An in-place scatter tiled by its updates (the target, identity map):
 * its indices follow the updates' scatter dims (those not in
 * update_window_dims, in order), one per indices dim other than
 * index_vector_dim, in order. */
static void seed_scatter_indices(struct prop *pr, const struct ir_instr *sc)
{
	const struct ir_scatter_dims *sd = sc->attrs.scatter;
	int n_in = (sc->n_operands - 1) / 2;
	if (!sd || n_in < 1 || !sim_is_array(sc->operands[n_in]))
		return;
	const struct ir_instr *idx = sc->operands[n_in];
	const struct ir_shape *u = &sc->operands[n_in + 1]->shape;
	struct dmap um, m;
	map_identity(&um, u->rank);
	indices_map(idx->shape.rank, sd->index_vector_dim,
		    &sd->update_window_dims, u->rank, &um, &m);
	set_slot(pr, idx, &m);
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

/* Is v a value kernel k writes (sim_kernel_roots)? */
static bool is_root(const struct sim_kernel *k, const struct ir_instr *v)
{
	const struct ir_instr *roots[SIM_MAX_ROOTS];
	int n = sim_kernel_roots(k, roots, SIM_MAX_ROOTS);
	for (int i = 0; i < n; i++)
		if (roots[i] == v)
			return true;
	return false;
}

/* The in-place op v is (sim_inplace_update) or computes
 * (sim_nested_inplace), or NULL. */
static const struct ir_instr *inplace_op(const struct ir_instr *v)
{
	const struct ir_instr *u;
	return sim_inplace_update(v) ? v : sim_nested_inplace(v, &u);
}

/* The update that in-place v (inplace_op) writes, as its kernel sees it:
 * through a nested fusion, the operand that passes it in. */
static const struct ir_instr *inplace_update(const struct ir_instr *v)
{
	const struct ir_instr *u = sim_inplace_update(v);
	if (!u)
		sim_nested_inplace(v, &u);
	return u;
}

/* Whether v is a root of k that updates its buffer in place (a
 * dynamic-update-slice or scatter, or a nested fusion computing one). */
static bool in_place_root(const struct sim_kernel *k, const struct ir_instr *v)
{
	return inplace_op(v) && is_root(k, v);
}

/* use[i]: the one member that reads input i (a fusion's parameter
 * standing for it), if it reads it once and as operand 0; else NULL. One
 * pass over the members' operands; false when memory runs out. */
static bool only_uses(const struct sim_kernel *k,
		      const struct ir_instr **use)
{
	bool fused = k->instr && k->instr->op == IR_OP_FUSION;
	const struct ir_computation *c =
		fused && k->instr->n_called > 0 ? k->instr->called[0] : NULL;
	int n = k->n_inputs;
	/* the value that stands for input i, and the first input it stands
	 * for (two inputs given the same value have the same uses) */
	const struct ir_instr **val = ts_calloc((size_t)n + 1, sizeof *val);
	bool *other = ts_calloc((size_t)n + 1, sizeof *other);
	struct ts_ptrmap first = {0};
	bool ok = val && other && ts_ptrmap_init(&first, (size_t)n);
	for (int i = n - 1; ok && i >= 0; i--) {
		val[i] = !fused ? k->inputs[i]
			 : c && i < c->n_params ? c->params[i]
						: NULL;
		if (val[i])
			ts_ptrmap_set(&first, val[i], i);
	}
	for (int i = 0; ok && i < n; i++)
		use[i] = NULL;
	for (int j = 0; ok && j < k->n_members; j++) {
		const struct ir_instr *u = k->members[j];
		for (int o = 0; o < u->n_operands; o++) {
			int i = ts_ptrmap_get(&first, u->operands[o]);
			if (i < 0)
				continue;
			/* operand 0 of its one use (a slice's array), or any
			 * operand of a nested fusion (nested_slice_read) */
			if (use[i] || (o != 0 && u->op != IR_OP_FUSION))
				other[i] = true; /* read otherwise too */
			else
				use[i] = u;
		}
	}
	for (int i = 0; ok && i < n; i++) {
		int f = val[i] ? ts_ptrmap_get(&first, val[i]) : -1;
		use[i] = f >= 0 && !other[f] ? use[f] : NULL;
	}
	ts_free(val);
	ts_free(other);
	ts_ptrmap_free(&first);
	return ok;
}

/*
 * The slice an input is read through, if that is its only use (only_uses):
 * a dynamic-slice, a slice with unit strides or a gather. The kernel's DMA
 * then moves the slice's window, not the array (XLA's cost rule for these
 * uses, docs/HLO.md 3.1): a layer's weights taken from the stacked
 * weights of a scanned model read one layer, an embedding lookup the rows
 * it gathers. Known wrong: a gather's rows are costed as one block shaped
 * as its result (each row is its own DMA run on the device). NULL
 * otherwise (the input is read whole as it follows the grid).
 */
static const struct ir_instr *slice_read(const struct ir_instr *use,
					 const struct ir_instr *v)
{
	if (!use || !sim_is_array(use))
		return NULL;
	if (use->op == IR_OP_GATHER) /* the gathered rows, shaped as its result */
		return use;
	if (use->shape.rank != v->shape.rank)
		return NULL;
	if (use->op == IR_OP_DYNAMIC_SLICE)
		return use;
	if (use->op != IR_OP_SLICE || !use->attrs.slice)
		return NULL;
	for (int d = 0; d < use->attrs.slice->n; d++)
		if (use->attrs.slice->dims[d].stride != 1)
			return NULL;
	return use;
}

/*
 * The windows an input is read through when it has several uses and each
 * is a slice_read of it (a slice or dynamic-slice, not a gather: two
 * layers' windows of a stacked array, the first and the last), into
 * out[0 .. max): how many, or 0 when some use is another. The kernel's
 * DMAs then move those windows, not the array (XLA's cost rule for a
 * sliced use, as for one), unless their padded tiles add up to the
 * array's or more (windows of a few lanes each share the array's tiles:
 * the array is read once, as it follows the grid). More than max
 * windows: 0 (the array, read whole). Known wrong: windows that overlap
 * but add up to less are each counted.
 */
static int slice_reads(const struct sim_kernel *k, const struct ir_instr *v,
		       const struct ir_instr **out, int max)
{
	int n = 0;
	for (int j = 0; j < k->n_members; j++) {
		const struct ir_instr *u = k->members[j];
		for (int o = 0; o < u->n_operands; o++) {
			if (u->operands[o] != v)
				continue;
			const struct ir_instr *sl =
				o == 0 ? slice_read(u, v) : NULL;
			if (!sl || sl->op == IR_OP_GATHER || n == max)
				return 0;
			out[n++] = sl;
		}
	}
	return n;
}

/*
 * The windows value p of computation c is read through at its use u
 * (operand at), into out[0 .. max): a slice_read of p of p's rank, or
 * those of a pad of p read only through such slices (a windowed einsum
 * pads the layer's activations, then takes a window of the pad per
 * direction: the windows are read, the padding in them counted as read,
 * known wrong high by it; cost.c's rule for a pad), or of a copy of p
 * or a nested fusion relaying p out (sim_root_relays), whose elements
 * are made as the slices take them (v7/decoder_s_noremat's compiled
 * fusion.394 copies a stack of two layers into another tiling and takes
 * one). How many, or -1 when u reads p otherwise (or past max windows).
 */
static int windows_of(const struct ir_computation *c, const struct ir_instr *u,
		      const struct ir_instr *p, int at,
		      const struct ir_instr **out, int max)
{
	const struct ir_computation *f =
		u->op == IR_OP_FUSION && u->n_called == 1 ? u->called[0] : NULL;
	bool relaid = f && at < f->n_params &&
		      sim_root_relays(f, f->params[at], true);
	if (at != 0 && !relaid)
		return -1;
	if (u->op == IR_OP_PAD || u->op == IR_OP_COPY || relaid) {
		int n = 0;
		for (int i = 0; i < c->n_instrs; i++)
			for (int j = 0; j < c->instrs[i]->n_operands; j++) {
				if (c->instrs[i]->operands[j] != u)
					continue;
				int w = windows_of(c, c->instrs[i], u, j,
						   out + n, max - n);
				if (w < 0)
					return -1;
				n += w;
			}
		return n > 0 ? n : -1;
	}
	const struct ir_instr *sl = slice_read(u, p);
	if (!sl || sl->op == IR_OP_GATHER || sl->shape.rank != p->shape.rank ||
	    max < 1)
		return -1;
	out[0] = sl;
	return 1;
}

/*
 * slice_reads through a nested fusion: when value v's one use is a nested
 * fusion (as any of its operands, only_uses) whose parameter for it is
 * read only through windows (windows_of, possibly nested again), those
 * windows, in the nested computation, into out[0 .. max): how many, or 0
 * (read whole). XLA's scan over layers takes a layer's weights, or the
 * layer's saved activations, from the stacked array in a nested kLoop
 * fusion (dynamic-slice, then a bitcast squeezing the layer dim) feeding
 * the dot; a windowed einsum takes two windows of its operand, one per
 * direction round the ring. Known wrong: a pad in the kernel's own
 * computation hides its windows here (the operand is read whole), not
 * from the roofline (cost.c).
 */
static int nested_slice_reads(const struct ir_instr *use,
			      const struct ir_instr *v,
			      const struct ir_instr **out, int max, int depth)
{
	if (!use || use->op != IR_OP_FUSION || use->n_called < 1 ||
	    !use->called[0] || depth > 4)
		return 0;
	const struct ir_computation *c = use->called[0];
	int o = 0;
	while (o < use->n_operands && use->operands[o] != v)
		o++;
	const struct ir_instr *p = o < c->n_params ? c->params[o] : NULL;
	const struct ir_instr *one = NULL; /* p's first use */
	int n = 0, uses = 0;
	bool whole = false; /* some use reads p otherwise */
	for (int i = 0; p && i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		for (int j = 0; j < u->n_operands; j++) {
			if (u->operands[j] != p)
				continue;
			one = uses++ ? one : u;
			int w = whole ? -1 : windows_of(c, u, p, j, out + n, max - n);
			whole = w < 0;
			n += whole ? 0 : w;
		}
	}
	if (whole && uses == 1 && one->op == IR_OP_FUSION)
		return nested_slice_reads(one, p, out, max, depth + 1);
	return whole ? 0 : n;
}

/* The buffer root i of n that value v writes: the fusion's result (the
 * element of its tuple), laid out as the fusion says, where its dims are
 * v's; else v's shape. The same for a valid module (XLA's verifier wants
 * the fused root's shape the fusion's); the fusion's own is what the
 * roofline counts (cost.c). */
static const struct ir_shape *written(const struct sim_kernel *k, int i,
				      int n, const struct ir_instr *v)
{
	const struct ir_shape *s =
		!k->instr || k->instr->op != IR_OP_FUSION ? NULL
		: k->instr->shape.type != IR_TYPE_TUPLE
			? (n == 1 ? &k->instr->shape : NULL)
		: k->instr->shape.n_elems == n ? &k->instr->shape.elems[i]
					       : NULL;
	return s && s->type != IR_TYPE_TUPLE && ir_shape_equal_dims(s, &v->shape)
		       ? s
		       : &v->shape;
}

/* What stands for input i in the kernel's computation comp: a fusion's
 * parameter i, or the input itself. */
static const struct ir_instr *stand_in(const struct sim_kernel *k,
				       const struct ir_computation *comp, int i)
{
	return k->instr && k->instr->op == IR_OP_FUSION && comp &&
			       i < comp->n_params
		       ? comp->params[i]
		       : k->inputs[i];
}

/* Whether two accesses cost the same under every config in estimate()'s
 * access_cost: the same dims and how they follow the grid, element size,
 * padding and direction. */
static bool same_form(const struct sim_plan_access *a,
		      const struct sim_plan_access *b)
{
	return a->rank == b->rank && a->follows == b->follows &&
	       a->output == b->output && a->elem_bytes == b->elem_bytes &&
	       a->pad_factor == b->pad_factor &&
	       memcmp(a->dims, b->dims, (size_t)a->rank * sizeof *a->dims) == 0;
}

/* Adds one access for an array value with map m (NULL: follows nothing). */
static enum ts_status add_access(struct sim_plan *p, const struct ir_instr *v,
				 const struct ir_shape *s, const struct dmap *m,
				 bool output, int input,
				 const struct ir_instr *target,
				 struct ts_diag *d)
{
	struct sim_tgrid g;
	if (s->type == IR_TYPE_TUPLE || s->rank > SIM_MAX_GRID ||
	    sim_tile_grid(s, &g, d) != TS_OK) {
		p->other_bytes += ir_shape_padded_bytes(s);
		return TS_OK;
	}
	if (p->n_access == p->cap_access) {
		int cap = p->cap_access ? 2 * p->cap_access : 8;
		struct sim_plan_access *grown =
			ts_realloc(p->acc, (size_t)cap * sizeof *grown);
		if (!grown) {
			ts_diag_set(d, NULL, 0, 0,
				    "out of memory planning %s (%d operands)",
				    v->name ? v->name : "?", p->n_access + 1);
			return TS_ERR_NOMEM;
		}
		p->acc = grown;
		p->cap_access = cap;
	}
	struct sim_plan_access *a = &p->acc[p->n_access++];
	memset(a, 0, sizeof *a);
	a->name = v->name;
	a->input = input;
	a->rank = g.rank;
	a->elem_bytes = g.bits / 8.0;
	a->pad_factor = g.pad_factor;
	a->output = output;
	a->in_vmem = sim_on_chip(&v->shape); /* a slice of an HBM array read
					      into VMEM reads HBM */
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

/* Members that feed the target's operand `side` (0 lhs, 1 rhs) without
 * passing through the target: their VPU work repeats with every fetch of
 * that operand (a prologue). Marks them in mark[] (member positions). */
static void mark_feeders(const struct prop *pr, const struct ir_instr *v,
			 uint8_t *mark, uint8_t bit, int depth)
{
	int m = depth > 64 ? -1 : member_pos(pr, v);
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

/* A shape written with TPU tiles (T(...)): only layout assignment writes
 * them, so the module it is in has been through it. */
static bool laid_out(const struct ir_shape *s)
{
	return s->layout.n_tiles > 0;
}

bool sim_kernel_free(const struct sim_kernel *k)
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
		case IR_OP_COPY:
		case IR_OP_RESHAPE:
		case IR_OP_TRANSPOSE:
			/* a copy-start's stand-in (sim/kernels.c) moves its
			 * bytes between memory spaces whatever the layouts; a
			 * relayout's always changes them; a copy that layout
			 * assignment left (or copy insertion added after it)
			 * runs: XLA elides a layout-preserving copy only
			 * before (AlgebraicSimplifier::HandleCopy) */
			if (in->n_operands == 1 && in != k->lowered &&
			    !(in->op == IR_OP_COPY && laid_out(&in->shape)) &&
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

/* The element type of a collective's result: its first array leaf (a
 * multi-operand collective or an async start returns a tuple). */
static enum ir_type collective_type(const struct ir_shape *s)
{
	while (s->type == IR_TYPE_TUPLE && s->n_elems > 0)
		s = &s->elems[0];
	return s->type == IR_TYPE_TUPLE ? IR_TYPE_F32 : s->type;
}

/* Is r (a fused collective's root) a dynamic slice, seen through
 * bitcasts, reshapes and copies, or a tuple of them: each device keeping
 * its shard? */
static bool keeps_shard(const struct ir_instr *r, int depth)
{
	while (r && r->n_operands == 1 &&
	       (r->op == IR_OP_BITCAST || r->op == IR_OP_RESHAPE ||
		r->op == IR_OP_COPY))
		r = r->operands[0];
	if (!r || depth > 8)
		return false;
	if (r->op != IR_OP_TUPLE)
		return r->op == IR_OP_DYNAMIC_SLICE;
	for (int j = 0; j < r->n_operands; j++)
		if (!keeps_shard(r->operands[j], depth + 1))
			return false;
	return r->n_operands > 0;
}

/* The collective op's algorithm class. */
static enum hw_collective coll_kind(enum ir_op op)
{
	switch (op) {
	case IR_OP_ALL_REDUCE:
	case IR_OP_ALL_REDUCE_START:
	case IR_OP_COLLECTIVE_REDUCE:
		return HW_COLL_ALL_REDUCE;
	case IR_OP_ALL_GATHER:
	case IR_OP_ALL_GATHER_START:
		return HW_COLL_ALL_GATHER;
	case IR_OP_REDUCE_SCATTER:
		return HW_COLL_REDUCE_SCATTER;
	case IR_OP_ALL_TO_ALL:
	case IR_OP_RAGGED_ALL_TO_ALL:
		return HW_COLL_ALL_TO_ALL;
	default: /* collective-permute, broadcast, send/recv: one hop */
		return HW_COLL_PERMUTE;
	}
}

void sim_side_collective_of(const struct ir_instr *coll, enum hw_collective *c,
			    double *bytes, int *bits)
{
	*c = coll_kind(coll->op == IR_OP_ASYNC_START ? coll->wrapped_op
						     : coll->op);
	*bytes = sim_collective_payload(coll);
	*bits = ir_type_bits(collective_type(&coll->shape));
}

/* Is v, of the fused computation c of an async collective fusion with
 * collective coll (sim_side_collective), on the collective's side rather
 * than the tiled loop's: the collective itself, or a parameter only the
 * collective or the root tuple reads (moved over the ICI, or passed
 * through unchanged: XLA's loop-carried buffers)? */
static bool collective_side(const struct ir_computation *c,
			    const struct ir_instr *coll, const struct ir_instr *v)
{
	if (v == coll)
		return true;
	if (!c || v->op != IR_OP_PARAMETER)
		return false;
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *x = c->instrs[i];
		if (x == coll || (x == c->root && x->op == IR_OP_TUPLE))
			continue;
		for (int j = 0; j < x->n_operands; j++)
			if (x->operands[j] == v)
				return false;
	}
	return true;
}

void sim_collective_of(const struct sim_kernel *k, enum hw_collective *c,
		       double *bytes, double *hbm_bytes, int64_t *devices,
		       int *bits)
{
	enum ir_op op = k->instr ? k->instr->op : IR_OP_INVALID;
	if (op == IR_OP_ASYNC_START)
		op = k->instr->wrapped_op;
	if (k->instr && sim_megascale_slices(k->instr))
		op = k->instr->attrs.megascale_op;
	/* a fused collective: its op; an all-reduce whose fusion keeps a
	 * shard of it (keeps_shard) is a reduce-scatter, as XLA's TPU
	 * compiler runs it */
	const struct ir_instr *fc = k->instr ? sim_fused_collective(k->instr) : NULL;
	if (fc) {
		op = fc->op;
		if ((op == IR_OP_ALL_REDUCE || op == IR_OP_ALL_REDUCE_START) &&
		    k->instr->op == IR_OP_FUSION &&
		    keeps_shard(k->instr->called[0]->root, 0))
			op = IR_OP_REDUCE_SCATTER;
	}
	*c = coll_kind(op);
	*bytes = k->work.ici_bytes;
	*hbm_bytes = *c == HW_COLL_ALL_GATHER ? k->work.bytes_written
					      : k->work.bytes_read;
	*devices = k->group_devices;
	*bits = k->instr ? ir_type_bits(collective_type(&k->instr->shape)) : 32;
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
		for (int s = 0; s < cd->n_spatial; s++) {
			if (cd->rhs_spatial[s] < 0 || cd->rhs_spatial[s] >= rk)
				continue;
			role[cd->rhs_spatial[s]] = SIM_ROLE_TAP;
			if (conv_batch_dim(t, s)) {
				role[cd->rhs_spatial[s]] = SIM_ROLE_BATCH;
				shared_out_logical[cd->rhs_spatial[s]] =
					cd->out_spatial[s];
			}
		}
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
			if (!sim_ints_has(&dd->rhs_batch, j) &&
			    !sim_ints_has(&dd->rhs_contracting, j)) {
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

/* ---- contractions the grid does not tile ---- */

/* Nested fusions followed, as cost.c follows them (COST_MAX_DEPTH). */
#define UNTILED_MAX_DEPTH 16

/*
 * The weight tile of contraction c (docs/TPU.md section 2 rule 1): its
 * depth K and width N. Dot: K = prod(lhs contracting dims), N = prod(rhs
 * dims neither batch nor contracting). Convolution: K = input features /
 * feature_group_count, N = the kernel's output features; each (tap,
 * output position) pair is one more pass over the rows. False when the
 * attributes do not fit the shapes (sim_instr_macs reports those).
 */
static bool contraction_kn(const struct ir_instr *c, int64_t *k, int64_t *n)
{
	if (c->n_operands < 2)
		return false;
	const struct ir_shape *lhs = &c->operands[0]->shape;
	const struct ir_shape *rhs = &c->operands[1]->shape;
	*k = *n = 1;
	if (c->op == IR_OP_CONVOLUTION) {
		const struct ir_conv_dims *cd = c->attrs.conv;
		if (!cd || cd->lhs_feature < 0 || cd->lhs_feature >= lhs->rank ||
		    cd->rhs_out < 0 || cd->rhs_out >= rhs->rank)
			return false;
		int64_t g = c->attrs.feature_group_count > 0
				    ? c->attrs.feature_group_count
				    : 1;
		*k = lhs->dims[cd->lhs_feature] / g;
		*n = rhs->dims[cd->rhs_out];
		return *k > 0 && *n > 0;
	}
	const struct ir_dot_dims *dd = c->attrs.dot;
	if (!dd)
		return false;
	for (int i = 0; i < dd->lhs_contracting.n; i++) {
		int64_t d = dd->lhs_contracting.v[i];
		if (d < 0 || d >= lhs->rank)
			return false;
		*k = ir_mul_sat(*k, lhs->dims[d]);
	}
	for (int j = 0; j < rhs->rank; j++)
		if (!sim_ints_has(&dd->rhs_batch, j) &&
		    !sim_ints_has(&dd->rhs_contracting, j))
			*n = ir_mul_sat(*n, rhs->dims[j]);
	return *k > 0 && *n > 0;
}

/* Adds contraction c to the plan's untiled ones: merged with an entry of
 * the same weight tile and passes, else a new entry, else (all taken)
 * into the last. */
static void add_untiled(struct sim_plan *p, const struct hw_spec *hw,
			const struct ir_instr *c)
{
	double macs = 0;
	int64_t k, n;
	if (sim_instr_macs(c, NULL, &macs, NULL) != TS_OK || !(macs > 0) ||
	    !contraction_kn(c, &k, &n))
		return;
	struct sim_plan_mxu_op op = {macs, k, n, mxu_passes(hw, c),
				     sim_int8_contraction(c)};
	p->mxu_untiled_macs += macs;
	for (int i = 0; i < p->n_mxu_untiled; i++) {
		struct sim_plan_mxu_op *e = &p->mxu_untiled[i];
		if (e->k == op.k && e->n == op.n && e->passes == op.passes &&
		    e->int8 == op.int8) {
			e->macs += macs;
			return;
		}
	}
	if (p->n_mxu_untiled < SIM_PLAN_MAX_UNTILED)
		p->mxu_untiled[p->n_mxu_untiled++] = op;
	else
		p->mxu_untiled[SIM_PLAN_MAX_UNTILED - 1].macs += macs;
}

/* Every dot and convolution of members[0..n) but the tiled target t,
 * nested fusions' included (as cost.c counts them into the kernel's
 * work), into the plan's untiled contractions. */
static void collect_untiled(struct sim_plan *p, const struct hw_spec *hw,
			    const struct ir_instr *const *members, int n,
			    const struct ir_instr *t, int depth)
{
	for (int i = 0; i < n && depth <= UNTILED_MAX_DEPTH; i++) {
		const struct ir_instr *in = members[i];
		switch (in->op) {
		case IR_OP_DOT:
		case IR_OP_RAGGED_DOT:
		case IR_OP_SCALED_DOT:
		case IR_OP_CONVOLUTION:
			if (in != t)
				add_untiled(p, hw, in);
			break;
		case IR_OP_FUSION:
			if (in->n_called > 0 && in->called[0])
				collect_untiled(
					p, hw,
					(const struct ir_instr *const *)in
						->called[0]
						->instrs,
					in->called[0]->n_instrs, t, depth + 1);
			break;
		default:
			break;
		}
	}
}

double sim_member_vpu(struct sim_member_memo *mm, const struct hw_spec *hw,
		      const struct ir_instr *in)
{
	int i = mm ? sim_member_memo_index(mm, in) : -1;
	if (mm && (i < 0 || !mm->has_vpu[i]))
		mm->n_worked++;
	if (i < 0)
		return sim_instr_vpu_cycles(hw, in, 0);
	if (!mm->has_vpu[i]) {
		mm->vpu[i] = sim_instr_vpu_cycles(hw, in, 0);
		mm->has_vpu[i] = true;
	}
	return mm->vpu[i];
}

void sim_plan_free(struct sim_plan *p)
{
	ts_free(p->acc);
	p->acc = NULL;
	p->n_access = p->cap_access = 0;
	if (p->relaid) {
		sim_plan_free(p->relaid);
		ts_free(p->relaid);
		p->relaid = NULL;
	}
}

/* Bytes above which an input held whole in every block is one the grid
 * cannot stream: a quarter of the smallest VMEM (16 MiB, v2 and v3), so
 * that double-buffered it leaves room for the rest. A fact of the
 * generations, not of one spec (plans are shared across specs). */
#define SIM_WHOLE_MAX_BYTES (4.0 * 1024 * 1024)

/* An input access the grid cannot stream: it holds a dim of more than one
 * tile whole in every block, and either follows the grid in another dim
 * (each block it follows fetches all of that dim again: a transpose and a
 * reshape that merges dims feeding a dot, where no map rule relates the
 * merged dim's minor part to the grid) or follows nothing and is larger
 * than SIM_WHOLE_MAX_BYTES (a chain of reshapes no map rule follows). A
 * dim a reshape merged into a shorter grid dim counts as whole. */
static bool streams_badly(const struct sim_plan_access *a)
{
	bool follows = false, whole = false;
	for (int i = 0; i < a->rank; i++) {
		const struct sim_plan_adim *ad = &a->dims[i];
		bool many = ir_round_up(ad->elems, ad->tile) > ad->tile;
		/* a dim merged into a shorter grid dim by a reshape (more
		 * than one element per grid element, no window) is as good
		 * as whole: a block of the grid holds a multiple of it */
		if (ad->grid >= 0 && ad->win < 0 && ad->scale > 1 && many)
			whole = true;
		else if (ad->grid >= 0 || ad->win >= 0)
			follows = true;
		else if (many)
			whole = true;
	}
	return !a->output && !a->in_vmem && whole &&
	       (follows || a->bytes > SIM_WHOLE_MAX_BYTES);
}

/* Does input v of kernel k feed the target's operand `side` (mark: the
 * members mark_feeders marked)? The operand itself (an unfused dot), or
 * an input of the members that feed it (a fusion parameter standing for
 * it: any of them when the buffer is given twice; a grouped kernel's
 * member reading it). */
static bool feeds_side(const struct sim_kernel *k, const uint8_t *mark,
		       const struct ir_instr *t, int side,
		       const struct ir_instr *v)
{
	if (v == t->operands[side])
		return true;
	for (int mi = 0; mi < k->n_members; mi++) {
		const struct ir_instr *mb = k->members[mi];
		int pn = mb->op == IR_OP_PARAMETER
				 ? (int)mb->attrs.parameter_number
				 : -1;
		if (!(mark[mi] & (1u << side)))
			continue;
		if (mb == v || (pn >= 0 && pn < k->n_inputs && k->inputs[pn] == v))
			return true;
		/* a grouped kernel's member reads its inputs themselves */
		for (int j = 0; mb->op != IR_OP_PARAMETER && j < mb->n_operands; j++)
			if (mb->operands[j] == v)
				return true;
	}
	return false;
}

/*
 * The dim order (minor_to_major) XLA's layout assignment gives operand
 * `side` of contraction t when the module leaves it free: the MXU streams
 * a dot's lhs with its contraction on the lanes and its rhs with its
 * output features there (batch dims major); a convolution's input and
 * output with the features minor, then the spatial dims, the batch major,
 * and its kernel with the output features minor, then the input features,
 * the spatial dims major. False for anything else. Source: XLA TPU's
 * compiled convolutions and dots in data/compiled (b01f-ordered layouts
 * with the feature minor, whatever the logical dim order).
 */
static bool canonical_order(const struct ir_instr *t, int side, int *m2m)
{
	int rank = t->operands[side]->shape.rank, n = 0;
	if (rank > SIM_MAX_GRID)
		return false;
	if (t->op == IR_OP_CONVOLUTION && t->attrs.conv) {
		const struct ir_conv_dims *cd = t->attrs.conv;
		m2m[n++] = side == 0 ? cd->lhs_feature : cd->rhs_out;
		if (side == 1)
			m2m[n++] = cd->rhs_in;
		for (int s = cd->n_spatial - 1; s >= 0; s--)
			m2m[n++] = side == 0 ? cd->lhs_spatial[s]
					     : cd->rhs_spatial[s];
		if (side == 0)
			m2m[n++] = cd->lhs_batch;
	} else if (t->op == IR_OP_DOT && t->attrs.dot) {
		const struct ir_dot_dims *dd = t->attrs.dot;
		const struct ir_ints *bt = side == 0 ? &dd->lhs_batch : &dd->rhs_batch;
		const struct ir_ints *ct = side == 0 ? &dd->lhs_contracting
						     : &dd->rhs_contracting;
		/* lhs: contraction, then free dims; rhs: free, then
		 * contraction; batch dims major (minor first below) */
		for (int pass = 0; pass < 2; pass++) {
			bool want_k = (pass == 0) == (side == 0);
			for (int i = rank - 1; i >= 0; i--)
				if (!sim_ints_has(bt, i) &&
				    sim_ints_has(ct, i) == want_k)
					m2m[n++] = i;
		}
		for (int i = rank - 1; i >= 0; i--)
			if (sim_ints_has(bt, i))
				m2m[n++] = i;
	} else {
		return false;
	}
	if (n != rank)
		return false;
	for (int i = 0; i < n; i++)
		if (m2m[i] < 0 || m2m[i] >= rank)
			return false;
	return true;
}

/* Is operand `side` of contraction t in a layout the module leaves free
 * (no TPU tiles written: tpusim orders it, ir_shape_major_to_minor) and
 * ordered other than canonical_order's? */
static bool free_and_odd(const struct ir_instr *t, int side)
{
	const struct ir_shape *s = &t->operands[side]->shape;
	int m2m[SIM_MAX_GRID], order[SIM_MAX_GRID];
	if (laid_out(s) || s->rank < 2 || !canonical_order(t, side, m2m))
		return false;
	ir_shape_major_to_minor(s, order);
	for (int i = 0; i < s->rank; i++)
		if (order[s->rank - 1 - i] != m2m[i])
			return true;
	return false;
}

/*
 * The fallback of an input access that streams badly (streams_badly), or
 * that feeds an MXU operand whose layout the module leaves free and odd
 * (free_and_odd): the input relaid out first into the form the kernel
 * consumes, by a copy of its own, and that copy streamed as it follows
 * the grid (by construction: the target's maps). The form: the MXU
 * operand it feeds (the dot's or convolution's operand value, its seeded
 * map; in canonical_order when free), else the kernel's space
 * (sim_tile_space_shape, identity map) in the input's element type. Replaces the access just added (p->acc[n_access - 1])
 * and charges the copy to the plan:
 *   relayout_read    += the input's bytes the kernel reads (`read`: a
 *                       slice's window, or the input)
 *   relayout_written += the form's bytes
 *   relayout_cycles += form vregs x xlu_transpose_cost / alus
 * Units: padded bytes, core cycles. Assumes the copy moves lanes on the
 * XLU at the rate fitted for relayouts (sim_relayout_cycles) and that XLA
 * would make that copy (layout assignment inserts one where a consumer
 * cannot read an operand's layout). Known wrong: a form wider than the
 * input (a broadcast within the kernel) is written whole.
 */
static enum ts_status relay_out(struct sim_plan *p, const struct hw_spec *hw,
				struct prop *pr, const uint8_t *mark,
				const struct ir_instr *t, int input,
				const struct ir_shape *read, struct ts_diag *d)
{
	const struct sim_kernel *k = p->k;
	const struct ir_instr *v = k->inputs[input];
	/* the part it reads: a layer's slice of a stacked array, not the
	 * stack */
	double in_bytes = fmin(p->acc[p->n_access - 1].bytes,
			       ir_shape_padded_bytes(read));
	p->n_access--;
	int side = -1;
	for (int s = 0; p->has_kernel && mark && s < 2 && side < 0; s++)
		if (feeds_side(k, mark, t, s, v))
			side = s;
	struct ir_shape form;
	struct dmap m;
	int m2m[SIM_MAX_GRID];
	if (side >= 0) {
		const struct ir_instr *o = t->operands[side];
		const struct dmap *om = slot(pr, o);
		form = o->shape;
		/* written with the default tile so that the order holds */
		static const struct ir_tile t8x128 = {2, {8, 128}};
		if (free_and_odd(t, side) && canonical_order(t, side, m2m)) {
			form.layout.present = true;
			form.layout.minor_to_major = m2m;
			form.layout.n_tiles = 1;
			form.layout.tiles = (struct ir_tile *)&t8x128;
		}
		if (om && om->set)
			m = *om;
		else
			map_none(&m);
	} else {
		form = *sim_tile_space_shape(t);
		form.type = v->shape.type;
		form.layout.element_size_bits = v->shape.layout.element_size_bits;
		map_identity(&m, form.rank);
	}
	memset(&form.memo, 0, sizeof form.memo);
	enum ts_status st = add_access(p, v, &form, &m, false, input, t, d);
	if (st != TS_OK)
		return st;
	double out_bytes = p->acc[p->n_access - 1].bytes;
	p->relayout_read += in_bytes;
	p->relayout_written += out_bytes;
	p->relayout_cycles += sim_xlu_relayout_cycles(hw, sim_shape_vregs(hw, &form));
	p->n_relaid++;
	return TS_OK;
}

/* Does input v feed an MXU operand of t that is free and odd? */
static bool feeds_odd(const struct sim_plan *p, const uint8_t *mark,
		      const struct ir_instr *t, const struct ir_instr *v)
{
	for (int s = 0; p->has_kernel && mark && s < 2; s++)
		if (feeds_side(p->k, mark, t, s, v) && free_and_odd(t, s))
			return true;
	return false;
}

static enum ts_status build(const struct sim_kernel *k,
			    const struct hw_spec *hw, struct sim_plan *p,
			    bool relaid, struct ts_diag *d);

/* The plan, and with it (p->relaid) the same grid with every input that
 * streams badly or feeds a free, odd MXU operand relaid out first
 * (relay_out), when there is one. */
enum ts_status sim_plan_build(const struct sim_kernel *k,
			      const struct hw_spec *hw, struct sim_plan *p,
			      struct ts_diag *d)
{
	enum ts_status st = build(k, hw, p, false, d);
	bool bad = st == TS_OK && p->kind == SIM_PLAN_TILED && p->has_kernel &&
		   (free_and_odd(p->target, 0) || free_and_odd(p->target, 1));
	for (int a = 0; st == TS_OK && a < p->n_access && !bad; a++)
		bad = streams_badly(&p->acc[a]);
	if (!bad)
		return st;
	p->relaid = ts_calloc(1, sizeof *p->relaid);
	if (!p->relaid) {
		ts_diag_set(d, NULL, 0, 0, "out of memory planning %s",
			    k->name ? k->name : "?");
		return TS_ERR_NOMEM;
	}
	return build(k, hw, p->relaid, true, d);
}

static enum ts_status build(const struct sim_kernel *k,
			    const struct hw_spec *hw, struct sim_plan *p,
			    bool relaid, struct ts_diag *d)
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
		/* ICI carries the whole payload wherever it lives; HBM sees
		 * the part of it in HBM read and written once each (a VMEM
		 * buffer's DMA to and from the links bypasses HBM) */
		double hbm;
		sim_collective_of(k, &p->coll, &p->coll_bytes, &hbm,
				  &p->coll_devices, &p->coll_bits);
		p->coll_groups = k->groups;
		p->coll_dcn = sim_megascale_slices(k->instr);
		/* at least what it reads and writes (a result wider than its
		 * operand, f16 in and f32 out: the roofline's bytes) */
		double rw = k->work.bytes_read + k->work.bytes_written;
		p->other_bytes = 2.0 * hbm > rw ? 2.0 * hbm : rw;
		return TS_OK;
	}
	if (k->idle || sim_kernel_free(k)) {
		p->kind = SIM_PLAN_FREE;
		return TS_OK;
	}
	if (k->instr && k->instr->op == IR_OP_CUSTOM_CALL &&
	    k->instr->attrs.declared) {
		p->kind = SIM_PLAN_DECLARED;
		return TS_OK;
	}
	if (k->dma) {
		/* what the DMA engines move (model.c dma_ns): HBM's reads and
		 * writes, at least the transferred result once (a transfer
		 * between two on-chip spaces still streams it) */
		p->kind = SIM_PLAN_DMA;
		p->other_bytes = sim_dma_bytes(k);
		p->host_bytes = sim_dma_host_bytes(k);
		return TS_OK;
	}
	p->kind = SIM_PLAN_TILED;
	/* literal constants are read from HBM, each once: not an input of
	 * the kernel, so no access follows the grid for them */
	p->other_bytes = k->work.constant_bytes;
	/* kernel extraction's tiled instruction, unless it sits inside a
	 * nested fused computation the maps below do not reach, or is not
	 * the kernel's at all (a grouped reduce's input, made by another
	 * kernel: its dot is not this kernel's work) */
	const struct ir_computation *comp =
		k->n_members > 0 ? k->members[0]->parent : NULL;
	bool own = k->tiled && (!comp || k->tiled->parent == comp);
	if (own && comp && k->tiled->op != IR_OP_PARAMETER) {
		own = false;
		for (int i = 0; i < k->n_members && !own; i++)
			own = k->members[i] == k->tiled;
	}
	const struct ir_instr *t = own ? k->tiled : sim_tile_target(k);
	if (!t) {
		ts_diag_set(d, NULL, 0, 0, "%s: kernel has no instructions",
			    k->name ? k->name : "?");
		return TS_ERR_UNSUPPORTED_OP;
	}
	/* an in-place root is tiled by its update: that is all it computes */
	const struct ir_instr *inplace = in_place_root(k, t) ? t : NULL;
	if (inplace)
		t = inplace_update(inplace);
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
	/* XLA's async collective fusion: the collective beside the matmul
	 * runs on the ICI meanwhile (model.c), its buffers off the grid */
	const struct ir_instr *coll =
		p->has_kernel && k->instr ? sim_side_collective(k->instr) : NULL;
	const struct ir_computation *coll_c = coll ? k->instr->called[0] : NULL;
	if (coll) {
		/* a fusion between a collective chain's start and done: the
		 * collective moves once, the start's async work */
		p->side_coll = !k->chained;
		sim_side_collective_of(coll, &p->coll, &p->coll_bytes,
				       &p->coll_bits);
		p->coll_devices = k->group_devices;
		p->coll_groups = k->groups;
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
		p->mxu_int8 = sim_int8_contraction(t);
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
				if (conv_batch_dim(t, s))
					continue; /* a batch: no window */
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
			/* taps fold into the contraction when they outnumber
			 * the output positions (a weight gradient), or when
			 * the contraction is shallow (at most
			 * SIM_FOLD_MAX_K input features per group, a first
			 * layer's 1-16 channels): XLA gathers the window
			 * into the contraction instead of padding a few
			 * features to a 128-deep weight tile per tap */
			int64_t k_in = cd && cd->rhs_in >= 0 &&
						       cd->rhs_in < t->operands[1]->shape.rank
					       ? t->operands[1]->shape.dims[cd->rhs_in]
					       : 0;
			p->mxu_fold_taps = win > outsp ||
					   (k_in > 0 && k_in <= SIM_FOLD_MAX_K);
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
	const struct ir_instr **uses =
		ts_calloc((size_t)k->n_inputs + 1, sizeof *uses);
	int *copies = ts_calloc((size_t)k->n_inputs + 1, sizeof *copies);
	if (!uses || !copies || !ts_ptrmap_init(&pr.in, (size_t)k->n_inputs) ||
	    !only_uses(k, uses)) {
		st = TS_ERR_NOMEM;
		ts_diag_set(d, NULL, 0, 0, "out of memory planning %s",
			    k->name ? k->name : "?");
		goto out;
	}
	for (int i = k->n_inputs - 1; i >= 0; i--)
		if (k->inputs[i])
			ts_ptrmap_set(&pr.in, k->inputs[i], i);
	for (int i = 0; i < k->n_inputs; i++) {
		int f = ts_ptrmap_get(&pr.in, k->inputs[i]);
		if (f >= 0)
			copies[f]++;
	}
	if (comp) {
		pr.mm = ts_calloc((size_t)k->n_members + 1, sizeof *pr.mm);
		pr.im = ts_calloc((size_t)k->n_inputs + 1, sizeof *pr.im);
		mark = ts_calloc((size_t)k->n_members + 1, 1);
		if (k->memo && sim_member_memo_begin(k->memo, hw, comp,
						     k->members, k->n_members))
			pr.memo = k->memo;
		if (!pr.mm || !pr.im || !mark ||
		    (!pr.memo && !ts_ptrmap_init(&pr.pos, (size_t)k->n_members))) {
			st = TS_ERR_NOMEM;
			ts_diag_set(d, NULL, 0, 0, "out of memory planning %s",
				    k->name ? k->name : "?");
			goto out;
		}
		for (int i = 0; !pr.memo && i < k->n_members; i++) {
			const struct ir_instr *in = k->members[i];
			if (in->parent == comp && in->index >= 0 &&
			    in->index < comp->n_instrs)
				ts_ptrmap_set(&pr.pos, comp->instrs[in->index], i);
		}
		prop_seed(&pr, t);
		if (inplace && inplace->op == IR_OP_SCATTER)
			seed_scatter_indices(&pr, inplace);
		seed_reduce_siblings(&pr, t);
		if (inplace && inplace->op == IR_OP_DYNAMIC_UPDATE_SLICE)
			seed_update_siblings(&pr, inplace, t);
		/* until nothing more maps: a value may take its map after
		 * several turns (a sibling output of a multi-output fusion
		 * reached back through a reduce's operand, then forward);
		 * each pass maps something new or ends it */
		for (bool grew = true; grew;) {
			grew = prop_forward(&pr);
			grew = prop_backward(&pr) || grew;
		}
		for (int side = 0; p->has_kernel && side < 2; side++)
			mark_feeders(&pr, t->operands[side], mark,
				     (uint8_t)(1u << side), 0);
	}

	/* Inputs. */
	for (int i = 0; i < k->n_inputs; i++) {
		const struct ir_instr *v = k->inputs[i];
		/* an input given twice (add(x, x) as two parameters) is one
		 * buffer, read once: one access, with the first's map */
		if (ts_ptrmap_get(&pr.in, v) != i)
			continue;
		if (coll && i < coll_c->n_params &&
		    collective_side(coll_c, coll, coll_c->params[i]))
			continue;
		const struct dmap *m = pr.im && pr.im[i].set ? &pr.im[i] : NULL;
		const struct ir_instr *use = uses[i];
		if (use && (use == inplace || in_place_root(k, use)) &&
		    use->operands[0] == stand_in(k, comp, i)) {
			/* the buffer it updates in place (the root, or one of
			 * a multi-output fusion's: a scan's stacked
			 * activations): a dynamic-update-slice overwrites its
			 * window, unread; a scatter combines (to_apply) with
			 * the rows it updates, read as its updates are
			 * (cost.c use_bytes) */
			const struct ir_instr *u = inplace_update(use);
			const struct dmap *um = comp ? slot(&pr, u) : NULL;
			int before = p->n_access;
			if (inplace_op(use)->op == IR_OP_SCATTER)
				st = add_access(p, v, &u->shape,
						um && um->set ? um : NULL,
						false, i, t, d);
			if (st != TS_OK)
				goto out;
			/* in VMEM with the result (sim/placement.c) */
			if (p->n_access > before && sim_kernel_in_vmem(k, v))
				p->acc[p->n_access - 1].in_vmem = true;
			continue;
		}
		bool twice = copies[i] > 1; /* given again as a later parameter */
		const struct ir_instr *sl = twice ? NULL : slice_read(use, v);
		int sp = sl && pr.mm ? member_pos(&pr, sl) : -1;
		/* several slices' windows (slice_reads), each its own access
		 * as it follows the grid; or windows inside a nested fusion
		 * (nested_slice_reads): v's map, the window's shape (the same
		 * rank: a map of one is a map of the other) */
		const struct ir_instr *win[SIM_MAX_ROOTS];
		int nw = 0;
		if (!twice && !sl && use)
			nw = nested_slice_reads(use, stand_in(k, comp, i), win,
						SIM_MAX_ROOTS, 0);
		else if (!twice && !sl && comp && pr.mm)
			nw = slice_reads(k, stand_in(k, comp, i), win,
					 SIM_MAX_ROOTS);
		bool nested = use && nw > 0;
		int before = p->n_access;
		double wb = 0; /* the windows' tiles, at most v's */
		for (int w = 0; w < nw; w++)
			wb += ir_shape_padded_bytes(&win[w]->shape);
		if (wb >= ir_shape_padded_bytes(&v->shape))
			nw = 0;
		const struct ir_instr *nsl = nested && nw == 1 ? win[0] : NULL;
		for (int w = 0; w < nw && !nsl && st == TS_OK; w++) {
			const struct dmap *wm = m; /* nested: v's map */
			if (!nested) {
				int wp = member_pos(&pr, win[w]);
				wm = wp >= 0 && pr.mm[wp].set ? &pr.mm[wp] : NULL;
			}
			st = add_access(p, v, &win[w]->shape, wm, false, i, t, d);
			if (st == TS_OK && p->n_access > before &&
			    sim_kernel_in_vmem(k, v))
				p->acc[p->n_access - 1].in_vmem = true;
		}
		if (nw > 0 && !nsl) {
			if (st != TS_OK)
				goto out;
			continue;
		}
		/* the part of v the kernel reads: a slice's window, or v */
		const struct ir_shape *read = sp >= 0 ? &sl->shape
					      : nsl   ? &nsl->shape
						      : &v->shape;
		if (sp >= 0) {
			const struct dmap *sm = &pr.mm[sp];
			st = add_access(p, v, read, sm->set ? sm : NULL, false,
					i, t, d);
		} else {
			st = add_access(p, v, read, m, false, i, t, d);
		}
		/* memory-space assignment keeps it in VMEM (sim/placement.c) */
		if (st == TS_OK && p->n_access > before &&
		    sim_kernel_in_vmem(k, v))
			p->acc[p->n_access - 1].in_vmem = true;
		/* an input of no array form went to other_bytes: no access */
		if (st == TS_OK && relaid && p->n_access > before &&
		    (streams_badly(&p->acc[p->n_access - 1]) ||
		     feeds_odd(p, mark, t, v)))
			st = relay_out(p, hw, &pr, mark, t, i, read, d);
		if (st != TS_OK)
			goto out;
	}
	/* Outputs: the root value(s) the kernel writes. */
	{
		const struct ir_instr *roots[SIM_MAX_ROOTS];
		int n = sim_kernel_roots(k, roots, SIM_MAX_ROOTS);
		for (int i = 0; i < n; i++) {
			const struct ir_instr *v = roots[i];
			if (coll && collective_side(coll_c, coll, v))
				continue;
			const struct dmap *m = NULL;
			int vp = pr.mm ? member_pos(&pr, v) : -1;
			if (vp >= 0 && pr.mm[vp].set)
				m = &pr.mm[vp];
			/* an element of a variadic reduce's results follows
			 * the grid as the reduce's result does */
			struct dmap gm;
			const struct ir_instr *gr =
				v->op == IR_OP_GET_TUPLE_ELEMENT &&
						v->n_operands == 1
					? v->operands[0]
					: NULL;
			if (!m && comp && gr && gr->op == IR_OP_REDUCE &&
			    gr->n_operands > 0) {
				const struct dmap *om = slot(&pr, gr->operands[0]);
				if (om && om->set &&
				    reduce_out_map(gr, 0, om, &gm))
					m = &gm;
			}
			if (v->shape.type == IR_TYPE_TUPLE) {
				/* a variadic reduce's results follow the
				 * grid as one array would; other tuples are
				 * held whole */
				struct dmap rm;
				const struct dmap *om =
					v->op == IR_OP_REDUCE && comp &&
							v->n_operands > 0
						? slot(&pr, v->operands[0])
						: NULL;
				bool mapped = om && om->set &&
					      reduce_out_map(v, 0, om, &rm);
				for (int e = 0; e < v->shape.n_elems; e++) {
					const struct ir_shape *es =
						&v->shape.elems[e];
					st = add_access(p, v, es,
							mapped && es->type != IR_TYPE_TUPLE
								? &rm
								: NULL,
							true, -1, t, d);
					if (st != TS_OK)
						goto out;
				}
				continue;
			}
			if (v == inplace || in_place_root(k, v)) {
				/* writes the update's window */
				const struct ir_instr *u = inplace_update(v);
				const struct dmap *um = comp ? slot(&pr, u) : NULL;
				m = um && um->set ? um : NULL;
				v = u;
			}
			int before = p->n_access;
			st = add_access(p, roots[i], written(k, i, n, v), m, true,
					-1, t, d);
			if (st != TS_OK)
				goto out;
			/* the buffer written: a kept fusion's own result
			 * where the kernel writes it (placement holds it
			 * under the fusion's name) */
			const struct ir_instr *buf =
				written(k, i, n, roots[i]) == &k->instr->shape
					? k->instr
					: roots[i];
			if (p->n_access > before && sim_kernel_in_vmem(k, buf))
				p->acc[p->n_access - 1].in_vmem = true;
		}
	}

	/* VPU work; prologues of the MXU operands. */
	for (int i = 0; i < k->n_members; i++)
		p->vpu_cycles += sim_member_vpu(pr.memo, hw, k->members[i]);
	if (k->n_members == 0 && k->instr)
		p->vpu_cycles += sim_instr_vpu_cycles(hw, k->instr, 0);
	p->xlu_cycles = sim_relayout_cycles(hw, k);
	p->vpu_cycles += p->xlu_cycles;
	if (p->has_kernel && comp && mark) {
		for (int side = 0; side < 2; side++) {
			double cyc = 0;
			for (int i = 0; i < k->n_members; i++)
				if (mark[i] & (1u << side))
					cyc += sim_member_vpu(pr.memo, hw, k->members[i]);
			/* a 32-bit operand, or an f16 one (unpacked to 32
			 * bits, below), is rounded to bf16 on the VPU before
			 * it enters the MXU (one op per vreg per pass; the
			 * MXU takes bf16, TPU.md section 2 rule 1); for f16
			 * this comes on top of the f16 -> f32 conversion of
			 * every load (convert_cycles, below) */
			const struct ir_shape *os = &t->operands[side]->shape;
			bool rounds = ir_type_bits(os->type) > 16 ||
				      os->type == IR_TYPE_F16;
			double conv = rounds ? hw_vpu_op_cycles(hw, sim_shape_vregs(hw, os) *
								    p->mxu_passes,
								HW_VPU_SIMPLE)
					     : 0.0;
			p->vpu_cycles += conv;
			cyc += conv;
			/* the largest input feeding that side */
			int best = -1;
			for (int a = 0; a < p->n_access; a++) {
				int in = p->acc[a].input;
				if (p->acc[a].output || in < 0 || in >= k->n_inputs)
					continue;
				bool feeds = feeds_side(k, mark, t, side,
							k->inputs[in]);
				if (feeds && (best < 0 || p->acc[a].bytes >
								   p->acc[best].bytes))
					best = a;
			}
			if (best < 0)
				continue;
			/* a 16-bit operand (packed two per 32-bit word) is
			 * unpacked to one value per word in VMEM before the
			 * MXU takes it, a staging copy of twice its bytes per
			 * buffer (see estimate()), when it is a windowed
			 * convolution's (bf16: its shifted windows) or f16
			 * (the MXU takes bf16: f16 goes through 32 bits).
			 * Source: TpuGraphs' bf16 convolutions (see
			 * estimate()); tpuv4-ops' large f16 GEMMs run at the
			 * speed of blocks that fit VMEM with this copy: without
			 * it the model's best uses 1024 x 1024 blocks and comes
			 * out 1.7x fast at the median (docs/MODEL.md) */
			int ob = ir_type_bits(os->type);
			if (ob == 16 &&
			    (p->mxu_windowed || os->type == IR_TYPE_F16) &&
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
	/* the dims each access follows, as a mask for the estimate's and
	 * the floors' loops */
	_Static_assert(SIM_PLAN_MAX_DIMS <= 32, "sim_plan_access.follows");
	for (int a = 0; a < p->n_access; a++)
		for (int i = 0; i < p->acc[a].rank; i++) {
			const struct sim_plan_adim *ad = &p->acc[a].dims[i];
			if (ad->grid >= 0)
				p->acc[a].follows |= 1u << ad->grid;
			if (ad->win >= 0)
				p->acc[a].follows |= 1u << ad->win;
		}
	/* cost forms: an access's form is the first earlier one's with the
	 * same fields access_cost (model.c) reads, else a new one */
	int n_forms = 0;
	for (int a = 0; a < p->n_access; a++) {
		struct sim_plan_access *ac = &p->acc[a];
		int b = 0;
		while (b < a && !(p->acc[b].form_first &&
				  same_form(&p->acc[b], ac)))
			b++;
		ac->form_first = b == a;
		ac->form = b == a ? n_forms++ : p->acc[b].form;
	}
	/* megacore: large kernels split their steps across the cores; a
	 * reduce-window (pooling) kernel is not split: tpuv4-ops max/avg
	 * pooling runs at the same time per element from 98 K to 268 M
	 * elements, with no drop where other kernels gain a second core;
	 * nor is a relayout: the copies after those pools take the same
	 * time per element from 0.3 M to 59 M elements */
	double space = 1;
	for (int i = 0; i < p->out.rank; i++)
		space *= (double)p->out.elems[i];
	p->core_space = t->op == IR_OP_REDUCE_WINDOW || k->relayout ? 0 : space;
	p->acc_vregs_per_elem = p->has_kernel ? 1.0 / (hw->vpu_sublanes * hw->vpu_lanes)
					   : 0.0;
	/* the contractions the grid does not tile still run on the MXU
	 * (model.c untiled_mxu_cycles): a nested fusion's QK^T beside a
	 * reduce-rooted softmax, a second dot */
	collect_untiled(p, hw, k->members, k->n_members, t, 0);
	double macs_all = p->mxu_macs + p->mxu_untiled_macs;
	p->flops = 2.0 * macs_all + k->work.flops - 2.0 * k->work.mxu_macs;
	if (p->flops < 2.0 * macs_all)
		p->flops = 2.0 * macs_all;
	p->hw = hw;
out:
	ts_free(uses);
	ts_free(copies);
	ts_ptrmap_free(&pr.pos);
	ts_ptrmap_free(&pr.in);
	ts_free(pr.mm);
	ts_free(pr.im);
	ts_free(mark);
	return st;
}

