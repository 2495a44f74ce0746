/*
 * val.h: measured datasets (val_dataset_*), accuracy metrics (val_metric_*)
 * and comparison reports (val_report_*). See validation/README.md.
 * A dataset folder is the format of shared/data/README.md: measurements.csv
 * plus modules/<id>.hlo. A report costs every row with the analytic model and
 * two baselines (roofline, "fewer tile steps is faster") and summarises the
 * errors per kernel or op family and per set.
 */
#ifndef VAL_H
#define VAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hybrid.h"

/* ---- datasets (val_dataset.c) -------------------------------------------- */

/* How a runtime was timed (measurements.csv `timing`). */
enum val_timing {
	VAL_TIMING_DEVICE = 0, /* profiler device time, no dispatch */
	VAL_TIMING_HOST,       /* host wall clock including dispatch */
	VAL_TIMING_COUNT
};
const char *val_timing_name(enum val_timing t); /* "device", "host" */

/* The columns of measurements.csv; a file may list them in any order. */
enum val_col {
	VAL_COL_ID = 0,
	VAL_COL_MODULE,
	VAL_COL_HW,
	VAL_COL_CONFIG,
	VAL_COL_RUNTIME_NS,
	VAL_COL_RUNTIME_MIN_NS,
	VAL_COL_REPEATS,
	VAL_COL_TIMING,
	VAL_COL_SOURCE,
	VAL_COL_COUNT
};
/* Their names, in the order a new file lists them. */
extern const char *const val_set_columns[VAL_COL_COUNT];
/* Columns a set may add after them: the slice a row ran on
 * (docs/MODEL.md "Collectives on a slice"). */
enum val_opt_col {
	VAL_OPT_TOPOLOGY = 0,
	VAL_OPT_SLICES,
	VAL_OPT_DEVICES, /* the compile's device order (val_devices_parse) */
	VAL_OPT_SET,     /* spec fields the run changed (its compile flags) */
	VAL_OPT_COUNT
};
extern const char *const val_set_opt_columns[VAL_OPT_COUNT];

#define VAL_MAX_ROW_SETS 8 /* spec fields one row's set may change */

/* One measurement: a row of measurements.csv. Strings live in the dataset's
 * arena. */
struct val_row {
	const char *id;           /* unique row id */
	const char *module;       /* module path relative to the set folder */
	const char *hw;           /* "tpu-v3", "tpu-v4", ... */
	const char *config;       /* tile config text, "" when none */
	struct sim_tile_config cfg; /* config parsed (n_out == 0: default) */
	int64_t runtime_ns;       /* measured mean runtime, ns (> 0) */
	int64_t runtime_min_ns;   /* fastest repetition, ns; -1 unknown */
	int64_t repeats;          /* timed repetitions; -1 unknown */
	enum val_timing timing;
	const char *source;       /* pointer to the raw row */
	int i_module;             /* index into val_dataset.modules */
	uint32_t line;            /* 1-based line of the row in measurements.csv */
	uint32_t config_col;      /* 1-based column of the config field */
	uint32_t hw_col;          /* 1-based column of the hw field */
	int64_t overhead_ns;      /* host dispatch overhead the set records
	                             for this row (details.csv overhead_ns),
	                             ns; -1 when not recorded */
	struct hw_slice slice;    /* its topology (16x16) and slices (empty:
	                             1) columns; n_dims 0: none given */
	uint32_t topology_col;    /* 1-based column of the topology field
	                             (0: the set has none) */
	const char *devices;      /* its devices field: the file of its
	                             compile's device order, relative to the
	                             set folder (loaded into slice.at); NULL:
	                             none */
	uint32_t devices_col;     /* 1-based column of the devices field */
	/* its set field: spec fields its run changed, "PATH=VALUE ..." as
	 * tpusim run --set takes them (a step's scoped VMEM limit), applied
	 * to its spec with hw_spec_apply's checks when it is costed */
	const char *set;          /* the field as written, "" when none */
	int n_sets;
	const struct hw_field_info *set_field[VAL_MAX_ROW_SETS];
	double set_value[VAL_MAX_ROW_SETS];
	const char *set_text[VAL_MAX_ROW_SETS]; /* each value as written */
	uint32_t set_col;         /* 1-based column of the set field */
};

/* One distinct module file; several rows may share it (tile configs). */
struct val_module {
	const char *path;         /* as written in the csv (arena) */
	const char *full_path;    /* set folder + "/" + path (arena) */
	const char *name;         /* file name without folder and ".hlo" (arena) */
	int n_rows;               /* rows measuring this module */
	int first_row;            /* index of its first row */
};

