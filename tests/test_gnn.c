/*
 * test_gnn.c: the learned residual's network and training (learned/).
 * - The hand-written backward passes against central finite differences
 *   for every parameter: h = 1e-6 on values of order 1 leaves a truncation
 *   error of order h^2 = 1e-12 and a rounding error of order 1e-16 / h =
 *   1e-10, so agreement to 1e-6 absolute + 1e-5 relative is a real check
 *   (a wrong term is off by its own size, order 1e-2 and more).
 * - A kernel's graph from HLO text: nodes, operand and user edges and the
 *   features written by hand below.
 * - The output's range over the training range, worked by hand, and the
 *   analytic time standing in for a learned time that is not finite.
 * - The model file: a bit-exact round trip, and every refusal with its
 *   message (truncated, corrupted, another version or schema, trailing
 *   bytes), a failed save leaving nothing behind.
 * - Training end to end on synthetic rows whose measured time is the
 *   analytic one times a factor set by one kernel feature: the residual
 *   must learn it (held-out MAPE far below the analytic one), bit for bit
 *   the same for the same seed, and not for another.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "gnn.h"
#include "hybrid.h"
#include "test_util.h"

/* A 5-node graph: 0, 1 parameters; 2 = f(0, 1); 3 = g(2); 4 = h(2, 3). */
static void small_graph(struct gnn_graph *g)
{
	static const int in_off[] = {0, 0, 0, 2, 3, 5};
	static const int in_idx[] = {0, 1, 2, 2, 3};
	static const int out_off[] = {0, 1, 2, 4, 5, 5};
	static const int out_idx[] = {2, 2, 3, 4, 4};
	g->n = 5;
	g->x = malloc(5 * GNN_NODE_F * sizeof *g->x);
	g->in_off = malloc(sizeof in_off);
	g->in_idx = malloc(sizeof in_idx);
	g->out_off = malloc(sizeof out_off);
	g->out_idx = malloc(sizeof out_idx);
	memcpy(g->in_off, in_off, sizeof in_off);
	memcpy(g->in_idx, in_idx, sizeof in_idx);
	memcpy(g->out_off, out_off, sizeof out_off);
	memcpy(g->out_idx, out_idx, sizeof out_idx);
	unsigned s = 12345;
	for (int i = 0; i < 5 * GNN_NODE_F; i++) {
		s = s * 1103515245u + 12345u;
		g->x[i] = ((s >> 8) % 2001) / 1000.0 - 1.0;
	}
}

static void free_graph(struct gnn_graph *g)
{
	free(g->x);
	free(g->in_off);
	free(g->in_idx);
	free(g->out_off);
	free(g->out_idx);
}

/* The scalar checked: the head's raw output on the graph's embedding. */
static double loss(const struct gnn_model *m, const struct gnn_graph *g,
		   const double *kf)
{
	struct gnn_graph_acts a = {0};
	assert_int_equal(gnn_embed(m, g, &a), TS_OK);
	struct gnn_head_acts h;
	double raw = gnn_head(m, a.emb, kf, &h);
	gnn_graph_acts_free(&a);
	return raw;
}

static void test_gradients(void **state)
{
	(void)state;
	struct gnn_model m;
	assert_int_equal(gnn_model_alloc(&m, GNN_RESIDUAL, 6, 3, 5), TS_OK);
	assert_int_equal(gnn_model_init(&m, 7, NULL), TS_OK);
	/* non-trivial standardisation, wide ranges (no fading) */
	for (int j = 0; j < GNN_NODE_F; j++)
		m.node_norm[j] = (struct gnn_norm){0.1, 0.9, -100, 100};
	for (int j = 0; j < GNN_KERNEL_F; j++)
		m.kern_norm[j] = (struct gnn_norm){-0.2, 1.3, -100, 100};
	/* biases away from zero so that ReLUs are live */
	struct gnn_tensors p;
	gnn_model_bind(&m, m.params, &p);
	for (int l = 0; l < m.layers; l++)
		for (int j = 0; j < m.hidden; j++)
			p.b[l][j] = 0.05 * (j + 1);
	for (int j = 0; j < m.head; j++) {
		p.b1[j] = 0.1;
		p.w2[j] = 0.3 * (j % 2 ? 1 : -1) + 0.05 * j;
	}
	struct gnn_graph g;
	small_graph(&g);
	double kf[GNN_KERNEL_F];
	for (int j = 0; j < GNN_KERNEL_F; j++)
		kf[j] = 0.37 * j - 3.0;

	double *grad = calloc(m.n_params, sizeof *grad);
	struct gnn_tensors gt;
	gnn_model_bind(&m, grad, &gt);
	struct gnn_graph_acts a = {0};
	assert_int_equal(gnn_embed(&m, &g, &a), TS_OK);
	struct gnn_head_acts h;
	gnn_head(&m, a.emb, kf, &h);
	double d_emb[2 * GNN_MAX_HIDDEN] = {0};
	gnn_head_backward(&m, a.emb, &h, 1.0, &gt, d_emb);
	gnn_embed_backward(&m, &g, &a, d_emb, &gt);
	gnn_graph_acts_free(&a);

	int nonzero = 0;
	for (size_t i = 0; i < m.n_params; i++) {
		double keep = m.params[i], hh = 1e-6;
		m.params[i] = keep + hh;
		double up = loss(&m, &g, kf);
		m.params[i] = keep - hh;
		double dn = loss(&m, &g, kf);
		m.params[i] = keep;
		double fd = (up - dn) / (2 * hh);
		assert_near(grad[i], fd, 1e-6 + 1e-5 * fabs(fd));
		nonzero += fabs(grad[i]) > 1e-8;
	}
	/* every layer takes part: most parameters have a gradient */
	assert_true(nonzero > (int)m.n_params / 2);
	free(grad);
	free_graph(&g);
	gnn_model_free(&m);
}

