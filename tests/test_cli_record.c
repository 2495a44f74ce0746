/*
 * test_cli_record.c: `tpusim autotune GRAPH --record DIR`, tried as a user
 * with a flaky TPU, a full disk and a second terminal would: the printed
 * time read as the set format keeps it (val_cmd_read_ns), a torn last line
 * cut on resume, a header in another order, module file names that need
 * CSV quoting, an edited module, a write cut short by a file-size limit
 * and by a full disk,
 * three runs into one folder at once, and the measuring command's process
 * tree (a child holding its output, a setsid child at the timeout, a
 * SIGHUP) ended. Every record is then read by `tpusim validate`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "test_util.h"
#include "val.h"

static char hw[PATH_MAX], hwdir[PATH_MAX], dot[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	src(hw, "hwspecs/v3.yaml");
	src(hwdir, "hwspecs");
	src(dot, "tests/data/cli/big_dot.hlo");
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* printf into a new string (ts_malloc'd). */
static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	char *s = ts_malloc((size_t)n + 1);
	assert_non_null(s);
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

static int count_lines(const char *path)
{
	char *t = slurp(path);
	int n = 0;
	for (const char *c = t; *c; c++)
		n += *c == '\n';
	ts_free(t);
	return n;
}

/* A new record folder and its measurements.csv. */
static void new_record(char *dir, char *csv, const char *stem)
{
	tu_tmp_path(dir, PATH_MAX, stem, "");
	tu_rm_tree(dir);
	snprintf(csv, PATH_MAX + 32, "%s/measurements.csv", dir);
}

/* `autotune GRAPH --budget B --measure-cmd CMD --record DIR -f csv`. */
static void tune(struct proc *p, const char *graph, const char *budget,
		 const char *cmd, const char *dir)
{
	tpusim(p, "autotune", graph, "--hw", hw, "--budget", budget,
	       "--measure-cmd", cmd, "--record", dir, "-f", "csv");
}

static void expect_valid(const char *dir, const char *rows)
{
	struct proc p;
	tpusim(&p, "validate", "--data", dir, "--hw-dir", hwdir);
	expect_rc(&p, 0);
	expect_contains(p.out, rows);
	proc_free(&p);
}

/* The stand-in TPU: 1000 ns plus the config text's length. */
static const char by_len_sh[] = "#!/bin/sh\necho $((1000 + ${#1}))\n";

static void stand_in(char *cmd, size_t cap, char *script)
{
	tu_tmp_path(script, PATH_MAX, "test_record_m", ".sh");
	write_file(script, by_len_sh);
	snprintf(cmd, cap, "sh %s {config}", script);
}

/* The printed time, as val_cmd_read_ns reads it: whole ns from 1 to
 * INT64_MAX, a decimal number alone in the first word. */
