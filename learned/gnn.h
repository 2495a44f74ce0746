/*
 * gnn.h: the learned residual (docs/ARCHITECTURE.md "The learned residual").
 * A GraphSAGE-style network reads a kernel's HLO graph and its kernel
 * features and returns r; the hybrid estimate is analytic time x exp(r).
 * The same network without analytic inputs, predicting log time directly,
 * is the learned-only baseline.
 *
 *   gnn_features.c  the feature schema (versioned, hashed) and extraction
 *   gnn_model.c     parameters, forward and hand-written backward passes
 *   gnn_train.c     training: loss, Adam, early stopping, determinism
 *   gnn_file.c      the model file: save (temp file + rename) and load
 *
 * Dense maths through OpenBLAS (cblas_dgemm), random numbers through GSL.
 * Parameters, gradients and Adam moments are flat buffers with pointer
 * tables into them (gnn_model_bind). Everything here is deterministic for
 * a given seed and input order.
 */
#ifndef GNN_H
#define GNN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>

#include "sim.h"

/* ---- feature schema (gnn_features.c) ------------------------------------ */

#define GNN_SCHEMA_VERSION 1
#define GNN_NODE_F 36   /* features per node (gnn_node_feature_name) */
#define GNN_KERNEL_F 40 /* features per kernel (gnn_kernel_feature_name) */
#define GNN_KF_HOST_TIMED 39 /* the kernel feature "host_timed" (0 or 1) */

const char *gnn_node_feature_name(int i);
const char *gnn_kernel_feature_name(int i);
/* True for kernel features taken from the analytic model's estimate: the
 * learned-only model sees them as 0. */
bool gnn_kernel_feature_analytic(int i);
/* FNV-1a over the version and every feature name in order: a model file
 * trained on another schema is refused. */
uint64_t gnn_schema_hash(void);

/* A kernel's graph: its instructions as nodes (a fusion's fused
 * computation, an unfused op alone), operand edges inside the kernel. */
struct gnn_graph {
	int n;          /* nodes */
	double *x;      /* n x GNN_NODE_F raw features, row-major */
	int *in_off;    /* n + 1 offsets into in_idx: node v's operands */
	int *in_idx;
	int *out_off;   /* n + 1 offsets into out_idx: node v's users */
	int *out_idx;
	uint64_t ops;   /* its op mix: XOR of the FNV-1a hashes of the names of
	                   its distinct opcodes that do device work (not
	                   IR_CLASS_FREE); order-free, shape-free */
};

/* Builds k's graph (at most GNN_MAX_NODES nodes: a larger kernel keeps its
 * last GNN_MAX_NODES instructions, the root's neighbourhood). TS_ERR_NOMEM
 * only. */
#define GNN_MAX_NODES 512
enum ts_status gnn_graph_build(const struct sim_kernel *k,
			       struct gnn_graph *g);
void gnn_graph_free(struct gnn_graph *g);

/* Kernel features of k costed as e on hw; host_timed says the measurement
 * includes the host's dispatch (validation rows), false for run/tile. */
void gnn_kernel_features(const struct sim_kernel *k,
			 const struct sim_estimate *e,
			 const struct hw_spec *hw, bool host_timed,
			 double out[GNN_KERNEL_F]);

/* ---- the model (gnn_model.c) --------------------------------------------- */

enum gnn_kind { GNN_RESIDUAL = 0, GNN_LEARNED_ONLY = 1 };
const char *gnn_kind_name(enum gnn_kind k); /* "residual", "learned-only" */

#define GNN_MAX_LAYERS 4
#define GNN_MAX_HIDDEN 128
#define GNN_MAX_SETS 16
#define GNN_MAX_CLIP 5.0 /* |ln correction| bound a model file may hold: x148 */
#define GNN_MAX_KNOWN 65536 /* op mixes a model file may hold */

/* Standardisation of one feature: z = (x - mean) / std; lo, hi: the range
 * of z over the training rows (the correction shrinks outside it). */
struct gnn_norm {
	double mean, std, lo, hi;
};

