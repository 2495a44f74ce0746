/*
 * main.c: tpusim's entry point. Global options (--help, --version), the
 * command table (kmod/git style) with the help generated from it, "did you
 * mean" for mistyped commands, the option parsing every command shares
 * (-h/--help, --hw, --format), and the final check that stdout was really
 * written. How to add a command: cli/cli.h. Design: docs/STYLE.md "CLI".
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int help_main(struct cmd_ctx *ctx, void *opts, int argc, char **argv);
static void help_help(FILE *out);

static const struct cmd cmd_help = {
	.name = "help",
	.summary = "Show the commands, or one command's options",
	.synopsis = "[COMMAND]",
	.help = help_help,
	.min_args = 0,
	.max_args = 1,
	.fn = help_main,
};

/* The dispatch table, in help order: CMD_LIST (cli.h), then help. */
static const struct cmd *const cmds[] = {
#define X(n) &cmd_##n,
	CMD_LIST(X)
#undef X
	&cmd_help,
};

/* Options one command may have: main's three plus its own. */
#define CMD_MAX_OPTIONS 32

/* ---- helpers shared by commands ---------------------------------------- */

enum cmd_exit cmd_exit_from_status(enum ts_status s)
{
	switch (s) {
	case TS_OK:
		return CMD_EXIT_OK;
	case TS_ERR_PARSE:
	case TS_ERR_SPEC:
	case TS_ERR_UNSUPPORTED_OP:
	case TS_ERR_INFEASIBLE:
		return CMD_EXIT_INPUT;
	case TS_ERR_MISUSE:
		return CMD_EXIT_USAGE;
	case TS_ERR_NOMEM:
	case TS_ERR_IO:
	case TS_STATUS_COUNT:
	default:
		return CMD_EXIT_IO;
	}
}

void cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(ctx->err, "%s: error: ", ctx->prog);
	ts_fput_text(msg, sizeof msg, ctx->err);
	fputc('\n', ctx->err);
}

const struct hw_field_info *cmd_spec_field(const struct cmd_ctx *ctx,
					   const char *opt, const char *path)
{
	const struct hw_field_info *f = hw_spec_field(path);
	if (f)
		return f;
	fprintf(ctx->err, "%s: error: %s '", ctx->prog, opt);
	ts_fput_text(path, strlen(path), ctx->err);
	fputs("' is not a numeric spec field; the fields:", ctx->err);
	int col = 80;
	for (int i = 0; i < hw_spec_n_fields(); i++) {
		const char *name = hw_spec_field_at(i)->path;
		int w = (int)strlen(name) + 2;
		if (col + w > 78) {
			fputs("\n ", ctx->err);
			col = 1;
		}
		fprintf(ctx->err, " %s%s", name,
			i + 1 < hw_spec_n_fields() ? "," : "");
		col += w;
	}
	fputc('\n', ctx->err);
	return NULL;
}

void cmd_diag(const struct cmd_ctx *ctx, struct ts_diag *d,
	      const char *src_file, const char *src, size_t src_len)
{
	if (!d->file)
		d->file = src_file;
	if (!d->file) { /* about no file: the command's own words */
		cmd_error(ctx, "%s", d->msg);
		return;
	}
	if (!d->src && src && d->line > 0 && d->file && src_file &&
	    strcmp(d->file, src_file) == 0) {
		d->src = src;
		d->src_len = src_len;
	}
	ts_diag_print(d, ctx->err);
}

const struct hw_field_info *cmd_spec_assignment(const struct cmd_ctx *ctx,
						const char *opt,
						const char *arg,
						const char *form,
						const char **value)
{
	const char *eq = strchr(arg, '=');
	if (!eq) {
		cmd_error(ctx, "%s %s: expected %s", opt, arg, form);
		return NULL;
	}
	char path[128];
	snprintf(path, sizeof path, "%.*s", (int)(eq - arg), arg);
	*value = eq + 1;
	return cmd_spec_field(ctx, opt, path);
}

bool cmd_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	if (!*s)
		return false;
	errno = 0;
	char *end = NULL;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return false;
	*out = (int64_t)v;
	return true;
}

/* ---- help --------------------------------------------------------------- */

