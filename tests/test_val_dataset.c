/*
 * test_val_dataset.c: reading measurement sets (validation/val_dataset.c)
 * and costing them end to end (val_report.c). Malformed csv files in
 * tests/data/val/bad/ (and details.csv files written to a temporary
 * folder) must fail with the exact message at line:col; the
 * hand-made set tests/data/val/tiny (one 64x1024 add kernel, three tile
 * configs) must validate with every row costed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "val.h"

/* $TPUSIM_SOURCE/rel, or NULL (with a skip) when the variable is unset. */
static const char *src_path(char *buf, size_t cap, const char *rel)
{
	const char *root = getenv("TPUSIM_SOURCE");
	if (!root)
		return NULL;
	snprintf(buf, cap, "%s/%s", root, rel);
	return buf;
}

#define NEED_SOURCE(path)                                                     \
	do {                                                                  \
		if (!(path)) {                                                \
			print_message("TPUSIM_SOURCE unset: skipped\n");      \
			skip();                                               \
		}                                                             \
	} while (0)

/* The first line ts_diag_print writes for d, without its newline, in got. */
static void diag_line(const struct ts_diag *d, char *got, size_t cap)
{
	memset(got, 0, cap);
	FILE *f = fmemopen(got, cap - 1, "w");
	assert_non_null(f);
	ts_diag_print(d, f);
	fclose(f);
	*strchr(got, '\n') = '\0';
}

/* Loads tests/data/val/bad/<name> and checks the status and the first line
 * ts_diag_print writes: "<path>:<where>: error: <msg>". */
static void expect_error(const char *name, enum ts_status want_st,
			 const char *where, const char *msg)
{
	char rel[256], path[1024], want[2048], got[4096];
	snprintf(rel, sizeof rel, "tests/data/val/bad/%s", name);
	NEED_SOURCE(src_path(path, sizeof path, rel));
	struct val_dataset ds;
	struct ts_diag d = {0};
	enum ts_status st = val_dataset_load_csv(path, &ds, &d);
	diag_line(&d, got, sizeof got);
	val_dataset_free(&ds);
	snprintf(want, sizeof want, "%s:%s: error: %s", path, where, msg);
	assert_string_equal(got, want);
	assert_int_equal(st, want_st);
}

static void test_bad_csv(void **state)
{
	(void)state;
	/* Columns: a row "a,../tiny/modules/tiny.hlo,tpu-v3,," puts the
	 * config at 35, runtime_ns at 36, runtime_min_ns 40, repeats 41,
	 * timing 42, source 49. */
	expect_error("columns.csv", TS_ERR_PARSE, "3:48",
		     "row has 8 fields, expected 9");
	expect_error("too_many.csv", TS_ERR_PARSE, "2:51",
		     "too many fields: expected 9 (as in the header)");
	expect_error("quote.csv", TS_ERR_PARSE, "3:49",
		     "unterminated quoted field");
	expect_error("midquote.csv", TS_ERR_PARSE, "2:53",
		     "'\"' inside an unquoted field (quote the whole field)");
	expect_error("nul.csv", TS_ERR_PARSE, "2:2",
		     "a NUL byte in a field (the file is text)");
	expect_error("runtime.csv", TS_ERR_PARSE, "2:36",
		     "runtime_ns: expected a positive integer (ns), got "
		     "'12.5us'");
	expect_error("min_above.csv", TS_ERR_PARSE, "2:40",
		     "runtime_min_ns 200 exceeds runtime_ns 100");
	expect_error("crlf_repeats.csv", TS_ERR_PARSE, "3:41",
		     "repeats: expected empty or a positive integer, got '0'");
	expect_error("timing.csv", TS_ERR_PARSE, "2:42",
		     "unknown timing kind 'wall' (expected device or host)");
	/* A quoted field spanning two lines moves the next row to line 4. */
	expect_error("multiline.csv", TS_ERR_PARSE, "4:42",
		     "unknown timing kind 'hots' (expected device or host)");
	expect_error("header.csv", TS_ERR_PARSE, "1:60",
		     "header lacks column 'repeats'");
	expect_error("unknown_col.csv", TS_ERR_PARSE, "1:69",
		     "unknown column 'notes'");
	expect_error("header_only.csv", TS_ERR_PARSE, "2:1",
		     "no measurements after the header");
	expect_error("dup.csv", TS_ERR_PARSE, "4:1",
		     "duplicate id 'a' (first on line 2)");
	expect_error("module_missing.csv", TS_ERR_PARSE, "2:3",
		     "module file 'modules/nope.hlo' not found: No such file "
		     "or directory");
	/* module paths stay inside the set's folder */
	expect_error("module.csv", TS_ERR_PARSE, "2:3",
		     "module path '../tiny/modules/tiny.hlo' leads outside the "
		     "set's folder");
	expect_error("module_abs.csv", TS_ERR_PARSE, "2:3",
		     "module path '/etc/passwd' is absolute: a module is named "
		     "relative to the set's folder");
}

/* A config the tile parser rejects is reported at its csv line, inside the
 * config field (which starts at column 35); the message is the parser's. */
static void test_bad_config(void **state)
{
	(void)state;
	char path[1024];
	NEED_SOURCE(src_path(path, sizeof path,
			     "tests/data/val/bad/config.csv"));
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load_csv(path, &ds, &d), TS_ERR_PARSE);
	assert_int_equal(d.line, 2);
	assert_in_range(d.col, 35, 35 + strlen("output_bounds=8xq") - 1);
	assert_memory_equal(d.msg, "config: ", strlen("config: "));
	val_dataset_free(&ds);
}

/* Writes text to path; fails the test when it cannot. */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Symbolic links are followed before a module path is judged: a file link
 * or a folder link leading out of the set's folder is refused with its
 * row's line:col, a folder link that stays inside is read. */
