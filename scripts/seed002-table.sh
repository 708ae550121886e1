#!/usr/bin/env bash
# Prints the README's seeds/002 table: measured (shared/validation/
# seed002-v100x4.md) beside what shardsim predicts. Needs a built shardsim
# (build/shardsim) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/shardsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in zero0_ddp zero1_zro zero2_fsdp_sgo zero3_full_shard_pre zero3_full_shard_post zero3_full_shard_none; do
  "$bin" run "scenarios/seed002/$f.json" --quiet --json "$tmp/$f.json"
done
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
# measured: steady MiB, peak MiB, median step ms (seed002-v100x4.md)
rows = [("zero0_ddp", "ZeRO-0 DDP", 528.25, 784.50, 8.320),
        ("zero1_zro", "ZeRO-1 ZRO", 336.25, 496.50, 7.354),
        ("zero2_fsdp_sgo", "FSDP SHARD_GRAD_OP", 144.25, 273.50, 18.738),
        ("zero3_full_shard_pre", "FULL_SHARD PRE", 144.25, 200.75, 20.573),
        ("zero3_full_shard_post", "FULL_SHARD POST", 144.25, 188.50, 20.583),
        ("zero3_full_shard_none", "FULL_SHARD None", 144.25, 188.50, 23.123)]
M = 2.0 ** 20
print("| config | P/G/O MiB | steady meas. | steady pred. | peak meas. | peak pred. | step meas. | step pred. | exposed comm pred. |")
print("|---|---|---|---|---|---|---|---|---|")
for f, name, st, pk, ms in rows:
    j = json.load(open("%s/%s.json" % (d, f)))
    r = j["memory"]["per_rank"][0]
    pgo = "%g/%g/%g" % (r["param_bytes"] / M, r["grad_bytes"] / M, r["optim_bytes"] / M)
    print("| %s | %s | %.2f | %.2f | %.2f | %.2f (%+.1f%%) | %.3f ms | %.3f ms | %.3f ms |" % (
        name, pgo, st, j["memory"]["max_steady_bytes"] / M, pk,
        j["memory"]["max_peak_allocated_bytes"] / M,
        100.0 * (j["memory"]["max_peak_allocated_bytes"] / M - pk) / pk, ms,
        j["step_time_s"] * 1e3, j["time"]["exposed_communication_s"] * 1e3))
PY
