/*
 * gnn_train.c: training the learned residual (or the learned-only model).
 *
 * A sample is a measured program: its prediction is
 *   p = sum_k mult_k x base_k x exp(r_k) + extra
 * over its kernels k (base = the analytic time for the residual, 1 ns for
 * learned-only, where r is the log time), extra its host term. The loss is
 *   L = sum_groups 1/n_groups mean_{i in group} (ln p_i - ln m_i)^2
 *     + rank_weight x the same mean of a pairwise logistic loss
 *       ln(1 + exp(-(ln p_b - ln p_a))) over pairs of configs of one kernel
 *       (a measured faster than b; RANK_PAIRS partners drawn per sample and
 *       epoch), Kaufman et al.'s ranking loss;
 * every group (gnn_sample.group: a kernel's configs in a tile set, a shape
 * in an op set) weighs the same whatever its row count. Adam with decoupled
 * weight decay, mini-batches in an order drawn from GSL's mt19937 with
 * the seed. The parameters judged and kept are an exponential moving
 * average of the steps' (Polyak averaging, decay EMA_DECAY, bias-corrected
 * like Adam's moments): out of fold it beat the last step's on three of
 * the four shared sets and tied on the fourth (tpusim compare, 5 folds,
 * seeds 1 and 2). Validation: a val_fraction of each set's groups
 * (gnn_sample.group: a kernel of a tile set, a shape of an op set) drawn
 * with the seed; the averaged parameters of the epoch with the lowest
 * validation loss are kept, and training stops after `patience` epochs
 * without a better one. The same held-out groups then choose novel_trust,
 * the scale of the correction on kernels of an op mix training did not
 * show in two groups (fit_novel_trust). The feature standardisation (and
 * the ranges the correction fades outside) and the known op mixes come
 * from the training samples alone.
 */
#include "gnn.h"

#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numlib.h"

#define BATCH 32
#define RANK_PAIRS 2
#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8
#define WEIGHT_DECAY 1e-4
#define EMA_DECAY 0.99 /* parameter averaging: about the last 100 steps */
#define P_FLOOR_NS 1e-3 /* predictions are floored here before the log */

void gnn_train_opts_default(struct gnn_train_opts *o)
{
	memset(o, 0, sizeof *o);
	o->kind = GNN_RESIDUAL;
	o->seed = 1;
	o->epochs = 60;
	o->patience = 10;
	o->val_fraction = 0.2;
	o->lr = 2e-3;
	o->rank_weight = 0.5;
	o->hidden = 32;
	o->layers = 2;
	o->head = 32;
	o->clip = 1.0;
}

/* ---- data ------------------------------------------------------------------ */

void gnn_data_free(struct gnn_data *d)
{
	for (int i = 0; i < d->n_graphs; i++)
		gnn_graph_free(&d->graphs[i]);
	ts_free(d->graphs);
	ts_free(d->items);
	ts_free(d->samples);
	memset(d, 0, sizeof *d);
}

static enum ts_status grow(void **p, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return TS_OK;
	int c = *cap ? *cap * 2 : 64;
	while (c < need)
		c *= 2;
	void *q = ts_realloc(*p, (size_t)c * size);
	if (!q)
		return TS_ERR_NOMEM;
	*p = q;
	*cap = c;
	return TS_OK;
}

enum ts_status gnn_data_add_graph(struct gnn_data *d, struct gnn_graph *g,
				  int *index)
{
	if (grow((void **)&d->graphs, &d->cap_graphs, d->n_graphs + 1,
		 sizeof *d->graphs))
		return TS_ERR_NOMEM;
	*index = d->n_graphs;
	d->graphs[d->n_graphs++] = *g;
	memset(g, 0, sizeof *g);
	return TS_OK;
}

enum ts_status gnn_data_add_item(struct gnn_data *d, const struct gnn_item *it)
{
	if (grow((void **)&d->items, &d->cap_items, d->n_items + 1,
		 sizeof *d->items))
		return TS_ERR_NOMEM;
	d->items[d->n_items++] = *it;
	return TS_OK;
}

enum ts_status gnn_data_add_sample(struct gnn_data *d,
				   const struct gnn_sample *s)
{
	if (grow((void **)&d->samples, &d->cap_samples, d->n_samples + 1,
		 sizeof *d->samples))
		return TS_ERR_NOMEM;
	d->samples[d->n_samples++] = *s;
	return TS_OK;
}

/* ---- standardisation --------------------------------------------------------- */

/* Accumulates mean and variance (Welford, fixed order), then sets std
 * (1 for a constant feature) and the standardised range. */
struct acc {
	double n, mean, m2, lo, hi;
};

static void acc_add(struct acc *a, double x)
{
	if (a->n == 0)
		a->lo = a->hi = x;
	a->n += 1;
	double dlt = x - a->mean;
	a->mean += dlt / a->n;
	a->m2 += dlt * (x - a->mean);
	a->lo = fmin(a->lo, x);
	a->hi = fmax(a->hi, x);
}

static struct gnn_norm acc_norm(const struct acc *a)
{
	double sd = a->n > 1 ? sqrt(a->m2 / (a->n - 1)) : 0;
	if (!(sd > 1e-9))
		sd = 1.0;
	return (struct gnn_norm){a->mean, sd, (a->lo - a->mean) / sd,
				 (a->hi - a->mean) / sd};
}

