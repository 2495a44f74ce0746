/*
 * hw_spec.c: loads hwspecs/<gen>.yaml into struct hw_spec and derives the
 * per-program figures (cores, sustained HBM bandwidth, bf16 peak).
 * The YAML is read with libyaml's document API and walked through one table
 * of {key, type, offset, unit, range} rows per section (netplan's
 * process_mapping); docs/STYLE.md "YAML hardware specs" governs the design.
 */
/* realpath(3) for inheritance: X/Open on top of the build-wide POSIX. */
#define _XOPEN_SOURCE 700
#include "hw_spec.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- unit names ---------------------------------------------------------- */

static const char *const unit_names[] = {
	[HW_UNIT_NONE] = "none",
	[HW_UNIT_MXU] = "mxu",
	[HW_UNIT_VPU] = "vpu",
	[HW_UNIT_HBM] = "hbm",
	[HW_UNIT_OVERHEAD] = "overhead",
	[HW_UNIT_ICI] = "ici",
};
_Static_assert(TS_ARRAY_LEN(unit_names) == HW_UNIT_COUNT,
	       "unit_names must name every hw_unit");

const char *hw_unit_name(enum hw_unit u)
{
	if ((unsigned)u >= HW_UNIT_COUNT)
		return "unknown";
	return unit_names[u];
}

/* ---- the field table ----------------------------------------------------- */

enum hw_field_type {
	HW_FIELD_SECTION, /* a nested mapping with its own rows */
	HW_FIELD_NAME,    /* char[HW_NAME_MAX], [A-Za-z0-9._-]+ */
	HW_FIELD_INT,     /* int, decimal digits only */
	HW_FIELD_REAL,    /* double, decimal or exponent notation */
	HW_FIELD_BOOL,    /* bool, true or false */
	HW_FIELD_INHERITS,/* the parent spec's file (read before the walk) */
};

/* One YAML key. Every row is required: a spec sets every field, itself or
 * through the spec it inherits from. Numeric rows carry their public
 * description (hw_field_info: full path, unit, range), which is what
 * hw_spec_field() hands out. */
struct hw_field {
	const char *key;                 /* YAML key within its section */
	enum hw_field_type type;         /* how the value is parsed */
	size_t offset;                   /* offsetof(struct hw_spec, field) */
	struct hw_field_info info;       /* numeric rows: path, unit ("" for
	                                    counts), accepted range */
	const struct hw_field *children; /* HW_FIELD_SECTION: its rows */
	size_t n_children;               /* rows in children */
};

/* Rows of numeric fields; SEC is the section's dotted path. */
#define HW_OFF(f) offsetof(struct hw_spec, f)
#define HW_INT(sec, k, f, u, lo, hi)                                           \
	{ .key = k, .type = HW_FIELD_INT, .offset = HW_OFF(f),                 \
	  .info = { sec "." k, u, lo, hi, true } }
#define HW_REAL_AT(sec, k, off, u, lo, hi)                                     \
	{ .key = k, .type = HW_FIELD_REAL, .offset = off,                      \
	  .info = { sec "." k, u, lo, hi, false } }
#define HW_REAL(sec, k, f, u, lo, hi) HW_REAL_AT(sec, k, HW_OFF(f), u, lo, hi)
#define HW_SECTION(k, rows)                                                    \
	{ .key = k, .type = HW_FIELD_SECTION, .children = rows,                \
	  .n_children = TS_ARRAY_LEN(rows) }
/* vpu_class_cost[c]: offsetof takes a member name only in strict C11. */
#define HW_COST_OFF(c) (HW_OFF(vpu_class_cost) + (size_t)(c) * sizeof(double))

