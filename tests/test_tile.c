/*
 * test_tile.c: tile configs and grids (sim/tile.c): the config text and its
 * column-located errors, the tile grid of a tensor in physical order, which
 * tensor a kernel's bounds tile, steps with ragged blocks, the output and
 * kernel bounds' shared output-feature dim, the default config rule and the
 * candidate enumeration. Shapes and kernels come from small HLO texts
 * modelled on TpuGraphs' fusion.191 (docs/TPU.md section 3).
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

#include "model.h"
#include "test_util.h"

/* ---- helpers --------------------------------------------------------------- */

/* The tile grid of the shape written in `shape` (HLO text). */
static void grid_of(const char *shape, struct sim_tgrid *g)
{
	char text[512];
	snprintf(text, sizeof text,
		 "HloModule g\nENTRY %%e (p: %s) -> %s {\n"
		 "  ROOT %%p = %s parameter(0)\n}\n",
		 shape, shape, shape);
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	if (hlo_parse("g.hlo", text, strlen(text), &m, &n, &d) != TS_OK)
		fail_msg("parse %s: %s", shape, d.msg);
	if (sim_tile_grid(&m[0]->entry->root->shape, g, &d) != TS_OK)
		fail_msg("grid %s: %s", shape, d.msg);
	ir_module_free(m[0]);
	ts_free(m);
}

static void assert_grid(const char *shape, const char *want)
{
	struct sim_tgrid g;
	grid_of(shape, &g);
	char buf[128] = "";
	size_t len = 0;
	for (int i = 0; i < g.rank; i++)
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld",
					i ? "x" : "", (long long)g.tiles[i]);
	if (strcmp(buf, want) != 0)
		fail_msg("grid of %s is %s, want %s", shape, buf, want);
}

/* fusion.191's convolution: bf16 activations in (physical H, W, N, C),
 * f32 3x3 weights, output f32 -> bf16 in the activations' layout. */
static const char conv_hlo[] =
	"HloModule c\n"
	"%fc (p0: bf16[32,12,12,192], p1: f32[3,3,192,384]) -> bf16[32,12,12,384] {\n"
	"  %p0 = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} parameter(0)\n"
	"  %p1 = f32[3,3,192,384]{3,2,1,0:T(8,128)} parameter(1)\n"
	"  %cv = f32[32,12,12,384]{3,0,2,1:T(8,128)} convolution(%p0, %p1), "
	"window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
	"  ROOT %o = bf16[32,12,12,384]{3,0,2,1:T(8,128)(2,1)} convert(%cv)\n"
	"}\n"
	"ENTRY %e (a: bf16[32,12,12,192], w: f32[3,3,192,384]) -> bf16[32,12,12,384] {\n"
	"  %a = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} parameter(0)\n"
	"  %w = f32[3,3,192,384]{3,2,1,0:T(8,128)} parameter(1)\n"
	"  ROOT %f = bf16[32,12,12,384]{3,0,2,1:T(8,128)(2,1)} fusion(%a, %w), "
	"kind=kOutput, calls=%fc\n"
	"}\n";

/* fusion.261's form: a weight-gradient matmul f32[4096,1000]{0,1} whose
 * output features (1000, tiled by 8) meet a kernel tiled by 128. */
static const char wgrad_hlo[] =
	"HloModule w\n"
	"%fw (p0: f32[32,4096], p1: f32[32,1000]) -> f32[4096,1000] {\n"
	"  %p0 = f32[32,4096]{1,0:T(8,128)} parameter(0)\n"
	"  %p1 = f32[32,1000]{1,0:T(8,128)} parameter(1)\n"
	"  ROOT %cv = f32[4096,1000]{0,1:T(8,128)} convolution(%p0, %p1), "
	"dim_labels=fb_io->bf\n"
	"}\n"
	"ENTRY %e (a: f32[32,4096], b: f32[32,1000]) -> f32[4096,1000] {\n"
	"  %a = f32[32,4096]{1,0:T(8,128)} parameter(0)\n"
	"  %b = f32[32,1000]{1,0:T(8,128)} parameter(1)\n"
	"  ROOT %f = f32[4096,1000]{0,1:T(8,128)} fusion(%a, %b), kind=kOutput, "
	"calls=%fw\n"
	"}\n";

