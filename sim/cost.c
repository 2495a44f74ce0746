/*
 * cost.c: the work of one kernel counted from the IR (struct sim_work):
 * MXU multiply-accumulates, VPU element ops per cost class on padded
 * elements, transcendentals, and HBM bytes under XLA's fusion byte rules.
 * Counting follows HloCostAnalysis (docs/HLO.md 3.1) with TPU padded sizes
 * (docs/HLO.md 1.6); tile configs and hardware enter only in the model.
 */
#include "sim.h"

#include <math.h>
#include <string.h>

#include "kernels_int.h"
#include "plan_int.h"

/* Nested fusions / bitcast chains followed when counting reads. */
#define COST_MAX_DEPTH 16
/* The highest rank HLO text may give (docs/HLO.md 1.5). */
#define COST_MAX_RANK 128

/* ---- sizes ------------------------------------------------------------------ */

static int elem_bits(const struct ir_shape *s)
{
	return s->layout.element_size_bits > 0 ? s->layout.element_size_bits
					       : ir_type_bits(s->type);
}

/* Logical elements; tuples sum their leaves. */
static double logical_elems(const struct ir_shape *s)
{
	if (s->type != IR_TYPE_TUPLE)
		return (double)ir_shape_elems(s);
	double e = 0;
	for (int i = 0; i < s->n_elems; i++)
		e += logical_elems(&s->elems[i]);
	return e;
}

/*
 * Elements as the VPU sees them: the array padded to its layout tiles.
 *   padded_elems = ir_shape_padded_bytes x 8 / element bits
 * (the packing tile (2,1)/(4,1) changes words, not elements). Assumes the
 * VPU sweeps whole (8 x 128) tiles, so padding costs as much as data; wrong
 * where the compiler masks a ragged last tile cheaply. docs/TPU.md 2 rule 2.
 */
static double padded_elems(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double e = 0;
		for (int i = 0; i < s->n_elems; i++)
			e += padded_elems(&s->elems[i]);
		return e;
	}
	int bits = elem_bits(s);
	if (bits > 0 && bits < 8 && s->layout.element_size_bits <= 0)
		bits = 8; /* unpacked sub-byte data: a byte each (ir_shape.c) */
	return bits > 0 ? ir_shape_padded_bytes(s) * 8.0 / bits : 0.0;
}

/*
 * HBM bytes of a value: padded bytes of every array leaf (ir_shape.c),
 * except leaves on chip (sim_on_chip: VMEM, scalar memory) and
 * zero-width leaves (token, opaque). Host memory S(5) is counted as HBM
 * bytes; an async copy to or from it is costed at PCIe rate besides
 * (sim_dma_host_bytes, model.c); a kernel that reads or writes host memory
 * directly is not: known wrong (PCIe is ~50x slower), rare.
 */
static double hbm_bytes(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double b = 0;
		for (int i = 0; i < s->n_elems; i++)
			b += hbm_bytes(&s->elems[i]);
		return b;
	}
	if (sim_on_chip(s) || elem_bits(s) <= 0)
		return 0.0;
	return ir_shape_padded_bytes(s);
}

/* Padded bytes of a value's array leaves in whatever memory space (what a
 * DMA or the ICI moves of it; hbm_bytes is what HBM sees). */
static double any_space_bytes(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double b = 0;
		for (int i = 0; i < s->n_elems; i++)
			b += any_space_bytes(&s->elems[i]);
		return b;
	}
	return elem_bits(s) > 0 ? ir_shape_padded_bytes(s) : 0.0;
}

/* ---- MXU work ------------------------------------------------------------------ */

static enum ts_status bad_attr(const struct ir_instr *in, const char *file,
			       struct ts_diag *d, const char *what)
{
	ts_diag_set(d, file, in->line, in->col, "%s: %s %s", in->name,
		    ir_op_name(in->op), what);
	return TS_ERR_PARSE;
}

/* Inverse of a modulo m (gcd(a, m) == 1, m >= 1), by extended Euclid. */
static ts_i128 mod_inverse(ts_i128 a, ts_i128 m)
{
	ts_i128 r0 = m, r1 = a % m, t0 = 0, t1 = 1;
	while (r1 != 0) {
		ts_i128 q = r0 / r1, r = r0 - q * r1, t = t0 - q * t1;
		r0 = r1;
		r1 = r;
		t0 = t1;
		t1 = t;
	}
	return ((t0 % m) + m) % m;
}

/*
 * Output positions of one kernel tap: o in [0, O) with x = o*s + off in
 * [0, xmax] and x a multiple of ld. The o satisfying the bounds form an
 * interval; with ld > 1 the multiples are o = o0 (mod ld / g), g =
 * gcd(s, ld), when g divides off (else none). O(log ld), no loop over O.
 */
static ts_i128 tap_positions(int64_t out_size, int64_t s, ts_i128 off, int64_t ld,
			  ts_i128 xmax)
{
	ts_i128 lo = ts_ceil_div(-off, s), hi = ts_floor_div(xmax - off, s);
	if (lo < 0)
		lo = 0;
	if (hi > out_size - 1)
		hi = out_size - 1;
	if (hi < lo)
		return 0;
	if (ld == 1)
		return hi - lo + 1;
	ts_i128 g = s, h = ld;
	while (h) {
		ts_i128 t = g % h;
		g = h;
		h = t;
	}
	if (off % g != 0)
		return 0;
	ts_i128 m = ld / g;
	ts_i128 o0 = (((-off / g) % m + m) % m) * mod_inverse((s / g) % m, m) % m;
	ts_i128 first = lo + (((o0 - lo) % m) + m) % m;
	return first > hi ? 0 : (hi - first) / m + 1;
}

/* Kernel taps counted one by one up to this many; past it (no real
 * window is that wide) taps are sampled at an even stride. */
#define TAP_EXACT (1 << 20)

/*
 * Valid (kernel tap, output position) pairs along one spatial dim:
 *   count of (k, o), 0 <= k < K, 0 <= o < O, such that
 *   x = o*stride - pad_lo + k*rhs_dilate is a multiple of lhs_dilate and
 *   0 <= x / lhs_dilate < I.
 * This is HloCostAnalysis::HandleConvolution's rule: taps that land on
 * padding or on base-dilation holes do no work. Each tap's positions are
 * counted in closed form (tap_positions), so the cost is O(K log ld),
 * independent of O. Known to be approximate only for K > 2^20 taps: then
 * taps are sampled at an even stride, each standing for its stride.
 * Source: docs/HLO.md 3.1.
 */
