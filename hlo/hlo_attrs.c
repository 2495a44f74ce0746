/*
 * hlo_attrs.c: attribute values of HLO instructions (docs/HLO.md 1.8-1.10):
 * the ones that affect cost are parsed into struct ir_attrs, the ones XLA
 * checks are checked as XLA checks them, all others are skipped; which
 * attributes an opcode may carry and which it needs; the module header's
 * input_output_alias and buffer_donor lists.
 */
#include "hlo_parse_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- which attributes exist, which an opcode takes or needs -------------- */

static const char *const attr_names[] = {
	[A_NONE] = "",
	[A_DIMENSIONS] = "dimensions",
	[A_LHS_BATCH] = "lhs_batch_dims",
	[A_RHS_BATCH] = "rhs_batch_dims",
	[A_LHS_CONTRACT] = "lhs_contracting_dims",
	[A_RHS_CONTRACT] = "rhs_contracting_dims",
	[A_WINDOW] = "window",
	[A_DIM_LABELS] = "dim_labels",
	[A_FGC] = "feature_group_count",
	[A_BGC] = "batch_group_count",
	[A_SLICE] = "slice",
	[A_PADDING] = "padding",
	[A_OFFSET_DIMS] = "offset_dims",
	[A_COLLAPSED] = "collapsed_slice_dims",
	[A_START_INDEX_MAP] = "start_index_map",
	[A_OPERAND_BATCHING] = "operand_batching_dims",
	[A_START_INDICES_BATCHING] = "start_indices_batching_dims",
	[A_SLICE_SIZES] = "slice_sizes",
	[A_INDEX_VECTOR_DIM] = "index_vector_dim",
	[A_UPDATE_WINDOW] = "update_window_dims",
	[A_INSERTED_WINDOW] = "inserted_window_dims",
	[A_SCATTER_TO_OPERAND] = "scatter_dims_to_operand_dims",
	[A_INPUT_BATCHING] = "input_batching_dims",
	[A_SCATTER_INDICES_BATCHING] = "scatter_indices_batching_dims",
	[A_DYN_SLICE_SIZES] = "dynamic_slice_sizes",
	[A_FFT_LENGTH] = "fft_length",
	[A_IOTA_DIM] = "iota_dimension",
	[A_INDEX] = "index",
	[A_DIRECTION] = "direction",
	[A_KIND] = "kind",
	[A_CALLS] = "calls",
	[A_TO_APPLY] = "to_apply",
	[A_CONDITION] = "condition",
	[A_BODY] = "body",
	[A_BRANCHES] = "branch_computations",
	[A_TRUE] = "true_computation",
	[A_FALSE] = "false_computation",
	[A_SELECT] = "select",
	[A_SCATTER] = "scatter",
	[A_CALLED] = "called_computations",
	[A_TARGET] = "custom_call_target",
	[A_PRECISION] = "operand_precision",
	[A_REPLICA_GROUPS] = "replica_groups",
	[A_PAIRS] = "source_target_pairs",
	[A_METADATA] = "metadata",
	[A_BACKEND_CONFIG] = "backend_config",
	[A_K] = "k",
	[A_THREAD] = "async_execution_thread",
	[A_ACCURACY] = "result_accuracy",
	[A_CONTROL] = "control-predecessors",
	[A_LAYOUT_CONSTRAINTS] = "operand_layout_constraints",
	[A_API_VERSION] = "api_version",
	[A_CHANNEL] = "channel_id",
	[A_FRONTEND] = "frontend_attributes",
	[A_CROSS_PREFETCH] = "cross_program_prefetch_index",
	[A_COST_FREE] = "",
};

/*
 * Attributes XLA prints that do not change what tpusim models (docs/HLO.md
 * 1.8-1.9): placement, aliasing, scheduling and debugging information, and
 * options of ops tpusim lists as unmodelled. They are skipped without a
 * note; any other unknown name is skipped with one (ir_module.unknown_attrs).
 */
static const char *const cost_free_attrs[] = {
	"sharding", "statistics",
	"origin", "parameter_replication",
	"use_global_device_ids", "constrain_layout", "is_stable",
	"indices_are_sorted", "unique_indices", "inferred_dimension",
	"is_host_transfer", "infeed_config", "outfeed_config", "outfeed_shape",
	"distribution",
	"delta", "exponent_bits", "mantissa_bits", "fft_type", "left_side",
	"lower", "unit_diagonal", "transpose_a", "epsilon", "feature_index",
	"domain",
	"custom_call_has_side_effect", "output_to_operand_aliasing", "schedule",
	"literal", "padding_type", "type", "mode", "largest", "is_composite",
	"execution_thread", "conv_kind", "num_carries",
	"is_reverse", "is_associative", "lhs_ragged_dims", "rhs_group_dims",
	"algorithm", "sparsity", "is_cross_program_prefetch",
};
_Static_assert(TS_ARRAY_LEN(attr_names) == A_COUNT,
	       "attr_names must name every hp_attr");
_Static_assert(A_COUNT <= 64, "parse_rhs keeps the attributes seen in 64 bits");

/* Attributes an opcode cannot do without, by opcode (XLA: required entries
 * of each opcode's attribute map in hlo_parser.cc). A nested instruction
 * has no attributes, so a nested broadcast is refused as XLA refuses it. */
static const uint8_t required_attrs[IR_OP_COUNT][5] = {
	[IR_OP_BROADCAST] = {A_DIMENSIONS},
	[IR_OP_TRANSPOSE] = {A_DIMENSIONS},
	[IR_OP_REVERSE] = {A_DIMENSIONS},
	[IR_OP_CONCATENATE] = {A_DIMENSIONS},
	[IR_OP_REDUCE] = {A_DIMENSIONS, A_TO_APPLY},
	[IR_OP_SORT] = {A_DIMENSIONS, A_TO_APPLY},
	[IR_OP_MAP] = {A_TO_APPLY},
	[IR_OP_CALL] = {A_TO_APPLY},
	[IR_OP_ALL_REDUCE] = {A_TO_APPLY},
	[IR_OP_REDUCE_WINDOW] = {A_TO_APPLY},
	[IR_OP_SELECT_AND_SCATTER] = {A_SELECT, A_SCATTER},
	[IR_OP_COMPARE] = {A_DIRECTION},
	[IR_OP_GET_TUPLE_ELEMENT] = {A_INDEX},
	[IR_OP_SLICE] = {A_SLICE},
	[IR_OP_PAD] = {A_PADDING},
	[IR_OP_DYNAMIC_SLICE] = {A_DYN_SLICE_SIZES},
	[IR_OP_IOTA] = {A_IOTA_DIM},
	[IR_OP_WHILE] = {A_CONDITION, A_BODY},
	[IR_OP_FUSION] = {A_KIND, A_CALLS},
	[IR_OP_CUSTOM_CALL] = {A_TARGET},
	[IR_OP_GATHER] = {A_OFFSET_DIMS, A_COLLAPSED, A_START_INDEX_MAP,
			  A_INDEX_VECTOR_DIM, A_SLICE_SIZES},
	[IR_OP_SCATTER] = {A_UPDATE_WINDOW, A_INSERTED_WINDOW,
			   A_SCATTER_TO_OPERAND, A_INDEX_VECTOR_DIM, A_TO_APPLY},
};

/* Whether an attribute naming computations may be written on op (XLA:
 * any other is an "unexpected attribute"). Other attributes: true. */
static bool attr_allowed(enum ir_op op, int attr)
{
	switch (attr) {
	case A_CALLS:
		return op == IR_OP_FUSION || op == IR_OP_CALL ||
		       op == IR_OP_CUSTOM_CALL || op == IR_OP_ASYNC_START ||
		       op == IR_OP_ASYNC_UPDATE || op == IR_OP_ASYNC_DONE;
	case A_TO_APPLY:
		return op == IR_OP_CALL || op == IR_OP_MAP || op == IR_OP_REDUCE ||
		       op == IR_OP_REDUCE_WINDOW || op == IR_OP_ALL_REDUCE ||
		       op == IR_OP_ALL_REDUCE_START || op == IR_OP_REDUCE_SCATTER ||
		       op == IR_OP_SORT || op == IR_OP_SCATTER ||
		       op == IR_OP_CUSTOM_CALL || op == IR_OP_COLLECTIVE_REDUCE ||
		       op == IR_OP_SCAN;
	case A_CONDITION:
	case A_BODY:
		return op == IR_OP_WHILE;
	case A_BRANCHES:
	case A_TRUE:
	case A_FALSE:
		return op == IR_OP_CONDITIONAL;
	case A_SELECT:
	case A_SCATTER:
		return op == IR_OP_SELECT_AND_SCATTER;
	case A_CALLED:
	case A_API_VERSION:
		return op == IR_OP_CUSTOM_CALL;
	case A_ACCURACY:
		/* XLA: the unary ops whose results may be approximated */
		return op == IR_OP_EXPONENTIAL || op == IR_OP_EXPONENTIAL_MINUS_ONE ||
		       op == IR_OP_LOG || op == IR_OP_LOG_PLUS_ONE ||
		       op == IR_OP_RSQRT || op == IR_OP_SQRT || op == IR_OP_CBRT ||
		       op == IR_OP_TANH || op == IR_OP_COSINE || op == IR_OP_SINE ||
		       op == IR_OP_TAN || op == IR_OP_LOGISTIC || op == IR_OP_ERF;
	default:
		return true;
	}
}

void hp_kw_init(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	_Static_assert(IR_OP_COUNT + IR_TYPE_COUNT + A_COUNT +
			       TS_ARRAY_LEN(cost_free_attrs) < HP_KW_CAP * 3 / 4,
		       "keyword table too small");
	_Static_assert(IR_OP_COUNT <= UINT16_MAX && IR_TYPE_COUNT <= UINT8_MAX &&
			       A_COUNT <= UINT8_MAX,
		       "keyword fields too narrow");
	for (int op = IR_OP_INVALID + 1; op < IR_OP_COUNT; op++)
		hp_kw_add(ir_op_name((enum ir_op)op), op, 0, 0);
	for (int t = IR_TYPE_INVALID + 1; t < IR_TYPE_TUPLE; t++)
		hp_kw_add(ir_type_name((enum ir_type)t), 0, t, 0);
	for (int a = A_NONE + 1; a < A_COST_FREE; a++)
		hp_kw_add(attr_names[a], 0, 0, a);
	for (size_t i = 0; i < TS_ARRAY_LEN(cost_free_attrs); i++)
		hp_kw_add(cost_free_attrs[i], 0, 0, A_COST_FREE);
}

