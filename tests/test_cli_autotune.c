/*
 * test_cli_autotune.c: `tpusim autotune`. Replay on the TpuGraphs tile
 * set (the strategies' table, CSV columns, the analytic model's order
 * beating random at every budget, the same bits for the same seed);
 * usage errors; and the live mode with stand-in measuring commands written
 * here: one that answers from the config's text (the fastest config is
 * the one it says), one that fails, one that hangs past the timeout, one
 * that counts its arguments (a config with ';' stays one argument, no
 * shell). --record writes a set that validate reads, its module keyed by
 * content, and a second run measures only configs not recorded yet and
 * tries recorded failures again. test_cli_record.c tries the record
 * harder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "test_util.h"
#include "ts.h"

/* Lines of a file (0 when absent). */
static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int n = 0, c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_replay(void **state)
{
	(void)state;
	char set[PATH_MAX], hw[PATH_MAX], csv[PATH_MAX];
	snprintf(set, sizeof set, "%s/data/tpugraphs-tile-v3",
		 env_or_skip("TPUSIM_SHARED"));
	src(hw, "hwspecs");
	tu_tmp_path(csv, sizeof csv, "test_autotune", ".csv");
	struct proc p;
	tpusim(&p, "autotune", "--data", set, "--hw-dir", hw, "--budget",
	       "1,3,5", "--seeds", "20", "--csv", csv);
	expect_rc(&p, 0);
	/* 15 kernels, 3 of them measured at one config several times */
	expect_contains(p.out, "set tpugraphs-tile-v3: 12 kernels with "
			       "several configs; 3 with one config left out "
			       "(first: reshape.37)\n");
	expect_contains(p.out, "strategy        b=1      b=3      b=5   "
			       "to 1%   to 5%\n");
	proc_free(&p);
	char *text = slurp(csv);
	assert_true(starts_with(text, "strategy,budget,mean_slowdown,set,"
				      "kernels,to_1pct,to_5pct\n"));
	/* 4 strategies x 3 budgets */
	int lines = 0;
	for (char *c = text; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 1 + 12);
	/* the analytic order is at least as good as random everywhere */
	double slow[4][3];
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	for (int i = 0; (line = strtok_r(NULL, "\n", &save)); i++) {
		char strat[32];
		int b;
		double v;
		assert_int_equal(sscanf(line, "%31[^,],%d,%lf", strat, &b, &v), 3);
		slow[i / 3][i % 3] = v;
	}
	for (int b = 0; b < 3; b++)
		assert_true(slow[1][b] <= slow[0][b]);
	ts_free(text);
	/* the same seed, the same bytes */
	char csv2[PATH_MAX];
	tu_tmp_path(csv2, sizeof csv2, "test_autotune2", ".csv");
	tpusim(&p, "autotune", "--data", set, "--hw-dir", hw, "--budget",
	       "1,3,5", "--seeds", "20", "--csv", csv2);
	expect_rc(&p, 0);
	proc_free(&p);
	char *a = slurp(csv), *b2 = slurp(csv2);
	assert_string_equal(a, b2);
	ts_free(a);
	ts_free(b2);
	remove(csv);
	remove(csv2);
}

static void test_usage(void **state)
{
	(void)state;
	char hw[PATH_MAX], dot[PATH_MAX];
	src(hw, "hwspecs/v3.yaml");
	src(dot, "tests/data/cli/big_dot.hlo");
	struct proc p;
	tpusim(&p, "autotune");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim autotune: error: give either --data DIR "
			       "(replay) or one GRAPH.hlo (live), not neither\n");
	proc_free(&p);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "3,1",
	       "--measure-cmd", "true");
	expect_rc(&p, 2);
	expect_contains(p.err, "--budget takes up to 16 ascending whole "
			       "numbers from 1 to 100000, comma-separated "
			       "(e.g. 1,3,5,10), got '3,1'\n");
	proc_free(&p);
	tpusim(&p, "autotune", dot, "--hw", hw, "--strategy", "online",
	       "--measure-cmd", "true");
	expect_rc(&p, 2);
	expect_contains(p.err, "--strategy: the live mode takes analytic or "
			       "hybrid\n");
	proc_free(&p);
	tpusim(&p, "autotune", dot, "--hw", hw, "--measure-cmd", "sh -c 'x");
	expect_rc(&p, 2);
	expect_contains(p.err, "--measure-cmd: no command, an unterminated "
			       "quote or more than 64 words in 'sh -c 'x'\n");
	proc_free(&p);
}

/* A stand-in TPU: the time is 1000 ns plus the config text's length,
 * except 500 ns for the config named in $FAST_CONFIG's file. */
static const char measure_sh[] =
	"#!/bin/sh\n"
	"# usage: measure.sh KERNEL CONFIG FASTFILE\n"
	"if [ \"$2\" = \"$(cat \"$3\")\" ]; then echo 500; exit 0; fi\n"
	"echo $((1000 + ${#2}))\n";

