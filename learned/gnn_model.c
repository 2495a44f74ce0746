/*
 * gnn_model.c: the network of the learned residual, forward and backward.
 *
 *   z0_v      = (x_v - mean) / std                   standardised node features
 *   cat_v^l   = [h_v^l, mean_{u in operands(v)} h_u^l, mean_{u in users(v)} h_u^l]
 *   h_v^{l+1} = ReLU(cat_v^l W_l + b_l)              (GraphSAGE, directed:
 *                                                    operands and users apart)
 *   emb       = [mean_v h_v^L, max_v h_v^L]          graph embedding (2H)
 *   hid       = ReLU([emb, kz] W1 + b1)              kz: standardised kernel
 *   raw       = hid . w2 + b2                        features
 *
 * A node without operands (users) gets zeros for that mean. The embedding
 * does not depend on the tile config, so tile search embeds a kernel once
 * and runs only the head per config. Backward passes are written by hand
 * and checked against finite differences (tests/test_gnn.c). Dense
 * products go through cblas_dgemm / dgemv / dger; every sum runs in a
 * fixed order, so results are bit-identical for the same inputs on one
 * machine (OpenBLAS's serial build: one thread).
 */
#include "gnn.h"

#include <cblas.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "numlib.h"

const char *gnn_kind_name(enum gnn_kind k)
{
	return k == GNN_LEARNED_ONLY ? "learned-only" : "residual";
}

static int layer_in(int l, int hidden)
{
	return l == 0 ? GNN_NODE_F : hidden;
}

size_t gnn_model_param_count(int hidden, int layers, int head)
{
	size_t n = 0;
	for (int l = 0; l < layers; l++)
		n += (size_t)3 * layer_in(l, hidden) * hidden + hidden;
	n += (size_t)(2 * hidden + GNN_KERNEL_F) * head + head;
	n += (size_t)head + 1;
	return n;
}

void gnn_model_bind(const struct gnn_model *m, double *buf,
		    struct gnn_tensors *t)
{
	memset(t, 0, sizeof *t);
	int H = m->hidden;
	for (int l = 0; l < m->layers; l++) {
		t->w[l] = buf;
		buf += (size_t)3 * layer_in(l, H) * H;
		t->b[l] = buf;
		buf += H;
	}
	t->w1 = buf;
	buf += (size_t)(2 * H + GNN_KERNEL_F) * m->head;
	t->b1 = buf;
	buf += m->head;
	t->w2 = buf;
	buf += m->head;
	t->b2 = buf;
}

enum ts_status gnn_model_alloc(struct gnn_model *m, enum gnn_kind kind,
			       int hidden, int layers, int head)
{
	memset(m, 0, sizeof *m);
	if ((kind != GNN_RESIDUAL && kind != GNN_LEARNED_ONLY) || hidden < 1 ||
	    hidden > GNN_MAX_HIDDEN || layers < 1 || layers > GNN_MAX_LAYERS ||
	    head < 1 || head > GNN_MAX_HIDDEN)
		return TS_ERR_MISUSE;
	m->kind = kind;
	m->hidden = hidden;
	m->layers = layers;
	m->head = head;
	m->clip = 1.0;
	m->novel_trust = 1.0;
	for (int i = 0; i < GNN_NODE_F; i++)
		m->node_norm[i] = (struct gnn_norm){0, 1, 0, 0};
	for (int i = 0; i < GNN_KERNEL_F; i++)
		m->kern_norm[i] = (struct gnn_norm){0, 1, 0, 0};
	m->n_params = gnn_model_param_count(hidden, layers, head);
	m->params = ts_calloc(m->n_params, sizeof *m->params);
	return m->params ? TS_OK : TS_ERR_NOMEM;
}

void gnn_model_free(struct gnn_model *m)
{
	ts_free(m->params);
	ts_free(m->known);
	memset(m, 0, sizeof *m);
}

uint64_t gnn_mix_key(uint64_t ops, const double kf[GNN_KERNEL_F])
{
	static const char host[] = "host_timed";
	return kf[GNN_KF_HOST_TIMED] != 0
		       ? ops ^ ts_fnv1a(TS_FNV1A_BASIS, host, sizeof host - 1)
		       : ops;
}

double gnn_trust(const struct gnn_model *m, uint64_t ops,
		 const double kf[GNN_KERNEL_F])
{
	return gnn_model_knows(m, gnn_mix_key(ops, kf)) ? 1.0 : m->novel_trust;
}

