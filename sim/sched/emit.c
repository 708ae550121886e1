#include "emit.h"

#include "../core/fmt.h"
#include "../core/utf8.h"
#include "../core/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void em_nomem(em *e)
{
    if (!e->rc) e->rc = ss_fail(e->err, SS_E_NOMEM, NULL, "out of memory emitting ops");
}

int em_init(em *e, const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    *e = (em){.p = p, .pl = pl, .rank = rank, .err = err, .last = EM_NONE,
              .t_input = EM_NONE};
    e->nslots = pl->layout ? pl->s->grad_accum : 1;
    size_t n = (pl->nblocks ? pl->nblocks : 1) * (size_t)e->nslots;
    e->t_act = malloc(n * sizeof *e->t_act);
    e->t_dact = malloc(n * sizeof *e->t_dact);
    e->t_saved = malloc(n * sizeof *e->t_saved);
    if (!e->t_act || !e->t_dact || !e->t_saved) {
        em_fini(e);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory emitting ops");
    }
    int rc = sched_states(pl, prog_rank_world(p, rank), &e->st, err);
    if (rc) em_fini(e);
    return rc;
}

void em_fini(em *e)
{
    free(e->deps);
    free(e->dmark);
    free(e->mem);
    free(e->t_act);
    free(e->t_dact);
    free(e->t_saved);
    e->deps = e->dmark = NULL;
    e->capdmark = 0;
    e->mem = NULL;
    e->t_act = e->t_dact = e->t_saved = NULL;
}

int em_done(em *e) { return e->rc; }

ss_ns em_op_host_ns(const em *e) { return plan_op_host_ns(e->pl); }

/* The host's time to issue k kernels (a count of 0 reads as one). */
static ss_ns launches_ns(const em *e, uint64_t k) { return em_op_host_ns(e) * (k ? k : 1); }

bool em_syncs(const em *e, uint32_t m)
{
    return m + 1 == e->pl->s->grad_accum || !e->pl->s->shard.no_sync;
}

uint32_t em_tensor(em *e, prog_memcat cat, ss_bytes bytes, bool live,
                   const char *fmt, ...)
{
    if (e->rc) return EM_NONE;
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    ss_vfmt(name, sizeof name, fmt, ap);
    va_end(ap);
    ss_utf8_trim(name); /* a cut name ends on a character boundary */
    uint32_t id = EM_NONE;
    e->rc = prog_tensor_add(e->p, e->rank, name, cat, bytes, live, &id, e->err);
    return e->rc ? EM_NONE : id;
}

void em_begin(em *e, prog_opkind kind, prog_stream st, prog_phase ph,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ss_vfmt(e->name, sizeof e->name, fmt, ap);
    va_end(ap);
    ss_utf8_trim(e->name);
    e->s = (prog_op_spec){.kind = kind, .stream = st, .phase = ph, .name = e->name};
    e->ndeps = e->nmem = 0;
    if (++e->dstamp == 0) { /* wrapped: no mark may match a stale stamp */
        if (e->dmark) memset(e->dmark, 0, (size_t)e->capdmark * sizeof *e->dmark);
        e->dstamp = 1;
    }
    if (kind != PROG_OP_HOST) e->s.host_ns = em_op_host_ns(e);
}

void em_dep(em *e, uint32_t op)
{
    if (e->rc || op == EM_NONE) return;
    if (op < e->capdmark && e->dmark[op] == e->dstamp) return;
    uint32_t cap = e->capdmark;
    if (!ss_grow((void **)&e->dmark, &e->capdmark, op + 1, sizeof *e->dmark) ||
        !ss_grow((void **)&e->deps, &e->capdeps, e->ndeps + 1, sizeof *e->deps)) {
        em_nomem(e);
        return;
    }
    if (e->capdmark > cap) memset(e->dmark + cap, 0, (size_t)(e->capdmark - cap) * sizeof *e->dmark);
    e->dmark[op] = e->dstamp;
    e->deps[e->ndeps++] = op;
}

void em_mem(em *e, uint32_t tensor, prog_memact act)
{
    if (e->rc || tensor == EM_NONE) return;
    if (!ss_grow((void **)&e->mem, &e->capmem, e->nmem + 1, sizeof *e->mem)) {
        em_nomem(e);
        return;
    }
    e->mem[e->nmem++] = (prog_mem){tensor, (uint8_t)act};
}

