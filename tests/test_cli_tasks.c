/*
 * test_cli_tasks.c: end-to-end tests of the tpusim executable's task
 * commands: the learned residual (train twice to the same bytes; --model
 * on run, tile and validate; a damaged model refused with the file's name
 * and the reason, exit 1; the shipped model as "default"; compare's CSV and
 * pictures), operator fusion (fuse writes a module that reads back at
 * the same time; a compiled module is refused) and what-if sweeps
 * (physics, not numbers: see test_whatif), generations side by side
 * (run with several --hw), the timeline (run --trace), the summary
 * (run --summary) and inputs as users have them (several files, standard
 * input, an --xla_dump_to folder).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "gnn.h"
#include "test_util.h"
#include "ts.h"

/* Two files hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	assert_non_null(fa);
	assert_non_null(fb);
	int ca, cb;
	do {
		ca = fgetc(fa);
		cb = fgetc(fb);
	} while (ca == cb && ca != EOF);
	fclose(fa);
	fclose(fb);
	return ca == cb;
}

/*
 * train on two tiny sets writes a model, the same bits twice; run,
 * validate and tile take it (--model), adding the analytic time and the
 * correction; a damaged model is refused with the file's name and the
 * reason, exit 1; the shipped model loads as "default"; compare writes
 * its per-row CSV and its pictures.
 */
static void test_learned(void **state)
{
	(void)state;
	char tiny[PATH_MAX], host[PATH_MAX], hw[PATH_MAX], ex[PATH_MAX],
		v3[PATH_MAX], m1[PATH_MAX], m2[PATH_MAX];
	src(tiny, "tests/data/val/tiny");
	src(host, "tests/data/val/tiny_host");
	src(hw, "hwspecs");
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(m1, sizeof m1, "test_cli_m1", ".gnn");
	tu_tmp_path(m2, sizeof m2, "test_cli_m2", ".gnn");
	struct proc p;
	tpusim(&p, "train", "--data", tiny, "--data", host, "--hw-dir", hw,
	       "--epochs", "5", "-o", m1);
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim train: residual model: 4 samples, 2 "
			       "groups; ");
	proc_free(&p);
	tpusim(&p, "train", "--data", tiny, "--data", host, "--hw-dir", hw,
	       "--epochs", "5", "-o", m2);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_true(same_bytes(m1, m2));
	/* training runs on OpenBLAS's Haswell kernels wherever the CPU has
	 * AVX2 and FMA (main.c pin_blas), whatever OpenBLAS would choose:
	 * its verbose mode names the core it loaded for */
#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
	    !getenv("OPENBLAS_CORETYPE")) {
		setenv("OPENBLAS_VERBOSE", "2", 1);
		tpusim(&p, "train", "--data", tiny, "--hw-dir", hw, "--epochs",
		       "1", "-o", m2);
		unsetenv("OPENBLAS_VERBOSE");
		expect_rc(&p, 0);
		expect_contains(p.err, "Core: Haswell\n");
		proc_free(&p);
	}
#endif
	/* GSL's mt19937 would take seed 0 as its default 4357 */
	tpusim(&p, "train", "--data", tiny, "--hw-dir", hw, "--seed", "0", "-o",
	       m2);
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim train: error: --seed takes a whole "
			       "number from 1 to 4294967295, got '0'\n");
	proc_free(&p);

	tpusim(&p, "run", ex, "--hw", v3, "--model", m1, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",time_total_ns,config,analytic_ns,correction\n");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--model", m1);
	expect_rc(&p, 0);
	expect_contains(p.out, "model: hybrid\nlearned_model: ");
	/* each set holds one group (one kernel, one timing): no mix is
	 * known and none is held out, so the trust is 0 and all 13 kernels
	 * of the example are novel */
	expect_contains(p.out, "\nlearned_novel_trust: 0\n");
	expect_contains(p.out, "\nn_kernels: 13\nn_unmodelled: 0\n"
			       "n_novel_op_mix: 13\n");
	proc_free(&p);
	tpusim(&p, "tile", ex, "--hw", v3, "--model", m1, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",overhead_share,analytic_ns\n");
	proc_free(&p);
	char csv[PATH_MAX];
	tu_tmp_path(csv, sizeof csv, "test_cli_v", ".csv");
	tpusim(&p, "validate", "--data", tiny, "--hw-dir", hw, "--model", m1,
	       "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	char *text = slurp(csv);
	expect_contains(text, ",measured_ns,predicted_ns,analytic_ns,hybrid_ns,");
	ts_free(text);
	unlink(csv);
	tpusim(&p, "run", ex, "--hw", v3, "--model", "default");
	expect_rc(&p, 0);
	proc_free(&p);

	/* one byte damaged: refused, named, exit 1 */
	FILE *f = fopen(m2, "r+b");
	assert_non_null(f);
	fseek(f, 100, SEEK_SET);
	int c = fgetc(f);
	fseek(f, 100, SEEK_SET);
	fputc(c ^ 0x20, f);
	fclose(f);
	tpusim(&p, "run", ex, "--hw", v3, "--model", m2);
	expect_rc(&p, 1);
	char want[PATH_MAX + 128];
	snprintf(want, sizeof want,
		 "%s: error: checksum mismatch: the file is corrupted or "
		 "truncated\n", m2);
	assert_string_equal(p.err, want);
	assert_string_equal(p.out, "");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--model", m2, "--roofline");
	expect_rc(&p, 2);
	proc_free(&p);
	unlink(m1);
	unlink(m2);

	/* compare: two groups, two folds; each row predicted by the model
	 * trained on the other; the CSV and the three pictures */
	char dir[PATH_MAX], file[PATH_MAX + 64];
	tu_tmp_path(dir, sizeof dir, "test_cli_plots", "");
	tu_tmp_path(csv, sizeof csv, "test_cli_c", ".csv");
	tpusim(&p, "compare", "--data", tiny, "--data", host, "--hw-dir", hw,
	       "--folds", "2", "--epochs", "3", "--csv", csv, "--plots", dir);
	expect_rc(&p, 0);
	expect_contains(p.out, "set tiny: 3 rows, 2 folds, out of fold\n");
	expect_contains(p.err, "tpusim compare: 4 models trained in ");
	proc_free(&p);
	text = slurp(csv);
	expect_contains(text, "set,id,fold,measured_ns,analytic_ns,learned_ns,"
			      "hybrid_ns\ntiny,tiny#r0,");
	ts_free(text);
	unlink(csv);
	static const char *const pics[] = {"compare_scatter.png",
					   "compare_ape.png", "compare_tau.png"};
	for (int i = 0; i < 3; i++) {
		snprintf(file, sizeof file, "%s/%s", dir, pics[i]);
		FILE *pf = fopen(file, "rb");
		if (i == 2) { /* no kernel has 10 configs: no tau picture */
			assert_null(pf);
			continue;
		}
		assert_non_null(pf);
		unsigned char sig[8] = {0};
		assert_int_equal(fread(sig, 1, 8, pf), 8);
		fclose(pf);
		assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
		unlink(file);
	}
	rmdir(dir);
}

/* fuse: an unfused module out as HLO (run says how it groups it), the
 * same program time read back; a compiled module is refused. */
/* A model file of width 1 (every feature's training range [0, 0]) with
 * every parameter 0 but the head's: hidden bias b1, output weight w2,
 * output bias b2, so the raw output is w2 max(b1, 0) + b2 everywhere. */
static void write_head_model(const char *path, enum gnn_kind kind, double b1,
			     double w2, double b2)
{
	struct gnn_model m;
	assert_int_equal(gnn_model_alloc(&m, kind, 1, 1, 1), TS_OK);
	struct gnn_tensors t;
	gnn_model_bind(&m, m.params, &t);
	t.b1[0] = b1;
	t.w2[0] = w2;
	t.b2[0] = b2;
	struct ts_diag d = {0};
	assert_int_equal(gnn_model_save(&m, path, &d), TS_OK);
	gnn_model_free(&m);
}

/*
 * A model whose parameters pass every field's check but overflow the
 * network (once: null times, exit 0). Overflowing on the training range is
 * refused on loading (exit 1, the file named); overflowing only on a
 * kernel (a learned-only model with raw 800 everywhere: e^800 ns is inf)
 * leaves that kernel at its analytic time, with a warning naming it, in
 * run, tile, validate and fuse --report.
 */
