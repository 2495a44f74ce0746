/*
 * grouping.c: kernels of a pre-optimization module.
 *
 * A module without fusion instructions is what JAX/TF hand to XLA; the
 * TPU ran what XLA's fusion passes made of it. We mimic them by deciding,
 * consumers first (reverse topological order, as XLA's InstructionFusion
 * does), whether each instruction P is computed inside the kernels of its
 * users or is a kernel root of its own. The predicate (sim_grouping_decide):
 *
 *  - constants and constant-derived values (folded by XLA, or splatted
 *    broadcasts of scalars) are never kernels: members of every kernel
 *    that uses them;
 *  - cheap loop ops (simple elementwise, convert, broadcast, reshape,
 *    transpose, slice, pad, concatenate, reverse, dynamic-slice, iota,
 *    divide by a constant, which XLA turns into a multiply, or by a
 *    broadcast, a multiply by a per-row reciprocal) fuse into all
 *    their users when every user accepts them, and are RECOMPUTED in each
 *    user's kernel (XLA duplicates cheap producers);
 *  - no fusion computes a broadcast's operand: a broadcast that grows its
 *    operand takes in only bitcasts (a reshape, a broadcast of dims of 1)
 *    and reads the value beyond them from HBM (data/compiled: a norm's
 *    per-row scale is a small kernel of its own; the measured tpuv4-ops
 *    layer norms run five kernels, two of them the per-row mean and
 *    rsqrt at 365-381 ns, details.csv); no fusion computes a pad's
 *    operand either (data/compiled: the index that take_along_axis builds
 *    by padding and adding is a fusion of its own, its producer another,
 *    in every decoder on every generation; no XLA fusion there computes
 *    a pad's operand);
 *  - a transcendental (one EUP function: exp, log, tanh, rsqrt, ...; and a
 *    divide, whose reciprocal is one: eup_op) whose
 *    users all accept it without reuse is RECOMPUTED in each user's kernel
 *    like a cheap op where that reads no more bytes than its value
 *    (recompute_pays; data/compiled: the SwiGLU's sigmoid,
 *    1 / (1 + exp(-x)), is recomputed in each of its readers' kernels,
 *    five on v5e/decoder_s): XLA's compiled v3 softmax-cross-entropy
 *    kernels (tpugraphs-tile-v3 fusion.206 and fusion.207) each evaluate
 *    exponential(subtract(x, broadcast(max))) from x, the sum reduce and
 *    the divide consumer alike, rather than one writing exp for the other;
 *    the attention's exp(scores - row max) on v4 and later, which reads
 *    two arrays of its size, is computed once and written (data/compiled
 *    v5e/decoder_s: fusion.373 writes it, fusion.374 reads it), by a
 *    kernel of its own that the merge passes may join to a reader;
 *  - other expensive ops (composite, map; a divide where recomputing
 *    it does not pay) are never recomputed:
 *    with users in several kernels, the op joins the earliest user kernel
 *    that accepts it and that kernel also writes it out (multi-output
 *    fusion); the others read it from HBM (MATERIALISED);
 *  - a reduce-window over whole dims that broadcasts the result back (the
 *    attention's row max: sim_window_whole_dims; what sim_module_rewrite
 *    makes of a row max broadcast back for v4 and later) is an expensive
 *    loop op, computed once in the kernel of its users (data/compiled:
 *    the decoders' softmax fusions hold it with its subtract and exp);
 *  - reduce, reduce-window, dot and convolution are kernel cores: each
 *    starts a kernel, except that a dot or convolution whose users are
 *    elementwise-like, do not grow the element count and are all in one
 *    kernel becomes part of that kernel (output fusion), at most one core per
 *    kernel; a reduce or reduce-window takes no epilogue (data/compiled:
 *    a reduce fusion's root is the reduce or a tuple of outputs; tpuv4-ops
 *    average pooling, reduce-window then divide: every profile shows the
 *    reduce-window kernel and a separate broadcast_multiply_fusion). With
 *    the broadcast rule above this makes the measured layer norms the
 *    kernels their profiles show; the model costs their small per-row
 *    kernels at about 520 ns against 365-381 ns measured (docs/MODEL.md
 *    "Small kernels");
 *  - a dot's epilogue (the loop ops that are, one after another, the only
 *    user of a dot) stays with the dot: not recomputed in several user
 *    kernels, not fused into another dot's operand (XLA's TPU output
 *    fusion, data/compiled), unless it widens the value (a bf16 result
 *    converted to f32: the dot's kernel writes the narrower value, the
 *    convert is recomputed where it is read); and where its users' kernel
 *    holds another dot, a narrowing epilogue (f32 to bf16) roots its own
 *    dot's kernel instead of joining them (the compiled residual adds:
 *    each projection's kernel adds and writes bf16, the next converts it
 *    back);
 *  - a bitcast (one buffer under another shape: XLA's modules after
 *    layout assignment have one where JAX wrote a reshape) is held by
 *    every kernel that reads it when each takes it, so that a producer
 *    fuses through it as through a reshape (data/compiled: XLA's
 *    fusions hold bitcasts; the decoders' convolution fusions slice
 *    their layer out of the scan's stacked buffers through one); a
 *    bitcast a kernel does not take reads its operand from memory;
 *  - users accept: loop ops accept any fusible producer, and a bitcast
 *    passes it on to the kernels that hold it; a reduce or
 *    reduce-window accepts loop ops (a loop fusion over the input); a dot
 *    or convolution accepts loop ops into its operands (the TPU's nested
 *    operand fusions, data/compiled), but a cheap producer that also has
 *    users in other kernels is recomputed there only where that reads no
 *    more bytes than its value, or, read by dots alone that stream it,
 *    where that moves fewer bytes than writing it once and reading it in
 *    each (recompute_pays; never a copy):
 *    else it joins the first user kernel and is written out
 *    (multi-output), but a dynamic-slice that also feeds a dot's operand
 *    is a kernel of its own (XLA's dynamic-slice_bitcast_fusion), a
 *    value that two slices of one kernel read is computed apart
 *    (sliced_twice), and so are a copy a gather's or scatter's indices
 *    come from (indexes_in), a dynamic-slice that a bitcast regroups
 *    into a dot's operand (regrouped_into_dot) and a slice read by
 *    several kernels that reads whole tiles for a small part of them
 *    (reads_whole_tiles; such slices of the same inputs are then one
 *    kernel, merge_slices); a copy that moves the lane dim is a kernel
 *    alone (copy_order), one that permutes the layout accepts nothing,
 *    one that changes only the tiles no such copy (tiling_copy);
 *    dynamic-update-slice accepts loop ops into its update operand (and
 *    a tiling copy into the buffer it updates), gather into its
 *    indices, scatter into its indices and updates; a gather joins its one transpose or reshape
 *    user, and its kernel ends at the first reshape after its transposes
 *    (gather_tail) unless a scatter takes them as its updates, a reshape
 *    of that value that moves data being a kernel alone
 *    (gather_reshaped); all other ops (sort, collectives,
 *    custom-call, tuple, while, ...) accept nothing: their operands are
 *    materialised, except that the custom-call starting or ending one of
 *    XLA's async collective chains (a compiled module unfused) takes the
 *    clone of the collective it reads, and a clone nothing reads (the
 *    chain's continuation) joins the kernel of the dot or convolution
 *    before it (place_continuations).
 * The rules and their evidence are said where each is applied; what XLA's
 * TPU compiler does is read off data/compiled (libtpu 0.0.42: `tpusim fuse
 * --agreement`, docs/COMPILED.md), its source not being public.
 * Afterwards, reduce-rooted kernels with the same reduce input shape and
 * the same inputs are merged (sibling multi-output fusion; e.g. two
 * jnp.mean of one array), then a reduce-rooted kernel that reduces a dot's
 * or convolution's result element for element joins that kernel (output
 * multi-output fusion: merge_outputs), kernels rooted at
 * dynamic-update-slices that write windows of one size at the same
 * offsets merge (merge_updates: a scan saving a layer's activations into
 * their stacks; not one written from a relayout copy), a loop kernel
 * joins the loop kernel of its shape that reads its value (merge_loops:
 * a batch-norm's per-channel statistics),
 * a dot's kernel joins the kernel those merges made of all its users
 * (merge_epilogues: an up-projection with the stacks saving its GELU),
 * and reduce-rooted kernels of one operand shape that read an array whole
 * merge (merge_shared: an RMS norm's two gradients). Dead pure
 * instructions are dropped (XLA DCE).
 * Each computation is grouped on its own: XLA inlines call bodies before
 * fusing, so producers and consumers across a call do not fuse here
 * (known wrong, rare in the measured modules).
 * Expected shapes: relu, matmul -> 1 kernel; softmax -> 3 (max reduce; exp
 * + sum reduce; exp recomputed + divide: x read 3 times, exp evaluated
 * twice), 2 after a dot (the max joins the dot's kernel); layer norm -> 5
 * (mean; the per-row mean; variance; the per-row rsqrt; normalise).
 */
#include "kernels_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static bool is_contraction(enum ir_op op)
{
	return ir_op_class(op) == IR_CLASS_CONTRACTION;
}

/* Whether op is one function of the EUP, the TPU's transcendental unit:
 * a transcendental, or a divide (x times its divisor's reciprocal; one
 * by constants or a broadcast is a cheap loop op, fuse_class_of). */
static bool eup_op(enum ir_op op)
{
	return sim_op_vpu_class(op) == HW_VPU_TRANSCEND || op == IR_OP_DIVIDE;
}

/* How a copy orders the dims against its operand: the same (its tiles or
 * memory space change only), the major dims otherwise, or the lane dim
 * moved. A copy that permutes (permuting_copy) is a transpose in memory.
 * XLA's TPU compiler runs it on its operand in HBM: in data/compiled
 * every such copy reads a parameter of its fusion or is a kernel of its
 * own (layout assignment inserts them, after fusion or as operand fusions
 * of their own); a copy that keeps the order and changes only the tiling
 * (v7's T(16,128) to T(8,128)) does take producers (a convolution, an
 * add) and stays fusible. LANE_MOVES counts a dim of one element put on
 * the lanes too, where plan_vpu.c's moves_lanes (the XLU's work) does
 * not: v5e/moe_s's copies of such dims are kernels alone in XLA's module
 * (2 fusions reproduced exactly fewer with moves_lanes' test). */
enum copy_order { SAME_ORDER, MAJOR_ORDER, LANE_MOVES };
static enum copy_order copy_order(const struct ir_instr *in)
{
	if (in->op != IR_OP_COPY || in->n_operands != 1)
		return SAME_ORDER;
	const struct ir_shape *a = &in->operands[0]->shape, *r = &in->shape;
	if (a->rank != r->rank || r->rank < 1 || r->rank > 64 ||
	    r->type == IR_TYPE_TUPLE)
		return SAME_ORDER;
	int oa[64], orr[64];
	ir_shape_major_to_minor(a, oa);
	ir_shape_major_to_minor(r, orr);
	if (oa[r->rank - 1] != orr[r->rank - 1])
		return LANE_MOVES;
	return memcmp(oa, orr, (size_t)r->rank * sizeof *oa) ? MAJOR_ORDER
							       : SAME_ORDER;
}

static bool permuting_copy(const struct ir_instr *in)
{
	return copy_order(in) != SAME_ORDER;
}

/* The fusion class of in, as sim_fuse_class gives it (worked out once per
 * grouping of its computation, sim_grouping_init). */
static enum fuse_class fuse_class_of(const struct grouping *g,
				     const struct ir_instr *in)
{
	switch (in->op) {
	case IR_OP_DIVIDE:
	case IR_OP_REMAINDER: {
		/* by a constant, XLA multiplies by its reciprocal; a divide
		 * by a broadcast (a softmax's per-row sum) costs a multiply
		 * an element, the reciprocal once per row (plan_vpu.c
		 * sim_instr_vpu_cycles) */
		const struct ir_instr *d =
			in->n_operands == 2 ? in->operands[1] : NULL;
		return d && d->parent == g->c &&
				       (g->cd[d->index] ||
					(in->op == IR_OP_DIVIDE &&
					 d->op == IR_OP_BROADCAST))
			       ? FC_CHEAP
			       : FC_EXPENSIVE;
	}
	case IR_OP_MAP:
		return FC_EXPENSIVE;
	case IR_OP_RNG:
	case IR_OP_RNG_BIT_GENERATOR:
		return FC_ROOT;
	case IR_OP_BROADCAST:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_SLICE:
	case IR_OP_PAD:
	case IR_OP_CONCATENATE:
	case IR_OP_REVERSE:
	case IR_OP_DYNAMIC_SLICE:
	case IR_OP_IOTA:
		return FC_CHEAP;
	case IR_OP_COPY:
		/* one that moves the lane dim (a transpose across lanes, on
		 * the XLU) is a kernel alone: in data/compiled all 133 such
		 * copies are top-level copies; of the 115 that permute the
		 * other dims only, 48 are in a fusion with a user; one into a
		 * donated buffer (sim/rewrite.c) XLA inserts after it fuses */
		return copy_order(in) == LANE_MOVES ||
				       (in->flags & IR_INSTR_MADE)
			       ? FC_ROOT
			       : FC_CHEAP;
	case IR_OP_REDUCE_WINDOW: {
		bool whole[64];
		if (in->n_operands > 0 && in->operands[0]->shape.rank <= 64 &&
		    sim_window_whole_dims(in, whole))
			return FC_EXPENSIVE;
		return FC_CORE;
	}
	case IR_OP_REDUCE:
		return FC_CORE;
	default:
		break;
	}
	if (is_contraction(in->op))
		return FC_CORE;
	enum sim_kernel_kind kind;
	switch (sim_top_role(in, &kind)) {
	case SIM_TOP_FREE:
		return FC_FREE;
	case SIM_TOP_KERNEL:
		if (kind == SIM_KERNEL_ELEMENTWISE)
			return ir_op_class(in->op) == IR_CLASS_ELEMENTWISE &&
					       sim_op_vpu_class(in->op) ==
						       HW_VPU_SIMPLE
				       ? FC_CHEAP
				       : FC_EXPENSIVE;
		return FC_ROOT;
	default:
		return FC_CONTROL;
	}
}

enum fuse_class sim_fuse_class(const struct grouping *g,
			       const struct ir_instr *in)
{
	if (g->fc && in->parent == g->c)
		return (enum fuse_class)g->fc[in->index];
	return fuse_class_of(g, in);
}

/* sim_fuse_class of c's instruction i, once g->fc is worked out (the
 * decisions' inner loops: no call) */
static inline enum fuse_class class_at(const struct grouping *g, int i)
{
	return (enum fuse_class)g->fc[i];
}

bool sim_fuse_alone(const struct ir_instr *in)
{
	enum sim_kernel_kind kind;
	return in->op == IR_OP_CUSTOM_CALL || in->op == IR_OP_SORT ||
	       in->op == IR_OP_FUSION || /* one of XLA's kCustom ones */
	       sim_async_start(in) ||
	       (sim_top_role(in, &kind) == SIM_TOP_KERNEL &&
		(kind == SIM_KERNEL_UNMODELLED ||
		 kind == SIM_KERNEL_COLLECTIVE));
}

/* Ops that only convert or rearrange elements: a dot's one user of this
 * kind takes it as its output fusion. */
static bool is_format_op(enum ir_op op)
{
	switch (op) {
	case IR_OP_CONVERT:
	case IR_OP_BROADCAST:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_COPY:
		return true;
	default:
		return false;
	}
}

/* What the fusion rules ask of an instruction, kept per instruction
 * (struct grouping's opk) so that the decisions' inner loops read a byte
 * instead of the instruction. */
enum { OPK_CONTRACTION = 1, OPK_REDUCE = 2, OPK_ALONE = 4 /* sim_fuse_alone */,
       OPK_NO_PRODUCER = 8 /* permuting_copy */, OPK_GROWS = 16 /* size_kind */,
       OPK_EPILOGUE = 32 /* a dot's epilogue, grouping_base */,
       OPK_SLICED = 64 /* sliced_twice */,
       OPK_CONTINUATION = 128 /* a chain's continuation: mark_continuations */ };

static unsigned char op_kind(enum ir_op op)
{
	return (unsigned char)((is_contraction(op) ? OPK_CONTRACTION : 0) |
			       (op == IR_OP_REDUCE ? OPK_REDUCE : 0));
}

/* OPK_GROWS: a broadcast or pad that makes more elements than it reads */
static unsigned char size_kind(const struct ir_instr *in)
{
	return (in->op == IR_OP_BROADCAST || in->op == IR_OP_PAD) &&
			       in->n_operands >= 1 &&
			       in->shape.type != IR_TYPE_TUPLE &&
			       ir_shape_elems(&in->shape) >
				       ir_shape_elems(&in->operands[0]->shape)
		       ? OPK_GROWS
		       : 0;
}

/* Is u a broadcast that grows its operand, or fused into one's operand
 * (through bitcasts)? */
static bool broadcasts(const struct grouping *g, int u)
{
	return g->bcast[u] || ((g->opk[u] & OPK_GROWS) &&
			       g->c->instrs[u]->op == IR_OP_BROADCAST);
}

/* A reshape, or a broadcast that adds only dims of 1: the same elements in
 * another shape, which XLA makes a bitcast (no kernel, no work). */
static bool bitcast_like(const struct ir_instr *in)
{
	return (in->op == IR_OP_RESHAPE || in->op == IR_OP_BROADCAST) &&
	       in->n_operands == 1 && in->shape.type != IR_TYPE_TUPLE &&
	       ir_shape_elems(&in->shape) ==
		       ir_shape_elems(&in->operands[0]->shape);
}

/* A copy that keeps the dims' order and changes only the tiles (or the
 * memory space): v7's bf16 T(16,128) in HBM to T(8,128) in a kernel and
 * back. XLA's TPU compiler ends a kernel with the copy to the stored form
 * and starts the next with the copy back (data/compiled v7: the
 * projections' kOutput fusions end in copy.325, T(8,128) to T(16,128);
 * their readers start with copy.326 back), so one such copy never fuses
 * into another; a dynamic-update-slice takes one into the buffer it
 * updates in place (a copy_fusion aliased to its output). */
