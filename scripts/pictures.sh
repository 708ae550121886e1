#!/usr/bin/env bash
# Redraw the pictures the README shows (docs/img/*.png and
# docs/seed002-full-shard-pre.{dot,svg}) from a build's shardsim (default
# build/shardsim). Needs Graphviz (neato) and rsvg-convert (Debian:
# librsvg2-bin); not part of the tests. PNGs are 1600 px wide on white.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/shardsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seed=scenarios/seed002
"$bin" run $seed/zero3_full_shard_pre.json --quiet --dot docs/seed002-full-shard-pre.dot \
    --svg docs/seed002-full-shard-pre.svg
"$bin" run scenarios/multinode/llama3-8b-full-shard-4x8xh100.json --quiet --svg "$tmp/timeline-32-ranks.svg"
"$bin" run $seed/zero3_full_shard_pre.json --quiet --set 'runtime.stragglers=[{"rank": 2, "factor": 1.5}]' \
    --svg "$tmp/timeline-straggler.svg"
"$bin" diff $seed/zero2_fsdp_sgo.json $seed/zero0_ddp.json --svg "$tmp/diff-memory-scale.svg" >/dev/null
"$bin" sweep $seed/zero3_full_shard_pre.json --vary sharding.strategy=full_shard,shard_grad_op,ddp \
    --vary parallel.dp=2,4,8 -o /dev/null --svg "$tmp/sweep-bars.svg" 2>/dev/null
for f in "$tmp"/*.svg; do
  rsvg-convert -w 1600 -b white "$f" -o "docs/img/$(basename "${f%.svg}").png"
done
echo "pictures written under docs/img/"
