/*
 * val_report.c: costs every row of a measurement set with the analytic
 * model and two baselines (plain roofline; "fewer tile steps is faster"),
 * then summarises per kernel or op family and per set (val.h). Also the
 * text writers: aligned tables and Markdown for docs/ACCURACY.md (CSV, JSON and
 * YAML go through the CLI's output layer, cli/cmd_validate.c).
 * Host-timed rows are compared with device estimate + the program's host
 * term (sim_program_host_ns: the spec's host.* figures applied to the
 * program's kernels and devices). Where a set records a call's overhead
 * (details.csv overhead_ns) it only checks that term; no measured value of
 * a row ever enters its prediction.
 */
#include "val.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

/* Formats a diagnostic as one line in the report's arena. */
static const char *diag_line(struct ts_arena *a, const struct ts_diag *d)
{
	char buf[TS_DIAG_MSG_MAX + 512];
	const char *file = d->file ? d->file : "<input>";
	if (d->line > 0)
		snprintf(buf, sizeof buf, "%s:%u:%u: %s", file, d->line, d->col,
			 d->msg);
	else
		snprintf(buf, sizeof buf, "%s: %s", file, d->msg);
	return ts_arena_strndup(a, buf, strlen(buf));
}

static bool is_default_source(const char *source)
{
	static const char tag[] = "default";
	size_t n = strlen(source), t = sizeof tag - 1;
	return n >= t && !strcmp(source + n - t, tag);
}

static bool has_cfg(const struct val_row *row)
{
	return row->cfg.n_out > 0 || row->cfg.n_kernel > 0;
}

/* Groups worst first (report every set's bad groups first): by model MAPE,
 * descending; groups without one last; ties by name. */
static int cmp_worst(const void *a, const void *b)
{
	const struct val_group *x = a, *y = b;
	double u = isnan(x->mape) ? -1 : x->mape;
	double v = isnan(y->mape) ? -1 : y->mape;
	if (u != v)
		return u < v ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* ---- costing one module -------------------------------------------------- */

/* Per kernel: the default estimate and the roofline, once per module and
 * spec. */
struct kcache {
	struct sim_estimate def;  /* default tile config */
	struct sim_estimate roof; /* plain roofline */
};

/*
 * The kernel a row's config applies to: the one whose metadata op_name is
 * "autotuned_op" (TpuGraphs marks the measured kernel so), else the only
 * tunable kernel. Returns -1 with *why set when there is none or several.
 */
static int find_tuned(const struct sim_program *p, const char **why)
{
	int tuned = -1, n_marked = 0, n_tunable = 0, tunable = -1;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if (k->instr && k->instr->op_name &&
		    !strcmp(k->instr->op_name, "autotuned_op")) {
			n_marked++;
			tuned = i;
		}
		if (k->tunable) {
			n_tunable++;
			tunable = i;
		}
	}
	*why = NULL;
	if (n_marked == 1)
		return tuned;
	if (n_marked > 1) {
		*why = "several kernels have op_name \"autotuned_op\"";
		return -1;
	}
	if (n_tunable == 1)
		return tunable;
	*why = n_tunable ? "several tunable kernels and none has op_name "
			   "\"autotuned_op\""
			 : "no tunable kernel";
	return -1;
}

/* A row that was not costed predicts nothing (not 0 ns). */
static void no_prediction(struct val_row_result *res)
{
	res->predicted_ns = res->device_ns = res->analytic_ns = NAN;
	res->hybrid_ns = res->roofline_ns = NAN;
}

/* Marks every listed row as failed with the same message. */
static void fail_rows(struct val_report *r, const int *rows, int n,
		      enum ts_status st, const char *msg)
{
	for (int i = 0; i < n; i++) {
		struct val_row_result *res = &r->rows[rows[i]];
		res->status = st;
		res->error = msg;
		no_prediction(res);
	}
}

/* Costs one row given its module's program and per-kernel cache (emb:
 * each kernel's embedding when a model is given, else NULL). */
