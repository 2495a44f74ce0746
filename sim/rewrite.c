/*
 * rewrite.c: what XLA's TPU compiler does to a module before it fuses,
 * where that changes the kernels it fuses, for the generations whose spec
 * says so (hwspecs/GEN.yaml, section xla). A module before fusion
 * (sim_module_unfused) is rewritten in place, once, before a fusion
 * policy groups it; a compiled one already is what XLA made.
 *
 * The row max as a reduce-window (xla.row_max_window: v4 and later):
 *   r = reduce(x, init), dimensions={d}, to_apply = maximum of its two
 *       parameters; every user of r a broadcast back to x's dims
 *       (dimensions= every dim of x but d, in order, x's physical order);
 *       d the second-minor dim of x's physical order, of size N > 1
 *   -> each broadcast becomes
 *       reduce-window(x, init), window size 2N-1 on d, pad N-1 either
 *       side, size 1 elsewhere, to_apply as r's
 *   r is then dead (XLA's DCE drops it; the grouping does). Every output
 *   of the window sees the whole row, so the value is the broadcast row
 *   max, one loop op of x's shape: the grouping computes it in its users'
 *   kernel (the softmax's subtract and exp) where a reduce roots a kernel
 *   of its own, and the VPU reduces each row once (sim/plan_vpu.c
 *   whole_window_cycles).
 * Evidence: data/compiled (libtpu 0.0.42.1), each module before fusion
 * (NAME.spmd.hlo) against the compiled one. In the v4, v5e, v5p, v6e and
 * v7 decoders and v5e/vit_s every attention row max (f32[B,H,S,S]
 * {2,3,1,0}: the row, dim 3, second-minor) is a reduce-window of size
 * 2S-1 inside the softmax fusion; in v2 and v3 it stays a reduce. Not
 * rewritten on any generation: a row max over the lane dim (v5e/resnet_s,
 * f32[32,100]{1,0}), over a major dim (v5e/decode_s and decode_m,
 * {0,1,2}), a sum (every softmax's denominator). libtpu's fusion flags
 * name it ("RWB" fusion, xla_tpu_rwb_fusion); the open-source inverse is
 * DeconstructReduceWindowToReduceBroadcast (xla/hlo/transforms/
 * despecializer.cc). Known wrong: only what the zoo shows is rewritten
 * (one reduced dim, a maximum; other reducers and element types not
 * seen either way); XLA's own condition is not public.
 */
#include "kernels_int.h"

#include <string.h>

/* Ranks beyond it (no real module has one) are left as written. */
enum { MAX_RANK = 64 };

/* c computes maximum(p0, p1) of its two parameters, nothing else */
static bool max_reducer(const struct ir_computation *c)
{
	const struct ir_instr *r = c->root;
	if (c->n_params != 2 || !r || r->op != IR_OP_MAXIMUM ||
	    r->n_operands != 2)
		return false;
	return (r->operands[0] == c->params[0] &&
		r->operands[1] == c->params[1]) ||
	       (r->operands[0] == c->params[1] &&
		r->operands[1] == c->params[0]);
}

/* The dim r reduces when r is a row max that the rewrite may turn into a
 * window (the rule above, less its users); -1 otherwise. */
static int row_max_dim(const struct ir_instr *r)
{
	if (r->op != IR_OP_REDUCE || r->n_operands != 2 || r->n_called != 1 ||
	    (r->flags & IR_INSTR_ROOT) || r->n_users < 1 ||
	    r->shape.type == IR_TYPE_TUPLE || !r->attrs.dimensions ||
	    r->attrs.dimensions->n != 1 || !max_reducer(r->called[0]))
		return -1;
	const struct ir_shape *x = &r->operands[0]->shape;
	int64_t d = r->attrs.dimensions->v[0];
	if (x->type == IR_TYPE_TUPLE || x->rank < 2 || x->rank > MAX_RANK ||
	    d < 0 || d >= x->rank || x->dims[d] < 2 ||
	    x->dims[d] > INT64_MAX / 2 || /* the window, 2N - 1, in int64 */
	    (x->dim_kind && x->dim_kind[d] != IR_DIM_STATIC))
		return -1;
	int order[MAX_RANK];
	ir_shape_major_to_minor(x, order);
	return order[x->rank - 2] == d ? (int)d : -1;
}

/* b broadcasts r's value back over the dim d it reduced, in x's layout */
static bool broadcast_back(const struct ir_instr *b, const struct ir_instr *r,
			   int d)
{
	const struct ir_shape *x = &r->operands[0]->shape;
	const struct ir_ints *bd = b->attrs.dimensions;
	if (b->op != IR_OP_BROADCAST || b->n_operands != 1 || !bd ||
	    bd->n != x->rank - 1 || !ir_shape_compatible(&b->shape, x))
		return false;
	for (int i = 0; i < bd->n; i++)
		if (bd->v[i] != i + (i >= d))
			return false;
	int ob[MAX_RANK], ox[MAX_RANK];
	ir_shape_major_to_minor(&b->shape, ob);
	ir_shape_major_to_minor(x, ox);
	return memcmp(ob, ox, (size_t)x->rank * sizeof *ob) == 0;
}

