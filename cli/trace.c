/*
 * trace.c: a program's schedule as a Chrome trace (the trace-event JSON
 * that Perfetto and chrome://tracing open), written through the output
 * layer's JSON (libyaml's emitter), `run --trace FILE.json`.
 *
 * One process per module, one thread (track) per:
 *   1 kernels  the TensorCore's timeline: each kernel in schedule order
 *              for time x multiplicity ("runs" in its arguments: a loop
 *              body is one event with its count), then, where an async
 *              transfer outlasts the work between its start and done, a
 *              "wait" event for the part not hidden;
 *   2 MXU, 3 VPU, 4 DMA  each kernel's busy time of the unit (cycles at
 *              the clock over the cores it is split across, x runs; DMA:
 *              the transfers' busy time), from the kernel's start, at most
 *              the kernel's own time;
 *   5 ICI      collectives;
 *   6 async    the work of async pairs (copy-start, all-reduce-start, ...),
 *              from its start's position (later by the time it queued
 *              behind transfers on its link: program.c), beside the
 *              kernels it overlaps.
 * The kernels track ends at the program time `run` reports (its events
 * add up to it: sim_program_total). Times are microseconds, as the format
 * wants, to the nanosecond.
 */
#include "cli.h"

#include <math.h>
#include <string.h>

enum { T_KERNELS = 1, T_MXU, T_VPU, T_DMA, T_ICI, T_ASYNC };

static const char *const track_names[] = {
	[T_KERNELS] = "kernels", [T_MXU] = "MXU",  [T_VPU] = "VPU",
	[T_DMA] = "DMA",         [T_ICI] = "ICI",  [T_ASYNC] = "async",
};

struct trace {
	struct cmd_report r;
	const struct hw_spec *hw;
};

static void event(struct trace *t, int pid, int tid, const char *name,
		  double start_ns, double dur_ns, const struct sim_kernel *k)
{
	struct cmd_report *r = &t->r;
	cmd_report_item_begin(r);
	cmd_report_text(r, "name", name);
	cmd_report_text(r, "ph", "X");
	cmd_report_num(r, "pid", CMD_UNIT_INT, pid);
	cmd_report_num(r, "tid", CMD_UNIT_INT, tid);
	/* microseconds, three decimals: the nanosecond */
	cmd_report_num(r, "ts", CMD_UNIT_TIME_NS, start_ns * 1e-3);
	cmd_report_num(r, "dur", CMD_UNIT_TIME_NS, dur_ns * 1e-3);
	if (k) {
		cmd_report_map_begin(r, "args");
		cmd_report_text(r, "kind", sim_kernel_kind_name(k->kind));
		cmd_report_text(r, "bound", hw_unit_name(k->est.bound));
		cmd_report_num(r, "runs", CMD_UNIT_REAL, k->multiplicity);
		cmd_report_num(r, "time_ns", CMD_UNIT_TIME_NS, k->est.time_ns);
		cmd_report_num(r, "flops", CMD_UNIT_SI, k->est.flops);
		cmd_report_num(r, "bytes", CMD_UNIT_BYTES,
			       k->est.bytes_read + k->est.bytes_written);
		cmd_report_map_end(r);
	}
	cmd_report_item_end(r);
}

/* Track names (metadata events). */
static void name_tracks(struct trace *t, int pid, const char *module)
{
	struct cmd_report *r = &t->r;
	cmd_report_item_begin(r);
	cmd_report_text(r, "name", "process_name");
	cmd_report_text(r, "ph", "M");
	cmd_report_num(r, "pid", CMD_UNIT_INT, pid);
	cmd_report_map_begin(r, "args");
	cmd_report_text(r, "name", module[0] ? module : "(unnamed)");
	cmd_report_map_end(r);
	cmd_report_item_end(r);
	for (int tid = T_KERNELS; tid <= T_ASYNC; tid++) {
		cmd_report_item_begin(r);
		cmd_report_text(r, "name", "thread_name");
		cmd_report_text(r, "ph", "M");
		cmd_report_num(r, "pid", CMD_UNIT_INT, pid);
		cmd_report_num(r, "tid", CMD_UNIT_INT, tid);
		cmd_report_map_begin(r, "args");
		cmd_report_text(r, "name", track_names[tid]);
		cmd_report_map_end(r);
		cmd_report_item_end(r);
	}
}