static enum ts_status cost_row(struct val_report *r, int i_row,
			       const struct sim_program *prog, int tuned,
			       const char *tuned_why,
			       const struct kcache *kc,
			       const struct hyb_embedding *emb,
			       const struct hw_spec *hw, const char *spec_name)
{
	const struct val_dataset *ds = r->ds;
	const struct val_row *row = &ds->rows[i_row];
	struct val_row_result *res = &r->rows[i_row];
	struct sim_estimate tuned_est;
	bool cfg_row = has_cfg(row);
	no_prediction(res);

	res->n_kernels = prog->n_kernels;
	res->i_tuned = tuned;
	res->spec_name = spec_name;
	res->dispatch_ns = row->timing == VAL_TIMING_HOST
				   ? sim_program_host_ns(prog, hw)
				   : 0;
	if (cfg_row && tuned < 0) {
		struct ts_diag d = {0};
		ts_diag_set(&d, ds->csv_path, row->line, row->config_col,
			    "config given but module '%s' has %s",
			    row->module, tuned_why);
		res->status = TS_ERR_MISUSE;
		res->error = diag_line(&r->arena, &d);
		return res->error ? TS_OK : TS_ERR_NOMEM;
	}
	if (cfg_row) {
		struct ts_diag d = {0};
		enum ts_status st = sim_kernel_estimate(
			&prog->kernels[tuned], hw, &row->cfg, &tuned_est, &d);
		if (st == TS_ERR_NOMEM)
			return st;
		if (st == TS_ERR_INFEASIBLE) {
			/* It ran on hardware: keep the row, flagged. */
			tuned_est.feasible = false;
		} else if (st != TS_OK) {
			struct ts_diag rd = {0};
			ts_diag_set(&rd, ds->csv_path, row->line,
				    row->config_col, "config '%s' on %s: %s",
				    row->config, prog->kernels[tuned].name,
				    d.msg);
			res->status = st;
			res->error = diag_line(&r->arena, &rd);
			return res->error ? TS_OK : TS_ERR_NOMEM;
		}
	}

	double device = 0, hybrid = 0, roof = 0, worst = -1;
	const char *fell_back = NULL; /* the first kernel costed analytic */
	int64_t steps = 0;
	bool time_ok = true;
	res->feasible = true;
	res->bound = HW_UNIT_NONE;
	const struct gnn_model *model = r->opts.model;
	bool host = row->timing == VAL_TIMING_HOST;
	/* each kernel's time x multiplicity, analytic, hybrid and roofline:
	 * the async time hidden behind other work is taken off each total
	 * as `run` takes it (sim_program_total) */
	int n = prog->n_kernels;
	double *ns = ts_calloc(3 * (size_t)(n > 0 ? n : 1), sizeof *ns);
	struct sim_async *pairs = ts_calloc(
		(size_t)(prog->n_async > 0 ? prog->n_async : 1), sizeof *pairs);
	if (!ns || !pairs) {
		ts_free(ns);
		ts_free(pairs);
		return TS_ERR_NOMEM;
	}
	double *dev_ns = ns, *hyb_ns = ns + n, *roof_ns = ns + 2 * n;
	for (int k = 0; k < n; k++) {
		const struct sim_estimate *e =
			cfg_row && k == tuned ? &tuned_est : &kc[k].def;
		double mult = prog->kernels[k].multiplicity;
		/* a kernel without analytic time (free, unmodelled) has
		 * none learned either: training saw no such kernel */
		if (model && e->time_ns > 0) {
			bool fb = false;
			hyb_ns[k] = hyb_kernel_predict(model, &emb[k],
						       &prog->kernels[k], e,
						       hw, host, &fb) *
				    mult;
			hybrid += hyb_ns[k];
			if (fb && !fell_back)
				fell_back = prog->kernels[k].name;
		}
		if (!e->feasible) {
			res->feasible = false;
			if (!(e->time_ns > 0) || !isfinite(e->time_ns))
				time_ok = false;
		}
		dev_ns[k] = e->time_ns * mult;
		roof_ns[k] = kc[k].roof.time_ns * mult;
		device += dev_ns[k];
		roof += roof_ns[k];
		res->mxu_cycles += e->mxu_cycles * mult;
		res->vpu_cycles += e->vpu_cycles * mult;
		res->dma_cycles += e->dma_cycles * mult;
		res->vmem_bytes = fmax(res->vmem_bytes, e->vmem_bytes);
		steps += (int64_t)((double)e->steps * mult);
		if (e->time_ns * mult > worst) {
			worst = e->time_ns * mult;
			res->bound = e->bound;
		}
	}
	device -= sim_program_hidden_ns(prog, dev_ns, pairs);
	hybrid -= model ? sim_program_hidden_ns(prog, hyb_ns, pairs) : 0;
	roof -= sim_program_hidden_ns(prog, roof_ns, pairs);
	ts_free(ns);
	ts_free(pairs);
	if (tuned >= 0) {
		const struct sim_estimate *e =
			cfg_row ? &tuned_est : &kc[tuned].def;
		steps = e->steps;
		res->bound = e->bound;
	}
	if (fell_back && r->n_fell_back++ == 0 &&
	    (!(r->fell_back_module = ts_arena_strndup(
		       &r->arena, row->module, strlen(row->module))) ||
	     !(r->fell_back_kernel = ts_arena_strndup(&r->arena, fell_back,
						      strlen(fell_back)))))
		return TS_ERR_NOMEM;
	res->measured_ns = (double)row->runtime_ns;
	res->analytic_ns = (time_ok ? device : NAN) + res->dispatch_ns;
	res->hybrid_ns = model && time_ok ? hybrid + res->dispatch_ns : NAN;
	res->device_ns = time_ok ? (model ? hybrid : device) : NAN;
	res->predicted_ns = model ? res->hybrid_ns : res->analytic_ns;
	res->roofline_ns = roof + res->dispatch_ns;
	res->steps = steps;
	res->status = TS_OK;
	if (r->opts.visit) {
		const struct sim_estimate *ests[64], **ep = ests;
		if (prog->n_kernels > 64 &&
		    !(ep = ts_malloc((size_t)prog->n_kernels * sizeof *ep)))
			return TS_ERR_NOMEM;
		for (int k = 0; k < prog->n_kernels; k++)
			ep[k] = cfg_row && k == tuned ? &tuned_est : &kc[k].def;
		enum ts_status st = r->opts.visit(r->opts.ctx, i_row, prog,
						  tuned, ep, hw);
		if (ep != ests)
			ts_free(ep);
		return st;
	}
	return TS_OK;
}

/* The slice a row ran on: its own topology, else the report's default. */
static struct hw_slice row_slice(const struct val_report *r,
				 const struct val_row *row)
{
	return row->slice.n_dims ? row->slice : r->opts.slice;
}

/* The spec a row is costed on: its hw's (specs), on its slice
 * (row_slice), with its set field's changes, if any (hw_spec_apply: a spec
 * calibrate is changing field by field is taken as it is); TS_ERR_MISUSE
 * when no spec serves its hw, TS_ERR_SPEC when a change does not apply,
 * d at the row's field. */
static enum ts_status row_spec(const struct val_report *r,
			       const struct val_specs *specs,
			       const struct val_row *row, struct hw_spec *hw,
			       struct ts_diag *d)
{
	const struct hw_spec *spec = val_specs_find(specs, row->hw);
	if (!spec) {
		ts_diag_set(d, r->ds->csv_path, row->line, row->hw_col,
			    "no hardware spec for hw '%s'", row->hw);
		return TS_ERR_MISUSE;
	}
	*hw = *spec;
	hw->slice = row_slice(r, row);
	struct ts_diag sd = {0};
	if (row->n_sets == 0 ||
	    hw_spec_apply(hw, row->n_sets, row->set_field, row->set_value,
			  row->set_text, &sd) == TS_OK)
		return TS_OK;
	ts_diag_set(d, r->ds->csv_path, row->line, row->set_col, "set: %s",
		    sd.msg);
	d->src = r->ds->csv_text;
	d->src_len = r->ds->csv_len;
	return TS_ERR_SPEC;
}

/* Whether row's slice (hw->slice) fits its generation, its device order
 * the slice, and its module's program (parsed from `path`, the dataset's
 * string: d outlives the module): TS_ERR_SPEC otherwise, d at the row's
 * topology field (devices field: its device order) when it has one; for
 * the report's default slice, the option's message or where
 * sim_program_check_slice puts it. */
