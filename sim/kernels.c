/*
 * kernels.c: kernel extraction. sim_program_build() walks the entry
 * computation in schedule (text) order and lists what runs on the
 * TensorCore: one kernel per top-level fusion, convolution, dot, copy,
 * reduce, ... of a compiled module, or per fusion group that XLA's TPU
 * fusion would form in a pre-optimization module ("Grouping" below), in
 * the order tpusim fuse writes them (struct walk_order). Loops become
 * multiplicities. Design: docs/ARCHITECTURE.md "Kernels, tiles and
 * the analytic model"; the interface is sim.h.
 */
#include "sim.h"

#include <math.h>
#include <string.h>

#include "kernels_int.h"
#include "model.h"

/* ---- kind names ------------------------------------------------------------ */

static const char *const kind_names[] = {
	[SIM_KERNEL_FUSION] = "fusion",
	[SIM_KERNEL_CONVOLUTION] = "convolution",
	[SIM_KERNEL_DOT] = "dot",
	[SIM_KERNEL_COPY] = "copy",
	[SIM_KERNEL_REDUCE] = "reduce",
	[SIM_KERNEL_ELEMENTWISE] = "elementwise",
	[SIM_KERNEL_DATA] = "data",
	[SIM_KERNEL_COLLECTIVE] = "collective",
	[SIM_KERNEL_UNMODELLED] = "unmodelled",
};
_Static_assert(TS_ARRAY_LEN(kind_names) == SIM_KERNEL_KIND_COUNT,
	       "kind_names must cover every sim_kernel_kind");

const char *sim_kernel_kind_name(enum sim_kernel_kind k)
{
	return (unsigned)k < SIM_KERNEL_KIND_COUNT ? kind_names[k] : "invalid";
}

/* ---- the kernel list ------------------------------------------------------------ */

struct build {
	const struct ir_module *m;
	const struct sim_program_opts *opts;
	struct sim_program *p;
	int cap;            /* allocated entries of p->kernels */
	bool pre_opt;       /* module has no fusion instruction: group it */
	struct sim_member_memo *memo; /* sim_group_kernel's, for the kernels
	                                 it makes (sim_kernel.memo); NULL */
	bool evict;         /* make the evictions' copies (add_evictions):
	                       a grouped module built with room */
	const bool *shared; /* per instruction of the computation walked:
	                       more than one kernel may read it (two users,
	                       or one its readers' groups each recompute),
	                       or it is an element of the program's result */
	int **pair;         /* per computation (NULL: none of
	                       p->prefetches in it), per instruction: its
	                       prefetch's pair while it waits for its done,
	                       -1 when none is open, -2 for no prefetch;
	                       NULL: no prefetches */
	struct ts_u64map names; /* digests of the module's instruction
	                           names (sim_name_taken), made when first
	                           needed */
	double async_bytes; /* all-reduces this large run asynchronously
	                       (xla.async_all_reduce_bytes); 0: none */
	bool scheduled;     /* the program has async collectives
	                       (sim_async_collective), placed by
	                       sim/schedule.c */
	bool record;        /* the first build of such a program: note
	                       each node's kernels in costs */
	int n_costs;
	struct node_costs *costs; /* the grouped computations with such a
	                       collective, from the first build */
	struct ts_diag *d;
};

/* A grouped computation's nodes (sim_group_order's numbering) in the
 * first build of a program whose all-reduces may run asynchronously:
 * each node's kernels, then their roofline time x multiplicity, ns, off
 * the TensorCore's async work and the all-reduces inside a node that
 * run asynchronously in the second build (sim_program_build). */
struct node_costs {
	const struct ir_computation *c;
	int nn;             /* nodes: g->n + g->n_groups + 1 */
	int *k0, *k1;
	double *ns;
};

/* Where a kernel sits in the program. */
struct site {
	double mult;        /* runs per program */
	int loop_depth;     /* enclosing while loops */
	bool assumed;       /* an enclosing trip count was assumed */
	int nesting;        /* computation nesting, for the recursion guard */
	bool as_written;    /* a loop's condition: never grouped
	                       (sim_mark_grouped) */
};

static enum ts_status diag_at(struct build *b, const struct ir_instr *in,
			      enum ts_status st, const char *msg)
{
	ts_diag_set(b->d, b->m->file, in ? in->line : 0, in ? in->col : 0,
		    "%s%s%s", in ? in->name : "", in ? ": " : "", msg);
	return st;
}

static enum ts_status nomem(struct build *b)
{
	ts_diag_set(b->d, b->m->file, 0, 0, "out of memory listing kernels");
	return TS_ERR_NOMEM;
}

/* Appends a zeroed kernel; NULL when out of memory. */
static struct sim_kernel *push_kernel(struct build *b)
{
	struct sim_program *p = b->p;
	if (p->n_kernels == b->cap) {
		if (b->cap > (1 << 28))
			return NULL;
		int cap = b->cap ? 2 * b->cap : 64;
		struct sim_kernel *k =
			ts_realloc(p->kernels, (size_t)cap * sizeof *k);
		if (!k)
			return NULL;
		p->kernels = k;
		b->cap = cap;
	}
	struct sim_kernel *k = &p->kernels[p->n_kernels++];
	memset(k, 0, sizeof *k);
	return k;
}

/* ts_malloc'd copy of n instruction pointers (n may be 0: a 1-entry block,
 * so that NULL always means out of memory). */
static const struct ir_instr **dup_list(const struct ir_instr *const *v, int n)
{
	const struct ir_instr **out =
		ts_malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
	if (out && n > 0)
		memcpy(out, v, (size_t)n * sizeof *out);
	return out;
}

/* ---- main op, tiled instruction, tunable --------------------------------------- */

/* How strongly an op characterises a kernel: the MXU op dominates, then
 * reductions, then the irregular data ops; 0 for everything else. */
static int op_weight(enum ir_op op)
{
	switch (op) {
	case IR_OP_CONVOLUTION:
		return 5;
	case IR_OP_DOT:
	case IR_OP_RAGGED_DOT:
	case IR_OP_SCALED_DOT:
		return 4;
	case IR_OP_REDUCE:
		return 3;
	case IR_OP_REDUCE_WINDOW:
	case IR_OP_SELECT_AND_SCATTER:
		return 2;
	case IR_OP_SCATTER:
	case IR_OP_GATHER:
	case IR_OP_SORT:
	case IR_OP_DYNAMIC_UPDATE_SLICE:
		return 1;
	default:
		return 0;
	}
}

/* The heaviest instruction of computation c at nesting depth `depth`,
 * nested fusions included; on ties the least nested (a scatter fusion
 * whose updates a nested gather fusion computes is a scatter:
 * data/compiled's decoders' embedding gradients), then the first; NULL
 * when none weighs more than 0. *found_depth: its nesting depth. */
static const struct ir_instr *heaviest_at(const struct ir_computation *c,
					  int depth, int *found_depth)
{
	const struct ir_instr *best = NULL;
	int best_w = 0;
	*found_depth = depth;
	/* constant-derived ops (a reduce over constants) XLA folds away:
	 * never the kernel's main op */
	bool *cd = c ? sim_const_derived(c) : NULL;
	for (int i = 0; c && depth < SIM_MAX_NESTING && i < c->n_instrs; i++) {
		const struct ir_instr *in = c->instrs[i], *cand = in;
		int d = depth;
		if (cd && cd[i])
			continue;
		if (in->op == IR_OP_FUSION && in->n_called > 0)
			cand = heaviest_at(in->called[0], depth + 1, &d);
		int w = cand ? op_weight(cand->op) : 0;
		if (w > best_w || (w == best_w && w > 0 && d < *found_depth)) {
			best = cand;
			best_w = w;
			*found_depth = d;
		}
	}
	ts_free(cd);
	return best;
}

static const struct ir_instr *heaviest(const struct ir_computation *c)
{
	int depth;
	return heaviest_at(c, 0, &depth);
}

/* The instruction producing a computation's main result: through a root
 * tuple, its largest array operand; through bitcasts, their operand. */
static const struct ir_instr *result_instr(const struct ir_computation *c)
{
	const struct ir_instr *r = c->root;
	if (r && r->op == IR_OP_TUPLE) {
		const struct ir_instr *big = NULL;
		double big_bytes = -1;
		for (int j = 0; j < r->n_operands; j++) {
			const struct ir_instr *o = r->operands[j];
			double bytes = o->shape.type == IR_TYPE_TUPLE
					       ? -1
					       : ir_shape_padded_bytes(&o->shape);
			if (bytes > big_bytes) {
				big = o;
				big_bytes = bytes;
			}
		}
		r = big ? big : r;
	}
	while (r && r->op == IR_OP_BITCAST && r->n_operands == 1 &&
	       r->operands[0]->op != IR_OP_PARAMETER)
		r = r->operands[0];
	return r;
}

