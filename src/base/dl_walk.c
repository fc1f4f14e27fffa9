/* SPDX-License-Identifier: Apache-2.0 */
/* Walks of the loaded objects, never across a fork (dl_walk.h says why). */
#include "dl_walk.h"

#include <pthread.h>

static pthread_mutex_t walk_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread's walks in progress: a walk from a walk's callback is already
 * under the lock. */
static _Thread_local int depth;

int lw_dl_walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) {
    if (depth) return dl_iterate_phdr(cb, data);
    pthread_mutex_lock(&walk_lock);
    depth = 1;
    int r = dl_iterate_phdr(cb, data);
    depth = 0;
    pthread_mutex_unlock(&walk_lock);
    return r;
}

void lw_dl_walk_lock_for_fork(void) {
    pthread_mutex_lock(&walk_lock);
}

void lw_dl_walk_unlock_after_fork(void) {
    pthread_mutex_unlock(&walk_lock);
}
