/* `shardsim keys`. keys_cmd.h states the contract. */
#include "keys_cmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../io/json.h"
#include "../io/scenario.h"

typedef struct key_row {
    char path[JS_PATH_MAX];  /* normalized: "$.runtime.stragglers[].rank" */
    char where[JS_PATH_MAX]; /* a concrete path in `file` whose object exists */
    char file[JS_FILE_MAX];  /* "" until a file holds the key's object */
    char kind[16];
    bool required;
    bool varies, def_varies; /* its bounds / default depend on the scenario */
    char accepts[400], def[48];
} key_row;

typedef struct key_tab {
    key_row *rows;
    size_t n, cap;
    const char *file; /* the scenario being loaded */
    bool nomem;
} key_tab;

static const char usage[] =
    "usage: shardsim keys SCENARIO|FOLDER... [--markdown | --cases]\n"
    "  the scenario keys as the loader reads them: path, kind, required, what\n"
    "  it accepts, default; --cases writes a bad-input case per typed key\n";

/* Array indices as [], and an expect entry's summary key (the user's
 * choice, not a scenario key) as <summary key>. */
static void normalize(char *out, const char *in)
{
    size_t o = 0;
    if (!strncmp(in, "$.expect", 8) && (in[8] == '.' || in[8] == '[')) {
        const char *rest = in + 8;
        if (*rest == '[') rest = strstr(rest, "\"]") ? strstr(rest, "\"]") + 2 : "";
        else rest = strchr(rest + 1, '.') ? strchr(rest + 1, '.') : "";
        snprintf(out, JS_PATH_MAX, "$.expect.<summary key>%s", rest);
        return;
    }
    for (size_t i = 0; in[i] && o + 12 < JS_PATH_MAX; i++) {
        out[o++] = in[i];
        if (in[i] == '[' && in[i + 1] == '"' && strstr(in + i, "\"]")) { /* a chosen name */
            memcpy(out + o, "\"<name>\"", 8), o += 8;
            i = (size_t)(strstr(in + i, "\"]") - in);
            continue;
        }
        if (in[i] != '[' || in[i + 1] < '0' || in[i + 1] > '9') continue;
        while (in[i + 1] >= '0' && in[i + 1] <= '9') i++;
    }
    out[o] = '\0';
}

static key_row *find_or_add(key_tab *t, const char *path)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].path, path)) return &t->rows[i];
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        key_row *r = realloc(t->rows, cap * sizeof *r);
        if (!r) return NULL;
        t->rows = r, t->cap = cap;
    }
    key_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    return r;
}

/* js_key_fn: keep the scenario file's keys; a typed getter's reading wins
 * over a bare "key", and the first file whose object holds the key gives
 * the concrete path the cases --set. */
static void on_key(void *ctx, const js_key *k)
{
    key_tab *t = ctx;
    if (!k->file || strcmp(k->file, t->file)) return;
    char path[JS_PATH_MAX];
    normalize(path, k->path);
    key_row *r = find_or_add(t, path);
    if (!r) {
        t->nomem = true;
        return;
    }
    bool typed = strcmp(k->kind, "key") != 0;
    if (typed && (!r->kind[0] || !strcmp(r->kind, "key"))) {
        snprintf(r->kind, sizeof r->kind, "%s", k->kind);
        snprintf(r->accepts, sizeof r->accepts, "%s", k->accepts);
        snprintf(r->def, sizeof r->def, "%s", k->def);
        r->required = k->required;
        r->file[0] = '\0'; /* the typed reading's own file, below */
    } else if (typed && !strcmp(r->kind, k->kind)) {
        r->varies |= strcmp(r->accepts, k->accepts) != 0;
        r->def_varies |= strcmp(r->def, k->def) != 0;
    }
    else if (!r->kind[0]) snprintf(r->kind, sizeof r->kind, "key");
    if (!r->file[0] && k->in_object && (typed || !strcmp(r->kind, "key"))) {
        snprintf(r->file, sizeof r->file, "%s", k->file);
        snprintf(r->where, sizeof r->where, "%s", k->path);
    }
}

