/* Device and topology files. machine.h states the contract. */
#include "machine.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- device ---- */

static int load_peaks(js_node dev, spec_device *d, ss_err *err)
{
    js_node pk;
    int rc = js_need(dev, "peak_tflops", &pk, err);
    if (rc || (rc = js_want_obj(pk, err)) ||
        (rc = js_keys_check(pk, spec_dtype_names, SPEC_NDT, err)))
        return rc;
    for (int i = 0; i < SPEC_NDT; i++) {
        double v;
        js_node k;
        if ((rc = js_num(pk, spec_dtype_names[i], false, 0.0, 0.0, 1e6, &v, err))) return rc;
        /* 0 says "not supported"; a rate below 1 GFLOPS is a slip (1e-300
         * would make every op last beyond the engine's 584 years). */
        if (v > 0 && v < 1e-3 && js_get(pk, spec_dtype_names[i], &k))
            return js_failf(k, err, "expected 0 (the device has no %s rate) or a rate in "
                            "[0.001, 1000000] TFLOPS; found %g", spec_dtype_names[i], v);
        d->peak_flops[i] = v * 1e12;
    }
    return SS_OK;
}

/* Attention kernels run on the device's 16-bit units (plan.c uses the
 * points for bf16 and fp16 compute only): no point may beat that peak. */
static int attn_vs_peak(js_node pt, const spec_attn_point *a, const spec_device *d, ss_err *err)
{
    double peak = d->peak_flops[SPEC_DT_BF16] > d->peak_flops[SPEC_DT_FP16]
                      ? d->peak_flops[SPEC_DT_BF16] : d->peak_flops[SPEC_DT_FP16];
    const char *dt = d->peak_flops[SPEC_DT_BF16] >= d->peak_flops[SPEC_DT_FP16] ? "bf16" : "fp16";
    if (peak <= 0)
        return js_failf(pt, err, "attention points need a bf16 or fp16 peak in peak_tflops "
                                 "(they are used for 16-bit compute only)");
    double fast = a->fwd_flops > a->bwd_flops ? a->fwd_flops : a->bwd_flops;
    if (fast > peak)
        return js_failf(pt, err, "%s %g TFLOPS is above the device's %s peak of %g TFLOPS: "
                        "expected at most the peak", a->fwd_flops >= a->bwd_flops ? "fwd_tflops"
                                                                                 : "bwd_tflops",
                        fast / 1e12, dt, peak / 1e12);
    return SS_OK;
}

/* A point's causal forward and backward rates. A table whose backward was
 * measured without the causal mask gives the non-causal forward beside it
 * (fwd_full_tflops): the causal backward is then taken at the forward's
 * causal / non-causal ratio, the share of the work the mask's skipped and
 * diagonal blocks cost both passes alike. */
static int load_attn_point(js_node pt, spec_attn_point *a, ss_err *err)
{
    double fwd, bwd, full;
    int rc = js_want_obj(pt, err);
    if (rc || (rc = js_keys_check(pt, JS_KEYS("seq", "fwd_tflops", "bwd_tflops", "fwd_full_tflops"),
                                  err)) ||
        (rc = js_num(pt, "seq", true, 0, 1, 1e9, &a->seq, err)) ||
        (rc = js_num(pt, "fwd_tflops", true, 0, 1e-3, 1e6, &fwd, err)) ||
        (rc = js_num(pt, "bwd_tflops", true, 0, 1e-3, 1e6, &bwd, err)) ||
        (rc = js_num(pt, "fwd_full_tflops", false, fwd, fwd, 1e6, &full, err)))
        return rc;
    a->fwd_flops = fwd * 1e12;
    a->bwd_flops = bwd * 1e12 * fwd / full;
    a->full_flops = full * 1e12;
    return SS_OK;
}

/* key: {"source", "points": [{"seq", "fwd_tflops", "bwd_tflops"}...]}
 * ("attention", FlashAttention-2's; "attention_cudnn", "attention_flash3"),
 * into *t; absent: t->n = 0. */
