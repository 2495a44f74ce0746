/*
 * test_slice.c: collectives on a slice (hw/hw_slice.c, hw_ici_torus in
 * hw/hw_mem.c, sim/slice.c): a slice shape's parser and its errors, where
 * iota groups land on the torus axes, golden costs worked out here from
 * the formula (docs/MODEL.md "Collectives on a slice") with the spec's
 * figures (hwspecs/v3, v4, v5e), the check that a program fits its slice,
 * and that without a slice nothing changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "hw_spec.h"
#include "hw_units.h"
#include "sim.h"
#include "test_util.h"

/* The same sums and products of the spec's doubles as the code's, in
 * another order: 1e-12 relative. */
#define REL_TOL 1e-12

static void assert_rel(double got, double want)
{
	double scale = want != 0 ? want : 1;
	if ((got - want) / scale > REL_TOL || (want - got) / scale > REL_TOL)
		fail_msg("got %.17g, want %.17g", got, want);
}

/* gen's spec on the slice `shape` x count; false (the test skips) when
 * the source tree is not known. */
static bool on_slice(const char *gen, const char *shape, int count,
		     struct hw_spec *hw)
{
	if (!tu_load_spec(gen, hw))
		return false;
	struct ts_diag d = {0};
	assert_int_equal(hw_slice_parse(shape, &hw->slice, &d), TS_OK);
	hw->slice.count = count;
	assert_int_equal(hw_slice_check(hw, &hw->slice, &d), TS_OK);
	return true;
}

#define MS_SHAPE "bf16[768,8,128]{2,1,0:T(8,128)(2,1)}"

/* A module of `devices` partitions whose kernel r is `op` (all-reduce,
 * all-gather, all-to-all or collective-permute) on f32[1048576] with
 * `attr` (its groups). */
static void build(const char *op, const char *attr, int devices,
		  struct tu_built *b)
{
	static char text[1024];
	snprintf(text, sizeof text,
		 "HloModule s, num_partitions=%d\n"
		 "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		 "  ROOT s = f32[] add(a, b)\n}\n"
		 "ENTRY e {\n  x = f32[1048576] parameter(0)\n"
		 "  ROOT r = f32[1048576] %s(x), %s%s\n}\n",
		 devices, op, attr,
		 !strcmp(op, "all-reduce") ? ", to_apply=add"
		 : strcmp(op, "collective-permute") ? ", dimensions={0}"
						     : "");
	tu_build(text, b);
}

/* The payload B the model costs kernel r with (sim_collective_of, tested
 * in test_cost), and its ICI cost on hw. */
static double cost(const struct tu_built *b, const struct hw_spec *hw,
		   struct hw_ici_cost *c, int64_t *group)
{
	const struct sim_kernel *k = tu_kernel(b, "r");
	enum hw_collective kind;
	double bytes, hbm;
	int64_t n;
	int bits;
	sim_collective_of(k, &kind, &bytes, &hbm, &n, &bits);
	sim_collective_ici(k, hw, c, group);
	return bytes;
}

/* One link one way per device, bytes/ns, and the links along an axis. */
static double link_of(const struct hw_spec *hw)
{
	int per_chip = hw->megacore ? 1 : hw->tensorcores_per_chip;
	return hw->ici_link_bw_bytes_per_s * 1e-9 * hw->ici_efficiency /
	       per_chip;
}

static double along(const struct hw_spec *hw)
{
	return (double)hw->ici_links / hw->ici_torus_dims;
}

static void assert_axis(const struct hw_ici_cost *c, int i,
			enum hw_place place, int64_t k, enum hw_link link)
{
	assert_true(i < c->n_axes);
	assert_int_equal(c->axes[i].axis.place, place);
	assert_int_equal(c->axes[i].axis.k, k);
	assert_int_equal(c->axes[i].axis.link, link);
}

/* ---- slice shapes ---------------------------------------------------------- */

