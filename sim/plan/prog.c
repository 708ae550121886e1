#include "prog.h"

#include "../core/idtab.h"
#include "../core/vec.h"

#include <stdlib.h>
#include <string.h>

/* A growable array of fixed-size items; the one allocation pattern here. */
typedef struct vec {
    void *data;
    uint32_t len, cap;
} vec;

/* Appends n items (n >= 0) of `size` bytes; *idx (if given) is the first's. */
static int vec_push_n(vec *v, const void *items, uint32_t n, size_t size, uint32_t *idx)
{
    if (n > UINT32_MAX - v->len) return SS_E_OVERFLOW;
    if (!ss_grow(&v->data, &v->cap, v->len + n, size)) return SS_E_NOMEM;
    if (n) memcpy((char *)v->data + (size_t)v->len * size, items, (size_t)n * size);
    if (idx) *idx = v->len;
    v->len += n;
    return SS_OK;
}

static int vec_push(vec *v, const void *item, size_t size, uint32_t *idx)
{
    return vec_push_n(v, item, 1, size, idx);
}

typedef struct rank_prog {
    vec ops, deps, mems, tensors; /* prog_op, uint32_t, prog_mem, prog_tensor */
    uint32_t src;   /* the rank whose arrays these are: itself, or prog_rank_share's */
    uint32_t *gmap; /* shared: ngmap (group of src, own group) pairs */
    uint32_t ngmap;
} rank_prog;

typedef struct group_rec {
    uint32_t size, first; /* ranks in prog.group_ranks[first..first+size) */
    uint32_t nsize, nfirst; /* the network's members, likewise */
    uint32_t ncopies, cfirst; /* copies: ncopies x nsize ranks from cfirst */
} group_rec;

struct prog {
    uint32_t nranks, stride; /* program rank r is world rank r x stride */
    rank_prog *ranks;
    vec groups, group_ranks; /* group_rec, uint32_t */
    vec strs;                /* char *, interned, owned */
    vec str_hash;            /* uint32_t per id in strs: its str_hash */
    ss_idtab names;          /* string -> its id in strs */
};

#define PROG_NAME_(id, name) name,
static const char *const stream_names[] = {PROG_STREAMS(PROG_NAME_)};
static const char *const coll_names[] = {PROG_COLLS(PROG_NAME_)};
static const char *const phase_names[] = {PROG_PHASES(PROG_NAME_)};
static const char *const memcat_names[] = {PROG_MEMCATS(PROG_NAME_)};
#undef PROG_NAME_

const char *prog_stream_name(prog_stream s) { return stream_names[s]; }
const char *prog_coll_name(prog_coll c) { return coll_names[c]; }
const char *prog_phase_name(prog_phase p) { return phase_names[p]; }
const char *prog_memcat_name(prog_memcat m) { return memcat_names[m]; }

static int nomem(ss_err *err)
{
    return ss_fail(err, SS_E_NOMEM, NULL, "out of memory building the program");
}

int prog_new(prog **out, uint32_t nranks, ss_err *err)
{
    if (nranks == 0)
        return ss_fail(err, SS_E_INPUT, NULL, "a program needs at least one rank");
    prog *p = calloc(1, sizeof *p);
    if (!p) return nomem(err);
    p->ranks = calloc(nranks, sizeof *p->ranks);
    if (!p->ranks) {
        free(p);
        return nomem(err);
    }
    p->nranks = nranks;
    p->stride = 1;
    for (uint32_t r = 0; r < nranks; r++) p->ranks[r].src = r;
    *out = p;
    return SS_OK;
}

void prog_free(prog *p)
{
    if (!p) return;
    for (uint32_t r = 0; r < p->nranks; r++) {
        free(p->ranks[r].ops.data);
        free(p->ranks[r].deps.data);
        free(p->ranks[r].mems.data);
        free(p->ranks[r].tensors.data);
        free(p->ranks[r].gmap);
    }
    free(p->ranks);
    free(p->groups.data);
    free(p->group_ranks.data);
    char **s = p->strs.data;
    for (uint32_t i = 0; i < p->strs.len; i++) free(s[i]);
    free(p->strs.data);
    free(p->str_hash.data);
    ss_idtab_fini(&p->names);
    free(p);
}

