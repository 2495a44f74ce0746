/*
 * test_val_metrics.c: the accuracy metrics of validation/val_metrics.c on
 * small cases computed by hand: MAPE and median APE, Kendall tau-b with
 * ties (checked against the definition pair by pair), the top-K
 * slowdown with its expected-value tie break, and the report cells'
 * formats (n/a, no negative zero).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "val.h"
#include "test_util.h"

/* Every expected value below is a short decimal or ratio of small
 * integers; 1e-12 only absorbs the rounding of a few double operations. */
#define EPS 1e-12

static void test_mape(void **state)
{
	(void)state;
	const double m[] = {100, 200, 50};
	const double p[] = {110, 150, 50};
	/* |10|/100 = 0.1, |50|/200 = 0.25, 0 -> mean 0.35/3 */
	assert_near(val_metric_mape(m, p, 3), 0.35 / 3, EPS);
	assert_true(isnan(val_metric_mape(m, p, 0)));
}

static void test_median_ape(void **state)
{
	(void)state;
	const double m[] = {100, 200, 50, 10};
	const double p[] = {110, 150, 50, 20};
	double med;
	/* odd n: APEs {0.1, 0.25, 0} -> 0.1 */
	assert_int_equal(val_metric_median_ape(m, p, 3, &med), TS_OK);
	assert_near(med, 0.1, EPS);
	/* even n: {0, 0.1, 0.25, 1} -> (0.1 + 0.25) / 2 */
	assert_int_equal(val_metric_median_ape(m, p, 4, &med), TS_OK);
	assert_near(med, 0.175, EPS);
	assert_int_equal(val_metric_median_ape(m, p, 0, &med), TS_OK);
	assert_true(isnan(med));
	/* A failed allocation is reported, not a wrong median. */
	ts_alloc_fail_after(0);
	assert_int_equal(val_metric_median_ape(m, p, 4, &med), TS_ERR_NOMEM);
	ts_alloc_fail_after(-1);
}

static void test_tau(void **state)
{
	(void)state;
	/* Pairs of x = {1,2,2,3}, y = {1,3,2,2}:
	 *   (0,1) C  (0,2) C  (0,3) C  (1,2) tied in x  (1,3) D
	 *   (2,3) tied in y
	 * C = 3, D = 1, n0 = 6, n1 = n2 = 1:
	 * tau_b = (3 - 1) / sqrt((6 - 1)(6 - 1)) = 0.4 (scipy agrees). */
	const double x[] = {1, 2, 2, 3};
	const double y[] = {1, 3, 2, 2};
	assert_near(val_metric_kendall_tau_b(x, y, 4), 0.4, EPS);

	const double up[] = {1, 2, 3, 4, 5}, down[] = {50, 40, 30, 20, 10};
	assert_near(val_metric_kendall_tau_b(up, up, 5), 1, EPS);
	assert_near(val_metric_kendall_tau_b(up, down, 5), -1, EPS);

	/* A tie in both x and y: x = {1,1,2}, y = {5,5,6}: the tied pair is in
	 * n1 and n2, the two others concordant: 2 / sqrt(2 * 2) = 1. */
	const double tx[] = {1, 1, 2}, ty[] = {5, 5, 6};
	assert_near(val_metric_kendall_tau_b(tx, ty, 3), 1, EPS);

	/* Infinite predictions (infeasible configs) tie with each other:
	 * x = {1,2,3}, y = {1,inf,inf}: C = 2, n2 = 1, n0 = 3:
	 * 2 / sqrt(3 * 2). */
	const double iy[] = {1, INFINITY, INFINITY};
	assert_near(val_metric_kendall_tau_b(up, iy, 3),
			    2 / sqrt(6), EPS);

	/* Estimates that differ only in rounding (1e-12 relative) tie:
	 * x = {1, 1+1e-12, 2}, y = {3, 2, 1}: the first pair is tied in x,
	 * the two others discordant: -2 / sqrt((3 - 1) * 3). */
	const double nx[] = {1, 1 + 1e-12, 2}, ny[] = {3, 2, 1};
	assert_near(val_metric_kendall_tau_b(nx, ny, 3), -2 / sqrt(6), EPS);

	/* Undefined: fewer than two values, or a side that is all ties (a
	 * config-blind predictor). */
	const double flat[] = {7, 7, 7, 7};
	assert_true(isnan(val_metric_kendall_tau_b(up, up, 1)));
	assert_true(isnan(val_metric_kendall_tau_b(up, flat, 4)));
}