static void test_parse(void **state)
{
	(void)state;
	struct hw_slice s = {0};
	struct ts_diag d = {0};
	assert_int_equal(hw_slice_parse("4x4x8", &s, &d), TS_OK);
	assert_int_equal(s.n_dims, 3);
	assert_int_equal(s.dims[2], 8);
	static const struct {
		const char *text;
		unsigned col;
		const char *msg;
	} bad[] = {
		{"", 1, "expected a slice shape like 16x16 or 4x4x4"},
		{"16x", 4, "expected a slice shape like 16x16 or 4x4x4"},
		{"16*16", 3, "expected 'x' between the chips along each axis, "
			     "like 16x16"},
		{"2x2x2x2", 7, "at most 3 dimensions (x, y, z)"},
		{"16x0", 4, "'0' chips along an axis: expected 1 to 256"},
		{"4x1000", 3, "'1000' chips along an axis: expected 1 to 256"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		memset(&d, 0, sizeof d);
		assert_int_equal(hw_slice_parse(bad[i].text, &s, &d),
				 TS_ERR_PARSE);
		assert_int_equal(d.col, bad[i].col);
		assert_string_equal(d.msg, bad[i].msg);
	}
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	assert_int_equal(hw_slice_parse("4x4x4", &s, &d), TS_OK);
	s.count = 1;
	assert_int_equal(hw_slice_check(&hw, &s, &d), TS_ERR_SPEC);
	assert_string_equal(d.msg, "v5e's chips form a 2D torus: the slice "
				   "needs 2 dimensions (e.g. 16x16), not 3");
	assert_int_equal(hw_slice_parse("16x16", &s, &d), TS_OK);
	s.count = 0;
	assert_int_equal(hw_slice_check(&hw, &s, &d), TS_ERR_SPEC);
	assert_string_equal(d.msg, "0 slices: expected 1 to 1024");
}

/* The wraparound rules: v5e's 16 wraps axis by axis; v4 only on whole
 * 4x4x4 cubes, then on every axis. */
static void test_wraps(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "8x16", 1, &hw))
		skip();
	assert_false(hw_slice_wraps(&hw, HW_PLACE_X));
	assert_true(hw_slice_wraps(&hw, HW_PLACE_Y));
	assert_true(on_slice("v4", "2x2x4", 1, &hw));
	assert_false(hw_slice_wraps(&hw, HW_PLACE_Z));
	assert_true(on_slice("v4", "4x4x8", 1, &hw));
	assert_true(hw_slice_wraps(&hw, HW_PLACE_X));
	assert_true(hw_slice_wraps(&hw, HW_PLACE_Z));
	/* device 2 x 256 + 3 x 16 + 5 of two 16x16 slices: slice 2, y 3, x 5 */
	assert_true(on_slice("v5e", "16x16", 4, &hw));
	int64_t place[HW_PLACE_COUNT];
	hw_slice_place(&hw, 2 * 256 + 3 * 16 + 5, place);
	assert_int_equal(place[HW_PLACE_CORE], 0);
	assert_int_equal(place[HW_PLACE_X], 5);
	assert_int_equal(place[HW_PLACE_Y], 3);
	assert_int_equal(place[HW_PLACE_SLICE], 2);
	assert_int_equal(hw_slice_devices(&hw), 1024);
}

/* ---- golden costs ------------------------------------------------------------ */

/*
 * All-reduce over one axis of 16 with wraparound, v5e 16x16. [16,16]<=[256]
 * groups ids 16g .. 16g + 15: x varies, y = g (x fastest): the x ring.
 * [16,16]<=[16,16]T(1,0) groups g, g + 16, ..., g + 240: the y ring.
 *   bw = 2 links x link (ring), 8 hops a pass (16 / 2)
 *   transfer = 2 x 15/16 x B / bw, latency = 2 x 8 x 500 ns
 */
