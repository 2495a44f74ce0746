/*
 * test_model.c: the analytic kernel model (sim/model.c) on hand-derivable
 * kernels: a 128^3 bf16 matmul on the MXU, f32 at HIGHEST precision, a
 * padded elementwise op and its pipeline terms, a VMEM-infeasible config,
 * an unmodelled op, the explain text, the MXU utilisation of the forward,
 * input- and weight-gradient forms of convolution; and, with ../shared,
 * fusion.191 of
 * TpuGraphs against its measured default and best configs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_units.h"
#include "model.h"
#include "test_util.h"

/* Hand-derived values are sums of products of the spec's numbers: equal
 * up to double rounding. */
#define EXACT 1e-6

/* ---- helpers --------------------------------------------------------------- */

static struct sim_estimate estimate(const struct sim_kernel *k,
				    const struct hw_spec *hw, const char *cfg)
{
	struct sim_tile_config c;
	struct ts_diag d = {0};
	if (sim_tile_config_parse(cfg, &c, &d) != TS_OK)
		fail_msg("config %s: %s", cfg, d.msg);
	struct sim_estimate e;
	if (sim_kernel_estimate(k, hw, &c, &e, &d) != TS_OK)
		fail_msg("estimate %s: %s", k->name, d.msg);
	return e;
}

static const char dot_bf16[] =
	"HloModule mm\n"
	"ENTRY %e (a: bf16[128,128], b: bf16[128,128]) -> bf16[128,128] {\n"
	"  %a = bf16[128,128] parameter(0)\n"
	"  %b = bf16[128,128] parameter(1)\n"
	"  ROOT %d = bf16[128,128] dot(%a, %b), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"}\n";

/* ---- MXU --------------------------------------------------------------------- */

/*
 * 128 x 128 x 128 bf16, the whole matrix as one block (output 16 x 1
 * tiles of 8 x 128, kernel 16 x 1): one step, one weight tile; of v3's two
 * MXUs one works:
 *   weight load R (128) + fill/drain R + C - 2 (254) + 128 rows streamed
 *   + one pass bubble (mxu.pass_cycles, P) = 510 + P cycles.
 */
static void test_matmul_128(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build(dot_bf16, &b);
	struct sim_estimate e =
		estimate(tu_kernel(&b, "d"), &hw, "output_bounds=16x1;kernel_bounds=16x1");
	double r = hw.mxu_rows, c = hw.mxu_cols;
	assert_int_equal(e.steps, 1);
	assert_near(e.mxu_cycles, r + (r + c - 2) + 128 + hw.mxu_pass_cycles,
		    EXACT);
	assert_near(e.mxu_cycles, 510 + hw.mxu_pass_cycles, EXACT);
	assert_near(e.flops, 2.0 * 128 * 128 * 128, 0);
	assert_true(e.feasible);
	assert_true(e.modelled);
	/* four 8-row blocks: 4 steps, each drains the array again */
	e = estimate(tu_kernel(&b, "d"), &hw, "output_bounds=4x1;kernel_bounds=16x1");
	assert_int_equal(e.steps, 4);
	assert_near(e.mxu_cycles, 4 * (382 + 32 + hw.mxu_pass_cycles), EXACT);
	tu_built_free(&b);
}

/*
 * s8 x s8 -> s32, 128 x 128 x 128, one block: v5e's cells do
 * mxu.int8_rate (2) int8 MACs a cycle (its int8 peak, 394 TOPS, is twice
 * bf16's), so the 128 rows stream in 128 / 2 cycles:
 *   weight load R + fill/drain R + C - 2 + 128 / 2 + P = 446 + P
 * (bf16: 510 + P); v4, whose int8 runs at its bf16 rate: 510 + P. The
 * roofline's MXU floor halves the same way.
 */
static void test_matmul_int8(void **state)
{
	(void)state;
	struct hw_spec v5e, v4;
	if (!tu_load_spec("v5e", &v5e) || !tu_load_spec("v4", &v4))
		skip();
	assert_near(v5e.mxu_int8_rate, 2, 0);
	assert_near(v4.mxu_int8_rate, 1, 0);
	struct tu_built b;
	tu_build("HloModule mm\n"
	      "ENTRY %e (a: s8[128,128], b: s8[128,128]) -> s32[128,128] {\n"
	      "  %a = s8[128,128] parameter(0)\n"
	      "  %b = s8[128,128] parameter(1)\n"
	      "  ROOT %d = s32[128,128] dot(%a, %b), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n"
	      "}\n", &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "d"), &v5e, NULL);
	assert_int_equal(e.steps, 1);
	assert_near(e.mxu_cycles, 128 + 254 + 128 / 2 + v5e.mxu_pass_cycles, EXACT);
	e = estimate(tu_kernel(&b, "d"), &v4, NULL);
	assert_int_equal(e.steps, 1);
	assert_near(e.mxu_cycles, 510 + v4.mxu_pass_cycles, EXACT);
	struct sim_estimate r8, r16;
	struct ts_diag d = {0};
	assert_int_equal(sim_kernel_roofline(tu_kernel(&b, "d"), &v5e, &r8, &d),
			 TS_OK);
	tu_built_free(&b);
	tu_build(dot_bf16, &b);
	assert_int_equal(sim_kernel_roofline(tu_kernel(&b, "d"), &v5e, &r16, &d),
			 TS_OK);
	assert_near(r8.mxu_cycles, r16.mxu_cycles / 2, EXACT);
	tu_built_free(&b);
}

/*
 * f32 x f32 at HIGHEST: 6 bf16 passes of the one tile, 3 per MXU:
 *   382 + 128 + 2 x max(128, 128) + 3 x P cycles (P = mxu.pass_cycles);
 * at DEFAULT precision f32 takes one bf16 pass, like bf16: 510 + P.
 */
static void test_matmul_f32_highest(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule mm\n"
	      "ENTRY %e (a: f32[128,128], b: f32[128,128]) -> f32[128,128] {\n"
	      "  %a = f32[128,128] parameter(0)\n"
	      "  %b = f32[128,128] parameter(1)\n"
	      "  %h = f32[128,128] dot(%a, %b), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}, "
	      "operand_precision={highest,highest}\n"
	      "  ROOT %d = f32[128,128] dot(%a, %h), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n"
	      "}\n",
	      &b);
	const char *cfg = "output_bounds=16x1;kernel_bounds=16x1";
	struct sim_estimate hi = estimate(tu_kernel(&b, "h"), &hw, cfg);
	struct sim_estimate lo = estimate(tu_kernel(&b, "d"), &hw, cfg);
	assert_int_equal(hw.mxu_f32_passes, 6);
	double pc = hw.mxu_pass_cycles;
	assert_near(hi.mxu_cycles, 382 + 128 + 2 * 128 + 3 * pc, EXACT);
	assert_near(lo.mxu_cycles, 510 + pc, EXACT);
	/* the streaming part scales with the passes: (hi - 382) = 3 x (lo -
	 * 382) for 6 passes over 2 arrays */
	assert_near(hi.mxu_cycles - 382, 3 * (lo.mxu_cycles - 382), EXACT);
	tu_built_free(&b);
}

/* ---- VPU, memory and the pipeline ----------------------------------------------- */

/*
 * f32[3,5] add: each array pads to one T(8,128) tile, 4096 bytes, one
 * vreg; one step. VPU: 1 vreg x 1 slot / vpu.alus + one row iteration
 * (overhead.row_cycles). Each transfer is one contiguous run. The two
 * loads are concurrent streams sharing the bandwidth: max(8192 B / bw,
 * 4096 B / bw + dma_chunk_ns) = 8192 B / bw on v3 (9.5 ns per 4 KiB >
 * 5 ns); the store is one stream: 4096 B / bw + dma_chunk_ns. Time:
 *   kernel_ns + (latency + 8192 B / bw) + compute + step_ns
 *   + (latency + 4096 B / bw + dma_chunk_ns).
 */
static void test_padded_elementwise(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule add\n"
	      "ENTRY %e (a: f32[3,5], b: f32[3,5]) -> f32[3,5] {\n"
	      "  %a = f32[3,5] parameter(0)\n"
	      "  %b = f32[3,5] parameter(1)\n"
	      "  ROOT %s = f32[3,5] add(%a, %b)\n"
	      "}\n",
	      &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "s"), &hw, "");
	assert_int_equal(e.steps, 1);
	/* one add on one vreg, plus one iteration of the row loop (the
	 * block's one row of tiles) */
	assert_near(e.vpu_cycles, 1.0 / hw.vpu_alus + hw.row_overhead_cycles,
		    EXACT);
	assert_near(e.bytes_read, 2 * 4096, 0);
	assert_near(e.bytes_written, 4096, 0);
	double bw = hw_spec_hbm_bw(&hw) * 1e-9;
	double want = hw.kernel_overhead_ns + hw.dma_latency_ns + 8192 / bw +
		      e.vpu_cycles / (hw.clock_hz * 1e-9) + hw.step_overhead_ns +
		      hw.dma_latency_ns + 4096 / bw + hw.dma_chunk_ns;
	assert_true(4096 / bw > hw.dma_chunk_ns);
	assert_near(e.time_ns, want, EXACT);
	assert_near(e.vmem_bytes, 3 * 4096, 0);
	tu_built_free(&b);
}

/*
 * f32[4096,4096] add in one block: three 64 MiB blocks exceed v3's 16 MiB
 * VMEM, so the config is infeasible (reported, not an error); 64 blocks
 * of 64 rows fit.
 */
static void test_vmem_infeasible(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule add\n"
	      "ENTRY %e (a: f32[4096,4096], b: f32[4096,4096]) -> f32[4096,4096] {\n"
	      "  %a = f32[4096,4096] parameter(0)\n"
	      "  %b = f32[4096,4096] parameter(1)\n"
	      "  ROOT %s = f32[4096,4096] add(%a, %b)\n"
	      "}\n",
	      &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "s"), &hw, "output_bounds=512x32");
	assert_false(e.feasible);
	assert_near(e.vmem_bytes, 3.0 * 4096 * 4096 * 4, 0);
	e = estimate(tu_kernel(&b, "s"), &hw, "output_bounds=8x32");
	assert_true(e.feasible);
	assert_int_equal(e.steps, 64);
	/* 3 arrays x 2 buffers x 64 x 4096 x 4 bytes */
	assert_near(e.vmem_bytes, 6.0 * 64 * 4096 * 4, 0);
	/* the default config is feasible */
	e = estimate(tu_kernel(&b, "s"), &hw, "");
	assert_true(e.feasible);
	tu_built_free(&b);
}

/* A custom call is listed, not modelled: zero time, no unit. */
static void test_unmodelled(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule cc\n"
	      "ENTRY %e (a: f32[1024]) -> f32[1024] {\n"
	      "  %a = f32[1024] parameter(0)\n"
	      "  ROOT %c = f32[1024] custom-call(%a), custom_call_target=\"x\"\n"
	      "}\n",
	      &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "c"), &hw, "");
	assert_false(e.modelled);
	assert_near(e.time_ns, 0, 0);
	assert_int_equal(e.bound, HW_UNIT_NONE);
	tu_built_free(&b);
}

/* An empty array (a zero dimension) costs nothing: no launch, no DMA. */
static void test_empty_array(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule z\nENTRY e {\n  a = f32[0,1024] parameter(0)\n"
		 "  ROOT n = f32[0,1024] negate(a)\n}\n",
		 &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "n"), &hw, "");
	assert_true(e.time_ns == 0);
	assert_true(e.bytes_read == 0 && e.bytes_written == 0);
	assert_int_equal(e.bound, HW_UNIT_NONE);
	tu_built_free(&b);
}

/* explain: the derivation's lines for the matmul above. */
static void test_explain(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build(dot_bf16, &b);
	char buf[16384] = {0};
	FILE *f = fmemopen(buf, sizeof buf - 1, "w");
	assert_non_null(f);
	struct sim_tile_config c;
	struct ts_diag d = {0};
	sim_tile_config_parse("output_bounds=16x1;kernel_bounds=16x1", &c, &d);
	assert_int_equal(sim_kernel_explain(tu_kernel(&b, "d"), &hw, &c, f, &d),
			 TS_OK);
	fclose(f);
	/* VPU: the 16 f32 result vregs drained once (one op each over
	 * vpu.alus), plus one loop iteration over a row of 16 tiles */
	char vpu[160], mxu[160];
	double drain = 16.0 / hw.vpu_alus, rows = hw.row_overhead_cycles;
	double mc = 510 + hw.mxu_pass_cycles; /* test_matmul_128 */
	snprintf(mxu, sizeof mxu,
		 "  MXU: %.0f cycles (%.0f per step), 1 bf16 pass(es), 2.1e+06 "
		 "MACs; + 0 cycles waiting for split-contraction re-adds\n",
		 mc, mc);
	snprintf(vpu, sizeof vpu,
		 "  VPU: %.0f cycles (%.0f per step): fused ops 0, MXU results "
		 "%.0f, prologues 0, 1 block rows x %.0f\n",
		 drain + rows, drain + rows, drain, rows);
	const char *want[] = {
		"kernel d (dot)\n",
		"  tiled: d bf16[128,128], grid 16x1; kernel bf16[128,128] grid 16x1\n",
		"  config: output_bounds=16x1;kernel_bounds=16x1\n",
		"  steps: 1 (1 output blocks)\n",
		mxu,
		vpu,
		/* 0.56 us of MXU work (~530 cycles at 0.94 GHz) against
		 * ~0.59 us of fixed costs (kernel_ns ~200 + step_ns ~85 + 3
		 * transfers x dma_latency_ns ~100): the fixed costs are the
		 * busiest (checked against the spec below) */
		hw.kernel_overhead_ns + hw.step_overhead_ns +
				3 * hw.dma_latency_ns >
			mc / (hw.clock_hz * 1e-9)
			? "bound by overhead\n"
			: "bound by mxu\n",
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(want); i++)
		if (!strstr(buf, want[i]))
			fail_msg("explain lacks '%s':\n%s", want[i], buf);
	/* a config that does not fit the kernel is an error with its reason */
	sim_tile_config_parse("output_bounds=17x1", &c, &d);
	f = fmemopen(buf, sizeof buf - 1, "w");
	assert_int_equal(sim_kernel_explain(tu_kernel(&b, "d"), &hw, &c, f, &d),
			 TS_ERR_MISUSE);
	fclose(f);
	assert_string_equal(d.msg, "d: output_bounds[0] = 17 is outside 1..16 "
				   "(the tile grid)");
	tu_built_free(&b);
}

