/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch's own threads in the job. */
#ifndef LW_THREAD_H
#define LW_THREAD_H

/* Starts fn(NULL) on a detached thread with a 256 KiB stack and every signal
 * blocked: the job's signals must go to the job's own threads, never to
 * ours. 0, or -1 when the thread could not be started. */
int lw_thread_start(void *(*fn)(void *));
/* The same, with fn(arg). */
int lw_thread_start_arg(void *(*fn)(void *), void *arg);

/* The stack size of every thread of ours (the glibc default is 8 MiB of
 * address space, which a job under ulimit -v would miss: issue 43). */
#define LW_THREAD_STACK (256 * 1024)

#endif
