/*
 * autotune_live.c: `tpusim autotune GRAPH.hlo --measure-cmd CMD`: a user's
 * TPU in the loop. For each tunable kernel of the module the configs are
 * proposed in the strategy's order (hyb_tile_search's ranking: analytic,
 * or hybrid with the learned model) and each is measured by running the
 * user's command, at most the largest --budget times per kernel; the
 * fastest measured config is reported with its analytic and hybrid
 * predictions. The command measures the module run with that kernel at
 * that config (the others at theirs), as a set's row does (validate
 * predicts a row so: the tuned kernel under its config, the others at
 * their defaults); the predictions reported are of that module time.
 *
 * The command is split into words (val_cmd_split: quotes group, a
 * backslash escapes; no variables, globs or substitutions) and run with
 * execvp: no shell unless its first word is one. The words' {module},
 * {kernel} and {config} are replaced by the module path, the kernel's name
 * and the config as `run --config` takes it, each inside its own argument;
 * the command also gets them as TPUSIM_MODULE, TPUSIM_KERNEL and
 * TPUSIM_CONFIG (a shell's script should use those: a placeholder in its
 * source is spliced into code, and a warning says so). It prints the time
 * in ns first on its standard output (val_cmd_read_ns). A measurement ends
 * when the command exits (not when its output closes: a child it leaves
 * may hold that), or at --measure-timeout; then whatever it left running
 * is ended: its process group, and every process that comes back to
 * tpusim, which is their subreaper (a setsid or daemonised child). One
 * that fails, outlives the timeout or prints no valid time is a failed
 * measurement: named in a warning, counted against the budget. When every
 * measurement a run makes fails, it exits 3 (the command is broken).
 *
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT end the measurement in flight and
 * its tree, then tpusim, with the record whole; one tpusim was started with
 * ignored (nohup) stays ignored, by tpusim and the command. tpusim's own
 * children from before the live mode (a shell's jobs that exec'd it) are
 * never ended.
 *
 * --record DIR keeps what was measured as a data set of the shared format
 * (val_record: a locked, append-only log that a resume repairs; failures
 * in failed.csv). A run that finds DIR written measures only the configs
 * not recorded there for this hw and this module's content, counting the
 * recorded ones against the budget and their times in the best; recorded
 * failures are tried again. The module goes into DIR/modules/ under its
 * content's key; when it has several tunable kernels, one copy per kernel
 * marks the tuned one with metadata op_name "autotuned_op" (as TpuGraphs
 * marks its kernels), which is how validate, train and calibrate find it.
 */
/* syscall(2) for pidfd_open: a Linux call beyond the build-wide POSIX. */
#define _DEFAULT_SOURCE

#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIVE_DEFAULT_TIMEOUT_S 60
#define LIVE_MAX_OUT 65536 /* bytes of a command's output read */

