/*
 * cmd_run.c: `tpusim run GRAPH.hlo --hw SPEC.yaml`: parses the HLO file,
 * builds each module's kernel list, costs it with the analytic model (or
 * the roofline with --roofline, or one kernel under --config), and lists
 * the kernels in schedule order with the program total. --explain prints
 * one kernel's derivation instead. Options, help and command side by side
 * (cli.h explains the layout).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct run_opts {
	int64_t trip_count;        /* --trip-count; 0 when not given */
	bool has_config;           /* --config given */
	const char *config_text;   /* --config as typed */
	struct sim_tile_config config; /* --config parsed */
	const char *kernel;        /* --kernel: the kernel --config applies to */
	const char *explain;       /* --explain KERNEL, NULL if absent */
	const char *module;        /* --module NAME, NULL: every module */
	bool roofline;             /* --roofline */
	const char *model;         /* --model MODEL: hybrid estimates */
	const char *trace;         /* --trace FILE.json: the timeline */
	bool summary;              /* --summary: rolled up, not per kernel */
	const char *plots;         /* --plots DIR */
	const char *fusion;        /* --fusion POLICY; NULL: xla */
	const struct hyb_fuse_cost *fusion_cost; /* its cost (run_main) */
};

enum {
	RUN_OPT_TRIP_COUNT = CMD_OPT_OWN,
	RUN_OPT_CONFIG,
	RUN_OPT_KERNEL,
	RUN_OPT_EXPLAIN,
	RUN_OPT_MODULE,
	RUN_OPT_ROOFLINE,
	RUN_OPT_MODEL,
	RUN_OPT_TRACE,
	RUN_OPT_SUMMARY,
	RUN_OPT_PLOTS,
	RUN_OPT_FUSION,
};

static const struct option run_options[] = {
	{"trip-count", required_argument, NULL, RUN_OPT_TRIP_COUNT},
	{"config", required_argument, NULL, RUN_OPT_CONFIG},
	{"kernel", required_argument, NULL, RUN_OPT_KERNEL},
	{"explain", required_argument, NULL, RUN_OPT_EXPLAIN},
	{"module", required_argument, NULL, RUN_OPT_MODULE},
	{"roofline", no_argument, NULL, RUN_OPT_ROOFLINE},
	{"model", required_argument, NULL, RUN_OPT_MODEL},
	{"trace", required_argument, NULL, RUN_OPT_TRACE},
	{"summary", no_argument, NULL, RUN_OPT_SUMMARY},
	{"plots", required_argument, NULL, RUN_OPT_PLOTS},
	{"fusion", required_argument, NULL, RUN_OPT_FUSION},
	{0},
};

/* Largest --trip-count: beyond 1e12 runs a multiplicity stops being a
 * plausible program and double sums lose whole nanoseconds. */
#define RUN_MAX_TRIP_COUNT INT64_C(1000000000000)

static void run_help(FILE *out)
{
	fputs("Estimates every kernel of an HLO module on one TPU and lists "
	      "them in\n"
	      "execution order: index, name, kind, main op, multiplicity "
	      "(runs per\n"
	      "program, the product of enclosing loop trip counts), tile "
	      "steps, FLOPs,\n"
	      "HBM bytes read and written, MXU/VPU/DMA cycles, VMEM working "
	      "set, the\n"
	      "unit that bounds it, its time for one run, and its share of "
	      "the program\n"
	      "total. Per-kernel figures are for one run; the total row "
	      "multiplies each\n"
	      "kernel by its multiplicity. Unmodelled kernels are listed "
	      "with zero time.\n"
	      "A file holding several modules is run module by module (CSV "
	      "adds a\n"
	      "module column); --module picks one. Several inputs are run one "
	      "after\n"
	      "another, each its own report (JSON: one document per line; "
	      "YAML: one\ndocument each, after \"---\"; not CSV); \"-\" "
	      "reads\n"
	      "standard input; a folder written by XLA's --xla_dump_to runs "
	      "its modules\n"
	      "after optimizations (*.after_optimizations.txt, what the "
	      "device ran),\n"
	      "counting the other files in a note. A module without fusion "
	      "instructions\n"
	      "(unfused, as JAX or TF hand it to XLA) is costed as XLA's "
	      "fusion passes\n"
	      "would group it (header \"fusion: xla\"; `tpusim fuse` writes "
	      "that module\n"
	      "out); a compiled one as written (\"fusion: as compiled\"). "
	      "--fusion\nanalytic or hybrid decides an unfused module's "
	      "fusion by predicted time\ninstead (tpusim fuse --help says how; "
	      "hybrid uses --model, else the\nshipped model; with several "
	      "--hw, decided on the first).\n"
	      "\n"
	      "Options:\n"
	      "      --module NAME     run only module NAME of a multi-module "
	      "file\n"
	      "      --trip-count N    trip count of while loops without "
	      "known_trip_count\n"
	      "                        (default 1)\n"
	      "      --roofline        cost every kernel with the plain "
	      "roofline: the\n"
	      "                        slowest of MXU, VPU and HBM at peak "
	      "(each byte\n"
	      "                        moved once), plus the launch; the "
	      "csv, json and\n"
	      "                        yaml rows always carry it as "
	      "roofline_ns\n"
	      "      --config CFG      cost one kernel under tile config CFG, "
	      "e.g.\n"
	      "                        "
	      "'output_bounds=12x4x4x3;kernel_bounds=3x1x24x3';\n"
	      "                        a config that does not fit the kernel "
	      "or VMEM is\n"
	      "                        an error (exit 1)\n"
	      "      --kernel NAME     the kernel --config applies to "
	      "(default: the\n"
	      "                        --explain kernel, else the only "
	      "tunable kernel)\n"
	      "      --explain KERNEL  print how KERNEL's estimate is derived "
	      "instead of\n"
	      "                        the table (text only)\n"
	      "      --plots DIR       run_<module>.png into DIR (created if "
	      "absent): the\n"
	      "                        roofline of the kernels and the time "
	      "by bound unit\n"
	      "                        (with several --hw: "
	      "generations_<module>.png, the\n"
	      "                        time by kernel kind on each spec)\n"
	      "      --summary         instead of the kernel table: the FLOP "
	      "utilisation\n"
	      "                        (counted FLOPs, recompute included, over "
	      "time x peak);\n"
	      "                        where the time goes (each kernel's "
	      "exposed time:\n"
	      "                        compute, hbm-bound, collective ici and "
	      "dcn, host\n"
	      "                        offload, dma, unmodelled); then the "
	      "time rolled up\n"
	      "                        by kernel kind, by main op and by bound "
	      "unit\n"
	      "                        (kernels, time x runs, share), largest "
	      "first\n"
	      "      --trace FILE.json the program's timeline as a Chrome trace "
	      "(Perfetto,\n"
	      "                        chrome://tracing): kernels, MXU, VPU, "
	      "DMA, ICI and\n"
	      "                        async tracks; its kernel events add up "
	      "to the total\n"
	      "      --hw SPEC.yaml    (repeated) generations side by side: "
	      "each kernel's\n"
	      "                        time and bound unit on every spec, "
	      "the totals and\n"
	      "                        each spec's speed-up over the first\n"
	      "      --model MODEL     hybrid estimates: each kernel's "
	      "analytic time x the\n"
	      "                        learned correction exp(r) of MODEL "
	      "(tpusim train;\n"
	      "                        \"default\": the shipped one); the "
	      "table adds the\n"
	      "                        analytic time and the correction, "
	      "the header\n"
	      "                        how many kernels are of an op mix "
	      "the model\n"
	      "                        does not know (their correction x "
	      "its\n"
	      "                        learned_novel_trust)\n"
	      "      --fusion POLICY   how an unfused module is fused: xla "
	      "(default),\n"
	      "                        analytic or hybrid (decided by "
	      "predicted time)\n",
	      out);
}

