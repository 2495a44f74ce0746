/*
 * placement.c: memory-space assignment of an unfused module's kernels.
 * After fusion XLA places buffers in VMEM (S(1)) that live between one
 * kernel and the kernels that read them, where the chip has VMEM beyond
 * what a kernel keeps for its own tiles (its scoped limit): then neither
 * the kernel that writes such a value nor those that read it move it
 * through HBM. The compiled zoo shows it on v5e, v5p, v6e and v7 (a
 * v5e decoder step keeps 1,102 buffers in S(1), a 64 MiB attention
 * matrix among them) and never on v2-v4, whose VMEM the scoped limit
 * takes whole. A compiled module carries XLA's own placement in its
 * layouts; an unfused one, which `run` and `fuse` group as XLA would,
 * gets this one, and `fuse` writes it into the layouts it emits.
 *
 * The rule, a greedy interval packing over the schedule:
 *   room = vmem.bytes - vmem.scoped_bytes                        (bytes)
 *   a candidate: an array value one kernel writes and only kernels read,
 *     in the same computation, neither written nor read in place (a
 *     dynamic-update-slice's or scatter's buffer) nor read or written
 *     by an async transfer or a library call, nor the computation's
 *     result; its interval is [writer, last reader] in
 *     kernel (schedule) order;
 *   priority = (1 + readers) x runs / kernels in its interval: HBM bytes
 *     saved per byte of VMEM held per kernel it spans, highest first
 *     (XLA's assignment also orders buffers by the memory traffic they
 *     save per byte and time held); ties in schedule order;
 *   placed when at every kernel of its interval the values placed so
 *     far plus it fit in room.
 * Known wrong: no fragmentation (XLA allocates offsets; its heap can
 * fail where the sum fits); entry parameters and values a free op
 * (bitcast, get-tuple-element) passes on stay in HBM, where XLA also
 * prefetches weights with copy-start and places aliases; loop-carried
 * values stay in HBM; the priority counts bytes, not whether a kernel is
 * bound by HBM. Sources: the compiled zoo's layouts (data/compiled,
 * libtpu 0.0.42) for where placement happens, the spec's vmem fields for
 * the room (each spec file says where they come from); MaxText's
 * xla_flags_library: the scoped limit is VMEM "used for the current hlo
 * op", the rest "for prefetching" later ones.
 */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#include "kernels_int.h"

/* A value memory-space assignment may place: its writer and interval,
 * and the bitcasts of it (the same buffer: aliases[alias .. ), chained
 * by next). */
struct cand {
	const struct ir_instr *v;
	int writer, last;   /* kernel indices: the interval */
	int alias;          /* first alias, -1: none */
	bool ruled_out;
	double bytes, priority;
};

struct alias {
	const struct ir_instr *x;
	int next;           /* the candidate's next alias, -1: none */
};

struct cands {
	int n, n_alias;
	struct cand *c;
	struct alias *a;
	struct ts_ptrmap of;   /* value or alias -> its candidate */
};

/* Whether kernel k may hold a value in VMEM: a grouped or single-op
 * kernel, a collective's too (its ICI moves the buffer wherever it
 * lives), not an async transfer, library call or relayout (whose work
 * cost.c counts apart). */
static bool places(const struct sim_kernel *k)
{
	return k->kind != SIM_KERNEL_UNMODELLED && !k->async_work && !k->dma &&
	       !k->lowered && k->instr->op != IR_OP_FUSION &&
	       !sim_side_collective(k->instr);
}

static bool in_place(const struct ir_instr *u, const struct ir_instr *v)
{
	return (u->op == IR_OP_DYNAMIC_UPDATE_SLICE || u->op == IR_OP_SCATTER) &&
	       u->n_operands > 0 && u->operands[0] == v;
}

static bool has_input(const struct sim_kernel *k, const struct ir_instr *v)
{
	for (int i = 0; i < k->n_inputs; i++)
		if (k->inputs[i] == v)
			return true;
	return false;
}

/* Whether kernel k reads candidate c's buffer, as it or as an alias. */
static bool reads(const struct cands *cs, const struct sim_kernel *k,
		  const struct cand *c)
{
	bool r = has_input(k, c->v);
	for (int a = c->alias; !r && a >= 0; a = cs->a[a].next)
		r = has_input(k, cs->a[a].x);
	return r;
}

/* Whether value v, written by a kernel, may be placed at all (its
 * readers are checked apart, from its uses). */