/* Widest section; sizes the per-mapping "seen" array in load_mapping(). */
#define HW_SECTION_MAX 13
#define HW_SECTION_FITS(rows) \
	_Static_assert(TS_ARRAY_LEN(rows) <= HW_SECTION_MAX, #rows " exceeds HW_SECTION_MAX")

/*
 * Ranges reject typos and unit slips (GB/s written as bytes/s, MHz as Hz),
 * not unusual hardware: each spans every published generation (docs/TPU.md
 * section 1) with a margin of several times either way.
 */
static const struct hw_field chip_fields[] = {
	HW_INT("chip", "tensorcores", tensorcores_per_chip, "", 1, 8),
	{ .key = "megacore", .type = HW_FIELD_BOOL, .offset = HW_OFF(megacore) },
	HW_REAL("chip", "megacore_min_elems", megacore_min_elems, "elements", 0, 1e15),
};
HW_SECTION_FITS(chip_fields);

/* A what-if sweep builds each kernel's plan once when it sweeps only fields
 * no plan reads (sim_plan_spec_free in sim/config.c names them: the chip,
 * hbm, vmem, ici, dcn, pcie, overhead and host sections and the MXU array's fields
 * below but f32_passes). A field added to those sections is taken as plan-free:
 * if sim_plan_build reads it, sim_plan_spec_free must leave it out
 * (test_plan_reuse checks every free field). */
static const struct hw_field mxu_fields[] = {
	HW_INT("mxu", "count", mxu_count, "", 1, 16),
	HW_INT("mxu", "rows", mxu_rows, "", 8, 1024),
	HW_INT("mxu", "cols", mxu_cols, "", 8, 1024),
	HW_REAL("mxu", "clock_hz", clock_hz, "Hz", 1e8, 1e10),
	HW_REAL("mxu", "macs_per_cell_cycle", mxu_macs_per_cell_cycle, "MACs", 0.125, 16),
	HW_INT("mxu", "f32_passes", mxu_f32_passes, "passes", 1, 9),
	HW_REAL("mxu", "pass_cycles", mxu_pass_cycles, "cycles", 0, 1e4),
	HW_REAL("mxu", "int8_rate", mxu_int8_rate, "", 1, 8),
};
HW_SECTION_FITS(mxu_fields);

static const struct hw_field vpu_cost_fields[] = {
	HW_REAL_AT("vpu.cost", "simple", HW_COST_OFF(HW_VPU_SIMPLE), "slots", 0.125, 1024),
	HW_REAL_AT("vpu.cost", "divide", HW_COST_OFF(HW_VPU_DIVIDE), "slots", 0.125, 1024),
	HW_REAL_AT("vpu.cost", "transcendental", HW_COST_OFF(HW_VPU_TRANSCEND), "slots", 0.125, 1024),
	HW_REAL_AT("vpu.cost", "trig", HW_COST_OFF(HW_VPU_TRIG), "slots", 0.125, 1024),
	HW_REAL_AT("vpu.cost", "rng", HW_COST_OFF(HW_VPU_RNG), "slots", 0.125, 1024),
};
HW_SECTION_FITS(vpu_cost_fields);
/* Every class but composite, which is derived (derive_figures()). */
_Static_assert(TS_ARRAY_LEN(vpu_cost_fields) == HW_VPU_CLASS_COUNT - 1,
	       "vpu.cost needs one key per hw_vpu_class");

static const struct hw_field vpu_fields[] = {
	HW_INT("vpu", "sublanes", vpu_sublanes, "", 1, 64),
	HW_INT("vpu", "lanes", vpu_lanes, "", 1, 1024),
	HW_INT("vpu", "alus", vpu_alus, "", 1, 16),
	HW_SECTION("cost", vpu_cost_fields),
	HW_REAL("vpu", "xlu_lane_reduce_cost", xlu_lane_reduce_cost, "slots", 0.125, 1024),
	HW_REAL("vpu", "xlu_lane_permute_cost", xlu_lane_permute_cost, "slots", 0.125, 1024),
	HW_REAL("vpu", "xlu_transpose_cost", xlu_transpose_cost, "slots", 0.125, 1024),
	HW_REAL("vpu", "f16_load_cost", vpu_f16_load_cost, "slots", 0, 1024),
	HW_REAL("vpu", "f16_store_cost", vpu_f16_store_cost, "slots", 0, 1024),
};
HW_SECTION_FITS(vpu_fields);

static const struct hw_field hbm_fields[] = {
	HW_REAL("hbm", "bytes", hbm_bytes, "bytes", 1048576, 1099511627776.0),
	HW_REAL("hbm", "bw_bytes_per_s", hbm_bw_bytes_per_s, "bytes/s", 1e9, 1e14),
	HW_REAL("hbm", "efficiency", hbm_efficiency, "", 0.01, 1),
	HW_REAL("hbm", "dma_latency_ns", dma_latency_ns, "ns", 0, 1e5),
	HW_REAL("hbm", "dma_chunk_ns", dma_chunk_ns, "ns", 0, 1e4),
};
HW_SECTION_FITS(hbm_fields);

static const struct hw_field vmem_fields[] = {
	HW_REAL("vmem", "bytes", vmem_bytes, "bytes", 65536, 4294967296.0),
	HW_REAL("vmem", "scoped_bytes", vmem_scoped_bytes, "bytes", 65536,
		4294967296.0),
};
HW_SECTION_FITS(vmem_fields);

static const struct hw_field overhead_fields[] = {
	HW_REAL("overhead", "kernel_ns", kernel_overhead_ns, "ns", 0, 1e6),
	HW_REAL("overhead", "program_ns", program_overhead_ns, "ns", 0, 1e6),
	HW_REAL("overhead", "step_ns", step_overhead_ns, "ns", 0, 1e5),
	HW_REAL("overhead", "row_cycles", row_overhead_cycles, "cycles", 0, 1e4),
};
HW_SECTION_FITS(overhead_fields);

static const struct hw_field host_fields[] = {
	HW_REAL("host", "call_ns", host_call_ns, "ns", 0, 1e8),
	HW_REAL("host", "kernel_ns", host_kernel_ns, "ns", 0, 1e7),
	HW_REAL("host", "device_ns", host_device_ns, "ns", 0, 1e7),
};
HW_SECTION_FITS(host_fields);

static const struct hw_field ici_fields[] = {
	HW_INT("ici", "links", ici_links, "", 1, 64),
	/* physical lower bounds: a chip with links moves data over them
	 * (100 MB/s is far below any published link) */
	HW_REAL("ici", "link_bw_bytes_per_s", ici_link_bw_bytes_per_s, "bytes/s", 1e8, 1e13),
	HW_REAL("ici", "latency_ns", ici_latency_ns, "ns", 0, 1e6),
	HW_REAL("ici", "efficiency", ici_efficiency, "", 0.01, 1),
	/* a slice names at most HW_SLICE_MAX_DIMS of them; twice that
	 * leaves what-if room */
	HW_INT("ici", "torus_dims", ici_torus_dims, "", 1, 2 * HW_SLICE_MAX_DIMS),
	HW_INT("ici", "wrap_chips", ici_wrap_chips, "chips", 1, HW_SLICE_MAX_EXTENT),
	{ .key = "wrap_cube", .type = HW_FIELD_BOOL, .offset = HW_OFF(ici_wrap_cube) },
};
HW_SECTION_FITS(ici_fields);

static const struct hw_field dcn_fields[] = {
	/* a data-centre network port: 1 Gb/s to 1 Tb/s per chip */
	HW_REAL("dcn", "bw_bytes_per_s", dcn_bw_bytes_per_s, "bytes/s", 1e8, 1e12),
	HW_REAL("dcn", "latency_ns", dcn_latency_ns, "ns", 0, 1e7),
};
HW_SECTION_FITS(dcn_fields);

static const struct hw_field pcie_fields[] = {
	/* the host link: 1 GB/s to 1 TB/s per chip */
	HW_REAL("pcie", "bw_bytes_per_s", pcie_bw_bytes_per_s, "bytes/s", 1e9, 1e12),
};
HW_SECTION_FITS(pcie_fields);

static const struct hw_field xla_fields[] = {
	{ .key = "row_max_window", .type = HW_FIELD_BOOL,
	  .offset = HW_OFF(xla_row_max_window) },
	HW_REAL("xla", "async_all_reduce_bytes", xla_async_all_reduce_bytes,
		"bytes", 0, 1e15),
	{ .key = "async_all_gather", .type = HW_FIELD_BOOL,
	  .offset = HW_OFF(xla_async_all_gather) },
	HW_REAL("xla", "all_reduce_combine_bytes",
		xla_all_reduce_combine_bytes, "bytes", 0, 1e15),
};
HW_SECTION_FITS(xla_fields);

static const struct hw_field root_fields[] = {
	{ .key = "name", .type = HW_FIELD_NAME, .offset = HW_OFF(name) },
	{ .key = "inherits", .type = HW_FIELD_INHERITS },
	HW_SECTION("chip", chip_fields),
	HW_SECTION("mxu", mxu_fields),
	HW_SECTION("vpu", vpu_fields),
	HW_SECTION("hbm", hbm_fields),
	HW_SECTION("vmem", vmem_fields),
	HW_SECTION("overhead", overhead_fields),
	HW_SECTION("host", host_fields),
	HW_SECTION("ici", ici_fields),
	HW_SECTION("dcn", dcn_fields),
	HW_SECTION("pcie", pcie_fields),
	HW_SECTION("xla", xla_fields),
};
HW_SECTION_FITS(root_fields);

/* Longest field path, "vpu.cost.transcendental", plus room for an unknown
 * key (cut to fit) in its message. */
#define HW_PATH_MAX 96

/* ---- loader context and diagnostics -------------------------------------- */

struct hw_load_ctx {
	const char *file;     /* name used in diagnostics */
	const char *text;     /* the whole source, for marks and the caret */
	size_t len;           /* bytes in text */
	yaml_document_t *doc; /* the loaded document */
	struct hw_spec *out;  /* filled field by field */
	struct ts_diag *d;    /* error destination */
	bool inherited;       /* out starts from a parent's values: fields
	                         the file does not set are the parent's */
};

/* Byte offset of the start of 0-based line `line`, or len if past the end. */
static size_t line_start(const struct hw_load_ctx *c, size_t line)
{
	size_t off = 0;
	while (line > 0 && off < c->len) {
		const char *nl = memchr(c->text + off, '\n', c->len - off);
		if (!nl)
			return c->len;
		off = (size_t)(nl - c->text) + 1;
		line--;
	}
	return off;
}

/*
 * libyaml marks are 0-based and count columns in characters; ts_diag wants
 * 1-based byte columns. Walks `column` UTF-8 characters from the start of
 * the line (a lead byte's high bits give the character's width).
 */
static void mark_to_loc(const struct hw_load_ctx *c, yaml_mark_t m,
			uint32_t *line, uint32_t *col)
{
	size_t start = line_start(c, m.line), off = start;
	size_t ch = 0;
	while (ch < m.column && off < c->len && c->text[off] != '\n') {
		unsigned char b = (unsigned char)c->text[off];
		size_t w = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
		off += w;
		ch++;
	}
	if (off > c->len)
		off = c->len;
	*line = m.line + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(m.line + 1);
	size_t bcol = off - start + 1;
	*col = bcol > UINT32_MAX ? UINT32_MAX : (uint32_t)bcol;
}

/* Line and column of a byte offset (libyaml reader errors give only that). */
static void offset_to_loc(const struct hw_load_ctx *c, size_t off,
			  uint32_t *line, uint32_t *col)
{
	size_t l = 1, start = 0;
	if (off > c->len)
		off = c->len;
	for (size_t i = 0; i < off; i++) {
		if (c->text[i] == '\n') {
			l++;
			start = i + 1;
		}
	}
	*line = l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
	*col = off - start + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(off - start + 1);
}

/* Attaches the source to the diagnostic just set (for the caret line). */
static enum ts_status spec_error(const struct hw_load_ctx *c)
{
	if (c->d) {
		c->d->src = c->text;
		c->d->src_len = c->len;
	}
	return TS_ERR_SPEC;
}

__attribute__((format(printf, 3, 4)))
static enum ts_status fail_at(const struct hw_load_ctx *c, yaml_mark_t m,
			      const char *fmt, ...)
{
	uint32_t line, col;
	mark_to_loc(c, m, &line, &col);
	va_list ap;
	va_start(ap, fmt);
	ts_diag_vset(c->d, c->file, line, col, fmt, ap);
	va_end(ap);
	return spec_error(c);
}

/* Collections nested deeper than this make no spec (specs nest 3 deep). */
#define HW_YAML_MAX_DEPTH 32

/* Refuses text whose collections nest deeper than HW_YAML_MAX_DEPTH, at
 * the first one too deep, before libyaml's document loader sees it (it
 * takes time quadratic in the depth: 30,000 levels of [[[...]]] take
 * seconds). The event parser stops there; syntax errors are left to the
 * loader, which says them in full. */
static enum ts_status check_depth(const struct hw_load_ctx *c)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		ts_diag_set(c->d, c->file, 0, 0, "out of memory reading YAML");
		return TS_ERR_NOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)c->text,
				     c->len);
	enum ts_status st = TS_OK;
	int depth = 0;
	yaml_event_t ev;
	while (st == TS_OK && yaml_parser_parse(&parser, &ev)) {
		yaml_event_type_t t = ev.type;
		if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
			if (++depth > HW_YAML_MAX_DEPTH)
				st = fail_at(c, ev.start_mark,
					     "collections nested deeper than %d "
					     "levels", HW_YAML_MAX_DEPTH);
		} else if (t == YAML_SEQUENCE_END_EVENT ||
			   t == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&parser);
	return st;
}

