/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch out of the box: the environment a Python process needs before it
 * imports torch, set from a library constructor (see torch_mode.h).
 *
 * Why a constructor: PyTorch picks its allocator backend in a static
 * initializer of libc10_cuda during `import torch`, and Python reads
 * PYTHONPATH when the interpreter starts; both happen after the constructors
 * of an LD_PRELOAD library, and both only read the environment. Changing it
 * here is the only moment that needs no code change in the job.
 *
 * By default (LEAKWATCH_TORCH_MODE=segments) the allocator configuration is
 * not touched at all: only PYTHONPATH gains the auto-start directory, whose
 * helper reads PyTorch's own counters at each step. The backend switch is
 * made only for LEAKWATCH_TORCH_MODE=tensors.
 *
 * The constructor must be invisible: it prints nothing (a notice waits for
 * the first CUDA call, lw_torch_mode_started), allocates only in Python
 * processes, and in any other process (a compiler torch.compile starts, a
 * shell) costs one readlink and changes nothing. */
#include "torch_mode.h"

#include "log.h"
#include "options.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ASYNC_BACKEND "cudaMallocAsync"

/* The variables PyTorch reads its allocator settings from, in its own order
 * of precedence: the first one set is used and the others are ignored
 * (c10 AllocatorConfig / CUDAAllocatorConfig, PyTorch >= 2.8; before 2.8
 * only PYTORCH_CUDA_ALLOC_CONF exists). */
static const char *const conf_vars[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};

/* The notice owed once leakwatch starts (constructors must not print). */
static char notice[320];

/* Splits conf the way PyTorch's ConfigTokenizer does: ',' ':' '[' ']' are
 * tokens of their own and spaces are dropped everywhere. Finds the value of
 * the last "backend" key (PyTorch's parse keeps the last). Returns 1 when
 * there is one. */
static int find_backend(const char *conf, char *backend, size_t len) {
    char prev2[32] = "", prev1[32] = "", tok[32];
    int found = 0;
    const char *p = conf;
    while (*p) {
        size_t n = 0;
        if (strchr(",:[]", *p)) {
            tok[n++] = *p++;
        } else {
            while (*p && !strchr(",:[]", *p)) {
                if (*p != ' ' && n + 1 < sizeof tok) tok[n++] = *p;
                p++;
            }
            if (n == 0) continue; /* only spaces */
        }
        tok[n] = '\0';
        if (!strcmp(prev2, "backend") && !strcmp(prev1, ":") && !strchr(",:[]", tok[0])) {
            snprintf(backend, len, "%s", tok);
            found = 1;
        }
        memcpy(prev2, prev1, sizeof prev2);
        memcpy(prev1, tok, sizeof prev1);
    }
    return found;
}

int lw_torch_conf_rewrite(const char *conf, char *out, size_t outlen, char *backend,
                          size_t backendlen) {
    if (backendlen) backend[0] = '\0';
    if (conf && find_backend(conf, backend, backendlen)) return 0;
    /* Keep the user's settings as written, minus trailing separators: PyTorch
     * rejects an empty key, so "a:b," + ",backend:..." would not parse. */
    size_t keep = conf ? strlen(conf) : 0;
    while (keep && (conf[keep - 1] == ',' || conf[keep - 1] == ' '))
        keep--;
    int n = snprintf(out, outlen, "%.*s%sbackend:" ASYNC_BACKEND, (int)keep, keep ? conf : "",
                     keep ? "," : "");
    return n > 0 && (size_t)n < outlen;
}

/* LEAKWATCH_TORCH_STEPS: anything but an "off" word (0 false no off) wants
 * the auto-start directory; a bad value is named once leakwatch starts and
 * the default (iteration) applies. */
static int steps_wanted(void) {
    return lw_option_bool_word(getenv("LEAKWATCH_TORCH_STEPS")) != 0;
}

/* A bad value falls back to the default here as in lw_options_load, which
 * says so once leakwatch starts. */
static int env_bool(lw_option_id id) {
    long v = 0;
    lw_option_env(id, &v);
    return (int)v;
}

/* A Python interpreter that has not started yet: the executable's name is
 * python, python3, python3.12, python3.13t, ... (venvs and pyenv shims end in
 * the real interpreter, so /proc/self/exe names it). The name alone is cheap
 * and never matches a compiler; the second test keeps a library loaded later
 * with dlopen (Python already running, other threads reading the
 * environment) from touching anything. */
static int python_before_start(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    /* Started through the loader (ld-linux-x86-64.so.2 [--argv0 NAME] PROGRAM,
     * e.g. to run on a newer C library): the kernel ran the loader, and the
     * program's name is its argv[0]. */
    if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld.so", 5) == 0) {
        const char *a0 = program_invocation_name, *s = a0 ? strrchr(a0, '/') : NULL;
        base = s ? s + 1 : a0 ? a0 : "";
    }
    if (strncmp(base, "python", 6) != 0) return 0;
    const char *p = base + 6;
    p += strspn(p, "0123456789.");
    p += strspn(p, "abcdefghijklmnopqrstuvwxyz"); /* t (free-threaded), d (debug), m */
    if (*p != '\0') return 0;
    int (*initialized)(void) = (int (*)(void))lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    return !initialized || !initialized();
}

