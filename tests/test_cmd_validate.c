/*
 * test_cmd_validate.c: `tpusim validate` as a user runs it ($TPUSIM_BIN,
 * label `cli`): exit codes, the summary lines, the --csv file, JSON and
 * Markdown output, and located errors for a malformed set.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "ts.h"

#define OUT_MAX 65536 /* bytes of output kept; the tiny set prints < 4 kB */

/* Runs "$TPUSIM_BIN validate <args>" in $TPUSIM_SOURCE with stdout and
 * stderr captured in out; returns the exit code. */
static int run(const char *args, char *out)
{
	const char *bin = getenv("TPUSIM_BIN");
	const char *src = getenv("TPUSIM_SOURCE");
	if (!bin || !src) {
		print_message("TPUSIM_BIN or TPUSIM_SOURCE unset: skipped\n");
		skip();
	}
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd '%s' && '%s' validate %s 2>&1", src, bin,
		 args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, OUT_MAX - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static char out[OUT_MAX];

static void test_table_and_csv(void **state)
{
	(void)state;
	char csv[256], args[1024];
	tu_tmp_path(csv, sizeof csv, "val_cli", ".csv");
	snprintf(args, sizeof args,
		 "--data tests/data/val/tiny --hw-dir hwspecs --csv %s", csv);
	assert_int_equal(run(args, out), 0);
	assert_non_null(strstr(out, "== tiny: 3 rows, 1 modules, spec v3\n"));
	assert_non_null(strstr(out, "\nset tiny: 3 rows, 3 estimated, 0 "
				    "errors, 0 infeasible; MAPE "));
	/* 3 configs: too few for the tau mean, enough for the slowdowns. */
	assert_non_null(strstr(out, "\nset tiny: ranking: Kendall tau-b, "
				    "mean over the 0 kernels with >= 10 "
				    "configs: model n/a, roofline n/a, "
				    "fewer-steps n/a; slowdown, mean over the "
				    "1 kernels with >= 2: top-1 model 0.0%"));
	assert_non_null(strstr(out, "\nset tiny: tile choice, total over 1 "
				    "kernels vs measured bests: model's best "
				    "+0.0%, fewer-steps +0.0%, compiler "
				    "default +0.0%;"));

	char *text;
	size_t len;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file(csv, &text, &len, &d), TS_OK);
	assert_memory_equal(text, "set,id,module,hw,spec,config,timing,"
				  "status,measured_ns,predicted_ns,", 52);
	int lines = 0;
	for (char *q = text; (q = strchr(q, '\n')); q++)
		lines++;
	assert_int_equal(lines, 4); /* header + 3 rows */
	assert_non_null(strstr(text, "\ntiny,tiny#r2,modules/tiny.hlo,tpu-v3,"
				     "v3,output_bounds=1x1,device,ok,"
				     "9000.000,"));
	ts_free(text);
	remove(csv);
}

static void test_json_markdown(void **state)
{
	(void)state;
	assert_int_equal(run("--data tests/data/val/tiny --hw hwspecs/v3.yaml "
			     "-f json",
			     out),
			 0);
	assert_memory_equal(out, "{\"sets\": [{\"set\": \"tiny\"", 24);
	assert_non_null(strstr(out, "\"groups\": [{\"group\": \"tiny\", "
				    "\"kind\": \"kernel\", \"rows\": 3,"));
	assert_int_equal(run("--data tests/data/val/tiny_host --hw-dir hwspecs "
			     "--markdown",
			     out),
			 0);
	assert_memory_equal(out, "#### tiny_host (1 rows, spec v3)\n", 33);
	assert_non_null(strstr(out, "host-timed rows: 1; each is compared "
				    "with the device estimate + the "
				    "program's host term (spec host.call_ns"));
}

static void test_errors(void **state)
{
	(void)state;
	assert_int_equal(run("--hw-dir hwspecs", out), 2);
	assert_non_null(strstr(out, "tpusim validate: error: --data DIR is "
				    "required"));
	assert_int_equal(run("--data tests/data/val/tiny --hw hwspecs/v3.yaml "
			     "--hw-dir hwspecs",
			     out),
			 2);
	assert_non_null(strstr(out, "give exactly one of --hw SPEC.yaml and "
				    "--hw-dir DIR"));
	assert_int_equal(run("--data tests/data/val/tiny --hw-dir hwspecs "
			     "--markdown -f json",
			     out),
			 2);
	/* --topology: the slice of every row; tiny's module runs on one
	 * device, a v3 2x2 slice has 8 */
	assert_int_equal(run("--data tests/data/val/tiny --hw-dir hwspecs "
			     "--topology 2x2",
			     out),
			 1);
	assert_non_null(strstr(out, "tests/data/val/tiny/modules/tiny.hlo:1:1: "
				    "error: the module runs on 1 device "
				    "(replica_count 1 x num_partitions 1); the "
				    "slice 2x2 has 8 (v3: 2 per chip)\n"));
	/* A malformed set: the diagnostic names the csv line and column and
	 * shows the line with a caret. */
	assert_int_equal(run("--data tests/data/val/nope --hw-dir hwspecs",
			     out),
			 3);
	assert_non_null(strstr(out, "tests/data/val/nope/measurements.csv: "
				    "error: cannot open: No such file or "
				    "directory"));
	assert_int_equal(run("--data tests/data/val/tiny --hw-dir /nonexistent",
			     out),
			 1);
	assert_non_null(strstr(out, "tests/data/val/tiny/measurements.csv:2:26:"
				    " error: no hardware spec for hw 'tpu-v3'"));
	assert_non_null(strstr(out, "\n  tiny#r0,modules/tiny.hlo,tpu-v3,"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_and_csv),
		cmocka_unit_test(test_json_markdown),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
