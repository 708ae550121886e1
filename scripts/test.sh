#!/usr/bin/env bash
# The whole test suite: a warnings-as-errors build with every test, then the
# same tests under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
cmake -S . -B build-test -DSS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs"
# valgrind memcheck: every test program, and the CLI on the bad-input corpus,
# side by side (each is one process at a time; the machine has two cores).
# The tests named *_heavy (full-size 5T and 70B runs; every allocation
# failure of the full-size runtimes: minutes each under valgrind) are left
# to the plain pass above and the sanitizer pass below.
if command -v valgrind >/dev/null; then
  vg="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect"
  (
    for t in build-test/tests/test_*; do
      SS_SKIP_TESTS='*_heavy' $vg "$t" >/dev/null 2>build-test/valgrind.log || { echo "valgrind: $t"; cat build-test/valgrind.log; exit 1; }
    done
  ) &
  programs=$!
  corpus=0
  SS_WRAP="$vg" tests/bad-inputs/run.sh build-test/shardsim . || corpus=1
  wait "$programs" || exit 1
  [ "$corpus" -eq 0 ] || exit 1
  echo "valgrind: clean"
fi
# MPI is left out of the sanitizer build: OpenMPI's own allocations would
# drown LeakSanitizer's report.
cmake -S . -B build-asan -DSS_WERROR=ON -DSS_SANITIZE=ON -DSS_NO_MPI=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs"
# The production-size published rows (up to 16k GPUs) take minutes each
# under the sanitizers; the plain pass above compared them, so this one
# runs every other scenario (SS_SKIP_PUBLISHED, tests/e2e/scenarios.sh).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 SS_SKIP_PUBLISHED=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"
