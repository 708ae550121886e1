#!/usr/bin/env bash
# shardsim validate on three small published scenarios (a step time, a step
# time with peak allocated and reserved memory, memory alone): every printed
# and JSON error equals (predicted - measured) / measured recomputed here from
# `shardsim run --json` of the same scenario and the scenario's own
# "measured" block; the medians equal those of the recomputed errors; -j 2
# prints the same bytes; the exit code is 0 without --strict and 1 with it
# when a threshold fails; --help exits 0; bad usage exits 2.
. "$(dirname "$0")/lib.sh" "$@"
if ! command -v python3 >/dev/null; then echo "SKIP: python3 not found"; exit 0; fi
p=scenarios/published
names=(mpt-13b-fsdp1-2k-8xh100 torchtitan-llama7b-fsdp1-sac zro-recipe-ddp)
files=()
for n in "${names[@]}"; do
    files+=("$p/$n.json")
    "$bin" run "$p/$n.json" --quiet --json "$d/$n.sum.json" || echo "FAIL: run $n"
done

"$bin" validate "${files[@]}" --json "$d/v.json" >"$d/v.txt"
rc=$?
check "validate exits 0 without --strict" '[ $rc -eq 0 ]'
"$bin" validate "${files[@]}" -j 2 >"$d/v2.txt"
check "-j 2: the same table" 'cmp -s "$d/v.txt" "$d/v2.txt"'
"$bin" validate "${files[@]}" --strict >/dev/null
rc=$?
# mpt-13b's step errs about -9% and torchtitan's 7B SAC row about -6%
# (their tests/data files against the prediction): the median signed step
# error leaves +-5%.
check "--strict exits 1 when a threshold fails" '[ $rc -eq 1 ]'
# The whole published corpus (every scenarios/published row with a
# measurement): overall median |error| at most 10%, median signed within
# +-5%, every source at most 20%, for step time and memory alike. The
# sanitizer pass (SS_SKIP_PUBLISHED=1, scripts/test.sh) leaves the
# production-size rows to the plain build's pass, as check.sh and
# scenarios.sh do: the same 185 rows under ASan took 80 s of its budget.
if [ "${SS_SKIP_PUBLISHED:-}" != 1 ]; then
  "$bin" validate -j 2 --strict >"$d/all.txt" 2>&1
  rc=$?
  check "the whole corpus holds every threshold ($(grep -c '^PASS' "$d/all.txt") of 6 pass)" \
    '[ $rc -eq 0 ] && [ "$(grep -c "^PASS" "$d/all.txt")" -eq 6 ]'
fi
"$bin" validate "$p/zro-recipe-ddp.json" --strict >/dev/null
rc=$?
# zro-recipe-ddp's memory is within 1% (its expect band is 5%): every threshold holds.
check "--strict exits 0 when every threshold holds" '[ $rc -eq 0 ]'
"$bin" validate "${files[@]}" --markdown "$d/v.md" >/dev/null
"$bin" validate "${files[@]}" --markdown - >"$d/v2.md"
# the Markdown holds a row per scenario with the text table's signed error,
# the overall medians and the threshold lines; '-' writes it alone to stdout
md_ok=1
for n in "${names[@]}"; do
  e=$(grep "^$n " "$d/v.txt" | grep -o '[+-][0-9]*\.[0-9]%' | head -1)
  grep -q "^| $n |.* ${e:-|} |" "$d/v.md" || md_ok=0
done
check "--markdown: a row per scenario with its error, the medians, the thresholds" \
    '[ $md_ok -eq 1 ] && grep -q "^| \*\*overall\*\* |" "$d/v.md" && grep -q "^FAIL  step time" "$d/v.md" && cmp -s "$d/v.md" "$d/v2.md"'
# --set: every scenario changed, the outputs say so, and the step errors
# are those of `run --set` (torchtitan's 7B runs eager kernels: fused ones
# are faster)
"$bin" validate "${files[@]}" --set training.kernels=fused --json "$d/vs.json" >"$d/vs.txt"
rc=$?
"$bin" run "$p/torchtitan-llama7b-fsdp1-sac.json" --set training.kernels=fused --quiet \
    --json "$d/tt-fused.sum.json"
check "--set: exits 0 and its first line names the change" \
    '[ $rc -eq 0 ] && head -1 "$d/vs.txt" | grep -q "^changed with --set training.kernels=fused (every scenario)"'
