#!/usr/bin/env bash
# Every command answers --help and -h on stdout with exit 0, whatever else
# is on the line; a mistyped command or option gets exit 2 and the nearest
# word it could have meant; what a changed scenario prints.
. "$(dirname "$0")/lib.sh" "$@"
for c in run check diff sweep search coll validate; do
  for h in --help -h; do
    out=$("$bin" $c scenarios/seed002/zero0_ddp.json $h 2>/dev/null); rc=$?
    check "$c $h exits 0 with a usage" '[ $rc -eq 0 ] && echo "$out" | grep -q "usage"'
  done
done
err=$("$bin" serach x 2>&1); rc=$?
check "a mistyped command names the nearest" '[ $rc -eq 2 ] && echo "$err" | grep -q "did you mean search?"'
err=$("$bin" sweep x --vray a=1 2>&1); rc=$?
check "a mistyped sweep option names the nearest" '[ $rc -eq 2 ] && echo "$err" | grep -q "did you mean --vary?"'
err=$("$bin" coll --topolgy x 2>&1); rc=$?
check "a mistyped coll option names the nearest" '[ $rc -eq 2 ] && echo "$err" | grep -q "did you mean --topology?"'
# A scenario changed with --set says so, and its file's expectations (written
# for the file) are not checked unless --expect asks; --no-expect drops them.
sc=scenarios/seed002/zero0_ddp.json
out=$("$bin" run $sc --set training.grad_accum=2)
check "run --set names the change in the banner" 'echo "$out" | head -1 | grep -q "changed with --set training.grad_accum=2"'
check "... and leaves the file's expectations unchecked" 'echo "$out" | grep -q "not checked: --set changed the scenario"'
out=$("$bin" run $sc --set training.grad_accum=2 --expect)
check "--expect checks them anyway" 'echo "$out" | grep -q "expectations: [0-9]* of [0-9]* hold"'
out=$("$bin" run $sc)
check "an unchanged run checks them" 'echo "$out" | grep -q "expectations: [0-9]* of [0-9]* hold"'
out=$("$bin" run $sc --no-expect)
check "--no-expect leaves them out" '! echo "$out" | grep -q "expectations"'
# DOES NOT FIT comes with what would: each usual change run alone, with its
# peak and step (70B FSDP1 on 8 H100s without its parameter offload: putting
# the offload back fits, as the shipped scenario shows).
f=scenarios/offload/llama3-70b-fsdp1-cpu-offload-8xh100.json
out=$("$bin" run $f --set 'offload={}')
# (in 77.20 GiB: an H100 80GB's CUDA total less the process reserve, docs/MEMORY.md)
check "a step that does not fit lists what would" 'echo "$out" | grep -q "^  what would fit in 77.20 GiB"'
check "... with the change that fits" 'echo "$out" | grep -q "^    --set offload.params=cpu  *[0-9.]* GiB  *[0-9.]* s  fits$"'
check "... and a change that is a no-op here left out" '! echo "$out" | grep -q "recompute=full"'
out=$("$bin" run $f --set 'offload={}' --no-advice)
check "--no-advice leaves it out" '! echo "$out" | grep -q "what would fit"'
out=$("$bin" run $f)
check "a step that fits has none" '! echo "$out" | grep -q "what would fit"'

# run --model FILE --gpus N: the scenario quick.h describes, the same
# summary as that scenario written out (run from another folder); hf: takes
# a Hugging Face config; usage errors name what is missing.
src=$(pwd)
cat >"$d/q.json" <<JSON
{"name": "llama3-8b.json on 8 x h100 (shardsim run --model)",
 "model": "$src/models/llama3-8b.json",
 "topology": {"file": "$src/topologies/h100x8-hgx.json", "nodes": 1},
 "parallel": {"dp": 8},
 "training": {"micro_batch": 1, "seq_len": 4096, "recompute": "none"},
 "precision": {"param": "fp32", "compute": "bf16", "grad": "fp32", "reduce": "fp32", "master": "none", "optimizer": "fp32"},
 "optimizer": {"type": "adamw", "impl": "foreach"},
 "sharding": {"strategy": "fsdp2"}}
