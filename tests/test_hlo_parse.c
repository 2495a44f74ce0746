/*
 * test_hlo_parse.c: the HLO text parser (hlo/hlo_parse.c) and the shape
 * arithmetic (hlo/ir_shape.c) on small hand-written modules: grammar corner
 * cases of docs/HLO.md section 1, every cost attribute, the derived IR facts
 * (roots, parameters, users, callers), and exact located error messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- helpers --------------------------------------------------------------- */

struct parsed {
	struct ir_module **m;
	int n;
};

static struct parsed parse_ok(const char *text)
{
	struct parsed r = {NULL, 0};
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse("t.hlo", text, strlen(text), &r.m, &r.n, &d);
	if (st != TS_OK) {
		ts_diag_print(&d, stderr);
		fail_msg("parse failed: %s", d.msg);
	}
	assert_true(r.n >= 1);
	return r;
}

static void parsed_free(struct parsed *r)
{
	for (int i = 0; i < r->n; i++)
		ir_module_free(r->m[i]);
	ts_free(r->m);
}

/* Parses text expecting TS_ERR_PARSE at line:col with exactly msg. */
static void parse_err(const char *text, unsigned line, unsigned col,
		      const char *msg)
{
	struct ir_module **m = (struct ir_module **)1;
	int n = -1;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse("e.hlo", text, strlen(text), &m, &n, &d);
	if (st != TS_ERR_PARSE || strcmp(d.msg, msg) != 0 || d.line != line ||
	    d.col != col)
		fail_msg("got status %d at %u:%u '%s'; expected %u:%u '%s'", st,
			 d.line, d.col, d.msg, line, col, msg);
	assert_null(m);
	assert_int_equal(n, 0);
	assert_string_equal(d.file, "e.hlo");
	assert_ptr_equal(d.src, text);
	assert_int_equal(d.src_len, strlen(text));
}

static struct ir_instr *find_instr(const struct ir_module *m, const char *comp,
				   const char *name)
{
	struct ir_computation *c = ir_module_find_comp(m, comp);
	assert_non_null(c);
	for (int i = 0; i < c->n_instrs; i++)
		if (strcmp(c->instrs[i]->name, name) == 0)
			return c->instrs[i];
	fail_msg("no instruction %s in %s", name, comp);
	return NULL;
}

static void assert_ints(const struct ir_ints *v, int n, const int64_t *want)
{
	assert_non_null(v);
	assert_int_equal(v->n, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(v->v[i], want[i]);
}

static void assert_shape_text(const struct ir_shape *s, const char *want)
{
	char buf[512];
	size_t n = ir_shape_format(s, buf, sizeof buf);
	assert_int_equal(n, strlen(want));
	assert_string_equal(buf, want);
}

/* ---- modules ------------------------------------------------------------- */

/* A post-layout TPU module in the style of data/tpugraphs-tile-v3. */
static const char *tpu_module =
	"HloModule fusion.191, is_scheduled=true, entry_computation_layout="
	"{(f32[384]{0:T(512)}, bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)})->"
	"bf16[32,12,12,384]{3,0,2,1:T(8,128)(2,1)}}\n"
	"\n"
	"%bitcast_fusion (p: bf16[32,12,12,192]) -> bf16[32,12,12,192] {\n"
	"  %p = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} parameter(0)\n"
	"  ROOT %b = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} bitcast(%p)\n"
	"}\n"
	"\n"
	"%fused (param_0: f32[384], param_1: bf16[32,12,12,192], param_2: f32[3,3,192,384]) -> bf16[32,12,12,384] {\n"
	"  %param_1 = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} parameter(1)\n"
	"  %f = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} fusion(%param_1), kind=kLoop, calls=%bitcast_fusion\n"
	"  %param_2 = f32[3,3,192,384]{3,2,1,0:T(8,128)} parameter(2)\n"
	"  %conv = f32[32,12,12,384]{3,0,2,1:T(8,128)} convolution(%f, %param_2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, metadata={op_type=\"Conv2D\" op_name=\"Conv_2/Conv2D\"}\n"
	"  %param_0 = f32[384]{0:T(512)} parameter(0)\n"
	"  %bc = f32[32,12,12,384]{3,0,2,1:T(8,128)} broadcast(%param_0), dimensions={3}\n"
	"  %add = f32[32,12,12,384]{3,0,2,1:T(8,128)} add(%conv, %bc)\n"
	"  ROOT %cvt = bf16[32,12,12,384]{3,0,2,1:T(8,128)(2,1)} convert(%add)\n"
	"}\n"
	"\n"
	"ENTRY %fusion.191 (parameter.0: f32[384], parameter.1: bf16[32,12,12,192], parameter.2: f32[3,3,192,384]) -> bf16[32,12,12,384] {\n"
	"  %parameter.0 = f32[384]{0:T(512)} parameter(0)\n"
	"  %parameter.1 = bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)} parameter(1)\n"
	"  %parameter.2 = f32[3,3,192,384]{3,2,1,0:T(8,128)} parameter(2)\n"
	"  ROOT %fusion.191 = bf16[32,12,12,384]{3,0,2,1:T(8,128)(2,1)} fusion(%parameter.0, %parameter.1, %parameter.2), kind=kOutput, calls=%fused, metadata={op_type=\"Conv2D\" op_name=\"autotuned_op\"}\n"
	"}\n";

static void test_tpu_module(void **state)
{
	(void)state;
	struct parsed r = parse_ok(tpu_module);
	assert_int_equal(r.n, 1);
	struct ir_module *m = r.m[0];
	assert_string_equal(m->name, "fusion.191");
	assert_string_equal(m->file, "t.hlo");
	assert_true(m->is_scheduled);
	assert_int_equal(m->replica_count, 1); /* absent: one device */
	assert_int_equal(m->num_partitions, 1);
	assert_int_equal(m->n_comps, 3);
	assert_int_equal(m->n_instrs, 2 + 8 + 4);
	assert_string_equal(m->entry->name, "fusion.191");
	assert_true(m->entry->is_entry);
	assert_int_equal(m->line, 1);

	struct ir_computation *fused = ir_module_find_comp(m, "fused");
	assert_non_null(fused);
	assert_true(fused->is_fusion);
	assert_int_equal(fused->n_callers, 1);
	assert_int_equal(fused->index, 1);
	assert_int_equal(fused->n_params, 3);
	assert_string_equal(fused->params[0]->name, "param_0");
	assert_string_equal(fused->params[2]->name, "param_2");
	assert_string_equal(fused->root->name, "cvt");
	assert_int_equal(fused->line, 8);
	assert_int_equal(fused->col, 1);
	assert_false(m->entry->is_fusion);
	assert_int_equal(m->entry->n_callers, 0);

	struct ir_instr *conv = find_instr(m, "fused", "conv");
	assert_int_equal(conv->op, IR_OP_CONVOLUTION);
	assert_int_equal(conv->line, 12);
	assert_int_equal(conv->col, 3);
	assert_int_equal(conv->index, 3);
	assert_ptr_equal(conv->parent, fused);
	assert_int_equal(conv->n_operands, 2);
	assert_string_equal(conv->operands[0]->name, "f");
	assert_string_equal(conv->operands[1]->name, "param_2");
	assert_int_equal(conv->n_users, 1);
	assert_string_equal(conv->op_name, "Conv_2/Conv2D");
	assert_non_null(conv->attrs.window);
	assert_int_equal(conv->attrs.window->n, 2);
	assert_int_equal(conv->attrs.window->dims[1].size, 3);
	assert_int_equal(conv->attrs.window->dims[1].stride, 1);
	assert_int_equal(conv->attrs.window->dims[1].pad_lo, 1);
	assert_int_equal(conv->attrs.window->dims[1].pad_hi, 1);
	assert_int_equal(conv->attrs.window->dims[1].lhs_dilate, 1);
	assert_non_null(conv->attrs.conv);
	assert_int_equal(conv->attrs.conv->n_spatial, 2);
	assert_int_equal(conv->attrs.conv->lhs_batch, 0);
	assert_int_equal(conv->attrs.conv->lhs_feature, 3);
	assert_int_equal(conv->attrs.conv->lhs_spatial[0], 1);
	assert_int_equal(conv->attrs.conv->rhs_in, 2);
	assert_int_equal(conv->attrs.conv->rhs_out, 3);
	assert_int_equal(conv->attrs.conv->out_feature, 3);
	assert_int_equal(conv->attrs.feature_group_count, 1);
	assert_int_equal(conv->attrs.batch_group_count, 1);

	struct ir_instr *f = find_instr(m, "fused", "f");
	assert_int_equal(f->attrs.fusion_kind, IR_FUSION_LOOP);
	assert_int_equal(f->n_called, 1);
	assert_string_equal(f->called[0]->name, "bitcast_fusion");

	struct ir_instr *bc = find_instr(m, "fused", "bc");
	assert_ints(bc->attrs.dimensions, 1, (int64_t[]){3});

	/* bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)}: physical order
	 * 12,12,32,192; T(8,128) pads 192 -> 256: 12*12*32*256*2 bytes. */
	struct ir_instr *p1 = find_instr(m, "fusion.191", "parameter.1");
	assert_int_equal(p1->attrs.parameter_number, 1);
	assert_true(ir_shape_padded_bytes(&p1->shape) == 12.0 * 12 * 32 * 256 * 2);
	assert_true(ir_shape_bytes(&p1->shape) == 32.0 * 12 * 12 * 192 * 2);
	assert_int_equal(ir_shape_elems(&p1->shape), 32 * 12 * 12 * 192);
	assert_shape_text(&p1->shape, "bf16[32,12,12,192]{3,0,2,1:T(8,128)(2,1)}");
	int order[4];
	ir_shape_major_to_minor(&p1->shape, order);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 0);
	assert_int_equal(order[3], 3);
	/* f32[384]{0:T(512)}: padded to 512 elements */
	struct ir_instr *p0 = find_instr(m, "fusion.191", "parameter.0");
	assert_true(ir_shape_padded_bytes(&p0->shape) == 512.0 * 4);

	struct ir_instr *root = m->entry->root;
	assert_string_equal(root->name, "fusion.191");
	assert_true(root->flags & IR_INSTR_ROOT);
	assert_int_equal(root->attrs.fusion_kind, IR_FUSION_OUTPUT);
	assert_string_equal(root->op_name, "autotuned_op");
	parsed_free(&r);
}

