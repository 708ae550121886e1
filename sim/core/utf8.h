/* utf8.h - the two UTF-8 facts shardsim needs: is a byte sequence well
 * formed, and where may a name be cut.
 *
 * Input files are checked at load (io/json.c refuses strings that are not
 * UTF-8), so names inside shardsim are UTF-8; fixed-size name buffers cut
 * them with ss_utf8_copy, which never splits a character, so an output
 * (JSON summary, trace, DOT) stays valid UTF-8. Well formed means RFC 3629:
 * no overlong forms, no surrogates (U+D800..U+DFFF), nothing above
 * U+10FFFF. Knows nothing about JSON.
 */
#ifndef SS_UTF8_H
#define SS_UTF8_H

#include <stddef.h>
#include <string.h>

/* Length (1-4) of the well-formed character at s[0..n), or 0 when the bytes
 * there are not one (a stray continuation byte, a truncated or overlong
 * sequence, a surrogate, a code point above U+10FFFF). n must be >= 1. */
static inline size_t ss_utf8_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || len > n) return 0;
    /* The second byte's range depends on the first (Unicode Table 3-7). */
    unsigned lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0u) != 0x80u) return 0;
    return len;
}

/* Copy src into dst[size] (size >= 1), cutting at most at size - 1 bytes and
 * then back to the start of a character, so a multi-byte character is
 * dropped whole rather than split. Returns true when src fitted uncut. */
static inline int ss_utf8_copy(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src), k = n < size ? n : size - 1;
    if (k < n)
        while (k > 0 && ((unsigned char)src[k] & 0xC0u) == 0x80u) k--;
    memmove(dst, src, k);
    dst[k] = '\0';
    return k == n;
}

/* After a snprintf that may have cut s at its buffer's end: drop a last
 * character whose bytes were cut short, so s ends on a boundary. */
static inline void ss_utf8_trim(char *s)
{
    size_t n = strlen(s), k = n;
    while (k > 0 && n - k < 4 && ((unsigned char)s[k - 1] & 0xC0u) == 0x80u) k--;
    if (k == 0) return;
    unsigned c = (unsigned char)s[k - 1];
    size_t want = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n - (k - 1) < want) s[k - 1] = '\0';
}

#endif
