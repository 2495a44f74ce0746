/*
 * cmd_calibrate.c: `tpusim calibrate`: fits named spec figures to measured
 * runtimes (validation/val_calibrate.c: loss, minimiser, cross-validation),
 * reports each field's start and fitted value and the error in-sample and
 * leave-one-group-out, per group (worst first), and with -o writes the spec
 * with the fitted values, each commented with the command that produced it.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CALIB_MAX_SETS 16     /* --data options in one call */
#define CALIB_DEFAULT_ITER 400 /* Nelder-Mead steps per fit */

struct calibrate_opts {
	const char *data[CALIB_MAX_SETS]; /* --data DIR, in order */
	int n_data;
	const char *fit[VAL_FIT_MAX]; /* --fit PATH[,PATH...] arguments */
	int n_fit;
	const char *rows[VAL_ROW_PATTERNS]; /* --rows PATTERN, repeatable */
	int n_rows;
	const char *out;      /* -o FILE */
	const char *folds;    /* --folds as given; NULL: group */
	enum val_folds fold_kind;
	int64_t max_iter;     /* --max-iter N; 0: default */
};

enum {
	OPT_DATA = CMD_OPT_OWN,
	OPT_FIT,
	OPT_ROWS,
	OPT_FOLDS,
	OPT_MAX_ITER,
	OPT_OUT = 'o',
};

static const struct option calibrate_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"fit", required_argument, NULL, OPT_FIT},
	{"rows", required_argument, NULL, OPT_ROWS},
	{"folds", required_argument, NULL, OPT_FOLDS},
	{"max-iter", required_argument, NULL, OPT_MAX_ITER},
	{"output", required_argument, NULL, OPT_OUT},
	{0},
};

