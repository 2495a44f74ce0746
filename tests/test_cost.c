/*
 * test_cost.c: work counting (sim/cost.c) and the roofline baseline
 * (sim/roofline.c) against numbers derived by hand in the comments: MXU
 * MACs of dots and convolutions (valid-positions rule), VPU element ops on
 * padded elements, HBM bytes under XLA's fusion rules, roofline times on
 * hwspecs/v3.yaml.
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

#include "hw_spec.h"
#include "hw_units.h"
#include "ir.h"
#include "sim.h"
#include "test_util.h"

/* Counts are exact integers below 2^53: compared exactly. Times are
 * compared to 1e-9 relative: the same doubles divided in another order. */
#define TIME_REL_TOL 1e-9

/* The work of the only kernel of a module. */
static struct sim_work only_work(const char *text)
{
	struct tu_built b;
	tu_build(text, &b);
	assert_int_equal(b.p.n_kernels, 1);
	struct sim_work w = b.p.kernels[0].work;
	tu_built_free(&b);
	return w;
}

static void assert_rel(double got, double want, double tol)
{
	double scale = want != 0 ? want : 1;
	if ((got - want) / scale > tol || (want - got) / scale > tol)
		fail_msg("got %.17g, want %.17g (rel tol %g)", got, want, tol);
}

/* ---- MXU ------------------------------------------------------------------------- */

/* C[128,256] = A[128,512] B[512,256]: MACs = 128 x 256 x 512. */
static void test_dot_macs(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule d\n"
		"ENTRY %e (a: f32[128,512], b: f32[512,256]) -> f32[128,256] {\n"
		"  %a = f32[128,512] parameter(0)\n"
		"  %b = f32[512,256] parameter(1)\n"
		"  ROOT %d = f32[128,256] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"}\n");
	assert_near(w.mxu_macs, 128.0 * 256 * 512, 0);
	assert_near(w.flops, 2.0 * 128 * 256 * 512, 0);
	/* Tile-aligned f32: padded = logical. 128x512x4 + 512x256x4 read,
	 * 128x256x4 written. */
	assert_near(w.bytes_read, 262144.0 + 524288.0, 0);
	assert_near(w.bytes_written, 131072.0, 0);
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		assert_near(w.vpu_elem_ops[c], 0, 0);
}

/* Batched dot: 8 batches of [32,64] x [64,16]: MACs = 8 x 32 x 16 x 64. */
static void test_batch_dot_macs(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule d\n"
		"ENTRY %e (a: bf16[8,32,64], b: bf16[8,64,16]) -> f32[8,32,16] {\n"
		"  %a = bf16[8,32,64] parameter(0)\n"
		"  %b = bf16[8,64,16] parameter(1)\n"
		"  ROOT %d = f32[8,32,16] dot(%a, %b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n"
		"}\n");
	assert_near(w.mxu_macs, 8.0 * 32 * 16 * 64, 0);
}

static double conv_macs(const char *lhs, const char *rhs, const char *out,
			const char *attrs)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "HloModule cv\n"
		 "ENTRY %%e (x: %s, k: %s) -> %s {\n"
		 "  %%x = %s parameter(0)\n"
		 "  %%k = %s parameter(1)\n"
		 "  ROOT %%c = %s convolution(%%x, %%k), %s\n"
		 "}\n",
		 lhs, rhs, out, lhs, rhs, out, attrs);
	return only_work(text).mxu_macs;
}

/*
 * 3x3 SAME convolution on an 8x8 map, stride 1, pad 1: along one spatial
 * dim tap 0 is valid for outputs 1..7 (7), tap 1 for 0..7 (8), tap 2 for
 * 0..6 (7): 22 pairs, against 3 x 8 = 24 for a padding-blind count. Two
 * dims: 22^2 = 484. MACs = C_in 4 x C_out 8 x N 2 x 484 = 30976.
 */
static void test_conv_same(void **state)
{
	(void)state;
	double m = conv_macs("f32[2,8,8,4]", "f32[3,3,4,8]", "f32[2,8,8,8]",
			     "window={size=3x3 pad=1_1x1_1}, "
			     "dim_labels=b01f_01io->b01f");
	assert_near(m, 4.0 * 8 * 2 * 484, 0);
}

