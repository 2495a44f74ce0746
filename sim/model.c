/*
 * model.c: the cycle-approximate analytic model of one TensorCore running
 * one kernel under one tile config. sim_plan_build() (plan.c) works out,
 * once per kernel, the combined tile grid and how every input, result, MXU
 * and VPU follow it; sim_plan_estimate() (here) costs a config from that
 * in closed form (no step-by-step loop), so tile search can cost millions
 * of configs. sim_kernel_estimate() (config.c) wraps the two; sim/explain.c
 * prints them.
 * Units: ns, core cycles (hw->clock_hz), bytes padded to layout tiles.
 * Governing notes: docs/ARCHITECTURE.md "Kernels, tiles and the analytic
 * model", docs/TPU.md sections 2 and 3; unit formulas in hw/hw_*.c (the DMA
 * stream time inline in hw/hw_units.h).
 */
#include "model.h"

#include <math.h>
#include <string.h>

#include "hw_units.h"

/* fmax(a, b) as glibc's x86-64 fmax gives it (maxsd: b when the two
 * compare equal, the other when one is a NaN), inline: the tile search
 * takes millions of maxima, and fmax is a library call. */
static inline double max2(double a, double b)
{
	if (a != a)
		return b;
	if (b != b)
		return a;
	return a > b ? a : b;
}

/* The TensorCores a kernel runs on (2 for a megacore split of a large
 * enough output space, hw_spec_kernel_cores), and a collective's ICI cost
 * (sim_collective_ici): both read at estimate time from what the plan
 * keeps, so the chip.*, ici.* and dcn.* fields and the slice are
 * plan-free (config.c). */
int sim_plan_cores(const struct sim_plan *p, const struct hw_spec *hw)
{
	return p->core_space > 0 ? hw_spec_kernel_cores(hw, p->core_space) : 1;
}

void sim_plan_ici(const struct sim_plan *p, const struct hw_spec *hw,
		  struct hw_ici_cost *out)
{
	sim_collective_cost(hw, p->coll, p->coll_bytes, p->coll_devices,
			    p->coll_bits, p->coll_groups, p->coll_dcn, out,
			    NULL);
}

/* ====================================================================== */
/* Estimating one config                                                   */
/* ====================================================================== */

/* The bound cfg gives combined dim i (its output or kernel grid dim's;
 * 0: not chosen). */
static int64_t config_bound(const struct sim_plan *p,
			    const struct sim_tile_config *cfg, int i)
{
	int src = p->dims[i].src;
	return src < p->out.rank ? cfg->out_bounds[src]
				 : cfg->kernel_bounds[src - p->out.rank];
}

static void dim_blocks(const struct sim_plan_dim *dm, int64_t bound,
		       struct sim_blocks *b)
{
	b->bound = bound;
	b->nb = ir_ceil_div(dm->tiles, bound);
	int64_t full = ir_mul_sat(bound, dm->tile);
	if (full > dm->elems)
		full = dm->elems;
	b->full = full;
	int64_t rest = dm->elems - ir_mul_sat(b->nb - 1, full);
	if (rest == full || b->nb == 1) {
		b->n_full = b->nb;
		b->last = full;
		b->n_last = 0;
		if (b->nb == 1)
			b->full = dm->elems < full ? dm->elems : full;
	} else {
		b->n_full = b->nb - 1;
		b->last = rest > 0 ? rest : 1;
		b->n_last = 1;
	}
}

static int64_t pad_to(int64_t e, int64_t t)
{
	return t > 1 ? ir_round_up(e, t) : e;
}

/* Elements of an access dim in a block: grid block a, window block w. */
static inline int64_t adim_extent(const struct sim_plan_adim *ad, int64_t a,
				   int64_t w)
{
	if (ad->win < 0 && ad->scale == 1.0)
		return a < ad->elems ? a : ad->elems;
	double e;
	if (ad->win >= 0) {
		/* convolution input: (out - 1) x stride + (taps - 1) x
		 * dilation + 1, over the base dilation */
		e = (double)(a - 1) * ad->scale + (double)(w - 1) * ad->dilation + 1;
		if (ad->lhs_dilate > 1)
			e = ceil(e / (double)ad->lhs_dilate);
	} else {
		e = ceil((double)a * ad->scale);
	}
	if (e > (double)ad->elems)
		e = (double)ad->elems;
	if (e < 1)
		e = 1;
	return (int64_t)e;
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Blocks that straddle the access's tiles. When a grid dim's blocks are
 * not a whole number of the access's own tiles along the dim it follows
 * (a copy whose major dim becomes the sublane dim of the other layout:
 * blocks of 7 rows over 8-row tiles), block k covers elements [k f, k f +
 * f) and moves every tile it touches:
 *   tiles(k) = floor((k f + f - 1) / t) - floor(k f / t) + 1
 * Summed over the n full blocks (closed form, g = gcd(f, t)):
 *   n + floor(n f / t) - floor(n g / t)
 * the ragged last block starts at n f; the buffer holds the largest block,
 * floor((f - 1 + t - g) / t) + 1 tiles. Replaces the sum of padded extents
 * (*s), the first (largest) and last block extents (elements) of an
 * unwindowed, unscaled dim. Assumes blocks start at multiples of f from the
 * array's origin. Source: TPU.md section 2 rule 3 (aligned (8,128)
 * transfers; anything else moves whole tiles).
 */
static void straddle(const struct sim_plan_adim *ad, const struct sim_blocks *g,
		     double *s, double *e_first, double *e_last)
{
	int64_t t = ad->tile, f = g->full;
	if (t <= 1 || f <= 0 || f % t == 0 || g->nb <= 1)
		return;
	int64_t n = g->n_full, gg = gcd64(f, t);
	double tiles = (double)n + (double)(ir_mul_sat(n, f) / t) -
		       (double)(ir_mul_sat(n, gg) / t);
	double last_tiles = 0;
	if (g->n_last) {
		int64_t st = ir_mul_sat(n, f), e = g->last;
		if (st > ad->elems - e)
			e = ad->elems - st;
		last_tiles = e > 0 ? (double)((st + e - 1) / t - st / t + 1) : 0.0;
	}
	double big = (double)((f - 1 + t - gg) / t + 1);
	*s = (tiles + last_tiles) * (double)t;
	*e_first = big * (double)t;
	*e_last = (g->n_last ? last_tiles : big) * (double)t;
}

/*
 * Bytes an access moves. For the set D of grid dims it follows, steps run
 * lexicographically, so its block changes F = prod_{d <= j} nb(d) times
 * (j = innermost dim of D with more than one block); it is fetched again
 * for each block of an outer dim it does not follow: R = prod_{d <= j, d
 * not in D} nb(d). Total = R x prod over its dims of the sum over blocks of
 * the padded block extent (block extents along different dims multiply, so
 * the sum over all blocks factorises). Padded: each block extent rounds up
 * to the operand's own tile (a block of 5 rows of a T(8,128) array moves 8
 * rows), and a block not aligned to those tiles moves every tile it
 * touches (straddle()). Also counts the contiguous runs moved (below).
 * Assumes each access dim follows a distinct grid dim.
 */
