/*
 * classify.c: what an instruction of a computation is, before any kernel
 * is formed: constant-derived values (folded by XLA) and the role of a
 * top-level instruction (free, a kernel of some kind, control flow), and
 * the vector unit's cost class of an opcode. Read
 * by the kernel builder (kernels.c), the fusion grouping (grouping.c) and
 * the work counter (cost.c); it reads none of them, so those three form
 * no import circle.
 */
#include "kernels_int.h"

#include <string.h>

/* ---- the VPU cost class of an opcode ---------------------------------------- */

/* The VPU column of hlo/ir_ops.def, which the front end does not read: the
 * class is a fact of the TPU's vector unit (hw_spec.h), not of HLO. */
static const enum hw_vpu_class op_vpu[] = {
	[IR_OP_INVALID] = HW_VPU_SIMPLE,
#define X(e, s, cls, vpu, lo, hi) [IR_OP_##e] = HW_VPU_##vpu,
#include "ir_ops.def"
#undef X
};
_Static_assert(TS_ARRAY_LEN(op_vpu) == IR_OP_COUNT, "op_vpu must cover every ir_op");

enum hw_vpu_class sim_op_vpu_class(enum ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? op_vpu[op] : HW_VPU_SIMPLE;
}

/* ---- constant-derived values ------------------------------------------------- */

bool *sim_const_derived(const struct ir_computation *c)
{
	size_t n = c->n_instrs > 0 ? (size_t)c->n_instrs : 1;
	bool *cd = ts_calloc(n, sizeof *cd);
	if (!cd)
		return NULL;
	/* Monotone fixpoint (false -> true only), so text order need not be
	 * topological; printed HLO is, and one pass then suffices. */
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < c->n_instrs; i++) {
			const struct ir_instr *in = c->instrs[i];
			if (cd[i])
				continue;
			bool v;
			switch (in->op) {
			case IR_OP_CONSTANT:
				v = true;
				break;
			case IR_OP_IOTA:
			case IR_OP_RNG:
			case IR_OP_RNG_BIT_GENERATOR:
				v = false;
				break;
			default:
				switch (ir_op_class(in->op)) {
				case IR_CLASS_ELEMENTWISE:
				case IR_CLASS_TRANSCENDENTAL:
				case IR_CLASS_DATA_MOVEMENT:
				case IR_CLASS_REDUCTION:
					v = in->n_operands > 0;
					for (int j = 0; v && j < in->n_operands; j++) {
						const struct ir_instr *o =
							in->operands[j];
						v = o->parent == c &&
						    cd[o->index];
					}
					break;
				default:
					v = false;
					break;
				}
			}
			if (v) {
				cd[i] = true;
				changed = true;
			}
		}
	}
	return cd;
}

/* ---- what a top-level instruction is -------------------------------------------- */

/* Physical dims, major to minor, into out[] (rank entries). */
static void physical_dims(const struct ir_shape *s, int64_t *out)
{
	int order[64];
	ir_shape_major_to_minor(s, order);
	for (int i = 0; i < s->rank; i++)
		out[i] = s->dims[order[i]];
}

bool sim_same_tiles(const struct ir_layout *a, const struct ir_layout *b)
{
	if (a->n_tiles != b->n_tiles || a->memory_space != b->memory_space ||
	    a->element_size_bits != b->element_size_bits)
		return false;
	for (int t = 0; t < a->n_tiles; t++) {
		if (a->tiles[t].rank != b->tiles[t].rank)
			return false;
		for (int i = 0; i < a->tiles[t].rank; i++)
			if (a->tiles[t].dims[i] != b->tiles[t].dims[i])
				return false;
	}
	return true;
}

/* Dims covered by the first layout tile: its rank, or TPU's default 2-D
 * tiling (1-D for vectors) when the shape has no tiles. */
static int tiled_dims(const struct ir_shape *s)
{
	int k = s->layout.n_tiles > 0 ? s->layout.tiles[0].rank : 2;
	return k < s->rank ? k : s->rank;
}

