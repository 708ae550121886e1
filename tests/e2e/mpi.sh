#!/usr/bin/env bash
# A sweep split across 2 MPI processes on this machine gives the serial
# sweep's CSV, byte for byte.
set -u
bin=$1
cd "$2" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=$(mktemp -d)
args=(scenarios/seed002/zero3_full_shard_pre.json --vary sharding.strategy=full_shard,shard_grad_op,ddp
      --vary parallel.dp=1,2,4,8 --vary runtime.hook_us=0,500)
"$bin" sweep "${args[@]}" -o "$d/serial.csv" || { echo "FAIL: serial sweep"; exit 1; }
timeout 120 mpirun -n 2 --oversubscribe "$bin" sweep "${args[@]}" -o "$d/mpi.csv"
rc=$?
fails=0
if [ $rc -ne 0 ]; then echo "FAIL: mpirun exited $rc"; fails=1;
elif ! cmp -s "$d/serial.csv" "$d/mpi.csv"; then echo "FAIL: MPI CSV differs"; diff "$d/serial.csv" "$d/mpi.csv" | head; fails=1; fi
rm -rf "$d"
echo "$((1 - fails)) passed, $fails failed"
[ $fails -eq 0 ]