check "--set: the row is run --set's" "python3 -c \"
import json, sys
v = json.load(open('$d/vs.json')); s = json.load(open('$d/tt-fused.sum.json'))
base = json.load(open('$d/v.json'))
row = [r for r in v['rows'] if r['scenario'] == 'torchtitan-llama7b-fsdp1-sac'][0]
row0 = [r for r in base['rows'] if r['scenario'] == 'torchtitan-llama7b-fsdp1-sac'][0]
ok = v['sets'] == ['training.kernels=fused'] and abs(row['step_time']['predicted_s'] - s['step_time_s']) < 1e-9
ok = ok and row['step_time']['predicted_s'] < row0['step_time']['predicted_s']
sys.exit(0 if ok else 1)\""
"$bin" validate "${files[@]}" --set training.nokey=1 >/dev/null 2>"$d/err-set.txt"
rc=$?
check "--set: a key no scenario has exits 2 naming the file and path" \
    '[ $rc -eq 2 ] && grep -q "mpt-13b-fsdp1-2k-8xh100.json: \$.training: unknown key" "$d/err-set.txt"'
"$bin" validate --help >"$d/help.txt"
rc=$?
check "--help exits 0 with the usage" '[ $rc -eq 0 ] && grep -q "^usage: shardsim validate" "$d/help.txt"'
"$bin" validate --bogus >/dev/null 2>&1
rc=$?
check "an unknown option exits 2" '[ $rc -eq 2 ]'
"$bin" validate "$d/none.json" >/dev/null 2>"$d/err.txt"
rc=$?
check "a missing file exits 2 naming it" '[ $rc -eq 2 ] && grep -q none.json "$d/err.txt"'

python3 - "$d" "$p" "${names[@]}" <<'PY' >"$d/py.txt" 2>&1
import json, statistics, sys
d, p, names = sys.argv[1], sys.argv[2], sys.argv[3:]
v = json.load(open(f"{d}/v.json"))
text = open(f"{d}/v.txt").read().splitlines()
rows = {r["scenario"]: r for r in v["rows"]}
bad = []
def same(what, a, b, tol=1e-9):
    if abs(a - b) > tol * max(1, abs(b)):
        bad.append(f"{what}: validate {a!r}, recomputed {b!r}")
steps, mems = [], []
for n in names:
    m = json.load(open(f"{p}/{n}.json"))["measured"]
    s = json.load(open(f"{d}/{n}.sum.json"))
    r = rows[n]
    line = next(l for l in text if l.startswith(n + " "))
    figs = [("step_time", "step_time_s", "s", s["step_time_s"]),
            ("peak_allocated", "peak_allocated_gib", "gib",
             s["memory"]["max_peak_allocated_bytes"] / 2**30),
            ("peak_reserved", "peak_reserved_gib", "gib",
             s["memory"]["max_peak_reserved_bytes"] / 2**30)]
    for key, mkey, unit, pred in figs:
        if mkey not in m:
            if key in r: bad.append(f"{n}: {key} without a measured figure")
            continue
        err = 100 * (pred - m[mkey]) / m[mkey]
        (steps if key == "step_time" else mems).append(err)
        same(f"{n} {key} predicted", r[key]["predicted_" + unit], pred)
        same(f"{n} {key} measured", r[key]["measured_" + unit], m[mkey])
        same(f"{n} {key} error", r[key]["error_pct"], err)
        if f"{err:+.1f}%" not in line.split():
            bad.append(f"{n}: printed row lacks {err:+.1f}%: {line}")
    same(f"{n} compute", r["split"]["compute_s"], s["time"]["compute_s"])
    same(f"{n} exposed", r["split"]["exposed_communication_s"], s["time"]["exposed_communication_s"])
o = v["overall"]
same("step n", o["step_time"]["n"], len(steps))
same("memory n", o["memory"]["n"], len(mems))
same("step median signed", o["step_time"]["median_signed_error_pct"], statistics.median(steps))
same("step median abs", o["step_time"]["median_abs_error_pct"], statistics.median(map(abs, steps)))
same("memory median signed", o["memory"]["median_signed_error_pct"], statistics.median(mems))
same("memory median abs", o["memory"]["median_abs_error_pct"], statistics.median(map(abs, mems)))
ov = next(l for l in text if l.strip().startswith("overall"))
if f"{statistics.median(mems):+6.1f}%" not in ov:
    bad.append(f"overall line lacks the memory median: {ov}")
# classes: "device runtime kernels" from each summary, the same medians
by = {}
for n in names:
    s = json.load(open(f"{d}/{n}.sum.json"))
    if rows[n]["class"].split(" ")[-2:] != [s["strategy"], s["time"]["kernels"]]:
        bad.append(f"{n}: class {rows[n]['class']!r} is not {s['strategy']} {s['time']['kernels']}")
    if "step_time" in rows[n]:
        by.setdefault(rows[n]["class"], []).append(rows[n]["step_time"]["error_pct"])
