/*
 * fusion_space.c: the decision space of the fusion policies, as the
 * searches above the model see it (hybrid/hyb_fusion.c): a computation
 * grouped under a set of decisions (grouping.c), the instructions whose
 * fusion the rules decide, the other way each can go, and the kernels the
 * grouping forms, each with a key for caching its time, and a floor on
 * the kernels one kernel splits into (sim_fusion_space_split_floor: sim.h
 * gives the formula; floor_cycles below, when it holds). The grouping's
 * insides stay here; a policy sees only this and struct sim_fusion_plan.
 */
#include "kernels_int.h"

#include <math.h>
#include <string.h>

struct sim_fusion_space {
	const struct ir_module *m;
	struct grouping g;
	int n_kernels;
	int *kernels; /* representative group ids, in id order (a trial's:
	                 the groups that may differ, as found) */
	uint64_t *key_of; /* a built space's: group_key of each kernel, by
	                     group id (the trials against it ask for those
	                     they replace); NULL in a trial's */
	/* a trial's (sim_fusion_space_delta): its scratch, and the base's
	 * groups it may replace */
	struct delta_scratch *ds;
	int *b_ids;
	/* the memo its kernels are costed with (memo.c): a space built
	 * without like owns one, the others borrow their base's */
	struct sim_member_memo *memo;
	bool own_memo;
	/* a built space's split floors (sim_fusion_space_split_floor), by
	 * group id: VPU cycles, -1 when there is none, NAN until asked;
	 * NULL until the first is asked */
	double *floor_cyc;
};

/* The key of group id: FNV-1a over whole ints (a byte at a time costs 4x
 * on long groups): the count, the members, then the outputs among them. */
static uint64_t group_key(const struct grouping *g, int id)
{
	const int *mem;
	int n = sim_group_members(g, id, &mem);
	uint64_t h = ts_fnv1a_word(TS_FNV1A_BASIS, (uint32_t)n);
	for (int q = 0; q < n; q++)
		h = ts_fnv1a_word(h, (uint32_t)mem[q]);
	int gen = sim_group_mark(g, id);
	for (int q = 0; q < n; q++)
		if (sim_group_output(g, gen, mem[q]))
			h = ts_fnv1a_word(h, (uint32_t)mem[q]);
	return h ? h : 1;
}

enum ts_status sim_fusion_space_build(const struct ir_module *m,
				      const struct ir_computation *c,
				      const signed char *force,
				      const struct sim_fusion_space *like,
				      struct sim_fusion_space **out)
{
	struct sim_fusion_space *s = ts_calloc(1, sizeof *s);
	*out = s;
	if (!s)
		return TS_ERR_NOMEM;
	s->m = m;
	s->memo = like ? like->memo : sim_member_memo_new(c);
	s->own_memo = !like;
	enum ts_status st =
		sim_grouping_build(&s->g, c, force, like ? &like->g : NULL);
	if (!st && !s->memo)
		st = TS_ERR_NOMEM;
	if (!st) {
		s->kernels = ts_malloc(((size_t)s->g.n_groups + 1) * sizeof *s->kernels);
		if (!s->kernels)
			st = TS_ERR_NOMEM;
	}
	for (int id = 0; !st && id < s->g.n_groups; id++)
		if (s->g.g_rep[id] == id)
			s->kernels[s->n_kernels++] = id;
	if (!st && !(s->key_of = ts_malloc(((size_t)s->g.n_groups + 1) *
					   sizeof *s->key_of)))
		st = TS_ERR_NOMEM;
	for (int k = 0; !st && k < s->n_kernels; k++)
		s->key_of[s->kernels[k]] = group_key(&s->g, s->kernels[k]);
	return st;
}

void sim_fusion_space_free(struct sim_fusion_space *s)
{
	if (!s)
		return;
	sim_grouping_free(&s->g);
	ts_free(s->kernels);
	ts_free(s->key_of);
	ts_free(s->floor_cyc);
	sim_delta_scratch_free(s->ds);
	ts_free(s->b_ids);
	if (s->own_memo)
		sim_member_memo_free(s->memo);
	ts_free(s);
}

/* Is i's fusion decided by the rules: live, not constant-derived, not the
 * root, and a cheap, expensive or core op? */
static bool decided(const struct grouping *g, int i)
{
	if (!g->live[i] || g->cd[i] || g->c->root == g->c->instrs[i])
		return false;
	enum fuse_class fc = sim_fuse_class(g, g->c->instrs[i]);
	return fc == FC_CHEAP || fc == FC_EXPENSIVE || fc == FC_CORE;
}

