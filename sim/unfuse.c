/*
 * unfuse.c: the inverse of the fusion pass, and how well the `xla` policy
 * agrees with the real compiler.
 *
 * sim_unfuse_write inlines every fusion instruction's fused computation
 * into its caller: the fused computation's parameters become the fusion's
 * operands, its instructions are written under the name "X__in__F" (X its
 * own name, F the fusion's; a fusion nested in a fused computation gives
 * X__in__F2__in__F), uses of the fusion read its root (a multi-output
 * fusion's get-tuple-elements read the tuple's operands).
 * The result is the module as it was before XLA fused it, up to the
 * layouts XLA chose, which stay.
 *
 * sim_fuse_agreement groups such a module with the `xla` policy
 * (grouping.c) and compares with the fusions the names record. Only
 * working instructions count (not free, not constant-derived, as
 * grouping.c classes them): an XLA kernel is reproduced exactly when one
 * group holds exactly its working instructions; an edge (a working
 * operand of a working instruction) is fused by XLA when both came from
 * one fusion, by the policy when one group holds both.
 */
#include "hlo_emit.h"
#include "kernels_int.h"

#include <string.h>

#define INLINED "__in__"

static const char *name2(struct ts_arena *a, const char *x, const char *f)
{
	return ts_arena_printf(a, "%s" INLINED "%s", x, f);
}

static enum ts_status nested(struct hlo_emit *e, const struct ir_instr *in)
{
	ts_diag_set(e->d, e->file, in->line, in->col,
		    "%s: an operand nested in its operand list: not inlined",
		    in->name);
	return TS_ERR_UNSUPPORTED_OP;
}

static bool multi_output(const struct ir_instr *in)
{
	return in->op == IR_OP_FUSION && in->n_called > 0 && in->called[0] &&
	       in->called[0]->root && in->called[0]->root->op == IR_OP_TUPLE;
}

/*
 * Writes the instructions of computation c with its fusions inlined.
 *   pnames: the values c's parameters stand for (NULL: c is a top-level
 *           computation, its parameters are written);
 *   fname:  c is inlined for fusion fname: its instructions are named
 *           X__in__fname (NULL: as written);
 *   want:   the instruction of c written as ROOT (NULL: none);
 *   names:  receives the value name of each of c's instructions;
 *   outs:   receives, for a multi-output fusion of c, its outputs' names.
 * A fused computation's tuple root is not written: its operands are the
 * fusion's outputs; a use of the whole fusion reads a tuple of them,
 * written under the fusion's name.
 */
