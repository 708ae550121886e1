/* chrome.h - the step as a Chrome / Perfetto trace (Trace Event Format).
 *
 * One process per rank, one thread per stream (named by metadata events,
 * ordered by thread_sort_index), each op a begin/end pair ("B" then "E")
 * with its name, phase, issue time and, for collectives, kind, bytes and
 * group in the begin's args; an op of no duration is an instant event ("i",
 * thread scope). Memory as counter events ("C", allocated and reserved MiB)
 * for the ranks whose memory series was recorded; flow arrows ("s"/"f")
 * from each collective to the ops of other streams that wait on it. Times
 * are microseconds with nanosecond decimals (displayTimeUnit "ns").
 *
 * Nesting is exact in every viewer: a thread's ops never overlap and come
 * in start order, an end and the next begin at the same nanosecond print
 * the same text (so the same double), and no viewer has to add ts + dur
 * (DECISIONS 86). A stream that runs several ops at once (p2p) is drawn on
 * as many lanes, threads "p2p", "p2p 2", ...: lane k of stream s is tid
 * k * PROG_NSTREAMS + s. Output is deterministic.
 *
 * The text is written as it is produced, in memory bounded by one lane
 * number per op of a rank, whatever the step's size (a 6,144-GPU pipelined
 * step is hundreds of MB of trace). It is the canonical form cJSON prints
 * unformatted (numbers as cJSON's printer writes them, strings escaped as
 * it escapes them), so a trace read back and printed again by cJSON is byte
 * for byte the same.
 *
 * Reads only the trace, its program and the report. chrome_write returns
 * SS_E_IO when writing to f fails (the stream's error; the caller names
 * the file), SS_E_NOMEM when out of memory. chrome_json returns the same
 * text as a string the caller frees with free(), NULL when out of memory:
 * for small steps (tests, replays).
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
