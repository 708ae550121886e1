/* out.h - what the command line shows while it works.
 *
 * A sweep or search of many points shows its progress on stderr: on a
 * terminal, a bar redrawn in place; anywhere else (CI, Slurm, nohup, a
 * pipe) a line for the first point, then at most every CLI_PROGRESS_EVERY_S
 * seconds, and one for the last, so a redirected run is never silent for
 * long. Each says points done of all, time spent, the time left at the pace
 * so far, and the fastest fitting point yet. One cli_progress per sweep;
 * its callback is called under the sweep's lock (one call at a time).
 *
 * Output files are written through core/ofile.h (whole or not at all,
 * devices and pipes in place), included here for the commands; a folder
 * of them (run --kineto) is made by cli_mkdir.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/ofile.h"
#include "../run/sweep.h"

#define CLI_PROGRESS_EVERY_S 30.0

typedef struct cli_progress {
    const char *what; /* "sweep", "search" */
    bool tty;         /* a bar in place, not lines */
    double t0, last;  /* when it began, when a line was last printed */
    bool any;         /* a fitting point has finished */
    size_t best;      /* its slot, and its step */
    double best_s;
} cli_progress;

void cli_progress_init(cli_progress *p, const char *what, bool tty);

/* sweep_cfg.progress, with a cli_progress as ctx. */
void cli_progress_cb(void *ctx, size_t done, size_t total, size_t slot, const sweep_fig *fig);

/* The folder dir, made when it does not exist (its parent must): *made
 * says so, for the caller to remove it again when the command fails.
 * SS_E_IO names dir: something other than a folder is there, or the
 * system's reason it cannot be made. */
int cli_mkdir(const char *dir, bool *made, ss_err *err);

#endif