struct val_dataset {
	struct ts_arena arena;    /* owns every string and array below */
	const char *dir;          /* set folder as given (arena) */
	const char *name;         /* last component of dir (arena) */
	const char *csv_path;     /* dir/measurements.csv; diagnostics point here */
	char *csv_text;           /* the csv (ts_malloc'd), for diagnostic carets */
	size_t csv_len;           /* bytes in csv_text */
	int n_rows;
	struct val_row *rows;     /* in file order (arena) */
	int n_modules;
	struct val_module *modules; /* in order of first use (arena) */
	bool has_configs;         /* some row carries a tile config */
	const char *details_path; /* dir/details.csv when the set has one
	                             (arena), else NULL */
	char *details_text;       /* its text (ts_malloc'd), for carets */
	size_t details_len;       /* bytes in details_text */
	int n_overhead;           /* rows with a recorded overhead_ns */
};

/*
 * Reads dir/measurements.csv (val_dataset_load) or the csv file at csv_path
 * with modules relative to its folder (val_dataset_load_csv). Checks: the
 * header names every column once (any order, no unknown column), RFC 4180
 * quoting, the field count of every row, runtime_ns a positive integer,
 * runtime_min_ns and repeats empty or integers, timing device|host, hw, id
 * and module non-empty, ids unique, config a valid tile config, every module
 * file readable; the optional topology (a slice shape, hw_slice_parse, or
 * empty), slices (empty or 1 to HW_SLICE_MAX_COUNT, only with a
 * topology), devices (a device order file, val_devices_load) and set
 * (PATH=VALUE spec changes, each a numeric spec field once and a number)
 * columns. Errors are TS_ERR_PARSE (TS_ERR_IO when the csv cannot be
 * read, TS_ERR_NOMEM) with file:line:col at the offending field; d->file and
 * d->src point into *ds, so call val_dataset_free(ds) after printing d, also
 * on error. HLO modules are not parsed here (val_report_build does that).
 */
enum ts_status val_dataset_load(const char *dir, struct val_dataset *ds,
				struct ts_diag *d);
/*
 * Reads the optional per-row extras (shared/data/README.md: details.csv)
 * of a loaded set; val_dataset_load calls it when dir/details.csv exists.
 * The file is RFC 4180 with a header naming `id` once; its other columns
 * are the set's own (its MANIFEST describes them) and only `overhead_ns`
 * is read: the host dispatch overhead measured for that row, ns, empty when
 * unknown. Checks: every record has the header's field count, ids are
 * unique and name rows of measurements.csv, overhead_ns is empty or a
 * non-negative integer below the row's runtime_ns and given only for
 * host-timed rows. Errors are TS_ERR_PARSE with file:line:col in the
 * details file (d->src points into *ds), TS_ERR_IO, TS_ERR_NOMEM.
 */
enum ts_status val_dataset_load_details(struct val_dataset *ds,
					const char *path, struct ts_diag *d);
enum ts_status val_dataset_load_csv(const char *csv_path,
				    struct val_dataset *ds, struct ts_diag *d);
void val_dataset_free(struct val_dataset *ds);
/*
 * A compile's device order (frontdoor's devices/ID.csv): RFC 4180 text
 * whose header names index, id, x, y, z, core_on_chip and slice once each
 * (any order, nothing else), then one line a device, every field a whole
 * number: index (the number the module's replica groups use) 0 to n-1 each
 * once; id (JAX's) read, not used; the chip's x, y, z in its slice, the
 * device's core on the chip and its slice. Into *at (arena, n entries,
 * entry `index` = its place, enum hw_place) and *n_at: hw_slice.at.
 * Whether it fits a slice is hw_slice_check's. TS_ERR_PARSE at
 * file:line:col with d->src the text (val_devices_load: file's own copy
 * in the arena, as is file's name), TS_ERR_IO, TS_ERR_NOMEM.
 */
enum ts_status val_devices_parse(const char *file, const char *text,
				 size_t len, struct ts_arena *arena,
				 const int32_t (**at)[HW_PLACE_COUNT],
				 int64_t *n_at, struct ts_diag *d);
enum ts_status val_devices_load(const char *path, struct ts_arena *arena,
				const int32_t (**at)[HW_PLACE_COUNT],
				int64_t *n_at, struct ts_diag *d);
/* Reads the header line of the RFC 4180 text (len bytes; a UTF-8 byte
 * order mark skipped): pos[c] gets the field index of names[c]. Every name
 * must be there once and nothing else; errors are TS_ERR_PARSE at
 * file:line:col (d->src the text), TS_ERR_NOMEM. */
