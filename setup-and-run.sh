#!/usr/bin/env bash
# Install dependencies, build shardsim, and simulate one example scenario:
# seeds/002's FSDP FULL_SHARD step on 4 x V100. The JSON summary lands in
# build/summary.json.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target shardsim >/dev/null
build/shardsim run scenarios/seed002/zero3_full_shard_pre.json --json build/summary.json
echo
echo "JSON summary: build/summary.json"
