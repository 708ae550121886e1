#include "nctx.h"

#include <string.h>

/* nccl-tests' per-op names, reductions, roots and bus factors (its
 * src/NAME.cu, GetBw: busBw = algBw * factor; all_reduce 2(n-1)/n;
 * all_gather, reduce_scatter, alltoall (n-1)/n; broadcast, sendrecv 1). */
typedef struct opdef {
    const char *name, *redop;
    int root;
    int bus_num, bus_sub; /* factor bus_num * (n - bus_sub) / n; 1 when bus_num = 0 */
} opdef;

static const opdef ops[NCTX_NOPS] = {
    {"all_reduce", "sum", -1, 2, 1},     {"all_gather", "none", -1, 1, 1},
    {"reduce_scatter", "sum", -1, 1, 1}, {"broadcast", "none", 0, 0, 0},
    {"alltoall", "none", -1, 1, 1},      {"sendrecv", "none", -1, 0, 0},
};

const char *nctx_op_name(int op) { return op >= 0 && op < NCTX_NOPS ? ops[op].name : NULL; }

int nctx_op_find(const char *name, size_t len)
{
    for (int k = 0; k < NCTX_NOPS; k++)
        if (strlen(ops[k].name) == len && !strncmp(ops[k].name, name, len)) return k;
    return -1;
}

double nctx_bus_factor(int op, int n)
{
    const opdef *d = &ops[op];
    return d->bus_num ? (double)d->bus_num * (n - d->bus_sub) / n : 1.0;
}

int nctx_root(int op) { return ops[op].root; }

/* GetCollByteCount of each nccl-tests op, for `size` bytes of floats. */
nctx_counts nctx_counts_of(int op, size_t size, int n)
{
    size_t count = size / sizeof(float), per = count / (size_t)n;
    nctx_counts c = {count, count, count, 0};
    if (op == NCTX_AG) c = (nctx_counts){per, per * n, per, 0};
    if (op == NCTX_RS) c = (nctx_counts){per * n, per, per, 0};
    if (op == NCTX_A2A) c = (nctx_counts){per * n, per * n, per, 0};
    c.bytes = (c.send > c.recv ? c.send : c.recv) * sizeof(float);
    return c;
}

void nctx_head(FILE *f, const nctx_run *r)
{
    fprintf(f, "# Collective test starting: %s_perf\n", ops[r->op].name);
    fprintf(f,
            "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %llu(factor) warmup iters: %u "
            "iters: %u agg iters: 1 validation: %d graph: 0\n",
            r->ngpus, (unsigned long long)r->min_bytes, (unsigned long long)r->max_bytes,
            (unsigned long long)r->factor, r->warmup, r->iters, r->check ? 1 : 0);
    if (r->nranks == 1)
        fprintf(f, "# shardsim-calib: one rank, so no data crosses GPUs: the times are NCCL's "
                   "launch and latency floor\n");
    fprintf(f, "#\n# Using devices\n%s#\n", r->rank_lines ? r->rank_lines : "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
               "          \n", "", "", "", "", "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
            "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
            "busbw", "#wrong");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

/* nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, else 0. */
static double side(FILE *f, double us, double bytes, double factor, long long wrong)
{
    char t[32];
    if (us >= 10000.0) snprintf(t, sizeof t, "%7.0f", us);
    else if (us >= 100.0) snprintf(t, sizeof t, "%7.1f", us);
    else snprintf(t, sizeof t, "%7.2f", us);
    double alg = us > 0 ? bytes / 1e3 / us : 0; /* bytes / 1e9 / (us / 1e6) */
    fprintf(f, "  %7s  %6.2f  %6.2f", t, alg, alg * factor);
    if (wrong < 0) fprintf(f, "  %5s", "N/A");
    else fprintf(f, "  %5lld", wrong);
    return alg * factor;
}

double nctx_row(FILE *f, int op, const nctx_counts *c, const double us[2], const long long wrong[2],
                int nranks)
{
    double factor = nctx_bus_factor(op, nranks), bw = 0;
    fprintf(f, "%12zu  %12zu  %8s  %6s  %6d", c->bytes, c->param, "float", ops[op].redop,
            ops[op].root);
    for (int in = 0; in < 2; in++) bw += side(f, us[in], (double)c->bytes, factor, wrong[in]);
    fputc('\n', f);
    return bw;
}

void nctx_tail(FILE *f, int op, long long wrong, double avg_busbw)
{
    fprintf(f, "# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
    fprintf(f, "# Avg bus bandwidth    : %g \n#\n", avg_busbw);
    fprintf(f, "# Collective test concluded: %s_perf\n#\n", ops[op].name);
}

int nctx_rank_line(char *buf, size_t len, int rank, int pid, const char *host, int device,
                   const char *bus, const char *name)
{
    return snprintf(buf, len, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", rank,
                    0, pid, host, device, bus, name);
}