/* The output's bound and its fading outside the training range. */
static void test_output(void **state)
{
	(void)state;
	struct gnn_model m;
	assert_int_equal(gnn_model_alloc(&m, GNN_RESIDUAL, 4, 1, 4), TS_OK);
	m.clip = 0.5;
	double dr;
	/* r = clip tanh(raw / clip): 0.5 tanh(2) = 0.48201379 */
	assert_near(gnn_output(&m, 1.0, 0.0, 1.0, &dr), 0.5 * tanh(2.0), 1e-12);
	assert_near(dr, 1.0 - tanh(2.0) * tanh(2.0), 1e-12);
	/* one standard deviation beyond the range keeps e^-1 of it */
	assert_near(gnn_output(&m, 1.0, 1.0, 1.0, NULL),
		    exp(-1.0) * 0.5 * tanh(2.0), 1e-12);
	/* a novel op mix's trust scales it, the slope too */
	assert_near(gnn_output(&m, 1.0, 0.0, 0.3, &dr), 0.3 * 0.5 * tanh(2.0),
		    1e-12);
	assert_near(dr, 0.3 * (1.0 - tanh(2.0) * tanh(2.0)), 1e-12);
	/* saturated: a huge raw value gives the clip itself, with no slope */
	assert_near(gnn_output(&m, 1e9, 0.0, 1.0, &dr), 0.5, 1e-15);
	assert_near(dr, 0.0, 1e-15);
	assert_near(gnn_output(&m, -1e9, 0.0, 1.0, NULL), -0.5, 1e-15);
	m.kind = GNN_LEARNED_ONLY;
	assert_near(gnn_output(&m, 7.5, 3.0, 0.0, &dr), 7.5, 0);
	assert_near(dr, 1.0, 0);
	gnn_model_free(&m);
}

/*
 * gnn_model_raw_range on a model of width 1 with every parameter 0 but
 * four, worked by hand:
 *   node feature 0 in [-1, 2], its self weight 3: the layer's sum in
 *     [-3, 6] (the operand and user means, in [-1, 2] too, weigh 0),
 *     after ReLU [0, 6]; the pooled mean and max in [0, 6];
 *   head: 0.5 mean - 1 max + 1 in [0 - 6 + 1, 3 - 0 + 1] = [-5, 4], after
 *     ReLU [0, 4]; raw = -2 hid + 0.25 in [-7.75, 0.25].
 * An output weight of DBL_MAX makes it 0.25 - 4 DBL_MAX: not finite.
 * Then the fallback: a learned-only model whose raw is 800 everywhere (a
 * time of e^800 ns: inf) gives the analytic time and sets the flag; raw 5
 * gives e^5 ns and leaves it; a residual one with a NaN output bias falls
 * back too.
 */
