/*
 * explain.c: `--explain`, the step-by-step derivation of one kernel's
 * estimate (sim_kernel_explain, sim.h). It prints the plan (grid, blocks,
 * accesses) and the very terms sim_plan_estimate_detail() returns, summed
 * the way the estimate sums them (test_explain re-adds them), so the two
 * cannot drift apart.
 */
#include "kernels_int.h"
#include "model.h"

#include <stdio.h>

#include "hw_units.h"

static const char *const role_names[] = {
	[SIM_ROLE_M] = "rows",
	[SIM_ROLE_N] = "out-features",
	[SIM_ROLE_BATCH] = "batch",
	[SIM_ROLE_TAP] = "taps",
	[SIM_ROLE_K] = "contraction",
};
_Static_assert(TS_ARRAY_LEN(role_names) == SIM_ROLE_COUNT,
	       "role_names must name every role");

static void put_grid(FILE *f, const struct sim_tgrid *g)
{
	for (int i = 0; i < g->rank; i++)
		fprintf(f, "%s%lld", i ? "x" : "", (long long)g->tiles[i]);
	if (g->rank == 0)
		fputs("(scalar)", f);
}

/* A collective on hw's slice (sim_collective_ici's cost c of its group
 * g): the slice, the group, each axis it spans in the order costed (its
 * devices, ring, line or dcn, transfer and latency), the ICI and DCN
 * parts. */
static void put_slice_collective(FILE *f, const struct sim_kernel *k,
				 const struct hw_spec *hw,
				 const struct hw_ici_cost *c, int64_t g)
{
	enum hw_collective kind;
	double bytes, hbm;
	int64_t devices;
	int bits;
	char shape[64];
	sim_collective_of(k, &kind, &bytes, &hbm, &devices, &bits);
	hw_slice_format(&hw->slice, shape, sizeof shape);
	int64_t n_groups = k->groups ? k->groups->n_groups : 1;
	int64_t across = k->instr ? sim_megascale_slices(k->instr) : 0;
	if (across)
		fprintf(f, "  collective: %s of %.0f bytes over %lld slices "
			   "(the megascale runtime's, over DCN)\n",
			ir_op_name(k->instr->attrs.megascale_op), bytes,
			(long long)across);
	else
		fprintf(f, "  collective: %s of %.0f bytes on the slice %s%s; group "
		   "%lld of %lld (%lld devices)%s\n",
		ir_op_name(k->main_op), bytes, shape,
		hw->slice.at ? " (the compile's device order)" : "",
		(long long)g,
		(long long)n_groups,
		(long long)(k->groups ? ir_groups_len(k->groups, g) : devices),
		n_groups > 1 ? ", the slowest" : "");
	for (int i = 0; i < c->n_axes; i++) {
		const struct hw_axis_cost *a = &c->axes[i];
		bool dcn = a->axis.link == HW_LINK_DCN;
		fprintf(f, "    %s: %lld devices, %s%s: transfer %.1f + latency "
			   "%.1f ns (%s)\n",
			hw_place_name(a->axis.place), (long long)a->axis.k,
			hw_link_name(a->axis.link),
			a->axis.link == HW_LINK_RING ? " (wraparound)"
			: a->axis.link == HW_LINK_LINE ? " (no wraparound)"
						       : "",
			a->transfer_ns, a->latency_ns, dcn ? "DCN" : "ICI");
	}
	fprintf(f, "  ICI %.1f + DCN %.1f = %.1f ns = max(transfer %.1f, VPU "
		   "reduction %.1f) + latency %.1f\n",
		c->ns - c->dcn_ns, c->dcn_ns, c->ns, c->transfer_ns,
		c->reduce_ns, c->latency_ns);
}

