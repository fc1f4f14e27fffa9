/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread sleeps (a thread an attach may borrow) inside a
 * function whose frame holds words that point into the dynamic linker's
 * code without being return addresses: an address in its code kept in a
 * local (as a pointer to one of its functions would be; found with
 * dl_iterate_phdr: dlsym finds ASan's __tls_get_addr), and a large buffer left
 * unwritten, over the stale return addresses that the dynamic linker's
 * lazy binding leaves below the frames that called it.
 * ASan's recv interceptor has such a frame: every attach refused every
 * thread of an ASan job waiting in recv. For
 * tests/integration/test_attach.c. It says "ready PID" once the pointer is
 * in place (checked with dladdr: it fails with 6 when it finds no address in
 * the dynamic linker's code), sleeps until the file STOP exists and says "done,
 * kept a linker word". Usage: rt_attach_ldword STOP */
#include "paths.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static NOINLINE int wait_for(const char *stop, void *ld_code) {
    /* The pointer, and space that nothing writes (a buffer's). */
    void *volatile keep[4] = {ld_code, ld_code, ld_code, ld_code};
    volatile char unused[4096];
    (void)unused;
    while (access(stop, F_OK) != 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return keep[0] == ld_code;
}

/* An address in the middle of the dynamic linker's code (its first
 * executable segment), as a return address into it would be. */
static int find_ld_code(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    const char *n = info->dlpi_name ? info->dlpi_name : "";
    if (!strstr(n, "ld-linux") && !strstr(n, "ld64.so") && !strstr(n, "ld-2.")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            *(void **)out = (void *)(info->dlpi_addr + ph->p_vaddr + ph->p_memsz / 2);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    void *f = NULL;
    dl_iterate_phdr(find_ld_code, &f);
    Dl_info info;
    if (!f || !dladdr(f, &info) || !info.dli_fname ||
        (!strstr(info.dli_fname, "ld-linux") && !strstr(info.dli_fname, "ld64.so") &&
         !strstr(info.dli_fname, "ld-2."))) {
        printf("no address in the dynamic linker's code\n");
        return 6;
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    int kept = wait_for(argv[1], f);
    printf("done, %s a linker word\n", kept ? "kept" : "lost");
    return 0;
}
