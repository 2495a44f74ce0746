/*
 * tile.c: tile configs and tile grids. Parses and prints the TpuGraphs
 * config text, computes the tile grid of an array, picks the tensor a
 * kernel's bounds tile, and lists the candidate configs of tile search.
 * docs/TPU.md section 3 is the governing note; the cost of a config is in
 * model.c, checking a config and the model's best one in config.c.
 */
#include "model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- config text ----------------------------------------------------------- */

#define CFG_FILE "<tile config>"

/* "key: what" (or just "what") at 0-based column col0 of text. */
static enum ts_status cfg_error(struct ts_diag *d, const char *text,
				size_t col0, const char *key, const char *what)
{
	if (key)
		ts_diag_set(d, CFG_FILE, 1, (uint32_t)col0 + 1, "%s: %s", key,
			    what);
	else
		ts_diag_set(d, CFG_FILE, 1, (uint32_t)col0 + 1, "%s", what);
	if (d) {
		d->src = text;
		d->src_len = strlen(text);
	}
	return TS_ERR_PARSE;
}

/* Parses "AxBxC" at text[*pos] up to ';' or the end into v[]. */
static enum ts_status parse_bounds(const char *text, size_t *pos,
				   const char *key, int64_t *v, int *n,
				   struct ts_diag *d)
{
	size_t i = *pos;
	*n = 0;
	for (;;) {
		if (text[i] < '0' || text[i] > '9')
			return cfg_error(d, text, i,
					 key, "expected a positive integer");
		int64_t x = 0;
		size_t start = i;
		while (text[i] >= '0' && text[i] <= '9') {
			int dig = text[i] - '0';
			if (x > (INT64_MAX - dig) / 10)
				return cfg_error(d, text, start,
						 key, "bound too large");
			x = x * 10 + dig;
			i++;
		}
		if (x < 1)
			return cfg_error(d, text, start,
					 key, "bounds must be at least 1");
		if (*n >= SIM_MAX_GRID)
			return cfg_error(d, text, start,
					 key, "more than 8 bounds");
		v[(*n)++] = x;
		if (text[i] == 'x') {
			i++;
			continue;
		}
		if (text[i] == ';' || text[i] == '\0')
			break;
		return cfg_error(d, text, i, key, "expected 'x', ';' or the end");
	}
	*pos = i;
	return TS_OK;
}

enum ts_status sim_tile_config_parse(const char *text,
				     struct sim_tile_config *cfg,
				     struct ts_diag *d)
{
	memset(cfg, 0, sizeof *cfg);
	if (!text)
		return TS_OK;
	size_t i = 0;
	bool seen_out = false, seen_kern = false;
	while (text[i] != '\0') {
		static const char out_key[] = "output_bounds=";
		static const char kern_key[] = "kernel_bounds=";
		size_t key_col = i;
		enum ts_status st;
		if (strncmp(text + i, out_key, sizeof out_key - 1) == 0) {
			if (seen_out)
				return cfg_error(d, text, key_col,
						 "output_bounds", "given twice");
			seen_out = true;
			i += sizeof out_key - 1;
			st = parse_bounds(text, &i, "output_bounds",
					  cfg->out_bounds, &cfg->n_out, d);
		} else if (strncmp(text + i, kern_key, sizeof kern_key - 1) ==
			   0) {
			if (seen_kern)
				return cfg_error(d, text, key_col,
						 "kernel_bounds", "given twice");
			seen_kern = true;
			i += sizeof kern_key - 1;
			st = parse_bounds(text, &i, "kernel_bounds",
					  cfg->kernel_bounds, &cfg->n_kernel,
					  d);
		} else {
			return cfg_error(d, text, key_col, NULL,
					 "expected 'output_bounds=' or "
					 "'kernel_bounds='");
		}
		if (st != TS_OK)
			return st;
		if (text[i] == ';') {
			i++;
			if (text[i] == '\0')
				return cfg_error(d, text, i, NULL,
						 "expected a key after ';'");
		}
	}
	return TS_OK;
}

