#!/usr/bin/env bash
# shardsim search on Llama-3 8B over one 8-GPU node at 1k tokens: one CSV row
# per enumerated point, the pruned search (the default) giving the best point
# of the exhaustive one (--no-prune) and, with --prune front, its whole
# front, every simulated row's step bound <= its step, pruned and rejected
# rows saying why, the same bytes on 1 and 2 threads; every layout using the 8 GPUs, identical bytes for
# -j 1 and -j 2, the best point the fastest fitting row of the CSV, a front
# of fitting points none of which another fitting point beats, hybrid_shard
# under TP run as HSDP inside the layout, nothing fitting as exit 1 with the CSV
# written, usage errors as exit 2 with no CSV left behind.
. "$(dirname "$0")/lib.sh" "$@"
s=scenarios/transformers/llama3-8b-full-shard-8xh100.json
args=(--set training.seq_len=1024 --strategy full_shard,hybrid_shard --recompute none,full)
"$bin" search "$s" "${args[@]}" --no-prune -j 1 --csv "$d/j1.csv" >"$d/j1.txt" 2>"$d/j1.err"
rc=$?
check "search -j 1 exits 0" '[ $rc -eq 0 ]'
"$bin" search "$s" "${args[@]}" --no-prune -j 2 --csv "$d/j2.csv" >"$d/j2.txt" 2>/dev/null
rc=$?
check "search -j 2 exits 0" '[ $rc -eq 0 ]'
check "-j 1 and -j 2: the same CSV bytes" 'cmp -s "$d/j1.csv" "$d/j2.csv"'
check "-j 1 and -j 2: the same stdout bytes" 'cmp -s "$d/j1.txt" "$d/j2.txt"'
check "stderr is not a terminal: the count first, then progress lines" \
    '[ "$(head -1 "$d/j1.err")" = "shardsim search: simulating 80 points on 1 thread" ] &&
     grep -q "^shardsim search: 1/80 points, .* left; best so far: " "$d/j1.err"'
check "... the last line has every point and the best one" \
    'tail -1 "$d/j1.err" | grep -q "^shardsim search: 80/80 points, .* spent, - left; best so far: point [0-9]*, [0-9.]* ms$"'
check "... which is the best the report prints" \
    '[ "$(tail -1 "$d/j1.err" | sed "s/.*best so far: point \([0-9]*\),.*/\1/")" = "$(sed -n "s/^best by step time: point \([0-9]*\)$/\1/p" "$d/j1.txt")" ]'

# 20 layouts of 8 GPUs x 2 strategies x 2 recompute modes.
n=$(sed -n 's/^  points *\([0-9]*\) enumerated.*/\1/p' "$d/j1.txt")
check "80 points enumerated" '[ "$n" = 80 ]'
check "key line, header, one row per enumerated point" '[ "$(wc -l <"$d/j1.csv")" -eq $((n + 2)) ]'
check "the key line names the search" \
    'head -1 "$d/j1.csv" | grep -Eqx "# shardsim search: version [0-9.]+; scenario [0-9a-f]{16}; world 8; tp 1,2,4,8; cp 1,2,4,8; pp 1,2,4,8; ep 1; strategy full_shard,hybrid_shard; recompute none,full; global_batch 8; micro_batch 1"'
check "the header" 'sed -n 2p "$d/j1.csv" | grep -qx "point,parallel.tp,parallel.cp,parallel.pp,parallel.ep,parallel.dp,parallel.sequence_parallel,training.grad_accum,sharding.strategy,training.recompute,status,step_time_s,compute_s,exposed_communication_s,max_peak_allocated_bytes,max_peak_reserved_bytes,max_steady_bytes,fits,all_reduce_count,all_gather_count,reduce_scatter_count,broadcast_count,error,state_bytes,step_bound_s,step_ns,tokens_per_s_per_gpu,mfu"'
check "every row: tp x cp x pp x dp = 8, grad_accum x dp = 8" \
    '[ -z "$(awk -F, "NR > 2 && (\$2 * \$3 * \$4 * \$6 != 8 || \$8 * \$6 != 8)" "$d/j1.csv")" ]'
check "hybrid_shard with tp 2 runs (HSDP inside a layout)" \
    'awk -F, "\$2 == 2 && \$9 == \"hybrid_shard\" && \$11 == \"ok\"" "$d/j1.csv" | grep -q .'