static void test_shapes(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"HloModule s\n"
		"ENTRY e {\n"
		"  p = ((f32[], s32[4]{0}), token[], f32[<=16,?, 3]) parameter(0)\n"
		"  q = bf16[]{:T(256)} parameter(1)\n"
		"  r = s4[64,64]{1,0:E(4)} parameter(2)\n"
		"  s = f32[20,3,256,133]{2,3,1,0:T(8,128)S(5)} parameter(3)\n"
		"  t = f32[4000]{0:T(1024)(128)(2,1)L(2048)} parameter(4)\n"
		"  u = b(f32[8]) parameter(5)\n"
		"  v = f32[8,128]{1,0:T(8,128)(*,1)} parameter(6)\n"
		"  w = pred[2,2] parameter(7)\n"
		"  ROOT x = () tuple()\n"
		"}\n");
	struct ir_module *m = r.m[0];
	struct ir_instr *p = find_instr(m, "e", "p");
	assert_int_equal(p->shape.type, IR_TYPE_TUPLE);
	assert_int_equal(p->shape.n_elems, 3);
	assert_int_equal(p->shape.elems[0].n_elems, 2);
	assert_int_equal(p->shape.elems[1].type, IR_TYPE_TOKEN);
	const struct ir_shape *dyn = &p->shape.elems[2];
	assert_int_equal(dyn->rank, 3);
	assert_int_equal(dyn->dims[0], 16);
	assert_int_equal(dyn->dim_kind[0], IR_DIM_BOUNDED);
	assert_int_equal(dyn->dim_kind[1], IR_DIM_UNBOUNDED);
	assert_int_equal(dyn->dim_kind[2], IR_DIM_STATIC);
	assert_shape_text(&p->shape, "((f32[], s32[4]{0}), token[], f32[<=16,?,3])");
	assert_true(ir_shape_bytes(&p->shape) == 4 + 16);

	/* scalar bf16 in a 256-element tile: 512 bytes */
	struct ir_instr *q = find_instr(m, "e", "q");
	assert_true(q->shape.layout.present);
	assert_int_equal(q->shape.layout.n_tiles, 1);
	assert_true(ir_shape_padded_bytes(&q->shape) == 512);

	struct ir_instr *s4 = find_instr(m, "e", "r");
	assert_int_equal(s4->shape.layout.element_size_bits, 4);
	assert_true(ir_shape_bytes(&s4->shape) == 64 * 64 / 2);

	struct ir_instr *s = find_instr(m, "e", "s");
	assert_int_equal(s->shape.layout.memory_space, 5);
	assert_shape_text(&s->shape, "f32[20,3,256,133]{2,3,1,0:T(8,128)S(5)}");

	struct ir_instr *t = find_instr(m, "e", "t");
	assert_int_equal(t->shape.layout.n_tiles, 3);
	assert_int_equal(t->shape.layout.tail_padding, 2048);
	/* 4000 -> 4096 elements (T(1024)); (128) and (2,1) divide the tile */
	assert_true(ir_shape_padded_bytes(&t->shape) == 4096.0 * 4);

	struct ir_instr *u = find_instr(m, "e", "u");
	assert_int_equal(u->shape.type, IR_TYPE_F32);
	assert_int_equal(u->shape.dims[0], 8);

	struct ir_instr *v = find_instr(m, "e", "v");
	assert_int_equal(v->shape.layout.tiles[1].dims[0], IR_TILE_COMBINE);
	assert_shape_text(&v->shape, "f32[8,128]{1,0:T(8,128)(*,1)}");

	/* no layout: default TPU tiling (8,128), a byte per pred */
	struct ir_instr *w = find_instr(m, "e", "w");
	assert_false(w->shape.layout.present);
	assert_true(ir_shape_padded_bytes(&w->shape) == 8 * 128);
	assert_true(ir_shape_equal_dims(&w->shape, &w->shape));
	assert_false(ir_shape_equal_dims(&w->shape, &v->shape));

	struct ir_instr *x = m->entry->root;
	assert_int_equal(x->shape.type, IR_TYPE_TUPLE);
	assert_int_equal(x->shape.n_elems, 0);
	char small[8];
	assert_int_equal(ir_shape_format(&s->shape, small, sizeof small),
			 strlen("f32[20,3,256,133]{2,3,1,0:T(8,128)S(5)}"));
	assert_string_equal(small, "f32[20,");
	parsed_free(&r);
}

static void test_attributes(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"HloModule a\n"
		"add { x = f32[] parameter(0)  y = f32[] parameter(1)  ROOT s = f32[] add(x, y) }\n"
		"cond { c = (s32[], f32[]) parameter(0) ROOT t = pred[] constant(true) }\n"
		"body { b = (s32[], f32[]) parameter(0) ROOT r = (s32[], f32[]) copy(b) }\n"
		"ENTRY main {\n"
		"  a = f32[8,16] parameter(0)\n"
		"  b = f32[2,16,32] parameter(1)\n"
		"  d = f32[8,2,32] dot(a, b), lhs_batch_dims={}, lhs_contracting_dims={1}, rhs_batch_dims={}, rhs_contracting_dims={1}, operand_precision={highest,default}\n"
		"  rw = f32[3,15] reduce-window(a, z), window={size=2x3 stride=2x2 pad=0_1x-1_2 lhs_dilate=1x2 rhs_dilate=3x1 rhs_reversal=0x1}, to_apply=add\n"
		"  z = f32[] constant(0)\n"
		"  ci = f32[8,1,4,8] parameter(5)\n"
		"  ck = f32[3,4,2,3] parameter(6)\n"
		"  cv = f32[6,1,4,6] convolution(ci, ck), window={size=3x3}, dim_labels=0bf1_0oi1->0bf1, feature_group_count=2, batch_group_count=1\n"
		"  sl = f32[4,8] slice(a), slice={[0:8:2], [4:12]}\n"
		"  pd = f32[10,35] pad(a, z), padding=1_1x2_2_1\n"
		"  g = f32[5,16] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}\n"
		"  i = s32[5,1] parameter(2)\n"
		"  sc = f32[8,16] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
		"  u = f32[5,16] parameter(3)\n"
		"  ds = f32[2,16] dynamic-slice(a, j, j), dynamic_slice_sizes={2,16}\n"
		"  j = s32[] parameter(4)\n"
		"  ff = c64[8,16] fft(a), fft_type=FFT, fft_length={16}\n"
		"  io = s32[8] iota(), iota_dimension=0\n"
		"  cmp = pred[8,16] compare(a, a), direction=LE, type=TOTALORDER\n"
		"  ar = f32[8,16] all-reduce(a), replica_groups={{0,1,2},{3,4,5}}, to_apply=add\n"
		"  ar2 = f32[8,16] all-reduce(a), channel_id=3, replica_groups=[2,4]<=[8], to_apply=add\n"
		"  ar3 = f32[8,16] all-reduce(a), replica_groups={}, to_apply=add\n"
		"  ar4 = f32[8,16] all-reduce(a), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add\n"
		"  init = (s32[], f32[]) tuple(j, z)\n"
		"  wh = (s32[], f32[]) while(init), body=body, condition=cond, backend_config={\"known_trip_count\":{\"n\":\"10\"}}\n"
		"  wh2 = (s32[], f32[]) while(init), condition=cond, body=body, backend_config=\"{\\\"known_trip_count\\\":{\\\"n\\\":\\\"7\\\"}}\"\n"
		"  cc = f32[8] custom-call(a), custom_call_target=\"tpu_custom\\\"call\", backend_config={\"flag_configs\":[], \"window_config\":{\"kernel_window_bounds\":[\"3\",\"1\"], \"output_window_bounds\":[\"12\",\"4\",\"4\",\"3\"]}}\n"
		"  tk = (f32[8,2], s32[8,2]) topk(a), k=2, largest=true\n"
		"  gte = f32[] get-tuple-element(wh), index=1\n"
		"  ROOT out = (f32[8,16]) tuple(sc), sharding={{replicated}}, frontend_attributes={a=\"b\"}\n"
		"}\n");
	struct ir_module *m = r.m[0];

	struct ir_instr *d = find_instr(m, "main", "d");
	assert_non_null(d->attrs.dot);
	assert_int_equal(d->attrs.dot->lhs_batch.n, 0);
	assert_ints(&d->attrs.dot->lhs_contracting, 1, (int64_t[]){1});
	assert_ints(&d->attrs.dot->rhs_contracting, 1, (int64_t[]){1});
	assert_int_equal(d->attrs.precision[0], IR_PRECISION_HIGHEST);
	assert_int_equal(d->attrs.precision[1], IR_PRECISION_DEFAULT);

	struct ir_instr *rw = find_instr(m, "main", "rw");
	const struct ir_window *w = rw->attrs.window;
	assert_int_equal(w->n, 2);
	assert_int_equal(w->dims[0].size, 2);
	assert_int_equal(w->dims[1].size, 3);
	assert_int_equal(w->dims[1].stride, 2);
	assert_int_equal(w->dims[0].pad_lo, 0);
	assert_int_equal(w->dims[0].pad_hi, 1);
	assert_int_equal(w->dims[1].pad_lo, -1);
	assert_int_equal(w->dims[1].pad_hi, 2);
	assert_int_equal(w->dims[1].lhs_dilate, 2);
	assert_int_equal(w->dims[0].rhs_dilate, 3);
	assert_false(w->dims[0].reversal);
	assert_true(w->dims[1].reversal);
	assert_string_equal(rw->called[0]->name, "add");
	/* z is used before its definition: resolved in the second pass */
	assert_string_equal(rw->operands[1]->name, "z");

	struct ir_instr *cv = find_instr(m, "main", "cv");
	const struct ir_conv_dims *cd = cv->attrs.conv;
	assert_int_equal(cd->n_spatial, 2);
	assert_int_equal(cd->lhs_batch, 1);
	assert_int_equal(cd->lhs_feature, 2);
	assert_int_equal(cd->lhs_spatial[0], 0);
	assert_int_equal(cd->lhs_spatial[1], 3);
	assert_int_equal(cd->rhs_out, 1);
	assert_int_equal(cd->rhs_in, 2);
	assert_int_equal(cd->out_spatial[1], 3);
	assert_int_equal(cv->attrs.feature_group_count, 2);

	struct ir_instr *sl = find_instr(m, "main", "sl");
	assert_int_equal(sl->attrs.slice->n, 2);
	assert_int_equal(sl->attrs.slice->dims[0].stride, 2);
	assert_int_equal(sl->attrs.slice->dims[1].start, 4);
	assert_int_equal(sl->attrs.slice->dims[1].limit, 12);
	assert_int_equal(sl->attrs.slice->dims[1].stride, 1);

	struct ir_instr *pd = find_instr(m, "main", "pd");
	assert_int_equal(pd->attrs.padding->n, 2);
	assert_int_equal(pd->attrs.padding->dims[0].interior, 0);
	assert_int_equal(pd->attrs.padding->dims[1].lo, 2);
	assert_int_equal(pd->attrs.padding->dims[1].interior, 1);

	struct ir_instr *g = find_instr(m, "main", "g");
	assert_ints(&g->attrs.gather->offset_dims, 1, (int64_t[]){1});
	assert_ints(&g->attrs.gather->slice_sizes, 2, (int64_t[]){1, 16});
	assert_int_equal(g->attrs.gather->index_vector_dim, 1);

	struct ir_instr *sc = find_instr(m, "main", "sc");
	assert_ints(&sc->attrs.scatter->scatter_dims_to_operand_dims, 1, (int64_t[]){0});
	assert_int_equal(sc->attrs.scatter->index_vector_dim, 1);
	assert_int_equal(sc->n_users, 1);

	assert_ints(find_instr(m, "main", "ds")->attrs.dynamic_slice_sizes, 2,
		    (int64_t[]){2, 16});
	assert_ints(find_instr(m, "main", "ff")->attrs.fft_length, 1, (int64_t[]){16});
	assert_int_equal(find_instr(m, "main", "io")->attrs.iota_dimension, 0);
	assert_int_equal(find_instr(m, "main", "cmp")->attrs.compare_dir, IR_CMP_LE);
	assert_int_equal(find_instr(m, "main", "ar")->attrs.replica_group_size, 3);
	assert_int_equal(find_instr(m, "main", "ar2")->attrs.replica_group_size, 4);
	assert_int_equal(find_instr(m, "main", "ar3")->attrs.replica_group_size, 0);
	assert_int_equal(find_instr(m, "main", "ar4")->attrs.replica_group_size, 2);

	/* while: condition before body whatever the text order */
	struct ir_instr *wh = find_instr(m, "main", "wh");
	assert_int_equal(wh->n_called, 2);
	assert_string_equal(wh->called[0]->name, "cond");
	assert_string_equal(wh->called[1]->name, "body");
	assert_int_equal(wh->attrs.known_trip_count, 10);
	assert_int_equal(find_instr(m, "main", "wh2")->attrs.known_trip_count, 7);
	assert_int_equal(ir_module_find_comp(m, "body")->n_callers, 2);
	assert_int_equal(ir_module_find_comp(m, "add")->n_callers, 6);
	assert_int_equal(find_instr(m, "main", "init")->n_users, 2);

	struct ir_instr *cc = find_instr(m, "main", "cc");
	assert_string_equal(cc->attrs.custom_call_target, "tpu_custom\"call");
	assert_ints(&cc->attrs.window_output_bounds, 4, (int64_t[]){12, 4, 4, 3});
	assert_ints(&cc->attrs.window_kernel_bounds, 2, (int64_t[]){3, 1});
	assert_int_equal(find_instr(m, "main", "tk")->attrs.k, 2);
	assert_int_equal(find_instr(m, "main", "gte")->attrs.tuple_index, 1);
	assert_int_equal(find_instr(m, "main", "a")->attrs.tuple_index, -1);
	assert_int_equal(find_instr(m, "main", "a")->attrs.known_trip_count, -1);
	assert_int_equal(find_instr(m, "main", "a")->attrs.iota_dimension, -1);
	parsed_free(&r);
}

