/*
 * hw_vpu.c: the vector unit of one TensorCore: vregs of hw->vpu_sublanes x
 * hw->vpu_lanes 32-bit words, hw->vpu_alus ALU slots per word and cycle,
 * per-op costs by class (hw->vpu_class_cost) and cross-lane reductions on
 * the XLU (hw->xlu_lane_reduce_cost). Used by sim/model.c for elementwise
 * work, reductions and the epilogues of convolution fusions.
 */
#include "hw_units.h"

#include <math.h>

/*
 * vregs = padded_elems / (sublanes x lanes) x max(1, bits / 32)
 * Units: 32-bit vector registers. Assumes the elements are already padded
 * to the layout tiles (an f32[3,5] is one 8 x 128 vreg) and that narrower
 * types are unpacked to 32 bits for VPU math ("only 32-bit elementwise math
 * is native", TPU.md section 2 rule 2), so a bf16 element costs as much as
 * an f32 one. Known wrong: v5+ packs bf16 two per word for some ops.
 */
double hw_vpu_vregs(const struct hw_spec *hw, double padded_elems, int bits)
{
	double per = (double)hw->vpu_sublanes * hw->vpu_lanes;
	if (per <= 0 || padded_elems <= 0)
		return 0.0;
	double words = bits > 32 ? bits / 32.0 : 1.0;
	return ceil(padded_elems / per) * words;
}

/*
 * cycles = vregs x cost[class] / alus
 * Units: core cycles. cost[class] is in issue slots per vreg (simple ops =
 * 1); hw->vpu_alus ops issue per cycle. Assumes the op is throughput-bound
 * (enough independent vregs to fill the pipeline) and that loads and stores
 * issue in their own slots. Known wrong: a dependence chain through one
 * accumulator runs at the ALU latency, not its throughput. Source: TPU.md
 * section 2 rule 7 (cost classes), hwspecs/<gen>.yaml for the numbers.
 */
double hw_vpu_op_cycles(const struct hw_spec *hw, double vregs,
			enum hw_vpu_class c)
{
	if (vregs <= 0 || (unsigned)c >= HW_VPU_CLASS_COUNT)
		return 0.0;
	double alus = hw->vpu_alus > 0 ? hw->vpu_alus : 1;
	return vregs * hw->vpu_class_cost[c] / alus;
}

/*
 * cycles = vregs x (store ? f16_store_cost : f16_load_cost) / alus
 * Units: core cycles; the costs in issue slots per 1024-element vreg, one
 * conversion each: f16 -> f32 after a load (unpack the packed halves,
 * re-bias the exponent, fix up subnormals, inf and NaN), f32 -> f16 before
 * a store (round to nearest even, clamp the exponent, pack). f16 (IEEE
 * half) is not a VPU type (TPU.md section 2 rule 2: only 32-bit math is
 * native; bf16 converts by a shift), so every f16 array a kernel loads or
 * stores pays this per vreg; inside a fusion the compiler keeps f32
 * (xla_allow_excess_precision), so only kernel boundaries pay. Assumes the
 * conversion shares the VALU slots with the kernel's other element ops.
 * Known wrong: a generation with native f16 arithmetic (none modelled).
 * Source: hwspecs/<gen>.yaml vpu.f16_load_cost / f16_store_cost.
 */
double hw_vpu_f16_convert_cycles(const struct hw_spec *hw, double vregs,
				 bool store)
{
	if (vregs <= 0)
		return 0.0;
	double alus = hw->vpu_alus > 0 ? hw->vpu_alus : 1;
	return vregs *
	       (store ? hw->vpu_f16_store_cost : hw->vpu_f16_load_cost) / alus;
}

/*
 * Reductions (cycles):
 *   major:   in combiner ops                     (vreg + vreg: each input
 *            vreg into an accumulator that starts at the init value)
 *   sublane: major part + out x log2(sublanes) x (combiner + 1 shuffle)
 *   lane:    major part + out x xlu_lane_reduce_cost
 * Assumes the input is folded vreg by vreg into out_vregs accumulators,
 * then each accumulator is reduced inside the register once. Reductions
 * along the lane dim are the dearest, along sublanes medium, along major
 * dims free beyond the adds (TPU.md section 2 rule 7). Known wrong: the XLU
 * may overlap with VALU work; we charge it to the same slots.
 */
double hw_vpu_reduce_cycles(const struct hw_spec *hw, double in_vregs,
			    double out_vregs, enum hw_reduce_axis axis,
			    enum hw_vpu_class c)
{
	if (in_vregs <= 0)
		return 0.0;
	if (out_vregs < 1.0)
		out_vregs = 1.0;
	double cyc = hw_vpu_op_cycles(hw, in_vregs, c);
	switch (axis) {
	case HW_REDUCE_MAJOR:
		break;
	case HW_REDUCE_SUBLANE: {
		double steps = hw->vpu_sublanes > 1 ? log2(hw->vpu_sublanes) : 0;
		cyc += hw_vpu_op_cycles(hw, out_vregs * steps, c) +
		       hw_vpu_op_cycles(hw, out_vregs * steps, HW_VPU_SIMPLE);
		break;
	}
	case HW_REDUCE_LANE: {
		double alus = hw->vpu_alus > 0 ? hw->vpu_alus : 1;
		cyc += out_vregs * hw->xlu_lane_reduce_cost / alus;
		break;
	}
	default:
		break;
	}
	return cyc;
}
