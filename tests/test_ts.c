/*
 * test_ts.c: the project basics in base/ts.c: status strings, diagnostics with
 * carets, the failing-allocation hook, arenas, atomic file writes (a full
 * device named as such) and the sort of 64-bit keys.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ts.h"

static void test_status_strings(void **state)
{
	(void)state;
	assert_string_equal(ts_status_str(TS_OK), "ok");
	assert_string_equal(ts_status_str(TS_ERR_PARSE), "parse error");
	assert_string_equal(ts_status_str(TS_STATUS_COUNT), "unknown status");
	for (int s = 0; s < TS_STATUS_COUNT; s++)
		assert_non_null(ts_status_str((enum ts_status)s));
}

static void test_diag_caret(void **state)
{
	(void)state;
	const char *src = "line one\n  bad token here\nline three\n";
	struct ts_diag d = {0};
	ts_diag_set(&d, "x.hlo", 2, 3, "unexpected '%s'", "bad");
	d.src = src;
	d.src_len = strlen(src);
	char buf[256] = {0};
	FILE *f = fmemopen(buf, sizeof buf - 1, "w");
	assert_non_null(f);
	ts_diag_print(&d, f);
	fclose(f);
	assert_string_equal(buf, "x.hlo:2:3: error: unexpected 'bad'\n"
				 "    bad token here\n"
				 "    ^\n");
}

static void test_diag_no_line(void **state)
{
	(void)state;
	struct ts_diag d = {0};
	ts_diag_set(&d, "spec.yaml", 0, 0, "cannot open: %s", "No such file");
	char buf[128] = {0};
	FILE *f = fmemopen(buf, sizeof buf - 1, "w");
	ts_diag_print(&d, f);
	fclose(f);
	assert_string_equal(buf, "spec.yaml: error: cannot open: No such file\n");
}

static void test_arena(void **state)
{
	(void)state;
	struct ts_arena a;
	ts_arena_init(&a);
	/* Many small allocations plus one larger than a block. */
	for (int i = 0; i < 10000; i++) {
		int64_t *p = ts_arena_array(&a, 3, sizeof *p);
		assert_non_null(p);
		assert_int_equal(((uintptr_t)p) % 16, 0);
		assert_int_equal(p[0] | p[1] | p[2], 0);
		p[2] = i;
	}
	char *big = ts_arena_alloc(&a, TS_ARENA_BLOCK * 3);
	assert_non_null(big);
	big[TS_ARENA_BLOCK * 3 - 1] = 1;
	char *s = ts_arena_strndup(&a, "fusion.191xyz", 10);
	assert_string_equal(s, "fusion.191");
	static const int64_t dims[3] = {4096, 1376, 7};
	int64_t *d = ts_arena_dup(&a, dims, sizeof dims);
	assert_non_null(d);
	assert_int_equal(((uintptr_t)d) % 16, 0);
	assert_memory_equal(d, dims, sizeof dims);
	/* formatted, of any length: 3000 characters, not cut */
	char *longer = ts_arena_printf(&a, "%s__in__%0*d", s, 2984, 7);
	assert_non_null(longer);
	assert_int_equal(strlen(longer), 3000);
	assert_int_equal(strncmp(longer, "fusion.191__in__000", 19), 0);
	assert_int_equal(longer[2999], '7');
	assert_null(ts_arena_array(&a, SIZE_MAX / 2, 4)); /* overflow refused */
	ts_arena_free(&a);
	assert_null(a.head);
}

static void test_alloc_hook(void **state)
{
	(void)state;
	ts_alloc_fail_after(2);
	void *p1 = ts_malloc(8), *p2 = ts_malloc(8), *p3 = ts_malloc(8);
	assert_non_null(p1);
	assert_non_null(p2);
	assert_null(p3);
	ts_alloc_fail_after(-1);
	void *p4 = ts_malloc(8);
	assert_non_null(p4);
	ts_free(p1);
	ts_free(p2);
	ts_free(p4);

	struct ts_arena a;
	ts_arena_init(&a);
	ts_alloc_fail_after(0);
	assert_null(ts_arena_alloc(&a, 16));
	ts_alloc_fail_after(-1);
	ts_arena_free(&a);
}

static enum ts_status write_hello(FILE *f, void *ctx)
{
	fputs((const char *)ctx, f);
	return TS_OK;
}

static enum ts_status write_fail(FILE *f, void *ctx)
{
	(void)ctx;
	fputs("partial", f);
	return TS_ERR_IO;
}

/* 64 KiB of lines, checking the stream as the report writers do: a
 * failed write is only a flag by the time it returns. */