/* Is reduce r the root of computation c or an operand of its root tuple? */
static bool reduce_at_root(const struct ir_computation *c,
			   const struct ir_instr *r)
{
	if (!r || r->op != IR_OP_REDUCE || r->parent != c)
		return false;
	if (c->root == r)
		return true;
	if (c->root && c->root->op == IR_OP_TUPLE)
		for (int j = 0; j < c->root->n_operands; j++)
			if (c->root->operands[j] == r)
				return true;
	return false;
}

/*
 * main_op and tiled of a kernel from its heaviest instruction (NULL if
 * none) and its result. docs/TPU.md section 3: convolution/dot kernels tile
 * the contraction's output, reduce-rooted kernels the reduce's input,
 * copies and elementwise kernels their result.
 */
static void describe(struct sim_kernel *k, const struct ir_instr *heavy,
		     const struct ir_instr *result, bool reduce_rooted)
{
	k->main_op = heavy ? heavy->op : result->op;
	k->tiled = result;
	if (heavy && op_weight(heavy->op) >= 4)
		k->tiled = heavy;
	else if (heavy && heavy->op == IR_OP_REDUCE && reduce_rooted &&
		 heavy->n_operands > 0)
		k->tiled = heavy->operands[0];
}

/* Does the tile grid of s (sim_tile_grid, TPU.md section 3) have more
 * than one block, i.e. more than one config? Tuples and ranks the grid
 * cannot hold have none. */
static bool grid_has_blocks(const struct ir_shape *s)
{
	struct sim_tgrid g;
	struct ts_diag ignored;
	if (s->type == IR_TYPE_TUPLE ||
	    sim_tile_grid(s, &g, &ignored) != TS_OK)
		return false;
	for (int i = 0; i < g.rank; i++)
		if (g.tiles[i] > 1)
			return true;
	return false;
}

/* Tile-searchable kinds: loop/contraction/copy/reduce kernels over a grid
 * of more than one block. Data ops (gather, sort, ...) run as written; a
 * relayout (below) is no kernel of the user's module, so it is not
 * offered for tuning (--config, tile, autotune), though costed at the
 * model's best config like any other; an async DMA has no grid. */
static bool kernel_tunable(const struct sim_kernel *k)
{
	/* a Pallas kernel's tiles are its own (SIM_PLAN_DECLARED) */
	if (k->relayout || k->dma ||
	    (k->instr && k->instr->op == IR_OP_CUSTOM_CALL))
		return false;
	switch (k->kind) {
	case SIM_KERNEL_FUSION:
	case SIM_KERNEL_CONVOLUTION:
	case SIM_KERNEL_DOT:
	case SIM_KERNEL_COPY:
	case SIM_KERNEL_REDUCE:
	case SIM_KERNEL_ELEMENTWISE:
		return k->tiled && grid_has_blocks(&k->tiled->shape);
	default:
		return false;
	}
}

/* ---- library calls ----------------------------------------------------------------
 *
 * Library calls whose work is known from their operands (XLA GPU's cuBLAS
 * and cuDNN custom calls) are costed as the HLO op they stand for, by the
 * same formulas and model as that op:
 *   __cublas$gemm, __cublas$lt$matmul*: dot(op0, op1) with the
 *     dot_dimension_numbers and operand_precision of backend_config (kept
 *     by the parser); MACs = elems(result) x prod(lhs contracting dims);
 *   __cudnn$convForward, __cudnn$convBiasActivationForward,
 *   __cudnn$convForwardGraph: convolution(op0, op1) with the call's
 *     window=, dim_labels=, feature_group_count=, batch_group_count=;
 *   __cudnn$convBackwardInput: the forward convolution it is the gradient
 *     of, lhs = the call's result (d_input), rhs = op1 (filter), output
 *     shaped like op0 (d_output);
 *   __cudnn$convBackwardFilter: lhs = op0 (input), rhs = the call's result
 *     (d_filter), output shaped like op1 (d_output).
 * Source: XLA gpu_conv_runner.cc GetGpuConvConfig (a cuDNN call's window
 * and dim_labels always describe the forward convolution: input, filter,
 * output taken from result/operands as above).
 * Known wrong: a backward convolution has the forward one's MACs exactly,
 * but its bytes are costed as the forward one's (the same three arrays,
 * one of them read instead of written) and its tiling is the forward
 * one's (XLA TPU would emit the transposed convolution, tiled its own
 * way). A tuple result's first element is the result; the rest is
 * library workspace, not counted. Epilogue operands (gemm C with beta !=
 * 0, bias, side input, f8 scales) are read as inputs; epilogue arithmetic
 * (alpha/beta scaling, activation) is not counted.
 * A call without what it needs (dot dimensions, dim_labels, an array
 * result, two operands) stays unmodelled, and is named in the warning.
 */
enum lib_call {
	LIB_NONE = 0,
	LIB_GEMM,
	LIB_CONV,            /* forward */
	LIB_CONV_BWD_INPUT,
	LIB_CONV_BWD_FILTER,
};

static enum lib_call lib_call_kind(const struct ir_instr *in)
{
	const char *t = in->attrs.custom_call_target;
	if (in->op != IR_OP_CUSTOM_CALL || !t)
		return LIB_NONE;
	if (!strcmp(t, "__cublas$gemm") ||
	    !strncmp(t, "__cublas$lt$matmul", strlen("__cublas$lt$matmul")))
		return LIB_GEMM;
	if (!strcmp(t, "__cudnn$convForward") ||
	    !strcmp(t, "__cudnn$convBiasActivationForward") ||
	    !strcmp(t, "__cudnn$convForwardGraph"))
		return LIB_CONV;
	if (!strcmp(t, "__cudnn$convBackwardInput"))
		return LIB_CONV_BWD_INPUT;
	if (!strcmp(t, "__cudnn$convBackwardFilter"))
		return LIB_CONV_BWD_FILTER;
	return LIB_NONE;
}

/* A parameter standing for value v with shape s, in no computation's
 * list: the operand of a stand-in (below, and "relayouts"). */
static struct ir_instr value_stand_in(const struct ir_instr *v,
				      const struct ir_shape *s)
{
	return (struct ir_instr){
		.op = IR_OP_PARAMETER,
		.wrapped_op = IR_OP_INVALID,
		.name = v->name,
		.shape = *s,
		.parent = v->parent,
		.attrs = IR_ATTRS_NONE,
		.index = -1,
		.n_users = 1,
		.line = v->line,
		.col = v->col,
	};
}

/* The stand-in of one library call or copy-start (one allocation, freed
 * through its first member). */
struct lib_stand_in {
	struct ir_instr op;  /* the dot / convolution */
	struct ir_instr arg; /* a backward convolution's result as an operand */
	struct ir_instr *ops[2];
};

/* Replaces an unmodelled kernel's library call by its stand-in (above);
 * leaves the kernel alone when the call is none of them or lacks what
 * the stand-in needs. *instr becomes the stand-in. */
static enum ts_status lower_library_call(struct build *b, struct sim_kernel *k,
					 const struct ir_instr **instr)
{
	const struct ir_instr *in = *instr;
	enum lib_call lc = lib_call_kind(in);
	const struct ir_shape *res = &in->shape;
	if (res->type == IR_TYPE_TUPLE)
		res = res->n_elems > 0 ? &res->elems[0] : NULL;
	if (lc == LIB_NONE || in->n_operands < 2 || !res ||
	    res->type == IR_TYPE_TUPLE || res->type == IR_TYPE_TOKEN ||
	    (lc == LIB_GEMM ? !in->attrs.dot : !in->attrs.conv))
		return TS_OK;
	/* A group (pre-optimization module) may hold constant chains feeding
	 * the call besides the call itself; a backward convolution, whose
	 * inputs change, is lowered only alone. */
	bool bwd = lc == LIB_CONV_BWD_INPUT || lc == LIB_CONV_BWD_FILTER;
	int at = -1;
	for (int i = 0; i < k->n_members; i++)
		if (k->members[i] == in)
			at = i;
	if (at < 0 || (bwd && k->n_members != 1))
		return TS_OK;
	struct lib_stand_in *s = ts_calloc(1, sizeof *s);
	if (!s)
		return nomem(b);
	k->lowered = &s->op;
	s->op = *in;
	s->op.op = lc == LIB_GEMM ? IR_OP_DOT : IR_OP_CONVOLUTION;
	s->op.wrapped_op = IR_OP_INVALID;
	s->op.n_called = 0;
	s->op.called = NULL;
	s->op.shape = *res;
	if (bwd) {
		bool bwd_in = lc == LIB_CONV_BWD_INPUT;
		s->arg = value_stand_in(in, res);
		s->op.shape = in->operands[bwd_in ? 0 : 1]->shape;
		s->ops[0] = bwd_in ? &s->arg : in->operands[0];
		s->ops[1] = bwd_in ? in->operands[1] : &s->arg;
		s->op.operands = s->ops;
		s->op.n_operands = 2;
		const struct ir_instr **inputs =
			dup_list((const struct ir_instr *const *)s->ops, 2);
		if (!inputs)
			return nomem(b);
		ts_free(k->inputs);
		k->inputs = inputs;
		k->n_inputs = 2;
	}
	k->kind = lc == LIB_GEMM ? SIM_KERNEL_DOT : SIM_KERNEL_CONVOLUTION;
	k->main_op = s->op.op;
	k->tiled = &s->op;
	k->members[at] = &s->op;
	for (int i = 0; i < k->n_outputs; i++)
		if (k->outputs[i] == in)
			k->outputs[i] = &s->op;
	*instr = &s->op;
	return TS_OK;
}

