#!/usr/bin/env bash
# torchtitan TOML job configs as a scenario's training and parallel sections:
# a scenario naming configs/torchtitan/*.toml gives the summary, byte for
# byte, of the scenario written out by hand with what the TOML says
# (torchtitan's llama3_8b.toml / llama3_70b.toml: the sections below are
# read off those files and torchtitan's defaults, job_config.py at commit
# 238fa99); run --model --torchtitan equals the scenario it describes;
# --set reaches into the TOML; a scenario key the TOML also gives is an
# error; bad TOML names file, line and column.
. "$(dirname "$0")/lib.sh" "$@"
r=$(pwd)
out=$("$bin" run --model models/llama3-8b.json --gpus 8 --torchtitan configs/torchtitan/llama3_8b.toml --quiet 2>&1)
if echo "$out" | grep -q "built without TOML support"; then
  check "a build without toml++ names the package" 'echo "$out" | grep -q libtomlplusplus-dev'
  echo "SKIP: the rest needs TOML support (libtomlplusplus-dev); $checks checks, $fails failed"
  [ $fails -eq 0 ]; exit
fi

# llama3_8b.toml on 8 H100: shard -1 -> dp 8; local_batch_size 1, seq_len
# 8192; selective AC "op"; AdamW fused (default); bf16 compute, fp32
# reduce (defaults); blocks reshard, [norm, output] does not (apply_fsdp).
cat >"$d/tt8.json" <<EOF
{"name": "t", "model": "$r/models/llama3-8b.json", "topology": "$r/topologies/h100x8-hgx.json",
 "trainer": {"torchtitan": "$r/configs/torchtitan/llama3_8b.toml"}}
EOF
cat >"$d/hand8.json" <<EOF
{"name": "t", "model": "$r/models/llama3-8b.json", "topology": "$r/topologies/h100x8-hgx.json",
 "parallel": {"dp": 8},
 "training": {"micro_batch": 1, "seq_len": 8192, "recompute": "selective_op"},
 "precision": {"param": "fp32", "compute": "bf16", "grad": "fp32", "reduce": "fp32",
               "master": "none", "optimizer": "fp32"},
 "optimizer": {"type": "adamw", "impl": "fused"},
 "sharding": {"strategy": "fsdp2", "reshard_after_forward": {"default": true, "output": false}}}
EOF
"$bin" run "$d/tt8.json" --quiet --json "$d/a.json" && "$bin" run "$d/hand8.json" --quiet --json "$d/b.json"
check "llama3_8b.toml equals the hand-written scenario" 'cmp -s "$d/a.json" "$d/b.json"'

# llama3_70b.toml on 64 H100 (8 nodes): tp 8 (+ sequence parallel, the
# TP plan's), shard -1 -> dp 8; local_batch_size 8; full AC.
cat >"$d/tt70.json" <<EOF
{"name": "t", "model": "$r/models/llama3-70b.json",
 "topology": {"file": "$r/topologies/h100-ib-fattree.json", "nodes": 8},
 "trainer": {"torchtitan": "$r/configs/torchtitan/llama3_70b.toml"}}
EOF
cat >"$d/hand70.json" <<EOF
{"name": "t", "model": "$r/models/llama3-70b.json",
 "topology": {"file": "$r/topologies/h100-ib-fattree.json", "nodes": 8},
 "parallel": {"dp": 8, "tp": 8, "sequence_parallel": true},
 "training": {"micro_batch": 8, "seq_len": 8192, "recompute": "full"},
 "precision": {"param": "fp32", "compute": "bf16", "grad": "fp32", "reduce": "fp32",
               "master": "none", "optimizer": "fp32"},
 "optimizer": {"type": "adamw", "impl": "fused"},
 "sharding": {"strategy": "fsdp2"}}
EOF
"$bin" run "$d/tt70.json" --quiet --json "$d/a.json" && "$bin" run "$d/hand70.json" --quiet --json "$d/b.json"
check "llama3_70b.toml equals the hand-written scenario" 'cmp -s "$d/a.json" "$d/b.json"'

# run --model --torchtitan: the same as the scenario it describes
"$bin" run --model models/llama3-8b.json --gpus 8 --torchtitan configs/torchtitan/llama3_8b.toml \
  --quiet --json "$d/q.json"
python3 - "$d/q.json" "$d/tt8.json" <<'PY' 2>/dev/null
import json, sys
q = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
s["name"] = q["scenario"]
json.dump(s, open(sys.argv[2], "w"))
PY
"$bin" run "$d/tt8.json" --quiet --json "$d/a.json"
check "run --model --torchtitan equals the scenario naming the TOML" 'cmp -s "$d/q.json" "$d/a.json"'

