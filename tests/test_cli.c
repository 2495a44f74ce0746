/*
 * test_cli.c: end-to-end tests of the tpusim executable (path in
 * TPUSIM_BIN, sources in TPUSIM_SOURCE): exit codes, usage and diagnostic
 * messages, the four output formats, the stdout write check, and `run` on
 * cli/examples/mlp_train_step.hlo. Each run spawns the binary with stdin
 * from /dev/null and stdout/stderr captured in temporary files.
 */
#define _GNU_SOURCE /* unshare(2), for test_full_disk's own mount table */
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "test_util.h"
#include "ts.h"

/* ---- global options, help, commands ------------------------------------ */

static void test_version(void **state)
{
	(void)state;
	struct proc p;
	/* the second line says whether the build found Open MPI */
	static const char *const mpi[] = {
		"open-mpi: yes (mpirun -n N tpusim whatif splits the points)\n",
		"open-mpi: no (built without it: whatif runs in one process)\n"};
	tpusim(&p, "--version");
	expect_rc(&p, 0);
	assert_true(starts_with(p.out, "tpusim " TPUSIM_VERSION "\n"));
	const char *second = p.out + strlen("tpusim " TPUSIM_VERSION "\n");
	if (strcmp(second, mpi[0]) != 0)
		assert_string_equal(second, mpi[1]);
	assert_string_equal(p.err, "");
	proc_free(&p);
	tpusim(&p, "-V");
	expect_rc(&p, 0);
	assert_true(starts_with(p.out, "tpusim 0.1.0\n"));
	proc_free(&p);
}

/* Every command listed by --help has its own help, and `help NAME` prints
 * the same text as `NAME --help`. */
static void test_help_lists_every_command(void **state)
{
	(void)state;
	struct proc top;
	tpusim(&top, "--help");
	expect_rc(&top, 0);
	assert_string_equal(top.err, "");
	assert_true(starts_with(top.out, "usage: tpusim "));
	expect_contains(top.out, "Exit codes:\n  0  success\n  1  bad input");
	expect_contains(top.out, "  2  usage error");
	expect_contains(top.out, "  3  a file cannot be read or written");
	const char *list = strstr(top.out, "Commands:\n");
	assert_non_null(list);
	list += strlen("Commands:\n");
	int n_cmds = 0;
	bool saw_run = false, saw_help = false;
	while (starts_with(list, "  ")) {
		char name[64];
		assert_int_equal(sscanf(list, " %63s", name), 1);
		saw_run |= strcmp(name, "run") == 0;
		saw_help |= strcmp(name, "help") == 0;
		struct proc a, b;
		tpusim(&a, name, "--help");
		expect_rc(&a, 0);
		char usage[96];
		snprintf(usage, sizeof usage, "usage: tpusim %s ", name);
		assert_true(starts_with(a.out, usage));
		expect_contains(a.out, "  -h, --help ");
		expect_contains(a.out, "Exit codes:");
		tpusim(&b, "help", name);
		expect_rc(&b, 0);
		assert_string_equal(a.out, b.out);
		proc_free(&a);
		proc_free(&b);
		n_cmds++;
		list = strchr(list, '\n');
		assert_non_null(list);
		list++;
	}
	assert_true(saw_run && saw_help);
	assert_true(n_cmds >= 2);
	proc_free(&top);

	/* `tpusim help` and -h are the top-level help too. */
	struct proc h;
	tpusim(&h, "help");
	expect_rc(&h, 0);
	assert_true(starts_with(h.out, "usage: tpusim "));
	proc_free(&h);
	tpusim(&h, "-h", "run");
	expect_rc(&h, 0);
	assert_true(starts_with(h.out, "usage: tpusim run GRAPH.hlo"));
	proc_free(&h);
}

static void test_no_command(void **state)
{
	(void)state;
	struct proc p;
	tpusim_to(&p, NULL, (const char *)NULL);
	expect_rc(&p, 2);
	assert_string_equal(p.out, "");
	assert_true(starts_with(p.err, "usage: tpusim "));
	proc_free(&p);
}

static void test_unknown_command(void **state)
{
	(void)state;
	struct proc p;
	tpusim(&p, "rnu");
	expect_rc(&p, 2);
	assert_string_equal(p.out, "");
	assert_string_equal(p.err, "tpusim: 'rnu' is not a tpusim command. "
				   "Did you mean 'run'?\n");
	proc_free(&p);

	tpusim(&p, "frobnicate");
	expect_rc(&p, 2);
	assert_string_equal(p.err, "tpusim: 'frobnicate' is not a tpusim "
				   "command. See 'tpusim --help'.\n");
	proc_free(&p);

	tpusim(&p, "help", "hlep");
	expect_rc(&p, 2);
	assert_string_equal(p.err, "tpusim: 'hlep' is not a tpusim command. "
				   "Did you mean 'help'?\n");
	proc_free(&p);
}

/* ---- usage errors: exit 2, nothing on stdout ---------------------------- */

static void test_usage_errors(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct {
		const char *args[10];
		const char *err; /* expected substring of stderr */
	} cases[] = {
		{{"--bogus"}, "tpusim: error: unknown option '--bogus'\n"
			      "Try 'tpusim --help'.\n"},
		{{"-x"}, "tpusim: error: unknown option '-x'\n"},
		{{"run", ex, "--hw", v3, "--roofline=yes"},
		 "tpusim run: error: option '--roofline' takes no value\n"},
		{{"run", ex, "--hw", v3, "-q"},
		 "tpusim run: error: unknown option '-q'\n"},
		{{"run", ex, "--hw", v3, "--bogus"},
		 "tpusim run: error: unknown option '--bogus'\n"
		 "Try 'tpusim run --help'.\n"},
		{{"run", ex},
		 "tpusim run: error: --hw SPEC.yaml is required"},
		{{"run", "--hw", v3},
		 "tpusim run: error: expected at least 1 argument, got 0\n"
		 "usage: tpusim run GRAPH.hlo|-|DUMP_DIR... --hw SPEC.yaml "
		 "[options]\n"},
		{{"tile", ex, ex, "--hw", v3},
		 "tpusim tile: error: expected 1 argument, got 2\n"},
		{{"run", ex, "--hw", v3, "--format", "xml"},
		 "tpusim run: error: unknown format 'xml' (expected table, "
		 "csv, json or yaml)\n"},
		{{"run", ex, "--hw"},
		 "tpusim run: error: option '--hw' needs a value\n"},
		{{"run", ex, "--hw", v3, "--trip-count", "0"},
		 "tpusim run: error: --trip-count: expected a whole number"},
		{{"run", ex, "--hw", v3, "--trip-count", "3x"},
		 "got '3x'"},
		{{"run", ex, "--hw", v3, "--kernel", "fusion.1"},
		 "tpusim run: error: --kernel names the kernel --config "
		 "applies to; give --config too\n"},
		{{"run", ex, "--hw", v3, "--explain", "fusion.1", "-f", "json"},
		 "tpusim run: error: --explain writes text"},
		{{"help", "run", "extra"},
		 "tpusim help: error: expected at most 1 argument, got 2\n"},
		{{"tile", ex, "--hw", v3, "--hw", v3},
		 "tpusim tile: error: option '--hw' given twice: it takes one "
		 "value\nTry 'tpusim tile --help'.\n"},
		{{"run", ex, "--hw", v3, "--hw", v3},
		 "tpusim run: error: --hw: spec v3 given twice\n"},
		{{"fuse", ex, "--hw", v3, "-o", "a", "-o", "b"},
		 "tpusim fuse: error: option '--output' given twice"},
		{{"run", ex, "--hw", v3, "--set", "hbm.bw=1"},
		 "tpusim run: error: --set 'hbm.bw' is not a numeric spec "
		 "field; the fields:\n  chip.tensorcores, chip.megacore_min_elems, "
		 "mxu.count,"},
		{{"run", ex, "--hw", v3, "--set", "mxu.count=1", "--set",
		  "mxu.count=2"},
		 "tpusim run: error: --set mxu.count=2: mxu.count given twice\n"},
		{{"run", ex, "--hw", v3, "--set", "mxu.count"},
		 "tpusim run: error: --set mxu.count: expected PATH=VALUE (e.g. "
		 "hbm.bw_bytes_per_s=1.6e12)\n"},
		{{"run", ex, "--hw", v3, "--set", "mxu.count=two"},
		 "tpusim run: error: --set mxu.count=two: 'two' is not a "
		 "number\n"},
		{{"run", ex, "--hw", v3, "--set", "hbm.bw_bytes_per_s=fast"},
		 "'fast' is not a number (in bytes/s)\n"},
		{{"run", ex, "--hw", v3, "--set", "mxu.count=2.5"},
		 "tpusim run: error: --set: mxu.count: 2.5 is not an integer\n"},
	};
	for (size_t i = 0; i < TS_ARRAY_LEN(cases); i++) {
		struct proc p;
		tpusim_args(&p, NULL, cases[i].args);
		if (p.rc != 2)
			fail_msg("case %zu (%s %s): exit %d, expected 2\n%s", i,
				 cases[i].args[0], cases[i].args[1] ?
				 cases[i].args[1] : "", p.rc, p.err);
		assert_string_equal(p.out, "");
		expect_contains(p.err, cases[i].err);
		proc_free(&p);
	}
}

/* `run` of the repository file rel with `--hw a --hw b`: its stderr is
 * ab (whole) or holds it; with `--hw b --hw a` it holds ba; with
 * `--hw a` alone it says nothing. a and b: hwspecs/ names. */
