#!/usr/bin/env bash
# Output files from the command line (core/ofile.h, docs/ROBUSTNESS.md):
# all or nothing across one run's outputs (a failed --trace leaves no
# --json, and no temporary file anywhere); pipes and descriptor links are
# written in place and get the same bytes as a file; what a path names
# (a FIFO, a link) survives. Device nodes are covered by unit.ofile.
. "$(dirname "$0")/lib.sh" "$@"
sc=scenarios/seed002/zero3_full_shard_pre.json
"$bin" run $sc --quiet --json "$d/ref.json" --trace "$d/ref.trace"
check "the reference run writes its outputs" '[ -s "$d/ref.json" ] && [ -s "$d/ref.trace" ]'

mkdir "$d/out"
"$bin" run $sc --quiet --json "$d/out/a.json" --trace /dev/full 2>"$d/err"
rc=$?
check "a trace to a full device fails with exit 2" '[ $rc -eq 2 ] && grep -q "No space left" "$d/err"'
check "... and leaves no summary and no temporary file" '[ -z "$(ls -A "$d/out")" ]'

mkdir "$d/out/dir"
"$bin" run $sc --quiet --json "$d/out/a.json" --dot "$d/out/a.dot" --trace "$d/out/dir" 2>"$d/err"
check "a trace path that is a folder is refused by name" 'grep -q "out/dir: cannot write: it is a directory" "$d/err"'
check "... before anything is written" '[ "$(ls -A "$d/out")" = dir ]'

echo old >"$d/out/a.json"
"$bin" run $sc --quiet --json "$d/out/a.json" --svg "$d/out/dir" 2>/dev/null
check "a failed run keeps the old summary" '[ "$(cat "$d/out/a.json")" = old ] && [ "$(ls -A "$d/out" | wc -l)" -eq 2 ]'

"$bin" run $sc --quiet --json /dev/stdout | cat >"$d/piped.json"
check "--json /dev/stdout into a pipe gives the file's bytes" 'cmp -s "$d/piped.json" "$d/ref.json"'
"$bin" run $sc --quiet --json - >"$d/dash.json"
check "--json - gives the file's bytes" 'cmp -s "$d/dash.json" "$d/ref.json"'

mkfifo "$d/fifo"
cat "$d/fifo" >"$d/fromfifo.trace" &
"$bin" run $sc --quiet --trace "$d/fifo"
wait
check "--trace to a FIFO streams the trace through it" 'cmp -s "$d/fromfifo.trace" "$d/ref.trace"'
check "... and the FIFO is still a FIFO" '[ -p "$d/fifo" ]'

# --max-memory: a run past the budget ends with "out of memory" and the
# budget, writes nothing, and does not crash (exit 1, not a signal); the
# same run fits when folded. A sanitizer build cannot cap its address space
# and says so (exit 2): then the case is skipped.
big=scenarios/moe-5t/accel-4096-cp16-pp16-ep64.json
"$bin" run $big --set parallel.fold=false --quiet --max-memory 256M --json "$d/out/big.json" 2>"$d/err"
rc=$?
if grep -q "sanitizer build" "$d/err"; then
  echo "skipped: --max-memory in a sanitizer build"
else
  check "a run past --max-memory exits 1 naming the budget" '[ $rc -eq 1 ] && grep -q "needed more than --max-memory 256 MiB" "$d/err"'
  check "... and writes no summary" '[ ! -e "$d/out/big.json" ]'
  "$bin" run $big --quiet --max-memory 256M --json "$d/out/big.json" 2>/dev/null
  check "the folded run fits the same budget" '[ $? -eq 0 ] && [ -s "$d/out/big.json" ]'
fi

# sweep -o and --svg are one run's outputs too: either failing leaves
# neither; both written when both can be.
mkdir -p "$d/sw"
"$bin" sweep $sc --vary parallel.dp=2,4 -o "$d/sw/a.csv" --svg /dev/full 2>"$d/err"
rc=$?
check "sweep --svg to a full device fails with exit 2 and leaves no CSV" '[ $rc -eq 2 ] && [ -z "$(ls -A "$d/sw")" ]'
"$bin" sweep $sc --vary parallel.dp=2,4 -o /dev/full --svg "$d/sw/a.svg" 2>"$d/err"
rc=$?
check "sweep -o to a full device fails with exit 2 and leaves no SVG" '[ $rc -eq 2 ] && [ -z "$(ls -A "$d/sw")" ]'
"$bin" sweep $sc --vary parallel.dp=2,4 -o "$d/sw/a.csv" --svg "$d/sw/a.svg" 2>/dev/null
check "sweep -o and --svg both written" '[ $? -eq 0 ] && [ "$(wc -l <"$d/sw/a.csv")" -eq 3 ] && grep -q "<g id=\"point_1\">" "$d/sw/a.svg"'
echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