static void test_ring_16(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "16x16", 1, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	build("all-reduce", "replica_groups=[16,16]<=[256]", 256, &b);
	double B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_X, 16, HW_LINK_RING);
	double bw = along(&hw) * link_of(&hw);
	assert_rel(c.transfer_ns, 2 * 15.0 / 16 * B / bw);
	assert_rel(c.latency_ns, 2 * 8 * hw.ici_latency_ns);
	assert_true(c.reduce_ns < c.transfer_ns);
	assert_rel(c.ns, c.transfer_ns + c.latency_ns);
	assert_true(c.dcn_ns == 0);
	tu_built_free(&b);
	build("all-reduce", "replica_groups=[16,16]<=[16,16]T(1,0)", 256, &b);
	cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_Y, 16, HW_LINK_RING);
	assert_rel(c.transfer_ns, 2 * 15.0 / 16 * B / bw);
	tu_built_free(&b);
	/* all-gather of the same buffer gathered: one pass, no reduce */
	build("all-gather", "replica_groups=[16,16]<=[16,16]T(1,0)", 256, &b);
	B = cost(&b, &hw, &c, &g);
	assert_rel(c.transfer_ns, 15.0 / 16 * B / bw);
	assert_rel(c.latency_ns, 8 * hw.ici_latency_ns);
	assert_true(c.reduce_ns == 0);
	tu_built_free(&b);
}

/*
 * A 4x4 sub-grid of a v5e 16x16: [16,16]<=[4,4,4,4]T(0,2,1,3). The ids
 * are y_hi y_lo x_hi x_lo in base 4 (d = 16 y + x); the groups fix y_hi
 * and x_hi and take y_lo, x_lo: x and y each 4 of 16, no wraparound:
 * two lines, x first (place order among equals), at once on halves:
 *   bw = 1 link (a line's end chips), 3 hops a pass
 *   all-reduce: stage 1 each half B/2 on its first axis, stage 2 each
 *               quarter of it (B/8) on the other:
 *               transfer = 2 x (3/4 B/2 + 3/4 B/8) / bw,
 *               latency = 2 x (3 + 3) x 500 ns
 *   all-to-all: c = floor(16/4)/4 = 1 per axis: transfer = 2 x B / bw,
 *               latency = (3 + 3) x 500 ns
 * On a v4 4x4x4 (whole cube: every axis wraps) the groups [4,16]<=[64]
 * (x and y whole, z = g) are two rings of 4: bw = 2 links, 2 hops:
 *   transfer = 2 x (3/4 B/2 + 3/4 B/8) / bw, latency = 2 x (2 + 2) x 500
 */
static void test_sub_grid(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "16x16", 1, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	const char *grid = "replica_groups=[16,16]<=[4,4,4,4]T(0,2,1,3)";
	build("all-reduce", grid, 256, &b);
	double B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 2);
	assert_axis(&c, 0, HW_PLACE_X, 4, HW_LINK_LINE);
	assert_axis(&c, 1, HW_PLACE_Y, 4, HW_LINK_LINE);
	double bw = along(&hw) / 2 * link_of(&hw);
	assert_rel(c.transfer_ns, 2 * (0.75 * B / 2 + 0.75 * B / 8) / bw);
	assert_rel(c.latency_ns, 2 * 6 * hw.ici_latency_ns);
	assert_rel(c.ns, c.transfer_ns + c.latency_ns);
	tu_built_free(&b);
	build("all-to-all", grid, 256, &b);
	B = cost(&b, &hw, &c, &g);
	assert_rel(c.transfer_ns, 2 * B / bw);
	assert_rel(c.latency_ns, 6 * hw.ici_latency_ns);
	tu_built_free(&b);

	assert_true(on_slice("v4", "4x4x4", 1, &hw));
	build("all-reduce", "replica_groups=[4,16]<=[64]", 64, &b);
	B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 2);
	assert_axis(&c, 0, HW_PLACE_X, 4, HW_LINK_RING);
	assert_axis(&c, 1, HW_PLACE_Y, 4, HW_LINK_RING);
	bw = along(&hw) * link_of(&hw);
	assert_rel(c.transfer_ns, 2 * (0.75 * B / 2 + 0.75 * B / 8) / bw);
	assert_rel(c.latency_ns, 2 * 4 * hw.ici_latency_ns);
	tu_built_free(&b);
}