static int run_parse_opt(const struct cmd_ctx *ctx, void *opts_, int id,
			 const char *arg)
{
	struct run_opts *o = opts_;
	switch (id) {
	case RUN_OPT_TRIP_COUNT:
		if (!cmd_parse_int64(arg, 1, RUN_MAX_TRIP_COUNT,
				     &o->trip_count)) {
			cmd_error(ctx,
				  "--trip-count: expected a whole number from "
				  "1 to 10^12, got '%s'",
				  arg);
			return CMD_EXIT_USAGE;
		}
		return CMD_EXIT_OK;
	case RUN_OPT_CONFIG: {
		struct ts_diag d = {0};
		if (sim_tile_config_parse(arg, &o->config, &d) != TS_OK) {
			/* Show the option text with a caret under the column. */
			d.file = "--config";
			if (d.col > 0) {
				d.line = 1;
				d.src = arg;
				d.src_len = strlen(arg);
			}
			ts_diag_print(&d, ctx->err);
			return CMD_EXIT_USAGE;
		}
		o->has_config = true;
		o->config_text = arg;
		return CMD_EXIT_OK;
	}
	case RUN_OPT_KERNEL:
		o->kernel = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_EXPLAIN:
		o->explain = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_MODULE:
		o->module = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_ROOFLINE:
		o->roofline = true;
		return CMD_EXIT_OK;
	case RUN_OPT_MODEL:
		o->model = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_TRACE:
		o->trace = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_SUMMARY:
		o->summary = true;
		return CMD_EXIT_OK;
	case RUN_OPT_PLOTS:
		o->plots = arg;
		return CMD_EXIT_OK;
	case RUN_OPT_FUSION:
		o->fusion = arg;
		return CMD_EXIT_OK;
	default:
		TS_ASSERT(!"run_parse_opt: unknown option id");
		return CMD_EXIT_USAGE;
	}
}

/* ---- the kernel table --------------------------------------------------- */

enum run_col {
	COL_MODULE = 0,
	COL_INDEX,
	COL_NAME,
	COL_KIND,
	COL_OP,
	COL_MULT,
	COL_STEPS,
	COL_FLOPS,
	COL_READ,
	COL_WRITTEN,
	COL_MXU,
	COL_VPU,
	COL_DMA,
	COL_VMEM,
	COL_BOUND,
	COL_TIME,
	COL_ROOFLINE,
	COL_SHARE,
	COL_MXU_UTIL,
	COL_TIME_TOTAL,
	COL_CONFIG,
	COL_ANALYTIC,   /* with --model only: the table has COL_NO_MODEL */
	COL_CORRECTION, /* columns without it */
	COL_COUNT
};
enum { COL_NO_MODEL = COL_ANALYTIC };

static const struct cmd_col run_cols[] = {
	[COL_MODULE] = {"module", "module", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
	[COL_INDEX] = {"index", "#", CMD_UNIT_INT, 0},
	[COL_NAME] = {"name", "kernel", CMD_UNIT_TEXT, 0},
	[COL_KIND] = {"kind", "kind", CMD_UNIT_TEXT, 0},
	[COL_OP] = {"main_op", "op", CMD_UNIT_TEXT, 0},
	[COL_MULT] = {"multiplicity", "mult", CMD_UNIT_REAL, 0},
	[COL_STEPS] = {"steps", "steps", CMD_UNIT_INT, 0},
	[COL_FLOPS] = {"flops", "flops", CMD_UNIT_SI, 0},
	[COL_READ] = {"bytes_read", "read", CMD_UNIT_BYTES, 0},
	[COL_WRITTEN] = {"bytes_written", "written", CMD_UNIT_BYTES, 0},
	[COL_MXU] = {"mxu_cycles", "mxu cyc", CMD_UNIT_CYCLES, 0},
	[COL_VPU] = {"vpu_cycles", "vpu cyc", CMD_UNIT_CYCLES, 0},
	[COL_DMA] = {"dma_cycles", "dma cyc", CMD_UNIT_CYCLES, 0},
	[COL_VMEM] = {"vmem_bytes", "vmem", CMD_UNIT_BYTES, 0},
	[COL_BOUND] = {"bound", "bound", CMD_UNIT_TEXT, 0},
	[COL_TIME] = {"time_ns", "time", CMD_UNIT_TIME_NS, 0},
	[COL_ROOFLINE] = {"roofline_ns", "roofline", CMD_UNIT_TIME_NS,
			  CMD_COL_NO_TABLE},
	[COL_SHARE] = {"share", "share", CMD_UNIT_FRACTION, 0},
	[COL_MXU_UTIL] = {"mxu_util", "mxu%", CMD_UNIT_FRACTION, 0},
	[COL_TIME_TOTAL] = {"time_total_ns", "x mult", CMD_UNIT_TIME_NS,
			    CMD_COL_NO_TABLE},
	[COL_CONFIG] = {"config", "config", CMD_UNIT_TEXT, CMD_COL_NO_TABLE},
	[COL_ANALYTIC] = {"analytic_ns", "analytic", CMD_UNIT_TIME_NS, 0},
	[COL_CORRECTION] = {"correction", "corr", CMD_UNIT_REAL, 0},
};
_Static_assert(TS_ARRAY_LEN(run_cols) == COL_COUNT,
	       "run_cols must describe every run_col");

static int count_unmodelled(const struct sim_program *p)
{
	int n = 0;
	for (int i = 0; i < p->n_kernels; i++)
		n += !p->kernels[i].est.modelled;
	return n;
}


/* Fills one row. Cycles, steps and VMEM exist only for the analytic
 * model; an unmodelled kernel shows its counted work and zero time.
 * roofline_ns: sim_kernel_roofline's time, the envelope the kernel's time
 * is checked against (cmd_warn_envelope). analytic_ns: the analytic time
 * when k->est holds the hybrid one (NaN: no model). */
static enum ts_status fill_row(struct cmd_table *t, const char *module,
			       int index, const struct sim_kernel *k,
			       double total_ns, bool roofline,
			       const struct hw_spec *hw, double analytic_ns)
{
	const struct sim_estimate *e = &k->est;
	enum ts_status st = cmd_table_add_row(t);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_MODULE, module);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_NAME, k->name);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_KIND,
					sim_kernel_kind_name(k->kind));
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_OP, ir_op_name(k->main_op));
	if (st != TS_OK)
		return st;
	cmd_table_set_num(t, COL_INDEX, index);
	cmd_table_set_num(t, COL_MULT, k->multiplicity);
	double time_total = e->time_ns * k->multiplicity;
	if (!e->modelled) {
		cmd_table_set_num(t, COL_FLOPS, k->work.flops);
		cmd_table_set_num(t, COL_READ, k->work.bytes_read);
		cmd_table_set_num(t, COL_WRITTEN, k->work.bytes_written);
		cmd_table_set_num(t, COL_TIME, 0.0);
		cmd_table_set_num(t, COL_TIME_TOTAL, 0.0);
		cmd_table_set_num(t, COL_SHARE, 0.0);
		return cmd_table_set_text(t, COL_BOUND, "unmodelled");
	}
	cmd_table_set_num(t, COL_FLOPS, e->flops);
	cmd_table_set_num(t, COL_READ, e->bytes_read);
	cmd_table_set_num(t, COL_WRITTEN, e->bytes_written);
	if (!roofline) {
		cmd_table_set_num(t, COL_STEPS, (double)e->steps);
		cmd_table_set_num(t, COL_MXU, e->mxu_cycles);
		cmd_table_set_num(t, COL_VPU, e->vpu_cycles);
		cmd_table_set_num(t, COL_DMA, e->dma_cycles);
		cmd_table_set_num(t, COL_VMEM, e->vmem_bytes);
	}
	cmd_table_set_num(t, COL_TIME, e->time_ns);
	struct sim_estimate rf;
	struct ts_diag rd = {0};
	if (sim_kernel_roofline(k, hw, &rf, &rd) == TS_OK)
		cmd_table_set_num(t, COL_ROOFLINE, rf.time_ns);
	cmd_table_set_num(t, COL_TIME_TOTAL, time_total);
	if (!isnan(analytic_ns)) {
		cmd_table_set_num(t, COL_ANALYTIC, analytic_ns);
		if (analytic_ns > 0)
			cmd_table_set_num(t, COL_CORRECTION,
					  e->time_ns / analytic_ns);
	}
	if (k->work.mxu_macs > 0)
		cmd_table_set_num(t, COL_MXU_UTIL, e->mxu_util);
	cmd_table_set_num(t, COL_SHARE,
			  total_ns > 0.0 ? time_total / total_ns : 0.0);
	/* a kernel costed at a config no candidate of which fits VMEM is
	 * named in a warning (cmd_warn_envelope); its bound is still the
	 * unit that bounds that config */
	st = cmd_table_set_text(t, COL_BOUND, hw_unit_name(e->bound));
	if (st == TS_OK && k->tunable && !roofline) {
		char buf[256];
		sim_tile_config_format(&e->config, buf, sizeof buf);
		st = cmd_table_set_text(t, COL_CONFIG, buf);
	}
	return st;
}