static bool tiling_copy(const struct ir_instr *in)
{
	return in->op == IR_OP_COPY && in->n_operands == 1 &&
	       !permuting_copy(in) &&
	       !sim_same_tiles(&in->operands[0]->shape.layout, &in->shape.layout);
}

/* A free op that is its operand's buffer under another name: a bitcast,
 * or the custom-call that marks a gather's or scatter's indices as
 * bitpacked (GatherScatterIndicesBitpacked: sim/classify.c
 * free_custom_call), which XLA's gather fusions hold with the index
 * computation before it (data/compiled: every decoder's gather_fusion.1).
 * Not AssumeGatherIndicesInBound, whose operand XLA computes in a fusion
 * of its own (the decoders' broadcast_clamp_fusion). */
static bool same_buffer(const struct ir_instr *in)
{
	const char *t = in->attrs.custom_call_target;
	return in->op == IR_OP_BITCAST ||
	       (in->op == IR_OP_CUSTOM_CALL && t &&
		!strcmp(t, "GatherScatterIndicesBitpacked"));
}

/* The operand slot of a gather's or scatter's indices (gather: 1;
 * scatter of N arrays: N, after them), or -1 for other ops. */
static int index_slot(const struct grouping *g, int u)
{
	int n = g->ooff[u + 1] - g->ooff[u];
	switch (g->c->instrs[u]->op) {
	case IR_OP_GATHER:
		return 1;
	case IR_OP_SCATTER:
		return (n - 1) / 2;
	default:
		return -1;
	}
}

/*
 * Does user u accept loop-op producer p (one of its operands) in every
 * operand slot that reads it? Loop ops, reduces and reduce-windows take
 * any (a loop fusion over the input); so does a dot or convolution, into
 * its operands: XLA's TPU compiler nests a kLoop operand fusion under the
 * convolution of a kOutput fusion, and in data/compiled (libtpu 0.0.42,
 * all generations) those hold converts, multiplies, exp, divide, tanh,
 * selects, iotas and dynamic-slices, not only format ops (XLA's GPU
 * fusion keeps a dot's operands to bitcasts and converts: a TPU
 * difference). A pad takes none (above), a copy that permutes the layout
 * none (permuting_copy), a copy that changes the tiles no copy that does too
 * (tiling_copy). Of the ops that are kernels of their own,
 * dynamic-update-slice takes p as its update (slot 1) only (and a tiling
 * copy as the buffer it updates, slot 0), gather as
 * its indices (slot 1: the compiled gather_fusion kernels compute the
 * indices, never the table), scatter as its indices and updates (slots
 * N.. of its N operands, N indices, N updates; the compiled scatter
 * fusions, and XLA GPU's scatter fusion, which fuses into the updates and
 * indices but not the operand it updates in place); other ops take
 * nothing. Only the last rules look at the slots (a user with thousands
 * of operands, a concatenate, is asked once per producer).
 */
static bool user_accepts(const struct grouping *g, int u, int p)
{
	if (g->opk[u] & OPK_NO_PRODUCER)
		return false;
	if (g->c->instrs[u]->op == IR_OP_PAD)
		return false;
	if (broadcasts(g, u))
		return bitcast_like(g->c->instrs[p]);
	if (tiling_copy(g->c->instrs[u]) && tiling_copy(g->c->instrs[p]))
		return false;
	switch (class_at(g, u)) {
	case FC_FREE: /* a bitcast in its users' kernels passes it on */
		return same_buffer(g->c->instrs[u]);
	case FC_CHEAP:
	case FC_EXPENSIVE:
	case FC_CORE:
		return true;
	case FC_ROOT: {
		/* the slots [from, to] that take a producer */
		int n = g->ooff[u + 1] - g->ooff[u], from = 1, to = 1;
		switch (g->c->instrs[u]->op) {
		case IR_OP_DYNAMIC_UPDATE_SLICE:
			if (tiling_copy(g->c->instrs[p]))
				from = 0; /* the buffer it updates too */
			break;
		case IR_OP_GATHER:
			break;
		case IR_OP_SCATTER:
			from = index_slot(g, u);
			to = n - 1;
			break;
		default:
			return false;
		}
		for (int j = 0; j < n; j++)
			if (g->ops[g->ooff[u] + j] == p && (j < from || j > to))
				return false;
		return true;
	}
	default:
		return false;
	}
}

/* Most users sliced_twice and indexes_in look at. */
#define USER_WALK 16

/* Whether two or more slices read i's value, through bitcasts */
static bool sliced_twice(const struct grouping *g, int i)
{
	int stack[USER_WALK], top = 0, seen = 0, slices = 0;
	stack[top++] = i;
	while (top > 0) {
		int x = stack[--top];
		for (int k = g->uoff[x]; k < g->uoff[x + 1]; k++) {
			int u = g->users[k];
			if (!g->live[u])
				continue;
			if (++seen > USER_WALK)
				return false;
			const struct ir_instr *in = g->c->instrs[u];
			if (in->op == IR_OP_SLICE && ++slices == 2)
				return true;
			if (in->op == IR_OP_BITCAST && top < USER_WALK)
				stack[top++] = u;
		}
	}
	return false;
}

/* Does a gather or scatter of group id read i through ops of that group
 * as its indices (the chain from i to its index slot)? */
static bool indexes_in(const struct grouping *g, int i, int id)
{
	int stack[USER_WALK], top = 0, seen = 0;
	stack[top++] = i;
	while (top > 0) {
		int x = stack[--top];
		for (int k = g->uoff[x]; k < g->uoff[x + 1]; k++) {
			int u = g->users[k];
			if (!g->live[u] || g->grp[u] != id)
				continue;
			int slot = index_slot(g, u);
			if (slot >= 0 && slot < g->ooff[u + 1] - g->ooff[u] &&
			    g->ops[g->ooff[u] + slot] == x)
				return true;
			if (slot >= 0)
				continue; /* the table or the updates */
			if (++seen > USER_WALK || top == USER_WALK)
				return false;
			stack[top++] = u;
		}
	}
	return false;
}

/* Would computing a producer inside user u's kernel evaluate it more
 * than once per element (u broadcasts or pads it, or u itself sits on
 * such a path)? A dot reads an operand element once per output tile, a
 * dynamic-update-slice or concatenate writes its operands' elements once:
 * neither counts (the compiled modules fuse exp and divide into dot
 * operands and dynamic-update-slice updates). */
static bool reuses(const struct grouping *g, int u)
{
	return g->reuse[u] || (g->opk[u] & OPK_GROWS);
}

/* A new group rooted at i (holding a core op when core). */
int sim_grouping_new(struct grouping *g, int i, bool core)
{
	int id = g->n_groups++;
	g->grp[i] = id;
	g->g_root[id] = i;
	g->g_core_at[id] = core ? g->pos[i] : -1;
	g->g_rep[id] = id;
	return id;
}

/* Whether instruction u may be in a dot's output fusion: elementwise,
 * or one that converts or rearranges elements (no contraction), not a
 * kernel core. */
static bool epilogue_op(const struct grouping *g, int u)
{
	const struct ir_instr *x = g->c->instrs[u];
	enum ir_class uc = ir_op_class(x->op);
	return (uc == IR_CLASS_ELEMENTWISE || uc == IR_CLASS_TRANSCENDENTAL ||
		(is_format_op(x->op) && !is_contraction(x->op))) &&
	       class_at(g, u) != FC_CORE;
}

/* Whether every live user of dot r may be in its output fusion (an
 * epilogue op or a bitcast, taking it once, in a dot's operand only
 * where it is recomputed in several kernels). */
static bool epilogue_users(const struct grouping *g, int r)
{
	for (int k = g->uoff[r]; k < g->uoff[r + 1]; k++) {
		int u = g->users[k];
		if (g->live[u] &&
		    (!(epilogue_op(g, u) || (class_at(g, u) == FC_FREE &&
					     same_buffer(g->c->instrs[u]))) ||
		     reuses(g, u) || (g->grp[u] != G_MULTI && g->prologue[u])))
			return false;
	}
	return true;
}

/* Marks p fused into the users listed (those with grp == into, or all
 * users when into == G_MULTI), inheriting their reuse/prologue/bcast
 * flags. */
static void fuse_into(struct grouping *g, int i, int into)
{
	g->grp[i] = into;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int ui = g->users[k];
		if (!g->live[ui] || (into != G_MULTI && g->grp[ui] != into))
			continue;
		g->reuse[i] = g->reuse[i] || reuses(g, ui);
		g->prologue[i] = g->prologue[i] ||
				 (g->opk[ui] & OPK_CONTRACTION) || g->prologue[ui];
		g->bcast[i] = g->bcast[i] || broadcasts(g, ui);
	}
}

/* Where recomputing instruction i in every user kernel would put it:
 * G_MULTI, one group id, or G_NONE when that is not legal (a user is no
 * kernel, or does not accept i). */
static int recompute_target(const struct grouping *g, int i)
{
	bool multi = false, same = true;
	int first = G_NONE;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int ui = g->users[k], gu = g->grp[ui];
		if (!g->live[ui])
			continue;
		if (gu == G_NONE || !user_accepts(g, ui, i))
			return G_NONE;
		if (gu == G_MULTI)
			multi = true;
		else if (first == G_NONE)
			first = gu;
		else if (gu != first)
			same = false;
	}
	return multi || !same ? G_MULTI : first;
}

bool sim_group_can_recompute(const struct grouping *g, int i)
{
	return recompute_target(g, i) != G_NONE;
}

/* A transpose or reshape: the ops that follow a gather into its kernel
 * (gather_into, gather_tail). */
static bool gather_chain_op(const struct grouping *g, int i)
{
	enum ir_op op = g->c->instrs[i]->op;
	return op == IR_OP_TRANSPOSE || op == IR_OP_RESHAPE;
}

/* A gather joins its one live user when that is a transpose or reshape:
 * XLA's TPU compiler emits a gather with the transposes of its result in
 * one kCustom gather_fusion (data/compiled: 56 of 77 gathers, the others
 * are their fusion's root). Known wrong: the compiler's reasons are not
 * public; other users (elementwise) are assumed to read it from HBM. */
static bool gather_into(struct grouping *g, int i)
{
	int u = -1, n = 0;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++)
		if (g->live[g->users[k]]) {
			u = g->users[k];
			n++;
		}
	if (n != 1 || g->grp[u] < 0 || g->prologue[u] || !gather_chain_op(g, u))
		return false;
	fuse_into(g, i, g->grp[u]);
	return true;
}

/* Does slice `in` read whole tiles of its operand for a much smaller
 * part of it: is the share of the operand's tiles its window touches (the
 * first tile level, along the two minor physical dims; the major dims by
 * their window) at least 4 times its share of the elements? A slice of one
 * row of an (8,128) tile's eight is (data/compiled v5e/dlrm_s: the eight
 * feature columns of the s32[1024,8]{0,1:T(8,128)} sparse indices, 8
 * times); one of 1,024 of a row's 1,025 lanes is not (the decoders'
 * tokens), nor one of half the lanes of a padded row (v5e/unet3d_s's
 * channel splits, 2 times). Known wrong: cost.c counts a slice's read as
 * its result's bytes, not these tiles. */
static bool reads_whole_tiles(const struct ir_instr *in)
{
	if (in->op != IR_OP_SLICE || in->n_operands != 1 || !in->attrs.slice)
		return false;
	const struct ir_shape *a = &in->operands[0]->shape;
	const struct ir_slice *sl = in->attrs.slice;
	if (sl->n != a->rank || a->rank < 1 || a->rank > 64 ||
	    a->type == IR_TYPE_TUPLE)
		return false;
	int order[64];
	ir_shape_major_to_minor(a, order);
	struct ir_tile t;
	if (a->layout.n_tiles > 0)
		t = a->layout.tiles[0];
	else
		ir_shape_default_tile(a, &t);
	double tiles = 1, elems = 1;
	for (int i = 0; i < a->rank; i++) {
		int d = order[i], k = a->rank - 1 - i; /* k = 0: the minor dim */
		int64_t n = a->dims[d], lo = sl->dims[d].start,
			hi = sl->dims[d].limit, st = sl->dims[d].stride;
		int64_t e = k < t.rank && t.rank <= IR_MAX_TILE_RANK
				    ? t.dims[t.rank - 1 - k]
				    : 1;
		if (e < 1 || n < 1 || lo < 0 || hi > n || hi <= lo)
			return false;
		tiles *= (double)((hi + e - 1) / e - lo / e) /
			 (double)((n + e - 1) / e);
		elems *= (double)((hi - lo + (st > 1 ? st : 1) - 1) /
				  (st > 1 ? st : 1)) /
			 (double)n;
	}
	return tiles >= 4.0 * elems;
}

/* Does op only select a window of its operand (no arithmetic, each
 * element read at most once)? XLA's TPU compiler computes such a
 * producer again in every kernel that reads it, a dot's operand
 * included (data/compiled: the decoders' backward convolution fusions
 * each slice their layer out of the scan's stacked activations, as the
 * elementwise fusions beside them do). */
static bool selects(enum ir_op op)
{
	return op == IR_OP_DYNAMIC_SLICE || op == IR_OP_SLICE;
}

/* Is i read by a dot or convolution, or fused into one's operand? */
static bool feeds_operand(const struct grouping *g, int i)
{
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int u = g->users[k];
		if (g->live[u] && (g->prologue[u] || (g->opk[u] & OPK_CONTRACTION)))
			return true;
	}
	return false;
}

/* The shape's dims other than 1, in order, equal b's? */
static bool same_nonunit_dims(const struct ir_shape *a, const struct ir_shape *b)
{
	int i = 0, j = 0;
	for (;;) {
		while (i < a->rank && a->dims[i] == 1)
			i++;
		while (j < b->rank && b->dims[j] == 1)
			j++;
		if (i == a->rank || j == b->rank)
			return i == a->rank && j == b->rank;
		if (a->dims[i++] != b->dims[j++])
			return false;
	}
}

/* Does a bitcast that regroups i's dims (splits or merges them, not only
 * adding or dropping dims of 1) pass i's value to a dot's operand? */
static bool regrouped_into_dot(const struct grouping *g, int i)
{
	const struct ir_shape *s = &g->c->instrs[i]->shape;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int u = g->users[k];
		const struct ir_instr *b = g->c->instrs[u];
		if (g->live[u] && b->op == IR_OP_BITCAST &&
		    b->shape.type != IR_TYPE_TUPLE && s->type != IR_TYPE_TUPLE &&
		    !same_nonunit_dims(s, &b->shape) && feeds_operand(g, u))
			return true;
	}
	return false;
}

/* Most instructions recompute_bytes looks at above a producer. */
#define RECOMPUTE_WALK 64

static double recompute_bytes(const struct grouping *g, int i, bool *transcend,
			      bool nested);

/* Is transcendental t, read by several instructions, computed once and
 * written: does computing it read more bytes than its value (the
 * FC_EXPENSIVE rule in sim_grouping_decide; the attention's exp(scores -
 * row max) on v4 and later, which reads the scores and their row max,
 * an array of their size)? */
static bool written_once(const struct grouping *g, int t)
{
	int n = 0;
	for (int k = g->uoff[t]; k < g->uoff[t + 1]; k++)
		n += g->live[g->users[k]];
	if (n < 2)
		return false;
	bool transcend;
	double in = recompute_bytes(g, t, &transcend, true);
	return in < 0 || in > (double)ir_shape_bytes(&g->c->instrs[t]->shape);
}

/*
 * The bytes a kernel reads to compute producer i itself: the arrays that
 * i and the loop ops above it read (elementwise and format ops,
 * transcendentals and views, which a kernel computing i computes too; a
 * broadcast reads its operand; each array once; constant-derived values
 * and iotas none), those of at least an eighth of i's bytes (per-row
 * vectors beside them do not count). Unpadded bytes, as if every array
 * lived in HBM; -1 past RECOMPUTE_WALK instructions above i. Sets
 * *transcend when i or a loop op walked is a transcendental. A
 * transcendental that others read too and that is written once
 * (written_once; not asked again when nested) is read.
 * Known wrong: another loop op above i that is decided later to be
 * written out (its own users elsewhere) is read, not recomputed, and may
 * read more or fewer bytes than its operands; an array already in VMEM
 * counts as read.
 */
static double recompute_bytes(const struct grouping *g, int i, bool *transcend,
			      bool nested)
{
	int seen[RECOMPUTE_WALK], stack[RECOMPUTE_WALK];
	int n_seen = 0, top = 0;
	*transcend = eup_op(g->c->instrs[i]->op) &&
		     class_at(g, i) == FC_EXPENSIVE; /* not a cheap divide */
	double value = (double)ir_shape_bytes(&g->c->instrs[i]->shape);
	double bytes = 0;
	stack[top++] = i;
	while (top > 0) {
		int x = stack[--top];
		const struct ir_instr *in = g->c->instrs[x];
		for (int j = g->ooff[x]; j < g->ooff[x + 1]; j++) {
			int o = g->ops[j];
			const struct ir_shape *read = NULL;
			if (o < 0) { /* not c's: read as it is */
				read = &in->operands[j - g->ooff[x]]->shape;
			} else {
				bool dup = false;
				for (int q = 0; q < n_seen && !dup; q++)
					dup = seen[q] == o;
				const struct ir_instr *v = g->c->instrs[o];
				if (dup || g->cd[o] || v->op == IR_OP_IOTA)
					continue; /* folded, or made in the kernel */
				if (n_seen == RECOMPUTE_WALK)
					return -1;
				seen[n_seen++] = o;
				enum fuse_class fc = class_at(g, o);
				bool walk = v->op != IR_OP_BROADCAST &&
					    v->op != IR_OP_GET_TUPLE_ELEMENT &&
					    g->ooff[o + 1] > g->ooff[o] &&
					    (fc == FC_CHEAP || fc == FC_FREE ||
					     (fc == FC_EXPENSIVE &&
					      eup_op(v->op) &&
					      (nested ||
					       !written_once(g, o))));
				if (walk) {
					if (top == RECOMPUTE_WALK)
						return -1;
					*transcend = *transcend ||
						     fc == FC_EXPENSIVE;
					stack[top++] = o;
					continue;
				}
				read = v->op == IR_OP_BROADCAST && v->n_operands > 0
					       ? &v->operands[0]->shape
					       : &v->shape;
			}
			double b = (double)ir_shape_bytes(read);
			if (8.0 * b >= value)
				bytes += b;
		}
	}
	return bytes;
}

