#!/usr/bin/env bash
# shardsim sweep: the cartesian product (3 strategies x 3 dp values = 9
# points, the last --vary fastest), the CSV header, identical bytes for -j 1
# and -j 2, a point that cannot run recorded as an error row, not a failure;
# --svg draws one row per point (its step split into compute, exposed
# communication and the rest, as the CSV's compute_s and
# exposed_communication_s), the same bytes for -j 1 and -j 2.
. "$(dirname "$0")/lib.sh" "$@"
s=scenarios/seed002/zero3_full_shard_pre.json
args=(--vary sharding.strategy=full_shard,shard_grad_op,ddp --vary parallel.dp=2,4,8)
"$bin" sweep "$s" "${args[@]}" -j 1 -o "$d/j1.csv" --svg "$d/j1.svg" 2>/dev/null
check "sweep -j 1 exits 0" '[ $? -eq 0 ]'
"$bin" sweep "$s" "${args[@]}" -j 2 -o "$d/j2.csv" --svg "$d/j2.svg" 2>/dev/null
check "sweep -j 2 exits 0" '[ $? -eq 0 ]'
check "-j 1 and -j 2 give the same bytes" 'cmp -s "$d/j1.csv" "$d/j2.csv"'
check "header + 9 rows" '[ "$(wc -l <"$d/j1.csv")" -eq 10 ]'
check "the header" 'head -1 "$d/j1.csv" | grep -qx "point,sharding.strategy,parallel.dp,status,step_time_s,compute_s,exposed_communication_s,max_peak_allocated_bytes,max_peak_reserved_bytes,max_steady_bytes,fits,all_reduce_count,all_gather_count,reduce_scatter_count,broadcast_count,error"'
check "point 4 is shard_grad_op on 4 ranks" 'sed -n 6p "$d/j1.csv" | grep -q "^4,shard_grad_op,4,ok,"'
check "dp = 8 does not fit the 4-GPU box: error rows" '[ "$(grep -c ",8,error," "$d/j1.csv")" -eq 3 ]'
check "every row has 16 columns" '[ "$(sed 1d "$d/j1.csv" | grep -v error | awk -F, "{print NF}" | sort -u)" = 16 ]'
"$bin" sweep "$s" --vary parallel.dp= -o "$d/x.csv" 2>/dev/null
check "an empty value is a usage error (exit 2)" '[ $? -eq 2 ] && [ ! -e "$d/x.csv" ]'
check "the SVG has one row per point" '[ "$(grep -c "<g id=\"point_" "$d/j1.svg")" -eq 9 ] && grep -q "<g id=\"point_8\">" "$d/j1.svg"'
check "the SVG is the same for -j 1 and -j 2" 'cmp -s "$d/j1.svg" "$d/j2.svg"'
check "rows are labelled by their values" 'grep -q "<title>strategy=shard_grad_op, dp=4</title>" "$d/j1.svg"'
# Point 4's compute part in ms is the CSV's compute_s (column 6) x 1000.
c4=$(sed -n 6p "$d/j1.csv" | awk -F, '{printf "%.3f", $6 * 1000}')
check "a bar's compute part is the CSV's compute_s" 'grep -q "<title>strategy=shard_grad_op, dp=4: compute (rank 0 busy) $c4 ms of" "$d/j1.svg"'
check "a point that cannot run shows its error" '[ "$(grep -c ">error: .*do not fit topology" "$d/j1.svg")" -eq 3 ]'
check "time axes at the top and the bottom" 'grep -q "<g id=\"axis_top\">" "$d/j1.svg" && grep -q "<g id=\"axis_bottom\">" "$d/j1.svg"'
echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
