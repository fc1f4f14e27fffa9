/* SPDX-License-Identifier: Apache-2.0 */
/* Source lines and inlined frames from an addr2line process, one per module,
 * started at report time only (see addr2line.c for why this way).
 *
 * A process answers one address at a time through a socket, so a report asks
 * only for the addresses it writes, each once. Every wait is bounded by a
 * deadline: a slow or hung addr2line costs the report its source lines, never
 * the job its exit. */
#ifndef LW_ADDR2LINE_H
#define LW_ADDR2LINE_H

#include <stdint.h>

typedef struct {
    char *function; /* demangled; NULL when unknown */
    char *file;     /* NULL when unknown */
    int line;       /* 0 when unknown */
} lw_a2l_frame;

typedef struct lw_a2l lw_a2l;

/* The addr2line program to use (binutils' addr2line, else llvm-addr2line,
 * found on PATH), or NULL when there is none. Cached in *cache, which starts
 * NULL and is released with lw_a2l_tool_free. */
const char *lw_a2l_tool(char **cache);
void lw_a2l_tool_free(char *cache);

/* Starts tool for the ELF file at module. NULL when it cannot be started. */
lw_a2l *lw_a2l_open(const char *tool, const char *module);

/* The frames at vaddr (an address as the file numbers it), innermost first:
 * the functions inlined there, then the function the code belongs to. Waits
 * until deadline_ns at most (CLOCK_MONOTONIC). Returns the number of frames
 * stored in *out (free with lw_a2l_frames_free), 0 when none; -1 when the
 * process failed, -2 when it did not answer in time. After a failure it is
 * stopped, and every later query on it fails at once the same way. */
int lw_a2l_query(lw_a2l *a, uint64_t vaddr, uint64_t deadline_ns, lw_a2l_frame **out);
void lw_a2l_frames_free(lw_a2l_frame *f, int n);

/* Stops the process and reaps it. */
void lw_a2l_close(lw_a2l *a);

/* Whether a is still answering (not stopped after a failure or timeout). */
int lw_a2l_alive(const lw_a2l *a);

/* How many addr2line processes this process has started (tests: a report
 * reuses the ones an earlier report started). */
unsigned long lw_a2l_started(void);

/* In a forked child: closes the child's copies of the sockets and pidfds of
 * the processes the parent runs, without stopping them (they are the
 * parent's; it ends them when it closes its own). The lw_a2l objects
 * themselves are forgotten, never used or freed in the child. */
void lw_a2l_forget_after_fork(void);

#endif
