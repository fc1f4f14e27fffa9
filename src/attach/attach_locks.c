/* SPDX-License-Identifier: Apache-2.0 */
#include "attach_locks.h"

#include "fork_locks.h"
#include "lifecycle.h"
#include "lock_order.h"

#include <pthread.h>

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

void lw_attach_lock(void) {
    LW_LOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
}
void lw_attach_unlock(void) {
    LW_UNLOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
}
void lw_patch_lock(void) {
    LW_LOCK_RANKED(&patch_lock, LW_RANK_PATCH);
}
void lw_patch_unlock(void) {
    LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
}

/* A fork while another thread holds patch_lock must not leave the child
 * with it locked (its dlopen hook takes it). */
static void fork_prepare(void) {
    lw_patch_lock();
}
static void fork_parent(void) {
    lw_patch_unlock();
}
static void fork_child(void) {
    pthread_mutex_init(&patch_lock, NULL);
    LW_LOCK_FORGET(LW_RANK_PATCH);
    pthread_mutex_init(&attach_lock, NULL);
    LW_LOCK_FORGET(LW_RANK_ATTACH);
}

/* The last row of the fork-handler registry's table (src/process/fork_locks.c): a
 * fork takes patch_lock after start_lock and releases it before. */
static const lw_fork_row row = {fork_prepare, fork_parent, fork_child};

void lw_attach_locks_for_fork(void) {
    lw_fork_locks_set_attach(&row);
    lw_lifecycle_fork_handlers();
}
