/* SPDX-License-Identifier: Apache-2.0 */
/* Loading libleakwatch.so into a running process (leakwatch attach): one of
 * its threads, stopped with ptrace while it waits in a system call, calls the
 * target's own dlopen and then leakwatch__attach (src/attach/attach.c); then
 * every register and byte it touched is put back and it goes on with its
 * system call. */
#ifndef LW_INJECT_H
#define LW_INJECT_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    const char *library;  /* absolute path, as the target sees it */
    const char *settings; /* NAME=VALUE lines for the library */
    int wait_ms;          /* how long to wait for a thread at a safe point */
    /* Set (by a signal handler) to give up: at once while no thread is
     * held, else before the next call (a call in progress is finished: the
     * thread cannot be put back in the middle of the job's dlopen). */
    volatile sig_atomic_t *cancel;
    /* results */
    pid_t tid;             /* the thread that made the calls */
    double stop_us;        /* how long that thread was stopped */
    double total_ms;       /* the whole attach */
    int library_rc;        /* leakwatch__attach's answer: 0, 1 (already), -1 */
    char library_msg[512]; /* and its message */
    int signals_requeued;  /* signals that arrived meanwhile, sent again */
    /* Signal-delivery stops of that thread while it was held (each one a
     * round trip through the command); signal numbers left queued for it,
     * held off by its mask meanwhile, that it takes once it runs. */
    int signal_stops;
    int signals_waiting;
} lw_inject;

/* 0: the library is loaded and leakwatch__attach answered (library_rc). -1:
 * nothing was done (or all was undone), err says why in one line. */
int lw_inject_library(lw_inject *q, char *err, size_t errlen);

/* The system call number of a thread from /proc/PID/task/TID/syscall: -1
 * when it is running, -2 when unknown. */
long lw_thread_syscall(pid_t pid, pid_t tid);

#endif