static int load_attention(js_node dev, const char *key, spec_device *d, spec_attn_table *t,
                          ss_err *err)
{
    js_node at, pts;
    size_t k;
    spec_attn_point *pt = t->pt;
    t->n = 0;
    if (!js_get(dev, key, &at)) return SS_OK;
    int rc = js_want_obj(at, err);
    if (rc || (rc = js_keys_check(at, JS_KEYS("source", "points"), err)) ||
        (rc = js_arr(at, "points", true, &pts, &k, err)))
        return rc;
    if (k == 0 || k > SPEC_ATTN_MAX)
        return js_failf(pts, err, "expected 1 to %d points, got %zu", SPEC_ATTN_MAX, k);
    for (size_t i = 0; i < k; i++) {
        js_node p = js_at(pts, i);
        if ((rc = load_attn_point(p, &pt[i], err)) || (rc = attn_vs_peak(p, &pt[i], d, err)))
            return rc;
        if (i > 0 && pt[i].seq <= pt[i - 1].seq)
            return js_failf(p, err, "seq %.0f does not increase (the point before has %.0f)",
                            pt[i].seq, pt[i - 1].seq);
    }
    t->n = (uint32_t)k;
    return SS_OK;
}

static int load_attentions(js_node dev, spec_device *d, ss_err *err)
{
    int rc = load_attention(dev, "attention", d, &d->attn, err);
    if (!rc) rc = load_attention(dev, "attention_cudnn", d, &d->attn_cudnn, err);
    if (!rc) rc = load_attention(dev, "attention_flash3", d, &d->attn_flash3, err);
    return rc;
}

/* An optional device constant with its source: key: {"<field>": x,
 * "source": "..."}, x in [0, hi]; absent: *out = 0. */
static int load_sourced(js_node n, const char *key, const char *field, double hi, double *out,
                        ss_err *err)
{
    js_node o;
    *out = 0;
    if (!js_get(n, key, &o)) return SS_OK;
    const char *src;
    int rc = js_want_obj(o, err);
    if (rc || (rc = js_keys_check(o, JS_KEYS(field, "source"), err)) ||
        (rc = js_str(o, "source", true, NULL, &src, err)))
        return rc;
    return js_num(o, field, true, 0, 0.0, hi, out, err);
}

/* "overlap": {"slowdown": S, "source": "..."}: compute runs 1 / (1 + S)
 * as fast while a collective runs on the GPU (eng.h); absent: 0.
 * "gemm_floor": {"us": T, "source": "..."}: the fixed time every GEMM
 * kernel adds to the time of its FLOPs at the curve (docs/COMPUTE.md);
 * absent: 0.
 * "op_host": {"us": T, "source": "..."}: the host's time to issue one op
 * through PyTorch's dispatcher, its launch included (docs/COMPUTE.md,
 * "Host dispatch"); absent: 0 (a step's ops take launch_us).
 * "attention_triton": {"fraction": F, "source": "..."}: llm-foundry's
 * Triton attention kernel at F times the "attention" table's rates;
 * absent: 0 (training.attention "triton" refused). */
static int load_sourced_constants(js_node n, spec_device *d, ss_err *err)
{
    double us, host;
    int rc = load_sourced(n, "overlap", "slowdown", 10.0, &d->overlap_slowdown, err);
    if (!rc) rc = load_sourced(n, "gemm_floor", "us", 1e4, &us, err);
    d->gemm_floor_ns = rc ? 0 : ss_ns_from_s(us * 1e-6);
    if (!rc) rc = load_sourced(n, "op_host", "us", 1e6, &host, err);
    d->op_host_ns = rc ? 0 : ss_ns_from_s(host * 1e-6);
    if (!rc) rc = load_sourced(n, "attention_triton", "fraction", 1.0, &d->attn_triton_fraction, err);
    return rc;
}

/* What a training process can reserve: the total CUDA reports for the
 * device (cuda_total_bytes, with cuda_total_source saying where the figure
 * was read), less the process's own CUDA context and NCCL buffers
 * (process_reserve_bytes, default MACH_PROCESS_RESERVE). docs/MEMORY.md
 * cites both. */
#define MACH_PROCESS_RESERVE (2ull << 30) /* 0.5 GiB context + 1.5 GiB NCCL, docs/MEMORY.md */

