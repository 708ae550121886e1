/* "Did you mean". hint.h states the contract. */
#include "hint.h"

#include <string.h>

/* Optimal string alignment distance (Damerau-Levenshtein without repeated
 * edits of one substring), three rows of the usual table. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t rows[3][CLI_HINT_MAX + 1], *pp = rows[0], *p = rows[1], *c = rows[2];
    for (size_t j = 0; j <= lb; j++) p[j] = j;
    for (size_t i = 1; i <= la; i++) {
        c[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = p[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = p[j] + 1, ins = c[j - 1] + 1;
            size_t best = sub < del ? sub : del;
            best = best < ins ? best : ins;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            c[j] = best;
        }
        size_t *t = pp;
        pp = p, p = c, c = t;
    }
    return p[lb];
}

const char *cli_nearest(const char *word, const char *const *choices, size_t n)
{
    size_t lw = strlen(word), best = 3;
    const char *hit = NULL;
    if (lw > CLI_HINT_MAX) return NULL;
    for (size_t k = 0; k < n; k++) {
        if (strlen(choices[k]) > CLI_HINT_MAX) continue;
        size_t d = distance(word, choices[k]);
        if (d < best && 2 * d <= lw) best = d, hit = choices[k];
    }
    return hit;
}
