/*
 * kernels_int.h: helpers shared by kernel extraction (kernels.c), the
 * grouping of pre-optimization modules (grouping.c) and work counting
 * (cost.c) only; not part of the sim/ interface (see sim.h).
 */
#ifndef KERNELS_INT_H
#define KERNELS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"

#include "sim.h"

/*
 * Marks the instructions of c whose value depends on constants only
 * (constant, or a pure elementwise / data-movement / reduction op all of
 * whose operands are constant-derived; iota and rng are computed, never
 * constant-derived). XLA's constant folding (HloConstantFolding) evaluates
 * them at compile time, or splats them into registers when they are
 * broadcasts of scalars, so they are neither kernels nor VPU work.
 * Returns a ts_malloc'd array of c->n_instrs flags indexed by
 * ir_instr.index (ts_free it), NULL when out of memory. An empty
 * computation gives a 1-element array so that NULL always means failure.
 */
bool *sim_const_derived(const struct ir_computation *c);

/* Is operand j of in the same instruction as an earlier operand
 * (multiply(x, x))? Such a repeat is one use and one read. */
static inline bool sim_operand_repeats(const struct ir_instr *in, int j)
{
	for (int q = 0; q < j; q++)
		if (in->operands[q] == in->operands[j])
			return true;
	return false;
}

/* Whether in starts an async pair (copy-start, a collective's -start,
 * async-start, a megascale send, a chain's start: sim/kernels.c); such an
 * op is a kernel of its own (sim_fuse_alone). */
bool sim_async_start(const struct ir_instr *in);

/* Whether an array lives on chip, off HBM: S(1) is VMEM; S(6)/S(7) hold
 * scalars on chip (TPU.md section 3: the scalar learning rate lives in
 * S(6)). What cost.c counts no HBM bytes for and plan.c moves no DMA
 * for. */
static inline bool sim_on_chip(const struct ir_shape *s)
{
	int ms = s->layout.memory_space;
	return ms == 1 || ms == 6 || ms == 7;
}

/* Whether an array of shape s is in HBM with a layout to write S(1)
 * into (a scalar's may be empty: "f32[]{:S(1)}"). */
static inline bool sim_in_hbm(const struct ir_shape *s)
{
	return s->type != IR_TYPE_TUPLE && s->layout.memory_space == 0 &&
	       (s->layout.present || s->rank == 0);
}

/* Whether memory-space assignment may keep value v in VMEM at all
 * (sim/placement.c; an eviction's copy, kernels.c): in HBM with a
 * layout, not its computation's result, not an in-place update's
 * buffer. Its uses and size are checked apart. */
static inline bool sim_placeable(const struct ir_instr *v)
{
	return sim_in_hbm(&v->shape) && v != v->parent->root &&
	       v->op != IR_OP_DYNAMIC_UPDATE_SLICE && v->op != IR_OP_SCATTER;
}

/* The tuple optimization barrier b passes through (each of b's
 * get-tuple-elements is that tuple's operand's buffer), or NULL: b is no
 * barrier of a tuple. */
static inline const struct ir_instr *sim_barrier_tuple(const struct ir_instr *b)
{
	return b->op == IR_OP_OPT_BARRIER && b->n_operands == 1 &&
			       b->operands[0]->op == IR_OP_TUPLE
		       ? b->operands[0]
		       : NULL;
}

/* Whether c is a while loop's body, its only caller. */
static inline bool sim_loop_body(const struct ir_computation *c)
{
	const struct ir_instr *w = c->n_callers == 1 ? c->caller : NULL;
	return w && w->op == IR_OP_WHILE && w->n_called == 2 &&
	       w->called[1] == c;
}

/* Whether v is an element of a loop body's state: a get-tuple-element
 * of its parameter. */
static inline bool sim_loop_state(const struct ir_instr *v)
{
	const struct ir_instr *o = v->op == IR_OP_GET_TUPLE_ELEMENT &&
					   v->n_operands == 1
					   ? v->operands[0]
					   : NULL;
	return o && o->op == IR_OP_PARAMETER && sim_loop_body(v->parent);
}

/* Whether u's operand j is a loop body's state element that its result
 * u passes on unchanged, in its place: the same buffer in HBM, no use
 * (a copy of it into VMEM is not what the body returns: fuse writes the
 * element itself there). */
