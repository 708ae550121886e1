#!/usr/bin/env bash
# memory.usable_bytes and memory.fits (docs/MEMORY.md, DECISIONS 78): on an
# H100 80GB usable is CUDA's total (85,045,477,376 bytes, the device file's
# cuda_total_bytes) less the 2 GiB process reserve = 82,897,993,728, below
# the 85,899,345,920 capacity. The allocator runs out where the process
# does (DECISIONS 107): the shipped FSDP2 SAC scenario would cache more than
# usable, so at the limit it frees its cached segments and maps again, as
# PyTorch's does (an allocation retry), and fits with its peak reserved at
# most usable; with a reserve of 0 it fits with no more retries than that;
# at a capacity of 60 GiB, below its 67 GiB allocated, it does not fit; a capacity below
# usable wins; a device file without cuda_total_bytes (the V100 of
# seeds/002) is judged against its capacity.
. "$(dirname "$0")/lib.sh" "$@"
if ! command -v python3 >/dev/null; then echo "SKIP: python3 not found"; exit 0; fi
key() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['memory']; print(json.dumps(m[sys.argv[2]]))" "$@"; }
sc=scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json
"$bin" run $sc --quiet --no-expect --json "$d/a.json"
check "H100 usable = CUDA total - 2 GiB" '[ "$(key "$d/a.json" usable_bytes)" = 82897993728 ]'
check "... capacity unchanged" '[ "$(key "$d/a.json" capacity_bytes)" = 85899345920 ]'
check "... it fits after freeing the cache: retries, reserved at most usable" \
  '[ "$(key "$d/a.json" fits)" = true ] && [ "$(key "$d/a.json" max_alloc_retries)" -ge 1 ] &&
   [ "$(key "$d/a.json" max_peak_reserved_bytes)" -le 82897993728 ]'
python3 - "$d" <<'PY'
import json, os, sys
d = sys.argv[1]
dev = json.load(open("topologies/devices/h100-sxm5-80gb.json"))
dev["process_reserve_bytes"] = 0
json.dump(dev, open(os.path.join(d, "dev0.json"), "w"))
dev["process_reserve_bytes"] = dev["cuda_total_bytes"]
json.dump(dev, open(os.path.join(d, "devbad.json"), "w"))
PY
"$bin" run $sc --quiet --no-expect --json "$d/b.json" --set "topology={\"file\": \"$PWD/topologies/h100x8-hgx.json\", \"device\": \"$d/dev0.json\"}"
check "a reserve of 0: usable is the CUDA total and the step fits, with no more retries" \
  '[ "$(key "$d/b.json" usable_bytes)" = 85045477376 ] && [ "$(key "$d/b.json" fits)" = true ] &&
   [ "$(key "$d/b.json" max_alloc_retries)" -le "$(key "$d/a.json" max_alloc_retries)" ]'
"$bin" run $sc --quiet --no-expect --json "$d/c.json" --set allocator.capacity_bytes=64424509440
check "a capacity below it is the usable (60 GiB), below the peak allocated: no fit" \
  '[ "$(key "$d/c.json" usable_bytes)" = 64424509440 ] && [ "$(key "$d/c.json" fits)" = false ]'
"$bin" run scenarios/seed002/zero0_ddp.json --quiet --no-expect --json "$d/e.json"
check "no cuda_total_bytes: usable is the capacity" \
  '[ "$(key "$d/e.json" usable_bytes)" = "$(key "$d/e.json" capacity_bytes)" ]'
err=$("$bin" run $sc --quiet --set "topology={\"file\": \"$PWD/topologies/h100x8-hgx.json\", \"device\": \"$d/devbad.json\"}" 2>&1); rc=$?
check "a reserve of the whole total is an error" '[ $rc -eq 2 ] && echo "$err" | grep -q "process_reserve_bytes: a reserve of 85045477376 bytes leaves nothing"'
echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
