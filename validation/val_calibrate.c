/*
 * val_calibrate.c: fits named spec figures to measured runtimes (tpusim
 * calibrate). The model is the analytic one, costed by val_report_build on
 * every row of the sets with the candidate spec; only the named fields
 * change between evaluations.
 *
 * Loss: every group (a kernel of a tile set, an op family of an op set,
 * i.e. val_report's groups) weighs the same:
 *
 *   loss = mean over groups g of ( mean over rows i in g of ln(p_i/m_i)^2
 *                                  + [g ranked] (1 - tau_g) )
 *
 * with p_i the prediction (device estimate, + the host term for host-timed
 * rows), m_i the measured runtime, and tau_g the Kendall tau-b of the
 * predictions against the measurements over the configs of kernel g, for
 * the kernels of tile sets with >= VAL_TAU_MIN_ROWS configs ("ranked"). A
 * log error treats 2x too slow and 2x too fast alike and lets a 1 us kernel
 * weigh as much as a 1 s one; the equal group weights keep a kernel with
 * hundreds of configs (TpuGraphs fusion.191: 579 of 752 rows) from deciding
 * the fit alone; the ranking term is there because tile selection needs the
 * order of a kernel's configs more than their times (Kaufman et al. add a
 * pairwise ranking loss for the same reason). tau is a step function of
 * the fields: the simplex handles that, a gradient method would not.
 *
 * Minimiser: GSL's Nelder-Mead simplex (gsl_multimin_fminimizer_nmsimplex2)
 * over x_j = ln(value_j), initial steps of 0.5 (a factor 1.65), until the
 * simplex size falls below 1e-3 (0.1% in every value) or max_iter steps.
 * Values leaving a field's accepted range are clamped to it; integer fields
 * are rounded (the loss is then a step function of them: fit them alone,
 * or accept a local optimum). Deterministic: no random start.
 *
 * Cross-validation (opts->folds): each fold (a loss group, or a shape) is
 * left out in turn, the fields are fitted again without it, and that fit
 * predicts the fold: the out-of-fold error says how the fitted figures do
 * on a kernel, family or shape they never saw.
 */
#include "val.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>

#include "numlib.h"

/* One row taking part in the fit. */
struct crow {
	int set, row;   /* subset and row index in it */
	int group;      /* index into val_calib.groups */
	int fold;       /* cross-validation fold */
	bool tile;      /* from a set with tile configs */
	double measured;
};

struct cctx {
	struct val_dataset *sets; /* per given set, the view of its rows in
	                             the fit (costing only those is what
	                             makes a fit on one family fast) */
	int n_sets;
	const struct val_calib_opts *o;
	struct hw_spec spec;   /* working copy, fields set per evaluation */
	struct crow *rows;
	int n_rows;
	int n_groups;
	int n_folds;
	int held_out;          /* fold left out of the loss, -1 none */
	double *pred;          /* per used row, last evaluation */
	double *gsum;          /* per group scratch */
	int *gcnt;
	bool *granked;         /* per group: the ranking term applies */
	double *tp, *tm;       /* scratch: one group's predictions, measures */
	enum ts_status status; /* first hard failure inside the minimiser */
	struct ts_diag *d;
	int n_evals;
};

static double clamp_field(const struct hw_field_info *f, double v)
{
	if (f->is_int)
		v = nearbyint(v);
	return fmin(fmax(v, f->min), f->max);
}

static void set_params(struct cctx *c, const gsl_vector *x)
{
	for (int j = 0; j < c->o->n_fields; j++) {
		const struct hw_field_info *f = c->o->fields[j];
		struct ts_diag d = {0};
		/* Clamped to the range first, so the set cannot fail. */
		(void)hw_spec_set(&c->spec, f,
				  clamp_field(f, exp(NL(gsl_vector_get)(x, j))),
				  NULL, &d);
	}
}

/* Costs every row with c->spec; fills c->pred (NaN: no estimate). */
static enum ts_status predict(struct cctx *c)
{
	int k = 0;
	c->n_evals++;
	for (int s = 0; s < c->n_sets; s++) {
		if (c->sets[s].n_rows == 0)
			continue;
		struct val_specs specs;
		struct val_report r;
		enum ts_status st = val_specs_single(&c->spec, "calibrate",
						     &specs);
		if (st)
			return st;
		st = val_report_build(&c->sets[s], &specs, NULL, &r, c->d);
		for (; st == TS_OK && k < c->n_rows && c->rows[k].set == s;
		     k++) {
			const struct val_row_result *res =
				&r.rows[c->rows[k].row];
			c->pred[k] = res->status == TS_OK &&
						     isfinite(res->predicted_ns) &&
						     res->predicted_ns > 0
					     ? res->predicted_ns
					     : NAN;
		}
		val_report_free(&r);
		val_specs_free(&specs);
		if (st)
			return st;
	}
	return TS_OK;
}