static void access_cost(const struct sim_plan_access *a,
			const struct sim_blocks *bl, int n_dims,
			struct sim_acc_cost *c)
{
	int j = -1;
	for (int dd = 0; dd < n_dims; dd++)
		if ((a->follows >> dd & 1) && bl[dd].nb > 1)
			j = dd;
	double f = 1, r = 1;
	for (int dd = 0; dd <= j; dd++) {
		f *= (double)bl[dd].nb;
		if (!(a->follows >> dd & 1))
			r *= (double)bl[dd].nb;
	}
	double sum = a->pad_factor * a->elem_bytes;
	double first = sum, last = sum;
	/* per dim: blocks along it, and tiles summed over them / in the
	 * first / in the last block (for the chunk count below) */
	double nblk[SIM_MAX_GRID], t_sum[SIM_MAX_GRID], t_first[SIM_MAX_GRID],
		t_last[SIM_MAX_GRID];
	int stop = -1; /* minor-most dim a block covers only in part */
	for (int i = 0; i < a->rank; i++) {
		const struct sim_plan_adim *ad = &a->dims[i];
		double tl = ad->tile > 1 ? (double)ad->tile : 1.0;
		double whole = (double)pad_to(ad->elems, ad->tile);
		if (ad->grid < 0) {
			double e = whole;
			sum *= e;
			first *= e;
			last *= e;
			nblk[i] = 1;
			t_sum[i] = t_first[i] = t_last[i] = e / tl;
			continue;
		}
		const struct sim_blocks *g = &bl[ad->grid];
		const struct sim_blocks *w = ad->win >= 0 ? &bl[ad->win] : NULL;
		int64_t wv[2] = {1, 1}, wn[2] = {1, 0};
		if (w) {
			wv[0] = w->full;
			wn[0] = w->n_full;
			wv[1] = w->last;
			wn[1] = w->n_last;
		}
		int64_t gv[2] = {g->full, g->last}, gn[2] = {g->n_full, g->n_last};
		double e00 = (double)pad_to(adim_extent(ad, gv[0], wv[0]), ad->tile);
		double s = (double)gn[0] * (double)wn[0] * e00, e_last = e00;
		for (int x = 0; x < 2; x++)
			for (int y = 0; y < 2; y++) {
				if ((x == 0 && y == 0) || gn[x] == 0 || wn[y] == 0)
					continue;
				double e = (double)pad_to(adim_extent(ad, gv[x], wv[y]),
							  ad->tile);
				s += (double)gn[x] * (double)wn[y] * e;
				if (x == (gn[1] > 0) && y == (wn[1] > 0))
					e_last = e;
			}
		if (!w && ad->scale == 1.0)
			straddle(ad, g, &s, &e00, &e_last);
		sum *= s;
		first *= e00;
		last *= e_last;
		nblk[i] = (double)(gn[0] + gn[1]) * (double)(wn[0] + wn[1]);
		t_sum[i] = s / tl;
		t_first[i] = e00 / tl;
		t_last[i] = e_last / tl;
		/* split when a block covers less than the dim (a straddling
		 * block's largest extent may reach the whole dim) */
		if (e00 < whole || (!w && g->nb > 1))
			stop = i;
	}
	/*
	 * Contiguous runs (DMA chunks). In HBM the array is its tile grid in
	 * physical order, major to minor, each layout tile contiguous; a block
	 * is one run along its minor dims up to and including the minor-most
	 * dim it covers only in part (stop), and one run per index of every
	 * dim more major than that:
	 *   runs(block) = prod_{i < stop} tiles_i(block)
	 * Summed over blocks (extents along dims multiply, as for the bytes):
	 *   runs = R x prod_{i < stop} sum_blocks tiles_i x prod_{i >= stop}
	 *          blocks_i
	 * A block covering every dim is one run. Assumes blocks start on tile
	 * boundaries (a block of 7 rows that straddles two 8-row tiles is
	 * counted as one tile); the real descriptor may also merge runs that
	 * happen to abut in both HBM and VMEM.
	 */
	double runs = 1, runs_first = 1, runs_last = 1;
	for (int i = 0; i < a->rank; i++) {
		if (i < stop) {
			runs *= t_sum[i];
			runs_first *= t_first[i];
			runs_last *= t_last[i];
		} else {
			runs *= nblk[i];
		}
	}
	c->total = sum * r;
	c->transfers = f;
	c->block = first;
	c->last = last;
	c->refetch = r;
	c->reread = a->output && r > 1 ? c->total - sum : 0.0;
	c->chunks = runs * r;
	c->block_chunks = runs_first;
	c->last_chunks = runs_last;
	c->reread_chunks = a->output && r > 1 ? c->chunks - runs : 0.0;
}

/*
 * MXU cycles of the whole kernel: steps x (hw_mxu_fill_cycles +
 * hw_mxu_stream_cycles(tiles, rows)),
 * where a step's weight tiles are
 *   batch x taps x ceil(K / R) x ceil(N / C)   (per feature group, or the
 *                                              groups' filters expanded
 *                                              into one dense filter,
 *                                              whichever is cheaper)
 * or, for a convolution whose window is larger than its output (a weight
 * gradient: the window spans the input's spatial extent, the output is the
 * kernel), with the taps folded into the contraction when K < R:
 *   batch x ceil(taps / floor(R / K)) x ceil(N / C)
 * XLA's TPU emitter contracts such a convolution over batch x window as
 * one long matmul (the contraction is batch x spatial), so the array sees
 * a deep K, not thousands of K-deep taps each padded to R rows.
 * and its rows are the product of the M-dim block extents (batch, spatial
 * or lhs free dims). In a matmul (no window) either operand may be the
 * stationary one: the compiler keeps the cheaper orientation (rows <->
 * columns swapped), which matters with few rows (weight-load bound); a
 * windowed convolution streams its input and keeps the kernel stationary. A ragged last
 * block costs a full block: the compiler emits one loop body for the block
 * shape and masks the invalid part (TpuGraphs fusion.191: a 2-of-3 tap or
 * 256-of-384 feature split costs 4/3 each, within 5%). Assumes the MXU
 * result buffers accumulate within a step; across steps of a split
 * contraction the f32 accumulator is re-added on the VPU (counted
 * separately).
 */
/* One step's streaming cycles for grp groups of K x N weights over rows:
 * weight tiles along the contraction per tap, or taps folded into the
 * contraction (mxu_fold_taps: floor(R / K) taps share a tile), in the
 * cheaper orientation unless windowed (mxu_total_cycles). An int8 x int8
 * contraction streams its rows mxu.int8_rate times as fast (rows / rate
 * per pass: each cell does rate int8 MACs a cycle, its published int8
 * peak; the weight loads take as long). */
static double mxu_step_cycles(const struct sim_plan *p, const struct hw_spec *hw,
			      double rows, double kv, double nv, double taps,
			      double grp)
{
	double rr = hw->mxu_rows, cc = hw->mxu_cols;
	double rate = sim_mxu_rate(p->mxu_int8, hw);
	double kt = taps * ceil(kv / rr);
	if (p->mxu_fold_taps && kv < rr)
		kt = ceil(taps / floor(rr / kv));
	double t1 = grp * kt * ceil(nv / cc);
	double t2 = grp * kt * ceil(rows / cc);
	double c1 = hw_mxu_stream_cycles(hw, (int64_t)t1,
					 (int64_t)ceil(rows / rate), p->mxu_passes);
	double c2 = hw_mxu_stream_cycles(hw, (int64_t)t2,
					 (int64_t)ceil(nv / rate), p->mxu_passes);
	return p->mxu_windowed ? c1 : fmin(c1, c2);
}

/*
 * MXU cycles of the contractions the grid does not tile (sim_plan's
 * mxu_untiled: a nested fusion's dot, a second dot beside the tiled op):
 *   cycles = sum_c [ fill + macs_c x passes_c x pad(K_c, R) / K_c
 *                    x pad(N_c, C) / N_c / (mxu_count x R x C x k x rate_c) ]
 * pad(x, R) = ceil(x / R) x R: a weight tile's depth and width padded to
 * the R x C array; fill = hw_mxu_fill_cycles (the first weight load and
 * the array's skew, once per contraction); k = macs_per_cell_cycle;
 * rate_c = mxu.int8_rate for an int8 x int8 contraction, else 1.
 * Assumes each weight tile streams enough rows (>= R) to hide the next
 * tile's load, so the array runs at its padded peak, and that the
 * contraction's operands are already in VMEM (the grid tiles another op:
 * nothing plans their DMA). Known wrong: a contraction of few rows per
 * weight tile is bound by weight loads instead; a grouped convolution's
 * per-group tiles are not padded. Source: hw/hw_mxu.c (the stream
 * formula at T >= R), TPU.md section 2 rule 1.
 */
static double untiled_mxu_cycles(const struct sim_plan *p,
				 const struct hw_spec *hw)
{
	double rr = hw->mxu_rows, cc = hw->mxu_cols;
	double peak = hw_mxu_peak_macs_per_cycle(hw);
	if (!(rr > 0) || !(cc > 0) || !(peak > 0))
		return 0.0;
	double cyc = 0;
	for (int i = 0; i < p->n_mxu_untiled; i++) {
		const struct sim_plan_mxu_op *c = &p->mxu_untiled[i];
		double kk = (double)c->k, nn = (double)c->n;
		double pad = ceil(kk / rr) * rr / kk * (ceil(nn / cc) * cc / nn);
		cyc += hw_mxu_fill_cycles(hw) +
		       c->macs * (c->passes > 0 ? c->passes : 1) * pad /
			       (peak * sim_mxu_rate(c->int8, hw));
	}
	return cyc;
}

static double mxu_total_cycles(const struct sim_plan *p,
			       const struct hw_spec *hw, const struct sim_blocks *bl,
			       int64_t steps)
{
	double rows = 1, kv = 1, nv = 1, taps = 1, batch = 1;
	for (int i = 0; i < p->n_dims; i++) {
		double e = (double)bl[i].full;
		switch (p->dims[i].role) {
		case SIM_ROLE_M:
			rows *= e;
			break;
		case SIM_ROLE_K:
			kv *= e;
			break;
		case SIM_ROLE_N:
			nv *= e;
			break;
		case SIM_ROLE_BATCH:
			batch *= e;
			break;
		case SIM_ROLE_TAP:
			taps *= e;
			break;
		default:
			break;
		}
	}
	/* lhs dilation leaves a fraction of the taps (tap_density), at
	 * least one; each batch element of the block runs them all (the
	 * density thinned the batch too, and a block of 3 batch elements
	 * ran as few weight tiles as one: a fuzzer find, below its
	 * roofline) */
	taps = batch * max2(1.0, taps * p->tap_density);
	double g = (double)p->mxu_groups, c;
	if (g <= 1) {
		c = mxu_step_cycles(p, hw, rows, kv, nv, taps, 1.0);
	} else {
		/* K is the group's input features (the kernel's input-feature
		 * dim); the block's N spans grp groups, each taking its own
		 * weight tiles. Or the filter is expanded to a dense
		 * block-diagonal one over those groups (XLA's
		 * convolution_group_converter: a mask zeroes the other
		 * groups' weights), K x grp deep: the cheaper lowering. A
		 * depthwise 3x3 over 256 channels runs 36 dense weight tiles
		 * instead of 256 per-group tiles (its 9 taps folded into one
		 * 1-deep contraction each, mxu_fold_taps). */
		double grp = max2(1.0, fmin(g, nv * g /
						  max2(1.0, (double)p->mxu_cout)));
		c = fmin(mxu_step_cycles(p, hw, rows, kv * grp, nv, taps, 1.0),
			 mxu_step_cycles(p, hw, rows, kv, max2(1.0, nv / grp),
					 taps, grp));
	}
	/* every step drains the array: its results leave for VMEM (the
	 * accumulator or the epilogue) before the next step's weights load */
	return (double)steps * (hw_mxu_fill_cycles(hw) + c);
}

