/*
 * rewrite.c: what XLA's TPU compiler does to a module around its fusion
 * that changes the kernels, for the generations whose spec says so
 * (hwspecs/GEN.yaml, section xla), and the copies it inserts into
 * donated buffers on every one. A module before fusion
 * (sim_module_unfused) is rewritten in place, once, before a fusion
 * policy groups it; a compiled one already is what XLA made.
 *
 * The row max as a reduce-window (xla.row_max_window: v4 and later):
 *   r = reduce(x, init), dimensions={d}, to_apply = maximum of its two
 *       parameters; every user of r a broadcast back to x's dims
 *       (dimensions= every dim of x but d, in order, x's physical order);
 *       d the second-minor dim of x's physical order, of size N > 1
 *   -> each broadcast becomes
 *       reduce-window(x, init), window size 2N-1 on d, pad N-1 either
 *       side, size 1 elsewhere, to_apply as r's
 *   r is then dead (XLA's DCE drops it; the grouping does). Every output
 *   of the window sees the whole row, so the value is the broadcast row
 *   max, one loop op of x's shape: the grouping computes it in its users'
 *   kernel (the softmax's subtract and exp) where a reduce roots a kernel
 *   of its own, and the VPU reduces each row once (sim/plan_vpu.c
 *   whole_window_cycles).
 * Evidence: data/compiled (libtpu 0.0.42.1), each module before fusion
 * (NAME.spmd.hlo) against the compiled one. In the v4, v5e, v5p, v6e and
 * v7 decoders and v5e/vit_s every attention row max (f32[B,H,S,S]
 * {2,3,1,0}: the row, dim 3, second-minor) is a reduce-window of size
 * 2S-1 inside the softmax fusion; in v2 and v3 it stays a reduce. Not
 * rewritten on any generation: a row max over the lane dim (v5e/resnet_s,
 * f32[32,100]{1,0}), over a major dim (v5e/decode_s and decode_m,
 * {0,1,2}), a sum (every softmax's denominator). libtpu's fusion flags
 * name it ("RWB" fusion, xla_tpu_rwb_fusion); the open-source inverse is
 * DeconstructReduceWindowToReduceBroadcast (xla/hlo/transforms/
 * despecializer.cc). Known wrong: only what the zoo shows is rewritten
 * (one reduced dim, a maximum; other reducers and element types not
 * seen either way); XLA's own condition is not public.
 *
 * The all-reduce combiner (xla.all_reduce_combine_bytes > 0: every
 * generation): a synchronous all-reduce of one array, at most that many
 * bytes (logical) and fewer than xla.async_all_reduce_bytes where that
 * is set (sim_all_reduce_combine_limit: what v7 runs on its SparseCores,
 * each a call-start of its own in data/compiled/v7, XLA does not
 * combine), reducing by a sum, product, minimum or maximum (and, or: the
 * op its computation applies to its two parameters) is a candidate;
 * candidates of one element type, reducer, channel (present or not) and
 * device groups (device by device) are of one kind. Rounds, each over
 * the computation in its order (the text's, XLA's post order; ordered
 * first where the text reads a value before naming it):
 *   the first candidate left sets the kind; each later candidate of that
 *   kind joins while none that joined reaches it through its operands
 *   and the bytes stay within the threshold (the first that does not
 *   ends the round); candidates of other kinds wait;
 *   two or more that joined become one all-reduce of all their operands
 *   (a tuple, named after the first, written with all of the first's
 *   text after its operands: channel, groups, reducer, metadata), each
 *   a get-tuple-element of it, and the computation from the first to the
 *   last that joined is ordered again: every instruction as early as its
 *   operands let it come, in the order it had (the combined one where
 *   the last that joined was); the next round starts at the first.
 * XLA's AllReduceCombiner (xla/service/collective_combiner_utils.h
 * CombineInstructionsByKey, its reachability recomputed each round as
 * the order is here). Evidence: data/compiled, each module before fusion
 * against the compiled one: v5e/resnet_s's 118 all-reduces are 27
 * compiled (its batch norms' statistics in pairs and fours, every f32
 * gradient in one, every bf16 one in another) and here too; v5e/unet3d_s
 * 14 -> 2 both; v5e/decoder_s 24 -> 14 both, mlp_m 5 -> 4 both (its two
 * 128 MiB gradients apart). Known wrong: XLA combines after fusion, over
 * its fusions' order and reachability: the decoders' entries pair
 * different all-reduces (XLA pairs v5e/decoder_s's all-reduce.17 with
 * .25 where .20 joins here), v5e/vit_s keeps 15 here against XLA's 12,
 * v5e/dlrm_s 9 against 4; use_global_device_ids is not in the kind
 * (tpusim reads no meaning into it); the threshold is a [GAP]
 * (hwspecs/v3.yaml).
 *
 * Copies into donated buffers (every generation; XLA's
 * OptimizeInputOutputBufferAlias, then its copy insertion):
 *   each array of the entry's parameters the header names a
 *   buffer_donor (not a dynamic one; none when the result has a dynamic
 *   dim) is paired with an output array of its size: donors in
 *   parameter order, outputs in the result's (ShapeIndex pre-order), each
 *   sorted by size, largest first, stably, in each memory space, and
 *   walked down together: the larger of the two in hand moves on, equal
 *   sizes pair. Size: bytes padded in TPU memory (ir_shape_padded_bytes;
 *   XLA's TPU compiler pairs v5e/vit_s's bf16[196,96]{0,1} output with its
 *   bf16[12,1536]{1,0} parameter, 49,152 bytes each tiled). With the
 *   header's input_output_alias entries, output o lives in parameter p's
 *   buffer. Where o's value is made in a buffer of its own that p is
 *   still read after, XLA copies it in:
 *     o's buffer starts at s: o's value, or what it renames (a bitcast,
 *     an element of a tuple or of a loop's result: the loop's initial
 *     element, a loop keeping each in one buffer) or updates in place
 *     (sim_in_place_buffer), followed back;
 *     s is p: o is in p's buffer already; s another parameter or a
 *     constant, or a buffer another output lives in without a copy
 *     (the first pair keeps it): a copy (a buffer not made here, or not
 *     for two); else a copy where a reader of p (of it or of a
 *     bitcast of it; one the result does not need, XLA's DCE drops)
 *     must come after s (s is one of its operands, transitively), or is
 *     s itself and s may not write over what it reads (XLA's
 *     CanShareOperandBufferWithUser: an elementwise op of p's size
 *     may); every other reader of p may be scheduled before s (XLA's
 *     scheduler does: v5e/vit_s updates its head's weight, sub.145,
 *     before the text reads the weight in the backward, convolution.21;
 *     no copy compiled)
 *   -> o's element of the root tuple (or the root) becomes copy(o),
 *   right before the root, in the TPU layout the value has or would get
 *   (ir_shape_default_tile): a kernel of its own that runs (XLA inserts
 *   it after it fuses and lays out: grouping.c FC_ROOT, plan.c
 *   sim_kernel_free).
 * Evidence: data/compiled, each module before fusion against the
 * compiled one: the pairs are XLA's input_output_alias in all 59 (436
 * outputs), and the copies are XLA's: v5e/decode_s and decode_m scan
 * over the layers with the KV caches donated, the scan writes the new
 * caches in a buffer of its own (AllocateBuffer) while it reads the old
 * ones, and the compiled modules copy both in at the end (decode_m's
 * copy.83 and copy.84, 537 MB each); every other module updates each
 * donated array elementwise and copies none. Known wrong: only a
 * parameter's top-level array and an element of the root tuple (or the
 * root) are followed, the rest counted (sim_rewrites.unfollowed); XLA
 * judges its buffers' live ranges in the schedule it made, tpusim by
 * whether any schedule could avoid the copy.
 *
 * Copies of a result other devices write (every generation): an array
 * output of the entry whose buffer starts (as above) at an all-gather,
 * an all-to-all (ragged or not) or a collective-permute becomes a copy
 * of it, right before the root, as the aliased ones do. Those
 * collectives' results are
 * written by the other devices' DMAs, into a buffer the compiler lays
 * out; the program's results are buffers the runtime hands it, so the
 * result is written apart and copied out (memory-space assignment may
 * then put the collective's own buffer in VMEM, and tpusim's placement
 * may too). An all-reduce or reduce-scatter result each device writes
 * itself, reducing what it receives; it is not copied.
 * Evidence: data/compiled: v5e/ops_all_gather, ops_all_to_all and
 * ops_permute return a copy of their collective's result, which is in
 * VMEM (S(1)); v5e/ops_all_reduce returns its all-reduce's result as it
 * is; no other module of the zoo returns a collective's result. Known
 * wrong: the reason is inferred (XLA's TPU compiler is not public);
 * three modules show it, all on v5e (a ragged all-to-all none); a loop
 * body's or a called computation's result is not followed, nor a
 * tuple-shaped output (a collective of several arrays returned whole)
 * nor an async collective's done (a module before fusion has none).
 *
 * Async all-gathers (xla.async_all_gather: v5e): an all-gather of one
 * array in a computation that holds a contraction (a dot or
 * convolution) neither reading nor read by it, through any chain of
 * operands either way, is marked IR_INSTR_ASYNC (both what the
 * computation's result needs: XLA's DCE drops the rest; judged before
 * fusion): XLA runs it asynchronously,
 * its transfer beside the TensorCore's work, where sim/schedule.c places
 * it (its start as early as it must be to be hidden, one such
 * all-gather in flight at a time). XLA's async collective fusion puts
 * the all-gather in a fusion with such a convolution (the start, the
 * fusions that run beside the transfer, the done); with none to run
 * beside it, it stays a synchronous all-gather.
 * Evidence: data/compiled/v5e (libtpu 0.0.42.1): vit_s runs 8 of its
 * all-gathers so (its FSDP weight slices and a saved activation, each
 * chain one at a time, 2.5 ms of its 29.7 ms hidden), dlrm_s 1 beside
 * its 3 convolutions; ops_all_gather, which has no dot, runs its own
 * synchronously; the decode steps' two, beside no such dot, run
 * synchronously there and here. Known wrong: 14 more are marked that
 * XLA runs synchronously (dlrm_s's 11 of 12, vit_s's 3 of 15: XLA's
 * own choice among them is its scheduler's, not public; tpusim's
 * schedule hides what the kernels between a pair cover); no other
 * generation's all-gathers are seen either way.
 */
