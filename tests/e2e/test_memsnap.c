/* --memory-snapshot: rank 0's allocator as the pickle PyTorch's
 * torch.cuda.memory._dump_snapshot writes. Read back with a small pickle
 * reader of its own (the opcodes of Python's Lib/pickletools.py; no Python
 * needed), it is the snapshot dict (device_traces, segments,
 * allocator_settings) with the keys pytorch.org/memory_viz reads; each
 * segment's blocks tile it; undoing the history from the end state, as the
 * viewer does, every alloc removes a live block of its size and every free
 * brings back one that was not live; and replaying it forward from the
 * state that gives, the allocated bytes peak at the summary JSON's
 * memory.per_rank[0].peak_allocated_bytes. Items come in batches of at
 * most 1000 (the viewer spreads a batch into a call's arguments). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/out/memsnap.h"
#include "../../sim/out/pickle.h"
#include "../../sim/run/run.h"

#include "load_run.h"

/* ---- a pickle reader: just the opcodes pickle.h writes ---- */
typedef enum { PV_DICT, PV_LIST, PV_STR, PV_INT, PV_BOOL, PV_NONE } pv_kind;
typedef struct pv {
    pv_kind kind;
    int64_t i;
    char *s;
    struct pv **v; /* list items, or dict keys and values alternating */
    size_t n, cap;
} pv;

static pv *pv_new(pv_kind k)
{
    pv *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->kind = k;
    return x;
}

static void pv_push(pv *c, pv *x)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        assert_non_null(c->v);
    }
    c->v[c->n++] = x;
}

static void pv_free(pv *x)
{
    if (!x) return;
    for (size_t k = 0; k < x->n; k++) pv_free(x->v[k]);
    free(x->v);
    free(x->s);
    free(x);
}

static uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

/* The value of a pickle; *max_batch: most items under one MARK. */
static pv *unpickle(const unsigned char *b, size_t len, size_t *max_batch)
{
    pv *stack[1 << 12];
    size_t sp = 0, marks[64], mp = 0, i = 0;
    *max_batch = 0;
    assert_true(len >= 3 && b[0] == 0x80 && b[1] == 2);
    for (i = 2; i < len;) {
        unsigned char op = b[i++];
        pv *x = NULL;
        switch (op) {
        case '}': x = pv_new(PV_DICT); break;
        case ']': x = pv_new(PV_LIST); break;
        case 'K': x = pv_new(PV_INT), x->i = b[i], i += 1; break;
        case 'M': x = pv_new(PV_INT), x->i = (int64_t)rd_le(b + i, 2), i += 2; break;
        case 'J': x = pv_new(PV_INT), x->i = (int32_t)(uint32_t)rd_le(b + i, 4), i += 4; break;
        case 0x8a: {
            int n = b[i++];
            assert_true(n >= 1 && n <= 8);
            uint64_t u = rd_le(b + i, n);
            if (n < 8 && (u >> (8 * n - 1))) u |= ~0ull << (8 * n); /* sign-extend */
            x = pv_new(PV_INT), x->i = (int64_t)u, i += (size_t)n;
            break;
        }
        case 'X': {
            size_t n = (size_t)rd_le(b + i, 4);
            i += 4;
            assert_true(i + n <= len);
            x = pv_new(PV_STR), x->s = strndup((const char *)b + i, n), i += n;
            break;
        }
        case 0x88: x = pv_new(PV_BOOL), x->i = 1; break;
        case 0x89: x = pv_new(PV_BOOL); break;
        case 'N': x = pv_new(PV_NONE); break;
        case '(': assert_true(mp < 64); marks[mp++] = sp; break;
        case 'u':
        case 'e': {
            assert_true(mp > 0);
            size_t m = marks[--mp];
            assert_true(m >= 1);
            pv *c = stack[m - 1];
            assert_int_equal(c->kind, op == 'u' ? PV_DICT : PV_LIST);
            if (op == 'u') assert_int_equal((sp - m) % 2, 0);
            size_t items = op == 'u' ? (sp - m) / 2 : sp - m;
            if (items > *max_batch) *max_batch = items;
            for (size_t k = m; k < sp; k++) pv_push(c, stack[k]);
            sp = m;
            break;
        }
        case '.':
            assert_int_equal(sp, 1);
            assert_int_equal(mp, 0);
            assert_int_equal(i, len);
            return stack[0];
        default: fail_msg("unknown opcode 0x%02x at %zu", op, i - 1);
        }
        if (x) {
            assert_true(sp < sizeof stack / sizeof *stack);
            stack[sp++] = x;
        }
    }
    fail_msg("no STOP");
    return NULL;
}