/* DMA work of one phase (the first loads, the steps, the last stores):
 * every operand's transfers form one stream; the streams run concurrently
 * (dma_ns). */
struct dma_part {
	double bytes; /* bytes of all streams */
	double worst; /* ns of the slowest stream alone (hw_mem_stream_ns) */
};

/* bw: hw_mem_bytes_per_ns(hw), once per estimate. */
static void dma_add(struct dma_part *d, const struct hw_spec *hw, double bw,
		    double bytes, double runs)
{
	if (bytes <= 0)
		return;
	d->bytes += bytes;
	d->worst = max2(d->worst, hw_mem_stream_ns(hw, bw, bytes, runs));
}

/*
 * ns = max(bytes / (bytes per ns), slowest stream)
 * The operands' DMAs are issued together and served concurrently: they
 * share the HBM bandwidth, and each pays the per-run cost of its own
 * descriptors, which overlaps the other streams' transfers. Assumes enough
 * DMA engines or queue depth to keep every stream in flight. Known wrong:
 * streams that contend for the same HBM channels serialise more. Source:
 * TpuGraphs fusion.245 (f32 input plus a 16-bit mask input): narrow blocks
 * cost about the bytes at the sustained rate, not bytes plus every run of
 * both inputs.
 */
static double dma_ns(double bw, const struct dma_part *d)
{
	return max2(bw > 0 ? d->bytes / bw : 0.0, d->worst);
}

/* Cost forms (sim_plan_access.form) whose access_cost an estimate keeps
 * for the accesses of the same form after the first. */
#define FORM_CACHE 16

/* VMEM an access's block takes among the kernel's buffers (bytes): its
 * buffers (two when double-buffered) x (1 + its staging copy); none for a
 * value memory-space assignment keeps in VMEM (read in place, outside the
 * kernel's scoped limit). */
static double buffer_bytes(const struct sim_plan_access *ac, double block,
			   bool twice)
{
	return ac->in_vmem ? 0.0
			   : (twice ? 2.0 : 1.0) * block * (1.0 + ac->stage_ratio);
}

/*
 * The kernel time (ns) under one config:
 *
 *   T = kernel_ns (+ program_ns on the program's     launch, per kernel
 *       first kernel: sim_program_start_ns)
 *     + max( latency + DMA(first loads)             first load, unhidden
 *            + (S - 1) x ( max(compute, dma) + step_ns )  pipelined steps
 *            + compute + step_ns                    last step, unhidden
 *            + latency + DMA(last stores),          last store, unhidden
 *            DMA(every byte moved) )                HBM busy throughout
 *
 * The second term is a floor: HBM moves the kernel's bytes no faster than
 * its bandwidth whatever the steps' shapes; the pipeline's per-step
 * average falls below it when the blocks are uneven (megacore cores each
 * storing their own last block, a ragged block beside a large one).
 *   S        = prod ceil(grid / bound) over the combined grid
 *   compute  = max(MXU + re-adds, VPU) cycles per step / clock / cores
 *              (the VPU feeds the MXU in the same VLIW bundles, so they
 *              overlap; cores = sim_plan_cores, 2 for a megacore kernel split
 *              across both TensorCores; re-adds: a split contraction's
 *              partial sums, one op per result vreg per extra step, which
 *              hold up the MXU), where VPU =
 *              fused element ops + MXU result drain (one op per f32
 *              result vreg per step, one more per extra contraction step)
 *              + operand prologues x their refetches + f16 conversions
 *              (every step converts the f16 blocks it reads or writes:
 *              steps x block, at least one pass) + rows x row_cycles
 *              (rows: iterations of the loop over each block's major,
 *              untiled dims)
 *   dma      = latency (when steps load) + DMA(bytes moved - first loads -
 *              last stores) / (S - 1): the next step's loads and the
 *              previous step's stores, double-buffered behind this
 *              step's compute
 *   DMA(set) = dma_ns(): max(bytes / bw, slowest operand stream), a
 *              stream taking hw_mem_stream_ns(its bytes, its contiguous
 *              runs) = bytes / bw + runs x dma_chunk_ns
 *   bytes    = access_cost() per input and output (refetches, halos,
 *              padding to tiles, blocks straddling tiles, partial sums
 *              read back), and its runs (a block narrow in the minor dims
 *              is many runs)
 *   VMEM     = sum over accesses of 2 x block (1 x when fetched once),
 *              times 3 for a 16-bit windowed-convolution operand (its
 *              unpacked 32-bit staging copy), + an f32 accumulator block
 *              for a split contraction; an operand memory-space
 *              assignment keeps in VMEM is read in place, outside it.
 *              More than the scoped limit (hw_mem_fits_vmem) is
 *              infeasible (TpuGraphs fusion.191: the two configs that
 *              failed to compile need 17.7 and 19.3 MiB, the largest that
 *              ran 14.9 MiB, on v3's 16 MiB).
 *
 * Averages over steps stand for each step (ragged blocks and steps that
 * fetch nothing are averaged in). Known wrong: steps whose compute and DMA
 * alternate in size (a contraction split whose epilogue lands on the last
 * step) are underestimated; the per-run cost is one constant whatever the
 * run's length and direction (TpuGraphs copies suggest 2 KiB runs cost
 * more than 4 KiB ones, the reduce kernels hide it behind VPU work); loop
 * kernels whose blocks span many outer rows with a partial lane dim
 * (TpuGraphs fusion.232 13x2x4x1, 26x6x4x1, fusion.245 12x6x2x1) and the
 * one-lane-tile matmul block of fusion.261 (32x1) run 1.2-1.8x slower than
 * predicted, as if their DMA and compute did not overlap, for a reason
 * the model does not capture. Constants: hwspecs/<gen>.yaml
 * (overhead.kernel_ns, overhead.step_ns, overhead.row_cycles,
 * hbm.dma_latency_ns, hbm.dma_chunk_ns, hbm.efficiency, vpu.*), with their
 * derivations there. Source of the structure: TPU.md section 2 rules 3-5
 * and section 3 "What the runtimes say" (fewest steps is not fastest:
 * the first load and the last step are not hidden).
 */
