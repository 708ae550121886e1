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
    uint32_t stream;
    bool small, free, expandable, dead;
} cblk;

struct mem_cache {
    mem_cache_cfg cfg;
    cblk *b;
    uint32_t nb, capb;
    uint32_t *freel; /* ids of free blocks, ordered by key() */
    uint32_t nfree, capfree;
    uint32_t *spare; /* ids of dead block records, for reuse */
    uint32_t nspare, capspare;
    ss_bytes next_addr;
    mem_cache_stats st;
};

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
    *out = c;
    return SS_OK;
}

void mem_cache_free(mem_cache *c)
{
    if (!c) return;
    free(c->b);
    free(c->freel);
    free(c->spare);
    free(c);
}

static uint32_t blk_new(mem_cache *c)
{
    if (c->nspare) return c->spare[--c->nspare];
    if (!ss_grow((void **)&c->b, &c->capb, c->nb + 1, sizeof *c->b)) return MEM_CACHE_NONE;
    return c->nb++;
}

/* Free blocks are kept sorted by (pool, stream, size, address), as
 * PyTorch's block sets are, so that the best fit is one binary search. */
static int key_cmp(const cblk *k, bool small, uint32_t stream, ss_bytes size, ss_bytes addr)
{
    if (k->small != small) return k->small < small ? -1 : 1;
    if (k->stream != stream) return k->stream < stream ? -1 : 1;
    if (k->size != size) return k->size < size ? -1 : 1;
    return (k->addr > addr) - (k->addr < addr);
}

/* Position of the first free block not below the key. */
static uint32_t lower(const mem_cache *c, bool small, uint32_t stream, ss_bytes size, ss_bytes addr)
{
    uint32_t lo = 0, hi = c->nfree;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&c->b[c->freel[mid]], small, stream, size, addr) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool free_add(mem_cache *c, uint32_t id)
{
    if (!ss_grow((void **)&c->freel, &c->capfree, c->nfree + 1, sizeof *c->freel)) return false;
    const cblk *k = &c->b[id];
    uint32_t i = lower(c, k->small, k->stream, k->size, k->addr);
    memmove(c->freel + i + 1, c->freel + i, (c->nfree - i) * sizeof *c->freel);
    c->freel[i] = id;
    c->nfree++;
    c->b[id].free = true;
    return true;
}

static void free_del(mem_cache *c, uint32_t id)
{
    const cblk *k = &c->b[id];
    uint32_t i = lower(c, k->small, k->stream, k->size, k->addr);
    if (i < c->nfree && c->freel[i] == id) {
        memmove(c->freel + i, c->freel + i + 1, (c->nfree - i - 1) * sizeof *c->freel);
        c->nfree--;
    }
    c->b[id].free = false;
}

static void blk_kill(mem_cache *c, uint32_t id)
{
    c->b[id].dead = true;
    if (ss_grow((void **)&c->spare, &c->capspare, c->nspare + 1, sizeof *c->spare))
        c->spare[c->nspare++] = id;
}

/* Smallest free block of the pool and stream that fits; lowest address on
 * ties: the first one at or above (pool, stream, rs). */
static uint32_t best_fit(const mem_cache *c, ss_bytes rs, bool small, uint32_t stream)
{
    uint32_t i = lower(c, small, stream, rs, 0);
    if (i == c->nfree) return MEM_CACHE_NONE;
    const cblk *k = &c->b[c->freel[i]];
    return k->small == small && k->stream == stream ? c->freel[i] : MEM_CACHE_NONE;
}

/* empty_cache: unmap every segment that is one whole free block. */
static void release_cached(mem_cache *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nfree; i++) {
        uint32_t id = c->freel[i];
        cblk *k = &c->b[id];
        if (k->prev != MEM_CACHE_NONE || k->next != MEM_CACHE_NONE) {
            c->freel[n++] = id;
            continue;
        }
        c->st.reserved -= k->size;
        blk_kill(c, id);
    }
    c->nfree = n;
}

static uint32_t map_segment(mem_cache *c, ss_bytes size, bool small, uint32_t stream, bool *oom)
{
    if (c->cfg.capacity && c->st.reserved + size > c->cfg.capacity) {
        release_cached(c);
        if (c->st.reserved + size > c->cfg.capacity) {
            *oom = true;
            c->st.ooms++;
        }
    }
    uint32_t id = blk_new(c);
    if (id == MEM_CACHE_NONE) return id;
    c->b[id] = (cblk){c->next_addr, size, MEM_CACHE_NONE, MEM_CACHE_NONE, stream, small, false,
                      false, false};
    c->next_addr += size + ROUND_LARGE; /* a gap: segments never touch */
    c->st.reserved += size;
    c->st.segments_mapped++;
    if (c->st.reserved > c->st.peak_reserved) c->st.peak_reserved = c->st.reserved;
    return free_add(c, id) ? id : MEM_CACHE_NONE;
}

/* expandable_segments: extend this stream's large segment at its end. */
static uint32_t expand_segment(mem_cache *c, ss_bytes rs, uint32_t stream, bool *oom)
{
    uint32_t tail = MEM_CACHE_NONE;
    for (uint32_t i = 0; i < c->nb; i++) {
        const cblk *k = &c->b[i];
        if (!k->dead && k->expandable && k->stream == stream && k->next == MEM_CACHE_NONE &&
            (tail == MEM_CACHE_NONE || k->addr > c->b[tail].addr))
            tail = i;
    }
    bool tail_free = tail != MEM_CACHE_NONE && c->b[tail].free;
    ss_bytes need = round_up(tail_free ? rs - c->b[tail].size : rs, ROUND_LARGE);
    if (c->cfg.capacity && c->st.reserved + need > c->cfg.capacity) {
        *oom = true;
        c->st.ooms++;
    }
    c->st.reserved += need;
    if (c->st.reserved > c->st.peak_reserved) c->st.peak_reserved = c->st.reserved;
    if (tail_free) { /* its key changes: out of the order and back */
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
    c->b[id] = (cblk){addr, need, tail, MEM_CACHE_NONE, stream, false, false, true, false};
    if (tail != MEM_CACHE_NONE) c->b[tail].next = id;
    return free_add(c, id) ? id : MEM_CACHE_NONE;
}

static bool split(mem_cache *c, uint32_t id, ss_bytes rs)
{
    cblk *k = &c->b[id];
    ss_bytes rest = k->size - rs;
    if (k->small ? rest < MIN_BLOCK : rest <= SMALL_SIZE) return true;
    uint32_t n = blk_new(c);
    if (n == MEM_CACHE_NONE) return false;
    k = &c->b[id]; /* blk_new may have moved the array */
    c->b[n] = (cblk){k->addr + rs, rest, id, k->next, k->stream, k->small, false,
                     k->expandable, false};
    if (k->next != MEM_CACHE_NONE) c->b[k->next].prev = n;
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
    *block = id;
    return SS_OK;
}

static void merge_next(mem_cache *c, uint32_t id)
{
    uint32_t n = c->b[id].next;
    if (n == MEM_CACHE_NONE || !c->b[n].free) return;
    free_del(c, n);
    c->b[id].size += c->b[n].size;
    c->b[id].next = c->b[n].next;
    if (c->b[n].next != MEM_CACHE_NONE) c->b[c->b[n].next].prev = id;
    blk_kill(c, n);
}

void mem_cache_release(mem_cache *c, uint32_t id)
{
    c->st.allocated -= c->b[id].size;
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
}
