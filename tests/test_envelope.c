/*
 * test_envelope.c: the plausibility envelope on every module of
 * ../shared/data (the corpus, the whole programs and every measured set's
 * modules) and of the compiled zoo (data/compiled) on every spec. Every
 * kernel is costed with its default config (sim_program_estimate) and
 * compared with its roofline (sim_kernel_roofline: every unit at peak,
 * each byte moved once, plus the launch). Asserted: every kernel above
 * 10 x roofline + 5 us has a named reason
 * (sim_kernel_why, what `run` prints in its warning), and the kernels
 * with no feasible config and those above the envelope are exactly the
 * ones counted here on the round's tree, each printed with its reason:
 * a change that adds one fails, one that removes one updates the count
 * (docs/MODEL.md "Plausibility envelope" lists them); no kernel is below
 * its roofline.
 * A text met again on the same spec (the zoo's pre-optimisation modules,
 * the same on up to four generations) is costed once: by its FNV-1a hash
 * and length. The sanitizer build takes every 10th file. The ../shared
 * part skips without TPUSIM_SHARED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "test_util.h"

#ifdef TPUSIM_SANITIZED
#define SAMPLE 10
#else
#define SAMPLE 1
#endif

struct totals {
	const struct hw_spec *hw;
	int files, kernels, infeasible, above, below, again;
	int n_seen;
	uint64_t (*seen)[2]; /* the texts costed: hash, length */
};

/* Whether t has costed this text before; remembers it if not. */
static bool seen_before(struct totals *t, const char *text, size_t len)
{
	uint64_t h = ts_fnv1a(TS_FNV1A_BASIS, text, len);
	for (int i = 0; i < t->n_seen; i++)
		if (t->seen[i][0] == h && t->seen[i][1] == len)
			return true;
	t->seen = realloc(t->seen, (size_t)(t->n_seen + 1) * sizeof *t->seen);
	assert_non_null(t->seen);
	t->seen[t->n_seen][0] = h;
	t->seen[t->n_seen++][1] = len;
	return false;
}

static void check_text(const char *rel, const char *text, size_t len,
		       void *ctx)
{
	struct totals *t = ctx;
	if (seen_before(t, text, len)) {
		t->again++;
		return;
	}
	struct tu_built b; /* built for the spec, as run builds it */
	struct sim_program_opts po = {.vmem_room = sim_vmem_room(t->hw)};
	tu_build_file(rel, text, len, &po, &b);
	struct ts_diag d = {0};
	if (sim_program_estimate(&b.p, t->hw, &d) != TS_OK)
		fail_msg("%s on %s: %s", rel, t->hw->name, d.msg);
	t->files++;
	for (int i = 0; i < b.p.n_kernels; i++) {
		const struct sim_kernel *k = &b.p.kernels[i];
		struct sim_estimate r;
		if (!k->est.modelled || k->est.untiled)
			continue;
		t->kernels++;
		if (sim_kernel_roofline(k, t->hw, &r, &d) != TS_OK)
			fail_msg("%s %s: roofline: %s", rel, k->name, d.msg);
		/* the roofline is a floor (sim/roofline.c) */
		if (k->est.time_ns < r.time_ns * (1 - 1e-9)) {
			print_message("%s %s %s: %g ns below its roofline "
				      "%g ns\n", t->hw->name, rel, k->name,
				      k->est.time_ns, r.time_ns);
			t->below++;
		}
		/* the same test as sim_kernel_plausible, written out */
		bool above = k->est.time_ns > 10.0 * r.time_ns + 5000.0;
		if (above != (k->est.feasible &&
			      !sim_kernel_plausible(k, &k->est, t->hw)) &&
		    k->est.feasible)
			fail_msg("%s %s: sim_kernel_plausible disagrees", rel,
				 k->name);
		if (!above && k->est.feasible)
			continue;
		char why[sizeof d.msg];
		if (sim_kernel_why(k, t->hw, why, sizeof why, &d) != TS_OK ||
		    !why[0])
			fail_msg("%s %s on %s: no reason", rel, k->name,
				 t->hw->name);
		t->infeasible += !k->est.feasible;
		t->above += above;
		print_message("%s %s %s (%s): %.3g x roofline: %s\n",
			      t->hw->name, rel, k->name,
			      ir_op_name(k->main_op), k->est.time_ns / r.time_ns,
			      why);
	}
	tu_built_free(&b);
}

