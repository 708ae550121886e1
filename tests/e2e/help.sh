#!/usr/bin/env bash
# Every command answers --help and -h on stdout with exit 0, whatever else
# is on the line; a mistyped command or option gets exit 2 and the nearest
# word it could have meant.
set -u
bin=$1
cd "$2" || exit 1
fails=0 n=0
check() { n=$((n + 1)); if ! eval "$2"; then echo "FAIL: $1"; fails=$((fails + 1)); fi; }
for c in run check diff sweep search coll; do
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
echo "$((n - fails)) passed, $fails failed"
[ $fails -eq 0 ]
