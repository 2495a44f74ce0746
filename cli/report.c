/*
 * report.c: the CLI's output layer. Tables (cmd_table_*) hold typed cells;
 * reports (cmd_report_*) write fields, lists and tables as an aligned text
 * table, CSV, JSON or YAML. JSON and YAML go through libyaml's emitter, so no
 * escaping is done by hand. Every number is printed with a fixed printf
 * format (cli.h, enum cmd_unit), so the same input gives the same bytes.
 */
#include "cli.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

/* ---- formats ------------------------------------------------------------ */

static const char *const format_names[] = {
	[CMD_FORMAT_TABLE] = "table",
	[CMD_FORMAT_CSV] = "csv",
	[CMD_FORMAT_JSON] = "json",
	[CMD_FORMAT_YAML] = "yaml",
};
_Static_assert(TS_ARRAY_LEN(format_names) == CMD_FORMAT_COUNT,
	       "format_names must name every cmd_format");

const char *cmd_format_name(enum cmd_format f)
{
	return (unsigned)f < CMD_FORMAT_COUNT ? format_names[f] : "?";
}

bool cmd_format_parse(const char *s, enum cmd_format *out)
{
	for (int f = 0; f < CMD_FORMAT_COUNT; f++) {
		if (strcmp(s, format_names[f]) == 0) {
			*out = (enum cmd_format)f;
			return true;
		}
	}
	return false;
}

/* ---- number formatting -------------------------------------------------- */

#define NUM_BUF 48 /* longest formatted number: "%.0f" of 1e40 plus unit */

/*
 * Human form with three significant digits and an SI prefix: v is scaled
 * by 1000 per prefix until it is below 1000 (after rounding, so 999.7 kB
 * becomes 1.00 MB rather than "1000 kB"). prefixes[0] is the base unit.
 */
static void fmt_si(char *buf, double v, const char *const *prefixes,
		   int n_prefixes, const char *sep)
{
	int p = 0;
	double a = fabs(v);
	while (p + 1 < n_prefixes && a >= 999.5) {
		a /= 1000.0;
		v /= 1000.0;
		p++;
	}
	/* Whole numbers below 1000 (1 FLOP, 32 cycles) need no decimals. */
	int decimals = (p == 0 && v == floor(v)) ? 0 :
		       a < 9.995			 ? 2 :
		       a < 99.95			 ? 1 :
							   0;
	if (a >= 1e6) /* past the largest prefix: exponent form, not digits */
		snprintf(buf, NUM_BUF, "%.3g%s%s", v, sep, prefixes[p]);
	else
		snprintf(buf, NUM_BUF, "%.*f%s%s", decimals, v, sep, prefixes[p]);
}

static const char *const si_count[] = {"", "k", "M", "G", "T", "P", "E"};
static const char *const si_bytes[] = {"B", "kB", "MB", "GB", "TB", "PB"};
static const char *const si_time[] = {"ns", "us", "ms", "s"};

/* Text-table form of a number. */
static void fmt_human(char *buf, enum cmd_unit u, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, NUM_BUF, "%s", isnan(v) ? "nan" : "inf");
		return;
	}
	switch (u) {
	case CMD_UNIT_INT:
		snprintf(buf, NUM_BUF, fabs(v) < 1e15 ? "%.0f" : "%.3g", v);
		break;
	case CMD_UNIT_REAL:
		snprintf(buf, NUM_BUF, "%.3g", v);
		break;
	case CMD_UNIT_EXACT:
		snprintf(buf, NUM_BUF, "%.4g", v);
		break;
	case CMD_UNIT_SI:
	case CMD_UNIT_CYCLES:
		fmt_si(buf, v, si_count, (int)TS_ARRAY_LEN(si_count), "");
		break;
	case CMD_UNIT_BYTES:
		fmt_si(buf, v, si_bytes, (int)TS_ARRAY_LEN(si_bytes), " ");
		break;
	case CMD_UNIT_TIME_NS:
		fmt_si(buf, v, si_time, (int)TS_ARRAY_LEN(si_time), " ");
		break;
	case CMD_UNIT_FRACTION:
		val_fmt_pct(buf, NUM_BUF, v);
		break;
	case CMD_UNIT_TEXT:
	case CMD_UNIT_COUNT:
	default:
		TS_ASSERT(!"fmt_human: not a numeric unit");
	}
}