static void test_read_ns(void **state)
{
	(void)state;
	static const struct {
		const char *out;
		int64_t ns; /* 0: refused with why */
		const char *why;
	} cases[] = {
		{"1234\n", 1234, NULL},
		{"  1234.6 ns\nlog line\n", 1235, NULL},
		{"1.5e3", 1500, NULL},
		{"0.5", 1, NULL},
		{"9223372036854774784", INT64_C(9223372036854774784), NULL},
		{"0.4", 0, "printed 0.4 ns: below 1 ns once rounded to whole "
			   "ns, as the record keeps them"},
		{"1e-320", 0, "printed 1e-320 ns: below 1 ns once rounded to "
			      "whole ns, as the record keeps them"},
		{"1e300", 0, "printed 1e300 ns: more than the record's largest "
			     "time, 9223372036854775807 ns"},
		{"9223372036854775808", 0,
		 "printed 9223372036854775808 ns: more than the record's "
		 "largest time, 9223372036854775807 ns"},
		{"0x10", 0, "printed '0x10' first: not a decimal number of ns"},
		{"12abc", 0, "printed '12abc' first: not a decimal number of ns"},
		{"-5", 0, "printed '-5' first: not a decimal number of ns"},
		{"inf", 0, "printed 'inf' first: not a decimal number of ns"},
		{"nan", 0, "printed 'nan' first: not a decimal number of ns"},
		{"1e", 0, "printed '1e' first: not a decimal number of ns"},
		{".", 0, "printed '.' first: not a decimal number of ns"},
		{"\x1b[31m5", 0, "printed '?[31m5' first: not a decimal number "
				 "of ns"},
		{"1234.000000000000000000000000000000000000000000", 1234, NULL},
		{"", 0, "printed no time (ns, first on its output)"},
		{" \n\t", 0, "printed no time (ns, first on its output)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ns = -1;
		char why[256] = "";
		bool ok = val_cmd_read_ns(cases[i].out, strlen(cases[i].out),
					  &ns, why, sizeof why);
		assert_int_equal(ok, cases[i].ns != 0);
		if (ok)
			assert_int_equal(ns, cases[i].ns);
		else
			assert_string_equal(why, cases[i].why);
	}
	/* a NUL ends no word: "12" then binary is not a time */
	int64_t ns = 0;
	char why[256];
	assert_false(val_cmd_read_ns("12\0" "0xff", 7, &ns, why, sizeof why));
	assert_string_equal(why, "printed '12?0xff' first: not a decimal "
				 "number of ns");
	/* a refused time is a failed measurement, named with its reason */
	char dir[PATH_MAX], csv[PATH_MAX + 32], failed[PATH_MAX + 32];
	new_record(dir, csv, "test_record_ns");
	struct proc p;
	tune(&p, dot, "1", "echo 1e300", dir);
	expect_rc(&p, 3);
	expect_contains(p.err, "measurement failed: printed 1e300 ns: more "
			       "than the record's largest time, "
			       "9223372036854775807 ns\n");
	proc_free(&p);
	snprintf(failed, sizeof failed, "%s/failed.csv", dir);
	assert_int_equal(count_lines(failed), 2);
	assert_int_equal(access(csv, F_OK), -1);
	/* a command that cannot run: every measurement failed, exit 3 */
	tune(&p, dot, "2", "/nonexistent/measure {config}", dir);
	expect_rc(&p, 3);
	expect_contains(p.err, "cannot run /nonexistent/measure: No such "
			       "file or directory\n");
	expect_contains(p.err, "every measurement failed (2 of 2; the last: "
			       "exited with status 127)");
	proc_free(&p);
	/* a fraction of a ns is rounded as the set keeps it */
	tune(&p, dot, "1", "echo 1234.6", dir);
	expect_rc(&p, 0);
	expect_contains(p.out, ",1235.000,");
	proc_free(&p);
	expect_valid(dir, "1 rows, 1 estimated, 0 errors");
	tu_rm_tree(dir);
}

/* A torn last line (a crash mid-append) is cut on resume, kept aside and
 * said; the cut respects quotes; an unknown header is refused before
 * anything is cut, and a row that opens with a NUL byte where it is; a
 * record of more rows than the lookup table's first size is found again
 * whole. */
static void test_torn(void **state)
{
	(void)state;
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX];
	new_record(dir, csv, "test_record_torn");
	stand_in(cmd, sizeof cmd, script);
	struct proc p;
	tune(&p, dot, "2", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	FILE *f = fopen(csv, "a");
	assert_non_null(f);
	fputs("big_dot-0123.fusion.1.tpu-v3.output_bo", f);
	fclose(f);
	tune(&p, dot, "3", cmd, dir);
	expect_rc(&p, 0);
	char *note = fmt("%s: note: cut a torn last line, left by an append "
			 "cut short (a crash or a full disk), and kept it in "
			 "%s.torn: 38 bytes, "
			 "\"big_dot-0123.fusion.1.tpu-v3.output_bo\"\n",
			 csv, csv);
	expect_contains(p.err, note);
	ts_free(note);
	expect_contains(p.out, ",3,0\n");
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 3);
	char *torn = fmt("%s.torn", csv), *kept = slurp(torn);
	assert_string_equal(kept, "big_dot-0123.fusion.1.tpu-v3.output_bo\n");
	ts_free(kept);
	ts_free(torn);
	/* a newline inside a quoted field is no record's end: the cut is
	 * at the last newline outside quotes */
	f = fopen(csv, "a");
	assert_non_null(f);
	fputs("\"x\ny\",modules/m", f);
	fclose(f);
	tune(&p, dot, "3", cmd, dir);
	expect_rc(&p, 0);
	expect_contains(p.err, "15 bytes, \"\"x\\x0ay\",modules/m\"\n");
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 3);
	/* a header tpusim does not know is refused, the file untouched */
	char *before = slurp(csv);
	f = fopen(csv, "w");
	assert_non_null(f);
	fputs("id,module,hw,when\nr1,m", f);
	fclose(f);
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 1);
	expect_contains(p.err, "measurements.csv:1:14: error: unknown column "
			       "'when'\n");
	proc_free(&p);
	char *after = slurp(csv);
	assert_string_equal(after, "id,module,hw,when\nr1,m");
	ts_free(after);
	/* a row that opens with a NUL byte is a row, not the end of the
	 * text: refused where it is, nothing appended after it */
	static const char nul_row[] = "id,module,hw,config,runtime_ns,"
				      "runtime_min_ns,repeats,timing,source\n"
				      "\0r1,m.hlo,tpu-v3,,1000,,,device,s\n";
	f = fopen(csv, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(nul_row, 1, sizeof nul_row - 1, f),
			 sizeof nul_row - 1);
	fclose(f);
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 1);
	expect_contains(p.err, "measurements.csv:2:1: error: a NUL byte in a "
			       "field (the file is text)\n");
	proc_free(&p);
	struct stat sb;
	assert_int_equal(stat(csv, &sb), 0);
	assert_int_equal(sb.st_size, sizeof nul_row - 1);
	write_file(csv, before);
	ts_free(before);
	/* past 16 recorded rows (the lookup table grows): all found again */
	tune(&p, dot, "20", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	int n = count_lines(csv);
	assert_true(n > 1 + 16);
	tune(&p, dot, "20", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(count_lines(csv), n);
	char *rows = fmt("%d rows, %d estimated, 0 errors", n - 1, n - 1);
	expect_valid(dir, rows);
	ts_free(rows);
	tu_rm_tree(dir);
	remove(script);
}

/* Columns in another order are appended in that order; a module whose
 * file name needs CSV quoting is found again on resume. */
static void test_columns_and_names(void **state)
{
	(void)state;
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX], folder[PATH_MAX], odd[2 * PATH_MAX];
	new_record(dir, csv, "test_record_cols");
	stand_in(cmd, sizeof cmd, script);
	assert_int_equal(mkdir(dir, 0777), 0);
	write_file(csv, "source,timing,repeats,runtime_min_ns,runtime_ns,"
			"config,hw,module,id\n");
	tu_tmp_path(folder, sizeof folder, "test_record_names", "");
	tu_rm_tree(folder);
	assert_int_equal(mkdir(folder, 0777), 0);
	char *text = slurp(dot);
	const char *names[] = {"a,b.hlo", "q\"t.hlo"};
	for (int i = 0; i < 2; i++) {
		snprintf(odd, sizeof odd, "%s/%s", folder, names[i]);
		write_file(odd, text);
		struct proc p;
		tune(&p, odd, "2", cmd, dir);
		expect_rc(&p, 0);
		proc_free(&p);
		tune(&p, odd, "2", cmd, dir);
		expect_rc(&p, 0);
		expect_contains(p.out, ",2,0\n");
		proc_free(&p);
		assert_int_equal(count_lines(csv), 1 + 2 * (i + 1));
	}
	ts_free(text);
	char *rec = slurp(csv);
	/* source first, id last, the quoted module in between */
	expect_contains(rec, "\ntpusim autotune,device,,,1");
	expect_contains(rec, ",tpu-v3,\"modules/a,b-");
	expect_contains(rec, ",tpu-v3,\"modules/q\"\"t-");
	ts_free(rec);
	expect_valid(dir, "4 rows, 4 estimated, 0 errors");
	tu_rm_tree(dir);
	tu_rm_tree(folder);
	remove(script);
}

