/*
 * test_kernels_data.c: kernel extraction over every module of the shared
 * data ($TPUSIM_SHARED/data: tpugraphs-tile-v3, tpuv4-ops, tpuv3-ops,
 * hlo-corpus):
 * no error, every kernel has members and finite non-negative work, and
 * with $TPUSIM_SOURCE the program costs without error on v3/v4; and the
 * kernel lists of known measured modules (TPU.md section 3 tiled tensors,
 * the fusion groups of jnp softmax / layer norm / activations).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_spec.h"
#include "ir.h"
#include "sim.h"
#include "test_util.h"

/* One parsed file and its first module's program. */
struct loaded {
	char *text;
	struct ir_module **m;
	int n;
	struct sim_program p;
};

static const char *shared_dir(void)
{
	return getenv("TPUSIM_SHARED");
}

static bool work_ok(const struct sim_work *w)
{
	const double v[] = {w->flops, w->mxu_macs, w->transcendentals,
			    w->bytes_read, w->bytes_written,
			    w->vpu_elem_ops[HW_VPU_SIMPLE],
			    w->vpu_elem_ops[HW_VPU_DIVIDE],
			    w->vpu_elem_ops[HW_VPU_TRANSCEND],
			    w->vpu_elem_ops[HW_VPU_TRIG]};
	for (size_t i = 0; i < TS_ARRAY_LEN(v); i++)
		if (!(v[i] >= 0) || !isfinite(v[i]))
			return false;
	return true;
}

/* Builds every module of a file, checks each kernel, and costs the
 * program (model and roofline) on hw when given; counts modules and
 * kernels. Returns false (and prints) on a parse error, fails the test on
 * a build or estimate error. */
static bool check_file(const char *path, const struct hw_spec *hw,
		       int *n_modules, long *n_kernels)
{
	char *text = NULL;
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	if (hlo_parse_file(path, &text, &m, &n, &d) != TS_OK) {
		fprintf(stderr, "not parsed (parser's part): ");
		ts_diag_print(&d, stderr);
		ts_free(text);
		return false;
	}
	for (int i = 0; i < n; i++) {
		struct sim_program p;
		struct sim_program_opts opts = {.default_trip_count = 0};
		if (sim_program_build(m[i], &opts, &p, &d) != TS_OK) {
			ts_diag_print(&d, stderr);
			fail_msg("%s: module %d: build failed: %s", path, i,
				 d.msg);
		}
		for (int k = 0; k < p.n_kernels; k++) {
			const struct sim_kernel *kn = &p.kernels[k];
			if (kn->n_members < 1 || !kn->members || !kn->instr ||
			    !kn->tiled || !work_ok(&kn->work) ||
			    !(kn->multiplicity >= 0))
				fail_msg("%s: kernel %s: no members, no tiled "
					 "instruction or bad work",
					 path, kn->name);
			struct sim_estimate e;
			if (hw && sim_kernel_roofline(kn, hw, &e, &d) != TS_OK)
				fail_msg("%s: kernel %s: roofline: %s", path,
					 kn->name, d.msg);
			if (hw && !(e.time_ns >= 0))
				fail_msg("%s: kernel %s: roofline time %g",
					 path, kn->name, e.time_ns);
		}
		if (hw && sim_program_estimate(&p, hw, &d) != TS_OK) {
			ts_diag_print(&d, stderr);
			fail_msg("%s: module %d: estimate failed: %s", path, i,
				 d.msg);
		}
		if (hw && !(p.total_ns >= 0 && isfinite(p.total_ns)))
			fail_msg("%s: module %d: total %g ns", path, i,
				 p.total_ns);
		(*n_modules)++;
		*n_kernels += p.n_kernels;
		sim_program_free(&p);
		ir_module_free(m[i]);
	}
	ts_free(m);
	ts_free(text);
	return true;
}

