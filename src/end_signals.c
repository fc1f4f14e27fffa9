/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-run signals (end_signals.h says the contract). */
#include "end_signals.h"

#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#define END_WAIT_MS 10000

static const int end_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { N_END = sizeof end_signals / sizeof end_signals[0] };
static int end_pipe[2] = {-1, -1}, ack_pipe[2] = {-1, -1};
static struct stat end_id[2][2]; /* the pipes' device and inode */
static volatile pid_t end_pid;   /* the process whose thread reads end_pipe */
static atomic_int end_taken;
/* What the thread calls: set at start, before the thread exists. */
typedef void (*report_fn)(const char *signal_name);
static _Atomic(report_fn) end_report;

static int fd_is(int fd, const struct stat *id) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == id->st_dev && st.st_ino == id->st_ino;
}

static void end_handler(int sig) {
    int saved = errno;
    if (end_pid == getpid() && !atomic_exchange(&end_taken, 1) &&
        fd_is(end_pipe[1], &end_id[0][1]) && fd_is(ack_pipe[0], &end_id[1][0])) {
        unsigned char c = (unsigned char)sig;
        if (write(end_pipe[1], &c, 1) == 1) {
            struct pollfd p = {ack_pipe[0], POLLIN, 0};
            int left = END_WAIT_MS;
            while (left > 0) {
                int r = poll(&p, 1, 100);
                if (r != 0 || end_pid != getpid()) break;
                left -= 100;
            }
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
    (void)arg;
    unsigned char c;
    ssize_t r;
    do
        r = read(end_pipe[0], &c, 1);
    while (r < 0 && errno == EINTR);
    report_fn report = atomic_load(&end_report);
    if (r == 1) report(signal_name(c));
    c = 1;
    if (fd_is(ack_pipe[1], &end_id[1][1]) && write(ack_pipe[1], &c, 1) < 0) {
        /* the handler then waits its full time */
    }
    return NULL;
}

void lw_end_signals_start(void (*report)(const char *signal_name)) {
    /* A forked child gets pipes and a thread of its own; the parent's
     * descriptors, inherited, are closed where they are still the pipes. */
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            int *fd = i ? &ack_pipe[k] : &end_pipe[k];
            if (fd_is(*fd, &end_id[i][k])) close(*fd);
            *fd = -1;
        }
    end_pid = 0;
    atomic_store(&end_taken, 0);
    atomic_store(&end_report, report);
    if (pipe2(end_pipe, O_CLOEXEC) != 0) return;
    if (pipe2(ack_pipe, O_CLOEXEC) != 0) {
        close(end_pipe[0]), close(end_pipe[1]);
        end_pipe[0] = end_pipe[1] = -1;
        return;
    }
    for (int k = 0; k < 2; k++) {
        fstat(end_pipe[k], &end_id[0][k]);
        fstat(ack_pipe[k], &end_id[1][k]);
    }
    int ok = lw_thread_start(end_thread) == 0;
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
 * the thread that waited for them ends (its pipe's write end closed: end of
 * file). */
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
    if (fd_is(end_pipe[1], &end_id[0][1])) close(end_pipe[1]);
    end_pipe[1] = -1;
}
