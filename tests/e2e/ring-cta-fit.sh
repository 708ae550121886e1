#!/usr/bin/env bash
# The one fitted constant of the ring model across nodes: what one CTA of a
# Simple-protocol ring moves on Hopper (net/algo.h, "Ring CTAs across
# nodes"; DECISIONS.md 161), fitted to the corpus's rings of eight GPUs per
# node across more than two nodes, with leave-one-source-out
# cross-validation.
#
# For each value on a grid (16 to 26 GB/s in steps of 0.25) it writes the
# topology with "nccl_ring_cta_GBps" set, runs `shardsim coll --compare` on
# every fit table, and keeps the signed error of every size of 1 GiB or
# more (the bandwidth regime, where the cap binds). The fit is the value
# with the least median |error| over a set of sources' points. It prints
# the fit on all sources, and per source the fit without it and that
# source's median |error| (and signed median) at it: the cross-validated
# error. It fails when the all-source fit is not the value algo.c ships
# (RING_CTA_HOPPER_GBPS), so a model change that moves the fit shows.
# Usage: ring-cta-fit.sh BIN ROOT
set -u
bin=$1
cd "$2" || exit 1
dir=tests/data/nccl-tests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r topologies/devices "$tmp/"
shipped=$(sed -n 's/^#define RING_CTA_HOPPER_GBPS \([0-9.]*\).*/\1/p' sim/net/algo.c)
# source | log | table | ranks | nodes | min_ctas ("-": none)
tables="cluster01|h100-10node-8gpn-ib-xxrjun-cluster01.txt|all_reduce|-|-|-
cluster01|h100-10node-8gpn-ib-xxrjun-cluster01.txt|all_gather|-|-|-
cluster01|h100-10node-8gpn-ib-xxrjun-cluster01.txt|reduce_scatter|-|-|-
gj-aion|h100-4node-32gpu-ib-gjaion-i309.txt|-|32|4|-
gj-aion|h100-8node-64gpu-ib-gjaion-i309.txt|-|64|8|-
gj-aion|h100-8node-64gpu-ib-gjaion-ctas24-i309.txt|-|64|8|24
qoofyk-vm|h100-4node-32gpu-vm-ib-i309.txt|-|32|4|-"
points=$tmp/points # source value error%
: >"$points"
for y in $(seq 16 0.25 26); do
  sed "s/^{/{\"nccl_ring_cta_GBps\": $y,/" topologies/h100-ib-fattree.json \
    | sed 's#"devices/#"'"$tmp"'/devices/#' >"$tmp/t.json"
  while IFS='|' read -r src log tab r n c; do
    args=(coll --topology "$tmp/t.json" --compare "$dir/$log")
    [ "$tab" != - ] && args+=(--table "$tab")
    [ "$r" != - ] && args+=(--ranks "$r" --nodes "$n")
    [ "$c" != - ] && args+=(--min-ctas "$c")
    if ! out=$("$bin" "${args[@]}" 2>&1); then
      echo "FAIL: $log $tab: shardsim exited non-zero:"; echo "$out"; exit 1
    fi
    awk -v s="$src" -v y="$y" '$1 ~ /^[0-9]+$/ && $1 >= 1073741824 { e = $10; sub("%", "", e); print s, y, e }' \
      <<<"$out" >>"$points"
  done <<<"$tables"
done
# fit SOURCES...: the grid value with the least median |error| over the
# points of those sources ("all": every source); ties to the smaller value
fit() {
  awk -v want=" $* " '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    (want == " all " || index(want, " " $1 " ")) { k = $2; n[k]++; v[k, n[k]] = $3 < 0 ? -$3 : $3; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
    END { best = ""; for (i = 1; i <= m; i++) { k = order[i]; delete a; for (j = 1; j <= n[k]; j++) a[j] = v[k, j]
            x = med(a, n[k]); if (best == "" || x < bx - 1e-9) { best = k; bx = x } }
          printf "%s %.2f\n", best, bx }' "$points"
}
# at VALUE SOURCE: that source's median |error| and median signed error at VALUE
at() {
  awk -v y="$1" -v s="$2" '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j > 0 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    $1 == s && $2 + 0 == y + 0 { n++; u[n] = $3 < 0 ? -$3 : $3; w[n] = $3 }
    END { printf "%.1f%% %+.1f%% (%d sizes)\n", med(u, n), med(w, n), n }' "$points"
}
sources=$(cut -d'|' -f1 <<<"$tables" | uniq)
read -r all allerr <<<"$(fit all)"
printf 'nccl_ring_cta_GBps fitted on every source: %s GB/s (median |error| %s%% over their sizes >= 1 GiB); shipped: %s\n' \
  "$all" "$allerr" "$shipped"
printf '%-12s %-34s %-34s %s\n' source "fit without it (GB/s)" "its error at that fit: |med| signed" "its error at the shipped value"
for s in $sources; do
  others=$(tr ' ' '\n' <<<"$sources" | grep -vx "$s" | tr '\n' ' ')
  read -r y _ <<<"$(fit $others)"
  printf '%-12s %-34s %-34s %s\n' "$s" "$y" "$(at "$y" "$s")" "$(at "$shipped" "$s")"
done
awk -v a="$all" -v b="$shipped" 'BEGIN { exit !(a + 0 != b + 0) }' &&
  { echo "FAIL: the fit on every source ($all GB/s) is not the shipped RING_CTA_HOPPER_GBPS ($shipped)"; exit 1; }
echo "ring-cta-fit: the shipped value is the fit"
