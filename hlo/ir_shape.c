/*
 * ir_shape.c: shape arithmetic for the IR: element counts, logical and
 * TPU-padded byte sizes (tiled layouts, docs/HLO.md 1.6), physical dimension
 * order and the HLO text form of a shape. Contracts in ir.h.
 */
#include "ir.h"

#include <math.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Arrays of higher rank are costed unpadded (the parser allows 128). */
#define IR_SHAPE_MAX_RANK 128

int64_t ir_shape_elems(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE)
		return 0;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		int64_t d = s->dims[i];
		if (d <= 0)
			return 0;
		if (n > INT64_MAX / d)
			return INT64_MAX; /* saturate: no real array is this big */
		n *= d;
	}
	return n;
}

/* Element bits as stored: E(n) when the layout gives it, else the type's. */
static int stored_bits(const struct ir_shape *s)
{
	if (s->layout.element_size_bits > 0)
		return s->layout.element_size_bits;
	return ir_type_bits(s->type);
}

/* ceil(bits / 8): the whole bytes that hold `bits` bits. */
/* ceil in doubles (no integer cast: sizes past 2^63 stay sizes). */
static double whole_bytes(double bits)
{
	return ceil(bits / 8.0);
}

double ir_shape_bytes(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double b = 0;
		for (int i = 0; i < s->n_elems; i++)
			b += ir_shape_bytes(&s->elems[i]);
		return b;
	}
	return whole_bytes((double)ir_shape_elems(s) * stored_bits(s));
}

/* ---- the layout XLA TPU assigns to arrays written without tiles ---------- */

/*
 * Pre-optimization modules (what JAX lowers, docs/HLO.md) print every array
 * with the default layout {rank-1,...,0} and no tiles; the TPU compiler then
 * chooses the physical layout. This block is the one place that predicts
 * that choice, for every caller (padded bytes here, tile grids in
 * sim/tile.c, bitcast tests in sim/kernels.c):
 *
 *  - Tile (ir_shape_default_tile): rank >= 2 -> T(8,128) for every element
 *    width (v2-v6 tile 16-bit data (8,128)(2,1), docs/TPU.md rule 2; the
 *    (16,128) of TPU7x is not modelled); rank 1 -> T(t), t the next power
 *    of two >= n clamped to [256, 1024]; scalars T(256) (docs/TPU.md section
 *    3 "Layout conventions": f32[4096]{0:T(1024)}, f32[]{:T(256)}).
 *  - Order (compact_order): the dims keep their default major-to-minor order
 *    except that the lane (minor) and sublane (second-minor) dims are the
 *    pair that minimises the padded size
 *        prod(other dims) x ceil8(sublane dim) x ceil128(lane dim)
 *    ties keeping the default pair (then the more minor candidates). This
 *    is the "most compact layout" the TPU runtime gives device buffers. It
 *    is what tpuv4-ops shows: batch_norm_inference f16[64,64,32,32] runs at
 *    the speed of an array padded 2x (a 64-dim on the lanes), not 4x (the
 *    default 32-lane minor dim), and f16[64,128,32,32] at no padding at all
 *    (C=128 on the lanes); every one of the 62 batch-norm shapes matches
 *    the padding this rule predicts (1x, 4/3x or 2x). Max-pooling kernels
 *    whose result would be compacted differently from their input (e.g.
 *    f16[1,128,128,64] -> lanes on C) show an extra copy (relayout) event,
 *    those whose result keeps the default pair show none.
 * Assumes each array is laid out on its own; known wrong where XLA's layout
 * assignment propagates an operand's layout through an op instead (of the
 * relayout copies it then inserts, only the one at the program's result is
 * modelled: sim/kernels.c "Relayouts"), and the compiled modules (layouts
 * with tiles) are taken exactly as written.
 */
void ir_shape_default_tile(const struct ir_shape *s, struct ir_tile *t)
{
	memset(t, 0, sizeof *t);
	if (s->type != IR_TYPE_TUPLE && s->rank >= 2) {
		*t = (struct ir_tile){2, {8, 128}};
		return;
	}
	int64_t n = s->type != IR_TYPE_TUPLE && s->rank == 1 ? s->dims[0] : 1;
	int64_t e = 256;
	while (e < n && e < 1024)
		e *= 2;
	*t = (struct ir_tile){1, {e}};
}