/* Stride 2, no padding, 3x3 on 8x8 -> 3x3 outputs: every tap of every
 * output lands inside (x = 2o + k <= 6 + 2 = 8? no: o <= 2, x <= 6):
 * 3 taps x 3 outputs = 9 per dim, 81 in all. MACs = 4 x 8 x 1 x 81. */
static void test_conv_stride(void **state)
{
	(void)state;
	double m = conv_macs("f32[1,8,8,4]", "f32[3,3,4,8]", "f32[1,3,3,8]",
			     "window={size=3x3 stride=2x2}, "
			     "dim_labels=b01f_01io->b01f");
	assert_near(m, 4.0 * 8 * 81, 0);
}

/* Depthwise (feature_group_count = C_in = 4, kernel [3,3,1,4]): MACs =
 * (4 / 4) x 4 x 1 x 484 = 1936. */
static void test_conv_depthwise(void **state)
{
	(void)state;
	double m = conv_macs("f32[1,8,8,4]", "f32[3,3,1,4]", "f32[1,8,8,4]",
			     "window={size=3x3 pad=1_1x1_1}, "
			     "dim_labels=b01f_01io->b01f, feature_group_count=4");
	assert_near(m, 1936.0, 0);
}

/*
 * Transposed convolution: input 4 wide, lhs_dilate=2 (dilated extent 7),
 * pad 2_2, 3 taps -> 9 outputs. x = o - 2 + k must be even and x/2 in
 * [0,4): x in {0,2,4,6}, so each tap has exactly 4 valid outputs: 12 per
 * dim, 144 in 2-D; one feature in and out, N = 1: MACs = 144.
 */
static void test_conv_lhs_dilation(void **state)
{
	(void)state;
	double m = conv_macs("f32[1,4,4,1]", "f32[3,3,1,1]", "f32[1,9,9,1]",
			     "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, "
			     "dim_labels=b01f_01io->b01f");
	assert_near(m, 144.0, 0);
}

/*
 * The same rule at sizes no loop over outputs could count (it once spun for
 * minutes here): input 8 wide, lhs_dilate = 1000000007, pad 2_2, 3 taps:
 * padded extent 7 x 1000000007 + 1 + 4 = 7000000054, outputs 7000000052.
 * x = o - 2 + k must be a multiple of 1000000007 with x / 1000000007 in
 * [0, 8): x = j x 1000000007, j = 0..7, and o = x + 2 - k is always an
 * output: 8 x 3 = 24 MACs.
 */
static void test_conv_huge_dilation(void **state)
{
	(void)state;
	double m = conv_macs("f32[1,8,1]", "f32[3,1,1]", "f32[1,7000000052,1]",
			     "window={size=3 pad=2_2 lhs_dilate=1000000007}, "
			     "dim_labels=b0f_0io->b0f");
	assert_near(m, 24.0, 0);
}

/* A convolution used as a matmul (no spatial dims, TpuGraphs fusion.261
 * style): MACs = C_in 32 x C_out 1000 x N 64. */
static void test_conv_as_matmul(void **state)
{
	(void)state;
	double m = conv_macs("f32[64,32]", "f32[32,1000]", "f32[64,1000]",
			     "dim_labels=bf_io->bf");
	assert_near(m, 32.0 * 1000 * 64, 0);
}

/* ---- VPU and padding --------------------------------------------------------------- */

/*
 * f32[3,5] under T(8,128) occupies one 8 x 128 tile: 8 x 128 x 4 = 4096
 * bytes. add: flops = 15 (logical), VPU simple ops = 1024 (padded), two
 * distinct operands read, one result written.
 */
static void test_padded_elementwise(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule p\n"
		"ENTRY %e (x: f32[3,5], y: f32[3,5]) -> f32[3,5] {\n"
		"  %x = f32[3,5]{1,0:T(8,128)} parameter(0)\n"
		"  %y = f32[3,5]{1,0:T(8,128)} parameter(1)\n"
		"  ROOT %s = f32[3,5]{1,0:T(8,128)} add(%x, %y)\n"
		"}\n");
	assert_near(w.flops, 15.0, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 1024.0, 0);
	assert_near(w.bytes_read, 2 * 4096.0, 0);
	assert_near(w.bytes_written, 4096.0, 0);
}

