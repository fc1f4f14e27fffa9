/* SPDX-License-Identifier: Apache-2.0 */
/* What the fast unwinder (unwind.c) needs to know about the machine, in one
 * place: the registers a frame's canonical frame address (CFA) is computed
 * from, where a frame's return address is kept, and how to read the
 * registers of the current frame. Only x86-64 has a fast unwinder so far;
 * elsewhere LW_UNW_FAST is 0 and every stack is unwound by the fallback
 * unwinder (libunwind or libgcc_s, see stack.c); -DLW_UNW_NO_FAST builds
 * x86-64 that way too. */
#ifndef LW_UNWIND_ARCH_H
#define LW_UNWIND_ARCH_H

#include <stdint.h>

#if defined(__x86_64__) && !defined(LW_UNW_NO_FAST)
#define LW_UNW_FAST 1

/* DWARF register numbers (System V x86-64 psABI, figure 3.36). */
#define LW_DW_REG_FP 6  /* rbp */
#define LW_DW_REG_SP 7  /* rsp */
#define LW_DW_REG_RA 16 /* return address column */

/* A call pushes the return address just below the caller's stack pointer,
 * which is the callee's CFA: the return address of a frame is the word at
 * CFA - 8, always (a CIE that says otherwise is refused). */
#define LW_UNW_RA_SLOT (-8)

/* The caller's stack pointer after the call returns is the callee's CFA. */
#define LW_UNW_SP_IS_CFA 1

typedef struct {
    uintptr_t ip; /* a return address: look up ip - 1 */
    uintptr_t sp;
    uintptr_t fp;
} lw_unw_regs;

/* Fills *r with the registers of the function that calls it, as they are
 * right after the call returns (ip = the return address). Written in
 * assembly so that nothing of the compiler's choosing changes rsp or rbp
 * first. */
void lw_unw_getcontext(lw_unw_regs *r);
#define LW_UNW_GETCONTEXT_ASM                                                                      \
    __asm__(".text\n"                                                                              \
            ".globl lw_unw_getcontext\n"                                                           \
            ".hidden lw_unw_getcontext\n"                                                          \
            ".type lw_unw_getcontext,@function\n"                                                  \
            "lw_unw_getcontext:\n"                                                                 \
            "  .cfi_startproc\n"                                                                   \
            "  movq (%rsp), %rax\n"                                                                \
            "  movq %rax, 0(%rdi)\n"                                                               \
            "  leaq 8(%rsp), %rax\n"                                                               \
            "  movq %rax, 8(%rdi)\n"                                                               \
            "  movq %rbp, 16(%rdi)\n"                                                              \
            "  ret\n"                                                                              \
            "  .cfi_endproc\n"                                                                     \
            ".size lw_unw_getcontext, .-lw_unw_getcontext\n")

#else
#define LW_UNW_FAST 0
typedef struct {
    uintptr_t ip, sp, fp;
} lw_unw_regs;
#endif

#endif
