/* How much text fits in a box. label.h states the estimate. */
#include "label.h"

#include <string.h>

static const char ellipsis[] = "\xe2\x80\xa6"; /* U+2026 */

/* A UTF-8 continuation byte is 10xxxxxx; every other byte starts a character. */
static int starts_char(unsigned char c) { return (c & 0xC0u) != 0x80u; }

size_t lbl_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += starts_char((unsigned char)*s);
    return n;
}

double lbl_width(size_t n, double pt) { return (double)n * LBL_EM * pt + 2.0 * LBL_PAD_PT; }

size_t lbl_fit(char *out, size_t cap, const char *s, double w, double pt)
{
    size_t n = lbl_chars(s), len = strlen(s);
    if (cap) out[0] = '\0';
    if (lbl_width(n, pt) <= w) {
        if (len + 1 > cap) return 0;
        memcpy(out, s, len + 1);
        return n;
    }
    /* k characters and the ellipsis: the largest k with k + 1 fitting. */
    double room = (w - 2.0 * LBL_PAD_PT) / (LBL_EM * pt) - 1.0;
    if (!(room >= 1.0)) return 0; /* also NaN */
    size_t k = room < (double)n ? (size_t)room : n, b = 0, seen = 0;
    while (s[b] && seen <= k) {
        if (starts_char((unsigned char)s[b]) && seen++ == k) break;
        b++;
    }
    if (b + sizeof ellipsis > cap) return 0;
    memcpy(out, s, b);
    memcpy(out + b, ellipsis, sizeof ellipsis);
    return k + 1;
}