/* Eight bytes a step with a multiply and a shift: a program interns a
 * name per op and tensor, a million in a large layout, and byte-at-a-time
 * FNV was a tenth of building it. Ids are given in first-seen order, so
 * the values (which differ with byte order) never reach an output. */
static uint32_t str_hash(const char *s)
{
    size_t n = strlen(s);
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h ^ h >> 29);
}

/* Each id's hash is kept beside its string: growing the table re-places
 * ids without reading strings, and a probe compares strings only where
 * the hashes agree (a program interns a new name per tensor, and most
 * probes pass other names' slots). */
static uint32_t name_hash(const void *ctx, uint32_t id)
{
    return ((const uint32_t *)((const prog *)ctx)->str_hash.data)[id];
}

typedef struct name_key {
    const char *s;
    uint32_t h;
} name_key;

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
    const prog *p = ctx;
    const name_key *k = key;
    return ((const uint32_t *)p->str_hash.data)[id] == k->h &&
           strcmp(((char *const *)p->strs.data)[id], k->s) == 0;
}

/* Ids are given in first-seen order, so they do not depend on the hash. */
static int str_intern(prog *p, const char *s, uint32_t *id)
{
    if (!ss_idtab_reserve(&p->names, p->strs.len, 256, name_hash, p)) return SS_E_NOMEM;
    name_key key = {s, str_hash(s)};
    uint32_t k = ss_idtab_find(&p->names, key.h, name_eq, p, &key);
    if (p->names.slot[k]) {
        *id = p->names.slot[k] - 1;
        return SS_OK;
    }
    char *copy = strdup(s);
    if (!copy) return SS_E_NOMEM;
    if (vec_push(&p->str_hash, &key.h, sizeof key.h, NULL)) {
        free(copy);
        return SS_E_NOMEM;
    }
    int rc = vec_push(&p->strs, &copy, sizeof copy, id);
    if (rc) {
        free(copy);
        p->str_hash.len--;
    } else {
        p->names.slot[k] = *id + 1;
    }
    return rc;
}

static int ranks_ok(const uint32_t *ranks, uint32_t n, uint32_t limit, ss_err *err)
{
    if (n == 0) return ss_fail(err, SS_E_INTERNAL, NULL, "empty process group");
    for (uint32_t i = 0; i < n; i++)
        if (ranks[i] >= limit || (i && ranks[i] <= ranks[i - 1]))
            return ss_fail(err, SS_E_INTERNAL, NULL,
                           "process group ranks must be ascending and < %u", limit);
    return SS_OK;
}

static int push_ranks(prog *p, const uint32_t *ranks, uint32_t n, uint32_t *first, ss_err *err)
{
    *first = (uint32_t)p->group_ranks.len;
    for (uint32_t i = 0; i < n; i++)
        if (vec_push(&p->group_ranks, &ranks[i], sizeof ranks[i], NULL)) return nomem(err);
    return SS_OK;
}

int prog_group_add(prog *p, const uint32_t *ranks, uint32_t n, uint32_t *gid,
                   ss_err *err)
{
    int rc = ranks_ok(ranks, n, p->nranks, err);
    group_rec g = {n, 0, n, 0, 0, 0};
    if (!rc) rc = push_ranks(p, ranks, n, &g.first, err);
    g.nfirst = g.first;
    if (!rc && vec_push(&p->groups, &g, sizeof g, gid)) rc = nomem(err);
    return rc;
}