static double valid_positions(int64_t in_size, int64_t out_size, int64_t k_size,
			      const struct ir_window_dim *wd)
{
	int64_t s = wd->stride, ld = wd->lhs_dilate, rd = wd->rhs_dilate;
	int64_t step = k_size > TAP_EXACT ? ir_ceil_div(k_size, TAP_EXACT) : 1;
	ts_i128 xmax = (ts_i128)(in_size - 1) * ld;
	double count = 0;
	for (int64_t k = 0; k < k_size; k += step) {
		ts_i128 off = (ts_i128)k * rd - wd->pad_lo; /* x = o*s + off */
		int64_t stands = k_size - k < step ? k_size - k : step;
		count += (double)tap_positions(out_size, s, off, ld, xmax) *
			 (double)stands;
	}
	return count;
}

static bool dim_ok(int d, const struct ir_shape *s)
{
	return d >= 0 && d < s->rank;
}

double sim_mxu_rate(bool int8, const struct hw_spec *hw)
{
	return int8 && hw->mxu_int8_rate > 1 ? hw->mxu_int8_rate : 1.0;
}

double sim_work_bf16_macs(const struct sim_work *w, const struct hw_spec *hw)
{
	return w->mxu_macs - w->mxu_int8_macs +
	       w->mxu_int8_macs / sim_mxu_rate(true, hw);
}

bool sim_int8_contraction(const struct ir_instr *c)
{
	if (c->n_operands < 2)
		return false;
	for (int i = 0; i < 2; i++) {
		enum ir_type t = c->operands[i]->shape.type;
		if (t != IR_TYPE_S8 && t != IR_TYPE_U8)
			return false;
	}
	return true;
}

/*
 * Dot: MACs = elems(out) x prod(lhs contracting dims)   (HloCostAnalysis).
 * Convolution: MACs = (C_in / feature_group_count) x C_out
 *                     x (N / batch_group_count) x prod_d valid(d)
 * with N and C_in from the lhs, C_out the kernel's output features.
 * Source: docs/HLO.md 3.1. Counts what the HLO asks for, not what the
 * MXU does: padding of K/N to the array size is the model's business.
 */
enum ts_status sim_instr_macs(const struct ir_instr *in, const char *file,
			      double *macs, struct ts_diag *d)
{
	*macs = 0;
	switch (in->op) {
	case IR_OP_DOT:
	case IR_OP_RAGGED_DOT:
	case IR_OP_SCALED_DOT: {
		const struct ir_dot_dims *dd = in->attrs.dot;
		if (in->n_operands < 2)
			return bad_attr(in, file, d, "needs two operands");
		if (!dd)
			return bad_attr(in, file, d,
					"without contracting dimensions");
		const struct ir_shape *lhs = &in->operands[0]->shape;
		double k = 1;
		for (int i = 0; i < dd->lhs_contracting.n; i++) {
			int64_t c = dd->lhs_contracting.v[i];
			if (c < 0 || c >= lhs->rank)
				return bad_attr(in, file, d,
						"lhs_contracting_dims out of "
						"range of the lhs rank");
			k *= (double)lhs->dims[c];
		}
		*macs = logical_elems(&in->shape) * k;
		return TS_OK;
	}
	case IR_OP_CONVOLUTION: {
		const struct ir_conv_dims *cd = in->attrs.conv;
		const struct ir_window *w = in->attrs.window;
		if (in->n_operands < 2)
			return bad_attr(in, file, d, "needs two operands");
		if (!cd)
			return bad_attr(in, file, d, "without dim_labels");
		const struct ir_shape *lhs = &in->operands[0]->shape;
		const struct ir_shape *rhs = &in->operands[1]->shape;
		const struct ir_shape *out = &in->shape;
		int n_win = w ? w->n : 0;
		if (!dim_ok(cd->lhs_batch, lhs) || !dim_ok(cd->lhs_feature, lhs) ||
		    !dim_ok(cd->rhs_out, rhs) || n_win != cd->n_spatial)
			return bad_attr(in, file, d,
					"dim_labels/window do not fit the "
					"operand shapes");
		int64_t fgc = in->attrs.feature_group_count > 0
				      ? in->attrs.feature_group_count
				      : 1;
		int64_t bgc = in->attrs.batch_group_count > 0
				      ? in->attrs.batch_group_count
				      : 1;
		double m = (double)(lhs->dims[cd->lhs_feature] / fgc) *
			   (double)rhs->dims[cd->rhs_out] *
			   (double)(lhs->dims[cd->lhs_batch] / bgc);
		for (int i = 0; i < cd->n_spatial; i++) {
			const struct ir_window_dim *wd = &w->dims[i];
			if (!dim_ok(cd->lhs_spatial[i], lhs) ||
			    !dim_ok(cd->rhs_spatial[i], rhs) ||
			    !dim_ok(cd->out_spatial[i], out))
				return bad_attr(in, file, d,
						"spatial dims out of range");
			if (wd->stride < 1 || wd->lhs_dilate < 1 ||
			    wd->rhs_dilate < 1)
				return bad_attr(in, file, d,
						"window stride/dilation below 1");
			m *= valid_positions(lhs->dims[cd->lhs_spatial[i]],
					     out->dims[cd->out_spatial[i]],
					     rhs->dims[cd->rhs_spatial[i]], wd);
		}
		*macs = m;
		return TS_OK;
	}
	default:
		return TS_OK;
	}
}

/* ---- VPU work -------------------------------------------------------------------- */

/* Work of one evaluation of a to_apply / comparator computation. */
/* One application costs the elementwise ops of the applied computation;
 * a missing or op-free computation (e.g. "take the new value") costs one
 * simple op, so that reductions never come out free. */
void sim_body_mix(const struct ir_instr *in, int which, struct sim_op_mix *mix)
{
	memset(mix, 0, sizeof *mix);
	const struct ir_computation *c =
		which < in->n_called ? in->called[which] : NULL;
	for (int i = 0; c && i < c->n_instrs; i++) {
		enum ir_op op = c->instrs[i]->op;
		switch (ir_op_class(op)) {
		case IR_CLASS_ELEMENTWISE:
			mix->flops += 1;
			mix->vpu[sim_op_vpu_class(op)] += 1;
			break;
		case IR_CLASS_TRANSCENDENTAL:
			mix->trans += 1;
			mix->vpu[sim_op_vpu_class(op)] += 1;
			break;
		default:
			break;
		}
	}
	if (mix->flops + mix->trans == 0) {
		mix->flops = 1;
		mix->vpu[HW_VPU_SIMPLE] = 1;
	}
}

/* Adds apps applications of mix: logical for flops, padded for the VPU. */
static void add_mix(struct sim_work *w, const struct sim_op_mix *mix, double apps,
		    double padded_apps)
{
	if (apps < 0)
		apps = 0;
	if (padded_apps < 0)
		padded_apps = 0;
	w->flops += mix->flops * apps;
	w->transcendentals += mix->trans * apps;
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		w->vpu_elem_ops[c] += mix->vpu[c] * padded_apps;
}