static enum ts_status check_slice(const struct val_report *r,
				  const struct val_row *row,
				  const struct sim_program *prog,
				  const struct hw_spec *hw, const char *path,
				  struct ts_diag *d)
{
	struct ts_diag sd = {0};
	if (!hw->slice.n_dims)
		return TS_OK;
	enum ts_status st = hw_slice_check(hw, &hw->slice, &sd);
	bool order = false; /* the device order is what does not fit */
	if (st == TS_OK) {
		st = hw_slice_check_order(hw, &hw->slice, &sd);
		order = st != TS_OK;
	}
	if (st == TS_ERR_NOMEM) {
		ts_diag_set(d, path, 0, 0, "out of memory");
		return st;
	}
	bool fits = st == TS_OK;
	if (fits)
		st = sim_program_check_slice(prog, hw, &sd);
	if (st == TS_OK)
		return TS_OK;
	if (row->slice.n_dims) {
		ts_diag_set(d, r->ds->csv_path, row->line,
			    order ? row->devices_col : row->topology_col,
			    "%s: %s", order ? "devices" : "topology", sd.msg);
		d->src = r->ds->csv_text;
		d->src_len = r->ds->csv_len;
	} else if (!fits) {
		ts_diag_set(d, NULL, 0, 0, "%s: %s",
			    order ? "--devices" : "--topology", sd.msg);
	} else {
		*d = sd;
		d->file = path;
	}
	return st;
}

/* Parses, builds and costs one module and every row that measures it. */
static enum ts_status cost_module(struct val_report *r,
				  const struct val_specs *specs, int i_mod,
				  const int *rows, int n_rows,
				  struct ts_diag *d)
{
	const struct val_module *m = &r->ds->modules[i_mod];
	struct ts_diag hd = {0};
	char *text = NULL;
	struct ir_module **mods = NULL;
	int n_mods = 0;
	struct sim_program prog = {0};
	bool built = false;
	struct kcache *kc = NULL;
	struct hyb_embedding *emb = NULL;
	bool *done = NULL;
	enum ts_status st = hlo_parse_file(m->full_path, &text, &mods, &n_mods,
					   &hd);
	if (st == TS_ERR_NOMEM)
		goto out;
	if (st == TS_OK && n_mods != 1) {
		ts_diag_set(&hd, m->full_path, 0, 0,
			    "holds %d modules, expected one", n_mods);
		st = TS_ERR_PARSE;
	}
	if (st == TS_OK) {
		/* built for the spec with the most room among the rows'
		 * (its prefetches, sim_program_opts.vmem_room: idle on the
		 * others where they do not fit) */
		struct sim_program_opts opts = {.default_trip_count = 1};
		for (int q = 0; q < n_rows; q++) {
			struct hw_spec h;
			struct ts_diag sd = {0};
			if (row_spec(r, specs, &r->ds->rows[rows[q]], &h,
				     &sd) == TS_OK &&
			    sim_vmem_room(&h) > opts.vmem_room)
				opts.vmem_room = sim_vmem_room(&h);
		}
		/* fused and scheduled as XLA compiles it for the first row's
		 * spec (a set's rows of one module are of one generation) */
		const struct hw_spec *first =
			val_specs_find(specs, r->ds->rows[rows[0]].hw);
		opts.schedule_hw = first;
		struct sim_rewrites rewrites;
		if (first)
			st = sim_module_rewrite(mods[0], first, &rewrites, &hd);
		if (st == TS_OK)
			st = sim_program_build(mods[0], &opts, &prog, &hd);
		built = st == TS_OK;
		if (st == TS_ERR_NOMEM)
			goto out;
	}
	if (st != TS_OK) {
		const char *msg = diag_line(&r->arena, &hd);
		if (!msg) {
			st = TS_ERR_NOMEM;
			goto out;
		}
		fail_rows(r, rows, n_rows, st, msg);
		st = TS_OK;
		goto out;
	}

	const char *tuned_why;
	int tuned = find_tuned(&prog, &tuned_why);
	for (int k = 0; k < prog.n_kernels; k++) {
		const struct sim_kernel *kn = &prog.kernels[k];
		if (kn->kind != SIM_KERNEL_UNMODELLED)
			continue;
		if (r->n_unmodelled_modules++ == 0) {
			char buf[512];
			const char *t = kn->instr->attrs.custom_call_target;
			snprintf(buf, sizeof buf, "%s: %s (%s%s%s)", m->name,
				 kn->name, ir_op_name(kn->instr->op),
				 t ? " " : "", t ? t : "");
			r->unmodelled_example =
				ts_arena_strndup(&r->arena, buf, strlen(buf));
		}
		break;
	}
	kc = ts_calloc(prog.n_kernels ? (size_t)prog.n_kernels : 1,
		       sizeof *kc);
	done = ts_calloc((size_t)n_rows, sizeof *done);
	if (r->opts.model)
		emb = ts_calloc(prog.n_kernels ? (size_t)prog.n_kernels : 1,
				sizeof *emb);
	if (!kc || !done || (r->opts.model && !emb)) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	/* the graphs do not depend on the spec or the config: embed once */
	for (int k = 0; emb && k < prog.n_kernels; k++)
		if ((st = hyb_embed(r->opts.model, &prog.kernels[k], &emb[k])))
			goto out;
	/* Rows of one module normally share one spec, slice and set; cost the
	 * defaults once per distinct triple among them. */
	for (int first = 0; first < n_rows; first++) {
		if (done[first])
			continue;
		const struct val_row *row0 = &r->ds->rows[rows[first]];
		const struct hw_spec *spec = val_specs_find(specs, row0->hw);
		struct hw_spec hw;
		if ((st = row_spec(r, specs, row0, &hw, d)) ||
		    (st = check_slice(r, row0, &prog, &hw, m->full_path, d)) ||
		    (st = sim_program_place(&prog, &hw, d)))
			goto out;
		const char *kerr = NULL;
		enum ts_status kst = TS_OK;
		for (int k = 0; k < prog.n_kernels && !kerr; k++) {
			struct ts_diag kd = {0};
			kst = sim_kernel_estimate(&prog.kernels[k], &hw, NULL,
						  &kc[k].def, &kd);
			if (kst == TS_ERR_INFEASIBLE) {
				kc[k].def.feasible = false;
				kst = TS_OK;
			}
			if (kst == TS_OK)
				kst = sim_kernel_roofline(&prog.kernels[k], &hw,
							  &kc[k].roof, &kd);
			if (kst == TS_ERR_NOMEM) {
				st = kst;
				goto out;
			}
			if (kst != TS_OK) {
				if (!kd.file)
					kd.file = m->full_path;
				kerr = diag_line(&r->arena, &kd);
				if (!kerr) {
					st = TS_ERR_NOMEM;
					goto out;
				}
			}
		}
		for (int i = first; i < n_rows; i++) {
			const struct val_row *row = &r->ds->rows[rows[i]];
			struct hw_slice s = row_slice(r, row);
			if (done[i] || val_specs_find(specs, row->hw) != spec ||
			    memcmp(&s, &hw.slice, sizeof s) != 0 ||
			    strcmp(row->set, row0->set) != 0)
				continue;
			done[i] = true;
			if (kerr) {
				fail_rows(r, &rows[i], 1, kst, kerr);
				continue;
			}
			st = cost_row(r, rows[i], &prog, tuned, tuned_why, kc,
				      emb, &hw, spec->name);
			if (st)
				goto out;
		}
	}
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, m->full_path, 0, 0, "out of memory");
	ts_free(done);
	ts_free(kc);
	ts_free(emb);
	if (built)
		sim_program_free(&prog);
	for (int i = 0; i < n_mods; i++)
		ir_module_free(mods[i]);
	ts_free(mods);
	ts_free(text);
	return st;
}

