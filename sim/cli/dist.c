#include "dist.h"

#include <stdlib.h>
#include <string.h>

#ifdef SS_WITH_MPI
#include <mpi.h>

bool dist_active(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* Line k of text (0-based), as a pointer and length. */
static const char *line_at(const char *text, size_t k, size_t *len)
{
    const char *p = text;
    for (size_t i = 0; i < k && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || !*p) return NULL;
    const char *e = strchr(p, '\n');
    *len = e ? (size_t)(e - p) + 1 : strlen(p);
    return p;
}

/* Rank r's rows are points r, r+K, ...: point i is line i / K of rank i % K. */
static char *interleave(const char *all, const int *off, int k, size_t total)
{
    char *out = malloc(strlen(all) + 1), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < total; i++) {
        size_t len;
        const char *l = line_at(all + off[i % (size_t)k], i / (size_t)k, &len);
        if (!l) continue;
        memcpy(w, l, len);
        w += len;
    }
    *w = '\0';
    return out;
}

static int gather(const char *mine, int rank, int size, size_t total, char **rows, ss_err *err)
{
    int len = (int)strlen(mine), *lens = NULL, *off = NULL;
    char *all = NULL;
    if (rank == 0) {
        lens = calloc((size_t)size, sizeof *lens);
        off = calloc((size_t)size, sizeof *off);
        if (!lens || !off) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int sum = 0;
    for (int r = 0; rank == 0 && r < size; r++) off[r] = sum, sum += lens[r];
    if (rank == 0 && !(all = calloc((size_t)sum + 1, 1)))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    MPI_Gatherv(mine, len, MPI_CHAR, all, lens, off, MPI_CHAR, 0, MPI_COMM_WORLD);
    int rc = SS_OK;
    if (rank == 0 && !(*rows = interleave(all, off, size, total)))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    free(all);
    free(lens);
    free(off);
    return rc;
}

int dist_sweep(sweep_cfg *c, char **rows, bool *is_root, ss_err *err)
{
    int rank = 0, size = 1;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    c->first = (size_t)rank;
    c->stride = (size_t)size;
    if (rank != 0) c->progress = NULL;
    char *mine = NULL;
    *rows = NULL;
    *is_root = rank == 0;
    int rc = sweep_run(c, &mine, err);
    /* Every process takes part in the gather, even after a local failure,
     * so that none waits forever; a failed share sends nothing. */
    int rc2 = gather(rc ? "" : mine, rank, size, sweep_points(c), rows, rc ? NULL : err);
    free(mine);
    MPI_Finalize();
    return rc ? rc : rc2;
}

#else

bool dist_active(void) { return false; }

int dist_sweep(sweep_cfg *c, char **rows, bool *is_root, ss_err *err)
{
    *is_root = true;
    return sweep_run(c, rows, err);
}

#endif