for c in v["classes"]:
    e = by.pop(c["class"], [])
    if c["step_time"]["n"]:
        same(f"class {c['class']} step n", c["step_time"]["n"], len(e))
        same(f"class {c['class']} signed", c["step_time"]["median_signed_error_pct"], statistics.median(e))
if by:
    bad.append(f"classes missing from the report: {sorted(by)}")
if len(steps) != 2 or len(mems) != 3:
    bad.append(f"expected 2 step and 3 memory samples, found {len(steps)}, {len(mems)}")
print("\n".join(bad) if bad else "ok")
PY
check "errors and medians equal those recomputed from run --json ($(tail -3 "$d/py.txt"))" \
    '[ "$(cat "$d/py.txt")" = ok ]'

# measured.peak_since "start" (ml-engineering's benchmark.py never resets the
# peak stats): the prediction is the larger of the step's peak and the
# model's setup (memory.max_init_peak_bytes). At 8k tokens the setup (the
# whole bf16 model moved to the device before ZeRO-3 partitions it) is the
# larger and the row says "setup peak"; at 32k the step's is.
mle=(ml-engineering-llama3.1-8b-ds-zero3-offload-ac-liger-8k-8xh200
     ml-engineering-llama3.1-8b-ds-zero3-offload-ac-liger-32k-8xh200)
for n in "${mle[@]}"; do "$bin" run "$p/$n.json" --quiet --json "$d/$n.sum.json"; done
"$bin" validate "$p/${mle[0]}.json" "$p/${mle[1]}.json" --json "$d/vs-setup.json" >"$d/vs-setup.txt"
check "peak_since start: the larger of the setup's and the step's peak, the setup's row marked" "python3 -c \"
import json, sys
v = {r['scenario']: r for r in json.load(open('$d/vs-setup.json'))['rows']}
ok = True
for n, setup in (('${mle[0]}', True), ('${mle[1]}', False)):
    m = json.load(open('$d/' + n + '.sum.json'))['memory']
    want = max(m['max_init_peak_bytes'], m['max_peak_reserved_bytes']) / 2**30
    ok = ok and abs(v[n]['peak_reserved']['predicted_gib'] - want) < 1e-9
    ok = ok and (m['max_init_peak_bytes'] > m['max_peak_reserved_bytes']) == setup
    ok = ok and v[n].get('setup_peak', False) == setup
    line = [l for l in open('$d/vs-setup.txt') if l.startswith(n + ' ')][0]
    ok = ok and line.rstrip().endswith('setup peak') == setup
sys.exit(0 if ok else 1)\""

# --fit: each value's medians are those of validate --set KEY=VALUE over the
# same files, and the fitted value is the one with the least median |error|
fitv="topology.device.gemm_efficiency"
"$bin" validate "${files[@]}" --fit "$fitv=0.6,0.7" >"$d/fit.txt" 2>"$d/fit.err"
rc=$?
fit_ok=1
best=; least=
for v in 0.6 0.7; do
  "$bin" validate "${files[@]}" --set "$fitv=$v" --json "$d/fit-$v.json" >/dev/null
  m=$(python3 -c "import json; print('%.1f' % json.load(open('$d/fit-$v.json'))['overall']['step_time']['median_abs_error_pct'])")
  grep -Eq "^  $v +$m%" "$d/fit.txt" || fit_ok=0
  if [ -z "$least" ] || python3 -c "import sys; sys.exit(0 if $m < $least else 1)"; then least=$m; best=$v; fi
done
check "--fit: each value's median is validate --set's, the least one fitted, with the cross-validation" \
    '[ $rc -eq 0 ] && [ $fit_ok -eq 1 ] && grep -q "^fitted, all sources:   $fitv = $best:" "$d/fit.txt" && grep -q "^leave one source out:" "$d/fit.txt" && grep -q "fit: $fitv=0.7 (2 of 2)" "$d/fit.err"'
"$bin" validate "${files[@]}" --fit "$fitv=0.6:0.5:0.1" >/dev/null 2>"$d/fit.err"
rc=$?
check "--fit: a bad range exits 2 naming it" '[ $rc -eq 2 ] && grep -q "expected LO:HI:STEP" "$d/fit.err"'
"$bin" validate "${files[@]}" --fit "$fitv=0.6" --json "$d/x.json" >/dev/null 2>&1
rc=$?
check "--fit with --json exits 2" '[ $rc -eq 2 ] && [ ! -e "$d/x.json" ]'

echo "validate: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