static void check_dir(const char *sub, const char *gen)
{
	struct hw_spec spec;
	const struct hw_spec *hw = tu_load_spec(gen, &spec) ? &spec : NULL;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/data/%s", shared_dir(), sub);
	DIR *dp = opendir(dir);
	if (!dp)
		fail_msg("cannot open %s", dir);
	int n_files = 0, n_unparsed = 0, n_modules = 0;
	long n_kernels = 0;
	struct dirent *e;
	while ((e = readdir(dp)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".hlo") != 0)
			continue;
		char path[8192];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		n_files++;
		if (!check_file(path, hw, &n_modules, &n_kernels))
			n_unparsed++;
	}
	closedir(dp);
	printf("%s: %d files, %d modules, %ld kernels, %d files not parsed, "
	       "costed on %s\n",
	       sub, n_files, n_modules, n_kernels, n_unparsed,
	       hw ? gen : "nothing (TPUSIM_SOURCE unset)");
	assert_true(n_files > 0);
	/* Every shared module is one XLA printed or accepts: a file tpusim
	 * cannot read is a defect of tpusim, not a count to report. */
	if (n_unparsed)
		fail_msg("%s: %d of %d files not parsed (listed above)", sub,
			 n_unparsed, n_files);
}

static void test_all_tpugraphs(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	check_dir("tpugraphs-tile-v3/modules", "v3");
}

static void test_all_tpuv4(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	check_dir("tpuv4-ops/modules", "v4");
}

static void test_all_tpuv3(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	check_dir("tpuv3-ops/modules", "v3");
}

static void test_all_tpuv3_allreduce(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	check_dir("tpuv3-allreduce/modules", "v3");
}

static void test_all_corpus(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	check_dir("hlo-corpus", "v4");
}

