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

/*
 * ns = bytes / (pcie.bw_bytes_per_s / D)     D: devices per chip
 * A copy between HBM and host memory (S(5): host offload) streams over
 * the chip's PCIe link, its devices sharing it. Assumes the link's
 * one-way figure each way at once (PCIe is full duplex); transfers in
 * flight together in one direction queue on the program's timeline
 * (sim/program.c). Known wrong: pinned-host DMA may reach less.
 * Source: docs/TPU.md section 1 (PCIe per chip, SB).
 */
double hw_mem_pcie_ns(const struct hw_spec *hw, double bytes)
{
	double bw = hw->pcie_bw_bytes_per_s * 1e-9 / hw_spec_chip_devices(hw);
	return bytes > 0 && bw > 0 ? bytes / bw : 0.0;
}

/*
 * Capacity check of a kernel's own buffers: bytes <= vmem.scoped_bytes.
 * XLA confines a kernel's tiles to its scoped VMEM limit
 * (--xla_tpu_scoped_vmem_limit_kib: "the amount of vmem used for the
 * current hlo op", the rest for memory-space assignment's prefetches,
 * MaxText benchmarks/xla_flags_library.py); on v2-v4 that is all of VMEM
 * (TPU.md section 2 rule 4). Each spec's scoped_bytes says where its
 * figure comes from (the compiled zoo's largest kernel: v5e 15.5 MiB of
 * 16). A run that raises the limit (MaxText's recipes: 80-120 MiB on
 * v6e) is costed with --set vmem.scoped_bytes or a step set's set
 * column. The values memory-space assignment keeps in VMEM, which a
 * kernel reads in place, are outside the limit; their room is placement's
 * (sim/placement.c). Known wrong: a module compiled for a generation with
 * more VMEM keeps values there that a smaller one has no room for, and
 * this does not see it (the compiled zoo's v5e modules on v2-v4); XLA's
 * own working set of a kernel may differ from the model's (sim/model.c).
 */