/* b, a broadcast back of row max r over dim d, becomes the window */
static enum ts_status to_window(struct ir_module *m, struct ir_instr *b,
				struct ir_instr *r, int d)
{
	int rank = b->shape.rank;
	struct ir_instr **ops = ts_arena_array(&m->arena, 2, sizeof *ops);
	struct ir_computation **called =
		ts_arena_array(&m->arena, 1, sizeof *called);
	struct ir_window *w = ts_arena_alloc(&m->arena, sizeof *w);
	struct ir_window_dim *wd =
		ts_arena_array(&m->arena, (size_t)rank, sizeof *wd);
	if (!ops || !called || !w || !wd)
		return TS_ERR_NOMEM;
	int64_t n = b->shape.dims[d];
	for (int i = 0; i < rank; i++)
		wd[i] = (struct ir_window_dim){.size = i == d ? 2 * n - 1 : 1,
					       .stride = 1,
					       .pad_lo = i == d ? n - 1 : 0,
					       .pad_hi = i == d ? n - 1 : 0,
					       .lhs_dilate = 1,
					       .rhs_dilate = 1};
	*w = (struct ir_window){.n = rank, .dims = wd};
	ops[0] = r->operands[0];
	ops[1] = r->operands[1];
	called[0] = r->called[0];
	b->op = IR_OP_REDUCE_WINDOW;
	b->n_operands = 2;
	b->operands = ops;
	b->n_called = 1;
	b->called = called;
	b->attrs.dimensions = NULL;
	b->attrs.window = w;
	b->flags |= IR_INSTR_MADE;
	b->rhs_begin = b->rhs_end = b->ops_begin = b->ops_end = 0;
	ops[0]->n_users++;
	ops[1]->n_users++;
	r->n_users--;
	called[0]->n_callers++;
	called[0]->caller = NULL;
	return TS_OK;
}

/* dim[i] (c->n_instrs entries, ts_free it): the dim c's instruction i
 * reduces when it is a row max whose every user is a broadcast back, -1
 * for every other; NULL when out of memory. */
static int *row_maxes(const struct ir_computation *c)
{
	size_t n = (size_t)(c->n_instrs ? c->n_instrs : 1);
	int *dim = ts_malloc(n * sizeof *dim), *backs = ts_calloc(n, sizeof *backs);
	if (!dim || !backs) {
		ts_free(dim);
		ts_free(backs);
		return NULL;
	}
	for (int i = 0; i < c->n_instrs; i++)
		dim[i] = row_max_dim(c->instrs[i]);
	/* a user other than a broadcast back keeps the reduce */
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		for (int j = 0; j < u->n_operands; j++) {
			int k = sim_index_in(c, u->operands[j]);
			if (k < 0 || dim[k] < 0)
				continue;
			if (broadcast_back(u, u->operands[j], dim[k]))
				backs[k]++;
			else
				dim[k] = -1;
		}
	}
	/* every user counted (n_users: distinct users) was a broadcast back */
	for (int i = 0; i < c->n_instrs; i++)
		if (backs[i] != c->instrs[i]->n_users)
			dim[i] = -1;
	ts_free(backs);
	return dim;
}

/* The index of the row max b broadcasts back (dim: row_maxes), or -1 */
static int row_max_of(const struct ir_computation *c, const int *dim,
		      const struct ir_instr *b)
{
	int k = b->op == IR_OP_BROADCAST && b->n_operands == 1
			? sim_index_in(c, b->operands[0])
			: -1;
	return k >= 0 && dim[k] >= 0 ? k : -1;
}

int sim_row_max_windows(const struct ir_module *m)
{
	int n = 0;
	for (int ci = 0; sim_module_unfused(m) && ci < m->n_comps; ci++) {
		const struct ir_computation *c = m->comps[ci];
		int *dim = c->is_fusion ? NULL : row_maxes(c);
		if (!dim && !c->is_fusion)
			return -1;
		for (int i = 0; dim && i < c->n_instrs; i++)
			n += row_max_of(c, dim, c->instrs[i]) >= 0;
		ts_free(dim);
	}
	return n;
}

enum ts_status sim_module_rewrite(struct ir_module *m, const struct hw_spec *hw,
				  int *n_done, struct ts_diag *d)
{
	*n_done = 0;
	if (!hw->xla_row_max_window || !sim_module_unfused(m))
		return TS_OK;
	for (int ci = 0; ci < m->n_comps; ci++) {
		struct ir_computation *c = m->comps[ci];
		int *dim = c->is_fusion ? NULL : row_maxes(c);
		enum ts_status st = dim || c->is_fusion ? TS_OK : TS_ERR_NOMEM;
		for (int i = 0; dim && i < c->n_instrs && st == TS_OK; i++) {
			int k = row_max_of(c, dim, c->instrs[i]);
			if (k < 0)
				continue;
			st = to_window(m, c->instrs[i], c->instrs[k], dim[k]);
			*n_done += st == TS_OK;
		}
		ts_free(dim);
		if (st != TS_OK) {
			ts_diag_set(d, m->file, c->line, c->col,
				    "out of memory rewriting %s", c->name);
			return st;
		}
	}
	return TS_OK;
}
