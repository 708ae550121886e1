#!/usr/bin/env bash
# Every scenario under scenarios/ runs once, writing a JSON summary, a
# Graphviz timeline and a Chrome trace, and each output equals its golden
# under tests/golden/ (which also makes it deterministic: the same input has
# given the same bytes since the golden was written):
#   tests/golden/<scenario path>      the JSON summary, byte for byte;
#   tests/golden/ops/<scenario path>.txt   for the small-model scenarios
#       (examples/, seed002/): the trace, one event a line, to read in a diff;
#   tests/golden/hashes.txt           sha256 of every DOT and trace (the big
#       ones are hundreds of MB: compared on their hashes, written once).
# Usage: scenarios.sh BIN ROOT [--update]   (--update rewrites the goldens;
# scripts/golden.sh runs it that way).
set -u
bin=$1
cd "$2" || exit 1
update=${3:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g=tests/golden
hashes="$out/hashes.txt"
: >"$hashes"
fails=0; total=0
small() { case $1 in scenarios/examples/*|scenarios/seed002/*) return 0;; esac; return 1; }
# SS_SKIP_PUBLISHED=1 (scripts/test.sh's sanitizer pass): leave out the
# production-size rows of scenarios/published, which the plain build's pass
# has compared; their hash lines are left out of the comparison too.
skip_published() { if [ "${SS_SKIP_PUBLISHED:-}" = 1 ]; then grep -v '^scenarios/published/'; else cat; fi; }
oplist() { sed 's/},{"name"/}\n{"name"/g' "$1"; echo; }
while IFS= read -r f; do
  total=$((total + 1))
  if ! "$bin" run "$f" --quiet --json "$out/a.json" --dot "$out/a.dot" --trace "$out/a.trace" 2>"$out/err"; then
    echo "FAIL: $f"; sed 's/^/    /' "$out/err"; fails=$((fails + 1)); continue
  fi
  rel=${f#scenarios/}
  echo "$(sha256sum <"$out/a.dot" | cut -c1-64)  $rel.dot" >>"$hashes"
  echo "$(sha256sum <"$out/a.trace" | cut -c1-64)  $rel.trace" >>"$hashes"
  if [ "$update" = --update ]; then
    mkdir -p "$(dirname "$g/$rel")"
    cp "$out/a.json" "$g/$rel"
    if small "$f"; then mkdir -p "$(dirname "$g/ops/$rel")"; oplist "$out/a.trace" >"$g/ops/$rel.txt"; fi
    continue
  fi
  if ! cmp -s "$out/a.json" "$g/$rel"; then
    echo "FAIL: $f: summary differs from $g/$rel"
    diff "$g/$rel" "$out/a.json" 2>&1 | head -20 | sed 's/^/    /'
    fails=$((fails + 1))
  fi
  if small "$f"; then
    oplist "$out/a.trace" >"$out/ops.txt"
    if ! cmp -s "$out/ops.txt" "$g/ops/$rel.txt"; then
      echo "FAIL: $f: ops differ from $g/ops/$rel.txt"
      diff "$g/ops/$rel.txt" "$out/ops.txt" 2>&1 | head -10 | sed 's/^/    /'
      fails=$((fails + 1))
    fi
  fi
done < <(find scenarios -name '*.json' | LC_ALL=C sort | skip_published)
if [ "$update" = --update ]; then
  cp "$hashes" "$g/hashes.txt"
  echo "goldens written for $total scenarios ($fails failed to run)"
  [ "$fails" -eq 0 ]; exit
fi
want="$out/want.txt"
if [ "${SS_SKIP_PUBLISHED:-}" = 1 ]; then grep -v '  published/' "$g/hashes.txt" >"$want"; else cp "$g/hashes.txt" "$want"; fi
if ! cmp -s "$hashes" "$want"; then
  echo "FAIL: DOT or trace hashes differ from $g/hashes.txt:"
  diff "$want" "$hashes" | grep '^[<>]' | head -20 | sed 's/^/    /'
  fails=$((fails + 1))
fi
echo "$((total - fails)) passed, $fails failed"
[ "$total" -gt 0 ] && [ "$fails" -eq 0 ]
