#include "cache.h"

#include <stdlib.h>
#include <string.h>

#include "../core/vec.h"

#define MIN_BLOCK 512ull
#define SMALL_SIZE (1ull << 20)
#define SMALL_BUFFER (2ull << 20)
#define LARGE_BUFFER (20ull << 20)
#define MIN_LARGE_ALLOC (10ull << 20)
#define ROUND_LARGE (2ull << 20)

typedef struct cblk {
    ss_bytes addr, size;
    uint32_t prev, next; /* neighbours in the segment */
    uint32_t wprev, wnext; /* in the list of whole free segments, while free and whole */
    uint32_t tl, tr;       /* children in the tree of free blocks, while free */
    uint32_t pr;           /* its priority there (prio of its id), while free */
    uint32_t stream;
    bool small, free, expandable, dead;
} cblk;

struct mem_cache {
    mem_cache_cfg cfg;
    cblk *b;
    uint32_t nb, capb;
    uint32_t root; /* the free blocks: a treap ordered by key_cmp */
    uint32_t whole_head; /* free blocks that are a whole segment: what empty_cache releases */
    uint32_t *spare; /* ids of dead block records, for reuse */
    uint32_t nspare, capspare;
    uint32_t *tail; /* tail[stream]: the last block of its expandable segment */
    uint32_t ntail;
    ss_bytes next_addr;
    mem_cache_stats st;
    mem_cache_hook hook;
    void *hook_ctx;
};

static void emit(mem_cache *c, mem_ev_kind k, ss_bytes addr, ss_bytes size, uint32_t stream,
                 uint32_t block)
{
    if (c->hook) c->hook(c->hook_ctx, &(mem_cache_ev){k, addr, size, stream, block});
}

void mem_cache_set_hook(mem_cache *c, mem_cache_hook f, void *ctx)
{
    c->hook = f;
    c->hook_ctx = ctx;
}

static ss_bytes round_up(ss_bytes x, ss_bytes to) { return ss_div_ceil(x, to) * to; }

static ss_bytes segment_size(ss_bytes rs)
{
    if (rs <= SMALL_SIZE) return SMALL_BUFFER;
    if (rs < MIN_LARGE_ALLOC) return LARGE_BUFFER;
    return round_up(rs, ROUND_LARGE);
}

int mem_cache_new(mem_cache **out, const mem_cache_cfg *cfg, ss_err *err)
{
    mem_cache *c = calloc(1, sizeof *c);
    if (!c) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the allocator model");
    c->cfg = *cfg;
    c->whole_head = c->root = MEM_CACHE_NONE;
    *out = c;
    return SS_OK;
}

void mem_cache_free(mem_cache *c)
{
    if (!c) return;
    free(c->b);
    free(c->spare);
    free(c->tail);
    free(c);
}

/* The expandable segment's last block of a stream, or MEM_CACHE_NONE. Kept
 * as blocks split, merge and die, so that growing the segment does not scan
 * every block (which made a step quadratic in its tensors). */
static uint32_t tail_of(const mem_cache *c, uint32_t stream)
{
    return stream < c->ntail ? c->tail[stream] : MEM_CACHE_NONE;
}

static bool tail_set(mem_cache *c, uint32_t stream, uint32_t id)
{
    if (stream >= c->ntail) {
        uint32_t cap = c->ntail;
        if (!ss_grow((void **)&c->tail, &cap, stream + 1, sizeof *c->tail)) return false;
        for (uint32_t i = c->ntail; i < cap; i++) c->tail[i] = MEM_CACHE_NONE;
        c->ntail = cap;
    }
    c->tail[stream] = id;
    return true;
}

static uint32_t blk_new(mem_cache *c)
{
    if (c->nspare) return c->spare[--c->nspare];
    if (!ss_grow((void **)&c->b, &c->capb, c->nb + 1, sizeof *c->b)) return MEM_CACHE_NONE;
    return c->nb++;
}

/* Free blocks are kept ordered by (pool, stream, size, address), as
 * PyTorch's block sets are, so that the best fit is one descent. The order
 * is a treap (a search tree heap-ordered by a hash of the block id, so its
 * shape is deterministic and its depth logarithmic in expectation): a
 * sorted array made every free and reuse O(free blocks), quadratic over a
 * step with tens of thousands of layers. */
static int key_cmp(const cblk *k, bool small, uint32_t stream, ss_bytes size, ss_bytes addr)
{
    if (k->small != small) return k->small < small ? -1 : 1;
    if (k->stream != stream) return k->stream < stream ? -1 : 1;
    if (k->size != size) return k->size < size ? -1 : 1;
    return (k->addr > addr) - (k->addr < addr);
}