enum ts_status sim_kernel_explain(const struct sim_kernel *k,
				  const struct hw_spec *hw,
				  const struct sim_tile_config *cfg, FILE *f,
				  struct ts_diag *d)
{
	struct sim_plan p;
	struct sim_est_detail x = {0};
	/* the fixed cost the sums below start from: the launch, and the
	 * program's start in its first kernel (sim_program_start_ns) */
	double start = sim_program_start_ns(k, hw);
	double launch = hw->kernel_overhead_ns + start;
	enum ts_status st = sim_plan_build(k, hw, &p, d);
	if (st == TS_ERR_UNSUPPORTED_OP) {
		struct sim_estimate r;
		struct ts_diag rd = {0};
		if (sim_kernel_roofline(k, hw, &r, &rd) != TS_OK)
			goto out;
		fprintf(f, "kernel %s (%s)\n  no tile grid (%s): costed by its "
			   "roofline, max(MXU, VPU, HBM) + kernel %.6g = %.6g ns, "
			   "bound by %s\n",
			k->name ? k->name : "?", sim_kernel_kind_name(k->kind),
			d->msg, launch, r.time_ns, hw_unit_name(r.bound));
		st = TS_OK;
		goto out;
	}
	if (st != TS_OK)
		goto out;
	/* the plan sim_plan_cost takes: p, or p.relaid */
	const struct sim_plan *q;
	struct sim_tile_config full;
	struct sim_estimate chosen;
	st = sim_plan_choose(&p, hw, cfg, &q, &full, &chosen, d);
	if (st != TS_OK)
		goto out;
	struct sim_estimate e;
	st = sim_plan_estimate_detail(q, hw, &full, &e, &x, d);
	if (st != TS_OK)
		goto out;
	char buf[256];
	fprintf(f, "kernel %s (%s)\n", k->name ? k->name : "?",
		sim_kernel_kind_name(k->kind));
	if (start > 0)
		fprintf(f, "  the program's first kernel: kernel %.6g = launch "
			   "%.6g + the program's start %.6g (overhead.program_ns)\n",
			launch, hw->kernel_overhead_ns, start);
	if (k->n_vmem > 0) {
		fprintf(f, "  in VMEM by memory-space assignment (room "
			   "vmem.bytes - vmem.scoped_bytes = %.6g B; "
			   "sim/placement.c):",
			hw->vmem_bytes - hw->vmem_scoped_bytes);
		for (int i = 0; i < k->n_vmem; i++)
			fprintf(f, "%s %s", i ? "," : "", k->vmem[i]->name);
		fputc('\n', f);
	}
	if (k->lowered && k->lowered->attrs.custom_call_target)
		fprintf(f, "  library call %s, costed as the %s it computes "
			   "(sim/kernels.c \"Library calls\")\n",
			k->lowered->attrs.custom_call_target,
			ir_op_name(k->lowered->op));
	if (k->relayout)
		fprintf(f, "  relayout: the copy XLA adds after %s, computed in "
			   "its operand's order, to the result's layout "
			   "(sim/kernels.c \"Relayouts\")\n",
			k->lowered->operands[0]->name);
	switch (q->kind) {
	case SIM_PLAN_UNMODELLED:
		fprintf(f, "  not modelled: zero time\n");
		goto out;
	case SIM_PLAN_DECLARED: {
		const struct ir_declared *dc = k->instr->attrs.declared;
		fprintf(f, "  Pallas kernel (%s), costed from its declared cost "
			   "(the units at once): %.4g FLOPs, %.4g transcendentals; "
			   "%.0f bytes read, %.0f written (declared %.4g)\n"
			   "  time = kernel %.0f + max(MXU %.1f, VPU %.1f, HBM "
			   "%.1f) = %.1f ns (%s)\n",
			k->instr->attrs.custom_call_target
				? k->instr->attrs.custom_call_target
				: "custom-call",
			dc->flops,
			dc->transcendentals, k->work.bytes_read,
			k->work.bytes_written, dc->bytes, launch,
			e.mxu_cycles / (hw->clock_hz * 1e-9),
			e.vpu_cycles / (hw->clock_hz * 1e-9),
			e.dma_cycles / (hw->clock_hz * 1e-9), e.time_ns,
			hw_unit_name(e.bound));
		goto out;
	}
	case SIM_PLAN_FREE:
		fprintf(f, "  %s, 0 ns\n",
			k->idle && k->evict
				? "an eviction memory-space assignment did not "
				  "place (its value is in VMEM up to its last "
				  "reader, or in HBM for all of them): it moves "
				  "nothing"
			: k->idle ? "a prefetch memory-space assignment did not "
				    "place (no VMEM room on this spec, or its "
				    "copy would cost more than its readers "
				    "save): it moves nothing"
				  : "bitcast / layout-preserving: no device work");
		goto out;
	case SIM_PLAN_DMA:
		fprintf(f, "  async DMA: the %s of %s into %s, run by "
			   "the DMA engines beside the TensorCore\n"
			   "  HBM: %.0f B at %.1f B/ns (bytes read %.0f + "
			   "written %.0f, at least the result once)\n",
			ir_op_name(k->instr->op),
			k->instr->n_operands > 0 ? k->instr->operands[0]->name
						 : "?",
			k->instr->shape.layout.memory_space == 1   ? "VMEM"
			: k->instr->shape.layout.memory_space == 5 ? "host memory"
			: k->evict				   ? "HBM"
								   : "its result",
			q->other_bytes, hw_mem_bytes_per_ns(hw),
			k->work.bytes_read, k->work.bytes_written);
		if (q->host_bytes > 0)
			fprintf(f, "  PCIe: %.0f B at %.1f B/ns (the value, "
				   "between host memory and the chip)\n",
				q->host_bytes,
				q->host_bytes / hw_mem_pcie_ns(hw, q->host_bytes));
		fprintf(f, "  time = latency %.1f + max(HBM, PCIe) = %.1f ns "
			   "(%s)\n",
			hw->dma_latency_ns, e.time_ns, hw_unit_name(e.bound));
		goto out;
	case SIM_PLAN_COLLECTIVE: {
		struct hw_ici_cost ici;
		int64_t g;
		sim_collective_ici(k, hw, &ici, &g);
		if (g >= 0) {
			put_slice_collective(f, k, hw, &ici, g);
			fprintf(f, "  time = kernel %.6g + max(ICI + DCN, DMA of "
				   "%.0f HBM bytes) = %.1f ns (%s)\n",
				launch, q->other_bytes, e.time_ns,
				hw_unit_name(e.bound));
			goto out;
		}
		fprintf(f, "  collective: %s, ICI %.1f ns = max(transfer %.1f, "
			   "VPU reduction %.1f) + latency %.1f; HBM %.0f bytes\n"
			   "  time = kernel %.6g + max(ICI, DMA) = %.1f ns (%s)\n",
			ici.one_shot ? "one-shot" : "ring", ici.ns,
			ici.transfer_ns, ici.reduce_ns, ici.latency_ns,
			q->other_bytes, launch, e.time_ns,
			hw_unit_name(e.bound));
		goto out;
	}
	default:
		break;
	}
	ir_shape_format(sim_tile_space_shape(q->target), buf, sizeof buf);
	fprintf(f, "  tiled: %s %s, grid ", q->target->name, buf);
	put_grid(f, &q->out);
	if (q->has_kernel) {
		ir_shape_format(&q->target->operands[1]->shape, buf, sizeof buf);
		fprintf(f, "; kernel %s grid ", buf);
		put_grid(f, &q->kern);
	}
	sim_tile_config_format(&full, buf, sizeof buf);
	fprintf(f, "\n  config: %s%s\n", buf,
		cfg && cfg->n_out > 0 ? "" : " (default)");
	fprintf(f, "  combined grid (outer to inner):\n");
	for (int i = 0; i < q->n_dims; i++) {
		const struct sim_blocks *b = &x.bl[i];
		fprintf(f,
			"    dim %d %-12s %lld tiles of %lld elems, bound %lld -> "
			"%lld blocks (%lld x %lld elems",
			i, role_names[q->dims[i].role], (long long)q->dims[i].tiles,
			(long long)q->dims[i].tile, (long long)b->bound,
			(long long)b->nb, (long long)b->n_full, (long long)b->full);
		if (b->n_last)
			fprintf(f, " + 1 x %lld ragged", (long long)b->last);
		fprintf(f, ")\n");
	}
	fprintf(f, "  steps: %lld (%lld output blocks)\n", (long long)x.steps,
		(long long)x.out_steps);
	fprintf(f, "  accesses (bytes padded to tiles):\n");
	for (int a = 0; a < q->n_access; a++) {
		const struct sim_plan_access *ac = &q->acc[a];
		const struct sim_acc_cost *c = &x.ac[a];
		fprintf(f,
			"    %-6s %-28s %10.0f B array, block %9.0f B, %6.0f "
			"transfers, x%.0f passes, moves %11.0f B in %.0f "
			"runs%s%s\n",
			ac->output ? "write" : "read", ac->name, ac->bytes, c->block,
			c->transfers, c->refetch, c->total, c->chunks,
			ac->in_vmem ? " (in VMEM: no DMA)" : "",
			c->reread > 0 ? " (+ partial sums read back)" : "");
	}
	if (q->other_bytes > 0)
		fprintf(f, "    other operands read once: %.0f B\n", q->other_bytes);
	double clock_ghz = hw->clock_hz * 1e-9;
	char int8[96] = "";
	if (q->mxu_int8 && hw->mxu_int8_rate > 1)
		snprintf(int8, sizeof int8, " (int8 x int8: rows at %gx the "
					    "bf16 rate, mxu.int8_rate)",
			 hw->mxu_int8_rate);
	if (q->has_kernel)
		fprintf(f,
			"  MXU: %.0f cycles (%.0f per step), %d bf16 pass(es), "
			"%.3g MACs%s; + %.0f cycles waiting for split-contraction "
			"re-adds\n",
			x.mxu_cycles, x.mxu_cycles / (double)x.steps, q->mxu_passes,
			q->mxu_macs, int8, x.readd_cycles);
	if (q->n_mxu_untiled > 0)
		fprintf(f,
			"  MXU, contractions the grid does not tile: %.0f "
			"cycles for %.3g MACs, at the array's padded peak "
			"(%s)\n",
			x.mxu_untiled_cycles, q->mxu_untiled_macs,
			q->has_kernel ? "added to the tiled contraction's"
				     : "the kernel's MXU work");
	fprintf(f, "  VPU: %.0f cycles (%.0f per step): fused ops %.0f",
		e.vpu_cycles, e.vpu_cycles / (double)x.steps, x.vpu_cycles);
	if (q->xlu_cycles > 0)
		fprintf(f, " (%.0f of them moving lanes on the XLU, "
			   "sim_relayout_cycles)",
			q->xlu_cycles);
	fprintf(f, ", MXU results %.0f, prologues %.0f, %.0f block rows x %.0f\n",
		x.acc_cycles, x.prologue_cycles, x.rows,
		hw->row_overhead_cycles);
	fprintf(f,
		"  DMA: read %.0f B, write %.0f B, %.0f transfers of %.0f "
		"contiguous runs at %.1f B/ns, latency %.0f ns, %.1f ns per "
		"run; %.0f ns busy (operand streams concurrent)\n",
		e.bytes_read, e.bytes_written, x.transfers, x.chunks,
		hw_mem_bytes_per_ns(hw), hw->dma_latency_ns, hw->dma_chunk_ns,
		e.dma_cycles / clock_ghz);
	fprintf(f,
		"  per step: compute %.6g ns (max of MXU + re-adds, VPU; whole "
		"kernel over %lld steps at %.3g GHz), DMA %.6g ns, overhead "
		"%.6g ns\n",
		x.compute_step_ns, (long long)x.steps, clock_ghz, x.dma_step_ns,
		x.step_ns);
	if (x.split > 1)
		fprintf(f,
			"  megacore: %lld output blocks dealt to %lld cores: "
			"each runs %.6g steps (ceil(%lld / %lld) x %lld steps "
			"per output block), the cores at once\n",
			(long long)x.out_steps, (long long)x.split, x.core_steps,
			(long long)x.out_steps, (long long)x.split,
			(long long)(x.steps / x.out_steps));
	/* The estimate's own sum (estimate()): the last step's compute is
	 * not overlapped, the others hide the next step's DMA; never less
	 * than every byte at HBM bandwidth. */
	fprintf(f,
		"  time (ns) = kernel %.6g + max(first load %.6g (%.0f B) + "
		"(%.6g - 1) x (max(compute %.6g, DMA %.6g) + step %.6g) + "
		"last step (compute %.6g + step %.6g) + last store %.6g "
		"(%.0f B), DMA busy %.6g)\n"
		"            = %.6g ns, bound by %s\n",
		launch, x.first_ns, x.first_bytes, x.core_steps,
		x.compute_step_ns, x.dma_step_ns, x.step_ns, x.compute_step_ns,
		x.step_ns, x.last_ns, x.last_bytes, e.dma_cycles / clock_ghz,
		e.time_ns, hw_unit_name(e.bound));
	if (q != &p)
		fprintf(f,
			"  relaid: %d input(s) the grid cannot stream (held "
			"whole in its blocks, or an MXU operand in a layout "
			"XLA would not give it) copied first into the form the "
			"kernel reads, as that moves fewer bytes than the plan "
			"without or fits VMEM where it does not "
			"(sim_plan_choose): "
			"kernel %.6g + max(%.0f B read + %.0f B written at "
			"%.1f B/ns, XLU %.0f cycles) = %.6g ns\n"
			"  total = %.6g ns\n",
			q->n_relaid, hw->kernel_overhead_ns, q->relayout_read,
			q->relayout_written, hw_mem_bytes_per_ns(hw),
			q->relayout_cycles, sim_plan_relayout_ns(q, hw),
			chosen.time_ns);
	fprintf(f,
		"  VMEM: %.0f of %.0f bytes (double-buffered blocks, in "
		"the scoped limit)%s\n",
		e.vmem_bytes, hw->vmem_scoped_bytes,
		e.feasible ? "" : " -> INFEASIBLE");
out:
	sim_est_detail_free(&x);
	sim_plan_free(&p);
	return st;
}