/* ---- summaries ------------------------------------------------------------ */

/* Scratch arrays for one group's metrics (n entries each). */
struct scratch {
	double *meas, *pred, *roof_meas, *roof, *rank_meas, *rank, *steps;
};

static void scratch_free(struct scratch *s)
{
	ts_free(s->meas);
	ts_free(s->pred);
	ts_free(s->roof_meas);
	ts_free(s->roof);
	ts_free(s->rank_meas);
	ts_free(s->rank);
	ts_free(s->steps);
	*s = (struct scratch){0};
}

static enum ts_status scratch_init(struct scratch *s, size_t n)
{
	n = n ? n : 1;
	*s = (struct scratch){
		.meas = ts_calloc(n, sizeof(double)),
		.pred = ts_calloc(n, sizeof(double)),
		.roof_meas = ts_calloc(n, sizeof(double)),
		.roof = ts_calloc(n, sizeof(double)),
		.rank_meas = ts_calloc(n, sizeof(double)),
		.rank = ts_calloc(n, sizeof(double)),
		.steps = ts_calloc(n, sizeof(double)),
	};
	if (!s->meas || !s->pred || !s->roof_meas || !s->roof ||
	    !s->rank_meas || !s->rank || !s->steps) {
		scratch_free(s);
		return TS_ERR_NOMEM;
	}
	return TS_OK;
}

/*
 * Metrics of the rows idx[0..n). ranking: the rows are configs of one
 * kernel, so tau and top-K are meaningful. The model ranks a config it
 * calls infeasible after every feasible one (it would never pick it).
 */
static enum ts_status summarise(const struct val_report *r, const int *idx,
				int n, bool ranking, struct scratch *s,
				struct val_group *g)
{
	size_t n_pred = 0, n_roof = 0, n_rank = 0, n_unpredicted = 0;
	g->n_rows = n;
	g->best_ns = INFINITY;
	g->default_ns = NAN;
	for (int i = 0; i < n; i++) {
		const struct val_row_result *res = &r->rows[idx[i]];
		const struct val_row *row = &r->ds->rows[idx[i]];
		if (has_cfg(row))
			g->has_config = true;
		if (res->status != TS_OK)
			continue;
		if (!res->feasible)
			g->n_infeasible++;
		if (isfinite(res->predicted_ns)) {
			s->meas[n_pred] = res->measured_ns;
			s->pred[n_pred++] = res->predicted_ns;
		}
		if (isfinite(res->roofline_ns)) {
			s->roof_meas[n_roof] = res->measured_ns;
			s->roof[n_roof++] = res->roofline_ns;
		}
		s->rank_meas[n_rank] = res->measured_ns;
		s->rank[n_rank] = res->feasible && isfinite(res->device_ns)
					  ? res->device_ns
					  : INFINITY;
		/* a feasible row the model has no time for (compare: a fold
		 * no model was trained for) */
		n_unpredicted += res->feasible && !isfinite(res->device_ns);
		s->steps[n_rank++] = res->i_tuned >= 0 ? (double)res->steps : 0;
		g->best_ns = fmin(g->best_ns, res->measured_ns);
		if (isnan(g->default_ns) && is_default_source(row->source))
			g->default_ns = res->measured_ns;
	}
	g->n_estimated = (int)n_pred;
	g->n_ranked = (int)n_rank;
	g->mape = val_metric_mape(s->meas, s->pred, n_pred);
	g->roofline_mape = val_metric_mape(s->roof_meas, s->roof, n_roof);
	enum ts_status st;
	if ((st = val_metric_median_ape(s->meas, s->pred, n_pred,
					&g->median_ape)) ||
	    (st = val_metric_median_ape(s->roof_meas, s->roof, n_roof,
					&g->roofline_median_ape)))
		return st;

	g->tau_model = g->tau_roofline = g->tau_steps = NAN;
	g->top1_slowdown = g->top5_slowdown = g->steps_top1_slowdown = NAN;
	g->chosen_ns = NAN;
	if (n_rank == 0)
		g->best_ns = NAN;
	if (!ranking || n_rank == 0)
		return TS_OK;
	/* The roofline ignores the tile config: on one kernel all its values
	 * tie and tau is undefined, which is the point of the baseline. */
	if (n_roof == n_rank)
		g->tau_roofline =
			val_metric_kendall_tau_b(s->roof_meas, s->roof, n_roof);
	g->tau_steps = val_metric_kendall_tau_b(s->rank_meas, s->steps, n_rank);
	if ((st = val_metric_topk_slowdown(s->rank_meas, s->steps, n_rank, 1,
					   &g->steps_top1_slowdown)))
		return st;
	/* the model ranks the configs only when it timed every one: its
	 * figures are n/a otherwise (not the pick of a tie of unknowns) */
	if (n_unpredicted)
		return TS_OK;
	g->tau_model = val_metric_kendall_tau_b(s->rank_meas, s->rank, n_rank);
	if ((st = val_metric_topk_best(s->rank_meas, s->rank, n_rank, 1,
				       &g->chosen_ns)) ||
	    (st = val_metric_topk_slowdown(s->rank_meas, s->rank, n_rank, 1,
					   &g->top1_slowdown)) ||
	    (st = val_metric_topk_slowdown(s->rank_meas, s->rank, n_rank, 5,
					   &g->top5_slowdown)))
		return st;
	return TS_OK;
}

