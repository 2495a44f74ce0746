/*
 * plots.c: pictures of the comparison report, drawn with PLplot's C API
 * (Debian's libplplot-dev; the pngcairo driver from plplot-driver-cairo).
 * PLplot is a maintained scientific plotting library with log axes,
 * legends and anti-aliased PNG output: what we would otherwise write by
 * hand. Each picture goes to DIR/NAME.png.tmp first and is renamed into
 * place when PLplot has finished it, so a failed run leaves no half-drawn
 * file.
 *
 *   compare_scatter.png  predicted vs measured, log-log, one panel per
 *                        model (analytic, learned-only, hybrid), a colour
 *                        per set, the y = x line and a +-25% band
 *   compare_ape.png      per set, the share of rows within each APE, one
 *                        line per model (higher and further left is better)
 *   compare_tau.png      per kernel with >= 10 configs, Kendall tau of
 *                        each model's ranking of its tile configs
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

/*
 * PLplot is loaded when the first picture is drawn (dlopen), not linked:
 * it and the libraries it pulls in (cairo, freetype, qhull, libpng, ...)
 * would otherwise be loaded at every start of tpusim, for runs that draw
 * nothing. The functions are plplot.h's own (its macros name them c_pl*),
 * so a call reads pl.plinit() and means c_plinit().
 */
#define PL_FUNCS \
	X(pladv) \
	X(plbox) \
	X(plcol0) \
	X(plcol1) \
	X(plend) \
	X(plfill) \
	X(plfontld) \
	X(plinit) \
	X(pllab) \
	X(pllegend) \
	X(plline) \
	X(pllsty) \
	X(plmtex) \
	X(plpoin) \
	X(plptex) \
	X(plschr) \
	X(plscmap1l) \
	X(plscmap1n) \
	X(plscol0) \
	X(plscolbg) \
	X(plsdev) \
	X(plsfnam) \
	X(plspage) \
	X(plssub) \
	X(plstring) \
	X(plvpor) \
	X(plwidth) \
	X(plwind)
static struct {
#define X(f) __typeof__(f) *f;
	PL_FUNCS
#undef X
} pl;

/* Loads PLplot once (TPUSIM_PLPLOT_LIB, found by CMake); prints a failure. */
static int load_plplot(const struct cmd_ctx *ctx)
{
	static void *lib;
	if (lib)
		return CMD_EXIT_OK;
	void *h = dlopen(TPUSIM_PLPLOT_LIB, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		cmd_error(ctx, "--plots needs PLplot: %s", dlerror());
		return CMD_EXIT_IO;
	}
#define STR(x) #x
#define NAME(x) STR(x)
#define X(f)                                                                  \
	if (!(*(void **)(&pl.f) = dlsym(h, NAME(f)))) {                       \
		cmd_error(ctx, "--plots: PLplot has no %s", NAME(f));          \
		dlclose(h);                                                   \
		return CMD_EXIT_IO;                                           \
	}
	PL_FUNCS
#undef X
#undef NAME
#undef STR
	lib = h;
	return CMD_EXIT_OK;
}

enum { COL_BG = 0, COL_FG, COL_GRID, COL_SERIES };

/* Colour-blind safe series colours (Okabe-Ito). */
static const int series_rgb[][3] = {
	{0, 114, 178}, {213, 94, 0}, {0, 158, 115}, {204, 121, 167},
	{230, 159, 0}, {86, 180, 233}, {240, 228, 66}, {0, 0, 0},
};
#define N_SERIES (int)(sizeof series_rgb / sizeof series_rgb[0])

static const char *const model_names[3] = {"analytic", "learned-only",
					   "hybrid"};

#define PATH_CAP 4096

const char *const cmd_plot_compare_files[] = {
	"compare_scatter.png", "compare_ape.png", "compare_tau.png", NULL};
const char *const cmd_plot_autotune_files[] = {"autotune.png", NULL};
const char *const cmd_plot_whatif_files[] = {"whatif.png", NULL};
/* module_picture's names, prefix "run" and "generations" */
const char *const cmd_plot_run_files[] = {"run_*.png", NULL};
const char *const cmd_plot_generations_files[] = {"generations_*.png", NULL};

/* "<prefix>_<module>.png" for a module's picture: the name kept to
 * [A-Za-z0-9._-], and _2, _3, ... after a name already written by this
 * process. */
static void module_picture(char name[256], const char *prefix,
			   const char *module)
{
	static char written[64][256];
	static int n_written;
	char base[200];
	snprintf(base, sizeof base, "%s_%s", prefix,
		 module && module[0] ? module : "module");
	for (char *c = base + strlen(prefix) + 1; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '-' &&
		    *c != '_')
			*c = '_';
	snprintf(name, 256, "%s.png", base);
	for (int k = 2;; k++) {
		bool seen = false;
		for (int i = 0; i < n_written && !seen; i++)
			seen = strcmp(written[i], name) == 0;
		if (!seen)
			break;
		snprintf(name, 256, "%s_%d.png", base, k);
	}
	if (n_written < 64)
		snprintf(written[n_written++], 256, "%s", name);
}