static void test_range_and_fallback(void **state)
{
	(void)state;
	struct gnn_model m;
	assert_int_equal(gnn_model_alloc(&m, GNN_RESIDUAL, 1, 1, 1), TS_OK);
	struct gnn_tensors t;
	gnn_model_bind(&m, m.params, &t);
	m.node_norm[0].lo = -1;
	m.node_norm[0].hi = 2;
	t.w[0][0] = 3;    /* self block, feature 0, hidden 0 */
	t.w1[0] = 0.5;    /* pooled mean */
	t.w1[1] = -1;     /* pooled max */
	t.b1[0] = 1;
	t.w2[0] = -2;
	t.b2[0] = 0.25;
	double lo, hi;
	gnn_model_raw_range(&m, &lo, &hi);
	assert_near(lo, -7.75, 0); /* sums of small binary fractions: exact */
	assert_near(hi, 0.25, 0);
	t.w2[0] = DBL_MAX;
	gnn_model_raw_range(&m, &lo, &hi);
	assert_true(isnan(lo) && isnan(hi));
	gnn_model_free(&m);

	struct tu_built b;
	tu_build("HloModule m\nENTRY e {\n"
		 "  p = f32[256,128]{1,0} parameter(0)\n"
		 "  ROOT r = f32[256,128]{1,0} exponential(p)\n}\n",
		 &b);
	const struct sim_kernel *k = tu_kernel(&b, "r");
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw)) {
		tu_built_free(&b);
		skip();
	}
	struct sim_estimate est;
	struct ts_diag d = {0};
	assert_int_equal(sim_kernel_estimate(k, &hw, NULL, &est, &d), TS_OK);
	assert_true(est.time_ns > 0);
	static const struct {
		enum gnn_kind kind;
		double b2, want; /* want: NaN for the analytic time */
	} cases[] = {
		{GNN_LEARNED_ONLY, 800, NAN},
		{GNN_LEARNED_ONLY, 5, 148.4131591025766}, /* e^5 */
		{GNN_RESIDUAL, NAN, NAN},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		assert_int_equal(gnn_model_alloc(&m, cases[c].kind, 1, 1, 1),
				 TS_OK);
		gnn_model_bind(&m, m.params, &t);
		t.b2[0] = cases[c].b2;
		struct hyb_embedding e;
		assert_int_equal(hyb_embed(&m, k, &e), TS_OK);
		bool fell_back = false;
		double ns = hyb_kernel_predict(&m, &e, k, &est, &hw, false,
					       &fell_back);
		bool analytic = isnan(cases[c].want);
		assert_true(fell_back == analytic);
		assert_near(ns, analytic ? est.time_ns : cases[c].want,
			    1e-9 * ns); /* exp to a few ulps */
		gnn_model_free(&m);
	}
	tu_built_free(&b);
}

/* FNV-1a 64, written out here from its definition (not the reader's). */
static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	return h;
}

/* The graph of a small fusion. */
static void test_graph(void **state)
{
	(void)state;
	struct tu_built b;
	tu_build("HloModule m\n"
		 "f {\n"
		 "  a = f32[256,384]{1,0} parameter(0)\n"
		 "  w = f32[384,128]{1,0} parameter(1)\n"
		 "  d = f32[256,128]{1,0} dot(a, w), lhs_contracting_dims={1}, "
		 "rhs_contracting_dims={0}\n"
		 "  ROOT e = f32[256,128]{1,0} exponential(d)\n"
		 "}\n"
		 "ENTRY e {\n"
		 "  p = f32[256,384]{1,0} parameter(0)\n"
		 "  q = f32[384,128]{1,0} parameter(1)\n"
		 "  ROOT r = f32[256,128]{1,0} fusion(p, q), kind=kOutput, calls=f\n"
		 "}\n",
		 &b);
	struct gnn_graph g;
	assert_int_equal(gnn_graph_build(tu_kernel(&b, "r"), &g), TS_OK);
	assert_int_equal(g.n, 4);
	/* d (node 2) reads a and w; e (3) reads d */
	assert_int_equal(g.in_off[3] - g.in_off[2], 2);
	assert_int_equal(g.in_idx[g.in_off[3]], 2);
	assert_int_equal(g.out_off[1] - g.out_off[0], 1);
	assert_int_equal(g.out_idx[g.out_off[0]], 2);
	const double *d = g.x + 2 * GNN_NODE_F, *e = g.x + 3 * GNN_NODE_F;
	assert_near(d[5], 1, 0);                 /* class_contraction */
	assert_near(d[15], 1, 0);                /* op_dot */
	assert_near(d[32], log2(385.0), 1e-12);  /* log_contraction: K = 384 */
	assert_near(d[35], log2(1.0 + 2.0 * 256 * 128 * 384), 1e-9); /* flops */
	assert_near(e[2], 1, 0);                 /* class_transcendental */
	assert_near(e[11], 1, 0);                /* vpu_transcendental */
	assert_near(e[23], 1, 0);                /* is_root */
	assert_near(e[24], log2(1.0 + 256 * 128), 1e-12);
	assert_near(e[26], log2(129.0), 1e-12);  /* minor dim 128 */
	assert_near(e[28], 0, 0);                /* 128 lanes: no padding */
	/* its op mix: dot and exponential (parameters do no device work) */
	uint64_t mix = fnv((const unsigned char *)"dot", 3) ^
		       fnv((const unsigned char *)"exponential", 11);
	assert_true(g.ops == mix);
	/* a model that knows the mix corrects it fully; one that does not
	 * scales the correction by its novel trust */
	struct gnn_model m;
	assert_int_equal(gnn_model_alloc(&m, GNN_RESIDUAL, 4, 1, 4), TS_OK);
	struct hyb_embedding he;
	assert_int_equal(hyb_embed(&m, tu_kernel(&b, "r"), &he), TS_OK);
	assert_true(hyb_novel(&m, &he));
	m.known = ts_malloc(sizeof *m.known);
	assert_non_null(m.known);
	m.known[0] = mix;
	m.n_known = 1;
	assert_false(hyb_novel(&m, &he));
	m.kind = GNN_LEARNED_ONLY; /* no correction to scale */
	m.known[0] = mix ^ 1;
	assert_false(hyb_novel(&m, &he));
	gnn_model_free(&m);
	gnn_graph_free(&g);
	tu_built_free(&b);
	/* the schema's names are unique and the hash sees them */
	for (int i = 0; i < GNN_NODE_F; i++)
		for (int j = i + 1; j < GNN_NODE_F; j++)
			assert_string_not_equal(gnn_node_feature_name(i),
						gnn_node_feature_name(j));
	for (int i = 0; i < GNN_KERNEL_F; i++)
		for (int j = i + 1; j < GNN_KERNEL_F; j++)
			assert_string_not_equal(gnn_kernel_feature_name(i),
						gnn_kernel_feature_name(j));
	assert_true(gnn_schema_hash() != 0);
}