/* Deepest chain of users operand_dots follows below a producer, and the
 * most users it looks at in all (a lattice of shared loop ops would
 * otherwise be walked once per path). */
#define OPERAND_DEPTH 8
#define OPERAND_VISITS 256

/* The dots and convolutions whose operands are the only place i is
 * computed in, each streaming it: i's live users are dots with a result
 * of fewer elements than i (elems: an activation read once, not a weight
 * read again for every tile of a larger result), or loop ops fused into
 * no kernel of their own whose users are (decided before i: consumers
 * first). 0 when some user is not, or past *visits users in all; a dot
 * reached twice counts twice. */
static int operand_dots(const struct grouping *g, int i, int64_t elems,
			int depth, int *visits)
{
	int n = 0;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int u = g->users[k];
		if (!g->live[u])
			continue;
		if (--*visits < 0)
			return 0;
		if (g->opk[u] & OPK_CONTRACTION) {
			if (ir_shape_elems(&g->c->instrs[u]->shape) >= elems)
				return 0;
			n++;
			continue;
		}
		int gu = g->grp[u];
		if (depth == OPERAND_DEPTH || !g->prologue[u] ||
		    gu == G_NONE || (gu >= 0 && g->g_root[gu] == u))
			return 0;
		int r = operand_dots(g, u, elems, depth + 1, visits);
		if (r == 0)
			return 0;
		n += r;
	}
	return n;
}

/*
 * Whether recomputing producer i in each of its users' kernels moves no
 * more HBM bytes than computing it once. Recomputed, each user kernel
 * reads what i is computed from (recompute_bytes: in, bytes); computed
 * once, i's value (v bytes) is written, then read by each. Where its
 * users are all n dots or convolutions streaming it through their
 * operands (operand_dots), computing it once takes a kernel of its own:
 * recompute when n in < in + v + n v, i.e. (n - 1) in < (n + 1) v (at a
 * tie, the VPU's work is not done again in each). Otherwise a loop
 * kernel among its users computes and writes it anyway, and each dot
 * that recomputed it would read in for v: recompute when in <= v.
 * Nor is a transcendental recomputed in several dots' operands for more
 * bytes (the EUP's work done again in each). Assumes every array in HBM
 * and each dot bound by the bytes it reads (a dot bound by the MXU
 * hides them: known wrong low there).
 * Evidence: data/compiled (the logits' gradient, reading the logits and
 * per-row vectors, is recomputed in both convolutions that read it; a
 * residual add reads two arrays for one and is written once, read by
 * the norm's reduce too; an attention's exp(scores - max) reads the
 * scores, their row max and the mask, and is written once for the sum
 * and the divide; the softmax's divide and bf16 convert, read by two
 * convolutions, are recomputed in both from the f32 exp:
 * v5e/decoder_m's divide_convert_fusion.9 and .10; the scores' gradient
 * on v2 and v3, which recomputes the exp from two bf16 arrays, is
 * written once for the two convolutions that read it: v3/decoder_s's
 * fusion.361).
 */
static bool recompute_pays(const struct grouping *g, int i)
{
	bool transcend;
	double in = recompute_bytes(g, i, &transcend, false);
	double v = (double)ir_shape_bytes(&g->c->instrs[i]->shape);
	if (in < 0)
		return false;
	if (in <= v)
		return true;
	int visits = OPERAND_VISITS;
	int n = transcend ? 0
			  : operand_dots(g, i,
					 ir_shape_elems(&g->c->instrs[i]->shape),
					 0, &visits);
	return n > 0 && (n - 1) * in < (n + 1) * v;
}

/* Whether user u of i takes it into its kernel computed once per element
 * (and, with no_operand, not into a dot's operand). */
static bool takes_once(const struct grouping *g, int u, int i, bool no_operand)
{
	return user_accepts(g, u, i) && !reuses(g, u) &&
	       !(no_operand &&
		 (g->prologue[u] || (g->opk[u] & OPK_CONTRACTION)));
}

/* The user kernel that a producer with users in several kernels joins
 * (writing its value out for the others, multi-output fusion), or G_NONE.
 * Without no_operand: the earliest (by its root's place in the order)
 * whose users of i all take it once. With no_operand, only the user
 * kernel that comes first in the topological order, if its users of i
 * take it once and none into a dot's operand: no other user kernel can
 * feed that one, so joining it makes no cycle through them (a producer of
 * a dot's operand often feeds a later kernel that depends on that dot: a
 * residual add). A kernel such a join leaves on a cycle between kernels
 * is split into kernels of one op each (dissolve_cycles). */
static int earliest_kernel(const struct grouping *g, int i, bool no_operand)
{
	int best = G_NONE, first = G_NONE;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int gu = g->grp[g->users[k]];
		if (!g->live[g->users[k]] || gu < 0)
			continue;
		if (first == G_NONE ||
		    g->pos[g->g_root[gu]] < g->pos[g->g_root[first]])
			first = gu;
		if (no_operand ||
		    (best != G_NONE &&
		     g->pos[g->g_root[gu]] >= g->pos[g->g_root[best]]))
			continue;
		bool ok = true;
		for (int q = g->uoff[i]; ok && q < g->uoff[i + 1]; q++) {
			int u = g->users[q];
			if (g->live[u] && g->grp[u] == gu)
				ok = takes_once(g, u, i, false);
		}
		if (ok)
			best = gu;
	}
	if (!no_operand)
		return best;
	for (int q = g->uoff[i]; first != G_NONE && q < g->uoff[i + 1]; q++) {
		int u = g->users[q];
		if (g->live[u] && g->grp[u] == first && !takes_once(g, u, i, true))
			first = G_NONE;
	}
	return first;
}

static int sole_live_user(const struct grouping *g, int i);
static bool holds_contraction(const struct grouping *g, int id);

/* How epilogue i's value compares in bytes with the one it reads on the
 * chain back to its dot: < 0 smaller (a convert of an f32 sum to bf16, a
 * slice), > 0 larger (a bf16 result converted to f32, a broadcast or pad),
 * 0 the same: the boundary that moves fewer bytes. */
static int width_change(const struct grouping *g, int i)
{
	for (int j = g->ooff[i]; j < g->ooff[i + 1]; j++) {
		int o = g->ops[j];
		if (o >= 0 && (g->opk[o] & (OPK_CONTRACTION | OPK_EPILOGUE)) &&
		    sole_live_user(g, o) == i) {
			double a = ir_shape_bytes(&g->c->instrs[i]->shape),
			       b = ir_shape_bytes(&g->c->instrs[o]->shape);
			return (a > b) - (a < b);
		}
	}
	return 0;
}

bool sim_reads_core(const struct grouping *g, int i)
{
	return g->fc[i] == FC_CORE || (g->opk[i] & OPK_EPILOGUE);
}

/* Is i the reshape that ends a gather's kernel: the first reshape on a
 * chain of transposes, each the one live user of the one before, that
 * starts at a gather's one live user (gather_into takes the gather into
 * the chain's first op), or the chain's last transpose where no reshape
 * follows? XLA's TPU compiler writes a gather as gather,
 * transpose, reshape (its canonical form) in one kCustom gather_fusion,
 * ends it there and computes what reads it in fusions of its own
 * (data/compiled: every decoder's embedding lookup, gather, transpose,
 * reshape, then a broadcast_select_fusion masking it), a reshape back to
 * the program's shape included (gather_reshaped), except a scatter that
 * takes the chain as its updates: one scatter_custom_fusion holds the
 * gather, its chain and the scatter (every decoder's embedding
 * gradient). */
static bool gather_tail(const struct grouping *g, int i)
{
	enum ir_op op = g->c->instrs[i]->op;
	int next = sole_live_user(g, i);
	if (op != IR_OP_RESHAPE &&
	    (op != IR_OP_TRANSPOSE || (next >= 0 && gather_chain_op(g, next))))
		return false; /* a transpose ends it where no reshape follows */
	for (int x = i, u; (u = sole_live_user(g, x)) >= 0; x = u) {
		if (g->c->instrs[u]->op == IR_OP_SCATTER &&
		    user_accepts(g, u, x) &&
		    g->ops[g->ooff[u] + index_slot(g, u)] != x)
			return false; /* a scatter's updates: it takes the chain */
		if (!gather_chain_op(g, u))
			break;
	}
	for (int x = i;;) {
		int o = g->ops[g->ooff[x]];
		if (o < 0 || sole_live_user(g, o) != x)
			return false;
		if (g->c->instrs[o]->op == IR_OP_GATHER)
			return true;
		if (g->c->instrs[o]->op != IR_OP_TRANSPOSE)
			return false;
		x = o;
	}
}

/* Is i a reshape that moves data (not a bitcast: sim_top_role) of the
 * value that ends a gather's kernel (gather_tail)? XLA's TPU compiler
 * leaves it a top-level reshape, a kernel of its own (data/compiled: all
 * 19 reshapes that read a gather_fusion, the decoders' and
 * v5e/unet3d_s's take_along_axis, from the gather's flat f32[4096]
 * T(1024) back to f32[4,1024,1] T(4,128)); one that is a bitcast is
 * free, held by the kernels that read it (the embedding lookup's). */
static bool gather_reshaped(const struct grouping *g, int i)
{
	const struct ir_instr *in = g->c->instrs[i];
	int o = g->ops[g->ooff[i]];
	enum sim_kernel_kind kind;
	return in->op == IR_OP_RESHAPE && o >= 0 && gather_tail(g, o) &&
	       sim_top_role(in, &kind) == SIM_TOP_KERNEL;
}

/* Is in the custom-call that starts or ends one of XLA's async
 * collective chains (sim/classify.c), as a compiled module unfused holds
 * it? */
static bool chain_marker(const struct ir_instr *in)
{
	return in->op == IR_OP_CUSTOM_CALL &&
	       (sim_chain_start(in) || sim_chain_done(in));
}

/* Marks a chain's continuations (OPK_CONTINUATION): collectives no live
 * op reads, with the channel of a chain's start. XLA's
 * async collective fusion clones the collective into fusions between the
 * chain's start and done, beside other work (sim/classify.c). */
static bool mark_continuations(struct grouping *g)
{
	int64_t *chan = ts_malloc(((size_t)g->n + 1) * sizeof *chan);
	if (!chan)
		return false;
	int n_chan = 0;
	for (int j = 0; j < g->n; j++) {
		const struct ir_instr *x = g->c->instrs[j];
		if (x->op == IR_OP_CUSTOM_CALL && sim_chain_start(x) &&
		    sim_chain_channel(x) != 0)
			chan[n_chan++] = sim_chain_channel(x);
	}
	for (int i = 0; n_chan > 0 && i < g->n; i++) {
		const struct ir_instr *in = g->c->instrs[i];
		bool read = false;
		for (int k = g->uoff[i]; k < g->uoff[i + 1] && !read; k++)
			read = g->live[g->users[k]];
		if (ir_op_class(in->op) != IR_CLASS_COLLECTIVE ||
		    !g->live[i] || read || in == g->c->root)
			continue;
		for (int q = 0; q < n_chan; q++)
			if (chan[q] == in->attrs.channel_id) {
				g->opk[i] |= OPK_CONTINUATION;
				g->continues = true;
				break;
			}
	}
	ts_free(chan);
	return true;
}

/* The fusion predicate for instruction i (all its users decided). */
void sim_grouping_decide(struct grouping *g, int i)
{
	const struct ir_instr *p = g->c->instrs[i];
	bool is_root = g->c->root == p;
	g->grp[i] = G_NONE;
	if (!g->live[i])
		return;
	if (g->cd[i]) {
		/* copied into the kernels that read it, unless it must be in
		 * memory: the root, read by a tuple or loop (an optimizer
		 * state filled with a constant) or by an op XLA keeps alone (a
		 * batch-norm's scale): then a kernel writes it */
		bool stored = is_root;
		for (int k = g->uoff[i]; !stored && k < g->uoff[i + 1]; k++) {
			int u = g->users[k];
			stored = g->live[u] && !g->cd[u] &&
				 (g->grp[u] == G_NONE || (g->opk[u] & OPK_ALONE));
		}
		if (stored && p->op != IR_OP_CONSTANT)
			sim_grouping_new(g, i, false);
		return;
	}
	enum fuse_class fc = class_at(g, i);
	if (fc == FC_FREE && same_buffer(p) && !is_root) {
		/* the same buffer under another shape: in every kernel that
		 * reads it when they all take it, so that what it passes on
		 * can be fused through it (XLA's fusions hold bitcasts) */
		int into = recompute_target(g, i);
		if (into != G_NONE)
			fuse_into(g, i, into);
		return;
	}
	if (fc == FC_FREE || fc == FC_CONTROL)
		return;
	if (p->op == IR_OP_GATHER && !is_root && gather_into(g, i))
		return;
	/* a chain's collective is in the kernel of the custom-call that
	 * starts or ends the chain and reads it (data/compiled v5e/vit_s
	 * and dlrm_s: each async-collective-start fusion holds the
	 * all-gather and AsyncCollectiveStart, each done the all-gather and
	 * AsyncCollectiveDone) */
	if (ir_op_class(p->op) == IR_CLASS_COLLECTIVE && !is_root) {
		int u = sole_live_user(g, i);
		if (u >= 0 && chain_marker(g->c->instrs[u]) && g->grp[u] >= 0 &&
		    sim_fused_collective(g->c->instrs[u]) == p) {
			fuse_into(g, i, g->grp[u]);
			return;
		}
	}
	if (fc == FC_ROOT || is_root) {
		g->why[i] = fc == FC_ROOT ? SIM_WHY_ROOT_OP : SIM_WHY_COMP_ROOT;
		sim_grouping_new(g, i, fc == FC_CORE);
		return;
	}
	/* a policy's decision overrides the rules below where it is legal:
	 * a kernel of its own always is; recomputing in every user kernel
	 * when each accepts it (FC_CORE keeps its one-core-per-kernel rule
	 * and is only ever unfused) */
	signed char force = g->force ? g->force[i] : SIM_FUSE_DEFAULT;
	if (force == SIM_FUSE_OWN) {
		g->why[i] = SIM_WHY_POLICY;
		sim_grouping_new(g, i, fc == FC_CORE);
		return;
	}
	int into = force == SIM_FUSE_RECOMPUTE && fc != FC_CORE
			   ? recompute_target(g, i)
			   : G_NONE;
	if (into != G_NONE) {
		fuse_into(g, i, into);
		return;
	}
	/* Survey the live users. */
	int n_users = 0, first = G_NONE;
	bool multi = false, same = true, all_accept = true, materialise = false;
	bool reuse_any = false;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int ui = g->users[k], gu = g->grp[ui];
		if (!g->live[ui])
			continue;
		n_users++;
		if (gu == G_NONE) { /* tuple, while, ...: needs p in memory */
			materialise = true;
			continue;
		}
		all_accept = all_accept && user_accepts(g, ui, i);
		reuse_any = reuse_any || reuses(g, ui);
		if (gu == G_MULTI)
			multi = true;
		else if (first == G_NONE)
			first = gu;
		else if (gu != first)
			same = false;
	}
	if (n_users == 0) {
		g->why[i] = SIM_WHY_ROOT_OP;
		sim_grouping_new(g, i, fc == FC_CORE);
		return;
	}
	/* A dot's epilogue (OPK_EPILOGUE: a loop op that is the only user of
	 * a dot or of its epilogue) stays with the dot, XLA's output fusion:
	 * it joins its users only when they are all in one kernel and none
	 * takes it into another dot's operand (where the dot could not
	 * follow it); else it roots the dot's kernel and its users read it.
	 * XLA's TPU compiler forms output fusions before loop fusion (a
	 * convolution's kOutput fusion holds its convert, add, multiply
	 * epilogue in data/compiled), so the epilogue is never recomputed in
	 * its users (XLA GPU: FusionMerger/multi-output fusion, the same
	 * effect). Except where the boundary moves fewer bytes elsewhere: an
	 * epilogue that widens the value (bf16 to f32) is left to the rules
	 * below (recomputed in its users: the compiled convolutions write
	 * bf16, each reader converts again); and one that narrows it (f32 to
	 * bf16) whose users' kernel holds another dot roots its own dot's
	 * kernel rather than join that one, where its dot could not follow
	 * (one core a kernel): the compiled residual adds, each with its
	 * projection (convolution_add_fusion), the next reading bf16. */
	int widens = (g->opk[i] & OPK_EPILOGUE) ? width_change(g, i) : 0;
	if ((g->opk[i] & OPK_EPILOGUE) && !materialise &&
	    (((multi || !same || first < 0 || feeds_operand(g, i)) &&
	      widens <= 0) ||
	     (first >= 0 && g->g_core_at[first] > g->pos[i] &&
	      holds_contraction(g, first) && widens < 0))) {
		g->why[i] = SIM_WHY_EPILOGUE;
		sim_grouping_new(g, i, false);
		return;
	}
	switch (fc) {
	case FC_CHEAP:
		if (!materialise && gather_tail(g, i)) {
			g->why[i] = SIM_WHY_GATHER_TAIL;
			sim_grouping_new(g, i, false);
			return;
		}
		if (!materialise && gather_reshaped(g, i)) {
			g->why[i] = SIM_WHY_GATHER_RESHAPE;
			sim_grouping_new(g, i, false);
			return;
		}
		if (materialise || !all_accept)
			break;
		/* a dynamic-slice read by several kernels, one of them into a
		 * dot's operand, is a kernel of its own (data/compiled: XLA's
		 * dynamic-slice_bitcast_fusion, a scan's layer sliced once for
		 * the convolutions and the norm that read it; of the
		 * dynamic-slices of the compiled modules whose value has users
		 * in several fusions, 79 of 80 are fusions of their own).
		 * Read by loop kernels only, it is computed in each (the rule
		 * below): XLA computes the no-remat decoders' saved attention
		 * slice in both multiplies that read it
		 * (v3/decoder_s_noremat: dynamic-slice.369 and .370) */
		if ((multi || !same) && p->op == IR_OP_DYNAMIC_SLICE &&
		    feeds_operand(g, i)) {
			all_accept = false;
			break;
		}
		/* nor is one computed in a dot's operand through a bitcast
		 * that regroups its dims (data/compiled: the 6 dynamic-slices
		 * that reach a convolution so, a layer's weight split into
		 * heads, are fusions of their own; of the 261 that reach one
		 * through unit dims only, 255 are in its fusion) */
		if (p->op == IR_OP_DYNAMIC_SLICE && regrouped_into_dot(g, i)) {
			all_accept = false;
			break;
		}
		/* a slice read by several kernels that reads whole tiles
		 * for a smaller value is computed once, by a kernel of its
		 * own (data/compiled: the 8 such slices, v5e/dlrm_s's
		 * feature columns, are; the 35 slices of few tiles that
		 * several fusions read, the decoders' tokens, are computed
		 * in each) */
		if ((multi || !same) && reads_whole_tiles(p)) {
			all_accept = false;
			break;
		}
		/* read by several slices of one kernel, a value is computed
		 * apart and the slices read it (data/compiled: each of the 24
		 * such values is a fusion of its own; 23 are a gather's
		 * indices built by pads and adds and read in three columns,
		 * one an in-place update in v5e/unet3d_s) */
		if (same && !multi && (g->opk[i] & OPK_SLICED)) {
			all_accept = false;
			break;
		}
		/* nor does a gather's or scatter's kernel compute a copy its
		 * indices come from (data/compiled: none of the 50 such
		 * copies, relayouts of the indices, is in the gather's or
		 * scatter's fusion; XLA's copy_bitcast_fusion) */
		if (p->op == IR_OP_COPY && same && !multi && first >= 0 &&
		    indexes_in(g, i, first)) {
			all_accept = false;
			break;
		}
		/* users in several kernels, one a dot's operand: XLA's TPU
		 * compiler recomputes the producer in each where that reads
		 * no more bytes than its value, or, read by streaming dots
		 * alone, where that moves fewer bytes than writing it once
		 * (recompute_pays: the logits' gradient and the softmax's
		 * probabilities in both convolutions that read them);
		 * otherwise, and for a relayout copy, it computes it once in
		 * another user's kernel and writes it out (multi-output
		 * fusion; data/compiled: a residual add fused with the norm's
		 * sum of squares, read by the projections); with no such
		 * kernel, a kernel of its own */
		if ((multi || !same) && feeds_operand(g, i) &&
		    !selects(p->op) &&
		    (p->op == IR_OP_COPY || !recompute_pays(g, i))) {
			int best = multi ? G_NONE : earliest_kernel(g, i, true);
			if (best == G_NONE)
				break;
			fuse_into(g, i, best);
			return;
		}
		fuse_into(g, i, multi || !same ? G_MULTI : first);
		return;
	case FC_CORE: {
		/* Output fusion: a dot's or convolution's elementwise-like
		 * users of no more elements, all in one kernel without a core
		 * yet (none decided before this one: later in the order; XLA's
		 * kOutput fusions take an epilogue that reads the result
		 * several times: v5e/moe_s's fusion.273, the GELU's gradient
		 * with its convolution; merge_epilogues joins them where the
		 * merges make that kernel later); a reduce takes no epilogue */
		if (!same || materialise || multi || first < 0 ||
		    g->g_core_at[first] > g->pos[i] || reuse_any ||
		    !is_contraction(p->op))
			break;
		bool ok = true;
		for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
			if (!g->live[g->users[k]])
				continue;
			if (!epilogue_op(g, g->users[k]) ||
			    g->prologue[g->users[k]])
				ok = false;
		}
		if (!ok)
			break;
		fuse_into(g, i, first);
		g->g_core_at[first] = g->pos[i];
		return;
	}
	case FC_EXPENSIVE: {
		bool transcend = eup_op(p->op) &&
				 !materialise && all_accept && !reuse_any;
		/* a transcendental (eup_op) is recomputed in several user
		 * kernels only where that pays (recompute_pays, above); else
		 * it is a kernel of its own, which the merge passes may join
		 * to a reader (merge_loops, which checks for cycles): joining a
		 * user kernel here could make a cycle between two kernels
		 * that only dissolve_cycles would undo, splitting the kernel
		 * into single ops */
		if (transcend &&
		    ((same && !multi) || recompute_pays(g, i))) {
			fuse_into(g, i, multi || !same ? G_MULTI : first);
			return;
		}
		/* a divide that is not recomputed joins a user kernel and
		 * is written out, as other expensive ops are */
		if (multi || (transcend && p->op != IR_OP_DIVIDE))
			break;
		int best = earliest_kernel(g, i, false);
		if (best == G_NONE)
			break;
		fuse_into(g, i, best);
		return;
	}
	default:
		break;
	}
	g->why[i] = materialise		? SIM_WHY_MATERIALISE
		    : !all_accept	? SIM_WHY_NOT_ACCEPTED
		    : fc == FC_CORE	? SIM_WHY_CORE
		    : reuse_any		? SIM_WHY_REUSE
		    : fc == FC_EXPENSIVE ? SIM_WHY_EXPENSIVE
					 : SIM_WHY_ROOT_OP;
	sim_grouping_new(g, i, fc == FC_CORE);
}