/* ---- DMA runs, straddling blocks, split contractions -------------------------- */

/* The estimate and its terms for one config (x: zeroed or from an
 * earlier call, whose terms it frees; sim_est_detail_free the last). */
static void detail(const struct sim_kernel *k, const struct hw_spec *hw,
		   const char *cfg, struct sim_estimate *e,
		   struct sim_est_detail *x)
{
	struct sim_plan p;
	struct sim_tile_config c, full;
	struct ts_diag d = {0};
	sim_est_detail_free(x);
	if (sim_tile_config_parse(cfg, &c, &d) != TS_OK ||
	    sim_plan_build(k, hw, &p, &d) != TS_OK ||
	    sim_plan_check(&p, &c, &full, &d) != TS_OK ||
	    sim_plan_estimate_detail(&p, hw, &full, e, x, &d) != TS_OK)
		fail_msg("%s %s: %s", k->name, cfg, d.msg);
	sim_plan_free(&p);
}

/*
 * f32[64,256] negate, tile grid 8 x 2 (tiles of 8 x 128 = 4 KiB), one
 * input and one output access:
 *   output_bounds=8x1: 2 blocks of 8 x 1 tiles; the minor dim is split,
 *     so a block is 8 runs of one tile: 16 runs per access, 8 per block;
 *   output_bounds=1x2: 8 blocks of one whole tile row (8 KiB): one run
 *     per block, 8 per access.
 * Same bytes, same steps count aside, different runs. The first load is
 * one stream (one input): latency + 32768 B / bw + 8 x dma_chunk_ns.
 */
static void test_dma_runs(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule neg\n"
	      "ENTRY %e (a: f32[64,256]) -> f32[64,256] {\n"
	      "  %a = f32[64,256] parameter(0)\n"
	      "  ROOT %n = f32[64,256] negate(%a)\n"
	      "}\n",
	      &b);
	struct sim_estimate e;
	struct sim_est_detail x = {0};
	detail(tu_kernel(&b, "n"), &hw, "output_bounds=8x1", &e, &x);
	assert_int_equal(e.steps, 2);
	assert_near(x.ac[0].chunks, 16, 0);
	assert_near(x.ac[0].block_chunks, 8, 0);
	assert_near(x.ac[1].chunks, 16, 0);
	assert_near(x.chunks, 32, 0);
	double bw = hw_spec_hbm_bw(&hw) * 1e-9;
	assert_near(x.first_ns,
		    hw.dma_latency_ns + 32768 / bw + 8 * hw.dma_chunk_ns, EXACT);
	detail(tu_kernel(&b, "n"), &hw, "output_bounds=1x2", &e, &x);
	assert_int_equal(e.steps, 8);
	assert_near(x.ac[0].chunks, 8, 0);
	assert_near(x.ac[0].block_chunks, 1, 0);
	assert_near(x.first_ns, hw.dma_latency_ns + 8192 / bw + hw.dma_chunk_ns,
		    EXACT);
	sim_est_detail_free(&x);
	tu_built_free(&b);
}

/*
 * A copy f32[32,16,128]{2,1,0} -> {2,0,1}: the output's major dim d1 (16
 * rows, untiled there) is the input's sublane dim (8-row tiles). Blocks of
 * 3 rows of d1 (output_bounds=3x4x1) start at 0, 3, ..., 15 and touch
 * 1, 1, 2, 1, 1, 1 input tiles: 7 tile rows (n + floor(n f / t) -
 * floor(n g / t) = 5 + 1 - 0 over the 5 full blocks, 1 for the last),
 * where padding each block to a tile would count 6. Input bytes: 32 x 7 x
 * 4096 = 917504, in 32 x 6 runs (a block splits d1, so each d0 row of a
 * block is one run); its buffer holds the largest block, 2 tiles per d0
 * row.
 */
static void test_straddle(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule cp, entry_computation_layout={(f32[32,16,128]"
	      "{2,1,0:T(8,128)})->f32[32,16,128]{2,0,1:T(8,128)}}\n"
	      "ENTRY %e (a: f32[32,16,128]) -> f32[32,16,128] {\n"
	      "  %a = f32[32,16,128]{2,1,0:T(8,128)} parameter(0)\n"
	      "  ROOT %c = f32[32,16,128]{2,0,1:T(8,128)} copy(%a)\n"
	      "}\n",
	      &b);
	struct sim_estimate e;
	struct sim_est_detail x = {0};
	detail(tu_kernel(&b, "c"), &hw, "output_bounds=3x4x1", &e, &x);
	assert_int_equal(e.steps, 6);
	assert_near(e.bytes_read, 32.0 * 7 * 4096, 0);
	assert_near(x.ac[0].block, 32.0 * 2 * 4096, 0);
	assert_near(e.bytes_written, 32.0 * 16 * 128 * 4, 0);
	/* every block splits d1: one run per d0 row and block (the two
	 * tiles a straddling block touches are adjacent in HBM) */
	assert_near(x.ac[0].chunks, 32.0 * 6, 0);
	/* blocks of 8 rows line up with the tiles: 2 tile rows, no extra */
	detail(tu_kernel(&b, "c"), &hw, "output_bounds=8x4x1", &e, &x);
	assert_near(e.bytes_read, 32.0 * 2 * 4096, 0);
	sim_est_detail_free(&x);
	tu_built_free(&b);
}

/*
 * bf16 [128,256] x [256,128], the contraction split in two (kernel_bounds
 * 16x1 of a 32 x 1 kernel grid): 2 steps, 1 output block of 128 x 128 f32
 * = 16 vregs. The second step re-adds its partial sums (16 simple ops),
 * and the MXU waits for them: compute = (MXU + 16) cycles over 2 steps.
 * The drains and re-adds on the VPU: 16 x (2 x 2 - 1) = 48.
 */
static void test_split_contraction(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule mm\n"
	      "ENTRY %e (a: bf16[128,256], b: bf16[256,128]) -> f32[128,128] {\n"
	      "  %a = bf16[128,256] parameter(0)\n"
	      "  %b = bf16[256,128] parameter(1)\n"
	      "  ROOT %d = f32[128,128] dot(%a, %b), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n"
	      "}\n",
	      &b);
	struct sim_estimate e;
	struct sim_est_detail x = {0};
	detail(tu_kernel(&b, "d"), &hw, "output_bounds=16x1;kernel_bounds=16x1", &e,
	       &x);
	assert_int_equal(e.steps, 2);
	assert_int_equal(x.out_steps, 1);
	assert_near(x.readd_cycles, 16.0 / hw.vpu_alus, EXACT);
	assert_near(x.acc_cycles, 48.0 / hw.vpu_alus, EXACT);
	/* per step one 128 x 128 weight tile streams 128 rows: 510 + P */
	assert_near(e.mxu_cycles, 2 * (510 + hw.mxu_pass_cycles), EXACT);
	assert_near(x.compute_step_ns,
		    (e.mxu_cycles + x.readd_cycles) / (hw.clock_hz * 1e-9) / 2,
		    EXACT);
	/* the whole contraction in one step: nothing to re-add */
	detail(tu_kernel(&b, "d"), &hw, "output_bounds=16x1;kernel_bounds=32x1", &e,
	       &x);
	assert_near(x.readd_cycles, 0, 0);
	sim_est_detail_free(&x);
	tu_built_free(&b);
}

/*
 * An f16 dot's operands go through 32 bits before the MXU (it takes bf16):
 * each keeps a staging copy of twice its block's bytes per buffer, a bf16
 * dot's do not. 1024^3 at output_bounds=16x2;kernel_bounds=16x2 (tiles of
 * 8 x 128): lhs blocks 128 x 128 (M x K) and rhs blocks 128 x 256 (K x N),
 * 2 bytes an element, both double-buffered (M, N and K are all split), so
 * the f16 dot's working set exceeds the bf16 one's by
 *   2 buffers x 2 (staging) x (128 x 128 + 128 x 256) x 2 B = 393,216 B;
 * everything else (output blocks, accumulator) is the same size. And each
 * f16 operand is rounded to bf16 on the way in, as an f32 one is: one
 * simple op per 8 x 128 vreg of its 2^20 elements per pass, on v4's two
 * ALUs 1024 / 2 = 512 cycles per fetch of the whole operand (its
 * prologue); a bf16 operand needs none.
 */
static void test_f16_dot(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	static const char tmpl[] =
		"HloModule mm\n"
		"ENTRY e {\n"
		"  a = %s[1024,1024]{1,0} parameter(0)\n"
		"  b = %s[1024,1024]{1,0} parameter(1)\n"
		"  ROOT d = %s[1024,1024]{1,0} dot(a, b), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"}\n";
	const char *types[2] = {"bf16", "f16"};
	double vmem[2];
	for (int i = 0; i < 2; i++) {
		char text[512];
		snprintf(text, sizeof text, tmpl, types[i], types[i], types[i]);
		struct tu_built b;
		tu_build(text, &b);
		const struct sim_kernel *k = tu_kernel(&b, "d");
		vmem[i] = estimate(k, &hw, "output_bounds=16x2;kernel_bounds=16x2")
				  .vmem_bytes;
		struct sim_plan p;
		struct ts_diag d = {0};
		assert_int_equal(sim_plan_build(k, &hw, &p, &d), TS_OK);
		int inputs = 0;
		for (int a = 0; a < p.n_access; a++) {
			if (p.acc[a].output)
				continue;
			inputs++;
			assert_near(p.acc[a].prologue_cycles, i ? 512.0 : 0.0, 0);
		}
		assert_int_equal(inputs, 2);
		sim_plan_free(&p);
		tu_built_free(&b);
	}
	assert_near(vmem[1] - vmem[0], 393216.0, 0);
}

/*
 * TpuGraphs fusion.191 (bf16 input, 3x3 window): two configs failed to
 * compile on the TPU (MANIFEST: runs 575 and 579, dropped from the data);
 * with the bf16 input's unpacked staging copy they need more than v3's
 * 16 MiB of VMEM, while the largest config that ran stays feasible. And
 * copy.25: 5x2x4x1 moves the same bytes in the same 6 steps as 5x2x2x2 but
 * in 4 KiB runs (1200 of them against 156): measured 15794 vs 13318 ns,
 * so it must come out slower.
 */
static void test_tpugraphs_vmem_and_runs(void **state)
{
	(void)state;
	struct hw_spec hw;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!tu_load_spec("v3", &hw))
		skip();
	if (!shared) {
		printf("TPUSIM_SHARED unset: skipped\n");
		skip();
	}
	const char *mods[] = {"fusion.191", "copy.25"};
	char *text[2] = {NULL, NULL};
	struct tu_built b[2];
	for (int i = 0; i < 2; i++) {
		char path[4096];
		size_t len = 0;
		struct ts_diag d = {0};
		snprintf(path, sizeof path,
			 "%s/data/tpugraphs-tile-v3/modules/%s.hlo", shared,
			 mods[i]);
		if (ts_read_file(path, &text[i], &len, &d) != TS_OK) {
			printf("%s not readable: skipped\n", path);
			ts_free(text[0]);
			if (i > 0)
				tu_built_free(&b[0]);
			skip();
		}
		tu_build_file(path, text[i], len, NULL, &b[i]);
	}
	const struct sim_kernel *k = tu_kernel(&b[0], "fusion.191");
	assert_false(estimate(k, &hw, "output_bounds=12x12x4x1;"
				      "kernel_bounds=3x2x24x1").feasible);
	assert_false(estimate(k, &hw, "output_bounds=12x6x4x3;"
				      "kernel_bounds=1x3x24x3").feasible);
	assert_true(estimate(k, &hw, "output_bounds=12x6x4x3;"
				     "kernel_bounds=3x3x16x3").feasible);
	k = tu_kernel(&b[1], "copy.25");
	struct sim_estimate narrow = estimate(k, &hw, "output_bounds=5x2x4x1");
	struct sim_estimate wide = estimate(k, &hw, "output_bounds=5x2x2x2");
	assert_int_equal(narrow.steps, wide.steps);
	assert_near(narrow.bytes_read, wide.bytes_read, 0);
	assert_true(narrow.time_ns > wide.time_ns);
	for (int i = 0; i < 2; i++) {
		tu_built_free(&b[i]);
		ts_free(text[i]);
	}
}

/* ---- TpuGraphs fusion.191 (needs ../shared) ------------------------------------------ */

/*
 * fusion.191 measured 151565 ns under XLA's default config and 137344 ns
 * at its best (TpuGraphs op_tuning_data, tpugraphs-tile-v3). The model must
 * land within MODEL_REL_TOL of both (its MAPE over the kernel's 579 runs is
 * about 8%; 15% leaves room for calibration without hiding a broken
 * model) and rank the best below the default, as measured.
 */
#define MODEL_REL_TOL 0.15

static void test_fusion_191(void **state)
{
	(void)state;
	struct hw_spec hw;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!tu_load_spec("v3", &hw))
		skip();
	char path[4096];
	snprintf(path, sizeof path,
		 "%s/data/tpugraphs-tile-v3/modules/fusion.191.hlo",
		 shared ? shared : "");
	char *text = NULL;
	size_t len = 0;
	struct ts_diag d = {0};
	if (!shared || ts_read_file(path, &text, &len, &d) != TS_OK) {
		printf("%s not readable (TPUSIM_SHARED): skipped\n", path);
		skip();
	}
	struct tu_built b;
	tu_build_file(path, text, len, NULL, &b);
	const struct sim_kernel *k = tu_kernel(&b, "fusion.191");
	struct sim_estimate def = estimate(
		k, &hw, "output_bounds=12x4x4x3;kernel_bounds=3x1x24x3");
	struct sim_estimate best = estimate(
		k, &hw, "output_bounds=6x12x4x1;kernel_bounds=3x3x24x1");
	double rel_def = def.time_ns / 151565.0 - 1;
	double rel_best = best.time_ns / 137344.0 - 1;
	if (fabs(rel_def) > MODEL_REL_TOL || fabs(rel_best) > MODEL_REL_TOL)
		fail_msg("default %.0f ns (%+.1f%%), best %.0f ns (%+.1f%%)",
			 def.time_ns, rel_def * 100, best.time_ns, rel_best * 100);
	assert_true(best.time_ns < def.time_ns);
	assert_int_equal(def.bound, HW_UNIT_MXU);
	tu_built_free(&b);
	ts_free(text);
}

/* ---- op-level mechanisms (tpuv4-ops) ---------------------------------------------- */

