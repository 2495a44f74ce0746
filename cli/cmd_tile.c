/*
 * cmd_tile.c: `tpusim tile GRAPH.hlo --hw SPEC.yaml [--top K]`: analytic
 * tile-size selection. For each tunable kernel it enumerates the feasible
 * tile configs (hybrid/hyb_tile.c), costs each with the analytic model and
 * lists the best K with predicted time, the unit that bounds it, the steps
 * and the VMEM working set, next to the default config. Options, help and
 * command side by side (cli.h explains the layout).
 */
#include "cli.h"

#include <string.h>

struct tile_opts {
	int64_t top;               /* --top K; 0 when not given (5) */
	int64_t per_dim;           /* --per-dim N; 0: every candidate */
	const char *kernel;        /* --kernel NAME; NULL: every tunable kernel */
	const char *module;        /* --module NAME; NULL: every module */
	const char *model;         /* --model MODEL: rank by the hybrid */
	struct gnn_model learned;  /* it, loaded by tile_main */
};

enum {
	TILE_OPT_TOP = CMD_OPT_OWN,
	TILE_OPT_PER_DIM,
	TILE_OPT_KERNEL,
	TILE_OPT_MODULE,
	TILE_OPT_MODEL,
};

static const struct option tile_options[] = {
	{"top", required_argument, NULL, TILE_OPT_TOP},
	{"per-dim", required_argument, NULL, TILE_OPT_PER_DIM},
	{"kernel", required_argument, NULL, TILE_OPT_KERNEL},
	{"module", required_argument, NULL, TILE_OPT_MODULE},
	{"model", required_argument, NULL, TILE_OPT_MODEL},
	{0},
};

#define TILE_DEFAULT_TOP 5

static void tile_help(FILE *out)
{
	fputs("Chooses tile sizes with the analytic model. For each tunable "
	      "kernel\n"
	      "(one with a tile grid of more than one block) it enumerates "
	      "the tile\n"
	      "configs (per grid dim: every bound up to 16, else powers of "
	      "two and\n"
	      "divisors), drops those whose double-buffered working set "
	      "exceeds VMEM,\n"
	      "costs the rest and lists the best K: rank, config, predicted "
	      "time, gain\n"
	      "over the default config, tile steps, VMEM, the bounding unit "
	      "and each\n"
	      "unit's busy share of the time (the reason). Rank 0 is the "
	      "default config:\nthe model's best, what `run` costs without "
	      "--config (the same search,\ncapped at 150,000 configs; ranks "
	      "1.. start with it unless the cap thinned\nthe candidates).\n"
	      "\n"
	      "Options:\n"
	      "      --top K           configs listed per kernel (1 to 32, "
	      "default 5)\n"
	      "      --per-dim N       at most N candidate bounds per grid "
	      "dim (2 to 64;\n"
	      "                        default: all, capped at 4 million "
	      "configs)\n"
	      "      --kernel NAME     only kernel NAME\n"
	      "      --module NAME     only module NAME of a multi-module "
	      "file\n"
	      "      --model MODEL     rank by the hybrid estimate (analytic x "
	      "the learned\n"
	      "                        correction of MODEL, tpusim train; "
	      "\"default\": the\n"
	      "                        shipped one); time is then the hybrid's "
	      "and\n"
	      "                        analytic the analytic one\n",
	      out);
}

static int tile_parse_opt(const struct cmd_ctx *ctx, void *opts_, int id,
			  const char *arg)
{
	struct tile_opts *o = opts_;
	switch (id) {
	case TILE_OPT_TOP:
		if (!cmd_parse_int64(arg, 1, HYB_TILE_MAX_TOP, &o->top)) {
			cmd_error(ctx,
				  "--top: expected a whole number from 1 to "
				  "%d, got '%s'",
				  HYB_TILE_MAX_TOP, arg);
			return CMD_EXIT_USAGE;
		}
		return CMD_EXIT_OK;
	case TILE_OPT_PER_DIM:
		if (!cmd_parse_int64(arg, 2, 64, &o->per_dim)) {
			cmd_error(ctx,
				  "--per-dim: expected a whole number from 2 "
				  "to 64, got '%s'",
				  arg);
			return CMD_EXIT_USAGE;
		}
		return CMD_EXIT_OK;
	case TILE_OPT_KERNEL:
		o->kernel = arg;
		return CMD_EXIT_OK;
	case TILE_OPT_MODULE:
		o->module = arg;
		return CMD_EXIT_OK;
	case TILE_OPT_MODEL:
		o->model = arg;
		return CMD_EXIT_OK;
	default:
		TS_ASSERT(!"tile_parse_opt: unknown option id");
		return CMD_EXIT_USAGE;
	}
}

/* ---- the table ------------------------------------------------------------ */

enum tile_col {
	COL_MODULE = 0,
	COL_KERNEL,
	COL_RANK,
	COL_CONFIG,
	COL_TIME,
	COL_GAIN,
	COL_STEPS,
	COL_VMEM,
	COL_BOUND,
	COL_MXU,
	COL_VPU,
	COL_DMA,
	COL_OVERHEAD,
	COL_ANALYTIC, /* with --model only: the table has COL_NO_MODEL without */
	COL_COUNT
};
enum { COL_NO_MODEL = COL_ANALYTIC };

