/*
 * schedule.c: where XLA's latency-hiding scheduler puts an asynchronous
 * collective in a computation tpusim groups (an unfused module).
 *
 * On a spec whose xla.async_all_reduce_bytes is set (v7: XLA runs every
 * all-reduce of at least that many bytes on the SparseCores, a call-start
 * and call-done beside the TensorCore; docs/COMPILED.md), each such
 * all-reduce becomes an async pair; so does each all-gather that
 * sim_module_rewrite marked (xla.async_all_gather, v5e: XLA's async
 * collective fusion, the transfer beside a convolution). The
 * computation's nodes (its kernels' groups and the instructions of no
 * group, in sim_group_order's order) are listed again, bottom up, as
 * XLA's latency-hiding scheduler lists them. With tau the TensorCore's
 * time from the computation's end (ns; each node its kernels' roofline
 * time x multiplicity on the spec, sim_kernel_roofline, the
 * collective's too; the tile model's times gave the zoo the same
 * schedules at the cost of every kernel's tile search, twice) and a node
 * ready once every node that reads it is listed (a pair's done once its
 * readers are, its start once its done is), each step takes the first of:
 *   1. a ready done, fewer pairs of its kind open than in_flight allows:
 *      the last in the given order; its pair opens at d = tau
 *   2. a ready start whose collective is covered, tau - d >= its time:
 *      the one opened first
 *   3. another ready node, the last in the given order: tau += its time
 *   4. a ready start not covered, the one opened first (the TensorCore
 *      will wait at its done); else a ready done over the limit
 * so that a done goes as late as its readers allow, its start as early as
 * it must to hide the collective and no earlier, and everything else
 * keeps the given order (with no async node the list is that order).
 * Units: ns. Assumes the rooflines rank the nodes as XLA's own cost model
 * does (not public); the scheduler's memory-pressure limit is not
 * modelled (a start moved early keeps its operand live longer).
 * in_flight: 2 all-reduces, the most data/compiled/v7 has in flight at
 * once (v7/mlp_m's all-reduce.9 and .11); 1 all-gather, as every
 * async-collective-start in data/compiled/v5e (vit_s, dlrm_s) comes
 * after the done of the one before. Source: XLA's
 * latency_hiding_scheduler.cc (bottom-up list scheduling; async dones
 * first, starts delayed until their latency is covered, the original
 * order as the last tie-break), read off data/compiled/v7 and v5e for
 * what runs so.
 */
#include "kernels_int.h"

#include <stdlib.h>
#include <string.h>

/* The most pairs open at once: all-reduces, all-gathers (above). */
static const int in_flight[2] = {2, 1};

/* The instruction that stands for node x: itself, or its group's root. */
static int anchor(const struct grouping *g, int x)
{
	return x < g->n ? x : g->g_root[x - g->n];
}

bool sim_async_collective(const struct ir_instr *in, double min_bytes)
{
	if (in->op == IR_OP_ALL_GATHER)
		return in->flags & IR_INSTR_ASYNC;
	return min_bytes > 0 && in->op == IR_OP_ALL_REDUCE &&
	       ir_shape_bytes(&in->shape) >= min_bytes;
}

int sim_async_collectives(const struct ir_module *m, double min_bytes,
			  enum ir_op op)
{
	int n = 0;
	for (int ci = 0; ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[ci]->instrs[i];
			n += (op == IR_OP_INVALID || in->op == op) &&
			     sim_async_collective(in, min_bytes);
		}
	return n;
}

bool sim_schedule_async_node(const struct grouping *g, int x, double min_bytes)
{
	if (x < g->n ||
	    !sim_async_collective(g->c->instrs[g->g_root[x - g->n]], min_bytes))
		return false;
	const int *mem;
	int n_mem = sim_group_members(g, x - g->n, &mem), working = 0;
	for (int q = 0; q < n_mem; q++)
		working += sim_group_working(g, mem[q]);
	return working == 1;
}

/* Scratch of sim_schedule_make: entries 0 .. n_order are the nodes
 * (an async one's start), n_order + q the done of async node q. */
struct lhs {
	int *doff, *deps;  /* what entry e reads: deps[doff[e] .. doff[e+1]) */
	int *left;         /* per entry: its readers not yet listed */
	int *ready, n_ready;
	double *opened;    /* per async q: tau when its done was listed */
	int *seq, n_seq;   /* the list, bottom up */
};

