#!/usr/bin/env bash
# Runs every case of cases.txt: `shardsim run ARGS` must exit with the given
# code and print the fragment on stderr, without crashing (a sanitizer report
# or a signal fails the case) and without leaving a JSON file behind.
set -u
bin=$1
cd "$2" || exit 1
fails=0; total=0
out=$(mktemp -d)
while IFS='|' read -r code frag args; do
  case "$code" in ''|\#*) continue ;; esac
  total=$((total + 1))
  # shellcheck disable=SC2086
  "$bin" run $args --json "$out/summary.json" >"$out/stdout" 2>"$out/stderr"
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$frag" "$out/stderr" || [ -e "$out/summary.json" ]; then
    echo "FAIL: run $args: exit $rc (want $code), stderr:"; sed 's/^/    /' "$out/stderr"
    echo "    (wanted fragment: $frag)"
    fails=$((fails + 1))
  fi
  rm -f "$out/summary.json"
done < tests/bad-inputs/cases.txt
rm -rf "$out"
echo "$((total - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