static double window_elems(const struct ir_instr *in)
{
	double n = 1;
	for (int i = 0; in->attrs.window && i < in->attrs.window->n; i++)
		n *= (double)in->attrs.window->dims[i].size;
	return n;
}

/*
 * The VPU's least work for a window: sum_d (size_d - 1) combines per
 * element (window_sep), a window being separable (one pass per dim, as
 * the model runs it: plan_vpu.c window_vpu_cycles), over the fewer
 * padded elements of the operand and `out` (separable_elems). FLOPs keep
 * HloCostAnalysis's prod_d size_d - 1 per result element; this is the
 * VPU count the roofline's floor reads.
 */
static double window_sep(const struct ir_instr *in)
{
	double n = 0;
	for (int i = 0; in->attrs.window && i < in->attrs.window->n; i++)
		n += (double)(in->attrs.window->dims[i].size - 1);
	return n;
}

static double separable_elems(const struct ir_instr *in,
			      const struct ir_shape *out)
{
	double a = padded_elems(out);
	double b = in->n_operands > 0 ? padded_elems(&in->operands[0]->shape) : a;
	return a < b ? a : b;
}

bool sim_window_whole_dims(const struct ir_instr *in, bool *whole)
{
	const struct ir_window *w = in->attrs.window;
	if (in->op != IR_OP_REDUCE_WINDOW || !w || in->n_operands < 1)
		return false;
	const struct ir_shape *src = &in->operands[0]->shape;
	const struct ir_shape *out = in->shape.type == IR_TYPE_TUPLE &&
					     in->shape.n_elems > 0
				     ? &in->shape.elems[0]
				     : &in->shape;
	if (src->type == IR_TYPE_TUPLE || out->type == IR_TYPE_TUPLE ||
	    w->n != src->rank || out->rank != src->rank)
		return false;
	bool any = false;
	for (int i = 0; i < w->n; i++) {
		const struct ir_window_dim *wd = &w->dims[i];
		int64_t dn = src->dims[i], on = out->dims[i];
		whole[i] = false;
		if (wd->lhs_dilate != 1 || wd->rhs_dilate != 1 || wd->stride < 1)
			return false;
		if (wd->size == 1) {
			if (wd->stride != 1 || wd->pad_lo != 0 || wd->pad_hi != 0)
				return false;
			continue;
		}
		/* output o reads input [o s - pad_lo, o s - pad_lo + size - 1]:
		 * it holds [0, dn - 1] for o = 0 and for o = on - 1 */
		if (on < 1 || wd->pad_lo < (on - 1) * wd->stride ||
		    wd->size - 1 - wd->pad_lo < dn - 1)
			return false;
		whole[i] = any = true;
	}
	return any;
}

static enum ts_status count_comp(const struct ir_computation *c,
				 const char *file, struct sim_work *w,
				 struct ts_diag *d, int depth);

/*
 * The compute work of one instruction (HloCostAnalysis per-op rules,
 * docs/HLO.md 3.1):
 *   elementwise      flops += E, vpu[class] += E_padded
 *   transcendental   transcendentals += E, vpu[class] += E_padded
 *   dot/convolution  mxu_macs += MACs, flops += 2 MACs (int8 x int8:
 *                    mxu_int8_macs += MACs too)
 *   reduce           (E_in - E_out) applications of to_apply
 *                    (VPU: every padded input element passes the ALU once)
 *   reduce-window    (window - 1) x E_out applications; a window over
 *                    whole dims (sim_window_whole_dims: the row max of
 *                    attention) E_in - E_in / prod(those dims), a reduce
 *                    and a broadcast back (HloCostAnalysis counts it as
 *                    E_out / D + D - 1, which undercounts the reduce)
 *   select-and-scatter  E_src (window - 1) selects + E_src scatters
 *   map / scatter    E_out / E_updates applications
 *   sort             n ceil(log2 n) comparator evaluations
 *   all-reduce(-start), reduce-scatter  E_out applications (the combine)
 *   custom-call with a declared cost (a Pallas kernel, ir_declared)
 *                    flops F, transcendentals T as declared: mxu_macs
 *                    F / 2, VPU transcendental ops T (logical elements,
 *                    where every other op counts padded ones: the kernel's
 *                    tiles are not known)
 * Data movement, control and free ops add nothing here (bytes only).
 * Known wrong: broadcasts and transposes along lanes cost XLU work that is
 * not counted; reductions across lanes cost more than one op per element.
 */
