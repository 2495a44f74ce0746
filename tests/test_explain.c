/*
 * test_explain.c: what --explain prints adds up to the estimate. For every
 * kernel of the shipped example, and for every measured config of every
 * TpuGraphs kernel (skipped, saying so, without ../shared), the terms of the
 * printed "time (ns) = ..." line are read back and summed here:
 *   kernel + first + (S - 1) x (max(compute, DMA) + step)
 *          + (compute + step) + last
 * and must give the printed total and the estimate (terms are printed to 6
 * significant digits: relative tolerance 1e-5). Also: on every TpuGraphs
 * kernel the default config is the model's best of the full tile search;
 * a collective's printed parts (algorithm, transfer, VPU adds, latency).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "val.h"
#include "test_util.h"

#define REL_TOL 1e-5

/* sim_kernel_explain's text for kernel k under cfg into buf (n bytes,
 * NUL-terminated); its status. */
static enum ts_status explain(const struct sim_kernel *k,
			      const struct hw_spec *hw,
			      const struct sim_tile_config *cfg, char *buf,
			      size_t n)
{
	memset(buf, 0, n);
	FILE *f = fmemopen(buf, n - 1, "w");
	assert_non_null(f);
	struct ts_diag d = {0};
	enum ts_status st = sim_kernel_explain(k, hw, cfg, f, &d);
	fclose(f);
	return st;
}

/* Explains kernel k under cfg and checks its sum; returns 1 when the
 * kernel has a pipeline line (tiled kernels), 0 otherwise. */
static int check_kernel(const struct sim_kernel *k, const struct hw_spec *hw,
			const struct sim_tile_config *cfg)
{
	char buf[16384];
	enum ts_status st = explain(k, hw, cfg, buf, sizeof buf);
	if (st == TS_ERR_INFEASIBLE)
		return 0;
	assert_int_equal(st, TS_OK);
	const char *t = strstr(buf, "time (ns) = ");
	if (!t)
		return 0;
	double kern, first, s, comp, dma, step, comp2, step2, last, busy, total;
	int n = sscanf(t,
		       "time (ns) = kernel %lf + max(first load %lf (%*f B) + "
		       "(%lf - 1) x (max(compute %lf, DMA %lf) + step %lf) + "
		       "last step (compute %lf + step %lf) + last store %lf "
		       "(%*f B), DMA busy %lf)\n = %lf ns",
		       &kern, &first, &s, &comp, &dma, &step, &comp2, &step2,
		       &last, &busy, &total);
	if (n != 11)
		fail_msg("%s: cannot read the time line (%d fields):\n%s",
			 k->name, n, t);
	double pipe = first + (s - 1) * ((comp > dma ? comp : dma) + step) +
		      comp2 + step2 + last;
	double sum = kern + (pipe > busy ? pipe : busy);
	assert_near(sum, total, REL_TOL * total);
	/* a relaid plan: its copies' line, then the kernel's total */
	const char *r = strstr(t, "  relaid: ");
	if (r) {
		double copies;
		const char *eq = strstr(r, ") = ");
		assert_non_null(eq);
		assert_int_equal(sscanf(eq, ") = %lf ns\n  total = %lf ns",
					&copies, &total),
				 2);
		sum += copies;
	}
	struct sim_estimate e;
	assert_int_equal(sim_kernel_estimate(k, hw, cfg, &e, NULL), TS_OK);
	assert_near(sum, total, REL_TOL * total);
	assert_near(sum, e.time_ns, REL_TOL * e.time_ns);
	return 1;
}

static void test_example(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	char path[4096], *text;
	size_t len;
	struct ts_diag d = {0};
	snprintf(path, sizeof path, "%s/cli/examples/mlp_train_step.hlo",
		 getenv("TPUSIM_SOURCE"));
	assert_int_equal(ts_read_file(path, &text, &len, &d), TS_OK);
	struct tu_built b;
	tu_build_file(path, text, len, NULL, &b);
	int n = 0;
	for (int i = 0; i < b.p.n_kernels; i++)
		n += check_kernel(&b.p.kernels[i], &hw, NULL);
	assert_true(n >= 5); /* the example's tiled kernels */
	tu_built_free(&b);
	ts_free(text);
}

/* The 8192^3 dot of the megacore issue on v5p: the printed terms are one
 * core's pipeline, not the whole kernel's. */
static void test_megacore_dot(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v5p", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule m\nENTRY e {\n"
		 "  a = bf16[8192,8192]{1,0} parameter(0)\n"
		 "  w = bf16[8192,8192]{1,0} parameter(1)\n"
		 "  ROOT d = bf16[8192,8192]{1,0} dot(a, w), "
		 "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
		 &b);
	assert_int_equal(check_kernel(&b.p.kernels[0], &hw, NULL), 1);
	tu_built_free(&b);
}