enum ts_status val_csv_columns(const char *file, const char *text, size_t len,
			       const char *const *names, int n, int *pos,
			       struct ts_diag *d);
/* A view of ds with only the rows whose keep[i] is set, in order (strings
 * and texts stay ds's: free the view with val_dataset_free before ds).
 * TS_ERR_NOMEM only. */
enum ts_status val_dataset_subset(const struct val_dataset *ds,
				  const bool *keep, struct val_dataset *out);

/* The op family of a row id: the words before its first word that names
 * an element type ("layer_norm" of "layer_norm_f16_10x1024x2048"), else
 * its first word. Writes at most cap bytes. */
void val_id_family(const char *id, char *buf, size_t cap);

/* A row's group key in arena a: "set/kernel" in sets with tile configs;
 * else "set/family" (shape false) or "set/" + the id from its element type
 * word (after its family) to any ':' (shape true: all ops of one shape
 * together). NULL when
 * out of memory. */
const char *val_row_key(struct ts_arena *a, const struct val_dataset *ds,
			const struct val_row *row, bool shape);

/* Numbers the distinct strings of keys[0..n) by first appearance:
 * group_of[i] in [0, *n_groups), equal keys equal numbers. O(n log n). */
enum ts_status val_group_keys(const char *const *keys, int n, int *group_of,
			      int *n_groups);

/* ---- a live record (val_record.c) ---------------------------------------- */

/*
 * The folder `tpusim autotune GRAPH --record DIR` keeps: a set of the
 * shared format (measurements.csv, modules/) and failed.csv, one line per
 * failed attempt (id, module, kernel, config, reason; an id repeats when a
 * later run retries and fails again). It is a transaction log:
 *   - val_record_open takes an exclusive lock (flock of DIR/.lock, opened
 *     for writing as NFS needs; a second run waits, saying so on note),
 *     checks that the folder and its files can be written and are regular
 *     files, and cuts a torn last record from either file: the bytes after
 *     the last record boundary (a newline outside quotes), which only an
 *     append cut short by a crash leaves. The header is checked first; the
 *     cut bytes are appended to FILE.torn and the cut said on note. Then
 *     measurements.csv is read with the set reader (val_dataset_load_csv:
 *     every check of the format, modules included);
 *   - an append writes one line whole, in the header's column order, or
 *     truncates the file back to its length before (a full disk), with
 *     the stop signals held off meanwhile; then fdatasync;
 *   - modules are keyed by content: modules/<stem>-<FNV-1a 64 of the
 *     module text, 16 hex digits>[.<kernel>].hlo, so an edited module is
 *     a new module; a file of that name with other bytes is an error. A
 *     module file and its folder are synced before a row names it.
 * Records written before modules were keyed by content are read, but
 * their rows name modules no new run proposes: they are measured again.
 * Lookups are by (module, hw, config), the config as
 * sim_tile_config_format writes it, through a hash table: O(1) each.
 */
struct val_record_key;
#define VAL_RECORD_FAILED_COLS 5 /* id, module, kernel, config, reason */
struct val_record {
	char *dir;                  /* the folder (ts_malloc'd) */
	char *csv_path, *failed_path; /* its two files (ts_malloc'd) */
	int lock_fd;                /* DIR/.lock, locked; -1 when closed */
	struct val_dataset ds;      /* the rows read at open (n_rows may be 0) */
	char *csv_text, *failed_text; /* as read at open, for a diagnostic's
	                                 caret (ts_malloc'd or NULL) */
	int csv_pos[VAL_COL_COUNT]; /* measurements.csv's header order */
	int failed_pos[VAL_RECORD_FAILED_COLS]; /* failed.csv's */
	bool csv_header, failed_header; /* the file has its header line */
	struct ts_arena arena;      /* the keys, module paths */
	struct val_record_key *keys; /* open addressing, mask + 1 slots */
	size_t mask, n_keys;
};

/* The signals that end a run (INT, TERM, HUP, QUIT): held off while a
 * record file is written; they end the measurement in flight (autotune).
 * val_stop_signals makes the set of them. */
#define VAL_N_STOP_SIGNALS 4
extern const int val_stop_signal[VAL_N_STOP_SIGNALS];
void val_stop_signals(sigset_t *set);

/* Locks, repairs and reads the record in dir (an existing folder; its
 * files may be absent). Errors: TS_ERR_PARSE with the set reader's
 * file:line:col (a record that does not read as a set is not appended
 * to), TS_ERR_IO, TS_ERR_NOMEM; val_record_close(r) in every case. */
