/*
 * val_dataset.c: reads one measurement set (shared/data/README.md format):
 * an RFC 4180 measurements.csv whose rows name HLO modules beside it.
 * Every check reports file:line:col of the offending field; nothing in the
 * file is skipped or guessed. Modules are listed once each, not parsed.
 */
/* realpath(3): X/Open on top of the build-wide POSIX. */
#define _XOPEN_SOURCE 700

#include "val.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- names ------------------------------------------------------------- */

static const char *const timing_names[] = {
	[VAL_TIMING_DEVICE] = "device",
	[VAL_TIMING_HOST] = "host",
};
_Static_assert(TS_ARRAY_LEN(timing_names) == VAL_TIMING_COUNT,
	       "timing_names must name every val_timing");

const char *val_timing_name(enum val_timing t)
{
	return (unsigned)t < VAL_TIMING_COUNT ? timing_names[t] : "unknown";
}

/*
 * Where an op-set row id's family ends: before its first word that names
 * an element type ("layer_norm_f16_10x1024x2048": family layer_norm,
 * shape f16_10x1024x2048; "softmax_f32_4096x32:sweepN": softmax, shape
 * f32_4096x32), so that a family of several words (leaky_relu, rms_norm,
 * binary_step) is one family and ops of one shape share a shape key. An
 * id with no such word: its first word is the family. Returns the
 * family's length; *shape the shape's start.
 */
static size_t family_len(const char *id, const char **shape)
{
	for (const char *w = id; *w;) {
		size_t n = strcspn(w, "_:");
		for (int t = 0; t < IR_TYPE_COUNT; t++) {
			const char *name = ir_type_name((enum ir_type)t);
			if (w > id && t != IR_TYPE_TUPLE && strlen(name) == n &&
			    !strncmp(w, name, n)) {
				*shape = w;
				return (size_t)(w - id - 1);
			}
		}
		if (w[n] != '_')
			break;
		w += n + 1;
	}
	size_t n = strcspn(id, "_");
	*shape = id[n] == '_' ? id + n + 1 : id + n;
	return n;
}

void val_id_family(const char *id, char *buf, size_t cap)
{
	if (cap == 0)
		return;
	const char *shape;
	size_t n = family_len(id, &shape);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, id, n);
	buf[n] = '\0';
}

/* A row's loss group ("set/kernel" in tile sets, "set/family" otherwise)
 * or shape ("set/kernel", or "set/" + the id after its family and before
 * any ':'), in the arena (val.h). */
const char *val_row_key(struct ts_arena *a, const struct val_dataset *ds,
			const struct val_row *row, bool shape)
{
	char buf[256];
	if (ds->has_configs)
		snprintf(buf, sizeof buf, "%s/%s", ds->name,
			 ds->modules[row->i_module].name);
	else if (!shape) {
		char fam[128];
		val_id_family(row->id, fam, sizeof fam);
		snprintf(buf, sizeof buf, "%s/%s", ds->name, fam);
	} else {
		const char *u;
		family_len(row->id, &u);
		snprintf(buf, sizeof buf, "%s/%.*s", ds->name,
			 (int)strcspn(u, ":"), u);
	}
	return ts_arena_strndup(a, buf, strlen(buf));
}

/* ---- columns ------------------------------------------------------------ */

/* measurements.csv's columns (val.h enum val_col), in the order a new
 * file lists them. */
const char *const val_set_columns[VAL_COL_COUNT] = {
	[VAL_COL_ID] = "id",
	[VAL_COL_MODULE] = "module",
	[VAL_COL_HW] = "hw",
	[VAL_COL_CONFIG] = "config",
	[VAL_COL_RUNTIME_NS] = "runtime_ns",
	[VAL_COL_RUNTIME_MIN_NS] = "runtime_min_ns",
	[VAL_COL_REPEATS] = "repeats",
	[VAL_COL_TIMING] = "timing",
	[VAL_COL_SOURCE] = "source",
};

const char *const val_set_opt_columns[VAL_OPT_COUNT] = {
	[VAL_OPT_TOPOLOGY] = "topology",
	[VAL_OPT_SLICES] = "slices",
	[VAL_OPT_DEVICES] = "devices",
	[VAL_OPT_SET] = "set",
};

/* ---- RFC 4180 lexer ----------------------------------------------------- */

/* One field of the current record. */
struct field {
	const char *text; /* unescaped, NUL-terminated (arena) */
	uint32_t col;     /* 1-based column of its first byte (the quote if any) */
	bool quoted;      /* written in double quotes */
};

/* The lexer walks the text once; line/col track the next byte. */
struct lexer {
	const char *p, *end;
	uint32_t line, col;     /* position of p, 1-based */
	struct ts_arena *arena; /* where unescaped fields go */
	const char *file;       /* for diagnostics */
	struct ts_diag *d;
	char *buf;              /* scratch for unescaping (ts_malloc'd) */
	size_t cap;             /* bytes in buf */
};

static bool at_eol(const struct lexer *lx)
{
	return lx->p == lx->end || *lx->p == '\n' ||
	       (*lx->p == '\r' && lx->p + 1 < lx->end && lx->p[1] == '\n');
}

/* Consumes the end of line (LF or CRLF) at p, if any. */
static void skip_eol(struct lexer *lx)
{
	if (lx->p < lx->end && *lx->p == '\r')
		lx->p++;
	if (lx->p < lx->end && *lx->p == '\n')
		lx->p++;
	lx->line++;
	lx->col = 1;
}

static enum ts_status buf_push(struct lexer *lx, size_t *len, char c)
{
	if (*len + 1 >= lx->cap) {
		size_t cap = lx->cap ? lx->cap * 2 : 256;
		char *nb = ts_realloc(lx->buf, cap);
		if (!nb)
			return TS_ERR_NOMEM;
		lx->buf = nb;
		lx->cap = cap;
	}
	lx->buf[(*len)++] = c;
	return TS_OK;
}

/* A NUL byte in a field: a CSV holds text, and a name or id cut at the
 * NUL would read as another. */
static enum ts_status nul_byte(struct lexer *lx)
{
	ts_diag_set(lx->d, lx->file, lx->line, lx->col,
		    "a NUL byte in a field (the file is text)");
	return TS_ERR_PARSE;
}

