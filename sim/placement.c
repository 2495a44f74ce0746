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
 *   a candidate: an array value in HBM (memory space 0, with a layout
 *     to write S(1) into; each element of a collective's tuple read by
 *     get-tuple-elements alone, one an element, a combined all-reduce's,
 *     sim/rewrite.c, its own: sim_tuple_elements) that one kernel
 *     writes and only kernels read
 *     (itself or through bitcasts outside kernels, or an optimization
 *     barrier of a tuple of it, which are the same buffer and go with
 *     it: JAX's remat puts a layer's saved inputs and weight slices
 *     through one), in the same computation, neither written
 *     nor read in place (a dynamic-update-slice's or scatter's buffer,
 *     or a kCustom fusion's that computes one: but a buffer whose one use
 *     is such an update, and the update's result, which is a candidate
 *     itself, are one buffer, placed whole: written_in_place)
 *     nor read or written by an async transfer or a library call, nor
 *     the computation's result (except an element of the program's,
 *     below); its interval is [writer, last reader] in kernel (schedule)
 *     order;
 *   priority = benefit / sqrt(bytes), highest first (ties in schedule
 *     order), XLA's memory boundedness: the benefit of its writer and of
 *     each kernel that reads it, each from that kernel's roofline
 *     (sim_kernel_roofline, its work with every value in HBM): memory
 *     time m = HBM bytes / bandwidth, compute time c = the slower of the
 *     MXU's and the VPU's with the XLU's relayouts the kernel writes
 *     (sim_relayout_cycles: a transpose across lanes is compute-bound
 *     where HBM is fast; XLA leaves v6e/mlp_s's copy.1 in HBM) (0 for a
 *     collective: its ICI moves the buffer wherever it lives), ns;
 *       memory-bound (m > c): runs x min(bytes / bandwidth, m - c), the
 *         time the kernel saves with this value in VMEM, bytes what it
 *         writes or reads of it (sim_kernel_read_bytes: a slice's or a
 *         dynamic-slice's window; XLA's counts the memory time saved,
 *         bytes / bandwidth, uncapped by c);
 *       compute-bound: m - c (<= 0, how far it is from memory-bound);
 *     XLA's way of adding them: the positive ones summed when any is
 *     positive, else the largest (a value only compute-bound kernels
 *     touch goes last);
 *   placed when at every kernel of its interval the values placed so
 *     far plus it fit in room;
 *   else evicted, where it has an eviction copy (kernels.c: a kernel's
 *     output two or more kernels read) and no other name: in VMEM for the
 *     longest run of its reading kernels from the first whose interval
 *     [writer, last of them] fits, and copied to HBM behind them (the
 *     copy's done right after the last of them), where the later readers
 *     read it (XLA's eviction: v6e/decoder_s's compiled loop body has 26
 *     such copies, 134 MB); placed only for a gain: the writer's and those
 *     readers' benefits (added as above) less the copy's time,
 *     hw_mem_dma_ns of its bytes, beyond the roofline times of the
 *     kernels between the writer and the last of them;
 *   an element of the program's result (the entry's root tuple) that a
 *     kernel writes, in the order of its layout (no relayout: kernels.c),
 *     is evicted the same way, its copy read by the result, even where
 *     it fits (the result is in HBM); with no kernel reading it, the
 *     copy is done after the first of the entry's own kernels that ends
 *     a run hiding it (the last when none does) and where it still
 *     fits, and placed only for a gain: the writer's
 *     benefit less what that run does not hide (XLA writes v6e/mlp_s's
 *     and v6e/decoder_s's weight updates into VMEM, copy-start after
 *     each).
 * Before any of them, the cross-program prefetch (XLA's MSA allocates it
 * first): of the entry parameters that only dots and convolutions (either
 * operand) and gathers (as the table, in one of XLA's kCustom gather
 * fusions too: an embedding table) read, directly or through bitcasts
 * (uses XLA's DCE would drop not counted), the largest that fits the room
 * (ties: more elements in its users' results, then the lower parameter
 * number; sim_prefetch_candidate), held over the whole program; its copy into
 * VMEM is a kernel of its own (kernels.c, "<param>.prefetch-start"), an
 * async pair from the parameter to its first reader, and each kernel
 * that reads it reads VMEM. On the compiled zoo this picks XLA's
 * parameter in all 17 modules where libtpu 0.0.42 made one on v5e and
 * later (copy-start ... cross_program_prefetch_index=0; the decode steps'
 * embedding tables among them) and none where it made none; XLA's
 * open-source rule, under which a dot's operand 0 looks like an
 * activation, would miss mlp_s's input and the GEMMs'. It is
 * decided when the program is built, for that spec
 * (sim_program_opts.vmem_room); placed for a spec with less room (a
 * whatif point), its kernel is idle and its readers read HBM.
 * Then the other entry parameters, and the elements of the entry's
 * loops' and calls' results, every live use of which is a kernel's
 * (sim_prefetches: not a loop, call, tuple, library call, async
 * start, collective or in-place buffer; through bitcasts) each have a
 * copy the same way (kernels.c), but queued on HBM and hidden only by
 * the kernels between it and the value's first reader (program.c):
 * XLA's memory-space assignment prefetches weights into VMEM with
 * copy-start beside other work (v5e/mlp_s's two weights), and values
 * no kernel writes alike (v6e/decoder_s's layer stack's output, in two
 * slices, for the logits' dot). So do a loop body's parameter and the
 * elements of its state, and its inner loops' and calls' results, every
 * live use of which in the body is a kernel's (or, for a state element,
 * the body's result passing it on unchanged in its place, which fuse
 * writes reading the element, not its copy: sim_passes_through), their
 * copies made where the body names them (sim_group_order lists its
 * parameter's elements first: at the body's top) and run in each trip
 * (XLA copies v6e/decoder_s_noremat's 32 MiB stack of saved activations
 * into VMEM in each trip of its backward loop).
 * Each is a candidate among the values above, interval [its copy, last
 * reader], written by its copy (which holds nothing: it moves the
 * bytes), its benefit its readers' (added as above) less its copy's
 * time, hw_mem_dma_ns of its bytes as often as it runs, beyond the
 * roofline times of the kernels before its first reader (the part they
 * do not hide); placed only for a gain, else its copy is idle.
 * Known wrong: no fragmentation (XLA allocates offsets; its heap can
 * fail where the sum fits); a prefetched value holds its room from
 * its copy, where the schedule reaches the value, to its last
 * reader (XLA's copies start when they would be hidden and may end
 * between uses), and each copy's benefit counts the kernels before its
 * reader as hiding it alone (the copies queue on HBM: program.c); the
 * cross-program prefetch's copy is taken as hidden
 * whole, beside the previous run (program.c's timeline; wrong for a
 * program's first run); an evicted value's later readers read HBM (XLA
 * may copy it back into VMEM before a far one), and a value is evicted
 * only when it does not fit whole (XLA evicts v6e/decoder_s's 64 MiB f32
 * attention matrix, which fits, and so makes room for others);
 * a loop's state is copied in at the body's top or not at all (XLA
 * may start a copy later, or copy it in slices), and a value the body
 * writes stays in HBM; the benefit is
 * a roofline's, not the tile model's (placement comes before the
 * estimate, which reads it): blind to the passes a kernel makes over
 * its other operands when one too large for its tiles stays in HBM
 * (hlo-programs' Llama-3.1-8B step on v5e: all-gathered weights, up to
 * 33.5 MB, lost their places to values a barrier passes, and the dots
 * that read them, streaming them in parts, read their other operands
 * again for each part: 29 dots 2.87 -> 5.70 ms each, the step 5.81 ->
 * 5.99 s). Sources: XLA's memory_space_assignment.cc
 * (FindCrossProgramPrefetchCandidate: entry parameters, largest first,
 * held from the program's start) and the zoo's choices for the
 * cross-program rule; XLA's memory space assignment cost analysis
 * (GetMemoryBoundedness, GetAlternateMemoryBenefit: the benefit summed
 * over the defining position and uses, divided by the square root of the
 * size) for the order; the compiled zoo's layouts
 * (data/compiled, libtpu 0.0.42) for where placement happens, the spec's
 * vmem fields for the room (each spec file says where they come from);
 * MaxText's xla_flags_library: the scoped limit is VMEM "used for the
 * current hlo op", the rest "for prefetching" later ones.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_int.h"
#include "plan_int.h"

/* A value memory-space assignment may place: its writer, interval and
 * reads (reads[first .. first + n_reads), by kernel). */
struct cand {
	const struct ir_instr *v;
	int writer, last;   /* kernel indices: the interval */
	int first, n_reads;
	bool ruled_out;
	bool prefetch;      /* an entry parameter, written by its prefetch's
	                       copy (writer: that DMA kernel) */
	bool aliased;       /* read under another name (alias_of) too */
	int evict;          /* its eviction's copy (kernels.c), -1: none */
	bool result;        /* an element of the entry's result: in VMEM
	                       only until its eviction's copy is done */
	const struct ir_instr *updated; /* the value a kernel writes in place
	                       over it, the same buffer (written_in_place),
	                       or NULL */
	int updater;        /* that kernel */
	double bytes, priority;
};

/* Kernel r reads a candidate as value x (it, or a bitcast of it),
 * bytes of it (sim_kernel_read_bytes: a slice's window). */
struct read {
	int r;
	const struct ir_instr *x;
	double bytes;
};

struct cands {
	int n;
	struct cand *c;
	struct read *reads;
	struct ts_ptrmap of;   /* value or bitcast of it -> its candidate */
};

/* Whether kernel k may hold a value in VMEM: a grouped or single-op
 * kernel, a collective's too (its ICI moves the buffer wherever it
 * lives), one of XLA's kCustom fusions `fuse` keeps (a gather's or
 * scatter's: its operands and result, as XLA's hold them; fuse writes
 * the root of the computation it calls in the fusion's memory space, so
 * that computation has no other caller), not an async transfer, library
 * call or relayout (whose work cost.c counts apart), nor one of a loop's
 * condition, which `fuse` writes as it is (XLA leaves it so). */
static bool places(const struct sim_kernel *k)
{
	const struct ir_instr *in = k->instr;
	return k->kind != SIM_KERNEL_UNMODELLED && !k->async_work && !k->dma &&
	       !k->lowered && !k->as_written && !sim_side_collective(in) &&
	       (in->op != IR_OP_FUSION ||
		(in->n_called == 1 && in->called[0]->n_callers == 1));
}

const struct ir_instr *sim_in_place_buffer(const struct ir_instr *u)
{
	const struct ir_instr *r =
		u->op == IR_OP_FUSION && u->n_called == 1 ? u->called[0]->root
							  : u;
	if (!r || r->n_operands < 1 ||
	    (r->op != IR_OP_DYNAMIC_UPDATE_SLICE && r->op != IR_OP_SCATTER))
		return NULL;
	const struct ir_instr *buf = r->operands[0];
	if (r == u)
		return buf;
	int64_t i = buf->op == IR_OP_PARAMETER ? buf->attrs.parameter_number
					       : -1;
	return i >= 0 && i < u->n_operands ? u->operands[i] : NULL;
}

/* The buffer kernel k writes v in place over, an input of k
 * (sim_in_place_buffer), or NULL. v is that buffer under another name:
 * placed with it where the update is its only use and both are values
 * placement may take (XLA places the decoders' embedding gradient, a
 * select and the scatter into it, in VMEM), else in HBM with it (read
 * in place: rules_out). */
static const struct ir_instr *written_in_place(const struct sim_kernel *k,
					       const struct ir_instr *v)
{
	const struct ir_instr *buf = sim_in_place_buffer(v);
	for (int j = 0; buf && j < k->n_inputs; j++)
		if (k->inputs[j] == buf)
			return buf;
	return NULL;
}

/* Whether value v, written by a kernel, may be placed in room at all
 * (its uses are checked apart). */
static bool may_place(const struct ir_instr *v, double room)
{
	double bytes = ir_shape_padded_bytes(&v->shape);
	return sim_placeable(v) && v->n_users > 0 && bytes > 0 &&
	       bytes <= room;
}

/* Whether u's use of x, in kernel r (< 0: of no kernel that places),
 * rules out the candidate written by kernel w: a use outside the placing
 * kernels, before the value exists, or in place (x the buffer a
 * dynamic-update-slice or scatter updates, or a kCustom fusion whose
 * root does; one placed with the result it becomes is no use: uses). */
static bool rules_out(const struct ir_instr *u, const struct ir_instr *x,
		      int r, int w)
{
	return r < 0 || r < w || sim_in_place_buffer(u) == x;
}

/* Whether kernel k is the copy of a prefetch other than the
 * cross-program one (kernels.c). */
static bool prefetch_copy(const struct sim_program *p,
			  const struct sim_kernel *k)
{
	return k->prefetch && k->inputs[0] != p->prefetched;
}

/* The buffer u is another name of: a bitcast's operand, or, for an
 * element of an optimization barrier of a tuple, the tuple's operand
 * (the barrier passes its buffers through); else NULL. */
static const struct ir_instr *alias_of(const struct ir_instr *u)
{
	if (u->op == IR_OP_BITCAST && u->n_operands == 1)
		return u->operands[0];
	const struct ir_instr *t =
		u->op == IR_OP_GET_TUPLE_ELEMENT && u->n_operands == 1
			? sim_barrier_tuple(u->operands[0])
			: NULL;
	int64_t i = u->attrs.tuple_index;
	return t && i >= 0 && i < t->n_operands ? t->operands[i] : NULL;
}

/* The values the placing kernels write and the parameters the
 * prefetches copy (owner: every member's kernel, -2 for a kernel that
 * does not place), then their other names (alias_of) no kernel holds,
 * in text order (operands first), then their evictions' copies. */
static void find(const struct sim_program *p, double room,
		 const struct ts_ptrmap *owner, struct cands *cs)
{
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if (prefetch_copy(p, k) && may_place(k->inputs[0], room)) {
			const struct ir_instr *v = k->inputs[0];
			cs->c[cs->n] = (struct cand){
				.v = v, .writer = i, .last = i, .prefetch = true,
				.evict = -1,
				.bytes = ir_shape_padded_bytes(&v->shape)};
			ts_ptrmap_set(&cs->of, v, cs->n++);
			continue;
		}
		for (int o = 0; places(k) && o < k->n_outputs; o++) {
			const struct ir_instr *t = k->outputs[o];
			/* a collective's tuple: each element a buffer */
			int n_el = k->kind == SIM_KERNEL_COLLECTIVE &&
						   t->shape.type == IR_TYPE_TUPLE
					   ? t->shape.n_elems
					   : 0;
			const struct ir_instr **el =
				n_el ? ts_malloc((size_t)n_el * sizeof *el)
				     : NULL;
			if (n_el && (!el || !sim_tuple_elements(t, el)))
				n_el = 0; /* (out of memory: none placed) */
			for (int e = n_el ? 0 : -1; e < n_el; e++) {
				const struct ir_instr *v = e < 0 ? t : el[e];
				int again = v ? ts_ptrmap_get(&cs->of, v) : -1;
				if (again >= 0) /* a computation called from
						   several places: one value,
						   one layout */
					cs->c[again].ruled_out = true;
				const struct ir_instr *buf =
					v ? written_in_place(k, v) : NULL;
				/* one buffer: v placeable as buf is, not its
				 * computation's result (in HBM: the caller's,
				 * the loop's or the program's) */
				bool one = buf && buf->n_users == 1 &&
					   may_place(v, room) &&
					   v != v->parent->root;
				one = one &&
				      ir_shape_padded_bytes(&v->shape) ==
					      ir_shape_padded_bytes(&buf->shape);
				int b = one ? ts_ptrmap_get(&cs->of, buf) : -1;
				if (b >= 0 && cs->c[b].v == buf &&
				    !cs->c[b].prefetch && !cs->c[b].updated) {
					cs->c[b].updated = v; /* one buffer */
					cs->c[b].updater = i;
					cs->c[b].aliased = true;
					ts_ptrmap_set(&cs->of, v, b);
				}
				if (!v || !may_place(v, room) || again >= 0 ||
				    buf)
					continue;
				cs->c[cs->n] = (struct cand){
					.v = v, .writer = i, .last = i,
					.evict = -1,
					.bytes = ir_shape_padded_bytes(&v->shape)};
				ts_ptrmap_set(&cs->of, v, cs->n++);
			}
			ts_free(el);
		}
	}
	const struct ir_module *m = p->module;
	for (int ci = 0; ci < m->n_comps; ci++) {
		const struct ir_computation *comp = m->comps[ci];
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *u = comp->instrs[i];
			const struct ir_instr *src = alias_of(u);
			int a = ts_ptrmap_get(owner, u) == -1 && src
					? ts_ptrmap_get(&cs->of, src)
					: -1;
			if (a >= 0 && u != comp->root && sim_in_hbm(&u->shape)) {
				ts_ptrmap_set(&cs->of, u, a);
				cs->c[a].aliased = true;
			}
		}
	}
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		int a = k->evict ? ts_ptrmap_get(&cs->of, k->inputs[0]) : -1;
		if (a >= 0 && cs->c[a].v == k->inputs[0])
			cs->c[a].evict = i;
	}
}

/* One pass backwards over computation c, users after their operands:
 * (*live)[i], instruction i leads to c's result (XLA's DCE keeps it),
 * and, with `flags` given, (*flag)[i], some live use of i (operand j of
 * user u) is one flags(u, j, *flag) calls out, *flag already worked out
 * for u. ts_calloc'd (flag NULL without flags); false when memory runs
 * out (both NULL). */
static bool mark_uses(const struct ir_computation *c,
		      bool (*flags)(const struct ir_instr *u, int j,
				    const bool *flag),
		      bool **live, bool **flag)
{
	*live = ts_calloc((size_t)c->n_instrs + 1, sizeof **live);
	*flag = flags ? ts_calloc((size_t)c->n_instrs + 1, sizeof **flag)
		      : NULL;
	if (!*live || (flags && !*flag)) {
		ts_free(*live);
		ts_free(*flag);
		*live = *flag = NULL;
		return false;
	}
	if (c->root)
		(*live)[c->root->index] = true;
	for (int i = c->n_instrs - 1; i >= 0; i--) {
		const struct ir_instr *u = c->instrs[i];
		for (int j = 0; (*live)[i] && j < u->n_operands; j++) {
			const struct ir_instr *o = u->operands[j];
			if (o->parent != c)
				continue;
			(*live)[o->index] = true;
			if (flags && !(*flag)[o->index])
				(*flag)[o->index] = flags(u, j, *flag);
		}
	}
	return true;
}

/* Rules out the candidates some use forbids; lists the kernels' reads of
 * the others, by candidate and then kernel (a counting sort). */
static enum ts_status uses(const struct sim_program *p,
			   const struct ts_ptrmap *owner, struct cands *cs)
{
	const struct ir_module *m = p->module;
	/* a use of the entry's that XLA's DCE drops rules nothing out */
	const struct ir_computation *e = m->entry;
	bool *live = NULL, *none;
	if (e && !mark_uses(e, NULL, &live, &none))
		return TS_ERR_NOMEM;
	for (int ci = 0; ci < m->n_comps; ci++) {
		const struct ir_computation *comp = m->comps[ci];
		/* a tuple that only optimization barriers use, each read by
		 * get-tuple-elements alone (not the result, not a loop's),
		 * passes its operands through: no use of its own (alias_of).
		 * escapes[b]: barrier b is read whole; passes[t]: the barriers
		 * that pass tuple t through */
		int *escapes = ts_calloc(2 * (size_t)comp->n_instrs + 1,
					 sizeof *escapes);
		if (!escapes) {
			ts_free(live);
			return TS_ERR_NOMEM;
		}
		int *passes = escapes + comp->n_instrs;
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *u = comp->instrs[i];
			for (int j = 0; u->op != IR_OP_GET_TUPLE_ELEMENT &&
					j < u->n_operands; j++)
				if (u->operands[j]->parent == comp)
					escapes[u->operands[j]->index] = 1;
		}
		if (comp->root)
			escapes[comp->root->index] = 1;
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *t = sim_barrier_tuple(comp->instrs[i]);
			if (!t || t->parent != comp)
				continue;
			/* one barrier read whole: never passed through */
			passes[t->index] += escapes[i] ? -comp->n_instrs : 1;
		}
		for (int i = 0; i < comp->n_instrs; i++) {
			const struct ir_instr *u = comp->instrs[i];
			if ((comp == e && !live[i]) ||
			    (u->op == IR_OP_TUPLE && passes[i] > 0 &&
			     passes[i] == u->n_users))
				continue;
			int r = ts_ptrmap_get(owner, u), self = ts_ptrmap_get(&cs->of, u);
			bool result = comp == e && u == comp->root &&
				      u->op == IR_OP_TUPLE;
			for (int j = 0; j < u->n_operands; j++) {
				int a = ts_ptrmap_get(&cs->of, u->operands[j]);
				if (a >= 0 && result && cs->c[a].evict >= 0 &&
				    cs->c[a].v == u->operands[j])
					cs->c[a].result = true; /* its copy's */
				else if (a >= 0 && a != self && /* a bitcast: no use */
					 !sim_passes_through(u, j) &&
					 rules_out(u, u->operands[j], r,
						   cs->c[a].writer))
					cs->c[a].ruled_out = true;
			}
		}
		ts_free(escapes);
	}
	ts_free(live);
	/* the reads, a counting sort by candidate (each in kernel order) */
	int n = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (int r = 0; r < p->n_kernels; r++) {
			const struct sim_kernel *k = &p->kernels[r];
			for (int j = 0; places(k) && j < k->n_inputs; j++) {
				int a = ts_ptrmap_get(&cs->of, k->inputs[j]);
				if (a < 0)
					continue;
				struct cand *c = &cs->c[a];
				if (pass == 0) {
					c->n_reads++;
					n++;
				} else {
					cs->reads[c->first + c->n_reads++] =
						(struct read){
							r, k->inputs[j],
							sim_kernel_read_bytes(
								k, k->inputs[j])};
				}
			}
		}
		if (pass == 1)
			break;
		cs->reads = ts_malloc((size_t)n * sizeof *cs->reads + 1);
		if (!cs->reads)
			return TS_ERR_NOMEM;
		for (int a = 0, at = 0; a < cs->n; a++) {
			cs->c[a].first = at;
			at += cs->c[a].n_reads;
			cs->c[a].n_reads = 0;
		}
	}
	return TS_OK;
}

