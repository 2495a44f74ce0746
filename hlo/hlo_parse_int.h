/*
 * hlo_parse_int.h: the insides of the HLO text parser (docs/HLO.md section
 * 1), shared by its grammar files and nothing else (the interface is ir.h;
 * the lexical layer below them is hlo_lex.h):
 *   hlo_lex.c    errors and locations, growable vectors and name tables,
 *                the keyword table, whitespace and comments, names,
 *                integers, strings and the skipping of values;
 *   hlo_shape.c  shapes and layouts;
 *   hlo_attrs.c  attribute values, which attributes an opcode takes or
 *                needs, and the module header's aliasing lists;
 *   hlo_parse.c  instructions, computations, modules: hlo_parse().
 * A hand-written recursive-descent parser working directly on the bytes:
 * no token stream and no per-token allocation; names are looked up in
 * arena-free hash tables and resolved per scope in a second pass.
 */
#ifndef HLO_PARSE_INT_H
#define HLO_PARSE_INT_H

#include "hlo_lex.h"

/* Attributes with a parser of their own; the rest are skipped. */
enum hp_attr {
	A_NONE = 0,
	A_DIMENSIONS, A_LHS_BATCH, A_RHS_BATCH, A_LHS_CONTRACT, A_RHS_CONTRACT,
	A_WINDOW, A_DIM_LABELS, A_FGC, A_BGC, A_SLICE, A_PADDING,
	A_OFFSET_DIMS, A_COLLAPSED, A_START_INDEX_MAP, A_OPERAND_BATCHING,
	A_START_INDICES_BATCHING, A_SLICE_SIZES, A_INDEX_VECTOR_DIM,
	A_UPDATE_WINDOW, A_INSERTED_WINDOW, A_SCATTER_TO_OPERAND,
	A_INPUT_BATCHING, A_SCATTER_INDICES_BATCHING, A_DYN_SLICE_SIZES,
	A_FFT_LENGTH, A_IOTA_DIM, A_INDEX, A_DIRECTION, A_KIND, A_CALLS,
	A_TO_APPLY, A_CONDITION, A_BODY, A_BRANCHES, A_TRUE, A_FALSE, A_SELECT,
	A_SCATTER, A_CALLED, A_TARGET, A_PRECISION, A_REPLICA_GROUPS, A_PAIRS,
	A_METADATA, A_BACKEND_CONFIG, A_K, A_THREAD, A_ACCURACY, A_CONTROL,
	A_LAYOUT_CONSTRAINTS, A_API_VERSION, A_CHANNEL, A_FRONTEND,
	A_CROSS_PREFETCH,
	A_COST_FREE, /* known, does not affect the modelled cost: skipped quietly */
	A_COUNT
};

/* Order of called computations in ir_instr.called (ir.h). */
enum hp_call_rank {
	CR_CALLS = 0, CR_TO_APPLY, CR_CONDITION, CR_BODY, CR_BRANCHES, CR_TRUE,
	CR_FALSE, CR_SELECT, CR_SCATTER, CR_CALLED, CR_COUNT
};

/* A called computation of the instruction being parsed. */
struct hp_call {
	int rank;                     /* enum hp_call_rank */
	const char *name;             /* in the text, without '%' */
	uint32_t len;                 /* bytes of name */
	const char *at;               /* for the diagnostic */
	struct ir_computation *comp;  /* inline body, or NULL: look up name */
};

/* An operand (or called computation) name to resolve later. */
struct hp_ref {
	void **slot;       /* where the resolved pointer goes */
	const char *name;  /* in the text, without '%' */
	uint32_t len;      /* bytes of name */
	const char *at;    /* for the diagnostic */
	void *direct;      /* operands: already resolved (a nested instruction, or
	                      one found to check a declared shape) */
};

/* Per-nesting-level state of a computation body being parsed. */
struct hp_level {
	struct hp_table names;  /* instruction name -> struct ir_instr * */
	struct hp_table params; /* parameter number (its digits) -> instr */
	struct hp_vec instrs;   /* struct ir_instr * in text order */
	struct hp_vec refs;     /* struct hp_ref: operands defined later */
};

/* ---- hlo_shape.c ---- */

bool hp_enter(struct hp_parser *p);
/* A shape into *out (undefined when it fails). */
bool hp_parse_shape(struct hp_parser *p, struct ir_shape *out);
bool hp_parse_shape_after_word(struct hp_parser *p, const char *ws,
			       size_t wn, const struct hp_kw *k,
			       struct ir_shape *out);

/* ---- hlo_attrs.c ---- */

void hp_kw_init(void);
bool hp_parse_aliasing(struct hp_parser *p, bool donor);
bool hp_parse_int_attr(struct hp_parser *p, int64_t *out, const char *attr);
bool hp_parse_int_list(struct hp_parser *p, struct ir_ints *out,
		       const char *attr);
bool hp_parse_attrs(struct hp_parser *p, struct hp_level *lv,
		    struct ir_instr *in, bool allow_attrs);

#endif /* HLO_PARSE_INT_H */
