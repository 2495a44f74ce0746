/*
 * grouping_delta.c: a computation grouped under one decision more than
 * another grouping of it (sim_grouping_delta), worked out as far as it
 * differs from that grouping, for the fusion policies' search: the
 * decisions that may differ made again, and only the groups that may
 * differ collected. Why no other group differs is said where the groups
 * are found (sim_grouping_delta).
 */
#include "kernels_int.h"

#include <string.h>

/* The group an instruction belongs to, named by its root (G_NONE and
 * G_MULTI as they are): the same in two groupings whose ids differ. */
static int root_of(const struct grouping *g, int i)
{
	return g->grp[i] >= 0 ? g->g_root[g->grp[i]] : g->grp[i];
}

/* Adds to ids (seen: already there) the groups of t that hold
 * instruction j: its own, or, recomputed or constant-derived, those that
 * hold a user (sim_grouping_collect takes it in through one). visit and stack:
 * scratch per instruction, visit stamped with gen. */
static void holders_of(const struct grouping *t, int j, int gen, int *visit,
		       int *stack, bool *seen, int *ids, int *n)
{
	int sp = 0;
	stack[sp++] = j;
	visit[j] = gen;
	while (sp > 0) {
		int x = stack[--sp], gx = t->grp[x];
		if (gx >= 0) {
			if (!seen[gx]) {
				seen[gx] = true;
				ids[(*n)++] = gx;
			}
			continue;
		}
		if (gx != G_MULTI && !t->cd[x])
			continue; /* held by no group */
		for (int k = t->uoff[x]; k < t->uoff[x + 1]; k++) {
			int u = t->users[k];
			if (visit[u] != gen) {
				visit[u] = gen;
				stack[sp++] = u;
			}
		}
	}
}

/* The candidates of b's sibling merging whose digest is key: the first
 * in b->sib (sorted by digest), and how many (*n). */