int sim_fusion_space_candidates(const struct sim_fusion_space *s, int *out)
{
	const struct grouping *g = &s->g;
	int n = 0;
	for (int k = g->n - 1; k >= 0; k--)
		if (decided(g, g->order[k]))
			out[n++] = g->order[k];
	return n;
}

enum sim_fuse_force sim_fusion_space_alternative(const struct sim_fusion_space *s,
						 int i)
{
	const struct grouping *g = &s->g;
	int id = g->grp[i];
	if (!(id >= 0 && g->g_root[id] == i))
		return SIM_FUSE_OWN;
	enum fuse_class fc = sim_fuse_class(g, g->c->instrs[i]);
	return fc != FC_CORE && sim_group_can_recompute(g, i) ? SIM_FUSE_RECOMPUTE
							       : SIM_FUSE_DEFAULT;
}

int sim_fusion_space_kernels(const struct sim_fusion_space *s)
{
	return s->n_kernels;
}

uint64_t sim_fusion_space_key(const struct sim_fusion_space *s, int k)
{
	return s->key_of ? s->key_of[s->kernels[k]]
			 : group_key(&s->g, s->kernels[k]);
}

enum ts_status sim_fusion_space_delta(const struct sim_fusion_space *base,
				      const signed char *force, int at,
				      struct sim_fusion_space **trial,
				      uint64_t *gone, int *n_gone,
				      bool *followed)
{
	TS_ASSERT(base->key_of); /* a built space */
	*n_gone = 0;
	*followed = false;
	struct sim_fusion_space *s = *trial;
	if (!s) {
		s = *trial = ts_calloc(1, sizeof *s);
		if (!s)
			return TS_ERR_NOMEM;
		s->m = base->m;
		s->memo = base->memo;
		size_t n = 2 * (size_t)(base->g.n > 0 ? base->g.n : 1);
		s->kernels = ts_malloc(n * sizeof *s->kernels);
		s->b_ids = ts_malloc(n * sizeof *s->b_ids);
		if (!sim_delta_scratch_new(&s->g, &base->g, &s->ds) ||
		    !s->kernels || !s->b_ids) {
			sim_fusion_space_free(s);
			*trial = NULL;
			return TS_ERR_NOMEM;
		}
	}
	int n_b = 0;
	bool whole = true;
	enum ts_status st = sim_grouping_delta(&s->g, &base->g, force, at, s->ds,
					       s->kernels, &s->n_kernels,
					       s->b_ids, &n_b, &whole);
	for (int q = 0; !st && !whole && q < n_b; q++)
		gone[(*n_gone)++] = base->key_of[s->b_ids[q]];
	*followed = !st && !whole;
	return st;
}

/* A parameter, a constant or a constant-derived value of g. */
static bool leaf(const struct grouping *g, int o)
{
	enum ir_op op = g->c->instrs[o]->op;
	return op == IR_OP_PARAMETER || op == IR_OP_CONSTANT || g->cd[o];
}

/* Whether instruction o of g is read by a kernel as it is, whatever the
 * grouping: a leaf, or a free op (a get-tuple-element, a bitcast) of
 * leaves. */
static bool inert(const struct grouping *g, int o)
{
	if (leaf(g, o))
		return true;
	if (g->fc[o] != FC_FREE)
		return false;
	for (int j = g->ooff[o]; j < g->ooff[o + 1]; j++)
		if (g->ops[j] < 0 || !leaf(g, g->ops[j]))
			return false;
	return true;
}

/* An op that certainly makes a kernel run wherever it is a root, and
 * store its value: it computes something (a loop op but a copy, reshape or
 * transpose, which may be a layout-preserving no-op: sim_kernel_free; or
 * with reduce, a reduce) and writes bytes off chip. */
static bool works(const struct grouping *g, int i, bool reduce)
{
	const struct ir_instr *in = g->c->instrs[i];
	bool op = g->fc[i] == FC_CHEAP || g->fc[i] == FC_EXPENSIVE ||
		  (reduce && in->op == IR_OP_REDUCE);
	return !g->cd[i] && op && in->op != IR_OP_COPY && in->op != IR_OP_RESHAPE &&
	       in->op != IR_OP_TRANSPOSE && in->shape.type != IR_TYPE_TUPLE &&
	       !sim_on_chip(&in->shape) &&
	       ir_shape_padded_bytes(&in->shape) > 0;
}

