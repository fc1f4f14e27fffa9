/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_cli.h"
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

const char *lw_cli_exe(void) {
    static char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/leakwatch", lw_build_dir());
    return path;
}

void lw_cli_run(lw_run *r, const char *const *args, const char *const *env) {
    const char *e[64];
    int n = 0;
    static char asan[PATH_MAX + 16];
    const char *rt = getenv("LW_ASAN_RT");
    int own = 0; /* a caller's LD_PRELOAD must then hold the runtime itself */
    for (int i = 0; env && env[i]; i++)
        own |= !strncmp(env[i], "LD_PRELOAD=", 11);
    if (rt && *rt && !own) {
        snprintf(asan, sizeof asan, "LD_PRELOAD=%s", rt);
        e[n++] = asan;
    }
    for (int i = 0; env && env[i] && n < 63; i++)
        e[n++] = env[i];
    e[n] = NULL;
    lw_run_exe(r, 0, lw_cli_exe(), args, e);
}

pid_t lw_spawn(const char *exe, const char *const *args, const char *const *env, int preload,
               const char *out_path) {
    char *argv[LW_EXEC_ARGV], in_sysroot[PATH_MAX + 256];
    lw_exec_argv(exe, args, argv, in_sysroot, sizeof in_sysroot);
    static lw_child_env ce;
    lw_child_env_build(&ce, preload ? LW_PRELOAD_SHIM : LW_PRELOAD_RUNTIME, NULL, env);
    char **envp = ce.envp;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        lw_test_child_signals();
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(o, 1);
        dup2(o, 2);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    return pid;
}

int lw_wait_pid(pid_t pid, int ms, int *status) {
    for (int waited = 0; waited <= ms; waited += 5) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid) return 0;
        usleep(5000);
    }
    return -1;
}

char *lw_slurp_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap *= 2);
            ck_assert_ptr_nonnull(nb);
            buf = nb;
        }
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int lw_wait_for_text(const char *path, const char *text, int ms) {
    for (int waited = 0; waited <= ms; waited += 10) {
        char *s = lw_slurp_file(path);
        int found = strstr(s, text) != NULL;
        free(s);
        if (found) return 1;
        usleep(10000);
    }
    return 0;
}

void lw_write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

void lw_temp_dir(char *out, size_t n) {
    snprintf(out, n, "/tmp/lwcli.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(out));
}

void lw_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX + 256];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            lw_remove_dir(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

const char *lw_find_chromium(void) {
    static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                                        "/usr/bin/google-chrome", NULL};
    for (int i = 0; names[i]; i++)
        if (access(names[i], X_OK) == 0) return names[i];
    return NULL;
}

char *lw_html_in_chromium(const char *chrome, const char *dir, const char *rep) {
    char html[PATH_MAX], dom[PATH_MAX], png[PATH_MAX], cmd[4 * PATH_MAX + 512];
    snprintf(html, sizeof html, "%s/report.html", dir);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(png, sizeof png, "%s/shot.png", dir);
    lw_run r;
    const char *args[] = {"report", "--format", "html", "-o", html, rep, NULL};
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    lw_run_free(&r);
    static const char flags[] =
        "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        "--hide-scrollbars --window-size=1200,900";
    /* One profile folder per browser start: a second start on the first's
     * profile can find it still locked. */
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s %s --user-data-dir=%s/p1 --dump-dom file://%s >%s 2>/dev/null", chrome,
             flags, dir, html, dom);
    ck_assert_msg(system(cmd) == 0, "chromium failed: %s", cmd);
    snprintf(cmd, sizeof cmd,
             "timeout 120 %s %s --user-data-dir=%s/p2 --screenshot=%s file://%s >/dev/null 2>&1",
             chrome, flags, dir, png, html);
    ck_assert_msg(system(cmd) == 0, "chromium screenshot failed: %s", cmd);
    return lw_slurp_file(dom);
}

void lw_keep_screenshot(const char *png) {
    const char *keep = getenv("LW_SCREENSHOT");
    if (!keep || !*keep) return;
    char cmd[2 * PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "cp %s %s", png, keep);
    ck_assert_int_eq(system(cmd), 0);
}