/*
 * Copies a scalar into buf for quoting in a message: at most 40 bytes, any
 * byte outside printable ASCII shown as '?', so that binary junk or a
 * megabyte-long value cannot garble or flood the diagnostic.
 */
static const char *quote_scalar(const yaml_node_t *n, char *buf, size_t cap)
{
	size_t len = n->data.scalar.length, i, o = 0;
	const unsigned char *v = n->data.scalar.value;
	for (i = 0; i < len && o + 4 < cap && o < 40; i++)
		buf[o++] = (v[i] >= 0x20 && v[i] < 0x7f) ? (char)v[i] : '?';
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static const char *node_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a sequence";
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_NO_NODE:
		break;
	}
	return "nothing";
}

/* Joins prefix and key into "prefix.key" (or "key" at the top level). */
static void join_path(char *buf, size_t cap, const char *prefix,
		      const char *key, size_t key_len)
{
	int n = prefix[0] ? snprintf(buf, cap, "%s.", prefix) : 0;
	if (n < 0 || (size_t)n >= cap)
		n = 0;
	size_t room = cap - (size_t)n - 1;
	if (key_len > room)
		key_len = room;
	memcpy(buf + n, key, key_len);
	buf[(size_t)n + key_len] = '\0';
}

/* ---- closest-key suggestion ---------------------------------------------- */

/* Levenshtein distance, capped: keys longer than 63 bytes are simply far. */
static size_t edit_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	if (la > 63 || lb > 63)
		return SIZE_MAX;
	size_t row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/*
 * The known key closest to an unknown one, or NULL when none is close: within
 * 2 edits or a third of the longer key, or sharing a 3+ byte prefix with it
 * ("clock" for "clock_hz"). Beyond that a suggestion is more confusing than
 * the list of keys.
 */
static const char *closest_key(const struct hw_field *rows, size_t n,
			       const char *key, size_t len)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(key, len, rows[i].key);
		size_t kl = strlen(rows[i].key);
		size_t longer = kl > len ? kl : len;
		size_t common = kl < len ? kl : len;
		bool prefix = common >= 3 && strncmp(key, rows[i].key, common) == 0;
		bool close = d <= 2 || d * 3 <= longer || prefix;
		if (close && d < best_d) {
			best = rows[i].key;
			best_d = d;
		}
	}
	return best;
}

/* ---- scalar parsing ------------------------------------------------------ */

/* Plain (unquoted) scalar made only of bytes in `allowed`, no embedded NUL. */
static bool scalar_is(const yaml_node_t *n, const char *allowed)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	if (len == 0 || strlen(v) != len)
		return false;
	return strspn(v, allowed) == len;
}

static enum ts_status range_error(const struct hw_load_ctx *c,
				  const yaml_node_t *v, const char *path,
				  const struct hw_field *f)
{
	char q[48];
	return fail_at(c, v->start_mark, "%s: %s is out of range [%.6g, %.6g]%s%s",
		       path, quote_scalar(v, q, sizeof q), f->info.min, f->info.max,
		       f->info.unit[0] ? " " : "", f->info.unit);
}

