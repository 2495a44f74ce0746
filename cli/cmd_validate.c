/*
 * cmd_validate.c: `tpusim validate`: costs every row of one or more
 * measurement sets (shared/data/<set>/) with the analytic model and the
 * baselines, and reports the accuracy per kernel or op family and per set
 * (validation/val.h). Text and Markdown come from val_report_print_*;
 * CSV, JSON and YAML, and the per-row --csv file, from the output layer.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VALIDATE_MAX_SETS 16 /* --data options in one call */

struct validate_opts {
	const char *data[VALIDATE_MAX_SETS]; /* --data DIR, in order */
	int n_data;
	const char *hw;       /* --hw SPEC.yaml: one spec for every row */
	const char *hw_dir;   /* --hw-dir DIR: DIR/<gen>.yaml per row's hw */
	const char *csv;      /* --csv FILE: one line per measurement */
	bool markdown;        /* --markdown: docs/ACCURACY.md's tables */
	const char *model;    /* --model MODEL: predictions are the learned
	                         model's (hybrid for a residual model) */
};

enum {
	OPT_DATA = CMD_OPT_OWN,
	OPT_HW,
	OPT_HW_DIR,
	OPT_CSV,
	OPT_MARKDOWN,
	OPT_MODEL,
};

static const struct option validate_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"hw", required_argument, NULL, OPT_HW},
	{"hw-dir", required_argument, NULL, OPT_HW_DIR},
	{"csv", required_argument, NULL, OPT_CSV},
	{"markdown", no_argument, NULL, OPT_MARKDOWN},
	{"model", required_argument, NULL, OPT_MODEL},
	{0},
};

