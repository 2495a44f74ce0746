/*
 * gnn_features.c: the feature schema of the learned residual and its
 * extraction from a kernel. The two tables below ARE the schema: their
 * names, in order, with GNN_SCHEMA_VERSION, hash into every model file
 * (gnn_schema_hash), so a model trained on another schema is refused.
 * Changing a feature means a new version and retraining the default model
 * (scripts/train_default.sh).
 *
 * Sizes enter in log2(1 + x) form (they span 10 orders of magnitude);
 * categories one-hot. No feature is ever a measured value: a node feature
 * comes from the HLO text, a kernel feature from the kernel's IR (work
 * counted by sim/cost.c), its tile config, the spec, and (marked
 * analytic, seen as 0 by the learned-only model) the analytic estimate.
 */
#include "gnn.h"

#include <math.h>
#include <string.h>

/* ---- the schema ------------------------------------------------------------ */

static const char *const node_names[GNN_NODE_F] = {
	/* 0-8: the op's class (ir_op_class) */
	"class_free", "class_elementwise", "class_transcendental",
	"class_data_movement", "class_reduction", "class_contraction",
	"class_control", "class_collective", "class_other",
	/* 9-14: the VPU cost class of an elementwise op (sim_op_vpu_class) */
	"vpu_simple", "vpu_divide", "vpu_transcendental", "vpu_composite",
	"vpu_trig", "vpu_rng",
	/* 15-22: ops the TPU treats specially */
	"op_dot", "op_convolution", "op_reduce", "op_reduce_window",
	"op_parameter", "op_constant", "op_broadcast", "op_transpose_copy",
	/* 23 */
	"is_root",
	/* 24-31: the result shape, physical (layout) order */
	"log_elems", "rank", "log_minor_dim", "log_second_minor_dim",
	"minor_not_lane_multiple", "second_minor_not_sublane_multiple",
	"elem_bits_over_32", "log_padded_bytes",
	/* 32-35: op attributes and work */
	"log_contraction", "log_window_taps", "log_reduce_ratio", "log_flops",
};

struct kernel_field {
	const char *name;
	bool analytic; /* from the analytic estimate: hidden from learned-only */
};

static const struct kernel_field kernel_fields[GNN_KERNEL_F] = {
	/* 0-19: the analytic estimate under the config */
	{"log_time_ns", true}, {"log_mxu_cycles", true},
	{"log_vpu_cycles", true}, {"log_dma_cycles", true},
	{"log_overhead_ns", true}, {"mxu_share", true}, {"vpu_share", true},
	{"dma_share", true}, {"overhead_share", true},
	{"bound_none", true}, {"bound_mxu", true}, {"bound_vpu", true},
	{"bound_hbm", true}, {"bound_overhead", true}, {"bound_ici", true},
	{"log_vmem_bytes", true}, {"vmem_fraction", true},
	{"mxu_utilisation", true}, {"feasible", true}, {"cores", true},
	/* 20-24: the config and the kernel's work (IR counts) */
	{"log_steps", false}, {"log_flops", false}, {"log_bytes_read", false},
	{"log_bytes_written", false}, {"log_intensity", false},
	/* 25-33: kernel kind (sim_kernel_kind) */
	{"kind_fusion", false}, {"kind_convolution", false},
	{"kind_dot", false}, {"kind_copy", false}, {"kind_reduce", false},
	{"kind_elementwise", false}, {"kind_data", false},
	{"kind_collective", false}, {"kind_unmodelled", false},
	/* 34-38: the spec */
	{"log_clock_hz", false}, {"log_peak_flops", false},
	{"log_hbm_bw", false}, {"log_vmem_capacity", false},
	{"spec_cores", false},
	/* 39: how the row was timed */
	{"host_timed", false},
};

_Static_assert(IR_CLASS_COUNT == 9, "node schema: one column per ir_class");
_Static_assert(HW_VPU_CLASS_COUNT == 6, "node schema: one column per VPU class");
_Static_assert(HW_UNIT_COUNT == 6, "kernel schema: one column per hw_unit");
_Static_assert(SIM_KERNEL_KIND_COUNT == 9,
	       "kernel schema: one column per sim_kernel_kind");