/* Records a skipped attribute name tpusim does not know (the CLI prints a
 * note per distinct name); false only when the arena is exhausted. */
static bool note_unknown_attr(struct hp_parser *p, const char *s, size_t n)
{
	struct ir_module *m = p->m;
	for (int i = 0; i < m->n_unknown_attrs; i++) {
		struct ir_unknown_attr *u = &m->unknown_attrs[i];
		if (strlen(u->name) == n && memcmp(u->name, s, n) == 0) {
			u->uses++;
			return true;
		}
	}
	if (m->n_unknown_attrs == IR_MAX_UNKNOWN_ATTRS)
		return true;
	struct ir_unknown_attr *u = &m->unknown_attrs[m->n_unknown_attrs];
	u->name = ts_arena_strndup(&m->arena, s, n);
	if (!u->name)
		return false;
	hp_locate(p, s, &u->line, &u->col);
	u->uses = 1;
	m->n_unknown_attrs++;
	return true;
}

/* ---- attribute values ---------------------------------------------------- */

static bool finish_ints(struct hp_parser *p, const int64_t *v, int n,
			struct ir_ints *out)
{
	out->n = n;
	out->v = NULL;
	if (!n)
		return true;
	out->v = ts_arena_dup(&p->m->arena, v, sizeof *v * (size_t)n);
	if (!out->v)
		return hp_nomem(p);
	return true;
}

