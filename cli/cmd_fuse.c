/*
 * cmd_fuse.c: `tpusim fuse IN.hlo --hw SPEC [--policy P] [-o OUT.hlo]
 * [--report FILE]`: writes an unfused module as the fused module a fusion
 * policy makes of it (xla: XLA's rules, sim/grouping.c; analytic/hybrid:
 * decided by predicted time, hybrid/hyb_fusion.c; the text by
 * sim/fusion.c), reads the result back, compares its cost with the
 * unfused module's under the same decisions (a warning when they differ),
 * reports kernels, HBM bytes and program time on SPEC, and writes the
 * policies side by side with --report. Also --unfuse and --agreement.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fuse_opts {
	const char *out;  /* -o OUT.hlo; NULL: standard output */
	bool unfuse;      /* --unfuse: inline a compiled module's fusions */
	bool agreement;   /* --agreement: compare the policy with XLA */
	const char *policy; /* --policy; NULL: xla */
	const char *model;  /* --model: the hybrid policy's (and report's) */
	const char *report; /* --report FILE */
};

enum { OPT_OUT = 'o', OPT_UNFUSE = CMD_OPT_OWN, OPT_AGREEMENT, OPT_POLICY,
       OPT_MODEL, OPT_REPORT };

static const struct option fuse_options[] = {
	{"output", required_argument, NULL, OPT_OUT},
	{"unfuse", no_argument, NULL, OPT_UNFUSE},
	{"agreement", no_argument, NULL, OPT_AGREEMENT},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"model", required_argument, NULL, OPT_MODEL},
	{"report", required_argument, NULL, OPT_REPORT},
	{0},
};