static int64_t pad_up(int64_t v, int64_t m)
{
	return v <= 0 ? m : ir_round_up(v, m);
}

/* The default order with dims sm (sublane) and m (lane) moved last. */
static void order_with(int rank, int sm, int m, int *out)
{
	int o = 0;
	for (int i = 0; i < rank; i++)
		if (i != sm && i != m)
			out[o++] = i;
	out[o++] = sm;
	out[o] = m;
}

/* A dim as a size factor: unknown or empty dims (<= 0) count as 1. */
static double dim_or_1(int64_t d)
{
	return (double)(d > 0 ? d : 1);
}

static void compact_order(const struct ir_shape *s, int *out)
{
	int r = s->rank;
	if (s->memo.known & IR_MEMO_ORDER) {
		order_with(r, s->memo.sublane, s->memo.lane, out);
		return;
	}
	struct ir_shape_memo *memo = (struct ir_shape_memo *)&s->memo;
	memo->known |= IR_MEMO_ORDER;
	double total = 1;
	for (int i = 0; i < r; i++)
		total *= dim_or_1(s->dims[i]);
	int best_sm = r - 2, best_m = r - 1;
	/* The default pair needs no padding: no pair pads less, and ties keep
	 * it. (Below 2^43 elements every product here is an exact integer,
	 * even padded 1024x, so the search would find the same.) */
	if (s->dims[r - 1] > 0 && s->dims[r - 1] % 128 == 0 &&
	    s->dims[r - 2] > 0 && s->dims[r - 2] % 8 == 0 &&
	    total < 0x1p43) {
		memo->sublane = (int16_t)best_sm;
		memo->lane = (int16_t)best_m;
		order_with(r, best_sm, best_m, out);
		return;
	}
	double best = -1;
	for (int m = r - 1; m >= 0; m--) {
		for (int sm = r - 1; sm >= 0; sm--) {
			if (sm == m)
				continue;
			double padded = total / dim_or_1(s->dims[m]) /
					dim_or_1(s->dims[sm]) *
					(double)pad_up(s->dims[sm], 8) *
					(double)pad_up(s->dims[m], 128);
			bool is_default = m == r - 1 && sm == r - 2;
			if (best < 0 || padded < best ||
			    (padded == best && is_default)) {
				best = padded;
				best_sm = sm;
				best_m = m;
			}
		}
	}
	memo->sublane = (int16_t)best_sm;
	memo->lane = (int16_t)best_m;
	order_with(r, best_sm, best_m, out);
}

void ir_shape_major_to_minor(const struct ir_shape *s, int *out)
{
	if (s->type != IR_TYPE_TUPLE && s->rank >= 2 &&
	    s->layout.n_tiles == 0 && s->rank <= IR_SHAPE_MAX_RANK) {
		compact_order(s, out);
		return;
	}
	for (int i = 0; i < s->rank; i++)
		out[i] = s->layout.present && s->layout.minor_to_major
				 ? s->layout.minor_to_major[s->rank - 1 - i]
				 : i;
}

static double round_up(double v, double m)
{
	if (m <= 1)
		return v;
	double q = floor(v / m);
	return q * m < v ? (q + 1) * m : q * m;
}

/*
 * Padded TPU bytes of one array.
 *   bytes = ceil(n_tiles x padded_tile_elems [rounded up to L(n)] x bits / 8)
 * where the first tile pads the minor-most physical dims up to multiples of
 * its extents (a '*' combine dim is not padded; dims the shape lacks count as
 * 1, so a scalar fills a whole 1-D tile), and each further tile pads the
 * previous tile's own extents (T(8,128)(2,1): the (2,1) level divides 8x128
 * and adds nothing). bits = E(n), else the type width, at least 8 (sub-byte
 * data without E(n) is stored one element per byte, docs/HLO.md 1.1).
 * Arrays written without tiles get the tile and physical order XLA TPU
 * would assign (ir_shape_default_tile, ir_shape_major_to_minor above).
 * Known to be wrong for sparse layouts (D, P items are ignored).
 */
