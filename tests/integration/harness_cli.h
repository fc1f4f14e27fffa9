/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the tests of the leakwatch command: running it, running
 * programs in the background, waiting for them. */
#ifndef LW_HARNESS_CLI_H
#define LW_HARNESS_CLI_H

#include "harness.h"

#include <sys/types.h>

/* $LW_BUILD/leakwatch */
const char *lw_cli_exe(void);

/* Runs leakwatch ARGS... as lw_run_exe does (report path in a fresh folder,
 * stand-ins on LD_LIBRARY_PATH), adding the sanitizer runtime to LD_PRELOAD
 * under the sanitizer build so that the jobs it starts can load the shim
 * (unless env has an LD_PRELOAD of its own, which must then include it). */
void lw_cli_run(lw_run *r, const char *const *args, const char *const *env);

/* Starts exe ARGS... in the background with env added to ours (and the
 * stand-ins on LD_LIBRARY_PATH); its stdout and stderr go to out_path.
 * preload: 1 puts the shim (and the sanitizer runtime) in LD_PRELOAD. */
pid_t lw_spawn(const char *exe, const char *const *args, const char *const *env, int preload,
               const char *out_path);

/* Waits up to ms for pid; 0 and *status, or -1 (still running). */
int lw_wait_pid(pid_t pid, int ms, int *status);
/* Waits up to ms until the file holds text; 1 when it does. */
int lw_wait_for_text(const char *path, const char *text, int ms);

/* Whole file, NUL-terminated (malloc'd); "" when unreadable. */
char *lw_slurp_file(const char *path);
void lw_write_text(const char *path, const char *text);

/* A fresh private folder under /tmp (mode 0700); the caller removes it. */
void lw_temp_dir(char *out, size_t n);
void lw_remove_dir(const char *dir);

/* A headless Chromium (or Chrome) on this machine; NULL when none. */
const char *lw_find_chromium(void);
/* The HTML page of the report at rep (leakwatch report --format html) in
 * dir/report.html, opened by chrome at 1200x900: returns the DOM it built
 * (malloc'd) and writes its screenshot to dir/shot.png. The test fails if a
 * step fails. */
char *lw_html_in_chromium(const char *chrome, const char *dir, const char *rep);
/* Copies the screenshot to $LW_SCREENSHOT when set (for the README). */
void lw_keep_screenshot(const char *png);

#endif
