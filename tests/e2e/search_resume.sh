#!/usr/bin/env bash
# search --csv as a record that survives a kill, and --resume (run/search_csv.h,
# docs/DECISIONS.md entry 84), on search.sh's space (Llama-3 8B, one 8-GPU node,
# 1k tokens, 80 points): the CSV cut to its first rows, its rows shuffled (the
# order points finish in), a search killed part way, each resumed, gives the
# uninterrupted search's CSV and report byte for byte, on 1 or 2 threads; a
# CSV from another search (other lists, other --set), a foreign file or a
# broken row is refused naming the file, the line and what differs, and the
# file is left as it was.
. "$(dirname "$0")/lib.sh" "$@"
s=scenarios/transformers/llama3-8b-full-shard-8xh100.json
args=(--set training.seq_len=1024 --strategy full_shard,hybrid_shard --recompute none,full)
"$bin" search "$s" "${args[@]}" --quiet -j 2 --csv "$d/a.csv" >"$d/a.txt"
check "the uninterrupted search exits 0" '[ $? -eq 0 ]'
"$bin" search "$s" "${args[@]}" --quiet --no-prune -j 2 --csv "$d/n.csv" >"$d/n.txt"
check "... and without pruning" '[ $? -eq 0 ]'

# Cut: the key line, the header, 10 rows and half of the next (the kill
# came mid-write). The rows of simulated points (ok, error) are taken back;
# pruned ones are verdicts, made again.
head -12 "$d/a.csv" >"$d/cut.csv"
sed -n 13p "$d/a.csv" | head -c 20 >>"$d/cut.csv"
sim=$(sed -n 3,12p "$d/a.csv" | cut -d, -f11 | grep -Ec '^(ok|error)$')
"$bin" search "$s" "${args[@]}" -j 1 --csv "$d/cut.csv" --resume >"$d/cut.txt" 2>"$d/cut.err"
check "resumed from a cut CSV: exit 0" '[ $? -eq 0 ]'
check "... the uninterrupted CSV, byte for byte" 'cmp -s "$d/cut.csv" "$d/a.csv"'
check "... and report" 'cmp -s "$d/cut.txt" "$d/a.txt"'
check "... it says how many points it took back ($sim of the 10 rows were simulated)" \
    'grep -qx "shardsim search: resuming $d/cut.csv: $sim points simulated before taken from it, $((80 - sim)) to simulate or prune" "$d/cut.err"'

# Shuffled: the rows in any order (a search on threads appends them as they
# finish), half of them, resumed without pruning on 2 threads.
{ head -2 "$d/n.csv"; sed 1,2d "$d/n.csv" | awk 'NR % 2' | sort -t, -k12,12 -k1,1n; } >"$d/mix.csv"
"$bin" search "$s" "${args[@]}" --quiet --no-prune -j 2 --csv "$d/mix.csv" --resume >"$d/mix.txt"
check "resumed from shuffled rows: the uninterrupted CSV" 'cmp -s "$d/mix.csv" "$d/n.csv"'
check "... and report" 'cmp -s "$d/mix.txt" "$d/n.txt"'

# Killed: SIGINT part way (about 1.3 s of simulation at -j 1 here). What
# the file holds then is the key line, the header and whole rows, each a row
# of the finished CSV; resumed, the finished CSV.
timeout -s INT 0.5 "$bin" search "$s" "${args[@]}" --quiet --no-prune -j 1 --csv "$d/k.csv" >/dev/null
rc=$?
cp "$d/k.csv" "$d/k0.csv"
if [ $rc -eq 124 ]; then
    check "killed: the key line and the header first" \
        '[ "$(head -2 "$d/k0.csv")" = "$(head -2 "$d/n.csv")" ]'
    check "killed: every row kept is one of the finished CSV's" \
        '[ -z "$(sed 1,2d "$d/k0.csv" | grep -vxFf "$d/n.csv")" ]'
else
    echo "note: the search finished before the kill ($rc); the resume below starts from its whole CSV"
fi
"$bin" search "$s" "${args[@]}" --quiet --no-prune -j 1 --csv "$d/k.csv" --resume >"$d/k.txt"
check "resumed after the kill: the uninterrupted CSV and report" \
    'cmp -s "$d/k.csv" "$d/n.csv" && cmp -s "$d/k.txt" "$d/n.txt"'

# Nothing to resume: no file yet starts the search; a whole CSV leaves
# nothing to simulate.
"$bin" search "$s" "${args[@]}" --quiet -j 2 --csv "$d/new.csv" --resume >/dev/null
check "--resume without the file: a fresh search" 'cmp -s "$d/new.csv" "$d/a.csv"'
"$bin" search "$s" "${args[@]}" -j 2 --csv "$d/new.csv" --resume >/dev/null 2>"$d/all.err"
all=$(sed 1,2d "$d/a.csv" | cut -d, -f11 | grep -Ec '^(ok|error)$')
check "--resume on a whole CSV: its $all simulated points taken, the same CSV" \
    'grep -q "resuming $d/new.csv: $all points simulated before taken from it, $((80 - all)) to" "$d/all.err" &&
     cmp -s "$d/new.csv" "$d/a.csv"'

# Refusals: exit 2, the file as it was.
cp "$d/cut.csv" "$d/keep.csv"
"$bin" search "$s" "${args[@]}" --quiet --strategy full_shard --csv "$d/cut.csv" --resume 2>"$d/e1" >/dev/null
check "other strategies: refused, naming the list in the file and in the search" \
    '[ $? -eq 2 ] && grep -q "cut.csv: line 1: this CSV is from another search: its strategy is full_shard,hybrid_shard, this search.s full_shard" "$d/e1"'
"$bin" search "$s" "${args[@]}" --quiet --set training.micro_batch=2 --global-batch 16 --csv "$d/cut.csv" --resume 2>"$d/e2" >/dev/null
check "another --set: refused, naming the scenario" \
    '[ $? -eq 2 ] && grep -q "line 1: this CSV is from another search: its scenario" "$d/e2"'
check "... the file untouched" 'cmp -s "$d/cut.csv" "$d/keep.csv"'
echo "point,tp" >"$d/foreign.csv"
"$bin" search "$s" "${args[@]}" --quiet --csv "$d/foreign.csv" --resume 2>"$d/e3" >/dev/null
check "a CSV without the key line: refused" \
    '[ $? -eq 2 ] && grep -q "foreign.csv: line 1: expected the key line a search.s CSV starts with" "$d/e3"'
{ head -3 "$d/a.csv"; sed -n 3p "$d/a.csv"; } >"$d/twice.csv"
"$bin" search "$s" "${args[@]}" --quiet --csv "$d/twice.csv" --resume 2>"$d/e4" >/dev/null
check "a point twice: refused, naming both lines" \
    '[ $? -eq 2 ] && grep -q "twice.csv: line 4: point 0 again (line 3 has it)" "$d/e4"'
{ head -2 "$d/a.csv"; sed -n 3p "$d/a.csv" | sed "s/^0,1,/0,4,/"; } >"$d/other.csv"
"$bin" search "$s" "${args[@]}" --quiet --csv "$d/other.csv" --resume 2>"$d/e5" >/dev/null
check "a row whose point differs: refused, naming the key and both values" \
    '[ $? -eq 2 ] && grep -q "other.csv: line 3: point 0 has parallel.tp = 1 in this search; found 4" "$d/e5"'
"$bin" search "$s" "${args[@]}" --quiet --resume 2>"$d/e6" >/dev/null
check "--resume without --csv: a usage error" '[ $? -eq 2 ] && grep -q "resume goes with --csv FILE" "$d/e6"'

echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