/* Group g of r holds exactly ids[0 .. n). */
static void assert_group(const struct ir_groups *r, int64_t g, int n,
			 const int64_t *ids)
{
	assert_non_null(r);
	assert_true(g < r->n_groups);
	assert_int_equal(ir_groups_len(r, g), n);
	for (int j = 0; j < n; j++)
		assert_int_equal(ir_groups_device(r, g, j), ids[j]);
}

/* Device groups kept as written: explicit lists (unequal sizes too), the
 * iota form and the mesh form as their iota, a collective-permute's pairs.
 * Expected lists worked out by hand from XLA's rule: iota(N) reshaped to
 * the dims, transposed, read row-major in groups. */
static void test_device_groups(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
		"  ROOT s = f32[] add(a, b)\n}\n"
		"ENTRY e {\n  x = f32[8] parameter(0)\n"
		"  l = f32[8] all-reduce(x), replica_groups={{0,2,4},{1,3,5,6}}, to_apply=add\n"
		"  i = f32[8] all-reduce(x), replica_groups=[2,4]<=[8], to_apply=add\n"
		"  t = f32[8] all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add\n"
		"  t3 = f32[8] all-reduce(x), replica_groups=[4,2]<=[2,2,2]T(2,0,1), to_apply=add\n"
		"  m = f32[8] all-reduce(x), replica_groups=mesh['a'=2,'b'=2] {'a'}, to_apply=add\n"
		"  mo = f32[8] all-reduce(x), replica_groups=mesh['a'=2,'b'=1,'c'=4], device_ids=([2,4]T(1,0)) {'a','c'}, to_apply=add\n"
		"  mc = f32[8] all-reduce(x), replica_groups=mesh['a'=2,'c'=4] {'c','a'}, to_apply=add\n"
		"  mx = f32[8] all-reduce(x), replica_groups=mesh['a'=2,'b'=2], device_ids=(0,2,1,3) {'a'}, to_apply=add\n"
		"  cp = f32[8] collective-permute(x), source_target_pairs={{0,1},{1,2},{3,0}}\n"
		"  ROOT al = f32[8] all-reduce(x), replica_groups={}, to_apply=add\n"
		"}\n");
	struct ir_module *m = r.m[0];
	const struct ir_groups *l = find_instr(m, "e", "l")->attrs.groups;
	assert_int_equal(l->n_groups, 2);
	assert_group(l, 0, 3, (int64_t[]){0, 2, 4});
	assert_group(l, 1, 4, (int64_t[]){1, 3, 5, 6});
	assert_int_equal(find_instr(m, "e", "l")->attrs.replica_group_size, 3);
	const struct ir_groups *i = find_instr(m, "e", "i")->attrs.groups;
	assert_null(i->ids);
	assert_int_equal(i->n_groups, 2);
	assert_group(i, 1, 4, (int64_t[]){4, 5, 6, 7});
	/* [4,2] transposed: 0 2 4 6 | 1 3 5 7 */
	const struct ir_groups *t = find_instr(m, "e", "t")->attrs.groups;
	assert_group(t, 0, 4, (int64_t[]){0, 2, 4, 6});
	assert_group(t, 1, 4, (int64_t[]){1, 3, 5, 7});
	/* [2,2,2] with T(2,0,1): element (i,j,k) = 4j + 2k + i */
	const struct ir_groups *t3 = find_instr(m, "e", "t3")->attrs.groups;
	assert_int_equal(t3->n_groups, 4);
	assert_group(t3, 1, 2, (int64_t[]){4, 6});
	assert_group(t3, 2, 2, (int64_t[]){1, 3});
	/* mesh [2,2] over 'a': the other axis first: {0,2}, {1,3} */
	const struct ir_groups *mg = find_instr(m, "e", "m")->attrs.groups;
	assert_int_equal(mg->n_groups, 2);
	assert_group(mg, 1, 2, (int64_t[]){1, 3});
	/* device order iota(8) as [2,4] transposed: 0 4 1 5 2 6 3 7; one
	 * group over a and c: the mesh positions in order */
	const struct ir_groups *mo = find_instr(m, "e", "mo")->attrs.groups;
	assert_int_equal(mo->n_groups, 1);
	assert_group(mo, 0, 8, (int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
	/* axes named c then a: c varies slower */
	const struct ir_groups *mc = find_instr(m, "e", "mc")->attrs.groups;
	assert_group(mc, 0, 8, (int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
	/* a device order written out in full: the size only */
	assert_null(find_instr(m, "e", "mx")->attrs.groups);
	assert_int_equal(find_instr(m, "e", "mx")->attrs.replica_group_size, 2);
	const struct ir_groups *cp = find_instr(m, "e", "cp")->attrs.groups;
	assert_int_equal(cp->n_groups, 3);
	assert_group(cp, 2, 2, (int64_t[]){3, 0});
	assert_null(find_instr(m, "e", "al")->attrs.groups);
	parsed_free(&r);

	/* Malformed groups are located errors. */
	static const struct {
		const char *value;
		unsigned col;
		const char *msg;
	} bad[] = {
		{"[2,4]<=[7]", 72, "2 groups of 4 are 8 devices, the iota has 7"},
		{"[2,4]<=[2,4]T(1,1)", 77,
		 "T(1,1) is not a permutation of the 2 dims"},
		{"[2,4]<=[2,4]T(0)", 77, "T(0) is not a permutation of the 2 dims"},
		{"[8]<=[8]", 65, "expected [groups,size]<=[dims]"},
		{"[0,4]<=[0]", 65, "groups and size must be at least 1"},
		{"[2,4], channel_id=1", 70, "expected '<=' after [groups,size]"},
		{"[2,4]<=(8)", 72,
		 "expected [dims] or [dims]T(permutation) after '<='"},
		{"{{0,1},{}}", 72, "group 1 is empty"},
		{"{{0,70000}}", 69, "device id 70000 is out of range [0, 65535]"},
		{"{{0,1}{2,3}}", 71, "expected ',' or '}'"},
		{"{{0,-1}}", 69, "expected a device id"},
		{"foo", 65, "expected {...}, [groups,size]<=[dims] or mesh[...]"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		char text[256], msg[128];
		snprintf(text, sizeof text,
			 "ENTRY e {\n  p = f32[8] parameter(0)\n"
			 "  ROOT r = f32[8] all-gather(p), dimensions={0}, "
			 "replica_groups=%s\n}\n", bad[k].value);
		snprintf(msg, sizeof msg,
			 "bad value for attribute 'replica_groups': %s",
			 bad[k].msg);
		parse_err(text, 3, bad[k].col, msg);
	}
	parse_err("ENTRY e {\n  p = f32[8] parameter(0)\n"
		  "  ROOT r = f32[8] collective-permute(p), "
		  "source_target_pairs={{0,1},{1,2,3}}\n}\n", 3, 69,
		  "bad value for attribute 'source_target_pairs': pair 1 has 3 "
		  "ids, expected 2");
}

/* Syntax variants from docs/HLO.md 1.1-1.10 that real files use. */
static void test_syntax_variants(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"// RUN: hlo-opt %s | FileCheck %s\n"
		"HloModule v, entry_computation_layout={(f32[2]{0}, /*index=1*/s4[4]{0:E(4)})->f32[2]{0}}, "
		"input_output_alias={ {}: (0, {}, must-alias) }, frontend_attributes={k=\"v\", j={\"x\":1}}\n"
		"FileNames\n 1 \"a.py\"\n 2 \"b.py\"\nFunctionNames\n 1 \"f\"\n"
		"FileLocations\n 1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}\n"
		"StackFrames\n 1 {file_location_id=1 parent_frame_id=0}\n\n"
		"%async_comp(p0: f32[2]) -> f32[2] {\n"
		"  %p0 = f32[2] parameter(0)\n"
		"  ROOT %cc = f32[2] custom-call(%p0), custom_call_target=\"Host\"\n"
		"}, execution_thread=\"host\"\n"
		"/* a block\n comment */\n"
		"ENTRY %main.1 () -> f32[2] {\n"
		"  ROOT %out = f32[2]{0} add(f32[2]{0} %x, %x), metadata={op_name=\"r\" stack_frame_id=1}\n"
		"  %transpose= s4[4]{0:E(4)} parameter(1)\n"
		"  %x = f32[2]{0} parameter(0), sharding={devices=[2]<=[2]}, origin={({\"p0\"}, {\"p1\"})}\n"
		"  %s = ((f32[2]), f32[2], u32[]) custom-call-start(\n"
		"      %x),\n"
		"      custom_call_target=\"Host\" , async_execution_thread=\"host\",calls=%async_comp\n"
		"  %d = f32[2] custom-call-done(%s)\n"
		"  %ag = f32[4] all-gather-start(x), dimensions={0} %b = f32[2]  bitcast(%x)\n"
		"  cst = f32[2]{0} constant({1, nan(0x7f)}) ,metadata={op_name=\"c\"}\n"
		"  el = f32[3,4] constant({...})\n"
		"  sb = f32[2] custom-call(x), custom_call_target=\"SetBound\", literal=s32[] 1\n"
		"  mesh = f32[2] all-reduce(x), replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}, to_apply=%async_comp\n"
		"  mesh2 = f32[2] all-reduce(x), replica_groups=mesh['a'=2,'b'=1,'c'=4], device_ids=([2,4]T(1,0)) {'a','c'}, to_apply=%async_comp\n"
		"  mesh3 = f32[2] all-reduce(x), replica_groups=mesh['a'=4] {'a':(1)2}, to_apply=%async_comp\n"
		"} // main\n");
	struct ir_module *m = r.m[0];
	assert_string_equal(m->name, "v");
	assert_int_equal(m->line, 2);
	assert_int_equal(m->n_comps, 2);
	struct ir_computation *e = m->entry;
	assert_string_equal(e->name, "main.1");
	/* ROOT first, not last */
	assert_string_equal(e->root->name, "out");
	assert_int_equal(e->root->index, 0);
	assert_string_equal(e->root->op_name, "r");
	assert_int_equal(e->n_params, 2);
	assert_string_equal(e->params[1]->name, "transpose");
	/* the alias: output {} in parameter 0's buffer, where it starts */
	assert_int_equal(m->n_aliases, 1);
	assert_int_equal(m->aliases[0].output.n, 0);
	assert_int_equal(m->aliases[0].param, 0);
	assert_int_equal(m->aliases[0].param_index.n, 0);
	assert_true(m->aliases[0].must);
	assert_int_equal(m->aliases[0].line, 2);
	assert_int_equal(m->aliases[0].col, 112);
	struct ir_instr *s = find_instr(m, "main.1", "s");
	assert_int_equal(s->op, IR_OP_ASYNC_START);
	assert_int_equal(s->wrapped_op, IR_OP_CUSTOM_CALL);
	assert_string_equal(s->called[0]->name, "async_comp");
	assert_string_equal(s->attrs.custom_call_target, "Host");
	struct ir_instr *d = find_instr(m, "main.1", "d");
	assert_int_equal(d->op, IR_OP_ASYNC_DONE);
	assert_int_equal(d->wrapped_op, IR_OP_CUSTOM_CALL);
	struct ir_instr *ag = find_instr(m, "main.1", "ag");
	assert_int_equal(ag->op, IR_OP_ALL_GATHER_START);
	assert_int_equal(ag->wrapped_op, IR_OP_INVALID);
	assert_int_equal(find_instr(m, "main.1", "b")->op, IR_OP_BITCAST);
	struct ir_instr *cst = find_instr(m, "main.1", "cst");
	assert_false(cst->flags & IR_INSTR_LITERAL_ELIDED);
	assert_string_equal(cst->op_name, "c");
	struct ir_instr *el = find_instr(m, "main.1", "el");
	assert_true(el->flags & IR_INSTR_LITERAL_ELIDED);
	assert_int_equal(el->n_operands, 0);
	assert_int_equal(find_instr(m, "main.1", "x")->n_users, 8);
	/* mesh groups: the product of the named axes' sizes (a device order
	 * between them changes nothing); a sub-axis stays unknown (0) */
	assert_int_equal(find_instr(m, "main.1", "mesh")->attrs.replica_group_size, 2);
	assert_int_equal(find_instr(m, "main.1", "mesh2")->attrs.replica_group_size, 8);
	assert_int_equal(find_instr(m, "main.1", "mesh3")->attrs.replica_group_size, 0);
	parsed_free(&r);
}

static void test_multi_module(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"// RUN: x\n"
		"HloModule first\n"
		"ENTRY e { ROOT p = f32[] parameter(0) }\n"
		"// -----\n"
		"last { ROOT q = s32[] parameter(0) }\n"
		"// -----\n"
		"// CHECK: nothing\n"
		"HloModule third\n"
		"a { ROOT p = f32[] parameter(0) }\n"
		"b { ROOT p = f32[] parameter(0) }\n"
		"HloModule fourth\n"
		"ENTRY e { ROOT c = f32[] constant(-inf) }\n");
	assert_int_equal(r.n, 4);
	assert_string_equal(r.m[0]->name, "first");
	assert_string_equal(r.m[1]->name, "");
	assert_string_equal(r.m[1]->entry->name, "last");
	assert_int_equal(r.m[1]->line, 5);
	assert_string_equal(r.m[2]->name, "third");
	assert_int_equal(r.m[2]->n_comps, 2);
	/* no ENTRY: the last computation is the entry */
	assert_string_equal(r.m[2]->entry->name, "b");
	assert_true(r.m[2]->entry->is_entry);
	assert_false(r.m[2]->comps[0]->is_entry);
	assert_string_equal(r.m[3]->name, "fourth");
	parsed_free(&r);

	/* a stack-frame table before the header (found by fuzzing: leaked) */
	r = parse_ok("FunctionNames 1 \"f\"\nHloModule m\nENTRY e { ROOT p = f32[] parameter(0) }\n");
	assert_int_equal(r.n, 1);
	assert_string_equal(r.m[0]->name, "m");
	parsed_free(&r);
}

static void test_missing_root_and_inference(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"cond {\n"
		"  p = (s32[], f32[4]) parameter(0)\n"
		"  i = s32[] get-tuple-element(p), index=0\n"
		"  n = s32[] constant(4)\n"
		"  lt = pred[] compare(i, n), direction=LT\n"
		"}\n"
		"body {\n"
		"  p = (s32[], f32[4]) parameter(0)\n"
		"  i = get-tuple-element(p), index=0\n"
		"  v = get-tuple-element(p), index=1\n"
		"  one = s32[] constant(1)\n"
		"  i2 = add(i, one)\n"
		"  ROOT t = tuple(i2, v)\n"
		"}\n"
		"ENTRY main {\n"
		"  zero = s32[] constant(0)\n"
		"  x = f32[4]{0} parameter(0)\n"
		"  init = tuple(zero, x)\n"
		"  ROOT w = while(init), condition=cond, body=body\n"
		"}\n");
	struct ir_module *m = r.m[0];
	struct ir_computation *cond = ir_module_find_comp(m, "cond");
	assert_string_equal(cond->root->name, "lt");
	assert_true(cond->root->flags & IR_INSTR_ROOT);
	struct ir_instr *init = find_instr(m, "main", "init");
	assert_true(init->flags & IR_INSTR_SHAPE_INFERRED);
	assert_shape_text(&init->shape, "(s32[], f32[4]{0})");
	struct ir_instr *w = m->entry->root;
	assert_shape_text(&w->shape, "(s32[], f32[4]{0})");
	assert_shape_text(&find_instr(m, "body", "i2")->shape, "s32[]");
	assert_shape_text(&find_instr(m, "body", "t")->shape, "(s32[], f32[4])");
	assert_false(find_instr(m, "main", "x")->flags & IR_INSTR_SHAPE_INFERRED);
	parsed_free(&r);
}

static void test_inline_and_conditional(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"HloModule c\n"
		"t { a = f32[] parameter(0) ROOT n = f32[] negate(a) }\n"
		"f { a = f32[] parameter(0) ROOT n = f32[] abs(a) }\n"
		"ENTRY e {\n"
		"  pr = pred[] parameter(0)\n"
		"  x = f32[] parameter(1)\n"
		"  c = f32[] conditional(pr, x, x), false_computation=f, true_computation=t\n"
		"  i = s32[] parameter(2)\n"
		"  b = f32[] conditional(i, x, x, x), branch_computations={f, t, %f}\n"
		"  ROOT r = f32[] reduce(c, b), dimensions={}, to_apply={ p = f32[] parameter(0) q = f32[] parameter(1) ROOT s = f32[] add(p, q) }\n"
		"}\n");
	struct ir_module *m = r.m[0];
	struct ir_instr *c = find_instr(m, "e", "c");
	assert_int_equal(c->n_called, 2);
	assert_string_equal(c->called[0]->name, "t");
	assert_string_equal(c->called[1]->name, "f");
	struct ir_instr *b = find_instr(m, "e", "b");
	assert_int_equal(b->n_called, 3);
	assert_string_equal(b->called[2]->name, "f");
	/* f is called by c and (twice) by b: two calling instructions */
	assert_int_equal(ir_module_find_comp(m, "f")->n_callers, 2);
	struct ir_instr *rr = m->entry->root;
	assert_int_equal(rr->n_called, 1);
	assert_string_equal(rr->called[0]->name, "e/r/to_apply");
	assert_int_equal(rr->called[0]->n_instrs, 3);
	assert_int_equal(m->n_comps, 4);
	assert_string_equal(m->entry->name, "e");
	parsed_free(&r);
}

