/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON report: emitted to a stream (its format is a contract: add
 * fields, never rename; docs/report-fields.md lists them). report_file.h
 * writes it to files, summary.h prints the exit summary. */
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

/* Writes the report as JSON to f. reason: "exit", "dump", "signal", ...;
 * report_path: where this process writes its final report
 * (lw_report_final_path, report_file.h), or NULL. The report's files call
 * this, never the other way round. */
int lw_report_emit(FILE *f, const char *reason, const char *report_path);

/* The signal that ends the job ("SIGTERM"): written as "end_signal" in a
 * report whose reason is "signal". */
void lw_report_set_end_signal(const char *name);

/* This process's session was started by leakwatch attach: a report that saw
 * no allocation since says "nothing_seen", never a verdict on growth. */
void lw_report_set_attached(int attached);

#endif
