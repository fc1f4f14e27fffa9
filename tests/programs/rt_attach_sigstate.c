/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose SIGSEGV setup an attach must leave exactly as it was
 * (tests/integration/test_attach.c): MODE "handler" installs a handler and
 * blocks SIGSEGV in the main thread (the thread an attach borrows), "ignore"
 * ignores it, "blocked" only blocks it. It says "ready PID", sleeps until
 * STOP_FILE exists and ends with "done".
 * Usage: rt_attach_sigstate MODE STOP_FILE */
#include "paths.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static void *nothing(void *arg) {
    return arg;
}

static void on_segv(int sig) {
    (void)sig;
    _exit(3);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "handler";
    const char *stop = argc > 2 ? argv[2] : "stop";
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    /* Multi-threaded, as every GPU job is: the C library has installed the
     * handlers of its own (SIGSETXID) that a first thread brings. */
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL);
    pthread_join(t, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (!strcmp(mode, "handler")) sa.sa_handler = on_segv;
    if (!strcmp(mode, "ignore")) sa.sa_handler = SIG_IGN;
    if (strcmp(mode, "blocked") != 0) sigaction(SIGSEGV, &sa, NULL);
    if (strcmp(mode, "ignore") != 0) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGSEGV);
        sigprocmask(SIG_BLOCK, &s, NULL);
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    while (access(stop, F_OK) != 0) {
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("done\n");
    return 0;
}