/*
 * Async transfers the DMA engines run while the TensorCore goes on
 * (sim.h sim_async), each lowered to the op it performs, with the
 * transferred result's shape (not the whole tuple):
 *   copy-start(x) -> (dest, src, context)            copy(x) as dest
 *   X-start(ops) -> ((ops), result, context), X a data-movement op
 *     without calls= (slice-start, dynamic-slice-start, ...)   X(ops) as
 *     result, with X's attributes (slice=...)
 * The kernel is a DMA (k->dma): costed as the bytes it moves at HBM
 * bandwidth (model.c), not as a tiled loop on the TensorCore. Its done
 * (copy-done, slice-done) waits for it.
 */
static enum ts_status lower_async_copy(struct build *b, struct sim_kernel *k,
				       const struct ir_instr **instr)
{
	const struct ir_instr *in = *instr;
	const struct ir_shape *t = &in->shape;
	enum ir_op op;
	int part;
	if (in->op == IR_OP_COPY_START) {
		op = IR_OP_COPY;
		part = 0;
	} else if (in->op == IR_OP_ASYNC_START && in->n_called == 0 &&
		   ir_op_class(in->wrapped_op) == IR_CLASS_DATA_MOVEMENT) {
		op = in->wrapped_op;
		part = 1;
	} else {
		return TS_OK;
	}
	if (t->type != IR_TYPE_TUPLE || t->n_elems <= part ||
	    t->elems[part].type == IR_TYPE_TUPLE || k->n_members != 1 ||
	    k->n_outputs != 1)
		return TS_OK;
	struct lib_stand_in *s = ts_calloc(1, sizeof *s);
	if (!s)
		return nomem(b);
	s->op = *in;
	s->op.op = op;
	s->op.wrapped_op = IR_OP_INVALID;
	s->op.shape = t->elems[part];
	k->lowered = &s->op;
	k->dma = true;
	k->main_op = op;
	k->tiled = &s->op;
	k->members[0] = &s->op;
	k->outputs[0] = &s->op;
	*instr = &s->op;
	return TS_OK;
}

/* Fills the common fields, counts the work, keeps the kernel. cd: the
 * constant-derived marks of a grouped kernel's computation (the
 * grouping's), or NULL. */
static enum ts_status finish_kernel(struct build *b, struct sim_kernel *k,
				    const struct ir_instr *instr,
				    const struct site *s, const bool *cd)
{
	enum ts_status st = k->kind == SIM_KERNEL_UNMODELLED
				    ? lower_library_call(b, k, &instr)
				    : lower_async_copy(b, k, &instr);
	if (st != TS_OK)
		return st;
	k->instr = instr;
	k->name = instr->name;
	k->group_devices = 1;
	const struct ir_instr *side = sim_side_collective(instr);
	if (k->kind == SIM_KERNEL_COLLECTIVE || side) {
		const struct ir_instr *c = side ? side : sim_fused_collective(instr);
		const struct ir_instr *g = c ? c : instr;
		k->group_devices = g->attrs.replica_group_size > 0
					   ? g->attrs.replica_group_size
					   : b->m->replica_count * b->m->num_partitions;
		if (sim_megascale_slices(g))
			k->group_devices = sim_megascale_slices(g);
		k->groups = g->attrs.groups;
	}
	k->multiplicity = s->mult;
	k->loop_depth = s->loop_depth;
	k->as_written = s->as_written;
	k->trip_count_assumed = s->assumed;
	k->tunable = kernel_tunable(k);
	return sim_kernel_work(k, cd, b->m->file, &k->work, b->d);
}

/* One kernel for a top-level fusion or unfused op of a compiled module. */
static enum ts_status add_top_kernel(struct build *b, const struct ir_instr *in,
				     enum sim_kernel_kind kind,
				     const struct site *s)
{
	struct sim_kernel *k = push_kernel(b);
	if (!k)
		return nomem(b);
	k->kind = kind;
	if (in->op == IR_OP_FUSION) {
		if (in->n_called < 1 || !in->called[0])
			return diag_at(b, in, TS_ERR_PARSE,
				       "fusion without a fused computation");
		const struct ir_computation *c = in->called[0];
		const struct ir_instr *h = heaviest(c);
		const struct ir_instr *body_res = result_instr(c);
		const struct ir_instr *res = in;
		if (in->shape.type == IR_TYPE_TUPLE && body_res)
			res = body_res;
		describe(k, h, res, reduce_at_root(c, h));
		if (!h && body_res)
			k->main_op = body_res->op;
		k->n_members = c->n_instrs;
		k->members = dup_list((const struct ir_instr *const *)c->instrs,
				      c->n_instrs);
	} else {
		describe(k, op_weight(in->op) > 0 ? in : NULL, in, true);
		k->n_members = 1;
		k->members = dup_list(&in, 1);
	}
	k->n_inputs = in->n_operands;
	k->inputs = dup_list((const struct ir_instr *const *)in->operands,
			     in->n_operands);
	k->n_outputs = 1;
	k->outputs = dup_list(&in, 1);
	if (!k->members || !k->inputs || !k->outputs)
		return nomem(b);
	return finish_kernel(b, k, in, s, NULL);
}

/* ---- the walk ---------------------------------------------------------------- */

static enum ts_status walk(struct build *b, const struct ir_computation *c,
			   struct site s);
static bool needs_relayout(const struct ir_instr *v, int *got);

/* ---- async pairs (sim.h sim_async) ---- */

/* Ops that hand work to the DMA engines or the ICI and return. */
bool sim_async_start(const struct ir_instr *in)
{
	switch (in->op) {
	case IR_OP_COPY_START:
	case IR_OP_ALL_REDUCE_START:
	case IR_OP_ALL_GATHER_START:
	case IR_OP_COLLECTIVE_PERMUTE_START:
	case IR_OP_ASYNC_START:
		return true;
	case IR_OP_SEND:
		return sim_megascale_slices(in) > 0;
	default:
		return sim_chain_start(in);
	}
}

/* Whether fusion x holds a clone of the collective chain start `start`
 * begins (classify.c: the same channel_id). */
static bool same_chain(const struct ir_instr *start, const struct ir_instr *x)
{
	int64_t ch = sim_chain_channel(x);
	return ch > 0 && sim_chain_start(start) &&
	       sim_chain_channel(start) == ch;
}

/* Whether `in` is the done that start waits for: its done op (through
 * async-updates); a collective chain's done (classify.c, its channel);
 * or, for a megascale send, the recv-done of the recv that shares its
 * token (the exchange's result arrives there). Start NULL: whether `in`
 * is a done of any kind. */
static bool ends(const struct ir_instr *start, const struct ir_instr *in)
{
	switch (in->op) {
	case IR_OP_COPY_DONE:
	case IR_OP_ALL_REDUCE_DONE:
	case IR_OP_ALL_GATHER_DONE:
	case IR_OP_COLLECTIVE_PERMUTE_DONE:
	case IR_OP_ASYNC_DONE:
		break;
	case IR_OP_RECV_DONE: {
		if (!start)
			return true;
		const struct ir_instr *r =
			in->n_operands == 1 ? in->operands[0] : NULL;
		return r && sim_megascale_slices(r) && r->n_operands == 1 &&
		       start->op == IR_OP_SEND && start->n_operands == 2 &&
		       start->operands[1] == r->operands[0];
	}
	default:
		return sim_chain_done(in) && (!start || same_chain(start, in));
	}
	if (!start)
		return true;
	const struct ir_instr *s = in->n_operands == 1 ? in->operands[0] : NULL;
	while (s && s->op == IR_OP_ASYNC_UPDATE)
		s = s->n_operands == 1 ? s->operands[0] : NULL;
	return s == start;
}

/* The pair from `first` on, still waiting for its done, that `in` ends
 * (ends), or NULL. */
