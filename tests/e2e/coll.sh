#!/usr/bin/env bash
# shardsim coll end to end: a sweep in nccl-tests' columns, a comparison
# with a real log, a calibrated comparison, and bad input (exit 2, a message
# naming what is wrong, nothing written).
set -u
bin=$1
cd "$2" || exit 1
fails=0
out=$(mktemp -d)
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$bin" coll --topology topologies/h100x8-hgx.json --op all_gather -b 1M -e 16M -f 4 >"$out/s" 2>&1 || fail "sweep exited $?"
grep -q "^#       size         count      type   redop    root" "$out/s" || fail "sweep header"
[ "$(grep -c '^ *[0-9]' "$out/s")" -eq 3 ] || fail "sweep rows: 1M, 4M, 16M"
"$bin" coll --topology topologies/h100x8-hgx.json --algo ring \
  --table benchmarks/H100/results/20260305_220944/all_gather_ring.out \
  --compare tests/data/nccl-tests/h100-8gpu-single-node-together.txt >"$out/c" 2>&1 || fail "compare exited $?"
[ "$(grep -c '^# median' "$out/c")" -eq 1 ] || fail "compare: one table, one median"
"$bin" coll --topology topologies/gcp-a3mega.json --calibration calib/profiles/h100-2node-a3mega.json \
  --compare tests/data/nccl-tests/h100-2node-16gpu-gcp-a3mega-ztan.txt -o "$out/cal.txt" >/dev/null 2>&1 || fail "calibrated compare exited $?"
grep -q "median |error| of time for sizes >= 1 MiB: 0\." "$out/cal.txt" || fail "calibrated median under 1%: $(grep median "$out/cal.txt")"
# a log with no rank lines takes its shape from --ranks and --nodes, and says so without them
"$bin" coll --topology topologies/h100-ib-fattree.json --algo tree --ranks 2 --nodes 2 \
  --compare tests/data/nccl-tests/h100-2node-1gpu-tree-4nic-prohuper.txt >"$out/x" 2>&1 || fail "excerpt compare exited $?"
grep -q "2 ranks on 2 node" "$out/x" || fail "excerpt compare: 2 ranks on 2 nodes"
check_bad() { # expected fragment, args...
  local frag=$1; shift
  "$bin" coll "$@" -o "$out/bad.txt" >"$out/stdout" 2>"$out/stderr"
  local rc=$?
  [ $rc -eq 2 ] || fail "coll $*: exit $rc, want 2"
  grep -qF -- "$frag" "$out/stderr" || { fail "coll $*: no '$frag' in:"; cat "$out/stderr"; }
  [ ! -e "$out/bad.txt" ] || fail "coll $*: left output behind"
  rm -f "$out/bad.txt"
}
check_bad "--op: expected" --topology topologies/h100x8-hgx.json --op all_scatter
check_bad "cannot read" --topology topologies/nope.json --op all_gather
check_bad "--nodes: expected" --topology topologies/h100x8-hgx.json --op all_gather --nodes 0
printf '{"name": "flat", "nodes": 1, "gpus_per_node": 4, "intra_node": {"bus_bw_GBps": 100, "latency_us": 1}, "device": "%s/topologies/devices/v100-sxm2-32gb.json"}' "$PWD" >"$out/flat.json"
check_bad "flat form" --topology "$out/flat.json" --op all_gather
check_bad "ranks on" --topology topologies/h100x8-hgx.json --op all_gather --ranks 12
check_bad "--min-ctas: expected a count from 1 to 64, not 0" --topology topologies/h100x8-hgx.json --op all_gather --min-ctas 0
# NCCL_MIN_CTAS=24 lifts a ring over 4 eight-GPU H100 nodes off its 16 CTAs'
# 320 GB/s (algo.h, "Ring CTAs across nodes") to the NICs' rate
bw() { "$bin" coll --topology topologies/h100-ib-fattree.json --nodes 4 --op all_gather --algo ring -b 4G -e 4G "$@" |
  awk '/^ *[0-9]/ {print $8}'; }
b16=$(bw) b24=$(bw --min-ctas 24)
# and the header says what bounds it, across nodes only
"$bin" coll --topology topologies/h100-ib-fattree.json --nodes 4 --op all_gather -b 1G -e 1G --min-ctas 24 |
  grep -q "^# a ring across nodes runs 24 CTAs of 20.0 GB/s: at most 480 GB/s" || fail "coll: no ring CTA line for 4 nodes"