/* XLA accepts anonymous instructions as operands: [shape] opcode(operands). */
static void test_nested_operands(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"ENTRY e {\n"
		"  p = f32[4] parameter(0)\n"
		"  ROOT r = f32[4] add(p, f32[4] negate(f32[4] multiply(p, %p)))\n"
		"  c = f32[4] add(abs(p), f32[4] constant({1, 2, 3, 4}))\n"
		"}\n");
	struct ir_computation *e = r.m[0]->entry;
	assert_int_equal(e->n_instrs, 7);
	/* nested instructions come before their user, under names that no
	 * text can refer to */
	assert_string_equal(e->instrs[1]->name, "multiply#1");
	assert_string_equal(e->instrs[2]->name, "negate#2");
	struct ir_instr *root = e->root;
	assert_string_equal(root->name, "r");
	assert_ptr_equal(root->operands[1], e->instrs[2]);
	assert_ptr_equal(e->instrs[2]->operands[0], e->instrs[1]);
	assert_int_equal(e->instrs[0]->n_users, 3); /* multiply, r, abs */
	assert_int_equal(e->instrs[1]->n_users, 1);
	struct ir_instr *abs = e->instrs[4];
	assert_int_equal(abs->op, IR_OP_ABS);
	assert_true(abs->flags & IR_INSTR_SHAPE_INFERRED);
	assert_shape_text(&abs->shape, "f32[4]");
	assert_int_equal(e->instrs[5]->op, IR_OP_CONSTANT);
	assert_string_equal(e->instrs[6]->name, "c");
	parsed_free(&r);
	/* attributes cannot follow a nested instruction, so one that needs
	 * an attribute cannot be nested (XLA's rule) */
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT b = f32[4] add(f32[4] negate(p), dimensions={0})\n}\n",
		  3, 51, "expected ',' or ')' in the operand list, got '='");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT b = f32[4,4] add(f32[4,4] broadcast(p), p)\n}\n",
		  3, 25, "a nested broadcast cannot have the attribute "
			 "'dimensions' it needs");
}