enum ts_status val_record_open(const char *dir, struct val_record *r,
			       FILE *note, struct ts_diag *d);
void val_record_close(struct val_record *r);
/* The recorded runtime of (module, hw, config), ns; 0 when none. */
int64_t val_record_find(const struct val_record *r, const char *module,
			const char *hw, const char *config);
/* Appends a device-timed measurement (source "tpusim autotune"); an id or
 * (module, hw, config) already recorded is TS_ERR_MISUSE. */
enum ts_status val_record_add(struct val_record *r, const char *id,
			      const char *module, const char *hw,
			      const char *config, int64_t runtime_ns,
			      struct ts_diag *d);
/* Appends a failed attempt to failed.csv. */
enum ts_status val_record_add_failure(struct val_record *r, const char *id,
				      const char *module, const char *kernel,
				      const char *config, const char *reason,
				      struct ts_diag *d);
/* Writes modules/<stem>-<key>[.<kernel>].hlo (kernel NULL: none) with
 * text, key the 16 hex digits of the unmarked module's FNV-1a; one there
 * with the same bytes is kept. rel gets the path relative to the folder. */
enum ts_status val_record_module(struct val_record *r, const char *stem,
				uint64_t key, const char *kernel,
				const char *text, size_t len, char *rel,
				size_t cap, struct ts_diag *d);

/* ---- the measuring command's words and output (val_record.c) ------------- */

#define VAL_CMD_MAX_WORDS 64
/* Splits cmd into words (into buf, room strlen(cmd) + 1): blanks separate,
 * '...' and "..." group, a backslash escapes the next character (inside
 * "..." only before " and \). False on no word, an unterminated quote or
 * more than VAL_CMD_MAX_WORDS words. */
bool val_cmd_split(const char *cmd, char *buf, char **words, int *n);
/* word with every {module}, {kernel} and {config} replaced by vals[0..2]
 * (ts_malloc'd; NULL when out of memory). */
char *val_cmd_substitute(const char *word, const char *const vals[3]);
/* The time a command printed: its output's first word, a decimal number
 * of ns (digits, a point, an exponent; no sign, hex, inf or nan, nothing
 * after it but blanks), rounded to whole ns as the set format records it,
 * from 1 to INT64_MAX. False with why (room cap) otherwise. */
bool val_cmd_read_ns(const char *out, size_t len, int64_t *ns, char *why,
		     size_t cap);

/* ---- hardware specs per row ---------------------------------------------- */

#define VAL_MAX_HW 8 /* distinct hw values in one set */

/* The spec each row is costed with. */
struct val_specs {
	int n;                           /* entries used */
	const char *hw[VAL_MAX_HW];      /* hw column value it serves (dataset
	                                    arena); NULL: every row (--hw) */
	char *path[VAL_MAX_HW];          /* spec file (owned); diagnostics of a
	                                    failed load point here */
	struct hw_spec spec[VAL_MAX_HW];
};

/* One spec for every row (tpusim validate --hw FILE). */
enum ts_status val_specs_single(const struct hw_spec *spec, const char *path,
				struct val_specs *out);
/*
 * One spec per distinct hw value (tpusim validate --hw-dir DIR): "tpu-v3"
 * reads DIR/v3.yaml, "tpu-v6e" DIR/v6e.yaml. A missing spec is TS_ERR_SPEC
 * located at the hw field of the first row that needs it; a malformed spec
 * returns the loader's diagnostic. Call val_specs_free() after printing d,
 * also on error.
 */
enum ts_status val_specs_load_dir(const struct val_dataset *ds,
				  const char *dir, struct val_specs *out,
				  struct ts_diag *d);
void val_specs_free(struct val_specs *s);
/* The spec for a hw value, NULL if none. */
const struct hw_spec *val_specs_find(const struct val_specs *s,
				     const char *hw);

/* ---- metrics (val_metrics.c) --------------------------------------------
 * Errors are fractions (0.12 = 12%). Callers pass only rows with a
 * prediction: measured > 0 and predicted finite. Undefined values are NaN. */

/* Mean absolute percentage error: mean |p - m| / m. NaN when n == 0. */
double val_metric_mape(const double *measured, const double *predicted,
		       size_t n);
/* Median of |p - m| / m (mean of the two middle values for even n). */
enum ts_status val_metric_median_ape(const double *measured,
				     const double *predicted, size_t n,
				     double *out);