static int load_usable(js_node n, spec_device *d, ss_err *err)
{
    const char *src;
    js_node k;
    int rc = js_u64(n, "cuda_total_bytes", false, 0, 1, UINT64_MAX, &d->cuda_total_bytes, err);
    if (!rc) rc = js_str(n, "cuda_total_source", d->cuda_total_bytes != 0, "", &src, err);
    if (!rc) rc = js_u64(n, "process_reserve_bytes", false, MACH_PROCESS_RESERVE, 0, UINT64_MAX,
                         &d->process_reserve_bytes, err);
    if (rc) return rc;
    if (d->cuda_total_bytes && d->process_reserve_bytes >= d->cuda_total_bytes) {
        js_get(n, "process_reserve_bytes", &k);
        return js_failf(k, err, "a reserve of %llu bytes leaves nothing of the %llu CUDA reports: "
                        "expected less", (unsigned long long)d->process_reserve_bytes,
                        (unsigned long long)d->cuda_total_bytes);
    }
    return SS_OK;
}

/* "compute_capability": "9.0" (NVIDIA's table, developer.nvidia.com/cuda-gpus):
 * which row of NCCL's per-architecture tuner constants the GPU takes. */
static int load_cc(js_node n, spec_device *d, ss_err *err)
{
    const char *s = NULL;
    int rc = js_str(n, "compute_capability", false, NULL, &s, err);
    if (rc || !s) return rc;
    unsigned major, minor;
    char tail;
    if (sscanf(s, "%u.%u%c", &major, &minor, &tail) != 2 || major < 1 || major > 20 || minor > 9) {
        js_node v;
        js_get(n, "compute_capability", &v);
        return js_failf(v, err, "expected a compute capability like \"9.0\", not \"%s\"", s);
    }
    d->cc = major * 10 + minor;
    return SS_OK;
}

static int load_device(js_node n, spec_device *d, ss_err *err)
{
    int rc = js_keys_check(n, JS_KEYS("name", "source", "hbm_bytes", "hbm_bw_GBps",
                                   "peak_tflops", "gemm_efficiency", "gemm_efficiency_fp8",
                                   "gemm_half_dim", "mem_efficiency", "launch_us", "op_host",
                                   "attention_triton", "kernel_min_us",
                                   "attention", "attention_cudnn", "attention_flash3", "overlap",
                                   "cuda_total_bytes", "cuda_total_source",
                                   "process_reserve_bytes", "compute_capability",
                                   "gemm_floor"), err);
    double bw, launch, kmin;
    if (rc || (rc = js_copy_name(n, "name", true, d->name, err)) ||
        (rc = js_u64(n, "hbm_bytes", true, 0, 1, UINT64_MAX, &d->hbm_bytes, err)) ||
        (rc = js_num(n, "hbm_bw_GBps", true, 0, 1e-3, 1e7, &bw, err)) ||
        (rc = load_peaks(n, d, err)) ||
        (rc = js_num(n, "gemm_efficiency", true, 0, 1e-3, 1.0, &d->gemm_efficiency, err)) ||
        (rc = js_num(n, "gemm_efficiency_fp8", false, d->gemm_efficiency, 1e-3, 1.0,
                     &d->gemm_efficiency_fp8, err)) ||
        (rc = js_num(n, "gemm_half_dim", false, 0, 0, 1e6, &d->gemm_half_dim, err)) ||
        (rc = js_num(n, "mem_efficiency", true, 0, 1e-3, 1.0, &d->mem_efficiency, err)) ||
        (rc = js_num(n, "launch_us", true, 0, 0.0, 1e6, &launch, err)) ||
        (rc = js_num(n, "kernel_min_us", false, 0, 0.0, 1e6, &kmin, err)) ||
        (rc = load_attentions(n, d, err)) || (rc = load_sourced_constants(n, d, err)) ||
        (rc = load_usable(n, d, err)) || (rc = load_cc(n, d, err)))
        return rc;
    d->hbm_bw_Bps = bw * 1e9;
    d->launch_ns = ss_ns_from_s(launch * 1e-6);
    d->kernel_min_ns = ss_ns_from_s(kmin * 1e-6);
    return SS_OK;
}

/* ---- flat form ---- */