/* The loss of the last prediction over every group but c->held_out. */
static double loss_of(struct cctx *c)
{
	memset(c->gsum, 0, sizeof *c->gsum * (size_t)c->n_groups);
	memset(c->gcnt, 0, sizeof *c->gcnt * (size_t)c->n_groups);
	for (int k = 0; k < c->n_rows; k++) {
		const struct crow *cr = &c->rows[k];
		if (cr->fold == c->held_out || isnan(c->pred[k]))
			continue;
		double e = log(c->pred[k] / cr->measured);
		c->gsum[cr->group] += e * e;
		c->gcnt[cr->group]++;
	}
	double sum = 0;
	int n = 0;
	for (int g = 0; g < c->n_groups; g++) {
		if (!c->gcnt[g])
			continue;
		sum += c->gsum[g] / c->gcnt[g];
		n++;
		if (!c->granked[g])
			continue;
		size_t m = 0;
		for (int k = 0; k < c->n_rows; k++)
			if (c->rows[k].group == g && !isnan(c->pred[k])) {
				c->tp[m] = c->pred[k];
				c->tm[m++] = c->rows[k].measured;
			}
		double tau = val_metric_kendall_tau_b(c->tm, c->tp, m);
		sum += isnan(tau) ? 1 : 1 - tau;
	}
	return n ? sum / n : NAN;
}

static double gsl_loss(const gsl_vector *x, void *p)
{
	struct cctx *c = p;
	if (c->status)
		return GSL_POSINF;
	set_params(c, x);
	if ((c->status = predict(c)))
		return GSL_POSINF;
	double l = loss_of(c);
	return isfinite(l) ? l : GSL_POSINF;
}

/* Minimises the loss from `start` (values), leaving the best values in out
 * and c->spec set to them. */
static enum ts_status minimise(struct cctx *c, const double *start,
			       double *out, double *loss, bool *converged)
{
	int n = c->o->n_fields;
	gsl_vector *x = NL(gsl_vector_alloc)((size_t)n);
	gsl_vector *step = NL(gsl_vector_alloc)((size_t)n);
	gsl_multimin_fminimizer *m = NL(gsl_multimin_fminimizer_alloc)(
		*NL(gsl_multimin_fminimizer_nmsimplex2), (size_t)n);
	enum ts_status st = TS_OK;
	if (!x || !step || !m) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int j = 0; j < n; j++) {
		NL(gsl_vector_set)(x, j, log(start[j]));
		NL(gsl_vector_set)(step, j, 0.5);
	}
	gsl_multimin_function fn = {.f = gsl_loss, .n = (size_t)n, .params = c};
	c->status = TS_OK;
	NL(gsl_multimin_fminimizer_set)(m, &fn, x, step);
	*converged = false;
	for (int it = 0; it < c->o->max_iter && !c->status; it++) {
		if (NL(gsl_multimin_fminimizer_iterate)(m))
			break;
		if (NL(gsl_multimin_test_size)(NL(gsl_multimin_fminimizer_size)(m),
					   1e-3) == GSL_SUCCESS) {
			*converged = true;
			break;
		}
	}
	if ((st = c->status))
		goto out;
	/* The simplex stops at 0.1%: four significant digits say all the fit
	 * knows, and are what the spec file gets and the errors are of. */
	const gsl_vector *best = NL(gsl_multimin_fminimizer_x)(m);
	for (int j = 0; j < n; j++) {
		const struct hw_field_info *f = c->o->fields[j];
		double v = exp(NL(gsl_vector_get)(best, j));
		double scale = pow(10, 3 - floor(log10(v)));
		out[j] = clamp_field(f, nearbyint(v * scale) / scale);
		struct ts_diag d = {0};
		(void)hw_spec_set(&c->spec, f, out[j], NULL, &d);
	}
	if ((st = predict(c)))
		goto out;
	*loss = loss_of(c);
out:
	NL(gsl_multimin_fminimizer_free)(m);
	NL(gsl_vector_free)(step);
	NL(gsl_vector_free)(x);
	return st;
}

