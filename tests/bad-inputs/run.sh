#!/usr/bin/env bash
# Runs every case of cases.txt: `shardsim run ARGS` must exit with the given
# code and print the fragment on stderr, without crashing (a sanitizer report
# or a signal fails the case) and without leaving a JSON file behind.
# SS_WRAP, if set, runs shardsim under a wrapper (valgrind in CI); a huge
# file over the 64 MiB input limit is made on the fly. A third argument
# names another cases file (tests/e2e/keys.sh: the cases the key table makes).
set -u
SS_WRAP=${SS_WRAP:-}
bin=$1
cd "$2" || exit 1
cases=${3:-tests/bad-inputs/cases.txt}
fails=0; total=0
out=$(mktemp -d)
while IFS='|' read -r code frag args; do
  case "$code" in ''|\#*) continue ;; esac
  total=$((total + 1))
  # shellcheck disable=SC2086
  $SS_WRAP "$bin" run $args --json "$out/summary.json" >"$out/stdout" 2>"$out/stderr"
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -qF -- "$frag" "$out/stderr" || [ -e "$out/summary.json" ]; then
    echo "FAIL: run $args: exit $rc (want $code), stderr:"; sed 's/^/    /' "$out/stderr"
    echo "    (wanted fragment: $frag)"
    fails=$((fails + 1))
  fi
  rm -f "$out/summary.json"
done < "$cases"
# A file over the size limit is refused before it is parsed.
total=$((total + 1))
head -c $((65 * 1024 * 1024)) /dev/zero | tr '\0' ' ' >"$out/huge.json"
$SS_WRAP "$bin" run "$out/huge.json" >"$out/stdout" 2>"$out/stderr"
rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "larger than" "$out/stderr"; then
  echo "FAIL: a 65 MiB file: exit $rc"; fails=$((fails + 1)); fi
rm -rf "$out"
echo "$((total - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