/* Reads one field starting at p; leaves p at ',' or the end of line. */
static enum ts_status lex_field(struct lexer *lx, struct field *f)
{
	size_t len = 0;
	f->col = lx->col;
	f->quoted = false;
	if (lx->p < lx->end && *lx->p == '"') {
		uint32_t open_line = lx->line, open_col = lx->col;
		f->quoted = true;
		lx->p++;
		lx->col++;
		for (;;) {
			if (lx->p == lx->end) {
				ts_diag_set(lx->d, lx->file, open_line, open_col,
					    "unterminated quoted field");
				return TS_ERR_PARSE;
			}
			char c = *lx->p;
			if (c == '\0')
				return nul_byte(lx);
			if (c == '"') {
				if (lx->p + 1 < lx->end && lx->p[1] == '"') {
					if (buf_push(lx, &len, '"'))
						return TS_ERR_NOMEM;
					lx->p += 2;
					lx->col += 2;
					continue;
				}
				lx->p++;
				lx->col++;
				break;
			}
			if (buf_push(lx, &len, c))
				return TS_ERR_NOMEM;
			lx->p++;
			if (c == '\n') {
				lx->line++;
				lx->col = 1;
			} else {
				lx->col++;
			}
		}
		if (lx->p < lx->end && *lx->p != ',' && !at_eol(lx)) {
			ts_diag_set(lx->d, lx->file, lx->line, lx->col,
				    "expected ',' or end of line after the "
				    "closing quote");
			return TS_ERR_PARSE;
		}
	} else {
		while (lx->p < lx->end && *lx->p != ',' && !at_eol(lx)) {
			char c = *lx->p;
			if (c == '\0')
				return nul_byte(lx);
			if (c == '"') {
				ts_diag_set(lx->d, lx->file, lx->line, lx->col,
					    "'\"' inside an unquoted field "
					    "(quote the whole field)");
				return TS_ERR_PARSE;
			}
			if (c == '\r') {
				ts_diag_set(lx->d, lx->file, lx->line, lx->col,
					    "stray carriage return");
				return TS_ERR_PARSE;
			}
			if (buf_push(lx, &len, c))
				return TS_ERR_NOMEM;
			lx->p++;
			lx->col++;
		}
	}
	f->text = ts_arena_strndup(lx->arena, len ? lx->buf : "", len);
	return f->text ? TS_OK : TS_ERR_NOMEM;
}

/*
 * Reads one record into fields[0..want). More or fewer fields than want is
 * an error naming the expected count; `what` names the record in it.
 */
static enum ts_status lex_record(struct lexer *lx, struct field *fields,
				 int want, const char *what)
{
	int n = 0;
	for (;;) {
		struct field f;
		uint32_t line = lx->line, col = lx->col;
		if (n == want) {
			ts_diag_set(lx->d, lx->file, line, col,
				    "too many fields: expected %d (as in the "
				    "header)", want);
			return TS_ERR_PARSE;
		}
		enum ts_status st = lex_field(lx, &f);
		if (st)
			return st;
		fields[n++] = f;
		if (lx->p < lx->end && *lx->p == ',') {
			lx->p++;
			lx->col++;
			continue;
		}
		break;
	}
	if (n < want) {
		ts_diag_set(lx->d, lx->file, lx->line, lx->col,
			    "%s has %d field%s, expected %d", what, n,
			    n == 1 ? "" : "s", want);
		return TS_ERR_PARSE;
	}
	skip_eol(lx);
	return TS_OK;
}

/* ---- field checks --------------------------------------------------------- */

/* Parses a decimal integer >= min; false when the text is anything else. */
static bool parse_int(const char *s, int64_t min, int64_t *out)
{
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end != '\0' || errno == ERANGE || v < min)
		return false;
	*out = (int64_t)v;
	return true;
}

/* ---- loading --------------------------------------------------------------- */

void val_dataset_free(struct val_dataset *ds)
{
	if (!ds)
		return;
	ts_free(ds->csv_text);
	ts_free(ds->details_text);
	ts_arena_free(&ds->arena);
	memset(ds, 0, sizeof *ds);
}

enum ts_status val_dataset_subset(const struct val_dataset *ds,
				  const bool *keep, struct val_dataset *out)
{
	memset(out, 0, sizeof *out);
	ts_arena_init(&out->arena);
	out->dir = ds->dir;
	out->name = ds->name;
	out->csv_path = ds->csv_path;
	out->details_path = ds->details_path;
	int *map = ts_calloc((size_t)ds->n_modules + 1, sizeof *map);
	out->rows = ts_arena_array(&out->arena, (size_t)ds->n_rows + 1,
				   sizeof *out->rows);
	out->modules = ts_arena_array(&out->arena, (size_t)ds->n_modules + 1,
				      sizeof *out->modules);
	if (!map || !out->rows || !out->modules) {
		ts_free(map);
		return TS_ERR_NOMEM;
	}
	for (int m = 0; m < ds->n_modules; m++)
		map[m] = -1;
	for (int i = 0; i < ds->n_rows; i++) {
		if (!keep[i])
			continue;
		struct val_row row = ds->rows[i];
		int *m = &map[row.i_module];
		if (*m < 0) {
			*m = out->n_modules++;
			out->modules[*m] = ds->modules[row.i_module];
			out->modules[*m].n_rows = 0;
			out->modules[*m].first_row = out->n_rows;
		}
		row.i_module = *m;
		out->modules[*m].n_rows++;
		out->has_configs |= row.cfg.n_out > 0 || row.cfg.n_kernel > 0;
		out->n_overhead += row.overhead_ns >= 0;
		out->rows[out->n_rows++] = row;
	}
	ts_free(map);
	return TS_OK;
}