/* '{' [INT (',' INT)*] '}' */
bool hp_parse_int_list(struct hp_parser *p, struct ir_ints *out,
		       const char *attr)
{
	int64_t v[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute '%s': expected '{'", attr);
	p->p++;
	if (!hp_accept(p, '}')) {
		for (;;) {
			skip_ws(p);
			const char *at = p->p;
			if (n == HP_MAX_RANK)
				return hp_fail(p, at, "bad value for attribute '%s': more than %d entries",
					    attr, HP_MAX_RANK);
			if (!is_digit(cur(p)) && cur(p) != '-')
				return hp_fail(p, at, "bad value for attribute '%s': expected an integer",
					    attr);
			if (!hp_read_int(p, &v[n++]))
				return false;
			if (hp_accept(p, '}'))
				break;
			if (!hp_accept(p, ','))
				return hp_fail(p, p->p, "bad value for attribute '%s': expected ',' or '}'",
					    attr);
		}
	}
	return finish_ints(p, v, n, out);
}

/* A zeroed block from the module arena for an attribute, allocated the first
 * time the attribute is seen; NULL (out-of-memory error recorded) on failure. */
static void *attr_block(struct hp_parser *p, size_t size)
{
	void *b = ts_arena_alloc(&p->m->arena, size);
	if (!b)
		hp_nomem(p);
	return b;
}

static struct ir_ints *new_ints(struct hp_parser *p, struct ir_ints **slot)
{
	if (!*slot)
		*slot = attr_block(p, sizeof **slot);
	return *slot;
}

bool hp_parse_int_attr(struct hp_parser *p, int64_t *out, const char *attr)
{
	skip_ws(p);
	if (!is_digit(cur(p)) && cur(p) != '-')
		return hp_fail(p, p->p, "bad value for attribute '%s': expected an integer",
			    attr);
	return hp_read_int(p, out);
}

/* An integer attribute that must be >= 1 (feature/batch group counts). */
static bool parse_positive_attr(struct hp_parser *p, int64_t *out,
				const char *attr)
{
	if (!hp_parse_int_attr(p, out, attr))
		return false;
	if (*out < 1)
		return hp_fail(p, p->p, "bad value for attribute '%s': must be positive", attr);
	return true;
}

/* DxD list "3x3x1" (or "2" for one dimension); n entries into v. */
static bool parse_dxd(struct hp_parser *p, int64_t *v, int *n, const char *what)
{
	*n = 0;
	for (;;) {
		const char *at = p->p;
		if (!is_digit(cur(p)) && cur(p) != '-')
			return hp_fail(p, at, "bad window %s: expected an integer", what);
		if (*n == HP_MAX_RANK)
			return hp_fail(p, at, "bad window %s: too many dimensions", what);
		if (!hp_read_int(p, &v[(*n)++]))
			return false;
		if (cur(p) != 'x')
			return true;
		p->p++;
	}
}

/* lo_hi[_interior] x ... (pad tokens); interior optional. */
static bool parse_pad_list(struct hp_parser *p, int64_t (*v)[3], int *n,
			   bool allow_interior, const char *what)
{
	*n = 0;
	for (;;) {
		const char *at = p->p;
		if (*n == HP_MAX_RANK)
			return hp_fail(p, at, "bad %s: too many dimensions", what);
		int64_t *d = v[(*n)++];
		d[2] = 0;
		for (int k = 0; k < 3; k++) {
			if (!is_digit(cur(p)) && cur(p) != '-')
				return hp_fail(p, p->p, "bad %s: expected an integer", what);
			if (!hp_read_int(p, &d[k]))
				return false;
			if (k == 2 || cur(p) != '_') {
				if (k == 0)
					return hp_fail(p, p->p, "bad %s: expected '_'", what);
				break;
			}
			if (k == 1 && !allow_interior)
				return hp_fail(p, p->p, "bad %s: unexpected '_'", what);
			p->p++;
		}
		if (cur(p) != 'x')
			return true;
		p->p++;
	}
}

/* window={size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..} */
static bool parse_window(struct hp_parser *p, struct ir_window **out)
{
	enum { W_SIZE, W_STRIDE, W_PAD, W_LHS, W_RHS, W_REV, W_COUNT };
	static const char *const names[W_COUNT] = {
		"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal"};
	int64_t v[W_COUNT][HP_MAX_RANK];
	int64_t pad[HP_MAX_RANK][3];
	int cnt[W_COUNT] = {0};
	bool seen[W_COUNT] = {false};
	skip_ws(p);
	const char *open = p->p;
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute 'window': expected '{'");
	p->p++;
	for (;;) {
		skip_ws(p);
		if (cur(p) == '}')
			break;
		if (cur(p) == ',') {
			p->p++;
			continue;
		}
		const char *ks = p->p;
		size_t kn = word_len(p, ks);
		int f = W_COUNT;
		for (int i = 0; i < W_COUNT; i++)
			if (hp_word_is(ks, kn, names[i]))
				f = i;
		if (f == W_COUNT)
			return hp_fail(p, ks, "bad value for attribute 'window': unknown field '%.*s'",
				    (int)(kn ? (kn > HP_MSG_TOK ? HP_MSG_TOK : kn) : 1), ks);
		p->p += kn;
		if (!hp_expect_char(p, '=', "'=' after the window field"))
			return false;
		skip_ws(p);
		seen[f] = true;
		if (f == W_PAD) {
			if (!parse_pad_list(p, pad, &cnt[f], false, "window pad"))
				return false;
		} else if (!parse_dxd(p, v[f], &cnt[f], names[f])) {
			return false;
		}
	}
	p->p++; /* '}' */
	int n = cnt[W_SIZE];
	if (!seen[W_SIZE] && (seen[W_STRIDE] || seen[W_PAD] || seen[W_LHS] ||
			      seen[W_RHS] || seen[W_REV]))
		return hp_fail(p, open, "bad value for attribute 'window': no size");
	for (int f = 1; f < W_COUNT; f++)
		if (seen[f] && cnt[f] != n)
			return hp_fail(p, open,
				    "bad value for attribute 'window': %s has %d dimensions, size has %d",
				    names[f], cnt[f], n);
	struct ts_arena *a = &p->m->arena;
	struct ir_window *w = ts_arena_alloc(a, sizeof *w);
	if (!w)
		return hp_nomem(p);
	w->n = n;
	if (n) {
		w->dims = ts_arena_array(a, (size_t)n, sizeof *w->dims);
		if (!w->dims)
			return hp_nomem(p);
	}
	for (int i = 0; i < n; i++) {
		struct ir_window_dim *d = &w->dims[i];
		d->size = v[W_SIZE][i];
		d->stride = seen[W_STRIDE] ? v[W_STRIDE][i] : 1;
		d->pad_lo = seen[W_PAD] ? pad[i][0] : 0;
		d->pad_hi = seen[W_PAD] ? pad[i][1] : 0;
		d->lhs_dilate = seen[W_LHS] ? v[W_LHS][i] : 1;
		d->rhs_dilate = seen[W_RHS] ? v[W_RHS][i] : 1;
		d->reversal = seen[W_REV] && v[W_REV][i] != 0;
		if (d->size < 0 || d->stride < 1 || d->lhs_dilate < 1 ||
		    d->rhs_dilate < 1)
			return hp_fail(p, open, "bad value for attribute 'window': dimension %d out of range",
				    i);
	}
	*out = w;
	return true;
}

/* Bytes of the dim_labels value at s ("b01f_01io->b01f"): label
 * characters, '_' and "->". */
static int labels_len(const struct hp_parser *p, const char *s)
{
	const char *q = s;
	while (q < p->end && (is_alpha(*q) || is_digit(*q) || *q == '?' ||
			      *q == '_' || *q == '-' || *q == '>') &&
	       q - s < HP_MSG_TOK)
		q++;
	return (int)(q - s);
}

/* One part of dim_labels: letters a and b plus spatial digits, each at
 * most once. Fills pos_a, pos_b (-1 when absent), spatial[digit] =
 * position and n_spatial = largest digit + 1; labels_complete() checks
 * that nothing is missing. */
static bool parse_labels(struct hp_parser *p, char la, char lb, int *pos_a,
			 int *pos_b, int *spatial, int *n_spatial,
			 const char *start)
{
	int pos = 0, maxd = -1, len = 0;
	*pos_a = *pos_b = -1;
	for (int i = 0; i < 10; i++)
		spatial[i] = -1;
	while (p->p + len < p->end && (is_alpha(p->p[len]) ||
				       is_digit(p->p[len]) || p->p[len] == '?'))
		len++;
	while (p->p < p->end &&
	       (is_alpha(*p->p) || is_digit(*p->p) || *p->p == '?')) {
		char c = *p->p;
		/* XLA: a part of n labels holds digits below n, its two
		 * letters and '?' */
		if (is_digit(c) && c - '0' >= len)
			return hp_fail(p, p->p, "bad dim_labels '%.*s': expects "
					     "[0-%d%c%c?], got '%c'",
				    labels_len(p, start), start, len - 1, la, lb, c);
		if (c == '?')
			; /* a dimension without a role (XLA accepts it) */
		else if (c == la && *pos_a < 0)
			*pos_a = pos;
		else if (c == lb && *pos_b < 0)
			*pos_b = pos;
		else if (is_digit(c) && spatial[c - '0'] < 0) {
			spatial[c - '0'] = pos;
			if (c - '0' > maxd)
				maxd = c - '0';
		} else if (c == la || c == lb || is_digit(c))
			return hp_fail(p, p->p, "bad dim_labels '%.*s': '%c' repeated "
					     "(labels must be unique)",
				    labels_len(p, start), start, c);
		else
			return hp_fail(p, p->p, "bad dim_labels '%.*s': unexpected '%c'",
				    labels_len(p, start), start, c);
		pos++;
		p->p++;
	}
	*n_spatial = maxd + 1;
	return true;
}

static bool labels_complete(struct hp_parser *p, const char *start, char la,
			    char lb, int pos_a, int pos_b, const int *spatial,
			    int n_spatial)
{
	if (pos_a < 0 || pos_b < 0)
		return hp_fail(p, start, "bad dim_labels '%.*s': missing '%c' or '%c'",
			    labels_len(p, start), start, la, lb);
	for (int i = 0; i < n_spatial; i++)
		if (spatial[i] < 0)
			return hp_fail(p, start, "bad dim_labels '%.*s': spatial dimension %d missing",
				    labels_len(p, start), start, i);
	return true;
}

/* dim_labels=b01f_01io->b01f */
static bool parse_dim_labels(struct hp_parser *p, struct ir_conv_dims **out)
{
	skip_ws(p);
	const char *start = p->p;
	int ls[10], rs[10], os[10], nl, nr, no;
	struct ir_conv_dims c = {0};
	if (!parse_labels(p, 'b', 'f', &c.lhs_batch, &c.lhs_feature, ls, &nl, start))
		return false;
	if (cur(p) != '_')
		return hp_fail(p, p->p, "bad dim_labels: expected '_'");
	p->p++;
	if (!parse_labels(p, 'i', 'o', &c.rhs_in, &c.rhs_out, rs, &nr, start))
		return false;
	if (p->end - p->p < 2 || p->p[0] != '-' || p->p[1] != '>')
		return hp_fail(p, p->p, "bad dim_labels: expected '->'");
	p->p += 2;
	if (!parse_labels(p, 'b', 'f', &c.out_batch, &c.out_feature, os, &no, start))
		return false;
	if (nl != nr || nl != no)
		return hp_fail(p, start, "bad dim_labels '%.*s': input, kernel and output "
				      "must have same number of spatial dimensions "
				      "(%d, %d, %d)", labels_len(p, start), start, nl, nr, no);
	if (!labels_complete(p, start, 'b', 'f', c.lhs_batch, c.lhs_feature, ls, nl) ||
	    !labels_complete(p, start, 'i', 'o', c.rhs_in, c.rhs_out, rs, nr) ||
	    !labels_complete(p, start, 'b', 'f', c.out_batch, c.out_feature, os, no))
		return false;
	c.n_spatial = nl;
	struct ts_arena *a = &p->m->arena;
	struct ir_conv_dims *r = ts_arena_alloc(a, sizeof *r);
	if (!r)
		return hp_nomem(p);
	*r = c;
	if (nl) {
		r->lhs_spatial = ts_arena_dup(a, ls, sizeof(int) * (size_t)nl);
		r->rhs_spatial = ts_arena_dup(a, rs, sizeof(int) * (size_t)nl);
		r->out_spatial = ts_arena_dup(a, os, sizeof(int) * (size_t)nl);
		if (!r->lhs_spatial || !r->rhs_spatial || !r->out_spatial)
			return hp_nomem(p);
	}
	*out = r;
	return true;
}

/* slice={[a:b], [a:b:s], ...} */
static bool parse_slice(struct hp_parser *p, struct ir_slice **out)
{
	struct ir_slice_dim dims[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute 'slice': expected '{'");
	p->p++;
	if (!hp_accept(p, '}')) {
		for (;;) {
			skip_ws(p);
			if (n == HP_MAX_RANK)
				return hp_fail(p, p->p, "bad value for attribute 'slice': too many dimensions");
			if (cur(p) != '[')
				return hp_fail(p, p->p, "bad value for attribute 'slice': expected '['");
			p->p++;
			struct ir_slice_dim *d = &dims[n++];
			d->stride = 1;
			if (!hp_read_int(p, &d->start) || !hp_expect_char(p, ':', "':'") ||
			    !hp_read_int(p, &d->limit))
				return false;
			if (hp_accept(p, ':') && !hp_read_int(p, &d->stride))
				return false;
			if (!hp_expect_char(p, ']', "']'"))
				return false;
			if (hp_accept(p, '}'))
				break;
			if (!hp_expect_char(p, ',', "',' or '}' in slice"))
				return false;
		}
	}
	struct ts_arena *a = &p->m->arena;
	struct ir_slice *s = ts_arena_alloc(a, sizeof *s);
	if (!s)
		return hp_nomem(p);
	s->n = n;
	if (n) {
		s->dims = ts_arena_dup(a, dims, sizeof *dims * (size_t)n);
		if (!s->dims)
			return hp_nomem(p);
	}
	*out = s;
	return true;
}

/* padding=0_1x2_3_1 */
static bool parse_padding(struct hp_parser *p, struct ir_padding **out)
{
	int64_t v[HP_MAX_RANK][3];
	int n = 0;
	skip_ws(p);
	if (is_digit(cur(p)) || cur(p) == '-') {
		if (!parse_pad_list(p, v, &n, true, "padding"))
			return false;
	}
	struct ts_arena *a = &p->m->arena;
	struct ir_padding *r = ts_arena_alloc(a, sizeof *r);
	if (!r)
		return hp_nomem(p);
	r->n = n;
	if (n) {
		r->dims = ts_arena_array(a, (size_t)n, sizeof *r->dims);
		if (!r->dims)
			return hp_nomem(p);
	}
	for (int i = 0; i < n; i++)
		r->dims[i] = (struct ir_pad_dim){v[i][0], v[i][1], v[i][2]};
	*out = r;
	return true;
}

/* ---- device groups: replica_groups, source_target_pairs ----------------- */

/* Axes a mesh replica group may name (more: the group is left unknown). */
#define MESH_MAX_AXES 16

/* INT (',' INT)* then `close` from q (blanks between), at most max entries
 * into v, each at most INT32_MAX: the byte after `close`, *n the count; or
 * NULL (nothing reported) for anything else. */
static const char *scan_ints(struct hp_parser *p, const char *q, int close,
			     int64_t *v, int max, int *n)
{
	*n = 0;
	for (;;) {
		q = ws_end(p, q);
		const char *d = q;
		int64_t x = 0;
		while (q < p->end && is_digit((unsigned char)*q) && x <= INT32_MAX)
			x = x * 10 + (*q++ - '0');
		if (q == d || x > INT32_MAX || *n == max)
			return NULL;
		v[(*n)++] = x;
		q = ws_end(p, q);
		if (peek_at(p, q) == close)
			return q + 1;
		if (peek_at(p, q) != ',')
			return NULL;
		q++;
	}
}

/* An iota array's "[d0,d1,...]" and optional "T(p0,p1,...)" at q, into *t
 * (perm the identity without T), *t_at at the 'T' (NULL: none): the byte
 * after it, or NULL (nothing reported); iota_perm_ok checks T. */
static const char *scan_iota(struct hp_parser *p, const char *q,
			     struct ir_iota *t, const char **t_at)
{
	int64_t perm[IR_IOTA_MAX_DIMS];
	int n_perm;
	*t_at = NULL;
	if (peek_at(p, q) != '[' ||
	    !(q = scan_ints(p, q + 1, ']', t->dims, IR_IOTA_MAX_DIMS, &t->n)))
		return NULL;
	for (int i = 0; i < t->n; i++)
		t->perm[i] = i;
	const char *r = ws_end(p, q);
	if (peek_at(p, r) != 'T')
		return q;
	*t_at = r;
	r = ws_end(p, r + 1);
	if (peek_at(p, r) != '(' ||
	    !(r = scan_ints(p, r + 1, ')', perm, IR_IOTA_MAX_DIMS, &n_perm)))
		return NULL;
	if (n_perm != t->n)
		t->perm[0] = -1; /* iota_perm_ok: not a permutation */
	for (int i = 0; i < n_perm && n_perm == t->n; i++)
		t->perm[i] = (int)perm[i];
	return r;
}

/* Is t->perm a permutation of 0 .. t->n - 1? */
static bool iota_perm_ok(const struct ir_iota *t)
{
	bool seen[IR_IOTA_MAX_DIMS] = {false};
	for (int i = 0; i < t->n; i++) {
		if (t->perm[i] < 0 || t->perm[i] >= t->n || seen[t->perm[i]])
			return false;
		seen[t->perm[i]] = true;
	}
	return true;
}

/* A quoted axis name at q ('axis_0' or "axis_0", no escapes): its text
 * into *s, *n; the byte after the closing quote, or NULL. */
static const char *mesh_name(struct hp_parser *p, const char *q,
			     const char **s, size_t *n)
{
	q = ws_end(p, q);
	int quote = peek_at(p, q);
	if (quote != '\'' && quote != '"')
		return NULL;
	const char *b = ++q;
	while (q < p->end && *q != quote && *q != '\\' && *q != '\n')
		q++;
	if (q >= p->end || *q != quote)
		return NULL;
	*s = b;
	*n = (size_t)(q - b);
	return q + 1;
}

/*
 * The mesh form of replica_groups, mesh['a'=2,'b'=1,'c'=2] {'a','c'}: a
 * device mesh with named axes and their sizes (optionally followed by
 * ", device_ids=(...)", the devices in mesh order), then the axes each
 * group spans. As XLA's MeshAxesReplicaGroupList: the mesh's positions
 * transposed to the other axes first, then the named ones in the order
 * named, and read as groups of the named axes' product (2 x 2 here); so it
 * is the iota [G,N]<=[2,1,2]T(1,0,2), its device order an iota too
 * (device_ids=([2,4]T(1,0))). q is at "mesh". Returns the byte after the
 * closing '}' with *size set and *r filled (r->iota.n == 0: its lists are
 * not kept: more than IR_IOTA_MAX_DIMS axes, or a device order written out
 * in full), or NULL (nothing consumed, no error) for any other spelling (a
 * sub-axis 'a':(1)2, a name not in the mesh), which stays unknown.
 */
static const char *mesh_groups(struct hp_parser *p, const char *q,
			       int64_t *size, struct ir_groups *r)
{
	struct { const char *s; size_t n; int64_t v; bool named; }
		ax[MESH_MAX_AXES];
	int n_ax = 0;
	if (p->end - q < 5 || memcmp(q, "mesh[", 5) != 0)
		return NULL;
	q += 5;
	for (;;) {
		if (n_ax == MESH_MAX_AXES ||
		    !(q = mesh_name(p, q, &ax[n_ax].s, &ax[n_ax].n)))
			return NULL;
		q = ws_end(p, q);
		if (peek_at(p, q) != '=')
			return NULL;
		q = ws_end(p, q + 1);
		int64_t v = 0;
		const char *d = q;
		while (q < p->end && is_digit((unsigned char)*q) && v < INT32_MAX)
			v = v * 10 + (*q++ - '0');
		if (q == d || v < 1 || v >= INT32_MAX)
			return NULL;
		ax[n_ax].named = false;
		ax[n_ax++].v = v;
		q = ws_end(p, q);
		if (peek_at(p, q) == ']')
			break;
		if (peek_at(p, q) != ',')
			return NULL;
		q++;
	}
	q = ws_end(p, q + 1);
	bool keep = n_ax <= IR_IOTA_MAX_DIMS;
	memset(r, 0, sizeof *r);
	/* a device order, ", device_ids=([2,2]T(1,0))": kept when an iota */
	if (peek_at(p, q) == ',') {
		const char *s = ws_end(p, q + 1), *t_at;
		if (p->end - s < 12 || memcmp(s, "device_ids=(", 12) != 0)
			return NULL;
		s += 12;
		const char *e = scan_iota(p, ws_end(p, s), &r->order, &t_at);
		e = e ? ws_end(p, e) : NULL;
		keep = keep && e && peek_at(p, e) == ')' &&
		       iota_perm_ok(&r->order);
		for (int depth = 1; depth > 0; s++) {
			if (s >= p->end || *s == '\n')
				return NULL;
			depth += *s == '(' ? 1 : *s == ')' ? -1 : 0;
		}
		q = ws_end(p, s);
	}
	if (peek_at(p, q) != '{')
		return NULL;
	q++;
	int64_t g = 1, total = 1;
	int named[MESH_MAX_AXES], n_named = 0;
	for (;;) {
		const char *s;
		size_t n;
		if (!(q = mesh_name(p, q, &s, &n)))
			return NULL;
		int i = 0;
		while (i < n_ax && !(ax[i].n == n && memcmp(ax[i].s, s, n) == 0))
			i++;
		if (i == n_ax || ax[i].named)
			return NULL;
		ax[i].named = true;
		named[n_named++] = i;
		g = ir_mul_sat(g, ax[i].v);
		q = ws_end(p, q);
		if (peek_at(p, q) == '}')
			break;
		if (peek_at(p, q) != ',')
			return NULL;
		q++;
	}
	*size = g;
	for (int i = 0; i < n_ax; i++)
		total = ir_mul_sat(total, ax[i].v);
	int64_t order_n = 1;
	for (int i = 0; i < r->order.n; i++)
		order_n = ir_mul_sat(order_n, r->order.dims[i]);
	if (keep && total <= IR_MAX_DEVICES &&
	    (r->order.n == 0 || order_n == total)) {
		r->n_groups = total / g;
		r->size = g;
		r->iota.n = n_ax;
		int k = 0;
		for (int i = 0; i < n_ax; i++) {
			r->iota.dims[i] = ax[i].v;
			if (!ax[i].named)
				r->iota.perm[k++] = i;
		}
		for (int i = 0; i < n_named; i++)
			r->iota.perm[k++] = named[i];
	}
	return q + 1;
}

/* A copy of the groups *r in the module's arena into *out; false (out of
 * memory recorded) when it cannot. */
static bool keep_groups(struct hp_parser *p, const struct ir_groups *r,
			const struct ir_groups **out)
{
	struct ir_groups *c = ts_arena_dup(&p->m->arena, r, sizeof *r);
	if (!c)
		return hp_nomem(p);
	*out = c;
	return true;
}

/*
 * Explicit device lists at p->p ('{'): "{}" (none; every device), or '{'
 * list (',' list)* '}', list = '{' id (',' id)* '}', each id in [0,
 * IR_MAX_DEVICES), at most IR_MAX_DEVICES ids in all; with `pairs`
 * (source_target_pairs) every list has two. *first: the first list's
 * length (0 for "{}").
 */
static bool parse_id_lists(struct hp_parser *p, const char *attr, bool pairs,
			   const struct ir_groups **out, int64_t *first)
{
	const char *what = pairs ? "pair" : "group";
	*out = NULL;
	*first = 0;
	p->p++;
	if (hp_accept(p, '}'))
		return true;
	struct hp_vec starts = {0}; /* int64_t: where each list begins */
	p->ints.n = 0;              /* int: the ids */
	bool ok = true;
	for (int64_t g = 0; ok; g++) {
		skip_ws(p);
		const char *open = p->p;
		int64_t *s = hp_vec_push(p, &starts, sizeof *s);
		if (!s)
			break;
		*s = (int64_t)p->ints.n;
		if (cur(p) != '{') {
			ok = hp_fail(p, open, "bad value for attribute '%s': "
				     "expected '{'", attr);
			break;
		}
		p->p++;
		if (hp_accept(p, '}')) {
			ok = hp_fail(p, open, "bad value for attribute '%s': "
				     "%s %lld is empty", attr, what, (long long)g);
			break;
		}
		for (;;) {
			skip_ws(p);
			const char *at = p->p;
			int64_t v;
			int *id;
			if (!is_digit(cur(p))) {
				ok = hp_fail(p, at, "bad value for attribute "
					     "'%s': expected a device id", attr);
				break;
			}
			if (!(ok = hp_read_int(p, &v)))
				break;
			if (v >= IR_MAX_DEVICES) {
				ok = hp_fail(p, at, "bad value for attribute "
					     "'%s': device id %lld is out of "
					     "range [0, %d]", attr, (long long)v,
					     IR_MAX_DEVICES - 1);
				break;
			}
			if (p->ints.n == IR_MAX_DEVICES) {
				ok = hp_fail(p, at, "bad value for attribute "
					     "'%s': more than %d device ids",
					     attr, IR_MAX_DEVICES);
				break;
			}
			if (!(id = hp_vec_push(p, &p->ints, sizeof *id))) {
				ok = false;
				break;
			}
			*id = (int)v;
			if (hp_accept(p, '}'))
				break;
			if (!hp_accept(p, ',')) {
				ok = hp_fail(p, p->p, "bad value for attribute "
					     "'%s': expected ',' or '}'", attr);
				break;
			}
		}
		int64_t len = (int64_t)p->ints.n - *s;
		if (ok && pairs && len != 2)
			ok = hp_fail(p, open, "bad value for attribute '%s': "
				     "pair %lld has %lld ids, expected 2", attr,
				     (long long)g, (long long)len);
		if (!ok)
			break;
		if (g == 0)
			*first = len;
		if (hp_accept(p, '}')) {
			int64_t *end = hp_vec_push(p, &starts, sizeof *end);
			struct ts_arena *a = &p->m->arena;
			struct ir_groups r = {.n_groups = g + 1};
			if (!end)
				break;
			*end = (int64_t)p->ints.n;
			r.starts = ts_arena_dup(a, starts.v, starts.n * sizeof *end);
			int32_t *ids = ts_arena_array(a, p->ints.n, sizeof *ids);
			if (!r.starts || !ids) {
				ok = hp_nomem(p);
				break;
			}
			for (size_t i = 0; i < p->ints.n; i++)
				ids[i] = ((const int *)p->ints.v)[i];
			r.ids = ids;
			ok = keep_groups(p, &r, out);
			break;
		}
		if (!hp_accept(p, ',')) {
			ok = hp_fail(p, p->p, "bad value for attribute '%s': "
				     "expected ',' or '}'", attr);
			break;
		}
	}
	ts_free(starts.v);
	return ok && *out;
}

/* The iota form [G,N]<=[dims] or [G,N]<=[dims]T(perm) at p->p ('['): G
 * groups of N devices read from the iota array (ir.h struct ir_iota). */
static bool parse_iota_groups(struct hp_parser *p, const struct ir_groups **out,
			      int64_t *size)
{
	const char *at = p->p, *t_at;
	struct ir_groups r = {0};
	int64_t gn[2];
	int n;
	const char *q = scan_ints(p, at + 1, ']', gn, 2, &n);
	if (!q || n != 2)
		return hp_fail(p, at, "bad value for attribute 'replica_groups': "
			       "expected [groups,size]<=[dims]");
	q = ws_end(p, q);
	if (p->end - q < 2 || memcmp(q, "<=", 2) != 0)
		return hp_fail(p, q, "bad value for attribute 'replica_groups': "
			       "expected '<=' after [groups,size]");
	const char *dims_at = ws_end(p, q + 2);
	const char *e = scan_iota(p, dims_at, &r.iota, &t_at);
	if (!e)
		return hp_fail(p, dims_at, "bad value for attribute "
			       "'replica_groups': expected [dims] or "
			       "[dims]T(permutation) after '<='");
	if (gn[0] < 1 || gn[1] < 1)
		return hp_fail(p, at, "bad value for attribute 'replica_groups': "
			       "groups and size must be at least 1");
	if (gn[0] * gn[1] > IR_MAX_DEVICES)
		return hp_fail(p, at, "bad value for attribute 'replica_groups': "
			       "%lld groups of %lld are more than %d devices",
			       (long long)gn[0], (long long)gn[1],
			       IR_MAX_DEVICES);
	int64_t devices = 1;
	for (int i = 0; i < r.iota.n; i++)
		devices = ir_mul_sat(devices, r.iota.dims[i]);
	if (devices != gn[0] * gn[1])
		return hp_fail(p, dims_at, "bad value for attribute "
			       "'replica_groups': %lld groups of %lld are %lld "
			       "devices, the iota has %lld", (long long)gn[0],
			       (long long)gn[1], (long long)(gn[0] * gn[1]),
			       (long long)devices);
	if (!iota_perm_ok(&r.iota))
		return hp_fail(p, t_at, "bad value for attribute "
			       "'replica_groups': %.*s is not a permutation of "
			       "the %d dims", (int)(e - t_at), t_at, r.iota.n);
	p->p = e;
	r.n_groups = gn[0];
	r.size = *size = gn[1];
	return keep_groups(p, &r, out);
}

/*
 * replica_groups: {} (all devices: size 0, no lists), {{0,1},{2,3}}
 * (explicit lists; size: the first's), the iota form [G,N]<=[dims]T(perm)
 * (N), the mesh form mesh['a'=2,'b'=2] {'a'} (mesh_groups: 2). A mesh
 * spelling mesh_groups does not take is skipped (size 0: unknown); any
 * other value is an error.
 */
static bool parse_replica_groups(struct hp_parser *p, struct ir_attrs *a)
{
	skip_ws(p);
	a->replica_group_size = 0;
	a->groups = NULL;
	if (cur(p) == '{')
		return parse_id_lists(p, "replica_groups", false, &a->groups,
				      &a->replica_group_size);
	if (cur(p) == '[')
		return parse_iota_groups(p, &a->groups, &a->replica_group_size);
	if (cur(p) == 'm') {
		struct ir_groups r;
		const char *after = mesh_groups(p, p->p, &a->replica_group_size,
						&r);
		if (!after)
			return hp_skip_value(p, false);
		p->p = after;
		return r.iota.n == 0 || keep_groups(p, &r, &a->groups);
	}
	return hp_fail(p, p->p, "bad value for attribute 'replica_groups': "
		       "expected {...}, [groups,size]<=[dims] or mesh[...]");
}

/* source_target_pairs={{0,1},{1,2}}: as groups of two {source, target}. */
static bool parse_pairs(struct hp_parser *p, struct ir_attrs *a)
{
	int64_t first;
	skip_ws(p);
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute "
			       "'source_target_pairs': expected '{'");
	return parse_id_lists(p, "source_target_pairs", true, &a->groups,
			      &first);
}

static bool parse_precision(struct hp_parser *p, enum ir_precision *prec)
{
	skip_ws(p);
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute 'operand_precision': expected '{'");
	p->p++;
	int n = 0;
	if (hp_accept(p, '}'))
		return true;
	for (;;) {
		skip_ws(p);
		const char *s = p->p;
		size_t len = word_len(p, s);
		enum ir_precision v;
		if (hp_word_is(s, len, "default") || hp_word_is(s, len, "DEFAULT") ||
		    hp_word_is(s, len, "packed_nibble") ||
		    hp_word_is(s, len, "PACKED_NIBBLE"))
			v = IR_PRECISION_DEFAULT;
		else if (hp_word_is(s, len, "high") || hp_word_is(s, len, "HIGH"))
			v = IR_PRECISION_HIGH;
		else if (hp_word_is(s, len, "highest") || hp_word_is(s, len, "HIGHEST"))
			v = IR_PRECISION_HIGHEST;
		else
			return hp_fail(p, s, "bad value for attribute 'operand_precision': '%.*s'",
				    hp_tok_len(p, s), s);
		p->p += len;
		if (n < 2)
			prec[n] = v;
		n++;
		if (hp_accept(p, '}'))
			return true;
		if (!hp_accept(p, ','))
			return hp_fail(p, p->p, "bad value for attribute 'operand_precision': expected ',' or '}'");
	}
}

/* metadata={op_type="..." op_name="..." ...}: keeps op_name. */
static bool parse_metadata(struct hp_parser *p, const char **op_name)
{
	skip_ws(p);
	if (cur(p) != '{')
		return hp_skip_value(p, false);
	const char *open = p->p;
	p->p++;
	for (;;) {
		skip_ws(p);
		int c = cur(p);
		if (c == '}') {
			p->p++;
			return true;
		}
		if (c < 0)
			return hp_fail(p, p->end, "unexpected end of input: '{' opened at line %u is not closed",
				    hp_line_of(p, open));
		if (c == ',') {
			p->p++;
			continue;
		}
		const char *ks = p->p;
		size_t kn = word_len(p, ks);
		if (!kn)
			return hp_fail(p, ks, "bad value for attribute 'metadata': unexpected '%c'", c);
		p->p += kn;
		if (!hp_expect_char(p, '=', "'=' in metadata"))
			return false;
		skip_ws(p);
		c = cur(p);
		if (hp_word_is(ks, kn, "op_name") && (c == '"' || c == '\'')) {
			if (!hp_read_string(p, op_name))
				return false;
		} else if (c == '"' || c == '\'') {
			const char *e = hp_skip_string(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else if (c == '{' || c == '(' || c == '[') {
			const char *e = hp_skip_group(p, p->p);
			if (!e)
				return false;
			p->p = e;
		} else {
			size_t n = word_len(p, p->p);
			if (!n)
				return hp_fail(p, p->p, "bad value for attribute 'metadata': unexpected '%c'",
					    c < 0 ? ' ' : c);
			p->p += n;
		}
	}
}

/* Finds key in [s, e); returns the byte after it or NULL. */
static const char *find_key(const char *s, const char *e, const char *key)
{
	size_t n = strlen(key);
	while (s < e && (size_t)(e - s) >= n) {
		const char *c = memchr(s, key[0], (size_t)(e - s) - n + 1);
		if (!c)
			return NULL;
		if (memcmp(c, key, n) == 0)
			return c + n;
		s = c + 1;
	}
	return NULL;
}

/* Integers inside the first [...] after key (quotes and escapes ignored). */
static bool bounds_list(struct hp_parser *p, const char *s, const char *e,
			const char *key, struct ir_ints *out)
{
	const char *c = find_key(s, e, key);
	if (!c)
		return true;
	while (c < e && *c != '[' && *c != ',' && *c != '}')
		c++;
	if (c >= e || *c != '[')
		return true;
	c++;
	int64_t v[HP_MAX_RANK];
	int n = 0;
	while (c < e && *c != ']' && n < HP_MAX_RANK) {
		if (is_digit(*c)) {
			int64_t x = 0;
			while (c < e && is_digit(*c)) {
				if (x < INT64_MAX / 10)
					x = x * 10 + (*c - '0');
				c++;
			}
			v[n++] = x;
		} else {
			c++;
		}
	}
	return finish_ints(p, v, n, out);
}

static struct ir_dot_dims *dot_of(struct hp_parser *p, struct ir_attrs *a);

/* operand_precision [\"DEFAULT\",\"HIGHEST\"] inside a backend_config
 * (cuBLAS gemm precision_config): the first two words, as the attribute. */
static void config_precision(const char *s, const char *e,
			     enum ir_precision prec[2])
{
	const char *c = find_key(s, e, "operand_precision");
	if (!c)
		return;
	while (c < e && *c != '[' && *c != '}')
		c++;
	for (int n = 0; c < e && *c != ']' && n < 2;) {
		if (!(*c >= 'A' && *c <= 'Z')) {
			c++;
			continue;
		}
		const char *w = c;
		while (c < e && *c >= 'A' && *c <= 'Z')
			c++;
		size_t len = (size_t)(c - w);
		prec[n++] = hp_word_is(w, len, "HIGHEST") ? IR_PRECISION_HIGHEST
			    : hp_word_is(w, len, "HIGH")  ? IR_PRECISION_HIGH
						       : IR_PRECISION_DEFAULT;
	}
}

/*
 * frontend_attributes={k="v", ...}: skipped, but for a send or recv the
 * megascale runtime carries between slices (a multi-slice program XLA
 * compiled per slice): _xla_megascale_transfer_type ("ALL_REDUCE",
 * "ALL_GATHER", "REDUCE_SCATTER", "ALL_TO_ALL") into megascale_op and the
 * slices of _xla_megascale_target ("{1,2}x{0:255}": the slices, then the
 * devices of each; "a:b" is a range) into megascale_slices. A value of
 * another form leaves them unset: the transfer is then not modelled.
 */
static bool parse_frontend(struct hp_parser *p, struct ir_attrs *at,
			   bool transfer)
{
	skip_ws(p);
	const char *s = p->p;
	if (cur(p) != '{' || !transfer)
		return hp_skip_value(p, false);
	const char *e = hp_skip_group(p, s);
	if (!e)
		return false;
	p->p = e;
	static const struct {
		const char *name;
		enum ir_op op;
	} kinds[] = {{"ALL_REDUCE\"", IR_OP_ALL_REDUCE},
		     {"ALL_GATHER\"", IR_OP_ALL_GATHER},
		     {"REDUCE_SCATTER\"", IR_OP_REDUCE_SCATTER},
		     {"ALL_TO_ALL\"", IR_OP_ALL_TO_ALL}};
	const char *k = find_key(s, e, "_xla_megascale_transfer_type=\"");
	for (size_t i = 0; k && i < TS_ARRAY_LEN(kinds); i++)
		if ((size_t)(e - k) >= strlen(kinds[i].name) &&
		    !memcmp(k, kinds[i].name, strlen(kinds[i].name)))
			at->megascale_op = kinds[i].op;
	const char *t = find_key(s, e, "_xla_megascale_target=\"{");
	int64_t n = 0;
	while (t && t < e && n >= 0) {
		int64_t lo = 0, hi;
		if (!is_digit(*t))
			n = -1;
		while (t < e && is_digit(*t) && lo < INT64_MAX / 10)
			lo = lo * 10 + (*t++ - '0');
		hi = lo;
		if (t < e && *t == ':') {
			hi = 0;
			for (t++; t < e && is_digit(*t) && hi < INT64_MAX / 10;)
				hi = hi * 10 + (*t++ - '0');
		}
		if (n < 0 || hi < lo || hi - lo >= INT32_MAX - n) {
			n = -1;
			break;
		}
		n += hi - lo + 1;
		if (t < e && *t == '}')
			break;
		if (t >= e || *t++ != ',')
			n = -1;
	}
	at->megascale_slices = n > 0 ? n : 0;
	return true;
}

/* The whole number after key inside [s, e) (quoted or not: proto JSON
 * writes int64 as a string), as a double; false when absent or not one of
 * at most 18 digits (below 10^18: an int64, no infinity downstream). */
static bool json_count(const char *s, const char *e, const char *key,
		       double *out)
{
	const char *c = find_key(s, e, key);
	if (!c)
		return false;
	while (c < e && (*c == '"' || *c == ':' || *c == ' '))
		c++;
	double x = 0;
	int n = 0;
	for (; c < e && is_digit(*c); n++)
		x = x * 10 + (*c++ - '0');
	if (n == 0 || n > 18)
		return false;
	*out = x;
	return true;
}

/* A Pallas kernel's cost_estimate ({"flops":"N","transcendentals":"N",
 * "bytes_accessed":"N"}, jax's tpu_custom_call backend config) into
 * at->declared; a partial or malformed one is left out (the kernel is then
 * not modelled). */
static bool declared_cost(struct hp_parser *p, const char *s, const char *e,
			  struct ir_attrs *at)
{
	const char *c = find_key(s, e, "\"cost_estimate\":{");
	if (!c)
		return true;
	const char *end = memchr(c, '}', (size_t)(e - c));
	struct ir_declared dc;
	if (!end || !json_count(c, end, "\"flops\"", &dc.flops) ||
	    !json_count(c, end, "\"transcendentals\"", &dc.transcendentals) ||
	    !json_count(c, end, "\"bytes_accessed\"", &dc.bytes))
		return true;
	if (!(at->declared = attr_block(p, sizeof *at->declared)))
		return false;
	*at->declared = dc;
	return true;
}

/*
 * backend_config: a string (escaped JSON) or a raw {...}. Looked inside for
 * known_trip_count {"n":"10"}, the TPU window_config bounds and, on a
 * custom-call (a cuBLAS gemm), dot_dimension_numbers and the operand
 * precision: kept as the call's dot attributes unless it has its own; and
 * a Pallas kernel's cost_estimate (declared_cost).
 */
static bool parse_backend_config(struct hp_parser *p, struct ir_attrs *at,
				 bool custom_call)
{
	skip_ws(p);
	const char *s = p->p, *e;
	int c = cur(p);
	if (c == '"' || c == '\'')
		e = hp_skip_string(p, s);
	else if (c == '{')
		e = hp_skip_group(p, s);
	else
		return hp_skip_value(p, false);
	if (!e)
		return false;
	p->p = e;
	if (custom_call && !declared_cost(p, s, e, at))
		return false;
	const char *k = find_key(s, e, "known_trip_count");
	if (k) {
		while (k < e && !is_digit(*k) && *k != '}')
			k++;
		if (k < e && is_digit(*k)) {
			int64_t x = 0;
			while (k < e && is_digit(*k) && x < INT64_MAX / 10)
				x = x * 10 + (*k++ - '0');
			at->known_trip_count = x;
		}
	}
	const char *wc = find_key(s, e, "window_config");
	if (wc) {
		if (!bounds_list(p, wc, e, "output_window_bounds",
				 &at->window_output_bounds) ||
		    !bounds_list(p, wc, e, "kernel_window_bounds",
				 &at->window_kernel_bounds))
			return false;
	}
	const char *dn = custom_call && !at->dot
				 ? find_key(s, e, "dot_dimension_numbers")
				 : NULL;
	if (dn) {
		struct ir_dot_dims *dd = dot_of(p, at);
		if (!dd ||
		    !bounds_list(p, dn, e, "lhs_contracting_dimensions",
				 &dd->lhs_contracting) ||
		    !bounds_list(p, dn, e, "rhs_contracting_dimensions",
				 &dd->rhs_contracting) ||
		    !bounds_list(p, dn, e, "lhs_batch_dimensions",
				 &dd->lhs_batch) ||
		    !bounds_list(p, dn, e, "rhs_batch_dimensions",
				 &dd->rhs_batch))
			return false;
		config_precision(s, e, at->precision);
	}
	return true;
}

/* ---- called computations, enumerations, checked attributes --------------- */

/* A computation reference: name (optional '%') or an inline body. */
static bool parse_comp_ref(struct hp_parser *p, int rank, struct ir_instr *in,
			   const char *attr)
{
	skip_ws(p);
	struct hp_call *call = hp_vec_push(p, &p->calls, sizeof *call);
	if (!call)
		return false;
	size_t idx = p->calls.n - 1;
	*call = (struct hp_call){rank, NULL, 0, p->p, NULL};
	if (cur(p) == '{') {
		/* "comp/instr/attr", plus a number unique within the instruction
		 * for the entries of a list attribute */
		char name[256];
		if (rank == CR_BRANCHES || rank == CR_CALLED)
			snprintf(name, sizeof name, "%s/%s/%s.%zu", in->parent->name,
				 in->name, attr, idx);
		else
			snprintf(name, sizeof name, "%s/%s/%s", in->parent->name,
				 in->name, attr);
		struct ir_computation *c;
		if (!hp_enter(p))
			return false;
		bool ok = p->parse_body(p, true, name, &c);
		p->depth--;
		if (!ok)
			return false;
		((struct hp_call *)p->calls.v)[idx].comp = c;
		return true;
	}
	const char *s;
	uint32_t n;
	if (!hp_read_name(p, &s, &n))
		return hp_fail(p, p->p, "bad value for attribute '%s': expected a computation name",
			    attr);
	call = (struct hp_call *)p->calls.v + idx;
	call->name = s;
	call->len = n;
	return true;
}

/* {C1, C2, ...} */
static bool parse_comp_list(struct hp_parser *p, int rank, struct ir_instr *in,
			    const char *attr)
{
	skip_ws(p);
	if (cur(p) != '{')
		return hp_fail(p, p->p, "bad value for attribute '%s': expected '{'", attr);
	p->p++;
	if (hp_accept(p, '}'))
		return true;
	for (;;) {
		if (!parse_comp_ref(p, rank, in, attr))
			return false;
		if (hp_accept(p, '}'))
			return true;
		if (!hp_accept(p, ','))
			return hp_fail(p, p->p, "bad value for attribute '%s': expected ',' or '}'",
				    attr);
	}
}

static bool parse_enum_word(struct hp_parser *p, const char *const *names,
			    int count, int *out, const char *attr)
{
	skip_ws(p);
	const char *s = p->p;
	size_t n = word_len(p, s);
	for (int i = 1; i < count; i++)
		if (hp_word_is(s, n, names[i])) {
			*out = i;
			p->p += n;
			return true;
		}
	return hp_fail(p, s, "bad value for attribute '%s': '%.*s'", attr,
		    hp_tok_len(p, s), s);
}

static struct ir_gather_dims *gather_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->gather && (a->gather = attr_block(p, sizeof *a->gather)))
		a->gather->index_vector_dim = -1;
	return a->gather;
}

static struct ir_scatter_dims *scatter_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->scatter && (a->scatter = attr_block(p, sizeof *a->scatter)))
		a->scatter->index_vector_dim = -1;
	return a->scatter;
}

