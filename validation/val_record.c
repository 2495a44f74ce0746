/*
 * val_record.c: the folder a live autotune records into (val.h, "a live
 * record": a lock, a torn line cut, appends whole or undone, modules keyed
 * by content), and the measuring command's words and printed time.
 */
/* flock(2) and fdatasync(2): BSD and POSIX.1b on top of the build-wide
 * POSIX. */
#define _DEFAULT_SOURCE

#include "val.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const failed_columns[VAL_RECORD_FAILED_COLS] = {
	"id", "module", "kernel", "config", "reason"};

const int val_stop_signal[VAL_N_STOP_SIGNALS] = {SIGINT, SIGTERM, SIGHUP,
						 SIGQUIT};

void val_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	for (int i = 0; i < VAL_N_STOP_SIGNALS; i++)
		sigaddset(set, val_stop_signal[i]);
}

/* ---- keys: (module, hw, config) and ids, hashed -------------------------- */

struct val_record_key {
	const char *key; /* NULL: an empty slot */
	uint64_t h;
	int64_t ns;      /* a measurement's runtime; 0 for an id */
};

/* The key of fields a[0..n), each as "<length>:<bytes>" after a kind
 * letter, so no two field lists share one (ts_malloc'd; NULL: no memory). */
static char *make_key(char kind, const char *const *a, int n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return NULL;
	fputc(kind, m);
	for (int i = 0; i < n; i++)
		fprintf(m, "%zu:%s", strlen(a[i]), a[i]);
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	/* open_memstream's buffer is the C library's: copy it into ours */
	char *k = ts_strdup(buf);
	free(buf);
	return k;
}

static struct val_record_key *key_slot(struct val_record_key *keys,
				       size_t mask, const char *k, uint64_t h)
{
	size_t i = h & mask;
	while (keys[i].key && (keys[i].h != h || strcmp(keys[i].key, k)))
		i = (i + 1) & mask;
	return &keys[i];
}

static const struct val_record_key *key_get(const struct val_record *r,
					    const char *k)
{
	if (!r->keys)
		return NULL;
	const struct val_record_key *s =
		key_slot(r->keys, r->mask, k, ts_fnv1a(TS_FNV1A_BASIS, k,
						       strlen(k)));
	return s->key ? s : NULL;
}

/* Adds k (copied) with ns; the table stays at most half full. */
static enum ts_status key_put(struct val_record *r, const char *k, int64_t ns)
{
	if (2 * (r->n_keys + 1) > (r->keys ? r->mask + 1 : 0)) {
		size_t n = r->keys ? 2 * (r->mask + 1) : 64;
		struct val_record_key *nk = ts_calloc(n, sizeof *nk);
		if (!nk)
			return TS_ERR_NOMEM;
		for (size_t i = 0; r->keys && i <= r->mask; i++)
			if (r->keys[i].key)
				*key_slot(nk, n - 1, r->keys[i].key,
					  r->keys[i].h) = r->keys[i];
		ts_free(r->keys);
		r->keys = nk;
		r->mask = n - 1;
	}
	uint64_t h = ts_fnv1a(TS_FNV1A_BASIS, k, strlen(k));
	struct val_record_key *s = key_slot(r->keys, r->mask, k, h);
	if (!s->key) {
		if (!(s->key = ts_arena_strndup(&r->arena, k, strlen(k))))
			return TS_ERR_NOMEM;
		s->h = h;
		r->n_keys++;
	}
	s->ns = ns;
	return TS_OK;
}

/* Puts (module, hw, config) with ns and the id; TS_ERR_NOMEM only. */
static enum ts_status put_row(struct val_record *r, const char *id,
			      const char *module, const char *hw,
			      const char *config, int64_t ns)
{
	const char *m[3] = {module, hw, config};
	char *km = make_key('m', m, 3), *ki = make_key('i', &id, 1);
	enum ts_status st = km && ki ? key_put(r, km, ns) : TS_ERR_NOMEM;
	if (!st)
		st = key_put(r, ki, 0);
	ts_free(km);
	ts_free(ki);
	return st;
}

/* ---- opening ------------------------------------------------------------- */

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = ts_malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Is path a regular file that tpusim may write (absent: may the folder
 * take it)? Else why, in d. */
