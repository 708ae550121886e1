#!/usr/bin/env bash
# calib/run-device.sh - calibrate one GPU machine in one go (docs/HARNESS.md).
#
# On a machine with an NVIDIA GPU, nvcc (on PATH or in /usr/local/cuda),
# cuBLAS, NCCL and this repository: build shardsim and shardsim-calib with
# CUDA, run `shardsim-calib all` (GEMMs, copies, launch overhead,
# collectives; one to three minutes), replay rank 0 of seeds/002's FULL_SHARD
# step on the GPU, check that the simulator's diff and the fitter read what
# the harness wrote, and keep nvidia-smi -q and the versions. Everything goes
# to $OUT (default ./calib-out), eight files at most:
#   run.log             every step's command, exit code and messages; versions
#   nvidia-smi.txt      nvidia-smi -q and the summary table
#   calib.json          the measurement file (the fitter's input)
#   calib.txt           what `all` printed: GEMM/copy/launch lines, nccl-tests blocks
#   predicted.json      the simulated summary of the replayed scenario
#   measured.json       the measured summary (`shardsim diff predicted measured`)
#   measured-trace.json the measured step as a Perfetto trace
#   replay.txt          the replay's plan line and the predicted/measured diff
# Every step runs under `timeout`, so the script cannot hang; a failed step
# is logged and the next still runs. Exit code: 0, or the first failure's.
#
# The build needs cmake, pkg-config, cJSON and GSL. A machine that cannot
# install packages can use .deps/, made beforehand on a Debian or Ubuntu
# x86-64 machine that can (apt-get download; nothing is installed there):
#   calib/run-device.sh --fetch-deps
#
# Settings: OUT, BUILD (default build-gpu), CUDA_ARCH (default 90), SCENARIO
# (default scenarios/seed002/zero3_full_shard_pre.json), BUDGET_S (default 200).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
DEB_PKGS=(libcjson1 libcjson-dev libgsl27 libgslcblas0 libgsl-dev libpkgconf3 pkgconf-bin pkgconf)

if [ "${1:-}" = "--fetch-deps" ]; then
  set -e
  mkdir -p .deps/debs
  (cd .deps/debs && apt-get download "${DEB_PKGS[@]}")
  for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/root; done
  rm -rf .deps/debs
  echo "dependencies unpacked under $ROOT/.deps/root; carry .deps with the repository"
  exit 0
fi

OUT=${OUT:-$ROOT/calib-out}
BUILD=${BUILD:-build-gpu}
CUDA_ARCH=${CUDA_ARCH:-90}
SCENARIO=${SCENARIO:-scenarios/seed002/zero3_full_shard_pre.json}
BUDGET_S=${BUDGET_S:-200}
mkdir -p "$OUT"
LOG=$OUT/run.log
: >"$LOG"
FIRST_RC=0
T0=$(date +%s)

log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG" >&2; }

# step NAME LIMIT_S CMD...: run with a timeout, log the exit code, keep the
# first failure. stdout goes where the caller redirects it; stderr to the log.
step() {
  local name=$1 limit=$2
  shift 2
  log "== $name (limit ${limit}s): $*"
  timeout -k 10 "$limit" "$@" 2>>"$LOG"
  local rc=$?
  [ $rc -eq 124 ] && log "== $name: TIMED OUT after ${limit}s"
  log "== $name: exit $rc"
  [ $rc -ne 0 ] && [ $FIRST_RC -eq 0 ] && FIRST_RC=$rc
  return $rc
}

# The same, for checks whose failure is worth a log line but is not the
# harness's (the fitter on one-rank collectives, say): FIRST_RC is kept.
soft_step() {
  local keep=$FIRST_RC
  step "$@"
  local rc=$?
  FIRST_RC=$keep
  return $rc
}

find_nvcc() {
  if command -v nvcc >/dev/null; then command -v nvcc; return; fi
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    [ -x "$d/nvcc" ] && { echo "$d/nvcc"; return; }
  done
}

# A Python package's directory (the CUDA wheels: nvidia.nccl, nvidia.cublas).
py_pkg_dir() {
  command -v python3 >/dev/null || return 0
  timeout 30 python3 - "$1" <<'EOF' 2>/dev/null
import importlib.util, sys
s = importlib.util.find_spec(sys.argv[1])
if s and s.submodule_search_locations:
    print(list(s.submodule_search_locations)[0])
EOF
}

versions() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)  kernel: $(uname -r)  cpus: $(nproc)"
    echo "repo: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "nvcc: $("$NVCC" --version 2>&1 | tail -1)"
    echo "cmake: $(cmake --version 2>&1 | head -1)"
    echo "gcc: $(gcc --version 2>&1 | head -1)"
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv 2>&1
  } >>"$LOG"
}