static struct ir_dot_dims *dot_of(struct hp_parser *p, struct ir_attrs *a)
{
	if (!a->dot)
		a->dot = attr_block(p, sizeof *a->dot);
	return a->dot;
}

static const char *const fusion_kind_words[] = {
	[IR_FUSION_NONE] = "",
	[IR_FUSION_LOOP] = "kLoop",
	[IR_FUSION_INPUT] = "kInput",
	[IR_FUSION_OUTPUT] = "kOutput",
	[IR_FUSION_CUSTOM] = "kCustom",
};
_Static_assert(TS_ARRAY_LEN(fusion_kind_words) == IR_FUSION_KIND_COUNT,
	       "fusion_kind_words must cover every kind");

static const char *const cmp_words[] = {
	[IR_CMP_NONE] = "", [IR_CMP_EQ] = "EQ", [IR_CMP_NE] = "NE",
	[IR_CMP_LT] = "LT", [IR_CMP_LE] = "LE", [IR_CMP_GT] = "GT",
	[IR_CMP_GE] = "GE",
};
_Static_assert(TS_ARRAY_LEN(cmp_words) == IR_CMP_COUNT,
	       "cmp_words must cover every direction");

/*
 * result_accuracy={mode=default|highest} or {tolerance={atol=X, rtol=X,
 * ulps=N}} (XLA: ParseResultAccuracy). It does not change the cost; a
 * malformed one is refused as XLA refuses it.
 */