static inline bool before(const mem_cache *c, uint32_t a, uint32_t b)
{
    const cblk *k = &c->b[b];
    return key_cmp(&c->b[a], k->small, k->stream, k->size, k->addr) < 0;
}

static uint32_t prio(uint32_t id) /* splitmix32-style mix: a bijection, so no ties */
{
    uint32_t x = id * 0x9e3779b9u;
    x = (x ^ (x >> 16)) * 0x85ebca6bu;
    x = (x ^ (x >> 13)) * 0xc2b2ae35u;
    return x ^ (x >> 16);
}

/* The treap's operations walk down through the slot (root or child link)
 * that holds the current node, so none recurses; a node's priority is
 * cached in its record while it is in the tree (cblk.pr). */

/* The nodes of t before id into *l, the rest into *r. */
static void t_split(mem_cache *c, uint32_t t, uint32_t id, uint32_t *l, uint32_t *r)
{
    while (t != MEM_CACHE_NONE) {
        if (before(c, t, id)) {
            *l = t;
            l = &c->b[t].tr;
            t = c->b[t].tr;
        } else {
            *r = t;
            r = &c->b[t].tl;
            t = c->b[t].tl;
        }
    }
    *l = *r = MEM_CACHE_NONE;
}

/* Every key of l is before every key of r. */
static uint32_t t_merge(mem_cache *c, uint32_t l, uint32_t r)
{
    uint32_t top, *s = &top;
    while (l != MEM_CACHE_NONE && r != MEM_CACHE_NONE) {
        if (c->b[l].pr > c->b[r].pr) {
            *s = l;
            s = &c->b[l].tr;
            l = c->b[l].tr;
        } else {
            *s = r;
            s = &c->b[r].tl;
            r = c->b[r].tl;
        }
    }
    *s = l != MEM_CACHE_NONE ? l : r;
    return top;
}

static void t_insert(mem_cache *c, uint32_t id)
{
    uint32_t *s = &c->root, p = c->b[id].pr = prio(id);
    while (*s != MEM_CACHE_NONE && c->b[*s].pr > p)
        s = before(c, id, *s) ? &c->b[*s].tl : &c->b[*s].tr;
    t_split(c, *s, id, &c->b[id].tl, &c->b[id].tr);
    *s = id;
}

static void t_erase(mem_cache *c, uint32_t id)
{
    uint32_t *s = &c->root;
    while (*s != MEM_CACHE_NONE && *s != id) s = before(c, id, *s) ? &c->b[*s].tl : &c->b[*s].tr;
    if (*s == id) *s = t_merge(c, c->b[id].tl, c->b[id].tr);
}

/* The first free block not below the key, or MEM_CACHE_NONE. */
static uint32_t lower(const mem_cache *c, bool small, uint32_t stream, ss_bytes size, ss_bytes addr)
{
    uint32_t t = c->root, best = MEM_CACHE_NONE;
    while (t != MEM_CACHE_NONE) {
        if (key_cmp(&c->b[t], small, stream, size, addr) < 0) {
            t = c->b[t].tr;
        } else {
            best = t;
            t = c->b[t].tl;
        }
    }
    return best;
}

/* A block's neighbours change only while it is out of the free list, so
 * the list of whole free segments, kept as blocks enter and leave it, stays
 * exact, and empty_cache visits only what it releases. */
static bool whole(const cblk *k) { return k->prev == MEM_CACHE_NONE && k->next == MEM_CACHE_NONE; }

static void whole_link(mem_cache *c, uint32_t id)
{
    c->b[id].wprev = MEM_CACHE_NONE;
    c->b[id].wnext = c->whole_head;
    if (c->whole_head != MEM_CACHE_NONE) c->b[c->whole_head].wprev = id;
    c->whole_head = id;
}

static void whole_unlink(mem_cache *c, uint32_t id)
{
    cblk *k = &c->b[id];
    if (k->wprev != MEM_CACHE_NONE) c->b[k->wprev].wnext = k->wnext;
    else c->whole_head = k->wnext;
    if (k->wnext != MEM_CACHE_NONE) c->b[k->wnext].wprev = k->wprev;
}

static bool free_add(mem_cache *c, uint32_t id)
{
    cblk *k = &c->b[id];
    k->tl = k->tr = MEM_CACHE_NONE;
    t_insert(c, id);
    if (whole(&c->b[id])) whole_link(c, id);
    c->b[id].free = true;
    return true;
}

static void free_del(mem_cache *c, uint32_t id)
{
    if (!c->b[id].free) return;
    t_erase(c, id);
    if (whole(&c->b[id])) whole_unlink(c, id);
    c->b[id].free = false;
}

