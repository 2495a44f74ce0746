/*
 * val_learn.c: measured sets as the training data of the learned residual
 * (learned/gnn.h). Every row is costed by val_report_build; its visitor
 * turns the row's program into a sample: one item per kernel with an
 * analytic time (its graph, built once per module; its kernel features;
 * its analytic time and multiplicity), the host term of a host-timed
 * row, the measured time. No measured value but the row's own runtime,
 * the training target, enters a sample.
 */
#include "val.h"

#include <math.h>
#include <string.h>

struct visit_ctx {
	struct val_learn *l;
	const struct val_dataset *ds;
	int set;
	const int *group_of;   /* per row of the set: its group */
	int module;            /* module whose graphs graph_of holds */
	int *graph_of;         /* per kernel of that module: graph, -1 none */
	int cap;
};

static enum ts_status visit(void *ctx, int i_row, const struct sim_program *prog,
			    int tuned, const struct sim_estimate *const *est,
			    const struct hw_spec *hw)
{
	(void)tuned;
	struct visit_ctx *c = ctx;
	struct gnn_data *d = &c->l->data;
	const struct val_row *row = &c->ds->rows[i_row];
	if (row->i_module != c->module || prog->n_kernels > c->cap) {
		if (prog->n_kernels > c->cap) {
			int *g = ts_realloc(c->graph_of,
					    (size_t)prog->n_kernels * sizeof *g);
			if (!g)
				return TS_ERR_NOMEM;
			c->graph_of = g;
			c->cap = prog->n_kernels;
		}
		for (int k = 0; k < prog->n_kernels; k++)
			c->graph_of[k] = -1;
		c->module = row->i_module;
	}
	bool host = row->timing == VAL_TIMING_HOST;
	struct gnn_sample s = {
		.first = d->n_items,
		.extra_ns = host ? sim_program_host_ns(prog, hw) : 0,
		.measured_ns = (double)row->runtime_ns,
		.set = c->set,
		.group = c->group_of[i_row],
		.rank_group = c->ds->has_configs ? c->group_of[i_row] : -1,
	};
	for (int k = 0; k < prog->n_kernels; k++) {
		const struct sim_kernel *kn = &prog->kernels[k];
		if (!(est[k]->time_ns > 0) || !isfinite(est[k]->time_ns) ||
		    !(kn->multiplicity > 0))
			continue;
		if (c->graph_of[k] < 0) {
			struct gnn_graph g;
			enum ts_status st = gnn_graph_build(kn, &g);
			if (st == TS_OK)
				st = gnn_data_add_graph(d, &g, &c->graph_of[k]);
			if (st) {
				gnn_graph_free(&g);
				return st;
			}
		}
		struct gnn_item it = {.graph = c->graph_of[k],
				      .analytic_ns = est[k]->time_ns,
				      .mult = kn->multiplicity};
		gnn_kernel_features(kn, est[k], hw, host, it.kf);
		enum ts_status st = gnn_data_add_item(d, &it);
		if (st)
			return st;
		s.n++;
	}
	if (s.n == 0)
		return TS_OK; /* nothing the model costs: not a sample */
	int i = d->n_samples;
	enum ts_status st = gnn_data_add_sample(d, &s);
	if (st)
		return st;
	int *so = ts_realloc(c->l->set_of, ((size_t)i + 1) * sizeof *so);
	if (!so)
		return TS_ERR_NOMEM;
	c->l->set_of = so;
	int *ro = ts_realloc(c->l->row_of, ((size_t)i + 1) * sizeof *ro);
	if (!ro)
		return TS_ERR_NOMEM;
	c->l->row_of = ro;
	c->l->set_of[i] = c->set;
	c->l->row_of[i] = i_row;
	return TS_OK;
}

void val_learn_free(struct val_learn *l)
{
	gnn_data_free(&l->data);
	ts_free(l->set_of);
	ts_free(l->row_of);
	ts_arena_free(&l->arena);
	memset(l, 0, sizeof *l);
}

enum ts_status val_learn_build(const struct val_dataset *const *sets,
			       const struct val_specs *const *specs, int n_sets,
			       struct val_learn *out, struct ts_diag *d)
{
	memset(out, 0, sizeof *out);
	ts_arena_init(&out->arena);
	if (n_sets > GNN_MAX_SETS) {
		ts_diag_set(d, NULL, 0, 0, "at most %d sets", GNN_MAX_SETS);
		return TS_ERR_MISUSE;
	}
	int total = 0;
	for (int i = 0; i < n_sets; i++)
		total += sets[i]->n_rows;
	out->n_rows = total;
	const char **keys = ts_calloc((size_t)total + 1, sizeof *keys);
	int *group_of = ts_calloc((size_t)total + 1, sizeof *group_of);
	enum ts_status st = keys && group_of ? TS_OK : TS_ERR_NOMEM;
	for (int i = 0, at = 0; i < n_sets && !st; i++)
		for (int r = 0; r < sets[i]->n_rows && !st; r++, at++)
			if (!(keys[at] = val_row_key(&out->arena, sets[i],
						     &sets[i]->rows[r], true)))
				st = TS_ERR_NOMEM;
	if (!st)
		st = val_group_keys(keys, total, group_of, &out->data.n_groups);
	out->data.n_sets = n_sets;
	struct visit_ctx c = {.l = out, .module = -1};
	for (int i = 0, at = 0; i < n_sets && !st; at += sets[i]->n_rows, i++) {
		snprintf(out->data.sets[i], sizeof out->data.sets[i], "%s",
			 sets[i]->name);
		c.ds = sets[i];
		c.set = i;
		c.module = -1;
		c.group_of = group_of + at;
		struct val_report_opts o = {.visit = visit, .ctx = &c};
		struct val_report rep;
		st = val_report_build(sets[i], specs[i], &o, &rep, d);
		val_report_free(&rep);
	}
	out->n_skipped = total - out->data.n_samples;
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, NULL, 0, 0, "out of memory");
	ts_free(c.graph_of);
	ts_free(keys);
	ts_free(group_of);
	if (st)
		val_learn_free(out);
	return st;
}
