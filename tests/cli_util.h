/*
 * cli_util.h: running the tpusim executable from a test (test_cli.c,
 * test_cli_tasks.c): spawn it with stdin from /dev/null and its streams
 * captured, check exit codes and messages. TPUSIM_BIN and TPUSIM_SOURCE
 * come from CTest; without them a test skips, saying so. Include after
 * <cmocka.h>.
 */
#ifndef CLI_UTIL_H
#define CLI_UTIL_H

#include <stdbool.h>

#define MAX_ARGS 32

/* One finished process. */
struct proc {
	int rc;    /* exit status; 128 + signal if killed */
	char *out; /* stdout (NUL-terminated, ts_malloc'd) */
	char *err; /* stderr */
};

void proc_free(struct proc *p);
/* getenv(name), or skip the test (saying so) when unset. */
const char *env_or_skip(const char *name);
/* path = $TPUSIM_SOURCE/rel, in buf (PATH_MAX bytes). */
const char *src(char *buf, const char *rel);
/* A file's text (ts_malloc'd); fails the test when unreadable. */
char *slurp(const char *path);
/* A new temporary file (path: PATH_MAX bytes); its descriptor. */
int make_temp(char *path);
/* Runs prog (searched in PATH when search_path) with argv[] (argv[0]
 * included, NULL-terminated); stdin from in_file (or /dev/null), stdout to
 * out_file when given, else captured. false when it could not start. */
bool spawn(struct proc *p, const char *prog, bool search_path,
	   const char *in_file, const char *out_file, char **argv);
/* Runs tpusim with args (NULL-terminated, without argv[0]); stdout to
 * out_file when given, else captured. */
void tpusim_args(struct proc *p, const char *out_file,
		 const char *const *args);
/* tpusim_args with the arguments given inline (NULL-terminated). */
void tpusim_to(struct proc *p, const char *out_file, ...);
#define tpusim(p, ...) tpusim_to(p, NULL, __VA_ARGS__, (const char *)NULL)
/* Fails with both streams shown when rc is not want. */
void expect_rc(const struct proc *p, int want);
void expect_contains(const char *text, const char *want);
bool starts_with(const char *s, const char *prefix);

#endif /* CLI_UTIL_H */
