/*
 * test_kernels.c: kernel extraction (sim/kernels.c) on small hand-written
 * modules: which top-level instructions are kernels, their members, inputs,
 * outputs, main op and tiled instruction; loop multiplicities (known,
 * derived and assumed trip counts, nesting), conditional weights,
 * unmodelled ops; and
 * the fusion groups formed from pre-optimization modules.
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

#include "ir.h"
#include "sim.h"
#include "test_util.h"

/* ---- helpers --------------------------------------------------------------- */

static bool has(const struct ir_instr *const *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i]->name, name) == 0)
			return true;
	return false;
}

/* ---- compiled modules ---------------------------------------------------------- */

static const char *compiled =
	"HloModule m, is_scheduled=true\n"
	"%fused_loop (p0: f32[64,128], p1: f32[64,128]) -> f32[64,128] {\n"
	"  %p0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
	"  %p1 = f32[64,128]{1,0:T(8,128)} parameter(1)\n"
	"  ROOT %add = f32[64,128]{1,0:T(8,128)} add(%p0, %p1)\n"
	"}\n"
	"%sum (a: f32[], b: f32[]) -> f32[] {\n"
	"  %a = f32[] parameter(0)\n"
	"  %b = f32[] parameter(1)\n"
	"  ROOT %s = f32[] add(%a, %b)\n"
	"}\n"
	"%fused_reduce (q0: f32[64,128]) -> f32[64] {\n"
	"  %q0 = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
	"  %e = f32[64,128]{1,0:T(8,128)} exponential(%q0)\n"
	"  %z = f32[] constant(0)\n"
	"  ROOT %r = f32[64]{0:T(256)} reduce(%e, %z), dimensions={1}, to_apply=%sum\n"
	"}\n"
	"%fused_conv (c0: f32[8,8,8,16], c1: f32[3,3,16,32], c2: f32[32]) -> f32[8,8,8,32] {\n"
	"  %c0 = f32[8,8,8,16]{3,2,1,0:T(8,128)} parameter(0)\n"
	"  %c1 = f32[3,3,16,32]{3,2,1,0:T(8,128)} parameter(1)\n"
	"  %conv = f32[8,8,8,32]{3,2,1,0:T(8,128)} convolution(%c0, %c1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
	"  %c2 = f32[32]{0:T(256)} parameter(2)\n"
	"  %bias = f32[8,8,8,32]{3,2,1,0:T(8,128)} broadcast(%c2), dimensions={3}\n"
	"  ROOT %out = f32[8,8,8,32]{3,2,1,0:T(8,128)} add(%conv, %bias)\n"
	"}\n"
	"ENTRY %main (x: f32[64,128], y: f32[64,128], i: f32[8,8,8,16], k: f32[3,3,16,32], bb: f32[32]) -> (f32[64], f32[8,8,8,32]) {\n"
	"  %x = f32[64,128]{1,0:T(8,128)} parameter(0)\n"
	"  %y = f32[64,128]{1,0:T(8,128)} parameter(1)\n"
	"  %i = f32[8,8,8,16]{3,2,1,0:T(8,128)} parameter(2)\n"
	"  %k = f32[3,3,16,32]{3,2,1,0:T(8,128)} parameter(3)\n"
	"  %bb = f32[32]{0:T(256)} parameter(4)\n"
	"  %loop = f32[64,128]{1,0:T(8,128)} fusion(%x, %y), kind=kLoop, calls=%fused_loop\n"
	"  %bc = f32[8192]{0:T(1024)} bitcast(%loop)\n"
	"  %tr = f32[128,64]{0,1:T(8,128)} transpose(%loop), dimensions={1,0}\n"
	"  %cp = f32[128,64]{1,0:T(8,128)} copy(%tr)\n"
	"  %red = f32[64]{0:T(256)} fusion(%loop), kind=kLoop, calls=%fused_reduce\n"
	"  %cf = f32[8,8,8,32]{3,2,1,0:T(8,128)} fusion(%i, %k, %bb), kind=kOutput, calls=%fused_conv\n"
	"  %cc = f32[8,8,8,32]{3,2,1,0:T(8,128)} custom-call(%cf), custom_call_target=\"my_op\"\n"
	"  ROOT %t = (f32[64]{0:T(256)}, f32[8,8,8,32]{3,2,1,0:T(8,128)}) tuple(%red, %cc)\n"
	"}\n";

/* Fusions, a copy and a custom call are kernels; parameters, the bitcast,
 * the bitcast-like transpose and the tuple are not. */
static void test_compiled_kernels(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build(compiled, &b);
	ASSERT_NAMES(&b, "loop,cp,red,cf,cc");
	assert_int_equal(b.p.n_unmodelled, 1);
	assert_int_equal(b.p.n_assumed_trip_counts, 0);

	const struct sim_kernel *k = tu_kernel(&b, "loop");
	assert_int_equal(k->kind, SIM_KERNEL_FUSION);
	assert_int_equal(k->main_op, IR_OP_ADD);
	assert_ptr_equal(k->tiled, k->instr); /* elementwise: its result */
	assert_int_equal(k->n_members, 3);    /* p0, p1, add */
	assert_int_equal(k->n_inputs, 2);
	assert_string_equal(k->inputs[1]->name, "y");
	assert_int_equal(k->n_outputs, 1);
	assert_true(k->tunable);              /* 8 x 1 grid of (8,128) tiles */
	assert_near(k->multiplicity, 1.0, 0);
	assert_int_equal(k->loop_depth, 0);

	k = tu_kernel(&b, "cp");
	assert_int_equal(k->kind, SIM_KERNEL_COPY);
	assert_int_equal(k->n_members, 1);
	assert_string_equal(k->inputs[0]->name, "tr");

	/* Reduce-rooted loop fusion: tiles the reduce's input. */
	k = tu_kernel(&b, "red");
	assert_int_equal(k->main_op, IR_OP_REDUCE);
	assert_string_equal(k->tiled->name, "e");

	/* Convolution fusion: tiles the convolution's output. */
	k = tu_kernel(&b, "cf");
	assert_int_equal(k->main_op, IR_OP_CONVOLUTION);
	assert_string_equal(k->tiled->name, "conv");
	assert_int_equal(k->n_inputs, 3);

	k = tu_kernel(&b, "cc");
	assert_int_equal(k->kind, SIM_KERNEL_UNMODELLED);
	assert_false(k->tunable);
	tu_built_free(&b);
}

/* A reshape that keeps every tile in place is free; one that changes the
 * tiled dims is a relayout (copy kernel). */
static void test_reshape_bitcast(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule m\n"
	      "%f (p: f32[16,128]) -> f32[16,128] {\n"
	      "  %p = f32[16,128]{1,0:T(8,128)} parameter(0)\n"
	      "  ROOT %n = f32[16,128]{1,0:T(8,128)} negate(%p)\n"
	      "}\n"
	      "ENTRY %e (x: f32[4,4,128]) -> f32[2048] {\n"
	      "  %x = f32[4,4,128]{2,1,0:T(8,128)} parameter(0)\n"
	      "  %same = f32[16,128]{1,0:T(8,128)} reshape(%x)\n"
	      "  %g = f32[16,128]{1,0:T(8,128)} fusion(%same), kind=kLoop, calls=%f\n"
	      "  %keep = f32[2,8,128]{2,1,0:T(8,128)} reshape(%g)\n"
	      "  ROOT %flat = f32[2048]{0:T(1024)} reshape(%keep)\n"
	      "}\n",
	      &b);
	/* x: 4 x (4 rows padded to 8) x 128; same: 16 x 128: the rows are
	 * packed differently into tiles, so it is a copy. g -> keep: 16 rows
	 * = 2 x 8 rows, both multiples of the 8-row tile, same lanes:
	 * bitcast. keep -> flat: different tiling: copy. */
	ASSERT_NAMES(&b, "same,g,flat");
	assert_int_equal(tu_kernel(&b, "flat")->kind, SIM_KERNEL_COPY);
	tu_built_free(&b);
}

/*
 * Relayouts at the program's result (kernels.c): a 2 x 2 max pool of
 * f16[1,64,256,128] computes f16[1,64,128,64] in its input's order (64 on
 * the lanes, padded to 128: 64 x 128 x 128 x 2 B = 2 MiB), but the
 * result's compact order puts the 128-dim on the lanes (64 on the
 * sublanes, no padding: 1 MiB), so a copy follows, reading 2 MiB and
 * writing 1 MiB. Through an elementwise op the copy follows that op; a
 * pool of f16[1,64,256,256] (128 lanes either way) and a parameter
 * passed through need none. tpuv4-ops profiles show these copies
 * (test_kernels_data.c test_pool_relayouts).
 */
static void test_result_relayout(void **state)
{
	(void)state;
	static const char tmpl[] =
		"HloModule m\n"
		"%%max (x: f16[], y: f16[]) -> f16[] {\n"
		"  %%x = f16[] parameter(0)\n"
		"  %%y = f16[] parameter(1)\n"
		"  ROOT %%z = f16[] maximum(%%x, %%y)\n"
		"}\n"
		"ENTRY %%e (p: f16[1,64,256,%d]) -> (f16[1,64,128,%d], f16[1,64,256,%d]) {\n"
		"  %%p = f16[1,64,256,%d] parameter(0)\n"
		"  %%c = f16[] constant(-inf)\n"
		"  %%rw = f16[1,64,128,%d] reduce-window(%%p, %%c), "
		"window={size=1x1x2x2 stride=1x1x2x2}, to_apply=%%max\n"
		"  %%n = f16[1,64,128,%d] negate(%%rw)\n"
		"  ROOT %%t = (f16[1,64,128,%d], f16[1,64,256,%d]) tuple(%%n, %%p)\n"
		"}\n";
	char text[1024];
	snprintf(text, sizeof text, tmpl, 128, 64, 128, 128, 64, 64, 64, 128);
	struct tu_built b;
	tu_build(text, &b);
	const struct sim_kernel *k = tu_kernel(&b, "n.relayout");
	assert_int_equal(k->kind, SIM_KERNEL_COPY);
	assert_int_equal(k->main_op, IR_OP_COPY);
	assert_false(k->tunable); /* no kernel of the user's module */
	assert_near(k->work.bytes_read, 2097152.0, 0);
	assert_near(k->work.bytes_written, 1048576.0, 0);
	/* the last kernel, and the only copy (p passes through as it is) */
	assert_ptr_equal(k, &b.p.kernels[b.p.n_kernels - 1]);
	for (int i = 0; i < b.p.n_kernels - 1; i++)
		assert_true(b.p.kernels[i].kind != SIM_KERNEL_COPY);
	tu_built_free(&b);

	snprintf(text, sizeof text, tmpl, 256, 128, 256, 256, 128, 128, 128, 256);
	tu_build(text, &b);
	for (int i = 0; i < b.p.n_kernels; i++)
		assert_true(b.p.kernels[i].kind != SIM_KERNEL_COPY);
	tu_built_free(&b);

	/* the same pool as a fusion (what `tpusim fuse` writes): the order is
	 * read through the fused computation to its parameter's operand */
	tu_build("HloModule f\n"
		 "%max (x: f16[], y: f16[]) -> f16[] {\n"
		 "  %x = f16[] parameter(0)\n"
		 "  %y = f16[] parameter(1)\n"
		 "  ROOT %z = f16[] maximum(%x, %y)\n"
		 "}\n"
		 "%pool (a: f16[1,64,256,128]) -> f16[1,64,128,64] {\n"
		 "  %a = f16[1,64,256,128] parameter(0)\n"
		 "  %c = f16[] constant(-inf)\n"
		 "  %rw = f16[1,64,128,64] reduce-window(%a, %c), "
		 "window={size=1x1x2x2 stride=1x1x2x2}, to_apply=%max\n"
		 "  ROOT %n = f16[1,64,128,64] negate(%rw)\n"
		 "}\n"
		 "ENTRY %e (p: f16[1,64,256,128]) -> f16[1,64,128,64] {\n"
		 "  %p = f16[1,64,256,128] parameter(0)\n"
		 "  ROOT %f = f16[1,64,128,64] fusion(%p), kind=kLoop, calls=%pool\n"
		 "}\n",
		 &b);
	ASSERT_NAMES(&b, "f,f.relayout");
	k = tu_kernel(&b, "f.relayout");
	assert_near(k->work.bytes_read, 2097152.0, 0);
	assert_near(k->work.bytes_written, 1048576.0, 0);
	tu_built_free(&b);
}

/* ---- loops and conditionals ---------------------------------------------------- */

static const char *while_known =
	"HloModule w\n"
	"%cond (s: (s32[], f32[8,128])) -> pred[] {\n"
	"  %s = (s32[], f32[8,128]) parameter(0)\n"
	"  %i = s32[] get-tuple-element(%s), index=0\n"
	"  %n = s32[] constant(4)\n"
	"  ROOT %lt = pred[] compare(%i, %n), direction=LT\n"
	"}\n"
	"%fb (a: f32[8,128]) -> f32[8,128] {\n"
	"  %a = f32[8,128] parameter(0)\n"
	"  ROOT %t = f32[8,128] tanh(%a)\n"
	"}\n"
	"%body (s: (s32[], f32[8,128])) -> (s32[], f32[8,128]) {\n"
	"  %s = (s32[], f32[8,128]) parameter(0)\n"
	"  %i = s32[] get-tuple-element(%s), index=0\n"
	"  %v = f32[8,128] get-tuple-element(%s), index=1\n"
	"  %one = s32[] constant(1)\n"
	"  %i1 = s32[] add(%i, %one)\n"
	"  %v1 = f32[8,128] fusion(%v), kind=kLoop, calls=%fb\n"
	"  ROOT %r = (s32[], f32[8,128]) tuple(%i1, %v1)\n"
	"}\n"
	"ENTRY %e (x: f32[8,128]) -> (s32[], f32[8,128]) {\n"
	"  %x = f32[8,128] parameter(0)\n"
	"  %z = s32[] constant(0)\n"
	"  %t0 = (s32[], f32[8,128]) tuple(%z, %x)\n"
	"  ROOT %w = (s32[], f32[8,128]) while(%t0), condition=%cond, body=%body, "
	"backend_config={\"known_trip_count\":{\"n\":\"4\"}}\n"
	"}\n";

/* known_trip_count=4: the body runs 4 times, the condition 5 (the final
 * test); both one loop deep; nothing assumed. */
static void test_while_known(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build(while_known, &b);
	ASSERT_NAMES(&b, "lt,i1,v1");
	assert_near(tu_kernel(&b, "v1")->multiplicity, 4.0, 0);
	assert_near(tu_kernel(&b, "i1")->multiplicity, 4.0, 0);
	assert_near(tu_kernel(&b, "lt")->multiplicity, 5.0, 0);
	assert_int_equal(tu_kernel(&b, "v1")->loop_depth, 1);
	assert_false(tu_kernel(&b, "v1")->trip_count_assumed);
	assert_int_equal(b.p.n_assumed_trip_counts, 0);
	tu_built_free(&b);
}

/* while_known without its known_trip_count, with the bound's constant
 * replaced by `bound` (NULL: kept); the caller frees it. */
static char *while_unknown(const char *bound)
{
	const char *cfg = "backend_config={\"known_trip_count\":{\"n\":\"4\"}}";
	char *text = malloc(strlen(while_known) + 64);
	assert_non_null(text);
	strcpy(text, while_known);
	char *at = strstr(text, cfg);
	assert_non_null(at);
	memmove(at - 2, at + strlen(cfg), strlen(at + strlen(cfg)) + 1);
	if (bound) {
		const char *old = "%n = s32[] constant(4)";
		at = strstr(text, old);
		assert_non_null(at);
		size_t tail = strlen(at + strlen(old)) + 1;
		memmove(at + strlen(bound), at + strlen(old), tail);
		memcpy(at, bound, strlen(bound));
	}
	return text;
}

/* Without known_trip_count the count comes from the induction variable:
 * i = 0, i + 1 per run, i < 4: 4 runs, as known_trip_count=4 said. */
static void test_while_derived(void **state)
{
	(void)state;
	char *text = while_unknown(NULL);
	struct tu_built b;
	tu_build(text, &b);
	assert_near(tu_kernel(&b, "v1")->multiplicity, 4.0, 0);
	assert_near(tu_kernel(&b, "lt")->multiplicity, 5.0, 0);
	assert_false(tu_kernel(&b, "v1")->trip_count_assumed);
	assert_int_equal(b.p.n_assumed_trip_counts, 0);
	assert_int_equal(b.p.n_loops, 1);
	assert_string_equal(b.p.loops[0].instr->name, "w");
	assert_int_equal(b.p.loops[0].trip_count, 4);
	assert_int_equal(b.p.loops[0].source, SIM_TRIP_DERIVED);
	tu_built_free(&b);
	free(text);
}

/* text with its first `old` replaced by `new`; the caller frees it. */
static char *replaced(const char *text, const char *old, const char *new)
{
	const char *at = strstr(text, old);
	assert_non_null(at);
	char *out = malloc(strlen(text) + strlen(new) + 1);
	assert_non_null(out);
	sprintf(out, "%.*s%s%s", (int)(at - text), text, new, at + strlen(old));
	return out;
}

