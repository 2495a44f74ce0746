/*
 * fuzz_record.c: libFuzzer target for the live autotuner's inputs that are
 * not HLO: the record folder it resumes (val_record) and the measuring
 * command's words and printed time (val_cmd_*). The first byte picks:
 *   even: the rest is measurements.csv of a record (its rows may name
 *         modules/m.hlo, which exists), up to a byte 0x1e, then failed.csv.
 *         Open it (a lock, a torn line cut, the set reader); when it opens,
 *         append a measurement and a failure, close, open again: it must
 *         open, find the measurement and still hold every row it had;
 *   odd:  the rest is a --measure-cmd line and a command's output: split
 *         into words, each word's placeholders substituted; the output read
 *         as a time, which must be whole ns from 1 up and read back the same
 *         when printed as the record prints it.
 * Aborts, so that the fuzzer sees it, when a property fails or a failure is
 * not located (no message).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "val.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

/* The scratch record goes when the fuzzer exits. */
static void remove_dir(void)
{
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_record: cannot remove %s\n", dir);
}

static void put(const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (!n) {
		remove(path);
		return;
	}
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static void fuzz_record(const uint8_t *p, size_t n)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/tmp/fuzz_record_%ld", (long)getpid());
		atexit(remove_dir);
		char mods[96];
		snprintf(mods, sizeof mods, "%s/modules", dir);
		if ((mkdir(dir, 0777) && access(dir, F_OK)) ||
		    (mkdir(mods, 0777) && access(mods, F_OK)))
			abort();
		static const uint8_t m[] = "HloModule m\n";
		put("modules/m.hlo", m, sizeof m - 1);
	}
	const uint8_t *sep = memchr(p, 0x1e, n);
	size_t csv_n = sep ? (size_t)(sep - p) : n;
	put("measurements.csv", p, csv_n);
	put("failed.csv", sep ? sep + 1 : p, sep ? n - csv_n - 1 : 0);
	FILE *note = fopen("/dev/null", "w");
	struct val_record r;
	struct ts_diag d = {0};
	enum ts_status st = val_record_open(dir, &r, note, &d);
	if (st && !d.msg[0])
		abort();
	int rows = r.ds.n_rows;
	bool added = false;
	if (!st) {
		const char *cfg = "output_bounds=8x128";
		struct ts_diag da = {0};
		st = val_record_add(&r, "fuzz,\"id\"\n", "modules/m.hlo",
				    "tpu-v3", cfg, 1234, &da);
		added = st == TS_OK;
		if (st && !da.msg[0])
			abort();
		if (val_record_add_failure(&r, "x", "modules/m.hlo", "k", cfg,
					   "why,\"\n", &da))
			abort();
	}
	val_record_close(&r);
	if (added) {
		memset(&d, 0, sizeof d);
		if (val_record_open(dir, &r, note, &d) ||
		    r.ds.n_rows != rows + 1 ||
		    val_record_find(&r, "modules/m.hlo", "tpu-v3",
				    "output_bounds=8x128") != 1234)
			abort();
		val_record_close(&r);
	}
	fclose(note);
}

static void fuzz_command(const uint8_t *p, size_t n)
{
	const uint8_t *sep = memchr(p, '\0', n);
	size_t cmd_n = sep ? (size_t)(sep - p) : n;
	char *cmd = ts_malloc(cmd_n + 1), *buf = ts_malloc(cmd_n + 1);
	if (!cmd || !buf)
		abort();
	memcpy(cmd, p, cmd_n);
	cmd[cmd_n] = '\0';
	char *words[VAL_CMD_MAX_WORDS];
	int nw = 0;
	if (val_cmd_split(cmd, buf, words, &nw)) {
		if (nw < 1 || nw > VAL_CMD_MAX_WORDS)
			abort();
		const char *vals[3] = {"a b/{kernel}.hlo", "fusion.1",
				       "output_bounds=8x128;kernel_bounds=8"};
		for (int i = 0; i < nw; i++) {
			char *w = val_cmd_substitute(words[i], vals);
			if (!w || strstr(w, "{config}"))
				abort();
			ts_free(w);
		}
	}
	const char *out = sep ? (const char *)sep + 1 : cmd;
	size_t out_n = sep ? n - cmd_n - 1 : cmd_n;
	int64_t ns = 0, again = 0;
	char why[256] = "", text[32];
	if (val_cmd_read_ns(out, out_n, &ns, why, sizeof why)) {
		snprintf(text, sizeof text, "%" PRId64, ns);
		if (ns < 1 || !val_cmd_read_ns(text, strlen(text), &again, why,
					       sizeof why) ||
		    again != ns)
			abort();
	} else if (!why[0]) {
		abort();
	}
	ts_free(cmd);
	ts_free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		fuzz_record(data + 1, size - 1);
	else
		fuzz_command(data + 1, size - 1);
	return 0;
}
