/*
 * gnn_holdback.c: the hybrid holds back where its correction does not
 * help out of fold. A residual model corrects in full only the kernels of
 * the op mixes it knows (gnn_mix_key: op mix and timing, seen in at least
 * two training groups; gnn_trust). After the model m is trained on d,
 * every mix it knows is checked out of fold: d's groups are dealt into
 * folds (gnn_assign_folds, as `compare` deals them), a model trained
 * without each fold (gnn_train, the same options) predicts it, and over
 * the samples whose kernels are all of one mix the mean absolute log
 * error of those predictions is compared with the analytic model's
 *
 *   E_hybrid(mix) = mean |ln(hybrid / measured)|
 *   E_analytic(mix) = mean |ln(analytic / measured)|
 *
 * A mix with E_hybrid > E_analytic, where the correction made held-out
 * kernels worse, is dropped from m's known mixes: its kernels then get
 * the novel mixes' correction (x novel_trust; 0 for the shipped model, so
 * the analytic time). Multi-kernel samples of several mixes are left out
 * of the check (their error is not one mix's). Costs folds more trainings.
 * Source: the out-of-fold comparison of `compare` (val_compare.c), used to
 * decide instead of to report; the rule of issue "Autotuning" 3.
 */
#include "gnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numlib.h"

enum ts_status gnn_assign_folds(int n_groups, int folds, uint64_t seed,
				int *fold_of_group, struct ts_diag *d)
{
	enum ts_status st = numlib_load(d);
	if (st != TS_OK)
		return st;
	int *perm = ts_malloc(((size_t)n_groups + 1) * sizeof *perm);
	if (!perm)
		return TS_ERR_NOMEM;
	for (int g = 0; g < n_groups; g++)
		perm[g] = g;
	gsl_rng *r = NL(gsl_rng_alloc)(*NL(gsl_rng_mt19937));
	if (!r) {
		ts_free(perm);
		return TS_ERR_NOMEM;
	}
	NL(gsl_rng_set)(r, (unsigned long)seed);
	gnn_shuffle(perm, n_groups, r);
	NL(gsl_rng_free)(r);
	for (int i = 0; i < n_groups; i++)
		fold_of_group[perm[i]] = folds > 0 ? i % folds : perm[i];
	ts_free(perm);
	return TS_OK;
}

/* The one mix of sample s's kernels, or 0 when they have several (or
 * none that counts). */
static uint64_t sample_mix(const struct gnn_data *d, int s)
{
	const struct gnn_sample *sm = &d->samples[s];
	uint64_t mix = 0;
	for (int i = sm->first; i < sm->first + sm->n; i++) {
		const struct gnn_item *it = &d->items[i];
		if (!(it->analytic_ns > 0 && it->mult > 0))
			continue;
		uint64_t k = gnn_mix_key(d->graphs[it->graph].ops, it->kf);
		if (mix && k != mix)
			return 0;
		mix = k;
	}
	return mix;
}

static double analytic_of(const struct gnn_data *d, int s)
{
	const struct gnn_sample *sm = &d->samples[s];
	double p = sm->extra_ns;
	for (int i = sm->first; i < sm->first + sm->n; i++) {
		const struct gnn_item *it = &d->items[i];
		if (it->analytic_ns > 0 && it->mult > 0)
			p += it->mult * it->analytic_ns;
	}
	return p;
}

/* Per known mix (index in m->known): the sums of both errors and the
 * count. */
struct tally {
	double hyb, ana;
	int n;
};

enum ts_status gnn_hold_back(const struct gnn_data *d,
			     const struct gnn_train_opts *o, int folds,
			     struct gnn_model *m, struct gnn_holdback *out,
			     struct ts_diag *diag)
{
	memset(out, 0, sizeof *out);
	if (m->kind != GNN_RESIDUAL || m->n_known == 0 || folds < 2)
		return TS_OK;
	int *fold_of_group = ts_calloc((size_t)d->n_groups + 1, sizeof(int));
	bool *mask = ts_calloc((size_t)d->n_samples + 1, sizeof *mask);
	struct tally *t = ts_calloc((size_t)m->n_known + 1, sizeof *t);
	enum ts_status st = fold_of_group && mask && t ? TS_OK : TS_ERR_NOMEM;
	if (!st)
		st = gnn_assign_folds(d->n_groups, folds, o->seed, fold_of_group,
				      diag);
	for (int f = 0; !st && f < folds; f++) {
		int held = 0, rest = 0;
		for (int s = 0; s < d->n_samples; s++) {
			bool in_f = fold_of_group[d->samples[s].group] == f;
			mask[s] = !in_f && (!o->train_mask || o->train_mask[s]);
			rest += mask[s];
			held += in_f;
		}
		if (held == 0 || rest == 0)
			continue;
		struct gnn_train_opts fo = *o;
		fo.train_mask = mask;
		fo.progress = NULL;
		struct gnn_model fm;
		if ((st = gnn_train(d, &fo, &fm, diag)))
			break;
		for (int s = 0; s < d->n_samples; s++) {
			/* only samples m was trained on: outside them (a
			 * fold compare holds out) nothing may be read */
			if (fold_of_group[d->samples[s].group] != f ||
			    (o->train_mask && !o->train_mask[s]))
				continue;
			int k = gnn_model_known_index(m, sample_mix(d, s));
			if (k < 0) /* a novel or mixed sample: nothing to tally */
				continue;
			double a = analytic_of(d, s);
			double y = d->samples[s].measured_ns;
			double h = gnn_predict_sample(&fm, d, s);
			if (!(h > 0) || !(a > 0) || !(y > 0))
				continue;
			t[k].hyb += fabs(log(h / y));
			t[k].ana += fabs(log(a / y));
			t[k].n++;
		}
		gnn_model_free(&fm);
	}
	if (!st) {
		int u = 0;
		for (int k = 0; k < m->n_known; k++) {
			out->n_checked += t[k].n > 0;
			if (t[k].n > 0 && t[k].hyb > t[k].ana) {
				out->n_dropped++;
				out->n_samples += t[k].n;
				continue;
			}
			m->known[u++] = m->known[k];
		}
		out->n_known_before = m->n_known;
		m->n_known = u;
	}
	ts_free(fold_of_group);
	ts_free(mask);
	ts_free(t);
	return st;
}
