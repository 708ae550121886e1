/* Names formatted without stdio's machinery. fmt.h states the contract. */
#include "fmt.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The conversion at f (just past '%'): its length, 0 when not ours. */
static size_t conv_len(const char *f)
{
    if (*f == 's' || *f == 'u' || *f == 'd' || *f == '%') return 1;
    if (f[0] == 'z' && f[1] == 'u') return 2;
    if (f[0] == 'l' && f[1] == 'u') return 2;
    if (f[0] == 'l' && f[1] == 'l' && f[2] == 'u') return 3;
    return 0;
}

typedef struct out {
    char *buf;
    size_t n, at; /* at: bytes written so far, at most n - 1 */
} out;

static void put(out *o, const char *s, size_t len)
{
    size_t room = o->n - 1 - o->at;
    if (len > room) len = room;
    memcpy(o->buf + o->at, s, len);
    o->at += len;
}

static void put_u(out *o, unsigned long long v, bool neg)
{
    char d[24];
    size_t i = sizeof d;
    do d[--i] = (char)('0' + v % 10);
    while (v /= 10);
    if (neg) d[--i] = '-';
    put(o, d + i, sizeof d - i);
}

/* One pass over fmt; false (buf undefined) at the first conversion that
 * is not ours, so the caller can start over with vsnprintf. */
static bool fmt_ours(out *o, const char *fmt, va_list ap)
{
    for (const char *f = fmt;;) {
        const char *lit = f;
        while (*f && *f != '%') f++;
        put(o, lit, (size_t)(f - lit));
        if (!*f) return true;
        size_t k = conv_len(++f);
        if (!k) return false;
        if (*f == 's') {
            const char *s = va_arg(ap, const char *);
            if (!s) s = "(null)"; /* as glibc prints it */
            put(o, s, strlen(s));
        } else if (*f == 'u') {
            put_u(o, va_arg(ap, unsigned), false);
        } else if (*f == 'd') {
            int v = va_arg(ap, int);
            put_u(o, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
        } else if (*f == '%') {
            put(o, "%", 1);
        } else if (*f == 'z') {
            put_u(o, va_arg(ap, size_t), false);
        } else if (k == 2) {
            put_u(o, va_arg(ap, unsigned long), false);
        } else {
            put_u(o, va_arg(ap, unsigned long long), false);
        }
        f += k;
    }
}

void ss_vfmt(char *buf, size_t n, const char *fmt, va_list ap)
{
    if (!n) {
        vsnprintf(buf, n, fmt, ap);
        return;
    }
    va_list again;
    va_copy(again, ap);
    out o = {buf, n, 0};
    if (fmt_ours(&o, fmt, ap)) buf[o.at] = '\0';
    else vsnprintf(buf, n, fmt, again);
    va_end(again);
}
