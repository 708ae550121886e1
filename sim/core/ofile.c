/* Output files. ofile.h states the contract. */
#include "ofile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum of_kind {
    OF_TEMP,    /* temporary beside target, renamed on publish */
    OF_INPLACE, /* a device or FIFO, opened by its path */
    OF_FD,      /* a link to one of our descriptors, written through a copy */
    OF_STDOUT   /* "-" */
} of_kind;

struct of_file {
    of_kind kind;
    FILE *fp;     /* NULL once closed */
    char *path;   /* as the user gave it, for messages */
    char *target; /* OF_TEMP: the file renamed over (the link's target) */
    char *tmp;    /* OF_TEMP: where the bytes are until published */
};

#define OF_MAX_HOPS 16 /* links followed before giving up, as the kernel's ELOOP */

/* The descriptor a path names by its spelling, or -1: /dev/stdout,
 * /dev/stderr, /dev/fd/N, /proc/self/fd/N and /proc/<our pid>/fd/N. */
static int desc_fd(const char *p)
{
    if (!strcmp(p, "/dev/stdout")) return 1;
    if (!strcmp(p, "/dev/stderr")) return 2;
    const char *n = NULL;
    char mine[64];
    snprintf(mine, sizeof mine, "/proc/%ld/fd/", (long)getpid());
    if (!strncmp(p, "/dev/fd/", 8)) n = p + 8;
    else if (!strncmp(p, "/proc/self/fd/", 14)) n = p + 14;
    else if (!strncmp(p, mine, strlen(mine))) n = p + strlen(mine);
    if (!n || !*n || strspn(n, "0123456789") != strlen(n) || strlen(n) > 9) return -1;
    return atoi(n);
}

/* The target of link `at` as a path usable from here (relative targets
 * are relative to the link's folder); NULL with errno set on failure. */
static char *link_target(const char *at)
{
    char buf[4096];
    ssize_t n = readlink(at, buf, sizeof buf - 1);
    if (n < 0) return NULL;
    buf[n] = '\0';
    const char *slash = strrchr(at, '/');
    size_t dir = buf[0] == '/' || !slash ? 0 : (size_t)(slash - at) + 1;
    char *t = malloc(dir + (size_t)n + 1);
    if (!t) return NULL;
    memcpy(t, at, dir);
    memcpy(t + dir, buf, (size_t)n + 1);
    return t;
}

static int io_fail(ss_err *err, const char *path, int e)
{
    return ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(e));
}

/* Decide how f is written: f->kind, and f->target for OF_TEMP. */
static int classify(of_file *f, int *fd, ss_err *err)
{
    if (!strcmp(f->path, "-")) return f->kind = OF_STDOUT, SS_OK;
    if ((*fd = desc_fd(f->path)) >= 0) return f->kind = OF_FD, SS_OK;
    char *at = strdup(f->path);
    struct stat st;
    int hops = 0, rc = SS_OK;
    bool missing = false;
    while (at) {
        if (lstat(at, &st) != 0) {
            if ((missing = errno == ENOENT)) break; /* created by the rename */
            rc = io_fail(err, f->path, errno);
            goto out;
        }
        if (!S_ISLNK(st.st_mode)) break;
        if (++hops > OF_MAX_HOPS) {
            rc = io_fail(err, f->path, ELOOP);
            goto out;
        }
        char *next = link_target(at);
        free(at);
        at = next;
        if (at && (*fd = desc_fd(at)) >= 0) {
            f->kind = OF_FD;
            goto out;
        }
    }
    if (!at) {
        rc = errno == ENOMEM ? ss_fail(err, SS_E_NOMEM, f->path, "out of memory") : io_fail(err, f->path, errno);
        goto out;
    }
    if (missing || S_ISREG(st.st_mode)) {
        f->kind = OF_TEMP;
        f->target = at;
        return SS_OK;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) f->kind = OF_INPLACE;
    else
        rc = ss_fail(err, SS_E_IO, f->path, "cannot write: it is %s; give a file's path",
                     S_ISDIR(st.st_mode)   ? "a directory"
                     : S_ISBLK(st.st_mode) ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a file");
out:
    free(at);
    return rc;
}

static int open_stream(of_file *f, int fd, ss_err *err)
{
    if (f->kind == OF_STDOUT) return f->fp = stdout, SS_OK;
    if (f->kind == OF_FD) {
        fflush(NULL); /* what this process already wrote to it goes first */
        int d = dup(fd);
        if (d < 0) return ss_fail(err, SS_E_IO, f->path, "cannot write: descriptor %d is not open", fd);
        if (!(f->fp = fdopen(d, "wb"))) close(d);
    } else if (f->kind == OF_INPLACE) {
        f->fp = fopen(f->path, "wb");
    } else {
        size_t n = strlen(f->target) + 32;
        if (!(f->tmp = malloc(n))) return ss_fail(err, SS_E_NOMEM, f->path, "out of memory");
        snprintf(f->tmp, n, "%s.tmp.%ld", f->target, (long)getpid());
        f->fp = fopen(f->tmp, "wb");
    }
    if (!f->fp) return io_fail(err, f->path, errno);
    setvbuf(f->fp, NULL, _IOFBF, 1 << 16);
    return SS_OK;
}

static void of_free(of_file *f)
{
    free(f->path);
    free(f->target);
    free(f->tmp);
    free(f);
}

int of_open(of_file **out, const char *path, ss_err *err)
{
    *out = NULL;
    of_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return ss_fail(err, SS_E_NOMEM, path, "out of memory");
    }
    int fd = -1, rc = classify(f, &fd, err);
    if (!rc) rc = open_stream(f, fd, err);
    if (rc) {
        of_abort(f);
        return rc;
    }
    *out = f;
    return SS_OK;
}

FILE *of_stream(const of_file *f) { return f->fp; }

const char *of_written_path(const of_file *f) { return f->kind == OF_TEMP ? f->tmp : f->path; }

int of_close(of_file *f, ss_err *err)
{
    FILE *fp = f->fp;
    if (!fp) return SS_OK;
    f->fp = NULL;
    int e = 0;
    if (fflush(fp) != 0) e = errno;
    else if (ferror(fp)) e = EIO;
    if (fp != stdout && fclose(fp) != 0 && !e) e = errno;
    return e ? io_fail(err, f->path, e) : SS_OK;
}

int of_publish(of_file *f, ss_err *err)
{
    int rc = f->fp ? of_close(f, err) : SS_OK;
    if (!rc && f->kind == OF_TEMP && rename(f->tmp, f->target) != 0) {
        rc = io_fail(err, f->path, errno);
        remove(f->tmp);
    }
    if (rc && f->kind == OF_TEMP) remove(f->tmp);
    of_free(f);
    return rc;
}

void of_abort(of_file *f)
{
    if (!f) return;
    if (f->fp && f->fp != stdout) fclose(f->fp);
    if (f->kind == OF_TEMP && f->tmp) remove(f->tmp);
    of_free(f);
}

int of_write_text(const char *path, const char *text, ss_err *err)
{
    of_file *f;
    int rc = of_open(&f, path, err);
    if (rc) return rc;
    size_t n = strlen(text);
    fwrite(text, 1, n, of_stream(f));
    if (!n || text[n - 1] != '\n') fputc('\n', of_stream(f));
    rc = of_close(f, err);
    if (rc) {
        of_abort(f);
        return rc;
    }
    return of_publish(f, err);
}