/* MAPE of c->pred over the rows of group g (all groups when g < 0). */
static double mape_of(const struct cctx *c, const double *pred, int g)
{
	double sum = 0;
	int n = 0;
	for (int k = 0; k < c->n_rows; k++) {
		if ((g >= 0 && c->rows[k].group != g) || isnan(pred[k]))
			continue;
		double m = c->rows[k].measured;
		sum += fabs(pred[k] - m) / m;
		n++;
	}
	return n ? sum / n : NAN;
}

static bool row_selected(const struct val_calib_opts *o, const char *id)
{
	for (int i = 0; i < o->n_rows; i++)
		if (!fnmatch(o->rows[i], id, 0))
			return true;
	return o->n_rows == 0;
}

/* Selects the rows: hw is "tpu-<spec name>" (or the name itself) and the id
 * matches one of o->rows; makes the per-set views, numbers groups and
 * folds. */
static enum ts_status select_rows(struct cctx *c,
				  const struct val_dataset *const *sets,
				  struct val_calib *out)
{
	int total = 0;
	for (int s = 0; s < c->n_sets; s++)
		total += sets[s]->n_rows;
	c->rows = ts_calloc((size_t)total + 1, sizeof *c->rows);
	const char **gkeys = ts_calloc((size_t)total + 1, sizeof *gkeys);
	const char **fkeys = ts_calloc((size_t)total + 1, sizeof *fkeys);
	int *gid = ts_calloc((size_t)total + 1, sizeof *gid);
	int *fid = ts_calloc((size_t)total + 1, sizeof *fid);
	bool *keep = ts_calloc((size_t)total + 1, sizeof *keep);
	enum ts_status st = TS_OK;
	if (!c->rows || !gkeys || !fkeys || !gid || !fid || !keep) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int s = 0; s < c->n_sets; s++) {
		const struct val_dataset *ds = sets[s];
		int n_kept = 0;
		for (int i = 0; i < ds->n_rows; i++) {
			const struct val_row *row = &ds->rows[i];
			const char *gen = strncmp(row->hw, "tpu-", 4)
						  ? row->hw
						  : row->hw + 4;
			keep[i] = false;
			if (strcmp(gen, c->spec.name)) {
				out->n_other_hw++;
				continue;
			}
			if (!row_selected(c->o, row->id)) {
				out->n_unselected++;
				continue;
			}
			keep[i] = true;
			gkeys[c->n_rows] = val_row_key(&out->arena, ds, row, false);
			fkeys[c->n_rows] = c->o->folds == VAL_FOLDS_SHAPE
						   ? val_row_key(&out->arena, ds,
							     row, true)
						   : gkeys[c->n_rows];
			if (!gkeys[c->n_rows] || !fkeys[c->n_rows]) {
				st = TS_ERR_NOMEM;
				goto out;
			}
			c->rows[c->n_rows++] = (struct crow){
				.set = s,
				.row = n_kept++,
				.tile = ds->has_configs,
				.measured = (double)row->runtime_ns,
			};
		}
		if ((st = val_dataset_subset(ds, keep, &c->sets[s])))
			goto out;
	}
	if ((st = val_group_keys(gkeys, c->n_rows, gid, &c->n_groups)) ||
	    (st = val_group_keys(fkeys, c->n_rows, fid, &c->n_folds)))
		goto out;
	for (int k = 0; k < c->n_rows; k++) {
		c->rows[k].group = gid[k];
		c->rows[k].fold = fid[k];
	}
	out->n_groups = c->n_groups;
	out->groups = ts_arena_array(&out->arena, (size_t)c->n_groups + 1,
				     sizeof *out->groups);
	if (!out->groups) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	c->granked = ts_calloc((size_t)c->n_groups + 1, sizeof *c->granked);
	if (!c->granked) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int k = 0; k < c->n_rows; k++) {
		struct val_calib_group *g = &out->groups[gid[k]];
		g->name = gkeys[k];
		g->n_rows++;
		c->granked[gid[k]] = c->rows[k].tile &&
				     g->n_rows >= VAL_TAU_MIN_ROWS;
	}
out:
	ts_free(gkeys);
	ts_free(fkeys);
	ts_free(gid);
	ts_free(fid);
	ts_free(keep);
	return st;
}

