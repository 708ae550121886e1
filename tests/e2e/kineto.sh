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
: >"$d/file"
"$bin" run "$s" --quiet --json "$d/a.json" --kineto "$d/file" >/dev/null 2>"$d/err"
check "a file is not a folder: exit 2" '[ $? -eq 2 ]'
check "the message names it" 'grep -qF "$d/file: is not a folder" "$d/err"'
check "nothing else written" '[ ! -e "$d/a.json" ]'
"$bin" run "$s" --quiet --kineto "$d/k2" --trace "$d/no/such/t.json" >/dev/null 2>&1
check "another output fails first: no folder is made" '[ ! -e "$d/k2" ]'
echo "$((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