/* An edited module is a new module: measured anew, kept apart; a
 * recorded module file changed by hand is an error, not overwritten. */
static void test_module_edit(void **state)
{
	(void)state;
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX], graph[PATH_MAX], other[PATH_MAX];
	new_record(dir, csv, "test_record_edit");
	stand_in(cmd, sizeof cmd, script);
	tu_tmp_path(graph, sizeof graph, "test_record_g", ".hlo");
	char *a = slurp(dot);
	write_file(graph, a);
	struct proc p;
	tune(&p, graph, "2", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	/* the same file name, other shapes */
	char *b = slurp(src(other, "tests/data/cli/low_mxu.hlo"));
	write_file(graph, b);
	tune(&p, graph, "2", cmd, dir);
	expect_rc(&p, 0);
	expect_contains(p.out, ",0\n");
	proc_free(&p);
	int lines = count_lines(csv);
	assert_true(lines > 1 + 2);
	expect_valid(dir, " 0 errors");
	/* the first module again: answered from its own rows */
	write_file(graph, a);
	tune(&p, graph, "2", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(count_lines(csv), lines);
	/* its recorded copy edited by hand */
	char *rec = slurp(csv), *m = strstr(rec, "modules/"), path[2 * PATH_MAX];
	*strchr(m, ',') = '\0';
	snprintf(path, sizeof path, "%s/%s", dir, m);
	write_file(path, b);
	tune(&p, graph, "2", cmd, dir);
	expect_rc(&p, 1);
	char want[3 * PATH_MAX];
	snprintf(want, sizeof want,
		 "%s: error: holds other bytes than the module it is named for "
		 "(edited after it was recorded?): move it aside\n", path);
	expect_contains(p.err, want);
	proc_free(&p);
	ts_free(rec);
	ts_free(a);
	ts_free(b);
	tu_rm_tree(dir);
	remove(graph);
	remove(script);
}

/* A write cut short (here by a file-size limit: EFBIG, as a full disk
 * gives ENOSPC) leaves the file as it was and names the cause. */
static void test_short_write(void **state)
{
	(void)state;
	if (access("/usr/bin/prlimit", X_OK) != 0)
		skip();
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX];
	new_record(dir, csv, "test_record_full");
	stand_in(cmd, sizeof cmd, script);
	struct proc p;
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	char *before = slurp(csv), limit[64];
	snprintf(limit, sizeof limit, "--fsize=%zu", strlen(before) + 10);
	char *argv[] = {"prlimit", limit, (char *)env_or_skip("TPUSIM_BIN"),
			"autotune", dot, "--hw", hw, "--budget", "2",
			"--measure-cmd", cmd, "--record", dir, NULL};
	assert_true(spawn(&p, "/usr/bin/prlimit", false, NULL, NULL, argv));
	expect_rc(&p, 3);
	char want[PATH_MAX + 128];
	snprintf(want, sizeof want,
		 "%s: error: cannot append: File too large (the file is as it "
		 "was before this line)\n", csv);
	expect_contains(p.err, want);
	proc_free(&p);
	char *after = slurp(csv);
	assert_string_equal(after, before);
	ts_free(after);
	ts_free(before);
	tune(&p, dot, "2", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 2);
	expect_valid(dir, "2 rows, 2 estimated, 0 errors");
	tu_rm_tree(dir);
	remove(script);
}

