/* SPDX-License-Identifier: Apache-2.0 */
/* The few lines leakwatch prints on stderr at exit, and the run's answer
 * they (and the live warning) start with. */
#ifndef LW_SUMMARY_H
#define LW_SUMMARY_H

#include "answer.h"

/* Prints the few-line summary on stderr, rendered from r (the answer of the
 * report written at exit, else the state now). */
void lw_report_summary(const lw_run_answer *r, const char *path_written);

#endif
