/*
 * numlib.h: OpenBLAS (the network's dense products) and GSL (random
 * numbers, the Cholesky of autotune's regression, calibrate's simplex
 * minimiser), loaded with dlopen when first needed instead of at every
 * start: loading OpenBLAS alone took 2.5 ms, most of a small `run`'s time
 * (docs/BENCH.md). OpenBLAS is loaded first and into the global scope, so
 * that GSL's own BLAS calls resolve to it, as when both were linked.
 *
 * Every entry point that leads to them calls numlib_load() first (it loads
 * once; a library that cannot be loaded is an error with the reason), then
 * calls NL(f)(...) for the loaded f and reads *NL(v) for a GSL variable,
 * f and v declared by the library's own header.
 * tpusim runs one thread: the table is written once, then only read.
 */
#ifndef NUMLIB_H
#define NUMLIB_H

#include "ts.h"

#define NUMLIB_BLAS                                                           \
	X(cblas_dgemm)                                                        \
	X(cblas_dgemv)                                                        \
	X(cblas_dger)
#define NUMLIB_GSL                                                            \
	X(gsl_rng_alloc)                                                      \
	X(gsl_rng_free)                                                       \
	X(gsl_rng_set)                                                        \
	X(gsl_rng_uniform)                                                    \
	X(gsl_rng_uniform_int)                                                \
	X(gsl_rng_mt19937)                                                    \
	X(gsl_set_error_handler)                                              \
	X(gsl_set_error_handler_off)                                          \
	X(gsl_vector_alloc)                                                   \
	X(gsl_vector_free)                                                    \
	X(gsl_vector_get)                                                     \
	X(gsl_vector_set)                                                     \
	X(gsl_vector_view_array)                                              \
	X(gsl_matrix_view_array)                                              \
	X(gsl_linalg_cholesky_decomp1)                                        \
	X(gsl_linalg_cholesky_invert)                                         \
	X(gsl_linalg_cholesky_solve)                                          \
	X(gsl_multimin_fminimizer_alloc)                                      \
	X(gsl_multimin_fminimizer_free)                                       \
	X(gsl_multimin_fminimizer_iterate)                                    \
	X(gsl_multimin_fminimizer_set)                                        \
	X(gsl_multimin_fminimizer_size)                                       \
	X(gsl_multimin_fminimizer_x)                                          \
	X(gsl_multimin_fminimizer_nmsimplex2)                                 \
	X(gsl_multimin_test_size)

/* The address of each symbol (a function, or a GSL variable such as the
 * generator type gsl_rng_mt19937); NL gives it its type from the
 * library's header, which the caller includes (OpenBLAS's cblas.h and
 * GSL's gsl_blas.h declare the same names differently, so no one file
 * includes both). */
struct numlib {
#define X(f) void *f;
	NUMLIB_BLAS
	NUMLIB_GSL
#undef X
};
extern struct numlib numlib_table;

/* Loads OpenBLAS and GSL once; later calls return at once. On failure d
 * says which library and why (dlerror). */
enum ts_status numlib_load(struct ts_diag *d);

#define NL(f) ((__typeof__(f) *)numlib_table.f)

#endif
