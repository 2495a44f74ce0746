/*
 * cmd_train.c: `tpusim train`: trains the learned residual (or the
 * learned-only baseline) on measured sets and writes the model file
 * (learned/gnn.h: network and training; learned/gnn_file.c: the file).
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct train_opts {
	const char *data[CMD_MAX_SETS]; /* --data DIR, in order */
	int n_data;
	const char *hw_dir;   /* --hw-dir DIR */
	const char *out;      /* -o MODEL */
	uint64_t seed;        /* --seed N */
	bool seed_set;        /* --seed given (else 1) */
	int epochs;           /* --epochs N (0: default) */
	bool learned_only;    /* --learned-only */
};

enum {
	OPT_DATA = CMD_OPT_OWN,
	OPT_HW_DIR,
	OPT_SEED,
	OPT_EPOCHS,
	OPT_LEARNED_ONLY,
	OPT_OUT = 'o',
};

static const struct option train_options[] = {
	{"data", required_argument, NULL, OPT_DATA},
	{"hw-dir", required_argument, NULL, OPT_HW_DIR},
	{"seed", required_argument, NULL, OPT_SEED},
	{"epochs", required_argument, NULL, OPT_EPOCHS},
	{"learned-only", no_argument, NULL, OPT_LEARNED_ONLY},
	{"output", required_argument, NULL, OPT_OUT},
	{0},
};

static int train_parse_opt(const struct cmd_ctx *ctx, void *opts_v, int id,
			   const char *arg)
{
	struct train_opts *o = opts_v;
	switch (id) {
	case OPT_DATA:
		return cmd_opt_data(ctx, o->data, &o->n_data, arg);
	case OPT_HW_DIR:
		o->hw_dir = arg;
		return CMD_EXIT_OK;
	case OPT_SEED:
		o->seed_set = true;
		return cmd_opt_seed(ctx, arg, &o->seed);
	case OPT_EPOCHS:
		return cmd_opt_epochs(ctx, arg, &o->epochs);
	case OPT_LEARNED_ONLY:
		o->learned_only = true;
		return CMD_EXIT_OK;
	case OPT_OUT:
		o->out = arg;
		return CMD_EXIT_OK;
	default:
		cmd_error(ctx, "unhandled option");
		return CMD_EXIT_USAGE;
	}
}

static void train_help(FILE *out)
{
	fputs("Trains the learned residual on the measured sets DIR: a graph "
	      "network over\neach kernel's HLO graph and its kernel features "
	      "(tile config, analytic\nbreakdown, spec) that predicts r, the "
	      "hybrid estimate being analytic x\nexp(r). Loss: the squared log "
	      "error of each row's program time, plus a\npairwise ranking loss "
	      "over the tile configs of one kernel; every group weighs\nthe same. "
	      "A fifth of the groups (a kernel of a tile set, a shape of an op\n"
	      "set) is held out for early stopping; the epoch with the lowest "
	      "held-out\nloss is kept. A set of fewer than 3 groups holds none "
	      "out; when no set\nholds one out, the training loss judges and no "
	      "held-out error is\nreported. The same data, specs and seed give "
	      "the same file, bit for\nbit. With --learned-only, the same "
	      "network predicts log time without any\nanalytic input (the baseline "
	      "that shows what the physics adds).\n\n"
	      "Options:\n"
	      "      --data DIR      a measurement set (repeatable, at least "
	      "one)\n"
	      "      --hw-dir DIR    a spec per row from its hw column: tpu-v3 "
	      "-> DIR/v3.yaml\n"
	      "  -o, --output MODEL  the model file to write (required)\n"
	      "      --seed N        random seed (default 1)\n"
	      "      --epochs N      at most N epochs (default 60)\n"
	      "      --learned-only  train the learned-only baseline\n",
	      out);
}