const char *sim_fuse_why_name(enum sim_fuse_why w)
{
	static const char *const names[SIM_WHY_COUNT] = {
		[SIM_WHY_FUSED] = "fused",
		[SIM_WHY_ROOT_OP] = "always its own kernel",
		[SIM_WHY_COMP_ROOT] = "the computation's result",
		[SIM_WHY_MATERIALISE] = "a user takes no fused operand",
		[SIM_WHY_NOT_ACCEPTED] = "a user kernel does not accept it",
		[SIM_WHY_CORE] = "a reduce, or a dot with other users or cores",
		[SIM_WHY_REUSE] = "expensive op through a pad",
		[SIM_WHY_EXPENSIVE] = "expensive op, users in several kernels",
		[SIM_WHY_EPILOGUE] = "a dot's epilogue stays with the dot",
		[SIM_WHY_GATHER_TAIL] = "a gather's kernel ends there",
		[SIM_WHY_GATHER_RESHAPE] = "reshapes a gather's result",
		[SIM_WHY_POLICY] = "the policy's decision",
		[SIM_WHY_ELSEWHERE] = "fused into another kernel",
		[SIM_WHY_CYCLE] = "fusing it would make a cycle",
	};
	return (unsigned)w < SIM_WHY_COUNT ? names[w] : "invalid";
}

void sim_mark_grouped(const struct ir_computation *c, bool *grouped,
		      int depth)
{
	if (grouped[c->index] || depth > SIM_MAX_NESTING)
		return;
	grouped[c->index] = true;
	for (int i = 0; i < c->n_instrs; i++) {
		/* the computations the kernels' walk enters (sim_top_role:
		 * loops, calls, async calls such as v7's SparseCore ones,
		 * conditionals); a loop's condition stays as written, as XLA
		 * leaves it (data/compiled: compare(get-tuple-element,
		 * constant)) */
		const struct ir_instr *in = c->instrs[i];
		enum sim_kernel_kind kind;
		enum sim_top role = sim_top_role(in, &kind);
		if (role != SIM_TOP_WHILE && role != SIM_TOP_CALL &&
		    role != SIM_TOP_CONDITIONAL)
			continue;
		for (int j = in->op == IR_OP_WHILE ? 1 : 0; j < in->n_called; j++)
			if (in->called[j])
				sim_mark_grouped(in->called[j], grouped,
						 depth + 1);
	}
}

bool sim_chain_grouped(const struct grouping *g, int id)
{
	const struct ir_instr *root = g->c->instrs[g->g_root[id]];
	const struct ir_instr *coll = sim_fused_collective(root);
	return root->op == IR_OP_CUSTOM_CALL && coll && coll->parent == g->c &&
	       sim_group_member(g, id, coll->index);
}

bool sim_group_working(const struct grouping *g, int i)
{
	return !g->cd[i] && g->live[i] &&
	       sim_fuse_class(g, g->c->instrs[i]) != FC_FREE;
}

/* Is x in the ascending v[0..n)? */
static bool sorted_has(const int *v, int n, int x)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x;
}

bool sim_group_member(const struct grouping *g, int grp, int i)
{
	/* once the groups are final, a representative is looked up among
	 * the few groups that hold i, not among the many members of grp */
	if (g->h_off && g->g_rep[grp] == grp)
		return sorted_has(g->holders + g->h_off[i],
				  g->h_off[i + 1] - g->h_off[i], grp);
	return sorted_has(g->pool + g->m_start[grp], g->m_len[grp], i);
}

int sim_group_members(const struct grouping *g, int grp, const int **out)
{
	*out = g->pool + g->m_start[grp];
	return g->m_len[grp];
}

/* Room for n more entries at the end of the member pool. */
static bool pool_reserve(struct grouping *g, size_t n)
{
	if (n > (size_t)INT_MAX - g->pool_n) /* offsets are ints */
		return false;
	if (g->pool_n + n <= g->pool_cap)
		return true;
	size_t cap = g->pool_cap ? g->pool_cap : 256;
	while (cap < g->pool_n + n)
		cap *= 2;
	int *p = ts_realloc(g->pool, cap * sizeof *p);
	if (!p)
		return false;
	g->pool = p;
	g->pool_cap = cap;
	return true;
}

/* Sorts v[0..n) ascending without a comparator call per pair (a group's
 * members, at every fusion trial: most groups hold a few, and a long list
 * comes here only when its indices lie sparse, sim_grouping_collect):
 * quicksort on the middle element's value, the shorter side first by
 * recursion (depth <= log2 n), insertion below 16 entries. */
static void sort_ints(int *v, int n)
{
	while (n > 16) {
		int pivot = v[n / 2], i = 0, j = n - 1;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				int t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		/* v[0..j] <= pivot <= v[i..n) */
		if (j + 1 < n - i) {
			sort_ints(v, j + 1);
			v += i;
			n -= i;
		} else {
			sort_ints(v + i, n - i);
			n = j + 1;
		}
	}
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Members of group id, appended to the pool: its root and, backwards
 * through operands, every instruction fused into it (its own, recomputed,
 * or constant-derived), then sorted. cs->mark holds this call's
 * generation for an instruction already taken. */
bool sim_grouping_collect(struct grouping *g, int id,
			  struct collect_scratch *cs)
{
	int *stack = cs->stack, *mark = cs->mark;
	if (!pool_reserve(g, (size_t)g->n))
		return false;
	int gen = ts_next_gen(&cs->gen, mark, NULL,
			       (size_t)(g->n > 0 ? g->n : 1));
	int *v = g->pool + g->pool_n;
	int sp = 0, len = 0, lo = g->g_root[id], hi = lo;
	stack[sp++] = v[len++] = g->g_root[id];
	mark[g->g_root[id]] = gen;
	while (sp > 0) {
		int i = stack[--sp];
		for (int j = g->ooff[i]; j < g->ooff[i + 1]; j++) {
			int oi = g->ops[j];
			if (oi < 0 || mark[oi] == gen)
				continue;
			if (g->grp[oi] == id || g->grp[oi] == G_MULTI ||
			    (g->cd[oi] && g->grp[oi] == G_NONE)) {
				mark[oi] = gen;
				stack[sp++] = v[len++] = oi;
				lo = oi < lo ? oi : lo;
				hi = oi > hi ? oi : hi;
			}
		}
	}
	/* ascending: a long list whose index range is under 64 bits per
	 * member is read back from a bitset of that range (a Gemma step's
	 * kernels hold hundreds of members, listed again at every fusion
	 * trial), others sorted */
	if (len > 16 && (int64_t)(hi - lo) / 64 < (int64_t)len) {
		for (int q = 0; q < len; q++) {
			int x = v[q] - lo;
			cs->bits[x >> 6] |= UINT64_C(1) << (x & 63);
		}
		len = 0;
		for (int w = 0; w <= (hi - lo) >> 6; w++) {
			uint64_t b = cs->bits[w];
			cs->bits[w] = 0;
			for (; b; b &= b - 1)
				v[len++] = lo + (w << 6) + __builtin_ctzll(b);
		}
	} else {
		sort_ints(v, len);
	}
	g->m_start[id] = (int)g->pool_n;
	g->m_len[id] = len;
	g->pool_n += (size_t)len;
	return true;
}

/* Group a takes group b's members too (a sorted union, appended to the
 * pool). */
static bool absorb(struct grouping *g, int a, int b)
{
	if (!pool_reserve(g, (size_t)g->m_len[a] + (size_t)g->m_len[b]))
		return false;
	const int *x = g->pool + g->m_start[a], *y = g->pool + g->m_start[b];
	int nx = g->m_len[a], ny = g->m_len[b], n = 0, p = 0, q = 0;
	int *v = g->pool + g->pool_n;
	while (p < nx || q < ny) {
		int e = q >= ny || (p < nx && x[p] <= y[q]) ? x[p] : y[q];
		if (p < nx && x[p] == e)
			p++;
		if (q < ny && y[q] == e)
			q++;
		v[n++] = e;
	}
	g->m_start[a] = (int)g->pool_n;
	g->m_len[a] = n;
	g->pool_n += (size_t)n;
	return true;
}

/* The representative groups holding each instruction (CSR), once the
 * groups are final. */
static bool index_holders(struct grouping *g)
{
	g->h_off = ts_calloc((size_t)g->n + 1, sizeof *g->h_off);
	size_t total = 0;
	for (int h = 0; h < g->n_groups; h++)
		if (g->g_rep[h] == h)
			total += (size_t)g->m_len[h];
	g->holders = ts_malloc((total > 0 ? total : 1) * sizeof *g->holders);
	if (!g->h_off || !g->holders)
		return false;
	for (int h = 0; h < g->n_groups; h++)
		if (g->g_rep[h] == h)
			for (int k = 0; k < g->m_len[h]; k++)
				g->h_off[g->pool[g->m_start[h] + k] + 1]++;
	for (int i = 0; i < g->n; i++)
		g->h_off[i + 1] += g->h_off[i];
	int *fill = ts_calloc((size_t)g->n + 1, sizeof *fill);
	if (!fill)
		return false;
	for (int h = 0; h < g->n_groups; h++)
		if (g->g_rep[h] == h)
			for (int k = 0; k < g->m_len[h]; k++) {
				int i = g->pool[g->m_start[h] + k];
				g->holders[g->h_off[i] + fill[i]++] = h;
			}
	ts_free(fill);
	return true;
}

int sim_group_mark(const struct grouping *g, int id)
{
	int *mark = g->stamp;
	int gen = ts_next_gen(&mark[2 * (size_t)g->n], mark, NULL,
			      2 * (size_t)g->n);
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	for (int k = 0; k < n_mem; k++)
		mark[2 * mem[k]] = gen;
	return gen;
}

/* Inputs of group id (operands of members that are not members), in
 * first-use order, into out[]; returns their count. Members and the
 * inputs taken are marked in g->stamp with a new generation (an operand
 * of another computation, rare, is looked for among those taken). */
int sim_group_inputs(const struct grouping *g, int id,
		     const struct ir_instr **out)
{
	int *mark = g->stamp, gen = sim_group_mark(g, id);
	int n = 0;
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	for (int k = 0; k < n_mem; k++) {
		const struct ir_instr *in = g->c->instrs[mem[k]];
		for (int j = 0; j < in->n_operands; j++) {
			const struct ir_instr *o = in->operands[j];
			if (o->parent == g->c) {
				int *m = &mark[2 * o->index];
				if (m[0] == gen || m[1] == gen)
					continue; /* a member, or taken */
				m[1] = gen;
				out[n++] = o;
				continue;
			}
			bool seen = false;
			for (int q = 0; q < n && !seen; q++)
				seen = out[q] == o;
			if (!seen)
				out[n++] = o;
		}
	}
	return n;
}

/* sim_group_order's walk: what it needs between starts. */
struct order_walk {
	const struct grouping *g;
	const int *node;
	unsigned char *state;        /* per node: 0 new, 1 reads pushed, 2 done */
	int *stack, sp, cap;
	const struct ir_instr **in;  /* a group's inputs */
	int *order, n_out;
};

static bool order_push(struct order_walk *w, int x)
{
	if (w->sp == w->cap) {
		int cap = 2 * w->cap + 64;
		int *grown = ts_realloc(w->stack, (size_t)cap * sizeof *grown);
		if (!grown)
			return false;
		w->stack = grown;
		w->cap = cap;
	}
	w->stack[w->sp++] = x;
	return true;
}

/* Appends node start, after every node it reads not yet appended. */
static bool order_visit(struct order_walk *w, int start)
{
	const struct grouping *g = w->g;
	if (w->state[start] != 0)
		return true;
	if (!order_push(w, start))
		return false;
	while (w->sp > 0) {
		int x = w->stack[w->sp - 1];
		if (w->state[x] != 0) {
			w->sp--;
			if (w->state[x] == 1) { /* what it reads is appended */
				w->state[x] = 2;
				w->order[w->n_out++] = x;
			}
			continue;
		}
		w->state[x] = 1;
		int nd;
		const struct ir_instr *const *deps;
		if (x >= g->n) {
			nd = sim_group_inputs(g, x - g->n, w->in);
			deps = w->in;
		} else {
			nd = g->c->instrs[x]->n_operands;
			deps = (const struct ir_instr *const *)g->c->instrs[x]->operands;
		}
		for (int q = nd - 1; q >= 0; q--) {
			int k = sim_index_in(g->c, deps[q]);
			int dn = k >= 0 ? w->node[k] : -1;
			if (dn >= 0 && w->state[dn] == 0 && !order_push(w, dn))
				return false;
		}
	}
	return true;
}

int sim_group_order(const struct grouping *g, const int *node, int *order)
{
	int n = g->n, ng = g->n_groups;
	struct order_walk w = {g, node, NULL, NULL, 0, 0, NULL, order, 0};
	int *first = ts_malloc(((size_t)n + 1) * sizeof *first);
	int *next = ts_malloc(((size_t)ng + 1) * sizeof *next);
	bool *is_node = ts_calloc((size_t)ng + 1, sizeof *is_node);
	w.state = ts_calloc((size_t)n + (size_t)ng + 1, 1);
	w.in = ts_malloc(((size_t)n + 1) * sizeof *w.in);
	bool ok = first && next && is_node && w.state && w.in;
	for (int k = 0; ok && k < n; k++)
		if (node[k] >= n)
			is_node[node[k] - n] = true;
	/* the groups at their last member, a list per instruction */
	for (int i = 0; ok && i < n; i++)
		first[i] = -1;
	for (int id = ng - 1; ok && id >= 0; id--) {
		const int *mem;
		int n_mem = sim_group_members(g, id, &mem);
		if (!is_node[id] || n_mem < 1)
			continue;
		next[id] = first[mem[n_mem - 1]];
		first[mem[n_mem - 1]] = id;
	}
	for (int i = 0; ok && i < n; i++) {
		const struct ir_instr *in = g->c->instrs[i];
		if (node[i] == i && in->op == IR_OP_GET_TUPLE_ELEMENT &&
		    in->n_operands == 1 && in->operands[0]->op == IR_OP_PARAMETER)
			ok = order_visit(&w, i);
	}
	for (int i = 0; ok && i < n; i++) {
		if (node[i] == i)
			ok = order_visit(&w, i);
		for (int id = first[i]; ok && id >= 0; id = next[id])
			ok = order_visit(&w, n + id);
	}
	ts_free(first);
	ts_free(next);
	ts_free(is_node);
	ts_free(w.state);
	ts_free(w.stack);
	ts_free(w.in);
	return ok ? w.n_out : -1;
}

/* Is group id a reduce-rooted representative sibling merging considers? */
bool sim_group_sibling(const struct grouping *g, int id)
{
	if (g->g_rep[id] != id || !(g->opk[g->g_root[id]] & OPK_REDUCE))
		return false;
	const struct ir_instr *r = g->c->instrs[g->g_root[id]];
	return r->n_operands >= 1 && r->attrs.dimensions;
}

/* A digest of what two siblings must share besides their inputs: the
 * reduced operand's dims and the dimensions reduced. */
static uint64_t sibling_key(const struct grouping *g, int id)
{
	const struct ir_instr *r = g->c->instrs[g->g_root[id]];
	const struct ir_shape *s = &r->operands[0]->shape;
	uint64_t h = ts_fnv1a(TS_FNV1A_BASIS, &s->rank, sizeof s->rank);
	h = ts_fnv1a(h, s->dims, (size_t)s->rank * sizeof *s->dims);
	return ts_fnv1a(h, r->attrs.dimensions->v,
			(size_t)r->attrs.dimensions->n *
				sizeof *r->attrs.dimensions->v);
}

/* The digest sibling merging compares: sibling_key and group id's inputs
 * (in[0 .. n_in), sorted by address). */
static uint64_t sibling_digest(const struct grouping *g, int id,
			       const struct ir_instr *const *in, int n_in)
{
	return ts_fnv1a(sibling_key(g, id), in, (size_t)n_in * sizeof *in);
}

static int cmp_ptr(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)*(const void *const *)x,
		  b = (uintptr_t)*(const void *const *)y;
	return (a > b) - (a < b);
}

