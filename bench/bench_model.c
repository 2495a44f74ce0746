/*
 * bench_model.c: estimates per second. Parses an HLO module, plans its
 * largest convolution kernel (fusion.191 for tpugraphs-tile-v3), lists
 * every feasible tile config (sim_plan_enumerate, all bounds), then costs
 * them over and over on one core for at least two seconds of CPU time and
 * prints "model: N estimates/s ..." (per second of this process's CPU
 * time); then the same with the shipped learned model (the kernel's graph
 * embedded once, as tile search does; each estimate is the analytic one
 * and the model's head): "hybrid: N estimates/s". Targets: >= 1e6
 * analytic and >= 1e5 hybrid estimates/s per core.
 * Usage: bench_model <module.hlo> [spec.yaml]   (default hwspecs/v3.yaml)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hybrid.h"
#include "model.h"

#define BENCH_MIN_SECONDS 2.0

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct cfg_list {
	struct sim_tile_config *v;
	size_t n, cap;
	const struct sim_plan *p;
	const struct hw_spec *hw;
	bool nomem;
};

static bool collect(const struct sim_tile_config *cfg, void *ctx)
{
	struct cfg_list *l = ctx;
	struct sim_estimate e;
	sim_plan_estimate(l->p, l->hw, cfg, &e);
	if (!e.feasible)
		return true;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 1024;
		struct sim_tile_config *v = ts_realloc(l->v, cap * sizeof *v);
		if (!v) {
			l->nomem = true;
			return false;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *cfg;
	return true;
}

/* The default spec: TPUSIM_SOURCE/hwspecs/v3.yaml, else the source tree
 * this file was compiled from. */
static const char *default_spec(char *buf, size_t cap)
{
	const char *src = getenv("TPUSIM_SOURCE");
	if (src) {
		snprintf(buf, cap, "%s/hwspecs/v3.yaml", src);
		return buf;
	}
	const char *me = __FILE__;
	const char *cut = strstr(me, "bench/bench_model.c");
	int len = cut ? (int)(cut - me) : 0;
	snprintf(buf, cap, "%.*shwspecs/v3.yaml", len, me);
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: bench_model <module.hlo> [spec.yaml]\n");
		return 2;
	}
	char spec_buf[4096];
	const char *spec = argc == 3 ? argv[2]
				     : default_spec(spec_buf, sizeof spec_buf);
	struct hw_spec hw;
	struct ts_diag d = {0};
	if (hw_spec_load(spec, &hw, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		return 1;
	}
	char *text = NULL;
	struct ir_module **mods = NULL;
	int n_mods = 0;
	if (hlo_parse_file(argv[1], &text, &mods, &n_mods, &d) != TS_OK ||
	    n_mods < 1) {
		ts_diag_print(&d, stderr);
		return 1;
	}
	struct sim_program prog;
	struct sim_program_opts popts = {0};
	if (sim_program_build(mods[0], &popts, &prog, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		return 1;
	}
	/* the largest convolution kernel: most MACs */
	const struct sim_kernel *k = NULL;
	for (int i = 0; i < prog.n_kernels; i++) {
		const struct sim_kernel *c = &prog.kernels[i];
		if (c->main_op == IR_OP_CONVOLUTION &&
		    (!k || c->work.mxu_macs > k->work.mxu_macs))
			k = c;
	}
	if (!k) {
		fprintf(stderr, "bench_model: %s has no convolution kernel\n",
			argv[1]);
		return 1;
	}
	struct sim_plan plan;
	if (sim_plan_build(k, &hw, &plan, &d) != TS_OK) {
		ts_diag_print(&d, stderr);
		sim_plan_free(&plan);
		return 1;
	}
	struct cfg_list l = {.p = &plan, .hw = &hw};
	int64_t all = sim_plan_enumerate(&plan, 0, collect, &l);
	if (l.nomem || l.n == 0) {
		fprintf(stderr, "bench_model: %s\n",
			l.nomem ? "out of memory" : "no feasible config");
		sim_plan_free(&plan);
		return 1;
	}
	double sink = 0;
	int64_t done = 0;
	double t0 = now_s(), t = 0;
	do {
		for (size_t i = 0; i < l.n; i++) {
			struct sim_estimate e;
			sim_plan_estimate(&plan, &hw, &l.v[i], &e);
			sink += e.time_ns;
		}
		done += (int64_t)l.n;
		t = now_s() - t0;
	} while (t < BENCH_MIN_SECONDS);
	printf("model: %.3g estimates/s (%zu feasible of %lld configs of %s, "
	       "%lld estimates in %.2f s CPU; checksum %.6g)\n",
	       (double)done / t, l.n, (long long)all, k->name,
	       (long long)done, t, sink / (double)done);

	struct gnn_model gm;
	struct hyb_embedding emb;
	if (hyb_model_load("default", &gm, &d) != TS_OK ||
	    hyb_embed(&gm, k, &emb) != TS_OK) {
		ts_diag_print(&d, stderr);
		sim_plan_free(&plan);
		return 1;
	}
	sink = 0;
	done = 0;
	t0 = now_s();
	do {
		for (size_t i = 0; i < l.n; i++) {
			struct sim_estimate e;
			sim_plan_estimate(&plan, &hw, &l.v[i], &e);
			sink += hyb_kernel_predict(&gm, &emb, k, &e, &hw, false,
							   NULL);
		}
		done += (int64_t)l.n;
		t = now_s() - t0;
	} while (t < BENCH_MIN_SECONDS);
	printf("hybrid: %.3g estimates/s (the same configs, learned/default.gnn "
	       "on top; %lld in %.2f s CPU; checksum %.6g)\n",
	       (double)done / t, (long long)done, t, sink / (double)done);
	gnn_model_free(&gm);
	ts_free(l.v);
	sim_plan_free(&plan);
	sim_program_free(&prog);
	for (int m = 0; m < n_mods; m++)
		ir_module_free(mods[m]);
	ts_free(mods);
	ts_free(text);
	return 0;
}
