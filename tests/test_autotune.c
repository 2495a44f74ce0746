/*
 * test_autotune.c: the replay of validation/val_autotune.c on a set made
 * up here, with every expected value worked out by hand: a kernel of four
 * recorded configs measured at 100, 110, 300 and 400 ns whose analytic
 * model ranks them backwards and whose hybrid ranks them right, and a
 * kernel with one config (counted, left out).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "val.h"
#include "test_util.h"

/* every strategy's figure is a mean of 20,000 runs' (seeds): the sum of
 * 20,000 equal terms rounds by about 1e-12 */
#define EPS 1e-9

static const double measured[5] = {100, 110, 300, 400, 50};
static const double analytic[5] = {4, 3, 2, 1, 1};
static const double hybrid[5] = {1, 2, 3, 4, 1};

/* The set: rows 0-3 are module "k" (configs), row 4 module "one". */
static void make_set(struct val_dataset *ds, struct val_module *mods,
		     struct val_row *rows, struct val_report *r,
		     struct val_row_result *res)
{
	memset(ds, 0, sizeof *ds);
	memset(r, 0, sizeof *r);
	memset(rows, 0, 5 * sizeof *rows);
	memset(res, 0, 5 * sizeof *res);
	mods[0] = (struct val_module){.name = "k", .n_rows = 4, .first_row = 0};
	mods[1] = (struct val_module){.name = "one", .n_rows = 1, .first_row = 4};
	static const char *const configs[5] = {"a", "b", "c", "d", ""};
	for (int i = 0; i < 5; i++) {
		rows[i].i_module = i < 4 ? 0 : 1;
		rows[i].config = configs[i];
		res[i].measured_ns = measured[i];
		res[i].analytic_ns = analytic[i];
		res[i].hybrid_ns = hybrid[i];
		res[i].steps = 1 + i;
		res[i].mxu_cycles = 10;
		res[i].vpu_cycles = 10;
		res[i].dma_cycles = 10 * (i + 1);
	}
	ds->name = "made";
	ds->n_rows = 5;
	ds->rows = rows;
	ds->n_modules = 2;
	ds->modules = mods;
	r->ds = ds;
	r->n_rows = 5;
	r->rows = res;
}

static void test_replay_by_hand(void **state)
{
	(void)state;
	struct val_dataset ds;
	struct val_module mods[2];
	struct val_row rows[5];
	struct val_report r;
	struct val_row_result res[5];
	make_set(&ds, mods, rows, &r, res);
	struct val_tune_opts o = {.n_budgets = 4, .budgets = {1, 2, 3, 4},
				  .seeds = 20000, .seed = 7};
	for (int s = 0; s < VAL_TUNE_COUNT; s++)
		o.use[s] = true;
	struct val_tune_set t;
	assert_int_equal(val_tune_replay(&r, &o, &t, NULL), TS_OK);
	assert_int_equal(t.n_kernels, 1);
	assert_int_equal(t.n_single, 1);
	assert_string_equal(t.single_example, "one");
	/* analytic measures 400, 300, 110, 100: best so far 400, 300, 110,
	 * 100 over 100; within 5% (and 1%) only at the fourth */
	const struct val_tune_result *a = &t.res[VAL_TUNE_ANALYTIC];
	assert_near(a->slowdown[0], 3.0, EPS);
	assert_near(a->slowdown[1], 2.0, EPS);
	assert_near(a->slowdown[2], 0.1, EPS);
	assert_near(a->slowdown[3], 0.0, EPS);
	assert_near(a->to_5pct, 4, EPS);
	assert_near(a->to_1pct, 4, EPS);
	/* the hybrid measures the best first */
	const struct val_tune_result *h = &t.res[VAL_TUNE_HYBRID];
	for (int b = 0; b < 4; b++)
		assert_near(h->slowdown[b], 0.0, EPS);
	assert_near(h->to_1pct, 1, EPS);
	/* random, in expectation: the mean of a uniform pick (0 + 0.1 + 2
	 * + 3) / 4 = 1.275; of the best of two, the six pairs' minima (100
	 * x 3, 110 x 2, 300) / 6 / 100 - 1 = 0.3667; of three, the four
	 * triples' (100 x 3, 110) / 4 / 100 - 1 = 0.025. 20,000 seeds: the
	 * sd of the first mean is about 1.3 / sqrt(20000) = 0.009. */
	const struct val_tune_result *x = &t.res[VAL_TUNE_RANDOM];
	assert_near(x->slowdown[0], 1.275, 0.04);
	assert_near(x->slowdown[1], 820.0 / 600 - 1, 0.02);
	assert_near(x->slowdown[2], 0.025, 0.005);
	assert_near(x->slowdown[3], 0.0, EPS);
	/* the best is the first pick with probability 1/4 and comes at
	 * position 1..4 uniformly: 2.5 measurements in expectation */
	assert_near(x->to_1pct, 2.5, 0.05);
	/* online, on the first kernel of a run (nothing to transfer yet),
	 * picks first what the analytic model ranks first */
	assert_near(t.res[VAL_TUNE_ONLINE].slowdown[0], 3.0, EPS);
	/* then learns from that measurement: its residual r = ln(400 / 1)
	 * = 5.99 moves the posterior mean by Sigma0 phi3 r / (phi3 Sigma0
	 * phi3 + 0.05^2) from the prior (level sd 1, slopes sd 0.5; phi =
	 * [1, ln steps, MXU share, DMA share], config 3: [1, ln 4, 1/6,
	 * 2/3]); a config's predicted log time rises by phi_j Sigma0 phi3 x
	 * 3.75: config 0 ([1, 0, 1/3, 1/3]) by 1.069 x 3.75 = 4.01, config
	 * 1 by 1.334 x 3.75 = 5.00, config 2 by 1.489 x 3.75 = 5.58. With
	 * ln 4, ln 3, ln 2 these rank config 0 (5.40) before 1 (6.10) and
	 * 2 (6.27), a margin the half-sd optimism does not close: the best
	 * is the second measurement */
	assert_near(t.res[VAL_TUNE_ONLINE].slowdown[1], 0.0, EPS);
	/* the same seed, the same bits */
	struct val_tune_set t2;
	assert_int_equal(val_tune_replay(&r, &o, &t2, NULL), TS_OK);
	assert_memory_equal(&t, &t2, sizeof t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_by_hand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