static enum ts_status fill_footer(struct cmd_table *t,
				  const struct sim_program *p, double total_ns)
{
	double flops = 0.0, rd = 0.0, wr = 0.0, mxu_busy = 0.0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		bool m = k->est.modelled;
		mxu_busy += k->est.mxu_util * k->est.time_ns * k->multiplicity;
		flops += (m ? k->est.flops : k->work.flops) * k->multiplicity;
		rd += (m ? k->est.bytes_read : k->work.bytes_read) *
		      k->multiplicity;
		wr += (m ? k->est.bytes_written : k->work.bytes_written) *
		      k->multiplicity;
	}
	enum ts_status st = cmd_table_begin_footer(t);
	if (st == TS_OK)
		st = cmd_table_set_text(t, COL_NAME, "total");
	cmd_table_set_num(t, COL_FLOPS, flops);
	cmd_table_set_num(t, COL_READ, rd);
	cmd_table_set_num(t, COL_WRITTEN, wr);
	cmd_table_set_num(t, COL_TIME, total_ns);
	cmd_table_set_num(t, COL_TIME_TOTAL, total_ns);
	cmd_table_set_num(t, COL_SHARE, total_ns > 0.0 ? 1.0 : 0.0);
	/* the program's: kernels' utilisations weighted by their time */
	cmd_table_set_num(t, COL_MXU_UTIL,
			  total_ns > 0.0 ? mxu_busy / total_ns : 0.0);
	return st;
}

/* The --topology slice in the report's header (none: nothing). */
static void report_slice(struct cmd_report *r, const struct cmd_ctx *ctx)
{
	char shape[64];
	if (!ctx->slice.n_dims)
		return;
	hw_slice_format(&ctx->slice, shape, sizeof shape);
	cmd_report_text(r, "topology", shape);
}

/* ---- finding modules and kernels ---------------------------------------- */

/* Prints "  NOUN: a, b, c" for the kernels of the programs (tunable ones
 * only if asked), at most 40 names. */
static void list_kernels(const struct cmd_ctx *ctx, const char *noun,
			 const struct sim_program *progs, int n_progs,
			 bool only_tunable)
{
	enum { MAX_LISTED = 40 };
	int listed = 0, more = 0;
	fprintf(ctx->err, "  %s:", noun);
	for (int m = 0; m < n_progs; m++) {
		for (int i = 0; i < progs[m].n_kernels; i++) {
			const struct sim_kernel *k = &progs[m].kernels[i];
			if (only_tunable && !k->tunable)
				continue;
			if (listed == MAX_LISTED) {
				more++;
				continue;
			}
			fprintf(ctx->err, "%s %s", listed ? "," : "", k->name);
			listed++;
		}
	}
	if (listed == 0)
		fputs(" (none)", ctx->err);
	if (more)
		fprintf(ctx->err, " ... and %d more", more);
	fputc('\n', ctx->err);
}

/* Finds kernel `name` in exactly one program; prints why not otherwise. */
static struct sim_kernel *find_kernel(const struct cmd_ctx *ctx,
				      const char *option, const char *name,
				      struct sim_program *progs, int n_progs)
{
	struct sim_kernel *found = NULL;
	int n_found = 0;
	for (int m = 0; m < n_progs; m++) {
		for (int i = 0; i < progs[m].n_kernels; i++) {
			if (strcmp(progs[m].kernels[i].name, name) == 0) {
				if (!n_found)
					found = &progs[m].kernels[i];
				n_found++;
				break;
			}
		}
	}
	if (n_found == 1)
		return found;
	if (n_found > 1) {
		cmd_error(ctx, "%s: kernel '%s' is in %d modules; pick one "
			       "with --module",
			  option, name, n_found);
		return NULL;
	}
	cmd_error(ctx, "%s: no kernel named '%s'", option, name);
	list_kernels(ctx, "kernels", progs, n_progs, false);
	return NULL;
}

/* The kernel --config applies to: --kernel, else --explain's, else the
 * only tunable kernel. *rc is set when there is none. */
