#!/usr/bin/env python3
"""Regenerates the bad-input corpus (tests/bad-inputs/*.json) and cases.txt.

Each case is one invalid scenario (or an override of a valid one) with the
exit code and the message fragment shardsim must print. The files are
committed; this script only documents how they were made and makes new ones.
Run from the repository root: python3 tests/bad-inputs/generate.py
"""
import copy, json, os

D = "tests/bad-inputs"
base = json.load(open("scenarios/seed002/zero3_full_shard_pre.json"))
for k in ("assumptions", "description", "expect"):
    base.pop(k, None)
base["name"] = "bad input"
base["model"] = "../../models/seed002-mlp8.json"
base["topology"] = "../../topologies/v100x4-sxm2.json"
model = json.load(open("models/seed002-mlp8.json"))
topo = json.load(open("topologies/v100x4-sxm2.json"))
topo["device"] = json.load(open("topologies/devices/v100-sxm2-32gb.json"))
inline = copy.deepcopy(base)
inline["model"], inline["topology"] = model, topo

cases = []

def put(path, value, d):
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    if value is DEL:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value

DEL = object()

def case(name, edits, frag, src=None, raw=None):
    fn = os.path.join(D, name)
    if raw is not None:
        open(fn, "wb").write(raw)
    else:
        d = copy.deepcopy(src if src is not None else inline)
        for path, value in edits:
            put(path, value, d)
        json.dump(d, open(fn, "w"), indent=1)
    cases.append("2|%s|%s" % (frag, fn))