"$bin" coll --topology topologies/h100x8-hgx.json --op all_gather -b 1G -e 1G | grep -q "ring across nodes" &&
  fail "coll: a ring CTA line inside one node"
# a table whose rows run a tree across nodes says they pay its pipeline fill
# (algo.h, "Pipeline fill"); one that runs none says nothing of it
"$bin" coll --topology topologies/h100-ib-fattree.json --nodes 2 --op all_reduce -b 16M -e 16M |
  grep -q "^# tree rows pay the tree's pipeline fill" || fail "coll: no fill line for a tree across nodes"
"$bin" coll --topology topologies/h100-ib-fattree.json --nodes 2 --op all_reduce --algo ring -b 16M -e 16M |
  grep -q "pipeline fill" && fail "coll: a fill line for rings"
# a fabric with its own network steps says so, and what the tuner adds
# (algo.h, "Network steps"); InfiniBand's says neither
"$bin" coll --topology topologies/aws-p5-efa.json --op all_reduce -b 1M -e 1M |
  grep -q "^# a network step costs 20 us (23 with Simple)" || fail "coll: no network step line on EFA"
"$bin" coll --topology topologies/aws-p5-efa.json --op all_reduce -b 1M -e 1M |
  grep -q "^# the tuner adds the 75 us the net plugin reports" || fail "coll: no plugin latency line on EFA"
"$bin" coll --topology topologies/h100-ib-fattree.json --nodes 2 --op all_reduce -b 1M -e 1M |
  grep -q "network step\|net plugin" && fail "coll: a network step line on InfiniBand"
# nccl-tests' -g: one thread driving 8 H100s launches 8 kernels an iteration,
# 8 x 5 us (the device's launch_us), so 8 B takes 40 us and says "host"; a
# 1 GiB all_reduce is device-bound and the same with -g 1 and -g 8
row() { "$bin" coll --topology topologies/h100x8-hgx.json --op all_reduce -b "$1" -e "$1" -g "$2" | awk '/^ *[0-9]/'; }
row 8 8 | grep -q " 40.00 .* host$" || fail "coll -g 8: 8 B not held to 8 launches (40 us)"
row 8 1 | grep -q "host" && fail "coll -g 1: a row held to the launch floor"
[ "$(row 1G 8)" = "$(row 1G 1)" ] || fail "coll -g 8: a 1 GiB row moved"
"$bin" coll --topology topologies/h100x8-hgx.json --compare tests/data/nccl-tests/h100-8gpu-single-node-together-ag-220043.txt --algo ring |
  grep -q "^# one thread drives 8 GPUs (nccl-tests -g 8)" || fail "coll --compare: the log's nGpus 8 not read"
check_bad "-g: with --compare the log's" --topology topologies/h100x8-hgx.json --compare tests/data/nccl-tests/h100-8gpu-single-node-together-ag-220043.txt -g 8
check_bad "-g: expected a count of GPUs >= 1, not 0" --topology topologies/h100x8-hgx.json --op all_reduce -g 0
# p4d's EFA: the plugin forces Simple (the topology's nccl_proto) and reports
# 75 us; every row is Simple and the header names the fabric's step
"$bin" coll --topology topologies/aws-p4d-efa.json --op all_reduce -b 8 -e 1G -f 8 |
  awk '/^ *[0-9]/ && $NF !~ /\/simple$/ {bad = 1} END {exit bad}' || fail "coll p4d: a row not Simple"
"$bin" coll --topology topologies/aws-p4d-efa.json --op all_reduce -b 1M -e 1M |
  grep -q "proto simple (the topology's)" || fail "coll p4d: the header does not name the topology's protocol"
# NCCL_ALGO / NCCL_PROTO lists: the tuner chooses among the listed only
# (GCP's a3-mega profile: Ring,Tree and Simple); ^ excludes
rows() { "$bin" coll --topology topologies/gcp-a3mega.json --op all_reduce -b 8 -e 8G "$@" | awk '/^ *[0-9]/ {print $NF}'; }
[ -z "$(rows --algo Ring,Tree --proto Simple | grep -v '^\(ring\|tree\)/simple$')" ] ||
  fail "coll --algo Ring,Tree --proto Simple: a row outside the lists"
