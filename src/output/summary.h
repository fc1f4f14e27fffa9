/* SPDX-License-Identifier: Apache-2.0 */
/* The few lines leakwatch prints on stderr at exit, and the run's answer
 * they (and the live warning) start with. */
#ifndef LW_SUMMARY_H
#define LW_SUMMARY_H

#include "fmt.h"
#include "growth.h"

/* The run's answer (verdict, rate, onset, out-of-memory projection) from the
 * detector's state, without a place to look (the caller names the site). */
void lw_report_answer(lw_answer *a, const lw_growth_state *g);

/* Prints the few-line summary on stderr. */
void lw_report_summary(const char *path_written);

#endif
