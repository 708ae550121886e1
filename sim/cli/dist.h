/* dist.h - a sweep split across processes under MPI (mpirun -n K).
 *
 * Process r runs points r, r + K, r + 2K, ...; rank 0 gathers every row and
 * returns the whole CSV body in point order, the others return NULL. The
 * result is byte for byte the serial sweep's. Built only when CMake finds
 * MPI (SS_WITH_MPI); without it dist_active() is false and the sweep runs
 * in one process.
 */
#ifndef DIST_H
#define DIST_H

#include <stdbool.h>

#include "../run/sweep.h"

/* True when this process was started by an MPI launcher and MPI is built in. */
bool dist_active(void);

/* MPI_Init, run this process's share, gather on rank 0, MPI_Finalize.
 * *rows: the full body on rank 0, NULL elsewhere (caller frees). */
int dist_sweep(sweep_cfg *c, char **rows, bool *is_root, ss_err *err);

#endif
