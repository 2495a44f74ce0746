#!/bin/sh
# common.sh: the preamble of the report scripts (accuracy_report.sh,
# train_default.sh, fusion_report.sh), sourced after `set -eu` with the
# script's name in $me and its arguments in "$@":
#   root   the checkout;   build  ${1:-$root/build};
#   shared ../shared beside the checkout, or $TPUSIM_SHARED; it must hold data/;
#   bin    tpusim, built (Release) when needed;
#   die    prints "$me: message" and exits 1.
# LC_ALL=C: globs and sort orders (which fix sample order, hence model
# bits) do not depend on the caller's locale.
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shared=${TPUSIM_SHARED:-$root/../shared}
die() {
	echo "$me: $*" >&2
	exit 1
}
[ -d "$shared/data" ] ||
	die "$shared/data not found (put ../shared beside the checkout or set TPUSIM_SHARED)"
if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target tpusim -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
bin=$build/cli/tpusim
[ -x "$bin" ] || die "$bin was not built"