/* qsort has no context argument: sort (key, index) pairs instead. */
struct keyed {
	const char *key; /* string compared */
	int idx;         /* its index: ties keep input order */
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sort (key, index) pairs, then walk runs of equal keys: O(n log n). */
enum ts_status val_group_keys(const char *const *keys, int n, int *group_of,
			      int *n_groups)
{
	*n_groups = 0;
	if (n <= 0)
		return TS_OK;
	struct keyed *k = ts_calloc((size_t)n, sizeof *k);
	int *first = ts_calloc((size_t)n, sizeof *first);
	if (!k || !first) {
		ts_free(k);
		ts_free(first);
		return TS_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++)
		k[i] = (struct keyed){keys[i], i};
	qsort(k, (size_t)n, sizeof *k, cmp_keyed);
	/* first[i]: the first index holding the same key (<= i). */
	for (int i = 0; i < n; i++)
		first[k[i].idx] = i > 0 && !strcmp(k[i].key, k[i - 1].key)
					  ? first[k[i - 1].idx]
					  : k[i].idx;
	for (int i = 0; i < n; i++)
		group_of[i] = first[i] == i ? (*n_groups)++ : group_of[first[i]];
	ts_free(k);
	ts_free(first);
	return TS_OK;
}

/*
 * Checks that ids are unique and lists the modules. Groups are numbered by
 * first appearance, so a row whose group is not the next new number
 * repeats an earlier key: the first such row is the duplicate a linear
 * scan would report.
 */
static enum ts_status index_rows(struct val_dataset *ds, struct ts_diag *d)
{
	int n = ds->n_rows, n_groups = 0;
	enum ts_status st = TS_OK;
	const char **keys = ts_calloc((size_t)n, sizeof *keys);
	int *group_of = ts_calloc((size_t)n, sizeof *group_of);
	int *first = ts_calloc((size_t)n, sizeof *first);
	if (!keys || !group_of || !first) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		keys[i] = ds->rows[i].id;
	if ((st = val_group_keys(keys, n, group_of, &n_groups)))
		goto out;
	for (int i = 0, seen = 0; i < n; i++) {
		if (group_of[i] == seen) {
			first[seen++] = i;
			continue;
		}
		ts_diag_set(d, ds->csv_path, ds->rows[i].line, 1,
			    "duplicate id '%s' (first on line %u)",
			    ds->rows[i].id, ds->rows[first[group_of[i]]].line);
		st = TS_ERR_PARSE;
		goto out;
	}