static void set_alloc_conf(void) {
    const char *var = conf_vars[0], *conf = NULL;
    for (size_t i = 0; i < sizeof conf_vars / sizeof conf_vars[0] && !conf; i++)
        if ((conf = getenv(conf_vars[i])) != NULL) var = conf_vars[i];
    /* Without caching every tensor is its own cudaMalloc already: the user's
     * choice stands (any value but 0 means on; some versions take even 0). */
    const char *uncached = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    if (uncached && *uncached && strcmp(uncached, "0") != 0) return;
    size_t len = (conf ? strlen(conf) : 0) + sizeof ","
                                                    "backend:" ASYNC_BACKEND;
    char *value = malloc(len);
    char backend[32];
    if (!value) return;
    if (lw_torch_conf_rewrite(conf, value, len, backend, sizeof backend))
        setenv(var, value, 1);
    else if (backend[0] && strcmp(backend, ASYNC_BACKEND) != 0 && strcmp(backend, "hipMallocAsync"))
        snprintf(notice, sizeof notice,
                 "%s chooses backend:%s, left as is: PyTorch memory is seen as allocator "
                 "segments, not tensors (LEAKWATCH_TORCH_MODE=segments)",
                 var, backend);
    free(value);
}

/* The auto-start directory (python/leakwatch/_autostart), found from where
 * this library lies: build/libleakwatch.so (repo; build/san/ for the
 * sanitizer build), $PREFIX/lib/libleakwatch.so (make install puts the
 * package in $PREFIX/share/leakwatch/python) or, installed with pip,
 * site-packages/leakwatch/_bin/libleakwatch.so (the package is ../..). */
static int find_autostart(char *out, size_t len) {
    static const char *const rel[] = {"../python", "../share/leakwatch/python", "../../python",
                                      "../.."};
    Dl_info info;
    char lib[PATH_MAX], try[PATH_MAX + 64];
    if (!dladdr((void *)find_autostart, &info) || !info.dli_fname) return 0;
    if (!realpath(info.dli_fname, lib)) return 0;
    char *slash = strrchr(lib, '/');
    if (!slash) return 0;
    *slash = '\0';
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(try, sizeof try, "%s/%s/leakwatch/_autostart/sitecustomize.py", lib, rel[i]);
        if (access(try, R_OK) != 0) continue;
        *strrchr(try, '/') = '\0';
        if (realpath(try, out) && strlen(out) < len) return 1;
    }
    return 0;
}

int lw_torch_package_dir(char *out, size_t len) {
    char dir[PATH_MAX];
    if (!find_autostart(dir, sizeof dir)) return 0;
    /* .../python/leakwatch/_autostart -> .../python */
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) return 0;
        *slash = '\0';
    }
    if (strlen(dir) >= len) return 0;
    memcpy(out, dir, strlen(dir) + 1);
    return 1;
}

static void add_python_path(void) {
    char dir[PATH_MAX];
    if (!find_autostart(dir, sizeof dir)) return;
    const char *old = getenv("PYTHONPATH");
    size_t dl = strlen(dir);
    /* A child Python inherits the parent's PYTHONPATH: add the entry once. */
    for (const char *p = old; p && *p;) {
        size_t l = strcspn(p, ":");
        if (l == dl && !strncmp(p, dir, dl)) return;
        p += l + (p[l] == ':');
    }
    /* An empty PYTHONPATH adds nothing to sys.path; "dir:" would add the
     * working directory (an empty entry), so it is replaced, not extended. */
    if (!old || !*old) {
        setenv("PYTHONPATH", dir, 1);
        return;
    }
    size_t len = dl + 1 + strlen(old) + 1;
    char *value = malloc(len);
    if (!value) return;
    snprintf(value, len, "%s:%s", dir, old);
    setenv("PYTHONPATH", value, 1);
    free(value);
}

__attribute__((constructor)) static void torch_mode_init(void) {
    int saved = errno;
    if (!env_bool(LW_OPT_DISABLE) && python_before_start()) {
        const char *mode = getenv("LEAKWATCH_TORCH_MODE");
        /* Only an explicit "tensors" switches the backend; anything else is
         * the default, segments (lw_options_load names a bad value when
         * leakwatch starts). */
        if (mode && strcmp(mode, "tensors") == 0) set_alloc_conf();
        if (steps_wanted()) add_python_path();
    }
    errno = saved;
}

void lw_torch_mode_started(void) {
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (notice[0] && !lw_log_quiet && !atomic_flag_test_and_set(&said)) lw_log("%s", notice);
}
