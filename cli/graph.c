/*
 * graph.c: loading an HLO file for the commands that cost its kernels
 * (`run`, `tile`): parse, pick modules, build kernel programs, and report
 * what went wrong in the CLI's words (and, as notes, attributes the parser
 * skipped without knowing them). Contract in cli.h (cmd_graph_*).
 */
#include "cli.h"
#include "hw_units.h"

#include <math.h>
#include <string.h>

/* Multiplicities resting on a guessed trip count are worth a warning,
 * unless --trip-count said what to assume. */
static void warn_assumed_trip_counts(const struct cmd_ctx *ctx,
				     const struct sim_program *p,
				     int64_t trip_count)
{
	int n = p->n_assumed_trip_counts;
	if (n == 0 || trip_count > 0)
		return;
	fprintf(ctx->err,
		"%s: warning: module %s: %d while loop%s whose trip count is "
		"neither known nor derivable run%s once; set --trip-count N\n",
		ctx->prog, p->module->name, n, n == 1 ? "" : "s",
		n == 1 ? "s" : "");
}

void cmd_warn_unmodelled(const struct cmd_ctx *ctx,
			 const struct sim_program *p)
{
	enum { SHOWN = 3 };
	char names[512] = "";
	int n = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if (k->kind != SIM_KERNEL_UNMODELLED || n++ >= SHOWN)
			continue;
		const struct ir_instr *in = k->instr;
		size_t used = strlen(names);
		snprintf(names + used, sizeof names - used, "%s%s (%s%s%s)",
			 used ? ", " : "", k->name, ir_op_name(in->op),
			 in->attrs.custom_call_target ? " " : "",
			 in->attrs.custom_call_target
				 ? in->attrs.custom_call_target
				 : "");
	}
	if (n)
		fprintf(ctx->err,
			"%s: warning: module %s: %d kernel%s not modelled, "
			"costed at zero: %s%s\n",
			ctx->prog, p->module->name, n, n == 1 ? "" : "s", names,
			n > SHOWN ? ", ..." : "");
}

void cmd_warn_fell_back(const struct cmd_ctx *ctx, const char *module,
			const char *kernel, int64_t n, const char *items)
{
	fprintf(ctx->err,
		"%s: warning: %s: kernel %s: the learned time is not finite "
		"(the model overflows on this kernel): the analytic time "
		"stands in",
		ctx->prog, module, kernel);
	if (items)
		fprintf(ctx->err, " (%lld %s)", (long long)n, items);
	fputc('\n', ctx->err);
}

void cmd_warn_untiled(const struct cmd_ctx *ctx, const struct sim_program *p,
		      const struct hw_spec *hw)
{
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if (!k->est.untiled)
			continue;
		struct sim_plan plan;
		struct ts_diag d = {0};
		(void)sim_plan_build(k, hw, &plan, &d);
		sim_plan_free(&plan);
		fprintf(ctx->err,
			"%s: warning: module %s: kernel %s has no tile grid (%s): "
			"costed by its roofline\n",
			ctx->prog, p->module->name, k->name, d.msg);
	}
}

/*
 * A kernel with at least LOW_MXU_MIN_NS of MXU work at the bf16 peak
 * (work.mxu_macs / peak MACs per ns) that the model puts below
 * LOW_MXU_UTIL of the MXU use its roofline allows (that work at peak over
 * the roofline's time: a kernel the roofline says is HBM-bound cannot keep
 * the MXU busy) is almost always a mapping defect (a convolution form or
 * batched dot the MXU mapping gets wrong), not a slow kernel: each is
 * named with its utilisation and what the roofline allows.
 */
#define LOW_MXU_UTIL 0.05
#define LOW_MXU_MIN_NS 10000.0
void cmd_warn_low_mxu(const struct cmd_ctx *ctx, const struct sim_program *p,
		      const struct hw_spec *hw)
{
	double peak = hw_mxu_peak_macs_per_cycle(hw) * hw->clock_hz * 1e-9;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		struct sim_estimate r;
		struct ts_diag d = {0};
		if (!k->est.modelled || !(peak > 0) ||
		    k->work.mxu_macs / peak < LOW_MXU_MIN_NS ||
		    sim_kernel_roofline(k, hw, &r, &d) != TS_OK ||
		    !(r.time_ns > 0))
			continue;
		double allowed = fmin(1.0, k->work.mxu_macs / peak / r.time_ns);
		if (k->est.mxu_util >= LOW_MXU_UTIL * allowed)
			continue;
		fprintf(ctx->err,
			"%s: warning: module %s: kernel %s (%s) is modelled at "
			"%.2g%% MXU utilisation, below %.0f%% of the %.2g%% its "
			"roofline allows, for %.0f us of MXU work: likely a "
			"mapping defect\n",
			ctx->prog, p->module->name, k->name,
			ir_op_name(k->main_op), 100.0 * k->est.mxu_util,
			100.0 * LOW_MXU_UTIL, 100.0 * allowed,
			k->work.mxu_macs / peak * 1e-3);
	}
}