enum ts_status val_calibrate(const struct val_dataset *const *sets,
			     int n_sets, const struct hw_spec *start,
			     const struct val_calib_opts *o,
			     struct val_calib *out, struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	ts_arena_init(&out->arena);
	out->start = *start;
	out->fitted = *start;
	enum ts_status st = numlib_load(d);
	if (st != TS_OK)
		return st;
	NL(gsl_set_error_handler_off)();
	struct cctx c = {.n_sets = n_sets, .o = o, .spec = *start,
			 .held_out = -1, .d = d};
	double x0[VAL_FIT_MAX], best[VAL_FIT_MAX], fold[VAL_FIT_MAX];
	double *pred_start = NULL, *pred_cv = NULL;
	for (int j = 0; j < o->n_fields; j++) {
		x0[j] = hw_spec_get(start, o->fields[j]);
		if (!(x0[j] > 0)) {
			ts_diag_set(d, NULL, 0, 0,
				    "%s: the start value %g cannot be fitted "
				    "(the fit runs on its logarithm): give it "
				    "a positive value in the spec",
				    o->fields[j]->path, x0[j]);
			return TS_ERR_MISUSE;
		}
	}
	c.sets = ts_calloc((size_t)n_sets + 1, sizeof *c.sets);
	if (!c.sets) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	if ((st = select_rows(&c, sets, out)))
		goto out;
	out->n_rows = c.n_rows;
	if (c.n_rows == 0) {
		ts_diag_set(d, NULL, 0, 0,
			    "no rows to fit: none is measured on %s%s",
			    start->name,
			    o->n_rows ? " and matches a --rows pattern" : "");
		st = TS_ERR_MISUSE;
		goto out;
	}
	size_t nr = (size_t)c.n_rows;
	c.pred = ts_calloc(nr, sizeof *c.pred);
	pred_start = ts_calloc(nr, sizeof *pred_start);
	pred_cv = ts_calloc(nr, sizeof *pred_cv);
	c.gsum = ts_calloc((size_t)c.n_groups, sizeof *c.gsum);
	c.gcnt = ts_calloc((size_t)c.n_groups, sizeof *c.gcnt);
	c.tp = ts_calloc(nr, sizeof *c.tp);
	c.tm = ts_calloc(nr, sizeof *c.tm);
	if (!c.pred || !pred_start || !pred_cv || !c.gsum || !c.gcnt ||
	    !c.tp || !c.tm) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	if ((st = predict(&c)))
		goto out;
	memcpy(pred_start, c.pred, nr * sizeof *c.pred);
	out->loss_start = loss_of(&c);
	for (int k = 0; k < c.n_rows; k++)
		out->n_no_estimate += isnan(c.pred[k]);

	if ((st = minimise(&c, x0, best, &out->loss_fit, &out->converged)))
		goto out;
	out->fitted = c.spec;
	for (int g = 0; g < c.n_groups; g++) {
		out->groups[g].mape_start = mape_of(&c, pred_start, g);
		out->groups[g].mape_fit = mape_of(&c, c.pred, g);
		out->groups[g].mape_cv = NAN;
	}
	out->mape_start = mape_of(&c, pred_start, -1);
	out->mape_fit = mape_of(&c, c.pred, -1);
	out->mape_cv = NAN;
	for (int j = 0; j < o->n_fields; j++)
		out->fold_min[j] = out->fold_max[j] = best[j];

	if (o->folds != VAL_FOLDS_NONE && c.n_folds > 1) {
		out->n_folds = c.n_folds;
		for (int f = 0; f < c.n_folds; f++) {
			double l;
			bool conv;
			c.held_out = f;
			if ((st = minimise(&c, best, fold, &l, &conv)))
				goto out;
			for (int k = 0; k < c.n_rows; k++)
				if (c.rows[k].fold == f)
					pred_cv[k] = c.pred[k];
			for (int j = 0; j < o->n_fields; j++) {
				out->fold_min[j] = fmin(out->fold_min[j], fold[j]);
				out->fold_max[j] = fmax(out->fold_max[j], fold[j]);
			}
		}
		c.held_out = -1;
		for (int g = 0; g < c.n_groups; g++)
			out->groups[g].mape_cv = mape_of(&c, pred_cv, g);
		out->mape_cv = mape_of(&c, pred_cv, -1);
	}
	out->n_evals = c.n_evals;
out:
	for (int s = 0; c.sets && s < n_sets; s++)
		val_dataset_free(&c.sets[s]);
	ts_free(c.sets);
	ts_free(c.rows);
	ts_free(c.pred);
	ts_free(c.gsum);
	ts_free(c.gcnt);
	ts_free(c.granked);
	ts_free(c.tp);
	ts_free(c.tm);
	ts_free(pred_start);
	ts_free(pred_cv);
	return st;
}

void val_calib_free(struct val_calib *c)
{
	ts_arena_free(&c->arena);
	memset(c, 0, sizeof *c);
}
