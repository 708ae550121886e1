/* pickle.h - Python pickle (protocol 2) written as a stream, for outputs
 * Python tools load with pickle.load (PyTorch's memory snapshots).
 *
 * Values: dicts, lists, str, int (any 64-bit signed value), bool and None,
 * nested freely. A container is opened, filled and closed: pk_dict
 * (then key, value, key, value, ...) or pk_list, then pk_end. Items are
 * written as they come, in batches of PK_BATCH under one MARK (as Python's
 * own pickler batches them: an unpickler in JavaScript spreads a batch
 * into a call's arguments), so memory is one counter per open container
 * whatever the number of items. No memo: every value is written whole.
 * Opcodes used: PROTO, EMPTY_DICT, EMPTY_LIST, MARK, SETITEMS, APPENDS,
 * BININT1, BININT2, BININT, LONG1, BINUNICODE, NEWTRUE, NEWFALSE, NONE,
 * STOP (Python's Lib/pickletools.py documents each).
 *
 * Errors: writes go to the FILE (ferror); misuse (more ends than opens,
 * deeper than PK_DEPTH, a dict closed after a key without its value) is
 * recorded and pk_finish returns SS_E_INTERNAL. pk_finish writes STOP and
 * returns SS_E_IO when the stream failed.
 */
#ifndef PICKLE_H
#define PICKLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/err.h"

#define PK_BATCH 1000
#define PK_DEPTH 16

typedef struct pk {
    FILE *f;
    uint32_t depth;
    uint32_t n[PK_DEPTH]; /* values written in the open batch of each container */
    bool dict[PK_DEPTH];
    bool bad;
} pk;

void pk_begin(pk *p, FILE *f); /* PROTO 2 */
void pk_dict(pk *p);
void pk_list(pk *p);
void pk_end(pk *p);
void pk_str(pk *p, const char *s);
void pk_int(pk *p, int64_t v);
void pk_bool(pk *p, bool v);
void pk_none(pk *p);
/* ,"key": value in one call, for dicts */
void pk_kv_str(pk *p, const char *k, const char *v);
void pk_kv_int(pk *p, const char *k, int64_t v);
int pk_finish(pk *p, ss_err *err);

#endif