/*
 * group_of[row] = group index, groups numbered by first appearance. Kernel
 * groups are the modules; family groups come from the ids (val_id_family).
 */
static enum ts_status assign_groups(struct val_report *r, int *group_of)
{
	const struct val_dataset *ds = r->ds;
	int n = ds->n_rows;
	if (r->by_kernel) {
		r->groups = ts_arena_array(&r->arena, (size_t)ds->n_modules,
					   sizeof *r->groups);
		if (!r->groups)
			return TS_ERR_NOMEM;
		r->n_groups = ds->n_modules;
		for (int i = 0; i < ds->n_modules; i++)
			r->groups[i].name = ds->modules[i].name;
		for (int i = 0; i < n; i++)
			group_of[i] = ds->rows[i].i_module;
		return TS_OK;
	}
	enum ts_status st = TS_OK;
	const char **fam = ts_calloc((size_t)n, sizeof *fam);
	if (!fam)
		return TS_ERR_NOMEM;
	for (int i = 0; i < n; i++) {
		char buf[128];
		val_id_family(ds->rows[i].id, buf, sizeof buf);
		fam[i] = ts_arena_strndup(&r->arena, buf, strlen(buf));
		if (!fam[i]) {
			st = TS_ERR_NOMEM;
			goto out;
		}
	}
	if ((st = val_group_keys(fam, n, group_of, &r->n_groups)))
		goto out;
	r->groups = ts_arena_array(&r->arena, (size_t)r->n_groups,
				   sizeof *r->groups);
	if (!r->groups) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++)
		r->groups[group_of[i]].name = fam[i];
out:
	ts_free(fam);
	return st;
}

static enum ts_status build_summaries(struct val_report *r)
{
	const struct val_dataset *ds = r->ds;
	int n = ds->n_rows;
	enum ts_status st = TS_OK;
	struct scratch s = {0};
	int *group_of = ts_calloc((size_t)n, sizeof *group_of);
	int *idx = ts_calloc((size_t)n, sizeof *idx);
	int *offs = ts_calloc((size_t)n + 1, sizeof *offs);
	if (!group_of || !idx || !offs || scratch_init(&s, (size_t)n)) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	r->by_kernel = ds->has_configs;
	if ((st = assign_groups(r, group_of)))
		goto out;
	/* Rows by group (counting sort, file order within a group):
	 * idx[offs[g] .. offs[g+1]). */
	for (int i = 0; i < n; i++)
		offs[group_of[i] + 1]++;
	for (int g = 0; g < r->n_groups; g++)
		offs[g + 1] += offs[g];
	for (int i = 0; i < n; i++)
		idx[offs[group_of[i]]++] = i;
	for (int g = r->n_groups; g > 0; g--) /* undo the fill's advance */
		offs[g] = offs[g - 1];
	offs[0] = 0;

	double sum_tau[3] = {0}, sum_top[3] = {0};
	int n_tau[3] = {0};
	for (int gi = 0; gi < r->n_groups; gi++) {
		struct val_group *g = &r->groups[gi];
		const char *name = g->name;
		memset(g, 0, sizeof *g);
		g->name = name;
		if ((st = summarise(r, idx + offs[gi], offs[gi + 1] - offs[gi],
				    r->by_kernel, &s, g)))
			goto out;
		double tau[3] = {g->tau_model, g->tau_roofline, g->tau_steps};
		for (int t = 0; t < 3; t++)
			if (!isnan(tau[t]) && g->n_ranked >= VAL_TAU_MIN_ROWS) {
				sum_tau[t] += tau[t];
				n_tau[t]++;
			}
		if (r->by_kernel && g->n_ranked >= 2 &&
		    !isnan(g->top1_slowdown)) {
			sum_top[0] += g->top1_slowdown;
			sum_top[1] += g->top5_slowdown;
			sum_top[2] += g->steps_top1_slowdown;
			r->n_rank_kernels++;
		}
		if (r->by_kernel && !isnan(g->default_ns) &&
		    !isnan(g->chosen_ns)) {
			struct val_tile_totals *tt[2] = {&r->tiles_all,
							 &r->tiles_config};
			/* The steps baseline's pick: its top-1 time. */
			double steps_ns = g->best_ns * (1 + g->steps_top1_slowdown);
			for (int t = 0; t < (g->has_config ? 2 : 1); t++) {
				tt[t]->n_kernels++;
				tt[t]->best_ns += g->best_ns;
				tt[t]->chosen_ns += g->chosen_ns;
				tt[t]->steps_ns += steps_ns;
				tt[t]->default_ns += g->default_ns;
			}
		}
	}
	r->n_tau_kernels = n_tau[0];
	r->mean_tau_model = n_tau[0] ? sum_tau[0] / n_tau[0] : NAN;
	r->mean_tau_roofline = n_tau[1] ? sum_tau[1] / n_tau[1] : NAN;
	r->mean_tau_steps = n_tau[2] ? sum_tau[2] / n_tau[2] : NAN;
	int nr = r->n_rank_kernels;
	r->mean_top1_slowdown = nr ? sum_top[0] / nr : NAN;
	r->mean_top5_slowdown = nr ? sum_top[1] / nr : NAN;
	r->mean_steps_top1_slowdown = nr ? sum_top[2] / nr : NAN;

	qsort(r->groups, (size_t)r->n_groups, sizeof *r->groups, cmp_worst);
	for (int i = 0; i < n; i++)
		idx[i] = i;
	r->overall.name = ds->name;
	st = summarise(r, idx, n, false, &s, &r->overall);
out:
	scratch_free(&s);
	ts_free(group_of);
	ts_free(idx);
	ts_free(offs);
	return st;
}

/* ---- building ------------------------------------------------------------- */

