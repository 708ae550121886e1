/* Python pickle, protocol 2, as a stream. pickle.h states the contract. */
#include "pickle.h"

#include <string.h>

enum {
    OP_PROTO = 0x80, OP_EMPTY_DICT = '}', OP_EMPTY_LIST = ']', OP_MARK = '(',
    OP_SETITEMS = 'u', OP_APPENDS = 'e', OP_BININT1 = 'K', OP_BININT2 = 'M',
    OP_BININT = 'J', OP_LONG1 = 0x8a, OP_BINUNICODE = 'X', OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89, OP_NONE = 'N', OP_STOP = '.'
};

void pk_begin(pk *p, FILE *f)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    fputc(OP_PROTO, f);
    fputc(2, f);
}

static void le(FILE *f, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) fputc((int)((v >> (8 * i)) & 0xff), f);
}

/* Close the open batch of the innermost container, if it has items. */
static void flush(pk *p)
{
    uint32_t d = p->depth - 1;
    if (!p->n[d]) return;
    if (p->dict[d] && p->n[d] % 2) p->bad = true; /* a key without its value */
    fputc(p->dict[d] ? OP_SETITEMS : OP_APPENDS, p->f);
    p->n[d] = 0;
}

/* Before a value: open a batch in the innermost container (MARK), or
 * close a full one and open the next. */
static void item(pk *p)
{
    if (!p->depth) return; /* the top-level value */
    uint32_t d = p->depth - 1, per = p->dict[d] ? 2 * PK_BATCH : PK_BATCH;
    if (p->n[d] == per && (!p->dict[d] || p->n[d] % 2 == 0)) flush(p);
    if (!p->n[d]) fputc(OP_MARK, p->f);
    p->n[d]++;
}

static void open_container(pk *p, bool dict)
{
    item(p);
    fputc(dict ? OP_EMPTY_DICT : OP_EMPTY_LIST, p->f);
    if (p->depth == PK_DEPTH) {
        p->bad = true;
        return;
    }
    p->dict[p->depth] = dict;
    p->n[p->depth++] = 0;
}

void pk_dict(pk *p) { open_container(p, true); }
void pk_list(pk *p) { open_container(p, false); }

void pk_end(pk *p)
{
    if (!p->depth) {
        p->bad = true;
        return;
    }
    flush(p);
    p->depth--;
}

void pk_str(pk *p, const char *s)
{
    item(p);
    size_t n = strlen(s);
    fputc(OP_BINUNICODE, p->f);
    le(p->f, n, 4);
    fwrite(s, 1, n, p->f);
}

/* The shortest form pickle has: BININT1/2 for small non-negative values,
 * BININT for 32-bit signed ones, else LONG1 with the fewest little-endian
 * two's-complement bytes that keep the sign. */
void pk_int(pk *p, int64_t v)
{
    item(p);
    FILE *f = p->f;
    if (v >= 0 && v < 256) {
        fputc(OP_BININT1, f), fputc((int)v, f);
    } else if (v >= 0 && v < 65536) {
        fputc(OP_BININT2, f), le(f, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        fputc(OP_BININT, f), le(f, (uint64_t)(uint32_t)(int32_t)v, 4);
    } else {
        int n = 8;
        while (n > 1) {
            int64_t top = v >> (8 * (n - 1) - 1); /* the bits a shorter form drops, and its sign bit */
            if (top != 0 && top != -1) break;
            n--;
        }
        fputc(OP_LONG1, f), fputc(n, f), le(f, (uint64_t)v, n);
    }
}

void pk_bool(pk *p, bool v)
{
    item(p);
    fputc(v ? OP_NEWTRUE : OP_NEWFALSE, p->f);
}

void pk_none(pk *p)
{
    item(p);
    fputc(OP_NONE, p->f);
}

void pk_kv_str(pk *p, const char *k, const char *v)
{
    pk_str(p, k);
    pk_str(p, v);
}

void pk_kv_int(pk *p, const char *k, int64_t v)
{
    pk_str(p, k);
    pk_int(p, v);
}

int pk_finish(pk *p, ss_err *err)
{
    fputc(OP_STOP, p->f);
    if (p->bad || p->depth)
        return ss_fail(err, SS_E_INTERNAL, NULL, "pickle: containers not closed in order");
    return ferror(p->f) ? ss_fail(err, SS_E_IO, NULL, "cannot write the pickle") : SS_OK;
}
