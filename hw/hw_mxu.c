/*
 * hw_mxu.c: the matrix unit of one TensorCore: hw->mxu_count weight-stationary
 * systolic arrays of R x C cells (hw->mxu_rows x hw->mxu_cols) at
 * hw->clock_hz. Used by sim/model.c for every convolution and dot.
 */
#include "hw_units.h"

#include <math.h>

/*
 * Formula (cycles, one run of `tiles` R x C weight tiles, each streaming T
 * = rows LHS rows, P = passes bf16 passes, N = mxu_count arrays, k = bf16
 * MACs per cell per cycle, B = hw->mxu_pass_cycles):
 *
 *   per array:  t = ceil(tiles x P / N) weight-tile passes
 *   cycles    = R                       first weight load, nothing to hide it
 *             + (R + C - 2)             fill and drain skew of the array
 *             + T / k                   rows of the first pass
 *             + (t - 1) x max(T / k, R) later passes: the next tile's weights
 *                                       load (R cycles, one row per cycle)
 *                                       while the current tile streams, so a
 *                                       pass costs the longer of the two
 *             + t x B                   a bubble per pass when the array
 *                                       switches to the next weights
 *
 * With B = 0, one 128 x 128 tile and T = 128 this is 2R + C + T - 2 = 510
 * cycles, SCALE-Sim's count for one weight-stationary fold (TPU.md section
 * 2 rule 1). Assumptions: weights are double-buffered in the array (TPU
 * MXUs preload the next weight tile, Jouppi et al. ISCA'17 "weight FIFO");
 * rows and output columns beyond R or C are padded (a 64-deep contraction
 * costs a full pass); tiles split evenly over the arrays, which share the
 * LHS rows. Known wrong: ignores the result-buffer capacity (very tall T
 * may need extra drains), and assumes the VPU feeds rows fast enough; B is
 * calibrated (hwspecs), not derived from the array's design. Source: TPU.md
 * section 2 rule 1 (one 8 x 128 LHS tile per 8 cycles, bubbles when an
 * axis is below 128), SCALE-Sim (Samajdar et al., ISPASS 2020).
 */
double hw_mxu_fill_cycles(const struct hw_spec *hw)
{
	double r = hw->mxu_rows, c = hw->mxu_cols;
	return r + (r + c - 2.0);
}

double hw_mxu_stream_cycles(const struct hw_spec *hw, int64_t tiles,
			    int64_t rows, int passes)
{
	if (tiles <= 0 || rows <= 0)
		return 0.0;
	double r = hw->mxu_rows;
	double k = hw->mxu_macs_per_cell_cycle > 0 ? hw->mxu_macs_per_cell_cycle
						   : 1.0;
	int n_mxu = hw->mxu_count > 0 ? hw->mxu_count : 1;
	double p = passes > 0 ? passes : 1;
	double t = ceil((double)tiles * p / n_mxu);
	double stream = (double)rows / k;
	return stream + (t - 1.0) * fmax(stream, r) + t * hw->mxu_pass_cycles;
}

double hw_mxu_tile_cycles(const struct hw_spec *hw, int64_t tiles,
			  int64_t rows, int passes)
{
	if (tiles <= 0 || rows <= 0)
		return 0.0;
	return hw_mxu_fill_cycles(hw) +
	       hw_mxu_stream_cycles(hw, tiles, rows, passes);
}

double hw_mxu_matmul_cycles(const struct hw_spec *hw, int64_t m, int64_t k,
			    int64_t n, int passes)
{
	if (m <= 0 || k <= 0 || n <= 0 || hw->mxu_rows <= 0 ||
	    hw->mxu_cols <= 0)
		return 0.0;
	int64_t kt = (k + hw->mxu_rows - 1) / hw->mxu_rows;
	int64_t nt = (n + hw->mxu_cols - 1) / hw->mxu_cols;
	return hw_mxu_tile_cycles(hw, kt * nt, m, passes);
}

/* Peak = mxu_count x R x C x k MACs per cycle (TPU.md section 1:
 * clock = bf16 peak / (2 x TCs x MXUs x dim^2)). */
double hw_mxu_peak_macs_per_cycle(const struct hw_spec *hw)
{
	double k = hw->mxu_macs_per_cell_cycle > 0 ? hw->mxu_macs_per_cell_cycle
						   : 1.0;
	return (double)hw->mxu_count * hw->mxu_rows * hw->mxu_cols * k;
}

/*
 * MXU utilisation, a fraction (1 = every cell of every array busy for the
 * whole kernel):
 *   util = macs x passes / (time_ns x clock_GHz x peak_MACs_per_cycle x cores)
 * peak_MACs_per_cycle = hw_mxu_peak_macs_per_cycle (one TensorCore); an f32
 * MAC at HIGHEST takes `passes` bf16 passes, so its peak is 1/passes of
 * bf16's. Counts only useful MACs (no padding, no dilation holes): what a
 * profiler's "MXU utilisation" reports. 0 without time or work.
 */
double hw_mxu_utilisation(const struct hw_spec *hw, double macs, int passes,
			  int cores, double time_ns)
{
	double peak = hw_mxu_peak_macs_per_cycle(hw) * hw->clock_hz * 1e-9 *
		      (cores > 0 ? cores : 1);
	if (!(macs > 0) || !(time_ns > 0) || !(peak > 0))
		return 0.0;
	return macs * (passes > 0 ? passes : 1) / (time_ns * peak);
}
