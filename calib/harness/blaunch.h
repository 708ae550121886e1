/* blaunch.h - kernel launch overhead, with an empty kernel.
 *
 * Three figures, each the median of `repeats` batches of n launches:
 *   host_us    host time per cudaLaunchKernel of back-to-back launches (the
 *              host side of every kernel a runtime issues; the simulator's
 *              device "launch_us"). The stream is kept busy by a spin kernel
 *              queued first, so the host never waits on the device.
 *   device_us  device time per kernel when launches are queued ahead: the
 *              events around n empty kernels behind that spin kernel (the
 *              shortest kernel the device runs back to back).
 *   sync_us    launch, then cudaStreamSynchronize: the round trip of one
 *              kernel on an idle device.
 * host_us goes to the measurement file as "launch_us"; all three go to
 * `out` as "# launch ..." lines. CUDA failures: HX_E_DEVICE.
 */
#ifndef HX_BLAUNCH_H
#define HX_BLAUNCH_H

#include <stdio.h>

#include "gpu.h"
#include "meas.h"

typedef struct blaunch_opts {
    unsigned launches; /* per batch (at most 2000: the launch queue holds about 1000) */
    unsigned repeats;
} blaunch_opts;

typedef struct blaunch_result {
    double host_us, device_us, sync_us;
} blaunch_result;

int blaunch_run(const gpu_info *g, const blaunch_opts *o, meas *m, FILE *out, blaunch_result *res,
                ss_err *err);

#endif