static enum ts_status write_checked(FILE *f, void *ctx)
{
	(void)ctx;
	for (int i = 0; i < 4096; i++)
		fprintf(f, "line %10d\n", i);
	return ferror(f) ? TS_ERR_IO : TS_OK;
}

/* A full device: the file system's cause is named ("No space left on
 * device"), not the writer's flag ("input/output error", as it once was:
 * the stream kept only the flag). /dev/full is written in place (not a
 * regular file); the temporary-file path of a full disk is
 * test_cli's test_full_disk. */
static void test_atomic_write_full(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0) {
		print_message("no writable /dev/full: skipped\n");
		skip();
	}
	struct ts_diag d = {0};
	assert_int_equal(ts_write_file_atomic("/dev/full", write_checked, NULL,
					      &d),
			 TS_ERR_IO);
	assert_string_equal(d.msg, "write failed: No space left on device");
	assert_string_equal(d.file, "/dev/full");
}

static void test_atomic_write(void **state)
{
	(void)state;
	char dir[] = "/tmp/tpusim_test_ts_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/out.csv", dir);
	struct ts_diag d = {0};
	assert_int_equal(ts_write_file_atomic(path, write_hello, "a,b\n", &d), TS_OK);
	char *text = NULL;
	size_t len = 0;
	assert_int_equal(ts_read_file(path, &text, &len, &d), TS_OK);
	assert_string_equal(text, "a,b\n");
	ts_free(text);
	/* A failing writer leaves the old file untouched and no temp file. */
	assert_int_equal(ts_write_file_atomic(path, write_fail, NULL, &d), TS_ERR_IO);
	assert_int_equal(ts_read_file(path, &text, &len, &d), TS_OK);
	assert_string_equal(text, "a,b\n");
	ts_free(text);
	char tmp[160];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	assert_int_not_equal(access(tmp, F_OK), 0);
	remove(path);
	/* A target that is not a regular file is written in place, never
	 * replaced: a FIFO (held open for reading here, so the write does not
	 * block) stays a FIFO and carries the text. */
	char fifo[160];
	snprintf(fifo, sizeof fifo, "%s/pipe", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDWR | O_NONBLOCK);
	assert_true(rd >= 0);
	assert_int_equal(ts_write_file_atomic(fifo, write_hello, "x,y\n", &d), TS_OK);
	struct stat sb;
	assert_int_equal(stat(fifo, &sb), 0);
	assert_true(S_ISFIFO(sb.st_mode));
	char got[8] = {0};
	assert_int_equal(read(rd, got, sizeof got - 1), 4);
	assert_string_equal(got, "x,y\n");
	close(rd);
	remove(fifo);
	/* A symbolic link is followed: the file it names gets the text, the
	 * link stays a link. */
	char target[160], link[160];
	snprintf(target, sizeof target, "%s/target.csv", dir);
	snprintf(link, sizeof link, "%s/link.csv", dir);
	assert_int_equal(ts_write_file_atomic(target, write_hello, "old\n", &d), TS_OK);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(ts_write_file_atomic(link, write_hello, "new\n", &d), TS_OK);
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	assert_int_equal(ts_read_file(target, &text, &len, &d), TS_OK);
	assert_string_equal(text, "new\n");
	ts_free(text);
	/* A link to nothing is refused, and nothing is created. */
	remove(target);
	assert_int_equal(ts_write_file_atomic(link, write_hello, "x\n", &d), TS_ERR_IO);
	assert_string_equal(d.msg, "a symbolic link to nothing: not written");
	assert_int_not_equal(access(target, F_OK), 0);
	remove(link);
	/* A read-only file is not replaced (not even by root, whom the
	 * permission bits do not stop), and keeps its bytes. */
	assert_int_equal(ts_write_file_atomic(target, write_hello, "keep\n", &d), TS_OK);
	assert_int_equal(chmod(target, 0444), 0);
	assert_int_equal(ts_write_file_atomic(target, write_hello, "lost\n", &d), TS_ERR_IO);
	assert_string_equal(d.msg, "the file is read-only: not replaced");
	assert_int_equal(ts_read_file(target, &text, &len, &d), TS_OK);
	assert_string_equal(text, "keep\n");
	ts_free(text);
	/* ... also through a link; the message names the path given (the
	 * resolved one is gone by then: the sanitizer build would see it) */
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(ts_write_file_atomic(link, write_hello, "lost\n", &d), TS_ERR_IO);
	assert_string_equal(d.file, link);
	assert_string_equal(d.msg, "the file is read-only: not replaced");
	remove(link);
	remove(target);
	rmdir(dir);
	/* A missing file is an I/O error naming the path. */
	assert_int_equal(ts_read_file("/nonexistent/x.hlo", &text, &len, &d), TS_ERR_IO);
	assert_string_equal(d.file, "/nonexistent/x.hlo");
	assert_non_null(strstr(d.msg, "cannot open"));
}

