/*
 * cmd_compare.c: `tpusim compare`: analytic vs learned-only vs hybrid vs
 * measured on out-of-fold predictions (validation/val_compare.c), per set
 * and per kernel or op family, as text or Markdown, and one CSV line per
 * row.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COMPARE_DEFAULT_FOLDS 5

struct compare_opts {
	const char *data[CMD_MAX_SETS];
	int n_data;
	const char *hw_dir;
	const char *csv;      /* --csv FILE */
	int64_t folds;        /* --folds K; 0 with folds_group */
	bool folds_group;     /* --folds group */
	uint64_t seed;
	bool seed_set;
	int epochs;
	bool markdown;
	const char *plots;    /* --plots DIR */
};

enum {
	OPT_DATA = CMD_OPT_OWN,
	OPT_HW_DIR,
	OPT_CSV,
	OPT_FOLDS,
	OPT_SEED,
	OPT_EPOCHS,
	OPT_MARKDOWN,
	OPT_PLOTS,
};

static const struct option compare_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"hw-dir", required_argument, NULL, OPT_HW_DIR},
	{"csv", required_argument, NULL, OPT_CSV},
	{"folds", required_argument, NULL, OPT_FOLDS},
	{"seed", required_argument, NULL, OPT_SEED},
	{"epochs", required_argument, NULL, OPT_EPOCHS},
	{"markdown", no_argument, NULL, OPT_MARKDOWN},
	{"plots", required_argument, NULL, OPT_PLOTS},
	{0},
};