/* ---- the command --------------------------------------------------------- */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The measuring command in flight (its process group) and the signal that
 * asked tpusim to stop during it, for the handler: tpusim interrupted
 * (Ctrl-C, a closed terminal, a job's kill) takes its measurement down
 * with it instead of leaving it running on the TPU. */
static volatile sig_atomic_t child_pgid, stop_sig;

static void on_signal(int sig)
{
	int e = errno;
	if (child_pgid > 0) { /* measure() ends the rest, then raises it */
		kill(-(pid_t)child_pgid, SIGKILL);
		stop_sig = sig;
		errno = e;
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The stop signals tpusim was started with ignored (nohup): they stay
 * ignored, by tpusim and by the command. */
static sigset_t ignored_at_start;

/* Handles the stop signals that were not ignored (on_signal). */
static void catch_stop_signals(void)
{
	sigemptyset(&ignored_at_start);
	for (int i = 0; i < VAL_N_STOP_SIGNALS; i++) {
		int sig = val_stop_signal[i];
		struct sigaction was;
		if (sigaction(sig, NULL, &was))
			continue;
		if (was.sa_handler == SIG_IGN)
			sigaddset(&ignored_at_start, sig);
		else
			signal(sig, on_signal);
	}
}

/* In the command's process: the dispositions tpusim was started with
 * (ignored or default) and no signal held. */
static void restore_signals(void)
{
	for (int i = 0; i < VAL_N_STOP_SIGNALS; i++) {
		int sig = val_stop_signal[i];
		signal(sig, sigismember(&ignored_at_start, sig) ? SIG_IGN
							       : SIG_DFL);
	}
	signal(SIGXFSZ, SIG_DFL); /* main ignores it for tpusim's writes */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* /proc/PID/stat's state and its ppid and start time (clock ticks after
 * boot); false when the process is gone. */
static bool proc_stat(long pid, char *state, long *ppid,
		      unsigned long long *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime priority nice
	 * threads itrealvalue starttime": comm may hold ')' */
	const char *rp = strrchr(buf, ')');
	return rp && sscanf(rp + 1,
			    " %c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u "
			    "%*u %*d %*d %*d %*d %*d %*d %llu",
			    state, ppid, start) == 3;
}

/* tpusim's children when the live mode began (a shell's jobs that exec'd
 * tpusim): no measurement's, never ended by one. */
static long foreign[64];
static int n_foreign;

/* Calls fn(pid, state, ctx) for every child of tpusim started at or after
 * start (clock ticks after boot); returns the sum of what fn returned. The
 * children are listed by /proc/self/task/TID/children where the kernel
 * has it, else found among all of /proc by their ppid. */
static int each_child(unsigned long long start,
		      int (*fn)(long pid, char state, void *ctx), void *ctx)
{
	long self = (long)getpid();
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", self, self);
	FILE *list = fopen(path, "r");
	DIR *dir = list ? NULL : opendir("/proc");
	int sum = 0;
	for (;;) {
		long pid = 0;
		if (list) {
			if (fscanf(list, "%ld", &pid) != 1)
				break;
		} else {
			struct dirent *e = dir ? readdir(dir) : NULL;
			char *end;
			if (!e)
				break;
			pid = strtol(e->d_name, &end, 10);
			if (*end)
				continue;
		}
		char state;
		long ppid;
		unsigned long long t;
		if (pid > 0 && proc_stat(pid, &state, &ppid, &t) &&
		    ppid == self && t >= start)
			sum += fn(pid, state, ctx);
	}
	if (list)
		fclose(list);
	if (dir)
		closedir(dir);
	return sum;
}

static int note_foreign(long pid, char state, void *ctx)
{
	(void)state;
	(void)ctx;
	if (n_foreign < (int)TS_ARRAY_LEN(foreign))
		foreign[n_foreign++] = pid;
	return 0;
}

/* A measurement's process is killed, or reaped once ended (1); the
 * leader (ctx) is the caller's to reap and a foreign child no one's (0). */
static int end_child(long pid, char state, void *ctx)
{
	for (int i = 0; i < n_foreign; i++)
		if (foreign[i] == pid)
			return 0;
	if (pid == *(const long *)ctx)
		return 0;
	if (state == 'Z')
		waitpid((pid_t)pid, NULL, WNOHANG);
	else
		kill((pid_t)pid, SIGKILL);
	return 1;
}

/* Has the command's leader ended (it stays unreaped)? */
static bool leader_ended(pid_t pid)
{
	siginfo_t si = {0};
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
		       0 &&
	       si.si_pid == pid;
}

/* Ends what a measurement left running, its leader pid not yet reaped
 * (the caller reaps it): its process group, then every process that comes
 * back to tpusim, their subreaper (a descendant that left the group comes
 * back when its parent ends), for at most 2 s once the leader has ended
 * (killed, it ends; until then the caller's wait for it would take as
 * long, and a child it hands over later would be missed). */
static void end_tree(pid_t pid, unsigned long long start)
{
	kill(-pid, SIGKILL);
	for (double stop = -1; stop < 0 || now_s() < stop;) {
		/* once the leader has ended, its children are tpusim's: seen
		 * ended before they are listed (the other way round, a child
		 * it left when it ended between the two would be missed) */
		bool gone = leader_ended(pid);
		if (gone && stop < 0)
			stop = now_s() + 2;
		long leader = pid;
		if (!each_child(start, end_child, &leader) && gone)
			return;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

/* Reads what the pipe has (non-blocking) into out (at most LIVE_MAX_OUT
 * kept, the rest read and dropped); false at its end. */
static bool drain(int fd, char *out, size_t *len)
{
	for (;;) {
		char tmp[4096];
		ssize_t got = read(fd, tmp, sizeof tmp);
		if (got < 0)
			return errno == EINTR || errno == EAGAIN;
		if (got == 0)
			return false;
		size_t take = (size_t)got < LIVE_MAX_OUT - *len
				      ? (size_t)got
				      : LIVE_MAX_OUT - *len;
		memcpy(out + *len, tmp, take);
		*len += take;
	}
}

/* Runs argv with env's TPUSIM_MODULE, TPUSIM_KERNEL and TPUSIM_CONFIG;
 * *ns its time when it succeeds (true), else why in reason. */
static bool measure(char *const *argv, const char *const env[3],
		    int timeout_s, int64_t *ns, char *reason, size_t cap)
{
	static const char *const env_names[3] = {
		"TPUSIM_MODULE", "TPUSIM_KERNEL", "TPUSIM_CONFIG"};
	int fd[2];
	char *out = ts_malloc(LIVE_MAX_OUT + 1);
	if (!out) {
		snprintf(reason, cap, "out of memory");
		return false;
	}
	if (pipe(fd) != 0) {
		snprintf(reason, cap, "cannot make a pipe: %s", strerror(errno));
		ts_free(out);
		return false;
	}
	fflush(NULL);
	sigset_t stop, was;
	val_stop_signals(&stop);
	sigprocmask(SIG_BLOCK, &stop, &was); /* child_pgid set before one */
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		restore_signals();
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0 && null != STDIN_FILENO) {
			dup2(null, STDIN_FILENO);
			close(null);
		}
		dup2(fd[1], STDOUT_FILENO);
		/* none of tpusim's own descriptors (the pipe's ends, the
		 * record and its lock) goes to the user's command */
		for (int f = STDERR_FILENO + 1; f < 1024; f++)
			close(f);
		/* the BLAS pin is tpusim's (main.c pin_blas), not the
		 * command's */
		unsetenv("OPENBLAS_CORETYPE");
		for (int i = 0; i < 3; i++)
			setenv(env_names[i], env[i], 1);
		execvp(argv[0], argv);
		fprintf(stderr, "tpusim autotune: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (pid > 0) {
		setpgid(pid, pid);
		child_pgid = pid;
	}
	sigprocmask(SIG_SETMASK, &was, NULL);
	close(fd[1]);
	if (pid < 0) {
		snprintf(reason, cap, "cannot fork: %s", strerror(errno));
		close(fd[0]);
		ts_free(out);
		return false;
	}
	char state;
	long ppid;
	unsigned long long start = 0;
	proc_stat(pid, &state, &ppid, &start);
	fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK);
	/* a descriptor that is readable when the command exits (Linux 5.3);
	 * without one, its exit is looked for every 10 ms */
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* until it exits (its output may stay open in a child it left) or
	 * the deadline; the leader stays unreaped (a zombie) so that its
	 * process group cannot be another's when it is ended */
	size_t len = 0;
	bool open_out = true, exited = false;
	double deadline = now_s() + timeout_s;
	while (!stop_sig) {
		if (leader_ended(pid)) {
			exited = true;
			if (open_out)
				drain(fd[0], out, &len);
			break;
		}
		double left = deadline - now_s();
		if (left <= 0)
			break;
		struct pollfd p[2] = {{open_out ? fd[0] : -1, POLLIN, 0},
				      {pidfd, POLLIN, 0}};
		poll(p, 2, (int)fmin(left * 1000 + 1, pidfd >= 0 ? 1000 : 10));
		if (open_out)
			open_out = drain(fd[0], out, &len);
	}
	end_tree(pid, start);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_pgid = 0;
	close(fd[0]);
	if (pidfd >= 0)
		close(pidfd);
	if (stop_sig) {
		signal(stop_sig, SIG_DFL);
		raise(stop_sig);
	}
	bool ok = false;
	if (!exited) {
		snprintf(reason, cap, "timed out after %d s", timeout_s);
	} else if (WIFSIGNALED(status)) {
		snprintf(reason, cap, "killed by signal %d", WTERMSIG(status));
	} else if (WEXITSTATUS(status) != 0) {
		snprintf(reason, cap, "exited with status %d",
			 WEXITSTATUS(status));
	} else {
		ok = val_cmd_read_ns(out, len, ns, reason, cap);
	}
	ts_free(out);
	return ok;
}

/* ---- the record ---------------------------------------------------------- */

/* The module text with kernel k's instruction marked op_name
 * "autotuned_op" (malloc'd): its op_name replaced, or added to its
 * metadata, or a metadata attribute appended. */
static char *marked_text(const char *text, size_t len,
			 const struct ir_instr *in)
{
	const char *b = text + in->rhs_begin, *e = text + in->rhs_end;
	if (in->rhs_end <= in->rhs_begin || in->rhs_end > len)
		return NULL;
	const char *at = NULL, *cut = NULL, *ins;
	for (const char *p = b; p + 9 <= e && !at; p++)
		if (!strncmp(p, "op_name=\"", 9))
			at = p;
	if (at) { /* replace the quoted value */
		ins = "op_name=\"autotuned_op\"";
		cut = strchr(at + 9, '"');
		if (!cut || cut >= e)
			return NULL;
		cut++;
	} else {
		for (const char *p = b; p + 10 <= e && !at; p++)
			if (!strncmp(p, "metadata={", 10))
				at = p + 10;
		ins = at ? "op_name=\"autotuned_op\" "
			 : ", metadata={op_name=\"autotuned_op\"}";
		if (!at)
			at = e;
		cut = at;
	}
	size_t n = (size_t)(at - text) + strlen(ins) + (len - (size_t)(cut - text));
	char *out = ts_malloc(n + 1);
	if (!out)
		return NULL;
	size_t o = (size_t)(at - text);
	memcpy(out, text, o);
	memcpy(out + o, ins, strlen(ins));
	o += strlen(ins);
	memcpy(out + o, cut, len - (size_t)(cut - text));
	out[n] = '\0';
	return out;
}

/* ---- the mode ------------------------------------------------------------ */

enum { L_MODULE = 0, L_KERNEL, L_CONFIG, L_BEST, L_ANALYTIC, L_HYBRID,
       L_MEASURED, L_FAILED, L_COUNT };

static const struct cmd_col live_cols[] = {
	[L_MODULE] = {"module", "module", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
	[L_KERNEL] = {"kernel", "kernel", CMD_UNIT_TEXT, 0},
	[L_CONFIG] = {"best_config", "best config", CMD_UNIT_TEXT, 0},
	[L_BEST] = {"best_ns", "measured", CMD_UNIT_TIME_NS, 0},
	[L_ANALYTIC] = {"analytic_ns", "analytic", CMD_UNIT_TIME_NS, 0},
	[L_HYBRID] = {"hybrid_ns", "hybrid", CMD_UNIT_TIME_NS, 0},
	[L_MEASURED] = {"measurements", "measured", CMD_UNIT_INT, 0},
	[L_FAILED] = {"failed", "failed", CMD_UNIT_INT, 0},
};
_Static_assert(TS_ARRAY_LEN(live_cols) == L_COUNT,
	       "live_cols must list every column");

struct live {
	struct cmd_ctx *ctx;
	double module_ns, module_hybrid_ns; /* the program at its defaults:
	                                       sum of time x multiplicity */
	const struct tune_live_opts *o;
	const char *graph;
	const char *module;        /* the module being tuned (its name) */
	const char *stem;          /* the graph's file name without .hlo */
	const struct gnn_model *model;
	bool by_hybrid;
	int budget;
	char *words[VAL_CMD_MAX_WORDS];
	int n_words;
	int n_tunable;             /* in the module */
	const char *text;
	size_t len;
	uint64_t key;              /* the module text's FNV-1a: its record key */
	struct val_record *rec;    /* --record, or NULL */
	char hw[80];               /* "tpu-<spec>", the record's hw */
	int tried, failed;         /* measurements this run made, and failed */
	char last_why[256];        /* the last failure's reason */
};

/* The hybrid time of k under cfg (NaN when it cannot be had); a learned
 * time that is not finite falls back to the analytic one, with a warning
 * naming the kernel. */
static double hybrid_ns(const struct live *l, const struct sim_kernel *k,
			const struct sim_tile_config *cfg)
{
	struct sim_estimate est;
	struct hyb_embedding e;
	struct ts_diag d = {0};
	if (sim_kernel_estimate(k, &l->ctx->hw, cfg, &est, &d) != TS_OK ||
	    hyb_embed(l->model, k, &e) != TS_OK)
		return NAN;
	bool fell_back = false;
	double t = hyb_kernel_predict(l->model, &e, k, &est, &l->ctx->hw, false,
				      &fell_back);
	if (fell_back)
		cmd_warn_fell_back(l->ctx, l->module, k->name, 0, NULL);
	return t;
}

/* The record's module file for kernel k: the module, or with several
 * tunable kernels a copy marking k. rel gets its path in the record. */
static int record_module(struct live *l, const struct sim_kernel *k,
			 char *rel, size_t cap)
{
	bool mark = l->n_tunable > 1;
	char *text = mark && k->instr ? marked_text(l->text, l->len, k->instr)
				      : NULL;
	if (mark && !text) {
		cmd_error(l->ctx, "--record: cannot mark kernel %s in %s",
			  k->name, l->graph);
		return CMD_EXIT_IO;
	}
	struct ts_diag d = {0};
	enum ts_status st = val_record_module(
		l->rec, l->stem, l->key, mark ? k->name : NULL,
		text ? text : l->text, text ? strlen(text) : l->len, rel, cap,
		&d);
	ts_free(text);
	if (st)
		cmd_diag(l->ctx, &d, NULL, NULL, 0);
	return cmd_exit_from_status(st);
}

/* Measures k under cfg with the user's command and
 * records the outcome; *ns its time, 0 when it failed. */
static int measure_config(struct live *l, const struct sim_kernel *k,
			  const char *rel, const char *cfg, int64_t *ns)
{
	const char *vals[3] = {l->graph, k->name, cfg};
	char *argv[VAL_CMD_MAX_WORDS + 1];
	int n = 0;
	for (; n < l->n_words; n++)
		if (!(argv[n] = val_cmd_substitute(l->words[n], vals)))
			break;
	argv[n] = NULL;
	char why[256] = "out of memory";
	*ns = 0;
	bool ok = n == l->n_words &&
		  measure(argv, vals,
			  l->o->timeout_s > 0 ? l->o->timeout_s
					      : LIVE_DEFAULT_TIMEOUT_S,
			  ns, why, sizeof why);
	for (int w = 0; w < n; w++)
		ts_free(argv[w]);
	l->tried++;
	if (!ok) {
		*ns = 0;
		l->failed++;
		snprintf(l->last_why, sizeof l->last_why, "%s", why);
		fprintf(l->ctx->err,
			"%s: warning: kernel %s, config %s: measurement failed: "
			"%s\n",
			l->ctx->prog, k->name, cfg, why);
	}
	if (!l->rec)
		return CMD_EXIT_OK;
	/* unique whatever order a later run proposes in */
	char id[2048];
	snprintf(id, sizeof id, "%s-%016" PRIx64 ".%s.%s.%s", l->stem, l->key,
		 k->name, l->hw, cfg);
	struct ts_diag d = {0};
	enum ts_status st =
		ok ? val_record_add(l->rec, id, rel, l->hw, cfg, *ns, &d)
		   : val_record_add_failure(l->rec, id, rel, k->name, cfg, why,
					    &d);
	if (st)
		cmd_diag(l->ctx, &d, NULL, NULL, 0);
	return cmd_exit_from_status(st);
}

static int tune_kernel(struct live *l, const struct sim_kernel *k,
		       struct cmd_table *t)
{
	struct hyb_tile_opts ho = {.top_k = l->budget,
				   .model = l->by_hybrid ? l->model : NULL};
	struct hyb_tile_result res;
	struct ts_diag d = {0};
	enum ts_status st = hyb_tile_search(k, &l->ctx->hw, &ho, &res, &d);
	if (st != TS_OK) {
		cmd_diag(l->ctx, &d, l->graph, l->text, l->len);
		return cmd_exit_from_status(st);
	}
	char rel[1024] = "";
	int rc = l->rec ? record_module(l, k, rel, sizeof rel) : CMD_EXIT_OK;
	int measured = 0, failed = 0, best = -1;
	int64_t best_ns = INT64_MAX;
	for (int i = 0; i < res.n_top && rc == CMD_EXIT_OK; i++) {
		char cfg[SIM_TILE_CONFIG_TEXT_MAX];
		sim_tile_config_format(&res.top[i].config, cfg, sizeof cfg);
		/* a recorded measurement counts, is not measured again; a
		 * recorded failure is tried again */
		int64_t ns = l->rec ? val_record_find(l->rec, rel, l->hw, cfg)
				    : 0;
		if (!ns)
			rc = measure_config(l, k, rel, cfg, &ns);
		measured++;
		failed += !ns;
		if (ns && ns < best_ns) {
			best_ns = ns;
			best = i;
		}
	}
	if (rc != CMD_EXIT_OK)
		return rc;
	if ((st = cmd_table_add_row(t)) ||
	    (st = cmd_table_set_text(t, L_MODULE, l->module)) ||
	    (st = cmd_table_set_text(t, L_KERNEL, k->name)))
		return CMD_EXIT_IO;
	if (best >= 0) {
		/* the module's time with k at that config, the others at
		 * their defaults (what the command measures, and what
		 * validate predicts for a recorded row) */
		const struct sim_tile_config *c = &res.top[best].config;
		char cfg[SIM_TILE_CONFIG_TEXT_MAX];
		sim_tile_config_format(c, cfg, sizeof cfg);
		if (cmd_table_set_text(t, L_CONFIG, cfg))
			return CMD_EXIT_IO;
		cmd_table_set_num(t, L_BEST, (double)best_ns);
		cmd_table_set_num(t, L_ANALYTIC,
				  l->module_ns + (res.top[best].analytic_ns -
						  k->est.time_ns) *
							 k->multiplicity);
		cmd_table_set_num(t, L_HYBRID,
				  l->module_hybrid_ns +
					  (hybrid_ns(l, k, c) -
					   hybrid_ns(l, k, &k->est.config)) *
						  k->multiplicity);
	}
	cmd_table_set_num(t, L_MEASURED, measured);
	cmd_table_set_num(t, L_FAILED, failed);
	return CMD_EXIT_OK;
}

/* A shell's -c script with a placeholder in it (the shell anywhere in
 * the words, after env, timeout and the like): the value is spliced into
 * the script's source. */
static void warn_shell_splice(const struct live *l)
{
	static const char *const shells[] = {"sh", "bash", "dash", "zsh",
					     "ksh", "mksh", "ash", "busybox"};
	for (int w = 0; w < l->n_words; w++) {
		const char *slash = strrchr(l->words[w], '/');
		const char *name = slash ? slash + 1 : l->words[w];
		bool shell = false;
		for (size_t i = 0; i < TS_ARRAY_LEN(shells); i++)
			shell |= !strcmp(name, shells[i]);
		/* its options up to the one with c; the script is next */
		int o = w + 1;
		while (shell && o < l->n_words && l->words[o][0] == '-' &&
		       !strchr(l->words[o], 'c'))
			o++;
		if (!shell || o + 1 >= l->n_words || l->words[o][0] != '-')
			continue;
		const char *script = l->words[o + 1];
		if (strstr(script, "{module}") || strstr(script, "{kernel}") ||
		    strstr(script, "{config}")) {
			fprintf(l->ctx->err,
				"%s: warning: --measure-cmd: a placeholder in "
				"%s's -c script is spliced into its source (a "
				"quote or $(...) in a file name would run as "
				"code); use \"$TPUSIM_MODULE\", "
				"\"$TPUSIM_KERNEL\" and \"$TPUSIM_CONFIG\", "
				"which the command gets\n",
				l->ctx->prog, name);
			return;
		}
	}
}

int cmd_autotune_live(struct cmd_ctx *ctx, const char *graph,
		      const struct val_tune_opts *t, const char *model,
		      const struct tune_live_opts *o)
{
	if (!ctx->hw_path) {
		cmd_error(ctx, "--hw SPEC.yaml is required with GRAPH.hlo (e.g. "
			       "--hw hwspecs/v3.yaml)");
		return CMD_EXIT_USAGE;
	}
	if (!o->measure_cmd) {
		cmd_error(ctx, "--measure-cmd CMD is required with GRAPH.hlo");
		return CMD_EXIT_USAGE;
	}
	if (t->use[VAL_TUNE_RANDOM] || t->use[VAL_TUNE_ONLINE] ||
	    (t->use[VAL_TUNE_ANALYTIC] && t->use[VAL_TUNE_HYBRID])) {
		cmd_error(ctx, "--strategy: the live mode takes analytic or "
			       "hybrid");
		return CMD_EXIT_USAGE;
	}
	struct live l = {.ctx = ctx, .o = o, .graph = graph,
			 .by_hybrid = t->use[VAL_TUNE_HYBRID],
			 .budget = t->budgets[t->n_budgets - 1]};
	if (l.budget > HYB_TILE_MAX_TOP) {
		cmd_error(ctx, "--budget: the live mode measures at most %d "
			       "configs per kernel, got %d",
			  HYB_TILE_MAX_TOP, l.budget);
		return CMD_EXIT_USAGE;
	}
	char *wbuf = ts_malloc(strlen(o->measure_cmd) + 1);
	if (!wbuf) {
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_IO;
	}
	if (!val_cmd_split(o->measure_cmd, wbuf, l.words, &l.n_words)) {
		ts_free(wbuf);
		cmd_error(ctx, "--measure-cmd: no command, an unterminated quote "
			       "or more than %d words in '%s'",
			  VAL_CMD_MAX_WORDS, o->measure_cmd);
		return CMD_EXIT_USAGE;
	}
	warn_shell_splice(&l);
	/* cmd_autotune checked the record's files against the inputs */
	int rc = CMD_EXIT_OK;
	struct gnn_model m = {0};
	if (rc == CMD_EXIT_OK)
		rc = cmd_load_model(ctx, model ? model : "default", &m);
	l.model = &m;
	struct cmd_graph g = {0};
	if (rc == CMD_EXIT_OK)
		rc = cmd_graph_load(ctx, graph, NULL,
				    &(struct sim_program_opts){0}, NULL, &g);
	if (rc == CMD_EXIT_OK && o->record && g.n_progs > 1) {
		cmd_error(ctx, "--record: %s holds %d modules; a record's module "
			       "file holds one (validate reads one): record "
			       "each from a file of its own",
			  graph, g.n_progs);
		rc = CMD_EXIT_USAGE;
	}
	char stem[512];
	const char *base;
	size_t sl = ts_path_stem(graph, &base);
	snprintf(stem, sizeof stem, "%.*s", (int)sl, base);
	l.stem = stem;
	l.text = g.text;
	l.len = g.text ? strlen(g.text) : 0;
	l.key = ts_fnv1a(TS_FNV1A_BASIS, l.text ? l.text : "", l.len);
	snprintf(l.hw, sizeof l.hw, "tpu-%s", ctx->hw.name);
	/* an interrupt, a closed terminal or a kill ends the measurement in
	 * flight and what it started (tpusim is its subreaper); a child's
	 * exit status is ours to read */
	signal(SIGCHLD, SIG_DFL);
	catch_stop_signals();
	each_child(0, note_foreign, NULL);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	struct val_record rec;
	bool opened = false;
	if (rc == CMD_EXIT_OK && o->record) {
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/modules", o->record);
		rc = cmd_out_dir(ctx, "--record", o->record);
		if (rc == CMD_EXIT_OK)
			rc = cmd_out_dir(ctx, "--record", sub);
		struct ts_diag d = {0};
		if (rc == CMD_EXIT_OK) {
			opened = true;
			enum ts_status st = val_record_open(o->record, &rec,
							    ctx->err, &d);
			if (st) {
				cmd_diag(ctx, &d, NULL, NULL, 0);
				rc = cmd_exit_from_status(st);
			}
			l.rec = &rec;
		}
	}
	struct cmd_table tbl;
	cmd_table_init(&tbl, "kernels", NULL, live_cols, L_COUNT);
	for (int p = 0; rc == CMD_EXIT_OK && p < g.n_progs; p++) {
		struct sim_program *prog = &g.progs[p];
		struct ts_diag d = {0};
		if (sim_program_estimate(prog, &ctx->hw, &d) != TS_OK) {
			cmd_diag(ctx, &d, graph, l.text, l.len);
			rc = CMD_EXIT_INPUT;
			break;
		}
		l.module = prog->module->name;
		l.n_tunable = 0;
		l.module_ns = l.module_hybrid_ns = 0;
		for (int i = 0; i < prog->n_kernels; i++) {
			const struct sim_kernel *k = &prog->kernels[i];
			l.n_tunable += k->tunable;
			l.module_ns += k->est.time_ns * k->multiplicity;
			double h = k->est.modelled ? hybrid_ns(&l, k, &k->est.config)
						   : 0.0;
			l.module_hybrid_ns += (isfinite(h) ? h : k->est.time_ns) *
					      k->multiplicity;
		}
		for (int i = 0; i < prog->n_kernels && rc == CMD_EXIT_OK; i++)
			if (prog->kernels[i].tunable)
				rc = tune_kernel(&l, &prog->kernels[i], &tbl);
	}
	if (rc == CMD_EXIT_OK) {
		struct cmd_report rep;
		cmd_report_begin(&rep, ctx->format, ctx->out);
		cmd_report_text(&rep, "file", graph);
		cmd_report_text(&rep, "hw", ctx->hw.name);
		cmd_report_text(&rep, "strategy", l.by_hybrid ? "hybrid"
							       : "analytic");
		cmd_report_num(&rep, "budget", CMD_UNIT_INT, l.budget);
		cmd_report_table(&rep, &tbl);
		rc = cmd_report_finish(ctx, &rep, TS_OK);
	}
	if (rc == CMD_EXIT_OK && l.tried > 0 && l.failed == l.tried) {
		cmd_error(ctx, "every measurement failed (%d of %d; the last: "
			       "%s): check --measure-cmd",
			  l.failed, l.tried, l.last_why);
		rc = CMD_EXIT_IO;
	}
	if (opened)
		val_record_close(&rec);
	cmd_table_free(&tbl);
	cmd_graph_free(&g);
	gnn_model_free(&m);
	ts_free(wbuf);
	return rc;
}
