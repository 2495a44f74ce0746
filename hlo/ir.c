/*
 * ir.c: the op and type tables (expanded from ir_ops.def / ir_types.def) and
 * module-level helpers. Shape arithmetic lives in ir_shape.c.
 */
#include "ir.h"

#include <string.h>

/* ---- types ---------------------------------------------------------------- */

static const struct {
	const char *name;
	int bits;
} type_traits[] = {
	[IR_TYPE_INVALID] = {"invalid", 0},
#define X(e, s, b, fp) [IR_TYPE_##e] = {s, b},
#include "ir_types.def"
#undef X
	[IR_TYPE_TUPLE] = {"tuple", 0},
};
_Static_assert(TS_ARRAY_LEN(type_traits) == IR_TYPE_COUNT,
	       "type_traits must cover every ir_type");

const char *ir_type_name(enum ir_type t)
{
	return (unsigned)t < IR_TYPE_COUNT ? type_traits[t].name : "invalid";
}

int ir_type_bits(enum ir_type t)
{
	return (unsigned)t < IR_TYPE_COUNT ? type_traits[t].bits : 0;
}

/* ---- opcodes -------------------------------------------------------------- */

static const struct {
	const char *name;
	enum ir_class cls;
	int8_t min_operands, max_operands; /* max -1: no upper bound */
} op_traits[] = {
	[IR_OP_INVALID] = {"invalid", IR_CLASS_OTHER, 0, -1},
#define X(e, s, cls, vpu, lo, hi) [IR_OP_##e] = {s, IR_CLASS_##cls, lo, hi},
#include "ir_ops.def"
#undef X
};
_Static_assert(TS_ARRAY_LEN(op_traits) == IR_OP_COUNT,
	       "op_traits must cover every ir_op");

const char *ir_op_name(enum ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? op_traits[op].name : "invalid";
}

enum ir_class ir_op_class(enum ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? op_traits[op].cls : IR_CLASS_OTHER;
}

void ir_op_arity(enum ir_op op, int *min, int *max)
{
	op = (unsigned)op < IR_OP_COUNT ? op : IR_OP_INVALID;
	*min = op_traits[op].min_operands;
	*max = op_traits[op].max_operands;
}

/* A linear scan: 140 short strings, compared only once per instruction.
 * The parser may put a faster lookup in front if profiling asks for it. */
enum ir_op ir_op_from_name(const char *s, size_t n)
{
	for (int op = IR_OP_INVALID + 1; op < IR_OP_COUNT; op++) {
		const char *name = op_traits[op].name;
		if (strncmp(name, s, n) == 0 && name[n] == '\0')
			return (enum ir_op)op;
	}
	return IR_OP_INVALID;
}

static const char *const fusion_kind_names[] = {
	[IR_FUSION_NONE] = "",
	[IR_FUSION_LOOP] = "kLoop",
	[IR_FUSION_INPUT] = "kInput",
	[IR_FUSION_OUTPUT] = "kOutput",
	[IR_FUSION_CUSTOM] = "kCustom",
};
_Static_assert(TS_ARRAY_LEN(fusion_kind_names) == IR_FUSION_KIND_COUNT,
	       "fusion_kind_names must cover every kind");

const char *ir_fusion_kind_name(enum ir_fusion_kind k)
{
	return (unsigned)k < IR_FUSION_KIND_COUNT ? fusion_kind_names[k] : "";
}

/* ---- module --------------------------------------------------------------- */

bool ir_ints_equal(const struct ir_ints *a, const struct ir_ints *b)
{
	return a->n == b->n &&
	       (a->n <= 0 || memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0);
}

void ir_module_free(struct ir_module *m)
{
	if (!m)
		return;
	struct ts_arena a = m->arena; /* m itself lives in its arena */
	ts_arena_free(&a);
}

struct ir_computation *ir_module_find_comp(const struct ir_module *m,
					   const char *name)
{
	for (int i = 0; i < m->n_comps; i++)
		if (strcmp(m->comps[i]->name, name) == 0)
			return m->comps[i];
	return NULL;
}

void ir_module_count_ops(const struct ir_module *m, int64_t *counts)
{
	memset(counts, 0, sizeof(int64_t) * IR_OP_COUNT);
	for (int c = 0; c < m->n_comps; c++) {
		const struct ir_computation *comp = m->comps[c];
		for (int i = 0; i < comp->n_instrs; i++)
			counts[comp->instrs[i]->op]++;
	}
}

/* ---- device groups ------------------------------------------------------- */

/*
 * Element i of an iota array: i's row-major index over the transposed dims
 * (dims[perm[0]], dims[perm[1]], ...) is the index perm puts back in place
 * over dims, whose row-major offset is the element.
 */
int64_t ir_iota_at(const struct ir_iota *t, int64_t i)
{
	int64_t idx[IR_IOTA_MAX_DIMS];
	for (int k = t->n - 1; k >= 0; k--) {
		int64_t d = t->dims[t->perm[k]];
		idx[t->perm[k]] = i % d;
		i /= d;
	}
	int64_t v = 0;
	for (int k = 0; k < t->n; k++)
		v = v * t->dims[k] + idx[k];
	return t->n ? v : i;
}

int64_t ir_groups_len(const struct ir_groups *r, int64_t g)
{
	return r->ids ? r->starts[g + 1] - r->starts[g] : r->size;
}

int64_t ir_groups_device(const struct ir_groups *r, int64_t g, int64_t j)
{
	if (r->ids)
		return r->ids[r->starts[g] + j];
	return ir_iota_at(&r->order, ir_iota_at(&r->iota, g * r->size + j));
}