/*
 * The plausibility envelope (sim_kernel_plausible): a kernel the model
 * puts above SIM_ENVELOPE_X times its roofline (every unit at peak, each
 * byte moved once, plus the launch) plus SIM_ENVELOPE_NS is either a real
 * mechanism (re-reads, many small steps, strided runs) or a model defect;
 * each is named with the term that dominates it (sim_kernel_why), so the
 * reader can tell which. So is a kernel no tile config of which fits VMEM
 * (costed at its smallest working set), whatever its time.
 */
void cmd_warn_envelope(const struct cmd_ctx *ctx, const struct sim_program *p,
		       const struct hw_spec *hw)
{
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		struct sim_estimate r;
		struct ts_diag d = {0};
		if (sim_kernel_plausible(k, &k->est, hw) ||
		    sim_kernel_roofline(k, hw, &r, &d) != TS_OK)
			continue;
		char why[sizeof d.msg];
		if (sim_kernel_why(k, hw, why, sizeof why, &d) != TS_OK)
			memcpy(why, d.msg, sizeof why);
		fprintf(ctx->err,
			"%s: warning: module %s: kernel %s (%s) is costed at "
			"%.3g x its roofline (%.4g us vs %.4g us)%s: %s\n",
			ctx->prog, p->module->name, k->name,
			ir_op_name(k->main_op), k->est.time_ns / r.time_ns,
			k->est.time_ns * 1e-3, r.time_ns * 1e-3,
			k->est.feasible ? "" : " at its smallest working set",
			why);
	}
}

/*
 * HBM one program can use: the chip's HBM shared by the programs that run
 * on it at once (v2/v3: one per TensorCore; megacore and single-core
 * chips: one):
 *   capacity = hbm.bytes x cores per program / tensorcores per chip.
 * Compared with the entry computation's parameters plus its result, the
 * buffers that are live for the whole call (a lower bound: temporaries
 * are not counted), so a warning means the program cannot fit at all.
 */
static void warn_hbm(const struct cmd_ctx *ctx, const struct ir_module *m)
{
	const struct ir_computation *e = m->entry;
	if (!e || !ctx->hw.tensorcores_per_chip)
		return;
	double live = e->root ? ir_shape_bytes(&e->root->shape) : 0;
	for (int i = 0; i < e->n_params; i++)
		if (e->params[i])
			live += ir_shape_bytes(&e->params[i]->shape);
	double cap = ctx->hw.hbm_bytes * hw_spec_cores(&ctx->hw) /
		     ctx->hw.tensorcores_per_chip;
	if (live > cap)
		fprintf(ctx->err,
			"%s: warning: module %s: its arguments and result "
			"take %.4g GB, more than the %.4g GB of HBM one "
			"program has on %s\n",
			ctx->prog, m->name, live / 1e9, cap / 1e9, ctx->hw.name);
}

int cmd_fusion_init(const struct cmd_ctx *ctx, const char *name,
		    const char *model_path, const struct hw_spec *hw,
		    struct cmd_fusion *f)
{
	memset(f, 0, sizeof *f);
	f->name = name;
	if (strcmp(name, "xla") == 0)
		return CMD_EXIT_OK;
	if (strcmp(name, "analytic") == 0) {
		f->cost = (struct hyb_fuse_cost){hyb_fuse_cost_analytic,
						 (void *)hw, "analytic", hw};
	} else if (strcmp(name, "hybrid") == 0) {
		int rc = cmd_load_model(ctx, model_path ? model_path : "default",
					&f->model);
		if (rc != CMD_EXIT_OK)
			return rc;
		f->hyb = (struct hyb_fuse_ctx){.model = &f->model, .hw = hw};
		f->cost = (struct hyb_fuse_cost){hyb_fuse_cost_hybrid, &f->hyb,
						 "hybrid", hw};
	} else {
		cmd_error(ctx, "unknown fusion policy '%s' (expected xla, "
			       "analytic or hybrid)", name);
		return CMD_EXIT_USAGE;
	}
	f->use = &f->cost;
	return CMD_EXIT_OK;
}

