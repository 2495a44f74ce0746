/*
 * kernels_int.h: helpers shared by kernel extraction (kernels.c) and work
 * counting (cost.c) only; not part of the sim/ interface (see sim.h).
 */
#ifndef KERNELS_INT_H
#define KERNELS_INT_H

#include <stdbool.h>

#include "ir.h"

/*
 * Marks the instructions of c whose value depends on constants only
 * (constant, or a pure elementwise / data-movement / reduction op all of
 * whose operands are constant-derived; iota and rng are computed, never
 * constant-derived). XLA's constant folding (HloConstantFolding) evaluates
 * them at compile time, or splats them into registers when they are
 * broadcasts of scalars, so they are neither kernels nor VPU work.
 * Returns a ts_malloc'd array of c->n_instrs flags indexed by
 * ir_instr.index (ts_free it), NULL when out of memory. An empty
 * computation gives a 1-element array so that NULL always means failure.
 */
bool *sim_const_derived(const struct ir_computation *c);

/* Is operand j of in the same instruction as an earlier operand
 * (multiply(x, x))? Such a repeat is one use and one read. */
static inline bool sim_operand_repeats(const struct ir_instr *in, int j)
{
	for (int q = 0; q < j; q++)
		if (in->operands[q] == in->operands[j])
			return true;
	return false;
}

#endif /* KERNELS_INT_H */
