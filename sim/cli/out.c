/* Output files for the command line. out.h states the contract. */
#include "out.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Write to a temporary file beside the target, then rename: a reader never
 * sees a half-written summary. */
int cli_write_atomic(const char *path, const char *text, ss_err *err)
{
    if (!strcmp(path, "-")) {
        fputs(text, stdout);
        fputc('\n', stdout);
        return SS_OK;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(errno));
    size_t n = strlen(text);
    int ok = fputs(text, f) >= 0 && (n && text[n - 1] == '\n' ? 1 : fputc('\n', f) != EOF);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(e));
    }
    return SS_OK;
}

void cli_progress_bar(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    int width = 40, fill = (int)(width * done / (total ? total : 1));
    fprintf(stderr, "\r  [%.*s%*s] %zu/%zu points", fill, "########################################",
            width - fill, "", done, total);
    if (done == total) fputc('\n', stderr);
}
