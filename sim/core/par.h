/* par.h - run one function on several threads that share its work.
 *
 * par_run calls fn(arg) on `threads` threads at once, the calling thread
 * among them, and returns when every call has returned. fn is a worker that
 * takes items from a queue it shares through arg (under its own lock) until
 * none is left, so the work is done whatever the number of threads: when
 * the system refuses a thread, fewer run, down to the calling thread alone.
 * threads is clamped to 1..PAR_MAX. What the workers compute must not
 * depend on which thread took which item; every caller's output is the
 * same bytes on any number of threads.
 */
#ifndef SS_PAR_H
#define SS_PAR_H

#define PAR_MAX 64

void par_run(unsigned threads, void *(*fn)(void *), void *arg);

#endif
