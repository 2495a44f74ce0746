/*
 * fuzz_devices.c: libFuzzer target for a compile's device order
 * (val_devices_parse, the devices/ID.csv of a step set) and its check
 * against a slice (hw_slice_check_order, hw_slice_place). Any byte string must
 * come back as TS_OK, TS_ERR_PARSE or TS_ERR_NOMEM with a located message,
 * never crash, hang or leak. A table read is put on the slice its places
 * span (a 3D torus of the largest x, y, z + 1, as many cores a chip and
 * slices as its largest core and slice + 1): the check must pass exactly
 * when the table places one device on each place of it (found here by
 * sorting), and then every device must be where its line put it. Aborts,
 * so that the fuzzer sees it, when a property fails. Seeds:
 * tests/data/fuzz_devices.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw_spec.h"
#include "val.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The table's places, each as one number of the grid of extents ext
 * (slice slowest, core fastest), sorted: whether they are all distinct. */
static bool distinct(const int32_t (*at)[HW_PLACE_COUNT], int64_t n,
		     const int64_t ext[HW_PLACE_COUNT])
{
	int64_t *key = malloc((size_t)n * sizeof *key);
	if (!key)
		abort();
	for (int64_t i = 0; i < n; i++) {
		key[i] = 0;
		for (int a = HW_PLACE_COUNT - 1; a >= 0; a--)
			key[i] = key[i] * ext[a] + at[i][a];
	}
	qsort(key, (size_t)n, sizeof *key, cmp_i64);
	bool ok = true;
	for (int64_t i = 1; i < n && ok; i++)
		ok = key[i] != key[i - 1];
	free(key);
	return ok;
}

static void check_on_slice(const int32_t (*at)[HW_PLACE_COUNT], int64_t n)
{
	int64_t ext[HW_PLACE_COUNT] = {1, 1, 1, 1, 1};
	for (int64_t i = 0; i < n; i++)
		for (int a = 0; a < HW_PLACE_COUNT; a++)
			if (at[i][a] + (int64_t)1 > ext[a])
				ext[a] = at[i][a] + (int64_t)1;
	if (ext[HW_PLACE_X] > HW_SLICE_MAX_EXTENT ||
	    ext[HW_PLACE_Y] > HW_SLICE_MAX_EXTENT ||
	    ext[HW_PLACE_Z] > HW_SLICE_MAX_EXTENT ||
	    ext[HW_PLACE_SLICE] > HW_SLICE_MAX_COUNT ||
	    ext[HW_PLACE_CORE] > 8)
		return;
	struct hw_spec hw;
	memset(&hw, 0, sizeof hw);
	strcpy(hw.name, "fuzz");
	hw.ici_torus_dims = 3;
	hw.tensorcores_per_chip = (int)ext[HW_PLACE_CORE];
	hw.slice = (struct hw_slice){
		.n_dims = 3,
		.dims = {(int)ext[HW_PLACE_X], (int)ext[HW_PLACE_Y],
			 (int)ext[HW_PLACE_Z]},
		.count = (int)ext[HW_PLACE_SLICE],
		.at = at,
		.n_at = n,
	};
	int64_t places = 1;
	for (int a = 0; a < HW_PLACE_COUNT; a++)
		places *= ext[a];
	bool want = n == places && distinct(at, n, ext);
	struct ts_diag d = {0};
	enum ts_status st = hw_slice_check(&hw, &hw.slice, &d);
	if (st == TS_OK)
		st = hw_slice_check_order(&hw, &hw.slice, &d);
	if (st == TS_ERR_NOMEM)
		return;
	if ((st == TS_OK) != want || (st != TS_OK && !d.msg[0]))
		abort();
	for (int64_t i = 0; st == TS_OK && i < n; i++) {
		int64_t place[HW_PLACE_COUNT];
		hw_slice_place(&hw, i, place);
		for (int a = 0; a < HW_PLACE_COUNT; a++)
			if (place[a] != at[i][a])
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ts_arena arena;
	ts_arena_init(&arena);
	const int32_t (*at)[HW_PLACE_COUNT] = NULL;
	int64_t n = 0;
	struct ts_diag d = {0};
	enum ts_status st = val_devices_parse("fuzz.csv", (const char *)data,
					      size, &arena, &at, &n, &d);
	if (st != TS_OK && st != TS_ERR_PARSE && st != TS_ERR_NOMEM)
		abort();
	if (st != TS_OK && (!d.msg[0] || d.file == NULL))
		abort();
	if (st == TS_ERR_PARSE && (d.line == 0 || d.col == 0))
		abort();
	if (st == TS_OK) {
		if (n < 1 || !at)
			abort();
		check_on_slice(at, n);
	}
	ts_arena_free(&arena);
	return 0;
}
