/*
 * fusion.c: the fusion pass as HLO text. An unfused (pre-optimization)
 * module is grouped the way XLA's TPU fusion passes would group it (the
 * `xla` policy: grouping.c, the same decisions `tpusim run` costs such a
 * module with), and written back out as a fused module that tpusim reads
 * back to the same kernels:
 *
 *   - every group with at least two working members (not free, not
 *     constant-derived) becomes a fusion instruction calling a fused
 *     computation: a parameter per value the group reads from outside
 *     (sim_group_inputs, in that order), the members in text order with
 *     their operands renamed, and as root the single value it writes, or
 *     a tuple of them (multi-output fusion; the caller then reads each
 *     with get-tuple-element under the value's old name);
 *   - kind=kOutput when a dot or convolution has an epilogue, kInput when
 *     a reduce is fused, kCustom for a collective chain's start or done
 *     with its clone (sim_chain_grouped), kLoop otherwise;
 *   - recomputed producers (cheap ops fused into several users) are
 *     copied into each fused computation; a single-op group stays
 *     unfused; dead pure instructions are dropped, as XLA's DCE does;
 *   - legality: a group one of whose inputs depends on one of its own
 *     members would make a cycle: the grouping splits it, each member a
 *     kernel of its own (counted: sim_fuse_stats.cycle_split); what XLA
 *     keeps alone (sim_fuse_alone) is never fused;
 *   - computations the grouping does not apply to (reduction regions,
 *     comparators, already fused computations) are copied verbatim;
 *   - in a computation the program scheduled (sim/schedule.c: its
 *     all-reduces or all-gathers run asynchronously on the spec), the
 *     nodes follow that schedule and each such collective is written as
 *     <name>.start = all-reduce-start (all-gather-start, of shape
 *     (operand, result)) and, at its done's place, <name> =
 *     all-reduce-done (all-gather-done), which its readers read.
 *
 * Instructions are re-emitted from their own text (the parser's byte
 * spans: rhs and operand list), so shapes, layouts and attributes are kept
 * as written; only operand lists are rewritten, as bare names. Module and
 * computation headers are written from the IR (the module header's text
 * span; each computation's name, parameters and result shape). Known
 * limits: instructions nested inside the operand lists of a grouped
 * computation are refused with a message; computation attributes after
 * the body (execution_thread=) are not kept, nor are control-predecessors
 * (hlo_emit.c).
 */
#include "hlo_emit.h"
#include "kernels_int.h"

#include <string.h>

/* A value no kernel writes (a parameter, a loop's result) copied into
 * VMEM: its copy-start and copy-done are named start and done (the
 * program's pair; done NULL: no reader). */
struct prefetch {
	const struct ir_instr *v;
	const char *start, *done;
	bool cross;           /* the cross-program prefetch */
	bool done_written;
};

/* A value written into VMEM and copied to HBM behind its first readers
 * (placement.c's eviction): its copy-start after the node whose root is
 * writer, its copy-done after the one whose root is after; the nodes
 * rooted at late[0 .. n_late) read the copy-done. */
struct evict {
	const struct ir_instr *v, *writer, *after;
	const char *start, *done;
	const struct ir_instr **late;
	int n_late;
};

struct emitter {
	struct hlo_emit h;    /* text primitives (hlo_emit.c) */
	const struct ir_module *m;
	int n_fusions;        /* fused computations written so far */
	struct sim_fuse_stats *stats;
	const struct sim_fusion_plan *plan; /* NULL: the xla policy */
	struct ts_ptrmap vmem; /* the values written in S(1) (the
				  program's placement) */
	int n_prefetches;
	struct prefetch *prefetches; /* the program's prefetches that move
				  their parameter (not idle) */
	int n_evicts;
	struct evict *evicts; /* the program's evictions that move their
				 value (not idle) */
	const struct ir_instr *reader; /* the root of the node being
				  written: whom value_name names for */
	const struct sim_program *placed; /* its schedules (async
				  collectives, sim/schedule.c), or NULL */
	bool start_tuple;     /* the instruction being written is an async
				  all-gather's start: its shape is
				  (operand, result), as XLA's */
};

/* v's shape as written: in VMEM (into *tmp) when memory-space
 * assignment keeps it there, else as it is. */
static const struct ir_shape *shape_of(const struct emitter *e,
				       const struct ir_instr *v,
				       struct ir_shape *tmp)
{
	return ts_ptrmap_get(&e->vmem, v) >= 0 ? sim_vmem_shape(&v->shape, tmp)
					       : &v->shape;
}

/* The eviction of v that the node being written reads (one of its late
 * readers), or NULL. */
static const struct evict *evicted_for(const struct emitter *e,
				       const struct ir_instr *v)
{
	for (int x = 0; x < e->n_evicts; x++)
		for (int q = 0; e->evicts[x].v == v && q < e->evicts[x].n_late;
		     q++)
			if (e->evicts[x].late[q] == e->reader)
				return &e->evicts[x];
	return NULL;
}

