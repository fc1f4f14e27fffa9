/* SPDX-License-Identifier: Apache-2.0 */
/* Opens N layout modules (copies of libmod_rt.so, tests/modules/mod_layout.c,
 * that the test made in DIR as libmod_copyK.so) RTLD_LOCAL by path, and has
 * each allocate one block through the runtime: N different libraries that
 * call the CUDA runtime.
 * Usage: dl_many_modules DIR N */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*mod_run_fn)(const char *, size_t, size_t, char *, size_t);

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int n = atoi(argv[2]), failed = 0;
    for (int i = 0; i < n; i++) {
        char path[4200], out[256];
        snprintf(path, sizeof path, "%s/libmod_copy%d.so", argv[1], i);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dl_many_modules: %s\n", dlerror());
            return 3;
        }
        mod_run_fn run = (mod_run_fn)dlsym(h, "mod_run");
        if (!run || run("plt", 1, 4096, out, sizeof out) != 0) failed++;
    }
    printf("done, %d modules, %d failed\n", n, failed);
    return failed ? 1 : 0;
}