/*
 * Two v5e 16x16 slices (512 devices, d = 256 s + 16 y + x).
 * [256,2]<=[2,256]T(1,0): groups {g, 256 + g}, one chip of each slice:
 *   the slices axis, DCN: bw = dcn.bw_bytes_per_s (1 device per chip)
 *   all-reduce: transfer = 2 x 1/2 x B / bw, latency = 2 x 1 x dcn
 *   latency; all of it DCN
 * [16,32]<=[2,16,16]T(1,0,2): y fixed, x and the slice vary: the x ring
 * first, then the slices on B/16:
 *   transfer = 2 x (15/16 B / ring + 1/2 x B/16 / dcn)
 *   latency = 2 x (8 x 500 + 1 x dcn latency)
 *   dcn_ns = 2 x (1/2 x B/16 / dcn + dcn latency)
 * collective-permute {0,256}: one DCN transfer B / dcn + dcn latency;
 * {0,1}: one ICI link, B / link + 500.
 */
static void test_two_slices(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "16x16", 2, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	double dcn = hw.dcn_bw_bytes_per_s * 1e-9, lat = hw.dcn_latency_ns;
	build("all-reduce", "replica_groups=[256,2]<=[2,256]T(1,0)", 512, &b);
	double B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_SLICE, 2, HW_LINK_DCN);
	assert_rel(c.transfer_ns, 2 * 0.5 * B / dcn);
	assert_rel(c.latency_ns, 2 * lat);
	assert_rel(c.dcn_ns, c.ns);
	tu_built_free(&b);

	build("all-reduce", "replica_groups=[16,32]<=[2,16,16]T(1,0,2)", 512,
	      &b);
	B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 2);
	assert_axis(&c, 0, HW_PLACE_X, 16, HW_LINK_RING);
	assert_axis(&c, 1, HW_PLACE_SLICE, 2, HW_LINK_DCN);
	double ring = along(&hw) * link_of(&hw);
	assert_rel(c.transfer_ns, 2 * (15.0 / 16 * B / ring + 0.5 * B / 16 / dcn));
	assert_rel(c.latency_ns, 2 * (8 * hw.ici_latency_ns + lat));
	assert_rel(c.dcn_ns, 2 * (0.5 * B / 16 / dcn + lat));
	tu_built_free(&b);

	build("collective-permute", "source_target_pairs={{0,256},{256,0}}",
	      512, &b);
	B = cost(&b, &hw, &c, &g);
	assert_rel(c.ns, B / dcn + lat);
	assert_rel(c.dcn_ns, c.ns);
	tu_built_free(&b);
	build("collective-permute", "source_target_pairs={{0,1},{1,0}}", 512,
	      &b);
	B = cost(&b, &hw, &c, &g);
	assert_rel(c.ns, B / link_of(&hw) + hw.ici_latency_ns);
	assert_true(c.dcn_ns == 0);
	tu_built_free(&b);
}

/* A per-slice module (MegaScale) of v5e 2x2 whose send r and recv q the
 * megascale runtime carries between TARGET's slices as TYPE, a fusion
 * between the send and the recv-done. */