/*
 * Synthetic rows: 40 kernels (groups), 6 configs each; one shared graph
 * per kernel; kernel feature 20 (log_steps) = c, analytic time 1000 ns x
 * (1 + c), measured = analytic x exp(0.5 sin(c) + 0.3 [kernel is odd])
 * where kernel parity is node feature 0 of its graph. The analytic model's
 * MAPE is the mean of |exp(.) - 1| (about 25%); a residual that learned
 * the factor is far below it.
 */
static void synth(struct gnn_data *d)
{
	memset(d, 0, sizeof *d);
	d->n_sets = 1;
	strcpy(d->sets[0], "synthetic");
	for (int k = 0; k < 40; k++) {
		struct gnn_graph g;
		small_graph(&g);
		for (int v = 0; v < g.n; v++)
			g.x[(size_t)v * GNN_NODE_F] = k % 2;
		/* ts-allocated copies for gnn_data_free */
		struct gnn_graph t = g;
		t.x = ts_malloc(5 * GNN_NODE_F * sizeof *t.x);
		t.in_off = ts_malloc(6 * sizeof(int));
		t.in_idx = ts_malloc(5 * sizeof(int));
		t.out_off = ts_malloc(6 * sizeof(int));
		t.out_idx = ts_malloc(5 * sizeof(int));
		memcpy(t.x, g.x, 5 * GNN_NODE_F * sizeof *t.x);
		memcpy(t.in_off, g.in_off, 6 * sizeof(int));
		memcpy(t.in_idx, g.in_idx, 5 * sizeof(int));
		memcpy(t.out_off, g.out_off, 6 * sizeof(int));
		memcpy(t.out_idx, g.out_idx, 5 * sizeof(int));
		free_graph(&g);
		int gi;
		assert_int_equal(gnn_data_add_graph(d, &t, &gi), TS_OK);
		for (int c = 0; c < 6; c++) {
			double cf = 0.5 * c + 0.1 * (k % 5);
			struct gnn_item it = {.graph = gi, .mult = 1};
			it.kf[20] = cf;
			it.analytic_ns = 1000.0 * (1 + cf);
			struct gnn_sample s = {
				.first = d->n_items, .n = 1,
				.measured_ns = it.analytic_ns *
					       exp(0.5 * sin(cf) + 0.3 * (k % 2)),
				.set = 0, .group = k, .rank_group = k};
			assert_int_equal(gnn_data_add_item(d, &it), TS_OK);
			assert_int_equal(gnn_data_add_sample(d, &s), TS_OK);
		}
	}
	d->n_groups = 40;
}