static struct sim_kernel *config_kernel(const struct cmd_ctx *ctx,
					const struct run_opts *o,
					struct sim_program *progs, int n_progs,
					int *rc)
{
	const char *name = o->kernel ? o->kernel : o->explain;
	if (name) {
		struct sim_kernel *k = find_kernel(
			ctx, o->kernel ? "--kernel" : "--explain", name, progs,
			n_progs);
		if (!k)
			*rc = CMD_EXIT_INPUT;
		return k;
	}
	struct sim_kernel *only = NULL;
	int n_tunable = 0;
	for (int m = 0; m < n_progs; m++) {
		for (int i = 0; i < progs[m].n_kernels; i++) {
			if (progs[m].kernels[i].tunable) {
				only = &progs[m].kernels[i];
				n_tunable++;
			}
		}
	}
	if (n_tunable == 1)
		return only;
	cmd_error(ctx, "--config: %s tunable kernels; name one with --kernel",
		  n_tunable ? "several" : "no");
	list_kernels(ctx, "tunable kernels", progs, n_progs, true);
	*rc = n_tunable ? CMD_EXIT_USAGE : CMD_EXIT_INPUT;
	return NULL;
}

/* ---- costing ------------------------------------------------------------ */

/* Roofline for every kernel; unmodelled kernels keep zero time. */
static enum ts_status estimate_roofline(struct sim_program *p,
					const struct hw_spec *hw,
					struct ts_diag *d)
{
	for (int i = 0; i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		memset(&k->est, 0, sizeof k->est);
		if (k->kind == SIM_KERNEL_UNMODELLED)
			continue;
		k->est.modelled = true;
		k->est.feasible = true;
		enum ts_status st = sim_kernel_roofline(k, hw, &k->est, d);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}

/* Re-costs k under --config; a config that does not fit is bad input. */
static int apply_config(const struct cmd_ctx *ctx, const struct run_opts *o,
			struct sim_kernel *k)
{
	struct sim_estimate est = {0};
	struct ts_diag d = {0};
	enum ts_status st = sim_kernel_estimate(k, &ctx->hw, &o->config, &est,
						&d);
	if (st == TS_ERR_NOMEM) {
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_IO;
	}
	if (st != TS_OK) {
		cmd_error(ctx, "--config '%s' does not fit kernel '%s': %s",
			  o->config_text, k->name, d.msg);
		return CMD_EXIT_INPUT;
	}
	if (!est.feasible) {
		cmd_error(ctx,
			  "--config '%s' is infeasible for kernel '%s': its "
			  "double-buffered working set of %.0f bytes exceeds "
			  "the scoped VMEM (%.0f bytes on %s)",
			  o->config_text, k->name, est.vmem_bytes,
			  ctx->hw.vmem_scoped_bytes, ctx->hw.name);
		return CMD_EXIT_INPUT;
	}
	k->est = est;
	return CMD_EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

/* Each async pair: its work, how much of it the work scheduled between
 * start and done hides, and how long it queued behind earlier transfers
 * on its link (sim_program_total). */
static void report_async(struct cmd_report *r, const struct sim_program *p)
{
	if (p->n_async == 0)
		return;
	cmd_report_list_begin(r, "async");
	for (int i = 0; i < p->n_async; i++) {
		const struct sim_async *a = &p->async[i];
		if (p->kernels[a->first].idle)
			continue;
		cmd_report_item_begin(r);
		cmd_report_text(r, "start", a->start->name);
		cmd_report_text(r, "done", a->done->name);
		cmd_report_num(r, "async_ns", CMD_UNIT_TIME_NS, a->async_ns);
		cmd_report_num(r, "hidden_ns", CMD_UNIT_TIME_NS, a->hidden_ns);
		cmd_report_num(r, "queued_ns", CMD_UNIT_TIME_NS, a->queued_ns);
		cmd_report_item_end(r);
	}
	cmd_report_list_end(r);
}

/* Each while loop: its trip count and whether it was known, derived from
 * the induction variable, or assumed. */
static void report_loops(struct cmd_report *r, const struct sim_program *p)
{
	if (p->n_loops == 0)
		return;
	cmd_report_list_begin(r, "loops");
	for (int i = 0; i < p->n_loops; i++) {
		const struct sim_loop *l = &p->loops[i];
		cmd_report_item_begin(r);
		cmd_report_text(r, "loop", l->instr->name);
		cmd_report_num(r, "trip_count", CMD_UNIT_INT,
			       (double)l->trip_count);
		cmd_report_text(r, "trip_count_source",
				sim_trip_source_name(l->source));
		cmd_report_item_end(r);
	}
	cmd_report_list_end(r);
}

/* ---- --summary: the time rolled up ---------------------------------------- */

#define SUMMARY_MAX_KEYS 256

struct rollup {
	int n;
	struct rollup_row {
		const char *key;
		int kernels;
		double ns;
	} row[SUMMARY_MAX_KEYS];
};

static void rollup_add(struct rollup *u, const char *key, double ns)
{
	int i = 0;
	while (i < u->n && strcmp(u->row[i].key, key))
		i++;
	if (i == u->n) {
		if (u->n == SUMMARY_MAX_KEYS)
			i = u->n - 1; /* the rest joins the last key */
		else
			u->row[u->n++].key = key;
	}
	u->row[i].kernels++;
	u->row[i].ns += ns;
}

enum { S_GROUP = 0, S_KERNELS, S_TIME, S_SHARE, S_COUNT };

/* One rollup as a table keyed `key`, largest time first. */
static enum ts_status summary_table(struct cmd_report *r, const char *key,
				    const char *title, struct rollup *u,
				    double total)
{
	const struct cmd_col cols[S_COUNT] = {
		[S_GROUP] = {title, title, CMD_UNIT_TEXT, 0},
		[S_KERNELS] = {"kernels", "kernels", CMD_UNIT_INT, 0},
		[S_TIME] = {"time_ns", "time", CMD_UNIT_TIME_NS, 0},
		[S_SHARE] = {"share", "share", CMD_UNIT_FRACTION, 0},
	};
	/* selection sort: a few dozen keys at most in practice */
	for (int i = 0; i < u->n; i++)
		for (int j = i + 1; j < u->n; j++)
			if (u->row[j].ns > u->row[i].ns) {
				struct rollup_row tmp = u->row[i];
				u->row[i] = u->row[j];
				u->row[j] = tmp;
			}
	struct cmd_table t;
	cmd_table_init(&t, key, NULL, cols, S_COUNT);
	enum ts_status st = TS_OK;
	for (int i = 0; i < u->n && !st; i++) {
		if ((st = cmd_table_add_row(&t)) ||
		    (st = cmd_table_set_text(&t, S_GROUP, u->row[i].key)))
			break;
		cmd_table_set_num(&t, S_KERNELS, u->row[i].kernels);
		cmd_table_set_num(&t, S_TIME, u->row[i].ns);
		cmd_table_set_num(&t, S_SHARE,
				  total > 0 ? u->row[i].ns / total : 0);
	}
	if (!st)
		cmd_report_table(r, &t);
	cmd_table_free(&t);
	return st;
}

/* The program's time by kernel kind, main op and bound unit (each kernel's
 * time x runs; the shares are of the sum, which the async overlap can
 * make exceed the program time). */
static enum ts_status summary_tables(struct cmd_report *r,
				     const struct sim_program *p)
{
	struct rollup by[3] = {{0}};
	double sum = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		double ns = k->est.time_ns * k->multiplicity;
		sum += ns;
		rollup_add(&by[0], sim_kernel_kind_name(k->kind), ns);
		rollup_add(&by[1], ir_op_name(k->main_op), ns);
		rollup_add(&by[2], k->est.modelled ? hw_unit_name(k->est.bound)
						   : "unmodelled",
			   ns);
	}
	enum ts_status st = summary_table(r, "by_kind", "kind", &by[0], sum);
	if (!st)
		st = summary_table(r, "by_op", "op", &by[1], sum);
	if (!st)
		st = summary_table(r, "by_bound", "bound", &by[2], sum);
	return st;
}

/* Where the program's time goes: each kernel's exposed time
 * (sim_kernel_exposed_ns: what it adds to the total, after the async
 * overlap; the rows add up to the total) by what bounds it:
 *   collective ici / dcn   a collective's, split by its DCN share of its
 *                          time (sim_collective_ici's dcn_ns; no slice:
 *                          all ICI)
 *   host offload           an async copy to or from host memory (its
 *                          bytes cross PCIe: sim_dma_host_bytes)
 *   dma                    another async copy
 *   hbm-bound              a kernel whose bound unit is HBM
 *   compute                a kernel bound by the MXU, the VPU or its
 *                          fixed overheads
 *   unmodelled             (costed at zero)
 * shares of the program total. */
static enum ts_status time_table(struct cmd_report *r,
				 const struct sim_program *p,
				 const struct hw_spec *hw, double total)
{
	struct rollup u = {0};
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		double exposed = sim_kernel_exposed_ns(p, i);
		if (!k->est.modelled) {
			rollup_add(&u, "unmodelled", exposed);
		} else if (k->kind == SIM_KERNEL_COLLECTIVE) {
			struct hw_ici_cost c;
			sim_collective_ici(k, hw, &c, NULL);
			double dcn = k->est.time_ns > 0
					     ? exposed *
						       fmin(1, c.dcn_ns / k->est.time_ns)
					     : 0;
			rollup_add(&u, "collective ici", exposed - dcn);
			if (dcn > 0)
				rollup_add(&u, "collective dcn", dcn);
		} else if (k->dma) {
			rollup_add(&u, sim_dma_host_bytes(k) > 0 ? "host offload"
								 : "dma",
				   exposed);
		} else {
			rollup_add(&u, k->est.bound == HW_UNIT_HBM ? "hbm-bound"
								   : "compute",
				   exposed);
		}
	}
	return summary_table(r, "time", "where", &u, total);
}