static enum ts_status emit_body(struct hlo_emit *e, struct ts_arena *a,
				const struct ir_computation *c,
				const char *const *pnames, const char *fname,
				const struct ir_instr *want, const char **names,
				const char ***outs, int *inlined)
{
	/* a multi-output fusion read whole (not through get-tuple-elements)
	 * is written as the tuple of its outputs too */
	bool *whole = ts_arena_array(a, (size_t)c->n_instrs + 1, sizeof *whole);
	if (!whole)
		return TS_ERR_NOMEM;
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *u = c->instrs[i];
		for (int o = 0; u->op != IR_OP_GET_TUPLE_ELEMENT &&
				o < u->n_operands; o++) {
			int k = sim_index_in(c, u->operands[o]);
			if (k >= 0 && multi_output(c->instrs[k]))
				whole[k] = true;
		}
	}
	for (int i = 0; i < c->n_instrs; i++) {
		const struct ir_instr *in = c->instrs[i];
		names[i] = in->name;
		outs[i] = NULL;
		if (in->op == IR_OP_PARAMETER && pnames) {
			int p = (int)in->attrs.parameter_number;
			if (p < 0 || p >= c->n_params || !pnames[p])
				return nested(e, in);
			names[i] = pnames[p];
			if (in == want) { /* the result is an input: pass it on */
				const char *r = name2(a, in->name, fname);
				if (!r)
					return TS_ERR_NOMEM;
				fprintf(e->out, "  ROOT %%%s = ", r);
				hlo_emit_shape(e, &in->shape);
				fprintf(e->out, " bitcast(%%%s)\n", names[i]);
			}
			continue;
		}
		if (pnames && in == c->root && in->op == IR_OP_TUPLE)
			continue;
		if (in->op == IR_OP_GET_TUPLE_ELEMENT && in->n_operands == 1) {
			int k = sim_index_in(c, in->operands[0]);
			int t = (int)in->attrs.tuple_index;
			if (k >= 0 && outs[k] && t >= 0 &&
			    t < c->instrs[k]->called[0]->root->n_operands) {
				names[i] = outs[k][t];
				continue;
			}
		}
		const char **ops = ts_arena_array(a, (size_t)in->n_operands + 1,
						  sizeof *ops);
		if (!ops)
			return TS_ERR_NOMEM;
		for (int o = 0; o < in->n_operands; o++) {
			int k = sim_index_in(c, in->operands[o]);
			if (k < 0)
				return nested(e, in);
			if (k >= i) { /* named before it is defined */
				ts_diag_set(e->d, e->file, in->line, in->col,
					    "%s: operand %s is defined after "
					    "its use: not inlined", in->name,
					    in->operands[o]->name);
				return TS_ERR_UNSUPPORTED_OP;
			}
			ops[o] = names[k];
		}
		if (in->op != IR_OP_FUSION || !in->n_called || !in->called[0]) {
			if (fname && !(names[i] = name2(a, in->name, fname)))
				return TS_ERR_NOMEM;
			enum ts_status st = hlo_emit_instr(e, in, in == want,
							   names[i], NULL, ops,
							   NULL);
			if (st)
				return st;
			continue;
		}
		/* a fusion: its computation inlined here */
		const struct ir_computation *fc = in->called[0];
		const struct ir_instr *froot = fc->root;
		const struct ir_instr *fwant = NULL;
		if (in == want && !multi_output(in))
			fwant = froot;
		if (want && want->op == IR_OP_GET_TUPLE_ELEMENT &&
		    want->n_operands == 1 && want->operands[0] == in &&
		    multi_output(in) && want->attrs.tuple_index >= 0 &&
		    want->attrs.tuple_index < froot->n_operands)
			fwant = froot->operands[want->attrs.tuple_index];
		const char *inner = fname ? name2(a, in->name, fname) : in->name;
		const char **fnames = ts_arena_array(a, (size_t)fc->n_instrs + 1,
						     sizeof *fnames);
		const char ***fouts = ts_arena_array(a, (size_t)fc->n_instrs + 1,
						     sizeof *fouts);
		if (!inner || !fnames || !fouts)
			return TS_ERR_NOMEM;
		enum ts_status st = emit_body(e, a, fc, ops, inner, fwant, fnames,
					      fouts, inlined);
		if (st)
			return st;
		++*inlined;
		int r = sim_index_in(fc, froot);
		if (r < 0)
			return nested(e, in);
		names[i] = fnames[r];
		if (!multi_output(in))
			continue;
		const char **o = ts_arena_array(a, (size_t)froot->n_operands + 1,
						sizeof *o);
		if (!o)
			return TS_ERR_NOMEM;
		for (int t = 0; t < froot->n_operands; t++) {
			int k = sim_index_in(fc, froot->operands[t]);
			if (k < 0)
				return nested(e, froot);
			o[t] = fnames[k];
		}
		outs[i] = o;
		if (in == want || whole[i]) { /* the tuple itself is read */
			names[i] = in == want ? in->name : inner;
			fprintf(e->out, "  %s%%%s = ", in == want ? "ROOT " : "",
				names[i]);
			hlo_emit_shape(e, &in->shape);
			fputs(" tuple(", e->out);
			for (int t = 0; t < froot->n_operands; t++)
				fprintf(e->out, "%s%%%s", t ? ", " : "", o[t]);
			fputs(")\n", e->out);
		}
	}
	return TS_OK;
}

static enum ts_status unfuse_comp(struct hlo_emit *e,
				  const struct ir_computation *c, int *inlined)
{
	struct ts_arena a;
	ts_arena_init(&a);
	const char **names = ts_arena_array(&a, (size_t)c->n_instrs + 1,
					    sizeof *names);
	const char ***outs = ts_arena_array(&a, (size_t)c->n_instrs + 1,
					    sizeof *outs);
	enum ts_status st = names && outs ? TS_OK : TS_ERR_NOMEM;
	if (!st) {
		hlo_emit_signature(e, c);
		st = emit_body(e, &a, c, NULL, NULL, c->root, names, outs,
			       inlined);
	}
	if (!st)
		fputs("}\n", e->out);
	ts_arena_free(&a);
	return st;
}

