/* SPDX-License-Identifier: Apache-2.0 */
#include "harness.h"
#include "../test_exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *lw_build_dir(void) {
    static char path[PATH_MAX];
    if (!path[0]) {
        const char *b = getenv("LW_BUILD");
        if (!b || !*b) b = "build";
        if (!realpath(b, path)) snprintf(path, sizeof path, "%s", b);
    }
    return path;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

void lw_child_env_build(lw_child_env *ce, lw_preload preload, const char *report,
                        const char *const *extra) {
    int ec = 0;
    for (char **e = environ; *e && ec < 480; e++)
        if (strncmp(*e, "LEAKWATCH_", 10) && strncmp(*e, "LD_PRELOAD=", 11) &&
            strncmp(*e, "LD_LIBRARY_PATH=", 16))
            ce->envp[ec++] = *e;
    const char *rt = getenv("LW_ASAN_RT");
    int has_rt = rt && *rt;
    if (preload == LW_PRELOAD_SHIM || preload == LW_PRELOAD_SHIM_PROBE) {
        snprintf(ce->buf[0], sizeof ce->buf[0], "LD_PRELOAD=%s%s%s/libleakwatch.so%s",
                 has_rt ? rt : "", has_rt ? " " : "", lw_build_dir(),
                 preload == LW_PRELOAD_SHIM_PROBE ? " libnextprobe.so" : "");
        ce->envp[ec++] = ce->buf[0];
    } else if (preload == LW_PRELOAD_RUNTIME) {
        snprintf(ce->buf[0], sizeof ce->buf[0], "LD_PRELOAD=%s", has_rt ? rt : "");
        ce->envp[ec++] = ce->buf[0];
    }
    if (report) {
        snprintf(ce->buf[1], sizeof ce->buf[1], "LEAKWATCH_REPORT=%s", report);
        ce->envp[ec++] = ce->buf[1];
    }
    int own_path = 0;
    for (int i = 0; extra && extra[i]; i++)
        own_path |= !strncmp(extra[i], "LD_LIBRARY_PATH=", 16);
    snprintf(ce->buf[2], sizeof ce->buf[2], "LD_LIBRARY_PATH=%s/tests/lib", lw_build_dir());
    if (!own_path) ce->envp[ec++] = ce->buf[2];
    ce->envp[ec++] = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0";
    /* Every stack the shim records in the tests is checked against a full
     * unwind (lw_run_exe requires zero differences), unless a test sets its
     * own value. */
    int own_verify = 0;
    for (int i = 0; extra && extra[i]; i++)
        own_verify |= !strncmp(extra[i], "LEAKWATCH_VERIFY_STACKS=", 24);
    if (preload != LW_PRELOAD_NONE && !own_verify) ce->envp[ec++] = "LEAKWATCH_VERIFY_STACKS=1";
    for (int i = 0; extra && extra[i] && ec < 510; i++)
        ce->envp[ec++] = (char *)extra[i];
    ce->envp[ec] = NULL;
}

int lw_expect_stack_mismatches;

void lw_exec_argv(const char *exe, const char *const *args, char **argv, char *buf, size_t n) {
    int ac = lw_test_exec_prefix(exe, argv, 16);
    argv[ac++] = (char *)lw_test_exec_path(exe, buf, n);
    for (int i = 0; args && args[i] && ac < LW_EXEC_ARGV - 1; i++)
        argv[ac++] = (char *)args[i];
    argv[ac] = NULL;
}