static void expect_spec_notes(const char *rel, const char *a, const char *b,
			      const char *ab, bool whole, const char *ba)
{
	char f[PATH_MAX], ha[PATH_MAX], hb[PATH_MAX], name[64];
	src(f, rel);
	snprintf(name, sizeof name, "hwspecs/%s.yaml", a);
	src(ha, name);
	snprintf(name, sizeof name, "hwspecs/%s.yaml", b);
	src(hb, name);
	struct proc p;
	tpusim(&p, "run", f, "--hw", ha, "--hw", hb);
	expect_rc(&p, 0);
	if (whole)
		assert_string_equal(p.err, ab);
	else
		expect_contains(p.err, ab);
	proc_free(&p);
	tpusim(&p, "run", f, "--hw", hb, "--hw", ha);
	expect_rc(&p, 0);
	expect_contains(p.err, ba);
	proc_free(&p);
	tpusim(&p, "run", f, "--hw", ha);
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	proc_free(&p);
}

/* An unfused module is fused as XLA compiles it for the first --hw; a
 * second spec that XLA would compile otherwise (its row max) is named. */
static void test_rewrite_note(void **state)
{
	(void)state;
	expect_spec_notes("tests/data/fuzz_pipeline/row_max_window.hlo",
			  "v5e", "v3",
			  "tpusim run: note: module a is fused as XLA compiles "
			  "it for v5e (the first --hw): 1 row-max broadcast "
			  "is a reduce-window here; XLA for v3 keeps it a "
			  "broadcast (xla.row_max_window), which its figures "
			  "here do not show\n",
			  true,
			  "1 row-max broadcast stays a broadcast here; "
			  "XLA for v5e makes it a reduce-window");
}

/* The copies the rewrite makes are said, with their bytes: into a
 * donated buffer (the scan's cache, 16 KiB), out of the buffers other
 * devices write (an all-gather's and a permute's results, 4 MiB each). */
static void test_copy_notes(void **state)
{
	(void)state;
	static const struct {
		const char *rel, *err;
	} cases[] = {
		{"tests/data/fuzz_pipeline/donated_scan.hlo",
		 "tpusim run: note: module donated_scan: 1 output to live in a "
		 "donated or aliased parameter's buffer is made elsewhere (in a "
		 "buffer of its own while the parameter is still read, or "
		 "another parameter, a constant, a buffer another output lives "
		 "in); XLA copies it in (0.01638 MB, a copy kernel each)\n"},
		{"tests/data/fuzz_pipeline/gathered_result.hlo",
		 "tpusim run: note: module g: 2 outputs other devices write (an "
		 "all-gather's, all-to-all's or collective-permute's result); "
		 "XLA copies them out of the buffer they write (8.389 MB, a "
		 "copy kernel each)\n"},
	};
	char hw[PATH_MAX];
	src(hw, "hwspecs/v5e.yaml");
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char f[PATH_MAX];
		src(f, cases[i].rel);
		struct proc p;
		tpusim(&p, "run", f, "--hw", hw);
		expect_rc(&p, 0);
		assert_string_equal(p.err, cases[i].err);
		proc_free(&p);
	}
}

/* Costed on v5e and v7 from one program, an unfused module is scheduled
 * as XLA compiles it for the first --hw (sim/schedule.c): the other's
 * asynchronous all-reduces are said, both ways; one spec alone says
 * nothing. */
static void test_schedule_note(void **state)
{
	(void)state;
	expect_spec_notes("tests/data/fuzz_pipeline/async_all_reduce.hlo",
			  "v5e", "v7",
			  "tpusim run: note: module m is scheduled as XLA "
			  "compiles it for v5e (the first --hw): 0 all-reduces "
			  "run asynchronously here; XLA for v7 runs 1 so "
			  "(xla.async_all_reduce_bytes), which its figures "
			  "here do not show\n",
			  true,
			  "for v7 (the first --hw): 1 all-reduce runs "
			  "asynchronously here; XLA for v5e runs 0 so");
}

/* Costed on v5e and v4 from one program, an unfused module's all-gather
 * beside an independent dot runs asynchronously as XLA compiles it for
 * v5e, synchronously for v4: said both ways; one spec alone says
 * nothing, nor do two when neither runs it so (v5e/ops_all_gather's,
 * beside no dot). */
