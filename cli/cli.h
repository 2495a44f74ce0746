/*
 * cli.h: the tpusim command line. Exit codes, the command table entry
 * (struct cmd), the context main hands every command, and the output layer
 * (cmd_table_*, cmd_report_*) that writes results as an aligned text table,
 * CSV, JSON or YAML. docs/STYLE.md "CLI" is the governing note.
 *
 * Adding a command (the way git's builtin.h explains it):
 *
 *   1. Write cli/cmd_NAME.c. Side by side in that one file go:
 *        struct NAME_opts             the command's options, zeroed by main;
 *        static const struct option NAME_options[]
 *                                     its long options, {0}-terminated; the
 *                                     val of each is the id parse_opt gets
 *                                     (use values from CMD_OPT_OWN up, or a
 *                                     character listed in .short_opts);
 *        static int NAME_parse_opt()  stores one option, returns CMD_EXIT_OK
 *                                     or prints why and returns CMD_EXIT_USAGE;
 *        static void NAME_help()      the description and option list;
 *        static int NAME_main()       the command itself;
 *      and at the end
 *        const struct cmd cmd_NAME = { .name = "NAME", ... };
 *      --help/-h, and --hw and --format where .flags asks for them, are
 *      parsed by main (the command never sees them).
 *   2. Add X(NAME) to CMD_LIST below. That one line declares cmd_NAME, puts
 *      it in main's dispatch table and in the generated top-level help.
 *
 * Results go to ctx->out (stdout), diagnostics to stderr through
 * ts_diag_print() or cmd_error(). main checks stdout's flush and close and
 * turns a write error into CMD_EXIT_IO.
 */
#ifndef CLI_H
#define CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <yaml.h>

#include "val.h"

/* Commands defined in their own cli/cmd_*.c files, in help order. */
#define CMD_LIST(X) \
	X(run) X(tile) X(fuse) X(whatif) X(validate) X(calibrate) X(train) \
	X(compare) X(autotune)

/* ---- exit codes ----------------------------------------------------------- */

/* What `tpusim` returns; printed in every help text. */
enum cmd_exit {
	CMD_EXIT_OK = 0,    /* success */
	CMD_EXIT_INPUT = 1, /* bad input: malformed HLO, YAML or CSV, a name
	                       not in the input, an infeasible tile config */
	CMD_EXIT_USAGE = 2, /* usage: unknown command or option, missing or
	                       malformed argument */
	CMD_EXIT_IO = 3,    /* a file cannot be read or written (stdout
	                       included), out of memory, internal error */
};

/* The exit code for a library status: parse/spec/unsupported/infeasible
 * are bad input (1), misuse is a usage error (2), I/O and out of memory 3. */
enum cmd_exit cmd_exit_from_status(enum ts_status s);

/* ---- output formats ------------------------------------------------------- */

enum cmd_format {
	CMD_FORMAT_TABLE = 0, /* aligned columns, human units (the default) */
	CMD_FORMAT_CSV,       /* one header row, raw numbers, RFC 4180 quoting */
	CMD_FORMAT_JSON,      /* one JSON object (libyaml emitter, flow style) */
	CMD_FORMAT_YAML,      /* one YAML document (libyaml emitter, block style) */
	CMD_FORMAT_COUNT
};
const char *cmd_format_name(enum cmd_format f); /* "table", "csv", ... */
/* Looks a --format value up; false when it names no format. */
bool cmd_format_parse(const char *s, enum cmd_format *out);

/* ---- the command table ---------------------------------------------------- */