static void test_module_links(void **state)
{
	(void)state;
	char dir[] = "/tmp/tpusim_links_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[1024], q[1024];
	static const char *const dirs[] = {"set", "set/modules", "other"};
	for (size_t i = 0; i < TS_ARRAY_LEN(dirs); i++) {
		snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
		assert_int_equal(mkdir(p, 0700), 0);
	}
	static const char hlo[] = "HloModule m\nENTRY e {\n"
				  "  ROOT p = f32[8] parameter(0)\n}\n";
	snprintf(p, sizeof p, "%s/set/modules/in.hlo", dir);
	put_file(p, hlo);
	snprintf(p, sizeof p, "%s/other/out.hlo", dir);
	put_file(p, hlo);
	snprintf(p, sizeof p, "%s/set/modules/out.hlo", dir);
	assert_int_equal(symlink("../../other/out.hlo", p), 0);
	snprintf(p, sizeof p, "%s/set/away", dir);
	assert_int_equal(symlink("../other", p), 0);
	snprintf(p, sizeof p, "%s/set/mods", dir);
	assert_int_equal(symlink("modules", p), 0);
	static const char header[] =
		"id,module,hw,config,runtime_ns,runtime_min_ns,repeats,"
		"timing,source\n";
	static const struct {
		const char *rows, *error; /* NULL: loads */
	} cases[] = {
		{"a,modules/in.hlo,tpu-v3,,100,,,device,x\n"
		 "b,mods/in.hlo,tpu-v3,,100,,,device,x\n",
		 NULL},
		{"a,modules/in.hlo,tpu-v3,,100,,,device,x\n"
		 "b,modules/out.hlo,tpu-v3,,100,,,device,x\n",
		 "3:3: error: module path 'modules/out.hlo' leads outside the "
		 "set's folder"},
		{"a,modules/in.hlo,tpu-v3,,100,,,device,x\n"
		 "b,away/out.hlo,tpu-v3,,100,,,device,x\n",
		 "3:3: error: module path 'away/out.hlo' leads outside the "
		 "set's folder"},
	};
	snprintf(p, sizeof p, "%s/set/measurements.csv", dir);
	for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
		snprintf(q, sizeof q, "%s%s", header, cases[i].rows);
		put_file(p, q);
		struct val_dataset ds;
		struct ts_diag d = {0};
		enum ts_status st = val_dataset_load_csv(p, &ds, &d);
		if (!cases[i].error) {
			assert_int_equal(st, TS_OK);
		} else {
			char got[4096], want[2048];
			assert_int_equal(st, TS_ERR_PARSE);
			diag_line(&d, got, sizeof got);
			snprintf(want, sizeof want, "%s:%s", p, cases[i].error);
			assert_string_equal(got, want);
		}
		val_dataset_free(&ds);
	}
	static const char *const files[] = {
		"set/measurements.csv", "set/modules/out.hlo", "set/away",
		"set/mods", "set/modules/in.hlo", "other/out.hlo", "set/modules",
		"set", "other"};
	for (size_t i = 0; i < TS_ARRAY_LEN(files); i++) {
		snprintf(q, sizeof q, "%s/%s", dir, files[i]);
		assert_int_equal(remove(q), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load("/nonexistent/set", &ds, &d),
			 TS_ERR_IO);
	assert_string_equal(d.file, "/nonexistent/set/measurements.csv");
	val_dataset_free(&ds);
}

static void test_tiny_rows(void **state)
{
	(void)state;
	char dir[1024];
	NEED_SOURCE(src_path(dir, sizeof dir, "tests/data/val/tiny/"));
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	assert_string_equal(ds.name, "tiny");
	assert_int_equal(ds.n_rows, 3);
	assert_int_equal(ds.n_modules, 1);
	assert_true(ds.has_configs);
	assert_string_equal(ds.modules[0].name, "tiny");
	assert_int_equal(ds.modules[0].n_rows, 3);
	const struct val_row *r = ds.rows;
	assert_string_equal(r[0].id, "tiny#r0");
	assert_string_equal(r[0].config, "output_bounds=8x8");
	assert_int_equal(r[0].cfg.n_out, 2);
	assert_int_equal(r[0].cfg.out_bounds[0], 8);
	assert_int_equal(r[0].cfg.n_kernel, 0);
	/* RFC 4180: the quoted source keeps its comma, "" is one quote. */
	assert_string_equal(r[0].source, "tiny run=0, \"compiler\" default");
	assert_int_equal(r[0].runtime_ns, 1500);
	assert_int_equal(r[0].runtime_min_ns, 1450);
	assert_int_equal(r[0].repeats, 10);
	assert_int_equal(r[1].runtime_min_ns, -1);
	assert_int_equal(r[2].repeats, -1);
	assert_int_equal(r[2].timing, VAL_TIMING_DEVICE);
	assert_int_equal(r[2].line, 4);
	for (int i = 0; i < 3; i++)
		assert_int_equal(r[i].i_module, 0);
	val_dataset_free(&ds);
}

/* Loads the set $TPUSIM_SOURCE/rel and its specs from hwspecs/ (skips
 * when TPUSIM_SOURCE is unset). */
static void load_set(const char *rel, struct val_dataset *ds,
		     struct val_specs *specs)
{
	char dir[1024], hw_dir[1024];
	NEED_SOURCE(src_path(dir, sizeof dir, rel));
	src_path(hw_dir, sizeof hw_dir, "hwspecs");
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, ds, &d), TS_OK);
	assert_int_equal(val_specs_load_dir(ds, hw_dir, specs, &d), TS_OK);
}

static enum ts_status write_table(FILE *f, void *ctx)
{
	return val_report_print_table(ctx, f);
}

