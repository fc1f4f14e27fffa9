/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread sleeps (a thread an attach may borrow) inside a
 * function whose frame holds words that point into the dynamic linker's
 * code without being return addresses: a pointer to one of its functions
 * kept in a local (here __tls_get_addr's, from dlsym), and a large buffer
 * left unwritten, over the stale return addresses that the dynamic
 * linker's lazy binding and dlsym leave below the frames that called them.
 * ASan's recv interceptor has such a frame: every attach refused every
 * thread of an ASan job waiting in recv. For
 * tests/integration/test_attach.c. It says "ready PID" once the pointer is
 * in place (checked with dladdr: it fails with 6 when it cannot point into
 * the dynamic linker), sleeps until the file STOP exists and says "done,
 * kept a linker word". Usage: rt_attach_ldword STOP */
#include "paths.h"

#include <dlfcn.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static NOINLINE int wait_for(const char *stop, void *ld_fn) {
    /* The pointer, and space that nothing writes (a buffer's). */
    void *volatile keep[4] = {ld_fn, ld_fn, ld_fn, ld_fn};
    volatile char unused[4096];
    (void)unused;
    while (access(stop, F_OK) != 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return keep[0] == ld_fn;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    void *f = dlsym(RTLD_DEFAULT, "__tls_get_addr");
    Dl_info info;
    if (!f || !dladdr(f, &info) || !info.dli_fname ||
        (!strstr(info.dli_fname, "ld-linux") && !strstr(info.dli_fname, "ld64.so") &&
         !strstr(info.dli_fname, "ld-2.")))
        return 6;
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    int kept = wait_for(argv[1], f);
    printf("done, %s a linker word\n", kept ? "kept" : "lost");
    return 0;
}