static int load_level(js_node n, const char *key, bool required, spec_link_level *l,
                      ss_err *err)
{
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *l = (spec_link_level){1e9, 0};
        return SS_OK;
    }
    double bw, lat;
    int rc = js_want_obj(c, err);
    if (rc || (rc = js_keys_check(c, JS_KEYS("bus_bw_GBps", "latency_us", "source"), err)) ||
        (rc = js_num(c, "bus_bw_GBps", true, 0, 1e-6, 1e7, &bw, err)) ||
        (rc = js_num(c, "latency_us", true, 0, 0.0, 1e6, &lat, err)))
        return rc;
    l->bus_bw_Bps = bw * 1e9;
    l->latency_ns = ss_ns_from_s(lat * 1e-6);
    return SS_OK;
}

/* ---- graph form ---- */

/* Vertex group named `name` (exact), or -1. */
static int find_group(const spec_topology *t, const char *name, size_t len)
{
    for (uint32_t g = 0; g < t->nvgroups; g++)
        if (strlen(t->vg[g].name) == len && !strncmp(t->vg[g].name, name, len)) return (int)g;
    return -1;
}

/* "nic" (the whole group) or "nic[3]" (one member) into group and index. */
static int parse_end(js_node l, const char *key, const spec_topology *t, uint8_t *g,
                     int32_t *idx, ss_err *err)
{
    const char *s;
    int rc = js_str(l, key, true, NULL, &s, err);
    if (rc) return rc;
    js_node at;
    js_get(l, key, &at);
    const char *br = strchr(s, '[');
    size_t len = br ? (size_t)(br - s) : strlen(s);
    int gi = find_group(t, s, len);
    if (gi < 0) return js_failf(at, err, "\"%s\" names no vertex group of this node (gpu or one of "
                                         "node.vertices)", s);
    *g = (uint8_t)gi;
    *idx = -1;
    if (!br) return SS_OK;
    char *end;
    long v = strtol(br + 1, &end, 10);
    if (end == br + 1 || *end != ']' || end[1] != '\0' || v < 0 || (uint32_t)v >= t->vg[gi].count)
        return js_failf(at, err, "\"%s\": expected %.*s[i] with 0 <= i < %u", s, (int)len, s,
                        t->vg[gi].count);
    *idx = (int32_t)v;
    return SS_OK;
}

static int load_vgroup(js_node v, spec_topology *t, ss_err *err)
{
    spec_vgroup *g = &t->vg[t->nvgroups];
    uint64_t count;
    double nvls_GBps;
    int kind, rc = js_keys_check(v, JS_KEYS("name", "kind", "count", "nvls", "nvls_GBps"), err);
    const char *name;
    if (rc || (rc = js_str(v, "name", true, NULL, &name, err)) ||
        (rc = js_enum(v, "kind", true, 0, spec_vkind_names, SPEC_NVKINDS, &kind, err)) ||
        (rc = js_u64(v, "count", false, 1, 1, SPEC_TOPO_VMAX, &count, err)) ||
        (rc = js_bool(v, "nvls", false, false, &g->nvls, err)) ||
        (rc = js_num(v, "nvls_GBps", false, 0, 1e-3, 1e6, &nvls_GBps, err)))
        return rc;
    js_node at;
    if (nvls_GBps > 0 && !(kind == SPEC_V_NVSWITCH && g->nvls)) {
        js_get(v, "nvls_GBps", &at);
        return js_failf(at, err, "nvls_GBps is the NVLS bus bandwidth of an NVSwitch group with "
                                 "\"nvls\": true (this group is a %s%s)",
                        spec_vkind_names[kind], kind == SPEC_V_NVSWITCH ? " without nvls" : "");
    }
    g->nvls_Bps = nvls_GBps * 1e9;
    js_get(v, "name", &at);
    if (kind == SPEC_V_GPU) return js_failf(at, err, "the GPUs are the implicit group \"gpu\"");
    if (!*name || strlen(name) >= sizeof g->name || strchr(name, '['))
        return js_failf(at, err, "expected a name of 1 to %zu characters without '['",
                        sizeof g->name - 1);
    if (find_group(t, name, strlen(name)) >= 0)
        return js_failf(at, err, "duplicate vertex group \"%s\"", name);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->kind = (spec_vkind)kind;
    g->count = (uint32_t)count;
    t->nvgroups++;
    return SS_OK;
}