/*
 * FLOP utilisation of the program on hw:
 *   sum over kernels of flops x runs / (total_ns x 1e-9 x hw_spec_peak_flops)
 * flops: the kernels' counted FLOPs (cost.c: 2 per MAC and the VPU's
 * element ops), recomputation included: a hardware FLOP utilisation; a
 * published MFU counts the model's FLOPs only (no remat recompute), so it
 * is at or below this for the same time. Peak: bf16, one program.
 */
static double flop_utilization(const struct sim_program *p,
			       const struct hw_spec *hw, double total)
{
	double flops = 0, peak = hw_spec_peak_flops(hw);
	for (int i = 0; i < p->n_kernels; i++)
		flops += p->kernels[i].est.flops * p->kernels[i].multiplicity;
	return total > 0 && peak > 0 ? flops / (total * 1e-9 * peak) : 0;
}

/* What apply_model keeps for the report. */
struct model_view {
	double **analytic;  /* [m][i]: kernel i of program m's analytic time,
	                       replaced by the hybrid one */
	int *n_novel;       /* [m]: program m's kernels of an op mix the
	                       model does not know (hyb_novel) */
	double novel_trust; /* the model's scale of their correction */
};

static void model_view_free(struct model_view *v, int n_progs)
{
	for (int m = 0; v->analytic && m < n_progs; m++)
		ts_free(v->analytic[m]);
	ts_free(v->analytic);
	ts_free(v->n_novel);
}

/* mv: NULL without a model. */
static int report_programs(struct cmd_ctx *ctx, const struct run_opts *o,
			   const char *path, struct sim_program *progs,
			   int n_progs, const struct sim_kernel *cfg_kernel,
			   const struct model_view *mv)
{
	double *const *analytic = mv ? mv->analytic : NULL;
	struct cmd_report r;
	cmd_report_begin(&r, ctx->format, ctx->out);
	cmd_report_text(&r, "file", path);
	cmd_report_text(&r, "hw", ctx->hw.name);
	if (ctx->hw_set[0])
		cmd_report_text(&r, "hw_set", ctx->hw_set);
	report_slice(&r, ctx);
	cmd_report_text(&r, "model", o->roofline ? "roofline"
				     : o->model  ? "hybrid"
						 : "analytic");
	if (o->model)
		cmd_report_text(&r, "learned_model", o->model);
	if (mv && mv->n_novel)
		cmd_report_num(&r, "learned_novel_trust", CMD_UNIT_REAL,
			       mv->novel_trust);
	if (cfg_kernel) {
		cmd_report_text(&r, "config", o->config_text);
		cmd_report_text(&r, "config_kernel", cfg_kernel->name);
	}
	cmd_report_list_begin(&r, "modules");
	enum ts_status st = TS_OK;
	for (int m = 0; m < n_progs && st == TS_OK; m++) {
		struct sim_program *p = &progs[m];
		double total = sim_program_total(p);
		struct cmd_table t;
		cmd_table_init(&t, "kernels", "total", run_cols,
			       analytic ? COL_COUNT : COL_NO_MODEL);
		for (int i = 0; i < p->n_kernels && st == TS_OK; i++)
			if (!p->kernels[i].idle)
				st = fill_row(&t, p->module->name, i,
					      &p->kernels[i], total,
					      o->roofline, &ctx->hw,
					      analytic ? analytic[m][i] : NAN);
		if (st == TS_OK)
			st = fill_footer(&t, p, total);
		if (st == TS_OK) {
			cmd_report_item_begin(&r);
			cmd_report_text(&r, "module", p->module->name);
			char fusion[96] = "as compiled";
			if (p->fused_xla && p->fusion_flips)
				snprintf(fusion, sizeof fusion,
					 "%s (unfused module; %d decisions "
					 "differ from xla)", p->fusion_policy,
					 p->fusion_flips);
			else if (p->fused_xla)
				snprintf(fusion, sizeof fusion,
					 "%s (unfused module)", p->fusion_policy);
			cmd_report_text(&r, "fusion", fusion);
			int idle = sim_program_idle_copies(p); /* not listed */
			cmd_report_num(&r, "n_kernels", CMD_UNIT_INT,
				       p->n_kernels - idle);
			if (idle)
				cmd_report_num(&r, "n_idle_copies",
					       CMD_UNIT_INT, idle);
			cmd_report_num(&r, "n_unmodelled", CMD_UNIT_INT,
				       count_unmodelled(p));
			if (mv && mv->n_novel)
				cmd_report_num(&r, "n_novel_op_mix",
					       CMD_UNIT_INT, mv->n_novel[m]);
			cmd_report_num(&r, "n_assumed_trip_counts",
				       CMD_UNIT_INT, p->n_assumed_trip_counts);
			if (o->summary) {
				cmd_report_num(&r, "time_ns", CMD_UNIT_TIME_NS,
					       total);
				cmd_report_num(&r, "flop_utilization",
					       CMD_UNIT_REAL,
					       flop_utilization(p, &ctx->hw, total));
				st = time_table(&r, p, &ctx->hw, total);
				if (!st)
					st = summary_tables(&r, p);
			} else {
				cmd_report_table(&r, &t);
			}
			report_loops(&r, p);
			report_async(&r, p);
			cmd_report_item_end(&r);
		}
		cmd_table_free(&t);
	}
	cmd_report_list_end(&r);
	return cmd_report_finish(ctx, &r, st);
}