JSON
abs=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
(cd "$d" && "$abs" run --model "$src/models/llama3-8b.json" --gpus 8 --quiet --json m.json)
"$bin" run "$d/q.json" --quiet --json "$d/s.json"
check "run --model --gpus is the scenario it describes" 'cmp -s "$d/m.json" "$d/s.json"'
"$bin" run --model hf:models/hf/llama3-8b.json --gpus 8 --quiet --json "$d/h.json" --set training.seq_len=2048
check "hf: a Hugging Face config, and --set on top" 'grep -q "\"parameters\":[[:space:]]*8030261248" "$d/h.json"'
"$bin" run --model models/llama3-8b.json --gpus 64 --gpu h200 --quiet --json "$d/g.json"
check "--gpus past one node takes the fabric, --gpu the kind" 'grep -q "\"ranks\"" "$d/g.json" && grep -q "H200\|h200" "$d/g.json"'
"$bin" run --model models/llama3-8b.json 2>"$d/e1"; r1=$?
"$bin" run --model models/llama3-8b.json --gpus 8 --gpu tpu 2>"$d/e2"; r2=$?
check "--model without --gpus, or an unknown kind, is a usage error" '[ $r1 -eq 2 ] && grep -q "needs --gpus" "$d/e1" && [ $r2 -eq 2 ] && grep -q "expected h100, h200, a100, b200, gb200 or h100-pcie" "$d/e2"'
# Two run summaries (JSON) with the same step time.
same_step() {
  python3 -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(a[\"step_time_s\"]!=b[\"step_time_s\"])" "$1" "$2"
}
"$bin" run --model models/llama3-8b.json --gpus 8 --gpu h100-pcie --quiet --json "$d/p.json"
"$bin" run --model models/llama3-8b.json --gpus 16 --gpu h100-pcie 2>"$d/e3"; r3=$?
"$bin" run --model models/llama3-8b.json --gpus 8 --quiet --json "$d/p0.json" \
  --set "topology={\"file\": \"$src/topologies/h100-pcie8-nvlink-bridge.json\", \"nodes\": 1}"
check "--gpu h100-pcie: the PCIe server (the same step), one server at most" \
  'same_step "$d/p.json" "$d/p0.json" &&
   [ $r3 -eq 2 ] && grep -q "one server of 8" "$d/e3"'

"$bin" run --model models/llama3-8b.json --gpus 144 --gpu gb200 --quiet --json "$d/gb.json"
"$bin" run --model models/llama3-8b.json --gpus 144 --quiet --json "$d/gb0.json" \
  --set "topology={\"file\": \"$src/topologies/gb200-nvl72.json\", \"nodes\": 2}"
check "--gpu gb200: NVL72 racks of 72, 144 GPUs on two (the same step)" \
  'same_step "$d/gb.json" "$d/gb0.json"'

# --memory --top N: N tensors per category, largest first, and a line for
# the rest; --top 0 lists every one, as many as --top 1 shows plus the rest.
f=scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json
"$bin" run $f --quiet --memory --top 0 >"$d/all.txt" 2>&1
"$bin" run $f --quiet --memory --top 1 >"$d/one.txt" 2>&1
all=$(grep -c "^      " "$d/all.txt")
shown=$(grep "^      " "$d/one.txt" | grep -vc "^      \.\.\. ")
rest=$(sed -n 's/^      \.\.\. \([0-9]*\) more.*/\1/p' "$d/one.txt" | awk '{s += $1} END {print s + 0}')
check "--top 0 lists every live tensor; --top 1 one per category and the rest" \
    '[ "$all" -gt 100 ] && [ $((shown + rest)) -eq "$all" ] && [ "$shown" -le 6 ]'
check "--top 1 shows each category's largest first" \
    'grep -A1 "^  activations" "$d/one.txt" | tail -1 | grep -q "GiB"'
echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