/* Default fraction of a link's bandwidth a long transfer reaches, by kind.
 * NVLink: NCCL rings on HGX H100 reach 360-370 GB/s bus bandwidth over
 * NVLink4's 450 GB/s per direction (~0.82; NCCL's maintainers put it at
 * 370, NVIDIA/nccl-tests issue 212); A100's NVLink3 reaches 230 of 300
 * (issue 149), which the A100 topology files set (0.767). PCIe: TLP and
 * flow-control overhead, ~0.8 of the raw rate in bandwidth tests (a NIC's
 * GPUDirect traffic crosses it at NCCL's 0.75: net/topo.c). CPU
 * interconnects run far below their raw rate for peer traffic (0.5).
 * Networks: line rate less headers for large RDMA messages (0.95). */
static double default_efficiency(spec_lkind k)
{
    static const double eff[SPEC_NLKINDS] = {0.82, 0.80, 0.50, 0.95};
    return eff[k];
}

static int load_lgroup(js_node l, spec_topology *t, ss_err *err)
{
    spec_lgroup *x = &t->lg[t->nlgroups];
    double bw, lat;
    int kind, pat;
    static const char *const patterns[] = {"block", "mesh"};
    int rc = js_keys_check(l, JS_KEYS("from", "to", "kind", "GBps", "latency_us", "efficiency",
                                      "pattern"), err);
    if (rc || (rc = parse_end(l, "from", t, &x->from, &x->from_i, err)) ||
        (rc = parse_end(l, "to", t, &x->to, &x->to_i, err)) ||
        (rc = js_enum(l, "kind", true, 0, spec_lkind_names, SPEC_NLKINDS, &kind, err)) ||
        (rc = js_num(l, "GBps", true, 0, 1e-3, 1e6, &bw, err)) ||
        (rc = js_num(l, "latency_us", false, 0.0, 0.0, 1e5, &lat, err)) ||
        (rc = js_num(l, "efficiency", false, default_efficiency((spec_lkind)kind), 1e-3, 1.0,
                     &x->efficiency, err)) ||
        (rc = js_enum(l, "pattern", false, 0, patterns, 2, &pat, err)))
        return rc;
    x->kind = (spec_lkind)kind;
    x->Bps = bw * 1e9;
    x->latency_ns = ss_ns_from_s(lat * 1e-6);
    x->mesh = pat == 1;
    if (x->mesh && (x->from != x->to || x->from_i >= 0 || x->to_i >= 0))
        return js_failf(l, err, "pattern \"mesh\" joins every pair of one whole group: from and "
                                "to must name the same group without [i]");
    if (!x->mesh && x->from == x->to && x->from_i == x->to_i)
        return js_failf(l, err, "a link from a vertex to itself; for every pair of the group use "
                                "\"pattern\": \"mesh\"");
    t->nlgroups++;
    return SS_OK;
}

static int load_node_graph(js_node node, spec_topology *t, ss_err *err)
{
    js_node vs, ls;
    size_t nv, nl;
    int rc = js_want_obj(node, err);
    if (rc || (rc = js_keys_check(node, JS_KEYS("vertices", "links"), err)) ||
        (rc = js_arr(node, "vertices", false, &vs, &nv, err)) ||
        (rc = js_arr(node, "links", true, &ls, &nl, err)))
        return rc;
    t->vg[0] = (spec_vgroup){.name = "gpu", .kind = SPEC_V_GPU, .count = t->gpus_per_node};
    t->nvgroups = 1;
    if (nv >= SPEC_TOPO_VGROUPS) return js_failf(vs, err, "at most %d vertex groups", SPEC_TOPO_VGROUPS - 1);
    if (nl > SPEC_TOPO_LGROUPS) return js_failf(ls, err, "at most %d link groups", SPEC_TOPO_LGROUPS);
    if (nl == 0) return js_failf(ls, err, "expected at least one link group");
    uint32_t total = t->gpus_per_node;
    for (size_t i = 0; i < nv && !rc; i++) {
        rc = js_want_obj(js_at(vs, i), err);
        if (!rc) rc = load_vgroup(js_at(vs, i), t, err);
        if (!rc && (total += t->vg[t->nvgroups - 1].count) > SPEC_TOPO_VMAX)
            return js_failf(vs, err, "more than %d vertices in one node", SPEC_TOPO_VMAX);
    }
    for (size_t i = 0; i < nl && !rc; i++) {
        rc = js_want_obj(js_at(ls, i), err);
        if (!rc) rc = load_lgroup(js_at(ls, i), t, err);
    }
    return rc;
}