static enum ts_status fit_norms(const struct gnn_data *d, const bool *train,
				struct gnn_model *m)
{
	struct acc na[GNN_NODE_F] = {{0}}, ka[GNN_KERNEL_F] = {{0}};
	bool *seen = ts_calloc((size_t)d->n_graphs + 1, sizeof *seen);
	if (!seen)
		return TS_ERR_NOMEM;
	for (int s = 0; s < d->n_samples; s++) {
		if (!train[s])
			continue;
		const struct gnn_sample *sm = &d->samples[s];
		for (int i = sm->first; i < sm->first + sm->n; i++) {
			const struct gnn_item *it = &d->items[i];
			for (int j = 0; j < GNN_KERNEL_F; j++)
				acc_add(&ka[j], it->kf[j]);
			if (seen[it->graph])
				continue;
			seen[it->graph] = true;
			const struct gnn_graph *g = &d->graphs[it->graph];
			for (int v = 0; v < g->n; v++)
				for (int j = 0; j < GNN_NODE_F; j++)
					acc_add(&na[j], g->x[(size_t)v * GNN_NODE_F + j]);
		}
	}
	ts_free(seen);
	for (int j = 0; j < GNN_NODE_F; j++)
		m->node_norm[j] = acc_norm(&na[j]);
	for (int j = 0; j < GNN_KERNEL_F; j++)
		m->kern_norm[j] = acc_norm(&ka[j]);
	return TS_OK;
}

/* ---- forward and backward over a batch ------------------------------------------ */

struct trainer {
	const struct gnn_data *d;
	struct gnn_model *m;
	const struct gnn_train_opts *o;
	struct gnn_graph_acts *acts; /* per graph, reused */
	int *stamp;                  /* per graph: batch that embedded it */
	double **d_emb;              /* per graph: 2H gradient (lazily) */
	struct gnn_head_acts *heads; /* per item of the current batch */
	int cap_heads;
	double *grad, *adam_m, *adam_v;
	double *ema;                 /* exponential moving average of params */
	double *avg;                 /* it, bias-corrected, when judged */
	struct gnn_tensors g;        /* into grad */
	double *weight;              /* per sample (group_weights) */
	int *group_rows;             /* per group: its rows in the mask */
	long step;
};

/* Base time of an item: the analytic estimate, or 1 ns (learned-only). */
static double base_ns(const struct gnn_model *m, const struct gnn_item *it)
{
	return m->kind == GNN_LEARNED_ONLY ? 1.0 : it->analytic_ns;
}

/* Items that contribute: positive base and multiplicity. */
static bool item_counts(const struct gnn_model *m, const struct gnn_item *it)
{
	return base_ns(m, it) > 0 && it->mult > 0;
}

/* Item it's time in a prediction, from its head's raw output, how far it
 * lies outside the training range and its graph's op mix. */
static double item_time(const struct gnn_model *m, const struct gnn_item *it,
			double raw, double excess, uint64_t ops)
{
	double r = gnn_output(m, raw, excess, gnn_trust(m, ops, it->kf), NULL);
	return it->mult * base_ns(m, it) * exp(r);
}

double gnn_predict_sample(const struct gnn_model *m, const struct gnn_data *d,
			  int s)
{
	const struct gnn_sample *sm = &d->samples[s];
	double p = sm->extra_ns;
	struct gnn_graph_acts ga = {0};
	for (int i = sm->first; i < sm->first + sm->n; i++) {
		const struct gnn_item *it = &d->items[i];
		if (!item_counts(m, it))
			continue;
		if (gnn_embed(m, &d->graphs[it->graph], &ga) != TS_OK) {
			gnn_graph_acts_free(&ga);
			return NAN;
		}
		struct gnn_head_acts ha;
		double raw = gnn_head(m, ga.emb, it->kf, &ha);
		p += item_time(m, it, raw, fmax(ga.excess, ha.excess), ga.ops);
	}
	gnn_graph_acts_free(&ga);
	return p;
}

/* Embeds graph gi for batch b (once per batch). */
static enum ts_status embed_once(struct trainer *t, int gi, int b)
{
	if (t->stamp[gi] == b)
		return TS_OK;
	enum ts_status st = gnn_embed(t->m, &t->d->graphs[gi], &t->acts[gi]);
	if (st)
		return st;
	if (!t->d_emb[gi]) {
		t->d_emb[gi] = ts_malloc((size_t)2 * t->m->hidden *
					 sizeof *t->d_emb[gi]);
		if (!t->d_emb[gi])
			return TS_ERR_NOMEM;
	}
	memset(t->d_emb[gi], 0, (size_t)2 * t->m->hidden * sizeof *t->d_emb[gi]);
	t->stamp[gi] = b;
	return TS_OK;
}

/* Forward of sample s: fills heads[first..] for its items and returns
 * ln p. Graphs are embedded under stamp b. */
