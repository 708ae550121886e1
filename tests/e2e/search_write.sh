#!/usr/bin/env bash
# search --write-torchtitan and --write-megatron (cli/search_write.h,
# io/jobwrite.h, docs/DECISIONS.md entry 84): the point as the configs users
# run. A torchtitan TOML read back through run --torchtitan (the shipped
# 8 x H100 machine) and through a scenario naming it as "trainer" gives the
# step the search reported for that point, to the nanosecond (the same
# model, machine and settings: the numbers come from the simulator on both
# sides); its keys are the point's layout. Megatron's arguments are the
# point's layout, batch and Megatron-core knobs (the tiny GPT example's
# values). What a framework cannot express is refused, naming why, and
# nothing is written.
. "$(dirname "$0")/lib.sh" "$@"
r=$(pwd)
out=$("$bin" run --model models/llama3-8b.json --gpus 8 --torchtitan configs/torchtitan/llama3_8b.toml --quiet 2>&1)
if echo "$out" | grep -q "built without TOML support"; then
    echo "SKIP: reading TOML back needs TOML support (libtomlplusplus-dev)"
    exit 0
fi

# The torchtitan side: torchtitan.sh's hand-written llama3_8b scenario (FSDP2,
# fp32 weights, bf16 compute, fp32 reduce, no master copy, fused AdamW) at 1k
# tokens, with FSDP2 over shard groups of 2 (HSDP).
cat >"$d/tt.json" <<EOF
{"name": "tt", "model": "$r/models/llama3-8b.json", "topology": "$r/topologies/h100x8-hgx.json",
 "parallel": {"dp": 8},
 "training": {"micro_batch": 1, "seq_len": 1024, "recompute": "selective_op"},
 "precision": {"param": "fp32", "compute": "bf16", "grad": "fp32", "reduce": "fp32",
               "master": "none", "optimizer": "fp32"},
 "optimizer": {"type": "adamw", "impl": "fused"},
 "sharding": {"strategy": "fsdp2", "shard_group_size": 2}}