static inline bool sim_passes_through(const struct ir_instr *u, int j)
{
	const struct ir_instr *v = u->operands[j];
	return u == u->parent->root && u->op == IR_OP_TUPLE &&
	       sim_loop_state(v) && v->attrs.tuple_index == j;
}

/* The get-tuple-elements of t's elements in t's computation, into
 * el[0 .. t's elements) (NULL for one none names), where t is read by
 * get-tuple-elements alone, one for each element it reads; else false:
 * a collective of a tuple (a combined all-reduce, sim/rewrite.c) writes
 * each element as a buffer of its own, which placement may then keep in
 * VMEM (sim/placement.c). */
static inline bool sim_tuple_elements(const struct ir_instr *t,
				      const struct ir_instr **el)
{
	const struct ir_computation *c = t->parent;
	int n = t->shape.n_elems;
	for (int i = 0; i < n; i++)
		el[i] = NULL;
	for (int k = 0; k < c->n_instrs; k++) {
		const struct ir_instr *u = c->instrs[k];
		for (int j = 0; j < u->n_operands; j++) {
			if (u->operands[j] != t)
				continue;
			int64_t i = u->attrs.tuple_index;
			if (u->op != IR_OP_GET_TUPLE_ELEMENT || i < 0 || i >= n ||
			    el[i])
				return false; /* read whole, or twice named */
			el[i] = u;
		}
	}
	return true;
}

/* Shape s in VMEM: a copy of it into *tmp with memory space S(1), as
 * memory-space assignment keeps a value (sim/placement.c). */
static inline const struct ir_shape *sim_vmem_shape(const struct ir_shape *s,
						    struct ir_shape *tmp)
{
	*tmp = *s;
	tmp->layout.memory_space = 1;
	return tmp;
}

/* The ops of one application of the computation in->called[which] (a
 * reducer, a scatter's combiner), cost.c: elementwise and transcendental
 * ops, and per VPU class; an op-free one counts one simple op. */
struct sim_op_mix {
	double flops;                        /* elementwise ops */
	double trans;                        /* transcendental ops */
	double vpu[HW_VPU_CLASS_COUNT];      /* ops per VPU class */
};
void sim_body_mix(const struct ir_instr *in, int which, struct sim_op_mix *mix);

/* The buffer u updates in place, one of its operands, or NULL: u a
 * dynamic-update-slice or scatter, or a kCustom fusion whose root is one
 * updating a parameter of its computation (placement.c). */
const struct ir_instr *sim_in_place_buffer(const struct ir_instr *u);

/* Whether module m may have an instruction named name: its digest is
 * one of names' (a digest another name shares only makes the caller try
 * the next name), names made from m's instruction names when empty
 * (kernels.c). *st: TS_ERR_NOMEM when memory runs out (then true). */
bool sim_name_taken(struct ts_u64map *names, const struct ir_module *m,
		    const char *name, enum ts_status *st);
/* Records name in names (a name made up for m); false when memory runs
 * out. */
bool sim_name_take(struct ts_u64map *names, const char *name);

/* The HBM bytes kernel k's members read of value v, padded to its
 * layout's tiles (cost.c's rule: a slice or a dynamic-slice of it reads
 * its window, at most v whole). */
double sim_kernel_read_bytes(const struct sim_kernel *k,
			     const struct ir_instr *v);

/* The bytes an async DMA kernel (sim_kernel.dma) moves, cost.c: its HBM
 * reads and writes, at least the transferred result once (a transfer
 * between two on-chip spaces still streams it). What the plan's DMA and
 * the roofline both take. */
double sim_dma_bytes(const struct sim_kernel *k);

/* ---- what a top-level instruction is (kernels.c) ---- */

enum sim_top {
	SIM_TOP_FREE = 0,     /* no device work */
	SIM_TOP_KERNEL,       /* a kernel of kind *kind */
	SIM_TOP_WHILE,        /* recurse into condition and body */
	SIM_TOP_CALL,         /* call / async-start: recurse into the callee */
	SIM_TOP_CONDITIONAL,  /* recurse into every branch */
	SIM_TOP_COUNT
};