/* A tuple, or an optimization barrier of one: its elements are its
 * operands' buffers (placement.c passes them through a barrier); a
 * collective of a tuple writes each element as a buffer of its own (its
 * get-tuple-element); so an element in VMEM is written S(1). 1: the
 * shape so written, into *tmp (elements from arena a); 0: no element in
 * VMEM; -1: out of memory. */
static int barrier_shape(const struct emitter *e, const struct ir_instr *in,
			  struct ts_arena *a, struct ir_shape *tmp)
{
	const struct ir_instr *t = sim_barrier_tuple(in) ? in->operands[0] : in;
	bool collective = sim_collective_tuple(in);
	if ((t->op != IR_OP_TUPLE && !collective) ||
	    in->shape.type != IR_TYPE_TUPLE ||
	    (!collective && in->shape.n_elems != t->n_operands))
		return 0;
	struct ir_shape *el = NULL;
	const struct ir_instr **names =
		collective ? ts_arena_array(a, (size_t)in->shape.n_elems + 1,
					    sizeof *names)
			   : NULL;
	if (collective && !names)
		return -1;
	if (collective && !sim_tuple_elements(in, names))
		return 0;
	for (int i = 0; i < in->shape.n_elems; i++) {
		const struct ir_instr *o = collective ? names[i] : t->operands[i];
		if (!o || (!collective && sim_passes_through(t, i)))
			continue; /* a loop's state passed on: in HBM */
		if (ts_ptrmap_get(&e->vmem, o) < 0 || evicted_for(e, o) ||
		    in->shape.elems[i].type == IR_TYPE_TUPLE)
			continue;
		if (!el && !(el = ts_arena_dup(a, in->shape.elems,
					       (size_t)in->shape.n_elems *
						       sizeof *el)))
			return -1;
		el[i].layout.memory_space = 1;
	}
	if (!el)
		return 0;
	*tmp = in->shape;
	tmp->elems = el;
	return 1;
}

static void put_shape(struct emitter *e, const struct ir_instr *v)
{
	struct ir_shape tmp;
	hlo_emit_shape(&e->h, shape_of(e, v, &tmp));
}

/* The prefetch of v, or NULL. */
static struct prefetch *prefetch_of(const struct emitter *e,
				    const struct ir_instr *v)
{
	for (int f = 0; f < e->n_prefetches; f++)
		if (e->prefetches[f].v == v)
			return &e->prefetches[f];
	return NULL;
}

/* The name v is read under: a prefetched value as its copy-done, an
 * evicted value by its late readers as its copy-done. */
static const char *value_name(const struct emitter *e, const struct ir_instr *v)
{
	const struct prefetch *f = prefetch_of(e, v);
	const struct evict *x = f ? NULL : evicted_for(e, v);
	return f && f->done ? f->done : x ? x->done : v->name;
}

/* The shape of v as the node being written reads it: in HBM where it
 * reads an eviction's copy-done. */
static void put_read_shape(struct emitter *e, const struct ir_instr *v)
{
	if (evicted_for(e, v))
		hlo_emit_shape(&e->h, &v->shape);
	else
		put_shape(e, v);
}

/* Copy-start `start` of v: (to, from, context), into VMEM (a prefetch:
 * v in HBM) or out of it (an eviction: v in VMEM, as placed). */
static void put_copy_start(struct emitter *e, const char *start,
			   const struct ir_instr *v, bool into_vmem, bool cross)
{
	fprintf(e->h.out, "  %%%s = (", start);
	for (int end = 0; end < 2; end++) {
		if ((end == 0) == into_vmem)
			put_shape(e, v);
		else
			hlo_emit_shape(&e->h, &v->shape);
		fputs(", ", e->h.out);
	}
	fprintf(e->h.out, "u32[]{:S(2)}) copy-start(%%%s)%s\n", v->name,
		cross ? ", cross_program_prefetch_index=0" : "");
}

/* The evictions' copy-starts after the node rooted at root, and their
 * copy-dones after the node of their last reader in VMEM. */
static void put_evicts(struct emitter *e, const struct ir_instr *root)
{
	for (int x = 0; x < e->n_evicts; x++) {
		const struct evict *ev = &e->evicts[x];
		if (ev->writer == root)
			put_copy_start(e, ev->start, ev->v, false, false);
		if (ev->after == root) {
			fprintf(e->h.out, "  %%%s = ", ev->done);
			hlo_emit_shape(&e->h, &ev->v->shape);
			fprintf(e->h.out, " copy-done(%%%s)\n", ev->start);
		}
	}
}

/* The prefetches' copy-dones, before the first node that reads their
 * parameters (deps: what the node reads). */
