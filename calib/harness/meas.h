/* meas.h - the measurement file the harness writes (-o FILE.json), and
 * atomic file writes.
 *
 * The format is the one calib/fit/mfile.h reads, key for key, since that
 * reader rejects unknown keys:
 *   {"card", "driver", "cuda", "nccl", "date" (UTC, ISO 8601), "host",
 *    "peak_tflops": {dtype: TFLOP/s}        (only when given, from a device file)
 *    "gemm": [{"dtype", "m", "n", "k", "time_us", "tflops"}],
 *    "copy": [{"kind": "h2d|d2h|d2d", "pinned" (host copies), "bytes", "time_us"}],
 *    "launch_us": host time of one kernel launch,
 *    "collectives": [{"op", "ranks", "nodes", "bytes", "time_us"}]}
 * dtype is a scenario dtype (fp32, fp16, bf16, fp8); op is an nccl-tests
 * name (all_reduce, all_gather, reduce_scatter, broadcast, alltoall,
 * sendrecv); bytes follow nccl-tests' "size". Figures the reader does not
 * take (TF32 rates, bandwidths, device-side launch times, skips) go to the
 * harness's text output instead.
 *
 * Pure C (no CUDA). Entries keep the order they were added. Ownership: meas_new allocates,
 * meas_free releases (NULL is a no-op). Adders return SS_OK or SS_E_NOMEM.
 */
#ifndef HX_MEAS_H
#define HX_MEAS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../sim/core/err.h"

typedef struct meas meas; /* opaque */

/* What the file says the measurements were taken with. */
typedef struct meas_hdr {
    const char *card, *driver, *cuda, *nccl;
} meas_hdr;

int meas_new(meas **out, const meas_hdr *h, ss_err *err);
void meas_free(meas *m);

/* peak_tflops from a device file (topologies/devices/NAME.json: its
 * "peak_tflops" object). Errors: unreadable file or no such object
 * (SS_E_INPUT naming the file). */
int meas_peaks_from(meas *m, const char *device_file, ss_err *err);

int meas_gemm(meas *m, const char *dtype, uint64_t mm, uint64_t n, uint64_t k, double time_us,
              double tflops, ss_err *err);
int meas_copy(meas *m, const char *kind, bool host_side, bool pinned, uint64_t bytes,
              double time_us, ss_err *err);
int meas_launch(meas *m, double launch_us, ss_err *err);
int meas_coll(meas *m, const char *op, uint32_t ranks, uint32_t nodes, uint64_t bytes,
              double time_us, ss_err *err);
bool meas_empty(const meas *m);

/* Write the document to `path` (core/ofile.h: whole or not at all, "-"
 * is stdout, pipes and devices in place). */
int meas_write(const meas *m, const char *path, ss_err *err);

#endif
