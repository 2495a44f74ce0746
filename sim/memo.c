/*
 * memo.c: the fusion search's memo of one computation's instructions
 * (kernels_int.h struct sim_member_memo), which a fusion space keeps
 * (fusion_space.c) and the kernels it makes carry (sim_kernel.memo).
 *
 * Why: the search costs thousands of kernels made of the same
 * instructions (a chain's trial splits its one kernel in two, and each
 * half was counted and planned member by member again: issue 37 item 7,
 * docs/BENCH.md). With the memo each member's figure is worked out once
 * (its work by cost.c, its VPU cycles on one spec by plan.c), and found
 * again by index; a kernel's place marks take the place of a hash table
 * built per kernel. The kernel's sums still run over its members in their
 * order and add the same values, so a kernel costed with the memo is
 * bit-identical to one costed without (test_fusion test_memo_exact).
 * Nothing here calls the rest of sim/: cost.c and plan.c fill the memo.
 */
#include "kernels_int.h"

#include <string.h>

struct sim_member_memo *sim_member_memo_new(const struct ir_computation *c)
{
	struct sim_member_memo *mm = ts_calloc(1, sizeof *mm);
	size_t n = (size_t)(c->n_instrs > 0 ? c->n_instrs : 1);
	if (!mm)
		return NULL;
	mm->c = c;
	mm->has_work = ts_calloc(n, sizeof *mm->has_work);
	mm->work = ts_malloc(n * sizeof *mm->work);
	mm->has_vpu = ts_calloc(n, sizeof *mm->has_vpu);
	mm->vpu = ts_malloc(n * sizeof *mm->vpu);
	mm->at = ts_malloc(n * sizeof *mm->at);
	mm->stamp = ts_calloc(n, sizeof *mm->stamp);
	if (!mm->has_work || !mm->work || !mm->has_vpu || !mm->vpu ||
	    !mm->at || !mm->stamp) {
		sim_member_memo_free(mm);
		return NULL;
	}
	return mm;
}

void sim_member_memo_free(struct sim_member_memo *mm)
{
	if (!mm)
		return;
	ts_free(mm->has_work);
	ts_free(mm->work);
	ts_free(mm->has_vpu);
	ts_free(mm->vpu);
	ts_free(mm->at);
	ts_free(mm->stamp);
	ts_free(mm);
}

int sim_member_memo_index(const struct sim_member_memo *mm,
			  const struct ir_instr *in)
{
	int i = sim_index_in(mm->c, in);
	return i >= 0 && mm->c->instrs[i] == in ? i : -1;
}

void sim_member_memo_use(struct sim_member_memo *mm, const struct hw_spec *hw)
{
	if (mm->have_hw && memcmp(&mm->hw, hw, sizeof *hw) == 0)
		return;
	size_t n_instrs = (size_t)(mm->c->n_instrs > 0 ? mm->c->n_instrs : 1);
	memset(mm->has_vpu, 0, n_instrs * sizeof *mm->has_vpu);
	memcpy(&mm->hw, hw, sizeof *hw);
	mm->have_hw = true;
}

bool sim_member_memo_begin(struct sim_member_memo *mm,
			   const struct hw_spec *hw,
			   const struct ir_computation *comp,
			   const struct ir_instr *const *members, int n)
{
	if (comp != mm->c)
		return false;
	size_t n_instrs = (size_t)(comp->n_instrs > 0 ? comp->n_instrs : 1);
	sim_member_memo_use(mm, hw);
	int gen = ts_next_gen(&mm->gen, mm->stamp, NULL, n_instrs);
	for (int q = 0; q < n; q++) {
		const struct ir_instr *in = members[q];
		if (in->parent == comp && in->index >= 0 &&
		    in->index < comp->n_instrs) {
			mm->at[in->index] = q;
			mm->stamp[in->index] = gen;
		}
	}
	return true;
}