M, T, V = ["model"], ["topology"], ["topology", "device"]
B0 = M + ["blocks", 0]
# types
case("type-name.json", [(["name"], 7)], "$.name: expected a string, found a number")
case("type-model.json", [(M, 3)], "$.model: expected a file path (string) or an inline object")
case("type-topology.json", [(T, [1])], "$.topology: expected a file path")
case("type-parallel.json", [(["parallel"], "4")], "$.parallel: expected an object")
case("type-training.json", [(["training"], [])], "$.training: expected an object")
case("type-precision.json", [(["precision", "param"], 32)], "$.precision.param: expected a string")
case("type-momentum.json", [(["optimizer"], {"type": "sgd", "momentum": "yes"})], "$.optimizer.momentum: expected true or false")
case("type-wrap.json", [(["sharding", "wrap"], "per_block")], "$.sharding.wrap: expected an object")
case("type-wrap-modules.json", [(["sharding", "wrap"], {"policy": "modules", "modules": "layers"})], "$.sharding.wrap.modules: expected an array")
case("type-wrap-module.json", [(["sharding", "wrap"], {"policy": "modules", "modules": [3]})], "$.sharding.wrap.modules[0]: expected a string")
case("type-hook.json", [(["runtime", "hook_us"], "fast")], "$.runtime.hook_us: expected a number")
case("type-init.json", [(["init"], {"mode": 1})], "$.init.mode: expected a string")
case("type-expect.json", [(["expect"], "fast")], "$.expect: expected an object")
case("type-expect-entry.json", [(["expect"], {"step_time_s": 1})], "$.expect.step_time_s: expected an object")
case("type-assumptions.json", [(["assumptions"], "none")], "$.assumptions: expected an array")
case("type-assumption.json", [(["assumptions"], [1])], "$.assumptions[0]: expected a string")
case("type-bias.json", [(B0 + ["bias"], 1)], "$.model.blocks[0].bias: expected true or false")
case("type-blocks.json", [(M + ["blocks"], {"a": 1})], "$.model.blocks: expected an array")
case("type-block.json", [(M + ["blocks"], [5])], "$.model.blocks[0]: expected an object")
case("type-peaks.json", [(V + ["peak_tflops"], 15.7)], "peak_tflops: expected an object")
# unknown keys
case("unknown-block-key.json", [(B0 + ["activation"], "relu")], 'unknown key "activation"')
case("unknown-topology-key.json", [(T + ["racks"], 2)], 'unknown key "racks"')
case("unknown-level-key.json", [(T + ["intra_node", "links"], 6)], 'unknown key "links"')
case("unknown-device-key.json", [(V + ["tdp_w"], 300)], 'unknown key "tdp_w"')
case("unknown-precision-key.json", [(["precision", "activations"], "bf16")], 'unknown key "activations"')
case("unknown-training-key.json", [(["training", "sequence_length"], 4096)], 'unknown key "sequence_length"')
case("unknown-parallel-key.json", [(["parallel", "tp"], 2)], 'unknown key "tp"')
case("unknown-runtime-key.json", [(["runtime", "threads"], 2)], 'unknown key "threads"')
case("unknown-allocator-key.json", [(["allocator"], {"pool": "large"})], 'unknown key "pool"')
case("unknown-top-key.json", [(["strategy"], "ddp")], 'unknown key "strategy" (allowed:')
# missing keys
case("missing-model-name.json", [(M + ["name"], DEL)], 'missing required key "name"')
case("missing-block-name.json", [(B0 + ["name"], DEL)], '$.model.blocks[0]: missing required key "name"')
case("missing-nodes.json", [(T + ["nodes"], DEL)], 'missing required key "nodes"')
case("missing-latency.json", [(T + ["intra_node", "latency_us"], DEL)], 'missing required key "latency_us"')
case("missing-hbm.json", [(V + ["hbm_bytes"], DEL)], 'missing required key "hbm_bytes"')
case("missing-peaks.json", [(V + ["peak_tflops"], DEL)], 'missing required key "peak_tflops"')
case("missing-optimizer-type.json", [(["optimizer"], {"impl": "foreach"})], 'missing required key "type"')
case("missing-micro-batch.json", [(["training"], {})], 'missing required key "micro_batch"')
case("missing-dp.json", [(["parallel"], {})], 'missing required key "dp"')
case("missing-inter-node.json", [(T + ["nodes"], 2)], 'missing required key "inter_node"')
# ranges and sizes
case("range-gemm-eff.json", [(V + ["gemm_efficiency"], 1.5)], "$.topology.device.gemm_efficiency: expected a number in")
case("range-mem-eff.json", [(V + ["mem_efficiency"], 0)], "mem_efficiency: expected a number in")
case("range-bw.json", [(V + ["hbm_bw_GBps"], -900)], "hbm_bw_GBps: expected a number in")
case("range-latency.json", [(T + ["intra_node", "latency_us"], -1)], "latency_us: expected a number in")
case("range-repeat.json", [(B0 + ["repeat"], 0)], "$.model.blocks[0].repeat: expected an integer in [1,")
case("range-gpus.json", [(T + ["gpus_per_node"], 0)], "gpus_per_node: expected an integer in [1,")
case("range-nodes.json", [(T + ["nodes"], 0)], "$.topology.nodes: expected an integer in [1,")
case("range-bucket.json", [(["sharding", "bucket_cap_mb"], 0)], "bucket_cap_mb: expected a number in")
case("range-micro-batch.json", [(["training", "micro_batch"], 2 ** 40)], "micro_batch: expected an integer in [1,")
case("range-dp.json", [(["parallel", "dp"], 2 ** 25)], "$.parallel.dp: expected an integer in [1,")
case("overflow-hbm.json", [(V + ["hbm_bytes"], 1e25)], "too large to be exact")
case("overflow-features.json", [(B0 + ["in"], 2 ** 33)], "$.model.blocks[0].in: expected an integer in [1,")
case("range-min-params.json", [(["sharding", "wrap"], {"policy": "size", "min_num_params": 0})], "min_num_params: expected an integer in [1,")
case("range-pct.json", [(["expect"], {"step_time_s": {"within_pct": -5, "value": 1}})], "within_pct: expected a number in")
case("dtype-fp64.json", [(["precision", "param"], "fp64")], 'expected one of "fp32", "fp16", "bf16", "fp8"; found "fp64"')
case("dtype-unsupported.json", [(["precision", "compute"], "bf16")], "$.precision.compute: device Tesla V100-SXM2-32GB has no bf16 peak rate")
case("duplicate-key.json", None, 'duplicate key "name"', raw=json.dumps(inline).replace('"name": "bad input"', '"name": "bad input", "name": "again"', 1).encode())
case("duplicate-expect.json", None, 'duplicate expectation for "step_time_s"', raw=json.dumps(inline).replace('"sharding"', '"expect": {"step_time_s": {"max": 1}, "step_time_s": {"max": 2}}, "sharding"', 1).encode())
case("deep-nesting.json", None, "nested deeper than 64 levels at line 1, column 65", raw=b"[" * 5000 + b"]" * 5000)
case("trailing-garbage.json", None, "malformed JSON at line 1", raw=json.dumps(inline).encode() + b" x")
case("not-an-object.json", None, "$: expected an object, found an array", raw=b"[1, 2, 3]")
case("nul-bytes.json", None, "NUL bytes", raw=b'{"name": "a\x00b"}')
# references
case("missing-topology-file.json", [(T, "../../topologies/none.json")], "none.json: cannot read file")
case("missing-device-file.json", [(T, dict(topo, device="devices/none.json"))], "devices/none.json: cannot read file")
case("device-not-object.json", [(T, dict(topo, device=7))], "$.topology.device: expected a file path")
case("expect-unknown-summary-key.json", [(["expect"], {"memory.peek_bytes": {"max": 1}})], 'the summary has no key called "memory.peek_bytes"')

# Cases written by hand (they are not regenerated) stay; new ones follow.
with open(os.path.join(D, "cases.txt")) as f:
    lines = [l.rstrip("\n") for l in f if l.strip()]
generated = {c.split("|", 2)[2] for c in cases}
kept = [l for l in lines if l.startswith("#") or l.split("|", 2)[2] not in generated]
with open(os.path.join(D, "cases.txt"), "w") as f:
    f.write("\n".join(kept + cases) + "\n")
