/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread waits inside the dynamic linker: the resolver of
 * an IFUNC of the program's, which the dynamic linker calls while it
 * relocates the program (before main), waits there in nanosleep until the
 * file GATE exists (the frames of the dynamic linker are live on its stack,
 * and its program counter is not in the dynamic linker's code). For
 * tests/integration/test_attach.c: an attach then finds no thread to
 * borrow. The resolver uses system calls only (the C library and a
 * sanitizer's runtime are not started yet). It says "ready PID" from the
 * resolver, "main" once main runs, sleeps until the file STOP exists and
 * says "done". Usage: rt_attach_ifunc GATE STOP */
#include "paths.h"

#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

#if defined(__x86_64__)
#include <fcntl.h>
#include <sys/syscall.h>

#define NO_ASAN __attribute__((no_sanitize_address))

static NO_ASAN long raw3(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

static int impl(void) {
    return 1;
}

typedef int (*gated_fn)(void);

static NO_ASAN gated_fn resolve_gated(void) {
    char cmd[4096], line[32];
    long fd = raw3(SYS_open, (long)"/proc/self/cmdline", O_RDONLY, 0), n = 0;
    if (fd >= 0) {
        n = raw3(SYS_read, fd, (long)cmd, sizeof cmd - 1);
        raw3(SYS_close, fd, 0, 0);
    }
    if (n <= 0) return impl;
    cmd[n] = '\0';
    long i = 0;
    while (i < n && cmd[i]) /* argv[0] */
        i++;
    if (++i >= n) return impl;
    const char *gate = cmd + i;
    /* "ready PID\n" */
    long pid = raw3(SYS_getpid, 0, 0, 0), len = 0;
    char digits[20];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid && nd < 20);
    const char *ready = "ready ";
    while (*ready)
        line[len++] = *ready++;
    while (nd)
        line[len++] = digits[--nd];
    line[len++] = '\n';
    raw3(SYS_write, 1, (long)line, len);
    while (raw3(SYS_access, (long)gate, F_OK, 0) != 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        raw3(SYS_nanosleep, (long)&ts, 0, 0);
    }
    return impl;
}

int gated(void) __attribute__((ifunc("resolve_gated")));
#else
static int gated(void) {
    return 1;
}
#endif

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    if (!gated()) return 3;
    printf("main\n");
    fflush(stdout);
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    while (access(argv[2], F_OK) != 0) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("done\n");
    return 0;
}