static enum ts_status forward(struct trainer *t, int s, int b,
			      struct gnn_head_acts *heads, double *ln_p)
{
	const struct gnn_sample *sm = &t->d->samples[s];
	double p = sm->extra_ns;
	for (int i = 0; i < sm->n; i++) {
		const struct gnn_item *it = &t->d->items[sm->first + i];
		if (!item_counts(t->m, it))
			continue;
		enum ts_status st = embed_once(t, it->graph, b);
		if (st)
			return st;
		const struct gnn_graph_acts *ga = &t->acts[it->graph];
		double raw = gnn_head(t->m, ga->emb, it->kf, &heads[i]);
		double r = gnn_output(t->m, raw, fmax(ga->excess, heads[i].excess),
				      gnn_trust(t->m, ga->ops, it->kf), NULL);
		p += it->mult * base_ns(t->m, it) * exp(r);
	}
	*ln_p = log(fmax(p, P_FLOOR_NS));
	return TS_OK;
}

/* Backward of d(loss)/d(ln p) = g through sample s's heads. */
static void backward(struct trainer *t, int s, struct gnn_head_acts *heads,
		     double ln_p, double g)
{
	const struct gnn_sample *sm = &t->d->samples[s];
	double p = exp(ln_p);
	for (int i = 0; i < sm->n; i++) {
		const struct gnn_item *it = &t->d->items[sm->first + i];
		if (!item_counts(t->m, it))
			continue;
		const struct gnn_graph_acts *ga = &t->acts[it->graph];
		double dr;
		double r = gnn_output(t->m, heads[i].raw,
				      fmax(ga->excess, heads[i].excess),
				      gnn_trust(t->m, ga->ops, it->kf), &dr);
		/* d ln p / d r = mult x base x e^r / p */
		double d_raw = g * it->mult * base_ns(t->m, it) * exp(r) / p * dr;
		gnn_head_backward(t->m, ga->emb, &heads[i], d_raw, &t->g,
				  t->d_emb[it->graph]);
	}
}

static enum ts_status reserve_heads(struct trainer *t, int n)
{
	if (n <= t->cap_heads)
		return TS_OK;
	void *q = ts_realloc(t->heads, (size_t)n * sizeof *t->heads);
	if (!q)
		return TS_ERR_NOMEM;
	t->heads = q;
	t->cap_heads = n;
	return TS_OK;
}

/* ---- the loop ---------------------------------------------------------------- */

/* Weighted mean squared log error over the samples with mask set. */
static double eval_loss(struct trainer *t, const bool *mask)
{
	double num = 0, den = 0;
	for (int s = 0; s < t->d->n_samples; s++) {
		if (!mask[s])
			continue;
		double p = gnn_predict_sample(t->m, t->d, s);
		double e = log(fmax(p, P_FLOOR_NS)) - log(t->d->samples[s].measured_ns);
		num += t->weight[s] * e * e;
		den += t->weight[s];
	}
	return den > 0 ? num / den : NAN;
}

static void adam_step(struct trainer *t)
{
	t->step++;
	double b1t = 1.0 - pow(ADAM_B1, (double)t->step);
	double b2t = 1.0 - pow(ADAM_B2, (double)t->step);
	double *w = t->m->params;
	for (size_t i = 0; i < t->m->n_params; i++) {
		double gr = t->grad[i];
		t->adam_m[i] = ADAM_B1 * t->adam_m[i] + (1 - ADAM_B1) * gr;
		t->adam_v[i] = ADAM_B2 * t->adam_v[i] + (1 - ADAM_B2) * gr * gr;
		double mh = t->adam_m[i] / b1t, vh = t->adam_v[i] / b2t;
		w[i] -= t->o->lr * (mh / (sqrt(vh) + ADAM_EPS) + WEIGHT_DECAY * w[i]);
		t->ema[i] = EMA_DECAY * t->ema[i] + (1 - EMA_DECAY) * w[i];
	}
}

/* Per-sample weights: every group (the unit a model must generalise to: a
 * kernel of a tile set, a shape of an op set) weighs the same, its rows
 * sharing its weight; they sum to 1 over the samples in mask. */
static void group_weights(struct trainer *t, const bool *mask)
{
	const struct gnn_data *d = t->d;
	int n_groups = 0;
	memset(t->group_rows, 0, (size_t)d->n_groups * sizeof *t->group_rows);
	for (int s = 0; s < d->n_samples; s++)
		if (mask[s] && t->group_rows[d->samples[s].group]++ == 0)
			n_groups++;
	for (int s = 0; s < d->n_samples; s++)
		t->weight[s] = mask[s] ? 1.0 / ((double)n_groups *
						t->group_rows[d->samples[s].group])
				       : 0;
}

/*
 * The pairwise ranking loss of one pair whose measured slower member is
 * predicted ln_slow and faster one ln_fast (Kaufman et al.'s logistic
 * loss): with delta = ln_slow - ln_fast,
 *   L = w ln(1 + e^-delta)        (small when the slower is predicted slower)
 *   dL/d ln_slow = -w / (1 + e^delta) = -dL/d ln_fast
 * computed without overflow for delta < -709. Returns L.
 */
double gnn_rank_pair(double ln_slow, double ln_fast, double w, double *g_slow,
		     double *g_fast)
{
	double delta = ln_slow - ln_fast;
	double dd = -w / (1.0 + exp(delta));
	*g_slow = dd;
	*g_fast = -dd;
	return w * (fmax(-delta, 0.0) + log1p(exp(-fabs(delta))));
}