/*
 * f16[8,128] add: each array one vreg of 1024 elements (T(8,128)), one
 * step. f16 is converted after each load and before the store
 * (hw_vpu_f16_convert_cycles), on v3's one ALU:
 *   (add 1 + 2 loads x f16_load_cost + 1 store x f16_store_cost) / alus
 *   + row loop row_cycles (v3 at its spec's figures: ~39 cycles);
 * the f32 twin costs only 1 + 4.
 */
static void test_f16_conversion(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule add\n"
	      "ENTRY %e (a: f16[8,128], b: f16[8,128]) -> f16[8,128] {\n"
	      "  %a = f16[8,128] parameter(0)\n"
	      "  %b = f16[8,128] parameter(1)\n"
	      "  ROOT %s = f16[8,128] add(%a, %b)\n"
	      "}\n",
	      &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "s"), &hw, "");
	assert_int_equal(e.steps, 1);
	assert_near(e.vpu_cycles,
		    (1 + 2 * hw.vpu_f16_load_cost + hw.vpu_f16_store_cost) /
				    hw.vpu_alus +
			    hw.row_overhead_cycles,
		    EXACT);
	tu_built_free(&b);
}

/*
 * A copy or transpose that puts another logical dim on the lanes moves
 * its data across lanes on the XLU (plan_vpu.c sim_relayout_cycles): per
 * output vreg one simple op plus xlu_transpose_cost slots, over the ALUs. By
 * hand, T(8,128) f32 vregs of the result:
 *   copy f32[256,1024] row- to column-major: 1024/8 x 256/128 = 256;
 *   transpose to f32[1024,256] (row-major): 1024/8 x 256/128 = 256;
 *   transpose f32[4,256,1024] -> [256,4,1024], lanes kept: 256 x 1 (4 rows
 *   padded to 8) x 1024/128 = 2,048 vregs of one simple op, no XLU.
 */
static void test_relayout_xlu(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	assert_true(hw.xlu_transpose_cost > 0);
	struct tu_built b;
	tu_build("HloModule t\n"
	      "ENTRY %e (a: f32[256,1024], c: f32[4,256,1024]) -> "
	      "(f32[256,1024], f32[1024,256], f32[256,4,1024]) {\n"
	      "  %a = f32[256,1024]{1,0:T(8,128)} parameter(0)\n"
	      "  %c = f32[4,256,1024]{2,1,0:T(8,128)} parameter(1)\n"
	      "  %col = f32[256,1024]{0,1:T(8,128)} copy(%a)\n"
	      "  %tr = f32[1024,256]{1,0:T(8,128)} transpose(%a), dimensions={1,0}\n"
	      "  %keep = f32[256,4,1024]{2,1,0:T(8,128)} transpose(%c), dimensions={1,0,2}\n"
	      "  ROOT %t = (f32[256,1024]{0,1:T(8,128)}, f32[1024,256]{1,0:T(8,128)}, "
	      "f32[256,4,1024]{2,1,0:T(8,128)}) tuple(%col, %tr, %keep)\n"
	      "}\n",
	      &b);
	static const struct {
		const char *kernel;
		double vregs, slots;
	} cases[] = {
		{"col", 256, 1}, {"tr", 256, 1}, {"keep", 2048, 0},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
		struct sim_plan p;
		struct ts_diag d = {0};
		assert_int_equal(sim_plan_build(tu_kernel(&b, cases[i].kernel),
						&hw, &p, &d),
				 TS_OK);
		double want = cases[i].vregs *
			      (1 + cases[i].slots * hw.xlu_transpose_cost) /
			      hw.vpu_alus;
		if (fabs(p.vpu_cycles - want) > 1e-9 * want)
			fail_msg("%s: %.3f VPU cycles, expected %.3f",
				 cases[i].kernel, p.vpu_cycles, want);
		sim_plan_free(&p);
	}
	tu_built_free(&b);
}

/* Kernel names and the result vregs each transposes on the XLU. */
struct xlu_case {
	const char *kernel;
	double vregs;
};

/* Asserts each case's plan charges vregs x xlu_transpose_cost / alus XLU
 * cycles (sim_plan.xlu_cycles). */
static void expect_xlu(const struct tu_built *b, const struct hw_spec *hw,
		       const struct xlu_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sim_plan p;
		struct ts_diag d = {0};
		assert_int_equal(sim_plan_build(tu_kernel(b, cases[i].kernel),
						hw, &p, &d),
				 TS_OK);
		double want = cases[i].vregs * hw->xlu_transpose_cost /
			      hw->vpu_alus;
		if (fabs(p.xlu_cycles - want) > 1e-9 * (want + 1))
			fail_msg("%s: %.3f XLU cycles, expected %.3f",
				 cases[i].kernel, p.xlu_cycles, want);
		sim_plan_free(&p);
	}
}

/* A dot whose given result layout puts M on the lanes transposes each
 * result vreg on the XLU (sim_relayout_cycles): C f32[256,384] stored
 * M-minor is 384 rows x 256 lanes, 96 vregs of 8 x 128, each costing
 * xlu_transpose_cost slots over the ALUs. Not charged: the mirrored
 * problem (A M-minor, B K-minor: C^T = B^T A^T), an N-minor result, a
 * matrix-vector product, layouts tpusim picks (no tiles). Through a
 * fusion's bias add the same 96 vregs. */
static void test_dot_result_xlu(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule t\n"
		 "%f (p: f32[256,512], q: f32[512,384], s: f32[384]) -> f32[256,384] {\n"
		 "  %p = f32[256,512]{1,0:T(8,128)} parameter(0)\n"
		 "  %q = f32[512,384]{0,1:T(8,128)} parameter(1)\n"
		 "  %s = f32[384]{0:T(256)} parameter(2)\n"
		 "  %d = f32[256,384]{0,1:T(8,128)} dot(%p, %q), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %sb = f32[256,384]{0,1:T(8,128)} broadcast(%s), dimensions={1}\n"
		 "  ROOT %bias = f32[256,384]{0,1:T(8,128)} add(%sb, %d)\n"
		 "}\n"
		 "ENTRY %e (ar: f32[256,512], ac: f32[256,512], br: f32[512,384], "
		 "bc: f32[512,384], v: f32[512,1], s: f32[384], u: f32[256,512], "
		 "w: f32[512,384]) -> (f32[256,384], f32[256,384], f32[256,384], "
		 "f32[256,384], f32[256,1], f32[256,384], f32[256,384]) {\n"
		 "  %ar = f32[256,512]{1,0:T(8,128)} parameter(0)\n"
		 "  %ac = f32[256,512]{0,1:T(8,128)} parameter(1)\n"
		 "  %br = f32[512,384]{1,0:T(8,128)} parameter(2)\n"
		 "  %bc = f32[512,384]{0,1:T(8,128)} parameter(3)\n"
		 "  %v = f32[512,1]{0,1:T(8,128)} parameter(4)\n"
		 "  %s = f32[384]{0:T(256)} parameter(5)\n"
		 "  %u = f32[256,512]{1,0} parameter(6)\n"
		 "  %w = f32[512,384]{0,1} parameter(7)\n"
		 "  %mixed = f32[256,384]{0,1:T(8,128)} dot(%ar, %bc), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %mixed2 = f32[256,384]{0,1:T(8,128)} dot(%ac, %br), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %mirror = f32[256,384]{0,1:T(8,128)} dot(%ac, %bc), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %nminor = f32[256,384]{1,0:T(8,128)} dot(%ar, %bc), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %matvec = f32[256,1]{0,1:T(8,128)} dot(%ar, %v), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %untiled = f32[256,384]{0,1} dot(%u, %w), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %fused = f32[256,384]{0,1:T(8,128)} fusion(%ar, %bc, %s), "
		 "kind=kOutput, calls=%f\n"
		 "  ROOT %r = (f32[256,384]{0,1:T(8,128)}, f32[256,384]{0,1:T(8,128)}, "
		 "f32[256,384]{0,1:T(8,128)}, f32[256,384]{1,0:T(8,128)}, "
		 "f32[256,1]{0,1:T(8,128)}, f32[256,384]{0,1}, "
		 "f32[256,384]{0,1:T(8,128)}) tuple(%mixed, %mixed2, %mirror, "
		 "%nminor, %matvec, %untiled, %fused)\n"
		 "}\n",
		 &b);
	static const struct xlu_case cases[] = {
		{"mixed", 96}, {"mixed2", 96}, {"mirror", 0}, {"nminor", 0},
		{"matvec", 0}, {"untiled", 0}, {"fused", 96},
	};
	expect_xlu(&b, &hw, cases, TS_ARRAY_LEN(cases));
	tu_built_free(&b);

	/* A batched dot stored M-minor, {1,2,0}: 4 x 384 rows x 256 lanes, 384
	 * vregs; with the batch dim on the lanes, none. Row-major operands
	 * with an M-minor result (not the mirrored layouts), 96. A top-level
	 * add of a dot: none (the dot's own kernel pays). A multi-output
	 * fusion whose first element adds a parameter to the dot (the
	 * parameter first), 96; its second element (a negate), none. */
	tu_build("HloModule t2\n"
		 "%g (p: f32[256,512], q: f32[512,384], c: f32[256,384]) -> "
		 "(f32[256,384], f32[256,384]) {\n"
		 "  %p = f32[256,512]{1,0:T(8,128)} parameter(0)\n"
		 "  %q = f32[512,384]{1,0:T(8,128)} parameter(1)\n"
		 "  %c = f32[256,384]{0,1:T(8,128)} parameter(2)\n"
		 "  %d = f32[256,384]{0,1:T(8,128)} dot(%p, %q), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %sum = f32[256,384]{0,1:T(8,128)} add(%c, %d)\n"
		 "  %neg = f32[256,384]{0,1:T(8,128)} negate(%c)\n"
		 "  ROOT %t = (f32[256,384]{0,1:T(8,128)}, f32[256,384]{0,1:T(8,128)}) "
		 "tuple(%sum, %neg)\n"
		 "}\n"
		 "ENTRY %e (a: f32[4,256,512], bb: f32[4,512,384], p: f32[256,512], "
		 "q: f32[512,384], c: f32[256,384]) -> (f32[4,256,384], "
		 "f32[4,256,384], f32[256,384], f32[256,384], f32[256,384], "
		 "f32[256,384]) {\n"
		 "  %a = f32[4,256,512]{2,1,0:T(8,128)} parameter(0)\n"
		 "  %bb = f32[4,512,384]{2,1,0:T(8,128)} parameter(1)\n"
		 "  %p = f32[256,512]{1,0:T(8,128)} parameter(2)\n"
		 "  %q = f32[512,384]{1,0:T(8,128)} parameter(3)\n"
		 "  %c = f32[256,384]{0,1:T(8,128)} parameter(4)\n"
		 "  %bm = f32[4,256,384]{1,2,0:T(8,128)} dot(%a, %bb), "
		 "lhs_batch_dims={0}, rhs_batch_dims={0}, "
		 "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
		 "  %bl = f32[4,256,384]{0,2,1:T(8,128)} dot(%a, %bb), "
		 "lhs_batch_dims={0}, rhs_batch_dims={0}, "
		 "lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
		 "  %top = f32[256,384]{0,1:T(8,128)} dot(%p, %q), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  %topadd = f32[256,384]{0,1:T(8,128)} add(%top, %c)\n"
		 "  %fus = (f32[256,384]{0,1:T(8,128)}, f32[256,384]{0,1:T(8,128)}) "
		 "fusion(%p, %q, %c), kind=kOutput, calls=%g\n"
		 "  %f0 = f32[256,384]{0,1:T(8,128)} get-tuple-element(%fus), index=0\n"
		 "  %f1 = f32[256,384]{0,1:T(8,128)} get-tuple-element(%fus), index=1\n"
		 "  ROOT %r = (f32[4,256,384]{1,2,0:T(8,128)}, "
		 "f32[4,256,384]{0,2,1:T(8,128)}, f32[256,384]{0,1:T(8,128)}, "
		 "f32[256,384]{0,1:T(8,128)}, f32[256,384]{0,1:T(8,128)}, "
		 "f32[256,384]{0,1:T(8,128)}) tuple(%bm, %bl, %top, %topadd, %f0, %f1)\n"
		 "}\n",
		 &b);
	static const struct xlu_case forms[] = {
		{"bm", 384}, {"bl", 0}, {"top", 96}, {"topadd", 0}, {"fus", 96},
	};
	expect_xlu(&b, &hw, forms, TS_ARRAY_LEN(forms));
	tu_built_free(&b);

	/* A dot the verifier cannot check (a dynamic dim) with a scalar RHS:
	 * no charge, and no read outside its dims (the sanitizer build) */
	tu_build("HloModule t3\n"
		 "ENTRY %e (a: f32[<=256,512], b: f32[]) -> f32[256,384] {\n"
		 "  %a = f32[<=256,512]{1,0:T(8,128)} parameter(0)\n"
		 "  %b = f32[]{:T(256)} parameter(1)\n"
		 "  ROOT %d = f32[256,384]{0,1:T(8,128)} dot(%a, %b), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={}\n"
		 "}\n",
		 &b);
	static const struct xlu_case scalar[] = {{"d", 0}};
	expect_xlu(&b, &hw, scalar, 1);
	tu_built_free(&b);
}

/* ---- convolution forms ---------------------------------------------------- */

/* A 2D (N 32, 56 x 56, 128 -> 128, 3 x 3) and a 3D (N 4, 16^3, 128 -> 128,
 * 3 x 3 x 3) layer's forward, input-gradient and weight-gradient
 * convolutions as XLA writes them: the input gradient convolves dy with
 * the reversed kernel (i and o swapped), the weight gradient contracts x
 * and dy over batch and space (batch as the feature, the window the whole
 * padded input, the kernel as the output). */
