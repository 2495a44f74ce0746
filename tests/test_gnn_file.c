/*
 * test_gnn_file.c: the model file (learned/gnn_file.c) against the format
 * its header comment writes down, not against its own writer:
 * - an encoder here, written from that format, must give save's bytes
 *   exactly, and load must give back every field bit for bit (awkward
 *   doubles, sixteen sets, a 63-byte name, counts at INT_MAX);
 * - every refusal, from an image encoded here with one field wrong and the
 *   checksum right, with its exact message and the model left zeroed;
 *   parameters that pass every field's check but overflow the network on
 *   the training range (weights of 1e308) are refused too, and not saved;
 * - a cut at every byte: as found on disk (the header or the checksum says
 *   so) and resealed (the field being read is named, with its offset);
 * - saves that fail (no folder, a folder in the way, a full device, no
 *   memory) say why and leave nothing behind.
 * test_gnn.c keeps the shorter round trip this file grew from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gnn.h"
#include "test_util.h"

/* ---- an encoder written from the format ---------------------------------- */

/* A file image; each field's start and name (the reader's, for the
 * truncation messages); optionally one field written with another value. */
struct img {
	unsigned char *p;
	size_t n, cap;
	size_t *at;
	const char **what;
	int n_fields, cap_fields;
	const char *mut_what; /* the field to change, NULL none */
	int mut_index;        /* which occurrence of it */
	uint64_t mut_v;       /* written instead */
	int seen;
	size_t mut_at;        /* where it went */
};

static void byte(struct img *g, unsigned char c)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 4096;
		g->p = realloc(g->p, g->cap);
		assert_non_null(g->p);
	}
	g->p[g->n++] = c;
}

static void mark(struct img *g, const char *what)
{
	if (g->n_fields == g->cap_fields) {
		g->cap_fields = g->cap_fields ? 2 * g->cap_fields : 256;
		g->at = realloc(g->at, g->cap_fields * sizeof *g->at);
		g->what = realloc(g->what, g->cap_fields * sizeof *g->what);
		assert_true(g->at && g->what);
	}
	g->at[g->n_fields] = g->n;
	g->what[g->n_fields++] = what;
}

/* A little-endian field of `bytes` bytes; returns the value written. */
static uint64_t field(struct img *g, const char *what, int bytes, uint64_t v)
{
	if (g->mut_what && !strcmp(what, g->mut_what) &&
	    g->seen++ == g->mut_index) {
		v = g->mut_v;
		g->mut_at = g->n;
	}
	mark(g, what);
	for (int i = 0; i < bytes; i++)
		byte(g, (unsigned char)(v >> (8 * i)));
	return v;
}

static uint64_t bits(double x)
{
	uint64_t v;
	memcpy(&v, &x, 8);
	return v;
}

static void norms(struct img *g, const struct gnn_norm *n, int count,
		  const char *what)
{
	for (int i = 0; i < count; i++) {
		field(g, what, 8, bits(n[i].mean));
		field(g, what, 8, bits(n[i].std));
		field(g, what, 8, bits(n[i].lo));
		field(g, what, 8, bits(n[i].hi));
	}
}

/* FNV-1a 64, from its definition. */
static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	return h;
}

/* Appends the checksum of the first n bytes (the image cut there). */
static void seal(struct img *g, size_t n)
{
	uint64_t h = fnv(g->p, n);
	g->n = n;
	for (int i = 0; i < 8; i++)
		byte(g, (unsigned char)(h >> (8 * i)));
}