static void test_train(void **state)
{
	(void)state;
	struct gnn_data d;
	synth(&d);
	/* hold out kernels 0-7 entirely: judged on kernels never seen */
	bool mask[240];
	for (int s = 0; s < d.n_samples; s++)
		mask[s] = d.samples[s].group >= 8;
	struct gnn_train_opts o;
	gnn_train_opts_default(&o);
	o.epochs = 150;
	o.patience = 150;
	o.hidden = 8;
	o.head = 16;
	o.train_mask = mask;
	struct gnn_model m1, m2, m3;
	struct ts_diag diag = {0};
	assert_int_equal(gnn_train(&d, &o, &m1, &diag), TS_OK);
	double ape_a = 0, ape_h = 0;
	int n = 0;
	for (int s = 0; s < d.n_samples; s++) {
		if (mask[s])
			continue;
		double meas = d.samples[s].measured_ns;
		double ana = d.items[d.samples[s].first].analytic_ns;
		double hyb = gnn_predict_sample(&m1, &d, s);
		ape_a += fabs(ana - meas) / meas;
		ape_h += fabs(hyb - meas) / meas;
		n++;
	}
	ape_a /= n;
	ape_h /= n;
	print_message("held-out kernels: analytic MAPE %.1f%%, hybrid %.1f%%\n",
		      100 * ape_a, 100 * ape_h);
	assert_true(ape_a > 0.15);
	assert_true(ape_h < ape_a / 3);
	/* the same seed: the same bits; another seed: other parameters */
	assert_int_equal(gnn_train(&d, &o, &m2, &diag), TS_OK);
	assert_int_equal(m1.n_params, m2.n_params);
	assert_memory_equal(m1.params, m2.params,
			    m1.n_params * sizeof *m1.params);
	assert_true(m1.novel_trust == m2.novel_trust);
	assert_int_equal(m1.n_known, m2.n_known);
	assert_memory_equal(m1.known, m2.known,
			    (size_t)m1.n_known * sizeof *m1.known);
	assert_true(m1.summary.val_loss == m2.summary.val_loss);
	o.seed = 2;
	assert_int_equal(gnn_train(&d, &o, &m3, &diag), TS_OK);
	assert_memory_not_equal(m1.params, m3.params,
				m1.n_params * sizeof *m1.params);
	/* 32 kernels may train; round(0.2 x 32) = 6 of them validate */
	assert_int_equal(m1.summary.rows[0], 6 * (32 - 6));
	gnn_model_free(&m1);
	gnn_model_free(&m2);
	gnn_model_free(&m3);
	gnn_data_free(&d);
}

/*
 * Kernels of an op mix training did not show in two groups. synth's
 * kernels 28..39 get a mix each of their own (ops = 1000 + k), the others
 * share mix 0; a fifth of the groups is held out and decides novel_trust.
 * When the own-mix kernels obey the same law as the rest, the correction
 * carries to them and is kept (trust >= 0.5); when they obey its inverse
 * (measured = analytic x exp(-law)), the correction learned from the rest
 * hurts them and is dropped (trust 0: their estimate is the analytic one,
 * exactly).
 */
static void test_novel(void **state)
{
	(void)state;
	for (int law = 1; law >= -1; law -= 2) {
		struct gnn_data d;
		synth(&d);
		for (int k = 28; k < 40; k++)
			d.graphs[k].ops = 1000 + (uint64_t)k;
		for (int s = 0; s < d.n_samples && law < 0; s++)
			if (d.samples[s].group >= 28) {
				double a = d.items[d.samples[s].first].analytic_ns;
				d.samples[s].measured_ns =
					a * a / d.samples[s].measured_ns;
			}
		struct gnn_train_opts o;
		gnn_train_opts_default(&o);
		o.epochs = 150;
		o.patience = 150;
		o.hidden = 8;
		o.head = 16;
		struct gnn_model m;
		struct ts_diag diag = {0};
		assert_int_equal(gnn_train(&d, &o, &m, &diag), TS_OK);
		/* mix 0: many groups; an own mix: one group, never known */
		assert_int_equal(m.n_known, 1); /* once, of all its samples */
		assert_true(gnn_model_knows(&m, 0));
		/* the same mix, host-timed: another key, not known */
		double kf[GNN_KERNEL_F] = {0};
		assert_string_equal(gnn_kernel_feature_name(GNN_KF_HOST_TIMED),
				    "host_timed");
		assert_true(gnn_mix_key(0, kf) == 0);
		assert_true(gnn_trust(&m, 0, kf) == 1.0);
		kf[GNN_KF_HOST_TIMED] = 1;
		assert_false(gnn_model_knows(&m, gnn_mix_key(0, kf)));
		assert_true(gnn_trust(&m, 0, kf) == m.novel_trust);
		for (int k = 28; k < 40; k++)
			assert_false(gnn_model_knows(&m, 1000 + (uint64_t)k));
		assert_true(m.summary.novel_groups >= 2);
		print_message("own mixes %s: trust %.1f from %d held-out "
			      "groups\n", law > 0 ? "with the law" : "inverse",
			      m.novel_trust, m.summary.novel_groups);
		if (law > 0) {
			assert_true(m.novel_trust >= 0.5);
		} else {
			assert_true(m.novel_trust == 0.0);
			for (int s = 0; s < d.n_samples; s++)
				if (d.samples[s].group >= 28)
					assert_true(gnn_predict_sample(&m, &d, s) ==
						    d.items[d.samples[s].first]
							    .analytic_ns);
		}
		gnn_model_free(&m);
		gnn_data_free(&d);
	}
	/* one own-mix kernel: at most one held-out group can be novel, too
	 * little to judge by, so the trust is 0 even though it obeys the law */
	struct gnn_data d;
	synth(&d);
	d.graphs[39].ops = 1039;
	struct gnn_train_opts o;
	gnn_train_opts_default(&o);
	o.epochs = 20;
	o.hidden = 8;
	o.head = 16;
	struct gnn_model m;
	struct ts_diag diag = {0};
	assert_int_equal(gnn_train(&d, &o, &m, &diag), TS_OK);
	assert_true(m.summary.novel_groups <= 1);
	assert_true(m.novel_trust == 0.0);
	gnn_model_free(&m);
	gnn_data_free(&d);
}

