/*
 * ts.c: status strings, diagnostics, the failing-allocation hook, arenas and
 * whole-file I/O. See ts.h for the contracts.
 */
/* realpath(3) for writes through symbolic links: X/Open on top of the
 * build-wide POSIX. */
#define _XOPEN_SOURCE 700

#include "ts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- status ------------------------------------------------------------ */

static const char *const status_str[] = {
	[TS_OK] = "ok",
	[TS_ERR_NOMEM] = "out of memory",
	[TS_ERR_IO] = "input/output error",
	[TS_ERR_PARSE] = "parse error",
	[TS_ERR_SPEC] = "invalid hardware spec",
	[TS_ERR_UNSUPPORTED_OP] = "unsupported operation",
	[TS_ERR_MISUSE] = "invalid arguments",
	[TS_ERR_INFEASIBLE] = "infeasible configuration",
};
_Static_assert(TS_ARRAY_LEN(status_str) == TS_STATUS_COUNT,
	       "status_str must name every ts_status");

const char *ts_status_str(enum ts_status s)
{
	if ((unsigned)s >= TS_STATUS_COUNT)
		return "unknown status";
	return status_str[s];
}

/* ---- diagnostics ------------------------------------------------------- */

void ts_diag_vset(struct ts_diag *d, const char *file, uint32_t line,
		  uint32_t col, const char *fmt, va_list ap)
{
	if (!d)
		return;
	d->file = file;
	d->line = line;
	d->col = col;
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
}

void ts_diag_set(struct ts_diag *d, const char *file, uint32_t line,
		 uint32_t col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ts_diag_vset(d, file, line, col, fmt, ap);
	va_end(ap);
}

/* Prints the source line `line` of d->src and a caret under column col.
 * Tabs before the caret are kept so the caret lines up in a terminal. */
void ts_fput_text(const char *s, size_t n, FILE *out)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

void ts_csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void print_caret(const struct ts_diag *d, FILE *out)
{
	const char *p = d->src, *end = d->src + d->src_len;
	uint32_t l = 1;
	while (p < end && l < d->line) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return;
		p = nl + 1;
		l++;
	}
	if (p >= end && d->src_len > 0 && l < d->line)
		return;
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	size_t len = eol ? (size_t)(eol - p) : (size_t)(end - p);
	/* Very long lines (megabyte constants) are cut around the column. */
	size_t from = 0;
	if (len > 160 && d->col > 80)
		from = d->col - 80;
	if (from > len)
		from = len;
	size_t show = len - from > 160 ? 160 : len - from;
	/* a control byte shows as '?' (a tab as itself), one column each,
	 * so the caret stays under its column */
	fputs("  ", out);
	for (size_t i = from; i < from + show; i++) {
		unsigned char c = (unsigned char)p[i];
		fputc(c == '\t' || (c >= 0x20 && c != 0x7f) ? c : '?', out);
	}
	fputs("\n  ", out);
	for (size_t i = from; i + 1 < d->col && i < from + show; i++)
		fputc(p[i] == '\t' ? '\t' : ' ', out);
	fputs("^\n", out);
}

void ts_diag_print(const struct ts_diag *d, FILE *out)
{
	const char *file = d->file ? d->file : "<input>";
	ts_fput_text(file, strlen(file), out);
	if (d->line > 0)
		fprintf(out, ":%u:%u", d->line, d->col);
	fputs(": error: ", out);
	ts_fput_text(d->msg, sizeof d->msg, out);
	fputc('\n', out);
	if (d->src && d->line > 0 && d->col > 0)
		print_caret(d, out);
}

/* ---- allocation -------------------------------------------------------- */

/* Allocations left before failures start; negative: never fail. This is the
 * one piece of process-wide state, and it exists only for tests. */
static long alloc_budget = -1;

void ts_alloc_fail_after(long n) { alloc_budget = n; }

static int alloc_should_fail(void)
{
	if (alloc_budget < 0)
		return 0;
	if (alloc_budget == 0)
		return 1;
	alloc_budget--;
	return 0;
}