/* The one collective a fusion holds beside data movement and scalar
 * index arithmetic only (XLA's TPU compiler fuses an all-reduce with the
 * slice each device keeps, "all-reduce-scatter"), or NULL: the fusion is
 * then a collective kernel, costed by that op on the ICI. A fusion that
 * computes beside its collective (an "async collective fusion" running
 * attention's matmuls while a collective-permute moves data) stays a
 * fusion. */
const struct ir_instr *sim_fused_collective(const struct ir_instr *in);
/* The collective of XLA's async collective fusion: a fusion holding one
 * collective beside a dot or convolution (the collective runs on the ICI
 * while the MXU works: a layer's matmul beside the next layer's weight
 * all-gather), else NULL (classify.c). */
const struct ir_instr *sim_side_collective(const struct ir_instr *in);
/* A send or recv of a multi-slice program XLA compiled per slice
 * (MegaScale): the slices of the collective the megascale runtime runs
 * over DCN with it (frontend_attributes), else 0 (classify.c). */
int64_t sim_megascale_slices(const struct ir_instr *in);
/* A collective spread over a chain of fusions (classify.c): the chain's
 * start, a collective kernel whose time is async work up to the chain's
 * done; the done, which does no work of its own; and the channel_id of a
 * fusion's one collective (0: none), which the start, the done and every
 * fusion between share. A fusion between is costed without the
 * collective's ICI time, which moves once, from the start
 * (sim_kernel.chained). Each also answers for the start's or done's
 * custom-call itself, as a module unfused holds it, whose one collective
 * is the one among its operands (sim_fused_collective too). */
bool sim_chain_start(const struct ir_instr *in);
bool sim_chain_done(const struct ir_instr *in);
int64_t sim_chain_channel(const struct ir_instr *in);
/* The bytes a collective moves as tpusim counts them (cost.c): an
 * all-gather's result (a megascale all-gather's send: its operand x the
 * slices), else its operands, in any memory space. */
double sim_collective_payload(const struct ir_instr *in);
/* What such a side collective moves (plan.c): its algorithm class, bytes
 * (sim_collective_payload) and element bits, as sim_collective_of gives
 * them for a collective kernel. */
void sim_side_collective_of(const struct ir_instr *coll, enum hw_collective *c,
			    double *bytes, int *bits);

/* Do two layouts have the same tiles, element size and memory space? */
bool sim_same_tiles(const struct ir_layout *a, const struct ir_layout *b);

/* The role of a top-level instruction, and its kernel kind (a fusion
 * that holds a collective: SIM_KERNEL_COLLECTIVE). */
enum sim_top sim_top_role(const struct ir_instr *in, enum sim_kernel_kind *kind);

/* Whether t is a collective of a tuple (a combined all-reduce,
 * sim/rewrite.c), whose elements may be buffers of their own
 * (sim_tuple_elements). */
static inline bool sim_collective_tuple(const struct ir_instr *t)
{
	enum sim_kernel_kind kind;
	return t->shape.type == IR_TYPE_TUPLE &&
	       sim_top_role(t, &kind) == SIM_TOP_KERNEL &&
	       kind == SIM_KERNEL_COLLECTIVE;
}

/* Nesting of while/call/conditional bodies beyond which the module is taken
 * to be recursive (HLO forbids recursion; a hand-made module may not). */
#define SIM_MAX_NESTING 64

/* ---- grouping pre-optimization modules into kernels (grouping.c) ---- */

enum fuse_class {
	FC_FREE = 0,   /* parameter, tuple, get-tuple-element, bitcast, ... */
	FC_CHEAP,      /* loop op cheap enough to recompute per user */
	FC_EXPENSIVE,  /* loop op fused only where it is computed once */
	FC_CORE,       /* reduce, reduce-window, dot, convolution */
	FC_ROOT,       /* always its own kernel, accepts only what ROOT rules say */
	FC_CONTROL,    /* while, call, conditional, async-start: recursed into */
	FC_COUNT
};

/* Special values of grouping.grp[] (group ids are >= 0). */
enum { G_NONE = -1, G_MULTI = -2 };