static void print_exit_codes(FILE *out)
{
	fputs("Exit codes:\n"
	      "  0  success\n"
	      "  1  bad input: malformed HLO, YAML or CSV, a name not in the "
	      "input,\n"
	      "     an infeasible tile config\n"
	      "  2  usage error: unknown command or option, missing or "
	      "malformed\n"
	      "     argument, an output that names an input or another "
	      "output (a\n"
	      "     folder's: a file it would write there); nothing is "
	      "written\n"
	      "  3  a file cannot be read or written (stdout included), out "
	      "of memory,\n"
	      "     internal error\n",
	      out);
}

static void print_usage_line(FILE *out)
{
	fputs("usage: tpusim [-h|--help] [-V|--version] <command> [options] "
	      "[args]\n",
	      out);
}

static void print_top_help(FILE *out)
{
	print_usage_line(out);
	fputs("\ntpusim estimates how long XLA HLO programs take on TPUs, "
	      "kernel by kernel.\n\nCommands:\n",
	      out);
	int w = 0;
	for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++) {
		int n = (int)strlen(cmds[i]->name);
		if (n > w)
			w = n;
	}
	for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++)
		fprintf(out, "  %-*s  %s\n", w, cmds[i]->name,
			cmds[i]->summary);
	fputs("\n'tpusim help <command>' or 'tpusim <command> --help' shows a "
	      "command's\noptions.\n\n",
	      out);
	print_exit_codes(out);
}

static void print_cmd_help(const struct cmd *cmd, FILE *out)
{
	fprintf(out, "usage: tpusim %s %s\n\n", cmd->name, cmd->synopsis);
	cmd->help(out);
	fputs("\nCommon options:\n", out);
	if (cmd->flags & CMD_NEEDS_HW)
		fprintf(out, "      --hw SPEC.yaml    hardware spec, e.g. "
		      "hwspecs/v3.yaml (%s)\n"
		      "      --set PATH=VALUE  change one spec field as if the "
		      "file said it, e.g.\n"
		      "                        --set hbm.bw_bytes_per_s=2.4e12 "
		      "(the field's unit;\n"
		      "                        repeatable)\n",
		      cmd->flags & CMD_HW_OPTIONAL ? "see above" : "required");
	if (cmd->flags & CMD_MULTI_HW)
		fputs("      --gen LIST        the specs by generation, e.g. --gen "
		      "v4,v5e,v6e:\n"
		      "                        DIR/v4.yaml, ... side by side "
		      "(instead of --hw)\n"
		      "      --hw-dir DIR      where --gen finds them (default: "
		      "hwspecs)\n",
		      out);
	if (cmd->flags & CMD_HAS_SLICE)
		fputs("      --topology SHAPE  the slice the program runs on, "
		      "e.g. 16x16 or 4x4x4\n"
		      "                        (chips along each torus axis): "
		      "collectives are\n"
		      "                        costed over the axes their groups "
		      "span; the module's\n"
		      "                        devices must be the slices'\n"
		      "      --slices N        slices of that shape joined by the "
		      "data-centre\n"
		      "                        network (1 to 1024; default 1)\n"
		      "      --devices FILE    the compile's device order on them "
		      "(a step set's\n"
		      "                        devices/ID.csv: index,id,x,y,z,"
		      "core_on_chip,slice);\n"
		      "                        default: JAX's device order\n",
		      out);
	if (cmd->flags & CMD_HAS_FORMAT)
		fputs("  -f, --format FMT      output: table (default), csv, "
		      "json or yaml\n",
		      out);
	fputs("  -h, --help            show this help\n\n", out);
	print_exit_codes(out);
}

/* ---- finding commands ---------------------------------------------------- */

#define SUGGEST_MAX_LEN 64 /* longer words get no suggestion */

/*
 * Optimal string alignment distance (Levenshtein plus adjacent
 * transpositions, so "rnu" is 1 from "run"). Strings longer than
 * SUGGEST_MAX_LEN return a large distance.
 */