void *ts_malloc(size_t n)
{
	return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}

void *ts_calloc(size_t count, size_t size)
{
	return alloc_should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *ts_realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

void ts_free(void *p) { free(p); }

char *ts_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *r = ts_malloc(n);
	if (r)
		memcpy(r, s, n);
	return r;
}

/* ---- arena ------------------------------------------------------------- */

struct ts_arena_block {
	struct ts_arena_block *prev; /* older block */
	size_t cap;                  /* bytes in data[] */
	size_t used;                 /* bytes of data[] handed out */
	_Alignas(16) unsigned char data[];
};

void ts_arena_init(struct ts_arena *a)
{
	a->head = NULL;
	a->used_bytes = 0;
}

void ts_arena_free(struct ts_arena *a)
{
	struct ts_arena_block *b = a->head;
	while (b) {
		struct ts_arena_block *prev = b->prev;
		ts_free(b);
		b = prev;
	}
	ts_arena_init(a);
}

/* n bytes of the arena as they are: ts_arena_alloc zeroes them, the copies
 * (ts_arena_dup, ts_arena_strndup) overwrite them. */
static void *arena_take(struct ts_arena *a, size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;
	if (need < n)
		return NULL;
	struct ts_arena_block *b = a->head;
	if (!b || b->cap - b->used < need) {
		size_t cap = need > TS_ARENA_BLOCK ? need : TS_ARENA_BLOCK;
		if (cap > SIZE_MAX - sizeof *b)
			return NULL;
		struct ts_arena_block *nb = ts_malloc(sizeof *nb + cap);
		if (!nb)
			return NULL;
		nb->cap = cap;
		nb->used = 0;
		/* A big one-off allocation goes behind the current block so
		 * the current block's free space is not wasted. */
		if (b && need > TS_ARENA_BLOCK) {
			nb->prev = b->prev;
			b->prev = nb;
		} else {
			nb->prev = b;
			a->head = nb;
		}
		b = nb;
	}
	void *p = b->data + b->used;
	b->used += need;
	a->used_bytes += need;
	return p;
}

void *ts_arena_alloc(struct ts_arena *a, size_t n)
{
	void *p = arena_take(a, n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *ts_arena_array(struct ts_arena *a, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	return ts_arena_alloc(a, count * size);
}

void *ts_arena_dup(struct ts_arena *a, const void *src, size_t n)
{
	void *p = arena_take(a, n);
	if (p && n)
		memcpy(p, src, n);
	return p;
}

char *ts_arena_strndup(struct ts_arena *a, const char *s, size_t n)
{
	if (n == SIZE_MAX)
		return NULL;
	char *r = arena_take(a, n + 1);
	if (r) {
		memcpy(r, s, n);
		r[n] = '\0';
	}
	return r;
}

size_t ts_path_stem(const char *path, const char **start)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".hlo"))
		n -= 4;
	*start = base;
	return n;
}

char *ts_arena_printf(struct ts_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *r = n >= 0 ? ts_arena_alloc(a, (size_t)n + 1) : NULL;
	if (r) {
		va_start(ap, fmt);
		vsnprintf(r, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	return r;
}

uint64_t ts_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= TS_FNV1A_PRIME;
	}
	return h;
}

int ts_next_gen(int *gen, int *a, int *b, size_t n)
{
	if (*gen == INT_MAX) {
		memset(a, 0, n * sizeof *a);
		if (b)
			memset(b, 0, n * sizeof *b);
		*gen = 0;
	}
	return ++*gen;
}

void ts_sort_u64(uint64_t *v, size_t n, uint64_t *tmp)
{
	uint64_t *from = v, *to = tmp;
	for (int shift = 0; n > 1 && shift < 64; shift += 8) {
		size_t count[257] = {0};
		for (size_t i = 0; i < n; i++)
			count[((from[i] >> shift) & 0xff) + 1]++;
		if (count[((from[0] >> shift) & 0xff) + 1] == n)
			continue; /* one byte value: the order stands */
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++)
			to[count[(from[i] >> shift) & 0xff]++] = from[i];
		uint64_t *t = from;
		from = to;
		to = t;
	}
	if (from != v)
		memcpy(v, from, n * sizeof *v);
}