/* Kernel k's compute and memory time on hw, ns, from its roofline: the
 * terms of the benefit (the priority above). */
struct times {
	double compute, memory;
};

static enum ts_status kernel_times(const struct sim_program *p,
				   const struct hw_spec *hw, struct times *t,
				   struct ts_diag *d)
{
	double ghz = hw->clock_hz * 1e-9;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		struct sim_estimate r;
		t[i] = (struct times){0, 0};
		if (!places(k))
			continue;
		enum ts_status st = sim_kernel_roofline(k, hw, &r, d);
		if (st != TS_OK)
			return st;
		if (k->kind != SIM_KERNEL_COLLECTIVE)
			t[i].compute = fmax(r.mxu_cycles,
					    r.vpu_cycles +
						    sim_relayout_cycles(hw, k)) /
				       ghz;
		t[i].memory = (r.bytes_read + r.bytes_written) /
			      hw_mem_bytes_per_ns(hw);
	}
	return TS_OK;
}

/* What the kernels (from, to) run beside a copy between them: their
 * roofline times, ns (the async transfers among them run beside it). */
static double hiding(const struct sim_program *p, const struct times *t,
		     int from, int to)
{
	double ns = 0;
	for (int i = from + 1; i < to; i++)
		if (!p->kernels[i].async_work)
			ns += fmax(t[i].memory, t[i].compute) *
			      p->kernels[i].multiplicity;
	return ns;
}

