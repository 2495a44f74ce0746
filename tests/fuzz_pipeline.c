/*
 * fuzz_pipeline.c: libFuzzer target for everything after the parser. An
 * input that parses is built into kernel programs and costed on five specs
 * (v3: separate cores; v4: megacore; v7: 256-row MXUs; v3 with every
 * field it accepts at the bottom of its range, and at the top: the
 * physical bounds, slowest and fastest), an input of odd length as XLA
 * compiles it for v5e (sim_module_rewrite: row maxes made windows,
 * all-reduces combined, copies into donated buffers and out of
 * collectives' results, all-gathers beside an independent dot marked
 * async, which the round trip's schedule then places); every
 * tunable kernel's tile search runs (capped at a few thousand configs).
 * Aborts,
 * so that the fuzzer sees it, when
 *   - a time, byte count, cycle count or FLOP count is NaN, infinite or
 *     negative, or a program total is;
 *   - a kernel is costed below its roofline (the envelope's floor);
 *   - the tile search's best is slower than the default it also costed;
 *   - an unfused single module that the fusion pass writes out, or a
 *     fused one that the unfusion pass writes out, does not read back
 *     (sim_fuse_write's and sim_unfuse_write's output must parse);
 *   - a rewritten module fails XLA's shape checks (ir_verify);
 *   - a failure is not located (parse errors need line and column, other
 *     failures a message).
 * Built with -DTPUSIM_FUZZ=ON and clang (ASan + UBSan, float-cast-overflow,
 * no recovery). Specs are read from TPUSIM_SOURCE/hwspecs, else the source
 * tree this was built from.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hybrid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define N_SPECS 5
static struct hw_spec specs[N_SPECS];
static struct hw_spec rewrite_spec; /* v5e: every rewrite (sim/rewrite.c) */

/* base with each field in turn at the low (or high) end of its range,
 * where the spec stays consistent (hw_spec_apply says no otherwise). */
