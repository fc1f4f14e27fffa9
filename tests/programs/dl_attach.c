/* SPDX-License-Identifier: Apache-2.0 */
/* A job that reaches CUDA through a module opened RTLD_LOCAL with its own
 * runtime (as Python opens extension modules): libmod_rt.so, by full path,
 * before it says ready, or with "late" as argument 5 after GO_FILE appears (an
 * object loaded after the attach; the driver is loaded before, as by a job
 * that has looked at its GPUs). Each step the module leaks SIZE bytes from
 * its leak_module. See attach.h and tests/modules/mod_layout.c.
 * With "tail" as argument 5: libmod_tail.so instead (tests/modules/mod_tail.c),
 * whose cudaMalloc/cudaFree wrappers end in a tail call, so that the runtime's
 * return address lies in this program (leak_tail_attach keeps SIZE bytes a
 * step, and as much more is allocated and freed). */
#include "attach.h"

#include <dlfcn.h>
#include <limits.h>

typedef int (*mod_run_fn)(const char *, size_t, size_t, char *, size_t);
static mod_run_fn mod_run;

typedef cudaError_t (*tail_alloc_fn)(void **, size_t);
typedef cudaError_t (*tail_free_fn)(void *);
static tail_alloc_fn tail_malloc;
static tail_free_fn tail_free;
static int tail;

static int load_module(void) {
    char exe[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(path, sizeof path, "%s/../lib/%s", exe, tail ? "libmod_tail.so" : "libmod_rt.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
    if (tail) {
        tail_malloc = (tail_alloc_fn)dlsym(h, "tail_malloc");
        tail_free = (tail_free_fn)dlsym(h, "tail_free");
        return tail_malloc && tail_free ? 0 : -1;
    }
    mod_run = (mod_run_fn)dlsym(h, "mod_run");
    return mod_run ? 0 : -1;
}

__attribute__((noinline)) static int leak_tail_attach(size_t size) {
    void *keep = NULL, *churn = NULL;
    int r = (int)tail_malloc(&keep, size);
    if (!r) r = (int)tail_malloc(&churn, size);
    if (!r) r = (int)tail_free(churn);
    return r;
}

static int attach_step(long i, size_t size) {
    if (tail) return leak_tail_attach(size);
    if (!mod_run && load_module() != 0) exit(2);
    char out[256];
    (void)i;
    mod_run("plt", 1, size, out, sizeof out);
    return strstr(out, "leak=0") ? 0 : 1;
}

int main(int argc, char **argv) {
    tail = argc > 5 && !strcmp(argv[5], "tail");
    if (argc > 5 && !strcmp(argv[5], "late")) {
        if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) return 2;
    } else if (load_module() != 0) {
        return 2;
    }
    return attach_main(argc, argv);
}