static void blk_kill(mem_cache *c, uint32_t id)
{
    c->b[id].dead = true;
    if (tail_of(c, c->b[id].stream) == id) c->tail[c->b[id].stream] = MEM_CACHE_NONE;
    if (ss_grow((void **)&c->spare, &c->capspare, c->nspare + 1, sizeof *c->spare))
        c->spare[c->nspare++] = id;
}

/* Smallest free block of the pool and stream that fits; lowest address on
 * ties: the first one at or above (pool, stream, rs). */
static uint32_t best_fit(const mem_cache *c, ss_bytes rs, bool small, uint32_t stream)
{
    uint32_t i = lower(c, small, stream, rs, 0);
    if (i == MEM_CACHE_NONE) return MEM_CACHE_NONE;
    const cblk *k = &c->b[i];
    return k->small == small && k->stream == stream ? i : MEM_CACHE_NONE;
}

/* empty_cache: unmap every segment that is one whole free block. */
static void release_cached(mem_cache *c)
{
    while (c->whole_head != MEM_CACHE_NONE) {
        uint32_t id = c->whole_head;
        free_del(c, id);
        c->st.reserved -= c->b[id].size;
        const cblk *k = &c->b[id];
        emit(c, k->expandable ? MEM_EV_SEGMENT_UNMAP : MEM_EV_SEGMENT_FREE, k->addr, k->size,
             k->stream, id);
        blk_kill(c, id);
    }
}

static uint32_t map_segment(mem_cache *c, ss_bytes size, bool small, uint32_t stream, bool *oom)
{
    if (c->cfg.capacity && c->st.reserved + size > c->cfg.capacity) {
        release_cached(c);
        c->st.retries++;
        if (c->st.reserved + size > c->cfg.capacity) {
            *oom = true;
            c->st.ooms++;
        }
    }
    uint32_t id = blk_new(c);
    if (id == MEM_CACHE_NONE) return id;
    c->b[id] = (cblk){.addr = c->next_addr, .size = size, .prev = MEM_CACHE_NONE,
                      .next = MEM_CACHE_NONE, .stream = stream, .small = small};
    c->next_addr += size + ROUND_LARGE; /* a gap: segments never touch */
    c->st.reserved += size;
    c->st.segments_mapped++;
    if (c->st.reserved > c->st.peak_reserved) c->st.peak_reserved = c->st.reserved;
    emit(c, MEM_EV_SEGMENT_ALLOC, c->b[id].addr, size, stream, id);
    return free_add(c, id) ? id : MEM_CACHE_NONE;
}

/* expandable_segments: extend this stream's large segment at its end. */
static uint32_t expand_segment(mem_cache *c, ss_bytes rs, uint32_t stream, bool *oom)
{
    uint32_t tail = tail_of(c, stream);
    bool tail_free = tail != MEM_CACHE_NONE && c->b[tail].free;
    ss_bytes need = round_up(tail_free ? rs - c->b[tail].size : rs, ROUND_LARGE);
    if (c->cfg.capacity && c->st.reserved + need > c->cfg.capacity) {
        *oom = true;
        c->st.ooms++;
    }
    c->st.reserved += need;
    if (c->st.reserved > c->st.peak_reserved) c->st.peak_reserved = c->st.reserved;
    if (tail_free) { /* its key changes: out of the order and back */
        emit(c, MEM_EV_SEGMENT_MAP, c->b[tail].addr + c->b[tail].size, need, stream, tail);
        free_del(c, tail);
        c->b[tail].size += need;
        return free_add(c, tail) ? tail : MEM_CACHE_NONE;
    }
    uint32_t id = blk_new(c);
    if (id == MEM_CACHE_NONE) return id;
    ss_bytes addr = tail == MEM_CACHE_NONE ? c->next_addr : c->b[tail].addr + c->b[tail].size;
    if (tail == MEM_CACHE_NONE) {
        c->next_addr += (ss_bytes)1 << 40; /* room for the segment to grow */
        c->st.segments_mapped++;
    }
    c->b[id] = (cblk){.addr = addr, .size = need, .prev = tail, .next = MEM_CACHE_NONE,
                      .stream = stream, .expandable = true};
    emit(c, MEM_EV_SEGMENT_MAP, addr, need, stream, id);
    if (tail != MEM_CACHE_NONE) c->b[tail].next = id;
    return tail_set(c, stream, id) && free_add(c, id) ? id : MEM_CACHE_NONE;
}