/* Replaces every kernel's time by its hybrid one, keeping the analytic
 * times in mv (the report totals them as it totals analytic times:
 * sim_program_total, async overlap included) and, for a residual model,
 * counting the kernels of a novel op mix. A kernel whose learned time is
 * not finite keeps its analytic one, with a warning. */
static int apply_model(const struct cmd_ctx *ctx, const struct gnn_model *m,
		       struct sim_program *progs, int n_progs,
		       struct model_view *mv)
{
	mv->analytic = ts_calloc((size_t)n_progs, sizeof *mv->analytic);
	if (!mv->analytic)
		goto nomem;
	if (m->kind == GNN_RESIDUAL &&
	    !(mv->n_novel = ts_calloc((size_t)n_progs, sizeof *mv->n_novel)))
		goto nomem;
	mv->novel_trust = m->novel_trust;
	for (int p = 0; p < n_progs; p++) {
		struct sim_program *pr = &progs[p];
		double *a = ts_calloc((size_t)pr->n_kernels + 1, sizeof *a);
		if (!(mv->analytic[p] = a))
			goto nomem;
		for (int i = 0; i < pr->n_kernels; i++) {
			struct sim_kernel *k = &pr->kernels[i];
			struct hyb_embedding e;
			a[i] = k->est.time_ns;
			if (!k->est.modelled || !(k->est.time_ns > 0))
				continue;
			if (hyb_embed(m, k, &e) != TS_OK)
				goto nomem;
			bool fell_back = false;
			k->est.time_ns = hyb_kernel_predict(
				m, &e, k, &k->est, &ctx->hw, false, &fell_back);
			if (fell_back)
				cmd_warn_fell_back(ctx, pr->module->name,
						   k->name, 1, NULL);
			if (mv->n_novel)
				mv->n_novel[p] += hyb_novel(m, &e);
		}
	}
	return CMD_EXIT_OK;
nomem:
	cmd_error(ctx, "out of memory");
	return CMD_EXIT_IO;
}

/* ---- generations side by side (several --hw) ------------------------------ */

enum { G_MODULE = 0, G_INDEX, G_NAME, G_KIND, G_OP, G_MULT, G_FIXED };

/* One row per kernel with its time and bound unit on each spec, the
 * program totals as the footer, then each spec's speed-up over the first
 * (total on the first / total on it). */
static int report_generations(struct cmd_ctx *ctx, const char *path,
			      struct sim_program *progs, int n_progs,
			      const char *plots)
{
	int n_hw = 1 + ctx->n_more_hw;
	const struct hw_spec *hw[CMD_MAX_HW];
	hw[0] = &ctx->hw;
	for (int i = 1; i < n_hw; i++)
		hw[i] = &ctx->more_hw[i - 1];
	struct cmd_col cols[G_FIXED + 2 * CMD_MAX_HW] = {
		[G_MODULE] = {"module", "module", CMD_UNIT_TEXT, CMD_COL_CSV_ONLY},
		[G_INDEX] = {"index", "#", CMD_UNIT_INT, 0},
		[G_NAME] = {"name", "kernel", CMD_UNIT_TEXT, 0},
		[G_KIND] = {"kind", "kind", CMD_UNIT_TEXT, 0},
		[G_OP] = {"main_op", "op", CMD_UNIT_TEXT, 0},
		[G_MULT] = {"multiplicity", "mult", CMD_UNIT_REAL, 0},
	};
	char keys[2 * CMD_MAX_HW][2][64];
	for (int i = 0; i < n_hw; i++) {
		snprintf(keys[2 * i][0], 64, "time_ns_%s", hw[i]->name);
		snprintf(keys[2 * i][1], 64, "%s", hw[i]->name);
		snprintf(keys[2 * i + 1][0], 64, "bound_%s", hw[i]->name);
		snprintf(keys[2 * i + 1][1], 64, "bound");
		cols[G_FIXED + 2 * i] = (struct cmd_col){
			keys[2 * i][0], keys[2 * i][1], CMD_UNIT_TIME_NS, 0};
		cols[G_FIXED + 2 * i + 1] = (struct cmd_col){
			keys[2 * i + 1][0], keys[2 * i + 1][1], CMD_UNIT_TEXT, 0};
	}
	struct cmd_report r;
	cmd_report_begin(&r, ctx->format, ctx->out);
	cmd_report_text(&r, "file", path);
	char names[CMD_MAX_HW * (HW_NAME_MAX + 2)] = "";
	for (int i = 0; i < n_hw; i++) {
		strcat(names, i ? ", " : "");
		strcat(names, hw[i]->name);
	}
	cmd_report_text(&r, "hw", names);
	if (ctx->hw_set[0])
		cmd_report_text(&r, "hw_set", ctx->hw_set);
	report_slice(&r, ctx);
	cmd_report_text(&r, "model", "analytic");
	cmd_report_list_begin(&r, "modules");
	enum ts_status st = TS_OK;
	int rc = CMD_EXIT_OK;
	for (int m = 0; m < n_progs && rc == CMD_EXIT_OK; m++) {
		struct sim_program *p = &progs[m];
		double total[CMD_MAX_HW];
		double *t = ts_calloc((size_t)p->n_kernels * n_hw + 1, sizeof *t);
		enum hw_unit *b = ts_calloc((size_t)p->n_kernels * n_hw + 1,
					    sizeof *b);
		if (!t || !b) {
			ts_free(t);
			ts_free(b);
			cmd_error(ctx, "out of memory");
			rc = CMD_EXIT_IO;
			break;
		}
		double by_kind[CMD_MAX_HW * SIM_KERNEL_KIND_COUNT] = {0};
		const char *hw_names[CMD_MAX_HW];
		for (int g = 0; g < n_hw && rc == CMD_EXIT_OK; g++) {
			struct ts_diag d = {0};
			hw_names[g] = hw[g]->name;
			if (sim_program_estimate(p, hw[g], &d) != TS_OK) {
				cmd_diag(ctx, &d, NULL, NULL, 0);
				rc = CMD_EXIT_INPUT;
				break;
			}
			total[g] = sim_program_total(p);
			for (int k = 0; k < p->n_kernels; k++) {
				const struct sim_kernel *kn = &p->kernels[k];
				t[(size_t)k * n_hw + g] = kn->est.time_ns;
				b[(size_t)k * n_hw + g] = kn->est.bound;
				by_kind[g * SIM_KERNEL_KIND_COUNT + kn->kind] +=
					kn->est.time_ns * kn->multiplicity;
			}
		}
		if (rc == CMD_EXIT_OK && plots)
			rc = cmd_plot_generations(ctx, plots, p->module->name,
						  n_hw, hw_names, by_kind);
		struct cmd_table tb;
		cmd_table_init(&tb, "kernels", "total", cols, G_FIXED + 2 * n_hw);
		for (int k = 0; rc == CMD_EXIT_OK && !st && k < p->n_kernels; k++) {
			const struct sim_kernel *kn = &p->kernels[k];
			if ((st = cmd_table_add_row(&tb)) ||
			    (st = cmd_table_set_text(&tb, G_MODULE, p->module->name)) ||
			    (st = cmd_table_set_text(&tb, G_NAME, kn->name)) ||
			    (st = cmd_table_set_text(&tb, G_KIND,
						     sim_kernel_kind_name(kn->kind))) ||
			    (st = cmd_table_set_text(&tb, G_OP,
						     ir_op_name(kn->main_op))))
				break;
			cmd_table_set_num(&tb, G_INDEX, k);
			cmd_table_set_num(&tb, G_MULT, kn->multiplicity);
			for (int g = 0; g < n_hw && !st; g++) {
				cmd_table_set_num(&tb, G_FIXED + 2 * g,
						  t[(size_t)k * n_hw + g]);
				st = cmd_table_set_text(
					&tb, G_FIXED + 2 * g + 1,
					hw_unit_name(b[(size_t)k * n_hw + g]));
			}
		}
		if (rc == CMD_EXIT_OK && !st && !(st = cmd_table_begin_footer(&tb)))
			st = cmd_table_set_text(&tb, G_NAME, "total");
		for (int g = 0; rc == CMD_EXIT_OK && !st && g < n_hw; g++)
			cmd_table_set_num(&tb, G_FIXED + 2 * g, total[g]);
		if (rc == CMD_EXIT_OK && !st) {
			cmd_report_item_begin(&r);
			cmd_report_text(&r, "module", p->module->name);
			cmd_report_table(&r, &tb);
			cmd_report_list_begin(&r, "speedup");
			for (int g = 1; g < n_hw; g++) {
				cmd_report_item_begin(&r);
				cmd_report_text(&r, "hw", hw[g]->name);
				cmd_report_num(&r, "vs_first", CMD_UNIT_REAL,
					       total[g] > 0 ? total[0] / total[g]
							    : NAN);
				cmd_report_item_end(&r);
			}
			cmd_report_list_end(&r);
			cmd_report_item_end(&r);
		}
		cmd_table_free(&tb);
		ts_free(t);
		ts_free(b);
	}
	cmd_report_list_end(&r);
	if (rc != CMD_EXIT_OK) {
		struct ts_diag d = {0};
		cmd_report_end(&r, &d); /* frees it; rc's error is printed */
		return rc;
	}
	return cmd_report_finish(ctx, &r, st);
}