/* A compiled module's loop: copy insertion gave the initial value copies
 * of the constant (copy(copy(constant))) and the body a copy of the
 * induction variable, which the count looks through. */
static void test_while_derived_copied_init(void **state)
{
	(void)state;
	char *text = while_unknown(NULL);
	char *init = replaced(text, "%z = s32[] constant(0)",
			      "%z0 = s32[] constant(0)\n"
			      "  %z1 = s32[] copy(%z0)\n"
			      "  %z = s32[] copy(%z1)");
	char *copied = replaced(init, "%i1 = s32[] add(%i, %one)",
				"%ic = s32[] copy(%i)\n"
				"  %i1 = s32[] add(%ic, %one)");
	free(init);
	struct tu_built b;
	tu_build(copied, &b);
	assert_int_equal(b.p.n_loops, 1);
	assert_int_equal(b.p.loops[0].trip_count, 4);
	assert_int_equal(b.p.loops[0].source, SIM_TRIP_DERIVED);
	assert_near(tu_kernel(&b, "v1")->multiplicity, 4.0, 0);
	tu_built_free(&b);
	free(copied);
	free(text);
}

/* A bound that is no constant: --trip-count (opts) or 1, and flagged. */
static void test_while_assumed(void **state)
{
	(void)state;
	char *text = while_unknown("%n = s32[] negate(%i)");
	struct tu_built b;
	tu_build(text, &b);
	assert_near(tu_kernel(&b, "v1")->multiplicity, 1.0, 0);
	assert_true(tu_kernel(&b, "v1")->trip_count_assumed);
	assert_false(tu_kernel(&b, "v1")->tunable); /* one (8,128) tile */
	assert_int_equal(b.p.n_assumed_trip_counts, 1);
	assert_int_equal(b.p.loops[0].source, SIM_TRIP_ASSUMED);
	tu_built_free(&b);

	struct sim_program_opts opts = {.default_trip_count = 7};
	tu_build_file("k.hlo", text, strlen(text), &opts, &b);
	assert_near(tu_kernel(&b, "v1")->multiplicity, 7.0, 0);
	assert_near(tu_kernel(&b, "lt")->multiplicity, 8.0, 0);
	assert_int_equal(b.p.loops[0].trip_count, 7);
	tu_built_free(&b);
	free(text);
}

/*
 * The count of a scalar loop x = v0, x += c while `x dir n` (or `n dir x`
 * when swapped), -1 when it is not derived. Counted by hand in the table
 * of test_trip_counts.
 */
static int64_t scalar_loop(int64_t v0, int64_t c, const char *dir, int64_t n,
			   bool swapped)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "HloModule s\n"
		 "b {\n  x = s32[] parameter(0)\n  c = s32[] constant(%lld)\n"
		 "  ROOT y = s32[] add(x, c)\n}\n"
		 "t {\n  x = s32[] parameter(0)\n  n = s32[] constant(%lld)\n"
		 "  ROOT p = pred[] compare(%s), direction=%s\n}\n"
		 "ENTRY e {\n  v = s32[] constant(%lld)\n"
		 "  ROOT w = s32[] while(v), condition=t, body=b\n}\n",
		 (long long)c, (long long)n, swapped ? "n, x" : "x, n", dir,
		 (long long)v0);
	struct tu_built b;
	tu_build(text, &b);
	int64_t trip = -1;
	const struct ir_instr *w = b.m[0]->entry->root;
	if (!sim_while_trip_count(w, &trip))
		trip = -1;
	tu_built_free(&b);
	return trip;
}

static void test_trip_counts(void **state)
{
	(void)state;
	/* x = 0, 1, ..., 95 < 96 */
	assert_int_equal(scalar_loop(0, 1, "LT", 96, false), 96);
	/* 5 > x is x < 5: 0..4 */
	assert_int_equal(scalar_loop(0, 1, "GT", 5, true), 5);
	/* 0, 2, 4, 6, 8, 10 <= 10 */
	assert_int_equal(scalar_loop(0, 2, "LE", 10, false), 6);
	/* 10, 7, 4, 1 >= 0; -2 stops */
	assert_int_equal(scalar_loop(10, -3, "GE", 0, false), 4);
	/* 10, 7, 4, 1 > 0 (-2 stops) */
	assert_int_equal(scalar_loop(10, -3, "GT", 0, false), 4);
	/* 0, 3, 6, 9 != 12 */
	assert_int_equal(scalar_loop(0, 3, "NE", 12, false), 4);
	/* 0, 3, ... never equals 10: not derived */
	assert_int_equal(scalar_loop(0, 3, "NE", 10, false), -1);
	/* a step away from the bound never ends: not derived */
	assert_int_equal(scalar_loop(0, -1, "LT", 5, false), -1);
	/* false at the start: the body never runs, whatever the step */
	assert_int_equal(scalar_loop(10, -1, "LT", 5, false), 0);
	/* ceil((7 - -5) / 4) = 3: -5, -1, 3 */
	assert_int_equal(scalar_loop(-5, 4, "LT", 7, false), 3);
}

/* ---- async pairs ------------------------------------------------------------- */

/* Estimates b's program on generation gen's spec, loaded into *hw; skips
 * the test (b freed) where the spec is not found. */
static void estimate_or_skip(struct tu_built *b, const char *gen,
			     struct hw_spec *hw)
{
	if (!tu_load_spec(gen, hw)) {
		tu_built_free(b);
		skip();
	}
	struct ts_diag d = {0};
	assert_int_equal(sim_program_estimate(&b->p, hw, &d), TS_OK);
}

static const char *async_copy =
	"HloModule a, is_scheduled=true\n"
	"f {\n  p = f32[1024,1024] parameter(0)\n"
	"  ROOT e = f32[1024,1024] exponential(p)\n}\n"
	"ENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
	"  y = f32[4096,1024] parameter(1)\n"
	"  cs = (f32[4096,1024], f32[4096,1024], u32[]) copy-start(y)\n"
	"  k = f32[1024,1024] fusion(x), kind=kLoop, calls=f\n"
	"  cd = f32[4096,1024] copy-done(cs)\n"
	"  s = (f32[4096,1024], f32[4096,1024], u32[]) copy-start(cd)\n"
	"  d = f32[4096,1024] copy-done(s)\n"
	"  ROOT t = (f32[1024,1024], f32[4096,1024]) tuple(k, d)\n}\n";

/*
 * copy-start ... copy-done: the copy (dest f32[4096,1024], 16.8 MB read
 * and written, not the whole tuple) runs beside the fusion scheduled
 * between, which hides min(copy, fusion) of it; the second pair has
 * nothing between and hides nothing (it starts after the first's done:
 * nothing queued). Program time = sum - hidden.
 */
static void test_async_overlap(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build(async_copy, &b);
	ASSERT_NAMES(&b, "cs,k,s");
	assert_int_equal(b.p.n_async, 2);
	const struct sim_async *a = &b.p.async[0];
	assert_string_equal(a->start->name, "cs");
	assert_string_equal(a->done->name, "cd");
	assert_int_equal(a->first, 0);
	assert_int_equal(a->n, 1);
	assert_int_equal(a->between, 1);
	assert_int_equal(a->n_between, 1);
	assert_int_equal(b.p.async[1].n_between, 0);
	const struct sim_kernel *cs = tu_kernel(&b, "cs");
	assert_true(cs->async_work);
	assert_int_equal(cs->main_op, IR_OP_COPY);
	assert_near(cs->work.bytes_written, 4096.0 * 1024 * 4, 0);

	struct hw_spec hw;
	estimate_or_skip(&b, "v3", &hw);
	double tc = tu_kernel(&b, "cs")->est.time_ns;
	double tk = tu_kernel(&b, "k")->est.time_ns;
	double ts = tu_kernel(&b, "s")->est.time_ns;
	assert_true(tc > 0 && tk > 0 && ts > 0);
	double hidden = tc < tk ? tc : tk;
	assert_near(b.p.async[0].async_ns, tc, 0);
	assert_near(b.p.async[0].hidden_ns, hidden, 1e-12 * tc);
	assert_near(b.p.async[1].hidden_ns, 0.0, 0);
	assert_near(b.p.total_ns, tc + tk + ts - hidden, 1e-9 * (tc + tk + ts));
	tu_built_free(&b);
}

/* XLA's async collective fusion spreading one all-gather (channel 5) over
 * a chain: a start fusion (root custom-call AsyncCollectiveStart), a fusion
 * between holding a clone of it beside a dot, the chain's buffers passing
 * through, and a done (AsyncCollectiveDone). MID's body is also given alone,
 * with no chain around it. */
#define CHAIN_AG "bf16[1,16384,1024]{2,1,0:T(8,128)(2,1)} all-gather(p0), " \
		 "channel_id=5, replica_groups=[1,4]<=[4], dimensions={1}, "   \
		 "use_global_device_ids=true\n"
#define CHAIN_IN "bf16[1,4096,1024]{2,1,0:T(8,128)(2,1)}"
#define CHAIN_OUT "bf16[1,16384,1024]{2,1,0:T(8,128)(2,1)}"
#define CHAIN_MID                                                              \
	"mid_c {\n  p0 = " CHAIN_IN " parameter(0)\n  p1 = " CHAIN_OUT         \
	" parameter(1)\n  x = bf16[512,1024]{1,0:T(8,128)(2,1)} parameter(2)\n" \
	"  w = bf16[1024,1024]{1,0:T(8,128)(2,1)} parameter(3)\n"              \
	"  d = bf16[512,1024]{1,0:T(8,128)(2,1)} dot(x, w), "                  \
	"lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"                 \
	"  ag = " CHAIN_AG "  ROOT t = (bf16[512,1024]{1,0:T(8,128)(2,1)}, "   \
	CHAIN_IN ", " CHAIN_OUT ") tuple(d, p0, ag)\n}\n"
#define CHAIN_MID_SHAPE                                                        \
	"(bf16[512,1024]{1,0:T(8,128)(2,1)}, " CHAIN_IN ", " CHAIN_OUT ")"
#define CHAIN_PARAMS                                                           \
	"  a = " CHAIN_IN " parameter(0)\n"                                     \
	"  x = bf16[512,1024]{1,0:T(8,128)(2,1)} parameter(1)\n"               \
	"  w = bf16[1024,1024]{1,0:T(8,128)(2,1)} parameter(2)\n"

static const char *collective_chain =
	"HloModule c, num_partitions=4\n"
	"start_c {\n  p0 = " CHAIN_IN " parameter(0)\n  ag = " CHAIN_AG
	"  ROOT cc = (" CHAIN_IN ", " CHAIN_OUT ") custom-call(ag), "
	"custom_call_target=\"AsyncCollectiveStart\"\n}\n" CHAIN_MID
	"done_c {\n  p0 = " CHAIN_IN " parameter(0)\n  p1 = " CHAIN_OUT
	" parameter(1)\n  ag = " CHAIN_AG "  ROOT cc = " CHAIN_OUT
	" custom-call(p0, p1, ag), custom_call_target=\"AsyncCollectiveDone\"\n}\n"
	"ENTRY e {\n" CHAIN_PARAMS
	"  start = (" CHAIN_IN ", " CHAIN_OUT ") fusion(a), kind=kCustom, "
	"calls=start_c\n"
	"  s0 = " CHAIN_IN " get-tuple-element(start), index=0\n"
	"  s1 = " CHAIN_OUT " get-tuple-element(start), index=1\n"
	"  mid = " CHAIN_MID_SHAPE " fusion(s0, s1, x, w), kind=kOutput, "
	"calls=mid_c\n"
	"  m0 = bf16[512,1024]{1,0:T(8,128)(2,1)} get-tuple-element(mid), "
	"index=0\n"
	"  m1 = " CHAIN_IN " get-tuple-element(mid), index=1\n"
	"  m2 = " CHAIN_OUT " get-tuple-element(mid), index=2\n"
	"  done = " CHAIN_OUT " fusion(m1, m2), kind=kCustom, calls=done_c\n"
	"  ROOT r = (bf16[512,1024]{1,0:T(8,128)(2,1)}, " CHAIN_OUT
	") tuple(m0, done)\n}\n";

static const char *chain_parts =
	"HloModule p, num_partitions=4\n" CHAIN_MID
	"ENTRY e {\n" CHAIN_PARAMS "  b = " CHAIN_OUT " parameter(3)\n"
	"  ag = " CHAIN_OUT " all-gather(a), channel_id=5, "
	"replica_groups=[1,4]<=[4], dimensions={1}, use_global_device_ids=true\n"
	"  mid = " CHAIN_MID_SHAPE " fusion(a, b, x, w), kind=kOutput, "
	"calls=mid_c\n"
	"  ROOT r = (" CHAIN_OUT ", " CHAIN_MID_SHAPE ") tuple(ag, mid)\n}\n";

/*
 * The chain's all-gather moves once: the start is a collective kernel
 * costed as the all-gather alone, its async work up to the done (which
 * is free); the fusion between costs its dot, not the ICI time again
 * (alone, beside no chain, it is max(dot, launch + ICI)), and hides its
 * time of the start's. Program = start + mid - min(start, mid).
 */
static void test_collective_chain(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	struct tu_built b, alone;
	tu_build(collective_chain, &b);
	tu_build(chain_parts, &alone);
	ASSERT_NAMES(&b, "start,mid");
	assert_int_equal(b.p.n_async, 1);
	assert_string_equal(b.p.async[0].start->name, "start");
	assert_string_equal(b.p.async[0].done->name, "done");
	assert_int_equal(b.p.async[0].n_between, 1);
	const struct sim_kernel *start = tu_kernel(&b, "start");
	assert_int_equal(start->kind, SIM_KERNEL_COLLECTIVE);
	assert_true(start->async_work);
	assert_true(tu_kernel(&b, "mid")->chained);
	assert_false(tu_kernel(&alone, "mid")->chained);

	struct ts_diag d = {0};
	assert_int_equal(sim_program_estimate(&b.p, &hw, &d), TS_OK);
	assert_int_equal(sim_program_estimate(&alone.p, &hw, &d), TS_OK);
	double ts = start->est.time_ns;
	double tm = tu_kernel(&b, "mid")->est.time_ns;
	double ag = tu_kernel(&alone, "ag")->est.time_ns;
	double mid_alone = tu_kernel(&alone, "mid")->est.time_ns;
	/* alone, the all-gather is the program's first kernel and holds its
	 * start; the async start is not the TensorCore's first */
	assert_true(tu_kernel(&alone, "ag")->starts_program);
	assert_false(start->starts_program);
	assert_near(ts + hw.program_overhead_ns, ag, 0);
	/* the all-gather (33.6 MB over 4 devices) is ~40x the dot's time:
	 * alone, the fusion between is the collective's launch + ICI */
	assert_true(tm < ag / 10);
	assert_true(mid_alone >= ag - hw.kernel_overhead_ns - hw.program_overhead_ns);
	assert_near(b.p.total_ns, ts + tm - fmin(ts, tm), 1e-9 * ts);
	tu_built_free(&alone);
	tu_built_free(&b);
}

/*
 * Async transfers are DMAs: a slice-start of a quarter of an HBM array into
 * VMEM (bf16[256,512]: 262,144 bytes read from HBM, none written) and a
 * copy-start from HBM to HBM (f32[1024,1024]: 4 MiB read and 4 MiB
 * written) each take one DMA latency plus the bytes at HBM bandwidth
 * (hbm.dma_latency_ns, hw_spec_hbm_bw), with no tile grid and no warning
 * (before, the slice-start had no grid, "a tuple", and was costed by its
 * roofline with a launch). The fusion between the slice-start and its
 * done hides it: the program is the sum less min(slice, fusion).
 */
static void test_async_dma(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule dma, is_scheduled=true\n"
		 "f {\n  p = f32[1024,1024] parameter(0)\n"
		 "  ROOT e = f32[1024,1024] exponential(p)\n}\n"
		 "ENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
		 "  y = bf16[1024,512]{1,0:T(8,128)(2,1)} parameter(1)\n"
		 "  ss = ((bf16[1024,512]{1,0:T(8,128)(2,1)}), "
		 "bf16[256,512]{1,0:T(8,128)(2,1)S(1)}, s32[]{:S(2)}) "
		 "slice-start(y), slice={[0:256], [0:512]}\n"
		 "  k = f32[1024,1024] fusion(x), kind=kLoop, calls=f\n"
		 "  sd = bf16[256,512]{1,0:T(8,128)(2,1)S(1)} slice-done(ss)\n"
		 "  cs = (f32[1024,1024], f32[1024,1024], u32[]) copy-start(x)\n"
		 "  cd = f32[1024,1024] copy-done(cs)\n"
		 "  ROOT t = (f32[1024,1024], bf16[256,512], f32[1024,1024]) "
		 "tuple(k, sd, cd)\n}\n",
		 &b);
	ASSERT_NAMES(&b, "ss,k,cs");
	const struct sim_kernel *ss = tu_kernel(&b, "ss");
	assert_true(ss->dma);
	assert_false(ss->tunable);
	assert_int_equal(ss->main_op, IR_OP_SLICE);
	assert_near(ss->work.bytes_read, 262144.0, 0);
	assert_near(ss->work.bytes_written, 0.0, 0);
	const struct sim_kernel *cs = tu_kernel(&b, "cs");
	assert_true(cs->dma);
	assert_near(cs->work.bytes_read + cs->work.bytes_written, 8388608.0, 0);

	struct hw_spec hw;
	estimate_or_skip(&b, "v5e", &hw);
	double bpns = hw_spec_hbm_bw(&hw) * 1e-9;
	assert_false(ss->est.untiled);
	assert_int_equal(ss->est.bound, HW_UNIT_HBM);
	/* the same few doubles in another order: 1e-9 relative */
	assert_near(ss->est.time_ns, hw.dma_latency_ns + 262144.0 / bpns,
		    1e-9 * ss->est.time_ns);
	assert_near(cs->est.time_ns, hw.dma_latency_ns + 8388608.0 / bpns,
		    1e-9 * cs->est.time_ns);
	double tk = tu_kernel(&b, "k")->est.time_ns;
	double hidden = ss->est.time_ns < tk ? ss->est.time_ns : tk;
	assert_near(b.p.async[0].hidden_ns, hidden, 1e-12 * tk);
	assert_near(b.p.total_ns, ss->est.time_ns + tk + cs->est.time_ns - hidden,
		    1e-9 * b.p.total_ns);
	tu_built_free(&b);
}

