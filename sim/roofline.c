/*
 * roofline.c: the roofline of a kernel, from the HLO's meaning alone (the
 * work cost.c counts from the IR, never the model's plan): per kernel the
 * slowest of MXU, VPU and HBM at peak rates plus a fixed launch cost;
 * collectives at ICI bandwidth. No tiles, no pipelining, no padding of
 * the MXU, no fitted cost class: a floor on any plan's time, and the
 * baseline the validation compares the analytic model against. The
 * plausibility envelope (sim_kernel_plausible) is measured against it.
 */
#include "sim.h"

#include <math.h>
#include <string.h>

#include "hw_units.h"
#include "kernels_int.h"
#include "model.h"

/*
 * Collective kernel (ns):
 *   sim_collective_ici   (sim/slice.c: the model's own ICI cost; without
 *   a slice hw_ici_collective's ring, all-reduce 2(n-1)/n B,
 *   all-gather / reduce-scatter / all-to-all (n-1)/n B over the ring's
 *   links plus latency per ring step, or a one-shot all-reduce when
 *   faster; on a slice hw_ici_torus over the axes it spans)
 *   max with the kernel's bytes read and written at HBM bandwidth (each
 *   once; a group of one device moves no ICI bytes but still copies)
 *   + kernel_overhead_ns
 * B, n: sim_collective_of (the buffer each device holds in full, in
 * whatever memory space, the devices of the group); the HBM bytes are
 * the kernel's (cost.c: a VMEM buffer moves none). Known wrong: torus
 * algorithms that run several axes at once.
 */
static enum ts_status collective_roofline(const struct sim_kernel *k,
					  const struct hw_spec *hw,
					  struct sim_estimate *out)
{
	struct hw_ici_cost ic;
	sim_collective_ici(k, hw, &ic, NULL);
	double ici = ic.ns, bw = hw_spec_hbm_bw(hw);
	double hbm = bw > 0 ? (out->bytes_read + out->bytes_written) / bw * 1e9
			    : 0.0;
	double t = ici >= hbm ? ici : hbm;
	out->time_ns = t + hw->kernel_overhead_ns;
	out->bound = t < hw->kernel_overhead_ns ? HW_UNIT_OVERHEAD
		     : ici >= hbm		 ? HW_UNIT_ICI
						 : HW_UNIT_HBM;
	return TS_OK;
}

/*
 * TensorCore kernel (ns):
 *   t_mxu = 2 x mxu_macs / hw_spec_peak_flops          (bf16 peak; an
 *           int8 x int8 MAC counts 1 / mxu.int8_rate of one)
 *   t_vpu = sum_c vpu_elem_ops_c x slot / (sublanes x lanes x alus)
 *           / clock_hz / cores          (padded elements, one slot each:
 *           slot = 1, or the cheapest vpu.cost.* or vpu.xlu_*_cost when
 *           below 1: a lane reduce's vreg costs its XLU figure)
 *   t_hbm = (bytes_read + bytes_written) / hw_spec_hbm_bw  (padded bytes)
 *   time  = max(t_mxu, t_vpu, t_hbm) + kernel_overhead_ns
 * bound = the unit of the largest term, OVERHEAD when the fixed cost
 * exceeds it. Every element op costs one issue slot, whatever its class:
 * the VPU's peak, below the fitted class costs (vpu.cost.*) the model
 * charges, so that the roofline stays a floor the spec's fits cannot move.
 * Assumes perfect overlap of the units and peak rates throughout; each
 * byte moved once (cost.c: slices read their window, in-place updates
 * write their update). An async DMA (copy-start, slice-start: sim_kernel
 * .dma) runs on the DMA engines with no launch: max(HBM bytes, the
 * transferred result) / hw_spec_hbm_bw. A kernel XLA runs nothing for
 * (sim_kernel_free) is 0. A floor by intent: test_envelope, test_envelope_gen
 * and fuzz_pipeline hold the model to it. Known wrong (too low): small
 * kernels (pipeline fill, DMA latency), f32 matmuls (several bf16
 * passes), MXU padding of small K/N, lane reductions (XLU),
 * transcendentals (the EUP): the analytic model (model.c) covers those.
 * Source: the roofline of docs/HLO.md 3.1 (optimal_seconds) with TPU
 * rates from hwspecs/.
 */