static const char *const conv_forms[2][3] = {
	{"HloModule f\nENTRY e {\n  x = f32[32,56,56,128] parameter(0)\n"
	 "  w = f32[3,3,128,128] parameter(1)\n"
	 "  ROOT y = f32[32,56,56,128] convolution(x, w), window={size=3x3 "
	 "pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n",
	 "HloModule d\nENTRY e {\n  dy = f32[32,56,56,128] parameter(0)\n"
	 "  w = f32[3,3,128,128] parameter(1)\n"
	 "  ROOT dx = f32[32,56,56,128] convolution(dy, w), window={size=3x3 "
	 "pad=1_1x1_1 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f\n}\n",
	 "HloModule w\nENTRY e {\n  x = f32[32,56,56,128] parameter(0)\n"
	 "  dy = f32[32,56,56,128] parameter(1)\n"
	 "  ROOT dw = f32[3,3,128,128] convolution(x, dy), window={size=56x56 "
	 "pad=1_1x1_1}, dim_labels=f01b_i01o->01bf\n}\n"},
	{"HloModule f\nENTRY e {\n  x = f32[4,16,16,16,128] parameter(0)\n"
	 "  w = f32[3,3,3,128,128] parameter(1)\n"
	 "  ROOT y = f32[4,16,16,16,128] convolution(x, w), window={size=3x3x3 "
	 "pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f\n}\n",
	 "HloModule d\nENTRY e {\n  dy = f32[4,16,16,16,128] parameter(0)\n"
	 "  w = f32[3,3,3,128,128] parameter(1)\n"
	 "  ROOT dx = f32[4,16,16,16,128] convolution(dy, w), window={size=3x3x3 "
	 "pad=1_1x1_1x1_1 rhs_reversal=1x1x1}, dim_labels=b012f_012oi->b012f\n}\n",
	 "HloModule w\nENTRY e {\n  x = f32[4,16,16,16,128] parameter(0)\n"
	 "  dy = f32[4,16,16,16,128] parameter(1)\n"
	 "  ROOT dw = f32[3,3,3,128,128] convolution(x, dy), window={size=16x16x16 "
	 "pad=1_1x1_1x1_1}, dim_labels=f012b_i012o->012bf\n}\n"},
};

/*
 * The three forms do the same MACs (each output gradient meets each input
 * once per tap that lands on real input) and each keeps the MXU busy:
 * their K and N are 128 (the weight gradient's K, the batch, is 32 or 4,
 * but its taps fold into 128-deep tiles: floor(128 / K) taps per tile, so
 * no padding). A weight tile then costs max(T, R) + B cycles for T
 * streamed rows (hw_mxu_stream_cycles) and a step adds one fill/drain of
 * 2R + C - 2 = 382 cycles; with v3's B = 28.3 and steps of thousands of
 * rows the arrays are busy more than 90% of the MXU time, and these
 * MXU-bound kernels spend most of their time there: at least 60% of the
 * MXU peak over the kernel's time for every form. Unfolded, the 2D weight
 * gradient padded each 32-deep tap to 128 rows: at most 25%.
 */
static void test_conv_forms(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	for (int layer = 0; layer < 2; layer++) {
		double macs[3], t[3];
		for (int f = 0; f < 3; f++) {
			struct tu_built b;
			tu_build(conv_forms[layer][f], &b);
			const struct sim_kernel *k = &b.p.kernels[0];
			struct ts_diag d = {0};
			struct sim_estimate e;
			assert_int_equal(sim_kernel_estimate(k, &hw, NULL, &e, &d),
					 TS_OK);
			macs[f] = k->work.mxu_macs;
			t[f] = e.time_ns;
			if (!(e.mxu_util >= 0.6 && e.mxu_util <= 1.0))
				fail_msg("layer %d form %d: MXU utilisation %.3f",
					 layer, f, e.mxu_util);
			tu_built_free(&b);
		}
		assert_near(macs[1], macs[0], 0);
		assert_near(macs[2], macs[0], 0);
		double lo = fmin(t[0], fmin(t[1], t[2]));
		double hi = fmax(t[0], fmax(t[1], t[2]));
		if (hi > 1.25 * lo)
			fail_msg("layer %d: forms take %.0f, %.0f, %.0f ns", layer,
				 t[0], t[1], t[2]);
	}
}

/*
 * Megacore: an f32 add over 1024 x 2048 = 2,097,152 elements, at least
 * chip.megacore_min_elems (1.25e6), runs on both cores: under one config
 * of S output blocks each core runs S / 2 steps of the same per-step
 * compute, T_pipe = (S/2 - 1) x (max(compute, dma) + step_ns) + compute +
 * step_ns; both cores' first loads move at once (twice the bytes on the
 * shared HBM). A config of one output block runs on one core: the same
 * time as the chip without the split. 1024 x 1024 = 1,048,576 elements
 * stay on one core, and a reduce-window (pooling) kernel is never split,
 * whatever its size. Tolerance EXACT: the same arithmetic.
 */
static void test_megacore_split(void **state)
{
	(void)state;
	struct hw_spec mc;
	if (!tu_load_spec("v3", &mc))
		skip();
	mc.megacore = true;
	mc.megacore_min_elems = 1.25e6;
	/* the same chip (same HBM share) with the threshold out of reach */
	struct hw_spec one = mc;
	one.megacore_min_elems = 1e15;
	struct tu_built b;
	tu_build("HloModule add\n"
	      "ENTRY %e (a: f32[1024,2048], b: f32[1024,1024], "
	      "c: f32[1,64,1024,1024]) -> (f32[1024,2048], f32[1024,1024], "
	      "f32[1,64,512,512]) {\n"
	      "  %a = f32[1024,2048] parameter(0)\n"
	      "  %b = f32[1024,1024] parameter(1)\n"
	      "  %c = f32[1,64,1024,1024] parameter(2)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %w = f32[1,64,512,512] reduce-window(%c, %z), "
	      "window={size=1x1x2x2 stride=1x1x2x2}, to_apply=%sum\n"
	      "  %small = f32[1024,1024] add(%b, %b)\n"
	      "  %big = f32[1024,2048] add(%a, %a)\n"
	      "  ROOT %t = (f32[1024,2048], f32[1024,1024], f32[1,64,512,512]) "
	      "tuple(%big, %small, %w)\n"
	      "}\n"
	      "%sum (x: f32[], y: f32[]) -> f32[] {\n"
	      "  %x = f32[] parameter(0)\n"
	      "  %y = f32[] parameter(1)\n"
	      "  ROOT %r = f32[] add(%x, %y)\n"
	      "}\n",
	      &b);
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(tu_kernel(&b, "big"), &mc, &p, &d), TS_OK);
	assert_int_equal(sim_plan_cores(&p, &mc), 2);
	struct sim_tile_config cfg, full;
	assert_int_equal(sim_tile_config_parse("output_bounds=16x16", &cfg, &d),
			 TS_OK);
	assert_int_equal(sim_plan_check(&p, &cfg, &full, &d), TS_OK);
	struct sim_estimate e2, e1;
	struct sim_est_detail x2, x1;
	assert_int_equal(sim_plan_estimate_detail(&p, &mc, &full, &e2, &x2, &d), TS_OK);
	sim_plan_free(&p);
	assert_int_equal(sim_plan_build(tu_kernel(&b, "big"), &one, &p, &d), TS_OK);
	assert_int_equal(sim_plan_cores(&p, &one), 1);
	assert_int_equal(sim_plan_estimate_detail(&p, &one, &full, &e1, &x1, &d), TS_OK);
	assert_int_equal(x2.steps, x1.steps);
	assert_true(x2.steps >= 4 && x2.steps % 2 == 0);
	assert_near(x2.compute_step_ns, x1.compute_step_ns, EXACT);
	double half = (double)x2.steps / 2;
	assert_near(x2.pipeline_ns,
		    (half - 1) * (fmax(x2.compute_step_ns, x2.dma_step_ns) +
				  mc.step_overhead_ns) +
			    x2.compute_step_ns + mc.step_overhead_ns,
		    EXACT);
	assert_near(x2.first_ns,
		    mc.dma_latency_ns +
			    fmax(2 * x1.first_bytes / hw_mem_bytes_per_ns(&mc),
				 x1.first_ns - mc.dma_latency_ns),
		    EXACT);
	/* one output block (128 x 16 tiles of 8 x 128): one core */
	assert_int_equal(sim_tile_config_parse("output_bounds=128x16", &cfg, &d),
			 TS_OK);
	assert_int_equal(sim_plan_check(&p, &cfg, &full, &d), TS_OK);
	sim_est_detail_free(&x1);
	assert_int_equal(sim_plan_estimate_detail(&p, &one, &full, &e1, &x1, &d), TS_OK);
	assert_int_equal(x1.steps, 1);
	sim_plan_free(&p);
	assert_int_equal(sim_plan_build(tu_kernel(&b, "big"), &mc, &p, &d), TS_OK);
	sim_est_detail_free(&x2);
	assert_int_equal(sim_plan_estimate_detail(&p, &mc, &full, &e2, &x2, &d), TS_OK);
	assert_near(e2.time_ns, e1.time_ns, EXACT);
	sim_plan_free(&p);
	assert_int_equal(sim_plan_build(tu_kernel(&b, "small"), &mc, &p, &d), TS_OK);
	assert_int_equal(sim_plan_cores(&p, &mc), 1);
	sim_plan_free(&p);
	assert_int_equal(sim_plan_build(tu_kernel(&b, "w"), &mc, &p, &d), TS_OK);
	assert_int_equal(sim_plan_cores(&p, &mc), 1);
	sim_plan_free(&p);
	sim_est_detail_free(&x1);
	sim_est_detail_free(&x2);
	tu_built_free(&b);
}

/*
 * A divide whose divisor is a broadcast (or computed from constants)
 * costs a multiply (XLA inverts the divisor once): f32[8,128], one vreg,
 * v3's one ALU: 1 slot + row_cycles 16 = 17 cycles; a divide by a full
 * array pays the divide class (4): 4 + 16 = 20.
 */
static void test_divide_by_broadcast(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule div\n"
	      "ENTRY %e (a: f32[8,128], s: f32[8], c: f32[8,128]) -> "
	      "(f32[8,128], f32[8,128]) {\n"
	      "  %a = f32[8,128] parameter(0)\n"
	      "  %s = f32[8] parameter(1)\n"
	      "  %c = f32[8,128] parameter(2)\n"
	      "  %bs = f32[8,128] broadcast(%s), dimensions={0}\n"
	      "  %q = f32[8,128] divide(%a, %bs)\n"
	      "  %f = f32[8,128] divide(%a, %c)\n"
	      "  ROOT %t = (f32[8,128], f32[8,128]) tuple(%q, %f)\n"
	      "}\n",
	      &b);
	struct sim_estimate q = estimate(tu_kernel(&b, "q"), &hw, "");
	struct sim_estimate f = estimate(tu_kernel(&b, "f"), &hw, "");
	assert_near(q.vpu_cycles, 1 + hw.row_overhead_cycles, EXACT);
	assert_near(f.vpu_cycles,
		    hw.vpu_class_cost[HW_VPU_DIVIDE] + hw.row_overhead_cycles,
		    EXACT);
	tu_built_free(&b);
}

/*
 * Arrays written without tiles get the layout XLA TPU would assign
 * (hlo/ir_shape.c): the lane and sublane dims that pad least.
 *   f16[64,64,32,32]: lanes on a 64 dim (2x) rather than 32 (4x); the
 *     order keeps the others: dims 0, 2, 3, then 1 on the lanes, 8 MiB of
 *     data in 16 MiB.
 *   f16[64,128,32,32]: C = 128 on the lanes, no padding.
 *   The same shape with T(8,128)(2,1) written keeps its order: 4x.
 */
static void test_default_layout(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule bn\n"
	      "ENTRY %e (a: f16[64,64,32,32], c: f16[64,128,32,32], "
	      "t: f16[64,64,32,32]) -> f16[64,64,32,32] {\n"
	      "  %a = f16[64,64,32,32]{3,2,1,0} parameter(0)\n"
	      "  %c = f16[64,128,32,32]{3,2,1,0} parameter(1)\n"
	      "  ROOT %t = f16[64,64,32,32]{3,2,1,0:T(8,128)(2,1)} parameter(2)\n"
	      "}\n",
	      &b);
	const struct ir_computation *ent = b.m[0]->entry;
	const struct ir_instr *a = NULL, *c = NULL, *t = NULL;
	for (int i = 0; i < ent->n_instrs; i++) {
		const struct ir_instr *in = ent->instrs[i];
		if (strcmp(in->name, "a") == 0)
			a = in;
		else if (strcmp(in->name, "c") == 0)
			c = in;
		else if (strcmp(in->name, "t") == 0)
			t = in;
	}
	assert_non_null(a);
	assert_non_null(c);
	assert_non_null(t);
	int order[4];
	ir_shape_major_to_minor(&a->shape, order);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 3);
	assert_int_equal(order[3], 1);
	double raw = 64.0 * 64 * 32 * 32 * 2;
	assert_near(ir_shape_padded_bytes(&a->shape), 2 * raw, 0);
	ir_shape_major_to_minor(&c->shape, order);
	assert_int_equal(order[3], 1);
	assert_near(ir_shape_padded_bytes(&c->shape), 2 * raw, 0);
	ir_shape_major_to_minor(&t->shape, order);
	assert_int_equal(order[3], 3);
	assert_near(ir_shape_padded_bytes(&t->shape), 4 * raw, 0);
	/* asked again, from what the shape kept (ir_shape_memo): the same */
	assert_int_equal(a->shape.memo.known, IR_MEMO_ORDER | IR_MEMO_PADDED);
	ir_shape_major_to_minor(&a->shape, order);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[3], 1);
	assert_near(ir_shape_padded_bytes(&a->shape), 2 * raw, 0);
	/* a copy with other dims and its memo cleared is worked out again:
	 * f16[64,64,32,128] keeps the default pair, no padding */
	struct ir_shape wide = a->shape;
	int64_t dims[4] = {64, 64, 32, 128};
	wide.dims = dims;
	wide.memo = (struct ir_shape_memo){0};
	ir_shape_major_to_minor(&wide, order);
	assert_int_equal(order[2], 2);
	assert_int_equal(order[3], 3);
	assert_near(ir_shape_padded_bytes(&wide), raw * 4, 0);
	assert_near(ir_shape_padded_bytes(&a->shape), 2 * raw, 0);
	/* the tile grid follows the same order: 64 x 4 x 32 x 1 tiles */
	struct sim_tgrid g;
	struct ts_diag d = {0};
	assert_int_equal(sim_tile_grid(&a->shape, &g, &d), TS_OK);
	assert_int_equal(g.logical[3], 1);
	assert_int_equal(g.tiles[0], 64);
	assert_int_equal(g.tiles[1], 32);
	assert_int_equal(g.tiles[2], 4);
	assert_int_equal(g.tiles[3], 1);
	tu_built_free(&b);
}

/*
 * Many operands: a fusion adding 40 rows (f32[1024], 4 KiB each) to one
 * f32[1024,1024] (4 MiB), as the Llama-2 step's 26-input reduce fusion
 * does (the Gemma-3 and Llama-3.1 steps have fusions of up to 293 inputs).
 * Every input and the output follow the grid, however many (42 accesses,
 * more than the 24 the floors keep on the stack): the default config
 * splits the rows of x only, so each row vector is read once and held
 * once (its block never changes), x and the output once each. Before, 24
 * access slots held the smallest inputs whole; before that the inputs
 * past the cap took the slots in order and the output was dropped.
 */
