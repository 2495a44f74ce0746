/*
 * val_autotune.c: autotuning under a measurement budget, replayed on
 * measured sets (tpusim autotune --data). A set's recorded configs of one
 * kernel are the "hardware": measuring a config returns its recorded time,
 * and only recorded configs can be proposed (as TpuGraphs evaluates). A
 * strategy is an order in which to measure a kernel's configs; after b
 * measurements the tuner keeps the fastest it measured, so
 *
 *   slowdown(b) = min(measured of the first b picks) / min(measured) - 1
 *
 * averaged over the kernels with at least two distinct recorded configs
 * (a kernel with one is counted and left out: any strategy finds its best
 * at once; a config recorded twice counts once, its first row).
 * Also the measurements a strategy needs to come within 1% and 5% of the
 * kernel's best (at most its configs), averaged the same way.
 *
 * Every strategy's result is the mean over --seeds runs: random draws its
 * orders from them, the others break ties between configs their model
 * cannot tell apart at random (never by file order, which would favour
 * the compiler default that sets record first). Strategies:
 *  - random: a uniform random order (GSL's MT19937, seeded);
 *  - analytic: ascending analytic time (val_report's analytic_ns);
 *  - hybrid: ascending hybrid time (hybrid_ns: analytic x the learned
 *    correction of the report's model);
 *  - online: AutoTVM's loop with a model small enough to refit after every
 *    measurement. The log residual of a measured config,
 *        r = ln(measured / analytic),
 *    is modelled per kernel as r = w . phi(config) + noise, with
 *        phi = [1, ln steps, MXU share, DMA share]
 *    (shares of the MXU + VPU + DMA busy cycles of the row's estimate,
 *    summed over its program's kernels as val_report sums them: the
 *    tuned kernel's in a tile set, one kernel a module; what changes
 *    between the configs of one kernel and where the analytic model is
 *    known to err: per-step costs and the overlap of DMA and compute).
 *    Bayesian linear regression (GSL Cholesky): prior w ~ N(w0, diag(
 *    TUNE_PRIOR_LEVEL^2, TUNE_PRIOR_SLOPE^2 x 3)), noise TUNE_NOISE; w0's
 *    level is 0 (the analytic model) and its slopes are transferred: the
 *    ridge fit (same prior, centred on 0) of every earlier kernel's
 *    measurements in this run, each kernel centred on its own mean (levels
 *    differ between kernels, slopes are what carries over). The next
 *    config is the unmeasured one with the lowest
 *        ln analytic + phi . mu - TUNE_EXPLORE x sqrt(phi Sigma phi')
 *    (optimism under uncertainty: a little exploration where the fit is
 *    unsure; the first pick uses the prior mean alone). The constants are
 *    priors stated before seeing the tuning curves (measurement noise of a
 *    few percent, residual slopes of order a half, one posterior standard
 *    deviation of optimism), not fitted to them.
 * Known limits: a kernel's configs are only those recorded, so a strategy
 * cannot find a config faster than any the set measured; the hybrid's
 * order is in-sample on the sets its model was trained on (the shipped
 * model was trained on every shared set: `tpusim compare` has the out of
 * fold figures). Source: Chen et al., "Learning to Optimize Tensor
 * Programs" (AutoTVM, NeurIPS 2018: a cost model refitted as measurements
 * arrive, transferred across workloads, guiding which variant to measure);
 * Kaufman et al. (MLSys 2021) and TpuGraphs (NeurIPS 2023) for judging a
 * model by the best of the configs it proposes.
 */
#include "val.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_rng.h>

#include "numlib.h"

#define TUNE_F 4                 /* online features */
#define TUNE_PRIOR_LEVEL 1.0     /* prior sd of a kernel's log level */
#define TUNE_PRIOR_SLOPE 0.5     /* prior sd of each slope */
#define TUNE_NOISE 0.05          /* sd of a measurement's log time */
#define TUNE_EXPLORE 0.5         /* posterior sds of optimism */

const char *val_tune_strategy_name(enum val_tune_strategy s)
{
	static const char *const names[VAL_TUNE_COUNT] = {
		[VAL_TUNE_RANDOM] = "random",
		[VAL_TUNE_ANALYTIC] = "analytic",
		[VAL_TUNE_HYBRID] = "hybrid",
		[VAL_TUNE_ONLINE] = "online",
	};
	return (unsigned)s < VAL_TUNE_COUNT ? names[s] : "invalid";
}

