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
    char *argv[80], in_sysroot[PATH_MAX + 256];
    int ac = lw_test_exec_prefix(exe, argv, 16);
    argv[ac++] = (char *)lw_test_exec_path(exe, in_sysroot, sizeof in_sysroot);
    for (int i = 0; args && args[i] && ac < 79; i++)
        argv[ac++] = (char *)args[i];
    argv[ac] = NULL;
    static lw_child_env ce;
    lw_child_env_build(&ce, preload ? LW_PRELOAD_SHIM : LW_PRELOAD_RUNTIME, NULL, env);
    char **envp = ce.envp;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
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