/* The entries node q reads, into out[] (distinct); returns how many. */
static int node_deps(const struct grouping *g, const int *node,
		     const int *q_of, const int *order, const bool *async,
		     int n_order, int q, const struct ir_instr **buf,
		     int *stamp, int *out)
{
	int x = order[q], nd, n = 0;
	const struct ir_instr *const *deps;
	if (x >= g->n) {
		nd = sim_group_inputs(g, x - g->n, buf);
		deps = buf;
	} else {
		nd = g->c->instrs[x]->n_operands;
		deps = (const struct ir_instr *const *)g->c->instrs[x]->operands;
	}
	for (int j = 0; j < nd; j++) {
		int k = sim_index_in(g->c, deps[j]);
		int d = k >= 0 && node[k] >= 0 ? q_of[node[k]] : -1;
		if (d < 0 || d == q)
			continue;
		int e = async[d] ? n_order + d : d;
		if (stamp[e] == q + 1)
			continue;
		stamp[e] = q + 1;
		out[n++] = e;
	}
	return n;
}

/* l's entries: what each reads (distinct), how many readers each waits
 * for, and those ready at first; false when out of memory. */
static bool lhs_init(struct lhs *l, const struct grouping *g, const int *node,
		     const int *order, int n_order, const bool *async,
		     int nn)
{
	int ne = 2 * n_order + 1;
	l->doff = ts_calloc((size_t)ne + 1, sizeof *l->doff);
	l->left = ts_calloc((size_t)ne, sizeof *l->left);
	l->ready = ts_malloc((size_t)ne * sizeof *l->ready);
	l->opened = ts_calloc((size_t)n_order + 1, sizeof *l->opened);
	l->seq = ts_malloc((size_t)ne * sizeof *l->seq);
	int *q_of = ts_malloc((size_t)nn * sizeof *q_of);
	int *stamp = ts_calloc((size_t)ne, sizeof *stamp);
	int *tmp = ts_malloc(((size_t)g->n + 1) * sizeof *tmp);
	const struct ir_instr **buf = ts_malloc(((size_t)g->n + 1) * sizeof *buf);
	bool ok = l->doff && l->left && l->ready && l->opened && l->seq &&
		  q_of && stamp && tmp && buf;
	for (int x = 0; ok && x < nn; x++)
		q_of[x] = -1;
	for (int q = 0; ok && q < n_order; q++)
		q_of[order[q]] = q;
	/* two passes: count, then fill (a start reads as its node does; its
	 * done reads its start) */
	for (int pass = 0; ok && pass < 2; pass++) {
		int at = 0;
		memset(stamp, 0, (size_t)ne * sizeof *stamp);
		for (int e = 0; e < ne - 1; e++) {
			int q = e < n_order ? e : e - n_order;
			if (pass)
				l->doff[e] = at;
			if (e >= n_order) {
				if (async[q]) {
					if (pass)
						l->deps[at] = q;
					at++;
				}
				continue;
			}
			int nd = node_deps(g, node, q_of, order, async, n_order,
					   q, buf, stamp, tmp);
			if (pass)
				memcpy(&l->deps[at], tmp, (size_t)nd * sizeof *tmp);
			at += nd;
		}
		if (pass) {
			l->doff[ne - 1] = l->doff[ne] = at;
		} else if (!(l->deps = ts_malloc(((size_t)at + 1) * sizeof *l->deps))) {
			ok = false;
		}
	}
	for (int e = 0; ok && e < ne - 1; e++)
		for (int j = l->doff[e]; j < l->doff[e + 1]; j++)
			l->left[l->deps[j]]++;
	l->n_ready = 0;
	for (int e = 0; ok && e < ne - 1; e++)
		if (l->left[e] == 0 && (e < n_order || async[e - n_order]))
			l->ready[l->n_ready++] = e;
	ts_free(q_of);
	ts_free(stamp);
	ts_free(tmp);
	ts_free(buf);
	return ok;
}

/* Frees l's arrays. */
static void lhs_free(struct lhs *l)
{
	ts_free(l->doff);
	ts_free(l->deps);
	ts_free(l->left);
	ts_free(l->ready);
	ts_free(l->opened);
	ts_free(l->seq);
}

/* The ready entry rule r of the header's list takes, or -1; open: the
 * pairs open of each kind (kind: per async node, 0 an all-reduce, 1 an
 * all-gather). */
static int pick(const struct lhs *l, int rule, int n_order, const bool *async,
		const unsigned char *kind, const double *cost,
		const int *order, double tau, const int *open)
{
	int best = -1;
	for (int i = 0; i < l->n_ready; i++) {
		int e = l->ready[i];
		bool done = e >= n_order, start = !done && async[e];
		int q = done ? e - n_order : e;
		bool take;
		switch (rule) {
		case 1:
			take = done && open[kind[q]] < in_flight[kind[q]];
			break;
		case 2:
			take = start && tau - l->opened[q] >= cost[order[q]];
			break;
		case 3:
			take = !done && !start;
			break;
		case 4:
			take = start;
			break;
		default:
			take = done;
		}
		if (!take)
			continue;
		int bq = best < 0 ? -1 : best >= n_order ? best - n_order : best;
		bool better = best < 0 || q > bq;
		if ((rule == 2 || rule == 4) && best >= 0 &&
		    l->opened[q] != l->opened[bq])
			better = l->opened[q] < l->opened[bq];
		if (better)
			best = e;
	}
	return best;
}

