/* hint.h - "did you mean": the nearest of a command's words to a mistyped one.
 *
 * cli_nearest returns the choice closest to word by edit distance
 * (insertions, deletions, substitutions and swaps of neighbours each cost
 * one), if it is close enough to be a typo: at most 2 edits, and at most
 * half of the word's length; else NULL. Ties go to the earlier choice, so
 * the answer is deterministic. Words longer than CLI_HINT_MAX are never
 * matched. Pure; no allocation.
 */
#ifndef CLI_HINT_H
#define CLI_HINT_H

#include <stddef.h>

#define CLI_HINT_MAX 64

const char *cli_nearest(const char *word, const char *const *choices, size_t n);

#endif
