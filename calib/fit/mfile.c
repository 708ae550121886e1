/* mfile.c - the harness's measurement file (contract in mfile.h). */
#include "mfile.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/io/json.h"

#define MAX_DIM (1ull << 32)          /* a GEMM side; m n k stays below 2^96 */
#define MAX_BYTES 9007199254740992ull /* 2^53, the exact-integer limit of json.h */
#define MAX_US 1e12

static const char *const copy_kinds[] = {"h2d", "d2h", "d2d"};

static int nomem(const char *file, ss_err *err)
{
    return ss_fail(err, SS_E_NOMEM, file, "out of memory");
}

static int dup_str(js_node n, const char *key, bool required, char **out, ss_err *err)
{
    const char *s = NULL;
    int rc = js_str(n, key, required, NULL, &s, err);
    if (rc || !s) return rc;
    size_t len = strlen(s);
    if (!(*out = malloc(len + 1))) return nomem(n.file, err);
    memcpy(*out, s, len + 1);
    return SS_OK;
}

/* calloc of an array's elements, or NULL with *rc set; none for len 0. */
static void *alloc_arr(js_node arr, size_t len, size_t size, int *rc, ss_err *err)
{
    if (!len) return NULL;
    void *p = calloc(len, size);
    if (!p) *rc = nomem(arr.file, err);
    return p;
}

static int load_gemm_one(js_node n, mf_gemm *g, ss_err *err)
{
    static const char *const keys[] = {"dtype", "m", "n", "k", "time_us", "tflops"};
    int dt = 0;
    int rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_enum(n, "dtype", true, 0, spec_dtype_names, SPEC_NDT, &dt, err);
    if (!rc) rc = js_u64(n, "m", true, 0, 1, MAX_DIM, &g->m, err);
    if (!rc) rc = js_u64(n, "n", true, 0, 1, MAX_DIM, &g->n, err);
    if (!rc) rc = js_u64(n, "k", true, 0, 1, MAX_DIM, &g->k, err);
    if (!rc) rc = js_num(n, "time_us", true, 0, 1e-6, MAX_US, &g->time_us, err);
    if (rc) return rc;
    /* FLOP/us is MFLOP/s: 2 m n k / time_us / 1e6 TFLOP/s. */
    double derived = 2.0 * (double)g->m * (double)g->n * (double)g->k / g->time_us / 1e6;
    rc = js_num(n, "tflops", false, derived, 1e-9, 1e6, &g->tflops, err);
    g->dtype = (spec_dtype)dt;
    return rc;
}

static int load_copy_one(js_node n, mf_copy *c, ss_err *err)
{
    static const char *const keys[] = {"kind", "pinned", "bytes", "time_us"};
    int kind = 0;
    bool pinned = false;
    int rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_enum(n, "kind", true, 0, copy_kinds, SS_ARRAY_LEN(copy_kinds), &kind, err);
    /* Pinned or pageable decides a host copy's speed, so host copies must
     * say which; device to device has no host memory. */
    if (!rc) rc = js_bool(n, "pinned", kind != 2, false, &pinned, err);
    if (!rc) rc = js_u64(n, "bytes", true, 0, 1, MAX_BYTES, &c->bytes, err);
    if (!rc) rc = js_num(n, "time_us", true, 0, 1e-6, MAX_US, &c->time_us, err);
    c->kind = kind == 2 ? PROF_COPY_D2D
              : kind == 0 ? (pinned ? PROF_COPY_H2D_PINNED : PROF_COPY_H2D_PAGEABLE)
                          : (pinned ? PROF_COPY_D2H_PINNED : PROF_COPY_D2H_PAGEABLE);
    return rc;
}

