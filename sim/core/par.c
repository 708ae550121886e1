#include "par.h"

#include <pthread.h>

void par_run(unsigned threads, void *(*fn)(void *), void *arg)
{
    pthread_t tid[PAR_MAX];
    unsigned nt = threads < 1 ? 1 : threads > PAR_MAX ? PAR_MAX : threads, started = 0;
    /* thread 0 is this one: one thread starts none */
    for (unsigned t = 1; t < nt; t++)
        if (!pthread_create(&tid[started], NULL, fn, arg)) started++;
    fn(arg);
    for (unsigned t = 0; t < started; t++) pthread_join(tid[t], NULL);
}
