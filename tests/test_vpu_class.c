/*
 * test_vpu_class.c: the VPU cost classes of elementwise ops (hlo/ir_ops.def,
 * hw/hw_spec.h hw_vpu_class): which opcode is one EUP function, a composite
 * of several steps, random-number generation, a divide or a trig function,
 * and that the analytic model charges each single-op kernel its class's
 * slots from hwspecs/v3.yaml; with ../shared, that tpuv3-ops' largest GELU
 * is VPU-bound on v3 at 8 simple ops + 1 tanh per element.
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
#include "ir.h"
#include "sim.h"
#include "test_util.h"

/* Sums and products of the spec's numbers: equal up to double rounding. */
#define EXACT 1e-6

static struct sim_estimate estimate_default(const struct sim_kernel *k,
					    const struct hw_spec *hw)
{
	struct sim_tile_config c;
	struct ts_diag d = {0};
	if (sim_tile_config_parse("", &c, &d) != TS_OK)
		fail_msg("config: %s", d.msg);
	struct sim_estimate e;
	if (sim_kernel_estimate(k, hw, &c, &e, &d) != TS_OK)
		fail_msg("estimate %s: %s", k->name, d.msg);
	return e;
}

/* The class of every transcendental-like opcode, by how the hardware
 * builds it (hw_spec.h): one EUP push (v4 has vpow2, vlog2, vtanh, vrcp,
 * vrsqrt), several steps, or a random-number generator. */
static void test_op_classes(void **state)
{
	(void)state;
	static const struct {
		enum ir_op op;
		enum hw_vpu_class c;
	} want[] = {
		{IR_OP_ADD, HW_VPU_SIMPLE},
		{IR_OP_MULTIPLY, HW_VPU_SIMPLE},
		{IR_OP_DIVIDE, HW_VPU_DIVIDE},
		{IR_OP_REMAINDER, HW_VPU_DIVIDE},
		{IR_OP_EXPONENTIAL, HW_VPU_TRANSCEND},
		{IR_OP_LOG, HW_VPU_TRANSCEND},
		{IR_OP_TANH, HW_VPU_TRANSCEND},
		{IR_OP_RSQRT, HW_VPU_TRANSCEND},
		{IR_OP_SQRT, HW_VPU_TRANSCEND},
		{IR_OP_LOGISTIC, HW_VPU_COMPOSITE},
		{IR_OP_ERF, HW_VPU_COMPOSITE},
		{IR_OP_POWER, HW_VPU_COMPOSITE},
		{IR_OP_EXPONENTIAL_MINUS_ONE, HW_VPU_COMPOSITE},
		{IR_OP_LOG_PLUS_ONE, HW_VPU_COMPOSITE},
		{IR_OP_CBRT, HW_VPU_COMPOSITE},
		{IR_OP_SINH, HW_VPU_COMPOSITE},
		{IR_OP_COSH, HW_VPU_COMPOSITE},
		{IR_OP_ASINH, HW_VPU_COMPOSITE},
		{IR_OP_ACOSH, HW_VPU_COMPOSITE},
		{IR_OP_ATANH, HW_VPU_COMPOSITE},
		{IR_OP_SINE, HW_VPU_TRIG},
		{IR_OP_COSINE, HW_VPU_TRIG},
		{IR_OP_TAN, HW_VPU_TRIG},
		{IR_OP_ATAN2, HW_VPU_TRIG},
		{IR_OP_ASIN, HW_VPU_TRIG},
		{IR_OP_ACOS, HW_VPU_TRIG},
		{IR_OP_RNG, HW_VPU_RNG},
		{IR_OP_RNG_BIT_GENERATOR, HW_VPU_RNG},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(want); i++)
		if (sim_op_vpu_class(want[i].op) != want[i].c)
			fail_msg("%s: class %d, want %d",
				 ir_op_name(want[i].op),
				 (int)sim_op_vpu_class(want[i].op),
				 (int)want[i].c);
}

/*
 * One f32[8,128] op per kernel (one vreg, one step, one row of tiles):
 * VPU cycles = cost[class] / alus + overhead.row_cycles, each from v3.yaml.
 */