static void put_prefetch_done(struct emitter *e,
			      const struct ir_instr *const *deps, int nd)
{
	for (int q = 0; q < nd; q++) {
		struct prefetch *f = prefetch_of(e, deps[q]);
		if (!f || !f->done || f->done_written)
			continue;
		fprintf(e->h.out, "  %%%s = ", f->done);
		put_shape(e, f->v);
		fprintf(e->h.out, " copy-done(%%%s)\n", f->start);
		f->done_written = true;
	}
}

/* Members of group id that do work (sim_group_working). */
static int working_members(const struct grouping *g, int id)
{
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem), n = 0;
	for (int q = 0; q < n_mem; q++)
		n += sim_group_working(g, mem[q]);
	return n;
}

/* Members of group id that XLA keeps inside the kernel that uses them:
 * working ones, constant-derived ones (a broadcast of a constant), the
 * constants themselves (a reduce's init value) and bitcasts (the kernel
 * reads what they pass on, sim/grouping.c); not other free ops. */
static int device_members(const struct grouping *g, int id)
{
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem), n = 0;
	for (int q = 0; q < n_mem; q++) {
		const struct ir_instr *in = g->c->instrs[mem[q]];
		n += g->live[mem[q]] && (in->op == IR_OP_CONSTANT ||
					 in->op == IR_OP_BITCAST ||
					 sim_fuse_class(g, in) != FC_FREE);
	}
	return n;
}

/* A group is fused when it has a working member (or is a stored
 * constant-derived value) and another device op or constant (written
 * alone, a broadcast of a constant would read back as a kernel of its
 * own, a reduce's constant init as an HBM operand) and its root is an op
 * XLA fuses. (A group that would be a cyclic fusion never gets here: the
 * grouping splits it, sim/grouping.c dissolve_cycles.) */
static bool fusible(const struct grouping *g, int id)
{
	/* a stored constant-derived value (a broadcast of a constant that
	 * a tuple reads) is a fusion of its own: it writes the buffer */
	int root = g->g_root[id];
	if ((working_members(g, id) < 1 && !g->cd[root]) ||
	    device_members(g, id) < 2)
		return false;
	/* what XLA keeps alone is never fused, not even with the constants
	 * it reads, but for a collective chain's start or done with its
	 * clone (XLA's kCustom async-collective-start and done) */
	return !sim_fuse_alone(g->c->instrs[root]) || sim_chain_grouped(g, id);
}

static const char *fusion_kind(const struct grouping *g, int id)
{
	bool reduce = false, mxu = false;
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	for (int q = 0; q < n_mem; q++) {
		enum ir_op op = g->c->instrs[mem[q]]->op;
		reduce |= op == IR_OP_REDUCE || op == IR_OP_REDUCE_WINDOW;
		mxu |= op == IR_OP_DOT || op == IR_OP_CONVOLUTION;
	}
	if (sim_chain_grouped(g, id))
		return ir_fusion_kind_name(IR_FUSION_CUSTOM);
	return ir_fusion_kind_name(mxu	   ? IR_FUSION_OUTPUT
				   : reduce ? IR_FUSION_INPUT
					    : IR_FUSION_LOOP);
}

/* Whether in's text carries a backend_config attribute, {...} or
 * "{...}" (hlo_emit writes backend_first into either). */
static bool has_backend_config(const struct emitter *e,
			       const struct ir_instr *in)
{
	return hlo_emit_find_attr(&e->h, in->rhs_begin, in->rhs_end,
				  "backend_config={") < in->rhs_end ||
	       hlo_emit_find_attr(&e->h, in->rhs_begin, in->rhs_end,
				  "backend_config=\"{") < in->rhs_end;
}

/* One instruction of a group's computation: named name + suffix, each
 * operand renamed: a member of group id (id >= 0) to its own name +
 * suffix, an input to its parameter, any other value as it is. */
