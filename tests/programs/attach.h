/* SPDX-License-Identifier: Apache-2.0 */
/* The loop of the *_attach programs, jobs started without leakwatch that
 * leakwatch attach joins while they run (tests/integration/test_attach.c):
 *   PROG STEPS STEP_MS GO_FILE [SIZE]
 * Each says "ready PID", waits until GO_FILE exists ("-": at once), then makes
 * STEPS steps of STEP_MS, each keeping SIZE bytes (leak_attach_*) and
 * allocating and freeing as much more, and ends with one line that does not
 * depend on timing: the same with and without an attach. Each step is
 * marked with leakwatch_step when the library is there, looked up each time
 * as a program that may be attached to must (dlsym(RTLD_DEFAULT) finds it
 * after an attach; not after a detach). Real-time signals
 * (SIGRTMIN) are counted, so a test can tell that none was lost.
 * ATTACH_HOLD=N:FILE in the environment: after each N steps the job says
 * "held I" (I steps made) and waits until FILE exists, then removes it and
 * goes on, so that a test can look at it, attach and detach while it surely
 * runs, however slow the machine. */
#ifndef LW_TEST_ATTACH_H
#define LW_TEST_ATTACH_H

#include "paths.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

static atomic_long attach_signals;

static void attach_count(int sig) {
    (void)sig;
    atomic_fetch_add(&attach_signals, 1);
}

static void attach_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static long attach_marked;

static void attach_mark_step(void) {
    void (*fn)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_step");
    if (fn) {
        fn();
        attach_marked++;
    }
}

/* The program's part: one step's allocations (0 when they succeeded). */
static int attach_step(long i, size_t size);

static int attach_main(int argc, char **argv) {
    long steps = arg_long(argc, argv, 1, 100);
    long step_ms = arg_long(argc, argv, 2, 10);
    const char *go = argc > 3 ? argv[3] : "-";
    size_t size = (size_t)arg_long(argc, argv, 4, 1 << 20);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = attach_count;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGRTMIN, &sa, NULL);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    while (strcmp(go, "-") != 0 && access(go, F_OK) != 0)
        attach_sleep_ms(2);
    long failed = 0, hold_at = -1;
    const char *hold = getenv("ATTACH_HOLD"), *resume = NULL;
    if (hold && strchr(hold, ':')) {
        hold_at = strtol(hold, NULL, 10);
        resume = strchr(hold, ':') + 1;
    }
    for (long i = 0; i < steps; i++) {
        if (hold_at > 0 && i > 0 && i % hold_at == 0) {
            printf("held %ld\n", i);
            fflush(stdout);
            while (access(resume, F_OK) != 0)
                attach_sleep_ms(2);
            unlink(resume);
        }
        if (attach_step(i, size) != 0) failed++;
        attach_mark_step();
        attach_sleep_ms(step_ms);
    }
    printf("done %ld steps, %ld failed, %zu bytes kept per step, signals %ld\n", steps, failed,
           size, (long)atomic_load(&attach_signals));
    /* Depends on the attach (stderr): steps that found leakwatch_step. */
    fprintf(stderr, "steps marked: %ld\n", attach_marked);
    return 0;
}

#endif