static void test_model_overflow(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], tiny[PATH_MAX], hw[PATH_MAX],
		model[PATH_MAX], hlo[PATH_MAX], rep[PATH_MAX],
		want[2 * PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	src(tiny, "tests/data/val/tiny");
	src(hw, "hwspecs");
	tu_tmp_path(model, sizeof model, "test_model_overflow", ".gnn");
	/* raw = 1e308 x 2 + 0: inf on every kernel; saved with w2 1 (save
	 * checks what load would) and the weight's bytes rewritten, resealed:
	 * the file ends with w2, b2 and the checksum */
	write_head_model(model, GNN_RESIDUAL, 2, 1, 0);
	size_t len;
	char *bytes = NULL;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file(model, &bytes, &len, &d), TS_OK);
	double w2 = 1e308;
	uint64_t v, h;
	memcpy(&v, &w2, 8);
	for (int i = 0; i < 8; i++)
		bytes[len - 24 + i] = (char)(v >> (8 * i));
	h = ts_fnv1a(TS_FNV1A_BASIS, bytes, len - 8);
	for (int i = 0; i < 8; i++)
		bytes[len - 8 + i] = (char)(h >> (8 * i));
	FILE *f = fopen(model, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	ts_free(bytes);
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--model", model);
	expect_rc(&p, 1);
	snprintf(want, sizeof want, "%s: error: the parameters overflow: the "
		 "network's output for a kernel like those it was trained on "
		 "is not finite\n", model);
	assert_string_equal(p.err, want);
	assert_string_equal(p.out, "");
	proc_free(&p);

	write_head_model(model, GNN_LEARNED_ONLY, 0, 0, 800);
	static const char tail[] = ": the learned time is not finite (the "
				   "model overflows on this kernel): the "
				   "analytic time stands in";
	tpusim(&p, "run", ex, "--hw", v3, "--model", model, "-f", "csv");
	expect_rc(&p, 0);
	/* each of the 13 kernels, in order, the first two by name; every
	 * time the analytic one (columns time_ns and analytic_ns) */
	snprintf(want, sizeof want, "tpusim run: warning: jit_train_loop: "
		 "kernel copy.40%s\ntpusim run: warning: jit_train_loop: "
		 "kernel compare.30%s\n", tail, tail);
	assert_true(starts_with(p.err, want));
	int n = 0;
	for (const char *s = p.err; (s = strstr(s, tail)); s++)
		n++;
	assert_int_equal(n, 13);
	char *save = NULL, *line = strtok_r(p.out, "\n", &save);
	assert_true(starts_with(line, "module,index,name,kind,main_op,"));
	for (int k = 0; k < 13; k++) {
		line = strtok_r(NULL, "\n", &save);
		assert_non_null(line);
		/* time_ns is field 16, analytic_ns field 22 */
		const char *fld[23], *c = line;
		for (int i = 0; i < 23 && c; i++) {
			fld[i] = c;
			c = strchr(c, ',');
			c = c ? c + 1 : NULL;
		}
		assert_near(atof(fld[15]), atof(fld[21]), 0);
	}
	proc_free(&p);
	tpusim(&p, "tile", ex, "--hw", v3, "--model", model, "--kernel",
	       "fusion.1");
	expect_rc(&p, 0);
	snprintf(want, sizeof want, "tpusim tile: warning: jit_train_loop: "
		 "kernel fusion.1%s (", tail);
	assert_true(starts_with(p.err, want));
	assert_non_null(strstr(p.err, " configs)\n"));
	proc_free(&p);
	tpusim(&p, "validate", "--data", tiny, "--hw-dir", hw, "--model",
	       model);
	expect_rc(&p, 0);
	snprintf(want, sizeof want, "tpusim validate: warning: "
		 "modules/tiny.hlo: kernel fusion.1%s (3 rows with such a "
		 "kernel)\n", tail);
	assert_string_equal(p.err, want);
	proc_free(&p);
	/* fuse --report: one warning over the four policies' programs (none:
	 * a and t, then one fusion under each policy) */
	tu_tmp_path(hlo, sizeof hlo, "test_model_overflow", ".hlo");
	tu_tmp_path(rep, sizeof rep, "test_model_overflow", ".txt");
	f = fopen(hlo, "w");
	assert_non_null(f);
	fputs("HloModule c\nENTRY e {\n  p = f32[4096,4096]{1,0} parameter(0)\n"
	      "  a = f32[4096,4096]{1,0} add(p, p)\n"
	      "  ROOT t = f32[4096,4096]{1,0} multiply(a, p)\n}\n", f);
	fclose(f);
	tpusim(&p, "fuse", hlo, "--hw", v3, "--model", model, "--report", rep,
	       "-o", "/dev/null");
	expect_rc(&p, 0);
	snprintf(want, sizeof want, "tpusim fuse: warning: c: kernel a%s (5 "
		 "kernels over the policies' programs)\n", tail);
	expect_contains(p.err, want);
	proc_free(&p);
	unlink(hlo);
	unlink(rep);
	unlink(model);
}

/*
 * compare on a set of one kernel: its one group lands in one fold, whose
 * training set is then empty, so no model is trained and the learned-only
 * and hybrid models predict nothing. Every figure of theirs is n/a (text
 * and Markdown; empty cells in the CSV), never a top-1 or top-5 figure of
 * a model that does not exist; the analytic tile choice is "+0.0%" (its
 * pick is the best), and no "-0.0%" is printed anywhere.
 */
static void test_compare_untrained(void **state)
{
	(void)state;
	char tiny[PATH_MAX], hw[PATH_MAX], csv[PATH_MAX];
	src(tiny, "tests/data/val/tiny");
	src(hw, "hwspecs");
	tu_tmp_path(csv, sizeof csv, "test_compare_untrained", ".csv");
	struct proc p;
	tpusim(&p, "compare", "--data", tiny, "--hw-dir", hw, "--csv", csv);
	expect_rc(&p, 0);
	assert_string_equal(p.err, "tpusim compare: 0 models trained in 0.0 s "
				   "(0.00 s each)\n");
	expect_contains(p.out, "\nanalytic          54.7%    54.9%      n/a "
			       "    0.0%     0.0%    +0.0%\n"
			       "learned-only        n/a      n/a      n/a      "
			       "n/a      n/a      n/a\n"
			       "hybrid              n/a      n/a      n/a      "
			       "n/a      n/a      n/a\n");
	assert_null(strstr(p.out, "-0.0"));
	proc_free(&p);
	char *text = slurp(csv);
	assert_string_equal(text, "set,id,fold,measured_ns,analytic_ns,"
				  "learned_ns,hybrid_ns\n"
				  "tiny,tiny#r0,0,1500.000,2393.652,,\n"
				  "tiny,tiny#r1,0,1700.000,2543.989,,\n"
				  "tiny,tiny#r2,0,9000.000,13942.570,,\n");
	ts_free(text);
	unlink(csv);
	tpusim(&p, "compare", "--data", tiny, "--hw-dir", hw, "--markdown");
	expect_rc(&p, 0);
	expect_contains(p.out, "| analytic | 54.7% | 54.9% | n/a | 0.0% | "
			       "0.0% | +0.0% |\n"
			       "| learned-only | n/a | n/a | n/a | n/a | n/a | "
			       "n/a |\n"
			       "| hybrid | n/a | n/a | n/a | n/a | n/a | "
			       "n/a |\n");
	assert_null(strstr(p.out, "-0.0"));
	proc_free(&p);
}

/* train on one row: one group, and a set needs 3 for one to be held out
 * (round(0.2 x 3) = 1), so nothing is: no held-out error is reported
 * (once: the training set's, as if held out), the reason is, and the
 * model, whose file says so (a NaN validation loss), loads. */
static void test_train_one_row(void **state)
{
	(void)state;
	char one[PATH_MAX], hw[PATH_MAX], ex[PATH_MAX], v3[PATH_MAX],
		model[PATH_MAX];
	src(one, "tests/data/val/tiny_host");
	src(hw, "hwspecs");
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(model, sizeof model, "test_train_one_row", ".gnn");
	static const char *const kinds[] = {NULL, "--learned-only"};
	for (int k = 0; k < 2; k++) {
		struct proc p;
		tpusim(&p, "train", "--data", one, "--hw-dir", hw, "--epochs",
		       "3", "-o", model, kinds[k]);
		expect_rc(&p, 0);
		expect_contains(p.err, k ? "tpusim train: learned-only model: "
					   "1 samples, 1 groups; "
					 : "tpusim train: residual model: 1 "
					   "samples, 1 groups; ");
		expect_contains(p.err, ", with the ranking term; no held-out "
				       "error (n/a): no set has the 3 groups "
				       "it takes to hold one out); ");
		assert_null(strstr(p.err, "held-out squared log error"));
		proc_free(&p);
		tpusim(&p, "run", ex, "--hw", v3, "--model", model);
		expect_rc(&p, 0);
		proc_free(&p);
	}
	unlink(model);
}