static int edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na > SUGGEST_MAX_LEN || nb > SUGGEST_MAX_LEN)
		return 1 << 20;
	const size_t stride = SUGGEST_MAX_LEN + 1;
	int d[(SUGGEST_MAX_LEN + 1) * (SUGGEST_MAX_LEN + 1)];
	for (size_t i = 0; i <= na; i++)
		d[i * stride] = (int)i;
	for (size_t j = 0; j <= nb; j++)
		d[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		for (size_t j = 1; j <= nb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[(i - 1) * stride + j] + 1;
			if (d[i * stride + j - 1] + 1 < v)
				v = d[i * stride + j - 1] + 1;
			if (d[(i - 1) * stride + j - 1] + cost < v)
				v = d[(i - 1) * stride + j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] &&
			    d[(i - 2) * stride + j - 2] + 1 < v)
				v = d[(i - 2) * stride + j - 2] + 1;
			d[i * stride + j] = v;
		}
	}
	return d[na * stride + nb];
}

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++)
		if (strcmp(cmds[i]->name, name) == 0)
			return cmds[i];
	return NULL;
}

/*
 * "tpusim: 'rnu' is not a tpusim command. Did you mean 'run'?" The
 * suggestion is the closest command when it is at most 1 + len/4 edits
 * away (one typo in a short word, two in a long one); ties are all named.
 */
static void unknown_cmd(const char *name)
{
	int best = 1 << 20;
	for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++) {
		int dist = edit_distance(name, cmds[i]->name);
		if (dist < best)
			best = dist;
	}
	fprintf(stderr, "tpusim: '%s' is not a tpusim command.", name);
	if (best <= 1 + (int)strlen(name) / 4) {
		const char *sep = " Did you mean ";
		for (size_t i = 0; i < TS_ARRAY_LEN(cmds); i++) {
			if (edit_distance(name, cmds[i]->name) != best)
				continue;
			fprintf(stderr, "%s'%s'", sep, cmds[i]->name);
			sep = " or ";
		}
		fputs("?\n", stderr);
	} else {
		fputs(" See 'tpusim --help'.\n", stderr);
	}
}

/* ---- the help command ---------------------------------------------------- */

static void help_help(FILE *out)
{
	fputs("Lists the commands, or shows the options of COMMAND (the same "
	      "as\n'tpusim COMMAND --help').\n",
	      out);
}

static int help_main(struct cmd_ctx *ctx, void *opts, int argc, char **argv)
{
	(void)opts;
	if (argc == 0) {
		print_top_help(ctx->out);
		return CMD_EXIT_OK;
	}
	const struct cmd *cmd = find_cmd(argv[0]);
	if (!cmd) {
		unknown_cmd(argv[0]);
		return CMD_EXIT_USAGE;
	}
	print_cmd_help(cmd, ctx->out);
	return CMD_EXIT_OK;
}

/* ---- running one command ------------------------------------------------- */

/* An option that takes one value given twice is a usage error (the
 * second would silently win); cmd->repeatable names the exceptions. */
static int check_repeat(const struct cmd_ctx *ctx, const struct cmd *cmd,
			const struct option *longopts, int c, int *seen,
			int *n_seen)
{
	const char *name = NULL;
	bool flag = false; /* takes no value */
	for (const struct option *o = longopts; o->name; o++)
		if (o->val == c) {
			name = o->name;
			flag = o->has_arg == no_argument;
		}
	for (int i = 0; i < *n_seen; i++) {
		if (seen[i] != c)
			continue;
		if (name && cmd->repeatable) {
			size_t n = strlen(name);
			for (const char *r = cmd->repeatable; (r = strstr(r, name));
			     r += n)
				if ((r == cmd->repeatable || r[-1] == ' ') &&
				    (r[n] == ' ' || r[n] == '\0'))
					return CMD_EXIT_OK;
		}
		if (name && flag)
			cmd_error(ctx, "option '--%s' given twice", name);
		else if (name)
			cmd_error(ctx, "option '--%s' given twice: it takes one "
				       "value", name);
		else
			cmd_error(ctx, "option '-%c' given twice: it takes one "
				       "value", c);
		return CMD_EXIT_USAGE;
	}
	if (*n_seen < CMD_MAX_OPTIONS)
		seen[(*n_seen)++] = c;
	return CMD_EXIT_OK;
}

/*
 * What getopt_long returned '?' for; arg is the word it stopped at. optopt
 * holds an unknown short option's letter, or the val of a long option
 * given a value it does not take ("--roofline=yes").
 */