static bool may_place(const struct ir_instr *v, double room)
{
	const struct ir_shape *s = &v->shape;
	double bytes = ir_shape_padded_bytes(s);
	return s->type != IR_TYPE_TUPLE && !sim_on_chip(s) &&
	       v != v->parent->root && v->op != IR_OP_DYNAMIC_UPDATE_SLICE &&
	       v->op != IR_OP_SCATTER && v->n_users > 0 && bytes > 0 &&
	       bytes <= room;
}

/* Use of buffer `val` (candidate c or an alias of it) by instruction u
 * of kernel r (< 0: of no kernel that places): widens c's interval, or
 * rules c out. */
static void use(const struct sim_program *p, struct cand *c,
		const struct ir_instr *val, const struct ir_instr *u, int r)
{
	if (r < 0 || in_place(u, val) || r < c->writer ||
	    (r > c->writer && !has_input(&p->kernels[r], val)))
		c->ruled_out = true;
	else if (r > c->last)
		c->last = r;
}

/* The candidates of p (owner: every member's kernel, the last for one
 * recomputed in several, or -2 for a kernel that does not place): the
 * values the placing kernels write, their bitcasts outside kernels
 * (aliases), then every use of either. */
static enum ts_status find(const struct sim_program *p, double room,
			   const struct ts_ptrmap *owner, struct cands *cs)
{
	const struct ir_module *m = p->module;
	int n_outputs = 0, n_instrs = 0;
	for (int i = 0; i < p->n_kernels; i++)
		n_outputs += p->kernels[i].n_outputs;
	for (int ci = 0; ci < m->n_comps; ci++)
		n_instrs += m->comps[ci]->n_instrs;
	cs->c = ts_malloc((size_t)(n_outputs + 1) * sizeof *cs->c);
	cs->a = ts_malloc((size_t)(n_instrs + 1) * sizeof *cs->a);
	if (!cs->c || !cs->a ||
	    !ts_ptrmap_init(&cs->of, (size_t)(n_outputs + n_instrs) + 1))
		return TS_ERR_NOMEM;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		for (int o = 0; places(k) && o < k->n_outputs; o++) {
			const struct ir_instr *v = k->outputs[o];
			if (!may_place(v, room) || ts_ptrmap_get(&cs->of, v) >= 0)
				continue;
			cs->c[cs->n] = (struct cand){
				.v = v, .writer = i, .last = i, .alias = -1,
				.bytes = ir_shape_padded_bytes(&v->shape)};
			ts_ptrmap_set(&cs->of, v, cs->n++);
		}
	}
	/* bitcasts no kernel holds, in text order: operands first */
	for (int ci = 0; ci < m->n_comps; ci++) {
		const struct ir_computation *comp = m->comps[ci];
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *u = comp->instrs[i];
			int a = u->op == IR_OP_BITCAST && u->n_operands == 1 &&
						ts_ptrmap_get(owner, u) == -1
					? ts_ptrmap_get(&cs->of, u->operands[0])
					: -1;
			if (a < 0 || u == comp->root || sim_on_chip(&u->shape))
				continue;
			cs->a[cs->n_alias] = (struct alias){u, cs->c[a].alias};
			cs->c[a].alias = cs->n_alias++;
			ts_ptrmap_set(&cs->of, u, a);
		}
	}
	for (int ci = 0; ci < m->n_comps; ci++) {
		const struct ir_computation *comp = m->comps[ci];
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *u = comp->instrs[i];
			int r = ts_ptrmap_get(owner, u);
			for (int j = 0; j < u->n_operands; j++) {
				const struct ir_instr *val = u->operands[j];
				int a = ts_ptrmap_get(&cs->of, val);
				bool alias = a >= 0 && ts_ptrmap_get(&cs->of, u) == a;
				if (a >= 0 && !alias)
					use(p, &cs->c[a], val, u, r);
			}
		}
	}
	return TS_OK;
}

/* The candidates of p not ruled out and read by some other kernel, with
 * their priorities, first in cs->c. */