static void load(const char *rel, struct loaded *l)
{
	memset(l, 0, sizeof *l);
	char path[4096];
	snprintf(path, sizeof path, "%s/data/%s", shared_dir(), rel);
	struct ts_diag d = {0};
	if (hlo_parse_file(path, &l->text, &l->m, &l->n, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("cannot parse %s", path);
	}
	if (sim_program_build(l->m[0], NULL, &l->p, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("cannot build %s", path);
	}
}

static void unload(struct loaded *l)
{
	sim_program_free(&l->p);
	for (int i = 0; i < l->n; i++)
		ir_module_free(l->m[i]);
	ts_free(l->m);
	ts_free(l->text);
}

static int64_t dim(const struct ir_instr *in, int i)
{
	return in->shape.dims[i];
}

/* TPU.md section 3: fusion.191 tiles its convolution's output
 * f32[32,12,12,384]; fusion.232 the reduce's input [32,26,26,192]; copy.25
 * its result. Each module is one kernel. */
static void test_tpugraphs_tiled(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	struct loaded l;
	load("tpugraphs-tile-v3/modules/fusion.191.hlo", &l);
	assert_int_equal(l.p.n_kernels, 1);
	const struct sim_kernel *k = &l.p.kernels[0];
	assert_int_equal(k->main_op, IR_OP_CONVOLUTION);
	assert_int_equal(k->tiled->op, IR_OP_CONVOLUTION);
	assert_int_equal(dim(k->tiled, 3), 384);
	assert_true(k->tunable);
	assert_true(k->work.mxu_macs > 0);
	unload(&l);

	load("tpugraphs-tile-v3/modules/fusion.232.hlo", &l);
	assert_int_equal(l.p.n_kernels, 1);
	k = &l.p.kernels[0];
	assert_int_equal(k->main_op, IR_OP_REDUCE);
	assert_string_equal(k->tiled->name, "select.206");
	unload(&l);

	load("tpugraphs-tile-v3/modules/copy.25.hlo", &l);
	assert_int_equal(l.p.n_kernels, 1);
	assert_int_equal(l.p.kernels[0].kind, SIM_KERNEL_COPY);
	unload(&l);
}

/* Pre-optimization op modules: the kernel counts the grouping rule gives
 * (grouping.c), and where tpuv4-ops profiled the program
 * (details.csv), the kernels the profile shows. */
static void test_op_groups(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	static const struct {
		const char *file;
		int n_kernels;
	} cases[] = {
		{"tpuv3-ops/modules/softmax_f32_1024x4096.hlo", 3},
		{"tpuv3-ops/modules/layernorm_f32_1024x4096.hlo", 5},
		{"tpuv3-ops/modules/gelu_tanh_f32_1024.hlo", 1},
		{"tpuv3-ops/modules/matmul_bf16_m1024_n12288_k12288.hlo", 1},
		{"tpuv4-ops/modules/relu_f16_1024.hlo", 1},
		{"tpuv4-ops/modules/sigmoid_f16_1024.hlo", 1},
		{"tpuv4-ops/modules/elu_f16_1024.hlo", 1},
		{"tpuv4-ops/modules/binary_step_f16_1024.hlo", 1},
		/* the profile: convert_reduce_fusion, fusion.3, fusion.1,
		 * fusion.4, divide_convert_fusion; the module computes the
		 * mean twice and the per-row mean is two small kernels here,
		 * one in XLA's (CSE) */
		{"tpuv4-ops/modules/layer_norm_f16_10x1024x1024.hlo", 6},
		/* convert_reduce_fusion, fusion.1 (the rsqrt per row),
		 * divide_convert_fusion */
		{"tpuv4-ops/modules/rms_norm_f16_1x1024x1024.hlo", 3},
		{"tpuv4-ops/modules/batch_norm_inference_f16_128x128x32x128.hlo", 1},
		/* reduce-window, then the divide as its own kernel: the
		 * profile shows reduce-window.10 + broadcast_multiply_fusion */
		{"tpuv4-ops/modules/avgpool_f16_1x128x1024x1024.hlo", 2},
		{"tpuv4-ops/modules/maxpool_f16_1x128x1024x1024.hlo", 1},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
		struct loaded l;
		load(cases[i].file, &l);
		if (l.p.n_kernels != cases[i].n_kernels)
			fail_msg("%s: %d kernels, expected %d", cases[i].file,
				 l.p.n_kernels, cases[i].n_kernels);
		unload(&l);
	}
}

/*
 * The relayout copies XLA puts after pooling kernels (kernels.c
 * "Relayouts at the program's result"): tpuv4-ops details.csv lists each
 * kernel's profiled sub-events; the program of every max- and
 * average-pooling module must have a relayout kernel exactly when its
 * profile has a `copy` event (242 of the 585, counted from the CSV).
 */
static void test_pool_relayouts(void **state)
{
	(void)state;
	if (!shared_dir())
		skip();
	char path[4096];
	snprintf(path, sizeof path, "%s/data/tpuv4-ops/details.csv",
		 shared_dir());
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	static char line[65536];
	int events = -1, n_pools = 0, n_copies = 0, n_wrong = 0;
	if (fgets(line, sizeof line, f)) {
		int col = 0;
		for (char *c = strtok(line, ",\n"); c; c = strtok(NULL, ",\n"), col++)
			if (!strcmp(c, "sub_events_mean_ns_count"))
				events = col;
	}
	assert_true(events > 0);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "maxpool_", 8) && strncmp(line, "avgpool_", 8))
			continue;
		char *id = line, *ev = NULL;
		int col = 0;
		for (char *c = line; *c && *c != '\n'; c++)
			if (*c == ',') {
				*c = 0;
				if (++col == events)
					ev = c + 1;
			}
		assert_non_null(ev);
		bool copy = !strncmp(ev, "copy=", 5) || strstr(ev, ";copy=");
		char rel[512];
		snprintf(rel, sizeof rel, "tpuv4-ops/modules/%.400s.hlo", id);
		struct loaded l;
		load(rel, &l);
		bool relayout = false;
		for (int i = 0; i < l.p.n_kernels; i++) {
			const char *name = l.p.kernels[i].name;
			size_t n = strlen(name);
			relayout |= n > 9 && !strcmp(name + n - 9, ".relayout");
		}
		unload(&l);
		n_pools++;
		n_copies += copy;
		if (copy != relayout) {
			n_wrong++;
			printf("%s: profile %s a copy, the program %s a relayout\n",
			       id, copy ? "has" : "has no", relayout ? "has" : "has no");
		}
	}
	fclose(f);
	printf("pooling: %d kernels, %d with a copy event, %d mismatched\n",
	       n_pools, n_copies, n_wrong);
	assert_int_equal(n_pools, 585);
	assert_int_equal(n_copies, 242);
	assert_int_equal(n_wrong, 0);
}

int main(void)
{
	if (!shared_dir())
		printf("TPUSIM_SHARED is not set: skipping the shared-data "
		       "tests\n");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_tpugraphs),
		cmocka_unit_test(test_all_tpuv4),
		cmocka_unit_test(test_all_tpuv3),
		cmocka_unit_test(test_all_tpuv3_allreduce),
		cmocka_unit_test(test_all_corpus),
		cmocka_unit_test(test_tpugraphs_tiled),
		cmocka_unit_test(test_op_groups),
		cmocka_unit_test(test_pool_relayouts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