/*
 * Kendall tau-b of x against y: (C - D) / sqrt((n0 - n1)(n0 - n2)), n0 =
 * n(n-1)/2, n1 / n2 the pairs tied in x / y. O(n^2). NaN when n < 2 or
 * either side is all ties (a predictor that gives every config the same
 * time ranks nothing). Values within 1e-9 (relative) of each other tie,
 * so do infinite values.
 */
double val_metric_kendall_tau_b(const double *x, const double *y, size_t n);
/*
 * TpuGraphs' top-K: the best measured time among the K rows with the
 * smallest predictions (ties as for tau). When a tie straddles the K boundary,
 * the rows taken from the tied group are drawn at random and *out is the
 * expected value of that best time (a fair tie break: file order would
 * favour the compiler default, which comes first). k >= n takes every row.
 * TS_ERR_MISUSE when n == 0 or k == 0.
 */
enum ts_status val_metric_topk_best(const double *measured,
				    const double *predicted, size_t n,
				    size_t k, double *out);
/* top-K slowdown = val_metric_topk_best / min(measured) - 1. */
enum ts_status val_metric_topk_slowdown(const double *measured,
					const double *predicted, size_t n,
					size_t k, double *out);

/* ---- reports (val_report.c) ---------------------------------------------- */

/* The estimate of one row. */
struct val_row_result {
	enum ts_status status;   /* TS_OK, or why the row has no estimate */
	const char *error;       /* "file:line:col: message" when status != TS_OK
	                            (report arena) */
	double measured_ns;      /* the row's runtime_ns */
	double predicted_ns;     /* the model's: hybrid_ns with a learned
	                            model (val_report_opts.model), else
	                            analytic_ns */
	double analytic_ns;      /* analytic device time + dispatch_ns */
	double hybrid_ns;        /* the learned model's device time (sum over
	                            kernels of hyb_kernel_predict x
	                            multiplicity) + dispatch_ns; NaN without
	                            a model */
	double device_ns;        /* predicted device time: the hybrid's with a
	                            model, else the analytic one (sum over
	                            kernels of time x multiplicity, tuned
	                            kernel under the row's config, others at
	                            their defaults) */
	double roofline_ns;      /* roofline baseline: sum of sim_kernel_roofline
	                            x multiplicity, + dispatch_ns */
	double dispatch_ns;      /* host rows: sim_program_host_ns() of the
	                            row's program and spec (the spec's host.*
	                            figures; never a measured value of the
	                            row); device rows: 0 */
	int64_t steps;           /* tile steps of the tuned kernel under the
	                            row's config; without one, the sum over
	                            kernels x multiplicity */
	enum hw_unit bound;      /* the tuned kernel's bound unit, else that of
	                            the kernel with the largest time */
	double mxu_cycles;       /* MXU busy cycles, summed like device_ns */
	double vpu_cycles;       /* VPU busy cycles, summed like device_ns */
	double dma_cycles;       /* HBM DMA cycles, summed like device_ns */
	double vmem_bytes;       /* largest working set of one kernel step, bytes */
	bool feasible;           /* every kernel fits VMEM under its config */
	int n_kernels;           /* kernels in the module's program */
	int i_tuned;             /* index of the tuned kernel, -1 none */
	const char *spec_name;   /* hw_spec.name used (points into the specs) */
};

/* Metrics of one group of rows: one kernel (module) in sets with tile
 * configs, one op family otherwise, or the whole set. */
struct val_group {
	const char *name;        /* module name, family or set name (arena) */
	int n_rows;              /* rows in the group */
	int n_estimated;         /* rows with a finite prediction (MAPE) */
	int n_ranked;            /* rows costed, infeasible ones included
	                            (ranking: tau, top-K) */
	int n_infeasible;        /* estimated rows the model calls infeasible */
	bool has_config;         /* some row of the group has a tile config */
	double mape;             /* model, fraction */
	double median_ape;       /* model, fraction */
	double roofline_mape;    /* roofline baseline, fraction */
	double roofline_median_ape;
	/* Ranking the configs of one kernel (NaN for families and for the
	 * whole set; val_report's mean_* average them over kernels). */
	double tau_model;        /* Kendall tau-b, measured vs model */
	double tau_roofline;     /* vs roofline (config-blind: NaN) */
	double tau_steps;        /* vs tile steps */
	double top1_slowdown;    /* model's top-1 vs measured best, fraction
	                            (tau_model, top-K, chosen_ns: NaN when
	                            the model timed not every feasible row) */
	double top5_slowdown;    /* model's top-5 */
	double steps_top1_slowdown; /* fewer-steps baseline's top-1 */
	double best_ns;          /* fastest measured row, ns */
	double chosen_ns;        /* measured time of the model's top-1, ns */
	double default_ns;       /* measured time of the "default" row; NaN none */
};