static enum ts_status put_instr(struct emitter *e, const struct ir_instr *in,
				bool root, const char *suffix,
				const struct grouping *g, int id,
				const struct ir_instr *const *inputs,
				int n_inputs)
{
	struct ts_arena a;
	ts_arena_init(&a);
	const char **ops = ts_arena_array(&a, (size_t)in->n_operands + 1,
					  sizeof *ops);
	enum ts_status st = ops ? TS_OK : TS_ERR_NOMEM;
	for (int j = 0; !st && j < in->n_operands; j++) {
		const struct ir_instr *o = in->operands[j];
		int k = sim_index_in(g->c, o);
		if (k < 0) {
			ts_diag_set(e->h.d, e->h.file, in->line, in->col,
				    "%s: operand %d is nested in its operand "
				    "list: not re-emitted",
				    in->name, j);
			st = TS_ERR_UNSUPPORTED_OP;
			break;
		}
		int p = -1;
		bool member = id >= 0 && sim_group_member(g, id, k);
		for (int q = 0; !member && q < n_inputs; q++)
			if (inputs[q] == o)
				p = q;
		ops[j] = member	  ? ts_arena_printf(&a, "%s%s", o->name, suffix)
			 : p >= 0 ? ts_arena_printf(&a, "param_%d%s", p, suffix)
			 : sim_passes_through(in, j) ? o->name /* not its copy */
						     : value_name(e, o);
		if (!ops[j])
			st = TS_ERR_NOMEM;
	}
	const char *name = st ? NULL
			      : ts_arena_printf(&a, "%s%s", in->name, suffix);
	if (!st && !name)
		st = TS_ERR_NOMEM;
	/* A loop whose count was derived from its induction variable keeps
	 * it as known_trip_count: the variable's increment may now sit
	 * inside a fusion, where the pattern (sim_while_trip_count) no
	 * longer reads it. In its backend_config, a new one or first in
	 * its own. */
	const char *attrs = NULL, *count = NULL;
	int64_t trip;
	if (!st && in->op == IR_OP_WHILE && in->attrs.known_trip_count < 0 &&
	    sim_while_trip_count(in, &trip) &&
	    !(count = ts_arena_printf(&a, "\"known_trip_count\":{\"n\":\"%lld\"}",
				      (long long)trip)))
		st = TS_ERR_NOMEM;
	if (count && !has_backend_config(e, in) &&
	    !(attrs = ts_arena_printf(&a, ", backend_config={%s}", count)))
		st = TS_ERR_NOMEM;
	if (count && !attrs && !st &&
	    !(e->h.backend_first = ts_arena_printf(&a, "%s,", count)))
		st = TS_ERR_NOMEM;
	/* a prefetched value stays in HBM, and a bitcast of a value
	 * this node reads from an eviction's copy-done is in HBM */
	const struct ir_instr *src = in;
	while (src->op == IR_OP_BITCAST && src->n_operands == 1)
		src = src->operands[0];
	struct ir_shape tmp;
	const struct ir_shape *s =
		prefetch_of(e, in) || (src != in && evicted_for(e, src))
			? &in->shape
			: shape_of(e, in, &tmp);
	int barrier = st ? 0 : barrier_shape(e, in, &a, &tmp);
	if (barrier > 0)
		s = &tmp;
	else if (barrier < 0)
		st = TS_ERR_NOMEM;
	struct ir_shape pair[2], start;
	if (e->start_tuple) { /* (operand, result) */
		pair[0] = *shape_of(e, in->operands[0], &pair[0]);
		pair[1] = *s;
		start = (struct ir_shape){.type = IR_TYPE_TUPLE, .n_elems = 2,
					  .elems = pair};
		s = &start;
	}
	if (!st)
		st = hlo_emit_instr(&e->h, in, root, name,
				    s == &in->shape ? NULL : s, ops, attrs);
	e->h.backend_first = NULL;
	ts_arena_free(&a);
	return st;
}

/* The shape of outs[0..n): the one shape, or a tuple of them. */
static void put_out_shape(struct emitter *e, const struct ir_instr *const *outs,
			  int n)
{
	if (n == 1) {
		put_shape(e, outs[0]);
		return;
	}
	fputc('(', e->h.out);
	for (int o = 0; o < n; o++) {
		if (o)
			fputs(", ", e->h.out);
		put_shape(e, outs[o]);
	}
	fputc(')', e->h.out);
}

/* The fused computation of group id; its outputs into outs. */
static enum ts_status put_fused(struct emitter *e, const struct grouping *g,
				int id, int k, const struct ir_instr **inputs,
				int n_inputs, const struct ir_instr **outs,
				int n_outs)
{
	const struct ir_computation *c = g->c;
	char suffix[32];
	snprintf(suffix, sizeof suffix, ".f%d", k);
	fprintf(e->h.out, "\n%%fused_computation.%d (", k);
	for (int p = 0; p < n_inputs; p++) {
		fprintf(e->h.out, "%sparam_%d%s: ", p ? ", " : "", p, suffix);
		put_read_shape(e, inputs[p]);
	}
	fputs(") -> ", e->h.out);
	put_out_shape(e, outs, n_outs);
	fputs(" {\n", e->h.out);
	for (int p = 0; p < n_inputs; p++) {
		fprintf(e->h.out, "  %%param_%d%s = ", p, suffix);
		put_read_shape(e, inputs[p]);
		fprintf(e->h.out, " parameter(%d)\n", p);
	}
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem);
	for (int q = 0; q < n_mem; q++) {
		const struct ir_instr *in = c->instrs[mem[q]];
		bool root = n_outs == 1 && in == outs[0];
		enum ts_status st = put_instr(e, in, root, suffix, g, id, inputs,
					      n_inputs);
		if (st)
			return st;
	}
	if (n_outs > 1) {
		fprintf(e->h.out, "  ROOT %%tuple%s = ", suffix);
		put_out_shape(e, outs, n_outs);
		fputs(" tuple(", e->h.out);
		for (int o = 0; o < n_outs; o++)
			fprintf(e->h.out, "%s%%%s%s", o ? ", " : "", outs[o]->name,
				suffix);
		fputs(")\n", e->h.out);
	}
	fputs("}\n", e->h.out);
	return TS_OK;
}