/* ---- errors ------------------------------------------------------------------ */

/* Attributes known to be cost-free are skipped quietly; unknown ones are
 * skipped and recorded once per name, with the first use's location and a
 * use count (the CLI prints them as notes). */
static void test_unknown_attributes(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"HloModule u\n"
		"ENTRY e {\n"
		"  a = f32[8] parameter(0), sharding={replicated}\n"
		"  b = f32[8] negate(a), new_knob=3, frontend_attributes={x=\"1\"}\n"
		"  ROOT c = f32[8] negate(b), new_knob={1,2}, other_knob=\"s\"\n"
		"}\n");
	const struct ir_module *m = r.m[0];
	assert_int_equal(m->n_unknown_attrs, 2);
	assert_string_equal(m->unknown_attrs[0].name, "new_knob");
	assert_int_equal(m->unknown_attrs[0].line, 4);
	assert_int_equal(m->unknown_attrs[0].col, 25);
	assert_int_equal(m->unknown_attrs[0].uses, 2);
	assert_string_equal(m->unknown_attrs[1].name, "other_knob");
	assert_int_equal(m->unknown_attrs[1].line, 5);
	assert_int_equal(m->unknown_attrs[1].uses, 1);
	assert_int_equal(m->entry->n_instrs, 3);
	parsed_free(&r);
}

static void test_errors(void **state)
{
	(void)state;
	parse_err("", 1, 1, "no HLO computation found");
	parse_err("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n", 4, 1,
		  "unexpected end of input: '{' of computation 'e' opened at line 2 is not closed");
	parse_err("HloModule m\nENTRY e {\n  p = f32[] parameter(0\n}\n", 4, 1,
		  "expected ')' after the parameter number, got '}'");
	parse_err("HloModule m\nENTRY e {\n  p = f32[] parameter(0), frontend_attributes={a=\"x\"\n", 4, 1,
		  "unexpected end of input: '{' opened at line 3 is not closed");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] frobnicate(p)\n}\n", 3, 18,
		  "unknown opcode 'frobnicate'");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = f32[] negate(%r)\n}\n", 3, 25,
		  "use of undefined instruction 'r'");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  p = f32[] negate(p)\n}\n", 3, 3,
		  "duplicate instruction name 'p'");
	parse_err("a { ROOT p = f32[] parameter(0) }\na { ROOT p = f32[] parameter(0) }\n", 2, 1,
		  "duplicate computation name 'a'");
	parse_err("ENTRY e {\n  p = f33[2] parameter(0)\n}\n", 2, 7,
		  "unknown element type 'f33'");
	parse_err("ENTRY e {\n  p = f32[2,x] parameter(0)\n}\n", 2, 13,
		  "expected an integer, got 'x'");
	parse_err("ENTRY e {\n  p = f32[2,3]{1,2} parameter(0)\n}\n", 2, 18,
		  "malformed layout: dimension 2 out of range for rank 2");
	parse_err("ENTRY e {\n  p = f32[2,3]{1} parameter(0)\n}\n", 2, 15,
		  "malformed layout: 1 dimensions for a shape of rank 2");
	parse_err("ENTRY e {\n  p = f32[2,3]{1,0:T(8,128)Q(1)} parameter(0)\n}\n", 2, 28,
		  "malformed layout: unexpected 'Q'");
	/* tiles are range-checked as dimensions are: a tile's extent, and
	 * the array padded to its tiles (2^60 bytes) */
	parse_err("ENTRY e {\n  p = f32[1024,1024]{1,0:T(4611686018427387904)} parameter(0)\n}\n",
		  2, 28, "malformed layout: tile dimension 4611686018427387904 is "
			 "larger than 16777216");
	parse_err("ENTRY e {\n  p = f32[8,8,8,8]{3,2,1,0:T(16777216,16777216,16777216,16777216)} "
		  "parameter(0)\n}\n",
		  2, 19, "shape too large: padded to its tiles it exceeds 2^60 bytes");
	/* the same at the element size E(n) gives, tiles or none */
	parse_err("ENTRY e {\n  p = f32[1073741824,1024]{1,0:E(2147483647)} parameter(0)\n}\n",
		  2, 27, "shape too large: padded to its tiles it exceeds 2^60 bytes");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT c = pred[] compare(p, p), direction=XX\n}\n", 3, 44,
		  "bad value for attribute 'direction': 'XX'");
	parse_err("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = f32[2] broadcast(p), dimensions={a}\n}\n", 3, 45,
		  "bad value for attribute 'dimensions': expected an integer");
	/* at the end of the value, as for index= */
	parse_err("ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT a = f32[32] all-gather(p), channel_id=-1, dimensions={0}\n}\n",
		  3, 48, "bad value for attribute 'channel_id': negative");
	parse_err("ENTRY e {\n  p = f32[8] parameter(0)\n  s = (f32[8], f32[8], u32[]) "
		  "copy-start(p), cross_program_prefetch_index=-2\n"
		  "  ROOT d = f32[8] copy-done(s)\n}\n",
		  3, 77, "bad value for attribute 'cross_program_prefetch_index': "
			 "negative");
	parse_err("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT f = f32[2] fusion(p), kind=kLoop, calls=nowhere\n}\n", 3, 48,
		  "undefined computation 'nowhere'");
	parse_err("ENTRY e {\n  ROOT p = f32[] parameter(0)\n  ROOT q = f32[] negate(p)\n}\n", 3, 3,
		  "more than one ROOT instruction in computation 'e'");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  ROOT q = negate(p), metadata={}\n  r = convert(p)\n}\n", 4, 3,
		  "cannot infer the shape of 'r' (convert): write its result shape");
	/* at the second parameter, as XLA reports it; 00 is 0 */
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  q = f32[] parameter(0)\n}\n", 3, 23,
		  "duplicate parameter number 0 (also 'p')");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  q = f32[] parameter(00)\n}\n", 3, 23,
		  "duplicate parameter number 0 (also 'p')");
	parse_err("ENTRY e {\n  p = f32[] parameter(1)\n}\n", 1, 9,
		  "computation 'e': parameter 0 is missing");
	parse_err("ENTRY e {\n  p = f32[] custom-call(), custom_call_target=\"abc\n}\n", 2, 47,
		  "unterminated string (opened at line 2)");
	parse_err("ENTRY e {\n  a = f32[] negate(b)\n  b = f32[] negate(a)\n}\n", 2, 3,
		  "instruction 'a' depends on itself (operand cycle)");
	parse_err("a {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=b\n}\n"
		  "b {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=a\n}\n", 7, 8,
		  "computation 'a' calls itself through 'c'");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n  q = f32[] negate(p) junk\n}\n", 3, 23,
		  "expected ',' or the next instruction, got 'junk'");
	parse_err("ENTRY e {\n  p = f32[] parameter(0)\n}\nENTRY f {\n  p = f32[] parameter(0)\n}\n", 4, 1,
		  "more than one ENTRY computation in module ''");
	parse_err("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[2] convolution(p, p), window={size=3 pad=1_1x1_1}, dim_labels=b0f_0io->b0f\n}\n",
		  3, 45, "bad value for attribute 'window': pad has 2 dimensions, size has 1");
	parse_err("ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[2] convolution(p, p), window={size=3}, dim_labels=b0f_0io->bf\n}\n",
		  3, 66, "bad dim_labels 'b0f_0io->bf': input, kernel and output "
			 "must have same number of spatial dimensions (1, 1, 0)");
	parse_err("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n}\n/* open", 5, 1,
		  "unterminated /* comment");
	parse_err("HloModule m, is_scheduled=maybe\nENTRY e {\n  p = f32[] parameter(0)\n}\n", 1, 27,
		  "bad value for attribute 'is_scheduled': 'maybe'");
	/* Absurd sizes are errors at the shape, not numbers. */
	parse_err("ENTRY e {\n  ROOT p = f32[9223372036854775807] parameter(0)\n}\n",
		  2, 15, "shape too large: 9223372036854775807 elements of 32 "
			 "bits exceed 2^60 bytes");
	parse_err("ENTRY e {\n  ROOT p = f32[3000000000,3000000000,3000000000] "
		  "parameter(0)\n}\n",
		  2, 15, "shape too large: its element count overflows 63 bits");
	/* 9 x (2^58 - 1) x 4 B > 2^63 - 1: the tuple's bytes overflow
	 * though each element's fit (one nested tuple of two). */
	parse_err("ENTRY e {\n  ROOT p = (f32[288230376151711743], "
		  "(f32[288230376151711743], f32[288230376151711743]), "
		  "f32[288230376151711743], f32[288230376151711743], "
		  "f32[288230376151711743], f32[288230376151711743], "
		  "f32[288230376151711743], f32[288230376151711743]) "
		  "parameter(0)\n}\n",
		  2, 12, "shape too large: the tuple's elements take 2^63 "
			 "bytes or more");
	/* 8 of them fit: 8 x (2^60 - 4) B < 2^63. */
	{
		struct parsed d = parse_ok(
			"ENTRY e {\n  ROOT p = (f32[288230376151711743], "
			"f32[288230376151711743], f32[288230376151711743], "
			"f32[288230376151711743], f32[288230376151711743], "
			"f32[288230376151711743], f32[288230376151711743], "
			"f32[288230376151711743]) parameter(0)\n}\n");
		assert_int_equal(d.m[0]->entry->root->shape.n_elems, 8);
		parsed_free(&d);
	}
	parse_err("HloModule m, replica_count=0\nENTRY e {\n  p = f32[] parameter(0)\n}\n", 1, 28,
		  "replica_count must be in 1..65536, got 0");
	{
		struct parsed d = parse_ok("HloModule m, replica_count=8, num_partitions=2\n"
					   "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
		assert_int_equal(d.m[0]->replica_count, 8);
		assert_int_equal(d.m[0]->num_partitions, 2);
		parsed_free(&d);
	}
	parse_err("HloModule m\nHloModule n\nENTRY e { ROOT p = f32[] parameter(0) }\n", 2, 1,
		  "module 'm' has no computations");
}

