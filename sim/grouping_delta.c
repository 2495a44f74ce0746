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
 * group rooted there gained or lost a core op; asked whether its decision
 * reads such a group (a core op's or a dot epilogue's, sim_reads_core);
 * queued (once a trial). */
enum { DELTA_AGAIN = 1, DELTA_CORE = 2, DELTA_ASK = 4, DELTA_QUEUED = 8 };

static bool is_core(const struct grouping *t, int x)
{
	return t->fc[x] == FC_CORE;
}

/* Whether y's decision (sim_reads_core) may read a group whose core ops differ
 * from b's: a live user's group (in t, named by root) marked in mark
 * (DELTA_CORE). The core rule and a dot epilogue's boundary read whether
 * its user's group holds a core op yet, and which (g_core_at), and only a
 * core op's decision changes that. */
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

struct delta_scratch {
	const struct grouping *b;   /* the grouping t copies between trials */
	int *moved, *visit, *stack; /* visit: a generation per walk */
	int visit_gen;
	int *up, *up_stack, up_gen; /* add_dots_above's walk: up[] stamped */
	unsigned char *mark;        /* decide_from's: the last trial's, on
	                               the instructions in marked[] only */
	int *marked, n_marked;      /* what the last trial may have decided
	                               otherwise in t (undo_trial) */
	int *queue, n_queue;        /* decisions to make or ask again: a
	                               heap, latest in the order on top */
	bool *t_seen, *b_seen;      /* group ids taken, zero between trials */
	int *coll, n_coll;          /* the groups of t collected last trial */
	const struct ir_instr **in; /* siblings_alone's */
	uint64_t *keys;
	struct collect_scratch cs;
	struct cycle_scratch cy;
};

/* Sets flags f on x's mark, x listed in ds->marked the first time. */
static void set_mark(struct delta_scratch *ds, int x, unsigned char f)
{
	if (!ds->mark[x])
		ds->marked[ds->n_marked++] = x;
	ds->mark[x] |= f;
}

