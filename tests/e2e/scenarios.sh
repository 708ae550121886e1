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
# One scenario, number $1, file $2, in its own folder $out/$1: what it
# prints goes to $out/$1/log, its hash lines to $out/$1/hashes, and a file
# $out/$1/failed counts each failure (the loop below reads them in order).
one() {
  local d="$out/$1" f=$2 rel=${2#scenarios/}
  mkdir -p "$d"
  exec >"$d/log"
  : >"$d/hashes"
  if ! "$bin" run "$f" --quiet --json "$d/a.json" --dot "$d/a.dot" --trace "$d/a.trace" 2>"$d/err"; then
    echo "FAIL: $f"; sed 's/^/    /' "$d/err"; echo >>"$d/failed"; rm -f "$d"/a.*; return
  fi
  echo "$(sha256sum <"$d/a.dot" | cut -c1-64)  $rel.dot" >>"$d/hashes"
  echo "$(sha256sum <"$d/a.trace" | cut -c1-64)  $rel.trace" >>"$d/hashes"
  if [ "$update" = --update ]; then
    mkdir -p "$(dirname "$g/$rel")"
    cp "$d/a.json" "$g/$rel"
    if small "$f"; then mkdir -p "$(dirname "$g/ops/$rel")"; oplist "$d/a.trace" >"$g/ops/$rel.txt"; fi
    rm -f "$d"/a.*; return
  fi
  if ! cmp -s "$d/a.json" "$g/$rel"; then
    echo "FAIL: $f: summary differs from $g/$rel"
    diff "$g/$rel" "$d/a.json" 2>&1 | head -20 | sed 's/^/    /'
    echo >>"$d/failed"
  fi
  if small "$f"; then
    oplist "$d/a.trace" >"$d/ops.txt"
    if ! cmp -s "$d/ops.txt" "$g/ops/$rel.txt"; then
      echo "FAIL: $f: ops differ from $g/ops/$rel.txt"
      diff "$g/ops/$rel.txt" "$d/ops.txt" 2>&1 | head -10 | sed 's/^/    /'
      echo >>"$d/failed"
    fi
  fi
  rm -f "$d"/a.* "$d/ops.txt" # the traces run to hundreds of MB
}
export -f one small oplist
export bin out g update
# Two scenarios at a time (SS_JOBS to change): the largest runs take most
# of the pass, and ctest gives this script one of its slots.
find scenarios -name '*.json' | LC_ALL=C sort | skip_published | awk '{print NR, $0}' >"$out/list"
xargs -P "${SS_JOBS:-2}" -n 2 bash -c 'one "$1" "$2"' one <"$out/list"
total=$(wc -l <"$out/list")
while read -r i f; do
  if [ ! -f "$out/$i/log" ]; then echo "FAIL: $f: not run"; fails=$((fails + 1)); continue; fi
  cat "$out/$i/log"
  cat "$out/$i/hashes" >>"$hashes"
  if [ -f "$out/$i/failed" ]; then fails=$((fails + $(wc -l <"$out/$i/failed"))); fi
done <"$out/list"
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