enum ts_status val_report_repredict(const struct val_report *base,
				    const double *device_ns,
				    struct val_report *out)
{
	memset(out, 0, sizeof *out);
	ts_arena_init(&out->arena);
	out->ds = base->ds;
	out->n_rows = base->n_rows;
	out->host_term_mape = base->host_term_mape;
	out->n_errors = base->n_errors;
	out->n_infeasible = base->n_infeasible;
	out->n_host = base->n_host;
	out->n_host_recorded = base->n_host_recorded;
	out->n_unmodelled_modules = base->n_unmodelled_modules;
	out->spec_names = base->spec_names;
	out->unmodelled_example = base->unmodelled_example;
	out->n_fell_back = base->n_fell_back;
	out->fell_back_module = base->fell_back_module;
	out->fell_back_kernel = base->fell_back_kernel;
	out->rows = ts_arena_array(&out->arena, (size_t)base->n_rows,
				   sizeof *out->rows);
	if (!out->rows && base->n_rows)
		return TS_ERR_NOMEM;
	for (int i = 0; i < base->n_rows; i++) {
		struct val_row_result *res = &out->rows[i];
		*res = base->rows[i];
		if (res->status != TS_OK)
			continue;
		res->device_ns = device_ns[i];
		res->predicted_ns = device_ns[i] + res->dispatch_ns;
		res->hybrid_ns = res->predicted_ns;
	}
	return build_summaries(out);
}

void val_report_free(struct val_report *r)
{
	if (!r)
		return;
	ts_arena_free(&r->arena);
	memset(r, 0, sizeof *r);
}

enum ts_status val_report_build(const struct val_dataset *ds,
				const struct val_specs *specs,
				const struct val_report_opts *opts,
				struct val_report *r, struct ts_diag *d)
{
	memset(r, 0, sizeof *r);
	ts_arena_init(&r->arena);
	r->ds = ds;
	if (opts)
		r->opts = *opts;
	r->n_rows = ds->n_rows;
	r->host_term_mape = NAN;
	enum ts_status st = TS_OK;
	int *offs = NULL, *rows = NULL, *fill = NULL;
	r->rows = ts_arena_array(&r->arena, (size_t)ds->n_rows,
				 sizeof *r->rows);
	offs = ts_calloc((size_t)ds->n_modules + 1, sizeof *offs);
	rows = ts_calloc((size_t)ds->n_rows, sizeof *rows);
	fill = ts_calloc((size_t)ds->n_modules + 1, sizeof *fill);
	if (!r->rows || !offs || !rows || !fill) {
		st = TS_ERR_NOMEM;
		ts_diag_set(d, ds->csv_path, 0, 0, "out of memory");
		goto out;
	}
	/* Rows grouped by module (CSR): rows[offs[m] .. offs[m+1]). */
	for (int i = 0; i < ds->n_modules; i++)
		offs[i + 1] = offs[i] + ds->modules[i].n_rows;
	for (int i = 0; i < ds->n_rows; i++) {
		int m = ds->rows[i].i_module;
		rows[offs[m] + fill[m]++] = i;
	}
	for (int m = 0; m < ds->n_modules; m++)
		if ((st = cost_module(r, specs, m, rows + offs[m],
				      offs[m + 1] - offs[m], d)))
			goto out;

	char names[VAL_MAX_HW * (HW_NAME_MAX + 1)] = "";
	double host_ape = 0;
	for (int i = 0; i < ds->n_rows; i++) {
		const struct val_row_result *res = &r->rows[i];
		if (ds->rows[i].timing == VAL_TIMING_HOST) {
			r->n_host++;
			if (ds->rows[i].overhead_ns > 0 && res->status == TS_OK) {
				double o = (double)ds->rows[i].overhead_ns;
				r->n_host_recorded++;
				host_ape += fabs(res->dispatch_ns - o) / o;
			}
		}
		if (res->status != TS_OK) {
			r->n_errors++;
			continue;
		}
		if (!res->feasible)
			r->n_infeasible++;
	}
	if (r->n_host_recorded)
		r->host_term_mape = host_ape / r->n_host_recorded;
	for (int s = 0; s < specs->n; s++) {
		bool used = false;
		for (int i = 0; i < ds->n_rows && !used; i++)
			used = r->rows[i].spec_name == specs->spec[s].name;
		if (!used)
			continue;
		if (names[0])
			strcat(names, ",");
		strcat(names, specs->spec[s].name);
	}
	r->spec_names = ts_arena_strndup(&r->arena, names, strlen(names));
	if (!r->spec_names || (st = build_summaries(r))) {
		st = TS_ERR_NOMEM;
		ts_diag_set(d, ds->csv_path, 0, 0, "out of memory");
	}
out:
	ts_free(offs);
	ts_free(rows);
	ts_free(fill);
	return st;
}

/* ---- writers -------------------------------------------------------------- */

/* x, or +0 when it rounds to zero at `decimals` decimals: printed, a
 * negative one would read "-0.0%", a small loss. */
static double plus_zero(double x, int decimals)
{
	return fabs(x) < 0.5 * pow(10, -decimals) ? 0.0 : x;
}

const char *val_fmt_pct(char *buf, size_t cap, double x)
{
	if (isnan(x))
		snprintf(buf, cap, "n/a");
	else
		snprintf(buf, cap, "%.1f%%", plus_zero(100 * x, 1));
	return buf;
}

const char *val_fmt_pct_change(char *buf, size_t cap, double x)
{
	if (isnan(x))
		snprintf(buf, cap, "n/a");
	else
		snprintf(buf, cap, "%+.1f%%", plus_zero(100 * x, 1));
	return buf;
}

/* "+12.3%" of a total over a base. */
static const char *above(char *buf, size_t cap, double x, double base)
{
	return val_fmt_pct_change(buf, cap, base > 0 ? x / base - 1 : NAN);
}

const char *val_fmt_fix3(char *buf, size_t cap, double x)
{
	if (isnan(x))
		snprintf(buf, cap, "n/a");
	else
		snprintf(buf, cap, "%.3f", plus_zero(x, 3));
	return buf;
}

/* The set-level figures both summaries (text, Markdown) print, formatted
 * once by set_cells(). */
struct set_cells {
	char mape[32], medape[32];           /* the model's overall APEs */
	char roof_mape[32], roof_medape[32]; /* the roofline's */
	char tau[3][32];      /* mean tau-b: model, roofline, fewer steps */
	char top1[2][32];     /* mean top-1 slowdown: model, fewer steps */
	char top5[32];        /* mean top-5 slowdown of the model */
	char tiles[2][3][32]; /* tile choice above the measured bests, over
	                         [all kernels, those with a config] of
	                         [model's best, fewest steps, compiler
	                         default] */
};