static void build_megascale(const char *type, const char *target,
			    struct tu_built *b)
{
	static char text[2048];
	char attrs[256];
	snprintf(attrs, sizeof attrs,
		 "channel_id=1, is_host_transfer=true, frontend_attributes={"
		 "_xla_megascale_target=\"%s\",_xla_megascale_transfer_type="
		 "\"%s\"}", target, type);
	snprintf(text, sizeof text,
		 "HloModule m, num_partitions=4\n"
		 "f {\n  p = f32[1024,1024]{1,0:T(8,128)} parameter(0)\n"
		 "  ROOT e = f32[1024,1024]{1,0:T(8,128)} exponential(p)\n}\n"
		 "ENTRY e {\n  x = " MS_SHAPE " parameter(0)\n"
		 "  w = f32[1024,1024]{1,0:T(8,128)} parameter(1)\n"
		 "  t = token[] after-all()\n"
		 "  r = (" MS_SHAPE ", u32[], token[]) send(x, t), %s\n"
		 "  q = (" MS_SHAPE ", u32[], token[]) recv(t), %s\n"
		 "  k = f32[1024,1024]{1,0:T(8,128)} fusion(w), kind=kLoop, "
		 "calls=f\n"
		 "  sd = token[] send-done(r), channel_id=1, "
		 "is_host_transfer=true\n"
		 "  rd = (" MS_SHAPE ", token[]) recv-done(q), channel_id=1, "
		 "is_host_transfer=true\n"
		 "  g = " MS_SHAPE " get-tuple-element(rd), index=0\n"
		 "  ROOT o = (f32[1024,1024]{1,0:T(8,128)}, " MS_SHAPE
		 ") tuple(k, g)\n}\n",
		 attrs, attrs);
	tu_build(text, b);
}

/*
 * The megascale exchange of a per-slice module: the send is the
 * collective its attributes name over one DCN axis of its slices, B =
 * 768 x 8 x 128 bf16 = 1,572,864 bytes per device (1 device per chip):
 *   all-reduce over k slices: transfer 2 (k-1)/k B / dcn,
 *   latency 2 (k-1) dcn latency
 *   all-gather: its result, B x k, (k-1)/k of it, (k-1) latencies
 * the async work of a pair ending at the recv-done (the fusion between
 * hides it); whatif's span_count 8 makes the group of both slices 8.
 * A target it cannot read leaves send and recv unmodelled.
 */
static void test_megascale(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "2x2", 2, &hw))
		skip();
	double dcn = hw.dcn_bw_bytes_per_s * 1e-9, lat = hw.dcn_latency_ns;
	const double B = 768.0 * 8 * 128 * 2;
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	build_megascale("ALL_REDUCE", "{1,2}x{0:3}", &b);
	assert_int_equal(b.p.n_kernels, 2); /* r and k: the recv is free */
	const struct sim_kernel *k = tu_kernel(&b, "r");
	assert_int_equal(k->kind, SIM_KERNEL_COLLECTIVE);
	assert_int_equal(k->group_devices, 2);
	assert_int_equal(b.p.n_async, 1);
	assert_string_equal(b.p.async[0].done->name, "rd");
	assert_int_equal(b.p.async[0].n_between, 1);
	assert_rel(cost(&b, &hw, &c, &g), B);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_SLICE, 2, HW_LINK_DCN);
	assert_rel(c.transfer_ns, 2 * 0.5 * B / dcn);
	assert_rel(c.latency_ns, 2 * lat);
	assert_rel(c.dcn_ns, c.ns);
	hw.slice.span_count = 8;
	cost(&b, &hw, &c, &g);
	assert_axis(&c, 0, HW_PLACE_SLICE, 8, HW_LINK_DCN);
	assert_rel(c.transfer_ns, 2 * 7.0 / 8 * B / dcn);
	assert_rel(c.latency_ns, 2 * 7 * lat);
	hw.slice.span_count = 1; /* one slice: nothing crosses */
	cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 0);
	assert_true(c.ns == 0);
	hw.slice.span_count = 0;
	/* its slices must be the slice count: located at the send */
	struct ts_diag d = {0};
	hw.slice.count = 4;
	assert_int_equal(sim_program_check_slice(&b.p, &hw, &d), TS_ERR_SPEC);
	assert_int_equal(d.line, 10);
	assert_int_equal(d.col, 3);
	assert_string_equal(d.msg, "'r' is an exchange over 2 slices "
				   "(_xla_megascale_target), but the slice is "
				   "2x2, 4 slices");
	tu_built_free(&b);

	build_megascale("ALL_GATHER", "{1:4}x{0:3}", &b);
	assert_int_equal(tu_kernel(&b, "r")->group_devices, 4);
	hw.slice.count = 4;
	assert_rel(cost(&b, &hw, &c, &g), 4 * B);
	assert_rel(c.transfer_ns, 3.0 / 4 * 4 * B / dcn);
	assert_rel(c.latency_ns, 3 * lat);
	tu_built_free(&b);

	build_megascale("ALL_REDUCE", "{a}x{0:3}", &b);
	assert_int_equal(tu_kernel(&b, "r")->kind, SIM_KERNEL_UNMODELLED);
	assert_int_equal(b.p.n_async, 0);
	tu_built_free(&b);
}

