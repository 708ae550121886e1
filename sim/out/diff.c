#include "diff.h"

#include "expect.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

typedef enum { UNIT_MS, UNIT_MIB, UNIT_COUNT } unit;

typedef struct row {
    const char *label, *key;
    unit u;
} row;

static const row rows[] = {
    {"step time", "step_time_s", UNIT_MS},
    {"compute busy", "time.compute_s", UNIT_MS},
    {"communication busy", "time.communication_s", UNIT_MS},
    {"exposed communication", "time.exposed_communication_s", UNIT_MS},
    {"host busy", "time.host_s", UNIT_MS},
    {"peak allocated (max rank)", "memory.max_peak_allocated_bytes", UNIT_MIB},
    {"peak reserved (max rank)", "memory.max_peak_reserved_bytes", UNIT_MIB},
    {"steady (max rank)", "memory.max_steady_bytes", UNIT_MIB},
    {"model setup peak", "memory.max_init_peak_bytes", UNIT_MIB},
};

static const char *const colls[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                    "all_to_all"};

static const cJSON *lookup(const cJSON *root, const char *path)
{
    const cJSON *v = exp_lookup(root, path);
    return cJSON_IsNumber(v) ? v : NULL;
}

static double scale(unit u, double v)
{
    return u == UNIT_MS ? v * 1e3 : u == UNIT_MIB ? v / (1024.0 * 1024.0) : v;
}

static void print_row(FILE *f, const char *label, const cJSON *a, const cJSON *b, unit u)
{
    static const char *const units[] = {"ms", "MiB", ""};
    char sa[32] = "-", sb[32] = "-", sd[32] = "", sp[32] = "";
    int prec = u == UNIT_COUNT ? 0 : 3;
    if (a) snprintf(sa, sizeof sa, "%.*f", prec, scale(u, a->valuedouble));
    if (b) snprintf(sb, sizeof sb, "%.*f", prec, scale(u, b->valuedouble));
    if (a && b) {
        double d = scale(u, b->valuedouble) - scale(u, a->valuedouble);
        snprintf(sd, sizeof sd, "%+.*f", prec, d);
        if (a->valuedouble != 0) snprintf(sp, sizeof sp, "%+.1f%%", 100.0 * d / scale(u, a->valuedouble));
        else if (d != 0) snprintf(sp, sizeof sp, "new");
    }
    fprintf(f, "  %-30s %14s %14s %14s %9s %s\n", label, sa, sb, sd, sp, units[u]);
}

static void print_colls(FILE *f, const cJSON *a, const cJSON *b)
{
    char key[96], label[64];
    for (size_t i = 0; i < sizeof colls / sizeof colls[0]; i++) {
        static const char *const what[] = {"count", "bytes"};
        for (int w = 0; w < 2; w++) {
            snprintf(key, sizeof key, "collectives.%s.%s", colls[i], what[w]);
            const cJSON *x = lookup(a, key), *y = lookup(b, key);
            if ((!x || x->valuedouble == 0) && (!y || y->valuedouble == 0)) continue;
            snprintf(label, sizeof label, "%s %s", colls[i], w ? "MiB" : "count");
            print_row(f, label, x, y, w ? UNIT_MIB : UNIT_COUNT);
        }
    }
}

static const char *name_of(const cJSON *root, const char *fallback)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "scenario");
    return cJSON_IsString(n) ? n->valuestring : fallback;
}

int diff_text(const char *a_json, const char *a_name, const char *b_json, const char *b_name,
              FILE *f, ss_err *err)
{
    cJSON *a = cJSON_Parse(a_json), *b = cJSON_Parse(b_json);
    int rc = SS_OK;
    if (!a || !b) {
        rc = ss_fail(err, SS_E_INPUT, !a ? a_name : b_name, "not a JSON summary");
        goto out;
    }
    fprintf(f, "A: %s (%s)\nB: %s (%s)\n\n", a_name, name_of(a, "?"), b_name, name_of(b, "?"));
    fprintf(f, "  %-30s %14s %14s %14s %9s\n", "", "A", "B", "B - A", "%");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        print_row(f, rows[i].label, lookup(a, rows[i].key), lookup(b, rows[i].key), rows[i].u);
    print_colls(f, a, b);
out:
    cJSON_Delete(a);
    cJSON_Delete(b);
    return rc;
}
