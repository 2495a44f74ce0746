/*
 * test_rewrite.c: what XLA's TPU compiler does to a module around its
 * fusion (sim/rewrite.c): a row max broadcast back becomes a
 * reduce-window over the row on the generations whose spec says so.
 * - the attention's scores after a dot, f32[2,4,64,256]{2,3,1,0} (the
 *   row, dim 3, second-minor, as XLA lays out the decoders' scores): on
 *   v5e the broadcast is reduce-window(x, -inf) of size 511, padded 255
 *   either side, the reduce dead; fused as XLA fuses the compiled
 *   decoders' softmax (data/compiled/v5e/decoder_s: one fusion holds the
 *   dot, the window, subtract, exp and the sum and writes exp and the
 *   sum; the divide apart), the made line written from the IR, read back
 *   at the same time; on v3 nothing changes;
 * - the rule case by case (a sum, the lane dim, a major dim, another
 *   user, a broadcast elsewhere, another layout, a row of one);
 * - generated modules: the rewrite happens exactly where the rule read
 *   off the text the generator wrote says, the module still passes
 *   XLA's shape checks (ir_verify), and fuse writes it and reads it back
 *   at the same program time with those windows;
 * - the all-reduce combiner: two independent ones combined, a third
 *   that reads the first ends the round, another type, reducer or
 *   device group never joins, the threshold and the SparseCores' cap;
 *   fused and read back at the same time; and on generated modules
 *   every combined group is pairwise independent in the module before,
 *   every all-reduce is kept or combined, the module passes XLA's
 *   checks and reads back after fuse at the same time;
 * - the copies into donated buffers case by case (an elementwise update,
 *   a reader after it, a dot's result, another parameter, an update in
 *   place, a donor of no output's size, a tuple's element, a written
 *   alias), fused and read back at the same time; on the compiled zoo
 *   the donors pair with the outputs XLA pairs them with (its
 *   input_output_alias) and the copies are the ones XLA inserted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

/* A reducer computation: name(a, b) = op(a, b) of type t. */
#define REDUCER(name, t, op)                                                   \
	name " {\n  a = " t "[] parameter(0)\n  b = " t "[] parameter(1)\n"    \
	"  ROOT s = " t "[] " op "(a, b)\n}\n"
#define REDUCERS REDUCER("mx", "f32", "maximum") REDUCER("ad", "f32", "add")

#define L4 "{2,3,1,0:T(8,128)}"
#define L3 "{2,1,0:T(8,128)}"
static const char attention[] =
	"HloModule att\n" REDUCERS
	"ENTRY e {\n"
	"  q = bf16[2,4,64,128]{3,2,1,0:T(8,128)(2,1)} parameter(0)\n"
	"  k = bf16[2,4,256,128]{3,2,1,0:T(8,128)(2,1)} parameter(1)\n"
	"  s = f32[2,4,64,256]" L4 " dot(q, k), lhs_batch_dims={0,1}, "
	"lhs_contracting_dims={3}, rhs_batch_dims={0,1}, "
	"rhs_contracting_dims={3}\n"
	"  c = f32[] constant(0.088)\n"
	"  bc = f32[2,4,64,256]" L4 " broadcast(c), dimensions={}\n"
	"  x = f32[2,4,64,256]" L4 " multiply(s, bc)\n"
	"  ninf = f32[] constant(-inf)\n"
	"  max = f32[2,4,64]" L3 " reduce(x, ninf), dimensions={3}, "
	"to_apply=mx\n"
	"  bmax = f32[2,4,64,256]" L4 " broadcast(max), dimensions={0,1,2}\n"
	"  sub = f32[2,4,64,256]" L4 " subtract(x, bmax)\n"
	"  ex = f32[2,4,64,256]" L4 " exponential(sub)\n"
	"  zero = f32[] constant(0)\n"
	"  sum = f32[2,4,64]" L3 " reduce(ex, zero), dimensions={3}, "
	"to_apply=ad\n"
	"  bsum = f32[2,4,64,256]" L4 " broadcast(sum), dimensions={0,1,2}\n"
	"  ROOT out = f32[2,4,64,256]" L4 " divide(ex, bsum)\n"
	"}\n";

/* Parses text, rewrites it for hw; the module (ir_module_free it), what
 * the rewrite did in *done. */
static struct ir_module *rewritten(const char *text, const struct hw_spec *hw,
				   struct sim_rewrites *done)
{
	struct ir_module **m = NULL;
	int nm = 0;
	struct ts_diag d = {0};
	if (hlo_parse("r.hlo", text, strlen(text), &m, &nm, &d) != TS_OK)
		fail_msg("parse: %s\n%s", d.msg, text);
	assert_int_equal(nm, 1);
	struct ir_module *mod = m[0];
	ts_free(m);
	assert_int_equal(sim_module_rewrite(mod, hw, done, &d), TS_OK);
	if (ir_verify(mod, &d) != TS_OK)
		fail_msg("rewritten module fails XLA's checks: %s", d.msg);
	return mod;
}

static const struct ir_instr *instr(const struct ir_module *m, const char *name)
{
	for (int i = 0; i < m->entry->n_instrs; i++)
		if (!strcmp(m->entry->instrs[i]->name, name))
			return m->entry->instrs[i];
	fail_msg("no instruction %s", name);
	return NULL;
}

static void test_attention_ir(void **state)
{
	(void)state;
	struct hw_spec v5e, v3;
	if (!tu_load_spec("v5e", &v5e) || !tu_load_spec("v3", &v3))
		skip();
	struct sim_rewrites done;
	struct ir_module *m = rewritten(attention, &v5e, &done);
	assert_int_equal(done.windows, 1);
	const struct ir_instr *w = instr(m, "bmax"), *r = instr(m, "max");
	assert_int_equal(w->op, IR_OP_REDUCE_WINDOW);
	assert_true(w->flags & IR_INSTR_MADE);
	assert_int_equal(w->n_operands, 2);
	assert_ptr_equal(w->operands[0], instr(m, "x"));
	assert_ptr_equal(w->operands[1], instr(m, "ninf"));
	assert_int_equal(w->n_called, 1);
	assert_string_equal(w->called[0]->name, "mx");
	assert_null(w->attrs.dimensions);
	assert_non_null(w->attrs.window);
	assert_int_equal(w->attrs.window->n, 4);
	static const int64_t size[4] = {1, 1, 1, 511}, pad[4] = {0, 0, 0, 255};
	for (int i = 0; i < 4; i++) {
		const struct ir_window_dim *wd = &w->attrs.window->dims[i];
		assert_int_equal(wd->size, size[i]);
		assert_int_equal(wd->pad_lo, pad[i]);
		assert_int_equal(wd->pad_hi, pad[i]);
		assert_int_equal(wd->stride, 1);
	}
	/* the reduce has no user left; x is read by the window too */
	assert_int_equal(r->n_users, 0);
	assert_int_equal(instr(m, "x")->n_users, 3);
	assert_int_equal(sim_row_max_windows(m), 0);
	ir_module_free(m);
	/* v3 keeps it, though the rule would make it a window */
	m = rewritten(attention, &v3, &done);
	assert_int_equal(done.windows, 0);
	assert_int_equal(instr(m, "bmax")->op, IR_OP_BROADCAST);
	assert_int_equal(sim_row_max_windows(m), 1);
	ir_module_free(m);
}