static int has_nics(const spec_topology *t)
{
    for (uint32_t g = 0; g < t->nvgroups; g++)
        if (t->vg[g].kind == SPEC_V_NIC) return 1;
    return 0;
}

/* The most square x * y = nodes, x >= y. */
static void square_dims(uint32_t nodes, uint32_t dims[2])
{
    uint32_t y = 1;
    for (uint32_t d = 1; (uint64_t)d * d <= nodes; d++)
        if (nodes % d == 0) y = d;
    dims[0] = nodes / y;
    dims[1] = y;
}

static int load_torus_dims(js_node f, spec_topology *t, ss_err *err)
{
    js_node d;
    size_t n;
    int rc = js_arr(f, "dims", false, &d, &n, err);
    if (rc) return rc;
    if (n == 0) {
        square_dims(t->nodes, t->fabric.dims);
        return SS_OK;
    }
    if (n != 2) return js_failf(d, err, "expected [x, y]");
    uint64_t v[2];
    for (size_t i = 0; i < 2 && !rc; i++) rc = js_u64_val(js_at(d, i), 1, 1u << 16, &v[i], err);
    if (rc) return rc;
    if (v[0] * v[1] != t->nodes)
        return js_failf(d, err, "%llu x %llu = %llu nodes, but the topology has %u",
                        (unsigned long long)v[0], (unsigned long long)v[1],
                        (unsigned long long)(v[0] * v[1]), t->nodes);
    t->fabric.dims[0] = (uint32_t)v[0];
    t->fabric.dims[1] = (uint32_t)v[1];
    return SS_OK;
}

/* What a network step costs (spec.h, spec_fabric): the plugin's reported
 * latency and the step's own (0: NCCL's constants), whose Simple value
 * defaults to the LL one. */
static int load_net_steps(js_node f, spec_fabric *x, ss_err *err)
{
    js_node v;
    int rc = js_num(f, "nccl_net_latency_us", false, 0.0, 0.0, 1e4, &x->reported_us, err);
    if (rc || (rc = js_num(f, "step_latency_us", false, 0.0, 0.0, 1e4, &x->step_us, err)) ||
        (rc = js_num(f, "step_latency_simple_us", false, x->step_us, 0.0, 1e4,
                     &x->step_simple_us, err)))
        return rc;
    if (x->step_us == 0 && x->step_simple_us > 0 && js_get(f, "step_latency_simple_us", &v))
        return js_failf(v, err, "step_latency_simple_us needs step_latency_us (the LL and LL128 "
                                "step) beside it");
    return SS_OK;
}

static int load_fabric(js_node top, spec_topology *t, ss_err *err)
{
    js_node f;
    spec_fabric *x = &t->fabric;
    *x = (spec_fabric){.kind = SPEC_FAB_NONE, .nodes_per_leaf = t->nodes, .oversubscription = 1};
    if (!js_get(top, "fabric", &f)) {
        if (t->nodes > 1) return js_need(top, "fabric", &f, err);
        return SS_OK;
    }
    int kind;
    double bw, lat;
    uint64_t npl;
    int rc = js_want_obj(f, err);
    if (rc || (rc = js_keys_check(f, JS_KEYS("kind", "GBps", "latency_us", "efficiency",
                                             "rail_optimized", "nodes_per_leaf",
                                             "oversubscription", "dims", "nccl_net_latency_us",
                                             "step_latency_us", "step_latency_simple_us",
                                             "sharp", "source"), err)) ||
        (rc = js_enum(f, "kind", true, 0, spec_fabric_names, SPEC_NFABRICS, &kind, err)))
        return rc;
    x->kind = (spec_fabric_kind)kind;
    if (x->kind == SPEC_FAB_NONE) {
        if (t->nodes > 1) return js_failf(f, err, "kind \"none\" joins no nodes, but nodes = %u", t->nodes);
        return SS_OK;
    }
    if ((rc = js_num(f, "GBps", true, 0, 1e-3, 1e6, &bw, err)) ||
        (rc = js_num(f, "latency_us", false, 1.0, 0.0, 1e5, &lat, err)) ||
        (rc = js_num(f, "efficiency", false, default_efficiency(SPEC_L_NET), 1e-3, 1.0,
                     &x->efficiency, err)) ||
        (rc = js_bool(f, "rail_optimized", false, true, &x->rail_optimized, err)) ||
        (rc = js_u64(f, "nodes_per_leaf", false, t->nodes, 1, 1u << 20, &npl, err)) ||
        (rc = js_num(f, "oversubscription", false, 1.0, 1.0, 1024.0, &x->oversubscription, err)) ||
        (rc = js_bool(f, "sharp", false, false, &x->sharp, err)))
        return rc;
    x->Bps = bw * 1e9;
    x->latency_ns = ss_ns_from_s(lat * 1e-6);
    x->nodes_per_leaf = npl < t->nodes ? (uint32_t)npl : t->nodes;
    if ((rc = load_net_steps(f, x, err))) return rc;
    if (x->kind == SPEC_FAB_TORUS2D && (rc = load_torus_dims(f, t, err))) return rc;
    if (!has_nics(t))
        return js_failf(f, err, "a %s fabric attaches to NICs, but node.vertices has no group of "
                                "kind \"nic\"", spec_fabric_names[x->kind]);
    return SS_OK;
}

