#!/bin/sh
# bench.sh: runs the benchmarks on one core (taskset -c 0) and rewrites the
# bench section of docs/BENCH.md (between <!-- bench:begin --> and <!-- bench:end -->):
#   - HLO parse throughput over ../shared/data/hlo-corpus, 5 runs (target >= 200 MB/s)
#   - analytic estimates per second over every feasible tile config of the
#     largest convolution kernel in tpugraphs-tile-v3, fusion.191 (target >= 1e6/s)
#   - the same with the shipped learned model on top (target >= 1e5/s)
#   - `tpusim run` wall time on the largest corpus module, median of 21 runs
#     (target <= 20 ms), and with --model default (target <= 2x that)
#   - `tpusim autotune`: the replay of the tile set, and the live loop's
#     overhead per measurement (the command /bin/echo, its exec time
#     subtracted)
#   - `tpusim train` wall time of the default model on every shared set
#     (target <= 2 minutes on 2 cores)
#   - `tpusim fuse` on the largest corpus module, xla and analytic policies
#     (target: fuse + run on a 3.5k-instruction module <= 100 ms, one core)
#   - `tpusim whatif` on the largest corpus module, 1024 points, with tile
#     configs held and re-chosen (target >= 1000 points/s on a 1k-kernel
#     program, held), over fields the kernels' plans read (rebuilt per
#     point), and under mpirun with 1 and 2 ranks
#   - `tpusim run` on whole programs (the Llama-3.1-8B step and MaxText step
#     of hlo-programs), `fuse --policy analytic` on the Gemma-3-1B step (one
#     run: about 7,000 fusion trials, each regrouping the computation) and
#     `validate` on tpuv4-ops
#   - how `run` and `fuse` grow with module size: the largest corpus module
#     replicated 1 to 56 times (scripts/replicate_hlo.py, 1.6k to 90k
#     instructions), one run each, and the exponent of time in size
#     (target: ~ instructions^1.1)
#   - `fuse --policy analytic` on chains of 1,000 and 4,000 adds, and `run`
#     on two 3D convolutions shaped like a 3D U-Net's (the default tile
#     search over 85k and 130k candidates)
# With BEFORE_BUILD (a build of an earlier commit, e.g. the one before a
# speed change), every timed command runs with it too, in the same run,
# and its figure follows in brackets.
#   usage: scripts/bench.sh [BUILD_DIR [BEFORE_BUILD_DIR]]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
before=${2:-}
shared=${TPUSIM_SHARED:-$root/../shared}
corpus=$shared/data/hlo-corpus
[ -d "$corpus" ] || { echo "bench.sh: $corpus not found" >&2; exit 1; }

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
pin="taskset -c 0"
command -v taskset >/dev/null || pin=""

