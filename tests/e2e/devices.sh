#!/usr/bin/env bash
# The device files derived from another part's measurements keep the
# derivation their source states: every file whose attention table says
# "scaled here by A / B" has each rate of the H100 SXM5 file's tables
# (FlashAttention-2, cuDNN, FlashAttention-3) times A / B (to the 0.1
# TFLOPS the files carry), the H200's are the SXM's, and A is its own dense BF16
# peak and B the SXM's (989.4, NVIDIA H100 datasheet); the PCIe and NVL
# parts' peaks are their datasheet columns' sparse figures halved (BF16
# 1,513 and 1,671; FP8 3,026 and 3,341); the B200 and GB200 files carry
# the H100 SXM's GEMM efficiency and overlap slowdown and their sheets'
# peaks. And a step on the PCIe server
# runs slower than on the HGX node, its kernels by between the ratio of
# the BF16 peaks (989.4 / 756.5: GEMMs and attention) and that of the
# HBM bandwidths (3.35 / 2 TB/s: elementwise work), on the same program.
. "$(dirname "$0")/lib.sh" "$@"
if ! command -v python3 >/dev/null; then echo "SKIP: python3 not found"; exit 0; fi
python3 - >"$d/py.txt" 2>&1 <<'PY'
import glob, json, re
base = json.load(open("topologies/devices/h100-sxm5-80gb.json"))
TABLES = ("attention", "attention_cudnn", "attention_flash3")
# the H200 has the H100's SMs and clocks: its tables are the SXM's
h200 = json.load(open("topologies/devices/h200-sxm-141gb.json"))
bad, seen = [], 0
for t in TABLES:
    if h200.get(t, {}).get("points") != base[t]["points"]:
        bad.append(f"h200-sxm-141gb.json: {t} is not the H100 SXM's")
for f in sorted(glob.glob("topologies/devices/*.json")):
    d = json.load(open(f))
    m = re.search(r"scaled here by ([0-9.]+) / ([0-9.]+)", d.get("attention", {}).get("source", ""))
    if not m:
        continue
    seen += 1
    a, b = float(m.group(1)), float(m.group(2))
    if b != base["peak_tflops"]["bf16"]:
        bad.append(f"{f}: scaled against {b}, the SXM's peak is {base['peak_tflops']['bf16']}")
    if d["peak_tflops"]["bf16"] != a:
        bad.append(f"{f}: scaled by {a} but its bf16 peak is {d['peak_tflops']['bf16']}")
    for t in TABLES:
        if t not in d:
            bad.append(f"{f}: no {t} table where the SXM has one")
            continue
        bt = {p["seq"]: p for p in base[t]["points"]}
        for p in d[t]["points"]:
            q = bt[p["seq"]]
            for k in ("fwd_tflops", "bwd_tflops", "fwd_full_tflops"):
                if abs(p[k] - q[k] * a / b) > 0.051:
                    bad.append(f"{f}: {t} seq {p['seq']} {k} {p[k]}, want {q[k] * a / b:.2f}")
sheet = {"h100-pcie-80gb.json": (1513, 3026, 2000), "h100-nvl-94gb.json": (1671, 3341, 3900)}
for f, (bf16, fp8, bw) in sheet.items():
    d = json.load(open("topologies/devices/" + f))
    if d["peak_tflops"]["bf16"] != bf16 / 2 or d["peak_tflops"]["fp8"] != fp8 / 2 or d["hbm_bw_GBps"] != bw:
        bad.append(f"{f}: peaks {d['peak_tflops']} / {d['hbm_bw_GBps']} GB/s against the datasheet")
if seen < 3:
    bad.append(f"only {seen} derived device files found")