static int calibrate_parse_opt(const struct cmd_ctx *ctx, void *opts_v,
			       int id, const char *arg)
{
	struct calibrate_opts *o = opts_v;
	switch (id) {
	case OPT_DATA:
		if (o->n_data == CALIB_MAX_SETS) {
			cmd_error(ctx, "at most %d --data options",
				  CALIB_MAX_SETS);
			return CMD_EXIT_USAGE;
		}
		o->data[o->n_data++] = arg;
		return CMD_EXIT_OK;
	case OPT_FIT: /* repeated --fit options add to the list */
		if (o->n_fit == VAL_FIT_MAX) {
			cmd_error(ctx, "--fit: at most %d fields", VAL_FIT_MAX);
			return CMD_EXIT_USAGE;
		}
		o->fit[o->n_fit++] = arg;
		return CMD_EXIT_OK;
	case OPT_ROWS:
		if (o->n_rows == VAL_ROW_PATTERNS) {
			cmd_error(ctx, "at most %d --rows patterns",
				  VAL_ROW_PATTERNS);
			return CMD_EXIT_USAGE;
		}
		o->rows[o->n_rows++] = arg;
		return CMD_EXIT_OK;
	case OPT_FOLDS:
		if (!strcmp(arg, "group"))
			o->fold_kind = VAL_FOLDS_GROUP;
		else if (!strcmp(arg, "shape"))
			o->fold_kind = VAL_FOLDS_SHAPE;
		else if (!strcmp(arg, "none"))
			o->fold_kind = VAL_FOLDS_NONE;
		else {
			cmd_error(ctx, "--folds takes group, shape or none, "
				       "got '%s'",
				  arg);
			return CMD_EXIT_USAGE;
		}
		o->folds = arg;
		return CMD_EXIT_OK;
	case OPT_MAX_ITER:
		if (!cmd_parse_int64(arg, 1, 100000, &o->max_iter)) {
			cmd_error(ctx, "--max-iter takes a whole number from "
				       "1 to 100000, got '%s'",
				  arg);
			return CMD_EXIT_USAGE;
		}
		return CMD_EXIT_OK;
	case OPT_OUT:
		o->out = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void calibrate_help(FILE *out)
{
	fputs("Fits the named spec fields to the measured runtimes of the "
	      "sets DIR (rows\nmeasured on the spec's generation; --rows "
	      "narrows them by id). Loss: the\nmean over groups (a kernel of "
	      "a tile set, an op family of an op set) of the\nmean squared "
	      "ln(predicted / measured) of the group's rows, plus 1 - Kendall\n"
	      "tau for kernels with at least 10 configs. Minimiser: GSL's\n"
	      "Nelder-Mead simplex on the fields' logarithms. Cross-validation "
	      "leaves\neach fold out in turn and predicts it with a fit "
	      "without it: --folds group\n(the default: a kernel or op "
	      "family), shape (op-set rows of one shape, all\nops together; "
	      "kernels in tile sets) or none.\n\n"
	      "Options:\n"
	      "      --hw SPEC.yaml     the spec to start from (required)\n"
	      "      --data DIR         a measurement set (repeatable, at "
	      "least one)\n"
	      "      --fit PATH[,PATH]  spec fields to fit, e.g. "
	      "host.call_ns,host.kernel_ns\n"
	      "                         (repeatable; at most 16)\n"
	      "      --rows PATTERN     only rows whose id matches a shell "
	      "pattern (repeatable)\n"
	      "      --folds group|shape|none  cross-validation folds "
	      "(default group)\n"
	      "      --max-iter N       Nelder-Mead steps per fit (default "
	      "400)\n"
	      "  -o, --output FILE      write the spec with the fitted "
	      "values (comments kept;\n"
	      "                         each fitted line says how it was "
	      "fitted)\n",
	      out);
}

/* Resolves the --fit list into opts; prints what is wrong. */
static int parse_fields(const struct cmd_ctx *ctx, char *text,
			struct val_calib_opts *co)
{
	for (char *save = NULL, *p = strtok_r(text, ",", &save); p;
	     p = strtok_r(NULL, ",", &save)) {
		const struct hw_field_info *f = cmd_spec_field(ctx, "--fit", p);
		if (!f)
			return CMD_EXIT_USAGE;
		for (int j = 0; j < co->n_fields; j++)
			if (co->fields[j] == f) {
				cmd_error(ctx, "--fit: '%s' given twice", p);
				return CMD_EXIT_USAGE;
			}
		if (co->n_fields == VAL_FIT_MAX) {
			cmd_error(ctx, "--fit: at most %d fields", VAL_FIT_MAX);
			return CMD_EXIT_USAGE;
		}
		co->fields[co->n_fields++] = f;
	}
	if (co->n_fields == 0) {
		cmd_error(ctx, "--fit PATH[,PATH...] is required (e.g. --fit "
			       "host.call_ns,host.kernel_ns)");
		return CMD_EXIT_USAGE;
	}
	return CMD_EXIT_OK;
}

static void pct(FILE *out, double v)
{
	char b[32];
	fprintf(out, "  %9s", isnan(v) ? "-" : val_fmt_pct(b, sizeof b, v));
}

/* Groups worst first by the most honest error available. */
static double group_key(const struct val_calib_group *g)
{
	double v = isnan(g->mape_cv) ? g->mape_fit : g->mape_cv;
	return isnan(v) ? -1 : v;
}

static int cmp_group(const void *a, const void *b)
{
	double x = group_key(a), y = group_key(b);
	return (x < y) - (x > y);
}

static void print_result(FILE *out, const struct val_calib_opts *co,
			 const struct val_calib *c)
{
	fprintf(out,
		"spec: %s\nrows: %d in %d groups (%d measured on other "
		"hardware and %d not matching --rows left out; %d the model "
		"cannot cost)\n",
		c->start.name, c->n_rows, c->n_groups, c->n_other_hw,
		c->n_unselected, c->n_no_estimate);
	fprintf(out,
		"loss (mean over groups of mean ln(pred/meas)^2, + 1 - tau for "
		"ranked kernels): %.5f -> "
		"%.5f (%d evaluations%s)\n\n",
		c->loss_start, c->loss_fit, c->n_evals,
		c->converged ? "" : "; the full fit stopped at --max-iter");
	fprintf(out, "%-28s %14s %14s %14s %14s\n", "field", "start", "fitted",
		"folds min", "folds max");
	for (int j = 0; j < co->n_fields; j++) {
		const struct hw_field_info *f = co->fields[j];
		fprintf(out, "%-28s %14.6g %14.6g %14.6g %14.6g %s\n", f->path,
			hw_spec_get(&c->start, f), hw_spec_get(&c->fitted, f),
			c->fold_min[j], c->fold_max[j], f->unit);
	}
	fprintf(out, "\n%-36s %6s %10s %10s %10s\n", "group (worst first)",
		"rows", "MAPE start", "fitted", "held out");
	if (c->n_folds)
		fprintf(out, "(held out: each row predicted by the fit "
			     "without its fold; %d folds)\n",
			c->n_folds);
	struct val_calib_group *g = malloc(sizeof *g * (size_t)c->n_groups + 1);
	if (g) {
		memcpy(g, c->groups, sizeof *g * (size_t)c->n_groups);
		qsort(g, (size_t)c->n_groups, sizeof *g, cmp_group);
		for (int i = 0; i < c->n_groups; i++) {
			fprintf(out, "%-36s %6d", g[i].name, g[i].n_rows);
			pct(out, g[i].mape_start);
			pct(out, g[i].mape_fit);
			pct(out, g[i].mape_cv);
			fputc('\n', out);
		}
		free(g);
	}
	fprintf(out, "%-36s %6d", "all rows", c->n_rows);
	pct(out, c->mape_start);
	pct(out, c->mape_fit);
	pct(out, c->mape_cv);
	fputc('\n', out);
}

/* The comment written beside each fitted value: the unit, then for the
 * first field the fit's figures and the command on lines of their own, for
 * the others a pointer to the first. */
static char *fit_comment(const struct calibrate_opts *o,
			 const struct cmd_ctx *ctx, const struct val_calib_opts *co,
			 int j, const struct val_calib *c, const char *fit_list)
{
	char cmd[2048];
	const struct hw_field_info *f = co->fields[j];
	size_t n = (size_t)snprintf(cmd, sizeof cmd, "%s%s", f->unit,
				    f->unit[0] ? "; " : "");
	if (j > 0) {
		snprintf(cmd + n, sizeof cmd - n, "fitted with %s (above)",
			 co->fields[0]->path);
		return ts_strdup(cmd);
	}
	char fit[32], cv[32];
	val_fmt_pct(fit, sizeof fit, c->mape_fit);
	val_fmt_pct(cv, sizeof cv, c->mape_cv);
	if (!isnan(c->mape_cv))
		n += (size_t)snprintf(cmd + n, sizeof cmd - n,
				      "fitted to %d rows (%d group%s): MAPE "
				      "%s in-sample, %s cross-validated "
				      "over %d folds, by",
				      c->n_rows, c->n_groups,
				      c->n_groups == 1 ? "" : "s", fit, cv,
				      c->n_folds);
	else
		n += (size_t)snprintf(cmd + n, sizeof cmd - n,
				      "fitted to %d rows (%d group%s): MAPE "
				      "%s in-sample, by",
				      c->n_rows, c->n_groups,
				      c->n_groups == 1 ? "" : "s", fit);
	n += (size_t)snprintf(cmd + n, sizeof cmd - n,
			      "\ntpusim calibrate --hw %s", ctx->hw_path);
	for (int i = 0; i < o->n_data && n < sizeof cmd; i++)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --data %s",
				      o->data[i]);
	if (n < sizeof cmd)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, "\n  --fit %s",
				      fit_list);
	for (int i = 0; i < o->n_rows && n < sizeof cmd; i++)
		n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --rows '%s'",
				      o->rows[i]);
	if (n < sizeof cmd && o->folds)
		snprintf(cmd + n, sizeof cmd - n, " --folds %s", o->folds);
	return ts_strdup(cmd);
}

