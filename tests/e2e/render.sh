#!/usr/bin/env bash
# The Graphviz timeline: `shardsim run --dot` gives DOT that neato -n2
# renders with no warning, and `--svg` writes an SVG; a window and a rank
# range give a smaller drawing; an empty window is a usage error.
. "$(dirname "$0")/lib.sh" "$@"
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/a.dot" --svg "$d/a.svg"
check "run --dot --svg exits 0" '[ $? -eq 0 ]'
neato -n2 -Tsvg "$d/a.dot" -o "$d/b.svg" 2>"$d/err"
check "neato renders without warnings" '[ $? -eq 0 ] && [ ! -s "$d/err" ]'
check "the SVG is an SVG" 'grep -q "<svg" "$d/a.svg"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/w.dot" --window 2..6 --ranks 0..0
check "a window draws less" '[ "$(wc -c <"$d/w.dot")" -lt "$(wc -c <"$d/a.dot")" ]'
check "a rank range drops other ranks" '! grep -q "rank 1 compute" "$d/w.dot"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/e.dot" --window 5..5 2>/dev/null
check "an empty window exits 2" '[ $? -eq 2 ]'
"$bin" diff scenarios/seed002/zero2_fsdp_sgo.json scenarios/seed002/zero0_ddp.json --svg "$d/d.svg" --ranks 0..0 >/dev/null
check "diff --svg exits 0" '[ $? -eq 0 ]'
check "diff --svg nests two drawings" '[ "$(grep -c "<svg" "$d/d.svg")" -eq 3 ]'
"$bin" run scenarios/seed002/zero0_ddp.json --quiet --json "$d/s.json"
"$bin" diff "$d/s.json" scenarios/seed002/zero0_ddp.json --svg "$d/e.svg" >/dev/null 2>&1
check "diff --svg of a summary is an input error" '[ $? -eq 2 ] && [ ! -e "$d/e.svg" ]'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/n.dot" --window fwd.layers.3..fwd.layers.6
check "a window by op names draws those ops" 'grep -q "fwd.layers.4" "$d/n.dot" && ! grep -q "bwd.layers.2" "$d/n.dot"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/m.dot" --window fwd.nope..x 2>/dev/null
check "a window naming no op exits 2" '[ $? -eq 2 ]'
echo '{"shardsim_version": "0.1.0"}' >"$d/fake.json"
"$bin" diff "$d/fake.json" "$d/fake.json" >/dev/null 2>"$d/err"
check "diff of files that are not summaries is an input error" '[ $? -eq 2 ] && grep -q "fake.json: \$.scenario: missing" "$d/err"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --trace "$d/r.json" --ranks 1..2
check "--ranks keeps the trace to those ranks" 'grep -q "\"pid\":1," "$d/r.json" && grep -q "\"pid\":2," "$d/r.json" && ! grep -q "\"pid\":[03]," "$d/r.json"'
echo "$((13 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
