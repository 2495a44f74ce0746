/*
 * gen_hlo.c: random valid HLO modules (gen_hlo.h says what they hold).
 * Each piece writes its parameters, its instructions in the entry (or in a
 * fused computation and a fusion instruction, in a compiled module) and
 * the computations it calls; the entry returns a tuple of the pieces'
 * results. Shapes are worked out here as XLA's shape inference would.
 */
#define _GNU_SOURCE /* open_memstream */
#include "gen_hlo.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- randomness (splitmix64: the same numbers on every platform) ---- */

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static int pick(struct rng *r, int n)
{
	return (int)(next(r) % (uint64_t)n);
}

static bool coin(struct rng *r, int pct)
{
	return pick(r, 100) < pct;
}

/* A dim: usually small or round, sometimes odd or huge. */
static int64_t dim(struct rng *r)
{
	static const int64_t d[] = {1,   2,    3,    5,     7,     8,
				    16,  31,   100,  127,   128,   129,
				    255, 256,  1000, 1024,  4097,  32000,
				    65536, 1 << 20, 1 << 22};
	return d[pick(r, (int)(sizeof d / sizeof *d))];
}

/* ---- shapes ---- */

enum ty { F32, BF16, F16, S32, S8, PRED };
static const char *const ty_name[] = {"f32", "bf16", "f16", "s32", "s8",
				      "pred"};
static const int ty_bytes[] = {4, 2, 2, 4, 1, 1};

#define MAXR 6

struct shape {
	enum ty t;
	int rank;
	int64_t d[MAXR];
	int m2m[MAXR]; /* minor_to_major */
	int tile;      /* index into the tile choices; -1: none written */
};

static double bytes_of(const struct shape *s)
{
	double b = ty_bytes[s->t];
	for (int i = 0; i < s->rank; i++)
		b *= (double)s->d[i];
	return b;
}

/* Halves the largest dim until the shape holds at most 2^cap bytes. */
static void cap_shape(struct shape *s, int cap)
{
	while (s->rank > 0 && bytes_of(s) > (double)((uint64_t)1 << cap)) {
		int big = 0;
		for (int i = 1; i < s->rank; i++)
			if (s->d[i] > s->d[big])
				big = i;
		if (s->d[big] == 1)
			break;
		s->d[big] = (s->d[big] + 1) / 2;
	}
}