static enum ts_status check_file(const char *path, const char *dir,
				 struct ts_diag *d)
{
	struct stat sb;
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT && access(dir, W_OK) == 0)
			return TS_OK;
		ts_diag_set(d, errno == ENOENT ? dir : path, 0, 0,
			    "cannot write: %s", strerror(errno));
		return TS_ERR_IO;
	}
	if (!S_ISREG(sb.st_mode)) {
		ts_diag_set(d, path, 0, 0,
			    "not a regular file, as a record's files are");
		return TS_ERR_IO;
	}
	if (access(path, W_OK) != 0) {
		ts_diag_set(d, path, 0, 0, "cannot write: %s", strerror(errno));
		return TS_ERR_IO;
	}
	return TS_OK;
}

/* The end of text's last whole record: just past the last newline outside
 * double quotes (RFC 4180: a doubled quote toggles twice). */
static size_t last_record_end(const char *text, size_t len)
{
	size_t end = 0;
	bool quoted = false;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '"')
			quoted = !quoted;
		else if (text[i] == '\n' && !quoted)
			end = i + 1;
	}
	return end;
}

/* Reads path (absent: empty) into *text (*len bytes, which may hold a
 * NUL), checks its header (names[0..n) in any order: pos, *has) and cuts a
 * torn last record: the bytes after the last record boundary, appended to
 * path.torn first and said on note (a last row without its newline,
 * written by hand, is kept there). */
static enum ts_status read_repaired(const char *path, const char *const *names,
				    int n, int *pos, bool *has, char **text,
				    size_t *len, FILE *note, struct ts_diag *d)
{
	*text = NULL;
	*len = 0;
	*has = false;
	for (int c = 0; c < n; c++)
		pos[c] = c;
	struct stat sb;
	if (stat(path, &sb) != 0)
		return TS_OK; /* absent: check_file saw to the rest */
	enum ts_status st = ts_read_file(path, text, len, d);
	if (st || *len == 0)
		return st;
	size_t keep = last_record_end(*text, *len);
	if (keep > 0 && (st = val_csv_columns(path, *text, keep, names, n, pos,
					       d)))
		return st;
	*has = keep > 0;
	if (keep == *len)
		return TS_OK;
	size_t n_cut = *len - keep;
	char torn[4096];
	snprintf(torn, sizeof torn, "%s.torn", path);
	FILE *f = fopen(torn, "ab");
	bool saved = f && fwrite(*text + keep, 1, n_cut, f) == n_cut &&
		     fputc('\n', f) != EOF;
	if (f && fclose(f) != 0)
		saved = false;
	if (!saved || truncate(path, (off_t)keep) != 0) {
		ts_diag_set(d, path, 0, 0, "cannot cut its torn last line: %s",
			    strerror(errno));
		return TS_ERR_IO;
	}
	fprintf(note, "%s: note: cut a torn last line, left by an append cut "
		      "short (a crash or a full disk), and kept it in %s: %zu "
		      "bytes, \"",
		path, torn, n_cut);
	ts_fput_text(*text + keep, n_cut < 80 ? n_cut : 80, note);
	fprintf(note, "%s\"\n", n_cut > 80 ? "..." : "");
	(*text)[keep] = '\0';
	*len = keep;
	return TS_OK;
}