/* The groups' inputs (sim_group_inputs), sorted by address for comparing
 * as sets, worked out when first asked for (merge_siblings asks for every
 * sibling's, for its digest) and forgotten when the group absorbs a
 * sibling (its members change; its inputs, the same set, are worked out
 * again from them). */
struct inputs_memo {
	int *off, *len;                /* per group; off -1: not worked out */
	const struct ir_instr **pool;  /* the lists, one after another */
	size_t n, cap;
};

/* Group id's inputs into *out (pointing into m); -1 when out of memory.
 * scratch has room for g->n. */
static int memo_inputs(const struct grouping *g, struct inputs_memo *m, int id,
		       const struct ir_instr **scratch,
		       const struct ir_instr *const **out)
{
	if (m->off[id] < 0) {
		int n = sim_group_inputs(g, id, scratch);
		qsort(scratch, (size_t)n, sizeof *scratch, cmp_ptr);
		if (m->n + (size_t)n > m->cap) {
			size_t cap = 2 * (m->n + (size_t)n) + 64;
			const struct ir_instr **p =
				ts_realloc(m->pool, cap * sizeof *p);
			if (!p)
				return -1;
			m->pool = p;
			m->cap = cap;
		}
		memcpy(m->pool + m->n, scratch, (size_t)n * sizeof *scratch);
		m->off[id] = (int)m->n;
		m->len[id] = n;
		m->n += (size_t)n;
	}
	*out = m->pool + m->off[id];
	return m->len[id];
}

/* Group `from` and the groups merged into it before (groups need not be
 * in root order) now have representative `to`: no chains. Their ids go
 * to moved[] when it is given; returns how many. */
static int redirect_reps(struct grouping *g, int from, int to, int *moved)
{
	int n = 0;
	for (int h = 0; h < g->n_groups; h++)
		if (g->g_rep[h] == from) {
			g->g_rep[h] = to;
			if (moved)
				moved[n] = h;
			n++;
		}
	return n;
}

/*
 * Sibling multi-output fusion: a later reduce-rooted group whose reduce
 * reads an input of the same dims over the same dimensions, and which has
 * exactly the same inputs, merges into the earlier one. Groups are taken
 * in id order, each with the later ones in order; only groups whose
 * digests (sibling_key and their inputs) agree are compared, so the work
 * grows with the siblings a group has, not with all reduce groups squared
 * (the 32 layers of a Llama step have hundreds of reduces of one shape,
 * each over its own inputs: comparing them all, at every fusion trial,
 * was a third of the analytic fusion's time).
 */
static bool merge_siblings(struct grouping *g, const struct ir_instr **scratch,
			   const struct ir_instr **ia)
{
	size_t ng = (size_t)g->n_groups + 1;
	struct ts_key_id *sib = ts_malloc(ng * sizeof *sib);
	int *run_of = ts_malloc(ng * sizeof *run_of);
	struct inputs_memo m = {ts_malloc(ng * sizeof(int)),
				ts_malloc(ng * sizeof(int)), NULL, 0, 0};
	bool ok = sib && run_of && m.off && m.len;
	int n_sib = 0;
	for (int id = 0; ok && id < g->n_groups; id++)
		m.off[id] = -1;
	for (int id = 0; ok && id < g->n_groups; id++) {
		if (!sim_group_sibling(g, id))
			continue;
		/* the digest takes in the inputs too (by address, sorted):
		 * siblings must have exactly the same, and a group that
		 * absorbs one keeps them (what it reads from outside is what
		 * either read) */
		const struct ir_instr *const *in;
		int n_in = memo_inputs(g, &m, id, scratch, &in);
		if (n_in < 0) {
			ok = false;
			break;
		}
		sib[n_sib++] = (struct ts_key_id){sibling_digest(g, id, in, n_in),
						  id};
	}
	if (ok)
		qsort(sib, (size_t)n_sib, sizeof *sib, ts_cmp_key_id);
	/* run_of[id]: where id's run of equal digests starts in sib */
	for (int k = 0; ok && k < n_sib; k++)
		run_of[sib[k].id] = k > 0 && sib[k - 1].key == sib[k].key
					    ? run_of[sib[k - 1].id]
					    : k;
	for (int a = 0; ok && a < g->n_groups; a++) {
		if (!sim_group_sibling(g, a))
			continue;
		const struct ir_instr *ra = g->c->instrs[g->g_root[a]];
		const struct ir_instr *const *ib;
		int na = -1; /* a's inputs (in ia), as before it absorbed */
		uint64_t key = sib[run_of[a]].key;
		for (int k = run_of[a]; ok && k < n_sib && sib[k].key == key;
		     k++) {
			int b = sib[k].id;
			const struct ir_instr *rb = g->c->instrs[g->g_root[b]];
			if (b == a || g->g_rep[b] != b ||
			    g->g_root[b] <= g->g_root[a] ||
			    !ir_shape_equal_dims(&ra->operands[0]->shape,
						 &rb->operands[0]->shape) ||
			    rb->attrs.dimensions->n != ra->attrs.dimensions->n)
				continue;
			bool same = true;
			for (int q = 0; same && q < ra->attrs.dimensions->n; q++)
				same = ra->attrs.dimensions->v[q] ==
				       rb->attrs.dimensions->v[q];
			if (!same)
				continue;
			if (na < 0) {
				const struct ir_instr *const *la;
				if ((na = memo_inputs(g, &m, a, scratch, &la)) < 0) {
					ok = false;
					break;
				}
				memcpy(ia, la, (size_t)na * sizeof *ia);
			}
			int nb = memo_inputs(g, &m, b, scratch, &ib);
			if (nb < 0) {
				ok = false;
				break;
			}
			if (nb != na)
				continue;
			for (int q = 0; same && q < na; q++)
				same = ia[q] == ib[q];
			if (!same)
				continue;
			redirect_reps(g, b, a, NULL);
			ok = absorb(g, a, b);
			/* a's list (ia) stays as it was for the rest of its
			 * turn; later turns see its members now */
			m.off[a] = -1;
		}
	}
	/* kept: a trial's grouping (sim_grouping_delta) asks whether a
	 * group of its has a sibling here */
	g->sib = sib;
	g->n_sib = n_sib;
	ts_free(run_of);
	ts_free(m.off);
	ts_free(m.len);
	ts_free(m.pool);
	return ok;
}

/* Is group id a representative kernel rooted at a slice that reads whole
 * tiles (reads_whole_tiles)? */
static bool tile_slice_rooted(const struct grouping *g, int id)
{
	return g->g_rep[id] == id &&
	       reads_whole_tiles(g->c->instrs[g->g_root[id]]);
}

/* Slices that read whole tiles of the same inputs, each a kernel of its
 * own (the rule in sim_grouping_decide), are one kernel, which reads the
 * tiles once and writes every slice (multi-output fusion: data/compiled
 * v5e/dlrm_s fusion.77 holds the eight feature columns of the sparse
 * indices). Inputs are compared as sets, sorted by address. */
static bool merge_slices(struct grouping *g, const struct ir_instr **in,
			 const struct ir_instr **other)
{
	bool ok = true;
	for (int a = 0; ok && a < g->n_groups; a++) {
		if (!tile_slice_rooted(g, a))
			continue;
		int na = sim_group_inputs(g, a, in);
		qsort(in, (size_t)na, sizeof *in, cmp_ptr);
		for (int b = a + 1; ok && b < g->n_groups; b++) {
			if (!tile_slice_rooted(g, b))
				continue;
			int nb = sim_group_inputs(g, b, other);
			qsort(other, (size_t)nb, sizeof *other, cmp_ptr);
			if (nb != na || memcmp(in, other, (size_t)na * sizeof *in))
				continue;
			redirect_reps(g, b, a, NULL);
			ok = absorb(g, a, b);
		}
	}
	return ok;
}

/*
 * Is member i of representative group id (marked by sim_group_mark, which
 * gave gen) written to HBM: the computation's root, or read from HBM by a
 * live user outside id or by a recomputed one (a copy in id, and in the
 * other groups that recompute it, which read i from HBM)? A member id owns
 * (grp[i]: id, or a group merged into id) is held by id alone, so every
 * live user outside id reads it. One it does not own is a copy:
 * recomputed (G_MULTI), or a constant-derived value (G_NONE); a copy is
 * held by every group that holds one of its users (sim_grouping_collect
 * takes it in through that user), and every live user of a recomputed one
 * is in a group (the rules recompute only what no user needs in memory),
 * so no user reads a copy from HBM. Known wrong: a recomputed user whose
 * every holder is in id (two reduces that recompute it, both merged
 * into id) makes i an output it need not be.
 */
bool sim_group_output(const struct grouping *g, int gen, int i)
{
	if (g->c->root == g->c->instrs[i])
		return true;
	if (g->grp[i] < 0)
		return false;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		int u = g->users[k];
		if (g->live[u] && (g->stamp[2 * u] != gen || g->grp[u] == G_MULTI))
			return true;
	}
	return false;
}

/* The scratch of sim_group_cyclic for n_instrs instructions (false: out
 * of memory; sim_cycle_scratch_free it in any case). */
bool sim_cycle_scratch_init(struct cycle_scratch *cy, int n_instrs)
{
	size_t n = (size_t)(n_instrs > 0 ? n_instrs : 1);
	cy->stamp = ts_calloc(n, sizeof *cy->stamp);
	cy->seen = ts_calloc(n, sizeof *cy->seen);
	cy->tag = ts_calloc(n, sizeof *cy->tag);
	cy->stack = ts_malloc(2 * n * sizeof *cy->stack);
	cy->gen = 0;
	cy->tag_gen = 0;
	cy->n = (int)n;
	cy->base = NULL;
	cy->kpos = cy->at = NULL;
	cy->lo = 0;
	return cy->stamp && cy->seen && cy->tag && cy->stack;
}

void sim_cycle_scratch_free(struct cycle_scratch *cy)
{
	ts_free(cy->stamp);
	ts_free(cy->seen);
	ts_free(cy->tag);
	ts_free(cy->stack);
	ts_free(cy->kpos);
	ts_free(cy->at);
}

/* The representative group that owns instruction x (computes it, not a
 * recomputed copy), or -1. */
static int rep_of(const struct grouping *g, int x)
{
	return g->grp[x] >= 0 ? g->g_rep[g->grp[x]] : -1;
}

/* One step of sim_group_cyclic's walk: instruction x is read from outside
 * the group that holds it. True when group id owns it (a cycle). Else an
 * instruction in no group (a parameter, a value recomputed in each user)
 * is followed through its operands, and a group that owns x is followed
 * whole (pushed as -1 - its id), once per walk (seen, at its root). */
static bool cycle_visit(const struct grouping *g, int id, int x,
			struct cycle_scratch *cy, int gen, int *top)
{
	if (x < 0 || cy->stamp[x] == gen)
		return false;
	cy->stamp[x] = gen;
	int r = rep_of(g, x);
	if (r == id)
		return true;
	if (cy->kpos && cy->kpos[r < 0 ? x : g->g_root[r]] < cy->lo)
		return false; /* placed before the kernels merged: reads none */
	if (r < 0)
		cy->stack[(*top)++] = x;
	else if (cy->seen[g->g_root[r]] != gen) {
		cy->seen[g->g_root[r]] = gen;
		cy->stack[(*top)++] = -1 - r;
	}
	return false;
}

/*
 * Does representative group id read, through instructions and kernels
 * outside it, a value that depends on a member it owns (not one it copies
 * as a recomputed producer)? Then it is no legal kernel: it would both
 * feed and wait for that value. A kernel runs whole, so a value that
 * another group owns is read only once all that group's inputs are ready:
 * the walk follows a group's inputs, not only the operands of the value
 * read (two kernels that each read a value of the other form a cycle that
 * no instruction path shows). Places in the order of instructions prune
 * nothing (a kernel placed wholly before id's members can read one that
 * has a later member reading id); places in a topological order of the
 * kernels do (cy->kpos: a node placed before both kernels id took in
 * reads neither). A group g has not collected (a trial's, by
 * sim_grouping_delta: cy->base is the grouping it differs from) has the
 * members of its namesake there.
 */
bool sim_group_cyclic(const struct grouping *g, int id,
		      struct cycle_scratch *cy)
{
	int gen = ts_next_gen(&cy->gen, cy->stamp, cy->seen, (size_t)cy->n);
	int top = 0;
	cy->seen[g->g_root[id]] = gen;
	cy->stack[top++] = -1 - id;
	while (top > 0) {
		int at = cy->stack[--top];
		if (at >= 0) {
			for (int j = g->ooff[at]; j < g->ooff[at + 1]; j++)
				if (cycle_visit(g, id, g->ops[j], cy, gen,
						&top))
					return true;
			continue;
		}
		const int *mem;
		int r = -1 - at, n_mem = sim_group_members(g, r, &mem);
		if (n_mem == 0 && cy->base && cy->base->g_rep[r] >= 0)
			n_mem = sim_group_members(cy->base, cy->base->g_rep[r],
						  &mem);
		int tag = ts_next_gen(&cy->tag_gen, cy->tag, NULL,
				      (size_t)cy->n);
		for (int q = 0; q < n_mem; q++)
			cy->tag[mem[q]] = tag;
		for (int q = 0; q < n_mem; q++)
			for (int j = g->ooff[mem[q]]; j < g->ooff[mem[q] + 1];
			     j++) {
				int x = g->ops[j];
				if (x >= 0 && cy->tag[x] != tag &&
				    cycle_visit(g, id, x, cy, gen, &top))
					return true;
			}
	}
	return false;
}

/* Does group id hold a dot or convolution (its core op, g_core_at)? */
static bool holds_contraction(const struct grouping *g, int id)
{
	return g->g_core_at[id] >= 0 &&
	       (g->opk[g->order[g->g_core_at[id]]] & OPK_CONTRACTION);
}

/* The representative group that owns value v of this computation, or
 * -1 (rep_of). */
static int owner_of(const struct grouping *g, const struct ir_instr *v)
{
	return v->parent == g->c ? rep_of(g, v->index) : -1;
}

/* Is group id a representative rooted at a dynamic-update-slice
 * (merge_updates)? */
static bool update_rooted(const struct grouping *g, int id)
{
	const struct ir_instr *r = g->c->instrs[g->g_root[id]];
	return g->g_rep[id] == id && r->op == IR_OP_DYNAMIC_UPDATE_SLICE &&
	       r->n_operands >= 3;
}

/* Whether instruction u is computed in representative group id (id <
 * 0: in an update kernel, update_rooted): a member of it, or, recomputed
 * in its users' kernels (G_MULTI), in one of those, followed to their
 * end, each instruction once (g->stamp's odd slots; stack: room for
 * g->n). */
static bool computed_in(const struct grouping *g, int u, int id, int *stack)
{
	int *mark = g->stamp;
	int gen = ts_next_gen(&mark[2 * (size_t)g->n], mark, NULL,
			      2 * (size_t)g->n);
	int sp = 0;
	stack[sp++] = u;
	mark[2 * u + 1] = gen;
	while (sp > 0) {
		int x = stack[--sp];
		if (g->grp[x] >= 0) {
			int h = g->g_rep[g->grp[x]];
			if (id >= 0 ? h == id : update_rooted(g, h))
				return true;
			continue;
		}
		for (int k = g->uoff[x];
		     g->grp[x] == G_MULTI && k < g->uoff[x + 1]; k++) {
			int w = g->users[k];
			if (g->live[w] && mark[2 * w + 1] != gen) {
				mark[2 * w + 1] = gen;
				stack[sp++] = w;
			}
		}
	}
	return false;
}