/*
 * Starts a PNG of w x h pixels at DIR/NAME.tmp (path gets DIR/NAME). The temp
 * file is created here first: PLplot itself reacts to a file it cannot open
 * by asking for another name and then exiting the process.
 */
static int begin(const struct cmd_ctx *ctx, const char *dir, const char *name,
		 char path[PATH_CAP], char tmp[PATH_CAP + 8], int w, int h)
{
	int rc = load_plplot(ctx);
	if (rc != CMD_EXIT_OK)
		return rc;
	snprintf(path, PATH_CAP, "%s/%s", dir, name);
	snprintf(tmp, PATH_CAP + 8, "%s.tmp", path);
	FILE *probe = fopen(tmp, "wb");
	if (!probe) {
		cmd_error(ctx, "cannot write %s: %s", path, strerror(errno));
		return CMD_EXIT_IO;
	}
	fclose(probe);
	pl.plsdev("pngcairo");
	pl.plsfnam(tmp);
	pl.plspage(0, 0, w, h, 0, 0);
	pl.plscolbg(255, 255, 255);
	pl.plinit();
	pl.plscol0(COL_FG, 0, 0, 0);
	pl.plscol0(COL_GRID, 190, 190, 190);
	for (int i = 0; i < N_SERIES; i++)
		pl.plscol0(COL_SERIES + i, series_rgb[i][0], series_rgb[i][1],
			series_rgb[i][2]);
	pl.plfontld(1);
	return CMD_EXIT_OK;
}

/* Ends the picture and moves it into place; prints a failure. */
static int end(const struct cmd_ctx *ctx, const char *tmp, const char *path)
{
	pl.plend();
	if (rename(tmp, path) != 0) {
		remove(tmp);
		cmd_error(ctx, "cannot write %s", path);
		return CMD_EXIT_IO;
	}
	return CMD_EXIT_OK;
}

static const double *pred_of(const struct val_compare_set *cs, int model,
			     int row)
{
	const struct val_report *r = model == 0   ? &cs->analytic
				     : model == 1 ? &cs->learned
						  : &cs->hybrid;
	return &r->rows[row].predicted_ns;
}

/* One model's panel of the scatter plot. */
static void scatter_panel(const struct val_compare *c, int model, double lo,
			  double hi)
{
	pl.pladv(0);
	pl.plvpor(0.18, 0.96, 0.14, 0.90);
	pl.plwind(lo, hi, lo, hi);
	pl.plcol0(COL_GRID);
	pl.plbox("g", 1, 0, "g", 1, 0);
	/* y = x, and +-25% */
	double x[2] = {lo, hi}, y[2];
	pl.plwidth(2);
	pl.plline(2, x, x);
	pl.pllsty(2);
	for (int s = -1; s <= 1; s += 2) {
		y[0] = lo + s * log10(1.25);
		y[1] = hi + s * log10(1.25);
		pl.plline(2, x, y);
	}
	pl.pllsty(1);
	pl.plwidth(1);
	for (int i = 0; i < c->n_sets; i++) {
		const struct val_compare_set *cs = &c->sets[i];
		const struct val_dataset *ds = cs->analytic.ds;
		pl.plcol0(COL_SERIES + i % N_SERIES);
		for (int r = 0; r < ds->n_rows; r++) {
			double p = *pred_of(cs, model, r);
			if (!(p > 0) || !isfinite(p))
				continue;
			double px = log10((double)ds->rows[r].runtime_ns);
			double py = log10(p);
			pl.plpoin(1, &px, &py, 17);
		}
	}
	pl.plcol0(COL_FG);
	pl.plbox("bcnstl", 0, 0, "bcnstvl", 0, 0);
	pl.pllab("measured (ns)", "predicted (ns)", model_names[model]);
}

static void legend_sets(const struct val_compare *c)
{
	int n = c->n_sets;
	PLINT opt[CMD_MAX_SETS], tcol[CMD_MAX_SETS], scol[CMD_MAX_SETS],
		snum[CMD_MAX_SETS];
	PLFLT sscale[CMD_MAX_SETS];
	const char *text[CMD_MAX_SETS], *sym[CMD_MAX_SETS];
	for (int i = 0; i < n; i++) {
		opt[i] = PL_LEGEND_SYMBOL;
		tcol[i] = COL_FG;
		scol[i] = COL_SERIES + i % N_SERIES;
		snum[i] = 1;
		sscale[i] = 1.2;
		text[i] = c->sets[i].analytic.ds->name;
		sym[i] = "•";
	}
	PLFLT w, h;
	pl.pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
		 PL_POSITION_INSIDE | PL_POSITION_TOP | PL_POSITION_LEFT, 0.02,
		 0.02, 0.05, COL_BG, COL_FG, 1, 0, 0, n, opt, 1.0, 0.8, 2.0, 0,
		 tcol, text, NULL, NULL, NULL, NULL, NULL, NULL, NULL, scol,
		 sscale, snum, sym);
}