	for (int i = 0; i < n; i++)
		keys[i] = ds->rows[i].module;
	if ((st = val_group_keys(keys, n, group_of, &n_groups)))
		goto out;
	ds->modules = ts_arena_array(&ds->arena, (size_t)n_groups,
				     sizeof *ds->modules);
	if (!ds->modules) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	ds->n_modules = n_groups;
	for (int i = 0; i < n; i++) {
		struct val_module *m = &ds->modules[group_of[i]];
		ds->rows[i].i_module = group_of[i];
		if (m->n_rows++ == 0) {
			m->path = ds->rows[i].module;
			m->first_row = i;
		}
	}
out:
	ts_free(keys);
	ts_free(group_of);
	ts_free(first);
	return st;
}

/* Is file (after symbolic links) inside the folder whose real path is rd? */
static bool inside_real(const char *rd, const char *file)
{
	char *rf = realpath(file, NULL);
	size_t n = rd ? strlen(rd) : 0;
	bool in = rd && rf && strncmp(rd, rf, n) == 0 &&
		  (rf[n] == '/' || (n == 1 && rd[0] == '/'));
	free(rf);
	return in;
}

/* The directory part of the last module path found plain (no symbolic
 * link, no ".."): modules under it need only their own file checked. */
struct plain_dir {
	char buf[1024];
	size_t len; /* 0: none yet; else bytes of buf, ending in '/' */
};

/* Is module path rel (full: dir/rel) inside folder dir (real path rd),
 * symbolic links followed? A path of plain components is, without asking
 * realpath(3) (a readlink per component): one lstat per component not
 * already seen plain. Anything else (a link, "..") is resolved in full. */
static bool inside(const char *rd, const char *dir, const char *rel,
		   const char *full, struct plain_dir *seen)
{
	size_t dir_len = strlen(dir), start = 0;
	if (seen->len > 0 && strncmp(rel, seen->buf, seen->len) == 0)
		start = seen->len;
	for (size_t i = start; rel[i];) {
		size_t j = i;
		while (rel[j] && rel[j] != '/')
			j++;
		if ((j - i == 2 && rel[i] == '.' && rel[i + 1] == '.') ||
		    dir_len + 1 + j >= sizeof seen->buf)
			return inside_real(rd, full);
		char prefix[sizeof seen->buf];
		memcpy(prefix, full, dir_len + 1 + j);
		prefix[dir_len + 1 + j] = '\0';
		struct stat sb;
		if (lstat(prefix, &sb) != 0 || S_ISLNK(sb.st_mode))
			return inside_real(rd, full);
		if (!rel[j])
			break;
		i = j + 1;
		memcpy(seen->buf, rel, i);
		seen->len = i;
	}
	return rd != NULL;
}

/* A file a row names (what: "module", "devices"; noun: "a module", "a
 * device order"), rel relative to the set's folder dir (real path rd),
 * located at the row's line and col: its full path (arena) into *full,
 * then TS_OK when it is a regular file inside the folder, symbolic links
 * followed. */
static enum ts_status check_set_file(struct val_dataset *ds, const char *dir,
				     size_t dir_len, const char *rd,
				     struct plain_dir *seen, const char *what,
				     const char *noun, const char *rel,
				     uint32_t line,
				     uint32_t col, const char **full,
				     struct ts_diag *d)
{
	size_t len = strlen(rel);
	if (len > SIZE_MAX - dir_len - 2)
		return TS_ERR_NOMEM;
	char *path = ts_arena_alloc(&ds->arena, dir_len + len + 2);
	if (!path)
		return TS_ERR_NOMEM;
	memcpy(path, dir, dir_len);
	path[dir_len] = '/';
	memcpy(path + dir_len + 1, rel, len + 1);
	*full = path;
	if (rel[0] == '/') {
		ts_diag_set(d, ds->csv_path, line, col,
			    "%s path '%s' is absolute: %s is named relative "
			    "to the set's folder", what, rel, noun);
		return TS_ERR_PARSE;
	}
	struct stat sb;
	if (stat(path, &sb) != 0) {
		ts_diag_set(d, ds->csv_path, line, col,
			    "%s file '%s' not found: %s", what, rel,
			    strerror(errno));
		return TS_ERR_PARSE;
	}
	if (!S_ISREG(sb.st_mode)) {
		ts_diag_set(d, ds->csv_path, line, col,
			    "%s file '%s' is not a regular file", what, rel);
		return TS_ERR_PARSE;
	}
	if (!inside(rd, dir, rel, path, seen)) {
		ts_diag_set(d, ds->csv_path, line, col,
			    "%s path '%s' leads outside the set's folder",
			    what, rel);
		return TS_ERR_PARSE;
	}
	return TS_OK;
}

/* One module's file names: full path for opening, bare name for reports. */
static enum ts_status check_module(struct val_dataset *ds, const char *dir,
				   size_t dir_len, const char *rd,
				   struct plain_dir *seen,
				   const uint32_t *module_cols,
				   struct val_module *m, struct ts_diag *d)
{
	const char *base;
	size_t blen = ts_path_stem(m->path, &base);
	m->name = ts_arena_strndup(&ds->arena, base, blen);
	if (!m->name)
		return TS_ERR_NOMEM;
	return check_set_file(ds, dir, dir_len, rd, seen, "module",
			      "a module", m->path,
			      ds->rows[m->first_row].line,
			      module_cols[m->first_row], &m->full_path, d);
}

static enum ts_status check_modules(struct val_dataset *ds, const char *dir,
				    const uint32_t *module_cols,
				    struct ts_diag *d)
{
	size_t dir_len = strlen(dir);
	char *rd = realpath(dir, NULL);
	struct plain_dir seen = {.len = 0};
	enum ts_status st = TS_OK;
	for (int i = 0; i < ds->n_modules && st == TS_OK; i++)
		st = check_module(ds, dir, dir_len, rd, &seen, module_cols,
				  &ds->modules[i], d);
	/* each row's device order; its own errors are in its file */
	for (int i = 0; i < ds->n_rows && st == TS_OK; i++) {
		struct val_row *row = &ds->rows[i];
		const char *full;
		if (!row->devices)
			continue;
		st = check_set_file(ds, dir, dir_len, rd, &seen, "devices",
				    "a device order", row->devices, row->line,
				    row->devices_col,
				    &full, d);
		if (st == TS_OK)
			st = val_devices_load(full, &ds->arena, &row->slice.at,
					      &row->slice.n_at, d);
	}
	free(rd);
	return st;
}

/* The optional topology and slices fields of a row (col_of[VAL_COL_COUNT
 * + c] for optional column c, -1 when the set has none): the slice its
 * program ran on, 16x16 with 2 slices; an empty topology is none. */
static enum ts_status fill_slice(struct val_dataset *ds, struct val_row *row,
				 const struct field *f, const int *col_of,
				 uint32_t line, struct ts_diag *d)
{
	const char *file = ds->csv_path;
	int it = col_of[VAL_COL_COUNT + VAL_OPT_TOPOLOGY];
	int is = col_of[VAL_COL_COUNT + VAL_OPT_SLICES];
	int iv = col_of[VAL_COL_COUNT + VAL_OPT_DEVICES];
	const struct field *ft = it >= 0 ? &f[it] : NULL;
	const struct field *fs = is >= 0 ? &f[is] : NULL;
	const struct field *fv = iv >= 0 ? &f[iv] : NULL;
	memset(&row->slice, 0, sizeof row->slice);
	row->topology_col = ft ? ft->col : 0;
	row->devices = fv && fv->text[0] ? fv->text : NULL;
	row->devices_col = fv ? fv->col : 0;
	if (fs && fs->text[0] && !(ft && ft->text[0])) {
		ts_diag_set(d, file, line, fs->col,
			    "slices: %s slices of no topology (the topology "
			    "field is empty)", fs->text);
		return TS_ERR_PARSE;
	}
	if (row->devices && !(ft && ft->text[0])) {
		ts_diag_set(d, file, line, fv->col,
			    "devices: a device order of no topology (the "
			    "topology field is empty)");
		return TS_ERR_PARSE;
	}
	if (!ft || !ft->text[0])
		return TS_OK;
	struct ts_diag sd = {0};
	if (hw_slice_parse(ft->text, &row->slice, &sd) != TS_OK) {
		ts_diag_set(d, file, line,
			    ft->col + (ft->quoted ? 1u : 0u) + sd.col - 1,
			    "topology: %s", sd.msg);
		return TS_ERR_PARSE;
	}
	int64_t n = 1;
	if (fs && fs->text[0] &&
	    (!parse_int(fs->text, 1, &n) || n > HW_SLICE_MAX_COUNT)) {
		ts_diag_set(d, file, line, fs->col,
			    "slices: expected empty or a whole number from 1 "
			    "to %d, got '%s'", HW_SLICE_MAX_COUNT, fs->text);
		return TS_ERR_PARSE;
	}
	row->slice.count = (int)n;
	return TS_OK;
}

/* The optional set field of a row: space-separated PATH=VALUE, each a
 * numeric spec field (hw_spec_field) given once and a number; the values'
 * ranges are hw_spec_apply's, when the row is costed. */
static enum ts_status fill_set(struct val_dataset *ds, struct val_row *row,
			       const struct field *f, const int *col_of,
			       uint32_t line, struct ts_diag *d)
{
	int is = col_of[VAL_COL_COUNT + VAL_OPT_SET];
	const struct field *fs = is >= 0 ? &f[is] : NULL;
	row->set = fs ? fs->text : "";
	row->set_col = fs ? fs->col : 0;
	row->n_sets = 0;
	for (const char *p = row->set; *p;) {
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " ");
		if (!n)
			break;
		uint32_t col = row->set_col + (fs->quoted ? 1u : 0u) +
			       (uint32_t)(p - row->set);
		const char *eq = memchr(p, '=', n);
		char path[128];
		snprintf(path, sizeof path, "%.*s",
			 (int)(eq ? (size_t)(eq - p) : n), p);
		const struct hw_field_info *fi = eq ? hw_spec_field(path) : NULL;
		const char *err = !eq			    ? "expected PATH=VALUE"
				  : !fi			    ? "no such spec field"
				  : row->n_sets == VAL_MAX_ROW_SETS ? "too many fields"
								    : NULL;
		for (int i = 0; !err && i < row->n_sets; i++)
			if (row->set_field[i] == fi)
				err = "given twice";
		char *v = NULL;
		if (!err) {
			v = ts_arena_strndup(&ds->arena, eq + 1,
					     n - (size_t)(eq + 1 - p));
			if (!v)
				return TS_ERR_NOMEM;
			char *end = NULL;
			row->set_value[row->n_sets] = strtod(v, &end);
			if (!*v || *end)
				err = "the value is not a number";
		}
		if (err) {
			ts_diag_set(d, ds->csv_path, line, col, "set: %.*s: %s",
				    (int)n, p, err);
			return TS_ERR_PARSE;
		}
		row->set_field[row->n_sets] = fi;
		row->set_text[row->n_sets++] = v;
		p += n;
	}
	return TS_OK;
}