int ts_cmp_key_id(const void *a, const void *b)
{
	const struct ts_key_id *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Fibonacci hashing: the multiply spreads pointers that differ in their
 * low (aligned) bits over the high bits, which pick the slot. */
static size_t ptr_slot(const struct ts_ptrmap *m, const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(h >> 32) & m->mask;
}

bool ts_ptrmap_init(struct ts_ptrmap *m, size_t n)
{
	m->keys = NULL;
	m->vals = NULL;
	m->mask = 0;
	m->n = 0;
	if (n > SIZE_MAX / 4 / sizeof *m->keys)
		return false;
	size_t cap = TS_PTRMAP_SMALL;
	while (cap < 2 * n)
		cap *= 2;
	m->mask = cap - 1;
	if (cap == TS_PTRMAP_SMALL) {
		memset(m->small_keys, 0, sizeof m->small_keys);
		m->keys = m->small_keys;
		m->vals = m->small_vals;
		return true;
	}
	m->keys = ts_calloc(cap, sizeof *m->keys);
	m->vals = ts_malloc(cap * sizeof *m->vals);
	if (!m->keys || !m->vals) {
		ts_ptrmap_free(m);
		return false;
	}
	return true;
}

void ts_ptrmap_set(struct ts_ptrmap *m, const void *key, int val)
{
	size_t i = ptr_slot(m, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (!m->keys[i]) {
		TS_ASSERT(m->n < (m->mask + 1) / 2); /* room for one more */
		m->n++;
	}
	m->keys[i] = key;
	m->vals[i] = val;
}

int ts_ptrmap_get(const struct ts_ptrmap *m, const void *key)
{
	if (!m->keys)
		return -1;
	for (size_t i = ptr_slot(m, key); m->keys[i]; i = (i + 1) & m->mask)
		if (m->keys[i] == key)
			return m->vals[i];
	return -1;
}

void ts_ptrmap_free(struct ts_ptrmap *m)
{
	if (m->keys != m->small_keys) {
		ts_free(m->keys);
		ts_free(m->vals);
	}
	m->keys = NULL;
	m->vals = NULL;
	m->mask = 0;
	m->n = 0;
}

static size_t u64_slot(size_t mask, uint64_t key)
{
	return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & mask;
}

bool ts_u64map_set(struct ts_u64map *m, uint64_t key, int val)
{
	TS_ASSERT(key != 0);
	if (2 * (m->n + 1) > (m->keys ? m->mask + 1 : 0)) {
		size_t cap = m->keys ? 2 * (m->mask + 1) : 256;
		uint64_t *keys = ts_calloc(cap, sizeof *keys);
		int *vals = ts_malloc(cap * sizeof *vals);
		if (!keys || !vals) {
			ts_free(keys);
			ts_free(vals);
			return false;
		}
		for (size_t i = 0; m->keys && i <= m->mask; i++) {
			if (!m->keys[i])
				continue;
			size_t j = u64_slot(cap - 1, m->keys[i]);
			while (keys[j])
				j = (j + 1) & (cap - 1);
			keys[j] = m->keys[i];
			vals[j] = m->vals[i];
		}
		ts_free(m->keys);
		ts_free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->mask = cap - 1;
	}
	size_t i = u64_slot(m->mask, key);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & m->mask;
	m->n += !m->keys[i];
	m->keys[i] = key;
	m->vals[i] = val;
	return true;
}

int ts_u64map_get(const struct ts_u64map *m, uint64_t key)
{
	if (!m->keys)
		return -1;
	for (size_t i = u64_slot(m->mask, key); m->keys[i];
	     i = (i + 1) & m->mask)
		if (m->keys[i] == key)
			return m->vals[i];
	return -1;
}

void ts_u64map_free(struct ts_u64map *m)
{
	ts_free(m->keys);
	ts_free(m->vals);
	memset(m, 0, sizeof *m);
}

/* ---- files ------------------------------------------------------------- */

/* The resolved folder of a path that does not exist yet, its last part
 * appended, into buf (room PATH_MAX); false when the folder is not there. */
static bool resolve_new(const char *path, char *buf)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char dir[PATH_MAX];
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	char *real = realpath(dir, NULL);
	if (!real)
		return false;
	snprintf(buf, PATH_MAX, "%s/%s", real, base);
	free(real);
	return true;
}

bool ts_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	if (ea && eb)
		return S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) &&
		       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (ea || eb)
		return false;
	char ra[PATH_MAX], rb[PATH_MAX];
	if (resolve_new(a, ra) && resolve_new(b, rb))
		return strcmp(ra, rb) == 0;
	return strcmp(a, b) == 0;
}

