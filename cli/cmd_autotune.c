/*
 * cmd_autotune.c: `tpusim autotune`: tile configs chosen under a budget of
 * measurements. Replayed on measured sets (--data: the recorded configs
 * are the hardware, validation/val_autotune.c) to judge the strategies by
 * the best measured time they reach; or live on a module (GRAPH.hlo) with
 * the user's measuring command (cli/autotune_live.c). Options, help and
 * command side by side (cli.h explains the layout).
 */
#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TUNE_DEFAULT_SEEDS 20

struct autotune_opts {
	const char *data[CMD_MAX_SETS];
	int n_data;
	const char *hw_dir;
	struct val_tune_opts tune; /* budgets, strategies, seeds, seed */
	bool budget_set, strategy_set, seeds_set;
	const char *model;         /* --model: the hybrid's (default "default") */
	const char *csv;           /* --csv FILE */
	const char *plots;         /* --plots DIR */
	struct tune_live_opts live; /* GRAPH.hlo mode */
};

enum {
	OPT_DATA = CMD_OPT_OWN,
	OPT_HW_DIR,
	OPT_BUDGET,
	OPT_STRATEGY,
	OPT_MODEL,
	OPT_SEEDS,
	OPT_SEED,
	OPT_CSV,
	OPT_PLOTS,
	OPT_MEASURE_CMD,
	OPT_MEASURE_TIMEOUT,
	OPT_RECORD,
};

static const struct option autotune_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"hw-dir", required_argument, NULL, OPT_HW_DIR},
	{"budget", required_argument, NULL, OPT_BUDGET},
	{"strategy", required_argument, NULL, OPT_STRATEGY},
	{"model", required_argument, NULL, OPT_MODEL},
	{"seeds", required_argument, NULL, OPT_SEEDS},
	{"seed", required_argument, NULL, OPT_SEED},
	{"csv", required_argument, NULL, OPT_CSV},
	{"plots", required_argument, NULL, OPT_PLOTS},
	{"measure-cmd", required_argument, NULL, OPT_MEASURE_CMD},
	{"measure-timeout", required_argument, NULL, OPT_MEASURE_TIMEOUT},
	{"record", required_argument, NULL, OPT_RECORD},
	{0},
};

/* Calls item for each comma-separated word of arg, the argument of option
 * opt: a usage error when arg is too long, an item fails (item says why)
 * or there is no word ("no <what> in ..."). */
static int each_item(const struct cmd_ctx *ctx, const char *opt,
		     const char *what, const char *arg, struct val_tune_opts *t,
		     int (*item)(const struct cmd_ctx *ctx, const char *arg,
				 const char *tok, struct val_tune_opts *t))
{
	char buf[256];
	if (strlen(arg) >= sizeof buf) {
		cmd_error(ctx, "%s: too long", opt);
		return CMD_EXIT_USAGE;
	}
	snprintf(buf, sizeof buf, "%s", arg);
	char *save = NULL;
	int n = 0;
	for (char *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save), n++) {
		int rc = item(ctx, arg, tok, t);
		if (rc != CMD_EXIT_OK)
			return rc;
	}
	if (n == 0) {
		cmd_error(ctx, "%s: no %s in '%s'", opt, what, arg);
		return CMD_EXIT_USAGE;
	}
	return CMD_EXIT_OK;
}

/* One of "1,3,5,10": ascending whole numbers from 1 to 100000, at most
 * VAL_TUNE_MAX_BUDGETS. */
static int budget_item(const struct cmd_ctx *ctx, const char *arg,
		       const char *tok, struct val_tune_opts *t)
{
	int64_t v;
	if (t->n_budgets == VAL_TUNE_MAX_BUDGETS ||
	    !cmd_parse_int64(tok, 1, 100000, &v) ||
	    (t->n_budgets && v <= t->budgets[t->n_budgets - 1])) {
		cmd_error(ctx, "--budget takes up to %d ascending whole "
			       "numbers from 1 to 100000, comma-separated "
			       "(e.g. 1,3,5,10), got '%s'",
			  VAL_TUNE_MAX_BUDGETS, arg);
		return CMD_EXIT_USAGE;
	}
	t->budgets[t->n_budgets++] = (int)v;
	return CMD_EXIT_OK;
}

