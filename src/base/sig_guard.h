/* SPDX-License-Identifier: Apache-2.0 */
/* Writes that must never raise a signal in the job. Writing to a pipe whose
 * reader is gone raises SIGPIPE, and writing past a file-size limit
 * (ulimit -f) raises SIGXFSZ; either's default action ends the process. While
 * a guard is held both are blocked on the calling thread, and one raised by
 * our write is taken back before the mask is restored, so the write simply
 * fails (EPIPE, EFBIG) and the job goes on. Async-signal-safe. */
#ifndef LW_SIG_GUARD_H
#define LW_SIG_GUARD_H

#include <signal.h>

typedef struct {
    sigset_t old;
    int pending_pipe, pending_xfsz; /* already pending before: the job's, left alone */
} lw_sig_guard;

void lw_sig_guard_begin(lw_sig_guard *g);
void lw_sig_guard_end(lw_sig_guard *g);

#endif
