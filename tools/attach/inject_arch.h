/* SPDX-License-Identifier: Apache-2.0 */
/* The processor's part of leakwatch attach: reading and writing a stopped
 * thread's registers, and setting them up to call a function of the target
 * that returns to the system call instruction the thread was stopped after
 * (where the command, tracing its system calls, takes the result). One file per architecture:
 * inject_x86_64.c. AArch64 has none yet (README "attach": not available there), so the command says
 * so instead of attaching. */
#ifndef LW_INJECT_ARCH_H
#define LW_INJECT_ARCH_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#if defined(__x86_64__)
#define LW_ATTACH_ARCH 1
typedef struct user_regs_struct lw_regs;
/* Bytes below the stack pointer that the interrupted code may still use. */
#define LW_ARCH_RED_ZONE 128
#define LW_ARCH_SYSCALL_LEN 2 /* syscall: 0f 05 */
/* DWARF's numbers of the stack pointer and the return address (rip). */
#define LW_ARCH_DWARF_SP 7
#define LW_ARCH_DWARF_RA 16
#else
#define LW_ATTACH_ARCH 0
typedef struct {
    uint64_t unused;
} lw_regs;
#define LW_ARCH_RED_ZONE 0
#define LW_ARCH_SYSCALL_LEN 2
#define LW_ARCH_DWARF_SP 0
#define LW_ARCH_DWARF_RA 0
#endif

int lw_arch_get_regs(pid_t tid, lw_regs *r);
int lw_arch_set_regs(pid_t tid, const lw_regs *r);
/* The floating-point and vector registers (the whole extended state), which
 * the calls may use: saved at the start, put back at the end. */
typedef struct {
    unsigned char data[32768];
    size_t len;
} lw_fpregs;
int lw_arch_get_fpregs(pid_t tid, lw_fpregs *f);
int lw_arch_set_fpregs(pid_t tid, const lw_fpregs *f);
uint64_t lw_arch_sp(const lw_regs *r);
/* The C library's struct pthread of the thread (from its thread pointer). */
uint64_t lw_arch_pthread_self(const lw_regs *r);
uint64_t lw_arch_pc(const lw_regs *r);
/* The registers in DWARF's order (17: the general ones, then the return
 * address, which is the program counter), for callchain.h. */
void lw_arch_dwarf_regs(const lw_regs *r, uint64_t out[17]);
/* The system call the thread was stopped in, or -1 when it was stopped while
 * running its own code. */
long lw_arch_syscall(const lw_regs *r);
/* r (a copy of the thread's registers) set up to call fn(args[0..n)) with the
 * stack pointer at sp (16-byte aligned, below everything the thread uses),
 * *ra_slot: where in the target's memory the return address must be
 * written (0: none, it is in a register). No
 * system call is restarted when the call starts. */
void lw_arch_prepare_call(lw_regs *r, uint64_t fn, const uint64_t *args, int n, uint64_t sp,
                          uint64_t *ra_slot);
/* The calls return to the system call instruction the thread was stopped
 * after (LW_ARCH_SYSCALL_LEN bytes before its program counter): stopped at
 * that system call's entry, the call's result is the system call's number,
 * and the system call is skipped. */
int lw_arch_is_syscall(const unsigned char *insn);
uint64_t lw_arch_syscall_number(const lw_regs *r);
void lw_arch_skip_syscall(lw_regs *r);
/* 1 when the system call nr, interrupted, is restarted on resuming as if
 * nothing had happened (the thread then waits in it with no lock of the C
 * library's taken): the threads leakwatch attach may borrow. 2 for plain
 * sleeps and waits in the program's own code, preferred; 1 for futex (lock
 * and condition waits); 0 for the others. */
int lw_arch_safe_syscall(long nr);
/* A wait that the attach's interruption ended with EINTR (a socket's
 * receive timeout, epoll_wait: the kernel does not restart those) is made
 * one the kernel restarts on resuming, as it does the others: the job never
 * sees an EINTR no signal caused (a signal that came meanwhile is held and
 * sent again, and interrupts the restarted wait as it would have). 1 when r
 * was changed. */
int lw_arch_restart_eintr(lw_regs *r);
/* 1 when r (stopped in a system call) waits with a temporary signal mask
 * that the kernel puts back only once the thread runs (rt_sigsuspend, ppoll,
 * pselect6 interrupted, to be restarted): until then neither ptrace nor
 * /proc tells the thread's own mask. */
int lw_arch_temp_mask_wait(const lw_regs *r);

/* ---- a command killed at any moment (kill -9) leaves the job running ----
 * The calls return to a stub (lw_arch_stub) in a page of the target's that
 * keeps the result and runs rt_sigreturn with a frame (lw_arch_sigframe)
 * that holds the thread's own registers: traced, that system call is where
 * the command takes the result and skips it; with the command gone, it puts
 * the thread back as it was, restarting its system call. The first call
 * (mmap of that page) returns to the C library's own rt_sigreturn code
 * (lw_arch_sigreturn_code). */
void lw_arch_set_pc(lw_regs *r, uint64_t pc);
/* orig, stopped in the system call at syscall_insn, as the kernel's restart
 * would resume it from there. */
void lw_arch_restart_regs(const lw_regs *orig, uint64_t syscall_insn, lw_regs *out);
extern const unsigned char lw_arch_sigreturn_code[];
extern const size_t lw_arch_sigreturn_len;
/* Writes the stub (at most 64 bytes) to buf; *again: where it runs
 * rt_sigreturn, *trap: the program counter at that system call's entry,
 * *result_below_sp: where it keeps the result, below the stack pointer
 * there. Its length. */
size_t lw_arch_stub(unsigned char *buf, size_t *again, size_t *trap, size_t *result_below_sp);
#define LW_ARCH_SIGFRAME_MAX 1024
/* The frame at the calls' return address slot; its length. */
size_t lw_arch_sigframe(unsigned char *buf, uint64_t ret_addr, const lw_regs *r, uint64_t sigmask,
                        uint64_t fpstate);

#endif