static void test_gather_note(void **state)
{
	(void)state;
	expect_spec_notes("tests/data/fuzz_pipeline/async_all_gather.hlo",
			  "v5e", "v4",
			  "tpusim run: note: module m is scheduled as XLA "
			  "compiles it for v5e (the first --hw): 1 of its 1 "
			  "all-gather runs asynchronously here; XLA for v4 "
			  "runs 0 so (xla.async_all_gather), which its "
			  "figures here do not show\n",
			  true,
			  "for v4 (the first --hw): 0 of its 1 all-gather run "
			  "asynchronously here; XLA for v5e runs 1 so");
	char f[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	src(f, "data/compiled/v5e/ops_all_gather.spmd.hlo");
	src(a, "hwspecs/v5e.yaml");
	src(b, "hwspecs/v4.yaml");
	struct proc p;
	tpusim(&p, "run", f, "--hw", a, "--hw", b);
	expect_rc(&p, 0);
	assert_null(strstr(p.err, "all-gather run"));
	proc_free(&p);
}

/* A second --hw whose XLA combines all-reduces up to another size
 * (v7 keeps what its SparseCores run apart) is said, both ways, with
 * what the first spec's combining did; one spec alone says nothing. */
static void test_combine_note(void **state)
{
	(void)state;
	expect_spec_notes("tests/data/fuzz_pipeline/all_reduce_combine.hlo",
			  "v5e", "v7",
			  "tpusim run: note: module c is fused as XLA compiles "
			  "it for v5e (the first --hw): 2 of its 3 all-reduces "
			  "combined into others, up to 67108864 bytes; XLA for "
			  "v7 combines up to 1048575 (xla.all_reduce_combine_"
			  "bytes, below xla.async_all_reduce_bytes), which its "
			  "figures here do not show\n",
			  false,
			  "for v7 (the first --hw): 0 of its 3 "
			  "all-reduces combined into others, up to "
			  "1048575 bytes; XLA for v5e combines up to "
			  "67108864 ");
	/* a compiled module: XLA combined it already, nothing to say */
	char v7[PATH_MAX], v5e[PATH_MAX], compiled[PATH_MAX];
	src(v7, "hwspecs/v7.yaml");
	src(v5e, "hwspecs/v5e.yaml");
	src(compiled, "data/compiled/v5e/resnet_s.tpu.hlo");
	struct proc p;
	tpusim(&p, "run", compiled, "--hw", v5e, "--hw", v7);
	expect_rc(&p, 0);
	assert_null(strstr(p.err, "all-reduces combined"));
	proc_free(&p);
}

/* ---- bad input: exit 1 with a located diagnostic; missing files: 3 ------ */

static void test_missing_file(void **state)
{
	(void)state;
	char v3[PATH_MAX], ex[PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	src(ex, "cli/examples/mlp_train_step.hlo");
	struct proc p;
	tpusim(&p, "run", "no/such/graph.hlo", "--hw", v3);
	expect_rc(&p, 3);
	assert_string_equal(p.out, "");
	assert_string_equal(p.err, "no/such/graph.hlo: error: cannot open: "
				   "No such file or directory\n");
	proc_free(&p);

	tpusim(&p, "run", ex, "--hw", "no/such/spec.yaml");
	expect_rc(&p, 3);
	assert_string_equal(p.err, "no/such/spec.yaml: error: cannot open: "
				   "No such file or directory\n");
	proc_free(&p);
	/* a name's control bytes reach the terminal as text, not as its
	 * commands */
	tpusim(&p, "run", "no\x1b[2Jsuch.hlo", "--hw", v3);
	expect_rc(&p, 3);
	assert_string_equal(p.err, "no\\x1b[2Jsuch.hlo: error: cannot open: "
				   "No such file or directory\n");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--set", "a\x07" "b=1");
	expect_rc(&p, 2);
	expect_contains(p.err, "--set 'a\\x07b' is not a numeric spec field");
	assert_null(strchr(p.err, '\a'));
	proc_free(&p);
}

/* Inputs that never end or are too large are refused, exit 1, without
 * reading on: an HLO input over 1 GiB, a spec over 1 MiB (also one
 * reached through inherits:). */
static void test_unbounded_inputs(void **state)
{
	(void)state;
	char v3[PATH_MAX], ex[PATH_MAX], spec[PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	src(ex, "cli/examples/mlp_train_step.hlo");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", "/dev/zero");
	expect_rc(&p, 1);
	assert_string_equal(p.err, "/dev/zero: error: the file is larger than "
				   "1048576 bytes: not read\n");
	proc_free(&p);
	close(make_temp(spec));
	FILE *f = fopen(spec, "w");
	assert_non_null(f);
	fputs("name: x\ninherits: /dev/zero\n", f);
	fclose(f);
	tpusim(&p, "run", ex, "--hw", spec);
	expect_rc(&p, 1);
	expect_contains(p.err, ":2:11: error: inherits: cannot read '/dev/zero': "
			       "the file is larger than 1048576 bytes: not read");
	proc_free(&p);
	remove(spec);
}

/* A file's bytes (ts_malloc'd) and their count; fails the test when it
 * cannot be read. */
static char *read_bytes(const char *path, size_t *len)
{
	char *bytes = NULL;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file(path, &bytes, len, &d), TS_OK);
	return bytes;
}

/* Copies file from to to, byte for byte (the test's fixtures). */
static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *bytes = read_bytes(from, &len);
	FILE *f = fopen(to, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	ts_free(bytes);
}

/* An output that names an input or another output is refused before
 * anything is written: exit 2, both options named, every file's bytes as
 * they were. Every command with an output file, each output pointed at
 * each kind of input it has and at another output; every folder output
 * (--plots, --trace DIR, --record) at an input in its folder under the
 * name of a file it writes (a pattern's, run_*.png, included), and one
 * that holds inputs under other names, which is fine. */
static void test_outputs_never_clobber(void **state)
{
	(void)state;
	char dir[] = "/tmp/tpusim_clobber_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char ex[PATH_MAX], v3src[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3src, "hwspecs/v3.yaml");
	char in[PATH_MAX], spec[PATH_MAX], specs[PATH_MAX], set[PATH_MAX],
		meas[PATH_MAX], details[PATH_MAX], specs_v3[PATH_MAX],
		out[PATH_MAX], link[PATH_MAX], model[PATH_MAX], wpng[PATH_MAX],
		pjson[PATH_MAX], rpng[PATH_MAX], apng[PATH_MAX], cpng[PATH_MAX],
		dump[PATH_MAX], dumped[PATH_MAX], gnn[PATH_MAX];
	src(gnn, "learned/default.gnn");
	snprintf(model, sizeof model, "%s/m.gnn", dir);
	snprintf(wpng, sizeof wpng, "%s/whatif.png", dir);
	snprintf(pjson, sizeof pjson, "%s/point_0.json", dir);
	snprintf(rpng, sizeof rpng, "%s/run_c.png", dir);
	snprintf(apng, sizeof apng, "%s/autotune.png", dir);
	snprintf(cpng, sizeof cpng, "%s/compare_ape.png", dir);
	snprintf(dump, sizeof dump, "%s/dump", dir);
	snprintf(dumped, sizeof dumped, "%s/dump/m.after_optimizations.txt",
		 dir);
	snprintf(in, sizeof in, "%s/in.hlo", dir);
	snprintf(spec, sizeof spec, "%s/v3.yaml", dir);
	snprintf(specs, sizeof specs, "%s/specs", dir);
	snprintf(specs_v3, sizeof specs_v3, "%s/specs/v3.yaml", dir);
	snprintf(set, sizeof set, "%s/set", dir);
	snprintf(meas, sizeof meas, "%s/set/measurements.csv", dir);
	snprintf(details, sizeof details, "%s/set/details.csv", dir);
	snprintf(out, sizeof out, "%s/out.hlo", dir);
	snprintf(link, sizeof link, "%s/link.hlo", dir);
	assert_int_equal(mkdir(specs, 0700), 0);
	assert_int_equal(mkdir(set, 0700), 0);
	assert_int_equal(mkdir(dump, 0700), 0);
	copy_file(gnn, model);
	copy_file(ex, wpng);  /* inputs named as a folder output's files */
	copy_file(v3src, pjson);
	copy_file(ex, rpng);
	copy_file(gnn, apng);
	copy_file(ex, dumped);
	copy_file(ex, in);
	copy_file(v3src, spec);
	copy_file(v3src, specs_v3);
	copy_file(ex, meas); /* any bytes: checked before it is read */
	copy_file(ex, details);
	assert_int_equal(symlink(in, link), 0);
	const char *files[] = {in,   spec,  specs_v3, meas, details, model,
			       wpng, pjson, rpng,     apng, dumped};
	enum { N_FILES = sizeof files / sizeof *files };
	char *before[N_FILES];
	size_t len[N_FILES];
	for (int i = 0; i < N_FILES; i++)
		before[i] = read_bytes(files[i], &len[i]);
	struct {
		const char *argv[16];
		const char *a, *b, *path; /* the two options, the file */
	} cases[] = {
		{{"fuse", in, "--hw", spec, "-o", in}, "-o", "the input", in},
		{{"fuse", in, "--hw", spec, "-o", link}, "-o", "the input", link},
		{{"fuse", "--unfuse", in, "-o", in}, "-o", "the input", in},
		{{"fuse", in, "--hw", spec, "-o", out, "--report", out},
		 "-o", "--report", out},
		{{"fuse", in, "--hw", spec, "--report", spec}, "--report", "--hw",
		 spec},
		{{"run", in, "--hw", spec, "--trace", in}, "--trace", "the input",
		 in},
		{{"run", in, "--hw", spec, "--trace", spec}, "--trace", "--hw",
		 spec},
		{{"whatif", in, "--hw", spec, "--sweep", "mxu.count=1,2", "--csv",
		  spec}, "--csv", "--hw", spec},
		{{"whatif", in, "--hw", spec, "--sweep", "mxu.count=1,2", "--csv",
		  in}, "--csv", "the input", in},
		{{"validate", "--data", set, "--hw-dir", specs, "--csv", meas},
		 "--csv", "--data", meas},
		{{"validate", "--data", set, "--hw-dir", specs, "--csv", specs_v3},
		 "--csv", "--hw-dir", specs_v3},
		{{"validate", "--data", set, "--hw", spec, "--csv", spec}, "--csv",
		 "--hw", spec},
		{{"train", "--data", set, "--hw-dir", specs, "-o", details}, "-o",
		 "--data", details},
		{{"compare", "--data", set, "--hw-dir", specs, "--csv", meas},
		 "--csv", "--data", meas},
		{{"calibrate", "--hw", spec, "--data", set, "--fit",
		  "ici.efficiency", "-o", meas}, "-o", "--data", meas},
		{{"autotune", "--data", set, "--hw-dir", specs, "--model", model,
		  "--csv", model}, "--csv", "--model", model},
		{{"autotune", "--data", set, "--hw-dir", specs, "--model", apng,
		  "--plots", dir}, "--plots", "--model", apng},
		{{"autotune", meas, "--hw", spec, "--measure-cmd", "true",
		  "--record", set}, "--record", "the input", meas},
		{{"validate", "--data", set, "--hw-dir", specs, "--model", model,
		  "--csv", model}, "--csv", "--model", model},
		{{"fuse", in, "--hw", spec, "--policy", "hybrid", "--model",
		  model, "-o", model}, "-o", "--model", model},
		{{"run", in, "--hw", spec, "--model", model, "--trace", model},
		 "--trace", "--model", model},
		{{"run", rpng, "--hw", spec, "--plots", dir}, "--plots",
		 "the input", rpng},
		{{"run", in, "--hw", spec, "--hw", specs_v3, "--trace",
		  specs_v3}, "--trace", "--hw", specs_v3},
		{{"run", in, "--gen", "v3", "--hw-dir", dir, "--trace", spec},
		 "--trace", "--gen", spec},
		{{"run", dump, "--hw", spec, "--trace", dumped}, "--trace",
		 "the input", dumped},
		{{"run", in, "--hw", spec, "--trace", rpng, "--plots", dir},
		 "--trace", "--plots", rpng},
		{{"whatif", wpng, "--hw", spec, "--sweep", "mxu.count=1,2",
		  "--plots", dir}, "--plots", "the input", wpng},
		{{"whatif", in, "--hw", pjson, "--sweep", "mxu.count=1,2",
		  "--trace", dir}, "--trace", "--hw", pjson},
		{{"compare", "--data", set, "--hw-dir", specs, "--csv", cpng,
		  "--plots", dir}, "--csv", "--plots", cpng},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		struct proc p;
		tpusim_args(&p, NULL, cases[c].argv);
		char want[3 * PATH_MAX];
		snprintf(want, sizeof want,
			 "tpusim %s: error: %s and %s name the same file: %s\n",
			 cases[c].argv[0], cases[c].a, cases[c].b, cases[c].path);
		if (p.rc != 2 || strcmp(p.err, want) != 0)
			fail_msg("case %zu (%s): exit %d, %s", c, cases[c].argv[0],
				 p.rc, p.err);
		proc_free(&p);
		for (int i = 0; i < N_FILES; i++) {
			size_t n;
			char *now = read_bytes(files[i], &n);
			if (n != len[i] || memcmp(now, before[i], n) != 0)
				fail_msg("case %zu changed %s", c, files[i]);
			ts_free(now);
		}
		assert_int_equal(access(cpng, F_OK), -1);
	}
	/* a folder output beside inputs it does not write: fine */
	struct proc ok;
	tpusim(&ok, "whatif", in, "--hw", specs_v3, "--sweep", "mxu.count=1,2",
	       "--trace", specs);
	expect_rc(&ok, 0);
	proc_free(&ok);
	for (int i = 0; i < 2; i++) {
		char pt[PATH_MAX + 32];
		snprintf(pt, sizeof pt, "%s/point_%d.json", specs, i);
		assert_int_equal(remove(pt), 0);
	}
	/* a set given twice, under another name: its rows would count
	 * twice */
	char set2[PATH_MAX + 16];
	snprintf(set2, sizeof set2, "%s/../set", set);
	const char *twice[][9] = {
		{"train", "--data", set, "--data", set2, "--hw-dir", specs, "-o", out},
		{"validate", "--data", set, "--data", set2, "--hw-dir", specs},
	};
	for (size_t c = 0; c < 2; c++) {
		struct proc p;
		const char *argv[10] = {0};
		memcpy(argv, twice[c], sizeof twice[c]);
		tpusim_args(&p, NULL, argv);
		char want[3 * PATH_MAX];
		snprintf(want, sizeof want,
			 "tpusim %s: error: --data %s and --data %s are the same "
			 "set: its rows would count twice\n", argv[0], set, set2);
		expect_rc(&p, 2);
		assert_string_equal(p.err, want);
		proc_free(&p);
	}
	for (int i = 0; i < N_FILES; i++) {
		ts_free(before[i]);
		remove(files[i]);
	}
	remove(link);
	rmdir(dump);
	rmdir(specs);
	rmdir(set);
	rmdir(dir);
}

/* Several inputs: a bad one does not stop the others; the exit code is
 * the worst, and the end says how many failed. */
static void test_several_inputs_go_on(void **state)
{
	(void)state;
	char v3[PATH_MAX], bad[PATH_MAX], ex[PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	src(bad, "tests/data/cli/bad_opcode.hlo");
	src(ex, "cli/examples/mlp_train_step.hlo");
	struct proc p;
	tpusim(&p, "run", bad, ex, "no/such.hlo", "--hw", v3, "-f", "json");
	expect_rc(&p, 3); /* the missing file's, worse than the bad one's 1 */
	expect_contains(p.out, "\"module\": \"jit_train_loop\"");
	expect_contains(p.err, "unknown opcode 'frobnicate'");
	expect_contains(p.err, "no/such.hlo: error: cannot open");
	assert_true(strstr(p.err, "tpusim run: error: 2 of 3 inputs failed (each "
				  "said why above)\n") != NULL);
	proc_free(&p);
}

static void test_malformed_hlo(void **state)
{
	(void)state;
	char v3[PATH_MAX], bad[PATH_MAX], want[2 * PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	src(bad, "tests/data/cli/bad_opcode.hlo");
	struct proc p;
	tpusim(&p, "run", bad, "--hw", v3);
	expect_rc(&p, 1);
	assert_string_equal(p.out, "");
	/* Line 5, column 29: where 'frobnicate' starts; then the line and a
	 * caret under that column (2 spaces of indent + 28). */
	snprintf(want, sizeof want,
		 "%s:5:29: error: unknown opcode 'frobnicate'\n"
		 "    ROOT %%r = f32[8,128]{1,0} frobnicate(%%p0)\n"
		 "  %28s^\n",
		 bad, "");
	assert_string_equal(p.err, want);
	proc_free(&p);
}

static void test_malformed_yaml(void **state)
{
	(void)state;
	char ex[PATH_MAX], bad[PATH_MAX], want[2 * PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(bad, "tests/data/cli/bad_spec.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", bad);
	expect_rc(&p, 1);
	assert_string_equal(p.out, "");
	/* The field path (mxu.rows), its line and column, and a caret. */
	snprintf(want, sizeof want,
		 "%s:4:9: error: mxu.rows: expected an integer, got 'many'\n"
		 "    rows: many\n"
		 "  %8s^\n",
		 bad, "");
	assert_string_equal(p.err, want);
	proc_free(&p);
}

/* ---- run on the example -------------------------------------------------- */

/* Splits one CSV line (no quoted fields expected) into at most max fields;
 * returns the count. line is modified. */
static int csv_split(char *line, char **fields, int max)
{
	int n = 0;
	char *p = line;
	for (;;) {
		assert_true(n < max);
		fields[n++] = p;
		char *comma = strchr(p, ',');
		if (!comma)
			break;
		*comma = '\0';
		p = comma + 1;
	}
	return n;
}

#define RUN_CSV_HEADER                                                        \
	"module,index,name,kind,main_op,multiplicity,steps,flops,bytes_read,"  \
	"bytes_written,mxu_cycles,vpu_cycles,dma_cycles,vmem_bytes,bound,"    \
	"time_ns,roofline_ns,share,mxu_util,time_total_ns,config"
enum { CSV_MODULE = 0, CSV_INDEX = 1, CSV_NAME = 2, CSV_KIND = 3,
       CSV_OP = 4, CSV_MULT = 5, CSV_BOUND = 14, CSV_TIME = 15,
       CSV_ROOFLINE = 16, CSV_SHARE = 17, CSV_MXU_UTIL = 18,
       CSV_TIME_TOTAL = 19, CSV_N = 21 };

/*
 * The example's kernels in schedule order: the layout copy, the loop (its
 * condition runs trip count + 1 = 5 times, the body 4: forward, softmax,
 * backward, all-reduce, SGD, counter), then the copy back.
 */
static const struct {
	const char *name;
	const char *mult;
} example_kernels[] = {
	{"copy.40", "1"},  {"compare.30", "5"}, {"fusion.1", "4"},
	{"fusion.2", "4"}, {"fusion.4", "4"},   {"fusion.5", "4"},
	{"fusion.6", "4"}, {"fusion.7", "4"},   {"all-reduce.1", "4"},
	{"fusion.8", "4"}, {"fusion.9", "4"},   {"add.20", "4"},
	{"copy.41", "1"},
};

static void test_run_example_csv(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--format", "csv");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	char *save = NULL;
	char *line = strtok_r(p.out, "\n", &save);
	assert_non_null(line);
	assert_string_equal(line, RUN_CSV_HEADER);
	double share_sum = 0.0;
	size_t i = 0;
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *f[CSV_N + 1];
		assert_int_equal(csv_split(line, f, CSV_N + 1), CSV_N);
		assert_true(i < TS_ARRAY_LEN(example_kernels));
		assert_string_equal(f[CSV_MODULE], "jit_train_loop");
		assert_int_equal(atoi(f[CSV_INDEX]), (int)i);
		assert_string_equal(f[CSV_NAME], example_kernels[i].name);
		assert_string_equal(f[CSV_MULT], example_kernels[i].mult);
		assert_true(atof(f[CSV_TIME]) > 0.0);
		/* the roofline (every unit at its peak, each byte moved
		 * once, plus the launch) is a floor of the modelled time */
		assert_true(atof(f[CSV_ROOFLINE]) > 0.0);
		assert_true(atof(f[CSV_ROOFLINE]) <= atof(f[CSV_TIME]));
		/* MXU utilisation exactly where there is MXU work: the
		 * kernels whose main op is a convolution or a dot */
		bool mxu = !strcmp(f[CSV_OP], "convolution") ||
			   !strcmp(f[CSV_OP], "dot");
		if (mxu != (f[CSV_MXU_UTIL][0] != '\0'))
			fail_msg("%s: mxu_util '%s'", f[CSV_NAME], f[CSV_MXU_UTIL]);
		assert_true(!mxu || (atof(f[CSV_MXU_UTIL]) > 0.0 &&
				     atof(f[CSV_MXU_UTIL]) <= 1.0));
		share_sum += atof(f[CSV_SHARE]);
		i++;
	}
	assert_int_equal(i, TS_ARRAY_LEN(example_kernels));
	/* Shares are printed with 6 decimals: 13 roundings of 5e-7 each. */
	if (fabs(share_sum - 1.0) > 13 * 5e-7)
		fail_msg("shares sum to %.9f, not 1", share_sum);
	proc_free(&p);
}

static void test_run_example_table(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3);
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	char head[3 * PATH_MAX];
	snprintf(head, sizeof head,
		 "file: %s\nhw: v3\nmodel: analytic\n\nmodule: jit_train_loop\n"
		 "fusion: as compiled\nn_kernels: 13\nn_unmodelled: 0\n"
		 "n_assumed_trip_counts: 0\n\n",
		 ex);
	assert_true(starts_with(p.out, head));
	const char *hdr = p.out + strlen(head);
	assert_true(starts_with(hdr, " #  kernel "));
	/* Kernel names in order, one row each, then the rule and total. */
	const char *at = hdr;
	for (size_t i = 0; i < TS_ARRAY_LEN(example_kernels); i++) {
		char want[64];
		snprintf(want, sizeof want, "  %s ", example_kernels[i].name);
		const char *next = strstr(at, want);
		if (!next)
			fail_msg("kernel %s missing or out of order", want);
		at = next + 1;
	}
	const char *rule = strstr(at, "\n---");
	assert_non_null(rule);
	expect_contains(rule, "  total ");
	expect_contains(rule, "100.0%");
	expect_contains(rule, "\nloop: while.40\ntrip_count: 4\n"
			      "trip_count_source: known\n");
	proc_free(&p);
}

/* Runs python3 with the code given on `file` as stdin; false (with a
 * message) when python3 or the module it needs is not installed. */
static bool python_check(const char *code, const char *text)
{
	char in_path[PATH_MAX];
	int fd = make_temp(in_path);
	size_t len = strlen(text);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	char *argv[] = {(char *)"python3", (char *)"-c", (char *)code, NULL};
	struct proc p;
	bool started = spawn(&p, "python3", true, in_path, NULL, argv);
	unlink(in_path);
	if (!started || (p.rc != 0 && strstr(p.err, "ModuleNotFoundError"))) {
		print_message("python3 (or its module) not available: %s\n",
			      "checked by keys only");
		proc_free(&p);
		return false;
	}
	if (p.rc != 0)
		fail_msg("python3 rejected the output:\n%s\n%s", p.err, text);
	proc_free(&p);
	return true;
}

/* Writes text into a fresh temporary file; its name goes to path. */
static void temp_file(char *path, const char *text)
{
	int fd = make_temp(path);
	size_t n = strlen(text);
	assert_true(write(fd, text, n) == (ssize_t)n);
	close(fd);
}

/* Runs `run` and `tile` on path with spec v3; both succeed and warn
 * "tpusim CMD: warning: " + msg. */
static void expect_run_tile_warning(const char *path, const char *v3,
				    const char *msg)
{
	const char *cmds[] = {"run", "tile"};
	for (int i = 0; i < 2; i++) {
		struct proc p;
		tpusim(&p, cmds[i], path, "--hw", v3);
		expect_rc(&p, 0);
		char want[512];
		snprintf(want, sizeof want, "tpusim %s: warning: %s", cmds[i], msg);
		expect_contains(p.err, want);
		proc_free(&p);
	}
}

/* A branch of an n-way conditional runs 1/n of the time: a 2-way one
 * shows 0.5 in the table and JSON's multiplicity is the number 0.5. */
static void test_run_conditional(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule c\n"
		"t { a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a) }\n"
		"f { b = f32[8] parameter(0)\n  ROOT x = f32[8] exponential(b) }\n"
		"ENTRY e {\n  p = pred[] parameter(0)\n  v = f32[8] parameter(1)\n"
		"  ROOT r = f32[8] conditional(p, v, v), true_computation=t, "
		"false_computation=f\n}\n";
	char path[PATH_MAX], v3[PATH_MAX];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", path, "--hw", v3, "--format", "json");
	expect_rc(&p, 0);
	expect_contains(p.out, "\"name\": \"n\", \"kind\": \"elementwise\", "
			       "\"main_op\": \"negate\", \"multiplicity\": 0.5,");
	expect_contains(p.out, "\"name\": \"x\", \"kind\": \"elementwise\", "
			       "\"main_op\": \"exponential\", \"multiplicity\": 0.5,");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v3);
	expect_rc(&p, 0);
	expect_contains(p.out, "  0.5  ");
	proc_free(&p);
	unlink(path);
}

/* Kernels the model cannot cost are listed at zero time and named in a
 * warning: count, first three with op and custom-call target. */
static void test_run_unmodelled_warning(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule u\n"
		"ENTRY e {\n  p = f32[8] parameter(0)\n"
		"  a = f32[8] custom-call(p), custom_call_target=\"__foo\"\n"
		"  b = f32[8] custom-call(a), custom_call_target=\"__bar\"\n"
		"  c = f32[8] custom-call(b), custom_call_target=\"__baz\"\n"
		"  d = f32[8] custom-call(c), custom_call_target=\"__qux\"\n"
		"  ROOT n = f32[8] negate(d)\n}\n";
	char path[PATH_MAX], v3[PATH_MAX];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	expect_run_tile_warning(path, v3,
				"module u: 4 kernels not modelled, costed at zero: "
				"a (custom-call __foo), b (custom-call __bar), c "
				"(custom-call __baz), ...\n");
	unlink(path);
}

/* A program whose arguments and result alone exceed the HBM one program
 * has: 2 x 1e6 x 1e4 x 4 B = 80 GB against v3's 32 GiB / 2 cores. */
static void test_run_hbm_warning(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule big\nENTRY e {\n  p = f32[1000000,10000] parameter(0)\n"
		"  ROOT n = f32[1000000,10000] negate(p)\n}\n";
	char path[PATH_MAX], v3[PATH_MAX];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	expect_run_tile_warning(path, v3,
				"module big: its arguments and result take 80 GB, "
				"more than the 17.18 GB of HBM one program has on "
				"v3\n");
	unlink(path);
}

/* calibrate: a wrong field is a usage error; -o writes a spec that loads,
 * with the fitted value and the command in its comment. tiny_host's one
 * host-timed row is fitted by host.call_ns alone: the fit must make the
 * prediction the measurement (150000 ns), to its 4 digits. */
static void test_calibrate_cli(void **state)
{
	(void)state;
	char v3[PATH_MAX], data[PATH_MAX], out[PATH_MAX];
	src(v3, "hwspecs/v3.yaml");
	src(data, "tests/data/val/tiny_host");
	struct proc p;
	tpusim(&p, "calibrate", "--hw", v3, "--data", data, "--fit", "hbm.bw");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim calibrate: error: --fit 'hbm.bw' is "
			       "not a numeric spec field; the fields:\n  "
			       "chip.tensorcores, ");
	expect_contains(p.err, " vmem.scoped_bytes, overhead.kernel_ns, ");
	expect_contains(p.err, "\n  dcn.latency_ns, pcie.bw_bytes_per_s, "
			       "xla.async_all_reduce_bytes,\n  "
			       "xla.all_reduce_combine_bytes\n");
	proc_free(&p);
	/* a message about no file is the command's own, not "<input>:" */
	tpusim(&p, "calibrate", "--hw", v3, "--data", data, "--fit",
	       "host.call_ns", "--rows", "nomatch*");
	expect_rc(&p, 2);
	assert_string_equal(p.err, "tpusim calibrate: error: no rows to fit: "
				   "none is measured on v3 and matches a --rows "
				   "pattern\n");
	proc_free(&p);
	/* beside hwspecs/v3.yaml: no inherits to resolve, any folder works */
	tu_tmp_path(out, sizeof out, "calib_cli", ".yaml");
	tpusim(&p, "calibrate", "--hw", v3, "--data", data, "--fit",
	       "host.call_ns", "-o", out);
	expect_rc(&p, 0);
	expect_contains(p.out, "rows: 1 in 1 groups");
	proc_free(&p);
	char *text = slurp(out);
	expect_contains(text, "# ns; fitted to 1 rows (1 group): MAPE 0.0% "
			      "in-sample, by\n");
	expect_contains(text, "--fit host.call_ns\n");
	ts_free(text);
	tpusim(&p, "validate", "--hw", out, "--data", data);
	expect_rc(&p, 0);
	expect_contains(p.out, "MAPE 0.0%");
	proc_free(&p);
	unlink(out);
}

/* Writes text to a new temporary file; its path in path. */
static void temp_text(char *path, const char *text)
{
	int fd = make_temp(path);
	size_t n = strlen(text);
	assert_true(write(fd, text, n) == (ssize_t)n);
	close(fd);
}

/* Absurd sizes are located input errors (exit 1) in run and tile, not
 * numbers: an element count past 63 bits, a byte size past 2^60 (the
 * bits past 63), a tuple whose elements' bytes together pass 2^63. */
static void test_absurd_shapes(void **state)
{
	(void)state;
	static const struct {
		const char *hlo, *msg;
		int col;
	} cases[] = {
		{"HloModule h\nENTRY e {\n  ROOT p = f32[9223372036854775807] "
		 "parameter(0)\n}\n",
		 "shape too large: 9223372036854775807 elements of 32 bits "
		 "exceed 2^60 bytes", 15},
		{"HloModule h\nENTRY e {\n  ROOT p = f32[3000000000,3000000000,"
		 "3000000000] parameter(0)\n}\n",
		 "shape too large: its element count overflows 63 bits", 15},
		/* 9 x (2^58 - 1) x 4 B > 2^63 - 1 */
		{"HloModule h\nENTRY e {\n  ROOT p = (f32[288230376151711743], "
		 "f32[288230376151711743], f32[288230376151711743], "
		 "f32[288230376151711743], f32[288230376151711743], "
		 "f32[288230376151711743], f32[288230376151711743], "
		 "f32[288230376151711743], f32[288230376151711743]) "
		 "parameter(0)\n}\n",
		 "shape too large: the tuple's elements take 2^63 bytes or "
		 "more", 12},
	};
	char v3[PATH_MAX], path[PATH_MAX], want[PATH_MAX + 256];
	src(v3, "hwspecs/v3.yaml");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		temp_text(path, cases[i].hlo);
		const char *cmds[] = {"run", "tile"};
		for (int c = 0; c < 2; c++) {
			struct proc p;
			tpusim(&p, cmds[c], path, "--hw", v3);
			expect_rc(&p, 1);
			assert_string_equal(p.out, "");
			snprintf(want, sizeof want, "%s:3:%d: error: %s\n", path,
				 cases[i].col, cases[i].msg);
			if (!starts_with(p.err, want))
				fail_msg("expected stderr to start with\n%s\ngot\n%s",
					 want, p.err);
			proc_free(&p);
		}
		unlink(path);
	}
}

/* $TPUSIM_SHARED/data/hlo-corpus/<name> in buf; skips when unset. */
static const char *corpus(char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/data/hlo-corpus/%s",
		 env_or_skip("TPUSIM_SHARED"), name);
	return buf;
}