/* struct cmd.flags: setup main does before the command runs (git RUN_SETUP). */
enum {
	CMD_NEEDS_HW = 1u << 0,    /* --hw SPEC.yaml is required; main loads and
	                              validates it into ctx->hw */
	CMD_HAS_FORMAT = 1u << 1,  /* accepts -f/--format FMT into ctx->format */
	CMD_MULTI_HW = 1u << 2,    /* --hw may repeat: ctx->hw is the first,
	                              ctx->more_hw the others (generations
	                              side by side), --set applied to each */
	CMD_HW_OPTIONAL = 1u << 3, /* with CMD_NEEDS_HW: --hw may be left out
	                              (ctx->hw_path NULL); the command says
	                              which of its modes need it */
	CMD_TRAINS = 1u << 4,      /* trains or fits models (train, compare,
	                              autotune's online fit): OpenBLAS pinned
	                              to one kernel set (main.c pin_blas) */
	CMD_HAS_SLICE = 1u << 5,   /* accepts --topology SHAPE, --slices N and
	                              --devices FILE into ctx->slice; with
	                              CMD_NEEDS_HW main checks it against every
	                              spec and sets their slice */
};

#define CMD_MAX_HW 8 /* --hw options of a CMD_MULTI_HW command */

/* Option ids: main's own (below) and a command's first free id. */
enum {
	CMD_OPT_HW = 0x10000,      /* --hw */
	CMD_OPT_SET,               /* --set PATH=VALUE (with --hw) */
	CMD_OPT_GEN,               /* --gen LIST (CMD_MULTI_HW) */
	CMD_OPT_HW_DIR,            /* --hw-dir DIR for --gen (CMD_MULTI_HW) */
	CMD_OPT_TOPOLOGY,          /* --topology SHAPE (CMD_HAS_SLICE) */
	CMD_OPT_SLICES,            /* --slices N (CMD_HAS_SLICE) */
	CMD_OPT_DEVICES,           /* --devices FILE (CMD_HAS_SLICE) */
	CMD_OPT_FORMAT = 'f',      /* -f, --format */
	CMD_OPT_HELP = 'h',        /* -h, --help */
	CMD_OPT_OWN = 0x100,       /* first id for a command's long options */
};

/* What main hands a command. */
struct cmd_ctx {
	const char *prog;          /* "tpusim run", prefix for messages */
	FILE *out;                 /* results: stdout */
	FILE *err;                 /* diagnostics: stderr */
	const char *hw_path;       /* --hw as given; NULL if absent */
	const char *hw_opt;        /* the option that named the specs: "--hw"
	                              or "--gen" */
	struct hw_spec hw;         /* loaded and validated (CMD_NEEDS_HW), with
	                              the --set changes applied */
	char hw_set[512];          /* the --set changes, "PATH=VALUE, ..."
	                              ("" none), for reports */
	int n_more_hw;             /* CMD_MULTI_HW: further --hw specs */
	struct hw_spec more_hw[CMD_MAX_HW - 1];
	const char *more_hw_path[CMD_MAX_HW - 1]; /* their files */
	enum cmd_format format;    /* --format; CMD_FORMAT_TABLE by default */
	struct hw_slice slice;     /* --topology, --slices and --devices
	                              (CMD_HAS_SLICE); n_dims 0: not given */
	struct ts_arena arena;     /* what main loads for the command (the
	                              --devices table), freed after it */
};

struct cmd {
	const char *name;          /* as typed: "run" */
	const char *summary;       /* one line for the top-level help */
	const char *synopsis;      /* after "usage: tpusim NAME ": "GRAPH.hlo ..." */
	unsigned flags;            /* CMD_NEEDS_HW | CMD_HAS_FORMAT */
	const struct option *options; /* own long options, {0}-terminated; NULL: none */
	const char *short_opts;    /* own short options in getopt syntax; NULL: none */
	const char *repeatable;    /* long options that may be given more than
	                              once, space-separated ("data fit");
	                              repeating any other is a usage error */
	size_t opts_size;          /* bytes of the options struct main zeroes */
	/* Stores option `id` (its argument in arg, NULL for flags). */
	int (*parse_opt)(const struct cmd_ctx *ctx, void *opts, int id,
			 const char *arg);
	void (*help)(FILE *out);   /* description and own options */
	int min_args, max_args;    /* positional arguments; max -1: no limit */
	/* Runs with the positional arguments only; returns an enum cmd_exit. */
	int (*fn)(struct cmd_ctx *ctx, void *opts, int argc, char **argv);
};