static void test_fuse(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], out[PATH_MAX], cc[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(cc, "tests/data/cli/custom_call.hlo");
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(out, sizeof out, "test_cli_fused", ".hlo");
	struct proc p;
	tpusim(&p, "run", cc, "--hw", v3);
	expect_rc(&p, 0);
	expect_contains(p.out, "\nfusion: xla (unfused module)\n");
	proc_free(&p);
	tpusim(&p, "fuse", cc, "--hw", v3, "-o", out);
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim fuse: policy xla: ");
	const char *t = strstr(p.err, "program time on v3 ");
	assert_non_null(t);
	double t0, t1;
	assert_int_equal(sscanf(t, "program time on v3 %lf -> %lf ns", &t0, &t1),
			 2);
	assert_true(t0 > 0 && t1 == t0);
	proc_free(&p);
	tpusim(&p, "run", out, "--hw", v3);
	expect_rc(&p, 0);
	proc_free(&p);
	unlink(out);
	tpusim(&p, "fuse", ex, "--hw", v3, "-o", out);
	expect_rc(&p, 1);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want,
		 "tpusim fuse: error: %s: module jit_train_loop is already "
		 "compiled (it has fusions other than kCustom ones, or "
		 "is_scheduled=true): "
		 "nothing to decide\n", ex);
	assert_string_equal(p.err, want);
	assert_true(access(out, F_OK) != 0);
	proc_free(&p);
	/* --agreement and --unfuse need no spec; fusing does. The example
	 * has its fusions: each reproduced (through the bitcasts XLA put
	 * in them too), or "-" where a ratio has no edges to count */
	tpusim(&p, "fuse", "--agreement", ex);
	expect_rc(&p, 0);
	expect_contains(p.out, "module                                        "
			       "fusions reproduced precision    recall\n");
	expect_contains(p.out, "\nall ");
	/* every edge XLA fused found, none added: no missed edges to list
	 * by rule (test_fusion's test_shared has some) */
	expect_contains(p.out, "\nall                                                "
			       " 8          8    100.0%    100.0%\n");
	assert_null(strstr(p.out, "edges XLA fused and the xla policy did not"));
	proc_free(&p);
	/* another policy decides on the spec: on v7's MLP step the analytic
	 * search fuses edges XLA did not and keeps one apart that XLA fused
	 * (precision 97.5% and recall 98.8% against 100%), and reproduces
	 * two of XLA's ten fusions fewer than the xla policy
	 * (docs/COMPILED.md) */
	char mlp[PATH_MAX], v7[PATH_MAX];
	src(mlp, "data/compiled/v7/mlp_s.tpu.hlo");
	src(v7, "hwspecs/v7.yaml");
	tpusim(&p, "fuse", "--agreement", mlp);
	expect_rc(&p, 0);
	expect_contains(p.out, "\nall                                                "
			       "10          9    100.0%    100.0%\n");
	proc_free(&p);
	tpusim(&p, "fuse", "--agreement", "--policy", "analytic", "--hw", v7,
	       mlp);
	expect_rc(&p, 0);
	expect_contains(p.out, "\nall                                                "
			       "10          7     97.5%     98.8%\n");
	proc_free(&p);
	tpusim(&p, "fuse", "--unfuse", ex, "-o", out);
	expect_rc(&p, 0);
	proc_free(&p);
	unlink(out);
	tpusim(&p, "fuse", cc);
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim fuse: error: --hw SPEC.yaml is required "
			       "to fuse, or to compare a policy other than xla "
			       "(the decisions are costed on it)\n");
	proc_free(&p);
	/* the policies: a producer shared by four consumers (test_fusion
	 * derives why the analytic policy materialises it); the report
	 * lists every policy and the one decision, run --fusion says it */
	char share[PATH_MAX], rep[PATH_MAX];
	tu_tmp_path(share, sizeof share, "test_fuse_share", ".hlo");
	tu_tmp_path(rep, sizeof rep, "test_fuse_report", ".json");
	FILE *f = fopen(share, "w");
	assert_non_null(f);
	fputs("HloModule share\nENTRY e {\n"
	      "  x = f32[2048,2048]{1,0} parameter(0)\n"
	      "  y = f32[2048,2048]{1,0} parameter(1)\n"
	      "  a = f32[2048,2048]{1,0} add(x, y)\n", f);
	for (int i = 0; i < 4; i++)
		fprintf(f, "  c%d = f32[] constant(%d)\n"
			   "  b%d = f32[2048,2048]{1,0} broadcast(c%d), "
			   "dimensions={}\n"
			   "  o%d = f32[2048,2048]{1,0} multiply(a, b%d)\n",
			i, i + 2, i, i, i, i);
	fputs("  ROOT t = (f32[2048,2048]{1,0}, f32[2048,2048]{1,0}, "
	      "f32[2048,2048]{1,0}, f32[2048,2048]{1,0}) tuple(o0, o1, o2, "
	      "o3)\n}\n", f);
	fclose(f);
	tpusim(&p, "fuse", share, "--hw", v3, "--policy", "analytic", "-o", out,
	       "--report", rep);
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim fuse: policy analytic: ");
	expect_contains(p.err, "1 decisions differ");
	proc_free(&p);
	char *json = slurp(rep);
	expect_contains(json, "\"policy\": \"none\", \"kernels\": 5,");
	expect_contains(json, "\"policy\": \"xla\", \"kernels\": 4,");
	expect_contains(json, "\"policy\": \"analytic\", \"kernels\": 5,");
	expect_contains(json, "\"instruction\": \"a\", \"op\": \"add\", "
			      "\"xla\": \"fused into its users\", "
			      "\"decided\": \"its own kernel\"");
	ts_free(json);
	tpusim(&p, "run", out, "--hw", v3);
	expect_rc(&p, 0);
	expect_contains(p.out, "\nfusion: as compiled\n");
	proc_free(&p);
	tpusim(&p, "run", share, "--hw", v3, "--fusion", "analytic");
	expect_rc(&p, 0);
	expect_contains(p.out, "\nfusion: analytic (unfused module; 1 "
			       "decisions differ from xla)\n");
	proc_free(&p);
	tpusim(&p, "run", share, "--hw", v3, "--fusion", "best");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim run: error: unknown fusion policy 'best' "
			       "(expected xla, analytic or hybrid)\n");
	proc_free(&p);
	unlink(share);
	unlink(rep);
	unlink(out);
}

/* The "time_ns" and "dma_ns" of each point of whatif's CSV (at most 8). */
static int read_points(const char *csv, double *time, double *dma)
{
	char *text = slurp(csv), *save = NULL;
	int n = 0;
	char *line = strtok_r(text, "\n", &save); /* header */
	assert_true(starts_with(line, "point,time_ns,mxu_ns,vpu_ns,dma_ns,"));
	while ((line = strtok_r(NULL, "\n", &save)) && n < 8) {
		double pt, t, mxu, vpu, d;
		assert_int_equal(sscanf(line, "%lf,%lf,%lf,%lf,%lf", &pt, &t,
					&mxu, &vpu, &d),
				 5);
		time[n] = t;
		dma[n++] = d;
	}
	ts_free(text);
	return n;
}

/* The first 13 columns (point .. retiled) of the first 3 points of
 * whatif's CSV. */
static void read_cols(const char *csv, double cols[3][13])
{
	char *text = slurp(csv), *save = NULL;
	strtok_r(text, "\n", &save);
	for (int i = 0; i < 3; i++) {
		const char *ln = strtok_r(NULL, "\n", &save);
		assert_non_null(ln);
		for (int c = 0; c < 13; c++, ln = strchr(ln, ',') + 1)
			cols[i][c] = atof(ln);
	}
	ts_free(text);
}

/*
 * whatif, physics rather than numbers:
 * - an add over a 64 MiB array is DMA-bound: doubling the HBM bandwidth
 *   halves its DMA time (bytes / bandwidth; the per-transfer costs that
 *   do not scale are below 1% of it here: 16 steps of 4 MiB blocks);
 * - a field no kernel of the program uses (the ICI links, no collective)
 *   leaves the time as it is, exactly;
 * - a point costs what `run --set` with the same values costs.
 */
/* A temp file (named from stem) holding two dots that share their weight
 * w (one 4 MiB f32 matrix) and pass a 4 MiB value from one to the other:
 * on v5e, w is prefetched across programs and the value kept in VMEM. */
static void write_dots(char *path, size_t n, const char *stem)
{
	tu_tmp_path(path, n, stem, ".hlo");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("HloModule dots\nENTRY e {\n  p = f32[1024,1024]{1,0} parameter(0)\n"
	      "  w = f32[1024,1024]{1,0} parameter(1)\n"
	      "  x = f32[1024,1024]{1,0} dot(p, w), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n"
	      "  ROOT y = f32[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n}\n",
	      f);
	fclose(f);
}

/* The program time `run -f json` prints for hlo on spec hw with one or two
 * --set fields (set2 NULL: one). */
static double run_total_ns(const char *hlo, const char *hw, const char *set1,
			   const char *set2)
{
	struct proc p;
	tpusim(&p, "run", hlo, "--hw", hw, "-f", "json", "--set", set1,
	       set2 ? "--set" : NULL, set2);
	expect_rc(&p, 0);
	const char *row = strstr(p.out, "\"total\": {");
	assert_non_null(row);
	const char *fld = strstr(row, "\"time_ns\": ");
	assert_non_null(fld);
	double ns = atof(fld + strlen("\"time_ns\": "));
	proc_free(&p);
	return ns;
}