void em_coll(em *e, prog_coll c, ss_bytes bytes)
{
    e->s.coll = c;
    e->s.bytes = bytes;
    e->s.group = 0;
}

void em_group(em *e, uint32_t gid) { e->s.group = gid; }

void em_cost(em *e, ss_ns host_ns, ss_ns dev_ns, uint64_t flops)
{
    e->s.host_ns = host_ns;
    e->s.dev_ns = dev_ns;
    e->s.flops = flops;
}

uint32_t em_end(em *e)
{
    if (e->rc) return EM_NONE;
    e->s.deps = e->deps;
    e->s.ndeps = e->ndeps;
    e->s.mem = e->mem;
    e->s.nmem = e->nmem;
    uint32_t id = EM_NONE;
    e->rc = prog_op_add(e->p, e->rank, &e->s, &id, e->err);
    if (!e->rc) e->last = id;
    return e->rc ? EM_NONE : id;
}

uint32_t em_host(em *e, prog_phase ph, ss_ns ns, const char *name)
{
    em_begin(e, PROG_OP_HOST, PROG_HOST, ph, "%s", name);
    em_cost(e, ns, 0, 0);
    return em_end(e);
}

void em_marker_begin(em *e, prog_stream st, prog_phase ph, const char *name)
{
    em_begin(e, PROG_OP_COMPUTE, st, ph, "%s", name);
    em_cost(e, 0, 0, 0);
}

int em_tensors_init(em_tensors *t, uint32_t n, ss_err *err)
{
    t->n = 0;
    t->numel = malloc((n ? n : 1) * sizeof *t->numel);
    t->label = calloc(n ? n : 1, sizeof *t->label);
    if (t->numel && t->label) return SS_OK;
    em_tensors_fini(t);
    return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

void em_tensors_fini(em_tensors *t)
{
    free(t->numel);
    free(t->label);
    t->numel = NULL;
    t->label = NULL;
    t->n = 0;
}

void em_tensors_add(em_tensors *t, uint64_t numel, const char *label)
{
    t->numel[t->n] = numel;
    t->label[t->n++] = label;
}

const char *em_param_module(const plan *pl, uint32_t i)
{
    return pl->blocks[pl->params[i].block].name;
}

int em_tensors_all(const plan *pl, em_tensors *t, ss_err *err)
{
    int rc = em_tensors_init(t, pl->nparams, err);
    for (uint32_t i = 0; !rc && i < pl->nparams; i++)
        em_tensors_add(t, pl->params[i].numel, em_param_module(pl, i));
    return rc;
}

static uint64_t sum_of(const em_tensors *t)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < t->n; i++) s += t->numel[i];
    return s;
}

static void check_total(em *e, const char *what, uint64_t numel, uint32_t elem, ss_bytes want)
{
    if (e->rc || numel * elem == want) return;
    e->rc = ss_fail(e->err, SS_E_INTERNAL, NULL,
                    "rank %u: %s tensors hold %llu bytes, the state model says %llu", e->rank,
                    what, (unsigned long long)(numel * elem), (unsigned long long)want);
}

static const char *module_tag(char *buf, size_t n, const char *label)
{
    if (label) snprintf(buf, n, "[%s]", label);
    else buf[0] = '\0';
    return buf;
}