static enum ts_status count_instr(const struct ir_instr *in, const char *file,
				  struct sim_work *w, struct ts_diag *d,
				  int depth)
{
	struct sim_op_mix mix;
	/* the result's elements, logical and padded: asked only by the ops
	 * that use them (most members of a kernel move data, and a padded
	 * size takes the compact physical order, ir_shape.c) */
	const struct ir_shape *r = &in->shape;
	switch (in->op) {
	case IR_OP_FUSION:
		if (in->n_called < 1 || !in->called[0])
			return bad_attr(in, file, d,
					"without a fused computation");
		return count_comp(in->called[0], file, w, d, depth + 1);
	case IR_OP_CUSTOM_CALL:
		/* a Pallas kernel: what its author declares, its FLOPs on the
		 * MXU and its transcendentals on the VPU (docs/MODEL.md
		 * "Pallas kernels"); any other custom call: nothing here */
		if (in->attrs.declared) {
			w->mxu_macs += in->attrs.declared->flops / 2;
			w->flops += in->attrs.declared->flops;
			w->transcendentals += in->attrs.declared->transcendentals;
			w->vpu_elem_ops[HW_VPU_TRANSCEND] +=
				in->attrs.declared->transcendentals;
		}
		return TS_OK;
	case IR_OP_DOT:
	case IR_OP_RAGGED_DOT:
	case IR_OP_SCALED_DOT:
	case IR_OP_CONVOLUTION: {
		double macs;
		enum ts_status st = sim_instr_macs(in, file, &macs, d);
		if (st != TS_OK)
			return st;
		w->mxu_macs += macs;
		if (sim_int8_contraction(in))
			w->mxu_int8_macs += macs;
		w->flops += 2 * macs;
		return TS_OK;
	}
	case IR_OP_REDUCE: {
		if (in->n_operands < 1)
			return bad_attr(in, file, d, "without operands");
		const struct ir_shape *src = &in->operands[0]->shape;
		const struct ir_shape *out = in->shape.type == IR_TYPE_TUPLE &&
						     in->shape.n_elems > 0
					     ? &in->shape.elems[0]
					     : &in->shape;
		/* the VPU folds every padded input element but one per
		 * result element into the results (the floor: a fold over
		 * vregs, hw_vpu_reduce_cycles, does no more) */
		double folds = padded_elems(src) - padded_elems(out);
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, logical_elems(src) - logical_elems(out),
			folds > 0 ? folds : 0.0);
		return TS_OK;
	}
	case IR_OP_REDUCE_WINDOW: {
		/* a window over whole dims is a reduce then a broadcast
		 * (sim_window_whole_dims): E_in - E_in / prod(reduced dims)
		 * applications, the VPU one per padded input element, as a
		 * reduce; the broadcast back, like any broadcast, none */
		bool whole[COST_MAX_RANK];
		if (in->n_operands >= 1 &&
		    in->operands[0]->shape.rank <= COST_MAX_RANK &&
		    sim_window_whole_dims(in, whole)) {
			const struct ir_shape *src = &in->operands[0]->shape;
			double e = logical_elems(src), kept = e;
			for (int i = 0; i < src->rank; i++)
				if (whole[i] && src->dims[i] > 0)
					kept /= (double)src->dims[i];
			sim_body_mix(in, 0, &mix);
			add_mix(w, &mix, e - kept, padded_elems(src));
			return TS_OK;
		}
		double win = window_elems(in) - 1;
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, win * logical_elems(r),
			window_sep(in) * separable_elems(in, r));
		return TS_OK;
	}
	case IR_OP_SELECT_AND_SCATTER: {
		if (in->n_operands < 2)
			return bad_attr(in, file, d, "needs a source operand");
		const struct ir_shape *src = &in->operands[1]->shape;
		double n = logical_elems(src), np = padded_elems(src);
		double win = window_elems(in) - 1;
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, n * win, window_sep(in) * separable_elems(in, src));
		sim_body_mix(in, 1, &mix);
		add_mix(w, &mix, n, np);
		return TS_OK;
	}
	case IR_OP_MAP:
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, logical_elems(r), padded_elems(r));
		return TS_OK;
	case IR_OP_SCATTER: {
		int n_in = (in->n_operands - 1) / 2;
		if (n_in < 1)
			return bad_attr(in, file, d,
					"needs operands, indices and updates");
		const struct ir_shape *upd = &in->operands[n_in + 1]->shape;
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, logical_elems(upd), padded_elems(upd));
		return TS_OK;
	}
	case IR_OP_SORT: {
		if (in->n_operands < 1)
			return bad_attr(in, file, d, "without operands");
		double n = logical_elems(&in->operands[0]->shape);
		double cmp = n >= 2 ? n * ceil(log2(n)) : 0;
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, cmp, cmp);
		return TS_OK;
	}
	case IR_OP_ALL_REDUCE:
	case IR_OP_ALL_REDUCE_START:
	case IR_OP_REDUCE_SCATTER:
		sim_body_mix(in, 0, &mix);
		add_mix(w, &mix, logical_elems(r), padded_elems(r));
		return TS_OK;
	default:
		break;
	}
	switch (ir_op_class(in->op)) {
	case IR_CLASS_ELEMENTWISE:
		w->flops += logical_elems(r);
		w->vpu_elem_ops[sim_op_vpu_class(in->op)] += padded_elems(r);
		break;
	case IR_CLASS_TRANSCENDENTAL:
		w->transcendentals += logical_elems(r);
		w->vpu_elem_ops[sim_op_vpu_class(in->op)] += padded_elems(r);
		break;
	default:
		break;
	}
	return TS_OK;
}

/* Compute work of every instruction of c that is not constant-derived
 * (cd: sim_const_derived(c)). */
static enum ts_status count_body(const struct ir_computation *c,
				 const bool *cd, const char *file,
				 struct sim_work *w, struct ts_diag *d,
				 int depth)
{
	enum ts_status st = TS_OK;
	for (int i = 0; i < c->n_instrs && st == TS_OK; i++)
		if (!cd[i])
			st = count_instr(c->instrs[i], file, w, d, depth);
	return st;
}

/* count_body of a nested fused computation, at most COST_MAX_DEPTH deep. */
static enum ts_status count_comp(const struct ir_computation *c,
				 const char *file, struct sim_work *w,
				 struct ts_diag *d, int depth)
{
	if (depth > COST_MAX_DEPTH) {
		ts_diag_set(d, file, c->line, c->col,
			    "%s: fusions nest deeper than %d", c->name,
			    COST_MAX_DEPTH);
		return TS_ERR_UNSUPPORTED_OP;
	}
	bool *cd = sim_const_derived(c);
	if (!cd)
		return TS_ERR_NOMEM;
	enum ts_status st = count_body(c, cd, file, w, d, depth);
	ts_free(cd);
	return st;
}

/* ---- HBM bytes ------------------------------------------------------------------- */

static double read_bytes(const struct ir_instr *v, const struct ir_shape *full,
			 const struct ir_instr *const *cand, int n, int depth);

/*
 * Bytes the consumers cand[0..n) read from value v, whose full size and
 * memory space are `full` (XLA's fusion operand rule, docs/HLO.md 3.1):
 *   slice / dynamic-slice / gather of v   read only the result's bytes;
 *   convolution of v (operand 0)          the part its windows touch
 *                                         (conv_input_fraction);
 *   dynamic-update-slice into v (op. 0)   reads nothing (in place);
 *   scatter into v                        reads the updates' bytes;
 *   bitcast / get-tuple-element / nested fusion parameter: followed
 *                                         (through a nested bitcast fusion
 *                                         to the users of its result, and
 *                                         through one relaying it out,
 *                                         copies, where those users only
 *                                         slice it: sim_root_relays);
 *   pad or copy of v (operand 0) read     the slices' bytes (a pad: known
 *   only through slices / dynamic-slices  wrong high, the padding inside a
 *                                         window counts as read; a copy,
 *                                         a relayout, made as the slices
 *                                         take it);
 *   any other use (broadcast included)    one full read, shared by all.
 * A value is read at most once in all: the parts read through slices
 * are shared by a full read and never add up to more than one (XLA's
 * HloCostAnalysis adds them to it: a rotary embedding that reads x whole
 * and through two pairs of slices counts 3 reads of x where the kernel
 * streams it once; each byte moved once is what the roofline assumes).
 * A value in VMEM (S(1)) costs nothing; a value in HBM costs what is read
 * of it whatever the space of the result (a slice into VMEM reads HBM).
 * Known wrong: a broadcast operand re-read per output tile is counted
 * once (the tiled model may charge re-reads).
 * use_bytes applies the rule to one use j of consumer u: bytes added to
 * *part, or *whole set; read_bytes sums a value's uses, add_reads those of
 * many values in one pass.
 */
/* The input positions x in [0, n) that O windows of k taps, stride s,
 * dilation d and low padding p touch (x = o s + t d - p). Dense windows
 * (d = 1) as the union of the intervals [o s - p, o s - p + k): one run
 * when they overlap (k >= s), else summed per window; dilated ones by a
 * pass over the positions. -1 past 2^20 windows or positions. */