static void test_topk(void **state)
{
	(void)state;
	const double m[] = {5, 3, 4, 10};
	const double p[] = {1, 2, 3, 4};
	double v;
	/* Top-1 is the row predicted fastest, measured 5; best is 3. */
	assert_int_equal(val_metric_topk_best(m, p, 4, 1, &v), TS_OK);
	assert_near(v, 5, EPS);
	assert_int_equal(val_metric_topk_slowdown(m, p, 4, 1, &v), TS_OK);
	assert_near(v, 5.0 / 3 - 1, EPS);
	assert_int_equal(val_metric_topk_slowdown(m, p, 4, 2, &v), TS_OK);
	assert_near(v, 0, EPS);
	/* k beyond n takes every row. */
	assert_int_equal(val_metric_topk_slowdown(m, p, 4, 9, &v), TS_OK);
	assert_near(v, 0, EPS);

	/* A two-way tie for top-1: either row with probability 1/2,
	 * E = (5 + 3) / 2 = 4, slowdown 4/3 - 1. */
	const double pt[] = {1, 1, 2, 3};
	assert_int_equal(val_metric_topk_slowdown(m, pt, 4, 1, &v), TS_OK);
	assert_near(v, 4.0 / 3 - 1, EPS);

	/* Two of a three-way tie: measured {3,4,5} in the group; the best of
	 * the two drawn is 3 with P = C(2,1)/C(3,2) = 2/3, 4 with P = 1/3:
	 * E = 2 + 4/3. */
	const double m3[] = {5, 3, 4, 1};
	const double p3[] = {1, 1, 1, 2};
	assert_int_equal(val_metric_topk_best(m3, p3, 4, 2, &v), TS_OK);
	assert_near(v, 2 + 4.0 / 3, EPS);
	assert_int_equal(val_metric_topk_slowdown(m3, p3, 4, 2, &v), TS_OK);
	assert_near(v, (2 + 4.0 / 3) / 1 - 1, EPS);

	/* A group taken whole before the tie caps the expectation:
	 * first {4.5}, then 2 of {3,4,5}: 2/3 * 3 + 1/3 * 4 (both < 4.5). */
	const double m4[] = {4.5, 5, 3, 4};
	const double p4[] = {0, 1, 1, 1};
	assert_int_equal(val_metric_topk_best(m4, p4, 4, 3, &v), TS_OK);
	assert_near(v, 2 + 4.0 / 3, EPS);
	/* ...and k = 2 draws one of the three: mean of min(4.5, v). */
	assert_int_equal(val_metric_topk_best(m4, p4, 4, 2, &v), TS_OK);
	assert_near(v, (3 + 4 + 4.5) / 3, EPS);

	/* The same rounding tolerance holds for top-K ties. */
	const double pn[] = {1, 1 + 1e-12, 2, 3};
	assert_int_equal(val_metric_topk_best(m, pn, 4, 1, &v), TS_OK);
	assert_near(v, 4, EPS);

	assert_int_equal(val_metric_topk_best(m, p, 0, 1, &v), TS_ERR_MISUSE);
	assert_int_equal(val_metric_topk_best(m, p, 4, 0, &v), TS_ERR_MISUSE);
}

/* Report cells: n/a for NaN; a value that rounds to zero is "0.0%" or
 * "+0.0%" (and "0.000"), never with a minus sign; one that rounds
 * to -0.1% keeps it. */
static void test_format(void **state)
{
	(void)state;
	char b[32];
	assert_string_equal(val_fmt_pct(b, sizeof b, NAN), "n/a");
	assert_string_equal(val_fmt_pct(b, sizeof b, -0.0), "0.0%");
	assert_string_equal(val_fmt_pct(b, sizeof b, -0.0004), "0.0%");
	assert_string_equal(val_fmt_pct(b, sizeof b, -0.0006), "-0.1%");
	assert_string_equal(val_fmt_pct(b, sizeof b, 0.1234), "12.3%");
	assert_string_equal(val_fmt_pct_change(b, sizeof b, NAN), "n/a");
	assert_string_equal(val_fmt_pct_change(b, sizeof b, -0.0), "+0.0%");
	assert_string_equal(val_fmt_pct_change(b, sizeof b, -1e-17), "+0.0%");
	assert_string_equal(val_fmt_pct_change(b, sizeof b, -0.25), "-25.0%");
	assert_string_equal(val_fmt_pct_change(b, sizeof b, 0.5), "+50.0%");
	assert_string_equal(val_fmt_fix3(b, sizeof b, -0.0004), "0.000");
	assert_string_equal(val_fmt_fix3(b, sizeof b, -0.0006), "-0.001");
	assert_string_equal(val_fmt_fix3(b, sizeof b, NAN), "n/a");
}

static void test_family(void **state)
{
	(void)state;
	char buf[16];
	val_id_family("matmul_f16_m32_n32_k32", buf, sizeof buf);
	assert_string_equal(buf, "matmul");
	val_id_family("fusion.232#r0", buf, sizeof buf);
	assert_string_equal(buf, "fusion.232#r0");
	val_id_family("averyveryverylongfamily_x", buf, 8);
	assert_string_equal(buf, "averyve");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mape),
		cmocka_unit_test(test_median_ape),
		cmocka_unit_test(test_tau),
		cmocka_unit_test(test_topk),
		cmocka_unit_test(test_family),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