static void test_attention_fused(void **state)
{
	(void)state;
	struct hw_spec v5e, v3;
	if (!tu_load_spec("v5e", &v5e) || !tu_load_spec("v3", &v3))
		skip();
	double t0, t1;
	int k0, k1;
	struct sim_fuse_stats fs;
	char *out = tu_fuse_round_trip(attention, &v5e, NULL, NULL, &t0, &t1,
				       &k0, &k1, &fs);
	/* the dot's kernel computes the window, exp and the sum and writes
	 * exp and the sum; the divide is a loop fusion of its own */
	assert_int_equal(fs.fusions, 2);
	assert_int_equal(fs.multi_output, 1);
	assert_near(t1, t0, 1e-9 * t0);
	assert_int_equal(k1, k0);
	if (!strstr(out, "  %bmax.f1 = f32[2,4,64,256]{2,3,1,0:T(8,128)} "
			 "reduce-window(%x.f1, %ninf.f1), window={size=1x1x1x511 "
			 "pad=0_0x0_0x0_0x255_255}, to_apply=%mx\n") ||
	    !strstr(out, " tuple(%ex.f1, %sum.f1)\n") ||
	    !strstr(out, " divide(%param_1.f0, %bsum.f0)\n") ||
	    strstr(out, " reduce(%x"))
		fail_msg("unexpected fused text:\n%s", out);
	free(out);
	/* v3: the max a reduce, no window */
	out = tu_fuse_round_trip(attention, &v3, NULL, NULL, &t0, &t1, &k0,
				 &k1, &fs);
	assert_near(t1, t0, 1e-9 * t0);
	if (strstr(out, "reduce-window") ||
	    !strstr(out, " reduce(%x.f"))
		fail_msg("unexpected fused text on v3:\n%s", out);
	free(out);
}

/* One change to a row max's module, and whether it is still made a
 * window. */
struct rule_case {
	const char *what;
	const char *from, *to; /* text replaced in base (to: NULL: kept) */
	int windows;
};

/* base with its first from replaced by to (from NULL: as it is) into
 * text; what: the case, for the message when base has no from. */
static void edit(const char *base, const char *what, const char *from,
		 const char *to, char *text, size_t cap)
{
	const char *at = from ? strstr(base, from) : NULL;
	if (from && !at)
		fail_msg("%s: no '%s'", what, from);
	if (at)
		snprintf(text, cap, "%.*s%s%s", (int)(at - base), base, to,
			 at + strlen(from));
	else
		snprintf(text, cap, "%s", base);
}

static void test_rule(void **state)
{
	(void)state;
	struct hw_spec v4;
	if (!tu_load_spec("v4", &v4))
		skip();
	static const char base[] =
		"HloModule r\n" REDUCERS
		"ENTRY e {\n"
		"  x = f32[8,100,256]{1,2,0:T(8,128)} parameter(0)\n"
		"  ninf = f32[] constant(-inf)\n"
		"  max = f32[8,100]{1,0} reduce(x, ninf), dimensions={2}, "
		"to_apply=mx\n"
		"  b = f32[8,100,256]{1,2,0:T(8,128)} broadcast(max), "
		"dimensions={0,1}\n"
		"  ROOT sub = f32[8,100,256]{1,2,0:T(8,128)} subtract(x, b)\n"
		"}\n";
	static const struct rule_case cases[] = {
		{"the row second-minor", NULL, NULL, 1},
		{"a sum", "to_apply=mx", "to_apply=ad", 0},
		{"the row on the lanes", "{1,2,0:T(8,128)} parameter",
		 "{2,1,0:T(8,128)} parameter", 0},
		{"a broadcast in another layout",
		 "{1,2,0:T(8,128)} broadcast", "{2,1,0:T(8,128)} broadcast", 0},
		{"two broadcasts back",
		 "  ROOT sub",
		 "  b2 = f32[8,100,256]{1,2,0:T(8,128)} broadcast(max), "
		 "dimensions={0,1}\n  s2 = f32[8,100,256]{1,2,0:T(8,128)} "
		 "add(x, b2)\n  sub", 2},
		{"another user",
		 "  ROOT sub",
		 "  ng = f32[8,100]{1,0} negate(max)\n  sub", 0},
		{"the result", "  ROOT sub", "  t = (f32[8,100]) tuple(max)\n  sub",
		 0},
		{"a broadcast to a larger shape",
		 "  ROOT sub",
		 "  b2 = f32[8,100,256,2]{1,2,0,3:T(8,128)} broadcast(max), "
		 "dimensions={0,1}\n  sub", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const struct rule_case *c = &cases[i];
		char text[4096];
		edit(base, c->what, c->from, c->to, text, sizeof text);
		struct sim_rewrites done;
		struct ir_module *m = rewritten(text, &v4, &done);
		if (done.windows != c->windows)
			fail_msg("%s: %d windows, want %d", c->what,
				 done.windows, c->windows);
		ir_module_free(m);
	}
}

/* splitmix64 */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static int pick(uint64_t *s, int n)
{
	return (int)(next(s) % (uint64_t)n);
}

/* dims and a layout (minor_to_major order m2m) as HLO writes them */
static void put_shape(FILE *f, int rank, const int64_t *dims, const int *m2m,
		      bool tiled)
{
	fputs("f32[", f);
	for (int i = 0; i < rank; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)dims[i]);
	fputc(']', f);
	if (!tiled)
		return;
	fputc('{', f);
	for (int i = 0; i < rank; i++)
		fprintf(f, "%s%d", i ? "," : "", m2m[i]);
	fputs(":T(8,128)}", f);
}