/* bf16[3,5] under T(8,128)(2,1): still 1024 padded elements, 2 bytes each;
 * exp is a transcendental (15 logical, 1024 padded VPU ops); multiply(x, x)
 * reads x once. */
static void test_padded_bf16_transcendental(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule p\n"
		"ENTRY %e (x: bf16[3,5]) -> bf16[3,5] {\n"
		"  %x = bf16[3,5]{1,0:T(8,128)(2,1)} parameter(0)\n"
		"  %m = bf16[3,5]{1,0:T(8,128)(2,1)} multiply(%x, %x)\n"
		"  ROOT %ex = bf16[3,5]{1,0:T(8,128)(2,1)} exponential(%m)\n"
		"}\n");
	assert_near(w.transcendentals, 15.0, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_TRANSCEND], 1024.0, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 1024.0, 0);
	assert_near(w.flops, 15.0, 0);
	assert_near(w.bytes_read, 2048.0, 0);
	assert_near(w.bytes_written, 2048.0, 0);
}

/* Row sum of f32[1024,4096]: 1024 x 4096 - 1024 applications of one add
 * (HloCostAnalysis); the VPU folds every padded input element but one
 * per padded result element (f32[1024], 1024 exactly) into the results. */
static void test_reduce_work(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule r\n"
		"%add (a: f32[], b: f32[]) -> f32[] {\n"
		"  %a = f32[] parameter(0)\n"
		"  %b = f32[] parameter(1)\n"
		"  ROOT %s = f32[] add(%a, %b)\n"
		"}\n"
		"ENTRY %e (x: f32[1024,4096]) -> f32[1024] {\n"
		"  %x = f32[1024,4096] parameter(0)\n"
		"  %z = f32[] constant(0)\n"
		"  ROOT %r = f32[1024] reduce(%x, %z), dimensions={1}, to_apply=%add\n"
		"}\n");
	assert_near(w.flops, 1024.0 * 4096 - 1024, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 1024.0 * 4096 - 1024, 0);
	assert_near(w.bytes_read, 1024.0 * 4096 * 4, 0);
	/* f32[1024] without tiles: T(128) rows, 1024 elements exactly. */
	assert_near(w.bytes_written, 4096.0, 0);
}

/*
 * The row max of attention as XLA writes it: a reduce-window over f32[8,1024]
 * whose window (2047 wide, 1023 padding each side) covers the whole row
 * from every output. It is a reduce of the row and a broadcast back: 8 x
 * 1024 - 8 = 8,184 max ops (E_in - E_in / 1024), the VPU one per padded
 * input element (8 x 1024, a whole T(8,128) tile column: no padding), not
 * (2047 - 1) x 8,192 = 16,760,832. A window that slides (3 wide, 1 padding
 * each side: a neighbourhood max) still counts (3 - 1) x 8,192 = 16,384.
 */
/* A row max of f32[8,1024] by a window size wide, pad on both sides. */
static struct sim_work row_window_work(int size, int pad)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "HloModule rw\n"
		 "%%max (a: f32[], b: f32[]) -> f32[] {\n"
		 "  %%a = f32[] parameter(0)\n"
		 "  %%b = f32[] parameter(1)\n"
		 "  ROOT %%m = f32[] maximum(%%a, %%b)\n"
		 "}\n"
		 "ENTRY %%e (x: f32[8,1024]) -> f32[8,1024] {\n"
		 "  %%x = f32[8,1024]{1,0:T(8,128)} parameter(0)\n"
		 "  %%z = f32[] constant(-inf)\n"
		 "  ROOT %%r = f32[8,1024]{1,0:T(8,128)} reduce-window(%%x, %%z), "
		 "window={size=1x%d pad=0_0x%d_%d}, to_apply=%%max\n"
		 "}\n",
		 size, pad, pad);
	return only_work(text);
}

static void test_reduce_window_whole_row(void **state)
{
	(void)state;
	struct sim_work w = row_window_work(2047, 1023);
	assert_near(w.flops, 8.0 * 1024 - 8, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 8.0 * 1024, 0);
	w = row_window_work(3, 1);
	assert_near(w.flops, 2.0 * 8 * 1024, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 2.0 * 8 * 1024, 0);
}