/* One kernel's recorded configs: their rows in the report. */
struct kernel {
	int n;
	int *row;
	double best; /* fastest measured, ns */
};

static void features(const struct val_row_result *r, double phi[TUNE_F])
{
	double busy = r->mxu_cycles + r->vpu_cycles + r->dma_cycles;
	phi[0] = 1.0;
	phi[1] = log(r->steps > 0 ? (double)r->steps : 1.0);
	phi[2] = busy > 0 ? r->mxu_cycles / busy : 0.0;
	phi[3] = busy > 0 ? r->dma_cycles / busy : 0.0;
}

/* A config the model cannot cost is proposed last. */
static double key_of(double ns)
{
	return isfinite(ns) && ns > 0 ? log(ns) : INFINITY;
}

/* The posterior of w (mean mu, covariance sigma) from prior N(w0, prior
 * variances pv) and the n observations (phi, r): precision A = P + X'X /
 * s^2, mu = A^-1 (P w0 + X'r / s^2). False when A is not positive
 * definite (it always is: P is). */
static bool posterior(const double *w0, const double *pv,
		      const double (*phi)[TUNE_F], const double *r, int n,
		      double *mu, double *sigma)
{
	double a[TUNE_F * TUNE_F] = {0}, b[TUNE_F];
	double s2 = TUNE_NOISE * TUNE_NOISE;
	for (int i = 0; i < TUNE_F; i++) {
		a[i * TUNE_F + i] = 1.0 / pv[i];
		b[i] = w0[i] / pv[i];
	}
	for (int k = 0; k < n; k++)
		for (int i = 0; i < TUNE_F; i++) {
			b[i] += phi[k][i] * r[k] / s2;
			for (int j = 0; j < TUNE_F; j++)
				a[i * TUNE_F + j] += phi[k][i] * phi[k][j] / s2;
		}
	gsl_matrix_view av = NL(gsl_matrix_view_array)(a, TUNE_F, TUNE_F);
	gsl_vector_view bv = NL(gsl_vector_view_array)(b, TUNE_F);
	gsl_vector_view mv = NL(gsl_vector_view_array)(mu, TUNE_F);
	gsl_error_handler_t *old = NL(gsl_set_error_handler_off)();
	bool ok = NL(gsl_linalg_cholesky_decomp1)(&av.matrix) == 0 &&
		  NL(gsl_linalg_cholesky_solve)(&av.matrix, &bv.vector,
					    &mv.vector) == 0 &&
		  NL(gsl_linalg_cholesky_invert)(&av.matrix) == 0;
	NL(gsl_set_error_handler)(old);
	if (ok)
		memcpy(sigma, a, sizeof a);
	return ok;
}

/* The transferred slopes: a ridge fit of the earlier kernels' measured
 * residuals, each kernel centred on its own means (no level). */
struct transfer {
	int n, cap;
	double (*phi)[TUNE_F];
	double *r;
};

static bool transfer_add(struct transfer *t, const double (*phi)[TUNE_F],
			 const double *r, int n)
{
	if (n < 2)
		return true; /* one measurement says nothing about slopes */
	if (t->n + n > t->cap) {
		int cap = 2 * (t->n + n);
		double (*p)[TUNE_F] = ts_realloc(t->phi, (size_t)cap * sizeof *p);
		if (!p)
			return false;
		t->phi = p;
		double *q = ts_realloc(t->r, (size_t)cap * sizeof *q);
		if (!q)
			return false;
		t->r = q;
		t->cap = cap;
	}
	double mp[TUNE_F] = {0}, mr = 0;
	for (int k = 0; k < n; k++) {
		mr += r[k] / n;
		for (int i = 0; i < TUNE_F; i++)
			mp[i] += phi[k][i] / n;
	}
	for (int k = 0; k < n; k++) {
		for (int i = 0; i < TUNE_F; i++)
			t->phi[t->n][i] = phi[k][i] - mp[i];
		t->r[t->n++] = r[k] - mr;
	}
	return true;
}

static void prior_var(double pv[TUNE_F])
{
	pv[0] = TUNE_PRIOR_LEVEL * TUNE_PRIOR_LEVEL;
	for (int i = 1; i < TUNE_F; i++)
		pv[i] = TUNE_PRIOR_SLOPE * TUNE_PRIOR_SLOPE;
}