/* The shape verifier (hlo/ir_verify.c): a declared shape its operands
 * cannot produce is refused at the instruction's name. Each expectation
 * worked out by hand from the operand shapes. */
/*
 * XLA's parser and verifier rules beyond shapes (xla/hlo/parser, hlo
 * verifier): attributes required, repeated or not allowed on an opcode,
 * the syntax of result_accuracy, control-predecessors, layout constraints,
 * aliasing and sparse layouts, declared operand shapes, and the structure
 * of conditionals, loops, async ops, infeeds and computation signatures.
 * Positions are the offending token's (computed from the texts by hand).
 */
static void test_xla_rules(void **state)
{
	(void)state;
	struct parsed r0;
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT b = f32[4,4] broadcast(p), dimensions={0}, dimensions={1}\n}\n",
		  3, 51, "attribute 'dimensions' given twice");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT n = f32[4] negate(p), to_apply=e\n}\n",
		  3, 30, "unexpected attribute \"to_apply\" for negate");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT b = f32[4,4] broadcast(p)\n}\n",
		  3, 8, "broadcast 'b' needs attribute 'dimensions'");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT x = f32[4] exponential(p), result_accuracy={mode=high}\n}\n",
		  3, 57, "bad result_accuracy: expects ResultAccuracy type but sees: high");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT x = f32[4] exponential(p), result_accuracy={tolerance={atol=1e-5, ulps=x}}\n}\n",
		  3, 79, "bad result_accuracy: ulps expects an integer, got 'x'");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT x = f32[4] negate(p), control-predecessors={q}\n}\n",
		  3, 52, "use of undefined instruction 'q'");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT x = f32[4] custom-call(p), custom_call_target=\"f\", "
		  "operand_layout_constraints={f32[5]{0}}\n}\n",
		  3, 87, "operand_layout_constraints: operand 0 is not compatible "
			 "with operand shape");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT x = f32[4] negate(s32[4] p)\n}\n",
		  3, 26, "the declared operand shape s32[4] is not compatible with "
			 "the shape of the operand instruction f32[4]");
	parse_err("HloModule m, input_output_alias={ {0}: (0, {x}) }\n"
		  "ENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n",
		  1, 45, "expects integer in ShapeIndex, got 'x'");
	parse_err("HloModule m, buffer_donor={ (0, {}) (1, {}) }\n"
		  "ENTRY e {\n  ROOT p = f32[4] parameter(0)\n}\n",
		  1, 37, "expects '}' at the end of buffer donor description, got '('");
	/* what the aliasing lists name (ir_verify) */
#define ALIASED_ENTRY                                                        \
	"ENTRY e {\n  p = f32[4] parameter(0)\n  q = (f32[4], s32[1000]) "        \
	"parameter(1)\n  n = f32[4] negate(p)\n  g = s32[1000] "               \
	"get-tuple-element(q), index=1\n  ROOT t = (f32[4], s32[1000]) "       \
	"tuple(n, g)\n}\n"
	parse_err("HloModule m, buffer_donor={ (1, {}), (2, {}) }\n" ALIASED_ENTRY,
		  1, 29, "buffer_donor: the entry computation e has no array at "
			 "parameter 1, ShapeIndex {}");
	parse_err("HloModule m, buffer_donor={ (1, {1}), (2, {}) }\n" ALIASED_ENTRY,
		  1, 39, "buffer_donor: the entry computation e has no array at "
			 "parameter 2, ShapeIndex {}");
	parse_err("HloModule m, input_output_alias={ {}: (0, {}) }\n" ALIASED_ENTRY,
		  1, 35, "input_output_alias: the entry computation e's result "
			 "has no array at ShapeIndex {}");
	parse_err("HloModule m, input_output_alias={ {1}: (0, {}) }\n" ALIASED_ENTRY,
		  1, 35, "input_output_alias: output {1}, s32[1000], and parameter "
			 "0 {}, f32[4], differ in size (as written and in TPU "
			 "memory)");
	parse_err("HloModule m, input_output_alias={ {0}: (0, {}), {0}: (1, {0}) }\n"
		  ALIASED_ENTRY,
		  1, 49, "input_output_alias: that output is aliased before (1:35)");
	parse_err("HloModule m, input_output_alias={ {0}: (1, {0}) }, "
		  "buffer_donor={ (1, {0}) }\n" ALIASED_ENTRY,
		  1, 67, "buffer_donor: that parameter buffer is named before "
			 "(1:35)");
#undef ALIASED_ENTRY
	parse_err("ENTRY e {\n  ROOT p = f32[4,4]{1,0:D(D,Q)} parameter(0)\n}\n",
		  2, 29, "malformed layout: expected a DimLevelType abbreviation "
			 "(D, C, S or H), got 'Q'");
	parse_err("ENTRY e {\n  ROOT p = f32[4,4]{1,0:P(f32[16])} parameter(0)\n}\n",
		  2, 25, "malformed layout: it has a physical shape, but is not for "
			 "a sparse array");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT x = f32[4] add(p)\n}\n",
		  3, 8, "add x: takes 2 operands, given 1");
	parse_err("b0 {\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(a)\n}\n"
		  "ENTRY e {\n  i = s32[] parameter(0)\n  p = f32[] parameter(1)\n"
		  "  ROOT c = f32[] conditional(i, p), true_computation=b0, "
		  "false_computation=b0\n}\n",
		  8, 8, "conditional c: an S32 index takes branch_computations, not "
			"true_computation and false_computation");
	parse_err("c {\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(a)\n}\n"
		  "ENTRY e {\n  p = f32[] parameter(0)\n"
		  "  ROOT w = f32[] while(p), condition=c, body=c\n}\n",
		  7, 8, "while w: condition c returns f32[], not pred[]");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  s = (f32[4], f32[4], s32[]) custom-call-start(p), custom_call_target=\"f\"\n"
		  "  ROOT d = f32[4] custom-call-done(s)\n}\n",
		  3, 3, "async-start s: expects the shape ((async-operands), "
			"async-outputs, state)");
	parse_err("ENTRY e {\n  t = token[] after-all()\n  ROOT i = f32[4] infeed(t)\n}\n",
		  3, 8, "infeed i: infeed must have a non-empty tuple shape");
	parse_err("ENTRY e () -> f32[4] {\n  ROOT p = s32[4] parameter(0)\n}\n",
		  1, 15, "shape of computation e, f32[4], is not compatible with that "
			 "of its root instruction p, s32[4]");

	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(p), "
		  "custom_call_target=\"f\", api_version=API_VERSION_X\n}\n",
		  3, 71, "Unknown API version: 'API_VERSION_X'");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  ROOT a = f32[4] add(p, p), result_accuracy={mode=highest}\n}\n",
		  3, 30, "unexpected attribute \"result_accuracy\" for add");
	/* three labels "013": digits below 3 */
	parse_err("ENTRY e {\n  x = f32[1,2,1] parameter(0)\n  k = f32[1,1,1] parameter(1)\n"
		  "  ROOT c = f32[1,2,1] convolution(x, k), window={size=1}, "
		  "dim_labels=013_0123->210\n}\n",
		  4, 72, "bad dim_labels '013_0123->210': expects [0-2bf?], got '3'");
	/* 32 to 8 bits: a minor dim of 4, not 2 */
	parse_err("ENTRY e {\n  p = s32[10] parameter(0)\n"
		  "  ROOT b = s8[10,2] bitcast-convert(p)\n}\n",
		  3, 8, "bitcast-convert b: shape s8[10,2] does not match its "
			"operands: a 32-bit to 8-bit bitcast-convert adds or drops "
			"a minor dimension of 4");
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n"
		  "  s = ((f32[4]), f32[4], s32[]) custom-call-start(p), custom_call_target=\"f\"\n"
		  "  u = ((f32[4]), f32[4], u32[]) custom-call-update(s)\n"
		  "  ROOT d = f32[4] custom-call-done(u)\n}\n",
		  4, 3, "async-update u: expects its shape to be its operand's");

	/* accepted: '?' labels, inferred dot and conditional shapes, aliasing,
	 * a scalar broadcast without dimensions (nested too), bitcast-converts
	 * that change the width */
	r0 = parse_ok("ENTRY e {\n  p = f32[] parameter(0)\n  q = s32[10] parameter(1)\n"
		      "  b = f32[4,4] broadcast(p)\n"
		      "  n = f32[4,4] sqrt(f32[4,4] broadcast(f32[] parameter(2)))\n"
		      "  w = s8[10,4] bitcast-convert(q)\n"
		      "  ROOT back = s32[10] bitcast-convert(w)\n}\n");
	parsed_free(&r0);
	struct parsed r = parse_ok(
		"HloModule m, input_output_alias={ {}: (0, {}, may-alias) }, "
		"buffer_donor={ (1, {}) }\n"
		"neg {\n  x = f32[2,3] parameter(0)\n  ROOT n = negate(x)\n}\n"
		"ENTRY e {\n  a = f32[4,2,10] parameter(0)\n  b = f32[4,10,3] parameter(1)\n"
		"  d = dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
		"rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
		"  q = pred[] parameter(2)\n  y = f32[2,3] parameter(3)\n"
		"  c = conditional(q, y, y), true_computation=neg, false_computation=neg\n"
		"  ROOT k = f32[80] custom-call(), window={size=2x2}, "
		"dim_labels=?b01f_0?1io->b01?f, custom_call_target=\"t\"\n}\n");
	assert_shape_text(&find_instr(r.m[0], "e", "d")->shape, "f32[4,2,3]");
	assert_shape_text(&find_instr(r.m[0], "e", "c")->shape, "f32[2,3]");
	parsed_free(&r);
}

