/*
 * gnn_file.c: the model file of the learned residual. Little-endian, every
 * field written byte by byte (portable), doubles as their IEEE-754 bits:
 *
 *   "TPUSIMGN"                 magic, 8 bytes
 *   u32 format version         GNN_FILE_VERSION
 *   u64 schema hash            gnn_schema_hash() of the trainer
 *   u32 node features, u32 kernel features
 *   u32 kind                   0 residual, 1 learned-only
 *   u32 hidden, u32 layers, u32 head
 *   f64 clip
 *   summary: u32 sets, per set (u32 name length, name bytes, u32 rows),
 *            u64 seed, u32 epochs, u32 best epoch, f64 train loss,
 *            f64 validation loss (NaN: none held out; the one double
 *            that may be NaN), u32 held-out groups of a novel op mix
 *   node norms, kernel norms   4 f64 each: mean, std, lo, hi
 *   f64 novel trust            in [0, 1]
 *   u32 known op mixes, the mixes (u64, strictly increasing)
 *   u64 parameter count, the parameters (f64)
 *   u64 checksum               FNV-1a 64 of every byte before it
 *
 * Reading checks the magic and version, then the checksum (a damaged file
 * says so before anything it would misread), then each field in order,
 * then that the parameters give a finite output over the training range
 * (gnn_model_raw_range); every refusal names what is wrong. Writing goes
 * through a temp file and a rename (ts_write_file_atomic).
 */
#include "gnn.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "numlib.h"

#define GNN_FILE_VERSION 2
static const char magic[8] = {'T', 'P', 'U', 'S', 'I', 'M', 'G', 'N'};

/* ---- writing ------------------------------------------------------------- */

struct wbuf {
	unsigned char *p;
	size_t n, cap;
	bool nomem;
	const char *path;  /* for write_all's message */
	struct ts_diag *d;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->nomem)
		return;
	if (w->n + n > w->cap) {
		size_t c = w->cap ? w->cap * 2 : 4096;
		while (c < w->n + n)
			c *= 2;
		unsigned char *q = ts_realloc(w->p, c);
		if (!q) {
			w->nomem = true;
			return;
		}
		w->p = q;
		w->cap = c;
	}
	memcpy(w->p + w->n, src, n);
	w->n += n;
}

static void put_u64(struct wbuf *w, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(w, b, 8);
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(w, b, 4);
}

static void put_f64(struct wbuf *w, double x)
{
	uint64_t v;
	memcpy(&v, &x, 8);
	put_u64(w, v);
}

static void put_norms(struct wbuf *w, const struct gnn_norm *n, int count)
{
	for (int i = 0; i < count; i++) {
		put_f64(w, n[i].mean);
		put_f64(w, n[i].std);
		put_f64(w, n[i].lo);
		put_f64(w, n[i].hi);
	}
}

/* ts_write_file_atomic names only its own failures (open, flush, close,
 * rename): a short fwrite is named here. */
static enum ts_status write_all(FILE *f, void *ctx)
{
	const struct wbuf *w = ctx;
	if (fwrite(w->p, 1, w->n, f) == w->n)
		return TS_OK;
	ts_diag_set(w->d, w->path, 0, 0, "write failed: %s", strerror(errno));
	return TS_ERR_IO;
}

