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
