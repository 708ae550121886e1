#!/usr/bin/env bash
# Install the build and test dependencies from Debian packages.
set -euo pipefail
pkgs=(cmake gcc g++ make pkg-config libgsl-dev libcjson-dev libcmocka-dev libtomlplusplus-dev graphviz openmpi-bin libopenmpi-dev valgrind python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${missing[@]}"