/* ---- fusion byte rules ----------------------------------------------------------------- */

/*
 * Parameter p0 f32[64,128] is only sliced ([0:8], one 8 x 128 tile):
 * reads 4096 bytes, not 32768. Parameter p1 f32[128] feeds a broadcast:
 * read once (f32[128] under T(128) = 512 bytes). Output f32[8,128]: 4096.
 */
static void test_fusion_slice_broadcast(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule s\n"
		"%f (p0: f32[64,128], p1: f32[128]) -> f32[8,128] {\n"
		"  %p0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %p1 = f32[128]{0:T(128)} parameter(1)\n"
		"  %sl = f32[8,128]{1,0:T(8,128)} slice(%p0), slice={[0:8], [0:128]}\n"
		"  %bc = f32[8,128]{1,0:T(8,128)} broadcast(%p1), dimensions={1}\n"
		"  ROOT %a = f32[8,128]{1,0:T(8,128)} add(%sl, %bc)\n"
		"}\n"
		"ENTRY %e (x: f32[64,128], v: f32[128]) -> f32[8,128] {\n"
		"  %x = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %v = f32[128]{0:T(128)} parameter(1)\n"
		"  ROOT %k = f32[8,128]{1,0:T(8,128)} fusion(%x, %v), kind=kLoop, calls=%f\n"
		"}\n");
	assert_near(w.bytes_read, 4096.0 + 512.0, 0);
	assert_near(w.bytes_written, 4096.0, 0);
	assert_near(w.vpu_elem_ops[HW_VPU_SIMPLE], 1024.0, 0);
}

/*
 * In-place dynamic-update-slice fusion: the buffer p0 f32[64,128] (operand
 * 0 of the DUS) is not read, the update f32[8,128] (4096 B) and two s32
 * scalar indices (512 B each under the scalar T(128) tile) are; only the
 * update is written.
 */
static void test_fusion_dus_in_place(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule u\n"
		"%f (p0: f32[64,128], p1: f32[8,128], p2: s32[]) -> f32[64,128] {\n"
		"  %p0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %p1 = f32[8,128]{1,0:T(8,128)} parameter(1)\n"
		"  %p2 = s32[]{:T(128)} parameter(2)\n"
		"  %z = s32[]{:T(128)} constant(0)\n"
		"  ROOT %d = f32[64,128]{1,0:T(8,128)} dynamic-update-slice(%p0, %p1, %p2, %z)\n"
		"}\n"
		"ENTRY %e (x: f32[64,128], u: f32[8,128], i: s32[]) -> f32[64,128] {\n"
		"  %x = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %u = f32[8,128]{1,0:T(8,128)} parameter(1)\n"
		"  %i = s32[]{:T(128)} parameter(2)\n"
		"  ROOT %k = f32[64,128]{1,0:T(8,128)} fusion(%x, %u, %i), kind=kLoop, calls=%f\n"
		"}\n");
	assert_near(w.bytes_read, 4096.0 + 512.0, 0);
	assert_near(w.bytes_written, 4096.0, 0);
}

/* An operand already in VMEM (S(1)) costs no HBM bytes. */
static void test_vmem_operand(void **state)
{
	(void)state;
	struct sim_work w = only_work(
		"HloModule v\n"
		"%f (p0: f32[64,128], p1: f32[64,128]) -> f32[64,128] {\n"
		"  %p0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %p1 = f32[64,128]{1,0:T(8,128)S(1)} parameter(1)\n"
		"  ROOT %a = f32[64,128]{1,0:T(8,128)} add(%p0, %p1)\n"
		"}\n"
		"ENTRY %e (x: f32[64,128], y: f32[64,128]) -> f32[64,128] {\n"
		"  %x = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  %y = f32[64,128]{1,0:T(8,128)S(1)} parameter(1)\n"
		"  ROOT %k = f32[64,128]{1,0:T(8,128)} fusion(%x, %y), kind=kLoop, calls=%f\n"
		"}\n");
	assert_near(w.bytes_read, 32768.0, 0);
	assert_near(w.bytes_written, 32768.0, 0);
}

