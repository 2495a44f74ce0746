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
 * The command is split into words here (single and double quotes group,
 * a backslash escapes; no variables, globs or substitutions) and run with
 * execvp: no shell unless its first word is one. The words' {module},
 * {kernel} and {config} are replaced by the module path, the kernel's name
 * and the config as `run --config` takes it, each staying inside its own
 * argument. The command prints the time in ns first on its standard
 * output; one that fails (non-zero exit, a signal), outlives
 * --measure-timeout (its process group is killed) or prints no positive
 * number is a failed measurement: recorded, counted against the budget.
 *
 * --record DIR keeps what was measured as a data set of the shared format
 * (measurements.csv + modules/, device timing), appended line by line with
 * one write each as measurements arrive, so an interrupted run loses at
 * most the measurement in flight (an interrupt kills it); failures go to
 * DIR/failed.csv. A run that finds DIR already written measures only the
 * configs not recorded there for this hw (measured or failed), counting
 * the recorded ones against the budget and their times in the best. The
 * module goes into DIR/modules/ (written once: a file already there is
 * kept); when it has several tunable kernels, one copy per kernel marks
 * the tuned one with metadata op_name "autotuned_op" (as TpuGraphs marks
 * its kernels), which is how validate, train and calibrate find it.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIVE_DEFAULT_TIMEOUT_S 60
#define LIVE_MAX_WORDS 64
#define LIVE_MAX_OUT 65536 /* bytes of a command's output read */

/* ---- the command ----------------------------------------------------------- */

/* Splits cmd into words (into buf, at most LIVE_MAX_WORDS): blanks
 * separate, '...' and "..." group, a backslash escapes the next character
 * (inside "..." only before " and \). False on an unterminated quote or
 * too many words. */
static bool split_words(const char *cmd, char *buf, char **words, int *n)
{
	*n = 0;
	const char *p = cmd;
	char *o = buf;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (*n == LIVE_MAX_WORDS)
			return false;
		words[(*n)++] = o;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
			if (*p == '\'') {
				const char *e = strchr(p + 1, '\'');
				if (!e)
					return false;
				memcpy(o, p + 1, (size_t)(e - p - 1));
				o += e - p - 1;
				p = e + 1;
			} else if (*p == '"') {
				p++;
				while (*p && *p != '"') {
					if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
						p++;
					*o++ = *p++;
				}
				if (*p != '"')
					return false;
				p++;
			} else {
				if (*p == '\\' && p[1])
					p++;
				*o++ = *p++;
			}
		}
		*o++ = '\0';
	}
	return *n > 0;
}