static void test_single_op_kernels(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	static const char text[] =
		"HloModule ops\n"
		"ENTRY %e (a: f32[8,128]) -> (f32[8,128], f32[8,128], "
		"f32[8,128]) {\n"
		"  %a = f32[8,128] parameter(0)\n"
		"  %t = f32[8,128] tanh(%a)\n"
		"  %l = f32[8,128] logistic(%a)\n"
		"  %zero = f32[] constant(0)\n"
		"  %one = f32[] constant(1)\n"
		"  %r = f32[8,128] rng(%zero, %one), distribution=rng_uniform\n"
		"  ROOT %out = (f32[8,128], f32[8,128], f32[8,128]) "
		"tuple(%t, %l, %r)\n"
		"}\n";
	struct tu_built b;
	tu_build_file("ops.hlo", text, sizeof text - 1, NULL, &b);
	static const struct {
		const char *kernel;
		enum hw_vpu_class c;
	} want[] = {
		{"t", HW_VPU_TRANSCEND},
		{"l", HW_VPU_COMPOSITE},
		{"r", HW_VPU_RNG},
	};
	int found = 0;
	for (int i = 0; i < b.p.n_kernels; i++)
		for (size_t j = 0; j < TS_ARRAY_LEN(want); j++) {
			if (strcmp(b.p.kernels[i].name, want[j].kernel))
				continue;
			struct sim_estimate e =
				estimate_default(&b.p.kernels[i], &hw);
			assert_near(e.vpu_cycles,
				    hw.vpu_class_cost[want[j].c] / hw.vpu_alus +
					    hw.row_overhead_cycles,
				    EXACT);
			found++;
		}
	assert_int_equal(found, 3);
	/* v3: rng is priced apart from the EUP functions, a composite above
	 * them (hwspecs/v3.yaml vpu.cost). */
	assert_true(hw.vpu_class_cost[HW_VPU_RNG] <
		    hw.vpu_class_cost[HW_VPU_TRANSCEND]);
	assert_true(hw.vpu_class_cost[HW_VPU_TRANSCEND] <
		    hw.vpu_class_cost[HW_VPU_COMPOSITE]);
	tu_built_free(&b);
}

/*
 * tpuv3-ops gelu_tanh_f32_536870912 (jax.nn.gelu, tanh form, f32[2^29]):
 * 6 multiplies, 2 adds and one tanh per element on 2^19 vregs, i.e.
 * 2^19 x (8 + transcendental) / alus cycles plus one row_cycles per
 * block row; VPU-bound on v3 (the fit of vpu.cost.transcendental).
 * Tolerance 0.5%: the row overhead is < 0.1% of the total.
 */
static void test_gelu_vpu_bound(void **state)
{
	(void)state;
	struct hw_spec hw;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared) {
		print_message("TPUSIM_SHARED unset: skipped\n");
		skip();
	}
	if (!tu_load_spec("v3", &hw))
		skip();
	char path[4096];
	snprintf(path, sizeof path,
		 "%s/data/tpuv3-ops/modules/gelu_tanh_f32_536870912.hlo",
		 shared);
	char *text;
	size_t len;
	struct ts_diag d = {0};
	if (ts_read_file(path, &text, &len, &d) != TS_OK) {
		print_message("%s absent: skipped\n", path);
		skip();
	}
	struct tu_built b;
	tu_build_file(path, text, len, NULL, &b);
	assert_int_equal(b.p.n_kernels, 1);
	struct sim_estimate e = estimate_default(&b.p.kernels[0], &hw);
	double vregs = 536870912.0 / 1024;
	double want = vregs *
		      (8 * hw.vpu_class_cost[HW_VPU_SIMPLE] +
		       hw.vpu_class_cost[HW_VPU_TRANSCEND]) /
		      hw.vpu_alus;
	assert_near(e.vpu_cycles / want, 1.0, 0.005);
	assert_int_equal(e.bound, HW_UNIT_VPU);
	tu_built_free(&b);
	ts_free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_classes),
		cmocka_unit_test(test_single_op_kernels),
		cmocka_unit_test(test_gelu_vpu_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
