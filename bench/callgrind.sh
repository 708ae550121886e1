#!/usr/bin/env bash
# Instructions per engine event: callgrind counts the instructions of
# eng_run_stats (setup, event loop, trace) on the synthetic program of
# shardsim-bench, at three rank counts, and divides by the events it ran.
# Usage: bench/callgrind.sh [BUILD_DIR]   (valgrind and callgrind_annotate needed)
set -euo pipefail
bin=${1:-build}/shardsim-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-28s %12s %14s %10s\n' "synthetic program" events instructions "per event"
for c in "8 20000" "1024 200" "16384 16"; do
    set -- $c
    valgrind --tool=callgrind --toggle-collect=eng_run_stats --callgrind-out-file="$out/cg" \
        "$bin" --engine "$1" "$2" > "$out/run" 2> "$out/vg"
    ev=$(awk '/^events/ {print $2}' "$out/run")
    ir=$(callgrind_annotate "$out/cg" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    awk -v r="$1" -v o="$2" -v e="$ev" -v i="$ir" 'BEGIN { printf "%6s ranks x %6s ops       %12s %14s %10.1f\n", r, o, e, i, i / e }'
done