static void transfer_w0(const struct transfer *t, double w0[TUNE_F])
{
	double zero[TUNE_F] = {0}, pv[TUNE_F], sigma[TUNE_F * TUNE_F];
	prior_var(pv);
	if (t->n == 0 || !posterior(zero, pv, (const double (*)[TUNE_F])t->phi,
				    t->r, t->n, w0, sigma))
		memset(w0, 0, TUNE_F * sizeof *w0);
	w0[0] = 0.0; /* levels do not carry over */
}

/* The online order of kernel k into order[]; its measurements then join
 * t. False when out of memory. */
static bool online_order(const struct val_report *rep, const struct kernel *k,
			 const double *tie, struct transfer *t, int *order)
{
	double (*phi)[TUNE_F] = ts_malloc((size_t)k->n * sizeof *phi);
	double (*seen)[TUNE_F] = ts_malloc((size_t)k->n * sizeof *seen);
	double *r = ts_malloc((size_t)k->n * sizeof *r);
	bool *done = ts_calloc((size_t)k->n, sizeof *done);
	bool ok = phi && seen && r && done;
	double w0[TUNE_F], pv[TUNE_F], mu[TUNE_F], sigma[TUNE_F * TUNE_F];
	if (ok) {
		transfer_w0(t, w0);
		prior_var(pv);
	}
	for (int i = 0; ok && i < k->n; i++)
		features(&rep->rows[k->row[i]], phi[i]);
	for (int step = 0; ok && step < k->n; step++) {
		if (!posterior(w0, pv, (const double (*)[TUNE_F])seen, r, step,
			       mu, sigma)) {
			memcpy(mu, w0, sizeof mu); /* not reached: P > 0 */
			memset(sigma, 0, sizeof sigma);
		}
		int pick = -1;
		double best = INFINITY;
		for (int i = 0; i < k->n; i++) {
			if (done[i])
				continue;
			double m = key_of(rep->rows[k->row[i]].analytic_ns);
			double v = 0;
			for (int a = 0; a < TUNE_F; a++) {
				m += phi[i][a] * mu[a];
				for (int b = 0; b < TUNE_F; b++)
					v += phi[i][a] * sigma[a * TUNE_F + b] *
					     phi[i][b];
			}
			double score = m - (step ? TUNE_EXPLORE * sqrt(fmax(v, 0))
						 : 0.0);
			if (pick < 0 || score < best ||
			    (score == best && tie[i] < tie[pick])) {
				pick = i;
				best = score;
			}
		}
		done[pick] = true;
		order[step] = pick;
		const struct val_row_result *rr = &rep->rows[k->row[pick]];
		memcpy(seen[step], phi[pick], sizeof seen[step]);
		r[step] = isfinite(key_of(rr->analytic_ns))
				  ? log(rr->measured_ns) - key_of(rr->analytic_ns)
				  : 0.0;
	}
	ok = ok && transfer_add(t, (const double (*)[TUNE_F])seen, r, k->n);
	ts_free(phi);
	ts_free(seen);
	ts_free(r);
	ts_free(done);
	return ok;
}

/* Orders by ascending key, ties by ascending tie (an insertion sort: a
 * kernel has tens of configs). */