/* What a model was trained on (written into the file, shown by tools). */
struct gnn_summary {
	int n_sets;
	char sets[GNN_MAX_SETS][64]; /* set names */
	int rows[GNN_MAX_SETS];      /* rows of each used in training */
	uint64_t seed;
	int epochs;                  /* epochs run (early stopping included) */
	int best_epoch;              /* the epoch whose parameters were kept */
	double train_loss;           /* at best_epoch */
	double val_loss;             /* held-out squared log error of the model
	                                as saved (best_epoch, novel_trust);
	                                NaN: no group was held out (no set
	                                had enough: gnn_train_opts
	                                val_fraction), none to judge by */
	int novel_groups;            /* held-out groups with a kernel of a novel
	                                op mix: novel_trust's evidence */
};

struct gnn_model {
	enum gnn_kind kind;
	int hidden;       /* node embedding width H */
	int layers;       /* message-passing layers (1..GNN_MAX_LAYERS) */
	int head;         /* head MLP hidden width */
	double clip;      /* |r| <= clip (residual): exp(r) in [e^-clip, e^clip] */
	struct gnn_norm node_norm[GNN_NODE_F];
	struct gnn_norm kern_norm[GNN_KERNEL_F];
	struct gnn_summary summary;
	/* Mix keys (gnn_mix_key) that the kernels of at least two training
	 * groups have, sorted; a kernel whose key is not among them is novel
	 * and its correction is scaled by novel_trust, fitted on held-out
	 * groups (gnn_train.c). */
	int n_known;
	uint64_t *known;  /* ts_malloc'd, n_known */
	double novel_trust; /* in [0, 1] */
	size_t n_params;
	double *params;   /* ts_malloc'd, n_params */
};

/* Pointer table into a flat buffer laid out like gnn_model.params (the
 * parameters themselves, a gradient, an Adam moment). */
struct gnn_tensors {
	double *w[GNN_MAX_LAYERS]; /* layer l: (3 x in_l) x H, row-major;
	                              rows: self, mean of operands, mean of
	                              users; in_0 = GNN_NODE_F, else H */
	double *b[GNN_MAX_LAYERS]; /* H */
	double *w1;                /* (2H + GNN_KERNEL_F) x head */
	double *b1;                /* head */
	double *w2;                /* head */
	double *b2;                /* 1 */
};

/* Sizes a model (params zeroed, norms identity); TS_ERR_MISUSE for sizes
 * out of range, TS_ERR_NOMEM. */
enum ts_status gnn_model_alloc(struct gnn_model *m, enum gnn_kind kind,
			       int hidden, int layers, int head);
/* A kernel's mix key: its graph's op mix with how it was timed (a
 * correction learned on host-timed rows, dispatch included, is not one
 * for the device time alone). kf: its raw kernel features. */
uint64_t gnn_mix_key(uint64_t ops, const double kf[GNN_KERNEL_F]);
/* True when key is among m's known mix keys. */
bool gnn_model_knows(const struct gnn_model *m, uint64_t key);
/* Its index in m->known (ascending), -1 when m does not know it. */
int gnn_model_known_index(const struct gnn_model *m, uint64_t key);
/* The scale of a kernel's correction for its mix key: 1 when m knows it,
 * else m->novel_trust. */
double gnn_trust(const struct gnn_model *m, uint64_t ops,
		 const double kf[GNN_KERNEL_F]);
/* Parameters drawn from GSL's mt19937 with seed: Glorot-uniform weights,
 * zero biases. TS_ERR_IO when GSL or OpenBLAS cannot be loaded (numlib.h,
 * d says why). */
enum ts_status gnn_model_init(struct gnn_model *m, uint64_t seed,
			      struct ts_diag *d);
void gnn_model_free(struct gnn_model *m);
size_t gnn_model_param_count(int hidden, int layers, int head);
void gnn_model_bind(const struct gnn_model *m, double *buf,
		    struct gnn_tensors *t);

/* Activations of one graph's embedding, kept for the backward pass. */
struct gnn_graph_acts {
	int n, cap;
	double *z0;      /* n x GNN_NODE_F standardised inputs */
	double *cat[GNN_MAX_LAYERS]; /* n x 3 in_l: [h, mean operands, mean users] */
	double *h[GNN_MAX_LAYERS];   /* n x H after ReLU */
	double *emb;     /* 2H: mean and max pooling of the last layer */
	int *argmax;     /* H: node of each max */
	double excess;   /* largest |z| beyond the training range, over nodes */
	uint64_t ops;    /* the graph's op mix (for gnn_trust) */
	double *scratch; /* n x max(3 in) for the backward pass */
};
void gnn_graph_acts_free(struct gnn_graph_acts *a);