#define X(n) extern const struct cmd cmd_##n;
CMD_LIST(X)
#undef X

/* ---- small helpers shared by commands ------------------------------------- */

/* Prints "<prog>: error: <message>\n" to ctx->err. */
void cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints d, with the caret line taken from src when d has none of its own
 * and d names file `src_file` (pass NULL src when there is no text); a d
 * that names no file (nor src_file) as cmd_error does. */
void cmd_diag(const struct cmd_ctx *ctx, struct ts_diag *d,
	      const char *src_file, const char *src, size_t src_len);
/* The spec field at path; when there is none, prints "<prog>: error: <opt>
 * '<path>' is not a numeric spec field; the fields: ..." (every field, as
 * --set, --sweep and --fit take them) and returns NULL. */
const struct hw_field_info *cmd_spec_field(const struct cmd_ctx *ctx,
					   const char *opt, const char *path);
/* The spec field of an option's "PATH=..." argument, *value pointing past
 * the '='; without a '=' prints "<prog>: error: <opt> <arg>: expected
 * <form>", with an unknown PATH cmd_spec_field's error, and returns
 * NULL. */
const struct hw_field_info *cmd_spec_assignment(const struct cmd_ctx *ctx,
						const char *opt,
						const char *arg,
						const char *form,
						const char **value);
/* Parses a whole decimal integer in [lo, hi]; false on anything else. */
bool cmd_parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Loads and validates the spec at `path` into hw; a failure is printed
 * with the YAML line under it. Returns an enum cmd_exit. */
int cmd_load_spec(const struct cmd_ctx *ctx, const char *path,
		  struct hw_spec *hw);

/* A fusion policy as `run --fusion` and `fuse --policy` take it: "xla"
 * (cost NULL), "analytic" (the model on hw) or "hybrid" (with a learned
 * model: --model, or the shipped one). */
struct cmd_fusion {
	const char *name;
	struct hyb_fuse_cost cost;
	const struct hyb_fuse_cost *use; /* &cost, or NULL for xla */
	struct gnn_model model;          /* hybrid only */
	struct hyb_fuse_ctx hyb;
};
/* Sets f for policy `name` on hw (model_path: the hybrid's model, NULL:
 * "default"); prints what is wrong and returns an enum cmd_exit. */
int cmd_fusion_init(const struct cmd_ctx *ctx, const char *name,
		    const char *model_path, const struct hw_spec *hw,
		    struct cmd_fusion *f);
void cmd_fusion_free(struct cmd_fusion *f);

/* An HLO file as `run` and `tile` use it: the text (kept for carets), its
 * modules and one kernel program per selected module. */
struct cmd_graph {
	char *text;                   /* file text, NUL-terminated (ts_malloc'd) */
	struct ir_module **mods;      /* every module of the file */
	int n_mods;
	struct sim_program *progs;    /* one per selected module, file order */
	struct sim_fusion_plan *plans; /* the fusion decisions of each
	                                  (cmd_graph_load's fusion) */
	int n_progs;
};

/*
 * Parses `path` ("-": standard input) and builds the programs of its
 * modules (only the one named `module` when not NULL; with
 * opts->default_trip_count; an unfused module fused by the policy
 * `fusion` decides, NULL: xla), each checked to fit the slice of every
 * spec (sim_program_check_slice). Reports every failure itself (located
 * diagnostics, an unknown --module with the list of modules, loops whose
 * trip count was assumed) and returns an enum cmd_exit. g is always safe
 * to cmd_graph_free().
 */
int cmd_graph_load(const struct cmd_ctx *ctx, const char *path,
		   const char *module, const struct sim_program_opts *opts,
		   const struct hyb_fuse_cost *fusion, struct cmd_graph *g);
void cmd_graph_free(struct cmd_graph *g);
/* Warns on stderr about the kernels of p listed at zero time because the
 * model has no cost for them (custom calls, infeed, ...): their count and
 * the first three names with their op (and custom-call target). */
void cmd_warn_unmodelled(const struct cmd_ctx *ctx,
			 const struct sim_program *p);
