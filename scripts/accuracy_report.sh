#!/bin/sh
# accuracy_report.sh: regenerates the accuracy section of docs/ACCURACY.md
# (the lines between <!-- accuracy:begin --> and <!-- accuracy:end -->), the
# README's summary of it (<!-- summary:begin --> ... <!-- summary:end -->,
# and the tpuv4-ops GEMMs by size and shape between the gemm markers)
# and the accuracy regression baseline tests/accuracy_baseline.txt,
# together, from
# `tpusim validate --hw-dir hwspecs` on every measurement set in
# ../shared/data beside the checkout (or $TPUSIM_SHARED/data): each folder
# there with a measurements.csv, worst MAPE first; then the TPU v5e GEMMs
# ../shared/docs/TPU.md quotes (v5e_gemms, below). Builds tpusim first when
# needed; scripts/doc_section.sh does the replacing.
#   usage: scripts/accuracy_report.sh [BUILD_DIR]     (default: build)
set -eu

me=accuracy_report.sh
. "$(dirname "$0")/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# Every set once as JSON: the baseline, and the order of the report.
for d in "$shared"/data/*/; do
	[ -f "$d/measurements.csv" ] || continue
	"$bin" validate --data "${d%/}" --hw-dir "$root/hwspecs" --format json \
		>"$tmp/$(basename "$d").json" || die "tpusim validate failed on $d"
done
python3 - "$tmp" "$tmp/baseline" >"$tmp/order" <<'EOF'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
sets = []
for p in glob.glob(os.path.join(tmp, "*.json")):
    s = json.load(open(p))["sets"][0]
    sets.append(s)
sets.sort(key=lambda s: -s["overall"]["mape"])
with open(out, "w") as f:
    f.write("# Accuracy regression baseline (tests/test_accuracy.c): written by\n"
            "# scripts/accuracy_report.sh with docs/ACCURACY.md's accuracy section; do not edit.\n"
            "# SET METRIC GROUP VALUE (mape: whole set; tau: kernels with >= 10 configs)\n")
    for s in sorted(sets, key=lambda s: s["set"]):
        f.write("%s mape - %.6f\n" % (s["set"], s["overall"]["mape"]))
        for g in sorted(s["groups"], key=lambda g: g["group"]):
            if g["kind"] == "kernel" and g["tau_model"] is not None \
               and g["rows"] >= 10:
                f.write("%s tau %s %.6f\n" % (s["set"], g["group"], g["tau_model"]))
for s in sets:
    print(s["set"])
# the README's summary: one line per set, worst first
with open(os.path.join(tmp, "summary"), "w") as f:
    f.write("| set (worst first) | rows | spec | MAPE | median APE | roofline MAPE |\n"
            "|---|---|---|---|---|---|\n")
    for s in sets:
        o = s["overall"]
        f.write("| %s | %d | %s | %.1f%% | %.1f%% | %.1f%% |\n" % (
            s["set"], s["rows"], s["spec"], 100 * o["mape"],
            100 * o["median_ape"], 100 * o["roofline_mape"]))
EOF

# v5e_gemms: the bf16 GEMMs of JAX's Pallas matmul guide on TPU v5e, the only
# measured times of another generation at hand (no v5e figure is fitted), as
# ../shared/docs/TPU.md (section 2, rule 8) quotes their utilisations; written
# as a measurement set (modules and measurements.csv) in $tmp/v5e and run
# through `tpusim validate`. Prints the report's section on them.
v5e_gemms() {
	if [ ! -f "$shared/docs/TPU.md" ]; then
		echo "(The TPU v5e GEMMs are left out: $shared/docs/TPU.md not found.)"
		echo
		return 0
	fi
	python3 - "$shared/docs/TPU.md" "$tmp/v5e" <<-'PY' ||
	import os, re, sys
	text, out = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2]
	at = text.find("**Measured tile-size sensitivity on v5e")
	if at < 0:
	    sys.exit("v5e GEMM table (TPU.md section 2, rule 8) not found")
	table = re.findall(r"^\| (\d+)³ \| ([\d.]+) % \| ([\d.]+) % \| ([\d.]+) % \|$",
	                   text[at:], re.M)
	relu = re.search(r"fused-ReLU runs give ([\d./]+) % and ([\d./]+) %", text[at:])
	relu = [[float(u) for u in g.split("/")] for g in relu.groups()] if relu else []
	if len(table) != 3 or len(relu) != 2 or any(len(r) != 3 for r in relu):
	    sys.exit("v5e GEMM table (TPU.md section 2, rule 8) not as expected")
	# Pallas's blocks (bm, bk, bn) as tile bounds: rows in tiles of 8, the
	# contraction in tiles of 8, the output features in tiles of 128
	blocks = {"128/128/128": (128, 128, 128), "512/1024/1024": (512, 1024, 1024)}
	def config(b):
	    bm, bk, bn = blocks[b]
	    return "output_bounds=%dx%d;kernel_bounds=%dx%d" % (
	        bm // 8, bn // 128, bk // 8, bn // 128)
	def module(name, n, ylayout, body):
	    s = "bf16[%d,%d]" % (n, n)
	    with open(os.path.join(out, "modules", name + ".hlo"), "w") as f:
	        f.write("HloModule %s, entry_computation_layout={(%s{1,0}, %s{%s})->%s{1,0}}\n\n"
	                "ENTRY %%main (x: %s, y: %s) -> %s {\n"
	                "  %%x = %s{1,0} parameter(0)\n  %%y = %s{%s} parameter(1)\n%s}\n" % (
	                    name, s, s, ylayout, s, s, s, s, s, s, ylayout,
	                    body.replace("N", str(n))))
	dot = "dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
	os.makedirs(os.path.join(out, "modules"))
	rows = []
	for i, (n, p128, p512, xla) in enumerate(table):
	    n = int(n)
	    module("xla_%d" % n, n, "1,0", "  ROOT %%dot = bf16[N,N]{1,0} %s\n" % dot)
	    # the Pallas kernel: f32 accumulator, cast to bf16 at the last step;
	    # its table runs fuse the RHS transpose (y stored (n, k): {0,1})
	    module("pallas_t_%d" % n, n, "0,1",
	           "  %%dot = f32[N,N]{1,0} %s\n"
	           "  ROOT %%z = bf16[N,N]{1,0} convert(%%dot)\n" % dot)
	    module("pallas_relu_%d" % n, n, "1,0",
	           "  %%dot = f32[N,N]{1,0} %s\n"
	           "  %%zero = f32[] constant(0)\n"
	           "  %%zeros = f32[N,N]{1,0} broadcast(%%zero), dimensions={}\n"
	           "  %%relu = f32[N,N]{1,0} maximum(%%dot, %%zeros)\n"
	           "  ROOT %%z = bf16[N,N]{1,0} convert(%%relu)\n" % dot)
	    runs = [("xla_%d" % n, "", xla),
	            ("pallas_t_%d" % n, "128/128/128", p128),
	            ("pallas_t_%d" % n, "512/1024/1024", p512),
	            ("pallas_relu_%d" % n, "128/128/128", relu[0][i]),
	            ("pallas_relu_%d" % n, "512/1024/1024", relu[1][i])]
	    for mod, b, util in runs:
	        # the guide's utilisation: 2 n^3 / time / 197e12
	        ns = 2.0 * n ** 3 / (float(util) / 100 * 197e12) * 1e9
	        rows.append("%s%s,modules/%s.hlo,tpu-v5e,%s,%d,,,host,TPU.md s2 r8\n" % (
	            mod, "@" + b if b else "", mod, config(b) if b else "", round(ns)))
	with open(os.path.join(out, "measurements.csv"), "w") as f:
	    f.write("id,module,hw,config,runtime_ns,runtime_min_ns,repeats,timing,source\n")
	    f.writelines(rows)
	PY
		die "could not write the v5e GEMM set"
	"$bin" validate --data "$tmp/v5e" --hw-dir "$root/hwspecs" \
		--csv "$tmp/v5e.csv" >/dev/null || die "tpusim validate failed on the v5e GEMMs"
	echo "#### TPU v5e GEMMs (JAX's Pallas matmul guide; no v5e figure is fitted)"
	echo
	echo "bf16 C[n,n] = A[n,n] B[n,n] timed with \`timeit\` (host wall clock, dispatch"
	echo "included) by JAX's Pallas TPU matmul guide (jax-ml/jax docs/pallas/tpu/matmul),"
	echo "given there as utilisation of 197 TFLOP/s and quoted in ../shared/docs/TPU.md"
	echo "(section 2, rule 8); measured = 2n^3 / (utilisation x 197 TFLOP/s). XLA: \`jnp.matmul\`"
	echo "(the model costs its own best tile config). Pallas: a kernel with blocks bm/bk/bn"
	echo "(costed under that config), an f32 accumulator cast to bf16 at the last step; its"
	echo "runs either fuse the RHS transpose (B stored n x k) or a ReLU. Predicted = device"
	echo "estimate + the host term (\`host.*\`, fitted on v3); worst first."
	echo
	python3 - "$tmp/v5e.csv" <<-'PY'
	import csv, sys
	rows = list(csv.DictReader(open(sys.argv[1])))
	if any(r["status"] != "ok" for r in rows):
	    sys.exit("a v5e GEMM row was not costed")
	print("| n | kernel | blocks | measured | predicted | of it device | ratio |")
	print("|---|---|---|---|---|---|---|")
	for r in sorted(rows, key=lambda r: -float(r["ape"])):
	    name, _, blocks = r["id"].partition("@")
	    kind, n = name.rsplit("_", 1)
	    kind = {"xla": "XLA", "pallas_t": "Pallas, B transposed",
	            "pallas_relu": "Pallas + ReLU"}[kind]
	    meas, pred = float(r["measured_ns"]), float(r["predicted_ns"])
	    print("| %s | %s | %s | %.0f us | %.0f us | %.0f us | %.2f |" % (
	        n, kind, blocks or "XLA's", meas / 1e3, pred / 1e3,
	        float(r["device_ns"]) / 1e3, pred / meas))
	PY
	echo
}

# steps: the published training steps of ../shared/data/step-times beside
# the per-device programs scripts/build_steps.sh compiled for them, a
# measurement set in $TPUSIM_STEPS (default build/steps; not in the
# repository: building all of it takes hours of compile). Prints the
# report's section: per row predicted vs published, worst first; MAPE and
# median per generation and per source; the rows not built, with why.
steps_section() {
	csv="$shared/data/step-times/steps.csv"
	set_dir="${TPUSIM_STEPS:-$root/build/steps}"
	echo "#### Whole training steps (step-times)"
	echo
	if [ ! -f "$csv" ]; then
		echo "(Left out: $csv not found.)"
		echo
		return 0
	fi
	if [ -f "$set_dir/measurements.csv" ]; then
		"$bin" validate --data "$set_dir" --hw-dir "$root/hwspecs" \
			--csv "$tmp/steps.csv" >/dev/null 2>"$tmp/steps.err" ||
			die "tpusim validate failed on $set_dir: $(tail -1 "$tmp/steps.err")"
	else
		: >"$tmp/steps.csv"
	fi
	echo "Published, measured steps (MaxText's performance tables on v4 and v5e, tpu-recipes"
	echo "on v6e; ../shared/data/step-times) beside \`tpusim validate\` on the per-device"
	echo "programs \`scripts/build_steps.sh\` compiled for them (docs/STEPS.md: MaxText's own"
	echo "model, a run's flash attention as tokamax's splash kernels with its blocks and VMEM"
	echo "limit, else a MaxText-equivalent JAX model where MaxText's compile does not fit; none"
	echo "of the runs' other XLA flags), each on its slice (\`topology\`,"
	echo "\`slices\`). A multi-slice program is compiled per slice: the exchange between the"
	echo "slices is the megascale runtime's sends, costed as collectives over DCN. Ratio ="
	echo "predicted / published; worst first."
	echo
	python3 - "$csv" "$tmp/steps.csv" "$set_dir/MANIFEST.md" "$tmp/summary" <<-'PY'
	import csv, os, statistics, sys
	rows = {r["id"]: r for r in csv.DictReader(open(sys.argv[1]))}
	got = {r["id"]: r for r in csv.DictReader(open(sys.argv[2]))} if os.path.getsize(sys.argv[2]) else {}
	notes = {}
	if os.path.exists(sys.argv[3]):
	    for line in open(sys.argv[3]):
	        f = [c.strip() for c in line.strip().strip("|").split("|")]
	        if len(f) >= 9 and f[0] in rows:
	            notes[f[0]] = f[-1]
	def source(r):
	    return "MaxText tables" if r["id"].startswith("maxtext-") else "tpu-recipes"
	costed = [(i, r) for i, r in got.items() if r["status"] == "ok"]
	print("| id | hw | chips | published | predicted | ratio | bound |")
	print("|---|---|---|---|---|---|---|")
	for i, r in sorted(costed, key=lambda x: -float(x[1]["ape"])):
	    meas, pred = float(r["measured_ns"]) / 1e9, float(r["predicted_ns"]) / 1e9
	    print("| %s | %s | %s | %.2f s | %.2f s | %.2f | %s |" % (
	        i, rows[i]["hw"], rows[i]["chips"], meas, pred, pred / meas, r["bound"]))
	print()
	print("| group | rows costed | MAPE | median APE |")
	print("|---|---|---|---|")
	groups = {}
	for i, r in costed:
	    for g in (rows[i]["hw"], source(rows[i])):
	        groups.setdefault(g, []).append(float(r["ape"]))
	for g, v in sorted(groups.items(), key=lambda x: -sum(x[1]) / len(x[1])):
	    print("| %s | %d | %.1f%% | %.1f%% |" % (
	        g, len(v), 100 * sum(v) / len(v), 100 * statistics.median(v)))
	print()
	v = [float(r["ape"]) for _, r in costed]
	# the README's summary: this set in its place, worst first by MAPE
	summary = open(sys.argv[4]).readlines()
	mape = 100 * sum(v) / len(v) if v else float("inf")
	at = 2
	while at < len(summary) and summary[at].startswith("|") and \
	        float(summary[at].split("|")[4].strip().rstrip("%")) >= mape:
	    at += 1
	summary.insert(at, "| step-times (whole steps; %d of %d rows built and costed) | %d | %s | %s | %s | - |\n" % (
	    len(costed), len(rows), len(costed), ",".join(sorted({rows[i]["hw"] for i, _ in costed})) or "-",
	    "%.1f%%" % mape if v else "-",
	    "%.1f%%" % (100 * statistics.median(v)) if v else "-"))
	open(sys.argv[4], "w").writelines(summary)
	missing = [i for i in rows if i not in got or got[i]["status"] != "ok"]
	print("Rows not costed: %d of %d." % (len(missing), len(rows)))
	for i in missing:
	    why = (got[i]["status"] + ": " + got[i]["error"]) if i in got else \
	          notes.get(i, "not built")
	    print("- %s: %s" % (i, why or "not built"))
	PY
	echo
}

section=$tmp/section
{
	echo "### Accuracy against measured TPU runtimes"
	echo
	echo "Generated by \`scripts/accuracy_report.sh\` from \`tpusim validate --hw-dir hwspecs\`"
	echo "on every measurement set in \`../shared/data\`, worst first (do not edit by hand;"
	echo "the same run writes \`tests/accuracy_baseline.txt\`, which the \`accuracy\` test"
	echo "holds the model to). APE is abs(predicted - measured) / measured; MAPE is its"
	echo "mean. The roofline baseline is, per kernel, the slowest of its MXU FLOPs at the"
	echo "bf16 peak, its VPU element ops at one issue slot each and its bytes moved once at HBM"
	echo "bandwidth (a collective: the slower of its ICI time and its bytes), plus the"
	echo "per-kernel overhead, summed over kernels; every total (model, roofline, hybrid)"
	echo "less the async time hidden behind the work between a start and its done, as"
	echo "\`tpusim run\` counts it (sim/program.c). Kendall tau-b ranks the tile configs"
	echo "of one kernel against their measured times (1 = same order; the mean is over"
	echo "kernels with at least 10 configs); the roofline ignores tile configs, so its"
	echo "tau is undefined (n/a). Top-K slowdown = best measured time among the K configs"
	echo "predicted fastest / the measured best - 1 (ties broken at random, in"
	echo "expectation); \"fewer tile steps\" is the baseline that picks the config with the"
	echo "fewest grid steps; \"compiler default\" is a set's run-0 config. Host-timed rows"
	echo "(tpuv3-ops, tpuv3-allreduce) are compared with the device estimate plus the"
	echo "program's host term from the spec (\`host.*\`: per call, per kernel, per extra"
	echo "device); no measured value of a row enters its prediction."
	echo
	while read -r s; do
		# tpuv4-ops' rows also to a CSV, for its GEMMs by size and shape
		# below (issue "Whole programs": the large and irregular ones are
		# the family's error)
		csv=""
		[ "$s" = tpuv4-ops ] && csv="--csv $tmp/v4.csv"
		# shellcheck disable=SC2086
		"$bin" validate --data "$shared/data/$s" --hw-dir "$root/hwspecs" --markdown $csv ||
			die "tpusim validate failed on $s"
		[ -n "$csv" ] || continue
		echo "#### tpuv4-ops matmul by size and shape"
		echo
		echo "C[M,N] = A[M,K] B[K,N] in f16; FLOPs = 2MNK; regular: M, N and K all multiples of"
		echo "128; ratio: predicted / measured (median: the upper one of an even count); rows"
		echo "the model could not cost are left out; worst first. Missing per 1,000 outputs:"
		echo "measured - predicted fitted as a x (MN / 1,000) + b x (MNK / 10^6) by least"
		echo "squares weighted by 1 / measured^2, a in ns (b, ns per 10^6 MACs, in brackets)."
		echo
		python3 - "$tmp/v4.csv" >"$tmp/gemm" <<-'PY'
	import csv, re, sys
	buckets = {}
	for r in csv.DictReader(open(sys.argv[1])):
	    m = re.match(r"matmul_f16_m(\d+)_n(\d+)_k(\d+)", r["id"])
	    if not m or r["status"] != "ok":
	        continue
	    M, N, K = map(int, m.groups())
	    flops = 2 * M * N * K
	    size = ("tiny (< 2^24 FLOPs)" if flops < 2**24 else
	            "small (2^24 to 2^30)" if flops < 2**30 else "large (>= 2^30)")
	    shape = "regular" if M % 128 == 0 and N % 128 == 0 and K % 128 == 0 else "irregular"
	    meas, pred = float(r["measured_ns"]), float(r["predicted_ns"])
	    buckets.setdefault((size, shape), []).append(
	        (pred / meas, M * N / 1e3, M * N * K / 1e6, meas - pred, meas))
	def missing(v):
	    # 2x2 normal equations of the weighted least squares
	    s11 = s12 = s22 = t1 = t2 = 0.0
	    for _, x1, x2, y, w in v:
	        w = 1 / w**2
	        s11 += w * x1 * x1; s12 += w * x1 * x2; s22 += w * x2 * x2
	        t1 += w * x1 * y; t2 += w * x2 * y
	    det = s11 * s22 - s12 * s12
	    return (t1 * s22 - t2 * s12) / det, (s11 * t2 - s12 * t1) / det
	rows = []
	for (size, shape), v in buckets.items():
	    v.sort()
	    rows.append((sum(abs(x[0] - 1) for x in v) / len(v), size, shape, v))
	print("| size | shape | rows | MAPE | median ratio | missing per 1,000 outputs |")
	print("|---|---|---|---|---|---|")
	for mape, size, shape, v in sorted(rows, reverse=True):
	    a, b = missing(v)
	    print("| %s | %s | %d | %.1f%% | %.2f | %.2f ns (%.2f) |" % (
	        size, shape, len(v), 100 * mape, v[len(v) // 2][0], a, b))
	PY
		cat "$tmp/gemm"
		echo
	done <"$tmp/order"
	v5e_gemms
	steps_section
} >"$section"
sh "$root/scripts/doc_section.sh" docs/ACCURACY.md accuracy <"$section"
sh "$root/scripts/doc_section.sh" README.md summary <"$tmp/summary"
sh "$root/scripts/doc_section.sh" README.md gemm <"$tmp/gemm"
cp "$tmp/baseline" "$root/tests/accuracy_baseline.txt.new"
mv "$root/tests/accuracy_baseline.txt.new" "$root/tests/accuracy_baseline.txt"