bool hw_mem_fits_vmem(const struct hw_spec *hw, double bytes)
{
	return bytes <= hw->vmem_scoped_bytes;
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
	double share = hw_spec_chip_devices(hw);
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

static const char *const link_names[] = {
	[HW_LINK_RING] = "ring",
	[HW_LINK_LINE] = "line",
	[HW_LINK_DCN] = "dcn",
};
_Static_assert(TS_ARRAY_LEN(link_names) == HW_LINK_COUNT,
	       "link_names must name every hw_link");

const char *hw_link_name(enum hw_link l)
{
	return (unsigned)l < HW_LINK_COUNT ? link_names[l] : "invalid";
}

/*
 * A collective over one group on a slice (ns), over the axes its
 * devices span (struct hw_span: k_a devices along axis a), each
 * with a rate bw_a per device (bytes/ns), hops per pass h_a and a latency
 * per hop lat_a:
 *   ring (an ICI axis spanned whole, with wraparound):
 *       bw = L x link,     h = floor(k/2), lat = ici.latency_ns
 *   line (an ICI axis without wraparound, or part of one):
 *       bw = L/2 x link,   h = k - 1,      lat = ici.latency_ns
 *   dcn (across slices):
 *       bw = dcn.bw_bytes_per_s / D, h = k - 1, lat = dcn.latency_ns
 *   L = ici.links / ici.torus_dims, the links along an axis (one to each
 *   neighbour); link = ici.link_bw_bytes_per_s x ici.efficiency / D, one
 *   link one way; D = devices per chip (hw_spec_chip_devices).
 * The m ICI axes run at once on split data, the slices after them
 * (reduce within each slice, then across): the buffer is cut into m
 * chunks, chunk j taking the ICI axes in turn from axis j on (the axes in
 * order fastest first; ties in place order: cores, x, y, z), so that in
 * each of the m stages every axis carries one chunk:
 *   reduce-scatter (B = input): chunk j at stage s holds
 *       B_js = B / m / prod_{t<s} k_((j+t) mod m)
 *       transfer = sum_s max_j (k_a - 1)/k_a x B_js / bw_a,
 *                  a = (j + s) mod m
 *       latency  = sum_s max_j h_a x lat_a
 *     then each DCN axis in turn on what is left, B' = B / prod_ICI k:
 *       transfer += (k - 1)/k x B' / bw, latency += h x lat, B' /= k
 *       reduce   = R of every chunk's (k_a - 1)/k_a x B_js, and DCN's
 *   (one ICI axis: m = 1, the ring of that axis alone)
 *   all-gather (B = gathered): the same transfer and latency (the
 *       reduce-scatter run backwards), no reduce
 *   all-reduce: reduce-scatter then all-gather: 2 x transfer, 2 x latency,
 *       the reduce-scatter's reduce
 *   all-to-all (B = each device's buffer, which keeps its size):
 *       transfer = sum_a c_a x B / bw_a, latency = sum_a h_a x lat_a,
 *       c = floor(k^2/4)/k on ICI (the chunks crossing the busiest link of
 *       a ring or a line), (k - 1)/k over DCN (each sends its share once)
 *   permute: one hop, B / r + lat: r = dcn.bw_bytes_per_s / D and
 *       lat = dcn.latency_ns when the pair crosses slices, else r = link
 *       and lat = ici.latency_ns
 *   ns = max(transfer, reduce) + latency
 *   dcn_ns = sum over the dcn axes of their transfer + latency
 * R(b): reduce_ns above. Check: an all-gather of V bytes over a 16-ring
 * moves 15/16 x V / (2 link), the scaling book's V / W_bidi.
 * Assumes every group of the collective runs at once on links of its own;
 * a chip's devices share its links and DCN port; a ring's two directions
 * each carry half (a bidirectional ring); a line is limited by its end
 * chips' one neighbour; DCN is a switch, each chip's port the only limit.
 * Known wrong: the stages are taken as synchronous (each waits for its
 * slowest chunk); all-to-all runs its axes one after another; the
 * one-shot algorithm for small all-reduces
 * (hw_ici_collective) is not tried; a group strided along an axis shares
 * its links with its neighbour groups (costed as a line of its own); a
 * permute pays one hop however far apart its pair is; a chip's cores (v2,
 * v3, v7) are costed as an ICI axis (their on-chip exchange is not
 * published); ici.efficiency, fitted on a v3-8 ring, is applied to every
 * ICI axis, none to DCN.
 * Source: the scaling book's collective costs (sharding.md: over several
 * axes at once the bandwidth is the axes' sum; a bidirectional
 * AllGather over an axis with wraparound takes V / W_bidi in ceil(N/2)
 * hops, without wraparound (N - 1) one-way hops; AllReduce = ReduceScatter
 * + AllGather; an AllToAll a quarter of an AllGather on a bidirectional
 * ring), tpus.md (wraparound, DCN between slices), docs/TPU.md section 1
 * (the figures, hwspecs/<gen>.yaml ici.* and dcn.*).
 */
void hw_ici_torus(const struct hw_spec *hw, enum hw_collective c,
		  double bytes, int bits, const struct hw_span *s,
		  struct hw_ici_cost *out)
{
	memset(out, 0, sizeof *out);
	if (s->n == 0 || bytes <= 0 || (unsigned)c >= HW_COLL_KIND_COUNT)
		return;
	double dev = hw_spec_chip_devices(hw);
	double link = hw->ici_link_bw_bytes_per_s * 1e-9 * hw->ici_efficiency /
		      dev;
	double along = (double)hw->ici_links / hw->ici_torus_dims;
	double dcn = hw->dcn_bw_bytes_per_s * 1e-9 / dev;
	const double rate[HW_LINK_COUNT] = {
		[HW_LINK_RING] = along * link,
		[HW_LINK_LINE] = along / 2 * link,
		[HW_LINK_DCN] = dcn,
	};
	/* fastest first; insertion keeps place order among equals */
	out->n_axes = s->n;
	for (int i = 0; i < s->n; i++) {
		struct hw_axis_cost x = {.axis = s->axis[i]};
		int j = i;
		for (; j > 0 && rate[out->axes[j - 1].axis.link] <
				       rate[x.axis.link];
		     j--)
			out->axes[j] = out->axes[j - 1];
		out->axes[j] = x;
	}
	if (c == HW_COLL_PERMUTE) {
		/* the pair's hop: across slices when it crosses them */
		int i = out->n_axes - 1;
		while (i > 0 && out->axes[i].axis.link != HW_LINK_DCN)
			i--;
		struct hw_axis_cost *x = &out->axes[i];
		bool cross = x->axis.link == HW_LINK_DCN;
		x->transfer_ns = bytes / (cross ? dcn : link);
		x->latency_ns = cross ? hw->dcn_latency_ns : hw->ici_latency_ns;
		out->axes[0] = *x;
		out->n_axes = 1;
		out->transfer_ns = x->transfer_ns;
		out->latency_ns = x->latency_ns;
		out->ns = out->transfer_ns + out->latency_ns;
		out->dcn_ns = cross ? out->ns : 0;
		return;
	}
	/* the ICI axes first (fastest first), then DCN's */
	int m = 0;
	for (int i = 0; i < out->n_axes; i++)
		if (out->axes[i].axis.link != HW_LINK_DCN) {
			struct hw_axis_cost x = out->axes[i];
			for (int j = i; j > m; j--)
				out->axes[j] = out->axes[j - 1];
			out->axes[m++] = x;
		}
	double twice = c == HW_COLL_ALL_REDUCE ? 2.0 : 1.0;
	bool reduces = c == HW_COLL_ALL_REDUCE || c == HW_COLL_REDUCE_SCATTER;
	double b = bytes;
	if (c != HW_COLL_ALL_TO_ALL && m > 0) {
		/* m chunks at once, chunk j taking the axes from axis j on */
		for (int st = 0; st < m; st++) {
			double stage = 0, hop = 0;
			for (int j = 0; j < m; j++) {
				double sz = bytes / m;
				for (int t = 0; t < st; t++)
					sz /= (double)out->axes[(j + t) % m].axis.k;
				struct hw_axis_cost *x = &out->axes[(j + st) % m];
				double k = (double)x->axis.k, frac = (k - 1) / k;
				double hops = x->axis.link == HW_LINK_RING
						      ? floor(k / 2)
						      : k - 1;
				double t_ns = twice * frac * sz / rate[x->axis.link];
				x->transfer_ns += t_ns;
				x->latency_ns = twice * hops * hw->ici_latency_ns;
				stage = fmax(stage, t_ns);
				hop = fmax(hop, x->latency_ns);
				if (reduces)
					out->reduce_ns += reduce_ns(hw, frac * sz, bits);
			}
			out->transfer_ns += stage;
			out->latency_ns += hop;
		}
		for (int i = 0; i < m; i++)
			b /= (double)out->axes[i].axis.k;
	}
	for (int i = c == HW_COLL_ALL_TO_ALL ? 0 : m; i < out->n_axes; i++) {
		struct hw_axis_cost *x = &out->axes[i];
		double k = (double)x->axis.k, frac = (k - 1) / k;
		bool over_dcn = x->axis.link == HW_LINK_DCN;
		double hops = x->axis.link == HW_LINK_RING ? floor(k / 2) : k - 1;
		double moved = frac * b;
		if (c == HW_COLL_ALL_TO_ALL)
			moved = (over_dcn ? frac : floor(k * k / 4) / k) * bytes;
		x->transfer_ns = twice * moved / rate[x->axis.link];
		x->latency_ns = twice * hops *
				(over_dcn ? hw->dcn_latency_ns : hw->ici_latency_ns);
		if (reduces)
			out->reduce_ns += reduce_ns(hw, frac * b, bits);
		out->transfer_ns += x->transfer_ns;
		out->latency_ns += x->latency_ns;
		if (over_dcn)
			out->dcn_ns += x->transfer_ns + x->latency_ns;
		b /= k;
	}
	out->ns = fmax(out->transfer_ns, out->reduce_ns) + out->latency_ns;
}