/* A legend of n (<= LEGEND_MAX) colour boxes, box i in colour col[i]
 * beside text[i], at position offset by (x, y), in nrow rows and ncol
 * columns (0 and 0: one column). */
#define LEGEND_MAX 16
static void legend_boxes(int n, const PLINT *col, const char *const *text,
			 PLINT position, PLFLT x, PLFLT y, PLINT nrow,
			 PLINT ncol)
{
	TS_ASSERT(n >= 0 && n <= LEGEND_MAX);
	PLINT opt[LEGEND_MAX], tcol[LEGEND_MAX], bpat[LEGEND_MAX];
	PLFLT bscale[LEGEND_MAX], bw[LEGEND_MAX];
	for (int i = 0; i < n; i++) {
		opt[i] = PL_LEGEND_COLOR_BOX;
		tcol[i] = COL_FG;
		bpat[i] = 0;
		bscale[i] = 0.8;
		bw[i] = 1;
	}
	PLFLT w, h;
	pl.pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
		 position, x, y, 0.05, COL_BG, COL_FG, 1, nrow, ncol, n, opt,
		 1.0, 0.9, 2.0, 0, tcol, text, col, bpat, bscale, bw, NULL, NULL,
		 NULL, NULL, NULL, NULL, NULL);
}

static int plot_scatter(const struct cmd_ctx *ctx, const char *dir,
			const struct val_compare *c)
{
	double lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < c->n_sets; i++) {
		const struct val_dataset *ds = c->sets[i].analytic.ds;
		for (int r = 0; r < ds->n_rows; r++) {
			lo = fmin(lo, (double)ds->rows[r].runtime_ns);
			hi = fmax(hi, (double)ds->rows[r].runtime_ns);
		}
	}
	if (!(lo > 0))
		return CMD_EXIT_OK;
	lo = floor(log10(lo) - 0.3);
	hi = ceil(log10(hi) + 0.3);
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	int rc = begin(ctx, dir, cmd_plot_compare_files[0], path, tmp, 1800,
		       640);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plssub(3, 1);
	pl.plschr(0, 0.75);
	for (int m = 0; m < 3; m++) {
		scatter_panel(c, m, lo, hi);
		if (m == 0)
			legend_sets(c);
	}
	return end(ctx, tmp, path);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Per set: the empirical distribution of APE for each model. */
static int plot_ape(const struct cmd_ctx *ctx, const char *dir,
		    const struct val_compare *c)
{
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	int cols = c->n_sets < 2 ? 1 : 2, rows = (c->n_sets + cols - 1) / cols;
	int rc = begin(ctx, dir, cmd_plot_compare_files[1], path, tmp,
		       800 * cols, 520 * rows);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plssub(cols, rows);
	pl.plschr(0, 0.75);
	int n_max = 0;
	for (int i = 0; i < c->n_sets; i++)
		if (c->sets[i].analytic.ds->n_rows > n_max)
			n_max = c->sets[i].analytic.ds->n_rows;
	double *x = malloc(((size_t)n_max + 1) * sizeof *x);
	double *y = malloc(((size_t)n_max + 1) * sizeof *y);
	if (!x || !y) {
		free(x);
		free(y);
		pl.plend();
		remove(tmp);
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_IO;
	}
	for (int i = 0; i < c->n_sets; i++) {
		const struct val_compare_set *cs = &c->sets[i];
		const struct val_dataset *ds = cs->analytic.ds;
		pl.pladv(0);
		pl.plvpor(0.12, 0.96, 0.14, 0.88);
		pl.plwind(0, 60, 0, 1);
		pl.plcol0(COL_GRID);
		pl.plbox("g", 10, 0, "g", 0.2, 0);
		for (int m = 0; m < 3; m++) {
			int n = 0;
			for (int r = 0; r < ds->n_rows; r++) {
				double p = *pred_of(cs, m, r);
				double meas = (double)ds->rows[r].runtime_ns;
				if (isfinite(p))
					x[n++] = 100 * fabs(p - meas) / meas;
			}
			qsort(x, (size_t)n, sizeof *x, cmp_double);
			/* the share of rows within each APE, up to 60% (the
			 * axis ends there; the line stops at its share) */
			int shown = 0;
			for (int k = 0; k < n && x[k] <= 60; k++) {
				y[k] = (k + 1.0) / n;
				shown++;
			}
			pl.plcol0(COL_SERIES + m);
			pl.plwidth(3);
			pl.plline(shown, x, y);
			pl.plwidth(1);
		}
		pl.plcol0(COL_FG);
		pl.plbox("bcnst", 10, 0, "bcnstv", 0.2, 0);
		char title[160];
		snprintf(title, sizeof title, "%s (%d rows, out of fold)",
			 ds->name, ds->n_rows);
		pl.pllab("absolute percentage error (%)", "share of rows", title);
		PLINT opt[3], lcol[3], lsty[3], tcol[3];
		PLFLT lw[3];
		for (int m = 0; m < 3; m++) {
			opt[m] = PL_LEGEND_LINE;
			lcol[m] = COL_SERIES + m;
			lsty[m] = 1;
			lw[m] = 3;
			tcol[m] = COL_FG;
		}
		PLFLT w, h;
		pl.pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
			 PL_POSITION_INSIDE | PL_POSITION_BOTTOM |
				 PL_POSITION_RIGHT,
			 0.03, 0.05, 0.08, COL_BG, COL_FG, 1, 0, 0, 3, opt, 1.0,
			 0.9, 2.0, 0, tcol, model_names, NULL, NULL, NULL, NULL,
			 lcol, lsty, lw, NULL, NULL, NULL, NULL);
	}
	free(x);
	free(y);
	return end(ctx, tmp, path);
}