#include "kernels_int.h"

#include <stdlib.h>
#include <string.h>

/* Ranks beyond it (no real module has one) are left as written. */
enum { MAX_RANK = 64 };

/* The op c applies to its two parameters when that is all it computes
 * (a reducer: add, maximum, ...), else IR_OP_INVALID */
static enum ir_op reducer_op(const struct ir_computation *c)
{
	const struct ir_instr *r = c->root;
	if (c->n_params != 2 || !r || r->n_operands != 2)
		return IR_OP_INVALID;
	bool params = (r->operands[0] == c->params[0] &&
		       r->operands[1] == c->params[1]) ||
		      (r->operands[0] == c->params[1] &&
		       r->operands[1] == c->params[0]);
	return params ? r->op : IR_OP_INVALID;
}

/* The dim r reduces when r is a row max that the rewrite may turn into a
 * window (the rule above, less its users); -1 otherwise. */
static int row_max_dim(const struct ir_instr *r)
{
	if (r->op != IR_OP_REDUCE || r->n_operands != 2 || r->n_called != 1 ||
	    (r->flags & IR_INSTR_ROOT) || r->n_users < 1 ||
	    r->shape.type == IR_TYPE_TUPLE || !r->attrs.dimensions ||
	    r->attrs.dimensions->n != 1 || reducer_op(r->called[0]) != IR_OP_MAXIMUM)
		return -1;
	const struct ir_shape *x = &r->operands[0]->shape;
	int64_t d = r->attrs.dimensions->v[0];
	if (x->type == IR_TYPE_TUPLE || x->rank < 2 || x->rank > MAX_RANK ||
	    d < 0 || d >= x->rank || x->dims[d] < 2 ||
	    x->dims[d] > INT64_MAX / 2 || /* the window, 2N - 1, in int64 */
	    (x->dim_kind && x->dim_kind[d] != IR_DIM_STATIC))
		return -1;
	int order[MAX_RANK];
	ir_shape_major_to_minor(x, order);
	return order[x->rank - 2] == d ? (int)d : -1;
}

/* b broadcasts r's value back over the dim d it reduced, in x's layout */
static bool broadcast_back(const struct ir_instr *b, const struct ir_instr *r,
			   int d)
{
	const struct ir_shape *x = &r->operands[0]->shape;
	const struct ir_ints *bd = b->attrs.dimensions;
	if (b->op != IR_OP_BROADCAST || b->n_operands != 1 || !bd ||
	    bd->n != x->rank - 1 || !ir_shape_compatible(&b->shape, x))
		return false;
	for (int i = 0; i < bd->n; i++)
		if (bd->v[i] != i + (i >= d))
			return false;
	int ob[MAX_RANK], ox[MAX_RANK];
	ir_shape_major_to_minor(&b->shape, ob);
	ir_shape_major_to_minor(x, ox);
	return memcmp(ob, ox, (size_t)x->rank * sizeof *ob) == 0;
}

