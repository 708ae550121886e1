#!/usr/bin/env bash
# The network model against every table of the nccl-tests corpus
# (tests/data/nccl-tests/corpus.tsv): `shardsim coll --compare` per table with
# the model's default parameters, a markdown line per table (system,
# collective, nodes x GPUs per node, median |error| of time for sizes >= 1 MiB,
# bound, and beside it what a calibration profile fitted to the table does:
# `shardsim-calib fit`'s leave-one-size-out median |error|, each size
# predicted by the regimes fitted without it, over all the table's sizes;
# "-" where the table has too few sizes to hold one out),
# the medians over tables, and a failure for any table above its bound (the
# bound is on the default model's error only).
# Usage: corpus.sh BIN ROOT [--calibrated]   (the calibrated column only
# with --calibrated, from the shardsim-calib beside BIN: 56 fits add ~40 s,
# so ctest leaves it out; the README's table is made with it)
set -u
bin=$1
calib=
[ "${3:-}" = --calibrated ] && calib=$(dirname "$bin")/shardsim-calib
cd "$2" || exit 1
dir=tests/data/nccl-tests
fails=0
meds=()
cals=()
echo "| system | collective | nodes x GPUs | NCCL_ALGO[/PROTO] | median abs error | bound | calibrated (leave one size out) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
while IFS=$'\t' read -r f t tab algo ctas r n bound sys; do
  case $f in ''|'#'*) continue;; esac
  args=(coll --topology "topologies/$t" --compare "$dir/$f")
  [ "$tab" != - ] && args+=(--table "$tab")
  case $algo in */*) args+=(--proto "${algo#*/}");; esac # NCCL_PROTO after a slash
  [ "${algo%%/*}" != auto ] && args+=(--algo "${algo%%/*}")
  [ "$ctas" != - ] && args+=(--min-ctas "$ctas")
  [ "$r" != - ] && args+=(--ranks "$r" --nodes "$n")
  if ! out=$("$bin" "${args[@]}" 2>&1); then
    echo "FAIL: $f $tab: shardsim exited non-zero:"; echo "$out"; fails=$((fails + 1)); continue
  fi
  # one table per line of corpus.tsv: its header names op, ranks and nodes
  hdr=$(grep -m1 '^# shardsim coll: ' <<<"$out")
  med=$(grep -m1 '^# median' <<<"$out" | sed -n 's/.*: \([0-9.]*\)% over.*/\1/p')
  op=$(sed -n 's/^# shardsim coll: \([a-z_]*\).*/\1/p' <<<"$hdr")
  shape=$(sed -n 's/.* \([0-9]*\) ranks on \([0-9]*\) node.*/\2 x \1/p' <<<"$hdr")
  if [ -z "$med" ]; then
    echo "FAIL: $f $tab: no median line in:"; echo "$out"; fails=$((fails + 1)); continue
  fi
  if [ -n "$shape" ]; then
    nodes=${shape%% x *}; ranks=${shape##* x }; shape="$nodes x $((ranks / nodes))"
  fi
  cal=-
  if [ -n "$calib" ] && [ -x "$calib" ]; then
    fit=(fit --nccl-tests "$dir/$f" -o /dev/null)
    [ "$tab" != - ] && fit+=(--table "$tab")
    [ "$r" != - ] && fit+=(--ranks "$r" --nodes "$n")
    cal=$("$calib" "${fit[@]}" 2>&1 | sed -n 's/.*leave-one-size-out median |relative error| \([0-9.]*\)%.*/\1/p' | head -1)
    if [ -n "$cal" ]; then cals+=("$cal"); cal="$cal%"; else cal=-; fi
  fi
  echo "| $sys | $op | $shape | $algo | $med% | $bound% | $cal |"
  meds+=("$med")
  awk -v m="$med" -v b="$bound" 'BEGIN { exit !(m > b) }' &&
    { echo "FAIL: $f $tab: median |error| $med% above its bound $bound%"; fails=$((fails + 1)); }
done <"$dir/corpus.tsv"
median() {
  sort -g | awk -v what="$1" '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "median over %d tables%s: %.1f%%\n", NR, what, m }'
}
printf '%s\n' "${meds[@]}" | median ""
[ ${#cals[@]} -gt 0 ] && printf '%s\n' "${cals[@]}" | median ", calibrated (leave one size out)"
[ $fails -eq 0 ] && echo "corpus: all tables within their bounds"
[ $fails -eq 0 ]
