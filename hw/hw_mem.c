/*
 * hw_mem.c: memory and interconnect of one TensorCore: HBM <-> VMEM DMA
 * (sustained bandwidth hw_spec_hbm_bw(), a latency per transfer), VMEM
 * capacity, and collectives over ICI links. Used by sim/model.c for the
 * per-step DMA of operand blocks and by collective kernels.
 */
#include "hw_units.h"

#include <math.h>

/* bytes/ns = hw_spec_hbm_bw() / 1e9: the peak HBM bandwidth one program
 * sees (its core's share of the chip unless megacore) times the sustained
 * streaming efficiency (hw->hbm_efficiency). Source: hwspecs/<gen>.yaml. */
double hw_mem_bytes_per_ns(const struct hw_spec *hw)
{
	double bw = hw_spec_hbm_bw(hw);
	return bw > 0 ? bw * 1e-9 : 0.0;
}

/*
 * ns = transfers x dma_latency_ns + bytes / (bytes per ns)
 * Assumes the transfers are issued back to back by the scalar core and
 * queue on one DMA engine, so latency is paid per transfer and bandwidth is
 * shared. Bytes are padded bytes (layout tiles), as the DMA moves whole
 * tiles. Known wrong: concurrent transfers overlap their latencies; the
 * cost of a strided transfer's many runs is hw_mem_stream_ns's, not
 * counted here. Source: TPU.md section 2 rules 3 and 5.
 */
double hw_mem_dma_ns(const struct hw_spec *hw, double bytes,
		     double transfers)
{
	double bpns = hw_mem_bytes_per_ns(hw);
	double t = transfers > 0 ? transfers * hw->dma_latency_ns : 0.0;
	if (bytes > 0 && bpns > 0)
		t += bytes / bpns;
	return t;
}

/*
 * ns = bytes / (bytes per ns) + chunks x dma_chunk_ns
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
double hw_mem_stream_ns(const struct hw_spec *hw, double bytes, double chunks)
{
	double bpns = hw_mem_bytes_per_ns(hw);
	double t = chunks > 0 ? chunks * hw->dma_chunk_ns : 0.0;
	if (bytes > 0 && bpns > 0)
		t += bytes / bpns;
	return t;
}

/* Capacity check: bytes <= hw->vmem_bytes (TPU.md section 2 rule 4). */
bool hw_mem_fits_vmem(const struct hw_spec *hw, double bytes)
{
	return bytes <= hw->vmem_bytes;
}

/*
 * Collectives on a ring of n devices (ns), each device holding B bytes:
 *   all-reduce      2 (n-1)/n x B / bw + 2 (n-1) x latency
 *   all-gather      (n-1)/n x B / bw + (n-1) x latency  (B = gathered size)
 *   reduce-scatter  (n-1)/n x B / bw + (n-1) x latency  (B = input size)
 *   all-to-all      (n-1)/n x B / bw + (n-1) x latency
 *   permute         B / link + latency                 (one hop)
 *   bw   = min(links, 2) x link
 *   link = ici_link_bw x ici.efficiency / devices per chip
 * A bidirectional ring sends both ways on two of the chip's links. A chip
 * whose TensorCores are separate devices (v2, v3: 2 per chip, no
 * megacore) shares its links among them: every core of the chip takes
 * part, so each gets 1/cores of them. ici.efficiency is the fraction of
 * the links' bandwidth XLA's collectives achieve, fitted on the TPU v3-8
 * all-reduce sweep (hwspecs/v3.yaml). Assumes a ring embedded in the
 * torus, no other traffic, bandwidth-optimal algorithms. Known wrong: 2D
 * and 3D torus algorithms use more links (up to 2x faster), small messages
 * are latency- and software-bound, and a group within one chip never
 * touches the ICI. Source: TPU.md section 1 (ICI per link one-way
 * bandwidth, SB), the scaling book's collective costs.
 */
double hw_ici_collective_ns(const struct hw_spec *hw, enum hw_collective c,
			    double bytes, int64_t devices)
{
	if (devices <= 1 || bytes <= 0)
		return 0.0;
	double n = (double)devices;
	double links = hw->ici_links < 2 ? (hw->ici_links > 0 ? hw->ici_links : 1)
					 : 2;
	double share = hw->megacore || hw->tensorcores_per_chip < 1
			       ? 1.0
			       : (double)hw->tensorcores_per_chip;
	double link = hw->ici_link_bw_bytes_per_s * 1e-9 * hw->ici_efficiency /
		      share; /* bytes/ns */
	double bw = links * link;
	if (bw <= 0)
		return 0.0;
	double frac = (n - 1.0) / n;
	switch (c) {
	case HW_COLL_ALL_REDUCE:
		return 2.0 * frac * bytes / bw + 2.0 * (n - 1.0) * hw->ici_latency_ns;
	case HW_COLL_ALL_GATHER:
	case HW_COLL_REDUCE_SCATTER:
	case HW_COLL_ALL_TO_ALL:
		return frac * bytes / bw + (n - 1.0) * hw->ici_latency_ns;
	case HW_COLL_PERMUTE:
		return bytes / link + hw->ici_latency_ns;
	default:
		return 0.0;
	}
}