/* What the tiles after the first multiply the first tile's extents t0_ext
 * by, each padding the extents of the tile above it: 1 for T(8,128)(2,1),
 * whose (2,1) divides 8x128; 8/7 for T(7,128)(2,1). */
static double further_tiles(const struct ir_tile *tiles, int n_tiles,
			    const double *t0_ext)
{
	double prev[IR_MAX_TILE_RANK];
	int prev_rank = tiles[0].rank;
	memcpy(prev, t0_ext, sizeof(double) * (size_t)prev_rank);
	double factor = 1;
	for (int k = 1; k < n_tiles; k++) {
		const struct ir_tile *t = &tiles[k];
		double before = 1, after = 1;
		for (int j = 0; j < prev_rank; j++) {
			int tj = j - (prev_rank - t->rank);
			before *= prev[j];
			double ext = prev[j];
			if (tj >= 0 && t->dims[tj] != IR_TILE_COMBINE)
				ext = round_up(prev[j], (double)t->dims[tj]);
			after *= ext;
		}
		factor *= after / before;
		prev_rank = t->rank;
		for (int j = 0; j < prev_rank; j++)
			prev[j] = t->dims[j] == IR_TILE_COMBINE ? 1 : (double)t->dims[j];
	}
	return factor;
}

static double array_padded_bytes(const struct ir_shape *s)
{
	int bits = stored_bits(s);
	if (bits == 0)
		return 0; /* token, opaque */
	if (bits < 8)
		bits = s->layout.element_size_bits > 0 ? bits : 8;
	int rank = s->rank;
	int order[IR_SHAPE_MAX_RANK];
	if (rank > IR_SHAPE_MAX_RANK)
		return ir_shape_bytes(s);
	ir_shape_major_to_minor(s, order);
	struct ir_tile def;
	const struct ir_tile *tiles = s->layout.tiles;
	int n_tiles = s->layout.n_tiles;
	if (n_tiles == 0) {
		ir_shape_default_tile(s, &def);
		tiles = &def;
		n_tiles = 1;
	}
	/* Physical dims, padded by the first tile; extra leading 1s when the
	 * tile has more dims than the shape. */
	const struct ir_tile *t0 = &tiles[0];
	double elems = 1;
	int lead = t0->rank > rank ? t0->rank - rank : 0;
	double t0_ext[IR_MAX_TILE_RANK];
	for (int i = 0; i < rank + lead; i++) {
		double d = i < lead ? 1 : (double)s->dims[order[i - lead]];
		if (d <= 0)
			return 0;
		int ti = i - (rank + lead - t0->rank);
		if (ti >= 0) {
			int64_t t = t0->dims[ti];
			double ext = t == IR_TILE_COMBINE ? d : (double)t;
			d = round_up(d, ext);
			t0_ext[ti] = ext;
		}
		elems *= d;
	}
	elems *= further_tiles(tiles, n_tiles, t0_ext);
	if (s->layout.tail_padding > 1)
		elems = round_up(elems, (double)s->layout.tail_padding);
	return whole_bytes(elems * bits);
}

double ir_shape_further_tiles(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE || s->layout.n_tiles < 2 ||
	    s->rank > IR_SHAPE_MAX_RANK)
		return 1;
	int order[IR_SHAPE_MAX_RANK];
	ir_shape_major_to_minor(s, order);
	const struct ir_tile *t0 = &s->layout.tiles[0];
	double ext[IR_MAX_TILE_RANK];
	for (int ti = 0; ti < t0->rank; ti++) {
		int i = s->rank - t0->rank + ti; /* < 0: a leading 1 */
		ext[ti] = t0->dims[ti] != IR_TILE_COMBINE ? (double)t0->dims[ti]
			  : i >= 0 ? dim_or_1(s->dims[order[i]])
				   : 1;
	}
	return further_tiles(s->layout.tiles, s->layout.n_tiles, ext);
}

double ir_shape_padded_bytes(const struct ir_shape *s)
{
	if (s->type == IR_TYPE_TUPLE) {
		double b = 0;
		for (int i = 0; i < s->n_elems; i++)
			b += ir_shape_padded_bytes(&s->elems[i]);
		return b;
	}
	if (!(s->memo.known & IR_MEMO_PADDED)) {
		struct ir_shape_memo *memo = (struct ir_shape_memo *)&s->memo;
		memo->padded_bytes = array_padded_bytes(s);
		memo->known |= IR_MEMO_PADDED;
	}
	return s->memo.padded_bytes;
}