/* fusion.232's form: a reduce-rooted loop fusion; the bounds tile the
 * reduce's input f32[32,26,26,192]{3,0,2,1}. */
static const char reduce_hlo[] =
	"HloModule r\n"
	"%add (x: f32[], y: f32[]) -> f32[] {\n"
	"  %x = f32[] parameter(0)\n"
	"  %y = f32[] parameter(1)\n"
	"  ROOT %s = f32[] add(%x, %y)\n"
	"}\n"
	"%fr (p0: f32[32,26,26,192]) -> f32[192] {\n"
	"  %p0 = f32[32,26,26,192]{3,0,2,1:T(8,128)} parameter(0)\n"
	"  %z = f32[] constant(0)\n"
	"  ROOT %r = f32[192]{0:T(256)} reduce(%p0, %z), dimensions={0,1,2}, "
	"to_apply=%add\n"
	"}\n"
	"ENTRY %e (a: f32[32,26,26,192]) -> f32[192] {\n"
	"  %a = f32[32,26,26,192]{3,0,2,1:T(8,128)} parameter(0)\n"
	"  ROOT %f = f32[192]{0:T(256)} fusion(%a), kind=kLoop, calls=%fr\n"
	"}\n";

static void plan_of(const char *text, const char *name,
		    const struct hw_spec *hw, struct tu_built *b, struct sim_plan *p)
{
	tu_build(text, b);
	struct ts_diag d = {0};
	if (sim_plan_build(tu_kernel(b, name), hw, p, &d) != TS_OK)
		fail_msg("plan %s: %s", name, d.msg);
}

/* A scatter fusion whose updates a nested gather fusion computes (XLA's
 * scatter_custom_fusion in data/compiled's decoders: the embedding
 * gradient) is a scatter kernel (kernels.c heaviest_at): of two ops of one
 * weight, the less nested characterises it, not the one that comes first.
 * Nested in the kernel's fusion, the scatter still updates the table it is
 * given in place (plan.c inplace_op, cost.c written_bytes), and reads its
 * indices once. */