static bool parse_result_accuracy(struct hp_parser *p)
{
	static const char *const modes[] = {"", "default", "highest"};
	static const char *const tols[] = {"atol", "rtol", "ulps"};
	if (!hp_expect_char(p, '{', "'{' opening result_accuracy"))
		return false;
	skip_ws(p);
	const char *ws = p->p;
	size_t wn = word_len(p, ws);
	if (!wn || !name_start(*ws))
		return hp_fail(p, ws, "bad result_accuracy: expects attribute name, got '%.*s'",
			    hp_tok_len(p, ws), ws);
	p->p += wn;
	if (!hp_expect_char(p, '=', "'=' after the attribute name"))
		return false;
	skip_ws(p);
	if (hp_word_is(ws, wn, "mode")) {
		const char *vs = p->p;
		size_t vn = word_len(p, vs);
		if (!hp_word_is(vs, vn, modes[1]) && !hp_word_is(vs, vn, modes[2]))
			return hp_fail(p, vs, "bad result_accuracy: expects ResultAccuracy "
					   "type but sees: %.*s", hp_tok_len(p, vs), vs);
		p->p += vn;
	} else if (hp_word_is(ws, wn, "tolerance")) {
		if (!hp_expect_char(p, '{', "'{' opening the tolerance"))
			return false;
		for (skip_ws(p); cur(p) != '}';) {
			const char *ts = p->p;
			size_t tn = word_len(p, ts);
			size_t k = 0;
			while (k < TS_ARRAY_LEN(tols) && !hp_word_is(ts, tn, tols[k]))
				k++;
			if (k == TS_ARRAY_LEN(tols))
				return hp_fail(p, ts, "bad result_accuracy: invalid tolerance "
						   "field '%.*s'", hp_tok_len(p, ts), ts);
			p->p += tn;
			if (!hp_expect_char(p, '=', "'=' after the tolerance field"))
				return false;
			skip_ws(p);
			const char *vs = p->p;
			char *e = NULL;
			char buf[64];
			size_t vn = word_len(p, vs);
			if (vn && vn < sizeof buf) {
				memcpy(buf, vs, vn);
				buf[vn] = '\0';
				if (k == 2)
					(void)strtoll(buf, &e, 10);
				else
					(void)strtod(buf, &e);
			}
			if (!e || *e != '\0')
				return hp_fail(p, vs, "bad result_accuracy: %s expects %s, got '%.*s'",
					    tols[k], k == 2 ? "an integer" : "a number",
					    hp_tok_len(p, vs), vs);
			p->p += vn;
			skip_ws(p);
			if (!hp_accept(p, ',') && cur(p) != '}')
				return hp_expected(p, "',' or '}' in the tolerance");
			skip_ws(p);
		}
		p->p++;
	} else {
		return hp_fail(p, ws, "bad result_accuracy: invalid attribute name '%.*s'",
			    hp_tok_len(p, ws), ws);
	}
	skip_ws(p);
	return hp_expect_char(p, '}', "'}' closing result_accuracy");
}