/* The benefit of kernel i holding bytes in VMEM (the priority above). */
static double benefit(const struct sim_program *p, const struct times *t,
		      int i, double bytes, double bytes_per_ns)
{
	double m = t[i].memory, c = t[i].compute;
	if (m <= c)
		return m - c;
	return p->kernels[i].multiplicity * fmin(bytes / bytes_per_ns, m - c);
}

/* XLA's way of adding the benefits, one at a time: a sum while both are
 * positive, else the larger (so the positive ones summed when any is). */
static double add_benefit(double sum, double b)
{
	return sum > 0 && b > 0 ? sum + b : fmax(sum, b);
}

/* The candidates of p that no use rules out and another kernel reads,
 * with their intervals and priorities on hw (t: its kernels' times),
 * first in cs->c. */
static enum ts_status candidates(const struct sim_program *p,
				 const struct hw_spec *hw, double room,
				 const struct times *t, struct cands *cs)
{
	const struct ir_module *m = p->module;
	int n_members = 0, n_outputs = 0, n_instrs = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		n_members += p->kernels[i].n_members;
		n_outputs += p->kernels[i].n_outputs;
	}
	for (int ci = 0; ci < m->n_comps; ci++)
		n_instrs += m->comps[ci]->n_instrs;
	struct ts_ptrmap owner = {0};
	/* the kernels' outputs and a collective's tuple's elements */
	cs->c = ts_malloc((size_t)(n_outputs + n_instrs) * sizeof *cs->c + 1);
	if (!cs->c ||
	    !ts_ptrmap_init(&owner, (size_t)(n_members + p->n_kernels) + 1) ||
	    !ts_ptrmap_init(&cs->of, (size_t)(n_outputs + n_instrs) + 1)) {
		ts_ptrmap_free(&owner);
		return TS_ERR_NOMEM;
	}
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		for (int q = 0; q < k->n_members; q++)
			ts_ptrmap_set(&owner, k->members[q], places(k) ? i : -2);
		/* a kept kCustom fusion: its members are its computation's;
		 * its operands are read by the fusion itself */
		if (k->instr->op == IR_OP_FUSION)
			ts_ptrmap_set(&owner, k->instr, places(k) ? i : -2);
	}
	find(p, room, &owner, cs);
	enum ts_status st = uses(p, &owner, cs);
	ts_ptrmap_free(&owner);
	double bytes_per_ns = hw_mem_bytes_per_ns(hw);
	int kept = 0;
	for (int a = 0; st == TS_OK && a < cs->n; a++) {
		struct cand c = cs->c[a];
		double sum = c.prefetch ? -INFINITY
					: benefit(p, t, c.writer, c.bytes,
						  bytes_per_ns);
		int readers = 0, last = -1; /* each reading kernel once */
		for (int q = c.first; q < c.first + c.n_reads; q++) {
			int r = cs->reads[q].r;
			if (r != last && r != c.writer) {
				readers++;
				sum = add_benefit(sum, benefit(p, t, r,
							       cs->reads[q].bytes,
							       bytes_per_ns));
			}
			last = r;
		}
		if (c.ruled_out || (readers == 0 && !c.result))
			continue;
		if (c.prefetch) {
			/* its copy, as often as it runs (each trip of a
			 * loop's), less what the kernels before its first
			 * reader hide, is time spent: placed only for a gain */
			double hide = hiding(p, t, c.writer,
					     cs->reads[c.first].r);
			sum -= fmax(0, hw_mem_dma_ns(hw, c.bytes, 1) *
						p->kernels[c.writer].multiplicity -
					       hide);
			if (!(sum > 0))
				continue;
		}
		c.last = last > c.writer ? last : c.writer;
		c.priority = sum / sqrt(c.bytes > 1 ? c.bytes : 1);
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

double sim_vmem_room(const struct hw_spec *hw)
{
	double room = hw->vmem_bytes - hw->vmem_scoped_bytes;
	return room > 0 ? room : 0;
}

/* Sum of the element counts of v's live users (XLA's tie-break between
 * cross-program prefetch candidates of one size). */
static double use_elements(const struct ir_computation *c, const bool *live,
			   const struct ir_instr *v)
{
	double n = 0;
	for (int i = v->index + 1; i < c->n_instrs; i++)
		for (int j = 0; live[i] && j < c->instrs[i]->n_operands; j++)
			if (c->instrs[i]->operands[j] == v)
				n += (double)ir_shape_elems(&c->instrs[i]->shape);
	return n;
}

/* Whether fusion u's operand j is read inside it only as the table of
 * gathers, directly or through bitcasts (XLA's kCustom gather fusion:
 * the embedding lookup; a module before fusion has no other fusion). */
static bool fused_gather_table(const struct ir_instr *u, int j)
{
	const struct ir_computation *f = u->op == IR_OP_FUSION && u->n_called
						 ? u->called[0]
						 : NULL;
	if (!f || j >= f->n_params || !f->params[j])
		return false;
	/* the values that are the parameter's buffer: it, then bitcasts
	 * of any of them (operands come first in the text's order) */
	bool *table = ts_calloc((size_t)f->n_instrs + 1, sizeof *table);
	if (!table)
		return false;
	table[f->params[j]->index] = true;
	bool gathered = false, other = false;
	for (int i = 0; i < f->n_instrs && !other; i++) {
		const struct ir_instr *x = f->instrs[i];
		for (int k = 0; k < x->n_operands && !other; k++) {
			const struct ir_instr *o = x->operands[k];
			if (o->parent != f || !table[o->index])
				continue;
			if (x->op == IR_OP_BITCAST)
				table[x->index] = true;
			else if (x->op == IR_OP_GATHER && k == 0)
				gathered = true;
			else
				other = true;
		}
	}
	ts_free(table);
	return gathered && !other;
}

/* Whether u's use of its operand j is not a weight's (mark_uses):
 * any use but a dot's or convolution's operand, a gather's table (in
 * one of XLA's kCustom gather fusions too), or a bitcast, not the
 * result, none of whose uses is (act). */
static bool activation_use(const struct ir_instr *u, int j, const bool *act)
{
	if (u->op == IR_OP_DOT || u->op == IR_OP_CONVOLUTION)
		return false;
	if (u->op == IR_OP_GATHER)
		return j != 0;
	if (fused_gather_table(u, j))
		return false;
	if (u->op == IR_OP_BITCAST)
		return u == u->parent->root || act[u->index];
	return true;
}

const struct ir_instr *sim_prefetch_candidate(const struct ir_module *m,
					      double room)
{
	const struct ir_computation *c = m ? m->entry : NULL;
	if (!c || !c->root || room <= 0 || !sim_module_unfused(m))
		return NULL;
	bool *live, *act; /* act[i]: some live use is not a weight's */
	const struct ir_instr *best = NULL;
	if (!mark_uses(c, activation_use, &live, &act))
		return NULL;
	double best_bytes = 0, best_uses = 0;
	for (int q = 0; q < c->n_params; q++) {
		const struct ir_instr *v = c->params[q];
		double bytes = v ? ir_shape_padded_bytes(&v->shape) : 0;
		if (!v || v == c->root || !live[v->index] || act[v->index] ||
		    !sim_in_hbm(&v->shape) ||
		    bytes <= 0 || bytes > room || bytes < best_bytes)
			continue;
		double uses = use_elements(c, live, v);
		if (bytes > best_bytes || uses > best_uses) {
			best = v;
			best_bytes = bytes;
			best_uses = uses;
		}
	}
	ts_free(live);
	ts_free(act);
	return best;
}

/* Whether u's use of its operand j is not one a kernel that may read it
 * in VMEM and gain makes (mark_uses): u makes or joins no kernel (a
 * loop, call, tuple, library call), is an async start (XLA's own
 * copy-start), updates that operand in place, or is a collective, whose
 * ICI time no copy shortens; or u is a bitcast that is the result or
 * has such a use (bad). */
static bool other_use(const struct ir_instr *u, int j, const bool *bad)
{
	if (sim_passes_through(u, j))
		return false;
	enum sim_kernel_kind kind;
	enum sim_top role = sim_top_role(u, &kind);
	if (((u->op == IR_OP_DYNAMIC_UPDATE_SLICE || u->op == IR_OP_SCATTER) &&
	     j == 0) ||
	    sim_async_start(u))
		return true;
	if (u->op == IR_OP_BITCAST)
		return u == u->parent->root || bad[u->index];
	return role != SIM_TOP_KERNEL || kind == SIM_KERNEL_UNMODELLED ||
	       kind == SIM_KERNEL_COLLECTIVE;
}

/* Whether v, a value no kernel writes, may be copied into VMEM for its
 * readers: an entry parameter, an element of a loop's or call's result
 * (XLA prefetches v6e/decoder_s's layer stack's output, in two slices,
 * for the logits' dot), or of a loop body's state (XLA copies
 * v6e/decoder_s_noremat's 32 MiB f32 stack of saved activations into
 * VMEM in each trip of the backward loop, in eight slices). */
static bool copyable(const struct ir_instr *v)
{
	if (v->op == IR_OP_PARAMETER || sim_loop_state(v))
		return true;
	const struct ir_instr *o = v->op == IR_OP_GET_TUPLE_ELEMENT &&
					   v->n_operands == 1
					   ? v->operands[0]
					   : NULL;
	return o && (o->op == IR_OP_WHILE || o->op == IR_OP_CALL ||
		     o->op == IR_OP_CONDITIONAL);
}

/* Appends to out at n the values of computation c (the entry, or a loop
 * body) that may be copied into VMEM (above) other than cross: the
 * parameters in their order, then the rest in the text's. The new
 * count, or -1 when memory runs out. */
static int list_copies(const struct ir_computation *c,
		       const struct ir_instr *cross, const struct ir_instr **out,
		       int n)
{
	bool *live, *bad; /* bad[i]: some live use is not a kernel's */
	if (!mark_uses(c, other_use, &live, &bad))
		return -1;
	for (int i = 0; i < c->n_params + c->n_instrs; i++) {
		bool param = i < c->n_params;
		const struct ir_instr *v =
			param ? c->params[i] : c->instrs[i - c->n_params];
		if (!v || (!param && v->op == IR_OP_PARAMETER))
			continue; /* listed already */
		double bytes = ir_shape_padded_bytes(&v->shape);
		if (v != cross && v != c->root && copyable(v) &&
		    live[v->index] && !bad[v->index] &&
		    sim_in_hbm(&v->shape) && bytes > 0)
			out[n++] = v;
	}
	ts_free(live);
	ts_free(bad);
	return n;
}

int sim_prefetches(const struct ir_module *m, double room,
		   const struct ir_instr *cross, const struct ir_instr ***out)
{
	const struct ir_computation *e = m ? m->entry : NULL;
	*out = NULL;
	if (!e || !e->root || room <= 0 || !sim_module_unfused(m))
		return 0;
	size_t n_instrs = 0;
	for (int ci = 0; ci < m->n_comps; ci++)
		n_instrs += (size_t)m->comps[ci]->n_instrs;
	*out = ts_malloc((n_instrs + 1) * sizeof **out);
	int n = *out ? 0 : -1;
	if (n == 0 && cross)
		(*out)[n++] = cross;
	if (n >= 0)
		n = list_copies(e, cross, *out, n);
	for (int ci = 0; n >= 0 && ci < m->n_comps; ci++) {
		const struct ir_computation *c = m->comps[ci];
		if (c != e && c->root && sim_loop_body(c))
			n = list_copies(c, cross, *out, n);
	}
	if (n < 0) {
		ts_free(*out);
		*out = NULL;
	}
	return n;
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

/* Evicting candidate c, which does not fit whole: the last of its reads
 * that read it in VMEM, the longest run of its reading kernels from the
 * first whose interval [writer, last of them] fits beside the values
 * already in (used) and gains (its writer's and their benefit, less the
 * eviction copy's time, hw_mem_dma_ns, beyond what the kernels between
 * the writer and the last of them run: the copy's done comes after
 * that one); -1 when none does, or it has no eviction, or is read under
 * another name (its later readers read the copy-done). */
static int evicted_reads(const struct sim_program *p, const struct cands *cs,
			 const struct cand *c, const struct times *t,
			 const struct hw_spec *hw, double avail,
			 const double *used)
{
	if (c->evict < 0 || c->aliased || c->prefetch)
		return -1;
	double bytes_per_ns = hw_mem_bytes_per_ns(hw), peak = 0;
	int last_q = -1;
	for (int i = c->writer, q = c->first; i <= c->last; i++) {
		peak = fmax(peak, used[i]);
		if (peak + c->bytes > avail)
			break;
		for (; q < c->first + c->n_reads && cs->reads[q].r <= i; q++)
			last_q = q;
	}
	if (last_q < 0)
		return -1;
	double sum = benefit(p, t, c->writer, c->bytes, bytes_per_ns);
	for (int q = c->first; q <= last_q; q++) { /* each kernel once */
		int r = cs->reads[q].r;
		if (r != c->writer && (q == c->first || r != cs->reads[q - 1].r))
			sum = add_benefit(sum, benefit(p, t, r, cs->reads[q].bytes,
						       bytes_per_ns));
	}
	double hide = hiding(p, t, c->writer, cs->reads[last_q].r + 1);
	sum -= fmax(0, hw_mem_dma_ns(hw, c->bytes, 1) *
			       p->kernels[c->evict].multiplicity -
		       hide); /* as often as its writer runs */
	return sum > 0 ? last_q : -1;
}

/* Evicting result c, which no kernel reads: where its copy to HBM is
 * done, the first kernel of the entry's own (one that places: not a
 * relayout or a copy, which fuse writes no node for) after its copy that
 * ends a
 * run of kernels whose roofline times hide the copy (hw_mem_dma_ns; the
 * entry's last when none does) and where it still fits beside the values
 * already in (used), and only for a gain: its writer's benefit less what
 * those kernels do not hide; -1 when none. */
static int evicted_result(const struct sim_program *p, const struct cand *c,
			  const struct times *t, const struct hw_spec *hw,
			  double avail, const double *used)
{
	const struct ir_computation *e = p->module->entry;
	double copy = hw_mem_dma_ns(hw, c->bytes, 1), peak = used[c->writer];
	int done = -1;
	for (int i = c->evict + 1; i < p->n_kernels; i++) {
		peak = fmax(peak, used[i]);
		if (peak + c->bytes > avail)
			break;
		if (!places(&p->kernels[i]) || p->kernels[i].instr->parent != e)
			continue; /* a relayout, a copy, another computation's */
		done = i;
		if (hiding(p, t, c->writer, i + 1) >= copy)
			break;
	}
	if (done < 0)
		return -1;
	double gain = benefit(p, t, c->writer, c->bytes,
			      hw_mem_bytes_per_ns(hw)) -
		      fmax(0, copy - hiding(p, t, c->writer, done + 1));
	return gain > 0 ? done : -1;
}

/* Places candidate c: its writer holds it in VMEM (a prefetch's copy
 * moves it there instead), each kernel of its reads up to reads[last_q]
 * the value it reads (it or another name of it); recount marks them. */
static bool place(struct sim_program *p, const struct cands *cs,
		  const struct cand *c, int last_q, bool *recount)
{
	if (c->prefetch) {
		p->kernels[c->writer].idle = false;
	} else {
		if (!hold(&p->kernels[c->writer], c->v))
			return false;
		recount[c->writer] = true;
	}
	for (int q = c->first; q <= last_q; q++) {
		const struct read *rd = &cs->reads[q];
		if (!hold(&p->kernels[rd->r], rd->x))
			return false;
		recount[rd->r] = true;
	}
	/* the kernel updating it in place writes it there too */
	return !c->updated || hold(&p->kernels[c->updater], c->updated);
}

/* The cross-program prefetch, when room holds it: every placing kernel
 * that reads the prefetched parameter, or a bitcast of it outside
 * kernels (the same buffer), holds it in VMEM (recount marks them);
 * else its kernel is idle. Its bytes, or 0 when idle. */
static double hold_prefetched(struct sim_program *p, double room,
			      bool *recount, bool *ok)
{
	double bytes = ir_shape_padded_bytes(&p->prefetched->shape);
	bool idle = bytes > room;
	*ok = true;
	for (int r = 0; r < p->n_kernels; r++) {
		struct sim_kernel *k = &p->kernels[r];
		if (k->prefetch && k->inputs[0] == p->prefetched)
			k->idle = idle;
	}
	if (idle)
		return 0;
	const struct ir_computation *c = p->prefetched->parent;
	bool *alias = ts_calloc((size_t)c->n_instrs + 1, sizeof *alias);
	if (!alias) {
		*ok = false;
		return 0;
	}
	alias[p->prefetched->index] = true;
	for (int i = p->prefetched->index + 1; i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		alias[i] = u->op == IR_OP_BITCAST && u->n_operands == 1 &&
			   u->operands[0]->parent == c &&
			   alias[u->operands[0]->index];
	}
	for (int r = 0; *ok && r < p->n_kernels; r++) {
		struct sim_kernel *k = &p->kernels[r];
		for (int j = 0; *ok && places(k) && j < k->n_inputs; j++) {
			const struct ir_instr *x = k->inputs[j];
			if (x->parent == c && alias[x->index]) {
				*ok = hold(k, x);
				recount[r] = true;
			}
		}
	}
	ts_free(alias);
	return bytes;
}

/* Counts the work of the kernels marked in recount again, with the
 * constant-derived marks of each computation worked out once. */
static enum ts_status recount_work(struct sim_program *p, const bool *recount,
				   struct ts_diag *d)
{
	const struct ir_module *m = p->module;
	bool **cd = ts_calloc((size_t)m->n_comps + 1, sizeof *cd);
	enum ts_status st = cd ? TS_OK : TS_ERR_NOMEM;
	for (int i = 0; st == TS_OK && i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		if (!recount[i])
			continue;
		const struct ir_computation *c = k->instr->parent;
		if (c && !cd[c->index] && !(cd[c->index] = sim_const_derived(c)))
			st = TS_ERR_NOMEM;
		if (st == TS_OK)
			st = sim_kernel_work(k, c ? cd[c->index] : NULL, m->file,
					     &k->work, d);
	}
	for (int ci = 0; cd && ci < m->n_comps; ci++)
		ts_free(cd[ci]);
	ts_free(cd);
	return st;
}

bool sim_kernel_in_vmem(const struct sim_kernel *k, const struct ir_instr *v)
{
	for (int i = 0; i < k->n_vmem; i++)
		if (k->vmem[i] == v)
			return true;
	return false;
}

uint64_t sim_placement_key(const struct hw_spec *hw, double room)
{
	double f[9 + HW_VPU_CLASS_COUNT] = {
		room,
		hw_spec_peak_flops(hw),
		hw_spec_hbm_bw(hw),
		hw->clock_hz,
		(double)hw->vpu_sublanes * hw->vpu_lanes,
		hw->vpu_alus,
		hw_spec_cores(hw),
		sim_mxu_rate(true, hw),
		hw->dma_latency_ns}; /* a prefetch's copy (hw_mem_dma_ns) */
	for (int c = 0; c < HW_VPU_CLASS_COUNT; c++)
		f[9 + c] = hw->vpu_class_cost[c];
	return ts_fnv1a(TS_FNV1A_BASIS, f, sizeof f);
}

enum ts_status sim_program_place(struct sim_program *p, const struct hw_spec *hw,
				 struct ts_diag *d)
{
	double room = p->fused_xla ? sim_vmem_room(hw) : 0;
	uint64_t key = sim_placement_key(hw, room);
	if (p->placed && p->placed_key == key)
		return TS_OK; /* placed for this room and spec already */
	struct cands cs = {0};
	double *used = NULL;
	bool *recount = ts_calloc((size_t)p->n_kernels + 1, sizeof *recount);
	enum ts_status st = recount ? TS_OK : TS_ERR_NOMEM;
	/* undo a placement made for another spec, its work counted again
	 * (the benefits read every value in HBM) */
	bool undone = false;
	for (int i = 0; st == TS_OK && i < p->n_kernels; i++) {
		struct sim_kernel *k = &p->kernels[i];
		recount[i] = k->n_vmem > 0;
		undone = undone || recount[i];
		ts_free(k->vmem);
		k->vmem = NULL;
		k->n_vmem = 0;
	}
	if (st == TS_OK && undone) {
		st = recount_work(p, recount, d);
		if (st == TS_OK) /* else counted again below */
			memset(recount, 0, (size_t)p->n_kernels * sizeof *recount);
	}
	p->n_placed = 0;
	p->placed_bytes = 0;
	int *pair_of = ts_malloc((size_t)p->n_kernels * sizeof *pair_of + 1);
	if (!pair_of)
		st = TS_ERR_NOMEM;
	for (int i = 0; pair_of && i < p->n_kernels; i++)
		pair_of[i] = -1;
	for (int a = 0; pair_of && a < p->n_async; a++)
		pair_of[p->async[a].first] = a;
	for (int i = 0; pair_of && i < p->n_kernels; i++) { /* until placed */
		struct sim_kernel *k = &p->kernels[i];
		if (prefetch_copy(p, k) || k->evict)
			k->idle = true;
		if (k->evict && pair_of[i] >= 0) /* its done at once */
			p->async[pair_of[i]].n_between = 0;
	}
	/* the cross-program prefetch first, over the whole program */
	double avail = room;
	if (st == TS_OK && p->prefetched) {
		bool ok;
		p->placed_bytes = hold_prefetched(p, room, recount, &ok);
		p->n_placed = p->placed_bytes > 0;
		avail -= p->placed_bytes;
		st = ok ? TS_OK : TS_ERR_NOMEM;
	}
	struct times *t = NULL;
	if (st == TS_OK && avail > 0) {
		t = ts_malloc((size_t)p->n_kernels * sizeof *t + 1);
		st = t ? kernel_times(p, hw, t, d) : TS_ERR_NOMEM;
		if (st == TS_OK)
			st = candidates(p, hw, avail, t, &cs);
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
		int last_q = c->first + c->n_reads - 1; /* its last read */
		int last = -1;
		if (c->result && c->n_reads == 0)
			last = evicted_result(p, c, t, hw, avail, used);
		else if ((peak + c->bytes > avail || c->result) &&
			 (last_q = evicted_reads(p, &cs, c, t, hw, avail,
						  used)) < 0)
			continue;
		else
			last = cs.reads[last_q].r;
		if (last < 0)
			continue;
		for (int i = c->writer; i <= last; i++)
			used[i] += c->bytes;
		if (!place(p, &cs, c, last_q, recount)) {
			st = TS_ERR_NOMEM;
			break;
		}
		if (last < c->last || c->result) { /* the copy out, done
						      after `last` */
			struct sim_kernel *e = &p->kernels[c->evict];
			e->idle = false;
			recount[c->evict] = true;
			struct sim_async *pa = &p->async[pair_of[c->evict]];
			pa->n_between = last + 1 - pa->between;
			if (!hold(e, c->v)) {
				st = TS_ERR_NOMEM;
				break;
			}
		}
		p->n_placed++;
		p->placed_bytes += c->bytes;
	}
	/* the work of every kernel whose placement changed, counted again
	 * even after a failure (a reset one must not keep placed bytes) */
	enum ts_status rst = recount ? recount_work(p, recount, d) : TS_OK;
	if (st == TS_OK)
		st = rst;
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, p->module->file, 0, 0,
			    "out of memory placing values in VMEM");
	p->placed = st == TS_OK;
	p->placed_key = key;
	ts_free(cs.c);
	ts_free(cs.reads);
	ts_ptrmap_free(&cs.of);
	ts_free(used);
	ts_free(recount);
	ts_free(t);
	ts_free(pair_of);
	return st;
}
