/* SPDX-License-Identifier: Apache-2.0 */
/* The lock-order check of debug and sanitizer builds (src/base/lock_order.c):
 * an inversion aborts with a message; the documented orders pass. */
#include "lock_order.h"

#include "../check_run.h"

#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_s = PTHREAD_MUTEX_INITIALIZER,
                       lock_p = PTHREAD_MUTEX_INITIALIZER;

static void take(pthread_mutex_t *m, int rank) {
    lw_lock_order_take(rank);
    pthread_mutex_lock(m);
}

static void drop(pthread_mutex_t *m, int rank) {
    pthread_mutex_unlock(m);
    lw_lock_order_drop(rank);
}

/* Runs fn in a forked child with its stderr in text: the child's wait
 * status. */
static int in_child(void (*fn)(void), char *text, size_t n) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fds[0], text + got, n - 1 - got)) > 0)
        got += (size_t)r;
    text[got] = '\0';
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void patch_then_start(void) {
    take(&lock_p, LW_RANK_PATCH);
    take(&lock_s, LW_RANK_START); /* the inversion of issue 32 */
}

static void start_twice(void) {
    take(&lock_s, LW_RANK_START);
    take(&lock_s, LW_RANK_START);
}

static void start_then_attach(void) {
    take(&lock_s, LW_RANK_START);
    take(&lock_a, LW_RANK_ATTACH);
}

START_TEST(lock_taken_out_of_order_aborts) {
    static const struct {
        void (*fn)(void);
        const char *want;
    } cases[] = {
        {patch_then_start, "lock order violated: taking start_lock while holding patch_lock"},
        {start_twice, "lock order violated: taking start_lock while holding start_lock"},
        {start_then_attach, "lock order violated: taking attach_lock while holding start_lock"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        int status = in_child(cases[i].fn, text, sizeof text);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                      "case %zu: status 0x%x, stderr: %s", i, status, text);
        ck_assert_msg(strstr(text, cases[i].want), "case %zu: stderr: %s", i, text);
    }
}
END_TEST

/* The order of attach (attach_lock, start_lock, then patch_lock after
 * start_lock's release) and of the fork handlers (start_lock, patch_lock;
 * released in any order; in the child patch_lock is made new). */
static void in_order(void) {
    take(&lock_a, LW_RANK_ATTACH);
    take(&lock_s, LW_RANK_START);
    drop(&lock_s, LW_RANK_START);
    take(&lock_p, LW_RANK_PATCH);
    drop(&lock_p, LW_RANK_PATCH);
    drop(&lock_a, LW_RANK_ATTACH);
    take(&lock_s, LW_RANK_START);
    take(&lock_p, LW_RANK_PATCH);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_init(&lock_p, NULL);
        lw_lock_order_drop(LW_RANK_PATCH);
        drop(&lock_s, LW_RANK_START);
        take(&lock_a, LW_RANK_ATTACH);
        drop(&lock_a, LW_RANK_ATTACH);
        _exit(lw_lock_order_held() == 0 ? 0 : 3);
    }
    drop(&lock_s, LW_RANK_START); /* the parent's handlers: start_lock first */
    drop(&lock_p, LW_RANK_PATCH);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        _exit(4);
    _exit(lw_lock_order_held() == 0 ? 0 : 5);
}

START_TEST(locks_taken_in_order_pass) {
    char text[512];
    int status = in_child(in_order, text, sizeof text);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x, stderr: %s", status,
                  text);
    ck_assert_str_eq(text, "");
}
END_TEST

int main(void) {
    Suite *s = suite_create("lock_order");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, lock_taken_out_of_order_aborts);
    tcase_add_test(tc, locks_taken_in_order_pass);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