int sim_schedule_make(const struct grouping *g, const int *node,
		      const int *order, int n_order, const double *cost,
		      double min_bytes, struct sim_schedule *out)
{
	int nn = g->n + g->n_groups + 1, n_async = 0;
	memset(out, 0, sizeof *out);
	bool *async = ts_calloc((size_t)n_order + 1, sizeof *async);
	unsigned char *kind = ts_calloc((size_t)n_order + 1, sizeof *kind);
	if (!async || !kind) {
		ts_free(async);
		ts_free(kind);
		return -1;
	}
	for (int q = 0; q < n_order; q++) {
		n_async += async[q] =
			sim_schedule_async_node(g, order[q], min_bytes);
		kind[q] = g->c->instrs[anchor(g, order[q])]->op ==
			  IR_OP_ALL_GATHER;
	}
	if (n_async == 0) {
		ts_free(async);
		ts_free(kind);
		return 0;
	}
	struct lhs l = {0};
	bool ok = lhs_init(&l, g, node, order, n_order, async, nn);
	double tau = 0;
	int open[2] = {0, 0};
	while (ok && l.n_ready > 0) {
		int e = -1;
		for (int rule = 1; e < 0 && rule <= 5; rule++)
			e = pick(&l, rule, n_order, async, kind, cost, order,
				 tau, open);
		if (e >= n_order) {
			l.opened[e - n_order] = tau;
			open[kind[e - n_order]]++;
		} else if (async[e]) {
			open[kind[e]]--;
		} else {
			tau += cost[order[e]];
		}
		for (int i = 0; i < l.n_ready; i++)
			if (l.ready[i] == e)
				l.ready[i] = l.ready[--l.n_ready];
		l.seq[l.n_seq++] = e;
		for (int j = l.doff[e]; j < l.doff[e + 1]; j++)
			if (--l.left[l.deps[j]] == 0)
				l.ready[l.n_ready++] = l.deps[j];
	}
	out->c = g->c;
	out->rank = ts_malloc(((size_t)g->n + 1) * sizeof *out->rank);
	out->done = ts_malloc(((size_t)g->n + 1) * sizeof *out->done);
	ok = ok && out->rank && out->done && l.n_seq == n_order + n_async;
	for (int i = 0; ok && i < g->n; i++)
		out->rank[i] = out->done[i] = -1;
	for (int s = 0; ok && s < l.n_seq; s++) {
		int e = l.seq[l.n_seq - 1 - s], pos = s; /* forward */
		if (e >= n_order)
			out->done[anchor(g, order[e - n_order])] = pos;
		else
			out->rank[anchor(g, order[e])] = pos;
	}
	/* every instruction of a node ranks with it */
	for (int i = 0; ok && i < g->n; i++)
		if (node[i] >= 0 && out->rank[i] < 0)
			out->rank[i] = out->rank[anchor(g, node[i])];
	lhs_free(&l);
	ts_free(async);
	ts_free(kind);
	if (!ok) {
		sim_schedule_free(out);
		return -1;
	}
	return n_async;
}

void sim_schedule_free(struct sim_schedule *s)
{
	ts_free(s->rank);
	ts_free(s->done);
	memset(s, 0, sizeof *s);
}

struct entry {
	int key, seq, x;
};

static int by_key(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

int sim_schedule_order(const struct grouping *g, const struct sim_schedule *s,
		       int *order, int n_order)
{
	int nn = g->n + g->n_groups + 1;
	int *key = ts_malloc(((size_t)g->n + 1) * sizeof *key);
	struct entry *en = ts_malloc(((size_t)2 * n_order + 1) * sizeof *en);
	if (!key || !en) {
		ts_free(key);
		ts_free(en);
		return -1;
	}
	/* an instruction of no node of the schedule's (one recomputed in
	 * its readers' kernels that a caller writes on its own) right after
	 * what it reads, operands first, an async collective's value after
	 * its done */
	for (int t = 0; t < g->n; t++) {
		int i = g->order[t];
		key[i] = s->rank[i];
		for (int j = g->ooff[i]; s->rank[i] < 0 && j < g->ooff[i + 1]; j++) {
			int o = g->ops[j];
			int at = o < 0 ? -1 : s->done[o] >= 0 ? s->done[o] : key[o];
			if (at > key[i])
				key[i] = at;
		}
	}
	int n = 0;
	for (int q = 0; q < n_order; q++) {
		int i = anchor(g, order[q]);
		en[n++] = (struct entry){key[i], q, order[q]};
		if (s->done[i] >= 0)
			en[n++] = (struct entry){s->done[i], n_order + q,
						 nn + order[q]};
	}
	qsort(en, (size_t)n, sizeof *en, by_key);
	for (int q = 0; q < n; q++)
		order[q] = en[q].x;
	ts_free(key);
	ts_free(en);
	return n;
}