/* v[0..n) in a random order (Fisher-Yates, last place first). */
static void shuffle(struct rng *r, int *v, int n)
{
	for (int i = n - 1; i > 0; i--) {
		int j = pick(r, i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* Default layout (row major), or a random dim order. */
static void layout(struct rng *r, struct shape *s, bool tiled)
{
	for (int i = 0; i < s->rank; i++)
		s->m2m[i] = s->rank - 1 - i;
	if (s->rank > 1 && coin(r, 30))
		shuffle(r, s->m2m, s->rank);
	s->tile = tiled && s->rank > 0 ? pick(r, 2) : -1;
}

static struct shape make(struct rng *r, enum ty t, int rank, bool tiled)
{
	struct shape s = {.t = t, .rank = rank};
	for (int i = 0; i < rank; i++)
		s.d[i] = dim(r);
	layout(r, &s, tiled);
	return s;
}

/* The TPU tiles of a layout, as XLA writes them (two choices each). */
static const char *tiles(const struct shape *s)
{
	static const char *const r2[3][2] = {
		{"T(8,128)", "T(2,128)"},
		{"T(8,128)(2,1)", "T(16,128)(2,1)"},
		{"T(8,128)(4,1)", "T(32,128)(4,1)"}};
	static const char *const r1[3][2] = {
		{"T(256)", "T(1024)"},
		{"T(1024)(128)(2,1)", "T(512)(128)(2,1)"},
		{"T(1024)(128)(4,1)", "T(512)(128)(4,1)"}};
	int w = ty_bytes[s->t] == 4 ? 0 : ty_bytes[s->t] == 2 ? 1 : 2;
	return s->rank >= 2 ? r2[w][s->tile] : r1[w][s->tile];
}

static void put_shape(FILE *f, const struct shape *s)
{
	fprintf(f, "%s[", ty_name[s->t]);
	for (int i = 0; i < s->rank; i++)
		fprintf(f, "%s%" PRId64, i ? "," : "", s->d[i]);
	fputc(']', f);
	if (s->rank == 0)
		return;
	fputc('{', f);
	for (int i = 0; i < s->rank; i++)
		fprintf(f, "%s%d", i ? "," : "", s->m2m[i]);
	if (s->tile >= 0)
		fprintf(f, ":%s", tiles(s));
	fputc('}', f);
}

static void put_ints(FILE *f, const int *v, int n)
{
	fputc('{', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", v[i]);
	fputc('}', f);
}

/* ---- a piece ---- */

struct piece {
	struct rng *r;
	int id;
	bool compiled;
	int cap;
	FILE *comps;   /* computations it calls */
	FILE *body;    /* its instructions in the fused computation or entry */
	FILE *entry;   /* its instructions in the entry */
	int n_params;  /* of the piece */
	struct shape param[8];
	int n_vals;    /* values named v<id>_<n> */
	struct shape result;
	char result_name[32];
};

/* A new value of shape s: "%v<id>_<n> = <shape> " written to the body;
 * its name in name. */
static void val(struct piece *p, const struct shape *s, char *name)
{
	sprintf(name, "%%v%d_%d", p->id, p->n_vals++);
	fprintf(p->body, "  %s = ", name);
	put_shape(p->body, s);
	fputc(' ', p->body);
}

/* A parameter of the piece: in the body, parameter(k) of the fused
 * computation or of the entry (numbered later). */
static void param(struct piece *p, const struct shape *s, char *name)
{
	p->param[p->n_params] = *s;
	sprintf(name, "%%p%d_%d", p->id, p->n_params);
	fprintf(p->body, "  %s = ", name);
	put_shape(p->body, s);
	fprintf(p->body, " parameter(@%d)\n", p->n_params++);
}

static void scalar_const(struct piece *p, enum ty t, const char *v,
			 char *name)
{
	struct shape s = {.t = t};
	val(p, &s, name);
	fprintf(p->body, "constant(%s)\n", v);
}

static enum ty float_ty(struct rng *r)
{
	static const enum ty t[] = {F32, F32, BF16, BF16, F16};
	return t[pick(r, 5)];
}

/* A same-dims shape in a fresh layout. */
static struct shape relayout(struct piece *p, const struct shape *s)
{
	struct shape o = *s;
	layout(p->r, &o, p->compiled);
	return o;
}

/* elementwise: a chain of unary and binary ops on x, a second operand
 * and a broadcast of a smaller one */
static void elementwise(struct piece *p)
{
	struct rng *r = p->r;
	struct shape s = make(r, float_ty(r), pick(r, 5), p->compiled);
	cap_shape(&s, p->cap);
	char x[32], y[32] = "", cur[32];
	param(p, &s, x);
	strcpy(cur, x);
	static const char *const un[] = {"negate", "exponential", "tanh",
					 "abs", "sqrt", "log", "sine"};
	static const char *const bin[] = {"add", "multiply", "subtract",
					  "divide", "maximum"};
	int n = 1 + pick(r, 6);
	for (int i = 0; i < n; i++) {
		char o[32];
		struct shape rs = coin(r, 20) ? relayout(p, &s) : s;
		if (coin(r, 50)) {
			val(p, &rs, o);
			fprintf(p->body, "%s(%s)\n", un[pick(r, 7)], cur);
		} else if (coin(r, 30) && s.rank > 0) {
			/* a broadcast of a smaller array along a dim */
			struct shape b = {.t = s.t, .rank = 1, .d = {s.d[0]}};
			layout(r, &b, p->compiled);
			char bp[32], bb[32];
			param(p, &b, bp);
			val(p, &rs, bb);
			fprintf(p->body, "broadcast(%s), dimensions={0}\n", bp);
			val(p, &rs, o);
			fprintf(p->body, "%s(%s, %s)\n", bin[pick(r, 5)], cur, bb);
		} else {
			if (!y[0] || coin(r, 30))
				param(p, &s, y);
			val(p, &rs, o);
			fprintf(p->body, "%s(%s, %s)\n", bin[pick(r, 5)], cur, y);
		}
		s = rs;
		strcpy(cur, o);
	}
	if (coin(r, 30)) {
		struct shape c = s;
		c.t = c.t == F32 ? BF16 : F32;
		char o[32];
		val(p, &c, o);
		fprintf(p->body, "convert(%s)\n", cur);
		s = c;
		strcpy(cur, o);
	}
	p->result = s;
	strcpy(p->result_name, cur);
}

/* transposes, reshapes that merge or split dims, copies to a new layout */
static void movement(struct piece *p)
{
	struct rng *r = p->r;
	struct shape s = make(r, float_ty(r), 2 + pick(r, 3), p->compiled);
	cap_shape(&s, p->cap);
	char cur[32];
	param(p, &s, cur);
	int n = 1 + pick(r, 4);
	for (int i = 0; i < n; i++) {
		struct shape o = s;
		char nm[32];
		int k = pick(r, 3);
		if (k == 0) { /* transpose */
			int perm[MAXR];
			for (int j = 0; j < s.rank; j++)
				perm[j] = j;
			shuffle(r, perm, s.rank);
			for (int j = 0; j < s.rank; j++)
				o.d[j] = s.d[perm[j]];
			layout(r, &o, p->compiled);
			val(p, &o, nm);
			fprintf(p->body, "transpose(%s), dimensions=", cur);
			put_ints(p->body, perm, s.rank);
			fputc('\n', p->body);
		} else if (k == 1 && s.rank >= 2) { /* merge two adjacent dims */
			int j = pick(r, s.rank - 1);
			o.rank = s.rank - 1;
			for (int q = 0, w = 0; q < s.rank; q++) {
				if (q == j + 1)
					continue;
				o.d[w++] = q == j ? s.d[j] * s.d[j + 1] : s.d[q];
			}
			layout(r, &o, p->compiled);
			val(p, &o, nm);
			fprintf(p->body, "reshape(%s)\n", cur);
		} else if (k == 1 && s.rank < MAXR) { /* split a dim */
			int j = pick(r, s.rank);
			int64_t a = s.d[j] % 2 == 0 ? 2 : 1;
			o.rank = s.rank + 1;
			for (int q = 0, w = 0; q < s.rank; q++) {
				if (q == j) {
					o.d[w++] = a;
					o.d[w++] = s.d[j] / a;
				} else {
					o.d[w++] = s.d[q];
				}
			}
			layout(r, &o, p->compiled);
			val(p, &o, nm);
			fprintf(p->body, "reshape(%s)\n", cur);
		} else { /* copy into another layout */
			o = relayout(p, &s);
			val(p, &o, nm);
			fprintf(p->body, "copy(%s)\n", cur);
		}
		s = o;
		strcpy(cur, nm);
	}
	p->result = s;
	strcpy(p->result_name, cur);
}

/* A dot with nb batch dims, M, N, K, the dims of each operand in a random
 * order; an lhs made by a transpose and a merging reshape (the prologue
 * XLA fuses into an output fusion) and an epilogue */
static void dot(struct piece *p)
{
	struct rng *r = p->r;
	int nb = pick(r, 3) == 0 ? 1 : 0;
	int64_t B = nb ? dim(r) % 64 + 1 : 1, M = dim(r), N = dim(r),
		K = dim(r);
	bool int8 = coin(r, 10);
	enum ty t = int8 ? S8 : coin(r, 70) ? BF16 : F32;
	/* keep each operand and the result within the cap */
	for (;;) {
		double e = (double)ty_bytes[t] * (double)B;
		double big = (double)((uint64_t)1 << p->cap);
		if ((e * M * K <= big && e * K * N <= big &&
		     4.0 * B * M * N <= big) ||
		    (B == 1 && M == 1 && N == 1 && K == 1))
			break;
		if (B > 1)
			B = (B + 1) / 2;
		else if (M >= N && M >= K)
			M = (M + 1) / 2;
		else if (N >= K)
			N = (N + 1) / 2;
		else
			K = (K + 1) / 2;
	}
	/* each operand's dims (batch, free, contracting) in a random order */
	struct shape l = {.t = t, .rank = 2 + nb}, rr = {.t = t, .rank = 2 + nb};
	int lord[3] = {1, 2, 0}, rord[3] = {1, 2, 0}; /* roles by position */
	for (int j = 1 + nb; j > 0; j--) {
		int q = pick(r, j + 1), tmp = lord[j];
		lord[j] = lord[q];
		lord[q] = tmp;
		q = pick(r, j + 1);
		tmp = rord[j];
		rord[j] = rord[q];
		rord[q] = tmp;
	}
	int lb = 0, lf = 0, lk = 0, rb = 0, rf = 0, rk = 0;
	for (int q = 0; q < 2 + nb; q++) {
		*(lord[q] == 0 ? &lb : lord[q] == 1 ? &lf : &lk) = q;
		*(rord[q] == 0 ? &rb : rord[q] == 1 ? &rf : &rk) = q;
	}
	if (nb) {
		l.d[lb] = B;
		rr.d[rb] = B;
	}
	l.d[lf] = M;
	l.d[lk] = K;
	rr.d[rf] = N;
	rr.d[rk] = K;
	layout(r, &l, p->compiled);
	layout(r, &rr, p->compiled);
	char a[32], w[32];
	bool prologue = !nb && lf == 0 && lk == 1 && M % 2 == 0 && M >= 4 &&
			coin(r, 50);
	if (prologue) {
		/* lhs [M, K] = reshape(transpose(p [M2, M1, K], {1,0,2})),
		 * M = M1 x M2: the merged dim's minor part is a major dim of
		 * the parameter */
		int64_t m1 = M >= 4096 ? 4096 : 2, m2 = M / m1;
		if (M % m1)
			m1 = 2, m2 = M / 2;
		struct shape p0 = {.t = t, .rank = 3, .d = {m1, m2, K}};
		layout(r, &p0, p->compiled);
		struct shape tr = {.t = t, .rank = 3, .d = {m2, m1, K}};
		layout(r, &tr, p->compiled);
		char pp[32], tt[32];
		param(p, &p0, pp);
		val(p, &tr, tt);
		fprintf(p->body, "transpose(%s), dimensions={1,0,2}\n", pp);
		val(p, &l, a);
		fprintf(p->body, "reshape(%s)\n", tt);
	} else {
		param(p, &l, a);
	}
	param(p, &rr, w);
	struct shape o = {.t = int8 ? S32 : t, .rank = 2 + nb};
	int q = 0;
	if (nb)
		o.d[q++] = B;
	o.d[q++] = M;
	o.d[q++] = N;
	layout(r, &o, p->compiled);
	char d[32];
	val(p, &o, d);
	fprintf(p->body, "dot(%s, %s), ", a, w);
	if (nb)
		fprintf(p->body, "lhs_batch_dims={%d}, rhs_batch_dims={%d}, ",
			lb, rb);
	fprintf(p->body, "lhs_contracting_dims={%d}, rhs_contracting_dims={%d}\n",
		lk, rk);
	if (!int8 && coin(r, 50)) { /* epilogue: + broadcast bias, then act */
		struct shape b = {.t = o.t, .rank = 1, .d = {N}};
		layout(r, &b, p->compiled);
		char bp[32], bb[32], s1[32];
		param(p, &b, bp);
		val(p, &o, bb);
		fprintf(p->body, "broadcast(%s), dimensions={%d}\n", bp, nb + 1);
		val(p, &o, s1);
		fprintf(p->body, "add(%s, %s)\n", d, bb);
		strcpy(d, s1);
		if (coin(r, 50)) {
			val(p, &o, s1);
			fprintf(p->body, "tanh(%s)\n", d);
			strcpy(d, s1);
		}
	}
	p->result = o;
	strcpy(p->result_name, d);
}

/* 1-D or 2-D convolution, NHWC or NCHW, strided, dilated, padded,
 * sometimes depthwise */
static void convolution(struct piece *p)
{
	struct rng *r = p->r;
	enum ty t = coin(r, 70) ? BF16 : F32;
	int ns = 1 + pick(r, 2);
	int64_t Nb = dim(r) % 256 + 1, C = dim(r) % 1024 + 1,
		O = dim(r) % 1024 + 1;
	int64_t in[2], k[2], st[2], pad[2], dil[2], out[2];
	bool depth = coin(r, 20);
	if (depth)
		O = C;
	double big = (double)((uint64_t)1 << p->cap);
	for (int s = 0; s < ns; s++) {
		in[s] = dim(r) % 2048 + 1;
		k[s] = 1 + pick(r, 7);
		st[s] = 1 + pick(r, 3);
		dil[s] = coin(r, 20) ? 2 << pick(r, 2) : 1;
		pad[s] = pick(r, 4);
	}
	for (;;) {
		double x = (double)ty_bytes[t] * Nb * C, y = 4.0 * Nb * O;
		for (int s = 0; s < ns; s++) {
			x *= (double)in[s];
			y *= (double)in[s];
		}
		if (x <= big && y <= big)
			break;
		if (Nb > 1)
			Nb = (Nb + 1) / 2;
		else if (in[0] > 1)
			in[0] = (in[0] + 1) / 2;
		else if (ns > 1 && in[1] > 1)
			in[1] = (in[1] + 1) / 2;
		else if (C > 1)
			C = (C + 1) / 2, O = depth ? C : O;
		else if (O > 1)
			O = (O + 1) / 2;
		else
			break;
	}
	for (int s = 0; s < ns; s++) {
		int64_t span = (k[s] - 1) * dil[s] + 1;
		if (in[s] + 2 * pad[s] < span)
			pad[s] = span; /* room for one window */
		out[s] = (in[s] + 2 * pad[s] - span) / st[s] + 1;
	}
	bool nchw = coin(r, 40);
	struct shape x = {.t = t, .rank = 2 + ns}, w = {.t = t, .rank = 2 + ns},
		     o = {.t = t, .rank = 2 + ns};
	/* lhs b01f / bf01; rhs 01io / oi01; out like lhs */
	int fb = 0, ff = nchw ? 1 : ns + 1, sp0 = nchw ? 2 : 1;
	x.d[fb] = Nb;
	x.d[ff] = C;
	o.d[fb] = Nb;
	o.d[ff] = O;
	for (int s = 0; s < ns; s++) {
		x.d[sp0 + s] = in[s];
		o.d[sp0 + s] = out[s];
	}
	int64_t wi = depth ? 1 : C;
	if (nchw) {
		w.d[0] = O;
		w.d[1] = wi;
		for (int s = 0; s < ns; s++)
			w.d[2 + s] = k[s];
	} else {
		for (int s = 0; s < ns; s++)
			w.d[s] = k[s];
		w.d[ns] = wi;
		w.d[ns + 1] = O;
	}
	layout(r, &x, p->compiled);
	layout(r, &w, p->compiled);
	layout(r, &o, p->compiled);
	char xa[32], wa[32], c[32];
	param(p, &x, xa);
	param(p, &w, wa);
	val(p, &o, c);
	fprintf(p->body, "convolution(%s, %s), window={size=", xa, wa);
	for (int s = 0; s < ns; s++)
		fprintf(p->body, "%s%" PRId64, s ? "x" : "", k[s]);
	fprintf(p->body, " stride=");
	for (int s = 0; s < ns; s++)
		fprintf(p->body, "%s%" PRId64, s ? "x" : "", st[s]);
	fprintf(p->body, " pad=");
	for (int s = 0; s < ns; s++)
		fprintf(p->body, "%s%" PRId64 "_%" PRId64, s ? "x" : "", pad[s],
			pad[s]);
	fprintf(p->body, " rhs_dilate=");
	for (int s = 0; s < ns; s++)
		fprintf(p->body, "%s%" PRId64, s ? "x" : "", dil[s]);
	fprintf(p->body, "}, dim_labels=%s",
		nchw ? (ns == 1 ? "bf0_oi0->bf0" : "bf01_oi01->bf01")
		     : (ns == 1 ? "b0f_0io->b0f" : "b01f_01io->b01f"));
	if (depth && C > 1)
		fprintf(p->body, ", feature_group_count=%" PRId64, C);
	fputc('\n', p->body);
	p->result = o;
	strcpy(p->result_name, c);
}

/* The reducers, one set per module. */
static void reducers(FILE *f)
{
	static const enum ty ts[] = {F32, BF16, F16, S32};
	for (int i = 0; i < 4; i++) {
		const char *n = ty_name[ts[i]];
		fprintf(f,
			"%%add_%s (a: %s[], b: %s[]) -> %s[] {\n"
			"  %%a = %s[] parameter(0)\n  %%b = %s[] parameter(1)\n"
			"  ROOT %%s = %s[] add(%%a, %%b)\n}\n\n",
			n, n, n, n, n, n, n);
	}
	for (int i = 0; i < 4; i++) {
		const char *n = ty_name[ts[i]];
		fprintf(f,
			"%%max_%s (a: %s[], b: %s[]) -> %s[] {\n"
			"  %%a = %s[] parameter(0)\n  %%b = %s[] parameter(1)\n"
			"  ROOT %%m = %s[] maximum(%%a, %%b)\n}\n\n"
			"%%ge_%s (a: %s[], b: %s[]) -> pred[] {\n"
			"  %%a = %s[] parameter(0)\n  %%b = %s[] parameter(1)\n"
			"  ROOT %%c = pred[] compare(%%a, %%b), direction=GE\n}\n\n",
			n, n, n, n, n, n, n, n, n, n, n, n);
	}
	/* an argmax: the larger value, on a tie the smaller index */
	fprintf(f, "%%amax (a0: f32[], a1: f32[], b0: f32[], b1: f32[]) -> "
		   "(f32[], f32[]) {\n"
		   "  %%a0 = f32[] parameter(0)\n  %%a1 = f32[] parameter(1)\n"
		   "  %%b0 = f32[] parameter(2)\n  %%b1 = f32[] parameter(3)\n"
		   "  %%gt = pred[] compare(%%a0, %%b0), direction=GT\n"
		   "  %%eq = pred[] compare(%%a0, %%b0), direction=EQ\n"
		   "  %%lt = pred[] compare(%%a1, %%b1), direction=LT\n"
		   "  %%tie = pred[] and(%%eq, %%lt)\n"
		   "  %%keep = pred[] or(%%gt, %%tie)\n"
		   "  %%v = f32[] select(%%keep, %%a0, %%b0)\n"
		   "  %%i = f32[] select(%%keep, %%a1, %%b1)\n"
		   "  ROOT %%t = (f32[], f32[]) tuple(%%v, %%i)\n}\n\n");
	fprintf(f, "%%pair (a0: f32[], a1: f32[], b0: f32[], b1: f32[]) -> "
		   "(f32[], f32[]) {\n"
		   "  %%a0 = f32[] parameter(0)\n  %%a1 = f32[] parameter(1)\n"
		   "  %%b0 = f32[] parameter(2)\n  %%b1 = f32[] parameter(3)\n"
		   "  %%s0 = f32[] add(%%a0, %%b0)\n"
		   "  %%s1 = f32[] maximum(%%a1, %%b1)\n"
		   "  ROOT %%t = (f32[], f32[]) tuple(%%s0, %%s1)\n}\n\n");
}

/* reduce over some dims; sometimes two inputs at once (a tuple result) */
static void reduce(struct piece *p)
{
	struct rng *r = p->r;
	bool pair = coin(r, 30);
	enum ty t = pair ? F32 : float_ty(r);
	struct shape s = make(r, t, 1 + pick(r, 4), p->compiled);
	cap_shape(&s, p->cap);
	int dims[MAXR], nd = 0;
	struct shape o = {.t = t};
	for (int i = 0; i < s.rank; i++) {
		if (coin(r, 50) || (i == s.rank - 1 && nd == 0))
			dims[nd++] = i;
		else
			o.d[o.rank++] = s.d[i];
	}
	layout(r, &o, p->compiled);
	char x[32], y[32], c0[32], c1[32], red[32];
	param(p, &s, x);
	if (coin(r, 40)) { /* a producer fused into the reduce */
		char e[32];
		val(p, &s, e);
		fprintf(p->body, "multiply(%s, %s)\n", x, x);
		strcpy(x, e);
	}
	scalar_const(p, t, "0", c0);
	if (!pair) {
		val(p, &o, red);
		fprintf(p->body, "reduce(%s, %s), dimensions=", x, c0);
		put_ints(p->body, dims, nd);
		fprintf(p->body, ", to_apply=%%add_%s\n", ty_name[t]);
		p->result = o;
		strcpy(p->result_name, red);
		return;
	}
	param(p, &s, y);
	scalar_const(p, t, "-inf", c1);
	struct shape o2 = relayout(p, &o);
	sprintf(red, "%%v%d_%d", p->id, p->n_vals++);
	fprintf(p->body, "  %s = (", red);
	put_shape(p->body, &o);
	fputs(", ", p->body);
	put_shape(p->body, &o2);
	fprintf(p->body, ") reduce(%s, %s, %s, %s), dimensions=", x, y, c0, c1);
	put_ints(p->body, dims, nd);
	fprintf(p->body, ", to_apply=%%%s\n", coin(r, 50) ? "amax" : "pair");
	char g[32];
	val(p, &o2, g);
	fprintf(p->body, "get-tuple-element(%s), index=1\n", red);
	p->result = o2;
	strcpy(p->result_name, g);
}

/* an embedding gather from a table, or a scatter-add into it */
static void gather_scatter(struct piece *p)
{
	struct rng *r = p->r;
	enum ty t = float_ty(r);
	if (t == F16)
		t = F32;
	int64_t N = dim(r);
	struct shape tab = {.t = t, .rank = 2, .d = {dim(r), dim(r)}};
	cap_shape(&tab, p->cap);
	int64_t D = tab.d[1];
	while (N > 1 && ((double)N * (double)D * ty_bytes[t] >
				 (double)((uint64_t)1 << p->cap) ||
			 N > (1 << 28)))
		N = (N + 1) / 2;
	struct shape idx = {.t = S32, .rank = 2, .d = {N, 1}};
	struct shape up = {.t = t, .rank = 2, .d = {N, D}};
	layout(r, &tab, p->compiled);
	layout(r, &idx, p->compiled);
	layout(r, &up, p->compiled);
	char ta[32], ia[32], o[32];
	param(p, &tab, ta);
	param(p, &idx, ia);
	if (coin(r, 50)) {
		val(p, &up, o);
		fprintf(p->body,
			"gather(%s, %s), offset_dims={1}, collapsed_slice_dims={0}, "
			"start_index_map={0}, index_vector_dim=1, "
			"slice_sizes={1,%" PRId64 "}\n",
			ta, ia, D);
		p->result = up;
	} else {
		char ua[32];
		param(p, &up, ua);
		struct shape res = tab;
		val(p, &res, o);
		fprintf(p->body,
			"scatter(%s, %s, %s), update_window_dims={1}, "
			"inserted_window_dims={0}, "
			"scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
			"to_apply=%%add_%s\n",
			ta, ia, ua, ty_name[t]);
		p->result = res;
	}
	strcpy(p->result_name, o);
}

/* a dynamic slice, or an in-place update of a window */
static void dynamic(struct piece *p)
{
	struct rng *r = p->r;
	struct shape s = make(r, float_ty(r), 1 + pick(r, 3), p->compiled);
	cap_shape(&s, p->cap);
	struct shape w = s;
	for (int i = 0; i < s.rank; i++)
		w.d[i] = s.d[i] > 1 ? 1 + (int64_t)(next(r) % (uint64_t)s.d[i]) : 1;
	layout(r, &w, p->compiled);
	char x[32], ids[MAXR][32], o[32];
	param(p, &s, x);
	for (int i = 0; i < s.rank; i++) {
		struct shape i32 = {.t = S32};
		param(p, &i32, ids[i]);
	}
	bool update = coin(r, 50);
	char u[32];
	if (update)
		param(p, &w, u);
	val(p, update ? &s : &w, o);
	fprintf(p->body, "%s(%s", update ? "dynamic-update-slice" : "dynamic-slice",
		x);
	if (update)
		fprintf(p->body, ", %s", u);
	for (int i = 0; i < s.rank; i++)
		fprintf(p->body, ", %s", ids[i]);
	fputc(')', p->body);
	if (!update) {
		fprintf(p->body, ", dynamic_slice_sizes={");
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s%" PRId64, i ? "," : "", w.d[i]);
		fputc('}', p->body);
	}
	fputc('\n', p->body);
	p->result = update ? s : w;
	strcpy(p->result_name, o);
}

/* concatenate, pad, reverse, slice, a pooling window or its gradient */
static void data(struct piece *p)
{
	struct rng *r = p->r;
	struct shape s = make(r, float_ty(r), 1 + pick(r, 4), p->compiled);
	cap_shape(&s, p->cap - 1);
	char x[32], o[32];
	param(p, &s, x);
	struct shape res = s;
	int k = pick(r, 6), d0 = pick(r, s.rank);
	if (k == 0) {
		char y[32];
		param(p, &s, y);
		res.d[d0] = 2 * s.d[d0];
		layout(r, &res, p->compiled);
		val(p, &res, o);
		fprintf(p->body, "concatenate(%s, %s), dimensions={%d}\n", x, y,
			d0);
	} else if (k == 1) {
		char z[32];
		scalar_const(p, s.t, "0", z);
		res.d[d0] = s.d[d0] + 3;
		layout(r, &res, p->compiled);
		val(p, &res, o);
		fprintf(p->body, "pad(%s, %s), padding=", x, z);
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s%s", i ? "x" : "",
				i == d0 ? "1_2" : "0_0");
		fputc('\n', p->body);
	} else if (k == 2) {
		val(p, &res, o);
		fprintf(p->body, "reverse(%s), dimensions={%d}\n", x, d0);
	} else if (k == 3) {
		int64_t lo = s.d[d0] / 3, hi = s.d[d0] - s.d[d0] / 4;
		if (hi <= lo)
			lo = 0, hi = s.d[d0];
		res.d[d0] = hi - lo;
		layout(r, &res, p->compiled);
		val(p, &res, o);
		fprintf(p->body, "slice(%s), slice={", x);
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s[%" PRId64 ":%" PRId64 "]", i ? ", " : "",
				i == d0 ? lo : 0, i == d0 ? hi : s.d[i]);
		fprintf(p->body, "}\n");
	} else {
		/* pooling (a windowed reduce, max or sum) over one or two
		 * dims, windows of 2 to 15, stride 1 or 2, padded "same";
		 * or its gradient, a select-and-scatter of a source shaped
		 * as the pooled result */
		static const int64_t ws[] = {2, 3, 5, 7, 15};
		int64_t w[MAXR], st[MAXR], pad[MAXR];
		int d1 = s.rank > 1 && coin(r, 50) ? (d0 + 1) % s.rank : d0;
		for (int i = 0; i < s.rank; i++) {
			bool on = i == d0 || i == d1;
			w[i] = on ? ws[pick(r, 5)] : 1;
			st[i] = on ? 1 + pick(r, 2) : 1;
			pad[i] = (w[i] - 1) / 2;
			if (s.d[i] + 2 * pad[i] < w[i])
				w[i] = s.d[i] + 2 * pad[i];
			res.d[i] = (s.d[i] + 2 * pad[i] - w[i]) / st[i] + 1;
		}
		layout(r, &res, p->compiled);
		bool grad = k == 5 && !p->compiled;
		char z[32], src[32];
		scalar_const(p, s.t, grad ? "0" : "-inf", z);
		if (grad)
			param(p, &res, src);
		struct shape out = grad ? s : res;
		if (grad)
			layout(r, &out, false);
		val(p, &out, o);
		if (grad)
			fprintf(p->body, "select-and-scatter(%s, %s, %s), window={size=",
				x, src, z);
		else
			fprintf(p->body, "reduce-window(%s, %s), window={size=", x, z);
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s%" PRId64, i ? "x" : "", w[i]);
		fprintf(p->body, " stride=");
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s%" PRId64, i ? "x" : "", st[i]);
		fprintf(p->body, " pad=");
		for (int i = 0; i < s.rank; i++)
			fprintf(p->body, "%s%" PRId64 "_%" PRId64, i ? "x" : "",
				pad[i], pad[i]);
		if (grad)
			fprintf(p->body, "}, select=%%ge_%s, scatter=%%add_%s\n",
				ty_name[s.t], ty_name[s.t]);
		else
			fprintf(p->body, "}, to_apply=%%%s_%s\n",
				coin(r, 50) ? "max" : "add", ty_name[s.t]);
		res = out;
	}
	p->result = res;
	strcpy(p->result_name, o);
}

/* an all-reduce, all-gather or reduce-scatter over replica groups */
static void collective(struct piece *p)
{
	struct rng *r = p->r;
	enum ty t = coin(r, 50) ? F32 : BF16;
	struct shape s = make(r, t, 1 + pick(r, 3), p->compiled);
	s.d[0] = 4 * (s.d[0] > 1 ? s.d[0] : 1);
	cap_shape(&s, p->cap - 2);
	if (s.d[0] % 4)
		s.d[0] = 4;
	bool four = coin(r, 50);
	const char *groups = four ? "{{0,1,2,3}}" : "{{0,1},{2,3}}";
	int g = four ? 4 : 2;
	char x[32], o[32];
	param(p, &s, x);
	int k = pick(r, 3);
	struct shape res = s;
	if (k == 1)
		res.d[0] = s.d[0] * g;
	if (k == 2)
		res.d[0] = s.d[0] / g;
	val(p, &res, o);
	if (k == 0)
		fprintf(p->body, "all-reduce(%s), replica_groups=%s, "
				 "to_apply=%%add_%s\n", x, groups, ty_name[t]);
	else if (k == 1)
		fprintf(p->body, "all-gather(%s), replica_groups=%s, "
				 "dimensions={0}\n", x, groups);
	else
		fprintf(p->body, "reduce-scatter(%s), replica_groups=%s, "
				 "dimensions={0}, to_apply=%%add_%s\n", x, groups,
			ty_name[t]);
	p->result = res;
	strcpy(p->result_name, o);
}

/* a counted loop whose body squares its state */
static void loop(struct piece *p)
{
	struct rng *r = p->r;
	struct shape s = make(r, F32, 1 + pick(r, 3), false);
	cap_shape(&s, p->cap);
	int trips = 1 + pick(r, 1000);
	int id = p->id;
	FILE *c = p->comps;
	fprintf(c, "%%cond%d (s: (s32[], ", id);
	put_shape(c, &s);
	fprintf(c, ")) -> pred[] {\n  %%s = (s32[], ");
	put_shape(c, &s);
	fprintf(c, ") parameter(0)\n  %%i = s32[] get-tuple-element(%%s), "
		   "index=0\n  %%n = s32[] constant(%d)\n  ROOT %%lt = pred[] "
		   "compare(%%i, %%n), direction=LT\n}\n\n", trips);
	fprintf(c, "%%body%d (s: (s32[], ", id);
	put_shape(c, &s);
	fprintf(c, ")) -> (s32[], ");
	put_shape(c, &s);
	fprintf(c, ") {\n  %%s = (s32[], ");
	put_shape(c, &s);
	fprintf(c, ") parameter(0)\n  %%i = s32[] get-tuple-element(%%s), "
		   "index=0\n  %%v = ");
	put_shape(c, &s);
	fprintf(c, " get-tuple-element(%%s), index=1\n  %%one = s32[] "
		   "constant(1)\n  %%i1 = s32[] add(%%i, %%one)\n  %%v1 = ");
	put_shape(c, &s);
	fprintf(c, " multiply(%%v, %%v)\n  ROOT %%r = (s32[], ");
	put_shape(c, &s);
	fprintf(c, ") tuple(%%i1, %%v1)\n}\n\n");
	char x[32], z[32], t0[32], w[32], o[32];
	param(p, &s, x);
	scalar_const(p, S32, "0", z);
	sprintf(t0, "%%v%d_%d", id, p->n_vals++);
	fprintf(p->body, "  %s = (s32[], ", t0);
	put_shape(p->body, &s);
	fprintf(p->body, ") tuple(%s, %s)\n", z, x);
	sprintf(w, "%%v%d_%d", id, p->n_vals++);
	fprintf(p->body, "  %s = (s32[], ", w);
	put_shape(p->body, &s);
	fprintf(p->body, ") while(%s), condition=%%cond%d, body=%%body%d\n", t0,
		id, id);
	val(p, &s, o);
	fprintf(p->body, "get-tuple-element(%s), index=1\n", w);
	p->result = s;
	strcpy(p->result_name, o);
}

/* ---- a module ---- */

enum kind { ELEMENTWISE, MOVEMENT, DOT, CONVOLUTION, REDUCE, GATHER_SCATTER,
	    DYNAMIC, DATA, COLLECTIVE, LOOP, N_KINDS };

/* Fusion kinds: loops and data movement kLoop, reduces kInput, dots and
 * convolutions kOutput; collectives and loops stay top-level. */
static const char *const fusion_kind[N_KINDS] = {
	"kLoop", "kLoop", "kOutput", "kOutput", "kInput",
	"kLoop", "kLoop", "kLoop",  NULL,      NULL};

/* Replaces the "@k" parameter numbers of text with base + k. */
static void put_numbered(FILE *f, const char *text, int base)
{
	for (const char *s = text; *s; s++) {
		if (*s == '@') {
			int k = (int)strtol(s + 1, (char **)&s, 10);
			fprintf(f, "%d", base + k);
			s--;
		} else {
			fputc(*s, f);
		}
	}
}

int gen_hlo_module(uint64_t seed, int only, int cap_log2, char **text,
		   size_t *len)
{
	struct rng top = {seed};
	int n = 1 + pick(&top, GEN_MAX_PIECES);
	bool compiled = coin(&top, 50);
	char *cbuf = NULL, *ebuf = NULL;
	size_t clen = 0, elen = 0;
	FILE *comps = open_memstream(&cbuf, &clen);
	FILE *entry = open_memstream(&ebuf, &elen);
	reducers(comps);
	struct shape params[8 * GEN_MAX_PIECES], results[GEN_MAX_PIECES];
	char names[GEN_MAX_PIECES][32];
	int n_params = 0, n_res = 0;
	for (int i = 0; i < n; i++) {
		struct rng r = {seed ^ (0x5851f42d4c957f2du * (uint64_t)(i + 1))};
		enum kind k = (enum kind)pick(&r, N_KINDS);
		int cap = pick(&r, cap_log2 + 1);
		if (only >= 0 && i != only)
			continue;
		char *bbuf = NULL;
		size_t blen = 0;
		struct piece p = {.r = &r, .id = i, .compiled = compiled,
				  .cap = cap < 4 ? 4 : cap, .comps = comps};
		p.body = open_memstream(&bbuf, &blen);
		switch (k) {
		case ELEMENTWISE: elementwise(&p); break;
		case MOVEMENT: movement(&p); break;
		case DOT: dot(&p); break;
		case CONVOLUTION: convolution(&p); break;
		case REDUCE: reduce(&p); break;
		case GATHER_SCATTER: gather_scatter(&p); break;
		case DYNAMIC: dynamic(&p); break;
		case DATA: data(&p); break;
		case COLLECTIVE: collective(&p); break;
		default: loop(&p); break;
		}
		fclose(p.body);
		if (compiled && fusion_kind[k]) {
			/* the body as a fused computation; the entry calls it */
			fprintf(comps, "%%fused%d (", i);
			for (int j = 0; j < p.n_params; j++) {
				fprintf(comps, "%sp%d_%d: ", j ? ", " : "", i, j);
				put_shape(comps, &p.param[j]);
			}
			fprintf(comps, ") -> ");
			put_shape(comps, &p.result);
			fprintf(comps, " {\n");
			/* the result's line is the root */
			char def[48];
			sprintf(def, "  %s = ", p.result_name);
			char *line = strstr(bbuf, def);
			*line = 0;
			put_numbered(comps, bbuf, 0);
			fputs("  ROOT", comps);
			put_numbered(comps, line + 1, 0);
			fprintf(comps, "}\n\n");
			for (int j = 0; j < p.n_params; j++) {
				fprintf(entry, "  %%e%d_%d = ", i, j);
				put_shape(entry, &p.param[j]);
				fprintf(entry, " parameter(%d)\n", n_params + j);
			}
			fprintf(entry, "  %%f%d = ", i);
			put_shape(entry, &p.result);
			fprintf(entry, " fusion(");
			for (int j = 0; j < p.n_params; j++)
				fprintf(entry, "%s%%e%d_%d", j ? ", " : "", i, j);
			fprintf(entry, "), kind=%s, calls=%%fused%d\n",
				fusion_kind[k], i);
			sprintf(names[n_res], "%%f%d", i);
		} else {
			put_numbered(entry, bbuf, n_params);
			strcpy(names[n_res], p.result_name);
		}
		for (int j = 0; j < p.n_params; j++)
			params[n_params + j] = p.param[j];
		n_params += p.n_params;
		results[n_res++] = p.result;
		free(bbuf);
	}
	fclose(entry);
	fclose(comps);
	FILE *f = open_memstream(text, len);
	fprintf(f, "HloModule gen_%016" PRIx64 "%s\n\n%s", seed,
		compiled ? ", is_scheduled=true" : "", cbuf);
	fprintf(f, "ENTRY %%main (");
	for (int j = 0; j < n_params; j++) {
		fprintf(f, "%sa%d: ", j ? ", " : "", j);
		put_shape(f, &params[j]);
	}
	fprintf(f, ") -> (");
	for (int j = 0; j < n_res; j++) {
		fprintf(f, "%s", j ? ", " : "");
		put_shape(f, &results[j]);
	}
	fprintf(f, ") {\n%s  ROOT %%out = (", ebuf);
	for (int j = 0; j < n_res; j++) {
		fprintf(f, "%s", j ? ", " : "");
		put_shape(f, &results[j]);
	}
	fprintf(f, ") tuple(");
	for (int j = 0; j < n_res; j++)
		fprintf(f, "%s%s", j ? ", " : "", names[j]);
	fprintf(f, ")\n}\n");
	fclose(f);
	free(cbuf);
	free(ebuf);
	return n;
}

/* ---- a layer's dataflow: values shared between kernels ---- */

/* One value of gen_hlo_dag: an f32[R,C] matrix or an f32[R] vector, and
 * whether an instruction reads it yet. */
struct dag_value {
	bool vector, read;
};

static void dag_shape(FILE *f, int64_t rows, int64_t cols, bool vector)
{
	if (vector)
		fprintf(f, "f32[%" PRId64 "]", rows);
	else
		fprintf(f, "f32[%" PRId64 ",%" PRId64 "]", rows, cols);
}

/* An operand of the kind asked for: one of the last few values mostly
 * (chains), an older one sometimes (values read far apart); -1: none. */
static int dag_pick(struct rng *r, const struct dag_value *v, int n,
		    bool vector)
{
	int back = coin(r, 70) ? pick(r, 3) : pick(r, n);
	for (int i = n - 1 - (back < n ? back : n - 1); i >= 0; i--)
		if (v[i].vector == vector)
			return i;
	for (int i = n - 1; i >= 0; i--)
		if (v[i].vector == vector)
			return i;
	return -1;
}

/* The results' shapes (types) or names: every value nothing reads. */
static void dag_results(FILE *f, const struct dag_value *v, int n,
			int64_t rows, int64_t cols, bool names)
{
	int k = 0;
	for (int i = 3; i < n; i++) {
		if (v[i].read)
			continue;
		fputs(k++ ? ", " : "", f);
		if (names)
			fprintf(f, "%%v%d", i);
		else
			dag_shape(f, rows, cols, v[i].vector);
	}
}

/* gen_hlo_dag's ops, drawn evenly (binary ones twice as often) */
enum dag_kind {
	DAG_UNARY,        /* an elementwise op of one value */
	DAG_BINARY,       /* of two values of one kind */
	DAG_BINARY_TOO,
	DAG_BCAST_BINARY, /* of a matrix and a vector broadcast over its rows */
	DAG_ROW_REDUCE,   /* a row's sum or max */
	DAG_MATMUL,       /* by the weight */
	DAG_SELECT,       /* the larger of two matrices */
	DAG_REVERSE,      /* each row reversed */
	DAG_UPDATE,       /* half of another matrix's columns written in */
	DAG_WINDOW,       /* a sliding window of 3 along the row */
	DAG_BF16,         /* a round trip through bf16 */
	DAG_CUSTOM,       /* XLA's kCustom gather of rows, or scatter-add of
	                     another matrix's rows into one in place */
	DAG_KINDS
};

int gen_hlo_dag(uint64_t seed, char **text, size_t *len)
{
	static const int64_t rows[] = {8, 128, 256}, cols[] = {128, 512, 1024};
	static const char *const un[] = {"negate", "exponential", "tanh", "abs",
					 "copy"};
	static const char *const bin[] = {"add", "multiply", "subtract",
					  "divide", "maximum"};
	struct rng r = {seed ^ 0x646167u};
	int64_t R = rows[pick(&r, 3)], C = cols[pick(&r, 3)];
	int n_ops = 12 + pick(&r, GEN_DAG_MAX_OPS - 11);
	struct dag_value v[3 + GEN_DAG_MAX_OPS] = {
		{false, false}, {false, false}, {true, false}};
	int n = 3; /* parameters v0, v1 (matrices) and v2 (a vector) */
	char *bbuf = NULL, *cbuf = NULL;
	size_t blen = 0, clen = 0;
	FILE *b = open_memstream(&bbuf, &blen);
	FILE *cf = open_memstream(&cbuf, &clen); /* the kCustom fusions'
						    computations, one each */
	for (int k = 0; k < n_ops; k++, n++) {
		enum dag_kind kind = (enum dag_kind)pick(&r, DAG_KINDS);
		bool binary = kind == DAG_BINARY || kind == DAG_BINARY_TOO;
		bool vec = (kind == DAG_UNARY || binary) && coin(&r, 25);
		int a = dag_pick(&r, v, n, vec), c = -1;
		if (kind >= DAG_BCAST_BINARY)
			vec = kind == DAG_ROW_REDUCE;
		bool scatter = kind == DAG_CUSTOM && coin(&r, 50);
		if (binary || kind == DAG_SELECT || kind == DAG_UPDATE ||
		    scatter)
			c = dag_pick(&r, v, n, vec);
		/* what the op reads besides values: %bN, %pN, %sN, %hN */
		if (kind == DAG_BCAST_BINARY) {
			c = dag_pick(&r, v, n, true);
			fprintf(b, "  %%b%d = ", n);
			dag_shape(b, R, C, false);
			fprintf(b, " broadcast(%%v%d), dimensions={0}\n", c);
		} else if (kind == DAG_SELECT) {
			fprintf(b, "  %%p%d = pred[%" PRId64 ",%" PRId64
				   "] compare(%%v%d, %%v%d), direction=GT\n",
				n, R, C, a, c);
		} else if (kind == DAG_UPDATE) {
			fprintf(b, "  %%s%d = f32[%" PRId64 ",%" PRId64
				   "] slice(%%v%d), slice={[0:%" PRId64 "], [0:%"
				   PRId64 "]}\n",
				n, R, C / 2, c, R, C / 2);
		} else if (kind == DAG_BF16) {
			fprintf(b, "  %%h%d = bf16[%" PRId64 ",%" PRId64
				   "] convert(%%v%d)\n",
				n, R, C, a);
		} else if (kind == DAG_CUSTOM) { /* row k takes row k */
			fprintf(b, "  %%x%d = s32[%" PRId64 ",1]{1,0} iota(), "
				   "iota_dimension=0\n",
				n, R);
			fprintf(cf, "%%c%d (t: f32[%" PRId64 ",%" PRId64
				    "], i: s32[%" PRId64 ",1]",
				n, R, C, R);
			if (scatter)
				fprintf(cf, ", u: f32[%" PRId64 ",%" PRId64 "]",
					R, C);
			fprintf(cf, ") -> f32[%" PRId64 ",%" PRId64 "] {\n"
				    "  %%t = f32[%" PRId64 ",%" PRId64
				    "]{1,0} parameter(0)\n"
				    "  %%i = s32[%" PRId64 ",1]{1,0} parameter(1)\n",
				R, C, R, C, R);
			if (scatter)
				fprintf(cf, "  %%u = f32[%" PRId64 ",%" PRId64
					    "]{1,0} parameter(2)\n"
					    "  ROOT %%s = f32[%" PRId64 ",%" PRId64
					    "]{1,0} scatter(%%t, %%i, %%u), "
					    "update_window_dims={1}, "
					    "inserted_window_dims={0}, "
					    "scatter_dims_to_operand_dims={0}, "
					    "index_vector_dim=1, to_apply=%%sum\n}\n\n",
					R, C, R, C);
			else
				fprintf(cf, "  ROOT %%g = f32[%" PRId64 ",%" PRId64
					    "]{1,0} gather(%%t, %%i), "
					    "offset_dims={1}, "
					    "collapsed_slice_dims={0}, "
					    "start_index_map={0}, "
					    "index_vector_dim=1, "
					    "slice_sizes={1,%" PRId64 "}\n}\n\n",
					R, C, C);
		}
		fprintf(b, "  %%v%d = ", n);
		dag_shape(b, R, C, vec);
		fputs(vec ? "{0}" : "{1,0}", b); /* placeable in VMEM */
		switch (kind) {
		case DAG_UNARY:
			fprintf(b, " %s(%%v%d)\n", un[pick(&r, 5)], a);
			break;
		case DAG_BINARY:
		case DAG_BINARY_TOO:
			fprintf(b, " %s(%%v%d, %%v%d)\n", bin[pick(&r, 5)], a, c);
			break;
		case DAG_BCAST_BINARY:
			fprintf(b, " %s(%%v%d, %%b%d)\n", bin[pick(&r, 5)], a, n);
			break;
		case DAG_ROW_REDUCE:
			fprintf(b, " reduce(%%v%d, %%z), dimensions={1}, "
				   "to_apply=%%%s\n",
				a, coin(&r, 50) ? "sum" : "max");
			break;
		case DAG_MATMUL:
			fprintf(b, " dot(%%v%d, %%w), lhs_contracting_dims={1}, "
				   "rhs_contracting_dims={0}\n",
				a);
			break;
		case DAG_SELECT: /* the larger of two */
			fprintf(b, " select(%%p%d, %%v%d, %%v%d)\n", n, a, c);
			break;
		case DAG_REVERSE:
			fprintf(b, " reverse(%%v%d), dimensions={1}\n", a);
			break;
		case DAG_UPDATE: /* half of c's columns into a, in place */
			fprintf(b, " dynamic-update-slice(%%v%d, %%s%d, %%i0, "
				   "%%i1)\n",
				a, n);
			break;
		case DAG_WINDOW:
			fprintf(b, " reduce-window(%%v%d, %%z), window={size=1x3 "
				   "pad=0_0x1_1}, to_apply=%%%s\n",
				a, coin(&r, 50) ? "sum" : "max");
			break;
		case DAG_BF16:
			fprintf(b, " convert(%%h%d)\n", n);
			break;
		default: /* DAG_CUSTOM */
			if (scatter)
				fprintf(b, " fusion(%%v%d, %%x%d, %%v%d), "
					   "kind=kCustom, calls=%%c%d\n",
					a, n, c, n);
			else
				fprintf(b, " fusion(%%v%d, %%x%d), kind=kCustom, "
					   "calls=%%c%d\n",
					a, n, n);
			break;
		}
		v[a].read = true;
		if (c >= 0)
			v[c].read = true;
		v[n] = (struct dag_value){vec, false};
	}
	fclose(b);
	fclose(cf);
	FILE *f = open_memstream(text, len);
	fprintf(f, "HloModule dag_%016" PRIx64 "\n\n", seed);
	for (int m = 0; m < 2; m++)
		fprintf(f, "%%%s (x: f32[], y: f32[]) -> f32[] {\n"
			   "  %%x = f32[] parameter(0)\n"
			   "  %%y = f32[] parameter(1)\n"
			   "  ROOT %%r = f32[] %s(%%x, %%y)\n}\n\n",
			m ? "max" : "sum", m ? "maximum" : "add");
	fputs(cbuf, f);
	free(cbuf);
	fprintf(f, "ENTRY %%main (v0: ");
	dag_shape(f, R, C, false);
	fprintf(f, "{1,0}, v1: ");
	dag_shape(f, R, C, false);
	fprintf(f, "{1,0}, v2: ");
	dag_shape(f, R, C, true);
	fprintf(f, "{0}, w: f32[%" PRId64 ",%" PRId64 "]{1,0}) -> (", C, C);
	v[n - 1].read = false; /* the last value is a result */
	dag_results(f, v, n, R, C, false);
	fprintf(f, ") {\n  %%v0 = ");
	dag_shape(f, R, C, false);
	fprintf(f, "{1,0} parameter(0)\n  %%v1 = ");
	dag_shape(f, R, C, false);
	fprintf(f, "{1,0} parameter(1)\n  %%v2 = ");
	dag_shape(f, R, C, true);
	fprintf(f, "{0} parameter(2)\n  %%w = f32[%" PRId64 ",%" PRId64
		   "]{1,0} parameter(3)\n  %%z = f32[] constant(0)\n"
		   "  %%i0 = s32[] constant(0)\n  %%i1 = s32[] constant(%" PRId64
		   ")\n%s  ROOT %%out = (",
		C, C, C / 4, bbuf);
	dag_results(f, v, n, R, C, false);
	fprintf(f, ") tuple(");
	dag_results(f, v, n, R, C, true);
	fprintf(f, ")\n}\n");
	fclose(f);
	free(bbuf);
	return n_ops;
}
