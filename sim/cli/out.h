/* out.h - what the command line shows while it works.
 *
 * Output files are written through core/ofile.h (whole or not at all,
 * devices and pipes in place), included here for the commands.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stddef.h>

#include "../core/ofile.h"

/* A sweep's progress callback (sweep_cfg.progress): a bar of points done,
 * redrawn in place on stderr, ended with a newline at the last point. */
void cli_progress_bar(void *ctx, size_t done, size_t total);

#endif