static void test_verifier(void **state)
{
	(void)state;
	/* dot [8,16] x [16,32] contracting 1 with 0 is [8,32] */
	parse_err("ENTRY e {\n  a = f32[8,16] parameter(0)\n  b = f32[16,32] parameter(1)\n"
		  "  ROOT d = f32[8,4] dot(a, b), lhs_contracting_dims={1}, "
		  "rhs_contracting_dims={0}\n}\n",
		  4, 8, "dot d: shape f32[8,4] does not match its operands: "
			"dimension 1 is 32");
	parse_err("ENTRY e {\n  a = f32[8,16] parameter(0)\n  b = f32[15,32] parameter(1)\n"
		  "  ROOT d = f32[8,32] dot(a, b), lhs_contracting_dims={1}, "
		  "rhs_contracting_dims={0}\n}\n",
		  4, 8, "dot d: shape f32[8,32] does not match its operands: "
			"contracting extents 16 and 15 differ");
	/* the runaway: an output dim no operand has */
	parse_err("ENTRY e {\n  a = f32[128,256] parameter(0)\n  b = f32[256,512] parameter(1)\n"
		  "  ROOT d = f32[1099511627776,512] dot(a, b), lhs_contracting_dims={1}, "
		  "rhs_contracting_dims={0}\n}\n",
		  4, 8, "dot d: shape f32[1099511627776,512] does not match its "
			"operands: dimension 0 is 128");
	parse_err("ENTRY e {\n  a = f32[4,6] parameter(0)\n  ROOT r = f32[5,5] reshape(a)\n}\n",
		  3, 8, "reshape r: shape f32[5,5] does not match its operands: "
			"reshape of 24 elements to 25");
	parse_err("ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT b = f32[3,5] broadcast(a), dimensions={1}\n}\n",
		  3, 8, "broadcast b: shape f32[3,5] does not match its operands: "
			"operand dimension 0 (4) lands on 5");
	parse_err("ENTRY e {\n  a = f32[10] parameter(0)\n"
		  "  ROOT s = f32[5] slice(a), slice={[2:9:2]}\n}\n",
		  3, 8, "slice s: shape f32[5] does not match its operands: "
			"dimension 0 is 4");
	/* [2:9:2] takes 2, 4, 6, 8: 4 elements; [0:11] passes the extent */
	parse_err("ENTRY e {\n  a = f32[10] parameter(0)\n"
		  "  ROOT s = f32[11] slice(a), slice={[0:11]}\n}\n",
		  3, 8, "slice s: shape f32[11] does not match its operands: "
			"slice [0:11:1] of an extent of 10");
	parse_err("ENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[4,3] parameter(1)\n"
		  "  ROOT c = f32[7,3] concatenate(a, b), dimensions={0}\n}\n",
		  4, 8, "concatenate c: shape f32[7,3] does not match its operands: "
			"the operands add up to 6 along dimension 0");
	/* extents near INT64_MAX must not overflow the checks (UBSan) */
	parse_err("ENTRY e {\n  a = pred[1000000000000000000] parameter(0)\n"
		  "  ROOT c = pred[5] concatenate(a, a, a, a, a, a, a, a, a, a), "
		  "dimensions={0}\n}\n",
		  3, 8, "concatenate c: shape pred[5] does not match its operands: "
			"the operands add up to more than 5 along dimension 0");
	struct parsed big = parse_ok("ENTRY e {\n  a = f32[10] parameter(0)\n"
				     "  ROOT s = f32[1] slice(a), "
				     "slice={[0:5:9223372036854775807]}\n}\n");
	parsed_free(&big);
	parse_err("ENTRY e {\n  t = (f32[2], f32[3]) parameter(0)\n"
		  "  ROOT g = f32[2] get-tuple-element(t), index=2\n}\n",
		  3, 8, "get-tuple-element g: shape f32[2] does not match its "
			"operands: index 2 of a 2-element tuple");
	parse_err("ENTRY e {\n  a = f32[4,8] parameter(0)\n  b = f32[8,4] parameter(1)\n"
		  "  ROOT s = f32[4,8] add(a, b)\n}\n",
		  4, 8, "add s: shape f32[4,8] does not match its operands: "
			"operand 1 has other dimensions");
	parse_err("f { p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p) }\n"
		  "ENTRY e {\n  a = f32[8] parameter(0)\n"
		  "  ROOT u = f32[4] fusion(a), kind=kLoop, calls=f\n}\n",
		  5, 8, "fusion u: shape f32[4] does not match its operands: "
			"operand 0 has other dimensions than parameter 0 of f");
	/* a tuple-shaped fusion's operands are checked too (fuzzer find) */
	parse_err("f { p = f32[4] parameter(0)\n  n = f32[4] negate(p)\n"
		  "  ROOT t = (f32[4], f32[4]) tuple(n, p) }\n"
		  "ENTRY e {\n  a = f32[8] parameter(0)\n"
		  "  ROOT u = (f32[4], f32[4]) fusion(a), kind=kLoop, calls=f\n}\n",
		  6, 8, "fusion u: shape (f32[4], f32[4]) does not match its "
			"operands: operand 0 has other dimensions than parameter "
			"0 of f");
	/* and a tuple-shaped fusion's elements against its root's (a
	 * fuzzer find: the kernel was costed on a buffer its computation
	 * does not write, below its roofline) */
	parse_err("f { p = f32[4] parameter(0)\n  n = f32[4] negate(p)\n"
		  "  ROOT t = (f32[4], f32[4]) tuple(n, p) }\n"
		  "ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT u = (f32[4], f32[5]) fusion(a), kind=kLoop, calls=f\n}\n",
		  6, 8, "fusion u: shape (f32[4], f32[5]) does not match its "
			"operands: element 1 is not that of f's root");
	parse_err("f { p = f32[4] parameter(0)\n  n = f32[4] negate(p)\n"
		  "  ROOT t = (f32[4], f32[4]) tuple(n, p) }\n"
		  "ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT u = (f32[4], f32[4], f32[4]) fusion(a), kind=kLoop, "
		  "calls=f\n}\n",
		  6, 8, "fusion u: shape (f32[4], f32[4], f32[4]) does not match "
			"its operands: f's root has 2 elements");
	/* a fusion's result in another memory space than its root's (a
	 * fuzzer find: the plan read the root's S(1), the work the result's
	 * S(2), and the kernel came out below its roofline; no fusion of
	 * data/compiled has one) */
	parse_err("f { p = f32[4] parameter(0)\n  n = f32[4]{0:S(1)} negate(p)\n"
		  "  ROOT t = (f32[4]{0:S(1)}, f32[4]) tuple(n, p) }\n"
		  "ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT u = (f32[4]{0:S(2)}, f32[4]) fusion(a), kind=kLoop, "
		  "calls=f\n}\n",
		  6, 8, "fusion u: shape (f32[4]{0:S(2)}, f32[4]) does not match "
			"its operands: element 0 is in memory space S(2), f's "
			"root's in S(1)");
	parse_err("f { p = f32[4] parameter(0)\n"
		  "  ROOT n = f32[4]{0:S(1)} negate(p) }\n"
		  "ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT u = f32[4]{0} fusion(a), kind=kLoop, calls=f\n}\n",
		  5, 8, "fusion u: shape f32[4]{0} does not match its operands: "
			"it is in memory space S(0), f's root in S(1)");
	/* a tuple result whose computation's root is no tuple (a fuzzer
	 * find: the unfused text's result was the root's, unreadable) */
	parse_err("f { p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p) }\n"
		  "ENTRY e {\n  a = f32[4] parameter(0)\n"
		  "  ROOT u = (f32[4], f32[4]) fusion(a), kind=kLoop, calls=f\n}\n",
		  5, 8, "fusion u: shape (f32[4], f32[4]) does not match its "
			"operands: f's root is not a tuple");
	/* window: padded 10 - 1 + 1 + 1 + 0 = 11, window 3, stride 1: 9 */
	parse_err("ENTRY e {\n  l = f32[1,10,2] parameter(0)\n  k = f32[3,2,5] parameter(1)\n"
		  "  ROOT c = f32[1,10,5] convolution(l, k), window={size=3 stride=1 pad=1_0}, "
		  "dim_labels=b0f_0io->b0f\n}\n",
		  4, 8, "convolution c: shape f32[1,10,5] does not match its operands: "
			"convolution: dimension 1 is 9");
	parse_err("add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
		  "  ROOT s = f32[] add(x, y)\n}\n"
		  "ENTRY e {\n  p = f32[4,6] parameter(0)\n  z = f32[] constant(0)\n"
		  "  ROOT r = f32[6] reduce(p, z), dimensions={1}, to_apply=add\n}\n",
		  9, 8, "reduce r: shape f32[6] does not match its operands: "
			"reduce: dimension 0 is 4");
	/* 1 + 2 + 4 + 3 x 1 interior = 10 */
	parse_err("ENTRY e {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
		  "  ROOT r = f32[11] pad(p, z), padding=1_2_1\n}\n",
		  4, 8, "pad r: shape f32[11] does not match its operands: "
			"pad: dimension 0 is 10");
	/* batch dim 5 of the indices first, offset dim 16 at offset_dims={1} */
	parse_err("ENTRY e {\n  a = f32[8,16] parameter(0)\n  i = s32[5,1] parameter(1)\n"
		  "  ROOT g = f32[16,5] gather(a, i), offset_dims={1}, "
		  "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
		  "slice_sizes={1,16}\n}\n",
		  4, 8, "gather g: shape f32[16,5] does not match its operands: "
			"gather: dimension 0 is 5");
	parse_err("ENTRY e {\n  a = f32[8,16] parameter(0)\n  j = s32[] parameter(1)\n"
		  "  ROOT d = f32[9,16] dynamic-slice(a, j, j), dynamic_slice_sizes={9,16}\n}\n",
		  4, 8, "dynamic-slice d: shape f32[9,16] does not match its operands: "
			"slice size 9 of an extent of 8");
	/* consistent versions of the same read */
	struct parsed r = parse_ok(
		"ENTRY e {\n  a = f32[8,16] parameter(0)\n  b = f32[16,32] parameter(1)\n"
		"  d = f32[8,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  x = f32[] constant(1)\n  m = f32[8,32] multiply(d, d)\n"
		"  ROOT s = f32[8,32] select(pred[] constant(true), m, d)\n}\n");
	parsed_free(&r);
}