# --set into the TOML equals an edited copy; the file stays as it was
sum0=$(sha256sum configs/torchtitan/llama3_8b.toml)
"$bin" run "$d/tt8.json" --quiet --json "$d/a.json" --set trainer.torchtitan.training.local_batch_size=2
sed 's/^local_batch_size = 1/local_batch_size = 2/' configs/torchtitan/llama3_8b.toml >"$d/edit.toml"
sed "s|$r/configs/torchtitan/llama3_8b.toml|$d/edit.toml|" "$d/tt8.json" >"$d/tt8e.json"
"$bin" run "$d/tt8e.json" --quiet --json "$d/b.json"
"$bin" run "$d/tt8.json" --quiet --json "$d/c.json"
check "--set trainer.torchtitan.training.local_batch_size equals an edited copy" \
  'cmp -s "$d/a.json" "$d/b.json" && ! cmp -s "$d/a.json" "$d/c.json"'
check "... and the TOML file is untouched" '[ "$(sha256sum configs/torchtitan/llama3_8b.toml)" = "$sum0" ]'

# --set on a key the TOML gave changes it (as run's advice, sweeps and search
# do): the same as the TOML edited; the scenario file giving it too is an error
"$bin" run "$d/tt8.json" --quiet --json "$d/a.json" --set training.seq_len=4096
sed 's/^seq_len = 8192/seq_len = 4096/' configs/torchtitan/llama3_8b.toml >"$d/edit.toml"
"$bin" run "$d/tt8e.json" --quiet --json "$d/b.json"
check "--set training.seq_len overrides the TOML's seq_len" 'cmp -s "$d/a.json" "$d/b.json"'
err=$("$bin" run tests/bad-inputs/torchtitan-duplicate.json 2>&1); rc=$?
check "a scenario key the TOML also gives is an error naming both" \
  '[ $rc -eq 2 ] && echo "$err" | grep -q "\$.training.seq_len: also given by the torchtitan config"'
# trainer.gpus: torchrun's world, fewer than the topology's GPUs
cat >"$d/tt2.json" <<EOF
{"name": "t", "model": "$r/models/llama3-8b.json", "topology": "$r/topologies/h100x8-hgx.json",
 "trainer": {"torchtitan": "$r/configs/torchtitan/llama3_8b.toml", "gpus": 2}}
EOF
"$bin" run "$d/tt2.json" --quiet --json "$d/a.json"
sed 's/"dp": 8/"dp": 2/' "$d/hand8.json" >"$d/hand2.json"
"$bin" run "$d/hand2.json" --quiet --json "$d/b.json"
check "trainer.gpus 2: FSDP over 2 ranks" 'cmp -s "$d/a.json" "$d/b.json"'
printf '[training]\nseq_len = = 3\n' >"$d/bad.toml"
sed "s|$d/edit.toml|$d/bad.toml|" "$d/tt8e.json" >"$d/ttbad.json"
err=$("$bin" run "$d/ttbad.json" 2>&1); rc=$?
check "bad TOML names the file, line and column" '[ $rc -eq 2 ] && echo "$err" | grep -q "bad.toml:2:11: not valid TOML"'
printf '[activation_checkpoint]\nmode = "none"\n[parallelism]\ntensor_parallel_degree = 3\n' >"$d/bad.toml"
err=$("$bin" run "$d/ttbad.json" 2>&1); rc=$?
check "a mapping error names the TOML key" \
  '[ $rc -eq 2 ] && echo "$err" | grep -q "bad.toml: parallelism: data_parallel_shard_degree = -1"'
err=$("$bin" run --torchtitan configs/torchtitan/llama3_8b.toml 2>&1); rc=$?
check "--torchtitan without --gpus is a usage error" '[ $rc -eq 2 ] && echo "$err" | grep -q "needs --gpus N"'
# without --model, the model of [model] name "llama3", flavor "8B": models/llama3-8b.json
"$bin" run --torchtitan configs/torchtitan/llama3_8b.toml --gpus 8 --quiet --json "$d/f.json"
same_but_name() { python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
a.pop("scenario"); b.pop("scenario")
sys.exit(a != b)
PY
}
check "--torchtitan alone takes the flavor's shipped model" 'same_but_name "$d/f.json" "$d/q.json"'
sed 's/flavor = "8B"/flavor = "1B"/' configs/torchtitan/llama3_8b.toml >"$d/f1b.toml"
err=$("$bin" run --torchtitan "$d/f1b.toml" --gpus 8 2>&1); rc=$?
check "... and a flavor without one asks for --model" '[ $rc -eq 2 ] && echo "$err" | grep -q "flavor \"1B\" has no shipped model"'

echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