/* The fusion instruction of group id (fused computation k) and, for a
 * multi-output fusion, a get-tuple-element per output under the output's
 * old name; outs/no: its outputs, inputs/ni: what it reads. */
static void put_fusion_instr(struct emitter *e, const struct grouping *g,
			     int id, int k, const struct ir_instr *const *inputs,
			     int ni, const struct ir_instr *const *outs, int no)
{
	const struct ir_instr *root = g->c->root;
	char name[64];
	snprintf(name, sizeof name, "fusion.f%d", k);
	fprintf(e->h.out, "  %s%%%s = ", no == 1 && outs[0] == root ? "ROOT " : "",
		no == 1 ? outs[0]->name : name);
	put_out_shape(e, outs, no);
	fputs(" fusion(", e->h.out);
	for (int q = 0; q < ni; q++)
		fprintf(e->h.out, "%s%%%s", q ? ", " : "", value_name(e, inputs[q]));
	fprintf(e->h.out, "), kind=%s, calls=%%fused_computation.%d\n",
		fusion_kind(g, id), k);
	for (int o = 0; no > 1 && o < no; o++) {
		fprintf(e->h.out, "  %s%%%s = ", outs[o] == root ? "ROOT " : "",
			outs[o]->name);
		put_shape(e, outs[o]);
		fprintf(e->h.out, " get-tuple-element(%%%s), index=%d\n", name, o);
	}
}

/* Group id's outputs (members written to HBM) into outs; their count. */
static int group_outputs(const struct grouping *g, int id,
			 const struct ir_instr **outs)
{
	const int *mem;
	int n_mem = sim_group_members(g, id, &mem), no = 0;
	int gen = sim_group_mark(g, id);
	for (int q = 0; q < n_mem; q++)
		if (sim_group_output(g, gen, mem[q]))
			outs[no++] = g->c->instrs[mem[q]];
	return no;
}

/* Scratch of put_grouped, g->n (+ groups) long. */
struct order {
	const struct ir_instr **inputs, **outs;
	int *fused_id;   /* per group: its fused computation, -1: unfused */
	int *out_group;  /* per instruction: the fused group it is an output
			    of (-1: none) */
	bool *inside;    /* per instruction: lives only inside fusions */
};

static void order_free(struct order *o)
{
	ts_free(o->inputs);
	ts_free(o->outs);
	ts_free(o->fused_id);
	ts_free(o->out_group);
	ts_free(o->inside);
}

static enum ts_status order_alloc(struct order *o, const struct grouping *g)
{
	size_t ni = (size_t)g->n + 1, ng = (size_t)g->n_groups + 1;
	o->inputs = ts_malloc(ni * sizeof *o->inputs);
	o->outs = ts_malloc(ni * sizeof *o->outs);
	o->fused_id = ts_malloc(ng * sizeof *o->fused_id);
	o->out_group = ts_malloc(ni * sizeof *o->out_group);
	o->inside = ts_calloc(ni, sizeof *o->inside);
	if (!(o->inputs && o->outs && o->fused_id && o->out_group &&
	      o->inside))
		return TS_ERR_NOMEM;
	return TS_OK;
}

/* The number of the next fused computation written,
 * fused_computation.<k>: one no computation of the module (one of XLA's
 * kCustom fusions kept as it is) already has. */
static int next_fusion(struct emitter *e)
{
	for (;;) {
		char name[48];
		snprintf(name, sizeof name, "fused_computation.%d", e->n_fusions);
		bool taken = false;
		for (int c = 0; c < e->m->n_comps && !taken; c++)
			taken = e->m->comps[c]->name &&
				!strcmp(e->m->comps[c]->name, name);
		if (!taken)
			return e->n_fusions++;
		e->n_fusions++;
	}
}

/* Which groups become fusions: a representative group that is fusible
 * and writes something. Members of fused
 * groups live inside them, unless an unfused group also needs one. */