static void at_bounds(struct hw_spec *s, bool high)
{
	for (int i = 0; i < hw_spec_n_fields(); i++) {
		const struct hw_field_info *f = hw_spec_field_at(i);
		double v = high ? f->max : f->min;
		struct ts_diag d = {0};
		(void)hw_spec_apply(s, 1, &f, &v, NULL, &d);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static const char *const gens[N_SPECS] = {"v3", "v4", "v7", "v3", "v3"};
	const char *src = getenv("TPUSIM_SOURCE");
	for (int i = 0; i < N_SPECS; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/hwspecs/%s.yaml",
			 src ? src : TPUSIM_SOURCE_DIR, gens[i]);
		struct ts_diag d = {0};
		if (hw_spec_load(path, &specs[i], &d) != TS_OK) {
			ts_diag_print(&d, stderr);
			abort();
		}
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/hwspecs/v5e.yaml",
		 src ? src : TPUSIM_SOURCE_DIR);
	struct ts_diag d = {0};
	if (hw_spec_load(path, &rewrite_spec, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		abort();
	}
	at_bounds(&specs[3], false);
	at_bounds(&specs[4], true);
	return 0;
}

static void check_num(double v)
{
	if (!(v >= 0) || !isfinite(v))
		abort();
}

static void check_estimate(const struct sim_estimate *e)
{
	check_num(e->time_ns);
	check_num(e->mxu_cycles);
	check_num(e->vpu_cycles);
	check_num(e->dma_cycles);
	check_num(e->overhead_ns);
	check_num(e->vmem_bytes);
	check_num(e->flops);
	check_num(e->bytes_read);
	check_num(e->bytes_written);
	if (e->steps < 0)
		abort();
}

/* The plausibility envelope's floor: no modelled kernel is faster than
 * its roofline (sim_kernel_roofline, the HLO's meaning alone), on every
 * spec, extreme ones included. */
static void check_floor(const struct sim_kernel *k, const struct hw_spec *hw)
{
	struct sim_estimate r;
	struct ts_diag d = {0};
	if (!k->est.modelled || k->est.untiled ||
	    sim_kernel_roofline(k, hw, &r, &d) != TS_OK)
		return;
	if (k->est.time_ns < r.time_ns * (1 - 1e-9)) {
		fprintf(stderr, "kernel %s on %s: %g ns below its roofline %g ns\n",
			k->name, hw->name, k->est.time_ns, r.time_ns);
		abort();
	}
}

/* A failure must say what and (for input errors) where. */
static void check_failure(enum ts_status st, const struct ts_diag *d)
{
	if (st == TS_ERR_NOMEM || !d->msg[0])
		abort();
}

static void cost_program(struct sim_program *p, const struct hw_spec *hw)
{
	struct ts_diag d = {0};
	enum ts_status st = sim_program_estimate(p, hw, &d);
	if (st != TS_OK) {
		check_failure(st, &d);
		return;
	}
	check_num(p->total_ns);
	check_num(sim_program_host_ns(p, hw));
	for (int k = 0; k < p->n_kernels; k++) {
		const struct sim_kernel *kn = &p->kernels[k];
		check_num(kn->multiplicity);
		check_estimate(&kn->est);
		check_floor(kn, hw);
		if (!kn->tunable)
			continue;
		struct hyb_tile_opts o = {.top_k = 2, .max_configs = 2000};
		struct hyb_tile_result r;
		st = hyb_tile_search(kn, hw, &o, &r, &d);
		if (st != TS_OK) {
			check_failure(st, &d);
			continue;
		}
		check_estimate(&r.def.est);
		for (int i = 0; i < r.n_top; i++)
			check_estimate(&r.top[i].est);
		if (r.n_top > 0 && r.def.est.feasible &&
		    r.top[0].est.time_ns > r.def.est.time_ns)
			abort();
	}
}

/* Program time of m on hw fused by plan; NaN when it cannot be costed. */
/* The fusion pass on an unfused module (the xla policy, or for an input
 * whose last byte is odd the analytic one, which must predict no more
 * than the xla policy, memory-space assignment included), the unfusion
 * pass on a compiled one: what they write must parse. */
static void fuse_round_trip(const struct ir_module *m, const char *text,
			    size_t len)
{
	bool fused = !sim_module_unfused(m);
	struct sim_fusion_plan plan = {0};
	struct ts_diag d = {0};
	struct hyb_fuse_cost cost = {hyb_fuse_cost_analytic, &specs[0],
				     "analytic", &specs[0]};
	bool analytic = !fused && len > 0 && (text[len - 1] & 1);
	if (analytic) {
		enum ts_status pst = hyb_fusion_plan_build(m, &cost, &plan, &d);
		if (pst != TS_OK) {
			check_failure(pst, &d);
			return;
		}
		double tx, ta;
		sim_module_time(m, NULL, &specs[0], &tx, &d);
		sim_module_time(m, &plan, &specs[0], &ta, &d);
		if (isfinite(tx) && isfinite(ta) && ta > tx * (1 + 1e-9))
			abort();
	}
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	if (!f) {
		sim_fusion_plan_free(&plan);
		return;
	}
	struct sim_fuse_stats fs;
	int inlined;
	/* the values v7's memory-space assignment keeps in VMEM, in S(1),
	 * its cross-program prefetch, and its async all-reduces' schedule */
	struct sim_program placed = {0};
	struct sim_program_opts o = {.fusion = analytic ? &plan : NULL,
				     .vmem_room = sim_vmem_room(&specs[2]),
				     .schedule_hw = &specs[2]};
	bool place = !fused && sim_program_build(m, &o, &placed, &d) == TS_OK &&
		     sim_program_place(&placed, &specs[2], &d) == TS_OK;
	enum ts_status st =
		fused ? sim_unfuse_write(m, text, len, f, &inlined, &d)
		      : sim_fuse_write(m, text, len, analytic ? &plan : NULL,
				       place ? &placed : NULL, f, &fs, &d);
	fclose(f);
	sim_program_free(&placed);
	sim_fusion_plan_free(&plan);
	if (st == TS_OK) {
		struct ir_module **back = NULL;
		int nb = 0;
		struct ts_diag bd = {0};
		if (hlo_parse("fused.hlo", out, n, &back, &nb, &bd) != TS_OK) {
			fprintf(stderr, "%s output does not read back: %s\n%.*s\n",
				fused ? "unfused" : "fused", bd.msg, (int)n, out);
			abort();
		}
		for (int i = 0; i < nb; i++)
			ir_module_free(back[i]);
		ts_free(back);
	} else {
		check_failure(st, &d);
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse("fuzz.hlo", (const char *)data, size, &m,
				      &n, &d);
	if (st != TS_OK) {
		if (st != TS_ERR_PARSE || d.line < 1 || d.col < 1 || !d.msg[0])
			abort();
		return 0;
	}
	for (int i = 0; i < n; i++) {
		struct sim_rewrites done;
		if (size % 2 &&
		    (sim_module_rewrite(m[i], &rewrite_spec, &done, &d) != TS_OK ||
		     ir_verify(m[i], &d) != TS_OK)) {
			fprintf(stderr, "rewrite: %s\n", d.msg);
			abort();
		}
		struct sim_program p;
		struct sim_program_opts opts = {.default_trip_count = 0};
		st = sim_program_build(m[i], &opts, &p, &d);
		if (st == TS_OK) {
			for (int s = 0; s < N_SPECS; s++)
				cost_program(&p, &specs[s]);
			sim_program_free(&p);
			if (n == 1)
				fuse_round_trip(m[0], (const char *)data, size);
		} else {
			check_failure(st, &d);
		}
		ir_module_free(m[i]);
	}
	ts_free(m);
	return 0;
}