/* Marks x with f and queues it, unless it is queued already. */
static void enqueue(struct delta_scratch *ds, const int *pos, int x,
		    unsigned char f)
{
	bool queued = ds->mark[x] & DELTA_QUEUED;
	set_mark(ds, x, f | DELTA_QUEUED);
	if (queued)
		return;
	int i = ds->n_queue++;
	while (i > 0 && pos[ds->queue[(i - 1) / 2]] < pos[x]) {
		ds->queue[i] = ds->queue[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	ds->queue[i] = x;
}

/* The queued instruction latest in the order, taken off the queue. */
static int dequeue(struct delta_scratch *ds, const int *pos)
{
	int top = ds->queue[0], x = ds->queue[--ds->n_queue], n = ds->n_queue;
	int i = 0;
	for (int c = 1; c < n; c = 2 * i + 1) {
		if (c + 1 < n && pos[ds->queue[c + 1]] > pos[ds->queue[c]])
			c++;
		if (pos[ds->queue[c]] <= pos[x])
			break;
		ds->queue[i] = ds->queue[c];
		i = c;
	}
	if (n > 0)
		ds->queue[i] = x;
	return top;
}

/* Marks r (a group's root, in t or b; none when negative) DELTA_CORE, and
 * queues to be asked again the decisions that read a group's core ops
 * (sim_reads_core) that come after x's (earlier in the order) and may
 * read that: those an owned member of b's group rooted at r reads. A user whose decision came out otherwise has
 * queued its operands already, and one whose decision holds is in b's
 * group of its root. Marked before (at a decision later in the order),
 * those are queued already. */
static void mark_core_change(const struct grouping *t,
			     const struct grouping *b, int r, int x,
			     struct delta_scratch *ds)
{
	if (r < 0 || (ds->mark[r] & DELTA_CORE))
		return;
	set_mark(ds, r, DELTA_CORE);
	int gb = b->grp[r];
	if (gb < 0 || b->g_root[gb] != r)
		return;
	const int *mem;
	int n_mem = sim_group_members(b, gb, &mem);
	for (int q = 0; q < n_mem; q++) {
		int u = mem[q];
		if (b->grp[u] != gb)
			continue; /* a copy, or a merged sibling's */
		for (int j = t->ooff[u]; j < t->ooff[u + 1]; j++) {
			int y = t->ops[j];
			if (y >= 0 && sim_reads_core(t, y) && t->pos[y] < t->pos[x])
				enqueue(ds, t->pos, y, DELTA_ASK);
		}
	}
}

/* t a copy of b's decisions again (ds->b: b), after a trial changed what
 * it marked: the decisions of the instructions marked, the core places of
 * their groups, the groups the trial made (ids from b->n_groups on). */
static void undo_trial(struct grouping *t, struct delta_scratch *ds)
{
	const struct grouping *b = ds->b;
	for (int q = 0; q < ds->n_marked; q++) {
		int x = ds->marked[q], ids[2] = {b->grp[x], t->grp[x]};
		for (int k = 0; k < 2; k++)
			if (ids[k] >= 0 && ids[k] < b->n_groups)
				t->g_core_at[ids[k]] = b->g_core_at[ids[k]];
		t->grp[x] = b->grp[x];
		t->reuse[x] = b->reuse[x];
		t->prologue[x] = b->prologue[x];
		t->bcast[x] = b->bcast[x];
		t->why[x] = b->why[x];
		ds->mark[x] = 0;
	}
	ds->n_marked = 0;
	t->n_groups = b->n_groups;
}

/* t's decisions (a copy of b's on entry): made again where they may
 * differ from b's, consumers first (no decision reads a later one, and
 * force differs from b's only at at): at's, those of the operands of one
 * that came out otherwise (its group, named by root, or its reuse,
 * prologue or bcast marks), and those of the core ops and dot epilogues whose user
 * is in a group that a core op came into or left (they read whether the
 * group holds one yet); the rest are b's. A group of t rooted where one
 * of b's is keeps b's id (the members whose decision holds name it), the
 * others take ids from b->n_groups on; a group holds a core op when one
 * joined it at a decision made before (g_core_at past the place asking;
 * a core op decided again leaves its group unless decided into it
 * again). b split no cyclic group (its decisions are its groups).
 * ds->moved[0 .. *n_moved) gets the instructions whose group differs
 * from b's (only a decision made again can differ); t->n_redecided counts
 * the decisions made or asked again, the work here (not the
 * computation's). */
static void decide_from(struct grouping *t, const struct grouping *b, int at,
			struct delta_scratch *ds, int *n_moved)
{
	*n_moved = 0;
	enqueue(ds, t->pos, at, DELTA_AGAIN);
	while (ds->n_queue > 0) {
		int x = dequeue(ds, t->pos);
		t->n_redecided++;
		if (!(ds->mark[x] & DELTA_AGAIN) &&
		    !reads_core_change(t, x, ds->mark))
			continue; /* asked, and b's decision holds */
		int gb = b->grp[x];
		if (is_core(t, x) && gb >= 0 && t->g_core_at[gb] == t->pos[x])
			t->g_core_at[gb] = -1;
		t->reuse[x] = t->prologue[x] = t->bcast[x] = false;
		t->why[x] = SIM_WHY_FUSED;
		sim_grouping_decide(t, x);
		int id = t->grp[x];
		if (id >= b->n_groups && t->g_root[id] == x && gb >= 0 &&
		    b->g_root[gb] == x) { /* rooted where b's group gb is */
			t->grp[x] = gb;
			if (t->g_core_at[id] >= 0)
				t->g_core_at[gb] = t->g_core_at[id];
			t->n_groups--; /* id was the last made */
		}
		int rt = root_of(t, x), rb = root_of(b, x);
		bool moves = rt != rb;
		if (moves)
			ds->moved[(*n_moved)++] = x;
		if (!moves && t->reuse[x] == b->reuse[x] &&
		    t->prologue[x] == b->prologue[x] && t->bcast[x] == b->bcast[x])
			continue;
		if (is_core(t, x)) { /* the groups it left and came into */
			mark_core_change(t, b, rt, x, ds);
			mark_core_change(t, b, rb, x, ds);
		}
		for (int j = t->ooff[x]; j < t->ooff[x + 1]; j++)
			if (t->ops[j] >= 0)
				enqueue(ds, t->pos, t->ops[j], DELTA_AGAIN);
	}
	t->n_decided = t->n_groups;
}

bool sim_delta_scratch_new(struct grouping *t, const struct grouping *like,
			   struct delta_scratch **out)
{
	struct delta_scratch *ds = ts_calloc(1, sizeof *ds);
	*out = ds;
	if (!ds || sim_grouping_init(t, like->c, like) != TS_OK)
		return false;
	ds->b = like;
	size_t n = (size_t)(t->n > 0 ? t->n : 1);
	ds->moved = ts_malloc(n * sizeof *ds->moved);
	ds->visit = ts_calloc(n, sizeof *ds->visit);
	ds->stack = ts_malloc(n * sizeof *ds->stack);
	ds->up = ts_calloc(n, sizeof *ds->up);
	ds->up_stack = ts_malloc(n * sizeof *ds->up_stack);
	ds->mark = ts_calloc(n, 1);
	ds->marked = ts_malloc(n * sizeof *ds->marked);
	ds->queue = ts_malloc(n * sizeof *ds->queue);
	ds->t_seen = ts_calloc(2 * n, sizeof *ds->t_seen);
	ds->b_seen = ts_calloc(2 * n, sizeof *ds->b_seen);
	ds->coll = ts_malloc(2 * n * sizeof *ds->coll);
	ds->in = ts_malloc(n * sizeof *ds->in);
	ds->keys = ts_malloc(2 * n * sizeof *ds->keys);
	bool got_cs = sim_grouping_collect_init(t, &ds->cs);
	bool got_cy = sim_cycle_scratch_init(&ds->cy, t->n);
	ds->cy.base = like; /* the groups t does not collect */
	if (!(got_cs && got_cy && ds->moved && ds->visit && ds->stack &&
	      ds->up && ds->up_stack &&
	      ds->mark && ds->marked && ds->queue && ds->t_seen &&
	      ds->b_seen && ds->coll && ds->in && ds->keys))
		return false;
	/* t starts as a copy of like's decisions; each group its own
	 * representative (t merges no siblings) */
	memcpy(t->grp, like->grp, (size_t)t->n * sizeof *t->grp);
	memcpy(t->reuse, like->reuse, (size_t)t->n * sizeof *t->reuse);
	memcpy(t->prologue, like->prologue, (size_t)t->n * sizeof *t->prologue);
	memcpy(t->bcast, like->bcast, (size_t)t->n * sizeof *t->bcast);
	memcpy(t->why, like->why, (size_t)t->n * sizeof *t->why);
	memcpy(t->g_root, like->g_root, (size_t)like->n_groups * sizeof *t->g_root);
	memcpy(t->g_core_at, like->g_core_at,
	       (size_t)like->n_groups * sizeof *t->g_core_at);
	for (size_t id = 0; id < 2 * n; id++)
		t->g_rep[id] = (int)id;
	t->n_groups = t->n_decided = like->n_groups;
	return true;
}

void sim_delta_scratch_free(struct delta_scratch *ds)
{
	if (!ds)
		return;
	ts_free(ds->moved);
	ts_free(ds->visit);
	ts_free(ds->stack);
	ts_free(ds->up);
	ts_free(ds->up_stack);
	ts_free(ds->mark);
	ts_free(ds->marked);
	ts_free(ds->queue);
	ts_free(ds->t_seen);
	ts_free(ds->b_seen);
	ts_free(ds->coll);
	ts_free(ds->in);
	ts_free(ds->keys);
	sim_collect_scratch_free(&ds->cs);
	sim_cycle_scratch_free(&ds->cy);
	ts_free(ds);
}

/* Adds the groups of t (t_ids) and b (b_ids) that hold instruction j. */
static void add_holders(const struct grouping *t, const struct grouping *b,
			int j, struct delta_scratch *ds, int *t_ids, int *n_t,
			int *b_ids, int *n_b)
{
	for (int h = b->h_off[j]; h < b->h_off[j + 1]; h++)
		if (!ds->b_seen[b->holders[h]]) {
			ds->b_seen[b->holders[h]] = true;
			b_ids[(*n_b)++] = b->holders[h];
		}
	size_t n = (size_t)(t->n > 0 ? t->n : 1);
	int gen = ts_next_gen(&ds->visit_gen, ds->visit, NULL, n);
	holders_of(t, j, gen, ds->visit, ds->stack, ds->t_seen, t_ids, n_t);
}

/* Adds the groups holding the dots that j reads, directly or through
 * values recomputed in their readers' kernels (G_MULTI in t or b): where
 * j is computed decides whether such a dot joins its users' kernel
 * (grouping.c merge_epilogues, computed_in), so their groups are asked
 * whether they merge (sim_group_merges). */
static void add_dots_above(const struct grouping *t, const struct grouping *b,
			   int j, struct delta_scratch *ds, int *t_ids,
			   int *n_t, int *b_ids, int *n_b)
{
	size_t n = (size_t)(t->n > 0 ? t->n : 1);
	int gen = ts_next_gen(&ds->up_gen, ds->up, NULL, n), sp = 0;
	ds->up[j] = gen;
	ds->up_stack[sp++] = j;
	while (sp > 0) {
		int x = ds->up_stack[--sp];
		for (int o = t->ooff[x]; o < t->ooff[x + 1]; o++) {
			int y = t->ops[o];
			if (y < 0 || ds->up[y] == gen)
				continue;
			ds->up[y] = gen;
			if (ir_op_class(t->c->instrs[y]->op) ==
			    IR_CLASS_CONTRACTION)
				add_holders(t, b, y, ds, t_ids, n_t, b_ids,
					    n_b);
			else if (t->grp[y] == G_MULTI || b->grp[y] == G_MULTI)
				ds->up_stack[sp++] = y;
		}
	}
}

enum ts_status sim_grouping_delta(struct grouping *t, const struct grouping *b,
				  const signed char *force, int at,
				  struct delta_scratch *ds, int *t_ids,
				  int *n_t, int *b_ids, int *n_b, bool *whole)
{
	TS_ASSERT(t->c == b->c && t->borrowed && ds->b == b);
	*whole = true;
	*n_t = *n_b = 0;
	/* the last trial's member lists gone, as a new grouping has none,
	 * and its decisions b's again */
	for (int q = 0; q < ds->n_coll; q++)
		t->m_start[ds->coll[q]] = t->m_len[ds->coll[q]] = 0;
	ds->n_coll = 0;
	t->pool_n = 0;
	undo_trial(t, ds);
	t->n_redecided = 0;
	/* b split a cyclic group: not followed */
	if (b->n_groups != b->n_decided)
		return TS_OK;
	t->force = force;
	int n_moved = 0;
	decide_from(t, b, at, ds, &n_moved);
	bool ok = true;
	/* the instructions whose group differs, and the groups of t and the
	 * representatives of b that hold one: no other group gains or loses
	 * a member (a group takes in only what it reaches through its
	 * members), an output (a member it owns is held by it alone, so its
	 * readers are the users outside it; a copy is never one;
	 * sim_group_output); a cycle between kernels through one of them
	 * is one through a group collected here, which sim_group_cyclic
	 * checks below, following the others with b's member lists; and
	 * the groups of the dots they read, whose output fusion after the
	 * merges their place decides (add_dots_above) */
	for (int q = 0; q < n_moved; q++) {
		add_holders(t, b, ds->moved[q], ds, t_ids, n_t, b_ids, n_b);
		add_dots_above(t, b, ds->moved[q], ds, t_ids, n_t, b_ids, n_b);
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
	/* nor one that output, update, loop or shared-input merging joins,
	 * or may join, with another (sim_group_merges) */
	for (int q = 0; follow && q < *n_b; q++)
		follow = !sim_group_merges(b, b_ids[q], ds->in, ds->stack);
	for (int q = 0; follow && q < *n_t; q++)
		follow = !sim_group_merges(t, t_ids[q], ds->in, ds->stack);
	for (int q = 0; ok && follow && q < *n_t; q++)
		follow = !sim_group_cyclic(t, t_ids[q], &ds->cy);
	*whole = !follow;
	return ok ? TS_OK : TS_ERR_NOMEM;
}