/* Values memory-space assignment keeps in VMEM: the reading kernel says
 * so, with the room (v5e: 128 - 16 MiB = 117,440,512 B), and its accesses
 * move nothing; the cross-program prefetch's kernel says what it copies
 * where. */
static void test_placed(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v5e", &hw))
		skip();
	static const char text[] =
		"HloModule m\nENTRY e {\n"
		"  p = f32[1024,1024]{1,0} parameter(0)\n"
		"  w = f32[1024,1024]{1,0} parameter(1)\n"
		"  x = f32[1024,1024]{1,0} dot(p, w), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n"
		"  ROOT y = f32[1024,1024]{1,0} dot(x, w), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n}\n";
	struct tu_built b;
	struct sim_program_opts po = {.vmem_room = sim_vmem_room(&hw)};
	tu_build_file("t.hlo", text, strlen(text), &po, &b);
	struct ts_diag d = {0};
	assert_int_equal(sim_program_place(&b.p, &hw, &d), TS_OK);
	char buf[8192] = {0};
	FILE *f = fmemopen(buf, sizeof buf - 1, "w");
	assert_non_null(f);
	/* w, the weight both dots read, prefetched across programs: a DMA
	 * kernel; y reads x and w from VMEM; p's prefetch, with no kernel
	 * before its reader to hide its copy, moves nothing */
	static const char *const names[] = {"p.prefetch-start",
					    "w.prefetch-start", "y"};
	for (size_t i = 0; i < TS_ARRAY_LEN(names); i++)
		assert_int_equal(sim_kernel_explain(tu_kernel(&b, names[i]),
						    &hw, NULL, f, &d),
				 TS_OK);
	fclose(f);
	if (!strstr(buf, "kernel p.prefetch-start (copy)\n  a prefetch "
			 "memory-space assignment did not place (no VMEM room "
			 "on this spec, or its copy would cost more than its "
			 "readers save): it moves nothing, 0 ns\n") ||
	    !strstr(buf, "kernel w.prefetch-start (copy)\n  async DMA: the copy "
			 "of w into VMEM, run by the DMA engines beside the "
			 "TensorCore\n") ||
	    !strstr(buf, "kernel y (dot)\n  in VMEM by memory-space assignment "
			 "(room vmem.bytes - vmem.scoped_bytes = 1.17441e+08 B; "
			 "sim/placement.c): w, x\n") ||
	    !strstr(buf, "    read   x    ") ||
	    !strstr(buf, " runs (in VMEM: no DMA)\n    read   w ") ||
	    !strstr(buf, " 1 runs (in VMEM: no DMA)\n    write  y "))
		fail_msg("unexpected explanation:\n%s", buf);
	tu_built_free(&b);
}

/* A copy to host memory (S(5), host offload) on v4: its HBM bytes at
 * HBM's rate and the value over PCIe, 1.6e10 B/s = 16 B/ns (hwspecs/v4.yaml),
 * the slower taken: latency + 4 MiB / 16 B/ns. */
static void test_host_dma(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v4", &hw))
		skip();
	struct tu_built b;
	tu_build("HloModule h, is_scheduled=true\nENTRY e {\n"
		 "  x = f32[1024,1024] parameter(0)\n"
		 "  cs = (f32[1024,1024]{1,0:S(5)}, f32[1024,1024], u32[]) "
		 "copy-start(x)\n"
		 "  ROOT cd = f32[1024,1024]{1,0:S(5)} copy-done(cs)\n}\n",
		 &b);
	char buf[4096], want[512];
	assert_int_equal(explain(&b.p.kernels[0], &hw, NULL, buf, sizeof buf),
			 TS_OK);
	snprintf(want, sizeof want,
		 "  PCIe: 4194304 B at 16.0 B/ns (the value, between host "
		 "memory and the chip)\n"
		 "  time = latency %.1f + max(HBM, PCIe) = %.1f ns (hbm)\n",
		 hw.dma_latency_ns, hw.dma_latency_ns + 4194304.0 / 16.0);
	if (!strstr(buf, "async DMA: the copy of x into host memory, run by "
			 "the DMA engines beside the TensorCore\n") ||
	    !strstr(buf, want))
		fail_msg("unexpected explanation:\n%s\nwant:\n%s", buf, want);
	tu_built_free(&b);
}

/*
 * An f32 all-reduce over the 8 cores of a v3-8 (4 chips, 2 cores each:
 * every link shared by 2 devices), link = link_bw x efficiency / 2 B/ns:
 *   ring      2 x 7/8 x B / (2 x link) + 14 x latency
 *   one-shot  floor(64 / 4) = 16 x B / (4 x link) + 4 x latency
 * 1 KiB takes the one-shot, 64 MiB the ring; the VPU adds hide behind the
 * transfer in both. The printed parts sum to the ICI time, and kernel +
 * max(ICI, DMA) to the estimate.
 */