/* Embeds g (standardising its features with m's norms). TS_ERR_NOMEM. */
enum ts_status gnn_embed(const struct gnn_model *m, const struct gnn_graph *g,
			 struct gnn_graph_acts *a);
/* Adds d(loss)/d(params) of the embedding to grad, given d(loss)/d(emb). */
void gnn_embed_backward(const struct gnn_model *m, const struct gnn_graph *g,
			struct gnn_graph_acts *a, const double *d_emb,
			const struct gnn_tensors *grad);

/* The head on one kernel: its standardised features and activations. */
struct gnn_head_acts {
	double kz[GNN_KERNEL_F];  /* standardised (analytic ones zero for
	                             learned-only) */
	double in[2 * GNN_MAX_HIDDEN + GNN_KERNEL_F];
	double hid[GNN_MAX_HIDDEN]; /* after ReLU */
	double raw;               /* head output */
	double excess;            /* largest |kz| beyond the training range */
};
/* Standardises the raw kernel features kf into a->kz and runs the head on
 * emb; returns the raw output. */
double gnn_head(const struct gnn_model *m, const double *emb,
		const double *kf, struct gnn_head_acts *a);
/* Adds the head's gradient for d(loss)/d(raw) = d_raw to grad and writes
 * d(loss)/d(emb) (2H) into d_emb (added to). */
void gnn_head_backward(const struct gnn_model *m, const double *emb,
		       const struct gnn_head_acts *a, double d_raw,
		       const struct gnn_tensors *grad, double *d_emb);

/*
 * The interval [*lo, *hi] holding raw (gnn_head's output) for every graph
 * and kernel whose standardised features lie in the training range (each
 * norm's [lo, hi]; analytic features 0 for learned-only; a mean over no
 * neighbours 0), by interval arithmetic through the layers: an upper
 * bound on what the parameters make of a kernel like those trained on,
 * loose by the cancellations it cannot see (the shipped model's:
 * [-527, 1090]). Not finite (NaN or inf) when the parameters overflow a
 * double on some such input.
 */
void gnn_model_raw_range(const struct gnn_model *m, double *lo, double *hi);

/*
 * The output of a kernel from its raw head output:
 *   residual:      r = s x clip x tanh(raw / clip),  s = trust x exp(-excess)
 *                  time = analytic x exp(r)
 *   learned-only:  log time (ns) = raw
 * excess = the larger of the graph's and the head's: how far (in training
 * standard deviations) the kernel lies outside the training range, so a
 * kernel unlike anything trained on keeps its analytic estimate; trust =
 * gnn_trust's (novel_trust for a mix key the model does not know).
 * Returns r (residual) or log time (learned-only); *dr_draw gets the
 * derivative for training (may be NULL).
 */
double gnn_output(const struct gnn_model *m, double raw, double excess,
		  double trust, double *dr_draw);

/* ---- training (gnn_train.c) --------------------------------------------- */

/* One kernel of a measured program. */
struct gnn_item {
	int graph;                   /* index into gnn_data.graphs */
	double kf[GNN_KERNEL_F];     /* raw kernel features */
	double analytic_ns;          /* its analytic time (one run) */
	double mult;                 /* runs per program */
};

/* One measured row: predicted = sum over its items of mult x time + extra. */
struct gnn_sample {
	int first, n;                /* items[first .. first + n) */
	double extra_ns;             /* the host term (host-timed rows) */
	double measured_ns;
	int set;                     /* index into gnn_data set names */
	int group;                   /* split unit: never straddles train and
	                                validation (a kernel of a tile set, a
	                                shape of an op set) */
	int rank_group;              /* configs of one kernel (ranking loss),
	                                -1 none */
};

struct gnn_data {
	int n_graphs, cap_graphs;
	struct gnn_graph *graphs;
	int n_items, cap_items;
	struct gnn_item *items;
	int n_samples, cap_samples;
	struct gnn_sample *samples;
	int n_sets;
	char sets[GNN_MAX_SETS][64];
	int n_groups;                /* groups are 0 .. n_groups - 1 */
};
void gnn_data_free(struct gnn_data *d);
/* Appends (growing the arrays); TS_ERR_NOMEM. The graph is moved in. */
enum ts_status gnn_data_add_graph(struct gnn_data *d, struct gnn_graph *g,
				  int *index);
enum ts_status gnn_data_add_item(struct gnn_data *d,
				 const struct gnn_item *it);
