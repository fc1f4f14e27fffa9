/* SPDX-License-Identifier: Apache-2.0 */
/* How the tests start programs: directly, or through the command in
 * $LW_TEST_EXEC (an emulator: see lw_test_exec_prefix). */
#ifndef LW_TEST_EXEC_H
#define LW_TEST_EXEC_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* LW_TEST_EXEC: a command, split at spaces, that runs the programs the tests
 * start. make check-aarch64 sets it to "qemu-aarch64-static -L <sysroot>",
 * so that aarch64 programs run on an x86-64 host without binfmt_misc. Puts
 * its words into argv[0..] (at most max) and returns how many: none when exe
 * is a script. */
static inline int lw_test_exec_prefix(const char *exe, char **argv, int max) {
    static char buf[1024];
    static char *words[16];
    static int nwords = -1;
    if (nwords < 0) {
        nwords = 0;
        const char *e = getenv("LW_TEST_EXEC");
        snprintf(buf, sizeof buf, "%s", e ? e : "");
        char *save = NULL;
        for (char *w = strtok_r(buf, " ", &save); w && nwords < 16; w = strtok_r(NULL, " ", &save))
            words[nwords++] = w;
    }
    /* A script runs as its first line says (a wrapper that starts an
     * emulator itself, for instance). */
    char head[2] = {0, 0};
    FILE *f = fopen(exe, "rb");
    if (f) {
        if (fread(head, 1, 2, f) != 2) head[0] = 0;
        fclose(f);
    }
    if (head[0] == '#' && head[1] == '!') return 0;
    int n = 0;
    for (; n < nwords && n < max; n++)
        argv[n] = words[n];
    return n;
}

/* Time limits on the programs the tests start are multiplied by this:
 * $CK_TIMEOUT_MULTIPLIER (Check's own factor for its test time limits; make
 * check-aarch64 sets it for qemu-user), 1 when unset. */
static inline unsigned lw_test_time_scale(void) {
    const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
    long v = m ? strtol(m, NULL, 10) : 1;
    return v >= 1 && v <= 100 ? (unsigned)v : 1;
}

/* The file to start for exe: under an emulator run with "-L SYSROOT" in
 * $LW_TEST_EXEC, SYSROOT/exe when that exists. qemu looks every file the
 * program opens up in the sysroot first, but not the program it is given
 * to start, so without this /usr/bin/env would be the host's. */
static inline const char *lw_test_exec_path(const char *exe, char *buf, size_t len) {
    const char *e = getenv("LW_TEST_EXEC"), *l = e ? strstr(e, " -L ") : NULL;
    if (!l || exe[0] != '/') return exe;
    l += 4;
    size_t n = strcspn(l, " ");
    if ((size_t)snprintf(buf, len, "%.*s%s", (int)n, l, exe) >= len || access(buf, X_OK) != 0)
        return exe;
    return buf;
}

/* In a child about to run a program: the end signals at their default
 * action, as a job started from a shell has them. A suite started with
 * SIGHUP ignored (nohup) or SIGINT ignored (a background job of a
 * non-interactive shell) would otherwise hand that on, and leakwatch, which
 * leaves a signal the job ignores alone, would rightly write no report. */
static inline void lw_test_child_signals(void) {
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

#endif
