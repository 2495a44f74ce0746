/*
 * hw_slice.c: the slice a program runs on (struct hw_slice in hw_spec.h):
 * its shape as `--topology 16x16` and a measured set's topology column
 * write it, whether it fits a generation, its devices, where each device
 * sits on it, and which of its axes wrap around. Read by sim/slice.c,
 * which maps a collective's groups onto the axes. docs/MODEL.md
 * "Collectives on a slice" is the governing note.
 */
#include "hw_spec.h"

#include <stdio.h>
#include <string.h>

static const char *const place_names[] = {
	[HW_PLACE_CORE] = "cores",
	[HW_PLACE_X] = "x",
	[HW_PLACE_Y] = "y",
	[HW_PLACE_Z] = "z",
	[HW_PLACE_SLICE] = "slices",
};
_Static_assert(TS_ARRAY_LEN(place_names) == HW_PLACE_COUNT,
	       "place_names must name every hw_place");

const char *hw_place_name(enum hw_place a)
{
	return (unsigned)a < HW_PLACE_COUNT ? place_names[a] : "invalid";
}

enum ts_status hw_slice_parse(const char *text, struct hw_slice *s,
			      struct ts_diag *d)
{
	const char *p = text;
	int n = 0;
	for (;;) {
		const char *at = p;
		long v = 0;
		while (*p >= '0' && *p <= '9' && v <= HW_SLICE_MAX_EXTENT)
			v = v * 10 + (*p++ - '0');
		if (p == at) {
			ts_diag_set(d, NULL, 0, (uint32_t)(at - text) + 1,
				    "expected a slice shape like 16x16 or "
				    "4x4x4");
			return TS_ERR_PARSE;
		}
		if (n == HW_SLICE_MAX_DIMS) {
			ts_diag_set(d, NULL, 0, (uint32_t)(at - text) + 1,
				    "at most %d dimensions (x, y, z)",
				    HW_SLICE_MAX_DIMS);
			return TS_ERR_PARSE;
		}
		while (*p >= '0' && *p <= '9')
			p++;
		if (v < 1 || v > HW_SLICE_MAX_EXTENT) {
			ts_diag_set(d, NULL, 0, (uint32_t)(at - text) + 1,
				    "'%.*s' chips along an axis: expected 1 to "
				    "%d", (int)(p - at), at,
				    HW_SLICE_MAX_EXTENT);
			return TS_ERR_PARSE;
		}
		s->dims[n++] = (int)v;
		if (*p == '\0')
			break;
		if (*p != 'x') {
			ts_diag_set(d, NULL, 0, (uint32_t)(p - text) + 1,
				    "expected 'x' between the chips along each "
				    "axis, like 16x16");
			return TS_ERR_PARSE;
		}
		p++;
	}
	s->n_dims = n;
	return TS_OK;
}

void hw_slice_format(const struct hw_slice *s, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < s->n_dims && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%d", i ? "x" : "",
				      s->dims[i]);
	if (s->count > 1 && n < cap)
		snprintf(buf + n, cap - n, ", %d slices", s->count);
}

enum ts_status hw_slice_check(const struct hw_spec *hw,
			      const struct hw_slice *s, struct ts_diag *d)
{
	if (s->n_dims != hw->ici_torus_dims) {
		ts_diag_set(d, NULL, 0, 0,
			    "%s's chips form a %dD torus: the slice needs %d "
			    "dimensions (e.g. %s), not %d", hw->name,
			    hw->ici_torus_dims, hw->ici_torus_dims,
			    hw->ici_torus_dims == 3 ? "4x4x4" : "16x16",
			    s->n_dims);
		return TS_ERR_SPEC;
	}
	if (s->count < 1 || s->count > HW_SLICE_MAX_COUNT) {
		ts_diag_set(d, NULL, 0, 0, "%d slices: expected 1 to %d",
			    s->count, HW_SLICE_MAX_COUNT);
		return TS_ERR_SPEC;
	}
	return TS_OK;
}

int64_t hw_slice_extent(const struct hw_spec *hw, enum hw_place a)
{
	const struct hw_slice *s = &hw->slice;
	switch (a) {
	case HW_PLACE_CORE:
		return hw_spec_chip_devices(hw);
	case HW_PLACE_X:
	case HW_PLACE_Y:
	case HW_PLACE_Z: {
		int i = (int)(a - HW_PLACE_X);
		return i < s->n_dims ? s->dims[i] : 1;
	}
	case HW_PLACE_SLICE:
		return s->n_dims ? s->count : 1;
	default:
		TS_ASSERT(!"hw_slice_extent: no such axis");
		return 1;
	}
}

int64_t hw_slice_devices(const struct hw_spec *hw)
{
	if (hw->slice.n_dims == 0)
		return 0;
	int64_t n = 1;
	for (int a = 0; a < HW_PLACE_COUNT; a++)
		n *= hw_slice_extent(hw, (enum hw_place)a);
	return n;
}

