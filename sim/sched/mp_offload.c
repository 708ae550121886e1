/* Transformer Engine's CPU activation offloading in the layout body
 * (training.cpu_offloading_num_layers and _impl; mp.h's mp_off_*), as
 * Megatron-core's TransformerBlock drives it: one group a transformer
 * layer, layers 0 .. n - 1 of the stage's L offloaded, their copies on
 * one copy stream. Two pacings, from transformer_engine/pytorch/
 * cpu_offload.py:
 *
 * synchronizer (DefaultOffloadSynchronizer, NVIDIA/TransformerEngine
 * v2.12, the default from 2.10): before layer c's forward the copy of
 * layer c - 1 starts (it waits for that layer's kernels), and the compute
 * waits for the copy of layer i = c - (L - n) and the host drops its
 * device tensors; before layer c's backward the reload of layer i = c -
 * (L - 1 - n) starts into new buffers (the copy waits for the compute
 * issued so far), and layer i's backward waits for its own reload.
 *
 * double_buffer (AsyncDoubleBufferGroupOffloadHandler, v2.7 to v2.9): a
 * window map w(i) = (L / n)(i + 1) - 1 (the remainder spread over the
 * first groups); at a layer's end, after layer 0 the first copy starts,
 * and at layer w(k) the compute and copy streams wait for each other,
 * group k's device tensors are dropped and copy k + 1 starts; in backward
 * at layer w(k - 1) the streams wait both ways and group k - 1 is copied
 * back into new buffers; before layer 0's backward the compute waits for
 * every reload.
 *
 * The tensors moved are what each block of the layer keeps for backward
 * (plan_block saved_bytes) and each block's input (TE offloads a
 * LayerNormLinear's and a Linear's saved input: the layer's input and the
 * residual stream between its blocks). Copies run at offload.pcie_GBps
 * (pinned: TE pins its host buffers), out and back on one stream. */
#include "mp.h"

#include <stdlib.h>
#include <string.h>

struct mp_off {
    spec_offload_impl impl;
    uint32_t n, nlayers;   /* groups offloaded, transformer layers of the stage */
    uint32_t *window;      /* [n]: the layer by whose end group i is on the host */
    uint32_t *layer_unit;  /* [nlayers]: the unit of each layer, in model order */
    uint32_t *ord;         /* [units]: the unit's ordinal among the layers, or UINT32_MAX */
    uint32_t *copy;        /* [n]: group i's last copy (d2h or h2d) */
    uint32_t k;            /* TE's offloaded_group_count */
};

/* TE's layer_window_map. */
static void windows(uint32_t L, uint32_t n, uint32_t *w)
{
    uint32_t constant = 0;
    for (uint32_t i = 0; i < n; i++) {
        w[i] = (L / n) * (i + 1) - 1;
        if (i < L % n) {
            w[i] += i + 1;
            constant = i + 1;
        } else {
            w[i] += constant;
        }
    }
}

int mp_off_new(mp *m)
{
    uint32_t n = m->pl->s->cpu_offload_layers;
    m->off = NULL;
    if (!n) return SS_OK;
    mp_off *o = calloc(1, sizeof *o);
    if (!o) return SS_E_NOMEM;
    for (uint32_t i = 0; i < m->nu; i++) o->nlayers += mp_unit_is_layer(m, &m->u[i]);
    o->impl = m->pl->s->cpu_offload_impl;
    o->n = n < o->nlayers ? n : o->nlayers;
    o->window = malloc((o->n ? o->n : 1) * sizeof *o->window);
    o->copy = malloc((o->n ? o->n : 1) * sizeof *o->copy);
    o->layer_unit = malloc((o->nlayers ? o->nlayers : 1) * sizeof *o->layer_unit);
    o->ord = malloc((m->nu ? m->nu : 1) * sizeof *o->ord);
    if (!o->window || !o->copy || !o->layer_unit || !o->ord) {
        mp_off_free(o);
        return SS_E_NOMEM;
    }
    for (uint32_t i = 0, j = 0; i < m->nu; i++) {
        o->ord[i] = mp_unit_is_layer(m, &m->u[i]) ? j : UINT32_MAX;
        if (o->ord[i] != UINT32_MAX) o->layer_unit[j++] = i;
    }
    windows(o->nlayers, o->n, o->window);
    for (uint32_t i = 0; i < o->n; i++) o->copy[i] = EM_NONE;
    m->off = o;
    return SS_OK;
}

void mp_off_free(mp_off *o)
{
    if (!o) return;
    free(o->window);
    free(o->copy);
    free(o->layer_unit);
    free(o->ord);
    free(o);
}

/* Group g's device tensors, in block order: each block's input (the
 * previous block's output: TE offloads a LayerNormLinear's input) and what
 * it saves for backward. *n of them, in t[] (pointers into the em's slot
 * arrays, so that a reload can rename them) with their bytes. */
#define GROUP_MAX 16
static void group_tensors(const mp *m, uint32_t g, uint32_t *t[GROUP_MAX], ss_bytes b[GROUP_MAX],
                          uint32_t *n)
{
    em *e = m->e;
    const mp_unit *u = &m->u[m->off->layer_unit[g]];
    *n = 0;
    if (2 * (u->b1 - u->b0) > GROUP_MAX) { /* two tensors a block at most */
        e->rc = ss_fail(e->err, SS_E_INTERNAL, NULL, "offloading: %u blocks in layer %s, at "
                        "most %u", u->b1 - u->b0, m->pl->blocks[u->b0].group, GROUP_MAX / 2);
        return;
    }
    for (uint32_t i = u->b0; i < u->b1; i++) {
        const plan_block *blk = &m->pl->blocks[i];
        if (i > 0 && e->t_act[EM_AT(e, i - 1)] != EM_NONE) {
            t[*n] = &e->t_act[EM_AT(e, i - 1)];
            b[(*n)++] = m->pl->blocks[i - 1].out_bytes;
        }
        if (e->t_saved[EM_AT(e, i)] != EM_NONE) {
            t[*n] = &e->t_saved[EM_AT(e, i)];
            b[(*n)++] = blk->saved_bytes;
        }
    }
}