/* Fills one row from its fields; col_of maps column -> field index. */
static enum ts_status fill_row(struct val_dataset *ds, struct val_row *row,
			       const struct field *f, const int *col_of,
			       uint32_t line, struct ts_diag *d)
{
	const char *file = ds->csv_path;
	const struct field *fid = &f[col_of[VAL_COL_ID]];
	const struct field *fmod = &f[col_of[VAL_COL_MODULE]];
	const struct field *fhw = &f[col_of[VAL_COL_HW]];
	const struct field *fcfg = &f[col_of[VAL_COL_CONFIG]];
	const struct field *frt = &f[col_of[VAL_COL_RUNTIME_NS]];
	const struct field *fmin = &f[col_of[VAL_COL_RUNTIME_MIN_NS]];
	const struct field *frep = &f[col_of[VAL_COL_REPEATS]];
	const struct field *ftim = &f[col_of[VAL_COL_TIMING]];

	const struct field *required[] = {fid, fmod, fhw};
	const enum val_col required_col[] = {VAL_COL_ID, VAL_COL_MODULE, VAL_COL_HW};
	for (size_t i = 0; i < TS_ARRAY_LEN(required); i++)
		if (!required[i]->text[0]) {
			ts_diag_set(d, file, line, required[i]->col,
				    "empty %s", val_set_columns[required_col[i]]);
			return TS_ERR_PARSE;
		}

	row->id = fid->text;
	row->module = fmod->text;
	row->hw = fhw->text;
	row->config = fcfg->text;
	row->source = f[col_of[VAL_COL_SOURCE]].text;
	row->line = line;
	row->overhead_ns = -1;
	row->config_col = fcfg->col;
	row->hw_col = fhw->col;

	if (!parse_int(frt->text, 1, &row->runtime_ns)) {
		ts_diag_set(d, file, line, frt->col,
			    "runtime_ns: expected a positive integer (ns), "
			    "got '%s'", frt->text);
		return TS_ERR_PARSE;
	}
	row->runtime_min_ns = -1;
	if (fmin->text[0] && !parse_int(fmin->text, 1, &row->runtime_min_ns)) {
		ts_diag_set(d, file, line, fmin->col,
			    "runtime_min_ns: expected empty or a positive "
			    "integer (ns), got '%s'", fmin->text);
		return TS_ERR_PARSE;
	}
	if (row->runtime_min_ns > row->runtime_ns) {
		ts_diag_set(d, file, line, fmin->col,
			    "runtime_min_ns %lld exceeds runtime_ns %lld",
			    (long long)row->runtime_min_ns,
			    (long long)row->runtime_ns);
		return TS_ERR_PARSE;
	}
	row->repeats = -1;
	if (frep->text[0] && !parse_int(frep->text, 1, &row->repeats)) {
		ts_diag_set(d, file, line, frep->col,
			    "repeats: expected empty or a positive integer, "
			    "got '%s'", frep->text);
		return TS_ERR_PARSE;
	}

	int t = 0;
	while (t < VAL_TIMING_COUNT && strcmp(ftim->text, timing_names[t]))
		t++;
	if (t == VAL_TIMING_COUNT) {
		ts_diag_set(d, file, line, ftim->col,
			    "unknown timing kind '%s' (expected device or "
			    "host)", ftim->text);
		return TS_ERR_PARSE;
	}
	row->timing = (enum val_timing)t;

	struct ts_diag cd = {0};
	enum ts_status st = sim_tile_config_parse(row->config, &row->cfg, &cd);
	if (st == TS_ERR_NOMEM)
		return st;
	if (st != TS_OK) {
		/* The config parser counts columns within the config text;
		 * shift them to the csv (one more for an opening quote). */
		uint32_t col = fcfg->col + (fcfg->quoted ? 1u : 0u) +
			       (cd.col > 0 ? cd.col - 1 : 0);
		ts_diag_set(d, file, line, col, "config: %s", cd.msg);
		return TS_ERR_PARSE;
	}
	if (row->cfg.n_out > 0 || row->cfg.n_kernel > 0)
		ds->has_configs = true;
	st = fill_slice(ds, row, f, col_of, line, d);
	return st == TS_OK ? fill_set(ds, row, f, col_of, line, d) : st;
}

/* Upper bound of the records in text: one per newline, plus one. */
static size_t count_lines(const char *s, size_t len)
{
	size_t n = 1;
	for (const char *p = s; (p = memchr(p, '\n', len - (size_t)(p - s)));
	     p++)
		n++;
	return n;
}

/*
 * Reads a header record naming each of names[0..n_req) exactly once and
 * each of names[n_req..n) at most once, in any order, into pos (the field
 * index of each name; -1 for an optional one absent); an unknown, repeated
 * or missing name is an error at its place. Up to n fields are read, so
 * that an extra one is reported by name. *n_hdr: the fields of the header.
 * Leaves lx after the line.
 */
static enum ts_status lex_columns(struct lexer *lx, const char *const *names,
				  int n_req, int n, int *pos, int *n_fields)
{
	enum ts_status st;
	for (int c = 0; c < n; c++)
		pos[c] = -1;
	int n_hdr = 0;
	for (;;) {
		struct field h;
		if ((st = lex_field(lx, &h)))
			return st;
		int c = 0;
		while (c < n && strcmp(h.text, names[c]))
			c++;
		if (c < n && pos[c] >= 0) {
			ts_diag_set(lx->d, lx->file, lx->line, h.col,
				    "duplicate column '%s'", h.text);
			return TS_ERR_PARSE;
		}
		if (c == n) {
			ts_diag_set(lx->d, lx->file, lx->line, h.col,
				    "unknown column '%s'", h.text);
			return TS_ERR_PARSE;
		}
		pos[c] = n_hdr++;
		if (lx->p < lx->end && *lx->p == ',') {
			lx->p++;
			lx->col++;
			continue;
		}
		break;
	}
	for (int c = 0; c < n_req; c++)
		if (pos[c] < 0) {
			ts_diag_set(lx->d, lx->file, lx->line, lx->col,
				    "header lacks column '%s'", names[c]);
			return TS_ERR_PARSE;
		}
	*n_fields = n_hdr;
	skip_eol(lx);
	return TS_OK;
}

enum ts_status val_csv_columns(const char *file, const char *text, size_t len,
			       const char *const *names, int n, int *pos,
			       struct ts_diag *d)
{
	struct ts_arena arena;
	ts_arena_init(&arena);
	struct lexer lx = {.p = text, .end = text + len, .line = 1, .col = 1,
			   .arena = &arena, .file = file, .d = d};
	if (len >= 3 && !memcmp(lx.p, "\xEF\xBB\xBF", 3))
		lx.p += 3;
	int n_fields;
	enum ts_status st = lex_columns(&lx, names, n, n, pos, &n_fields);
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, file, 0, 0, "out of memory");
	if (st != TS_OK) {
		d->src = text;
		d->src_len = len;
	}
	ts_free(lx.buf);
	ts_arena_free(&arena);
	return st;
}