/* Warns that the learned time of kernel `kernel` of module `module` is
 * not finite and its analytic time stands in (hyb_kernel_predict); with
 * items (e.g. "configs"), that this happened in n of them. */
void cmd_warn_fell_back(const struct cmd_ctx *ctx, const char *module,
			const char *kernel, int64_t n, const char *items);
/* Warns about each kernel of p (estimated on hw) costed by its roofline
 * because the model has no tile grid for it, with the reason. */
void cmd_warn_untiled(const struct cmd_ctx *ctx, const struct sim_program *p,
		      const struct hw_spec *hw);
/* Warns about each kernel of p with much MXU work that the model (on hw)
 * puts below 5% MXU utilisation (cli/graph.c says why). */
void cmd_warn_low_mxu(const struct cmd_ctx *ctx, const struct sim_program *p,
		      const struct hw_spec *hw);
/* Warns about each kernel of p the model (on hw) puts above 10x its
 * roofline + 5 us, with the term that dominates it (cli/graph.c). */
void cmd_warn_envelope(const struct cmd_ctx *ctx, const struct sim_program *p,
		       const struct hw_spec *hw);

/* ---- measured sets for the learning commands (cli/learn.c) ---------------- */

#define CMD_MAX_SETS 16 /* --data options in one call */
_Static_assert(CMD_MAX_SETS <= GNN_MAX_SETS,
	       "every --data set must fit a model's training summary");

struct cmd_sets {
	int n;
	struct val_dataset sets[CMD_MAX_SETS];
	struct val_specs specs[CMD_MAX_SETS]; /* per set: --hw-dir's specs */
	struct val_learn learn;               /* their training samples */
};

/* Loads the sets in dirs with a spec per row from hw_dir and builds their
 * samples; prints every failure and returns an enum cmd_exit. s is always
 * safe to cmd_sets_free(). */
int cmd_sets_load(const struct cmd_ctx *ctx, const char *const *dirs, int n,
		  const char *hw_dir, struct cmd_sets *s);
void cmd_sets_free(struct cmd_sets *s);
/* The learning commands' options: --data DIR (appended, at most
 * CMD_MAX_SETS), --seed N (1 .. 2^32 - 1), --epochs N (1 .. 100000); each
 * prints what is wrong and returns an enum cmd_exit. */
int cmd_opt_data(const struct cmd_ctx *ctx, const char **dirs, int *n,
		 const char *arg);
int cmd_opt_seed(const struct cmd_ctx *ctx, const char *arg, uint64_t *seed);
int cmd_opt_epochs(const struct cmd_ctx *ctx, const char *arg, int *epochs);
/* Loads --model MODEL ("default": the shipped one); prints a refusal and
 * returns an enum cmd_exit. */
int cmd_load_model(const struct cmd_ctx *ctx, const char *path,
		   struct gnn_model *m);
struct cmd_file;
/* The model file a command reads, as cmd_check_io takes it: --model
 * MODEL ("default": the shipped file), else the shipped one when
 * shipped (the command reads it without --model), else none. */
struct cmd_file cmd_model_file(const char *model, bool shipped);

/* ---- timelines (cli/trace.c) --------------------------------------------- */

/* Writes the programs' schedule (estimated on hw) to path as a Chrome
 * trace (temp file, then rename); prints a failure and returns an enum
 * cmd_exit. cli/trace.c says which tracks and events. */
int cmd_write_trace(const struct cmd_ctx *ctx, const char *path,
		    struct sim_program *progs, int n_progs,
		    const struct hw_spec *hw);

/* ---- pictures (cli/plots.c, PLplot) -------------------------------------- */

/* The files each cmd_plot_NAME below makes in its folder, as a --plots
 * folder's cmd_file.names for cmd_check_io (fnmatch patterns:
 * "run_*.png", NULL-terminated). */
extern const char *const cmd_plot_compare_files[];
extern const char *const cmd_plot_autotune_files[];
extern const char *const cmd_plot_run_files[];
extern const char *const cmd_plot_generations_files[];
extern const char *const cmd_plot_whatif_files[];

