/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread a flood of real-time signals reaches while an
 * attach holds it (tests/integration/test_attach.c; issue 43, item 9: each
 * signal stopped the held thread once more, 347 ms stopped in all). MODE
 * "nanosleep": it sleeps 2 ms at a time; "sigsuspend": it blocks SIGRTMIN
 * and SIGUSR1 and waits in sigsuspend with both unblocked (a temporary mask
 * that the kernel puts back only as it leaves; SIGUSR1 wakes it to look at
 * STOP). It says "ready PID" and waits until the file STOP exists. SIGRTMIN,
 * sent with sigqueue and the values 1, 2, 3...: counted, and those that come
 * out of order (in sigsuspend mode, those still queued at STOP are taken
 * before it ends). It ends with "done, signals N, out of order D, mask kept" (or
 * "mask changed": its own mask is not the one it set).
 * Usage: rt_attach_sigflood MODE STOP */
#include "paths.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static volatile long sig_count, sig_last, sig_disorder;

static void on_rt(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    long v = si->si_value.sival_int;
    if (v != sig_last + 1) sig_disorder++;
    sig_last = v;
    sig_count++;
}

static void on_usr1(int sig) {
    (void)sig;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *mode = argv[1], *stop = argv[2];
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &sa, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t mine, wait_mask;
    sigemptyset(&mine);
    if (!strcmp(mode, "sigsuspend")) {
        sigaddset(&mine, SIGRTMIN);
        sigaddset(&mine, SIGUSR1);
    }
    sigprocmask(SIG_SETMASK, &mine, &wait_mask);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    while (access(stop, F_OK) != 0) {
        if (!strcmp(mode, "sigsuspend")) {
            sigsuspend(&wait_mask);
        } else {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    /* Blocked outside sigsuspend, the signals still queued are taken one
     * sigsuspend each: all of them before the end. */
    sigset_t now;
    while (sigpending(&now) == 0 && sigismember(&now, SIGRTMIN))
        sigsuspend(&wait_mask);
    sigprocmask(SIG_SETMASK, NULL, &now);
    int kept = 1;
    for (int s = 1; s < 65; s++)
        if (s != SIGKILL && s != SIGSTOP && sigismember(&now, s) != sigismember(&mine, s)) kept = 0;
    printf("done, signals %ld, out of order %ld, mask %s\n", sig_count, sig_disorder,
           kept ? "kept" : "changed");
    return 0;
}
