/*
 * fuzz_gnn_file.c: libFuzzer target for gnn_model_read, the model file
 * reader. Any byte string must come back as TS_OK, TS_ERR_PARSE or
 * TS_ERR_NOMEM, never crash, hang or leak; a refusal must carry a message;
 * a file read must load a model whose parameters are all finite. Seeds:
 * learned/ (the shipped default.gnn). Built only with -DTPUSIM_FUZZ=ON
 * (clang), see tests/CMakeLists.txt.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gnn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gnn_model m;
	struct ts_diag d = {0};
	enum ts_status st = gnn_model_read(data, size, "fuzz.gnn", &m, &d);
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