/* The tiny set end to end with hwspecs/v3.yaml. */
static void test_tiny_report(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	load_set("tests/data/val/tiny", &ds, &specs);
	assert_int_equal(specs.n, 1);
	assert_string_equal(specs.spec[0].name, "v3");
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d), TS_OK);

	assert_int_equal(r.n_errors, 0);
	assert_true(r.by_kernel);
	assert_int_equal(r.n_groups, 1);
	for (int i = 0; i < 3; i++) {
		const struct val_row_result *res = &r.rows[i];
		assert_int_equal(res->status, TS_OK);
		assert_true(res->feasible);
		assert_true(res->predicted_ns > 0 && isfinite(res->predicted_ns));
		assert_true(res->roofline_ns > 0 && isfinite(res->roofline_ns));
		assert_true(res->dispatch_ns == 0); /* device-timed */
		assert_int_equal(res->i_tuned, 0);
		assert_int_equal(res->n_kernels, 1);
	}
	/* Steps = prod(ceil(grid / bound)) over the 8x8 tile grid. */
	assert_int_equal(r.rows[0].steps, 1);
	assert_int_equal(r.rows[1].steps, 2);
	assert_int_equal(r.rows[2].steps, 64);
	/* The roofline does not see the config: all three rows equal. */
	assert_true(r.rows[0].roofline_ns == r.rows[2].roofline_ns);
	const struct val_group *g = &r.groups[0];
	assert_string_equal(g->name, "tiny");
	assert_int_equal(g->n_rows, 3);
	assert_int_equal(g->n_ranked, 3);
	/* Measured 1500 < 1700 < 9000 in the order of the steps 1, 2, 64. */
	assert_true(g->tau_steps == 1);
	assert_true(isnan(g->tau_roofline));
	assert_true(isfinite(g->tau_model) && isfinite(g->mape));
	assert_true(g->default_ns == 1500 && g->best_ns == 1500);
	assert_int_equal(r.tiles_all.n_kernels, 1);
	assert_int_equal(r.tiles_config.n_kernels, 1);
	assert_true(r.tiles_all.default_ns == 1500);

	/* The text writer, atomically as the CLI writes files. */
	char out[1100];
	snprintf(out, sizeof out, "%s/val_tiny_table.txt", tu_tmpdir());
	assert_int_equal(ts_write_file_atomic(out, write_table, &r, &d), TS_OK);
	char *text;
	size_t len;
	assert_int_equal(ts_read_file(out, &text, &len, &d), TS_OK);
	assert_non_null(strstr(text, "\nset tiny: 3 rows, 3 estimated, 0 "
				     "errors, 0 infeasible; MAPE "));
	ts_free(text);
	remove(out);

	/* Another model's predictions (compare's folds): all three rows
	 * timed, the model ranks the kernel (predicted 3 < 1 < 2: its pick
	 * is row 2, measured 9000 against the best 1500, top-1 slowdown
	 * 9000/1500 - 1 = 5); one row or all untimed (a fold no model was
	 * trained for), it ranks nothing: tau, top-K, its pick and the
	 * tile totals are NaN, not the pick of a tie of unknowns; the
	 * fewer-steps baseline is the analytic model's still. */
	const double timed[3] = {2000, 3000, 1000};
	const double part[3] = {2000, NAN, 1000};
	const double none[3] = {NAN, NAN, NAN};
	const double *preds[3] = {timed, part, none};
	for (int k = 0; k < 3; k++) {
		struct val_report o;
		assert_int_equal(val_report_repredict(&r, preds[k], &o), TS_OK);
		const struct val_group *og = &o.groups[0];
		assert_true(og->steps_top1_slowdown == 0);
		assert_true(og->tau_steps == 1);
		if (k == 0) {
			assert_near(og->top1_slowdown, 5, 1e-12);
			assert_true(og->chosen_ns == 9000);
			assert_near(o.mean_top1_slowdown, 5, 1e-12);
			assert_int_equal(o.n_rank_kernels, 1);
			assert_int_equal(o.tiles_config.n_kernels, 1);
		} else {
			assert_true(isnan(og->tau_model));
			assert_true(isnan(og->top1_slowdown));
			assert_true(isnan(og->top5_slowdown));
			assert_true(isnan(og->chosen_ns));
			assert_true(isnan(o.mean_top1_slowdown));
			assert_true(isnan(o.mean_top5_slowdown));
			assert_int_equal(o.n_rank_kernels, 0);
			assert_int_equal(o.tiles_config.n_kernels, 0);
		}
		val_report_free(&o);
	}

	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
}

/* A host-timed row is compared with device estimate + the host term: tiny.hlo
 * is one kernel (fusion.1) on one device, so the term is host.call_ns +
 * host.kernel_ns. */
static void test_host_row(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	load_set("tests/data/val/tiny_host", &ds, &specs);
	assert_false(ds.has_configs);
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d), TS_OK);
	const struct val_row_result *res = &r.rows[0];
	assert_int_equal(res->status, TS_OK);
	const struct hw_spec *hw = &specs.spec[0];
	double dispatch = hw->host_call_ns + hw->host_kernel_ns;
	assert_true(dispatch > 0);
	assert_true(res->dispatch_ns == dispatch);
	assert_true(res->predicted_ns == res->device_ns + dispatch);
	assert_int_equal(r.n_host, 1);
	assert_int_equal(r.n_host_recorded, 0);
	assert_true(isnan(r.host_term_mape));
	assert_false(r.by_kernel);
	assert_int_equal(r.n_groups, 1);
	assert_string_equal(r.groups[0].name, "add");
	assert_true(isnan(r.groups[0].tau_model)); /* families do not rank */
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
}

/* details.csv beside measurements.csv: its overhead_ns (any column order,
 * other columns ignored) is read, but only to check the host term: both
 * rows (same module) get the same prediction, recorded overhead or not. */