/*
 * Host offload: a copy-start (destination, source, context) of
 * f32[1024,1024] (4 MiB) from HBM into host memory (S(5)) and one back
 * cross PCIe: each takes one DMA latency plus
 * the 4,194,304 bytes at the chip's PCIe rate, per device (v4: 1.6e10
 * bytes/s, megacore: one device a chip; v3: 1.5e10 shared by 2 cores),
 * far slower than the HBM rate a copy within HBM gets (test_async_dma).
 * An async dynamic-update-slice of one f32[1,1024,1024] layer (4 MiB) into
 * a host buffer of 8 moves that layer, not the buffer: the same time.
 */
static void test_host_offload(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule offload, is_scheduled=true\n"
		 "ENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
		 "  cs = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024], u32[]) "
		 "copy-start(x)\n"
		 "  cd = f32[1024,1024]{1,0:S(5)} copy-done(cs)\n"
		 "  bs = (f32[1024,1024], f32[1024,1024]{1,0:S(5)}, u32[]) "
		 "copy-start(cd)\n"
		 "  bd = f32[1024,1024] copy-done(bs)\n"
		 "  h = f32[8,1024,1024]{2,1,0:S(5)} parameter(1)\n"
		 "  l = f32[1,1024,1024] reshape(bd)\n"
		 "  i = s32[] parameter(2)\n"
		 "  z = s32[] constant(0)\n"
		 "  us = ((f32[8,1024,1024]{2,1,0:S(5)}, f32[1,1024,1024], s32[], "
		 "s32[], s32[]), f32[8,1024,1024]{2,1,0:S(5)}, u32[]) "
		 "dynamic-update-slice-start(h, l, i, z, z)\n"
		 "  ud = f32[8,1024,1024]{2,1,0:S(5)} dynamic-update-slice-done(us)\n"
		 "  ROOT t = (f32[1024,1024], f32[8,1024,1024]{2,1,0:S(5)}) "
		 "tuple(bd, ud)\n}\n",
		 &b);
	ASSERT_NAMES(&b, "cs,bs,us");
	static const struct {
		const char *gen;
		double pcie_per_device; /* bytes/s */
	} gens[] = {{"v4", 1.6e10}, {"v3", 1.5e10 / 2}};
	for (int g = 0; g < 2; g++) {
		struct hw_spec hw;
		estimate_or_skip(&b, gens[g].gen, &hw);
		double want = hw.dma_latency_ns +
			      4194304.0 / (gens[g].pcie_per_device * 1e-9);
		static const char *const dmas[] = {"cs", "bs", "us"};
		for (int k = 0; k < 3; k++) {
			const struct sim_kernel *t = tu_kernel(&b, dmas[k]);
			assert_true(t->dma);
			assert_near(t->est.time_ns, want, 1e-9 * want);
		}
	}
	tu_built_free(&b);
}

/*
 * Transfers in flight together on the timeline (program.c): two copies to
 * host memory and one from it, all started before the fusion k and done
 * after it. The PCIe link carries one transfer each way at a time: the
 * second copy to host waits for the first (queued T, each taking T), the
 * copy from host runs beside them. The TensorCore waits once, at the
 * dones, for the last transfer: total = max(k, 2 T). (Each pair hiding
 * min(T, k) of its own would give k + 3 (T - k).)
 */
static void test_link_queues(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule q, is_scheduled=true\n"
		 "f {\n  p = f32[256,1024] parameter(0)\n"
		 "  ROOT e = f32[256,1024] exponential(p)\n}\n"
		 "ENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
		 "  y = f32[1024,1024] parameter(1)\n"
		 "  h = f32[1024,1024]{1,0:S(5)} parameter(2)\n"
		 "  v = f32[256,1024] parameter(3)\n"
		 "  o1 = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024], u32[]) "
		 "copy-start(x)\n"
		 "  o2 = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024], u32[]) "
		 "copy-start(y)\n"
		 "  i1 = (f32[1024,1024], f32[1024,1024]{1,0:S(5)}, u32[]) "
		 "copy-start(h)\n"
		 "  k = f32[256,1024] fusion(v), kind=kLoop, calls=f\n"
		 "  d1 = f32[1024,1024]{1,0:S(5)} copy-done(o1)\n"
		 "  d2 = f32[1024,1024]{1,0:S(5)} copy-done(o2)\n"
		 "  d3 = f32[1024,1024] copy-done(i1)\n"
		 "  ROOT t = (f32[256,1024], f32[1024,1024]{1,0:S(5)}, "
		 "f32[1024,1024]{1,0:S(5)}, f32[1024,1024]) tuple(k, d1, d2, d3)\n}\n",
		 &b);
	ASSERT_NAMES(&b, "o1,o2,i1,k");
	assert_int_equal(b.p.n_async, 3);
	struct hw_spec hw;
	estimate_or_skip(&b, "v4", &hw);
	/* 4 MiB over v4's PCIe, 1.6e10 B/s per chip (one device) */
	double T = hw.dma_latency_ns + 4194304.0 / 16.0;
	double tk = tu_kernel(&b, "k")->est.time_ns;
	assert_near(tu_kernel(&b, "o1")->est.time_ns, T, 1e-9 * T);
	assert_near(tu_kernel(&b, "i1")->est.time_ns, T, 1e-9 * T);
	assert_true(tk > 0 && tk < T); /* the waits show */
	assert_near(b.p.async[0].queued_ns, 0, 0);
	assert_near(b.p.async[1].queued_ns, T, 1e-9 * T);
	assert_near(b.p.async[2].queued_ns, 0, 0);
	assert_near(b.p.total_ns, 2 * T, 1e-9 * T);
	tu_built_free(&b);
}

/*
 * Collectives in flight together (program.c): two all-reduces over the
 * same 4 devices share the chip's ICI links and take turns (queued C,
 * each taking C); two collective-permutes, each one way along one link,
 * run at once. Nothing runs between the starts and the dones: total =
 * 2 C + P (a wait per pair would give 2 C + 2 P).
 */
static void test_collective_queues(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule cq, is_scheduled=true\n"
		 "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		 "  ROOT s = f32[] add(a, b)\n}\n"
		 "ENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
		 "  y = f32[1024,1024] parameter(1)\n"
		 "  r1 = f32[1024,1024] all-reduce-start(x), "
		 "replica_groups={{0,1,2,3}}, to_apply=add\n"
		 "  r2 = f32[1024,1024] all-reduce-start(y), "
		 "replica_groups={{0,1,2,3}}, to_apply=add\n"
		 "  d1 = f32[1024,1024] all-reduce-done(r1)\n"
		 "  d2 = f32[1024,1024] all-reduce-done(r2)\n"
		 "  p1 = (f32[1024,1024], f32[1024,1024], u32[], u32[]) "
		 "collective-permute-start(d1), "
		 "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
		 "  p2 = (f32[1024,1024], f32[1024,1024], u32[], u32[]) "
		 "collective-permute-start(d2), "
		 "source_target_pairs={{1,0},{2,1},{3,2},{0,3}}\n"
		 "  e1 = f32[1024,1024] collective-permute-done(p1)\n"
		 "  e2 = f32[1024,1024] collective-permute-done(p2)\n"
		 "  ROOT t = (f32[1024,1024], f32[1024,1024]) tuple(e1, e2)\n}\n",
		 &b);
	ASSERT_NAMES(&b, "r1,r2,p1,p2");
	assert_int_equal(b.p.n_async, 4);
	struct hw_spec hw;
	estimate_or_skip(&b, "v4", &hw);
	double C = tu_kernel(&b, "r1")->est.time_ns;
	double P = tu_kernel(&b, "p1")->est.time_ns;
	assert_true(C > 0 && P > 0);
	assert_near(tu_kernel(&b, "r2")->est.time_ns, C, 0);
	assert_near(tu_kernel(&b, "p2")->est.time_ns, P, 0);
	assert_near(b.p.async[1].queued_ns, C, 1e-9 * C);
	assert_near(b.p.async[3].queued_ns, 0, 0);
	assert_near(b.p.total_ns, 2 * C + P, 1e-9 * (C + P));
	tu_built_free(&b);
}

/* A while of 3 inside a while of 4: the inner body runs 12 times. */
static void test_while_nested(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule n\n"
	      "%c (s: f32[8,128]) -> pred[] {\n"
	      "  %s = f32[8,128] parameter(0)\n"
	      "  ROOT %p = pred[] constant(true)\n"
	      "}\n"
	      "%inner (s: f32[8,128]) -> f32[8,128] {\n"
	      "  %s = f32[8,128] parameter(0)\n"
	      "  ROOT %ex = f32[8,128] exponential(%s)\n"
	      "}\n"
	      "%fz (s: f32[8,128]) -> f32[8,128] {\n"
	      "  %s = f32[8,128] parameter(0)\n"
	      "  ROOT %l = f32[8,128] log(%s)\n"
	      "}\n"
	      "%outer (s: f32[8,128]) -> f32[8,128] {\n"
	      "  %s = f32[8,128] parameter(0)\n"
	      "  %ng = f32[8,128] negate(%s)\n"
	      "  ROOT %w3 = f32[8,128] while(%ng), condition=%c, body=%inner, "
	      "backend_config={\"known_trip_count\":{\"n\":\"3\"}}\n"
	      "}\n"
	      "ENTRY %e (x: f32[8,128]) -> f32[8,128] {\n"
	      "  %x = f32[8,128] parameter(0)\n"
	      "  %f = f32[8,128] fusion(%x), kind=kLoop, calls=%fz\n"
	      "  ROOT %w4 = f32[8,128] while(%f), condition=%c, body=%outer, "
	      "backend_config={\"known_trip_count\":{\"n\":\"4\"}}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "f,ng,ex");
	assert_near(tu_kernel(&b, "f")->multiplicity, 1.0, 0);
	assert_near(tu_kernel(&b, "ng")->multiplicity, 4.0, 0);
	assert_near(tu_kernel(&b, "ex")->multiplicity, 12.0, 0);
	assert_int_equal(tu_kernel(&b, "ex")->loop_depth, 2);
	tu_built_free(&b);
}

/* Each of n branches is weighted 1/n (expected time, uniform branches). */
static void test_conditional(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule c\n"
	      "%fu (a: f32[8,128]) -> f32[8,128] {\n"
	      "  %a = f32[8,128] parameter(0)\n"
	      "  ROOT %l = f32[8,128] log(%a)\n"
	      "}\n"
	      "%b0 (a: f32[8,128]) -> f32[8,128] {\n"
	      "  %a = f32[8,128] parameter(0)\n"
	      "  ROOT %f0 = f32[8,128] fusion(%a), kind=kLoop, calls=%fu\n"
	      "}\n"
	      "%b1 (a: f32[8,128]) -> f32[8,128] {\n"
	      "  %a = f32[8,128] parameter(0)\n"
	      "  ROOT %f1 = f32[8,128] fusion(%a), kind=kLoop, calls=%fu\n"
	      "}\n"
	      "%b2 (a: f32[8,128]) -> f32[8,128] {\n"
	      "  %a = f32[8,128] parameter(0)\n"
	      "  ROOT %cp = f32[8,128] copy(%a)\n"
	      "}\n"
	      "ENTRY %e (i: s32[], x: f32[8,128]) -> f32[8,128] {\n"
	      "  %i = s32[] parameter(0)\n"
	      "  %x = f32[8,128] parameter(1)\n"
	      "  ROOT %c = f32[8,128] conditional(%i, %x, %x, %x), "
	      "branch_computations={%b0, %b1, %b2}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "f0,f1,cp");
	for (int i = 0; i < 3; i++)
		assert_near(b.p.kernels[i].multiplicity, 1.0 / 3.0,
				    1e-15);
	tu_built_free(&b);
}

/* Collectives are kernels (the -start half); send/recv, infeed and
 * custom calls are listed as unmodelled; -done halves are free. */
static void test_collectives_unmodelled(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule c\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "%fu (a: f32[1024]) -> f32[1024] {\n"
	      "  %a = f32[1024] parameter(0)\n"
	      "  ROOT %n = f32[1024] negate(%a)\n"
	      "}\n"
	      "ENTRY %e (x: f32[1024]) -> f32[1024] {\n"
	      "  %x = f32[1024] parameter(0)\n"
	      "  %f = f32[1024] fusion(%x), kind=kLoop, calls=%fu\n"
	      "  %ars = f32[1024] all-reduce-start(%f), replica_groups={{0,1,2,3}}, to_apply=%add\n"
	      "  %ard = f32[1024] all-reduce-done(%ars)\n"
	      "  %tok = token[] after-all()\n"
	      "  %inf = ((f32[1024]), token[]) infeed(%tok)\n"
	      "  ROOT %cc = f32[1024] custom-call(%ard), custom_call_target=\"foo\"\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "f,ars,inf,cc");
	assert_int_equal(tu_kernel(&b, "ars")->kind, SIM_KERNEL_COLLECTIVE);
	assert_int_equal(tu_kernel(&b, "inf")->kind, SIM_KERNEL_UNMODELLED);
	assert_int_equal(b.p.n_unmodelled, 2);
	tu_built_free(&b);
}

/* The custom calls XLA's TPU compiler emits that are no work of their
 * own (classify.c free_custom_call, docs/HLO.md 2): a buffer reserved
 * (AllocateBuffer), a concatenation of slices laid out in place
 * (ConcatBitcast of the slice-dones of one array), a forwarded promise
 * (AssumeGatherIndicesInBound) and the markers around a SparseCore call
 * (PrepareAsyncCallStart/Done) are no kernels; the slice-starts that fill
 * the concatenation are, and any other custom call stays listed,
 * unmodelled. Before, all six custom calls were unmodelled kernels. */
static void test_tpu_custom_calls(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule tc, is_scheduled=true\n"
		 "ENTRY %e (p: bf16[1024,512], i: s32[64]) -> (bf16[1024,512], "
		 "bf16[4,1024,512], token[], f32[8], s32[64]) {\n"
		 "  %p = bf16[1024,512]{1,0:T(8,128)(2,1)} parameter(0)\n"
		 "  %i = s32[64]{0:T(256)} parameter(1)\n"
		 "  %ab = bf16[4,1024,512]{2,1,0:T(8,128)(2,1)} custom-call(), "
		 "custom_call_target=\"AllocateBuffer\"\n"
		 "  %ss0 = ((bf16[1024,512]{1,0:T(8,128)(2,1)}), "
		 "bf16[512,512]{1,0:T(8,128)(2,1)S(1)}, s32[]{:S(2)}) "
		 "slice-start(%p), slice={[0:512], [0:512]}\n"
		 "  %ss1 = ((bf16[1024,512]{1,0:T(8,128)(2,1)}), "
		 "bf16[512,512]{1,0:T(8,128)(2,1)S(1)}, s32[]{:S(2)}) "
		 "slice-start(%p), slice={[512:1024], [0:512]}\n"
		 "  %sd0 = bf16[512,512]{1,0:T(8,128)(2,1)S(1)} slice-done(%ss0)\n"
		 "  %sd1 = bf16[512,512]{1,0:T(8,128)(2,1)S(1)} slice-done(%ss1)\n"
		 "  %cb = bf16[1024,512]{1,0:T(8,128)(2,1)S(1)} custom-call(%sd0, "
		 "%sd1), custom_call_target=\"ConcatBitcast\"\n"
		 "  %ai = s32[64]{0:T(256)} custom-call(%i), "
		 "custom_call_target=\"AssumeGatherIndicesInBound\"\n"
		 "  %pre = s32[]{:S(2)} custom-call(), "
		 "custom_call_target=\"PrepareAsyncCallStart\"\n"
		 "  %done = token[] custom-call(%pre), "
		 "custom_call_target=\"PrepareAsyncCallDone\"\n"
		 "  %other = f32[8] custom-call(), custom_call_target=\"my_op\"\n"
		 "  ROOT %t = (bf16[1024,512], bf16[4,1024,512], token[], f32[8], "
		 "s32[64]) tuple(%cb, %ab, %done, %other, %ai)\n"
		 "}\n",
		 &b);
	ASSERT_NAMES(&b, "ss0,ss1,other");
	assert_int_equal(tu_kernel(&b, "other")->kind, SIM_KERNEL_UNMODELLED);
	tu_built_free(&b);
}