static struct sim_async *open_pair(struct sim_program *p,
				   const struct ir_instr *in, int first)
{
	if (!ends(NULL, in)) /* no done: no pair to look for */
		return NULL;
	for (int a = first; a < p->n_async; a++)
		if (!p->async[a].done && ends(p->async[a].start, in))
			return &p->async[a];
	return NULL;
}

/* Whether a chain whose collective fusion `in` clones is open: its start
 * seen, its done not yet (classify.c sim_chain_channel). */
static bool open_chain(const struct sim_program *p, const struct ir_instr *in)
{
	for (int a = 0; a < p->n_async; a++)
		if (!p->async[a].done && same_chain(p->async[a].start, in))
			return true;
	return false;
}

/* Opens a pair for start `in`, whose kernels are kernels[k0 ..]. */
static enum ts_status open_async(struct build *b, const struct ir_instr *in,
				 int k0)
{
	struct sim_program *p = b->p;
	struct sim_async *grown = ts_realloc(p->async, (size_t)(p->n_async + 1) *
							       sizeof *grown);
	if (!grown)
		return nomem(b);
	p->async = grown;
	p->async[p->n_async++] = (struct sim_async){
		.start = in, .first = k0, .n = p->n_kernels - k0,
		.between = p->n_kernels};
	for (int k = k0; k < p->n_kernels; k++)
		p->kernels[k].async_work = true;
	return TS_OK;
}

/* After instruction in, whose kernels are kernels[k0 ..]: a start opens
 * its pair, a done closes the pair from `open` on that it ends. Whether
 * it was either; *st: TS_OK, or why not. */
static bool track_async(struct build *b, const struct ir_instr *in, int k0,
			int open, enum ts_status *st)
{
	struct sim_program *p = b->p;
	struct sim_async *a;
	*st = TS_OK;
	if (sim_async_start(in) && p->n_kernels > k0) {
		*st = open_async(b, in, k0);
		return true;
	}
	if ((a = open_pair(p, in, open))) {
		a->done = in;
		a->n_between = k0 - a->between;
		return true;
	}
	return false;
}

/* A start of the pairs from `open` on whose done is not in its
 * computation hides nothing: its kernels are ordinary work again. */
static void drop_open_pairs(struct sim_program *p, int open)
{
	int kept = open;
	for (int a = open; a < p->n_async; a++) {
		const struct sim_async *pa = &p->async[a];
		if (pa->done)
			p->async[kept++] = *pa;
		else
			for (int k = pa->first; k < pa->first + pa->n; k++)
				p->kernels[k].async_work = false;
	}
	p->n_async = kept;
}

/* The loop record of while `in`: its trip count, known, derived or
 * assumed (sim.h sim_trip_source), added to the program's list the first
 * time the loop is reached; NULL when memory runs out. */
static const struct sim_loop *loop_of(struct build *b, const struct ir_instr *in)
{
	struct sim_program *p = b->p;
	for (int i = 0; i < p->n_loops; i++)
		if (p->loops[i].instr == in)
			return &p->loops[i];
	struct sim_loop l = {in, in->attrs.known_trip_count, SIM_TRIP_KNOWN};
	if (l.trip_count < 0) {
		l.source = SIM_TRIP_DERIVED;
		if (!sim_while_trip_count(in, &l.trip_count)) {
			l.source = SIM_TRIP_ASSUMED;
			l.trip_count = b->opts && b->opts->default_trip_count > 0
					       ? b->opts->default_trip_count
					       : 1;
			p->n_assumed_trip_counts++;
		}
	}
	struct sim_loop *grown = ts_realloc(p->loops, (size_t)(p->n_loops + 1) *
							      sizeof *grown);
	if (!grown)
		return NULL;
	p->loops = grown;
	p->loops[p->n_loops] = l;
	return &p->loops[p->n_loops++];
}

static const char *const trip_source_names[] = {
	[SIM_TRIP_KNOWN] = "known", [SIM_TRIP_DERIVED] = "derived",
	[SIM_TRIP_ASSUMED] = "assumed",
};

const char *sim_trip_source_name(enum sim_trip_source s)
{
	return (unsigned)s <= SIM_TRIP_ASSUMED ? trip_source_names[s] : "invalid";
}

/* Recurses into the computations of a while / call / conditional. */
static enum ts_status walk_control(struct build *b, const struct ir_instr *in,
				   enum sim_top role, const struct site *s)
{
	struct site inner = *s;
	inner.nesting++;
	switch (role) {
	case SIM_TOP_WHILE: {
		if (in->n_called != 2 || !in->called[0] || !in->called[1])
			return diag_at(b, in, TS_ERR_PARSE,
				       "while needs condition= and body=");
		const struct sim_loop *l = loop_of(b, in);
		if (!l)
			return nomem(b);
		int64_t trip = l->trip_count;
		bool assumed = l->source == SIM_TRIP_ASSUMED;
		inner.loop_depth++;
		inner.assumed = inner.assumed || assumed;
		/* The condition runs once more than the body (the final test).
		 * A product of trip counts past the double range is no count a
		 * program runs: an error at the loop, not an infinite time. */
		inner.mult = s->mult * ((double)trip + 1);
		if (!isfinite(inner.mult))
			return diag_at(b, in, TS_ERR_PARSE,
				       "its trip count times those of the loops "
				       "around it overflows a double");
		inner.as_written = true;
		enum ts_status st = walk(b, in->called[0], inner);
		if (st != TS_OK)
			return st;
		inner.mult = s->mult * (double)trip;
		inner.as_written = s->as_written;
		return walk(b, in->called[1], inner);
	}
	case SIM_TOP_CALL:
		for (int j = 0; j < in->n_called; j++) {
			if (!in->called[j])
				continue;
			enum ts_status st = walk(b, in->called[j], inner);
			if (st != TS_OK)
				return st;
		}
		return TS_OK;
	case SIM_TOP_CONDITIONAL:
		/* Each branch weighted 1/n_branches: the expected time when
		 * branches are equally likely. Keeps every branch's kernels
		 * listed and the total an expectation rather than a bound
		 * (a max would need one branch chosen as a whole). Wrong when
		 * one branch dominates at run time: use --trip-count style
		 * what-ifs or read the per-kernel list. */
		if (in->n_called < 1)
			return diag_at(b, in, TS_ERR_PARSE,
				       "conditional without branches");
		inner.mult = s->mult / (double)in->n_called;
		for (int j = 0; j < in->n_called; j++) {
			if (!in->called[j])
				continue;
			enum ts_status st = walk(b, in->called[j], inner);
			if (st != TS_OK)
				return st;
		}
		return TS_OK;
	default:
		return TS_OK;
	}
}

/* Emits the kernel of group id. */
static enum ts_status emit_group(struct build *b, const struct grouping *g,
				 int id,
				 const struct ir_instr **buf,
				 const struct site *s)
{
	const struct ir_computation *c = g->c;
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem), n_work = 0;
	const struct ir_instr *work = NULL, *heavy = NULL;
	int heavy_w = 0;
	for (int q = 0; q < n_mem; q++) {
		int i = mem[q];
		const struct ir_instr *in = c->instrs[i];
		if (sim_fuse_class(g, in) != FC_FREE &&
		    (!g->cd[i] || in == c->instrs[g->g_root[id]])) {
			n_work++;
			work = in;
		}
		if (op_weight(in->op) > heavy_w && !g->cd[i]) {
			heavy = in;
			heavy_w = op_weight(in->op);
		}
	}
	const struct ir_instr *root = c->instrs[g->g_root[id]];
	enum sim_kernel_kind kind = SIM_KERNEL_FUSION;
	if (n_work == 1 && sim_top_role(work, &kind) == SIM_TOP_FREE)
		return TS_OK; /* e.g. a bitcast-like reshape as the root */
	/* a collective chain's start grouped with its clone (grouping.c) is
	 * the collective's kernel, async work up to the done; the done with
	 * its clone waits, no kernel: as a compiled chain's fusions are
	 * (sim_top_role) */
	bool chain = sim_chain_grouped(g, id);
	if (chain && sim_chain_done(root))
		return TS_OK;
	if (chain) {
		kind = SIM_KERNEL_COLLECTIVE;
	} else if (sim_fuse_alone(root) &&
		   sim_top_role(root, &kind) == SIM_TOP_KERNEL) {
		/* what XLA keeps alone (one of its kCustom fusions, an async
		 * start, a collective, ...) is the op alone, as fuse writes
		 * it: the constants it reads stay out */
		return add_top_kernel(b, root, kind, s);
	}
	struct sim_kernel *k = push_kernel(b);
	if (!k)
		return nomem(b);
	k->kind = kind;
	k->memo = b->memo;
	describe(k, heavy, root, heavy && heavy->op == IR_OP_REDUCE);
	int n = 0;
	for (int q = 0; q < n_mem; q++)
		buf[n++] = c->instrs[mem[q]];
	k->n_members = n;
	k->members = dup_list(buf, n);
	n = sim_group_inputs(g, id, buf);
	k->n_inputs = n;
	k->inputs = dup_list(buf, n);
	n = 0;
	int gen = sim_group_mark(g, id);
	for (int q = 0; q < n_mem; q++)
		if (sim_group_output(g, gen, mem[q]))
			buf[n++] = c->instrs[mem[q]];
	k->n_outputs = n;
	k->outputs = dup_list(buf, n);
	if (!k->members || !k->inputs || !k->outputs)
		return nomem(b);
	return finish_kernel(b, k, root, s, g->cd);
}