/* The body of m's file (everything but the checksum). */
static void encode(const struct gnn_model *m, struct img *g)
{
	const struct gnn_summary *s = &m->summary;
	mark(g, "magic");
	for (const char *c = "TPUSIMGN"; *c; c++)
		byte(g, (unsigned char)*c);
	field(g, "format version", 4, 2);
	field(g, "schema hash", 8, gnn_schema_hash());
	field(g, "node feature count", 4, GNN_NODE_F);
	field(g, "kernel feature count", 4, GNN_KERNEL_F);
	field(g, "model kind", 4, m->kind);
	field(g, "hidden width", 4, (uint32_t)m->hidden);
	field(g, "layer count", 4, (uint32_t)m->layers);
	field(g, "head width", 4, (uint32_t)m->head);
	field(g, "clip", 8, bits(m->clip));
	field(g, "set count", 4, (uint32_t)s->n_sets);
	for (int i = 0; i < s->n_sets; i++) {
		size_t len = strlen(s->sets[i]);
		uint64_t n = field(g, "set name length", 4, len);
		mark(g, "set name");
		for (uint64_t j = 0; j < n; j++)
			byte(g, j < len ? (unsigned char)s->sets[i][j] : 'x');
		field(g, "set row count", 4, (uint32_t)s->rows[i]);
	}
	field(g, "seed", 8, s->seed);
	field(g, "epoch count", 4, (uint32_t)s->epochs);
	field(g, "best epoch", 4, (uint32_t)s->best_epoch);
	field(g, "training loss", 8, bits(s->train_loss));
	field(g, "validation loss", 8, bits(s->val_loss));
	field(g, "novel group count", 4, (uint32_t)s->novel_groups);
	norms(g, m->node_norm, GNN_NODE_F, "node feature");
	norms(g, m->kern_norm, GNN_KERNEL_F, "kernel feature");
	field(g, "novel trust", 8, bits(m->novel_trust));
	field(g, "known op mix count", 4, (uint32_t)m->n_known);
	for (int i = 0; i < m->n_known; i++)
		field(g, "known op mixes", 8, m->known[i]);
	field(g, "parameter count", 8, m->n_params);
	for (size_t i = 0; i < m->n_params; i++)
		field(g, "parameters", 8, bits(m->params[i]));
}

static void img_free(struct img *g)
{
	free(g->p);
	free(g->at);
	free(g->what);
	memset(g, 0, sizeof *g);
}

/* ---- the models ---------------------------------------------------------- */

/* A small model with every field set, many to awkward values. */
static void sample_model(struct gnn_model *m, enum gnn_kind kind)
{
	assert_int_equal(gnn_model_alloc(m, kind, 2, 1, 1), TS_OK);
	assert_int_equal(gnn_model_init(m, 7, NULL), TS_OK);
	m->clip = 1.5;
	m->params[0] = -0.0;
	m->params[1] = DBL_TRUE_MIN; /* a subnormal */
	m->params[2] = -DBL_MAX;
	m->node_norm[0] = (struct gnn_norm){-0.0, 1e-6, -1e300, 1e300};
	m->node_norm[GNN_NODE_F - 1] = (struct gnn_norm){3.25, 1e300, 0, 0};
	m->kern_norm[0] = (struct gnn_norm){DBL_MIN, 0.1, -2.5, -2.5};
	m->kern_norm[GNN_KERNEL_F - 1] = (struct gnn_norm){-7, 2, -1, 4};
	struct gnn_summary *s = &m->summary;
	s->n_sets = GNN_MAX_SETS;
	for (int i = 0; i < GNN_MAX_SETS; i++) {
		snprintf(s->sets[i], sizeof s->sets[i], "set-%d", i);
		s->rows[i] = i * 1000;
	}
	memset(s->sets[3], 'n', sizeof s->sets[3] - 1); /* 63 bytes */
	memset(s->sets[4], 0, sizeof s->sets[4]);       /* an empty name */
	s->rows[15] = INT_MAX;
	s->seed = UINT64_MAX;
	s->epochs = INT_MAX;
	s->best_epoch = 0;
	s->train_loss = DBL_TRUE_MIN;
	s->val_loss = -0.0;
	s->novel_groups = INT_MAX;
	m->novel_trust = 0.3; /* not a binary fraction */
	static const uint64_t mixes[] = {0, 1, UINT64_C(0x8000000000000000),
					 UINT64_MAX};
	m->n_known = 4;
	m->known = malloc(sizeof mixes);
	assert_non_null(m->known);
	memcpy(m->known, mixes, sizeof mixes);
}

/* The bytes of a file (malloc'd). */
static unsigned char *slurp(const char *path, size_t *n)
{
	char *text;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file(path, &text, n, &d), TS_OK);
	unsigned char *b = malloc(*n ? *n : 1);
	assert_non_null(b);
	memcpy(b, text, *n);
	ts_free(text);
	return b;
}

static const struct gnn_model zero_model;