static void test_nested_scatter(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	struct sim_plan p;
	plan_of("HloModule m\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "%gat (g0: f32[64,128], g1: s32[8]) -> f32[8,128] {\n"
	      "  %g0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
	      "  %g1 = s32[8]{0:T(256)} parameter(1)\n"
	      "  ROOT %gather = f32[8,128]{1,0:T(8,128)} gather(%g0, %g1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}\n"
	      "}\n"
	      "%upd (u0: f32[64,128], u1: s32[8]) -> f32[8,128] {\n"
	      "  %u0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
	      "  %u1 = s32[8]{0:T(256)} parameter(1)\n"
	      "  ROOT %inner = f32[8,128]{1,0:T(8,128)} fusion(%u0, %u1), kind=kCustom, calls=%gat\n"
	      "}\n"
	      "%sca (s0: f32[1024,128], s1: s32[8], s2: f32[8,128]) -> f32[1024,128] {\n"
	      "  %s0 = f32[1024,128]{1,0:T(8,128)} parameter(0)\n"
	      "  %s1 = s32[8]{0:T(256)} parameter(1)\n"
	      "  %s2 = f32[8,128]{1,0:T(8,128)} parameter(2)\n"
	      "  ROOT %scatter = f32[1024,128]{1,0:T(8,128)} scatter(%s0, %s1, %s2), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add\n"
	      "}\n"
	      "%outer (o0: f32[1024,128], o1: s32[8], o2: f32[64,128], o3: s32[8]) -> f32[1024,128] {\n"
	      "  %o0 = f32[1024,128]{1,0:T(8,128)} parameter(0)\n"
	      "  %o1 = s32[8]{0:T(256)} parameter(1)\n"
	      "  %o2 = f32[64,128]{1,0:T(8,128)} parameter(2)\n"
	      "  %o3 = s32[8]{0:T(256)} parameter(3)\n"
	      "  %updates = f32[8,128]{1,0:T(8,128)} fusion(%o2, %o3), kind=kLoop, calls=%upd\n"
	      "  ROOT %sc = f32[1024,128]{1,0:T(8,128)} fusion(%o0, %o1, %updates), kind=kCustom, calls=%sca\n"
	      "}\n"
	      "ENTRY %e (t: f32[1024,128], i: s32[8], x: f32[64,128], j: s32[8]) -> f32[1024,128] {\n"
	      "  %t = f32[1024,128]{1,0:T(8,128)} parameter(0)\n"
	      "  %i = s32[8]{0:T(256)} parameter(1)\n"
	      "  %x = f32[64,128]{1,0:T(8,128)} parameter(2)\n"
	      "  %j = s32[8]{0:T(256)} parameter(3)\n"
	      "  ROOT %k = f32[1024,128]{1,0:T(8,128)} fusion(%t, %i, %x, %j), kind=kCustom, calls=%outer\n"
	      "}\n",
	      "k", &hw, &b, &p);
	const struct sim_kernel *k = tu_kernel(&b, "k");
	assert_int_equal(k->main_op, IR_OP_SCATTER);
	/* in place: it writes the 8 updated rows of 128 f32 (4 KiB), not
	 * the 1024-row table (512 KiB) */
	assert_near(k->work.bytes_written, 8 * 128 * 4, 0);
	/* the plan tiles the update the kernel computes, and moves the
	 * table's updated rows in and out */
	assert_string_equal(p.target->name, "updates");
	int table = 0;
	for (int i = 0; i < p.n_access; i++) {
		const struct sim_plan_access *a = &p.acc[i];
		if (strcmp(a->name, "t") == 0 || strcmp(a->name, "sc") == 0) {
			assert_near(a->bytes, 8 * 128 * 4, 0);
			table++;
		}
	}
	assert_int_equal(table, 2);
	for (int i = 0; i < p.n_access; i++)
		if (strcmp(p.acc[i].name, "i") == 0)
			assert_near(p.acc[i].bytes, 256 * 4, 0); /* s32[8], T(256) */
	sim_plan_free(&p);
	tu_built_free(&b);
}

/* A convolution nested beside the kernel's target (a kOutput fusion
 * inside the fusion whose exp and row sum are tiled: data/compiled's v4
 * and later attention fusions, QK^T beside its softmax) passes the grid
 * on to its operands: the lhs rows follow the result's batch dim, the
 * contracted features follow nothing (plan.c conv_operand_map). Without
 * it the 8 MB lhs is held whole in every block. */
static void test_nested_conv_operands(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	struct tu_built b;
	struct sim_plan p;
	plan_of("HloModule nc\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "%mm (m0: f32[8192,256], m1: f32[256,512]) -> f32[8192,512] {\n"
	      "  %m0 = f32[8192,256]{1,0:T(8,128)} parameter(0)\n"
	      "  %m1 = f32[256,512]{1,0:T(8,128)} parameter(1)\n"
	      "  ROOT %conv = f32[8192,512]{1,0:T(8,128)} convolution(%m0, %m1), dim_labels=bf_io->bf\n"
	      "}\n"
	      "%outer (o0: f32[8192,256], o1: f32[256,512]) -> (f32[8192], f32[8192,512]) {\n"
	      "  %o0 = f32[8192,256]{1,0:T(8,128)} parameter(0)\n"
	      "  %o1 = f32[256,512]{1,0:T(8,128)} parameter(1)\n"
	      "  %n = f32[8192,512]{1,0:T(8,128)} fusion(%o0, %o1), kind=kOutput, calls=%mm\n"
	      "  %e = f32[8192,512]{1,0:T(8,128)} exponential(%n)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %r = f32[8192]{0:T(1024)} reduce(%e, %z), dimensions={1}, to_apply=%add\n"
	      "  ROOT %t = (f32[8192]{0:T(1024)}, f32[8192,512]{1,0:T(8,128)}) tuple(%r, %e)\n"
	      "}\n"
	      "ENTRY %main (x: f32[8192,256], w: f32[256,512]) -> (f32[8192], f32[8192,512]) {\n"
	      "  %x = f32[8192,256]{1,0:T(8,128)} parameter(0)\n"
	      "  %w = f32[256,512]{1,0:T(8,128)} parameter(1)\n"
	      "  ROOT %k = (f32[8192]{0:T(1024)}, f32[8192,512]{1,0:T(8,128)}) fusion(%x, %w), kind=kOutput, calls=%outer\n"
	      "}\n",
	      "k", &hw, &b, &p);
	int seen = 0;
	for (int i = 0; i < p.n_access; i++) {
		const struct sim_plan_access *a = &p.acc[i];
		if (strcmp(a->name, "x") != 0)
			continue;
		seen++;
		assert_int_equal(a->rank, 2);
		assert_true(a->dims[0].grid >= 0); /* rows: the batch */
		assert_int_equal(a->dims[1].grid, -1); /* contracted */
	}
	assert_int_equal(seen, 1);
	sim_plan_free(&p);
	tu_built_free(&b);

	/* the attention's form: the heads and the batch written as windows
	 * (conv_batch_dim), the queries as the batch: q's dims in memory
	 * order (batch, heads, queries, features) follow the grid but the
	 * contracted features */
	plan_of("HloModule bc\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "%qk (m0: f32[2,512,2,128], m1: f32[2,512,2,128]) -> f32[2,2,512,512] {\n"
	      "  %m0 = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(0)\n"
	      "  %m1 = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(1)\n"
	      "  ROOT %conv = f32[2,2,512,512]{3,2,1,0:T(8,128)} convolution(%m0, %m1), window={size=2x2 stride=1x1 lhs_dilate=2x2}, dim_labels=0b1f_0o1i->01bf\n"
	      "}\n"
	      "%outer (o0: f32[2,512,2,128], o1: f32[2,512,2,128]) -> (f32[2,2,512], f32[2,2,512,512]) {\n"
	      "  %o0 = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(0)\n"
	      "  %o1 = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(1)\n"
	      "  %n = f32[2,2,512,512]{3,2,1,0:T(8,128)} fusion(%o0, %o1), kind=kOutput, calls=%qk\n"
	      "  %e = f32[2,2,512,512]{3,2,1,0:T(8,128)} exponential(%n)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %r = f32[2,2,512]{2,1,0:T(8,128)} reduce(%e, %z), dimensions={3}, to_apply=%add\n"
	      "  ROOT %t = (f32[2,2,512]{2,1,0:T(8,128)}, f32[2,2,512,512]{3,2,1,0:T(8,128)}) tuple(%r, %e)\n"
	      "}\n"
	      "ENTRY %main (q: f32[2,512,2,128], k: f32[2,512,2,128]) -> (f32[2,2,512], f32[2,2,512,512]) {\n"
	      "  %q = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(0)\n"
	      "  %k = f32[2,512,2,128]{3,1,2,0:T(8,128)} parameter(1)\n"
	      "  ROOT %f = (f32[2,2,512]{2,1,0:T(8,128)}, f32[2,2,512,512]{3,2,1,0:T(8,128)}) fusion(%q, %k), kind=kOutput, calls=%outer\n"
	      "}\n",
	      "f", &hw, &b, &p);
	seen = 0;
	for (int i = 0; i < p.n_access; i++) {
		const struct sim_plan_access *a = &p.acc[i];
		if (strcmp(a->name, "q") != 0)
			continue;
		seen++;
		assert_int_equal(a->rank, 4);
		for (int d = 0; d < 3; d++)
			assert_true(a->dims[d].grid >= 0);
		assert_int_equal(a->dims[3].grid, -1);
	}
	assert_int_equal(seen, 1);
	sim_plan_free(&p);
	tu_built_free(&b);
}

/* Parses config text and checks it against p, expecting status want; the
 * completed config is left in full and any message in d. */
static void check_config(const struct sim_plan *p, const char *text,
			 enum ts_status want, struct sim_tile_config *full,
			 struct ts_diag *d)
{
	struct sim_tile_config c;
	sim_tile_config_parse(text, &c, d);
	assert_int_equal(sim_plan_check(p, &c, full, d), want);
}

/* ---- config text ------------------------------------------------------------ */

static void test_config_parse_format(void **state)
{
	(void)state;
	struct sim_tile_config c;
	struct ts_diag d = {0};
	const char *t = "output_bounds=12x4x4x3;kernel_bounds=3x1x24x3";
	assert_int_equal(sim_tile_config_parse(t, &c, &d), TS_OK);
	assert_int_equal(c.n_out, 4);
	assert_int_equal(c.n_kernel, 4);
	assert_int_equal(c.out_bounds[0], 12);
	assert_int_equal(c.out_bounds[3], 3);
	assert_int_equal(c.kernel_bounds[2], 24);
	char buf[128];
	assert_int_equal(sim_tile_config_format(&c, buf, sizeof buf), strlen(t));
	assert_string_equal(buf, t);
	/* either part alone, and the empty text (the default config) */
	assert_int_equal(sim_tile_config_parse("kernel_bounds=4x1", &c, &d), TS_OK);
	assert_int_equal(c.n_out, 0);
	assert_int_equal(c.n_kernel, 2);
	sim_tile_config_format(&c, buf, sizeof buf);
	assert_string_equal(buf, "kernel_bounds=4x1");
	assert_int_equal(sim_tile_config_parse("", &c, &d), TS_OK);
	assert_int_equal(c.n_out + c.n_kernel, 0);
	sim_tile_config_format(&c, buf, sizeof buf);
	assert_string_equal(buf, "");
	/* a short buffer still returns the full length */
	sim_tile_config_parse("output_bounds=4", &c, &d);
	assert_int_equal(sim_tile_config_format(&c, buf, 4), 15);
	assert_string_equal(buf, "out");
}

static void expect_parse_error(const char *text, uint32_t col, const char *msg)
{
	struct sim_tile_config c;
	struct ts_diag d = {0};
	assert_int_equal(sim_tile_config_parse(text, &c, &d), TS_ERR_PARSE);
	if (d.line != 1 || d.col != col || strcmp(d.msg, msg) != 0)
		fail_msg("'%s': got %u:%u '%s', want 1:%u '%s'", text, d.line,
			 d.col, d.msg, col, msg);
}

static void test_config_errors(void **state)
{
	(void)state;
	expect_parse_error("output_bounds=12x0x4", 18,
			   "output_bounds: bounds must be at least 1");
	expect_parse_error("outputbounds=1", 1,
			   "expected 'output_bounds=' or 'kernel_bounds='");
	expect_parse_error("output_bounds=12xx4", 18,
			   "output_bounds: expected a positive integer");
	expect_parse_error("output_bounds=", 15,
			   "output_bounds: expected a positive integer");
	expect_parse_error("output_bounds=3,4", 16,
			   "output_bounds: expected 'x', ';' or the end");
	expect_parse_error("output_bounds=1;", 17, "expected a key after ';'");
	expect_parse_error("output_bounds=1;output_bounds=2", 17,
			   "output_bounds: given twice");
	expect_parse_error("kernel_bounds=1x1x1x1x1x1x1x1x1", 31,
			   "kernel_bounds: more than 8 bounds");
	expect_parse_error("output_bounds=99999999999999999999", 15,
			   "output_bounds: bound too large");
	expect_parse_error("output_bounds=2;kernel_bounds=-1", 31,
			   "kernel_bounds: expected a positive integer");
}

/* ---- grids ------------------------------------------------------------------- */

/* TPU.md section 3's examples: physical major-to-minor order, the last k
 * dims divided by the layout's first tile; 1-D arrays by T(1024)... */
static void test_grids(void **state)
{
	(void)state;
	assert_grid("f32[32,12,12,384]{3,0,2,1:T(8,128)}", "12x12x4x3");
	assert_grid("f32[3,3,192,384]{3,2,1,0:T(8,128)}", "3x3x24x3");
	assert_grid("f32[32,1000]{1,0:T(8,128)}", "4x8");
	assert_grid("f32[4096,1000]{0,1:T(8,128)}", "125x32");
	assert_grid("f32[4096]{0:T(1024)}", "4");
	assert_grid("bf16[224,224,3,32]{3,2,1,0:T(4,128)(2,1)}", "224x224x1x1");
	assert_grid("pred[32,4096]{1,0:T(8,128)(4,1)}", "4x32");
	/* no tiles written: T(8,128) on 2-D, next power of two in [256,1024]
	 * on 1-D */
	assert_grid("f32[20,300]", "3x3");
	assert_grid("f32[300]", "1");
	assert_grid("f32[5000]", "5");
	struct sim_tgrid g;
	grid_of("f32[300]", &g);
	assert_int_equal(g.tile[0], 512);
	/* a scalar has no grid; its T(256) tile pads 1 element to 256 */
	grid_of("f32[]{:T(256)}", &g);
	assert_int_equal(g.rank, 0);
	assert_true(g.pad_factor == 256);
	/* bf16 element bits; pred stored as bytes */
	grid_of("pred[32,4096]{1,0:T(8,128)(4,1)}", &g);
	assert_true(g.bits == 8);
}

/* Which tensor the bounds tile: a convolution's output, a reduce's input. */
static void test_target(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build(conv_hlo, &b);
	const struct ir_instr *t = sim_tile_target(tu_kernel(&b, "f"));
	assert_string_equal(t->name, "cv");
	tu_built_free(&b);
	tu_build(reduce_hlo, &b);
	t = sim_tile_target(tu_kernel(&b, "f"));
	assert_string_equal(t->name, "r");
	char buf[128];
	ir_shape_format(sim_tile_space_shape(t), buf, sizeof buf);
	assert_string_equal(buf, "f32[32,26,26,192]{3,0,2,1:T(8,128)}");
	tu_built_free(&b);
}

/* ---- checking configs --------------------------------------------------------- */

/*
 * fusion.191's default and a ragged config. Steps over the combined grid:
 * output 12x12x4x3 and kernel 3x3x24 (the kernel's output-feature dim is
 * the output's): output_bounds=5x7x4x2 -> ceil(12/5) ceil(12/7) 1
 * ceil(3/2) = 3 x 2 x 1 x 2 = 12 output blocks; kernel_bounds=2x3x16x2 ->
 * ceil(3/2) x 1 x ceil(24/16) = 4; 48 steps in all.
 */
static void test_steps_and_shared_dim(void **state)
{
	(void)state;
	struct tu_built b;
	struct sim_plan p;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	plan_of(conv_hlo, "f", &hw, &b, &p);
	struct sim_tile_config full;
	struct ts_diag d = {0};
	check_config(&p, "output_bounds=12x4x4x3;kernel_bounds=3x1x24x3",
		     TS_OK, &full, &d);
	assert_int_equal(sim_plan_steps(&p, &full), 3 * 3);
	check_config(&p, "output_bounds=5x7x4x2;kernel_bounds=2x3x16x2",
		     TS_OK, &full, &d);
	assert_int_equal(sim_plan_steps(&p, &full), 48);
	/* output bounds only: the shared dim follows, the rest default */
	check_config(&p, "output_bounds=6x12x4x1", TS_OK, &full, &d);
	assert_int_equal(full.kernel_bounds[3], 1);
	/* the output-feature dim must agree */
	check_config(&p, "output_bounds=12x4x4x3;kernel_bounds=3x1x24x2",
		     TS_ERR_MISUSE, &full, &d);
	assert_string_equal(d.msg,
			    "f: kernel_bounds[3] = 2 (256 elements) and "
			    "output_bounds[3] = 3 (384 elements) must cover the "
			    "same output features");
	/* ranks and ranges */
	check_config(&p, "output_bounds=12x4x4", TS_ERR_MISUSE, &full, &d);
	assert_string_equal(d.msg, "f: output_bounds has 3 entries, the tile "
				   "grid has 4");
	check_config(&p, "output_bounds=13x4x4x3", TS_ERR_MISUSE, &full, &d);
	assert_string_equal(d.msg, "f: output_bounds[0] = 13 is outside 1..12 "
				   "(the tile grid)");
	sim_plan_free(&p);
	tu_built_free(&b);
}

/* fusion.261: out_bound[0] x 8 == kernel_bound[1] x 128, clipped at 1000. */
static void test_shared_dim_clipped(void **state)
{
	(void)state;
	struct tu_built b;
	struct sim_plan p;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	plan_of(wgrad_hlo, "f", &hw, &b, &p);
	struct sim_tile_config full;
	struct ts_diag d = {0};
	check_config(&p, "output_bounds=16x32;kernel_bounds=4x1",
		     TS_OK, &full, &d);
	check_config(&p, "output_bounds=125x4;kernel_bounds=1x8",
		     TS_OK, &full, &d);
	assert_int_equal(sim_plan_steps(&p, &full), 1 * 8 * 4);
	/* 12 x 8 = 96 features: no whole number of 128-wide kernel tiles */
	check_config(&p, "output_bounds=12x32", TS_ERR_MISUSE, &full, &d);
	assert_string_equal(d.msg, "f: output_bounds[0] = 12 covers no whole "
				   "number of kernel tiles (128 elements each)");
	sim_plan_free(&p);
	tu_built_free(&b);
}

/* ---- default and enumeration ---------------------------------------------------- */

/* Minimum feasible estimate over every candidate config, by brute force. */
struct min_ctx {
	const struct sim_plan *p;
	const struct hw_spec *hw;
	double best;
};

static bool min_cb(const struct sim_tile_config *c, void *ctx)
{
	struct min_ctx *m = ctx;
	struct sim_estimate e;
	sim_plan_estimate(m->p, m->hw, c, &e);
	if (e.feasible && e.time_ns < m->best)
		m->best = e.time_ns;
	return true;
}

/*
 * The default is the model's best: feasible, no candidate config costs
 * less (brute force over the enumeration), no single doubling of a bound
 * makes it cheaper, and it beats the smallest block.
 */
static void test_default_rule(void **state)
{
	(void)state;
	struct tu_built b;
	struct sim_plan p;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	plan_of(conv_hlo, "f", &hw, &b, &p);
	struct sim_estimate def, e;
	struct sim_tile_config dcfg;
	assert_true(sim_plan_default(&p, &hw, &dcfg) > 0);
	sim_plan_estimate(&p, &hw, &dcfg, &def);
	assert_true(def.feasible);
	struct min_ctx m = {.p = &p, .hw = &hw, .best = INFINITY};
	sim_plan_enumerate(&p, 0, min_cb, &m);
	assert_true(def.time_ns == m.best);
	for (int f = 0; f < p.out.rank + p.kern.rank; f++) {
		struct sim_tile_config t = dcfg;
		int64_t *bound = f < p.out.rank ? &t.out_bounds[f]
						: &t.kernel_bounds[f - p.out.rank];
		int64_t n = f < p.out.rank ? p.out.tiles[f]
					   : p.kern.tiles[f - p.out.rank];
		if (f >= p.out.rank && p.kern_shared[f - p.out.rank] >= 0)
			continue;
		if (*bound >= n)
			continue;
		*bound = *bound * 2 < n ? *bound * 2 : n;
		struct sim_tile_config full;
		struct ts_diag d = {0};
		if (sim_plan_check(&p, &t, &full, &d) != TS_OK)
			continue;
		sim_plan_estimate(&p, &hw, &full, &e);
		if (e.feasible && e.time_ns < def.time_ns)
			fail_msg("doubling dim %d beats the default: %.0f < %.0f",
				 f, e.time_ns, def.time_ns);
	}
	struct sim_tile_config full;
	struct ts_diag d = {0};
	check_config(&p, "output_bounds=1x1x1x1;kernel_bounds=1x1x1x1",
		     TS_OK, &full, &d);
	sim_plan_estimate(&p, &hw, &full, &e);
	assert_true(def.time_ns < e.time_ns);
	sim_plan_free(&p);
	tu_built_free(&b);
}

static bool count_cb(const struct sim_tile_config *c, void *ctx)
{
	(void)c;
	(*(int64_t *)ctx)++;
	return true;
}

/* Candidates per dim: every bound up to 16; fusion.191: 12 x 12 x 4 x 3
 * output bounds, 3 x 3 kh, kw and {1,2,3,4,6,8,12,16,24} for Cin/8 = 24. */
static void test_enumerate(void **state)
{
	(void)state;
	struct tu_built b;
	struct sim_plan p;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	plan_of(conv_hlo, "f", &hw, &b, &p);
	int64_t n = 0;
	int64_t want = 12 * 12 * 4 * 3 * 3 * 3 * 9;
	assert_int_equal(sim_plan_enumerate(&p, 0, NULL, NULL), want);
	assert_int_equal(sim_plan_enumerate(&p, 0, count_cb, &n), want);
	assert_int_equal(n, want);
	/* a cap of 4 per dim keeps 1 and the whole dim */
	assert_int_equal(sim_plan_enumerate(&p, 4, NULL, NULL),
			 4 * 4 * 4 * 3 * 3 * 3 * 4);
	sim_plan_free(&p);
	tu_built_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_scatter),
		cmocka_unit_test(test_nested_conv_operands),
		cmocka_unit_test(test_config_parse_format),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_grids),
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_steps_and_shared_dim),
		cmocka_unit_test(test_shared_dim_clipped),
		cmocka_unit_test(test_default_rule),
		cmocka_unit_test(test_enumerate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