static void test_host_details(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	load_set("tests/data/val/host_details", &ds, &specs);
	assert_non_null(ds.details_path);
	assert_int_equal(ds.n_overhead, 1);
	assert_int_equal(ds.rows[0].overhead_ns, 100000);
	assert_int_equal(ds.rows[1].overhead_ns, -1);
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d), TS_OK);
	const struct hw_spec *hw = &specs.spec[0];
	double spec = hw->host_call_ns + hw->host_kernel_ns; /* 1 kernel */
	assert_true(spec != 100000);
	for (int i = 0; i < 2; i++) {
		assert_true(r.rows[i].dispatch_ns == spec);
		assert_true(r.rows[i].predicted_ns == r.rows[i].device_ns + spec);
	}
	assert_int_equal(r.n_host, 2);
	assert_int_equal(r.n_host_recorded, 1);
	double ape = fabs(spec - 100000) / 100000;
	assert_true(r.host_term_mape == ape);

	char text[4096] = {0};
	FILE *f = fmemopen(text, sizeof text - 1, "w");
	assert_non_null(f);
	assert_int_equal(val_report_print_table(&r, f), TS_OK);
	fclose(f);
	char want[512];
	snprintf(want, sizeof want,
		 "host-timed rows: 2; each is compared with the device "
		 "estimate + the program's host term (spec host.call_ns + "
		 "host.kernel_ns x kernels (not async DMAs) + host.device_ns x "
		 "(devices - 1)); "
		 "against the overhead the set records for 1 of the calls "
		 "(details.csv, not an input) that term is off by %.1f%% "
		 "(MAPE)\n",
		 100 * ape);
	assert_non_null(strstr(text, want));
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
}

/* A program launched on several devices: host_devices/ar.hlo has
 * replica_count=4 and two kernels (negate, all-reduce), so its host term
 * is host.call_ns + 2 x host.kernel_ns + 3 x host.device_ns. */
static void test_host_devices(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	load_set("tests/data/val/host_devices", &ds, &specs);
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d), TS_OK);
	const struct hw_spec *hw = &specs.spec[0];
	assert_int_equal(r.rows[0].status, TS_OK);
	assert_int_equal(r.rows[0].n_kernels, 2);
	assert_true(r.rows[0].dispatch_ns == hw->host_call_ns +
						  2 * hw->host_kernel_ns +
						  3 * hw->host_device_ns);
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
}

/* The files of a set write_set makes. */
static const char *const set_files[] = {"measurements.csv", "details.csv",
					"m.hlo"};

/* Writes a two-row host set (ids a, b; runtimes 150000 and 140000 ns, b
 * device-timed when b_device) and the given details.csv text into a fresh
 * temporary folder; the module is an empty file (loading only checks that
 * it exists). Returns the folder in dir. */
static void write_set(char *dir, size_t cap, bool b_device,
		      const char *details)
{
	snprintf(dir, cap, "%s/val_details_XXXXXX", tu_tmpdir());
	assert_non_null(mkdtemp(dir));
	char meas[512];
	snprintf(meas, sizeof meas,
		 "id,module,hw,config,runtime_ns,runtime_min_ns,repeats,"
		 "timing,source\n"
		 "a,m.hlo,tpu-v3,,150000,,,host,x\n"
		 "b,m.hlo,tpu-v3,,140000,,,%s,y\n",
		 b_device ? "device" : "host");
	const char *const texts[] = {meas, details, ""};
	_Static_assert(TS_ARRAY_LEN(texts) == TS_ARRAY_LEN(set_files),
		       "one text per file");
	for (size_t i = 0; i < TS_ARRAY_LEN(set_files); i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, set_files[i]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(texts[i], f);
		assert_int_equal(fclose(f), 0);
	}
}

static void remove_set(const char *dir)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(set_files); i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, set_files[i]);
		remove(path);
	}
	remove(dir);
}

/* Loading the set in dir fails at where ("line:col" of its file) with
 * msg; the set is removed. */
static void expect_set_error(const char *dir, const char *file,
			     const char *where, const char *msg)
{
	char got[4096], want[2048];
	struct val_dataset ds;
	struct ts_diag d = {0};
	enum ts_status st = val_dataset_load(dir, &ds, &d);
	diag_line(&d, got, sizeof got);
	val_dataset_free(&ds);
	snprintf(want, sizeof want, "%s/%s:%s: error: %s", dir, file, where,
		 msg);
	remove_set(dir);
	assert_string_equal(got, want);
	assert_int_equal(st, TS_ERR_PARSE);
}

/* A malformed details.csv fails the load at its own line:col. */
static void expect_details_error(bool b_device, const char *details,
				 const char *where, const char *msg)
{
	char dir[1024];
	write_set(dir, sizeof dir, b_device, details);
	expect_set_error(dir, "details.csv", where, msg);
}

static void test_bad_details(void **state)
{
	(void)state;
	expect_details_error(false, "", "1:1",
			     "empty file: expected a header line naming id");
	expect_details_error(false, "overhead_ns,note\n1,x\n", "1:1",
			     "header lacks column 'id'");
	expect_details_error(false, "id,overhead_ns,overhead_ns\n", "1:16",
			     "duplicate column 'overhead_ns'");
	expect_details_error(false, "id,overhead_ns\na,1\nc,2\n", "3:1",
			     "id 'c' is not a row of measurements.csv");
	expect_details_error(false, "id,overhead_ns\na,1\na,2\n", "3:1",
			     "duplicate id 'a' (first on line 2)");
	expect_details_error(false, "id,overhead_ns\na,120us\n", "2:3",
			     "overhead_ns: expected empty or a non-negative "
			     "integer (ns), got '120us'");
	expect_details_error(false, "id,overhead_ns\na,-5\n", "2:3",
			     "overhead_ns: expected empty or a non-negative "
			     "integer (ns), got '-5'");
	expect_details_error(false, "id,overhead_ns\nb,140000\n", "2:3",
			     "overhead_ns 140000 is not below the row's "
			     "runtime_ns 140000");
	expect_details_error(true, "id,overhead_ns\nb,100\n", "2:3",
			     "overhead_ns given for the device-timed row 'b' "
			     "(a device time has no dispatch overhead)");
	expect_details_error(false, "id,overhead_ns\na,1,2\n", "2:5",
			     "too many fields: expected 2 (as in the header)");
	expect_details_error(false, "id,overhead_ns,x\na,1\n", "2:4",
			     "record has 2 fields, expected 3");
	expect_details_error(false, "id,overhead_ns\n\"a,1\n", "2:1",
			     "unterminated quoted field");
}

/* Without an overhead_ns column the file is still read strictly (ids),
 * and every host row keeps the spec's term. */