static int fuse_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			  const char *arg)
{
	struct fuse_opts *o = opts_v;
	switch (id) {
	case OPT_OUT:
		o->out = arg;
		return CMD_EXIT_OK;
	case OPT_UNFUSE:
		o->unfuse = true;
		return CMD_EXIT_OK;
	case OPT_AGREEMENT:
		o->agreement = true;
		return CMD_EXIT_OK;
	case OPT_POLICY:
		o->policy = arg;
		return CMD_EXIT_OK;
	case OPT_MODEL:
		o->model = arg;
		return CMD_EXIT_OK;
	case OPT_REPORT:
		o->report = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void fuse_help(FILE *out)
{
	fputs("Decides which producers of an unfused (pre-optimization) module "
	      "fuse into\nwhich consumers (XLA's kCustom fusions in it, such as "
	      "one device's module\nafter SPMD partitioning has, stay as they "
	      "are) and writes the fused module\nas HLO text: fusion "
	      "instructions with kind and calls=, shapes, layouts and\n"
	      "attributes as written, marked is_scheduled=true (a compiled "
	      "module); the\nvalues kept in VMEM on the spec (memory-space "
	      "assignment, as `run` costs\nthem) in S(1). The policy decides:\n"
	      "  xla       XLA's TPU fusion rules (what `tpusim run` costs an "
	      "unfused module\n"
	      "            with): producer-consumer fusion of elementwise ops, "
	      "cheap\n"
	      "            producers recomputed in each user, dots as fusion "
	      "roots with\n"
	      "            their epilogues, reductions without, a reduction of "
	      "a dot's\n"
	      "            result in the dot's kernel and of one array read "
	      "whole in one\n"
	      "            kernel, a loop kernel in the one of its shape that "
	      "reads it\n"
	      "            (multi-output fusion), no broadcast's operand "
	      "computed in a\n"
	      "            fusion;\n"
	      "  analytic  starts from those decisions and overturns a "
	      "heuristic one (never\n"
	      "            a legality rule) where the analytic model predicts "
	      "the\n"
	      "            computation faster by more than 0.1%: a fused "
	      "producer made a\n"
	      "            kernel of its own, or one recomputed in every user "
	      "kernel;\n"
	      "  hybrid    the same with the hybrid estimate (analytic x the "
	      "learned\n"
	      "            correction of --model, else the shipped model).\n"
	      "The result is read back and its cost compared with the unfused "
	      "module's\nunder the same decisions (a warning when they differ); "
	      "fusions, kernels,\nHBM bytes and program time go to standard "
	      "error.\n\n"
	      "With --unfuse, the other way: a compiled module with its "
	      "fusions inlined\n"
	      "into their callers (instruction X of fusion F named X__in__F). "
	      "With\n"
	      "--agreement, for each compiled module given: unfuse it, group "
	      "it with the\n"
	      "policy (xla unless --policy), and print how many of XLA's "
	      "fusions one\n"
	      "group forms exactly and the precision and recall of the fused "
	      "operand\n"
	      "edges (working instructions only: not free, not "
	      "constant-derived).\n"
	      "--unfuse needs no --hw, nor --agreement with the xla policy "
	      "(analytic and\n"
	      "hybrid decide on the spec).\n\n"
	      "Options:\n"
	      "  -o, --output OUT.hlo  write there (temp file, then rename); "
	      "default: stdout\n"
	      "      --policy POLICY   xla (default), analytic or hybrid\n"
	      "      --model MODEL     the hybrid policy's model (default: the "
	      "shipped one);\n"
	      "                        given, the report also has the hybrid\n"
	      "      --report FILE     per policy (none = nothing fused, xla, "
	      "analytic,\n"
	      "                        hybrid) kernels, HBM bytes and program "
	      "time, and\n"
	      "                        each decision that differs from xla's; "
	      "JSON for\n"
	      "                        *.json, the decisions as CSV for *.csv, "
	      "else tables\n"
	      "      --unfuse          inline the fusions of a compiled module\n"
	      "      --agreement       compare the policy with XLA's "
	      "fusions (several\n"
	      "                        IN.hlo allowed; a table, no HLO "
	      "written)\n",
	      out);
}

struct buf {
	char *p;
	size_t n;
};

static enum ts_status write_buf(FILE *f, void *ctx)
{
	const struct buf *b = ctx;
	return fwrite(b->p, 1, b->n, f) == b->n ? TS_OK : TS_ERR_IO;
}

/* b to -o (temp file, then rename) or standard output. */
static int write_out(const struct cmd_ctx *ctx, const struct fuse_opts *o,
		     struct buf *b)
{
	if (!o->out) {
		if (fwrite(b->p, 1, b->n, ctx->out) == b->n)
			return CMD_EXIT_OK;
		cmd_error(ctx, "cannot write to standard output");
		return CMD_EXIT_IO;
	}
	return cmd_write_file(ctx, o->out, write_buf, b);
}

struct fuse_figures {
	int kernels;
	double ns, bytes;
	double hybrid_ns; /* with a model: sum of hybrid kernel times x runs */
	int n_fell_back;  /* kernels costed analytic (hyb_kernel_predict) */
	char fell_back[128]; /* the first one's name */
};

/* Kernels, HBM bytes and analytic time of program p, estimated here on
 * hw; with a model (else NaN) its hybrid time: each kernel's estimate
 * corrected (hyb_kernel_predict: a kernel whose learned time is not
 * finite keeps its analytic one, counted) x its runs, summed (async
 * overlap not subtracted). */
static enum ts_status program_figures(struct sim_program *p,
				      const struct hw_spec *hw,
				      const struct gnn_model *model,
				      struct fuse_figures *f, struct ts_diag *d)
{
	enum ts_status st = sim_program_estimate(p, hw, d);
	f->kernels = p->n_kernels - sim_program_idle_copies(p); /* that run */
	f->ns = st ? NAN : sim_program_total(p);
	f->bytes = 0;
	f->hybrid_ns = model ? 0 : NAN;
	f->n_fell_back = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		f->bytes += (k->est.bytes_read + k->est.bytes_written) *
			    k->multiplicity;
		struct hyb_embedding e;
		if (model && !st && hyb_embed(model, k, &e) == TS_OK) {
			bool fell_back = false;
			double t = hyb_kernel_predict(model, &e, k, &k->est, hw,
						      false, &fell_back);
			if (fell_back && f->n_fell_back++ == 0)
				snprintf(f->fell_back, sizeof f->fell_back, "%s",
					 k->name);
			f->hybrid_ns += (isfinite(t) ? t : 0) * k->multiplicity;
		}
	}
	return st;
}

/* program_figures of a parsed module fused by plan (NULL: the xla policy)
 * when it is unfused. */
static enum ts_status figures(const struct ir_module *m,
			      const struct sim_fusion_plan *plan,
			      const struct hw_spec *hw,
			      const struct gnn_model *model,
			      struct fuse_figures *f, struct ts_diag *d)
{
	struct sim_program p;
	struct sim_program_opts po = {.fusion = plan,
				      .vmem_room = sim_vmem_room(hw),
				      .schedule_hw = hw};
	enum ts_status st = sim_program_build(m, &po, &p, d);
	if (st)
		return st;
	st = program_figures(&p, hw, model, f, d);
	sim_program_free(&p);
	return st;
}

/* Module `mod` of g through the unfusion pass (unfuse: *inlined counts
 * the fusions) or the fusion pass (*fs; the values g's program of it,
 * estimated, keeps in VMEM are written in S(1)), its text malloc'd into
 * *b. */
static int run_pass(const struct cmd_ctx *ctx, const struct cmd_graph *g,
		    int mod, const char *path, bool unfuse,
		    const struct sim_fusion_plan *plan, struct buf *b,
		    struct sim_fuse_stats *fs, int *inlined)
{
	FILE *mem = open_memstream(&b->p, &b->n);
	struct ts_diag d = {0};
	size_t len = strlen(g->text);
	enum ts_status st =
		!mem     ? TS_ERR_NOMEM
		: unfuse ? sim_unfuse_write(g->mods[mod], g->text, len, mem,
					    inlined, &d)
			 : sim_fuse_write(g->mods[mod], g->text, len, plan,
					  &g->progs[mod], mem, fs, &d);
	if (mem && fclose(mem) != 0 && st == TS_OK)
		st = TS_ERR_NOMEM;
	if (st != TS_OK) {
		if (!d.msg[0])
			ts_diag_set(&d, path, 0, 0, "%s", ts_status_str(st));
		cmd_diag(ctx, &d, path, g->text, len);
		return cmd_exit_from_status(st);
	}
	return CMD_EXIT_OK;
}

/* Adds b's counts to a. */
static void add_agreement(struct sim_fuse_agreement *a,
			  const struct sim_fuse_agreement *b)
{
	a->xla_kernels += b->xla_kernels;
	a->reproduced += b->reproduced;
	a->edges_xla += b->edges_xla;
	a->edges_policy += b->edges_policy;
	a->edges_both += b->edges_both;
	for (int w = 0; w < SIM_WHY_COUNT; w++)
		a->missed[w] += b->missed[w];
}

static void put_agreement(FILE *f, const char *name,
			  const struct sim_fuse_agreement *a)
{
	/* a ratio over no edges is not 100%: "-" */
	char prec[16] = "-", rec[16] = "-";
	if (a->edges_policy)
		val_fmt_pct(prec, sizeof prec,
			    (double)a->edges_both / a->edges_policy);
	if (a->edges_xla)
		val_fmt_pct(rec, sizeof rec,
			    (double)a->edges_both / a->edges_xla);
	fprintf(f, "%-44s %8d %10d %9s %9s\n", name, a->xla_kernels,
		a->reproduced, prec, rec);
}

/* One module of g: unfused, read back, compared; its line printed when it
 * had fusions. */
static int agree_module(struct cmd_ctx *ctx, const struct cmd_graph *g,
			int mod, const char *path,
			const struct cmd_fusion *fusion,
			struct sim_fuse_agreement *all)
{
	struct buf b = {0};
	struct ir_module **u = NULL;
	int nu = 0, inlined = 0;
	int rc = run_pass(ctx, g, mod, path, true, NULL, &b, NULL, &inlined);
	struct ts_diag d = {0};
	struct sim_fuse_agreement a;
	struct sim_fusion_plan plan = {0};
	if (rc == CMD_EXIT_OK && inlined > 0) {
		if (hlo_parse(path, b.p, b.n, &u, &nu, &d) != TS_OK ||
		    hyb_fusion_plan_build(u[0], fusion->use, &plan, &d) ||
		    sim_fuse_agreement(u[0], &plan, &a, &d) != TS_OK) {
			cmd_error(ctx, "internal error: %s unfused does not "
				       "read back: %s", path, d.msg);
			rc = CMD_EXIT_IO;
		} else {
			const char *nm = g->mods[mod]->name;
			put_agreement(ctx->out, nm[0] ? nm : "(unnamed)", &a);
			add_agreement(all, &a);
		}
	}
	sim_fusion_plan_free(&plan);
	for (int k = 0; k < nu; k++)
		ir_module_free(u[k]);
	ts_free(u);
	free(b.p);
	return rc;
}

/* --agreement: one line per module with fusions, then the totals. */
static int agreement(struct cmd_ctx *ctx, int argc, char **argv,
		     const struct cmd_fusion *fusion)
{
	struct sim_fuse_agreement all = {0};
	int rc = CMD_EXIT_OK;
	fprintf(ctx->out, "%-44s %8s %10s %9s %9s\n", "module", "fusions",
		"reproduced", "precision", "recall");
	for (int i = 0; i < argc && rc == CMD_EXIT_OK; i++) {
		struct cmd_graph g;
		struct sim_program_opts po = {0};
		rc = cmd_graph_load(ctx, argv[i], NULL, &po, NULL, &g);
		for (int m = 0; rc == CMD_EXIT_OK && m < g.n_mods; m++)
			rc = agree_module(ctx, &g, m, argv[i], fusion, &all);
		cmd_graph_free(&g);
	}
	if (rc == CMD_EXIT_OK) {
		put_agreement(ctx->out, "all", &all);
		/* the rules behind the edges XLA fused and the policy did not */
		int missed = 0;
		for (int w = 0; w < SIM_WHY_COUNT; w++)
			missed += all.missed[w];
		if (missed)
			fprintf(ctx->out, "edges XLA fused and the %s policy did "
					  "not (%d), by the rule that kept the "
					  "producer out:\n",
				fusion->name, missed);
		for (int w = 0; w < SIM_WHY_COUNT; w++)
			if (all.missed[w])
				fprintf(ctx->out, "  %-44s %4d\n",
					sim_fuse_why_name(w), all.missed[w]);
	}
	return rc;
}

/* ---- the report (--report FILE) ------------------------------------------- */

enum { R_POLICY, R_KERNELS, R_BYTES, R_TIME, R_HYBRID, R_FLIPS, R_COUNT };
static const struct cmd_col policy_cols[R_COUNT] = {
	[R_POLICY] = {"policy", "policy", CMD_UNIT_TEXT, 0},
	[R_KERNELS] = {"kernels", "kernels", CMD_UNIT_INT, 0},
	[R_BYTES] = {"hbm_bytes", "HBM bytes", CMD_UNIT_BYTES, 0},
	[R_TIME] = {"analytic_ns", "analytic time", CMD_UNIT_TIME_NS, 0},
	[R_HYBRID] = {"hybrid_ns", "hybrid time", CMD_UNIT_TIME_NS, 0},
	[R_FLIPS] = {"decisions_differ", "differ from xla", CMD_UNIT_INT, 0},
};

enum { F_POLICY, F_COMP, F_INSTR, F_OP, F_XLA, F_DECIDED, F_BEFORE, F_AFTER,
       F_COUNT };
static const struct cmd_col flip_cols[F_COUNT] = {
	[F_POLICY] = {"policy", "policy", CMD_UNIT_TEXT, 0},
	[F_COMP] = {"computation", "computation", CMD_UNIT_TEXT, 0},
	[F_INSTR] = {"instruction", "instruction", CMD_UNIT_TEXT, 0},
	[F_OP] = {"op", "op", CMD_UNIT_TEXT, 0},
	[F_XLA] = {"xla", "xla", CMD_UNIT_TEXT, 0},
	[F_DECIDED] = {"decided", "decided", CMD_UNIT_TEXT, 0},
	[F_BEFORE] = {"time_before_ns", "comp. time before",
		      CMD_UNIT_TIME_NS, 0},
	[F_AFTER] = {"time_after_ns", "after", CMD_UNIT_TIME_NS, 0},
};

struct report_ctx {
	const struct ir_module *m;
	const struct cmd_table *policies, *decisions;
	enum cmd_format fmt;
	const char *hw;
};

static enum ts_status put_report(FILE *f, void *arg)
{
	const struct report_ctx *r = arg;
	struct cmd_report rep;
	struct ts_diag d = {0};
	cmd_report_begin(&rep, r->fmt, f);
	if (r->fmt != CMD_FORMAT_CSV) {
		cmd_report_text(&rep, "module", r->m->name);
		cmd_report_text(&rep, "hw", r->hw);
		cmd_report_table(&rep, r->policies);
	}
	cmd_report_table(&rep, r->decisions);
	return cmd_report_end(&rep, &d);
}

/* The plans the report compares: none, xla, analytic, and hybrid when a
 * model is at hand (--model, or --policy hybrid). */
#define REPORT_PLANS 4

static enum ts_status add_policy_row(struct cmd_table *t,
				     const struct sim_fusion_plan *p,
				     const struct fuse_figures *f)
{
	enum ts_status st = cmd_table_add_row(t);
	if (st == TS_OK)
		st = cmd_table_set_text(t, R_POLICY, p->policy);
	cmd_table_set_num(t, R_KERNELS, f->kernels);
	cmd_table_set_num(t, R_BYTES, f->bytes);
	cmd_table_set_num(t, R_TIME, f->ns);
	cmd_table_set_num(t, R_HYBRID, f->hybrid_ns);
	cmd_table_set_num(t, R_FLIPS, p->n_flips);
	return st;
}

static enum ts_status add_flip_rows(struct cmd_table *t,
				    const struct sim_fusion_plan *p)
{
	enum ts_status st = TS_OK;
	for (int i = 0; st == TS_OK && i < p->n_flips; i++) {
		const struct sim_fusion_flip *f = &p->flips[i];
		bool own = f->force == SIM_FUSE_OWN;
		if ((st = cmd_table_add_row(t)) ||
		    (st = cmd_table_set_text(t, F_POLICY, p->policy)) ||
		    (st = cmd_table_set_text(t, F_COMP,
					     f->instr->parent->name)) ||
		    (st = cmd_table_set_text(t, F_INSTR, f->instr->name)) ||
		    (st = cmd_table_set_text(t, F_OP,
					     ir_op_name(f->instr->op))) ||
		    (st = cmd_table_set_text(t, F_XLA,
					     own ? "fused into its users"
						 : "its own kernel")) ||
		    (st = cmd_table_set_text(t, F_DECIDED,
					     own ? "its own kernel"
						 : "recomputed in every user")))
			break;
		cmd_table_set_num(t, F_BEFORE, f->before_ns);
		cmd_table_set_num(t, F_AFTER, f->after_ns);
	}
	return st;
}

/* Report FILE: JSON (*.json), CSV (*.csv: the decisions only) or a text
 * table: per policy (none: nothing fused; xla; analytic; hybrid when a
 * model is at hand) kernels, HBM bytes and program time by the analytic
 * model (and by the hybrid), and each decision of the analytic and hybrid
 * policies that differs from the xla policy's, with the computation's
 * predicted time (by that policy's cost) before and after it. */
static int write_report(const struct cmd_ctx *ctx, const struct fuse_opts *o,
			const struct ir_module *m, const struct cmd_fusion *chosen,
			const struct sim_fusion_plan *chosen_plan)
{
	size_t l = strlen(o->report);
	enum cmd_format fmt =
		l > 5 && !strcmp(o->report + l - 5, ".json")  ? CMD_FORMAT_JSON
		: l > 4 && !strcmp(o->report + l - 4, ".csv") ? CMD_FORMAT_CSV
							       : CMD_FORMAT_TABLE;
	/* the chosen policy's decisions and model are at hand: only the
	 * others are decided (and loaded) here */
	static const char *const names[REPORT_PLANS] = {"none", "xla",
							"analytic", "hybrid"};
	struct cmd_fusion own[REPORT_PLANS] = {{0}};
	const struct cmd_fusion *hybrid = &own[3];
	bool with_hybrid = o->model || !strcmp(chosen->name, "hybrid");
	int n = with_hybrid ? 4 : 3, rc = CMD_EXIT_OK;
	if (!strcmp(chosen->name, "hybrid"))
		hybrid = chosen;
	else if (with_hybrid)
		rc = cmd_fusion_init(ctx, "hybrid", o->model, &ctx->hw, &own[3]);
	if (rc == CMD_EXIT_OK && strcmp(chosen->name, "analytic"))
		rc = cmd_fusion_init(ctx, "analytic", NULL, &ctx->hw, &own[2]);
	struct sim_fusion_plan plans[REPORT_PLANS] = {0};
	const struct sim_fusion_plan *plan[REPORT_PLANS];
	struct fuse_figures fig[REPORT_PLANS];
	struct ts_diag d = {0};
	enum ts_status st = TS_OK;
	for (int i = 0; rc == CMD_EXIT_OK && !st && i < n; i++) {
		plan[i] = &plans[i];
		if (!strcmp(chosen->name, names[i]))
			plan[i] = chosen_plan;
		else if (i == 0)
			st = hyb_fusion_plan_none(m, &plans[0], &d);
		else
			st = hyb_fusion_plan_build(
				m, i == 3 ? hybrid->use : own[i].use, &plans[i], &d);
		if (!st)
			st = figures(m, plan[i], &ctx->hw,
				     with_hybrid ? &hybrid->model : NULL, &fig[i],
				     &d);
	}
	/* the kernels whose learned time is not finite, over the policies'
	 * programs: one warning naming the first */
	int n_fell_back = 0;
	const char *first = NULL;
	for (int i = 0; rc == CMD_EXIT_OK && !st && i < n; i++) {
		if (fig[i].n_fell_back && !first)
			first = fig[i].fell_back;
		n_fell_back += fig[i].n_fell_back;
	}
	if (first)
		cmd_warn_fell_back(ctx, m->name, first, n_fell_back,
				   "kernels over the policies' programs");
	struct cmd_table pt, ft;
	cmd_table_init(&pt, "policies", NULL, policy_cols, R_COUNT);
	cmd_table_init(&ft, "decisions", NULL, flip_cols, F_COUNT);
	for (int i = 0; rc == CMD_EXIT_OK && !st && i < n; i++) {
		st = add_policy_row(&pt, plan[i], &fig[i]);
		if (!st && i >= 2)
			st = add_flip_rows(&ft, plan[i]);
	}
	if (st) {
		if (!d.msg[0])
			ts_diag_set(&d, m->file, 0, 0, "%s", ts_status_str(st));
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
	}
	if (rc == CMD_EXIT_OK) {
		struct report_ctx r = {m, &pt, &ft, fmt, ctx->hw.name};
		rc = cmd_write_file(ctx, o->report, put_report, &r);
	}
	cmd_table_free(&pt);
	cmd_table_free(&ft);
	for (int i = 0; i < REPORT_PLANS; i++) {
		sim_fusion_plan_free(&plans[i]);
		cmd_fusion_free(&own[i]);
	}
	return rc;
}

static int fuse_main(struct cmd_ctx *ctx, void *opts_v, int argc, char **argv)
{
	struct fuse_opts *o = opts_v;
	const char *path = argv[0];
	if (o->agreement && (o->unfuse || o->out)) {
		cmd_error(ctx, "--agreement prints a table: it excludes --unfuse "
			       "and -o");
		return CMD_EXIT_USAGE;
	}
	const char *policy = o->policy ? o->policy : "xla";
	if ((o->unfuse && (o->policy || o->report)) ||
	    (o->agreement && o->report)) {
		cmd_error(ctx, "--unfuse takes neither --policy nor --report; "
			       "--agreement takes no --report");
		return CMD_EXIT_USAGE;
	}
	if (!o->unfuse && !ctx->hw_path &&
	    (!o->agreement || strcmp(policy, "xla") != 0)) {
		cmd_error(ctx, "--hw SPEC.yaml is required to fuse, or to "
			       "compare a policy other than xla (the decisions "
			       "are costed on it)");
		return CMD_EXIT_USAGE;
	}
	const struct cmd_file outs[] = {{"-o", o->out, CMD_FILE},
					{"--report", o->report, CMD_FILE}};
	const struct cmd_file in =
		cmd_model_file(o->model, !strcmp(policy, "hybrid"));
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = outs, .n_outs = 2,
						   .ins = &in, .n_ins = 1,
						   .args = argv, .n_args = argc});
	if (rc != CMD_EXIT_OK)
		return rc;
	struct cmd_fusion fusion;
	rc = cmd_fusion_init(ctx, policy, o->model, &ctx->hw, &fusion);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (o->agreement) {
		rc = agreement(ctx, argc, argv, &fusion);
		cmd_fusion_free(&fusion);
		return rc;
	}
	if (argc != 1) {
		cmd_error(ctx, "give one IN.hlo (several only with --agreement)");
		cmd_fusion_free(&fusion);
		return CMD_EXIT_USAGE;
	}
	struct cmd_graph g;
	struct sim_program_opts popts = {0};
	rc = cmd_graph_load(ctx, path, NULL, &popts, fusion.use, &g);
	struct buf b = {0};
	struct ir_module **back = NULL;
	int n_back = 0;
	if (rc != CMD_EXIT_OK)
		goto out;
	if (g.n_mods != 1) {
		cmd_error(ctx, "%s holds %d modules; fuse takes one", path,
			  g.n_mods);
		rc = CMD_EXIT_INPUT;
		goto out;
	}
	const struct ir_module *m = g.mods[0];
	if (o->unfuse) {
		int inlined;
		rc = run_pass(ctx, &g, 0, path, true, NULL, &b, NULL, &inlined);
		if (rc == CMD_EXIT_OK)
			rc = write_out(ctx, o, &b);
		if (rc == CMD_EXIT_OK)
			fprintf(ctx->err, "%s: %d fusions inlined\n", ctx->prog,
				inlined);
		goto out;
	}
	if (!g.progs[0].fused_xla) { /* run's test, sim_module_unfused */
		cmd_error(ctx, "%s: module %s is already compiled (it has "
			       "fusions other than kCustom ones, or "
			       "is_scheduled=true): nothing to decide",
			  path, m->name);
		rc = CMD_EXIT_INPUT;
		goto out;
	}
	const struct sim_fusion_plan *plan = &g.plans[0];
	struct ts_diag d = {0};
	enum ts_status st;
	struct fuse_figures before, xla, after;
	st = program_figures(&g.progs[0], &ctx->hw, NULL, &before, &d);
	if (st == TS_OK && fusion.use) /* else xla is the policy: before */
		st = figures(m, NULL, &ctx->hw, NULL, &xla, &d);
	if (st != TS_OK) { /* the input itself cannot be costed */
		cmd_diag(ctx, &d, path, g.text, strlen(g.text));
		rc = cmd_exit_from_status(st);
		goto out;
	}
	struct sim_fuse_stats fs;
	if ((rc = run_pass(ctx, &g, 0, path, false, plan, &b, &fs, NULL)))
		goto out;
	/* read back: it must parse and cost what the unfused module costs
	 * under the same decisions */
	const char *name = o->out ? o->out : "<fused output>";
	st = hlo_parse(name, b.p, b.n, &back, &n_back, &d);
	if (st == TS_OK)
		st = figures(back[0], NULL, &ctx->hw, NULL, &after, &d);
	if (st != TS_OK) {
		cmd_error(ctx, "internal error: the fused module does not read "
			       "back: %s", d.msg);
		rc = CMD_EXIT_IO;
		goto out;
	}
	if (!(fabs(after.ns - before.ns) <= 1e-9 * fmax(before.ns, 1.0)))
		fprintf(ctx->err,
			"%s: warning: the fused module costs %.6g ns, the unfused "
			"one %.6g ns\n", ctx->prog, after.ns, before.ns);
	if ((rc = write_out(ctx, o, &b)))
		goto out;
	fprintf(ctx->err,
		"%s: policy %s: %d fusions (%d multi-output, %d kernels split "
		"out of cyclic groups); kernels %d, HBM bytes %.4g; program "
		"time on %s %.6g -> %.6g ns",
		ctx->prog, plan->policy, fs.fusions, fs.multi_output,
		fs.cycle_split, after.kernels, after.bytes, ctx->hw.name, before.ns,
		after.ns);
	if (fusion.use)
		fprintf(ctx->err, " (xla policy: %.6g ns; %d decisions differ, "
				  "%d tried)",
			xla.ns, plan->n_flips, plan->n_trials);
	if (plan->n_dropped)
		fprintf(ctx->err, "; %d decisions dropped: the program with "
				  "them, after memory-space assignment, took "
				  "%.6g ns",
			plan->n_dropped, plan->dropped_ns);
	fputc('\n', ctx->err);
	if (o->report)
		rc = write_report(ctx, o, m, &fusion, plan);
out:
	for (int i = 0; i < n_back; i++)
		ir_module_free(back[i]);
	ts_free(back);
	free(b.p);
	cmd_graph_free(&g);
	cmd_fusion_free(&fusion);
	return rc;
}

const struct cmd cmd_fuse = {
	.name = "fuse",
	.summary = "Fuse an unfused module as XLA would, as HLO text",
	.synopsis = "IN.hlo --hw SPEC.yaml [--policy P] [--model M] [-o OUT.hlo] "
		    "[--report FILE] | --unfuse IN.hlo [-o OUT.hlo] | "
		    "--agreement IN.hlo...",
	.flags = CMD_NEEDS_HW | CMD_HW_OPTIONAL,
	.options = fuse_options,
	.short_opts = "o:",
	.opts_size = sizeof(struct fuse_opts),
	.parse_opt = fuse_parse_opt,
	.help = fuse_help,
	.min_args = 1,
	.max_args = -1,
	.fn = fuse_main,
};
