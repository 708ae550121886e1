/* out.h - how the command line writes its output files.
 *
 * A file is written whole or not at all: the text goes to a temporary file
 * beside the target, which is renamed over it, so a reader (a user's CI
 * job) never sees half a summary. "-" means stdout.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stddef.h>

#include "../core/err.h"

/* Write text (a newline is added when missing) to path. SS_E_IO names the
 * path and the system's reason. */
int cli_write_atomic(const char *path, const char *text, ss_err *err);

/* A sweep's progress callback (sweep_cfg.progress): a bar of points done,
 * redrawn in place on stderr, ended with a newline at the last point. */
void cli_progress_bar(void *ctx, size_t done, size_t total);

#endif
