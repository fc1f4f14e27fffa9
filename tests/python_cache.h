/* Interpreters unpacked by scripts/setup-python314.sh (CPython from Debian
 * sid, started through sid's C library by a wrapper): the tests that run
 * every CPython found add these too. */
#ifndef LW_TEST_PYTHON_CACHE_H
#define LW_TEST_PYTHON_CACHE_H

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__)
#define LW_DEB_ARCH "amd64"
#elif defined(__aarch64__)
#define LW_DEB_ARCH "arm64"
#else
#define LW_DEB_ARCH "none"
#endif

/* Calls add(path) for each cached wrapper of this machine's architecture:
 * <cache>/py3*-ARCH/root/usr/bin/python3.*, <cache> being
 * ${XDG_CACHE_HOME:-$HOME/.cache}/leakwatch (as in setup-python314.sh). */
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
    if (glob(pat, 0, NULL, &g) != 0) return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        add(g.gl_pathv[i]);
    globfree(&g);
}

#endif
