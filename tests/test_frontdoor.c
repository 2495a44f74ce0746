/*
 * test_frontdoor.c: the JAX front door (frontdoor/, scripts/frontdoor.sh).
 * Without JAX: every module of the committed zoo (data/compiled/GEN/,
 * what XLA's TPU compiler made) parses, and the per-device ones (the
 * compiled NAME.tpu.hlo and NAME.spmd.hlo, XLA's module before fusion:
 * grouped as the xla policy would, XLA's kCustom fusions in it kept as
 * they are) are costed on their generation's spec,
 * every kernel at a finite, non-negative time and every program at a
 * positive one; each program has its three modules. With the front door's
 * environment (.venv-frontdoor, made by `sh scripts/frontdoor.sh --setup`;
 * skipped, saying so, without it):
 * the pinned versions compile the zoo's MLP for v5e to the committed bytes,
 * a user's step function goes to `tpusim run` in the README's two
 * commands, and scripts/build_steps.sh makes, from a one-row step-times
 * table (a 2-layer model on v5e:2x2), a set `tpusim validate` reads.
 * Those three run in the release build only: under AddressSanitizer they
 * would run the same Python again (some 35 s of the suite) for the
 * same few tpusim calls, whose C the zoo case here and the CLI tests
 * cover under it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_util.h"
#include "sim.h"
#include "test_util.h"

static const char *const gens[] = {"v2", "v3", "v4", "v5e", "v5p", "v6e",
				   "v7"};

struct zoo {
	const struct hw_spec *hw;
	int pre, spmd, tpu;
};

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

static void cost_module(const char *rel, const char *text, size_t len,
			void *ctx)
{
	struct zoo *z = ctx;
	struct tu_built b;
	tu_build_file(rel, text, len, NULL, &b);
	z->pre += ends_with(rel, ".pre.hlo");
	z->spmd += ends_with(rel, ".spmd.hlo");
	z->tpu += ends_with(rel, ".tpu.hlo");
	if (ends_with(rel, ".tpu.hlo") || ends_with(rel, ".spmd.hlo")) {
		struct ts_diag d = {0};
		if (sim_program_estimate(&b.p, z->hw, &d) != TS_OK)
			fail_msg("%s on %s: %s", rel, z->hw->name, d.msg);
		double total = 0;
		for (int i = 0; i < b.p.n_kernels; i++) {
			const struct sim_kernel *k = &b.p.kernels[i];
			if (!isfinite(k->est.time_ns) || k->est.time_ns < 0)
				fail_msg("%s: kernel %s at %g ns", rel, k->name,
					 k->est.time_ns);
			total += k->est.time_ns * k->multiplicity;
		}
		if (!(total > 0))
			fail_msg("%s: program time %g ns", rel, total);
	}
	tu_built_free(&b);
}

static void test_compiled_zoo(void **state)
{
	(void)state;
	char data[PATH_MAX];
	src(data, "data/compiled");
	for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++) {
		struct hw_spec hw;
		if (!tu_load_spec(gens[g], &hw))
			skip();
		struct zoo z = {.hw = &hw};
		tu_each_hlo(data, gens[g], 1, cost_module, &z);
		/* each program's three modules */
		if (z.tpu < 1 || z.pre != z.tpu || z.spmd != z.tpu)
			fail_msg("data/compiled/%s: %d pre, %d spmd, %d tpu "
				 "modules", gens[g], z.pre, z.spmd, z.tpu);
	}
}

#ifndef __SANITIZE_ADDRESS__ /* the JAX cases: release build only */
/* The front door's Python, or skip saying how to make it. */
static const char *venv_python(char *buf)
{
	src(buf, ".venv-frontdoor/bin/python");
	if (access(buf, X_OK) != 0) {
		print_message("skipped: no .venv-frontdoor (the JAX front door: "
			      "sh scripts/frontdoor.sh --setup makes it)\n");
		skip();
	}
	return buf;
}

static void test_zoo_reproduced(void **state)
{
	(void)state;
	char py[PATH_MAX], root[PATH_MAX], out[PATH_MAX];
	venv_python(py);
	src(root, "");
	src(out, "data/compiled");
	setenv("PYTHONPATH", root, 1);
	char *argv[] = {py, "-m", "frontdoor.build_zoo", "--check", "--only",
			"mlp_s", "--gen", "v5e", "--out", out, NULL};
	struct proc p;
	assert_true(spawn(&p, py, false, NULL, NULL, argv));
	expect_rc(&p, 0);
	proc_free(&p);
}