static void load_one(key_tab *t, const char *file, size_t *loaded)
{
    spec_scenario s;
    ss_err err;
    ss_err_clear(&err);
    t->file = file;
    js_record(on_key, t);
    int rc = scn_load(file, NULL, 0, &s, &err);
    js_record(NULL, NULL);
    if (rc) {
        char buf[1100];
        fprintf(stderr, "shardsim keys: skipped %s\n", ss_err_str(&err, buf, sizeof buf));
        return;
    }
    spec_scenario_fini(&s);
    (*loaded)++;
}

static void load_dir(key_tab *t, const char *dir, size_t *loaded)
{
    char **names, buf[1100];
    size_t n;
    ss_err err;
    ss_err_clear(&err);
    if (js_list_dir(dir, &names, &n, &err)) {
        fprintf(stderr, "shardsim keys: skipped %s\n", ss_err_str(&err, buf, sizeof buf));
        t->nomem |= err.code == SS_E_NOMEM;
        return;
    }
    for (size_t i = 0; i < n; i++) load_one(t, names[i], loaded);
    js_list_free(names, n);
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const key_row *)a)->path, ((const key_row *)b)->path);
}

/* A value the key's kind refuses: the wrong type, or past a bound. */
static bool bad_value(const key_row *r, char *out, size_t n)
{
    if (!strcmp(r->kind, "integer")) snprintf(out, n, "-1");
    else if (!strcmp(r->kind, "number") || !strcmp(r->kind, "boolean") ||
             !strcmp(r->kind, "string") || !strcmp(r->kind, "array"))
        snprintf(out, n, !strcmp(r->kind, "number") ? "\"x\"" : "7");
    else if (!strcmp(r->kind, "enum")) snprintf(out, n, "\"no-such-choice\"");
    else return false;
    return true;
}

static void print_cases(const key_tab *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const key_row *r = &t->rows[i];
        char bad[32];
        /* an expect entry's kinds depend on its summary key; a member named
         * by the user ("layers.3") needs shell quoting a case line has not */
        if (!r->file[0] || !strncmp(r->path, "$.expect.", 9) || strchr(r->where, '"') ||
            !bad_value(r, bad, sizeof bad))
            continue;
        printf("2|%s|%s --set %s=%s\n", r->where, r->file, r->where + 2, bad);
    }
}

static void print_table(const key_tab *t, bool md)
{
    if (md) puts("| key | kind | required | accepts | default |\n|---|---|---|---|---|");
    else printf("%-58s %-8s %-3s %-30s %s\n", "key", "kind", "req", "accepts", "default");
    for (size_t i = 0; i < t->n; i++) {
        const key_row *r = &t->rows[i];
        char acc[480], def[96];
        snprintf(acc, sizeof acc, "%s%s", r->varies ? "depends on the scenario, e.g. " : "",
                 r->accepts);
        snprintf(def, sizeof def, "%s%s", r->def_varies ? "depends, e.g. " : "", r->def);
        if (md)
            printf("| `%s` | %s | %s | %s | %s |\n", r->path + 2, r->kind,
                   r->required ? "yes" : "", acc, def);
        else
            printf("%-58s %-8s %-3s %-30s %s\n", r->path + 2, r->kind, r->required ? "yes" : "",
                   acc, def);
    }
}

int keys_cmd(int argc, char **argv)
{
    bool md = false, cases = false;
    key_tab t = {0};
    size_t loaded = 0, nfiles = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return fputs(usage, stdout), 0;
        if (!strcmp(argv[i], "--markdown")) md = true;
        else if (!strcmp(argv[i], "--cases")) cases = true;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "shardsim keys: unknown option %s\n%s", argv[i], usage);
            return 2;
        } else nfiles++;
    }
    if (!nfiles || (md && cases)) {
        fprintf(stderr, "shardsim keys: %s\n%s",
                nfiles ? "--markdown and --cases are two outputs: give one" : "no scenario given",
                usage);
        return 2;
    }
    for (int i = 0; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') continue;
        if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) load_dir(&t, argv[i], &loaded);
        else load_one(&t, argv[i], &loaded);
    }
    int rc = 0;
    if (t.nomem) fprintf(stderr, "shardsim keys: out of memory\n"), rc = 1;
    else if (!loaded) fprintf(stderr, "shardsim keys: no scenario loaded\n"), rc = 2;
    else {
        if (t.n) qsort(t.rows, t.n, sizeof *t.rows, cmp_row);
        if (cases) print_cases(&t);
        else print_table(&t, md);
    }
    free(t.rows);
    return rc;
}
