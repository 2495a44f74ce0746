/*
 * test_val_data.c: validates the real measurement sets in
 * $TPUSIM_SHARED/data with hwspecs/ (label `data`). It checks structure
 * (row, kernel and module counts from the sets' MANIFEST.md, every row
 * costed, metrics finite), not accuracy: thresholds belong to docs/ACCURACY.md's
 * accuracy report, which changes as the model does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "val.h"

/* Loads $TPUSIM_SHARED/data/<set> and costs it with $TPUSIM_SOURCE/hwspecs;
 * skips when either variable is unset or the set is absent. */
static void build(const char *set, struct val_dataset *ds,
		  struct val_specs *specs, struct val_report *r)
{
	const char *shared = getenv("TPUSIM_SHARED");
	const char *source = getenv("TPUSIM_SOURCE");
	if (!shared || !source) {
		print_message("TPUSIM_SHARED or TPUSIM_SOURCE unset: skipped\n");
		skip();
	}
	char dir[1024], csv[1100], hw_dir[1024];
	snprintf(dir, sizeof dir, "%s/data/%s", shared, set);
	snprintf(csv, sizeof csv, "%s/measurements.csv", dir);
	snprintf(hw_dir, sizeof hw_dir, "%s/hwspecs", source);
	FILE *f = fopen(csv, "r");
	if (!f) {
		print_message("%s absent: skipped\n", csv);
		skip();
	}
	fclose(f);
	struct ts_diag d = {0};
	enum ts_status st = val_dataset_load(dir, ds, &d);
	if (st == TS_OK)
		st = val_specs_load_dir(ds, hw_dir, specs, &d);
	if (st == TS_OK)
		st = val_report_build(ds, specs, NULL, r, &d);
	if (st != TS_OK)
		ts_diag_print(&d, stderr);
	assert_int_equal(st, TS_OK);
	/* Every row is costed; list the first failure if not. */
	for (int i = 0; i < r->n_rows; i++)
		if (r->rows[i].status != TS_OK) {
			print_error("%s: %s\n", ds->rows[i].id, r->rows[i].error);
			break;
		}
	assert_int_equal(r->n_errors, 0);
}

static void release(struct val_dataset *ds, struct val_specs *specs,
		    struct val_report *r)
{
	val_report_free(r);
	val_specs_free(specs);
	val_dataset_free(ds);
}

static void test_tpugraphs_tile(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	build("tpugraphs-tile-v3", &ds, &specs, &r);
	assert_int_equal(ds.n_rows, 752);
	assert_int_equal(ds.n_modules, 15);
	assert_true(ds.has_configs);
	assert_true(r.by_kernel);
	assert_int_equal(r.n_groups, 15);
	assert_string_equal(r.spec_names, "v3");
	int rows = 0, defaults = 0;
	for (int i = 0; i < r.n_groups; i++) {
		const struct val_group *g = &r.groups[i];
		rows += g->n_rows;
		defaults += !isnan(g->default_ns);
		assert_true(isfinite(g->mape) && isfinite(g->median_ape));
		assert_true(isfinite(g->roofline_mape));
		assert_true(isfinite(g->top1_slowdown) && g->top1_slowdown >= 0);
		assert_true(isfinite(g->best_ns) && g->best_ns > 0);
		/* The roofline is config-blind: it cannot rank configs. */
		assert_true(isnan(g->tau_roofline));
		if (!strcmp(g->name, "fusion.191"))
			assert_int_equal(g->n_rows, 579);
	}
	assert_int_equal(rows, 752);
	assert_int_equal(defaults, 15); /* run 0 of every kernel */
	assert_int_equal(r.n_rank_kernels, 15);
	assert_true(isfinite(r.overall.mape) && isfinite(r.overall.median_ape));
	assert_true(isfinite(r.mean_tau_model) && fabs(r.mean_tau_model) <= 1);
	assert_true(isfinite(r.mean_tau_steps));
	assert_true(isfinite(r.mean_top1_slowdown));
	assert_int_equal(r.tiles_all.n_kernels, 15);
	assert_int_equal(r.tiles_config.n_kernels, 12); /* 3 reshapes */
	assert_true(r.tiles_all.chosen_ns >= r.tiles_all.best_ns);
	assert_true(r.tiles_all.default_ns >= r.tiles_all.best_ns);
	assert_int_equal(r.n_host, 0);
	release(&ds, &specs, &r);
}

static void test_tpuv4_ops(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	build("tpuv4-ops", &ds, &specs, &r);
	assert_int_equal(ds.n_rows, 4428);
	assert_int_equal(ds.n_modules, 4428);
	assert_false(r.by_kernel);
	assert_string_equal(r.spec_names, "v4");
	assert_true(isfinite(r.overall.mape) && isfinite(r.overall.median_ape));
	assert_true(isfinite(r.overall.roofline_mape));
	int matmul = -1;
	for (int i = 0; i < r.n_groups; i++)
		if (!strcmp(r.groups[i].name, "matmul"))
			matmul = i;
	assert_true(matmul >= 0);
	assert_int_equal(r.groups[matmul].n_rows, 1259); /* MANIFEST.md */
	release(&ds, &specs, &r);
}

static void test_tpuv3_ops(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	build("tpuv3-ops", &ds, &specs, &r);
	assert_int_equal(ds.n_rows, 84);
	assert_int_equal(ds.n_modules, 82);
	assert_int_equal(r.n_host, 84);
	assert_int_equal(r.n_groups, 4); /* matmul, softmax, layernorm, gelu */
	/* MANIFEST.md: the matmul and softmax files record each call's
	 * dispatch overhead (details.csv overhead_ns); it checks the host
	 * term but never enters a prediction: every program here runs on one
	 * device, so a row's term is host.call_ns + host.kernel_ns x its
	 * kernels, whatever its recorded overhead. */
	assert_int_equal(ds.n_overhead, 42);
	assert_int_equal(r.n_host_recorded, 42);
	assert_true(isfinite(r.host_term_mape));
	const struct hw_spec *hw = &specs.spec[0];
	for (int i = 0; i < r.n_rows; i++) {
		const struct val_row *row = &ds.rows[i];
		bool recorded = !strncmp(row->id, "matmul_", 7) ||
				!strncmp(row->id, "softmax_", 8);
		assert_int_equal(row->overhead_ns >= 0, recorded);
		double dispatch = hw->host_call_ns +
				  hw->host_kernel_ns * r.rows[i].n_kernels;
		assert_true(r.rows[i].dispatch_ns == dispatch);
		assert_true(r.rows[i].predicted_ns ==
			    r.rows[i].device_ns + dispatch);
	}
	assert_true(isfinite(r.overall.mape));
	release(&ds, &specs, &r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tpugraphs_tile),
		cmocka_unit_test(test_tpuv4_ops),
		cmocka_unit_test(test_tpuv3_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