/* One mini-batch: samples order[lo..hi) with their ranking partners. */
static enum ts_status batch(struct trainer *t, const int *order, int lo,
			    int hi, int b, gsl_rng *rng, const int *rk_off,
			    const int *rk_idx, double *loss)
{
	const struct gnn_data *d = t->d;
	memset(t->grad, 0, t->m->n_params * sizeof *t->grad);
	/* the samples touched: the batch, then each one's partners */
	int sel[BATCH * (1 + RANK_PAIRS)], pair_of[BATCH * (1 + RANK_PAIRS)];
	int n_sel = 0, n_items = 0;
	for (int i = lo; i < hi; i++) {
		int s = order[i], anchor = n_sel;
		sel[n_sel] = s;
		pair_of[n_sel++] = -1;
		int rg = d->samples[s].rank_group;
		int cnt = rg >= 0 ? rk_off[rg + 1] - rk_off[rg] : 0;
		for (int p = 0; p < RANK_PAIRS && cnt > 1; p++) {
			int o = rk_idx[rk_off[rg] + (int)NL(gsl_rng_uniform_int)(
							    rng, (unsigned long)cnt)];
			if (o == s || d->samples[o].measured_ns ==
					      d->samples[s].measured_ns)
				continue;
			sel[n_sel] = o;
			pair_of[n_sel++] = anchor;
		}
	}
	for (int i = 0; i < n_sel; i++)
		n_items += d->samples[sel[i]].n;
	enum ts_status st = reserve_heads(t, n_items);
	if (st)
		return st;
	double ln_p[BATCH * (1 + RANK_PAIRS)], gl[BATCH * (1 + RANK_PAIRS)];
	int first[BATCH * (1 + RANK_PAIRS)];
	int at = 0;
	for (int i = 0; i < n_sel; i++) {
		first[i] = at;
		st = forward(t, sel[i], b, t->heads + at, &ln_p[i]);
		if (st)
			return st;
		at += d->samples[sel[i]].n;
		gl[i] = 0;
	}
	/* losses and d/d ln p */
	for (int i = 0; i < n_sel; i++) {
		const struct gnn_sample *sm = &d->samples[sel[i]];
		if (pair_of[i] < 0) {
			double e = ln_p[i] - log(sm->measured_ns);
			*loss += t->weight[sel[i]] * e * e;
			gl[i] += 2.0 * e * t->weight[sel[i]];
			continue;
		}
		/* the pair (anchor a, partner i) */
		int a = pair_of[i];
		int fast = d->samples[sel[a]].measured_ns < sm->measured_ns ? a : i;
		int slow = fast == a ? i : a;
		double w = t->o->rank_weight * t->weight[sel[a]] / RANK_PAIRS;
		double g_slow, g_fast;
		*loss += gnn_rank_pair(ln_p[slow], ln_p[fast], w, &g_slow,
				       &g_fast);
		gl[slow] += g_slow;
		gl[fast] += g_fast;
	}
	/* a prediction held at forward's floor (1e-3 ns) has no gradient */
	for (int i = 0; i < n_sel; i++)
		if (ln_p[i] > log(P_FLOOR_NS))
			backward(t, sel[i], t->heads + first[i], ln_p[i], gl[i]);
	for (int gi = 0; gi < d->n_graphs; gi++)
		if (t->stamp[gi] == b)
			gnn_embed_backward(t->m, &d->graphs[gi], &t->acts[gi],
					   t->d_emb[gi], &t->g);
	adam_step(t);
	return TS_OK;
}

void gnn_shuffle(int *a, int n, gsl_rng *rng)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)NL(gsl_rng_uniform_int)(rng, (unsigned long)i + 1);
		int x = a[i];
		a[i] = a[j];
		a[j] = x;
	}
}

/* Groups held out of a set of n: val_fraction of them, rounded. */
#define GNN_MAX_HELD_OUT_SEARCH (1 << 20) /* a val_fraction that small
					     holds out nothing anyway */
static int held_out(const struct gnn_train_opts *o, int n)
{
	return (int)floor(o->val_fraction * n + 0.5);
}

int gnn_min_groups_held_out(const struct gnn_train_opts *o)
{
	int n = 1;
	while (held_out(o, n) < 1 && n < GNN_MAX_HELD_OUT_SEARCH)
		n++;
	return n;
}

/* Splits groups: val[s] for samples of a drawn val_fraction of each set's
 * groups that have a sample within o->train_mask (per set, so that a
 * small set, a tile set's few kernels, is held out in proportion too),
 * train[s] for the rest. perm and is_val: n_groups entries of scratch. */