/* The VPU cycles on hw of group id's loop ops (each counted once) over
 * the most cores a kernel of its members can split them across
 * (hw_spec_kernel_cores of its largest member: a kernel's grid is one of
 * its members' shapes, sim/plan.c core_space), when
 * whatever decision is made at one of its members changes no other
 * group: every member held by id alone (a constant-derived one aside),
 * none a dot or convolution (their operands' rules and prologues), a
 * control op or one kept alone, every operand a member or inert; and its
 * root works. A group holding a reduce also writes its root alone (every
 * other member's users are members), so that what is left of it after a
 * split reads a value no other group reads and has no sibling to merge
 * with (grouping.c merge_siblings: the same inputs). -1 otherwise. */
static double floor_cycles(const struct sim_fusion_space *s,
			   const struct hw_spec *hw, int id)
{
	const struct grouping *g = &s->g;
	if (g->g_rep[id] != id || !works(g, g->g_root[id], true))
		return -1;
	const int *mem;
	int n = sim_group_members(g, id, &mem);
	double cyc = 0, elems = 1;
	bool reduce = false, alone = true;
	for (int q = 0; q < n; q++) {
		int m = mem[q];
		double e = (double)ir_shape_elems(&g->c->instrs[m]->shape);
		if (e > elems)
			elems = e;
		enum fuse_class fc = g->fc[m];
		if (g->cd[m])
			continue;
		enum ir_op op = g->c->instrs[m]->op;
		bool core = op == IR_OP_REDUCE || op == IR_OP_REDUCE_WINDOW;
		if (g->grp[m] != id || (fc != FC_FREE && fc != FC_CHEAP &&
					fc != FC_EXPENSIVE && !core))
			return -1;
		reduce |= core;
		for (int u = g->uoff[m]; m != g->g_root[id] && u < g->uoff[m + 1];
		     u++)
			alone &= g->grp[g->users[u]] == id;
		for (int j = g->ooff[m]; j < g->ooff[m + 1]; j++) {
			int o = g->ops[j];
			if (o < 0 || !(g->grp[o] == id || inert(g, o)))
				return -1;
		}
		if (fc != FC_FREE)
			cyc += sim_member_vpu(s->memo, hw, g->c->instrs[m]);
	}
	if (reduce && !alone)
		return -1;
	return cyc / hw_spec_kernel_cores(hw, elems);
}

bool sim_fusion_space_split_floor(struct sim_fusion_space *s,
				  const struct hw_spec *hw, int at,
				  uint64_t *key, double *floor_ns)
{
	const struct grouping *g = &s->g;
	int id = g->grp[at];
	if (!s->key_of || id < 0 || g->g_root[id] == at ||
	    !works(g, at, false) ||
	    hw->clock_hz <= 0)
		return false;
	if (!s->floor_cyc) {
		s->floor_cyc = ts_malloc(((size_t)g->n_groups + 1) *
					 sizeof *s->floor_cyc);
		if (!s->floor_cyc)
			return false;
		for (int q = 0; q < g->n_groups; q++)
			s->floor_cyc[q] = NAN;
		sim_member_memo_use(s->memo, hw);
	}
	if (isnan(s->floor_cyc[id]))
		s->floor_cyc[id] = floor_cycles(s, hw, id);
	if (s->floor_cyc[id] < 0)
		return false;
	*key = s->key_of[id];
	*floor_ns = 2 * (hw->kernel_overhead_ns + hw->step_overhead_ns +
			 2 * hw->dma_latency_ns) +
		    s->floor_cyc[id] / hw->clock_hz * 1e9;
	return true;
}

int sim_fusion_space_decided(const struct sim_fusion_space *trial)
{
	return trial->g.n_redecided;
}

long sim_fusion_space_worked(const struct sim_fusion_space *s)
{
	return s->memo ? s->memo->n_worked : 0;
}

enum ts_status sim_fusion_space_kernel(const struct sim_fusion_space *s, int k,
				       struct sim_kernel *out, bool *none,
				       struct ts_diag *d)
{
	return sim_group_kernel(s->m, &s->g, s->kernels[k], s->memo, out, none,
				d);
}

void sim_fusion_space_comps(const struct ir_module *m, bool *grouped)
{
	if (sim_module_unfused(m) && m->entry)
		sim_mark_grouped(m->entry, grouped, 0);
}

void sim_fusion_plan_free(struct sim_fusion_plan *plan)
{
	for (int i = 0; plan->force && i < plan->n_comps; i++)
		ts_free(plan->force[i]);
	ts_free(plan->force);
	ts_free(plan->flips);
	memset(plan, 0, sizeof *plan);
}