static void choose_fusions(struct emitter *e, const struct grouping *g,
			   struct order *o)
{
	for (int i = 0; i < g->n; i++)
		o->out_group[i] = -1;
	for (int id = 0; id < g->n_groups; id++) {
		o->fused_id[id] = -1;
		if (g->g_rep[id] != id)
			continue;
		if (!fusible(g, id) || group_outputs(g, id, o->outs) == 0)
			continue;
		o->fused_id[id] = next_fusion(e);
		const int *mem;
		int n_mem = sim_group_members(g, id, &mem);
		int gen = sim_group_mark(g, id);
		for (int q = 0; q < n_mem; q++) {
			int i = mem[q];
			o->inside[i] = true;
			if (sim_group_output(g, gen, i))
				o->out_group[i] = id;
		}
	}
	for (int id = 0; id < g->n_groups; id++) {
		if (g->g_rep[id] != id || o->fused_id[id] >= 0)
			continue;
		const int *mem;
		int n_mem = sim_group_members(g, id, &mem);
		for (int q = 0; q < n_mem; q++)
			o->inside[mem[q]] = false;
	}
	/* a member copied into fusions (a constant, a constant-derived
	 * value) that something written outside still reads: a fusion's
	 * input, or an instruction of no fusion; written there as well */
	for (int id = 0; id < g->n_groups; id++) {
		if (o->fused_id[id] < 0)
			continue;
		int ni = sim_group_inputs(g, id, o->inputs);
		for (int q = 0; q < ni; q++) {
			int k = sim_index_in(g->c, o->inputs[q]);
			if (k >= 0 && o->out_group[k] < 0)
				o->inside[k] = false;
		}
	}
	for (int i = g->n - 1; i >= 0; i--) { /* users first: chains */
		if (!o->inside[i] || o->out_group[i] >= 0)
			continue;
		for (int k = g->uoff[i]; k < g->uoff[i + 1]; k++)
			if (g->live[g->users[k]] && !o->inside[g->users[k]])
				o->inside[i] = false;
	}
}

/* The node that defines instruction k's value: k, or the fusion it is an
 * output of (n + group); -1 when k lives only inside fusions. */
static int node_of(const struct grouping *g, const struct order *o, int k)
{
	if (!o->inside[k])
		return k;
	return o->out_group[k] >= 0 ? g->n + o->out_group[k] : -1;
}

/* Writes node x (sim_group_order): a fused group's fusion instruction,
 * or an instruction of no fusion; an async collective's start when
 * `start`, its done (under its name) when x is g->n + g->n_groups + 1 +
 * its node. */
static enum ts_status write_node(struct emitter *e, const struct grouping *g,
				 struct order *o, int x, bool start)
{
	int nn = g->n + g->n_groups + 1;
	if (x >= nn) {
		int k = x - nn;
		const struct ir_instr *in =
			g->c->instrs[k < g->n ? k : g->g_root[k - g->n]];
		fprintf(e->h.out, "  %s%%%s = ", in == g->c->root ? "ROOT " : "",
			in->name);
		put_shape(e, in);
		fprintf(e->h.out, " %s-done(%%%s.start)\n",
			in->op == IR_OP_ALL_GATHER ? "all-gather" : "all-reduce",
			in->name);
		return TS_OK;
	}
	if (x >= g->n) {
		int id = x - g->n;
		int ni = sim_group_inputs(g, id, o->inputs);
		int no = group_outputs(g, id, o->outs);
		put_prefetch_done(e, o->inputs, ni);
		e->reader = g->c->instrs[g->g_root[id]];
		put_fusion_instr(e, g, id, o->fused_id[id], o->inputs, ni,
				 o->outs, no);
		put_evicts(e, e->reader);
		return TS_OK;
	}
	const struct ir_instr *in = g->c->instrs[x];
	if (!g->live[x] && in->op != IR_OP_PARAMETER)
		return TS_OK; /* dead: XLA's DCE drops it */
	put_prefetch_done(e, (const struct ir_instr *const *)in->operands,
			  in->n_operands);
	e->reader = in;
	bool gather = in->op == IR_OP_ALL_GATHER;
	e->h.op_as = !start ? NULL
		     : gather ? "all-gather-start"
			      : "all-reduce-start";
	e->start_tuple = start && gather;
	enum ts_status st = put_instr(e, in, in == g->c->root && !start,
				      start ? ".start" : "", g, -1, NULL, 0);
	e->h.op_as = NULL;
	e->start_tuple = false;
	const struct prefetch *f = st ? NULL : prefetch_of(e, in);
	if (f)
		put_copy_start(e, f->start, f->v, true, f->cross);
	if (!st)
		put_evicts(e, in);
	return st;
}

/* A grouped computation: its fused computations first, then its own text
 * with each fused group replaced by its fusion instruction, in an order
 * where every value is defined before it is read. */