static int load_graph(js_node n, spec_topology *t, ss_err *err)
{
    js_node node;
    js_get(n, "node", &node);
    t->graph = true;
    int rc = load_node_graph(node, t, err);
    return rc ? rc : load_fabric(n, t, err);
}

/* ---- topology ---- */

int mach_nccl_version(js_node n, uint32_t *code, ss_err *err)
{
    js_node v;
    const char *str = NULL;
    *code = 0;
    if (js_get(n, "nccl_version", &v) && js_is_num(v)) /* 2.3 and 2.30 are one number */
        return js_failf(v, err, "expected the NCCL version as a string like \"2.27.3\" or "
                                "\"2.27\", found a number (on the command line: --set "
                                "'...nccl_version=\"2.27\"')");
    int rc = js_str(n, "nccl_version", false, NULL, &str, err);
    if (rc || !str) return rc;
    if (!spec_nccl_parse(str, code)) /* v: the first js_get found the key */
        return js_failf(v, err, "expected an NCCL version like \"2.27.3\" or \"2.27\" "
                                "(2.0 or later), not \"%s\"", str);
    return SS_OK;
}

int mach_net_list(js_node v, const char *str, bool proto, uint32_t *set, ss_err *err)
{
    if (spec_net_set_parse(str, proto, set)) return SS_OK;
    return js_failf(v, err, "expected a list of NCCL %s as %s takes one (%s), not \"%s\"",
                    proto ? "protocols" : "algorithms", proto ? "NCCL_PROTO" : "NCCL_ALGO",
                    proto ? "\"simple,ll128\", \"^ll\"" : "\"ring,tree\", \"^nvls\"", str);
}

/* "nccl_algo", "nccl_proto": the lists the platform's NCCL profile
 * exports (spec.h); graph form only, as the tuner is. */
static int load_nccl_env(js_node n, bool graph, spec_topology *t, ss_err *err)
{
    static const char *const keys[2] = {"nccl_algo", "nccl_proto"};
    uint32_t *sets[2] = {&t->nccl_algos, &t->nccl_protos};
    for (int k = 0; k < 2; k++) {
        js_node v;
        const char *str = NULL;
        int rc = js_str(n, keys[k], false, NULL, &str, err);
        if (rc) return rc;
        if (!str) continue;
        js_get(n, keys[k], &v);
        if (!graph)
            return js_failf(v, err, "%s needs the graph form (a topology with \"node\"): the "
                                    "flat form has no NCCL tuner", keys[k]);
        if ((rc = mach_net_list(v, str, k == 1, sets[k], err))) return rc;
    }
    return SS_OK;
}

/* "nccl_ring_cta_GBps": what one CTA of a Simple ring moves across nodes on
 * this system (net/algo.h, "Ring CTAs across nodes"); graph form only. */