/* A full disk (a tmpfs of 64 KiB, filled; as root only, else skipped): the
 * append that needs a new page fails with ENOSPC, named, the file as it
 * was; with room again the run resumes. */
static char mnt[PATH_MAX]; /* test_full_disk's tmpfs */

/* Unmounts it whatever the test's end (an assertion returns early). */
static int unmount(void **state)
{
	(void)state;
	char *cmd = fmt("umount '%s' 2>/dev/null", mnt);
	if (system(cmd) == 0)
		rmdir(mnt);
	ts_free(cmd);
	return 0;
}

static void test_full_disk(void **state)
{
	(void)state;
	char cmd[2 * PATH_MAX], script[PATH_MAX];
	tu_tmp_path(mnt, sizeof mnt, "test_record_tmpfs", "");
	tu_rm_tree(mnt);
	assert_int_equal(mkdir(mnt, 0777), 0);
	char *mount = fmt("mount -t tmpfs -o size=64k tmpfs '%s' 2>/dev/null",
			  mnt);
	int mounted = system(mount);
	ts_free(mount);
	if (mounted != 0) {
		rmdir(mnt);
		print_message("test_full_disk: skipped: cannot mount a tmpfs "
			      "(needs root)\n");
		skip();
	}
	char *dir = fmt("%s/rec", mnt), *csv = fmt("%s/measurements.csv", dir);
	stand_in(cmd, sizeof cmd, script);
	struct proc p;
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	/* the record padded to one whole page (a long source text), the
	 * rest of the disk filled: the next line needs a page there is not */
	char *rec = slurp(csv);
	size_t len = strlen(rec);
	assert_true(len < 4000 && rec[len - 1] == '\n');
	char *pad = ts_calloc(1, 4096 - len + 1);
	assert_non_null(pad);
	memset(pad, 'x', 4096 - len);
	rec[len - 1] = '\0';
	char *full = fmt("%s%s\n", rec, pad);
	write_file(csv, full);
	assert_int_equal(strlen(full), 4096);
	char *filler = fmt("%s/filler", mnt);
	char *fill = fmt("dd if=/dev/zero of='%s' bs=4096 2>/dev/null", filler);
	assert_true(system(fill) != -1);
	tune(&p, dot, "2", cmd, dir);
	expect_rc(&p, 3);
	char *want = fmt("%s: error: cannot append: No space left on device "
			 "(the file is as it was before this line)\n", csv);
	expect_contains(p.err, want);
	proc_free(&p);
	char *after = slurp(csv);
	assert_string_equal(after, full);
	remove(filler);
	tune(&p, dot, "2", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	assert_int_equal(count_lines(csv), 1 + 2);
	expect_valid(dir, "2 rows, 2 estimated, 0 errors");
	remove(script);
	ts_free(after);
	ts_free(want);
	ts_free(fill);
	ts_free(filler);
	ts_free(full);
	ts_free(pad);
	ts_free(rec);
	ts_free(csv);
	ts_free(dir);
}

/* A header-only record with a byte order mark and CRLF is an empty
 * record; a FIFO in a file's place is refused, not read for ever; a run
 * that finds the folder locked waits, saying so. */
static void test_odd_files(void **state)
{
	(void)state;
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX];
	new_record(dir, csv, "test_record_odd");
	stand_in(cmd, sizeof cmd, script);
	assert_int_equal(mkdir(dir, 0777), 0);
	write_file(csv, "\xEF\xBB\xBFid,module,hw,config,runtime_ns,"
			"runtime_min_ns,repeats,timing,source\r\n");
	struct proc p;
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 0);
	proc_free(&p);
	expect_valid(dir, "1 rows, 1 estimated, 0 errors");
	/* the folder locked by another: the run waits until it is free */
	char *lock = fmt("%s/.lock", dir), *err = fmt("%s/err", dir);
	char *sh = fmt("exec 9>'%s'; flock 9; ('%s' autotune '%s' --hw '%s' "
		       "--budget 2 --measure-cmd '%s' --record '%s' 9>&- "
		       "2>'%s' >/dev/null &)\nsleep 0.5; cat '%s'; exec 9>&-; "
		       "wait",
		       lock, env_or_skip("TPUSIM_BIN"), dot, hw, cmd, dir, err,
		       err);
	char *argv[] = {"sh", "-c", sh, NULL};
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
	expect_rc(&p, 0);
	char *note = fmt("%s: note: another run is recording into this folder: "
			 "waiting for it to end\n", dir);
	assert_string_equal(p.out, note);
	proc_free(&p);
	for (int i = 0; i < 300 && count_lines(csv) < 1 + 2; i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	assert_int_equal(count_lines(csv), 1 + 2);
	/* a FIFO where measurements.csv belongs */
	remove(csv);
	assert_int_equal(mkfifo(csv, 0666), 0);
	tune(&p, dot, "1", cmd, dir);
	expect_rc(&p, 3);
	char *want = fmt("%s: error: not a regular file, as a record's files "
			 "are\n", csv);
	expect_contains(p.err, want);
	proc_free(&p);
	ts_free(want);
	ts_free(note);
	ts_free(sh);
	ts_free(err);
	ts_free(lock);
	tu_rm_tree(dir);
	remove(script);
}