void cmd_fusion_free(struct cmd_fusion *f)
{
	hyb_fuse_ctx_free(&f->hyb);
	gnn_model_free(&f->model);
	memset(f, 0, sizeof *f);
}

/* An unfused module is rewritten as XLA compiles it for the first --hw
 * (sim_module_rewrite): a note of the copies into donated buffers it
 * made (a cost the user may remove) or could not follow, of the copies
 * of results other devices write, and one for
 * each other spec that XLA would compile differently, since all are
 * costed on that one program. done: what the rewrite did. */
static void note_rewrite(const struct cmd_ctx *ctx, const struct ir_module *m,
			 int n_all_reduces, const struct sim_rewrites *done)
{
	if (done->copies > 0)
		fprintf(ctx->err,
			"%s: note: module %s: %d output%s to live in a donated "
			"or aliased parameter's buffer %s made elsewhere (in a "
			"buffer of %s own while the parameter is still read, "
			"or another parameter, a constant, a buffer another "
			"output lives in); XLA copies %s in (%.4g MB, a copy "
			"kernel each)\n",
			ctx->prog, m->name, done->copies,
			done->copies == 1 ? "" : "s",
			done->copies == 1 ? "is" : "are",
			done->copies == 1 ? "its" : "their",
			done->copies == 1 ? "it" : "them",
			done->copied_bytes / 1e6);
	if (done->peer_copies > 0)
		fprintf(ctx->err,
			"%s: note: module %s: %d output%s other devices write "
			"(an all-gather's, all-to-all's or collective-permute's "
			"result); XLA copies %s out of the buffer they write "
			"(%.4g MB, a copy kernel each)\n",
			ctx->prog, m->name, done->peer_copies,
			done->peer_copies == 1 ? "" : "s",
			done->peer_copies == 1 ? "it" : "them",
			done->peer_copied_bytes / 1e6);
	if (done->unfollowed > 0)
		fprintf(ctx->err,
			"%s: note: module %s: %d output%s to live in a donated "
			"or aliased parameter's buffer %s a nested array; "
			"no copy into %s is costed\n",
			ctx->prog, m->name, done->unfollowed,
			done->unfollowed == 1 ? "" : "s",
			done->unfollowed == 1 ? "is or names" : "are or name",
			done->unfollowed == 1 ? "it" : "them");
	double bytes = sim_all_reduce_combine_limit(&ctx->hw);
	for (int i = 0; sim_module_unfused(m) && i < ctx->n_more_hw &&
			n_all_reduces > 1;
	     i++) {
		const struct hw_spec *o = &ctx->more_hw[i];
		double other = sim_all_reduce_combine_limit(o);
		if (other != bytes)
			fprintf(ctx->err,
				"%s: note: module %s is fused as XLA compiles "
				"it for %s (the first --hw): %d of its %d "
				"all-reduces combined into others, up to %.0f "
				"bytes; XLA for %s combines up to %.0f "
				"(xla.all_reduce_combine_bytes, below "
				"xla.async_all_reduce_bytes), which its figures "
				"here do not show\n",
				ctx->prog, m->name, ctx->hw.name,
				done->combined, n_all_reduces, bytes, o->name,
				other);
	}
	bool first = ctx->hw.xla_row_max_window, differ = false;
	for (int i = 0; i < ctx->n_more_hw; i++)
		differ |= ctx->more_hw[i].xla_row_max_window != first;
	int n = !differ ? 0 : first ? done->windows : sim_row_max_windows(m);
	for (int i = 0; i < ctx->n_more_hw && n > 0; i++) {
		const struct hw_spec *o = &ctx->more_hw[i];
		if (o->xla_row_max_window == first)
			continue;
		fprintf(ctx->err,
			"%s: note: module %s is fused as XLA compiles it for %s "
			"(the first --hw): %d row-max broadcast%s %s here; XLA "
			"for %s %s (xla.row_max_window), which its figures "
			"here do not show\n",
			ctx->prog, m->name, ctx->hw.name, n, n == 1 ? "" : "s",
			first ? (n == 1 ? "is a reduce-window" : "are reduce-windows")
			      : (n == 1 ? "stays a broadcast" : "stay broadcasts"),
			o->name,
			first ? (n == 1 ? "keeps it a broadcast" : "keeps them broadcasts")
			      : (n == 1 ? "makes it a reduce-window"
					: "makes them reduce-windows"));
	}
}