static int sib_run(const struct grouping *b, uint64_t key, int *n)
{
	int lo = 0, hi = b->n_sib;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (b->sib[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	int end = lo;
	while (end < b->n_sib && b->sib[end].key == key)
		end++;
	*n = end - lo;
	return lo;
}

/* Whether sibling merging leaves the groups of t in t_ids and of b in
 * b_ids alone: no reduce among b's shares its digest with another of b's
 * candidates, and none among t's with another of t's (in t_ids) or with
 * one of b's other than its namesake (the others of b's are t's too,
 * unchanged). in: room for n_instrs; keys: for n_t. */
static bool siblings_alone(const struct grouping *t, const struct grouping *b,
			   const int *t_ids, int n_t, const int *b_ids, int n_b,
			   const struct ir_instr **in, uint64_t *keys)
{
	bool alone = true;
	for (int q = 0; alone && q < n_b; q++) {
		int n;
		if (!sim_group_sibling(b, b_ids[q]))
			continue;
		sib_run(b, sim_group_digest(b, b_ids[q], in), &n);
		alone = n < 2;
	}
	int n_keys = 0;
	for (int q = 0; alone && q < n_t; q++) {
		int x = t_ids[q], n;
		if (!sim_group_sibling(t, x))
			continue;
		uint64_t key = sim_group_digest(t, x, in);
		for (int k = sib_run(b, key, &n), e = k + n; alone && k < e; k++)
			alone = b->g_root[b->sib[k].id] == t->g_root[x];
		for (int k = 0; alone && k < n_keys; k++)
			alone = keys[k] != key;
		keys[n_keys++] = key;
	}
	return alone;
}

/* decide_from's marks per instruction: its decision is made again; a
 * group rooted there gained or lost a core op. */
enum { DELTA_AGAIN = 1, DELTA_CORE = 2 };

static bool is_core(const struct grouping *t, int x)
{
	return t->fc[x] == FC_CORE;
}

/* Whether core op y's decision may read a group whose core ops differ
 * from b's: a live user's group (in t, named by root) marked in mark
 * (DELTA_CORE). The core rule reads whether its user's group holds a core
 * op yet (g_core_at), and only a core op's decision changes that. */
static bool reads_core_change(const struct grouping *t, int y,
			      const unsigned char *mark)
{
	for (int k = t->uoff[y]; k < t->uoff[y + 1]; k++) {
		int u = t->users[k], gu = t->grp[u];
		if (t->live[u] && gu >= 0 && (mark[t->g_root[gu]] & DELTA_CORE))
			return true;
	}
	return false;
}

/* t's decisions: b's up to at's (consumers first: no decision reads a
 * later one, and force differs from b's only at at), and from there
 * made again where they may differ: at's, those of the operands of one
 * that came out otherwise (its group, named by root, or its reuse or
 * prologue marks), and those of the core ops whose user is in a group
 * that a core op came into or left (the core rule reads whether the
 * group holds one yet); the rest are b's, their groups named as t names
 * them. The groups b made before at's decision keep their ids, and hold
 * a core op when one joined them by then (g_core_at). b split no cyclic
 * group (its decisions are its groups). moved[0 .. *n_moved) gets the
 * instructions whose group differs from b's (only a decision made again
 * can differ). mark: n_instrs zeros, DELTA_* marks on return. */
static void decide_from(struct grouping *t, const struct grouping *b, int at,
			unsigned char *mark, int *moved, int *n_moved)
{
	int from = b->pos[at];
	size_t n = (size_t)t->n;
	memcpy(t->grp, b->grp, n * sizeof *t->grp);
	memcpy(t->reuse, b->reuse, n * sizeof *t->reuse);
	memcpy(t->prologue, b->prologue, n * sizeof *t->prologue);
	memcpy(t->why, b->why, n * sizeof *t->why);
	int keep = 0;
	while (keep < b->n_decided && b->pos[b->g_root[keep]] > from)
		keep++;
	for (int id = 0; id < keep; id++) {
		t->g_root[id] = b->g_root[id];
		t->g_core_at[id] = b->g_core_at[id] > from ? b->g_core_at[id] : -1;
		t->g_rep[id] = id;
	}
	t->n_groups = keep;
	mark[at] = DELTA_AGAIN;
	bool core_changed = false; /* some DELTA_CORE mark is set */
	*n_moved = 0;
	for (int k = from; k >= 0; k--) {
		int x = t->order[k], gb = b->grp[x];
		if ((mark[x] & DELTA_AGAIN) ||
		    (core_changed && is_core(t, x) &&
		     reads_core_change(t, x, mark))) {
			t->reuse[x] = t->prologue[x] = false;
			t->why[x] = SIM_WHY_FUSED;
			sim_grouping_decide(t, x);
			int rt = root_of(t, x), rb = root_of(b, x);
			bool moves = rt != rb;
			if (moves)
				moved[(*n_moved)++] = x;
			if (!moves && t->reuse[x] == b->reuse[x] &&
			    t->prologue[x] == b->prologue[x])
				continue;
			if (is_core(t, x)) {
				/* the groups it left and came into */
				if (rt >= 0)
					mark[rt] |= DELTA_CORE;
				if (rb >= 0)
					mark[rb] |= DELTA_CORE;
				core_changed = true;
			}
			for (int j = t->ooff[x]; j < t->ooff[x + 1]; j++)
				if (t->ops[j] >= 0)
					mark[t->ops[j]] |= DELTA_AGAIN;
			continue;
		}
		if (gb < 0)
			continue; /* G_NONE or G_MULTI, as in b */
		/* its group's root was decided before it, as in b (else x
		 * would have been made again) */
		int r = b->g_root[gb];
		bool had_core = b->g_core_at[gb] == b->pos[x];
		if (r == x)
			sim_grouping_new(t, x, had_core);
		else if ((t->grp[x] = t->grp[r]) >= 0 && had_core)
			t->g_core_at[t->grp[x]] = b->pos[x];
	}
	t->n_decided = t->n_groups;
}

struct delta_scratch {
	int *moved, *visit, *stack; /* visit: a generation per walk */
	int visit_gen;
	unsigned char *mark;        /* decide_from's, zero between trials */
	bool *t_seen, *b_seen;      /* group ids taken, zero between trials */
	int *coll, n_coll;          /* the groups of t collected last trial */
	const struct ir_instr **in; /* siblings_alone's */
	uint64_t *keys;
	struct collect_scratch cs;
	struct cycle_scratch cy;
};

bool sim_delta_scratch_new(struct grouping *t, const struct grouping *like,
			   struct delta_scratch **out)
{
	struct delta_scratch *ds = ts_calloc(1, sizeof *ds);
	*out = ds;
	if (!ds || sim_grouping_init(t, like->c, like) != TS_OK)
		return false;
	size_t n = (size_t)(t->n > 0 ? t->n : 1);
	ds->moved = ts_malloc(n * sizeof *ds->moved);
	ds->visit = ts_calloc(n, sizeof *ds->visit);
	ds->stack = ts_malloc(n * sizeof *ds->stack);
	ds->mark = ts_calloc(n, 1);
	ds->t_seen = ts_calloc(2 * n, sizeof *ds->t_seen);
	ds->b_seen = ts_calloc(2 * n, sizeof *ds->b_seen);
	ds->coll = ts_malloc(2 * n * sizeof *ds->coll);
	ds->in = ts_malloc(n * sizeof *ds->in);
	ds->keys = ts_malloc(2 * n * sizeof *ds->keys);
	bool got_cs = sim_grouping_collect_init(t, &ds->cs);
	bool got_cy = sim_cycle_scratch_init(&ds->cy, t->n);
	return got_cs && got_cy && ds->moved && ds->visit && ds->stack &&
	       ds->mark && ds->t_seen && ds->b_seen && ds->coll && ds->in &&
	       ds->keys;
}

void sim_delta_scratch_free(struct delta_scratch *ds)
{
	if (!ds)
		return;
	ts_free(ds->moved);
	ts_free(ds->visit);
	ts_free(ds->stack);
	ts_free(ds->mark);
	ts_free(ds->t_seen);
	ts_free(ds->b_seen);
	ts_free(ds->coll);
	ts_free(ds->in);
	ts_free(ds->keys);
	sim_collect_scratch_free(&ds->cs);
	sim_cycle_scratch_free(&ds->cy);
	ts_free(ds);
}

enum ts_status sim_grouping_delta(struct grouping *t, const struct grouping *b,
				  const signed char *force, int at,
				  struct delta_scratch *ds, int *t_ids,
				  int *n_t, int *b_ids, int *n_b, bool *whole)
{
	TS_ASSERT(t->c == b->c && t->borrowed);
	size_t n = (size_t)(t->n > 0 ? t->n : 1);
	*whole = true;
	*n_t = *n_b = 0;
	/* the last trial's member lists gone, as a new grouping has none */
	for (int q = 0; q < ds->n_coll; q++)
		t->m_start[ds->coll[q]] = t->m_len[ds->coll[q]] = 0;
	ds->n_coll = 0;
	t->pool_n = 0;
	/* b split a cyclic group: not followed */
	if (b->n_groups != b->n_decided)
		return TS_OK;
	t->force = force;
	int n_moved = 0;
	decide_from(t, b, at, ds->mark, ds->moved, &n_moved);
	memset(ds->mark, 0, n);
	bool ok = true;
	/* the instructions whose group differs, and the groups of t and the
	 * representatives of b that hold one: no other group gains or loses
	 * a member (a group takes in only what it reaches through its
	 * members), an output (a member it owns is held by it alone, so its
	 * readers are the users outside it; a copy is never one;
	 * sim_group_output) or a cycle (sim_group_cyclic reads its members) */
	for (int q = 0; q < n_moved; q++) {
		int j = ds->moved[q];
		for (int h = b->h_off[j]; h < b->h_off[j + 1]; h++)
			if (!ds->b_seen[b->holders[h]]) {
				ds->b_seen[b->holders[h]] = true;
				b_ids[(*n_b)++] = b->holders[h];
			}
		int gen = ts_next_gen(&ds->visit_gen, ds->visit, NULL, n);
		holders_of(t, j, gen, ds->visit, ds->stack, ds->t_seen, t_ids,
			   n_t);
	}
	/* and each one's namesake in the other (the group with the same
	 * root): it differs too, if only by what the other gained */
	for (int q = 0, n0 = *n_b; q < n0; q++) {
		int r = b->g_root[b_ids[q]], x = t->grp[r];
		if (x >= 0 && t->g_root[x] == r && !ds->t_seen[x]) {
			ds->t_seen[x] = true;
			t_ids[(*n_t)++] = x;
		}
	}
	for (int q = 0; q < *n_t; q++) {
		int r = t->g_root[t_ids[q]], x = b->grp[r];
		if (x >= 0 && b->g_root[x] == r && !ds->b_seen[b->g_rep[x]]) {
			ds->b_seen[b->g_rep[x]] = true;
			b_ids[(*n_b)++] = b->g_rep[x];
		}
	}
	for (int q = 0; q < *n_t; q++)
		ds->t_seen[t_ids[q]] = false;
	for (int q = 0; q < *n_b; q++)
		ds->b_seen[b_ids[q]] = false;
	for (int q = 0; ok && q < *n_t; q++) {
		ok = sim_grouping_collect(t, t_ids[q], &ds->cs);
		if (ok)
			ds->coll[ds->n_coll++] = t_ids[q];
	}
	/* a reduce among them that has, or had, a sibling to merge with (its
	 * digest another's of either) is not followed; one without merges
	 * with nothing in t, as its namesake did in b */
	bool follow = ok && siblings_alone(t, b, t_ids, *n_t, b_ids, *n_b,
					   ds->in, ds->keys);
	for (int q = 0; ok && follow && q < *n_t; q++)
		follow = !sim_group_cyclic(t, t_ids[q], &ds->cy);
	*whole = !follow;
	return ok ? TS_OK : TS_ERR_NOMEM;
}
