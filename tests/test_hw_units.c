/*
 * test_hw_units.c: the unit models of hw/ (hw_units.h) on a hand-built
 * spec with round numbers: MXU cycles of weight-stationary passes, VPU
 * vregs and op/reduction cycles, DMA time, VMEM capacity and ICI
 * collectives. Every expected value is derived by hand in the comment
 * above its assertion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "hw_units.h"
#include "test_util.h"

/* Exact: every formula here is sums and products of small integers. */
#define EXACT 1e-9

/* A v3-like core with round numbers: one 128 x 128 MXU, no pass bubble,
 * 8 x 128 vregs, 2 ALUs, 1 GHz, 400 B/ns of HBM per core (chip 800e9
 * split over 2 cores at efficiency 1), 100 ns DMA latency, 16 MiB VMEM. */
static struct hw_spec spec(void)
{
	struct hw_spec h;
	memset(&h, 0, sizeof h);
	strcpy(h.name, "t");
	h.tensorcores_per_chip = 2;
	h.megacore = false;
	h.mxu_count = 1;
	h.mxu_rows = 128;
	h.mxu_cols = 128;
	h.clock_hz = 1e9;
	h.mxu_macs_per_cell_cycle = 1;
	h.mxu_f32_passes = 6;
	h.mxu_pass_cycles = 0;
	h.vpu_sublanes = 8;
	h.vpu_lanes = 128;
	h.vpu_alus = 2;
	h.vpu_class_cost[HW_VPU_SIMPLE] = 1;
	h.vpu_class_cost[HW_VPU_DIVIDE] = 4;
	h.vpu_class_cost[HW_VPU_TRANSCEND] = 4;
	h.vpu_class_cost[HW_VPU_COMPOSITE] = 10;
	h.vpu_class_cost[HW_VPU_TRIG] = 16;
	h.vpu_class_cost[HW_VPU_RNG] = 3;
	h.xlu_lane_reduce_cost = 8;
	h.xlu_lane_permute_cost = 24;
	h.vpu_f16_load_cost = 14;
	h.vpu_f16_store_cost = 5;
	h.hbm_bytes = 32.0 * 1024 * 1024 * 1024;
	h.hbm_bw_bytes_per_s = 800e9;
	h.hbm_efficiency = 1.0;
	h.dma_latency_ns = 100;
	h.dma_chunk_ns = 5;
	h.vmem_bytes = 16.0 * 1024 * 1024;
	h.kernel_overhead_ns = 200;
	h.step_overhead_ns = 70;
	h.ici_links = 4;
	h.ici_link_bw_bytes_per_s = 1e11;
	h.ici_latency_ns = 500;
	h.ici_efficiency = 1;
	return h;
}

/* ---- MXU -------------------------------------------------------------------- */

/*
 * 128 x 128 x 128 bf16 on one MXU: one weight tile, 128 rows streamed.
 *   weight load R = 128 + fill/drain skew R + C - 2 = 254 + rows T = 128
 *   = 510 cycles = 2R + C + T - 2 (SCALE-Sim's fold), no pass bubble.
 */
static void test_mxu_one_tile(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	assert_near(hw_mxu_matmul_cycles(&h, 128, 128, 128, 1), 510, EXACT);
	assert_near(hw_mxu_fill_cycles(&h), 382, EXACT);
	assert_near(hw_mxu_stream_cycles(&h, 1, 128, 1), 128, EXACT);
	/* a pass bubble B adds B per pass: 510 + 32 */
	h.mxu_pass_cycles = 32;
	assert_near(hw_mxu_matmul_cycles(&h, 128, 128, 128, 1), 542, EXACT);
}

/*
 * f32 at HIGHEST takes P = 6 bf16 passes: the streaming part scales by P,
 * the fill does not: 382 + 128 + 5 x max(128, 128) = 1150 cycles, i.e.
 * 382 + 6 x 128 (passes x the bf16 pass).
 */
static void test_mxu_f32_passes(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	double bf16 = hw_mxu_stream_cycles(&h, 1, 128, 1);
	double f32 = hw_mxu_stream_cycles(&h, 1, 128, h.mxu_f32_passes);
	assert_near(f32, 6 * bf16, EXACT);
	assert_near(hw_mxu_matmul_cycles(&h, 128, 128, 128, 6), 1150, EXACT);
}

/*
 * Weight-load bound: 8 rows per tile cannot hide the next tile's 128-cycle
 * weight load. 8 x 1024 x 512 on one MXU: 8 x 4 = 32 tiles,
 *   382 + 8 + 31 x max(8, 128) = 4358 cycles;
 * two MXUs split the tiles: 382 + 8 + 15 x 128 = 2310.
 * Padding: K = 64 costs a full 128-deep tile, as K = 128 does.
 */