EOF
sp=(--tp 1,2 --cp 1 --pp 1,2 --recompute none,full --quiet)
"$bin" search "$d/tt.json" "${sp[@]}" --csv "$d/tt.csv" --write-torchtitan "$d/best.toml" >"$d/tt.txt"
check "--write-torchtitan: exit 0" '[ $? -eq 0 ]'
best=$(sed -n 's/^best by step time: point \([0-9]*\)$/\1/p' "$d/tt.txt")
want=$(sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p' "$d/tt.txt")
row=$(awk -F, -v p="$best" 'NR > 2 && $1 == p' "$d/tt.csv")
tp=$(echo "$row" | cut -d, -f2) dp=$(echo "$row" | cut -d, -f6) pp=$(echo "$row" | cut -d, -f4)
check "the TOML: the best point's layout (tp $tp, dp $dp as 2 shard x $((dp / 2)) replicate, pp $pp)" \
    'grep -qx "tensor_parallel_degree = $tp" "$d/best.toml" &&
     grep -qx "data_parallel_shard_degree = 2" "$d/best.toml" &&
     grep -qx "data_parallel_replicate_degree = $((dp / 2))" "$d/best.toml" &&
     grep -qx "pipeline_parallel_degree = $pp" "$d/best.toml"'
acc=$(echo "$row" | cut -d, -f8)
if [ "$pp" = 1 ]; then batch="local_batch_size = 1
global_batch_size = 8"; else batch="local_batch_size = $acc"; fi  # a pipeline's micro-batches
check "... batch (pp $pp, accum $acc), sequence, AC and precision as the scenario has them" \
    '[ "$(grep "_batch_size = " "$d/best.toml")" = "$batch" ] &&
     grep -qx "seq_len = 1024" "$d/best.toml" && grep -qx "mode = \"none\"" "$d/best.toml" &&
     grep -qx "dtype = \"float32\"" "$d/best.toml" && grep -qx "mixed_precision_param = \"bfloat16\"" "$d/best.toml" &&
     grep -qx "mixed_precision_reduce = \"float32\"" "$d/best.toml" && grep -qx "implementation = \"fused\"" "$d/best.toml"'
got=$("$bin" run --model models/llama3-8b.json --gpus 8 --gpu h100 --torchtitan "$d/best.toml" |
      sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
check "run --torchtitan the written TOML: the step the search reported ($want ms)" \
    '[ -n "$want" ] && [ "$got" = "$want" ]'
cat >"$d/back.json" <<EOF
{"name": "back", "model": "$r/models/llama3-8b.json", "topology": "$r/topologies/h100x8-hgx.json",
 "trainer": {"torchtitan": "$d/best.toml"}}
EOF
"$bin" search "$d/tt.json" "${sp[@]}" --write-best "$d/best.json" >/dev/null
"$bin" run "$d/back.json" --json "$d/back.sum" --quiet && "$bin" run "$d/best.json" --json "$d/best.sum" --quiet
check "... and as a scenario's trainer: the point's step and peak reserved, exactly" '
    [ "$(grep -E "\"(step_time_s|max_peak_reserved_bytes)\"" "$d/back.sum")" = \
      "$(grep -E "\"(step_time_s|max_peak_reserved_bytes)\"" "$d/best.sum")" ] &&
    [ -n "$(grep -E "\"step_time_s\"" "$d/back.sum")" ]'

# A pipelined point (--point 6: tp 2, pp 2, the CSV's row): the pipeline's
# keys, equal stages of 16 of the 32 layers, and the same step read back.
"$bin" search "$d/tt.json" "${sp[@]}" --point 6 --write-torchtitan "$d/p6.toml" --write-best "$d/p6.json" >/dev/null
check "--point 6: pp 2 in the CSV" '[ "$(awk -F, "NR > 2 && \$1 == 6 { print \$2, \$4 }" "$d/tt.csv")" = "2 2" ]'
check "... the TOML's pipeline: 1F1B, micro-batches of 1, 16 layers a stage" \
    'grep -qx "pipeline_parallel_schedule = \"1F1B\"" "$d/p6.toml" &&
     grep -qx "pipeline_parallel_microbatch_size = 1" "$d/p6.toml" &&
     grep -qx "pipeline_parallel_layers_per_stage = 16" "$d/p6.toml" &&
     grep -qx "local_batch_size = 4" "$d/p6.toml"'
a=$("$bin" run "$d/p6.json" | sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
b=$("$bin" run --model models/llama3-8b.json --gpus 8 --torchtitan "$d/p6.toml" | sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
check "... run --torchtitan gives the point's step ($a ms)" '[ -n "$a" ] && [ "$a" = "$b" ]'

# HSDP (--point 4: tp 2, dp 4 as shard groups of 2, replicated twice).
"$bin" search "$d/tt.json" "${sp[@]}" --point 4 --write-torchtitan "$d/p4.toml" --write-best "$d/p4.json" >/dev/null
check "--point 4: tp 2, dp 4 in the CSV" '[ "$(awk -F, "NR > 2 && \$1 == 4 { print \$2, \$6 }" "$d/tt.csv")" = "2 4" ]'
check "... HSDP: shard degree 2, replicate degree 2" \
    'grep -qx "data_parallel_shard_degree = 2" "$d/p4.toml" && grep -qx "data_parallel_replicate_degree = 2" "$d/p4.toml"'
a=$("$bin" run "$d/p4.json" | sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
b=$("$bin" run --model models/llama3-8b.json --gpus 8 --torchtitan "$d/p4.toml" | sed -n 's/^  step time *\([0-9.]*\) ms$/\1/p')
check "... run --torchtitan gives the point's step ($a ms)" '[ -n "$a" ] && [ "$a" = "$b" ]'

# torch.compile over the blocks and the loss (training.kernels and
# training.loss "compiled"): [compile] components names both, and the
# search's own read-back (the TOML through the import, the point's step and
# peak exactly) passes, which a loss given twice would fail.
sed 's/"recompute": "selective_op"}/"recompute": "selective_op", "kernels": "compiled", "loss": "compiled"}/' \
    "$d/tt.json" >"$d/ttc.json"
"$bin" search "$d/ttc.json" "${sp[@]}" --point 0 --write-torchtitan "$d/c.toml" >/dev/null 2>"$d/ec"
check "compiled blocks and loss: written and read back, components model and loss" \
    '[ $? -eq 0 ] && grep -qx "components = \[\"model\", \"loss\"\]" "$d/c.toml"'

# Refused: FSDP1 (torchtitan runs FSDP2), recompute selective (no torchtitan
# AC), a master copy (torchtitan keeps none): exit 2, why, no file.
"$bin" search "$d/tt.json" "${sp[@]}" --strategy full_shard --write-torchtitan "$d/x.toml" >/dev/null 2>"$d/e1"
check "full_shard as torchtitan: refused, naming the runtime" \
    '[ $? -eq 2 ] && grep -q "error: --write-torchtitan: strategy full_shard: torchtitan runs FSDP2 (fully_shard) or DDP" "$d/e1" && [ ! -e "$d/x.toml" ]'
"$bin" search "$d/tt.json" "${sp[@]}" --recompute selective --write-torchtitan "$d/x.toml" >/dev/null 2>"$d/e2"
check "recompute selective as torchtitan: refused, naming torchtitan's AC modes" \
    '[ $? -eq 2 ] && grep -q "recompute selective (attention.s softmax and dropout, Megatron.s selective recomputation): torchtitan.s AC is none, full" "$d/e2" && [ ! -e "$d/x.toml" ]'
"$bin" search "$d/tt.json" "${sp[@]}" --set precision.master=fp32 --write-torchtitan "$d/x.toml" >/dev/null 2>"$d/e3"
check "an fp32 master copy as torchtitan: refused, naming the precision" \
    '[ $? -eq 2 ] && grep -q "precision param fp32, grad fp32, optimizer fp32, master fp32: torchtitan keeps" "$d/e3" && [ ! -e "$d/x.toml" ]'

# The Megatron side: the tiny GPT example (TP 2 + SP, PP 2, DP 2, both
# overlaps, buckets of 2M parameters, full recompute, bf16, Transformer
# Engine's fused attention on the H100), in Megatron's rank order.
m=scenarios/examples/tiny-gpt-megatron-tp2-pp2-overlap.json
mp=(--tp 2 --cp 1 --pp 2 --quiet --set parallel.order=tp-cp-ep-dp-pp)
"$bin" search "$m" "${mp[@]}" --write-megatron "$d/mg.args" >/dev/null
check "--write-megatron: exit 0" '[ $? -eq 0 ]'
cat >"$d/mg.want" <<EOF
--tensor-model-parallel-size 2
--sequence-parallel
--tp-comm-overlap
--pipeline-model-parallel-size 2
--context-parallel-size 1
--expert-model-parallel-size 1
--micro-batch-size 1
--global-batch-size 4
--seq-length 512
--use-distributed-optimizer
--overlap-grad-reduce
--overlap-param-gather
--ddp-bucket-size 2000000
--accumulate-allreduce-grads-in-fp32
--attention-backend fused
--attention-dropout 0
--recompute-granularity full
--recompute-method uniform
--recompute-num-layers 1
--bf16
--optimizer adam
EOF
check "... the example's layout, batch (1 x dp 2 x accum 2 = 4) and knobs, one per line" \
    '[ "$(grep -v "^#" "$d/mg.args")" = "$(cat "$d/mg.want")" ]'
"$bin" search "$m" --tp 2 --cp 1 --pp 2 --quiet --write-megatron "$d/x.args" >/dev/null 2>"$d/e4"
check "pp and dp in the simulator's default order: refused, naming Megatron's" \
    '[ $? -eq 2 ] && grep -q "rank order tp-cp-pp-dp: Megatron-LM orders ranks tp-cp-ep-dp-pp" "$d/e4" && [ ! -e "$d/x.args" ]'
"$bin" search scenarios/deepspeed/llama3-8b-zero1-inline-8xh100.json --tp 1 --cp 1 --pp 1 --quiet \
    --write-megatron "$d/x.args" >/dev/null 2>"$d/e5"
check "DeepSpeed as Megatron arguments: refused, naming DeepSpeed" \
    '[ $? -eq 2 ] && grep -q "strategy deepspeed (ZeRO-1): DeepSpeed.s runtime, which Megatron-LM.s arguments cannot select" "$d/e5" && [ ! -e "$d/x.args" ]'
"$bin" search "$d/tt.json" "${sp[@]}" --write-megatron "$d/x.args" >/dev/null 2>"$d/e6"
check "FSDP2 as Megatron arguments: refused" \
    '[ $? -eq 2 ] && grep -q "strategy fsdp2: Megatron-LM runs Megatron-core.s DDP" "$d/e6" && [ ! -e "$d/x.args" ]'
"$bin" search "$d/tt.json" "${sp[@]}" --point 1 >/dev/null 2>"$d/e7"
check "--point alone: a usage error" '[ $? -eq 2 ] && grep -q "point N goes with --write-best, --write-torchtitan or --write-megatron" "$d/e7"'

echo "$((checks - fails)) passed, $fails failed"
[ $fails -eq 0 ]