/*
 * A reshape is a bitcast (no data moves) when every layout tile keeps its
 * bytes and its place. In tile-major memory an array is the sequence
 * [major dims..., ceil(outer tiled dim / e), ...inner tiled dims] of tiles,
 * e the tile extent of the outer tiled dim. So the element type and tiling
 * must be unchanged, the inner tiled dims identical (the lane dim for
 * (8,128)), and either the outer tiled dim and the product of the major
 * dims both equal, or both outer tiled dims multiples of e with the same
 * number of tile rows (f32[16,128] <-> f32[2,8,128] under T(8,128)). XLA
 * rewrites such reshapes to bitcast itself; a compiled module's remaining
 * reshapes (e.g. tpugraphs reshape.37) are real relayouts. Conservative:
 * anything else counts as a copy.
 */
static bool reshape_is_bitcast(const struct ir_instr *in)
{
	if (in->n_operands != 1 || in->shape.type == IR_TYPE_TUPLE)
		return false;
	const struct ir_shape *a = &in->operands[0]->shape, *r = &in->shape;
	if (a->type != r->type || a->rank > 64 || r->rank > 64 ||
	    !sim_same_tiles(&a->layout, &r->layout))
		return false;
	int k = tiled_dims(a);
	if (k != tiled_dims(r))
		return false;
	if (k == 0)
		return true; /* scalars */
	int64_t pa[64], pr[64];
	physical_dims(a, pa);
	physical_dims(r, pr);
	for (int i = 0; i < k - 1; i++)
		if (pa[a->rank - 1 - i] != pr[r->rank - 1 - i])
			return false;
	int64_t ta = pa[a->rank - k], tr = pr[r->rank - k];
	int64_t e = 8; /* default T(8,128) row extent */
	if (a->layout.n_tiles > 0) {
		const struct ir_tile *t = &a->layout.tiles[0];
		int64_t te = t->dims[t->rank - k];
		e = te > 0 ? te : 1;
	} else if (k == 1) {
		e = 1; /* 1-D: the only dim, compared as a whole below */
	}
	int64_t ma = 1, mr = 1;
	for (int i = 0; i < a->rank - k; i++)
		ma = ir_mul_sat(ma, pa[i]);
	for (int i = 0; i < r->rank - k; i++)
		mr = ir_mul_sat(mr, pr[i]);
	if (ta == tr)
		return ma == mr && ma < INT64_MAX;
	int64_t sa = ir_mul_sat(ma, ta), sr = ir_mul_sat(mr, tr);
	return k > 1 && ta % e == 0 && tr % e == 0 && sa == sr && sa < INT64_MAX;
}

/* A transpose is a bitcast when its layouts make the permutation a
 * relabelling: the i-th most major output dim is the i-th most major input
 * dim, with the same tiling. */
static bool transpose_is_bitcast(const struct ir_instr *in)
{
	const struct ir_ints *perm = in->attrs.dimensions;
	if (in->n_operands != 1 || !perm || in->shape.type == IR_TYPE_TUPLE)
		return false;
	const struct ir_shape *a = &in->operands[0]->shape, *r = &in->shape;
	if (perm->n != r->rank || a->rank != r->rank || r->rank > 64 ||
	    a->type != r->type || !sim_same_tiles(&a->layout, &r->layout))
		return false;
	int oa[64], orr[64];
	ir_shape_major_to_minor(a, oa);
	ir_shape_major_to_minor(r, orr);
	for (int i = 0; i < r->rank; i++)
		if (perm->v[orr[i]] != oa[i])
			return false;
	return true;
}