static const struct cmd_col tile_cols[] = {
	[COL_MODULE] = {"module", "module", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
	[COL_KERNEL] = {"kernel", "kernel", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
	[COL_RANK] = {"rank", "rank", CMD_UNIT_INT, 0},
	[COL_CONFIG] = {"config", "config", CMD_UNIT_TEXT, 0},
	[COL_TIME] = {"time_ns", "time", CMD_UNIT_TIME_NS, 0},
	[COL_GAIN] = {"vs_default", "vs default", CMD_UNIT_FRACTION, 0},
	[COL_STEPS] = {"steps", "steps", CMD_UNIT_INT, 0},
	[COL_VMEM] = {"vmem_bytes", "vmem", CMD_UNIT_BYTES, 0},
	[COL_BOUND] = {"bound", "bound", CMD_UNIT_TEXT, 0},
	[COL_MXU] = {"mxu_share", "mxu", CMD_UNIT_FRACTION, 0},
	[COL_VPU] = {"vpu_share", "vpu", CMD_UNIT_FRACTION, 0},
	[COL_DMA] = {"dma_share", "dma", CMD_UNIT_FRACTION, 0},
	[COL_OVERHEAD] = {"overhead_share", "overhead", CMD_UNIT_FRACTION, 0},
	[COL_ANALYTIC] = {"analytic_ns", "analytic", CMD_UNIT_TIME_NS, 0},
};
_Static_assert(TS_ARRAY_LEN(tile_cols) == COL_COUNT,
	       "tile_cols must describe every tile_col");

/* One row: the config, its time and why (each unit's busy time as a share
 * of the analytic time; they overlap, so the shares need not sum to 1;
 * split over megacore's cores, the MXU and VPU are busy cycles / cores).
 * With a model, time is the hybrid one and analytic the analytic one. */
static enum ts_status add_pick(struct cmd_table *t, const char *module,
			       const char *kernel, int rank,
			       const struct hyb_tile_pick *pk, double def_ns,
			       const struct hw_spec *hw, bool model)
{
	const struct sim_estimate *e = &pk->est;
	char buf[256];
	sim_tile_config_format(&pk->config, buf, sizeof buf);
	enum ts_status st = cmd_table_add_row(t);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_MODULE, module);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_KERNEL, kernel);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_CONFIG, buf);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_BOUND,
					e->feasible ? hw_unit_name(e->bound)
						    : "infeasible");
	if (st != TS_OK)
		return st;
	double ns = pk->analytic_ns > 0 ? pk->analytic_ns : 1.0;
	double ghz = hw->clock_hz * 1e-9;
	cmd_table_set_num(t, COL_RANK, rank);
	cmd_table_set_num(t, COL_TIME, e->time_ns);
	if (model)
		cmd_table_set_num(t, COL_ANALYTIC, pk->analytic_ns);
	if (def_ns > 0)
		cmd_table_set_num(t, COL_GAIN, e->time_ns / def_ns);
	cmd_table_set_num(t, COL_STEPS, (double)e->steps);
	cmd_table_set_num(t, COL_VMEM, e->vmem_bytes);
	if (ghz > 0) {
		double cores = e->cores > 1 ? e->cores : 1;
		cmd_table_set_num(t, COL_MXU, e->mxu_cycles / cores / ghz / ns);
		cmd_table_set_num(t, COL_VPU, e->vpu_cycles / cores / ghz / ns);
		cmd_table_set_num(t, COL_DMA, e->dma_cycles / ghz / ns);
	}
	cmd_table_set_num(t, COL_OVERHEAD, e->overhead_ns / ns);
	return TS_OK;
}