/* One input file: cost its programs and report them. */
static int run_file(struct cmd_ctx *ctx, const struct run_opts *o,
		    const struct gnn_model *model, const char *path)
{
	struct model_view mv = {0};
	int rc;
	struct sim_program_opts popts = {.default_trip_count = o->trip_count};
	struct cmd_graph g;
	rc = cmd_graph_load(ctx, path, o->module, &popts, o->fusion_cost, &g);
	if (rc != CMD_EXIT_OK)
		goto out;
	if (strcmp(path, "-") == 0)
		path = "<stdin>";
	struct sim_program *progs = g.progs;
	int n_progs = g.n_progs;
	const char *text = g.text;
	struct ts_diag d = {0};
	enum ts_status st;

	if (ctx->n_more_hw > 0) {
		if (o->plots && (rc = cmd_out_dir(ctx, "--plots", o->plots)))
			goto out;
		rc = report_generations(ctx, path, progs, n_progs, o->plots);
		goto out;
	}
	struct sim_kernel *cfg_kernel = NULL;
	if (o->has_config) {
		cfg_kernel = config_kernel(ctx, o, progs, n_progs, &rc);
		if (!cfg_kernel)
			goto out;
	}
	if (o->explain) {
		struct sim_kernel *k =
			find_kernel(ctx, "--explain", o->explain, progs, n_progs);
		if (!k) {
			rc = CMD_EXIT_INPUT;
			goto out;
		}
		st = sim_kernel_explain(k, &ctx->hw,
					k == cfg_kernel ? &o->config : NULL,
					ctx->out, &d);
		if (st != TS_OK) {
			cmd_diag(ctx, &d, path, text, strlen(text));
			rc = cmd_exit_from_status(st);
		}
		goto out;
	}

	for (int m = 0; m < n_progs; m++) {
		st = o->roofline ? estimate_roofline(&progs[m], &ctx->hw, &d) :
				   sim_program_estimate(&progs[m], &ctx->hw, &d);
		if (st != TS_OK) {
			cmd_diag(ctx, &d, path, text, strlen(text));
			rc = cmd_exit_from_status(st);
			goto out;
		}
		cmd_warn_untiled(ctx, &progs[m], &ctx->hw);
		cmd_warn_low_mxu(ctx, &progs[m], &ctx->hw);
		if (!o->roofline)
			cmd_warn_envelope(ctx, &progs[m], &ctx->hw);
	}
	if (cfg_kernel) {
		rc = apply_config(ctx, o, cfg_kernel);
		if (rc != CMD_EXIT_OK)
			goto out;
	}
	if (model && (rc = apply_model(ctx, model, progs, n_progs, &mv)))
		goto out;
	rc = report_programs(ctx, o, path, progs, n_progs, cfg_kernel,
			     model ? &mv : NULL);
	if (rc == CMD_EXIT_OK && o->trace)
		rc = cmd_write_trace(ctx, o->trace, progs, n_progs,
				     &ctx->hw);
	if (rc == CMD_EXIT_OK && o->plots) {
		rc = cmd_out_dir(ctx, "--plots", o->plots);
		if (rc == CMD_EXIT_OK)
			rc = cmd_plot_run(ctx, o->plots, progs, n_progs, &ctx->hw);
	}
out:
	model_view_free(&mv, g.n_progs);
	cmd_graph_free(&g);
	return rc;
}


static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of an XLA dump folder run reads (run_dump_dir). */
#define RUN_DUMP_SUFFIX ".after_optimizations.txt"

/* A folder written by XLA's --xla_dump_to: its modules after
 * optimizations (files named *.after_optimizations.txt, what ran), in
 * name order; the other files (before optimizations, buffer assignments,
 * ...) are counted in a note. */
