/* mfile.h - the measurement file the GPU harness writes (calib/harness/).
 *
 * Format (docs/CALIBRATION.md): the card and software versions, GEMM rates
 * per (dtype, m, n, k), copy times per (kind, pinned, bytes), one kernel
 * launch time, and collective times per (op, ranks, nodes, bytes). The file
 * is raw data; mf_ only reads and checks it, cal_ fits it.
 *
 * Validation is strict, through the js_ layer: unknown keys, wrong types
 * and values out of range are SS_E_INPUT errors with "file: $.json.path".
 * A file with nothing to fit (no gemm, copy, launch_us or collectives) is an
 * error. Arrays keep file order, so messages can name "$.gemm[i]".
 *
 * Ownership: *out owns its strings and arrays, freed by mf_fini (a zeroed
 * mf_data is fine); on error *out is untouched. Knows nothing about fitting.
 */
#ifndef MF_H
#define MF_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/core/err.h"
#include "../../sim/io/ncclt.h"
#include "../../sim/io/profile.h"
#include "../../sim/plan/spec.h"

typedef struct mf_gemm {
    spec_dtype dtype;
    uint64_t m, n, k;
    double time_us;
    double tflops; /* as written, or 2 m n k / time when the file omits it */
} mf_gemm;

typedef struct mf_copy {
    prof_copy_kind kind; /* kind and pinned together */
    uint64_t bytes;
    double time_us;
} mf_copy;

typedef struct mf_coll {
    ncclt_op op;
    uint32_t ranks, nodes;
    uint64_t bytes;
    double time_us;
} mf_coll;

typedef struct mf_data {
    char *card;                               /* required */
    char *driver, *cuda, *nccl, *date, *host; /* NULL when not given */
    double peak_tflops[SPEC_NDT];             /* 0 when not given */
    mf_gemm *gemm;
    size_t ngemm;
    mf_copy *copy;
    size_t ncopy;
    mf_coll *coll;
    size_t ncoll;
    double launch_us; /* NAN when not given */
} mf_data;

int mf_load(const char *file, mf_data *out, ss_err *err);
void mf_fini(mf_data *m);

#endif