static size_t put_bounds(char *buf, size_t cap, size_t len, const char *key,
			 const int64_t *v, int n)
{
	int w = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0,
			 "%s=", key);
	len += w > 0 ? (size_t)w : 0;
	for (int i = 0; i < n; i++) {
		w = snprintf(len < cap ? buf + len : NULL,
			     len < cap ? cap - len : 0, "%s%lld", i ? "x" : "",
			     (long long)v[i]);
		len += w > 0 ? (size_t)w : 0;
	}
	return len;
}

size_t sim_tile_config_format(const struct sim_tile_config *cfg, char *buf,
			      size_t cap)
{
	size_t len = 0;
	if (cap > 0)
		buf[0] = '\0';
	if (cfg->n_out > 0)
		len = put_bounds(buf, cap, len, "output_bounds",
				 cfg->out_bounds, cfg->n_out);
	if (cfg->n_kernel > 0) {
		if (len > 0) {
			if (len + 1 < cap) {
				buf[len] = ';';
				buf[len + 1] = '\0';
			}
			len++;
		}
		len = put_bounds(buf, cap, len, "kernel_bounds",
				 cfg->kernel_bounds, cfg->n_kernel);
	}
	return len;
}

/* ---- tile grids -------------------------------------------------------------- */

enum ts_status sim_tile_grid(const struct ir_shape *s, struct sim_tgrid *g,
			     struct ts_diag *d)
{
	memset(g, 0, sizeof *g);
	if (s->type == IR_TYPE_TUPLE || s->rank > SIM_MAX_GRID) {
		char buf[128];
		ir_shape_format(s, buf, sizeof buf);
		ts_diag_set(d, NULL, 0, 0,
			    "cannot tile %s: %s", buf,
			    s->type == IR_TYPE_TUPLE ? "a tuple"
						     : "rank above 8");
		return TS_ERR_UNSUPPORTED_OP;
	}
	int bits = s->layout.element_size_bits > 0 ? s->layout.element_size_bits
						   : ir_type_bits(s->type);
	g->bits = bits < 8 && s->layout.element_size_bits <= 0 ? 8 : bits;
	g->rank = s->rank;
	g->pad_factor = 1.0;
	int order[SIM_MAX_GRID];
	ir_shape_major_to_minor(s, order);
	struct ir_tile t;
	if (s->layout.n_tiles > 0)
		t = s->layout.tiles[0];
	else
		ir_shape_default_tile(s, &t); /* the one default rule, ir_shape.c */
	int lead = t.rank > s->rank ? t.rank - s->rank : 0;
	for (int j = 0; j < lead; j++)
		if (t.dims[j] > 1)
			g->pad_factor *= (double)t.dims[j];
	g->pad_factor *= ir_shape_further_tiles(s);
	for (int i = 0; i < s->rank; i++) {
		int64_t e = s->dims[order[i]];
		int ti = i - (s->rank - t.rank);
		int64_t te = 1;
		if (ti >= 0 && t.dims[ti] != IR_TILE_COMBINE && t.dims[ti] > 0)
			te = t.dims[ti];
		g->logical[i] = order[i];
		g->elems[i] = e > 0 ? e : 1;
		g->tile[i] = te;
		g->tiles[i] = ir_ceil_div(g->elems[i], te);
	}
	return TS_OK;
}

/* ---- which tensor the bounds tile --------------------------------------------- */

static int64_t instr_elems(const struct ir_instr *in)
{
	if (in->shape.type == IR_TYPE_TUPLE) {
		int64_t best = 0;
		for (int i = 0; i < in->shape.n_elems; i++) {
			int64_t e = ir_shape_elems(&in->shape.elems[i]);
			if (e > best)
				best = e;
		}
		return best;
	}
	return ir_shape_elems(&in->shape);
}

int sim_kernel_roots(const struct sim_kernel *k, const struct ir_instr **out,
		     int cap)
{
	int n = 0;
	const struct ir_instr *root = NULL;
	if (k->instr && k->instr->op == IR_OP_FUSION && k->instr->n_called > 0)
		root = k->instr->called[0]->root;
	else if (k->n_outputs == 1 || (k->n_outputs == 0 && k->instr))
		root = k->n_outputs == 1 ? k->outputs[0] : k->instr;
	if (root) {
		if (root->op == IR_OP_TUPLE) {
			for (int i = 0; i < root->n_operands && n < cap; i++)
				out[n++] = root->operands[i];
		} else {
			out[n++] = root;
		}
		return n;
	}
	for (int i = 0; i < k->n_outputs && n < cap; i++)
		out[n++] = k->outputs[i];
	return n;
}

