/*
 * test_cli_tasks.c: end-to-end tests of the tpusim executable's task
 * commands: the learned residual (train twice to the same bytes; --model
 * on run, tile and validate; a damaged model refused with the file's name
 * and the reason, exit 1; the shipped model as "default"; compare's CSV and
 * pictures) and operator fusion (fuse writes a module that reads back at
 * the same time; a compiled module is refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
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
	snprintf(m1, sizeof m1, "%s/test_cli_m1_%d.gnn", tu_tmpdir(),
		 (int)getpid());
	snprintf(m2, sizeof m2, "%s/test_cli_m2_%d.gnn", tu_tmpdir(),
		 (int)getpid());
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

	tpusim(&p, "run", ex, "--hw", v3, "--model", m1, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",time_total_ns,config,analytic_ns,correction\n");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--model", m1);
	expect_rc(&p, 0);
	expect_contains(p.out, "model: hybrid\nlearned_model: ");
	proc_free(&p);
	tpusim(&p, "tile", ex, "--hw", v3, "--model", m1, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",overhead_share,analytic_ns\n");
	proc_free(&p);
	char csv[PATH_MAX];
	snprintf(csv, sizeof csv, "%s/test_cli_v_%d.csv", tu_tmpdir(),
		 (int)getpid());
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
	snprintf(dir, sizeof dir, "%s/test_cli_plots_%d", tu_tmpdir(),
		 (int)getpid());
	snprintf(csv, sizeof csv, "%s/test_cli_c_%d.csv", tu_tmpdir(),
		 (int)getpid());
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
static void test_fuse(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], out[PATH_MAX], cc[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(cc, "tests/data/cli/custom_call.hlo");
	src(v3, "hwspecs/v3.yaml");
	snprintf(out, sizeof out, "%s/test_cli_fused_%d.hlo", tu_tmpdir(),
		 (int)getpid());
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
		 "tpusim fuse: error: %s: module jit_train_loop already has "
		 "fusion instructions (an optimized module): nothing to "
		 "decide\n", ex);
	assert_string_equal(p.err, want);
	assert_true(access(out, F_OK) != 0);
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learned),
		cmocka_unit_test(test_fuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