/* Parses and range-checks a leaf value and stores it in c->out. */
static enum ts_status load_leaf(const struct hw_load_ctx *c,
				const yaml_node_t *v, const char *path,
				const struct hw_field *f)
{
	static const char *const expected[] = {
		[HW_FIELD_SECTION] = "a mapping",
		[HW_FIELD_NAME] = "a name",
		[HW_FIELD_INT] = "an integer",
		[HW_FIELD_REAL] = "a number",
		[HW_FIELD_BOOL] = "true or false",
		[HW_FIELD_INHERITS] = "a file name",
	};
	char q[48];
	char *dst = (char *)c->out + f->offset;

	if (v->type != YAML_SCALAR_NODE)
		return fail_at(c, v->start_mark, "%s: expected %s, got %s", path,
			       expected[f->type], node_kind(v));
	if (v->data.scalar.length == 0)
		return fail_at(c, v->start_mark, "%s: expected %s, got an empty value",
			       path, expected[f->type]);
	/* A quoted "128" is a string in YAML; numbers and booleans are plain. */
	if (f->type != HW_FIELD_NAME && v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return fail_at(c, v->start_mark, "%s: expected %s, got the quoted string '%s'",
			       path, expected[f->type], quote_scalar(v, q, sizeof q));

	const char *s = (const char *)v->data.scalar.value;
	switch (f->type) {
	case HW_FIELD_NAME: {
		static const char name_chars[] =
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
		if (v->data.scalar.length >= HW_NAME_MAX || !scalar_is(v, name_chars))
			return fail_at(c, v->start_mark,
				       "%s: expected 1 to %d characters of [A-Za-z0-9._-], got '%s'",
				       path, HW_NAME_MAX - 1, quote_scalar(v, q, sizeof q));
		memcpy(dst, s, v->data.scalar.length + 1);
		return TS_OK;
	}
	case HW_FIELD_BOOL:
		if (strcmp(s, "true") == 0 && v->data.scalar.length == 4)
			*(bool *)dst = true;
		else if (strcmp(s, "false") == 0 && v->data.scalar.length == 5)
			*(bool *)dst = false;
		else
			return fail_at(c, v->start_mark, "%s: expected true or false, got '%s'",
				       path, quote_scalar(v, q, sizeof q));
		return TS_OK;
	case HW_FIELD_INT: {
		char *end;
		if (!scalar_is(v, "+-0123456789"))
			return fail_at(c, v->start_mark, "%s: expected an integer, got '%s'",
				       path, quote_scalar(v, q, sizeof q));
		errno = 0;
		long long x = strtoll(s, &end, 10);
		if (end != s + v->data.scalar.length)
			return fail_at(c, v->start_mark, "%s: expected an integer, got '%s'",
				       path, quote_scalar(v, q, sizeof q));
		if (errno == ERANGE || (double)x < f->info.min ||
		    (double)x > f->info.max)
			return range_error(c, v, path, f);
		*(int *)dst = (int)x;
		return TS_OK;
	}
	case HW_FIELD_REAL: {
		char *end;
		/* Excludes strtod's extras: hex floats, inf, nan, leading space. */
		if (!scalar_is(v, "+-.0123456789eE"))
			return fail_at(c, v->start_mark, "%s: expected a number, got '%s'",
				       path, quote_scalar(v, q, sizeof q));
		errno = 0;
		double x = strtod(s, &end);
		if (end != s + v->data.scalar.length)
			return fail_at(c, v->start_mark, "%s: expected a number, got '%s'",
				       path, quote_scalar(v, q, sizeof q));
		/* strtod's ERANGE also flags an underflow to a subnormal or
		 * 0, a value the range decides; an overflow is infinite */
		if (!isfinite(x) || x < f->info.min || x > f->info.max)
			return range_error(c, v, path, f);
		*(double *)dst = x;
		return TS_OK;
	}
	case HW_FIELD_INHERITS: /* resolved before the walk */
		return TS_OK;
	case HW_FIELD_SECTION:
		break;
	}
	TS_ASSERT(!"load_leaf called on a section");
	return TS_ERR_SPEC;
}

/* ---- mapping walker ------------------------------------------------------ */

/*
 * Walks one mapping against its rows: every key must be a known, unique,
 * plain scalar; values are parsed by type (sections recurse). Afterwards
 * every row must have been seen. The first error wins and is returned.
 */
static enum ts_status load_mapping(const struct hw_load_ctx *c,
				   const yaml_node_t *m, const char *prefix,
				   const struct hw_field *rows, size_t n)
{
	const yaml_node_t *seen[HW_SECTION_MAX] = { 0 };
	char path[HW_PATH_MAX];
	enum ts_status st;

	if (m->type != YAML_MAPPING_NODE) {
		if (prefix[0])
			return fail_at(c, m->start_mark, "%s: expected a mapping, got %s",
				       prefix, node_kind(m));
		return fail_at(c, m->start_mark,
			       "expected a mapping of name, chip, mxu, vpu, hbm, vmem, "
			       "overhead, host, ici, dcn and pcie at the top level, got %s", node_kind(m));
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
	     p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
		TS_ASSERT(k && v);
		if (k->type != YAML_SCALAR_NODE)
			return fail_at(c, k->start_mark, "%s%skeys must be plain names, got %s",
				       prefix, prefix[0] ? ": " : "", node_kind(k));
		const char *key = (const char *)k->data.scalar.value;
		size_t klen = k->data.scalar.length;
		join_path(path, sizeof path, prefix, key, klen);
		size_t i;
		for (i = 0; i < n; i++)
			if (strlen(rows[i].key) == klen && memcmp(rows[i].key, key, klen) == 0)
				break;
		if (i == n) {
			char q[48];
			quote_scalar(k, q, sizeof q);
			join_path(path, sizeof path, prefix, q, strlen(q));
			const char *near = closest_key(rows, n, key, klen);
			if (near)
				return fail_at(c, k->start_mark,
					       "%s: unknown key (did you mean '%s'?)", path, near);
			char list[HW_PATH_MAX * 2] = "";
			for (size_t j = 0; j < n; j++) {
				size_t used = strlen(list);
				snprintf(list + used, sizeof list - used, "%s%s",
					 j ? ", " : "", rows[j].key);
			}
			return fail_at(c, k->start_mark, "%s: unknown key; expected one of: %s",
				       path, list);
		}
		if (seen[i]) {
			uint32_t line, col;
			mark_to_loc(c, seen[i]->start_mark, &line, &col);
			return fail_at(c, k->start_mark,
				       "%s: duplicate key (first given at line %u)", path, line);
		}
		seen[i] = k;
		if (rows[i].type == HW_FIELD_SECTION)
			st = load_mapping(c, v, path, rows[i].children, rows[i].n_children);
		else
			st = load_leaf(c, v, path, &rows[i]);
		if (st != TS_OK)
			return st;
	}
	for (size_t i = 0; i < n; i++) {
		/* A child spec sets what differs from its parent, and its name. */
		if (seen[i] || rows[i].type == HW_FIELD_INHERITS ||
		    (c->inherited && rows[i].type != HW_FIELD_NAME))
			continue;
		join_path(path, sizeof path, prefix, rows[i].key, strlen(rows[i].key));
		return fail_at(c, m->start_mark, "%s: missing %s", path,
			       rows[i].type == HW_FIELD_SECTION ? "section" : "field");
	}
	return TS_OK;
}

/* ---- cross-field checks -------------------------------------------------- */

/* The value node at a dotted path (known to exist once load_mapping passed). */
static const yaml_node_t *node_at(const struct hw_load_ctx *c, const char *path)
{
	const yaml_node_t *n = yaml_document_get_root_node(c->doc);
	while (n && *path) {
		if (n->type != YAML_MAPPING_NODE)
			return NULL;
		size_t len = strcspn(path, ".");
		const yaml_node_t *next = NULL;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
			if (k->data.scalar.length == len &&
			    memcmp(k->data.scalar.value, path, len) == 0) {
				next = yaml_document_get_node(c->doc, p->value);
				break;
			}
		}
		n = next;
		path += len + (path[len] == '.');
	}
	return n;
}

/*
 * Checks that relate two fields: false with the first named field and what
 * is wrong. Single-field ranges live in the tables above.
 */
static bool consistent(const struct hw_spec *s, const char **path,
		       const char **msg)
{
	*path = *msg = NULL;
	if (s->megacore && s->tensorcores_per_chip < 2) {
		*path = "chip.megacore";
		*msg = "true needs chip.tensorcores >= 2 (one program spanning several cores)";
	} else if (s->vmem_bytes > s->hbm_bytes) {
		*path = "vmem.bytes";
		*msg = "larger than hbm.bytes; VMEM is a scratchpad in front of HBM";
	} else if (s->vmem_scoped_bytes > s->vmem_bytes) {
		*path = "vmem.scoped_bytes";
		*msg = "larger than vmem.bytes; the scoped limit is a part of VMEM";
	}
	return !*path;
}

