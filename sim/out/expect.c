#include "expect.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walk "a.b[2].c" through the tree; NULL when a step is missing. */
const cJSON *exp_lookup(const cJSON *root, const char *path)
{
    char seg[SPEC_NAME_MAX];
    const cJSON *cur = root;
    const char *p = path;
    while (cur && *p) {
        size_t n = strcspn(p, ".[");
        if (n >= sizeof seg) return NULL;
        memcpy(seg, p, n);
        seg[n] = '\0';
        if (n) cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
        p += n;
        while (cur && *p == '[') {
            char *end;
            long i = strtol(p + 1, &end, 10);
            if (*end != ']' || i < 0) return NULL;
            cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, (int)i) : NULL;
            p = end + 1;
        }
        if (*p == '.') p++;
    }
    return cur;
}

/* v in the key's unit: "%.6g" for plain numbers; sizes in B..TiB, times in
 * s or ms, with the digits a review needs. */
static const char *fmt_q(char *buf, size_t n, double v, spec_quantity q)
{
    double a = fabs(v);
    if (q == SPEC_Q_BYTES && a >= 1099511627776.0) snprintf(buf, n, "%.2f TiB", v / 1099511627776.0);
    else if (q == SPEC_Q_BYTES && a >= 1073741824.0) snprintf(buf, n, "%.2f GiB", v / 1073741824.0);
    else if (q == SPEC_Q_BYTES && a >= 1048576.0) snprintf(buf, n, "%.2f MiB", v / 1048576.0);
    else if (q == SPEC_Q_BYTES && a >= 1024.0) snprintf(buf, n, "%.2f KiB", v / 1024.0);
    else if (q == SPEC_Q_BYTES) snprintf(buf, n, "%.0f B", v);
    else if (q == SPEC_Q_SECONDS && a >= 1.0) snprintf(buf, n, "%.4g s", v);
    else if (q == SPEC_Q_SECONDS) snprintf(buf, n, "%.4g ms", v * 1e3);
    else snprintf(buf, n, "%.6g", v);
    return buf;
}

static void describe(const spec_expect *e, char *buf, size_t len)
{
    spec_quantity q = spec_quantity_of(e->key);
    char a[32];
    size_t u = 0;
    buf[0] = '\0';
    if (e->has_min) u += (size_t)snprintf(buf + u, len - u, "min %s ", fmt_q(a, sizeof a, e->min, q));
    if (e->has_max && u < len)
        u += (size_t)snprintf(buf + u, len - u, "max %s ", fmt_q(a, sizeof a, e->max, q));
    if (e->has_pct && u < len)
        u += (size_t)snprintf(buf + u, len - u, "%s +-%.3g%% ", fmt_q(a, sizeof a, e->value, q), e->pct);
    if (e->has_eq && u < len) {
        if (e->eq_kind == SPEC_EXP_NUM) u += (size_t)snprintf(buf + u, len - u, "= %.17g ", e->eq_num);
        else if (e->eq_kind == SPEC_EXP_BOOL)
            u += (size_t)snprintf(buf + u, len - u, "= %s ", e->eq_bool ? "true" : "false");
        else u += (size_t)snprintf(buf + u, len - u, "= \"%s\" ", e->eq_str);
    }
    if (u && u <= len && buf[u - 1] == ' ') buf[u - 1] = '\0';
}

/* The value found and, when a bound fails, by how much: past max or
 * below min in the key's unit, off the value in percent. */
static void found(const spec_expect *e, double v, bool ok, char *buf, size_t len)
{
    spec_quantity q = spec_quantity_of(e->key);
    char a[32], d[32];
    fmt_q(a, sizeof a, v, q);
    if (q == SPEC_Q_NUMBER) snprintf(a, sizeof a, "%.10g", v); /* exact, for eq */
    if (ok) snprintf(buf, len, "%s", a);
    else if (e->has_max && v > e->max) snprintf(buf, len, "%s (+%s)", a, fmt_q(d, sizeof d, v - e->max, q));
    else if (e->has_min && v < e->min) snprintf(buf, len, "%s (-%s)", a, fmt_q(d, sizeof d, e->min - v, q));
    else if (e->has_pct && e->value != 0)
        snprintf(buf, len, "%s (%+.1f%%)", a, 100.0 * (v - e->value) / fabs(e->value));
    else snprintf(buf, len, "%s", a);
}

static bool check_num(const spec_expect *e, double v)
{
    if (e->has_min && v < e->min) return false;
    if (e->has_max && v > e->max) return false;
    if (e->has_pct && fabs(v - e->value) > fabs(e->value) * e->pct / 100.0) return false;
    if (e->has_eq && (e->eq_kind != SPEC_EXP_NUM || v != e->eq_num)) return false;
    return true;
}

/* The value as the printed summary holds it: cJSON prints a number with
 * 15 digits when they come within an epsilon of it (17 otherwise) and a
 * non-finite one as null, so the item is printed and read back alone, by
 * the same printer. NULL when out of memory. */
static cJSON *as_printed(const cJSON *v)
{
    char *txt = cJSON_PrintUnformatted(v);
    cJSON *back = txt ? cJSON_Parse(txt) : NULL;
    free(txt);
    return back;
}

static int check_one(const spec_scenario *s, const cJSON *root, const spec_expect *e,
                     exp_result *r, ss_err *err)
{
    const cJSON *item = exp_lookup(root, e->key);
    if (!item || cJSON_IsObject(item) || cJSON_IsArray(item))
        return ss_fail(err, SS_E_INPUT, s->file,
                       "$.expect[\"%s\"]: the summary has no %s called \"%s\"", e->key,
                       item ? "scalar" : "key", e->key);
    cJSON *v = as_printed(item);
    if (!v) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    r->e = e;
    describe(e, r->want, sizeof r->want);
    bool numeric_bounds = e->has_min || e->has_max || e->has_pct;
    if (cJSON_IsNumber(v)) {
        r->ok = check_num(e, v->valuedouble);
        found(e, v->valuedouble, r->ok, r->actual, sizeof r->actual);
    } else if (cJSON_IsBool(v)) {
        snprintf(r->actual, sizeof r->actual, "%s", cJSON_IsTrue(v) ? "true" : "false");
        r->ok = !numeric_bounds && e->eq_kind == SPEC_EXP_BOOL && e->eq_bool == cJSON_IsTrue(v);
    } else {
        snprintf(r->actual, sizeof r->actual, "\"%.60s\"", cJSON_IsString(v) ? v->valuestring : "");
        r->ok = !numeric_bounds && e->eq_kind == SPEC_EXP_STR && cJSON_IsString(v) &&
                !strcmp(e->eq_str, v->valuestring);
    }
    cJSON_Delete(v);
    return SS_OK;
}

int exp_check(const spec_scenario *s, const cJSON *summary, exp_result *res,
              uint32_t *nfailed, ss_err *err)
{
    int rc = SS_OK;
    *nfailed = 0;
    for (uint32_t i = 0; i < s->nexpects && !rc; i++) {
        rc = check_one(s, summary, &s->expects[i], &res[i], err);
        if (!rc && !res[i].ok) (*nfailed)++;
    }
    return rc;
}