static void bad_option(const struct cmd_ctx *ctx, const char *arg)
{
	if (strncmp(arg, "--", 2) != 0 && optopt > 0 && optopt < 128)
		cmd_error(ctx, "unknown option '-%c'", optopt);
	else if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=') && optopt)
		cmd_error(ctx, "option '%.*s' takes no value",
			  (int)(strchr(arg, '=') - arg), arg);
	else
		cmd_error(ctx, "unknown option '%s'", arg);
}

static int usage_error(const struct cmd_ctx *ctx, const struct cmd *cmd)
{
	fprintf(ctx->err, "Try 'tpusim %s --help'.\n", cmd->name);
	return CMD_EXIT_USAGE;
}

static void bad_arg_count(const struct cmd_ctx *ctx, const struct cmd *cmd,
			  int n_args)
{
	if (cmd->min_args == cmd->max_args)
		cmd_error(ctx, "expected %d argument%s, got %d", cmd->min_args,
			  cmd->min_args == 1 ? "" : "s", n_args);
	else if (n_args < cmd->min_args)
		cmd_error(ctx, "expected at least %d argument%s, got %d",
			  cmd->min_args, cmd->min_args == 1 ? "" : "s", n_args);
	else
		cmd_error(ctx, "expected at most %d argument%s, got %d",
			  cmd->max_args, cmd->max_args == 1 ? "" : "s", n_args);
	fprintf(ctx->err, "usage: tpusim %s %s\n", cmd->name, cmd->synopsis);
}

int cmd_load_spec(const struct cmd_ctx *ctx, const char *path,
		  struct hw_spec *hw)
{
	struct ts_diag d = {0};
	char *text = NULL;
	enum ts_status st = hw_spec_load_file(path, &text, hw, &d);
	if (st != TS_OK)
		cmd_diag(ctx, &d, path, text, text ? strlen(text) : 0);
	ts_free(text);
	return cmd_exit_from_status(st);
}

#define MAX_SETS 32 /* --set options in one call */

/* Loads and validates --hw into ctx->hw, then applies the --set changes
 * (sets[0..n_sets), each "PATH=VALUE") as if the file said them
 * (hw_spec_apply: ranges, the checks that relate fields, derived
 * figures). */
static int load_hw(struct cmd_ctx *ctx, const struct cmd *cmd,
		   const char *const *sets, int n_sets,
		   const char *const *more, int n_more)
{
	if (!ctx->hw_path && (cmd->flags & CMD_HW_OPTIONAL) && n_sets == 0)
		return CMD_EXIT_OK;
	if (!ctx->hw_path) {
		cmd_error(ctx, "--hw SPEC.yaml is required (e.g. --hw "
			       "hwspecs/v3.yaml)");
		return usage_error(ctx, cmd);
	}
	int rc = cmd_load_spec(ctx, ctx->hw_path, &ctx->hw);
	for (int i = 0; rc == CMD_EXIT_OK && i < n_more; i++) {
		rc = cmd_load_spec(ctx, more[i], &ctx->more_hw[i]);
		ctx->more_hw_path[i] = more[i];
	}
	ctx->n_more_hw = rc == CMD_EXIT_OK ? n_more : 0;
	if (rc != CMD_EXIT_OK || n_sets == 0)
		return rc;
	const struct hw_field_info *fields[MAX_SETS];
	double values[MAX_SETS];
	const char *texts[MAX_SETS];
	size_t used = 0;
	for (int i = 0; i < n_sets; i++) {
		const char *v;
		if (!(fields[i] = cmd_spec_assignment(
			      ctx, "--set", sets[i],
			      "PATH=VALUE (e.g. hbm.bw_bytes_per_s=1.6e12)", &v)))
			return usage_error(ctx, cmd);
		for (int j = 0; j < i; j++)
			if (fields[j] == fields[i]) {
				cmd_error(ctx, "--set %s: %s given twice", sets[i],
					  fields[i]->path);
				return usage_error(ctx, cmd);
			}
		char *end = NULL;
		values[i] = strtod(v, &end);
		texts[i] = v;
		if (end == v || *end) {
			cmd_error(ctx, "--set %s: '%s' is not a number%s%s%s",
				  sets[i], v, fields[i]->unit[0] ? " (in " : "",
				  fields[i]->unit, fields[i]->unit[0] ? ")" : "");
			return usage_error(ctx, cmd);
		}
		used += (size_t)snprintf(ctx->hw_set + used,
					 sizeof ctx->hw_set - used, "%s%s",
					 i ? ", " : "", sets[i]);
		if (used >= sizeof ctx->hw_set) { /* reports would cut it */
			cmd_error(ctx, "--set: the changes run past %zu "
				       "characters", sizeof ctx->hw_set - 1);
			return usage_error(ctx, cmd);
		}
	}
	struct ts_diag d = {0};
	for (int i = -1; i < n_more; i++)
		if (hw_spec_apply(i < 0 ? &ctx->hw : &ctx->more_hw[i], n_sets,
				  fields, values, texts, &d) != TS_OK) {
			cmd_error(ctx, "--set: %s", d.msg);
			return usage_error(ctx, cmd);
		}
	return CMD_EXIT_OK;
}