/* A second tile level pads the first tile's extents: T(7,128)(2,1) packs
 * 7 bf16 rows into 4 32-bit rows, 8 rows' room (fuzz_pipeline found the
 * plan's DMA reading 7 and the roofline 8, the kernel then below its
 * floor). 256 rows: 37 tiles of 7, stored as 37 x 8 = 296 rows. */
static void test_further_tiles(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule ft\n"
		 "ENTRY %e (a: bf16[256,128], c: bf16[256,128]) -> bf16[256,128] {\n"
		 "  %a = bf16[256,128]{1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  ROOT %c = bf16[256,128]{1,0:T(7,128)(2,1)} parameter(1)\n"
		 "}\n",
		 &b);
	const struct ir_shape *a = &b.m[0]->entry->instrs[0]->shape;
	const struct ir_shape *c = &b.m[0]->entry->instrs[1]->shape;
	assert_near(ir_shape_further_tiles(a), 1.0, 0);
	assert_near(ir_shape_further_tiles(c), 8.0 / 7.0, 1e-15);
	assert_near(ir_shape_padded_bytes(a), 256.0 * 128 * 2, 0);
	assert_near(ir_shape_padded_bytes(c), 296.0 * 128 * 2, 0);
	/* the tile grid's bytes: tiles x tile extents x pad_factor x bytes */
	struct sim_tgrid g;
	struct ts_diag d = {0};
	assert_int_equal(sim_tile_grid(c, &g, &d), TS_OK);
	assert_int_equal(g.tiles[0], 37);
	assert_int_equal(g.tile[0], 7);
	assert_near((double)(g.tiles[0] * g.tile[0] * g.tiles[1] * g.tile[1]) *
			    g.pad_factor * g.bits / 8,
		    296.0 * 128 * 2, 1e-9);
	tu_built_free(&b);
}

static void test_many_operands(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	enum { ROWS = 40 };
	char text[12288];
	size_t n = 0;
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "HloModule many\n%%f (x: f32[1024,1024]");
	for (int i = 0; i < ROWS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
				      ", r%d: f32[1024]", i);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      ") -> f32[1024,1024] {\n"
			      "  %%x = f32[1024,1024] parameter(0)\n"
			      "  %%s0 = f32[1024,1024] negate(%%x)\n");
	for (int i = 0; i < ROWS; i++)
		n += (size_t)snprintf(
			text + n, sizeof text - n,
			"  %%r%d = f32[1024] parameter(%d)\n"
			"  %%b%d = f32[1024,1024] broadcast(%%r%d), dimensions={1}\n"
			"  %%s%d = f32[1024,1024] add(%%s%d, %%b%d)\n",
			i, i + 1, i, i, i + 1, i, i);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "  ROOT %%o = f32[1024,1024] negate(%%s%d)\n}\n"
			      "ENTRY %%e (x: f32[1024,1024]",
			      ROWS);
	for (int i = 0; i < ROWS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
				      ", r%d: f32[1024]", i);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      ") -> f32[1024,1024] {\n"
			      "  %%x = f32[1024,1024] parameter(0)\n");
	for (int i = 0; i < ROWS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
				      "  %%r%d = f32[1024] parameter(%d)\n", i,
				      i + 1);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "  ROOT %%k = f32[1024,1024] fusion(%%x");
	for (int i = 0; i < ROWS; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, ", %%r%d", i);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "), kind=kLoop, calls=%%f\n}\n");
	assert_true(n < sizeof text);
	struct tu_built b;
	tu_build(text, &b);
	const struct sim_kernel *k = tu_kernel(&b, "k");
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(k, &hw, &p, &d), TS_OK);
	assert_int_equal(p.n_access, ROWS + 2);
	assert_near(p.other_bytes, 0, 0);
	/* three cost forms: x, the rows (the first one's), the output */
	int rows = 0, firsts = 0;
	for (int a = 0; a < p.n_access; a++) {
		firsts += p.acc[a].form_first;
		if (!p.acc[a].output && p.acc[a].bytes < 8192) {
			rows++;
			assert_int_equal(p.acc[a].form, p.acc[1].form);
		}
	}
	assert_int_equal(rows, ROWS);
	assert_int_equal(firsts, 3);
	sim_plan_free(&p);
	struct sim_estimate e = estimate(k, &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 4096.0 * 1024, 0);
	assert_near(e.bytes_read, 4096.0 * 1024 + ROWS * 4096.0, 0);
	assert_true(e.steps > 1);
	/* x and the output double-buffered in equal blocks of rows, each
	 * row vector once */
	assert_near(e.vmem_bytes,
		    4 * (4096.0 * 1024 / (double)e.steps) + ROWS * 4096.0, 0);
	tu_built_free(&b);
}

/*
 * Cost forms are shared only by accesses that cost the same: a and b are
 * f32[256,1024] in row- and column-major layouts (T(8,128): b's lane dim
 * is a's row dim), c is a's form again, the output another (it is
 * written). Under output_bounds=4x8 (8 blocks of 32 rows, every lane) a
 * block of a is 4 whole tile rows, one run: 8 runs, 1 MiB. A block of b
 * needs 32 of its 256 lanes, inside one 128-lane tile, which the DMA
 * moves whole: 128 tile rows of 4 KiB, one run each: 512 KiB and 128 runs
 * a block, 4 MiB and 1024 runs in all.
 */
static void test_access_forms(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule f\n"
		 "ENTRY %e (a: f32[256,1024], b: f32[256,1024], "
		 "c: f32[256,1024]) -> f32[256,1024] {\n"
		 "  %a = f32[256,1024]{1,0:T(8,128)} parameter(0)\n"
		 "  %b = f32[256,1024]{0,1:T(8,128)} parameter(1)\n"
		 "  %c = f32[256,1024]{1,0:T(8,128)} parameter(2)\n"
		 "  %ab = f32[256,1024]{1,0:T(8,128)} add(%a, %b)\n"
		 "  ROOT %s = f32[256,1024]{1,0:T(8,128)} add(%ab, %c)\n"
		 "}\n",
		 &b);
	const struct sim_kernel *k = tu_kernel(&b, "s");
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(k, &hw, &p, &d), TS_OK);
	assert_int_equal(p.n_access, 4);
	int ia = -1, ib = -1, ic = -1, io = -1;
	for (int a = 0; a < p.n_access; a++) {
		const char *n = p.acc[a].name;
		if (p.acc[a].output)
			io = a;
		else if (!strcmp(n, "a"))
			ia = a;
		else if (!strcmp(n, "b"))
			ib = a;
		else if (!strcmp(n, "c"))
			ic = a;
	}
	assert_true(ia >= 0 && ib >= 0 && ic >= 0 && io >= 0);
	assert_int_equal(p.acc[ic].form, p.acc[ia].form);
	assert_false(p.acc[ic].form_first);
	assert_true(p.acc[ib].form != p.acc[ia].form);
	assert_true(p.acc[io].form != p.acc[ia].form);
	sim_plan_free(&p);
	struct sim_estimate e;
	struct sim_est_detail x = {0};
	detail(k, &hw, "output_bounds=4x8", &e, &x);
	assert_int_equal(e.steps, 8);
	assert_near(x.ac[ia].chunks, 8, 0);
	assert_near(x.ac[ic].chunks, 8, 0);
	assert_near(x.ac[ib].chunks, 1024, 0);
	assert_near(x.ac[ia].total, 1048576, 0);
	assert_near(x.ac[ic].total, 1048576, 0);
	assert_near(x.ac[ib].total, 4194304, 0);
	assert_near(x.ac[ib].block, 524288, 0);
	sim_est_detail_free(&x);
	tu_built_free(&b);
}

/*
 * One buffer given to a fusion twice (add(x, x) as two parameters, as
 * `fuse` may emit): one access, read once, tiled. f32[4096,4096] is 64
 * MiB, so the second read held whole (as before) could not fit VMEM.
 */
static void test_operand_twice(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule twice\n"
		 "%f (p0: f32[4096,4096], p1: f32[4096,4096]) -> f32[4096,4096] {\n"
		 "  %p0 = f32[4096,4096] parameter(0)\n"
		 "  %p1 = f32[4096,4096] parameter(1)\n"
		 "  ROOT %a = f32[4096,4096] add(%p0, %p1)\n"
		 "}\n"
		 "ENTRY %e (x: f32[4096,4096]) -> f32[4096,4096] {\n"
		 "  %x = f32[4096,4096] parameter(0)\n"
		 "  ROOT %k = f32[4096,4096] fusion(%x, %x), kind=kLoop, calls=%f\n"
		 "}\n",
		 &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "k"), &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_read, 4096.0 * 4096 * 4, 0);
	assert_near(e.bytes_written, 4096.0 * 4096 * 4, 0);
	tu_built_free(&b);
}

/*
 * A layer taken from stacked weights (a scanned model's parameters,
 * f32[64,1024,1024]: 256 MiB) by a dynamic-slice inside the kernel: the
 * DMA moves the slice's window (4 MiB), not the stack. Before, the whole
 * stack was held or streamed (64 x the bytes) and the kernel was 30-100x
 * its roofline. The scalar index is read whole (its padded tile).
 */
static void test_slice_read(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule layer\n"
		 "%f (w: f32[64,1024,1024], i: s32[]) -> f32[1,1024,1024] {\n"
		 "  %w = f32[64,1024,1024] parameter(0)\n"
		 "  %i = s32[] parameter(1)\n"
		 "  %z = s32[] constant(0)\n"
		 "  %s = f32[1,1024,1024] dynamic-slice(%w, %i, %z, %z), "
		 "dynamic_slice_sizes={1,1024,1024}\n"
		 "  ROOT %n = f32[1,1024,1024] negate(%s)\n"
		 "}\n"
		 "ENTRY %e (w: f32[64,1024,1024], i: s32[]) -> f32[1,1024,1024] {\n"
		 "  %w = f32[64,1024,1024] parameter(0)\n"
		 "  %i = s32[] parameter(1)\n"
		 "  ROOT %k = f32[1,1024,1024] fusion(%w, %i), kind=kLoop, calls=%f\n"
		 "}\n",
		 &b);
	const struct sim_kernel *k = tu_kernel(&b, "k");
	struct sim_estimate e = estimate(k, &hw, "");
	struct sim_estimate r;
	struct ts_diag d = {0};
	assert_int_equal(sim_kernel_roofline(k, &hw, &r, &d), TS_OK);
	assert_true(e.feasible);
	assert_near(e.bytes_written, 4096.0 * 1024, 0);
	/* the window, plus the index's one padded tile (s32[] of 4 B pads
	 * to at most a vreg's 4 KiB) */
	assert_true(e.bytes_read >= 4096.0 * 1024 &&
		    e.bytes_read <= 4096.0 * 1024 + 4096);
	assert_true(e.time_ns < 2 * r.time_ns);
	tu_built_free(&b);
}

/*
 * Embedding lookups and in-place updates move what they touch (XLA's cost
 * rules, docs/HLO.md 3.1): a gather of 16 rows of 1024 f32 from a 256
 * MiB table reads the 64 KiB it gathers (and the indices); a
 * dynamic-update-slice of one 4 MiB layer into a 256 MiB stack, and a
 * scatter of 16 rows into a table, read and write the update only (the
 * result aliases operand 0). Before, the table or stack was held whole:
 * no config fit VMEM.
 */
/* Bytes of the input accesses of kernel `name`'s plan on hw (each padded
 * to its tiles), and how many there are. */
static double read_plan(const struct tu_built *b, const char *name,
			const struct hw_spec *hw, int *n)
{
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(tu_kernel(b, name), hw, &p, &d), TS_OK);
	double bytes = 0;
	*n = 0;
	for (int a = 0; a < p.n_access; a++)
		if (!p.acc[a].output) {
			bytes += p.acc[a].bytes;
			(*n)++;
		}
	sim_plan_free(&p);
	return bytes;
}

/* A fusion that slices one input twice (a stacked array's first and last
 * layers, as a scan's epilogue does) reads the two windows, not the array:
 * f32[64,126,1024] (128 x 1024 x 64 x 4 B = 32 MiB in (8,128) tiles),
 * windows [64,1,1024] of 8 x 1024 x 64 x 4 = 2 MiB each in their tiles.
 * Two one-lane windows of f32[64,8,128] share its one lane tile: each is
 * the whole 256 KiB array in tiles, so the array is read once, whole. */
static void test_slice_windows(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	static const char text[] =
		"HloModule s, is_scheduled=true\n"
		"%fl (p: f32[64,126,1024]) -> (f32[64,1,1024], f32[64,1,1024]) {\n"
		"  %p = f32[64,126,1024]{2,1,0:T(8,128)} parameter(0)\n"
		"  %a = f32[64,1,1024]{2,1,0:T(8,128)} slice(%p), "
		"slice={[0:64], [0:1], [0:1024]}\n"
		"  %b = f32[64,1,1024]{2,1,0:T(8,128)} slice(%p), "
		"slice={[0:64], [125:126], [0:1024]}\n"
		"  ROOT %t = (f32[64,1,1024]{2,1,0:T(8,128)}, f32[64,1,1024]{2,1,0:T(8,128)}) "
		"tuple(%a, %b)\n"
		"}\n"
		"%fn (q: f32[64,8,128]) -> (f32[64,8,1], f32[64,8,1]) {\n"
		"  %q = f32[64,8,128]{2,1,0:T(8,128)} parameter(0)\n"
		"  %c = f32[64,8,1]{2,1,0:T(8,128)} slice(%q), slice={[0:64], [0:8], [0:1]}\n"
		"  %e = f32[64,8,1]{2,1,0:T(8,128)} slice(%q), "
		"slice={[0:64], [0:8], [127:128]}\n"
		"  ROOT %t2 = (f32[64,8,1]{2,1,0:T(8,128)}, f32[64,8,1]{2,1,0:T(8,128)}) "
		"tuple(%c, %e)\n"
		"}\n"
		"ENTRY %e (x: f32[64,126,1024], y: f32[64,8,128]) -> "
		"((f32[64,1,1024], f32[64,1,1024]), (f32[64,8,1], f32[64,8,1])) {\n"
		"  %x = f32[64,126,1024]{2,1,0:T(8,128)} parameter(0)\n"
		"  %y = f32[64,8,128]{2,1,0:T(8,128)} parameter(1)\n"
		"  %layers = (f32[64,1,1024]{2,1,0:T(8,128)}, f32[64,1,1024]{2,1,0:T(8,128)}) "
		"fusion(%x), kind=kLoop, calls=%fl\n"
		"  %lanes = (f32[64,8,1]{2,1,0:T(8,128)}, f32[64,8,1]{2,1,0:T(8,128)}) "
		"fusion(%y), kind=kLoop, calls=%fn\n"
		"  ROOT %r = ((f32[64,1,1024]{2,1,0:T(8,128)}, f32[64,1,1024]{2,1,0:T(8,128)}), "
		"(f32[64,8,1]{2,1,0:T(8,128)}, f32[64,8,1]{2,1,0:T(8,128)})) tuple(%layers, %lanes)\n"
		"}\n";
	struct tu_built b;
	tu_build(text, &b);
	int n;
	assert_near(read_plan(&b, "layers", &hw, &n), 2 * 8 * 1024 * 64 * 4.0, 0);
	assert_int_equal(n, 2);
	assert_near(read_plan(&b, "lanes", &hw, &n), 64 * 8 * 128 * 4.0, 0);
	assert_int_equal(n, 1);
	tu_built_free(&b);
}