/* b, a broadcast back of row max r over dim d, becomes the window */
static enum ts_status to_window(struct ir_module *m, struct ir_instr *b,
				struct ir_instr *r, int d)
{
	int rank = b->shape.rank;
	struct ir_instr **ops = ts_arena_array(&m->arena, 2, sizeof *ops);
	struct ir_computation **called =
		ts_arena_array(&m->arena, 1, sizeof *called);
	struct ir_window *w = ts_arena_alloc(&m->arena, sizeof *w);
	struct ir_window_dim *wd =
		ts_arena_array(&m->arena, (size_t)rank, sizeof *wd);
	if (!ops || !called || !w || !wd)
		return TS_ERR_NOMEM;
	int64_t n = b->shape.dims[d];
	for (int i = 0; i < rank; i++)
		wd[i] = (struct ir_window_dim){.size = i == d ? 2 * n - 1 : 1,
					       .stride = 1,
					       .pad_lo = i == d ? n - 1 : 0,
					       .pad_hi = i == d ? n - 1 : 0,
					       .lhs_dilate = 1,
					       .rhs_dilate = 1};
	*w = (struct ir_window){.n = rank, .dims = wd};
	ops[0] = r->operands[0];
	ops[1] = r->operands[1];
	called[0] = r->called[0];
	b->op = IR_OP_REDUCE_WINDOW;
	b->n_operands = 2;
	b->operands = ops;
	b->n_called = 1;
	b->called = called;
	b->attrs.dimensions = NULL;
	b->attrs.window = w;
	b->flags |= IR_INSTR_MADE;
	b->rhs_begin = b->rhs_end = b->ops_begin = b->ops_end = 0;
	ops[0]->n_users++;
	ops[1]->n_users++;
	r->n_users--;
	called[0]->n_callers++;
	called[0]->caller = NULL;
	return TS_OK;
}

/* dim[i] (c->n_instrs entries, ts_free it): the dim c's instruction i
 * reduces when it is a row max whose every user is a broadcast back, -1
 * for every other; NULL when out of memory. */
static int *row_maxes(const struct ir_computation *c)
{
	size_t n = (size_t)(c->n_instrs ? c->n_instrs : 1);
	int *dim = ts_malloc(n * sizeof *dim), *backs = ts_calloc(n, sizeof *backs);
	if (!dim || !backs) {
		ts_free(dim);
		ts_free(backs);
		return NULL;
	}
	for (int i = 0; i < c->n_instrs; i++)
		dim[i] = row_max_dim(c->instrs[i]);
	/* a user other than a broadcast back keeps the reduce */
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		for (int j = 0; j < u->n_operands; j++) {
			int k = sim_index_in(c, u->operands[j]);
			if (k < 0 || dim[k] < 0)
				continue;
			if (broadcast_back(u, u->operands[j], dim[k]))
				backs[k]++;
			else
				dim[k] = -1;
		}
	}
	/* every user counted (n_users: distinct users) was a broadcast back */
	for (int i = 0; i < c->n_instrs; i++)
		if (backs[i] != c->instrs[i]->n_users)
			dim[i] = -1;
	ts_free(backs);
	return dim;
}

/* The index of the row max b broadcasts back (dim: row_maxes), or -1 */
static int row_max_of(const struct ir_computation *c, const int *dim,
		      const struct ir_instr *b)
{
	int k = b->op == IR_OP_BROADCAST && b->n_operands == 1
			? sim_index_in(c, b->operands[0])
			: -1;
	return k >= 0 && dim[k] >= 0 ? k : -1;
}

int sim_row_max_windows(const struct ir_module *m)
{
	int n = 0;
	for (int ci = 0; sim_module_unfused(m) && ci < m->n_comps; ci++) {
		const struct ir_computation *c = m->comps[ci];
		int *dim = c->is_fusion ? NULL : row_maxes(c);
		if (!dim && !c->is_fusion)
			return -1;
		for (int i = 0; dim && i < c->n_instrs; i++)
			n += row_max_of(c, dim, c->instrs[i]) >= 0;
		ts_free(dim);
	}
	return n;
}

/* Whether all-reduce a may be combined (the rule above), bytes the
 * threshold: one array operand, a reduction XLA knows (a sum, product,
 * minimum or maximum; and, or), device groups kept (or none: every
 * device), not a megascale exchange. */
static bool combinable(const struct ir_instr *a, double bytes)
{
	enum ir_op r = a->n_called == 1 ? reducer_op(a->called[0])
					: IR_OP_INVALID;
	return a->op == IR_OP_ALL_REDUCE && a->n_operands == 1 &&
	       a->shape.type != IR_TYPE_TUPLE &&
	       a->operands[0]->shape.type != IR_TYPE_TUPLE &&
	       (r == IR_OP_ADD || r == IR_OP_MULTIPLY || r == IR_OP_MINIMUM ||
		r == IR_OP_MAXIMUM || r == IR_OP_AND || r == IR_OP_OR) &&
	       (a->attrs.groups || a->attrs.replica_group_size == 0) &&
	       sim_megascale_slices(a) == 0 && ir_shape_bytes(&a->shape) <= bytes;
}

/* Whether a and b use the same device groups, device by device (NULL:
 * every device). */
static bool same_groups(const struct ir_groups *a, const struct ir_groups *b)
{
	if (!a || !b)
		return a == b;
	if (a->n_groups != b->n_groups)
		return false;
	for (int64_t g = 0; g < a->n_groups; g++) {
		int64_t n = ir_groups_len(a, g);
		if (n != ir_groups_len(b, g))
			return false;
		for (int64_t j = 0; j < n; j++)
			if (ir_groups_device(a, g, j) != ir_groups_device(b, g, j))
				return false;
	}
	return true;
}

/* Whether candidates a and b are of one kind (the rule above). */
static bool same_kind(const struct ir_instr *a, const struct ir_instr *b)
{
	return a->shape.type == b->shape.type &&
	       reducer_op(a->called[0]) == reducer_op(b->called[0]) &&
	       (a->attrs.channel_id > 0) == (b->attrs.channel_id > 0) &&
	       same_groups(a->attrs.groups, b->attrs.groups);
}

/* A binary min-heap of instruction positions, by key. */
struct heap {
	int n;
	int *at;
	const int64_t *key;
};

