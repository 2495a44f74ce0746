/*
 * val_metrics.c: accuracy metrics of predicted against measured runtimes:
 * MAPE and median APE (how far the times are), Kendall tau-b (how well one
 * kernel's configs are ordered) and TpuGraphs' top-K slowdown (what picking
 * by the prediction costs). Pure functions of their arrays; see val.h.
 */
#include "val.h"

#include <math.h>
#include <stdlib.h>

static double ape(double m, double p) { return fabs(p - m) / m; }

/*
 * Ties: values within TIE_REL of each other (relative) count as equal. Two
 * configs that do the same work can get estimates that differ only in the
 * last bits (sums taken in another order); ranking them by that noise would
 * reward or punish the model at random. Measured times are integers in ns,
 * so the tolerance never merges two different measurements below 1e9 ns.
 */
#define TIE_REL 1e-9

static bool tied(double a, double b)
{
	if (a == b)
		return true;
	if (!isfinite(a) || !isfinite(b)) /* inf ties only with itself */
		return false;
	return fabs(a - b) <= TIE_REL * fmax(fabs(a), fabs(b));
}

double val_metric_mape(const double *measured, const double *predicted,
		       size_t n)
{
	if (n == 0)
		return NAN;
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += ape(measured[i], predicted[i]);
	return sum / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

enum ts_status val_metric_median_ape(const double *measured,
				     const double *predicted, size_t n,
				     double *out)
{
	*out = NAN;
	if (n == 0)
		return TS_OK;
	double *e = ts_calloc(n, sizeof *e);
	if (!e)
		return TS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		e[i] = ape(measured[i], predicted[i]);
	qsort(e, n, sizeof *e, cmp_double);
	*out = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
	ts_free(e);
	return TS_OK;
}

/*
 * Kendall tau-b (Kendall 1945; scipy.stats.kendalltau's default variant):
 *   tau_b = (C - D) / sqrt((n0 - n1) (n0 - n2))
 * over all n0 = n(n-1)/2 pairs: C concordant, D discordant, n1 pairs tied
 * in x, n2 tied in y (a pair tied in both counts in n1 and n2, in neither
 * C nor D). O(n^2): n is at most a few hundred configs of one kernel
 * (fusion.191 has 579: 167k pairs).
 */
double val_metric_kendall_tau_b(const double *x, const double *y, size_t n)
{
	if (n < 2)
		return NAN;
	double c = 0, dis = 0, tx = 0, ty = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			bool ex = tied(x[i], x[j]), ey = tied(y[i], y[j]);
			if (ex)
				tx++;
			if (ey)
				ty++;
			if (ex || ey)
				continue;
			if ((x[i] < x[j]) == (y[i] < y[j]))
				c++;
			else
				dis++;
		}
	double n0 = (double)n * (double)(n - 1) / 2;
	double den = (n0 - tx) * (n0 - ty);
	if (den <= 0)
		return NAN;
	return (c - dis) / sqrt(den);
}

/* (predicted, measured) pairs, sorted by predicted then measured. */
struct pm {
	double p; /* predicted */
	double m; /* measured */
};

static int cmp_pm(const void *a, const void *b)
{
	const struct pm *x = a, *y = b;
	if (x->p != y->p)
		return (x->p > y->p) - (x->p < y->p);
	return (x->m > y->m) - (x->m < y->m);
}

/*
 * Rows sorted by predicted time form tie groups. Whole groups before the K
 * boundary are taken; from the group that straddles it, r of its g rows
 * are drawn uniformly. With the group's measured times ascending v_1..v_g,
 * the smallest drawn is v_i with probability C(g-i, r-1) / C(g, r), so
 *   E[best] = sum_i P_i min(best_before, v_i),
 *   P_1 = r/g,  P_{i+1} = P_i (g-i-r+1) / (g-i).
 */
enum ts_status val_metric_topk_best(const double *measured,
				    const double *predicted, size_t n,
				    size_t k, double *out)
{
	*out = NAN;
	if (n == 0 || k == 0)
		return TS_ERR_MISUSE;
	struct pm *v = ts_calloc(n, sizeof *v);
	if (!v)
		return TS_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct pm){predicted[i], measured[i]};
	qsort(v, n, sizeof *v, cmp_pm);
	if (k > n)
		k = n;
	double best = INFINITY;
	size_t i = 0;
	while (i < k) {
		size_t j = i;
		while (j < n && tied(v[j].p, v[i].p))
			j++;
		if (j <= k) { /* the whole group is in the top K */
			for (size_t t = i; t < j; t++)
				best = fmin(best, v[t].m);
			i = j;
			continue;
		}
		size_t g = j - i, r = k - i; /* 0 < r < g */
		double prob = (double)r / (double)g, expect = 0;
		for (size_t t = 1; t + r <= g + 1; t++) { /* t: i above */
			expect += prob * fmin(best, v[i + t - 1].m);
			if (t + r <= g)
				prob *= (double)(g - t - r + 1) /
					(double)(g - t);
		}
		best = expect;
		break;
	}
	ts_free(v);
	*out = best;
	return TS_OK;
}

enum ts_status val_metric_topk_slowdown(const double *measured,
					const double *predicted, size_t n,
					size_t k, double *out)
{
	double best;
	enum ts_status st = val_metric_topk_best(measured, predicted, n, k,
						 &best);
	if (st)
		return st;
	double min = INFINITY;
	for (size_t i = 0; i < n; i++)
		min = fmin(min, measured[i]);
	*out = best / min - 1;
	return TS_OK;
}
