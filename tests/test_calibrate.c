/*
 * test_calibrate.c: tpusim calibrate's fitting (validation/val_calibrate.c).
 *   - recovery: a set whose runtimes are made from known host figures is
 *     fitted from a wrong start and must give those figures back;
 *   - reproduction: the host figures committed in hwspecs/v3.yaml are what
 *     the command in their comment fits on ../shared/data (skipped, saying
 *     so, when it is absent);
 *   - refusals: a field starting at 0, no row selected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "val.h"
#include "test_util.h"

/* Three programs with different (kernels, devices): 1 kernel on 1 device,
 * 2 independent kernels on 1 device, 2 kernels on 4 devices. */
static const char one_hlo[] =
	"HloModule one\n"
	"ENTRY e {\n"
	"  p = f32[256,1024]{1,0} parameter(0)\n"
	"  ROOT n = f32[256,1024]{1,0} negate(p)\n"
	"}\n";
static const char two_hlo[] =
	"HloModule two\n"
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n"
	"  p = f32[256,1024]{1,0} parameter(0)\n"
	"  z = f32[] constant(0)\n"
	"  r = f32[256]{0} reduce(p, z), dimensions={1}, to_apply=add\n"
	"  t = f32[1024,256]{1,0} transpose(p), dimensions={1,0}\n"
	"  ROOT o = (f32[256]{0}, f32[1024,256]{1,0}) tuple(r, t)\n"
	"}\n";
