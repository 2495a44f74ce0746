/*
 * memo.c: what a kernel's work count (cost.c) and plan (plan.c) work out
 * member by member, kept per instruction of one computation for the
 * fusion search (fusion_space.c), which costs thousands of kernels made
 * of the same instructions: a chain's trial splits its one kernel in two,
 * and each half was counted and planned member by member again (issue 37
 * item 7, docs/BENCH.md). Each member's figure is worked out once; the
 * kernel's sums still run over its members in their order and add the
 * same values, so a kernel costed with the memo is bit-identical to one
 * costed without (test_fusion test_memo_exact checks it).
 *
 * Kept per instruction: the work count_instr adds (for an instruction
 * that adds to each field of struct sim_work at most once: the memo adds
 * the figure once, x + 0 leaving a field it does not touch as it was; a
 * nested fusion and a select-and-scatter add more than once and are
 * counted afresh), its VPU cycles on one spec (sim_instr_vpu_cycles),
 * and, for the kernel being planned, its place among the members (a mark
 * of a generation per plan: no table to hash into per kernel).
 */
#include "kernels_int.h"
#include "plan_int.h"

#include <string.h>

/* sim_member_memo.state's flags per instruction: its work kept; its work
 * counted afresh every time (adds_once); its VPU cycles kept */
enum { MEMO_WORK = 1, MEMO_WORK_AFRESH = 2, MEMO_VPU = 4 };

struct sim_member_memo *sim_member_memo_new(const struct ir_computation *c)
{
	struct sim_member_memo *mm = ts_calloc(1, sizeof *mm);
	size_t n = (size_t)(c->n_instrs > 0 ? c->n_instrs : 1);
	if (!mm)
		return NULL;
	mm->c = c;
	mm->state = ts_calloc(n, 1);
	mm->work = ts_malloc(n * sizeof *mm->work);
	mm->vpu = ts_malloc(n * sizeof *mm->vpu);
	mm->at = ts_malloc(n * sizeof *mm->at);
	mm->stamp = ts_calloc(n, sizeof *mm->stamp);
	if (!mm->state || !mm->work || !mm->vpu || !mm->at || !mm->stamp) {
		sim_member_memo_free(mm);
		return NULL;
	}
	return mm;
}

void sim_member_memo_free(struct sim_member_memo *mm)
{
	if (!mm)
		return;
	ts_free(mm->state);
	ts_free(mm->work);
	ts_free(mm->vpu);
	ts_free(mm->at);
	ts_free(mm->stamp);
	ts_free(mm);
}

/* in's index in the memo's computation, or -1 when in is not one of its
 * instructions (another computation's, or a stand-in for one: kernels.c
 * lowers a library call or a copy-start into a copy of the instruction
 * under another opcode, with the same parent and index). */
static int memo_index(const struct sim_member_memo *mm,
		      const struct ir_instr *in)
{
	int i = sim_index_in(mm->c, in);
	return i >= 0 && mm->c->instrs[i] == in ? i : -1;
}

/* Whether count_instr adds to each field of struct sim_work at most once
 * for op (see count_instr in cost.c: a nested fusion adds its body's,
 * a select-and-scatter two applications). */
static bool adds_once(enum ir_op op)
{
	return op != IR_OP_FUSION && op != IR_OP_SELECT_AND_SCATTER;
}

enum ts_status sim_member_memo_work(struct sim_member_memo *mm,
				    const struct ir_instr *in,
				    const char *file, struct sim_work *w,
				    struct ts_diag *d)
{
	int i = memo_index(mm, in);
	if (!(i >= 0 && (mm->state[i] & MEMO_WORK)))
		mm->n_worked++;
	if (i < 0 || (mm->state[i] & MEMO_WORK_AFRESH))
		return sim_instr_work(in, file, w, d);
	if (!(mm->state[i] & MEMO_WORK)) {
		if (!adds_once(in->op)) {
			mm->state[i] |= MEMO_WORK_AFRESH;
			return sim_instr_work(in, file, w, d);
		}
		memset(&mm->work[i], 0, sizeof mm->work[i]);
		enum ts_status st = sim_instr_work(in, file, &mm->work[i], d);
		if (st != TS_OK)
			return st; /* not kept: asked again, it fails again */
		mm->state[i] |= MEMO_WORK;
	}
	const struct sim_work *x = &mm->work[i];
	w->flops += x->flops;
	w->mxu_macs += x->mxu_macs;
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		w->vpu_elem_ops[c] += x->vpu_elem_ops[c];
	w->transcendentals += x->transcendentals;
	return TS_OK;
}

double sim_member_memo_vpu(struct sim_member_memo *mm,
			   const struct hw_spec *hw, const struct ir_instr *in)
{
	int i = memo_index(mm, in);
	TS_ASSERT(mm->hw_at == hw); /* sim_member_memo_begin's */
	if (!(i >= 0 && (mm->state[i] & MEMO_VPU)))
		mm->n_worked++;
	if (i < 0)
		return sim_instr_vpu_cycles(hw, in, 0);
	if (!(mm->state[i] & MEMO_VPU)) {
		mm->vpu[i] = sim_instr_vpu_cycles(hw, in, 0);
		mm->state[i] |= MEMO_VPU;
	}
	return mm->vpu[i];
}

bool sim_member_memo_begin(struct sim_member_memo *mm,
			   const struct hw_spec *hw,
			   const struct ir_computation *comp,
			   const struct ir_instr *const *members, int n)
{
	if (comp != mm->c)
		return false;
	if (!mm->have_hw || memcmp(&mm->hw, hw, sizeof *hw) != 0) {
		for (int q = 0; q < mm->c->n_instrs; q++)
			mm->state[q] &= (unsigned char)~MEMO_VPU;
		memcpy(&mm->hw, hw, sizeof *hw);
		mm->have_hw = true;
	}
	mm->hw_at = hw;
	int gen = ts_next_gen(&mm->gen, mm->stamp, NULL,
			      (size_t)(mm->c->n_instrs > 0 ? mm->c->n_instrs : 1));
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
