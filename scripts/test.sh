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
# MPI is left out of the sanitizer build: OpenMPI's own allocations would
# drown LeakSanitizer's report.
cmake -S . -B build-asan -DSS_WERROR=ON -DSS_SANITIZE=ON -DSS_NO_MPI=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"