static void split(const struct gnn_data *d, const struct gnn_train_opts *o,
		  gsl_rng *rng, int *perm, bool *is_val, bool *train,
		  bool *val)
{
	bool *pick = val; /* scratch until the end: "group drawn" */
	memset(pick, 0, (size_t)d->n_samples * sizeof *pick);
	for (int set = 0; set < d->n_sets; set++) {
		memset(is_val, 0, (size_t)d->n_groups * sizeof *is_val);
		for (int s = 0; s < d->n_samples; s++)
			if (d->samples[s].set == set &&
			    (!o->train_mask || o->train_mask[s]))
				is_val[d->samples[s].group] = true; /* has one */
		int n = 0;
		for (int g = 0; g < d->n_groups; g++)
			if (is_val[g])
				perm[n++] = g;
		gnn_shuffle(perm, n, rng);
		int n_val = held_out(o, n);
		memset(is_val, 0, (size_t)d->n_groups * sizeof *is_val);
		for (int i = 0; i < n_val; i++)
			is_val[perm[i]] = true;
		for (int s = 0; s < d->n_samples; s++)
			if (d->samples[s].set == set)
				pick[s] = is_val[d->samples[s].group];
	}
	for (int s = 0; s < d->n_samples; s++) {
		bool ok = !o->train_mask || o->train_mask[s];
		bool v = pick[s];
		train[s] = ok && !v;
		val[s] = ok && v;
	}
}

static void trainer_free(struct trainer *t)
{
	if (t->acts)
		for (int i = 0; i < t->d->n_graphs; i++)
			gnn_graph_acts_free(&t->acts[i]);
	if (t->d_emb)
		for (int i = 0; i < t->d->n_graphs; i++)
			ts_free(t->d_emb[i]);
	ts_free(t->acts);
	ts_free(t->d_emb);
	ts_free(t->stamp);
	ts_free(t->heads);
	ts_free(t->grad);
	ts_free(t->adam_m);
	ts_free(t->adam_v);
	ts_free(t->ema);
	ts_free(t->avg);
	ts_free(t->weight);
	ts_free(t->group_rows);
}

/* Rank groups as CSR over the training samples. */
static enum ts_status rank_index(const struct gnn_data *d, const bool *train,
				 int **off, int **idx)
{
	int n_rg = 0;
	for (int s = 0; s < d->n_samples; s++)
		if (d->samples[s].rank_group >= n_rg)
			n_rg = d->samples[s].rank_group + 1;
	*off = ts_calloc((size_t)n_rg + 2, sizeof **off);
	*idx = ts_calloc((size_t)d->n_samples + 1, sizeof **idx);
	if (!*off || !*idx)
		return TS_ERR_NOMEM;
	for (int s = 0; s < d->n_samples; s++)
		if (train[s] && d->samples[s].rank_group >= 0)
			(*off)[d->samples[s].rank_group + 1]++;
	for (int g = 0; g < n_rg; g++)
		(*off)[g + 1] += (*off)[g];
	int *fill = ts_calloc((size_t)n_rg + 1, sizeof *fill);
	if (!fill)
		return TS_ERR_NOMEM;
	for (int s = 0; s < d->n_samples; s++) {
		int g = d->samples[s].rank_group;
		if (train[s] && g >= 0)
			(*idx)[(*off)[g] + fill[g]++] = s;
	}
	ts_free(fill);
	return TS_OK;
}

/* m->known: the mix keys (gnn_mix_key: op mix and timing) that the
 * kernels of at least MIN_SUPPORT training groups have. A mix seen in one
 * kernel alone shows the network no variation across kernels, and out of
 * fold its correction did not carry to a sibling of the same mix
 * (tpugraphs-tile-v3's reshapes and copies: Kendall tau 0.884 against the
 * analytic 0.887 with MIN_SUPPORT 1, equal with 2 or 4; tpusim compare
 * --folds 5 --seed 1, every shared set). */
#define MIN_SUPPORT 2

static enum ts_status known_mixes(const struct gnn_data *d, const bool *train,
				  struct gnn_model *m, struct ts_diag *diag)
{
	if (m->kind == GNN_LEARNED_ONLY)
		return TS_OK; /* gnn_output reads no trust */
	int n = 0;
	for (int s = 0; s < d->n_samples; s++)
		if (train[s])
			n += d->samples[s].n;
	/* (mix key, group) of every training kernel */
	struct ts_key_id *mg = ts_malloc(((size_t)n + 1) * sizeof *mg);
	m->known = ts_malloc(((size_t)n + 1) * sizeof *m->known);
	if (!mg || !m->known) {
		ts_free(mg);
		return TS_ERR_NOMEM;
	}
	n = 0;
	for (int s = 0; s < d->n_samples; s++)
		for (int i = 0; train[s] && i < d->samples[s].n; i++) {
			const struct gnn_item *it = &d->items[d->samples[s].first + i];
			mg[n++] = (struct ts_key_id){
				gnn_mix_key(d->graphs[it->graph].ops, it->kf),
				d->samples[s].group};
		}
	qsort(mg, (size_t)n, sizeof *mg, ts_cmp_key_id);
	int u = 0;
	for (int i = 0, groups = 0; i < n; i++) {
		if (i > 0 && mg[i].key != mg[i - 1].key)
			groups = 0;
		if ((i == 0 || mg[i].key != mg[i - 1].key ||
		     mg[i].id != mg[i - 1].id) &&
		    ++groups == MIN_SUPPORT)
			m->known[u++] = mg[i].key;
	}
	ts_free(mg);
	m->n_known = u;
	if (u > GNN_MAX_KNOWN) {
		ts_diag_set(diag, NULL, 0, 0, "%d op mixes are known, a model "
			    "file holds at most %d", u, GNN_MAX_KNOWN);
		return TS_ERR_MISUSE;
	}
	uint64_t *fit = ts_realloc(m->known, ((size_t)u + 1) * sizeof *fit);
	if (fit)
		m->known = fit;
	return TS_OK;
}

