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

static void describe(const spec_expect *e, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    if (e->has_min) u += (size_t)snprintf(buf + u, len - u, "min %.6g ", e->min);
    if (e->has_max && u < len) u += (size_t)snprintf(buf + u, len - u, "max %.6g ", e->max);
    if (e->has_pct && u < len)
        u += (size_t)snprintf(buf + u, len - u, "%.6g +-%.3g%% ", e->value, e->pct);
    if (e->has_eq && u < len) {
        if (e->eq_kind == SPEC_EXP_NUM) u += (size_t)snprintf(buf + u, len - u, "= %.17g ", e->eq_num);
        else if (e->eq_kind == SPEC_EXP_BOOL)
            u += (size_t)snprintf(buf + u, len - u, "= %s ", e->eq_bool ? "true" : "false");
        else u += (size_t)snprintf(buf + u, len - u, "= \"%s\" ", e->eq_str);
    }
    if (u && u <= len && buf[u - 1] == ' ') buf[u - 1] = '\0';
}

static bool check_num(const spec_expect *e, double v)
{
    if (e->has_min && v < e->min) return false;
    if (e->has_max && v > e->max) return false;
    if (e->has_pct && fabs(v - e->value) > fabs(e->value) * e->pct / 100.0) return false;
    if (e->has_eq && (e->eq_kind != SPEC_EXP_NUM || v != e->eq_num)) return false;
    return true;
}

static int check_one(const spec_scenario *s, const cJSON *root, const spec_expect *e,
                     exp_result *r, ss_err *err)
{
    const cJSON *v = exp_lookup(root, e->key);
    if (!v || cJSON_IsObject(v) || cJSON_IsArray(v))
        return ss_fail(err, SS_E_INPUT, s->file,
                       "$.expect[\"%s\"]: the summary has no %s called \"%s\"", e->key,
                       v ? "scalar" : "key", e->key);
    r->e = e;
    describe(e, r->want, sizeof r->want);
    bool numeric_bounds = e->has_min || e->has_max || e->has_pct;
    if (cJSON_IsNumber(v)) {
        snprintf(r->actual, sizeof r->actual, "%.10g", v->valuedouble);
        r->ok = check_num(e, v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        snprintf(r->actual, sizeof r->actual, "%s", cJSON_IsTrue(v) ? "true" : "false");
        r->ok = !numeric_bounds && e->eq_kind == SPEC_EXP_BOOL && e->eq_bool == cJSON_IsTrue(v);
    } else {
        snprintf(r->actual, sizeof r->actual, "\"%.60s\"", cJSON_IsString(v) ? v->valuestring : "");
        r->ok = !numeric_bounds && e->eq_kind == SPEC_EXP_STR && cJSON_IsString(v) &&
                !strcmp(e->eq_str, v->valuestring);
    }
    return SS_OK;
}

int exp_check(const spec_scenario *s, const char *summary_json, exp_result *res,
              uint32_t *nfailed, ss_err *err)
{
    cJSON *root = cJSON_Parse(summary_json);
    if (!root) return ss_fail(err, SS_E_INTERNAL, NULL, "the summary is not valid JSON");
    int rc = SS_OK;
    *nfailed = 0;
    for (uint32_t i = 0; i < s->nexpects && !rc; i++) {
        rc = check_one(s, root, &s->expects[i], &res[i], err);
        if (!rc && !res[i].ok) (*nfailed)++;
    }
    cJSON_Delete(root);
    return rc;
}