static int64_t touched_positions(int64_t n, int64_t o, int64_t k, int64_t s,
				 int64_t d, int64_t p)
{
	if (o > ((int64_t)1 << 40) || s > ((int64_t)1 << 20) ||
	    d > ((int64_t)1 << 20) || k > ((int64_t)1 << 40) ||
	    p > ((int64_t)1 << 40) || p < -((int64_t)1 << 40))
		return -1; /* beyond any real window: no overflow below */
	if (d == 1 && k >= s) {
		int64_t lo = -p, hi = (o - 1) * s - p + k;
		lo = lo > 0 ? lo : 0;
		hi = hi < n ? hi : n;
		return hi > lo ? hi - lo : 0;
	}
	int64_t touched = 0;
	if (d == 1) {
		if (o > ((int64_t)1 << 20))
			return -1;
		for (int64_t w = 0; w < o; w++) {
			int64_t lo = w * s - p, hi = lo + k;
			lo = lo > 0 ? lo : 0;
			hi = hi < n ? hi : n;
			touched += hi > lo ? hi - lo : 0;
		}
		return touched;
	}
	if (n > ((int64_t)1 << 20) || k > ((int64_t)1 << 20) / n)
		return -1;
	for (int64_t x = 0; x < n; x++) {
		bool hit = false;
		for (int64_t t = 0; t < k && !hit; t++) {
			int64_t y = x + p - t * d;
			hit = y >= 0 && y % s == 0 && y / s < o;
		}
		touched += hit;
	}
	return touched;
}

/*
 * The fraction of a convolution's input (operand 0) its windows touch:
 *   prod over spatial dims of touched_s / in_s
 * touched_s: the input positions its windows reach (touched_positions),
 * counted exactly (a dim past 2^20 windows, or 2^20 positions x taps of
 * a dilated window, counts as read whole). A stride wider than the window
 * skips input rows
 * (ResNet's 1x1 stride-2 shortcut reads a quarter of its input), and a
 * window that does not reach the end leaves the last rows unread; a DMA
 * with the spatial dims major in memory skips them too. 1 for a base
 * (lhs) dilated window or a malformed one (read whole). Units: a fraction
 * of the input's bytes. Known wrong: tiles along a spatial dim make a
 * partly touched tile move whole (the floor counts positions).
 */
static double conv_input_fraction(const struct ir_instr *u)
{
	const struct ir_window *w = u->attrs.window;
	const struct ir_conv_dims *cd = u->attrs.conv;
	if (!w || !cd || u->n_operands < 1 || cd->n_spatial != w->n)
		return 1.0;
	const struct ir_shape *in = &u->operands[0]->shape;
	double f = 1.0;
	for (int s = 0; s < w->n; s++) {
		const struct ir_window_dim *wd = &w->dims[s];
		int ld = cd->lhs_spatial[s], od = cd->out_spatial[s];
		if (ld < 0 || ld >= in->rank || od < 0 || od >= u->shape.rank ||
		    wd->lhs_dilate > 1 || wd->stride < 1 || wd->size < 1)
			return 1.0;
		int64_t n = in->dims[ld];
		int64_t t = touched_positions(
			n, u->shape.dims[od], wd->size, wd->stride,
			wd->rhs_dilate > 1 ? wd->rhs_dilate : 1, wd->pad_lo);
		if (n > 0 && t >= 0)
			f *= (double)t / (double)n;
	}
	return f;
}

/* Whether cand[0..n) use v, and only as the array a slice or a
 * dynamic-slice takes from. */
static bool sliced_only(const struct ir_instr *v,
			const struct ir_instr *const *cand, int n)
{
	bool used = false;
	for (int q = 0; q < n; q++)
		for (int j = 0; j < cand[q]->n_operands; j++)
			if (cand[q]->operands[j] == v) {
				if (j != 0 || (cand[q]->op != IR_OP_SLICE &&
					       cand[q]->op != IR_OP_DYNAMIC_SLICE))
					return false;
				used = true;
			}
	return used;
}

static void use_bytes(const struct ir_instr *u, int j,
		      const struct ir_shape *full,
		      const struct ir_instr *const *cand, int n, int depth,
		      double *part, bool *whole)
{
	/* the part read is the size of what the user makes of it, in v's
	 * memory space (read_total): a slice of an HBM array into VMEM
	 * reads its bytes from HBM */
	switch (u->op) {
	case IR_OP_SLICE:
		*part += any_space_bytes(&u->shape);
		break;
	case IR_OP_DYNAMIC_SLICE:
	case IR_OP_GATHER:
		if (j == 0)
			*part += any_space_bytes(&u->shape);
		else
			*whole = true;
		break;
	case IR_OP_DYNAMIC_UPDATE_SLICE:
		if (j != 0)
			*whole = true;
		break;
	case IR_OP_SCATTER: {
		int n_in = (u->n_operands - 1) / 2;
		if (j < n_in)
			*part += any_space_bytes(
				&u->operands[n_in + 1 + j]->shape);
		else
			*whole = true;
		break;
	}
	case IR_OP_CONVOLUTION:
		if (j == 0)
			*part += conv_input_fraction(u) * any_space_bytes(full);
		else
			*whole = true;
		break;
	case IR_OP_BITCAST:
		*part += read_bytes(u, full, cand, n, depth + 1);
		break;
	case IR_OP_PAD:
	case IR_OP_COPY:
		if (j == 0 && sliced_only(u, cand, n))
			*part += read_bytes(u, full, cand, n, depth + 1);
		else
			*whole = true;
		break;
	case IR_OP_GET_TUPLE_ELEMENT: {
		int64_t t = u->attrs.tuple_index;
		if (full->type == IR_TYPE_TUPLE && t >= 0 && t < full->n_elems)
			*part += read_bytes(u, &full->elems[t], cand, n,
					    depth + 1);
		else
			*whole = true;
		break;
	}
	case IR_OP_FUSION: {
		const struct ir_computation *c =
			u->n_called > 0 ? u->called[0] : NULL;
		if (!c || j >= c->n_params || !c->params[j]) {
			*whole = true;
			break;
		}
		/* A nested fusion that relays its parameter out (copies,
		 * bitcasts), read only through slices here, reads v's
		 * windows: its elements are made as the slices take them
		 * (v7/decoder_s_noremat's compiled fusion.394 takes one layer
		 * of a relaid-out stack of two) */
		if (sim_root_relays(c, c->params[j], true) &&
		    sliced_only(u, cand, n)) {
			*part += read_bytes(u, full, cand, n, depth + 1);
			break;
		}
		*part += read_bytes(c->params[j], full,
				    (const struct ir_instr *const *)c->instrs,
				    c->n_instrs, depth + 1);
		/* A nested bitcast fusion is a view: its users here read v
		 * through it. */
		if (sim_root_relays(c, c->params[j], false))
			*part += read_bytes(u, full, cand, n, depth + 1);
		break;
	}
	default:
		*whole = true;
		break;
	}
}

