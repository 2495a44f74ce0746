/*
 * cmd_fuse.c: `tpusim fuse IN.hlo --hw SPEC [-o OUT.hlo]`: writes an unfused
 * module as the fused module XLA's fusion passes would make of it (the
 * `xla` policy, sim/fusion.c), reads the result back, compares its cost
 * with the unfused module's (a warning when they differ), and reports
 * kernels, HBM bytes and program time on SPEC.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct fuse_opts {
	const char *out;  /* -o OUT.hlo; NULL: standard output */
	bool unfuse;      /* --unfuse: inline a compiled module's fusions */
	bool agreement;   /* --agreement: compare the policy with XLA */
};

enum { OPT_OUT = 'o', OPT_UNFUSE = CMD_OPT_OWN, OPT_AGREEMENT };

static const struct option fuse_options[] = {
	{"output", required_argument, NULL, OPT_OUT},
	{"unfuse", no_argument, NULL, OPT_UNFUSE},
	{"agreement", no_argument, NULL, OPT_AGREEMENT},
	{0},
};

static int fuse_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			  const char *arg)
{
	struct fuse_opts *o = opts_v;
	switch (id) {
	case OPT_OUT:
		o->out = arg;
		return CMD_EXIT_OK;
	case OPT_UNFUSE:
		o->unfuse = true;
		return CMD_EXIT_OK;
	case OPT_AGREEMENT:
		o->agreement = true;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void fuse_help(FILE *out)
{
	fputs("Fuses an unfused (pre-optimization) module the way XLA's TPU "
	      "fusion passes\nwould (the decisions `tpusim run` costs such a "
	      "module with: producer-consumer\nfusion of elementwise ops, "
	      "recomputation of cheap producers, reductions and\n"
	      "dots/convolutions as fusion roots with their epilogues, sibling "
	      "multi-output\nfusion) and writes it as HLO text: fusion "
	      "instructions with kind and calls=,\nshapes, layouts and "
	      "attributes as written. The result is read back and\nits cost "
	      "compared with the unfused module's on SPEC (a warning when they\n"
	      "differ); kernels, HBM bytes and program time before and after go "
	      "to\nstandard error.\n\n"
	      "With --unfuse, the other way: a compiled module with its "
	      "fusions inlined\n"
	      "into their callers (instruction X of fusion F named X__in__F). "
	      "With\n"
	      "--agreement, for each compiled module given: unfuse it, group "
	      "it with the\n"
	      "xla policy, and print how many of XLA's fusions one group "
	      "forms exactly\n"
	      "and the precision and recall of the fused operand edges "
	      "(working\n"
	      "instructions only: not free, not constant-derived). Neither "
	      "needs --hw.\n\n"
	      "Options:\n"
	      "  -o, --output OUT.hlo  write there (temp file, then rename); "
	      "default: stdout\n"
	      "      --unfuse          inline the fusions of a compiled module\n"
	      "      --agreement       compare the xla policy with XLA's "
	      "fusions (several\n"
	      "                        IN.hlo allowed; a table, no HLO "
	      "written)\n",
	      out);
}

struct buf {
	char *p;
	size_t n;
};

static enum ts_status write_buf(FILE *f, void *ctx)
{
	const struct buf *b = ctx;
	return fwrite(b->p, 1, b->n, f) == b->n ? TS_OK : TS_ERR_IO;
}

/* b to -o (temp file, then rename) or standard output. */
static int write_out(const struct cmd_ctx *ctx, const struct fuse_opts *o,
		     struct buf *b)
{
	if (!o->out) {
		if (fwrite(b->p, 1, b->n, ctx->out) == b->n)
			return CMD_EXIT_OK;
		cmd_error(ctx, "cannot write to standard output");
		return CMD_EXIT_IO;
	}
	return cmd_write_file(ctx, o->out, write_buf, b);
}

/* Program time and HBM bytes of a parsed module on hw. */
static enum ts_status cost(const struct ir_module *m, const struct hw_spec *hw,
			   int *kernels, double *ns, double *bytes,
			   struct ts_diag *d)
{
	struct sim_program p;
	struct sim_program_opts po = {0};
	enum ts_status st = sim_program_build(m, &po, &p, d);
	if (st)
		return st;
	st = sim_program_estimate(&p, hw, d);
	*kernels = p.n_kernels;
	*ns = st ? NAN : sim_program_total(&p);
	*bytes = 0;
	for (int i = 0; i < p.n_kernels; i++)
		*bytes += (p.kernels[i].est.bytes_read +
			   p.kernels[i].est.bytes_written) *
			  p.kernels[i].multiplicity;
	sim_program_free(&p);
	return st;
}

/* Module `mod` of g through the unfusion pass (unfuse: *inlined counts
 * the fusions) or the fusion pass (*fs), its text malloc'd into *b. */
static int run_pass(const struct cmd_ctx *ctx, const struct cmd_graph *g,
		    int mod, const char *path, bool unfuse, struct buf *b,
		    struct sim_fuse_stats *fs, int *inlined)
{
	FILE *mem = open_memstream(&b->p, &b->n);
	struct ts_diag d = {0};
	size_t len = strlen(g->text);
	enum ts_status st =
		!mem     ? TS_ERR_NOMEM
		: unfuse ? sim_unfuse_write(g->mods[mod], g->text, len, mem,
					    inlined, &d)
			 : sim_fuse_write(g->mods[mod], g->text, len, mem, fs, &d);
	if (mem && fclose(mem) != 0 && st == TS_OK)
		st = TS_ERR_NOMEM;
	if (st != TS_OK) {
		if (!d.msg[0])
			ts_diag_set(&d, path, 0, 0, "%s", ts_status_str(st));
		cmd_diag(ctx, &d, path, g->text, len);
		return cmd_exit_from_status(st);
	}
	return CMD_EXIT_OK;
}

/* Adds b's counts to a. */
static void add_agreement(struct sim_fuse_agreement *a,
			  const struct sim_fuse_agreement *b)
{
	a->xla_kernels += b->xla_kernels;
	a->reproduced += b->reproduced;
	a->edges_xla += b->edges_xla;
	a->edges_policy += b->edges_policy;
	a->edges_both += b->edges_both;
}

static void put_agreement(FILE *f, const char *name,
			  const struct sim_fuse_agreement *a)
{
	/* a ratio over no edges is not 100%: "-" */
	char prec[16] = "-", rec[16] = "-";
	if (a->edges_policy)
		snprintf(prec, sizeof prec, "%.1f%%",
			 100.0 * a->edges_both / a->edges_policy);
	if (a->edges_xla)
		snprintf(rec, sizeof rec, "%.1f%%",
			 100.0 * a->edges_both / a->edges_xla);
	fprintf(f, "%-44s %8d %10d %9s %9s\n", name, a->xla_kernels,
		a->reproduced, prec, rec);
}

/* One module of g: unfused, read back, compared; its line printed when it
 * had fusions. */
static int agree_module(struct cmd_ctx *ctx, const struct cmd_graph *g,
			int mod, const char *path, struct sim_fuse_agreement *all)
{
	struct buf b = {0};
	struct ir_module **u = NULL;
	int nu = 0, inlined = 0;
	int rc = run_pass(ctx, g, mod, path, true, &b, NULL, &inlined);
	struct ts_diag d = {0};
	struct sim_fuse_agreement a;
	if (rc == CMD_EXIT_OK && inlined > 0) {
		if (hlo_parse(path, b.p, b.n, &u, &nu, &d) != TS_OK ||
		    sim_fuse_agreement(u[0], &a, &d) != TS_OK) {
			cmd_error(ctx, "internal error: %s unfused does not "
				       "read back: %s", path, d.msg);
			rc = CMD_EXIT_IO;
		} else {
			const char *nm = g->mods[mod]->name;
			put_agreement(ctx->out, nm[0] ? nm : "(unnamed)", &a);
			add_agreement(all, &a);
		}
	}
	for (int k = 0; k < nu; k++)
		ir_module_free(u[k]);
	ts_free(u);
	free(b.p);
	return rc;
}

/* --agreement: one line per module with fusions, then the totals. */
static int agreement(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct sim_fuse_agreement all = {0};
	int rc = CMD_EXIT_OK;
	fprintf(ctx->out, "%-44s %8s %10s %9s %9s\n", "module", "fusions",
		"reproduced", "precision", "recall");
	for (int i = 0; i < argc && rc == CMD_EXIT_OK; i++) {
		struct cmd_graph g;
		struct sim_program_opts po = {0};
		rc = cmd_graph_load(ctx, argv[i], NULL, &po, &g);
		for (int m = 0; rc == CMD_EXIT_OK && m < g.n_mods; m++)
			rc = agree_module(ctx, &g, m, argv[i], &all);
		cmd_graph_free(&g);
	}
	if (rc == CMD_EXIT_OK)
		put_agreement(ctx->out, "all", &all);
	return rc;
}

static int fuse_main(struct cmd_ctx *ctx, void *opts_v, int argc, char **argv)
{
	struct fuse_opts *o = opts_v;
	const char *path = argv[0];
	if (o->agreement && (o->unfuse || o->out)) {
		cmd_error(ctx, "--agreement prints a table: it excludes --unfuse "
			       "and -o");
		return CMD_EXIT_USAGE;
	}
	if (o->agreement)
		return agreement(ctx, argc, argv);
	if (!o->unfuse && !ctx->hw_path) {
		cmd_error(ctx, "--hw SPEC.yaml is required to fuse (the "
			       "read-back is costed on it)");
		return CMD_EXIT_USAGE;
	}
	if (argc != 1) {
		cmd_error(ctx, "give one IN.hlo (several only with --agreement)");
		return CMD_EXIT_USAGE;
	}
	struct cmd_graph g;
	struct sim_program_opts popts = {0};
	int rc = cmd_graph_load(ctx, path, NULL, &popts, &g);
	struct buf b = {0};
	struct ir_module **back = NULL;
	int n_back = 0;
	if (rc != CMD_EXIT_OK)
		goto out;
	if (g.n_mods != 1) {
		cmd_error(ctx, "%s holds %d modules; fuse takes one", path,
			  g.n_mods);
		rc = CMD_EXIT_INPUT;
		goto out;
	}
	const struct ir_module *m = g.mods[0];
	if (o->unfuse) {
		int inlined;
		rc = run_pass(ctx, &g, 0, path, true, &b, NULL, &inlined);
		if (rc == CMD_EXIT_OK)
			rc = write_out(ctx, o, &b);
		if (rc == CMD_EXIT_OK)
			fprintf(ctx->err, "%s: %d fusions inlined\n", ctx->prog,
				inlined);
		goto out;
	}
	if (!g.progs[0].fused_xla) { /* run's test: a fusion instruction */
		cmd_error(ctx, "%s: module %s already has fusion instructions "
			       "(an optimized module): nothing to decide",
			  path, m->name);
		rc = CMD_EXIT_INPUT;
		goto out;
	}
	struct sim_fuse_stats fs;
	if ((rc = run_pass(ctx, &g, 0, path, false, &b, &fs, NULL)))
		goto out;
	struct ts_diag d = {0};
	enum ts_status st;
	/* read back: it must parse and cost what the unfused module costs */
	const char *name = o->out ? o->out : "<fused output>";
	int k0, k1;
	double t0, t1, b0, b1;
	st = cost(m, &ctx->hw, &k0, &t0, &b0, &d);
	if (st != TS_OK) { /* the input itself cannot be costed */
		cmd_diag(ctx, &d, path, g.text, strlen(g.text));
		rc = cmd_exit_from_status(st);
		goto out;
	}
	st = hlo_parse(name, b.p, b.n, &back, &n_back, &d);
	if (st == TS_OK)
		st = cost(back[0], &ctx->hw, &k1, &t1, &b1, &d);
	if (st != TS_OK) {
		cmd_error(ctx, "internal error: the fused module does not read "
			       "back: %s", d.msg);
		rc = CMD_EXIT_IO;
		goto out;
	}
	if (!(fabs(t1 - t0) <= 1e-9 * fmax(t0, 1.0)))
		fprintf(ctx->err,
			"%s: warning: the fused module costs %.6g ns, the unfused "
			"one %.6g ns\n", ctx->prog, t1, t0);
	if ((rc = write_out(ctx, o, &b)))
		goto out;
	fprintf(ctx->err,
		"%s: policy xla: %d fusions (%d multi-output, %d groups left "
		"unfused: a cycle); kernels %d -> %d; HBM bytes %.4g -> %.4g; "
		"program time on %s %.6g -> %.6g ns\n",
		ctx->prog, fs.fusions, fs.multi_output, fs.refused, k0, k1, b0,
		b1, ctx->hw.name, t0, t1);
out:
	for (int i = 0; i < n_back; i++)
		ir_module_free(back[i]);
	ts_free(back);
	free(b.p);
	cmd_graph_free(&g);
	return rc;
}

const struct cmd cmd_fuse = {
	.name = "fuse",
	.summary = "Fuse an unfused module as XLA would, as HLO text",
	.synopsis = "IN.hlo --hw SPEC.yaml [-o OUT.hlo] | --unfuse IN.hlo "
		    "[-o OUT.hlo] | --agreement IN.hlo...",
	.flags = CMD_NEEDS_HW | CMD_HW_OPTIONAL,
	.options = fuse_options,
	.short_opts = "o:",
	.opts_size = sizeof(struct fuse_opts),
	.parse_opt = fuse_parse_opt,
	.help = fuse_help,
	.min_args = 1,
	.max_args = -1,
	.fn = fuse_main,
};
