#!/usr/bin/env bash
# Rewrite the goldens under tests/golden/ from a build's shardsim (default
# build/shardsim). Run it only after checking that every change in
# `git diff tests/golden` is intended; say why in the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/shardsim}
rm -rf tests/golden/ops tests/golden/*/
exec tests/e2e/scenarios.sh "$bin" . --update