/* Is group id a representative loop kernel that merge_loops merges: no
 * core, rooted at a loop op, an array, not made a kernel of its own by a
 * policy's decision (SIM_WHY_POLICY: the none policy's every op; the
 * decision as this grouping made it, not the search's force array, which
 * changes between trials) nor as a gather's reshaped result
 * (SIM_WHY_GATHER_RESHAPE)? */
static bool loop_rooted(const struct grouping *g, int id)
{
	if (id < 0 || g->g_rep[id] != id || g->g_core_at[id] >= 0)
		return false;
	int r = g->g_root[id];
	return g->c->instrs[r]->shape.rank > 0 && g->why[r] != SIM_WHY_POLICY &&
	       g->why[r] != SIM_WHY_GATHER_RESHAPE &&
	       (class_at(g, r) == FC_CHEAP || class_at(g, r) == FC_EXPENSIVE);
}

/* Are representative groups a and b merge_loops' pair: a loop kernel and
 * another of the same output dims, or an update kernel (update_rooted)
 * whose window has as many elements as a's output (the value it saves,
 * through a bitcast)? */
static bool loop_pair(const struct grouping *g, int a, int b)
{
	if (a == b || !loop_rooted(g, a))
		return false;
	const struct ir_shape *s = &g->c->instrs[g->g_root[a]]->shape;
	if (b >= 0 && update_rooted(g, b))
		return ir_shape_elems(s) ==
		       ir_shape_elems(&g->c->instrs[g->g_root[b]]->operands[1]->shape);
	return loop_rooted(g, b) &&
	       ir_shape_equal_dims(s, &g->c->instrs[g->g_root[b]]->shape);
}

/* Does group b (by ownership) hold an in-place update whose update is
 * value v, or a bitcast or reshape of it: the kernel that saves v into
 * its stack? */
static bool saves(const struct grouping *g, int b, int v)
{
	for (int k = g->uoff[v]; k < g->uoff[v + 1]; k++) {
		int u = g->users[k];
		const struct ir_instr *in = g->c->instrs[u];
		if ((in->op == IR_OP_BITCAST || in->op == IR_OP_RESHAPE) &&
		    saves(g, b, u))
			return true;
		if (in->op == IR_OP_DYNAMIC_UPDATE_SLICE && in->n_operands >= 2 &&
		    in->operands[1] == g->c->instrs[v] && g->grp[u] >= 0 &&
		    g->g_rep[g->grp[u]] == b)
			return true;
	}
	return false;
}

/* May merge_loops join loop kernel a, which owns value v, into kernel b
 * that reads it: a pair (loop_pair), b's users of v (the ones it owns: a
 * recomputed copy reads v as its holders do) each taking it once, and no
 * reader of v placed before b's root owned by a kernel merge_loops never
 * merges (neither a loop nor an update kernel: read_between refuses the
 * pair whatever joins a or b first), unless b is the update that saves v
 * into its stack (saves; merge_loops then skips read_between too): XLA's
 * bitcast_dynamic-update-slice fusions compute the activation they save,
 * which the layer's dots read before (data/compiled: the no-remat
 * decoders' residual sums and attention probabilities, v5e/vit_s's
 * activations; fusions reproduced exactly unchanged at 2,889, within 5%
 * 43 -> 44, v5e/vit_s 1.234 -> 1.147, v4/decoder_s_noremat 1.050 ->
 * 1.008; an update merely reading v, as another may, 2,877)? Read off
 * ownership (grp, g_rep), not
 * member lists, so that a trial's grouping answers for the groups it did
 * not collect too (sim_group_merges); the order test, and read_between's
 * for readers that a chain of merges can take into b, are merge_loops'
 * alone. */
static bool loop_joins(const struct grouping *g, int a, int b, int v)
{
	if (!loop_pair(g, a, b))
		return false;
	for (int k = g->uoff[v]; k < g->uoff[v + 1]; k++) {
		int u = g->users[k];
		if (!g->live[u] || g->grp[u] < 0)
			continue;
		int h = g->g_rep[g->grp[u]];
		if (h == b ? !takes_once(g, u, v, false)
			   : h != a && g->pos[u] < g->pos[g->g_root[b]] &&
				     !loop_rooted(g, h) && !update_rooted(g, h) &&
				     !saves(g, b, v))
			return false;
	}
	return true;
}

/* The representative group that holds a dot or convolution and computes
 * in (any value it owns: the dot's result, its epilogue, or another value
 * that joined it), or -1. Read off g_core_at, not member lists, so a
 * trial's grouping answers for the groups it did not collect too
 * (grouping_delta.c). */
static int contraction_group_of(const struct grouping *g,
				const struct ir_instr *in)
{
	int id = owner_of(g, in);
	return id >= 0 && holds_contraction(g, id) ? id : -1;
}

/* Do the updates of groups a and b write windows of the same dims at the
 * same offsets (the same index values)? */
static bool same_window(const struct grouping *g, int a, int b)
{
	const struct ir_instr *x = g->c->instrs[g->g_root[a]];
	const struct ir_instr *y = g->c->instrs[g->g_root[b]];
	if (x->n_operands != y->n_operands ||
	    !ir_shape_equal_dims(&x->operands[1]->shape, &y->operands[1]->shape))
		return false;
	for (int j = 2; j < x->n_operands; j++)
		if (x->operands[j] != y->operands[j])
			return false;
	return true;
}

/* May merge_loops join loop kernel a into kernel b, which holds a user of
 * m: a value a owns (loop_joins), or a copy recomputed in b of what a
 * owns, whose operands b reads, followed through copies of copies
 * `depth` deep (below that, loop_pair alone: a trial then rebuilt whole,
 * never a merge missed)? */
static bool loop_reads(const struct grouping *g, int a, int b, int m,
		       int depth)
{
	if (!loop_pair(g, a, b))
		return false;
	if (g->grp[m] >= 0)
		return owner_of(g, g->c->instrs[m]) == a && loop_joins(g, a, b, m);
	if (depth == 0)
		return true;
	for (int j = g->ooff[m]; j < g->ooff[m + 1]; j++)
		if (g->ops[j] >= 0 && g->grp[g->ops[j]] != G_NONE &&
		    loop_reads(g, a, b, g->ops[j], depth - 1))
			return true;
	return false;
}

/* Is value v, which group e owns, read before group l's root by a kernel
 * merge_shared never merges (neither reduce-rooted, sim_group_sibling,
 * nor a loop kernel, loop_rooted), so that read_between refuses the pair
 * whatever either joins first? By ownership, as a trial's grouping can
 * answer it. */
static bool read_for_good(const struct grouping *g, int v, int e, int l)
{
	for (int k = g->uoff[v]; k < g->uoff[v + 1]; k++) {
		int u = g->users[k];
		if (!g->live[u] || g->grp[u] < 0)
			continue;
		int h = g->g_rep[g->grp[u]];
		if (h != e && h != l && g->pos[u] < g->pos[g->g_root[l]] &&
		    h >= 0 && !sim_group_sibling(g, h) && !loop_rooted(g, h))
			return true;
	}
	return false;
}

/* The dims merge_shared compares for group id: its reduce's operand's
 * when reduce-rooted, else its root's (a loop kernel). */
static const struct ir_shape *shared_dims(const struct grouping *g, int id)
{
	const struct ir_instr *r = g->c->instrs[g->g_root[id]];
	return sim_group_sibling(g, id) ? &r->operands[0]->shape : &r->shape;
}

/* Would merge_shared consider group id with input v: a value of this
 * computation, not constant-derived, of at least as many elements as
 * shared_dims (an array it reads whole; known wrong: two reduces of
 * different slices of one stacked array pass too)? */
static bool shares_whole(const struct grouping *g, int id,
			 const struct ir_instr *v)
{
	return v->parent == g->c && !g->cd[v->index] &&
	       ir_shape_elems(&v->shape) >= ir_shape_elems(shared_dims(g, id));
}

/* The representative groups other than id that hold a reader of v
 * (owned, or a copy recomputed there: followed through recomputed users)
 * and whose shared_dims are id's, reduce-rooted ones and loop kernels
 * (loop_rooted), into out[] (a group may come more than once); returns
 * how many, at most max. merge_shared, from a reduce group, pairs it with
 * either; for a loop kernel, sim_group_merges counts loop kernels too (a
 * reduce group that takes one in shares the other's arrays). Marks
 * stamp[2u + 1] with gen; stack: room for g->n. */
static int shared_readers(const struct grouping *g, int id, int v, int gen,
			  int *stack, int *out, int max)
{
	const struct ir_shape *s = shared_dims(g, id);
	int sp = 0, n = 0;
	stack[sp++] = v;
	while (sp > 0 && n < max) {
		int x = stack[--sp];
		for (int k = g->uoff[x]; k < g->uoff[x + 1] && n < max; k++) {
			int u = g->users[k], gu = g->grp[u];
			if (!g->live[u] || g->stamp[2 * u + 1] == gen)
				continue;
			g->stamp[2 * u + 1] = gen;
			if (gu == G_MULTI) {
				stack[sp++] = u;
				continue;
			}
			int c = gu >= 0 ? g->g_rep[gu] : -1;
			if (c >= 0 && c != id &&
			    (sim_group_sibling(g, c) || loop_rooted(g, c)) &&
			    ir_shape_equal_dims(shared_dims(g, c), s))
				out[n++] = c;
		}
	}
	return n;
}

/* Whether merge_slices, merge_outputs, merge_updates, merge_loops,
 * merge_epilogues, merge_shared or place_continuations may join group id
 * (a representative) and another, for a trial's grouping
 * (grouping_delta.c) to say when it does not follow: id absorbed a group
 * (a sibling, reduces of its output, updates at its offsets, loop
 * kernels), or id is rooted at an update another update group writes at
 * the same offsets (merged or not: a cycle undoes it), or, merging
 * nothing yet, id is reduce-rooted and reads a contraction group's value
 * of its reduce's dims, or id is reduce-rooted or a loop kernel and reads
 * an array whole that a reduce or loop kernel of its shared_dims reads
 * too (shared_readers), or id is a loop or update kernel that reads a
 * value another may join it with (loop_joins), or id owns a contraction
 * or is a loop kernel and a value it owns is read by a reduce-rooted
 * group or a kernel it may join outside it (directly, or through
 * producers recomputed there: loop_reads), or id is rooted at a dot whose
 * users may be its epilogue and one is computed in an update kernel, or
 * id is an update kernel without a core that reads a dot group's result
 * (merge_epilogues), or id holds a chain's
 * continuation, or a contraction where c holds one, or id is rooted at a
 * slice that reads whole tiles (merge_slices). in: room for g->n;
 * stack: for g->n. */
bool sim_group_merges(const struct grouping *g, int id,
		      const struct ir_instr **in, int *stack)
{
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	bool dot = false;
	for (int q = 0; q < n_mem; q++) {
		int m = mem[q];
		if (g->grp[m] < 0 || g->g_rep[g->grp[m]] != id)
			continue; /* a copy */
		if (g->grp[m] != id || (g->opk[m] & OPK_CONTINUATION))
			return true;
		dot = dot || (g->opk[m] & OPK_CONTRACTION);
	}
	if ((dot && g->continues) || tile_slice_rooted(g, id))
		return true; /* place_continuations or merge_slices may join */
	for (int b = 0; update_rooted(g, id) && b < g->n_groups; b++)
		if (b != id && update_rooted(g, b) && same_window(g, id, b))
			return true; /* merge_updates joins, or tried to join, them */
	if (sim_group_sibling(g, id) || loop_rooted(g, id)) {
		const struct ir_shape *s = shared_dims(g, id);
		int n_in = sim_group_inputs(g, id, in);
		for (int q = 0; sim_group_sibling(g, id) && q < n_in; q++)
			if (ir_shape_equal_dims(&in[q]->shape, s) &&
			    contraction_group_of(g, in[q]) >= 0)
				return true;
		/* a reduce group or a loop kernel that shares an array with
		 * id, unless the earlier's value is read before the later's
		 * root by a kernel merge_shared never merges (read_for_good:
		 * read_between refuses the pair whatever joins either
		 * first); up to 8 of them,
		 * more: may merge */
		enum { MAX_SHARED = 8 };
		int cand[MAX_SHARED], gen = sim_group_mark(g, id);
		for (int q = 0; q < n_in; q++) {
			int n = shares_whole(g, id, in[q])
					? shared_readers(g, id, in[q]->index, gen,
							 stack, cand, MAX_SHARED)
					: 0;
			if (n == MAX_SHARED)
				return true;
			for (int k = 0; k < n; k++) {
				int c = cand[k];
				bool blocked = false;
				if (g->pos[g->g_root[id]] < g->pos[g->g_root[c]]) {
					for (int j = 0; j < n_mem && !blocked; j++)
						blocked = g->grp[mem[j]] >= 0 &&
							  g->g_rep[g->grp[mem[j]]] == id &&
							  read_for_good(g, mem[j], id, c);
				} else {
					blocked = read_for_good(g, g->g_root[c], c, id);
				}
				if (!blocked)
					return true;
			}
		}
	}
	/* merge_epilogues: a group rooted at a dot whose users may all be
	 * in its output fusion, one of them in an update kernel, or an
	 * update kernel without a core that reads a dot group's result */
	int r = g->g_root[id];
	if ((g->opk[r] & OPK_CONTRACTION) && epilogue_users(g, r) &&
	    !(g->force && g->force[r] == SIM_FUSE_OWN)) {
		for (int k = g->uoff[r]; k < g->uoff[r + 1]; k++)
			if (g->live[g->users[k]] &&
			    computed_in(g, g->users[k], -1, stack))
				return true;
	}
	for (int q = 0; update_rooted(g, id) && g->g_core_at[id] < 0 &&
			q < n_mem;
	     q++)
		for (int j = g->ooff[mem[q]]; j < g->ooff[mem[q] + 1]; j++) {
			int o = g->ops[j];
			if (o >= 0 && g->grp[o] >= 0 &&
			    g->g_root[g->g_rep[g->grp[o]]] == o &&
			    (g->opk[o] & OPK_CONTRACTION))
				return true;
		}
	bool loop = loop_rooted(g, id);
	bool takes = loop || update_rooted(g, id);
	for (int q = 0, n_in = takes ? sim_group_inputs(g, id, in) : 0; q < n_in;
	     q++)
		if (owner_of(g, in[q]) >= 0 &&
		    loop_joins(g, owner_of(g, in[q]), id, in[q]->index))
			return true;
	if (!dot && !loop)
		return false;
	/* users outside id of what it owns, and through recomputed ones the
	 * members of the groups holding them (stamp[2u + 1]: taken) */
	int gen = sim_group_mark(g, id), sp = 0;
	for (int q = 0; q < n_mem; q++)
		if (g->grp[mem[q]] == id)
			stack[sp++] = mem[q];
	while (sp > 0) {
		int m = stack[--sp];
		for (int k = g->uoff[m]; k < g->uoff[m + 1]; k++) {
			int u = g->users[k], gu = g->grp[u];
			if (!g->live[u] || g->stamp[2 * u + 1] == gen ||
			    (gu != G_MULTI && g->stamp[2 * u] == gen))
				continue;
			g->stamp[2 * u + 1] = gen;
			if (gu == G_MULTI)
				stack[sp++] = u;
			else if (gu >= 0 &&
				 ((dot && (g->opk[g->g_root[gu]] & OPK_REDUCE)) ||
				  (loop && loop_reads(g, id, g->g_rep[gu], m, 8))))
				return true;
		}
	}
	return false;
}

/* Does group r read a reduce that group id owns? (A reduce of a value
 * broadcast back over it, the softmax's sum after its max, needs the
 * whole reduce first: no one kernel computes both in one pass.) */
static bool reads_reduce_of(const struct grouping *g,
			    const struct ir_instr *const *in, int n_in, int id)
{
	for (int q = 0; q < n_in; q++)
		if (in[q]->op == IR_OP_REDUCE && contraction_group_of(g, in[q]) == id)
			return true;
	return false;
}

/* The node of instruction x in the graph of kernels: its representative
 * group's root when a group owns it, else x itself (an instruction in no
 * group, or recomputed in each user). */
static int kernel_node(const struct grouping *g, int x)
{
	int r = rep_of(g, x);
	return r >= 0 ? g->g_root[r] : x;
}

/* The inputs of node v of the graph of kernels into e (NULL: counted
 * only): for a group's root, the nodes of its members' operands outside
 * it (tag: a member mark, gen_tag a new generation); for another
 * instruction, its operands'. Returns how many. */
static int kernel_inputs(const struct grouping *g, int v, int *tag,
			 int *gen_tag, int *e)
{
	const int *mem = &v;
	int n_mem = 1, n = 0;
	int r = rep_of(g, v);
	if (r >= 0)
		n_mem = sim_group_members(g, r, &mem);
	int t = ts_next_gen(gen_tag, tag, NULL, (size_t)g->n);
	for (int q = 0; r >= 0 && q < n_mem; q++)
		tag[mem[q]] = t;
	for (int q = 0; q < n_mem; q++)
		for (int j = g->ooff[mem[q]]; j < g->ooff[mem[q] + 1]; j++) {
			int x = g->ops[j];
			if (x < 0 || (r >= 0 && tag[x] == t))
				continue;
			if (e)
				e[n] = kernel_node(g, x);
			n++;
		}
	return n;
}

/*
 * The strongly connected components of the graph of kernels (each
 * representative group a node at its root, read whole; each instruction
 * in no group a node): Tarjan's, iteratively. A group in a component of
 * more than one node lies on a cycle (sim_group_cyclic of each, in one
 * pass): cyclic[] (by group id, zeroed; or NULL). Components come out
 * inputs first, so the nodes in that order are a topological order of
 * the graph when *acyclic: into order[] (room for g->n; or NULL), *n_order
 * of them. False: out of memory.
 */