void em_states(em *e, const em_tensors *params, const em_tensors *optim)
{
    const spec_scenario *s = e->pl->s;
    uint32_t pe = spec_dtype_size(s->prec.param), me = spec_dtype_size(s->prec.master);
    uint32_t oe = spec_dtype_size(s->prec.optim);
    uint32_t nmom = st_optim_elem_bytes(&s->opt, s->prec.optim) / (oe ? oe : 1);
    /* Offloaded states live on the host: the optimizer's side as a whole,
     * the parameters' partitions (params lists only the device's). */
    bool host_optim = e->st.optim.host || e->st.master.host;
    bool host_param = e->st.param.host && e->st.param.host == e->st.param.physical;
    /* "param.3[layers.0.attn]": the index keeps names apart, the module
     * says whose it is */
    char m[96];
    for (uint32_t i = 0; !host_param && i < params->n; i++)
        em_tensor(e, PROG_MEM_PARAM, params->numel[i] * pe, true, "param.%u%s", i,
                  module_tag(m, sizeof m, params->label[i]));
    for (uint32_t i = 0; !host_optim && i < optim->n; i++) {
        module_tag(m, sizeof m, optim->label[i]);
        if (me) em_tensor(e, PROG_MEM_OPTIM, optim->numel[i] * me, true, "master.%u%s", i, m);
        for (uint32_t k = 0; k < nmom; k++)
            em_tensor(e, PROG_MEM_OPTIM, optim->numel[i] * oe, true, "optim.%u.%s%s", i,
                      k ? "exp_avg_sq" : s->opt.type == SPEC_OPT_SGD ? "momentum" : "exp_avg", m);
    }
    check_total(e, "parameter", host_param ? 0 : sum_of(params), pe,
                e->st.param.physical - e->st.param.host);
    check_total(e, "optimizer-state", host_optim ? 0 : sum_of(optim) * nmom, oe,
                e->st.optim.physical - e->st.optim.host);
    check_total(e, "master-weight", host_optim ? 0 : sum_of(optim), me,
                e->st.master.physical - e->st.master.host);
    if (s->resident_bytes)
        em_tensor(e, PROG_MEM_RUNTIME, s->resident_bytes, true, "runtime.resident");
}

uint32_t em_input(em *e)
{
    const plan_block *b0 = &e->pl->blocks[0];
    uint32_t prev = e->t_input; /* the loop variable rebinds to the next batch */
    e->t_input = em_tensor(e, PROG_MEM_INPUT, b0->in_bytes, false, "input");
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_FORWARD, "input");
    em_cost(e, em_op_host_ns(e), plan_mem_ns(e->pl, b0->in_bytes), 0);
    em_mem(e, e->t_input, PROG_ALLOC_AT_ISSUE);
    em_mem(e, prev, PROG_FREE_AT_ISSUE);
    return em_end(e);
}

void em_free_after_block(em *e, uint32_t tensor, prog_memact act)
{
    if (tensor == EM_NONE || e->rc) return;
    em_pending *q = &e->pend;
    if (q->n == SS_ARRAY_LEN(q->tensor)) {
        e->rc = ss_fail(e->err, SS_E_INTERNAL, NULL, "more than 4 buffers pending on a block");
        return;
    }
    q->act[q->n] = (uint8_t)act;
    q->tensor[q->n++] = tensor;
}

static void free_pending(em *e)
{
    for (uint32_t k = 0; k < e->pend.n; k++)
        em_mem(e, e->pend.tensor[k], (prog_memact)e->pend.act[k]);
    e->pend.n = 0;
}

uint32_t em_fwd_block(em *e, uint32_t i, uint32_t dep)
{
    const plan_block *b = &e->pl->blocks[i];
    size_t at = EM_AT(e, i);
    e->t_act[at] = em_tensor(e, PROG_MEM_ACTIVATION, b->out_bytes, false, "act.%s", b->name);
    e->t_saved[at] = b->saved_bytes ? em_tensor(e, PROG_MEM_ACTIVATION, b->saved_bytes, false,
                                                "saved.%s", b->name)
                                    : EM_NONE;
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_FORWARD, "fwd.%s", b->name);
    em_cost(e, launches_ns(e, b->fwd_kernels), b->fwd_ns, b->fwd_flops);
    em_dep(e, dep);
    em_mem(e, e->t_act[at], PROG_ALLOC_AT_ISSUE);
    em_mem(e, e->t_saved[at], PROG_ALLOC_AT_ISSUE);
    if (b->recompute_input) em_mem(e, e->t_act[at - 1], PROG_FREE_AT_ISSUE);
    free_pending(e);
    return em_end(e);
}

/* A transformer's loss is cross-entropy over the logits (the plan's
 * kernels and tensors, training.loss); the linear models' loss is a
 * reduction of their output, with no tensors of its own (the plan's loss
 * fields are zero for them). */
static bool cross_entropy(const plan *pl) { return !pl->blocks[pl->nblocks - 1].spec; }

static uint32_t loss_tensor(em *e, ss_bytes n, const char *name)
{
    return n ? em_tensor(e, PROG_MEM_ACTIVATION, n, false, "%s", name) : EM_NONE;
}

/* The loss's saved tensor is kept in the head's saved slot (the head keeps
 * none of its own), so each micro-batch in flight has its own. */
