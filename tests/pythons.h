/* SPDX-License-Identifier: Apache-2.0 */
/* Where the tests that run every CPython find them, besides their own
 * searches (pyenv, /usr/bin/python3):
 *  - the interpreters scripts/setup-python314.sh unpacked (CPython 3.14 from
 *    Debian sid, started through sid's C library by a wrapper script);
 *  - $LW_PYTHONS, a colon-separated list (make check-aarch64 names the arm64
 *    CPython of its sysroot there);
 * and which of the found ones can run here: an ELF executable must be built
 * for this test's architecture (under make check-aarch64 the host's x86-64
 * Pythons are found too, and are not what is being tested). */
#ifndef LW_TEST_PYTHONS_H
#define LW_TEST_PYTHONS_H

#include <elf.h>
#include <errno.h> /* program_invocation_short_name (_GNU_SOURCE) */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define LW_DEB_ARCH "amd64"
#define LW_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define LW_DEB_ARCH "arm64"
#define LW_ELF_MACHINE EM_AARCH64
#else
#define LW_DEB_ARCH "none"
#define LW_ELF_MACHINE EM_NONE
#endif

/* 1 when path is a script (#!). */
static inline int lw_is_script(const char *path) {
    FILE *f = fopen(path, "rb");
    char h[2] = {0, 0};
    if (!f) return 0;
    size_t n = fread(h, 1, 2, f);
    fclose(f);
    return n == 2 && h[0] == '#' && h[1] == '!';
}

/* 1 when path is a script, or an ELF executable of this architecture. */
static inline int lw_python_runs_here(const char *path) {
    char real[PATH_MAX];
    FILE *f = realpath(path, real) ? fopen(real, "rb") : NULL;
    if (!f) return 0;
    unsigned char h[20];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n >= 2 && h[0] == '#' && h[1] == '!') return 1;
    if (n < 20 || memcmp(h, ELFMAG, SELFMAG) != 0) return 0;
    return (h[18] | h[19] << 8) == LW_ELF_MACHINE; /* e_machine, little-endian */
}

/* 0 under an emulator run ($LW_TEST_EXEC set): a search of the host's usual
 * places then finds a mix of the host's files and the sysroot's, so the
 * tests use only $LW_PYTHONS and the cached interpreters of their own
 * architecture. */
static inline int lw_search_host_pythons(void) {
    const char *e = getenv("LW_TEST_EXEC");
    return !e || !*e;
}

/* Calls add(path) for each cached wrapper of this machine's architecture:
 * <cache>/py3*-ARCH/root/usr/bin/python3.*, <cache> being
 * ${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch (as in setup-python314.sh).
 * With none there it prints a "skipped" line saying so. */
static inline void lw_cached_pythons(void (*add)(const char *)) {
    char pat[PATH_MAX];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(pat, sizeof pat, "%s/leakwatch/py3*-" LW_DEB_ARCH "/root/usr/bin/python3.*", xdg);
    else if (home && *home)
        snprintf(pat, sizeof pat, "%s/.cache/leakwatch/py3*-" LW_DEB_ARCH "/root/usr/bin/python3.*",
                 home);
    else
        return;
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0) {
        /* A skip line (scripts/run-tests.sh counts them; under CI=true it
         * fails the run: make check's install-deps unpacks it). */
        printf(
            "%s: skipped: CPython 3.14 is not unpacked (sh scripts/setup-python314.sh " LW_DEB_ARCH
            "): the Python tests run without it\n",
            program_invocation_short_name);
        return;
    }
    for (size_t i = 0; i < g.gl_pathc; i++)
        add(g.gl_pathv[i]);
    globfree(&g);
}

/* Calls add(path) for each entry of $LW_PYTHONS. */
static inline void lw_listed_pythons(void (*add)(const char *)) {
    const char *list = getenv("LW_PYTHONS");
    if (!list || !*list) return;
    char *copy = strdup(list), *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
        add(p);
    free(copy);
}

#endif