const struct ir_instr *sim_tile_target(const struct sim_kernel *k)
{
	const struct ir_instr *best = NULL;
	for (int i = 0; i < k->n_members; i++) {
		const struct ir_instr *in = k->members[i];
		if (in->op != IR_OP_CONVOLUTION && in->op != IR_OP_DOT)
			continue;
		if (!best || instr_elems(in) > instr_elems(best))
			best = in;
	}
	if (best)
		return best;
	const struct ir_instr *roots[SIM_MAX_ROOTS];
	int n = sim_kernel_roots(k, roots, SIM_MAX_ROOTS);
	for (int i = 0; i < k->n_members; i++) {
		const struct ir_instr *r = k->members[i];
		if (r->op != IR_OP_REDUCE || r->n_operands < 1 ||
		    r->operands[0]->op == IR_OP_CONSTANT) /* folded by XLA */
			continue;
		if (!best || ir_shape_elems(&r->operands[0]->shape) >
				     ir_shape_elems(&best->operands[0]->shape))
			best = r;
	}
	if (best)
		return best;
	for (int i = 0; i < n; i++)
		if (!best || instr_elems(roots[i]) > instr_elems(best))
			best = roots[i];
	if (!best && k->instr)
		best = k->instr;
	return best;
}

const struct ir_shape *sim_tile_space_shape(const struct ir_instr *target)
{
	if (target->op == IR_OP_REDUCE && target->n_operands > 0)
		return &target->operands[0]->shape;
	if (target->shape.type == IR_TYPE_TUPLE && target->shape.n_elems > 0)
		return &target->shape.elems[0];
	return &target->shape;
}

/* ---- shared dims ------------------------------------------------------------------ */


int64_t sim_plan_shared_bound(const struct sim_plan *p, int kd, int od,
			      int64_t ob)
{
	int64_t e = ir_min64(ir_mul_sat(ob, p->out.tile[od]), p->out.elems[od]);
	int64_t kt = p->kern.tile[kd];
	int64_t kb = ir_ceil_div(e, kt);
	if (ir_min64(kb * kt, p->kern.elems[kd]) != e)
		return -1;
	return kb;
}

/* ---- candidate configs ----------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

#define DIVISOR_TRIALS (1 << 20)
#define CAND_MAX 64

/* Candidate bounds of one grid dim of extent n: every value when n <= 16,
 * else the powers of two, the divisors d <= 2^20 with their cofactors n / d
 * (every divisor when n <= 2^40) and n itself; ascending. When more than
 * lim remain, an even spread of lim is kept, always with 1 and n. Work: at
 * most 2^20 trial divisions, whatever the extent. */
static int dim_candidates_of(int64_t n, int lim, int64_t *v)
{
	int64_t all[512];
	int k = 0;
	if (n <= 16) {
		for (int64_t b = 1; b <= n; b++)
			all[k++] = b;
	} else {
		for (int64_t b = 1; b <= n / b && b <= DIVISOR_TRIALS && k < 480; b++)
			if (n % b == 0) {
				all[k++] = b;
				if (b != n / b)
					all[k++] = n / b;
			}
		for (int64_t b = 2; b < n && k < 510; b = ir_mul_sat(b, 2))
			all[k++] = b;
		all[k++] = n;
		qsort(all, (size_t)k, sizeof *all, cmp_i64);
		int u = 0;
		for (int i = 0; i < k; i++)
			if (u == 0 || all[u - 1] != all[i])
				all[u++] = all[i];
		k = u;
	}
	if (k <= lim) {
		memcpy(v, all, sizeof(int64_t) * (size_t)k);
		return k;
	}
	int m = 0;
	for (int i = 0; i < lim; i++) {
		int idx = lim > 1 ? (int)((double)i * (k - 1) / (lim - 1) + 0.5)
				  : k - 1;
		if (m == 0 || v[m - 1] != all[idx])
			v[m++] = all[idx];
	}
	return m;
}

/* The candidates of the extents seen last, remembered: a search asks for
 * the same extents again and again (every search of a what-if point, the
 * count before the search). Direct mapped by extent; one thread. */