static enum ts_status roofline(const struct sim_kernel *k,
			       const struct hw_spec *hw,
			       struct sim_estimate *out, struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	if (!k || !k->instr || !hw) {
		ts_diag_set(d, NULL, 0, 0, "roofline of an empty kernel");
		return TS_ERR_MISUSE;
	}
	const struct sim_work *w = &k->work;
	out->feasible = true;
	out->flops = w->flops;
	out->bytes_read = w->bytes_read;
	out->bytes_written = w->bytes_written;
	out->bound = HW_UNIT_NONE;
	if (k->kind == SIM_KERNEL_UNMODELLED) {
		out->modelled = false;
		return TS_OK;
	}
	out->modelled = true;
	if (k->idle || /* a prefetch that moves nothing (placement.c) */
	    (k->kind != SIM_KERNEL_COLLECTIVE && sim_kernel_free(k))) {
		out->flops = out->bytes_read = out->bytes_written = 0;
		return TS_OK;
	}
	double peak = hw_spec_peak_flops(hw), bw = hw_spec_hbm_bw(hw);
	double per_vreg = (double)hw->vpu_sublanes * hw->vpu_lanes *
			  (hw->vpu_alus > 0 ? hw->vpu_alus : 1);
	int cores = hw_spec_cores(hw);
	if (peak <= 0 || bw <= 0 || per_vreg <= 0 || hw->clock_hz <= 0 ||
	    cores < 1) {
		ts_diag_set(d, NULL, 0, 0,
			    "hw spec %s: peak FLOP/s, HBM bandwidth, vreg size "
			    "and clock must be positive",
			    hw->name);
		return TS_ERR_SPEC;
	}
	if (k->dma) {
		double hbm = sim_dma_bytes(k) / bw * 1e9,
		       pcie = hw_mem_pcie_ns(hw, sim_dma_host_bytes(k));
		out->time_ns = hbm > pcie ? hbm : pcie;
		out->bound = HW_UNIT_HBM; /* the DMA engines' (model.c) */
		out->dma_cycles = out->time_ns * 1e-9 * hw->clock_hz;
		return TS_OK;
	}
	out->overhead_ns = hw->kernel_overhead_ns;
	if (k->kind == SIM_KERNEL_COLLECTIVE)
		return collective_roofline(k, hw, out);

	double macs = sim_work_bf16_macs(w, hw);
	double t_mxu = 2.0 * macs / peak * 1e9;
	/* one slot per op, or the cheapest class or XLU op where a spec
	 * makes one cheaper than the unit (the fields go down to 1/8) */
	double slot = fmin(1.0, fmin(hw->xlu_lane_reduce_cost,
				     fmin(hw->xlu_lane_permute_cost,
					  hw->xlu_transpose_cost)));
	double vpu_slots = 0;
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++) {
		vpu_slots += w->vpu_elem_ops[c];
		if (hw->vpu_class_cost[c] < slot)
			slot = hw->vpu_class_cost[c];
	}
	double vpu_cycles = vpu_slots * slot / per_vreg;
	double t_vpu = vpu_cycles / hw->clock_hz / cores * 1e9;
	double bytes = w->bytes_read + w->bytes_written;
	double t_hbm = bytes / bw * 1e9;

	double t = t_mxu;
	out->bound = HW_UNIT_MXU;
	if (t_vpu > t) {
		t = t_vpu;
		out->bound = HW_UNIT_VPU;
	}
	if (t_hbm > t) {
		t = t_hbm;
		out->bound = HW_UNIT_HBM;
	}
	/* an async collective fusion's collective runs beside: its ICI
	 * time (as collective_roofline's) is a floor too */
	const struct ir_instr *coll =
		k->instr && !k->chained
			? sim_side_collective(k->instr)
			: NULL;
	if (coll) {
		enum hw_collective c;
		double cb;
		int bits;
		struct hw_ici_cost ic;
		sim_side_collective_of(coll, &c, &cb, &bits);
		sim_collective_cost(hw, c, cb, k->group_devices, bits, k->groups,
				    0, &ic, NULL);
		if (ic.ns > t) {
			t = ic.ns;
			out->bound = HW_UNIT_ICI;
		}
	}
	if (hw->kernel_overhead_ns > t)
		out->bound = HW_UNIT_OVERHEAD;
	out->time_ns = t + hw->kernel_overhead_ns;
	out->mxu_cycles = t_mxu * 1e-9 * hw->clock_hz;
	out->vpu_cycles = vpu_cycles / cores;
	out->dma_cycles = t_hbm * 1e-9 * hw->clock_hz;
	out->mxu_util = hw_mxu_utilisation(hw, macs, 1, cores, out->time_ns);
	return TS_OK;
}

/* The roofline of kernel k, with the program's start when k starts it
 * (sim_program_start_ns: a fixed cost, like the launch). */
enum ts_status sim_kernel_roofline(const struct sim_kernel *k,
				   const struct hw_spec *hw,
				   struct sim_estimate *out, struct ts_diag *d)
{
	enum ts_status st = roofline(k, hw, out, d);
	if (st == TS_OK && out->modelled) {
		double start = sim_program_start_ns(k, hw);
		out->time_ns += start;
		out->overhead_ns += start;
	}
	return st;
}

bool sim_kernel_plausible(const struct sim_kernel *k,
			  const struct sim_estimate *e,
			  const struct hw_spec *hw)
{
	struct sim_estimate r;
	struct ts_diag d = {0};
	if (!e->modelled || e->untiled ||
	    sim_kernel_roofline(k, hw, &r, &d) != TS_OK)
		return true;
	return e->feasible &&
	       !(e->time_ns > SIM_ENVELOPE_X * r.time_ns + SIM_ENVELOPE_NS);
}