/* Rewrites the checksum of a file image after an edit. */
static void reseal(unsigned char *b, size_t n)
{
	uint64_t h = fnv(b, n - 8);
	for (int i = 0; i < 8; i++)
		b[n - 8 + i] = (unsigned char)(h >> (8 * i));
}

static void expect_refusal(const unsigned char *b, size_t n, const char *msg)
{
	struct gnn_model m;
	struct ts_diag d = {0};
	assert_int_equal(gnn_model_read(b, n, "m.gnn", &m, &d), TS_ERR_PARSE);
	if (!strstr(d.msg, msg))
		fail_msg("expected '%s' in '%s'", msg, d.msg);
	assert_string_equal(d.file, "m.gnn");
	assert_null(m.params);
}

static void test_file(void **state)
{
	(void)state;
	struct gnn_model m, back;
	assert_int_equal(gnn_model_alloc(&m, GNN_LEARNED_ONLY, 5, 2, 3), TS_OK);
	assert_int_equal(gnn_model_init(&m, 3, NULL), TS_OK);
	m.clip = 0.75;
	m.node_norm[4] = (struct gnn_norm){1.5, 2.5, -0.5, 3.25};
	m.kern_norm[39] = (struct gnn_norm){-1, 0.125, -2, 2};
	m.summary.n_sets = 2;
	strcpy(m.summary.sets[0], "tpuv4-ops");
	strcpy(m.summary.sets[1], "tpugraphs-tile-v3");
	m.summary.rows[0] = 4428;
	m.summary.rows[1] = 752;
	m.summary.seed = 42;
	m.summary.epochs = 17;
	m.summary.best_epoch = 11;
	m.summary.train_loss = 0.0625;
	m.summary.val_loss = 0.015625;
	char path[512];
	tu_tmp_path(path, sizeof path, "test_gnn", ".gnn");
	struct ts_diag d = {0};
	assert_int_equal(gnn_model_save(&m, path, &d), TS_OK);
	assert_int_equal(gnn_model_load(path, &back, &d), TS_OK);
	assert_int_equal(back.kind, GNN_LEARNED_ONLY);
	assert_int_equal(back.hidden, 5);
	assert_int_equal(back.layers, 2);
	assert_int_equal(back.head, 3);
	assert_int_equal(back.n_params, m.n_params);
	assert_memory_equal(back.params, m.params, m.n_params * sizeof *m.params);
	assert_memory_equal(back.node_norm, m.node_norm, sizeof m.node_norm);
	assert_memory_equal(back.kern_norm, m.kern_norm, sizeof m.kern_norm);
	assert_memory_equal(&back.summary, &m.summary, sizeof m.summary);
	assert_true(back.clip == 0.75);
	gnn_model_free(&back);

	char *text;
	size_t n;
	assert_int_equal(ts_read_file(path, &text, &n, &d), TS_OK);
	unlink(path);
	/* header 8 + 4 + 8 + 4 x 6 + 8 = 52 bytes, then the summary */
	unsigned char *b = malloc(n + 1);
	memcpy(b, text, n);
	expect_refusal(b, 5, "truncated at byte 0: expected the magic");
	expect_refusal(b, 10, "truncated at byte 8: expected the format version");
	expect_refusal(b, 40, "checksum mismatch");
	expect_refusal(b, n - 1, "checksum mismatch");
	b[0] = 'X';
	expect_refusal(b, n, "not a tpusim model file (bad magic)");
	b[0] = 'T';
	b[n - 20] ^= 0x40; /* a parameter bit */
	expect_refusal(b, n, "checksum mismatch: the file is corrupted");
	b[n - 20] ^= 0x40;
	b[8] = 3; /* version 3 */
	reseal(b, n);
	expect_refusal(b, n, "format version 3, this tpusim reads 2");
	b[8] = 2;
	b[12] ^= 1; /* the schema hash */
	reseal(b, n);
	expect_refusal(b, n, "this tpusim has");
	expect_refusal(b, n, "retrain it");
	b[12] ^= 1;
	b[28] = 7; /* kind */
	reseal(b, n);
	expect_refusal(b, n, "model kind 7 is neither residual (0) nor "
			     "learned-only (1)");
	b[28] = 1;
	b[32] = 200; /* hidden width */
	reseal(b, n);
	expect_refusal(b, n, "sizes out of range: hidden 200");
	b[32] = 5;
	/* one byte more, sealed: the reader sees it after the parameters */
	unsigned char *c = malloc(n + 1);
	memcpy(c, b, n - 8);
	c[n - 8] = 0;
	reseal(c, n + 1);
	expect_refusal(c, n + 1, "1 bytes after the parameters");
	free(c);
	/* values that pass as numbers but would make a NaN: a residual
	 * model's clip above GNN_MAX_CLIP; node feature 4's std below training's
	 * floor, its range reversed. The summary's 2 sets put that norm at
	 * byte 52 + 4 + (4 + 9 + 4) + (4 + 17 + 4) + 8 + 4 + 4 + 8 + 8 + 4 +
	 * 4 x 32 = 262 (mean, std, lo, hi) */
	double x;
	memcpy(&x, b + 270, 8);
	assert_true(x == 2.5);
	b[28] = 0; /* residual */
	x = 6.0;
	memcpy(b + 44, &x, 8);
	reseal(b, n);
	expect_refusal(b, n, "clip must be in (0, 5], got 6");
	x = 0.75;
	memcpy(b + 44, &x, 8);
	x = 1e-10;
	memcpy(b + 270, &x, 8);
	reseal(b, n);
	expect_refusal(b, n, "node feature 4 has a standard deviation below "
			     "1e-9");
	x = 2.5;
	memcpy(b + 270, &x, 8);
	x = -4;
	memcpy(b + 286, &x, 8);
	reseal(b, n);
	expect_refusal(b, n, "node feature 4 has a range from -0.5 to -4");
	x = 3.25;
	memcpy(b + 286, &x, 8);
	/* a NaN parameter, sealed */
	memset(b + n - 16, 0xff, 8);
	reseal(b, n);
	expect_refusal(b, n, "the parameters at byte");
	free(b);
	ts_free(text);

	/* a file larger than any model is refused before it is read */
	char dir[] = "/tmp/tpusim_test_gnn_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char big[600], sub[640];
	snprintf(big, sizeof big, "%s/big.gnn", dir);
	FILE *f = fopen(big, "wb");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(truncate(big, (off_t)1 << 30), 0); /* sparse */
	assert_int_equal(gnn_model_load(big, &back, &d), TS_ERR_PARSE);
	if (!strstr(d.msg, "1073741824 bytes: larger than any model file"))
		fail_msg("got '%s'", d.msg);
	unlink(big);
	/* a save that cannot happen (the target is a folder) fails and
	 * leaves no file behind */
	snprintf(big, sizeof big, "%s/m.gnn", dir);
	assert_int_equal(mkdir(big, 0700), 0);
	snprintf(sub, sizeof sub, "%s/keep", big);
	f = fopen(sub, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_not_equal(gnn_model_save(&m, big, &d), TS_OK);
	DIR *dp = opendir(dir);
	assert_non_null(dp);
	int entries = 0;
	for (struct dirent *de; (de = readdir(dp));)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	closedir(dp);
	assert_int_equal(entries, 1); /* m.gnn, the folder, alone */
	unlink(sub);
	rmdir(big);
	/* a model the reader would refuse is not written at all */
	m.params[0] = NAN;
	snprintf(big, sizeof big, "%s/nan.gnn", dir);
	assert_int_equal(gnn_model_save(&m, big, &d), TS_ERR_MISUSE);
	if (!strstr(d.msg, "not saved: the file would be refused on loading: "
			   "the parameters at byte"))
		fail_msg("got '%s'", d.msg);
	assert_int_not_equal(access(big, F_OK), 0);
	rmdir(dir);
	gnn_model_free(&m);
}

/*
 * The ranking term: for a pair whose measured slower member is predicted
 * ln_slow and faster one ln_fast, L = w ln(1 + e^-(ln_slow - ln_fast)).
 * Checked against its value by hand (ln 2 x w at a tie; w x ln(1 + e^-1)
 * with the order right by 1), its derivatives against central
 * differences of L, and their signs: the loss falls as the slower config
 * is predicted slower, so gradient descent pushes the pair apart the right
 * way (a sign flip of either derivative fails here).
 */
static void test_rank_pair(void **state)
{
	(void)state;
	double gs, gf;
	assert_near(gnn_rank_pair(2.0, 2.0, 0.5, &gs, &gf), 0.5 * log(2.0),
		    1e-15);
	assert_near(gs, -0.25, 1e-15); /* -w / (1 + e^0) */
	assert_near(gf, 0.25, 1e-15);
	assert_near(gnn_rank_pair(3.0, 2.0, 1.0, &gs, &gf),
		    log(1.0 + exp(-1.0)), 1e-15);
	static const double cases[][2] = {{1.0, 3.0}, {3.0, 1.0}, {0.0, 0.0},
					  {-2.0, 5.0}, {800.0, 0.0},
					  {0.0, 800.0}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		double s = cases[c][0], f = cases[c][1], h = 1e-6, a, b;
		double l = gnn_rank_pair(s, f, 0.7, &gs, &gf);
		assert_true(isfinite(l) && l >= 0);
		assert_true(gs <= 0 && gf >= 0);
		double num_s = (gnn_rank_pair(s + h, f, 0.7, &a, &b) -
				gnn_rank_pair(s - h, f, 0.7, &a, &b)) / (2 * h);
		double num_f = (gnn_rank_pair(s, f + h, 0.7, &a, &b) -
				gnn_rank_pair(s, f - h, 0.7, &a, &b)) / (2 * h);
		assert_near(gs, num_s, 1e-6);
		assert_near(gf, num_f, 1e-6);
	}
}

/*
 * Holding back (gnn_hold_back): on synth the residual is learnable (the
 * kernel's parity and a sine of its steps), so out of fold the hybrid
 * beats the analytic model on its one op mix and the mix stays known.
 * With every measurement equal to its analytic time the analytic error
 * is 0, any correction a fold model learns only adds error, and the mix
 * is dropped: its kernels are then novel.
 */
static void test_hold_back(void **state)
{
	(void)state;
	struct gnn_data d;
	synth(&d);
	struct gnn_train_opts o;
	gnn_train_opts_default(&o);
	o.epochs = 60;
	o.patience = 60;
	o.hidden = 8;
	o.head = 16;
	struct gnn_model m;
	struct ts_diag diag = {0};
	assert_int_equal(gnn_train(&d, &o, &m, &diag), TS_OK);
	int known = m.n_known;
	assert_true(known > 0);
	struct gnn_holdback hb;
	assert_int_equal(gnn_hold_back(&d, &o, 5, &m, &hb, &diag), TS_OK);
	assert_int_equal(hb.n_known_before, known);
	assert_true(hb.n_checked > 0);
	assert_int_equal(hb.n_dropped, 0);
	assert_int_equal(m.n_known, known);
	gnn_model_free(&m);
	for (int s = 0; s < d.n_samples; s++)
		d.samples[s].measured_ns = d.items[d.samples[s].first].analytic_ns;
	assert_int_equal(gnn_train(&d, &o, &m, &diag), TS_OK);
	known = m.n_known;
	assert_int_equal(gnn_hold_back(&d, &o, 5, &m, &hb, &diag), TS_OK);
	assert_true(hb.n_checked > 0);
	assert_int_equal(hb.n_dropped, hb.n_checked);
	assert_int_equal(m.n_known, known - hb.n_dropped);
	assert_int_equal(hb.n_samples, d.n_samples);
	gnn_model_free(&m);
	gnn_data_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradients),
		cmocka_unit_test(test_output),
		cmocka_unit_test(test_range_and_fallback),
		cmocka_unit_test(test_graph),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_train),
		cmocka_unit_test(test_novel),
		cmocka_unit_test(test_rank_pair),
		cmocka_unit_test(test_hold_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