/* Kendall tau of each model per kernel with >= VAL_TAU_MIN_ROWS configs. */
static int plot_tau(const struct cmd_ctx *ctx, const char *dir,
		    const struct val_compare *c)
{
	const struct val_group *g[64][3];
	int n = 0;
	for (int i = 0; i < c->n_sets; i++) {
		const struct val_compare_set *cs = &c->sets[i];
		const struct val_report *a = &cs->analytic;
		if (!a->by_kernel)
			continue;
		for (int k = 0; k < a->n_groups && n < 64; k++) {
			if (a->groups[k].n_ranked < VAL_TAU_MIN_ROWS)
				continue;
			const struct val_report *rs[3] = {a, &cs->learned,
							  &cs->hybrid};
			bool ok = true;
			for (int m = 0; m < 3; m++) {
				g[n][m] = NULL;
				for (int j = 0; j < rs[m]->n_groups; j++)
					if (!strcmp(rs[m]->groups[j].name,
						    a->groups[k].name))
						g[n][m] = &rs[m]->groups[j];
				ok = ok && g[n][m];
			}
			n += ok;
		}
	}
	if (n == 0)
		return CMD_EXIT_OK;
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	int rc = begin(ctx, dir, cmd_plot_compare_files[2], path, tmp,
		       300 + 120 * n, 600);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plschr(0, 0.8);
	pl.pladv(0);
	pl.plvpor(0.08, 0.98, 0.12, 0.88);
	double ymin = 0;
	for (int k = 0; k < n; k++)
		for (int m = 0; m < 3; m++)
			ymin = fmin(ymin, g[k][m]->tau_model);
	pl.plwind(0, n, ymin, 1.15); /* room for the legend above 1 */
	pl.plcol0(COL_GRID);
	pl.plbox("", 0, 0, "g", 0.1, 0);
	for (int k = 0; k < n; k++) {
		for (int m = 0; m < 3; m++) {
			double t = g[k][m]->tau_model;
			if (!isfinite(t))
				continue;
			double x0 = k + 0.12 + 0.25 * m, x1 = x0 + 0.24;
			double bx[4] = {x0, x1, x1, x0}, by[4] = {0, 0, t, t};
			pl.plcol0(COL_SERIES + m);
			pl.plfill(4, bx, by);
		}
		pl.plcol0(COL_FG);
		pl.plmtex("b", 1.2, (k + 0.5) / n, 0.5, g[k][0]->name);
	}
	pl.plcol0(COL_FG);
	pl.plbox("bc", 0, 0, "bcnstv", 0.1, 0);
	pl.pllab("", "Kendall tau-b (1 = measured order)",
	      "ranking the tile configs of each kernel (>= 10 configs), out of fold");
	PLINT bcol[3] = {COL_SERIES, COL_SERIES + 1, COL_SERIES + 2};
	legend_boxes(3, bcol, model_names, PL_POSITION_INSIDE | PL_POSITION_TOP,
		     0, 0.02, 1, 3);
	return end(ctx, tmp, path);
}

int cmd_plot_compare(const struct cmd_ctx *ctx, const char *dir,
		     const struct val_compare *c)
{
	int rc = plot_scatter(ctx, dir, c);
	if (rc == CMD_EXIT_OK)
		rc = plot_ape(ctx, dir, c);
	if (rc == CMD_EXIT_OK)
		rc = plot_tau(ctx, dir, c);
	return rc;
}

/* ---- autotune --plots: slowdown against the measurement budget ------------ */

/* The floor of autotune.png's log axis: a slowdown below it (a strategy
 * that found every kernel's best) is drawn on it. */
#define TUNE_PLOT_FLOOR 0.01 /* % */

/* autotune.png: a panel per set (side by side), the mean slowdown (%) at
 * each budget on a log axis (random's first pick is some 100 times the
 * models'), a line per strategy with a mark at each budget. */