enum ts_status sim_unfuse_write(const struct ir_module *m, const char *text,
				size_t len, FILE *out, int *inlined,
				struct ts_diag *d)
{
	struct hlo_emit e = {.text = text, .len = len, .file = m->file,
			     .out = out, .d = d};
	*inlined = 0;
	hlo_emit_module_header(&e, m, false); /* to be fused again */
	enum ts_status st = TS_OK;
	for (int i = 0; i < m->n_comps && !st; i++)
		if (!m->comps[i]->is_fusion)
			st = unfuse_comp(&e, m->comps[i], inlined);
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, m->file, 0, 0, "out of memory");
	return st;
}

/* ---- agreement with XLA --------------------------------------------------- */

/* The top-level fusion instruction X__in__...__in__F came from: F (a
 * fusion nested in another is part of it); NULL for an instruction that
 * was not in a fusion. */
static const char *origin(const struct ir_instr *in)
{
	const char *p = NULL;
	for (const char *q = strstr(in->name, INLINED); q;
	     q = strstr(q + 1, INLINED))
		p = q;
	return p ? p + strlen(INLINED) : NULL;
}

static bool same_origin(const struct ir_instr *a, const struct ir_instr *b)
{
	const char *x = origin(a), *y = origin(b);
	return x && y && strcmp(x, y) == 0;
}

static void agree_comp(const struct grouping *g, struct sim_fuse_agreement *a)
{
	const struct ir_computation *c = g->c;
	/* edges */
	for (int v = 0; v < g->n; v++) {
		if (!sim_group_working(g, v))
			continue;
		const struct ir_instr *in = c->instrs[v];
		for (int o = 0; o < in->n_operands; o++) {
			int u = sim_index_in(c, in->operands[o]);
			if (u < 0 || !sim_group_working(g, u))
				continue;
			bool xla = same_origin(c->instrs[u], in);
			bool ours = false;
			for (int id = 0; id < g->n_groups && !ours; id++)
				ours = g->g_rep[id] == id &&
				       sim_group_member(g, id, u) &&
				       sim_group_member(g, id, v);
			a->edges_xla += xla;
			a->edges_policy += ours;
			a->edges_both += xla && ours;
			if (xla && !ours) {
				int gu = g->grp[u];
				bool own = gu >= 0 && g->g_root[gu] == u;
				a->missed[own ? g->why[u] : SIM_WHY_ELSEWHERE]++;
			}
		}
	}
	/* XLA's kernels: the working instructions of one origin, found at
	 * the first of them; reproduced when one group holds exactly them */
	for (int v = 0; v < g->n; v++) {
		const char *f = origin(c->instrs[v]);
		if (!f || !sim_group_working(g, v))
			continue;
		bool first = true;
		for (int u = 0; u < v && first; u++)
			first = !(sim_group_working(g, u) &&
				  same_origin(c->instrs[u], c->instrs[v]));
		if (!first)
			continue;
		a->xla_kernels++;
		for (int id = 0; id < g->n_groups; id++) {
			if (g->g_rep[id] != id || !sim_group_member(g, id, v))
				continue;
			bool exact = true;
			for (int u = 0; u < g->n && exact; u++) {
				if (!sim_group_working(g, u))
					continue;
				bool in_f = same_origin(c->instrs[u], c->instrs[v]);
				exact = in_f == sim_group_member(g, id, u);
			}
			if (exact) {
				a->reproduced++;
				break;
			}
		}
	}
}

enum ts_status sim_fuse_agreement(const struct ir_module *unfused,
				  const struct sim_fusion_plan *plan,
				  struct sim_fuse_agreement *a,
				  struct ts_diag *d)
{
	memset(a, 0, sizeof *a);
	for (int i = 0; i < unfused->n_comps; i++) {
		const struct ir_computation *c = unfused->comps[i];
		bool has = false;
		for (int k = 0; k < c->n_instrs && !has; k++)
			has = origin(c->instrs[k]) != NULL;
		if (!has)
			continue;
		struct grouping g;
		enum ts_status st =
			sim_grouping_build(&g, c, sim_plan_force(plan, c), NULL);
		if (st == TS_OK)
			agree_comp(&g, a);
		sim_grouping_free(&g);
		if (st) {
			ts_diag_set(d, unfused->file, 0, 0, "out of memory");
			return st;
		}
	}
	return TS_OK;
}
