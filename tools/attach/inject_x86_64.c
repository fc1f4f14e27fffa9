/* SPDX-License-Identifier: Apache-2.0 */
/* x86-64 part of leakwatch attach (inject_arch.h). */
#include "inject_arch.h"

#if defined(__x86_64__)
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

int lw_arch_get_regs(pid_t tid, lw_regs *r) {
    return ptrace(PTRACE_GETREGS, tid, 0, r) == 0 ? 0 : -1;
}

int lw_arch_set_regs(pid_t tid, const lw_regs *r) {
    return ptrace(PTRACE_SETREGS, tid, 0, r) == 0 ? 0 : -1;
}

int lw_arch_get_fpregs(pid_t tid, lw_fpregs *f) {
    struct iovec v = {f->data, sizeof f->data};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &v) != 0) {
        /* Without XSAVE: the legacy FXSAVE area. */
        v.iov_len = 512;
        if (ptrace(PTRACE_GETFPREGS, tid, 0, f->data) != 0) return -1;
        f->len = 0;
        return 0;
    }
    f->len = v.iov_len;
    return 0;
}

int lw_arch_set_fpregs(pid_t tid, const lw_fpregs *f) {
    if (!f->len) return ptrace(PTRACE_SETFPREGS, tid, 0, (void *)f->data) == 0 ? 0 : -1;
    struct iovec v = {(void *)f->data, f->len};
    return ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &v) == 0 ? 0 : -1;
}

uint64_t lw_arch_pthread_self(const lw_regs *r) {
    return r->fs_base; /* TLS variant II: the thread pointer is the TCB, first in struct pthread */
}

uint64_t lw_arch_sp(const lw_regs *r) {
    return r->rsp;
}

uint64_t lw_arch_pc(const lw_regs *r) {
    return r->rip;
}

long lw_arch_syscall(const lw_regs *r) {
    return (long)r->orig_rax;
}

void lw_arch_prepare_call(lw_regs *r, uint64_t fn, const uint64_t *args, int n, uint64_t sp,
                          uint64_t *ra_slot) {
    unsigned long long *regs[6] = {&r->rdi, &r->rsi, &r->rdx, &r->rcx, &r->r8, &r->r9};
    for (int i = 0; i < n && i < 6; i++)
        *regs[i] = args[i];
    /* A call pushes the return address: at entry (rsp + 8) is 16-aligned. */
    r->rsp = (sp & ~(uint64_t)15) - 8;
    *ra_slot = r->rsp;
    r->rip = fn;
    r->rax = 0; /* no vector registers for a variadic callee */
    /* Not in a system call any more: the kernel must not restart the
     * interrupted one at our call's first instruction. */
    r->orig_rax = (unsigned long long)-1;
    r->eflags &= ~(1ull << 10); /* the direction flag is clear at a call */
}

int lw_arch_is_syscall(const unsigned char *insn) {
    return insn[0] == 0x0f && insn[1] == 0x05;
}

/* At a system call's entry the kernel keeps rax (the number) in orig_rax. */
uint64_t lw_arch_syscall_number(const lw_regs *r) {
    return r->orig_rax;
}

void lw_arch_skip_syscall(lw_regs *r) {
    r->orig_rax = (unsigned long long)-1;
    r->rax = 0;
}

int lw_arch_safe_syscall(long nr) {
    switch (nr) {
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_pause:
    case SYS_rt_sigsuspend:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_read:
    case SYS_readv:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
        return 2;
    case SYS_futex:
        return 1;
    default:
        /* epoll_wait fails with EINTR when interrupted (it is not
         * restarted), ioctl is how the GPU driver waits (holding its
         * locks): never borrowed. */
        return 0;
    }
}
#endif