/* A SparseCore call as XLA writes it for v7: PrepareAsyncCallStart/Done
 * (free markers) before a call-start on the "sparsecore" thread whose
 * to_apply computation (here an offloaded all-reduce) is the work, run
 * beside the TensorCore until its call-done: an async pair whose async
 * work is the callee's kernel, the fusion between hiding it. */
static void test_sparsecore_call(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule sc, is_scheduled=true\n"
		 "%add (a: f32[], b: f32[]) -> f32[] {\n"
		 "  %a = f32[] parameter(0)\n"
		 "  %b = f32[] parameter(1)\n"
		 "  ROOT %s = f32[] add(%a, %b)\n"
		 "}, execution_thread=\"sparsecore\"\n"
		 "%called (p0: f32[1024,1024], p1: token[]) -> f32[1024,1024] {\n"
		 "  %p0 = f32[1024,1024] parameter(0)\n"
		 "  %p1 = token[] parameter(1)\n"
		 "  ROOT %ar = f32[1024,1024] all-reduce(%p0), "
		 "replica_groups=mesh['axis_0'=8,'axis_1'=1] {'axis_0'}, "
		 "to_apply=%add\n"
		 "}, execution_thread=\"sparsecore\"\n"
		 "%fu (a: f32[1024,1024]) -> f32[1024,1024] {\n"
		 "  %a = f32[1024,1024] parameter(0)\n"
		 "  ROOT %n = f32[1024,1024] negate(%a)\n"
		 "}\n"
		 "ENTRY %e (x: f32[1024,1024], y: f32[1024,1024]) -> "
		 "(f32[1024,1024], f32[1024,1024]) {\n"
		 "  %x = f32[1024,1024] parameter(0)\n"
		 "  %y = f32[1024,1024] parameter(1)\n"
		 "  %pre = s32[]{:S(2)} custom-call(), "
		 "custom_call_target=\"PrepareAsyncCallStart\"\n"
		 "  %ready = token[] custom-call(%pre), "
		 "custom_call_target=\"PrepareAsyncCallDone\"\n"
		 "  %cs = ((f32[1024,1024], token[]), f32[1024,1024]) "
		 "call-start(%x, %ready), async_execution_thread=\"sparsecore\", "
		 "to_apply=%called\n"
		 "  %k = f32[1024,1024] fusion(%y), kind=kLoop, calls=%fu\n"
		 "  %cd = f32[1024,1024] call-done(%cs)\n"
		 "  ROOT %t = (f32[1024,1024], f32[1024,1024]) tuple(%cd, %k)\n"
		 "}\n",
		 &b);
	ASSERT_NAMES(&b, "ar,k");
	assert_int_equal(b.p.n_async, 1);
	assert_string_equal(b.p.async[0].start->name, "cs");
	assert_string_equal(b.p.async[0].done->name, "cd");
	assert_true(tu_kernel(&b, "ar")->async_work);
	assert_int_equal(tu_kernel(&b, "ar")->group_devices, 8);
	assert_false(tu_kernel(&b, "k")->async_work);
	tu_built_free(&b);
}

/* ---- pre-optimization modules: grouping ------------------------------------------ */

/* jnp softmax as JAX lowers it (tpuv3-ops softmax_f32_*). */
static const char *softmax =
	"HloModule jit_softmax\n"
	"%region_0.3 (Arg_0.4: f32[], Arg_1.5: f32[]) -> f32[] {\n"
	"  %Arg_0.4 = f32[] parameter(0)\n"
	"  %Arg_1.5 = f32[] parameter(1)\n"
	"  ROOT %maximum.6 = f32[] maximum(f32[] %Arg_0.4, f32[] %Arg_1.5)\n"
	"}\n"
	"%region_1.14 (Arg_0.15: f32[], Arg_1.16: f32[]) -> f32[] {\n"
	"  %Arg_0.15 = f32[] parameter(0)\n"
	"  %Arg_1.16 = f32[] parameter(1)\n"
	"  ROOT %add.17 = f32[] add(f32[] %Arg_0.15, f32[] %Arg_1.16)\n"
	"}\n"
	"ENTRY %main.23 (Arg_0.1: f32[256,4096]) -> f32[256,4096] {\n"
	"  %Arg_0.1 = f32[256,4096]{1,0} parameter(0)\n"
	"  %constant.2 = f32[] constant(-inf)\n"
	"  %reduce.7 = f32[256]{0} reduce(f32[256,4096]{1,0} %Arg_0.1, f32[] %constant.2), dimensions={1}, to_apply=%region_0.3\n"
	"  %broadcast.8 = f32[256,1]{1,0} broadcast(f32[256]{0} %reduce.7), dimensions={0}\n"
	"  %reshape.9 = f32[256]{0} reshape(f32[256,1]{1,0} %broadcast.8)\n"
	"  %broadcast.10 = f32[256,4096]{1,0} broadcast(f32[256]{0} %reshape.9), dimensions={0}\n"
	"  %subtract.11 = f32[256,4096]{1,0} subtract(f32[256,4096]{1,0} %Arg_0.1, f32[256,4096]{1,0} %broadcast.10)\n"
	"  %exponential.12 = f32[256,4096]{1,0} exponential(f32[256,4096]{1,0} %subtract.11)\n"
	"  %constant.13 = f32[] constant(0)\n"
	"  %reduce.18 = f32[256]{0} reduce(f32[256,4096]{1,0} %exponential.12, f32[] %constant.13), dimensions={1}, to_apply=%region_1.14\n"
	"  %broadcast.19 = f32[256,1]{1,0} broadcast(f32[256]{0} %reduce.18), dimensions={0}\n"
	"  %reshape.20 = f32[256]{0} reshape(f32[256,1]{1,0} %broadcast.19)\n"
	"  %broadcast.21 = f32[256,4096]{1,0} broadcast(f32[256]{0} %reshape.20), dimensions={0}\n"
	"  ROOT %divide.22 = f32[256,4096]{1,0} divide(f32[256,4096]{1,0} %exponential.12, f32[256,4096]{1,0} %broadcast.21)\n"
	"}\n";

/* softmax -> 3 kernels: the max reduce; subtract+exp+sum reduce; the
 * divide, which recomputes subtract+exp from x and the maxima (XLA
 * duplicates a transcendental into each user kernel, as in the compiled
 * v3 kernels tpugraphs-tile-v3 fusion.206/207), so exp is never written. */
static void test_group_softmax(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build(softmax, &b);
	ASSERT_NAMES(&b, "reduce.7,reduce.18,divide.22");
	const struct sim_kernel *k = tu_kernel(&b, "reduce.7");
	assert_int_equal(k->kind, SIM_KERNEL_REDUCE);
	assert_int_equal(k->n_inputs, 1);
	assert_string_equal(k->tiled->name, "Arg_0.1"); /* the reduce input */

	k = tu_kernel(&b, "reduce.18");
	assert_int_equal(k->kind, SIM_KERNEL_FUSION);
	assert_int_equal(k->main_op, IR_OP_REDUCE);
	assert_string_equal(k->tiled->name, "exponential.12");
	assert_true(has(k->members, k->n_members, "exponential.12"));
	assert_true(has(k->members, k->n_members, "subtract.11"));
	assert_true(has(k->members, k->n_members, "broadcast.10"));
	assert_true(has(k->members, k->n_members, "constant.13"));
	assert_int_equal(k->n_inputs, 2); /* Arg_0.1, reduce.7 */
	assert_true(has(k->inputs, k->n_inputs, "reduce.7"));
	assert_int_equal(k->n_outputs, 1);
	assert_true(has(k->outputs, k->n_outputs, "reduce.18"));

	k = tu_kernel(&b, "divide.22");
	assert_int_equal(k->kind, SIM_KERNEL_FUSION);
	assert_int_equal(k->n_inputs, 3); /* Arg_0.1, reduce.7, reduce.18 */
	assert_true(has(k->inputs, k->n_inputs, "Arg_0.1"));
	assert_true(has(k->inputs, k->n_inputs, "reduce.7"));
	assert_true(has(k->inputs, k->n_inputs, "reduce.18"));
	assert_true(has(k->members, k->n_members, "exponential.12"));
	assert_true(has(k->members, k->n_members, "subtract.11"));
	assert_ptr_equal(k->tiled, k->instr);
	tu_built_free(&b);
}

/* jnp layer norm (tpuv3-ops layernorm_f32_*): five kernels, as XLA's
 * (the tpuv4-ops layer_norm profiles: convert_reduce_fusion, fusion.2,
 * fusion.1, add_sqrt_fusion, divide_convert_fusion): the sum; the
 * per-row mean (no reduce takes an epilogue, no fusion computes a
 * broadcast's operand beyond bitcasts); the variance's sum, recomputing
 * x - mean; the per-row rsqrt; normalise, recomputing x - mean. */
static void test_group_layernorm(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule jit_layernorm\n"
	      "%r0 (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[64,512]) -> f32[64,512] {\n"
	      "  %x = f32[64,512]{1,0} parameter(0)\n"
	      "  %c2 = f32[] constant(0)\n"
	      "  %reduce.7 = f32[64]{0} reduce(%x, %c2), dimensions={1}, to_apply=%r0\n"
	      "  %b8 = f32[64,1]{1,0} broadcast(%reduce.7), dimensions={0}\n"
	      "  %c9 = f32[] constant(512)\n"
	      "  %b10 = f32[64,1]{1,0} broadcast(%c9), dimensions={}\n"
	      "  %divide.11 = f32[64,1]{1,0} divide(%b8, %b10)\n"
	      "  %r12 = f32[64]{0} reshape(%divide.11)\n"
	      "  %b13 = f32[64,512]{1,0} broadcast(%r12), dimensions={0}\n"
	      "  %subtract.14 = f32[64,512]{1,0} subtract(%x, %b13)\n"
	      "  %multiply.15 = f32[64,512]{1,0} multiply(%subtract.14, %subtract.14)\n"
	      "  %reduce.21 = f32[64]{0} reduce(%multiply.15, %c2), dimensions={1}, to_apply=%r0\n"
	      "  %b22 = f32[64,1]{1,0} broadcast(%reduce.21), dimensions={0}\n"
	      "  %divide.25 = f32[64,1]{1,0} divide(%b22, %b10)\n"
	      "  %c26 = f32[] constant(1e-05)\n"
	      "  %b27 = f32[64,1]{1,0} broadcast(%c26), dimensions={}\n"
	      "  %add.28 = f32[64,1]{1,0} add(%divide.25, %b27)\n"
	      "  %rsqrt.29 = f32[64,1]{1,0} rsqrt(%add.28)\n"
	      "  %r30 = f32[64]{0} reshape(%rsqrt.29)\n"
	      "  %b31 = f32[64,512]{1,0} broadcast(%r30), dimensions={0}\n"
	      "  ROOT %multiply.32 = f32[64,512]{1,0} multiply(%subtract.14, %b31)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "reduce.7,divide.11,reduce.21,rsqrt.29,multiply.32");
	const struct sim_kernel *k = tu_kernel(&b, "reduce.21");
	assert_int_equal(k->main_op, IR_OP_REDUCE);
	assert_true(has(k->members, k->n_members, "subtract.14"));
	assert_true(has(k->members, k->n_members, "r12")); /* a bitcast */
	assert_false(has(k->members, k->n_members, "divide.11"));
	k = tu_kernel(&b, "rsqrt.29");
	assert_true(has(k->members, k->n_members, "divide.25"));
	assert_int_equal(k->n_inputs, 1); /* reduce.21 */
	k = tu_kernel(&b, "multiply.32");
	assert_true(has(k->members, k->n_members, "subtract.14")); /* recomputed */
	assert_int_equal(k->n_inputs, 3); /* x, divide.11, rsqrt.29 */
	tu_built_free(&b);
}

/* Two reduces of the same converted input (tpuv4-ops layer_norm computes
 * the mean twice): sibling multi-output fusion makes them one kernel. */
static void test_group_sibling_reduces(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule sib\n"
	      "%r0 (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f16[64,512]) -> (f32[64], f32[64]) {\n"
	      "  %x = f16[64,512] parameter(0)\n"
	      "  %c = f32[] constant(0)\n"
	      "  %cv1 = f32[64,512] convert(%x)\n"
	      "  %ra = f32[64] reduce(%cv1, %c), dimensions={1}, to_apply=%r0\n"
	      "  %cv2 = f32[64,512] convert(%x)\n"
	      "  %rb = f32[64] reduce(%cv2, %c), dimensions={1}, to_apply=%r0\n"
	      "  ROOT %t = (f32[64], f32[64]) tuple(%ra, %rb)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "ra");
	const struct sim_kernel *k = tu_kernel(&b, "ra");
	assert_int_equal(k->n_outputs, 2);
	assert_true(has(k->members, k->n_members, "rb"));
	assert_int_equal(k->n_inputs, 1);
	tu_built_free(&b);

	/* a reduce kernel and a loop kernel of its operand's dims that read
	 * the same arrays: the residual add written in bf16 and the norm's
	 * sum of squares of it, one multi-output kernel reading both arrays
	 * once (data/compiled v3/decoder_s multiply_reduce_fusion.15: the
	 * bf16 sum and the f32 row sums; 34 more of XLA's fusions formed
	 * exactly, one fewer) */
	tu_build("HloModule res\n"
	      "%r0 (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: bf16[4,256,512], y: bf16[4,256,512]) -> (f32[4,256], bf16[4,256,512]) {\n"
	      "  %x = bf16[4,256,512] parameter(0)\n"
	      "  %y = bf16[4,256,512] parameter(1)\n"
	      "  %c = f32[] constant(0)\n"
	      "  %fx = f32[4,256,512] convert(%x)\n"
	      "  %fy = f32[4,256,512] convert(%y)\n"
	      "  %s = f32[4,256,512] add(%fx, %fy)\n"
	      "  %sq = f32[4,256,512] multiply(%s, %s)\n"
	      "  %ss = f32[4,256] reduce(%sq, %c), dimensions={2}, to_apply=%r0\n"
	      "  %out = bf16[4,256,512] convert(%s)\n"
	      "  ROOT %t = (f32[4,256], bf16[4,256,512]) tuple(%ss, %out)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "out");
	k = tu_kernel(&b, "out");
	assert_int_equal(k->n_outputs, 2);
	assert_true(has(k->members, k->n_members, "ss"));
	assert_int_equal(k->n_inputs, 2);
	tu_built_free(&b);
}

/* A divide recomputed as a transcendental is (sim/grouping.c eup_op):
 * the SwiGLU's sigmoid 1 / (1 + exp(-x)), read by two dots, reads x and
 * no more, and is evaluated in both dots' kernels, as XLA's compiled
 * v5e/decoder_s evaluates it in each of its readers (a divide that
 * reads more bytes than its value still joins the first user kernel and
 * is written out: test_group_transcendental_recompute). */
static void test_group_sigmoid_recompute(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule sig\n"
	      "ENTRY %main (x: f32[256,512], w: f32[512,512], v: f32[512,512]) -> (f32[256,512], f32[256,512]) {\n"
	      "  %x = f32[256,512] parameter(0)\n"
	      "  %w = f32[512,512] parameter(1)\n"
	      "  %v = f32[512,512] parameter(2)\n"
	      "  %c = f32[] constant(1)\n"
	      "  %one = f32[256,512] broadcast(%c), dimensions={}\n"
	      "  %n = f32[256,512] negate(%x)\n"
	      "  %e = f32[256,512] exponential(%n)\n"
	      "  %a = f32[256,512] add(%e, %one)\n"
	      "  %s = f32[256,512] divide(%one, %a)\n"
	      "  %y = f32[256,512] dot(%s, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %z = f32[256,512] dot(%s, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (f32[256,512], f32[256,512]) tuple(%y, %z)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "y,z");
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "s"));
	assert_true(has(tu_kernel(&b, "z")->members, tu_kernel(&b, "z")->n_members, "s"));
	tu_built_free(&b);
	/* a divide by a broadcast is a cheap op (a multiply): recomputed
	 * in both dots that stream it, though it reads two arrays (found
	 * by a review: counted as EUP work, it was a kernel of its own) */
	tu_build("HloModule cheap\n"
	      "ENTRY %main (x: f32[256,512], u: f32[256,512], r: f32[256], w: f32[512,128], v: f32[512,128]) -> (f32[256,128], f32[256,128]) {\n"
	      "  %x = f32[256,512] parameter(0)\n"
	      "  %u = f32[256,512] parameter(1)\n"
	      "  %r = f32[256] parameter(2)\n"
	      "  %w = f32[512,128] parameter(3)\n"
	      "  %v = f32[512,128] parameter(4)\n"
	      "  %a = f32[256,512] add(%x, %u)\n"
	      "  %br = f32[256,512] broadcast(%r), dimensions={0}\n"
	      "  %d = f32[256,512] divide(%a, %br)\n"
	      "  %y = f32[256,128] dot(%d, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %z = f32[256,128] dot(%d, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (f32[256,128], f32[256,128]) tuple(%y, %z)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "y,z");
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "d"));
	assert_true(has(tu_kernel(&b, "z")->members, tu_kernel(&b, "z")->n_members, "d"));
	tu_built_free(&b);
}