void lw_run_exe(lw_run *r, int preload, const char *exe, const char *const *args,
                const char *const *env) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/lwtest.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
    snprintf(r->report_path, sizeof r->report_path, "%s/report.json", r->dir);

    char *argv[LW_EXEC_ARGV], in_sysroot[PATH_MAX + 256];
    lw_exec_argv(exe, args, argv, in_sysroot, sizeof in_sysroot);

    static lw_child_env ce;
    lw_child_env_build(&ce,
                       preload == 2 ? LW_PRELOAD_SHIM_PROBE
                       : preload    ? LW_PRELOAD_SHIM
                                    : LW_PRELOAD_NONE,
                       r->report_path, env);
    char **envp = ce.envp;

    char out_path[300], err_path[300];
    snprintf(out_path, sizeof out_path, "%s/.stdout", r->dir);
    snprintf(err_path, sizeof err_path, "%s/.stderr", r->dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        lw_test_child_signals();
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(o, 1);
        dup2(e, 2);
        if (chdir(r->dir) != 0) _exit(126);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    /* A hung child must fail the test, not hang the suite. */
    int status = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 120 * (long)lw_test_time_scale()) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(2000);
    }
    if (WIFEXITED(status)) {
        r->exit_code = WEXITSTATUS(status);
    } else {
        r->exit_code = -1;
        r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    r->out = slurp(out_path);
    r->err = slurp(err_path);
    if (access(r->report_path, F_OK) == 0) {
        char err[256];
        r->report = lw_json_parse_file(r->report_path, NULL, err, sizeof err);
        ck_assert_msg(r->report != NULL, "report does not parse: %s", err);
        long long mismatches = 0;
        if (!lw_expect_stack_mismatches &&
            lw_json_int64(lw_json_path(r->report, "tracker.stack_mismatches"), &mismatches) == 0)
            ck_assert_msg(mismatches == 0,
                          "%s: %lld recorded stacks differ from a full unwind "
                          "(LEAKWATCH_VERIFY_STACKS)\nstderr: %s",
                          exe, mismatches, r->err);
    }
}

void lw_run_prog(lw_run *r, int preload, const char *prog, const char *const *args,
                 const char *const *env) {
    char exe[PATH_MAX + 256];
    snprintf(exe, sizeof exe, "%s/tests/programs/%s", lw_build_dir(), prog);
    lw_run_exe(r, preload, exe, args, env);
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX + 256];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

void lw_run_free(lw_run *r) {
    free(r->out);
    free(r->err);
    lw_json_free(r->report);
    remove_tree(r->dir);
    memset(r, 0, sizeof *r);
}

int lw_run_stray_files(const lw_run *r) {
    int n = 0;
    DIR *d = opendir(r->dir);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".stdout") &&
            strcmp(e->d_name, ".stderr"))
            n++;
    closedir(d);
    return n;
}

long long lw_rep_int(const lw_run *r, const char *path) {
    ck_assert_msg(r->report != NULL, "no report written; stderr: %s", r->err);
    long long v = 0;
    ck_assert_msg(lw_json_int64(lw_json_path(r->report, path), &v) == 0, "no integer at %s", path);
    return v;
}

const lw_json *lw_rep_site_named(const lw_run *r, const char *fn) {
    if (!r->report) return NULL;
    const lw_json *sites = lw_json_get(r->report, "sites");
    for (size_t i = 0; i < lw_json_len(sites); i++) {
        const lw_json *frames = lw_json_get(lw_json_at(sites, i), "frames");
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const char *f = lw_json_string(lw_json_get(lw_json_at(frames, j), "function"));
            if (f && !strcmp(f, fn)) return lw_json_at(sites, i);
        }
    }
    return NULL;
}

int lw_sanitized(void) {
    const char *rt = getenv("LW_ASAN_RT");
    return rt && *rt;
}

int lw_count_substr(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

char *lw_program_path(const char *prog) {
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/tests/programs/%s", lw_build_dir(), prog);
    return path;
}

void lw_run_set(lw_run *r, const char *const *set, const char *prog, const char *const *args,
                const char *const *env) {
    const char *argv[64];
    int n = 0;
    for (int i = 0; set && set[i] && n < 40; i++)
        argv[n++] = set[i];
    argv[n++] = lw_program_path(prog);
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    lw_run_exe(r, 1, "/usr/bin/env", argv, env);
}

int lw_files_matching(const char *dir, const char *prefix, const char *suffix) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        n += !strncmp(e->d_name, prefix, strlen(prefix)) && l >= s &&
             !strcmp(e->d_name + l - s, suffix);
    }
    if (d) closedir(d);
    return n;
}