/* A copy of group g on the copy stream after dep; reload: into new device
 * buffers, allocated as it is issued. */
static uint32_t copy(mp *m, uint32_t g, uint32_t dep, bool reload, prog_phase ph)
{
    em *e = m->e;
    const mp_unit *u = &m->u[m->off->layer_unit[g]];
    const spec_offload *so = &m->pl->s->off;
    uint32_t *t[GROUP_MAX], n;
    ss_bytes b[GROUP_MAX], bytes = 0;
    group_tensors(m, g, t, b, &n);
    for (uint32_t i = 0; i < n; i++) bytes += b[i];
    em_begin(e, PROG_OP_COMPUTE, PROG_COPY, ph, "offload.%s.%s", reload ? "h2d" : "d2h",
             m->pl->blocks[u->b0].group);
    em_cost(e, em_op_host_ns(e), ss_ns_from_s((double)bytes / so->pcie_Bps), 0);
    em_dep(e, dep);
    for (uint32_t i = 0; reload && i < n; i++) {
        *t[i] = em_tensor(e, PROG_MEM_ACTIVATION, b[i], false, "reloaded.%s.%u",
                          m->pl->blocks[u->b0].group, i);
        em_mem(e, *t[i], PROG_ALLOC_AT_ISSUE);
    }
    return m->off->copy[g] = em_end(e);
}

/* The compute stream and the copy stream wait for each other (TE's two
 * wait_stream calls), and the host drops `drop` group's device tensors. */
static uint32_t sync_both(mp *m, uint32_t on, uint32_t drop, prog_phase ph, const char *name)
{
    em *e = m->e;
    em_marker_begin(e, PROG_COMPUTE, ph, name);
    em_dep(e, on);
    if (drop != UINT32_MAX) {
        uint32_t *t[GROUP_MAX], n;
        ss_bytes b[GROUP_MAX];
        group_tensors(m, drop, t, b, &n);
        for (uint32_t i = 0; i < n; i++) em_mem(e, *t[i], PROG_FREE_AT_ISSUE);
    }
    return em_end(e);
}

/* The synchronizer, after layer c's forward (before layer c + 1's): layer
 * c's copy starts, and the layer due by now is dropped. */
static void sync_fwd_end(mp *m, uint32_t c)
{
    mp_off *o = m->off;
    if (c < o->n) copy(m, c, mp_last_compute(m), false, PROG_PH_FORWARD);
    uint32_t lag = o->nlayers - o->n; /* layer i is due before layer lag + i */
    if (c + 1 >= lag && c + 1 - lag < o->n)
        sync_both(m, o->copy[c + 1 - lag], c + 1 - lag, PROG_PH_FORWARD, "offload.wait");
}

/* The synchronizer, before layer c's backward: the reload of the layer due
 * then starts, and layer c, if offloaded, waits for its own. */
static void sync_bwd_begin(mp *m, uint32_t c)
{
    mp_off *o = m->off;
    uint32_t lag = o->nlayers - 1 - o->n; /* reload of layer i before layer lag + i */
    if (c >= lag && c - lag < o->n) copy(m, c - lag, mp_last_compute(m), true, PROG_PH_BACKWARD);
    if (c < o->n) sync_both(m, o->copy[c], UINT32_MAX, PROG_PH_BACKWARD, "offload.reload_wait");
}

/* Unit u's ordinal among the offloaded layers' units, or UINT32_MAX
 * (offloading off, or not a transformer layer). */
static uint32_t ordinal(const mp *m, const mp_unit *u)
{
    return m->off ? m->off->ord[u - m->u] : UINT32_MAX;
}

void mp_off_fwd_end(mp *m, mp_unit *u)
{
    mp_off *o = m->off;
    uint32_t c = ordinal(m, u);
    if (c == UINT32_MAX) return;
    if (o->impl == SPEC_OFFL_SYNCHRONIZER) {
        sync_fwd_end(m, c);
        return;
    }
    if (c == 0) {
        o->k = 0;
        copy(m, 0, mp_last_compute(m), false, PROG_PH_FORWARD);
    }
    if (o->k < o->n && o->window[o->k] == c) {
        uint32_t s = sync_both(m, o->copy[o->k], o->k, PROG_PH_FORWARD, "offload.wait");
        if (o->k + 1 < o->n) copy(m, o->k + 1, s, false, PROG_PH_FORWARD);
        o->k++;
    }
}

void mp_off_bwd_begin(mp *m, mp_unit *u)
{
    mp_off *o = m->off;
    uint32_t c = ordinal(m, u);
    if (c == UINT32_MAX) return;
    if (o->impl == SPEC_OFFL_SYNCHRONIZER) {
        sync_bwd_begin(m, c);
        return;
    }
    if (o->k >= 1 && o->window[o->k - 1] == c) {
        uint32_t prev = o->k < o->n ? o->copy[o->k] : EM_NONE; /* the previous reload */
        uint32_t s = sync_both(m, prev, UINT32_MAX, PROG_PH_BACKWARD, "offload.reload_wait");
        copy(m, o->k - 1, s, true, PROG_PH_BACKWARD);
        if (o->k > 1) o->k--;
    }
    if (c == 0) {
        sync_both(m, o->copy[0], UINT32_MAX, PROG_PH_BACKWARD, "offload.reload_wait");
        o->k = 0;
    }
}