/*
 * A windowed einsum's step as XLA's TPU compiler writes it (MaxText's
 * 128B step on v5e, fusion.864): a nested kLoop fusion pads the operand
 * x bf16[1,1024,4096] to two rows (one each way round the ring) and takes
 * a 512-column window of each pad, one per direction (or, same = true,
 * two windows of one pad); the dot reads the two windows. Each window is
 * bf16[2,1024,512] (2 MiB in its tiles, half of it padding, counted as
 * read); x is 8 MiB. The plan and the roofline read 4 MiB of x, the plan
 * as two accesses. Before, a pad hid the windows: x was read whole, and
 * the step was costed at twice XLA's estimate, bound by HBM instead of
 * the MXU.
 */
static void build_padded_windows(bool same, struct tu_built *b)
{
	static char text[4096];
	snprintf(text, sizeof text,
		 "HloModule wein, is_scheduled=true\n"
		 "%%win (x: bf16[1,1024,4096], i: s32[], j: s32[]) -> "
		 "bf16[2,1024,512] {\n"
		 "  %%x = bf16[1,1024,4096]{2,1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %%i = s32[] parameter(1)\n"
		 "  %%j = s32[] parameter(2)\n"
		 "  %%z = s32[] constant(0)\n"
		 "  %%m = bf16[] constant(-inf)\n"
		 "  %%hi = bf16[2,1024,4096]{2,1,0:T(8,128)(2,1)} pad(%%x, %%m), "
		 "padding=0_1x0_0x0_0\n"
		 "  %%a = bf16[2,1024,512]{2,1,0:T(8,128)(2,1)} dynamic-slice(%%hi, "
		 "%%z, %%z, %%i), dynamic_slice_sizes={2,1024,512}\n"
		 "%s"
		 "  %%c = bf16[2,1024,512]{2,1,0:T(8,128)(2,1)} dynamic-slice(%s, "
		 "%%z, %%z, %%j), dynamic_slice_sizes={2,1024,512}\n"
		 "  ROOT %%mx = bf16[2,1024,512]{2,1,0:T(8,128)(2,1)} maximum(%%a, "
		 "%%c)\n"
		 "}\n"
		 "%%mm (x: bf16[1,1024,4096], w: bf16[512,256], i: s32[], "
		 "j: s32[]) -> bf16[2,1024,256] {\n"
		 "  %%x = bf16[1,1024,4096]{2,1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[512,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  %%j = s32[] parameter(3)\n"
		 "  %%l = bf16[2,1024,512]{2,1,0:T(8,128)(2,1)} fusion(%%x, %%i, "
		 "%%j), kind=kLoop, calls=%%win\n"
		 "  ROOT %%d = bf16[2,1024,256]{2,1,0:T(8,128)(2,1)} dot(%%l, %%w), "
		 "lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
		 "}\n"
		 "ENTRY %%e (x: bf16[1,1024,4096], w: bf16[512,256], i: s32[], "
		 "j: s32[]) -> bf16[2,1024,256] {\n"
		 "  %%x = bf16[1,1024,4096]{2,1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[512,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  %%j = s32[] parameter(3)\n"
		 "  ROOT %%k = bf16[2,1024,256]{2,1,0:T(8,128)(2,1)} fusion(%%x, "
		 "%%w, %%i, %%j), kind=kOutput, calls=%%mm\n"
		 "}\n",
		 same ? ""
		      : "  %lo = bf16[2,1024,4096]{2,1,0:T(8,128)(2,1)} "
			"pad(%x, %m), padding=1_0x0_0x0_0\n",
		 same ? "%hi" : "%lo");
	tu_build(text, b);
}

/* Kernel k of b reads its input 0 as n windows of `window` bytes each in
 * its plan, and its roofline reads those and `rest` (other inputs), up to
 * `slack` more (index tiles). */
static void check_windows(const struct tu_built *b, const struct hw_spec *hw,
			  double window, int n, double rest, double slack)
{
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(tu_kernel(b, "k"), hw, &p, &d), TS_OK);
	int nx = 0;
	for (int a = 0; a < p.n_access; a++)
		if (!p.acc[a].output && p.acc[a].input == 0) {
			assert_near(p.acc[a].bytes, window, 0);
			nx++;
		}
	assert_int_equal(nx, n);
	sim_plan_free(&p);
	struct sim_estimate r;
	assert_int_equal(sim_kernel_roofline(tu_kernel(b, "k"), hw, &r, &d),
			 TS_OK);
	assert_true(r.bytes_read >= n * window + rest &&
		    r.bytes_read <= n * window + rest + slack);
}

static void test_padded_windows(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	const double window = 2 * 1024 * 512 * 2.0, w = 512 * 256 * 2.0;
	for (int same = 0; same < 2; same++) {
		struct tu_built b;
		build_padded_windows(same, &b);
		/* the two windows, w, and the two indices' padded tiles */
		check_windows(&b, &hw, window, 2, w, 2 * 4096);
		tu_built_free(&b);
	}
}

/*
 * A layer taken from a stack laid out again, as XLA's TPU compiler writes
 * v7/decoder_s_noremat's backward convolutions (fusion.394): a nested
 * kLoop fusion copies the stack s bf16[2,1024,1024] from tiles (16,128)
 * to (8,128) in a fusion of its own and takes one layer of it with a
 * dynamic-slice; the dot reads that layer. The copy's elements are made
 * as the slice takes them: the plan reads one layer of s, 2 MiB, not
 * the 4 MiB stack, and the roofline the layer and w (and the index's
 * padded tile). Before, the stack was read whole. The same with the copy
 * written in the layer's fusion itself (nested false).
 */
static void build_relaid(bool nested, struct tu_built *b)
{
	static char text[4096];
	snprintf(text, sizeof text,
		 "HloModule relaid, is_scheduled=true\n"
		 "%%cp (s: bf16[2,1024,1024]) -> bf16[2,1024,1024] {\n"
		 "  %%s = bf16[2,1024,1024]{2,1,0:T(16,128)(2,1)} parameter(0)\n"
		 "  ROOT %%c = bf16[2,1024,1024]{2,1,0:T(8,128)(2,1)} copy(%%s)\n"
		 "}\n"
		 "%%layer (s: bf16[2,1024,1024], i: s32[]) -> bf16[1024,1024] {\n"
		 "  %%s = bf16[2,1024,1024]{2,1,0:T(16,128)(2,1)} parameter(0)\n"
		 "  %%i = s32[] parameter(1)\n"
		 "  %%z = s32[] constant(0)\n"
		 "  %%r = bf16[2,1024,1024]{2,1,0:T(8,128)(2,1)} %s\n"
		 "  %%d = bf16[1,1024,1024]{2,1,0:T(8,128)(2,1)} dynamic-slice(%%r, "
		 "%%i, %%z, %%z), dynamic_slice_sizes={1,1024,1024}\n"
		 "  ROOT %%b = bf16[1024,1024]{1,0:T(8,128)(2,1)} bitcast(%%d)\n"
		 "}\n"
		 "%%mm (s: bf16[2,1024,1024], w: bf16[1024,256], i: s32[]) -> "
		 "bf16[1024,256] {\n"
		 "  %%s = bf16[2,1024,1024]{2,1,0:T(16,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[1024,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  %%l = bf16[1024,1024]{1,0:T(8,128)(2,1)} fusion(%%s, %%i), "
		 "kind=kLoop, calls=%%layer\n"
		 "  ROOT %%d = bf16[1024,256]{1,0:T(8,128)(2,1)} dot(%%l, %%w), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "}\n"
		 "ENTRY %%e (s: bf16[2,1024,1024], w: bf16[1024,256], i: s32[]) -> "
		 "bf16[1024,256] {\n"
		 "  %%s = bf16[2,1024,1024]{2,1,0:T(16,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[1024,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  ROOT %%k = bf16[1024,256]{1,0:T(8,128)(2,1)} fusion(%%s, %%w, "
		 "%%i), kind=kOutput, calls=%%mm\n"
		 "}\n",
		 nested ? "fusion(%s), kind=kLoop, calls=%cp" : "copy(%s)");
	tu_build(text, b);
}

static void test_relaid_window(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v7", &hw))
		skip();
	const double layer = 1024 * 1024 * 2.0, w = 1024 * 256 * 2.0;
	for (int nested = 0; nested < 2; nested++) {
		struct tu_built b;
		build_relaid(nested, &b);
		check_windows(&b, &hw, layer, 1, w, 4096);
		tu_built_free(&b);
	}
}

static void test_gather_and_in_place(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule g\n"
		 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		 " ROOT s = f32[] add(a, b) }\n"
		 "ENTRY %e (t: f32[65536,1024], i: s32[16,1], w: f32[64,1024,1024], "
		 "u: f32[1,1024,1024], l: s32[], r: f32[16,1024]) -> "
		 "(f32[16,1024], f32[64,1024,1024], f32[65536,1024]) {\n"
		 "  %t = f32[65536,1024] parameter(0)\n"
		 "  %i = s32[16,1] parameter(1)\n"
		 "  %w = f32[64,1024,1024] parameter(2)\n"
		 "  %u = f32[1,1024,1024] parameter(3)\n"
		 "  %l = s32[] parameter(4)\n"
		 "  %r = f32[16,1024] parameter(5)\n"
		 "  %z = s32[] constant(0)\n"
		 "  %g = f32[16,1024] gather(%t, %i), offset_dims={1}, "
		 "collapsed_slice_dims={0}, start_index_map={0}, "
		 "index_vector_dim=1, slice_sizes={1,1024}\n"
		 "  %d = f32[64,1024,1024] dynamic-update-slice(%w, %u, %l, %z, %z)\n"
		 "  %s = f32[65536,1024] scatter(%t, %i, %r), "
		 "update_window_dims={1}, inserted_window_dims={0}, "
		 "scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
		 "to_apply=add\n"
		 "  ROOT %o = (f32[16,1024], f32[64,1024,1024], f32[65536,1024]) "
		 "tuple(%g, %d, %s)\n"
		 "}\n",
		 &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "g"), &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 65536.0, 0);
	/* the rows, plus the indices padded to their tiles (at most 4 KiB) */
	assert_true(e.bytes_read >= 65536.0 && e.bytes_read <= 65536.0 + 4096);
	e = estimate(tu_kernel(&b, "d"), &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 4096.0 * 1024, 0);
	assert_true(e.bytes_read >= 4096.0 * 1024 &&
		    e.bytes_read <= 4096.0 * 1024 + 3 * 4096);
	/* a scatter-add reads its updates and the rows it adds them to
	 * (16 x 1024 f32 each), and its indices */
	e = estimate(tu_kernel(&b, "s"), &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 65536.0, 0);
	assert_true(e.bytes_read >= 2 * 65536.0 &&
		    e.bytes_read <= 2 * 65536.0 + 4096);
	tu_built_free(&b);
	/* a multi-output fusion of two such updates (a scan saving two
	 * activations of one layer into their stacks, XLA's
	 * bitcast_dynamic-update-slice_fusion): each stack written in its
	 * 4 MiB window and never read; the 4 MiB layer read once */
	tu_build("HloModule f, is_scheduled=true\n"
		 "%fc (w: f32[64,1024,1024], v: f32[64,1024,1024], "
		 "u: f32[1,1024,1024], l: s32[]) -> (f32[64,1024,1024], "
		 "f32[64,1024,1024]) {\n"
		 "  %w = f32[64,1024,1024]{2,1,0} parameter(0)\n"
		 "  %v = f32[64,1024,1024]{2,1,0} parameter(1)\n"
		 "  %u = f32[1,1024,1024]{2,1,0} parameter(2)\n"
		 "  %l = s32[] parameter(3)\n"
		 "  %z = s32[] constant(0)\n"
		 "  %n = f32[1,1024,1024]{2,1,0} negate(%u)\n"
		 "  %d1 = f32[64,1024,1024]{2,1,0} dynamic-update-slice(%w, %u, "
		 "%l, %z, %z)\n"
		 "  %d2 = f32[64,1024,1024]{2,1,0} dynamic-update-slice(%v, %n, "
		 "%l, %z, %z)\n"
		 "  ROOT %t = (f32[64,1024,1024]{2,1,0}, f32[64,1024,1024]{2,1,0}) "
		 "tuple(%d1, %d2)\n"
		 "}\n"
		 "ENTRY %e (w: f32[64,1024,1024], v: f32[64,1024,1024], "
		 "u: f32[1,1024,1024], l: s32[]) -> (f32[64,1024,1024], "
		 "f32[64,1024,1024]) {\n"
		 "  %w = f32[64,1024,1024]{2,1,0} parameter(0)\n"
		 "  %v = f32[64,1024,1024]{2,1,0} parameter(1)\n"
		 "  %u = f32[1,1024,1024]{2,1,0} parameter(2)\n"
		 "  %l = s32[] parameter(3)\n"
		 "  ROOT %f = (f32[64,1024,1024]{2,1,0}, f32[64,1024,1024]{2,1,0}) "
		 "fusion(%w, %v, %u, %l), kind=kLoop, calls=%fc\n"
		 "}\n",
		 &b);
	e = estimate(tu_kernel(&b, "f"), &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 2 * 4096.0 * 1024, 0);
	assert_true(e.bytes_read >= 4096.0 * 1024 &&
		    e.bytes_read <= 4096.0 * 1024 + 4096);
	tu_built_free(&b);
}

/*
 * XLA's TPU compiler fuses an all-reduce with the dynamic slice each device
 * keeps ("all-reduce-scatter"): that fusion is the reduce-scatter it
 * computes, costed as the same reduce-scatter written as one op (f32
 * [4096,64] over 4 devices, each keeping [1024,64]), also when the input
 * is padded to a multiple of the devices first (f32[4000,64] to
 * [4096,64], as XLA pads a shape the devices do not divide); a fusion
 * computing beside its collective stays a fusion.
 */