/* Three runs into one folder at once: one records, the others wait and
 * find it recorded; nothing duplicated, nothing lost. */
static void test_concurrent(void **state)
{
	(void)state;
	char dir[PATH_MAX], csv[PATH_MAX + 32], cmd[2 * PATH_MAX],
		script[PATH_MAX];
	new_record(dir, csv, "test_record_conc");
	stand_in(cmd, sizeof cmd, script);
	const char *bin = env_or_skip("TPUSIM_BIN");
	char *one = fmt("'%s' autotune '%s' --hw '%s' --budget 4 "
			"--measure-cmd '%s' --record '%s' >/dev/null 2>&1",
			bin, dot, hw, cmd, dir);
	char *sh = fmt("%s & %s & %s & wait", one, one, one);
	char *argv[] = {"sh", "-c", sh, NULL};
	struct proc p;
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
	expect_rc(&p, 0);
	proc_free(&p);
	ts_free(one);
	ts_free(sh);
	assert_int_equal(count_lines(csv), 1 + 4);
	expect_valid(dir, "4 rows, 4 estimated, 0 errors");
	tu_rm_tree(dir);
	remove(script);
}

/* Has process pid ended (no such process, or a zombie), within 3 s? */
static bool ended(const char *pid_file)
{
	char *t = slurp(pid_file);
	long pid = atol(t);
	ts_free(t);
	assert_true(pid > 0);
	for (int i = 0; i < 300; i++) {
		char path[64], buf[512] = "";
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		FILE *f = fopen(path, "r");
		if (!f)
			return true;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *rp = strrchr(buf, ')');
		if (rp && rp[1] == ' ' && rp[2] == 'Z')
			return true;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	return false;
}

/* The measuring command's whole tree is ended: a child holding its output
 * (the measurement ends when the command exits), a setsid child at the
 * timeout, and the measurement in flight when tpusim gets SIGHUP, SIGINT,
 * SIGQUIT or SIGTERM (unless started with it ignored); tpusim's own older
 * children are left alone. */
static void test_tree(void **state)
{
	(void)state;
	char script[PATH_MAX], pid_file[PATH_MAX], cmd[3 * PATH_MAX];
	tu_tmp_path(script, sizeof script, "test_record_tree", ".sh");
	tu_tmp_path(pid_file, sizeof pid_file, "test_record_pid", ".txt");
	snprintf(cmd, sizeof cmd, "sh %s %s", script, pid_file);
	struct proc p;
	/* a child that keeps the output open */
	write_file(script, "sleep 30 &\necho $! > \"$1\"\necho 1234\n");
	time_t t0 = time(NULL);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", cmd, "--measure-timeout", "20", "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",1234.000,");
	proc_free(&p);
	assert_true(time(NULL) - t0 < 10);
	assert_true(ended(pid_file));
	/* a child in a session of its own, at the timeout */
	write_file(script, "setsid sleep 300 >/dev/null 2>&1 &\n"
			   "echo $! > \"$1\"\nsleep 30\n");
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", cmd, "--measure-timeout", "1", "-f", "csv");
	expect_rc(&p, 3);
	expect_contains(p.err, "measurement failed: timed out after 1 s\n");
	proc_free(&p);
	assert_true(ended(pid_file));
	/* each stop signal during a measurement: the measurement ends, then
	 * tpusim, by that signal; ignored from the start (nohup), nothing
	 * ends and the measurement is taken (env --default-signal: a shell
	 * starts a background job with SIGINT and SIGQUIT ignored) */
	write_file(script, "echo $$ > \"$1.tmp\"\nmv \"$1.tmp\" \"$1\"\n"
			   "sleep 1\necho 1234\n");
	static const struct {
		const char *name, *trap, *rc;
	} sigs[] = {{"HUP", "", "129\n"}, {"INT", "", "130\n"},
		    {"QUIT", "", "131\n"}, {"TERM", "", "143\n"},
		    {"HUP", "trap '' HUP; ", "0\n"}};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		remove(pid_file);
		char *sh = fmt("ulimit -c 0; %senv --default-signal=INT,QUIT "
			       "'%s' autotune '%s' --hw '%s' "
			       "--budget 1 --measure-cmd '%s' -f csv "
			       "2>/dev/null & t=$!\n"
			       "while [ ! -s '%s' ]; do sleep 0.05; done\n"
			       "kill -%s $t; wait $t; echo $?",
			       sigs[i].trap, env_or_skip("TPUSIM_BIN"), dot, hw,
			       cmd, pid_file, sigs[i].name);
		char *argv[] = {"sh", "-c", sh, NULL};
		t0 = time(NULL);
		assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
		expect_rc(&p, 0);
		expect_contains(p.out, sigs[i].rc);
		if (sigs[i].trap[0])
			expect_contains(p.out, ",1234.000,");
		proc_free(&p);
		ts_free(sh);
		assert_true(time(NULL) - t0 < 10);
		assert_true(ended(pid_file));
	}
	/* tpusim's own children from before (a shell's job that exec'd it)
	 * are not the command's: left running */
	char *sh = fmt("sleep 30 & echo $! > '%s'; exec '%s' autotune '%s' "
		       "--hw '%s' --budget 1 --measure-cmd 'echo 1234' -f csv",
		       pid_file, env_or_skip("TPUSIM_BIN"), dot, hw);
	char *argv[] = {"sh", "-c", sh, NULL};
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
	expect_rc(&p, 0);
	proc_free(&p);
	ts_free(sh);
	char *t = slurp(pid_file);
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld", atol(t));
	assert_int_equal(access(path, F_OK), 0);
	kill((pid_t)atol(t), SIGKILL);
	ts_free(t);
	remove(pid_file);
	remove(script);
}

