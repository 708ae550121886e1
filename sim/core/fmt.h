/* fmt.h - vsnprintf for the formats op and tensor names use.
 *
 * A step of a large layout names every op and tensor it builds (hundreds
 * of thousands), and glibc's vsnprintf was a tenth of such a run. ss_vfmt
 * writes plain text and the conversions %s, %u, %d, %lu, %llu, %zu and %%
 * (no flags, width or precision) itself, and hands any other format to
 * vsnprintf whole, so its result is vsnprintf's for every format: the
 * same bytes, cut at n - 1 and terminated when n > 0.
 */
#ifndef SS_FMT_H
#define SS_FMT_H

#include <stdarg.h>
#include <stddef.h>

/* Format into buf[0..n) as vsnprintf(buf, n, fmt, ap) would. */
void ss_vfmt(char *buf, size_t n, const char *fmt, va_list ap);

#endif
