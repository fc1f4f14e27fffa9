/* SPDX-License-Identifier: Apache-2.0 */
/* A job in a sandbox: before anything else it installs a seccomp filter
 * (raw BPF, prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)) that kills the
 * process at any socket() or socketpair(), as systemd's SystemCallFilter=
 * does for the calls it denies (issue 43: the job died with SIGSYS at
 * leakwatch's control socket). Then the attach.h loop:
 *   rt_seccomp STEPS STEP_MS GO_FILE [SIZE]
 * leaking SIZE bytes per step from leak_sandboxed. With RT_SECCOMP_LATE=1
 * the filter comes after the first CUDA allocation (leakwatch has started,
 * its socket is served), as a job that sandboxes itself once set up does,
 * for every thread (SECCOMP_FILTER_FLAG_TSYNC), and it also kills at
 * accept() and accept4(). */
#include "attach.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#endif

static int install_filter(int all_threads) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_accept, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_accept4, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    if (!all_threads) return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
    /* Every thread of the process, leakwatch's too (as libseccomp does with
     * SCMP_FLTATR_CTL_TSYNC). */
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

NOINLINE static int leak_sandboxed(size_t size) {
    void *p = NULL;
    return (int)cudaMalloc(&p, size);
}

static int attach_step(long i, size_t size) {
    (void)i;
    void *p = NULL;
    int r = (int)cudaMalloc(&p, size);
    if (r == 0) r = (int)cudaFree(p);
    return r | leak_sandboxed(size);
}

int main(int argc, char **argv) {
    const char *late = getenv("RT_SECCOMP_LATE");
    int after = late && !strcmp(late, "1");
    if (!after && install_filter(0) != 0) {
        perror("seccomp");
        return 3;
    }
    void *early;
    CHECK(cudaMalloc(&early, 4096));
    if (after && install_filter(1) != 0) {
        perror("seccomp");
        return 3;
    }
    return attach_main(argc, argv);
}