/* A placeholder in a shell's script is spliced into code: warned, and
 * the values come as environment variables too. */
static void test_shell(void **state)
{
	(void)state;
	char out_file[PATH_MAX], cmd[2 * PATH_MAX];
	tu_tmp_path(out_file, sizeof out_file, "test_record_env", ".txt");
	snprintf(cmd, sizeof cmd,
		 "sh -c 'printf %%s \"$TPUSIM_KERNEL $TPUSIM_CONFIG\" > %s; "
		 "echo 1000'", out_file);
	struct proc p;
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", cmd, "-f", "csv");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	proc_free(&p);
	char *env = slurp(out_file);
	assert_string_equal(env, "fusion.1 output_bounds=32x8;"
				 "kernel_bounds=256x8");
	ts_free(env);
	remove(out_file);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", "sh -c 'echo 1000 {module}'", "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.err,
			"tpusim autotune: warning: --measure-cmd: a placeholder "
			"in sh's -c script is spliced into its source (a quote "
			"or $(...) in a file name would run as code); use "
			"\"$TPUSIM_MODULE\", \"$TPUSIM_KERNEL\" and "
			"\"$TPUSIM_CONFIG\", which the command gets\n");
	proc_free(&p);
	/* behind a wrapper: warned; as a positional parameter: safe */
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", "env sh -ec 'echo 1000 {kernel}'", "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.err, "a placeholder in sh's -c script is spliced");
	proc_free(&p);
	tpusim(&p, "autotune", dot, "--hw", hw, "--budget", "1",
	       "--measure-cmd", "sh -c 'echo 1000 \"$1\"' sh {module}", "-f",
	       "csv");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_ns),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_columns_and_names),
		cmocka_unit_test(test_module_edit),
		cmocka_unit_test(test_short_write),
		cmocka_unit_test_teardown(test_full_disk, unmount),
		cmocka_unit_test(test_odd_files),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_shell),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