/* XLA's xla_if_conditional.hlo: the branches of the 2-way conditional in
 * tfcompile.0 (log.9 and exponential.14) run half the time each: 0.5 in
 * the table, the number 0.5 in JSON, and the module total is compare.4 +
 * 0.5 x each branch. */
static void test_run_conditional_corpus(void **state)
{
	(void)state;
	char f[PATH_MAX], v3[PATH_MAX];
	corpus(f, "xla_if_conditional.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", f, "--hw", v3, "--module", "tfcompile.0", "--format",
	       "json");
	expect_rc(&p, 0);
	expect_contains(p.out, "\"name\": \"log.9\", \"kind\": \"elementwise\", "
			       "\"main_op\": \"log\", \"multiplicity\": 0.5,");
	expect_contains(p.out, "\"name\": \"exponential.14\", \"kind\": "
			       "\"elementwise\", \"main_op\": \"exponential\", "
			       "\"multiplicity\": 0.5,");
	python_check("import json, sys\n"
		     "m = json.load(sys.stdin)['modules'][0]\n"
		     "k = {x['name']: x for x in m['kernels']}\n"
		     "assert k['compare.4']['multiplicity'] == 1\n"
		     "t = k['compare.4']['time_ns'] + 0.5 * "
		     "(k['log.9']['time_ns'] + k['exponential.14']['time_ns'])\n"
		     "assert abs(m['total']['time_ns'] - t) <= 1e-3, (m, t)\n",
		     p.out);
	proc_free(&p);
	tpusim(&p, "run", f, "--hw", v3, "--module", "tfcompile.0");
	expect_rc(&p, 0);
	expect_contains(p.out, "\n1  log.9           elementwise  log           "
			       "0.5  ");
	proc_free(&p);
}