static void sorted_order(const double *key, const double *tie, int n,
			 int *order)
{
	for (int i = 0; i < n; i++) {
		int j = i;
		while (j > 0 && (key[order[j - 1]] > key[i] ||
				 (key[order[j - 1]] == key[i] &&
				  tie[order[j - 1]] > tie[i]))) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
}

/* Adds kernel k measured in order[] to the sums of res. */
static void score(const struct val_report *rep, const struct kernel *k,
		  const int *order, const struct val_tune_opts *o, double weight,
		  struct val_tune_result *res)
{
	double best = INFINITY;
	int to1 = 0, to5 = 0;
	int b = 0;
	for (int step = 0; step < k->n; step++) {
		best = fmin(best, rep->rows[k->row[order[step]]].measured_ns);
		if (!to5 && best <= 1.05 * k->best)
			to5 = step + 1;
		if (!to1 && best <= 1.01 * k->best)
			to1 = step + 1;
		while (b < o->n_budgets && o->budgets[b] == step + 1)
			res->slowdown[b++] += weight * (best / k->best - 1);
	}
	while (b < o->n_budgets) /* budgets beyond its configs: all measured */
		res->slowdown[b++] += weight * (best / k->best - 1);
	res->to_1pct += weight * to1;
	res->to_5pct += weight * to5;
}

enum ts_status val_tune_replay(const struct val_report *rep,
			       const struct val_tune_opts *o,
			       struct val_tune_set *out, struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	out->name = rep->ds->name;
	enum ts_status lst = numlib_load(d);
	if (lst != TS_OK)
		return lst;
	const struct val_dataset *ds = rep->ds;
	size_t nm = (size_t)ds->n_modules + 1, nr = (size_t)ds->n_rows + 1;
	struct kernel *ks = ts_calloc(nm, sizeof *ks);
	int *order = ts_malloc(nr * sizeof *order);
	double *key = ts_malloc(nr * sizeof *key);
	double *tie = ts_malloc(nr * sizeof *tie);
	int *all = ts_malloc(nr * sizeof *all);
	gsl_rng *rng = NL(gsl_rng_alloc)(*NL(gsl_rng_mt19937));
	struct transfer t = {0};
	enum ts_status st = ks && order && key && tie && all && rng
				    ? TS_OK
				    : TS_ERR_NOMEM;
	/* each module's rows, in file order */
	int used = 0;
	for (int m = 0; st == TS_OK && m < ds->n_modules; m++) {
		ks[m].row = all + used;
		used += ds->modules[m].n_rows;
	}
	/* a config measured again (another row of the same module and
	 * config: a sweep that passes one shape twice) is one config, its
	 * first row */
	for (int i = 0; st == TS_OK && i < ds->n_rows; i++) {
		struct kernel *k = &ks[ds->rows[i].i_module];
		bool again = false;
		for (int j = 0; j < k->n && !again; j++)
			again = !strcmp(ds->rows[k->row[j]].config,
					ds->rows[i].config);
		if (!again)
			k->row[k->n++] = i;
	}
	for (int m = 0; st == TS_OK && m < ds->n_modules; m++) {
		struct kernel *k = &ks[m];
		if (k->n < 2) {
			if (!out->n_single++)
				out->single_example = ds->modules[m].name;
			continue;
		}
		out->n_kernels++;
		k->best = INFINITY;
		for (int i = 0; i < k->n; i++)
			k->best = fmin(k->best, rep->rows[k->row[i]].measured_ns);
	}
	int n_k = out->n_kernels;
	for (int s = 0; st == TS_OK && s < VAL_TUNE_COUNT; s++) {
		if (!o->use[s] || n_k == 0)
			continue;
		struct val_tune_result *res = &out->res[s];
		NL(gsl_rng_set)(rng, o->seed);
		/* every strategy is averaged over the seeds: random draws its
		 * orders from them, the others their tie breaks (a config
		 * the model cannot tell from another is not favoured for
		 * coming first in the file, where sets put the compiler's
		 * default) */
		for (int r = 0; st == TS_OK && r < o->seeds; r++) {
			t.n = 0;
			for (int m = 0; st == TS_OK && m < ds->n_modules; m++) {
				const struct kernel *k = &ks[m];
				if (k->n < 2)
					continue;
				for (int i = 0; i < k->n; i++)
					tie[i] = NL(gsl_rng_uniform)(rng);
				switch (s) {
				case VAL_TUNE_RANDOM:
					for (int i = 0; i < k->n; i++)
						key[i] = 0;
					break;
				case VAL_TUNE_ANALYTIC:
				case VAL_TUNE_HYBRID:
					for (int i = 0; i < k->n; i++) {
						const struct val_row_result *rr =
							&rep->rows[k->row[i]];
						key[i] = key_of(s == VAL_TUNE_HYBRID
									? rr->hybrid_ns
									: rr->analytic_ns);
					}
					break;
				default:
					break;
				}
				if (s != VAL_TUNE_ONLINE)
					sorted_order(key, tie, k->n, order);
				else if (!online_order(rep, k, tie, &t, order))
					st = TS_ERR_NOMEM;
				if (st == TS_OK)
					score(rep, k, order, o,
					      1.0 / ((double)o->seeds * n_k), res);
			}
		}
	}
	NL(gsl_rng_free)(rng);
	ts_free(t.phi);
	ts_free(t.r);
	ts_free(ks);
	ts_free(order);
	ts_free(key);
	ts_free(tie);
	ts_free(all);
	return st;
}
