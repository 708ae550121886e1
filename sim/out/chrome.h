/* chrome.h - the step as a Chrome / Perfetto trace (Trace Event Format).
 *
 * One process per rank, one thread per stream (named by metadata events),
 * one complete event ("X") per op with its name, phase, issue time and, for
 * collectives, kind, bytes and group in args (an op of no duration is an
 * instant event, "i" with thread scope, which viewers draw as a mark rather
 * than a step in the next op's stack); memory as counter events
 * ("C", allocated and reserved MiB) for the ranks whose memory series was
 * recorded; flow arrows ("s"/"f") from each collective to the ops of other
 * streams that wait on it. Times are microseconds with nanosecond decimals
 * (displayTimeUnit "ns"). Events of a thread are in start order. Output is
 * deterministic.
 *
 * The text is written as it is produced, in constant memory whatever the
 * step's size (a 6,144-GPU pipelined step is hundreds of MB of trace). It
 * is the canonical form cJSON prints unformatted (numbers as cJSON's
 * printer writes them, strings escaped as it escapes them), so a trace read
 * back and printed again by cJSON is byte for byte the same.
 *
 * Reads only the trace, its program and the report. chrome_write returns
 * SS_E_IO when writing to f fails (the stream's error; the caller names
 * the file). chrome_json returns the same text as a string the caller frees
 * with free(), NULL when out of memory: for small steps (tests, replays).
 */
#ifndef CHROME_H
#define CHROME_H

#include <stdio.h>

#include "summary.h"

/* Ranks rank_lo..rank_hi (inclusive, clamped to the trace's) only; flow
 * ids count from 1 in the ranks written. */
int chrome_write(const sum_report *r, const trc *t, uint32_t rank_lo, uint32_t rank_hi, FILE *f,
                 ss_err *err);
char *chrome_json(const sum_report *r, const trc *t);

#endif