int cmd_plot_autotune(const struct cmd_ctx *ctx, const char *dir,
		      const struct val_tune_set *sets, int n,
		      const struct val_tune_opts *o)
{
	int shown = 0;
	for (int i = 0; i < n; i++)
		shown += sets[i].n_kernels > 0;
	if (shown == 0)
		return CMD_EXIT_OK;
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	int rc = begin(ctx, dir, cmd_plot_autotune_files[0], path, tmp,
		       560 * shown + 80, 520);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plssub(shown, 1);
	pl.plschr(0, 0.9);
	const char *names[VAL_TUNE_COUNT];
	PLINT opt[VAL_TUNE_COUNT], lcol[VAL_TUNE_COUNT], lsty[VAL_TUNE_COUNT],
		tcol[VAL_TUNE_COUNT], scol[VAL_TUNE_COUNT], snum[VAL_TUNE_COUNT];
	PLFLT lw[VAL_TUNE_COUNT], sscale[VAL_TUNE_COUNT];
	const char *sym[VAL_TUNE_COUNT];
	int n_lines = 0;
	for (int s = 0; s < VAL_TUNE_COUNT; s++) {
		if (!o->use[s])
			continue;
		names[n_lines] = val_tune_strategy_name((enum val_tune_strategy)s);
		opt[n_lines] = PL_LEGEND_LINE | PL_LEGEND_SYMBOL;
		lcol[n_lines] = scol[n_lines] = COL_SERIES + s;
		lsty[n_lines] = 1;
		lw[n_lines] = 3;
		tcol[n_lines] = COL_FG;
		snum[n_lines] = 1;
		sscale[n_lines] = 1.0;
		sym[n_lines] = "•";
		n_lines++;
	}
	for (int i = 0; i < n; i++) {
		const struct val_tune_set *t = &sets[i];
		if (!t->n_kernels)
			continue;
		pl.pladv(0);
		pl.plvpor(0.14, 0.95, 0.13, 0.88);
		double ymax = 1.0, xmax = o->budgets[o->n_budgets - 1];
		for (int s = 0; s < VAL_TUNE_COUNT; s++)
			for (int b = 0; o->use[s] && b < o->n_budgets; b++)
				ymax = fmax(ymax, 100 * t->res[s].slowdown[b]);
		pl.plwind(0.5, xmax + 0.5, log10(TUNE_PLOT_FLOOR),
			  log10(ymax) + 0.3);
		pl.plcol0(COL_GRID);
		pl.plbox("g", 1, 0, "gl", 0, 0);
		for (int s = 0; s < VAL_TUNE_COUNT; s++) {
			if (!o->use[s])
				continue;
			double x[VAL_TUNE_MAX_BUDGETS], y[VAL_TUNE_MAX_BUDGETS];
			for (int b = 0; b < o->n_budgets; b++) {
				x[b] = o->budgets[b];
				y[b] = log10(fmax(100 * t->res[s].slowdown[b],
						  TUNE_PLOT_FLOOR));
			}
			pl.plcol0(COL_SERIES + s);
			pl.plwidth(3);
			pl.plline(o->n_budgets, x, y);
			pl.plwidth(1);
			pl.plschr(0, 1.6);
			pl.plstring(o->n_budgets, x, y, "•");
			pl.plschr(0, 0.9);
		}
		pl.plcol0(COL_FG);
		pl.plbox("bcnst", xmax > 20 ? 0 : 1, 0, "bcnstvl", 0, 0);
		char title[160];
		snprintf(title, sizeof title,
			 "%s (%d kernels; %g%% = found the best)", t->name,
			 t->n_kernels, TUNE_PLOT_FLOOR);
		pl.pllab("measurements per kernel (budget)",
			 "mean slowdown over the best (%)", title);
		PLFLT w, h;
		pl.pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
			    PL_POSITION_INSIDE | PL_POSITION_TOP |
				    PL_POSITION_RIGHT,
			    0.03, 0.03, 0.08, COL_BG, COL_FG, 1, 0, 0, n_lines,
			    opt, 1.0, 0.9, 2.0, 0, tcol, names, NULL, NULL, NULL,
			    NULL, lcol, lsty, lw, scol, sscale, snum, sym);
	}
	return end(ctx, tmp, path);
}

/* ---- run --plots: the roofline and the time per bound unit -------------------- */

/* Series colour of each bound unit (HW_UNIT_* order). */
static int unit_color(enum hw_unit u)
{
	switch (u) {
	case HW_UNIT_MXU:
		return COL_SERIES + 0;
	case HW_UNIT_VPU:
		return COL_SERIES + 1;
	case HW_UNIT_HBM:
		return COL_SERIES + 2;
	case HW_UNIT_OVERHEAD:
		return COL_SERIES + 3;
	case HW_UNIT_ICI:
		return COL_SERIES + 4;
	default:
		return COL_SERIES + 7;
	}
}