static void test_collective(void **state)
{
	(void)state;
	struct hw_spec hw;
	if (!tu_load_spec("v3", &hw))
		skip();
	double link = hw.ici_link_bw_bytes_per_s * 1e-9 * hw.ici_efficiency / 2;
	static const struct {
		const char *shape, *algo;
		double bytes;
		bool one_shot;
	} cases[] = {{"f32[256]", "one-shot", 1024.0, true},
		     {"f32[16777216]", "ring", 67108864.0, false}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		snprintf(text, sizeof text,
			 "HloModule m, replica_count=8\n"
			 "add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
			 " ROOT s = f32[] add(x, y) }\n"
			 "ENTRY e {\n  p = %s parameter(0)\n"
			 "  ROOT r = %s all-reduce(p), "
			 "replica_groups={{0,1,2,3,4,5,6,7}}, to_apply=add\n}\n",
			 cases[i].shape, cases[i].shape);
		struct tu_built b;
		tu_build(text, &b);
		double want = cases[i].one_shot
				      ? 16 * cases[i].bytes / (4 * link) +
						4 * hw.ici_latency_ns
				      : 2 * 7.0 / 8 * cases[i].bytes / (2 * link) +
						14 * hw.ici_latency_ns;
		char buf[4096];
		assert_int_equal(explain(&b.p.kernels[0], &hw, NULL, buf,
					 sizeof buf),
				 TS_OK);
		char algo[16];
		double ici, tr, red, lat, hbm, kern, total;
		int n = sscanf(buf,
			       "kernel r (collective)\n  collective: %15[a-z-], "
			       "ICI %lf ns = max(transfer %lf, VPU reduction %lf) "
			       "+ latency %lf; HBM %lf bytes\n  time = kernel %lf "
			       "+ max(ICI, DMA) = %lf ns",
			       algo, &ici, &tr, &red, &lat, &hbm, &kern, &total);
		if (n != 8)
			fail_msg("cannot read (%d fields):\n%s", n, buf);
		assert_string_equal(algo, cases[i].algo);
		assert_near(ici, want, REL_TOL * want);
		assert_near(ici, (tr > red ? tr : red) + lat, REL_TOL * ici);
		assert_true(red < tr);
		struct sim_estimate e;
		assert_int_equal(sim_kernel_estimate(&b.p.kernels[0], &hw, NULL, &e,
						     NULL),
				 TS_OK);
		assert_near(total, e.time_ns, REL_TOL * e.time_ns);
		assert_true(total >= kern + ici * (1 - REL_TOL));
		tu_built_free(&b);
	}
}

static void test_tpugraphs_configs(void **state)
{
	(void)state;
	const char *shared = getenv("TPUSIM_SHARED");
	const char *src = getenv("TPUSIM_SOURCE");
	if (!shared || !src) {
		print_message("TPUSIM_SHARED unset: the tile set's configs are "
			      "not explained\n");
		skip();
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/data/tpugraphs-tile-v3", shared);
	struct val_dataset ds;
	struct ts_diag d = {0};
	assert_int_equal(val_dataset_load(dir, &ds, &d), TS_OK);
	struct hw_spec hw;
	assert_true(tu_load_spec("v3", &hw));
	int checked = 0;
	for (int m = 0; m < ds.n_modules; m++) {
		const struct val_module *mod = &ds.modules[m];
		char *text;
		size_t len;
		assert_int_equal(ts_read_file(mod->full_path, &text, &len, &d),
				 TS_OK);
		struct tu_built b;
		tu_build_file(mod->full_path, text, len, NULL, &b);
		/* The kernel TpuGraphs tuned: op_name "autotuned_op". */
		const struct sim_kernel *k = NULL;
		for (int i = 0; i < b.p.n_kernels; i++)
			if (b.p.kernels[i].instr->op_name &&
			    !strcmp(b.p.kernels[i].instr->op_name, "autotuned_op"))
				k = &b.p.kernels[i];
		assert_non_null(k);
		checked += check_kernel(k, &hw, NULL);
		/* The default is the model's best: the full search (up to 4
		 * million configs) finds nothing faster. */
		struct hyb_tile_result res;
		assert_int_equal(hyb_tile_search(k, &hw, NULL, &res, &d), TS_OK);
		if (res.n_top > 0)
			assert_true(res.def.est.time_ns == res.top[0].est.time_ns);
		for (int r = 0; r < ds.n_rows; r++) {
			const struct val_row *row = &ds.rows[r];
			if (row->i_module == m && row->cfg.n_out > 0)
				checked += check_kernel(k, &hw, &row->cfg);
		}
		tu_built_free(&b);
		ts_free(text);
	}
	print_message("explained and summed %d kernel configs\n", checked);
	assert_true(checked > 700);
	val_dataset_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_megacore_dot),
		cmocka_unit_test(test_collective),
		cmocka_unit_test(test_placed),
		cmocka_unit_test(test_host_dma),
		cmocka_unit_test(test_tpugraphs_configs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
