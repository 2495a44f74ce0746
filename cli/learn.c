/*
 * learn.c: what the learning commands share: loading the measured sets
 * with a spec per row (--hw-dir) and building their training samples
 * (validation/val_learn.c), and loading a model (--model).
 */
#include "cli.h"

#include <string.h>

void cmd_sets_free(struct cmd_sets *s)
{
	val_learn_free(&s->learn);
	for (int i = 0; i < s->n; i++) {
		val_specs_free(&s->specs[i]);
		val_dataset_free(&s->sets[i]);
	}
	memset(s, 0, sizeof *s);
}

int cmd_sets_load(const struct cmd_ctx *ctx, const char *const *dirs, int n,
		  const char *hw_dir, struct cmd_sets *s)
{
	memset(s, 0, sizeof *s);
	if (n == 0) {
		cmd_error(ctx, "--data DIR is required (e.g. --data "
			       "../shared/data/tpuv4-ops)");
		return CMD_EXIT_USAGE;
	}
	if (!hw_dir) {
		cmd_error(ctx, "--hw-dir DIR is required (e.g. --hw-dir "
			       "hwspecs)");
		return CMD_EXIT_USAGE;
	}
	const struct val_dataset *sp[CMD_MAX_SETS];
	const struct val_specs *pp[CMD_MAX_SETS];
	struct ts_diag d = {0};
	enum ts_status st = TS_OK;
	for (int i = 0; i < n && st == TS_OK; i++) {
		/* counted before it loads: d may point into it, and a set
		 * that failed to load is still safe to free */
		s->n++;
		st = val_dataset_load(dirs[i], &s->sets[i], &d);
		if (st == TS_OK)
			st = val_specs_load_dir(&s->sets[i], hw_dir,
						&s->specs[i], &d);
		sp[i] = &s->sets[i];
		pp[i] = &s->specs[i];
	}
	if (st == TS_OK)
		st = val_learn_build(sp, pp, n, &s->learn, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		return cmd_exit_from_status(st);
	}
	if (s->learn.n_skipped)
		fprintf(ctx->err,
			"%s: warning: %d of %d rows have no analytic estimate "
			"and are left out (tpusim validate lists them)\n",
			ctx->prog, s->learn.n_skipped, s->learn.n_rows);
	return CMD_EXIT_OK;
}

int cmd_load_model(const struct cmd_ctx *ctx, const char *path,
		   struct gnn_model *m)
{
	struct ts_diag d = {0};
	enum ts_status st = hyb_model_load(path, m, &d);
	if (st != TS_OK) {
		cmd_diag(ctx, &d, NULL, NULL, 0);
		return cmd_exit_from_status(st);
	}
	return CMD_EXIT_OK;
}

struct cmd_file cmd_model_file(const char *model, bool shipped)
{
	if (model)
		return (struct cmd_file){"--model", hyb_model_path(model),
					 CMD_FILE};
	return (struct cmd_file){"the shipped model",
				 shipped ? hyb_model_path("default") : NULL,
				 CMD_FILE};
}

int cmd_opt_data(const struct cmd_ctx *ctx, const char **dirs, int *n,
		 const char *arg)
{
	if (*n == CMD_MAX_SETS) {
		cmd_error(ctx, "at most %d --data options", CMD_MAX_SETS);
		return CMD_EXIT_USAGE;
	}
	dirs[(*n)++] = arg;
	return CMD_EXIT_OK;
}

int cmd_opt_seed(const struct cmd_ctx *ctx, const char *arg, uint64_t *seed)
{
	int64_t v;
	if (!cmd_parse_int64(arg, 1, INT64_C(4294967295), &v)) {
		cmd_error(ctx, "--seed takes a whole number from 1 to "
			       "4294967295, got '%s'", arg);
		return CMD_EXIT_USAGE;
	}
	*seed = (uint64_t)v;
	return CMD_EXIT_OK;
}

int cmd_opt_epochs(const struct cmd_ctx *ctx, const char *arg, int *epochs)
{
	int64_t v;
	if (!cmd_parse_int64(arg, 1, 100000, &v)) {
		cmd_error(ctx, "--epochs takes a whole number from 1 to 100000, "
			       "got '%s'", arg);
		return CMD_EXIT_USAGE;
	}
	*epochs = (int)v;
	return CMD_EXIT_OK;
}
