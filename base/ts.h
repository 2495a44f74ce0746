/*
 * ts.h: project-wide basics shared by every layer: the status enum and its
 * string table, located diagnostics, the allocation hook, and the arena.
 * They live in base/, the bottom room: everything may use it and it uses
 * nothing else in the project (base/README.md, docs/ARCHITECTURE.md).
 */
#ifndef TS_H
#define TS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- status ------------------------------------------------------------ */

/* Library code returns one of these; only cli/ turns them into exit codes. */
enum ts_status {
	TS_OK = 0,
	TS_ERR_NOMEM,          /* an allocation failed */
	TS_ERR_IO,             /* a file could not be read or written */
	TS_ERR_PARSE,          /* malformed HLO, CSV or config text */
	TS_ERR_SPEC,           /* malformed or implausible hardware spec */
	TS_ERR_UNSUPPORTED_OP, /* an opcode or form tpusim does not model */
	TS_ERR_MISUSE,         /* bad arguments from the caller or the user */
	TS_ERR_INFEASIBLE,     /* a tile config that cannot run (VMEM overflow) */
	TS_STATUS_COUNT
};

/* Short English text for a status ("out of memory"); never NULL. */
const char *ts_status_str(enum ts_status s);

/* ---- diagnostics ------------------------------------------------------- */

#define TS_DIAG_MSG_MAX 512

/*
 * A located error. Parsers fill it; the CLI prints it as
 *   file:line:col: error: msg
 *     <source line>
 *         ^
 * line and col are 1-based; 0 means "unknown" (then only file: is printed).
 */
struct ts_diag {
	const char *file;          /* path as the user gave it; not owned */
	uint32_t line;             /* 1-based, 0 if unknown */
	uint32_t col;              /* 1-based byte column, 0 if unknown */
	char msg[TS_DIAG_MSG_MAX]; /* message without the "error: " prefix */
	const char *src;           /* whole source text, for the caret line; may be NULL */
	size_t src_len;            /* bytes in src */
};