/* Writes compare_scatter.png, compare_ape.png and compare_tau.png (tile
 * sets only) into the existing folder dir; returns an enum cmd_exit. */
int cmd_plot_compare(const struct cmd_ctx *ctx, const char *dir,
		     const struct val_compare *c);
/* Writes autotune.png into dir: per set with kernels to tune, the mean
 * slowdown at each budget, a line per strategy used. */
int cmd_plot_autotune(const struct cmd_ctx *ctx, const char *dir,
		      const struct val_tune_set *sets, int n,
		      const struct val_tune_opts *o);

/* ---- autotune live (cli/autotune_live.c) ---------------------------------- */

/* The live mode's own options. */
struct tune_live_opts {
	const char *measure_cmd;  /* --measure-cmd: words, {module} {kernel}
	                             {config} replaced */
	int timeout_s;            /* --measure-timeout (0: 60) */
	const char *record;       /* --record DIR, NULL: none */
};
/* Tunes every tunable kernel of GRAPH on ctx->hw with the user's command
 * (cli/autotune_live.c says how); t's largest budget per kernel and its
 * strategy (analytic or hybrid with model); returns an enum cmd_exit. */
int cmd_autotune_live(struct cmd_ctx *ctx, const char *graph,
		      const struct val_tune_opts *t, const char *model,
		      const struct tune_live_opts *o);

/* Writes run_<module>.png per program into dir: the roofline of its
 * kernels (estimated on hw) and its time by bound unit. A module name is
 * kept to [A-Za-z0-9._-] (others become _), and a name this process has
 * already written gets _2, _3, ... (several inputs with one module name). */
int cmd_plot_run(const struct cmd_ctx *ctx, const char *dir,
		 const struct sim_program *progs, int n_progs,
		 const struct hw_spec *hw);

/* Writes generations_<module>.png into dir: grouped bars of the program
 * time by kernel kind, one bar per spec; by_kind: n_hw x
 * SIM_KERNEL_KIND_COUNT times (ns, time x runs). */
int cmd_plot_generations(const struct cmd_ctx *ctx, const char *dir,
			 const char *module, int n_hw, const char *const *names,
			 const double *by_kind);

/* The points of a whatif grid, for its picture. */
struct cmd_whatif_plot {
	int n_sweeps;             /* 1 or 2 are drawn */
	const char *names[2];     /* the swept fields */
	int n[2];                 /* values per sweep */
	char labels[2][64][32];   /* each value as the axis shows it */
	int n_points;             /* the grid, first sweep outermost */
	const double *time;       /* n_points: program time, ns */
	const double *by_unit;    /* n_points x HW_UNIT_COUNT: time of the
	                             kernels each unit bounds, ns */
};
/* Writes whatif.png into dir: one sweep as stacked bars by bound unit,
 * two as a heat map of program time (more: a note, no picture). */
int cmd_plot_whatif(const struct cmd_ctx *ctx, const char *dir,
		    const struct cmd_whatif_plot *w);

/* ---- tables (cli/report.c) ------------------------------------------------ */

/* How a column's numbers are shown. Tables use human units; CSV, JSON and
 * YAML get the raw value in the base unit with the fixed format shown. */
enum cmd_unit {
	CMD_UNIT_TEXT = 0,  /* a string */
	CMD_UNIT_INT,       /* whole count: table and raw "%.0f" */
	CMD_UNIT_REAL,      /* plain real: table "%.3g", raw "%.6g" */
	CMD_UNIT_EXACT,     /* a value a user gave (a swept spec field): table
	                       "%.4g", raw the shortest "%.Ng" that reads back
	                       to the same double */
	CMD_UNIT_SI,        /* large count (FLOPs): table "1.23 G", raw "%.0f" */
	CMD_UNIT_CYCLES,    /* cycles: table "1.23 M", raw "%.1f" */
	CMD_UNIT_BYTES,     /* bytes: table "1.23 MB" (SI), raw "%.0f" */
	CMD_UNIT_TIME_NS,   /* nanoseconds: table "45.6 us", raw "%.3f" ns */
	CMD_UNIT_FRACTION,  /* 0..1: table "12.3%", raw "%.6f" */
	CMD_UNIT_COUNT
};