static void estimate(const struct sim_plan *p, const struct hw_spec *hw,
		     const struct sim_tile_config *full,
		     struct sim_estimate *out, struct sim_est_detail *dt)
{
	struct sim_est_detail local;
	struct sim_est_detail *x = dt ? dt : &local;
	memset(out, 0, sizeof *out);
	out->feasible = true;
	out->cores = 1;
	out->modelled = p->kind != SIM_PLAN_UNMODELLED;
	out->config = *full;
	double clock_ghz = hw->clock_hz * 1e-9;
	double bw = hw_mem_bytes_per_ns(hw); /* bytes per ns */
	switch (p->kind) {
	case SIM_PLAN_UNMODELLED:
	case SIM_PLAN_FREE:
		out->bound = HW_UNIT_NONE;
		return;
	case SIM_PLAN_DECLARED: {
		/*
		 * A Pallas kernel (a tpu_custom_call whose backend config
		 * declares its cost, jax's pl.CostEstimate), ns:
		 *   time = kernel_overhead_ns + max(2 mxu_macs / peak,
		 *          hw_vpu_op_cycles(vregs(T), transcendental) / cores
		 *          / clock, (read + written) / HBM bytes per ns)
		 * mxu_macs = F / 2 and T the declared FLOPs and
		 * transcendentals (cost.c), at the bf16 peak and at the
		 * spec's cost of a transcendental op (vpu.cost.transcendental,
		 * as a fused exp costs); read and written the padded bytes of
		 * its operands and results at the sustained HBM rate. Units:
		 * FLOPs, element ops, bytes, ns. Assumes the MXU, the VPU and
		 * the DMAs overlap fully, as a pipelined kernel's do: tpusim
		 * cannot read the kernel (a Mosaic module, serialised), only
		 * its author's totals. Known wrong both ways: optimistic by
		 * the kernel's pipeline fill, tiles, padding and the VALU work
		 * it does not declare (flash attention's running max and sums
		 * beside its exp); pessimistic where the totals overstate the
		 * work (splash attention declares the FLOPs of every block its
		 * mask does not skip whole, partial blocks counted in full).
		 * Source: jax/_src/pallas/core.py CostEstimate, written into
		 * the tpu_custom_call's backend config by
		 * jax/_src/tpu_custom_call.py; tokamax's splash attention
		 * kernels set it (splash_attention_kernel.py).
		 */
		const struct sim_work *w = &p->k->work;
		int cores = hw_spec_cores(hw);
		double t_mxu = 2.0 * w->mxu_macs / hw_spec_peak_flops(hw) * 1e9;
		double vpu = hw_vpu_op_cycles(
				     hw,
				     hw_vpu_vregs(hw,
						  w->vpu_elem_ops[HW_VPU_TRANSCEND],
						  32),
				     HW_VPU_TRANSCEND) /
			     (cores > 0 ? cores : 1);
		double t_vpu = vpu / clock_ghz;
		double rw = w->bytes_read + w->bytes_written;
		double t_hbm = rw / bw;
		double t = max2(t_mxu, max2(t_vpu, t_hbm));
		out->bound = t == t_mxu ? HW_UNIT_MXU
			     : t == t_vpu ? HW_UNIT_VPU
					  : HW_UNIT_HBM;
		out->time_ns = hw->kernel_overhead_ns + t;
		out->flops = w->flops;
		out->bytes_read = w->bytes_read;
		out->bytes_written = w->bytes_written;
		out->mxu_cycles = t_mxu * clock_ghz;
		out->vpu_cycles = vpu;
		out->dma_cycles = t_hbm * clock_ghz;
		out->overhead_ns = hw->kernel_overhead_ns;
		out->mxu_util = hw_mxu_utilisation(hw, w->mxu_macs, 1, cores,
						   out->time_ns);
		return;
	}
	case SIM_PLAN_DMA: {
		/*
		 * An async transfer (copy-start, slice-start, ...), ns:
		 *   time = dma_latency_ns + max(moved / (HBM bytes per ns),
		 *                               hw_mem_pcie_ns(host))
		 * moved = other_bytes: the HBM bytes it reads and writes
		 * (cost.c: a VMEM end moves none), at least the transferred
		 * result once; host = host_bytes: the transferred value when
		 * one end is host memory (S(5): host offload), which crosses
		 * PCIe (sim_dma_host_bytes). Assumes one descriptor the DMA engines run
		 * while the TensorCore goes on (no kernel launch, no VPU
		 * work: nothing runs on the core), at the sustained HBM rate
		 * also between on-chip spaces; what runs between its start
		 * and done hides it (program.c). Known wrong: a strided
		 * slice's many runs (hw_mem_stream_ns) are not counted; it
		 * shares HBM with the kernels it overlaps (not modelled).
		 * Source: hw/hw_mem.c hw_mem_dma_ns, TPU.md section 2 rule 3.
		 */
		double ns = hw_mem_dma_ns(hw, p->other_bytes, 1),
		       pcie = hw->dma_latency_ns + hw_mem_pcie_ns(hw, p->host_bytes);
		/* the DMA engines' unit, whichever link limits them (the
		 * units are the chip's; the GNN's features have one column
		 * each) */
		out->bound = HW_UNIT_HBM;
		ns = pcie > ns ? pcie : ns;
		out->time_ns = ns;
		out->bytes_read = p->k ? p->k->work.bytes_read : 0.0;
		out->bytes_written = p->k ? p->k->work.bytes_written : 0.0;
		out->dma_cycles = ns * clock_ghz;
		return;
	}
	case SIM_PLAN_COLLECTIVE: {
		struct hw_ici_cost ici;
		sim_plan_ici(p, hw, &ici);
		double dma = hw_mem_dma_ns(hw, p->other_bytes, 2);
		out->time_ns = hw->kernel_overhead_ns + max2(ici.ns, dma);
		out->bound = ici.ns >= dma ? HW_UNIT_ICI : HW_UNIT_HBM;
		out->bytes_read = p->other_bytes / 2;
		out->bytes_written = p->other_bytes / 2;
		out->dma_cycles = dma * clock_ghz;
		out->overhead_ns = hw->kernel_overhead_ns;
		return;
	}
	default:
		break;
	}

	/* blocks per combined dim */
	for (int i = 0; i < p->n_dims; i++) {
		int64_t b = config_bound(p, full, i);
		dim_blocks(&p->dims[i], b > 0 ? b : 1, &x->bl[i]);
	}
	int64_t steps = 1, out_steps = 1;
	for (int i = 0; i < p->n_dims; i++) {
		steps *= x->bl[i].nb;
		if (p->dims[i].src < p->out.rank)
			out_steps *= x->bl[i].nb;
	}
	x->steps = steps;
	x->out_steps = out_steps;