/* control-predecessors={%a, %b}: names of the same computation, resolved
 * with the operands (p->sink receives them: the order is not modelled). */
static bool parse_control_preds(struct hp_parser *p, struct hp_level *lv)
{
	if (!hp_expect_char(p, '{', "'{' opening control-predecessors"))
		return false;
	skip_ws(p);
	if (hp_accept(p, '}'))
		return true;
	for (;;) {
		skip_ws(p);
		const char *at = p->p;
		const char *s;
		uint32_t n;
		if (!hp_read_name(p, &s, &n))
			return hp_expected(p, "an instruction name");
		if (!hp_table_get(&lv->names, s, n)) {
			struct hp_ref *r = hp_vec_push(p, &lv->refs, sizeof *r);
			if (!r)
				return false;
			*r = (struct hp_ref){&p->sink, s, n, at, NULL};
		}
		skip_ws(p);
		if (hp_accept(p, '}'))
			return true;
		if (!hp_expect_char(p, ',', "',' or '}' in control-predecessors"))
			return false;
	}
}

/*
 * operand_layout_constraints={shape, ...} of a custom-call: one shape per
 * operand, each compatible (dimensions and element type) with its operand
 * when that operand is already defined (XLA: "operand N is not compatible
 * with operand shape").
 */
static bool parse_layout_constraints(struct hp_parser *p, struct ir_instr *in)
{
	if (!hp_expect_char(p, '{', "'{' opening operand_layout_constraints"))
		return false;
	int k = 0;
	for (skip_ws(p); cur(p) != '}'; k++) {
		const char *at = hp_skip_ws_from(p, p->p);
		struct ir_shape s;
		if (!hp_parse_shape(p, &s))
			return false;
		if (k >= in->n_operands)
			return hp_fail(p, at, "operand_layout_constraints: more shapes than "
					   "the %d operands", in->n_operands);
		const struct ir_instr *o = in->operands[k];
		if (o && !(o->flags & IR_INSTR_SHAPE_INFERRED) &&
		    !ir_shape_compatible(&s, &o->shape))
			return hp_fail(p, at, "operand_layout_constraints: operand %d is not "
					   "compatible with operand shape", k);
		skip_ws(p);
		if (!hp_accept(p, ',') && cur(p) != '}')
			return hp_expected(p, "',' or '}' in operand_layout_constraints");
		skip_ws(p);
	}
	p->p++;
	if (k != in->n_operands)
		return hp_fail(p, p->p - 1, "operand_layout_constraints: %d shapes for %d "
					 "operands", k, in->n_operands);
	return true;
}