/* consistent(), each failure located at the first named field. */
static enum ts_status check_consistency(const struct hw_load_ctx *c)
{
	const char *path, *msg;
	if (consistent(c->out, &path, &msg))
		return TS_OK;
	/* The file that inherits a field does not write it: point at the top. */
	const yaml_node_t *n = node_at(c, path);
	if (!n)
		n = yaml_document_get_root_node(c->doc);
	return fail_at(c, n->start_mark, "%s: %s", path, msg);
}

/*
 * Figures the spec does not state because they follow from others:
 *   composite = transcendental + divide + 2 x simple   (slots per vreg)
 * A composite function (logistic, erf, pow, expm1, ...) is one EUP
 * function, a divide and about two simple ops: logistic = 1 / (1 + exp(-x))
 * exactly so. Known wrong for erf and pow, which take a few more steps;
 * no data set has them. Checked: tpuv4-ops sigmoid, which JAX writes as
 * those ops, is costed from them at ~6% MAPE. Source: docs/TPU.md section
 * 2 rule 7 (EUP functions), the op definitions in jax.nn.
 */
static void derive_figures(struct hw_spec *s)
{
	double *c = s->vpu_class_cost;
	c[HW_VPU_COMPOSITE] =
		c[HW_VPU_TRANSCEND] + c[HW_VPU_DIVIDE] + 2 * c[HW_VPU_SIMPLE];
}

/* ---- entry points -------------------------------------------------------- */

/* Turns a libyaml failure into a located diagnostic. */
static enum ts_status yaml_failure(const struct hw_load_ctx *c,
				   const yaml_parser_t *p)
{
	if (p->error == YAML_MEMORY_ERROR) {
		ts_diag_set(c->d, c->file, 0, 0, "out of memory reading YAML");
		return TS_ERR_NOMEM;
	}
	const char *problem = p->problem ? p->problem : "malformed YAML";
	if (p->error == YAML_READER_ERROR) {
		uint32_t line, col;
		offset_to_loc(c, p->problem_offset, &line, &col);
		ts_diag_set(c->d, c->file, line, col, "YAML syntax error: %s", problem);
		return spec_error(c);
	}
	if (p->context) {
		uint32_t line, col;
		mark_to_loc(c, p->context_mark, &line, &col);
		return fail_at(c, p->problem_mark, "YAML syntax error: %s (%s at %u:%u)",
			       problem, p->context, line, col);
	}
	return fail_at(c, p->problem_mark, "YAML syntax error: %s", problem);
}

/* The specs being loaded, child first: what a cycle is checked against. */
struct hw_chain {
	int n;
	const char *name[HW_INHERIT_MAX + 1]; /* as given, for messages */
	char *real[HW_INHERIT_MAX + 1];       /* realpath(3), for comparing */
};

static enum ts_status load_text_at(const char *name, const char *text,
				   size_t len, struct hw_spec *spec,
				   struct ts_diag *d, struct hw_chain *chain);

/*
 * Loads the parent named by the `inherits` value v of file c->file into
 * *out: the path is relative to the folder of c->file. Errors are located
 * at v, except errors inside the parent, which are the parent's own.
 */