/* Sets every field; msg is printf-formatted and truncated to fit. */
void ts_diag_set(struct ts_diag *d, const char *file, uint32_t line,
		 uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void ts_diag_vset(struct ts_diag *d, const char *file, uint32_t line,
		  uint32_t col, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/* Writes s (at most n bytes, to its NUL) with each control byte as \xHH:
 * names and messages from the input reach a terminal as text, never as
 * its commands (an escape sequence in a file name). */
void ts_fput_text(const char *s, size_t n, FILE *out);

/* Writes s as one CSV field, quoted per RFC 4180 when it holds a comma,
 * quote, CR or LF (inner quotes doubled). */
void ts_csv_field(FILE *out, const char *s);

/* Prints "file:line:col: error: msg" (through ts_fput_text), then the
 * source line (control bytes as '?') and a caret when d->src is set. */
void ts_diag_print(const struct ts_diag *d, FILE *out);

/* ---- allocation -------------------------------------------------------- */

/*
 * Every allocation in the project goes through these so that tests can make
 * the Nth one fail (ts_alloc_fail_after) and check that each failure comes
 * back as TS_ERR_NOMEM without a leak or a crash.
 */
void *ts_malloc(size_t n);
void *ts_calloc(size_t count, size_t size);
void *ts_realloc(void *p, size_t n);
void ts_free(void *p);
char *ts_strdup(const char *s);
/* n >= 0: allocation number n (0-based, counted from this call) and every
 * later one fail; n < 0: never fail (the default). */
void ts_alloc_fail_after(long n);

/* ---- arena ------------------------------------------------------------- */

/*
 * A bump allocator: blocks of at least TS_ARENA_BLOCK bytes, freed all at
 * once. Every string, shape and instruction of one HLO module lives in one
 * arena (ggml's context). Allocations are 16-byte aligned and zeroed
 * (copies aside: ts_arena_dup, ts_arena_strndup).
 */
struct ts_arena_block;
struct ts_arena {
	struct ts_arena_block *head; /* newest block, linked to older ones */
	size_t used_bytes;           /* bytes handed out, for statistics */
};

#define TS_ARENA_BLOCK ((size_t)64 * 1024)

void ts_arena_init(struct ts_arena *a);
void ts_arena_free(struct ts_arena *a);
/* Zeroed memory, or NULL when n overflows or an allocation fails. */
void *ts_arena_alloc(struct ts_arena *a, size_t n);
/* count * size with overflow check; NULL on overflow or failure. */
void *ts_arena_array(struct ts_arena *a, size_t count, size_t size);
/* A copy of the n bytes at src, not zeroed first; NULL when an
 * allocation fails. */
void *ts_arena_dup(struct ts_arena *a, const void *src, size_t n);
/* Copies n bytes of s and a terminating NUL. */
char *ts_arena_strndup(struct ts_arena *a, const char *s, size_t n);
/* A module's name from its path: the last component without a ".hlo"
 * ending (kept when it is all there is). *start points into path;
 * returns the length. */
size_t ts_path_stem(const char *path, const char **start);
/* A formatted string of any length in the arena; NULL on failure. */
char *ts_arena_printf(struct ts_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* FNV-1a 64 of n bytes at p, continuing from h (start: TS_FNV1A_BASIS). */
#define TS_FNV1A_BASIS UINT64_C(14695981039346656037)
#define TS_FNV1A_PRIME UINT64_C(1099511628211)
uint64_t ts_fnv1a(uint64_t h, const void *p, size_t n);
/* The same step on one word at a time (for long runs of ints). */
static inline uint64_t ts_fnv1a_word(uint64_t h, uint64_t w)
{
	return (h ^ w) * TS_FNV1A_PRIME;
}

/* Sorts v[0..n) ascending, tmp (room for n, apart from v) its scratch:
 * least significant byte first, a counting pass each (8 passes; a pass
 * whose byte is the same in every key is skipped), so no comparison per
 * pair. For many random 64-bit keys (digests). */
void ts_sort_u64(uint64_t *v, size_t n, uint64_t *tmp);

/* The next generation of the stamps in a[0 .. n) (and b's, or NULL), a
 * stamp being current when it holds it (marks that need no clearing
 * between uses): past INT_MAX both are cleared and the count starts again
 * at 1. */
int ts_next_gen(int *gen, int *a, int *b, size_t n);

/* A 64-bit key (a digest) with an int (an id, an index), and the qsort
 * order of such pairs: by key, then by id. */
struct ts_key_id {
	uint64_t key;
	int id;
};
int ts_cmp_key_id(const void *a, const void *b);

/* Pointer -> int: open addressing over a power-of-two table kept at most
 * half full, so a lookup is O(1) where a scan of a list would be O(n) (a
 * kernel's members and inputs, looked up for every operand). Up to
 * TS_PTRMAP_SMALL / 2 keys live in the struct itself (no allocation), so
 * a map is not to be copied once set up. */
#define TS_PTRMAP_SMALL 16
struct ts_ptrmap {
	const void **keys; /* mask + 1 slots, NULL when empty */
	int *vals;
	size_t mask;
	size_t n;          /* keys set */
	const void *small_keys[TS_PTRMAP_SMALL];
	int small_vals[TS_PTRMAP_SMALL];
};
/* An empty map with room for n keys; false when memory runs out. */
bool ts_ptrmap_init(struct ts_ptrmap *m, size_t n);
/* Sets key (not NULL) -> val, replacing its value if present; at most the
 * n keys of ts_ptrmap_init (an assertion stops a table filled past half). */
void ts_ptrmap_set(struct ts_ptrmap *m, const void *key, int val);
/* The value of key, or -1 when absent (also for a map never set up). */
int ts_ptrmap_get(const struct ts_ptrmap *m, const void *key);
void ts_ptrmap_free(struct ts_ptrmap *m);

/* Nonzero 64-bit key (a digest) -> int: open addressing over a
 * power-of-two table kept at most half full, grown as keys come (a
 * cache of costs by digest). Zeroed: an empty map. */
struct ts_u64map {
	uint64_t *keys; /* mask + 1 slots, 0 when empty */
	int *vals;
	size_t mask;
	size_t n;       /* keys set */
};
/* Sets key (not 0) -> val, replacing its value if present; false when
 * memory runs out (the map as it was). */
bool ts_u64map_set(struct ts_u64map *m, uint64_t key, int val);
/* The value of key, or -1 when absent. */
int ts_u64map_get(const struct ts_u64map *m, uint64_t key);
void ts_u64map_free(struct ts_u64map *m);

/* ---- 128-bit integers ------------------------------------------------------
 * Arithmetic on int64 values read from input text (padding, dilations,
 * loop bounds) that may be anything the text holds: in 128 bits no sum or
 * product of two of them overflows. */
typedef __int128 ts_i128;

/* floor(a / b) for b > 0 (C's / truncates toward zero). */
static inline ts_i128 ts_floor_div(ts_i128 a, ts_i128 b)
{
	ts_i128 q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* ceil(a / b) for b > 0. */
static inline ts_i128 ts_ceil_div(ts_i128 a, ts_i128 b)
{
	return -ts_floor_div(-a, b);
}

/* ---- misc -------------------------------------------------------------- */

/* Do paths a and b name the same file? Both existing: the same regular
 * file (device and inode; a device or FIFO is written in place and names
 * no file to lose); neither existing: the same name in the same folder
 * (after symbolic links); one existing and not the other: no. */
bool ts_same_file(const char *a, const char *b);

/* The most any input file may hold (HLO text, CSV): 1 GiB. */
#define TS_READ_MAX ((size_t)1 << 30)

/* Reads a whole file into a NUL-terminated buffer (ts_free it). A file of
 * more than TS_READ_MAX bytes (or a special file that goes on past it,
 * /dev/zero) is not read: TS_ERR_PARSE, "the file is larger than N bytes",
 * before anything is kept. */
enum ts_status ts_read_file(const char *path, char **out, size_t *out_len,
			    struct ts_diag *d);
/* The same with a cap of max bytes of its own (hardware specs). */
enum ts_status ts_read_file_max(const char *path, size_t max, char **out,
				size_t *out_len, struct ts_diag *d);
/* The same from an open stream to its end (name: for d's messages). */
enum ts_status ts_read_stream(FILE *f, const char *name, size_t max,
			      char **out, size_t *out_len, struct ts_diag *d);

/*
 * Writes a file atomically: path.tmp.<pid> first, then rename(2), so a
 * failure never leaves a half-written file at path. write_fn gets a stream
 * into memory and must return TS_OK or an error (then nothing is created);
 * the bytes then go to the file with write(2), so a failure of the file
 * system is reported with its own cause ("write failed: No space left on
 * device", "close failed: ..."), the temp file removed.
 * A path that exists and is not a regular file (/dev/null, /dev/stdout, a
 * FIFO) is written in place, never replaced. A symbolic link is followed
 * (the file it names is replaced, the link kept; one to nothing is an
 * error), and a regular file without write permission for anyone is not
 * replaced (TS_ERR_IO, "the file is read-only: not replaced").
 */
enum ts_status ts_write_file_atomic(const char *path,
				    enum ts_status (*write_fn)(FILE *f, void *ctx),
				    void *ctx, struct ts_diag *d);

/* Programmer errors only; never for user input. */
#define TS_ASSERT(x)                                                          \
	do {                                                                  \
		if (!(x))                                                     \
			ts_assert_fail(#x, __FILE__, __LINE__);               \
	} while (0)
_Noreturn void ts_assert_fail(const char *expr, const char *file, int line);

#define TS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif /* TS_H */