/* --topology SHAPE into ctx->slice; a malformed shape is shown with a
 * caret under its column. */
static int parse_topology(struct cmd_ctx *ctx, const struct cmd *cmd,
			  const char *arg)
{
	struct ts_diag d = {0};
	if (hw_slice_parse(arg, &ctx->slice, &d) == TS_OK) {
		ctx->slice.count = ctx->slice.count ? ctx->slice.count : 1;
		return CMD_EXIT_OK;
	}
	d.file = "--topology";
	d.line = 1;
	d.src = arg;
	d.src_len = strlen(arg);
	ts_diag_print(&d, ctx->err);
	return usage_error(ctx, cmd);
}

/* The slice on every spec loaded (ctx->hw, ctx->more_hw), each checked to
 * fit its generation, and the device order (read from `devices`, if any)
 * to fit the slice. */
static int set_slice(struct cmd_ctx *ctx, const struct cmd *cmd,
		     const char *devices)
{
	for (int i = -1; i < ctx->n_more_hw; i++) {
		struct hw_spec *hw = i < 0 ? &ctx->hw : &ctx->more_hw[i];
		struct ts_diag d = {0};
		if (hw_slice_check(hw, &ctx->slice, &d) != TS_OK) {
			cmd_error(ctx, "--topology: %s", d.msg);
			return usage_error(ctx, cmd);
		}
		enum ts_status st = hw_slice_check_order(hw, &ctx->slice, &d);
		if (st == TS_ERR_NOMEM) {
			cmd_error(ctx, "out of memory");
			return (int)cmd_exit_from_status(st);
		}
		if (st != TS_OK) {
			fprintf(ctx->err, "%s: error: %s\n", devices, d.msg);
			return CMD_EXIT_INPUT;
		}
		hw->slice = ctx->slice;
	}
	return CMD_EXIT_OK;
}

/* --gen LIST [--hw-dir DIR]: the specs DIR/NAME.yaml of each generation
 * named in LIST (comma-separated), as if given by --hw in that order. */
static int gen_specs(struct cmd_ctx *ctx, const struct cmd *cmd,
		     const char *gen, const char *hw_dir,
		     char paths[CMD_MAX_HW][PATH_MAX], const char **more,
		     int *n_more)
{
	if (!gen) {
		cmd_error(ctx, "--hw-dir DIR goes with --gen LIST (e.g. --gen "
			       "v4,v5e)");
		return usage_error(ctx, cmd);
	}
	if (ctx->hw_path) {
		cmd_error(ctx, "--gen picks the specs: leave out --hw");
		return usage_error(ctx, cmd);
	}
	int n = 0;
	for (const char *p = gen;; p++) {
		size_t len = strcspn(p, ",");
		bool ok = len > 0 && len < 64;
		for (size_t i = 0; ok && i < len; i++)
			ok = isalnum((unsigned char)p[i]) || p[i] == '_' ||
			     p[i] == '-' || p[i] == '.';
		if (!ok) {
			cmd_error(ctx, "--gen %s: expected generation names "
				       "like v4,v5e,v6e", gen);
			return usage_error(ctx, cmd);
		}
		if (n == CMD_MAX_HW) {
			cmd_error(ctx, "--gen %s: at most %d generations", gen,
				  CMD_MAX_HW);
			return usage_error(ctx, cmd);
		}
		snprintf(paths[n], PATH_MAX, "%s/%.*s.yaml",
			 hw_dir ? hw_dir : "hwspecs", (int)len, p);
		n++;
		p += len;
		if (!*p)
			break;
	}
	ctx->hw_path = paths[0];
	ctx->hw_opt = "--gen";
	for (int i = 1; i < n; i++)
		more[i - 1] = paths[i];
	*n_more = n - 1;
	return CMD_EXIT_OK;
}

