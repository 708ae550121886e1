/* out.h - how the command line writes its output files.
 *
 * A file is written whole or not at all: the text goes to a temporary file
 * beside the target, which is renamed over it, so a reader (a user's CI
 * job) never sees half a summary. "-" means stdout.
 */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include "../core/err.h"

/* Write text (a newline is added when missing) to path. SS_E_IO names the
 * path and the system's reason. */
int cli_write_atomic(const char *path, const char *text, ss_err *err);

#endif