const char *gnn_node_feature_name(int i)
{
	return i >= 0 && i < GNN_NODE_F ? node_names[i] : NULL;
}

const char *gnn_kernel_feature_name(int i)
{
	return i >= 0 && i < GNN_KERNEL_F ? kernel_fields[i].name : NULL;
}

bool gnn_kernel_feature_analytic(int i)
{
	return i >= 0 && i < GNN_KERNEL_F && kernel_fields[i].analytic;
}

uint64_t gnn_schema_hash(void)
{
	uint64_t h = TS_FNV1A_BASIS;
	unsigned char v = GNN_SCHEMA_VERSION;
	h = ts_fnv1a(h, &v, 1);
	for (int i = 0; i < GNN_NODE_F; i++)
		h = ts_fnv1a(h, node_names[i], strlen(node_names[i]) + 1);
	for (int i = 0; i < GNN_KERNEL_F; i++)
		h = ts_fnv1a(h, kernel_fields[i].name,
			strlen(kernel_fields[i].name) + 1);
	return h;
}

/* ---- node features --------------------------------------------------------- */

static double lg(double x)
{
	return x > 0 ? log2(1.0 + x) : 0.0;
}

/* The contraction length of a dot or convolution (per output element, per
 * window tap for a convolution: the input features over the groups). */
static double contraction(const struct ir_instr *in)
{
	if (in->op == IR_OP_DOT && in->attrs.dot && in->n_operands >= 1) {
		const struct ir_shape *l = &in->operands[0]->shape;
		double k = 1;
		const struct ir_ints *c = &in->attrs.dot->lhs_contracting;
		for (int i = 0; i < c->n; i++)
			if (c->v[i] >= 0 && c->v[i] < l->rank)
				k *= (double)l->dims[c->v[i]];
		return k;
	}
	if (in->op == IR_OP_CONVOLUTION && in->attrs.conv &&
	    in->n_operands >= 1) {
		const struct ir_shape *l = &in->operands[0]->shape;
		int f = in->attrs.conv->lhs_feature;
		double g = in->attrs.feature_group_count > 0
				   ? (double)in->attrs.feature_group_count
				   : 1.0;
		return f >= 0 && f < l->rank ? (double)l->dims[f] / g : 1.0;
	}
	return 0;
}

static double window_taps(const struct ir_instr *in)
{
	if (!in->attrs.window)
		return 0;
	double t = 1;
	for (int i = 0; i < in->attrs.window->n; i++)
		t *= (double)in->attrs.window->dims[i].size;
	return t;
}