static enum ts_status put_grouped(struct emitter *e,
				  const struct ir_computation *c)
{
	struct grouping g;
	struct order o = {0};
	enum ts_status st =
		sim_grouping_build(&g, c, sim_plan_force(e->plan, c), NULL);
	if (!st)
		st = order_alloc(&o, &g);
	if (!st)
		choose_fusions(e, &g, &o);
	for (int i = 0; !st && i < g.n; i++)
		e->stats->cycle_split += g.why[i] == SIM_WHY_CYCLE;
	/* fused computations, before the computation that calls them */
	for (int id = 0; !st && id < g.n_groups; id++) {
		if (o.fused_id[id] < 0)
			continue;
		int ni = sim_group_inputs(&g, id, o.inputs);
		int no = group_outputs(&g, id, o.outs);
		e->reader = c->instrs[g.g_root[id]];
		st = put_fused(e, &g, id, o.fused_id[id], o.inputs, ni, o.outs,
			       no);
		e->stats->fusions++;
		e->stats->multi_output += no > 1;
	}
	/* in an order where every value is defined before it is read, each
	 * fusion at its last member (sim_group_order) */
	size_t nn = (size_t)g.n + (size_t)g.n_groups + 1;
	int *node = st ? NULL : ts_malloc(nn * sizeof *node);
	int *order = st ? NULL : ts_malloc(2 * nn * sizeof *order);
	int n_order = 0;
	if (!st && (!node || !order))
		st = TS_ERR_NOMEM;
	for (int k = 0; !st && k < g.n; k++)
		node[k] = node_of(&g, &o, k);
	if (!st && (n_order = sim_group_order(&g, node, order)) < 0)
		st = TS_ERR_NOMEM;
	/* the program's schedule: its async collectives as starts and
	 * dones (sim/schedule.c) */
	const struct sim_schedule *sched = NULL;
	for (int i = 0; e->placed && i < e->placed->n_schedules; i++)
		if (e->placed->schedules[i].c == c)
			sched = &e->placed->schedules[i];
	if (!st && sched &&
	    (n_order = sim_schedule_order(&g, sched, order, n_order)) < 0)
		st = TS_ERR_NOMEM;
	if (!st)
		hlo_emit_signature(&e->h, c);
	for (int q = 0; !st && q < n_order; q++) {
		int x = order[q];
		st = write_node(e, &g, &o, x,
				sched && x < g.n && sched->done[x] >= 0);
	}
	ts_free(node);
	ts_free(order);
	if (!st)
		fputs("}\n", e->h.out);
	order_free(&o);
	sim_grouping_free(&g);
	return st;
}

/* A computation the pass does not change: each instruction as written
 * (operands nested in an operand list included), but the root of one
 * kept fusion's (XLA's kCustom gather or scatter) written with that
 * fusion's shape, S(1), where placement keeps the fusion's result in
 * VMEM: a fusion's result is its root's buffer. */
static enum ts_status put_verbatim(struct emitter *e,
				   const struct ir_computation *c)
{
	hlo_emit_signature(&e->h, c);
	const struct ir_instr *u = c->n_callers == 1 ? c->caller : NULL;
	bool held = u && u->op == IR_OP_FUSION &&
		    ts_ptrmap_get(&e->vmem, u) >= 0;
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *in = c->instrs[i];
		struct ir_shape tmp;
		const struct ir_shape *s =
			held && in == c->root ? shape_of(e, u, &tmp) : NULL;
		enum ts_status st = hlo_emit_instr(&e->h, in, in == c->root,
						   in->name, s, NULL, NULL);
		if (st)
			return st;
	}
	fputs("}\n", e->h.out);
	return TS_OK;
}

static void evictions_free(struct emitter *e)
{
	for (int x = 0; x < e->n_evicts; x++)
		ts_free(e->evicts[x].late);
	ts_free(e->evicts);
	e->evicts = NULL;
	e->n_evicts = 0;
}

/* e->evicts: the placed program's evictions that move their value, each
 * from its kernel (after its writer's kernels and their evictions'),
 * its pair (done after its last reader in VMEM) and the kernels that
 * read the value from HBM. */
static enum ts_status evictions(struct emitter *e, const struct sim_program *p)
{
	int n = 0;
	for (int i = 0; p && i < p->n_kernels; i++)
		n += p->kernels[i].evict && !p->kernels[i].idle;
	if (!n)
		return TS_OK;
	if (!(e->evicts = ts_calloc((size_t)n, sizeof *e->evicts)))
		return TS_ERR_NOMEM;
	for (int a = 0; a < p->n_async; a++) {
		const struct sim_async *pa = &p->async[a];
		const struct sim_kernel *k = &p->kernels[pa->first];
		if (!k->evict || k->idle)
			continue;
		int w = pa->first - 1;
		while (w > 0 && p->kernels[w].evict)
			w--;
		struct evict *ev = &e->evicts[e->n_evicts++];
		const struct ir_instr *v = k->inputs[0];
		*ev = (struct evict){ /* a tuple's element: after its
					 get-tuple-element */
			.v = v, .writer = v->op == IR_OP_GET_TUPLE_ELEMENT
						  ? v
						  : p->kernels[w].instr,
			.after = p->kernels[pa->between + pa->n_between - 1].instr,
			.start = k->lowered->name, .done = pa->done->name};
		int late = 0;
		for (int pass = 0; pass < 2; pass++) {
			for (int r = pa->between + pa->n_between;
			     r < p->n_kernels; r++) {
				const struct sim_kernel *kr = &p->kernels[r];
				bool reads = false;
				for (int j = 0; j < kr->n_inputs; j++)
					reads = reads || kr->inputs[j] == ev->v;
				if (!reads || kr->dma)
					continue;
				if (pass)
					ev->late[ev->n_late++] = kr->instr;
				else
					late++;
			}
			if (!pass && !(ev->late = ts_calloc((size_t)late + 1,
							   sizeof *ev->late)))
				return TS_ERR_NOMEM;
		}
		/* the program's result reads it in HBM too */
		const struct ir_instr *root = e->m->entry->root;
		for (int j = 0; root && root->op == IR_OP_TUPLE &&
				j < root->n_operands; j++)
			if (root->operands[j] == ev->v) {
				ev->late[ev->n_late++] = root;
				break;
			}
	}
	return TS_OK;
}