int prog_group_add_net(prog *p, const uint32_t *ranks, uint32_t n, const uint32_t *net,
                       uint32_t nnet, uint32_t *gid, ss_err *err)
{
    int rc = ranks_ok(ranks, n, p->nranks, err);
    if (!rc) rc = ranks_ok(net, nnet, UINT32_MAX, err);
    for (uint32_t i = 0, j = 0; !rc && i < n; i++) { /* every member is a network member */
        uint64_t w = (uint64_t)ranks[i] * p->stride;
        while (j < nnet && net[j] < w) j++;
        if (j == nnet || net[j] != w)
            rc = ss_fail(err, SS_E_INTERNAL, NULL,
                         "group member %u (world rank %llu) is not a network member", ranks[i],
                         (unsigned long long)w);
    }
    group_rec g = {n, 0, nnet, 0, 0, 0};
    if (!rc) rc = push_ranks(p, ranks, n, &g.first, err);
    if (!rc) rc = push_ranks(p, net, nnet, &g.nfirst, err);
    if (!rc && vec_push(&p->groups, &g, sizeof g, gid)) rc = nomem(err);
    return rc;
}

int prog_group_set_copies(prog *p, uint32_t gid, const uint32_t *ranks, uint32_t ncopies,
                          ss_err *err)
{
    if (gid >= p->groups.len) return ss_fail(err, SS_E_INTERNAL, NULL, "no group %u", gid);
    uint32_t size = ((group_rec *)p->groups.data)[gid].nsize, first = 0;
    int rc = SS_OK;
    for (uint32_t i = 0; i < ncopies && !rc; i++)
        rc = ranks_ok(ranks + (size_t)i * size, size, UINT32_MAX, err);
    if (!rc && ncopies && (uint64_t)ncopies * size > UINT32_MAX)
        rc = ss_fail(err, SS_E_OVERFLOW, NULL, "%u copies of a group of %u", ncopies, size);
    if (!rc) rc = push_ranks(p, ranks, ncopies * size, &first, err);
    if (rc) return rc;
    group_rec *g = (group_rec *)p->groups.data + gid;
    g->ncopies = ncopies;
    g->cfirst = first;
    return SS_OK;
}

/* A rank's first op or tensor: room for as many ops, dependencies, memory
 * events and tensors as the rank before it holds. The ranks of a layout
 * run programs of about one length, built one after another, so the arrays
 * grow once instead of doubling (and copying) their way up on every rank;
 * capacity never touched costs address space, not pages. */
static int reserve_like_prev(prog *p, uint32_t rank)
{
    rank_prog *rp = &p->ranks[rank];
    if (!rank || rp->ops.cap || rp->tensors.cap) return SS_OK;
    const rank_prog *q = &p->ranks[rank - 1];
    bool ok = ss_grow(&rp->ops.data, &rp->ops.cap, q->ops.len, sizeof(prog_op)) &&
              ss_grow(&rp->deps.data, &rp->deps.cap, q->deps.len, sizeof(uint32_t)) &&
              ss_grow(&rp->mems.data, &rp->mems.cap, q->mems.len, sizeof(prog_mem)) &&
              ss_grow(&rp->tensors.data, &rp->tensors.cap, q->tensors.len, sizeof(prog_tensor));
    return ok ? SS_OK : SS_E_NOMEM;
}

int prog_tensor_add(prog *p, uint32_t rank, const char *name, prog_memcat cat,
                    ss_bytes bytes, int live_at_start, uint32_t *tid,
                    ss_err *err)
{
    if (rank >= p->nranks)
        return ss_fail(err, SS_E_INTERNAL, NULL, "tensor on rank %u of %u", rank,
                       p->nranks);
    prog_tensor t = {0, (uint8_t)cat, (uint8_t)(live_at_start != 0), bytes};
    if (reserve_like_prev(p, rank)) return nomem(err);
    if (str_intern(p, name, &t.name)) return nomem(err);
    if (vec_push(&p->ranks[rank].tensors, &t, sizeof t, tid)) return nomem(err);
    return SS_OK;
}

static int group_has(const prog *p, uint32_t gid, uint32_t rank)
{
    const group_rec *g = (const group_rec *)p->groups.data + gid;
    const uint32_t *r = (const uint32_t *)p->group_ranks.data + g->first;
    for (uint32_t i = 0; i < g->size; i++)
        if (r[i] == rank) return 1;
    return 0;
}