static const char four_hlo[] =
	"HloModule four, replica_count=4\n"
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n"
	"  p = f32[1024]{0} parameter(0)\n"
	"  n = f32[1024]{0} negate(p)\n"
	"  ROOT r = f32[1024]{0} all-reduce(n), replica_groups={{0,1,2,3}}, "
	"to_apply=add\n"
	"}\n";

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[1200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void remove_set(const char *dir)
{
	const char *files[] = {"measurements.csv", "one.hlo", "two.hlo",
			       "four.hlo"};
	for (size_t i = 0; i < TS_ARRAY_LEN(files); i++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* The three host field infos, looked up by path. */
static void host_fields(struct val_calib_opts *o)
{
	const char *paths[] = {"host.call_ns", "host.kernel_ns",
			       "host.device_ns"};
	o->n_fields = 3;
	for (int j = 0; j < 3; j++) {
		o->fields[j] = hw_spec_field(paths[j]);
		assert_non_null(o->fields[j]);
	}
}

/*
 * Truth: call 80 us, kernel 30 us, device 60 us. Each row's runtime is the
 * model's device time (host figures at 0) plus the true host term, worked
 * out here by hand from the programs' kernel and device counts:
 *   one  (1 kernel, 1 device): 80 + 30           = 110 us
 *   two  (2 kernels, 1 device): 80 + 2 x 30      = 140 us
 *   four (2 kernels, 4 devices): 80 + 60 + 3 x 60 = 320 us
 * Fitted from 100/50/100 us, the figures must come back within 0.5% (the
 * runtimes are rounded to whole ns; the simplex stops at 0.1%).
 */
static void test_recovers_known_figures(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/calib_XXXXXX", tu_tmpdir());
	assert_non_null(mkdtemp(dir));
	write_text(dir, "one.hlo", one_hlo);
	write_text(dir, "two.hlo", two_hlo);
	write_text(dir, "four.hlo", four_hlo);

	/* Device times: a set with made-up runtimes costed at host = 0. */
	const char *mods[] = {"one", "two", "four"};
	const double host_us[] = {110, 140, 320};
	char csv[1024] = "id,module,hw,config,runtime_ns,runtime_min_ns,"
			 "repeats,timing,source\n";
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(csv);
		snprintf(csv + n, sizeof csv - n,
			 "%s_x,%s.hlo,tpu-v3,,1000000,,,host,made up\n",
			 mods[i], mods[i]);
	}
	write_text(dir, "measurements.csv", csv);
	struct val_dataset ds;
	struct val_specs specs;
	struct val_report r;
	struct ts_diag d = {0};
	struct hw_spec zero = hw;
	zero.host_call_ns = zero.host_kernel_ns = zero.host_device_ns = 0;
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	assert_int_equal(val_specs_single(&zero, "v3", &specs), TS_OK);
	assert_int_equal(val_report_build(&ds, &specs, NULL, &r, &d), TS_OK);
	csv[strcspn(csv, "\n") + 1] = '\0';
	for (int i = 0; i < 3; i++) {
		assert_int_equal(r.rows[i].status, TS_OK);
		size_t n = strlen(csv);
		snprintf(csv + n, sizeof csv - n,
			 "%s_x,%s.hlo,tpu-v3,,%.0f,,,host,made up\n", mods[i],
			 mods[i], r.rows[i].device_ns + 1000 * host_us[i]);
	}
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
	write_text(dir, "measurements.csv", csv);

	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	struct val_calib_opts o = {.max_iter = 2000};
	host_fields(&o);
	struct hw_spec start = hw;
	start.host_call_ns = 100000;
	start.host_kernel_ns = 50000;
	start.host_device_ns = 100000;
	const struct val_dataset *sets[] = {&ds};
	struct val_calib c;
	assert_int_equal(val_calibrate(sets, 1, &start, &o, &c, &d), TS_OK);
	assert_int_equal(c.n_rows, 3);
	assert_int_equal(c.n_groups, 3); /* families one, two, four */
	assert_true(c.converged);
	assert_near(c.fitted.host_call_ns, 80000, 0.005 * 80000);
	assert_near(c.fitted.host_kernel_ns, 30000, 0.005 * 30000);
	assert_near(c.fitted.host_device_ns, 60000, 0.005 * 60000);
	assert_true(c.loss_fit < 1e-6 && c.loss_fit < c.loss_start);
	assert_true(isnan(c.mape_cv)); /* no cross-validation asked */
	val_calib_free(&c);
	val_dataset_free(&ds);
	remove_set(dir);
}

/*
 * hwspecs/v3.yaml's host figures carry the command that fits them:
 *   tpusim calibrate --hw hwspecs/v3.yaml --data ../shared/data/tpuv3-ops
 *     --data ../shared/data/tpuv3-allreduce --fit host.call_ns,
 *     host.kernel_ns,host.device_ns
 * Started 1.5x away from them, the fit must land on the committed values
 * within 1% (the simplex's 0.1% stop, from another start).
 */
static void test_reproduces_v3_host(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	struct hw_spec hw;
	if (!shared) {
		print_message("TPUSIM_SHARED unset: the v3 host fit is not "
			      "reproduced\n");
		skip();
	}
	if (!tu_load_spec("v3", &hw))
		skip();
	const char *names[] = {"tpuv3-ops", "tpuv3-allreduce"};
	struct val_dataset ds[2];
	const struct val_dataset *sets[2];
	struct ts_diag d = {0};
	for (int i = 0; i < 2; i++) {
		char dir[1024];
		snprintf(dir, sizeof dir, "%s/data/%s", shared, names[i]);
		assert_int_equal(val_dataset_load(dir, &ds[i], &d), TS_OK);
		sets[i] = &ds[i];
	}
	struct val_calib_opts o = {.max_iter = 400};
	host_fields(&o);
	struct hw_spec start = hw;
	start.host_call_ns *= 1.5;
	start.host_kernel_ns *= 1.5;
	start.host_device_ns *= 1.5;
	struct val_calib c;
	assert_int_equal(val_calibrate(sets, 2, &start, &o, &c, &d), TS_OK);
	assert_int_equal(c.n_rows, 84 + 30);
	assert_int_equal(c.n_groups, 5); /* 4 op families + allreduce */
	assert_near(c.fitted.host_call_ns, hw.host_call_ns,
		    0.01 * hw.host_call_ns);
	assert_near(c.fitted.host_kernel_ns, hw.host_kernel_ns,
		    0.01 * hw.host_kernel_ns);
	assert_near(c.fitted.host_device_ns, hw.host_device_ns,
		    0.01 * hw.host_device_ns);
	val_calib_free(&c);
	for (int i = 0; i < 2; i++)
		val_dataset_free(&ds[i]);
}

static void test_refusals(void **state)
{
	(void)state;
	struct hw_spec hw;
	char dir[1024];
	if (!tu_load_spec("v3", &hw))
		skip();
	snprintf(dir, sizeof dir, "%s/calib_XXXXXX", tu_tmpdir());
	assert_non_null(mkdtemp(dir));
	write_text(dir, "one.hlo", one_hlo);
	write_text(dir, "measurements.csv",
		   "id,module,hw,config,runtime_ns,runtime_min_ns,repeats,"
		   "timing,source\none_x,one.hlo,tpu-v4,,5000,,,device,x\n");
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	const struct val_dataset *sets[] = {&ds};
	struct val_calib_opts o = {.max_iter = 10};
	host_fields(&o);
	struct val_calib c;
	/* Every row is a v4 measurement: nothing to fit a v3 spec to. */
	assert_int_equal(val_calibrate(sets, 1, &hw, &o, &c, &d),
			 TS_ERR_MISUSE);
	assert_string_equal(d.msg, "no rows to fit: none is measured on v3");
	assert_int_equal(c.n_other_hw, 1);
	val_calib_free(&c);
	struct hw_spec z = hw;
	z.host_device_ns = 0;
	assert_int_equal(val_calibrate(sets, 1, &z, &o, &c, &d),
			 TS_ERR_MISUSE);
	assert_string_equal(d.msg, "host.device_ns: the start value 0 cannot "
				   "be fitted (the fit runs on its "
				   "logarithm): give it a positive value in "
				   "the spec");
	val_calib_free(&c);
	val_dataset_free(&ds);
	remove_set(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recovers_known_figures),
		cmocka_unit_test(test_reproduces_v3_host),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