# Blackwell takes the slowdown the H100 fit was made with (DECISIONS 128,
# 131) and a fraction of peak fitted to its own rows (0.52, DECISIONS 137:
# below the H100's, a training rate and not a kernel ceiling); GB200
# follows the B200 fit.
# Peaks: DGX B200 datasheet per GPU; GB200 the NVL72 sheet's rack figures / 72
# (BF16 360 and FP8 720 PFLOPS with sparsity, 13.4 TB HBM3e, 576 TB/s).
# The sheets' GB of HBM are GiB, as for every part here (CUDA reports more
# than the decimal figure on B200, GB200 and H200: DECISIONS 151).
for f, (bf16, fp8, hbm, bw) in {"b200-180gb.json": (2250, 4500, 180 * 2**30, 8000),
                                "gb200-186gb.json": (360e3 / 2 / 72, 720e3 / 2 / 72, 186 * 2**30, 576e3 / 72)}.items():
    d = json.load(open("topologies/devices/" + f))
    b200 = json.load(open("topologies/devices/b200-180gb.json"))
    if not 0.4 <= d["gemm_efficiency"] < base["gemm_efficiency"] or d["gemm_efficiency"] != b200["gemm_efficiency"]:
        bad.append(f"{f}: gemm_efficiency {d['gemm_efficiency']}: want the B200 fit {b200['gemm_efficiency']}, below the H100 SXM's {base['gemm_efficiency']}")
    if d.get("overlap", {}).get("slowdown") != base["overlap"]["slowdown"]:
        bad.append(f"{f}: overlap slowdown {d.get('overlap')}, the H100 SXM's is {base['overlap']['slowdown']}")
    if (d["peak_tflops"]["bf16"], d["peak_tflops"]["fp8"], d["hbm_bw_GBps"]) != (bf16, fp8, bw) or \
            abs(d["hbm_bytes"] - hbm) > 0.5e9:
        bad.append(f"{f}: peaks {d['peak_tflops']}, {d['hbm_bytes']} B at {d['hbm_bw_GBps']} GB/s against the sheet")
# What CUDA reports a process can have is part of the HBM, never more: a
# total above hbm_bytes means the file read its sheet's GB as decimal
# (the B200, GB200 and H200 files did until DECISIONS 151).
for f in sorted(glob.glob("topologies/devices/*.json")):
    d = json.load(open(f))
    if d.get("cuda_total_bytes", 0) > d["hbm_bytes"]:
        bad.append(f"{f}: CUDA's total {d['cuda_total_bytes']} B above hbm_bytes {d['hbm_bytes']}")
print("\n".join(bad) if bad else "ok")
PY
check "derived device tables are their source times the stated ratio ($(tail -1 "$d/py.txt"))" \
  '[ "$(cat "$d/py.txt")" = ok ]'
sxm=scenarios/transformers/llama3-8b-full-shard-8xh100.json
"$bin" run $sxm --quiet --no-expect --json "$d/sxm.json"
"$bin" run $sxm --quiet --no-expect --json "$d/pcie.json" \
  --set "topology={\"file\": \"$PWD/topologies/h100-pcie8-nvlink-bridge.json\"}"
python3 - "$d" >"$d/cmp.txt" 2>&1 <<'PY'
import json, sys
d = sys.argv[1]
s, p = (json.load(open(f"{d}/{n}.json")) for n in ("sxm", "pcie"))
# the kernels' own time: compute less what collectives beside it added
cs, cp = (x["time"]["compute_s"] - x["time"]["interference_s"] for x in (s, p))
ok = cp >= cs * 989.4 / 756.5 * 0.999 and cp <= cs * 3.35 / 2.0 * 1.001 and p["step_time_s"] > s["step_time_s"]
print("ok" if ok else f"compute {cs:.4f} -> {cp:.4f} s, step {s['step_time_s']:.4f} -> {p['step_time_s']:.4f} s")
PY
check "the PCIe server: compute slower by 1.31x..1.68x, the step slower ($(cat "$d/cmp.txt"))" \
  '[ "$(cat "$d/cmp.txt")" = ok ]'
echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