struct grouping {
	const struct ir_computation *c;
	int n;                 /* instructions of c */
	int *order;            /* topological order, operands first */
	int *pos;              /* each instruction's place in order */
	int *uoff, *users;     /* users of i: users[uoff[i] .. uoff[i+1]) */
	int *ooff, *ops;       /* operands of i, as indices into c (-1: not
	                          one of c's): ops[ooff[i] .. ooff[i+1]) */
	unsigned char *opk;    /* per instruction: what the fusion rules ask
	                          of it (grouping.c OPK_*) */
	bool *cd;              /* constant-derived */
	bool *live;            /* reaches the root or a side effect */
	int *grp;              /* group of i, G_NONE or G_MULTI (recomputed) */
	bool *reuse;           /* i is fused on a path that broadcasts it */
	bool *prologue;        /* i is fused into a dot/convolution operand */
	bool *bcast;           /* i is fused into a broadcast's operand (a
	                          broadcast that grows, through bitcasts) */
	int n_groups;          /* groups formed (ids 0 .. n_groups-1) */
	int n_decided;         /* of them by the decisions (the rest split
	                          cyclic groups, dissolve_cycles) */
	int *g_root;           /* root instruction of each group */
	int *g_core_at;        /* where in order the decision that put a core
	                          op in each group was made (-1: none); the
	                          decision at place p sees one when it is
	                          past p (decisions go consumers first; a
	                          trial's grouping, grouping_delta.c, holds
	                          places of decisions still to come) */
	int *g_rep;            /* representative after sibling merging (-1:
	                          dissolved, a cycle) */
	/* membership: group g's members (instruction indices, ascending)
	 * are pool[m_start[g] .. m_start[g] + m_len[g]); the groups that
	 * hold instruction i, representatives only (g_rep[h] == h,
	 * ascending), are holders[h_off[i] .. h_off[i + 1]) */
	int *pool, *m_start, *m_len;
	size_t pool_n, pool_cap;
	int *h_off, *holders;
	const signed char *force; /* per instruction: a policy's decision
	                             (enum sim_fuse_force), NULL: none */
	unsigned char *why;    /* per instruction: enum sim_fuse_why */
	unsigned char *fc;     /* per instruction: enum fuse_class */
	struct ts_key_id *sib; /* sibling merging's candidates by digest
	                          (sorted), n_sib of them */
	int n_sib;
	int *stamp;            /* scratch of sim_group_mark, which writes it
	                          through a const grouping (one thread):
	                          2 marks per instruction (ts_next_gen), then
	                          the generation */
	bool continues;        /* c holds a chain's continuation
	                          (grouping.c OPK_CONTINUATION) */
	int n_redecided;       /* a trial's (sim_grouping_delta): the
	                          decisions it made or asked again */
	bool borrowed;         /* order, pos, users, operands, opk,
	                          continues, cd, live and fc (what no
	                          decision changes)
	                          are another grouping's of c, not freed with
	                          this one */
};

/* The users of c's instructions as CSR, one entry per distinct using
 * instruction (ir_instr.n_users, the parser's count, which the rewrites
 * keep): those of instruction i are users[uoff[i] .. uoff[i + 1]); uoff
 * has c->n_instrs + 1 entries, users the n_users summed, fill (scratch)
 * c->n_instrs. */
void sim_users_csr(const struct ir_computation *c, int *uoff, int *users,
		   int *fill);
/* Groups computation c as XLA's fusion passes would (grouping.c says
 * how), except where force (NULL: nowhere; else per instruction of c, enum
 * sim_fuse_force) overrides a decision legally: fills g (sim_grouping_free
 * it, also after an error). With like (a grouping of c, outliving g), g
 * borrows what no decision changes (the order, users, constant-derived
 * and live marks, fusion classes) instead of working it out again.
 * TS_ERR_NOMEM only. */
enum ts_status sim_grouping_build(struct grouping *g,
				  const struct ir_computation *c,
				  const signed char *force,
				  const struct grouping *like);
void sim_grouping_free(struct grouping *g);
/* The grouping's own steps, shared with grouping_delta.c (grouping.c
 * says what each does). */
