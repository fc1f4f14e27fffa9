/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch — find gradual GPU memory leaks. Public API of libleakwatch.so.
 *
 * The library works with no code change (LD_PRELOAD). These functions let a
 * program, or Python through ctypes, mark training steps and ask for a report.
 * Both are safe to call from any thread, at any time, in any process: when the
 * library has seen no CUDA allocation yet they do nothing visible. */
#ifndef LEAKWATCH_H
#define LEAKWATCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* LEAKWATCH_VERSION, the version of these headers ("1.2.3"), generated
 * from the VERSION file by the build. leakwatch_version() gives the loaded
 * library's. */
#include "leakwatch/version.h"

/* Marks the end of one training step. The detector follows the lowest live
 * bytes seen within each step (the floor); call once per step. */
void leakwatch_step(void);

/* Writes the JSON report now (to LEAKWATCH_REPORT) and prints a short summary
 * on stderr. The report is also written at exit. */
void leakwatch_dump(void);

/* 1 when the library is loaded and recording, 0 when it is loaded but
 * disabled (LEAKWATCH_DISABLE=1 or a failed start). */
int leakwatch_enabled(void);

/* The loaded library's version ("1.2.3", from the VERSION file of its
 * sources); the report's "version" is the same. */
const char *leakwatch_version(void);

#ifdef __cplusplus
}
#endif
#endif
