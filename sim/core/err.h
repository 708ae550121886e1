/* err.h - errors as values.
 *
 * Every fallible function returns an int status (SS_OK or a negative SS_E_*
 * code, see ss.h) and fills a caller-supplied ss_err. The message is for a
 * person: `where` names the file and JSON path ("scenarios/a.json: $.sharding
 * .strategy"), `msg` says what was expected and what was found.
 *
 * The first error wins: ss_fail on an ss_err that already holds an error keeps
 * the first message and returns the new code. A NULL ss_err is allowed and
 * discards the message. No function below main() prints or exits.
 */
#ifndef SS_ERR_H
#define SS_ERR_H

#include "ss.h"

typedef struct ss_err {
    int code;        /* SS_OK or a negative SS_E_* code */
    char where[512]; /* file and JSON path, or "" */
    char msg[512];   /* what was expected, what was found */
} ss_err;

/* Reset to "no error". */
void ss_err_clear(ss_err *err);

/* Record an error (if none is recorded yet) and return code. `where` may be
 * NULL. printf-style message. */
int ss_fail(ss_err *err, int code, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Format "where: msg" (or just msg) into buf; returns buf. */
const char *ss_err_str(const ss_err *err, char *buf, size_t len);

#endif
