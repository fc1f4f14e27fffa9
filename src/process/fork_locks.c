/* SPDX-License-Identifier: Apache-2.0 */
/* The fork-handler registry (fork_locks.h says the contract). */
#include "fork_locks.h"

#include "anatomy.h"
#include "dl_walk.h"
#include "growth.h"
#include "imports.h"
#include "live.h"
#include "record.h"
#include "sites.h"
#include "vmm.h"
#include "warning.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* The attach layer's row, reached through the pointer it sets (it is above
 * this layer), and the one a fork took: read once, in prepare, under
 * start_lock (the table's first row, released last), so the parent and the
 * child release exactly what prepare took even if an attach sets the row
 * meanwhile. */
static _Atomic(const lw_fork_row *) attach_row;
static const lw_fork_row *attach_taken;
/* The first row, the lifecycle's (lw_fork_locks_register): set by the first
 * call, before it registers the handlers. */
static _Atomic(const lw_fork_row *) first_row;

static void attach_prepare(void) {
    attach_taken = atomic_load(&attach_row);
    if (attach_taken) attach_taken->prepare();
}
static void attach_parent(void) {
    if (attach_taken) attach_taken->parent();
}
static void attach_child(void) {
    if (attach_taken) attach_taken->child();
}

static void first_prepare(void) {
    atomic_load(&first_row)->prepare();
}
static void first_parent(void) {
    atomic_load(&first_row)->parent();
}
static void first_child(void) {
    const lw_fork_row *r = atomic_load(&first_row);
    (r->child ? r->child : r->parent)();
}

/* In the lock order, lowest first. */
static const lw_fork_row rows[] = {
    /* lifecycle.c's start_lock, handed in at registration; in the child,
     * after every lock below is released, the child's own state (its steps,
     * its report's clock). */
    {first_prepare, first_parent, first_child},
    {lw_growth_lock_for_fork, lw_growth_unlock_after_fork, NULL},
    {lw_sites_lock_all, lw_sites_unlock_all, NULL},
    {lw_live_lock_all, lw_live_unlock_all, NULL},
    {lw_record_lock_for_fork, lw_record_unlock_after_fork, NULL},
    {lw_vmm_lock_for_fork, lw_vmm_unlock_after_fork, NULL},
    {lw_imports_lock_for_fork, lw_imports_unlock_after_fork, NULL},
    /* anatomy.c's lock: a leaf (nothing else is taken under it). */
    {lw_anatomy_lock_for_fork, lw_anatomy_unlock_after_fork, NULL},
    /* warning.c's alarm_lock: a leaf, only copies under it. */
    {lw_warning_lock_for_fork, lw_warning_unlock_after_fork, NULL},
    /* src/attach: patch_lock, taken; attach_lock, made new in the child. */
    {attach_prepare, attach_parent, attach_child},
    /* base/dl_walk.c's walk lock, last: it is taken under start_lock (a
     * start binds) and patch_lock (an attach patches), and nothing is taken
     * under it. No walk of leakwatch's is then under way at the fork, so the
     * child never inherits glibc's list lock held by one (dl_walk.h). */
    {lw_dl_walk_lock_for_fork, lw_dl_walk_unlock_after_fork, NULL},
};
enum { NROWS = sizeof rows / sizeof rows[0] };

static void prepare(void) {
    for (size_t i = 0; i < NROWS; i++)
        rows[i].prepare();
}

static void parent(void) {
    for (size_t i = NROWS; i-- > 0;)
        rows[i].parent();
}

static void child(void) {
    for (size_t i = NROWS; i-- > 0;)
        (rows[i].child ? rows[i].child : rows[i].parent)();
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_once(void) {
    pthread_atfork(prepare, parent, child);
}

void lw_fork_locks_register(const lw_fork_row *first) {
    const lw_fork_row *none = NULL;
    atomic_compare_exchange_strong(&first_row, &none, first);
    pthread_once(&once, register_once);
}

void lw_fork_locks_set_attach(const lw_fork_row *row) {
    atomic_store(&attach_row, row);
}