/* The node that makes instruction k's value: the group that owns it, k
 * itself (an instruction of no group: a parameter, a loop), or -1 (one
 * recomputed in its readers' groups, which read its operands). */
static int node_of(const struct grouping *g, int k)
{
	int id = g->grp[k];
	if (id >= 0)
		return g->g_rep[id] >= 0 ? g->n + g->g_rep[id] : -1;
	return id == G_MULTI ? -1 : k;
}

/* A top-level kernel of stand-in copy `copy` from src, copy being the
 * first member of its allocation, which the kernel then owns (lowered);
 * NULL when memory runs out (the allocation freed with the kernel, or
 * here when there is none). */
static struct sim_kernel *push_copy_kernel(struct build *b,
					   struct ir_instr *copy,
					   const struct ir_instr *src)
{
	struct sim_kernel *k = push_kernel(b);
	if (!k) {
		ts_free(copy);
		return NULL;
	}
	k->lowered = copy;
	k->kind = SIM_KERNEL_COPY;
	describe(k, NULL, copy, false);
	const struct ir_instr *in = copy;
	k->n_members = k->n_inputs = k->n_outputs = 1;
	k->members = dup_list(&in, 1);
	k->inputs = dup_list(&src, 1);
	k->outputs = dup_list(&in, 1);
	return k->members && k->inputs && k->outputs ? k : NULL;
}

/*
 * The prefetches (sim/placement.c): XLA copies a parameter into VMEM
 * with a copy-start and waits for it (copy-done) right before the first
 * kernel that reads it; the cross-program one as the program begins.
 * Here: for each of p->prefetches, a DMA kernel of that copy, named
 * "<param>.prefetch-start" (no instruction of the module has the name),
 * made where the walk reaches the parameter (a loop body's state
 * element: at the body's top, sim_group_order), and an async pair whose
 * done, "<param>.prefetch", comes before the first node that reads the
 * parameter, a bitcast of it too (tpusim fuse writes both there, the
 * readers reading the done): the kernels between hide the copy
 * (program.c). Placement decides which copies move anything.
 * The evictions the same way the other way round: XLA writes a value
 * into VMEM for the kernels that read it soon and copies it to HBM
 * behind them for the later ones (v6e/decoder_s's compiled loop body
 * has 26 such copies). Here: for each output of a kernel that two or
 * more instructions read (sim_placeable), a DMA kernel of that
 * copy, "<value>.evict-start", right after the kernel, and an async
 * pair closed at once (done "<value>.evict"); placement, where it
 * places the value for its first readers only, moves the done after
 * the last of them, and leaves the others idle.
 */
struct copy_stand_in {
	struct ir_instr copy; /* the copy (the start's kernel) */
	struct ir_instr done;
	struct ir_instr *ops[2];
	char names[];
};

/* A name's digest for a sim_name_taken map (never 0, the empty key). */
static uint64_t name_key(const char *name)
{
	uint64_t h = ts_fnv1a(TS_FNV1A_BASIS, name, strlen(name));
	return h ? h : 1;
}

bool sim_name_taken(struct ts_u64map *names, const struct ir_module *m,
		    const char *name, enum ts_status *st)
{
	for (int ci = 0; !names->n && ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++)
			if (!sim_name_take(names,
					   m->comps[ci]->instrs[i]->name)) {
				*st = TS_ERR_NOMEM;
				return true;
			}
	return ts_u64map_get(names, name_key(name)) >= 0;
}

bool sim_name_take(struct ts_u64map *names, const char *name)
{
	return ts_u64map_set(names, name_key(name), 1);
}

/* b->pair's entry for v when v is one of p->prefetches, else NULL. */
static int *prefetch_pair(const struct build *b, const struct ir_instr *v)
{
	int *row = b->pair ? b->pair[v->parent->index] : NULL;
	return row && row[v->index] != -2 ? &row[v->index] : NULL;
}

/* Makes the kernel of v's prefetch (evict false: into VMEM, where site
 * s reaches v: the program's start, or a loop body's) or eviction (into
 * HBM, where s runs v's writer) and opens its pair (above): a
 * prefetch's stays open, an eviction's is closed at once. */
static enum ts_status add_copy(struct build *b, const struct ir_instr *v,
			       bool evict, const struct site *s)
{
	size_t n = strlen(v->name) + 48;
	struct copy_stand_in *x = ts_calloc(1, sizeof *x + 2 * n);
	if (!x)
		return nomem(b);
	char *start = x->names, *done = x->names + n;
	const char *what = evict ? "evict" : "prefetch";
	enum ts_status st = TS_OK;
	for (int t = 0; st == TS_OK; t++) { /* names no instruction has */
		const char *sfx = t ? "." : "";
		snprintf(start, n, "%s.%s-start%s%.0d", v->name, what, sfx, t);
		snprintf(done, n, "%s.%s%s%.0d", v->name, what, sfx, t);
		if (!sim_name_taken(&b->names, b->m, start, &st) &&
		    !sim_name_taken(&b->names, b->m, done, &st))
			break;
	}
	if (st != TS_OK) {
		ts_free(x);
		return nomem(b);
	}
	struct ir_shape tmp;
	x->copy = value_stand_in(v, evict ? &v->shape
					  : sim_vmem_shape(&v->shape, &tmp));
	x->copy.shape.memo = (struct ir_shape_memo){0};
	x->copy.op = IR_OP_COPY;
	x->copy.attrs.cross_program_prefetch = v == b->p->prefetched;
	x->copy.name = start;
	x->copy.index = v->index;
	x->ops[0] = (struct ir_instr *)v;
	x->copy.operands = &x->ops[0];
	x->copy.n_operands = 1;
	x->done = x->copy;
	x->done.op = IR_OP_COPY_DONE;
	x->done.name = done;
	x->ops[1] = &x->copy;
	x->done.operands = &x->ops[1];
	struct sim_kernel *k = push_copy_kernel(b, &x->copy, v);
	if (!k) /* x is freed, or the kernel's */
		return nomem(b);
	k->dma = true;
	k->prefetch = !evict;
	k->evict = k->idle = evict;
	int k0 = b->p->n_kernels - 1;
	st = finish_kernel(b, k, &x->copy, s, NULL);
	if (st == TS_OK)
		st = open_async(b, &x->copy, k0);
	if (evict && st == TS_OK)
		b->p->async[b->p->n_async - 1].done = &x->done;
	else if (!evict)
		*prefetch_pair(b, v) = st == TS_OK ? b->p->n_async - 1 : -1;
	return st;
}

/* Whether XLA may write v, an output of a kernel that more than one
 * kernel reads or the program returns (b->shared), into VMEM for its
 * first readers and copy it to HBM for the others and the result: an
 * eviction candidate (above); placement checks the rest. */
static bool evictable(const struct build *b, const struct ir_instr *v)
{
	return b->shared[v->index] && sim_placeable(v);
}

/* The evictions of the outputs of kernels[k0 ..] (a group's kernel or
 * a collective, whose output XLA places in VMEM too: data/compiled's
 * all-gathers and all-reduces in S(1); not an async transfer), where the
 * build places values (b->evict). */
static enum ts_status add_evictions(struct build *b, int k0,
				    const struct site *s)
{
	int end = b->p->n_kernels;
	enum ts_status st = TS_OK;
	for (int i = k0; b->evict && st == TS_OK && i < end; i++) {
		const struct sim_kernel *k = &b->p->kernels[i];
		if (k->async_work || k->dma || k->kind == SIM_KERNEL_UNMODELLED)
			continue;
		const struct ir_instr *const *outs = k->outputs;
		int n_out = k->n_outputs; /* k moves as kernels are added */
		for (int o = 0; st == TS_OK && o < n_out; o++)
			if (evictable(b, outs[o]))
				st = add_copy(b, outs[o], true, s);
	}
	return st;
}

/* Closes the prefetches' pairs before a node that reads their
 * parameters (deps: what it reads). */