static void test_mxu_weight_bound_and_padding(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	assert_near(hw_mxu_matmul_cycles(&h, 8, 1024, 512, 1), 4358, EXACT);
	h.mxu_count = 2;
	assert_near(hw_mxu_matmul_cycles(&h, 8, 1024, 512, 1), 2310, EXACT);
	assert_near(hw_mxu_matmul_cycles(&h, 256, 64, 128, 1),
		    hw_mxu_matmul_cycles(&h, 256, 128, 128, 1), EXACT);
	/* peak: 2 x 128 x 128 MACs per cycle */
	assert_near(hw_mxu_peak_macs_per_cycle(&h), 32768, EXACT);
	/* nothing to do costs nothing */
	assert_near(hw_mxu_matmul_cycles(&h, 0, 128, 128, 1), 0, EXACT);
}

/* ---- VPU -------------------------------------------------------------------- */

/*
 * f32[3,5] padded to its T(8,128) tile is 8 x 128 = 1024 elements: one
 * vreg; an add costs 1 slot / 2 ALUs = 0.5 cycles; an exp 4 / 2 = 2.
 * 64-bit elements take two vregs per tile.
 */
static void test_vpu_padded_op(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	assert_near(hw_vpu_vregs(&h, 8 * 128, 32), 1, EXACT);
	assert_near(hw_vpu_vregs(&h, 8 * 128, 16), 1, EXACT);
	assert_near(hw_vpu_vregs(&h, 8 * 128, 64), 2, EXACT);
	assert_near(hw_vpu_vregs(&h, 1025, 32), 2, EXACT);
	assert_near(hw_vpu_op_cycles(&h, 1, HW_VPU_SIMPLE), 0.5, EXACT);
	assert_near(hw_vpu_op_cycles(&h, 1, HW_VPU_TRANSCEND), 2, EXACT);
	assert_near(hw_vpu_op_cycles(&h, 10, HW_VPU_TRIG), 80, EXACT);
	assert_near(hw_vpu_op_cycles(&h, 10, HW_VPU_COMPOSITE), 50, EXACT);
	assert_near(hw_vpu_op_cycles(&h, 10, HW_VPU_RNG), 15, EXACT);
}

/*
 * f16 is converted once per load and once per store: 10 vregs of 1024
 * elements at 2 ALUs cost 10 x 14 / 2 = 70 cycles after a load and
 * 10 x 5 / 2 = 25 before a store; nothing for no vregs.
 */
static void test_vpu_f16_convert(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	assert_near(hw_vpu_f16_convert_cycles(&h, 10, false), 70, EXACT);
	assert_near(hw_vpu_f16_convert_cycles(&h, 10, true), 25, EXACT);
	assert_near(hw_vpu_f16_convert_cycles(&h, 0, false), 0, EXACT);
	h.vpu_alus = 1;
	assert_near(hw_vpu_f16_convert_cycles(&h, 1, false), 14, EXACT);
}

/*
 * 16 vregs reduced to 2 (each into an accumulator that starts at the
 * init value):
 *   major:   16 adds x 1 / 2                               = 8
 *   sublane: 8 + 2 x log2(8) x (1 add + 1 shuffle) / 2     = 8 + 6 = 14
 *   lane:    8 + 2 x xlu 8 / 2                             = 8 + 8 = 16
 * so lane > sublane > major, as TPU.md section 2 rule 7 orders them.
 */
static void test_vpu_reductions(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	double maj = hw_vpu_reduce_cycles(&h, 16, 2, HW_REDUCE_MAJOR,
					  HW_VPU_SIMPLE);
	double sub = hw_vpu_reduce_cycles(&h, 16, 2, HW_REDUCE_SUBLANE,
					  HW_VPU_SIMPLE);
	double lane = hw_vpu_reduce_cycles(&h, 16, 2, HW_REDUCE_LANE,
					   HW_VPU_SIMPLE);
	assert_near(maj, 8, EXACT);
	assert_near(sub, 14, EXACT);
	assert_near(lane, 16, EXACT);
	assert_true(lane > sub && sub > maj);
	/* the roofline's floor (sim/roofline.c: one slot per input element):
	 * no reduce is cheaper than its input's ops, on any axis, even with
	 * the XLU at the cheapest slot a spec allows (fuzz_pipeline found a
	 * major reduce of 2048 one-element vregs one op short) */
	h.xlu_lane_reduce_cost = 0.125;
	for (int axis = HW_REDUCE_MAJOR; axis <= HW_REDUCE_LANE; axis++)
		for (double out = 1; out <= 16; out *= 2)
			assert_true(hw_vpu_reduce_cycles(&h, 16, out, axis,
							 HW_VPU_SIMPLE) >=
				    hw_vpu_op_cycles(&h, 16, HW_VPU_SIMPLE));
}

/* ---- memory and ICI ----------------------------------------------------------- */

/*
 * 800e9 B/s per chip over 2 cores at efficiency 1: 400 B/ns per core.
 * 1 MB in 4 transfers: 4 x 100 ns + 1e6 / 400 = 2900 ns. VMEM holds 16 MiB.
 * Streaming 1 MB as 256 runs of 4 KB at 5 ns per run: 2500 + 1280 ns; as
 * one run: 2505 ns.
 */
