#!/usr/bin/env bash
# Every command answers --help and -h on stdout with exit 0, whatever else
# is on the line; a mistyped command or option gets exit 2 and the nearest
# word it could have meant; what a changed scenario prints.
set -u
bin=$1
cd "$2" || exit 1
fails=0 n=0
check() { n=$((n + 1)); if ! eval "$2"; then echo "FAIL: $1"; fails=$((fails + 1)); fi; }
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
echo "$((n - fails)) passed, $fails failed"
[ $fails -eq 0 ]