/* An unfused module is scheduled as XLA compiles it for the first --hw
 * (sim/schedule.c): a note for each other spec whose XLA runs its
 * all-reduces (xla.async_all_reduce_bytes) or all-gathers
 * (xla.async_all_gather) otherwise, since all are costed on that one
 * program. */
static void note_schedule(const struct cmd_ctx *ctx, const struct sim_program *p)
{
	const struct ir_module *m = p->module;
	if (!p->fused_xla)
		return;
	int64_t ops[IR_OP_COUNT];
	ir_module_count_ops(m, ops);
	int here = sim_async_collectives(m, ctx->hw.xla_async_all_reduce_bytes,
					 IR_OP_ALL_REDUCE),
	    gathers = (int)ops[IR_OP_ALL_GATHER],
	    marked = sim_async_collectives(m, 0, IR_OP_ALL_GATHER),
	    beside = -2; /* the rule's, when a spec needs it */
	for (int i = 0; i < ctx->n_more_hw; i++) {
		const struct hw_spec *o = &ctx->more_hw[i];
		int so = 0; /* all-gathers XLA for o runs asynchronously */
		if (o->xla_async_all_gather && ctx->hw.xla_async_all_gather)
			so = marked;
		else if (o->xla_async_all_gather)
			so = beside = beside == -2 ? sim_async_all_gathers(m)
						   : beside;
		if (gathers > 0 && so >= 0 && so != marked)
			fprintf(ctx->err,
				"%s: note: module %s is scheduled as XLA "
				"compiles it for %s (the first --hw): %d of "
				"its %d all-gather%s run%s asynchronously "
				"here; XLA for %s runs %d so "
				"(xla.async_all_gather), which its figures "
				"here do not show\n",
				ctx->prog, m->name, ctx->hw.name, marked,
				gathers, gathers == 1 ? "" : "s",
				marked == 1 ? "s" : "", o->name, so);
		int there = sim_async_collectives(
			m, o->xla_async_all_reduce_bytes, IR_OP_ALL_REDUCE);
		if (there == here)
			continue;
		fprintf(ctx->err,
			"%s: note: module %s is scheduled as XLA compiles it for "
			"%s (the first --hw): %d all-reduce%s run%s "
			"asynchronously here; XLA for %s runs %d so "
			"(xla.async_all_reduce_bytes), which its figures here do "
			"not show\n",
			ctx->prog, m->name, ctx->hw.name, here, here == 1 ? "" : "s",
			here == 1 ? "s" : "", o->name, there);
	}
}