/* Pre-optimization softmax, second kernel (subtract, exp, sum): reads x
 * (256 x 4096 x 4 = 4 MiB) and the row maxima (f32[256]: 1 KiB), writes
 * only the sums (1 KiB): exp is recomputed by the divide kernel, which
 * reads x, the maxima and the sums; exp and subtract on 1 Mi elements in
 * both kernels. */
static void test_group_bytes(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule jit_softmax\n"
	      "%mx (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %m = f32[] maximum(%a, %b)\n"
	      "}\n"
	      "%sm (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[256,4096]) -> f32[256,4096] {\n"
	      "  %x = f32[256,4096] parameter(0)\n"
	      "  %ninf = f32[] constant(-inf)\n"
	      "  %rmax = f32[256] reduce(%x, %ninf), dimensions={1}, to_apply=%mx\n"
	      "  %bm = f32[256,4096] broadcast(%rmax), dimensions={0}\n"
	      "  %sub = f32[256,4096] subtract(%x, %bm)\n"
	      "  %ex = f32[256,4096] exponential(%sub)\n"
	      "  %zero = f32[] constant(0)\n"
	      "  %rsum = f32[256] reduce(%ex, %zero), dimensions={1}, to_apply=%sm\n"
	      "  %bs = f32[256,4096] broadcast(%rsum), dimensions={0}\n"
	      "  ROOT %div = f32[256,4096] divide(%ex, %bs)\n"
	      "}\n",
	      &b);
	assert_int_equal(b.p.n_kernels, 3);
	const struct sim_work *w = &b.p.kernels[1].work;
	double mat = 256.0 * 4096 * 4, vec = 256.0 * 4;
	assert_near(w->bytes_read, mat + vec, 0);
	assert_near(w->bytes_written, vec, 0);
	assert_near(w->transcendentals, 256.0 * 4096, 0);
	/* subtract (1 Mi) + the sum's 1 Mi - 256 applications */
	assert_near(w->flops, 2.0 * 256 * 4096 - 256, 0);
	/* divide kernel: x + maxima + sums in, the result out; exp again;
	 * divide is a DIVIDE-class op on 1 Mi elements */
	const struct sim_work *d = &b.p.kernels[2].work;
	assert_near(d->bytes_read, mat + 2 * vec, 0);
	assert_near(d->bytes_written, mat, 0);
	assert_near(d->transcendentals, 256.0 * 4096, 0);
	assert_near(d->vpu_elem_ops[HW_VPU_DIVIDE], 256.0 * 4096, 0);
	tu_built_free(&b);
}

/* ---- roofline on v3 ------------------------------------------------------------------- */

static struct sim_estimate roof_only(const char *text, const struct hw_spec *hw,
				     struct sim_kernel *kout)
{
	struct tu_built b;
	tu_build(text, &b);
	assert_int_equal(b.p.n_kernels, 1);
	struct sim_estimate e;
	struct ts_diag d = {0};
	assert_int_equal(sim_kernel_roofline(&b.p.kernels[0], hw, &e, &d), TS_OK);
	if (kout)
		*kout = b.p.kernels[0];
	tu_built_free(&b);
	return e;
}

/*
 * bf16 C[8192,8192] = A[8192,8192] B[8192,8192] on one v3 core:
 * flops = 2 x 8192^3 = 1.0995e12; peak = 2 x 2 MXU x 128^2 x 0.94e9 =
 * 61.6e12 FLOP/s -> 17.85 ms. Bytes 3 x 8192^2 x 2 = 402.7 MB at
 * 900e9 x efficiency / 2 (~0.45e12 B/s) -> ~1 ms. Compute bound:
 * time = flops / 61.6e12 + kernel_ns. The calibrated spec values
 * (efficiency, kernel_ns, ...) are read from hwspecs/v3.yaml, so these
 * tests check the roofline's formula, not the calibration.
 */