static void node_features(const struct ir_instr *in, double *x)
{
	memset(x, 0, GNN_NODE_F * sizeof *x);
	enum ir_class c = ir_op_class(in->op);
	if ((int)c >= 0 && c < IR_CLASS_COUNT)
		x[c] = 1;
	if (c == IR_CLASS_ELEMENTWISE || c == IR_CLASS_TRANSCENDENTAL) {
		enum hw_vpu_class v = sim_op_vpu_class(in->op);
		if ((int)v >= 0 && v < HW_VPU_CLASS_COUNT)
			x[9 + v] = 1;
	}
	x[15] = in->op == IR_OP_DOT;
	x[16] = in->op == IR_OP_CONVOLUTION;
	x[17] = in->op == IR_OP_REDUCE;
	x[18] = in->op == IR_OP_REDUCE_WINDOW;
	x[19] = in->op == IR_OP_PARAMETER;
	x[20] = in->op == IR_OP_CONSTANT;
	x[21] = in->op == IR_OP_BROADCAST;
	x[22] = in->op == IR_OP_TRANSPOSE || in->op == IR_OP_COPY;
	x[23] = (in->flags & IR_INSTR_ROOT) != 0;

	const struct ir_shape *s = &in->shape;
	if (s->type != IR_TYPE_TUPLE) {
		double elems = (double)ir_shape_elems(s);
		x[24] = lg(elems);
		x[25] = s->rank;
		if (s->rank > 0 && s->rank <= SIM_MAX_GRID) {
			int order[SIM_MAX_GRID];
			ir_shape_major_to_minor(s, order);
			int64_t minor = s->dims[order[s->rank - 1]];
			int64_t second = s->rank > 1 ? s->dims[order[s->rank - 2]] : 1;
			x[26] = lg((double)minor);
			x[27] = lg((double)second);
			x[28] = minor % 128 != 0;
			x[29] = second % 8 != 0;
		}
		x[30] = ir_type_bits(s->type) / 32.0;
		x[31] = lg(ir_shape_padded_bytes(s));
		double k = contraction(in), taps = window_taps(in);
		x[32] = lg(k);
		x[33] = lg(taps);
		if (in->op == IR_OP_REDUCE && in->n_operands >= 1 && elems > 0)
			x[34] = lg((double)ir_shape_elems(&in->operands[0]->shape) /
				   elems);
		double flops = 0;
		if (c == IR_CLASS_CONTRACTION)
			flops = 2.0 * elems * fmax(k, 1.0) * fmax(taps, 1.0);
		else if (c == IR_CLASS_ELEMENTWISE || c == IR_CLASS_TRANSCENDENTAL)
			flops = elems;
		else if (c == IR_CLASS_REDUCTION && in->n_operands >= 1)
			flops = (double)ir_shape_elems(&in->operands[0]->shape);
		x[35] = lg(flops);
	} else {
		x[31] = lg(ir_shape_padded_bytes(s));
	}
}

/* ---- graphs ------------------------------------------------------------------ */

void gnn_graph_free(struct gnn_graph *g)
{
	ts_free(g->x);
	ts_free(g->in_off);
	ts_free(g->in_idx);
	ts_free(g->out_off);
	ts_free(g->out_idx);
	memset(g, 0, sizeof *g);
}

/* The op mix of nodes[0..n): XOR over its distinct device-work opcodes of
 * FNV-1a of the opcode's name (names, not enum values, so that a model
 * file's known mixes survive a reordering of ir_ops.def). */
static uint64_t op_mix(const struct ir_instr *const *nodes, int n)
{
	bool seen[IR_OP_COUNT] = {false};
	uint64_t h = 0;
	for (int v = 0; v < n; v++) {
		enum ir_op op = nodes[v]->op;
		if (seen[op] || ir_op_class(op) == IR_CLASS_FREE)
			continue;
		seen[op] = true;
		const char *name = ir_op_name(op);
		h ^= ts_fnv1a(TS_FNV1A_BASIS, name, strlen(name));
	}
	return h;
}