static void test_step_to_run(void **state)
{
	(void)state;
	char py[PATH_MAX], dir[PATH_MAX], script[PATH_MAX];
	venv_python(py);
	src(script, "scripts/frontdoor.sh");
	tu_tmp_path(dir, sizeof dir, "test_frontdoor", "");
	tu_rm_tree(dir);
	assert_int_equal(mkdir(dir, 0777), 0);
	char step[PATH_MAX + 16];
	snprintf(step, sizeof step, "%s/mystep.py", dir);
	FILE *f = fopen(step, "w");
	assert_non_null(f);
	fputs("import jax, jax.numpy as jnp\n"
	      "from jax.sharding import NamedSharding, PartitionSpec as P\n"
	      "def train_step(w, x):\n"
	      "    f = lambda w: jnp.mean(jnp.tanh(x @ w) ** 2)\n"
	      "    loss, g = jax.value_and_grad(f)(w)\n"
	      "    return w - 0.1 * g, loss\n"
	      "def inputs(mesh):\n"
	      "    s = lambda shape, spec: jax.ShapeDtypeStruct(\n"
	      "        shape, jnp.float32, sharding=NamedSharding(mesh, spec))\n"
	      "    return s((512, 512), P()), s((1024, 512), P('data'))\n",
	      f);
	fclose(f);
	char sh[4 * PATH_MAX];
	snprintf(sh, sizeof sh,
		 "cd '%s' && sh '%s' mystep:train_step --inputs mystep:inputs "
		 "--topology v5e:2x2 --mesh data=4 2>/dev/null",
		 dir, script);
	char *argv[] = {"sh", "-c", sh, NULL};
	struct proc p;
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
	expect_rc(&p, 0);
	/* the line it prints runs (from the same folder) */
	expect_contains(p.out, "/build/cli/tpusim run "
			       "compiled/v5e/train_step.tpu.hlo --hw ");
	char run[4 * PATH_MAX];
	snprintf(run, sizeof run, "cd '%s' && %s", dir, p.out);
	proc_free(&p);
	char *argv2[] = {"sh", "-c", run, NULL};
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv2));
	expect_rc(&p, 0);
	expect_contains(p.out, "module: jit_train_step\n");
	expect_contains(p.out, "  total  ");
	proc_free(&p);
	char json[PATH_MAX + 64];
	snprintf(json, sizeof json, "%s/compiled/v5e/train_step.json", dir);
	char *text = slurp(json);
	expect_contains(text, "\"libtpu\": \"0.0.42.1\"");
	expect_contains(text, "\"flops\": ");
	ts_free(text);
	/* the per-device module before fusion beside it */
	char spmd[PATH_MAX + 64];
	snprintf(spmd, sizeof spmd, "%s/compiled/v5e/train_step.spmd.hlo", dir);
	text = slurp(spmd);
	expect_contains(text, "HloModule jit_train_step");
	ts_free(text);
	tu_rm_tree(dir);
}

static void test_steps_set(void **state)
{
	(void)state;
	char py[PATH_MAX], dir[PATH_MAX], script[PATH_MAX], hw[PATH_MAX];
	venv_python(py);
	src(script, "scripts/build_steps.sh");
	src(hw, "hwspecs");
	tu_tmp_path(dir, sizeof dir, "test_frontdoor_steps", "");
	tu_rm_tree(dir);
	assert_int_equal(mkdir(dir, 0777), 0);
	char csv[PATH_MAX + 16], out[PATH_MAX + 16], data[PATH_MAX + 64];
	snprintf(csv, sizeof csv, "%s/steps.csv", dir);
	snprintf(out, sizeof out, "%s/set", dir);
	snprintf(data, sizeof data, "%s/measurements.csv", out);
	FILE *f = fopen(csv, "w");
	assert_non_null(f);
	fputs("id,hw,model,layers,d_model,num_heads,head_dim,d_ff,"
	      "mlp_activation,vocab,slices,chips_per_slice,chips,"
	      "per_device_batch,global_batch,seq_len,step_s,parallelism,"
	      "other_settings,value_repo,value_path,value_commit\n"
	      "tiny-v5e,v5e,tiny,2,256,4,64,1024,relu,1024,1,4,4,2,8,256,"
	      "0.01,ici_fsdp_parallelism=-1,remat_policy=full; "
	      "xla_flags_library: MOE_VMEM_LIMIT_FLAG,test,steps.csv,0\n",
	      f);
	fclose(f);
	char *argv[] = {"sh", script, csv, out, "--builder", "jax", NULL};
	struct proc p;
	assert_true(spawn(&p, "/bin/sh", false, NULL, NULL, argv));
	expect_rc(&p, 0);
	proc_free(&p);
	char *text = slurp(data);
	/* the run's scoped VMEM limit (MaxText's MOE_VMEM_LIMIT_FLAG, 80 MiB)
	 * in its set column */
	expect_contains(text, "id,module,hw,config,runtime_ns,runtime_min_ns,"
			      "repeats,timing,source,topology,slices,devices,"
			      "set\n"
			      "tiny-v5e,modules/tiny-v5e.hlo,tpu-v5e,,10000000,"
			      ",,device,test steps.csv 0,2x2,1,"
			      "devices/tiny-v5e.csv,vmem.scoped_bytes=83886080\n");
	ts_free(text);
	/* the row costed on its slice (its topology and slices columns) and
	 * with its limit */
	tpusim(&p, "validate", "--data", out, "--hw-dir", hw);
	expect_rc(&p, 0);
	expect_contains(p.out, ": 1 rows, 1 estimated, 0 errors");
	proc_free(&p);
	tu_rm_tree(dir);
}

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compiled_zoo),
#ifndef __SANITIZE_ADDRESS__
		cmocka_unit_test(test_zoo_reproduced),
		cmocka_unit_test(test_step_to_run),
		cmocka_unit_test(test_steps_set),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