/* Inputs are capped: a regular file over the cap is refused before it is
 * read, a special file that goes on past it (/dev/zero) once it has. */
static void test_read_cap(void **state)
{
	(void)state;
	char path[128];
	snprintf(path, sizeof path, "/tmp/tpusim_test_cap_%ld", (long)getpid());
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	for (int i = 0; i < 100; i++)
		fputc('x', f);
	fclose(f);
	char *text = NULL;
	size_t len = 0;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file_max(path, 99, &text, &len, &d), TS_ERR_PARSE);
	assert_string_equal(d.msg, "the file is larger than 99 bytes: not read");
	assert_null(text);
	assert_int_equal(ts_read_file_max(path, 100, &text, &len, &d), TS_OK);
	assert_int_equal(len, 100);
	ts_free(text);
	remove(path);
	assert_int_equal(ts_read_file_max("/dev/zero", 70000, &text, &len, &d),
			 TS_ERR_PARSE);
	assert_string_equal(d.msg, "the file is larger than 70000 bytes: not read");
	assert_null(text);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* ts_next_gen counts up, and at INT_MAX clears both stamp arrays and
 * starts again at 1 (a stamp of the old count must not look current). */
static void test_next_gen(void **state)
{
	(void)state;
	int gen = 0, a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
	assert_int_equal(ts_next_gen(&gen, a, b, 3), 1);
	assert_int_equal(ts_next_gen(&gen, a, NULL, 3), 2);
	gen = INT_MAX;
	a[0] = a[2] = b[1] = 1;
	assert_int_equal(ts_next_gen(&gen, a, b, 3), 1);
	assert_int_equal(gen, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(a[i], 0);
		assert_int_equal(b[i], 0);
	}
	gen = INT_MAX;
	a[1] = 1;
	assert_int_equal(ts_next_gen(&gen, a, NULL, 3), 1);
	assert_int_equal(a[1], 0);
}

/* ts_sort_u64 against qsort: random keys with duplicates, keys that share
 * every byte but one (the skipped passes), none and one. */
static void test_sort_u64(void **state)
{
	(void)state;
	enum { N = 3000 };
	static uint64_t v[N], want[N], tmp[N];
	uint64_t x = 88172645463325252u;
	for (int kind = 0; kind < 3; kind++) {
		for (int i = 0; i < N; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17; /* xorshift64 */
			v[i] = kind == 0   ? x
			       : kind == 1 ? x % 97 /* duplicates */
					   : UINT64_C(0xabcdef0000000000) |
						     ((x & 0xff) << 16);
		}
		memcpy(want, v, sizeof v);
		qsort(want, N, sizeof *want, cmp_u64);
		ts_sort_u64(v, N, tmp);
		assert_memory_equal(v, want, sizeof v);
	}
	ts_sort_u64(v, 0, tmp);
	v[0] = 7;
	ts_sort_u64(v, 1, tmp);
	assert_int_equal(v[0], 7);
}

/* ts_ptrmap: keys that are neighbours in one array (pointers a few bytes
 * apart, the map's usual keys), a table filled to its limit, keys that
 * collide at its last slot, replaced values, absent keys, a map never set
 * up or set up again, and running out of memory. */
