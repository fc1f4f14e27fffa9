/* SPDX-License-Identifier: Apache-2.0 */
/* A job under a seccomp filter (systemd's SystemCallFilter=, a container's
 * profile, a sandbox of its own) is killed, or refused, by the first system
 * call its filter forbids, and a filter that forbids socket() kills the job
 * at leakwatch's control socket. Under a filter leakwatch therefore keeps to
 * what a CUDA job itself does (memory, files, threads: the CUDA driver starts
 * threads of its own, so a working CUDA job's filter allows them): no
 * socket (the live view), no helper process (addr2line: socketpair, clone,
 * execve) and no getrandom, unless LEAKWATCH_SECCOMP=full. */
#ifndef LW_SANDBOX_H
#define LW_SANDBOX_H

/* The calling thread's seccomp mode: 0 none, 1 strict, 2 filter, -1
 * unknown. From the Seccomp: line of /proc/thread-self/status (open, read,
 * close: calls every CUDA job makes), else prctl(PR_GET_SECCOMP). A filter,
 * once seen on any thread, is remembered for all: it can never be removed. */
int lw_seccomp_mode(void);

/* 1 when leakwatch must open no socket and start no helper process: the
 * process runs under a seccomp filter (looked at again on each call until
 * one is seen: a job may install its filter after leakwatch started) and
 * LEAKWATCH_SECCOMP is not full. */
int lw_sandboxed(void);

#endif
