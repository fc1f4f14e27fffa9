/* SPDX-License-Identifier: Apache-2.0 */
/* arch_x86_64.h - x86-64 facts for arch.h (include arch.h, not this). */
#ifndef LW_ARCH_X86_64_H
#define LW_ARCH_X86_64_H

#include <stdint.h>

#define LW_ARCH_NAME "x86_64"
#define LW_ARCH_ELF_MACHINE 62 /* EM_X86_64 */
#define LW_ARCH_GLIBC_BASE "GLIBC_2.2.5"
/* 4-level paging: 47-bit user space (5-level only above a hint). */
#define LW_ARCH_USER_ADDR_END ((uintptr_t)1 << 47)
#define LW_ARCH_FP_NEXT 0   /* [rbp]: caller's rbp */
#define LW_ARCH_FP_RA 8     /* [rbp+8]: return address */
#define LW_ARCH_RA_CFA (-8) /* call pushes the return address just below the CFA */

static inline uintptr_t lw_arch_strip_ra(uintptr_t ra) {
    return ra;
}

/* The relocations that fill a global offset table entry with a function's
 * address (hooks installed late rewrite those entries). */
#define LW_ARCH_R_JUMP_SLOT 7
#define LW_ARCH_R_GLOB_DAT 6

#endif