#define CELL(buf) buf, sizeof buf /* a buffer and its size */
#define B(i) CELL(bufs[i])          /* a formatting buffer */

static void set_cells(const struct val_report *r, struct set_cells *c)
{
	const struct val_group *o = &r->overall;
	val_fmt_pct(CELL(c->mape), o->mape);
	val_fmt_pct(CELL(c->medape), o->median_ape);
	val_fmt_pct(CELL(c->roof_mape), o->roofline_mape);
	val_fmt_pct(CELL(c->roof_medape), o->roofline_median_ape);
	val_fmt_fix3(CELL(c->tau[0]), r->mean_tau_model);
	val_fmt_fix3(CELL(c->tau[1]), r->mean_tau_roofline);
	val_fmt_fix3(CELL(c->tau[2]), r->mean_tau_steps);
	val_fmt_pct(CELL(c->top1[0]), r->mean_top1_slowdown);
	val_fmt_pct(CELL(c->top1[1]), r->mean_steps_top1_slowdown);
	val_fmt_pct(CELL(c->top5), r->mean_top5_slowdown);
	const struct val_tile_totals *t[2] = {&r->tiles_all, &r->tiles_config};
	for (int i = 0; i < 2; i++) {
		above(CELL(c->tiles[i][0]), t[i]->chosen_ns, t[i]->best_ns);
		above(CELL(c->tiles[i][1]), t[i]->steps_ns, t[i]->best_ns);
		above(CELL(c->tiles[i][2]), t[i]->default_ns, t[i]->best_ns);
	}
}

static enum ts_status stream_status(FILE *out)
{
	return ferror(out) ? TS_ERR_IO : TS_OK;
}

/* Timing note: how host-timed rows were compared. */
static void print_host_note(const struct val_report *r, FILE *out)
{
	if (r->n_host == 0)
		return;
	fprintf(out,
		"host-timed rows: %d; each is compared with the device "
		"estimate + the program's host term (spec host.call_ns + "
		"host.kernel_ns x kernels (not async DMAs) + host.device_ns x "
		"(devices - 1))",
		r->n_host);
	char b[32];
	if (r->n_host_recorded)
		fprintf(out,
			"; against the overhead the set records for %d of "
			"the calls (details.csv, not an input) that term is "
			"off by %s (MAPE)",
			r->n_host_recorded,
			val_fmt_pct(b, sizeof b, r->host_term_mape));
	fputs("\n", out);
}

#define LIST_PER_MODULE 5 /* rows listed per module; the rest are counted */

/*
 * Lists the rows the model calls infeasible (want_errors false) or could not
 * cost (true): at most LIST_PER_MODULE per module, a row whose message is
 * the one just listed for its module (a module-wide error) folded in, then
 * one line per module counting what was not listed.
 */
static enum ts_status list_rows(const struct val_report *r, FILE *out,
				bool want_errors)
{
	const struct val_dataset *ds = r->ds;
	size_t n_mod = ds->n_modules ? (size_t)ds->n_modules : 1;
	int *shown = ts_calloc(n_mod, sizeof *shown);
	int *hidden = ts_calloc(n_mod, sizeof *hidden);
	const char **last = ts_calloc(n_mod, sizeof *last);
	if (!shown || !hidden || !last) {
		ts_free(shown);
		ts_free(hidden);
		ts_free(last);
		return TS_ERR_NOMEM;
	}
	for (int i = 0; i < r->n_rows; i++) {
		const struct val_row_result *res = &r->rows[i];
		const struct val_row *row = &ds->rows[i];
		int m = row->i_module;
		bool is_err = res->status != TS_OK;
		if (is_err != want_errors || (!is_err && res->feasible))
			continue;
		if (shown[m] == LIST_PER_MODULE ||
		    (is_err && res->error == last[m])) {
			hidden[m]++;
			continue;
		}
		shown[m]++;
		if (is_err) {
			last[m] = res->error;
			fprintf(out, "  %s: %s\n", row->id, res->error);
		} else {
			fprintf(out, "  %s %s measured %.0f ns, working set "
				"%.0f bytes\n", row->id, row->config,
				res->measured_ns, res->vmem_bytes);
		}
	}
	for (int m = 0; m < ds->n_modules; m++)
		if (hidden[m])
			fprintf(out, "  ... and %d more rows of %s\n", hidden[m],
				ds->modules[m].name);
	ts_free(shown);
	ts_free(hidden);
	ts_free(last);
	return TS_OK;
}

/* Rows the model calls infeasible, and rows without an estimate. */
static enum ts_status print_exceptions(const struct val_report *r, FILE *out)
{
	enum ts_status st = TS_OK;
	if (r->n_infeasible) {
		fprintf(out,
			"infeasible per model but measured on hardware: %d "
			"row%s:\n", r->n_infeasible,
			r->n_infeasible == 1 ? "" : "s");
		st = list_rows(r, out, false);
	}
	if (st == TS_OK && r->n_errors) {
		fprintf(out, "not estimated: %d row%s:\n", r->n_errors,
			r->n_errors == 1 ? "" : "s");
		st = list_rows(r, out, true);
	}
	return st;
}