static void test_fused_collective(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	struct tu_built f, r;
	tu_build("HloModule f, is_scheduled=true\n"
		 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		 " ROOT s = f32[] add(a, b) }\n"
		 "%ars (x: f32[4096,64]) -> f32[1024,64] {\n"
		 "  %x = f32[4096,64]{1,0} parameter(0)\n"
		 "  %ar = f32[4096,64]{1,0} all-reduce(%x), "
		 "replica_groups={{0,1,2,3}}, to_apply=add\n"
		 "  %pid = u32[] partition-id()\n"
		 "  %c = u32[] constant(1024)\n"
		 "  %o = u32[] multiply(%pid, %c)\n"
		 "  %z = u32[] constant(0)\n"
		 "  ROOT %ds = f32[1024,64]{1,0} dynamic-slice(%ar, %o, %z), "
		 "dynamic_slice_sizes={1024,64}\n}\n"
		 "%padded (x: f32[4000,64]) -> f32[1024,64] {\n"
		 "  %x = f32[4000,64]{1,0} parameter(0)\n"
		 "  %zero = f32[] constant(0)\n"
		 "  %p = f32[4096,64]{1,0} pad(%x, %zero), padding=0_96x0_0\n"
		 "  %ar = f32[4096,64]{1,0} all-reduce(%p), "
		 "replica_groups={{0,1,2,3}}, to_apply=add\n"
		 "  %pid = u32[] partition-id()\n"
		 "  %c = u32[] constant(1024)\n"
		 "  %o = u32[] multiply(%pid, %c)\n"
		 "  %z = u32[] constant(0)\n"
		 "  ROOT %ds = f32[1024,64]{1,0} dynamic-slice(%ar, %o, %z), "
		 "dynamic_slice_sizes={1024,64}\n}\n"
		 "%mix (x: f32[4096,64]) -> f32[4096,64] {\n"
		 "  %x = f32[4096,64]{1,0} parameter(0)\n"
		 "  %ar = f32[4096,64]{1,0} all-reduce(%x), "
		 "replica_groups={{0,1,2,3}}, to_apply=add\n"
		 "  ROOT %e = f32[4096,64]{1,0} exponential(%ar)\n}\n"
		 "ENTRY %e (x: f32[4096,64], y: f32[4000,64]) -> "
		 "(f32[1024,64], f32[4096,64], f32[1024,64]) {\n"
		 "  %x = f32[4096,64]{1,0} parameter(0)\n"
		 "  %y = f32[4000,64]{1,0} parameter(1)\n"
		 "  %f = f32[1024,64]{1,0} fusion(%x), kind=kCustom, calls=%ars\n"
		 "  %m = f32[4096,64]{1,0} fusion(%x), kind=kLoop, calls=%mix\n"
		 "  %fp = f32[1024,64]{1,0} fusion(%y), kind=kCustom, "
		 "calls=%padded\n"
		 "  ROOT %t = (f32[1024,64], f32[4096,64], f32[1024,64]) "
		 "tuple(%f, %m, %fp)\n}\n",
		 &f);
	tu_build("HloModule r, is_scheduled=true\n"
		 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		 " ROOT s = f32[] add(a, b) }\n"
		 "ENTRY %e (x: f32[4096,64]) -> f32[1024,64] {\n"
		 "  %x = f32[4096,64]{1,0} parameter(0)\n"
		 "  ROOT %rs = f32[1024,64]{1,0} reduce-scatter(%x), "
		 "replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=add\n}\n",
		 &r);
	const struct sim_kernel *kf = tu_kernel(&f, "f"), *kr = tu_kernel(&r, "rs");
	assert_int_equal(kf->kind, SIM_KERNEL_COLLECTIVE);
	assert_int_equal(kf->group_devices, 4);
	assert_int_equal(tu_kernel(&f, "m")->kind, SIM_KERNEL_FUSION);
	struct sim_estimate ef = estimate(kf, &hw, ""), er = estimate(kr, &hw, "");
	assert_int_equal(ef.bound, HW_UNIT_ICI);
	assert_near(ef.time_ns, er.time_ns, 1e-9 * er.time_ns);
	const struct sim_kernel *kp = tu_kernel(&f, "fp");
	assert_int_equal(kp->kind, SIM_KERNEL_COLLECTIVE);
	struct sim_estimate ep = estimate(kp, &hw, "");
	assert_int_equal(ep.bound, HW_UNIT_ICI);
	/* rs and f start their programs, fp does not (its start: v4's
	 * overhead.program_ns) */
	assert_true(kf->starts_program && kr->starts_program);
	assert_false(kp->starts_program);
	assert_near(ep.time_ns + hw.program_overhead_ns, er.time_ns,
		    1e-9 * er.time_ns);
	tu_built_free(&f);
	tu_built_free(&r);
}

/*
 * An argmax (a variadic reduce whose reducer compares and selects) runs
 * its reducer's ops on every element: against a sum of an input of the
 * same shape, whose reducer is one add, its VPU fold costs the reducer's
 * simple ops (three compares, and, or, two selects: 7) times as many
 * cycles per input vreg. f32[256,1024] reduced along the rows. (Of the
 * same input, the two reduces would be one kernel: merge_shared.)
 */
static void test_argmax_reducer_ops(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule a\n"
		 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
		 " ROOT s = f32[] add(a, b) }\n"
		 "amax { a0 = f32[] parameter(0)\n a1 = s32[] parameter(1)\n"
		 " b0 = f32[] parameter(2)\n b1 = s32[] parameter(3)\n"
		 " gt = pred[] compare(a0, b0), direction=GT\n"
		 " eq = pred[] compare(a0, b0), direction=EQ\n"
		 " lt = pred[] compare(a1, b1), direction=LT\n"
		 " tie = pred[] and(eq, lt)\n"
		 " keep = pred[] or(gt, tie)\n"
		 " v = f32[] select(keep, a0, b0)\n"
		 " i = s32[] select(keep, a1, b1)\n"
		 " ROOT t = (f32[], s32[]) tuple(v, i) }\n"
		 "ENTRY %e (x: f32[256,1024], j: s32[256,1024], y: f32[256,1024]) -> "
		 "(f32[256], (f32[256], s32[256])) {\n"
		 "  %x = f32[256,1024] parameter(0)\n"
		 "  %j = s32[256,1024] parameter(1)\n"
		 "  %y = f32[256,1024] parameter(2)\n"
		 "  %z = f32[] constant(0)\n"
		 "  %zi = s32[] constant(0)\n"
		 "  %s = f32[256] reduce(%y, %z), dimensions={1}, to_apply=add\n"
		 "  %m = (f32[256], s32[256]) reduce(%x, %j, %z, %zi), "
		 "dimensions={1}, to_apply=amax\n"
		 "  ROOT %t = (f32[256], (f32[256], s32[256])) tuple(%s, %m)\n}\n",
		 &b);
	struct sim_plan ps, pm;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(tu_kernel(&b, "s"), &hw, &ps, &d), TS_OK);
	assert_int_equal(sim_plan_build(tu_kernel(&b, "m"), &hw, &pm, &d), TS_OK);
	assert_near(pm.vpu_cycles, 7.0 * ps.vpu_cycles, 1e-9 * pm.vpu_cycles);
	sim_plan_free(&ps);
	sim_plan_free(&pm);
	tu_built_free(&b);
}

/*
 * A depthwise 3x3 convolution over 256 channels (feature_group_count =
 * 256), one step: per group it would stream 256 weight tiles (one per
 * channel, its 9 taps folded into a 9-deep contraction); XLA expands a
 * grouped filter into a dense block-diagonal one
 * (convolution_group_converter), here 9 taps x 2 K tiles x 2 N tiles =
 * 36 tiles of 128 x 128 over 56 x 56 = 3,136 rows, 18 per MXU on v3's two:
 *   fill (2R + C - 2 = 382) + 18 x 3,136 + 18 x pass bubble.
 */
static void test_depthwise_expanded(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule dw\n"
		 "ENTRY %e (x: bf16[1,256,56,56], w: bf16[256,1,3,3]) -> "
		 "bf16[1,256,56,56] {\n"
		 "  %x = bf16[1,256,56,56]{3,2,1,0} parameter(0)\n"
		 "  %w = bf16[256,1,3,3]{3,2,1,0} parameter(1)\n"
		 "  ROOT %c = bf16[1,256,56,56]{3,2,1,0} convolution(%x, %w), "
		 "window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, "
		 "feature_group_count=256\n"
		 "}\n",
		 &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "c"), &hw,
					 "output_bounds=1x56x7x2;"
					 "kernel_bounds=1x3x1x2");
	assert_int_equal(e.steps, 1);
	assert_int_equal(hw.mxu_count, 2);
	assert_near(e.mxu_cycles, 382.0 + 18 * 3136.0 + 18 * hw.mxu_pass_cycles,
		    EXACT);
	tu_built_free(&b);
}

/*
 * A first layer: 3 input channels, a 7x7 window, 64 outputs over 32x32.
 * Per tap the contraction is 3 deep; XLA gathers the window into the
 * contraction instead, floor(128 / 3) = 42 taps to a weight tile: 2 tiles
 * (not 49), one per v3 MXU, each streaming the 1,024 output rows:
 *   fill (382) + 1,024 + one pass bubble.
 */
static void test_shallow_conv_folds_taps(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule stem\n"
		 "ENTRY %e (x: bf16[1,3,32,32], w: bf16[64,3,7,7]) -> "
		 "bf16[1,64,32,32] {\n"
		 "  %x = bf16[1,3,32,32]{3,2,1,0} parameter(0)\n"
		 "  %w = bf16[64,3,7,7]{3,2,1,0} parameter(1)\n"
		 "  ROOT %c = bf16[1,64,32,32]{3,2,1,0} convolution(%x, %w), "
		 "window={size=7x7 pad=3_3x3_3}, dim_labels=bf01_oi01->bf01\n"
		 "}\n",
		 &b);
	struct sim_estimate e = estimate(tu_kernel(&b, "c"), &hw, "");
	assert_int_equal(e.steps, 1);
	assert_near(e.mxu_cycles, 382.0 + 1024.0 + hw.mxu_pass_cycles, EXACT);
	tu_built_free(&b);
}

/*
 * A reduce-window whose window covers the whole row from every output
 * (XLA's row max of attention) costs the VPU a reduce of the row
 * (plan_vpu.c whole_window_cycles, hw_vpu.c reduce rule), on v3 (alus 1,
 * simple 1, xlu_lane_reduce_cost 8 slots):
 *   along lanes, f32[8,1024] window 1x2047: 8 vregs fold into one
 *     accumulator (8 simple ops) reduced across lanes (8 slots): 16 cycles;
 *   along sublanes, f32[1024,128] window 2047x1: 128 vregs fold into one
 *     (128) and log2(8) = 3 sublane steps of a max and a shuffle (6): 134.
 * Sliding the window instead (2046 steps over every input vreg, each a max
 * and a cross-lane permute) took 8 x 2046 x (1 + 8) = 147,312 cycles for
 * the first. Tolerance EXACT: sums of small integers.
 */
static void test_reduce_window_whole_row_vpu(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	assert_near(hw.vpu_alus, 1, 0);
	assert_near(hw.vpu_class_cost[HW_VPU_SIMPLE], 1, 0);
	assert_near(hw.xlu_lane_reduce_cost, 8, 0);
	struct tu_built b;
	tu_build("HloModule rw\n"
		 "%max (a: f32[], b: f32[]) -> f32[] {\n"
		 "  %a = f32[] parameter(0)\n"
		 "  %b = f32[] parameter(1)\n"
		 "  ROOT %m = f32[] maximum(%a, %b)\n"
		 "}\n"
		 "ENTRY %e (x: f32[8,1024], y: f32[1024,128]) -> "
		 "(f32[8,1024], f32[1024,128]) {\n"
		 "  %x = f32[8,1024]{1,0:T(8,128)} parameter(0)\n"
		 "  %y = f32[1024,128]{1,0:T(8,128)} parameter(1)\n"
		 "  %z = f32[] constant(-inf)\n"
		 "  %lane = f32[8,1024]{1,0:T(8,128)} reduce-window(%x, %z), "
		 "window={size=1x2047 pad=0_0x1023_1023}, to_apply=%max\n"
		 "  %sub = f32[1024,128]{1,0:T(8,128)} reduce-window(%y, %z), "
		 "window={size=2047x1 pad=1023_1023x0_0}, to_apply=%max\n"
		 "  ROOT %t = (f32[8,1024], f32[1024,128]) tuple(%lane, %sub)\n"
		 "}\n",
		 &b);
	static const struct {
		const char *kernel;
		double cycles;
	} cases[] = {{"lane", 8 + 8}, {"sub", 128 + 3 + 3}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct sim_plan p;
		struct ts_diag d = {0};
		assert_int_equal(sim_plan_build(tu_kernel(&b, cases[i].kernel),
						&hw, &p, &d),
				 TS_OK);
		assert_near(p.vpu_cycles, cases[i].cycles, EXACT);
		sim_plan_free(&p);
	}
	tu_built_free(&b);
}

/*
 * A contraction inside a nested fusion runs on the MXU though the grid
 * tiles another op (the reduce at the root, as in XLA's attention fusion:
 * QK^T in a nested fusion, the row max and exp around it). On v3 (2
 * arrays of 128 x 128, 1 MAC per cell per cycle: 32,768 MACs per cycle;
 * fill 128 + 128 + 128 - 2 = 382 cycles, hw_mxu.c):
 *   k128: 1024 x 1024 x 128 = 134,217,728 MACs, K = 128 and N = 1024
 *     whole tiles: 382 + 134,217,728 / 32,768 = 382 + 4,096 = 4,478;
 *   k64: 1024 x 1024 x 64 = 67,108,864 MACs, K = 64 padded to 128 (x2):
 *     382 + 2 x 67,108,864 / 32,768 = 4,478.
 * Its FLOPs count 2 per MAC. Without the MXU work (before) the kernels had
 * 0 MXU cycles and 0 FLOPs of the dot. Tolerance EXACT: small integers.
 */