static int train_main(struct cmd_ctx *ctx, void *opts_v, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct train_opts *o = opts_v;
	if (!o->out) {
		cmd_error(ctx, "-o MODEL is required");
		return CMD_EXIT_USAGE;
	}
	const struct cmd_file out = {"-o", o->out, CMD_FILE};
	const struct cmd_file in = {"--hw-dir", o->hw_dir, CMD_FILE_SPECS};
	int rc = cmd_check_io(ctx, &(struct cmd_io){.outs = &out, .n_outs = 1,
						   .ins = &in, .n_ins = 1,
						   .sets = o->data,
						   .n_sets = o->n_data});
	if (rc != CMD_EXIT_OK)
		return rc;
	struct cmd_sets s;
	rc = cmd_sets_load(ctx, o->data, o->n_data, o->hw_dir, &s);
	if (rc != CMD_EXIT_OK) {
		cmd_sets_free(&s);
		return rc;
	}
	struct gnn_train_opts to;
	gnn_train_opts_default(&to);
	to.kind = o->learned_only ? GNN_LEARNED_ONLY : GNN_RESIDUAL;
	to.seed = o->seed_set ? o->seed : 1;
	if (o->epochs)
		to.epochs = o->epochs;
	to.progress = isatty(fileno(ctx->err)) ? ctx->err : NULL;
	struct gnn_model m = {0};
	struct ts_diag d = {0};
	time_t t0 = time(NULL);
	struct gnn_holdback hb = {0};
	enum ts_status st = gnn_train(&s.learn.data, &to, &m, &d);
	if (st == TS_OK)
		st = gnn_hold_back(&s.learn.data, &to, GNN_HOLDBACK_FOLDS, &m,
				   &hb, &d);
	if (st == TS_OK)
		st = gnn_model_save(&m, o->out, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		rc = cmd_exit_from_status(st);
	} else {
		/* nothing held out: no held-out error to show (early
		 * stopping judged the training objective) */
		char held[160];
		if (isnan(m.summary.val_loss))
			snprintf(held, sizeof held, "no held-out error (n/a): "
				 "no set has the %d groups it takes to hold "
				 "one out", gnn_min_groups_held_out(&to));
		else
			snprintf(held, sizeof held, "held-out squared log "
				 "error %.4f", m.summary.val_loss);
		fprintf(ctx->err,
			"%s: %s model: %d samples, %d groups; %d epochs, best "
			"%d (training objective %.4f, with the ranking term; "
			"%s); ",
			ctx->prog, gnn_kind_name(m.kind), s.learn.data.n_samples,
			s.learn.data.n_groups, m.summary.epochs,
			m.summary.best_epoch, m.summary.train_loss, held);
		if (m.kind == GNN_RESIDUAL)
			fprintf(ctx->err, "novel op mixes: correction x %.1f "
				"(%d held-out groups); held back: %d of %d known "
				"op mixes (%d samples) corrected worse than the "
				"analytic model out of %d folds, now novel; ",
				m.novel_trust, m.summary.novel_groups,
				hb.n_dropped, hb.n_known_before, hb.n_samples,
				GNN_HOLDBACK_FOLDS);
		fprintf(ctx->err, "%.0f s; wrote %s\n",
			difftime(time(NULL), t0), o->out);
	}
	gnn_model_free(&m);
	cmd_sets_free(&s);
	return rc;
}

const struct cmd cmd_train = {
	.name = "train",
	.summary = "Train the learned residual on measured runtimes",
	.synopsis = "--data DIR [--data DIR...] --hw-dir DIR -o MODEL "
		    "[--seed N] [--epochs N] [--learned-only]",
	.flags = CMD_TRAINS,
	.options = train_options,
	.short_opts = "o:",
	.repeatable = "data",
	.opts_size = sizeof(struct train_opts),
	.parse_opt = train_parse_opt,
	.help = train_help,
	.min_args = 0,
	.max_args = 0,
	.fn = train_main,
};
