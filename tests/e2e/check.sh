#!/usr/bin/env bash
# shardsim check: every shipped scenario's expectations hold; a violated
# expectation exits 1 and names the key; a key the summary lacks exits 2.
set -u
bin=$1
cd "$2" || exit 1
fails=0
out=$(mktemp)
mapfile -t files < <(find scenarios -name '*.json' | LC_ALL=C sort)
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
rm -f "$out"
echo "$((4 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