static enum ts_status candidates(const struct sim_program *p, double room,
				 struct cands *cs)
{
	int n_members = 0;
	for (int i = 0; i < p->n_kernels; i++)
		n_members += p->kernels[i].n_members;
	struct ts_ptrmap owner;
	if (!ts_ptrmap_init(&owner, (size_t)n_members + 1))
		return TS_ERR_NOMEM;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		for (int q = 0; q < k->n_members; q++)
			ts_ptrmap_set(&owner, k->members[q], places(k) ? i : -2);
	}
	enum ts_status st = find(p, room, &owner, cs);
	ts_ptrmap_free(&owner);
	int kept = 0;
	for (int a = 0; st == TS_OK && a < cs->n; a++) {
		struct cand c = cs->c[a];
		if (c.ruled_out || c.last == c.writer)
			continue;
		int readers = 0; /* each reading kernel once */
		for (int r = c.writer + 1; r <= c.last; r++)
			readers += reads(cs, &p->kernels[r], &c);
		c.priority = (1.0 + readers) * p->kernels[c.writer].multiplicity /
			     (double)(c.last - c.writer + 1);
		cs->c[kept++] = c;
	}
	cs->n = kept;
	return st;
}

static int by_priority(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->writer != y->writer)
		return x->writer < y->writer ? -1 : 1;
	return x->v->index < y->v->index ? -1 : x->v->index > y->v->index;
}

/* Appends v to kernel k's values in VMEM. */
static bool hold(struct sim_kernel *k, const struct ir_instr *v)
{
	const struct ir_instr **grown =
		ts_realloc(k->vmem, (size_t)(k->n_vmem + 1) * sizeof *grown);
	if (!grown)
		return false;
	grown[k->n_vmem++] = v;
	k->vmem = grown;
	return true;
}

/* Places candidate c: every kernel of its interval that writes or reads
 * its buffer holds it (and the aliases it reads) in VMEM; recount marks
 * them. */
static bool place(struct sim_program *p, const struct cands *cs,
		  const struct cand *c, bool *recount)
{
	for (int i = c->writer; i <= c->last; i++) {
		struct sim_kernel *k = &p->kernels[i];
		bool touched = false;
		if (i == c->writer || has_input(k, c->v)) {
			if (!hold(k, c->v))
				return false;
			touched = true;
		}
		for (int a = c->alias; a >= 0; a = cs->a[a].next) {
			if (!has_input(k, cs->a[a].x))
				continue;
			if (!hold(k, cs->a[a].x))
				return false;
			touched = true;
		}
		recount[i] |= touched;
	}
	return true;
}

bool sim_kernel_in_vmem(const struct sim_kernel *k, const struct ir_instr *v)
{
	for (int i = 0; i < k->n_vmem; i++)
		if (k->vmem[i] == v)
			return true;
	return false;
}

enum ts_status sim_program_place(struct sim_program *p, const struct hw_spec *hw,
				 struct ts_diag *d)
{
	const char *file = p->module ? p->module->file : NULL;
	struct cands cs = {0};
	double *used = NULL;
	enum ts_status st = TS_OK;
	bool *recount = ts_calloc((size_t)p->n_kernels + 1, sizeof *recount);
	if (!recount)
		st = TS_ERR_NOMEM;
	/* undo a placement made for another spec */
	for (int i = 0; st == TS_OK && i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		recount[i] = k->n_vmem > 0;
		ts_free(k->vmem);
		k->vmem = NULL;
		k->n_vmem = 0;
	}
	p->n_placed = 0;
	p->placed_bytes = 0;
	double room = hw->vmem_bytes - hw->vmem_scoped_bytes;
	if (st == TS_OK && p->fused_xla && room > 0) {
		st = candidates(p, room, &cs);
		if (st == TS_OK &&
		    !(used = ts_calloc((size_t)p->n_kernels + 1, sizeof *used)))
			st = TS_ERR_NOMEM;
		if (st == TS_OK)
			qsort(cs.c, (size_t)cs.n, sizeof *cs.c, by_priority);
	}
	for (int a = 0; st == TS_OK && used && a < cs.n; a++) {
		const struct cand *c = &cs.c[a];
		double peak = 0;
		for (int i = c->writer; i <= c->last; i++)
			peak = used[i] > peak ? used[i] : peak;
		if (peak + c->bytes > room)
			continue;
		for (int i = c->writer; i <= c->last; i++)
			used[i] += c->bytes;
		if (!place(p, &cs, c, recount))
			st = TS_ERR_NOMEM;
		p->n_placed++;
		p->placed_bytes += c->bytes;
	}
	for (int i = 0; st == TS_OK && i < p->n_kernels; i++)
		if (recount[i])
			st = sim_kernel_work(&p->kernels[i], NULL, file,
					     &p->kernels[i].work, d);
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, file, 0, 0, "out of memory placing values in VMEM");
	ts_free(cs.c);
	ts_free(cs.a);
	ts_ptrmap_free(&cs.of);
	ts_free(used);
	ts_free(recount);
	return st;
}
