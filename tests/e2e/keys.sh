#!/usr/bin/env bash
# The key table (`shardsim keys`, sim/cli/keys_cmd.h): the loader's own
# reading of every shipped scenario. Checked here: it holds the keys and
# bounds the loader enforces (parallel.tp is an integer in [1, 1024], as
# scenario.c reads it); docs/KEYS.md is that table as of now; every key of
# the scenario's own sections is named in the README's scenario section;
# and every case the table makes (a wrong type or a value past a bound for
# each typed key) is refused, naming its path, by the bad-input runner.
. "$(dirname "$0")/lib.sh" "$@"
"$bin" keys scenarios/*/ >"$d/table" 2>"$d/err"
check "the table builds from every shipped scenario" '[ $? -eq 0 ] && [ ! -s "$d/err" ]'
check "parallel.tp: an optional integer in [1, 1024], default 1" \
  'grep -Eq "^parallel\.tp +integer +\[1, 1024\] +1$" "$d/table"'
check "sharding.strategy: a required enum" 'grep -Eq "^sharding\.strategy +enum +yes " "$d/table"'
check "at least 150 keys" '[ "$(wc -l <"$d/table")" -gt 150 ]'
"$bin" keys --markdown scenarios/*/ >"$d/md"
check "docs/KEYS.md is the table of today's loader (regenerate: see its first lines)" \
  'diff <(grep "^|" docs/KEYS.md) "$d/md" >"$d/mddiff"'
[ -s "$d/mddiff" ] && head -20 "$d/mddiff"
sec=$(sed -n '/^## Scenario files/,$p' README.md | sed -n '2,${/^## /q;p}')
missing=$(awk 'NR > 1 { print $1 }' "$d/table" |
  grep -E '^(parallel|training|precision|optimizer|offload|runtime|allocator|init|network|trainer)\.' |
  grep -v '\[' | while read -r k; do grep -qF -- "${k##*.}" <<<"$sec" || echo "$k"; done)
check "the README's scenario section names every key of those sections${missing:+ (missing: $missing)}" \
  '[ -z "$missing" ]'
"$bin" keys --cases scenarios/*/ >"$d/cases"
check "at least 100 cases" '[ "$(wc -l <"$d/cases")" -ge 100 ]'
bash tests/bad-inputs/run.sh "$bin" . "$d/cases" >"$d/run" 2>&1
check "every case is refused naming its path" '[ $? -eq 0 ]'
grep FAIL -A3 "$d/run" | head -20
"$bin" keys >/dev/null 2>&1
check "no scenario: a usage error" '[ $? -eq 2 ]'
"$bin" keys --markdown --cases scenarios/examples >/dev/null 2>&1
check "two outputs: a usage error" '[ $? -eq 2 ]'
echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
