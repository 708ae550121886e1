#!/usr/bin/env bash
# shardsim check: every shipped scenario's expectations hold; a violated
# expectation exits 1 and names the key; a key the summary lacks exits 2.
set -u
bin=$1
cd "$2" || exit 1
fails=0
out=$(mktemp)
# SS_SKIP_PUBLISHED=1: the sanitizer pass leaves out the production-size
# published rows (the plain build's pass checks them)
mapfile -t files < <(find scenarios -name '*.json' | LC_ALL=C sort |
  if [ "${SS_SKIP_PUBLISHED:-}" = 1 ]; then grep -v '^scenarios/published/'; else cat; fi)
"$bin" check "${files[@]}" >"$out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: check over scenarios/ exited $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check scenarios/seed002/zero0_ddp.json --set 'expect.step_time_s={"max":0.000001}' >"$out" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "FAIL.*step_time_s" "$out"; then
  echo "FAIL: a violated expectation: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check scenarios/seed002/zero0_ddp.json --set 'expect.collectives={"max":1}' >"$out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q 'expect\["collectives"\]: the summary has no scalar' "$out"; then
  echo "FAIL: a non-scalar key: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check scenarios/seed002/zero0_ddp.json --set 'expect.nonsense={"max":1}' >"$out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q 'no key called "nonsense"' "$out"; then
  echo "FAIL: an unknown key: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
# Bounds with units: the same bound in bytes and in GiB, in seconds and in ms,
# decide alike; a failure says by how much, in the key's unit.
sc=scenarios/fsdp2/llama3-8b-fsdp2-sac-8xh100.json
"$bin" check $sc --set 'expect={"memory.max_peak_reserved_bytes": {"max": "70 GiB"}, "step_time_s": {"value": "1500 ms", "within_pct": 10}}' >"$out" 2>&1
rc=$?
# the step and its miss, from the run's own summary: this checks how a miss
# is written, not the model's figure
"$bin" run $sc --json "$out.json" --quiet >/dev/null 2>&1
step=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["step_time_s"]; print("%.3f s (%+.1f%%)" % (t, 100 * (t - 1.5) / 1.5))' "$out.json")
resv=$(python3 -c 'import json, sys; g = json.load(open(sys.argv[1]))["memory"]["max_peak_reserved_bytes"] / 2**30; print("%.2f GiB (+%.2f GiB)" % (g, g - 70))' "$out.json")
if [ $rc -ne 1 ] || ! grep -qF "max 70.00 GiB" "$out" || ! grep -qF "$resv" "$out" || ! grep -qF "1.5 s +-10%" "$out" ||
   ! grep -qF "$step" "$out"; then
  echo "FAIL: bounds with units and the amounts they miss by: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check $sc --set 'expect={"memory.max_peak_reserved_bytes": {"max": 75161927680}, "step_time_s": {"max": "3.5 s", "min": "2000 ms"}}' >"$out" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "FAIL.*max_peak_reserved_bytes" "$out" || grep -q "FAIL.*step_time_s" "$out"; then
  echo "FAIL: 70 GiB written in bytes decides as \"70 GiB\"; 2..3.5 s holds: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check $sc --set 'expect={"step_time_s": {"max": "2 GiB"}}' >"$out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q 'expected a number or a time like "850 ms"' "$out"; then
  echo "FAIL: a size for a time key: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
"$bin" check $sc --set 'expect={"ranks": {"max": "2 s"}}' >"$out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q '"ranks" has no unit' "$out"; then
  echo "FAIL: a unit for a plain key: exit $rc"; cat "$out"; fails=$((fails + 1)); fi
# --junit: one testcase per expectation, failures with their message, a
# scenario that cannot run as an error; valid XML (python3's parser).
j=$(mktemp)
"$bin" check scenarios/seed002/zero0_ddp.json $sc tests/bad-inputs/arch-qk-norm-mla.json --junit "$j" \
    --set 'expect={"memory.max_peak_reserved_bytes": {"max": "70 GiB"}, "ranks": {"eq": 8}}' >"$out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! python3 - "$j" "(${resv#* GiB (}" <<'PY'
import sys, xml.dom.minidom as m
d = m.parse(sys.argv[1])
top = d.documentElement
cases = d.getElementsByTagName("testcase")
fails = [c for c in cases if c.getElementsByTagName("failure")]
errs = [c for c in cases if c.getElementsByTagName("error")]
ok = (top.getAttribute("tests") == "5" and top.getAttribute("failures") == "2"
      and top.getAttribute("errors") == "1" and len(cases) == 5 and len(fails) == 2 and len(errs) == 1
      and sys.argv[2] in fails[-1].getElementsByTagName("failure")[0].getAttribute("message"))
sys.exit(0 if ok else 1)
PY
then echo "FAIL: --junit"; cat "$out" "$j"; fails=$((fails + 1)); fi
rm -f "$out" "$out.json" "$j"
echo "$((10 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
