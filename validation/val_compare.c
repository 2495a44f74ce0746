/*
 * val_compare.c: the comparison the product exists for: analytic vs
 * learned-only vs hybrid vs measured, on out-of-fold predictions only.
 * Groups (a kernel of a tile set, a shape of an op set: val_learn's) are
 * dealt into folds in an order drawn from GSL's mt19937 with the seed;
 * for each fold a residual and a learned-only model are trained on the
 * other folds (gnn_train; its own validation split for early stopping is
 * drawn from those) and predict the fold. The per-row predictions then
 * replace the analytic ones in copies of the analytic report
 * (val_report_repredict), so every metric (MAPE, Kendall tau per kernel,
 * top-K, tile choice) is computed the same way for all three.
 */
#include "val.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>
#include <time.h>

void val_compare_free(struct val_compare *c)
{
	for (int i = 0; i < c->n_sets; i++) {
		val_report_free(&c->sets[i].learned);
		val_report_free(&c->sets[i].hybrid);
		val_report_free(&c->sets[i].analytic);
		ts_free(c->sets[i].fold);
	}
	memset(c, 0, sizeof *c);
}

/* Trains one model kind without fold f and writes the device time it
 * predicts for each held-out sample into dev[set][row]. */
static enum ts_status train_fold(const struct val_learn *l,
				 const struct val_compare_opts *o,
				 enum gnn_kind kind, const int *fold_of_sample,
				 int f, bool *mask, double **dev,
				 struct val_compare *out, struct ts_diag *d)
{
	const struct gnn_data *data = &l->data;
	int held = 0, rest = 0;
	for (int s = 0; s < data->n_samples; s++) {
		mask[s] = fold_of_sample[s] != f;
		rest += mask[s];
		held += !mask[s];
	}
	if (held == 0 || rest == 0)
		return TS_OK; /* nothing to predict, or nothing to learn from */
	struct gnn_train_opts to;
	gnn_train_opts_default(&to);
	to.kind = kind;
	to.seed = o->seed;
	if (o->epochs > 0)
		to.epochs = o->epochs;
	to.train_mask = mask;
	struct gnn_model m;
	clock_t c0 = clock();
	/* as tpusim train fits a model: trained, then held back where its
	 * correction does not help out of fold (within these folds' data) */
	struct gnn_holdback hb;
	enum ts_status st = gnn_train(data, &to, &m, d);
	if (!st && (st = gnn_hold_back(data, &to, GNN_HOLDBACK_FOLDS, &m, &hb,
				       d)))
		gnn_model_free(&m);
	out->train_s += (double)(clock() - c0) / CLOCKS_PER_SEC;
	if (st)
		return st;
	out->n_trained++;
	for (int s = 0; s < data->n_samples; s++) {
		if (fold_of_sample[s] != f)
			continue;
		double p = gnn_predict_sample(&m, data, s);
		dev[l->set_of[s]][l->row_of[s]] = p - data->samples[s].extra_ns;
	}
	gnn_model_free(&m);
	return TS_OK;
}

enum ts_status val_compare_run(const struct val_dataset *const *sets,
			       const struct val_specs *const *specs,
			       int n_sets, const struct val_learn *l,
			       const struct val_compare_opts *o,
			       struct val_compare *out, struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	const struct gnn_data *data = &l->data;
	double *learned[GNN_MAX_SETS] = {0}, *hybrid[GNN_MAX_SETS] = {0};
	int *fold_of_group = ts_calloc((size_t)data->n_groups + 1, sizeof(int));
	int *fold_of_sample = ts_calloc((size_t)data->n_samples + 1, sizeof(int));
	bool *mask = ts_calloc((size_t)data->n_samples + 1, sizeof *mask);
	enum ts_status st = fold_of_group && fold_of_sample && mask
				    ? TS_OK
				    : TS_ERR_NOMEM;
	if (n_sets > GNN_MAX_SETS)
		st = TS_ERR_MISUSE;
	for (int i = 0; i < n_sets && !st; i++) {
		out->n_sets++;
		st = val_report_build(sets[i], specs[i], NULL,
				      &out->sets[i].analytic, d);
		size_t n = (size_t)sets[i]->n_rows + 1;
		learned[i] = ts_malloc(n * sizeof(double));
		hybrid[i] = ts_malloc(n * sizeof(double));
		out->sets[i].fold = ts_malloc(n * sizeof(int));
		if (!st && (!learned[i] || !hybrid[i] || !out->sets[i].fold))
			st = TS_ERR_NOMEM;
		for (int r = 0; !st && r < sets[i]->n_rows; r++) {
			learned[i][r] = hybrid[i][r] = NAN;
			out->sets[i].fold[r] = -1;
		}
	}
	if (!st)
		st = gnn_assign_folds(data->n_groups, o->folds, o->seed,
				      fold_of_group, d);
	if (!st) {
		out->n_folds = o->folds > 0 ? o->folds : data->n_groups;
		for (int s = 0; s < data->n_samples; s++) {
			fold_of_sample[s] = fold_of_group[data->samples[s].group];
			out->sets[l->set_of[s]].fold[l->row_of[s]] =
				fold_of_sample[s];
		}
	}
	time_t t0 = time(NULL);
	for (int f = 0; f < out->n_folds && !st; f++) {
		st = train_fold(l, o, GNN_RESIDUAL, fold_of_sample, f, mask,
				hybrid, out, d);
		if (!st)
			st = train_fold(l, o, GNN_LEARNED_ONLY, fold_of_sample,
					f, mask, learned, out, d);
		if (o->progress && !st) {
			double el = difftime(time(NULL), t0);
			fprintf(o->progress, "fold %d/%d trained, %.0f s, ETA "
					     "%.0f s\n",
				f + 1, out->n_folds, el,
				el / (f + 1) * (out->n_folds - f - 1));
		}
	}
	/* the three models are scored on the same rows: one the analytic
	 * model cannot cost, none can; one with no kernel the models
	 * correct (not a sample) is the analytic estimate in all three */
	for (int i = 0; i < n_sets && !st; i++)
		for (int r = 0; r < sets[i]->n_rows; r++) {
			const struct val_row_result *a =
				&out->sets[i].analytic.rows[r];
			if (!isfinite(a->predicted_ns))
				learned[i][r] = hybrid[i][r] = NAN;
			else if (out->sets[i].fold[r] < 0)
				learned[i][r] = hybrid[i][r] = a->device_ns;
		}
	for (int i = 0; i < n_sets && !st; i++) {
		st = val_report_repredict(&out->sets[i].analytic, learned[i],
					  &out->sets[i].learned);
		if (!st)
			st = val_report_repredict(&out->sets[i].analytic,
						  hybrid[i], &out->sets[i].hybrid);
	}
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, NULL, 0, 0, "out of memory");
	else if (st == TS_ERR_MISUSE && n_sets > GNN_MAX_SETS)
		ts_diag_set(d, NULL, 0, 0, "at most %d sets", GNN_MAX_SETS);
	for (int i = 0; i < GNN_MAX_SETS; i++) {
		ts_free(learned[i]);
		ts_free(hybrid[i]);
	}
	ts_free(fold_of_group);
	ts_free(fold_of_sample);
	ts_free(mask);
	return st;
}