static void test_details_without_overhead(void **state)
{
	(void)state;
	char dir[1024];
	write_set(dir, sizeof dir, false, "id,note\r\nb,\"q\"\"q\"\r\n");
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	assert_non_null(ds.details_path);
	assert_int_equal(ds.n_overhead, 0);
	assert_int_equal(ds.rows[0].overhead_ns, -1);
	assert_int_equal(ds.rows[1].overhead_ns, -1);
	val_dataset_free(&ds);
	remove_set(dir);
}

/* An all-reduce over 8 partitions whose groups {g, g + 4} take one chip
 * of each of two v5e 2x2 slices. */
static const char slice_module[] =
	"HloModule t, num_partitions=8\n"
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n  x = f32[1048576] parameter(0)\n"
	"  ROOT r = f32[1048576] all-reduce(x), "
	"replica_groups=[4,2]<=[2,4]T(1,0), to_apply=add\n}\n";

/* Writes measurements.csv (text) and m.hlo (slice_module) into a fresh
 * temporary folder, returned in dir; remove_set removes it. */
static void write_module_set(char *dir, size_t cap, const char *meas,
		      const char *module)
{
	snprintf(dir, cap, "%s/val_slice_XXXXXX", tu_tmpdir());
	assert_non_null(mkdtemp(dir));
	const char *const names[] = {"measurements.csv", "m.hlo"};
	const char *const texts[] = {meas, module};
	for (size_t i = 0; i < 2; i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(texts[i], f);
		assert_int_equal(fclose(f), 0);
	}
}

/* Loading a set of measurements meas and module fails at where
 * ("line:col" of measurements.csv) with msg. */
static void expect_load_error(const char *meas, const char *module,
			      const char *where, const char *msg)
{
	char dir[1024];
	write_module_set(dir, sizeof dir, meas, module);
	expect_set_error(dir, "measurements.csv", where, msg);
}

/* A set written from measurements and a module (write_module_set),
 * loaded, with the specs of a folder, and its report: cost_set makes it,
 * free_set removes it. */
struct costed {
	char dir[1024];
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
};

/* The report's status (the set and the specs must load). */
static enum ts_status cost_set(struct costed *s, const char *meas,
			       const char *module, const char *hw_dir,
			       struct ts_diag *d)
{
	write_module_set(s->dir, sizeof s->dir, meas, module);
	assert_int_equal(val_dataset_load(s->dir, &s->ds, d), TS_OK);
	assert_int_equal(val_specs_load_dir(&s->ds, hw_dir, &s->specs, d),
			 TS_OK);
	return val_report_build(&s->ds, &s->specs, NULL, &s->r, d);
}

static void free_set(struct costed *s)
{
	val_report_free(&s->r);
	val_specs_free(&s->specs);
	val_dataset_free(&s->ds);
	remove_set(s->dir);
}

/* A set of measurements meas and module loads, and its report on the
 * specs of hw_dir fails with TS_ERR_SPEC at where ("line:col" of
 * measurements.csv) with msg. */
static void expect_report_error(const char *meas, const char *module,
				const char *hw_dir, const char *where,
				const char *msg)
{
	char got[4096], want[2048];
	struct costed s;
	struct ts_diag d = {0};
	assert_int_equal(cost_set(&s, meas, module, hw_dir, &d), TS_ERR_SPEC);
	diag_line(&d, got, sizeof got);
	snprintf(want, sizeof want, "%s/measurements.csv:%s: error: %s", s.dir,
		 where, msg);
	free_set(&s);
	assert_string_equal(got, want);
}

#define SLICE_HEADER "id,module,hw,config,runtime_ns,runtime_min_ns,repeats," \
		     "timing,source,topology,slices\n"
#define SLICE_HEADER_DEVICES "id,module,hw,config,runtime_ns,runtime_min_ns," \
			     "repeats,timing,source,topology,slices,devices\n"

/* The optional topology and slices columns: parsed per row with located
 * errors; a row on two slices is costed there (its DCN all-reduce slower
 * than the ring of the row without a slice); a slice that is not the
 * module's devices fails the report at the row's topology field. */
static void test_slice_columns(void **state)
{
	(void)state;
	char hw_dir[1024];
	NEED_SOURCE(src_path(hw_dir, sizeof hw_dir, "hwspecs"));
	static const struct {
		const char *row;
		const char *where, *msg;
	} bad[] = {
		{"a,m.hlo,tpu-v5e,,9,,,device,x,2y2,", "2:32",
		 "topology: expected 'x' between the chips along each axis, "
		 "like 16x16"},
		{"a,m.hlo,tpu-v5e,,9,,,device,x,\"2x2x0\",", "2:36",
		 "topology: '0' chips along an axis: expected 1 to 256"},
		{"a,m.hlo,tpu-v5e,,9,,,device,x,2x2,0", "2:35",
		 "slices: expected empty or a whole number from 1 to 1024, "
		 "got '0'"},
		{"a,m.hlo,tpu-v5e,,9,,,device,x,,2", "2:32",
		 "slices: 2 slices of no topology (the topology field is "
		 "empty)"},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
		char meas[512];
		snprintf(meas, sizeof meas, SLICE_HEADER "%s\n", bad[i].row);
		expect_load_error(meas, slice_module, bad[i].where, bad[i].msg);
	}

	struct costed s;
	struct ts_diag d = {0};
	assert_int_equal(
		cost_set(&s,
			 SLICE_HEADER "a,m.hlo,tpu-v5e,,9,,,device,x,2x2,2\n"
				      "b,m.hlo,tpu-v5e,,9,,,device,x,,\n",
			 slice_module, hw_dir, &d),
		TS_OK);
	assert_int_equal(s.ds.rows[0].slice.n_dims, 2);
	assert_int_equal(s.ds.rows[0].slice.count, 2);
	assert_int_equal(s.ds.rows[0].topology_col, 31);
	assert_int_equal(s.ds.rows[1].slice.n_dims, 0);
	assert_int_equal(s.r.rows[0].status, TS_OK);
	assert_int_equal(s.r.rows[1].status, TS_OK);
	assert_true(s.r.rows[0].predicted_ns > 2 * s.r.rows[1].predicted_ns);
	/* every row on one 4x4 slice (the report's default): 16 devices */
	struct val_report r;
	struct val_report_opts o = {
		.slice = {.n_dims = 2, .dims = {4, 4}, .count = 1}};
	assert_int_equal(val_report_build(&s.ds, &s.specs, &o, &r, &d),
			 TS_ERR_SPEC);
	val_report_free(&r);
	assert_int_equal(d.line, 1);
	assert_string_equal(d.msg, "the module runs on 8 devices (replica_count "
				   "1 x num_partitions 8); the slice 4x4 has 16 "
				   "(v5e: 1 per chip)");
	free_set(&s);

	expect_report_error(SLICE_HEADER "a,m.hlo,tpu-v5e,,9,,,device,x,4x4,\n",
			    slice_module, hw_dir, "2:31",
			    "topology: the module runs on 8 devices "
			    "(replica_count 1 x num_partitions 8); the slice "
			    "4x4 has 16 (v5e: 1 per chip)");
}