static const pv *get(const pv *d, const char *k)
{
    assert_int_equal(d->kind, PV_DICT);
    for (size_t j = 0; j + 1 < d->n; j += 2)
        if (d->v[j]->kind == PV_STR && !strcmp(d->v[j]->s, k)) return d->v[j + 1];
    fail_msg("no key \"%s\"", k);
    return NULL;
}

static int64_t iget(const pv *d, const char *k)
{
    const pv *v = get(d, k);
    assert_int_equal(v->kind, PV_INT);
    return v->i;
}

static const char *sget(const pv *d, const char *k)
{
    const pv *v = get(d, k);
    assert_int_equal(v->kind, PV_STR);
    return v->s;
}

/* Every integer form pk_int chooses reads back: the edges of BININT1
 * (0..255), BININT2 (..65535), BININT (32-bit signed) and LONG1 of 1 to 8
 * bytes; and batches close at PK_BATCH items. */
static void test_pickle_ints(void **state)
{
    (void)state;
    const int64_t v[] = {0, 255, 256, 65535, 65536, INT32_MAX, (int64_t)INT32_MAX + 1, -1, INT32_MIN,
                         (int64_t)INT32_MIN - 1, 1ll << 40, -(1ll << 40), 0x7fffffffffffll, INT64_MAX, INT64_MIN};
    size_t n = sizeof v / sizeof *v, reps = 2 * PK_BATCH + 1, len = 0, batch;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    pk p;
    pk_begin(&p, f);
    pk_list(&p);
    for (size_t r = 0; r < reps; r++)
        for (size_t k = 0; k < n; k++) pk_int(&p, v[k]);
    pk_end(&p);
    assert_int_equal(pk_finish(&p, NULL), SS_OK);
    fclose(f);
    pv *x = unpickle((const unsigned char *)text, len, &batch);
    assert_int_equal(x->n, reps * n);
    for (size_t k = 0; k < x->n; k++) assert_true(x->v[k]->i == v[k % n]);
    assert_int_equal(batch, PK_BATCH);
    pv_free(x);
    free(text);
}

typedef struct live {
    int64_t addr, size;
} live;

static size_t find(const live *l, size_t n, int64_t addr)
{
    for (size_t k = 0; k < n; k++)
        if (l[k].addr == addr) return k;
    return SIZE_MAX;
}

/* The snapshot of a scenario, checked; returns the number of segment
 * actions in its history. */