/* Set totals: the sum of per-kernel times, for the tile-choice summary. */
struct val_tile_totals {
	int n_kernels;           /* kernels summed (each has a default row) */
	double best_ns;          /* sum of measured bests */
	double chosen_ns;        /* sum of measured times of the model's picks */
	double steps_ns;         /* same for the fewer-steps baseline */
	double default_ns;       /* sum of measured times of the defaults */
};

#define VAL_TAU_MIN_ROWS 10 /* configs a kernel needs to count in mean_tau_* */

/* Called once per costed row with its program (alive during the call
 * only), the index of its tuned kernel (-1 none) and each kernel's
 * analytic estimate (the tuned one under the row's config). A status
 * other than TS_OK stops val_report_build with it. */
typedef enum ts_status (*val_row_visit)(void *ctx, int i_row,
					const struct sim_program *prog,
					int tuned,
					const struct sim_estimate *const *est,
					const struct hw_spec *hw);

struct val_report_opts {
	const struct gnn_model *model; /* learned model: predicted_ns becomes
	                                  its estimate (NULL: analytic) */
	struct hw_slice slice;         /* the slice of rows without a topology
	                                  of their own (n_dims 0: none) */
	val_row_visit visit;           /* NULL: none */
	void *ctx;                     /* passed to visit */
};

struct val_report {
	struct ts_arena arena;   /* owns the strings and arrays below */
	const struct val_dataset *ds; /* not owned */
	struct val_report_opts opts;  /* as given (zeroed for NULL) */
	int n_rows;
	struct val_row_result *rows;  /* one per dataset row, same order */
	bool by_kernel;          /* groups are kernels (the set has configs),
	                            else op families */
	int n_groups;
	struct val_group *groups;     /* by first appearance */
	struct val_group overall;     /* the whole set (its ranking fields are
	                                 NaN: see mean_* below) */
	double mean_tau_model;   /* unweighted mean over the kernels with tau
	                            defined and >= VAL_TAU_MIN_ROWS configs
	                            (a tau over a handful of configs is
	                            mostly noise) */
	double mean_tau_roofline;
	double mean_tau_steps;
	int n_tau_kernels;       /* kernels in mean_tau_model */
	double mean_top1_slowdown; /* over kernels with >= 2 rows, every
	                              one timed by the model (NaN: none) */
	double mean_top5_slowdown;
	double mean_steps_top1_slowdown;
	int n_rank_kernels;      /* kernels in mean_top*_slowdown */
	struct val_tile_totals tiles_all;     /* every kernel with a default row */
	struct val_tile_totals tiles_config;  /* only kernels with tile configs */
	int n_errors;            /* rows without an estimate */
	int n_infeasible;        /* rows the model calls infeasible */
	int n_host;              /* host-timed rows */
	int n_host_recorded;     /* of those, costed rows for which the set
	                            records the call's overhead (details.csv
	                            overhead_ns): a check of the host term,
	                            never an input of the prediction */
	double host_term_mape;   /* MAPE of dispatch_ns against that recorded
	                            overhead over those rows (NaN when none) */
	const char *spec_names;  /* "v3" or "v3,v4": specs used (arena) */
	int n_unmodelled_modules; /* modules with a kernel the model lists at
	                             zero time (custom call, infeed, ...) */
	const char *unmodelled_example; /* the first: "module: kernel (op)" */
	int n_fell_back;         /* rows with a kernel whose learned time is
	                            not finite: its analytic time stands in
	                            (hyb_kernel_predict) */
	const char *fell_back_module;  /* the first such kernel's module */
	const char *fell_back_kernel;  /* and its name */
};

/*
 * Costs every row (opts may be NULL). Each module is parsed and built once; the default
 * estimate and the roofline of each kernel are computed once per module,
 * and only the tuned kernel is costed again per config. The tuned kernel
 * is the one whose metadata op_name is "autotuned_op", else the only
 * tunable kernel. A row that cannot be costed (unparsable or unsupported
 * module, ambiguous tuned kernel, config rejected by the model) gets
 * status and error and is counted in n_errors, never dropped silently.
 * Returns TS_ERR_NOMEM, TS_ERR_MISUSE (no spec for a row's hw) or
 * TS_ERR_SPEC (a row's slice that does not fit its generation or module,
 * or a row's set the spec does not take) with d filled; other per-row
 * problems do not fail the call. Call val_report_free() in every case.
 */
enum ts_status val_report_build(const struct val_dataset *ds,
				const struct val_specs *specs,
				const struct val_report_opts *opts,
				struct val_report *r, struct ts_diag *d);
