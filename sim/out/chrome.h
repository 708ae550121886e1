/* chrome.h - the step as a Chrome / Perfetto trace (Trace Event Format).
 *
 * One process per rank, one thread per stream (named by metadata events),
 * one complete event ("X") per op with its name, phase, issue time and, for
 * collectives, kind, bytes and group in args; memory as counter events
 * ("C", allocated and reserved MiB) for the ranks whose memory series was
 * recorded; flow arrows ("s"/"f") from each collective to the ops of other
 * streams that wait on it. Times are microseconds with nanosecond decimals
 * (displayTimeUnit "ns"). Events of a thread are in start order. Output is
 * deterministic.
 *
 * Reads only the trace, its program and the report. chrome_json returns a
 * string the caller frees with free(), NULL when out of memory.
 */
#ifndef CHROME_H
#define CHROME_H

#include "summary.h"

char *chrome_json(const sum_report *r, const trc *t);

#endif