/* Raw form (CSV, JSON, YAML), in the base unit. false: not finite (the
 * caller writes null / an empty field). */
static bool fmt_raw(char *buf, enum cmd_unit u, double v)
{
	if (!isfinite(v))
		return false;
	/* Fixed-point forms of huge values run past any buffer: from 1e15 up
	 * every unit is written whole in exponent form instead. */
	if (fabs(v) >= 1e15) {
		snprintf(buf, NUM_BUF, "%.17g", v);
		return true;
	}
	switch (u) {
	case CMD_UNIT_INT:
	case CMD_UNIT_SI:
	case CMD_UNIT_BYTES:
		snprintf(buf, NUM_BUF, "%.0f", v);
		break;
	case CMD_UNIT_REAL:
		snprintf(buf, NUM_BUF, "%.6g", v);
		break;
	case CMD_UNIT_EXACT:
		for (int p = 6; p <= 17; p++) {
			snprintf(buf, NUM_BUF, "%.*g", p, v);
			if (strtod(buf, NULL) == v)
				break;
		}
		break;
	case CMD_UNIT_CYCLES:
		snprintf(buf, NUM_BUF, "%.1f", v);
		break;
	case CMD_UNIT_TIME_NS:
		snprintf(buf, NUM_BUF, "%.3f", v);
		break;
	case CMD_UNIT_FRACTION:
		snprintf(buf, NUM_BUF, "%.6f", v);
		break;
	case CMD_UNIT_TEXT:
	case CMD_UNIT_COUNT:
	default:
		TS_ASSERT(!"fmt_raw: not a numeric unit");
	}
	/* "-0" or "-0.000" would make the bytes depend on a zero's sign. */
	if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
		memmove(buf, buf + 1, strlen(buf));
	return true;
}

/* ---- tables ------------------------------------------------------------- */

void cmd_table_init(struct cmd_table *t, const char *key,
		    const char *footer_key, const struct cmd_col *cols,
		    int n_cols)
{
	memset(t, 0, sizeof *t);
	t->key = key;
	t->footer_key = footer_key;
	t->cols = cols;
	t->n_cols = n_cols;
	ts_arena_init(&t->text);
}

void cmd_table_free(struct cmd_table *t)
{
	ts_free(t->cells);
	ts_arena_free(&t->text);
	t->cells = NULL;
	t->n_rows = 0;
	t->cap_rows = 0;
}

/* Rows allocated always include one spare for the footer. */
static enum ts_status table_reserve(struct cmd_table *t, size_t rows)
{
	if (rows <= t->cap_rows)
		return TS_OK;
	size_t cap = t->cap_rows ? t->cap_rows : 16;
	while (cap < rows) {
		if (cap > SIZE_MAX / 2)
			return TS_ERR_NOMEM;
		cap *= 2;
	}
	size_t per_row = (size_t)t->n_cols * sizeof *t->cells;
	if (per_row && cap > SIZE_MAX / per_row)
		return TS_ERR_NOMEM;
	struct cmd_cell *c = ts_realloc(t->cells, cap * per_row);
	if (!c)
		return TS_ERR_NOMEM;
	memset(c + t->cap_rows * (size_t)t->n_cols, 0,
	       (cap - t->cap_rows) * per_row);
	t->cells = c;
	t->cap_rows = cap;
	return TS_OK;
}

/* The row set calls fill: the footer once begun, else the last row. */
static struct cmd_cell *current_row(struct cmd_table *t)
{
	int row = t->has_footer ? t->n_rows : t->n_rows - 1;
	TS_ASSERT(row >= 0);
	return t->cells + (size_t)row * (size_t)t->n_cols;
}

static const struct cmd_cell *row_cells(const struct cmd_table *t, int row)
{
	return t->cells + (size_t)row * (size_t)t->n_cols;
}

