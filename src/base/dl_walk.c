/* SPDX-License-Identifier: Apache-2.0 */
/* Walks of the loaded objects, never across a fork (dl_walk.h says why). */
#include "dl_walk.h"

#include <pthread.h>
#include <signal.h>

static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread's walk in progress: a walk from a walk's callback, or from a
 * signal handler that interrupted one (an ending signal's report), is
 * already under the lock (glibc's own lock is recursive). Set before the
 * lock is taken and cleared after it is given back, so that a handler never
 * waits for a lock its own thread holds. */
static _Thread_local volatile sig_atomic_t depth;

int lw_dl_walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
    if (depth) return dl_iterate_phdr(cb, data);
    depth = 1;
    pthread_mutex_lock(&walk_lock);
    int r = dl_iterate_phdr(cb, data);
    pthread_mutex_unlock(&walk_lock);
    depth = 0;
    return r;
}

/* Whether the fork's prepare took the lock: not when the forking thread is
 * itself in a walk (a fork from a signal handler that interrupted it), which
 * would wait for itself. Forks take the fork table in turn (its first row),
 * so one flag serves. */
static int taken_for_fork;

void lw_dl_walk_lock_for_fork(void) {
    taken_for_fork = !depth;
    if (taken_for_fork) pthread_mutex_lock(&walk_lock);
}

void lw_dl_walk_unlock_after_fork(void) {
    if (taken_for_fork) pthread_mutex_unlock(&walk_lock);
}