enum ts_status sim_fuse_write(const struct ir_module *m, const char *text,
			      size_t len, const struct sim_fusion_plan *plan,
			      const struct sim_program *placed,
			      FILE *out, struct sim_fuse_stats *stats,
			      struct ts_diag *d)
{
	memset(stats, 0, sizeof *stats);
	struct emitter e = {.h = {.text = text, .len = len, .file = m->file,
				  .out = out, .d = d},
			    .m = m, .stats = stats, .plan = plan,
			    .placed = placed};
	/* the prefetches: their kernels' copies and pairs (none when idle:
	 * the copy moves nothing) */
	int n_pf = placed && placed->n_prefetches > 0 ? placed->n_prefetches : 0;
	e.prefetches = ts_calloc((size_t)n_pf + 1, sizeof *e.prefetches);
	if (!e.prefetches) {
		ts_diag_set(d, m->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	for (int i = 0; n_pf && i < placed->n_kernels; i++) {
		const struct sim_kernel *k = &placed->kernels[i];
		if (!k->prefetch || k->idle)
			continue;
		struct prefetch *f = &e.prefetches[e.n_prefetches++];
		*f = (struct prefetch){
			.v = k->inputs[0], .start = k->lowered->name,
			.cross = k->inputs[0] == placed->prefetched};
		for (int a = 0; a < placed->n_async; a++)
			if (placed->async[a].first == i)
				f->done = placed->async[a].done->name;
	}
	enum ts_status st = evictions(&e, placed);
	if (st) {
		ts_free(e.prefetches);
		evictions_free(&e);
		ts_diag_set(d, m->file, 0, 0, "out of memory");
		return st;
	}
	int n_vmem = e.n_prefetches, n_instrs = 0;
	for (int i = 0; placed && i < placed->n_kernels; i++)
		n_vmem += placed->kernels[i].n_vmem;
	for (int ci = 0; n_vmem && ci < m->n_comps; ci++)
		n_instrs += m->comps[ci]->n_instrs;
	bool *grouped = ts_calloc((size_t)m->n_comps + 1, sizeof *grouped);
	if (!grouped ||
	    !ts_ptrmap_init(&e.vmem, (size_t)(n_vmem + n_instrs) + 1)) {
		ts_free(grouped);
		ts_free(e.prefetches);
		evictions_free(&e);
		ts_diag_set(d, m->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	for (int i = 0; placed && i < placed->n_kernels; i++)
		for (int q = 0; q < placed->kernels[i].n_vmem; q++)
			ts_ptrmap_set(&e.vmem, placed->kernels[i].vmem[q], 1);
	for (int f = 0; f < e.n_prefetches; f++) /* in VMEM wherever it is
						       read (not as defined) */
		ts_ptrmap_set(&e.vmem, e.prefetches[f].v, 1);
	/* a bitcast of a value in VMEM is the same buffer (one a kernel
	 * holds as a member is written out as it is), operands first */
	for (int ci = 0; n_vmem && ci < m->n_comps; ci++)
		for (int i = 0; i < m->comps[ci]->n_instrs; i++) {
			const struct ir_instr *in = m->comps[ci]->instrs[i];
			if (in->op == IR_OP_BITCAST && in->n_operands == 1 &&
			    ts_ptrmap_get(&e.vmem, in->operands[0]) >= 0)
				ts_ptrmap_set(&e.vmem, in, 1);
		}
	if (m->entry)
		sim_mark_grouped(m->entry, grouped, 0);
	hlo_emit_module_header(&e.h, m, true); /* compiled: as written */
	for (int i = 0; i < m->n_comps && !st; i++) {
		const struct ir_computation *c = m->comps[i];
		st = grouped[c->index] ? put_grouped(&e, c) : put_verbatim(&e, c);
	}
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, m->file, 0, 0, "out of memory");
	ts_free(grouped);
	ts_free(e.prefetches);
	evictions_free(&e);
	ts_ptrmap_free(&e.vmem);
	return st;
}