/* XLA's xla_gpu_kernel_reuse_cublas.hlo: the __cublas$gemm calls are
 * dots, f32[5,5] x f32[5,5] contracting lhs 1 / rhs 0: 2 x 5 x 5 x 5 =
 * 250 FLOPs each, MXU-costed; no warning about unmodelled kernels. */
static void test_run_cublas_corpus(void **state)
{
	(void)state;
	char f[PATH_MAX], v3[PATH_MAX];
	corpus(f, "xla_gpu_kernel_reuse_cublas.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", f, "--hw", v3, "--format", "json");
	expect_rc(&p, 0);
	assert_null(strstr(p.err, "not modelled"));
	expect_contains(p.out, "\"name\": \"custom-call.1\", \"kind\": \"dot\", "
			       "\"main_op\": \"dot\", \"multiplicity\": 1, "
			       "\"steps\": 1, \"flops\": 250,");
	python_check("import json, sys\n"
		     "d = json.load(sys.stdin)\n"
		     "g = [k for m in d['modules'] for k in m['kernels'] "
		     "if k['name'].startswith('custom-call')]\n"
		     "assert len(g) == 15, len(g)\n"
		     "assert all(k['flops'] == 250 and k['mxu_cycles'] > 0 "
		     "and k['time_ns'] > 0 for k in g), g\n",
		     p.out);
	proc_free(&p);
}

