/*
 * cli_util.c: running the tpusim executable from a test (cli_util.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "test_util.h"
#include "ts.h"

extern char **environ;

void proc_free(struct proc *p)
{
	ts_free(p->out);
	ts_free(p->err);
	p->out = p->err = NULL;
}

const char *env_or_skip(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v) {
		print_message("%s is not set (run through ctest); skipping\n",
			      name);
		skip();
	}
	return v;
}

/* path = $TPUSIM_SOURCE/rel, in buf. */
const char *src(char *buf, const char *rel)
{
	snprintf(buf, PATH_MAX, "%s/%s", env_or_skip("TPUSIM_SOURCE"), rel);
	return buf;
}

char *slurp(const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct ts_diag d = {0};
	assert_int_equal(ts_read_file(path, &text, &len, &d), TS_OK);
	return text;
}

int make_temp(char *path)
{
	snprintf(path, PATH_MAX, "%s/test_cli_XXXXXX", tu_tmpdir());
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	return fd;
}

/*
 * Runs prog (searched in PATH when search_path) with argv[] (argv[0]
 * included, NULL-terminated). stdin comes from in_file (or /dev/null);
 * stdout goes to out_file when given (e.g. /dev/full), else is captured.
 * Returns false when the program could not be started.
 */
bool spawn(struct proc *p, const char *prog, bool search_path,
		  const char *in_file, const char *out_file, char **argv)
{
	char out_path[PATH_MAX], err_path[PATH_MAX];
	int out_fd = make_temp(out_path), err_fd = make_temp(err_path);
	posix_spawn_file_actions_t fa;
	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	posix_spawn_file_actions_addopen(&fa, 0, in_file ? in_file : "/dev/null",
					 O_RDONLY, 0);
	if (out_file)
		posix_spawn_file_actions_addopen(&fa, 1, out_file, O_WRONLY, 0);
	else
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	pid_t pid;
	int e = search_path ? posix_spawnp(&pid, prog, &fa, NULL, argv, environ) :
			      posix_spawn(&pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out_fd);
	close(err_fd);
	bool started = e == 0;
	int status = 0;
	if (started) {
		assert_int_equal(waitpid(pid, &status, 0), pid);
		p->rc = WIFEXITED(status) ? WEXITSTATUS(status) :
					    128 + WTERMSIG(status);
		/* posix_spawnp reports a missing program as exit 127. */
		started = p->rc != 127;
	}
	p->out = slurp(out_path);
	p->err = slurp(err_path);
	unlink(out_path);
	unlink(err_path);
	return started;
}

/* Runs tpusim with args (NULL-terminated, without argv[0]); stdout goes to
 * out_file when given, else is captured. */
void tpusim_args(struct proc *p, const char *out_file,
			const char *const *args)
{
	char *argv[MAX_ARGS];
	int n = 0;
	argv[n++] = (char *)"tpusim";
	for (; *args; args++) {
		assert_true(n + 1 < MAX_ARGS);
		argv[n++] = (char *)*args;
	}
	argv[n] = NULL;
	assert_true(spawn(p, env_or_skip("TPUSIM_BIN"), false, NULL, out_file,
			  argv));
}

/* tpusim_args with the arguments given inline (NULL-terminated). */
void tpusim_to(struct proc *p, const char *out_file, ...)
{
	const char *args[MAX_ARGS];
	int n = 0;
	va_list ap;
	va_start(ap, out_file);
	const char *a;
	while ((a = va_arg(ap, const char *)) != NULL) {
		assert_true(n + 1 < MAX_ARGS);
		args[n++] = a;
	}
	va_end(ap);
	args[n] = NULL;
	tpusim_args(p, out_file, args);
}


/* Fails with both streams shown when rc is not `want`. */
void expect_rc(const struct proc *p, int want)
{
	if (p->rc != want)
		fail_msg("exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", p->rc,
			 want, p->out, p->err);
}

void expect_contains(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("expected to find\n  %s\nin\n%s", want, text);
}

bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

