#!/usr/bin/env bash
# The network model against every table of the nccl-tests corpus
# (tests/data/nccl-tests/corpus.tsv): `shardsim coll --compare` per table with
# the model's default parameters, a markdown line per table (system,
# collective, nodes x GPUs per node, median |error| of time for sizes >= 1 MiB,
# bound), the median over tables, and a failure for any table above its bound.
# Usage: corpus.sh BIN ROOT
set -u
bin=$1
cd "$2" || exit 1
dir=tests/data/nccl-tests
fails=0
meds=()
echo "| system | collective | nodes x GPUs | NCCL_ALGO | median abs error | bound |"
echo "| --- | --- | --- | --- | --- | --- |"
while IFS=$'\t' read -r f t tab algo r n bound sys; do
  case $f in ''|'#'*) continue;; esac
  args=(coll --topology "topologies/$t" --compare "$dir/$f")
  [ "$tab" != - ] && args+=(--table "$tab")
  [ "$algo" != auto ] && args+=(--algo "$algo")
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
  echo "| $sys | $op | $shape | $algo | $med% | $bound% |"
  meds+=("$med")
  awk -v m="$med" -v b="$bound" 'BEGIN { exit !(m > b) }' &&
    { echo "FAIL: $f $tab: median |error| $med% above its bound $bound%"; fails=$((fails + 1)); }
done <"$dir/corpus.tsv"
printf '%s\n' "${meds[@]}" | sort -g | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median over %d tables: %.1f%%\n", NR, m }'
[ $fails -eq 0 ] && echo "corpus: all tables within their bounds"
[ $fails -eq 0 ]
