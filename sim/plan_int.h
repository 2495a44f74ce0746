/*
 * plan_int.h: what the two halves of a plan share, sim/plan.c (the tile
 * grid and how every operand follows it) and sim/plan_vpu.c (the VPU
 * work of the members), which plan.c calls (never the other way), and
 * the in-place ops cost.c counts too; not part of the sim/ interface (see
 * model.h).
 */
#ifndef PLAN_INT_H
#define PLAN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hw_spec.h"
#include "ir.h"
#include "sim.h"

/* ---- helpers of both ---- */

/* Whether dims list l (may be NULL) names dim x. */
static inline bool sim_ints_has(const struct ir_ints *l, int64_t x)
{
	for (int j = 0; l && j < l->n; j++)
		if (l->v[j] == x)
			return true;
	return false;
}

/* An array value a tile grid can hold. */
static inline bool sim_is_array(const struct ir_instr *in)
{
	return in->shape.type != IR_TYPE_TUPLE &&
	       in->shape.rank <= SIM_MAX_GRID;
}

/*
 * In-place ops: a dynamic-update-slice or a (one-input) scatter writes its
 * update into operand 0's buffer, which the result aliases; the kernel
 * reads and writes only the update (XLA's cost rule, docs/HLO.md 3.1, and
 * its in-place emitters). Their update operand, else NULL.
 */
static inline const struct ir_instr *
sim_inplace_update(const struct ir_instr *r)
{
	if (r->op == IR_OP_DYNAMIC_UPDATE_SLICE && r->n_operands >= 2 &&
	    sim_is_array(r->operands[1]) && sim_is_array(r))
		return r->operands[1];
	if (r->op == IR_OP_SCATTER && r->n_operands == 3 &&
	    sim_is_array(r->operands[2]) && sim_is_array(r))
		return r->operands[2];
	return NULL;
}

/* Whether the root of computation c is its parameter p through
 * bitcasts (a view of it) or, with copies, through copies too (p relaid
 * out: a nested copy fusion, whose elements are made as its users take
 * them). */
static inline bool sim_root_relays(const struct ir_computation *c,
				   const struct ir_instr *p, bool copies)
{
	const struct ir_instr *r = c->root;
	for (int i = 0; r && r != p && i < 16; i++)
		r = (r->op == IR_OP_BITCAST ||
		     (copies && r->op == IR_OP_COPY)) &&
				    r->n_operands == 1
			    ? r->operands[0]
			    : NULL;
	return r && r == p;
}

/* The in-place op that nested fusion v computes: the root of the
 * computation it calls when that root updates, in place, the buffer v
 * receives as operand 0, a buffer the kernel is given, with an update
 * the computation only reshapes, transposes or bitcasts from one of v's
 * operands of as many elements, which *update is set to (XLA's kCustom
 * scatter_custom_fusion nested in its kernel's fusion: data/compiled's
 * embedding gradients); else NULL (a buffer the kernel fills first, as a
 * broadcast of zeros, or an update made inside, is written whole, and
 * planned over v's whole result: no map reaches into the nested
 * computation). */
static inline const struct ir_instr *
sim_nested_inplace(const struct ir_instr *v, const struct ir_instr **update)
{
	if (v->op != IR_OP_FUSION || v->n_called < 1 || !v->called[0] ||
	    v->n_operands < 1 || v->operands[0]->op != IR_OP_PARAMETER)
		return NULL;
	const struct ir_computation *c = v->called[0];
	const struct ir_instr *r = c->root;
	if (!r || !sim_inplace_update(r) || c->n_params < 1 ||
	    r->operands[0] != c->params[0])
		return NULL;
	const struct ir_instr *u = sim_inplace_update(r), *x = u;
	while ((x->op == IR_OP_RESHAPE || x->op == IR_OP_TRANSPOSE ||
		x->op == IR_OP_BITCAST) && x->n_operands == 1)
		x = x->operands[0];
	for (int n = 0; x->op == IR_OP_PARAMETER && n < c->n_params &&
			n < v->n_operands; n++)
		if (c->params[n] == x &&
		    ir_shape_elems(&u->shape) ==
			    ir_shape_elems(&v->operands[n]->shape)) {
			*update = v->operands[n];
			return r;
		}
	return NULL;
}

/* ---- sim/plan_vpu.c ---- */

/* 8 x 128 32-bit vregs that hold shape s as laid out (padded to its
 * tiles; a tuple: its leaves). */
double sim_shape_vregs(const struct hw_spec *hw, const struct ir_shape *s);
/* VPU cycles of one instruction over its whole shape (the formulas are
 * in plan_vpu.c); depth guards nested fusions. */
double sim_instr_vpu_cycles(const struct hw_spec *hw,
			    const struct ir_instr *in, int depth);
/* XLU cycles of the relayouts kernel k writes (the formula is with it). */
double sim_relayout_cycles(const struct hw_spec *hw,
			   const struct sim_kernel *k);
/* XLU cycles to move vregs' lanes in a relayout:
 *   vregs x xlu_transpose_cost / alus   (sim_relayout_cycles says why) */
double sim_xlu_relayout_cycles(const struct hw_spec *hw, double vregs);

#endif
