/* SPDX-License-Identifier: Apache-2.0 */
/* Opens layout modules (tests/modules/mod_layout.c) the way Python opens
 * extension modules, and runs each:
 *   dl_layouts N SIZE VIA MODULE:local|global [MODULE:local|global ...]
 * Each module (in ../lib beside the program) is opened in order with
 * dlopen(RTLD_NOW | RTLD_LOCAL or RTLD_GLOBAL), then each allocates N blocks
 * of SIZE bytes (kept) and a few more (freed), reaching the allocation
 * function as VIA says (plt, default, next, handle). Prints one line per
 * module with what it saw. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*mod_run_fn)(const char *, size_t, size_t, char *, size_t);

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: dl_layouts N SIZE VIA MODULE:local|global...\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 0), size = strtoul(argv[2], NULL, 0);
    const char *via = argv[3];
    char lib_dir[4096];
    ssize_t len = readlink("/proc/self/exe", lib_dir, sizeof lib_dir - 16);
    if (len <= 0) return 3;
    lib_dir[len] = '\0';
    char *slash = strrchr(lib_dir, '/');
    if (slash) strcpy(slash, "/../lib");
    void *handles[16];
    int count = 0;
    for (int i = 4; i < argc && count < 16; i++, count++) {
        char name[256];
        snprintf(name, sizeof name, "%s", argv[i]);
        char *colon = strchr(name, ':');
        int mode = RTLD_NOW | RTLD_LOCAL;
        if (colon) {
            *colon = '\0';
            if (!strcmp(colon + 1, "global")) mode = RTLD_NOW | RTLD_GLOBAL;
        }
        /* By path: the modules sit in ../lib beside this program. (A
         * sanitizer's dlopen interceptor would make RUNPATH lookups its own.) */
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", lib_dir, name);
        handles[count] = dlopen(path, mode);
        if (!handles[count]) {
            fprintf(stderr, "dl_layouts: %s\n", dlerror());
            return 3;
        }
    }
    for (int i = 0; i < count; i++) {
        mod_run_fn run = (mod_run_fn)dlsym(handles[i], "mod_run");
        if (!run) {
            fprintf(stderr, "dl_layouts: %s has no mod_run\n", argv[4 + i]);
            return 3;
        }
        char out[512];
        run(via, n, size, out, sizeof out);
        char name[256];
        snprintf(name, sizeof name, "%s", argv[4 + i]);
        char *colon = strchr(name, ':');
        if (colon) *colon = '\0';
        printf("%s: %s\n", name, out);
    }
    /* Driver calls made on this (allocating) thread that it did not make:
     * the stand-in driver counts them. Not part of the output compared. */
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    unsigned long (*calls)(const char *) =
        drv ? (unsigned long (*)(const char *))dlsym(drv, "fake_cuda_calls") : NULL;
    if (calls)
        fprintf(stderr, "dl_layouts: meminfo on allocating threads %lu\n",
                calls("cuMemGetInfo_v2@allocating"));
    if (drv) dlclose(drv);
    /* DL_LAYOUTS_LINGER_MS: stay a while (for a sampler to look). */
    const char *linger = getenv("DL_LAYOUTS_LINGER_MS");
    if (linger) {
        long ms = atol(linger);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}
