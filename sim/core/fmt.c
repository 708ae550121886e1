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

static bool ours(const char *f)
{
    for (; *f; f++)
        if (*f == '%') {
            size_t k = conv_len(f + 1);
            if (!k) return false;
            f += k;
        }
    return true;
}

typedef struct out {
    char *buf;
    size_t n, at; /* at: bytes written so far, at most n - 1 */
} out;

static void put(out *o, const char *s, size_t len)
{
    if (o->at + 1 >= o->n) return;
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

void ss_vfmt(char *buf, size_t n, const char *fmt, va_list ap)
{
    if (!ours(fmt)) {
        vsnprintf(buf, n, fmt, ap);
        return;
    }
    if (!n) return;
    out o = {buf, n, 0};
    for (const char *f = fmt; *f;) {
        const char *p = strchr(f, '%');
        size_t lit = p ? (size_t)(p - f) : strlen(f);
        put(&o, f, lit);
        if (!p) break;
        f = p + 1;
        size_t k = conv_len(f);
        if (*f == 's') {
            const char *s = va_arg(ap, const char *);
            put(&o, s, strlen(s));
        } else if (*f == 'u') {
            put_u(&o, va_arg(ap, unsigned), false);
        } else if (*f == 'd') {
            int v = va_arg(ap, int);
            put_u(&o, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
        } else if (*f == '%') {
            put(&o, "%", 1);
        } else if (f[0] == 'z') {
            put_u(&o, va_arg(ap, size_t), false);
        } else if (k == 2) {
            put_u(&o, va_arg(ap, unsigned long), false);
        } else {
            put_u(&o, va_arg(ap, unsigned long long), false);
        }
        f += k;
    }
    buf[o.at] = '\0';
}