static int op_check(const prog *p, uint32_t rank, const prog_op_spec *s,
                    ss_err *err)
{
    const rank_prog *rp = &p->ranks[rank];
    const char *nm = s->name ? s->name : "?";
    if ((s->kind == PROG_OP_HOST) != (s->stream == PROG_HOST))
        return ss_fail(err, SS_E_INTERNAL, NULL,
                       "op %s: host ops and only host ops run on the host", nm);
    if (s->kind == PROG_OP_COLL &&
        (s->group >= p->groups.len || !group_has(p, s->group, rank)))
        return ss_fail(err, SS_E_INTERNAL, NULL,
                       "op %s: rank %u is not in group %u", nm, rank, s->group);
    for (uint32_t i = 0; i < s->ndeps; i++)
        if (s->deps[i] >= rp->ops.len)
            return ss_fail(err, SS_E_INTERNAL, NULL,
                           "op %s: dependency %u is not an earlier op", nm,
                           s->deps[i]);
    for (uint32_t i = 0; i < s->nmem; i++)
        if (s->mem[i].tensor >= rp->tensors.len)
            return ss_fail(err, SS_E_INTERNAL, NULL,
                           "op %s: unknown tensor %u", nm, s->mem[i].tensor);
    return SS_OK;
}

int prog_op_add(prog *p, uint32_t rank, const prog_op_spec *s, uint32_t *opid,
                ss_err *err)
{
    if (rank >= p->nranks)
        return ss_fail(err, SS_E_INTERNAL, NULL, "op on rank %u of %u", rank,
                       p->nranks);
    int rc = op_check(p, rank, s, err);
    if (rc) return rc;
    rank_prog *rp = &p->ranks[rank];
    if (reserve_like_prev(p, rank)) return nomem(err);
    prog_op op = {
        .kind = (uint8_t)s->kind, .stream = (uint8_t)s->stream,
        .phase = (uint8_t)s->phase, .coll = (uint8_t)s->coll,
        .group = s->group, .bytes = s->bytes, .flops = s->flops,
        .host_ns = s->host_ns, .dev_ns = s->dev_ns,
        .dep0 = rp->deps.len, .ndep = s->ndeps,
        .mem0 = rp->mems.len, .nmem = s->nmem,
    };
    if (str_intern(p, s->name ? s->name : "", &op.name)) return nomem(err);
    if (vec_push_n(&rp->deps, s->deps, s->ndeps, sizeof *s->deps, NULL) ||
        vec_push_n(&rp->mems, s->mem, s->nmem, sizeof *s->mem, NULL) ||
        vec_push(&rp->ops, &op, sizeof op, opid))
        return nomem(err);
    return SS_OK;
}

bool prog_group_has(const prog *p, uint32_t gid, uint32_t rank)
{
    prog_group g = prog_group_get(p, gid);
    uint32_t lo = 0, hi = g.size;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g.ranks[mid] < rank) lo = mid + 1;
        else hi = mid;
    }
    return lo < g.size && g.ranks[lo] == rank;
}

int prog_rank_share(prog *p, uint32_t rank, uint32_t src, const uint32_t *from, const uint32_t *to,
                    uint32_t n, ss_err *err)
{
    if (rank >= p->nranks || src >= p->nranks || src == rank || p->ranks[src].src != src ||
        p->ranks[rank].ops.len || p->ranks[rank].tensors.len || p->ranks[rank].src != rank)
        return ss_fail(err, SS_E_INTERNAL, NULL, "rank %u cannot share rank %u's program", rank, src);
    for (uint32_t i = 0; i < n; i++)
        if (from[i] >= p->groups.len || to[i] >= p->groups.len)
            return ss_fail(err, SS_E_INTERNAL, NULL, "rank %u: no group %u", rank,
                           from[i] >= p->groups.len ? from[i] : to[i]);
    rank_prog *rp = &p->ranks[rank];
    rp->gmap = malloc((n ? 2 * (size_t)n : 1) * sizeof *rp->gmap);
    if (!rp->gmap) return nomem(err);
    for (uint32_t i = 0; i < n; i++) rp->gmap[2 * i] = from[i], rp->gmap[2 * i + 1] = to[i];
    rp->ngmap = n;
    rp->src = src;
    const prog_op *ops = p->ranks[src].ops.data;
    for (uint32_t i = 0; i < p->ranks[src].ops.len; i++) /* what prog_op_add checks */
        if (ops[i].kind == PROG_OP_COLL && !prog_group_has(p, prog_op_group(p, rank, i), rank)) {
            free(rp->gmap);
            rp->gmap = NULL, rp->ngmap = 0, rp->src = rank;
            return ss_fail(err, SS_E_INTERNAL, NULL, "op %s: rank %u is not in group %u",
                           prog_str_get(p, ops[i].name), rank, ops[i].group);
        }
    return SS_OK;
}