/*
 * Parses argv (argv[0] is the command name) with the command's options and
 * main's shared ones, then does the setup its flags ask for and runs it.
 * Options may follow positional arguments; "--" ends the options.
 */
static int run_cmd(const struct cmd *cmd, int argc, char **argv)
{
	char prog[64];
	snprintf(prog, sizeof prog, "tpusim %s", cmd->name);
	struct cmd_ctx ctx = {
		.prog = prog,
		.hw_opt = "--hw",
		.out = stdout,
		.err = stderr,
		.format = CMD_FORMAT_TABLE,
	};

	struct option longopts[CMD_MAX_OPTIONS];
	int n_long = 0;
	longopts[n_long++] =
		(struct option){"help", no_argument, NULL, CMD_OPT_HELP};
	if (cmd->flags & CMD_NEEDS_HW) {
		longopts[n_long++] = (struct option){"hw", required_argument,
						     NULL, CMD_OPT_HW};
		longopts[n_long++] = (struct option){"set", required_argument,
						     NULL, CMD_OPT_SET};
	}
	if (cmd->flags & CMD_MULTI_HW) {
		longopts[n_long++] = (struct option){"gen", required_argument,
						     NULL, CMD_OPT_GEN};
		longopts[n_long++] = (struct option){"hw-dir", required_argument,
						     NULL, CMD_OPT_HW_DIR};
	}
	if (cmd->flags & CMD_HAS_SLICE) {
		longopts[n_long++] = (struct option){
			"topology", required_argument, NULL, CMD_OPT_TOPOLOGY};
		longopts[n_long++] = (struct option){
			"slices", required_argument, NULL, CMD_OPT_SLICES};
		longopts[n_long++] = (struct option){
			"devices", required_argument, NULL, CMD_OPT_DEVICES};
	}
	if (cmd->flags & CMD_HAS_FORMAT)
		longopts[n_long++] = (struct option){
			"format", required_argument, NULL, CMD_OPT_FORMAT};
	for (const struct option *o = cmd->options; o && o->name; o++) {
		TS_ASSERT(n_long + 1 < CMD_MAX_OPTIONS);
		longopts[n_long++] = *o;
	}
	longopts[n_long] = (struct option){0};

	/* Leading ':' makes a missing value return ':' instead of '?'. */
	char shortopts[64];
	int n = snprintf(shortopts, sizeof shortopts, ":h%s%s",
			 (cmd->flags & CMD_HAS_FORMAT) ? "f:" : "",
			 cmd->short_opts ? cmd->short_opts : "");
	TS_ASSERT(n > 0 && (size_t)n < sizeof shortopts);

	void *opts = ts_calloc(1, cmd->opts_size ? cmd->opts_size : 1);
	if (!opts) {
		cmd_error(&ctx, "out of memory");
		return CMD_EXIT_IO;
	}
	int rc = CMD_EXIT_OK;
	bool want_help = false;
	optind = 0; /* glibc: restart scanning from scratch */
	opterr = 0;
	int c, seen[CMD_MAX_OPTIONS], n_seen = 0, n_sets = 0, n_more = 0;
	const char *sets[MAX_SETS], *more[CMD_MAX_HW - 1];
	const char *gen = NULL, *hw_dir = NULL, *devices = NULL;
	char gen_paths[CMD_MAX_HW][PATH_MAX];
	while (rc == CMD_EXIT_OK &&
	       (c = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
		       -1) {
		if (c != ':' && c != '?' && c != CMD_OPT_HELP &&
		    c != CMD_OPT_SET &&
		    !(c == CMD_OPT_HW && (cmd->flags & CMD_MULTI_HW)) &&
		    check_repeat(&ctx, cmd, longopts, c, seen, &n_seen)) {
			rc = usage_error(&ctx, cmd);
			break;
		}
		switch (c) {
		case CMD_OPT_HELP:
			want_help = true;
			break;
		case CMD_OPT_HW:
			if (!ctx.hw_path) {
				ctx.hw_path = optarg;
			} else if (n_more < CMD_MAX_HW - 1) {
				more[n_more++] = optarg;
			} else {
				cmd_error(&ctx, "at most %d --hw options",
					  CMD_MAX_HW);
				rc = usage_error(&ctx, cmd);
			}
			break;
		case CMD_OPT_GEN:
			gen = optarg;
			break;
		case CMD_OPT_HW_DIR:
			hw_dir = optarg;
			break;
		case CMD_OPT_SET:
			if (n_sets == MAX_SETS) {
				cmd_error(&ctx, "at most %d --set options",
					  MAX_SETS);
				rc = usage_error(&ctx, cmd);
				break;
			}
			sets[n_sets++] = optarg;
			break;
		case CMD_OPT_TOPOLOGY:
			rc = parse_topology(&ctx, cmd, optarg);
			break;
		case CMD_OPT_SLICES: {
			int64_t count = 0;
			if (!cmd_parse_int64(optarg, 1, HW_SLICE_MAX_COUNT,
					     &count)) {
				cmd_error(&ctx, "--slices: expected a whole number "
					  "from 1 to %d, got '%s'",
					  HW_SLICE_MAX_COUNT, optarg);
				rc = usage_error(&ctx, cmd);
			}
			ctx.slice.count = (int)count;
			break;
		}
		case CMD_OPT_DEVICES:
			devices = optarg;
			break;
		case CMD_OPT_FORMAT:
			if (!cmd_format_parse(optarg, &ctx.format)) {
				cmd_error(&ctx,
					  "unknown format '%s' (expected table, "
					  "csv, json or yaml)",
					  optarg);
				rc = usage_error(&ctx, cmd);
			}
			break;
		case ':':
			cmd_error(&ctx, "option '%s' needs a value",
				  argv[optind - 1]);
			rc = usage_error(&ctx, cmd);
			break;
		case '?':
			bad_option(&ctx, argv[optind - 1]);
			rc = usage_error(&ctx, cmd);
			break;
		default:
			TS_ASSERT(cmd->parse_opt);
			rc = cmd->parse_opt(&ctx, opts, c, optarg);
			if (rc != CMD_EXIT_OK)
				rc = usage_error(&ctx, cmd);
			break;
		}
	}
	if (rc != CMD_EXIT_OK)
		goto out;
	if (want_help) {
		print_cmd_help(cmd, ctx.out);
		goto out;
	}
	int n_args = argc - optind;
	if (n_args < cmd->min_args ||
	    (cmd->max_args >= 0 && n_args > cmd->max_args)) {
		bad_arg_count(&ctx, cmd, n_args);
		rc = usage_error(&ctx, cmd);
		goto out;
	}
	if (gen || hw_dir) {
		rc = gen_specs(&ctx, cmd, gen, hw_dir, gen_paths, more, &n_more);
		if (rc != CMD_EXIT_OK)
			goto out;
	}
	if ((ctx.slice.count || devices) && !ctx.slice.n_dims) {
		cmd_error(&ctx, "%s of the --topology shape; give --topology "
			  "too", devices ? "--devices places the devices"
					 : "--slices counts slices");
		rc = usage_error(&ctx, cmd);
		goto out;
	}
	if (devices) {
		struct ts_diag d = {0};
		enum ts_status st = val_devices_load(
			devices, &ctx.arena, &ctx.slice.at, &ctx.slice.n_at, &d);
		if (st != TS_OK) {
			ts_diag_print(&d, ctx.err);
			rc = (int)cmd_exit_from_status(st);
			goto out;
		}
	}
	if (cmd->flags & CMD_NEEDS_HW) {
		rc = load_hw(&ctx, cmd, sets, n_sets, more, n_more);
		if (rc == CMD_EXIT_OK && ctx.slice.n_dims && ctx.hw_path)
			rc = set_slice(&ctx, cmd, devices);
		if (rc != CMD_EXIT_OK)
			goto out;
	}
	rc = cmd->fn(&ctx, opts, n_args, argv + optind);
out:
	ts_free(opts);
	ts_arena_free(&ctx.arena);
	return rc;
}

/*
 * Results are only written once stdout is flushed and closed: a full disk
 * or a closed pipe shows up here (git's run_builtin does the same). A
 * command that already failed keeps its own exit code.
 */
static int finish(int rc)
{
	errno = 0;
	bool failed = fflush(stdout) != 0;
	int err = errno;
	failed = failed || ferror(stdout);
	if (fclose(stdout) != 0 && !failed) {
		failed = true;
		err = errno;
	}
	if (failed && rc == CMD_EXIT_OK) {
		fprintf(stderr,
			"tpusim: error: cannot write to standard output: %s\n",
			err ? strerror(err) : "write error");
		return CMD_EXIT_IO;
	}
	return rc;
}

/*
 * Training is bit-reproducible only on one set of BLAS kernels: OpenBLAS
 * (DYNAMIC_ARCH) picks its kernels by CPU when it loads, and its AVX-512
 * dgemm sums in another order than its AVX2 one, so a model trained on a
 * Skylake-X differed in its last bits from one trained on a Zen. The
 * commands that train (CMD_TRAINS) run on OpenBLAS's Haswell kernels (AVX2
 * and FMA: every x86-64 CPU since Haswell and Zen) wherever the CPU has
 * them: OPENBLAS_CORETYPE=Haswell is set before OpenBLAS loads (at first
 * use, learned/numlib.h), which OpenBLAS reads as it loads. A user's own
 * OPENBLAS_CORETYPE is kept. On a CPU without AVX2 and FMA, or another
 * architecture, OpenBLAS chooses and the bits may differ.
 */
static void pin_blas(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (!getenv("OPENBLAS_CORETYPE") && __builtin_cpu_supports("avx2") &&
	    __builtin_cpu_supports("fma"))
		setenv("OPENBLAS_CORETYPE", "Haswell", 1);
#endif
}

int main(int argc, char **argv)
{
	static const struct option global_opts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	const struct cmd_ctx top = {.prog = "tpusim", .err = stderr};
	bool help = false, version = false;
	/* a file-size limit (ulimit -f) makes a write fail with EFBIG,
	 * reported as any failed write is, instead of killing tpusim
	 * part-way through one */
	signal(SIGXFSZ, SIG_IGN);
	opterr = 0;
	int c;
	/* '+': stop at the command name; its options are its own. */
	while ((c = getopt_long(argc, argv, "+hV", global_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			help = true;
			break;
		case 'V':
			version = true;
			break;
		default:
			bad_option(&top, argv[optind - 1]);
			fputs("Try 'tpusim --help'.\n", stderr);
			return finish(CMD_EXIT_USAGE);
		}
	}
	if (version) {
		fputs("tpusim " TPUSIM_VERSION "\n", stdout);
#ifdef TPUSIM_MPI
		fputs("open-mpi: yes (mpirun -n N tpusim whatif splits the "
		      "points)\n", stdout);
#else
		fputs("open-mpi: no (built without it: whatif runs in one "
		      "process)\n", stdout);
#endif
		return finish(CMD_EXIT_OK);
	}
	if (optind >= argc) {
		if (help) {
			print_top_help(stdout);
			return finish(CMD_EXIT_OK);
		}
		print_usage_line(stderr);
		fputs("Run 'tpusim --help' for the commands.\n", stderr);
		return finish(CMD_EXIT_USAGE);
	}
	const struct cmd *cmd = find_cmd(argv[optind]);
	if (!cmd) {
		unknown_cmd(argv[optind]);
		return finish(CMD_EXIT_USAGE);
	}
	if (help) { /* tpusim --help run */
		print_cmd_help(cmd, stdout);
		return finish(CMD_EXIT_OK);
	}
	if (cmd->flags & CMD_TRAINS)
		pin_blas();
	return finish(run_cmd(cmd, argc - optind, argv + optind));
}