	/* memory */
	double rd = p->other_bytes, wr = 0, first = p->other_bytes, last = 0;
	double transfers = p->other_bytes > 0 ? 1 : 0, vmem = 2 * p->other_bytes;
	double runs = transfers; /* contiguous runs (DMA chunks) in all */
	/* the DMA streams of the first loads, the last stores and the
	 * steps between them (dma_add) */
	struct dma_part d_first = {first,
				   hw_mem_stream_ns(hw, bw, first, transfers)};
	struct dma_part d_last = {0, 0}, d_mid = {0, 0}, d_all = d_first;
	double prologue = 0;
	struct sim_acc_cost form_cost[FORM_CACHE];
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		struct sim_acc_cost one;
		struct sim_acc_cost *c = dt ? &dt->ac[a] : &one;
		/* an access of an earlier one's form costs what it did */
#ifndef NDEBUG
		TS_ASSERT(ac->form_first || ac->form < a);
#endif
		if (!ac->form_first && ac->form < FORM_CACHE) {
			*c = form_cost[ac->form];
		} else {
			access_cost(ac, x->bl, p->n_dims, c);
			if (ac->form < FORM_CACHE)
				form_cost[ac->form] = *c;
		}
		/* an f16 block is converted each step it is read from VMEM
		 * (into vregs, or pushed into the MXU): steps x block, at
		 * least once per pass over the array */
		prologue += ac->prologue_cycles * c->refetch +
			    ac->convert_cycles *
				    max2(c->refetch, (double)steps * c->block /
							     max2(ac->bytes, 1.0));
		/* double-buffered, unless fetched once (nothing to overlap);
		 * an unpacked MXU operand keeps its staging copy per buffer */
		vmem += buffer_bytes(ac, c->block, c->transfers > 1);
		if (ac->in_vmem)
			continue; /* memory-space assignment's, read in place */
		transfers += c->transfers + (c->reread > 0 ? c->transfers : 0);
		double moved = c->total + c->reread;
		double moved_runs = c->chunks + c->reread_chunks;
		runs += moved_runs;
		dma_add(&d_all, hw, bw, moved, moved_runs);
		if (ac->output) {
			wr += c->total;
			rd += c->reread;
			last += c->last;
			dma_add(&d_last, hw, bw, c->last, c->last_chunks);
			dma_add(&d_mid, hw, bw, moved - c->last,
				moved_runs - c->last_chunks);
		} else {
			rd += c->total;
			first += c->block;
			dma_add(&d_first, hw, bw, c->block, c->block_chunks);
			dma_add(&d_mid, hw, bw, moved - c->block,
				moved_runs - c->block_chunks);
		}
	}
	/* compute */
	double untiled = untiled_mxu_cycles(p, hw);
	double mxu = (p->has_kernel ? mxu_total_cycles(p, hw, x->bl, steps)
				    : 0.0) +
		     untiled;
	double acc_cyc = 0, readd_cyc = 0;
	if (p->has_kernel) {
		/* every step drains the output block's f32 results from the
		 * MXU into VMEM (one simple op per result vreg); each extra
		 * contraction step also re-adds them to the resident
		 * accumulator (one more). The re-add is on the MXU's path:
		 * a split contraction's next pass cannot start until the
		 * previous pass's results are out of the MXU result buffers
		 * and folded into the accumulator (read, add, write back),
		 * so those cycles add to the MXU's instead of overlapping
		 * it. Source: TpuGraphs fusion.261 (a weight-gradient matmul,
		 * contraction 32): contraction blocks of 8 run 1.3-1.4x the
		 * MXU time of overlapped passes. Known wrong: ignores the
		 * MXU's own accumulators, which on some generations hold a
		 * split contraction's partial sums. */
		double blk = 1.0;
		for (int i = 0; i < p->out.rank; i++)
			blk *= (double)pad_to(x->bl[p->out_dim[i]].full,
					      p->out.tile[i]);
		double blk_vregs = blk * p->acc_vregs_per_elem;
		acc_cyc = hw_vpu_op_cycles(
			hw, blk_vregs * (double)(2 * steps - out_steps),
			HW_VPU_SIMPLE);
		readd_cyc = hw_vpu_op_cycles(
			hw, blk_vregs * (double)(steps - out_steps),
			HW_VPU_SIMPLE);
		/* one f32 accumulator block stays resident */
		if (steps > out_steps)
			vmem += 4.0 * blk;
	}
	/* the loop over a block's major (untiled) dims: one iteration per
	 * row of tiles, hw->row_overhead_cycles each, ragged blocks whole */
	double rows = (double)steps;
	for (int i = 0; i < p->out.rank; i++)
		if (p->out.tile[i] == 1)
			rows *= (double)x->bl[p->out_dim[i]].full;
	double row_cyc = rows * hw->row_overhead_cycles;
	double vpu = p->vpu_cycles + acc_cyc + prologue + row_cyc;
	double n = (double)steps;
	/* megacore split: the output blocks are dealt out to the cores
	 * (a contraction is not split: its partial sums live in one
	 * core's VMEM), so a kernel uses
	 *   split = min(cores, out_steps)            cores
	 *   S_c   = ceil(out_steps / split) x S / out_steps   steps each
	 * and each core runs its own pipeline of S_c steps. The cores start
	 * together: both first loads (and both last stores) move at once,
	 * sharing the HBM bandwidth, and are not hidden; the rest of the
	 * traffic is spread over the S_c - 1 overlapped steps of either
	 * core. A config with one output block runs on one core. Assumes
	 * the split is even and both cores share one HBM (one DMA
	 * bandwidth); known wrong: an odd block count leaves one core idle
	 * for its last step (modelled: ceil), and operand blocks shared by
	 * both cores are fetched twice (modelled: the first loads double).
	 * Source: megacore (SB: one program on both TensorCores); tpuv4-ops
	 * matmuls over chip.megacore_min_elems run at the speed of few-step
	 * configs only when both cores' pipelines and their unhidden first
	 * loads are counted (see hwspecs/v4.yaml chip.megacore_min_elems). */
	int64_t cores = sim_plan_cores(p, hw);
	int64_t split = cores > 1 ? (out_steps < cores ? out_steps : cores) : 1;
	double n_core = ceil((double)out_steps / (double)split) *
			(double)(steps / out_steps);
	double compute_step = max2(mxu + readd_cyc, vpu) / clock_ghz / n;
	/* n - 1 steps overlap the next step's loads (and the previous
	 * step's stores); the last step's compute has nothing to hide. A
	 * step waits out the latency of the loads it needs; stores are
	 * issued and left to finish behind the next steps. Each set of
	 * transfers takes dma_ns(): the operands' streams run concurrently
	 * and share the bandwidth, each paying its own per-run costs. */
	struct dma_part c_first = {d_first.bytes * (double)split, d_first.worst};
	struct dma_part c_last = {d_last.bytes * (double)split, d_last.worst};
	struct dma_part c_mid = {
		max2(0.0, d_mid.bytes - (double)(split - 1) *
					       (d_first.bytes + d_last.bytes)),
		d_mid.worst};
	double mid_in = rd - first * (double)split > 0
				? rd - first * (double)split
				: 0.0;
	double dma_step = n_core > 1 && c_mid.bytes > 0
				  ? (mid_in > 0 ? hw->dma_latency_ns : 0.0) +
					    dma_ns(bw, &c_mid) / (n_core - 1.0)
				  : 0.0;
	double first_ns = hw->dma_latency_ns + dma_ns(bw, &c_first);
	double last_ns = last > 0 ? hw->dma_latency_ns + dma_ns(bw, &c_last)
				  : 0.0;
	double pipe = (n_core - 1.0) * (max2(compute_step, dma_step) +
					hw->step_overhead_ns) +
		      compute_step + hw->step_overhead_ns;
	double dma_busy = dma_ns(bw, &d_all); /* the DMAs alone, ns */
	double t = hw->kernel_overhead_ns +
		   max2(first_ns + pipe + last_ns, dma_busy);
	/*
	 * XLA's async collective fusion (p->side_coll): a collective fused
	 * beside the matmul runs on the ICI while the MXU works, ns:
	 *   time = max(t, kernel_overhead_ns + ici)
	 * ici: sim_plan_ici (the ring, or the slice's axes). Assumes the two
	 * share nothing (the collective's buffers stay in VMEM, off the
	 * grid: plan.c collective_side). Known wrong: its DMA traffic shares
	 * HBM with the matmul's when it reads or writes HBM.
	 */
	double side_ns = 0;
	if (p->side_coll) {
		struct hw_ici_cost ic;
		sim_plan_ici(p, hw, &ic);
		side_ns = hw->kernel_overhead_ns + ic.ns;
		t = max2(t, side_ns);
	}

	out->time_ns = t;
	out->steps = steps;
	out->mxu_cycles = mxu;
	out->vpu_cycles = vpu;
	out->dma_cycles = dma_busy * clock_ghz;
	out->overhead_ns = hw->kernel_overhead_ns + n * hw->step_overhead_ns;
	out->vmem_bytes = vmem;
	out->feasible = hw_mem_fits_vmem(hw, vmem);
	out->flops = p->flops;
	out->bytes_read = rd;
	out->bytes_written = wr;
	double mxu_ns = mxu / clock_ghz, vpu_ns = vpu / clock_ghz;
	/* the unit with the most busy time; DMA latencies count as
	 * overhead, with the launch and per-step costs */
	double ovh = out->overhead_ns + transfers * hw->dma_latency_ns;
	out->bound = HW_UNIT_MXU;
	double best = mxu_ns;
	if (vpu_ns > best) {
		best = vpu_ns;
		out->bound = HW_UNIT_VPU;
	}
	if (dma_busy > best) {
		best = dma_busy;
		out->bound = HW_UNIT_HBM;
	}
	if (ovh > best)
		out->bound = HW_UNIT_OVERHEAD;
	if (side_ns >= t)
		out->bound = HW_UNIT_ICI;

	x->mxu_cycles = mxu;
	x->mxu_untiled_cycles = untiled;
	x->vpu_cycles = p->vpu_cycles;
	x->acc_cycles = acc_cyc;
	x->readd_cycles = readd_cyc;
	x->prologue_cycles = prologue;
	x->first_bytes = first;
	x->last_bytes = last;
	x->transfers = transfers;
	x->chunks = runs;
	x->rows = rows;
	x->compute_step_ns = compute_step;
	x->dma_step_ns = dma_step;
	x->step_ns = hw->step_overhead_ns;
	x->first_ns = first_ns;
	x->last_ns = last_ns;
	x->pipeline_ns = pipe;
	x->split = split;
	x->core_steps = n_core;
	out->cores = (int)split;
	/* an int8 MAC takes 1 / rate of a bf16 MAC slot */
	out->mxu_util = hw_mxu_utilisation(
		hw, (p->mxu_macs + p->mxu_untiled_macs) / sim_mxu_rate(p->mxu_int8, hw),
		p->mxu_passes, out->cores, t);
}

/* Elements of access dim ad in a block with each dim's blocks in blk,
 * padded to its tile. */
static double adim_block(const struct sim_plan_adim *ad,
			 const struct sim_blocks *blk)
{
	if (ad->grid < 0)
		return (double)pad_to(ad->elems, ad->tile);
	return (double)pad_to(adim_extent(ad, blk[ad->grid].full,
					  ad->win >= 0 ? blk[ad->win].full : 1),
			      ad->tile);
}

/* Bytes of access ac's block with each dim's blocks in blk, its dims'
 * extents (adim_block) into ext (or NULL), and (*twice) whether a dim it
 * follows is split (split[d]: more than one block in every completion):
 * vmem_floor's term of it, below. */
static double access_block(const struct sim_plan_access *ac,
			   const struct sim_blocks *blk, const bool *split,
			   bool *twice, double *ext)
{
	double b = ac->pad_factor * ac->elem_bytes;
	*twice = false;
	for (int i = 0; i < ac->rank; i++) {
		const struct sim_plan_adim *ad = &ac->dims[i];
		if (ad->grid >= 0)
			*twice = *twice || split[ad->grid] ||
				 (ad->win >= 0 && split[ad->win]);
		double e = adim_block(ad, blk);
		if (ext)
			ext[i] = e;
		b *= e;
	}
	return b;
}

/* The f32 accumulator's bytes (an output block, 4 bytes an element)
 * with each dim's blocks in blk. */
static double acc_block(const struct sim_plan *p, const struct sim_blocks *blk)
{
	double out_blk = 4.0;
	for (int i = 0; i < p->out.rank; i++)
		out_blk *= (double)pad_to(blk[p->out_dim[i]].full,
					  p->out.tile[i]);
	return out_blk;
}

/* Whether a contraction dim is split (its accumulator stays resident). */
static bool acc_split(const struct sim_plan *p, const bool *split)
{
	bool acc = false;
	for (int d = 0; p->has_kernel && d < p->n_dims; d++)
		acc = acc || (split[d] && p->dims[d].src >= p->out.rank);
	return acc;
}

/* VMEM floor (bytes) with each dim's blocks in blk: every access's block,
 * twice when a dim it follows is split (split[d]: more than one block in
 * every completion), its staging copy, and the f32 accumulator when a
 * contraction dim is split; block[a] gets access a's block, twice[a]
 * whether it counted twice and ext[a] its padded extents (access_block),
 * or all three NULL. Grows with every bound in blk (extents never shrink
 * as a bound grows). */
static double vmem_floor(const struct sim_plan *p, const struct sim_blocks *blk,
			 const bool *split, double *block, bool *twice_of,
			 double (*ext)[SIM_MAX_GRID])
{
	double vmem = 2 * p->other_bytes;
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		bool twice;
		double b = access_block(ac, blk, split, &twice,
					ext ? ext[a] : NULL);
		if (block) {
			block[a] = b;
			twice_of[a] = twice;
		}
		vmem += buffer_bytes(ac, b, twice);
	}
	if (acc_split(p, split))
		vmem += acc_block(p, blk);
	return vmem;
}

/* Does the VMEM floor fit with dim d at bound b (blk's other dims as
 * they are; d split when b leaves it more than one block)? blk[d] and
 * split[d] are left as they were. */
static bool fits_at(const struct sim_plan *p, const struct hw_spec *hw,
		    struct sim_blocks *blk, bool *split, int d, int64_t b)
{
	struct sim_blocks keep = blk[d];
	bool keep_split = split[d];
	dim_blocks(&p->dims[d], b, &blk[d]);
	split[d] = blk[d].nb > 1;
	double v = vmem_floor(p, blk, split, NULL, NULL, NULL);
	blk[d] = keep;
	split[d] = keep_split;
	return hw_mem_fits_vmem(hw, v * (1 - SIM_FLOOR_SLACK));
}