/* Takes the record's lock (DIR/.lock), waiting for another run. */
static enum ts_status lock(struct val_record *r, FILE *note, struct ts_diag *d)
{
	char *path = ts_arena_printf(&r->arena, "%s/.lock", r->dir);
	if (!path) {
		ts_diag_set(d, r->dir, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	r->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	int e = r->lock_fd < 0 ? errno : 0;
	if (!e && flock(r->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		if (e == EWOULDBLOCK) {
			fprintf(note, "%s: note: another run is recording into "
				      "this folder: waiting for it to end\n",
				r->dir);
			fflush(note);
			while ((e = flock(r->lock_fd, LOCK_EX) ? errno : 0) ==
			       EINTR)
				;
		}
	}
	if (e) {
		ts_diag_set(d, path, 0, 0, "cannot lock the record: %s",
			    strerror(e));
		return TS_ERR_IO;
	}
	return TS_OK;
}

enum ts_status val_record_open(const char *dir, struct val_record *r,
			       FILE *note, struct ts_diag *d)
{
	memset(r, 0, sizeof *r);
	r->lock_fd = -1;
	ts_arena_init(&r->arena);
	r->dir = ts_strdup(dir);
	r->csv_path = join(dir, "measurements.csv");
	r->failed_path = join(dir, "failed.csv");
	if (!r->dir || !r->csv_path || !r->failed_path) {
		ts_diag_set(d, dir, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	enum ts_status st;
	size_t failed_len, csv_len;
	if ((st = lock(r, note, d)) ||
	    (st = check_file(r->csv_path, dir, d)) ||
	    (st = check_file(r->failed_path, dir, d)) ||
	    (st = read_repaired(r->failed_path, failed_columns,
				VAL_RECORD_FAILED_COLS, r->failed_pos,
				&r->failed_header, &r->failed_text, &failed_len,
				note, d)) ||
	    (st = read_repaired(r->csv_path, val_set_columns, VAL_COL_COUNT,
				r->csv_pos, &r->csv_header, &r->csv_text, &csv_len,
				note, d)))
		return st;
	/* a header and no row (the first append cut) is an empty record; any
	 * byte after the header, a NUL too, is the set reader's to judge */
	const char *body =
		r->csv_header ? memchr(r->csv_text, '\n', csv_len) : NULL;
	if (!body || body + 1 == r->csv_text + csv_len)
		return TS_OK;
	if ((st = val_dataset_load_csv(r->csv_path, &r->ds, d)))
		return st;
	for (int i = 0; i < r->ds.n_rows && !st; i++) {
		const struct val_row *row = &r->ds.rows[i];
		char cfg[SIM_TILE_CONFIG_TEXT_MAX];
		sim_tile_config_format(&row->cfg, cfg, sizeof cfg);
		st = put_row(r, row->id, row->module, row->hw, cfg,
			     row->runtime_ns);
	}
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, r->csv_path, 0, 0, "out of memory");
	return st;
}

void val_record_close(struct val_record *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* and the lock with it */
	r->lock_fd = -1;
	val_dataset_free(&r->ds);
	ts_arena_free(&r->arena);
	ts_free(r->keys);
	ts_free(r->csv_text);
	ts_free(r->failed_text);
	ts_free(r->dir);
	ts_free(r->csv_path);
	ts_free(r->failed_path);
	r->keys = NULL;
	r->csv_text = r->failed_text = r->dir = r->csv_path = r->failed_path =
		NULL;
}

int64_t val_record_find(const struct val_record *r, const char *module,
			const char *hw, const char *config)
{
	const char *m[3] = {module, hw, config};
	char *k = make_key('m', m, 3);
	const struct val_record_key *s = k ? key_get(r, k) : NULL;
	ts_free(k);
	return s ? s->ns : 0;
}

/* ---- appending ----------------------------------------------------------- */

/*
 * Appends fields[0..n) (in names' order) as one line in the file's header
 * order, the header first when the file has none: one line whole, or the
 * file truncated back to its length before, with the terminating signals
 * held off meanwhile (an interrupt lands after it); fdatasync'd.
 */
static enum ts_status append_line(const char *path, bool *has_header,
				  const char *const *names, const int *pos,
				  int n, const char *const *fields,
				  struct ts_diag *d)
{
	int at[VAL_COL_COUNT]; /* the column at each position */
	for (int c = 0; c < n; c++)
		at[pos[c]] = c;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		ts_diag_set(d, path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	for (int i = 0; !*has_header && i < n; i++)
		fprintf(m, "%s%s", names[i], i + 1 < n ? "," : "\n");
	for (int i = 0; i < n; i++) {
		ts_csv_field(m, fields[at[i]]);
		fputc(i + 1 < n ? ',' : '\n', m);
	}
	if (fclose(m) != 0) {
		free(buf);
		ts_diag_set(d, path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	sigset_t hold, old;
	val_stop_signals(&hold);
	sigprocmask(SIG_BLOCK, &hold, &old);
	int err = 0, cut_err = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		err = errno;
	} else {
		for (size_t done = 0; done < len && !err;) {
			ssize_t w = write(fd, buf + done, len - done);
			if (w > 0)
				done += (size_t)w;
			else if (w < 0 && errno != EINTR)
				err = errno;
			else if (w == 0)
				err = EIO;
		}
		if (!err && fdatasync(fd) != 0)
			err = errno;
		if (err && ftruncate(fd, sb.st_size) != 0)
			cut_err = errno;
	}
	int close_err = fd >= 0 && close(fd) != 0 ? errno : 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(buf);
	if (cut_err) {
		ts_diag_set(d, path, 0, 0,
			    "cannot append: %s; nor cut the part written: %s "
			    "(the next run cuts it)",
			    strerror(err), strerror(cut_err));
		return TS_ERR_IO;
	}
	if (err) {
		ts_diag_set(d, path, 0, 0,
			    "cannot append: %s (the file is as it was before "
			    "this line)",
			    strerror(err));
		return TS_ERR_IO;
	}
	if (close_err) { /* the line is written and synced */
		ts_diag_set(d, path, 0, 0,
			    "the line was appended and synced, then closing "
			    "the file failed: %s",
			    strerror(close_err));
		return TS_ERR_IO;
	}
	*has_header = true;
	return TS_OK;
}

enum ts_status val_record_add(struct val_record *r, const char *id,
			      const char *module, const char *hw,
			      const char *config, int64_t runtime_ns,
			      struct ts_diag *d)
{
	char *ki = make_key('i', &id, 1);
	if (!ki) {
		ts_diag_set(d, r->csv_path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	bool dup = key_get(r, ki);
	ts_free(ki);
	if (dup || val_record_find(r, module, hw, config)) {
		ts_diag_set(d, r->csv_path, 0, 0,
			    "%s is recorded already: not appended again",
			    dup ? "the id" : "the module, hw and config");
		return TS_ERR_MISUSE;
	}
	char ns[32];
	snprintf(ns, sizeof ns, "%" PRId64, runtime_ns);
	const char *f[VAL_COL_COUNT] = {
		[VAL_COL_ID] = id,
		[VAL_COL_MODULE] = module,
		[VAL_COL_HW] = hw,
		[VAL_COL_CONFIG] = config,
		[VAL_COL_RUNTIME_NS] = ns,
		[VAL_COL_RUNTIME_MIN_NS] = "",
		[VAL_COL_REPEATS] = "",
		[VAL_COL_TIMING] = val_timing_name(VAL_TIMING_DEVICE),
		[VAL_COL_SOURCE] = "tpusim autotune",
	};
	enum ts_status st = append_line(r->csv_path, &r->csv_header,
					val_set_columns, r->csv_pos,
					VAL_COL_COUNT, f, d);
	if (!st && (st = put_row(r, id, module, hw, config, runtime_ns)))
		ts_diag_set(d, r->csv_path, 0, 0, "out of memory");
	return st;
}

enum ts_status val_record_add_failure(struct val_record *r, const char *id,
				      const char *module, const char *kernel,
				      const char *config, const char *reason,
				      struct ts_diag *d)
{
	const char *f[VAL_RECORD_FAILED_COLS] = {id, module, kernel, config,
						 reason};
	return append_line(r->failed_path, &r->failed_header,
			   failed_columns, r->failed_pos,
			   VAL_RECORD_FAILED_COLS, f, d);
}

struct bytes {
	const char *p;
	size_t n;
};

static enum ts_status write_bytes(FILE *f, void *arg)
{
	const struct bytes *b = arg;
	return fwrite(b->p, 1, b->n, f) == b->n ? TS_OK : TS_ERR_IO;
}

enum ts_status val_record_module(struct val_record *r, const char *stem,
				uint64_t key, const char *kernel,
				const char *text, size_t len, char *rel,
				size_t cap, struct ts_diag *d)
{
	int n = snprintf(rel, cap, "modules/%s-%016" PRIx64 "%s%s.hlo", stem,
			 key, kernel ? "." : "", kernel ? kernel : "");
	/* in the arena: diagnostics name it until the record is closed */
	char *path = n >= 0 && (size_t)n < cap
			     ? ts_arena_printf(&r->arena, "%s/%s", r->dir, rel)
			     : NULL;
	if (!path) {
		ts_diag_set(d, r->dir, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	enum ts_status st;
	struct stat sb;
	if (stat(path, &sb) == 0) {
		char *had = NULL;
		size_t had_len = 0;
		if (!S_ISREG(sb.st_mode)) {
			ts_diag_set(d, path, 0, 0, "not a regular file, as a "
						   "record's files are");
			return TS_ERR_IO;
		}
		st = ts_read_file(path, &had, &had_len, d);
		if (!st && (had_len != len || memcmp(had, text, len))) {
			ts_diag_set(d, path, 0, 0,
				    "holds other bytes than the module it is "
				    "named for (edited after it was recorded?): "
				    "move it aside");
			st = TS_ERR_PARSE;
		}
		ts_free(had);
		return st;
	}
	/* written whole (a temp file renamed, the stop signals held off)
	 * and synced with its folder before a row names it */
	sigset_t hold, old;
	val_stop_signals(&hold);
	sigprocmask(SIG_BLOCK, &hold, &old);
	st = ts_write_file_atomic(path, write_bytes, &(struct bytes){text, len},
				  d);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (st && !d->msg[0])
		ts_diag_set(d, path, 0, 0, "cannot write: %s",
			    ts_status_str(st));
	char *folder = st ? NULL : ts_arena_printf(&r->arena, "%s/modules",
						   r->dir);
	const char *const synced[2] = {path, folder};
	for (int i = 0; i < 2 && !st; i++) {
		int fd = synced[i] ? open(synced[i], O_RDONLY | O_CLOEXEC) : -1;
		if (fd < 0 || fsync(fd) != 0) {
			ts_diag_set(d, path, 0, 0, "cannot sync %s: %s",
				    i ? "its folder" : "it", strerror(errno));
			st = TS_ERR_IO;
		}
		if (fd >= 0)
			close(fd);
	}
	return st;
}

/* ---- the measuring command's words and output ---------------------------- */

bool val_cmd_split(const char *cmd, char *buf, char **words, int *n)
{
	*n = 0;
	const char *p = cmd;
	char *o = buf;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (*n == VAL_CMD_MAX_WORDS)
			return false;
		words[(*n)++] = o;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');
				if (!e)
					return false;
				memcpy(o, p + 1, (size_t)(e - p - 1));
				o += e - p - 1;
				p = e + 1;
			} else if (*p == '"') {
				p++;
				while (*p && *p != '"') {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					*o++ = *p++;
				}
				if (*p != '"')
					return false;
				p++;
			} else {
				if (*p == '\\' && p[1])
					p++;
				*o++ = *p++;
			}
		}
		*o++ = '\0';
	}
	return *n > 0;
}

char *val_cmd_substitute(const char *word, const char *const vals[3])
{
	static const char *const keys[3] = {"{module}", "{kernel}", "{config}"};
	size_t cap = strlen(word) + 1;
	for (int k = 0; k < 3; k++)
		for (const char *q = strstr(word, keys[k]); q;
		     q = strstr(q + 1, keys[k]))
			cap += strlen(vals[k]);
	char *out = ts_malloc(cap), *o = out;
	if (!out)
		return NULL;
	for (const char *p = word; *p;) {
		int k = 0;
		while (k < 3 && strncmp(p, keys[k], strlen(keys[k])))
			k++;
		if (k < 3) {
			size_t l = strlen(vals[k]);
			memcpy(o, vals[k], l);
			o += l;
			p += strlen(keys[k]);
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/* Is w (n bytes) a decimal number: digits with at most one point (one
 * digit at least), then optionally e or E, a sign and digits? */
static bool is_decimal(const char *w, size_t n)
{
	size_t i = 0, digits = 0;
	while (i < n && isdigit((unsigned char)w[i]))
		i++, digits++;
	if (i < n && w[i] == '.')
		for (i++; i < n && isdigit((unsigned char)w[i]); i++)
			digits++;
	if (!digits)
		return false;
	if (i < n && (w[i] == 'e' || w[i] == 'E')) {
		i++;
		if (i < n && (w[i] == '+' || w[i] == '-'))
			i++;
		size_t e = i;
		while (i < n && isdigit((unsigned char)w[i]))
			i++;
		if (i == e)
			return false;
	}
	return i == n;
}

bool val_cmd_read_ns(const char *out, size_t len, int64_t *ns, char *why,
		     size_t cap)
{
	const char *p = out, *end = out + len;
	while (p < end && isspace((unsigned char)*p))
		p++;
	const char *w = p;
	while (p < end && !isspace((unsigned char)*p))
		p++;
	size_t n = (size_t)(p - w);
	/* the word as the reason shows it: at most 40 bytes, a control byte
	 * (or a NUL) as '?' */
	char word[48];
	size_t shown = n < 40 ? n : 40;
	for (size_t i = 0; i < shown; i++)
		word[i] = (unsigned char)w[i] < 0x20 || w[i] == 0x7f ? '?'
								      : w[i];
	snprintf(word + shown, sizeof word - shown, "%s", n > 40 ? "..." : "");
	if (n == 0) {
		snprintf(why, cap, "printed no time (ns, first on its output)");
		return false;
	}
	if (!is_decimal(w, n)) {
		snprintf(why, cap, "printed '%s' first: not a decimal number of "
				   "ns", word);
		return false;
	}
	char *num = ts_malloc(n + 1);
	if (!num) {
		snprintf(why, cap, "out of memory");
		return false;
	}
	memcpy(num, w, n);
	num[n] = '\0';
	double v = strtod(num, NULL);
	ts_free(num);
	/* the set format records whole ns from 1 to INT64_MAX (2^63 - 1;
	 * doubles below 2^63 round to at most 2^63 - 1024) */
	if (!(v >= 0.5)) {
		snprintf(why, cap, "printed %s ns: below 1 ns once rounded to "
				   "whole ns, as the record keeps them", word);
		return false;
	}
	if (!(v < 9223372036854775808.0)) {
		snprintf(why, cap, "printed %s ns: more than the record's "
				   "largest time, %" PRId64 " ns", word,
			 INT64_MAX);
		return false;
	}
	*ns = (int64_t)llround(v);
	return true;
}
