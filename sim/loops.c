/*
 * loops.c: the trip count of a while loop that carries no
 * known_trip_count, derived from the loop as XLA's while-loop analysis
 * derives it (xla/service/while_loop_analysis.cc, ComputeWhileLoopTripCount
 * and its pattern match of the induction variable):
 *   - the loop state is a tuple (the while's operand a tuple instruction,
 *     the body's root a tuple of as many elements) whose element i is the
 *     induction variable, or the state is that variable itself;
 *   - the body's root (element i) is add(x, c), in either order, x the
 *     variable (get-tuple-element(param, index=i), or the parameter), c a
 *     scalar integer constant other than 0, and the initial value (element
 *     i) a scalar integer constant v0;
 *   - any of x, c, v0, N and the update add(x, c) may be a copy (of a
 *     copy...) of itself: what copy insertion leaves in a compiled module;
 *   - the condition's root is compare(x, N) with N a scalar integer
 *     constant, or compare(N, x) (direction mirrored).
 * The body runs once per k >= 0 for which the compare holds on
 * x_k = v0 + k c, the first failing k ending the loop:
 *   LT, c > 0:  max(0, ceil((N - v0) / c))
 *   LE, c > 0:  max(0, floor((N - v0) / c) + 1)
 *   GT, c < 0:  max(0, ceil((v0 - N) / -c))
 *   GE, c < 0:  max(0, floor((v0 - N) / -c) + 1)
 *   NE:         (N - v0) / c when that is a whole number >= 0
 * Not derived (the caller falls back to --trip-count or 1 and says so): a
 * step away from the bound (the loop would never end, or only by integer
 * wrap-around, which is not modelled), bounds that are not constants,
 * induction variables updated through other ops, counts of 2^62 or more.
 * Arithmetic is in 128 bits so no int64 operand can overflow it.
 */
#include "sim.h"


/* in with its copies looked through: XLA's copy insertion gives a
 * compiled loop's initial state copies of its constants and its body
 * copies of the induction variable (XLA's analysis evaluates the loop,
 * copies and all). */
static const struct ir_instr *through_copies(const struct ir_instr *in)
{
	while (in->op == IR_OP_COPY && in->n_operands == 1)
		in = in->operands[0];
	return in;
}

/* The scalar integer constant v is (or a copy of it). */
static bool int_const(const struct ir_instr *in, ts_i128 *v)
{
	in = through_copies(in);
	if (in->op != IR_OP_CONSTANT || !(in->flags & IR_INSTR_INT_VALUE))
		return false;
	*v = in->attrs.int_value;
	return true;
}

/* The induction variable as computation c sees it: get-tuple-element(
 * param, index=i), or the parameter itself when i < 0 (scalar state). */
static bool state_elem(const struct ir_instr *in, const struct ir_computation *c,
		       int64_t i)
{
	if (c->n_params != 1)
		return false;
	in = through_copies(in);
	if (i < 0)
		return in == c->params[0];
	return in->op == IR_OP_GET_TUPLE_ELEMENT && in->n_operands == 1 &&
	       in->operands[0] == c->params[0] && in->attrs.tuple_index == i;
}


/* Body runs of the loop x_k = v0 + k c while x_k `dir` n holds; a test
 * false from the start runs it 0 times whatever the step. */
static bool count_runs(enum ir_compare_dir dir, ts_i128 v0, ts_i128 c, ts_i128 n,
		       ts_i128 *trip)
{
	bool first = dir == IR_CMP_LT ? v0 < n : dir == IR_CMP_LE ? v0 <= n :
		     dir == IR_CMP_GT ? v0 > n : dir == IR_CMP_GE ? v0 >= n :
		     dir == IR_CMP_NE ? v0 != n : true;
	if (!first && dir != IR_CMP_EQ) {
		*trip = 0;
		return true;
	}
	ts_i128 t;
	switch (dir) {
	case IR_CMP_LT:
		if (c <= 0)
			return false;
		t = ts_ceil_div(n - v0, c);
		break;
	case IR_CMP_LE:
		if (c <= 0)
			return false;
		t = ts_floor_div(n - v0, c) + 1;
		break;
	case IR_CMP_GT:
		if (c >= 0)
			return false;
		t = ts_ceil_div(v0 - n, -c);
		break;
	case IR_CMP_GE:
		if (c >= 0)
			return false;
		t = ts_floor_div(v0 - n, -c) + 1;
		break;
	case IR_CMP_NE:
		if ((n - v0) % c != 0 || (n - v0) / c < 0)
			return false;
		t = (n - v0) / c;
		break;
	default:
		return false;
	}
	*trip = t < 0 ? 0 : t;
	return true;
}

/* The direction with its operands swapped: N < x is x > N. */
static enum ir_compare_dir mirrored(enum ir_compare_dir d)
{
	switch (d) {
	case IR_CMP_LT: return IR_CMP_GT;
	case IR_CMP_LE: return IR_CMP_GE;
	case IR_CMP_GT: return IR_CMP_LT;
	case IR_CMP_GE: return IR_CMP_LE;
	default: return d;
	}
}

bool sim_while_trip_count(const struct ir_instr *w, int64_t *trip)
{
	if (w->op != IR_OP_WHILE || w->n_called != 2 || w->n_operands != 1)
		return false;
	const struct ir_computation *cond = w->called[0], *body = w->called[1];
	const struct ir_instr *init = w->operands[0];
	const struct ir_instr *next = body ? body->root : NULL;
	const struct ir_instr *test = cond ? cond->root : NULL;
	if (!next || !test || test->op != IR_OP_COMPARE || test->n_operands != 2)
		return false;
	bool tuple = init->op == IR_OP_TUPLE;
	if (tuple && (next->op != IR_OP_TUPLE ||
		      next->n_operands != init->n_operands))
		return false;
	/* i = -1: the state is the variable itself */
	for (int i = tuple ? 0 : -1; i < (tuple ? next->n_operands : 0); i++) {
		const struct ir_instr *upd =
			through_copies(i < 0 ? next : next->operands[i]);
		ts_i128 v0, c, n, t;
		if (upd->op != IR_OP_ADD || upd->n_operands != 2 ||
		    !int_const(i < 0 ? init : init->operands[i], &v0))
			continue;
		int var = state_elem(upd->operands[0], body, i) ? 0 :
			  state_elem(upd->operands[1], body, i) ? 1 : -1;
		if (var < 0 || !int_const(upd->operands[1 - var], &c) || c == 0)
			continue;
		enum ir_compare_dir dir = test->attrs.compare_dir;
		if (state_elem(test->operands[0], cond, i) &&
		    int_const(test->operands[1], &n)) {
			/* x dir N */
		} else if (state_elem(test->operands[1], cond, i) &&
			   int_const(test->operands[0], &n)) {
			dir = mirrored(dir);
		} else {
			continue;
		}
		if (!count_runs(dir, v0, c, n, &t) || t >= ((ts_i128)1 << 62))
			return false;
		*trip = (int64_t)t;
		return true;
	}
	return false;
}