/* struct cmd_col.flags */
enum {
	CMD_COL_NO_TABLE = 1u << 0, /* left out of the text table (too wide) */
	CMD_COL_CSV_ONLY = 1u << 1, /* only in CSV, where it stands in for the
	                               nesting JSON/YAML have (e.g. module) */
};

struct cmd_col {
	const char *key;           /* CSV header, JSON/YAML key: "time_ns" */
	const char *title;         /* text-table header: "time" */
	enum cmd_unit unit;
	unsigned flags;            /* CMD_COL_* */
};

/* One cell; absent cells print "-" in tables, nothing in CSV, null in JSON
 * and YAML. Text is copied into the table. */
struct cmd_cell {
	bool present;
	const char *text;          /* CMD_UNIT_TEXT columns */
	double num;                /* the other units, in the base unit */
};

/*
 * A table: fixed columns, rows appended one by one, and an optional footer
 * row (a total) printed under a rule in text, as its own object `footer_key`
 * in JSON/YAML and not at all in CSV (where it would be summed twice).
 */
struct cmd_table {
	const char *key;           /* JSON/YAML key of the row list: "kernels" */
	const char *footer_key;    /* JSON/YAML key of the footer: "total" */
	int n_cols;
	const struct cmd_col *cols;/* n_cols entries, not owned */
	int n_rows;                /* body rows */
	size_t cap_rows;           /* rows allocated in cells */
	struct cmd_cell *cells;    /* (n_rows + 1) x n_cols: body then footer */
	bool has_footer;
	struct ts_arena text;      /* copies of text cells */
};

void cmd_table_init(struct cmd_table *t, const char *key,
		    const char *footer_key, const struct cmd_col *cols,
		    int n_cols);
void cmd_table_free(struct cmd_table *t);
/* Appends an empty row; later set calls fill it. TS_ERR_NOMEM on failure. */
enum ts_status cmd_table_add_row(struct cmd_table *t);
/* Starts the footer row; later set calls fill it. TS_ERR_NOMEM on failure
 * (the table then has no footer and set calls fill nothing). */
enum ts_status cmd_table_begin_footer(struct cmd_table *t);
/* Fill column `col` of the current (last added, or footer) row. */
enum ts_status cmd_table_set_text(struct cmd_table *t, int col,
				  const char *text);
/* A NaN or infinite v leaves the cell empty (CSV "", JSON null). */
void cmd_table_set_num(struct cmd_table *t, int col, double v);

/* ---- reports (cli/report.c) ----------------------------------------------- */

/*
 * A report is a tree of fields, lists of items and tables, written in one
 * of the four formats as it is built:
 *   text   fields as "key: value" lines, tables aligned, items separated
 *          by a blank line;
 *   CSV    only table rows: the header once (every table of a report must
 *          have the same columns), fields and footers left out;
 *   JSON   one object; fields are members, a list is an array of objects,
 *          a table an array of row objects (plus its footer object);
 *   YAML   the same tree in block style, strings quoted.
 * Calls after an error do nothing; cmd_report_end() returns the first error
 * (TS_ERR_IO on a write failure) and fills d: d->msg says what failed
 * (print it with cmd_error), d->file is "tpusim" and there is no line.
 */
struct cmd_report {
	enum cmd_format format;
	FILE *out;
	yaml_emitter_t emitter;    /* JSON and YAML only */
	bool emitter_open;         /* emitter initialised (freed by end) */
	bool csv_header_done;      /* CSV header printed */
	enum ts_status status;     /* first error, TS_OK so far */
	char err_msg[TS_DIAG_MSG_MAX]; /* its description */
};

void cmd_report_begin(struct cmd_report *r, enum cmd_format f, FILE *out);
void cmd_report_text(struct cmd_report *r, const char *key,
		     const char *value);