static void close_prefetch(struct build *b, const struct ir_instr *const *deps,
			   int nd)
{
	for (int q = 0; q < nd; q++) {
		int *pair = prefetch_pair(b, deps[q]);
		if (!pair || *pair < 0)
			continue;
		struct sim_async *a = &b->p->async[*pair];
		const struct copy_stand_in *x =
			(const void *)b->p->kernels[a->first].lowered;
		a->done = &x->done;
		a->n_between = b->p->n_kernels - a->between;
		*pair = -1;
	}
}

/* Emits node x of a grouped computation (sim_group_order): a group's
 * kernel, or a loop's or call's kernels; its async pairs tracked from
 * pair `open` on. */
static enum ts_status emit_node(struct build *b, const struct grouping *g,
				int x, int open, const struct ir_instr **buf,
				const struct site *s, bool async_start)
{
	const struct ir_computation *c = g->c;
	enum ts_status st = TS_OK;
	int k0 = b->p->n_kernels;
	if (x >= g->n) {
		const struct ir_instr *root = c->instrs[g->g_root[x - g->n]];
		close_prefetch(b, buf, sim_group_inputs(g, x - g->n, buf));
		st = emit_group(b, g, x - g->n, buf, s);
		bool async = async_start; /* an async start or done: no
					     eviction */
		if (st == TS_OK && async_start && b->p->n_kernels > k0)
			st = open_async(b, root, k0);
		else if (st == TS_OK)
			async = track_async(b, root, k0, open, &st);
		if (st == TS_OK && !async)
			st = add_evictions(b, k0, s);
		return st;
	}
	const struct ir_instr *in = c->instrs[x];
	if (prefetch_pair(b, in))
		return add_copy(b, in, false, s);
	if (!g->live[x]) /* as fuse writes it: dead ones are not */
		return TS_OK;
	close_prefetch(b, (const struct ir_instr *const *)in->operands,
		       in->n_operands);
	enum sim_kernel_kind kind;
	/* an element of a collective's tuple (a combined all-reduce's,
	 * sim/rewrite.c) is a buffer of its own, evicted where it is named,
	 * as fuse writes its copy after its get-tuple-element */
	const struct ir_instr *t =
		in->op == IR_OP_GET_TUPLE_ELEMENT && in->n_operands == 1
			? in->operands[0]
			: NULL;
	if (t && sim_collective_tuple(t) && b->evict && evictable(b, in))
		st = add_copy(b, in, true, s);
	if (st == TS_OK && sim_fuse_class(g, in) == FC_CONTROL)
		st = walk_control(b, in, sim_top_role(in, &kind), s);
	if (st == TS_OK) /* an async done, outside groups */
		track_async(b, in, k0, open, &st);
	return st;
}

/* Closes the pair from `open` on that async collective `in` started. */
static void close_async(struct sim_program *p, const struct ir_instr *in,
			int open)
{
	for (int a = open; a < p->n_async; a++)
		if (p->async[a].start == in && !p->async[a].done) {
			p->async[a].done = in;
			p->async[a].n_between = p->n_kernels - p->async[a].between;
		}
}

/* Grouped computation g's order with its async collectives
 * (sim_async_collective: all-reduces of build's async_bytes, marked
 * all-gathers) as XLA's scheduler places them: in the first build, the
 * node costs to note (*nc: none when it has no such collective or was
 * noted already: -1); in the second, its schedule (made here the first time
 * from the first build's costs, kept in the program for tpusim fuse),
 * order sorted into it (*done: the schedule's, NULL when none). */
static enum ts_status schedule_of(struct build *b, const struct grouping *g,
				  const int *node, int *order, int *n_order,
				  int *nc, const int **done)
{
	struct sim_program *p = b->p;
	const struct ir_computation *c = g->c;
	struct node_costs *have = NULL;
	for (int i = 0; i < b->n_costs; i++)
		if (b->costs[i].c == c)
			have = &b->costs[i];
	if (b->record) {
		bool any = false;
		for (int q = 0; !any && q < *n_order; q++)
			any = sim_schedule_async_node(g, order[q], b->async_bytes);
		if (!any || have)
			return TS_OK;
		size_t nn = (size_t)g->n + (size_t)g->n_groups + 1;
		struct node_costs *grown = ts_realloc(
			b->costs, (size_t)(b->n_costs + 1) * sizeof *grown);
		if (!grown)
			return TS_ERR_NOMEM;
		b->costs = grown;
		have = &b->costs[b->n_costs++];
		*have = (struct node_costs){c, (int)nn,
					    ts_calloc(nn, sizeof *have->k0),
					    ts_calloc(nn, sizeof *have->k1),
					    ts_calloc(nn, sizeof *have->ns)};
		if (!have->k0 || !have->k1 || !have->ns)
			return TS_ERR_NOMEM;
		*nc = b->n_costs - 1;
		return TS_OK;
	}
	if (!have)
		return TS_OK;
	struct sim_schedule *s = NULL;
	for (int i = 0; i < p->n_schedules; i++)
		if (p->schedules[i].c == c)
			s = &p->schedules[i];
	if (!s) {
		struct sim_schedule made;
		int n = sim_schedule_make(g, node, order, *n_order, have->ns,
					  b->async_bytes, &made);
		if (n < 0)
			return TS_ERR_NOMEM;
		if (n == 0)
			return TS_OK;
		struct sim_schedule *grown = ts_realloc(
			p->schedules,
			(size_t)(p->n_schedules + 1) * sizeof *grown);
		if (!grown) {
			sim_schedule_free(&made);
			return TS_ERR_NOMEM;
		}
		p->schedules = grown;
		s = &p->schedules[p->n_schedules++];
		*s = made;
	}
	if ((*n_order = sim_schedule_order(g, s, order, *n_order)) < 0)
		return TS_ERR_NOMEM;
	*done = s->done;
	return TS_OK;
}

/* A pre-optimization computation: group, then emit kernels and recurse
 * into control flow in schedule order. */
static enum ts_status walk_grouped(struct build *b,
				   const struct ir_computation *c,
				   const struct site *s)
{
	struct grouping g;
	const struct ir_instr **buf = NULL;
	const struct sim_fusion_plan *plan = b->opts ? b->opts->fusion : NULL;
	enum ts_status st =
		sim_grouping_build(&g, c, sim_plan_force(plan, c), NULL);
	if (st == TS_OK) {
		buf = ts_malloc((size_t)(g.n > 0 ? g.n : 1) * sizeof *buf);
		if (!buf)
			st = TS_ERR_NOMEM;
	}
	/* instructions no group owns at their place, each group at its last
	 * member, whatever it reads first: the order tpusim fuse writes
	 * them in (sim_group_order) */
	int open = b->p->n_async, n_order = 0;
	size_t nn = (size_t)g.n + (size_t)g.n_groups + 1;
	int *node = st == TS_OK ? ts_malloc(nn * sizeof *node) : NULL;
	int *order = st == TS_OK ? ts_malloc(2 * nn * sizeof *order) : NULL;
	if (st == TS_OK && (!node || !order))
		st = TS_ERR_NOMEM;
	for (int k = 0; st == TS_OK && k < g.n; k++)
		node[k] = node_of(&g, k);
	if (st == TS_OK && (n_order = sim_group_order(&g, node, order)) < 0)
		st = TS_ERR_NOMEM;
	/* its async collectives placed as XLA's scheduler places them */
	int nc = -1; /* b->costs[nc]: the costs to note */
	const int *done = NULL; /* its schedule's dones (p->schedules
				   grows in a loop's body) */
	if (st == TS_OK && b->scheduled)
		st = schedule_of(b, &g, node, order, &n_order, &nc, &done);
	bool *shared = NULL;
	const bool *outer = b->shared; /* walking a loop's body, inside */
	if (st == TS_OK && b->evict &&
	    !(shared = ts_calloc((size_t)c->n_instrs + 1, sizeof *shared)))
		st = TS_ERR_NOMEM;
	for (int i = 0; shared && i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		/* the program's result, which its copy to HBM reads */
		bool result = c == b->m->entry && u == c->root &&
			      u->op == IR_OP_TUPLE;
		for (int j = 0; j < u->n_operands; j++) {
			const struct ir_instr *o = u->operands[j];
			int got[SIM_MAX_GRID];
			if (o->parent == c &&
			    (o->n_users >= 2 || g.grp[i] == G_MULTI ||
			     (result && !needs_relayout(o, got))))
				shared[o->index] = true;
		}
	}
	b->shared = shared;
	for (int q = 0; st == TS_OK && q < n_order; q++) {
		int x = order[q], k0 = b->p->n_kernels;
		if (x >= (int)nn) { /* an async collective's done */
			close_async(b->p, c->instrs[g.g_root[x - (int)nn - g.n]],
				    open);
			continue;
		}
		st = emit_node(b, &g, x, open, buf, s,
			       done && x >= g.n && done[g.g_root[x - g.n]] >= 0);
		if (nc >= 0) { /* (b->costs grows in a loop's body) */
			b->costs[nc].k0[x] = k0;
			b->costs[nc].k1[x] = b->p->n_kernels;
		}
	}
	b->shared = outer;
	ts_free(shared);
	if (st == TS_ERR_NOMEM)
		nomem(b);
	if (st == TS_OK) /* the prefetches' pairs among them, when unread */
		drop_open_pairs(b->p, open);
	for (int f = 0; st == TS_OK && f < b->p->n_prefetches; f++)
		if (b->p->prefetches[f]->parent == c)
			*prefetch_pair(b, b->p->prefetches[f]) = -1; /* done */
	ts_free(node);
	ts_free(order);
	ts_free(buf);
	sim_grouping_free(&g);
	return st;
}

