/* search_csv.h - a search's CSV as a record that survives an interruption.
 *
 * The file opens with a key line that names the search,
 *   # shardsim search: version V; scenario H; world W; tp L; cp L; pp L; ep L;
 *     strategy L; recompute L; global_batch G; micro_batch M
 * (one line): the simulator's version, H a 64-bit FNV-1a hash of the
 * scenario the points start from (its text with the search's --set applied
 * and its file references absolute, scn_write_resolved), and the space.
 * Then the header, then one row per point: the sweep's columns (sweep.h)
 * and five of the search's own, state_bytes and step_bound_s (the checks,
 * empty where unchecked) and step_ns, tokens_per_s_per_gpu, mfu (a
 * simulated point's figures, exact: step_ns an integer, the two others to
 * 17 significant digits, which read back to the same doubles).
 *
 * While a search runs, rows are appended in the order points finish, each
 * flushed as it is written (cli/search_cmd.c), so a search killed part way
 * keeps every point it finished. At its end the file is rewritten whole, in
 * point order and with every verdict final: the same bytes on any thread
 * count, resumed or not.
 *
 * Resume (scsv_read): a file with this search's key and header gives back
 * the rows of its simulated points (status ok or error) as they are, with
 * their figures; rows left out (pruned, rejected) are verdicts, made again
 * from the checks. A last line without its newline (cut by the kill) is
 * ignored. Anything else that does not read as this search's row is an
 * error naming the file, the line, what was expected and what was found.
 *
 * Pure text in, text out: the caller reads and writes the file.
 */
#ifndef SEARCH_CSV_H
#define SEARCH_CSV_H

#include <stddef.h>

#include "../core/err.h"
#include "search.h"
#include "sweep.h"

#define SCSV_KEY_MAX 2048

/* The search's own columns, after the sweep's (with their leading comma). */
extern const char scsv_extra_header[];

/* The key line (no newline) of a search over sp whose points start from
 * the scenario text `resolved`. */
void scsv_key(const search_space *sp, const char *resolved, char *out, size_t cap);

/* Whether `line` (up to its newline or end) is the key `key`: SS_OK, or
 * SS_E_INPUT naming file, line 1, the first field that differs, its value
 * in the file and in this search. */
int scsv_key_check(const char *file, const char *line, const char *key, ss_err *err);

/* The search's own fields of one row (with their leading commas): the
 * checks of the point (chk->checked false: empty) and its figures (fig->ok
 * false: empty). */
void scsv_extra(const search_check *chk, const sweep_fig *fig, char *buf, size_t cap);

/* Read back the file `file` whose text is `text` for a search of points
 * pts[0..n) whose key line is `key` and whose header is `header` (the
 * sweep's and scsv_extra_header, no newline): for each point simulated
 * before, given[i] its sweep row with its newline (caller frees each) and
 * figs[i] its figures; *nreused how many. given[] and figs[] must be
 * zeroed by the caller; on error nothing is left allocated. */
int scsv_read(const char *file, const char *text, const char *key, const char *header,
              const search_point *pts, size_t n, char **given, sweep_fig *figs, size_t *nreused,
              ss_err *err);

#endif