static const enum hw_unit shown_units[] = {HW_UNIT_MXU, HW_UNIT_VPU,
					   HW_UNIT_HBM, HW_UNIT_OVERHEAD,
					   HW_UNIT_ICI};
#define N_SHOWN (int)(sizeof shown_units / sizeof shown_units[0])

static void legend_units(PLINT position)
{
	PLINT bcol[N_SHOWN];
	const char *text[N_SHOWN];
	for (int i = 0; i < N_SHOWN; i++) {
		bcol[i] = unit_color(shown_units[i]);
		text[i] = hw_unit_name(shown_units[i]);
	}
	legend_boxes(N_SHOWN, bcol, text, position, 0.02, 0.02, 0, 0);
}

/* Kernels at (log intensity, log achieved FLOP/s), a disc per kernel whose
 * area is its share of the program time, under the compute roof (the
 * spec's peak) and the bandwidth roof (bytes/s x intensity). */
static void roofline(const struct sim_program *p, const struct hw_spec *hw)
{
	double peak = hw_spec_peak_flops(hw), bw = hw_spec_hbm_bw(hw);
	double total = 0, xlo = 1e9, xhi = -1e9, ylo = 1e9;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		const struct sim_estimate *e = &k->est;
		double bytes = e->bytes_read + e->bytes_written;
		if (!(e->time_ns > 0) || !(e->flops > 0) || !(bytes > 0))
			continue;
		total += e->time_ns * k->multiplicity;
		double x = log10(e->flops / bytes);
		double y = log10(e->flops / (e->time_ns * 1e-9));
		xlo = fmin(xlo, x);
		xhi = fmax(xhi, x);
		ylo = fmin(ylo, y);
	}
	double ridge = log10(peak / bw);
	xlo = floor(fmin(xlo, ridge - 1) - 0.5);
	xhi = ceil(fmax(xhi, ridge + 1) + 0.5);
	ylo = floor(fmin(ylo, log10(bw) + xlo) - 0.5);
	double yhi = ceil(log10(peak) + 0.5);
	pl.pladv(0);
	pl.plvpor(0.15, 0.97, 0.12, 0.90);
	pl.plwind(xlo, xhi, ylo, yhi);
	pl.plcol0(COL_GRID);
	pl.plbox("g", 1, 0, "g", 1, 0);
	double rx[3] = {xlo, ridge, xhi};
	double ry[3] = {log10(bw) + xlo, log10(peak), log10(peak)};
	pl.plcol0(COL_FG);
	pl.plwidth(2);
	pl.plline(3, rx, ry);
	pl.plwidth(1);
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		const struct sim_estimate *e = &k->est;
		double bytes = e->bytes_read + e->bytes_written;
		if (!(e->time_ns > 0) || !(e->flops > 0) || !(bytes > 0))
			continue;
		double share = e->time_ns * k->multiplicity / total;
		double x = log10(e->flops / bytes);
		double y = log10(e->flops / (e->time_ns * 1e-9));
		pl.plcol0(unit_color(e->bound));
		/* character size ~ sqrt(share): disc area ~ share, with a
		 * floor (0.8) so that the smallest kernels stay visible */
		pl.plschr(0, fmax(0.8, 9.0 * sqrt(share)));
		pl.plstring(1, &x, &y, "•");
	}
	pl.plschr(0, 0.75);
	pl.plcol0(COL_FG);
	pl.plbox("bcnstl", 0, 0, "bcnstvl", 0, 0);
	pl.pllab("arithmetic intensity (FLOP per HBM byte)", "achieved FLOP/s",
	      "roofline: disc area ~ time share, colour = bound unit");
	/* above the roofs is always empty: the legend goes there */
	legend_units(PL_POSITION_INSIDE | PL_POSITION_TOP | PL_POSITION_LEFT);
}

/* The unit a time axis up to hi_ns reads best in (its numbers below
 * 1000 where they can be): its name and its size in ns. */
static double time_unit(double hi_ns, const char **name)
{
	*name = hi_ns >= 1e9 ? "s" : hi_ns >= 1e6 ? "ms" : "us";
	return hi_ns >= 1e9 ? 1e9 : hi_ns >= 1e6 ? 1e6 : 1e3;
}

/* Bars: the program's time attributed to each bound unit (what each
 * kernel adds to it, async overlap taken off). */