int gnn_model_known_index(const struct gnn_model *m, uint64_t key)
{
	int lo = 0, hi = m->n_known;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (m->known[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n_known && m->known[lo] == key ? lo : -1;
}

bool gnn_model_knows(const struct gnn_model *m, uint64_t key)
{
	return gnn_model_known_index(m, key) >= 0;
}

/* Glorot-uniform: U(-a, a), a = sqrt(6 / (fan_in + fan_out)). */
static void glorot(gsl_rng *r, double *w, int fan_in, int fan_out,
		   double scale)
{
	double a = scale * sqrt(6.0 / (fan_in + fan_out));
	for (size_t i = 0; i < (size_t)fan_in * fan_out; i++)
		w[i] = a * (2.0 * NL(gsl_rng_uniform)(r) - 1.0);
}

enum ts_status gnn_model_init(struct gnn_model *m, uint64_t seed,
			      struct ts_diag *d)
{
	enum ts_status st = numlib_load(d);
	if (st != TS_OK)
		return st;
	struct gnn_tensors t;
	memset(m->params, 0, m->n_params * sizeof *m->params);
	gnn_model_bind(m, m->params, &t);
	gsl_rng *r = NL(gsl_rng_alloc)(*NL(gsl_rng_mt19937));
	if (!r)
		return TS_ERR_NOMEM; /* GSL aborts on allocation failure first */
	NL(gsl_rng_set)(r, (unsigned long)seed);
	for (int l = 0; l < m->layers; l++)
		glorot(r, t.w[l], 3 * layer_in(l, m->hidden), m->hidden, 1.0);
	glorot(r, t.w1, 2 * m->hidden + GNN_KERNEL_F, m->head, 1.0);
	/* a small last layer: an untrained residual starts near r = 0, the
	 * analytic estimate */
	glorot(r, t.w2, m->head, 1, 0.1);
	NL(gsl_rng_free)(r);
	return TS_OK;
}

/* ---- the graph embedding ------------------------------------------------------ */

void gnn_graph_acts_free(struct gnn_graph_acts *a)
{
	ts_free(a->z0);
	for (int l = 0; l < GNN_MAX_LAYERS; l++) {
		ts_free(a->cat[l]);
		ts_free(a->h[l]);
	}
	ts_free(a->emb);
	ts_free(a->argmax);
	ts_free(a->scratch);
	memset(a, 0, sizeof *a);
}

/* Scratch of the backward pass: dCat (n x 3 max_in) + dH, dH_prev (n x H
 * each). */
static size_t scratch_size(const struct gnn_model *m, int n)
{
	int in = GNN_NODE_F > m->hidden ? GNN_NODE_F : m->hidden;
	return (size_t)n * (3 * in + 2 * m->hidden);
}

static enum ts_status acts_reserve(const struct gnn_model *m,
				   struct gnn_graph_acts *a, int n)
{
	if (a->emb && a->cap >= n)
		return TS_OK;
	gnn_graph_acts_free(a);
	int H = m->hidden, cap = n > 0 ? n : 1;
	a->z0 = ts_malloc((size_t)cap * GNN_NODE_F * sizeof *a->z0);
	bool ok = a->z0 != NULL;
	for (int l = 0; l < m->layers && ok; l++) {
		a->cat[l] = ts_malloc((size_t)cap * 3 * layer_in(l, H) *
				      sizeof *a->cat[l]);
		a->h[l] = ts_malloc((size_t)cap * H * sizeof *a->h[l]);
		ok = a->cat[l] && a->h[l];
	}
	a->emb = ts_malloc((size_t)2 * H * sizeof *a->emb);
	a->argmax = ts_malloc((size_t)H * sizeof *a->argmax);
	a->scratch = ts_malloc(scratch_size(m, cap) * sizeof *a->scratch);
	if (!ok || !a->emb || !a->argmax || !a->scratch) {
		gnn_graph_acts_free(a);
		return TS_ERR_NOMEM;
	}
	a->cap = cap;
	return TS_OK;
}

/* How far z lies outside [lo, hi] (0 inside). */
static double beyond(double z, const struct gnn_norm *nm)
{
	return fmax(0.0, fmax(nm->lo - z, z - nm->hi));
}

/* Row v of a CSR neighbourhood averaged: dst[0..d) = mean of src rows. */
static void mean_rows(const double *src, int d, const int *off,
		      const int *idx, int v, double *dst)
{
	memset(dst, 0, (size_t)d * sizeof *dst);
	int deg = off[v + 1] - off[v];
	if (deg == 0)
		return;
	for (int e = off[v]; e < off[v + 1]; e++) {
		const double *s = src + (size_t)idx[e] * d;
		for (int j = 0; j < d; j++)
			dst[j] += s[j];
	}
	for (int j = 0; j < d; j++)
		dst[j] /= deg;
}

enum ts_status gnn_embed(const struct gnn_model *m, const struct gnn_graph *g,
			 struct gnn_graph_acts *a)
{
	enum ts_status st = acts_reserve(m, a, g->n);
	if (st != TS_OK)
		return st;
	int n = g->n, H = m->hidden;
	a->n = n;
	a->excess = 0;
	a->ops = g->ops;
	for (int v = 0; v < n; v++)
		for (int j = 0; j < GNN_NODE_F; j++) {
			const struct gnn_norm *nm = &m->node_norm[j];
			double z = (g->x[(size_t)v * GNN_NODE_F + j] - nm->mean) /
				   nm->std;
			a->z0[(size_t)v * GNN_NODE_F + j] = z;
			a->excess = fmax(a->excess, beyond(z, nm));
		}
	struct gnn_tensors t;
	gnn_model_bind(m, m->params, &t);
	const double *in = a->z0;
	for (int l = 0; l < m->layers; l++) {
		int d = layer_in(l, H);
		double *cat = a->cat[l];
		for (int v = 0; v < n; v++) {
			double *row = cat + (size_t)v * 3 * d;
			memcpy(row, in + (size_t)v * d, (size_t)d * sizeof *row);
			mean_rows(in, d, g->in_off, g->in_idx, v, row + d);
			mean_rows(in, d, g->out_off, g->out_idx, v, row + 2 * d);
		}
		double *h = a->h[l];
		for (int v = 0; v < n; v++)
			memcpy(h + (size_t)v * H, t.b[l], (size_t)H * sizeof *h);
		if (n > 0)
			NL(cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, n,
				    H, 3 * d, 1.0, cat, 3 * d, t.w[l], H, 1.0, h,
				    H);
		for (size_t i = 0; i < (size_t)n * H; i++)
			h[i] = h[i] > 0 ? h[i] : 0;
		in = h;
	}
	for (int j = 0; j < H; j++) {
		double sum = 0, mx = n > 0 ? in[j] : 0;
		int arg = 0;
		for (int v = 0; v < n; v++) {
			double x = in[(size_t)v * H + j];
			sum += x;
			if (x > mx) {
				mx = x;
				arg = v;
			}
		}
		a->emb[j] = n > 0 ? sum / n : 0;
		a->emb[H + j] = mx;
		a->argmax[j] = arg;
	}
	return TS_OK;
}

void gnn_embed_backward(const struct gnn_model *m, const struct gnn_graph *g,
			struct gnn_graph_acts *a, const double *d_emb,
			const struct gnn_tensors *grad)
{
	int n = a->n, H = m->hidden;
	if (n <= 0)
		return;
	struct gnn_tensors t;
	gnn_model_bind(m, m->params, &t);
	int max_in = GNN_NODE_F > H ? GNN_NODE_F : H;
	double *dcat = a->scratch;
	double *dh = dcat + (size_t)n * 3 * max_in;
	double *dprev = dh + (size_t)n * H;
	for (int v = 0; v < n; v++)
		for (int j = 0; j < H; j++)
			dh[(size_t)v * H + j] =
				d_emb[j] / n + (a->argmax[j] == v ? d_emb[H + j] : 0);
	for (int l = m->layers - 1; l >= 0; l--) {
		int d = layer_in(l, H);
		const double *h = a->h[l];
		for (size_t i = 0; i < (size_t)n * H; i++)
			if (!(h[i] > 0))
				dh[i] = 0; /* ReLU */
		NL(cblas_dgemm)(CblasRowMajor, CblasTrans, CblasNoTrans, 3 * d, H, n,
			    1.0, a->cat[l], 3 * d, dh, H, 1.0, grad->w[l], H);
		for (int v = 0; v < n; v++)
			for (int j = 0; j < H; j++)
				grad->b[l][j] += dh[(size_t)v * H + j];
		if (l == 0)
			break; /* inputs are features: no gradient needed */
		NL(cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasTrans, n, 3 * d, H,
			    1.0, dh, H, t.w[l], H, 0.0, dcat, 3 * d);
		/* h^l fed cat^l three ways: itself, its users' operand
		 * means, its operands' user means */
		for (int v = 0; v < n; v++)
			memcpy(dprev + (size_t)v * d, dcat + (size_t)v * 3 * d,
			       (size_t)d * sizeof *dprev);
		for (int w = 0; w < n; w++) {
			const double *row = dcat + (size_t)w * 3 * d;
			int din = g->in_off[w + 1] - g->in_off[w];
			for (int e = g->in_off[w]; e < g->in_off[w + 1]; e++) {
				double *dst = dprev + (size_t)g->in_idx[e] * d;
				for (int j = 0; j < d; j++)
					dst[j] += row[d + j] / din;
			}
			int dout = g->out_off[w + 1] - g->out_off[w];
			for (int e = g->out_off[w]; e < g->out_off[w + 1]; e++) {
				double *dst = dprev + (size_t)g->out_idx[e] * d;
				for (int j = 0; j < d; j++)
					dst[j] += row[2 * d + j] / dout;
			}
		}
		memcpy(dh, dprev, (size_t)n * H * sizeof *dh);
	}
}

/* ---- the output range --------------------------------------------------------- */

/* out[k] = bias[k] + sum_i in[i] w[i x n_out + k] over the box in_lo..in_hi
 * (n_in inputs), then ReLU when relu; false when a sum is not finite. */
static bool box_layer(const double *in_lo, const double *in_hi, int n_in,
		      const double *w, const double *bias, int n_out,
		      bool relu, double *out_lo, double *out_hi)
{
	bool finite = true;
	for (int k = 0; k < n_out; k++) {
		double lo = bias[k], hi = bias[k];
		for (int i = 0; i < n_in; i++) {
			double a = in_lo[i] * w[(size_t)i * n_out + k];
			double b = in_hi[i] * w[(size_t)i * n_out + k];
			lo += fmin(a, b);
			hi += fmax(a, b);
		}
		finite = finite && isfinite(lo) && isfinite(hi);
		out_lo[k] = relu ? fmax(lo, 0) : lo;
		out_hi[k] = relu ? fmax(hi, 0) : hi;
	}
	return finite;
}

void gnn_model_raw_range(const struct gnn_model *m, double *lo, double *hi)
{
	/* a layer's input: node features (layer 0) or the hidden width */
	enum { MAX_D = GNN_MAX_HIDDEN > GNN_NODE_F ? GNN_MAX_HIDDEN
						   : GNN_NODE_F,
	       MAX_IN = 2 * GNN_MAX_HIDDEN + GNN_KERNEL_F };
	struct gnn_tensors t;
	gnn_model_bind(m, m->params, &t);
	int H = m->hidden;
	double a[3 * MAX_D], b[3 * MAX_D], ha[MAX_D], hb[MAX_D];
	bool finite = true;
	for (int j = 0; j < GNN_NODE_F; j++) {
		ha[j] = m->node_norm[j].lo; /* layer 0's input: z0 */
		hb[j] = m->node_norm[j].hi;
	}
	for (int l = 0; l < m->layers; l++) {
		int d = layer_in(l, H);
		/* cat = [h, mean of operands, mean of users]; a mean lies in
		 * the box, or is 0 without neighbours */
		for (int j = 0; j < d; j++) {
			a[j] = ha[j];
			b[j] = hb[j];
			a[d + j] = a[2 * d + j] = fmin(ha[j], 0);
			b[d + j] = b[2 * d + j] = fmax(hb[j], 0);
		}
		finite = box_layer(a, b, 3 * d, t.w[l], t.b[l], H, true, ha,
				   hb) && finite;
	}
	/* the head's input: mean and max pooling (0 for an empty graph),
	 * then the standardised kernel features */
	double in_lo[MAX_IN], in_hi[MAX_IN], hid_lo[GNN_MAX_HIDDEN],
		hid_hi[GNN_MAX_HIDDEN];
	for (int j = 0; j < H; j++) {
		in_lo[j] = in_lo[H + j] = fmin(ha[j], 0);
		in_hi[j] = in_hi[H + j] = fmax(hb[j], 0);
	}
	for (int j = 0; j < GNN_KERNEL_F; j++) {
		bool zero = m->kind == GNN_LEARNED_ONLY &&
			    gnn_kernel_feature_analytic(j);
		in_lo[2 * H + j] = zero ? 0 : m->kern_norm[j].lo;
		in_hi[2 * H + j] = zero ? 0 : m->kern_norm[j].hi;
	}
	finite = box_layer(in_lo, in_hi, 2 * H + GNN_KERNEL_F, t.w1, t.b1,
			   m->head, true, hid_lo, hid_hi) && finite;
	double rlo, rhi;
	finite = box_layer(hid_lo, hid_hi, m->head, t.w2, t.b2, 1, false, &rlo,
			   &rhi) && finite;
	*lo = finite ? rlo : NAN;
	*hi = finite ? rhi : NAN;
}

/* ---- the head ----------------------------------------------------------------- */

double gnn_head(const struct gnn_model *m, const double *emb,
		const double *kf, struct gnn_head_acts *a)
{
	int H2 = 2 * m->hidden, nin = H2 + GNN_KERNEL_F;
	a->excess = 0;
	for (int j = 0; j < GNN_KERNEL_F; j++) {
		const struct gnn_norm *nm = &m->kern_norm[j];
		double z = (kf[j] - nm->mean) / nm->std;
		if (m->kind == GNN_LEARNED_ONLY && gnn_kernel_feature_analytic(j))
			z = 0;
		else
			a->excess = fmax(a->excess, beyond(z, nm));
		a->kz[j] = z;
	}
	memcpy(a->in, emb, (size_t)H2 * sizeof *a->in);
	memcpy(a->in + H2, a->kz, sizeof a->kz);
	struct gnn_tensors t;
	gnn_model_bind(m, m->params, &t);
	memcpy(a->hid, t.b1, (size_t)m->head * sizeof *a->hid);
	NL(cblas_dgemv)(CblasRowMajor, CblasTrans, nin, m->head, 1.0, t.w1, m->head,
		    a->in, 1, 1.0, a->hid, 1);
	double raw = t.b2[0];
	for (int j = 0; j < m->head; j++) {
		a->hid[j] = a->hid[j] > 0 ? a->hid[j] : 0;
		raw += a->hid[j] * t.w2[j];
	}
	a->raw = raw;
	return raw;
}

void gnn_head_backward(const struct gnn_model *m, const double *emb,
		       const struct gnn_head_acts *a, double d_raw,
		       const struct gnn_tensors *grad, double *d_emb)
{
	(void)emb; /* a->in holds it */
	int H2 = 2 * m->hidden, nin = H2 + GNN_KERNEL_F;
	struct gnn_tensors t;
	gnn_model_bind(m, m->params, &t);
	double dhid[GNN_MAX_HIDDEN], din[2 * GNN_MAX_HIDDEN + GNN_KERNEL_F];
	grad->b2[0] += d_raw;
	for (int j = 0; j < m->head; j++) {
		grad->w2[j] += d_raw * a->hid[j];
		dhid[j] = a->hid[j] > 0 ? d_raw * t.w2[j] : 0;
		grad->b1[j] += dhid[j];
	}
	NL(cblas_dger)(CblasRowMajor, nin, m->head, 1.0, a->in, 1, dhid, 1,
		   grad->w1, m->head);
	NL(cblas_dgemv)(CblasRowMajor, CblasNoTrans, nin, m->head, 1.0, t.w1,
		    m->head, dhid, 1, 0.0, din, 1);
	for (int j = 0; j < H2; j++)
		d_emb[j] += din[j];
}

/*
 * r = s x clip x tanh(raw / clip), s = trust x exp(-excess)   (residual)
 * The tanh bounds the correction to a factor e^clip either way; s fades it
 * out for a kernel whose standardised features lie beyond the training
 * range (excess in training standard deviations: one beyond keeps 37%) and
 * scales it by trust for a mix key the model does not know (novel_trust,
 * fitted on held-out kernels: how far a correction carries to kernels of
 * an op mix the network saw in fewer than two training groups). Learned-only: log time = raw, unbounded.
 */
double gnn_output(const struct gnn_model *m, double raw, double excess,
		  double trust, double *dr_draw)
{
	if (m->kind == GNN_LEARNED_ONLY) {
		if (dr_draw)
			*dr_draw = 1.0;
		return raw;
	}
	double s = trust * exp(-excess), th = tanh(raw / m->clip);
	if (dr_draw)
		*dr_draw = s * (1.0 - th * th);
	return s * m->clip * th;
}