/* fits_at(d, the whole dim) for a dim d not chosen (not split, so no
 * access's buffering changes), from vmem_floor's terms at blk (block,
 * twice, ext): only the extents of the accesses' dims that follow d are
 * worked out again, the products and the sum taken in vmem_floor's order
 * (the same bits). blk[d] is left as it was. */
static bool whole_fits(const struct sim_plan *p, const struct hw_spec *hw,
		       struct sim_blocks *blk, const bool *split,
		       const double *block, const bool *twice,
		       double (*ext)[SIM_MAX_GRID], int d)
{
	struct sim_blocks keep = blk[d];
	dim_blocks(&p->dims[d], p->dims[d].tiles, &blk[d]);
	double v = 2 * p->other_bytes;
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		double b = block[a];
		if (ac->follows >> d & 1) {
			b = ac->pad_factor * ac->elem_bytes;
			for (int i = 0; i < ac->rank; i++) {
				const struct sim_plan_adim *ad = &ac->dims[i];
				b *= ad->grid == d || ad->win == d
					     ? adim_block(ad, blk)
					     : ext[a][i];
			}
		}
		v += buffer_bytes(ac, b, twice[a]);
	}
	if (acc_split(p, split))
		v += acc_block(p, blk);
	blk[d] = keep;
	return hw_mem_fits_vmem(hw, v * (1 - SIM_FLOOR_SLACK));
}

/* Elements of combined dim d over all its blocks, each padded to tile t:
 * a chosen dim's blocks exactly (a ragged last block counts whole, as
 * estimate() costs it), else the whole dim padded (the least any
 * completion covers). */
static double cover(const struct sim_plan *p, const struct sim_blocks *bl,
		    const bool *chosen, int d, int64_t t)
{
	if (chosen[d])
		return (double)bl[d].nb * (double)pad_to(bl[d].full, t);
	return (double)pad_to(p->dims[d].elems, t);
}

/* Steps each core runs when the output blocks are dealt out to the cores
 * (estimate()'s megacore split), each with its contraction steps: N0 of
 * sim_plan_floor (below) from its S0 steps and O0 output blocks. */
static double core_steps(double steps, double out_steps, double cores)
{
	return ceil(out_steps / fmin(cores, out_steps)) * (steps / out_steps);
}

/* MXU0 of sim_plan_floor (below) over blocks bl and steps: the fills,
 * and the weight tiles x rows the MXU streams over the steps, with each
 * role's extent as its blocks cover it (cover() unpadded: a chosen dim's
 * blocks exactly, ragged ones whole; an unchosen dim whole) and each block
 * of the contraction taking a weight tile of its own. */
static double mxu_floor_cycles(const struct sim_plan *p,
			       const struct hw_spec *hw,
			       const struct sim_blocks *bl, const bool *chosen,
			       double steps)
{
	if (!p->has_kernel)
		return 0;
	double mxu = steps * hw_mxu_fill_cycles(hw);
	if (p->mxu_groups > 1 || p->tap_density != 1.0)
		return mxu;
	double ext[SIM_ROLE_COUNT] = {1, 1, 1, 1, 1}, k_blocks = 1;
	for (int i = 0; i < p->n_dims; i++) {
		ext[p->dims[i].role] *= cover(p, bl, chosen, i, 1);
		if (p->dims[i].role == SIM_ROLE_K)
			k_blocks *= (double)bl[i].nb;
	}
	/* weight tiles x rows streamed, either orientation */
	double rr = hw->mxu_rows, cc = hw->mxu_cols;
	double m = ext[SIM_ROLE_M], n = ext[SIM_ROLE_N];
	double kt = ext[SIM_ROLE_BATCH] * ext[SIM_ROLE_TAP] *
		    (p->mxu_fold_taps ? ext[SIM_ROLE_K] / rr
				      : max2(ceil(ext[SIM_ROLE_K] / rr), k_blocks));
	double c1 = kt * ceil(n / cc) * m, c2 = kt * ceil(m / cc) * n;
	double k = hw->mxu_macs_per_cell_cycle > 0 ? hw->mxu_macs_per_cell_cycle
						   : 1.0;
	return mxu + (p->mxu_windowed ? c1 : fmin(c1, c2)) *
			     (p->mxu_passes > 0 ? p->mxu_passes : 1) /
			     ((hw->mxu_count > 0 ? hw->mxu_count : 1) * k *
			      sim_mxu_rate(p->mxu_int8, hw));
}

/*
 * The fewest steps a fitting completion takes, from VMEM jointly: each
 * dim's largest fitting bound (bl) takes the other unchosen dims at one
 * tile, but their blocks share VMEM. For an access a and the unchosen dims
 * U it follows plainly (unwindowed, unscaled), the blocks along U cover
 * them, prod_U nb x full >= prod_U elems, and its block, at least K x
 * prod_U full (K: its floor block with the U factors taken out), must fit
 * what the others leave it: (cap - rest) / (buffers x (1 + staging)). So
 *   prod_U nb >= ceil(prod_U elems x K x buffers x (1 + staging) /
 *                     (cap - rest))
 * twice buffered once that exceeds 1 (a split access is double-buffered).
 * Returns the most steps so implied (the blocks of the other dims as in
 * bl), at least steps (bl's own product).
 */
static double least_steps(const struct sim_plan *p, const struct hw_spec *hw,
			  const struct sim_blocks *small, const bool *chosen,
			  const struct sim_blocks *bl, double steps,
			  double vmem, const double *block,
			  const bool *twice_of)
{
	double least = steps;
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		if (ac->in_vmem)
			continue; /* not in the kernel's VMEM (vmem_floor) */
		double k = block[a], elems = 1, cur = 1;
		bool seen[SIM_PLAN_MAX_DIMS] = {false}, any = false;
		for (int i = 0; i < ac->rank; i++) {
			const struct sim_plan_adim *ad = &ac->dims[i];
			int g = ad->grid;
			if (g < 0 || chosen[g] || ad->win >= 0 ||
			    ad->scale != 1.0 || seen[g])
				continue;
			seen[g] = any = true;
			k /= (double)pad_to(adim_extent(ad, small[g].full, 1),
					    ad->tile);
			elems *= (double)p->dims[g].elems;
			cur *= (double)bl[g].nb;
		}
		/* buffers x (1 + staging), as vmem_floor counts them */
		bool twice = twice_of[a];
		double term = buffer_bytes(ac, block[a], twice);
		double avail = hw->vmem_scoped_bytes - (vmem - term);
		if (!any || avail <= 0 || block[a] <= 0)
			continue;
		double per = (twice ? 2.0 : 1.0) * (1.0 + ac->stage_ratio);
		double need = elems * k * per / avail * (1 - SIM_FLOOR_SLACK);
		if (need > 1 && !twice)
			need *= 2; /* split: double-buffered */
		need = ceil(need);
		if (need > cur)
			least = max2(least, steps / cur * need);
	}
	return least;
}

