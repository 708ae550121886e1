#!/usr/bin/env bash
# The network model against two B200 clusters' scaling reports from 2 to
# 64 nodes (tests/data/nccl-tests/b200-scaling-together-reports.md: one bus
# bandwidth per collective, algorithm and node count, NCCL 2.29.7 on one
# cluster and 2.28.9 on the other). Prints, per series, the error of time
# at each node count ((predicted - measured) / measured = measured busbw /
# predicted busbw - 1) and the median |error|, and checks:
#   - the mechanism: every send/recv series halves (a drop of 1.4x or more
#     from one node count to the next) at the node counts where the model's
#     per-peer channels halve, by the rule of the report's NCCL (DECISIONS
#     177, 179);
#   - a regression guard: each series' median |error| within its bound
#     (the bounds enclose today's errors; they validate nothing).
# Usage: scaling.sh BIN ROOT
. "$(dirname "$0")/lib.sh" "$@"
data=tests/data/nccl-tests/b200-scaling-together-reports.md
topo=topologies/b200-ib-fattree.json
sed -n '/^```tsv$/,/^```$/p' "$data" | grep -v '^```' >"$d/rows"
check "the report's figures are there" '[ "$(wc -l <"$d/rows")" -ge 50 ]'
while IFS=$'\t' read -r rep v op algo size n g meas; do
  a=(coll --topology "$topo" --nodes "$n" --op "$op" -b "$size" -e "$size" -g "$g" --nccl-version "$v")
  [ "$algo" != auto ] && a+=(--algo "$algo")
  [ "$algo" = collnet ] && a+=(--collnet 1)
  pred=$("$bin" "${a[@]}" 2>&1 | awk '!/^#/ && NF > 8 { bw = $8 } END { print bw }')
  [ -z "$pred" ] && { echo "FAIL: no prediction for $rep $op $algo at $n nodes"; fails=$((fails + 1)); continue; }
  printf '%s\t%s\t%s/%s\t%s\t%s\t%s\n' "$rep" "$v" "$op" "$algo" "$n" "$meas" "$pred"
done <"$d/rows" >"$d/pred"
# one line per series: its node counts, errors and median |error|
awk -F'\t' '
  { k = $1 "\t" $2 "\t" $3; if (!(k in n)) order[++ns] = k
    i = ++n[k]; node[k, i] = $4; m[k, i] = $5; p[k, i] = $6 }
  END {
    print "| report | NCCL | collective/algorithm | nodes: error of time | median abs error |"
    print "| --- | --- | --- | --- | --- |"
    for (s = 1; s <= ns; s++) {
      k = order[s]; line = ""; delete e
      for (i = 1; i <= n[k]; i++) {
        x = m[k, i] / p[k, i] - 1; e[i] = x < 0 ? -x : x
        line = line sprintf("%s%s: %+.1f%%", i > 1 ? ", " : "", node[k, i], 100 * x)
      }
      for (i = 1; i <= n[k]; i++) for (j = i + 1; j <= n[k]; j++) if (e[j] < e[i]) { t = e[i]; e[i] = e[j]; e[j] = t }
      med = n[k] % 2 ? e[(n[k] + 1) / 2] : (e[n[k] / 2] + e[n[k] / 2 + 1]) / 2
      split(k, f, "\t"); printf "| %s | %s | %s | %s | %.1f%% |\n", f[1], f[2], f[3], line, 100 * med
    }
  }' "$d/pred" | tee "$d/table"
# the mechanism: where send/recv halves, measured and predicted
awk -F'\t' '$3 ~ /^send_recv/' "$d/pred" | awk -F'\t' '
  $1 == r { dm = pm / $5 >= 1.4; dp = pp / $6 >= 1.4
            printf "%s %s -> %s nodes: measured %s, model %s\n", r, pn, $4, dm ? "halves" : "holds", dp ? "halves" : "holds"
            if (dm != dp) bad++ }
  { r = $1; pn = $4; pm = $5; pp = $6 }
  END { exit bad > 0 }' >"$d/steps"
rc=$?
cat "$d/steps"
# rc, not $?: the name's command substitution would reset $? before check
check "send/recv halves where the model's per-peer channels halve ($(tr '\n' ';' <"$d/steps"))" '[ $rc -eq 0 ]'
# regression guards on each series' median |error| (today's, rounded up)
while IFS=$'\t' read -r rep series bound; do
  med=$(awk -F'|' -v r=" $rep " -v s=" $series " '$2 == r && $4 == s { gsub(/[ %]/, "", $6); print $6 }' "$d/table")
  check "$rep $series: median |error| ${med:-?}% within $bound% (a regression guard)" \
    '[ -n "$med" ] && awk -v m="$med" -v b="$bound" "BEGIN { exit !(m <= b) }"'
done <<'GUARDS'
use3a-ss	all_reduce/ring	20
use3a-ss	all_reduce/tree	6
use3a-ss	all_reduce/nvls_tree	22
use3a-ss	all_gather/ring	20
use3a-ss	send_recv/auto	12
flapping-airplanes	all_reduce/ring	6
flapping-airplanes	all_reduce/tree	6
flapping-airplanes	all_gather/ring	4
flapping-airplanes	all_reduce/collnet	12
flapping-airplanes	send_recv/auto	24
GUARDS
echo "scaling: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
