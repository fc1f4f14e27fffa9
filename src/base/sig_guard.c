/* SPDX-License-Identifier: Apache-2.0 */
#include "sig_guard.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

static void both(sigset_t *s) {
    sigemptyset(s);
    sigaddset(s, SIGPIPE);
    sigaddset(s, SIGXFSZ);
}

void lw_sig_guard_begin(lw_sig_guard *g) {
    int saved = errno;
    sigset_t s, pending;
    both(&s);
    pthread_sigmask(SIG_BLOCK, &s, &g->old);
    sigemptyset(&pending);
    sigpending(&pending);
    g->pending_pipe = sigismember(&pending, SIGPIPE) == 1;
    g->pending_xfsz = sigismember(&pending, SIGXFSZ) == 1;
    errno = saved;
}

void lw_sig_guard_end(lw_sig_guard *g) {
    int saved = errno;
    sigset_t pending, take;
    sigemptyset(&pending);
    sigemptyset(&take);
    sigpending(&pending);
    if (!g->pending_pipe && sigismember(&pending, SIGPIPE) == 1) sigaddset(&take, SIGPIPE);
    if (!g->pending_xfsz && sigismember(&pending, SIGXFSZ) == 1) sigaddset(&take, SIGXFSZ);
    struct timespec zero = {0, 0};
    /* Each wait consumes one: a signal raised by our write was sent to this
     * thread, which blocks it, so it is found here. */
    while (!sigisemptyset(&take)) {
        int sig = sigtimedwait(&take, NULL, &zero);
        if (sig <= 0) break;
        sigdelset(&take, sig);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = saved;
}