/* validate names the set's modules with unmodelled kernels once, on
 * stderr: a one-row set whose module has a custom call. */
static void test_validate_unmodelled_warning(void **state)
{
	(void)state;
	char dir[PATH_MAX / 2], path[PATH_MAX], hw_dir[PATH_MAX], want[1024];
	tu_tmp_path(dir, sizeof dir, "test_cli_set", "");
	snprintf(path, sizeof path, "%s/modules", dir);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof path, "%s/modules/u.hlo", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("HloModule um, is_scheduled=true\n"
	      "%fc (a: f32[64,1024]) -> f32[64,1024] {\n"
	      "  %a = f32[64,1024]{1,0:T(8,128)} parameter(0)\n"
	      "  ROOT %n = f32[64,1024]{1,0:T(8,128)} negate(%a)\n"
	      "}\n"
	      "ENTRY %e (p: f32[64,1024]) -> f32[64,1024] {\n"
	      "  %p = f32[64,1024]{1,0:T(8,128)} parameter(0)\n"
	      "  %cc = f32[64,1024]{1,0:T(8,128)} custom-call(%p), "
	      "custom_call_target=\"__foo\"\n"
	      "  ROOT %fusion.1 = f32[64,1024]{1,0:T(8,128)} fusion(%cc), "
	      "kind=kLoop, calls=%fc, metadata={op_name=\"autotuned_op\"}\n"
	      "}\n", f);
	assert_int_equal(fclose(f), 0);
	snprintf(path, sizeof path, "%s/measurements.csv", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("id,module,hw,config,runtime_ns,runtime_min_ns,repeats,timing,"
	      "source\n"
	      "u#r0,modules/u.hlo,tpu-v3,output_bounds=8x8,1500,,10,device,u\n",
	      f);
	assert_int_equal(fclose(f), 0);
	src(hw_dir, "hwspecs");
	struct proc p;
	tpusim(&p, "validate", "--data", dir, "--hw-dir", hw_dir);
	snprintf(path, sizeof path, "%s/modules/u.hlo", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/measurements.csv", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/modules", dir);
	rmdir(path);
	rmdir(dir);
	expect_rc(&p, 0);
	/* the module is named by its file's stem */
	snprintf(want, sizeof want,
		 "tpusim validate: warning: test_cli_set_%ld: 1 modules have "
		 "kernels not modelled, costed at zero (first: u: cc "
		 "(custom-call __foo))\n", (long)getpid());
	expect_contains(p.err, want);
	/* once per set */
	assert_null(strstr(strstr(p.err, want) + strlen(want), "not modelled"));
	proc_free(&p);
}

/* A kernel the model cannot grid (rank 9 > the 8 a grid holds) is costed
 * by its roofline and named, instead of failing the run. */
static void test_run_untiled(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule r9\nENTRY e {\n  p = f32[2,2,2,2,2,2,2,2,2] parameter(0)\n"
		"  ROOT n = f32[2,2,2,2,2,2,2,2,2] negate(p)\n}\n";
	char path[PATH_MAX], v3[PATH_MAX];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", path, "--hw", v3);
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim run: warning: module r9: kernel n has no "
			       "tile grid (cannot tile f32[2,2,2,2,2,2,2,2,2]: "
			       "rank above 8): costed by its roofline\n");
	expect_contains(p.out, "  hbm  ");
	proc_free(&p);
	unlink(path);
}

/* --topology and --slices: the report names the slice, --summary's "where"
 * table splits the collectives' exposed time ICI / DCN, --explain shows the axes; a
 * slice that is not the module's devices, a shape the generation does not
 * have and --slices alone are refused. */
static void test_run_topology(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule t, num_partitions=8\n"
		"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		"  ROOT s = f32[] add(a, b)\n}\n"
		"ENTRY e {\n  x = f32[1048576] parameter(0)\n"
		"  ROOT r = f32[1048576] all-reduce(x), "
		"replica_groups=[4,2]<=[2,4]T(1,0), to_apply=add\n}\n";
	char path[PATH_MAX], v5e[PATH_MAX];
	temp_file(path, hlo);
	src(v5e, "hwspecs/v5e.yaml");
	struct proc p;
	/* groups {g, g + 4}: one chip of each of two 2x2 slices */
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--summary");
	expect_rc(&p, 0);
	expect_contains(p.out, "topology: 2x2, 2 slices\n");
	expect_contains(p.out, "\nwhere           kernels ");
	expect_contains(p.out, "\ncollective dcn        1 ");
	/* a collective's adds are not counted as FLOPs (cost.c) */
	expect_contains(p.out, "\nflop_utilization: 0\n");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--explain", "r");
	expect_rc(&p, 0);
	expect_contains(p.out, "on the slice 2x2, 2 slices; group 0 of 4 (2 "
			       "devices), the slowest\n    slices: 2 devices, "
			       "dcn: transfer ");
	proc_free(&p);
	/* the compile's device order (--devices) puts group 0, {0, 4}, on
	 * one slice: index i on slice i % 2 at x (i / 2) % 2, y i / 4 */
	char order[PATH_MAX];
	char table[512] = "index,id,x,y,z,core_on_chip,slice\n";
	for (int i = 0; i < 8; i++)
		snprintf(table + strlen(table), sizeof table - strlen(table),
			 "%d,%d,%d,%d,0,0,%d\n", i, i, (i / 2) % 2, i / 4, i % 2);
	temp_file(order, table);
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--devices", order, "--explain", "r");
	expect_rc(&p, 0);
	expect_contains(p.out, "on the slice 2x2, 2 slices (the compile's "
			       "device order); group 0 of 4 (2 devices), the "
			       "slowest\n    y: 2 devices, line (no "
			       "wraparound): transfer ");
	expect_contains(p.out, "  ICI ");
	expect_contains(p.out, " + DCN 0.0 = ");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v5e, "--devices", order);
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim run: error: --devices places the devices "
			       "of the --topology shape; give --topology too\n");
	proc_free(&p);
	unlink(order);
	temp_file(order, "index,id,x,y,z,core_on_chip,slice\n0,0,-1,0,0,0,0\n");
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--devices", order);
	expect_rc(&p, 1);
	expect_contains(p.err, ":2:5: error: x: expected a whole number from 0 "
			       "to 2147483647, got '-1'\n");
	proc_free(&p);
	unlink(order);
	/* a table of another slice's devices: said of the file */
	temp_file(order, "index,id,x,y,z,core_on_chip,slice\n0,0,0,0,0,0,0\n");
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2", "--slices",
	       "2", "--devices", order);
	expect_rc(&p, 1);
	char want[PATH_MAX + 96];
	snprintf(want, sizeof want, "%s: error: the device order places 1 "
		 "device; the slice has 8\n", order);
	expect_contains(p.err, want);
	proc_free(&p);
	unlink(order);
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "4x4");
	expect_rc(&p, 1);
	expect_contains(p.err, ":1:1: error: the module runs on 8 devices "
			       "(replica_count 1 x num_partitions 8); the slice "
			       "4x4 has 16 (v5e: 1 per chip)\n");
	proc_free(&p);
	/* one slice's devices of several: compiled per slice, with no
	 * megascale exchange in it: said */
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x4", "--slices",
	       "2");
	expect_rc(&p, 0);
	expect_contains(p.err, "warning: module t runs on one slice of 2 "
			       "(compiled per slice) and holds no exchange "
			       "between the slices (megascale sends): it is not "
			       "costed\n");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2x2x2");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim run: error: --topology: v5e's chips "
			       "form a 2D torus: the slice needs 2 dimensions "
			       "(e.g. 16x16), not 3\n");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v5e, "--topology", "2y4");
	expect_rc(&p, 2);
	expect_contains(p.err, "--topology:1:2: error: expected 'x' between "
			       "the chips along each axis, like 16x16\n  2y4\n"
			       "   ^\n");
	proc_free(&p);
	tpusim(&p, "run", path, "--hw", v5e, "--slices", "2");
	expect_rc(&p, 2);
	expect_contains(p.err, "tpusim run: error: --slices counts slices of "
			       "the --topology shape; give --topology too\n");
	proc_free(&p);
	unlink(path);
}

/* Huge figures are written whole (exponent form from 1e15 up), so the
 * JSON stays valid: 1e8 x 1e8 negates are 1e16 FLOPs, 4e16 bytes read. */
