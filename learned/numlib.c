/*
 * numlib.c: OpenBLAS and GSL loaded at first use (numlib.h). Their paths
 * are the libraries CMake found (TPUSIM_OPENBLAS_LIB: Debian's serial
 * OpenBLAS; TPUSIM_GSL_LIB).
 */
#include "numlib.h"

#include <dlfcn.h>
#include <stdbool.h>

struct numlib numlib_table;

/* dlopen(path, flags), or the reason it failed in d. */
static enum ts_status open_lib(const char *path, int flags, void **h,
			       struct ts_diag *d)
{
	*h = dlopen(path, flags);
	if (!*h) {
		ts_diag_set(d, NULL, 0, 0, "cannot load %s: %s", path,
			    dlerror());
		return TS_ERR_IO;
	}
	return TS_OK;
}

enum ts_status numlib_load(struct ts_diag *d)
{
	static bool loaded;
	if (loaded)
		return TS_OK;
	void *blas, *gsl;
	enum ts_status st =
		open_lib(TPUSIM_OPENBLAS_LIB, RTLD_NOW | RTLD_GLOBAL, &blas, d);
	if (st != TS_OK)
		return st;
	if ((st = open_lib(TPUSIM_GSL_LIB, RTLD_NOW | RTLD_LOCAL, &gsl, d))) {
		dlclose(blas);
		return st;
	}
	struct numlib t;
#define STR(x) #x
#define TAKE(h, f)                                                            \
	if (!(t.f = dlsym(h, STR(f)))) {                         \
		ts_diag_set(d, NULL, 0, 0, "%s has no %s",                    \
			    (h) == blas ? TPUSIM_OPENBLAS_LIB : TPUSIM_GSL_LIB, \
			    STR(f));                                          \
		dlclose(gsl);                                                 \
		dlclose(blas);                                                \
		return TS_ERR_IO;                                             \
	}
#define X(f) TAKE(blas, f)
	NUMLIB_BLAS
#undef X
#define X(f) TAKE(gsl, f)
	NUMLIB_GSL
#undef X
#undef TAKE
#undef STR
	numlib_table = t;
	loaded = true;
	return TS_OK;
}
