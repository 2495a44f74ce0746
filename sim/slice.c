/*
 * slice.c: collectives on a slice (docs/MODEL.md "Collectives on a
 * slice"). A collective kernel's groups placed on the slice the spec names
 * (hw_spec.slice, hw_slice_place), the axes each group spans and how
 * (struct hw_span), each costed by hw_ici_torus and the slowest taken;
 * without a slice, the ring of hw_ici_collective over the group's
 * devices, as before slices existed. Also the check that a program fits
 * its slice. Called by the model (model.c sim_plan_ici), the roofline,
 * --explain and the CLI's summary.
 */
#include "kernels_int.h"
#include "model.h"

#include <stdio.h>
#include <string.h>

_Static_assert(HW_SLICE_MAX_COUNT >= HW_SLICE_MAX_EXTENT &&
		       HW_SLICE_MAX_COUNT >= 8,
	       "struct seen is sized by the longest axis");
/* Marks of the coordinates a group's devices take, per place: all clear
 * between groups (group_span clears what it marked). */
struct seen {
	unsigned char at[HW_PLACE_COUNT][HW_SLICE_MAX_COUNT];
};

/* Device j of group g: r's, or j itself for the group of every device. */
static int64_t device(const struct ir_groups *r, int64_t g, int64_t j)
{
	return r ? ir_groups_device(r, g, j) : j;
}

/* The slices a group over k slices spans: hw->slice.span_count when
 * whatif sweeps it and the group is over all hw->slice.count, else k. */
static int64_t slices_spanned(const struct hw_spec *hw, int64_t k)
{
	return hw->slice.span_count > 0 && k == hw->slice.count
		       ? hw->slice.span_count
		       : k;
}

/*
 * The span of group g (n devices) of r on hw->slice into *s: for each
 * place (a chip's devices, x, y, z, the slices) the distinct coordinates
 * k_a of the group's devices; an axis with k_a >= 2 is spanned:
 *   slices             dcn
 *   cores of a chip    ring (a stand-in: hw_ici_torus says why)
 *   x, y, z            ring when the group covers the whole axis and it
 *                      wraps (hw_slice_wraps), else line
 * and a group over all hw->slice.count slices spans span_count instead
 * when that is set (whatif --sweep slices).
 * A group that is no grid (its size is not the product of its k_a: a
 * diagonal, a repeated id) is one line of its n devices along its last
 * axis, dcn when it crosses slices. false when a device is not on the
 * slice (sim_program_check_slice reports it).
 */
static bool group_span(const struct hw_spec *hw, const struct ir_groups *r,
		       int64_t g, int64_t n, struct seen *seen,
		       struct hw_span *s)
{
	int64_t k[HW_PLACE_COUNT] = {0}, devices = hw_slice_devices(hw);
	int64_t place[HW_PLACE_COUNT];
	int64_t j = 0;
	for (; j < n; j++) {
		int64_t d = device(r, g, j);
		if (d < 0 || d >= devices)
			break;
		hw_slice_place(hw, d, place);
		for (int a = 0; a < HW_PLACE_COUNT; a++) {
			k[a] += !seen->at[a][place[a]];
			seen->at[a][place[a]] = 1;
		}
	}
	bool on_slice = j == n;
	while (j-- > 0) {
		hw_slice_place(hw, device(r, g, j), place);
		for (int a = 0; a < HW_PLACE_COUNT; a++)
			seen->at[a][place[a]] = 0;
	}
	if (!on_slice)
		return false;
	int64_t grid = 1;
	s->n = 0;
	for (int a = 0; a < HW_PLACE_COUNT; a++) {
		enum hw_place p = (enum hw_place)a;
		if (k[a] < 2)
			continue;
		grid *= k[a];
		enum hw_link l = HW_LINK_LINE;
		if (p == HW_PLACE_SLICE)
			l = HW_LINK_DCN;
		else if (p == HW_PLACE_CORE ||
			 (k[a] == hw_slice_extent(hw, p) && hw_slice_wraps(hw, p)))
			l = HW_LINK_RING;
		s->axis[s->n++] = (struct hw_span_axis){p, k[a], l};
	}
	if (grid != n && s->n > 0) {
		struct hw_span_axis last = s->axis[s->n - 1];
		last.k = n;
		if (last.link != HW_LINK_DCN)
			last.link = HW_LINK_LINE;
		s->axis[0] = last;
		s->n = 1;
	}
	/* the slices axis of a group over every slice, at span_count */
	for (int i = 0; i < s->n; i++)
		if (s->axis[i].place == HW_PLACE_SLICE) {
			s->axis[i].k = slices_spanned(hw, s->axis[i].k);
			if (s->axis[i].k < 2)
				s->axis[i] = s->axis[--s->n];
		}
	return true;
}

