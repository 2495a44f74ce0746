/*
 * fuzz_gnn_file.c: libFuzzer target for gnn_model_read, the model file
 * reader. Any byte string must come back as TS_OK, TS_ERR_PARSE or
 * TS_ERR_NOMEM, never crash, hang or leak; a refusal must carry a message;
 * a file read must load a model whose parameters are all finite. Most
 * mutations would only break the checksum, so an input whose last byte is
 * odd is read with its checksum recomputed first: the mutations then reach
 * every field. Seeds: learned/ (the shipped default.gnn). Built only with -DTPUSIM_FUZZ=ON
 * (clang), see tests/CMakeLists.txt.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gnn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FNV-1a 64 over the bytes before the last 8, written into them. */
static void reseal(uint8_t *b, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i + 8 < n; i++)
		h = (h ^ b[i]) * 0x100000001b3u;
	for (int i = 0; i < 8; i++)
		b[n - 8 + i] = (uint8_t)(h >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gnn_model m;
	struct ts_diag d = {0};
	uint8_t *copy = NULL;
	if (size > 8 && (data[size - 1] & 1)) {
		if (!(copy = malloc(size)))
			return 0;
		memcpy(copy, data, size);
		reseal(copy, size);
		data = copy;
	}
	enum ts_status st = gnn_model_read(data, size, "fuzz.gnn", &m, &d);
	free(copy);
	if (st != TS_OK && st != TS_ERR_PARSE && st != TS_ERR_NOMEM)
		abort();
	if (st != TS_OK && d.msg[0] == '\0')
		abort();
	if (st == TS_OK) {
		for (size_t i = 0; i < m.n_params; i++)
			if (!isfinite(m.params[i]))
				abort();
		gnn_model_free(&m);
	}
	return 0;
}
