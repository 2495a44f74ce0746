/*
 * bench_parse.c: HLO parse throughput. Reads every .hlo file of a folder into
 * memory, then parses all of them over and over on one core for at least two
 * seconds of CPU time and prints "parse: N files, X MB, Y MB/s" (MB = 1e6
 * bytes, per second of this process's CPU time, so that other work on a
 * shared machine does not lower the figure).
 * Usage: bench_parse <hlo-corpus dir>
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir.h"

#define BENCH_MIN_SECONDS 2.0
#define BENCH_MAX_FILES 4096

struct bench_file {
	char *path;
	char *text;
	size_t len;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct bench_file *)a)->path,
		      ((const struct bench_file *)b)->path);
}

/* Parses every file once; returns 0, or 1 after printing the first error. */
static int parse_all(const struct bench_file *f, int n)
{
	for (int i = 0; i < n; i++) {
		struct ir_module **m = NULL;
		int nm = 0;
		struct ts_diag d = {0};
		enum ts_status st = hlo_parse(f[i].path, f[i].text, f[i].len, &m, &nm, &d);
		if (st != TS_OK) {
			ts_diag_print(&d, stderr);
			return 1;
		}
		for (int k = 0; k < nm; k++)
			ir_module_free(m[k]);
		ts_free(m);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench_parse <hlo-corpus dir>\n");
		return 2;
	}
	DIR *dir = opendir(argv[1]);
	if (!dir) {
		fprintf(stderr, "bench_parse: cannot open %s\n", argv[1]);
		return 2;
	}
	struct bench_file *files = calloc(BENCH_MAX_FILES, sizeof *files);
	if (!files)
		return 2;
	int n = 0, rc = 0;
	size_t bytes = 0;
	struct dirent *e;
	while ((e = readdir(dir)) && n < BENCH_MAX_FILES) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".hlo") != 0)
			continue;
		struct bench_file *f = &files[n];
		size_t plen = strlen(argv[1]) + len + 2;
		f->path = malloc(plen);
		if (!f->path) {
			rc = 2;
			break;
		}
		snprintf(f->path, plen, "%s/%s", argv[1], e->d_name);
		struct ts_diag d = {0};
		if (ts_read_file(f->path, &f->text, &f->len, &d) != TS_OK) {
			ts_diag_print(&d, stderr);
			free(f->path);
			rc = 2;
			break;
		}
		bytes += f->len;
		n++;
	}
	closedir(dir);
	if (rc == 0 && n == 0) {
		fprintf(stderr, "bench_parse: no .hlo files in %s\n", argv[1]);
		rc = 2;
	}
	if (rc == 0) {
		qsort(files, (size_t)n, sizeof *files, cmp_path);
		rc = parse_all(files, n); /* warm-up, and every file must parse */
	}
	if (rc == 0) {
		long rounds = 0;
		double t0 = now_s(), t;
		do {
			rc = parse_all(files, n);
			rounds++;
			t = now_s() - t0;
		} while (rc == 0 && t < BENCH_MIN_SECONDS);
		if (rc == 0)
			printf("parse: %d files, %.2f MB, %.1f MB/s\n", n, bytes / 1e6,
			       (double)bytes * rounds / t / 1e6);
	}
	for (int i = 0; i < n; i++) {
		free(files[i].path);
		ts_free(files[i].text);
	}
	free(files);
	return rc;
}