/* Searches one kernel and adds its report item. */
static int tile_kernel(struct cmd_ctx *ctx, const struct tile_opts *o,
		       struct cmd_report *r, const char *module,
		       const struct sim_kernel *k, const char *path,
		       const char *text)
{
	struct hyb_tile_opts ho = {
		.top_k = o->top > 0 ? (int)o->top : TILE_DEFAULT_TOP,
		.per_dim = (int)o->per_dim,
		.model = o->model ? &o->learned : NULL,
	};
	struct hyb_tile_result res;
	struct ts_diag d = {0};
	enum ts_status st = hyb_tile_search(k, &ctx->hw, &ho, &res, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, path, text, strlen(text));
		return cmd_exit_from_status(st);
	}
	if (res.n_fell_back)
		cmd_warn_fell_back(ctx, module, k->name, res.n_fell_back,
				   "configs");
	else if (res.def.fell_back)
		cmd_warn_fell_back(ctx, module, k->name, 1, NULL);
	struct cmd_table t;
	cmd_table_init(&t, "configs", NULL, tile_cols,
		       o->model ? COL_COUNT : COL_NO_MODEL);
	double def_ns = res.def.est.time_ns;
	bool model = o->model != NULL;
	st = add_pick(&t, module, k->name, 0, &res.def, def_ns, &ctx->hw,
		      model);
	for (int i = 0; i < res.n_top && st == TS_OK; i++)
		st = add_pick(&t, module, k->name, i + 1, &res.top[i], def_ns,
			      &ctx->hw, model);
	if (st != TS_OK) {
		cmd_table_free(&t);
		cmd_error(ctx, "out of memory building the report");
		return CMD_EXIT_IO;
	}
	char buf[256];
	cmd_report_item_begin(r);
	cmd_report_text(r, "module", module);
	cmd_report_text(r, "kernel", k->name);
	cmd_report_num(r, "candidates", CMD_UNIT_INT, (double)res.n_costed);
	cmd_report_num(r, "feasible", CMD_UNIT_INT, (double)res.n_feasible);
	sim_tile_config_format(&res.def.config, buf, sizeof buf);
	cmd_report_text(r, "default", buf);
	cmd_report_num(r, "default_ns", CMD_UNIT_TIME_NS, def_ns);
	if (res.n_top > 0) {
		sim_tile_config_format(&res.top[0].config, buf, sizeof buf);
		cmd_report_text(r, "best", buf);
		cmd_report_num(r, "best_ns", CMD_UNIT_TIME_NS,
			       res.top[0].est.time_ns);
	} else {
		cmd_report_text(r, "best", "(no feasible config)");
	}
	cmd_report_table(r, &t);
	cmd_report_item_end(r);
	cmd_table_free(&t);
	return CMD_EXIT_OK;
}

static int tile_main(struct cmd_ctx *ctx, void *opts_, int argc, char **argv)
{
	struct tile_opts *o = opts_;
	const char *path = argv[0];
	(void)argc;
	struct sim_program_opts popts = {0};
	struct cmd_graph g = {0};
	int rc = o->model ? cmd_load_model(ctx, o->model, &o->learned)
			  : CMD_EXIT_OK;
	if (rc == CMD_EXIT_OK)
		rc = cmd_graph_load(ctx, path, o->module, &popts, NULL, &g);
	if (rc != CMD_EXIT_OK)
		goto out;
	const struct sim_program *progs = g.progs;
	int n_progs = g.n_progs;
	const char *text = g.text;
	/* Check the names before any output, so that a bad --kernel prints
	 * nothing. */
	int n_done = 0;
	for (int m = 0; m < n_progs; m++) {
		const struct sim_program *p = &progs[m];
		for (int i = 0; i < p->n_kernels; i++)
			n_done += o->kernel ? strcmp(p->kernels[i].name,
						     o->kernel) == 0
					    : p->kernels[i].tunable;
	}
	if (o->kernel && n_done == 0) {
		cmd_error(ctx, "--kernel: no kernel named '%s' in %s", o->kernel,
			  path);
		rc = CMD_EXIT_INPUT;
		goto out;
	}
	if (n_done == 0)
		fprintf(ctx->err, "%s: note: %s has no tunable kernel\n",
			ctx->prog, path);
	struct cmd_report r;
	cmd_report_begin(&r, ctx->format, ctx->out);
	cmd_report_text(&r, "file", path);
	cmd_report_text(&r, "hw", ctx->hw.name);
	if (ctx->hw_set[0])
		cmd_report_text(&r, "hw_set", ctx->hw_set);
	cmd_report_text(&r, "model", o->model ? "hybrid" : "analytic");
	if (o->model)
		cmd_report_text(&r, "learned_model", o->model);
	cmd_report_list_begin(&r, "kernels");
	for (int m = 0; m < n_progs && rc == CMD_EXIT_OK; m++) {
		const struct sim_program *p = &progs[m];
		for (int i = 0; i < p->n_kernels && rc == CMD_EXIT_OK; i++) {
			const struct sim_kernel *k = &p->kernels[i];
			if (o->kernel ? strcmp(k->name, o->kernel) != 0
				      : !k->tunable)
				continue;
			rc = tile_kernel(ctx, o, &r, p->module->name, k, path,
					 text);
		}
	}
	cmd_report_list_end(&r);
	if (rc == CMD_EXIT_OK) {
		rc = cmd_report_finish(ctx, &r, TS_OK);
	} else {
		struct ts_diag rd = {0};
		cmd_report_end(&r, &rd); /* frees it; rc's error is printed */
	}
out:
	gnn_model_free(&o->learned);
	cmd_graph_free(&g);
	return rc;
}

const struct cmd cmd_tile = {
	.name = "tile",
	.summary = "Choose tile sizes for the kernels of an HLO module",
	.synopsis = "GRAPH.hlo --hw SPEC.yaml [--top K] [options]",
	.flags = CMD_NEEDS_HW | CMD_HAS_FORMAT,
	.options = tile_options,
	.opts_size = sizeof(struct tile_opts),
	.parse_opt = tile_parse_opt,
	.help = tile_help,
	.min_args = 1,
	.max_args = 1,
	.fn = tile_main,
};
