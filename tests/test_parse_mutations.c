/*
 * test_parse_mutations.c: the HLO parser on damaged real input. Every corpus
 * file is cut at many offsets and has single bytes replaced (fixed-seed
 * PRNG); each variant must parse or fail with TS_ERR_PARSE and a located
 * diagnostic, never crash (run under ASan/UBSan, label asan). A few files are
 * also parsed with the Nth allocation failing: TS_ERR_NOMEM, nothing leaked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define MUT_SEED 0x9e3779b97f4a7c15ull
#define MUT_CUTS_SMALL 512  /* truncations per file up to MUT_BIG bytes */
#define MUT_FLIPS_SMALL 512 /* byte replacements per file up to MUT_BIG bytes */
#define MUT_CUTS_BIG 64     /* the same for larger files (they cost more) */
#define MUT_FLIPS_BIG 64
#define MUT_BIG 32768

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: deterministic across platforms */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

struct mut_stats {
	long parsed, failed;
};

/* Parses buf[0..len) (an exact-size heap copy, so reads past the end trip
 * ASan) and checks the outcome. */
static void check_variant(const char *name, const char *buf, size_t len,
			  struct mut_stats *st)
{
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status s = hlo_parse(name, buf, len, &m, &n, &d);
	if (s == TS_OK) {
		assert_true(n >= 1);
		for (int i = 0; i < n; i++)
			ir_module_free(m[i]);
		ts_free(m);
		st->parsed++;
		return;
	}
	if (s != TS_ERR_PARSE || d.line < 1 || d.col < 1 || d.msg[0] == '\0' ||
	    m != NULL || n != 0)
		fail_msg("%s (%zu bytes): status %d at %u:%u '%s'", name, len, s,
			 d.line, d.col, d.msg);
	assert_ptr_equal(d.src, buf);
	assert_int_equal(d.src_len, len);
	st->failed++;
}

static char *read_all(const char *path, size_t *len)
{
	char *text = NULL;
	struct ts_diag d = {0};
	if (ts_read_file(path, &text, len, &d) != TS_OK)
		fail_msg("cannot read %s: %s", path, d.msg);
	return text;
}

static void mutate_file(const char *path, uint64_t *rng, struct mut_stats *st)
{
	static const char interesting[] = "{}()[],=%\":\n /*-0x.<>?_ROOT";
	size_t len;
	char *text = read_all(path, &len);
	char *buf = malloc(len ? len : 1);
	assert_non_null(buf);
	int cuts = len > MUT_BIG ? MUT_CUTS_BIG : MUT_CUTS_SMALL;
	int flips = len > MUT_BIG ? MUT_FLIPS_BIG : MUT_FLIPS_SMALL;
	for (int i = 0; i < cuts && len; i++) {
		/* half evenly spread, half random */
		size_t cut = i % 2 ? (size_t)(rng_next(rng) % len)
				   : (size_t)((double)len * i / cuts);
		char *t = malloc(cut ? cut : 1);
		assert_non_null(t);
		memcpy(t, text, cut);
		check_variant(path, t, cut, st);
		free(t);
	}
	for (int i = 0; i < flips && len; i++) {
		memcpy(buf, text, len);
		size_t at = (size_t)(rng_next(rng) % len);
		uint64_t r = rng_next(rng);
		buf[at] = r & 1 ? interesting[(r >> 1) % (sizeof interesting - 1)]
				: (char)(r >> 8);
		check_variant(path, buf, len, st);
	}
	free(buf);
	ts_free(text);
}

static void mutate_folder(const char *folder, uint64_t *rng, int *files,
			  struct mut_stats *st)
{
	DIR *dir = opendir(folder);
	if (!dir)
		fail_msg("cannot open %s", folder);
	/* sorted, so that the PRNG stream meets the files in a fixed order */
	char *names[512];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir)) && n < 512) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0)
			names[n++] = strdup(e->d_name);
	}
	closedir(dir);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", folder, names[i]);
		mutate_file(path, rng, st);
		free(names[i]);
		(*files)++;
	}
}

static const char *shared_data(void)
{
	static char data[1024];
	const char *shared = getenv("TPUSIM_SHARED");
	if (!shared || !*shared)
		return NULL;
	snprintf(data, sizeof data, "%s/data", shared);
	return data;
}

static void test_mutations(void **state)
{
	(void)state;
	const char *data = shared_data();
	if (!data) {
		print_message("TPUSIM_SHARED is not set: skipping the mutation test\n");
		skip();
	}
	uint64_t rng = MUT_SEED;
	struct mut_stats st = {0, 0};
	int files = 0;
	char folder[1100];
	snprintf(folder, sizeof folder, "%s/hlo-corpus", data);
	mutate_folder(folder, &rng, &files, &st);
	snprintf(folder, sizeof folder, "%s/tpugraphs-tile-v3/modules", data);
	mutate_folder(folder, &rng, &files, &st);
	print_message("mutations: %d files, %ld variants parsed, %ld rejected with a located error\n",
		      files, st.parsed, st.failed);
	assert_true(files >= 50);
	/* most damage is detected: a cut inside the text rarely leaves valid HLO */
	assert_true(st.failed > st.parsed);
}

/* The Nth allocation failing gives TS_ERR_NOMEM (leaks are ASan's job). */
static void test_alloc_failures(void **state)
{
	(void)state;
	const char *data = shared_data();
	if (!data) {
		print_message("TPUSIM_SHARED is not set: skipping the allocation test\n");
		skip();
	}
	static const char *const files[] = {
		"hlo-corpus/xla_gpu_kernel_reuse_cublas.hlo",  /* 6 modules */
		"hlo-corpus/xla_if_conditional.hlo",
		"hlo-corpus/tpu_tf_mnist_training_loop_while.hlo",
		"tpugraphs-tile-v3/modules/fusion.191.hlo",
	};
	for (size_t f = 0; f < TS_ARRAY_LEN(files); f++) {
		char path[1200];
		snprintf(path, sizeof path, "%s/%s", data, files[f]);
		size_t len;
		char *text = read_all(path, &len);
		int nomem = 0;
		bool ok = false;
		/* 0..63 one by one, then growing steps until the parse succeeds */
		for (long k = 0; !ok; k = k < 64 ? k + 1 : k * 5 / 4) {
			assert_true(k < 10000000);
			struct ir_module **m = NULL;
			int n = 0;
			struct ts_diag d = {0};
			ts_alloc_fail_after(k);
			enum ts_status s = hlo_parse(path, text, len, &m, &n, &d);
			ts_alloc_fail_after(-1);
			if (s == TS_OK) {
				for (int i = 0; i < n; i++)
					ir_module_free(m[i]);
				ts_free(m);
				ok = true;
				continue;
			}
			if (s != TS_ERR_NOMEM)
				fail_msg("%s with allocation %ld failing: status %d '%s'",
					 files[f], k, s, d.msg);
			assert_null(m);
			assert_int_equal(n, 0);
			assert_string_equal(d.msg, "out of memory");
			nomem++;
		}
		assert_true(nomem >= 8);
		ts_free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
