/* ofile.h - an output file: written whole or not at all, and never at the
 * cost of what its path already names.
 *
 * Where a path names a regular file, or nothing yet, the bytes go to a
 * temporary file beside it (PATH.tmp.PID) that is renamed over it when the
 * command publishes, so a reader never sees half a file and a failed command
 * leaves the old one in place. A link to a regular file is followed: the
 * file it points to is replaced, the link stays.
 *
 * Anything else a path can name is written in place, because renaming over
 * it would destroy it: a character device (/dev/null, /dev/full, a
 * terminal), a FIFO, a link to a descriptor (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N, the shell's >(...)), which is written through a copy of
 * that descriptor. "-" is stdout. A directory, a block device and a socket
 * are refused.
 *
 * Two steps, so that a command with several outputs is all or nothing:
 * of_close flushes and closes (every write error, ENOSPC included, surfaces
 * there, naming the path), of_publish renames. A command writes and closes
 * all its outputs, then publishes them only if every one closed cleanly;
 * otherwise it aborts them all and no temporary file remains. In-place
 * outputs are streams: what was written to them cannot be taken back.
 *
 * Ownership: of_open gives a handle that exactly one call of of_publish or
 * of_abort frees (of_abort(NULL) is a no-op). Not thread-safe; one handle,
 * one thread.
 */
#ifndef SS_OFILE_H
#define SS_OFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"

typedef struct of_file of_file;

/* Open path for writing as above. SS_E_IO names the path and the reason
 * (the system's, or "is a directory" and the like). */
int of_open(of_file **out, const char *path, ss_err *err);

/* The stream to write to; valid until of_close. */
FILE *of_stream(const of_file *f);

/* Where the bytes are while unpublished: the temporary file, or the path
 * itself when written in place. For a program that reads the output back
 * (Graphviz reading the DOT file) after of_close. */
const char *of_written_path(const of_file *f);

/* Flush and close the stream. On a write or close error, SS_E_IO with the
 * path and the system's reason; the handle must then be aborted. */
int of_close(of_file *f, ss_err *err);

/* Rename the closed temporary file over its target (nothing to do in
 * place) and free the handle, whatever the result. */
int of_publish(of_file *f, ss_err *err);

/* Close if open, remove the temporary file, free the handle. */
void of_abort(of_file *f);

/* One-shot: text (a newline added when it has none at the end) to path,
 * opened, closed and published. */
int of_write_text(const char *path, const char *text, ss_err *err);

#endif