static bool kernel_components(const struct grouping *g, bool *cyclic,
			      int *order, int *n_order, bool *acyclic)
{
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	int *off = ts_calloc(n + 1, sizeof *off);
	int *tag = ts_calloc(n, sizeof *tag);
	int *index = ts_malloc(n * sizeof *index);
	int *low = ts_malloc(n * sizeof *low);
	int *comp = ts_malloc(n * sizeof *comp);
	int *frame = ts_malloc(n * sizeof *frame);
	int *cur = ts_malloc(n * sizeof *cur), *edges = NULL;
	bool *on = ts_calloc(n, sizeof *on);
	int gen_tag = 0;
	bool ok = off && tag && index && low && comp && frame && cur && on;
	for (int v = 0; ok && v < g->n; v++) {
		bool node = kernel_node(g, v) == v;
		int n_in = node ? kernel_inputs(g, v, tag, &gen_tag, NULL) : 0;
		off[v + 1] = off[v] + n_in;
	}
	ok = ok && (edges = ts_malloc(((size_t)off[g->n] + 1) * sizeof *edges));
	for (int v = 0; ok && v < g->n; v++) {
		index[v] = -1;
		if (kernel_node(g, v) == v)
			kernel_inputs(g, v, tag, &gen_tag, edges + off[v]);
	}
	int next = 0, n_comp = 0;
	*n_order = 0;
	*acyclic = true;
	for (int s = 0; ok && s < g->n; s++) {
		if (kernel_node(g, s) != s || index[s] >= 0)
			continue;
		int depth = 0;
		frame[depth++] = s;
		cur[s] = off[s];
		index[s] = low[s] = next++;
		comp[n_comp++] = s;
		on[s] = true;
		while (depth > 0) {
			int v = frame[depth - 1];
			if (cur[v] < off[v + 1]) {
				int w = edges[cur[v]++];
				if (index[w] < 0) {
					index[w] = low[w] = next++;
					comp[n_comp++] = w;
					on[w] = true;
					cur[w] = off[w];
					frame[depth++] = w;
				} else if (on[w] && index[w] < low[v]) {
					low[v] = index[w];
				}
				continue;
			}
			depth--;
			if (depth > 0 && low[v] < low[frame[depth - 1]])
				low[frame[depth - 1]] = low[v];
			if (low[v] != index[v])
				continue;
			int start = n_comp;
			while (comp[start - 1] != v)
				start--;
			start--;
			*acyclic = *acyclic && n_comp - start == 1;
			for (int q = start; q < n_comp; q++) {
				int x = comp[q];
				int r = rep_of(g, x);
				on[x] = false;
				if (cyclic && n_comp - start > 1 && r >= 0)
					cyclic[r] = true;
				if (order)
					order[(*n_order)++] = x;
			}
			n_comp = start;
		}
	}
	ts_free(off);
	ts_free(tag);
	ts_free(index);
	ts_free(low);
	ts_free(comp);
	ts_free(frame);
	ts_free(cur);
	ts_free(on);
	ts_free(edges);
	return ok;
}

/* A topological order of the graph of kernels (kernel_components) in cy
 * (kpos, at), which join_unless_cyclic keeps as groups merge; none when
 * the graph has a cycle already. False: out of memory. */
static bool kernel_order(const struct grouping *g, struct cycle_scratch *cy)
{
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	int *at = ts_malloc(n * sizeof *at), n_at = 0;
	bool acyclic;
	if (!at || !kernel_components(g, NULL, at, &n_at, &acyclic)) {
		ts_free(at);
		return false;
	}
	if (!acyclic) {
		ts_free(at);
		return true;
	}
	cy->at = at;
	cy->kpos = ts_malloc(n * sizeof *cy->kpos);
	for (int p = 0; cy->kpos && p < n_at; p++)
		cy->kpos[at[p]] = p;
	return cy->kpos != NULL;
}

/* After group `into` took in the other of the groups at places lo and hi
 * of cy's order of kernels, without a cycle: the nodes between them that
 * sim_group_cyclic's walk reached (what the merged group reads; none reads
 * it, or the walk would have found a cycle), then the merged group, then
 * the other nodes between them (the merged group reads none of them: the
 * walk would have reached it), each run in its old order; place hi is
 * left empty. The order stays topological. */
static void kernel_reorder(const struct grouping *g, struct cycle_scratch *cy,
			   int into, int lo, int hi)
{
	int n_in = 0, n_out = 0, *out = cy->stack;
	for (int p = lo + 1; p < hi; p++) {
		int v = cy->at[p];
		if (v < 0)
			continue;
		if ((rep_of(g, v) >= 0 ? cy->seen[v] : cy->stamp[v]) == cy->gen)
			cy->at[lo + n_in++] = v;
		else
			out[n_out++] = v;
	}
	cy->at[lo + n_in] = g->g_root[into];
	memcpy(cy->at + lo + n_in + 1, out, (size_t)n_out * sizeof *out);
	for (int p = lo + n_in + 1 + n_out; p <= hi; p++)
		cy->at[p] = -1;
	for (int p = lo; p <= lo + n_in + n_out; p++)
		cy->kpos[cy->at[p]] = p;
}

/* Group `from` (and the groups merged into it) joins group `into`,
 * undone when `into` would then be cyclic (sim_group_cyclic: a group
 * whose inputs depend on it, a walk bounded by cy's order of kernels when
 * it keeps one, which then places the merged group); *merged says which.
 * moved: room for g->n_groups. False when memory runs out. */
static bool join_unless_cyclic(struct grouping *g, int into, int from,
			       int *moved, struct cycle_scratch *cy,
			       bool *merged)
{
	TS_ASSERT(g->g_rep[into] == into && g->g_rep[from] == from);
	int start = g->m_start[into], len = g->m_len[into];
	int p_into = cy->kpos ? cy->kpos[g->g_root[into]] : 0;
	int p_from = cy->kpos ? cy->kpos[g->g_root[from]] : 0;
	cy->lo = p_into < p_from ? p_into : p_from;
	int n_moved = redirect_reps(g, from, into, moved);
	bool ok = absorb(g, into, from);
	*merged = ok && !sim_group_cyclic(g, into, cy);
	if (*merged && cy->kpos)
		kernel_reorder(g, cy, into, cy->lo,
			       p_into < p_from ? p_from : p_into);
	if (ok && !*merged) { /* undone */
		g->m_start[into] = start;
		g->m_len[into] = len;
		for (int q = 0; q < n_moved; q++)
			g->g_rep[moved[q]] = from;
	}
	return ok;
}

/*
 * Output multi-output fusion: a reduce-rooted group (with its merged
 * siblings) that reduces, element for element, a value a dot's or
 * convolution's group writes (the dot's result, its epilogue, or another
 * value that joined that group) joins that group, which writes both: XLA's
 * multi-output fusion of a reduce into the kernel of its operand's
 * producer. XLA's TPU compiler (data/compiled, libtpu 0.0.42) makes a
 * convolution's kOutput fusion hold the reduces of its result: batch-norm
 * statistics (sum and sum of squares of the convolution, 29 fusions in
 * v5e/resnet_s), a dense layer's bias gradient (mlp_s), the softmax's max
 * of the attention scores and the sum of its backward (each decoder).
 * Element for element: the reduce's operand has the dims of the value it
 * reads (known wrong: a transpose of a square value passes). Of several
 * such values, the one that comes last in the order whose group the merge
 * leaves without a cycle (sim_group_cyclic: a group whose inputs depend on
 * it), and never one whose group holds a reduce this group reads
 * (reads_reduce_of); with none, the group stays as it is.
 */
static bool merge_outputs(struct grouping *g, const struct ir_instr **in,
			  struct cycle_scratch *cy)
{
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	int *cand = ts_malloc(((size_t)g->n + 1) * sizeof *cand); /* inputs */
	bool ok = moved && cand;
	for (int r = 0; ok && r < g->n_groups; r++) {
		if (!sim_group_sibling(g, r))
			continue;
		const struct ir_shape *s =
			&g->c->instrs[g->g_root[r]]->operands[0]->shape;
		int n_in = sim_group_inputs(g, r, in), n_cand = 0;
		/* the places in the order of the values it reduces element for
		 * element that contraction groups write, tried latest first */
		for (int q = 0; q < n_in; q++)
			if (ir_shape_equal_dims(&in[q]->shape, s) &&
			    contraction_group_of(g, in[q]) >= 0)
				cand[n_cand++] = g->pos[in[q]->index];
		sort_ints(cand, n_cand);
		bool merged = false;
		for (int k = n_cand - 1; ok && !merged && k >= 0; k--) {
			int into = contraction_group_of(
				g, g->c->instrs[g->order[cand[k]]]);
			if (!reads_reduce_of(g, in, n_in, into))
				ok = join_unless_cyclic(g, into, r, moved, cy,
							&merged);
		}
	}
	ts_free(moved);
	ts_free(cand);
	return ok;
}

/*
 * Output fusion after the merges: a group rooted at its dot or
 * convolution whose result's live users are elementwise-like and all
 * computed in one update kernel without a core (members of it, or
 * recomputed there among other kernels: computed_in), which only the
 * merges above made one kernel, joins that kernel, which then writes the
 * result for the other kernels: XLA's TPU compiler makes v5e/moe_s's
 * up-projection, its GELU and the six dynamic-update-slices that save the
 * GELU's parts for the backward one kOutput fusion
 * (bitcast_dynamic-update-slice_fusion.20, its MXU work beside 252 MB of
 * writes), the down-projection reading the GELU; the saves are six
 * kernels when the dot is decided (merge_updates joins them). Not a
 * dot a policy made a kernel of its own (SIM_FUSE_OWN); undone where
 * cyclic (join_unless_cyclic).
 */
static bool merge_epilogues(struct grouping *g, struct cycle_scratch *cy)
{
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	int *stack = ts_malloc(((size_t)g->n + 1) * sizeof *stack);
	bool ok = moved && stack;
	for (int d = 0; ok && d < g->n_groups; d++) {
		int r = g->g_root[d], into = -1;
		if (g->g_rep[d] != d || !(g->opk[r] & OPK_CONTRACTION) ||
		    (g->force && g->force[r] == SIM_FUSE_OWN))
			continue;
		for (int k = g->uoff[r]; into < 0 && k < g->uoff[r + 1]; k++)
			if (g->live[g->users[k]] && g->grp[g->users[k]] >= 0)
				into = g->g_rep[g->grp[g->users[k]]];
		bool all = into >= 0 && into != d && g->g_core_at[into] < 0 &&
			   update_rooted(g, into) && epilogue_users(g, r);
		for (int k = g->uoff[r]; all && k < g->uoff[r + 1]; k++)
			all = !g->live[g->users[k]] ||
			      computed_in(g, g->users[k], into, stack);
		if (!all)
			continue;
		bool merged = false;
		ok = join_unless_cyclic(g, into, d, moved, cy, &merged);
		if (merged)
			g->g_core_at[into] = g->g_core_at[d];
	}
	ts_free(stack);
	ts_free(moved);
	return ok;
}

/* Whether group id holds a reader of value v other than `except`: an
 * in-place update's buffer must have no other reader in its kernel. */
static bool holds_reader(const struct grouping *g, int id,
			 const struct ir_instr *v, const struct ir_instr *except)
{
	if (v->parent != g->c)
		return false;
	for (int k = g->uoff[v->index]; k < g->uoff[v->index + 1]; k++) {
		int u = g->users[k];
		if (g->c->instrs[u] != except && sim_group_member(g, id, u))
			return true;
	}
	return false;
}

/* Whether a value group `early` owns (not a recomputed copy) is read
 * outside it and group `late` before late's root: the merged kernel, run
 * where late's root is, would come after that reader. */
static bool read_between(const struct grouping *g, int early, int late)
{
	const int *mem;
	int n_mem = sim_group_members(g, early, &mem);
	for (int q = 0; q < n_mem; q++)
		for (int k = g->uoff[mem[q]];
		     g->grp[mem[q]] >= 0 && g->g_rep[g->grp[mem[q]]] == early &&
		     k < g->uoff[mem[q] + 1];
		     k++) {
			int u = g->users[k];
			if (g->live[u] && g->pos[u] < g->pos[g->g_root[late]] &&
			    !sim_group_member(g, early, u) &&
			    !sim_group_member(g, late, u))
				return true;
		}
	return false;
}

/*
 * Update multi-output fusion: groups rooted at a dynamic-update-slice
 * that write windows of the same dims at the same offsets (a scan saving
 * one layer's activations into their stacks) merge into one, which then
 * writes every stack, computing the updates together: XLA's TPU compiler
 * makes one bitcast_dynamic-update-slice fusion of them (data/compiled:
 * six stacks in v5e/vit_s's, with the activations' computation). The
 * earlier joins the later (its kernel runs where the later's root is),
 * unless something else reads a value of the earlier before that; never
 * two updates of one buffer, nor one whose kernel would read the other's
 * buffer (an in-place update's buffer has no other reader in its kernel,
 * as in XLA's), nor an update written from a copy that permutes its
 * layout (data/compiled: all 11 such, the decode steps' K and V cache
 * writes and v5e/vit_s's 7, are fusions of their own, where 62 fusions
 * hold two or more other updates); undone where the merged group would
 * be cyclic (sim_group_cyclic).
 */
/* Whether update u's window is a copy that permutes the layout (through
 * bitcasts): such an update joins no other (merge_updates). */
static bool relaid_update(const struct ir_instr *u)
{
	const struct ir_instr *w = u->n_operands > 1 ? u->operands[1] : NULL;
	while (w && w->op == IR_OP_BITCAST && w->n_operands == 1)
		w = w->operands[0];
	return w && w->op == IR_OP_COPY && permuting_copy(w);
}

static bool merge_updates(struct grouping *g, struct cycle_scratch *cy)
{
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	int *upd = ts_malloc(((size_t)g->n_groups + 1) * sizeof *upd);
	bool ok = moved && upd;
	int n_upd = 0; /* the update kernels, in id order */
	for (int id = 0; ok && id < g->n_groups; id++)
		if (update_rooted(g, id))
			upd[n_upd++] = id;
	for (int p = 0; ok && p < n_upd; p++) {
		int a = upd[p];
		for (int q = p + 1; ok && update_rooted(g, a) && q < n_upd;
		     q++) {
			int b = upd[q];
			if (!update_rooted(g, b) || !same_window(g, a, b))
				continue;
			const struct ir_instr *ra = g->c->instrs[g->g_root[a]];
			const struct ir_instr *rb = g->c->instrs[g->g_root[b]];
			bool a_late = g->pos[g->g_root[a]] > g->pos[g->g_root[b]];
			int late = a_late ? a : b, early = a_late ? b : a;
			if (ra->operands[0] == rb->operands[0] ||
			    relaid_update(ra) || relaid_update(rb) ||
			    holds_reader(g, a, rb->operands[0], rb) ||
			    holds_reader(g, b, ra->operands[0], ra) ||
			    read_between(g, early, late))
				continue;
			bool merged;
			ok = join_unless_cyclic(g, late, early, moved, cy,
						&merged);
		}
	}
	ts_free(moved);
	ts_free(upd);
	return ok;
}

/* Does group id own only loop ops (no gather its reshape took in:
 * gather_into)? From its member list: for merge_loops, whose groups are
 * all collected (sim_group_merges asks loop_rooted alone, a superset). */
static bool owns_loop_ops(const struct grouping *g, int id)
{
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	for (int q = 0; q < n_mem; q++) {
		int m = mem[q];
		if (g->grp[m] >= 0 && g->g_rep[g->grp[m]] == id &&
		    class_at(g, m) == FC_ROOT)
			return false;
	}
	return true;
}

/*
 * Loop multi-output fusion: a loop kernel (no reduce, dot or convolution;
 * an array, not a scalar) that reads a value another loop kernel of the
 * same output dims computes, or an update kernel (update_rooted) that
 * saves such a value into its stack (loop_pair), where its users of the
 * value take it once (user_accepts, no reuse), takes that kernel in,
 * which then writes its values for the other readers: XLA's TPU compiler
 * makes one multi-output loop fusion of a batch-norm's per-channel
 * statistics and updates (data/compiled, libtpu 0.0.42: v5e/resnet_s's
 * broadcast_multiply_fusion computes a mean, its square, the variance and
 * its rsqrt, the running averages and the scale's gradient, four outputs
 * of f32[1024]), where the rules above leave a value some kernels
 * broadcast, or an expensive one read by several, in a kernel of its own.
 * Scalars stay apart (a while loop's counter: XLA leaves its copy and add
 * unfused, v3/decoder_m). The later kernel takes the earlier in (its
 * kernel runs where the later's root is), unless a value of the earlier
 * is read before that (read_between); undone where the merged group would
 * be cyclic (sim_group_cyclic), which keeps a layer norm's per-row mean
 * and rsqrt apart (its variance's reduce is between them). On the zoo:
 * v5e/resnet_s's fusions reproduced exactly 108 -> 125 of 167, no
 * module's fewer (docs/COMPILED.md); with update kernels (the no-remat
 * decoders' bitcast_dynamic-update-slice fusions compute the residual sum
 * they save and write it out too), 2,555 -> 2,564, no module's fewer. An
 * update that saves the value it reads (saves) takes its producer in
 * though the value is read before the update's root: the merged kernel
 * is written before that reader (sim_group_order), cycles undone.
 */
static bool merge_loops(struct grouping *g, const struct ir_instr **in,
			struct cycle_scratch *cy)
{
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	bool ok = moved;
	for (int b = 0; ok && b < g->n_groups; b++) {
		/* after a merge, b's inputs again: what the kernel it took in
		 * reads may merge too (a chain of them) */
		bool again = (loop_rooted(g, b) && owns_loop_ops(g, b)) ||
			     update_rooted(g, b);
		while (ok && again) {
			again = false;
			int n_in = sim_group_inputs(g, b, in);
			for (int q = 0; ok && !again && q < n_in; q++) {
				int a = owner_of(g, in[q]);
				if (a < 0 || !loop_joins(g, a, b, in[q]->index) ||
				    g->pos[g->g_root[a]] > g->pos[g->g_root[b]] ||
				    !owns_loop_ops(g, a) ||
				    (!saves(g, b, in[q]->index) &&
				     read_between(g, a, b)))
					continue;
				ok = join_unless_cyclic(g, b, a, moved, cy,
							&again);
			}
		}
	}
	ts_free(moved);
	return ok;
}