static void unit_bars(const struct sim_program *p)
{
	double t[HW_UNIT_COUNT] = {0}, hi = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		if ((int)k->est.bound >= 0 && k->est.bound < HW_UNIT_COUNT)
			t[k->est.bound] += sim_kernel_exposed_ns(p, i);
	}
	for (int u = 0; u < N_SHOWN; u++)
		hi = fmax(hi, t[shown_units[u]]);
	const char *un;
	double scale = time_unit(hi, &un);
	for (int u = 0; u < HW_UNIT_COUNT; u++)
		t[u] /= scale;
	hi /= scale;
	pl.pladv(0);
	pl.plvpor(0.15, 0.95, 0.12, 0.90);
	pl.plwind(0, N_SHOWN, 0, hi > 0 ? hi * 1.1 : 1);
	pl.plcol0(COL_GRID);
	pl.plbox("", 0, 0, "g", 0, 0);
	for (int u = 0; u < N_SHOWN; u++) {
		double x0 = u + 0.15, x1 = u + 0.85, v = t[shown_units[u]];
		double bx[4] = {x0, x1, x1, x0}, by[4] = {0, 0, v, v};
		pl.plcol0(unit_color(shown_units[u]));
		pl.plfill(4, bx, by);
		pl.plcol0(COL_FG);
		pl.plmtex("b", 1.2, (u + 0.5) / N_SHOWN, 0.5,
		       hw_unit_name(shown_units[u]));
	}
	pl.plcol0(COL_FG);
	pl.plbox("bc", 0, 0, "bcnstv", 0, 0);
	char axis[32];
	snprintf(axis, sizeof axis, "time (%s)", un);
	pl.pllab("", axis, "program time by the unit that bounds each kernel");
}

int cmd_plot_run(const struct cmd_ctx *ctx, const char *dir,
		 const struct sim_program *progs, int n_progs,
		 const struct hw_spec *hw)
{
	int rc = CMD_EXIT_OK;
	for (int m = 0; m < n_progs && rc == CMD_EXIT_OK; m++) {
		char name[256], path[PATH_CAP], tmp[PATH_CAP + 8];
		module_picture(name, "run", progs[m].module->name);
		rc = begin(ctx, dir, name, path, tmp, 1500, 600);
		if (rc != CMD_EXIT_OK)
			return rc;
		pl.plssub(2, 1);
		pl.plschr(0, 0.75);
		roofline(&progs[m], hw);
		unit_bars(&progs[m]);
		rc = end(ctx, tmp, path);
	}
	return rc;
}

/* ---- whatif --plots: time over the swept fields ------------------------------ */

/* One sweep: a stacked bar per value, the program time split by the unit
 * that bounds each kernel. */
static void sweep_bars(const struct cmd_whatif_plot *w)
{
	double hi = 0;
	for (int i = 0; i < w->n_points; i++) {
		double s = 0;
		for (int u = 0; u < N_SHOWN; u++)
			s += w->by_unit[i * HW_UNIT_COUNT + shown_units[u]];
		hi = fmax(hi, s);
	}
	const char *un;
	double scale = time_unit(hi, &un);
	pl.pladv(0);
	pl.plvpor(0.12, 0.80, 0.14, 0.90);
	pl.plwind(0, w->n_points, 0, hi > 0 ? hi * 1.05 / scale : 1);
	pl.plcol0(COL_GRID);
	pl.plbox("", 0, 0, "g", 0, 0);
	for (int i = 0; i < w->n_points; i++) {
		double y0 = 0;
		for (int u = 0; u < N_SHOWN; u++) {
			double v = w->by_unit[i * HW_UNIT_COUNT + shown_units[u]] /
				   scale;
			if (!(v > 0))
				continue;
			double bx[4] = {i + 0.15, i + 0.85, i + 0.85, i + 0.15};
			double by[4] = {y0, y0, y0 + v, y0 + v};
			pl.plcol0(unit_color(shown_units[u]));
			pl.plfill(4, bx, by);
			y0 += v;
		}
		pl.plcol0(COL_FG);
		pl.plmtex("b", 1.2, (i + 0.5) / w->n_points, 0.5,
			  w->labels[0][i]);
	}
	pl.plcol0(COL_FG);
	pl.plbox("bc", 0, 0, "bcnstv", 0, 0);
	char axis[32];
	snprintf(axis, sizeof axis, "program time (%s)", un);
	pl.pllab(w->names[0], axis,
	      "program time by the unit that bounds each kernel");
	legend_units(PL_POSITION_OUTSIDE | PL_POSITION_RIGHT);
}