static void test_whatif(void **state)
{
	(void)state;
	char v3[PATH_MAX], hlo[PATH_MAX], csv[PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(hlo, sizeof hlo, "test_whatif", ".hlo");
	tu_tmp_path(csv, sizeof csv, "test_whatif", ".csv");
	FILE *f = fopen(hlo, "w");
	assert_non_null(f);
	fputs("HloModule c\nENTRY e {\n  p = f32[4096,4096]{1,0} parameter(0)\n"
	      "  ROOT t = f32[4096,4096]{1,0} add(p, p)\n}\n", f);
	fclose(f);
	struct proc p;
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep",
	       "hbm.bw_bytes_per_s=450e9:1800e9:x2", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	double t[8], d[8];
	assert_int_equal(read_points(csv, t, d), 3);
	for (int i = 0; i < 2; i++) {
		assert_near(d[i + 1], d[i] / 2, 0.01 * d[i] / 2);
		assert_true(t[i + 1] < t[i]);
	}
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep", "ici.links=1,2,4",
	       "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t, d), 3);
	assert_true(t[0] == t[1] && t[1] == t[2]);
	/* a 4096^3 bf16 matmul is MXU-bound: doubling the MXU count halves
	 * its MXU time, within 2% (each pass's fill and drain, a few hundred
	 * cycles against tens of thousands of work, do not scale); its DMA
	 * time stays (tiles held, so the grid is the same at every point) */
	char mm[PATH_MAX];
	tu_tmp_path(mm, sizeof mm, "test_whatif_mm", ".hlo");
	f = fopen(mm, "w");
	assert_non_null(f);
	fputs("HloModule mm\nENTRY e {\n  a = bf16[4096,4096]{1,0} parameter(0)\n"
	      "  b = bf16[4096,4096]{1,0} parameter(1)\n"
	      "  ROOT d = bf16[4096,4096]{1,0} dot(a, b), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n}\n", f);
	fclose(f);
	tpusim(&p, "whatif", mm, "--hw", v3, "--sweep", "mxu.count=1,2,4",
	       "--hold-tiles", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	char *mtext = slurp(csv), *msave = NULL;
	strtok_r(mtext, "\n", &msave);
	double mxu[3], dma[3];
	for (int i = 0; i < 3; i++) {
		const char *ln = strtok_r(NULL, "\n", &msave);
		assert_non_null(ln);
		double pt, tm, vpu;
		assert_int_equal(sscanf(ln, "%lf,%lf,%lf,%lf,%lf", &pt, &tm,
					&mxu[i], &vpu, &dma[i]),
				 5);
		assert_true(strstr(ln, ",1,0,0,0,0,0,0,") != NULL); /* MXU-bound */
	}
	ts_free(mtext);
	for (int i = 0; i < 2; i++) {
		assert_near(mxu[i + 1], mxu[i] / 2, 0.02 * mxu[i] / 2);
		assert_true(dma[i + 1] == dma[i]);
	}
	unlink(mm);
	/* the program's start (overhead.program_ns, v4's) is in its first
	 * kernel alone: two identical kernels, of which only the first
	 * holds it, so a sweep of it moves the program by what it adds,
	 * once (the second kernel is no twin of the first) */
	char v4[PATH_MAX], tw[PATH_MAX];
	src(v4, "hwspecs/v4.yaml");
	tu_tmp_path(tw, sizeof tw, "test_whatif_twin", ".hlo");
	f = fopen(tw, "w");
	assert_non_null(f);
	fputs("HloModule tw\nENTRY e {\n  a = f32[1024,1024]{1,0} parameter(0)\n"
	      "  b = f32[1024,1024]{1,0} parameter(1)\n"
	      "  x = f32[1024,1024]{1,0} exponential(a)\n"
	      "  y = f32[1024,1024]{1,0} exponential(b)\n"
	      "  ROOT t = (f32[1024,1024]{1,0}, f32[1024,1024]{1,0}) tuple(x, y)\n}\n",
	      f);
	fclose(f);
	tpusim(&p, "whatif", tw, "--hw", v4, "--sweep",
	       "overhead.program_ns=0,1000", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t, d), 2);
	assert_near(t[1] - t[0], 1000, 1e-3);
	unlink(tw);
	/* the second point of a sweep against run --set */
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep",
	       "hbm.bw_bytes_per_s=450e9,700e9", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t, d), 2);
	tpusim(&p, "run", hlo, "--hw", v3, "--set", "hbm.bw_bytes_per_s=700e9",
	       "-f", "csv");
	expect_rc(&p, 0);
	char *row = strstr(p.out, "\nc,0,t,");
	assert_non_null(row);
	/* time_ns is the 16th field of run's CSV row */
	char *fld = row + 1;
	for (int i = 0; i < 15; i++)
		fld = strchr(fld, ',') + 1;
	assert_near(atof(fld), t[1], 1e-3); /* both printed with 3 decimals */
	proc_free(&p);
	/* a sweep of the room memory-space assignment has (v5e: 112 MiB
	 * beside the 16 MiB scoped limit; none when the limit is all 128):
	 * the 4 MiB value between the dots goes back to HBM, each point as
	 * run prices it on that spec */
	char v5e[PATH_MAX], dots[PATH_MAX];
	src(v5e, "hwspecs/v5e.yaml");
	write_dots(dots, sizeof dots, "test_whatif_dots");
	tpusim(&p, "whatif", dots, "--hw", v5e, "--sweep",
	       "vmem.scoped_bytes=16777216,134217728", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t, d), 2);
	assert_true(t[1] > t[0] && d[1] > d[0]);
	static const char *const scoped[2] = {"vmem.scoped_bytes=16777216",
					      "vmem.scoped_bytes=134217728"};
	for (int i = 0; i < 2; i++)
		assert_near(run_total_ns(dots, v5e, scoped[i], NULL), t[i], 1e-3);
	unlink(dots);
	/* placement's order reads the HBM bandwidth (test_fusion's
	 * test_placement_order: with 4.5 MiB of room, l in VMEM at 819 GB/s;
	 * at 4 TB/s l's writer is only 13 ns slower on HBM than on compute,
	 * all it can save, and s goes in): a bandwidth sweep of an unfused module
	 * places each point again, as run --set does (it kept the base
	 * point's placement: 7.98 us at 4 TB/s against run's 9.19 us) */
	char order[PATH_MAX];
	tu_tmp_path(order, sizeof order, "test_whatif_order", ".hlo");
	f = fopen(order, "w");
	assert_non_null(f);
	fputs(tu_placement_order_hlo, f);
	fclose(f);
	const char *room = "vmem.scoped_bytes=129499136"; /* 128 - 4.5 MiB */
	tpusim(&p, "whatif", order, "--hw", v5e, "--set", room, "--sweep",
	       "hbm.bw_bytes_per_s=819e9,4e12", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t, d), 2);
	static const char *const bws[2] = {"hbm.bw_bytes_per_s=819e9",
					   "hbm.bw_bytes_per_s=4e12"};
	for (int i = 0; i < 2; i++)
		assert_near(run_total_ns(order, v5e, room, bws[i]), t[i], 1e-3);
	unlink(order);
	/* a weight's prefetch (tu_weight_prefetch_hlo: w2, 4 MiB) is placed
	 * again where a sweep moves the copy's latency (at 100 us its copy no
	 * longer pays) or the room (6 MB: room for w1, the cross-program
	 * prefetch, not for w2 beside it; placed at 128 MiB), each point as
	 * run --set prices it (the sweep kept the base point's copies, and a
	 * program built with too little room for w2 had no copy of it) */
	tu_tmp_path(order, sizeof order, "test_whatif_prefetch", ".hlo");
	f = fopen(order, "w");
	assert_non_null(f);
	fputs(tu_weight_prefetch_hlo, f);
	fclose(f);
	static const char *const sweeps[2][3] = {
		{"hbm.dma_latency_ns=500,100000", "hbm.dma_latency_ns=500",
		 "hbm.dma_latency_ns=100000"},
		{"vmem.bytes=22777216,134217728", "vmem.bytes=22777216",
		 "vmem.bytes=134217728"}};
	for (int s = 0; s < 2; s++) {
		tpusim(&p, "whatif", order, "--hw", v5e, "--set", sweeps[s][1],
		       "--sweep", sweeps[s][0], "--csv", csv);
		expect_rc(&p, 0);
		proc_free(&p);
		assert_int_equal(read_points(csv, t, d), 2);
		assert_true(t[1] != t[0]);
		for (int i = 0; i < 2; i++)
			assert_near(run_total_ns(order, v5e, sweeps[s][1 + i],
						 NULL),
				    t[i], 1e-3);
	}
	unlink(order);
	/* --hold-tiles: each kernel keeps its base-point config. The scoped
	 * VMEM only decides which configs fit, so shrinking it changes no
	 * time, retiles nothing and makes configs infeasible; without the
	 * flag the search re-chooses them (the example's kernels, 16 MiB
	 * down to 512 KiB). */
	char ex[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	for (int hold = 0; hold < 2; hold++) {
		tpusim(&p, "whatif", ex, "--hw", v3, "--sweep",
		       "vmem.scoped_bytes=16777216,2097152,524288", "--csv", csv,
		       hold ? "--hold-tiles" : NULL);
		expect_rc(&p, 0);
		proc_free(&p);
		double col[3][13], time[3], infeasible[3], retiled[3];
		read_cols(csv, col);
		for (int i = 0; i < 3; i++) {
			time[i] = col[i][1];
			infeasible[i] = col[i][11];
			retiled[i] = col[i][12];
		}
		if (hold) {
			assert_true(time[1] == time[0] && time[2] == time[0]);
			assert_true(retiled[1] == 0 && retiled[2] == 0);
			assert_true(infeasible[2] > 0);
			assert_true(infeasible[1] <= infeasible[2]);
		} else {
			assert_true(infeasible[2] == 0 && retiled[2] > 0);
			assert_true(time[2] > time[0]);
		}
	}
	/* kernels whose plans are the same cost the same (whatif costs one
	 * and copies it): a module of two independent copies of a dot and
	 * its add costs twice the module of one, at every point, tiles
	 * re-chosen and held (time, MXU and DMA time, bound, infeasible and
	 * retiled counts) */
	static const char one[] =
		"  d = f32[1024,2048]{1,0} dot(x, w), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"  r = f32[1024,2048]{1,0} add(d, d)\n";
	static const char two[] =
		"  d2 = f32[1024,2048]{1,0} dot(x2, w2), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"  r2 = f32[1024,2048]{1,0} add(d2, d2)\n";
	static const char params[] =
		"HloModule m\nENTRY e {\n"
		"  x = f32[1024,1024]{1,0} parameter(0)\n"
		"  w = f32[1024,2048]{1,0} parameter(1)\n"
		"  x2 = f32[1024,1024]{1,0} parameter(2)\n"
		"  w2 = f32[1024,2048]{1,0} parameter(3)\n";
	double cols[2][2][3][13];
	char twins[PATH_MAX];
	tu_tmp_path(twins, sizeof twins, "test_whatif_twins", ".hlo");
	for (int copies = 1; copies <= 2; copies++) {
		f = fopen(twins, "w");
		assert_non_null(f);
		fprintf(f, "%s%s%s  ROOT t = (f32[1024,2048]{1,0}, "
			   "f32[1024,2048]{1,0}) tuple(r, %s)\n}\n",
			params, one, copies == 2 ? two : "",
			copies == 2 ? "r2" : "r");
		fclose(f);
		for (int hold = 0; hold < 2; hold++) {
			tpusim(&p, "whatif", twins, "--hw", v3, "--sweep",
			       "vmem.scoped_bytes=16777216,2097152,1048576", "--csv",
			       csv, hold ? "--hold-tiles" : NULL);
			expect_rc(&p, 0);
			proc_free(&p);
			read_cols(csv, cols[copies - 1][hold]);
		}
	}
	for (int hold = 0; hold < 2; hold++)
		for (int i = 0; i < 3; i++)
			for (int c = 1; c < 13; c++) {
				double a = cols[0][hold][i][c], b = cols[1][hold][i][c];
				if (c <= 5) /* times: sums in another order */
					assert_near(b, 2 * a, 1e-9 * a + 1e-3);
				else /* counts */
					assert_true(b == 2 * a);
			}
	assert_true(cols[0][0][2][12] > 0); /* 1 MiB re-chooses a tile */
	assert_true(cols[0][1][2][11] > 0); /* and held, one stops fitting */
	unlink(twins);
	/* a +STEP range reaches HI without rounding drift, and the values
	 * are written as given; a 1 Hz clock change retiles nothing (a tie
	 * between configs is not a re-choice); a base value of 0 has no
	 * elasticity */
	tpusim(&p, "whatif", ex, "--hw", v3, "--sweep",
	       "hbm.efficiency=0.1:0.3:+0.1", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	char *pts_csv = slurp(csv);
	expect_contains(pts_csv, ",0.3\n");
	assert_null(strstr(pts_csv, "0.30000000000000004"));
	ts_free(pts_csv);
	tpusim(&p, "whatif", ex, "--hw", v3, "--sweep",
	       "mxu.clock_hz=940000001,940000002", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	pts_csv = slurp(csv);
	/* infeasible, retiled, the value */
	expect_contains(pts_csv, ",0,0,940000001\n");
	expect_contains(pts_csv, ",0,0,940000002\n");
	ts_free(pts_csv);
	tpusim(&p, "whatif", ex, "--hw", v3, "--set", "hbm.dma_chunk_ns=0",
	       "--sweep", "hbm.dma_chunk_ns=1,2", "-f", "json");
	expect_rc(&p, 0);
	expect_contains(p.out,
			"\"field\": \"hbm.dma_chunk_ns\", \"base_value\": 0}");
	proc_free(&p);
	/* a chip has links: ici.links=0 is out of its range, said with
	 * the value as given */
	tpusim(&p, "whatif", ex, "--hw", v3, "--set", "ici.links=0", "--sweep",
	       "ici.links=1,2");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim whatif: error: --set: ici.links: 0 is out "
			       "of range [1, 64]\n");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--set", "hbm.bw_bytes_per_s=1e400");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim run: error: --set: hbm.bw_bytes_per_s: "
			       "1e400 is out of range [1e+09, 1e+14] bytes/s\n");
	proc_free(&p);
	/* bad sweeps: usage errors with the reason */
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep", "mxu.count=1,2",
	       "--sweep", "mxu.count=4");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim whatif: error: --sweep mxu.count=4: "
			       "mxu.count is swept twice (--sweep mxu.count=1,2)\n");
	proc_free(&p);
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep", "hbm.bw_bytes_per_s=9:1:x2");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim whatif: error: --sweep "
			       "hbm.bw_bytes_per_s=9:1:x2: a range is "
			       "LO:HI:xFACTOR (factor > 1, LO > 0) or LO:HI:+STEP "
			       "(step > 0), LO <= HI\n");
	proc_free(&p);
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep", "mxu.count=0,1");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim whatif: error: --sweep: mxu.count: 0 is "
			       "out of range");
	proc_free(&p);
	/* what XLA does to the module is decided when it is loaded: a
	 * sweep of it would be silently flat */
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep",
	       "xla.all_reduce_combine_bytes=0,1e6");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim whatif: error: --sweep "
			       "xla.all_reduce_combine_bytes=0,1e6: "
			       "xla.all_reduce_combine_bytes says how XLA "
			       "compiles the module, decided once before the "
			       "points; run `tpusim run --set "
			       "xla.all_reduce_combine_bytes=V` for each value\n");
	proc_free(&p);
	/* the pictures of a sweep and of a run: PNG files */
	char dir[PATH_MAX], png[PATH_MAX + 32];
	tu_tmp_path(dir, sizeof dir, "test_whatif_plots", "");
	tpusim(&p, "whatif", hlo, "--hw", v3, "--sweep",
	       "hbm.bw_bytes_per_s=450e9,900e9", "--plots", dir);
	expect_rc(&p, 0);
	proc_free(&p);
	/* two inputs with one module name: two pictures */
	tpusim(&p, "run", hlo, hlo, "--hw", v3, "--plots", dir);
	expect_rc(&p, 0);
	proc_free(&p);
	static const char *const pics[] = {"whatif.png", "run_c.png",
					   "run_c_2.png"};
	for (int i = 0; i < 3; i++) {
		snprintf(png, sizeof png, "%s/%s", dir, pics[i]);
		FILE *pf = fopen(png, "rb");
		assert_non_null(pf);
		unsigned char sig[8] = {0};
		assert_int_equal(fread(sig, 1, 8, pf), 8);
		fclose(pf);
		assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
		unlink(png);
	}
	rmdir(dir);
	/* a file where the folder should be */
	tpusim(&p, "run", hlo, "--hw", v3, "--plots", hlo);
	expect_rc(&p, 3);
	char want[PATH_MAX + 128];
	snprintf(want, sizeof want, "tpusim run: error: --plots: cannot create "
		 "the folder %s: a file of that name exists\n", hlo);
	expect_contains(p.err, want);
	proc_free(&p);
	/* a folder where no file can be made: an I/O error, not PLplot's own
	 * prompt-and-exit */
	tpusim(&p, "run", hlo, "--hw", v3, "--plots", "/proc/sys");
	expect_rc(&p, 3);
	expect_contains(p.err, "tpusim run: error: cannot write "
			       "/proc/sys/run_c.png: No such file or directory\n");
	proc_free(&p);
	unlink(hlo);
	unlink(csv);
}