/* Does group a read a value group b owns? */
static bool reads_owned(const struct grouping *g, int a, int b,
			const struct ir_instr **in)
{
	int n_in = sim_group_inputs(g, a, in);
	for (int q = 0; q < n_in; q++)
		if (owner_of(g, in[q]) == b)
			return true;
	return false;
}

/*
 * Shared-input multi-output fusion: two reduce-rooted kernels whose
 * reduces read operands of the same dims (over the same dimensions or
 * not), or a reduce-rooted kernel and a loop kernel of its reduce's
 * operand's dims (shared_dims), that both read one array whole
 * (shares_whole: not a small vector they broadcast) merge, reading it
 * once, unless one reads a value of the other (the softmax's sum after
 * its max, its normalise after its sum). XLA's TPU compiler makes one
 * multi_reduce fusion of an RMS norm's two gradients (data/compiled,
 * libtpu 0.0.42: every decoder's multiply_reduce_fusion sums the same
 * product over {0,1} for the scale and over {2} for the rows, on every
 * generation), and one of a residual add written in bf16 with the norm's
 * sum of its squares (v3/decoder_s multiply_reduce_fusion.15): with loop
 * kernels, 2,610 -> 2,644 fusions reproduced exactly, one fewer (v5e/moe_s
 * fusion.301, whose reduce-window cumsum XLA keeps apart from the
 * one-hot convert_multiply_fusion.8 beside it); sharing only a broadcast
 * vector merges kernels XLA keeps apart (+2 fusions reproduced exactly
 * against +60). The later takes the earlier in, unless a value of the
 * earlier is read before that (read_between); undone where cyclic. Known
 * wrong: XLA's reasons for keeping a pair apart (moe_s) are not public.
 */
static bool merge_shared(struct grouping *g, const struct ir_instr **in,
			 const struct ir_instr **other,
			 struct cycle_scratch *cy)
{
	size_t n = (size_t)g->n + 1;
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	int *stack = ts_malloc(n * sizeof *stack);
	int *cand = ts_malloc(n * sizeof *cand);
	bool ok = moved && stack && cand;
	for (int a = 0; ok && a < g->n_groups; a++) {
		/* after a merge, the merged group's readers again */
		int cur = a;
		bool again = sim_group_sibling(g, cur);
		while (ok && again) {
			again = false;
			int n_in = sim_group_inputs(g, cur, in), n_cand = 0;
			int gen = sim_group_mark(g, cur);
			for (int q = 0; q < n_in; q++)
				if (shares_whole(g, cur, in[q]))
					n_cand += shared_readers(
						g, cur, in[q]->index, gen, stack,
						cand + n_cand, g->n - n_cand);
			for (int k = 0; ok && !again && k < n_cand; k++) {
				int c = cand[k];
				if (g->g_rep[c] != c || c == cur ||
				    reads_owned(g, cur, c, other) ||
				    reads_owned(g, c, cur, other))
					continue;
				bool c_late = g->pos[g->g_root[c]] >
					      g->pos[g->g_root[cur]];
				int late = c_late ? c : cur, early = c_late ? cur : c;
				if (read_between(g, early, late))
					continue;
				ok = join_unless_cyclic(g, late, early, moved,
							cy, &again);
				if (again) { /* none after a loop kernel */
					cur = late;
					again = sim_group_sibling(g, cur);
				}
			}
		}
	}
	ts_free(moved);
	ts_free(stack);
	ts_free(cand);
	return ok;
}

/* A chain's continuation (mark_continuations) joins the kernel of the dot or
 * convolution before it in the schedule (a compiled module's order):
 * XLA's async collective fusion moves the collective on in the fusions
 * computed between the chain's start and done (none between: it stays
 * a kernel of its own; data/compiled v5e/vit_s:
 * fusion.442 holds all-gather.85 beside its convolution, 17 such
 * fusions in vit_s and dlrm_s). */
static bool place_continuations(struct grouping *g, struct cycle_scratch *cy)
{
	int *moved = ts_malloc(((size_t)g->n_groups + 1) * sizeof *moved);
	bool ok = moved;
	for (int i = 0; ok && i < g->n; i++) {
		if (g->grp[i] < 0 || !(g->opk[i] & OPK_CONTINUATION))
			continue;
		int into = -1;
		for (int j = i - 1; j >= 0 && into < 0; j--) {
			const struct ir_instr *x = g->c->instrs[j];
			if (x->op == IR_OP_CUSTOM_CALL && sim_chain_start(x) &&
			    sim_chain_channel(x) ==
				    g->c->instrs[i]->attrs.channel_id)
				break; /* none since its chain's start */
			if (g->opk[j] & OPK_CONTRACTION)
				into = rep_of(g, j);
		}
		bool merged;
		if (into >= 0 && into != rep_of(g, i))
			ok = join_unless_cyclic(g, into, rep_of(g, i), moved,
						cy, &merged);
	}
	ts_free(moved);
	return ok;
}

/*
 * A group whose inputs depend on its own members (a cycle between
 * kernels: kernel_components) is no legal fusion: XLA checks for that cycle
 * before it fuses a producer and leaves it unfused. So each such group is
 * dissolved: every member it owns becomes a kernel of its own
 * (SIM_WHY_CYCLE), with the constant-derived values it reads copied in as
 * usual, for the kernel builder and the fusion writer alike. The groups
 * cycled and their merged siblings keep no representative (g_rep -1).
 * None is when the graph had no cycle before the merges (cy keeps an
 * order of kernels: join_unless_cyclic undoes a merge that would make
 * one).
 */
static bool dissolve_cycles(struct grouping *g, struct collect_scratch *cs,
			    const struct cycle_scratch *cy)
{
	if (cy->kpos)
		return true; /* acyclic before merging, and kept so */
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	bool *cyclic = ts_calloc(2 * n, sizeof *cyclic);
	int n_order;
	bool acyclic, any = false;
	bool ok = cyclic && kernel_components(g, cyclic, NULL, &n_order,
					      &acyclic);
	int n_before = g->n_groups;
	for (int id = 0; ok && id < n_before; id++)
		any = any || cyclic[id];
	for (int i = 0; ok && any && i < g->n; i++) {
		int gi = g->grp[i];
		if (gi < 0 || g->g_rep[gi] < 0 || !cyclic[g->g_rep[gi]])
			continue;
		bool core = sim_fuse_class(g, g->c->instrs[i]) == FC_CORE;
		int id = sim_grouping_new(g, i, core);
		g->why[i] = SIM_WHY_CYCLE;
		ok = sim_grouping_collect(g, id, cs);
	}
	for (int id = 0; ok && any && id < n_before; id++)
		if (g->g_rep[id] >= 0 && cyclic[g->g_rep[id]])
			g->g_rep[id] = -1; /* a cyclic group and its siblings */
	ts_free(cyclic);
	return ok;
}

void sim_grouping_free(struct grouping *g)
{
	if (!g->borrowed) {
		ts_free(g->order);
		ts_free(g->uoff);
		ts_free(g->users);
		ts_free(g->ooff);
		ts_free(g->ops);
		ts_free(g->opk);
		ts_free(g->cd);
		ts_free(g->live);
		ts_free(g->fc);
		ts_free(g->pos);
	}
	ts_free(g->grp);
	ts_free(g->reuse);
	ts_free(g->prologue);
	ts_free(g->bcast);
	ts_free(g->why);
	ts_free(g->g_root);
	ts_free(g->g_core_at);
	ts_free(g->g_rep);
	ts_free(g->pool);
	ts_free(g->m_start);
	ts_free(g->m_len);
	ts_free(g->h_off);
	ts_free(g->holders);

	ts_free(g->stamp);
	ts_free(g->sib);
	memset(g, 0, sizeof *g); /* freeing twice is harmless */
}

/* The one live user of i, or -1 (none, or several). */
static int sole_live_user(const struct grouping *g, int i)
{
	int u = -1;
	for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++) {
		if (!g->live[g->users[k]])
			continue;
		if (u >= 0)
			return -1;
		u = g->users[k];
	}
	return u;
}

/* Topological order (operands first) by iterative DFS; stack holds n. */
static void topo_order(struct grouping *g, int *stack, int *next_op)
{
	int n_out = 0;
	bool *done = g->reuse; /* borrowed, cleared below */
	for (int s = 0; s < g->n; s++) {
		if (done[s])
			continue;
		int sp = 0;
		stack[sp++] = s;
		next_op[s] = 0;
		done[s] = true;
		while (sp > 0) {
			int t = stack[sp - 1];
			const struct ir_instr *in = g->c->instrs[t];
			if (next_op[t] < in->n_operands) {
				const struct ir_instr *o =
					in->operands[next_op[t]++];
				if (o->parent == g->c && !done[o->index]) {
					done[o->index] = true;
					next_op[o->index] = 0;
					stack[sp++] = o->index;
				}
			} else {
				g->order[n_out++] = t;
				sp--;
			}
		}
	}
	for (int i = 0; i < g->n; i++)
		done[i] = false;
}

void sim_users_csr(const struct ir_computation *c, int *uoff, int *users,
		   int *fill)
{
	int n = c->n_instrs;
	uoff[0] = 0;
	for (int i = 0; i < n; i++) {
		uoff[i + 1] = uoff[i] + c->instrs[i]->n_users;
		fill[i] = 0;
	}
	for (int i = 0; i < n; i++) {
		const struct ir_instr *in = c->instrs[i];
		for (int j = 0; j < in->n_operands; j++) {
			const struct ir_instr *o = in->operands[j];
			if (o->parent == c && !sim_operand_repeats(in, j))
				users[uoff[o->index] + fill[o->index]++] = i;
		}
	}
}

/* What no decision changes: users (CSR), the topological order, the
 * constant-derived and live marks and the fusion classes of g->c's
 * instructions. */
static enum ts_status grouping_base(struct grouping *g)
{
	const struct ir_computation *c = g->c;
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	size_t n_uses = 1, n_ops = 1;
	for (int i = 0; i < g->n; i++) {
		n_uses += (size_t)c->instrs[i]->n_users;
		n_ops += (size_t)c->instrs[i]->n_operands;
	}
	g->order = ts_malloc(n * sizeof *g->order);
	g->pos = ts_malloc(n * sizeof *g->pos);
	g->uoff = ts_calloc(n + 1, sizeof *g->uoff);
	g->users = ts_malloc(n_uses * sizeof *g->users);
	g->ooff = ts_calloc(n + 1, sizeof *g->ooff);
	g->ops = ts_malloc(n_ops * sizeof *g->ops);
	g->opk = ts_malloc(n);
	g->cd = sim_const_derived(c);
	g->live = ts_calloc(n, sizeof *g->live);
	g->fc = ts_malloc(n);
	int *stack = ts_malloc(n * sizeof *stack);
	int *tmp = ts_calloc(n + 1, sizeof *tmp);
	if (!g->order || !g->pos || !g->uoff || !g->users || !g->ooff || !g->ops ||
	    !g->opk || !g->cd || !g->live || !g->fc || !stack ||
	    !tmp) {
		ts_free(stack);
		ts_free(tmp);
		return TS_ERR_NOMEM;
	}
	/* Operands as indices (CSR) and op kinds, for the walks that each
	 * trial of a fusion search repeats */
	for (int i = 0; i < g->n; i++) {
		const struct ir_instr *in = c->instrs[i];
		g->ooff[i + 1] = g->ooff[i] + in->n_operands;
		for (int j = 0; j < in->n_operands; j++)
			g->ops[g->ooff[i] + j] = sim_index_in(c, in->operands[j]);
		g->opk[i] = (unsigned char)(op_kind(in->op) |
					    (sim_fuse_alone(in) ? OPK_ALONE : 0) |
					    (permuting_copy(in) ? OPK_NO_PRODUCER
								: 0) |
					    size_kind(in));
	}
	sim_users_csr(c, g->uoff, g->users, tmp);
	topo_order(g, stack, tmp);
	for (int k = 0; k < g->n; k++)
		g->pos[g->order[k]] = k;
	for (int i = 0; i < g->n; i++)
		g->fc[i] = (unsigned char)fuse_class_of(g, c->instrs[i]);
	/* Liveness (XLA DCE): from the root and every op with an effect or a
	 * kernel of its own that is not a pure loop/core op. */
	for (int k = g->n - 1; k >= 0; k--) {
		int i = g->order[k];
		const struct ir_instr *in = c->instrs[i];
		enum fuse_class fc = sim_fuse_class(g, in);
		if (in == c->root || fc == FC_CONTROL ||
		    (fc == FC_ROOT && in->op != IR_OP_COPY)) /* a copy is pure */
			g->live[i] = true;
		if (!g->live[i])
			continue;
		for (int j = 0; j < in->n_operands; j++)
			if (in->operands[j]->parent == c)
				g->live[in->operands[j]->index] = true;
	}
	for (int i = 0; i < g->n; i++)
		if (g->live[i] && sliced_twice(g, i))
			g->opk[i] |= OPK_SLICED;
	if (!mark_continuations(g)) {
		ts_free(stack);
		ts_free(tmp);
		return TS_ERR_NOMEM;
	}
	/* Epilogues (operands first): a loop op that is the one live user of
	 * a dot or convolution, or of an epilogue */
	for (int k = 0; k < g->n; k++) {
		int i = g->order[k];
		enum fuse_class fc = class_at(g, i);
		if (!g->live[i] || (fc != FC_CHEAP && fc != FC_EXPENSIVE))
			continue;
		for (int j = g->ooff[i]; j < g->ooff[i + 1]; j++) {
			int o = g->ops[j];
			if (o < 0 ||
			    !(g->opk[o] & (OPK_CONTRACTION | OPK_EPILOGUE)) ||
			    sole_live_user(g, o) != i)
				continue;
			g->opk[i] |= OPK_EPILOGUE;
			break;
		}
	}
	ts_free(stack);
	ts_free(tmp);
	return TS_OK;
}

/* g zeroed for computation c, its decision arrays allocated; what no
 * decision changes worked out (grouping_base), or borrowed from like. */
enum ts_status sim_grouping_init(struct grouping *g,
				 const struct ir_computation *c,
				 const struct grouping *like)
{
	memset(g, 0, sizeof *g);
	g->c = c;
	g->n = c->n_instrs;
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	g->grp = ts_malloc(n * sizeof *g->grp);
	g->reuse = ts_calloc(n, sizeof *g->reuse);
	g->prologue = ts_calloc(n, sizeof *g->prologue);
	g->bcast = ts_calloc(n, sizeof *g->bcast);
	g->why = ts_calloc(n, sizeof *g->why);
	/* groups: at most one per instruction, and as many again when
	 * cyclic groups are dissolved (dissolve_cycles) */
	g->g_root = ts_malloc(2 * n * sizeof *g->g_root);
	g->g_core_at = ts_malloc(2 * n * sizeof *g->g_core_at);
	g->g_rep = ts_malloc(2 * n * sizeof *g->g_rep);
	if (!g->grp || !g->reuse || !g->prologue || !g->bcast || !g->why ||
	    !g->g_root || !g->g_core_at || !g->g_rep)
		return TS_ERR_NOMEM;
	if (!like)
		return grouping_base(g);
	TS_ASSERT(like->c == c);
	g->order = like->order;
	g->pos = like->pos;
	g->uoff = like->uoff;
	g->users = like->users;
	g->ooff = like->ooff;
	g->ops = like->ops;
	g->opk = like->opk;
	g->continues = like->continues;
	g->cd = like->cd;
	g->live = like->live;
	g->fc = like->fc;
	g->borrowed = true;
	return TS_OK;
}

enum ts_status sim_grouping_build(struct grouping *g,
				  const struct ir_computation *c,
				  const signed char *force,
				  const struct grouping *like)
{
	enum ts_status st = sim_grouping_init(g, c, like);
	if (st != TS_OK)
		return st;
	g->force = force;
	for (int k = g->n - 1; k >= 0; k--)
		sim_grouping_decide(g, g->order[k]);
	g->n_decided = g->n_groups;
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	const struct ir_instr **buf = ts_malloc(n * 2 * sizeof *buf);
	struct collect_scratch cs;
	struct cycle_scratch cy;
	bool ok = sim_cycle_scratch_init(&cy, g->n);
	ok = sim_grouping_collect_init(g, &cs) && ok && buf;
	for (int id = 0; ok && id < g->n_groups; id++)
		ok = sim_grouping_collect(g, id, &cs);
	ok = ok && merge_siblings(g, buf, buf + g->n) &&
	     merge_slices(g, buf, buf + g->n) && kernel_order(g, &cy) &&
	     merge_outputs(g, buf, &cy) && merge_updates(g, &cy) &&
	     merge_loops(g, buf, &cy) && merge_epilogues(g, &cy) &&
	     merge_shared(g, buf, buf + g->n, &cy) &&
	     place_continuations(g, &cy) && dissolve_cycles(g, &cs, &cy) && index_holders(g);
	ts_free(buf);
	sim_collect_scratch_free(&cs);
	sim_cycle_scratch_free(&cy);
	return ok ? TS_OK : TS_ERR_NOMEM;
}

bool sim_grouping_collect_init(struct grouping *g, struct collect_scratch *cs)
{
	size_t n = (size_t)(g->n > 0 ? g->n : 1);
	g->m_start = ts_calloc(2 * n, sizeof *g->m_start);
	g->m_len = ts_calloc(2 * n, sizeof *g->m_len);
	g->stamp = ts_calloc(2 * n + 1, sizeof *g->stamp);
	cs->stack = ts_malloc(n * sizeof *cs->stack);
	cs->mark = ts_calloc(n, sizeof *cs->mark);
	cs->bits = ts_calloc(n / 64 + 1, sizeof *cs->bits);
	cs->gen = 0;
	return g->m_start && g->m_len && g->stamp && cs->stack && cs->mark &&
	       cs->bits;
}

void sim_collect_scratch_free(struct collect_scratch *cs)
{
	ts_free(cs->stack);
	ts_free(cs->mark);
	ts_free(cs->bits);
}

/* Group id's digest as sibling merging takes it (its inputs sorted by
 * address; in: room for g->n). A representative that absorbed siblings
 * reads what each did. */
uint64_t sim_group_digest(const struct grouping *g, int id,
			  const struct ir_instr **in)
{
	int n_in = sim_group_inputs(g, id, in);
	qsort(in, (size_t)n_in, sizeof *in, cmp_ptr);
	return sibling_digest(g, id, in, n_in);
}