/* One of "random,analytic,hybrid,online": each name once. */
static int strategy_item(const struct cmd_ctx *ctx, const char *arg,
			 const char *tok, struct val_tune_opts *t)
{
	(void)arg;
	int s = 0;
	while (s < VAL_TUNE_COUNT &&
	       strcmp(tok, val_tune_strategy_name((enum val_tune_strategy)s)))
		s++;
	if (s == VAL_TUNE_COUNT || t->use[s]) {
		cmd_error(ctx, "--strategy: %s '%s' (expected "
			       "random, analytic, hybrid or online, each "
			       "once)",
			  s == VAL_TUNE_COUNT ? "unknown strategy"
					      : "repeated strategy",
			  tok);
		return CMD_EXIT_USAGE;
	}
	t->use[s] = true;
	return CMD_EXIT_OK;
}

static int autotune_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			      const char *arg)
{
	struct autotune_opts *o = opts_v;
	int64_t v;
	switch (id) {
	case OPT_DATA:
		return cmd_opt_data(ctx, o->data, &o->n_data, arg);
	case OPT_HW_DIR:
		o->hw_dir = arg;
		return CMD_EXIT_OK;
	case OPT_BUDGET:
		o->budget_set = true;
		o->tune.n_budgets = 0;
		return each_item(ctx, "--budget", "budget", arg, &o->tune,
				 budget_item);
	case OPT_STRATEGY:
		o->strategy_set = true;
		memset(o->tune.use, 0, sizeof o->tune.use);
		return each_item(ctx, "--strategy", "strategy", arg, &o->tune,
				 strategy_item);
	case OPT_MODEL:
		o->model = arg;
		return CMD_EXIT_OK;
	case OPT_SEEDS:
		if (!cmd_parse_int64(arg, 1, 10000, &v)) {
			cmd_error(ctx, "--seeds takes a whole number from 1 to "
				       "10000, got '%s'", arg);
			return CMD_EXIT_USAGE;
		}
		o->tune.seeds = (int)v;
		o->seeds_set = true;
		return CMD_EXIT_OK;
	case OPT_SEED:
		return cmd_opt_seed(ctx, arg, &o->tune.seed);
	case OPT_CSV:
		o->csv = arg;
		return CMD_EXIT_OK;
	case OPT_PLOTS:
		o->plots = arg;
		return CMD_EXIT_OK;
	case OPT_MEASURE_CMD:
		o->live.measure_cmd = arg;
		return CMD_EXIT_OK;
	case OPT_MEASURE_TIMEOUT:
		if (!cmd_parse_int64(arg, 1, 86400, &v)) {
			cmd_error(ctx, "--measure-timeout takes whole seconds "
				       "from 1 to 86400, got '%s'", arg);
			return CMD_EXIT_USAGE;
		}
		o->live.timeout_s = (int)v;
		return CMD_EXIT_OK;
	case OPT_RECORD:
		o->live.record = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void autotune_help(FILE *out)
{
	fputs("Chooses tile configs under a budget of measurements, in two "
	      "modes.\n\n"
	      "Replay (--data): a set's recorded configs of each kernel are "
	      "the hardware:\nmeasuring one returns its recorded time. Each "
	      "strategy measures a kernel's\nconfigs in its own order; after "
	      "b measurements the best measured is kept.\nReported per set "
	      "and strategy: the mean over kernels of best-so-far over\nthe "
	      "kernel's best, minus 1, at each budget, and the measurements "
	      "needed to\ncome within 1% and 5% of the best. Kernels with one "
	      "recorded config are\ncounted and left out.\n"
	      "  random    uniform random orders, the mean over --seeds of "
	      "them\n"
	      "  analytic  the analytic model's order\n"
	      "  hybrid    the hybrid's order (analytic x the learned "
	      "correction of\n"
	      "            --model; in-sample on the sets the model was "
	      "trained on)\n"
	      "  online    refits a correction of the analytic model after "
	      "every\n"
	      "            measurement (Bayesian linear regression of the log "
	      "residual on\n"
	      "            log steps and the MXU and DMA shares), with slopes "
	      "carried over\n"
	      "            from the kernels tuned before it, and measures next "
	      "the config\n"
	      "            it predicts fastest less half a posterior standard "
	      "deviation\n\n"
	      "Live (GRAPH.hlo --hw SPEC --measure-cmd CMD): for each tunable "
	      "kernel,\nproposes configs in the strategy's order (analytic, or "
	      "hybrid with\n--model) and runs CMD for each, at most the "
	      "largest --budget times per\nkernel. CMD is split into words "
	      "(no shell unless it names one); the\nwords {module}, {kernel} "
	      "and {config} are replaced by the module path,\nthe kernel's "
	      "name and the config as `run --config` takes it, each as one\n"
	      "argument, and come as TPUSIM_MODULE, TPUSIM_KERNEL and "
	      "TPUSIM_CONFIG in\nits environment. CMD runs the module with that "
	      "kernel at that config and\nprints the time in ns first on "
	      "standard output (the predictions shown\nare of that time: the "
	      "kernel at the config, the others at their\ndefaults). A command "
	      "that fails, times out or prints no valid time (a\ndecimal number "
	      "of ns, 1 to 2^63-1 once rounded) is a failed measurement,\n"
	      "counted against the budget; what it left running is ended when "
	      "it exits.\nWhen every measurement fails the exit status is 3. "
	      "--record DIR appends\neach measurement, whole, to "
	      "DIR/measurements.csv (failures to failed.csv;\nthe module to "
	      "DIR/modules/, named by its content) as it is taken, the\nfolder "
	      "locked; a second run repairs a torn last line and measures only\n"
	      "configs not recorded yet (failures are tried again).\n\n"
	      "Options:\n"
	      "      --data DIR        a measurement set to replay (repeatable)\n"
	      "      --hw-dir DIR      a spec per row from its hw column "
	      "(replay)\n"
	      "      --budget LIST     measurements, ascending (default "
	      "1,3,5,10; live: the\n"
	      "                        largest is the per-kernel budget)\n"
	      "      --strategy LIST   replay: any of random,analytic,hybrid,"
	      "online (default:\n"
	      "                        all); live: analytic (default) or "
	      "hybrid\n"
	      "      --model MODEL     the hybrid's learned model (default: "
	      "the shipped one)\n"
	      "      --seeds K         random orders per kernel (default 20)\n"
	      "      --seed N          of the first random order (default 1)\n"
	      "      --csv FILE        replay: one line per set, strategy and "
	      "budget\n"
	      "      --plots DIR       replay: autotune.png, slowdown against "
	      "budget, one\n"
	      "                        line per strategy and set\n"
	      "      --measure-cmd CMD live: the measuring command\n"
	      "      --measure-timeout S  live: seconds before a measurement "
	      "fails (default\n"
	      "                        60)\n"
	      "      --record DIR      live: the measurements as a data set "
	      "(resumable)\n",
	      out);
}

enum { T_STRATEGY = 0, T_BUDGET, T_SLOWDOWN, T_SET, T_KERNELS, T_TO1, T_TO5,
       T_COUNT };

static const struct cmd_col tune_cols[] = {
	[T_STRATEGY] = {"strategy", "strategy", CMD_UNIT_TEXT, 0},
	[T_BUDGET] = {"budget", "budget", CMD_UNIT_INT, 0},
	[T_SLOWDOWN] = {"mean_slowdown", "slowdown", CMD_UNIT_FRACTION, 0},
	[T_SET] = {"set", "set", CMD_UNIT_TEXT, 0},
	[T_KERNELS] = {"kernels", "kernels", CMD_UNIT_INT, 0},
	[T_TO1] = {"to_1pct", "to 1%", CMD_UNIT_REAL, 0},
	[T_TO5] = {"to_5pct", "to 5%", CMD_UNIT_REAL, 0},
};
_Static_assert(TS_ARRAY_LEN(tune_cols) == T_COUNT,
	       "tune_cols must list every column");

/* One row per set, strategy and budget, the sets in order. */
static enum ts_status fill_table(const struct val_tune_set *sets, int n,
				 const struct val_tune_opts *o,
				 struct cmd_table *t)
{
	enum ts_status st = TS_OK;
	for (int i = 0; i < n; i++)
		for (int s = 0; s < VAL_TUNE_COUNT && sets[i].n_kernels; s++) {
			if (!o->use[s])
				continue;
			const struct val_tune_result *r = &sets[i].res[s];
			for (int b = 0; b < o->n_budgets; b++) {
				if ((st = cmd_table_add_row(t)) ||
				    (st = cmd_table_set_text(t, T_SET,
							     sets[i].name)) ||
				    (st = cmd_table_set_text(
					     t, T_STRATEGY,
					     val_tune_strategy_name(
						     (enum val_tune_strategy)s))))
					return st;
				cmd_table_set_num(t, T_BUDGET, o->budgets[b]);
				cmd_table_set_num(t, T_SLOWDOWN, r->slowdown[b]);
				cmd_table_set_num(t, T_KERNELS, sets[i].n_kernels);
				cmd_table_set_num(t, T_TO1, r->to_1pct);
				cmd_table_set_num(t, T_TO5, r->to_5pct);
			}
		}
	return st;
}

/* Text: per set, a line per strategy with the slowdown at each budget. */
static void print_text(FILE *f, const struct val_tune_set *s,
		       const struct val_tune_opts *o)
{
	fprintf(f, "set %s: %d kernels with several configs", s->name,
		s->n_kernels);
	if (s->n_single)
		fprintf(f, "; %d with one config left out (first: %s)",
			s->n_single, s->single_example);
	fputc('\n', f);
	if (!s->n_kernels)
		return;
	fprintf(f, "%-10s", "strategy");
	for (int b = 0; b < o->n_budgets; b++) {
		char h[16];
		snprintf(h, sizeof h, "b=%d", o->budgets[b]);
		fprintf(f, " %8s", h);
	}
	fprintf(f, " %7s %7s\n", "to 1%", "to 5%");
	for (int st = 0; st < VAL_TUNE_COUNT; st++) {
		if (!o->use[st])
			continue;
		const struct val_tune_result *r = &s->res[st];
		fprintf(f, "%-10s",
			val_tune_strategy_name((enum val_tune_strategy)st));
		for (int b = 0; b < o->n_budgets; b++) {
			char c[32];
			fprintf(f, " %8s", val_fmt_pct(c, sizeof c,
						       r->slowdown[b]));
		}
		fprintf(f, " %7.2f %7.2f\n", r->to_1pct, r->to_5pct);
	}
	fputc('\n', f);
}

static int replay_main(struct cmd_ctx *ctx, struct autotune_opts *o)
{
	if (!o->hw_dir) {
		cmd_error(ctx, "--hw-dir DIR is required with --data (e.g. "
			       "--hw-dir hwspecs)");
		return CMD_EXIT_USAGE;
	}
	const struct cmd_file outs[] = {
		{"--csv", o->csv, CMD_FILE},
		{"--plots", o->plots, cmd_plot_autotune_files}};
	const struct cmd_file ins[] = {
		{"--hw-dir", o->hw_dir, CMD_FILE_SPECS},
		cmd_model_file(o->model, o->tune.use[VAL_TUNE_HYBRID])};
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 2,
						   .ins = ins, .n_ins = 2,
						   .sets = o->data,
						   .n_sets = o->n_data});
	if (rc != CMD_EXIT_OK)
		return rc;
	struct gnn_model model = {0};
	bool hybrid = o->tune.use[VAL_TUNE_HYBRID];
	if (hybrid && (rc = cmd_load_model(ctx, o->model ? o->model : "default",
					   &model)))
		return rc;
	if (!hybrid && o->model) {
		cmd_error(ctx, "--model is for the hybrid strategy");
		return CMD_EXIT_USAGE;
	}
	/* the datasets live to the end: the results name them */
	static struct val_dataset ds[CMD_MAX_SETS];
	struct val_tune_set sets[CMD_MAX_SETS];
	int n = 0, n_loaded = 0;
	for (int i = 0; i < o->n_data && rc == CMD_EXIT_OK; i++) {
		struct val_specs specs = {0};
		struct val_report r = {0};
		struct ts_diag d = {0};
		struct val_report_opts ro = {.model = hybrid ? &model : NULL};
		n_loaded++;
		enum ts_status st = val_dataset_load(o->data[i], &ds[i], &d);
		if (st == TS_OK)
			st = val_specs_load_dir(&ds[i], o->hw_dir, &specs, &d);
		if (st == TS_OK)
			st = val_report_build(&ds[i], &specs, &ro, &r, &d);
		if (st == TS_OK)
			st = val_tune_replay(&r, &o->tune, &sets[n], &d);
		if (st == TS_OK && r.n_errors)
			fprintf(ctx->err,
				"%s: warning: %s: %d rows not estimated: the "
				"model strategies propose them last\n",
				ctx->prog, ds[i].name, r.n_errors);
		if (st == TS_OK && r.n_fell_back)
			cmd_warn_fell_back(ctx, r.fell_back_module,
					   r.fell_back_kernel, r.n_fell_back,
					   "rows with such a kernel");
		if (st == TS_OK) {
			n++;
		} else {
			cmd_diag(ctx, &d, NULL, NULL, 0);
			rc = cmd_exit_from_status(st);
		}
		val_report_free(&r);
		val_specs_free(&specs);
	}
	gnn_model_free(&model);
	/* the worst set first: by the analytic (else first used) strategy's
	 * slowdown at the smallest budget */
	int key = o->tune.use[VAL_TUNE_ANALYTIC] ? VAL_TUNE_ANALYTIC : 0;
	while (!o->tune.use[key])
		key++;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && sets[j].res[key].slowdown[0] >
					     sets[j - 1].res[key].slowdown[0];
		     j--) {
			struct val_tune_set x = sets[j];
			sets[j] = sets[j - 1];
			sets[j - 1] = x;
		}
	struct cmd_table t;
	cmd_table_init(&t, "results", NULL, tune_cols, T_COUNT);
	enum ts_status built = rc == CMD_EXIT_OK ? fill_table(sets, n, &o->tune, &t)
						 : TS_OK;
	if (rc == CMD_EXIT_OK && ctx->format == CMD_FORMAT_TABLE) {
		for (int i = 0; i < n; i++)
			print_text(ctx->out, &sets[i], &o->tune);
		if (built != TS_OK) {
			cmd_error(ctx, "out of memory");
			rc = CMD_EXIT_IO;
		}
	} else if (rc == CMD_EXIT_OK) {
		struct cmd_report rep;
		cmd_report_begin(&rep, ctx->format, ctx->out);
		cmd_report_list_begin(&rep, "sets");
		for (int i = 0; i < n; i++) {
			cmd_report_item_begin(&rep);
			cmd_report_text(&rep, "set", sets[i].name);
			cmd_report_num(&rep, "kernels", CMD_UNIT_INT,
				       sets[i].n_kernels);
			cmd_report_num(&rep, "kernels_one_config", CMD_UNIT_INT,
				       sets[i].n_single);
			cmd_report_item_end(&rep);
		}
		cmd_report_list_end(&rep);
		cmd_report_table(&rep, &t);
		rc = cmd_report_finish(ctx, &rep, built);
	}
	if (rc == CMD_EXIT_OK && o->csv)
		rc = cmd_write_file(ctx, o->csv, cmd_table_write_csv, &t);
	cmd_table_free(&t);
	if (rc == CMD_EXIT_OK && o->plots) {
		rc = cmd_out_dir(ctx, "--plots", o->plots);
		if (rc == CMD_EXIT_OK)
			rc = cmd_plot_autotune(ctx, o->plots, sets, n, &o->tune);
	}
	for (int i = 0; i < n_loaded; i++)
		val_dataset_free(&ds[i]);
	return rc;
}