/* The bytes of a value read_bytes sums up: one full read when any use
 * reads it whole, else its parts, at most one full read. */
static double read_total(const struct ir_shape *full, double part, bool whole)
{
	double all = hbm_bytes(full);
	return whole || part > all ? all : part;
}

/* The bytes cand[0..n) read from v (the rule above use_bytes); past
 * COST_MAX_DEPTH nested reads, v whole. */
static double read_bytes(const struct ir_instr *v, const struct ir_shape *full,
			 const struct ir_instr *const *cand, int n, int depth)
{
	bool deep = depth > COST_MAX_DEPTH;
	double part = 0;
	bool whole = deep;
	for (int q = 0; !deep && q < n; q++) {
		const struct ir_instr *u = cand[q];
		for (int j = 0; j < u->n_operands; j++)
			if (u->operands[j] == v)
				use_bytes(u, j, full, cand, n, depth, &part,
					  &whole);
	}
	return read_total(full, part, whole);
}

double sim_kernel_read_bytes(const struct sim_kernel *k,
			     const struct ir_instr *v)
{
	return read_bytes(v, &v->shape, k->members, k->n_members, 0);
}

/* The full size of value i of add_reads: fulls[i], or (fulls NULL) its
 * own shape. */
static const struct ir_shape *full_of(const struct ir_instr *const *vals,
				      const struct ir_shape *const *fulls,
				      int i)
{
	return fulls ? fulls[i] : &vals[i]->shape;
}

/*
 * The bytes cand[0..n) read from the buffers vals[0..nv) stand for, added
 * to *sum: read_bytes(vals[i], fulls[i], cand, n, 0) per buffer, from one
 * pass over the consumers' operands where calling read_bytes per value
 * would scan them once each (a kernel's inputs, a fusion's parameters).
 * bufs[i] is the buffer value i stands for (bufs NULL: the value itself):
 * values of one buffer (a fusion given x as two parameters, a group
 * input listed twice) are read as one, their uses pooled, at most one
 * full read (read_total), as the kernel streams the buffer once. fulls
 * NULL: each value's own shape, and no value NULL; a NULL value: fulls[i]
 * read whole. Sums in order of each buffer's first value. False when
 * memory runs out.
 */
static bool add_reads(const struct ir_instr *const *vals,
		      const struct ir_shape *const *fulls,
		      const struct ir_instr *const *bufs, int nv,
		      const struct ir_instr *const *cand, int n, double *sum)
{
	struct ts_ptrmap first = {0}; /* value -> its first i */
	struct ts_ptrmap owner = {0}; /* buffer -> its first i */
	double *part = ts_calloc((size_t)nv + 1, sizeof *part);
	bool *whole = ts_calloc((size_t)nv + 1, sizeof *whole);
	bool ok = part && whole && ts_ptrmap_init(&first, (size_t)nv) &&
		  ts_ptrmap_init(&owner, (size_t)nv);
	for (int i = nv - 1; ok && i >= 0; i--) {
		if (vals[i])
			ts_ptrmap_set(&first, vals[i], i);
		const struct ir_instr *b = bufs ? bufs[i] : vals[i];
		if (b)
			ts_ptrmap_set(&owner, b, i);
	}
	for (int q = 0; ok && q < n; q++) {
		const struct ir_instr *u = cand[q];
		for (int j = 0; j < u->n_operands; j++) {
			int i = ts_ptrmap_get(&first, u->operands[j]);
			if (i >= 0)
				use_bytes(u, j, full_of(vals, fulls, i), cand,
					  n, 0, &part[i], &whole[i]);
		}
	}
	/* pool each buffer's uses into its first value */
	for (int i = 0; ok && i < nv; i++) {
		const struct ir_instr *b = bufs ? bufs[i] : vals[i];
		int o = b ? ts_ptrmap_get(&owner, b) : -1;
		int f = vals[i] ? ts_ptrmap_get(&first, vals[i]) : -1;
		if (o >= 0 && o != i && f == i) {
			part[o] += part[i];
			whole[o] = whole[o] || whole[i];
		}
	}
	for (int i = 0; ok && i < nv; i++) {
		const struct ir_instr *b = bufs ? bufs[i] : vals[i];
		if (b && ts_ptrmap_get(&owner, b) != i)
			continue; /* read with its buffer's first value */
		int f = vals[i] ? ts_ptrmap_get(&first, vals[i]) : -1;
		*sum += f >= 0 ? read_total(full_of(vals, fulls, f), part[f],
					    whole[f])
			       : hbm_bytes(fulls[i]);
	}
	ts_free(part);
	ts_free(whole);
	ts_ptrmap_free(&first);
	ts_ptrmap_free(&owner);
	return ok;
}

/* Shape s of value v as kernel k holds it: in VMEM (sim_vmem_shape, into
 * *tmp) when memory-space assignment keeps v there, else s. */
static const struct ir_shape *held_shape(const struct sim_kernel *k,
					 const struct ir_instr *v,
					 const struct ir_shape *s,
					 struct ir_shape *tmp)
{
	return k->n_vmem && sim_kernel_in_vmem(k, v) ? sim_vmem_shape(s, tmp) : s;
}

/*
 * Bytes written for value v with result shape s: the padded leaves, except
 * a dynamic-update-slice (in place: the update only), a scatter (the
 * updates only) and a nested fusion computing one in place, each written
 * into the result's buffer wherever the update comes from (one in VMEM is
 * still written to HBM); a tuple built in the body is split per element. On-chip results cost nothing. HloCostAnalysis
 * fusion output rule, HLO.md 3.1.
 */
static double written_bytes(const struct ir_instr *v, const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		if (v->op != IR_OP_TUPLE || v->n_operands != s->n_elems)
			return hbm_bytes(s);
		double b = 0;
		for (int i = 0; i < s->n_elems; i++)
			b += written_bytes(v->operands[i], &s->elems[i]);
		return b;
	}
	if (sim_on_chip(s))
		return 0.0;
	switch (v->op) {
	case IR_OP_DYNAMIC_UPDATE_SLICE:
		return v->n_operands >= 2 ? any_space_bytes(&v->operands[1]->shape)
					  : hbm_bytes(s);
	case IR_OP_SCATTER: {
		/* at most the result once: updates that land on the same
		 * rows (more of them than the result holds) combine there */
		int n_in = (v->n_operands - 1) / 2;
		double b = 0, all = hbm_bytes(s);
		for (int i = 0; i < n_in; i++)
			b += any_space_bytes(&v->operands[n_in + 1 + i]->shape);
		return n_in > 0 && b < all ? b : all;
	}
	case IR_OP_FUSION: {
		/* a nested fusion updating its operand 0 in place (a kCustom
		 * scatter fusion in its kernel's fusion): as its root does */
		const struct ir_instr *update;
		const struct ir_instr *r = sim_nested_inplace(v, &update);
		return r ? written_bytes(r, s) : hbm_bytes(s);
	}
	default:
		return hbm_bytes(s);
	}
}

