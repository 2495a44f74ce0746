/*
 * fuzz_hlo_parse.c: libFuzzer target for the HLO parser. Any input must
 * either parse (then the IR is walked and checked for dangling links) or
 * fail with TS_ERR_PARSE and a located, non-empty diagnostic; sanitizers
 * catch memory errors. Built with -DTPUSIM_FUZZ=ON and clang; seed it with
 * the corpus files: fuzz_hlo_parse -jobs=1 DIR ../shared/data/hlo-corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks everything the parser built; a dangling pointer trips ASan. */
static void walk(const struct ir_module *m)
{
	int64_t total = 0;
	for (int c = 0; c < m->n_comps; c++) {
		const struct ir_computation *comp = m->comps[c];
		if (comp->index != c || !comp->root)
			abort();
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *in = comp->instrs[i];
			if (in->parent != comp || in->index != i)
				abort();
			for (int k = 0; k < in->n_operands; k++)
				if (!in->operands[k] || in->operands[k]->parent != comp)
					abort();
			for (int k = 0; k < in->n_called; k++)
				if (!in->called[k] ||
				    m->comps[in->called[k]->index] != in->called[k])
					abort();
			char buf[64];
			ir_shape_format(&in->shape, buf, sizeof buf);
			(void)ir_shape_padded_bytes(&in->shape);
			(void)ir_shape_bytes(&in->shape);
		}
		total += comp->n_instrs;
	}
	if (total != m->n_instrs || !m->entry)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse("fuzz.hlo", (const char *)data, size, &m,
				      &n, &d);
	if (st == TS_OK) {
		for (int i = 0; i < n; i++) {
			walk(m[i]);
			ir_module_free(m[i]);
		}
		ts_free(m);
	} else if (st != TS_ERR_PARSE || d.line < 1 || d.col < 1 || !d.msg[0] ||
		   m || n) {
		abort();
	}
	return 0;
}