/* Appends printf-style text at *len, keeping count past cap. */
__attribute__((format(printf, 4, 5))) static void
put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *dst = *len < cap ? buf + *len : NULL;
	size_t room = *len < cap ? cap - *len : 0;
	int n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

static void format_shape(const struct ir_shape *s, char *buf, size_t cap,
			 size_t *len)
{
	if (s->type == IR_TYPE_TUPLE) {
		put(buf, cap, len, "(");
		for (int i = 0; i < s->n_elems; i++) {
			if (i)
				put(buf, cap, len, ", ");
			format_shape(&s->elems[i], buf, cap, len);
		}
		put(buf, cap, len, ")");
		return;
	}
	put(buf, cap, len, "%s[", ir_type_name(s->type));
	for (int i = 0; i < s->rank; i++) {
		uint8_t k = s->dim_kind ? s->dim_kind[i] : IR_DIM_STATIC;
		const char *sep = i ? "," : "";
		if (k == IR_DIM_UNBOUNDED)
			put(buf, cap, len, "%s?", sep);
		else
			put(buf, cap, len, "%s%s%lld", sep,
			    k == IR_DIM_BOUNDED ? "<=" : "", (long long)s->dims[i]);
	}
	put(buf, cap, len, "]");
	const struct ir_layout *l = &s->layout;
	if (!l->present && !(s->rank == 0 && l->memory_space))
		return; /* a scalar in a memory space: "f32[]{:S(1)}" */
	put(buf, cap, len, "{");
	for (int i = 0; i < s->rank && l->minor_to_major; i++)
		put(buf, cap, len, "%s%d", i ? "," : "", l->minor_to_major[i]);
	if (l->n_tiles || l->tail_padding || l->element_size_bits ||
	    l->memory_space) {
		put(buf, cap, len, ":");
		if (l->n_tiles)
			put(buf, cap, len, "T");
		for (int t = 0; t < l->n_tiles; t++) {
			put(buf, cap, len, "(");
			for (int j = 0; j < l->tiles[t].rank; j++) {
				int64_t d = l->tiles[t].dims[j];
				const char *sep = j ? "," : "";
				if (d == IR_TILE_COMBINE)
					put(buf, cap, len, "%s*", sep);
				else
					put(buf, cap, len, "%s%lld", sep, (long long)d);
			}
			put(buf, cap, len, ")");
		}
		if (l->tail_padding)
			put(buf, cap, len, "L(%lld)", (long long)l->tail_padding);
		if (l->element_size_bits)
			put(buf, cap, len, "E(%d)", l->element_size_bits);
		if (l->memory_space)
			put(buf, cap, len, "S(%d)", l->memory_space);
	}
	put(buf, cap, len, "}");
}

/* Returns the length of the full text (as snprintf does); the text is cut
 * to cap - 1 bytes and always NUL-terminated when cap > 0. */
size_t ir_shape_format(const struct ir_shape *s, char *buf, size_t cap)
{
	size_t len = 0;
	if (cap)
		buf[0] = '\0';
	format_shape(s, buf, cap, &len);
	return len;
}

static bool same_shape(const struct ir_shape *a, const struct ir_shape *b,
		       bool types)
{
	if ((a->type == IR_TYPE_TUPLE) != (b->type == IR_TYPE_TUPLE))
		return false;
	if (a->type == IR_TYPE_TUPLE) {
		if (a->n_elems != b->n_elems)
			return false;
		for (int i = 0; i < a->n_elems; i++)
			if (!same_shape(&a->elems[i], &b->elems[i], types))
				return false;
		return true;
	}
	if (a->rank != b->rank || (types && a->type != b->type))
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

bool ir_shape_equal_dims(const struct ir_shape *a, const struct ir_shape *b)
{
	return same_shape(a, b, false);
}

bool ir_shape_compatible(const struct ir_shape *a, const struct ir_shape *b)
{
	return same_shape(a, b, true);
}
