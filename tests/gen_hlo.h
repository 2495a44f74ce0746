/*
 * gen_hlo.h: random valid HLO modules for property tests (test_envelope_gen,
 * fuzz_pipeline's seeds). A module is a few independent pieces, each one
 * kind of kernel XLA runs on a TPU: elementwise chains with broadcasts,
 * transposes, layout-changing reshapes and copies, dots of every dim
 * order (batched, matrix-vector, extreme and tiny dims, int8) with a
 * transposing prologue and an epilogue, convolutions (NHWC and NCHW,
 * strided, dilated, padded, depthwise), reduces (variadic, with tuple
 * results, an argmax's reducer), gathers and scatters, dynamic slices and
 * in-place updates, concatenates, pads, reverses, pooling over one or two
 * dims (max or sum, windows of 2 to 15) and its select-and-scatter
 * gradient, collectives over replica groups,
 * and while loops; arrays from a few bytes to about 2^cap_log2 bytes, in
 * layouts of every dim order, with TPU tiles when the module is a
 * compiled one (its pieces wrapped in fusions, is_scheduled=true) and
 * without when it is a pre-optimisation one (tpusim groups it).
 * Deterministic: the same seed gives the same text on every platform.
 */
#ifndef GEN_HLO_H
#define GEN_HLO_H

#include <stddef.h>
#include <stdint.h>

/* Pieces in the module of a seed: 1 to GEN_MAX_PIECES. */
#define GEN_MAX_PIECES 4

/* The module of seed: its text (malloc'd, NUL-terminated; free() it) and
 * length in *len. only >= 0: that piece of the seed's module alone (the
 * same text as in the whole module), to shrink a failure to one kernel;
 * cap_log2: the largest array in bytes, as a power of two (40: a
 * terabyte). Returns the number of pieces the seed's module has. */
int gen_hlo_module(uint64_t seed, int only, int cap_log2, char **text,
		   size_t *len);

/* Most instructions in a gen_hlo_dag module. */
#define GEN_DAG_MAX_OPS 32

/* A layer's dataflow, unfused: 12 to GEN_DAG_MAX_OPS elementwise ops,
 * broadcasts of a row vector, row reduces, matmuls, selects, reversed
 * rows, in-place updates of half the columns, sliding windows along the
 * row, round trips through bf16 and XLA's kCustom gather and scatter-add
 * fusions of rows (each calling a computation of its own, as `fuse`
 * keeps them), over f32[R,C] matrices and f32[R]
 * vectors, each reading recent values mostly and
 * older ones sometimes, so that values are shared between kernels (what
 * the grouping's multi-output merges and cycle checks decide on); the
 * values nothing reads, and the last, are the results. The parameters
 * and the values have layouts ({1,0}, {0}), so that memory-space
 * assignment may copy them into VMEM and place them there. Text and
 * length as gen_hlo_module's; returns the number of instructions. */
int gen_hlo_dag(uint64_t seed, char **text, size_t *len);

#endif /* GEN_HLO_H */