# pkg-config, cJSON and GSL from the system, else from .deps/root (the .pc
# files rewritten to where .deps is now), else apt-get where it works.
setup_deps() {
  if command -v pkg-config >/dev/null && pkg-config --exists libcjson gsl; then return 0; fi
  local r=$ROOT/.deps/root
  if [ -d "$r" ]; then
    local pc=$ROOT/.deps/pkgconfig
    mkdir -p "$pc"
    for f in "$r"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$r"/usr/share/pkgconfig/*.pc; do
      [ -f "$f" ] && sed -e "s|=/usr|=$r/usr|g" -e "s|-L/usr|-L$r/usr|g" -e "s|-I/usr|-I$r/usr|g" \
        "$f" >"$pc/$(basename "$f")"
    done
    export PKG_CONFIG_PATH=$pc
    export PKG_CONFIG_LIBDIR=$pc
    export LD_LIBRARY_PATH=$r/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    command -v pkg-config >/dev/null || PKGCONF=$r/usr/bin/pkgconf
    log "dependencies from $r"
    return 0
  fi
  if command -v apt-get >/dev/null; then
    log "installing build dependencies with apt-get"
    step apt-update 120 apt-get update -qq && step apt-install 240 env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq cmake gcc make pkg-config libcjson-dev libgsl-dev >>"$LOG"
    return $?
  fi
  log "no cJSON / GSL / pkg-config and no .deps: run calib/run-device.sh --fetch-deps where packages install"
  return 1
}

# NCCL and cuBLAS beside nvcc, else from the Python CUDA wheels.
find_libs() {
  local cuda
  cuda=$(dirname "$(dirname "$NVCC")")
  if ! ls "$cuda"/include/nccl.h >/dev/null 2>&1 && ! ls /usr/include/nccl.h >/dev/null 2>&1; then
    local d
    d=$(py_pkg_dir nvidia.nccl)
    if [ -n "$d" ] && [ -f "$d/include/nccl.h" ]; then
      CMAKE_EXTRA+=(-DSS_NCCL_ROOT="$d")
      export LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      log "NCCL from $d"
    fi
  fi
  if ! ls "$cuda"/lib64/libcublas.so* "$cuda"/lib/libcublas.so* >/dev/null 2>&1; then
    local b
    b=$(py_pkg_dir nvidia.cublas)
    if [ -n "$b" ]; then
      CMAKE_EXTRA+=(-DCUDA_cublas_LIBRARY="$(ls "$b"/lib/libcublas.so* | head -1)"
                    -DCUDA_cublasLt_LIBRARY="$(ls "$b"/lib/libcublasLt.so* | head -1)")
      export CPATH=$b/include${CPATH:+:$CPATH}
      export LD_LIBRARY_PATH=$b/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      log "cuBLAS from $b"
    fi
  fi
}

peak_file() {
  local name
  name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  case "$name" in
    *H200*) echo topologies/devices/h200-sxm-141gb.json ;;
    *H100*) echo topologies/devices/h100-sxm5-80gb.json ;;
    *A100*) echo topologies/devices/a100-sxm4-80gb.json ;;
    *B200*) echo topologies/devices/b200-180gb.json ;;
    *V100*) echo topologies/devices/v100-sxm2-32gb.json ;;
  esac
}

NVCC=$(find_nvcc)
PKGCONF=""
CMAKE_EXTRA=()
if [ -z "$NVCC" ]; then
  log "no nvcc on PATH or in /usr/local/cuda: the harness cannot be built"
  exit 1
fi
versions
{ timeout 60 nvidia-smi -q; echo; timeout 30 nvidia-smi; } >"$OUT/nvidia-smi.txt" 2>&1 ||
  log "nvidia-smi failed (see nvidia-smi.txt)"

setup_deps || { log "build dependencies missing"; exit 1; }
find_libs
[ -n "$PKGCONF" ] && CMAKE_EXTRA+=(-DPKG_CONFIG_EXECUTABLE="$PKGCONF")

step configure 300 cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSS_TESTS=OFF -DSS_NO_MPI=ON \
  -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" "${CMAKE_EXTRA[@]}" >>"$LOG" ||
  { log "configure failed"; exit 1; }
grep -q "calibration harness: CUDA" "$LOG" || { log "CMake did not configure the CUDA harness (see above)"; exit 1; }
step build 600 cmake --build "$BUILD" -j"$(nproc)" --target shardsim shardsim-calib >"$OUT/build.tmp" ||
  { tail -60 "$OUT/build.tmp" >>"$LOG"; rm -f "$OUT/build.tmp"; log "build failed"; exit 1; }
rm -f "$OUT/build.tmp"
CALIB=$ROOT/$BUILD/shardsim-calib
SIM=$ROOT/$BUILD/shardsim

PEAK=$(peak_file)
PEAK_ARGS=()
[ -n "$PEAK" ] && PEAK_ARGS=(--peak-file "$PEAK")
step all $((BUDGET_S + 120)) "$CALIB" all -o "$OUT/calib.json" --budget-s "$BUDGET_S" "${PEAK_ARGS[@]}" \
  >"$OUT/calib.txt"

step replay 300 "$CALIB" replay "$SCENARIO" --rank 0 --iters 3 -o "$OUT/measured.json" \
  --trace "$OUT/measured-trace.json" --predicted "$OUT/predicted.json" >"$OUT/replay.txt"

if [ -f "$OUT/measured.json" ] && [ -f "$OUT/predicted.json" ]; then
  step diff 60 "$SIM" diff "$OUT/predicted.json" "$OUT/measured.json" >>"$LOG"
fi
if [ -f "$OUT/calib.json" ]; then
  soft_step fit 120 "$CALIB" fit --measurements "$OUT/calib.json" -o "$ROOT/$BUILD/calib-profile.json" >>"$LOG"
  soft_step fit-nccl-tests 120 "$CALIB" fit --nccl-tests "$OUT/calib.txt" \
    -o "$ROOT/$BUILD/coll-profile.json" >>"$LOG"
fi
log "done in $(($(date +%s) - T0))s, exit $FIRST_RC; outputs in $OUT"
exit $FIRST_RC