static size_t check_snapshot(const char *file, const char *set)
{
    spec_scenario s;
    run_result r;
    const char *sets[] = {set};
    load_run(file, sets, set ? 1 : 0, &s, &r);
    ss_err err;
    ss_err_clear(&err);
    char *text = NULL;
    size_t len = 0, batch, nseg = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(msnap_write(&r.sum, r.t, f, &err), SS_OK);
    fclose(f);
    pv *root = unpickle((const unsigned char *)text, len, &batch);
    assert_true(batch <= PK_BATCH);
    get(get(root, "allocator_settings"), "expandable_segments");
    const pv *traces = get(root, "device_traces"), *segs = get(root, "segments");
    assert_int_equal(traces->n, 1);
    const pv *tr = traces->v[0];
    /* the end state: blocks tile their segments */
    size_t nblocks = 0, nl = 0;
    for (size_t k = 0; k < segs->n; k++) nblocks += get(segs->v[k], "blocks")->n;
    live *l = calloc(tr->n + nblocks + 1, sizeof *l);
    assert_non_null(l);
    for (size_t k = 0; k < segs->n; k++) {
        const pv *sg = segs->v[k], *blocks = get(sg, "blocks");
        assert_int_equal(iget(sg, "device"), 0);
        int64_t at = iget(sg, "address"), alloc = 0;
        for (size_t j = 0; j < blocks->n; j++) {
            const pv *b = blocks->v[j];
            assert_int_equal(iget(b, "address"), at);
            at += iget(b, "size");
            get(b, "frames");
            iget(b, "requested_size");
            if (!strcmp(sget(b, "state"), "active_allocated")) {
                alloc += iget(b, "size");
                l[nl++] = (live){iget(b, "address"), iget(b, "size")};
            } else {
                assert_string_equal(sget(b, "state"), "inactive");
            }
        }
        assert_int_equal(at - iget(sg, "address"), iget(sg, "total_size"));
        assert_int_equal(alloc, iget(sg, "allocated_size"));
        iget(sg, "stream");
        sget(sg, "segment_type");
    }
    /* undo the history, as the viewer does */
    for (size_t k = tr->n; k-- > 0;) {
        const pv *e = tr->v[k];
        const char *a = sget(e, "action");
        int64_t addr = iget(e, "addr"), size = iget(e, "size");
        assert_true(size > 0);
        iget(e, "stream");
        iget(e, "time_us");
        assert_int_equal(get(e, "frames")->kind, PV_LIST);
        size_t at = find(l, nl, addr);
        if (!strcmp(a, "alloc")) {
            assert_true(at != SIZE_MAX);
            assert_int_equal(l[at].size, size);
            l[at] = l[--nl];
        } else if (!strcmp(a, "free_completed")) {
            assert_true(at == SIZE_MAX);
            l[nl++] = (live){addr, size};
            assert_string_equal(sget(tr->v[k - 1], "action"), "free_requested");
        } else if (strcmp(a, "free_requested")) {
            assert_int_equal(strncmp(a, "segment_", 8), 0);
            nseg++;
        }
    }
    /* forward from there: the peak is the summary's */
    int64_t cur = 0, peak;
    for (size_t k = 0; k < nl; k++) cur += l[k].size;
    peak = cur;
    for (size_t k = 0; k < tr->n; k++) {
        const char *a = sget(tr->v[k], "action");
        if (!strcmp(a, "alloc")) cur += iget(tr->v[k], "size");
        if (!strcmp(a, "free_completed")) cur -= iget(tr->v[k], "size");
        if (cur > peak) peak = cur;
    }
    char *json = sum_json(&r.sum);
    cJSON *sj = cJSON_Parse(json);
    const cJSON *pr = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(sj, "memory"), "per_rank"), 0);
    assert_true((double)peak == cJSON_GetObjectItem(pr, "peak_allocated_bytes")->valuedouble);
    assert_true(tr->n > 0);
    cJSON_Delete(sj);
    free(json);
    free(l);
    pv_free(root);
    free(text);
    run_fini(&r);
    spec_scenario_fini(&s);
    return nseg;
}

/* FSDP FULL_SHARD warm (no segment actions in a steady step), the same
 * with a capacity under what the warm-up left reserved (230 MB: the
 * allocator releases cached segments and maps new ones during the step),
 * expandable segments, and the Megatron TP x PP example (small and large
 * pools, several streams). */
static void test_memsnap_scenarios(void **state)
{
    (void)state;
    assert_int_equal(check_snapshot("seed002/zero3_full_shard_pre.json", NULL), 0);
    assert_true(check_snapshot("seed002/zero3_full_shard_pre.json", "allocator.capacity_bytes=230000000") > 0);
    check_snapshot("seed002/zero3_full_shard_pre.json", "allocator.expandable_segments=true");
    check_snapshot("examples/tiny-gpt-megatron-tp2-pp2-overlap.json", NULL);
}

/* The ideal allocator has no blocks: refused, naming the key. */
static void test_memsnap_ideal(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    const char *sets[] = {"allocator.model=ideal"};
    load_run("seed002/zero3_full_shard_pre.json", sets, 1, &s, &r);
    ss_err err;
    ss_err_clear(&err);
    FILE *f = fopen("/dev/null", "w");
    assert_int_equal(msnap_write(&r.sum, r.t, f, &err), SS_E_INPUT);
    assert_string_equal(err.where, "allocator.model");
    fclose(f);
    run_fini(&r);
    spec_scenario_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pickle_ints),
                                       cmocka_unit_test(test_memsnap_scenarios),
                                       cmocka_unit_test(test_memsnap_ideal)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
