/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-run signals (end_signals.h says the contract). */
#include "end_signals.h"

#include "thread.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#define END_WAIT_MS 10000

static const int end_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { N_END = sizeof end_signals / sizeof end_signals[0] };
/* The handler and the thread meet on two words of memory, through futexes,
 * not descriptors: a job that closes every descriptor it did not open
 * (close_range, a daemon's clean slate) or reuses their numbers still gets
 * its final report (issue 43), and leakwatch holds no descriptor for it.
 * end_word: 0 while waiting, the signal's number once one came, -1 after a
 * detach (the thread ends). end_ack: 1 once the report is written.
 * end_gen: the thread that serves; an older one (before a detach and a new
 * attach) leaves when it wakes. */
static atomic_int end_word, end_ack;
static atomic_uint end_gen;
static volatile pid_t end_pid; /* the process whose thread waits on end_word */
static atomic_int end_taken;
/* What the thread calls: set at start, before the thread exists. */
typedef void (*report_fn)(const char *signal_name);
static _Atomic(report_fn) end_report;

/* The futex calls: system calls only, so safe in a signal handler. A
 * process-private futex: the words are this process's memory. */
static void futex_wait(atomic_int *word, int expected, const struct timespec *rel) {
    syscall(SYS_futex, (int *)word, FUTEX_WAIT_PRIVATE, expected, rel, NULL, 0);
}

static void futex_wake(atomic_int *word) {
    syscall(SYS_futex, (int *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void end_handler(int sig) {
    int saved = errno;
    if (end_pid == getpid() && !atomic_exchange(&end_taken, 1) && atomic_load(&end_word) == 0) {
        atomic_store(&end_word, sig);
        futex_wake(&end_word);
        const struct timespec step = {0, 100 * 1000000L};
        for (int left = END_WAIT_MS; left > 0 && !atomic_load(&end_ack); left -= 100) {
            if (end_pid != getpid()) break;
            futex_wait(&end_ack, 0, &step);
        }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    errno = saved; /* not reached: the default action ends the process */
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "signal";
    }
}

static void *end_thread(void *arg) {
    unsigned gen = (unsigned)(uintptr_t)arg;
    int v;
    for (;;) {
        if (atomic_load(&end_gen) != gen) return NULL; /* a newer thread serves */
        v = atomic_load(&end_word);
        if (v != 0) break;
        futex_wait(&end_word, 0, NULL);
    }
    if (v < 0) return NULL; /* the detach */
    report_fn report = atomic_load(&end_report);
    report(signal_name(v));
    atomic_store(&end_ack, 1);
    futex_wake(&end_ack);
    return NULL;
}

void lw_end_signals_start(void (*report)(const char *signal_name)) {
    /* A forked child gets a thread of its own (the parent's is not in it). */
    end_pid = 0;
    unsigned gen = atomic_fetch_add(&end_gen, 1) + 1;
    atomic_store(&end_taken, 0);
    atomic_store(&end_ack, 0);
    atomic_store(&end_word, 0);
    futex_wake(&end_word); /* an older thread, if any, sees the new generation and leaves */
    atomic_store(&end_report, report);
    int ok = lw_thread_start_arg(end_thread, (void *)(uintptr_t)gen) == 0;
    if (!ok) return; /* no final report on these signals; the job is as without us */
    end_pid = getpid();
    for (int i = 0; i < N_END; i++) {
        struct sigaction cur;
        if (sigaction(end_signals[i], NULL, &cur) != 0) continue;
        if (cur.sa_handler == end_handler) continue; /* inherited across fork */
        if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = end_handler;
        sigfillset(&sa.sa_mask); /* nothing else runs on this thread meanwhile */
        sa.sa_flags = SA_RESTART;
        sigaction(end_signals[i], &sa, NULL);
    }
}

/* The detach: the signals whose handler is still ours get their default
 * action back (the job's dispositions as they were before the attach), and
 * the thread that waited for them ends. */
void lw_end_signals_stop(void) {
    for (int i = 0; i < N_END; i++) {
        struct sigaction cur;
        if (sigaction(end_signals[i], NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
            cur.sa_handler != end_handler)
            continue;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(end_signals[i], &dfl, NULL);
    }
    end_pid = 0;
    int idle = 0;
    if (atomic_compare_exchange_strong(&end_word, &idle, -1)) futex_wake(&end_word);
}