/* The unit tracks of kernel k run from start for dur at most. */
static void unit_events(struct trace *t, int pid, const struct sim_kernel *k,
			double start, double dur)
{
	double ghz = t->hw->clock_hz * 1e-9;
	double cores = k->est.cores > 1 ? k->est.cores : 1;
	double mult = k->multiplicity;
	double busy[] = {
		[T_MXU] = k->est.mxu_cycles / ghz / cores * mult,
		[T_VPU] = k->est.vpu_cycles / ghz / cores * mult,
		[T_DMA] = k->est.dma_cycles / ghz * mult,
		[T_ICI] = k->est.bound == HW_UNIT_ICI ? dur : 0,
	};
	for (int tid = T_MXU; tid <= T_ICI; tid++)
		if (busy[tid] > 0)
			event(t, pid, tid, k->name, start, fmin(busy[tid], dur), k);
}

/* How long async kernel i's transfer queued behind earlier ones. */
static double queued(const struct sim_program *p, int i)
{
	for (int a = 0; a < p->n_async; a++) {
		const struct sim_async *x = &p->async[a];
		if (i >= x->first && i < x->first + x->n)
			return x->queued_ns;
	}
	return 0;
}

static void program(struct trace *t, int pid, struct sim_program *p)
{
	name_tracks(t, pid, p->module->name);
	sim_program_total(p); /* fills each pair's async and hidden time */
	double now = 0;
	for (int i = 0; i < p->n_kernels; i++) {
		const struct sim_kernel *k = &p->kernels[i];
		double dur = k->est.time_ns * k->multiplicity;
		if (k->async_work) {
			double at = now + queued(p, i);
			event(t, pid, T_ASYNC, k->name, at, dur, k);
			unit_events(t, pid, k, at, dur);
		} else if (dur > 0) {
			event(t, pid, T_KERNELS, k->name, now, dur, k);
			unit_events(t, pid, k, now, dur);
			now += dur;
		}
		/* a pair whose last kernel between start and done (or whose
		 * own work, with nothing between) ends here: the wait */
		for (int a = 0; a < p->n_async; a++) {
			const struct sim_async *x = &p->async[a];
			int last = x->n_between > 0 ? x->between + x->n_between - 1
						    : x->first + x->n - 1;
			double wait = x->async_ns - x->hidden_ns;
			if (last != i || !(wait > 0))
				continue;
			char name[160];
			snprintf(name, sizeof name, "wait %s", x->done->name);
			event(t, pid, T_KERNELS, name, now, wait, NULL);
			now += wait;
		}
	}
}

struct write_ctx {
	struct sim_program *progs;
	int n_progs;
	const struct hw_spec *hw;
};

static enum ts_status write_trace(FILE *f, void *ctx_v)
{
	struct write_ctx *c = ctx_v;
	struct trace t = {.hw = c->hw};
	cmd_report_begin(&t.r, CMD_FORMAT_JSON, f);
	cmd_report_text(&t.r, "displayTimeUnit", "ns");
	cmd_report_list_begin(&t.r, "traceEvents");
	for (int m = 0; m < c->n_progs; m++)
		program(&t, m + 1, &c->progs[m]);
	cmd_report_list_end(&t.r);
	struct ts_diag d = {0};
	return cmd_report_end(&t.r, &d);
}

int cmd_write_trace(const struct cmd_ctx *ctx, const char *path,
		    struct sim_program *progs, int n_progs,
		    const struct hw_spec *hw)
{
	struct write_ctx c = {progs, n_progs, hw};
	return cmd_write_file(ctx, path, write_trace, &c);
}
