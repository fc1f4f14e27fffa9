/* SPDX-License-Identifier: Apache-2.0 */
/* Live watching: one Unix-domain socket per watched process, served by one
 * thread, through which 'leakwatch top', 'ps' and 'snapshot' ask for the
 * report while the program runs.
 *
 * Where: $XDG_RUNTIME_DIR/leakwatch/PID.sock, else /tmp/leakwatch-UID/PID.sock.
 * The folder must be ours and mode 0700 (created so when missing); the
 * socket is 0600 and each peer's uid is checked (same user, or root).
 *
 * Protocol: the client sends one line, the server answers and closes.
 *   "ping\n"          -> "ok leakwatch VERSION PID\n"
 *   "stats\n"         -> "ok\n" + one line of JSON: live/peak bytes, counts, verdict
 *   "report\n"        -> "ok\n" + the full JSON report
 *   "snapshot PATH\n" -> the report written to PATH (absolute), then "ok PATH\n"
 *   "detach\n"        -> (attached processes) the hooks removed, the final report
 *                        written, "ok\nPATH\n"; the socket then goes away
 *   anything else     -> "error MESSAGE\n" */
#ifndef LW_CONTROL_H
#define LW_CONTROL_H

#include "control_path.h"

#include <stddef.h>

/* Starts serving (idempotent; safe after fork, where it starts afresh for the
 * child). Call once the process has started recording (it uses CUDA). */
void lw_control_start(void);
/* Stops the thread and removes the socket. Called at exit by an atexit
 * handler of its own; calling it earlier is fine. */
void lw_control_stop(void);
/* Makes "detach" available (leakwatch attach): fn undoes the attach and
 * writes the final report; 0 with the report's path in msg, or -1 with a
 * reason. Runs on the serving thread. */
void lw_control_set_detach(int (*fn)(char *msg, size_t n));
/* 1 while this process serves its socket. */
int lw_control_serving(void);

#endif
