/* SPDX-License-Identifier: Apache-2.0 */
/* A job with its own SIGALRM and SIGUSR1 handlers and an interval timer,
 * allocating all the while: it must see every signal it is sent, on its own
 * threads, and leakwatch's threads must block them all.
 *
 *   rt_safety_signals [ROUNDS]
 *
 * Prints "alarms N", "usr1 SENT/GOT", "foreign threads T blocking B"
 * (threads the program did not start, and how many of them block both
 * signals), "handler on foreign thread F". */
#include "safety.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static atomic_long alarms, usr1, foreign_hits;
static pid_t own_tids[2];

static int is_own(pid_t tid) {
    return tid == own_tids[0] || tid == own_tids[1];
}

static void on_signal(int sig) {
    /* Only async-signal-safe work: atomics and gettid. */
    if (!is_own((pid_t)syscall(SYS_gettid))) atomic_fetch_add(&foreign_hits, 1);
    atomic_fetch_add(sig == SIGALRM ? &alarms : &usr1, 1);
}

static atomic_int stop;
static long sent;

static void *sender(void *arg) {
    (void)arg;
    /* Started with both signals blocked: only main (or, wrongly, a thread
     * of leakwatch's) can take them. */
    own_tids[1] = (pid_t)syscall(SYS_gettid);
    while (!atomic_load(&stop)) {
        kill(getpid(), SIGUSR1);
        sent++;
        usleep(200);
    }
    return NULL;
}

/* Threads not started by this program (leakwatch's), and how many of them
 * block both signals. */
static void foreign_threads(int *n, int *blocking) {
    *n = *blocking = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || is_own(tid)) continue;
        (*n)++;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f)) {
            unsigned long long mask;
            if (sscanf(line, "SigBlk: %llx", &mask) == 1) {
                unsigned long long want = (1ull << (SIGUSR1 - 1)) | (1ull << (SIGALRM - 1));
                if ((mask & want) == want) (*blocking)++;
            }
        }
        if (f) fclose(f);
    }
    if (d) closedir(d);
}

int main(int argc, char **argv) {
    long rounds = arg_long(argc, argv, 1, 20000);
    own_tids[0] = (pid_t)syscall(SYS_gettid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    /* The sender starts with both signals blocked (it must never run the
     * handler); main takes them again once it runs. */
    sigset_t both, old;
    sigemptyset(&both);
    sigaddset(&both, SIGUSR1);
    sigaddset(&both, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &both, &old);
    pthread_t t;
    pthread_create(&t, NULL, sender, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (long r = 0; r < rounds; r++) {
        void *p;
        CHECK(cudaMalloc(&p, 4096));
        CHECK(cudaFree(p));
        if (r % 1000 == 0) usleep(1000); /* sleeps cut short by signals */
    }
    void *kept;
    CHECK(cudaMalloc(&kept, 8192));
    int n, blocking;
    foreign_threads(&n, &blocking);
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    usleep(20000); /* signals in flight arrive */
    printf("alarms %s\n", atomic_load(&alarms) > 0 ? "some" : "none");
    printf("usr1 %s\n", atomic_load(&usr1) > 0 && atomic_load(&usr1) <= sent ? "ok" : "lost");
    printf("foreign threads %s\n", n == blocking ? "all block" : "some do not block");
    printf("handler on foreign thread %ld\n", atomic_load(&foreign_hits));
    return 0;
}
