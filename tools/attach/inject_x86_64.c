/* SPDX-License-Identifier: Apache-2.0 */
/* x86-64 part of leakwatch attach (inject_arch.h). */
#include "inject_arch.h"

#if defined(__x86_64__)
#include <elf.h>
#include <stddef.h>
#include <string.h>
#include <sys/ucontext.h>
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

void lw_arch_dwarf_regs(const lw_regs *r, uint64_t out[17]) {
    const unsigned long long v[17] = {r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi,
                                      r->rbp, r->rsp, r->r8,  r->r9,  r->r10, r->r11,
                                      r->r12, r->r13, r->r14, r->r15, r->rip};
    for (int i = 0; i < 17; i++)
        out[i] = v[i];
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

void lw_arch_set_pc(lw_regs *r, uint64_t pc) {
    r->rip = pc;
}

/* The kernel's restart of an interrupted system call (arch_do_signal_or_restart),
 * done ahead: the registers with which running again from the system call
 * instruction is what resuming the stopped thread would have done. */
void lw_arch_restart_regs(const lw_regs *orig, uint64_t syscall_insn, lw_regs *out) {
    *out = *orig;
    long err = -(long)orig->rax;
    if (err == 512 || err == 513 || err == 514) { /* ERESTARTSYS, NOINTR, NOHAND */
        out->rax = orig->orig_rax;
        out->rip = syscall_insn;
    } else if (err == 516) { /* ERESTART_RESTARTBLOCK */
        out->rax = SYS_restart_syscall;
        out->rip = syscall_insn;
    }
    out->orig_rax = (unsigned long long)-1;
}

/* The C library's __restore_rt: movq $15, %rax; syscall (rt_sigreturn). */
const unsigned char lw_arch_sigreturn_code[] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
const size_t lw_arch_sigreturn_len = sizeof lw_arch_sigreturn_code;

/* The stub the calls return to: the result kept below the stack pointer
 * (the page is not writable), then rt_sigreturn:
 *   0: mov %rax, -16(%rsp)           48 89 44 24 f0
 *   5: mov $15, %eax                 b8 0f 00 00 00
 *  10: syscall                       0f 05 */
size_t lw_arch_stub(unsigned char *buf, size_t *again, size_t *trap, size_t *result_below_sp) {
    static const unsigned char code[] = {0x48, 0x89, 0x44, 0x24, 0xf0, 0xb8,
                                         0x0f, 0,    0,    0,    0x0f, 0x05};
    memcpy(buf, code, sizeof code);
    *again = 5;
    *trap = 12;
    *result_below_sp = 16;
    return sizeof code;
}

_Static_assert(offsetof(ucontext_t, uc_mcontext) == 40 &&
                   offsetof(ucontext_t, uc_sigmask) == 40 + 256,
               "the C library's ucontext_t starts as the kernel's struct ucontext");

/* rt_sigreturn's frame, from its return address on: the return address,
 * struct ucontext (the registers r, the signal mask, the floating-point
 * state at fpstate or, 0, the initial one; an invalid alternate stack, which
 * the kernel leaves as it is), then room for its siginfo. */
size_t lw_arch_sigframe(unsigned char *buf, uint64_t ret_addr, const lw_regs *r, uint64_t sigmask,
                        uint64_t fpstate) {
    size_t uc_len = offsetof(ucontext_t, uc_sigmask) + 8;
    size_t len = 8 + uc_len + 128;
    memset(buf, 0, len);
    memcpy(buf, &ret_addr, 8);
    ucontext_t uc;
    memset(&uc, 0, sizeof uc);
    uc.uc_stack.ss_flags = 3; /* neither 0, SS_ONSTACK nor SS_DISABLE: EINVAL, ignored */
    greg_t *g = uc.uc_mcontext.gregs;
    g[REG_R8] = (greg_t)r->r8;
    g[REG_R9] = (greg_t)r->r9;
    g[REG_R10] = (greg_t)r->r10;
    g[REG_R11] = (greg_t)r->r11;
    g[REG_R12] = (greg_t)r->r12;
    g[REG_R13] = (greg_t)r->r13;
    g[REG_R14] = (greg_t)r->r14;
    g[REG_R15] = (greg_t)r->r15;
    g[REG_RDI] = (greg_t)r->rdi;
    g[REG_RSI] = (greg_t)r->rsi;
    g[REG_RBP] = (greg_t)r->rbp;
    g[REG_RBX] = (greg_t)r->rbx;
    g[REG_RDX] = (greg_t)r->rdx;
    g[REG_RAX] = (greg_t)r->rax;
    g[REG_RCX] = (greg_t)r->rcx;
    g[REG_RSP] = (greg_t)r->rsp;
    g[REG_RIP] = (greg_t)r->rip;
    g[REG_EFL] = (greg_t)r->eflags;
    g[REG_CSGSFS] = (greg_t)((r->cs & 0xffff) | ((unsigned long long)(r->ss & 0xffff) << 48));
    uc.uc_mcontext.fpregs = (fpregset_t)(uintptr_t)fpstate;
    memcpy(buf + 8, &uc, offsetof(ucontext_t, uc_sigmask));
    memcpy(buf + 8 + offsetof(ucontext_t, uc_sigmask), &sigmask, 8);
    return len;
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

int lw_arch_restart_eintr(lw_regs *r) {
    long nr = (long)r->orig_rax;
    if ((long)r->rax != -4 /* EINTR */ || nr < 0) return 0;
    if (!lw_arch_safe_syscall(nr) && nr != SYS_epoll_wait && nr != SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
        && nr != SYS_epoll_pwait2
#endif
    )
        return 0;
    r->rax = (unsigned long long)-512; /* ERESTARTSYS: resumed, the kernel restarts it */
    return 1;
}

int lw_arch_temp_mask_wait(const lw_regs *r) {
    long nr = (long)r->orig_rax, err = -(long)r->rax;
    if (nr != SYS_rt_sigsuspend && nr != SYS_ppoll && nr != SYS_pselect6) return 0;
    return err == 512 || err == 513 || err == 514 || err == 516; /* to be restarted */
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