/* api_version= of a custom call: a CustomCallApiVersion name (XLA:
 * "Unknown API version"). XLA's parser now also refuses
 * API_VERSION_UNSPECIFIED ("Invalid API version"), but the PyTorch/XLA
 * modules of the shared corpus carry it, as older XLA printed it: it is
 * read, the one place tpusim is knowingly more lenient than XLA. */
static bool parse_api_version(struct hp_parser *p)
{
	static const char *const versions[] = {
		"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL",
		"API_VERSION_STATUS_RETURNING",
		"API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI",
	};
	skip_ws(p);
	const char *vs = p->p;
	size_t vn = word_len(p, vs);
	for (size_t i = 0; i < TS_ARRAY_LEN(versions); i++)
		if (hp_word_is(vs, vn, versions[i])) {
			p->p += vn;
			return true;
		}
	return hp_fail(p, vs, "Unknown API version: '%.*s'", hp_tok_len(p, vs), vs);
}

/* Parses the value of attribute `attr` (p->p after '='). */
static bool parse_attr(struct hp_parser *p, struct hp_level *lv,
		       struct ir_instr *in, int attr)
{
	struct ir_attrs *a = &in->attrs;
	const char *an = attr_names[attr];
	enum ir_op op = in->op;
	struct ir_ints *ints = NULL;
	int v = 0;
	switch (attr) {
	case A_DIMENSIONS:
		ints = new_ints(p, &a->dimensions);
		break;
	case A_LHS_BATCH:
		ints = dot_of(p, a) ? &a->dot->lhs_batch : NULL;
		break;
	case A_RHS_BATCH:
		ints = dot_of(p, a) ? &a->dot->rhs_batch : NULL;
		break;
	case A_LHS_CONTRACT:
		ints = dot_of(p, a) ? &a->dot->lhs_contracting : NULL;
		break;
	case A_RHS_CONTRACT:
		ints = dot_of(p, a) ? &a->dot->rhs_contracting : NULL;
		break;
	case A_WINDOW:
		return parse_window(p, &a->window);
	case A_DIM_LABELS:
		return parse_dim_labels(p, &a->conv);
	case A_FGC:
		return parse_positive_attr(p, &a->feature_group_count, an);
	case A_BGC:
		return parse_positive_attr(p, &a->batch_group_count, an);
	case A_SLICE:
		return parse_slice(p, &a->slice);
	case A_PADDING:
		if (op != IR_OP_PAD)
			return hp_skip_value(p, false);
		return parse_padding(p, &a->padding);
	case A_OFFSET_DIMS:
		ints = gather_of(p, a) ? &a->gather->offset_dims : NULL;
		break;
	case A_COLLAPSED:
		ints = gather_of(p, a) ? &a->gather->collapsed_slice_dims : NULL;
		break;
	case A_START_INDEX_MAP:
		ints = gather_of(p, a) ? &a->gather->start_index_map : NULL;
		break;
	case A_OPERAND_BATCHING:
		ints = gather_of(p, a) ? &a->gather->operand_batching_dims : NULL;
		break;
	case A_START_INDICES_BATCHING:
		ints = gather_of(p, a) ? &a->gather->start_indices_batching_dims : NULL;
		break;
	case A_SLICE_SIZES:
		if (op != IR_OP_GATHER)
			return hp_skip_value(p, false);
		ints = gather_of(p, a) ? &a->gather->slice_sizes : NULL;
		break;
	case A_INDEX_VECTOR_DIM:
		if (op == IR_OP_GATHER)
			return gather_of(p, a) &&
			       hp_parse_int_attr(p, &a->gather->index_vector_dim, an);
		if (op == IR_OP_SCATTER)
			return scatter_of(p, a) &&
			       hp_parse_int_attr(p, &a->scatter->index_vector_dim, an);
		return hp_skip_value(p, false);
	case A_UPDATE_WINDOW:
		ints = scatter_of(p, a) ? &a->scatter->update_window_dims : NULL;
		break;
	case A_INSERTED_WINDOW:
		ints = scatter_of(p, a) ? &a->scatter->inserted_window_dims : NULL;
		break;
	case A_SCATTER_TO_OPERAND:
		ints = scatter_of(p, a) ? &a->scatter->scatter_dims_to_operand_dims : NULL;
		break;
	case A_INPUT_BATCHING:
		ints = scatter_of(p, a) ? &a->scatter->input_batching_dims : NULL;
		break;
	case A_SCATTER_INDICES_BATCHING:
		ints = scatter_of(p, a) ? &a->scatter->scatter_indices_batching_dims : NULL;
		break;
	case A_DYN_SLICE_SIZES:
		ints = new_ints(p, &a->dynamic_slice_sizes);
		break;
	case A_FFT_LENGTH:
		ints = new_ints(p, &a->fft_length);
		break;
	case A_IOTA_DIM:
		return hp_parse_int_attr(p, &a->iota_dimension, an);
	case A_CROSS_PREFETCH: {
		int64_t index;
		if (!hp_parse_int_attr(p, &index, an))
			return false;
		if (index < 0)
			return hp_fail(p, p->p, "bad value for attribute "
					     "'cross_program_prefetch_index': negative");
		a->cross_program_prefetch = true;
		return true;
	}
	case A_CHANNEL:
		if (!hp_parse_int_attr(p, &a->channel_id, an))
			return false;
		if (a->channel_id < 0)
			return hp_fail(p, p->p, "bad value for attribute 'channel_id': negative");
		return true;
	case A_INDEX:
		if (op != IR_OP_GET_TUPLE_ELEMENT)
			return hp_skip_value(p, false);
		if (!hp_parse_int_attr(p, &a->tuple_index, an))
			return false;
		if (a->tuple_index < 0)
			return hp_fail(p, p->p, "bad value for attribute 'index': negative");
		return true;
	case A_K:
		if (op != IR_OP_TOPK)
			return hp_skip_value(p, false);
		return hp_parse_int_attr(p, &a->k, an);
	case A_DIRECTION:
		if (op != IR_OP_COMPARE)
			return hp_skip_value(p, false);
		if (!parse_enum_word(p, cmp_words, IR_CMP_COUNT, &v, an))
			return false;
		a->compare_dir = (enum ir_compare_dir)v;
		return true;
	case A_KIND:
		if (op != IR_OP_FUSION)
			return hp_skip_value(p, false);
		if (!parse_enum_word(p, fusion_kind_words, IR_FUSION_KIND_COUNT, &v, an))
			return false;
		a->fusion_kind = (enum ir_fusion_kind)v;
		return true;
	case A_CALLS:
		return parse_comp_ref(p, CR_CALLS, in, an);
	case A_TO_APPLY:
		return parse_comp_ref(p, CR_TO_APPLY, in, an);
	case A_CONDITION:
		return parse_comp_ref(p, CR_CONDITION, in, an);
	case A_BODY:
		return parse_comp_ref(p, CR_BODY, in, an);
	case A_BRANCHES:
		in->flags |= IR_INSTR_BRANCH_LIST;
		return parse_comp_list(p, CR_BRANCHES, in, an);
	case A_TRUE:
		return parse_comp_ref(p, CR_TRUE, in, an);
	case A_FALSE:
		return parse_comp_ref(p, CR_FALSE, in, an);
	case A_SELECT:
		return parse_comp_ref(p, CR_SELECT, in, an);
	case A_SCATTER:
		return parse_comp_ref(p, CR_SCATTER, in, an);
	case A_CALLED:
		return parse_comp_list(p, CR_CALLED, in, an);
	case A_TARGET:
		return hp_read_string(p, &a->custom_call_target);
	case A_THREAD:
		return hp_read_string(p, &a->exec_thread);
	case A_ACCURACY:
		return parse_result_accuracy(p);
	case A_CONTROL:
		return parse_control_preds(p, lv);
	case A_LAYOUT_CONSTRAINTS:
		return parse_layout_constraints(p, in);
	case A_API_VERSION:
		return parse_api_version(p);
	case A_PRECISION:
		return parse_precision(p, a->precision);
	case A_REPLICA_GROUPS:
		return parse_replica_groups(p, a);
	case A_PAIRS:
		return parse_pairs(p, a);
	case A_METADATA:
		return parse_metadata(p, &in->op_name);
	case A_BACKEND_CONFIG:
		return parse_backend_config(p, a, op == IR_OP_CUSTOM_CALL);
	case A_FRONTEND:
		return parse_frontend(p, a, op == IR_OP_SEND || op == IR_OP_RECV);
	default:
		return hp_skip_value(p, false);
	}
	if (!ints)
		return false;
	return hp_parse_int_list(p, ints, an);
}