/*
 * Custom calls XLA's TPU compiler emits that are no work of their own
 * (docs/HLO.md section 2, "Custom calls"; the meaning read from the
 * compiled modules' text):
 *   AllocateBuffer         reserves a buffer (no operands); what fills it
 *                          (a dynamic-update-slice in place) is costed
 *   ConcatBitcast          a concatenation laid out in place: its operands
 *                          are adjacent slices of its result's buffer
 *                          (the slice-dones of one array's slice-starts),
 *                          so it is a view, like a bitcast; the DMAs that
 *                          filled the slices are costed
 *   AssumeGatherIndicesInBound  forwards its operand, a promise that
 *                          gather indices are in bounds
 *   GatherScatterIndicesBitpacked  forwards its operand (same shape), a
 *                          mark that a gather's or scatter's indices are
 *                          bitpacked (inside XLA's gather fusions)
 *   PrepareAsyncCallStart / PrepareAsyncCallDone  open and close an async
 *                          call to the SparseCore (v7): a flag and a
 *                          token; the call-start between them is the
 *                          work, its called computation costed as async
 *                          work (sim.h sim_async)
 * Every other custom call stays a listed, unmodelled kernel (or a library
 * call costed as the op it computes, sim/kernels.c).
 */
static bool free_custom_call(const struct ir_instr *in)
{
	static const char *const targets[] = {
		"AllocateBuffer",        "ConcatBitcast",
		"AssumeGatherIndicesInBound", "GatherScatterIndicesBitpacked",
		"PrepareAsyncCallStart",
		"PrepareAsyncCallDone",
	};
	const char *t = in->attrs.custom_call_target;
	for (size_t i = 0; t && i < TS_ARRAY_LEN(targets); i++)
		if (!strcmp(t, targets[i]))
			return true;
	return false;
}

/* Kernel kind of an op X by its cost class: an unfused op not named in
 * sim_top_role(), or the op wrapped by async X-start sugar. */
static enum sim_kernel_kind class_kind(enum ir_op x)
{
	switch (ir_op_class(x)) {
	case IR_CLASS_ELEMENTWISE:
	case IR_CLASS_TRANSCENDENTAL:
		return SIM_KERNEL_ELEMENTWISE;
	case IR_CLASS_DATA_MOVEMENT:
		return x == IR_OP_COPY ? SIM_KERNEL_COPY : SIM_KERNEL_DATA;
	case IR_CLASS_REDUCTION:
		return SIM_KERNEL_REDUCE;
	case IR_CLASS_CONTRACTION:
		return x == IR_OP_CONVOLUTION ? SIM_KERNEL_CONVOLUTION
					      : SIM_KERNEL_DOT;
	case IR_CLASS_COLLECTIVE:
		return SIM_KERNEL_COLLECTIVE;
	default:
		return SIM_KERNEL_UNMODELLED;
	}
}

/* Index arithmetic: an elementwise op on scalars only (a device's slice
 * offset from its partition id), not a reduce or dot that yields one. */
static bool scalar_index_op(const struct ir_instr *x)
{
	if (ir_op_class(x->op) != IR_CLASS_ELEMENTWISE ||
	    x->shape.type == IR_TYPE_TUPLE || x->shape.rank != 0)
		return false;
	for (int j = 0; j < x->n_operands; j++)
		if (x->operands[j]->shape.type == IR_TYPE_TUPLE ||
		    x->operands[j]->shape.rank != 0)
			return false;
	return true;
}

/*
 * XLA's async collective fusion on TPU may spread one collective over a
 * chain of fusions: the first's root is custom-call
 * AsyncCollectiveStart(collective), the last's AsyncCollectiveDone(buffers,
 * collective, ...), and the fusions between hold the same collective
 * beside other work (a matmul), the chain's buffers passing through them.
 * Each holds a clone of the collective with its channel_id, the key that
 * ties them (XLA also writes a frontend attribute chain_id, not read). The
 * collective moves once, from start to done. A module unfused
 * (sim/unfuse.c) holds the custom-calls themselves, each reading its
 * clone, which the `xla` policy groups with it (grouping.c).
 */
