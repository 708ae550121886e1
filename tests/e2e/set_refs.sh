#!/usr/bin/env bash
# --set through the files a scenario names: an override that reaches into
# the model, the topology (also behind {"file", "nodes"}), the device a topology names or a DeepSpeed
# config file gives the summary of a scenario naming an edited copy of that
# file, and leaves the file itself as it was.
. "$(dirname "$0")/lib.sh" "$@"
if ! command -v python3 >/dev/null; then echo "SKIP: python3 not found"; exit 0; fi
# edit FILE KEY.PATH VALUE OUT: a copy of FILE with one key changed (JSON value)
edit() { python3 - "$@" <<'PY'
import json, sys, os
src, path, val, out = sys.argv[1:5]
d = json.load(open(src))
cur = d
keys = path.split(".")
for k in keys[:-1]:
    cur = cur[k]
cur[keys[-1]] = json.loads(val)
# the copy's own relative references, made absolute as the loader would read them
for k in ("device", "hf_config"):
    if isinstance(d.get(k), str) and not d[k].startswith("/"):
        d[k] = os.path.abspath(os.path.join(os.path.dirname(src), d[k]))
json.dump(d, open(out, "w"))
PY
}
meg=scenarios/published/megatron-core-r0.8-gpt-70b-tp8-pp2-dp48-768xh100.json
sum0=$(sha256sum models/megatron-gpt-70b.json topologies/h100-ib-fattree.json topologies/devices/h100-sxm5-80gb.json configs/deepspeed/zero3-bf16.json)

"$bin" run $meg --quiet --json "$d/a.json" --set model.architecture.layers=40
edit models/megatron-gpt-70b.json architecture.layers 40 "$d/model.json"
"$bin" run $meg --quiet --json "$d/b.json" --set "model=$d/model.json"
check "model.architecture.layers through the model file" 'cmp -s "$d/a.json" "$d/b.json"'

"$bin" run $meg --quiet --json "$d/a.json" --set topology.fabric.GBps=25
edit topologies/h100-ib-fattree.json fabric.GBps 25 "$d/topo.json"
"$bin" run $meg --quiet --json "$d/b.json" --set "topology.file=$d/topo.json"
check "topology.fabric.GBps through {file, nodes}, the node count kept" 'cmp -s "$d/a.json" "$d/b.json"'
"$bin" run $meg --quiet --json "$d/c.json"
check "... and it changed the step" '! cmp -s "$d/a.json" "$d/c.json"'

# a wrapper's own fabric: the file's fabric replaced, as the edited copy of the file gives it
python3 - "$meg" "$d/wrapped.json" <<'PY'
import json, os, sys
src, out = sys.argv[1:3]
d = json.load(open(src))
t = d["topology"]
t["file"] = os.path.abspath(os.path.join(os.path.dirname(src), t["file"]))
f = json.load(open(t["file"]))["fabric"]
f["GBps"] = 25
t["fabric"] = f
d["model"] = os.path.abspath(os.path.join(os.path.dirname(src), d["model"]))
json.dump(d, open(out, "w"))
PY
"$bin" run "$d/wrapped.json" --quiet --json "$d/w.json"
check "topology {file, nodes, fabric} runs the file's nodes joined by its own fabric" 'cmp -s "$d/a.json" "$d/w.json"'
"$bin" run "$d/wrapped.json" --quiet --json "$d/w50.json" --set topology.fabric.GBps=50
check "... and --set topology.fabric.GBps edits the wrapper's fabric" 'cmp -s "$d/c.json" "$d/w50.json"'

# a key of the device a topology names by path: the device file is read in too
edit topologies/devices/h100-sxm5-80gb.json gemm_efficiency 0.6 "$d/dev.json"
for sc in $meg scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json; do
  "$bin" run $sc --quiet --json "$d/a.json" --set topology.device.gemm_efficiency=0.6
  "$bin" run $sc --quiet --json "$d/b.json" --set "topology.device=$d/dev.json"
  check "topology.device.gemm_efficiency through $(basename $sc)'s topology and its device file" 'cmp -s "$d/a.json" "$d/b.json"'
done

ds=scenarios/deepspeed/llama3-8b-zero3-8xh100.json
"$bin" run $ds --quiet --json "$d/a.json" --set sharding.zero_optimization.stage=2
edit configs/deepspeed/zero3-bf16.json zero_optimization.stage 2 "$d/ds.json"
"$bin" run $ds --quiet --json "$d/b.json" --set "sharding=$d/ds.json"
check "sharding.zero_optimization.stage through the DeepSpeed config file" 'cmp -s "$d/a.json" "$d/b.json"'

"$bin" run scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json --quiet --json "$d/a.json" --set topology.gpus_per_node=8
"$bin" run scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json --quiet --json "$d/b.json"
check "a topology named by path keeps its device (a no-op override changes nothing)" 'cmp -s "$d/a.json" "$d/b.json"'

"$bin" run scenarios/seed002/zero0_ddp.json --quiet --set model.nope=1 2>"$d/err"
rc=$?
check "an unknown key inside the model is refused at its path" '[ $rc -eq 2 ] && grep -q "\$.model: unknown key \"nope\"" "$d/err"'
check "the named files are unchanged" '[ "$(sha256sum models/megatron-gpt-70b.json topologies/h100-ib-fattree.json topologies/devices/h100-sxm5-80gb.json configs/deepspeed/zero3-bf16.json)" = "$sum0" ]'
echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