enum ts_status ts_read_file(const char *path, char **out, size_t *out_len,
			    struct ts_diag *d)
{
	return ts_read_file_max(path, TS_READ_MAX, out, out_len, d);
}

static enum ts_status too_large(const char *path, size_t max, struct ts_diag *d)
{
	ts_diag_set(d, path, 0, 0, "the file is larger than %zu bytes: not read",
		    max);
	return TS_ERR_PARSE;
}

enum ts_status ts_read_file_max(const char *path, size_t max, char **out,
				size_t *out_len, struct ts_diag *d)
{
	*out = NULL;
	*out_len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ts_diag_set(d, path, 0, 0, "cannot open: %s", strerror(errno));
		return TS_ERR_IO;
	}
	/* a regular file is measured first and read into a buffer of its
	 * size (a byte more is asked for: one that comes means the file
	 * grew, and it is read again as a stream); anything else is read
	 * up to the cap */
	struct stat sb;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		if ((uintmax_t)sb.st_size > max) {
			close(fd);
			return too_large(path, max, d);
		}
		size_t size = (size_t)sb.st_size;
		char *buf = ts_malloc(size + 2);
		if (!buf) {
			close(fd);
			ts_diag_set(d, path, 0, 0, "out of memory reading file");
			return TS_ERR_NOMEM;
		}
		size_t len = 0;
		ssize_t got = 0;
		while (len <= size) {
			got = read(fd, buf + len, size + 1 - len);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				break;
			len += (size_t)got;
		}
		if (got == 0 && len <= size) {
			close(fd);
			buf[len] = '\0';
			*out = buf;
			*out_len = len;
			return TS_OK;
		}
		ts_free(buf);
		if (got < 0 || lseek(fd, 0, SEEK_SET) != 0) {
			ts_diag_set(d, path, 0, 0, "read failed: %s",
				    strerror(errno));
			close(fd);
			return TS_ERR_IO;
		}
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		ts_diag_set(d, path, 0, 0, "cannot open: %s", strerror(errno));
		close(fd);
		return TS_ERR_IO;
	}
	enum ts_status st = ts_read_stream(f, path, max, out, out_len, d);
	fclose(f);
	return st;
}