rows --algo Ring,Tree --proto Simple | grep -q '^ring/' && rows --algo Ring,Tree --proto Simple | grep -q '^tree/' ||
  fail "coll --algo Ring,Tree: the tuner never chose one of the two"
rows --algo '^nvls,nvls_tree' | grep -q '^nvls' && fail "coll --algo ^nvls,nvls_tree: an NVLS row"
"$bin" coll --topology topologies/h100-ib-fattree.json --nodes 2 --op all_reduce -b 1M -e 1M --algo ring,tree --proto simple |
  grep -q "algo ring,tree, proto simple" || fail "coll: the header does not name the lists"
check_bad "--algo: expected auto, ring" --topology topologies/h100x8-hgx.json --op all_reduce --algo ring,treee
check_bad "--proto: expected auto, ll" --topology topologies/h100x8-hgx.json --op all_reduce --proto simple,
awk -v a="$b16" -v b="$b24" 'BEGIN { exit !(a > 300 && a <= 320 && b > 340) }' ||
  fail "ring busbw with 16 CTAs $b16, with NCCL_MIN_CTAS=24 $b24: want <= 320 and > 340 GB/s"
# rank lines that are an excerpt (the GB200 NVL72 log keeps "Rank 71" alone) do not
# say how many ranks ran: --ranks is asked for, and one below the highest rank refused
nvl=tests/data/nccl-tests/gb200-nvl72-1rack-72gpu-coreweave-pr43.txt
check_bad "lines are an excerpt); give --ranks" --topology topologies/gb200-nvl72.json --compare "$nvl"
check_bad "names rank 71; --ranks 8 is too few" --topology topologies/gb200-nvl72.json --compare "$nvl" --ranks 8 --nodes 1
"$bin" coll --topology topologies/gb200-nvl72.json --compare "$nvl" --ranks 72 --nodes 1 >"$out/nvl" 2>&1 || fail "NVL72 compare exited $?"
grep -q "72 ranks on 1 node" "$out/nvl" || fail "NVL72 compare: 72 ranks on 1 node"
check_bad "-b: expected" --topology topologies/h100x8-hgx.json --op all_gather -b 1X
check_bad "cannot read" --topology topologies/h100x8-hgx.json --compare no-such-log.txt
check_bad "give --ranks and --nodes" --topology topologies/h100-ib-fattree.json \
  --compare tests/data/nccl-tests/h100-2node-1gpu-tree-4nic-prohuper.txt
# nccl-tests logs: times of 0 (which any model would match, "median error
# 0.0%") and a size past 2^64 (which strtoull saturated, read as 0 bytes).
check_bad "column 6 (out-of-place time): expected a positive time in us, found \"0.00\"" \
  --topology topologies/h100x8-hgx.json --compare tests/bad-inputs/ncclt-zero-times.txt
check_bad "column 1 (size): expected a byte count below 2^64, found \"12345678901234567890123\"" \
  --topology topologies/h100x8-hgx.json --compare tests/bad-inputs/ncclt-size-23-digits.txt
# A calibration curve fitted from 1 MiB up with a negative intercept (-5 us):
# extrapolated below 1 MiB it would predict <= 0 us (it did: 0.00). There the
# model's own latency is the floor: the time the uncalibrated model gives at
# 1 byte, where its bandwidth term is ~0 (11.00 us on h100x8-hgx, ring/LL).
printf '{"source": "test: a fit with a negative intercept", "card": "NVIDIA H100 80GB HBM3", "collectives": [{"op": "all_gather", "ranks": 8, "nodes": 1, "regimes": [{"min_bytes": 1048576, "max_bytes": 8589934592, "alpha_us": -5, "beta_GBps": 100}]}]}' >"$out/negalpha.json"
"$bin" coll --topology topologies/h100x8-hgx.json --op all_gather -b 1 -e 1 >"$out/floor" 2>&1 || fail "floor run exited $?"
"$bin" coll --topology topologies/h100x8-hgx.json --calibration "$out/negalpha.json" --op all_gather \
  -b 1K -e 64K -f 8 >"$out/below" 2>&1 || fail "below-range run exited $?"
floor=$(awk '/^ *[0-9]/ {print $6}' "$out/floor")
below=$(awk '/^ *[0-9]/ {print $6}' "$out/below" | sort -u)
[ -n "$floor" ] && [ "$floor" != "0.00" ] && [ "$below" = "$floor" ] ||
  fail "below the fitted range: times '$below', want the model's floor '$floor'"