static void test_roofline_matmul_v3(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct sim_estimate e = roof_only(
		"HloModule mm\n"
		"ENTRY %e (a: bf16[8192,8192], b: bf16[8192,8192]) -> bf16[8192,8192] {\n"
		"  %a = bf16[8192,8192] parameter(0)\n"
		"  %b = bf16[8192,8192] parameter(1)\n"
		"  ROOT %d = bf16[8192,8192] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"}\n",
		&hw, NULL);
	double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
	/* 2 FLOP x 2 MXUs x 128 x 128 x 0.94e9 Hz, one core (no megacore) */
	assert_rel(hw_spec_peak_flops(&hw), 61.60384e12, TIME_REL_TOL);
	assert_true(e.modelled);
	assert_int_equal(e.bound, HW_UNIT_MXU);
	assert_rel(e.time_ns,
		   flops / hw_spec_peak_flops(&hw) * 1e9 + hw.kernel_overhead_ns,
		   TIME_REL_TOL);
	assert_rel(e.time_ns, 1.7849e7, 1e-3); /* ~17.85 ms, by hand */
	assert_near(e.flops, flops, 0);
	assert_near(e.bytes_read, 2.0 * 8192 * 8192 * 2, 0);
}

/*
 * f32[4096,4096] add: 3 x 64 MiB = 201.3 MB at ~0.45e12 B/s = ~0.45 ms;
 * VPU 16 Mi elements / 1024 per vreg / ALUs (1 or 2) <= 16384 cycles
 * = 17 us: HBM bound, time = bytes / bw + kernel_ns.
 */
static void test_roofline_elementwise_v3(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct sim_estimate e = roof_only(
		"HloModule add\n"
		"ENTRY %e (a: f32[4096,4096], b: f32[4096,4096]) -> f32[4096,4096] {\n"
		"  %a = f32[4096,4096] parameter(0)\n"
		"  %b = f32[4096,4096] parameter(1)\n"
		"  ROOT %s = f32[4096,4096] add(%a, %b)\n"
		"}\n",
		&hw, NULL);
	double bytes = 3.0 * 4096 * 4096 * 4;
	assert_int_equal(e.bound, HW_UNIT_HBM);
	double bw = hw_spec_hbm_bw(&hw);
	assert_rel(bw, 900e9 * hw.hbm_efficiency / 2, TIME_REL_TOL);
	assert_rel(e.time_ns, bytes / bw * 1e9 + hw.kernel_overhead_ns,
		   TIME_REL_TOL);
	assert_rel(e.vpu_cycles, 4096.0 * 4096 / 1024 / hw.vpu_alus,
		   TIME_REL_TOL);

	/* f32[8,128] add: 12 KiB / ~0.45e12 B/s = ~28 ns < kernel_ns (>= 100
	 * ns on every spec): overhead bound. */
	e = roof_only("HloModule small\n"
		      "ENTRY %e (a: f32[8,128], b: f32[8,128]) -> f32[8,128] {\n"
		      "  %a = f32[8,128] parameter(0)\n"
		      "  %b = f32[8,128] parameter(1)\n"
		      "  ROOT %s = f32[8,128] add(%a, %b)\n"
		      "}\n",
		      &hw, NULL);
	assert_int_equal(e.bound, HW_UNIT_OVERHEAD);
	assert_rel(e.time_ns, 12288.0 / bw * 1e9 + hw.kernel_overhead_ns,
		   TIME_REL_TOL);
}

/* A custom call is listed but not modelled: zero time. A 4-way all-reduce
 * of 4 MiB on v3: 2 x 3/4 x 4 MiB over 2 links x 100 GB/s x ici.efficiency
 * shared by the chip's 2 TensorCores (each its own device), plus 2 x 3
 * ring steps x ici latency, plus the kernel launch. */