static void test_ptrmap(void **state)
{
	(void)state;
	enum { N = 1000 };
	static char cell[N];
	struct ts_ptrmap m = {0};
	assert_int_equal(ts_ptrmap_get(&m, cell), -1);
	assert_true(ts_ptrmap_init(&m, N));
	for (int i = 0; i < N; i++)
		ts_ptrmap_set(&m, &cell[i], i);
	ts_ptrmap_set(&m, &cell[7], 70); /* replaces */
	for (int i = 0; i < N; i++)
		assert_int_equal(ts_ptrmap_get(&m, &cell[i]), i == 7 ? 70 : i);
	int other;
	assert_int_equal(ts_ptrmap_get(&m, &other), -1);
	assert_int_equal(ts_ptrmap_get(&m, NULL), -1);
	ts_ptrmap_free(&m);
	assert_int_equal(ts_ptrmap_get(&m, cell), -1);
	assert_true(ts_ptrmap_init(&m, 0)); /* an empty kernel's inputs */
	assert_int_equal(ts_ptrmap_get(&m, cell), -1);
	ts_ptrmap_free(&m);
	/* up to TS_PTRMAP_SMALL / 2 keys: in the struct, nothing allocated */
	ts_alloc_fail_after(0);
	assert_true(ts_ptrmap_init(&m, TS_PTRMAP_SMALL / 2));
	for (int i = 0; i < TS_PTRMAP_SMALL / 2; i++)
		ts_ptrmap_set(&m, &cell[i], 2 * i);
	for (int i = 0; i < TS_PTRMAP_SMALL; i++)
		assert_int_equal(ts_ptrmap_get(&m, &cell[i]),
				 i < TS_PTRMAP_SMALL / 2 ? 2 * i : -1);
	ts_ptrmap_free(&m);
	/* set up again: the keys of its last use are gone */
	assert_true(ts_ptrmap_init(&m, 1));
	assert_int_equal(ts_ptrmap_get(&m, &cell[0]), -1);
	/* keys that all hash to the last slot of the small table: each
	 * probe wraps around to the first slots (the slot formula of
	 * ts.c's ptr_slot, with mask TS_PTRMAP_SMALL - 1) */
	const char *last[TS_PTRMAP_SMALL / 2];
	int n_last = 0;
	for (int i = 0; i < N && n_last < TS_PTRMAP_SMALL / 2; i++) {
		uint64_t h = (uint64_t)(uintptr_t)&cell[i] *
			     UINT64_C(0x9E3779B97F4A7C15);
		if (((h >> 32) & (TS_PTRMAP_SMALL - 1)) == TS_PTRMAP_SMALL - 1)
			last[n_last++] = &cell[i];
	}
	assert_int_equal(n_last, TS_PTRMAP_SMALL / 2);
	ts_ptrmap_free(&m);
	assert_true(ts_ptrmap_init(&m, (size_t)n_last));
	for (int i = 0; i < n_last; i++)
		ts_ptrmap_set(&m, last[i], i);
	for (int i = 0; i < n_last; i++)
		assert_int_equal(ts_ptrmap_get(&m, last[i]), i);
	ts_ptrmap_free(&m);
	/* one more key: allocated; the second allocation fails */
	ts_alloc_fail_after(1);
	assert_false(ts_ptrmap_init(&m, TS_PTRMAP_SMALL / 2 + 1));
	ts_alloc_fail_after(-1);
	assert_null(m.keys);
	assert_int_equal(ts_ptrmap_get(&m, cell), -1);
}

/* ts_u64map: an empty map, keys past several growths (their values kept
 * across each), keys that differ in their high bits only, replaced
 * values, absent keys, and running out of memory while growing (the map
 * as it was). */
static void test_u64map(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct ts_u64map m = {0};
	assert_int_equal(ts_u64map_get(&m, 1), -1);
	for (int i = 0; i < N; i++)
		assert_true(ts_u64map_set(&m, (uint64_t)(i + 1) << 40, i));
	assert_true(ts_u64map_set(&m, (uint64_t)8 << 40, 70)); /* replaces */
	assert_int_equal(m.n, N);
	for (int i = 0; i < N; i++)
		assert_int_equal(ts_u64map_get(&m, (uint64_t)(i + 1) << 40),
				 i == 7 ? 70 : i);
	assert_int_equal(ts_u64map_get(&m, 5), -1);
	assert_int_equal(ts_u64map_get(&m, (uint64_t)(N + 1) << 40), -1);
	/* the next key that grows the table: both allocations tried, the
	 * second fails; keys and values stay */
	size_t cap = m.mask + 1;
	for (int i = N + 1; 2 * (m.n + 1) <= cap; i++)
		assert_true(ts_u64map_set(&m, (uint64_t)i, i));
	ts_alloc_fail_after(1);
	assert_false(ts_u64map_set(&m, UINT64_MAX, -2));
	ts_alloc_fail_after(-1);
	assert_int_equal(m.mask + 1, cap);
	assert_int_equal(ts_u64map_get(&m, UINT64_MAX), -1);
	assert_int_equal(ts_u64map_get(&m, (uint64_t)3 << 40), 2);
	assert_true(ts_u64map_set(&m, UINT64_MAX, -2));
	assert_int_equal(ts_u64map_get(&m, UINT64_MAX), -2);
	ts_u64map_free(&m);
	assert_int_equal(ts_u64map_get(&m, (uint64_t)3 << 40), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_strings),
		cmocka_unit_test(test_diag_caret),
		cmocka_unit_test(test_diag_no_line),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_alloc_hook),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_atomic_write_full),
		cmocka_unit_test(test_read_cap),
		cmocka_unit_test(test_next_gen),
		cmocka_unit_test(test_sort_u64),
		cmocka_unit_test(test_ptrmap),
		cmocka_unit_test(test_u64map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