void cmd_report_num(struct cmd_report *r, const char *key,
		    enum cmd_unit unit, double v);
void cmd_report_list_begin(struct cmd_report *r, const char *key);
void cmd_report_list_end(struct cmd_report *r);
/* A nested mapping under key (JSON/YAML; tables and CSV ignore it and
 * print its fields as they come). */
void cmd_report_map_begin(struct cmd_report *r, const char *key);
void cmd_report_map_end(struct cmd_report *r);
void cmd_report_item_begin(struct cmd_report *r);
void cmd_report_item_end(struct cmd_report *r);
void cmd_report_table(struct cmd_report *r, const struct cmd_table *t);
enum ts_status cmd_report_end(struct cmd_report *r, struct ts_diag *d);
/* Ends r and turns what went wrong into an exit code, printed with
 * cmd_error: built, the status of building its content (not TS_OK: "out
 * of memory building the report", CMD_EXIT_IO), else cmd_report_end's
 * error; CMD_EXIT_OK when both are fine. */
int cmd_report_finish(const struct cmd_ctx *ctx, struct cmd_report *r,
		      enum ts_status built);

/* Writes a file atomically (ts_write_file_atomic) with write_fn; on failure
 * prints "<path>: error: cannot write: ..." (or the writer's own message)
 * and returns the exit code; CMD_EXIT_OK otherwise. */
int cmd_write_file(const struct cmd_ctx *ctx, const char *path,
		   enum ts_status (*write_fn)(FILE *f, void *arg), void *arg);
/* Makes the output folder dir of option opt (--plots, --trace): an
 * existing folder is fine, an existing file is not; prints a failure and
 * returns an enum cmd_exit. */
int cmd_out_dir(const struct cmd_ctx *ctx, const char *opt, const char *dir);
/* A file, or a folder's files, that a command reads or writes, by the
 * option that names it. */
struct cmd_file {
	const char *opt;  /* "-o", "--data", "the input", ... */
	const char *path; /* the file, or with names the folder; NULL or
	                     "-": none */
	const char *const *names; /* NULL (CMD_FILE): path is the file; else
	                             the files in the folder, as fnmatch(3)
	                             patterns ("whatif.png", "point_*.json"),
	                             NULL-terminated */
};
/* cmd_file.names: a plain file; a measurement set folder (its
 * measurements.csv and details.csv); a folder of specs (--hw-dir: its
 * *.yaml). */
#define CMD_FILE NULL
#define CMD_FILE_SET cmd_set_files
#define CMD_FILE_SPECS cmd_spec_files
extern const char *const cmd_set_files[];
extern const char *const cmd_spec_files[];
/* A command's files: what it writes (files and folders), what it reads
 * by option, the measurement sets of its --data and its positional inputs
 * ("the input"; a folder among them is read as the files arg_names, NULL:
 * not at all); NULL or "-" paths are none. The specs main loaded (--hw,
 * --gen: ctx) are inputs too, unless hw_rewritten (calibrate -o, which
 * may rewrite its --hw spec in place). */
struct cmd_io {
	const struct cmd_file *outs;
	int n_outs;
	const struct cmd_file *ins;
	int n_ins;
	const char *const *sets;
	int n_sets;
	char *const *args;
	int n_args;
	const char *const *arg_names;
	bool hw_rewritten;
};
/* Before anything is read or written: refuses an output that names the
 * same file (ts_same_file) as an input or as another output ("OPT and
 * OPT name the same file: PATH"), a folder's files by their names (a
 * pattern such as run_*.png stands for every file it matches, written or
 * not), and a set given twice under any name (its rows would count
 * twice); CMD_EXIT_USAGE, else CMD_EXIT_OK. */
int cmd_check_io(const struct cmd_ctx *ctx, const struct cmd_io *io);

/* A write_fn for cmd_write_file: the struct cmd_table *t as CSV (--csv). */
enum ts_status cmd_table_write_csv(FILE *f, void *t);

#endif /* CLI_H */