static void test_roofline_unmodelled_collective(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct sim_estimate e = roof_only(
		"HloModule cc\n"
		"ENTRY %e (a: f32[1024]) -> f32[1024] {\n"
		"  %a = f32[1024] parameter(0)\n"
		"  ROOT %c = f32[1024] custom-call(%a), custom_call_target=\"x\"\n"
		"}\n",
		&hw, NULL);
	assert_false(e.modelled);
	assert_near(e.time_ns, 0, 0);
	assert_int_equal(e.bound, HW_UNIT_NONE);

	e = roof_only("HloModule ar\n"
		      "%add (a: f32[], b: f32[]) -> f32[] {\n"
		      "  %a = f32[] parameter(0)\n"
		      "  %b = f32[] parameter(1)\n"
		      "  ROOT %s = f32[] add(%a, %b)\n"
		      "}\n"
		      "ENTRY %e (a: f32[1024,1024]) -> f32[1024,1024] {\n"
		      "  %a = f32[1024,1024] parameter(0)\n"
		      "  ROOT %r = f32[1024,1024] all-reduce(%a), replica_groups={{0,1,2,3}}, to_apply=%add\n"
		      "}\n",
		      &hw, NULL);
	assert_int_equal(e.bound, HW_UNIT_ICI);
	assert_int_equal(hw.tensorcores_per_chip, 2);
	assert_false(hw.megacore);
	assert_rel(e.time_ns, 2 * 0.75 * 4194304.0 /
				      (200.0 * hw.ici_efficiency / 2) +
				      6 * hw.ici_latency_ns + hw.kernel_overhead_ns,
		   TIME_REL_TOL);
}

/*
 * A collective moves its whole payload over ICI whatever memory space its
 * buffers are in (XLA keeps hot gradients in VMEM, S(1), on v5e and
 * later). A 4-way tuple all-reduce of two f32[1024,1024] (4 MiB each), the
 * first in VMEM: payload 8 MiB; HBM bytes only the second's, read and
 * written (4 MiB each). On v3 the ring takes, as in the test above,
 * 2 x 3/4 x 8 MiB / (200 GB/s x ici.efficiency / 2) + 6 ring steps x
 * ici latency + the launch, in the analytic model and the roofline alike
 * (the DMA of 2 x 4 MiB at HBM bandwidth is far below it). Before, the
 * VMEM operand counted 0 bytes: the ring moved 4 MiB. A slice of an HBM
 * array into VMEM reads its bytes from HBM (8 x 128 x 4 = 4096) and writes
 * none; before, the result's memory space made it read none.
 */
static void test_vmem_collective(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule ar\n"
		 "%add (a: f32[], b: f32[]) -> f32[] {\n"
		 "  %a = f32[] parameter(0)\n"
		 "  %b = f32[] parameter(1)\n"
		 "  ROOT %s = f32[] add(%a, %b)\n"
		 "}\n"
		 "ENTRY %e (a: f32[1024,1024], b: f32[1024,1024]) -> "
		 "(f32[1024,1024], f32[1024,1024]) {\n"
		 "  %a = f32[1024,1024]{1,0:T(8,128)S(1)} parameter(0)\n"
		 "  %b = f32[1024,1024]{1,0:T(8,128)} parameter(1)\n"
		 "  ROOT %r = (f32[1024,1024]{1,0:T(8,128)S(1)}, "
		 "f32[1024,1024]{1,0:T(8,128)}) all-reduce(%a, %b), "
		 "replica_groups={{0,1,2,3}}, to_apply=%add\n"
		 "}\n",
		 &b);
	assert_int_equal(b.p.n_kernels, 1);
	const struct sim_kernel *k = &b.p.kernels[0];
	assert_near(k->work.ici_bytes, 8388608.0, 0);
	assert_near(k->work.bytes_read, 4194304.0, 0);
	assert_near(k->work.bytes_written, 4194304.0, 0);
	double want = 2 * 0.75 * 8388608.0 / (200.0 * hw.ici_efficiency / 2) +
		      6 * hw.ici_latency_ns + hw.kernel_overhead_ns;
	struct sim_estimate e;
	struct ts_diag d = {0};
	assert_int_equal(sim_kernel_estimate(k, &hw, NULL, &e, &d), TS_OK);
	assert_int_equal(e.bound, HW_UNIT_ICI);
	assert_rel(e.time_ns, want, TIME_REL_TOL);
	assert_int_equal(sim_kernel_roofline(k, &hw, &e, &d), TS_OK);
	assert_int_equal(e.bound, HW_UNIT_ICI);
	assert_rel(e.time_ns, want, TIME_REL_TOL);
	tu_built_free(&b);

	struct sim_work w = only_work(
		"HloModule s\n"
		"ENTRY %e (x: f32[64,128]) -> f32[8,128] {\n"
		"  %x = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
		"  ROOT %s = f32[8,128]{1,0:T(8,128)S(1)} slice(%x), "
		"slice={[0:8], [0:128]}\n"
		"}\n");
	assert_near(w.bytes_read, 4096.0, 0);
	assert_near(w.bytes_written, 0.0, 0);
}

