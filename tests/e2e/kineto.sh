#!/usr/bin/env bash
# run --kineto DIR: one profiler trace per rank (rank_<N>.json), --ranks
# honoured, the folder made when missing; a failed run leaves neither the
# files nor the folder it made, nor its other outputs. The contents are
# checked by test_kineto.
. "$(dirname "$0")/lib.sh" "$@"
s=scenarios/seed002/zero3_full_shard_pre.json   # 4 ranks
"$bin" run "$s" --quiet --kineto "$d/k" >/dev/null 2>"$d/err"
check "writes" '[ $? -eq 0 ]'
check "one file per rank" '[ "$(ls "$d/k" | tr "\n" " ")" = "rank_0.json rank_1.json rank_2.json rank_3.json " ]'
check "rank 2 says so" 'grep -q "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":2,\"world_size\":4}" "$d/k/rank_2.json"'
check "no temporary file" '[ "$(ls -a "$d/k" | grep -c tmp)" -eq 0 ]'
"$bin" run "$s" --quiet --kineto "$d/r" --ranks 1..2 >/dev/null 2>&1
check "--ranks 1..2" '[ "$(ls "$d/r" | tr "\n" " ")" = "rank_1.json rank_2.json " ]'
# A layout folded along tp (tiny GPT, tp 2 x pp 2 x dp 2: ranks 0 and 2
# simulated): files and --ranks name world ranks; a range of folded-away
# ranks only is refused, saying why and what to do.
t=scenarios/examples/tiny-gpt-megatron-tp2-pp2-overlap.json
"$bin" run "$t" --quiet --kineto "$d/t" >/dev/null 2>&1
check "tp folded: files of world ranks 0 and 2" '[ "$(ls "$d/t" | tr "\n" " ")" = "rank_0.json rank_2.json " ]'
check "a folded TP group reports its communicator's size, 2, not the one rank simulated" 'grep -q "\"Group size\":2" "$d/t/rank_0.json" && ! grep -q "\"Group size\":1" "$d/t/rank_0.json"'
"$bin" run "$t" --quiet --kineto "$d/t2" --ranks 1..3 >/dev/null 2>&1
check "--ranks 1..3 keeps world rank 2" '[ "$(ls "$d/t2" | tr "\n" " ")" = "rank_2.json " ]'
"$bin" run "$t" --quiet --kineto "$d/t3" --ranks 1..1 >/dev/null 2>"$d/err"
check "--ranks 1..1: exit 2" '[ $? -eq 2 ]'
check "the message says the step is folded and how to see rank 1" 'grep -q "folded to one rank in every 2 (ranks 0, 2, 4" "$d/err" && grep -q "parallel.fold=false" "$d/err"'
"$bin" run "$t" --quiet --kineto "$d/t4" --ranks 1..1 --set parallel.fold=false >/dev/null 2>&1
check "every rank: rank 1 is there" '[ "$(ls "$d/t4" | tr "\n" " ")" = "rank_1.json " ]'
: >"$d/file"
"$bin" run "$s" --quiet --json "$d/a.json" --kineto "$d/file" >/dev/null 2>"$d/err"
check "a file is not a folder: exit 2" '[ $? -eq 2 ]'
check "the message names it" 'grep -qF "$d/file: is not a folder" "$d/err"'
check "nothing else written" '[ ! -e "$d/a.json" ]'
"$bin" run "$s" --quiet --kineto "$d/k2" --trace "$d/no/such/t.json" >/dev/null 2>&1
check "another output fails first: no folder is made" '[ ! -e "$d/k2" ]'
echo "$((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
