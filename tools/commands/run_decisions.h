/* SPDX-License-Identifier: Apache-2.0 */
/* The decisions of 'leakwatch run', apart from process handling so tests can
 * call them directly: which settings exist and what values they accept, where
 * the library is, how LD_PRELOAD is composed, what status to exit with. */
#ifndef LW_RUN_DECISIONS_H
#define LW_RUN_DECISIONS_H

#include "model.h"

#include <stddef.h>

/* The canonical variable for a setting name: "LEAKWATCH_MAX_SITES",
 * "max_sites" and "MAX-SITES" all give "LEAKWATCH_MAX_SITES". NULL when no
 * such setting exists in the library's options table. */
const char *lw_run_setting_name(const char *name);
/* Comma-separated list of known setting names, for messages. */
void lw_run_known_settings(char *out, size_t n);

/* 0 when value is valid for the variable name; else -1 and a reason naming
 * the accepted values. Settings in the library's options table are checked by
 * lw_option_parse, so the command and the library always agree. */
int lw_run_check_setting(const char *name, const char *value, char *err, size_t errlen);

/* 1 when LEAKWATCH_QUIET in our environment asks for quiet. */
int lw_run_quiet_env(void);

/* The libleakwatch.so that belongs to this command: override (made absolute)
 * when given, else beside the executable (the build folder, the Python
 * package's _bin), else in ../lib or ../lib64 (make install). 0, or -1 with a
 * message in err, also when the path has a space or colon (LD_PRELOAD would
 * split it). */
int lw_run_find_library(const char *override, char *out, size_t n, char *err, size_t errlen);

/* 0 when path is a 64-bit ELF shared library for this architecture (what
 * the dynamic loader can preload into this machine's programs); else -1 and
 * one line naming the problem and the fix. lw_run_find_library calls it. */
int lw_run_check_library(const char *path, char *err, size_t errlen);

/* Starts a program of ours with lib preloaded (after the sanitizer runtimes
 * of existing, as the job will have them) and reads what the dynamic loader
 * says: 0 when it loads; -1 with one line naming the loader's reason when it
 * does not (a missing dependency, a too-old C library, an object the loader
 * ignores); 1 when it could not be told (no /proc, the probe hung). */
int lw_run_probe_preload(const char *lib, const char *existing, char *err, size_t errlen);

/* The folder of this installation's CPU stand-ins for libcuda.so.1 and
 * libcudart.so (leakwatch run --cuda-stand-ins): build/tests/lib beside the
 * command in the build folder, stand-ins/ beside it in the Python package,
 * ../lib/leakwatch/stand-ins after make install. 0, or -1 with a message. */
int lw_run_find_stand_ins(char *out, size_t n, char *err, size_t errlen);

/* dir in front of an existing LD_LIBRARY_PATH (NULL or empty: dir alone).
 * Malloc'd; NULL when out of memory. */
char *lw_run_library_path(const char *dir, const char *existing);

/* The new LD_PRELOAD: lib first, except that sanitizer runtimes already in
 * existing stay in front (they must be loaded first); lib is not added twice.
 * Malloc'd; NULL when out of memory. */
char *lw_run_preload(const char *lib, const char *existing);

/* A wait status as a shell reports it: the exit code, or 128 + signal. */
int lw_run_exit_code(int wait_status);

/* The --fail-on-leak decision for one report: 1 when its verdict is leak. */
int lw_run_decide(const lw_model *m);

/* The CI gate (--fail-on-leak) for one report: LW_EXIT_LEAK when its verdict
 * is leak; LW_EXIT_INCONCLUSIVE when it is inconclusive and the user did not
 * accept that (--allow-inconclusive): a run too short to decide must not pass
 * as clean; else LW_EXIT_OK. */
int lw_run_gate(const lw_model *m, int allow_inconclusive);

/* Two gate results together (each LW_EXIT_OK, LW_EXIT_LEAK,
 * LW_EXIT_INCONCLUSIVE, or -1 for an unreadable report): -1 wins, then a
 * leak, then inconclusive. */
int lw_run_gate_join(int a, int b);

#endif