static void expect_same(const struct gnn_model *a, const struct gnn_model *b)
{
	assert_int_equal(a->kind, b->kind);
	assert_int_equal(a->hidden, b->hidden);
	assert_int_equal(a->layers, b->layers);
	assert_int_equal(a->head, b->head);
	assert_int_equal(bits(a->clip), bits(b->clip));
	assert_int_equal(a->n_params, b->n_params);
	assert_memory_equal(a->params, b->params, a->n_params * sizeof(double));
	assert_memory_equal(a->node_norm, b->node_norm, sizeof a->node_norm);
	assert_memory_equal(a->kern_norm, b->kern_norm, sizeof a->kern_norm);
	assert_int_equal(bits(a->novel_trust), bits(b->novel_trust));
	assert_int_equal(a->n_known, b->n_known);
	assert_memory_equal(a->known, b->known,
			    (size_t)a->n_known * sizeof *a->known);
	/* both zeroed before they were filled: the padding matches too */
	assert_memory_equal(&a->summary, &b->summary, sizeof a->summary);
}

/* ---- tests --------------------------------------------------------------- */

static void test_round_trip(void **state)
{
	(void)state;
	for (int kind = GNN_RESIDUAL; kind <= GNN_LEARNED_ONLY; kind++) {
		struct gnn_model m, back;
		sample_model(&m, (enum gnn_kind)kind);
		char path[512];
		tu_tmp_path(path, sizeof path, "test_gnn_file_rt", ".gnn");
		struct ts_diag d = {0};
		assert_int_equal(gnn_model_save(&m, path, &d), TS_OK);
		memset(&back, 0xa5, sizeof back);
		assert_int_equal(gnn_model_load(path, &back, &d), TS_OK);
		expect_same(&m, &back);

		/* the bytes are the format's, byte for byte */
		size_t n;
		unsigned char *file = slurp(path, &n);
		struct img g = {0};
		encode(&m, &g);
		seal(&g, g.n);
		assert_int_equal(n, g.n);
		assert_memory_equal(file, g.p, n);
		/* and from memory the same */
		gnn_model_free(&back);
		assert_int_equal(gnn_model_read(g.p, g.n, "m.gnn", &back, &d),
				 TS_OK);
		expect_same(&m, &back);
		/* saved again: the same bytes (nothing left uninitialised) */
		assert_int_equal(gnn_model_save(&back, path, &d), TS_OK);
		size_t n2;
		unsigned char *again = slurp(path, &n2);
		assert_int_equal(n2, n);
		assert_memory_equal(again, file, n);
		free(again);
		free(file);
		img_free(&g);
		unlink(path);
		gnn_model_free(&back);
		gnn_model_free(&m);
	}
}

/* The largest model the format allows (every size at its maximum, sixteen
 * sets of 63-byte names, GNN_MAX_KNOWN mixes) saves, and loads under the
 * reader's size cap, with room to spare. */
