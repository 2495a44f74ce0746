/*
 * program.c: whole-program estimate. Program time is the sum of kernel
 * times along the schedule, each times its multiplicity (loop trip counts,
 * conditional branch weights): the TensorCore runs one kernel at a time
 * (docs/ARCHITECTURE.md "Kernels, tiles and the analytic model"), less
 * the async transfers hidden behind it.
 */
#include "sim.h"

#include <math.h>

/* Kernel i's time x multiplicity: from ns[i] when given, else from its
 * current estimate. */
static double kernel_ns(const struct sim_program *p, const double *ns, int i)
{
	return ns ? ns[i]
		  : p->kernels[i].est.time_ns * p->kernels[i].multiplicity;
}

/* Pair x's async time (*async) and the part of it hidden (returned). */
static double pair_hidden(const struct sim_program *p,
			  const struct sim_async *x, const double *ns,
			  double *async)
{
	double between = 0;
	*async = 0;
	for (int i = x->first; i < x->first + x->n; i++)
		*async += kernel_ns(p, ns, i);
	if (x->start->attrs.cross_program_prefetch)
		return *async; /* beside the program's previous run */
	for (int i = x->between; i < x->between + x->n_between; i++)
		if (!p->kernels[i].async_work)
			between += kernel_ns(p, ns, i);
	return *async < between ? *async : between;
}

/*
 * Program time, ns:
 *   total = sum_k time_k x mult_k - sum_pairs hidden_p
 *   hidden_p = min(async_p, between_p)
 * async_p is the time x multiplicity of a pair's async work (the kernels of
 * a copy-start, all-reduce-start, ..., async-start), between_p that of
 * the kernels the schedule puts between its start and its done, less any
 * that are themselves some pair's async work. The TensorCore runs one
 * kernel at a time, but a start hands its transfer to the DMA engines or
 * the ICI and returns: what runs until the done hides that much of it
 * (XLA's latency-hiding scheduler places starts early for this reason).
 * A cross-program prefetch (copy-start with cross_program_prefetch_index,
 * placement.c's) is hidden whole: in the steady state of a loop that
 * runs the program again and again (a training or serving loop, and the
 * timed loops of the measured sets) its copy runs beside the previous
 * run; the v5e GEMMs of JAX's Pallas guide (docs/ACCURACY.md) come out
 * further from their times with it exposed (n = 4096, XLA: 1.09 x exposed,
 * 1.03 x hidden; the same set judges it, so this is a check, not a fit).
 * Known wrong for a program's first run.
 * Assumes the async work and the work between do not slow each other
 * (shared HBM bandwidth is not modelled) and that pairs which overlap one
 * another may each hide behind the same work (known wrong, optimistic,
 * when several transfers are in flight). Unmodelled kernels add 0.
 */
double sim_program_total(struct sim_program *p)
{
	double total = 0;
	for (int i = 0; i < p->n_kernels; i++)
		total += kernel_ns(p, NULL, i);
	for (int a = 0; a < p->n_async; a++) {
		struct sim_async *x = &p->async[a];
		x->hidden_ns = pair_hidden(p, x, NULL, &x->async_ns);
		total -= x->hidden_ns;
	}
	return total;
}

double sim_program_hidden_ns(const struct sim_program *p, const double *ns)
{
	double hidden = 0, async;
	for (int a = 0; a < p->n_async; a++)
		hidden += pair_hidden(p, &p->async[a], ns, &async);
	return hidden;
}

/* The kernel's share of its pair's hidden time, in proportion to its part
 * of the pair's async time (sim_program_total's async_ns, hidden_ns). */
double sim_kernel_exposed_ns(const struct sim_program *p, int i)
{
	const struct sim_kernel *k = &p->kernels[i];
	double t = k->est.time_ns * k->multiplicity;
	for (int a = 0; a < p->n_async; a++) {
		const struct sim_async *x = &p->async[a];
		if (i >= x->first && i < x->first + x->n && x->async_ns > 0)
			return t * (1 - x->hidden_ns / x->async_ns);
	}
	return t;
}

/* Every kernel under its default tile config, after memory-space
 * assignment for hw (sim_program_place); unmodelled kernels
 * (custom-call, infeed, ...) are counted in n_unmodelled so that reports
 * can say the total is a lower bound. */
enum ts_status sim_program_estimate(struct sim_program *p,
				    const struct hw_spec *hw, struct ts_diag *d)
{
	p->n_unmodelled = 0;
	enum ts_status placed = sim_program_place(p, hw, d);
	if (placed != TS_OK)
		return placed;
	for (int i = 0; i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		enum ts_status st = sim_kernel_estimate(k, hw, NULL, &k->est, d);
		if (st != TS_OK)
			return st;
		if (!k->est.modelled || k->kind == SIM_KERNEL_UNMODELLED)
			p->n_unmodelled++;
	}
	p->total_ns = sim_program_total(p);
	return TS_OK;
}

enum ts_status sim_module_time(const struct ir_module *m,
			       const struct sim_fusion_plan *plan,
			       const struct hw_spec *hw, double *ns,
			       struct ts_diag *d)
{
	struct sim_program p;
	struct sim_program_opts o = {.fusion = plan,
				     .vmem_room = sim_vmem_room(hw)};
	*ns = NAN;
	enum ts_status st = sim_program_build(m, &o, &p, d);
	if (st != TS_OK)
		return st;
	st = sim_program_estimate(&p, hw, d);
	if (st == TS_OK)
		*ns = p.total_ns;
	sim_program_free(&p);
	return st;
}

/*
 * Host side of one call of the program, as a caller's wall clock (e.g.
 * Python timing a jitted function) sees it beyond the device time:
 *
 *   host_ns = host.call_ns + host.kernel_ns x n_kernels
 *             + host.device_ns x (devices - 1)
 *
 * n_kernels: kernels of the executable, each listed once (a loop body's
 * kernels are launched by the device, not the host, so trip counts do not
 * multiply it), not an async DMA's (a copy-start hands a descriptor to the
 * DMA engines, no kernel: the fit's programs have none, and the v5e GEMMs
 * of JAX's Pallas guide, with a cross-program prefetch each, come out
 * closer with it left out, n = 1024: 1.23 x against 1.44 x);
 * devices = replica_count x num_partitions from the module
 * header (the runtime launches one copy per device, one after another).
 * Units: ns. Assumes arguments are already on the device and results stay
 * there (no host<->device transfer is timed), and that the host work does
 * not overlap the device time. Known wrong: the floor also depends on the
 * framework and on how the caller synchronises (tpuv3-ops softmax calls
 * record ~290 us of overhead, layernorm ones ~140 us, for programs of the
 * same shape: 3 kernels, one argument, one result). Source: the three
 * figures are fitted by `tpusim calibrate` on the host-timed sets (see
 * hwspecs/v3.yaml, section host).
 */
double sim_program_host_ns(const struct sim_program *p,
			   const struct hw_spec *hw)
{
	double devices = (double)p->module->replica_count *
			 (double)p->module->num_partitions;
	int launched = 0;
	for (int i = 0; i < p->n_kernels; i++)
		launched += !p->kernels[i].dma;
	return hw->host_call_ns + hw->host_kernel_ns * launched +
	       hw->host_device_ns * (devices - 1);
}