#define SET_HEADER "id,module,hw,config,runtime_ns,runtime_min_ns,repeats," \
		   "timing,source,set\n"

/* A 4096^3 bf16 matmul: its tiles, and so its time, follow the scoped
 * VMEM it may use. */
static const char dot_module[] =
	"HloModule d\n"
	"ENTRY e {\n  x = bf16[4096,4096] parameter(0)\n"
	"  y = bf16[4096,4096] parameter(1)\n"
	"  ROOT d = bf16[4096,4096] dot(x, y), lhs_contracting_dims={1}, "
	"rhs_contracting_dims={0}\n}\n";

/* The optional set column: spec fields a row's run changed, parsed with
 * errors at the entry's line:col (the set field starts at column 31, a
 * quoted one's text at 32; the ninth entry, one past VAL_MAX_ROW_SETS,
 * at 31 + 134),
 * applied with the spec's own checks when the row is costed (an error
 * there at the row's field). A row at 1 MiB of scoped VMEM is costed
 * slower than one at v5e's 16 MiB; a row that sets the spec's own value
 * costs exactly what a row without a set does. */
static void test_set_column(void **state)
{
	(void)state;
	char hw_dir[1024];
	NEED_SOURCE(src_path(hw_dir, sizeof hw_dir, "hwspecs"));
	static const struct {
		const char *set, *where, *msg;
	} bad[] = {
		{"foo", "2:31", "set: foo: expected PATH=VALUE"},
		{"vmem.nope=1", "2:31", "set: vmem.nope=1: no such spec field"},
		{"vmem.scoped_bytes=x", "2:31",
		 "set: vmem.scoped_bytes=x: the value is not a number"},
		{"vmem.scoped_bytes=1  vmem.scoped_bytes=2", "2:52",
		 "set: vmem.scoped_bytes=2: given twice"},
		/* quoted: the column counts the quote */
		{"\"vmem.nope=1\"", "2:32",
		 "set: vmem.nope=1: no such spec field"},
		{"hbm.bytes=1 hbm.bw_bytes_per_s=1 hbm.efficiency=1 "
		 "hbm.dma_latency_ns=1 hbm.dma_chunk_ns=1 vmem.bytes=1 "
		 "vmem.scoped_bytes=1 mxu.rows=1 mxu.cols=1", "2:165",
		 "set: mxu.cols=1: too many fields"},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
		char meas[512];
		snprintf(meas, sizeof meas,
			 SET_HEADER "a,m.hlo,tpu-v5e,,9,,,device,x,%s\n",
			 bad[i].set);
		expect_load_error(meas, dot_module, bad[i].where, bad[i].msg);
	}

	struct costed s;
	struct ts_diag d = {0};
	assert_int_equal(cost_set(&s,
				  SET_HEADER "a,m.hlo,tpu-v5e,,9,,,device,x,\n"
					     "b,m.hlo,tpu-v5e,,9,,,device,x,"
					     "vmem.scoped_bytes=1048576\n"
					     "c,m.hlo,tpu-v5e,,9,,,device,x,"
					     "vmem.scoped_bytes=16777216\n",
				  dot_module, hw_dir, &d),
			 TS_OK);
	assert_int_equal(s.ds.rows[1].n_sets, 1);
	assert_int_equal(s.ds.rows[1].set_col, 31);
	for (int i = 0; i < 3; i++)
		assert_int_equal(s.r.rows[i].status, TS_OK);
	assert_true(s.r.rows[1].predicted_ns > 1.05 * s.r.rows[0].predicted_ns);
	assert_true(s.r.rows[2].predicted_ns == s.r.rows[0].predicted_ns);
	free_set(&s);

	expect_report_error(SET_HEADER "a,m.hlo,tpu-v5e,,9,,,device,x,"
				       "vmem.scoped_bytes=268435456\n",
			    dot_module, hw_dir, "2:31",
			    "set: vmem.scoped_bytes: larger than vmem.bytes; "
			    "the scoped limit is a part of VMEM");
}

#define DEVICES_HEADER "index,id,x,y,z,core_on_chip,slice\n"

/* Writes dir/d.csv (text NULL: removes it). */
static void put_devices(const char *dir, const char *text)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/d.csv", dir);
	if (text)
		put_file(path, text);
	else
		assert_int_equal(remove(path), 0);
}

/* The optional devices column: a row's compile's device order (its
 * devices/ID.csv), read into its slice; its errors at its own file's
 * line:col, a device order without a topology at the row's field, one
 * that does not fit the slice at the row's devices field. */
