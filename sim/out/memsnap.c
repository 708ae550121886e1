/* Rank 0's allocator as a PyTorch memory snapshot. memsnap.h states the
 * contract. */
#include "memsnap.h"

#include "pickle.h"

typedef struct ms {
    pk p;
    const trc *t;
    bool in_segments, in_segment;
    ss_bytes allocated, requested; /* of the open segment */
} ms;

static const char *action(mem_ev_kind k)
{
    switch (k) {
    case MEM_EV_ALLOC: return "alloc";
    case MEM_EV_FREE: return "free_completed";
    case MEM_EV_SEGMENT_ALLOC: return "segment_alloc";
    case MEM_EV_SEGMENT_FREE: return "segment_free";
    case MEM_EV_SEGMENT_MAP: return "segment_map";
    case MEM_EV_SEGMENT_UNMAP: return "segment_unmap";
    }
    return "snapshot";
}

/* [{"filename": op name, "line": op id, "name": what}] */
static void frames(ms *m, uint32_t op, uint32_t tensor)
{
    const prog *p = m->t->p;
    char what[256] = "(allocator)";
    if (tensor != UINT32_MAX) {
        const prog_tensor *x = &prog_tensors(p, 0)[tensor];
        snprintf(what, sizeof what, "%s (%s, %llu bytes requested)", prog_str_get(p, x->name),
                 prog_memcat_name((prog_memcat)x->cat), (unsigned long long)x->bytes);
    }
    pk_str(&m->p, "frames");
    pk_list(&m->p);
    if (op != UINT32_MAX || tensor != UINT32_MAX) {
        pk_dict(&m->p);
        pk_kv_str(&m->p, "filename", op == UINT32_MAX ? "(step start)" : prog_str_get(p, prog_ops(p, 0)[op].name));
        pk_kv_int(&m->p, "line", op == UINT32_MAX ? 0 : (int64_t)op);
        pk_kv_str(&m->p, "name", what);
        pk_end(&m->p);
    }
    pk_end(&m->p);
}

static void entry(ms *m, const char *act, const mem_cache_ev *e, ss_ns t, uint32_t tensor, uint32_t op)
{
    pk_dict(&m->p);
    pk_kv_str(&m->p, "action", act);
    pk_kv_int(&m->p, "addr", (int64_t)e->addr);
    pk_kv_int(&m->p, "size", (int64_t)e->size);
    pk_kv_int(&m->p, "stream", e->stream);
    pk_kv_int(&m->p, "time_us", (int64_t)(t / 1000));
    frames(m, op, tensor);
    pk_end(&m->p);
}

/* A free is requested and completed at once: the model delays a free
 * that waits for another stream (record_stream) in the program instead. */
static void on_event(void *ctx, const mem_cache_ev *e, ss_ns t, uint32_t tensor, uint32_t op)
{
    ms *m = ctx;
    if (e->kind == MEM_EV_FREE) entry(m, "free_requested", e, t, tensor, op);
    entry(m, action(e->kind), e, t, tensor, op);
}

static void end_segment(ms *m)
{
    if (!m->in_segment) return;
    pk_end(&m->p); /* blocks */
    pk_kv_int(&m->p, "allocated_size", (int64_t)m->allocated);
    pk_kv_int(&m->p, "active_size", (int64_t)m->allocated);
    pk_kv_int(&m->p, "requested_size", (int64_t)m->requested);
    pk_end(&m->p);
    m->in_segment = false;
}

/* The history ends where the end state begins. */
static void start_segments(ms *m)
{
    if (m->in_segments) return;
    pk_end(&m->p); /* device 0's entries */
    pk_end(&m->p); /* device_traces */
    pk_str(&m->p, "segments");
    pk_list(&m->p);
    m->in_segments = true;
}

static void on_block(void *ctx, const mem_cache_blk *b, uint32_t tensor)
{
    ms *m = ctx;
    start_segments(m);
    if (b->first) {
        end_segment(m);
        pk_dict(&m->p);
        pk_kv_int(&m->p, "device", 0);
        pk_kv_int(&m->p, "address", (int64_t)b->seg_addr);
        pk_kv_int(&m->p, "total_size", (int64_t)b->seg_size);
        pk_kv_int(&m->p, "stream", b->stream);
        pk_kv_str(&m->p, "segment_type", b->small ? "small" : "large");
        pk_str(&m->p, "is_expandable");
        pk_bool(&m->p, b->expandable);
        pk_str(&m->p, "frames");
        pk_list(&m->p);
        pk_end(&m->p);
        pk_str(&m->p, "blocks");
        pk_list(&m->p);
        m->in_segment = true;
        m->allocated = m->requested = 0;
    }
    bool live = !b->free && tensor != UINT32_MAX;
    pk_dict(&m->p);
    pk_kv_int(&m->p, "address", (int64_t)b->addr);
    pk_kv_int(&m->p, "size", (int64_t)b->size);
    pk_kv_int(&m->p, "requested_size", live ? (int64_t)b->size : 0);
    pk_kv_str(&m->p, "state", live ? "active_allocated" : "inactive");
    frames(m, UINT32_MAX, live ? tensor : UINT32_MAX);
    pk_end(&m->p);
    if (live) m->allocated += b->size, m->requested += b->size;
}

int msnap_write(const sum_report *r, const trc *t, FILE *f, ss_err *err)
{
    const spec_scenario *s = r->s;
    if (s->alloc_model != MEM_MODEL_CACHING)
        return ss_fail(err, SS_E_INPUT, "allocator.model",
                       "a memory snapshot needs the caching allocator model (\"caching\"); the "
                       "\"ideal\" model has no blocks or addresses");
    ms m = {.t = t};
    pk_begin(&m.p, f);
    pk_dict(&m.p);
    pk_str(&m.p, "device_traces");
    pk_list(&m.p);
    pk_list(&m.p);
    mem_tap tap = {&m, on_event, on_block};
    mem_cfg mc = {MEM_MODEL_CACHING, s->expandable_segments, sum_alloc_limit(s), false, &tap};
    mem_rank mr;
    int rc = mem_replay(t, 0, &mc, &mr, err);
    if (rc) return rc;
    mem_rank_fini(&mr);
    start_segments(&m);
    end_segment(&m);
    pk_end(&m.p); /* segments */
    pk_str(&m.p, "allocator_settings");
    pk_dict(&m.p);
    pk_str(&m.p, "expandable_segments");
    pk_bool(&m.p, s->expandable_segments);
    pk_end(&m.p);
    pk_end(&m.p);
    return pk_finish(&m.p, err);
}