static enum ts_status walk(struct build *b, const struct ir_computation *c,
			   struct site s)
{
	if (s.nesting > SIM_MAX_NESTING) {
		ts_diag_set(b->d, b->m->file, c->line, c->col,
			    "%s: computations nest deeper than %d "
			    "(recursive calls?)",
			    c->name, SIM_MAX_NESTING);
		return TS_ERR_UNSUPPORTED_OP;
	}
	if (b->pre_opt && !s.as_written)
		return walk_grouped(b, c, &s);
	struct sim_program *p = b->p;
	int open = p->n_async; /* pairs of this computation start here */
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *in = c->instrs[i];
		enum sim_kernel_kind kind;
		enum sim_top role = sim_top_role(in, &kind);
		enum ts_status st = TS_OK;
		int k0 = p->n_kernels;
		if (role == SIM_TOP_KERNEL)
			st = add_top_kernel(b, in, kind, &s);
		else if (role != SIM_TOP_FREE)
			st = walk_control(b, in, role, &s);
		if (st != TS_OK)
			return st;
		if (!track_async(b, in, k0, open, &st) && role == SIM_TOP_KERNEL &&
		    p->n_kernels > k0 && sim_side_collective(in) &&
		    open_chain(p, in)) {
			/* a fusion between a chain's start and done, in
			 * this computation or one it is called from */
			p->kernels[k0].chained = true;
		}
		if (st != TS_OK)
			return st;
	}
	drop_open_pairs(p, open);
	return TS_OK;
}

/* ---- relayouts at the program's result --------------------------------------
 *
 * An array written without tiles is given the compact order the TPU
 * runtime gives device buffers (hlo/ir_shape.c); but an op computes in the
 * order its operand arrives in when its emitter keeps that order:
 * reduce-window keeps its operand's physical order, an elementwise op the
 * order of its first operand of the same dims that is not a broadcast,
 * constant or iota (the order is read through fusions to their fused root,
 * and back through at most 64 such ops). When the program's result (the
 * entry root, or an element of a root tuple, once however often it is
 * listed) is such a value and the compact order of its shape differs,
 * XLA's layout assignment puts a copy to the result's layout after it.
 * Here that copy is a kernel of its own (kind copy, named
 * "<result>.relayout"), reading the value in the order it was computed in
 * (T(8,128) tiles) and writing the compact order; the plan costs its lane
 * move on the XLU (sim_relayout_cycles, plan_vpu.c). Source: tpuv4-ops
 * pooling, where this rule picks out exactly the 242 of 585 kernels whose
 * profile has a copy event, and none of the other 343 (docs/MODEL.md
 * "Relayouts"). Assumes only those two kinds of op keep their operand's
 * order (other ops choose their own; no data says otherwise) and that only
 * the entry result is constrained: values inside the program are taken in
 * the compact order. Known wrong: where an elementwise op's operands
 * arrive in different orders XLA's choice is not known (the first is
 * taken); the kernels before the copy are costed writing the compact
 * order, not the computed one (its padding is not charged to them).
 */

/* A fusion whose fused computation is being read, and the one around it. */
struct call_chain {
	const struct ir_instr *call;
	const struct call_chain *up;
};

/* The major-to-minor order v's value is computed in (above). */
static void computed_order(const struct ir_instr *v,
			   const struct call_chain *ctx, int depth, int *order)
{
	const struct ir_shape *s = &v->shape;
	if (depth > 64 || s->type == IR_TYPE_TUPLE || s->layout.n_tiles > 0) {
		ir_shape_major_to_minor(s, order);
		return;
	}
	int64_t pn = v->attrs.parameter_number;
	if (v->op == IR_OP_PARAMETER && ctx && pn >= 0 &&
	    pn < ctx->call->n_operands &&
	    ctx->call->operands[pn]->shape.rank == s->rank) {
		computed_order(ctx->call->operands[pn], ctx->up, depth + 1,
			       order);
		return;
	}
	if (v->op == IR_OP_FUSION && v->n_called > 0 && v->called[0] &&
	    v->called[0]->root && v->called[0]->root->shape.rank == s->rank) {
		struct call_chain in = {v, ctx};
		computed_order(v->called[0]->root, &in, depth + 1, order);
		return;
	}
	const struct ir_instr *from = NULL;
	enum ir_class cls = ir_op_class(v->op);
	if (v->op == IR_OP_REDUCE_WINDOW && v->n_operands > 0) {
		from = v->operands[0];
	} else if (cls == IR_CLASS_ELEMENTWISE ||
		   cls == IR_CLASS_TRANSCENDENTAL) {
		for (int j = 0; j < v->n_operands && !from; j++) {
			const struct ir_instr *o = v->operands[j];
			if (o->op != IR_OP_BROADCAST && o->op != IR_OP_CONSTANT &&
			    o->op != IR_OP_IOTA && ir_shape_equal_dims(&o->shape, s))
				from = o;
		}
	}
	if (from && from->shape.type != IR_TYPE_TUPLE &&
	    from->shape.rank == s->rank) {
		computed_order(from, ctx, depth + 1, order);
		return;
	}
	ir_shape_major_to_minor(s, order);
}

/* Whether orders a and b of shape s differ, dims of one element aside
 * (both list the same dims, so they run out together). */
static bool orders_differ(const struct ir_shape *s, const int *a,
			  const int *b)
{
	for (int i = 0, j = 0;; i++, j++) {
		while (i < s->rank && s->dims[a[i]] == 1)
			i++;
		while (j < s->rank && s->dims[b[j]] == 1)
			j++;
		if (i == s->rank || j == s->rank)
			return false;
		if (a[i] != b[j])
			return true;
	}
}

/* Whether result value v is computed in another order than its layout's
 * (the order it was computed in, into got[]): a relayout (above). */
static bool needs_relayout(const struct ir_instr *v, int *got)
{
	const struct ir_shape *s = &v->shape;
	if (s->type == IR_TYPE_TUPLE || s->rank < 2 || s->rank > SIM_MAX_GRID ||
	    s->layout.n_tiles > 0 || ir_shape_padded_bytes(s) <= 0)
		return false;
	int want[SIM_MAX_GRID];
	ir_shape_major_to_minor(s, want);
	computed_order(v, NULL, 0, got);
	return orders_differ(s, got, want);
}

/* The stand-in of one relayout (one allocation, freed through op). */
struct relayout_stand_in {
	struct ir_instr op;  /* the copy */
	struct ir_instr src; /* the value, in the order it was computed in */
	struct ir_instr *ops[1];
	int minor_to_major[SIM_MAX_GRID];
	struct ir_tile tile;
	char name[];
};

/* Adds the relayout of result value v when it needs one (above). */
static enum ts_status add_relayout(struct build *b, const struct ir_instr *v)
{
	const struct ir_shape *s = &v->shape;
	int got[SIM_MAX_GRID];
	if (!needs_relayout(v, got))
		return TS_OK;
	static const char suffix[] = ".relayout";
	size_t n = strlen(v->name);
	struct relayout_stand_in *r =
		ts_calloc(1, sizeof *r + n + sizeof suffix);
	if (!r)
		return nomem(b);
	memcpy(r->name, v->name, n);
	memcpy(r->name + n, suffix, sizeof suffix);
	r->src = value_stand_in(v, s);
	for (int i = 0; i < s->rank; i++)
		r->minor_to_major[i] = got[s->rank - 1 - i];
	r->tile = (struct ir_tile){2, {8, 128}};
	r->src.shape.layout.present = true;
	r->src.shape.layout.minor_to_major = r->minor_to_major;
	r->src.shape.layout.n_tiles = 1;
	r->src.shape.layout.tiles = &r->tile;
	r->src.shape.memo = (struct ir_shape_memo){0};
	r->ops[0] = &r->src;
	r->op = r->src;
	r->op.op = IR_OP_COPY;
	r->op.name = r->name;
	r->op.shape = *s;
	r->op.n_operands = 1;
	r->op.operands = r->ops;
	r->op.n_users = 0;
	r->op.index = v->index; /* in v's place (plan.c member_pos) */
	struct sim_kernel *k = push_copy_kernel(b, &r->op, &r->src);
	if (!k)
		return nomem(b);
	k->relayout = true;
	struct site site = {.mult = 1.0};
	return finish_kernel(b, k, &r->op, &site, NULL);
}