static bool chain_call(const struct ir_instr *in, const char *target)
{
	const struct ir_instr *r = in->op == IR_OP_FUSION && in->n_called > 0 &&
						   in->called[0]
					   ? in->called[0]->root
					   : in;
	return r && r->op == IR_OP_CUSTOM_CALL && r->attrs.custom_call_target &&
	       strcmp(r->attrs.custom_call_target, target) == 0;
}

/* The one collective of a fusion's body, or, for the custom-call that
 * starts or ends a collective chain as a module unfused holds it (above),
 * the one among its operands; NULL when there are none or several. */
static const struct ir_instr *one_collective(const struct ir_instr *in)
{
	const struct ir_instr *const *x = NULL;
	int n = 0;
	if (in->op == IR_OP_FUSION && in->n_called > 0 && in->called[0]) {
		x = (const struct ir_instr *const *)in->called[0]->instrs;
		n = in->called[0]->n_instrs;
	} else if (chain_call(in, "AsyncCollectiveStart") ||
		   chain_call(in, "AsyncCollectiveDone")) {
		x = (const struct ir_instr *const *)in->operands;
		n = in->n_operands;
	}
	const struct ir_instr *coll = NULL;
	for (int i = 0; i < n; i++) {
		if (ir_op_class(x[i]->op) != IR_CLASS_COLLECTIVE)
			continue;
		if (coll)
			return NULL;
		coll = x[i];
	}
	return coll;
}

bool sim_chain_start(const struct ir_instr *in)
{
	return chain_call(in, "AsyncCollectiveStart") && one_collective(in);
}

bool sim_chain_done(const struct ir_instr *in)
{
	return chain_call(in, "AsyncCollectiveDone");
}

int64_t sim_megascale_slices(const struct ir_instr *in)
{
	bool ends = in->op == IR_OP_SEND || in->op == IR_OP_RECV;
	return ends && in->attrs.megascale_op != IR_OP_INVALID
		       ? in->attrs.megascale_slices
		       : 0;
}

int64_t sim_chain_channel(const struct ir_instr *in)
{
	const struct ir_instr *coll = one_collective(in);
	return coll ? coll->attrs.channel_id : 0;
}

const struct ir_instr *sim_fused_collective(const struct ir_instr *in)
{
	const struct ir_instr *coll = one_collective(in);
	const struct ir_computation *c =
		coll && in->op == IR_OP_FUSION ? in->called[0] : NULL;
	for (int i = 0; c && i < c->n_instrs; i++) {
		const struct ir_instr *x = c->instrs[i];
		switch (x->op) {
		case IR_OP_PARAMETER:
		case IR_OP_CONSTANT:
		case IR_OP_PARTITION_ID:
		case IR_OP_REPLICA_ID:
		case IR_OP_TUPLE:
		case IR_OP_GET_TUPLE_ELEMENT:
		case IR_OP_BITCAST:
		case IR_OP_RESHAPE:
		case IR_OP_COPY:
		case IR_OP_SLICE:
		case IR_OP_DYNAMIC_SLICE:
		case IR_OP_PAD: /* to a multiple of the devices */
			continue;
		case IR_OP_CUSTOM_CALL: /* a chain's start (above) */
			if (x == c->root && sim_chain_start(in))
				continue;
			return NULL;
		default:
			if (x != coll && !scalar_index_op(x))
				return NULL; /* compute fused beside it */
		}
	}
	return coll;
}

const struct ir_instr *sim_side_collective(const struct ir_instr *in)
{
	const struct ir_instr *coll = one_collective(in);
	const struct ir_computation *c =
		coll && in->op == IR_OP_FUSION ? in->called[0] : NULL;
	for (int i = 0; c && i < c->n_instrs; i++)
		if (c->instrs[i]->op == IR_OP_DOT ||
		    c->instrs[i]->op == IR_OP_CONVOLUTION)
			return coll;
	return NULL;
}