/* What one collection of modules is held to on one spec: the kernels
 * with no feasible config and those above the envelope, counted on the
 * round's tree (the printed list names each with its reason). */
struct want {
	const char *gen;
	int infeasible, above;
};

/* Costs every module of folders[] (under data) on each spec of want[],
 * prints and checks the counts; none below its roofline. */
static void check_folders(const char *data, const char *const *folders,
			  size_t n_folders, const struct want *want,
			  size_t n_want)
{
	for (size_t g = 0; g < n_want; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(want[g].gen, &hw))
			skip();
		struct totals t = {.hw = &hw};
		for (size_t s = 0; s < n_folders; s++)
			tu_each_hlo(data, folders[s], SAMPLE, check_text, &t);
		free(t.seen);
		print_message("%s: %d files (and %d the same as one before), "
			      "%d kernels: %d with no feasible config, %d above "
			      "10 x roofline + 5 us, %d below the roofline\n",
			      want[g].gen, t.files, t.again, t.kernels,
			      t.infeasible, t.above, t.below);
		assert_int_equal(t.below, 0);
		if (SAMPLE == 1) {
			assert_int_equal(t.infeasible, want[g].infeasible);
			assert_int_equal(t.above, want[g].above);
		}
	}
}

/* Every module of ../shared/data on every spec. */
static void test_envelope(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !*shared) {
		print_message("TPUSIM_SHARED is not set: skipping the "
			      "envelope test\n");
		skip();
	}
	char data[1024];
	snprintf(data, sizeof data, "%s/data", shared);
	static const char *const sets[] = {
		"hlo-corpus", "hlo-programs", "tpugraphs-tile-v3/modules",
		"tpuv3-ops/modules", "tpuv4-ops/modules",
		"tpuv3-allreduce/modules"};
	static const struct want want[] = {
		{"v2", 0, 1}, {"v3", 0, 1}, {"v4", 0, 1}, {"v5e", 0, 4},
		{"v5p", 0, 2}, {"v6e", 0, 4}, {"v7", 0, 2},
	};
	check_folders(data, sets, TS_ARRAY_LEN(sets), want, TS_ARRAY_LEN(want));
}

/* Every module of the compiled zoo (data/compiled: what XLA's TPU
 * compiler made, its per-device module before fusion and its
 * pre-optimisation input) on every spec. Known wrong, not counted: a
 * module compiled for a generation with more VMEM (v5e's 128 MiB) keeps
 * values in VMEM that a smaller one (v2-v4: 16 MiB) has no room for; a
 * kernel reads them in place, outside its scoped VMEM (hw_mem_fits_vmem),
 * so no kernel is infeasible for it. docs/MODEL.md "Plausibility
 * envelope". */
static void test_envelope_zoo(void **state)
{
	(void)state;
	const char *src = getenv("TPUSIM_SOURCE");
	if (!src)
		skip();
	char data[1024];
	snprintf(data, sizeof data, "%s/data", src);
	static const char *const gens[] = {
		"compiled/v2", "compiled/v3", "compiled/v4", "compiled/v5e",
		"compiled/v5p", "compiled/v6e", "compiled/v7"};
	static const struct want want[] = {
		{"v2", 0, 104}, {"v3", 0, 95}, {"v4", 0, 73}, {"v5e", 0, 125},
		{"v5p", 0, 73},  {"v6e", 0, 125},  {"v7", 0, 54},
	};
	check_folders(data, gens, TS_ARRAY_LEN(gens), want, TS_ARRAY_LEN(want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_envelope_zoo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