static enum ts_status parse_csv(struct val_dataset *ds, const char *dir,
				struct ts_diag *d)
{
	struct lexer lx = {
		.p = ds->csv_text,
		.end = ds->csv_text + ds->csv_len,
		.line = 1,
		.col = 1,
		.arena = &ds->arena,
		.file = ds->csv_path,
		.d = d,
	};
	enum ts_status st = TS_OK;
	uint32_t *module_cols = NULL;
	/* the columns, then the optional ones (their fields: col_of >= 0) */
	enum { ALL = VAL_COL_COUNT + VAL_OPT_COUNT };
	const char *names[ALL];
	int col_of[ALL], n_fields;
	struct field f[ALL];
	for (int c = 0; c < ALL; c++)
		names[c] = c < VAL_COL_COUNT ? val_set_columns[c]
					     : val_set_opt_columns[c - VAL_COL_COUNT];

	/* A UTF-8 byte order mark is not part of the first column name. */
	if (ds->csv_len >= 3 && !memcmp(lx.p, "\xEF\xBB\xBF", 3))
		lx.p += 3;
	if (lx.p == lx.end) {
		ts_diag_set(d, ds->csv_path, 1, 1,
			    "empty file: expected the header line %s,%s,...",
			    val_set_columns[0], val_set_columns[1]);
		return TS_ERR_PARSE;
	}

	if ((st = lex_columns(&lx, names, VAL_COL_COUNT, ALL, col_of,
			      &n_fields)))
		goto out;

	size_t cap = count_lines(ds->csv_text, ds->csv_len);
	if (cap > INT32_MAX) {
		ts_diag_set(d, ds->csv_path, 0, 0, "too many lines");
		st = TS_ERR_PARSE;
		goto out;
	}
	ds->rows = ts_arena_array(&ds->arena, cap, sizeof *ds->rows);
	module_cols = ts_calloc(cap, sizeof *module_cols);
	if (!ds->rows || !module_cols) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	while (lx.p < lx.end) {
		uint32_t line = lx.line;
		if ((st = lex_record(&lx, f, n_fields, "row")))
			goto out;
		struct val_row *row = &ds->rows[ds->n_rows];
		if ((st = fill_row(ds, row, f, col_of, line, d)))
			goto out;
		module_cols[ds->n_rows] = f[col_of[VAL_COL_MODULE]].col;
		ds->n_rows++;
	}
	if (ds->n_rows == 0) {
		ts_diag_set(d, ds->csv_path, lx.line, 1,
			    "no measurements after the header");
		st = TS_ERR_PARSE;
		goto out;
	}
	if ((st = index_rows(ds, d)))
		goto out;
	st = check_modules(ds, dir, module_cols, d);
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, ds->csv_path, 0, 0, "out of memory");
	/* (an error in a devices file shows that file's line) */
	if (st != TS_OK && d && d->file == ds->csv_path) {
		d->src = ds->csv_text;
		d->src_len = ds->csv_len;
	}
	ts_free(module_cols);
	ts_free(lx.buf);
	return st;
}

enum ts_status val_dataset_load_csv(const char *csv_path,
				    struct val_dataset *ds, struct ts_diag *d)
{
	memset(ds, 0, sizeof *ds);
	ts_arena_init(&ds->arena);
	const char *slash = strrchr(csv_path, '/');
	size_t dir_len = slash ? (size_t)(slash - csv_path) : 1;
	const char *dir_src = slash ? csv_path : ".";
	if (slash && dir_len == 0) /* "/measurements.csv" */
		dir_len = 1;
	ds->csv_path = ts_arena_strndup(&ds->arena, csv_path, strlen(csv_path));
	ds->dir = ts_arena_strndup(&ds->arena, dir_src, dir_len);
	if (!ds->csv_path || !ds->dir) {
		ts_diag_set(d, csv_path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	const char *base = strrchr(ds->dir, '/');
	ds->name = base && base[1] ? base + 1 : ds->dir;
	enum ts_status st = ts_read_file(ds->csv_path, &ds->csv_text,
					 &ds->csv_len, d);
	if (st)
		return st;
	return parse_csv(ds, ds->dir, d);
}

/* ---- details.csv ---------------------------------------------------------- */

/* Reads a header record of any width into *out (ts_malloc'd, *n fields). */
static enum ts_status lex_header(struct lexer *lx, struct field **out, int *n)
{
	struct field *f = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct field *nf = nc <= INT32_MAX
						   ? ts_realloc(f, nc * sizeof *nf)
						   : NULL;
			if (!nf) {
				ts_free(f);
				return TS_ERR_NOMEM;
			}
			f = nf;
			cap = nc;
		}
		enum ts_status st = lex_field(lx, &f[len]);
		if (st) {
			ts_free(f);
			return st;
		}
		len++;
		if (lx->p < lx->end && *lx->p == ',') {
			lx->p++;
			lx->col++;
			continue;
		}
		break;
	}
	skip_eol(lx);
	*out = f;
	*n = (int)len;
	return TS_OK;
}

/* bsearch over (id, row) pairs sorted by cmp_keyed: ids are unique. */
static int cmp_key_only(const void *a, const void *b)
{
	return strcmp(((const struct keyed *)a)->key,
		      ((const struct keyed *)b)->key);
}