void sim_collective_cost(const struct hw_spec *hw, enum hw_collective c,
			 double bytes, int64_t devices, int bits,
			 const struct ir_groups *r, int64_t dcn_slices,
			 struct hw_ici_cost *out, int64_t *group)
{
	if (group)
		*group = -1;
	if (dcn_slices > 0) {
		/* one axis: the slices, over DCN, with or without --topology
		 * (the module says it crosses them) */
		struct hw_span s = {0};
		int64_t k = slices_spanned(hw, dcn_slices);
		if (k >= 2)
			s.axis[s.n++] = (struct hw_span_axis){
				HW_PLACE_SLICE, k, HW_LINK_DCN};
		hw_ici_torus(hw, c, bytes, bits, &s, out);
		if (group)
			*group = 0;
		return;
	}
	/* no groups: one of every device when the group is the whole slice,
	 * else lists not known (a mesh's device order written out) */
	int64_t n_groups = r ? r->n_groups : 1;
	if (hw->slice.n_dims == 0 || (!r && devices != hw_slice_devices(hw))) {
		hw_ici_collective(hw, c, bytes, devices, bits, out);
		return;
	}
	struct seen seen;
	memset(&seen, 0, sizeof seen);
	memset(out, 0, sizeof *out);
	for (int64_t g = 0; g < n_groups; g++) {
		struct hw_span s;
		struct hw_ici_cost cost;
		int64_t n = r ? ir_groups_len(r, g) : devices;
		if (!group_span(hw, r, g, n, &seen, &s)) {
			hw_ici_collective(hw, c, bytes, devices, bits, out);
			if (group)
				*group = -1;
			return;
		}
		hw_ici_torus(hw, c, bytes, bits, &s, &cost);
		if (g == 0 || cost.ns > out->ns) {
			*out = cost;
			if (group)
				*group = g;
		}
	}
}

void sim_collective_ici(const struct sim_kernel *k, const struct hw_spec *hw,
			struct hw_ici_cost *out, int64_t *group)
{
	enum hw_collective c;
	double bytes, hbm_bytes;
	int64_t devices;
	int bits;
	sim_collective_of(k, &c, &bytes, &hbm_bytes, &devices, &bits);
	sim_collective_cost(hw, c, bytes, devices, bits, k->groups,
			    sim_megascale_slices(k->instr), out, group);
}

bool sim_program_exchanges(const struct sim_program *p)
{
	for (int i = 0; i < p->n_kernels; i++)
		if (p->kernels[i].instr &&
		    sim_megascale_slices(p->kernels[i].instr))
			return true;
	return false;
}

bool sim_program_per_slice(const struct sim_program *p,
			   const struct hw_spec *hw)
{
	const struct ir_module *m = p->module;
	int64_t devices = m->replica_count * m->num_partitions;
	return hw->slice.n_dims > 0 && hw->slice.count > 1 &&
	       devices * hw->slice.count == hw_slice_devices(hw);
}

enum ts_status sim_program_check_slice(const struct sim_program *p,
				       const struct hw_spec *hw,
				       struct ts_diag *d)
{
	if (hw->slice.n_dims == 0)
		return TS_OK;
	const struct ir_module *m = p->module;
	int64_t want = m->replica_count * m->num_partitions;
	int64_t have = hw_slice_devices(hw);
	char shape[64];
	hw_slice_format(&hw->slice, shape, sizeof shape);
	/* a multi-slice program XLA compiled per slice (MegaScale,
	 * sim_program_per_slice) runs on one slice's devices */
	if (sim_program_per_slice(p, hw))
		have /= hw->slice.count;
	if (want != have) {
		ts_diag_set(d, m->file, m->line, 1,
			    "the module runs on %lld device%s (replica_count "
			    "%lld x num_partitions %lld); the slice %s has "
			    "%lld (%s: %d per chip)", (long long)want,
			    want == 1 ? "" : "s",
			    (long long)m->replica_count,
			    (long long)m->num_partitions, shape,
			    (long long)have, hw->name,
			    hw_spec_chip_devices(hw));
		return TS_ERR_SPEC;
	}
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		const struct ir_groups *r = k->groups;
		int64_t across = k->instr ? sim_megascale_slices(k->instr) : 0;
		if (across && across != hw->slice.count) {
			ts_diag_set(d, m->file, k->instr->line, k->instr->col,
				    "'%s' is an exchange over %lld slices "
				    "(_xla_megascale_target), but the slice "
				    "is %s", k->name, (long long)across, shape);
			return TS_ERR_SPEC;
		}
		for (int64_t g = 0; r && g < r->n_groups; g++)
			for (int64_t j = 0; j < ir_groups_len(r, g); j++) {
				int64_t dev = ir_groups_device(r, g, j);
				if (dev < have)
					continue;
				ts_diag_set(d, m->file, k->instr->line,
					    k->instr->col,
					    "collective '%s': device %lld of "
					    "group %lld is not on the slice %s "
					    "(devices 0 to %lld)", k->name,
					    (long long)dev, (long long)g, shape,
					    (long long)have - 1);
				return TS_ERR_SPEC;
			}
	}
	return TS_OK;
}