static void test_largest(void **state)
{
	(void)state;
	struct gnn_model m, back;
	assert_int_equal(gnn_model_alloc(&m, GNN_RESIDUAL, GNN_MAX_HIDDEN,
					 GNN_MAX_LAYERS, GNN_MAX_HIDDEN), TS_OK);
	assert_int_equal(gnn_model_init(&m, 3, NULL), TS_OK);
	m.summary.n_sets = GNN_MAX_SETS;
	for (int i = 0; i < GNN_MAX_SETS; i++)
		memset(m.summary.sets[i], 'a' + i, sizeof m.summary.sets[i] - 1);
	m.n_known = GNN_MAX_KNOWN;
	m.known = ts_malloc((size_t)GNN_MAX_KNOWN * sizeof *m.known);
	assert_non_null(m.known);
	for (int i = 0; i < GNN_MAX_KNOWN; i++)
		m.known[i] = (uint64_t)i << 47 | (uint64_t)i; /* spread out */
	for (int i = 1; i < GNN_MAX_KNOWN; i++)
		assert_true(m.known[i] > m.known[i - 1]);
	char path[512];
	tu_tmp_path(path, sizeof path, "test_gnn_file_largest", ".gnn");
	struct ts_diag d = {0};
	assert_int_equal(gnn_model_save(&m, path, &d), TS_OK);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	print_message("largest model file: %lld bytes, the cap %zu\n",
		      (long long)sb.st_size, gnn_model_file_max());
	assert_true((size_t)sb.st_size <= gnn_model_file_max());
	assert_int_equal(gnn_model_load(path, &back, &d), TS_OK);
	expect_same(&m, &back);
	gnn_model_free(&back);
	/* one mix more is what the reader refuses, so save refuses it and
	 * leaves the file as it was */
	uint64_t *more = ts_realloc(m.known, ((size_t)GNN_MAX_KNOWN + 1) *
					     sizeof *more);
	assert_non_null(more);
	m.known = more;
	m.known[GNN_MAX_KNOWN] = UINT64_MAX;
	m.n_known = GNN_MAX_KNOWN + 1;
	assert_int_equal(gnn_model_save(&m, path, &d), TS_ERR_MISUSE);
	char want[TS_DIAG_MSG_MAX];
	snprintf(want, sizeof want, "not saved: the file would be refused on "
		 "loading: %d known op mixes, at most %d", GNN_MAX_KNOWN + 1,
		 GNN_MAX_KNOWN);
	assert_string_equal(d.msg, want);
	struct stat again;
	assert_int_equal(stat(path, &again), 0);
	assert_int_equal(again.st_size, sb.st_size);
	unlink(path);
	gnn_model_free(&m);
}

/* Reads b[0..n) and expects msg exactly, the model left zeroed. */
static void refused(const unsigned char *b, size_t n, const char *msg)
{
	struct gnn_model m;
	struct ts_diag d = {0};
	memset(&m, 0xa5, sizeof m);
	assert_int_equal(gnn_model_read(b, n, "m.gnn", &m, &d), TS_ERR_PARSE);
	if (strcmp(d.msg, msg))
		fail_msg("expected '%s', got '%s' (%zu bytes)", msg, d.msg, n);
	assert_string_equal(d.file, "m.gnn");
	assert_memory_equal(&m, &zero_model, sizeof m);
}

/* m's image with occurrence `index` of field `what` written as v, sealed;
 * expects msg, or with msg NULL the non-finite refusal naming the field
 * and where it went. */
static void mutated(const struct gnn_model *m, const char *what, int index,
		    uint64_t v, const char *msg)
{
	struct img g = {.mut_what = what, .mut_index = index, .mut_v = v};
	encode(m, &g);
	assert_true(g.seen > index); /* the field exists */
	seal(&g, g.n);
	char want[TS_DIAG_MSG_MAX];
	if (!msg)
		snprintf(want, sizeof want, "the %s at byte %zu is not a "
			 "finite number", what, g.mut_at);
	refused(g.p, g.n, msg ? msg : want);
	img_free(&g);
}