/*
 * v3 2x2 (4 chips, 2 cores each: 8 devices, d = 2 chip + core), every
 * device: the cores (a ring of 2, 2 links), x and y (lines of 2: v3
 * wraps only at 32), each link shared by the chip's 2 cores; three
 * chunks of B/3 at once, chunk j from axis j on (cores, x, y), halved at
 * each axis; a stage takes its slowest chunk:
 *   stage 1: B/3 on the cores, x, y: max(1/2 B/3 / (2 link),
 *            1/2 B/3 / link) = B / (6 link)
 *   stage 2: B/6 on x, y, cores: B / (12 link)
 *   stage 3: B/12 on y, cores, x: B / (24 link)
 *   transfer = 2 x (1/6 + 1/12 + 1/24) B / link = 7/12 B / link
 *   latency = 2 x (1 + 1 + 1) x 500
 */
static void test_cores(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v3", "2x2", 1, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	build("all-reduce", "replica_groups={{0,1,2,3,4,5,6,7}}", 8, &b);
	double B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 3);
	assert_axis(&c, 0, HW_PLACE_CORE, 2, HW_LINK_RING);
	assert_axis(&c, 1, HW_PLACE_X, 2, HW_LINK_LINE);
	assert_axis(&c, 2, HW_PLACE_Y, 2, HW_LINK_LINE);
	double l = link_of(&hw);
	assert_rel(c.transfer_ns, 7.0 / 12 * B / l);
	assert_rel(c.latency_ns, 2 * 3 * hw.ici_latency_ns);
	tu_built_free(&b);
}

/* Groups of other shapes: the slowest group is the collective's (a group
 * crossing the slices against ones that do not); a diagonal pair is one
 * line of 2; a group that is not on the slice, or no slice at all, is
 * costed as the ring hw_ici_collective gives (group -1). */
static void test_groups(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "16x16", 2, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c, ring;
	int64_t g;
	build("all-reduce", "replica_groups={{0,1},{2,258}}", 512, &b);
	cost(&b, &hw, &c, &g);
	assert_int_equal(g, 1);
	assert_axis(&c, 0, HW_PLACE_SLICE, 2, HW_LINK_DCN);
	tu_built_free(&b);
	build("all-reduce", "replica_groups={{0,17}}", 512, &b);
	cost(&b, &hw, &c, &g);
	assert_int_equal(g, 0);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_Y, 2, HW_LINK_LINE);
	tu_built_free(&b);
	build("all-reduce", "replica_groups={{0,1}}", 512, &b);
	const struct sim_kernel *k = tu_kernel(&b, "r");
	enum hw_collective kind;
	double bytes, hbm;
	int64_t n;
	int bits;
	sim_collective_of(k, &kind, &bytes, &hbm, &n, &bits);
	hw_ici_collective(&hw, kind, bytes, n, bits, &ring);
	hw.slice.n_dims = 0;
	sim_collective_ici(k, &hw, &c, &g);
	assert_int_equal(g, -1);
	assert_true(c.ns == ring.ns && c.one_shot == ring.one_shot);
	tu_built_free(&b);
}

/* A program whose devices are not the slice's, or a group naming a
 * device off the slice, is a located error. */