/* A transcendental with users in two kernels is recomputed in both (XLA's
 * compiled v3 softmax-xent kernels, tpugraphs-tile-v3 fusion.206/207, each
 * evaluate exp from x); a full divide is not: the earliest user kernel
 * computes and writes it, the other reads it. (Each multiply reads its
 * reduce's result: a reduce kernel and a loop kernel that read one array
 * and not each other's values merge, merge_shared.) */
static void test_group_transcendental_recompute(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule rec\n"
	      "%r0 (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[64,512], y: f32[64,512], w: f32[64,512]) -> (f32[64], f32[64,512], f32[64], f32[64,512]) {\n"
	      "  %x = f32[64,512] parameter(0)\n"
	      "  %y = f32[64,512] parameter(1)\n"
	      "  %w = f32[64,512] parameter(2)\n"
	      "  %c = f32[] constant(0)\n"
	      "  %e = f32[64,512] exponential(%x)\n"
	      "  %re = f32[64] reduce(%e, %c), dimensions={1}, to_apply=%r0\n"
	      "  %be = f32[64,512] broadcast(%re), dimensions={0}\n"
	      "  %me = f32[64,512] multiply(%e, %be)\n"
	      "  %d = f32[64,512] divide(%w, %y)\n"
	      "  %rd = f32[64] reduce(%d, %c), dimensions={1}, to_apply=%r0\n"
	      "  %bd = f32[64,512] broadcast(%rd), dimensions={0}\n"
	      "  %md = f32[64,512] multiply(%d, %bd)\n"
	      "  ROOT %t = (f32[64], f32[64,512], f32[64], f32[64,512]) tuple(%re, %me, %rd, %md)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "re,me,rd,md");
	const struct sim_kernel *k = tu_kernel(&b, "re");
	assert_true(has(k->members, k->n_members, "e"));
	assert_int_equal(k->n_outputs, 1);
	k = tu_kernel(&b, "me");
	assert_true(has(k->members, k->n_members, "e"));
	assert_false(has(k->inputs, k->n_inputs, "e"));
	k = tu_kernel(&b, "rd");
	assert_true(has(k->members, k->n_members, "d"));
	assert_int_equal(k->n_outputs, 2);
	assert_true(has(k->outputs, k->n_outputs, "d"));
	k = tu_kernel(&b, "md");
	assert_false(has(k->members, k->n_members, "d"));
	assert_true(has(k->inputs, k->n_inputs, "d"));
	tu_built_free(&b);

	/* but not one whose recomputation reads more than its value
	 * (recompute_pays): exp(s - m) of two full arrays, as the
	 * attention's exp(scores - row max) on v4 and later, is computed
	 * once and written, and its readers read it (data/compiled
	 * v5e/decoder_s: fusion.373 writes it, fusion.374 reads it), in a
	 * kernel of its own here, where joining a user's could make a
	 * cycle between kernels */
	tu_build("HloModule once\n"
	      "%r0 (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (s: f32[64,512], m: f32[64,512], y: f32[64,512]) -> (f32[64], f32[64,512]) {\n"
	      "  %s = f32[64,512] parameter(0)\n"
	      "  %m = f32[64,512] parameter(1)\n"
	      "  %y = f32[64,512] parameter(2)\n"
	      "  %c = f32[] constant(0)\n"
	      "  %x = f32[64,512] subtract(%s, %m)\n"
	      "  %e = f32[64,512] exponential(%x)\n"
	      "  %re = f32[64] reduce(%e, %c), dimensions={1}, to_apply=%r0\n"
	      "  %be = f32[64,512] broadcast(%re), dimensions={0}\n"
	      "  %me = f32[64,512] multiply(%e, %be)\n"
	      "  ROOT %t = (f32[64], f32[64,512]) tuple(%re, %me)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "e,re,me");
	assert_true(has(tu_kernel(&b, "e")->members, tu_kernel(&b, "e")->n_members, "x"));
	for (int q = 0; q < 2; q++) {
		k = tu_kernel(&b, q ? "me" : "re");
		assert_false(has(k->members, k->n_members, "e"));
		assert_true(has(k->inputs, k->n_inputs, "e"));
	}
	tu_built_free(&b);

	/* the cycle a user kernel could make (a review's module): the
	 * divide p joins b2's kernel and is written for rA's, which reads
	 * it through a broadcast; had the exp joined rA's kernel, b2's
	 * would read it from there, each kernel waiting on the other
	 * (`fuse`: "depends on itself") */
	tu_build("HloModule cyc\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[256,1024], y: f32[256,1024], v: f32[256], w: f32[256]) -> (f32[256], f32[256]) {\n"
	      "  %x = f32[256,1024] parameter(0)\n"
	      "  %y = f32[256,1024] parameter(1)\n"
	      "  %v = f32[256] parameter(2)\n"
	      "  %w = f32[256] parameter(3)\n"
	      "  %s = f32[256,1024] subtract(%x, %y)\n"
	      "  %i = f32[256,1024] exponential(%s)\n"
	      "  %p = f32[256] divide(%v, %w)\n"
	      "  %pb = f32[256,1024] broadcast(%p), dimensions={0}\n"
	      "  %a1 = f32[256,1024] multiply(%i, %pb)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %rA = f32[256] reduce(%a1, %z), dimensions={1}, to_apply=%add\n"
	      "  %sl = f32[256,1] slice(%i), slice={[0:256], [0:1]}\n"
	      "  %rs = f32[256] reshape(%sl)\n"
	      "  %b2 = f32[256] add(%p, %rs)\n"
	      "  ROOT %t = (f32[256], f32[256]) tuple(%rA, %b2)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "i,b2,rA");
	tu_built_free(&b);
}

/* Two kernels that each read a value of the other form a cycle no
 * instruction path shows (sim_group_cyclic follows a kernel's inputs
 * whole). Llama-3.1-405B's fp8 step (../shared hlo-programs), reduced:
 * the dot's kernel writes its scaled result u and takes the amax of
 * g * sig * u, reading the sigmoid sig; the silu backward's loop kernel
 * reads u. The loop merge once put sig in that kernel: each then waited
 * on the other (`fuse`: "depends on itself"). Now sig is computed in the
 * kernel that reads u, and the amax is a kernel of its own. */
static void test_group_kernel_cycle(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule amax\n"
	      "%max (a: bf16[], b: bf16[]) -> bf16[] {\n"
	      "  %a = bf16[] parameter(0)\n"
	      "  %b = bf16[] parameter(1)\n"
	      "  ROOT %m = bf16[] maximum(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (n: bf16[256,1024], d: bf16[256,1024], g: bf16[256,1024], x: bf16[256,512], w: bf16[1024,512], s: bf16[256,1024], v: bf16[256,1024], z: bf16[]) -> (bf16[256,1024], bf16[]) {\n"
	      "  %n = bf16[256,1024] parameter(0)\n"
	      "  %d = bf16[256,1024] parameter(1)\n"
	      "  %g = bf16[256,1024] parameter(2)\n"
	      "  %x = bf16[256,512] parameter(3)\n"
	      "  %w = bf16[1024,512] parameter(4)\n"
	      "  %s = bf16[256,1024] parameter(5)\n"
	      "  %v = bf16[256,1024] parameter(6)\n"
	      "  %z = bf16[] parameter(7)\n"
	      "  %sig = bf16[256,1024] divide(%n, %d)\n"
	      "  %act = bf16[256,1024] multiply(%g, %sig)\n"
	      "  %dot = bf16[256,1024] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
	      "  %up = bf16[256,1024] multiply(%dot, %s)\n"
	      "  %u = bf16[256,1024] copy(%up)\n"
	      "  %h = bf16[256,1024] multiply(%act, %u)\n"
	      "  %bw = bf16[256,1024] multiply(%u, %v)\n"
	      "  %dsig = bf16[256,1024] multiply(%bw, %sig)\n"
	      "  %abs = bf16[256,1024] abs(%h)\n"
	      "  %amax = bf16[] reduce(%abs, %z), dimensions={0,1}, to_apply=%max\n"
	      "  ROOT %t = (bf16[256,1024], bf16[]) tuple(%dsig, %amax)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "u,dsig,amax");
	tu_built_free(&b);

	/* a module written out of order: an expensive producer read by two
	 * kernels joins the first in the topological order (the reduce's),
	 * not the first in the text (b2's, which reads the reduce: that
	 * kernel would be cyclic, and split into one op each) */
	tu_build("HloModule ooo\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[256,1024], v: f32[256,1024], w: f32[256,1024]) -> f32[256,1024] {\n"
	      "  %x = f32[256,1024] parameter(0)\n"
	      "  %v = f32[256,1024] parameter(1)\n"
	      "  %w = f32[256,1024] parameter(2)\n"
	      "  %p = f32[256,1024] divide(%v, %w)\n"
	      "  ROOT %b2 = f32[256,1024] add(%p, %rb)\n"
	      "  %rb = f32[256,1024] broadcast(%rA), dimensions={0}\n"
	      "  %a1 = f32[256,1024] multiply(%x, %p)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %rA = f32[256] reduce(%a1, %z), dimensions={1}, to_apply=%add\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "rA,b2");
	tu_built_free(&b);

	/* a cycle through a kernel placed wholly before the merged one (a
	 * review's module): c's negate joining b1's kernel would make z's
	 * kernel read c from it while b1 reads w, whose kernel reads y from
	 * z's. At 08bf6c8 `fuse` failed ("depends on itself"); with the
	 * walk pruned by place in the order the merge passed and
	 * dissolve_cycles split the kernel into single ops (6 kernels) */
	tu_build("HloModule merge_cyc\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %e (p0: f32[8,128], p1: f32[8,128], p2: f32[8], p3: f32[8]) -> (f32[8], f32[8,128]) {\n"
	      "  %p0 = f32[8,128] parameter(0)\n"
	      "  %p1 = f32[8,128] parameter(1)\n"
	      "  %p2 = f32[8] parameter(2)\n"
	      "  %p3 = f32[8] parameter(3)\n"
	      "  %zero = f32[] constant(0)\n"
	      "  %y = f32[8,128] divide(%p0, %p1)\n"
	      "  %pd = f32[8,130] pad(%y, %zero), padding=0_0x0_2\n"
	      "  %w = f32[8] reduce(%pd, %zero), dimensions={1}, to_apply=%add\n"
	      "  %a1 = f32[8] divide(%p2, %p3)\n"
	      "  %c = f32[8] negate(%a1)\n"
	      "  %b1 = f32[8] add(%c, %w)\n"
	      "  %bm = f32[8,128] broadcast(%c), dimensions={0}\n"
	      "  %z = f32[8,128] multiply(%y, %bm)\n"
	      "  ROOT %t = (f32[8], f32[8,128]) tuple(%b1, %z)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "c,z,w,b1");
	tu_built_free(&b);
}

/* relu, an activation chain and a matmul: one kernel each; a dot absorbs
 * the converts of its operands and its bias-add/relu epilogue. */
/* XLA's TPU fusion rules as data/compiled shows them (libtpu 0.0.42;
 * sim/grouping.c says each rule and its evidence). Each expectation is
 * what the compiled modules do with the same pattern. */
static void test_group_tpu_rules(void **state)
{
	(void)state;
	struct tu_built b;
	/* gather: its index computation fused (slot 1), its table not (slot
	 * 0: the table is read where the indices point); the gather joins
	 * its one transpose user (the compiled gather_fusion kernels: index
	 * transpose, gather, output transpose in one) */
	tu_build("HloModule g\n"
	      "ENTRY %main (t: f32[1000,64], i: s32[2,256,1]) -> f32[256,2,64] {\n"
	      "  %t = f32[1000,64] parameter(0)\n"
	      "  %i = s32[2,256,1] parameter(1)\n"
	      "  %tt = f32[1000,64] negate(%t)\n"
	      "  %it = s32[256,2,1] transpose(%i), dimensions={1,0,2}\n"
	      "  %g = f32[256,2,64] gather(%tt, %it), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,64}\n"
	      "  %x = f32[2,256,64] transpose(%g), dimensions={1,0,2}\n"
	      "  ROOT %y = f32[256,2,64] transpose(%x), dimensions={1,0,2}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "tt,y");
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "it"));
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "g"));
	tu_built_free(&b);

	/* the custom-call that marks a gather's indices bitpacked is their
	 * buffer under another name: the index computation before it is in
	 * the gather's kernel (the decoders' gather_fusion.1) */
	tu_build("HloModule b\n"
	      "ENTRY %main (t: f32[64,16000], i: s32[64], j: s32[64]) -> f32[64] {\n"
	      "  %t = f32[64,16000] parameter(0)\n"
	      "  %i = s32[64] parameter(1)\n"
	      "  %j = s32[64] parameter(2)\n"
	      "  %ir = s32[64,1] reshape(%i)\n"
	      "  %jr = s32[64,1] reshape(%j)\n"
	      "  %c = s32[64,2] concatenate(%ir, %jr), dimensions={1}\n"
	      "  %p = s32[64,2] custom-call(%c), custom_call_target=\"GatherScatterIndicesBitpacked\"\n"
	      "  ROOT %g = f32[64] gather(%t, %p), offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "g");
	assert_true(has(tu_kernel(&b, "g")->members, tu_kernel(&b, "g")->n_members, "c"));
	tu_built_free(&b);

	/* no kernel computes a pad's operand (the index take_along_axis
	 * builds by padding and adding: its producer a fusion of its own) */
	tu_build("HloModule p\n"
	      "ENTRY %main (a: s32[4,1024,1], b: s32[4,1024,3]) -> s32[4,1024,3] {\n"
	      "  %a = s32[4,1024,1] parameter(0)\n"
	      "  %b = s32[4,1024,3] parameter(1)\n"
	      "  %one = s32[] constant(1)\n"
	      "  %ones = s32[4,1024,1] broadcast(%one), dimensions={}\n"
	      "  %s = s32[4,1024,1] subtract(%a, %ones)\n"
	      "  %z = s32[] constant(0)\n"
	      "  %p = s32[4,1024,3] pad(%s, %z), padding=0_0x0_0x0_2\n"
	      "  ROOT %y = s32[4,1024,3] add(%p, %b)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "s,y");
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "p"));
	tu_built_free(&b);

	/* the gather's kernel ends at the reshape after its transposes: what
	 * reads it is a kernel of its own (the decoders' embedding lookup,
	 * gather_fusion, then broadcast_select_fusion masking it); a reshape
	 * back that is a bitcast is held by that kernel */
	tu_build("HloModule e\n"
	      "ENTRY %main (t: bf16[1000,64], i: s32[512], m: pred[2,256]) -> bf16[2,256,64] {\n"
	      "  %t = bf16[1000,64] parameter(0)\n"
	      "  %i = s32[512] parameter(1)\n"
	      "  %m = pred[2,256] parameter(2)\n"
	      "  %ir = s32[2,256] reshape(%i)\n"
	      "  %g = bf16[2,256,64] gather(%t, %ir), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,64}\n"
	      "  %gt = bf16[2,256,64] transpose(%g), dimensions={0,1,2}\n"
	      "  %gr = bf16[512,64]{1,0:T(8,128)(2,1)} reshape(%gt)\n"
	      "  %gb = bf16[2,256,64]{2,1,0:T(8,128)(2,1)} reshape(%gr)\n"
	      "  %mb = pred[2,256,64] broadcast(%m), dimensions={0,1}\n"
	      "  %z = bf16[] constant(0)\n"
	      "  %zb = bf16[2,256,64] broadcast(%z), dimensions={}\n"
	      "  ROOT %y = bf16[2,256,64]{2,1,0:T(8,128)(2,1)} select(%mb, %gb, %zb)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "gr,y");
	assert_true(has(tu_kernel(&b, "gr")->members, tu_kernel(&b, "gr")->n_members, "g"));
	assert_true(has(tu_kernel(&b, "y")->members, tu_kernel(&b, "y")->n_members, "gb"));
	tu_built_free(&b);

	/* one that moves data (the flat f32[4096] T(1024) back to rows of
	 * T(4,128)) is a kernel of its own: the decoders' take_along_axis,
	 * gather_fusion.1 then a top-level reshape.284 */
	tu_build("HloModule t\n"
	      "ENTRY %main (t: f32[4,1024,64], i: s32[4,1024,3]) -> f32[4,1024,1] {\n"
	      "  %t = f32[4,1024,64]{2,1,0:T(8,128)} parameter(0)\n"
	      "  %i = s32[4,1024,3]{2,1,0:T(8,128)} parameter(1)\n"
	      "  %g = f32[4,1024]{1,0:T(4,128)} gather(%t, %i), offset_dims={}, collapsed_slice_dims={0,1,2}, start_index_map={0,1,2}, index_vector_dim=2, slice_sizes={1,1,1}\n"
	      "  %gt = f32[4,1024]{1,0:T(4,128)} transpose(%g), dimensions={0,1}\n"
	      "  %gr = f32[4096]{0:T(1024)} reshape(%gt)\n"
	      "  %gb = f32[4,1024,1]{1,0,2:T(4,128)} reshape(%gr)\n"
	      "  ROOT %y = f32[4,1024,1]{1,0,2:T(4,128)} negate(%gb)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "gr,gb,y");
	assert_true(has(tu_kernel(&b, "gr")->members, tu_kernel(&b, "gr")->n_members, "g"));
	tu_built_free(&b);

	/* a slice that reads whole tiles for a small part of them (a row
	 * of the (8,128) tiles' eight), read by two kernels, is computed
	 * once, and the slices of one operand in one kernel (v5e/dlrm_s
	 * fusion.77); one that reads its share of the tiles (1,024 of 1,025
	 * lanes, the decoders' tokens) is recomputed in each reader */
	static const char slices[] =
		"HloModule s\n"
		"add { a = s32[] parameter(0)\n b = s32[] parameter(1)\n"
		" ROOT s = s32[] add(a, b) }\n"
		"ENTRY e {\n"
		"  p = s32[1024,8]{0,1:T(8,128)} parameter(0)\n"
		"  z = s32[] constant(0)\n"
		"  s0 = s32[1024,1]{0,1:T(1,128)} slice(p), slice={[0:1024], [0:1]}\n"
		"  s1 = s32[1024,1]{0,1:T(1,128)} slice(p), slice={[0:1024], [1:2]}\n"
		"  r0 = s32[] reduce(s0, z), dimensions={0,1}, to_apply=add\n"
		"  r1 = s32[] reduce(s1, z), dimensions={0,1}, to_apply=add\n"
		"  n0 = s32[1024,1]{0,1:T(1,128)} negate(s0)\n"
		"  n1 = s32[1024,1]{0,1:T(1,128)} negate(s1)\n"
		"  ROOT t = (s32[], s32[], s32[1024,1]{0,1:T(1,128)}, "
		"s32[1024,1]{0,1:T(1,128)}) tuple(r0, r1, n0, n1)\n"
		"}\n";
	tu_build(slices, &b);
	ASSERT_NAMES(&b, "s1,n0,n1");
	const struct sim_kernel *ks = tu_kernel(&b, "s1");
	assert_int_equal(ks->n_members, 2);
	assert_true(has(ks->members, ks->n_members, "s0"));
	assert_int_equal(ks->n_outputs, 2);
	tu_built_free(&b);
	tu_build("HloModule t\n"
		 "ENTRY e {\n"
		 "  p = s32[4,1025]{1,0:T(4,128)} parameter(0)\n"
		 "  s0 = s32[4,1024]{1,0:T(4,128)} slice(p), slice={[0:4], [0:1024]}\n"
		 "  z = s32[] constant(0)\n"
		 "  n0 = s32[4,1024]{1,0:T(4,128)} negate(s0)\n"
		 "  c0 = pred[4,1024]{1,0:T(4,128)} compare(s0, s0), direction=LT\n"
		 "  ROOT t = (s32[4,1024]{1,0:T(4,128)}, pred[4,1024]{1,0:T(4,128)}) tuple(n0, c0)\n"
		 "}\n",
		 &b);
	ASSERT_NAMES(&b, "n0,c0");
	assert_true(has(tu_kernel(&b, "n0")->members, tu_kernel(&b, "n0")->n_members, "s0"));
	assert_true(has(tu_kernel(&b, "c0")->members, tu_kernel(&b, "c0")->n_members, "s0"));
	tu_built_free(&b);

	/* attention's row max as a reduce-window over the whole row, the
	 * max broadcast back: computed in its users' kernel with the
	 * subtract and exp (the decoders' compiled softmax fusions); a
	 * pooling window stays a kernel of its own */
	tu_build("HloModule w\n"
	      "%mx (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %m = f32[] maximum(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[8,1024]) -> (f32[8,1024], f32[8,512]) {\n"
	      "  %x = f32[8,1024] parameter(0)\n"
	      "  %c = f32[] constant(-inf)\n"
	      "  %rw = f32[8,1024] reduce-window(%x, %c), window={size=1x2047 pad=0_0x1023_1023}, to_apply=%mx\n"
	      "  %s = f32[8,1024] subtract(%x, %rw)\n"
	      "  %e = f32[8,1024] exponential(%s)\n"
	      "  %pool = f32[8,512] reduce-window(%x, %c), window={size=1x2 stride=1x2}, to_apply=%mx\n"
	      "  %p2 = f32[8,512] negate(%pool)\n"
	      "  ROOT %t = (f32[8,1024], f32[8,512]) tuple(%e, %p2)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "e,pool,p2");
	assert_true(has(tu_kernel(&b, "e")->members, tu_kernel(&b, "e")->n_members, "rw"));
	tu_built_free(&b);

	/* scatter: updates and indices fused (the compiled scatter fusions
	 * transpose both), the operand it updates in place not */
	tu_build("HloModule s\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (o: f32[1000,64], i: s32[256,1], u: f32[64,256]) -> f32[1000,64] {\n"
	      "  %o = f32[1000,64] parameter(0)\n"
	      "  %i = s32[256,1] parameter(1)\n"
	      "  %u = f32[64,256] parameter(2)\n"
	      "  %on = f32[1000,64] negate(%o)\n"
	      "  %in = s32[256,1] negate(%i)\n"
	      "  %ut = f32[256,64] transpose(%u), dimensions={1,0}\n"
	      "  ROOT %sc = f32[1000,64] scatter(%on, %in, %ut), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "on,sc");
	assert_true(has(tu_kernel(&b, "sc")->members, tu_kernel(&b, "sc")->n_members, "in"));
	assert_true(has(tu_kernel(&b, "sc")->members, tu_kernel(&b, "sc")->n_members, "ut"));
	tu_built_free(&b);

	/* a copy that reorders the dims in memory takes its operand from
	 * HBM (every such copy of the compiled modules reads a parameter or
	 * stands alone); one that keeps the order takes a producer (written
	 * with tiles: a layout without them is XLA's default, ir_shape.c) */
	tu_build("HloModule c\n"
	      "ENTRY %main (x: f32[256,512]) -> (f32[256,512], f32[256,512]) {\n"
	      "  %x = f32[256,512]{1,0:T(8,128)} parameter(0)\n"
	      "  %n = f32[256,512]{1,0:T(8,128)} negate(%x)\n"
	      "  %cp = f32[256,512]{0,1:T(8,128)} copy(%n)\n"
	      "  %e = f32[256,512]{1,0:T(8,128)} exponential(%x)\n"
	      "  %ck = f32[256,512]{1,0:T(8,128)} copy(%e)\n"
	      "  ROOT %t = (f32[256,512]{0,1:T(8,128)}, f32[256,512]{1,0:T(8,128)}) tuple(%cp, %ck)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "n,cp,ck");
	tu_built_free(&b);

	/* a dot's result widened to f32 and read by two kernels: the dot's
	 * kernel writes the narrower bf16 result, the convert is recomputed
	 * in each reader (the compiled convolutions write bf16 and their
	 * readers convert it again); the reduce of it joins the dot's
	 * kernel, which writes both (output multi-output fusion: the
	 * compiled bias gradients and batch-norm statistics) */
	tu_build("HloModule e\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (a: bf16[256,512], w: bf16[512,256]) -> (f32[256], f32[256,256]) {\n"
	      "  %a = bf16[256,512] parameter(0)\n"
	      "  %w = bf16[512,256] parameter(1)\n"
	      "  %d = bf16[256,256] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %c = f32[256,256] convert(%d)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %r = f32[256] reduce(%c, %z), dimensions={1}, to_apply=%add\n"
	      "  %m = f32[256,256] multiply(%c, %c)\n"
	      "  %s = f32[256,256] sine(%m)\n"
	      "  ROOT %t = (f32[256], f32[256,256]) tuple(%r, %s)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "d,s");
	assert_int_equal(tu_kernel(&b, "d")->main_op, IR_OP_DOT);
	assert_true(has(tu_kernel(&b, "d")->members, tu_kernel(&b, "d")->n_members, "r"));
	assert_int_equal(tu_kernel(&b, "d")->n_outputs, 2);
	assert_true(has(tu_kernel(&b, "d")->outputs, tu_kernel(&b, "d")->n_outputs, "d"));
	assert_true(has(tu_kernel(&b, "s")->members, tu_kernel(&b, "s")->n_members, "c"));
	tu_built_free(&b);

	/* the softmax over a dot's scores: the max reduce joins the dot's
	 * kernel; the sum of exp(s - max) does not, as it needs the whole
	 * max first (the compiled attention: the scores' fusion holds the
	 * max, a kernel of its own the sum); the dot's result, which the
	 * sum's kernel reads too, is written */
	tu_build("HloModule sm\n"
	      "%max (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %m = f32[] maximum(%a, %b)\n"
	      "}\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (q: bf16[512,128], k: bf16[128,512]) -> f32[512] {\n"
	      "  %q = bf16[512,128] parameter(0)\n"
	      "  %k = bf16[128,512] parameter(1)\n"
	      "  %s = f32[512,512] dot(%q, %k), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %ninf = f32[] constant(-inf)\n"
	      "  %mx = f32[512] reduce(%s, %ninf), dimensions={1}, to_apply=%max\n"
	      "  %mb = f32[512,512] broadcast(%mx), dimensions={0}\n"
	      "  %sub = f32[512,512] subtract(%s, %mb)\n"
	      "  %e = f32[512,512] exponential(%sub)\n"
	      "  %z = f32[] constant(0)\n"
	      "  ROOT %sum = f32[512] reduce(%e, %z), dimensions={1}, to_apply=%add\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "s,sum");
	assert_true(has(tu_kernel(&b, "s")->members, tu_kernel(&b, "s")->n_members, "mx"));
	assert_int_equal(tu_kernel(&b, "s")->n_outputs, 2);
	assert_true(has(tu_kernel(&b, "s")->outputs, tu_kernel(&b, "s")->n_outputs, "s"));
	assert_false(has(tu_kernel(&b, "sum")->members, tu_kernel(&b, "sum")->n_members, "s"));
	tu_built_free(&b);

	/* a batch-norm's statistics of a convolution (sum and sum of
	 * squares of its f32 convert, the convert recomputed in both and in
	 * the normalise kernel): both reduces join the convolution's
	 * kernel, which writes its result for the normalise kernel, as
	 * v5e/resnet_s's compiled fusions do */
	tu_build("HloModule bn\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: bf16[32,16,16,64], w: bf16[3,3,64,128], m: f32[128]) -> (f32[128], f32[128], f32[32,16,16,128]) {\n"
	      "  %x = bf16[32,16,16,64] parameter(0)\n"
	      "  %w = bf16[3,3,64,128] parameter(1)\n"
	      "  %m = f32[128] parameter(2)\n"
	      "  %cv = bf16[32,16,16,128] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n"
	      "  %f = f32[32,16,16,128] convert(%cv)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %s1 = f32[128] reduce(%f, %z), dimensions={0,1,2}, to_apply=%add\n"
	      "  %sq = f32[32,16,16,128] multiply(%f, %f)\n"
	      "  %s2 = f32[128] reduce(%sq, %z), dimensions={0,1,2}, to_apply=%add\n"
	      "  %mb = f32[32,16,16,128] broadcast(%m), dimensions={3}\n"
	      "  %n = f32[32,16,16,128] subtract(%f, %mb)\n"
	      "  ROOT %t = (f32[128], f32[128], f32[32,16,16,128]) tuple(%s1, %s2, %n)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "cv,n");
	const struct sim_kernel *k = tu_kernel(&b, "cv");
	assert_int_equal(k->main_op, IR_OP_CONVOLUTION);
	assert_true(has(k->members, k->n_members, "s1"));
	assert_true(has(k->members, k->n_members, "s2"));
	assert_int_equal(k->n_outputs, 3);
	assert_true(has(k->outputs, k->n_outputs, "cv"));
	tu_built_free(&b);

	/* a reduce of values that joined a dot's kernel (six divides, each
	 * written out by the dot's epilogue chain, multi-output) joins it
	 * too: more candidate values than the computation has groups */
	tu_build("HloModule cand\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (p: f32[64,64], q: f32[64,64], d: f32[64,64]) -> (f32[64,64], f32[64]) {\n"
	      "  %p = f32[64,64] parameter(0)\n"
	      "  %q = f32[64,64] parameter(1)\n"
	      "  %d = f32[64,64] parameter(2)\n"
	      "  %dot = f32[64,64] dot(%p, %p), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %e1 = f32[64,64] divide(%q, %d)\n"
	      "  %e2 = f32[64,64] divide(%d, %q)\n"
	      "  %e3 = f32[64,64] divide(%q, %p)\n"
	      "  %e4 = f32[64,64] divide(%p, %q)\n"
	      "  %e5 = f32[64,64] divide(%d, %p)\n"
	      "  %e6 = f32[64,64] divide(%p, %d)\n"
	      "  %a1 = f32[64,64] add(%dot, %e1)\n"
	      "  %a2 = f32[64,64] add(%a1, %e2)\n"
	      "  %a3 = f32[64,64] add(%a2, %e3)\n"
	      "  %a4 = f32[64,64] add(%a3, %e4)\n"
	      "  %a5 = f32[64,64] add(%a4, %e5)\n"
	      "  %a6 = f32[64,64] add(%a5, %e6)\n"
	      "  %s1 = f32[64,64] add(%e1, %e2)\n"
	      "  %s2 = f32[64,64] add(%s1, %e3)\n"
	      "  %s3 = f32[64,64] add(%s2, %e4)\n"
	      "  %s4 = f32[64,64] add(%s3, %e5)\n"
	      "  %s5 = f32[64,64] add(%s4, %e6)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %r = f32[64] reduce(%s5, %z), dimensions={1}, to_apply=%add\n"
	      "  ROOT %t = (f32[64,64], f32[64]) tuple(%a6, %r)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "a6");
	assert_true(has(tu_kernel(&b, "a6")->members, tu_kernel(&b, "a6")->n_members, "r"));
	tu_built_free(&b);

	/* a copy to another tiling and the copy back (v7's bf16 T(16,128) in
	 * HBM, T(8,128) in a kernel) are never one kernel: the first ends the
	 * dot's, the second starts its reader's; a dynamic-update-slice takes
	 * such a copy into the buffer it updates */
	tu_build("HloModule tc\n"
	      "ENTRY %main (a: bf16[256,512], w: bf16[512,256], y: bf16[256,256], c: bf16[1024,256], i: s32[]) -> (bf16[256,256], bf16[1024,256]) {\n"
	      "  %a = bf16[256,512]{1,0:T(8,128)(2,1)} parameter(0)\n"
	      "  %w = bf16[512,256]{1,0:T(8,128)(2,1)} parameter(1)\n"
	      "  %y = bf16[256,256]{1,0:T(8,128)(2,1)} parameter(2)\n"
	      "  %c = bf16[1024,256]{1,0:T(16,128)(2,1)} parameter(3)\n"
	      "  %i = s32[] parameter(4)\n"
	      "  %d = bf16[256,256]{1,0:T(8,128)(2,1)} dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %c1 = bf16[256,256]{1,0:T(16,128)(2,1)} copy(%d)\n"
	      "  %c2 = bf16[256,256]{1,0:T(8,128)(2,1)} copy(%c1)\n"
	      "  %s = bf16[256,256]{1,0:T(8,128)(2,1)} add(%c2, %y)\n"
	      "  %cc = bf16[1024,256]{1,0:T(8,128)(2,1)} copy(%c)\n"
	      "  %z = s32[] constant(0)\n"
	      "  %u = bf16[1024,256]{1,0:T(8,128)(2,1)} dynamic-update-slice(%cc, %y, %i, %z)\n"
	      "  ROOT %t = (bf16[256,256]{1,0:T(8,128)(2,1)}, bf16[1024,256]{1,0:T(8,128)(2,1)}) tuple(%s, %u)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "c1,s,u");
	assert_true(has(tu_kernel(&b, "c1")->members, tu_kernel(&b, "c1")->n_members, "d"));
	assert_true(has(tu_kernel(&b, "s")->members, tu_kernel(&b, "s")->n_members, "c2"));
	assert_true(has(tu_kernel(&b, "u")->members, tu_kernel(&b, "u")->n_members, "cc"));
	tu_built_free(&b);

	/* the sum of two dots' results, narrowed to bf16 and widened again
	 * for a third dot's epilogue: the boundary goes at the narrowing
	 * convert, each dot in a kernel with its own epilogue (the compiled
	 * residual adds, convolution_add_fusion) */
	tu_build("HloModule res\n"
	      "ENTRY %main (a: bf16[256,512], b: bf16[256,512], c: bf16[256,512], w: bf16[512,512]) -> bf16[256,512] {\n"
	      "  %a = bf16[256,512] parameter(0)\n"
	      "  %b = bf16[256,512] parameter(1)\n"
	      "  %c = bf16[256,512] parameter(2)\n"
	      "  %w = bf16[512,512] parameter(3)\n"
	      "  %d1 = bf16[256,512] dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %f1 = f32[256,512] convert(%d1)\n"
	      "  %d2 = bf16[256,512] dot(%b, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %f2 = f32[256,512] convert(%d2)\n"
	      "  %s = f32[256,512] add(%f1, %f2)\n"
	      "  %h = bf16[256,512] convert(%s)\n"
	      "  %hf = f32[256,512] convert(%h)\n"
	      "  %d3 = bf16[256,512] dot(%c, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %f3 = f32[256,512] convert(%d3)\n"
	      "  %s3 = f32[256,512] add(%hf, %f3)\n"
	      "  ROOT %o = bf16[256,512] convert(%s3)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "d1,h,o");
	assert_true(has(tu_kernel(&b, "h")->members, tu_kernel(&b, "h")->n_members, "d2"));
	assert_true(has(tu_kernel(&b, "o")->members, tu_kernel(&b, "o")->n_members, "hf"));
	assert_true(has(tu_kernel(&b, "o")->members, tu_kernel(&b, "o")->n_members, "d3"));
	tu_built_free(&b);

	/* a cheap producer with users in two kernels, one of them a dot's
	 * operand: not recomputed in the dot's operand; it joins the first
	 * user kernel and is written out there (the compiled residual add:
	 * computed once with the norm's sum of squares, multi-output, and
	 * read by the projections) */
	tu_build("HloModule r\n"
	      "%add (a: f32[], b: f32[]) -> f32[] {\n"
	      "  %a = f32[] parameter(0)\n"
	      "  %b = f32[] parameter(1)\n"
	      "  ROOT %s = f32[] add(%a, %b)\n"
	      "}\n"
	      "ENTRY %main (x: f32[256,512], y: f32[256,512], w: f32[512,256]) -> (f32[256], f32[256,256]) {\n"
	      "  %x = f32[256,512] parameter(0)\n"
	      "  %y = f32[256,512] parameter(1)\n"
	      "  %w = f32[512,256] parameter(2)\n"
	      "  %h = f32[256,512] add(%x, %y)\n"
	      "  %sq = f32[256,512] multiply(%h, %h)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %r = f32[256] reduce(%sq, %z), dimensions={1}, to_apply=%add\n"
	      "  %d = f32[256,256] dot(%h, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (f32[256], f32[256,256]) tuple(%r, %d)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "r,d");
	assert_true(has(tu_kernel(&b, "r")->members, tu_kernel(&b, "r")->n_members, "h"));
	assert_int_equal(tu_kernel(&b, "r")->n_outputs, 2);
	assert_false(has(tu_kernel(&b, "d")->members, tu_kernel(&b, "d")->n_members, "h"));
	tu_built_free(&b);

	/* but one that reads no more than its value (one array of its size,
	 * and a per-row vector: the logits' gradient, exp(x - m) x, read
	 * by the weight-gradient and the input-gradient dots) is recomputed
	 * in each dot's operand, with the exp and subtract above it
	 * (data/compiled v3/decoder_s fusion.131 and fusion.136): two
	 * kernels, not three. Counted through the exp (its f32 value alone
	 * is twice g's bf16), x once though read twice, the vector not */
	tu_build("HloModule g\n"
	      "ENTRY %main (x: bf16[256,512], m: f32[256], a: bf16[256,128], w: bf16[512,128]) -> (bf16[512,128], bf16[256,128]) {\n"
	      "  %x = bf16[256,512] parameter(0)\n"
	      "  %m = f32[256] parameter(1)\n"
	      "  %a = bf16[256,128] parameter(2)\n"
	      "  %w = bf16[512,128] parameter(3)\n"
	      "  %xf = f32[256,512] convert(%x)\n"
	      "  %mb = f32[256,512] broadcast(%m), dimensions={0}\n"
	      "  %s = f32[256,512] subtract(%xf, %mb)\n"
	      "  %e = f32[256,512] exponential(%s)\n"
	      "  %p = f32[256,512] multiply(%e, %xf)\n"
	      "  %g = bf16[256,512] convert(%p)\n"
	      "  %dw = bf16[512,128] dot(%g, %a), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
	      "  %dx = bf16[256,128] dot(%g, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (bf16[512,128], bf16[256,128]) tuple(%dw, %dx)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "dw,dx");
	assert_true(has(tu_kernel(&b, "dw")->members, tu_kernel(&b, "dw")->n_members, "e"));
	assert_true(has(tu_kernel(&b, "dx")->members, tu_kernel(&b, "dx")->n_members, "e"));
	tu_built_free(&b);

	/* read only by dots that stream it, a value is recomputed in each
	 * where that moves fewer bytes than a kernel of its own writing it
	 * and each dot reading it (recompute_pays): the softmax's
	 * probabilities, e / sum in bf16, computed from the f32 e in both
	 * dots (data/compiled v5e/decoder_m: divide_convert_fusion.9 and
	 * .10): 2 x 512 KiB read against 512 + 256 + 2 x 256 KiB. The
	 * divide by a broadcast is a multiply an element, fused as one */
	tu_build("HloModule p\n"
	      "ENTRY %main (e: f32[256,512], s: f32[256], a: bf16[256,128], w: bf16[512,128]) -> (bf16[512,128], bf16[256,128]) {\n"
	      "  %e = f32[256,512] parameter(0)\n"
	      "  %s = f32[256] parameter(1)\n"
	      "  %a = bf16[256,128] parameter(2)\n"
	      "  %w = bf16[512,128] parameter(3)\n"
	      "  %sb = f32[256,512] broadcast(%s), dimensions={0}\n"
	      "  %q = f32[256,512] divide(%e, %sb)\n"
	      "  %p = bf16[256,512] convert(%q)\n"
	      "  %dw = bf16[512,128] dot(%p, %a), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
	      "  %dx = bf16[256,128] dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (bf16[512,128], bf16[256,128]) tuple(%dw, %dx)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "dw,dx");
	assert_true(has(tu_kernel(&b, "dw")->members, tu_kernel(&b, "dw")->n_members, "q"));
	assert_true(has(tu_kernel(&b, "dx")->members, tu_kernel(&b, "dx")->n_members, "q"));
	tu_built_free(&b);

	/* but not where its recomputation holds a transcendental (the
	 * scores' gradient on v2 and v3, exp recomputed from the scores:
	 * v3/decoder_s's fusion.361 is written once for two convolutions;
	 * here the same bytes as p above), nor a weight each dot reads
	 * again for every tile of a larger result (v5e/unet3d_s's casts of
	 * its f32 kernels: fusions of their own) */
	tu_build("HloModule ds\n"
	      "ENTRY %main (x: f32[256,512], a: bf16[256,128], w: bf16[512,128]) -> (bf16[512,128], bf16[256,128]) {\n"
	      "  %x = f32[256,512] parameter(0)\n"
	      "  %a = bf16[256,128] parameter(1)\n"
	      "  %w = bf16[512,128] parameter(2)\n"
	      "  %e = f32[256,512] exponential(%x)\n"
	      "  %g = bf16[256,512] convert(%e)\n"
	      "  %dw = bf16[512,128] dot(%g, %a), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
	      "  %dx = bf16[256,128] dot(%g, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (bf16[512,128], bf16[256,128]) tuple(%dw, %dx)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "g,dw,dx");
	tu_built_free(&b);
	tu_build("HloModule wc\n"
	      "ENTRY %main (x: bf16[4096,512], z: bf16[2048,512], w: f32[512,128]) -> (bf16[4096,128], bf16[2048,128]) {\n"
	      "  %x = bf16[4096,512] parameter(0)\n"
	      "  %z = bf16[2048,512] parameter(1)\n"
	      "  %w = f32[512,128] parameter(2)\n"
	      "  %wc = bf16[512,128] convert(%w)\n"
	      "  %d1 = bf16[4096,128] dot(%x, %wc), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %d2 = bf16[2048,128] dot(%z, %wc), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (bf16[4096,128], bf16[2048,128]) tuple(%d1, %d2)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "wc,d1,d2");
	tu_built_free(&b);

	/* a relayout copy read by two dots is made once, not in each
	 * (data/compiled v5e/resnet_s: XLA's copies of their own) */
	tu_build("HloModule c\n"
	      "ENTRY %main (x: f32[256,512], a: f32[256,128], w: f32[512,128]) -> (f32[512,128], f32[256,128]) {\n"
	      "  %x = f32[256,512]{1,0} parameter(0)\n"
	      "  %a = f32[256,128]{1,0} parameter(1)\n"
	      "  %w = f32[512,128]{1,0} parameter(2)\n"
	      "  %c = f32[256,512]{0,1} copy(%x)\n"
	      "  %dw = f32[512,128]{1,0} dot(%c, %a), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
	      "  %dx = f32[256,128]{1,0} dot(%c, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  ROOT %t = (f32[512,128]{1,0}, f32[256,128]{1,0}) tuple(%dw, %dx)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "c,dw,dx");
	tu_built_free(&b);
}

static void test_group_single_kernels(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule relu\n"
	      "ENTRY %main (x: f16[1024]) -> f16[1024] {\n"
	      "  %x = f16[1024]{0} parameter(0)\n"
	      "  %c = f16[] constant(0)\n"
	      "  %b = f16[1024]{0} broadcast(%c), dimensions={}\n"
	      "  ROOT %m = f16[1024]{0} maximum(%x, %b)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "m");
	assert_int_equal(b.p.kernels[0].kind, SIM_KERNEL_ELEMENTWISE);
	assert_int_equal(b.p.kernels[0].n_inputs, 1);
	tu_built_free(&b);

	tu_build("HloModule mm\n"
	      "ENTRY %main (a: f16[128,256], w: f16[256,512], bias: f32[512]) -> f32[128,512] {\n"
	      "  %a = f16[128,256] parameter(0)\n"
	      "  %w = f16[256,512] parameter(1)\n"
	      "  %bias = f32[512] parameter(2)\n"
	      "  %a32 = f32[128,256] convert(%a)\n"
	      "  %w32 = f32[256,512] convert(%w)\n"
	      "  %d = f32[128,512] dot(%a32, %w32), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "  %bb = f32[128,512] broadcast(%bias), dimensions={1}\n"
	      "  %s = f32[128,512] add(%d, %bb)\n"
	      "  %z = f32[] constant(0)\n"
	      "  %zb = f32[128,512] broadcast(%z), dimensions={}\n"
	      "  ROOT %r = f32[128,512] maximum(%s, %zb)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "r");
	const struct sim_kernel *k = &b.p.kernels[0];
	assert_int_equal(k->kind, SIM_KERNEL_FUSION);
	assert_int_equal(k->main_op, IR_OP_DOT);
	assert_string_equal(k->tiled->name, "d");
	assert_int_equal(k->n_inputs, 3);
	assert_true(has(k->members, k->n_members, "a32"));
	tu_built_free(&b);

	/* A dot takes a transcendental producer into its operand (XLA's TPU
	 * compiler fuses loop ops, tanh and exp among them, into a
	 * convolution's operand fusion: data/compiled, e.g. the GELU before
	 * a decoder's down projection). Dead code is dropped. */
	tu_build("HloModule mm2\n"
	      "ENTRY %main (a: f32[128,256], w: f32[256,512]) -> f32[128,512] {\n"
	      "  %a = f32[128,256] parameter(0)\n"
	      "  %w = f32[256,512] parameter(1)\n"
	      "  %t = f32[128,256] tanh(%a)\n"
	      "  %dead = f32[256,512] negate(%w)\n"
	      "  ROOT %d = f32[128,512] dot(%t, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "d");
	assert_true(has(tu_kernel(&b, "d")->members, tu_kernel(&b, "d")->n_members, "t"));
	tu_built_free(&b);

	/* Average pooling: the reduce-window takes no epilogue, its divide
	 * is a kernel of its own (tpuv4-ops profiles: reduce-window, then
	 * broadcast_multiply_fusion). */
	tu_build("HloModule avgpool\n"
	      "%add (x: f16[], y: f16[]) -> f16[] {\n"
	      "  %x = f16[] parameter(0)\n"
	      "  %y = f16[] parameter(1)\n"
	      "  ROOT %s = f16[] add(%x, %y)\n"
	      "}\n"
	      "ENTRY %main (a: f16[1,8,64,256]) -> f16[1,8,32,128] {\n"
	      "  %a = f16[1,8,64,256] parameter(0)\n"
	      "  %z = f16[] constant(0)\n"
	      "  %w = f16[1,8,32,128] reduce-window(%a, %z), "
	      "window={size=1x1x2x2 stride=1x1x2x2}, to_apply=%add\n"
	      "  %four = f16[] constant(4)\n"
	      "  %fb = f16[1,8,32,128] broadcast(%four), dimensions={}\n"
	      "  ROOT %q = f16[1,8,32,128] divide(%w, %fb)\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "w,q");
	tu_built_free(&b);
}

/* Pre-optimization while bodies are grouped too, with the loop's
 * multiplicity; constant-only roots (the condition's compare) remain. */
static void test_group_while(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule wl\n"
	      "%cond (s: (s32[], f32[64,128])) -> pred[] {\n"
	      "  %s = (s32[], f32[64,128]) parameter(0)\n"
	      "  %i = s32[] get-tuple-element(%s), index=0\n"
	      "  %n = s32[] constant(10)\n"
	      "  ROOT %lt = pred[] compare(%i, %n), direction=LT\n"
	      "}\n"
	      "%body (s: (s32[], f32[64,128])) -> (s32[], f32[64,128]) {\n"
	      "  %s = (s32[], f32[64,128]) parameter(0)\n"
	      "  %i = s32[] get-tuple-element(%s), index=0\n"
	      "  %v = f32[64,128] get-tuple-element(%s), index=1\n"
	      "  %one = s32[] constant(1)\n"
	      "  %i1 = s32[] add(%i, %one)\n"
	      "  %e = f32[64,128] exponential(%v)\n"
	      "  %m = f32[64,128] multiply(%e, %v)\n"
	      "  ROOT %r = (s32[], f32[64,128]) tuple(%i1, %m)\n"
	      "}\n"
	      "ENTRY %e (x: f32[64,128]) -> (s32[], f32[64,128]) {\n"
	      "  %x = f32[64,128] parameter(0)\n"
	      "  %z = s32[] constant(0)\n"
	      "  %t0 = (s32[], f32[64,128]) tuple(%z, %x)\n"
	      "  ROOT %w = (s32[], f32[64,128]) while(%t0), condition=%cond, body=%body, "
	      "backend_config={\"known_trip_count\":{\"n\":\"10\"}}\n"
	      "}\n",
	      &b);
	ASSERT_NAMES(&b, "lt,i1,m");
	assert_near(tu_kernel(&b, "m")->multiplicity, 10.0, 0);
	assert_true(has(tu_kernel(&b, "m")->members, tu_kernel(&b, "m")->n_members,
			"e"));
	tu_built_free(&b);
}

/* ---- errors ------------------------------------------------------------------------ */

/* A dot whose contracting dim is outside the lhs fails with its location. */
static void test_bad_dot(void **state)
{
	(void)state;
	const char *text =
		"HloModule bad\n"
		"ENTRY %e (a: f32[8,16], b: f32[16,4]) -> f32[8,4] {\n"
		"  %a = f32[8,16] parameter(0)\n"
		"  %b = f32[16,4] parameter(1)\n"
		"  ROOT %d = f32[8,4] dot(%a, %b), lhs_contracting_dims={5}, rhs_contracting_dims={0}\n"
		"}\n";
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse("bad.hlo", text, strlen(text), &m, &n, &d);
	if (st != TS_OK) { /* the parser may reject it first: also fine */
		assert_int_equal(st, TS_ERR_PARSE);
		return;
	}
	struct sim_program p;
	st = sim_program_build(m[0], NULL, &p, &d);
	assert_int_equal(st, TS_ERR_PARSE);
	assert_int_equal(d.line, 5);
	assert_int_equal(d.col, 8);
	assert_string_equal(d.msg, "d: dot lhs_contracting_dims out of range "
				   "of the lhs rank");
	assert_int_equal(p.n_kernels, 0);
	assert_null(p.kernels);
	ir_module_free(m[0]);
	ts_free(m);
}

/* Every allocation failure comes back as TS_ERR_NOMEM, never a crash or a
 * leak (run under ASan in the asan tier). */
static void test_alloc_failures(void **state)
{
	(void)state;
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	assert_int_equal(hlo_parse("s.hlo", softmax, strlen(softmax), &m, &n, &d),
			 TS_OK);
	bool succeeded = false;
	for (long i = 0; i < 500 && !succeeded; i++) {
		struct sim_program p;
		ts_alloc_fail_after(i);
		enum ts_status st = sim_program_build(m[0], NULL, &p, &d);
		ts_alloc_fail_after(-1);
		if (st == TS_OK) {
			assert_int_equal(p.n_kernels, 3);
			succeeded = true;
		} else {
			assert_int_equal(st, TS_ERR_NOMEM);
			assert_int_equal(p.n_kernels, 0);
		}
		sim_program_free(&p);
	}
	assert_true(succeeded);
	ir_module_free(m[0]);
	ts_free(m);
}

/* ---- library calls ------------------------------------------------------------- */

/* A fusion makes the module compiled (top-level ops run as written). */
#define LIB_HEAD                                                              \
	"HloModule lib, is_scheduled=true\n"                                  \
	"f { fp = f32[4] parameter(0)\n  ROOT fn = f32[4] negate(fp) }\n"

#define GEMM_CONFIG(lc, rc, lb, rb)                                           \
	"backend_config=\"{\\\"gemm_backend_config\\\":{\\\"alpha_real\\\":1,"   \
	"\\\"dot_dimension_numbers\\\":{\\\"lhs_contracting_dimensions\\\":["     \
	lc "],\\\"rhs_contracting_dimensions\\\":[" rc "],"                      \
	"\\\"lhs_batch_dimensions\\\":[" lb "],\\\"rhs_batch_dimensions\\\":["   \
	rb "]},\\\"precision_config\\\":{\\\"operand_precision\\\":["            \
	"\\\"HIGHEST\\\",\\\"DEFAULT\\\"]}}}\""

/* cuBLAS gemms are dots: dimension numbers and precision from
 * backend_config, the first element of a (result, workspace) tuple as the
 * result, epilogue operands read. By hand:
 *   g: [4,16,32] x [4,32,8], batch 0, contracting 2/1: M=16 N=8 K=32,
 *      4 batches: 4 x 16 x 8 x 32 = 16384 MACs;
 *   lt: [64,128] x [256,128] contracting 1/1 (B transposed), bias [64,256]
 *      as a third operand: 64 x 256 x 128 = 2097152 MACs.
 * Without dimension numbers a gemm stays unmodelled; so does a cuDNN
 * call that is no convolution (reorder). */
static void test_library_gemm(void **state)
{
	(void)state;
	static const char text[] = LIB_HEAD
		"ENTRY e {\n"
		"  a = f32[4,16,32] parameter(0)\n"
		"  b = f32[4,32,8] parameter(1)\n"
		"  x = f32[64,128] parameter(2)\n"
		"  y = f32[256,128] parameter(3)\n"
		"  z = f32[64,256] parameter(4)\n"
		"  g = (f32[4,16,8], s8[4194304]) custom-call(a, b), "
		"custom_call_target=\"__cublas$gemm\", "
		GEMM_CONFIG("\\\"2\\\"", "\\\"1\\\"", "\\\"0\\\"", "\\\"0\\\"") "\n"
		"  gr = f32[4,16,8] get-tuple-element(g), index=0\n"
		"  lt = f32[64,256] custom-call(x, y, z), "
		"custom_call_target=\"__cublas$lt$matmul\", "
		GEMM_CONFIG("\\\"1\\\"", "\\\"1\\\"", "", "") "\n"
		"  nd = f32[64,256] custom-call(x, y), "
		"custom_call_target=\"__cublas$gemm\"\n"
		"  ro = s8[64] custom-call(x), custom_call_target=\"__cudnn$convReorderFilter\"\n"
		"  c4 = f32[4] constant({1, 2, 3, 4})\n"
		"  n = f32[4] fusion(c4), kind=kLoop, calls=f\n"
		"  ROOT t = (f32[4,16,8], f32[64,256], f32[64,256], s8[64]) tuple(gr, lt, nd, ro)\n"
		"}\n";
	struct tu_built b;
	tu_build(text, &b);
	const struct sim_kernel *g = tu_kernel(&b, "g");
	assert_int_equal(g->kind, SIM_KERNEL_DOT);
	assert_int_equal(g->main_op, IR_OP_DOT);
	assert_non_null(g->lowered);
	assert_ptr_equal(g->instr, g->lowered);
	assert_ptr_equal(g->tiled, g->lowered);
	assert_int_equal(g->tiled->shape.type, IR_TYPE_F32);
	assert_int_equal(g->tiled->shape.rank, 3);
	assert_int_equal(g->lowered->attrs.precision[0], IR_PRECISION_HIGHEST);
	assert_int_equal(g->lowered->attrs.precision[1], IR_PRECISION_DEFAULT);
	assert_near(g->work.mxu_macs, 16384.0, 0);
	assert_near(g->work.flops, 2 * 16384.0, 0);
	const struct sim_kernel *lt = tu_kernel(&b, "lt");
	assert_int_equal(lt->kind, SIM_KERNEL_DOT);
	assert_int_equal(lt->n_inputs, 3);
	assert_near(lt->work.mxu_macs, 2097152.0, 0);
	assert_int_equal(tu_kernel(&b, "nd")->kind, SIM_KERNEL_UNMODELLED);
	assert_null(tu_kernel(&b, "nd")->lowered);
	assert_int_equal(tu_kernel(&b, "ro")->kind, SIM_KERNEL_UNMODELLED);
	assert_int_equal(b.p.n_unmodelled, 2);
	struct hw_spec hw;
	if (tu_load_spec("v3", &hw)) {
		assert_int_equal(sim_program_estimate(&b.p, &hw, NULL), TS_OK);
		assert_true(g->est.modelled);
		assert_true(g->est.mxu_cycles > 0);
		assert_near(g->est.flops, 2 * 16384.0, 0);
		assert_true(g->est.time_ns > 0);
		assert_false(tu_kernel(&b, "nd")->est.modelled);
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		assert_non_null(f);
		assert_int_equal(sim_kernel_explain(g, &hw, NULL, f, NULL), TS_OK);
		fclose(f);
		const char *want = "kernel g (dot)\n  library call __cublas$gemm, "
				   "costed as the dot it computes (sim/kernels.c "
				   "\"Library calls\")\n";
		assert_true(len >= strlen(want));
		assert_memory_equal(out, want, strlen(want));
		free(out);
	}
	tu_built_free(&b);
}

/* cuDNN convolutions are convolutions, the backward ones as the forward
 * convolution their window and dim_labels describe (input, filter,
 * output from result and operands as XLA's GetGpuConvConfig). By hand:
 * input [8,18,18,4] b01f, filter [3,3,4,32] 01io, no padding: output
 * [8,16,16,32], every tap valid, MACs = 8 x 16 x 16 x 32 x (3 x 3 x 4)
 * = 2359296 for all three. */
static void test_library_conv(void **state)
{
	(void)state;
	static const char text[] = LIB_HEAD
		"ENTRY e {\n"
		"  in = f32[8,18,18,4] parameter(0)\n"
		"  w = f32[3,3,4,32] parameter(1)\n"
		"  dy = f32[8,16,16,32] parameter(2)\n"
		"  fw = (f32[8,16,16,32], u8[0]) custom-call(in, w), "
		"window={size=3x3}, dim_labels=b01f_01io->b01f, "
		"custom_call_target=\"__cudnn$convForward\", "
		"backend_config={\"conv_result_scale\":1}\n"
		"  bi = (f32[8,18,18,4], u8[0]) custom-call(dy, w), "
		"window={size=3x3}, dim_labels=b01f_01io->b01f, "
		"custom_call_target=\"__cudnn$convBackwardInput\"\n"
		"  bf = (f32[3,3,4,32], u8[0]) custom-call(in, dy), "
		"window={size=3x3}, dim_labels=b01f_01io->b01f, "
		"custom_call_target=\"__cudnn$convBackwardFilter\"\n"
		"  nl = (f32[8,16,16,32], u8[0]) custom-call(in, w), "
		"custom_call_target=\"__cudnn$convForward\"\n"
		"  c4 = f32[4] constant({1, 2, 3, 4})\n"
		"  n = f32[4] fusion(c4), kind=kLoop, calls=f\n"
		"  ROOT t = ((f32[8,16,16,32], u8[0]), (f32[8,18,18,4], u8[0]), "
		"(f32[3,3,4,32], u8[0]), (f32[8,16,16,32], u8[0])) "
		"tuple(fw, bi, bf, nl)\n"
		"}\n";
	struct tu_built b;
	tu_build(text, &b);
	const char *convs[] = {"fw", "bi", "bf"};
	for (int i = 0; i < 3; i++) {
		const struct sim_kernel *k = tu_kernel(&b, convs[i]);
		assert_int_equal(k->kind, SIM_KERNEL_CONVOLUTION);
		assert_int_equal(k->main_op, IR_OP_CONVOLUTION);
		assert_near(k->work.mxu_macs, 2359296.0, 0);
		assert_int_equal(k->n_inputs, 2);
	}
	/* The backward calls' forward shapes: output d_output-shaped, the
	 * call's result an operand. */
	const struct sim_kernel *bi = tu_kernel(&b, "bi");
	assert_int_equal(bi->tiled->shape.dims[1], 16);
	assert_int_equal(bi->inputs[0]->shape.dims[1], 18);
	assert_string_equal(bi->inputs[1]->name, "w");
	const struct sim_kernel *bf = tu_kernel(&b, "bf");
	assert_string_equal(bf->inputs[0]->name, "in");
	assert_int_equal(bf->inputs[1]->shape.dims[3], 32);
	assert_int_equal(bf->inputs[1]->shape.dims[0], 3);
	/* no dim_labels: not a convolution it can cost */
	assert_int_equal(tu_kernel(&b, "nl")->kind, SIM_KERNEL_UNMODELLED);
	assert_int_equal(b.p.n_unmodelled, 1);
	struct hw_spec hw;
	if (tu_load_spec("v3", &hw)) {
		assert_int_equal(sim_program_estimate(&b.p, &hw, NULL), TS_OK);
		for (int i = 0; i < 3; i++) {
			const struct sim_kernel *k = tu_kernel(&b, convs[i]);
			assert_true(k->est.modelled);
			assert_true(k->est.mxu_cycles > 0);
			assert_near(k->est.flops, 2 * 2359296.0, 0);
		}
	}
	tu_built_free(&b);
}

/* A Pallas kernel (a tpu_custom_call) whose backend config declares
 * flops, transcendentals and bytes (jax's pl.CostEstimate), its operand
 * f32[1024,1024]{1,0:T(8,128)} and its result the same. */
static void build_pallas(const char *cost, struct tu_built *b)
{
	static char text[1024];
	snprintf(text, sizeof text,
		 "HloModule p\nENTRY e {\n"
		 "  x = f32[1024,1024]{1,0:T(8,128)} parameter(0)\n"
		 "  ROOT k = f32[1024,1024]{1,0:T(8,128)} custom-call(x), "
		 "custom_call_target=\"tpu_custom_call\", backend_config="
		 "{\"custom_call_config\":{\"body\":\"TUzvUgFN\",%s"
		 "\"needs_layout_passes\":true}}\n}\n",
		 cost);
	tu_build(text, b);
}

/*
 * The Pallas kernel is costed from what it declares, its operand and
 * result (4 MiB each) at HBM bandwidth (model.c SIM_PLAN_DECLARED):
 *   time = overhead + max(flops / peak, the transcendentals' vregs at
 *          the spec's transcendental cost / cores / clock, 8 MiB / bw)
 * with 10^12 FLOPs (MXU-bound on v6e: about 1 ms against 6 us of HBM),
 * then 10^13 transcendentals (VPU-bound); without a cost_estimate, or with
 * a count that is no number, it is not modelled.
 */
static void test_pallas_declared(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v6e", &hw))
		skip();
	struct tu_built b;
	struct ts_diag d = {0};
	build_pallas("\"cost_estimate\":{\"flops\":\"1000000000000\","
		     "\"transcendentals\":\"1000\",\"bytes_accessed\":\"8388608\","
		     "\"remote_bytes_transferred\":\"0\"},", &b);
	const struct sim_kernel *k = tu_kernel(&b, "k");
	assert_int_equal(k->kind, SIM_KERNEL_FUSION);
	assert_near(k->work.flops, 1e12, 0);
	struct sim_estimate e;
	assert_int_equal(sim_kernel_estimate(k, &hw, NULL, &e, &d), TS_OK);
	assert_true(e.modelled);
	assert_int_equal(e.bound, HW_UNIT_MXU);
	double mxu = 1e12 / hw_spec_peak_flops(&hw) * 1e9;
	assert_true(k->starts_program); /* the module's one kernel */
	assert_near(e.time_ns, hw.kernel_overhead_ns + hw.program_overhead_ns + mxu,
		    1e-9 * mxu);
	tu_built_free(&b);

	build_pallas("\"cost_estimate\":{\"flops\":\"0\",\"transcendentals\":"
		     "\"10000000000000\",\"bytes_accessed\":\"8388608\"},", &b);
	k = tu_kernel(&b, "k");
	assert_int_equal(sim_kernel_estimate(k, &hw, NULL, &e, &d), TS_OK);
	assert_int_equal(e.bound, HW_UNIT_VPU);
	double vpu = hw_vpu_op_cycles(&hw, hw_vpu_vregs(&hw, 1e13, 32),
				      HW_VPU_TRANSCEND) /
		     hw_spec_cores(&hw) / hw.clock_hz * 1e9;
	assert_near(e.time_ns, hw.kernel_overhead_ns + hw.program_overhead_ns + vpu,
		    1e-9 * vpu);
	tu_built_free(&b);

	static const char *const none[] = {
		"", "\"cost_estimate\":{\"flops\":\"x\",\"transcendentals\":\"0\","
		    "\"bytes_accessed\":\"0\"},"};
	for (size_t i = 0; i < TS_ARRAY_LEN(none); i++) {
		build_pallas(none[i], &b);
		assert_int_equal(tu_kernel(&b, "k")->kind,
				 SIM_KERNEL_UNMODELLED);
		tu_built_free(&b);
	}
}

/* XLA's GPU test module xla_gpu_kernel_reuse_cublas.hlo: every
 * __cublas$gemm is f32[5,5] x f32[5,5] contracting lhs 1 / rhs 0, so
 * M = N = K = 5 and each is 2 x 5 x 5 x 5 = 250 FLOPs of MXU work; the
 * file's five modules hold 4 + 0 + 3 + 4 + 4 = 15 gemms and nothing
 * unmodelled. */
static void test_library_gemm_corpus(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !*shared) {
		print_message("TPUSIM_SHARED is not set: skipping the cuBLAS "
			      "corpus test\n");
		skip();
	}
	char path[1024];
	snprintf(path, sizeof path,
		 "%s/data/hlo-corpus/xla_gpu_kernel_reuse_cublas.hlo", shared);
	char *text = NULL;
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	assert_int_equal(hlo_parse_file(path, &text, &m, &n, &d), TS_OK);
	assert_int_equal(n, 5);
	struct hw_spec hw;
	bool have_hw = tu_load_spec("v3", &hw);
	int gemms = 0;
	for (int i = 0; i < n; i++) {
		struct sim_program p;
		assert_int_equal(sim_program_build(m[i], NULL, &p, &d), TS_OK);
		assert_int_equal(p.n_unmodelled, 0);
		if (have_hw)
			assert_int_equal(sim_program_estimate(&p, &hw, &d),
					 TS_OK);
		for (int j = 0; j < p.n_kernels; j++) {
			const struct sim_kernel *k = &p.kernels[j];
			if (strncmp(k->name, "custom-call", 11) != 0)
				continue;
			gemms++;
			assert_int_equal(k->kind, SIM_KERNEL_DOT);
			assert_near(k->work.mxu_macs, 125.0, 0);
			assert_near(k->work.flops, 250.0, 0);
			if (have_hw) {
				assert_near(k->est.flops, 250.0, 0);
				assert_true(k->est.mxu_cycles > 0);
			}
		}
		sim_program_free(&p);
	}
	assert_int_equal(gemms, 15);
	for (int i = 0; i < n; i++)
		ir_module_free(m[i]);
	ts_free(m);
	ts_free(text);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(sim_kernel_kind_name(SIM_KERNEL_FUSION), "fusion");
	assert_string_equal(sim_kernel_kind_name(SIM_KERNEL_UNMODELLED),
			    "unmodelled");
	assert_string_equal(sim_kernel_kind_name(SIM_KERNEL_KIND_COUNT),
			    "invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compiled_kernels),
		cmocka_unit_test(test_reshape_bitcast),
		cmocka_unit_test(test_result_relayout),
		cmocka_unit_test(test_while_known),
		cmocka_unit_test(test_while_derived),
		cmocka_unit_test(test_while_derived_copied_init),
		cmocka_unit_test(test_while_assumed),
		cmocka_unit_test(test_trip_counts),
		cmocka_unit_test(test_async_overlap),
		cmocka_unit_test(test_async_dma),
		cmocka_unit_test(test_host_offload),
		cmocka_unit_test(test_link_queues),
		cmocka_unit_test(test_collective_queues),
		cmocka_unit_test(test_while_nested),
		cmocka_unit_test(test_conditional),
		cmocka_unit_test(test_collectives_unmodelled),
		cmocka_unit_test(test_tpu_custom_calls),
		cmocka_unit_test(test_sparsecore_call),
		cmocka_unit_test(test_group_softmax),
		cmocka_unit_test(test_group_layernorm),
		cmocka_unit_test(test_group_sibling_reduces),
		cmocka_unit_test(test_group_transcendental_recompute),
		cmocka_unit_test(test_group_sigmoid_recompute),
		cmocka_unit_test(test_group_kernel_cycle),
		cmocka_unit_test(test_group_single_kernels),
		cmocka_unit_test(test_group_tpu_rules),
		cmocka_unit_test(test_group_while),
		cmocka_unit_test(test_bad_dot),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_library_gemm),
		cmocka_unit_test(test_library_conv),
		cmocka_unit_test(test_library_gemm_corpus),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_pallas_declared),
		cmocka_unit_test(test_collective_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
