/*
 * hw_units.h: the per-unit timing models of one TensorCore: the MXU
 * (hw_mxu.c, weight-stationary systolic arrays), the VPU (hw_vpu.c, 8 x 128
 * vector registers) and memory (hw_mem.c: HBM <-> VMEM DMA, VMEM capacity,
 * ICI). Each function turns an amount of work into cycles or ns on a given
 * struct hw_spec and reads nothing else; the analytic kernel model
 * (sim/model.c) decides how much work each grid step does.
 */
#ifndef HW_UNITS_H
#define HW_UNITS_H

#include <stdbool.h>
#include <stdint.h>

#include "hw_spec.h"

/* ---- MXU (hw_mxu.c) ------------------------------------------------------ */

/*
 * Cycles for one run of `tiles` weight tiles (each R x C) through the MXUs
 * of one TensorCore, every tile streaming `rows` LHS rows, at `passes` bf16
 * passes per tile (1 for bf16; hw->mxu_f32_passes for f32 at HIGHEST). The
 * tiles are spread evenly over hw->mxu_count arrays. Formula in hw_mxu.c.
 */
double hw_mxu_tile_cycles(const struct hw_spec *hw, int64_t tiles,
			  int64_t rows, int passes);

/* The two parts of hw_mxu_tile_cycles(): the unhidden first weight load
 * plus fill and drain skew of a run (R + R + C - 2), and the streaming of
 * the tiles' rows with later weight loads hidden behind them. A pipeline
 * that keeps accumulating across grid steps pays the fill once. */
double hw_mxu_fill_cycles(const struct hw_spec *hw);
double hw_mxu_stream_cycles(const struct hw_spec *hw, int64_t tiles,
			    int64_t rows, int passes);

/* Cycles for C[m,n] = A[m,k] B[k,n] as one run: ceil(k/R) x ceil(n/C)
 * weight tiles, each streaming m rows (hw_mxu_tile_cycles). */
double hw_mxu_matmul_cycles(const struct hw_spec *hw, int64_t m, int64_t k,
			    int64_t n, int passes);

/* Peak multiply-accumulates per cycle of one TensorCore (all MXUs). */
double hw_mxu_peak_macs_per_cycle(const struct hw_spec *hw);

/* Fraction of the MXU peak a kernel of `macs` useful multiply-accumulates
 * at `passes` bf16 passes each reaches over time_ns on `cores`
 * TensorCores; formula in hw_mxu.c. */
double hw_mxu_utilisation(const struct hw_spec *hw, double macs, int passes,
			  int cores, double time_ns);

/* ---- VPU (hw_vpu.c) ------------------------------------------------------ */

/* Where a reduction runs inside the (sublane, lane) register. */
enum hw_reduce_axis {
	HW_REDUCE_MAJOR = 0, /* across vregs: one add per input vreg */
	HW_REDUCE_SUBLANE,   /* across the 8 sublanes: shuffles per output vreg */
	HW_REDUCE_LANE,      /* across the 128 lanes: XLU rotate-and-add */
	HW_REDUCE_AXIS_COUNT
};

/* Number of 32-bit vregs (sublanes x lanes words) that hold `elems`
 * elements already padded to the layout tiles; 64-bit types take two. */
double hw_vpu_vregs(const struct hw_spec *hw, double padded_elems, int bits);

/* Cycles for one elementwise op of class c over `vregs` vregs. */
double hw_vpu_op_cycles(const struct hw_spec *hw, double vregs,
			enum hw_vpu_class c);

/* Cycles to convert `vregs` vregs (1024 elements each) of f16 data to f32
 * after a load (store false) or from f32 before a store (store true), once.
 * Formula in hw_vpu.c. */
double hw_vpu_f16_convert_cycles(const struct hw_spec *hw, double vregs,
				 bool store);

/* Cycles to reduce `in_vregs` input vregs to `out_vregs` output vregs
 * along the given axis (one combiner op of class c per step). */
double hw_vpu_reduce_cycles(const struct hw_spec *hw, double in_vregs,
			    double out_vregs, enum hw_reduce_axis axis,
			    enum hw_vpu_class c);

/* ---- memory (hw_mem.c) --------------------------------------------------- */

/* Sustained HBM <-> VMEM bytes per ns one TensorCore's DMAs see. */
double hw_mem_bytes_per_ns(const struct hw_spec *hw);

/* ns for `transfers` DMAs moving `bytes` in all between HBM and VMEM, when
 * nothing else overlaps them: latency per transfer plus bytes at the
 * sustained bandwidth. */
double hw_mem_dma_ns(const struct hw_spec *hw, double bytes,
		     double transfers);

/* ns for `bytes` across one device's share of its chip's PCIe link (host
 * offload: to or from host memory), no latency. Formula in hw_mem.c. */
