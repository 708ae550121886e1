/* tef.h - what the Trace Event Format writers share: JSON printed as cJSON
 * prints it, and the lanes of a stream.
 *
 * Printing: numbers by cJSON 1.7's rule (an integer when the value is one,
 * else the shorter of %.15g and %.17g that reads back), strings escaped as
 * cJSON escapes them, times from integer nanoseconds as microseconds with
 * nanosecond decimals (the exact decimal t / 1000, trailing zeros trimmed).
 * A text made of these is what cJSON prints unformatted, so the writers
 * stream it event by event and it still reads back and prints the same.
 * The kv_ helpers write `SEP"key":value` where SEP is ',' or '{'.
 *
 * Lanes: the ops of one stream of a rank dealt to lanes so that a lane's
 * ops never overlap and come in start order. An ordered stream runs its
 * ops one after the other and has one lane; the unordered p2p stream can
 * run several at once, out of program order. tef_lanes gives each op the
 * first lane whose last op ended by its start (a new lane when none did),
 * visiting a stream's ops in program order: deterministic, and lanes are
 * numbered in the order they first appear. Memory: one lane number per op
 * of the rank, and one end time per lane, reused across ranks.
 *
 * Errors: writes go to a FILE and surface through ferror (the caller names
 * the file); tef_lanes returns SS_E_NOMEM when out of memory.
 */
#ifndef TEF_H
#define TEF_H

#include <stdio.h>

#include "trace.h"

void tef_num(FILE *f, double d);
void tef_us(FILE *f, ss_ns t);
void tef_str(FILE *f, const char *s);
void tef_kv_str(FILE *f, char sep, const char *k, const char *v);
void tef_kv_num(FILE *f, char sep, const char *k, double v);
void tef_kv_us(FILE *f, char sep, const char *k, ss_ns t);

typedef struct tef_lanes {
    uint32_t *lane; /* lane[i]: op i's lane on its stream */
    uint32_t nlanes[PROG_NSTREAMS];
    uint32_t cap;
    ss_ns *end; /* scratch: per lane of the stream being dealt, its last end */
    uint32_t capend;
} tef_lanes;

/* Deal every stream of rank r to lanes; l is zeroed by the caller before
 * its first use and released with tef_lanes_fini. */
int tef_lanes_rank(tef_lanes *l, const trc *t, uint32_t r, ss_err *err);
void tef_lanes_fini(tef_lanes *l);

#endif
