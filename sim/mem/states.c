#include "states.h"

#include <stdlib.h>

uint32_t st_optim_elem_bytes(const spec_optimizer_cfg *opt, spec_dtype optim)
{
    uint32_t sz = spec_dtype_size(optim);
    switch (opt->type) {
    case SPEC_OPT_ADAM:
    case SPEC_OPT_ADAMW: return 2 * sz;
    case SPEC_OPT_SGD: return opt->momentum ? sz : 0;
    default: return 0;
    }
}

uint64_t st_shard_logical(uint64_t numel, uint32_t n, uint32_t r)
{
    uint64_t chunk = ss_div_ceil(numel, n);
    uint64_t lo = chunk * r;
    if (lo >= numel) return 0;
    return numel - lo < chunk ? numel - lo : chunk;
}

int st_zro_owners(const uint64_t *numels, uint32_t count, uint32_t n,
                  uint32_t *owner)
{
    /* Insertion order by size, descending and stable: parameter lists are
     * short (one entry per tensor), and stability keeps equal sizes in model
     * order as torch's sorted() does. */
    uint32_t *order = malloc((count ? count : 1) * sizeof *order);
    uint64_t *load = calloc(n, sizeof *load);
    if (!order || !load) {
        free(order);
        free(load);
        return SS_E_NOMEM;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t j = i;
        while (j > 0 && numels[order[j - 1]] < numels[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (uint32_t k = 0; k < count; k++) {
        uint32_t best = 0;
        for (uint32_t r = 1; r < n; r++)
            if (load[r] < load[best]) best = r;
        owner[order[k]] = best;
        load[best] += numels[order[k]];
    }
    free(order);
    free(load);
    return SS_OK;
}

/* Elements held by the rank under three sharding rules. */
typedef struct st_elems {
    uint64_t full;     /* every element (replicated) */
    uint64_t flat_log; /* one padded flat buffer over all counts */
    uint64_t flat_phys;
    uint64_t unit_log; /* one padded flat buffer per count (FSDP) */
    uint64_t unit_phys;
    uint64_t owned; /* ZRO owner assignment */
} st_elems;

static int st_count(const st_input *in, st_elems *e, ss_err *err)
{
    uint64_t total = 0;
    *e = (st_elems){0};
    for (uint32_t i = 0; i < in->count; i++) {
        uint64_t x = in->numels[i];
        if (in->kind == ST_FSDP2) { /* dim-0 shards of each parameter */
            uint64_t rows = in->rows[i] ? in->rows[i] : 1, cols = x / rows;
            if (ss_add_u64(total, x, &total) ||
                ss_add_u64(e->unit_phys, ss_div_ceil(rows, in->n) * cols, &e->unit_phys))
                return ss_fail(err, SS_E_OVERFLOW, NULL, "parameter count overflows 64 bits");
            e->unit_log += st_shard_logical(rows, in->n, in->rank) * cols;
            continue;
        }
        if (ss_add_u64(total, x, &total) ||
            ss_add_u64(e->unit_phys, ss_div_ceil(x, in->n), &e->unit_phys))
            return ss_fail(err, SS_E_OVERFLOW, NULL,
                           "parameter count overflows 64 bits");
        e->unit_log += st_shard_logical(x, in->n, in->rank);
    }
    e->full = total;
    e->flat_log = st_shard_logical(total, in->n, in->rank);
    e->flat_phys = ss_div_ceil(total, in->n);
    if (in->kind == ST_ZERO1_ZRO) {
        uint32_t *owner = malloc((in->count ? in->count : 1) * sizeof *owner);
        if (!owner || st_zro_owners(in->numels, in->count, in->n, owner)) {
            free(owner);
            return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        }
        for (uint32_t i = 0; i < in->count; i++)
            if (owner[i] == in->rank) e->owned += in->numels[i];
        free(owner);
    }
    return SS_OK;
}

static int st_amt(uint64_t log, uint64_t phys, uint32_t elem, st_amount *a)
{
    if (ss_mul_u64(log, elem, &a->logical) || ss_mul_u64(phys, elem, &a->physical))
        return SS_E_OVERFLOW;
    return SS_OK;
}

/* Which element count each state uses, per kind: P, G, O (master follows O). */
static void st_pick(const st_input *in, const st_elems *e, uint64_t lp[3][2])
{
    uint64_t full[2] = {e->full, e->full};
    uint64_t flat[2] = {e->flat_log, e->flat_phys};
    uint64_t unit[2] = {e->unit_log, e->unit_phys};
    uint64_t owned[2] = {e->owned, e->owned};
    uint64_t uopt[2] = {e->unit_log, in->use_orig_params || in->kind == ST_FSDP2 ? e->unit_log
                                                                                 : e->unit_phys};
    const uint64_t *pick[3];
    switch (in->kind) {
    case ST_ZERO0: pick[0] = full; pick[1] = full; pick[2] = full; break;
    case ST_ZERO1: pick[0] = full; pick[1] = full; pick[2] = flat; break;
    case ST_ZERO2: pick[0] = full; pick[1] = flat; pick[2] = flat; break;
    case ST_ZERO3: pick[0] = flat; pick[1] = flat; pick[2] = flat; break;
    case ST_ZERO1_ZRO: pick[0] = full; pick[1] = full; pick[2] = owned; break;
    case ST_FSDP_NO_SHARD: pick[0] = full; pick[1] = full; pick[2] = full; break;
    default: pick[0] = unit; pick[1] = unit; pick[2] = uopt; break;
    }
    for (int s = 0; s < 3; s++) {
        lp[s][0] = pick[s][0];
        lp[s][1] = pick[s][1];
    }
}

static bool ds_kind(st_kind k) { return k == ST_DS_ZERO1 || k == ST_DS_ZERO2 || k == ST_DS_ZERO3; }

/* DeepSpeed: which counts each state uses (lp as st_pick's); *part is
 * the parameters' partition, which offload_param moves to the host (the
 * persistent parameters of stage 3 stay whole on the device). */
static void ds_pick(const st_input *in, const st_elems *e, uint64_t lp[3][2], uint64_t *part)
{
    bool s3 = in->kind == ST_DS_ZERO3;
    uint64_t log = s3 ? e->unit_log : e->flat_log, phys = s3 ? e->unit_phys : e->flat_phys;
    uint64_t plog = s3 ? log : e->full, pphys = s3 ? phys : e->full;
    *part = pphys;
    for (uint32_t i = 0; s3 && i < in->count; i++)
        if (in->numels[i] < in->persist_below) {
            plog += in->numels[i];
            pphys += in->numels[i];
        }
    lp[0][0] = plog;
    lp[0][1] = pphys;
    bool whole = in->kind == ST_DS_ZERO1, none = in->off_optim && !whole;
    lp[1][0] = none ? 0 : whole ? e->full : log;
    lp[1][1] = none ? 0 : whole ? e->full : phys;
    lp[2][0] = log;
    lp[2][1] = phys;
}

static int ds_finish(const st_input *in, uint64_t lp[3][2], uint64_t part, st_bytes *b)
{
    /* The step reads an fp32 copy of the gradient partition unless the
     * gradients are kept in fp32 (stage 3's grad_accum_dtype); under
     * offload it is the host's fp32 buffer the gradients are copied to. */
    uint32_t g = spec_dtype_size(in->prec.grad), m = spec_dtype_size(in->prec.master);
    bool copy = m && (g != m || in->off_optim);
    if (copy && st_amt(lp[2][0], lp[2][1], m, &b->grad32)) return SS_E_OVERFLOW;
    if (in->off_params && ss_mul_u64(part, spec_dtype_size(in->prec.param), &b->param.host))
        return SS_E_OVERFLOW;
    if (in->off_optim) {
        b->master.host = b->master.physical;
        b->optim.host = b->optim.physical;
        b->grad32.host = b->grad32.physical;
    }
    return SS_OK;
}

int st_compute(const st_input *in, st_bytes *out, ss_err *err)
{
    if (in->n == 0 || in->rank >= in->n)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "rank %u of a group of %u ranks does not exist", in->rank,
                       in->n);
    st_elems e;
    int rc = st_count(in, &e, err);
    if (rc) return rc;
    uint64_t lp[3][2], part = 0;
    if (ds_kind(in->kind)) ds_pick(in, &e, lp, &part);
    else st_pick(in, &e, lp);
    st_bytes b = {0};
    uint32_t osz = st_optim_elem_bytes(&in->opt, in->prec.optim);
    if (st_amt(lp[0][0], lp[0][1], spec_dtype_size(in->prec.param), &b.param) ||
        st_amt(lp[1][0], lp[1][1], spec_dtype_size(in->prec.grad), &b.grad) ||
        st_amt(lp[2][0], lp[2][1], spec_dtype_size(in->prec.master), &b.master) ||
        st_amt(lp[2][0], lp[2][1], osz, &b.optim))
        return ss_fail(err, SS_E_OVERFLOW, NULL, "state bytes overflow 64 bits");
    if (ds_kind(in->kind) && ds_finish(in, lp, part, &b))
        return ss_fail(err, SS_E_OVERFLOW, NULL, "state bytes overflow 64 bits");
    if (!ds_kind(in->kind) && in->off_params) { /* FSDP's CPUOffload: every state */
        b.param.host = b.param.physical;
        b.grad.host = b.grad.physical;
        b.master.host = b.master.physical;
        b.optim.host = b.optim.physical;
    }
    b.host = b.param.host + b.grad.host + b.master.host + b.optim.host + b.grad32.host;
    uint64_t t = b.grad32.physical;
    if (ss_add_u64(t, b.param.physical, &t) || ss_add_u64(t, b.grad.physical, &t) ||
        ss_add_u64(t, b.master.physical, &t) || ss_add_u64(t, b.optim.physical, &t))
        return ss_fail(err, SS_E_OVERFLOW, NULL, "state bytes overflow 64 bits");
    b.total_physical = t;
    *out = b;
    return SS_OK;
}