double hw_mem_pcie_ns(const struct hw_spec *hw, double bytes);

/*
 * ns the DMA engine is busy moving `bytes` in `chunks` contiguous runs (no
 * latency), at the sustained rate bpns (hw_mem_bytes_per_ns(hw), worked
 * out once by a caller that times many streams; inline: the tile search
 * asks millions of times):
 *   ns = bytes / bpns + chunks x dma_chunk_ns
 * A strided transfer is a sequence of contiguous runs in HBM (given the
 * array's tiled physical layout and the block); the DMA engine pays a fixed
 * cost per run (its descriptor or stride step is issued, a new burst is
 * opened) on top of the bytes, so a block that is narrow in the minor dims
 * (many small runs) streams below the sustained rate. Assumes runs are
 * processed one after another by one engine and that the per-run cost does
 * not depend on the run's length or stride. Known wrong: runs shorter than
 * an HBM burst or a 4 KiB VMEM granule also waste bandwidth (the model
 * counts padded bytes only). Several operands' streams overlap their run
 * costs (sim/model.c dma_ns).
 * Source: TPU.md section 2 rules 3 (4 KiB VMEM granules, aligned (8,128)
 * transfers fastest) and 5 (the scalar core issues DMAs, one per cycle);
 * constant: hwspecs/<gen>.yaml hbm.dma_chunk_ns.
 */
static inline double hw_mem_stream_ns(const struct hw_spec *hw, double bpns,
				       double bytes, double chunks)
{
	double t = chunks > 0 ? chunks * hw->dma_chunk_ns : 0.0;
	if (bytes > 0 && bpns > 0)
		t += bytes / bpns;
	return t;
}

/* True when a kernel's own buffers of `bytes` fit its scoped VMEM. */
bool hw_mem_fits_vmem(const struct hw_spec *hw, double bytes);

/* Collectives over the inter-chip interconnect. */
enum hw_collective {
	HW_COLL_ALL_REDUCE = 0,
	HW_COLL_ALL_GATHER,
	HW_COLL_REDUCE_SCATTER,
	HW_COLL_ALL_TO_ALL,
	HW_COLL_PERMUTE,        /* collective-permute, send/recv: one hop */
	HW_COLL_KIND_COUNT
};

/* How a collective's group moves data along one axis it spans. */
enum hw_link {
	HW_LINK_RING = 0, /* an ICI axis the group spans whole, with
	                     wraparound: a ring, both neighbours each way */
	HW_LINK_LINE,     /* an ICI axis without wraparound, or part of one:
	                     a line, whose end chips have one neighbour */
	HW_LINK_DCN,      /* across slices, over the data-centre network */
	HW_LINK_COUNT
};
const char *hw_link_name(enum hw_link l); /* "ring", "line", "dcn" */

/* The axes one group of a collective spans on its slice (sim/slice.c
 * finds them): each with the devices along it. */
struct hw_span_axis {
	enum hw_place place;  /* which axis */
	int64_t k;            /* devices of the group along it (>= 2) */
	enum hw_link link;
};
struct hw_span {
	int n;                /* 0: one device, nothing moves */
	struct hw_span_axis axis[HW_PLACE_COUNT];
};

/* A collective's time (ns) and its parts, by the algorithm taken. */
struct hw_ici_cost {
	double ns;          /* max(transfer, reduce) + latency */
	double transfer_ns; /* bytes over the links */
	double reduce_ns;   /* VPU adds of received partial sums */
	double latency_ns;  /* per-hop latencies */
	bool one_shot;      /* one-shot all-reduce, not the ring */
	/* on a slice (hw_ici_torus); 0 otherwise */
	double dcn_ns;      /* of ns, the transfers and latencies across
	                       slices; the rest is ICI (and VPU adds) */
	int n_axes;
	struct hw_axis_cost {
		struct hw_span_axis axis;
		double transfer_ns, latency_ns;
	} axes[HW_PLACE_COUNT]; /* each axis spanned, in the order costed */
};

/* Costs a collective over `devices` participants where each device holds
 * `bytes` of the (full, unsharded for gather; input for reduce) buffer of
 * `bits`-bit elements, as a ring embedded in the torus (no slice given).
 * devices <= 1 costs nothing. Formula in hw_mem.c. */
void hw_ici_collective(const struct hw_spec *hw, enum hw_collective c,
		       double bytes, int64_t devices, int bits,
		       struct hw_ici_cost *out);

/* The same for one group on a slice, over the axes of the span s (in any
 * order: the formula orders them). Formula in hw_mem.c. */
void hw_ici_torus(const struct hw_spec *hw, enum hw_collective c,
		  double bytes, int bits, const struct hw_span *s,
		  struct hw_ici_cost *out);

#endif /* HW_UNITS_H */