enum ts_status cmd_table_add_row(struct cmd_table *t)
{
	TS_ASSERT(!t->has_footer);
	enum ts_status st = table_reserve(t, (size_t)t->n_rows + 2);
	if (st != TS_OK)
		return st;
	t->n_rows++;
	return TS_OK;
}

enum ts_status cmd_table_begin_footer(struct cmd_table *t)
{
	/* add_row reserved a spare row; an empty table reserves it here. */
	enum ts_status st = table_reserve(t, (size_t)t->n_rows + 1);
	if (st == TS_OK)
		t->has_footer = true;
	return st;
}

enum ts_status cmd_table_set_text(struct cmd_table *t, int col,
				  const char *text)
{
	TS_ASSERT(col >= 0 && col < t->n_cols);
	TS_ASSERT(t->cols[col].unit == CMD_UNIT_TEXT);
	if (!t->cells || (!t->has_footer && t->n_rows == 0))
		return TS_ERR_NOMEM;
	char *copy = ts_arena_strndup(&t->text, text, strlen(text));
	if (!copy)
		return TS_ERR_NOMEM;
	struct cmd_cell *c = &current_row(t)[col];
	c->present = true;
	c->text = copy;
	return TS_OK;
}

void cmd_table_set_num(struct cmd_table *t, int col, double v)
{
	TS_ASSERT(col >= 0 && col < t->n_cols);
	TS_ASSERT(t->cols[col].unit != CMD_UNIT_TEXT);
	if (!t->cells || (!t->has_footer && t->n_rows == 0) || !isfinite(v))
		return; /* a value that means nothing leaves the cell empty */
	struct cmd_cell *c = &current_row(t)[col];
	c->present = true;
	c->num = v;
}

/* ---- CSV ---------------------------------------------------------------- */

static bool col_in(const struct cmd_col *c, enum cmd_format f)
{
	if (f == CMD_FORMAT_CSV)
		return true;
	if (c->flags & CMD_COL_CSV_ONLY)
		return false;
	return f != CMD_FORMAT_TABLE || !(c->flags & CMD_COL_NO_TABLE);
}

static void csv_table(struct cmd_report *r, const struct cmd_table *t)
{
	if (!r->csv_header_done) {
		for (int c = 0; c < t->n_cols; c++) {
			if (c)
				fputc(',', r->out);
			ts_csv_field(r->out, t->cols[c].key);
		}
		fputc('\n', r->out);
		r->csv_header_done = true;
	}
	char buf[NUM_BUF];
	for (int row = 0; row < t->n_rows; row++) {
		const struct cmd_cell *cells = row_cells(t, row);
		for (int c = 0; c < t->n_cols; c++) {
			if (c)
				fputc(',', r->out);
			if (!cells[c].present)
				continue;
			if (t->cols[c].unit == CMD_UNIT_TEXT)
				ts_csv_field(r->out, cells[c].text);
			else if (fmt_raw(buf, t->cols[c].unit, cells[c].num))
				fputs(buf, r->out);
		}
		fputc('\n', r->out);
	}
}

/* ---- text tables -------------------------------------------------------- */

/* The text of one cell as a text table shows it; buf holds numbers.
 * Absent cells are "-" in body rows and blank in the footer. */
static const char *text_cell(const struct cmd_col *col,
			     const struct cmd_cell *cell, bool footer,
			     char *buf)
{
	if (!cell->present)
		return footer ? "" : "-";
	if (col->unit == CMD_UNIT_TEXT)
		return cell->text;
	fmt_human(buf, col->unit, cell->num);
	return buf;
}

/* One line of the table; cells NULL: the header. */
static void text_row(FILE *out, const struct cmd_table *t,
		     const struct cmd_cell *cells, bool footer,
		     const size_t *width, int last_col)
{
	char buf[NUM_BUF];
	bool first = true;
	for (int c = 0; c <= last_col; c++) {
		if (!col_in(&t->cols[c], CMD_FORMAT_TABLE))
			continue;
		const char *s = cells ? text_cell(&t->cols[c], &cells[c],
						  footer, buf) :
					t->cols[c].title;
		int w = (int)width[c];
		if (!first)
			fputs("  ", out);
		first = false;
		if (t->cols[c].unit != CMD_UNIT_TEXT)
			fprintf(out, "%*s", w, s);
		else if (c == last_col)
			fputs(s, out);
		else
			fprintf(out, "%-*s", w, s);
	}
	fputc('\n', out);
}