largest=$(ls -S "$corpus"/*.hlo | head -n 1)
median_ms() {
	# Median wall time in ms, with $2 decimals, of $1 runs of the command
	# $3... (its output discarded).
	n=$1 dec=$2
	shift 2
	i=0
	while [ $i -lt "$n" ]; do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(( (t1 - t0) / 1000 ))
		i=$((i + 1))
	done | sort -n | sed -n "$(( (n + 1) / 2 ))p" |
		awk -v d="$dec" '{ printf "%.*f", d, $1 / 1000 }'
}
both_ms() {
	# median_ms $1 $2 of tpusim (with arguments $3...) on one core, with
	# the build and, given BEFORE_BUILD, " (before: Y ms)" with that one
	n=$1 dec=$2
	shift 2
	# shellcheck disable=SC2086
	printf '%s ms' "$(median_ms "$n" "$dec" $pin "$build/cli/tpusim" "$@")"
	if [ -n "$before" ]; then
		# shellcheck disable=SC2086
		printf ' (before: %s ms)' "$(median_ms "$n" "$dec" $pin "$before/cli/tpusim" "$@")"
	fi
}
run_ms() {
	# `tpusim run` (with arguments $@) on the largest module, 21 runs.
	both_ms 21 1 run "$largest" --hw "$root/hwspecs/v3.yaml" "$@"
}
whatif_ms() {
	# five whatif runs on the largest module, launched by $1 (taskset,
	# mpirun or nothing), with arguments $2...
	launch=$1
	shift
	# shellcheck disable=SC2086
	median_ms 5 0 $launch "$build/cli/tpusim" whatif "$largest" --hw "$root/hwspecs/v3.yaml" "$@"
}
fuse_ms() {
	# five `tpusim fuse --policy $1` runs on the largest module, one core.
	both_ms 5 0 fuse "$largest" --hw "$root/hwspecs/v3.yaml" --policy "$1"
}
pps() {
	# points per second of 1024 points in $1 ms (load and elasticities included)
	awk -v ms="$1" 'BEGIN { printf "%.0f", 1024 / (ms / 1000) }'
}

section=$(mktemp)
trap 'rm -f "$section"' EXIT
{
	echo "Measured by \`scripts/bench.sh\` on $(nproc)-core $(uname -m), one core pinned"
	echo "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))."
	echo
	echo '```'
	# The parse rate varies run to run on a shared machine: five runs,
	# reported as given (each parses the corpus for >= 2 s of CPU time).
	i=0
	while [ $i -lt 5 ]; do
		$pin "$build/bench/bench_parse" "$corpus"
		i=$((i + 1))
	done
	$pin "$build/bench/bench_model" "$shared/data/tpugraphs-tile-v3/modules/fusion.191.hlo"
	echo "tpusim run $(basename "$largest") --hw v3: $(run_ms) wall (median of 21)"
	echo "tpusim run $(basename "$largest") --hw v3 --model default: $(run_ms --model default) wall (median of 21)"
	instrs=$(grep -c " = " "$largest")
	for policy in xla analytic; do
		echo "tpusim fuse $(basename "$largest") ($instrs instructions) --policy $policy (decide, write, read back, cost both): $(fuse_ms "$policy") wall (median of 5)"
	done
	programs=$shared/data/hlo-programs
	for m in hlo_llama31_8b_bf16_1x8 nv_maxtext_1n1g_jit_train_step_before_optimization; do
		[ -f "$programs/$m.hlo" ] || continue
		echo "tpusim run $m ($(grep -c " = " "$programs/$m.hlo") instructions) --hw v3: $(both_ms 3 0 run "$programs/$m.hlo" --hw "$root/hwspecs/v3.yaml") wall (median of 3)"
	done
	m=gemma3_1b_flax_call
	if [ -f "$programs/$m.hlo" ]; then
		echo "tpusim fuse $m ($(grep -c " = " "$programs/$m.hlo") instructions) --policy analytic: $(both_ms 1 0 fuse "$programs/$m.hlo" --hw "$root/hwspecs/v3.yaml" --policy analytic -o /dev/null) wall (one run)"
	fi
	echo "tpusim validate tpuv4-ops (4428 rows): $(both_ms 3 0 validate --data "$shared/data/tpuv4-ops" --hw-dir "$root/hwspecs") wall (median of 3)"
	# growth with size: the largest module replicated
	first_n="" first_ms=""
	for k in 1 4 16 56; do
		python3 "$root/scripts/replicate_hlo.py" "$largest" $k >"$section.rep.hlo"
		n=$(grep -c " = " "$section.rep.hlo")
		ms=$(median_ms 1 0 $pin "$build/cli/tpusim" run "$section.rep.hlo" --hw "$root/hwspecs/v3.yaml")
		fms=$(median_ms 1 0 $pin "$build/cli/tpusim" fuse "$section.rep.hlo" --hw "$root/hwspecs/v3.yaml" -o /dev/null)
		line="$(basename "$largest" .hlo) x$k ($n instructions): run $ms ms, fuse --policy xla $fms ms"
		if [ -n "$before" ] && [ $k -le 16 ]; then
			bms=$(median_ms 1 0 $pin "$before/cli/tpusim" run "$section.rep.hlo" --hw "$root/hwspecs/v3.yaml")
			line="$line (before: run $bms ms)"
		fi
		echo "$line"
		[ -n "$first_n" ] || { first_n=$n first_ms=$ms; }
	done
	rm -f "$section.rep.hlo"
	echo "run time ~ instructions^$(awk -v a="$first_n" -v b="$n" -v ta="$first_ms" -v tb="$ms" 'BEGIN { printf "%.2f", log(tb / ta) / log(b / a) }') from $first_n to $n instructions"
	# the analytic fusion policy on a chain of N elementwise ops (issue
	# "Nothing lost, nothing absurd": quadratic in N)
	for len in 1000 4000; do
		awk -v n=$len 'BEGIN {
			print "HloModule chain\n\nENTRY e {"
			print "  p0 = f32[1024,1024]{1,0} parameter(0)"
			prev = "p0"
			for (i = 0; i < n; i++) {
				printf "  c%d = f32[1024,1024]{1,0} add(%s, p0)\n", i, prev
				prev = "c" i
			}
			printf "  ROOT r = f32[1024,1024]{1,0} negate(%s)\n}\n", prev
		}' >"$section.chain.hlo"
		echo "tpusim fuse, a chain of $len adds: --policy xla $(both_ms 1 0 fuse "$section.chain.hlo" --hw "$root/hwspecs/v3.yaml" -o /dev/null), --policy analytic $(both_ms 1 0 fuse "$section.chain.hlo" --hw "$root/hwspecs/v3.yaml" --policy analytic -o /dev/null) wall"
	done
	rm -f "$section.chain.hlo"
	# the default tile search on 3D convolutions shaped like a 3D U-Net's
	# (issue "Speed back": a 5-d output grid and 4 filter dims, 84,672 and
	# 129,654 candidates; the U-Net step itself is not in ../shared)
	cat >"$section.conv3d.hlo" <<'HLO'
HloModule conv3d

ENTRY e {
  a = f32[2,64,64,64,32]{4,3,2,1,0} parameter(0)
  w = f32[3,3,3,32,64]{4,3,2,1,0} parameter(1)
  c = f32[2,64,64,64,64]{4,3,2,1,0} convolution(a, w), window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f
  w2 = f32[3,3,3,64,64]{4,3,2,1,0} parameter(2)
  ROOT c2 = f32[2,64,64,64,64]{4,3,2,1,0} convolution(c, w2), window={size=3x3x3 pad=1_1x1_1x1_1}, dim_labels=b012f_012io->b012f
}
HLO
	echo "tpusim run, two 3D convolutions (U-Net-shaped grids): $(both_ms 21 1 run "$section.conv3d.hlo" --hw "$root/hwspecs/v3.yaml") wall (median of 21)"
	rm -f "$section.conv3d.hlo"

	kernels=$("$build/cli/tpusim" run "$largest" --hw "$root/hwspecs/v3.yaml" | sed -n 's/^n_kernels: //p')
	sweep="--sweep hbm.bw_bytes_per_s=100e9:6400e9:+100e9 --sweep mxu.count=1:16:+1"
	for mode in --hold-tiles ""; do
		# shellcheck disable=SC2086
		ms=$(whatif_ms "$pin" $sweep $mode)
		echo "tpusim whatif $(basename "$largest") ($kernels kernels), 1024 points ${mode:-(tiles re-chosen)}: $ms ms wall, $(pps "$ms") points/s"
	done
	# fields the kernels' plans read: each point builds every plan anew
	ms=$(whatif_ms "$pin" --sweep vpu.cost.simple=0.25:8:+0.25 --sweep ici.efficiency=0.03125:1:+0.03125 --hold-tiles)
	echo "tpusim whatif, 1024 points of vpu.cost.simple x ici.efficiency (plans rebuilt per point) --hold-tiles: $ms ms wall, $(pps "$ms") points/s"
	if "$build/cli/tpusim" --version | grep -q "open-mpi: yes" && command -v mpirun >/dev/null; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
		for n in 1 2; do
			# shellcheck disable=SC2086
			ms=$(whatif_ms "mpirun --oversubscribe -n $n" $sweep)
			echo "mpirun -n $n tpusim whatif (the same 1024 points, tiles re-chosen, not pinned): $ms ms wall, $(pps "$ms") points/s"
		done
	fi
	tile="$shared/data/tpugraphs-tile-v3"
	echo "tpusim autotune replay, tpugraphs-tile-v3, 4 strategies, 20 seeds: $(median_ms 5 0 $pin "$build/cli/tpusim" autotune --data "$tile" --hw-dir "$root/hwspecs" --seeds 20) ms wall (median of 5)"
	# live: 1 measurement per kernel vs 32, the command /bin/echo; the
	# difference over the extra measurements, less echo's own exec time
	live() {
		"$build/cli/tpusim" autotune "$root/cli/examples/mlp_train_step.hlo" \
			--hw "$root/hwspecs/v3.yaml" --budget "$1" --measure-cmd "/bin/echo 1000" -f csv
	}
	n1=$(live 1 | awk -F, 'NR > 1 { s += $7 } END { print s }')
	n32=$(live 32 | awk -F, 'NR > 1 { s += $7 } END { print s }')
	m1=$(median_ms 5 1 $pin sh -c "\"$build/cli/tpusim\" autotune \"$root/cli/examples/mlp_train_step.hlo\" --hw \"$root/hwspecs/v3.yaml\" --budget 1 --measure-cmd '/bin/echo 1000'")
	m32=$(median_ms 5 1 $pin sh -c "\"$build/cli/tpusim\" autotune \"$root/cli/examples/mlp_train_step.hlo\" --hw \"$root/hwspecs/v3.yaml\" --budget 32 --measure-cmd '/bin/echo 1000'")
	e=$(median_ms 5 1 $pin sh -c "i=0; while [ \$i -lt $((n32 - n1)) ]; do /bin/echo 1000 >/dev/null; i=\$((i + 1)); done")
	echo "tpusim autotune live, example ($n1 -> $n32 measurements, /bin/echo as the command): $(awk -v a="$m1" -v b="$m32" -v e="$e" -v n="$((n32 - n1))" 'BEGIN { printf "%.2f", (b - a - e) / n }') ms overhead per measurement"
	set --
	for d in "$shared"/data/*/; do
		[ -f "$d/measurements.csv" ] && set -- "$@" --data "${d%/}"
	done
	t0=$(date +%s%N)
	"$build/cli/tpusim" train "$@" --hw-dir "$root/hwspecs" -o "$section.gnn" 2>/dev/null
	t1=$(date +%s%N)
	rm -f "$section.gnn"
	echo "tpusim train (the default model, every shared set, 2 cores): $(( (t1 - t0) / 1000000 )) ms wall"
	echo '```'
} >"$section"
sh "$root/scripts/doc_section.sh" docs/BENCH.md bench <"$section"