/* The role of a top-level instruction, and its kernel kind. */
enum sim_top sim_top_role(const struct ir_instr *in, enum sim_kernel_kind *kind)
{
	*kind = SIM_KERNEL_UNMODELLED;
	switch (in->op) {
	case IR_OP_FUSION:
		/* a collective chain's done waits: the collective moved from
		 * its start (async work, sim/kernels.c) */
		if (sim_chain_done(in))
			return SIM_TOP_FREE;
		*kind = sim_fused_collective(in) ? SIM_KERNEL_COLLECTIVE
						 : SIM_KERNEL_FUSION;
		return SIM_TOP_KERNEL;
	case IR_OP_CONVOLUTION:
		*kind = SIM_KERNEL_CONVOLUTION;
		return SIM_TOP_KERNEL;
	case IR_OP_COPY:
	case IR_OP_COPY_START:
		*kind = SIM_KERNEL_COPY;
		return SIM_TOP_KERNEL;
	case IR_OP_TRANSPOSE:
		*kind = SIM_KERNEL_COPY;
		return transpose_is_bitcast(in) ? SIM_TOP_FREE : SIM_TOP_KERNEL;
	case IR_OP_RESHAPE:
		*kind = SIM_KERNEL_COPY;
		return reshape_is_bitcast(in) ? SIM_TOP_FREE : SIM_TOP_KERNEL;
	case IR_OP_BROADCAST:
	case IR_OP_IOTA:
	case IR_OP_SORT:
		*kind = SIM_KERNEL_DATA;
		return SIM_TOP_KERNEL;
	case IR_OP_WHILE:
		return SIM_TOP_WHILE;
	case IR_OP_ASYNC_START:
		/* Sugar "X-start" without calls=: X itself, run async. Its kind
		 * follows X; its work is counted as bytes only (cost.c). */
		if (in->n_called == 0 && in->wrapped_op != IR_OP_INVALID) {
			*kind = class_kind(in->wrapped_op);
			return SIM_TOP_KERNEL;
		}
		return SIM_TOP_CALL;
	case IR_OP_CALL:
		return SIM_TOP_CALL;
	case IR_OP_CONDITIONAL:
		return SIM_TOP_CONDITIONAL;
	case IR_OP_ASYNC_UPDATE:
	case IR_OP_ASYNC_DONE:
		return SIM_TOP_FREE;
	case IR_OP_CUSTOM_CALL:
		/* a Pallas kernel with its declared cost is a kernel of its
		 * own (sim/plan.c SIM_PLAN_DECLARED); others not modelled
		 * unless free (free_custom_call) */
		if (in->attrs.declared)
			*kind = SIM_KERNEL_FUSION;
		return free_custom_call(in) ? SIM_TOP_FREE : SIM_TOP_KERNEL;
	case IR_OP_SEND:
	case IR_OP_RECV:
		/* the megascale runtime's exchange between slices: the send
		 * is the collective (its recv the same transfer's other
		 * end); any other send or recv is not modelled */
		if (sim_megascale_slices(in)) {
			*kind = SIM_KERNEL_COLLECTIVE;
			return in->op == IR_OP_SEND ? SIM_TOP_KERNEL
						    : SIM_TOP_FREE;
		}
		return SIM_TOP_KERNEL;
	/* Not modelled: listed with zero time, never dropped. */
	case IR_OP_INFEED:
	case IR_OP_OUTFEED:
	case IR_OP_RNG_GET_AND_UPDATE_STATE:
	case IR_OP_FFT:
	case IR_OP_CHOLESKY:
	case IR_OP_TRIANGULAR_SOLVE:
	case IR_OP_BATCH_NORM_GRAD:
	case IR_OP_BATCH_NORM_INFERENCE:
	case IR_OP_BATCH_NORM_TRAINING:
	case IR_OP_TOPK:
		return SIM_TOP_KERNEL;
	default:
		break;
	}
	if (ir_op_class(in->op) == IR_CLASS_FREE)
		return SIM_TOP_FREE;
	*kind = class_kind(in->op); /* control, other ops: unmodelled */
	return SIM_TOP_KERNEL;
}