/* The part of an async "-start" tuple that is the transferred result:
 * copy-start (dest, src, ctx) -> dest; all-gather-start (in, out),
 * collective-permute-start (in, out, ...) and async-start sugar
 * ((in...), out, ctx) -> out. */
static const struct ir_shape *result_shape(const struct ir_instr *in)
{
	const struct ir_shape *s = &in->shape;
	if (s->type != IR_TYPE_TUPLE)
		return s;
	switch (in->op) {
	case IR_OP_COPY_START:
		return s->n_elems >= 1 ? &s->elems[0] : s;
	case IR_OP_ALL_GATHER_START:
	case IR_OP_COLLECTIVE_PERMUTE_START:
	case IR_OP_ASYNC_START: /* ((operands), result, context...) */
		return s->n_elems >= 2 ? &s->elems[1] : s;
	default:
		return s;
	}
}

/*
 * Literal constants a body reads from HBM: non-scalar (more than one
 * element) constants used by real work or by a broadcast, by the use rule
 * of read_bytes (a gather from a table reads its rows). Folded constant
 * chains (constant-derived users only) and scalars (splatted into
 * registers) read nothing. XLA counts "large" constants in fusions the
 * same way (HLO.md 3.1).
 */
static double constant_bytes(const struct ir_instr *const *body, int n,
			     const bool *cd)
{
	double b = 0;
	for (int i = 0; i < n; i++) {
		const struct ir_instr *c = body[i];
		if (c->op != IR_OP_CONSTANT || logical_elems(&c->shape) <= 1)
			continue;
		bool used = false;
		for (int q = 0; q < n && !used; q++)
			for (int j = 0; j < body[q]->n_operands && !used; j++)
				used = body[q]->operands[j] == c &&
				       (body[q]->op == IR_OP_BROADCAST ||
					!cd[body[q]->index]);
		if (used)
			b += read_bytes(c, &c->shape, body, n, 0);
	}
	return b;
}

/* ---- a kernel ------------------------------------------------------------------- */

static enum ts_status fusion_work(const struct sim_kernel *k, const char *file,
				  struct sim_work *w, struct ts_diag *d)
{
	const struct ir_instr *in = k->instr;
	const struct ir_computation *c = in->n_called > 0 ? in->called[0] : NULL;
	if (!c)
		return bad_attr(in, file, d, "without a fused computation");
	const struct ir_instr *const *body =
		(const struct ir_instr *const *)c->instrs;
	bool *cd = sim_const_derived(c);
	if (!cd)
		return TS_ERR_NOMEM;
	enum ts_status st = count_body(c, cd, file, w, d, 0);
	const struct ir_instr **vals =
		ts_calloc((size_t)in->n_operands + 1, sizeof *vals);
	const struct ir_shape **fulls =
		ts_calloc((size_t)in->n_operands + 1, sizeof *fulls);
	struct ir_shape *held =
		ts_calloc((size_t)in->n_operands + 1, sizeof *held);
	if (st == TS_OK && (!vals || !fulls || !held))
		st = TS_ERR_NOMEM;
	if (st == TS_OK) {
		for (int j = 0; j < in->n_operands; j++) {
			vals[j] = j < c->n_params ? c->params[j] : NULL;
			const struct ir_instr *o = in->operands[j];
			fulls[j] = held_shape(k, o, &o->shape, &held[j]);
		}
		if (!add_reads(vals, fulls,
			       (const struct ir_instr *const *)in->operands,
			       in->n_operands, body, c->n_instrs,
			       &w->bytes_read))
			st = TS_ERR_NOMEM;
	}
	ts_free(vals);
	ts_free(fulls);
	ts_free(held);
	if (st == TS_OK) {
		struct ir_shape tmp;
		const struct ir_shape *out =
			held_shape(k, in, &in->shape, &tmp);
		w->constant_bytes = constant_bytes(body, c->n_instrs, cd);
		w->bytes_read += w->constant_bytes;
		w->bytes_written = c->root ? written_bytes(c->root, out)
					   : hbm_bytes(out);
	}
	ts_free(cd);
	return st;
}

/*
 * count_instr of member in of a grouped kernel added to w, the figure
 * taken from the fusion search's memo mm (sim/memo.c; NULL: none) where it
 * keeps in's, else counted and kept there. Adding the kept figure to each
 * field does what counting does where count_instr adds to each field at
 * most once (x + 0 leaves a field it does not touch as it was): every op
 * but a nested fusion (its body's ops) and a select-and-scatter (two
 * applications), which are counted each time.
 */
static enum ts_status member_work(struct sim_member_memo *mm,
				  const struct ir_instr *in, const char *file,
				  struct sim_work *w, struct ts_diag *d)
{
	int i = mm && in->op != IR_OP_FUSION &&
			in->op != IR_OP_SELECT_AND_SCATTER
		? sim_member_memo_index(mm, in)
		: -1;
	if (mm && (i < 0 || !mm->has_work[i]))
		mm->n_worked++;
	if (i < 0)
		return count_instr(in, file, w, d, 0);
	if (!mm->has_work[i]) {
		memset(&mm->work[i], 0, sizeof mm->work[i]);
		enum ts_status st = count_instr(in, file, &mm->work[i], d, 0);
		if (st != TS_OK)
			return st; /* not kept: asked again, it fails again */
		mm->has_work[i] = true;
	}
	const struct sim_work *x = &mm->work[i];
	w->flops += x->flops;
	w->mxu_macs += x->mxu_macs;
	w->mxu_int8_macs += x->mxu_int8_macs;
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		w->vpu_elem_ops[c] += x->vpu_elem_ops[c];
	w->transcendentals += x->transcendentals;
	return TS_OK;
}