int cmd_graph_load(const struct cmd_ctx *ctx, const char *path,
		   const char *module, const struct sim_program_opts *opts,
		   const struct hyb_fuse_cost *fusion, struct cmd_graph *g)
{
	memset(g, 0, sizeof *g);
	struct ts_diag d = {0};
	enum ts_status st;
	if (strcmp(path, "-") == 0) { /* standard input */
		path = "<stdin>";
		size_t len;
		st = ts_read_stream(stdin, path, TS_READ_MAX, &g->text, &len, &d);
		if (st == TS_OK)
			st = hlo_parse(path, g->text, len, &g->mods,
				       &g->n_mods, &d);
	} else {
		st = hlo_parse_file(path, &g->text, &g->mods, &g->n_mods, &d);
	}
	if (st != TS_OK) {
		cmd_diag(ctx, &d, path, g->text, g->text ? strlen(g->text) : 0);
		return cmd_exit_from_status(st);
	}
	for (int m = 0; m < g->n_mods; m++) {
		const struct ir_module *mod = g->mods[m];
		for (int i = 0; i < mod->n_unknown_attrs; i++) {
			const struct ir_unknown_attr *u = &mod->unknown_attrs[i];
			fprintf(ctx->err,
				"%s:%u:%u: note: skipped attribute '%s' (%lld "
				"use%s): tpusim does not know it and assumes it "
				"does not affect cost\n",
				path, u->line, u->col, u->name, (long long)u->uses,
				u->uses == 1 ? "" : "s");
		}
	}
	if (g->n_mods == 0) {
		cmd_error(ctx, "%s: no HLO module in the file", path);
		return CMD_EXIT_INPUT;
	}
	g->progs = ts_calloc((size_t)g->n_mods, sizeof *g->progs);
	g->plans = ts_calloc((size_t)g->n_mods, sizeof *g->plans);
	if (!g->progs || !g->plans) {
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_IO;
	}
	for (int m = 0; m < g->n_mods; m++) {
		if (module && strcmp(g->mods[m]->name, module) != 0)
			continue;
		/* built for the spec with the most room among those given
		 * (its prefetches: idle on the others where they do not
		 * fit, as each one's own run has none) */
		struct sim_program_opts po = *opts;
		po.vmem_room = sim_vmem_room(&ctx->hw);
		po.schedule_hw = &ctx->hw;
		for (int i = 0; i < ctx->n_more_hw; i++)
			if (sim_vmem_room(&ctx->more_hw[i]) > po.vmem_room)
				po.vmem_room = sim_vmem_room(&ctx->more_hw[i]);
		struct sim_rewrites done;
		int64_t ops[IR_OP_COUNT];
		ir_module_count_ops(g->mods[m], ops);
		st = sim_module_rewrite(g->mods[m], &ctx->hw, &done, &d);
		if (st == TS_OK)
			note_rewrite(ctx, g->mods[m], (int)ops[IR_OP_ALL_REDUCE],
				     &done);
		if (st == TS_OK)
			st = hyb_fusion_plan_build(g->mods[m], fusion,
						   &g->plans[g->n_progs], &d);
		po.fusion = &g->plans[g->n_progs];
		if (st == TS_OK)
			st = sim_program_build(g->mods[m], &po,
					       &g->progs[g->n_progs], &d);
		if (st != TS_OK) {
			cmd_diag(ctx, &d, path, g->text, strlen(g->text));
			return cmd_exit_from_status(st);
		}
		/* memory-space assignment for the spec: a command that costs
		 * kernels one by one (tile, whatif) sees run's placement;
		 * sim_program_estimate places again for each spec it costs */
		st = sim_program_place(&g->progs[g->n_progs], &ctx->hw, &d);
		if (st != TS_OK) {
			cmd_diag(ctx, &d, path, NULL, 0);
			return cmd_exit_from_status(st);
		}
		const struct sim_program *p = &g->progs[g->n_progs++];
		note_schedule(ctx, p);
		/* the slice of every spec must hold the module's devices */
		for (int i = -1; i < ctx->n_more_hw; i++) {
			st = sim_program_check_slice(
				p, i < 0 ? &ctx->hw : &ctx->more_hw[i], &d);
			if (st != TS_OK) {
				cmd_diag(ctx, &d, path, g->text, strlen(g->text));
				return cmd_exit_from_status(st);
			}
		}
		if (sim_program_per_slice(p, &ctx->hw) &&
		    !sim_program_exchanges(p))
			fprintf(ctx->err,
				"%s: warning: module %s runs on one slice of %d "
				"(compiled per slice) and holds no exchange "
				"between the slices (megascale sends): it is not "
				"costed\n",
				ctx->prog, g->mods[m]->name, ctx->hw.slice.count);
		cmd_warn_unmodelled(ctx, p);
		warn_hbm(ctx, g->mods[m]);
		warn_assumed_trip_counts(ctx, p, opts->default_trip_count);
	}
	if (g->n_progs == 0) {
		cmd_error(ctx, "--module: no module named '%s' in %s", module,
			  path);
		fputs("  modules:", ctx->err);
		for (int m = 0; m < g->n_mods; m++)
			fprintf(ctx->err, "%s %s", m ? "," : "",
				g->mods[m]->name);
		fputc('\n', ctx->err);
		return CMD_EXIT_INPUT;
	}
	return CMD_EXIT_OK;
}

void cmd_graph_free(struct cmd_graph *g)
{
	for (int m = 0; m < g->n_progs; m++) {
		sim_program_free(&g->progs[m]);
		sim_fusion_plan_free(&g->plans[m]);
	}
	if (g->plans && g->progs && g->n_progs < g->n_mods) {
		/* one being built */
		sim_fusion_plan_free(&g->plans[g->n_progs]);
		sim_program_free(&g->progs[g->n_progs]);
	}
	ts_free(g->progs);
	ts_free(g->plans);
	for (int m = 0; m < g->n_mods; m++)
		ir_module_free(g->mods[m]);
	ts_free(g->mods);
	ts_free(g->text);
	memset(g, 0, sizeof *g);
}
