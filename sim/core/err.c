#include "err.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ss_err_clear(ss_err *err)
{
    if (!err) return;
    err->code = SS_OK;
    err->where[0] = '\0';
    err->msg[0] = '\0';
}

int ss_fail(ss_err *err, int code, const char *where, const char *fmt, ...)
{
    if (!err || err->code != SS_OK) return code;
    err->code = code;
    snprintf(err->where, sizeof err->where, "%s", where ? where : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

const char *ss_err_str(const ss_err *err, char *buf, size_t len)
{
    if (err->where[0])
        snprintf(buf, len, "%s: %s", err->where, err->msg);
    else
        snprintf(buf, len, "%s", err->msg);
    return buf;
}

ss_ns ss_ns_from_s(double seconds)
{
    if (!isfinite(seconds) || seconds <= 0.0) return 0;
    double ns = seconds * 1e9 + 0.5;
    if (ns >= 18446744073709551615.0) return SS_NS_MAX;
    return (ss_ns)ns;
}
