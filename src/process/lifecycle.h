/* SPDX-License-Identifier: Apache-2.0 */
/* Start-up, steps, exit. leakwatch starts lazily, at the first CUDA memory
 * call, so a process that never uses CUDA sees nothing of it. */
#ifndef LW_LIFECYCLE_H
#define LW_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

/* Starts leakwatch if needed. 1: record this event; 0: pass through (disabled,
 * failed to start, or a forked child before its own start). */
int lw_started(void);

/* leakwatch attach (src/attach/attach.c), once the hooks are in place: starts
 * recording now. 0: recording; 1: it already was; -1: disabled or failed. */
int lw_lifecycle_attach(void);

/* Detach: ends the worker, writes the final report (its path into path) and
 * passes every call through from then on. 0, or -1 (not attached, or the
 * report could not be written). */
int lw_lifecycle_detach(char *path, size_t n);

/* Registers the fork handlers (fork_locks.h), once per process, with the
 * lifecycle's row first: start_lock taken before a fork, released after it;
 * in the child, released, then the child's own state set (its steps; it
 * reports only if it uses CUDA itself). At the start, or at an attach
 * (src/attach/attach_locks.c), whichever comes first. */
void lw_lifecycle_fork_handlers(void);

/* ---- for the public C API (public_api.c) ---- */

/* The lifecycle's state. LW_DETACHED: attached to a running process, then
 * detached (leakwatch attach --detach): inert, every call passed through,
 * until a new attach. */
enum { LW_NOT_STARTED = 0, LW_RECORDING = 1, LW_OFF = -1, LW_DETACHED = -2 };
int lw_lifecycle_state(void);

/* 1 when this process started recording (not a forked child of one that
 * did, before its own start). */
int lw_lifecycle_recording_here(void);

/* A report now, of a run that goes on (leakwatch_dump); the caller checked
 * that leakwatch records. */
void lw_lifecycle_dump(void);

/* An out-of-memory's report now, with its post-mortem and one line on stderr
 * (anatomy.h); the caller checked lw_lifecycle_recording_here. */
void lw_lifecycle_oom_report(void);

/* The final report, at most once per process, and none in a forked child
 * that never used CUDA itself (the exit handler's; CPython's finalisation
 * calls it too). */
void lw_lifecycle_exit_report(void);

#endif