enum ts_status val_report_print_table(const struct val_report *r, FILE *out)
{
	const struct val_dataset *ds = r->ds;
	const struct val_group *o = &r->overall;
	char bufs[10][32];
	fprintf(out, "== %s: %d rows, %d modules, spec %s\n", ds->name,
		ds->n_rows, ds->n_modules, r->spec_names);
	if (r->by_kernel) {
		fprintf(out,
			"%-12s %5s %7s %7s %8s %6s %8s %9s %7s %7s %8s %8s\n",
			"kernel", "rows", "MAPE", "medAPE", "roofMAPE", "tau",
			"tau_roof", "tau_steps", "top1", "top5", "steps1",
			"default");
		for (int i = 0; i < r->n_groups; i++) {
			const struct val_group *g = &r->groups[i];
			fprintf(out,
				"%-12s %5d %7s %7s %8s %6s %8s %9s %7s %7s "
				"%8s %8s\n",
				g->name, g->n_rows, val_fmt_pct(B(0), g->mape),
				val_fmt_pct(B(1), g->median_ape),
				val_fmt_pct(B(2), g->roofline_mape),
				val_fmt_fix3(B(3), g->tau_model),
				val_fmt_fix3(B(4), g->tau_roofline),
				val_fmt_fix3(B(5), g->tau_steps),
				val_fmt_pct(B(6), g->top1_slowdown),
				val_fmt_pct(B(7), g->top5_slowdown),
				val_fmt_pct(B(8), g->steps_top1_slowdown),
				above(B(9), g->default_ns, g->best_ns));
		}
		fprintf(out,
			"(top1/top5: slowdown of the model's best 1/5 configs "
			"vs the measured best; steps1: same for fewer tile "
			"steps; default: compiler default vs best)\n");
	} else {
		fprintf(out, "%-20s %5s %7s %7s %8s %10s\n", "family", "rows",
			"MAPE", "medAPE", "roofMAPE", "roofMedAPE");
		for (int i = 0; i < r->n_groups; i++) {
			const struct val_group *g = &r->groups[i];
			fprintf(out, "%-20s %5d %7s %7s %8s %10s\n", g->name,
				g->n_rows, val_fmt_pct(B(0), g->mape),
				val_fmt_pct(B(1), g->median_ape),
				val_fmt_pct(B(2), g->roofline_mape),
				val_fmt_pct(B(3), g->roofline_median_ape));
		}
	}
	struct set_cells c;
	set_cells(r, &c);
	fprintf(out,
		"set %s: %d rows, %d estimated, %d errors, %d infeasible; MAPE "
		"%s, median APE %s; roofline MAPE %s, median APE %s\n",
		ds->name, o->n_rows, o->n_estimated, r->n_errors,
		r->n_infeasible, c.mape, c.medape, c.roof_mape, c.roof_medape);
	if (r->by_kernel) {
		fprintf(out,
			"set %s: ranking: Kendall tau-b, mean over the %d "
			"kernels with >= %d configs: model %s, roofline %s, "
			"fewer-steps %s; slowdown, mean over the %d kernels "
			"with >= 2: top-1 model %s, fewer-steps %s; top-5 "
			"model %s\n",
			ds->name, r->n_tau_kernels, VAL_TAU_MIN_ROWS, c.tau[0],
			c.tau[1], c.tau[2], r->n_rank_kernels, c.top1[0],
			c.top1[1], c.top5);
		fprintf(out,
			"set %s: tile choice, total over %d kernels vs measured "
			"bests: model's best %s, fewer-steps %s, compiler "
			"default %s; without the %d kernels that have no "
			"config: model's best %s, fewer-steps %s, compiler "
			"default %s\n",
			ds->name, r->tiles_all.n_kernels, c.tiles[0][0],
			c.tiles[0][1], c.tiles[0][2],
			r->tiles_all.n_kernels - r->tiles_config.n_kernels,
			c.tiles[1][0], c.tiles[1][1], c.tiles[1][2]);
	}
	print_host_note(r, out);
	enum ts_status st = print_exceptions(r, out);
	return st ? st : stream_status(out);
}

enum ts_status val_report_print_markdown(const struct val_report *r,
					 FILE *out)
{
	const struct val_dataset *ds = r->ds;
	char bufs[6][32];
	struct set_cells c;
	set_cells(r, &c);
	fprintf(out, "#### %s (%d rows, spec %s)\n\n", ds->name, ds->n_rows,
		r->spec_names);
	fprintf(out,
		"| | model | roofline |\n|---|---|---|\n"
		"| MAPE | %s | %s |\n| median APE | %s | %s |\n\n",
		c.mape, c.roof_mape, c.medape, c.roof_medape);
	if (r->by_kernel) {
		fprintf(out,
			"Ranking the tile configs of each kernel (Kendall "
			"tau-b: mean over the %d kernels with >= %d configs; "
			"slowdowns: mean over the %d kernels with >= 2):\n\n"
			"| | model | roofline | fewer tile steps |\n"
			"|---|---|---|---|\n"
			"| Kendall tau-b | %s | %s | %s |\n"
			"| top-1 slowdown | %s | | %s |\n"
			"| top-5 slowdown | %s | | |\n\n",
			r->n_tau_kernels, VAL_TAU_MIN_ROWS, r->n_rank_kernels,
			c.tau[0], c.tau[1], c.tau[2], c.top1[0], c.top1[1],
			c.top5);
		fprintf(out,
			"Tile choice, total measured time above the sum of "
			"measured bests: model's best %s, fewest steps %s, "
			"compiler default %s (%d kernels); without the %d "
			"kernels that have no config: %s, %s, %s.\n\n",
			c.tiles[0][0], c.tiles[0][1], c.tiles[0][2],
			r->tiles_all.n_kernels,
			r->tiles_all.n_kernels - r->tiles_config.n_kernels,
			c.tiles[1][0], c.tiles[1][1], c.tiles[1][2]);
		fprintf(out, "| kernel | rows | MAPE | tau model | tau steps "
			     "| top-1 model | top-1 steps | compiler default |\n"
			     "|---|---|---|---|---|---|---|---|\n");
		for (int i = 0; i < r->n_groups; i++) {
			const struct val_group *g = &r->groups[i];
			fprintf(out, "| %s | %d | %s | %s | %s | %s | %s | %s |\n",
				g->name, g->n_rows, val_fmt_pct(B(0), g->mape),
				val_fmt_fix3(B(1), g->tau_model),
				val_fmt_fix3(B(2), g->tau_steps),
				val_fmt_pct(B(3), g->top1_slowdown),
				val_fmt_pct(B(4), g->steps_top1_slowdown),
				above(B(5), g->default_ns, g->best_ns));
		}
	} else {
		fprintf(out, "| family | rows | MAPE | median APE | roofline "
			     "MAPE |\n|---|---|---|---|---|\n");
		for (int i = 0; i < r->n_groups; i++) {
			const struct val_group *g = &r->groups[i];
			fprintf(out, "| %s | %d | %s | %s | %s |\n", g->name,
				g->n_rows, val_fmt_pct(B(0), g->mape),
				val_fmt_pct(B(1), g->median_ape),
				val_fmt_pct(B(2), g->roofline_mape));
		}
	}
	fputc('\n', out);
	print_host_note(r, out);
	if (r->n_infeasible || r->n_errors)
		fprintf(out,
			"%d rows the model calls infeasible (measured on "
			"hardware, kept); %d rows not estimated.\n",
			r->n_infeasible, r->n_errors);
	if (r->n_host || r->n_infeasible || r->n_errors)
		fputc('\n', out);
	return stream_status(out);
}