/*
 * The training objective on the held-out samples, per group (weights from
 * group_weights over them) into gl[group]: the weighted squared log error
 * plus rank_weight x the same weight times the mean pairwise logistic loss
 * of each sample against every other held-out config of its kernel (all
 * pairs, where training draws RANK_PAIRS). rk: the n_rk held-out samples
 * with a rank group as (rank group, sample), sorted; raw, excess: each
 * held-out item's head output and range excess (heldout_heads: they do
 * not depend on the trust); lnp: scratch per sample.
 */
static void heldout_objective(struct trainer *t, const bool *val,
			      const struct ts_key_id *rk, int n_rk,
			      const double *raw, const double *excess,
			      double *lnp, double *gl)
{
	const struct gnn_data *d = t->d;
	memset(gl, 0, (size_t)d->n_groups * sizeof *gl);
	for (int s = 0; s < d->n_samples; s++) {
		if (!val[s])
			continue;
		const struct gnn_sample *sm = &d->samples[s];
		double p = sm->extra_ns;
		for (int i = sm->first; i < sm->first + sm->n; i++)
			if (item_counts(t->m, &d->items[i]))
				p += item_time(t->m, &d->items[i], raw[i],
					       excess[i],
					       d->graphs[d->items[i].graph].ops);
		lnp[s] = log(fmax(p, P_FLOOR_NS));
		double e = lnp[s] - log(d->samples[s].measured_ns);
		gl[d->samples[s].group] += t->weight[s] * e * e;
	}
	for (int lo = 0, hi; lo < n_rk; lo = hi) {
		for (hi = lo; hi < n_rk && rk[hi].key == rk[lo].key;)
			hi++;
		for (int i = lo; i < hi; i++) {
			const struct gnn_sample *a = &d->samples[rk[i].id];
			double sum = 0;
			int n = 0;
			for (int j = lo; j < hi; j++) {
				const struct gnn_sample *b = &d->samples[rk[j].id];
				if (j == i || b->measured_ns == a->measured_ns)
					continue;
				bool a_fast = a->measured_ns < b->measured_ns;
				double delta = a_fast ? lnp[rk[j].id] - lnp[rk[i].id]
						      : lnp[rk[i].id] - lnp[rk[j].id];
				sum += fmax(-delta, 0.0) + log1p(exp(-fabs(delta)));
				n++;
			}
			if (n > 0)
				gl[a->group] += t->o->rank_weight *
						t->weight[rk[i].id] * sum / n;
		}
	}
}

/* raw[i], excess[i] of every counting item of the held-out samples, as
 * gnn_predict_sample computes them (NaN raw when a graph cannot be
 * embedded: the sample's prediction is then NaN too). */
static void heldout_heads(struct trainer *t, const bool *val, double *raw,
			  double *excess)
{
	const struct gnn_data *d = t->d;
	struct gnn_graph_acts ga = {0};
	for (int s = 0; s < d->n_samples; s++) {
		const struct gnn_sample *sm = &d->samples[s];
		for (int i = sm->first; val[s] && i < sm->first + sm->n; i++) {
			const struct gnn_item *it = &d->items[i];
			if (!item_counts(t->m, it))
				continue;
			raw[i] = NAN;
			excess[i] = 0;
			if (gnn_embed(t->m, &d->graphs[it->graph], &ga) != TS_OK)
				continue;
			struct gnn_head_acts ha;
			raw[i] = gnn_head(t->m, ga.emb, it->kf, &ha);
			excess[i] = fmax(ga.excess, ha.excess);
		}
	}
	gnn_graph_acts_free(&ga);
}

/*
 * novel_trust: the scale of the correction on a kernel whose op mix is not
 * known (m->known), chosen among TRUST_STEPS + 1 even steps of [0, 1] on
 * the groups held out for early stopping (their kernels the network never
 * trained on, as a user's new kernels are). Only the held-out groups with
 * a novel kernel depend on it. A step is taken only if it lowers their
 * training objective (squared log error and ranking, per group) against
 * trust 0 by more than one standard error of the mean per-group
 * difference, and the best such step is kept: with one such group, or
 * none, or a gain within the noise of a few kernels, it is 0, and a
 * correction not shown to carry to new op mixes is not applied to them.
 * Returns the number of held-out groups with a novel kernel; TS_ERR_NOMEM
 * in *st.
 */