void val_report_free(struct val_report *r);

/* Report cells: "12.3%" of a fraction, "+12.3%" of a change and "0.887"
 * (three decimals), each "n/a" for NaN and never a negative zero ("0.0%",
 * "+0.0%"); buf is returned. */
const char *val_fmt_pct(char *buf, size_t cap, double x);
const char *val_fmt_pct_change(char *buf, size_t cap, double x);
const char *val_fmt_fix3(char *buf, size_t cap, double x);
/* A copy of base whose rows are predicted by another model: device_ns[i]
 * per row (NaN: no prediction, left out of MAPE and ranked last), plus
 * each row's dispatch_ns; every summary recomputed. Strings stay base's:
 * free out before base. TS_ERR_NOMEM only. */
enum ts_status val_report_repredict(const struct val_report *base,
				    const double *device_ns,
				    struct val_report *out);

/* Writes the per-group and per-set summary as aligned text tables. */
enum ts_status val_report_print_table(const struct val_report *r, FILE *out);
/* The set summary as Markdown (scripts/accuracy_report.sh). */
enum ts_status val_report_print_markdown(const struct val_report *r,
					 FILE *out);

/* ---- autotuning replayed on measured sets (val_autotune.c) --------------- */

enum val_tune_strategy {
	VAL_TUNE_RANDOM = 0, /* uniform random orders, mean over seeds */
	VAL_TUNE_ANALYTIC,   /* the analytic model's order */
	VAL_TUNE_HYBRID,     /* the hybrid's order (the report's model) */
	VAL_TUNE_ONLINE,     /* refitted after every measurement, transferred
	                        across kernels (val_autotune.c says what) */
	VAL_TUNE_COUNT
};
const char *val_tune_strategy_name(enum val_tune_strategy s); /* "online" */

#define VAL_TUNE_MAX_BUDGETS 16

struct val_tune_opts {
	int n_budgets;
	int budgets[VAL_TUNE_MAX_BUDGETS]; /* measurements, ascending, >= 1 */
	bool use[VAL_TUNE_COUNT];          /* strategies replayed */
	int seeds;                         /* random orders per kernel */
	uint64_t seed;                     /* of the first */
};

/* One strategy over a set's kernels with at least two configs. */
struct val_tune_result {
	double slowdown[VAL_TUNE_MAX_BUDGETS]; /* mean over kernels of the
	                                          best measured among the
	                                          first budget picks over the
	                                          kernel's best, minus 1 */
	double to_1pct, to_5pct; /* mean measurements to come within 1% and
	                            5% of the kernel's best */
};

struct val_tune_set {
	const char *name;        /* the set's (dataset arena) */
	int n_kernels;           /* kernels in the means */
	int n_single;            /* kernels with one recorded config: left out */
	const char *single_example; /* the first of those (dataset arena) */
	struct val_tune_result res[VAL_TUNE_COUNT]; /* zero where not used */
};

/* Replays the strategies of o on the kernels of rep's set (each module's
 * rows are its recorded configs). VAL_TUNE_HYBRID needs rep built with a
 * model. Deterministic for a seed. TS_ERR_NOMEM, or TS_ERR_IO when GSL
 * cannot be loaded (d says why). */
enum ts_status val_tune_replay(const struct val_report *rep,
			       const struct val_tune_opts *o,
			       struct val_tune_set *out, struct ts_diag *d);

/* ---- calibration (val_calibrate.c) --------------------------------------- */

#define VAL_FIT_MAX 16 /* spec fields fitted at once */

#define VAL_ROW_PATTERNS 16 /* --rows patterns */

/* What cross-validation leaves out in turn. */
enum val_folds {
	VAL_FOLDS_NONE = 0,
	VAL_FOLDS_GROUP,      /* a loss group: a kernel of a tile set, an op
	                         family of an op set */
	VAL_FOLDS_SHAPE,      /* a shape: op-set rows whose id is the same
	                         after the family and before any ':' (all ops
	                         of one shape together); kernels in tile sets */
};

struct val_calib_opts {
	int n_fields;
	const struct hw_field_info *fields[VAL_FIT_MAX]; /* hw_spec_field() */
	int n_rows;           /* fnmatch(3) patterns on row ids: a row is in
	                         the fit when it matches any; 0: every row */
	const char *rows[VAL_ROW_PATTERNS];
	enum val_folds folds;
	int max_iter;         /* Nelder-Mead steps per fit */
};

/* One group of rows (val_report's grouping: a kernel of a tile set, an op
 * family otherwise), named "set/group". Errors are fractions; NaN none. */
