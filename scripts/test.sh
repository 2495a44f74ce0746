#!/bin/sh
# test.sh: set-up command 2 of 2. Installs dependencies, builds tpusim twice and
# runs the test suite:
#   build/       release build, every test (quick, data, cli labels);
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer build, the tests
#                labelled `asan` (parser, spec loader, mutated-input tests).
# Tests that read ../shared/data skip, saying so, when it is absent.
set -e
cd "$(dirname "$0")/.."
. scripts/deps.sh
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DUNIT_TESTING=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=AddressSanitizer -DUNIT_TESTING=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
status=0
ctest --test-dir build --output-on-failure -j"$jobs" || status=1
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan --output-on-failure -j"$jobs" -L asan || status=1
exit $status