enum ts_status gnn_model_save(const struct gnn_model *m, const char *path,
			      struct ts_diag *d)
{
	struct wbuf w = {.path = path, .d = d};
	const struct gnn_summary *s = &m->summary;
	TS_ASSERT(m->params && s->n_sets >= 0 && s->n_sets <= GNN_MAX_SETS);
	put(&w, magic, sizeof magic);
	put_u32(&w, GNN_FILE_VERSION);
	put_u64(&w, gnn_schema_hash());
	put_u32(&w, GNN_NODE_F);
	put_u32(&w, GNN_KERNEL_F);
	put_u32(&w, (uint32_t)m->kind);
	put_u32(&w, (uint32_t)m->hidden);
	put_u32(&w, (uint32_t)m->layers);
	put_u32(&w, (uint32_t)m->head);
	put_f64(&w, m->clip);
	put_u32(&w, (uint32_t)s->n_sets);
	for (int i = 0; i < s->n_sets; i++) {
		size_t len = strnlen(s->sets[i], sizeof s->sets[i] - 1);
		put_u32(&w, (uint32_t)len);
		put(&w, s->sets[i], len);
		put_u32(&w, (uint32_t)s->rows[i]);
	}
	put_u64(&w, s->seed);
	put_u32(&w, (uint32_t)s->epochs);
	put_u32(&w, (uint32_t)s->best_epoch);
	put_f64(&w, s->train_loss);
	put_f64(&w, s->val_loss);
	put_u32(&w, (uint32_t)s->novel_groups);
	put_norms(&w, m->node_norm, GNN_NODE_F);
	put_norms(&w, m->kern_norm, GNN_KERNEL_F);
	put_f64(&w, m->novel_trust);
	put_u32(&w, (uint32_t)m->n_known);
	for (int i = 0; i < m->n_known; i++)
		put_u64(&w, m->known[i]);
	put_u64(&w, m->n_params);
	for (size_t i = 0; i < m->n_params; i++)
		put_f64(&w, m->params[i]);
	if (!w.nomem)
		put_u64(&w, ts_fnv1a(TS_FNV1A_BASIS, w.p, w.n));
	/* a model the reader would refuse (a NaN, a std below 1e-9, a clip
	 * out of range) is not written: read the bytes back first */
	if (!w.nomem) {
		struct gnn_model back;
		struct ts_diag rd = {0};
		enum ts_status rst =
			gnn_model_read(w.p, w.n, path, &back, &rd);
		gnn_model_free(&back);
		if (rst == TS_ERR_PARSE) {
			ts_diag_set(d, path, 0, 0, "not saved: the file would be "
				    "refused on loading: %s", rd.msg);
			ts_free(w.p);
			return TS_ERR_MISUSE;
		}
	}
	/* the only failure ts_write_file_atomic leaves unnamed is its own
	 * allocation */
	enum ts_status st = TS_ERR_NOMEM;
	if (w.nomem ||
	    (st = ts_write_file_atomic(path, write_all, &w, d)) == TS_ERR_NOMEM)
		ts_diag_set(d, path, 0, 0, "out of memory");
	ts_free(w.p);
	return st;
}

/* ---- reading ------------------------------------------------------------- */

struct rbuf {
	const unsigned char *p;
	size_t n, at;
	const char *name;
	struct ts_diag *d;
	bool bad; /* a refusal is set in d */
};

/* Takes n bytes for `what`; refuses a truncated file. */
static const unsigned char *take(struct rbuf *r, size_t n, const char *what)
{
	if (r->bad)
		return NULL;
	if (r->n - r->at < n) {
		ts_diag_set(r->d, r->name, 0, 0,
			    "truncated at byte %zu: expected the %s", r->at,
			    what);
		r->bad = true;
		return NULL;
	}
	r->at += n;
	return r->p + r->at - n;
}

