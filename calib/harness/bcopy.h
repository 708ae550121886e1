/* bcopy.h - copy bandwidth: cudaMemcpyAsync over a size sweep.
 *
 * Kinds: device to device; host to device and device to host, each from
 * pinned (cudaMallocHost) and from pageable (malloc, touched first) host
 * memory. Sizes min, min * factor, ... up to max (pageable copies stop at
 * pageable_max: they run at a fraction of PCIe speed and would eat the
 * budget). Timing: 2 warm-up copies, then `repeats` batches of as many
 * copies as fill target_ms; the median per copy is reported. Pinned and
 * device copies are timed with CUDA events on one stream; pageable ones
 * with the host clock around the batch and a stream synchronize, because
 * the host thread does part of the work (staging) and a training step waits
 * for it too. The device side rotates through a buffer of at least twice
 * the L2 cache, so small copies do not hit L2.
 *
 * Results: "copy" entries of the measurement file and "# copy ..." lines
 * to `out`. Failures of CUDA calls end the run with HX_E_DEVICE.
 */
#ifndef HX_BCOPY_H
#define HX_BCOPY_H

#include <stdio.h>

#include "gpu.h"
#include "meas.h"

typedef struct bcopy_opts {
    uint64_t min_bytes, max_bytes, pageable_max;
    double factor;
    unsigned repeats;
    double target_ms;
    bool d2d, h2d, d2h, pinned, pageable; /* which kinds */
    uint64_t deadline_ns;                 /* 0: none */
} bcopy_opts;

int bcopy_run(const gpu_info *g, const bcopy_opts *o, meas *m, FILE *out, ss_err *err);

#endif