#define CAND_MEMO_SLOTS 256
static struct {
	int64_t n;
	int lim, k;
	int64_t v[CAND_MAX];
} cand_memo[CAND_MEMO_SLOTS];

/* dim_candidates_of(n, lim) with lim = cap (0: no cap) or max, the
 * smaller, remembered. */
static int dim_candidates(int64_t n, int cap, int64_t *v, int max)
{
	int lim = cap > 0 && cap < max ? cap : max;
	TS_ASSERT(lim <= CAND_MAX);
	size_t slot = (size_t)((uint64_t)n * 0x9E3779B97F4A7C15u >> 56) %
		      CAND_MEMO_SLOTS;
	if (cand_memo[slot].n != n || cand_memo[slot].lim != lim) {
		cand_memo[slot].k = dim_candidates_of(n, lim, cand_memo[slot].v);
		cand_memo[slot].n = n;
		cand_memo[slot].lim = lim;
	}
	memcpy(v, cand_memo[slot].v, sizeof *v * (size_t)cand_memo[slot].k);
	return cand_memo[slot].k;
}

/* The free dims of a plan's configs (output grid dims and kernel dims not
 * shared with one, in walk_init's order) and their candidate bounds,
 * ascending. */
struct walk {
	const struct sim_plan *p;
	int nf;
	int64_t cand[2 * SIM_MAX_GRID][CAND_MAX];
	int n_cand[2 * SIM_MAX_GRID];
	int which[2 * SIM_MAX_GRID]; /* < out.rank: out dim; else kernel dim */
	bool (*leaf)(const struct sim_tile_config *cfg, void *ctx);
	const struct sim_search_floors *fl;
	void *ctx;
	bool descending;
	int64_t below[2 * SIM_MAX_GRID + 1]; /* configs under a choice of
	                                        dims 0..f-1: prod of n_cand[f..] */
	int64_t visited;
	bool stop;
	/* the last dim's choices, largest bound first, are asked fl->fits
	 * until one past the first fits (ask_fits); first: the choice is its
	 * first */
	bool ask_fits, first;
	struct sim_tile_config c;
};

/* The order of n grid dims of the given tile counts: 0..n-1, or (most)
 * the dims with more tiles first, ties in grid order. */
static void dim_order(const int64_t *tiles, int n, bool most, int *ord)
{
	for (int i = 0; i < n; i++) {
		int at = i;
		while (most && at > 0 && tiles[ord[at - 1]] < tiles[i]) {
			ord[at] = ord[at - 1];
			at--;
		}
		ord[at] = i;
	}
}

/* Appends the output's grid dims to w's free dims from nf on (most: those
 * with more tiles first); returns the new count. */
static int add_out_dims(struct walk *w, const struct sim_plan *p, int per_dim,
			bool most, int nf)
{
	int ord[SIM_MAX_GRID];
	dim_order(p->out.tiles, p->out.rank, most, ord);
	for (int j = 0; j < p->out.rank; j++) {
		int i = ord[j];
		w->which[nf] = i;
		/* an output dim shared with a kernel tiled q times coarser
		 * (fusion.261: 8-row tiles against 128-wide kernel tiles)
		 * takes whole kernel tiles: bounds q, 2q, ... and the dim */
		int64_t q = 1;
		for (int kd = 0; p->has_kernel && kd < p->kern.rank; kd++)
			if (p->kern_shared[kd] == i &&
			    p->kern.tile[kd] > p->out.tile[i] &&
			    p->kern.tile[kd] % p->out.tile[i] == 0)
				q = p->kern.tile[kd] / p->out.tile[i];
		int64_t n = ir_ceil_div(p->out.tiles[i], q);
		w->n_cand[nf] = dim_candidates(n, per_dim, w->cand[nf], CAND_MAX);
		for (int c = 0; c < w->n_cand[nf]; c++) {
			int64_t b = ir_mul_sat(w->cand[nf][c], q);
			w->cand[nf][c] = b < p->out.tiles[i] ? b : p->out.tiles[i];
		}
		nf++;
	}
	return nf;
}

/* Appends the kernel's own grid dims (those not shared with an output dim)
 * to w's free dims from nf on (most: those with more tiles first); returns
 * the new count. */