struct collect_scratch { /* of sim_grouping_collect: a stack and a mark
                            per instruction (a generation each call), a
                            bitset of n bits (zero between calls) */
	int *stack, *mark;
	uint64_t *bits;
	int gen;
};
struct cycle_scratch {   /* of sim_group_cyclic, for n instructions: a
                            stamp per instruction and a mark per group (at
                            its root), a generation each check; a member
                            tag, a generation each group followed; a stack
                            of 2n */
	int *stamp, *seen, *tag, *stack;
	int gen, tag_gen, n;
	int *kpos, *at; /* a topological order of the graph of kernels while
	                   groups merge (grouping.c, kernel_order): the place
	                   of each node, the node at each place (-1: none);
	                   NULL: none kept (nothing pruned) */
	int lo;         /* with kpos: nodes placed before lo are not followed */
	const struct grouping *base; /* a trial's grouping's base (members of
	                                the groups it has not collected), or
	                                NULL */
};
enum ts_status sim_grouping_init(struct grouping *g,
				 const struct ir_computation *c,
				 const struct grouping *like);
int sim_grouping_new(struct grouping *g, int i, bool core);
void sim_grouping_decide(struct grouping *g, int i);
/* Does instruction i's decision read whether a user's group holds a core
 * op yet, and which (g_core_at): a core op's and a dot epilogue's do. */
bool sim_reads_core(const struct grouping *g, int i);
/* Room in g for the groups' member lists and sim_group_inputs' marks,
 * and cs for sim_grouping_collect (false: out of memory; free cs with
 * sim_collect_scratch_free in any case, g's with g). */
bool sim_grouping_collect_init(struct grouping *g, struct collect_scratch *cs);
void sim_collect_scratch_free(struct collect_scratch *cs);
bool sim_grouping_collect(struct grouping *g, int id,
			  struct collect_scratch *cs);
bool sim_cycle_scratch_init(struct cycle_scratch *cy, int n_instrs);
void sim_cycle_scratch_free(struct cycle_scratch *cy);
bool sim_group_cyclic(const struct grouping *g, int id,
		      struct cycle_scratch *cy);
bool sim_group_sibling(const struct grouping *g, int id);
bool sim_group_merges(const struct grouping *g, int id,
		      const struct ir_instr **in, int *stack);
uint64_t sim_group_digest(const struct grouping *g, int id,
			  const struct ir_instr **in);

/* What sim_grouping_delta keeps from one trial to the next of a
 * computation (grouping_delta.c). */
struct delta_scratch;
/* t (sim_grouping_free it, also after an error) and *ds
 * (sim_delta_scratch_free it) made ready for the trials against like: t
 * borrows what no decision changes from like, which must outlive both,
 * and copies its decisions. false when out of memory. */
bool sim_delta_scratch_new(struct grouping *t, const struct grouping *like,
			   struct delta_scratch **ds);
void sim_delta_scratch_free(struct delta_scratch *ds);
/* Computation b->c grouped under force, where force differs from b's
 * decisions at instruction at only, as far as it differs from b, into t
 * (with ds, from sim_delta_scratch_new for b; every trial against b uses
 * the same two, and costs the decisions it makes again, not the
 * computation): t gets the decisions whole (b's where they cannot differ;
 * ids of b's groups, the new ones numbered from b->n_groups on) and the
 * members of the groups that may differ
 * from b's, t_ids; b_ids gets b's representatives they may replace (each
 * list up to 2 x n_instrs). Every other group of t is one of b's: the same
 * members, outputs and cycles (sim/grouping_delta.c says why). t has no
 * holders index (sim_group_member searches member lists) and is no more
 * than that. *whole when the difference reaches what this does not follow
 * (a reduce that has or had a sibling to merge with, a group output
 * merging joins or joined with another (sim_group_merges), a group of t's
 * with a cycle, a cyclic group b split): then group whole
 * (sim_grouping_build).
 * TS_ERR_NOMEM only. */
enum ts_status sim_grouping_delta(struct grouping *t, const struct grouping *b,
				  const signed char *force, int at,
				  struct delta_scratch *ds, int *t_ids,
				  int *n_t, int *b_ids, int *n_b, bool *whole);
/* The decisions plan forces on computation c (sim_grouping_build's force;
 * NULL without a plan or for a computation it does not cover). */