/* The relayouts of the entry's result values. */
static enum ts_status add_relayouts(struct build *b)
{
	const struct ir_instr *root = b->m->entry->root;
	if (!root)
		return TS_OK;
	if (root->op != IR_OP_TUPLE)
		return add_relayout(b, root);
	for (int i = 0; i < root->n_operands; i++) {
		if (sim_operand_repeats(root, i))
			continue;
		enum ts_status st = add_relayout(b, root->operands[i]);
		if (st != TS_OK)
			return st;
	}
	return TS_OK;
}

/* ---- public ------------------------------------------------------------------ */

bool sim_module_unfused(const struct ir_module *m)
{
	if (m->is_scheduled) /* XLA schedules what it has optimized */
		return false;
	for (int ci = 0; ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[ci]->instrs[i];
			if (in->op == IR_OP_FUSION &&
			    in->attrs.fusion_kind != IR_FUSION_CUSTOM)
				return false;
		}
	return true;
}

void sim_kernel_release(struct sim_kernel *k)
{
	ts_free(k->members);
	ts_free(k->inputs);
	ts_free(k->outputs);
	ts_free(k->lowered);
	ts_free(k->vmem);
	memset(k, 0, sizeof *k);
}

enum ts_status sim_group_kernel(const struct ir_module *m,
				const struct grouping *g, int id,
				struct sim_member_memo *memo,
				struct sim_kernel *k, bool *none,
				struct ts_diag *d)
{
	struct sim_program p = {.module = m};
	struct build b = {.m = m, .p = &p, .pre_opt = true, .memo = memo,
			  .d = d};
	struct site s = {.mult = 1.0};
	const struct ir_instr **buf =
		ts_malloc((size_t)(g->n > 0 ? g->n : 1) * sizeof *buf);
	enum ts_status st = buf ? emit_group(&b, g, id, buf, &s) : nomem(&b);
	ts_free(buf);
	*none = st == TS_OK && p.n_kernels == 0;
	if (st == TS_OK && p.n_kernels == 1) {
		*k = p.kernels[0];
		p.n_kernels = 0;
	}
	sim_program_free(&p);
	return st;
}

void sim_program_free(struct sim_program *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_schedules; i++)
		sim_schedule_free(&p->schedules[i]);
	ts_free(p->schedules);
	for (int i = 0; i < p->n_kernels; i++)
		sim_kernel_release(&p->kernels[i]);
	ts_free(p->kernels);
	ts_free(p->loops);
	ts_free(p->async);
	ts_free(p->prefetches);
	memset(p, 0, sizeof *p);
}

/* The program of b's module, into b->p (freed on failure). */
static enum ts_status build_program(struct build *b0)
{
	struct build b = *b0;
	const struct ir_module *m = b.m;
	const struct sim_program_opts *opts = b.opts;
	struct sim_program *p = b.p;
	memset(p, 0, sizeof *p);
	p->module = m;
	p->fused_xla = b.pre_opt;
	if (b.pre_opt) {
		const struct sim_fusion_plan *plan = opts ? opts->fusion : NULL;
		p->fusion_policy = plan ? plan->policy : "xla";
		p->fusion_flips = plan ? plan->n_flips : 0;
		double room = opts ? opts->vmem_room : 0;
		b.evict = room > 0;
		p->prefetched = sim_prefetch_candidate(m, room);
		p->n_prefetches = sim_prefetches(m, room, p->prefetched,
						      &p->prefetches);
	}
	enum ts_status st = p->n_prefetches >= 0 ? TS_OK : nomem(&b);
	if (st == TS_OK && p->n_prefetches > 0 &&
	    !(b.pair = ts_calloc((size_t)m->n_comps + 1, sizeof *b.pair)))
		st = nomem(&b);
	for (int f = 0; b.pair && st == TS_OK && f < p->n_prefetches; f++) {
		const struct ir_instr *v = p->prefetches[f];
		int **row = &b.pair[v->parent->index];
		int n = v->parent->n_instrs;
		if (!*row && (*row = ts_malloc((size_t)n * sizeof **row + 1)))
			for (int i = 0; i < n; i++)
				(*row)[i] = -2;
		if (*row)
			(*row)[v->index] = -1;
		else
			st = nomem(&b);
	}
	struct site s = {.mult = 1.0};
	if (st == TS_OK)
		st = walk(&b, m->entry, s);
	for (int ci = 0; b.pair && ci < m->n_comps; ci++)
		ts_free(b.pair[ci]);
	ts_free(b.pair);
	ts_u64map_free(&b.names);
	if (st == TS_OK)
		st = add_relayouts(&b);
	b0->n_costs = b.n_costs;
	b0->costs = b.costs;
	if (st != TS_OK) {
		sim_program_free(p);
		return st;
	}
	for (int i = 0; i < p->n_kernels; i++)
		if (p->kernels[i].kind == SIM_KERNEL_UNMODELLED)
			p->n_unmodelled++;
	/* the program's start goes in its first kernel on the TensorCore:
	 * top level, not async work, not one XLA runs nothing for */
	for (int i = 0; i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		if (k->loop_depth == 0 && k->multiplicity == 1.0 &&
		    k->kind != SIM_KERNEL_UNMODELLED && !k->async_work &&
		    !k->dma && !sim_kernel_free(k)) {
			k->starts_program = true;
			break;
		}
	}
	return TS_OK;
}

/* Whether kernel k is a collective XLA runs asynchronously (an
 * all-reduce of at least min_bytes, a marked all-gather) inside a node
 * of computation c (a loop's or call's body): async in the second build,
 * no time of the TensorCore's there. */
static bool async_inside(const struct sim_kernel *k,
			 const struct ir_computation *c, double min_bytes)
{
	return k->instr && k->instr->parent != c &&
	       sim_async_collective(k->instr, min_bytes);
}

enum ts_status sim_program_build(const struct ir_module *m,
				 const struct sim_program_opts *opts,
				 struct sim_program *p, struct ts_diag *d)
{
	memset(p, 0, sizeof *p);
	p->module = m;
	if (!m || !m->entry) {
		ts_diag_set(d, m ? m->file : NULL, 0, 0,
			    "module has no entry computation");
		return TS_ERR_MISUSE;
	}
	struct build b = {.m = m, .opts = opts, .p = p, .d = d};
	/* A module with any fusion instruction was compiled: its top-level
	 * ops ran as written. One without is grouped as XLA would fuse it
	 * (per module, not per computation: a compiled module's loop
	 * condition has no fusion either, yet ran as written). */
	b.pre_opt = sim_module_unfused(m);
	/* collectives XLA runs asynchronously on the schedule's spec are
	 * placed by the time of the kernels around them (sim/schedule.c):
	 * a first build, its kernels' rooflines on that spec, then the
	 * program in that schedule */
	const struct hw_spec *hw = opts ? opts->schedule_hw : NULL;
	if (b.pre_opt && hw &&
	    sim_async_collectives(m, hw->xla_async_all_reduce_bytes,
				  IR_OP_INVALID) > 0) {
		b.async_bytes = hw->xla_async_all_reduce_bytes;
		b.scheduled = true;
	}
	b.record = b.scheduled;
	enum ts_status st = build_program(&b);
	if (st == TS_OK && b.record) {
		for (int i = 0; st == TS_OK && i < b.n_costs; i++) {
			struct node_costs *nc = &b.costs[i];
			for (int x = 0; st == TS_OK && x < nc->nn; x++)
				for (int k = nc->k0[x]; st == TS_OK && k < nc->k1[x]; k++) {
					struct sim_estimate r;
					if (p->kernels[k].async_work ||
					    async_inside(&p->kernels[k], nc->c,
							 b.async_bytes))
						continue;
					st = sim_kernel_roofline(&p->kernels[k], hw, &r, d);
					nc->ns[x] += r.time_ns * p->kernels[k].multiplicity;
				}
		}
		sim_program_free(p);
		b.record = false;
		if (st == TS_OK)
			st = build_program(&b);
	}
	for (int i = 0; i < b.n_costs; i++) {
		ts_free(b.costs[i].k0);
		ts_free(b.costs[i].k1);
		ts_free(b.costs[i].ns);
	}
	ts_free(b.costs);
	return st;
}