/*
 * Floors on estimate()'s time and VMEM over every config that agrees with
 * part on its chosen (nonzero) bounds and fits VMEM.
 *
 * VMEM: the unchosen dims take one tile (the smallest blocks):
 *
 *   vmem = 2 x other_bytes + sum over accesses of block x (1 + staging)
 *          x (2 when a chosen dim it follows has several blocks)
 *        + 4 x the output block (one tile along unchosen dims) when a
 *          chosen contraction dim has several blocks (the accumulator)
 *   block = pad_factor x elem_bytes x prod over its dims of the block's
 *           extent padded to the access's tile
 *
 * Time: an unchosen dim takes its largest bound Bmax whose VMEM floor
 * (that dim at Bmax, the other unchosen dims at one tile) fits: no
 * completion with a larger bound fits VMEM. With S0 = the product of the
 * blocks per dim so taken (the fewest steps any fitting completion has),
 * cores = sim_plan_cores and lat = hbm.dma_latency_ns:
 *
 *   time = kernel_ns + max(N0, ceil(L0 / cores)) x step_ns
 *        + lat x (1 + [output])
 *        + max( B / bw                       only when L0 > cores
 *             , STREAM                       on one core only
 *             , F / bw + max(MXU0 + READD0, VPU0) / clock x share )
 *   N0   = ceil(O0 / min(cores, O0)) x S0 / O0, the steps of one core
 *          (O0: the output blocks among S0; estimate()'s megacore split)
 *   L0   = the fewest steps VMEM jointly allows (least_steps), >= S0
 *   share = N0 / S0 once every output dim is chosen, else 1 / cores
 *   B    = other_bytes + sum over accesses not in VMEM of
 *          R0 x pad_factor x elem_bytes x prod over its dims of the whole
 *          padded extent (a windowed dim: one tile)
 *   R0   = its refetch count (access_cost's R) with those blocks
 *   F    = other_bytes + the inputs' smallest first blocks (the VMEM
 *          blocks above)
 *   STREAM = the slowest access's own stream, hw_mem_stream_ns(its part
 *          of B, its runs: one per tile row above the minor-most dim
 *          known to be split, one per block from there; none when a block
 *          may straddle its tiles)
 *   MXU0 = S0 x fill + weight tiles x rows x passes / (MXUs x MACs per
 *          cell and cycle) over the grid as the blocks cover it (each
 *          role's extent: a chosen dim's blocks, a ragged one whole; an
 *          unchosen dim whole): batch x taps x max(ceil(K / R), KB0)
 *          (K / R where taps fold into the contraction; KB0: the
 *          contraction's blocks among S0) tiles of
 *          ceil(N / C) x M rows, or of ceil(M / C) x N (the cheaper
 *          orientation, as mxu_total_cycles takes it; none for grouped or
 *          tap-thinned convolutions)
 *   VPU0 = vpu_cycles + ROWS0 x row_cycles + sum over accesses of
 *          (prologue x R0 + convert x P0) + ACC0
 *   ROWS0 = S0 x prod over the untiled output dims of elems / blocks
 *   P0   = R0, or (an access whose dims each follow their own grid dim,
 *          unwindowed and unscaled) the product of the blocks of every
 *          dim it does not follow
 *   ACC0, READD0 = (2 K0 - 1) and (K0 - 1) simple VPU ops on each output
 *          vreg of the f32 accumulator (output padded to its tiles; K0 =
 *          the contraction's blocks among S0), for a dot or convolution
 *
 * Why each is a floor. Block counts only grow as a bound shrinks, so S and
 * R (a product of block counts over a prefix of dims that only lengthens)
 * are least at the largest bounds a fitting completion may take. Along an
 * unwindowed dim the blocks' padded extents sum to at least the whole dim
 * padded (padding, ragged blocks and straddled tiles only add); a strided
 * window can skip input between blocks, so a windowed dim gets no more
 * than one tile. Every step streams its block's rows through each of its
 * weight tiles (mxu_total_cycles: fills and the weight-load bound only
 * add), and over the steps the blocks cover the grid: b x ceil(x / R) >=
 * ceil(b x / R) for b blocks of x, and b x ceil(x / R) >= b as each block
 * takes a weight tile of its own (a fractional group or tap count is
 * truncated there, so those kernels get no such floor). A block's extent
 * never shrinks as its bound grows, and a block straddling tiles holds at
 * least its extent padded; an access fetched more than once is double
 * buffered, a split contraction keeps its accumulator, and a straddle's
 * extra tiles only add to VMEM. The pipeline (estimate()) is T = kernel_ns
 * + first + (n - 1) x max(compute, dma) + compute + last + n x step_ns
 * with n >= N0 steps per core (ceil(O / min(cores, O)) grows with O);
 * first = lat + the first loads, last = lat + the last stores (when
 * anything is written back): its DMA terms add up to at least every byte
 * over the bandwidth once a core runs more than one step (first loads,
 * the steps between, last stores), and its compute terms to n x compute =
 * max(MXU + re-adds, VPU) / clock x n / S, where n / S >= 1 / cores. The
 * rows, the drains and re-adds (blocks x full extents >= elems, the
 * contraction's blocks grow) and the conversions (once per step's block: S
 * x block / bytes >= the blocks of the dims the access does not follow)
 * only grow as bounds shrink; the per-step DMA latencies are left out (all
 * >= 0). On one core an access's streams in the three phases (first
 * loads, the steps between, last stores) add up to its bytes and runs,
 * except that a phase left with no bytes drops its runs (dma_add): a
 * straddling first block, or an output's last block, is counted at the
 * most tiles a block can touch (straddle()), which can leave the steps
 * between with no bytes, so STREAM counts no runs where a block may
 * straddle (a grid tile that is no multiple of the access's tile). Keep this in step
 * with estimate() and mxu_total_cycles(): test_tile_search checks on the
 * kernels of the corpus, the tile set and a sample of tpuv4-ops that the
 * search pruned by it picks what costing every candidate picks, and on a
 * few kernels without data every partial config's floor.
 */
/* Each dim's blocks under part (a dim not chosen: bound 1, the least
 * VMEM), whether it is chosen, and whether it is split (chosen, more than
 * one block: its accesses' blocks are double-buffered). */
static void chosen_blocks(const struct sim_plan *p,
			  const struct sim_tile_config *part,
			  struct sim_blocks *bl, bool *chosen, bool *split)
{
	for (int i = 0; i < p->n_dims; i++) {
		int64_t b = config_bound(p, part, i);
		chosen[i] = b > 0;
		dim_blocks(&p->dims[i], b > 0 ? b : 1, &bl[i]);
		split[i] = chosen[i] && bl[i].nb > 1;
	}
}

bool sim_plan_fits(const struct sim_plan *p, const struct hw_spec *hw,
		   const struct sim_tile_config *cfg)
{
	struct sim_blocks bl[SIM_PLAN_MAX_DIMS];
	bool chosen[SIM_PLAN_MAX_DIMS], split[SIM_PLAN_MAX_DIMS];
	chosen_blocks(p, cfg, bl, chosen, split);
	return hw_mem_fits_vmem(hw, vmem_floor(p, bl, split, NULL, NULL, NULL) *
					    (1 - SIM_FLOOR_SLACK));
}

/* sim_plan_floor with its per-access scratch: block, twice and ext of
 * vmem_floor, p->n_access each. */