static void heap_push(struct heap *h, int x)
{
	int i = h->n++;
	while (i > 0 && h->key[h->at[(i - 1) / 2]] > h->key[x]) {
		h->at[i] = h->at[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->at[i] = x;
}

static int heap_pop(struct heap *h)
{
	int top = h->at[0], x = h->at[--h->n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->key[h->at[c + 1]] < h->key[h->at[c]])
			c++;
		if (h->key[h->at[c]] >= h->key[x])
			break;
		h->at[i] = h->at[c];
		i = c;
	}
	if (h->n > 0)
		h->at[i] = x;
	return top;
}

/* Orders list[0 .. n) (instructions of one computation, each at its
 * place in it less lo but the last: list[i]->index == lo + i) into `to`
 * so that each comes after its operands among them, each as early as
 * they let it in the order of key[i] (list[i]'s); false when they form a
 * cycle or memory runs out. */
static bool order_by(struct ir_instr *const *list, int n, int lo,
		     const int64_t *key, struct ir_instr **to)
{
	int done = 0, n_uses = 0;
	for (int i = 0; i < n; i++)
		n_uses += list[i]->n_operands;
	/* each one's users among them (a use per operand), and how many of
	 * its operands among them are not placed yet */
	int *wait = ts_calloc(2 * (size_t)n + 2, sizeof *wait);
	int *first = wait ? wait + n : NULL; /* n + 1 offsets into users */
	int *users = ts_malloc(((size_t)n_uses + 1) * sizeof *users);
	int *at = ts_malloc(((size_t)n + 1) * sizeof *at);
	bool ok = wait && users && at;
	for (int pass = 0; ok && pass < 2; pass++) {
		if (pass) { /* at: each one's next user's place */
			for (int i = 0; i < n; i++)
				first[i + 1] += first[i];
			memcpy(at, first, (size_t)n * sizeof *at);
		}
		for (int i = 0; i < n; i++)
			for (int j = 0; j < list[i]->n_operands; j++) {
				const struct ir_instr *o = list[i]->operands[j];
				int k = o->index - lo;
				if (o->parent != list[i]->parent || k < 0 ||
				    k >= n || list[k] != o)
					continue;
				if (pass)
					users[at[k]++] = i;
				else {
					wait[i]++;
					first[k + 1]++;
				}
			}
	}
	struct heap h = {0, at, key}; /* at: now the heap */
	for (int i = 0; ok && i < n; i++)
		if (wait[i] == 0)
			heap_push(&h, i);
	while (ok && h.n > 0) {
		int i = heap_pop(&h);
		to[done++] = list[i];
		for (int q = first[i]; q < first[i + 1]; q++)
			if (--wait[users[q]] == 0)
				heap_push(&h, users[q]);
	}
	ts_free(wait);
	ts_free(users);
	ts_free(at);
	return ok && done == n;
}

/* c's caller: the one instruction of m that calls it, when one does
 * (ir_computation.caller), else NULL. */
static void set_caller(const struct ir_module *m, struct ir_computation *c)
{
	c->caller = NULL;
	for (int ci = 0; c->n_callers == 1 && ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[ci]->instrs[i];
			for (int j = 0; j < in->n_called; j++)
				if (in->called[j] == c)
					c->caller = in;
		}
}

/* Whether each of c's instructions comes after its operands. */
static bool topological(const struct ir_computation *c)
{
	for (int i = 0; i < c->n_instrs; i++)
		for (int j = 0; j < c->instrs[i]->n_operands; j++) {
			const struct ir_instr *o = c->instrs[i]->operands[j];
			if (o->parent == c && o->index >= i)
				return false;
		}
	return true;
}

/* Orders c so that each instruction comes after its operands, each as
 * early as they let it (order_by); TS_ERR_UNSUPPORTED_OP for a cycle. */
static enum ts_status reorder(struct ir_module *m, struct ir_computation *c)
{
	int n = c->n_instrs;
	struct ir_instr **to =
		ts_arena_array(&m->arena, (size_t)n + 1, sizeof *to);
	int64_t *key = ts_malloc(((size_t)n + 1) * sizeof *key);
	if (!to || !key) {
		ts_free(key);
		return TS_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++)
		key[i] = i;
	bool ok = order_by(c->instrs, n, 0, key, to);
	ts_free(key);
	if (!ok)
		return TS_ERR_UNSUPPORTED_OP;
	c->instrs = to;
	for (int i = 0; i < n; i++)
		to[i]->index = i;
	return TS_OK;
}

/* "BASE.WHAT", or "BASE.WHAT.1", ...: a name no instruction of m has,
 * taken (names: the module's, sim_name_taken); NULL and *st set when
 * memory runs out. */
static char *fresh_name(struct ir_module *m, struct ts_u64map *names,
			const char *base, const char *what,
			enum ts_status *st)
{
	for (int t = 0;; t++) {
		char *name = ts_arena_printf(&m->arena, "%s.%s%s%.0d", base,
					     what, t ? "." : "", t);
		if (!name) {
			*st = TS_ERR_NOMEM;
			return NULL;
		}
		if (sim_name_taken(names, m, name, st)) {
			if (*st != TS_OK)
				return NULL;
			continue;
		}
		if (!sim_name_take(names, name)) {
			*st = TS_ERR_NOMEM;
			return NULL;
		}
		return name;
	}
}

/* Combines c's all-reduces g[0 .. n) (pairwise independent, of one
 * kind, in c's order) into one, named after g[0] (names: the module's,
 * sim_name_taken), and orders c again from g[0] to g[n - 1] (what
 * comes before reads none of them, what comes after is after all),
 * each instruction as early as its operands let it, the combined one
 * where g[n - 1] was. */
static enum ts_status combine(struct ir_module *m, struct ir_computation *c,
			      struct ir_instr *const *g, int n,
			      struct ts_u64map *names)
{
	struct ts_arena *a = &m->arena;
	int lo = g[0]->index, hi = g[n - 1]->index, nw = hi - lo + 2;
	struct ir_instr *x = ts_arena_alloc(a, sizeof *x);
	struct ir_instr **ops = ts_arena_array(a, (size_t)n, sizeof *ops);
	struct ir_shape *elems = ts_arena_array(a, (size_t)n, sizeof *elems);
	struct ir_instr **self = ts_arena_array(a, 1, sizeof *self);
	struct ir_computation **r_of = ts_arena_array(a, (size_t)n,
						      sizeof *r_of);
	struct ir_instr **instrs =
		ts_arena_array(a, (size_t)c->n_instrs + 1, sizeof *instrs);
	struct ir_instr **win = ts_malloc((size_t)nw * sizeof *win);
	int64_t *key = ts_malloc((size_t)nw * sizeof *key);
	char *name = NULL;
	enum ts_status st =
		x && ops && elems && self && r_of && instrs && win && key
			? TS_OK
			: TS_ERR_NOMEM;
	if (st == TS_OK)
		name = fresh_name(m, names, g[0]->name, "combined", &st);
	if (st != TS_OK) {
		ts_free(win);
		ts_free(key);
		return st;
	}
	*x = *g[0]; /* its attributes; its text after the operand list */
	x->name = name;
	x->flags = IR_INSTR_MADE;
	x->n_operands = n;
	x->operands = ops;
	x->shape = (struct ir_shape){.type = IR_TYPE_TUPLE, .n_elems = n,
				     .elems = elems};
	x->n_users = n;
	x->index = hi + 1; /* the window's last (order_by) */
	self[0] = x;
	for (int q = 0; q < n; q++) {
		struct ir_instr *v = g[q];
		ops[q] = v->operands[0];
		for (int p = 0; p < q; p++) /* x reads it once */
			if (ops[p] == ops[q]) {
				ops[q]->n_users--;
				break;
			}
		elems[q] = v->shape;
		elems[q].memo = (struct ir_shape_memo){0};
		r_of[q] = v->called[0];
		r_of[q]->n_callers--;
		*v = (struct ir_instr){
			.op = IR_OP_GET_TUPLE_ELEMENT, .name = v->name,
			.shape = v->shape, .n_operands = 1,
			.operands = self, .parent = c,
			.op_name = v->op_name, .flags = IR_INSTR_MADE |
							(v->flags & IR_INSTR_ROOT),
			.index = v->index, .n_users = v->n_users,
			.line = v->line, .col = v->col};
		v->attrs = IR_ATTRS_NONE;
		v->attrs.tuple_index = q;
	}
	struct ir_computation *r = x->called[0];
	for (int q = 0; q < n; q++) /* the members' reducers' callers */
		if (r_of[q] != r)
			set_caller(m, r_of[q]);
	r->caller = ++r->n_callers == 1 ? x : NULL;
	for (int i = 0; i < nw - 1; i++) {
		win[i] = c->instrs[lo + i];
		key[i] = 2 * (int64_t)i;
	}
	win[nw - 1] = x;
	key[nw - 1] = 2 * (int64_t)(hi - lo) - 1;
	bool ok = order_by(win, nw, lo, key, instrs + lo);
	ts_free(win);
	ts_free(key);
	if (!ok) /* g was pairwise independent: out of memory */
		return TS_ERR_NOMEM;
	memcpy(instrs, c->instrs, (size_t)lo * sizeof *instrs);
	memcpy(instrs + hi + 2, c->instrs + hi + 1,
	       (size_t)(c->n_instrs - hi - 1) * sizeof *instrs);
	c->instrs = instrs;
	c->n_instrs++;
	for (int i = lo; i < c->n_instrs; i++)
		instrs[i]->index = i;
	m->n_instrs++;
	return TS_OK;
}

/* The combiner's rounds over computation c (the rule above); *n: the
 * all-reduces combined into others (a combined one of k counts k). */
static enum ts_status combine_all_reduces(struct ir_module *m,
					  struct ir_computation *c,
					  double bytes, struct ts_u64map *names,
					  int *n)
{
	struct ts_ptrmap taken = {0}; /* the candidates a round took */
	enum ts_status st = ts_ptrmap_init(&taken, (size_t)c->n_instrs + 1)
				    ? TS_OK
				    : TS_ERR_NOMEM;
	if (st == TS_OK && !topological(c)) /* the text may read a value
					       before it names it */
		st = reorder(m, c);
	int from = 0; /* no candidate left before it */
	while (st == TS_OK) {
		/* reach[i]: instruction i reads, through its operands, one
		 * that joined this round; g: those that joined */
		size_t cap = (size_t)c->n_instrs + 1;
		bool *reach = ts_calloc(cap, sizeof *reach);
		struct ir_instr **g = ts_malloc(cap * sizeof *g);
		int k = 0;
		double sum = 0;
		for (int i = from; reach && g && i < c->n_instrs; i++) {
			struct ir_instr *in = c->instrs[i];
			bool r = false;
			for (int j = 0; j < in->n_operands; j++)
				r |= in->operands[j]->parent == c &&
				     reach[in->operands[j]->index];
			if (combinable(in, bytes) &&
			    ts_ptrmap_get(&taken, in) < 0 &&
			    (k == 0 || same_kind(g[0], in))) {
				double b = ir_shape_bytes(&in->shape);
				if (k > 0 && (r || sum + b > bytes))
					break;
				if (k == 0)
					from = i;
				g[k++] = in;
				sum += b;
				ts_ptrmap_set(&taken, in, 1);
				r = true;
			}
			reach[i] = r;
		}
		if (!reach || !g)
			st = TS_ERR_NOMEM;
		else if (k >= 2 && (st = combine(m, c, g, k, names)) == TS_OK)
			*n += k;
		ts_free(reach);
		ts_free(g);
		if (k == 0)
			break; /* no candidate left */
	}
	ts_ptrmap_free(&taken);
	return st;
}

/* An array of the entry's parameters or result: its shape index, its
 * bytes in TPU memory, memory space and place in the enumeration; param:
 * its parameter number, or -1 for an output. */
struct buffer {
	struct ir_ints index;
	double bytes;
	int space, order;
	int64_t param;
};

/* Whether s has a dynamic dim (any of its arrays, for a tuple). */
static bool dynamic(const struct ir_shape *s)
{
	for (int i = 0; s->type == IR_TYPE_TUPLE && i < s->n_elems; i++)
		if (dynamic(&s->elems[i]))
			return true;
	for (int i = 0; s->type != IR_TYPE_TUPLE && s->dim_kind && i < s->rank;
	     i++)
		if (s->dim_kind[i] != IR_DIM_STATIC)
			return true;
	return false;
}

/* Appends the arrays of s (at index ix[0 .. n)) in ShapeIndex pre-order
 * (XLA's ForEachSubshape) to *out. */
static enum ts_status add_arrays(struct ts_arena *a, const struct ir_shape *s,
				 int64_t *ix, int n, int64_t param,
				 struct buffer **out, int *n_out, int *cap)
{
	if (s->type == IR_TYPE_TUPLE) {
		for (int i = 0; i < s->n_elems && n < MAX_RANK; i++) {
			ix[n] = i;
			enum ts_status st = add_arrays(a, &s->elems[i], ix,
						       n + 1, param, out,
						       n_out, cap);
			if (st != TS_OK)
				return st;
		}
		return TS_OK;
	}
	if (s->type == IR_TYPE_TOKEN || (param >= 0 && dynamic(s)))
		return TS_OK; /* XLA donates no dynamic array */
	if (*n_out == *cap) {
		int c2 = *cap ? 2 * *cap : 16;
		struct buffer *b = ts_arena_array(a, (size_t)c2, sizeof *b);
		if (!b)
			return TS_ERR_NOMEM;
		if (*n_out)
			memcpy(b, *out, (size_t)*n_out * sizeof *b);
		*out = b;
		*cap = c2;
	}
	int64_t *v = n ? ts_arena_dup(a, ix, (size_t)n * sizeof *ix) : NULL;
	if (n && !v)
		return TS_ERR_NOMEM;
	(*out)[*n_out] = (struct buffer){
		.index = {.n = n, .v = v},
		.bytes = ir_shape_padded_bytes(s),
		.space = s->layout.memory_space,
		.order = *n_out,
		.param = param};
	++*n_out;
	return TS_OK;
}

/* Whether m's header aliases output ix, or (param >= 0) names parameter
 * param's array at ix in input_output_alias. */
static bool aliased(const struct ir_module *m, const struct ir_ints *ix,
		    int64_t param)
{
	for (int i = 0; i < m->n_aliases; i++) {
		const struct ir_alias *x = &m->aliases[i];
		if (x->output.n >= 0 &&
		    (param < 0 ? ir_ints_equal(&x->output, ix)
			       : x->param == param &&
					 ir_ints_equal(&x->param_index, ix)))
			return true;
	}
	return false;
}

/* By memory space, then largest first, then in their order (a stable
 * sort by size in each space). */
static int by_bytes(const void *a, const void *b)
{
	const struct buffer *x = a, *y = b;
	if (x->space != y->space)
		return x->space < y->space ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return (x->order > y->order) - (x->order < y->order);
}

enum ts_status sim_module_aliases(const struct ir_module *m,
				 struct ts_arena *a, struct ir_alias **pairs,
				 int *n_pairs)
{
	const struct ir_computation *e = m->entry;
	int64_t ix[MAX_RANK];
	struct buffer *don = NULL, *out = NULL;
	int nd = 0, cd = 0, no = 0, co = 0;
	enum ts_status st = TS_OK;
	bool donors = false;
	for (int i = 0; i < m->n_aliases; i++)
		donors |= m->aliases[i].output.n < 0;
	for (int p = 0; donors && st == TS_OK && p < e->n_params; p++)
		if (e->params[p])
			st = add_arrays(a, &e->params[p]->shape, ix, 0, p,
					&don, &nd, &cd);
	if (donors && st == TS_OK && !dynamic(&e->root->shape))
		st = add_arrays(a, &e->root->shape, ix, 0, -1, &out, &no, &co);
	*pairs = ts_arena_array(a, (size_t)m->n_aliases + 1, sizeof **pairs);
	if (st != TS_OK || !*pairs)
		return TS_ERR_NOMEM;
	*n_pairs = 0;
	int kd = 0, ko = 0;
	for (int i = 0; i < nd; i++) { /* donors not aliased already */
		bool donor = false;
		for (int k = 0; k < m->n_aliases; k++)
			donor |= m->aliases[k].output.n < 0 &&
				 m->aliases[k].param == don[i].param &&
				 ir_ints_equal(&m->aliases[k].param_index,
					    &don[i].index);
		if (donor && !aliased(m, &don[i].index, don[i].param))
			don[kd++] = don[i];
	}
	for (int i = 0; i < no; i++)
		if (!aliased(m, &out[i].index, -1))
			out[ko++] = out[i];
	if (kd > 1)
		qsort(don, (size_t)kd, sizeof *don, by_bytes);
	if (ko > 1)
		qsort(out, (size_t)ko, sizeof *out, by_bytes);
	/* two pointers down each memory space: the one ahead waits */
	for (int i = 0, j = 0; i < kd && j < ko;) {
		int c = don[i].space != out[j].space
				? (don[i].space < out[j].space ? -1 : 1)
			: don[i].bytes != out[j].bytes
				? (don[i].bytes > out[j].bytes ? -1 : 1)
				: 0;
		if (c == 0)
			(*pairs)[(*n_pairs)++] = (struct ir_alias){
				.output = out[j].index,
				.param = don[i].param,
				.param_index = don[i].index};
		i += c <= 0;
		j += c >= 0;
	}
	for (int i = 0; i < m->n_aliases; i++)
		if (m->aliases[i].output.n >= 0)
			(*pairs)[(*n_pairs)++] = m->aliases[i];
	return TS_OK;
}

/* Where the buffer v's value is in starts: v, or what v renames (a
 * bitcast, a tuple's element, a loop's element: the loop's initial one)
 * or updates in place (sim_in_place_buffer), followed back. */
static const struct ir_instr *buffer_start(const struct ir_instr *v)
{
	for (;;) {
		const struct ir_instr *t = v->n_operands ? v->operands[0] : NULL,
				      *buf = sim_in_place_buffer(v);
		int64_t k = v->attrs.tuple_index;
		if (v->op == IR_OP_GET_TUPLE_ELEMENT && t->op == IR_OP_WHILE &&
		    t->n_operands == 1)
			t = t->operands[0];
		if (buf)
			v = buf;
		else if (v->op == IR_OP_BITCAST && t)
			v = t;
		else if (v->op == IR_OP_GET_TUPLE_ELEMENT &&
			 t->op == IR_OP_TUPLE && k >= 0 && k < t->n_operands)
			v = t->operands[k];
		else
			return v;
	}
}

/* Stamps with gen in mark (c->n_instrs entries) what reaches from
 * through operands in c, none placed before floor (c's order is
 * topological from there: nothing earlier reads what comes after);
 * stack: room for c's instructions; *found: s is among them. Stops at
 * what is stamped already, and once s is found. */
static void reach(const struct ir_computation *c, const struct ir_instr *from,
		  const struct ir_instr *s, int *mark, int gen, int floor,
		  const struct ir_instr **stack, bool *found)
{
	int n = 0;
	stack[n++] = from;
	mark[from->index] = gen;
	while (n > 0 && !*found) {
		const struct ir_instr *x = stack[--n];
		for (int j = 0; j < x->n_operands && !*found; j++) {
			const struct ir_instr *o = x->operands[j];
			if (o->parent != c || o->index < floor ||
			    mark[o->index] == gen)
				continue;
			*found = o == s;
			mark[o->index] = gen;
			stack[n++] = o;
		}
	}
}

/* Whether the value of output buffer start s (buffer_start) needs a
 * copy to live in parameter p's buffer (the rule at the top); rd[0 ..
 * n_rd): p's live readers in c's order (read_lists); mark and stack:
 * scratch, mark stamped with gen here; in_order: c's order is
 * topological. */
static bool copy_needed(const struct ir_computation *c,
			const struct ir_instr *s, const struct ir_instr *p,
			const int *rd, int n_rd, int *mark, int gen,
			const struct ir_instr **stack, bool in_order)
{
	if (s == p)
		return false;
	if (s->op == IR_OP_PARAMETER || s->op == IR_OP_CONSTANT)
		return true; /* a buffer of its own, not made here */
	enum ir_class k = ir_op_class(s->op);
	bool over = (k == IR_CLASS_ELEMENTWISE || k == IR_CLASS_TRANSCENDENTAL) &&
		    ir_shape_padded_bytes(&s->shape) ==
			    ir_shape_padded_bytes(&p->shape);
	/* in order, only what comes from s on can wait for it */
	int floor = in_order && s->parent == c ? s->index : 0;
	bool need = false;
	for (int q = 0; q < n_rd && !need; q++) {
		const struct ir_instr *u = c->instrs[rd[q]];
		if (rd[q] < floor || mark[rd[q]] == gen)
			continue;
		if (u == s)
			need = !over;
		else
			reach(c, u, s, mark, gen, floor, stack, &need);
	}
	return need;
}

/* The entry parameter v is, seen through bitcasts (one buffer), or
 * NULL. */
static const struct ir_instr *param_of(const struct ir_computation *c,
				       const struct ir_instr *v)
{
	while (v->op == IR_OP_BITCAST && v->n_operands == 1 && v->parent == c)
		v = v->operands[0];
	return v->op == IR_OP_PARAMETER && v->parent == c ? v : NULL;
}

/* The live readers of each of c's parameters (through bitcasts, which
 * are not readers themselves), in c's order: those of parameter number
 * p are rd[off[p] .. off[p + 1]) (live: stamped 1 what c's result
 * needs); from arena a. */
static enum ts_status read_lists(const struct ir_computation *c,
				 const int *live, struct ts_arena *a, int **off,
				 int **rd)
{
	int np = c->n_params;
	*off = ts_arena_array(a, (size_t)np + 2, sizeof **off);
	if (!*off)
		return TS_ERR_NOMEM;
	for (int pass = 0; pass < 2; pass++) {
		int *at = *off + 1; /* counts, then places */
		for (int i = 0; i < c->n_instrs; i++) {
			const struct ir_instr *u = c->instrs[i];
			if (live[i] != 1 || u->op == IR_OP_BITCAST)
				continue;
			int last = -1;
			for (int j = 0; j < u->n_operands; j++) {
				const struct ir_instr *q = param_of(c, u->operands[j]);
				int pn = q ? (int)q->attrs.parameter_number : -1;
				if (pn < 0 || pn >= np || pn == last)
					continue;
				last = pn; /* once a reader (adjacent repeats) */
				if (pass)
					(*rd)[at[pn]++] = i;
				else
					at[pn]++;
			}
		}
		if (pass)
			break;
		for (int q = 0; q < np; q++)
			(*off)[q + 1] += (*off)[q];
		*rd = ts_arena_array(a, (size_t)(*off)[np] + 1, sizeof **rd);
		if (!*rd)
			return TS_ERR_NOMEM;
		memmove(*off + 1, *off, (size_t)np * sizeof **off);
	}
	return TS_OK;
}

/* Output slot of c's root (-1: the root itself) becomes a copy of its
 * value, right before the root (names: the module's). */
static enum ts_status insert_copy(struct ir_module *m, struct ir_computation *c,
				  int slot, struct ts_u64map *names)
{
	struct ts_arena *a = &m->arena;
	struct ir_instr *root = c->root,
			*v = slot < 0 ? root : root->operands[slot];
	struct ir_instr *x = ts_arena_alloc(a, sizeof *x);
	struct ir_instr **ops = ts_arena_array(a, 1, sizeof *ops);
	struct ir_instr **instrs =
		ts_arena_array(a, (size_t)c->n_instrs + 1, sizeof *instrs);
	enum ts_status st = x && ops && instrs ? TS_OK : TS_ERR_NOMEM;
	const char *name = st ? NULL : fresh_name(m, names, v->name, "copy", &st);
	if (st != TS_OK)
		return st;
	ops[0] = v;
	*x = (struct ir_instr){.op = IR_OP_COPY, .wrapped_op = IR_OP_INVALID,
			       .name = name, .shape = v->shape,
			       .n_operands = 1, .operands = ops, .parent = c,
			       .attrs = IR_ATTRS_NONE, .flags = IR_INSTR_MADE,
			       .line = v->line, .col = v->col};
	x->shape.memo = (struct ir_shape_memo){0};
	if (!x->shape.layout.n_tiles && x->shape.rank <= MAX_RANK) {
		/* XLA copies after layout assignment: its copy has the TPU
		 * layout the value would get (ir_shape_default_tile), and
		 * runs (plan.c sim_kernel_free) */
		struct ir_layout *l = &x->shape.layout;
		int order[MAX_RANK], r = x->shape.rank;
		ir_shape_major_to_minor(&v->shape, order);
		l->minor_to_major =
			ts_arena_array(a, (size_t)r + 1, sizeof *l->minor_to_major);
		l->tiles = ts_arena_alloc(a, sizeof *l->tiles);
		if (!l->minor_to_major || !l->tiles)
			return TS_ERR_NOMEM;
		for (int i = 0; i < r; i++)
			l->minor_to_major[i] = order[r - 1 - i];
		ir_shape_default_tile(&v->shape, l->tiles);
		l->present = true;
		l->n_tiles = 1;
	}
	int at = slot < 0 ? c->n_instrs : root->index;
	memcpy(instrs, c->instrs, (size_t)at * sizeof *instrs);
	instrs[at] = x;
	memcpy(instrs + at + 1, c->instrs + at,
	       (size_t)(c->n_instrs - at) * sizeof *instrs);
	c->instrs = instrs;
	c->n_instrs++;
	m->n_instrs++;
	for (int i = at; i < c->n_instrs; i++)
		instrs[i]->index = i;
	if (slot < 0) { /* the root's value is copied: the copy is the root */
		v->flags &= ~IR_INSTR_ROOT;
		x->flags |= IR_INSTR_ROOT;
		c->root = x;
		v->n_users++;
		return TS_OK;
	}
	root->operands[slot] = x;
	x->n_users = 1;
	for (int j = 0; j < root->n_operands; j++)
		if (root->operands[j] == v) { /* the root reads v still */
			v->n_users++;
			break;
		}
	return TS_OK;
}

/* The copies into donated and aliased parameter buffers (the rule at
 * the top) in m's entry; done: how many, their bytes, and the aliases
 * not followed. */
static enum ts_status copy_aliased(struct ir_module *m,
				   struct ts_u64map *names,
				   struct sim_rewrites *done)
{
	struct ir_computation *e = m->entry;
	if (!e || !m->n_aliases)
		return TS_OK;
	struct ts_arena scratch;
	ts_arena_init(&scratch);
	struct ir_alias *pairs = NULL;
	int n = 0;
	int *live = ts_arena_array(&scratch, (size_t)e->n_instrs + 1,
				   sizeof *live),
	    *mark = ts_arena_array(&scratch, (size_t)e->n_instrs + 1,
				   sizeof *mark);
	const struct ir_instr **stack = ts_arena_array(
		&scratch, (size_t)e->n_instrs + 1, sizeof *stack);
	enum ts_status st = live && mark && stack
				    ? sim_module_aliases(m, &scratch, &pairs, &n)
				    : TS_ERR_NOMEM;
	int *slots = ts_arena_array(&scratch, (size_t)n + 1, sizeof *slots),
	    k = 0;
	bool none = false;
	if (st == TS_OK && !slots)
		st = TS_ERR_NOMEM;
	bool in_order = topological(e);
	if (st == TS_OK) /* XLA's DCE drops what the result does not read */
		reach(e, e->root, NULL, live, 1, 0, stack, &none);
	int *off = NULL, *rd = NULL;
	const struct ir_instr **kept =
		ts_arena_array(&scratch, (size_t)n + 1, sizeof *kept);
	if (st == TS_OK)
		st = kept ? read_lists(e, live, &scratch, &off, &rd)
			  : TS_ERR_NOMEM;
	const struct ir_instr *root = e->root;
	int n_kept = 0;
	for (int i = 0; i < n && st == TS_OK; i++) { /* all decided, then made */
		const struct ir_alias *x = &pairs[i];
		int slot = x->output.n == 1 ? (int)x->output.v[0] : -1;
		if (x->param_index.n != 0 || x->output.n > 1 ||
		    (slot >= 0 && (root->op != IR_OP_TUPLE ||
				   slot >= root->n_operands))) {
			done->unfollowed++;
			continue;
		}
		const struct ir_instr *v = slot < 0 ? root : root->operands[slot],
				      *start = buffer_start(v);
		int pn = (int)x->param;
		/* one buffer another output already lives in: a copy too */
		bool twice = false;
		for (int q = 0; q < n_kept; q++)
			twice |= kept[q] == start;
		if (twice || copy_needed(e, start, e->params[pn], rd + off[pn],
					 off[pn + 1] - off[pn], mark, i + 1,
					 stack, in_order)) {
			slots[k++] = slot;
			done->copied_bytes += ir_shape_padded_bytes(&v->shape);
		} else {
			kept[n_kept++] = start;
		}
	}
	for (int i = 0; i < k && st == TS_OK; i++) {
		st = insert_copy(m, e, slots[i], names);
		done->copies += st == TS_OK;
	}
	ts_arena_free(&scratch);
	return st;
}

/* How many of c's all-gathers XLA runs asynchronously (the rule at the
 * top), each marked IR_INSTR_ASYNC when mark; -1 when out of memory.
 * Only what c's result needs counts (XLA's DCE drops the rest): the
 * all-gathers and the dots beside them. */
static int gathers_beside(const struct ir_computation *c, bool mark)
{
	int n = c->n_instrs, n_uses = 0, n_ag = 0, count = 0;
	for (int i = 0; i < n; i++) {
		n_ag += c->instrs[i]->op == IR_OP_ALL_GATHER;
		n_uses += c->instrs[i]->n_users;
	}
	if (n_ag == 0 || !c->root)
		return 0;
	int *uoff = ts_malloc(((size_t)n + 1) * sizeof *uoff),
	    *users = ts_malloc(((size_t)n_uses + 1) * sizeof *users),
	    *live = ts_calloc((size_t)n + 1, sizeof *live),
	    *seen = ts_calloc((size_t)n + 1, sizeof *seen),
	    *down = ts_malloc(((size_t)n + 1) * sizeof *down),
	    *dots = ts_malloc(((size_t)n + 1) * sizeof *dots);
	const struct ir_instr **stack =
		ts_malloc(((size_t)n + 1) * sizeof *stack);
	if (!uoff || !users || !live || !seen || !down || !dots || !stack) {
		count = -1;
		goto out;
	}
	bool none = false, in_order = topological(c);
	reach(c, c->root, NULL, live, 1, 0, stack, &none);
	int n_dots = 0;
	for (int i = 0; i < n; i++)
		if (live[i] && ir_op_class(c->instrs[i]->op) ==
				       IR_CLASS_CONTRACTION)
			dots[n_dots++] = i;
	sim_users_csr(c, uoff, users, down); /* down: scratch till here */
	int gen = 0;
	for (int i = 0; i < n; i++) {
		struct ir_instr *a = c->instrs[i];
		if (a->op != IR_OP_ALL_GATHER || a->n_operands != 1 ||
		    a->shape.type == IR_TYPE_TUPLE || !live[i])
			continue;
		/* what a reads, and what reads it, through chains; in a
		 * text in order, a dot before a that a does not read is
		 * beside it, whatever reads a (the walk down saved) */
		reach(c, a, NULL, seen, ++gen, 0, stack, &none);
		bool beside = false;
		for (int q = 0; in_order && !beside && q < n_dots && dots[q] < i;
		     q++)
			beside = seen[dots[q]] != gen;
		int top = 0;
		if (!beside)
			down[top++] = i;
		while (top > 0) {
			int y = down[--top];
			for (int k = uoff[y]; k < uoff[y + 1]; k++)
				if (seen[users[k]] != gen) {
					seen[users[k]] = gen;
					down[top++] = users[k];
				}
		}
		for (int q = 0; !beside && q < n_dots; q++)
			beside = seen[dots[q]] != gen;
		count += beside;
		if (beside && mark)
			a->flags |= IR_INSTR_ASYNC;
	}
out:
	ts_free(uoff);
	ts_free(users);
	ts_free(live);
	ts_free(seen);
	ts_free(down);
	ts_free(dots);
	ts_free(stack);
	return count;
}

int sim_async_all_gathers(const struct ir_module *m)
{
	int n = 0;
	for (int ci = 0; ci < m->n_comps; ci++) {
		if (m->comps[ci]->is_fusion)
			continue;
		int k = gathers_beside(m->comps[ci], false);
		if (k < 0)
			return -1;
		n += k;
	}
	return n;
}

/* The copies of results other devices write (the rule at the top) in
 * m's entry; done: how many and their bytes. */
static enum ts_status copy_peer_written(struct ir_module *m,
					struct ts_u64map *names,
					struct sim_rewrites *done)
{
	struct ir_computation *e = m->entry;
	if (!e || !e->root)
		return TS_OK;
	bool tuple = e->root->op == IR_OP_TUPLE;
	int n = tuple ? e->root->n_operands : 1;
	enum ts_status st = TS_OK;
	for (int slot = 0; slot < n && st == TS_OK; slot++) {
		const struct ir_instr *v =
			tuple ? e->root->operands[slot] : e->root;
		enum ir_op op = buffer_start(v)->op;
		if (v->shape.type == IR_TYPE_TUPLE)
			continue; /* a copy of a tuple copies no array */
		if (op != IR_OP_ALL_GATHER && op != IR_OP_ALL_TO_ALL &&
		    op != IR_OP_RAGGED_ALL_TO_ALL &&
		    op != IR_OP_COLLECTIVE_PERMUTE)
			continue;
		done->peer_copied_bytes += ir_shape_padded_bytes(&v->shape);
		st = insert_copy(m, e, tuple ? slot : -1, names);
		done->peer_copies += st == TS_OK;
	}
	return st;
}

double sim_all_reduce_combine_limit(const struct hw_spec *hw)
{
	/* what XLA runs on the SparseCores it does not combine, nor into */
	double limit = hw->xla_all_reduce_combine_bytes,
	       async = hw->xla_async_all_reduce_bytes;
	return async > 0 && async - 1 < limit ? async - 1 : limit;
}

enum ts_status sim_module_rewrite(struct ir_module *m, const struct hw_spec *hw,
				  struct sim_rewrites *done, struct ts_diag *d)
{
	*done = (struct sim_rewrites){0};
	if (!sim_module_unfused(m))
		return TS_OK;
	double limit = sim_all_reduce_combine_limit(hw);
	struct ts_u64map names = {0};
	enum ts_status st = TS_OK;
	for (int ci = 0; st == TS_OK && ci < m->n_comps; ci++) {
		struct ir_computation *c = m->comps[ci];
		if (c->is_fusion)
			continue;
		int *dim = hw->xla_row_max_window ? row_maxes(c) : NULL;
		if (hw->xla_row_max_window && !dim)
			st = TS_ERR_NOMEM;
		for (int i = 0; dim && i < c->n_instrs && st == TS_OK; i++) {
			int k = row_max_of(c, dim, c->instrs[i]);
			if (k < 0)
				continue;
			st = to_window(m, c->instrs[i], c->instrs[k], dim[k]);
			done->windows += st == TS_OK;
		}
		ts_free(dim);
		if (st == TS_OK && limit > 0)
			st = combine_all_reduces(m, c, limit, &names,
						 &done->combined);
		if (st == TS_OK && c == m->entry)
			st = copy_aliased(m, &names, done);
		if (st == TS_OK && c == m->entry)
			st = copy_peer_written(m, &names, done);
		int marked = st == TS_OK && hw->xla_async_all_gather
				     ? gathers_beside(c, true)
				     : 0;
		if (marked < 0)
			st = TS_ERR_NOMEM;
		else
			done->async_all_gathers += marked;
		if (st != TS_OK)
			ts_diag_set(d, m->file, c->line, c->col,
				    st == TS_ERR_NOMEM
					    ? "out of memory rewriting %s"
					    : "%s: its instructions read each "
					      "other in a cycle",
				    c->name);
	}
	ts_u64map_free(&names);
	return st;
}