static void test_refusals(void **state)
{
	(void)state;
	struct gnn_model m;
	sample_model(&m, GNN_RESIDUAL);
	struct img g = {0};
	encode(&m, &g);
	size_t body = g.n;
	seal(&g, body);
	char want[TS_DIAG_MSG_MAX];

	/* not ours: another magic, or a short file that does not start as
	 * ours; an empty one is a cut */
	g.p[0] = 'X';
	refused(g.p, g.n, "not a tpusim model file (bad magic)");
	g.p[0] = 'T';
	refused((const unsigned char *)"GIF8", 4,
		"not a tpusim model file (bad magic)");
	refused((const unsigned char *)"", 0,
		"truncated at byte 0: expected the magic");

	mutated(&m, "format version", 0, 3,
		"format version 3, this tpusim reads 2");
	mutated(&m, "format version", 0, 1,
		"format version 1, this tpusim reads 2: retrain it");
	uint64_t h = gnn_schema_hash();
	snprintf(want, sizeof want,
		 "trained on feature schema %016llx, this tpusim has %016llx: "
		 "retrain it", (unsigned long long)(h ^ 1),
		 (unsigned long long)h);
	mutated(&m, "schema hash", 0, h ^ 1, want);
	snprintf(want, sizeof want, "%d node and %d kernel features, this "
		 "tpusim has %d and %d: retrain it", GNN_NODE_F + 1,
		 GNN_KERNEL_F, GNN_NODE_F, GNN_KERNEL_F);
	mutated(&m, "node feature count", 0, GNN_NODE_F + 1, want);
	mutated(&m, "model kind", 0, 2,
		"model kind 2 is neither residual (0) nor learned-only (1)");
	mutated(&m, "model kind", 0, UINT32_MAX, "model kind 4294967295 is "
		"neither residual (0) nor learned-only (1)");
	snprintf(want, sizeof want, "sizes out of range: hidden 0, layers 1, "
		 "head 1 (1..%d, 1..%d, 1..%d)", GNN_MAX_HIDDEN,
		 GNN_MAX_LAYERS, GNN_MAX_HIDDEN);
	mutated(&m, "hidden width", 0, 0, want);
	snprintf(want, sizeof want, "sizes out of range: hidden 2, layers %d, "
		 "head 1 (1..%d, 1..%d, 1..%d)", GNN_MAX_LAYERS + 1,
		 GNN_MAX_HIDDEN, GNN_MAX_LAYERS, GNN_MAX_HIDDEN);
	mutated(&m, "layer count", 0, GNN_MAX_LAYERS + 1, want);
	snprintf(want, sizeof want, "sizes out of range: hidden 2, layers 1, "
		 "head 4294967295 (1..%d, 1..%d, 1..%d)", GNN_MAX_HIDDEN,
		 GNN_MAX_LAYERS, GNN_MAX_HIDDEN);
	mutated(&m, "head width", 0, UINT32_MAX, want);

	mutated(&m, "clip", 0, bits(NAN), NULL);
	mutated(&m, "clip", 0, bits(-INFINITY), NULL);
	snprintf(want, sizeof want, "clip must be in (0, %g], got 0",
		 GNN_MAX_CLIP);
	mutated(&m, "clip", 0, bits(0.0), want);
	snprintf(want, sizeof want, "clip must be in (0, %g], got -1",
		 GNN_MAX_CLIP);
	mutated(&m, "clip", 0, bits(-1.0), want);
	snprintf(want, sizeof want, "clip must be in (0, %g], got %g",
		 GNN_MAX_CLIP, 2 * GNN_MAX_CLIP);
	mutated(&m, "clip", 0, bits(2 * GNN_MAX_CLIP), want);

	snprintf(want, sizeof want, "%d training sets, at most %d",
		 GNN_MAX_SETS + 1, GNN_MAX_SETS);
	mutated(&m, "set count", 0, GNN_MAX_SETS + 1, want);
	mutated(&m, "set name length", 2, 64, "set name of 64 bytes, at most 63");
	mutated(&m, "set row count", 1, UINT32_C(0x80000000),
		"set row count 2147483648 is out of range (at most 2147483647)");
	mutated(&m, "epoch count", 0, UINT32_MAX, "epoch count 4294967295 is "
		"out of range (at most 2147483647)");
	mutated(&m, "best epoch", 0, UINT32_C(0x80000000), "best epoch "
		"2147483648 is out of range (at most 2147483647)");
	mutated(&m, "training loss", 0, bits(INFINITY), NULL);
	mutated(&m, "validation loss", 0, bits(-INFINITY), NULL);
	mutated(&m, "novel group count", 0, UINT32_MAX, "novel group count "
		"4294967295 is out of range (at most 2147483647)");

	/* norms: four doubles each (mean, std, lo, hi) */
	mutated(&m, "node feature", 4 * 5 + 0, bits(NAN), NULL);
	mutated(&m, "kernel feature", 4 * (GNN_KERNEL_F - 1) + 3,
		bits(INFINITY), NULL);
	mutated(&m, "node feature", 4 * 3 + 1, bits(0.0),
		"node feature 3 has a standard deviation below 1e-9");
	mutated(&m, "kernel feature", 4 * 7 + 1, bits(-1.0),
		"kernel feature 7 has a standard deviation below 1e-9");
	mutated(&m, "node feature", 4 * 2 + 2, bits(1.5),
		"node feature 2 has a range from 1.5 to 0");

	mutated(&m, "novel trust", 0, bits(NAN), NULL);
	mutated(&m, "novel trust", 0, bits(-0.5),
		"novel trust must be in [0, 1], got -0.5");
	mutated(&m, "novel trust", 0, bits(1.25),
		"novel trust must be in [0, 1], got 1.25");
	snprintf(want, sizeof want, "%d known op mixes, at most %d",
		 GNN_MAX_KNOWN + 1, GNN_MAX_KNOWN);
	mutated(&m, "known op mix count", 0, GNN_MAX_KNOWN + 1, want);
	mutated(&m, "known op mixes", 2, 1,
		"known op mixes out of order at entry 2");
	mutated(&m, "known op mixes", 1, 0,
		"known op mixes out of order at entry 1");
	snprintf(want, sizeof want, "%zu parameters, its sizes need %zu",
		 m.n_params + 1, m.n_params);
	mutated(&m, "parameter count", 0, m.n_params + 1, want);
	mutated(&m, "parameters", 5, bits(NAN), NULL);
	mutated(&m, "parameters", (int)m.n_params - 1, bits(-INFINITY), NULL);

	/* one byte more, sealed: the reader finds it after the parameters */
	struct img t = {0};
	encode(&m, &t);
	byte(&t, 0);
	seal(&t, t.n);
	refused(t.p, t.n, "1 bytes after the parameters");
	img_free(&t);

	/* a flipped bit anywhere past the version, the checksum's included */
	const char *corrupt = "checksum mismatch: the file is corrupted or "
			      "truncated";
	for (size_t i = 12; i < g.n; i += 97) {
		g.p[i] ^= 0x10;
		refused(g.p, g.n, corrupt);
		g.p[i] ^= 0x10;
	}
	g.p[g.n - 1] ^= 0x80;
	refused(g.p, g.n, corrupt);
	g.p[g.n - 1] ^= 0x80;

	/* finite parameters the network overflows on: every weight 1e308
	 * (as a crafted file had: null times, exit 0), or, worked by hand,
	 * a zero model (every feature's range [0, 0]) with the head's bias
	 * 2 (its ReLU passes 2) and its output weight DBL_MAX: raw = 2
	 * DBL_MAX = inf on every kernel */
	const char *overflow = "the parameters overflow: the network's output "
			       "for a kernel like those it was trained on is "
			       "not finite";
	for (int kind = 0; kind < 2; kind++) {
		struct gnn_model big, hand;
		sample_model(&big, kind ? GNN_LEARNED_ONLY : GNN_RESIDUAL);
		for (size_t i = 0; i < big.n_params; i++)
			big.params[i] = 1e308;
		assert_int_equal(gnn_model_alloc(&hand, kind ? GNN_LEARNED_ONLY
							     : GNN_RESIDUAL,
						 1, 1, 1),
				 TS_OK);
		struct gnn_tensors ht;
		gnn_model_bind(&hand, hand.params, &ht);
		ht.b1[0] = 2;
		ht.w2[0] = DBL_MAX;
		const struct gnn_model *bad[] = {&big, &hand};
		for (int b = 0; b < 2; b++) {
			struct img o = {0};
			encode(bad[b], &o);
			seal(&o, o.n);
			refused(o.p, o.n, overflow);
			img_free(&o);
			/* and save will not write what load refuses */
			char path[512];
			tu_tmp_path(path, sizeof path, "test_gnn_file_big",
				    ".gnn");
			struct ts_diag sd = {0};
			assert_int_equal(gnn_model_save(bad[b], path, &sd),
					 TS_ERR_MISUSE);
			snprintf(want, sizeof want, "not saved: the file would "
				 "be refused on loading: %s", overflow);
			assert_string_equal(sd.msg, want);
			assert_int_equal(access(path, F_OK), -1);
		}
		/* the bias alone is finite: loads */
		ht.w2[0] = 1;
		struct img ok = {0};
		encode(&hand, &ok);
		seal(&ok, ok.n);
		struct gnn_model back;
		struct ts_diag bd = {0};
		assert_int_equal(gnn_model_read(ok.p, ok.n, "m.gnn", &back, &bd),
				 TS_OK);
		gnn_model_free(&back);
		img_free(&ok);
		gnn_model_free(&big);
		gnn_model_free(&hand);
	}

	/* the validation loss alone may be NaN: nothing was held out (a
	 * set of too few groups), and the model reads back with it */
	struct img nv = {.mut_what = "validation loss", .mut_v = bits(NAN)};
	encode(&m, &nv);
	seal(&nv, nv.n);
	struct gnn_model nvm;
	struct ts_diag nvd = {0};
	assert_int_equal(gnn_model_read(nv.p, nv.n, "m.gnn", &nvm, &nvd), TS_OK);
	assert_true(isnan(nvm.summary.val_loss));
	gnn_model_free(&nvm);
	img_free(&nv);

	/* the learned-only model has no use for a clip: any finite one */
	gnn_model_free(&m);
	sample_model(&m, GNN_LEARNED_ONLY);
	struct img lo = {.mut_what = "clip", .mut_v = bits(0.0)};
	encode(&m, &lo);
	seal(&lo, lo.n);
	struct gnn_model back;
	struct ts_diag d = {0};
	assert_int_equal(gnn_model_read(lo.p, lo.n, "m.gnn", &back, &d), TS_OK);
	assert_true(back.clip == 0.0);
	gnn_model_free(&back);
	img_free(&lo);

	img_free(&g);
	gnn_model_free(&m);
}