static int load_coll_one(js_node n, mf_coll *c, ss_err *err)
{
    static const char *const keys[] = {"op", "ranks", "nodes", "bytes", "time_us"};
    int op = 0;
    uint64_t ranks = 0, nodes = 0;
    int rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_enum(n, "op", true, 0, ncclt_op_names, NCCLT_NOPS, &op, err);
    if (!rc) rc = js_u64(n, "ranks", true, 0, 1, 1u << 24, &ranks, err);
    if (!rc) rc = js_u64(n, "nodes", false, 1, 1, ranks, &nodes, err);
    if (!rc) rc = js_u64(n, "bytes", true, 0, 1, MAX_BYTES, &c->bytes, err);
    if (!rc) rc = js_num(n, "time_us", true, 0, 1e-6, MAX_US, &c->time_us, err);
    c->op = (ncclt_op)op;
    c->ranks = (uint32_t)ranks;
    c->nodes = (uint32_t)nodes;
    return rc;
}

static int load_arrays(js_node root, mf_data *m, ss_err *err)
{
    js_node a;
    size_t len;
    int rc = js_arr(root, "gemm", false, &a, &len, err);
    if (!rc && (m->gemm = alloc_arr(a, len, sizeof *m->gemm, &rc, err)))
        for (size_t i = 0; i < len && !rc; i++, m->ngemm++) rc = load_gemm_one(js_at(a, i), &m->gemm[i], err);
    if (!rc) rc = js_arr(root, "copy", false, &a, &len, err);
    if (!rc && (m->copy = alloc_arr(a, len, sizeof *m->copy, &rc, err)))
        for (size_t i = 0; i < len && !rc; i++, m->ncopy++) rc = load_copy_one(js_at(a, i), &m->copy[i], err);
    if (!rc) rc = js_arr(root, "collectives", false, &a, &len, err);
    if (!rc && (m->coll = alloc_arr(a, len, sizeof *m->coll, &rc, err)))
        for (size_t i = 0; i < len && !rc; i++, m->ncoll++) rc = load_coll_one(js_at(a, i), &m->coll[i], err);
    return rc;
}

static int load_peaks(js_node root, mf_data *m, ss_err *err)
{
    js_node pk;
    if (!js_get(root, "peak_tflops", &pk)) return SS_OK;
    int rc = js_keys_check(pk, spec_dtype_names, SPEC_NDT, err);
    for (int d = 0; d < SPEC_NDT && !rc; d++)
        rc = js_num(pk, spec_dtype_names[d], false, 0, 1e-6, 1e6, &m->peak_tflops[d], err);
    return rc;
}

static int load_root(js_node root, mf_data *m, ss_err *err)
{
    static const char *const keys[] = {"card", "driver", "cuda", "nccl", "date", "host",
                                       "peak_tflops", "gemm", "copy", "launch_us",
                                       "collectives"};
    int rc = js_keys_check(root, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = dup_str(root, "card", true, &m->card, err);
    char **opt[] = {&m->driver, &m->cuda, &m->nccl, &m->date, &m->host};
    for (size_t i = 0; i < SS_ARRAY_LEN(opt) && !rc; i++)
        rc = dup_str(root, keys[1 + i], false, opt[i], err);
    if (!rc) rc = load_peaks(root, m, err);
    if (!rc) rc = load_arrays(root, m, err);
    if (!rc) rc = js_num(root, "launch_us", false, NAN, 1e-6, MAX_US, &m->launch_us, err);
    if (!rc && !m->ngemm && !m->ncopy && !m->ncoll && isnan(m->launch_us))
        rc = js_failf(root, err,
                      "nothing to fit: expected at least one of \"gemm\", \"copy\", "
                      "\"launch_us\", \"collectives\"");
    return rc;
}

void mf_fini(mf_data *m)
{
    if (!m) return;
    char *s[] = {m->card, m->driver, m->cuda, m->nccl, m->date, m->host};
    for (size_t i = 0; i < SS_ARRAY_LEN(s); i++) free(s[i]);
    free(m->gemm);
    free(m->copy);
    free(m->coll);
    memset(m, 0, sizeof *m);
    m->launch_us = NAN;
}

int mf_load(const char *file, mf_data *out, ss_err *err)
{
    js_doc d;
    int rc = js_doc_load(&d, file, err);
    if (rc) return rc;
    mf_data m;
    memset(&m, 0, sizeof m);
    m.launch_us = NAN;
    rc = load_root(js_root(&d), &m, err);
    js_doc_fini(&d);
    if (rc) {
        mf_fini(&m);
        return rc;
    }
    *out = m;
    return SS_OK;
}