/* Two sweeps: a heat map of program time, each cell labelled. */
static void sweep_heat(const struct cmd_whatif_plot *w)
{
	int nx = w->n[0], ny = w->n[1];
	double lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < w->n_points; i++) {
		lo = fmin(lo, w->time[i]);
		hi = fmax(hi, w->time[i]);
	}
	/* light (fast) to dark (slow) */
	PLFLT pos[2] = {0, 1}, r[2] = {1, 0.05}, g[2] = {0.96, 0.25},
	      b[2] = {0.85, 0.45};
	pl.plscmap1n(256);
	pl.plscmap1l(1, 2, pos, r, g, b, NULL);
	pl.pladv(0);
	pl.plvpor(0.18, 0.95, 0.14, 0.90);
	pl.plwind(0, nx, 0, ny);
	for (int i = 0; i < nx; i++)
		for (int j = 0; j < ny; j++) {
			double t = w->time[i * ny + j];
			double f = hi > lo ? (t - lo) / (hi - lo) : 0;
			double bx[4] = {i, i + 1, i + 1, i};
			double by[4] = {j, j, j + 1, j + 1};
			pl.plcol1(f);
			pl.plfill(4, bx, by);
			char label[32];
			const char *un;
			double scale = time_unit(hi, &un);
			snprintf(label, sizeof label, "%.4g %s", t / scale, un);
			pl.plcol0(f > 0.55 ? COL_BG : COL_FG);
			pl.plptex(i + 0.5, j + 0.5, 1, 0, 0.5, label);
		}
	pl.plcol0(COL_FG);
	for (int i = 0; i < nx; i++)
		pl.plmtex("b", 1.2, (i + 0.5) / nx, 0.5, w->labels[0][i]);
	for (int j = 0; j < ny; j++)
		pl.plmtex("lv", 0.8, (j + 0.5) / ny, 1.0, w->labels[1][j]);
	pl.plbox("bc", 0, 0, "bc", 0, 0);
	pl.pllab("", "", "program time over the grid (darker: slower)");
	pl.plmtex("b", 3.0, 0.5, 0.5, w->names[0]);
	pl.plmtex("l", 8.5, 0.5, 0.5, w->names[1]);
}

int cmd_plot_whatif(const struct cmd_ctx *ctx, const char *dir,
		    const struct cmd_whatif_plot *w)
{
	if (w->n_sweeps > 2) {
		fprintf(ctx->err, "%s: note: no picture of a grid of %d sweeps "
				  "(one or two)\n",
			ctx->prog, w->n_sweeps);
		return CMD_EXIT_OK;
	}
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	int rc = begin(ctx, dir, cmd_plot_whatif_files[0], path, tmp,
		       w->n_sweeps == 1 ? 1000 : 1100, 620);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plschr(0, 0.8);
	if (w->n_sweeps == 1)
		sweep_bars(w);
	else
		sweep_heat(w);
	return end(ctx, tmp, path);
}

/* ---- run with several --hw: generations side by side ------------------------- */

int cmd_plot_generations(const struct cmd_ctx *ctx, const char *dir,
			 const char *module, int n_hw, const char *const *names,
			 const double *by_kind)
{
	/* the kinds with time on some spec */
	int kinds[SIM_KERNEL_KIND_COUNT], nk = 0;
	double hi = 0;
	for (int k = 0; k < SIM_KERNEL_KIND_COUNT; k++) {
		bool any = false;
		for (int g = 0; g < n_hw; g++) {
			double v = by_kind[g * SIM_KERNEL_KIND_COUNT + k];
			any |= v > 0;
			hi = fmax(hi, v);
		}
		if (any)
			kinds[nk++] = k;
	}
	if (nk == 0)
		return CMD_EXIT_OK;
	char name[256], path[PATH_CAP], tmp[PATH_CAP + 8];
	module_picture(name, "generations", module);
	int rc = begin(ctx, dir, name, path, tmp, 300 + 160 * nk, 600);
	if (rc != CMD_EXIT_OK)
		return rc;
	pl.plschr(0, 0.8);
	pl.pladv(0);
	pl.plvpor(0.10, 0.80, 0.12, 0.90);
	const char *un;
	double scale = time_unit(hi, &un);
	pl.plwind(0, nk, 0, hi * 1.1 / scale);
	pl.plcol0(COL_GRID);
	pl.plbox("", 0, 0, "g", 0, 0);
	double w = 0.8 / n_hw;
	for (int i = 0; i < nk; i++) {
		for (int g = 0; g < n_hw; g++) {
			double v = by_kind[g * SIM_KERNEL_KIND_COUNT + kinds[i]] /
				   scale;
			double x0 = i + 0.1 + g * w, x1 = x0 + w * 0.95;
			double bx[4] = {x0, x1, x1, x0}, by[4] = {0, 0, v, v};
			pl.plcol0(COL_SERIES + g % N_SERIES);
			pl.plfill(4, bx, by);
		}
		pl.plcol0(COL_FG);
		pl.plmtex("b", 1.2, (i + 0.5) / nk, 0.5,
		       sim_kernel_kind_name((enum sim_kernel_kind)kinds[i]));
	}
	pl.plcol0(COL_FG);
	pl.plbox("bc", 0, 0, "bcnstv", 0, 0);
	char axis[32];
	snprintf(axis, sizeof axis, "time x runs (%s)", un);
	pl.pllab("kernel kind", axis,
	      "program time by kernel kind on each spec");
	PLINT bcol[CMD_MAX_HW];
	for (int g = 0; g < n_hw; g++)
		bcol[g] = COL_SERIES + g % N_SERIES;
	legend_boxes(n_hw, bcol, names, PL_POSITION_OUTSIDE | PL_POSITION_RIGHT,
		     0.02, 0, 0, 0);
	return end(ctx, tmp, path);
}
