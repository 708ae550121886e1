/* diff.h - two summaries side by side, for reviews.
 *
 * Reads two JSON summaries (the text `shardsim run --json` writes) and
 * prints the rows a review needs: step time and its parts, exposed
 * communication, peak allocated / reserved, steady and setup memory, and
 * the count and bytes of every collective, with the difference and its
 * percentage. Rows missing from a summary (an older version) print "-".
 * Deterministic text. Errors: a summary that is not JSON (SS_E_INPUT, naming
 * it).
 */
#ifndef DIFF_H
#define DIFF_H

#include <stdio.h>

#include "../core/err.h"

int diff_text(const char *a_json, const char *a_name, const char *b_json, const char *b_name,
              FILE *f, ss_err *err);

#endif