uint32_t em_loss_fwd(em *e)
{
    const plan *pl = e->pl;
    uint32_t last = pl->nblocks - 1;
    size_t at = EM_AT(e, last);
    e->t_loss = em_tensor(e, PROG_MEM_ACTIVATION, 4, false, "loss");
    uint32_t tmp = loss_tensor(e, pl->loss_fwd_tmp, "logits.fp32");
    uint32_t saved = loss_tensor(e, pl->loss_saved, "saved.loss");
    if (saved != EM_NONE) e->t_saved[at] = saved;
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_FORWARD, "loss");
    em_cost(e, launches_ns(e, pl->loss_fwd_kernels),
            cross_entropy(pl) ? pl->loss_fwd_ns : plan_mem_ns(pl, pl->blocks[last].out_bytes), 0);
    em_mem(e, e->t_loss, PROG_ALLOC_AT_ISSUE);
    em_mem(e, tmp, PROG_ALLOC_AT_ISSUE);
    em_mem(e, saved, PROG_ALLOC_AT_ISSUE);
    em_mem(e, tmp, PROG_FREE_AT_ISSUE);
    /* the logits: dropped (torchtitan's `del pred`), unless the loss
     * writes their gradient into them */
    if (!pl->loss_grad_in_logits) em_mem(e, e->t_act[at], PROG_FREE_AT_ISSUE);
    return em_end(e);
}

/* The loss's backward kernels, then (when the logits are not fp32) the
 * cast of its fp32 gradient to the logits' dtype as an op of its own: what
 * the first holds is freed before the second allocates. */
uint32_t em_loss_bwd(em *e)
{
    const plan *pl = e->pl;
    uint32_t last = pl->nblocks - 1;
    size_t at = EM_AT(e, last);
    const plan_block *b = &pl->blocks[last];
    bool cast = pl->loss_cast_ns != 0;
    uint32_t saved = pl->loss_saved ? e->t_saved[at] : EM_NONE;
    if (saved != EM_NONE) e->t_saved[at] = EM_NONE; /* freed here, not by the head's backward */
    if (pl->loss_grad_in_logits) e->t_dact[at] = e->t_act[at];
    else if (pl->loss_grads_in_fwd) e->t_dact[at] = EM_NONE; /* the forward made the head's */
    else e->t_dact[at] = em_tensor(e, PROG_MEM_ACTIVATION, b->out_bytes, false, "dact.%s", b->name);
    uint32_t tmp = loss_tensor(e, pl->loss_bwd_tmp, "dlogprobs.fp32");
    uint32_t g32 = loss_tensor(e, pl->loss_grad32, "dlogits.fp32");
    uint32_t late = cast && pl->loss_grad_in_saved ? saved : EM_NONE; /* the cast reads it */
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "loss.backward");
    em_cost(e, launches_ns(e, pl->loss_bwd_kernels),
            cross_entropy(pl) ? pl->loss_bwd_ns : plan_mem_ns(pl, b->out_bytes), 0);
    em_mem(e, tmp, PROG_ALLOC_AT_ISSUE);
    em_mem(e, g32, PROG_ALLOC_AT_ISSUE);
    /* under fused_linear t_dact is EM_NONE, which em_mem ignores */
    if (!cast && !pl->loss_grad_in_logits) em_mem(e, e->t_dact[at], PROG_ALLOC_AT_ISSUE);
    em_mem(e, tmp, PROG_FREE_AT_ISSUE);
    if (late == EM_NONE) em_mem(e, saved, PROG_FREE_AT_ISSUE);
    em_mem(e, e->t_loss, PROG_FREE_AT_ISSUE);
    uint32_t id = em_end(e);
    if (!cast) return id;
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "loss.backward.cast");
    em_cost(e, launches_ns(e, 1), pl->loss_cast_ns, 0);
    em_mem(e, e->t_dact[at], PROG_ALLOC_AT_ISSUE);
    em_mem(e, g32, PROG_FREE_AT_ISSUE);
    em_mem(e, late, PROG_FREE_AT_ISSUE);
    return em_end(e);
}

uint32_t em_loss(em *e)
{
    em_loss_fwd(e);
    return em_loss_bwd(e);
}

/* Full recomputation re-runs a layer's forward when the layer's backward
 * begins, at its last block: the saved tensors of all its blocks (and the
 * inputs between them) are live again, each until its block's backward. */
