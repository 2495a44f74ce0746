#!/bin/sh
# test.sh: set-up command 2 of 2. Installs dependencies, builds tpusim three
# ways and runs the test suite:
#   build/       release build, every test;
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer build, every test
#                again (parser, spec loader, mutated inputs, CLI, data sets)
#                but test_frontdoor's JAX cases (the same Python again);
#   build-fuzz/  clang + libFuzzer build, the `fuzz` tests: a bounded, seeded
#                fuzz run of the HLO parser, the spec loader, the pipeline
#                after the parser, the model file reader, the live
#                autotuner's record and measuring command, and a step set's
#                device order.
# Tests that read ../shared/data skip, saying so, when it is absent; the
# JAX front door's (test_frontdoor) when its environment cannot be made
# (scripts/frontdoor.sh --setup: pinned packages from Python's index).
set -e
cd "$(dirname "$0")/.."
. scripts/deps.sh
sh scripts/frontdoor.sh --setup ||
	echo "JAX front door not set up: test_frontdoor's JAX cases skip"
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DUNIT_TESTING=ON >/dev/null
cmake --build build -j"$jobs" >/dev/null
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=AddressSanitizer -DUNIT_TESTING=ON >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNIT_TESTING=ON \
	-DTPUSIM_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target fuzz_hlo_parse fuzz_hw_spec fuzz_pipeline \
	fuzz_gnn_file fuzz_record fuzz_devices >/dev/null
status=0
ctest --test-dir build --output-on-failure -j"$jobs" || status=1
# A sanitizer report exits with its own code (ASan 87, UBSan 86), never
# with tpusim's 1 for bad input, so a test that expects an exit code
# cannot take a crash for a clean error.
# tests/lsan.supp names the only leaks allowed: third-party ones behind
# PLplot's cairo driver.
ASAN_OPTIONS=detect_leaks=1:exitcode=87 \
LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp":print_suppressions=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86 \
	ctest --test-dir build-asan --output-on-failure -j"$jobs" || status=1
ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz || status=1

# Totals over the three runs, from CTest's logs: a test executable that
# skipped any of its cases (cmocka "[  SKIPPED ]": ../shared/data absent)
# counts as skipped, not passed; one whose executable was not built (CTest
# logs "Unable to find executable" and then, oddly, "Test Passed.") counts
# as failed.
awk -v shared="$([ -d ../shared/data ] && echo yes || echo no)" '
	FNR == 1 { split("", missing) } # each build on its own
	/^Unable to find executable: / { k = split($5, a, "/"); missing[a[k]] = 1 }
	/^[0-9]+\/[0-9]+ Testing: / { skip = 0; name = $3 }
	/\[  SKIPPED \]/ { skip = 1 }
	/^Test Passed\.|^Test Pass Reason:/ {
		if (name in missing) { f++; next }
		if (!skip) p++
		else if (!seen[name]++) { s++; names = names " " name } else s++
	}
	/^Test Failed|^Test Fail Reason:/ { f++ }
	END {
		if (s) printf "skipped (cases that need ../shared/data, Open MPI or the JAX front door%s):%s\n",
			shared == "no" ? ", which is absent" : "", names
		printf "tests: %d passed, %d failed, %d skipped\n", p, f, s
	}' build/Testing/Temporary/LastTest.log build-asan/Testing/Temporary/LastTest.log \
	build-fuzz/Testing/Temporary/LastTest.log
exit $status
