/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON report (its format is a contract: add fields, never rename) and
 * the short summary printed on stderr. */
#ifndef LW_REPORT_H
#define LW_REPORT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "fmt.h"
#include "path_template.h"

/* The most bytes of call sites a report holds (64 MiB): with the rest, far
 * below what `leakwatch report` reads (1 GiB, 10 million values), whatever
 * LEAKWATCH_REPORT_SITES and LEAKWATCH_MAX_FRAMES say. */
#define LW_REPORT_SITES_BYTES ((off_t)64 << 20)

/* Writes the report as JSON to f. reason: "exit", "dump", "signal", ... */
int lw_report_emit(FILE *f, const char *reason);

/* Writes the report to the LEAKWATCH_REPORT path atomically (temporary file,
 * then rename), one writer at a time; nothing with LEAKWATCH_REPORT=none or
 * /dev/null (then 0 is returned and written is empty). When that fails, says why on stderr and, if
 * fallback is set, writes it under $TMPDIR (or /tmp) instead. The path written is copied to written
 * (may be NULL). Returns 0 when a report was written. */
int lw_report_write(const char *reason, int fallback, char *written, size_t writtenlen);

/* The report to the given path, through the atomic writer (atomic_file.h):
 * LW_AF_WRITTEN, LW_AF_OFF, or LW_AF_FAILED with a reason in why. */
int lw_report_write_path(const char *path, const char *reason, char *why, size_t whylen);

/* 1 when LEAKWATCH_REPORT=none: no report file. */
int lw_report_off(void);
/* The report's path for this process (the template expanded); -1 if too long. */
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

/* The signal that ends the job ("SIGTERM"): written as "end_signal" in a
 * report whose reason is "signal". */
void lw_report_set_end_signal(const char *name);

/* Prints the few-line summary on stderr. */
void lw_report_summary(const char *path_written);

struct lw_site;
/* The site's place to look (where.h), as every output names it:
 * "train.py:27 in train"; "site N" when it has no frame. Symbolises the
 * site's frames (with source lines, like the report). */
void lw_report_site_label(const struct lw_site *site, char *out, size_t n);

/* The run's answer (verdict, rate, onset, out-of-memory projection) from the
 * detector's state, without a place to look (the caller names the site). */
#include "growth.h"
void lw_report_answer(lw_answer *a, const lw_growth_state *g);

#endif