static uint64_t get_u64(struct rbuf *r, const char *what)
{
	const unsigned char *b = take(r, 8, what);
	uint64_t v = 0;
	for (int i = 0; b && i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint32_t get_u32(struct rbuf *r, const char *what)
{
	const unsigned char *b = take(r, 4, what);
	uint32_t v = 0;
	for (int i = 0; b && i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

/* A finite double, or with nan_ok a NaN too. */
static double get_f64_or(struct rbuf *r, const char *what, bool nan_ok)
{
	uint64_t v = get_u64(r, what);
	double x;
	memcpy(&x, &v, 8);
	if (!r->bad && !isfinite(x) && !(nan_ok && isnan(x))) {
		ts_diag_set(r->d, r->name, 0, 0,
			    "the %s at byte %zu is not a finite number", what,
			    r->at - 8);
		r->bad = true;
	}
	return x;
}

static double get_f64(struct rbuf *r, const char *what)
{
	return get_f64_or(r, what, false);
}

static void refuse(struct rbuf *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Refuses the file with a message (the first refusal stands). */
static void refuse(struct rbuf *r, const char *fmt, ...)
{
	if (r->bad)
		return;
	va_list ap;
	va_start(ap, fmt);
	ts_diag_vset(r->d, r->name, 0, 0, fmt, ap);
	va_end(ap);
	r->bad = true;
}

/* A count of the summary: a u32 that fits an int. */
static int get_int(struct rbuf *r, const char *what)
{
	uint32_t v = get_u32(r, what);
	if (v > INT_MAX)
		refuse(r, "%s %u is out of range (at most %d)", what, v,
		       INT_MAX);
	return r->bad ? 0 : (int)v;
}

static void get_norms(struct rbuf *r, struct gnn_norm *n, int count,
		      const char *what)
{
	for (int i = 0; i < count; i++) {
		n[i].mean = get_f64(r, what);
		n[i].std = get_f64(r, what);
		n[i].lo = get_f64(r, what);
		n[i].hi = get_f64(r, what);
		/* training floors std at 1e-9 (a constant feature gets 1);
		 * a smaller one would blow a feature up to inf */
		if (!(n[i].std >= 1e-9))
			refuse(r, "%s %d has a standard deviation below 1e-9",
			       what, i);
		if (!(n[i].lo <= n[i].hi))
			refuse(r, "%s %d has a range from %g to %g", what, i,
			       n[i].lo, n[i].hi);
	}
}

enum ts_status gnn_model_read(const unsigned char *buf, size_t len,
			      const char *name, struct gnn_model *m,
			      struct ts_diag *d)
{
	memset(m, 0, sizeof *m);
	enum ts_status st = numlib_load(d); /* the model's products */
	if (st != TS_OK)
		return st;
	struct rbuf r = {buf, len, 0, name, d, false};
	/* a short file is truncated only if what there is matches */
	if (len && memcmp(buf, magic, len < sizeof magic ? len : sizeof magic))
		refuse(&r, "not a tpusim model file (bad magic)");
	take(&r, sizeof magic, "magic");
	uint32_t version = get_u32(&r, "format version");
	if (!r.bad && version != GNN_FILE_VERSION)
		refuse(&r, "format version %u, this tpusim reads %d%s", version,
		       GNN_FILE_VERSION,
		       version < GNN_FILE_VERSION ? ": retrain it" : "");
	/* too short to hold a checksum: the next field is what is missing */
	if (!r.bad && len < r.at + 8)
		refuse(&r, "truncated at byte %zu: expected the schema hash",
		       r.at);
	if (!r.bad) {
		uint64_t stored = 0;
		for (int i = 0; i < 8; i++)
			stored |= (uint64_t)buf[len - 8 + i] << (8 * i);
		if (ts_fnv1a(TS_FNV1A_BASIS, buf, len - 8) != stored)
			refuse(&r, "checksum mismatch: the file is corrupted or "
				   "truncated");
	}
	if (r.bad)
		return TS_ERR_PARSE;
	r.n = len - 8; /* the checksum is not a field */
	r.at = sizeof magic + 4;
	uint64_t hash = get_u64(&r, "schema hash");
	if (!r.bad && hash != gnn_schema_hash())
		refuse(&r, "trained on feature schema %016llx, this tpusim has "
			   "%016llx: retrain it", (unsigned long long)hash,
		       (unsigned long long)gnn_schema_hash());
	uint32_t nf = get_u32(&r, "node feature count");
	uint32_t kf = get_u32(&r, "kernel feature count");
	if (!r.bad && (nf != GNN_NODE_F || kf != GNN_KERNEL_F))
		refuse(&r, "%u node and %u kernel features, this tpusim has "
			   "%d and %d: retrain it", nf, kf, GNN_NODE_F,
		       GNN_KERNEL_F);
	uint32_t kind = get_u32(&r, "model kind");
	uint32_t hidden = get_u32(&r, "hidden width");
	uint32_t layers = get_u32(&r, "layer count");
	uint32_t head = get_u32(&r, "head width");
	if (!r.bad && kind > 1)
		refuse(&r, "model kind %u is neither residual (0) nor "
			   "learned-only (1)", kind);
	st = TS_OK;
	if (!r.bad && (st = gnn_model_alloc(m, (enum gnn_kind)kind,
					    (int)hidden, (int)layers,
					    (int)head)) == TS_ERR_NOMEM) {
		ts_diag_set(d, name, 0, 0, "out of memory");
		/* gnn_model_alloc leaves the sizes set beside no buffer */
		gnn_model_free(m);
		return st;
	}
	if (st != TS_OK)
		refuse(&r, "sizes out of range: hidden %u, layers %u, head %u "
			   "(1..%d, 1..%d, 1..%d)", hidden, layers, head,
		       GNN_MAX_HIDDEN, GNN_MAX_LAYERS, GNN_MAX_HIDDEN);
	m->clip = get_f64(&r, "clip");
	if (!r.bad && kind == GNN_RESIDUAL &&
	    !(m->clip > 0 && m->clip <= GNN_MAX_CLIP))
		refuse(&r, "clip must be in (0, %g], got %g", GNN_MAX_CLIP,
		       m->clip);
	struct gnn_summary *s = &m->summary;
	uint32_t n_sets = get_u32(&r, "set count");
	if (!r.bad && n_sets > GNN_MAX_SETS)
		refuse(&r, "%u training sets, at most %d", n_sets,
		       GNN_MAX_SETS);
	s->n_sets = r.bad ? 0 : (int)n_sets;
	for (int i = 0; i < s->n_sets && !r.bad; i++) {
		uint32_t n = get_u32(&r, "set name length");
		if (!r.bad && n >= sizeof s->sets[i])
			refuse(&r, "set name of %u bytes, at most %zu", n,
			       sizeof s->sets[i] - 1);
		const unsigned char *t = r.bad ? NULL : take(&r, n, "set name");
		if (t)
			memcpy(s->sets[i], t, n);
		s->rows[i] = get_int(&r, "set row count");
	}
	s->seed = get_u64(&r, "seed");
	s->epochs = get_int(&r, "epoch count");
	s->best_epoch = get_int(&r, "best epoch");
	s->train_loss = get_f64(&r, "training loss");
	s->val_loss = get_f64_or(&r, "validation loss", true);
	s->novel_groups = get_int(&r, "novel group count");
	get_norms(&r, m->node_norm, GNN_NODE_F, "node feature");
	get_norms(&r, m->kern_norm, GNN_KERNEL_F, "kernel feature");
	m->novel_trust = get_f64(&r, "novel trust");
	if (!r.bad && !(m->novel_trust >= 0 && m->novel_trust <= 1))
		refuse(&r, "novel trust must be in [0, 1], got %g",
		       m->novel_trust);
	uint32_t n_known = get_u32(&r, "known op mix count");
	if (!r.bad && n_known > GNN_MAX_KNOWN)
		refuse(&r, "%u known op mixes, at most %d", n_known,
		       GNN_MAX_KNOWN);
	if (!r.bad && n_known > 0 &&
	    !(m->known = ts_malloc((size_t)n_known * sizeof *m->known))) {
		ts_diag_set(d, name, 0, 0, "out of memory");
		gnn_model_free(m);
		return TS_ERR_NOMEM;
	}
	for (uint32_t i = 0; i < n_known && !r.bad; i++) {
		m->known[i] = get_u64(&r, "known op mixes");
		if (!r.bad && i > 0 && m->known[i] <= m->known[i - 1])
			refuse(&r, "known op mixes out of order at entry %u", i);
		m->n_known = (int)i + 1;
	}
	uint64_t np = get_u64(&r, "parameter count");
	if (!r.bad && np != m->n_params)
		refuse(&r, "%llu parameters, its sizes need %llu",
		       (unsigned long long)np, (unsigned long long)m->n_params);
	for (size_t i = 0; i < m->n_params && !r.bad; i++)
		m->params[i] = get_f64(&r, "parameters");
	if (!r.bad && r.at != r.n)
		refuse(&r, "%zu bytes after the parameters", r.n - r.at);
	double lo, hi;
	if (!r.bad)
		gnn_model_raw_range(m, &lo, &hi);
	if (!r.bad && !(isfinite(lo) && isfinite(hi)))
		refuse(&r, "the parameters overflow: the network's output for "
			   "a kernel like those it was trained on is not "
			   "finite");
	if (r.bad) {
		gnn_model_free(m);
		return TS_ERR_PARSE;
	}
	return TS_OK;
}

size_t gnn_model_file_max(void)
{
	return gnn_model_param_count(GNN_MAX_HIDDEN, GNN_MAX_LAYERS,
				     GNN_MAX_HIDDEN) * 8 +
	       (size_t)GNN_MAX_KNOWN * 8 + (64 << 10);
}

enum ts_status gnn_model_load(const char *path, struct gnn_model *m,
			      struct ts_diag *d)
{
	char *text;
	size_t len;
	memset(m, 0, sizeof *m);
	/* a file larger than the largest model is refused before it is read
	 * (--model /dev/zero would otherwise read until memory runs out) */
	size_t cap = gnn_model_file_max();
	struct stat sb;
	if (stat(path, &sb) == 0 &&
	    (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > cap)) {
		if (S_ISREG(sb.st_mode))
			ts_diag_set(d, path, 0, 0, "%llu bytes: larger than any "
				    "model file (at most %zu)",
				    (unsigned long long)sb.st_size, cap);
		else
			ts_diag_set(d, path, 0, 0, "not a regular file");
		return TS_ERR_PARSE;
	}
	enum ts_status st = ts_read_file(path, &text, &len, d);
	if (st != TS_OK)
		return st;
	st = gnn_model_read((const unsigned char *)text, len, path, m, d);
	ts_free(text);
	return st;
}