static int add_kernel_dims(struct walk *w, const struct sim_plan *p,
			   int per_dim, bool most, int nf)
{
	if (!p->has_kernel)
		return nf;
	int ord[SIM_MAX_GRID];
	dim_order(p->kern.tiles, p->kern.rank, most, ord);
	for (int j = 0; j < p->kern.rank; j++) {
		int i = ord[j];
		if (p->kern_shared[i] >= 0)
			continue;
		w->which[nf] = p->out.rank + i;
		w->n_cand[nf] = dim_candidates(p->kern.tiles[i], per_dim,
					       w->cand[nf], CAND_MAX);
		nf++;
	}
	return nf;
}

/* The free dims and their candidates: the output's dims, then the
 * kernel's own (sim_plan_enumerate's order), or in the pruned search's
 * order (search): the kernel's own dims first, then the output's, each
 * with the dims of more tiles first (sim_plan_search). */
static void walk_init(struct walk *w, const struct sim_plan *p, int per_dim,
		      bool search)
{
	if (per_dim > CAND_MAX)
		per_dim = CAND_MAX;
	w->p = p;
	int nf = 0;
	if (search) {
		nf = add_kernel_dims(w, p, per_dim, true, nf);
		nf = add_out_dims(w, p, per_dim, true, nf);
	} else {
		nf = add_out_dims(w, p, per_dim, false, nf);
		nf = add_kernel_dims(w, p, per_dim, false, nf);
	}
	w->nf = nf;
	memset(&w->c, 0, sizeof w->c);
	w->c.n_out = p->out.rank;
	w->c.n_kernel = p->has_kernel ? p->kern.rank : 0;
}

/* Sets free dim f of w->c to bound b; for an output dim, the kernel dims
 * it shares too. False when some shared kernel dim takes no whole number
 * of kernel tiles (no config under it is valid). */
static bool walk_set(struct walk *w, int f, int64_t b)
{
	const struct sim_plan *p = w->p;
	int d = w->which[f];
	if (d >= p->out.rank) {
		w->c.kernel_bounds[d - p->out.rank] = b;
		return true;
	}
	w->c.out_bounds[d] = b;
	for (int kd = 0; kd < w->c.n_kernel; kd++) {
		if (p->kern_shared[kd] != d)
			continue;
		int64_t kb = sim_plan_shared_bound(p, kd, d, b);
		if (kb < 0)
			return false;
		w->c.kernel_bounds[kd] = kb;
	}
	return true;
}

/* A dim's choices are floored (and ordered by their floors) only when
 * each holds at least this many configs: a full floor costs about two
 * estimates, so a smaller subtree is cheaper to cost whole (4 was the
 * fastest of 2, 4 and 8 on a validate of tpuv4-ops; docs/BENCH.md). */
#define PRUNE_MIN_BELOW 4

/* Depth first over free dims f.., candidates ascending (or descending), so
 * configs come in the order of an odometer whose last free dim turns
 * fastest. With floors, the subtrees of dim f are floored first (quick
 * floors where there are) and entered in the order of those floors
 * (lowest first, ties in candidate order), each unless its floor is cut by
 * the best found so far (a subtree entered on its quick floor is floored
 * in full first): a good config found early cuts more. */
static void walk_dim(struct walk *w, int f)
{
	const struct sim_search_floors *fl = w->fl;
	if (f == w->nf) {
		if (fl && fl->quick && fl->cut(fl->quick(&w->c, w->ctx), w->ctx))
			return;
		/* a whole config that does not fit is not wanted; the first
		 * choice may be the whole dim, unsplit, and below it the VMEM
		 * floor only shrinks with the bound: once a later choice
		 * fits, the rest would */
		if (w->ask_fits) {
			if (!fl->fits(&w->c, w->ctx))
				return;
			w->ask_fits = w->first;
		}
		w->visited++;
		if (!w->leaf(&w->c, w->ctx))
			w->stop = true;
		return;
	}
	int n = w->n_cand[f];
	int order[CAND_MAX];
	double lb[CAND_MAX]; /* the choices' floors */
	bool floored = fl && w->below[f + 1] >= PRUNE_MIN_BELOW;
	for (int k = 0; k < n; k++)
		order[k] = w->descending ? n - 1 - k : k;
	if (floored) {
		int m = 0;
		for (int k = 0; k < n; k++) {
			int i = order[k];
			if (!walk_set(w, f, w->cand[f][i]))
				continue;
			double t = (fl->quick ? fl->quick : fl->floor)(&w->c,
								    w->ctx);
			/* insertion by floor, after equal ones */
			int at = m;
			while (at > 0 && lb[at - 1] > t) {
				lb[at] = lb[at - 1];
				order[at] = order[at - 1];
				at--;
			}
			lb[at] = t;
			order[at] = i;
			m++;
		}
		n = m;
	}
	if (f == w->nf - 1)
		w->ask_fits = fl && fl->fits && w->descending && !floored;
	for (int k = 0; k < n && !w->stop; k++) {
		int i = order[k];
		if (floored && fl->cut(lb[k], w->ctx))
			continue;
		if (!walk_set(w, f, w->cand[f][i]))
			continue;
		w->first = k == 0;
		if (floored && fl->quick &&
		    fl->cut(fl->floor(&w->c, w->ctx), w->ctx))
			continue;
		walk_dim(w, f + 1);
	}
	/* unset: dim f and the kernel dims it shares read as not yet
	 * chosen (0; a shared bound of 0 is 0) */
	walk_set(w, f, 0);
}