#define TRUST_STEPS 10
static int fit_novel_trust(struct trainer *t, const bool *val, int n_val,
			   enum ts_status *st)
{
	const struct gnn_data *d = t->d;
	struct gnn_model *m = t->m;
	int n_novel = 0, n_rk = 0;
	m->novel_trust = 0;
	if (n_val == 0 || m->kind == GNN_LEARNED_ONLY)
		return 0; /* learned-only: gnn_output does not read it */
	size_t ng = (size_t)d->n_groups + 1;
	bool *novel = ts_calloc(ng, sizeof *novel);
	struct ts_key_id *rk = ts_malloc(((size_t)d->n_samples + 1) * sizeof *rk);
	double *lnp = ts_malloc(((size_t)d->n_samples + 1) * sizeof *lnp);
	double *gl0 = ts_malloc(ng * sizeof *gl0);
	double *gl = ts_malloc(ng * sizeof *gl);
	double *raw = ts_malloc(((size_t)d->n_items + 1) * sizeof *raw);
	double *excess = ts_malloc(((size_t)d->n_items + 1) * sizeof *excess);
	if (!novel || !rk || !lnp || !gl0 || !gl || !raw || !excess) {
		*st = TS_ERR_NOMEM;
		goto out;
	}
	for (int s = 0; s < d->n_samples; s++) {
		if (!val[s])
			continue;
		if (d->samples[s].rank_group >= 0)
			rk[n_rk++] = (struct ts_key_id){
				(uint64_t)d->samples[s].rank_group, s};
		for (int i = 0; i < d->samples[s].n; i++) {
			const struct gnn_item *it =
				&d->items[d->samples[s].first + i];
			int g = d->samples[s].group;
			if (!novel[g] &&
			    !gnn_model_knows(m, gnn_mix_key(d->graphs[it->graph].ops,
							    it->kf))) {
				novel[g] = true;
				n_novel++;
			}
		}
	}
	if (n_novel < 2)
		goto out;
	qsort(rk, (size_t)n_rk, sizeof *rk, ts_cmp_key_id);
	group_weights(t, val);
	heldout_heads(t, val, raw, excess);
	heldout_objective(t, val, rk, n_rk, raw, excess, lnp, gl0);
	double best = 0, pick = 0;
	for (int k = 1; k <= TRUST_STEPS; k++) {
		m->novel_trust = (double)k / TRUST_STEPS;
		heldout_objective(t, val, rk, n_rk, raw, excess, lnp, gl);
		double sum = 0, sq = 0;
		for (int g = 0; g < d->n_groups; g++)
			if (novel[g])
				sum += gl[g] - gl0[g];
		double mean = sum / n_novel;
		for (int g = 0; g < d->n_groups; g++)
			if (novel[g])
				sq += (gl[g] - gl0[g] - mean) *
				      (gl[g] - gl0[g] - mean);
		double se = sqrt(sq / (n_novel - 1) / n_novel);
		if (mean + se < 0 && mean < best) {
			best = mean;
			pick = m->novel_trust;
		}
	}
	m->novel_trust = pick;
out:
	ts_free(novel);
	ts_free(rk);
	ts_free(lnp);
	ts_free(gl0);
	ts_free(gl);
	ts_free(raw);
	ts_free(excess);
	return n_novel;
}