/* Cut at every byte: as left on disk, and resealed so the reader gets as
 * far as the cut. */
static void test_truncation(void **state)
{
	(void)state;
	struct gnn_model m;
	sample_model(&m, GNN_RESIDUAL);
	struct img g = {0};
	encode(&m, &g);
	size_t body = g.n;
	seal(&g, body);
	unsigned char *full = malloc(g.n);
	assert_non_null(full);
	memcpy(full, g.p, g.n);
	size_t n = g.n;
	char want[TS_DIAG_MSG_MAX];

	for (size_t k = 0; k < n; k++) {
		if (k < 8)
			snprintf(want, sizeof want,
				 "truncated at byte 0: expected the magic");
		else if (k < 12)
			snprintf(want, sizeof want, "truncated at byte 8: "
				 "expected the format version");
		else if (k < 20)
			snprintf(want, sizeof want, "truncated at byte 12: "
				 "expected the schema hash");
		else
			snprintf(want, sizeof want, "checksum mismatch: the "
				 "file is corrupted or truncated");
		refused(full, k, want);
	}

	/* resealed: the field the cut falls in, named at its start (a field
	 * of no bytes, an empty set name, is never the one cut) */
	int f = 0;
	for (size_t k = 12; k < body; k++) {
		while (f + 1 < g.n_fields && g.at[f + 1] <= k)
			f++;
		snprintf(want, sizeof want, "truncated at byte %zu: expected "
			 "the %s", g.at[f], g.what[f]);
		memcpy(g.p, full, k);
		seal(&g, k);
		refused(g.p, g.n, want);
	}
	free(full);
	img_free(&g);
	gnn_model_free(&m);
}