static inline const signed char *sim_plan_force(
	const struct sim_fusion_plan *plan, const struct ir_computation *c)
{
	return plan && c->index < plan->n_comps ? plan->force[c->index] : NULL;
}
enum fuse_class sim_fuse_class(const struct grouping *g,
			       const struct ir_instr *in);
/* Does XLA keep in alone, never fused (custom calls, sorts, collectives,
 * async starts, the kCustom fusions it made before fusing (gather,
 * scatter, all-reduce-scatter), the ops the model does not cost:
 * batch-norm, infeed, FFT...)? */
bool sim_fuse_alone(const struct ir_instr *in);
/* Is instruction i a member of group grp? (a binary search) */
bool sim_group_member(const struct grouping *g, int grp, int i);
/* Is group id a collective chain's start or done custom-call grouped with
 * the clone of the collective it reads (a module unfused; grouping.c)?
 * Written as a kCustom fusion (fusion.c), costed as the compiled chain's
 * fusion is (kernels.c). */
bool sim_chain_grouped(const struct grouping *g, int id);
/* The members of group grp, instruction indices ascending (*out points
 * into g); returns how many. */
int sim_group_members(const struct grouping *g, int grp, const int **out);
/* The order in which a grouped computation's kernels run and `tpusim
 * fuse` writes them. node[k] names what makes instruction k's value: k
 * itself, g->n + id for group id, or -1 (a value computed again where it
 * is read). The get-tuple-elements of a parameter that are nodes of
 * their own come first, in every computation (a loop body's state:
 * where its prefetches into VMEM start, sim/placement.c); then each
 * instruction that is its own node at its place,
 * each group that is a node at its last member, and every node after
 * every node it reads (depth first, iterative: chains of thousands of
 * instructions need no deep recursion). Into order[] (room for g->n +
 * g->n_groups); returns how many, or -1 when memory runs out. */
int sim_group_order(const struct grouping *g, const int *node, int *order);

/* sim/schedule.c. Whether node x (sim_group_order's numbering) is a
 * collective XLA runs asynchronously (sim_async_collective) alone in its
 * group. */
bool sim_schedule_async_node(const struct grouping *g, int x, double min_bytes);
/* The schedule of g's computation with its async collectives (above)
 * placed as XLA's latency-hiding scheduler places them, from order
 * (sim_group_order's, n_order nodes; node: its node_of) and each node's
 * time (cost, ns, by node), into *out: returns how many are async (0:
 * none, *out empty), -1 when out of memory. */
int sim_schedule_make(const struct grouping *g, const int *node,
		      const int *order, int n_order, const double *cost,
		      double min_bytes, struct sim_schedule *out);
void sim_schedule_free(struct sim_schedule *s);
/* order (n_order nodes of sim_group_order, in a caller's numbering)
 * sorted into schedule s, each async collective's done added after it
 * as g->n + g->n_groups + 1 + its node; room for 2 x n_order. Returns
 * the entries, -1 when out of memory. */
int sim_schedule_order(const struct grouping *g, const struct sim_schedule *s,
		       int *order, int n_order);

/* The values group id reads from outside it, into out (room for n). */
int sim_group_inputs(const struct grouping *g, int id,
		     const struct ir_instr **out);
/* Marks group id's members in g->stamp with a new generation, returned
 * (until the next sim_group_mark or sim_group_inputs on g). */
int sim_group_mark(const struct grouping *g, int id);
/* Is member i of the group marked with gen (sim_group_mark) written to
 * HBM? */
bool sim_group_output(const struct grouping *g, int gen, int i);
/* Does instruction i do work: live, not free, not constant-derived (what
 * makes a group worth fusing, and what the agreement with XLA counts)? */
bool sim_group_working(const struct grouping *g, int i);

/* Could instruction i (decided in g) be recomputed in every user kernel:
 * every live user in a kernel that accepts it? (SIM_FUSE_RECOMPUTE) */
bool sim_group_can_recompute(const struct grouping *g, int i);
/* Marks in grouped[] (by computation index) the computations the
 * grouping applies to, from c: c and the computations its loops, calls
 * (async ones too) and conditionals run, not a loop's condition (XLA
 * leaves it unfused), reduction regions or fused computations. */