/*
 * The term that dominates a tiled kernel's estimate under its own config
 * (k->est.config), in words, for a warning: no config fitting VMEM; else
 * the largest of the HBM time (the access that moves the most bytes, its
 * array, passes and contiguous runs), the per-step overhead of one core's
 * steps, the VPU's and the MXU's busy time (per core, as estimate() splits
 * them). Only names what estimate() computed: sim_plan_estimate_detail's
 * terms.
 */
enum ts_status sim_kernel_why(const struct sim_kernel *k,
			      const struct hw_spec *hw, char *buf, size_t n,
			      struct ts_diag *d)
{
	struct sim_plan p;
	struct sim_est_detail x = {0};
	enum ts_status st = sim_plan_build(k, hw, &p, d);
	if (st != TS_OK)
		goto out;
	if (p.kind != SIM_PLAN_TILED) {
		snprintf(buf, n, "%s", p.kind == SIM_PLAN_COLLECTIVE
					       ? "its HBM traffic and ICI time"
				       : p.kind == SIM_PLAN_DMA
					       ? "the bytes its DMA moves"
					       : "no tiled work");
		goto out;
	}
	/* the plan the estimate was made on: its relaid one when it says so */
	const struct sim_plan *q = k->est.relaid && p.relaid ? p.relaid : &p;
	struct sim_tile_config full;
	struct sim_estimate e;
	st = sim_plan_check(q, &k->est.config, &full, d);
	if (st == TS_OK)
		st = sim_plan_estimate_detail(q, hw, &full, &e, &x, d);
	if (st != TS_OK)
		goto out;
	int big = -1;
	double big_moved = 0;
	for (int a = 0; a < q->n_access; a++) {
		double moved = x.ac[a].total + x.ac[a].reread;
		if (!q->acc[a].in_vmem && moved > big_moved) {
			big = a;
			big_moved = moved;
		}
	}
	if (!e.feasible) {
		snprintf(buf, n,
			 "no tile config fits VMEM: the smallest working set "
			 "is %.4g MB of the scoped %.4g MB",
			 e.vmem_bytes * 1e-6, hw->vmem_scoped_bytes * 1e-6);
		goto out;
	}
	double ghz = hw->clock_hz * 1e-9;
	double per_core = x.steps > 0 ? x.core_steps / (double)x.steps : 1.0;
	double hbm = e.dma_cycles / ghz;
	double steps = x.core_steps * x.step_ns;
	double vpu = e.vpu_cycles / ghz * per_core;
	double mxu = e.mxu_cycles / ghz * per_core;
	if (hbm >= steps && hbm >= vpu && hbm >= mxu && big >= 0)
		snprintf(buf, n,
			 "HBM: %s moves %.4g MB of a %.4g MB array (%.4g "
			 "passes, %.4g contiguous runs)",
			 q->acc[big].name ? q->acc[big].name : "?",
			 big_moved * 1e-6, q->acc[big].bytes * 1e-6,
			 x.ac[big].refetch, x.ac[big].chunks);
	else if (steps >= vpu && steps >= mxu)
		snprintf(buf, n, "%.4g steps per core at %.4g ns each",
			 x.core_steps, x.step_ns);
	else if (vpu >= mxu)
		snprintf(buf, n, "VPU: %.4g us per core", vpu * 1e-3);
	else
		snprintf(buf, n, "MXU: %.4g us per core at %.2g%% utilisation",
			 mxu * 1e-3, 100.0 * e.mxu_util);
out:
	sim_est_detail_free(&x);
	sim_plan_free(&p);
	return st;
}