/* A stack-frame table after the last module's separator begins a module
 * that never gets a computation: it is dropped, not leaked (the pipeline
 * fuzzer's first find; the ASan run of this test catches a leak). */
static void test_trailing_frame_table(void **state)
{
	(void)state;
	struct parsed r = parse_ok("ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"
				   "// -----\nFileNames\n1 \"a.py\"\n");
	assert_int_equal(r.n, 1);
	assert_int_equal(r.m[0]->n_comps, 1);
	parsed_free(&r);
}

/* Forms XLA's parser reads that tpusim once refused: the old header
 * "HloModule name:" and a // comment ended by a lone '\r'. */
static void test_old_forms(void **state)
{
	(void)state;
	struct parsed r = parse_ok("HloModule old:\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_string_equal(r.m[0]->name, "old");
	parsed_free(&r);
	r = parse_ok("HloModule mac // a comment\rENTRY e {\r  ROOT p = f32[] parameter(0)\r}\r");
	assert_string_equal(r.m[0]->entry->name, "e");
	parsed_free(&r);
}

/* Deep nesting is refused with an error instead of recursing without bound. */
static void test_nesting_cap(void **state)
{
	(void)state;
	size_t depth = 5000;
	const char *pre = "ENTRY e {\n  p = ";
	const char *post = " parameter(0)\n}\n";
	size_t n = 2 * depth + 256; /* both texts below fit */
	char *t = malloc(n);
	assert_non_null(t);
	char *c = t;
	c += sprintf(c, "%s", pre);
	memset(c, '(', depth);
	c += depth;
	c += sprintf(c, "f32[]");
	memset(c, ')', depth);
	c += depth;
	sprintf(c, "%s", post);
	parse_err(t, 2, 263, "nesting deeper than 256 levels");
	/* the same depth inside a skipped attribute value */
	c = t;
	c += sprintf(c, "ENTRY e {\n  p = f32[] parameter(0), sharding=");
	memset(c, '{', depth);
	c += depth;
	memset(c, '}', depth);
	c += depth;
	sprintf(c, "\n}\n");
	parse_err(t, 2, 292, "nesting deeper than 256 levels");
	/* nested instructions as operands: negate(negate(...(p))) */
	c = t;
	c += sprintf(c, "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] add(p, ");
	for (size_t i = 0; i < depth / 8; i++)
		c += sprintf(c, "negate(");
	c += sprintf(c, "p");
	for (size_t i = 0; i < depth / 8; i++)
		*c++ = ')';
	sprintf(c, ")\n}\n");
	parse_err(t, 3, 25 + 7 * 256, "nesting deeper than 256 levels");
	/* inline computation bodies inside inline bodies */
	c = t;
	c += sprintf(c, "ENTRY e {\n");
	for (size_t i = 0; i < 300; i++)
		c += sprintf(c, "ROOT r = f32[] call(), to_apply={");
	sprintf(c, "\n}\n");
	/* the 256th body opens at column 33 * 256: 256 computations deep */
	parse_err(t, 2, 33 * 256, "nesting deeper than 256 levels");
	free(t);
}

static void test_parse_file(void **state)
{
	(void)state;
	char *text = NULL;
	struct ir_module **m = NULL;
	int n = 0;
	struct ts_diag d = {0};
	enum ts_status st = hlo_parse_file("/nonexistent/x.hlo", &text, &m, &n, &d);
	assert_int_equal(st, TS_ERR_IO);
	assert_null(m);
	assert_int_equal(n, 0);

	char path[] = "/tmp/test_hlo_parse_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(tpu_module, f);
	fclose(f);
	st = hlo_parse_file(path, &text, &m, &n, &d);
	assert_int_equal(st, TS_OK);
	assert_int_equal(n, 1);
	assert_string_equal(m[0]->file, path);
	ir_module_free(m[0]);
	ts_free(m);
	ts_free(text);
	remove(path);
}

/* Every allocation failure comes back as TS_ERR_NOMEM (ASan checks leaks). */
static void test_alloc_failures(void **state)
{
	(void)state;
	int saw_nomem = 0;
	for (long k = 0; k < 400; k++) {
		struct ir_module **m = NULL;
		int n = 0;
		struct ts_diag d = {0};
		ts_alloc_fail_after(k);
		enum ts_status st = hlo_parse("t.hlo", tpu_module, strlen(tpu_module),
					      &m, &n, &d);
		ts_alloc_fail_after(-1);
		if (st == TS_OK) {
			for (int i = 0; i < n; i++)
				ir_module_free(m[i]);
			ts_free(m);
			break;
		}
		assert_int_equal(st, TS_ERR_NOMEM);
		assert_string_equal(d.msg, "out of memory");
		assert_null(m);
		saw_nomem++;
	}
	assert_true(saw_nomem > 3);
}

/* A custom-call's backend_config dot_dimension_numbers (cuBLAS gemm) are
 * kept as its dot attributes, with the operand precision; on any other
 * op, or where the call has its own, they are left alone. */
static void test_gemm_backend_config(void **state)
{
	(void)state;
	struct parsed r = parse_ok(
		"HloModule g\nENTRY main {\n"
		"  a = f32[2,3,4] parameter(0)\n"
		"  b = f32[2,5,4] parameter(1)\n"
		"  g = f32[2,3,5] custom-call(a, b), custom_call_target=\"__cublas$gemm\", "
		"backend_config=\"{\\\"gemm_backend_config\\\":{\\\"dot_dimension_numbers\\\":"
		"{\\\"lhs_contracting_dimensions\\\":[\\\"2\\\"],\\\"rhs_contracting_dimensions\\\":"
		"[\\\"2\\\"],\\\"lhs_batch_dimensions\\\":[\\\"0\\\"],\\\"rhs_batch_dimensions\\\":"
		"[\\\"0\\\"]},\\\"precision_config\\\":{\\\"operand_precision\\\":[\\\"DEFAULT\\\","
		"\\\"HIGHEST\\\"]}}}\"\n"
		"  h = f32[2,3,5] custom-call(a, b), custom_call_target=\"__cublas$gemm\", "
		"backend_config={\"dot_dimension_numbers\":{\"lhs_contracting_dimensions\":[],"
		"\"rhs_contracting_dimensions\":[],\"lhs_batch_dimensions\":[],"
		"\"rhs_batch_dimensions\":[]}}\n"
		"  ROOT n = f32[2,3,4] negate(a), backend_config={\"dot_dimension_numbers\":"
		"{\"lhs_contracting_dimensions\":[\"1\"]}}\n"
		"}\n");
	const struct ir_instr *g = find_instr(r.m[0], "main", "g");
	assert_non_null(g->attrs.dot);
	static const int64_t two[] = {2}, zero[] = {0};
	assert_ints(&g->attrs.dot->lhs_contracting, 1, two);
	assert_ints(&g->attrs.dot->rhs_contracting, 1, two);
	assert_ints(&g->attrs.dot->lhs_batch, 1, zero);
	assert_ints(&g->attrs.dot->rhs_batch, 1, zero);
	assert_int_equal(g->attrs.precision[0], IR_PRECISION_DEFAULT);
	assert_int_equal(g->attrs.precision[1], IR_PRECISION_HIGHEST);
	const struct ir_instr *h = find_instr(r.m[0], "main", "h");
	assert_non_null(h->attrs.dot);
	assert_int_equal(h->attrs.dot->lhs_contracting.n, 0);
	assert_int_equal(h->attrs.dot->rhs_batch.n, 0);
	assert_null(find_instr(r.m[0], "main", "n")->attrs.dot);
	parsed_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tpu_module),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_attributes),
		cmocka_unit_test(test_syntax_variants),
		cmocka_unit_test(test_device_groups),
		cmocka_unit_test(test_multi_module),
		cmocka_unit_test(test_missing_root_and_inference),
		cmocka_unit_test(test_inline_and_conditional),
		cmocka_unit_test(test_nested_operands),
		cmocka_unit_test(test_unknown_attributes),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_gemm_backend_config),
		cmocka_unit_test(test_nesting_cap),
		cmocka_unit_test(test_xla_rules),
		cmocka_unit_test(test_verifier),
		cmocka_unit_test(test_old_forms),
		cmocka_unit_test(test_trailing_frame_table),
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
