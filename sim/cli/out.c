/* What the command line shows while it works. out.h states the contract. */
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../run/run.h"

void cli_progress_init(cli_progress *p, const char *what, bool tty)
{
    *p = (cli_progress){.what = what, .tty = tty, .t0 = run_wall_s()};
    p->last = p->t0;
}

/* "42s", "3m05s", "2h07m". */
static void span(char *buf, size_t n, double s)
{
    long t = (long)(s + 0.5);
    if (t < 60) snprintf(buf, n, "%lds", t);
    else if (t < 3600) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

void cli_progress_cb(void *ctx, size_t done, size_t total, size_t slot, const sweep_fig *fig)
{
    cli_progress *p = ctx;
    if (fig && fig->ok && fig->fits && (!p->any || fig->step_s < p->best_s)) {
        p->any = true;
        p->best = slot;
        p->best_s = fig->step_s;
    }
    double now = run_wall_s();
    bool last = done == total;
    if (!p->tty && done > 1 && !last && now - p->last < CLI_PROGRESS_EVERY_S) return;
    p->last = now;
    char spent[32], left[32] = "-", best[64] = "none fits yet";
    span(spent, sizeof spent, now - p->t0);
    if (done && !last) span(left, sizeof left, (now - p->t0) / (double)done * (double)(total - done));
    if (p->any) snprintf(best, sizeof best, "point %zu, %.1f ms", p->best, p->best_s * 1e3);
    if (p->tty) {
        int width = 30, fill = (int)(width * done / (total ? total : 1));
        fprintf(stderr, "\r  [%.*s%*s] %zu/%zu points, %s, %s left; best: %s   ", fill,
                "##############################", width - fill, "", done, total, spent, left, best);
        if (last) fputc('\n', stderr);
    } else {
        fprintf(stderr, "shardsim %s: %zu/%zu points, %s spent, %s left; best so far: %s\n",
                p->what, done, total, spent, left, best);
    }
}

int cli_mkdir(const char *dir, bool *made, ss_err *err)
{
    struct stat st;
    *made = false;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? SS_OK : ss_fail(err, SS_E_IO, dir, "is not a folder");
    if (mkdir(dir, 0777) != 0)
        return ss_fail(err, SS_E_IO, dir, "cannot make the folder: %s", strerror(errno));
    *made = true;
    return SS_OK;
}