static void rematerialize(em *e, uint32_t i)
{
    const plan *pl = e->pl;
    if (i + 1 < pl->nblocks && pl->blocks[i + 1].recompute_input) return; /* mid-layer */
    for (uint32_t j = i;; j--) {
        const plan_block *c = &pl->blocks[j];
        ss_bytes n = c->recompute_bytes + (c->recompute_input ? c->in_bytes : 0);
        if (n) {
            uint32_t t = em_tensor(e, PROG_MEM_ACTIVATION, n, false, "recomputed.%s", c->name);
            em_mem(e, t, PROG_ALLOC_AT_ISSUE);
            e->t_saved[EM_AT(e, j)] = t;
        }
        if (!c->recompute_input || j == 0) break;
    }
}

uint32_t em_bwd_block(em *e, uint32_t i, uint32_t dep, const uint32_t *grads,
                      uint32_t ngrads)
{
    const plan_block *b = &e->pl->blocks[i];
    size_t at = EM_AT(e, i);
    if (b->dgrad)
        e->t_dact[at - 1] = em_tensor(e, PROG_MEM_ACTIVATION, b->in_bytes, false,
                                      "dact.%s", e->pl->blocks[i - 1].name);
    /* Selectively recomputed activations: allocated when the host
     * recomputes them and dropped once it has issued the block's backward. They are used on
     * the compute stream only (no record_stream), so PyTorch's allocator
     * frees them at host time and the next block's recompute reuses them. */
    bool full = b->recompute_full;
    uint32_t recomp = b->recompute_bytes && !full ? em_tensor(e, PROG_MEM_ACTIVATION,
                                                              b->recompute_bytes, false,
                                                              "recomputed.%s", b->name)
                                                  : EM_NONE;
    /* The gradients inside the block: live during it, gone when it ends
     * (allocated at issue with its other tensors, so its peak counts them). */
    uint32_t tmp[2] = {EM_NONE, EM_NONE}; /* plan_block.bwd_tmp_n is at most 2 */
    for (uint32_t k = 0; k < b->bwd_tmp_n && k < SS_ARRAY_LEN(tmp) && b->bwd_tmp_bytes; k++)
        tmp[k] = em_tensor(e, PROG_MEM_ACTIVATION, b->bwd_tmp_bytes, false, "bwd_tmp.%u.%s", k,
                           b->name);
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "bwd.%s", b->name);
    em_cost(e, launches_ns(e, b->bwd_kernels ? b->bwd_kernels : b->dgrad ? 2 : 1), b->bwd_ns,
            b->bwd_flops);
    em_dep(e, dep);
    if (b->dgrad) em_mem(e, e->t_dact[at - 1], PROG_ALLOC_AT_ISSUE);
    for (uint32_t g = 0; g < ngrads; g++) em_mem(e, grads[g], PROG_ALLOC_AT_ISSUE);
    em_mem(e, recomp, PROG_ALLOC_AT_ISSUE);
    em_mem(e, recomp, PROG_FREE_AT_ISSUE);
    for (uint32_t k = 0; k < SS_ARRAY_LEN(tmp); k++) em_mem(e, tmp[k], PROG_ALLOC_AT_ISSUE);
    for (uint32_t k = 0; k < SS_ARRAY_LEN(tmp); k++) em_mem(e, tmp[k], PROG_FREE_AT_ISSUE);
    if (full) rematerialize(e, i);
    em_mem(e, e->t_saved[at], PROG_FREE_AT_ISSUE);
    em_mem(e, e->t_dact[at], PROG_FREE_AT_ISSUE);
    /* The saved input: the previous block's output (the batch itself stays
     * referenced by the training loop). */
    if (i > 0 && !b->recompute_input) em_mem(e, e->t_act[at - 1], PROG_FREE_AT_ISSUE);
    free_pending(e);
    return em_end(e);
}

/* Kernels per step: foreach runs 8 multi-tensor kernels over all tensors,
 * for_loop 8 per tensor, fused one; only Adam's foreach and for_loop
 * allocate the sqrt(exp_avg_sq) temporaries (foreach one per tensor, all at
 * once; for_loop one at a time, so the largest counts). */
