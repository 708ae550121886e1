# The common start of the e2e shell tests, sourced as
#   . "$(dirname "$0")/lib.sh" "$@"
# with the script's own arguments BIN ROOT: sets bin (the shardsim binary),
# enters ROOT (the source tree), makes a scratch folder $d removed on exit,
# and defines check NAME EXPR, which evaluates EXPR, prints "FAIL: NAME"
# when it is false, and counts in $checks and $fails. EXPR sees the exit
# status of the command before the call in $? (check evaluates it first).
set -u
bin=$1
cd "$2" || exit 1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0 checks=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fails=$((fails + 1)); fi; checks=$((checks + 1)); }