static bool split(mem_cache *c, uint32_t id, ss_bytes rs)
{
    cblk *k = &c->b[id];
    ss_bytes rest = k->size - rs;
    if (k->small ? rest < MIN_BLOCK : rest <= SMALL_SIZE) return true;
    uint32_t n = blk_new(c);
    if (n == MEM_CACHE_NONE) return false;
    k = &c->b[id]; /* blk_new may have moved the array */
    c->b[n] = (cblk){.addr = k->addr + rs, .size = rest, .prev = id, .next = k->next,
                     .stream = k->stream, .small = k->small, .expandable = k->expandable};
    if (k->next != MEM_CACHE_NONE) c->b[k->next].prev = n;
    else if (k->expandable && tail_of(c, k->stream) == id) c->tail[k->stream] = n;
    k->next = n;
    k->size = rs;
    return free_add(c, n);
}

int mem_cache_alloc(mem_cache *c, ss_bytes bytes, uint32_t stream, uint32_t *block,
                    bool *oom, ss_err *err)
{
    *oom = false;
    ss_bytes rs = round_up(bytes ? bytes : 1, MIN_BLOCK);
    bool small = rs <= SMALL_SIZE;
    uint32_t id = best_fit(c, rs, small, stream);
    if (id == MEM_CACHE_NONE)
        id = !small && c->cfg.expandable_segments ? expand_segment(c, rs, stream, oom)
                                                  : map_segment(c, segment_size(rs), small,
                                                                stream, oom);
    if (id == MEM_CACHE_NONE || (free_del(c, id), !split(c, id, rs)))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory in the allocator model");
    c->st.allocated += c->b[id].size;
    if (c->st.allocated > c->st.peak_allocated) c->st.peak_allocated = c->st.allocated;
    emit(c, MEM_EV_ALLOC, c->b[id].addr, c->b[id].size, stream, id);
    *block = id;
    return SS_OK;
}

static void merge_next(mem_cache *c, uint32_t id)
{
    uint32_t n = c->b[id].next;
    if (n == MEM_CACHE_NONE || !c->b[n].free) return;
    free_del(c, n);
    if (tail_of(c, c->b[n].stream) == n) c->tail[c->b[n].stream] = id;
    c->b[id].size += c->b[n].size;
    c->b[id].next = c->b[n].next;
    if (c->b[n].next != MEM_CACHE_NONE) c->b[c->b[n].next].prev = id;
    blk_kill(c, n);
}

void mem_cache_release(mem_cache *c, uint32_t id)
{
    c->st.allocated -= c->b[id].size;
    emit(c, MEM_EV_FREE, c->b[id].addr, c->b[id].size, c->b[id].stream, id);
    merge_next(c, id);
    uint32_t p = c->b[id].prev;
    if (p != MEM_CACHE_NONE && c->b[p].free) {
        free_del(c, p);
        c->b[id].free = true; /* so that p absorbs it */
        merge_next(c, p);
        id = p;
    }
    free_add(c, id);
}

ss_bytes mem_cache_block_size(const mem_cache *c, uint32_t block) { return c->b[block].size; }

mem_cache_stats mem_cache_get_stats(const mem_cache *c) { return c->st; }

void mem_cache_reset_peaks(mem_cache *c)
{
    c->st.peak_allocated = c->st.allocated;
    c->st.peak_reserved = c->st.reserved;
    c->st.segments_mapped = 0;
    c->st.ooms = 0;
    c->st.retries = 0;
}

typedef struct head {
    ss_bytes addr;
    uint32_t id;
} head;

static int head_cmp(const void *x, const void *y)
{
    ss_bytes a = ((const head *)x)->addr, b = ((const head *)y)->addr;
    return (a > b) - (a < b);
}

int mem_cache_walk(const mem_cache *c, void (*f)(void *ctx, const mem_cache_blk *b), void *ctx,
                   ss_err *err)
{
    uint32_t n = 0;
    head *heads = malloc((c->nb ? c->nb : 1) * sizeof *heads);
    if (!heads) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory walking the allocator");
    for (uint32_t i = 0; i < c->nb; i++)
        if (!c->b[i].dead && c->b[i].prev == MEM_CACHE_NONE) heads[n++] = (head){c->b[i].addr, i};
    qsort(heads, n, sizeof *heads, head_cmp);
    for (uint32_t h = 0; h < n; h++) {
        ss_bytes size = 0;
        for (uint32_t i = heads[h].id; i != MEM_CACHE_NONE; i = c->b[i].next) size += c->b[i].size;
        for (uint32_t i = heads[h].id; i != MEM_CACHE_NONE; i = c->b[i].next) {
            const cblk *k = &c->b[i];
            f(ctx, &(mem_cache_blk){k->addr, k->size, heads[h].addr, size, i, k->stream,
                                    i == heads[h].id, k->free, k->small, k->expandable});
        }
    }
    free(heads);
    return SS_OK;
}