# Every shipped topology loads and predicts a collective.
for t in topologies/*.json; do
  "$bin" coll --topology "$t" --op all_reduce -b 1M -e 1M >"$out/t" 2>&1 &&
    grep -q "^ *1048576 " "$out/t" || fail "$t: $(head -3 "$out/t")"
done
# DGX B200's NVLink 5 carries 900 GB/s per direction per GPU, HGX H100's
# NVLink 4 450 (the two datasheets): a 1 GiB ring all_gather in one node,
# bound by those links, runs at twice the bus bandwidth, less the ring's
# latency share.
busbw() { "$bin" coll --topology "topologies/$1.json" --op "$2" --algo "$3" -b "$4" -e "$4" |
  awk '/^ *[0-9]/ {print $8}'; }
b200=$(busbw dgx-b200 all_gather ring 1G) h100=$(busbw h100x8-hgx all_gather ring 1G)
awk -v a="$b200" -v b="$h100" 'BEGIN { r = a / b; exit !(r > 1.9 && r <= 2.0) }' ||
  fail "B200 / H100 ring all_gather bus bandwidth at 1 GiB: $b200 / $h100, want 1.9-2.0x"
# NVLS all_reduce runs at the switch's reduction rate, NCCL's nvlsEfficiency
# of the link: 0.85 on Hopper, 0.74 on Blackwell (src/graph/tuning.cc), so at
# 4 GiB B200 / H100 is (900 x 0.74) / (450 x 0.85) = 1.74.
b200=$(busbw dgx-b200 all_reduce nvls 4G) h100=$(busbw h100x8-hgx all_reduce nvls 4G)
awk -v a="$b200" -v b="$h100" 'BEGIN { r = a / b; exit !(r > 1.71 && r < 1.77) }' ||
  fail "B200 / H100 NVLS all_reduce bus bandwidth at 4 GiB: $b200 / $h100, want 1.74x"
# CollNet (docs/TOPOLOGY.md, "CollNet"): off unless asked for; with
# --collnet 1 on the B200 fat tree (fabric "sharp") a 4-node 16 GiB
# all_reduce runs collnet at the NICs, 8 x 48 GB/s x NCCL's 0.85 = 326 GB/s
# algbw (the rest is latency); on a fabric without "sharp" it is refused by
# name.
"$bin" coll --topology topologies/b200-ib-fattree.json --nodes 4 --op all_reduce -b 16G -e 16G \
  >"$out/off" 2>&1 && ! grep -q collnet "$out/off" || fail "collnet without --collnet: $(tail -1 "$out/off")"
"$bin" coll --topology topologies/b200-ib-fattree.json --nodes 4 --op all_reduce -b 16G -e 16G \
  --collnet 1 >"$out/on" 2>&1 || fail "--collnet 1: $(head -3 "$out/on")"
grep -q "^# CollNet is on" "$out/on" || fail "--collnet 1: no CollNet line in $(head -3 "$out/on")"
awk '/^ *[0-9]/ { exit !($9 == "collnet/simple" && $7 > 320 && $7 < 326.4) }' "$out/on" ||
  fail "--collnet 1, 4 x 8 B200, 16 GiB: want collnet/simple at 320-326 GB/s algbw: $(tail -1 "$out/on")"
# At 2 nodes NVLS_TREE's in-switch reduction beats it (flapping-airplanes'
# report: NVLSTree 719.7 GB/s busbw against CollnetDirect 598.0 at 32 GiB).
"$bin" coll --topology topologies/b200-ib-fattree.json --nodes 2 --op all_reduce -b 32G -e 32G \
  --collnet 1 >"$out/two" 2>&1 || fail "--collnet 1 at 2 nodes: $(head -3 "$out/two")"
awk '/^ *[0-9]/ { exit !($9 == "nvls_tree/simple") }' "$out/two" ||
  fail "--collnet 1, 2 x 8 B200, 32 GiB: want nvls_tree/simple: $(tail -1 "$out/two")"
"$bin" coll --topology topologies/dgx-a100-80gb-hdr.json --op all_reduce --collnet 1 >"$out/no" 2>&1
[ $? -eq 2 ] && grep -q 'no "sharp": true' "$out/no" || fail "--collnet 1 without sharp: $(head -2 "$out/no")"
rm -rf "$out"
[ $fails -eq 0 ] && echo "coll: all passed"
[ $fails -eq 0 ]