static int validate_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			      const char *arg)
{
	struct validate_opts *o = opts_v;
	switch (id) {
	case OPT_DATA:
		if (o->n_data == VALIDATE_MAX_SETS) {
			cmd_error(ctx, "at most %d --data options",
				  VALIDATE_MAX_SETS);
			return CMD_EXIT_USAGE;
		}
		o->data[o->n_data++] = arg;
		return CMD_EXIT_OK;
	case OPT_HW:
		o->hw = arg;
		return CMD_EXIT_OK;
	case OPT_HW_DIR:
		o->hw_dir = arg;
		return CMD_EXIT_OK;
	case OPT_CSV:
		o->csv = arg;
		return CMD_EXIT_OK;
	case OPT_MARKDOWN:
		o->markdown = true;
		return CMD_EXIT_OK;
	case OPT_MODEL:
		o->model = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void validate_help(FILE *out)
{
	fputs("Costs every measurement of each set DIR (measurements.csv + "
	      "modules/, the\nformat of shared/data/README.md) and reports "
	      "the accuracy of the model\nagainst two baselines: the plain "
	      "roofline and, for ranking tile configs,\n\"fewer tile steps is "
	      "faster\". Sets with tile configs are summarised per\nkernel "
	      "(Kendall tau-b, top-1/top-5 slowdown, tile choice vs the "
	      "compiler\ndefault), others per op family (the words of the id "
	      "before its element\ntype: layer_norm, gelu_tanh). Host-timed "
	      "rows are compared with the device\nestimate + the program's "
	      "host term (the spec's host.call_ns +\nhost.kernel_ns x kernels "
	      "(not async DMAs) + host.device_ns x (devices - 1));\na set's recorded overheads "
	      "only check that term.\n"
	      "A row the model cannot cost, or calls infeasible, is counted "
	      "and listed.\n"
	      "A set may add the columns topology (the slice a row ran on, "
	      "e.g. 16x16),\nslices (how many, default 1) and devices (the "
	      "file of its compile's device\norder, as --devices reads it): "
	      "its collectives are then costed on that\nslice; --topology, "
	      "--slices and --devices give the slice of rows without one.\n"
	      "A set column holds the spec fields a row's run changed, as "
	      "--set takes them\n(e.g. vmem.scoped_bytes=100663296, its "
	      "compile's scoped VMEM limit),\nseparated by spaces.\n\n"
	      "Options:\n"
	      "      --data DIR       a measurement set (repeatable, at least "
	      "one)\n"
	      "      --hw SPEC.yaml   one hardware spec for every row\n"
	      "      --hw-dir DIR     a spec per row from its hw column: "
	      "tpu-v3 -> DIR/v3.yaml\n"
	      "      --csv FILE       also write one line per measurement "
	      "(measured,\n"
	      "                       predicted, roofline, steps, bound, "
	      "cycles, VMEM)\n"
	      "      --markdown       print the summary as Markdown (as in "
	      "docs/ACCURACY.md)\n"
	      "      --model MODEL    predict with a learned model (tpusim "
	      "train; \"default\"\n"
	      "                       is the one shipped): the hybrid estimate "
	      "analytic x\n"
	      "                       exp(r) for a residual model; --csv then "
	      "has\n"
	      "                       analytic_ns and hybrid_ns, and "
	      "predicted_ns is the\n"
	      "                       model's\n",
	      out);
}

/* ---- tables for the output layer ------------------------------------------ */

enum {
	G_SET = 0, G_GROUP, G_KIND, G_ROWS, G_EST, G_INFEAS, G_MAPE, G_MEDAPE,
	G_ROOF_MAPE, G_ROOF_MEDAPE, G_TAU, G_TAU_ROOF, G_TAU_STEPS, G_TOP1,
	G_TOP5, G_STEPS_TOP1, G_BEST, G_CHOSEN, G_DEFAULT, G_COUNT
};

static const struct cmd_col group_cols[] = {
	[G_SET] = {"set", "set", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
	[G_GROUP] = {"group", "group", CMD_UNIT_TEXT, 0},
	[G_KIND] = {"kind", "kind", CMD_UNIT_TEXT, 0},
	[G_ROWS] = {"rows", "rows", CMD_UNIT_INT, 0},
	[G_EST] = {"estimated", "est", CMD_UNIT_INT, 0},
	[G_INFEAS] = {"infeasible", "infeas", CMD_UNIT_INT, 0},
	[G_MAPE] = {"mape", "MAPE", CMD_UNIT_FRACTION, 0},
	[G_MEDAPE] = {"median_ape", "medAPE", CMD_UNIT_FRACTION, 0},
	[G_ROOF_MAPE] = {"roofline_mape", "roofMAPE", CMD_UNIT_FRACTION, 0},
	[G_ROOF_MEDAPE] = {"roofline_median_ape", "roofMedAPE",
			   CMD_UNIT_FRACTION, 0},
	[G_TAU] = {"tau_model", "tau", CMD_UNIT_REAL, 0},
	[G_TAU_ROOF] = {"tau_roofline", "tau_roof", CMD_UNIT_REAL, 0},
	[G_TAU_STEPS] = {"tau_steps", "tau_steps", CMD_UNIT_REAL, 0},
	[G_TOP1] = {"top1_slowdown", "top1", CMD_UNIT_FRACTION, 0},
	[G_TOP5] = {"top5_slowdown", "top5", CMD_UNIT_FRACTION, 0},
	[G_STEPS_TOP1] = {"steps_top1_slowdown", "steps1", CMD_UNIT_FRACTION,
			  0},
	[G_BEST] = {"best_ns", "best", CMD_UNIT_TIME_NS, 0},
	[G_CHOSEN] = {"chosen_ns", "chosen", CMD_UNIT_TIME_NS, 0},
	[G_DEFAULT] = {"default_ns", "default", CMD_UNIT_TIME_NS, 0},
};
_Static_assert(TS_ARRAY_LEN(group_cols) == G_COUNT,
	       "group_cols must list every group column");

enum {
	R_SET = 0, R_ID, R_MODULE, R_HW, R_SPEC, R_CONFIG, R_TIMING, R_STATUS,
	R_MEASURED, R_PREDICTED, R_ANALYTIC, R_HYBRID, R_DEVICE, R_DISPATCH,
	R_ROOFLINE, R_APE,
	R_ROOF_APE, R_STEPS, R_BOUND, R_MXU, R_VPU, R_DMA, R_VMEM, R_FEASIBLE,
	R_KERNELS, R_ERROR, R_COUNT
};

static const struct cmd_col row_cols[] = {
	[R_SET] = {"set", "set", CMD_UNIT_TEXT, 0},
	[R_ID] = {"id", "id", CMD_UNIT_TEXT, 0},
	[R_MODULE] = {"module", "module", CMD_UNIT_TEXT, 0},
	[R_HW] = {"hw", "hw", CMD_UNIT_TEXT, 0},
	[R_SPEC] = {"spec", "spec", CMD_UNIT_TEXT, 0},
	[R_CONFIG] = {"config", "config", CMD_UNIT_TEXT, 0},
	[R_TIMING] = {"timing", "timing", CMD_UNIT_TEXT, 0},
	[R_STATUS] = {"status", "status", CMD_UNIT_TEXT, 0},
	[R_MEASURED] = {"measured_ns", "measured", CMD_UNIT_TIME_NS, 0},
	[R_PREDICTED] = {"predicted_ns", "predicted", CMD_UNIT_TIME_NS, 0},
	[R_ANALYTIC] = {"analytic_ns", "analytic", CMD_UNIT_TIME_NS, 0},
	[R_HYBRID] = {"hybrid_ns", "hybrid", CMD_UNIT_TIME_NS, 0},
	[R_DEVICE] = {"device_ns", "device", CMD_UNIT_TIME_NS, 0},
	[R_DISPATCH] = {"dispatch_ns", "dispatch", CMD_UNIT_TIME_NS, 0},
	[R_ROOFLINE] = {"roofline_ns", "roofline", CMD_UNIT_TIME_NS, 0},
	[R_APE] = {"ape", "APE", CMD_UNIT_FRACTION, 0},
	[R_ROOF_APE] = {"roofline_ape", "roofAPE", CMD_UNIT_FRACTION, 0},
	[R_STEPS] = {"steps", "steps", CMD_UNIT_INT, 0},
	[R_BOUND] = {"bound", "bound", CMD_UNIT_TEXT, 0},
	[R_MXU] = {"mxu_cycles", "mxu", CMD_UNIT_CYCLES, 0},
	[R_VPU] = {"vpu_cycles", "vpu", CMD_UNIT_CYCLES, 0},
	[R_DMA] = {"dma_cycles", "dma", CMD_UNIT_CYCLES, 0},
	[R_VMEM] = {"vmem_bytes", "vmem", CMD_UNIT_BYTES, 0},
	[R_FEASIBLE] = {"feasible", "feasible", CMD_UNIT_INT, 0},
	[R_KERNELS] = {"kernels", "kernels", CMD_UNIT_INT, 0},
	[R_ERROR] = {"error", "error", CMD_UNIT_TEXT, 0},
};
_Static_assert(TS_ARRAY_LEN(row_cols) == R_COUNT,
	       "row_cols must list every row column");

static enum ts_status add_group_row(struct cmd_table *t, const char *set,
				    const struct val_group *g,
				    const char *kind, bool ranking)
{
	enum ts_status st;
	if ((st = cmd_table_set_text(t, G_SET, set)) ||
	    (st = cmd_table_set_text(t, G_GROUP, g->name)) ||
	    (st = cmd_table_set_text(t, G_KIND, kind)))
		return st;
	cmd_table_set_num(t, G_ROWS, g->n_rows);
	cmd_table_set_num(t, G_EST, g->n_estimated);
	cmd_table_set_num(t, G_INFEAS, g->n_infeasible);
	cmd_table_set_num(t, G_MAPE, g->mape);
	cmd_table_set_num(t, G_MEDAPE, g->median_ape);
	cmd_table_set_num(t, G_ROOF_MAPE, g->roofline_mape);
	cmd_table_set_num(t, G_ROOF_MEDAPE, g->roofline_median_ape);
	if (!ranking)
		return TS_OK;
	cmd_table_set_num(t, G_TAU, g->tau_model);
	cmd_table_set_num(t, G_TAU_ROOF, g->tau_roofline);
	cmd_table_set_num(t, G_TAU_STEPS, g->tau_steps);
	cmd_table_set_num(t, G_TOP1, g->top1_slowdown);
	cmd_table_set_num(t, G_TOP5, g->top5_slowdown);
	cmd_table_set_num(t, G_STEPS_TOP1, g->steps_top1_slowdown);
	cmd_table_set_num(t, G_BEST, g->best_ns);
	cmd_table_set_num(t, G_CHOSEN, g->chosen_ns);
	cmd_table_set_num(t, G_DEFAULT, g->default_ns);
	return TS_OK;
}

/* The per-group table; the set line is the footer (JSON/YAML "overall"),
 * or a body row of kind "set" in CSV, which drops footers. */
static enum ts_status group_table(const struct val_report *r,
				  enum cmd_format fmt, struct cmd_table *t)
{
	const char *set = r->ds->name;
	const char *kind = r->by_kernel ? "kernel" : "family";
	enum ts_status st;
	cmd_table_init(t, "groups", "overall", group_cols, G_COUNT);
	for (int i = 0; i < r->n_groups; i++)
		if ((st = cmd_table_add_row(t)) ||
		    (st = add_group_row(t, set, &r->groups[i], kind,
					r->by_kernel)))
			return st;
	if (fmt == CMD_FORMAT_CSV) {
		if ((st = cmd_table_add_row(t)))
			return st;
	} else {
		cmd_table_begin_footer(t);
	}
	return add_group_row(t, set, &r->overall, "set", false);
}

static void report_tiles(struct cmd_report *rep, const char *key,
			 const struct val_tile_totals *tt)
{
	cmd_report_list_begin(rep, key);
	cmd_report_item_begin(rep);
	cmd_report_num(rep, "kernels", CMD_UNIT_INT, tt->n_kernels);
	cmd_report_num(rep, "best_ns", CMD_UNIT_TIME_NS, tt->best_ns);
	cmd_report_num(rep, "chosen_ns", CMD_UNIT_TIME_NS, tt->chosen_ns);
	cmd_report_num(rep, "steps_ns", CMD_UNIT_TIME_NS, tt->steps_ns);
	cmd_report_num(rep, "default_ns", CMD_UNIT_TIME_NS, tt->default_ns);
	cmd_report_item_end(rep);
	cmd_report_list_end(rep);
}

/* One set as an item of the "sets" list (JSON, YAML; CSV keeps only the
 * table rows). */
static enum ts_status report_set(struct cmd_report *rep, enum cmd_format fmt,
				 const struct val_report *r)
{
	const struct val_dataset *ds = r->ds;
	struct cmd_table t;
	enum ts_status st = group_table(r, fmt, &t);
	if (st) {
		cmd_table_free(&t);
		return st;
	}
	cmd_report_item_begin(rep);
	cmd_report_text(rep, "set", ds->name);
	cmd_report_text(rep, "spec", r->spec_names);
	cmd_report_text(rep, "group_by", r->by_kernel ? "kernel" : "family");
	cmd_report_num(rep, "rows", CMD_UNIT_INT, r->n_rows);
	cmd_report_num(rep, "errors", CMD_UNIT_INT, r->n_errors);
	cmd_report_num(rep, "infeasible", CMD_UNIT_INT, r->n_infeasible);
	cmd_report_num(rep, "host_rows", CMD_UNIT_INT, r->n_host);
	cmd_report_num(rep, "host_recorded_rows", CMD_UNIT_INT,
		       r->n_host_recorded);
	if (r->n_host_recorded)
		cmd_report_num(rep, "host_term_mape", CMD_UNIT_REAL,
			       r->host_term_mape);
	if (r->by_kernel) {
		cmd_report_num(rep, "rank_kernels", CMD_UNIT_INT,
			       r->n_rank_kernels);
		cmd_report_num(rep, "mean_tau_model", CMD_UNIT_REAL,
			       r->mean_tau_model);
		cmd_report_num(rep, "mean_tau_roofline", CMD_UNIT_REAL,
			       r->mean_tau_roofline);
		cmd_report_num(rep, "mean_tau_steps", CMD_UNIT_REAL,
			       r->mean_tau_steps);
		cmd_report_num(rep, "mean_top1_slowdown", CMD_UNIT_FRACTION,
			       r->mean_top1_slowdown);
		cmd_report_num(rep, "mean_top5_slowdown", CMD_UNIT_FRACTION,
			       r->mean_top5_slowdown);
		cmd_report_num(rep, "mean_steps_top1_slowdown",
			       CMD_UNIT_FRACTION, r->mean_steps_top1_slowdown);
		report_tiles(rep, "tiles_all", &r->tiles_all);
		report_tiles(rep, "tiles_config", &r->tiles_config);
	}
	cmd_report_table(rep, &t);
	cmd_table_free(&t);

	cmd_report_list_begin(rep, "infeasible_rows");
	for (int i = 0; i < r->n_rows; i++) {
		const struct val_row_result *res = &r->rows[i];
		if (res->status != TS_OK || res->feasible)
			continue;
		cmd_report_item_begin(rep);
		cmd_report_text(rep, "id", ds->rows[i].id);
		cmd_report_text(rep, "config", ds->rows[i].config);
		cmd_report_num(rep, "measured_ns", CMD_UNIT_TIME_NS,
			       res->measured_ns);
		cmd_report_num(rep, "vmem_bytes", CMD_UNIT_BYTES,
			       res->vmem_bytes);
		cmd_report_item_end(rep);
	}
	cmd_report_list_end(rep);
	cmd_report_list_begin(rep, "error_rows");
	for (int i = 0; i < r->n_rows; i++) {
		if (r->rows[i].status == TS_OK)
			continue;
		cmd_report_item_begin(rep);
		cmd_report_text(rep, "id", ds->rows[i].id);
		cmd_report_text(rep, "error", r->rows[i].error);
		cmd_report_item_end(rep);
	}
	cmd_report_list_end(rep);
	cmd_report_item_end(rep);
	return TS_OK;
}

/* Appends every row of one set to the --csv table. */
static enum ts_status add_rows(struct cmd_table *t, const struct val_report *r)
{
	const struct val_dataset *ds = r->ds;
	enum ts_status st;
	for (int i = 0; i < r->n_rows; i++) {
		const struct val_row *row = &ds->rows[i];
		const struct val_row_result *res = &r->rows[i];
		bool ok = res->status == TS_OK;
		if ((st = cmd_table_add_row(t)) ||
		    (st = cmd_table_set_text(t, R_SET, ds->name)) ||
		    (st = cmd_table_set_text(t, R_ID, row->id)) ||
		    (st = cmd_table_set_text(t, R_MODULE, row->module)) ||
		    (st = cmd_table_set_text(t, R_HW, row->hw)) ||
		    (st = cmd_table_set_text(t, R_CONFIG, row->config)) ||
		    (st = cmd_table_set_text(t, R_TIMING,
					     val_timing_name(row->timing))) ||
		    (st = cmd_table_set_text(
			     t, R_STATUS,
			     ok ? "ok" : ts_status_str(res->status))))
			return st;
		cmd_table_set_num(t, R_MEASURED, (double)row->runtime_ns);
		if (!ok) {
			if ((st = cmd_table_set_text(t, R_ERROR, res->error)))
				return st;
			continue;
		}
		if ((st = cmd_table_set_text(t, R_SPEC, res->spec_name)) ||
		    (st = cmd_table_set_text(t, R_BOUND,
					     hw_unit_name(res->bound))))
			return st;
		cmd_table_set_num(t, R_PREDICTED, res->predicted_ns);
		cmd_table_set_num(t, R_ANALYTIC, res->analytic_ns);
		cmd_table_set_num(t, R_HYBRID, res->hybrid_ns);
		cmd_table_set_num(t, R_DEVICE, res->device_ns);
		cmd_table_set_num(t, R_DISPATCH, res->dispatch_ns);
		cmd_table_set_num(t, R_ROOFLINE, res->roofline_ns);
		cmd_table_set_num(t, R_APE, fabs(res->predicted_ns - res->measured_ns) /
					  res->measured_ns);
		cmd_table_set_num(t, R_ROOF_APE,
			fabs(res->roofline_ns - res->measured_ns) /
				res->measured_ns);
		cmd_table_set_num(t, R_STEPS, (double)res->steps);
		cmd_table_set_num(t, R_MXU, res->mxu_cycles);
		cmd_table_set_num(t, R_VPU, res->vpu_cycles);
		cmd_table_set_num(t, R_DMA, res->dma_cycles);
		cmd_table_set_num(t, R_VMEM, res->vmem_bytes);
		cmd_table_set_num(t, R_FEASIBLE, res->feasible ? 1 : 0);
		cmd_table_set_num(t, R_KERNELS, res->n_kernels);
	}
	return TS_OK;
}

/* ---- the command ------------------------------------------------------------ */

/* Warns when --hw gives one spec to rows of another generation. */
static void check_single_spec(const struct cmd_ctx *ctx,
			      const struct val_dataset *ds,
			      const struct hw_spec *hw)
{
	for (int i = 0; i < ds->n_rows; i++) {
		const char *gen = ds->rows[i].hw;
		if (!strncmp(gen, "tpu-", 4))
			gen += 4;
		if (strcmp(gen, hw->name)) {
			fprintf(ctx->err,
				"%s: warning: %s: rows measured on %s are "
				"costed with spec %s (--hw)\n",
				ctx->prog, ds->name, ds->rows[i].hw, hw->name);
			return;
		}
	}
}

/* One set: load, cost, print. rows_tbl collects --csv lines (NULL: none). */
static int validate_set(struct cmd_ctx *ctx, const struct validate_opts *o,
			const char *dir, const struct hw_spec *single,
			const struct gnn_model *model, struct cmd_report *rep,
			struct cmd_table *rows_tbl)
{
	struct val_report_opts ro = {.model = model, .slice = ctx->slice};
	struct val_dataset ds;
	struct val_specs specs = {0};
	struct val_report r = {0};
	struct ts_diag d = {0};
	enum ts_status st = val_dataset_load(dir, &ds, &d);
	if (st == TS_OK)
		st = single ? val_specs_single(single, o->hw, &specs)
			    : val_specs_load_dir(&ds, o->hw_dir, &specs, &d);
	if (st == TS_OK && single)
		check_single_spec(ctx, &ds, single);
	if (st == TS_OK)
		st = val_report_build(&ds, &specs, &ro, &r, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		goto out;
	}
	if (o->markdown)
		st = val_report_print_markdown(&r, ctx->out);
	else if (ctx->format == CMD_FORMAT_TABLE)
		st = val_report_print_table(&r, ctx->out);
	else
		st = report_set(rep, ctx->format, &r);
	if (st == TS_OK && rows_tbl)
		st = add_rows(rows_tbl, &r);
	if (st == TS_ERR_IO)
		cmd_error(ctx, "cannot write to standard output");
	else if (st != TS_OK)
		cmd_error(ctx, "%s", ts_status_str(st));
	if (st == TS_OK && r.n_errors)
		fprintf(ctx->err,
			"%s: warning: %s: %d rows not estimated (listed in the "
			"report)\n", ctx->prog, ds.name, r.n_errors);
	if (st == TS_OK && r.n_unmodelled_modules)
		fprintf(ctx->err,
			"%s: warning: %s: %d modules have kernels not modelled, "
			"costed at zero (first: %s)\n",
			ctx->prog, ds.name, r.n_unmodelled_modules,
			r.unmodelled_example ? r.unmodelled_example : "?");
	if (st == TS_OK && r.n_fell_back)
		cmd_warn_fell_back(ctx, r.fell_back_module, r.fell_back_kernel,
				   r.n_fell_back, "rows with such a kernel");
	if (st == TS_OK && r.n_infeasible)
		fprintf(ctx->err,
			"%s: warning: %s: %d measured rows the model calls "
			"infeasible (listed in the report)\n",
			ctx->prog, ds.name, r.n_infeasible);
out:
	val_report_free(&r);
	val_specs_free(&specs);
	val_dataset_free(&ds);
	return cmd_exit_from_status(st);
}

static int validate_main(struct cmd_ctx *ctx, void *opts_v, int argc,
			 char **argv)
{
	(void)argc;
	(void)argv;
	struct validate_opts *o = opts_v;
	if (o->n_data == 0) {
		cmd_error(ctx, "--data DIR is required (e.g. --data "
			       "../shared/data/tpugraphs-tile-v3)");
		return CMD_EXIT_USAGE;
	}
	if (!o->hw == !o->hw_dir) {
		cmd_error(ctx, "give exactly one of --hw SPEC.yaml and "
			       "--hw-dir DIR");
		return CMD_EXIT_USAGE;
	}
	if (o->markdown && ctx->format != CMD_FORMAT_TABLE) {
		cmd_error(ctx, "--markdown and --format %s exclude each other",
			  cmd_format_name(ctx->format));
		return CMD_EXIT_USAGE;
	}
	const struct cmd_file ins[] = {{"--hw", o->hw, CMD_FILE},
				       {"--hw-dir", o->hw_dir, CMD_FILE_SPECS},
				       cmd_model_file(o->model, false)};
	const struct cmd_file out = {"--csv", o->csv, CMD_FILE};
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = &out, .n_outs = 1,
						   .ins = ins, .n_ins = 3,
						   .sets = o->data,
						   .n_sets = o->n_data});
	if (rc != CMD_EXIT_OK)
		return rc;
	struct hw_spec single;
	if (o->hw && (rc = cmd_load_spec(ctx, o->hw, &single)) != CMD_EXIT_OK)
		return rc;
	struct gnn_model model = {0};
	if (o->model && (rc = cmd_load_model(ctx, o->model, &model)))
		return rc;

	struct cmd_table rows_tbl;
	cmd_table_init(&rows_tbl, "rows", NULL, row_cols, R_COUNT);
	bool structured = !o->markdown && ctx->format != CMD_FORMAT_TABLE;
	struct cmd_report rep;
	if (structured) {
		cmd_report_begin(&rep, ctx->format, ctx->out);
		cmd_report_list_begin(&rep, "sets");
	}
	for (int i = 0; i < o->n_data && rc == CMD_EXIT_OK; i++)
		rc = validate_set(ctx, o, o->data[i], o->hw ? &single : NULL,
				  o->model ? &model : NULL, &rep,
				  o->csv ? &rows_tbl : NULL);
	struct ts_diag d = {0};
	if (structured) {
		cmd_report_list_end(&rep);
		enum ts_status st = cmd_report_end(&rep, &d);
		if (st != TS_OK && rc == CMD_EXIT_OK) {
			ts_diag_print(&d, ctx->err);
			rc = cmd_exit_from_status(st);
		}
	}
	if (rc == CMD_EXIT_OK && o->csv) {
		rc = cmd_write_file(ctx, o->csv, cmd_table_write_csv, &rows_tbl);
	}
	cmd_table_free(&rows_tbl);
	gnn_model_free(&model);
	return rc;
}

const struct cmd cmd_validate = {
	.name = "validate",
	.summary = "Compare estimates with measured TPU runtimes",
	.synopsis = "--data DIR [--data DIR...] (--hw SPEC.yaml | --hw-dir "
		    "DIR) [--csv FILE] [--markdown] [--model MODEL]",
	.flags = CMD_HAS_FORMAT | CMD_HAS_SLICE,
	.options = validate_options,
	.repeatable = "data",
	.opts_size = sizeof(struct validate_opts),
	.parse_opt = validate_parse_opt,
	.help = validate_help,
	.min_args = 0,
	.max_args = 0,
	.fn = validate_main,
};
