/*
 * fusion_space.c: the decision space of the fusion policies, as the
 * searches above the model see it (hybrid/hyb_fusion.c): a computation
 * grouped under a set of decisions (grouping.c), the instructions whose
 * fusion the rules decide, the other way each can go, and the kernels the
 * grouping forms, each with a key for caching its time. The grouping's
 * insides stay here; a policy sees only this and struct sim_fusion_plan.
 */
#include "kernels_int.h"

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