enum ts_status ts_read_stream(FILE *f, const char *path, size_t max,
			      char **out, size_t *out_len, struct ts_diag *d)
{
	*out = NULL;
	*out_len = 0;
	size_t cap = 1 << 16, len = 0;
	char *buf = ts_malloc(cap);
	enum ts_status st = TS_OK;
	if (!buf) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (;;) {
		if (cap - len < 2) {
			/* grow to at most max + 2: one byte past the cap
			 * tells, and the terminating NUL */
			size_t ncap = max < SIZE_MAX - 2 && cap > (max + 2) / 2
					      ? max + 2
					      : cap * 2;
			if (cap > SIZE_MAX / 2 || ncap <= cap) {
				st = TS_ERR_NOMEM;
				goto out;
			}
			char *nb = ts_realloc(buf, ncap);
			if (!nb) {
				st = TS_ERR_NOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
		if (len > max) {
			st = too_large(path, max, d);
			goto out;
		}
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		ts_diag_set(d, path, 0, 0, "read failed: %s", strerror(errno));
		st = TS_ERR_IO;
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	buf = NULL;
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, path, 0, 0, "out of memory reading file");
	ts_free(buf);
	return st;
}

enum ts_status ts_write_file_atomic(const char *path,
				    enum ts_status (*write_fn)(FILE *f, void *ctx),
				    void *ctx, struct ts_diag *d)
{
	/* A symbolic link is followed: the file it names is replaced, the
	 * link stays. */
	struct stat sb;
	char *real = NULL;
	const char *target = path; /* path stays the name diagnostics use */
	if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
		real = realpath(path, NULL);
		if (!real) {
			ts_diag_set(d, path, 0, 0,
				    "a symbolic link to nothing: not written");
			return TS_ERR_IO;
		}
		target = real;
	}
	/* A target that exists and is not a regular file (/dev/null,
	 * /dev/stdout, a FIFO) is written in place: renaming a temporary over
	 * it would replace the device with a plain file. A regular file
	 * nobody may write is left alone (a rename would replace it even so,
	 * and root may write anything). */
	bool exists = stat(target, &sb) == 0;
	bool in_place = exists && !S_ISREG(sb.st_mode);
	if (exists && S_ISREG(sb.st_mode) && !(sb.st_mode & 0222)) {
		ts_diag_set(d, path, 0, 0, "the file is read-only: not replaced");
		free(real);
		return TS_ERR_IO;
	}
	size_t n = strlen(target) + 32;
	char *tmp = ts_malloc(n);
	/* The writer fills memory; the bytes then go to the file through
	 * write(2), whose errno is the one reported ("No space left on
	 * device"): a stdio stream only keeps an error flag, and a writer
	 * that notices it returns before anyone can ask why. */
	char *buf = NULL; /* libc's (open_memstream) */
	size_t len = 0;
	FILE *mem = tmp ? open_memstream(&buf, &len) : NULL;
	if (!mem) {
		ts_free(tmp);
		free(real);
		return TS_ERR_NOMEM;
	}
	if (in_place)
		snprintf(tmp, n, "%s", target);
	else
		snprintf(tmp, n, "%s.tmp.%ld", target, (long)getpid());
	enum ts_status st = write_fn(mem, ctx);
	/* a memory stream fails only for want of memory */
	if (fclose(mem) != 0 && st == TS_OK)
		st = TS_ERR_NOMEM;
	int fd = -1;
	if (st == TS_OK &&
	    (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) <
		    0) {
		ts_diag_set(d, path, 0, 0, "cannot create %s: %s", tmp,
			    strerror(errno));
		st = TS_ERR_IO;
	}
	for (size_t at = 0; fd >= 0 && st == TS_OK && at < len;) {
		ssize_t w = write(fd, buf + at, len - at);
		if (w > 0) {
			at += (size_t)w;
		} else if (w == 0 || errno != EINTR) { /* 0: no progress */
			ts_diag_set(d, path, 0, 0, "write failed: %s",
				    strerror(w ? errno : EIO));
			st = TS_ERR_IO;
		}
	}
	if (fd >= 0 && close(fd) != 0 && st == TS_OK) {
		ts_diag_set(d, path, 0, 0, "close failed: %s", strerror(errno));
		st = TS_ERR_IO;
	}
	if (st == TS_OK && !in_place && rename(tmp, target) != 0) {
		ts_diag_set(d, path, 0, 0, "rename failed: %s", strerror(errno));
		st = TS_ERR_IO;
	}
	if (st != TS_OK && !in_place && fd >= 0)
		remove(tmp);
	free(buf);
	ts_free(tmp);
	free(real);
	return st;
}

_Noreturn void ts_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "%s:%d: internal error: assertion `%s' failed\n", file,
		line, expr);
	abort();
}