uint32_t em_optim(em *e, const em_tensors *optim)
{
    const spec_optimizer_cfg *o = &e->pl->s->opt;
    uint32_t elem = spec_dtype_size(e->pl->s->prec.optim);
    uint64_t launches = o->impl == SPEC_IMPL_FUSED ? 1
                        : o->impl == SPEC_IMPL_FOREACH ? 8 : 8ull * optim->n;
    bool temps = o->type != SPEC_OPT_SGD && o->impl != SPEC_IMPL_FUSED;
    uint32_t ntemp = !temps ? 0 : o->impl == SPEC_IMPL_FOREACH ? optim->n : 1;
    uint64_t biggest = 0;
    for (uint32_t i = 0; i < optim->n; i++)
        if (optim->numel[i] > biggest) biggest = optim->numel[i];
    uint32_t *tid = malloc((ntemp ? ntemp : 1) * sizeof *tid);
    if (!tid) {
        em_nomem(e);
        return EM_NONE;
    }
    for (uint32_t i = 0; i < ntemp; i++) {
        uint64_t n = o->impl == SPEC_IMPL_FOREACH ? optim->numel[i] : biggest;
        tid[i] = n ? em_tensor(e, PROG_MEM_OPT_TEMP, n * elem, false, "optim.temp.%u", i)
                   : EM_NONE;
    }
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_OPTIMIZER, "optimizer.step");
    em_cost(e, em_op_host_ns(e) * launches, plan_optim_ns(e->pl, sum_of(optim)), 0);
    for (uint32_t i = 0; i < ntemp; i++) em_mem(e, tid[i], PROG_ALLOC_AT_ISSUE);
    for (uint32_t i = 0; i < ntemp; i++) em_mem(e, tid[i], PROG_FREE_AT_ISSUE);
    free(tid);
    return em_end(e);
}

void em_pair_push(em_pair *q, uint32_t ev)
{
    if (q->n == 2) q->ev[0] = q->ev[1];
    q->ev[q->n == 2 ? 1 : q->n++] = ev;
}

void em_pair_wait(em *e, em_pair *q, const char *name)
{
    if (q->n < 2) return;
    em_begin(e, PROG_OP_HOST, PROG_HOST, PROG_PH_OTHER, "%s", name);
    em_cost(e, 0, 0, 0);
    em_dep(e, q->ev[0]);
    em_end(e);
    q->ev[0] = q->ev[1];
    q->n = 1;
}

static uint32_t host_copy(em *e, prog_phase ph, ss_bytes bytes, bool nvme, uint32_t dep,
                          uint32_t dst, uint32_t src, prog_memact src_act, const char *name)
{
    const spec_offload *o = &e->pl->s->off;
    double bw = o->pin_memory ? o->pcie_Bps : o->pcie_Bps / 2;
    if (nvme && o->nvme_Bps < bw) bw = o->nvme_Bps;
    em_begin(e, PROG_OP_COMPUTE, PROG_COPY, ph, "%s", name);
    em_cost(e, em_op_host_ns(e), ss_ns_from_s((double)bytes / bw), 0);
    em_dep(e, dep);
    em_mem(e, dst, PROG_ALLOC_AT_ISSUE);
    em_mem(e, src, src_act);
    return em_end(e);
}

uint32_t em_host_copy(em *e, prog_phase ph, ss_bytes bytes, bool nvme, uint32_t dep,
                      uint32_t dst, uint32_t src, const char *name)
{
    return host_copy(e, ph, bytes, nvme, dep, dst, src, PROG_FREE_AT_END, name);
}

uint32_t em_host_copy_drop(em *e, prog_phase ph, ss_bytes bytes, uint32_t dep, uint32_t src,
                           const char *name)
{
    return host_copy(e, ph, bytes, false, dep, EM_NONE, src, PROG_FREE_AT_ISSUE, name);
}

uint32_t em_cpu_optim(em *e, const em_tensors *optim, const uint32_t *deps, uint32_t ndeps)
{
    em_begin(e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "optimizer.step.cpu");
    em_cost(e, ss_ns_from_s((double)sum_of(optim) / e->pl->s->off.cpu_optim_eps), 0, 0);
    for (uint32_t i = 0; i < ndeps; i++) em_dep(e, deps[i]);
    return em_end(e);
}

uint32_t em_step(em *e, const em_tensors *optim, const uint32_t *deps, uint32_t ndeps)
{
    if (e->pl->s->off.optimizer != SPEC_OFF_NONE) return em_cpu_optim(e, optim, deps, ndeps);
    return em_optim(e, optim);
}