uint32_t prog_nranks(const prog *p) { return p->nranks; }
void prog_set_stride(prog *p, uint32_t stride) { p->stride = stride ? stride : 1; }
uint32_t prog_stride(const prog *p) { return p->stride; }
uint32_t prog_rank_world(const prog *p, uint32_t r) { return r * p->stride; }
/* The arrays rank r runs: its own, or those of the rank it shares. */
static const rank_prog *own(const prog *p, uint32_t r) { return &p->ranks[p->ranks[r].src]; }

uint32_t prog_nops(const prog *p, uint32_t r) { return own(p, r)->ops.len; }
const prog_op *prog_ops(const prog *p, uint32_t r) { return own(p, r)->ops.data; }

uint32_t prog_op_group(const prog *p, uint32_t r, uint32_t op)
{
    const rank_prog *rp = &p->ranks[r];
    uint32_t g = ((const prog_op *)own(p, r)->ops.data)[op].group;
    for (uint32_t i = 0; i < rp->ngmap; i++)
        if (rp->gmap[2 * i] == g) return rp->gmap[2 * i + 1];
    return g;
}

bool prog_rank_shared(const prog *p, uint32_t r) { return p->ranks[r].src != r; }
uint32_t prog_rank_source(const prog *p, uint32_t r) { return p->ranks[r].src; }

void prog_set_dev_ns(prog *p, uint32_t r, uint32_t op, ss_ns dev_ns)
{
    ((prog_op *)p->ranks[r].ops.data)[op].dev_ns = dev_ns;
}
const uint32_t *prog_deps(const prog *p, uint32_t r) { return own(p, r)->deps.data; }
const prog_mem *prog_mems(const prog *p, uint32_t r) { return own(p, r)->mems.data; }
uint32_t prog_ntensors(const prog *p, uint32_t r) { return own(p, r)->tensors.len; }
const prog_tensor *prog_tensors(const prog *p, uint32_t r)
{
    return own(p, r)->tensors.data;
}
uint32_t prog_ngroups(const prog *p) { return p->groups.len; }

prog_group prog_group_get(const prog *p, uint32_t gid)
{
    const group_rec *g = (const group_rec *)p->groups.data + gid;
    prog_group out = {g->size, (const uint32_t *)p->group_ranks.data + g->first};
    return out;
}

prog_group prog_group_net(const prog *p, uint32_t gid)
{
    const group_rec *g = (const group_rec *)p->groups.data + gid;
    prog_group out = {g->nsize, (const uint32_t *)p->group_ranks.data + g->nfirst};
    return out;
}

uint32_t prog_group_ncopies(const prog *p, uint32_t gid)
{
    return ((const group_rec *)p->groups.data)[gid].ncopies;
}

prog_group prog_group_copy(const prog *p, uint32_t gid, uint32_t i)
{
    const group_rec *g = (const group_rec *)p->groups.data + gid;
    prog_group out = {g->nsize, (const uint32_t *)p->group_ranks.data + g->cfirst + (size_t)i * g->nsize};
    return out;
}

const char *prog_str_get(const prog *p, uint32_t id)
{
    return ((char *const *)p->strs.data)[id];
}
