/*
 * fuzz_hw_spec.c: libFuzzer target for hw_spec_load_text. Any byte string
 * must come back as TS_OK, TS_ERR_SPEC or TS_ERR_NOMEM, never crash, hang
 * or leak; a failure must carry a message. Seeds: hwspecs/<gen>.yaml.
 * Built only with -DTPUSIM_FUZZ=ON (clang), see tests/CMakeLists.txt.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hw_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hw_spec spec;
	struct ts_diag d = { 0 };
	enum ts_status st = hw_spec_load_text("fuzz.yaml", (const char *)data,
					      size, &spec, &d);
	if (st != TS_OK && st != TS_ERR_SPEC && st != TS_ERR_NOMEM)
		abort();
	if (st != TS_OK && d.msg[0] == '\0')
		abort();
	if (st == TS_ERR_SPEC && d.line > 0 && d.src != (const char *)data)
		abort();
	return 0;
}