enum ts_status gnn_graph_build(const struct sim_kernel *k, struct gnn_graph *g)
{
	memset(g, 0, sizeof *g);
	const struct ir_instr *one = k->instr;
	const struct ir_instr *const *nodes = k->members;
	int n = k->n_members;
	if (n <= 0 || !nodes) {
		nodes = &one;
		n = one ? 1 : 0;
	}
	if (n > GNN_MAX_NODES) {
		nodes += n - GNN_MAX_NODES;
		n = GNN_MAX_NODES;
	}
	/* node index of each instruction among the nodes (the first, if
	 * listed twice): an operand outside them is no edge */
	struct ts_ptrmap at;
	if (!ts_ptrmap_init(&at, (size_t)n))
		return TS_ERR_NOMEM;
	for (int v = n - 1; v >= 0; v--)
		ts_ptrmap_set(&at, nodes[v], v);
	int n_edges = 0;
	for (int v = 0; v < n; v++)
		for (int j = 0; j < nodes[v]->n_operands; j++)
			n_edges += ts_ptrmap_get(&at, nodes[v]->operands[j]) >= 0;
	g->n = n;
	g->ops = op_mix(nodes, n);
	g->x = ts_calloc((size_t)n * GNN_NODE_F + 1, sizeof *g->x);
	g->in_off = ts_calloc((size_t)n + 1, sizeof *g->in_off);
	g->out_off = ts_calloc((size_t)n + 1, sizeof *g->out_off);
	g->in_idx = ts_calloc((size_t)n_edges + 1, sizeof *g->in_idx);
	g->out_idx = ts_calloc((size_t)n_edges + 1, sizeof *g->out_idx);
	int *fill = ts_calloc((size_t)n + 1, sizeof *fill);
	if (!g->x || !g->in_off || !g->out_off || !g->in_idx || !g->out_idx ||
	    !fill) {
		ts_free(fill);
		ts_ptrmap_free(&at);
		gnn_graph_free(g);
		return TS_ERR_NOMEM;
	}
	for (int v = 0; v < n; v++) {
		node_features(nodes[v], g->x + (size_t)v * GNN_NODE_F);
		g->in_off[v + 1] = g->in_off[v];
		for (int j = 0; j < nodes[v]->n_operands; j++) {
			int u = ts_ptrmap_get(&at, nodes[v]->operands[j]);
			if (u < 0)
				continue;
			g->in_idx[g->in_off[v + 1]++] = u;
			g->out_off[u + 1]++;
		}
	}
	ts_ptrmap_free(&at);
	for (int v = 0; v < n; v++)
		g->out_off[v + 1] += g->out_off[v];
	for (int v = 0; v < n; v++)
		for (int e = g->in_off[v]; e < g->in_off[v + 1]; e++) {
			int u = g->in_idx[e];
			g->out_idx[g->out_off[u] + fill[u]++] = v;
		}
	ts_free(fill);
	return TS_OK;
}

/* ---- kernel features ---------------------------------------------------------- */

void gnn_kernel_features(const struct sim_kernel *k,
			 const struct sim_estimate *e,
			 const struct hw_spec *hw, bool host_timed,
			 double out[GNN_KERNEL_F])
{
	memset(out, 0, GNN_KERNEL_F * sizeof *out);
	double ghz = hw->clock_hz * 1e-9;
	double t = e->time_ns > 0 ? e->time_ns : 0;
	out[0] = lg(t);
	out[1] = lg(e->mxu_cycles);
	out[2] = lg(e->vpu_cycles);
	out[3] = lg(e->dma_cycles);
	out[4] = lg(e->overhead_ns);
	if (t > 0 && ghz > 0) {
		out[5] = fmin(4.0, e->mxu_cycles / ghz / t);
		out[6] = fmin(4.0, e->vpu_cycles / ghz / t);
		out[7] = fmin(4.0, e->dma_cycles / ghz / t);
		out[8] = fmin(1.0, e->overhead_ns / t);
	}
	if ((int)e->bound >= 0 && e->bound < HW_UNIT_COUNT)
		out[9 + e->bound] = 1;
	out[15] = lg(e->vmem_bytes);
	out[16] = hw->vmem_bytes > 0 ? fmin(4.0, e->vmem_bytes / hw->vmem_bytes)
				     : 0;
	out[17] = e->mxu_util;
	out[18] = e->feasible;
	out[19] = e->cores;
	out[20] = lg((double)e->steps);
	out[21] = lg(k->work.flops);
	out[22] = lg(k->work.bytes_read);
	out[23] = lg(k->work.bytes_written);
	double bytes = k->work.bytes_read + k->work.bytes_written;
	out[24] = bytes > 0 ? lg(k->work.flops / bytes) : 0;
	if ((int)k->kind >= 0 && k->kind < SIM_KERNEL_KIND_COUNT)
		out[25 + k->kind] = 1;
	out[34] = lg(hw->clock_hz);
	out[35] = lg(hw_spec_peak_flops(hw));
	out[36] = lg(hw_spec_hbm_bw(hw));
	out[37] = lg(hw->vmem_bytes);
	out[38] = hw_spec_cores(hw);
	out[GNN_KF_HOST_TIMED] = host_timed;
}