/* A random permutation of 0 .. n-1 into p. */
static void shuffle(uint64_t *s, int n, int *p)
{
	for (int i = 0; i < n; i++)
		p[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = pick(s, i + 1), t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
}

/* A module of one reduce of x over dim d, broadcast back to subtracts,
 * into text (malloc'd); returns the windows the rule asks for, read off
 * what was written: a maximum, every user a broadcast back in x's
 * layout, the row of more than one element and second-minor in x's
 * written layout (minor_to_major[1]). */
static int gen_module(uint64_t seed, char **text)
{
	static const int64_t sizes[] = {1, 2, 5, 8, 64, 100, 128, 200};
	uint64_t s = seed;
	int rank = 2 + pick(&s, 3), d = pick(&s, rank), m2m[4], other[4];
	int64_t dims[4], rdims[3];
	for (int i = 0; i < rank; i++)
		dims[i] = sizes[pick(&s, 8)];
	shuffle(&s, rank, m2m);
	const char *reducer = pick(&s, 10) < 7 ? "mx" : "ad";
	int n_backs = 1 + pick(&s, 2);
	bool extra_user = pick(&s, 5) == 0, moved = pick(&s, 6) == 0;
	for (int i = 0, j = 0; i < rank; i++)
		if (i != d)
			rdims[j++] = dims[i];
	if (moved)
		shuffle(&s, rank, other);
	else
		memcpy(other, m2m, sizeof other);
	bool same = !memcmp(other, m2m, (size_t)rank * sizeof *m2m);
	size_t len;
	FILE *f = open_memstream(text, &len);
	assert_non_null(f);
	fputs("HloModule g\n" REDUCERS "ENTRY e {\n  x = ", f);
	put_shape(f, rank, dims, m2m, true);
	fputs(" parameter(0)\n  init = f32[] constant(-inf)\n  r = ", f);
	put_shape(f, rank - 1, rdims, NULL, false);
	fprintf(f, " reduce(x, init), dimensions={%d}, to_apply=%s\n", d,
		reducer);
	for (int b = 0; b < n_backs; b++) {
		fprintf(f, "  b%d = ", b);
		put_shape(f, rank, dims, b == n_backs - 1 ? other : m2m, true);
		fputs(" broadcast(r), dimensions={", f);
		for (int i = 0, j = 0; i < rank; i++)
			if (i != d)
				fprintf(f, "%s%d", j++ ? "," : "", i);
		fprintf(f, "}\n  s%d = ", b);
		put_shape(f, rank, dims, m2m, true);
		fprintf(f, " subtract(x, b%d)\n", b);
	}
	if (extra_user) {
		fputs("  n = ", f);
		put_shape(f, rank - 1, rdims, NULL, false);
		fputs(" negate(r)\n", f);
	}
	fputs("  ROOT t = (", f);
	for (int b = 0; b < n_backs; b++) {
		fputs(b ? ", " : "", f);
		put_shape(f, rank, dims, m2m, true);
	}
	if (extra_user) {
		fputs(", ", f);
		put_shape(f, rank - 1, rdims, NULL, false);
	}
	fputs(") tuple(", f);
	for (int b = 0; b < n_backs; b++)
		fprintf(f, "%ss%d", b ? ", " : "", b);
	fputs(extra_user ? ", n)\n}\n" : ")\n}\n", f);
	fclose(f);
	bool window = !strcmp(reducer, "mx") && !extra_user && same &&
		      dims[d] > 1 && m2m[1] == d;
	return window ? n_backs : 0;
}

#define GEN_SEEDS 300

static void test_generated(void **state)
{
	(void)state;
	struct hw_spec v4, v3;
	if (!tu_load_spec("v4", &v4) || !tu_load_spec("v3", &v3))
		skip();
	int made = 0, modules = 0;
	for (uint64_t seed = 0; seed < GEN_SEEDS; seed++) {
		char *text;
		int want = gen_module(seed, &text);
		struct sim_rewrites done;
		struct ir_module *m = rewritten(text, &v3, &done);
		assert_int_equal(done.windows, 0);
		assert_int_equal(sim_row_max_windows(m), want);
		ir_module_free(m);
		m = rewritten(text, &v4, &done);
		if (done.windows != want)
			fail_msg("seed %llu: %d windows, want %d\n%s",
				 (unsigned long long)seed, done.windows, want,
				 text);
		ir_module_free(m);
		double t0, t1;
		int k0, k1;
		struct sim_fuse_stats fs;
		char *out = tu_fuse_round_trip(text, &v4, NULL, NULL, &t0, &t1,
					       &k0, &k1, &fs);
		int in_out = 0;
		for (const char *p = out; (p = strstr(p, " reduce-window(")); p++)
			in_out++;
		if (in_out != want || !(fabs(t1 - t0) <= 1e-9 * t0))
			fail_msg("seed %llu: %d windows written (want %d), "
				 "%.9g ns read back against %.9g\n%s",
				 (unsigned long long)seed, in_out, want, t1, t0,
				 out);
		made += want;
		modules += want > 0;
		free(out);
		free(text);
	}
	print_message("%d of %d generated modules made %d windows\n", modules,
		      GEN_SEEDS, made);
	/* the generator reaches both sides of the rule */
	assert_true(modules >= GEN_SEEDS / 20 && modules <= GEN_SEEDS / 2);
}

#define AR_REDUCERS                                                            \
	REDUCER("add", "f32", "add")                                           \
	REDUCER("addb", "bf16", "add") REDUCER("mxf", "f32", "maximum")
#define G ", replica_groups={{0,1},{2,3}}"
static const char all_reduces[] =
	"HloModule c, num_partitions=4\n" AR_REDUCERS
	"ENTRY e {\n"
	"  x = f32[1024]{0} parameter(0)\n  y = f32[512]{0} parameter(1)\n"
	"  z = bf16[256]{0} parameter(2)\n"
	"  a1 = f32[1024]{0} all-reduce(x)" G ", to_apply=add\n"
	"  u1 = f32[1024]{0} negate(a1)\n"
	"  y2 = f32[512]{0} exponential(y)\n"
	"  a2 = f32[512]{0} all-reduce(y2), replica_groups=[2,2]<=[4], "
	"to_apply=add\n"
	"  a3 = f32[1024]{0} all-reduce(u1)" G ", to_apply=add\n"
	"  a4 = f32[512]{0} all-reduce(y)" G ", to_apply=add\n"
	"  b1 = bf16[256]{0} all-reduce(z)" G ", to_apply=addb\n"
	"  a5 = f32[512]{0} all-reduce(y), replica_groups={{0,2},{1,3}}, "
	"to_apply=add\n"
	"  a6 = f32[512]{0} all-reduce(y)" G ", to_apply=mxf\n"
	"  ROOT t = (f32[512]{0}, f32[1024]{0}, f32[512]{0}, bf16[256]{0}, "
	"f32[512]{0}, f32[512]{0}) tuple(a2, a3, a4, b1, a5, a6)\n"
	"}\n";
#undef G

/* The all-reduce combined into c (its get-tuple-element), or NULL. */
static const struct ir_instr *combined_into(const struct ir_module *m,
					    const char *name)
{
	const struct ir_instr *g = instr(m, name);
	return g->op == IR_OP_GET_TUPLE_ELEMENT ? g->operands[0] : NULL;
}

static void test_combine_ir(void **state)
{
	(void)state;
	struct hw_spec v5e;
	if (!tu_load_spec("v5e", &v5e))
		skip();
	struct sim_rewrites done;
	struct ir_module *m = rewritten(all_reduces, &v5e, &done);
	/* a1 and a2 (one device grouping, written two ways), then a3 (which
	 * reads a1: it ended the first round) and a4; b1 (bf16), a5
	 * (other groups) and a6 (maximum) alone */
	assert_int_equal(done.combined, 4);
	const struct ir_instr *c1 = combined_into(m, "a1");
	assert_non_null(c1);
	assert_ptr_equal(combined_into(m, "a2"), c1);
	assert_string_equal(c1->name, "a1.combined");
	assert_int_equal(c1->op, IR_OP_ALL_REDUCE);
	assert_int_equal(c1->n_operands, 2);
	assert_ptr_equal(c1->operands[0], instr(m, "x"));
	assert_ptr_equal(c1->operands[1], instr(m, "y2"));
	assert_int_equal(c1->shape.n_elems, 2);
	assert_int_equal(instr(m, "a2")->attrs.tuple_index, 1);
	const struct ir_instr *c2 = combined_into(m, "a3");
	assert_non_null(c2);
	assert_ptr_equal(combined_into(m, "a4"), c2);
	assert_ptr_equal(c2->operands[0], instr(m, "u1"));
	for (int i = 0; i < 3; i++)
		assert_null(combined_into(m, (const char *[]){"b1", "a5",
							       "a6"}[i]));
	/* a1's reader comes after the combined one now */
	assert_true(c1->index < instr(m, "u1")->index);
	for (int i = 0; i < m->entry->n_instrs; i++)
		assert_int_equal(m->entry->instrs[i]->index, i);
	ir_module_free(m);
	/* the threshold (a1 and a2 together are 6144 bytes), and what would
	 * run on the SparseCores (2048 bytes here) combined neither alone
	 * nor into another: each all-reduce stays */
	struct hw_spec small = v5e, sc = v5e;
	small.xla_all_reduce_combine_bytes = 6143;
	sc.xla_async_all_reduce_bytes = 2048;
	assert_true(sim_all_reduce_combine_limit(&sc) == 2047);
	for (int i = 0; i < 2; i++) {
		m = rewritten(all_reduces, i ? &sc : &small, &done);
		assert_int_equal(done.combined, 0);
		ir_module_free(m);
	}
	/* a text that reads u before naming it: a2 reads a1 through u, so
	 * the two stay apart (the computation is ordered first); a subtract
	 * is no reduction XLA combines */
	static const char fwd[] =
		"HloModule fwd, num_partitions=4\n" AR_REDUCERS
		REDUCER("sub", "f32", "subtract")
		"ENTRY e {\n  x = f32[1024]{0} parameter(0)\n"
		"  a1 = f32[1024]{0} all-reduce(x), replica_groups={}, "
		"to_apply=add\n"
		"  a2 = f32[1024]{0} all-reduce(u), replica_groups={}, "
		"to_apply=add\n"
		"  u = f32[1024]{0} negate(a1)\n"
		"  s1 = f32[1024]{0} all-reduce(x), replica_groups={}, "
		"to_apply=sub\n"
		"  s2 = f32[1024]{0} all-reduce(u), replica_groups={}, "
		"to_apply=sub\n"
		"  ROOT t = (f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, "
		"f32[1024]{0}) tuple(a1, a2, s1, s2)\n}\n";
	m = rewritten(fwd, &v5e, &done);
	assert_int_equal(done.combined, 0);
	assert_true(instr(m, "u")->index < instr(m, "a2")->index);
	ir_module_free(m);
	/* a member's own reducer keeps its one other caller (caller) */
	static const char two[] =
		"HloModule two, num_partitions=4\n" AR_REDUCERS
		REDUCER("add2", "f32", "add")
		"ENTRY e {\n  x = f32[1024]{0} parameter(0)\n"
		"  y = f32[1024]{0} parameter(1)\n"
		"  a1 = f32[1024]{0} all-reduce(x), replica_groups={}, "
		"to_apply=add\n"
		"  a2 = f32[1024]{0} all-reduce(y), replica_groups={}, "
		"to_apply=add2\n"
		"  z = f32[] constant(0)\n"
		"  r = f32[] reduce(y, z), dimensions={0}, to_apply=add2\n"
		"  ROOT t = (f32[1024]{0}, f32[1024]{0}, f32[]) "
		"tuple(a1, a2, r)\n}\n";
	m = rewritten(two, &v5e, &done);
	assert_int_equal(done.combined, 2);
	const struct ir_computation *add2 = ir_module_find_comp(m, "add2"),
				    *add = ir_module_find_comp(m, "add");
	assert_int_equal(add2->n_callers, 1);
	assert_ptr_equal(add2->caller, instr(m, "r"));
	assert_int_equal(add->n_callers, 1);
	assert_ptr_equal(add->caller, combined_into(m, "a1"));
	ir_module_free(m);
}

/* The combined module fused as `fuse` writes it: one all-reduce of both
 * operands, its elements read by get-tuple-element, read back at the
 * same time and kernels. */
static void test_combine_fused(void **state)
{
	(void)state;
	struct hw_spec v5e;
	if (!tu_load_spec("v5e", &v5e))
		skip();
	double t0, t1;
	int k0, k1;
	struct sim_fuse_stats fs;
	char *out = tu_fuse_round_trip(all_reduces, &v5e, NULL, NULL, &t0, &t1,
				       &k0, &k1, &fs);
	assert_int_equal(k1, k0);
	assert_near(t1, t0, 1e-9 * t0);
	if (!strstr(out, " all-reduce(%x, %y2), replica_groups={{0,1},{2,3}}, "
			 "to_apply=add\n") ||
	    !strstr(out, " get-tuple-element(%a1.combined), index=1\n") ||
	    !strstr(out, " all-reduce(%u1, %y), "))
		fail_msg("not combined as written:\n%s", out);
	free(out);
}

/* A module of n all-reduces (n <= 64), each of 128, 256 or 512 f32s,
 * of the parameter of its size or of an earlier one's value negated, of
 * random device groups and reducer, all returned, into text (malloc'd). */
static void gen_all_reduces(uint64_t seed, int n, char **text)
{
	uint64_t s = seed;
	int cls[64];
	size_t len;
	FILE *f = open_memstream(text, &len);
	assert_non_null(f);
	fputs("HloModule g, num_partitions=4\n" AR_REDUCERS "ENTRY e {\n", f);
	for (int k = 0; k < 3; k++)
		fprintf(f, "  p%d = f32[%d]{0} parameter(%d)\n", k, 128 << k, k);
	for (int i = 0; i < n; i++) {
		int k = cls[i] = pick(&s, 3), from = -1;
		for (int j = 0; j < i; j++) /* an earlier one of its size */
			if (cls[j] == k && pick(&s, 3) == 0)
				from = j;
		if (from >= 0)
			fprintf(f, "  n%d = f32[%d]{0} negate(r%d)\n", i,
				128 << k, from);
		fprintf(f, "  r%d = f32[%d]{0} all-reduce(", i, 128 << k);
		if (from >= 0)
			fprintf(f, "n%d", i);
		else
			fprintf(f, "p%d", k);
		fprintf(f, "), replica_groups=%s, to_apply=%s\n",
			pick(&s, 4) ? "{{0,1},{2,3}}" : "{{0,2},{1,3}}",
			pick(&s, 5) ? "add" : "mxf");
	}
	fputs("  ROOT t = (", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%sf32[%d]{0}", i ? ", " : "", 128 << cls[i]);
	fputs(") tuple(", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%sr%d", i ? ", " : "", i);
	fputs(")\n}\n", f);
	fclose(f);
}

/* Whether instruction a of computation c reaches b through operands. */
static bool reaches(const struct ir_computation *c, const struct ir_instr *a,
		    const struct ir_instr *b)
{
	bool *r = calloc((size_t)c->n_instrs, 1);
	assert_non_null(r);
	r[a->index] = true;
	for (int i = a->index + 1; i <= b->index; i++)
		for (int j = 0; j < c->instrs[i]->n_operands; j++)
			r[i] |= c->instrs[i]->operands[j]->parent == c &&
				r[c->instrs[i]->operands[j]->index];
	bool out = r[b->index];
	free(r);
	return out;
}

#define COMBINE_SEEDS 200

static void test_combine_generated(void **state)
{
	(void)state;
	struct hw_spec v5e;
	if (!tu_load_spec("v5e", &v5e))
		skip();
	int combined = 0, kept = 0;
	for (uint64_t seed = 0; seed < COMBINE_SEEDS; seed++) {
		uint64_t s = seed;
		int n = 2 + pick(&s, 20);
		char *text;
		gen_all_reduces(seed, n, &text);
		struct ir_module **before = NULL, **after = NULL;
		int nb = 0, na = 0;
		struct ts_diag d = {0};
		if (hlo_parse("g.hlo", text, strlen(text), &before, &nb, &d) ||
		    hlo_parse("g.hlo", text, strlen(text), &after, &na, &d))
			fail_msg("seed %llu: %s\n%s", (unsigned long long)seed,
				 d.msg, text);
		struct sim_rewrites done;
		assert_int_equal(sim_module_rewrite(after[0], &v5e, &done, &d),
				 TS_OK);
		if (ir_verify(after[0], &d) != TS_OK)
			fail_msg("seed %llu: %s\n%s", (unsigned long long)seed,
				 d.msg, text);
		/* every all-reduce kept, or an element of a combined one
		 * whose others it neither reaches nor is reached by */
		int joined = 0;
		for (int i = 0; i < n; i++) {
			char name[16];
			snprintf(name, sizeof name, "r%d", i);
			const struct ir_instr *c = combined_into(after[0], name);
			if (!c) {
				assert_int_equal(instr(after[0], name)->op,
						 IR_OP_ALL_REDUCE);
				kept++;
				continue;
			}
			joined++;
			for (int j = 0; j < n; j++) {
				char other[16];
				snprintf(other, sizeof other, "r%d", j);
				if (j == i || combined_into(after[0], other) != c)
					continue;
				const struct ir_instr *x = instr(before[0], name),
						      *y = instr(before[0], other);
				if (reaches(before[0]->entry, x, y) ||
				    reaches(before[0]->entry, y, x))
					fail_msg("seed %llu: %s and %s are "
						 "combined, one reading the "
						 "other\n%s",
						 (unsigned long long)seed, name,
						 other, text);
			}
		}
		assert_int_equal(joined, done.combined);
		combined += joined;
		ir_module_free(before[0]);
		ir_module_free(after[0]);
		ts_free(before);
		ts_free(after);
		double t0, t1;
		int k0, k1;
		struct sim_fuse_stats fs;
		char *out = tu_fuse_round_trip(text, &v5e, NULL, NULL, &t0, &t1,
					       &k0, &k1, &fs);
		if (k1 != k0 || !(fabs(t1 - t0) <= 1e-9 * t0))
			fail_msg("seed %llu: %d kernels, %.9g ns read back "
				 "against %d, %.9g\n%s",
				 (unsigned long long)seed, k1, t1, k0, t0, out);
		free(out);
		free(text);
	}
	print_message("%d all-reduces combined, %d kept, in %d generated "
		      "modules\n", combined, kept, COMBINE_SEEDS);
	/* the generator reaches both sides */
	assert_true(combined > 0 && kept > 0);
}

/* A donated weight p updated elementwise (n), read by a dot (y) the
 * update does not wait for and, dead unless a case returns them, by r
 * after it and by rb through a bitcast; x, of another parameter; q, a
 * tuple, donated in some cases. */
static const char donated[] =
	"HloModule d, buffer_donor={ (0, {}) }\n"
	"ENTRY e {\n"
	"  p = f32[256,128]{1,0} parameter(0)\n"
	"  g = f32[256,128]{1,0} parameter(1)\n"
	"  w = f32[128,128]{1,0} parameter(2)\n"
	"  q = (f32[256,128]{1,0}) parameter(3)\n"
	"  w2 = f32[256,128]{1,0} parameter(4)\n"
	"  y = f32[256,128]{1,0} dot(p, w), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  n = f32[256,128]{1,0} subtract(p, g)\n"
	"  r = f32[256,128]{1,0} add(p, n)\n"
	"  pb = f32[256,128]{1,0} bitcast(p)\n"
	"  rb = f32[256,128]{1,0} add(pb, n)\n"
	"  x = f32[256,128]{1,0} exponential(w2)\n"
	"  ROOT t = (f32[256,128]{1,0}, f32[256,128]{1,0}) tuple(n, y)\n"
	"}\n";

struct copy_case {
	const char *what;
	const char *from, *to, *from2, *to2; /* text replaced in donated */
	int copies, unfollowed;
};

/* The copies into donated buffers case by case (sim/rewrite.c): p pairs
 * with the first output of its size, {0}. */
static void test_copy_rule(void **state)
{
	(void)state;
	struct hw_spec v5e;
	if (!tu_load_spec("v5e", &v5e))
		skip();
	static const struct copy_case cases[] = {
		{"an elementwise update, the dot before it", NULL, NULL, NULL,
		 NULL, 0, 0},
		{"a reader of p after it returned", "tuple(n, y)",
		 "tuple(n, r)", NULL, NULL, 1, 0},
		{"a reader of p through a bitcast after it returned",
		 "tuple(n, y)", "tuple(n, rb)", NULL, NULL, 1, 0},
		{"p returned too", "tuple(n, y)", "tuple(n, p)", NULL, NULL, 1,
		 0},
		{"a dot's result", "tuple(n, y)", "tuple(y, n)", NULL, NULL, 1,
		 0},
		{"another parameter", "tuple(n, y)", "tuple(g, y)", NULL, NULL,
		 1, 0},
		{"p itself", "tuple(n, y)", "tuple(p, y)", NULL, NULL, 0, 0},
		{"p updated in place", "  n = f32[256,128]{1,0} subtract(p, g)",
		 "  z = s32[] constant(0)\n  u = f32[8,128]{1,0} slice(g), "
		 "slice={[0:8], [0:128]}\n  n = f32[256,128]{1,0} "
		 "dynamic-update-slice(p, u, z, z)", NULL, NULL, 0, 0},
		{"a donor of no output's size", "(0, {})", "(2, {})", NULL,
		 NULL, 0, 0},
		{"a tuple's element donated", "(0, {})", "(3, {0})", NULL, NULL,
		 0, 1},
		{"an alias written", "buffer_donor={ (0, {}) }",
		 "input_output_alias={ {1}: (0, {}) }", NULL, NULL, 1, 0},
		{"one value in two donated buffers", "(0, {})",
		 "(0, {}), (4, {})", "tuple(n, y)", "tuple(x, x)", 1, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const struct copy_case *c = &cases[i];
		char text[4096], once[4096];
		edit(donated, c->what, c->from, c->to, once, sizeof once);
		edit(once, c->what, c->from2, c->to2, text, sizeof text);
		struct sim_rewrites done;
		struct ir_module *m = rewritten(text, &v5e, &done);
		if (done.copies != c->copies || done.unfollowed != c->unfollowed)
			fail_msg("%s: %d copies, %d not followed; want %d, %d",
				 c->what, done.copies, done.unfollowed,
				 c->copies, c->unfollowed);
		ir_module_free(m);
	}
	/* a dynamic donor: none (XLA donates no dynamic array) */
	struct sim_rewrites done;
	ir_module_free(rewritten("HloModule dyn, buffer_donor={ (0, {}) }\n"
				 "ENTRY e {\n  p = f32[<=8,128]{1,0} "
				 "parameter(0)\n  ROOT q = f32[8,128]{1,0} "
				 "parameter(1)\n}\n",
				 &v5e, &done));
	assert_int_equal(done.copies, 0);
	/* fused: the copy a kernel of its own, in the layout XLA would give
	 * it, read back at the same time */
	char text[4096];
	edit(donated, "returned", "tuple(n, y)", "tuple(n, r)", text,
	     sizeof text);
	double t0, t1;
	int k0, k1;
	struct sim_fuse_stats fs;
	char *out = tu_fuse_round_trip(text, &v5e, NULL, NULL, &t0, &t1, &k0,
				       &k1, &fs);
	assert_int_equal(k1, k0);
	assert_near(t1, t0, 1e-9 * t0);
	if (!strstr(out, "  %n.copy = f32[256,128]{1,0:T(8,128)} copy(%n)\n") ||
	    !strstr(out, "  ROOT %t = (f32[256,128]{1,0}, f32[256,128]{1,0}) "
			 "tuple(%n.copy, "))
		fail_msg("no copy before the root:\n%s", out);
	free(out);
}

/* Results other devices write, and others, for the root to return
 * (ROOT in place of what it returns). */
static const char peers[] =
	"HloModule c\n"
	"add {\n  x = bf16[] parameter(0)\n  y = bf16[] parameter(1)\n"
	"  ROOT s = bf16[] add(x, y)\n}\n"
	"ENTRY e {\n"
	"  p = bf16[1024,512]{1,0} parameter(0)\n"
	"  q = bf16[4096,512]{1,0} parameter(1)\n"
	"  g = bf16[4096,512]{1,0} all-gather(p), channel_id=1, "
	"replica_groups={{0,1,2,3}}, dimensions={0}\n"
	"  a = bf16[4096,512]{1,0} all-to-all(q), channel_id=2, "
	"replica_groups={{0,1,2,3}}, dimensions={0}\n"
	"  c = bf16[4096,512]{1,0} collective-permute(q), channel_id=3, "
	"source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
	"  s = bf16[4096,512]{1,0} all-reduce(q), channel_id=4, "
	"replica_groups={{0,1,2,3}}, to_apply=add\n"
	"  b = bf16[2048,1024]{1,0} bitcast(a)\n"
	"  x = bf16[4096,512]{1,0} exponential(g)\n"
	"  ROOT t = ROOT\n"
	"}\n";

/* The copies of results other devices write (sim/rewrite.c), case by
 * case: how many, and the root reads each through its copy. */
static void test_peer_copies(void **state)
{
	(void)state;
	struct hw_spec v5e;
	if (!tu_load_spec("v5e", &v5e))
		skip();
	static const struct {
		const char *what, *root;
		int copies;
	} cases[] = {
		{"an all-gather's result", "(bf16[4096,512]{1,0}) tuple(g)", 1},
		{"an all-to-all's through a bitcast, a permute's",
		 "(bf16[2048,1024]{1,0}, bf16[4096,512]{1,0}) tuple(b, c)", 2},
		{"the root itself", "bf16[2048,1024]{1,0} bitcast(a)", 1},
		{"an all-reduce's, an exp of an all-gather's",
		 "(bf16[4096,512]{1,0}, bf16[4096,512]{1,0}) tuple(s, x)", 0},
		{"a parameter", "(bf16[4096,512]{1,0}) tuple(q)", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[4096], root[256];
		snprintf(root, sizeof root, "%s\n", cases[i].root);
		edit(peers, cases[i].what, "ROOT\n", root, text, sizeof text);
		struct sim_rewrites done;
		struct ir_module *m = rewritten(text, &v5e, &done);
		const struct ir_instr *r = m->entry->root;
		int copies = 0;
		for (int k = 0; k < (r->op == IR_OP_TUPLE ? r->n_operands : 1);
		     k++) {
			const struct ir_instr *o =
				r->op == IR_OP_TUPLE ? r->operands[k] : r;
			if (o->op != IR_OP_COPY)
				continue;
			const struct ir_instr *c = o->operands[0];
			while (c->op == IR_OP_BITCAST)
				c = c->operands[0];
			copies += c->op == IR_OP_ALL_GATHER ||
				  c->op == IR_OP_ALL_TO_ALL ||
				  c->op == IR_OP_COLLECTIVE_PERMUTE;
		}
		if (done.peer_copies != cases[i].copies ||
		    copies != cases[i].copies || done.copies != 0)
			fail_msg("%s: %d copies (%d at the root, %d aliased); "
				 "want %d",
				 cases[i].what, done.peer_copies, copies,
				 done.copies, cases[i].copies);
		ir_module_free(m);
	}
}

/* An all-gather g, a dot that reads it and one that does not (ROOT in
 * place of what the entry returns). */
static const char gathers[] =
	"HloModule g\n"
	"ENTRY e {\n"
	"  p = bf16[256,1024]{1,0} parameter(0)\n"
	"  x = bf16[1024,1024]{1,0} parameter(1)\n"
	"  g = bf16[1024,1024]{1,0} all-gather(p), channel_id=1, "
	"replica_groups={{0,1,2,3}}, dimensions={0}\n"
	"  y = bf16[1024,1024]{1,0} dot(g, x), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  z = bf16[1024,1024]{1,0} dot(x, x), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n"
	"  q = bf16[256,1024]{1,0} slice(z), slice={[0:256], [0:1024]}\n"
	"  h = bf16[1024,1024]{1,0} all-gather(q), channel_id=2, "
	"replica_groups={{0,1,2,3}}, dimensions={0}\n"
	"  ROOT t = ROOT\n"
	"}\n";

/* The all-gathers XLA runs asynchronously (sim/rewrite.c), case by
 * case: marked where a dot neither reads nor feeds them, on a spec
 * that says so. */
static void test_async_gathers(void **state)
{
	(void)state;
	struct hw_spec v5e, v4;
	if (!tu_load_spec("v5e", &v5e) || !tu_load_spec("v4", &v4))
		skip();
	static const struct {
		const char *what, *root;
		bool v4;
		int marked;
		const char *names; /* those marked, in order */
	} cases[] = {
		{"g beside z; h after z, beside y",
		 "(bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) tuple(y, h)",
		 false, 2, "g,h"},
		{"g beside z (h dead: XLA's DCE drops it)",
		 "(bf16[1024,1024]{1,0}, bf16[1024,1024]{1,0}) tuple(y, z)",
		 false, 1, "g"},
		{"on v4", "(bf16[1024,1024]{1,0}) tuple(y)", true, 0, ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char text[4096], root[256];
		snprintf(root, sizeof root, "%s\n", cases[i].root);
		edit(gathers, cases[i].what, "ROOT\n", root, text,
		     sizeof text);
		struct sim_rewrites done;
		struct ir_module *m =
			rewritten(text, cases[i].v4 ? &v4 : &v5e, &done);
		char names[64] = "";
		for (int k = 0; k < m->entry->n_instrs; k++) {
			const struct ir_instr *in = m->entry->instrs[k];
			if (in->flags & IR_INSTR_ASYNC)
				snprintf(names + strlen(names),
					 sizeof names - strlen(names), "%s%s",
					 names[0] ? "," : "", in->name);
		}
		if (done.async_all_gathers != cases[i].marked ||
		    strcmp(names, cases[i].names))
			fail_msg("%s: %d marked (%s); want %d (%s)",
				 cases[i].what, done.async_all_gathers, names,
				 cases[i].marked, cases[i].names);
		ir_module_free(m);
	}
	/* with y, the one dot, reading g through a convert, nothing runs
	 * beside g; nor with a dead dot beside it */
	struct sim_rewrites done;
	ir_module_free(rewritten(
		"HloModule g\nENTRY e {\n"
		"  p = bf16[256,1024]{1,0} parameter(0)\n"
		"  x = bf16[1024,1024]{1,0} parameter(1)\n"
		"  g = bf16[1024,1024]{1,0} all-gather(p), channel_id=1, "
		"replica_groups={{0,1,2,3}}, dimensions={0}\n"
		"  f = f32[1024,1024]{1,0} convert(g)\n"
		"  z = bf16[1024,1024]{1,0} dot(x, x), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"  ROOT y = f32[1024,1024]{1,0} dot(f, f), "
		"lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
		&v5e, &done));
	assert_int_equal(done.async_all_gathers, 0);
	/* nor with the dot before it, its operand's producer */
	ir_module_free(rewritten(
		"HloModule g\nENTRY e {\n"
		"  x = bf16[1024,1024]{1,0} parameter(0)\n"
		"  z = bf16[1024,1024]{1,0} dot(x, x), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"  q = bf16[256,1024]{1,0} slice(z), slice={[0:256], [0:1024]}\n"
		"  ROOT h = bf16[1024,1024]{1,0} all-gather(q), channel_id=2, "
		"replica_groups={{0,1,2,3}}, dimensions={0}\n}\n",
		&v5e, &done));
	assert_int_equal(done.async_all_gathers, 0);
}

/* Parses text (path for messages) into its one module. */
static struct ir_module *parsed(const char *path, const char *text, size_t len)
{
	struct ir_module **m = NULL;
	int nm = 0;
	struct ts_diag d = {0};
	if (hlo_parse(path, text, len, &m, &nm, &d) != TS_OK)
		fail_msg("%s: %s", path, d.msg);
	assert_int_equal(nm, 1);
	struct ir_module *mod = m[0];
	ts_free(m);
	return mod;
}

/* Outputs of compiled module c that XLA's copy insertion copies into
 * the parameter buffer they alias: aliased elements of the root tuple
 * that are copies of a value laid out as they are, in any memory
 * space. */
static int alias_copies(const struct ir_module *c)
{
	const struct ir_instr *root = c->entry->root;
	int n = 0;
	for (int i = 0; i < c->n_aliases; i++) {
		const struct ir_alias *x = &c->aliases[i];
		if (x->output.n != 1 || root->op != IR_OP_TUPLE)
			continue;
		const struct ir_instr *o = root->operands[x->output.v[0]];
		if (o->op != IR_OP_COPY)
			continue;
		struct ir_shape a = o->shape, b = o->operands[0]->shape;
		a.layout.memory_space = b.layout.memory_space = 0;
		char sa[512], sb[512];
		ir_shape_format(&a, sa, sizeof sa);
		ir_shape_format(&b, sb, sizeof sb);
		n += !strcmp(sa, sb);
	}
	return n;
}

/* Outputs of compiled module c that are copies of a result other
 * devices write (an all-gather's, all-to-all's or collective-permute's,
 * through bitcasts). */
static int peer_copies(const struct ir_module *c)
{
	const struct ir_instr *root = c->entry->root;
	bool tuple = root->op == IR_OP_TUPLE;
	int n = 0;
	for (int k = 0; k < (tuple ? root->n_operands : 1); k++) {
		const struct ir_instr *o = tuple ? root->operands[k] : root;
		if (o->op != IR_OP_COPY)
			continue;
		o = o->operands[0];
		while (o->op == IR_OP_BITCAST)
			o = o->operands[0];
		n += o->op == IR_OP_ALL_GATHER || o->op == IR_OP_ALL_TO_ALL ||
		     o->op == IR_OP_COLLECTIVE_PERMUTE_DONE;
	}
	return n;
}

struct zoo_aliases {
	const char *src, *gen;
	int modules, pairs, copies, peer_copies;
};

/* rel (text, len): a zoo module before fusion, NAME.spmd.hlo, parsed
 * into *m, and NAME.tpu.hlo beside it (under src/data) into *c; false
 * for any other file. */
static bool zoo_pair(const char *src, const char *rel, const char *text,
		     size_t len, struct ir_module **m, struct ir_module **c)
{
	size_t n = strlen(rel);
	if (n < 9 || strcmp(rel + n - 9, ".spmd.hlo"))
		return false;
	char path[4096], *ctext;
	size_t clen;
	struct ts_diag d = {0};
	snprintf(path, sizeof path, "%s/data/%.*s.tpu.hlo", src, (int)(n - 9),
		 rel);
	if (ts_read_file(path, &ctext, &clen, &d) != TS_OK)
		fail_msg("%s: %s", path, d.msg);
	*m = parsed(rel, text, len);
	*c = parsed(path, ctext, clen);
	ts_free(ctext);
	return true;
}

/* rel: a module before fusion, NAME.spmd.hlo; beside it NAME.tpu.hlo. */
static void check_aliases(const char *rel, const char *text, size_t len,
			  void *ctx)
{
	struct zoo_aliases *z = ctx;
	struct ir_module *m, *c;
	if (!zoo_pair(z->src, rel, text, len, &m, &c))
		return;
	struct ts_diag d = {0};
	struct ts_arena a;
	ts_arena_init(&a);
	struct ir_alias *pairs;
	int np;
	assert_int_equal(sim_module_aliases(m, &a, &pairs, &np), TS_OK);
	int found = 0, xla = 0; /* its donors left unpaired aside */
	for (int i = 0; i < c->n_aliases; i++) {
		const struct ir_alias *x = &c->aliases[i];
		if (x->output.n < 0)
			continue;
		xla++;
		assert_int_equal(x->output.n, 1); /* the zoo's: flat tuples */
		for (int k = 0; k < np; k++)
			found += pairs[k].output.n == 1 &&
				 pairs[k].output.v[0] == x->output.v[0] &&
				 pairs[k].param == x->param &&
				 pairs[k].param_index.n == 0;
	}
	if (found != xla || np != xla)
		fail_msg("%s: %d pairs, %d of XLA's %d", rel, np, found, xla);
	struct hw_spec hw;
	assert_true(tu_load_spec(z->gen, &hw));
	struct sim_rewrites done;
	assert_int_equal(sim_module_rewrite(m, &hw, &done, &d), TS_OK);
	if (done.copies != alias_copies(c) || done.unfollowed)
		fail_msg("%s: %d copies, %d not followed; XLA's %d", rel,
			 done.copies, done.unfollowed, alias_copies(c));
	if (done.peer_copies != peer_copies(c))
		fail_msg("%s: %d results other devices write copied; XLA "
			 "copies %d", rel, done.peer_copies, peer_copies(c));
	z->modules++;
	z->pairs += np;
	z->copies += done.copies;
	z->peer_copies += done.peer_copies;
	ts_arena_free(&a);
	ir_module_free(m);
	ir_module_free(c);
}

struct zoo_gathers {
	const char *src;
	int xla_async, marked, marked_sync;
};

/* Whether one of c's all-gathers of channel ch is in a fused
 * computation (XLA's async collective fusion) or not (sync). */
static bool gathered_in(const struct ir_module *c, int64_t ch, bool fused)
{
	for (int ci = 0; ci < c->n_comps; ci++)
		for (int i = 0; i < c->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = c->comps[ci]->instrs[i];
			if (in->op == IR_OP_ALL_GATHER &&
			    in->attrs.channel_id == ch &&
			    c->comps[ci]->is_fusion == fused)
				return true;
		}
	return false;
}

/* rel: a v5e module before fusion; its all-gathers marked async
 * against those XLA runs in async collective fusions (in a fused
 * computation of NAME.tpu.hlo, by channel). */
static void check_gathers(const char *rel, const char *text, size_t len,
			  void *ctx)
{
	struct zoo_gathers *z = ctx;
	struct ir_module *m, *c;
	if (!zoo_pair(z->src, rel, text, len, &m, &c))
		return;
	struct ts_diag d = {0};
	struct hw_spec hw;
	assert_true(tu_load_spec("v5e", &hw));
	struct sim_rewrites done;
	assert_int_equal(sim_module_rewrite(m, &hw, &done, &d), TS_OK);
	for (int ci = 0; ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[ci]->instrs[i];
			if (in->op != IR_OP_ALL_GATHER)
				continue;
			bool marked = in->flags & IR_INSTR_ASYNC,
			     xla = gathered_in(c, in->attrs.channel_id, true);
			if (xla && !marked)
				fail_msg("%s: %s (channel %lld) runs async "
					 "compiled, not marked", rel, in->name,
					 (long long)in->attrs.channel_id);
			z->xla_async += xla;
			z->marked += marked;
			z->marked_sync +=
				marked && !xla &&
				gathered_in(c, in->attrs.channel_id, false);
		}
	ir_module_free(m);
	ir_module_free(c);
}

/* The all-gathers XLA runs asynchronously on v5e (its async collective
 * fusions in vit_s and dlrm_s) are all marked; the marked ones XLA runs
 * synchronously are counted (sim/rewrite.c's known wrong). */
static void test_gathers_zoo(void **state)
{
	(void)state;
	struct zoo_gathers z = {getenv("TPUSIM_SOURCE"), 0, 0, 0};
	if (!z.src)
		skip();
	char data[4096];
	snprintf(data, sizeof data, "%s/data", z.src);
	tu_each_hlo(data, "compiled/v5e", 1, check_gathers, &z);
	print_message("v5e zoo: %d all-gathers marked async, XLA's %d "
		      "async ones among them, %d it runs synchronously\n",
		      z.marked, z.xla_async, z.marked_sync);
	assert_int_equal(z.xla_async, 9);
	assert_int_equal(z.marked, 23);
	assert_int_equal(z.marked_sync, 14);
}

/* The compiled zoo: the donated buffers XLA pairs with outputs (the
 * compiled module's input_output_alias) are those sim_module_aliases
 * pairs in the module before fusion, and the rewrite copies an output
 * into its buffer where the compiled module does (decode_s and
 * decode_m's KV caches, written by the scan in a buffer of its own);
 * it copies the results other devices write where the compiled module
 * does (the all-gather, all-to-all and permute op sweeps). */
static void test_aliases_zoo(void **state)
{
	(void)state;
	static const char *const gens[] = {"v2", "v3", "v4", "v5e", "v5p",
					   "v6e", "v7"};
	struct zoo_aliases z = {getenv("TPUSIM_SOURCE"), NULL, 0, 0, 0, 0};
	if (!z.src)
		skip();
	char data[4096];
	snprintf(data, sizeof data, "%s/data", z.src);
	for (size_t i = 0; i < TS_ARRAY_LEN(gens); i++) {
		char folder[64];
		snprintf(folder, sizeof folder, "compiled/%s", gens[i]);
		z.gen = gens[i];
		tu_each_hlo(data, folder, 1, check_aliases, &z);
	}
	print_message("zoo: %d modules, %d aliased outputs, %d copied; %d "
		      "results other devices write copied\n",
		      z.modules, z.pairs, z.copies, z.peer_copies);
	assert_int_equal(z.modules, 59);
	assert_int_equal(z.copies, 4);
	assert_int_equal(z.peer_copies, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attention_ir),
		cmocka_unit_test(test_attention_fused),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_combine_ir),
		cmocka_unit_test(test_combine_fused),
		cmocka_unit_test(test_combine_generated),
		cmocka_unit_test(test_copy_rule),
		cmocka_unit_test(test_peer_copies),
		cmocka_unit_test(test_async_gathers),
		cmocka_unit_test(test_aliases_zoo),
		cmocka_unit_test(test_gathers_zoo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