enum ts_status gnn_data_add_sample(struct gnn_data *d,
				   const struct gnn_sample *s);

struct gnn_train_opts {
	enum gnn_kind kind;
	uint64_t seed;
	int epochs;          /* at most this many */
	int patience;        /* stop after this many epochs without a better
	                        validation loss */
	double val_fraction; /* of the groups, drawn by seed */
	double lr;           /* Adam step */
	double rank_weight;  /* weight of the pairwise ranking loss */
	int hidden, layers, head;
	double clip;
	const bool *train_mask; /* NULL: every sample may train; else only
	                           samples with train_mask[i] (compare's folds) */
	FILE *progress;      /* epoch lines (a terminal), NULL none */
};
void gnn_train_opts_default(struct gnn_train_opts *o);
/* The fewest groups a set needs for gnn_train to hold one of them out
 * (round(val_fraction x groups) >= 1): 3 at the default 0.2. A training
 * set where no set has that many holds nothing out, and its model's
 * val_loss is NaN. */
int gnn_min_groups_held_out(const struct gnn_train_opts *o);

/* Fisher-Yates shuffle of a[0..n) with draws from rng (the order of
 * training samples, of validation groups, of compare's folds). */
void gnn_shuffle(int *a, int n, gsl_rng *rng);
/* The ranking loss of one pair (gnn_train.c): the measured slower member
 * predicted ln_slow, the faster ln_fast, weight w; returns the loss and its
 * derivatives by each prediction. */
double gnn_rank_pair(double ln_slow, double ln_fast, double w, double *g_slow,
		     double *g_fast);
/* Trains m (allocated and initialised here) on d. TS_ERR_MISUSE when no
 * sample can train, TS_ERR_NOMEM. */
enum ts_status gnn_train(const struct gnn_data *d,
			 const struct gnn_train_opts *o, struct gnn_model *m,
			 struct ts_diag *diag);

/* ---- holding back (gnn_holdback.c) --------------------------------------- */

#define GNN_HOLDBACK_FOLDS 5 /* out-of-fold check of a model's known mixes */

/* Fold of each of n_groups groups: a permutation drawn from GSL's mt19937
 * with seed, dealt round-robin into folds (folds 0: a fold per group).
 * TS_ERR_NOMEM, or TS_ERR_IO when GSL cannot be loaded (d says why). */
enum ts_status gnn_assign_folds(int n_groups, int folds, uint64_t seed,
				int *fold_of_group, struct ts_diag *d);

struct gnn_holdback {
	int n_known_before;  /* mixes m knew */
	int n_checked;       /* of those, with out-of-fold samples */
	int n_dropped;       /* dropped: corrected worse than analytic */
	int n_samples;       /* out-of-fold samples of the dropped mixes */
};
/* Drops from residual model m (trained on d with o: its train_mask too)
 * the known mixes whose out-of-fold correction, over folds of d's groups,
 * is worse than the analytic model (gnn_holdback.c says how). A
 * learned-only model is left as it is. TS_ERR_NOMEM, or gnn_train's. */
enum ts_status gnn_hold_back(const struct gnn_data *d,
			     const struct gnn_train_opts *o, int folds,
			     struct gnn_model *m, struct gnn_holdback *out,
			     struct ts_diag *diag);

/* The model's prediction of sample s of d (ns); NaN when a graph cannot be
 * embedded (out of memory). */
double gnn_predict_sample(const struct gnn_model *m, const struct gnn_data *d,
			  int s);

/* ---- the model file (gnn_file.c) ---------------------------------------- */

/* Writes m to path (a temp file beside it, then rename). */
enum ts_status gnn_model_save(const struct gnn_model *m, const char *path,
			      struct ts_diag *d);
/* The largest model file a reader takes (the largest sizes, GNN_MAX_KNOWN
 * mixes, 64 kB for the rest): a larger file is refused unread. */
size_t gnn_model_file_max(void);
/* Reads a model; a truncated, corrupted, wrong-version or wrong-schema
 * file is TS_ERR_PARSE with d naming the path and what is wrong. */
enum ts_status gnn_model_load(const char *path, struct gnn_model *m,
			      struct ts_diag *d);
/* The same from memory (the fuzz target). */
enum ts_status gnn_model_read(const unsigned char *buf, size_t len,
			      const char *name, struct gnn_model *m,
			      struct ts_diag *d);

#endif /* GNN_H */