static void test_check(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "4x4", 1, &hw))
		skip();
	struct tu_built b;
	struct ts_diag d = {0};
	build("all-reduce", "replica_groups={{0,1}}", 8, &b);
	assert_int_equal(sim_program_check_slice(&b.p, &hw, &d), TS_ERR_SPEC);
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 1);
	assert_string_equal(d.msg, "the module runs on 8 devices (replica_count "
				   "1 x num_partitions 8); the slice 4x4 has 16 "
				   "(v5e: 1 per chip)");
	tu_built_free(&b);
	build("all-reduce", "replica_groups={{0,1},{2,16}}", 16, &b);
	assert_int_equal(sim_program_check_slice(&b.p, &hw, &d), TS_ERR_SPEC);
	assert_int_equal(d.line, 9);
	assert_int_equal(d.col, 8);
	assert_string_equal(d.msg, "collective 'r': device 16 of group 1 is not "
				   "on the slice 4x4 (devices 0 to 15)");
	tu_built_free(&b);
	build("all-reduce", "replica_groups={{0,1},{2,15}}", 16, &b);
	assert_int_equal(sim_program_check_slice(&b.p, &hw, &d), TS_OK);
	tu_built_free(&b);
}

/*
 * A compile's device order (hw_slice.at): v5e 8x16 (x: 8, no wrap; y: 16,
 * wraps), the mesh numbering y fastest as MaxText's devices/ID.csv do
 * (index i at x = i / 16, y = i % 16). [8,16]<=[128] groups 16
 * consecutive indices: in JAX's default order (x fastest) x 0..7 by y
 * 0..1, lines of 8 and 2; in the compile's, one whole y axis: the ring,
 *   transfer = 2 x 15/16 x B / (2 links x link), latency = 2 x 8 x 500 ns
 * A table must place every device of the slice, each on its own place.
 */
static void test_device_order(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!on_slice("v5e", "8x16", 1, &hw))
		skip();
	struct tu_built b;
	struct hw_ici_cost c;
	int64_t g;
	build("all-reduce", "replica_groups=[8,16]<=[128]", 128, &b);
	cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 2);
	assert_axis(&c, 0, HW_PLACE_X, 8, HW_LINK_LINE);
	assert_axis(&c, 1, HW_PLACE_Y, 2, HW_LINK_LINE);
	int32_t at[128][HW_PLACE_COUNT];
	memset(at, 0, sizeof at);
	for (int i = 0; i < 128; i++) {
		at[i][HW_PLACE_X] = i / 16;
		at[i][HW_PLACE_Y] = i % 16;
	}
	hw.slice.at = (const int32_t (*)[HW_PLACE_COUNT])at;
	hw.slice.n_at = 128;
	struct ts_diag d = {0};
	assert_int_equal(hw_slice_check_order(&hw, &hw.slice, &d), TS_OK);
	double B = cost(&b, &hw, &c, &g);
	assert_int_equal(c.n_axes, 1);
	assert_axis(&c, 0, HW_PLACE_Y, 16, HW_LINK_RING);
	assert_rel(c.transfer_ns, 2 * 15.0 / 16 * B / (along(&hw) * link_of(&hw)));
	assert_rel(c.latency_ns, 2 * 8 * hw.ici_latency_ns);
	tu_built_free(&b);

	hw.slice.n_at = 127;
	assert_int_equal(hw_slice_check_order(&hw, &hw.slice, &d), TS_ERR_SPEC);
	assert_string_equal(d.msg, "the device order places 127 devices; the "
				   "slice has 128");
	hw.slice.n_at = 128;
	at[5][HW_PLACE_X] = 8;
	assert_int_equal(hw_slice_check_order(&hw, &hw.slice, &d), TS_ERR_SPEC);
	assert_string_equal(d.msg, "device 5 is placed at x 8: the slice has 8 "
				   "(0 to 7)");
	at[5][HW_PLACE_X] = 0;
	at[5][HW_PLACE_Y] = 4;
	assert_int_equal(hw_slice_check_order(&hw, &hw.slice, &d), TS_ERR_SPEC);
	assert_string_equal(d.msg, "devices 4 and 5 are placed on one place");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_wraps),
		cmocka_unit_test(test_ring_16),
		cmocka_unit_test(test_sub_grid),
		cmocka_unit_test(test_two_slices),
		cmocka_unit_test(test_megascale),
		cmocka_unit_test(test_cores),
		cmocka_unit_test(test_groups),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_device_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
