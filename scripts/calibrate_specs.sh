#!/bin/sh
# calibrate_specs.sh: refits every spec figure that no datasheet gives, from
# the measurement sets in ../shared/data (or $TPUSIM_SHARED/data), with
# `tpusim calibrate -o`, which writes each value into hwspecs/ together with
# the command that fits it and its in-sample and cross-validated error.
# The fits lean on each other a little (GELU's transcendental cost and the
# host term share the GELU rows; the v4 element costs and kernel_ns share
# the elementwise kernels, program_ns and hbm.efficiency the norms), so the
# list runs twice: a first pass without
# cross-validation settles the values, the second, with it, writes the
# comments. About 10 minutes on one core. Regenerate docs/ACCURACY.md's accuracy
# section afterwards (scripts/accuracy_report.sh).
#   usage: scripts/calibrate_specs.sh [BUILD_DIR]     (default: build)
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shared=${TPUSIM_SHARED:-$root/../shared}
[ -d "$shared/data" ] || {
	echo "calibrate_specs.sh: $shared/data not found" >&2
	exit 1
}
if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target tpusim -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
cd "$root"
bin=$build/cli/tpusim
data=${TPUSIM_SHARED:+$TPUSIM_SHARED/data} # as written into the comments
data=${data:-../shared/data}

# fit SPEC FOLDS ARGS...: one calibration, written back into SPEC. In the
# first pass FOLDS is replaced by none.
fit() {
	spec=$1 folds=$2
	shift 2
	[ "$pass" = 1 ] && folds=none
	echo "== $spec: $*" >&2
	"$bin" calibrate --hw "$spec" "$@" --folds "$folds" -o "$spec" |
		sed -n '/^field/,/^$/p' >&2
}

for pass in 1 2; do
	# TPU v3, tile model: the 15 TpuGraphs kernels (leave one kernel out).
	fit hwspecs/v3.yaml group --data $data/tpugraphs-tile-v3 \
		--fit mxu.pass_cycles,hbm.efficiency,hbm.dma_latency_ns,hbm.dma_chunk_ns,overhead.kernel_ns,overhead.step_ns,overhead.row_cycles
	# v3 random-number cost: the one kernel that draws them.
	fit hwspecs/v3.yaml none --data $data/tpugraphs-tile-v3 \
		--fit vpu.cost.rng --rows 'fusion.181#*'
	# v3 transcendental cost: the GELU sweep (tanh), one shape left out at a time.
	fit hwspecs/v3.yaml shape --data $data/tpuv3-ops \
		--fit vpu.cost.transcendental --rows 'gelu_*'

	# TPU v4, f16 conversions: relu (1 load, 1 store) and add (2, 1); each
	# family is predicted by the fit on the other.
	fit hwspecs/v4.yaml group --data $data/tpuv4-ops \
		--fit vpu.f16_load_cost,vpu.f16_store_cost --rows 'relu_*' --rows 'add_*'
	fit hwspecs/v4.yaml shape --data $data/tpuv4-ops \
		--fit vpu.cost.divide --rows 'div_*'
	fit hwspecs/v4.yaml shape --data $data/tpuv4-ops \
		--fit vpu.cost.transcendental --rows 'tanh_*'
	# v4 program start (the fixed cost per kernel is v3's, fitted on
	# kernels inside a step): every elementwise and activation family (one
	# kernel a program) and the layer and rms norms (three to six).
	fit hwspecs/v4.yaml group --data $data/tpuv4-ops --fit overhead.program_ns \
		--rows 'add_*' --rows 'sub_*' --rows 'mul_*' --rows 'div_*' \
		--rows 'binary_*' --rows 'elu_*' --rows 'leaky_*' --rows 'linear_*' \
		--rows 'parametric_*' --rows 'relu_*' --rows 'selu_*' \
		--rows 'sigmoid_*' --rows 'tanh_*' --rows 'layer_*' --rows 'rms_*'
	# v4 sustained HBM rate: the normalisation kernels (HBM-bound).
	fit hwspecs/v4.yaml group --data $data/tpuv4-ops --fit hbm.efficiency \
		--rows 'layer_*' --rows 'rms_*' --rows 'batch_*'
	# v4 pooling permutes and the relayout copies after 242 of the pooling
	# kernels: max and average pooling, each predicted by the fit on the
	# other.
	fit hwspecs/v4.yaml group --data $data/tpuv4-ops \
		--fit vpu.xlu_lane_permute_cost,vpu.xlu_transpose_cost \
		--rows 'maxpool_*' --rows 'avgpool_*'

	# v3 is the base spec and cannot inherit from v4: its f16 conversions
	# (no v3 data has f16) and its relayout's XLU cost (no v3 data has a
	# relayout) are v4's slots, the same VALU and XLU sequences, and its
	# divide takes v4's cycles (slots / ALUs) at v3's ALU count. v6e and v7
	# scale v3's MXU pass bubble to their 256-row arrays.
	# tests/test_hw_spec.c (test_derived_copies) holds them together.
	python3 - hwspecs/v3.yaml hwspecs/v4.yaml <<'EOF'
import re, sys
v3, v4 = (open(p).read() for p in sys.argv[1:])
def get(t, key):
    return float(re.search(r'(?m)^ +%s: +(\S+)' % key, t).group(1))
div = get(v4, 'divide') / get(v4, 'alus') * get(v3, 'alus')
for key, val in (('f16_load_cost', get(v4, 'f16_load_cost')),
                 ('f16_store_cost', get(v4, 'f16_store_cost')),
                 ('xlu_transpose_cost', get(v4, 'xlu_transpose_cost')),
                 ('divide', round(div, 4))):
    v3 = re.sub(r'(?m)^( +%s: +)\S+' % key,
                lambda m: m.group(1) + '%g' % val, v3, count=1)
open(sys.argv[1], 'w').write(v3)
# 256-row arrays: v3's pass bubble scaled by the rows (weight shift-in).
for p in ('hwspecs/v6e.yaml', 'hwspecs/v7.yaml'):
    t = open(p).read()
    val = get(v3, 'pass_cycles') * get(t, 'rows') / get(v3, 'rows')
    t = re.sub(r'(?m)^( +pass_cycles: +)\S+',
               lambda m: m.group(1) + '%g' % round(val, 4), t, count=1)
    open(p, 'w').write(t)
EOF
	# v3 host term: every host-timed row (leave one op family out).
	fit hwspecs/v3.yaml group --data $data/tpuv3-ops --data $data/tpuv3-allreduce \
		--fit host.call_ns,host.kernel_ns,host.device_ns
	# v3 ICI: the all-reduce sweep on a v3-8 (leave one size out).
	fit hwspecs/v3.yaml shape --data $data/tpuv3-allreduce --fit ici.efficiency
done