check "hybrid_shard without a layout runs" \
    'awk -F, "\$6 == 8 && \$9 == \"hybrid_shard\" && \$11 == \"ok\"" "$d/j1.csv" | grep -q .'

# The best point is the fastest fitting row.
best=$(sed -n 's/^best by step time: point \([0-9]*\)$/\1/p' "$d/j1.txt")
min=$(awk -F, 'NR > 2 && $11 == "ok" && $18 == "true" && (m == "" || $12 < m) { m = $12 } END { print m }' "$d/j1.csv")
check "a best point is printed" '[ -n "$best" ]'
check "the best point is the minimum step time among fitting rows" \
    '[ "$(awk -F, -v p="$best" "NR > 2 && \$1 == p { print \$12 }" "$d/j1.csv")" = "$min" ]'

# The front: fitting rows, by step time, each using less memory than the
# ones before it, none beaten on both by any fitting row.
awk '/^  point +tp/ { f = 1; next } f && /^ +[0-9]/ { print $1 }' "$d/j1.txt" >"$d/front"
check "the front has points" '[ -s "$d/front" ]'
check "the front starts with the best point" '[ "$(head -1 "$d/front")" = "$best" ]'
check "every front point fits, faster first, less memory each" '
    awk -F, "NR == FNR { want[\$1] = FNR; next }
             FNR > 2 && (\$1 in want) { if (\$18 != \"true\") bad = 1; t[want[\$1]] = \$12; r[want[\$1]] = \$16; k++ }
             END { for (i = 2; i <= k; i++) if (t[i] < t[i - 1] || r[i] >= r[i - 1]) bad = 1; exit bad || !k }" \
        "$d/front" "$d/j1.csv"'
check "no fitting row beats a front point on both step time and memory" '
    awk -F, "NR == FNR { want[\$1] = 1; next }
             FNR > 2 && \$18 == \"true\" { id[++m] = \$1; t[m] = \$12; r[m] = \$16 }
             END { for (i = 1; i <= m; i++) if (id[i] in want) for (j = 1; j <= m; j++)
                     if (t[j] <= t[i] && r[j] <= r[i] && (t[j] < t[i] || r[j] < r[i])) bad = 1
                   exit bad }" "$d/front" "$d/j1.csv"'

# Nothing fits (DDP, no recompute, 8k tokens): exit 1, the CSV still written.
# DDP holds 16 bytes per parameter (bf16 weights and grads are 4, fp32
# master and Adam 12: 8.03 B x 16 = 119.7 GiB > 80 GiB): rejected before it
# runs, with its reason; --no-prune runs it and it does not fit.
"$bin" search "$s" --tp 1 --cp 1 --pp 1 --strategy ddp --recompute none --quiet \
    --csv "$d/none.csv" >"$d/none.txt" 2>"$d/none.err"
rc=$?
check "nothing fits: exit 1" '[ $rc -eq 1 ]'
check "nothing fits: said on stdout" 'grep -q "^no point fits" "$d/none.txt"'
check "the rejected point: its row says why" \
    'sed 1,2d "$d/none.csv" | cut -d, -f11,23 | grep -Eq "^rejected,rejected: states [0-9.]+ GiB > 80.00 GiB$"'
check "... and the report counts it" 'grep -q "pruning      best: 1 rejected" "$d/none.txt"'
check "--quiet: nothing on stderr" '[ ! -s "$d/none.err" ]'
"$bin" search "$s" --tp 1 --cp 1 --pp 1 --strategy ddp --recompute none --quiet --no-prune \
    --csv "$d/none2.csv" >/dev/null 2>&1
check "... run anyway (--no-prune), it does not fit" \
    '[ "$(sed 1,2d "$d/none2.csv" | cut -d, -f11,18)" = "ok,false" ]'
check "... its states are below its peak" \
    '[ "$(sed 1,2d "$d/none.csv" | cut -d, -f24)" -le "$(sed 1,2d "$d/none2.csv" | cut -d, -f15)" ]'

# The nearest miss. Rejected only: point 0, its states (the CSV's
# state_bytes) over what a rank may use. With tp 1,2 the tp 2 point is
# simulated and misses by its peak reserved (the CSV's) less the usable
# bytes the report prints; the levers the search did not try are listed.
check "nothing fits: the nearest miss is the rejected point, by its states" \
    'grep -qx "nearest miss: point 0" "$d/none.txt" &&
     grep -Eq "^  memory       model states alone $(sed 1,2d "$d/none.csv" | cut -d, -f24 | awk "{ printf \"%.2f\", \$1 / 2^30 }") GiB, [0-9.]+ GiB usable: at least [0-9.]+ GiB over" "$d/none.txt"'
"$bin" search "$s" --tp 1,2 --cp 1 --pp 1 --strategy ddp --recompute none --quiet \
    --csv "$d/miss.csv" >"$d/miss.txt" 2>/dev/null
check "tp 1,2: still nothing fits" '[ $? -eq 1 ]'
peak=$(awk -F, 'NR > 2 && $2 == 2 { print $16 }' "$d/miss.csv")
usable=$(sed -n 's/^  memory .* GiB peak reserved, \([0-9.]*\) GiB usable.*/\1/p' "$d/miss.txt")
check "... the nearest miss is the simulated tp 2 point" \
    'grep -qx "nearest miss: point 1" "$d/miss.txt" && grep -q "^  layout       tp 2, cp 1, pp 1, ep 1, dp 4" "$d/miss.txt"'
# (the report subtracts exact bytes, the usable figure it prints is rounded:
# the two differences agree to the last printed digit, +-0.01)
over=$(sed -n 's/^  memory .* GiB usable: \([0-9.]*\) GiB over.*/\1/p' "$d/miss.txt")
check "... its peak (the CSV's) less the usable bytes is what it misses by" \
    'grep -q "^  memory       $(awk -v p="$peak" "BEGIN { printf \"%.2f\", p / 2^30 }") GiB peak reserved, $usable GiB usable: " "$d/miss.txt" &&
     awk -v p="$peak" -v u="$usable" -v o="$over" "BEGIN { d = p / 2^30 - u - o; exit !(o != \"\" && d <= 0.011 && d >= -0.011) }"'
check "... and the levers not searched" \
    'grep -q "^  not searched --recompute ...,full" "$d/miss.txt" && grep -q "^               --strategy ...,fsdp2 or full_shard" "$d/miss.txt"'

# Pruning: the same best point as the exhaustive run, the same bytes on 1
# and 2 threads; --prune front the same front.
front_of() { awk '/^  point +tp/ { f = 1; next } f && /^ +[0-9]/ { print $1 }' "$1"; }
"$bin" search "$s" "${args[@]}" -j 1 --csv "$d/p1.csv" >"$d/p1.txt" 2>"$d/p1.err"
rc=$?
check "pruned search exits 0" '[ $rc -eq 0 ]'
"$bin" search "$s" "${args[@]}" -j 2 --csv "$d/p2.csv" >"$d/p2.txt" 2>/dev/null
check "pruned, -j 1 and -j 2: the same CSV bytes" 'cmp -s "$d/p1.csv" "$d/p2.csv"'
check "pruned, -j 1 and -j 2: the same stdout bytes" 'cmp -s "$d/p1.txt" "$d/p2.txt"'
check "pruned: the exhaustive run's best point" \
    '[ "$(sed -n "s/^best by step time: point \([0-9]*\)$/\1/p" "$d/p1.txt")" = "$best" ]'
check "pruned: some points pruned, fewer simulated" \
    'grep -Eq "^  pruning      best: 0 rejected .*, [1-9][0-9]* pruned .*, [0-9]+ simulated$" "$d/p1.txt"'
check "pruned: the checks are announced first" \
    '[ "$(head -1 "$d/p1.err")" = "shardsim search: checking 80 points (memory, step bound) on 1 thread" ]'
check "every simulated row: step bound <= step" \
    '[ -z "$(awk -F, "NR > 2 && \$11 == \"ok\" && (\$25 == \"\" || \$25 + 0 > \$12 + 0)" "$d/p1.csv")" ] &&
     awk -F, "NR > 2 && \$11 == \"ok\"" "$d/p1.csv" | grep -q .'
check "every pruned row: its bound >= the best step, said in the row" '
    awk -F, -v b="$(awk -F, -v p="$best" "NR > 2 && \$1 == p { print \$12 }" "$d/j1.csv")" \
        "NR > 2 && \$11 == \"pruned\" { n++; if (\$25 + 0 < b + 0 || \$23 !~ /^pruned: bound [0-9.]+ s >= best [0-9.]+ s \(point [0-9]+\)$/) bad = 1 }
         END { exit bad || !n }" "$d/p1.csv"'
"$bin" search "$s" "${args[@]}" -j 2 --prune front --csv "$d/f.csv" >"$d/f.txt" 2>/dev/null
check "--prune front: the exhaustive run's front" '[ "$(front_of "$d/f.txt")" = "$(front_of "$d/j1.txt")" ]'
check "--prune best: a front of simulated points only, said so" \
    'grep -q "pruning keeps the best exact" "$d/p1.txt" && ! grep -q "pruning keeps" "$d/j1.txt"'

# On the 5T MoE's torus, where the bound costs each collective at its time
# alone (run/least.h) and so prunes by time: the exhaustive run's best point,
# every simulated row's bound under its step, some points pruned.
m=scenarios/moe-5t/accel-4096-cp16-pp16-ep64.json
margs=(--cp 8,16,32 --pp 8,16 --ep 32,64 -j 2)
"$bin" search "$m" "${margs[@]}" --no-prune --csv "$d/m_all.csv" >"$d/m_all.txt" 2>/dev/null
"$bin" search "$m" "${margs[@]}" --csv "$d/m_p.csv" >"$d/m_p.txt" 2>/dev/null
mbest=$(sed -n "s/^best by step time: point \([0-9]*\)$/\1/p" "$d/m_all.txt")
check "5T: the exhaustive run has a best point" '[ -n "$mbest" ]'
check "5T pruned: the exhaustive run's best point" \
    '[ "$(sed -n "s/^best by step time: point \([0-9]*\)$/\1/p" "$d/m_p.txt")" = "$mbest" ]'
check "5T pruned: some points pruned by their bound" \
    'grep -Eq "^  pruning      best: [0-9]+ rejected .*, [1-9][0-9]* pruned .*" "$d/m_p.txt"'
check "5T pruned: every simulated row's bound <= its step" \
    '[ -z "$(awk -F, "NR > 2 && \$11 == \"ok\" && (\$25 == \"\" || \$25 + 0 > \$12 + 0)" "$d/m_p.csv")" ]'

# Usage errors: exit 2, no CSV.
for bad in "--tp 0" "--tp 2,2" "--strategy zero9" "--frobnicate 1" "--world 16" "-j 0" "--max-points 10"; do
    # shellcheck disable=SC2086
    "$bin" search "$s" $bad --csv "$d/bad.csv" >/dev/null 2>"$d/bad.err"
    rc=$?
    check "$bad: exit 2" '[ $rc -eq 2 ]'
    check "$bad: no CSV" '[ ! -e "$d/bad.csv" ] && [ -z "$(ls "$d" | grep "bad.csv.tmp")" ]'
done
check "--max-points (the last one) names the option to narrow" 'grep -q "narrow --" "$d/bad.err"'

# --write-best: the best point as a scenario that runs from another folder
# and gives the step the report printed; --point N writes that point.
"$bin" search "$s" "${args[@]}" --quiet --write-best "$d/best.json" >"$d/wb.txt" 2>/dev/null
want=$(sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p' "$d/wb.txt")
abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
got=$(cd / && "$abs" run "$d/best.json" | sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
check "--write-best: the file runs from / and gives the reported step" '[ -n "$want" ] && [ "$got" = "$want" ]'
check "... its file references are absolute" 'grep -q "\"model\":[[:space:]]*\"/" "$d/best.json"'
"$bin" search "$s" "${args[@]}" --quiet --write-best "$d/p3.json" --point 3 >/dev/null 2>&1
tp3=$(awk -F, 'NR == 6 {print $2}' "$d/j1.csv")
check "--point 3 writes the CSV's fourth point" '[ -n "$tp3" ] && grep -q "\"tp\":[[:space:]]*$tp3[,}]" "$d/p3.json"'
"$bin" search "$s" "${args[@]}" --quiet --write-best "$d/x.json" --point 80 >/dev/null 2>"$d/pe.err"
rc=$?
check "--point past the last is a usage error" '[ $rc -eq 2 ] && grep -q "points 0 to 79" "$d/pe.err" && [ ! -e "$d/x.json" ]'

echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