static int write_spec(const struct cmd_ctx *ctx,
		      const struct calibrate_opts *o,
		      const struct val_calib_opts *co,
		      const struct val_calib *c, const char *fit_list)
{
	const char *paths[VAL_FIT_MAX];
	double values[VAL_FIT_MAX];
	char *comments[VAL_FIT_MAX] = {0};
	int rc = CMD_EXIT_OK;
	for (int j = 0; j < co->n_fields; j++) {
		paths[j] = co->fields[j]->path;
		values[j] = hw_spec_get(&c->fitted, co->fields[j]);
		comments[j] = fit_comment(o, ctx, co, j, c, fit_list);
		if (!comments[j]) {
			cmd_error(ctx, "out of memory");
			rc = CMD_EXIT_IO;
			goto out;
		}
	}
	struct ts_diag d = {0};
	enum ts_status st = hw_spec_write_fields(
		ctx->hw_path, o->out, co->n_fields, paths, values,
		(const char *const *)comments, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
	}
out:
	for (int j = 0; j < co->n_fields; j++)
		ts_free(comments[j]);
	return rc;
}

static int calibrate_main(struct cmd_ctx *ctx, void *opts_v, int argc,
			  char **argv)
{
	(void)argc;
	(void)argv;
	struct calibrate_opts *o = opts_v;
	/* -o may be the --hw spec itself: calibrate rewrites it in place */
	const struct cmd_file out = {"-o", o->out, CMD_FILE};
	int rc0 = cmd_check_io(ctx, &(struct cmd_io){.outs = &out, .n_outs = 1,
						    .sets = o->data,
						    .n_sets = o->n_data,
						    .hw_rewritten = true});
	if (rc0 != CMD_EXIT_OK)
		return rc0;
	struct val_calib_opts co = {
		.n_rows = o->n_rows,
		.folds = o->folds ? o->fold_kind : VAL_FOLDS_GROUP,
		.max_iter = o->max_iter ? (int)o->max_iter : CALIB_DEFAULT_ITER,
	};
	memcpy(co.rows, o->rows, sizeof co.rows);
	struct val_dataset sets[CALIB_MAX_SETS];
	const struct val_dataset *set_ptrs[CALIB_MAX_SETS];
	struct val_calib c = {0};
	int n_loaded = 0, rc = CMD_EXIT_OK;
	/* The --fit arguments joined (for the written comment), and a copy
	 * that parse_fields cuts at the commas. */
	char fit_list[VAL_FIT_MAX * 64] = "", fit_work[sizeof fit_list];
	for (int i = 0; i < o->n_fit; i++) {
		size_t n = strlen(fit_list);
		snprintf(fit_list + n, sizeof fit_list - n, "%s%s",
			 i ? "," : "", o->fit[i]);
	}
	memcpy(fit_work, fit_list, sizeof fit_list);
	if (ctx->hw_set[0]) {
		cmd_error(ctx, "--set does not apply: calibrate fits the figures "
			       "of the spec file it writes back");
		rc = CMD_EXIT_USAGE;
		goto out;
	}
	if (o->n_data == 0) {
		cmd_error(ctx, "--data DIR is required (e.g. --data "
			       "../shared/data/tpuv3-ops)");
		rc = CMD_EXIT_USAGE;
		goto out;
	}
	if ((rc = parse_fields(ctx, fit_work, &co)))
		goto out;
	for (int i = 0; i < o->n_data; i++) {
		struct ts_diag d = {0};
		enum ts_status st = val_dataset_load(o->data[i], &sets[i], &d);
		n_loaded++;
		if (st != TS_OK) {
			cmd_diag(ctx, &d, NULL, NULL, 0);
			rc = cmd_exit_from_status(st);
			goto out;
		}
		set_ptrs[i] = &sets[i];
	}
	struct ts_diag d = {0};
	enum ts_status st = val_calibrate(set_ptrs, o->n_data, &ctx->hw, &co,
					  &c, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
		goto out;
	}
	if (c.n_no_estimate)
		fprintf(ctx->err,
			"%s: warning: %d rows cannot be costed and are left "
			"out of the fit (tpusim validate lists them)\n",
			ctx->prog, c.n_no_estimate);
	print_result(ctx->out, &co, &c);
	if (o->out)
		rc = write_spec(ctx, o, &co, &c, fit_list);
out:
	val_calib_free(&c);
	for (int i = 0; i < n_loaded; i++)
		val_dataset_free(&sets[i]);
	return rc;
}

const struct cmd cmd_calibrate = {
	.name = "calibrate",
	.summary = "Fit spec figures to measured runtimes",
	.synopsis = "--hw SPEC.yaml --data DIR [--data DIR...] --fit "
		    "PATH[,PATH...] [--rows PATTERN...] [--folds "
		    "group|shape|none] [-o NEW.yaml]",
	.flags = CMD_NEEDS_HW,
	.options = calibrate_options,
	.short_opts = "o:",
	.repeatable = "data fit rows",
	.opts_size = sizeof(struct calibrate_opts),
	.parse_opt = calibrate_parse_opt,
	.help = calibrate_help,
	.min_args = 0,
	.max_args = 0,
	.fn = calibrate_main,
};