struct val_calib_group {
	const char *name;
	int n_rows;
	double mape_start;    /* with the spec's values */
	double mape_fit;      /* with the values fitted on every group */
	double mape_cv;       /* each row with the values fitted without its
	                         fold */
};

struct val_calib {
	struct ts_arena arena;     /* owns groups and their names */
	struct hw_spec start;      /* the spec given */
	struct hw_spec fitted;     /* start with the fitted fields */
	int n_rows;                /* rows in the fit */
	int n_no_estimate;         /* of those, rows the model cannot cost
	                              (left out of the loss, counted) */
	int n_other_hw;            /* rows measured on other hardware */
	int n_unselected;          /* rows not matching opts.rows */
	int n_groups;
	struct val_calib_group *groups;
	int n_folds;               /* cross-validation folds (0: none) */
	double loss_start, loss_fit; /* val_calibrate.c's loss */
	double mape_start, mape_fit, mape_cv; /* over every row in the fit */
	double fold_min[VAL_FIT_MAX], fold_max[VAL_FIT_MAX]; /* each field's
	                              range over the cross-validation fits */
	bool converged;            /* the full fit met its size tolerance */
	int n_evals;               /* loss evaluations (each costs every row) */
};

/*
 * Fits opts->fields of `start` to the rows of `sets` measured on start's
 * generation (hw "tpu-<name>"), minimising val_calibrate.c's loss; with
 * opts->folds, also the cross-validated error. Deterministic. Fails
 * with TS_ERR_MISUSE (d says why) when a field starts at 0 or no row is
 * selected; model errors of single rows are counted, not fatal. Call
 * val_calib_free() in every case.
 */
enum ts_status val_calibrate(const struct val_dataset *const *sets,
			     int n_sets, const struct hw_spec *start,
			     const struct val_calib_opts *opts,
			     struct val_calib *out, struct ts_diag *d);
void val_calib_free(struct val_calib *c);

/* ---- training data of the learned residual (val_learn.c) ----------------- */

/* The measured rows of several sets as samples of gnn_train: every row the
 * analytic model costs (a program of its kernels with an analytic time,
 * the host term of a host-timed row); groups by val_row_key(shape) (a
 * kernel of a tile set, a shape of an op set), ranking groups by kernel
 * in tile sets. */
struct val_learn {
	struct gnn_data data;
	int *set_of;        /* per sample: index of its set */
	int *row_of;        /* per sample: its row in that set */
	int n_rows;         /* rows of all sets */
	int n_skipped;      /* rows without an estimate, left out (counted) */
	struct ts_arena arena;
};

/* specs[i] serves sets[i]. Errors: TS_ERR_NOMEM, or a set's spec is
 * missing for a row (TS_ERR_MISUSE, located). */
enum ts_status val_learn_build(const struct val_dataset *const *sets,
			       const struct val_specs *const *specs, int n_sets,
			       struct val_learn *out, struct ts_diag *d);
void val_learn_free(struct val_learn *l);

/* ---- analytic vs learned-only vs hybrid, out of fold (val_compare.c) ----- */

struct val_compare_opts {
	int folds;         /* groups dealt into this many folds; 0: one fold
	                      per group */
	uint64_t seed;     /* fold assignment and training */
	int epochs;        /* 0: gnn_train_opts_default's */
	FILE *progress;    /* a line per fold (a terminal), NULL none */
};

/* One set's three reports: every prediction of the learned ones made by a
 * model trained without the row's fold. */
struct val_compare_set {
	struct val_report analytic, learned, hybrid;
	int *fold;           /* per row: its fold, -1 no sample */
};

struct val_compare {
	int n_sets;
	struct val_compare_set sets[GNN_MAX_SETS];
	int n_folds;
	double train_s;      /* seconds spent training, all folds */
	int n_trained;       /* models trained */
};

/*
 * Trains, for each fold, a residual and a learned-only model on the other
 * folds' samples of l (val_learn_build of the same sets and specs) and
 * predicts the fold; reports analytic, learned-only and hybrid on every
 * set. Groups (val_row_key shapes: a kernel of a tile set, a shape of an
 * op set) never straddle folds. Call val_compare_free in every case.
 */
enum ts_status val_compare_run(const struct val_dataset *const *sets,
			       const struct val_specs *const *specs,
			       int n_sets, const struct val_learn *l,
			       const struct val_compare_opts *o,
			       struct val_compare *out, struct ts_diag *d);
void val_compare_free(struct val_compare *c);

#endif /* VAL_H */
