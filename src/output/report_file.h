/* SPDX-License-Identifier: Apache-2.0 */
/* The report's files: where LEAKWATCH_REPORT puts it, written atomically by
 * one writer at a time. */
#ifndef LW_REPORT_FILE_H
#define LW_REPORT_FILE_H

#include <stddef.h>

/* Writes the report to the LEAKWATCH_REPORT path atomically (temporary file,
 * then rename), one writer at a time; nothing with LEAKWATCH_REPORT=none or
 * /dev/null (then 0 is returned and written is empty). When that fails, says why on stderr and, if
 * fallback is set, writes it under $TMPDIR (or /tmp) instead. The path written is copied to written
 * (may be NULL). Returns 0 when a report was written. */
int lw_report_write(const char *reason, int fallback, char *written, size_t writtenlen);

/* The report to the given path, through the atomic writer (atomic_file.h):
 * LW_AF_WRITTEN, LW_AF_OFF, or LW_AF_FAILED with a reason in why. */
int lw_report_write_path(const char *path, const char *reason, char *why, size_t whylen);

/* A snapshot (the control socket's "snapshot PATH") written to path: one
 * writer at a time with the process's own reports, and never over the final
 * report once it is written (a snapshot requested as the job ends, to the
 * report's own path, replaced the exit report: seen under ThreadSanitizer). */
int lw_report_snapshot(const char *path, char *why, size_t whylen);

/* 1 when LEAKWATCH_REPORT=none: no report file. */
int lw_report_off(void);

/* The report's path for this process (the template expanded, then claimed:
 * its own name when another process writes there); -1 if too long. */
int lw_report_path(char *path, size_t n);

/* Removes the temporary files a writer killed mid-write left beside the
 * report and Prometheus paths, for every name their templates give
 * (atomic_file.h). */
void lw_report_cleanup(void);

/* A forked child that uses CUDA itself: a report template without %p then
 * gets the child's pid (run.json -> run.PID.json), not the parent's file. */
void lw_report_forked_child(void);

/* In a forked child, at once: the writers' lock is free, no final report yet. */
void lw_report_after_fork_child(void);

/* At the start of recording: the time from which a report another process
 * writes at this process's path is a sibling's, which this process does not
 * replace (it writes NAME.PID.json instead, said once on stderr). */
void lw_report_claim_start(void);

/* The report's path for this process as written into it: absolute; "" with
 * LEAKWATCH_REPORT=none or a path that cannot be formed. */
void lw_report_final_path(char *path, size_t n);

#endif