static void text_table(struct cmd_report *r, const struct cmd_table *t)
{
	size_t *width = ts_calloc((size_t)t->n_cols, sizeof *width);
	if (!width) {
		r->status = TS_ERR_NOMEM;
		snprintf(r->err_msg, sizeof r->err_msg, "out of memory");
		return;
	}
	char buf[NUM_BUF];
	int last_col = -1;
	int total_rows = t->n_rows + (t->has_footer ? 1 : 0);
	for (int c = 0; c < t->n_cols; c++) {
		if (!col_in(&t->cols[c], CMD_FORMAT_TABLE))
			continue;
		last_col = c;
		width[c] = strlen(t->cols[c].title);
		for (int row = 0; row < total_rows; row++) {
			size_t n = strlen(text_cell(&t->cols[c],
						    &row_cells(t, row)[c],
						    row == t->n_rows, buf));
			if (n > width[c])
				width[c] = n;
		}
	}
	fputc('\n', r->out);
	text_row(r->out, t, NULL, false, width, last_col);
	for (int row = 0; row < t->n_rows; row++)
		text_row(r->out, t, row_cells(t, row), false, width, last_col);
	if (t->has_footer) {
		size_t rule = 0;
		for (int c = 0; c <= last_col; c++)
			if (col_in(&t->cols[c], CMD_FORMAT_TABLE))
				rule += width[c] + (rule ? 2 : 0);
		for (size_t i = 0; i < rule; i++)
			fputc('-', r->out);
		fputc('\n', r->out);
		text_row(r->out, t, row_cells(t, t->n_rows), true, width,
			 last_col);
	}
	ts_free(width);
}

/* ---- JSON and YAML through libyaml ------------------------------------- */

static void emit_fail(struct cmd_report *r, const char *what)
{
	if (r->status != TS_OK)
		return;
	yaml_emitter_t *e = &r->emitter;
	if (e->error == YAML_WRITER_ERROR) {
		r->status = TS_ERR_IO;
		snprintf(r->err_msg, sizeof r->err_msg,
			 "cannot write output: %s", strerror(errno));
	} else if (e->error == YAML_MEMORY_ERROR) {
		r->status = TS_ERR_NOMEM;
		snprintf(r->err_msg, sizeof r->err_msg, "out of memory");
	} else {
		/* The event sequence is ours: a failure here is a bug. */
		r->status = TS_ERR_IO;
		snprintf(r->err_msg, sizeof r->err_msg,
			 "internal error: %s emitter: %s", what,
			 e->problem ? e->problem : "unknown problem");
	}
}

static void emit(struct cmd_report *r, yaml_event_t *ev, int init_ok)
{
	if (!init_ok) {
		if (r->status == TS_OK) {
			r->status = TS_ERR_NOMEM;
			snprintf(r->err_msg, sizeof r->err_msg,
				 "cannot build output event");
		}
		return;
	}
	if (!yaml_emitter_emit(&r->emitter, ev))
		emit_fail(r, cmd_format_name(r->format));
}

static bool is_emitting(const struct cmd_report *r)
{
	return r->status == TS_OK && (r->format == CMD_FORMAT_JSON ||
				      r->format == CMD_FORMAT_YAML);
}

/*
 * JSON strings: libyaml's double-quoted style is YAML, whose escapes for a
 * few characters (\0 \a \v \e \xNN, \N \L \P for U+0085/2028/2029) JSON
 * does not have. Those characters, which never occur in HLO names, become
 * '?' (json). Text that is not UTF-8 at all (JSON or YAML) is made ASCII
 * the same way, bytes >= 0x80 becoming '?'.
 */