enum ts_status hw_slice_check_order(const struct hw_spec *hw,
				    const struct hw_slice *s, struct ts_diag *d)
{
	if (!s->at)
		return TS_OK;
	struct hw_spec on = *hw;
	on.slice = *s;
	on.slice.at = NULL;
	int64_t n = hw_slice_devices(&on);
	if (s->n_at != n) {
		ts_diag_set(d, NULL, 0, 0,
			    "the device order places %lld device%s; the slice "
			    "has %lld", (long long)s->n_at,
			    s->n_at == 1 ? "" : "s", (long long)n);
		return TS_ERR_SPEC;
	}
	int64_t *first = ts_malloc((size_t)n * sizeof *first);
	if (!first)
		return TS_ERR_NOMEM;
	for (int64_t i = 0; i < n; i++)
		first[i] = -1;
	enum ts_status st = TS_OK;
	for (int64_t dev = 0; dev < n && st == TS_OK; dev++) {
		/* the place's number in the default order (hw_slice_place) */
		int64_t at = 0;
		for (int a = HW_PLACE_COUNT - 1; a >= 0 && st == TS_OK; a--) {
			int64_t ext = hw_slice_extent(&on, (enum hw_place)a);
			int32_t v = s->at[dev][a];
			if (v < 0 || v >= ext) {
				ts_diag_set(d, NULL, 0, 0,
					    "device %lld is placed at %s %d: "
					    "the slice has %lld (0 to %lld)",
					    (long long)dev,
					    hw_place_name((enum hw_place)a), v,
					    (long long)ext, (long long)ext - 1);
				st = TS_ERR_SPEC;
			}
			at = at * ext + v;
		}
		if (st == TS_OK && first[at] >= 0) {
			ts_diag_set(d, NULL, 0, 0,
				    "devices %lld and %lld are placed on one "
				    "place", (long long)first[at],
				    (long long)dev);
			st = TS_ERR_SPEC;
		}
		if (st == TS_OK)
			first[at] = dev;
	}
	ts_free(first);
	return st;
}

/*
 * Device d's place: from the slice's device table when it has one (the
 * order the compile assigned, hw_slice.at), else the way JAX numbers the
 * devices of a slice:
 *   slice = d / per_slice, then within it the device's chip c and its
 *   core (core fastest: a chip's devices are consecutive ids), and the
 *   chip's coordinates with x fastest, then y, then z:
 *     core = r % devices_per_chip, c = r / devices_per_chip,
 *     x = c % X, y = (c / X) % Y, z = c / (X Y)
 * Assumes the default device order of jax.devices() (a v4 host's 2x2x1
 * lists ids 0 1 2 3 at (0,0,0) (1,0,0) (0,1,0) (1,1,0); v2 and v3 list a
 * chip's two cores as consecutive ids) and slices numbered one after
 * another. A mesh built with a device order of its own
 * (mesh_utils.create_device_mesh, MaxText's) renumbers the devices the HLO
 * names: without its table its groups are placed as if in this order.
 */
void hw_slice_place(const struct hw_spec *hw, int64_t d,
		    int64_t place[HW_PLACE_COUNT])
{
	if (hw->slice.at) {
		/* hw_slice_check: a table of the slice's every device */
		TS_ASSERT(d >= 0 && d < hw->slice.n_at);
		for (int a = 0; a < HW_PLACE_COUNT; a++)
			place[a] = hw->slice.at[d][a];
		return;
	}
	int64_t ext[HW_PLACE_COUNT];
	for (int a = 0; a < HW_PLACE_COUNT; a++)
		ext[a] = hw_slice_extent(hw, (enum hw_place)a);
	for (int a = 0; a < HW_PLACE_COUNT; a++) {
		place[a] = a == HW_PLACE_SLICE ? d : d % ext[a];
		d /= ext[a];
	}
}

/*
 * Wraparound on torus axis a of the slice, of length L:
 *   wraps = L is a multiple of ici.wrap_chips
 *           and, when ici.wrap_cube, so is every axis of the slice
 * v5e and v6e (2D, wrap_chips 16): an axis of the full pod's 16 wraps
 * whatever the other (an 8x16 wraps on its 16); v4, v5p (3D, wrap_chips
 * 4, wrap_cube): the optical switches close the rings of whole 4x4x4
 * cubes only, so a 4x4x8 wraps on every axis and a 2x2x4 on none.
 * Source: the scaling book (tpus.md, "TPU pods" and its footnote on
 * wraparound; hwspecs/<gen>.yaml ici.wrap_chips).
 */
bool hw_slice_wraps(const struct hw_spec *hw, enum hw_place a)
{
	const struct hw_slice *s = &hw->slice;
	int i = (int)(a - HW_PLACE_X), w = hw->ici_wrap_chips;
	if (i < 0 || i >= s->n_dims || s->dims[i] % w != 0)
		return false;
	for (int j = 0; hw->ici_wrap_cube && j < s->n_dims; j++)
		if (s->dims[j] % w != 0)
			return false;
	return true;
}