static int autotune_main(struct cmd_ctx *ctx, void *opts_v, int argc,
			 char **argv)
{
	struct autotune_opts *o = opts_v;
	if (!o->budget_set) {
		static const int def[] = {1, 3, 5, 10};
		o->tune.n_budgets = (int)TS_ARRAY_LEN(def);
		memcpy(o->tune.budgets, def, sizeof def);
	}
	if (!o->seeds_set)
		o->tune.seeds = TUNE_DEFAULT_SEEDS;
	if (!o->tune.seed)
		o->tune.seed = 1;
	if ((argc > 0) == (o->n_data > 0)) {
		cmd_error(ctx, "give either --data DIR (replay) or one "
			       "GRAPH.hlo (live), not %s",
			  argc ? "both" : "neither");
		return CMD_EXIT_USAGE;
	}
	if (argc == 0) {
		if (o->live.measure_cmd || o->live.record ||
		    o->live.timeout_s) {
			cmd_error(ctx, "--measure-cmd, --measure-timeout and "
				       "--record are for the live mode "
				       "(GRAPH.hlo)");
			return CMD_EXIT_USAGE;
		}
		if (!o->strategy_set)
			for (int s = 0; s < VAL_TUNE_COUNT; s++)
				o->tune.use[s] = true;
		return replay_main(ctx, o);
	}
	if (o->hw_dir || o->csv || o->plots || o->seeds_set) {
		cmd_error(ctx, "--hw-dir, --csv, --plots and --seeds are for "
			       "the replay mode (--data)");
		return CMD_EXIT_USAGE;
	}
	if (!o->strategy_set)
		o->tune.use[VAL_TUNE_ANALYTIC] = true;
	/* --record DIR: cli/autotune_live.c writes these files in it and
	 * in DIR/modules */
	static const char *const record_files[] = {
		"measurements.csv", "failed.csv", "*.torn", ".lock", NULL};
	static const char *const module_files[] = {"*.hlo", NULL};
	char modules[PATH_MAX] = "";
	if (o->live.record)
		snprintf(modules, sizeof modules, "%s/modules", o->live.record);
	const struct cmd_file outs[] = {
		{"--record", o->live.record, record_files},
		{"--record", o->live.record ? modules : NULL, module_files}};
	const struct cmd_file in =
		cmd_model_file(o->model, o->tune.use[VAL_TUNE_HYBRID]);
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 2,
						   .ins = &in, .n_ins = 1,
						   .args = argv, .n_args = 1});
	if (rc != CMD_EXIT_OK)
		return rc;
	return cmd_autotune_live(ctx, argv[0], &o->tune, o->model, &o->live);
}

const struct cmd cmd_autotune = {
	.name = "autotune",
	.summary = "Choose tile configs under a budget of measurements",
	.synopsis = "(--data DIR [--data DIR...] --hw-dir DIR | GRAPH.hlo "
		    "--hw SPEC.yaml --measure-cmd CMD [--record DIR]) "
		    "[--budget LIST] [--strategy LIST] [--model M] [options]",
	.flags = CMD_NEEDS_HW | CMD_HW_OPTIONAL | CMD_HAS_FORMAT | CMD_TRAINS,
	.options = autotune_options,
	.repeatable = "data",
	.opts_size = sizeof(struct autotune_opts),
	.parse_opt = autotune_parse_opt,
	.help = autotune_help,
	.min_args = 0,
	.max_args = 1,
	.fn = autotune_main,
};