static void test_nested_contraction_mxu(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule nest, is_scheduled=true\n"
		 "%add (a: f32[], b: f32[]) -> f32[] {\n"
		 "  %a = f32[] parameter(0)\n"
		 "  %b = f32[] parameter(1)\n"
		 "  ROOT %s = f32[] add(%a, %b)\n"
		 "}\n"
		 "%qk (a: bf16[1024,128], b: bf16[128,1024]) -> f32[1024,1024] {\n"
		 "  %a = bf16[1024,128] parameter(0)\n"
		 "  %b = bf16[128,1024] parameter(1)\n"
		 "  ROOT %d = f32[1024,1024] dot(%a, %b), lhs_contracting_dims={1}, "
		 "rhs_contracting_dims={0}\n"
		 "}\n"
		 "%qk64 (a: bf16[1024,64], b: bf16[64,1024]) -> f32[1024,1024] {\n"
		 "  %a = bf16[1024,64] parameter(0)\n"
		 "  %b = bf16[64,1024] parameter(1)\n"
		 "  ROOT %d = f32[1024,1024] dot(%a, %b), lhs_contracting_dims={1}, "
		 "rhs_contracting_dims={0}\n"
		 "}\n"
		 "%soft (p0: bf16[1024,128], p1: bf16[128,1024]) -> f32[1024] {\n"
		 "  %p0 = bf16[1024,128] parameter(0)\n"
		 "  %p1 = bf16[128,1024] parameter(1)\n"
		 "  %f = f32[1024,1024] fusion(%p0, %p1), kind=kOutput, calls=%qk\n"
		 "  %e = f32[1024,1024] exponential(%f)\n"
		 "  %z = f32[] constant(0)\n"
		 "  ROOT %r = f32[1024] reduce(%e, %z), dimensions={1}, to_apply=%add\n"
		 "}\n"
		 "%soft64 (p0: bf16[1024,64], p1: bf16[64,1024]) -> f32[1024] {\n"
		 "  %p0 = bf16[1024,64] parameter(0)\n"
		 "  %p1 = bf16[64,1024] parameter(1)\n"
		 "  %f = f32[1024,1024] fusion(%p0, %p1), kind=kOutput, calls=%qk64\n"
		 "  %z = f32[] constant(0)\n"
		 "  ROOT %r = f32[1024] reduce(%f, %z), dimensions={1}, to_apply=%add\n"
		 "}\n"
		 "ENTRY %e (x: bf16[1024,128], y: bf16[128,1024], u: bf16[1024,64], "
		 "v: bf16[64,1024]) -> (f32[1024], f32[1024]) {\n"
		 "  %x = bf16[1024,128] parameter(0)\n"
		 "  %y = bf16[128,1024] parameter(1)\n"
		 "  %u = bf16[1024,64] parameter(2)\n"
		 "  %v = bf16[64,1024] parameter(3)\n"
		 "  %k128 = f32[1024] fusion(%x, %y), kind=kOutput, calls=%soft\n"
		 "  %k64 = f32[1024] fusion(%u, %v), kind=kOutput, calls=%soft64\n"
		 "  ROOT %t = (f32[1024], f32[1024]) tuple(%k128, %k64)\n"
		 "}\n",
		 &b);
	static const struct {
		const char *kernel;
		double macs;
	} cases[] = {{"k128", 1024.0 * 1024 * 128}, {"k64", 1024.0 * 1024 * 64}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct sim_plan p;
		struct ts_diag d = {0};
		struct sim_tile_config full;
		struct sim_estimate e;
		struct sim_est_detail x = {0};
		assert_int_equal(sim_plan_build(tu_kernel(&b, cases[i].kernel),
						&hw, &p, &d),
				 TS_OK);
		assert_false(p.has_kernel);
		assert_int_equal(p.n_mxu_untiled, 1);
		assert_near(p.mxu_untiled_macs, cases[i].macs, 0);
		assert_int_equal(sim_plan_check(&p, NULL, &full, &d), TS_OK);
		assert_int_equal(sim_plan_estimate_detail(&p, &hw, &full, &e, &x,
							  &d),
				 TS_OK);
		assert_near(x.mxu_untiled_cycles, 382.0 + 4096.0, EXACT);
		assert_near(e.mxu_cycles, 382.0 + 4096.0, EXACT);
		assert_true(e.flops >= 2 * cases[i].macs);
		sim_est_detail_free(&x);
		sim_plan_free(&p);
	}
	tu_built_free(&b);
}

/* The scanned layer of test_nested_layer_slice: the nested fusion %layer
 * takes the stacked weights as its operand 0, or (swap) as its operand 1
 * after the layer index (MaxText's saved activations on v4). */
static void build_layer_slice(bool swap, struct tu_built *b)
{
	static char text[2048];
	snprintf(text, sizeof text,
		 "HloModule scan, is_scheduled=true\n"
		 "%%layer (%s) -> bf16[512,256,1] {\n"
		 "  %%w = bf16[4,512,256]{2,1,0:T(8,128)(2,1)} parameter(%d)\n"
		 "  %%i = s32[] parameter(%d)\n"
		 "  %%z = s32[] constant(0)\n"
		 "  %%ds = bf16[1,512,256]{2,1,0:T(8,128)(2,1)} dynamic-slice(%%w, "
		 "%%i, %%z, %%z), dynamic_slice_sizes={1,512,256}\n"
		 "  ROOT %%b = bf16[512,256,1]{1,0,2:T(8,128)(2,1)} bitcast(%%ds)\n"
		 "}\n"
		 "%%mm (x: bf16[1024,512], w: bf16[4,512,256], i: s32[]) -> "
		 "bf16[1024,256,1] {\n"
		 "  %%x = bf16[1024,512]{1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[4,512,256]{2,1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  %%l = bf16[512,256,1]{1,0,2:T(8,128)(2,1)} fusion(%s), "
		 "kind=kLoop, calls=%%layer\n"
		 "  ROOT %%d = bf16[1024,256,1]{1,0,2:T(8,128)(2,1)} dot(%%x, %%l), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "}\n"
		 "ENTRY %%e (x: bf16[1024,512], w: bf16[4,512,256], i: s32[]) -> "
		 "bf16[1024,256,1] {\n"
		 "  %%x = bf16[1024,512]{1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %%w = bf16[4,512,256]{2,1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  %%i = s32[] parameter(2)\n"
		 "  ROOT %%k = bf16[1024,256,1]{1,0,2:T(8,128)(2,1)} fusion(%%x, %%w, "
		 "%%i), kind=kOutput, calls=%%mm\n"
		 "}\n",
		 swap ? "i: s32[], w: bf16[4,512,256]"
		      : "w: bf16[4,512,256], i: s32[]",
		 swap ? 1 : 0, swap ? 0 : 1, swap ? "%i, %w" : "%w, %i");
	tu_build(text, b);
}

/*
 * A scanned model's layer weights, as XLA's TPU compiler writes them: a
 * nested kLoop fusion takes layer i of the stacked weights bf16[4,512,256]
 * (a dynamic-slice) and squeezes the layer dim to the end (a bitcast to
 * bf16[512,256,1]) for the dot. The kernel reads one layer, 512 x 256 x 2
 * = 262,144 bytes, blocked along K (512) and N (256) as the dot's grid
 * follows them, whichever operand of the nested fusion the stack is.
 * Before, the nested slice was not seen (all four layers, 1 MiB, in every
 * block) and the bitcast's map, pairing dims from the front and back only,
 * lost K and N (the whole layer in every block: the compiled v2-v4
 * decoders' weights did not fit VMEM); then, the stack as the nested
 * fusion's operand 1 was read whole (MaxText's 22B step on v4: the
 * 48-layer stack of saved activations, 9.7 GB, copied for each layer).
 */
static void test_nested_layer_slice(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	for (int swap = 0; swap < 2; swap++) {
		struct tu_built b;
		build_layer_slice(swap, &b);
		struct sim_plan p;
		struct ts_diag d = {0};
		assert_int_equal(sim_plan_build(tu_kernel(&b, "k"), &hw, &p, &d),
				 TS_OK);
		assert_true(p.has_kernel);
		const struct sim_plan_access *w = NULL;
		for (int a = 0; a < p.n_access; a++)
			if (p.acc[a].input == 1)
				w = &p.acc[a];
		assert_non_null(w);
		assert_near(w->bytes, 512.0 * 256 * 2, 0);
		/* physical [1, 512, 256]: K and N follow the grid */
		assert_int_equal(w->rank, 3);
		assert_true(w->dims[1].grid >= 0);
		assert_true(w->dims[2].grid >= 0);
		sim_plan_free(&p);
		tu_built_free(&b);
	}
}

/*
 * Attention's batched QK^T as XLA's TPU compiler writes it: the 4 x 4
 * batch (heads) as two spatial dims of a convolution, each 4 input
 * positions under a 4-tap window with base dilation 4 and stride 3. Output
 * o meets tap o only (o x 3 + k is a multiple of 4 only for k = o): a
 * batch, one weight tile per position, not a 4-tap window over a quarter
 * dense input. The plan shares each such kernel dim with its output dim
 * (role batch), the lhs reads one position per output position (no window
 * halo), and no tap density or window applies: tap_density 1, not
 * windowed. Before, each was a window: 2 tap dims, tap_density 1/16, the
 * lhs widened by a halo (the v2/v3 decoders' attention backward ran 16.7
 * million steps).
 */
static void test_conv_batch_dims(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule qk, is_scheduled=true\n"
		 "ENTRY %e (q: bf16[4,256,4,128], k: bf16[4,512,4,128]) -> "
		 "bf16[4,4,256,512] {\n"
		 "  %q = bf16[4,256,4,128]{3,1,2,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %k = bf16[4,512,4,128]{3,1,2,0:T(8,128)(2,1)} parameter(1)\n"
		 "  ROOT %c = bf16[4,4,256,512]{3,2,1,0:T(8,128)(2,1)} "
		 "convolution(%q, %k), window={size=4x4 stride=3x3 "
		 "lhs_dilate=4x4}, dim_labels=0b1f_0o1i->01bf\n"
		 "}\n",
		 &b);
	struct sim_plan p;
	struct ts_diag d = {0};
	assert_int_equal(sim_plan_build(tu_kernel(&b, "c"), &hw, &p, &d), TS_OK);
	assert_true(p.has_kernel);
	assert_false(p.mxu_windowed);
	assert_near(p.tap_density, 1.0, 0);
	/* MACs: 128 x 512 x 256 x 16 positions */
	assert_near(p.mxu_macs, 128.0 * 512 * 256 * 16, 0);
	int n_batch = 0, n_tap = 0;
	for (int i = 0; i < p.n_dims; i++) {
		n_batch += p.dims[i].role == SIM_ROLE_BATCH;
		n_tap += p.dims[i].role == SIM_ROLE_TAP;
	}
	assert_int_equal(n_batch, 2);
	assert_int_equal(n_tap, 0);
	for (int a = 0; a < p.n_access; a++)
		for (int i = 0; i < p.acc[a].rank; i++)
			assert_int_equal(p.acc[a].dims[i].win, -1);
	sim_plan_free(&p);
	tu_built_free(&b);
}

/*
 * A variadic (argmax) reduce over the minor dim of f32[2097152,8]: its two
 * results, f32 and s32 [2097152] (8 MiB each), follow the grid as one
 * array would. Held whole (as before), double-buffered they passed v3's
 * 16 MiB of VMEM and no config fitted.
 */
static void test_variadic_reduce(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule argmax\n"
		 "%am (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {\n"
		 "  %a = f32[] parameter(0)\n"
		 "  %ai = s32[] parameter(1)\n"
		 "  %b = f32[] parameter(2)\n"
		 "  %bi = s32[] parameter(3)\n"
		 "  %gt = pred[] compare(%a, %b), direction=GT\n"
		 "  %v = f32[] select(%gt, %a, %b)\n"
		 "  %i = s32[] select(%gt, %ai, %bi)\n"
		 "  ROOT %t = (f32[], s32[]) tuple(%v, %i)\n"
		 "}\n"
		 "ENTRY %e (x: f32[2097152,8]) -> (f32[2097152], s32[2097152]) {\n"
		 "  %x = f32[2097152,8] parameter(0)\n"
		 "  %io = s32[2097152,8] iota(), iota_dimension=1\n"
		 "  %ninf = f32[] constant(-inf)\n"
		 "  %z = s32[] constant(0)\n"
		 "  ROOT %r = (f32[2097152], s32[2097152]) reduce(%x, %io, %ninf, "
		 "%z), dimensions={1}, to_apply=%am\n"
		 "}\n",
		 &b);
	const struct sim_kernel *k = tu_kernel(&b, "r");
	struct sim_estimate e = estimate(k, &hw, "");
	assert_true(e.feasible);
	assert_near(e.bytes_written, 2 * 4.0 * 2097152, 0);
	assert_true(e.steps > 1);
	tu_built_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul_128),
		cmocka_unit_test(test_further_tiles),
		cmocka_unit_test(test_matmul_f32_highest),
		cmocka_unit_test(test_matmul_int8),
		cmocka_unit_test(test_padded_elementwise),
		cmocka_unit_test(test_vmem_infeasible),
		cmocka_unit_test(test_unmodelled),
		cmocka_unit_test(test_empty_array),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_dma_runs),
		cmocka_unit_test(test_straddle),
		cmocka_unit_test(test_split_contraction),
		cmocka_unit_test(test_tpugraphs_vmem_and_runs),
		cmocka_unit_test(test_f16_dot),
		cmocka_unit_test(test_fusion_191),
		cmocka_unit_test(test_f16_conversion),
		cmocka_unit_test(test_conv_forms),
		cmocka_unit_test(test_megacore_split),
		cmocka_unit_test(test_divide_by_broadcast),
		cmocka_unit_test(test_default_layout),
		cmocka_unit_test(test_many_operands),
		cmocka_unit_test(test_access_forms),
		cmocka_unit_test(test_operand_twice),
		cmocka_unit_test(test_slice_read),
		cmocka_unit_test(test_gather_and_in_place),
		cmocka_unit_test(test_slice_windows),
		cmocka_unit_test(test_padded_windows),
		cmocka_unit_test(test_relaid_window),
		cmocka_unit_test(test_fused_collective),
		cmocka_unit_test(test_argmax_reducer_ops),
		cmocka_unit_test(test_depthwise_expanded),
		cmocka_unit_test(test_shallow_conv_folds_taps),
		cmocka_unit_test(test_variadic_reduce),
		cmocka_unit_test(test_reduce_window_whole_row_vpu),
		cmocka_unit_test(test_nested_contraction_mxu),
		cmocka_unit_test(test_nested_layer_slice),
		cmocka_unit_test(test_conv_batch_dims),
		cmocka_unit_test(test_relayout_xlu),
		cmocka_unit_test(test_dot_result_xlu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
