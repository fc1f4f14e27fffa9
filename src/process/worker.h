/* SPDX-License-Identifier: Apache-2.0 */
/* The worker: leakwatch's one background thread in the job. It takes in the
 * steps (analyze/growth.c), closes time intervals when no steps are marked,
 * and is the only caller of output code on a timer: the live warning, the
 * periodic report, the Prometheus file. It also starts the control socket. */
#ifndef LW_WORKER_H
#define LW_WORKER_H

/* Starts the thread once per process (again in a forked child that uses
 * CUDA itself), with a fresh growth state. */
void lw_worker_start(void);

/* At exit (or on an ending signal): waits for a periodic output being
 * written, and writes none after it, so that no temporary file is cut off by
 * the end of the process. */
void lw_worker_quiesce(void);
/* Detach: no more periodic outputs, and the thread ends at its next wake-up
 * (within one interval). lw_worker_start starts a new one. */
void lw_worker_stop(void);
/* fn runs on the worker thread once per interval (attach: objects loaded
 * since the last look get their hooks). NULL: none. */
void lw_worker_set_tick(void (*fn)(void));
/* In a forked child, at once. */
void lw_worker_after_fork_child(void);

#endif