static int count_entries(const char *dir)
{
	DIR *dp = opendir(dir);
	assert_non_null(dp);
	int n = 0;
	for (struct dirent *e; (e = readdir(dp));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dp);
	return n;
}

static void test_save_failures(void **state)
{
	(void)state;
	struct gnn_model m, other;
	sample_model(&m, GNN_RESIDUAL);
	char dir[512], path[600], want[900];
	tu_tmp_path(dir, sizeof dir, "test_gnn_file_dir", "");
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/m.gnn", dir);
	struct ts_diag d = {0};

	/* no such folder: named, nothing written */
	char missing[700];
	snprintf(missing, sizeof missing, "%s/no-such-dir/m.gnn", dir);
	assert_int_equal(gnn_model_save(&m, missing, &d), TS_ERR_IO);
	snprintf(want, sizeof want, "cannot create %s.tmp.%ld: No such file "
		 "or directory", missing, (long)getpid());
	assert_string_equal(d.msg, want);
	assert_string_equal(d.file, missing);
	assert_int_equal(count_entries(dir), 0);

	/* a folder where the file would go (not a regular file, so written
	 * in place, which fails): the folder stays as it was */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(gnn_model_save(&m, path, &d), TS_ERR_IO);
	snprintf(want, sizeof want, "cannot create %s: Is a directory", path);
	assert_string_equal(d.msg, want);
	assert_int_equal(count_entries(dir), 1);
	assert_int_equal(count_entries(path), 0);
	assert_int_equal(rmdir(path), 0);

	/* a model over another: the new one whole, no temp file left */
	sample_model(&other, GNN_LEARNED_ONLY);
	other.params[0] = 42;
	assert_int_equal(gnn_model_save(&other, path, &d), TS_OK);
	assert_int_equal(gnn_model_save(&m, path, &d), TS_OK);
	assert_int_equal(count_entries(dir), 1);
	struct gnn_model back;
	assert_int_equal(gnn_model_load(path, &back, &d), TS_OK);
	expect_same(&m, &back);
	gnn_model_free(&back);
	gnn_model_free(&other);

	/* a full device (written in place, not replaced): the failure is
	 * named even though the stream only reports it as a short write */
	if (access("/dev/full", W_OK) == 0) {
		d = (struct ts_diag){0};
		assert_int_equal(gnn_model_save(&m, "/dev/full", &d),
				 TS_ERR_IO);
		assert_string_equal(d.msg,
				    "write failed: No space left on device");
	} else {
		print_message("no /dev/full: the full-device save skipped\n");
	}

	/* out of memory at each allocation in turn: TS_ERR_NOMEM with a
	 * message, the file left as it was, until the save goes through */
	size_t n0;
	unsigned char *before = slurp(path, &n0);
	m.params[1] = 0.5; /* another file, to see whether it landed */
	enum ts_status st = TS_ERR_NOMEM;
	for (long k = 0; st == TS_ERR_NOMEM; k++) {
		assert_true(k < 100);
		d = (struct ts_diag){0};
		ts_alloc_fail_after(k);
		st = gnn_model_save(&m, path, &d);
		ts_alloc_fail_after(-1);
		if (st == TS_ERR_NOMEM) {
			assert_string_equal(d.msg, "out of memory");
			size_t n1;
			unsigned char *now = slurp(path, &n1);
			assert_int_equal(n1, n0);
			assert_memory_equal(now, before, n0);
			free(now);
			assert_int_equal(count_entries(dir), 1);
		}
	}
	assert_int_equal(st, TS_OK);
	free(before);
	/* and loading it */
	st = TS_ERR_NOMEM;
	for (long k = 0; st == TS_ERR_NOMEM; k++) {
		assert_true(k < 100);
		d = (struct ts_diag){0};
		memset(&back, 0xa5, sizeof back);
		ts_alloc_fail_after(k);
		st = gnn_model_load(path, &back, &d);
		ts_alloc_fail_after(-1);
		if (st == TS_ERR_NOMEM) {
			/* the file's buffer, then the model's */
			assert_string_equal(d.msg, k ? "out of memory" :
					    "out of memory reading file");
			assert_memory_equal(&back, &zero_model, sizeof back);
		}
	}
	assert_int_equal(st, TS_OK);
	assert_true(back.params[1] == 0.5);
	gnn_model_free(&back);

	/* what cannot be a model is not read: a folder, a file larger than
	 * the largest model (sparse here, so nothing is written) */
	snprintf(want, sizeof want, "%s/big.gnn", dir);
	assert_int_equal(gnn_model_load(dir, &back, &d), TS_ERR_PARSE);
	assert_string_equal(d.msg, "not a regular file");
	size_t cap = gnn_model_file_max();
	FILE *f = fopen(want, "wb");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(truncate(want, (off_t)cap + 1), 0);
	assert_int_equal(gnn_model_load(want, &back, &d), TS_ERR_PARSE);
	char big[200];
	snprintf(big, sizeof big, "%zu bytes: larger than any model file (at "
		 "most %zu)", cap + 1, cap);
	assert_string_equal(d.msg, big);
	assert_memory_equal(&back, &zero_model, sizeof back);
	assert_int_equal(unlink(want), 0);

	/* a file that is not there */
	d = (struct ts_diag){0};
	assert_int_equal(unlink(path), 0);
	assert_int_equal(gnn_model_load(path, &back, &d), TS_ERR_IO);
	assert_string_equal(d.msg, "cannot open: No such file or directory");
	assert_memory_equal(&back, &zero_model, sizeof back);

	assert_int_equal(rmdir(dir), 0);
	gnn_model_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_largest),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_save_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
