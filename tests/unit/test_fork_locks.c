/* SPDX-License-Identifier: Apache-2.0 */
/* The fork-handler registry (src/process/fork_locks.c): one table, taken
 * forward before a fork and released backward after it; the first row is the
 * one handed in at registration (the lifecycle's start_lock; here a lock of
 * the test's, of the same rank), the attach layer's row is the last, taken
 * while the first is held; handlers registered once however often they are
 * asked for; a row set during a fork is not released by it (it was not
 * taken). */
#include "fork_locks.h"
#include "lock_order.h"

#include "../check_run.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first row: a lock of start_lock's rank, its rank recorded in every
 * build (lock_order.c records what it is told; the library's own locks tell
 * it in debug builds only). seq numbers the handlers' calls in the order
 * they ran. */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static int seq, first_prepared_at, first_parented_at, row_prepared_at, row_parented_at;
static void first_prepare(void) {
    lw_lock_order_take(LW_RANK_START);
    pthread_mutex_lock(&first_lock);
    first_prepared_at = ++seq;
}
static void first_parent(void) {
    first_parented_at = ++seq;
    pthread_mutex_unlock(&first_lock);
    lw_lock_order_drop(LW_RANK_START);
}
static const lw_fork_row first = {first_prepare, first_parent, NULL};
/* Handed in by a later registration: never used. */
static void never(void) {
    abort();
}
static const lw_fork_row other = {never, never, never};

static int prepared, parented, childed;
static int late_prepared, late_parented, late_childed;
static unsigned held_at_prepare, held_at_parent;

static void late_prepare(void) {
    late_prepared++;
}
static void late_parent(void) {
    late_parented++;
}
static void late_child(void) {
    late_childed++;
}
static const lw_fork_row late = {late_prepare, late_parent, late_child};

/* The attach row of the first fork: while it is taken, an attach sets
 * another row (late), which that fork must not release. */
static void row_prepare(void) {
    prepared++;
    row_prepared_at = ++seq;
    held_at_prepare = lw_lock_order_held();
    lw_fork_locks_set_attach(&late);
}
static void row_parent(void) {
    parented++;
    row_parented_at = ++seq;
    held_at_parent = lw_lock_order_held();
}
static void row_child(void) {
    childed++;
}
static const lw_fork_row row = {row_prepare, row_parent, row_child};

/* fork, and the child's exit status: 0 when check() held in the child. */
static int fork_and_wait(int (*check)(void)) {
    pid_t pid = fork();
    if (pid == 0) _exit(check() ? 0 : 1);
    int status = -1;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + status;
}

static int first_child(void) {
    /* The child released what prepare took: the attach row, by its child
     * handler, and the first row's lock, by its parent handler (it has no
     * child handler): no rank held. */
    return prepared == 1 && childed == 1 && parented == 0 && late_childed == 0 &&
           late_prepared == 0 && lw_lock_order_held() == 0;
}

static int second_child(void) {
    return late_prepared == 1 && late_childed == 1 && late_parented == 0 && prepared == 1;
}

START_TEST(one_table_forward_then_backward) {
    lw_fork_locks_set_attach(&row);
    lw_fork_locks_register(&first);
    lw_fork_locks_register(&other); /* a second start or attach: still one set, the first row */

    ck_assert_int_eq(fork_and_wait(first_child), 0);
    ck_assert_int_eq(prepared, 1);
    ck_assert_int_eq(parented, 1);
    ck_assert_int_eq(childed, 0);
    /* The first row is taken first and released last. */
    ck_assert_int_eq(first_prepared_at, 1);
    ck_assert_int_eq(row_prepared_at, 2);
    ck_assert_int_eq(row_parented_at, seq - 1);
    ck_assert_int_eq(first_parented_at, seq);
    /* Set during the fork: neither taken nor released by it. */
    ck_assert_int_eq(late_prepared, 0);
    ck_assert_int_eq(late_parented, 0);
    /* The attach row runs inside the first row's lock: taken after it,
     * released before it. */
    ck_assert_uint_eq(held_at_prepare, 1u << LW_RANK_START);
    ck_assert_uint_eq(held_at_parent, 1u << LW_RANK_START);
    ck_assert_uint_eq(lw_lock_order_held(), 0);

    /* The next fork takes the row set since. */
    ck_assert_int_eq(fork_and_wait(second_child), 0);
    ck_assert_int_eq(late_prepared, 1);
    ck_assert_int_eq(late_parented, 1);
    ck_assert_int_eq(prepared, 1);
    ck_assert_int_eq(parented, 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fork_locks");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, one_table_forward_then_backward);
    suite_add_tcase(s, tc);
    return lw_check_run(s);
}