static void floor_of(const struct sim_plan *p, const struct hw_spec *hw,
		     const struct sim_tile_config *part,
		     struct sim_plan_floors *out, double *block, bool *twice,
		     double (*ext)[SIM_MAX_GRID])
{
	struct sim_blocks bl[SIM_PLAN_MAX_DIMS], small[SIM_PLAN_MAX_DIMS];
	bool chosen[SIM_PLAN_MAX_DIMS], split[SIM_PLAN_MAX_DIMS];
	chosen_blocks(p, part, small, chosen, split);
	double vmem = vmem_floor(p, small, split, block, twice, ext);
	bool fits = hw_mem_fits_vmem(hw, vmem);
	/* the largest bound each unchosen dim may take and still fit: the
	 * whole dim, else by bisection below it (where the dim is split, the
	 * VMEM floor grows with the bound); when no bound fits, no
	 * completion does */
	for (int i = 0; i < p->n_dims; i++) {
		bl[i] = small[i];
		if (chosen[i] || !fits)
			continue;
		int64_t lo = 1, hi = p->dims[i].tiles;
		bool whole = whole_fits(p, hw, small, split, block, twice, ext, i);
#ifndef NDEBUG
		/* fits_at exactly (checked in builds without NDEBUG: the
		 * sanitizer build of the suite) */
		TS_ASSERT(whole == fits_at(p, hw, small, split, i, hi));
#endif
		if (whole)
			lo = hi;
		else if (hi > 1 && !fits_at(p, hw, small, split, i, 1))
			fits = false;
		else
			hi--;
		while (lo < hi) {
			int64_t mid = lo + (hi - lo) / 2;
			if (fits_at(p, hw, small, split, i, mid + 1))
				lo = mid + 1;
			else
				hi = mid;
		}
		dim_blocks(&p->dims[i], lo, &bl[i]);
	}
	double steps = 1, out_steps = 1;
	bool out_known = true; /* every output dim's bound chosen */
	for (int i = 0; i < p->n_dims; i++) {
		steps *= (double)bl[i].nb;
		if (p->dims[i].src < p->out.rank) {
			out_steps *= (double)bl[i].nb;
			out_known = out_known && chosen[i];
		}
	}
	double least = fits ? least_steps(p, hw, small, chosen, bl, steps,
					  vmem, block, twice)
			    : steps;
	double cores = (double)sim_plan_cores(p, hw);
	double n_core = core_steps(steps, out_steps, cores);
	double clock_ghz = hw->clock_hz * 1e-9;
	double mxu = mxu_floor_cycles(p, hw, bl, chosen, steps);
	/* rows of tiles: each block's untiled output dims loop row by row
	 * (a chosen dim's blocks exactly, ragged ones whole) */
	double rows = steps;
	for (int i = 0; i < p->out.rank; i++) {
		int d = p->out_dim[i];
		if (p->out.tile[i] == 1)
			rows *= chosen[d] ? (double)bl[d].full
					  : (double)p->dims[d].elems / (double)bl[d].nb;
	}
	double readd = 0, vpu = p->vpu_cycles + rows * hw->row_overhead_cycles;
	if (p->has_kernel) {
		/* the drains and re-adds of the output blocks over the steps */
		double out_blk = 1, k_steps = 1;
		bool is_out[SIM_PLAN_MAX_DIMS] = {false};
		for (int i = 0; i < p->out.rank; i++) {
			int d = p->out_dim[i];
			is_out[d] = true;
			out_blk *= cover(p, bl, chosen, d, p->out.tile[i]);
		}
		for (int d = 0; d < p->n_dims; d++)
			if (!is_out[d])
				k_steps *= (double)bl[d].nb;
		double vregs = out_blk * p->acc_vregs_per_elem;
		vpu += hw_vpu_op_cycles(hw, vregs * (2 * k_steps - 1),
					HW_VPU_SIMPLE);
		readd = hw_vpu_op_cycles(hw, vregs * (k_steps - 1),
					 HW_VPU_SIMPLE);
	}
	double bpns = hw_mem_bytes_per_ns(hw);
	double bytes = p->other_bytes, first = p->other_bytes, stream = 0;
	bool written = false;
	for (int a = 0; a < p->n_access; a++) {
		const struct sim_plan_access *ac = &p->acc[a];
		uint32_t in_d = ac->follows;
		double pass = ac->pad_factor * ac->elem_bytes;
		for (int i = 0; i < ac->rank; i++) {
			const struct sim_plan_adim *ad = &ac->dims[i];
			int64_t whole = ad->grid < 0 ? ad->elems
					: ad->win >= 0 ? 1
					: adim_extent(ad, p->dims[ad->grid].elems, 1);
			pass *= (double)pad_to(whole, ad->tile);
		}
		int j = -1;
		for (int d = 0; d < p->n_dims; d++)
			if ((in_d >> d & 1) && bl[d].nb > 1)
				j = d;
		double r = 1;
		for (int d = 0; d <= j; d++)
			if (!(in_d >> d & 1))
				r *= (double)bl[d].nb;
		/* conversions: once per step's block, so at least once per
		 * block of every dim the access does not follow (when its
		 * blocks tile it plainly: one grid dim each, no window) */
		double passes = r;
		bool plain = true;
		int seen[SIM_PLAN_MAX_DIMS] = {0};
		for (int i = 0; i < ac->rank; i++) {
			const struct sim_plan_adim *ad = &ac->dims[i];
			if (ad->grid >= 0 && (ad->win >= 0 || ad->scale != 1.0 ||
					      seen[ad->grid]++))
				plain = false;
		}
		if (plain) {
			for (int d = 0; d < p->n_dims; d++)
				if (!(in_d >> d & 1))
					passes *= d > j ? (double)bl[d].nb : 1.0;
			for (int i = 0; i < ac->rank; i++) {
				int g = ac->dims[i].grid;
				if (g >= 0 && chosen[g])
					passes *= cover(p, bl, chosen, g,
							ac->dims[i].tile) /
						  (double)pad_to(p->dims[g].elems,
								 ac->dims[i].tile);
			}
		}
		vpu += ac->prologue_cycles * r + ac->convert_cycles * passes;
		if (ac->in_vmem)
			continue;
		bytes += pass * r;
		/* its contiguous runs: one per tile row above the minor-most
		 * dim known to be split, one per block from there; none where
		 * a block may straddle the access's tiles (straddle(): the
		 * estimate counts the first block, or an output's last, at
		 * the most tiles a block can touch and may drop the runs of
		 * the steps between) */
		int stop = -1;
		bool aligned = true;
		for (int i = 0; i < ac->rank; i++) {
			const struct sim_plan_adim *ad = &ac->dims[i];
			if (ad->grid >= 0 && ad->win < 0 && bl[ad->grid].nb > 1)
				stop = i;
			if (ad->grid >= 0 && ad->win < 0 && ad->scale == 1.0 &&
			    ad->tile > 1 && p->dims[ad->grid].tile % ad->tile != 0)
				aligned = false;
		}
		double runs = aligned ? r : 0.0;
		for (int i = 0; i < ac->rank; i++) {
			const struct sim_plan_adim *ad = &ac->dims[i];
			double tl = ad->tile > 1 ? (double)ad->tile : 1.0;
			if (i < stop && ad->win < 0)
				runs *= (double)pad_to(ad->grid < 0 ? ad->elems
							: adim_extent(ad, p->dims[ad->grid].elems, 1),
						       ad->tile) / tl;
			else if (i >= stop && ad->grid >= 0)
				runs *= (double)bl[ad->grid].nb *
					(ad->win >= 0 ? (double)bl[ad->win].nb : 1.0);
		}
		stream = max2(stream, hw_mem_stream_ns(hw, bpns, pass * r, runs));
		if (ac->output)
			written = true;
		else
			first += block[a];
	}
	/* each core computes its share of the steps: exactly n_core / steps
	 * once the output blocks are known, else at least 1 / cores */
	double share = out_known ? n_core / steps : 1.0 / cores;
	double compute = max2(mxu + readd, vpu) / clock_ghz * share;
	double dma = least > cores && bpns > 0 ? bytes / bpns : 0.0;
	double load = bpns > 0 ? first / bpns : 0.0;
	/* on one core every phase (first loads, steps, last stores) takes
	 * at least each operand's own stream in it */
	if (cores > 1)
		stream = 0;
	out->time_ns = hw->kernel_overhead_ns +
		       max2(n_core, ceil(least / cores)) * hw->step_overhead_ns +
		       hw->dma_latency_ns * (written ? 2.0 : 1.0) +
		       max2(max2(dma, stream), load + compute);
	out->fits = fits;
}

/* The scratch lives on the stack for up to FLOOR_STACK_ACCESS accesses
 * (nearly every kernel), on the heap for a kernel of more operands; if
 * that cannot be had, the floor is 0 and fits: it cuts nothing. */
#define FLOOR_STACK_ACCESS 24
void sim_plan_floor(const struct sim_plan *p, const struct hw_spec *hw,
		    const struct sim_tile_config *part, struct sim_plan_floors *out)
{
	if (p->n_access <= FLOOR_STACK_ACCESS) {
		double block[FLOOR_STACK_ACCESS];
		double ext[FLOOR_STACK_ACCESS][SIM_MAX_GRID];
		bool twice[FLOOR_STACK_ACCESS];
		floor_of(p, hw, part, out, block, twice, ext);
		return;
	}
	/* one allocation: ext's rows, then block, then twice */
	size_t n = (size_t)p->n_access;
	double (*ext)[SIM_MAX_GRID] =
		ts_malloc(n * (sizeof *ext + sizeof(double) + sizeof(bool)));
	if (ext) {
		double *block = (double *)(ext + n);
		floor_of(p, hw, part, out, block, (bool *)(block + n), ext);
	} else {
		out->time_ns = 0;
		out->fits = true;
	}
	ts_free(ext);
}

/*
 * sim_plan_floor's time without its VMEM terms, at a fraction of its cost:
 * an unchosen dim takes the whole dim (one block; no completion has fewer
 * steps), and only the launch, one DMA latency, the steps' overhead and
 * the MXU count:
 *   time = kernel_ns + lat + share x (MXU0 / clock + S0 x step_ns)
 * with S0, share and MXU0 as there. A floor because estimate()'s T =
 * kernel_ns + first + (n_core - 1) x (max(compute, dma) + step_ns) +
 * compute + step_ns + last >= kernel_ns + lat + n_core x (compute +
 * step_ns), with compute >= MXU / clock / n and n_core >= share x n. 0 for
 * a plan without a kernel.
 */
double sim_plan_mxu_floor(const struct sim_plan *p, const struct hw_spec *hw,
			  const struct sim_tile_config *part)
{
	if (p->kind != SIM_PLAN_TILED || !p->has_kernel)
		return 0;
	struct sim_blocks bl[SIM_PLAN_MAX_DIMS];
	bool chosen[SIM_PLAN_MAX_DIMS];
	double steps = 1, out_steps = 1;
	bool out_known = true;
	for (int i = 0; i < p->n_dims; i++) {
		int64_t b = config_bound(p, part, i);
		chosen[i] = b > 0;
		if (chosen[i])
			dim_blocks(&p->dims[i], b, &bl[i]);
		else
			bl[i].nb = 1; /* whole: one block (all cover() reads) */
		steps *= (double)bl[i].nb;
		if (p->dims[i].src < p->out.rank) {
			out_steps *= (double)bl[i].nb;
			out_known = out_known && chosen[i];
		}
	}
	double cores = (double)sim_plan_cores(p, hw);
	double n_core = core_steps(steps, out_steps, cores);
	double share = out_known ? n_core / steps : 1.0 / cores;
	return hw->kernel_overhead_ns + hw->dma_latency_ns +
	       share * (mxu_floor_cycles(p, hw, bl, chosen, steps) /
				(hw->clock_hz * 1e-9) +
			steps * hw->step_overhead_ns);
}

/* estimate() and the program's start when p's kernel starts it
 * (sim_program_start_ns: the time's fixed part). */
static void estimate_run(const struct sim_plan *p, const struct hw_spec *hw,
			 const struct sim_tile_config *full,
			 struct sim_estimate *out, struct sim_est_detail *dt)
{
	estimate(p, hw, full, out, dt);
	double start = sim_program_start_ns(p->k, hw);
	out->time_ns += start;
	out->overhead_ns += start;
}

void sim_plan_estimate(const struct sim_plan *p, const struct hw_spec *hw,
		       const struct sim_tile_config *full,
		       struct sim_estimate *out)
{
	estimate_run(p, hw, full, out, NULL);
}

enum ts_status sim_plan_estimate_detail(const struct sim_plan *p,
					const struct hw_spec *hw,
					const struct sim_tile_config *full,
					struct sim_estimate *out,
					struct sim_est_detail *detail,
					struct ts_diag *d)
{
	memset(detail, 0, sizeof *detail);
	detail->ac = ts_calloc((size_t)(p->n_access > 0 ? p->n_access : 1),
			       sizeof *detail->ac);
	if (!detail->ac) {
		ts_diag_set(d, NULL, 0, 0, "out of memory costing %s",
			    p->k && p->k->name ? p->k->name : "?");
		return TS_ERR_NOMEM;
	}
	estimate_run(p, hw, full, out, detail);
	return TS_OK;
}

void sim_est_detail_free(struct sim_est_detail *detail)
{
	ts_free(detail->ac);
	detail->ac = NULL;
}
