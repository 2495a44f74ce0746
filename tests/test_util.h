/*
 * test_util.h: helpers the cmocka tests share (linked into every test by
 * add_tpusim_test): a floating-point assertion that prints both values,
 * building a kernel program from HLO text, loading a spec from the source
 * tree, and the temporary folder. Include after <cmocka.h>.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "hw_spec.h"
#include "sim.h"

/* |got - want| <= tol, printing both (cmocka has no double comparison with
 * a message). Each test states why its tolerance has the value it has. */
#define assert_near(got, want, tol)                                            \
	do {                                                                   \
		double got_ = (got), want_ = (want);                           \
		if (!(fabs(got_ - want_) <= (tol)))                            \
			fail_msg("%s = %.17g, want %.17g (tol %g)", #got,      \
				 got_, want_, (double)(tol));                  \
	} while (0)

/* One parsed HLO text and the kernel program of its first module. */
struct tu_built {
	struct ir_module **m; /* parsed modules */
	int n;                /* how many */
	struct sim_program p; /* kernels of m[0] */
};

/* Parses text (named `file` in diagnostics) and builds m[0]'s program with
 * opts (NULL: defaults); any error fails the test with its message. */
void tu_build_file(const char *file, const char *text, size_t len,
		   const struct sim_program_opts *opts, struct tu_built *b);
/* tu_build_file("t.hlo", text, strlen(text), NULL, b). */
void tu_build(const char *text, struct tu_built *b);
void tu_built_free(struct tu_built *b);
/* "a,b,c": the kernel names of b's program in schedule order, into buf. */
void tu_names(const struct tu_built *b, char *buf, size_t cap);
#define ASSERT_NAMES(b, expect)                                               \
	do {                                                                  \
		char buf_[1024];                                              \
		tu_names((b), buf_, sizeof buf_);                             \
		assert_string_equal(buf_, (expect));                          \
	} while (0)
/* The kernel called name; fails the test when there is none. */
const struct sim_kernel *tu_kernel(const struct tu_built *b, const char *name);

/* Fuses text as `tpusim fuse --hw hw` does (sim_module_rewrite for hw,
 * the plan of cost, NULL: the xla policy, the values memory-space
 * assignment keeps in VMEM written in S(1)), reads the result back and
 * costs both on hw. Returns the fused text (free() it), the two program
 * times and counts of the kernels that run (not a prefetch placement
 * left idle, which fuse does not write), the pass's stats and, when flips
 * is given, the plan's flips; any failure fails the test. */
struct hyb_fuse_cost;
char *tu_fuse_round_trip(const char *text, const struct hw_spec *hw,
			 const struct hyb_fuse_cost *cost, int *flips,
			 double *t0, double *t1, int *k0, int *k1,
			 struct sim_fuse_stats *fs);

/* Loads $TPUSIM_SOURCE/hwspecs/<gen>.yaml (set by CTest). Returns false,
 * printing why, when TPUSIM_SOURCE is unset (the caller skips); a spec that
 * does not load fails the test. */
bool tu_load_spec(const char *gen, struct hw_spec *hw);

/* Two values whose placement the order decides (test_fusion's
 * test_placement_order, test_cli_tasks' whatif sweep): s (1 MiB) and l
 * (4 MiB), each written by a skinny bf16 dot and read by an f32 one. */
extern const char tu_placement_order_hlo[];
/* Two weights and an activation on v5e: w1, a dot's weight, is the
 * cross-program prefetch; w2, read after the dot by two loop kernels (and
 * by a dead negate), is prefetched behind it; x, read by the first
 * kernel, is not (test_fusion test_weight_prefetch). */
extern const char tu_weight_prefetch_hlo[];

/* Calls fn with every `every`-th .hlo file of data/folder in name order
 * (the first included): its path relative to data, text and length. A
 * folder or file that cannot be read fails the test. */
void tu_each_hlo(const char *data, const char *folder, int every,
		 void (*fn)(const char *rel, const char *text, size_t len,
			    void *ctx),
		 void *ctx);

/* The folder for temporary files: $TMPDIR, or /tmp when it is unset or
 * empty. */
const char *tu_tmpdir(void);
/* "<tu_tmpdir()>/<stem>_<pid><ext>" into buf: a temporary file or folder
 * name of its own for each test process. */
void tu_tmp_path(char *buf, size_t n, const char *stem, const char *ext);
/* Removes path, a file or a folder with everything in it (nothing when it
 * does not exist). */
void tu_rm_tree(const char *path);

#endif /* TEST_UTIL_H */