int64_t sim_plan_search(const struct sim_plan *p, int per_dim, bool descending,
			bool (*leaf)(const struct sim_tile_config *cfg, void *ctx),
			const struct sim_search_floors *fl, void *ctx)
{
	if (p->kind != SIM_PLAN_TILED || p->out.rank == 0)
		return 0;
	/* With floors, the kernel's own dims (a contraction's, a window's
	 * taps) are chosen before the output's, and within each the dims
	 * with more tiles first: until the kernel's are chosen, the floors
	 * cannot count what they decide (a split contraction's accumulator
	 * and re-adds, the weight tiles of a step), and a dim of many tiles
	 * has the widest range of block counts (steps, refetches), so its
	 * choices' floors differ most. Against the grid's order this costs
	 * two U-Net-shaped convolutions 44% fewer instructions, the MaxText
	 * step 19%, the Llama-3.1-8B step 15%, and the fusion search of the
	 * Gemma-3-1B step 2% more (dots with a contraction of 864 tiles and
	 * small outputs: 245 configs costed each, 37 with it chosen last;
	 * docs/BENCH.md). Which config is found does not depend on the
	 * order: sim_config_better's order is total, and the floors hold
	 * whichever dims are chosen (test_tile_search checks them on the
	 * partial configs of this order). */
	struct walk w;
	walk_init(&w, p, per_dim, fl != NULL);
	if (!leaf) {
		int64_t total = 1;
		for (int f = 0; f < w.nf; f++)
			total = total > INT64_MAX / w.n_cand[f] ? INT64_MAX
							       : total * w.n_cand[f];
		return total;
	}
	/* a dim with one choice is set once, before the walk: every config
	 * has it, and the floors of the partial configs count it as chosen
	 * (no lower: the same completions) instead of flooring each entry
	 * into it again. (With no dim left, the one config is costed without
	 * asking fits: when it does not fit, sim_plan_default costs it again
	 * all the same.) */
	int nf = 0;
	for (int f = 0; f < w.nf; f++) {
		if (w.n_cand[f] == 1) {
			if (!walk_set(&w, f, w.cand[f][0]))
				return 0; /* no valid config */
			continue;
		}
		memcpy(w.cand[nf], w.cand[f], sizeof w.cand[f]);
		w.n_cand[nf] = w.n_cand[f];
		w.which[nf] = w.which[f];
		nf++;
	}
	w.nf = nf;
	w.leaf = leaf;
	w.fl = fl;
	w.ctx = ctx;
	w.descending = descending;
	w.below[w.nf] = 1;
	for (int f = w.nf - 1; f >= 0; f--)
		w.below[f] = ir_mul_sat(w.below[f + 1], w.n_cand[f]);
	w.visited = 0;
	w.stop = false;
	w.ask_fits = false;
	walk_dim(&w, 0);
	return w.visited;
}

int64_t sim_plan_enumerate(const struct sim_plan *p, int per_dim,
			   bool (*fn)(const struct sim_tile_config *cfg,
				      void *ctx),
			   void *ctx)
{
	return sim_plan_search(p, per_dim, false, fn, NULL, ctx);
}
