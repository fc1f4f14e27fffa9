/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for tools/attach/callchain.c, the call chain leakwatch attach
 * walks in the thread it stopped: walked here in the test's own thread
 * (its registers from getcontext, its memory read through /proc/self/mem),
 * it gives the return addresses glibc's backtrace() gives, through frames
 * whose CFA is rbp-based (a variable-length array) and a function with an
 * early return (remember_state/restore_state around its epilogue), and
 * reaches the outermost frame. */
#include "inject_arch.h"
#include "callchain.h"

#include "../check_run.h"

#include <check.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
static int self_fd = -1;

static int self_read(void *ctx, uint64_t addr, void *buf, size_t n) {
    (void)ctx;
    return pread(self_fd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* The bounds of the mapping that holds addr. */
static void mapping_of(uint64_t addr, uint64_t *lo, uint64_t *hi) {
    FILE *f = fopen("/proc/self/maps", "re");
    char line[512];
    *lo = *hi = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && addr >= a && addr < b) {
            *lo = a;
            *hi = b;
        }
    }
    if (f) fclose(f);
}

typedef struct {
    lw_callchain chain;
    void *bt[300];
    int nbt;
} walk;

static __attribute__((noinline)) void capture(walk *w) {
    ucontext_t uc;
    ck_assert_int_eq(getcontext(&uc), 0);
    w->nbt = backtrace(w->bt, 300);
    const greg_t *g = uc.uc_mcontext.gregs;
    lw_regs r;
    memset(&r, 0, sizeof r);
    r.rax = (unsigned long long)g[REG_RAX];
    r.rdx = (unsigned long long)g[REG_RDX];
    r.rcx = (unsigned long long)g[REG_RCX];
    r.rbx = (unsigned long long)g[REG_RBX];
    r.rsi = (unsigned long long)g[REG_RSI];
    r.rdi = (unsigned long long)g[REG_RDI];
    r.rbp = (unsigned long long)g[REG_RBP];
    r.rsp = (unsigned long long)g[REG_RSP];
    r.r8 = (unsigned long long)g[REG_R8];
    r.r9 = (unsigned long long)g[REG_R9];
    r.r10 = (unsigned long long)g[REG_R10];
    r.r11 = (unsigned long long)g[REG_R11];
    r.r12 = (unsigned long long)g[REG_R12];
    r.r13 = (unsigned long long)g[REG_R13];
    r.r14 = (unsigned long long)g[REG_R14];
    r.r15 = (unsigned long long)g[REG_R15];
    r.rip = (unsigned long long)g[REG_RIP];
    uint64_t regs[LW_CALLCHAIN_NREGS], lo, hi;
    lw_arch_dwarf_regs(&r, regs);
    mapping_of(r.rsp, &lo, &hi);
    self_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(self_fd, 0);
    lw_callchain_walk(getpid(), self_read, NULL, regs, r.rip, LW_ARCH_DWARF_SP, LW_ARCH_DWARF_RA,
                      r.rsp, hi, &w->chain);
    close(self_fd);
}

static volatile int sink;

static __attribute__((noinline)) void other(int k) {
    sink = k;
}

/* The likely path first, with its epilogue; the capture after it, where
 * the rules are those put back by restore_state. */
static __attribute__((noinline)) int early_return(walk *w, int k) {
    if (__builtin_expect(k != 7, 1)) {
        other(k);
        other(k + 1);
        return k + 1;
    }
    capture(w);
    other(k);
    return k * 2;
}

static __attribute__((noinline)) int with_vla(walk *w, int n) {
    volatile char vla[n]; /* the CFA from rbp */
    vla[0] = 1;
    return early_return(w, n) + vla[0];
}

static volatile int vla_len = 7; /* not a constant: a real variable-length array */

START_TEST(chain_matches_backtrace_and_is_complete) {
    walk *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(with_vla(w, vla_len), 15);
    /* backtrace()'s first entries are capture's own call of it (and a
     * sanitizer's interceptor of it); ours start at capture's return
     * address. */
    int off = 0;
    while (off < w->nbt && (uint64_t)(uintptr_t)w->bt[off] != w->chain.ra[0])
        off++;
    ck_assert_msg(off < w->nbt, "capture's return address is not in backtrace()'s");
    int same = 0;
    while (same < w->chain.n && off + same < w->nbt &&
           w->chain.ra[same] == (uint64_t)(uintptr_t)w->bt[off + same])
        same++;
    ck_assert_msg(same >= 4, "only %d of %d return addresses agree with backtrace()", same,
                  w->chain.n);
    /* backtrace() may stop early; where it reached the end, so did we. */
    if (off + same == w->nbt) ck_assert_int_eq(same, w->chain.n);
    ck_assert_msg(w->chain.complete, "the walk stopped after %d frames", w->chain.n);
    free(w);
}
END_TEST

/* A frame of code with no call frame information (here: a pc in no
 * mapped file) stops the walk there, incomplete, at that frame's stack
 * pointer. */
START_TEST(unknown_code_stops_the_walk) {
    uint64_t regs[LW_CALLCHAIN_NREGS] = {0}, lo, hi, sp = (uint64_t)(uintptr_t)&lo;
    mapping_of(sp, &lo, &hi);
    regs[LW_ARCH_DWARF_SP] = sp;
    regs[LW_ARCH_DWARF_RA] = 0x1000;
    lw_callchain *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    self_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
    lw_callchain_walk(getpid(), self_read, NULL, regs, 0x1000, LW_ARCH_DWARF_SP, LW_ARCH_DWARF_RA,
                      sp, hi, c);
    close(self_fd);
    ck_assert_int_eq(c->n, 0);
    ck_assert_int_eq(c->complete, 0);
    ck_assert(c->stop_sp == sp);
    free(c);
}
END_TEST
#endif

int main(void) {
    Suite *s = suite_create("callchain");
    TCase *tc = tcase_create("callchain");
#if defined(__x86_64__)
    tcase_add_test(tc, chain_matches_backtrace_and_is_complete);
    tcase_add_test(tc, unknown_code_stops_the_walk);
#endif
    suite_add_tcase(s, tc);
    return lw_check_run(s);
}
