/* SPDX-License-Identifier: Apache-2.0 */
/* Integration tests run real programs under the shim, on the CPU stand-ins
 * for the CUDA libraries, and read the report they leave. */
#ifndef LW_HARNESS_H
#define LW_HARNESS_H

#include "json_doc.h"

#include <check.h>

typedef struct {
    int exit_code; /* -1 when killed by a signal */
    int signal;
    char *out;       /* the program's stdout */
    char *err;       /* its stderr */
    lw_json *report; /* NULL when no report was written */
    char dir[256];   /* private folder for this run */
    char report_path[320];
} lw_run;

/* The environment of every child the tests start: ours without LEAKWATCH_*,
 * LD_PRELOAD and LD_LIBRARY_PATH, then the stand-ins' folder on
 * LD_LIBRARY_PATH (unless extra sets its own), LEAKWATCH_REPORT when report is
 * given, and extra ("K=V" strings, NULL-terminated). A sanitizer runtime
 * ($LW_ASAN_RT) always comes first in LD_PRELOAD. */
typedef enum {
    LW_PRELOAD_NONE,       /* no LD_PRELOAD */
    LW_PRELOAD_RUNTIME,    /* only the sanitizer runtime, if any (leakwatch run adds the shim) */
    LW_PRELOAD_SHIM,       /* the shim */
    LW_PRELOAD_SHIM_PROBE, /* the shim, then libnextprobe.so */
} lw_preload;
typedef struct {
    char *envp[512];
    char buf[3][4200];
} lw_child_env;
void lw_child_env_build(lw_child_env *ce, lw_preload preload, const char *report,
                        const char *const *extra);

/* The build folder, absolute ($LW_BUILD, default "build"). */
const char *lw_build_dir(void);

/* Runs $LW_BUILD/tests/programs/PROG ARGS... with LD_PRELOAD set to the shim
 * (when preload), LEAKWATCH_REPORT in a fresh folder, the stand-ins on
 * LD_LIBRARY_PATH, and env ("K=V" strings, NULL-terminated) added. */
void lw_run_prog(lw_run *r, int preload, const char *prog, const char *const *args,
                 const char *const *env);
/* Same, for any executable path (argv[0] = path). */
void lw_run_exe(lw_run *r, int preload, const char *exe, const char *const *args,
                const char *const *env);
void lw_run_free(lw_run *r);
/* The argv that runs exe ARGS... (behind $LW_TEST_EXEC's emulator, if any);
 * buf holds the path, argv has LW_EXEC_ARGV slots. */
#define LW_EXEC_ARGV 80
void lw_exec_argv(const char *exe, const char *const *args, char **argv, char *buf, size_t n);

/* Runs started while this is 0 (the default) fail their test when the report
 * counts stacks that differ from a full unwind (tracker.stack_mismatches;
 * every shim run is made with LEAKWATCH_VERIFY_STACKS=1). Set it only in a
 * test that breaks the stack cache on purpose. */
extern int lw_expect_stack_mismatches;

/* Number at path in the report; fails the test if absent. */
long long lw_rep_int(const lw_run *r, const char *path);
/* The first site (in report order) one of whose frames is the function fn;
 * NULL if none. */
const lw_json *lw_rep_site_named(const lw_run *r, const char *fn);
/* Files in the run's folder other than the ones the harness made. */
int lw_run_stray_files(const lw_run *r);

/* 1 under a sanitizer build (its runtime is preloaded first: $LW_ASAN_RT),
 * where everything runs several times slower and long runs are shortened. */
int lw_sanitized(void);
/* How many times needle occurs in text (not overlapping). */
int lw_count_substr(const char *text, const char *needle);
/* $LW_BUILD/tests/programs/PROG (a static buffer, overwritten by the next call). */
char *lw_program_path(const char *prog);
/* Runs PROG under the shim with the settings in `set` ("K=V", NULL-terminated)
 * applied by env(1), so that they replace the harness's own
 * (LEAKWATCH_REPORT); env as for lw_run_exe. */
void lw_run_set(lw_run *r, const char *const *set, const char *prog, const char *const *args,
                const char *const *env);
/* Files in dir whose names start with prefix and end with suffix. */
int lw_files_matching(const char *dir, const char *prefix, const char *suffix);

#define RUN_OK(r)                                                                                  \
    ck_assert_msg((r)->exit_code == 0, "exit %d signal %d\nstdout: %s\nstderr: %s",                \
                  (r)->exit_code, (r)->signal, (r)->out, (r)->err)

#endif
