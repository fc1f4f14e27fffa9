/* SPDX-License-Identifier: Apache-2.0 */
/* arch_aarch64.h - AArch64 facts for arch.h (include arch.h, not this). */
#ifndef LW_ARCH_AARCH64_H
#define LW_ARCH_AARCH64_H

#include <stdint.h>

#define LW_ARCH_NAME "aarch64"
#define LW_ARCH_ELF_MACHINE 183 /* EM_AARCH64 */
#define LW_ARCH_GLIBC_BASE "GLIBC_2.17"
/* 48-bit virtual addresses (52-bit only above a hint). */
#define LW_ARCH_USER_ADDR_END ((uintptr_t)1 << 48)
#define LW_ARCH_FP_NEXT 0 /* frame record at x29: saved x29 */
#define LW_ARCH_FP_RA 8   /* then saved x30 (the link register) */
/* bl leaves the return address in x30; where a function saves it is up to
 * its prologue. */
#define LW_ARCH_RA_CFA LW_ARCH_RA_CFA_NONE

/* Return addresses saved by code built with -mbranch-protection=pac-ret
 * carry a pointer-authentication code in their top bits. XPACLRI (hint 7)
 * removes it from x30; it is a no-op on processors without pointer
 * authentication, so this is correct everywhere. */
static inline uintptr_t lw_arch_strip_ra(uintptr_t ra) {
    register uintptr_t x30 __asm__("x30") = ra;
    __asm__("hint #7" : "+r"(x30));
    return x30;
}

/* The relocations that fill a global offset table entry with a function's
 * address (hooks installed late rewrite those entries). */
#define LW_ARCH_R_JUMP_SLOT 1026
#define LW_ARCH_R_GLOB_DAT 1025

#endif