static void test_run_huge_numbers(void **state)
{
	(void)state;
	static const char hlo[] =
		"HloModule h\nENTRY e {\n  a = f32[100000000,100000000] parameter(0)\n"
		"  ROOT n = f32[100000000,100000000] negate(a)\n}\n";
	char path[PATH_MAX], v3[PATH_MAX];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", path, "--hw", v3, "--format", "json");
	expect_rc(&p, 0);
	expect_contains(p.out, "\"flops\": 10000000000000000, "
			       "\"bytes_read\": 40000000000000000,");
	if (python_check("import json, sys\n"
			 "k = json.load(sys.stdin)['modules'][0]['kernels'][0]\n"
			 "assert k['flops'] == 1e16 and k['time_ns'] > 1e14\n",
			 p.out))
		print_message("python3 checked the JSON\n");
	proc_free(&p);
	unlink(path);
}

/* 18 nested loops of 2^62 trips each run 2^1116 times: past a double, an
 * error at the loop where the product leaves the range (the 17th level from
 * the outside: 2^(62 x 17) > 2^1024), not an infinite time. */
static void test_run_loop_overflow(void **state)
{
	(void)state;
	static char hlo[16384];
	size_t n = (size_t)snprintf(hlo, sizeof hlo, "HloModule deep\n");
	const char *trip = "backend_config={\"known_trip_count\":{\"n\":"
			   "\"4611686018427387904\"}}";
	for (int i = 0; i < 18; i++) {
		n += (size_t)snprintf(hlo + n, sizeof hlo - n,
				      "c%d {\n  x = f32[] parameter(0)\n  ROOT t = "
				      "pred[] constant(true)\n}\nb%d {\n  x = f32[] "
				      "parameter(0)\n",
				      i, i);
		if (i == 0)
			n += (size_t)snprintf(hlo + n, sizeof hlo - n,
					      "  ROOT r = f32[] add(x, x)\n}\n");
		else
			n += (size_t)snprintf(hlo + n, sizeof hlo - n,
					      "  ROOT r = f32[] while(x), condition=c%d, "
					      "body=b%d, %s\n}\n",
					      i - 1, i - 1, trip);
	}
	snprintf(hlo + n, sizeof hlo - n,
		 "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), "
		 "condition=c17, body=b17, %s\n}\n", trip);
	char path[PATH_MAX], v3[PATH_MAX], want[PATH_MAX + 128];
	temp_file(path, hlo);
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", path, "--hw", v3);
	expect_rc(&p, 1);
	/* b1's loop (line 4 + 6 lines per level) is the one past the range */
	snprintf(want, sizeof want,
		 "%s:24:8: error: r: its trip count times those of the loops "
		 "around it overflows a double\n", path);
	expect_contains(p.err, want);
	proc_free(&p);
	unlink(path);
}

static void test_run_json(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], head[2 * PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--format", "json");
	expect_rc(&p, 0);
	snprintf(head, sizeof head,
		 "{\"file\": \"%s\", \"hw\": \"v3\", \"model\": \"analytic\", "
		 "\"modules\": [{\"module\": \"jit_train_loop\", \"fusion\": "
		 "\"as compiled\", \"n_kernels\": 13, "
		 "\"n_unmodelled\": 0, \"n_assumed_trip_counts\": 0, \"kernels\": "
		 "[{\"index\": 0, \"name\": \"copy.40\", \"kind\": \"copy\"",
		 ex);
	assert_true(starts_with(p.out, head));
	expect_contains(p.out, "\"name\": \"fusion.1\", \"kind\": \"fusion\", "
			       "\"main_op\": \"convolution\", \"multiplicity\": 4");
	expect_contains(p.out, "\"total\": {\"index\": null, \"name\": "
			       "\"total\"");
	/* One line, ending the object. */
	assert_non_null(strstr(p.out, "}]}\n"));
	assert_int_equal(strchr(p.out, '\n') - p.out, (long)strlen(p.out) - 1);
	python_check("import json, sys\n"
		     "d = json.load(sys.stdin)\n"
		     "k = d['modules'][0]['kernels']\n"
		     "assert [x['name'] for x in k][:3] == ['copy.40', "
		     "'compare.30', 'fusion.1'], k\n"
		     "t = d['modules'][0]['total']['time_ns']\n"
		     "s = sum(x['time_total_ns'] for x in k)\n"
		     "assert abs(t - s) <= 1e-3 * len(k), (t, s)\n",
		     p.out);
	proc_free(&p);
}

static void test_run_yaml(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--format", "yaml");
	expect_rc(&p, 0);
	expect_contains(p.out, "\nhw: 'v3'\nmodel: 'analytic'\nmodules:\n"
			       "- module: 'jit_train_loop'\n");
	expect_contains(p.out, "  - index: 2\n    name: 'fusion.1'\n");
	python_check("import sys, yaml\n"
		     "d = yaml.safe_load(sys.stdin)\n"
		     "m = d['modules'][0]\n"
		     "assert m['kernels'][2]['name'] == 'fusion.1'\n"
		     "assert m['kernels'][2]['multiplicity'] == 4\n"
		     "assert m['total']['share'] == 1.0\n",
		     p.out);
	proc_free(&p);
}

/* Same input, same bytes, in every format. */
static void test_run_deterministic(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	static const char *const fmts[] = {"table", "csv", "json", "yaml"};
	for (size_t i = 0; i < TS_ARRAY_LEN(fmts); i++) {
		struct proc a, b;
		tpusim(&a, "run", ex, "--hw", v3, "-f", fmts[i]);
		tpusim(&b, "run", ex, "--hw", v3, "-f", fmts[i]);
		expect_rc(&a, 0);
		assert_string_equal(a.out, b.out);
		proc_free(&a);
		proc_free(&b);
	}
}

/* ---- write errors -------------------------------------------------------- */

static void test_dev_full(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0) {
		print_message("/dev/full is not available; skipping\n");
		skip();
	}
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim_to(&p, "/dev/full", "--help", (const char *)NULL);
	expect_rc(&p, 3);
	assert_string_equal(p.err, "tpusim: error: cannot write to standard "
				   "output: No space left on device\n");
	proc_free(&p);
	static const char *const fmts[] = {"table", "csv", "json", "yaml"};
	for (size_t i = 0; i < TS_ARRAY_LEN(fmts); i++) {
		tpusim_to(&p, "/dev/full", "run", ex, "--hw", v3, "-f", fmts[i],
			  (const char *)NULL);
		expect_rc(&p, 3);
		expect_contains(p.err, "No space left on device\n");
		proc_free(&p);
	}
}

/*
 * A full disk under run --trace FILE: the file system's cause, not "input/
 * output error" (the stream once kept only a flag), exit 3, and neither
 * the file nor its temporary left behind. The disk is a 64 KiB tmpfs
 * filled to the brim, mounted in a mount namespace of this process's own
 * (gone with it): a machine that will not let us (not root, no namespaces)
 * skips, saying so.
 */