static int run_dump_dir(struct cmd_ctx *ctx, const struct run_opts *o,
			const struct gnn_model *model, const char *dir)
{
	static const char suffix[] = RUN_DUMP_SUFFIX;
	DIR *dp = opendir(dir);
	if (!dp) {
		cmd_error(ctx, "%s: cannot read the folder: %s", dir,
			  strerror(errno));
		return CMD_EXIT_IO;
	}
	char **names = NULL;
	int n = 0, cap = 0, other = 0, rc = CMD_EXIT_OK;
	struct dirent *de;
	while ((de = readdir(dp)) && rc == CMD_EXIT_OK) {
		size_t l = strlen(de->d_name), sl = sizeof suffix - 1;
		if (de->d_name[0] == '.')
			continue;
		if (l <= sl || strcmp(de->d_name + l - sl, suffix)) {
			other++;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **q = ts_realloc(names, (size_t)cap * sizeof *q);
			if (!q) {
				rc = CMD_EXIT_IO;
				break;
			}
			names = q;
		}
		if (!(names[n] = ts_strdup(de->d_name))) {
			rc = CMD_EXIT_IO;
			break;
		}
		n++;
	}
	closedir(dp);
	if (rc != CMD_EXIT_OK)
		cmd_error(ctx, "out of memory");
	else if (n == 0) {
		cmd_error(ctx, "%s: no *%s (a folder written by XLA's "
			       "--xla_dump_to holds one per module)",
			  dir, suffix);
		rc = CMD_EXIT_INPUT;
	} else {
		qsort(names, (size_t)n, sizeof *names, cmp_names);
		fprintf(ctx->err,
			"%s: note: %s: %d module%s after optimizations; %d other "
			"file%s (before optimizations, buffer assignments, ...) "
			"not run\n",
			ctx->prog, dir, n, n == 1 ? "" : "s", other,
			other == 1 ? "" : "s");
	}
	for (int i = 0; i < n && rc == CMD_EXIT_OK; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		rc = run_file(ctx, o, model, path);
	}
	for (int i = 0; i < n; i++)
		ts_free(names[i]);
	ts_free(names);
	return rc;
}

/* The name of a spec given twice among several --hw, or NULL. */
static const char *spec_twice(const struct cmd_ctx *ctx)
{
	for (int i = 0; i < ctx->n_more_hw; i++) {
		const char *name = ctx->more_hw[i].name;
		if (!strcmp(name, ctx->hw.name))
			return name;
		for (int j = 0; j < i; j++)
			if (!strcmp(name, ctx->more_hw[j].name))
				return name;
	}
	return NULL;
}

/* An argument naming a folder: an XLA dump to read (run_dump_dir). */
static bool is_dump_dir(const char *arg)
{
	struct stat sb;
	return strcmp(arg, "-") != 0 && stat(arg, &sb) == 0 &&
	       S_ISDIR(sb.st_mode);
}

static int run_main(struct cmd_ctx *ctx, void *opts_, int argc, char **argv)
{
	struct run_opts *o = opts_;
	const struct cmd_file outs[] = {
		{"--trace", o->trace, CMD_FILE},
		{"--plots", o->plots, cmd_plot_run_files},
		{"--plots", o->plots, cmd_plot_generations_files}};
	const struct cmd_file in = cmd_model_file(
		o->model, o->fusion && !strcmp(o->fusion, "hybrid"));
	/* a folder argument is an XLA dump: run_dump_dir reads these */
	static const char *const dump_files[] = {"*" RUN_DUMP_SUFFIX, NULL};
	int crc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 3,
						    .ins = &in, .n_ins = 1,
						    .args = argv, .n_args = argc,
						    .arg_names = dump_files});
	if (crc != CMD_EXIT_OK)
		return crc;
	if (o->has_config && o->roofline) {
		cmd_error(ctx, "--config and --roofline exclude each other "
			       "(the roofline has no tiles)");
		return CMD_EXIT_USAGE;
	}
	if (o->kernel && !o->has_config) {
		cmd_error(ctx, "--kernel names the kernel --config applies to; "
			       "give --config too");
		return CMD_EXIT_USAGE;
	}
	if (o->explain && ctx->format != CMD_FORMAT_TABLE) {
		cmd_error(ctx, "--explain writes text; leave out --format");
		return CMD_EXIT_USAGE;
	}
	if (ctx->n_more_hw > 0 &&
	    (o->model || o->roofline || o->explain || o->has_config ||
	     o->trace || o->summary)) {
		cmd_error(ctx, "several --hw compare generations; that excludes "
			       "--model, --roofline, --explain, --config, "
			       "--trace and --summary");
		return CMD_EXIT_USAGE;
	}
	if (o->trace && o->explain) {
		cmd_error(ctx, "--trace writes the program's timeline; it "
			       "excludes --explain");
		return CMD_EXIT_USAGE;
	}
	if (o->model && (o->roofline || o->explain)) {
		cmd_error(ctx, "--model corrects the analytic table; it "
			       "excludes --roofline and --explain");
		return CMD_EXIT_USAGE;
	}
	const char *twice = spec_twice(ctx);
	if (twice) {
		cmd_error(ctx, "--hw: spec %s given twice", twice);
		return CMD_EXIT_USAGE;
	}
	/* a dump folder is several inputs too */
	bool several = argc > 1;
	for (int i = 0; i < argc && !several; i++)
		several = is_dump_dir(argv[i]);
	if (several && (o->trace || o->explain || o->has_config)) {
		cmd_error(ctx, "several inputs (or a dump folder) exclude "
			       "--trace, --explain and --config (they name one "
			       "program)");
		return CMD_EXIT_USAGE;
	}
	if (several && ctx->format == CMD_FORMAT_CSV) {
		cmd_error(ctx, "several inputs (or a dump folder) write one "
			       "report each: -f csv would repeat its header "
			       "mid-stream; use -f json or yaml");
		return CMD_EXIT_USAGE;
	}
	struct gnn_model model = {0};
	struct cmd_fusion fusion;
	int rc = cmd_fusion_init(ctx, o->fusion ? o->fusion : "xla", o->model,
				 &ctx->hw, &fusion);
	if (rc != CMD_EXIT_OK)
		return rc;
	o->fusion_cost = fusion.use;
	/* the hybrid fusion policy has loaded --model already */
	const struct gnn_model *use = NULL;
	if (o->model && !strcmp(fusion.name, "hybrid"))
		use = &fusion.model;
	else if (o->model && (rc = cmd_load_model(ctx, o->model, &model)) ==
				     CMD_EXIT_OK)
		use = &model;
	/* every input is run, whatever the ones before it did; the exit
	 * code is the worst of theirs */
	int failed = 0, worst = CMD_EXIT_OK;
	for (int i = 0; i < argc && rc == CMD_EXIT_OK; i++) {
		int r = is_dump_dir(argv[i]) ? run_dump_dir(ctx, o, use, argv[i])
					     : run_file(ctx, o, use, argv[i]);
		failed += r != CMD_EXIT_OK;
		worst = r > worst ? r : worst;
	}
	if (failed && argc > 1)
		cmd_error(ctx, "%d of %d inputs failed (each said why above)",
			  failed, argc);
	if (rc == CMD_EXIT_OK)
		rc = worst;
	gnn_model_free(&model);
	cmd_fusion_free(&fusion);
	return rc;
}

const struct cmd cmd_run = {
	.name = "run",
	.summary = "Estimate the kernels of an HLO module on one TPU",
	.synopsis = "GRAPH.hlo|-|DUMP_DIR... --hw SPEC.yaml [options]",
	.flags = CMD_NEEDS_HW | CMD_HAS_FORMAT | CMD_MULTI_HW | CMD_HAS_SLICE,
	.options = run_options,
	.opts_size = sizeof(struct run_opts),
	.parse_opt = run_parse_opt,
	.help = run_help,
	.min_args = 1,
	.max_args = -1,
	.fn = run_main,
};
