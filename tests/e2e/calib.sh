#!/usr/bin/env bash
# shardsim-calib end to end: the committed profiles are regenerated from the
# logs in tests/data/nccl-tests/ byte for byte; profiles load back (show);
# bad input exits 2 with a message naming the file and line or JSON path,
# and leaves no output behind; a fit from a harness measurement file works.
# Usage: calib.sh BIN SOURCE_DIR HAS_CUDA. SS_WRAP runs BIN under a wrapper.
set -u
SS_WRAP=${SS_WRAP:-}
bin=$1
cd "$2" || exit 1
cuda=${3:-0}
fails=0; total=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=tests/data/nccl-tests
log8=$data/h100-8gpu-single-node-together.txt
log16=$data/h100-2node-16gpu-gcp-a3mega-ztan.txt
rings=(--table all_reduce_ring.out --table all_gather_ring.out --table reduce_scatter_ring.out)

fail() { echo "FAIL: $1"; sed 's/^/    /' "$tmp/out" "$tmp/err"; fails=$((fails + 1)); }

# expect CODE FRAGMENT ARGS...: exit CODE, FRAGMENT in stdout or stderr.
expect() {
  local code=$1 frag=$2
  shift 2
  total=$((total + 1))
  $SS_WRAP "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ] || ! cat "$tmp/out" "$tmp/err" | grep -qF -- "$frag"; then
    fail "shardsim-calib $*: exit $rc (want $code), wanted \"$frag\""
    return 1
  fi
}

expect 0 "usage: shardsim-calib fit --nccl-tests FILE" help

# The committed profiles are what the fitter makes of the logs today.
expect 0 "wrote $tmp/a3mega.json" fit --nccl-tests "$log16" -o "$tmp/a3mega.json" &&
  { cmp -s "$tmp/a3mega.json" calib/profiles/h100-2node-a3mega.json ||
    fail "calib/profiles/h100-2node-a3mega.json differs from a fresh fit of $log16"; }
expect 0 "leave-one-size-out median" fit --nccl-tests "$log8" "${rings[@]}" -o "$tmp/together.json" &&
  { cmp -s "$tmp/together.json" calib/profiles/h100-8gpu-together.json ||
    fail "calib/profiles/h100-8gpu-together.json differs from a fresh fit of $log8"; }
expect 0 "all_reduce on 16 ranks, 2 nodes" show calib/profiles/h100-2node-a3mega.json
expect 0 "reduce_scatter on 8 ranks, 1 node" show calib/profiles/h100-8gpu-together.json

# A broken row: exit 2 naming file:line and the column, and no profile.
sed '40s/147\.1/14x.1/' "$log16" >"$tmp/bad.txt"
expect 2 "$tmp/bad.txt:40: column 6 (out-of-place time)" fit --nccl-tests "$tmp/bad.txt" -o "$tmp/bad.json"
total=$((total + 1))
if ls "$tmp" | grep -q '^bad\.json'; then fail "a failed fit left $(ls "$tmp" | grep bad.json)"; fi

expect 2 "choose with --table" fit --nccl-tests "$log8" -o "$tmp/x.json"
expect 2 "no all_gather table among the selected ones" fit --nccl-tests "$log16" --op all_gather -o "$tmp/x.json"
expect 2 "no table labelled \"nope\"" fit --nccl-tests "$log8" --table nope -o "$tmp/x.json"

# Rows alone: the op, the ranks and the nodes must come from the command line.
sed -n '33,63p' "$log16" >"$tmp/rows.txt"
expect 2 "$tmp/rows.txt:1: cannot tell which collective" fit --nccl-tests "$tmp/rows.txt" -o "$tmp/x.json"
expect 2 "give --ranks N" fit --nccl-tests "$tmp/rows.txt" --op all_reduce -o "$tmp/x.json"
expect 2 "give --nodes N" fit --nccl-tests "$tmp/rows.txt" --op all_reduce --ranks 16 -o "$tmp/x.json"
expect 0 "all_reduce on 16 ranks, 2 nodes" fit --nccl-tests "$tmp/rows.txt" --op all_reduce --ranks 16 --nodes 2 -o "$tmp/x.json"
expect 2 "but --ranks says 8" fit --nccl-tests "$log16" --ranks 8 -o "$tmp/x.json"