static enum ts_status load_parent(const struct hw_load_ctx *c,
				  const yaml_node_t *v, struct hw_chain *chain,
				  struct hw_spec *out)
{
	char q[48];
	if (v->type != YAML_SCALAR_NODE || v->data.scalar.length == 0)
		return fail_at(c, v->start_mark,
			       "inherits: expected a file name, got %s",
			       v->type == YAML_SCALAR_NODE ? "an empty value"
							   : node_kind(v));
	const char *val = (const char *)v->data.scalar.value;
	if (!chain)
		return fail_at(c, v->start_mark,
			       "inherits: '%s' cannot be resolved for a spec "
			       "given as text (no folder to look in)",
			       quote_scalar(v, q, sizeof q));
	if (chain->n > HW_INHERIT_MAX)
		return fail_at(c, v->start_mark,
			       "inherits: more than %d levels of inheritance",
			       HW_INHERIT_MAX);
	const char *slash = strrchr(c->file, '/');
	int dir_len = val[0] == '/' || !slash ? 0 : (int)(slash - c->file + 1);
	size_t plen = (size_t)dir_len + strlen(val) + 1;
	char *ppath = ts_malloc(plen);
	if (!ppath) {
		ts_diag_set(c->d, c->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	snprintf(ppath, plen, "%.*s%s", dir_len, c->file, val);
	char *text = NULL;
	size_t len = 0;
	enum ts_status st;
	char *real = realpath(ppath, NULL);
	if (!real) {
		st = fail_at(c, v->start_mark, "inherits: cannot read '%s': %s",
			     ppath, strerror(errno));
		goto out;
	}
	for (int i = 0; i < chain->n; i++) {
		if (strcmp(chain->real[i], real))
			continue;
		char msg[TS_DIAG_MSG_MAX] = "";
		for (int k = i; k < chain->n; k++) {
			size_t used = strlen(msg);
			snprintf(msg + used, sizeof msg - used, "%s -> ",
				 chain->name[k]);
		}
		st = fail_at(c, v->start_mark, "inherits: cycle: %s%s", msg,
			     ppath);
		free(real);
		goto out;
	}
	struct ts_diag pd = {0};
	if ((st = ts_read_file_max(ppath, HW_SPEC_MAX_BYTES, &text, &len,
				   &pd)) != TS_OK) {
		free(real);
		st = fail_at(c, v->start_mark, "inherits: cannot read '%s': %s",
			     ppath, pd.msg);
		goto out;
	}
	chain->name[chain->n] = ppath;
	chain->real[chain->n++] = real;
	st = load_text_at(ppath, text, len, out, c->d, chain);
	free(chain->real[--chain->n]);
	if (st == TS_ERR_NOMEM) {
		ts_diag_set(c->d, c->file, 0, 0, "out of memory");
	} else if (st != TS_OK && c->d) {
		/* The parent's text and name go with this call: its error is
		 * reported at the `inherits` line, naming where it is. */
		char where[TS_DIAG_MSG_MAX];
		snprintf(where, sizeof where, "%.200s:%u:%u: %.280s", ppath,
			 c->d->line, c->d->col, c->d->msg);
		st = fail_at(c, v->start_mark, "inherits: %s", where);
	}
out:
	ts_free(text);
	ts_free(ppath);
	return st;
}

static enum ts_status load_text_at(const char *name, const char *text,
				   size_t len, struct hw_spec *spec,
				   struct ts_diag *d, struct hw_chain *chain)
{
	if (!text || !spec) {
		ts_diag_set(d, name, 0, 0, "hw_spec_load_text: NULL text or spec");
		return TS_ERR_MISUSE;
	}
	struct hw_spec tmp;
	memset(&tmp, 0, sizeof tmp);
	struct hw_load_ctx c = {
		.file = name, .text = text, .len = len, .out = &tmp, .d = d,
	};
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	bool have_doc = false, have_extra = false;
	enum ts_status st;

	if (!yaml_parser_initialize(&parser)) {
		ts_diag_set(d, name, 0, 0, "out of memory reading YAML");
		return TS_ERR_NOMEM;
	}
	if ((st = check_depth(&c)) != TS_OK) {
		yaml_parser_delete(&parser);
		return st;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		st = yaml_failure(&c, &parser);
		goto out;
	}
	have_doc = true;
	c.doc = &doc;
	const yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		st = fail_at(&c, doc.start_mark,
			     "empty spec: expected a mapping of name, chip, mxu, vpu, "
			     "hbm, vmem, overhead, host, ici, dcn and pcie");
		goto out;
	}
	/* One document per file: a second one is trailing garbage, not a spec. */
	if (!yaml_parser_load(&parser, &extra)) {
		st = yaml_failure(&c, &parser);
		goto out;
	}
	have_extra = true;
	if (yaml_document_get_root_node(&extra)) {
		st = fail_at(&c, extra.start_mark,
			     "a second YAML document starts here; a spec file holds exactly one");
		goto out;
	}
	const yaml_node_t *inh =
		root->type == YAML_MAPPING_NODE ? node_at(&c, "inherits") : NULL;
	if (inh) {
		if ((st = load_parent(&c, inh, chain, &tmp)))
			goto out;
		c.inherited = true;
		tmp.name[0] = '\0'; /* every file names itself */
	}
	st = load_mapping(&c, root, "", root_fields, TS_ARRAY_LEN(root_fields));
	if (st == TS_OK)
		st = check_consistency(&c);
	if (st == TS_OK) {
		derive_figures(&tmp);
		*spec = tmp;
	}
out:
	if (have_extra)
		yaml_document_delete(&extra);
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return st;
}

enum ts_status hw_spec_load_text(const char *name, const char *text,
				 size_t len, struct hw_spec *spec,
				 struct ts_diag *d)
{
	return load_text_at(name, text, len, spec, d, NULL);
}

enum ts_status hw_spec_load_file(const char *path, char **text_out,
				 struct hw_spec *spec, struct ts_diag *d)
{
	char *text = NULL;
	size_t len = 0;
	*text_out = NULL;
	if (!path) {
		ts_diag_set(d, "<spec>", 0, 0, "hw_spec_load_file: NULL path");
		return TS_ERR_MISUSE;
	}
	enum ts_status st = ts_read_file_max(path, HW_SPEC_MAX_BYTES, &text, &len, d);
	if (st != TS_OK)
		return st;
	*text_out = text;
	struct hw_chain chain = {.n = 1, .name = {path}};
	chain.real[0] = realpath(path, NULL);
	if (!chain.real[0]) {
		ts_diag_set(d, path, 0, 0, "cannot resolve the path: %s",
			    strerror(errno));
		return TS_ERR_IO;
	}
	st = load_text_at(path, text, len, spec, d, &chain);
	free(chain.real[0]);
	return st;
}

enum ts_status hw_spec_load(const char *path, struct hw_spec *spec,
			    struct ts_diag *d)
{
	char *text = NULL;
	enum ts_status st = hw_spec_load_file(path, &text, spec, d);
	ts_free(text);
	/* The text is gone: no caret, but file:line:col and the message stay. */
	if (d) {
		d->src = NULL;
		d->src_len = 0;
	}
	return st;
}

/* ---- fields by path ------------------------------------------------------ */

/* Depth-first over the table: the i-th numeric row (i counts down), or the
 * row whose path is `path` when path is not NULL. */
static const struct hw_field *find_row(const struct hw_field *rows, size_t n,
				       const char *path, int *i)
{
	for (size_t k = 0; k < n; k++) {
		const struct hw_field *r = &rows[k];
		if (r->type == HW_FIELD_SECTION) {
			r = find_row(r->children, r->n_children, path, i);
			if (r)
				return r;
			continue;
		}
		if (r->type != HW_FIELD_INT && r->type != HW_FIELD_REAL)
			continue;
		if (path ? !strcmp(r->info.path, path) : (*i)-- == 0)
			return r;
	}
	return NULL;
}

/* The row of an info handed out by hw_spec_field(): info is its member. */
static const struct hw_field *row_of(const struct hw_field_info *f)
{
	return (const struct hw_field *)(const void *)((const char *)f -
						       offsetof(struct hw_field, info));
}

const struct hw_field_info *hw_spec_field(const char *path)
{
	int unused = 0;
	const struct hw_field *r = find_row(root_fields, TS_ARRAY_LEN(root_fields),
					    path, &unused);
	return r ? &r->info : NULL;
}

int hw_spec_n_fields(void)
{
	int n = 0;
	while (hw_spec_field_at(n))
		n++;
	return n;
}

const struct hw_field_info *hw_spec_field_at(int i)
{
	if (i < 0)
		return NULL;
	const struct hw_field *r = find_row(root_fields, TS_ARRAY_LEN(root_fields),
					    NULL, &i);
	return r ? &r->info : NULL;
}

double hw_spec_get(const struct hw_spec *s, const struct hw_field_info *f)
{
	const struct hw_field *r = row_of(f);
	const char *p = (const char *)s + r->offset;
	if (f->is_int)
		return *(const int *)(const void *)p;
	return *(const double *)(const void *)p;
}

enum ts_status hw_spec_apply(struct hw_spec *s, int n,
			     const struct hw_field_info *const *fields,
			     const double *values, const char *const *texts,
			     struct ts_diag *d)
{
	struct hw_spec t = *s;
	for (int i = 0; i < n; i++) {
		enum ts_status st = hw_spec_set(&t, fields[i], values[i],
						texts ? texts[i] : NULL, d);
		if (st)
			return st;
	}
	const char *path, *msg;
	if (!consistent(&t, &path, &msg)) {
		ts_diag_set(d, NULL, 0, 0, "%s: %s", path, msg);
		return TS_ERR_SPEC;
	}
	derive_figures(&t);
	*s = t;
	return TS_OK;
}

enum ts_status hw_spec_set(struct hw_spec *s, const struct hw_field_info *f,
			   double v, const char *text, struct ts_diag *d)
{
	char num[32];
	if (!text) {
		snprintf(num, sizeof num, "%.17g", v);
		text = num;
	}
	if (!(v >= f->min && v <= f->max)) {
		ts_diag_set(d, NULL, 0, 0, "%s: %s is out of range [%.6g, %.6g]%s%s",
			    f->path, text, f->min, f->max, f->unit[0] ? " " : "",
			    f->unit);
		return TS_ERR_SPEC;
	}
	if (f->is_int && v != floor(v)) {
		ts_diag_set(d, NULL, 0, 0, "%s: %s is not an integer", f->path, text);
		return TS_ERR_SPEC;
	}
	char *p = (char *)s + row_of(f)->offset;
	if (f->is_int)
		*(int *)(void *)p = (int)v;
	else
		*(double *)(void *)p = v;
	return TS_OK;
}

/* The shortest text that reads back as v: plain decimals (56550, 0.9704)
 * where that is short, else %g's exponent form. */
static void format_value(char *buf, size_t cap, double v)
{
	if (fabs(v) >= 1e-3 && fabs(v) < 1e15)
		for (int dec = 0; dec <= 6; dec++) {
			snprintf(buf, cap, "%.*f", dec, v);
			if (strtod(buf, NULL) == v)
				return;
		}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* One change of the text: bytes [start, end) become repl (owned). */
struct text_edit {
	size_t start, end;
	char *repl;
	int order;       /* the field's place in the call: insertions at one
	                    offset come out in that order */
};

static int cmp_edit(const void *a, const void *b)
{
	const struct text_edit *x = a, *y = b; /* last first */
	if (x->start != y->start)
		return (x->start < y->start) - (x->start > y->start);
	return (x->order < y->order) - (x->order > y->order);
}

static size_t line_end(const char *t, size_t len, size_t i)
{
	while (i < len && t[i] != '\n')
		i++;
	return i;
}

/* Column (0-based) of the first non-blank byte of the line at i, and
 * whether that byte is '#' (a comment-only line). */
static size_t line_indent(const char *t, size_t len, size_t i, bool *comment)
{
	size_t k = i;
	while (k < len && (t[k] == ' ' || t[k] == '\t'))
		k++;
	*comment = k < len && t[k] == '#';
	return k - i;
}

/* After the line ending at e: the end of the comment-only lines indented
 * deeper than `col` (a field's comment continued under it). */
static size_t skip_comment_lines(const char *t, size_t len, size_t e,
				 size_t col)
{
	while (e < len) {
		bool comment;
		size_t ind = line_indent(t, len, e + 1, &comment);
		if (!comment || ind <= col)
			break;
		e = line_end(t, len, e + 1);
	}
	return e;
}

/* "VAL<pad spaces># LINE1" and, for each further line of the comment,
 * "\n" + spaces to column hcol + "#   LINE" (a continuation the loader's
 * comment rule keeps with the field). */
static void comment_lines(char *buf, size_t cap, const char *val, int pad,
			  size_t hcol, const char *comment)
{
	size_t n = (size_t)snprintf(buf, cap, "%s%*s# ", val, pad, "");
	for (const char *p = comment; *p && n < cap; p++) {
		if (*p == '\n')
			n += (size_t)snprintf(buf + n, cap - n, "\n%*s#   ",
					      (int)hcol, "");
		else
			buf[n++] = *p;
	}
	buf[n < cap ? n : cap - 1] = '\0';
}

/* The edit that sets field f (value text val) in the parsed file. */
static enum ts_status field_edit(const struct hw_load_ctx *c,
				 const struct hw_field_info *f, const char *val,
				 const char *comment, struct text_edit *e)
{
	const char *t = c->text;
	size_t len = c->len;
	const yaml_node_t *v = node_at(c, f->path);
	char buf[TS_DIAG_MSG_MAX + 256];
	if (v) {
		if (v->type != YAML_SCALAR_NODE)
			return fail_at(c, v->start_mark, "%s: expected a number",
				       f->path);
		size_t vs = v->start_mark.index, ve = v->end_mark.index;
		size_t eol = line_end(t, len, ve);
		size_t col = vs - line_start(c, v->start_mark.line);
		bool unused; /* the key's column: the line's indent */
		size_t key_col = line_indent(
			t, len, line_start(c, v->start_mark.line), &unused);
		e->start = vs;
		if (!comment) {
			e->end = ve;
			snprintf(buf, sizeof buf, "%s", val);
		} else {
			/* Keep the comment's column when there was one. */
			const char *hash = memchr(t + ve, '#', eol - ve);
			size_t hcol = hash ? (size_t)(hash - t) -
						     line_start(c, v->start_mark.line)
					   : 0;
			int pad = (int)hcol - (int)(col + strlen(val));
			if (pad < 2)
				pad = 2;
			e->end = skip_comment_lines(t, len, eol, key_col);
			comment_lines(buf, sizeof buf, val, pad,
				      col + strlen(val) + (size_t)pad, comment);
		}
	} else {
		/* Inherited: add "key: value" at the end of its section, the
		 * sections the file lacks written around it. */
		char sec[128];
		snprintf(sec, sizeof sec, "%s", f->path);
		*strrchr(sec, '.') = '\0';
		const char *key = strrchr(f->path, '.') + 1;
		char missing[128] = "";
		const yaml_node_t *m = NULL;
		for (;;) {
			m = node_at(c, sec);
			char *dot = strrchr(sec, '.');
			if (m || !dot)
				break;
			char tmp[256];
			snprintf(tmp, sizeof tmp, "%.60s%s%.60s", dot + 1,
				 missing[0] ? "." : "", missing);
			snprintf(missing, sizeof missing, "%.120s", tmp);
			*dot = '\0';
		}
		if (!m) { /* not even the top section: it goes too */
			char tmp[256];
			snprintf(tmp, sizeof tmp, "%.60s%s%.60s", sec,
				 missing[0] ? "." : "", missing);
			snprintf(missing, sizeof missing, "%.120s", tmp);
		}
		if (m && m->type != YAML_MAPPING_NODE)
			return fail_at(c, m->start_mark, "%s: expected a mapping",
				       sec);
		size_t at, ind = 0;
		if (m && m->data.mapping.pairs.top > m->data.mapping.pairs.start) {
			/* After the last entry and its comment lines. */
			const yaml_node_pair_t *last = m->data.mapping.pairs.top - 1;
			const yaml_node_t *lk = yaml_document_get_node(c->doc, last->key);
			const yaml_node_t *lv = yaml_document_get_node(c->doc, last->value);
			bool unused;
			ind = line_indent(t, len, line_start(c, lk->start_mark.line),
					  &unused);
			size_t end = lv->end_mark.index;
			if (end > 0 && t[end - 1] == '\n')
				end--;
			at = skip_comment_lines(t, len, line_end(t, len, end), ind);
		} else {
			at = len;
			if (at > 0 && t[at - 1] == '\n')
				at--;
		}
		size_t n = 0;
		for (char *p = missing[0] ? missing : NULL; p;) {
			char *dot = strchr(p, '.');
			n += (size_t)snprintf(buf + n, sizeof buf - n, "\n%*s%.*s:",
					      (int)ind, "",
					      dot ? (int)(dot - p) : (int)strlen(p), p);
			ind += 2;
			p = dot ? dot + 1 : NULL;
		}
		n += (size_t)snprintf(buf + n, sizeof buf - n, "\n%*s%s: ",
				      (int)ind, "", key);
		if (comment)
			comment_lines(buf + n, sizeof buf - n, val, 2,
				      ind + strlen(key) + 2 + strlen(val) + 2,
				      comment);
		else
			snprintf(buf + n, sizeof buf - n, "%s", val);
		e->start = e->end = at;
	}
	e->repl = ts_strdup(buf);
	if (!e->repl) {
		ts_diag_set(c->d, c->file, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	return TS_OK;
}

struct text_out {
	const char *text;
	size_t len;
};

static enum ts_status write_text(FILE *f, void *ctx)
{
	const struct text_out *o = ctx;
	return fwrite(o->text, 1, o->len, f) == o->len ? TS_OK : TS_ERR_IO;
}

enum ts_status hw_spec_write_fields(const char *in_path, const char *out_path,
				    int n, const char *const *paths,
				    const double *values,
				    const char *const *comments,
				    struct ts_diag *d)
{
	struct hw_spec spec, check;
	char *text = NULL, *out = NULL;
	struct text_edit *edits = ts_calloc((size_t)n + 1, sizeof *edits);
	yaml_parser_t parser;
	yaml_document_t doc;
	bool have_parser = false, have_doc = false;
	enum ts_status st;
	if (!edits) {
		ts_diag_set(d, in_path, 0, 0, "out of memory");
		return TS_ERR_NOMEM;
	}
	if ((st = hw_spec_load_file(in_path, &text, &spec, d)))
		goto out;
	size_t len = strlen(text);
	struct hw_load_ctx c = {.file = in_path, .text = text, .len = len, .d = d};
	if (!yaml_parser_initialize(&parser)) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	have_parser = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		st = yaml_failure(&c, &parser);
		goto out;
	}
	have_doc = true;
	c.doc = &doc;
	if (node_at(&c, "inherits")) {
		const char *a = strrchr(in_path, '/'), *b = strrchr(out_path, '/');
		size_t la = a ? (size_t)(a - in_path) : 0;
		size_t lb = b ? (size_t)(b - out_path) : 0;
		if (la != lb || strncmp(in_path, out_path, la)) {
			ts_diag_set(d, out_path, 0, 0,
				    "%s inherits from a spec named relative to its "
				    "folder: write the result into the same folder",
				    in_path);
			st = TS_ERR_MISUSE;
			goto out;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct hw_field_info *f = hw_spec_field(paths[i]);
		if (!f) {
			ts_diag_set(d, in_path, 0, 0, "%s: not a numeric spec field",
				    paths[i]);
			st = TS_ERR_MISUSE;
			goto out;
		}
		if ((st = hw_spec_set(&spec, f, values[i], NULL, d))) {
			d->file = in_path;
			goto out;
		}
		char val[64];
		format_value(val, sizeof val, values[i]);
		edits[i].order = i;
		if ((st = field_edit(&c, f, val, comments ? comments[i] : NULL,
				     &edits[i])))
			goto out;
	}
	/* Apply from the end of the text back, so offsets stay valid. */
	qsort(edits, (size_t)n, sizeof *edits, cmp_edit);
	size_t cap = len + 1;
	for (int i = 0; i < n; i++)
		cap += strlen(edits[i].repl);
	out = ts_malloc(cap);
	if (!out) {
		st = TS_ERR_NOMEM;
		goto out;
	}
	memcpy(out, text, len + 1);
	size_t olen = len;
	for (int i = 0; i < n; i++) {
		struct text_edit *e = &edits[i];
		size_t rl = strlen(e->repl);
		memmove(out + e->start + rl, out + e->end, olen - e->end + 1);
		memcpy(out + e->start, e->repl, rl);
		olen = olen - (e->end - e->start) + rl;
	}
	/* What is written must load and hold the new values. */
	if ((st = load_text_at(in_path, out, olen, &check, d,
			       &(struct hw_chain){0})) != TS_OK)
		goto out;
	bool same = !strcmp(check.name, spec.name) &&
		    check.megacore == spec.megacore;
	for (int i = 0; same && i < hw_spec_n_fields(); i++)
		same = hw_spec_get(&check, hw_spec_field_at(i)) ==
		       hw_spec_get(&spec, hw_spec_field_at(i));
	if (!same) {
		ts_diag_set(d, out_path, 0, 0,
			    "internal error: the rewritten spec does not read "
			    "back as written");
		st = TS_ERR_IO;
		goto out;
	}
	st = ts_write_file_atomic(out_path, write_text,
				  &(struct text_out){out, olen}, d);
out:
	if (st == TS_ERR_NOMEM)
		ts_diag_set(d, in_path, 0, 0, "out of memory");
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	for (int i = 0; i < n; i++)
		ts_free(edits[i].repl);
	ts_free(edits);
	/* The texts go: a diagnostic keeps file:line:col, not the caret. */
	if (d && (d->src == text || d->src == out)) {
		d->src = NULL;
		d->src_len = 0;
	}
	ts_free(out);
	ts_free(text);
	return st;
}

/* ---- derived figures ----------------------------------------------------- */

/*
 * Cores one program runs on: all of the chip's TensorCores under megacore
 * (v4, v5p: XLA splits "parallel" work across both), otherwise one (v2/v3
 * expose each core as its own device; v5e/v6e have a single core).
 * Source: docs/TPU.md section 1 "Megacore" (scaling book).
 */
int hw_spec_cores(const struct hw_spec *s)
{
	return s->megacore ? s->tensorcores_per_chip : 1;
}

/*
 * Devices one chip runs: 1 under megacore (one program spans its cores),
 * else one per TensorCore, each a device of its own with 1/cores of the
 * chip's HBM and links (v2, v3, v7). Source: docs/TPU.md section 1
 * "Megacore".
 */
int hw_spec_chip_devices(const struct hw_spec *s)
{
	return s->megacore ? 1 : s->tensorcores_per_chip;
}

/*
 * Cores one kernel runs on under megacore:
 *   cores = hw_spec_cores()  if megacore and elems >= megacore_min_elems
 *         = 1                otherwise
 * XLA partitions a kernel's parallel (output) iterations across the chip's
 * TensorCores only when it is large enough to pay for the split; smaller
 * kernels run on one core. elems: the kernel's iteration space (its output,
 * or a reduce's input). Assumes an even split of MXU and VPU work with HBM
 * shared (hw_spec_hbm_bw is already the chip's). Known wrong: the real
 * decision also weighs the kind of kernel and whether its outer dims
 * divide evenly. Source: hwspecs/<gen>.yaml chip.megacore_min_elems.
 */
int hw_spec_kernel_cores(const struct hw_spec *s, double elems)
{
	if (!s->megacore || elems < s->megacore_min_elems)
		return 1;
	return hw_spec_cores(s);
}

/*
 * Sustained HBM bandwidth one program sees, bytes/s:
 *   bw = hbm_bw_bytes_per_s * hbm_efficiency / (megacore ? 1 : tensorcores)
 * The published figure is per chip; without megacore each core is a device
 * with its own HBM share (v3: 900e9 / 2 = 450e9 per core). Assumes the
 * efficiency measured on long streaming DMAs; wrong for short transfers,
 * where dma_latency_ns and the pipeline bubbles dominate, and for strided
 * or padded layouts (the model counts padded bytes). Source: docs/TPU.md
 * sections 1 and 3 (TpuGraphs streaming kernels at ~400 of 450 GB/s).
 */
double hw_spec_hbm_bw(const struct hw_spec *s)
{
	return s->hbm_bw_bytes_per_s * s->hbm_efficiency /
	       hw_spec_chip_devices(s);
}

/*
 * bf16 peak one program sees, FLOP/s:
 *   peak = 2 * mxu_count * mxu_rows * mxu_cols * clock_hz
 *          * mxu_macs_per_cell_cycle * cores
 * (2 FLOP per multiply-accumulate, every cell busy every cycle.) Reproduces
 * the published chip peaks up to v5p with one MAC per cell per cycle; for
 * v6e and 7x the MAC rate is chosen to reproduce the published FLOP/s
 * (docs/TPU.md disagreement 7). An upper bound: fill/drain bubbles and
 * padding to the array size are the MXU model's business.
 */
double hw_spec_peak_flops(const struct hw_spec *s)
{
	return 2.0 * s->mxu_count * s->mxu_rows * s->mxu_cols * s->clock_hz *
	       s->mxu_macs_per_cell_cycle * hw_spec_cores(s);
}