/*
 * The attribute list of an instruction (p->p at the ',' after its operand
 * list, when there is one): each known attribute parsed once and only on
 * an opcode that takes it, unknown ones skipped and noted, and the
 * attributes the opcode needs present. A nested instruction has none.
 */
bool hp_parse_attrs(struct hp_parser *p, struct hp_level *lv,
		    struct ir_instr *in, bool allow_attrs)
{
	uint64_t seen = 0; /* bit per enum hp_attr */
	for (;;) {
		skip_ws(p);
		if (cur(p) != ',' || !allow_attrs)
			break;
		p->p++;
		skip_ws(p);
		const char *as = p->p;
		size_t an = word_len(p, as);
		if (!an || cur(p) == '%')
			return hp_expected(p, "an attribute name");
		p->p += an;
		if (!hp_expect_char(p, '=', "'=' after the attribute name"))
			return false;
		const struct hp_kw *k = hp_kw_get(as, an);
		int attr = k ? k->attr : A_NONE;
		if (attr == A_NONE && !note_unknown_attr(p, as, an))
			return hp_nomem(p);
		if (attr != A_NONE && attr != A_COST_FREE) {
			if (seen & (1ull << attr))
				return hp_fail(p, as, "attribute '%s' given twice",
					    attr_names[attr]);
			seen |= 1ull << attr;
			if (!attr_allowed(in->op, attr) &&
			    !attr_allowed(in->wrapped_op, attr))
				return hp_fail(p, as, "unexpected attribute \"%s\" for %s",
					    attr_names[attr], ir_op_name(in->op));
		}
		if (!parse_attr(p, lv, in, attr))
			return false;
	}
	if ((unsigned)in->op < IR_OP_COUNT) {
		for (size_t j = 0; j < TS_ARRAY_LEN(required_attrs[in->op]); j++) {
			int r = required_attrs[in->op][j];
			/* a broadcast of a scalar (or of an operand not yet
			 * known) may leave its dimensions out: they are {} */
			if (in->op == IR_OP_BROADCAST && r == A_DIMENSIONS &&
			    (in->n_operands != 1 || !in->operands[0] ||
			     (in->operands[0]->shape.type != IR_TYPE_TUPLE &&
			      in->operands[0]->shape.rank == 0)))
				continue;
			if (r && !(seen & (1ull << r)) && !allow_attrs)
				return hp_fail_lc(p, in->line, in->col,
					       "a nested %s cannot have the attribute "
					       "'%s' it needs", ir_op_name(in->op),
					       attr_names[r]);
			if (r && !(seen & (1ull << r)))
				return hp_fail_lc(p, in->line, in->col,
					       "%s '%s' needs attribute '%s'",
					       ir_op_name(in->op), in->name,
					       attr_names[r]);
		}
	}
	return true;
}

/* shape_index := '{' [INT (',' INT)*] '}' (XLA: ParseShapeIndex) */
static bool parse_shape_index(struct hp_parser *p, struct ir_ints *out)
{
	int64_t v[HP_MAX_RANK];
	int n = 0;
	skip_ws(p);
	if (!hp_accept(p, '{'))
		return hp_fail(p, p->p, "expects '{' at the start of ShapeIndex, got '%.*s'",
			    hp_tok_len(p, p->p), p->p);
	skip_ws(p);
	if (hp_accept(p, '}'))
		return finish_ints(p, v, n, out);
	for (;;) {
		skip_ws(p);
		if (n == HP_MAX_RANK)
			return hp_fail(p, p->p, "more than %d entries in ShapeIndex",
				    HP_MAX_RANK);
		if (!is_digit(cur(p)) || !hp_read_int(p, &v[n++]))
			return p->st != TS_OK ? false :
			       hp_fail(p, p->p, "expects integer in ShapeIndex, got '%.*s'",
				    hp_tok_len(p, p->p), p->p);
		skip_ws(p);
		if (hp_accept(p, '}'))
			return finish_ints(p, v, n, out);
		if (!hp_accept(p, ','))
			return hp_fail(p, p->p, "expects '}' at the end of ShapeIndex, got '%.*s'",
				    hp_tok_len(p, p->p), p->p);
	}
}

/* The entries of one aliasing list (p->aliases) after the module's. */
static bool keep_aliases(struct hp_parser *p)
{
	struct ir_module *m = p->m;
	size_t n = (size_t)m->n_aliases + p->aliases.n;
	if (n > INT32_MAX)
		return hp_fail(p, p->p, "more than %d aliasing entries", INT32_MAX);
	struct ir_alias *all = ts_arena_array(&m->arena, n ? n : 1, sizeof *all);
	if (!all)
		return hp_nomem(p);
	if (m->n_aliases)
		memcpy(all, m->aliases, (size_t)m->n_aliases * sizeof *all);
	if (p->aliases.n)
		memcpy(all + m->n_aliases, p->aliases.v,
		       p->aliases.n * sizeof *all);
	m->aliases = all;
	m->n_aliases = (int)n;
	return true;
}

/*
 * The header's aliasing lists (XLA: ParseAliasing, ParseBufferDonor):
 *   input_output_alias={ shape_index: (INT, shape_index[, must-alias|may-alias]), ... }
 *   buffer_donor={ (INT, shape_index), ... }
 * into ir_module.aliases; a malformed one is refused as XLA refuses it
 * (what they name is checked by ir_verify).
 */
bool hp_parse_aliasing(struct hp_parser *p, bool donor)
{
	const char *what = donor ? "buffer_donor" : "input_output_alias";
	p->aliases.n = 0;
	skip_ws(p);
	if (!hp_accept(p, '{'))
		return hp_expected(p, donor ? "'{' opening buffer_donor"
					 : "'{' opening input_output_alias");
	skip_ws(p);
	if (hp_accept(p, '}'))
		return true;
	for (;;) {
		struct ir_alias *e = hp_vec_push(p, &p->aliases, sizeof *e);
		if (!e)
			return false;
		*e = (struct ir_alias){.output = {.n = -1}};
		skip_ws(p);
		hp_locate(p, p->p, &e->line, &e->col);
		if (!donor) {
			if (!parse_shape_index(p, &e->output))
				return false;
			skip_ws(p);
			if (!hp_accept(p, ':'))
				return hp_fail(p, p->p, "%s: expects ':' after the output "
						     "ShapeIndex", what);
		}
		skip_ws(p);
		if (!hp_accept(p, '('))
			return hp_fail(p, p->p, "%s: expects '(' before the parameter "
					     "number", what);
		skip_ws(p);
		if (!is_digit(cur(p)) || !hp_read_int(p, &e->param))
			return p->st != TS_OK ? false :
			       hp_fail(p, p->p, "%s: expects integer parameter number, "
					     "got '%.*s'", what, hp_tok_len(p, p->p), p->p);
		skip_ws(p);
		if (!hp_accept(p, ','))
			return hp_fail(p, p->p, "%s: expects ',' after the parameter "
					     "number", what);
		if (!parse_shape_index(p, &e->param_index))
			return false;
		skip_ws(p);
		if (!donor && hp_accept(p, ',')) {
			skip_ws(p);
			const char *ks = p->p;
			size_t kn = word_len(p, ks);
			if (!hp_word_is(ks, kn, "must-alias") && !hp_word_is(ks, kn, "may-alias"))
				return hp_fail(p, ks, "%s: unexpected alias kind '%.*s'", what,
					    hp_tok_len(p, ks), ks);
			e->must = hp_word_is(ks, kn, "must-alias");
			p->p += kn;
			skip_ws(p);
		}
		if (!hp_accept(p, ')'))
			return hp_fail(p, p->p, "%s: expects ')' after the parameter's "
					     "ShapeIndex", what);
		skip_ws(p);
		if (hp_accept(p, '}'))
			return keep_aliases(p);
		if (!hp_accept(p, ','))
			return hp_fail(p, p->p, "expects '}' at the end of %s, got '%.*s'",
				    donor ? "buffer donor description"
					  : "aliasing description",
				    hp_tok_len(p, p->p), p->p);
	}
}