# A harness measurement file (synthetic: known curves with a 1% ripple).
cat >"$tmp/meas.json" <<'EOF'
{"card": "synthetic H100", "driver": "550.54", "cuda": "12.4", "nccl": "2.21.5", "date": "2025-01-01", "host": "test",
 "peak_tflops": {"bf16": 989.4},
 "gemm": [
  {"dtype": "bf16", "m": 256, "n": 256, "k": 256, "time_us": 0.6373, "tflops": 52.65},
  {"dtype": "bf16", "m": 512, "n": 512, "k": 512, "time_us": 2.054, "tflops": 130.7},
  {"dtype": "bf16", "m": 1024, "n": 1024, "k": 1024, "time_us": 7.493, "tflops": 286.6},
  {"dtype": "bf16", "m": 2048, "n": 2048, "k": 2048, "time_us": 35.67, "tflops": 481.7},
  {"dtype": "bf16", "m": 4096, "n": 4096, "k": 4096, "time_us": 210.4, "tflops": 653.1},
  {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192, "time_us": 1502, "tflops": 731.8},
  {"dtype": "bf16", "m": 16384, "n": 16384, "k": 16384, "time_us": 1.135e+04, "tflops": 774.8}],
 "copy": [
  {"kind": "h2d", "pinned": true, "bytes": 4096, "time_us": 8.245},
  {"kind": "h2d", "pinned": true, "bytes": 16384, "time_us": 8.595},
  {"kind": "h2d", "pinned": true, "bytes": 65536, "time_us": 10.66},
  {"kind": "h2d", "pinned": true, "bytes": 262144, "time_us": 18.3},
  {"kind": "h2d", "pinned": true, "bytes": 1048576, "time_us": 50.34},
  {"kind": "h2d", "pinned": true, "bytes": 4194304, "time_us": 175.2},
  {"kind": "h2d", "pinned": true, "bytes": 16777216, "time_us": 683.2},
  {"kind": "h2d", "pinned": true, "bytes": 67108864, "time_us": 2679},
  {"kind": "h2d", "pinned": true, "bytes": 268435456, "time_us": 1.077e+04},
  {"kind": "d2d", "bytes": 4096, "time_us": 4.958},
  {"kind": "d2d", "bytes": 16384, "time_us": 5.061},
  {"kind": "d2d", "bytes": 65536, "time_us": 5.008},
  {"kind": "d2d", "bytes": 262144, "time_us": 5.195},
  {"kind": "d2d", "bytes": 1048576, "time_us": 5.642},
  {"kind": "d2d", "bytes": 4194304, "time_us": 7.859},
  {"kind": "d2d", "bytes": 16777216, "time_us": 16.14},
  {"kind": "d2d", "bytes": 67108864, "time_us": 50.04},
  {"kind": "d2d", "bytes": 268435456, "time_us": 183}],
 "launch_us": 4.2,
 "collectives": [
  {"op": "all_gather", "ranks": 8, "bytes": 1048576, "time_us": 43.08},
  {"op": "all_gather", "ranks": 8, "bytes": 2097152, "time_us": 45.58},
  {"op": "all_gather", "ranks": 8, "bytes": 4194304, "time_us": 52.5},
  {"op": "all_gather", "ranks": 8, "bytes": 8388608, "time_us": 63.52},
  {"op": "all_gather", "ranks": 8, "bytes": 16777216, "time_us": 88.29},
  {"op": "all_gather", "ranks": 8, "bytes": 33554432, "time_us": 134.5},
  {"op": "all_gather", "ranks": 8, "bytes": 67108864, "time_us": 233.6},
  {"op": "all_gather", "ranks": 8, "bytes": 134217728, "time_us": 422.2},
  {"op": "all_gather", "ranks": 8, "bytes": 268435456, "time_us": 811.8},
  {"op": "all_gather", "ranks": 8, "bytes": 536870912, "time_us": 1566},
  {"op": "all_gather", "ranks": 8, "bytes": 1073741824, "time_us": 3114}]}
EOF
expect 0 "copy h2d_pinned" fit --measurements "$tmp/meas.json" -o "$tmp/m.json" &&
  expect 0 "kernel launch 4.2 us" show "$tmp/m.json" &&
  expect 0 "  bf16        989.4" show "$tmp/m.json"
sed 's/"peak_tflops": {"bf16": 989.4},//' "$tmp/meas.json" >"$tmp/nopeak.json"
expect 2 "$tmp/nopeak.json: \$.gemm: no peak rate for bf16" fit --measurements "$tmp/nopeak.json" -o "$tmp/x.json"
expect 0 "copy d2d" fit --measurements "$tmp/nopeak.json" --peak bf16=989.4 -o "$tmp/x.json"
sed 's/"ranks": 8, "bytes": 1048576/"rank": 8, "bytes": 1048576/' "$tmp/meas.json" >"$tmp/badkey.json"
expect 2 "$tmp/badkey.json: \$.collectives[0]: unknown key \"rank\"" fit --measurements "$tmp/badkey.json" -o "$tmp/x.json"
sed 's/"alpha_us": [0-9.e+-]*/"alpha_us": "fast"/' calib/profiles/h100-2node-a3mega.json >"$tmp/badprof.json"
expect 2 "$tmp/badprof.json: \$.collectives[0].regimes[0].alpha_us" show "$tmp/badprof.json"

# The command line.
expect 2 "fit needs exactly one of --nccl-tests FILE and --measurements FILE" fit -o "$tmp/x.json"
expect 2 "fit needs -o PROFILE.json" fit --nccl-tests "$log16"
expect 2 "--peak applies to --measurements" fit --nccl-tests "$log16" --peak bf16=1 -o "$tmp/x.json"
expect 2 "unknown command: frobnicate" frobnicate
expect 2 "cannot read file" fit --nccl-tests "$tmp/missing.txt" -o "$tmp/x.json"
if [ "$cuda" = 0 ]; then
  expect 1 "shardsim-calib was built without CUDA; the harness verbs need the CUDA toolkit" gemm
fi
echo "$((total - fails)) passed, $fails failed"
[ $fails -eq 0 ]
