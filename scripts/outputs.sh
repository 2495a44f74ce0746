#!/bin/sh
# outputs.sh [BUILD] OUT: writes what tpusim prints for the shipped example and
# the shared data into folder OUT, one file per command, so that a refactor or a
# speed change can be checked byte for byte against the build before it:
#   sh scripts/outputs.sh build-before /tmp/before
#   sh scripts/outputs.sh build /tmp/after && diff -r /tmp/before /tmp/after
# Covered: run (every format, --summary, --explain, --trace, several --hw,
# --model, --fusion analytic/hybrid) on the example and every corpus and
# hlo-programs module on v3, v4 and v5p; tile; fuse (xla, analytic; --report)
# on the corpus; validate on every measured set (analytic and --model); whatif
# sweeps (held and re-chosen tiles); calibrate; compare is left out (it trains
# five models: train_default.sh checks the model bits). Timings are not
# written, only outputs; standard error is kept beside standard output with
# the exit code, since warnings are outputs too.
set -eu
me=outputs.sh
[ $# -ge 1 ] || { echo "usage: $me [BUILD] OUT" >&2; exit 2; }
if [ $# -ge 2 ]; then build_arg=$1; out=$2; else build_arg=""; out=$1; fi
set -- $build_arg
. "$(dirname "$0")/common.sh"
shared=$(cd "$shared" && pwd -P)
data=$shared/data
bin=$(cd "$(dirname "$bin")" && pwd)/tpusim
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"

# one NAME CMD...: standard output to NAME.out, standard error and exit code
# to NAME.err; paths of the data folder and the checkout written as $SHARED
# and $ROOT, so that two checkouts' outputs compare.
one() {
	name=$1
	shift
	rc=0
	"$@" >"$out/$name.out" 2>"$out/$name.err" || rc=$?
	echo "exit $rc" >>"$out/$name.err"
	sed -i "s#$shared#\$SHARED#g; s#$root#\$ROOT#g" "$out/$name.out" "$out/$name.err"
}

ex=cli/examples/mlp_train_step.hlo
one ex_table "$bin" run $ex --hw hwspecs/v3.yaml
for f in json csv yaml; do one ex_$f "$bin" run $ex --hw hwspecs/v3.yaml --format $f; done
one ex_summary "$bin" run $ex --hw hwspecs/v3.yaml --summary
one ex_gens "$bin" run $ex --gen v3,v4,v5e,v6e --hw-dir hwspecs
one ex_model "$bin" run $ex --hw hwspecs/v3.yaml --model default --format json
one ex_trace "$bin" run $ex --hw hwspecs/v4.yaml --trace "$out/ex_trace.json"
for k in $("$bin" run $ex --hw hwspecs/v3.yaml --format csv | awk -F, 'NR > 1 { print $3 }'); do
	one "ex_explain_$k" "$bin" run $ex --hw hwspecs/v3.yaml --explain "$k"
done
one ex_tile "$bin" tile $ex --hw hwspecs/v3.yaml --top 5
one ex_tile_model "$bin" tile $ex --hw hwspecs/v3.yaml --top 5 --model default
one ex_whatif "$bin" whatif $ex --hw hwspecs/v4.yaml --sweep hbm.bw_bytes_per_s=600e9:4800e9:x2 \
	--sweep mxu.count=1,2,4,8 --csv "$out/ex_whatif.csv"
one ex_whatif_vpu "$bin" whatif $ex --hw hwspecs/v3.yaml --sweep vpu.cost.simple=1:4:+1 --hold-tiles

for m in "$data"/hlo-corpus/*.hlo "$data"/hlo-programs/*.hlo; do
	b=$(basename "$m" .hlo)
	for g in v3 v4 v5p; do
		one "run_${b}_$g" "$bin" run "$m" --hw hwspecs/$g.yaml --format json
	done
	one "summary_$b" "$bin" run "$m" --hw hwspecs/v3.yaml --summary
done
for m in "$data"/hlo-corpus/*.hlo; do
	b=$(basename "$m" .hlo)
	one "model_$b" "$bin" run "$m" --hw hwspecs/v3.yaml --model default --format csv
	one "tile_$b" "$bin" tile "$m" --hw hwspecs/v3.yaml --top 3
	one "fuse_xla_$b" "$bin" fuse "$m" --hw hwspecs/v3.yaml
	one "fuse_an_$b" "$bin" fuse "$m" --hw hwspecs/v3.yaml --policy analytic \
		--report "$out/fuse_an_$b.report.json"
	one "fuse_hy_$b" "$bin" run "$m" --hw hwspecs/v3.yaml --fusion hybrid --model default --format csv
done
one whatif_llama "$bin" whatif "$data/hlo-corpus/ptxla_llama2_tp8_pp4.hlo" --hw hwspecs/v3.yaml \
	--sweep hbm.bw_bytes_per_s=450e9:3600e9:x2 --sweep mxu.count=1,2 --csv "$out/whatif_llama.csv"

for s in tpugraphs-tile-v3 tpuv3-ops tpuv4-ops tpuv3-allreduce; do
	one "validate_$s" "$bin" validate --data "$data/$s" --hw-dir hwspecs --csv "$out/validate_$s.csv"
	one "validate_model_$s" "$bin" validate --data "$data/$s" --hw-dir hwspecs --model default \
		--csv "$out/validate_model_$s.csv"
done
one calibrate "$bin" calibrate --hw hwspecs/v3.yaml --data "$data/tpuv3-ops" \
	--data "$data/tpuv3-allreduce" --fit host.call_ns,host.kernel_ns,host.device_ns
sed -i "s#$shared#\$SHARED#g; s#$root#\$ROOT#g" "$out"/*.csv "$out"/*.json
echo "$me: $(ls "$out" | wc -l) files in $out"
