/*
 * test_accuracy.c: the accuracy regression gate (label `accuracy`). Every
 * measurement set in $TPUSIM_SHARED/data (a folder with measurements.csv) is
 * validated with hwspecs/ (a spec per row's hw, as `tpusim validate
 * --hw-dir hwspecs`) and compared with tests/accuracy_baseline.txt, which
 * scripts/accuracy_report.sh writes together with docs/ACCURACY.md's accuracy
 * section (so the two change together):
 *   - the set's MAPE may exceed its baseline by at most MAPE_MARGIN;
 *   - every kernel with >= VAL_TAU_MIN_ROWS configs keeps its Kendall tau-b
 *     within TAU_MARGIN of its baseline;
 *   - a set or ranked kernel without a baseline line fails (regenerate).
 * The margins only absorb floating-point differences between compilers and
 * libm versions (a rebuild on the same machine gives the same bits): any
 * change of the model that makes a figure worse fails here.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "val.h"
#include "test_util.h"

#define MAPE_MARGIN 0.001 /* 0.1 percentage point of MAPE */
#define TAU_MARGIN 0.005  /* of Kendall tau-b */
#define MAX_BASE 256      /* baseline lines */

struct base {
	char set[64], metric[16], group[64];
	double value;
	bool used;
};

static struct base base[MAX_BASE];
static int n_base;

/* Reads tests/accuracy_baseline.txt: "SET METRIC GROUP VALUE" per line,
 * '#' comments; METRIC is mape (GROUP "-") or tau. */
static void load_baseline(const char *src)
{
	char path[4096], line[512];
	snprintf(path, sizeof path, "%s/tests/accuracy_baseline.txt", src);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	int no = 0;
	while (fgets(line, sizeof line, f)) {
		no++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (n_base == MAX_BASE)
			fail_msg("%s: more than %d lines", path, MAX_BASE);
		struct base *b = &base[n_base++];
		if (sscanf(line, "%63s %15s %63s %lf", b->set, b->metric,
			   b->group, &b->value) != 4)
			fail_msg("%s:%d: expected SET METRIC GROUP VALUE", path,
				 no);
	}
	fclose(f);
}

static struct base *find(const char *set, const char *metric,
			 const char *group)
{
	for (int i = 0; i < n_base; i++)
		if (!strcmp(base[i].set, set) &&
		    !strcmp(base[i].metric, metric) &&
		    !strcmp(base[i].group, group))
			return &base[i];
	return NULL;
}

/* Validates one set; returns the number of figures worse than baseline. */
static int check_set(const char *dir, const char *hw_dir)
{
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	if (val_dataset_load(dir, &ds, &d) ||
	    val_specs_load_dir(&ds, hw_dir, &specs, &d) ||
	    val_report_build(&ds, &specs, NULL, &r, &d)) {
		ts_diag_print(&d, stderr);
		fail_msg("%s: cannot validate", dir);
	}
	int worse = 0;
	struct base *b = find(ds.name, "mape", "-");
	if (!b)
		fail_msg("%s: no baseline; run scripts/accuracy_report.sh",
			 ds.name);
	b->used = true;
	bool bad = r.overall.mape > b->value + MAPE_MARGIN;
	printf("%-20s MAPE %.4f (baseline %.4f)%s\n", ds.name, r.overall.mape,
	       b->value, bad ? "  WORSE" : "");
	worse += bad;
	for (int i = 0; i < r.n_groups; i++) {
		const struct val_group *g = &r.groups[i];
		if (g->n_ranked < VAL_TAU_MIN_ROWS || isnan(g->tau_model))
			continue;
		b = find(ds.name, "tau", g->name);
		if (!b)
			fail_msg("%s: kernel %s has no tau baseline; run "
				 "scripts/accuracy_report.sh",
				 ds.name, g->name);
		b->used = true;
		bad = g->tau_model < b->value - TAU_MARGIN;
		printf("%-20s   tau %-12s %.4f (baseline %.4f)%s\n", ds.name,
		       g->name, g->tau_model, b->value, bad ? "  WORSE" : "");
		worse += bad;
	}
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
	return worse;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_no_regression(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	const char *src = getenv("TPUSIM_SOURCE");
	if (!shared || !src) {
		print_message("TPUSIM_SHARED or TPUSIM_SOURCE unset: no "
			      "measurement sets to check\n");
		skip();
	}
	load_baseline(src);
	char data[4096], hw_dir[4096];
	snprintf(data, sizeof data, "%s/data", shared);
	snprintf(hw_dir, sizeof hw_dir, "%s/hwspecs", src);
	DIR *dp = opendir(data);
	if (!dp)
		fail_msg("cannot open %s", data);
	/* readdir order is the file system's: sort the names. */
	char names[64][256];
	int n = 0;
	for (struct dirent *e; (e = readdir(dp)) && n < 64;) {
		char csv[8192 + 256];
		snprintf(csv, sizeof csv, "%s/%s/measurements.csv", data,
			 e->d_name);
		FILE *f = fopen(csv, "r");
		if (!f)
			continue;
		fclose(f);
		snprintf(names[n++], sizeof names[0], "%.255s", e->d_name);
	}
	closedir(dp);
	qsort(names, (size_t)n, sizeof names[0], cmp_name);
	assert_true(n > 0);
	int worse = 0;
	for (int i = 0; i < n; i++) {
		char dir[4096 + 256 + 2];
		snprintf(dir, sizeof dir, "%.4000s/%.255s", data, names[i]);
		worse += check_set(dir, hw_dir);
	}
	for (int i = 0; i < n_base; i++)
		if (!base[i].used)
			fail_msg("baseline line %s %s %s names no set or ranked "
				 "kernel of ../shared/data; run "
				 "scripts/accuracy_report.sh",
				 base[i].set, base[i].metric, base[i].group);
	if (worse)
		fail_msg("%d figures worse than tests/accuracy_baseline.txt "
			 "(margins: MAPE +%.3f, tau -%.3f)",
			 worse, MAPE_MARGIN, TAU_MARGIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_regression),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