static void test_live(void **state)
{
	(void)state;
	char hw[PATH_MAX], hwdir[PATH_MAX], dot[PATH_MAX], dir[PATH_MAX],
		script[PATH_MAX], fast[PATH_MAX], cmd[3 * PATH_MAX],
		csv[PATH_MAX + 32];
	src(hw, "hwspecs/v3.yaml");
	src(hwdir, "hwspecs");
	src(dot, "tests/data/cli/big_dot.hlo");
	tu_tmp_path(dir, sizeof dir, "test_autotune_rec", "");
	tu_rm_tree(dir); /* as an earlier run with this pid may have left it */
	tu_tmp_path(script, sizeof script, "test_autotune_m", ".sh");
	tu_tmp_path(fast, sizeof fast, "test_autotune_fast", ".txt");
	write_file(script, measure_sh);
	/* the third config the analytic model proposes is the fastest
	 * (the model puts the first three at one time: tpusim tile) */
	write_file(fast, "output_bounds=32x16;kernel_bounds=128x16");
	snprintf(cmd, sizeof cmd, "sh %s {kernel} {config} %s", script, fast);
	struct proc p;
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "3",
	       "--measure-cmd", cmd, "--record", dir, "-f", "csv");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	assert_true(starts_with(p.out, "module,kernel,best_config,best_ns,"
				       "analytic_ns,hybrid_ns,measurements,"
				       "failed\n"));
	expect_contains(p.out, "big_dot,fusion.1,output_bounds=32x16;"
			       "kernel_bounds=128x16,500.000,");
	expect_contains(p.out, ",3,0\n");
	proc_free(&p);
	snprintf(csv, sizeof csv, "%s/measurements.csv", dir);
	assert_int_equal(count_lines(csv), 1 + 3);
	/* the module is keyed by its content: FNV-1a 64 of its bytes */
	char *mod = slurp(dot), want[512];
	uint64_t h = UINT64_C(14695981039346656037);
	for (const char *c = mod; *c; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(1099511628211);
	ts_free(mod);
	snprintf(want, sizeof want,
		 "id,module,hw,config,runtime_ns,runtime_min_ns,repeats,timing,"
		 "source\nbig_dot-%016llx.fusion.1.tpu-v3.output_bounds=32x8;"
		 "kernel_bounds=256x8,modules/big_dot-%016llx.hlo,tpu-v3,",
		 (unsigned long long)h, (unsigned long long)h);
	char *rec = slurp(csv);
	assert_true(starts_with(rec, want));
	ts_free(rec);
	/* a data set validate reads */
	tpusim(&p, "validate", "--data", dir, "--hw-dir", hwdir);
	expect_rc(&p, 0);
	expect_contains(p.out, "3 rows, 3 estimated, 0 errors");
	proc_free(&p);
	/* resumed with a larger budget: only the new configs are measured,
	 * and the best recorded before is still the best */
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "5",
	       "--measure-cmd", cmd, "--record", dir, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, "big_dot,fusion.1,output_bounds=32x16;"
			       "kernel_bounds=128x16,500.000,");
	expect_contains(p.out, ",5,0\n");
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 5);
	/* on another spec nothing recorded counts: 5 more rows, ids apart */
	char v4[PATH_MAX];
	src(v4, "hwspecs/v4.yaml");
	tpusim(&p, "autotune", dot, "--hw", v4, "--budget", "5",
	       "--measure-cmd", cmd, "--record", dir, "-f", "csv");
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 10);
	tpusim(&p, "validate", "--data", dir, "--hw-dir", hwdir);
	expect_rc(&p, 0);
	proc_free(&p);

	/* a failing command: recorded, counted, the run goes on; when every
	 * measurement fails the run exits 3 */
	char dir2[PATH_MAX], failed[PATH_MAX + 32], csv2[PATH_MAX + 32];
	tu_tmp_path(dir2, sizeof dir2, "test_autotune_rec2", "");
	tu_rm_tree(dir2);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "2",
	       "--measure-cmd", "false", "--record", dir2, "-f", "csv");
	expect_rc(&p, 3);
	expect_contains(p.err, "tpusim autotune: warning: kernel fusion.1, "
			       "config output_bounds=32x8;kernel_bounds=256x8: "
			       "measurement failed: exited with status 1\n");
	expect_contains(p.err, "tpusim autotune: error: every measurement "
			       "failed (2 of 2; the last: exited with status "
			       "1): check --measure-cmd\n");
	expect_contains(p.out, ",2,2\n");
	proc_free(&p);
	snprintf(failed, sizeof failed, "%s/failed.csv", dir2);
	assert_int_equal(count_lines(failed), 1 + 2);
	/* a later run tries the recorded failures again */
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "2",
	       "--measure-cmd", cmd, "--record", dir2, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",2,0\n");
	proc_free(&p);
	snprintf(csv2, sizeof csv2, "%s/measurements.csv", dir2);
	assert_int_equal(count_lines(csv2), 1 + 2);
	assert_int_equal(count_lines(failed), 1 + 2);

	/* a hanging command: killed at the timeout */
	time_t t0 = time(NULL);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", "sleep 30", "--measure-timeout", "1", "-f",
	       "csv");
	expect_rc(&p, 3);
	expect_contains(p.err, "measurement failed: timed out after 1 s\n");
	proc_free(&p);
	assert_true(time(NULL) - t0 < 10);

	/* the config is one argument (it holds ';'), no shell in between */
	char argc_file[PATH_MAX], count[PATH_MAX], cmd2[3 * PATH_MAX];
	tu_tmp_path(argc_file, sizeof argc_file, "test_autotune_argc", ".txt");
	tu_tmp_path(count, sizeof count, "test_autotune_count", ".sh");
	write_file(count, "#!/bin/sh\necho $# > \"$1\"\necho 1000\n");
	snprintf(cmd2, sizeof cmd2, "sh %s %s {config}", count, argc_file);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", cmd2);
	expect_rc(&p, 0);
	proc_free(&p);
	char *n = slurp(argc_file);
	assert_string_equal(n, "2\n");
	ts_free(n);
	remove(argc_file);
	remove(count);
	remove(script);
	remove(fast);
	tu_rm_tree(dir);
	tu_rm_tree(dir2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
