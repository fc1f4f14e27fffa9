/* SPDX-License-Identifier: Apache-2.0 */
/* Metrics for Prometheus, in the text exposition format, for node exporter's
 * textfile collector (--collector.textfile.directory): the sampler writes the
 * file every interval, so dashboards and alerts see leaks as they grow. */
#ifndef LW_PROMETHEUS_H
#define LW_PROMETHEUS_H

/* Writes the metrics to path atomically (temporary file beside it whose name
 * does not end in .prom, then rename). %p, %h and %% in path are expanded as
 * in LEAKWATCH_REPORT. Returns 0, or -1 with errno set; says nothing itself
 * (the caller decides how often to complain). */
int lw_prometheus_write(const char *path);

/* The same with the growth metrics, verdict and place from r (answer.h: the
 * exit's answer, the one its report and summary give); r NULL: the state now. */
#include "answer.h"
int lw_prometheus_write_answer(const char *path, const lw_run_answer *r);

#endif