/* word with every {module}, {kernel} and {config} replaced (malloc'd). */
static char *substitute(const char *word, const char *const vals[3])
{
	static const char *const keys[3] = {"{module}", "{kernel}", "{config}"};
	size_t cap = strlen(word) + 1;
	for (int k = 0; k < 3; k++)
		for (const char *q = strstr(word, keys[k]); q;
		     q = strstr(q + 1, keys[k]))
			cap += strlen(vals[k]);
	char *out = ts_malloc(cap), *o = out;
	if (!out)
		return NULL;
	for (const char *p = word; *p;) {
		int k = 0;
		while (k < 3 && strncmp(p, keys[k], strlen(keys[k])))
			k++;
		if (k < 3) {
			size_t l = strlen(vals[k]);
			memcpy(o, vals[k], l);
			o += l;
			p += strlen(keys[k]);
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The measuring command in flight (its process group), for the signal
 * handler: a tpusim interrupted (Ctrl-C, a job's kill) takes its
 * measurement down with it instead of leaving it running on the TPU. */
static volatile sig_atomic_t child_pgid;

static void on_signal(int sig)
{
	if (child_pgid > 0)
		kill(-(pid_t)child_pgid, SIGKILL);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Runs argv; *ns its time when it succeeds (true), else why in reason. */
static bool measure(char *const *argv, int timeout_s, double *ns,
		    char *reason, size_t cap)
{
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(reason, cap, "cannot make a pipe: %s", strerror(errno));
		return false;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(reason, cap, "cannot fork: %s", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return false;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0 && null != STDIN_FILENO) {
			dup2(null, STDIN_FILENO);
			close(null);
		}
		dup2(fd[1], STDOUT_FILENO);
		/* none of tpusim's own descriptors (the pipe's ends, the
		 * record) goes to the user's command */
		for (int f = STDERR_FILENO + 1; f < 1024; f++)
			close(f);
		/* the BLAS pin is tpusim's (main.c pin_blas), not the
		 * command's */
		unsetenv("OPENBLAS_CORETYPE");
		execvp(argv[0], argv);
		fprintf(stderr, "tpusim autotune: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	child_pgid = pid;
	close(fd[1]);
	char *out = ts_malloc(LIVE_MAX_OUT + 1);
	size_t len = 0;
	double deadline = now_s() + timeout_s;
	bool timed_out = false;
	for (;;) {
		double left = deadline - now_s();
		if (left <= 0) {
			timed_out = true;
			break;
		}
		struct pollfd p = {fd[0], POLLIN, 0};
		int r = poll(&p, 1, (int)fmin(left * 1000 + 1, 1000));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char tmp[4096];
		ssize_t got = read(fd[0], tmp, sizeof tmp);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break; /* end of its output */
		if (out && len < LIVE_MAX_OUT) {
			size_t take = (size_t)got < LIVE_MAX_OUT - len
					      ? (size_t)got
					      : LIVE_MAX_OUT - len;
			memcpy(out + len, tmp, take);
			len += take;
		}
	}
	close(fd[0]);
	int status = 0;
	if (!timed_out) {
		/* its output ended; wait for it to exit, within the deadline
		 * (most exit at once: the first check usually finds it) */
		pid_t w;
		long nap = 20000; /* ns, doubling to 10 ms */
		while ((w = waitpid(pid, &status, WNOHANG)) == 0 ||
		       (w < 0 && errno == EINTR)) {
			if (now_s() > deadline) {
				timed_out = true;
				break;
			}
			struct timespec t = {0, nap};
			nanosleep(&t, NULL);
			nap = nap < 5000000 ? 2 * nap : 10000000;
		}
		if (w < 0 && !timed_out) {
			snprintf(reason, cap, "cannot wait for it: %s",
				 strerror(errno));
			child_pgid = 0;
			ts_free(out);
			return false;
		}
	}
	/* past the deadline: its whole process group goes */
	if (timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	child_pgid = 0;
	bool ok = false;
	if (timed_out) {
		snprintf(reason, cap, "timed out after %d s", timeout_s);
	} else if (WIFSIGNALED(status)) {
		snprintf(reason, cap, "killed by signal %d", WTERMSIG(status));
	} else if (WEXITSTATUS(status) != 0) {
		snprintf(reason, cap, "exited with status %d",
			 WEXITSTATUS(status));
	} else if (!out) {
		snprintf(reason, cap, "out of memory");
	} else {
		out[len] = '\0';
		char *end;
		double v = strtod(out, &end);
		ok = end != out && isfinite(v) && v > 0;
		if (ok)
			*ns = v;
		else
			snprintf(reason, cap, "printed no positive number of ns");
	}
	ts_free(out);
	return ok;
}

/* ---- the record ------------------------------------------------------------ */

/* Appends one line to path (its header first when the file is new or
 * empty) with a single write. */
static bool append_line(const char *path, const char *header,
			const char *line)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
	if (fd < 0)
		return false;
	struct stat sb;
	bool ok = fstat(fd, &sb) == 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = ok ? open_memstream(&buf, &len) : NULL;
	if (m) {
		if (sb.st_size == 0)
			fprintf(m, "%s\n", header);
		fprintf(m, "%s\n", line);
		fclose(m);
		ok = buf && write(fd, buf, len) == (ssize_t)len;
	} else {
		ok = false;
	}
	free(buf);
	return close(fd) == 0 && ok;
}


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

static enum ts_status write_text(FILE *f, void *arg)
{
	return fputs(arg, f) >= 0 ? TS_OK : TS_ERR_IO;
}

/* ---- the mode ---------------------------------------------------------------- */

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
	const char *stem;          /* the graph's file name without .hlo */
	const struct gnn_model *model;
	bool by_hybrid;
	int budget;
	char *words[LIVE_MAX_WORDS];
	int n_words;
	int n_tunable;             /* in the module */
	const char *text;
	size_t len;
	char csv[4096], failed[4096]; /* record files */
};

/* A config's record on this spec: its line in measurements.csv (id,
 * module, hw, config, runtime_ns, ...) or failed.csv (id, module, kernel,
 * config, reason), found by a plain text search of ",<mod>," and
 * ",<config>," and the hw (",tpu-<hw>," in measurements.csv, the id's
 * ".tpu-<hw>." in failed.csv) on one line. Returns the recorded ns, -1
 * for a recorded failure, 0 when not recorded. */
static double recorded(const struct live *l, const char *mod,
		       const char *config)
{
	char m[1100], c[300], h[80];
	snprintf(m, sizeof m, ",%s,", mod);
	snprintf(c, sizeof c, ",%s,", config);
	snprintf(h, sizeof h, ",tpu-%s,", l->ctx->hw.name);
	char line[4096];
	FILE *f = fopen(l->csv, "r");
	double ns = 0;
	while (f && !ns && fgets(line, sizeof line, f)) {
		char *at = strstr(line, c);
		if (at && strstr(line, m) && strstr(line, h))
			ns = strtod(at + strlen(c), NULL);
	}
	if (f)
		fclose(f);
	if (ns > 0)
		return ns;
	/* a failure's id names its hw: module.kernel.tpu-<hw>.config */
	snprintf(h, sizeof h, ".tpu-%s.", l->ctx->hw.name);
	f = fopen(l->failed, "r");
	bool failed = false;
	while (f && !failed && fgets(line, sizeof line, f))
		failed = strstr(line, m) && strstr(line, c) && strstr(line, h);
	if (f)
		fclose(f);
	return failed ? -1 : 0;
}

/* The hybrid time of k under cfg (NaN when it cannot be had). */
static double hybrid_ns(const struct live *l, const struct sim_kernel *k,
			const struct sim_tile_config *cfg)
{
	struct sim_estimate est;
	struct hyb_embedding e;
	struct ts_diag d = {0};
	if (sim_kernel_estimate(k, &l->ctx->hw, cfg, &est, &d) != TS_OK ||
	    hyb_embed(l->model, k, &e) != TS_OK)
		return NAN;
	return hyb_kernel_time(l->model, &e, k, &est, &l->ctx->hw, false);
}

/* The record's module file for kernel k (written once): the module, or
 * with several tunable kernels a copy marking k. rel gets its path
 * relative to the record folder. */
static int record_module(struct live *l, const struct sim_kernel *k,
			 char *rel, size_t cap)
{
	char path[4096];
	if (l->n_tunable > 1)
		snprintf(rel, cap, "modules/%s.%s.hlo", l->stem, k->name);
	else
		snprintf(rel, cap, "modules/%s.hlo", l->stem);
	snprintf(path, sizeof path, "%s/%s", l->o->record, rel);
	if (access(path, F_OK) == 0)
		return CMD_EXIT_OK;
	char *text = l->n_tunable > 1 && k->instr
			     ? marked_text(l->text, l->len, k->instr)
			     : NULL;
	if (l->n_tunable > 1 && !text) {
		cmd_error(l->ctx, "--record: cannot mark kernel %s in %s",
			  k->name, l->graph);
		return CMD_EXIT_IO;
	}
	int rc = cmd_write_file(l->ctx, path, write_text,
				(void *)(text ? text : l->text));
	ts_free(text);
	return rc;
}

static int tune_kernel(struct live *l, const char *module,
		       const struct sim_kernel *k, struct cmd_table *t)
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
	int rc = l->o->record ? record_module(l, k, rel, sizeof rel)
			      : CMD_EXIT_OK;
	int measured = 0, failed = 0, best = -1;
	double best_ns = INFINITY;
	for (int i = 0; i < res.n_top && rc == CMD_EXIT_OK; i++) {
		char cfg[256];
		sim_tile_config_format(&res.top[i].config, cfg, sizeof cfg);
		double was = l->o->record ? recorded(l, rel, cfg) : 0;
		if (was != 0) { /* counted, not measured again */
			measured++;
			failed += was < 0;
			if (was > 0 && was < best_ns) {
				best_ns = was;
				best = i;
			}
			continue;
		}
		const char *vals[3] = {l->graph, k->name, cfg};
		char *argv[LIVE_MAX_WORDS + 1];
		int n = 0;
		for (; n < l->n_words; n++)
			if (!(argv[n] = substitute(l->words[n], vals)))
				break;
		argv[n] = NULL;
		double ns = 0;
		char why[256] = "out of memory";
		bool ok = n == l->n_words &&
			  measure(argv, l->o->timeout_s > 0 ? l->o->timeout_s
							     : LIVE_DEFAULT_TIMEOUT_S,
				  &ns, why, sizeof why);
		for (int w = 0; w < n; w++)
			ts_free(argv[w]);
		measured++;
		if (ok && ns < best_ns) {
			best_ns = ns;
			best = i;
		}
		if (!ok) {
			failed++;
			fprintf(l->ctx->err,
				"%s: warning: kernel %s, config %s: measurement "
				"failed: %s\n",
				l->ctx->prog, k->name, cfg, why);
		}
		if (!l->o->record)
			continue;
		char *line = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&line, &len);
		if (!m) {
			rc = CMD_EXIT_IO;
			break;
		}
		/* unique whatever order a later run proposes in */
		char id[1024];
		snprintf(id, sizeof id, "%s.%s.tpu-%s.%s", l->stem, k->name,
			 l->ctx->hw.name, cfg);
		cmd_csv_field(m, id);
		fputc(',', m);
		cmd_csv_field(m, rel);
		fputc(',', m);
		if (ok) {
			fprintf(m, "tpu-%s,", l->ctx->hw.name);
			cmd_csv_field(m, cfg);
			fprintf(m, ",%.0f,,,device,tpusim autotune", ns);
		} else {
			cmd_csv_field(m, k->name);
			fputc(',', m);
			cmd_csv_field(m, cfg);
			fputc(',', m);
			cmd_csv_field(m, why);
		}
		fclose(m);
		bool w = line && append_line(
			ok ? l->csv : l->failed,
			ok ? "id,module,hw,config,runtime_ns,runtime_min_ns,"
			     "repeats,timing,source"
			   : "id,module,kernel,config,reason",
			line);
		free(line);
		if (!w) {
			cmd_error(l->ctx, "--record: cannot append to %s: %s",
				  ok ? l->csv : l->failed, strerror(errno));
			rc = CMD_EXIT_IO;
		}
	}
	if (rc != CMD_EXIT_OK)
		return rc;
	if ((st = cmd_table_add_row(t)) ||
	    (st = cmd_table_set_text(t, L_MODULE, module)) ||
	    (st = cmd_table_set_text(t, L_KERNEL, k->name)))
		return CMD_EXIT_IO;
	if (best >= 0) {
		/* the module's time with k at that config, the others at
		 * their defaults (what the command measures, and what
		 * validate predicts for a recorded row) */
		const struct sim_tile_config *c = &res.top[best].config;
		char cfg[256];
		sim_tile_config_format(c, cfg, sizeof cfg);
		if (cmd_table_set_text(t, L_CONFIG, cfg))
			return CMD_EXIT_IO;
		cmd_table_set_num(t, L_BEST, best_ns);
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
	if (!split_words(o->measure_cmd, wbuf, l.words, &l.n_words)) {
		ts_free(wbuf);
		cmd_error(ctx, "--measure-cmd: no command, an unterminated quote "
			       "or more than 64 words in '%s'",
			  o->measure_cmd);
		return CMD_EXIT_USAGE;
	}
	/* a child's exit status is ours to read; an interrupt ends the
	 * measurement in flight too */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (o->record) {
		snprintf(l.csv, sizeof l.csv, "%s/measurements.csv", o->record);
		snprintf(l.failed, sizeof l.failed, "%s/failed.csv", o->record);
	}
	/* the record's files are written, the module read */
	const struct cmd_file in = {"the input", graph, CMD_FILE};
	const struct cmd_file outs[2] = {{"--record", o->record ? l.csv : NULL,
					  CMD_FILE},
					 {"--record", o->record ? l.failed : NULL,
					  CMD_FILE}};
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 2,
						   .ins = &in, .n_ins = 1});
	struct gnn_model m = {0};
	if (rc == CMD_EXIT_OK)
		rc = cmd_load_model(ctx, model ? model : "default", &m);
	l.model = &m;
	if (rc == CMD_EXIT_OK && o->record) {
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/modules", o->record);
		rc = cmd_out_dir(ctx, "--record", o->record);
		if (rc == CMD_EXIT_OK)
			rc = cmd_out_dir(ctx, "--record", sub);
	}
	struct cmd_graph g = {0};
	if (rc == CMD_EXIT_OK)
		rc = cmd_graph_load(ctx, graph, NULL,
				    &(struct sim_program_opts){0}, NULL, &g);
	char stem[512];
	const char *base;
	size_t sl = ts_path_stem(graph, &base);
	snprintf(stem, sizeof stem, "%.*s", (int)sl, base);
	l.stem = stem;
	l.text = g.text;
	l.len = g.text ? strlen(g.text) : 0;
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
				rc = tune_kernel(&l, prog->module->name,
						 &prog->kernels[i], &tbl);
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
	cmd_table_free(&tbl);
	cmd_graph_free(&g);
	gnn_model_free(&m);
	ts_free(wbuf);
	return rc;
}