static void test_full_disk(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX], dir[PATH_MAX], fill[PATH_MAX + 8],
		trace[PATH_MAX + 16];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	tu_tmp_path(dir, sizeof dir, "test_full_disk", "");
	assert_int_equal(mkdir(dir, 0700), 0);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tpusim-test", dir, "tmpfs", 0, "size=64k") != 0) {
		print_message("cannot mount a tmpfs here (%s): skipped\n",
			      strerror(errno));
		rmdir(dir);
		skip();
	}
	snprintf(fill, sizeof fill, "%s/fill", dir);
	int fd = open(fill, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	static const char block[4096];
	while (write(fd, block, sizeof block) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(fd);
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--trace", trace);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof want, "%s: error: write failed: No space left on "
		 "device\n", trace);
	expect_rc(&p, 3);
	assert_string_equal(p.err, want);
	proc_free(&p);
	assert_int_equal(access(trace, F_OK), -1);
	DIR *dp = opendir(dir);
	assert_non_null(dp);
	int n = 0;
	for (struct dirent *e; (e = readdir(dp));)
		n += e->d_name[0] != '.';
	closedir(dp);
	assert_int_equal(n, 1); /* the filler only */
	assert_int_equal(umount2(dir, MNT_DETACH), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- modules, explain, configs, unmodelled kernels ------------------------ */

static void test_multi_module(void **state)
{
	(void)state;
	char two[PATH_MAX], v3[PATH_MAX];
	src(two, "tests/data/cli/two_modules.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", two, "--hw", v3, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, "\nfirst,0,copy.1,copy,copy,1,");
	expect_contains(p.out, "\nsecond,0,negate.1,");
	proc_free(&p);

	tpusim(&p, "run", two, "--hw", v3, "--module", "second", "-f", "csv");
	expect_rc(&p, 0);
	assert_null(strstr(p.out, "first"));
	expect_contains(p.out, "\nsecond,0,negate.1,");
	proc_free(&p);

	tpusim(&p, "run", two, "--hw", v3, "--module", "third");
	expect_rc(&p, 1);
	expect_contains(p.err, "--module: no module named 'third' in ");
	expect_contains(p.err, "\n  modules: first, second\n");
	proc_free(&p);
}

static void test_explain(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--explain", "fusion.99");
	expect_rc(&p, 1);
	assert_string_equal(p.out, "");
	expect_contains(p.err, "tpusim run: error: --explain: no kernel named "
			       "'fusion.99'\n  kernels: copy.40, compare.30, fusion.1, ");
	proc_free(&p);

	tpusim(&p, "run", ex, "--hw", v3, "--explain", "fusion.1");
	expect_rc(&p, 0);
	expect_contains(p.out, "fusion.1");
	proc_free(&p);
}

static void test_config(void **state)
{
	(void)state;
	char ex[PATH_MAX], dot[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(dot, "tests/data/cli/big_dot.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	/* Malformed config text: a usage error pointing into the option. */
	tpusim(&p, "run", dot, "--hw", v3, "--config", "output_bounds=4xq");
	expect_rc(&p, 2);
	assert_true(starts_with(p.err, "--config:1:"));
	proc_free(&p);

	/* The example has several tunable kernels: --kernel must pick one. */
	tpusim(&p, "run", ex, "--hw", v3, "--config", "output_bounds=1x1");
	expect_rc(&p, 2);
	expect_contains(p.err, "--config: several tunable kernels; name one "
			       "with --kernel\n  tunable kernels: ");
	proc_free(&p);

	/* A 4096x4096 f32 output block alone is 64 MiB: over v3's 16 MiB. */
	tpusim(&p, "run", dot, "--hw", v3, "--config", "output_bounds=512x32");
	expect_rc(&p, 1);
	expect_contains(p.err, "tpusim run: error: --config "
			       "'output_bounds=512x32' is infeasible for "
			       "kernel 'fusion.1'");
	proc_free(&p);

	/* A rank-3 config for a rank-2 tile grid does not fit. */
	tpusim(&p, "run", dot, "--hw", v3, "--config", "output_bounds=1x1x1");
	expect_rc(&p, 1);
	expect_contains(p.err, "tpusim run: error: --config "
			       "'output_bounds=1x1x1' does not fit kernel "
			       "'fusion.1': ");
	proc_free(&p);

	/* A feasible config is costed and shown in the raw formats: 128 x
	 * 128 output blocks with the whole 4096-deep contraction hold 2 x
	 * (1 + 1) MiB of bf16 operand blocks, plus their unpacked staging
	 * copies (twice that), in 16 MiB. */
	tpusim(&p, "run", dot, "--hw", v3, "--config", "output_bounds=16x1",
	       "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, ",output_bounds=16x1");
	proc_free(&p);
}

static void test_unmodelled_listed(void **state)
{
	(void)state;
	char cc[PATH_MAX], v3[PATH_MAX];
	src(cc, "tests/data/cli/custom_call.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", cc, "--hw", v3, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.out, "\nwith_custom_call,0,custom-call.1,unmodelled,"
			       "custom-call,1,");
	expect_contains(p.out, ",unmodelled,0.000,,0.000000,,0.000,\n");
	proc_free(&p);

	tpusim(&p, "run", cc, "--hw", v3);
	expect_rc(&p, 0);
	expect_contains(p.out, "n_unmodelled: 1\n");
	proc_free(&p);
}

/* A loop whose trip count is neither known nor derivable (its condition
 * tests no induction variable) runs once, with a warning, unless
 * --trip-count says otherwise; JSON lists each loop and its source. */
static void test_trip_count(void **state)
{
	(void)state;
	char loop[PATH_MAX], v3[PATH_MAX];
	src(loop, "tests/data/cli/unknown_trip.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", loop, "--hw", v3, "-f", "csv");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "tpusim run: warning: module unknown_trip: 1 "
				   "while loop whose trip count is neither known "
				   "nor derivable runs once; set --trip-count N\n");
	expect_contains(p.out, "\nunknown_trip,1,tanh.1,elementwise,tanh,1,");
	proc_free(&p);

	tpusim(&p, "run", loop, "--hw", v3, "-f", "csv", "--trip-count", "3");
	expect_rc(&p, 0);
	assert_string_equal(p.err, "");
	expect_contains(p.out, "\nunknown_trip,1,tanh.1,elementwise,tanh,3,");
	proc_free(&p);

	tpusim(&p, "run", loop, "--hw", v3, "-f", "json", "--trip-count", "3");
	expect_rc(&p, 0);
	expect_contains(p.out, "\"loops\": [{\"loop\": \"while.1\", "
			       "\"trip_count\": 3, \"trip_count_source\": "
			       "\"assumed\"}]");
	proc_free(&p);
}

/* With the scoped VMEM cut to 64 KiB the example's kernels leave the
 * envelope: each
 * is named with the term that dominates it, and a kernel no config of
 * which fits VMEM says so (0.1434 MB at least: its smallest blocks, by
 * --explain) instead of reporting "infeasible" as its bound. */
static void test_envelope_warning(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--set", "vmem.bytes=65536", "--set",
	       "vmem.scoped_bytes=65536", "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim run: warning: module jit_train_loop: "
			       "kernel fusion.6 (convolution) is costed at ");
	expect_contains(p.err, " at its smallest working set: no tile config "
			       "fits VMEM: the smallest working set is 0.1434 "
			       "MB of the scoped 0.06554 MB\n");
	expect_contains(p.err, "kernel fusion.1 (convolution) is costed at ");
	assert_null(strstr(p.out, ",infeasible,"));
	proc_free(&p);
}

/*
 * A convolution with one input and one output feature: 603,881,476 useful
 * MACs (24574 valid taps per dim, 8192 + 2 x 8191, squared), 19.6 us at
 * v3's bf16 peak of 2 x 128 x 128 x 0.94 = 30801.92 MACs/ns, is named in
 * a warning for its utilisation below 5% of what its roofline allows; its
 * mxu_util column is the MACs over time x peak.
 */
static void test_low_mxu_warning(void **state)
{
	(void)state;
	char hlo[PATH_MAX], v3[PATH_MAX];
	src(hlo, "tests/data/cli/low_mxu.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", hlo, "--hw", v3, "-f", "csv");
	expect_rc(&p, 0);
	expect_contains(p.err, "tpusim run: warning: module low_mxu: kernel c "
			       "(convolution) is modelled at ");
	expect_contains(p.err, "% MXU utilisation, below 5% of the 3.1% its "
			       "roofline allows, for 20 us of MXU work: likely "
			       "a mapping defect\n");
	char *line = strchr(p.out, '\n');
	assert_non_null(line);
	char *f[CSV_N + 1];
	assert_int_equal(csv_split(line + 1, f, CSV_N + 1), CSV_N);
	double want = 603881476.0 / (atof(f[CSV_TIME]) * 30801.92);
	assert_true(want < 0.05);
	assert_near(atof(f[CSV_MXU_UTIL]), want, 5e-7); /* 6 decimals */
	proc_free(&p);
}

/* XLA's dilated weight-gradient convolution reads a 1 GiB f32 operand:
 * at HBM bandwidth that alone is 12x its 209 us of MXU work at peak, so
 * its 4.8% MXU use is physics, not a mapping defect, and is not warned
 * about (the roofline allows 8.4%). */
static void test_low_mxu_hbm_bound(void **state)
{
	(void)state;
	char hlo[PATH_MAX], v3[PATH_MAX];
	corpus(hlo, "xla_runner_dilated_conv.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", hlo, "--hw", v3, "-f", "csv");
	expect_rc(&p, 0);
	assert_null(strstr(p.err, "mapping defect"));
	proc_free(&p);
}

static void test_roofline(void **state)
{
	(void)state;
	char ex[PATH_MAX], v3[PATH_MAX];
	src(ex, "cli/examples/mlp_train_step.hlo");
	src(v3, "hwspecs/v3.yaml");
	struct proc p;
	tpusim(&p, "run", ex, "--hw", v3, "--roofline", "-f", "csv");
	expect_rc(&p, 0);
	/* No tiles, so no steps, cycles, VMEM or config columns. */
	expect_contains(p.out, "\njit_train_loop,2,fusion.1,fusion,convolution,"
			       "4,,");
	proc_free(&p);
	tpusim(&p, "run", ex, "--hw", v3, "--roofline", "--config",
	       "output_bounds=1x1");
	expect_rc(&p, 2);
	expect_contains(p.err, "--config and --roofline exclude each other");
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_help_lists_every_command),
		cmocka_unit_test(test_no_command),
		cmocka_unit_test(test_unknown_command),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_rewrite_note),
		cmocka_unit_test(test_copy_notes),
		cmocka_unit_test(test_gather_note),
		cmocka_unit_test(test_schedule_note),
		cmocka_unit_test(test_combine_note),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_unbounded_inputs),
		cmocka_unit_test(test_several_inputs_go_on),
		cmocka_unit_test(test_outputs_never_clobber),
		cmocka_unit_test(test_malformed_hlo),
		cmocka_unit_test(test_malformed_yaml),
		cmocka_unit_test(test_run_example_csv),
		cmocka_unit_test(test_run_example_table),
		cmocka_unit_test(test_run_json),
		cmocka_unit_test(test_run_loop_overflow),
		cmocka_unit_test(test_run_huge_numbers),
		cmocka_unit_test(test_run_untiled),
		cmocka_unit_test(test_run_topology),
		cmocka_unit_test(test_calibrate_cli),
		cmocka_unit_test(test_run_hbm_warning),
		cmocka_unit_test(test_run_unmodelled_warning),
		cmocka_unit_test(test_run_conditional),
		cmocka_unit_test(test_run_conditional_corpus),
		cmocka_unit_test(test_run_cublas_corpus),
		cmocka_unit_test(test_absurd_shapes),
		cmocka_unit_test(test_validate_unmodelled_warning),
		cmocka_unit_test(test_run_yaml),
		cmocka_unit_test(test_run_deterministic),
		cmocka_unit_test(test_dev_full),
		cmocka_unit_test(test_full_disk),
		cmocka_unit_test(test_multi_module),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_unmodelled_listed),
		cmocka_unit_test(test_trip_count),
		cmocka_unit_test(test_low_mxu_warning),
		cmocka_unit_test(test_low_mxu_hbm_bound),
		cmocka_unit_test(test_envelope_warning),
		cmocka_unit_test(test_roofline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