static void test_devices_column(void **state)
{
	(void)state;
	char dir[1024], got[4096], want[2048], hw_dir[1024], table[1024];
	NEED_SOURCE(src_path(hw_dir, sizeof hw_dir, "hwspecs"));
	/* 8 devices of a 2x4, listed last index first, y fastest */
	size_t n = (size_t)snprintf(table, sizeof table, DEVICES_HEADER);
	for (int i = 7; i >= 0; i--)
		n += (size_t)snprintf(table + n, sizeof table - n,
				      "%d,%d,%d,%d,0,0,0\n", i, 100 + i, i / 4,
				      i % 4);
	static const struct {
		const char *devices, *where, *msg;
	} bad[] = {
		{DEVICES_HEADER "0,0,0,0,0,0,0\n1,1,0,1,0,0,0\n0,2,0,2,0,0,0\n",
		 "4:1", "index 0 again (first on line 2)"},
		{DEVICES_HEADER "0,0,a,0,0,0,0\n", "2:5",
		 "x: expected a whole number from 0 to 2147483647, got 'a'"},
		{"index,id,x,y,z,core_on_chip\n0,0,0,0,0,0\n", "1:28",
		 "header lacks column 'slice'"},
		{DEVICES_HEADER "0,0,0,0,0,0,0\n2,1,0,1,0,0,0\n", "3:1",
		 "index 2: the file lists 2 devices, indexed 0 to 1"},
		{"", "1:1", "empty file: expected the header line "
			    "index,id,x,y,z,core_on_chip,slice"},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(bad); i++) {
		write_module_set(dir, sizeof dir,
				 SLICE_HEADER_DEVICES
				 "a,m.hlo,tpu-v5e,,9,,,device,x,2x4,,d.csv\n",
				 slice_module);
		put_devices(dir, bad[i].devices);
		struct val_dataset ds;
		struct ts_diag d = {0};
		enum ts_status st = val_dataset_load(dir, &ds, &d);
		diag_line(&d, got, sizeof got);
		snprintf(want, sizeof want, "%s/d.csv:%s: error: %s", dir,
			 bad[i].where, bad[i].msg);
		val_dataset_free(&ds);
		put_devices(dir, NULL);
		remove_set(dir);
		assert_string_equal(got, want);
		assert_int_equal(st, TS_ERR_PARSE);
	}

	write_module_set(dir, sizeof dir,
			 SLICE_HEADER_DEVICES
			 "a,m.hlo,tpu-v5e,,9,,,device,x,,,d.csv\n", slice_module);
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_ERR_PARSE);
	diag_line(&d, got, sizeof got);
	snprintf(want, sizeof want, "%s/measurements.csv:2:33: error: devices: "
		 "a device order of no topology (the topology field is empty)",
		 dir);
	val_dataset_free(&ds);
	remove_set(dir);
	assert_string_equal(got, want);

	write_module_set(dir, sizeof dir,
			 SLICE_HEADER_DEVICES
			 "a,m.hlo,tpu-v5e,,9,,,device,x,2x4,,d.csv\n"
			 "b,m.hlo,tpu-v5e,,9,,,device,x,4x2,,d.csv\n",
			 slice_module);
	put_devices(dir, table);
	struct val_specs specs;
	struct val_report r;
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	const struct hw_slice *s = &ds.rows[0].slice;
	assert_int_equal(s->n_at, 8);
	assert_int_equal(s->at[5][HW_PLACE_X], 1);
	assert_int_equal(s->at[5][HW_PLACE_Y], 1);
	assert_int_equal(s->at[6][HW_PLACE_Y], 2);
	assert_int_equal(ds.rows[0].devices_col, 36);
	/* on 4x2 the same table places y 2 and 3 off the slice */
	assert_int_equal(val_specs_load_dir(&ds, hw_dir, &specs, &d), TS_OK);
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d),
			 TS_ERR_SPEC);
	diag_line(&d, got, sizeof got);
	snprintf(want, sizeof want, "%s/measurements.csv:3:36: error: "
		 "devices: device 2 is placed at y 2: the slice has 2 (0 to 1)",
		 dir);
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
	put_devices(dir, NULL);
	remove_set(dir);
	assert_string_equal(got, want);
}

/* An async pair in a row's module: validate takes the async time hidden
 * behind the work between start and done off the row's time, as `run`
 * does. The all-reduce (ICI) and the dot between its start and done:
 * row time = all-reduce + dot - min(all-reduce, dot), from the two
 * kernels' own estimates; the roofline likewise. */
static const char async_module[] =
	"HloModule t, replica_count=4\n"
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"square {\n  x = f32[1024,1024]{1,0:T(8,128)} parameter(0)\n"
	"  ROOT y = f32[1024,1024]{1,0:T(8,128)} dot(x, x), "
	"lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"
	"ENTRY main {\n"
	"  p = f32[1024,1024]{1,0:T(8,128)} parameter(0)\n"
	"  w = f32[1024,1024]{1,0:T(8,128)} parameter(1)\n"
	"  s = f32[1024,1024]{1,0:T(8,128)} all-reduce-start(p), "
	"replica_groups={{0,1,2,3}}, to_apply=add\n"
	"  d = f32[1024,1024]{1,0:T(8,128)} fusion(w), kind=kOutput, "
	"calls=square\n"
	"  e = f32[1024,1024]{1,0:T(8,128)} all-reduce-done(s)\n"
	"  ROOT t = (f32[1024,1024]{1,0:T(8,128)}, "
	"f32[1024,1024]{1,0:T(8,128)}) tuple(d, e)\n}\n";

static void test_async_hidden(void **state)
{
	(void)state;
	char hw_dir[1024];
	NEED_SOURCE(src_path(hw_dir, sizeof hw_dir, "hwspecs"));
	struct hw_spec hw;
	assert_true(tu_load_spec("v4", &hw));
	struct tu_built b;
	tu_build(async_module, &b);
	const struct sim_kernel *ks[] = {tu_kernel(&b, "s"), tu_kernel(&b, "d")};
	double t[2], roof[2];
	for (int i = 0; i < 2; i++) {
		struct sim_estimate e, r;
		struct ts_diag d = {0};
		assert_int_equal(sim_kernel_estimate(ks[i], &hw, NULL, &e, &d),
				 TS_OK);
		assert_int_equal(sim_kernel_roofline(ks[i], &hw, &r, &d),
				 TS_OK);
		t[i] = e.time_ns;
		roof[i] = r.time_ns;
	}
	tu_built_free(&b);
	assert_true(t[0] > t[1] && t[1] > 0); /* the dot hides in the ICI */

	struct costed s;
	struct ts_diag d = {0};
	assert_int_equal(cost_set(&s,
				  "id,module,hw,config,runtime_ns,runtime_min_ns,"
				  "repeats,timing,source\n"
				  "a,m.hlo,tpu-v4,,100000,,,device,x\n",
				  async_module, hw_dir, &d),
			 TS_OK);
	assert_int_equal(s.r.rows[0].status, TS_OK);
	/* the same sums in another order: a few ulps */
	assert_near(s.r.rows[0].predicted_ns, t[0] + t[1] - fmin(t[0], t[1]),
		    1e-9 * t[0]);
	assert_near(s.r.rows[0].roofline_ns,
		    roof[0] + roof[1] - fmin(roof[0], roof[1]), 1e-9 * roof[0]);
	free_set(&s);
}