/*
 * whatif at scale on a per-slice module (tests/data/envelope/
 * megascale_exchange.hlo, v5e 2x2 x 2 slices): its DCN all-reduce of
 * B = 1,572,864 bytes per device, the fusion k (less time) between send
 * and recv-done hiding its time of it, so the step is the all-reduce
 * kernel, launch + DCN over k slices (hw_ici_torus, one device per
 * chip): 2 (k-1)/k B / dcn + 2 (k-1) dcn latency. One slice: nothing
 * crosses, the step is less than at two. The slice shape leaves a DCN
 * exchange alone: the same time, the shape written. Errors: no slice
 * given, a module on one slice (another: this one's exchange names two),
 * a fraction of a slice, a shape of other chips, a shape misspelt.
 */
static void test_whatif_scale(void **state)
{
	(void)state;
	char v5e[PATH_MAX], hlo[PATH_MAX], csv[PATH_MAX];
	src(v5e, "hwspecs/v5e.yaml");
	src(hlo, "tests/data/envelope/megascale_exchange.hlo");
	tu_tmp_path(csv, sizeof csv, "test_whatif_scale", ".csv");
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	struct proc p;
	tpusim(&p, "whatif", hlo, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--sweep", "slices=1,2,8", "--csv", csv);
	expect_rc(&p, 0);
	expect_contains(p.out, "field: slices\nbase_value: 2\n");
	proc_free(&p);
	double t[8], d[8];
	assert_int_equal(read_points(csv, t, d), 3);
	const double B = 768.0 * 8 * 128 * 2;
	double dcn = hw.dcn_bw_bytes_per_s * 1e-9, lat = hw.dcn_latency_ns;
	const int k[2] = {2, 8};
	for (int i = 0; i < 2; i++)
		assert_near(t[i + 1],
			    hw.kernel_overhead_ns +
				    2.0 * (k[i] - 1) / k[i] * B / dcn +
				    2.0 * (k[i] - 1) * lat,
			    1e-3); /* the CSV's 3 decimals */
	assert_true(t[0] < t[1]);

	tpusim(&p, "whatif", hlo, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--sweep", "topology=2x2,1x4", "--csv", csv);
	expect_rc(&p, 0);
	expect_contains(p.out, " 1x4\n");
	proc_free(&p);
	double t2[8];
	assert_int_equal(read_points(csv, t2, d), 2);
	assert_near(t2[1], t2[0], 0);
	assert_near(t2[0], t[1], 1e-3);

	/* an ICI all-reduce of the 4 devices: each point's time is what
	 * `run` gives on that shape (a ring of lines of 2 on 2x2, a line of
	 * 4 on 1x4), and the two differ */
	char one[PATH_MAX]; /* 4 devices, one slice, no exchange */
	src(one, "tests/data/envelope/async_collective_fusion.hlo");
	char ar[PATH_MAX];
	tu_tmp_path(ar, sizeof ar, "test_whatif_scale_ar", ".hlo");
	FILE *f = fopen(ar, "w");
	assert_non_null(f);
	fputs("HloModule ar, num_partitions=4\n"
	      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	      "  ROOT s = f32[] add(a, b)\n}\n"
	      "ENTRY e {\n  x = f32[1048576]{0:T(1024)} parameter(0)\n"
	      "  ROOT r = f32[1048576]{0:T(1024)} all-reduce(x), "
	      "replica_groups={{0,1,2,3}}, to_apply=add\n}\n",
	      f);
	assert_int_equal(fclose(f), 0);
	tpusim(&p, "whatif", ar, "--hw", v5e, "--topology", "2x2", "--sweep",
	       "topology=2x2,1x4", "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(read_points(csv, t2, d), 2);
	static const char *const shapes[] = {"2x2", "1x4"};
	for (int i = 0; i < 2; i++) {
		tpusim(&p, "run", ar, "--hw", v5e, "--topology", shapes[i],
		       "--format", "csv");
		expect_rc(&p, 0);
		/* ar's one kernel: its time_ns, the 16th field */
		const char *c = strstr(p.out, "\nar,0,r,");
		assert_non_null(c);
		for (int n = 0; n < 15; n++)
			c = strchr(c + 1, ',');
		assert_near(t2[i], atof(c + 1), 1e-3);
		proc_free(&p);
	}
	assert_true(t2[1] != t2[0]);
	unlink(ar);

	static const struct {
		const char *topo, *slices, *sweep, *err;
	} bad[] = {
		{NULL, NULL, "slices=2,4",
		 "--sweep slices=2,4: give the slice the module was compiled "
		 "for (--topology, --slices)\n"},
		{"2x2", "1", "slices=2,4", /* the module `one` */
		 "--sweep slices=2,4: the module runs on one slice, so no "
		 "collective crosses slices to scale: compile it for two or "
		 "more (--slices N)\n"},
		{"2x2", "2", "slices=1.5",
		 "--sweep slices=1.5: 1.5 slices: expected a whole number from "
		 "1 to 1024\n"},
		{"2x2", "2", "topology=2x2,4x4",
		 "--sweep: the point at 4x4, 2 slices: the module runs on 4 "
		 "devices (replica_count 1 x num_partitions 4); the slice 4x4, "
		 "2 slices has 32 (v5e: 1 per chip)\n"},
		{"2x2", "2", "topology=2x2,2y2",
		 "--sweep topology=2x2,2y2: '2y2': expected 'x' between the "
		 "chips along each axis, like 16x16\n"},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
		if (bad[i].topo)
			tpusim(&p, "whatif", i == 1 ? one : hlo, "--hw", v5e,
			       "--topology", bad[i].topo, "--slices",
			       bad[i].slices, "--sweep", bad[i].sweep);
		else
			tpusim(&p, "whatif", hlo, "--hw", v5e, "--sweep",
			       bad[i].sweep);
		expect_rc(&p, 2);
		char want[512];
		snprintf(want, sizeof want, "tpusim whatif: error: %s",
			 bad[i].err);
		expect_contains(p.err, want);
		proc_free(&p);
	}
	unlink(csv);
}

/*
 * A sweep of every spec field whatif accepts (hw_spec_field_at: the list
 * --sweep looks fields up in), on the example and every generation: the
 * base value and the first of 2x, x/2, x+1, x-1, 1.01x, x/1.01, the
 * field's min and max that hw_spec_apply takes (a value far from the base
 * first, so that tile configs change). Each but the xla section's (how
 * XLA compiles the module: refused, exit 2) gives exit 0 and a table of
 * two points with a positive program time and the values as given. A
 * field a plan reads (vpu.sublanes, vpu.lanes, ...) once left a NULL
 * per-kernel array and
 * crashed (exit 139) as soon as a kernel re-chose its tile. The sanitizer
 * build takes v2, v5e and v7.
 */
static void test_whatif_every_field(void **state)
{
	(void)state;
#ifdef TPUSIM_SANITIZED /* a process per field: three generations */
	static const char *const gens[] = {"v2", "v5e", "v7"};
#else
	static const char *const gens[] = {"v2", "v3", "v4", "v5e", "v5p",
					   "v6e", "v7"};
#endif
	char ex[PATH_MAX], spec[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	int n_fields = hw_spec_n_fields();
	assert_true(n_fields > 0);
	for (size_t g = 0; g < sizeof gens / sizeof *gens; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(gens[g], &hw))
			skip();
		char rel[64];
		snprintf(rel, sizeof rel, "hwspecs/%s.yaml", gens[g]);
		src(spec, rel);
		for (int i = 0; i < n_fields; i++) {
			const struct hw_field_info *f = hw_spec_field_at(i);
			double x0 = hw_spec_get(&hw, f);
			double cand[] = {2 * x0, x0 / 2, x0 + 1, x0 - 1,
					 x0 * 1.01, x0 / 1.01, f->min, f->max};
			double x1 = NAN;
			for (size_t c = 0; c < sizeof cand / sizeof *cand; c++) {
				struct hw_spec t = hw;
				struct ts_diag d = {0};
				if (cand[c] != x0 &&
				    hw_spec_apply(&t, 1, &f, &cand[c], NULL,
						  &d) == TS_OK) {
					x1 = cand[c];
					break;
				}
			}
			if (isnan(x1))
				fail_msg("%s: no value of %s but %.17g applies",
					 gens[g], f->path, x0);
			char arg[256];
			snprintf(arg, sizeof arg, "%s=%.17g,%.17g", f->path, x0,
				 x1);
			struct proc p;
			tpusim(&p, "whatif", ex, "--hw", spec, "--sweep", arg,
			       "-f", "csv");
			if (!strncmp(f->path, "xla.", 4)) { /* refused: below */
				expect_rc(&p, 2);
				proc_free(&p);
				continue;
			}
			if (p.rc != 0)
				fail_msg("%s --sweep %s: exit %d\n%s", gens[g],
					 arg, p.rc, p.err);
			assert_string_equal(p.err, "");
			char *save = NULL, *line = strtok_r(p.out, "\n", &save);
			assert_non_null(line);
			assert_true(starts_with(line, "point,time_ns,"));
			const char *last = strrchr(line, ',');
			assert_string_equal(last + 1, f->path);
			for (int k = 0; k < 2; k++) {
				line = strtok_r(NULL, "\n", &save);
				assert_non_null(line);
				double pt = -1, time = NAN;
				assert_int_equal(sscanf(line, "%lf,%lf", &pt,
							&time),
						 2);
				assert_true(pt == k);
				if (!(time > 0 && isfinite(time)))
					fail_msg("%s --sweep %s: point %d: %s",
						 gens[g], arg, k, line);
				assert_true(atof(strrchr(line, ',') + 1) ==
					    (k ? x1 : x0));
			}
			assert_null(strtok_r(NULL, "\n", &save));
			proc_free(&p);
		}
	}
}

/* mpirun -n 2 tpusim whatif: the report and the CSV are byte-identical to
 * one process's (the 5 x 3 grid splits unevenly: 8 and 7 points). Skipped,
 * and said, when the build has no Open MPI or mpirun is absent. */
static void test_whatif_mpi(void **state)
{
	(void)state;
	struct proc p;
	tpusim(&p, "--version");
	bool mpi = strstr(p.out, "open-mpi: yes") != NULL;
	proc_free(&p);
	if (!mpi) {
		print_message("tpusim built without Open MPI: skipped\n");
		skip();
	}
	char ex[PATH_MAX], v3[PATH_MAX], csv[2][PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	/* mpirun refuses root unless told (CI runs as root) */
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	char *out[2] = {NULL, NULL};
	for (int r = 0; r < 2; r++) {
		tu_tmp_path(csv[r], sizeof csv[r], "test_whatif_mpi",
			    r ? "_1.csv" : "_0.csv");
		char *argv[] = {"mpirun", "--oversubscribe", "-n", "2",
				(char *)env_or_skip("TPUSIM_BIN"), "whatif", ex,
				"--hw", v3, "--sweep",
				"hbm.bw_bytes_per_s=300e9:4800e9:x2", "--sweep",
				"mxu.count=1,2,4", "--csv", csv[r], NULL};
		char **args = r == 0 ? argv + 4 : argv;
		if (r == 0)
			args[0] = "tpusim";
		/* Open MPI's plugins (unloaded at exit) leave memory that
		 * LeakSanitizer cannot attribute to a library, so the ranks
		 * run without the leak check in the sanitizer build (the
		 * single-process run above keeps it; ASan and UBSan errors
		 * still fail the ranks). */
		char saved[1024] = "";
		const char *asan = getenv("ASAN_OPTIONS");
		if (asan)
			snprintf(saved, sizeof saved, "%s", asan);
		if (r == 1) {
			char opts[1100];
			snprintf(opts, sizeof opts, "%s%sdetect_leaks=0", saved,
				 saved[0] ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
		}
		bool started = spawn(&p, r == 0 ? env_or_skip("TPUSIM_BIN")
						: "mpirun",
				     r == 1, NULL, NULL, args);
		if (asan)
			setenv("ASAN_OPTIONS", saved, 1);
		else
			unsetenv("ASAN_OPTIONS");
		if (!started) {
			print_message("mpirun not found: skipped\n");
			proc_free(&p);
			ts_free(out[0]);
			unlink(csv[0]);
			skip();
		}
		if (p.rc != 0)
			fail_msg("rank count %d: exit %d: %s", r + 1, p.rc, p.err);
		out[r] = p.out;
		p.out = NULL;
		proc_free(&p);
	}
	assert_string_equal(out[1], out[0]);
	assert_true(same_bytes(csv[0], csv[1]));
	char *c = slurp(csv[0]);
	int lines = 0;
	for (const char *x = c; *x; x++)
		lines += *x == '\n';
	assert_int_equal(lines, 1 + 15);
	ts_free(c);
	for (int r = 0; r < 2; r++) {
		ts_free(out[r]);
		unlink(csv[r]);
	}
}

/* run --hw v3 --hw v4: each kernel's time on each spec is what a run on
 * that spec alone gives, and the totals and speed-up follow. */
static void test_generations(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], v4[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	src(v4, "hwspecs/v4.yaml");
	struct proc both, one[2];
	tpusim(&both, "run", ex, "--hw", v3, "--hw", v4, "-f", "csv");
	expect_rc(&both, 0);
	tpusim(&one[0], "run", ex, "--hw", v3, "-f", "csv");
	tpusim(&one[1], "run", ex, "--hw", v4, "-f", "csv");
	expect_rc(&one[0], 0);
	expect_rc(&one[1], 0);
	assert_true(starts_with(both.out, "module,index,name,kind,main_op,"
					  "multiplicity,time_ns_v3,bound_v3,"
					  "time_ns_v4,bound_v4\n"));
	/* row k: ...,t3,b3,t4,b4 against run's time_ns (16th field) */
	char *s0 = NULL, *s1 = NULL, *s2 = NULL;
	char *l = strtok_r(both.out, "\n", &s0);
	char *a = strtok_r(one[0].out, "\n", &s1);
	char *b = strtok_r(one[1].out, "\n", &s2);
	int rows = 0;
	while ((l = strtok_r(NULL, "\n", &s0)) && (a = strtok_r(NULL, "\n", &s1)) &&
	       (b = strtok_r(NULL, "\n", &s2))) {
		double t3, t4;
		char b3[16], b4[16];
		const char *f = l;
		for (int i = 0; i < 6; i++)
			f = strchr(f, ',') + 1;
		assert_int_equal(sscanf(f, "%lf,%15[a-z],%lf,%15[a-z]", &t3, b3,
					&t4, b4),
				 4);
		const char *fa = a, *fb = b;
		for (int i = 0; i < 15; i++) {
			fa = strchr(fa, ',') + 1;
			fb = strchr(fb, ',') + 1;
		}
		assert_near(t3, atof(fa), 1e-3);
		assert_near(t4, atof(fb), 1e-3);
		rows++;
	}
	assert_int_equal(rows, 13);
	proc_free(&both);
	proc_free(&one[0]);
	proc_free(&one[1]);
	tpusim(&both, "run", ex, "--hw", v3, "--hw", v4);
	expect_rc(&both, 0);
	expect_contains(both.out, "hw: v3, v4\n");
	expect_contains(both.out, "\nhw: v4\nvs_first: ");
	proc_free(&both);
	tpusim(&both, "run", ex, "--hw", v3, "--hw", v4, "--roofline");
	expect_rc(&both, 2);
	proc_free(&both);
	/* a program with a cross-program prefetch on v5e (w, both dots'
	 * weight): side by side with v3 first, each spec's total is its own
	 * run's (built for v5e's room, the copy idle on v3) */
	char v5e[PATH_MAX], dots[PATH_MAX];
	src(v5e, "hwspecs/v5e.yaml");
	write_dots(dots, sizeof dots, "test_gen_dots");
	const char *const gen_hw[2] = {v3, v5e};
	tpusim(&both, "run", dots, "--hw", v3, "--hw", v5e, "-f", "json");
	expect_rc(&both, 0);
	for (int i = 0; i < 2; i++) {
		tpusim(&one[i], "run", dots, "--hw", gen_hw[i], "-f", "json");
		expect_rc(&one[i], 0);
		const char *t = strstr(one[i].out, "\"name\": \"total\"");
		assert_non_null(t);
		t = strstr(t, "\"time_ns\": ");
		assert_non_null(t);
		char key[32];
		snprintf(key, sizeof key, "\"time_ns_%s\": ", i ? "v5e" : "v3");
		const char *g = strstr(strstr(both.out, "\"name\": \"total\""),
				       key);
		assert_non_null(g);
		assert_near(atof(g + strlen(key)),
			    atof(t + strlen("\"time_ns\": ")), 1e-3);
		proc_free(&one[i]);
	}
	proc_free(&both);
	unlink(dots);
	/* --gen v3,v4 --hw-dir DIR: the same as --hw DIR/v3.yaml --hw
	 * DIR/v4.yaml, byte for byte */
	char specs[PATH_MAX];
	src(specs, "hwspecs");
	struct proc g;
	tpusim(&both, "run", ex, "--hw", v3, "--hw", v4, "-f", "csv");
	tpusim(&g, "run", ex, "--gen", "v3,v4", "--hw-dir", specs, "-f", "csv");
	expect_rc(&g, 0);
	assert_string_equal(g.out, both.out);
	proc_free(&g);
	proc_free(&both);
	tpusim(&g, "run", ex, "--gen", "v3", "--hw", v4);
	expect_rc(&g, 2);
	expect_contains(g.err, "tpusim run: error: --gen picks the specs: leave "
			       "out --hw\n");
	proc_free(&g);
	tpusim(&g, "run", ex, "--gen", "v3,,v4", "--hw-dir", specs);
	expect_rc(&g, 2);
	expect_contains(g.err, "tpusim run: error: --gen v3,,v4: expected "
			       "generation names like v4,v5e,v6e\n");
	proc_free(&g);
	/* the picture: grouped bars per kernel kind */
	char dir[PATH_MAX], png[PATH_MAX + 64];
	tu_tmp_path(dir, sizeof dir, "test_gen_plots", "");
	tpusim(&both, "run", ex, "--hw", v3, "--hw", v4, "--plots", dir);
	expect_rc(&both, 0);
	proc_free(&both);
	snprintf(png, sizeof png, "%s/generations_jit_train_loop.png", dir);
	FILE *pf = fopen(png, "rb");
	assert_non_null(pf);
	unsigned char sig[8] = {0};
	assert_int_equal(fread(sig, 1, 8, pf), 8);
	fclose(pf);
	assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
	unlink(png);
	rmdir(dir);
}

/* Sums the durations (us) of the kernels track's events (tid 1) in the
 * trace at path, in ns; *n gets their count. */
static double kernels_track_ns(const char *path, int *n)
{
	char *text = slurp(path);
	double sum = 0;
	*n = 0;
	for (const char *c = text; (c = strstr(c, "\"tid\": 1, \"ts\": "));
	     c++) {
		double ts, dur;
		assert_int_equal(sscanf(c, "\"tid\": 1, \"ts\": %lf, \"dur\": %lf",
					&ts, &dur),
				 2);
		sum += dur * 1e3;
		(*n)++;
	}
	ts_free(text);
	return sum;
}

/* The program time `run -f json` reports (the total row's time_ns). */
static double reported_total_ns(const char *json)
{
	const char *c = strstr(json, "\"name\": \"total\"");
	assert_non_null(c);
	c = strstr(c, "\"time_ns\": ");
	assert_non_null(c);
	return atof(c + strlen("\"time_ns\": "));
}

/* run --trace: valid JSON (python3's json module, skipped without it), and
 * the kernels track's events add up to the program time run reports (each
 * printed to the nanosecond: a tolerance of 1 ns per event). Two modules:
 * the example, and a compiled one with async copies: one hidden behind a
 * fusion, one with nothing between start and done (a wait event of its
 * whole time), and a start without a done (ordinary work). Their times by
 * hand from run's own rows: cs + d + cs2 + cs3 - cs (hidden, cs <= d). */
static void test_trace(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], tr[PATH_MAX], hlo[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(tr, sizeof tr, "test_trace", ".json");
	tu_tmp_path(hlo, sizeof hlo, "test_trace", ".hlo");
	FILE *f = fopen(hlo, "w");
	assert_non_null(f);
	fputs("HloModule m\n\nfd {\n  p = f32[1024,1024] parameter(0)\n"
	      "  ROOT d = f32[1024,1024] dot(p, p), lhs_contracting_dims={1}, "
	      "rhs_contracting_dims={0}\n}\n\nENTRY e {\n"
	      "  a = f32[1024,1024] parameter(0)\n"
	      "  b = f32[1024,1024] parameter(1)\n"
	      "  cs = (f32[1024,1024], f32[1024,1024], u32[]) copy-start(a)\n"
	      "  d = f32[1024,1024] fusion(b), kind=kOutput, calls=fd\n"
	      "  cd = f32[1024,1024] copy-done(cs)\n"
	      "  cs2 = (f32[1024,1024], f32[1024,1024], u32[]) copy-start(b)\n"
	      "  cd2 = f32[1024,1024] copy-done(cs2)\n"
	      "  cs3 = (f32[1024,1024], f32[1024,1024], u32[]) copy-start(a)\n"
	      "  ROOT t = (f32[1024,1024], f32[1024,1024], f32[1024,1024]) "
	      "tuple(d, cd, cd2)\n}\n",
	      f);
	fclose(f);
	const char *inputs[] = {ex, hlo};
	for (int m = 0; m < 2; m++) {
		struct proc p;
		tpusim(&p, "run", inputs[m], "--hw", v3, "--trace", tr, "-f",
		       "json");
		expect_rc(&p, 0);
		double total = reported_total_ns(p.out);
		if (m == 1) {
			const char *names[] = {"cs", "d", "cs2", "cs3"};
			double t[4];
			for (int i = 0; i < 4; i++) {
				char key[64];
				snprintf(key, sizeof key, "\"name\": \"%s\"",
					 names[i]);
				const char *c = strstr(p.out, key);
				assert_non_null(c);
				c = strstr(c, "\"time_ns\": ");
				t[i] = atof(c + strlen("\"time_ns\": "));
			}
			assert_true(t[0] <= t[1]);
			assert_near(total, t[1] + t[2] + t[3], 1.0);
		}
		proc_free(&p);
		char *py[] = {"python3", "-c",
			      "import json,sys; json.load(open(sys.argv[1]))",
			      tr, NULL};
		struct proc q;
		if (spawn(&q, "python3", true, NULL, NULL, py))
			expect_rc(&q, 0);
		else
			print_message("python3 not found: the JSON is not "
				      "parsed\n");
		proc_free(&q);
		int n;
		double sum = kernels_track_ns(tr, &n);
		/* the example: one event per kernel; the async module: d,
		 * the wait for cd2 and cs3 (cs and cs2 are on the async
		 * track) */
		if (m == 0)
			assert_true(n >= 13);
		else
			assert_int_equal(n, 3);
		assert_near(sum, total, 1.0 * n);
		unlink(tr);
	}
	unlink(hlo);
	/* whatif --trace DIR: a timeline per point, adding up to the point's
	 * program time in the CSV */
	char dir[PATH_MAX], csv[PATH_MAX + 8], pt[PATH_MAX + 32];
	tu_tmp_path(dir, sizeof dir, "test_whatif_trace", "");
	snprintf(csv, sizeof csv, "%s.csv", dir);
	struct proc p;
	tpusim(&p, "whatif", ex, "--hw", v3, "--sweep", "mxu.count=1,4",
	       "--trace", dir, "--csv", csv);
	expect_rc(&p, 0);
	proc_free(&p);
	char *text = slurp(csv), *save = NULL;
	strtok_r(text, "\n", &save);
	for (int i = 0; i < 2; i++) {
		const char *row = strtok_r(NULL, "\n", &save);
		assert_non_null(row);
		double t = atof(strchr(row, ',') + 1); /* time_ns */
		snprintf(pt, sizeof pt, "%s/point_%d.json", dir, i);
		int n;
		double sum = kernels_track_ns(pt, &n);
		assert_near(sum, t, 1.0 * n);
		unlink(pt);
	}
	ts_free(text);
	unlink(csv);
	rmdir(dir);
}

/* Sums the "kernels" and "time_ns" of the rows of JSON table `key`. */
static void sum_table(const char *json, const char *key, int *kernels,
		      double *ns)
{
	char want[64];
	snprintf(want, sizeof want, "\"%s\": [", key);
	const char *c = strstr(json, want);
	assert_non_null(c);
	const char *end = strchr(c, ']');
	*kernels = 0;
	*ns = 0;
	while ((c = strstr(c, "\"kernels\": ")) && c < end) {
		int k;
		double t;
		assert_int_equal(sscanf(c, "\"kernels\": %d, \"time_ns\": %lf",
					&k, &t),
				 2);
		*kernels += k;
		*ns += t;
		c++;
	}
}

/* run --summary: each rollup (kind, op, bound) holds every kernel once and
 * all their time; with no async pair here, that is the program time. */
static void test_summary(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--summary", "-f", "json");
	expect_rc(&p, 0);
	double total;
	const char *t = strstr(p.out, "\"time_ns\": ");
	assert_non_null(t);
	assert_int_equal(sscanf(t, "\"time_ns\": %lf", &total), 1);
	static const char *const keys[] = {"by_kind", "by_op", "by_bound"};
	for (int i = 0; i < 3; i++) {
		int k;
		double ns;
		sum_table(p.out, keys[i], &k, &ns);
		assert_int_equal(k, 13);
		assert_near(ns, total, 1e-3 * 13); /* 3 decimals per row */
	}
	proc_free(&p);
}

/* run -: standard input gives the report a file gives (the file line
 * aside); a dump folder runs only its *.after_optimizations.txt and says
 * what it left; several inputs give one report each. */
static void test_inputs(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], dir[PATH_MAX], f1[PATH_MAX + 64],
		f2[PATH_MAX + 64];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc a, b;
	tpusim(&a, "run", ex, "--hw", v3, "-f", "csv");
	expect_rc(&a, 0);
	char *argv[] = {"tpusim", "run", "-", "--hw", v3, "-f", "csv", NULL};
	assert_true(spawn(&b, env_or_skip("TPUSIM_BIN"), false, ex, NULL, argv));
	expect_rc(&b, 0);
	assert_string_equal(b.out, a.out); /* CSV has no file line */
	proc_free(&a);
	proc_free(&b);

	tu_tmp_path(dir, sizeof dir, "test_dump", "");
	assert_int_equal(mkdir(dir, 0777), 0);
	snprintf(f1, sizeof f1, "%s/module_0001.jit_train_loop.after_optimizations.txt",
		 dir);
	snprintf(f2, sizeof f2, "%s/module_0001.jit_train_loop.before_optimizations.txt",
		 dir);
	char *text = slurp(ex);
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(i ? f2 : f1, "w");
		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	}
	ts_free(text);
	tpusim(&a, "run", dir, "--hw", v3);
	expect_rc(&a, 0);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want,
		 "tpusim run: note: %s: 1 module after optimizations; 1 other "
		 "file (before optimizations, buffer assignments, ...) not "
		 "run\n", dir);
	assert_string_equal(a.err, want);
	expect_contains(a.out, "after_optimizations.txt\nhw: v3\n");
	proc_free(&a);
	unlink(f1);
	tpusim(&a, "run", dir, "--hw", v3);
	expect_rc(&a, 1);
	expect_contains(a.err, ": no *.after_optimizations.txt (a folder "
			       "written by XLA's --xla_dump_to holds one per "
			       "module)\n");
	proc_free(&a);
	unlink(f2);
	rmdir(dir);

	tpusim(&a, "run", ex, ex, "--hw", v3, "-f", "json");
	expect_rc(&a, 0);
	int lines = 0;
	for (const char *c = a.out; (c = strchr(c, '\n')); c++)
		lines++;
	assert_int_equal(lines, 2); /* one JSON document per input */
	proc_free(&a);
	/* YAML: a document each, both read by a YAML parser */
	tpusim(&a, "run", ex, ex, "--hw", v3, "-f", "yaml");
	expect_rc(&a, 0);
	assert_true(starts_with(a.out, "---\n"));
	char *py[] = {"python3", "-c",
		      "import sys, yaml\n"
		      "d = list(yaml.safe_load_all(sys.stdin))\n"
		      "assert len(d) == 2, len(d)\n"
		      "assert d[1]['modules'][0]['module'] == 'jit_train_loop'\n",
		      NULL};
	char yml[PATH_MAX];
	tu_tmp_path(yml, sizeof yml, "test_inputs", ".yaml");
	FILE *yf = fopen(yml, "w");
	assert_non_null(yf);
	fputs(a.out, yf);
	fclose(yf);
	if (spawn(&b, "python3", true, yml, NULL, py))
		expect_rc(&b, 0);
	else
		print_message("python3 not found: the YAML is not parsed\n");
	proc_free(&b);
	unlink(yml);
	proc_free(&a);
	/* CSV would repeat its header; a dump folder is several inputs */
	tpusim(&a, "run", ex, ex, "--hw", v3, "-f", "csv");
	expect_rc(&a, 2);
	expect_contains(a.err, "tpusim run: error: several inputs (or a dump "
			       "folder) write one report each: -f csv would "
			       "repeat its header mid-stream; use -f json or "
			       "yaml\n");
	proc_free(&a);
	tpusim(&a, "run", tu_tmpdir(), "--hw", v3, "--trace", yml);
	expect_rc(&a, 2);
	expect_contains(a.err, "tpusim run: error: several inputs (or a dump "
			       "folder) exclude --trace, --explain and --config");
	proc_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learned),
		cmocka_unit_test(test_model_overflow),
		cmocka_unit_test(test_compare_untrained),
		cmocka_unit_test(test_train_one_row),
		cmocka_unit_test(test_fuse),
		cmocka_unit_test(test_whatif),
		cmocka_unit_test(test_whatif_scale),
		cmocka_unit_test(test_whatif_every_field),
		cmocka_unit_test(test_whatif_mpi),
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