static int load_ring_cta(js_node n, bool graph, spec_topology *t, ss_err *err)
{
    js_node v;
    double gbps = 0.0;
    int rc = js_num(n, "nccl_ring_cta_GBps", false, 0.0, 0.1, 10000.0, &gbps, err);
    if (!rc && gbps > 0 && !graph && js_get(n, "nccl_ring_cta_GBps", &v))
        return js_failf(v, err, "nccl_ring_cta_GBps needs the graph form (a topology with "
                                "\"node\"): the flat form has no NCCL rings");
    t->ring_cta_Bps = gbps * 1e9;
    return rc;
}

static int load_counts(js_node n, uint32_t nodes_override, spec_topology *t, ss_err *err)
{
    uint64_t nodes, gpn;
    int rc = js_u64(n, "nodes", true, 0, 1, 1u << 20, &nodes, err);
    if (rc || (rc = js_u64(n, "gpus_per_node", true, 0, 1, 1024, &gpn, err))) return rc;
    t->nodes = nodes_override ? nodes_override : (uint32_t)nodes;
    t->gpus_per_node = (uint32_t)gpn;
    return SS_OK;
}

int mach_from_node(js_node n, uint32_t nodes_override, spec_topology *t, ss_err *err)
{
    *t = (spec_topology){0};
    js_node node;
    bool graph = js_get(n, "node", &node);
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, JS_KEYS("name", "source", "nodes", "gpus_per_node",
                                             "intra_node", "inter_node", "node", "fabric",
                                             "device", "nccl_version", "ranks_per_node",
                                             "nccl_ring_cta_GBps", "nccl_algo", "nccl_proto"),
                                 err)) ||
        (rc = js_copy_name(n, "name", true, t->name, err)) ||
        (rc = load_counts(n, nodes_override, t, err)) ||
        (rc = mach_set_ranks_per_node(n, t, err)) ||
        (rc = mach_nccl_version(n, &t->nccl, err)) || (rc = load_ring_cta(n, graph, t, err)) ||
        (rc = load_nccl_env(n, graph, t, err)))
        return rc;
    if (graph) {
        js_node flat;
        if (js_get(n, "intra_node", &flat) || js_get(n, "inter_node", &flat))
            return js_failf(flat, err, "a topology has either \"node\" (the graph) or "
                                       "intra_node/inter_node (the flat levels), not both");
        rc = load_graph(n, t, err);
    } else {
        t->graph = false;
        if (!(rc = load_level(n, "intra_node", true, &t->intra, err)))
            rc = load_level(n, "inter_node", t->nodes > 1, &t->inter, err);
    }
    return rc ? rc : mach_set_device(n, t, err);
}

int mach_set_device(js_node n, spec_topology *t, ss_err *err)
{
    js_doc ddoc = {0};
    js_node dev;
    spec_device d = {0};
    int rc = js_load_ref(n, "device", &ddoc, &dev, err);
    if (!rc) rc = load_device(dev, &d, err);
    if (!rc) t->device = d;
    js_doc_fini(&ddoc);
    return rc;
}

int mach_set_fabric(js_node n, spec_topology *t, ss_err *err)
{
    js_node f;
    js_get(n, "fabric", &f);
    if (!t->graph)
        return js_failf(f, err, "a fabric joins the NICs of a graph topology (\"node\"), "
                                "but topology \"%s\" has the flat form (intra_node / inter_node)", t->name);
    spec_fabric keep = t->fabric;
    int rc = load_fabric(n, t, err);
    if (rc) t->fabric = keep;
    return rc;
}

int mach_set_ranks_per_node(js_node n, spec_topology *t, ss_err *err)
{
    js_node k;
    uint64_t v;
    int rc = js_u64(n, "ranks_per_node", false, t->gpus_per_node, 1, 1024, &v, err);
    if (rc || !js_get(n, "ranks_per_node", &k)) return rc;
    if (v > t->gpus_per_node)
        return js_failf(k, err, "expected at most the %u GPUs of a node (gpus_per_node), "
                        "found %llu", t->gpus_per_node, (unsigned long long)v);
    t->ranks_per_node = (uint32_t)v;
    return SS_OK;
}

int mach_load(const char *file, uint32_t nodes_override, spec_topology *t, ss_err *err)
{
    js_doc d = {0};
    int rc = js_doc_load(&d, file, err);
    if (!rc) rc = mach_from_node(js_root(&d), nodes_override, t, err);
    js_doc_fini(&d);
    return rc;
}