static void test_mem(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	assert_near(hw_mem_bytes_per_ns(&h), 400, EXACT);
	assert_near(hw_mem_dma_ns(&h, 1e6, 4), 2900, EXACT);
	assert_near(hw_mem_dma_ns(&h, 0, 0), 0, EXACT);
	assert_near(hw_mem_stream_ns(&h, hw_mem_bytes_per_ns(&h), 1e6, 256), 3780, EXACT);
	assert_near(hw_mem_stream_ns(&h, hw_mem_bytes_per_ns(&h), 1e6, 1), 2505, EXACT);
	assert_near(hw_mem_stream_ns(&h, hw_mem_bytes_per_ns(&h), 0, 0), 0, EXACT);
	/* a kernel's own buffers: the scoped limit, not all of VMEM */
	h.vmem_bytes = 128.0 * 1024 * 1024;
	h.vmem_scoped_bytes = 16.0 * 1024 * 1024;
	assert_true(hw_mem_fits_vmem(&h, 16.0 * 1024 * 1024));
	assert_false(hw_mem_fits_vmem(&h, 16.0 * 1024 * 1024 + 1));
	/* megacore: one program sees the whole chip */
	h.megacore = true;
	assert_near(hw_mem_bytes_per_ns(&h), 800, EXACT);
}

static double ici_ns(const struct hw_spec *h, enum hw_collective c,
		     double bytes, int64_t n, int bits, bool *one_shot)
{
	struct hw_ici_cost ic;
	hw_ici_collective(h, c, bytes, n, bits, &ic);
	if (one_shot)
		*one_shot = ic.one_shot;
	return ic.ns;
}

/*
 * 4 MiB f32 all-reduce over 4 devices on a ring of 2 x 100 GB/s links:
 *   2 x 3/4 x 4194304 B / 200 B/ns + 2 x 3 x 500 ns = 31457.28 + 3000;
 * its VPU adds (3/4 x 1 Mi elements = 768 vregs / 2 ALUs = 384 ns) hide
 * behind the transfer; the one-shot (floor(16/4) x 4194304 / (4 x 100) +
 * 2 x 500 = 42943.04) is slower. 4 KiB: the ring takes 30.72 + 3000, the
 * one-shot 4 x 4096 / 400 + 1000 = 1040.96 (its adds: 3072 elements, 3
 * vregs, 1.5 ns), so the one-shot is taken. One device: nothing to do. A
 * permute is one hop on one link. Two TensorCores per chip, each its own
 * device, at 50% efficiency: each link gives a core 100 x 0.5 / 2 = 25
 * B/ns, the ring 50 B/ns: 2 x 3/4 x 4194304 / 50 + 3000 = 125829.12 +
 * 3000. Links 1000x faster, 16 MiB of bf16 over 2 devices: the ring's
 * transfer is 2 x 1/2 x 16777216 / 200000 = 83.89 ns, its adds 1/2 x 8 Mi
 * elements = 4096 vregs / 2 = 2048 ns, + 2 x 500: 3048 (VPU-bound); the
 * one-shot 1 x 16777216 / 400000 = 41.94, adds 8192 vregs / 2 = 4096, + 500.
 */
static void test_ici(void **state)
{
	(void)state;
	struct hw_spec h = spec();
	bool one = true;
	h.tensorcores_per_chip = 1; /* one device per chip */
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 4194304.0, 4, 32, &one),
		    31457.28 + 3000, 1e-6);
	assert_false(one);
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 4096.0, 4, 32, &one),
		    1040.96, 1e-6);
	assert_true(one);
	assert_near(ici_ns(&h, HW_COLL_ALL_GATHER, 4194304.0, 4, 32, NULL),
		    15728.64 + 1500, 1e-6);
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 4194304.0, 1, 32, NULL), 0,
		    EXACT);
	assert_near(ici_ns(&h, HW_COLL_PERMUTE, 1e6, 8, 32, NULL),
		    1e6 / 100.0 + 500, 1e-6);
	h.ici_link_bw_bytes_per_s = 1e14;
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 16777216.0, 2, 16, &one),
		    3048, 1e-6);
	assert_false(one);
	h.ici_link_bw_bytes_per_s = 1e11;
	h.tensorcores_per_chip = 2;
	h.ici_efficiency = 0.5;
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 4194304.0, 4, 32, NULL),
		    125829.12 + 3000, 1e-6);
	h.megacore = true; /* one device per chip: the links are its own */
	assert_near(ici_ns(&h, HW_COLL_ALL_REDUCE, 4194304.0, 4, 32, NULL),
		    62914.56 + 3000, 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mxu_one_tile),
		cmocka_unit_test(test_mxu_f32_passes),
		cmocka_unit_test(test_mxu_weight_bound_and_padding),
		cmocka_unit_test(test_vpu_padded_op),
		cmocka_unit_test(test_vpu_f16_convert),
		cmocka_unit_test(test_vpu_reductions),
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_ici),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
