#!/usr/bin/env bash
# The Graphviz timeline: `shardsim run --dot` gives DOT that neato -n2
# renders with no warning, and `--svg` writes an SVG; a window and a rank
# range give a smaller drawing; an empty window is a usage error. Identical
# ranks share one block and a rank that differs (a straggler) has its own;
# time axes above and below; op labels fit their boxes by the estimate of
# sim/out/label.h (0.6 em a character at 7 pt, 2 pt margins); diff --svg
# draws both panels on one memory scale; outputs are byte-identical.
. "$(dirname "$0")/lib.sh" "$@"
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/a.dot" --svg "$d/a.svg"
check "run --dot --svg exits 0" '[ $? -eq 0 ]'
neato -n2 -Tsvg "$d/a.dot" -o "$d/b.svg" 2>"$d/err"
check "neato renders without warnings" '[ $? -eq 0 ] && [ ! -s "$d/err" ]'
check "the SVG is an SVG" 'grep -q "<svg" "$d/a.svg"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/w.dot" --window 2..6 --ranks 0..0
check "a window draws less" '[ "$(wc -c <"$d/w.dot")" -lt "$(wc -c <"$d/a.dot")" ]'
check "a rank range drops other ranks" 'grep -q "rank 0 compute" "$d/w.dot" && ! grep -q "rank 1 compute" "$d/w.dot"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/e.dot" --window 5..5 2>/dev/null
check "an empty window exits 2" '[ $? -eq 2 ]'
"$bin" diff scenarios/seed002/zero2_fsdp_sgo.json scenarios/seed002/zero0_ddp.json --svg "$d/d.svg" --ranks 0..0 >/dev/null
check "diff --svg exits 0" '[ $? -eq 0 ]'
check "diff --svg nests two drawings" '[ "$(grep -c "<svg" "$d/d.svg")" -eq 3 ]'
# a layout folded along tp (ranks 0 and 2 of tp 2 x pp 2 simulated): --ranks counts world ranks on each side
t=scenarios/examples/tiny-gpt-megatron-tp2-pp2-overlap.json
"$bin" diff "$t" "$t" --svg "$d/t.svg" --ranks 0..3 >/dev/null
check "diff --ranks 0..3 of a tp-folded layout draws world ranks 0 and 2" 'grep -q "rank 2 compute" "$d/t.svg" && ! grep -q "rank 1 compute" "$d/t.svg"'
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
# Groups. The 32 ranks of FULL_SHARD on 4 x 8 H100 run the same ops at the
# same ns: one block. seed002's rank 2 made a straggler (its compute x1.5)
# differs from the other three, which still agree with each other.
"$bin" run scenarios/multinode/llama3-8b-full-shard-4x8xh100.json --quiet --dot "$d/g.dot" --svg "$d/g.svg"
check "32 identical ranks are one block" '[ "$(grep -c "^  group_" "$d/g.dot")" -eq 1 ] && grep -q "^  group_0 .*label=\"ranks 0-31 (32 identical)" "$d/g.dot"'
check "one block draws one rank's ops" 'grep -q "^  op_0_" "$d/g.dot" && ! grep -q "^  op_1_" "$d/g.dot"'
"$bin" run scenarios/seed002/zero3_full_shard_pre.json --quiet --dot "$d/s.dot" --set 'runtime.stragglers=[{"rank": 2, "factor": 1.5}]'
check "a straggler has its own block" 'grep -q "^  group_0 .*label=\"ranks 0-1,3 (3 identical)" "$d/s.dot" && grep -q "^  group_1 .*label=\"rank 2\\\\l\"" "$d/s.dot" && grep -q "^  op_2_" "$d/s.dot"'
"$bin" run scenarios/multinode/llama3-8b-full-shard-4x8xh100.json --quiet --dot "$d/r.dot" --ranks 0..3
check "--ranks draws every rank asked for, without groups" '! grep -q "^  group_" "$d/r.dot" && for k in 0 1 2 3; do grep -q "^  op_${k}_" "$d/r.dot" || exit 1; done; ! grep -q "^  op_4_" "$d/r.dot"'
check "time axes at the top and the bottom" 'grep -q "<title>axis_top</title>" "$d/g.svg" && grep -q "<title>axis_bottom</title>" "$d/g.svg"'
# Every op label (the nodes at fontsize=7) against its box: characters x
# 0.6 x 7 pt + 4 pt <= width x 72; the ellipsis counts as one character.
fit() { sed 's/\xe2\x80\xa6/./g' "$1" | awk -F'label="' '/fontsize=7, fontcolor/ { split($2, l, "\""); w = $0; sub(/.*width=/, "", w); n++;
  if (length(l[1]) * 4.2 + 4 > w * 72 + 1e-6) { print "too wide: " l[1] " in " w * 72 " pt"; bad++ } }
  END { print n " labels"; exit (bad > 0 || n == 0) }'; }
check "op labels fit their boxes (32 ranks)" 'fit "$d/g.dot" >"$d/fit" || { cat "$d/fit"; false; }'
check "op labels fit their boxes (seed002, a straggler)" 'fit "$d/s.dot" >"$d/fit" || { cat "$d/fit"; false; }'
# One memory scale: both panels' axes name the larger of the two rank-0
# peaks (DDP's 822607872 bytes, from its summary's per_rank peak).
"$bin" diff scenarios/seed002/zero2_fsdp_sgo.json scenarios/seed002/zero0_ddp.json --svg "$d/m.svg" >/dev/null
grep -o "memory scale: 0 to [0-9.]* GiB ([0-9]* bytes)" "$d/m.svg" >"$d/scales"
"$bin" run scenarios/seed002/zero0_ddp.json --quiet --json "$d/ddp.json"
peak=$(grep -m1 '"peak_allocated_bytes"' "$d/ddp.json" | tr -dc 0-9)
check "diff panels share one memory scale, the larger peak" '[ "$(wc -l <"$d/scales")" -eq 2 ] && [ "$(sort -u "$d/scales" | wc -l)" -eq 1 ] && grep -q "($peak bytes)" "$d/scales"'
"$bin" run scenarios/multinode/llama3-8b-full-shard-4x8xh100.json --quiet --dot "$d/g2.dot"
"$bin" diff scenarios/seed002/zero2_fsdp_sgo.json scenarios/seed002/zero0_ddp.json --svg "$d/m2.svg" >/dev/null
check "same input, same bytes (DOT, diff SVG)" 'cmp -s "$d/g.dot" "$d/g2.dot" && cmp -s "$d/m.svg" "$d/m2.svg"'
echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