/* A spec folder without the generation a row names. */
static void test_missing_spec(void **state)
{
	(void)state;
	char dir[1024];
	NEED_SOURCE(src_path(dir, sizeof dir, "tests/data/val/tiny"));
	struct val_dataset ds;
	struct val_specs specs;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	assert_int_equal(val_specs_load_dir(&ds, "/nonexistent", &specs, &d),
			 TS_ERR_SPEC);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 26); /* after "tiny#r0,modules/tiny.hlo," */
	assert_string_equal(d.msg, "no hardware spec for hw 'tpu-v3': "
				   "/nonexistent/v3.yaml: No such file or "
				   "directory");
	val_specs_free(&specs);
	val_dataset_free(&ds);
}

/* Every allocation failure comes back as TS_ERR_NOMEM, never a crash. */
static void test_nomem(void **state)
{
	(void)state;
	char dir[1024];
	NEED_SOURCE(src_path(dir, sizeof dir, "tests/data/val/tiny"));
	for (long n = 0; n < 64; n++) {
		struct val_dataset ds;
		struct ts_diag d = {0};
		ts_alloc_fail_after(n);
		enum ts_status st = val_dataset_load(dir, &ds, &d);
		ts_alloc_fail_after(-1);
		val_dataset_free(&ds);
		if (st == TS_OK)
			return;
		assert_int_equal(st, TS_ERR_NOMEM);
	}
	fail_msg("val_dataset_load still failing after 64 allocations");
}

/* The same with a details.csv to read. */
static void test_details_nomem(void **state)
{
	(void)state;
	char dir[1024];
	NEED_SOURCE(src_path(dir, sizeof dir, "tests/data/val/host_details"));
	for (long n = 0; n < 128; n++) {
		struct val_dataset ds;
		struct ts_diag d = {0};
		ts_alloc_fail_after(n);
		enum ts_status st = val_dataset_load(dir, &ds, &d);
		ts_alloc_fail_after(-1);
		int n_overhead = ds.n_overhead;
		val_dataset_free(&ds);
		if (st == TS_OK) {
			assert_int_equal(n_overhead, 1);
			return;
		}
		assert_int_equal(st, TS_ERR_NOMEM);
	}
	fail_msg("val_dataset_load still failing after 128 allocations");
}

/* The same for costing: parse, build, estimate and summaries. A failed
 * allocation must never turn into a row error (a silently smaller set). */
static void test_report_nomem(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct ts_diag d = {0};
	load_set("tests/data/val/tiny", &ds, &specs);
	for (long n = 0; n < 4096; n++) {
		struct val_report r;
		ts_alloc_fail_after(n);
		enum ts_status st = val_report_build(&ds, &specs, NULL, &r, &d);
		ts_alloc_fail_after(-1);
		int errors = r.n_errors;
		val_report_free(&r);
		if (st == TS_OK) {
			assert_int_equal(errors, 0);
			val_specs_free(&specs);
			val_dataset_free(&ds);
			return;
		}
		assert_int_equal(st, TS_ERR_NOMEM);
	}
	fail_msg("val_report_build still failing after 4096 allocations");
}

/* Families and shapes of op-set ids: a family of several words is one
 * family (leaky_relu, not leaky), and the ops of one shape share its key
 * whatever their family's length. */
static void test_families(void **state)
{
	(void)state;
	static const char *const cases[][3] = {
		{"layer_norm_f16_10x1024x2048", "layer_norm", "f16_10x1024x2048"},
		{"rms_norm_f16_10x1024x2048", "rms_norm", "f16_10x1024x2048"},
		{"leaky_relu_f16_4096", "leaky_relu", "f16_4096"},
		{"relu_f16_4096", "relu", "f16_4096"},
		{"matmul_bf16_m64_n128_k256:sweepM", "matmul", "bf16_m64_n128_k256"},
		{"softmax_f32_4096x32:sweepN", "softmax", "f32_4096x32"},
		{"fusion_191", "fusion", "191"},
		{"add", "add", ""},
	};
	struct val_dataset ds = {.name = "s"};
	struct ts_arena a;
	ts_arena_init(&a);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char fam[64], want[128];
		val_id_family(cases[i][0], fam, sizeof fam);
		assert_string_equal(fam, cases[i][1]);
		struct val_row row = {.id = cases[i][0]};
		snprintf(want, sizeof want, "s/%s", cases[i][2]);
		assert_string_equal(val_row_key(&a, &ds, &row, true), want);
		snprintf(want, sizeof want, "s/%s", cases[i][1]);
		assert_string_equal(val_row_key(&a, &ds, &row, false), want);
	}
	ts_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_bad_csv),
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_module_links),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_tiny_rows),
		cmocka_unit_test(test_tiny_report),
		cmocka_unit_test(test_host_row),
		cmocka_unit_test(test_host_details),
		cmocka_unit_test(test_host_devices),
		cmocka_unit_test(test_bad_details),
		cmocka_unit_test(test_details_without_overhead),
		cmocka_unit_test(test_slice_columns),
		cmocka_unit_test(test_set_column),
		cmocka_unit_test(test_devices_column),
		cmocka_unit_test(test_async_hidden),
		cmocka_unit_test(test_missing_spec),
		cmocka_unit_test(test_nomem),
		cmocka_unit_test(test_details_nomem),
		cmocka_unit_test(test_report_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
