/*
 * program.c: whole-program estimate. Program time is the sum of kernel
 * times along the schedule, each times its multiplicity (loop trip counts,
 * conditional branch weights): the TensorCore runs one kernel at a time
 * (docs/ARCHITECTURE.md "Kernels, tiles and the analytic model").
 */
#include "sim.h"

/*
 * total_ns = sum_k est_k.time_ns x multiplicity_k, every kernel under its
 * default tile config. Unmodelled kernels (custom-call, infeed, ...) add 0
 * and are counted in n_unmodelled so that reports can say the total is a
 * lower bound. Assumes no overlap between kernels (async copies and
 * collectives are serialised: known wrong where XLA overlaps them with
 * compute).
 */
enum ts_status sim_program_estimate(struct sim_program *p,
				    const struct hw_spec *hw, struct ts_diag *d)
{
	p->total_ns = 0;
	p->n_unmodelled = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		enum ts_status st = sim_kernel_estimate(k, hw, NULL, &k->est, d);
		if (st != TS_OK)
			return st;
		if (!k->est.modelled || k->kind == SIM_KERNEL_UNMODELLED) {
			p->n_unmodelled++;
			continue;
		}
		p->total_ns += k->est.time_ns * k->multiplicity;
	}
	return TS_OK;
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
 * multiply it); devices = replica_count x num_partitions from the module
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
	return hw->host_call_ns + hw->host_kernel_ns * p->n_kernels +
	       hw->host_device_ns * (devices - 1);
}