enum ts_status val_dataset_load_details(struct val_dataset *ds,
					const char *path, struct ts_diag *d)
{
	enum ts_status st = TS_OK;
	struct field *hdr = NULL, *f = NULL;
	struct keyed *idx = NULL;
	uint32_t *seen = NULL; /* details line of each measurement row, 0 none */
	int n_hdr = 0, c_id = -1, c_over = -1;
	ds->details_path = ts_arena_strndup(&ds->arena, path, strlen(path));
	if (!ds->details_path) {
		ts_diag_set(d, path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	const char *file = ds->details_path;
	if ((st = ts_read_file(file, &ds->details_text, &ds->details_len, d)))
		return st;
	struct lexer lx = {
		.p = ds->details_text,
		.end = ds->details_text + ds->details_len,
		.line = 1,
		.col = 1,
		.arena = &ds->arena,
		.file = file,
		.d = d,
	};
	if (ds->details_len >= 3 && !memcmp(lx.p, "\xEF\xBB\xBF", 3))
		lx.p += 3;
	if (lx.p == lx.end) {
		ts_diag_set(d, file, 1, 1,
			    "empty file: expected a header line naming id");
		st = TS_ERR_PARSE;
		goto out;
	}
	if ((st = lex_header(&lx, &hdr, &n_hdr)))
		goto out;
	for (int i = 0; i < n_hdr; i++) {
		int *c = !strcmp(hdr[i].text, "id")		 ? &c_id
			 : !strcmp(hdr[i].text, "overhead_ns") ? &c_over
								 : NULL;
		if (!c)
			continue;
		if (*c >= 0) {
			ts_diag_set(d, file, 1, hdr[i].col,
				    "duplicate column '%s'", hdr[i].text);
			st = TS_ERR_PARSE;
			goto out;
		}
		*c = i;
	}
	if (c_id < 0) {
		ts_diag_set(d, file, 1, 1, "header lacks column 'id'");
		st = TS_ERR_PARSE;
		goto out;
	}
	f = ts_calloc((size_t)n_hdr, sizeof *f);
	idx = ts_calloc((size_t)ds->n_rows, sizeof *idx);
	seen = ts_calloc((size_t)ds->n_rows, sizeof *seen);
	if (!f || !idx || !seen) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < ds->n_rows; i++)
		idx[i] = (struct keyed){ds->rows[i].id, i};
	qsort(idx, (size_t)ds->n_rows, sizeof *idx, cmp_keyed);
	while (lx.p < lx.end) {
		uint32_t line = lx.line;
		if ((st = lex_record(&lx, f, n_hdr, "record")))
			goto out;
		const struct field *fid = &f[c_id];
		struct keyed key = {fid->text, 0};
		const struct keyed *hit =
			bsearch(&key, idx, (size_t)ds->n_rows, sizeof *idx,
				cmp_key_only);
		if (!hit) {
			const char *base = strrchr(ds->csv_path, '/');
			ts_diag_set(d, file, line, fid->col,
				    "id '%s' is not a row of %s", fid->text,
				    base ? base + 1 : ds->csv_path);
			st = TS_ERR_PARSE;
			goto out;
		}
		struct val_row *row = &ds->rows[hit->idx];
		if (seen[hit->idx]) {
			ts_diag_set(d, file, line, fid->col,
				    "duplicate id '%s' (first on line %u)",
				    fid->text, seen[hit->idx]);
			st = TS_ERR_PARSE;
			goto out;
		}
		seen[hit->idx] = line;
		if (c_over < 0 || !f[c_over].text[0])
			continue;
		const struct field *fo = &f[c_over];
		int64_t v;
		if (!parse_int(fo->text, 0, &v)) {
			ts_diag_set(d, file, line, fo->col,
				    "overhead_ns: expected empty or a "
				    "non-negative integer (ns), got '%s'",
				    fo->text);
			st = TS_ERR_PARSE;
			goto out;
		}
		if (row->timing != VAL_TIMING_HOST) {
			ts_diag_set(d, file, line, fo->col,
				    "overhead_ns given for the device-timed "
				    "row '%s' (a device time has no dispatch "
				    "overhead)",
				    row->id);
			st = TS_ERR_PARSE;
			goto out;
		}
		if (v >= row->runtime_ns) {
			ts_diag_set(d, file, line, fo->col,
				    "overhead_ns %lld is not below the row's "
				    "runtime_ns %lld",
				    (long long)v, (long long)row->runtime_ns);
			st = TS_ERR_PARSE;
			goto out;
		}
		row->overhead_ns = v;
		ds->n_overhead++;
	}
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, file, 0, 0, "out of memory");
	if (st != TS_OK && d) {
		d->src = ds->details_text;
		d->src_len = ds->details_len;
	}
	ts_free(hdr);
	ts_free(f);
	ts_free(idx);
	ts_free(seen);
	ts_free(lx.buf);
	return st;
}

/* ---- a compile's device order (devices/ID.csv) ---------------------------- */

enum { DEV_INDEX, DEV_ID, DEV_X, DEV_Y, DEV_Z, DEV_CORE, DEV_SLICE, DEV_COLS };

enum ts_status val_devices_parse(const char *file, const char *text,
				 size_t len, struct ts_arena *arena,
				 const int32_t (**at)[HW_PLACE_COUNT],
				 int64_t *n_at, struct ts_diag *d)
{
	static const char *const names[DEV_COLS] = {
		"index", "id", "x", "y", "z", "core_on_chip", "slice"};
	/* the place each column gives (enum hw_place), -1: none */
	static const int place_of[DEV_COLS] = {-1, -1, HW_PLACE_X, HW_PLACE_Y,
					       HW_PLACE_Z, HW_PLACE_CORE,
					       HW_PLACE_SLICE};
	struct lexer lx = {.p = text, .end = text + len, .line = 1, .col = 1,
			   .arena = arena, .file = file, .d = d};
	enum ts_status st = TS_OK;
	int32_t (*table)[HW_PLACE_COUNT] = NULL, (*read)[HW_PLACE_COUNT] = NULL;
	struct { int64_t index; uint32_t line, col; } *rows = NULL;
	uint32_t *line_of = NULL; /* the line of each index, 0: not yet */
	int pos[DEV_COLS], n_fields;
	struct field f[DEV_COLS];
	int64_t n = 0;
	if (len >= 3 && !memcmp(lx.p, "\xEF\xBB\xBF", 3))
		lx.p += 3;
	if (lx.p == lx.end) {
		ts_diag_set(d, file, 1, 1, "empty file: expected the header "
			    "line index,id,x,y,z,core_on_chip,slice");
		st = TS_ERR_PARSE;
		goto out;
	}
	if ((st = lex_columns(&lx, names, DEV_COLS, DEV_COLS, pos,
			      &n_fields)))
		goto out;
	size_t cap = count_lines(text, len);
	read = ts_malloc(cap * sizeof *read);
	rows = ts_malloc(cap * sizeof *rows);
	if (!read || !rows) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (; lx.p < lx.end; n++) {
		uint32_t line = lx.line;
		if ((st = lex_record(&lx, f, n_fields, "a device")))
			goto out;
		int64_t v[DEV_COLS];
		for (int c = 0; c < DEV_COLS; c++) {
			const struct field *fc = &f[pos[c]];
			if (!parse_int(fc->text, 0, &v[c]) || v[c] > INT32_MAX) {
				ts_diag_set(d, file, line, fc->col,
					    "%s: expected a whole number from 0 "
					    "to %d, got '%s'", names[c],
					    INT32_MAX, fc->text);
				st = TS_ERR_PARSE;
				goto out;
			}
			if (place_of[c] >= 0)
				read[n][place_of[c]] = (int32_t)v[c];
		}
		rows[n].index = v[DEV_INDEX];
		rows[n].line = line;
		rows[n].col = f[pos[DEV_INDEX]].col;
	}
	if (n == 0) {
		ts_diag_set(d, file, lx.line, 1, "no devices after the header");
		st = TS_ERR_PARSE;
		goto out;
	}
	/* n lines, indices 0 to n - 1 each once: each device's place */
	table = ts_arena_array(arena, (size_t)n, sizeof *table);
	line_of = ts_calloc((size_t)n, sizeof *line_of);
	if (!table || !line_of) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int64_t k = 0; k < n; k++) {
		int64_t i = rows[k].index;
		if (i >= n) {
			ts_diag_set(d, file, rows[k].line, rows[k].col,
				    "index %lld: the file lists %lld devices, "
				    "indexed 0 to %lld", (long long)i,
				    (long long)n, (long long)n - 1);
			st = TS_ERR_PARSE;
			goto out;
		}
		if (line_of[i]) {
			ts_diag_set(d, file, rows[k].line, rows[k].col,
				    "index %lld again (first on line %u)",
				    (long long)i, line_of[i]);
			st = TS_ERR_PARSE;
			goto out;
		}
		line_of[i] = rows[k].line;
		memcpy(table[i], read[k], sizeof table[i]);
	}
	*at = (const int32_t (*)[HW_PLACE_COUNT])table;
	*n_at = n;
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, file, 0, 0, "out of memory");
	if (st != TS_OK && d) {
		d->src = text;
		d->src_len = len;
	}
	ts_free(read);
	ts_free(rows);
	ts_free(line_of);
	ts_free(lx.buf);
	return st;
}

