/* label.h - how much text fits in a box, without a font at hand.
 *
 * The drawings (dot.c, bars.c) are placed here and rendered elsewhere
 * (Graphviz, a browser), so text widths are estimated, not measured: a
 * character is LBL_EM of the font size wide, the ellipsis "…" counting as
 * one character, plus LBL_PAD_PT of margin on each side. 0.6 em is at or
 * above Helvetica's advance for its digits (0.556), lower-case letters
 * (0.22-0.61, 'm' 0.83 and 'w' 0.72 excepted) and the punctuation of op
 * names ('.' 0.28, '_' 0.556), so a fitted op name stays inside its box
 * unless it is mostly m and w. Pure functions on UTF-8 strings; a character
 * is one code point (input is checked UTF-8, core/utf8.h).
 */
#ifndef LBL_LABEL_H
#define LBL_LABEL_H

#include <stddef.h>

#define LBL_EM 0.6     /* estimated advance of a character, in em */
#define LBL_PAD_PT 2.0 /* kept clear at each end of the box */

/* Characters (code points) in s. */
size_t lbl_chars(const char *s);

/* Estimated width in points of n characters at font size pt, padding
 * included: n * LBL_EM * pt + 2 * LBL_PAD_PT. */
double lbl_width(size_t n, double pt);

/* s as it fits in a box w points wide at font size pt, into out[cap]: s
 * itself when lbl_width(lbl_chars(s), pt) <= w; else its longest prefix of
 * whole characters followed by "…" that fits (at least one character
 * before the ellipsis); else "" (the box is too narrow for any text). Also
 * "" when the result would not fit in cap bytes. Returns the characters
 * in out, the ellipsis counted as one. */
size_t lbl_fit(char *out, size_t cap, const char *s, double w, double pt);

#endif