static enum ts_status group_work(const struct sim_kernel *k,
				 const bool *parent_cd, const char *file,
				 struct sim_work *w, struct ts_diag *d)
{
	const struct ir_computation *c = k->instr->parent;
	bool *own = parent_cd || !c ? NULL : sim_const_derived(c);
	const bool *cd = parent_cd ? parent_cd : own;
	if (!cd)
		return TS_ERR_NOMEM;
	enum ts_status st = TS_OK;
	for (int i = 0; i < k->n_members && st == TS_OK; i++) {
		const struct ir_instr *m = k->members[i];
		bool folded = m->parent == c && cd[m->index] && m != k->instr;
		if (folded)
			continue;
		st = member_work(k->memo, m, file, w, d);
	}
	/* the inputs' shapes as the kernel holds them (NULL: as they are) */
	struct ir_shape *held = k->n_vmem ? ts_malloc((size_t)k->n_inputs *
						      sizeof *held + 1)
					  : NULL;
	const struct ir_shape **fulls =
		held ? ts_malloc((size_t)k->n_inputs * sizeof *fulls + 1) : NULL;
	if (k->n_vmem && !(held && fulls))
		st = TS_ERR_NOMEM;
	for (int i = 0; fulls && i < k->n_inputs; i++)
		fulls[i] = held_shape(k, k->inputs[i], &k->inputs[i]->shape,
				      &held[i]);
	if (st == TS_OK &&
	    !add_reads((const struct ir_instr *const *)k->inputs, fulls, NULL,
		       k->n_inputs, k->members, k->n_members, &w->bytes_read))
		st = TS_ERR_NOMEM;
	if (st == TS_OK) {
		w->constant_bytes = constant_bytes(k->members, k->n_members, cd);
		w->bytes_read += w->constant_bytes;
		for (int i = 0; i < k->n_outputs; i++) {
			struct ir_shape out;
			const struct ir_instr *v = k->outputs[i];
			w->bytes_written += written_bytes(
				v, held_shape(k, v, &v->shape, &out));
		}
	}
	ts_free(fulls);
	ts_free(held);
	ts_free(own);
	return st;
}

/*
 * A collective's payload, bytes: the buffer each device holds in full,
 * padded, whatever its memory space:
 *   all-gather(-start)   the gathered result (the async start's result
 *                        part, result_shape)
 *   megascale all-gather's send   its operand (this device's part) x
 *                        the slices: the gathered result
 *   any other            its operands, each once
 * HBM traffic is counted apart (read_bytes, written_bytes: VMEM leaves
 * none). The ICI moves the bytes wherever they live: XLA places small and
 * hot collective buffers in VMEM (S(1)) on v5e and later, and their
 * all-reduce still crosses the links. Source: hw_ici_collective's B
 * (hw/hw_mem.c), docs/HLO.md 1.6.
 */
double sim_collective_payload(const struct ir_instr *in)
{
	enum ir_op op = in->op == IR_OP_ASYNC_START ? in->wrapped_op : in->op;
	if (op == IR_OP_ALL_GATHER || op == IR_OP_ALL_GATHER_START)
		return any_space_bytes(result_shape(in));
	double b = 0;
	for (int j = 0; j < in->n_operands; j++)
		if (!sim_operand_repeats(in, j))
			b += any_space_bytes(&in->operands[j]->shape);
	/* a megascale all-gather's send holds this device's part of it */
	if (sim_megascale_slices(in) && in->attrs.megascale_op == IR_OP_ALL_GATHER)
		b *= (double)in->attrs.megascale_slices;
	return b;
}

static enum ts_status single_work(const struct sim_kernel *k, const char *file,
				  struct sim_work *w, struct ts_diag *d)
{
	const struct ir_instr *in = k->instr;
	enum ts_status st = count_instr(in, file, w, d, 0);
	if (st != TS_OK)
		return st;
	struct ir_shape held;
	for (int j = 0; j < in->n_operands; j++) {
		const struct ir_instr *v = in->operands[j];
		if (!sim_operand_repeats(in, j)) /* multiply(x, x) reads x once */
			w->bytes_read += read_bytes(
				v, held_shape(k, v, &v->shape, &held), &in, 1, 0);
	}
	/* a collective's tuple: each element held in VMEM on its own (its
	 * get-tuple-element, placement.c) written S(1) */
	const struct ir_shape *out = result_shape(in);
	struct ir_shape tuple, *el = NULL;
	for (int q = 0; out->type == IR_TYPE_TUPLE && q < k->n_vmem; q++) {
		const struct ir_instr *x = k->vmem[q];
		int64_t i = x->attrs.tuple_index;
		if (x->op != IR_OP_GET_TUPLE_ELEMENT || x->n_operands != 1 ||
		    x->operands[0] != in || i < 0 || i >= out->n_elems)
			continue;
		if (!el && !(el = ts_malloc((size_t)out->n_elems * sizeof *el)))
			return TS_ERR_NOMEM;
		if (out->elems != el)
			memcpy(el, out->elems, (size_t)out->n_elems * sizeof *el);
		tuple = *out;
		tuple.elems = el;
		out = &tuple;
		el[i].layout.memory_space = 1;
	}
	w->bytes_written = written_bytes(in, held_shape(k, in, out, &held));
	ts_free(el);
	if (k->kind == SIM_KERNEL_COLLECTIVE)
		w->ici_bytes = sim_collective_payload(in);
	return TS_OK;
}

/* The value an async transfer moves: a dynamic-update-slice's update (it
 * writes its window of the buffer in place), else its result. */
static double transferred_bytes(const struct ir_instr *in)
{
	return ir_shape_padded_bytes(in->op == IR_OP_DYNAMIC_UPDATE_SLICE &&
						     in->n_operands >= 2
					     ? &in->operands[1]->shape
					     : &in->shape);
}

double sim_dma_bytes(const struct sim_kernel *k)
{
	double hbm = k->work.bytes_read + k->work.bytes_written;
	double moved = k->instr ? transferred_bytes(k->instr) : 0.0;
	return hbm > moved ? hbm : moved;
}

double sim_dma_host_bytes(const struct sim_kernel *k)
{
	const struct ir_instr *in = k->instr;
	if (!in)
		return 0.0;
	bool host = in->shape.layout.memory_space == 5;
	for (int j = 0; j < in->n_operands; j++)
		host |= in->operands[j]->shape.layout.memory_space == 5;
	return host ? transferred_bytes(in) : 0.0;
}

enum ts_status sim_kernel_work(const struct sim_kernel *k, const bool *parent_cd,
			       const char *file, struct sim_work *w,
			       struct ts_diag *d)
{
	memset(w, 0, sizeof *w);
	if (!k->instr || k->n_members < 1 || !k->members) {
		ts_diag_set(d, file, 0, 0, "kernel without an instruction");
		return TS_ERR_MISUSE;
	}
	enum ts_status st;
	if (k->instr->op == IR_OP_FUSION)
		st = fusion_work(k, file, w, d);
	else if (k->n_members == 1 && k->members[0] == k->instr)
		st = single_work(k, file, w, d);
	else
		st = group_work(k, parent_cd, file, w, d);
	/* a fusion's collective, or a collective chain's start grouped with
	 * its clone (kernels.c emit_group) */
	const struct ir_instr *c = sim_fused_collective(k->instr);
	if (c && k->kind == SIM_KERNEL_COLLECTIVE)
		w->ici_bytes = sim_collective_payload(c);
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, file, 0, 0, "out of memory counting work");
	return st;
}
