/*
 * hw_mem.c: memory and interconnect of one TensorCore: HBM <-> VMEM DMA
 * (sustained bandwidth hw_spec_hbm_bw(), a latency per transfer), VMEM
 * capacity, and collectives over ICI links. Used by sim/model.c for the
 * per-step DMA of operand blocks and by collective kernels.
 */
#include "hw_units.h"

#include <math.h>
#include <string.h>

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

/* Capacity check: bytes <= hw->vmem_bytes (TPU.md section 2 rule 4). */
bool hw_mem_fits_vmem(const struct hw_spec *hw, double bytes)
{
	return bytes <= hw->vmem_bytes;
}

/*
 * Collectives over n devices (ns), each device holding B bytes of
 * elements of `bits` storage bits. Two algorithms, XLA taking the faster:
 *   ring (bidirectional, on two of the chip's links):
 *     all-reduce      max(2 (n-1)/n x B / bw, R((n-1)/n x B)) + 2 (n-1) x lat
 *     reduce-scatter  max((n-1)/n x B / bw, R((n-1)/n x B))   + (n-1) x lat
 *                     (B = input size)
 *     all-gather      (n-1)/n x B / bw + (n-1) x lat  (B = gathered size)
 *     all-to-all      (n-1)/n x B / bw + (n-1) x lat
 *   one-shot all-reduce (small messages: every device sends its whole
 *   buffer to every other over all its links and sums what it receives):
 *                     max(floor(n^2 / 4) x B / (links x link),
 *                         R((n-1) x B)) + floor(n / 2) x lat
 *   permute           B / link + lat                      (one hop)
 *   bw   = min(links, 2) x link
 *   link = ici_link_bw x ici.efficiency / devices per chip
 *   R(b) = the VPU adds of b bytes of received partial sums: one simple
 *          op per vreg of (unpacked) elements, at the clock; it overlaps
 *          the transfers it follows, so it only shows when it is slower.
 * A chip whose TensorCores are separate devices (v2, v3: 2 per chip, no
 * megacore) shares its links among them: every core of the chip takes
 * part, so each gets 1/cores of them. ici.efficiency is the fraction of
 * the links' bandwidth XLA's collectives achieve, fitted on the TPU v3-8
 * all-reduce sweep (hwspecs/v3.yaml). The one-shot's bytes are relayed
 * along the ring the group is embedded in: the n-1 copies travel
 * sum_{d=1}^{n-1} min(d, n-d) = floor(n^2/4) link hops in all, spread over
 * all of the chip's links; its latency is the farthest device's,
 * floor(n/2) hops.
 * Assumes a ring embedded in the torus, no other traffic. Known wrong: 2D
 * and 3D torus algorithms (reduce per torus dimension) use more links, up
 * to 2x faster on large slices, and the spec states no slice shape to
 * choose them by; small messages are software-bound (the host term, not
 * this); a group within one chip never touches the ICI. Source: TPU.md
 * section 1 (ICI per link one-way bandwidth, SB), the scaling book's
 * collective costs (ring all-reduce = reduce-scatter + all-gather), the
 * one-shot / ring choice by message size of XLA's TPU collectives
 * (issue 9).
 */
/* R(b) above: ns of the VPU adds of b bytes of `bits`-bit elements. */
static double reduce_ns(const struct hw_spec *hw, double b, int bits)
{
	double ghz = hw->clock_hz > 0 ? hw->clock_hz * 1e-9 : 1.0;
	double elem_bytes = bits > 0 ? bits / 8.0 : 4.0;
	return hw_vpu_op_cycles(hw, hw_vpu_vregs(hw, b / elem_bytes, bits),
				HW_VPU_SIMPLE) /
	       ghz;
}

void hw_ici_collective(const struct hw_spec *hw, enum hw_collective c,
		       double bytes, int64_t devices, int bits,
		       struct hw_ici_cost *out)
{
	memset(out, 0, sizeof *out);
	if (devices <= 1 || bytes <= 0)
		return;
	double n = (double)devices;
	double all_links = hw->ici_links; /* at least 1 (hw_spec.c) */
	double links = all_links < 2 ? all_links : 2;
	double share = hw->megacore || hw->tensorcores_per_chip < 1
			       ? 1.0
			       : (double)hw->tensorcores_per_chip;
	double link = hw->ici_link_bw_bytes_per_s * 1e-9 * hw->ici_efficiency /
		      share; /* bytes/ns */
	double bw = links * link;
	if (bw <= 0)
		return;
	double frac = (n - 1.0) / n, lat = hw->ici_latency_ns;
	switch (c) {
	case HW_COLL_ALL_REDUCE: {
		out->transfer_ns = 2.0 * frac * bytes / bw;
		out->reduce_ns = reduce_ns(hw, frac * bytes, bits);
		out->latency_ns = 2.0 * (n - 1.0) * lat;
		double one_t = floor(n * n / 4.0) * bytes / (all_links * link);
		double one_r = reduce_ns(hw, (n - 1.0) * bytes, bits);
		double one_l = floor(n / 2.0) * lat;
		if (fmax(one_t, one_r) + one_l <
		    fmax(out->transfer_ns, out->reduce_ns) + out->latency_ns) {
			out->one_shot = true;
			out->transfer_ns = one_t;
			out->reduce_ns = one_r;
			out->latency_ns = one_l;
		}
		break;
	}
	case HW_COLL_REDUCE_SCATTER:
		out->reduce_ns = reduce_ns(hw, frac * bytes, bits);
		/* fall through */
	case HW_COLL_ALL_GATHER:
	case HW_COLL_ALL_TO_ALL:
		out->transfer_ns = frac * bytes / bw;
		out->latency_ns = (n - 1.0) * lat;
		break;
	case HW_COLL_PERMUTE:
		out->transfer_ns = bytes / link;
		out->latency_ns = lat;
		break;
	default:
		return;
	}
	out->ns = fmax(out->transfer_ns, out->reduce_ns) + out->latency_ns;
}
