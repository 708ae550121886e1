#!/usr/bin/env bash
# run --memory-snapshot FILE: a protocol-2 pickle (PROTO 2 first, STOP
# last), written whole or not at all; the same bytes twice; the ideal
# allocator refused naming the file and the key. Its contents are checked
# by test_memsnap.
. "$(dirname "$0")/lib.sh" "$@"
s=scenarios/seed002/zero3_full_shard_pre.json
"$bin" run "$s" --quiet --memory-snapshot "$d/a.pickle" >/dev/null 2>"$d/err"
check "writes" '[ $? -eq 0 ] && [ -s "$d/a.pickle" ]'
check "PROTO 2" '[ "$(head -c 2 "$d/a.pickle" | od -An -tx1 | tr -d " ")" = 8002 ]'
check "STOP last" '[ "$(tail -c 1 "$d/a.pickle")" = . ]'
"$bin" run "$s" --quiet --memory-snapshot "$d/b.pickle" >/dev/null 2>&1
check "deterministic" 'cmp -s "$d/a.pickle" "$d/b.pickle"'
"$bin" run "$s" --quiet --set allocator.model=ideal --json "$d/c.json" --memory-snapshot "$d/c.pickle" >/dev/null 2>"$d/err"
check "ideal: exit 2" '[ $? -eq 2 ]'
check "ideal: names the file and the key" 'grep -qF "$d/c.pickle: allocator.model: a memory snapshot needs the caching" "$d/err"'
check "ideal: nothing written" '[ ! -e "$d/c.pickle" ] && [ ! -e "$d/c.json" ]'
echo "$((checks - fails)) of $checks checks passed"
[ "$fails" -eq 0 ]