enum ts_status val_devices_load(const char *path, struct ts_arena *arena,
				const int32_t (**at)[HW_PLACE_COUNT],
				int64_t *n_at, struct ts_diag *d)
{
	char *buf;
	size_t len;
	const char *file = ts_arena_strndup(arena, path, strlen(path));
	if (!file) {
		ts_diag_set(d, path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	enum ts_status st = ts_read_file(file, &buf, &len, d);
	if (st)
		return st;
	/* the text stays for d's carets */
	char *text = ts_arena_dup(arena, buf, len ? len : 1);
	ts_free(buf);
	if (!text) {
		ts_diag_set(d, file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	return val_devices_parse(file, text, len, arena, at, n_at, d);
}

/* dir + "/" + name (ts_malloc'd), or NULL. */
static char *join_path(const char *dir, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (len > SIZE_MAX - n - 2)
		return NULL;
	char *path = ts_malloc(len + n + 2);
	if (!path)
		return NULL;
	memcpy(path, dir, len);
	path[len] = '/';
	memcpy(path + len + 1, name, n + 1);
	return path;
}

enum ts_status val_dataset_load(const char *dir, struct val_dataset *ds,
				struct ts_diag *d)
{
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	char *path = join_path(dir, len, "measurements.csv");
	if (!path) {
		memset(ds, 0, sizeof *ds);
		ts_diag_set(d, dir, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	enum ts_status st = val_dataset_load_csv(path, ds, d);
	ts_free(path);
	if (st)
		return st;
	/* The optional per-row extras beside it. */
	if (!(path = join_path(dir, len, "details.csv"))) {
		ts_diag_set(d, dir, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	struct stat sb;
	if (stat(path, &sb) == 0)
		st = val_dataset_load_details(ds, path, d);
	else if (errno != ENOENT) {
		ts_diag_set(d, ds->csv_path, 0, 0, "cannot read %s: %s", path,
			    strerror(errno));
		st = TS_ERR_IO;
	}
	ts_free(path);
	return st;
}

/* ---- specs per row ----------------------------------------------------------- */

enum ts_status val_specs_single(const struct hw_spec *spec, const char *path,
				struct val_specs *out)
{
	memset(out, 0, sizeof *out);
	out->path[0] = ts_strdup(path);
	if (!out->path[0])
		return TS_ERR_NOMEM;
	out->n = 1;
	out->hw[0] = NULL;
	out->spec[0] = *spec;
	return TS_OK;
}

void val_specs_free(struct val_specs *s)
{
	for (int i = 0; i < VAL_MAX_HW; i++)
		ts_free(s->path[i]);
	memset(s, 0, sizeof *s);
}

const struct hw_spec *val_specs_find(const struct val_specs *s, const char *hw)
{
	for (int i = 0; i < s->n; i++)
		if (!s->hw[i] || !strcmp(s->hw[i], hw))
			return &s->spec[i];
	return NULL;
}

enum ts_status val_specs_load_dir(const struct val_dataset *ds,
				  const char *dir, struct val_specs *out,
				  struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; i < ds->n_rows; i++) {
		const struct val_row *row = &ds->rows[i];
		if (val_specs_find(out, row->hw))
			continue;
		if (out->n == VAL_MAX_HW) {
			ts_diag_set(d, ds->csv_path, row->line, row->hw_col,
				    "more than %d distinct hw values",
				    VAL_MAX_HW);
			d->src = ds->csv_text;
			d->src_len = ds->csv_len;
			return TS_ERR_SPEC;
		}
		/* "tpu-v3" -> DIR/v3.yaml; a value without the prefix is
		 * taken as the generation itself. */
		const char *gen = row->hw;
		if (!strncmp(gen, "tpu-", 4))
			gen += 4;
		size_t len = strlen(dir) + strlen(gen) + sizeof "/.yaml";
		char *path = ts_malloc(len);
		out->path[out->n] = path; /* owned from here on */
		if (!path) {
			ts_diag_set(d, ds->csv_path, 0, 0, "out of memory");
			return TS_ERR_NOMEM;
		}
		snprintf(path, len, "%s/%s.yaml", dir, gen);
		struct stat sb;
		if (stat(path, &sb) != 0) {
			ts_diag_set(d, ds->csv_path, row->line, row->hw_col,
				    "no hardware spec for hw '%s': %s: %s",
				    row->hw, path, strerror(errno));
			d->src = ds->csv_text;
			d->src_len = ds->csv_len;
			return TS_ERR_SPEC;
		}
		enum ts_status st = hw_spec_load(path, &out->spec[out->n], d);
		if (st)
			return st;
		out->hw[out->n] = row->hw;
		out->n++;
	}
	return TS_OK;
}