static char *json_safe(const char *s, bool json, bool ascii_only)
{
	char *c = ts_strdup(s);
	if (!c)
		return NULL;
	unsigned char *p = (unsigned char *)c;
	for (size_t i = 0; p[i]; i++) {
		unsigned char b = p[i];
		if (ascii_only && b >= 0x80)
			p[i] = '?';
		else if (!json)
			continue;
		else if (b < 0x20 && !strchr("\b\t\n\f\r", b))
			p[i] = '?';
		else if (b == 0x7f)
			p[i] = '?';
		else if (b == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
			p[i] = p[i + 1] = '?'; /* C1 controls, U+0085 */
		else if (b == 0xe2 && p[i + 1] == 0x80 &&
			 (p[i + 2] == 0xa8 || p[i + 2] == 0xa9))
			p[i] = p[i + 1] = p[i + 2] = '?'; /* U+2028/2029 */
	}
	return c;
}

/* A string scalar: double-quoted in JSON; in YAML quoted (single quotes
 * unless it needs escapes) so that a name like "1e5" or "true" stays a
 * string when read back. */
static void emit_str(struct cmd_report *r, const char *s)
{
	if (!is_emitting(r))
		return;
	bool json = r->format == CMD_FORMAT_JSON;
	yaml_scalar_style_t style = json ? YAML_DOUBLE_QUOTED_SCALAR_STYLE :
					   YAML_ANY_SCALAR_STYLE;
	for (int attempt = 0; attempt < 2; attempt++) {
		char *safe = json_safe(s, json, attempt == 1);
		if (!safe) {
			r->status = TS_ERR_NOMEM;
			snprintf(r->err_msg, sizeof r->err_msg,
				 "out of memory");
			return;
		}
		yaml_event_t ev;
		/* Fails only on invalid UTF-8 (or memory): retry as ASCII. */
		int ok = yaml_scalar_event_initialize(
			&ev, NULL, NULL, (yaml_char_t *)safe,
			(int)strlen(safe), 0, 1, style);
		ts_free(safe);
		if (ok || attempt == 1) {
			emit(r, &ev, ok);
			return;
		}
	}
}

static void emit_plain(struct cmd_report *r, const char *s);

/* A mapping key: our own identifier ("time_ns"), so plain in YAML. */
static void emit_key(struct cmd_report *r, const char *key)
{
	if (r->format == CMD_FORMAT_JSON)
		emit_str(r, key);
	else
		emit_plain(r, key);
}

static void emit_plain(struct cmd_report *r, const char *s)
{
	if (!is_emitting(r))
		return;
	yaml_event_t ev;
	int ok = yaml_scalar_event_initialize(&ev, NULL, NULL,
					      (yaml_char_t *)s, (int)strlen(s),
					      1, 0, YAML_PLAIN_SCALAR_STYLE);
	emit(r, &ev, ok);
}

static void emit_num(struct cmd_report *r, enum cmd_unit u, double v)
{
	char buf[NUM_BUF];
	emit_plain(r, fmt_raw(buf, u, v) ? buf : "null");
}

static void emit_map_start(struct cmd_report *r)
{
	if (!is_emitting(r))
		return;
	yaml_event_t ev;
	int ok = yaml_mapping_start_event_initialize(
		&ev, NULL, NULL, 1,
		r->format == CMD_FORMAT_JSON ? YAML_FLOW_MAPPING_STYLE :
					       YAML_BLOCK_MAPPING_STYLE);
	emit(r, &ev, ok);
}

static void emit_map_end(struct cmd_report *r)
{
	if (!is_emitting(r))
		return;
	yaml_event_t ev;
	emit(r, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void emit_seq_start(struct cmd_report *r)
{
	if (!is_emitting(r))
		return;
	yaml_event_t ev;
	int ok = yaml_sequence_start_event_initialize(
		&ev, NULL, NULL, 1,
		r->format == CMD_FORMAT_JSON ? YAML_FLOW_SEQUENCE_STYLE :
					       YAML_BLOCK_SEQUENCE_STYLE);
	emit(r, &ev, ok);
}

static void emit_seq_end(struct cmd_report *r)
{
	if (!is_emitting(r))
		return;
	yaml_event_t ev;
	emit(r, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void emit_row(struct cmd_report *r, const struct cmd_table *t,
		     const struct cmd_cell *cells)
{
	emit_map_start(r);
	for (int c = 0; c < t->n_cols; c++) {
		if (!col_in(&t->cols[c], r->format))
			continue;
		emit_key(r, t->cols[c].key);
		if (!cells[c].present)
			emit_plain(r, "null");
		else if (t->cols[c].unit == CMD_UNIT_TEXT)
			emit_str(r, cells[c].text);
		else
			emit_num(r, t->cols[c].unit, cells[c].num);
	}
	emit_map_end(r);
}

/* ---- reports ------------------------------------------------------------ */

void cmd_report_begin(struct cmd_report *r, enum cmd_format f, FILE *out)
{
	memset(r, 0, sizeof *r);
	r->format = f;
	r->out = out;
	if (f != CMD_FORMAT_JSON && f != CMD_FORMAT_YAML)
		return;
	if (!yaml_emitter_initialize(&r->emitter)) {
		r->status = TS_ERR_NOMEM;
		snprintf(r->err_msg, sizeof r->err_msg, "out of memory");
		return;
	}
	r->emitter_open = true;
	yaml_emitter_set_output_file(&r->emitter, out);
	yaml_emitter_set_encoding(&r->emitter, YAML_UTF8_ENCODING);
	yaml_emitter_set_unicode(&r->emitter, 1);
	yaml_emitter_set_width(&r->emitter, -1); /* never fold lines */
	yaml_emitter_set_indent(&r->emitter, 2);
	yaml_emitter_set_break(&r->emitter, YAML_LN_BREAK);

	yaml_event_t ev;
	emit(r, &ev,
	     yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	/* YAML documents start with an explicit "---": several reports in
	 * one stream (run A B) stay separate documents */
	emit(r, &ev,
	     yaml_document_start_event_initialize(&ev, NULL, NULL, NULL,
						  r->format != CMD_FORMAT_YAML));
	emit_map_start(r);
}

void cmd_report_text(struct cmd_report *r, const char *key,
		     const char *value)
{
	if (r->status != TS_OK)
		return;
	if (r->format == CMD_FORMAT_TABLE) {
		fprintf(r->out, "%s: %s\n", key, value);
		return;
	}
	emit_key(r, key);
	emit_str(r, value);
}

void cmd_report_num(struct cmd_report *r, const char *key,
		    enum cmd_unit unit, double v)
{
	if (r->status != TS_OK)
		return;
	if (r->format == CMD_FORMAT_TABLE) {
		char buf[NUM_BUF];
		fmt_human(buf, unit, v);
		fprintf(r->out, "%s: %s\n", key, buf);
		return;
	}
	emit_key(r, key);
	emit_num(r, unit, v);
}

void cmd_report_list_begin(struct cmd_report *r, const char *key)
{
	emit_key(r, key);
	emit_seq_start(r);
}

void cmd_report_list_end(struct cmd_report *r) { emit_seq_end(r); }

void cmd_report_map_begin(struct cmd_report *r, const char *key)
{
	emit_key(r, key);
	emit_map_start(r);
}

void cmd_report_map_end(struct cmd_report *r) { emit_map_end(r); }

void cmd_report_item_begin(struct cmd_report *r)
{
	if (r->status == TS_OK && r->format == CMD_FORMAT_TABLE)
		fputc('\n', r->out);
	emit_map_start(r);
}

void cmd_report_item_end(struct cmd_report *r) { emit_map_end(r); }

void cmd_report_table(struct cmd_report *r, const struct cmd_table *t)
{
	if (r->status != TS_OK)
		return;
	switch (r->format) {
	case CMD_FORMAT_TABLE:
		text_table(r, t);
		return;
	case CMD_FORMAT_CSV:
		csv_table(r, t);
		return;
	case CMD_FORMAT_JSON:
	case CMD_FORMAT_YAML:
		emit_key(r, t->key);
		emit_seq_start(r);
		for (int row = 0; row < t->n_rows; row++)
			emit_row(r, t, row_cells(t, row));
		emit_seq_end(r);
		if (t->has_footer) {
			emit_key(r, t->footer_key);
			emit_row(r, t, row_cells(t, t->n_rows));
		}
		return;
	case CMD_FORMAT_COUNT:
	default:
		TS_ASSERT(!"cmd_report_table: bad format");
	}
}

enum ts_status cmd_report_end(struct cmd_report *r, struct ts_diag *d)
{
	if (r->emitter_open) {
		emit_map_end(r);
		yaml_event_t ev;
		if (is_emitting(r))
			emit(r, &ev, yaml_document_end_event_initialize(&ev, 1));
		if (is_emitting(r))
			emit(r, &ev, yaml_stream_end_event_initialize(&ev));
		if (r->status == TS_OK && !yaml_emitter_flush(&r->emitter))
			emit_fail(r, cmd_format_name(r->format));
		yaml_emitter_delete(&r->emitter);
		r->emitter_open = false;
	}
	if (r->status == TS_OK && (fflush(r->out) != 0 || ferror(r->out))) {
		r->status = TS_ERR_IO;
		snprintf(r->err_msg, sizeof r->err_msg,
			 "cannot write output: %s", strerror(errno));
	}
	if (r->status != TS_OK)
		ts_diag_set(d, "tpusim", 0, 0, "%s", r->err_msg);
	return r->status;
}

int cmd_report_finish(const struct cmd_ctx *ctx, struct cmd_report *r,
		      enum ts_status built)
{
	struct ts_diag d = {0};
	enum ts_status st = cmd_report_end(r, &d);
	if (built != TS_OK) {
		cmd_error(ctx, "out of memory building the report");
		return CMD_EXIT_IO;
	}
	if (st != TS_OK) {
		cmd_error(ctx, "%s", d.msg);
		return cmd_exit_from_status(st);
	}
	return CMD_EXIT_OK;
}

int cmd_write_file(const struct cmd_ctx *ctx, const char *path,
		   enum ts_status (*write_fn)(FILE *f, void *arg), void *arg)
{
	struct ts_diag d = {0};
	enum ts_status st = ts_write_file_atomic(path, write_fn, arg, &d);
	if (st == TS_OK)
		return CMD_EXIT_OK;
	if (!d.msg[0]) /* the writer failed, not the file system */
		ts_diag_set(&d, path, 0, 0, "cannot write: %s", ts_status_str(st));
	cmd_diag(ctx, &d, NULL, NULL, 0);
	return cmd_exit_from_status(st);
}

enum ts_status cmd_table_write_csv(FILE *f, void *t)
{
	struct cmd_report rep;
	struct ts_diag d = {0};
	cmd_report_begin(&rep, CMD_FORMAT_CSV, f);
	cmd_report_table(&rep, t);
	return cmd_report_end(&rep, &d);
}

const char *const cmd_set_files[] = {"measurements.csv", "details.csv",
				     NULL};
const char *const cmd_spec_files[] = {"*.yaml", NULL};

static bool is_pattern(const char *name)
{
	return strpbrk(name, "*?[") != NULL;
}

/* Is file path one of folder dir's files (names)? A literal name is
 * compared as dir/name; a pattern by path's last component. The file
 * goes to buf. */
static bool in_folder(const char *dir, const char *const *names,
		      const char *path, char buf[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	for (; *names; names++) {
		const char *name = *names;
		if (is_pattern(name)) {
			if (fnmatch(name, base, 0) != 0)
				continue;
			name = base;
		}
		snprintf(buf, PATH_MAX, "%s/%s", dir, name);
		if (ts_same_file(buf, path))
			return true;
	}
	return false;
}

/* Do a and b name a file in common (into buf)? Two folders do when they
 * are the same folder and a name of one matches a name of the other. */
static bool overlap(const struct cmd_file *a, const struct cmd_file *b,
		    char buf[PATH_MAX])
{
	const char *const *na = a->names, *const *nb = b->names;
	if (!na && !nb) {
		snprintf(buf, PATH_MAX, "%s", a->path);
		return ts_same_file(a->path, b->path);
	}
	if (!na)
		return in_folder(b->path, nb, a->path, buf);
	if (!nb)
		return in_folder(a->path, na, b->path, buf);
	for (; *na; na++)
		for (const char *const *q = nb; *q; q++) {
			if (fnmatch(*na, *q, 0) != 0 && fnmatch(*q, *na, 0) != 0)
				continue;
			/* the literal one, if either is */
			const char *name = is_pattern(*na) ? *q : *na;
			char other[PATH_MAX];
			snprintf(buf, PATH_MAX, "%s/%s", a->path, name);
			snprintf(other, sizeof other, "%s/%s", b->path, name);
			if (ts_same_file(buf, other))
				return true;
		}
	return false;
}

static bool given(const char *path)
{
	return path && strcmp(path, "-") != 0;
}

/* The first input of io (the specs main loaded included) that shares a
 * file with output out (the file into buf); NULL when none does. */
static const struct cmd_file *clash_in(const struct cmd_ctx *ctx,
				       const struct cmd_io *io,
				       const struct cmd_file *out,
				       struct cmd_file *tmp, char buf[PATH_MAX])
{
	for (int j = 0; j < io->n_ins; j++)
		if (given(io->ins[j].path) && overlap(out, &io->ins[j], buf))
			return &io->ins[j];
	for (int j = 0; j < io->n_sets; j++) {
		*tmp = (struct cmd_file){"--data", io->sets[j], CMD_FILE_SET};
		if (overlap(out, tmp, buf))
			return tmp;
	}
	for (int j = 0; j < io->n_args; j++) {
		struct stat sb;
		bool dir = io->arg_names && stat(io->args[j], &sb) == 0 &&
			   S_ISDIR(sb.st_mode);
		*tmp = (struct cmd_file){"the input", io->args[j],
					 dir ? io->arg_names : CMD_FILE};
		if (given(tmp->path) && overlap(out, tmp, buf))
			return tmp;
	}
	for (int j = -1; !io->hw_rewritten && j < ctx->n_more_hw; j++) {
		*tmp = (struct cmd_file){ctx->hw_opt,
					 j < 0 ? ctx->hw_path
					       : ctx->more_hw_path[j],
					 CMD_FILE};
		if (given(tmp->path) && overlap(out, tmp, buf))
			return tmp;
	}
	return NULL;
}

int cmd_check_io(const struct cmd_ctx *ctx, const struct cmd_io *io)
{
	for (int i = 0; i < io->n_outs; i++) {
		const struct cmd_file *o = &io->outs[i];
		if (!given(o->path))
			continue;
		struct cmd_file tmp;
		char file[PATH_MAX];
		const struct cmd_file *clash = clash_in(ctx, io, o, &tmp, file);
		for (int j = i + 1; j < io->n_outs && !clash; j++)
			if (given(io->outs[j].path) &&
			    overlap(o, &io->outs[j], file))
				clash = &io->outs[j];
		if (clash) {
			cmd_error(ctx, "%s and %s name the same file: %s", o->opt,
				  clash->opt, file);
			return CMD_EXIT_USAGE;
		}
	}
	for (int i = 0; i < io->n_sets; i++)
		for (int j = i + 1; j < io->n_sets; j++) {
			char a[PATH_MAX], b[PATH_MAX];
			snprintf(a, sizeof a, "%s/measurements.csv", io->sets[i]);
			snprintf(b, sizeof b, "%s/measurements.csv", io->sets[j]);
			if (ts_same_file(a, b)) {
				cmd_error(ctx, "--data %s and --data %s are the "
					       "same set: its rows would count "
					       "twice", io->sets[i], io->sets[j]);
				return CMD_EXIT_USAGE;
			}
		}
	return CMD_EXIT_OK;
}

int cmd_out_dir(const struct cmd_ctx *ctx, const char *opt, const char *dir)
{
	struct stat sb;
	if (mkdir(dir, 0777) != 0 &&
	    (errno != EEXIST || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
		cmd_error(ctx, "%s: cannot create the folder %s: %s", opt, dir,
			  errno == EEXIST ? "a file of that name exists"
					  : strerror(errno));
		return CMD_EXIT_IO;
	}
	return CMD_EXIT_OK;
}
