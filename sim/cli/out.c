/* What the command line shows while it works. out.h states the contract. */
#include "out.h"

#include <stdio.h>

void cli_progress_bar(void *ctx, size_t done, size_t total)
{
    (void)ctx;
    int width = 40, fill = (int)(width * done / (total ? total : 1));
    fprintf(stderr, "\r  [%.*s%*s] %zu/%zu points", fill, "########################################",
            width - fill, "", done, total);
    if (done == total) fputc('\n', stderr);
}