/* Program total = sum over kernels of time x multiplicity; the custom
 * call is counted as unmodelled and adds nothing. Body kernels run 4
 * times, the condition's compare 5 times. */
static void test_program_estimate(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule w\n"
	      "%cond (s: (s32[], f32[256,128])) -> pred[] {\n"
	      "  %s = (s32[], f32[256,128]) parameter(0)\n"
	      "  %i = s32[] get-tuple-element(%s), index=0\n"
	      "  %n = s32[] constant(4)\n"
	      "  ROOT %lt = pred[] compare(%i, %n), direction=LT\n"
	      "}\n"
	      "%body (s: (s32[], f32[256,128])) -> (s32[], f32[256,128]) {\n"
	      "  %s = (s32[], f32[256,128]) parameter(0)\n"
	      "  %i = s32[] get-tuple-element(%s), index=0\n"
	      "  %v = f32[256,128] get-tuple-element(%s), index=1\n"
	      "  %one = s32[] constant(1)\n"
	      "  %i1 = s32[] add(%i, %one)\n"
	      "  %t = f32[256,128] tanh(%v)\n"
	      "  ROOT %r = (s32[], f32[256,128]) tuple(%i1, %t)\n"
	      "}\n"
	      "ENTRY %e (x: f32[256,128]) -> f32[256,128] {\n"
	      "  %x = f32[256,128] parameter(0)\n"
	      "  %z = s32[] constant(0)\n"
	      "  %t0 = (s32[], f32[256,128]) tuple(%z, %x)\n"
	      "  %w = (s32[], f32[256,128]) while(%t0), condition=%cond, body=%body, "
	      "backend_config={\"known_trip_count\":{\"n\":\"4\"}}\n"
	      "  %v = f32[256,128] get-tuple-element(%w), index=1\n"
	      "  ROOT %c = f32[256,128] custom-call(%v), custom_call_target=\"x\"\n"
	      "}\n",
	      &b);
	struct ts_diag d = {0};
	assert_int_equal(sim_program_estimate(&b.p, &hw, &d), TS_OK);
	assert_int_equal(b.p.n_kernels, 4); /* lt, i1, t, c */
	assert_int_equal(b.p.n_unmodelled, 1);
	double sum = 0;
	for (int i = 0; i < b.p.n_kernels; i++) {
		const struct sim_kernel *k = &b.p.kernels[i];
		if (k->kind == SIM_KERNEL_UNMODELLED) {
			assert_false(k->est.modelled);
			continue;
		}
		assert_true(k->est.time_ns > 0);
		sum += k->est.time_ns * k->multiplicity;
	}
	assert_rel(b.p.total_ns, sum, TIME_REL_TOL);
	assert_near(b.p.kernels[0].multiplicity, 5.0, 0);
	assert_near(b.p.kernels[2].multiplicity, 4.0, 0);
	tu_built_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dot_macs),
		cmocka_unit_test(test_batch_dot_macs),
		cmocka_unit_test(test_conv_same),
		cmocka_unit_test(test_conv_stride),
		cmocka_unit_test(test_conv_depthwise),
		cmocka_unit_test(test_conv_lhs_dilation),
		cmocka_unit_test(test_conv_huge_dilation),
		cmocka_unit_test(test_conv_as_matmul),
		cmocka_unit_test(test_padded_elementwise),
		cmocka_unit_test(test_padded_bf16_transcendental),
		cmocka_unit_test(test_reduce_work),
		cmocka_unit_test(test_reduce_window_whole_row),
		cmocka_unit_test(test_fusion_slice_broadcast),
		cmocka_unit_test(test_fusion_dus_in_place),
		cmocka_unit_test(test_vmem_operand),
		cmocka_unit_test(test_group_bytes),
		cmocka_unit_test(test_roofline_matmul_v3),
		cmocka_unit_test(test_roofline_elementwise_v3),
		cmocka_unit_test(test_roofline_unmodelled_collective),
		cmocka_unit_test(test_vmem_collective),
		cmocka_unit_test(test_program_estimate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