enum ts_status gnn_train(const struct gnn_data *d,
			 const struct gnn_train_opts *o, struct gnn_model *m,
			 struct ts_diag *diag)
{
	if (d->n_sets > GNN_MAX_SETS) {
		ts_diag_set(diag, NULL, 0, 0, "%d measurement sets: at most %d",
			    d->n_sets, GNN_MAX_SETS);
		return TS_ERR_MISUSE;
	}
	/* GSL's mt19937 takes seed 0 as 4357: two seeds, one model */
	if (o->seed == 0) {
		ts_diag_set(diag, NULL, 0, 0, "seed 0: seeds start at 1");
		return TS_ERR_MISUSE;
	}
	enum ts_status st = numlib_load(diag);
	if (st != TS_OK)
		return st;
	st = gnn_model_alloc(m, o->kind, o->hidden, o->layers, o->head);
	if (st) {
		ts_diag_set(diag, NULL, 0, 0, "model sizes out of range");
		return st;
	}
	m->clip = o->clip;
	gsl_rng *rng = NL(gsl_rng_alloc)(*NL(gsl_rng_mt19937));
	NL(gsl_rng_set)(rng, (unsigned long)o->seed);
	struct trainer t = {.d = d, .m = m, .o = o};
	bool *train = ts_calloc((size_t)d->n_samples + 1, sizeof *train);
	bool *val = ts_calloc((size_t)d->n_samples + 1, sizeof *val);
	int *perm = ts_calloc((size_t)d->n_groups + 1, sizeof *perm);
	bool *is_val = ts_calloc((size_t)d->n_groups + 1, sizeof *is_val);
	int *order = ts_calloc((size_t)d->n_samples + 1, sizeof *order);
	int *rk_off = NULL, *rk_idx = NULL;
	double *best = ts_malloc(m->n_params * sizeof *best);
	t.acts = ts_calloc((size_t)d->n_graphs + 1, sizeof *t.acts);
	t.d_emb = ts_calloc((size_t)d->n_graphs + 1, sizeof *t.d_emb);
	t.stamp = ts_malloc(((size_t)d->n_graphs + 1) * sizeof *t.stamp);
	t.grad = ts_calloc(m->n_params, sizeof *t.grad);
	t.adam_m = ts_calloc(m->n_params, sizeof *t.adam_m);
	t.adam_v = ts_calloc(m->n_params, sizeof *t.adam_v);
	t.ema = ts_calloc(m->n_params, sizeof *t.ema);
	t.avg = ts_calloc(m->n_params, sizeof *t.avg);
	t.weight = ts_calloc((size_t)d->n_samples + 1, sizeof *t.weight);
	t.group_rows = ts_calloc((size_t)d->n_groups + 1, sizeof *t.group_rows);
	if (!train || !val || !perm || !is_val || !order || !best || !t.acts ||
	    !t.d_emb || !t.stamp || !t.grad || !t.adam_m || !t.adam_v ||
	    !t.weight || !t.group_rows || !t.ema || !t.avg) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i <= d->n_graphs; i++)
		t.stamp[i] = -1;
	gnn_model_bind(m, t.grad, &t.g);
	split(d, o, rng, perm, is_val, train, val);
	int n_train = 0, n_val = 0;
	for (int s = 0; s < d->n_samples; s++) {
		if (train[s])
			order[n_train++] = s;
		n_val += val[s];
	}
	if (n_train == 0) {
		ts_diag_set(diag, NULL, 0, 0, "no sample to train on");
		st = TS_ERR_MISUSE;
		goto out;
	}
	if ((st = fit_norms(d, train, m)) || (st = known_mixes(d, train, m, diag)) ||
	    (st = rank_index(d, train, &rk_off, &rk_idx)) ||
	    (st = gnn_model_init(m, o->seed, diag)))
		goto out;
	if (o->kind == GNN_LEARNED_ONLY) {
		/* start at the mean log time per kernel run */
		double sum = 0;
		for (int i = 0; i < n_train; i++) {
			const struct gnn_sample *sm = &d->samples[order[i]];
			double runs = 0;
			for (int k = sm->first; k < sm->first + sm->n; k++)
				runs += d->items[k].mult;
			sum += log(fmax(sm->measured_ns - sm->extra_ns, 1.0) /
				   fmax(runs, 1.0));
		}
		struct gnn_tensors p;
		gnn_model_bind(m, m->params, &p);
		p.b2[0] = sum / n_train;
	}
	bool *val_mask = n_val > 0 ? val : train;
	double best_loss = INFINITY, tr_loss = NAN;
	int best_epoch = 0, stale = 0, b = 0, epoch = 0;
	memcpy(best, m->params, m->n_params * sizeof *best);
	time_t t0 = time(NULL);
	for (epoch = 1; epoch <= o->epochs && stale < o->patience; epoch++) {
		group_weights(&t, train);
		gnn_shuffle(order, n_train, rng);
		double loss = 0;
		for (int lo = 0; lo < n_train; lo += BATCH) {
			int hi = lo + BATCH < n_train ? lo + BATCH : n_train;
			st = batch(&t, order, lo, hi, b++, rng, rk_off, rk_idx,
				   &loss);
			if (st)
				goto out;
		}
		group_weights(&t, val_mask);
		/* judge (and keep) the averaged parameters */
		double corr = 1.0 - pow(EMA_DECAY, (double)t.step);
		for (size_t i = 0; i < m->n_params; i++)
			t.avg[i] = t.ema[i] / corr;
		double *raw = m->params;
		m->params = t.avg;
		double vl = eval_loss(&t, val_mask);
		bool better = vl < best_loss;
		if (better)
			memcpy(best, m->params, m->n_params * sizeof *best);
		m->params = raw;
		if (better) {
			best_loss = vl;
			best_epoch = epoch;
			tr_loss = loss;
			stale = 0;
		} else {
			stale++;
		}
		if (o->progress) {
			double el = difftime(time(NULL), t0);
			fprintf(o->progress,
				"epoch %3d/%d  train loss %.5f  validation %.5f"
				"  best %.5f (epoch %d)  %.0f s, ETA %.0f s\n",
				epoch, o->epochs, loss, vl, best_loss,
				best_epoch, el,
				el / epoch * (o->epochs - epoch));
		}
	}
	if (best_epoch == 0) {
		/* the held-out loss was never finite: no model to keep */
		ts_diag_set(diag, NULL, 0, 0, "training diverged: no epoch "
			    "gave a finite held-out loss");
		st = TS_ERR_MISUSE;
		goto out;
	}
	memcpy(m->params, best, m->n_params * sizeof *best);
	m->summary.novel_groups = fit_novel_trust(&t, val, n_val, &st);
	if (st)
		goto out;
	/* the held-out loss of the model as saved: early stopping judged it
	 * at trust 1; none when nothing was held out (val_mask is then the
	 * training set) */
	group_weights(&t, val_mask);
	m->summary.val_loss = n_val > 0 ? eval_loss(&t, val_mask) : NAN;
	m->summary.seed = o->seed;
	m->summary.epochs = epoch - 1;
	m->summary.best_epoch = best_epoch;
	m->summary.train_loss = tr_loss;
	m->summary.n_sets = d->n_sets;
	for (int i = 0; i < d->n_sets && i < GNN_MAX_SETS; i++) {
		memcpy(m->summary.sets[i], d->sets[i], sizeof m->summary.sets[i]);
		m->summary.rows[i] = 0;
	}
	for (int s = 0; s < d->n_samples; s++)
		if (train[s])
			m->summary.rows[d->samples[s].set]++;
out:
	trainer_free(&t);
	ts_free(train);
	ts_free(val);
	ts_free(perm);
	ts_free(is_val);
	ts_free(order);
	ts_free(rk_off);
	ts_free(rk_idx);
	ts_free(best);
	NL(gsl_rng_free)(rng);
	if (st && st != TS_ERR_MISUSE)
		ts_diag_set(diag, NULL, 0, 0, "out of memory while training");
	if (st)
		gnn_model_free(m);
	return st;
}