void sim_mark_grouped(const struct ir_computation *c, bool *grouped,
		      int depth);
/* The kernel group id of g would be (kernels.c, as sim_program_build
 * makes it, multiplicity 1), into *k (sim_kernel_release it, sim.h); *none when
 * the group does no work (a free op as its root). memo (NULL: none), a
 * memo of g's computation, is the kernel's (sim_kernel.memo): counted
 * and planned with it. */
enum ts_status sim_group_kernel(const struct ir_module *m,
				const struct grouping *g, int id,
				struct sim_member_memo *memo,
				struct sim_kernel *k, bool *none,
				struct ts_diag *d);

/* ---- the fusion search's per-instruction memo (memo.c) ---- */

/* A memo of one computation's instructions: what a kernel's work count
 * (cost.c) and plan (plan.c) work out member by member, kept for the
 * fusion search, which costs thousands of kernels made of the same
 * instructions (memo.c says why a kernel costed with it is bit-identical
 * to one costed without). cost.c and plan.c read and fill the figures;
 * memo.c only keeps them. */
struct sim_member_memo {
	const struct ir_computation *c;
	bool *has_work;           /* per instruction: work[i] holds its */
	struct sim_work *work;    /* count_instr's figure (cost.c) */
	bool *has_vpu;            /* per instruction: vpu[i] holds its */
	double *vpu;              /* sim_instr_vpu_cycles on hw (plan.c) */
	struct hw_spec hw;        /* the spec vpu[] holds cycles for (a copy:
	                             compared byte for byte, so another spec,
	                             or the same one changed, starts again) */
	bool have_hw;
	int *at, *stamp, gen;     /* the planned kernel's member places:
	                             at[i] current when stamp[i] == gen */
	long n_worked;            /* members' figures cost.c and plan.c
	                             worked out, kept or not (not found
	                             here) */
};
/* A memo of computation c's instructions, holding nothing yet; NULL when
 * out of memory. sim_member_memo_free it (NULL is fine). */
struct sim_member_memo *sim_member_memo_new(const struct ir_computation *c);
void sim_member_memo_free(struct sim_member_memo *mm);
/* in's index in the memo's computation, -1 when in is not one of its
 * instructions (another computation's, or a stand-in for one: kernels.c
 * lowers a library call or a copy-start into a copy of the instruction
 * under another opcode, with the same parent and index). */
int sim_member_memo_index(const struct sim_member_memo *mm,
			  const struct ir_instr *in);
/* Makes vpu[] hold cycles on hw: emptied when hw is not the spec it
 * holds them for. */
void sim_member_memo_use(struct sim_member_memo *mm, const struct hw_spec *hw);
/* sim_instr_vpu_cycles(hw, in, 0) from memo mm (NULL: none; used on hw,
 * sim_member_memo_use) where it keeps in's, else worked out (counted in
 * mm->n_worked) and kept there: the same figure either way (plan.c). */
double sim_member_vpu(struct sim_member_memo *mm, const struct hw_spec *hw,
		      const struct ir_instr *in);
/* Begins a plan on hw of a kernel of comp with members[0 .. n): marks
 * their places (a member listed twice: its last) for
 * sim_member_memo_place, until the next call, and empties vpu[] when hw
 * is not the spec it holds cycles for; false (nothing done) when comp is
 * not the memo's computation. */
bool sim_member_memo_begin(struct sim_member_memo *mm,
			   const struct hw_spec *hw,
			   const struct ir_computation *comp,
			   const struct ir_instr *const *members, int n);
/* The place among the members last marked of comp's instruction at
 * index (0 <= index < comp->n_instrs), or -1. */
static inline int sim_member_memo_place(const struct sim_member_memo *mm,
					int index)
{
	return mm->stamp[index] == mm->gen ? mm->at[index] : -1;
}

/* Index of instruction in within c; -1 when it is not one of c's (an
 * operand nested in an operand list, or another computation's). */
static inline int sim_index_in(const struct ir_computation *c,
			       const struct ir_instr *in)
{
	return in && in->parent == c && in->index >= 0 &&
			       in->index < c->n_instrs && c->instrs[in->index] == in
		       ? in->index
		       : -1;
}

#endif /* KERNELS_INT_H */
