#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for SECONDS (default
# 60). The scenario targets (json, scenario, run) are seeded with the shipped
# scenarios (their model and topology inlined, so the fuzzer starts inside
# every parser); ncclt with the nccl-tests logs of tests/data/nccl-tests,
# profile with calib/profiles, dsconfig with configs/deepspeed (as inline
# sharding sections: "strategy": "deepspeed" added) and hfconfig with
# models/hf, ttconfig (torchtitan TOML) with configs/torchtitan. Prints one line per target with
# executions, coverage and crashes; a crash leaves its input in
# build-fuzz/TARGET-crash-* and fails the script. Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v clang >/dev/null || { echo "fuzz: clang is needed (apt-get install clang libclang-rt-14-dev)"; exit 2; }
cmake -S . -B build-fuzz -DSS_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSS_NO_MPI=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
corpus=build-fuzz/corpus
rm -rf "$corpus" build-fuzz/*-crash-* build-fuzz/*-leak-* build-fuzz/*-timeout-* build-fuzz/*-oom-*
mkdir -p "$corpus/seed"
python3 - "$corpus/seed" <<'PY' 2>/dev/null || cp scenarios/*/*.json "$corpus/seed/"
import json, os, sys, glob
out = sys.argv[1]
def inline(path, key, d):
    v = d.get(key)
    if isinstance(v, str):
        p = os.path.normpath(os.path.join(os.path.dirname(path), v))
        sub = json.load(open(p))
        if key == "topology": inline(p, "device", sub)
        d[key] = sub
for i, f in enumerate(sorted(glob.glob("scenarios/**/*.json", recursive=True))):
    d = json.load(open(f))
    inline(f, "model", d); inline(f, "topology", d)
    json.dump(d, open(os.path.join(out, "s%02d.json" % i), "w"))
PY
cp tests/bad-inputs/*.json "$corpus/seed/" 2>/dev/null || true
for t in json scenario run; do mkdir -p "$corpus/$t" && cp "$corpus"/seed/* "$corpus/$t/"; done
mkdir -p "$corpus/ncclt" "$corpus/profile" "$corpus/dsconfig" "$corpus/hfconfig" "$corpus/ttconfig"
cp configs/torchtitan/*.toml "$corpus/ttconfig/"
cp tests/data/nccl-tests/*.txt "$corpus/ncclt/"
cp calib/profiles/*.json "$corpus/profile/"
cp models/hf/*.json "$corpus/hfconfig/"
python3 - "$corpus/dsconfig" <<'PY' 2>/dev/null || cp configs/deepspeed/*.json "$corpus/dsconfig/"
import json, os, sys, glob
out = sys.argv[1]
for f in sorted(glob.glob("configs/deepspeed/*.json")):
    d = {"strategy": "deepspeed"}
    d.update(json.load(open(f)))
    json.dump(d, open(os.path.join(out, os.path.basename(f)), "w"))
for f in sorted(glob.glob("scenarios/**/*.json", recursive=True)):
    sh = json.load(open(f)).get("sharding")
    if isinstance(sh, dict) and sh.get("strategy") == "deepspeed":
        json.dump(sh, open(os.path.join(out, "inline-" + os.path.basename(f)), "w"))
PY
status=0
for t in json scenario run ncclt profile dsconfig hfconfig ttconfig; do
  log=build-fuzz/fuzz_$t.log
  if ! build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$secs" -max_len=65536 -timeout=10 \
       -rss_limit_mb=4096 -artifact_prefix=build-fuzz/$t- -print_final_stats=1 "$corpus/$t" >"$log" 2>&1; then
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  crashes=$(find build-fuzz -maxdepth 1 \( -name "$t-crash-*" -o -name "$t-leak-*" -o -name "$t-timeout-*" -o -name "$t-oom-*" \) | wc -l)
  echo "fuzz_$t: ${secs}s, $execs executions, coverage $cov edges, $crashes crashes"
done
exit $status
