#include "meas.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/core/ofile.h"

struct meas {
    cJSON *root;
    cJSON *gemm, *copy, *coll;
    bool any;
};

static int nomem(ss_err *err) { return ss_fail(err, SS_E_NOMEM, NULL, "out of memory"); }

void meas_free(meas *m)
{
    if (!m) return;
    cJSON_Delete(m->root);
    free(m);
}

static void utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    if (t == (time_t)-1 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "unknown");
}

static bool add_str(cJSON *o, const char *k, const char *v)
{
    return cJSON_AddStringToObject(o, k, v) != NULL;
}

int meas_new(meas **out, const meas_hdr *g, ss_err *err)
{
    meas *m = calloc(1, sizeof *m);
    if (!m || !(m->root = cJSON_CreateObject())) {
        free(m);
        return nomem(err);
    }
    char date[64], host[256];
    utc_now(date, sizeof date);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    bool ok = add_str(m->root, "card", g->card) && add_str(m->root, "driver", g->driver) &&
              add_str(m->root, "cuda", g->cuda) && add_str(m->root, "nccl", g->nccl) &&
              add_str(m->root, "date", date) && add_str(m->root, "host", host);
    if (!ok) {
        meas_free(m);
        return nomem(err);
    }
    *out = m;
    return SS_OK;
}

/* The array `key` of the root, created on first use (the reader wants no
 * empty arrays to mean anything, so absent ones stay absent). */
static cJSON *arr(meas *m, cJSON **slot, const char *key)
{
    if (!*slot) *slot = cJSON_AddArrayToObject(m->root, key);
    return *slot;
}

/* Append object o to the array; o is consumed either way. */
static int push(meas *m, cJSON **slot, const char *key, cJSON *o, bool ok, ss_err *err)
{
    cJSON *a = arr(m, slot, key);
    if (!o || !ok || !a || !cJSON_AddItemToArray(a, o)) {
        cJSON_Delete(o);
        return nomem(err);
    }
    m->any = true;
    return SS_OK;
}

static bool add_num(cJSON *o, const char *k, double v) { return cJSON_AddNumberToObject(o, k, v) != NULL; }

int meas_gemm(meas *m, const char *dtype, uint64_t mm, uint64_t n, uint64_t k, double time_us,
              double tflops, ss_err *err)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && add_str(o, "dtype", dtype) && add_num(o, "m", (double)mm) &&
              add_num(o, "n", (double)n) && add_num(o, "k", (double)k) &&
              add_num(o, "time_us", time_us) && add_num(o, "tflops", tflops);
    return push(m, &m->gemm, "gemm", o, ok, err);
}

int meas_copy(meas *m, const char *kind, bool host_side, bool pinned, uint64_t bytes,
              double time_us, ss_err *err)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && add_str(o, "kind", kind) &&
              (!host_side || cJSON_AddBoolToObject(o, "pinned", pinned)) &&
              add_num(o, "bytes", (double)bytes) && add_num(o, "time_us", time_us);
    return push(m, &m->copy, "copy", o, ok, err);
}

int meas_launch(meas *m, double launch_us, ss_err *err)
{
    cJSON_DeleteItemFromObjectCaseSensitive(m->root, "launch_us");
    if (!add_num(m->root, "launch_us", launch_us)) return nomem(err);
    m->any = true;
    return SS_OK;
}

int meas_coll(meas *m, const char *op, uint32_t ranks, uint32_t nodes, uint64_t bytes,
              double time_us, ss_err *err)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && add_str(o, "op", op) && add_num(o, "ranks", ranks) &&
              add_num(o, "nodes", nodes) && add_num(o, "bytes", (double)bytes) &&
              add_num(o, "time_us", time_us);
    return push(m, &m->coll, "collectives", o, ok, err);
}

bool meas_empty(const meas *m) { return !m->any; }

static char *slurp(const char *path, ss_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ss_fail(err, SS_E_INPUT, path, "cannot read: %s", strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && n < (1L << 24) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        } else {
            buf[n] = '\0';
        }
    }
    fclose(f);
    if (!buf) ss_fail(err, SS_E_INPUT, path, "cannot read the file (or it is over 16 MiB)");
    return buf;
}

int meas_peaks_from(meas *m, const char *device_file, ss_err *err)
{
    char *text = slurp(device_file, err);
    if (!text) return SS_E_INPUT;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    cJSON *pk = cJSON_DetachItemFromObjectCaseSensitive(doc, "peak_tflops");
    cJSON_Delete(doc);
    if (!cJSON_IsObject(pk)) {
        cJSON_Delete(pk);
        return ss_fail(err, SS_E_INPUT, device_file,
                       "expected a device file with a \"peak_tflops\" object "
                       "(topologies/devices/)");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(m->root, "peak_tflops");
    if (!cJSON_AddItemToObject(m->root, "peak_tflops", pk)) {
        cJSON_Delete(pk);
        return nomem(err);
    }
    return SS_OK;
}

int meas_write(const meas *m, const char *path, ss_err *err)
{
    char *text = cJSON_Print(m->root);
    if (!text) return nomem(err);
    int rc = of_write_text(path, text, err);
    free(text);
    return rc;
}
