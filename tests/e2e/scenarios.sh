#!/usr/bin/env bash
# Every scenario under scenarios/ runs, writes a JSON summary, a Graphviz
# timeline and a Chrome trace, and gives the same bytes when run again
# (determinism).
set -u
bin=$1
cd "$2" || exit 1
out=$(mktemp -d)
fails=0; total=0
while IFS= read -r f; do
  total=$((total + 1))
  if ! "$bin" run "$f" --quiet --json "$out/a.json" --dot "$out/a.dot" --trace "$out/a.trace" 2>"$out/err" ||
     ! "$bin" run "$f" --quiet --json "$out/b.json" --dot "$out/b.dot" --trace "$out/b.trace" 2>>"$out/err"; then
    echo "FAIL: $f"; sed 's/^/    /' "$out/err"; fails=$((fails + 1)); continue
  fi
  for x in json dot trace; do
    if ! cmp -s "$out/a.$x" "$out/b.$x"; then
      echo "FAIL: $f: two runs give different $x"; fails=$((fails + 1))
    fi
  done
done < <(find scenarios -name '*.json' | LC_ALL=C sort)
rm -rf "$out"
echo "$((total - fails)) passed, $fails failed"
[ "$total" -gt 0 ] && [ "$fails" -eq 0 ]