static int compare_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			     const char *arg)
{
	struct compare_opts *o = opts_v;
	switch (id) {
	case OPT_DATA:
		return cmd_opt_data(ctx, o->data, &o->n_data, arg);
	case OPT_HW_DIR:
		o->hw_dir = arg;
		return CMD_EXIT_OK;
	case OPT_CSV:
		o->csv = arg;
		return CMD_EXIT_OK;
	case OPT_FOLDS:
		if (!strcmp(arg, "group")) {
			o->folds_group = true;
			return CMD_EXIT_OK;
		}
		if (!cmd_parse_int64(arg, 2, 1000, &o->folds)) {
			cmd_error(ctx, "--folds takes a whole number from 2 to "
				       "1000 or 'group', got '%s'", arg);
			return CMD_EXIT_USAGE;
		}
		return CMD_EXIT_OK;
	case OPT_SEED:
		o->seed_set = true;
		return cmd_opt_seed(ctx, arg, &o->seed);
	case OPT_EPOCHS:
		return cmd_opt_epochs(ctx, arg, &o->epochs);
	case OPT_MARKDOWN:
		o->markdown = true;
		return CMD_EXIT_OK;
	case OPT_PLOTS:
		o->plots = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void compare_help(FILE *out)
{
	fputs("Compares the analytic model, the learned-only model and the "
	      "hybrid (analytic\nx the learned residual) against the measured "
	      "runtimes of the sets DIR, on\nout-of-fold predictions only: the "
	      "groups (a kernel of a tile set, a shape\nof an op set) are dealt "
	      "into folds, and each fold is predicted by models\ntrained (tpusim "
	      "train's way) on the other folds. Per set and per kernel\nor op "
	      "family: MAPE, median APE, Kendall tau over the configs of a "
	      "kernel\n(kernels with >= 10), top-1/top-5 slowdown and tile "
	      "choice, as validate\ncomputes them. A fold with no other fold "
	      "to learn from (one group) has\nno model: the learned figures of "
	      "its rows are n/a (empty in the CSV), and\na kernel not timed "
	      "whole is not ranked.\n\n"
	      "Options:\n"
	      "      --data DIR        a measurement set (repeatable, at least "
	      "one)\n"
	      "      --hw-dir DIR      a spec per row from its hw column\n"
	      "      --folds K|group   K folds (default 5) or one per group\n"
	      "      --seed N          folds and training (default 1)\n"
	      "      --epochs N        at most N epochs per model (default "
	      "60)\n"
	      "      --csv FILE        one line per row: set, id, fold, "
	      "measured_ns,\n"
	      "                        analytic_ns, learned_ns, hybrid_ns\n"
	      "      --markdown        print the tables as Markdown (as in "
	      "docs/ACCURACY.md)\n"
	      "      --plots DIR       draw compare_scatter.png (predicted vs "
	      "measured,\n"
	      "                        log-log, a panel per model), "
	      "compare_ape.png (the\n"
	      "                        APE distribution per set) and "
	      "compare_tau.png (Kendall\n"
	      "                        tau per kernel) into DIR (created if "
	      "absent)\n",
	      out);
}

/* Tile choice: total measured time of the model's picks over the sum of
 * measured bests, minus one. */
static double tile_choice(const struct val_report *r)
{
	const struct val_tile_totals *t = &r->tiles_config;
	return t->n_kernels ? t->chosen_ns / t->best_ns - 1 : NAN;
}

static const struct val_group *find_group(const struct val_report *r,
					  const char *name)
{
	for (int i = 0; i < r->n_groups; i++)
		if (!strcmp(r->groups[i].name, name))
			return &r->groups[i];
	return NULL;
}

/* One set: the three models' summary, then per kernel (tile sets: with
 * the ranking figures) or per op family, worst hybrid MAPE first. */
static void print_set(FILE *f, const struct val_compare_set *cs,
		      int n_folds, bool md)
{
	const struct val_report *rep[3] = {&cs->analytic, &cs->learned,
					   &cs->hybrid};
	static const char *const names[3] = {"analytic", "learned-only",
					     "hybrid"};
	const struct val_report *a = &cs->analytic;
	bool rank = a->by_kernel;
	char b[6][32];
	if (md)
		fprintf(f, "#### %s (%d rows, %d folds, out of fold)\n\n"
			   "| model | MAPE | median APE |%s\n|---|---|---|%s\n",
			a->ds->name, a->n_rows, n_folds,
			rank ? " Kendall tau | top-1 | top-5 | tile choice |" : "",
			rank ? "---|---|---|---|" : "");
	else
		fprintf(f, "set %s: %d rows, %d folds, out of fold\n%-14s %8s "
			   "%8s%s\n",
			a->ds->name, a->n_rows, n_folds, "model", "MAPE",
			"medAPE", rank ? "      tau     top1     top5    tiles" : "");
	for (int m = 0; m < 3; m++) {
		const struct val_report *r = rep[m];
		val_fmt_pct(b[0], 32, r->overall.mape);
		val_fmt_pct(b[1], 32, r->overall.median_ape);
		val_fmt_fix3(b[2], 32, r->mean_tau_model);
		val_fmt_pct(b[3], 32, r->mean_top1_slowdown);
		val_fmt_pct(b[4], 32, r->mean_top5_slowdown);
		val_fmt_pct_change(b[5], 32, tile_choice(r));
		if (md)
			fprintf(f, "| %s | %s | %s |", names[m], b[0], b[1]);
		else
			fprintf(f, "%-14s %8s %8s", names[m], b[0], b[1]);
		if (rank && md)
			fprintf(f, " %s | %s | %s | %s |", b[2], b[3], b[4],
				b[5]);
		else if (rank)
			fprintf(f, " %8s %8s %8s %8s", b[2], b[3], b[4], b[5]);
		fputc('\n', f);
	}
	const struct val_report *h = &cs->hybrid;
	const char *kind = rank ? "kernel" : "family";
	if (md)
		fprintf(f, "\n| %s | rows | MAPE analytic | learned-only | hybrid "
			   "|%s\n|---|---|---|---|---|%s\n",
			kind,
			rank ? " tau analytic | learned-only | hybrid |" : "",
			rank ? "---|---|---|" : "");
	else
		fprintf(f, "\n%-22s %6s %9s %9s %9s%s\n", kind, "rows",
			"MAPE ana", "learned", "hybrid",
			rank ? "  tau ana  learned   hybrid" : "");
	for (int i = 0; i < h->n_groups; i++) {
		const char *name = h->groups[i].name;
		const struct val_group *g[3];
		for (int m = 0; m < 3; m++)
			g[m] = find_group(rep[m], name);
		if (!g[0] || !g[1] || !g[2])
			continue;
		char c[6][32];
		for (int m = 0; m < 3; m++) {
			val_fmt_pct(c[m], 32, g[m]->mape);
			val_fmt_fix3(c[3 + m], 32,
			    g[m]->n_ranked >= VAL_TAU_MIN_ROWS ? g[m]->tau_model
							       : NAN);
		}
		if (md)
			fprintf(f, "| %s | %d | %s | %s | %s |", name,
				g[2]->n_rows, c[0], c[1], c[2]);
		else
			fprintf(f, "%-22s %6d %9s %9s %9s", name, g[2]->n_rows,
				c[0], c[1], c[2]);
		if (rank && md)
			fprintf(f, " %s | %s | %s |", c[3], c[4], c[5]);
		else if (rank)
			fprintf(f, " %8s %8s %8s", c[3], c[4], c[5]);
		fputc('\n', f);
	}
	fputc('\n', f);
}

enum { C_SET = 0, C_ID, C_FOLD, C_MEASURED, C_ANALYTIC, C_LEARNED, C_HYBRID,
       C_COUNT };

static const struct cmd_col csv_cols[] = {
	[C_SET] = {"set", "set", CMD_UNIT_TEXT, 0},
	[C_ID] = {"id", "id", CMD_UNIT_TEXT, 0},
	[C_FOLD] = {"fold", "fold", CMD_UNIT_INT, 0},
	[C_MEASURED] = {"measured_ns", "measured", CMD_UNIT_TIME_NS, 0},
	[C_ANALYTIC] = {"analytic_ns", "analytic", CMD_UNIT_TIME_NS, 0},
	[C_LEARNED] = {"learned_ns", "learned", CMD_UNIT_TIME_NS, 0},
	[C_HYBRID] = {"hybrid_ns", "hybrid", CMD_UNIT_TIME_NS, 0},
};
_Static_assert(TS_ARRAY_LEN(csv_cols) == C_COUNT,
	       "csv_cols must list every column");

/* One line per row of every set, in set and file order. */
static enum ts_status fill_csv(const struct val_compare *c, struct cmd_table *t)
{
	enum ts_status st;
	for (int s = 0; s < c->n_sets; s++) {
		const struct val_compare_set *cs = &c->sets[s];
		const struct val_dataset *ds = cs->analytic.ds;
		for (int i = 0; i < ds->n_rows; i++) {
			if ((st = cmd_table_add_row(t)) ||
			    (st = cmd_table_set_text(t, C_SET, ds->name)) ||
			    (st = cmd_table_set_text(t, C_ID, ds->rows[i].id)))
				return st;
			if (cs->fold[i] >= 0)
				cmd_table_set_num(t, C_FOLD, cs->fold[i]);
			cmd_table_set_num(t, C_MEASURED,
					  (double)ds->rows[i].runtime_ns);
			cmd_table_set_num(t, C_ANALYTIC, cs->analytic.rows[i].predicted_ns);
			cmd_table_set_num(t, C_LEARNED, cs->learned.rows[i].predicted_ns);
			cmd_table_set_num(t, C_HYBRID, cs->hybrid.rows[i].predicted_ns);
		}
	}
	return TS_OK;
}

static int compare_main(struct cmd_ctx *ctx, void *opts_v, int argc,
			char **argv)
{
	(void)argc;
	(void)argv;
	struct compare_opts *o = opts_v;
	const struct cmd_file outs[] = {
		{"--csv", o->csv, CMD_FILE},
		{"--plots", o->plots, cmd_plot_compare_files}};
	const struct cmd_file in = {"--hw-dir", o->hw_dir, CMD_FILE_SPECS};
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 2,
						   .ins = &in, .n_ins = 1,
						   .sets = o->data,
						   .n_sets = o->n_data});
	if (rc != CMD_EXIT_OK)
		return rc;
	struct cmd_sets s;
	rc = cmd_sets_load(ctx, o->data, o->n_data, o->hw_dir, &s);
	if (rc != CMD_EXIT_OK) {
		cmd_sets_free(&s);
		return rc;
	}
	const struct val_dataset *sp[CMD_MAX_SETS];
	const struct val_specs *pp[CMD_MAX_SETS];
	for (int i = 0; i < s.n; i++) {
		sp[i] = &s.sets[i];
		pp[i] = &s.specs[i];
	}
	struct val_compare_opts co = {
		.folds = o->folds_group ? 0
			 : o->folds     ? (int)o->folds
					: COMPARE_DEFAULT_FOLDS,
		.seed = o->seed_set ? o->seed : 1,
		.epochs = o->epochs,
		.progress = isatty(fileno(ctx->err)) ? ctx->err : NULL,
	};
	struct val_compare c;
	struct ts_diag d = {0};
	enum ts_status st = val_compare_run(sp, pp, s.n, &s.learn, &co, &c, &d);
	if (st == TS_OK) {
		/* the worst set (by the hybrid's MAPE) first */
		int order[CMD_MAX_SETS];
		for (int i = 0; i < c.n_sets; i++) {
			int j = i;
			double mi = c.sets[i].hybrid.overall.mape;
			while (j > 0 && c.sets[order[j - 1]].hybrid.overall.mape < mi) {
				order[j] = order[j - 1];
				j--;
			}
			order[j] = i;
		}
		for (int i = 0; i < c.n_sets; i++)
			print_set(ctx->out, &c.sets[order[i]], c.n_folds,
				  o->markdown);
		fprintf(ctx->err,
			"%s: %d models trained in %.1f s (%.2f s each)\n",
			ctx->prog, c.n_trained, c.train_s,
			c.n_trained ? c.train_s / c.n_trained : 0.0);
	}
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
	}
	if (rc == CMD_EXIT_OK && o->csv) {
		struct cmd_table t;
		cmd_table_init(&t, "rows", NULL, csv_cols, C_COUNT);
		if (fill_csv(&c, &t) != TS_OK) {
			cmd_error(ctx, "out of memory");
			rc = CMD_EXIT_IO;
		} else {
			rc = cmd_write_file(ctx, o->csv, cmd_table_write_csv, &t);
		}
		cmd_table_free(&t);
	}
	if (rc == CMD_EXIT_OK && o->plots) {
		rc = cmd_out_dir(ctx, "--plots", o->plots);
		if (rc == CMD_EXIT_OK)
			rc = cmd_plot_compare(ctx, o->plots, &c);
	}
	val_compare_free(&c);
	cmd_sets_free(&s);
	return rc;
}

const struct cmd cmd_compare = {
	.name = "compare",
	.summary = "Analytic vs learned vs hybrid, out of fold",
	.synopsis = "--data DIR [--data DIR...] --hw-dir DIR [--folds "
		    "K|group] [--seed N] [--epochs N] [--csv FILE] "
		    "[--markdown] [--plots DIR]",
	.flags = CMD_TRAINS,
	.options = compare_options,
	.repeatable = "data",
	.opts_size = sizeof(struct compare_opts),
	.parse_opt = compare_parse_opt,
	.help = compare_help,
	.min_args = 0,
	.max_args = 0,
	.fn = compare_main,
};
