/* SPDX-License-Identifier: Apache-2.0 */
/* arch.h - the few facts about the processor that leakwatch depends on, one
 * small header per architecture (arch_x86_64.h, arch_aarch64.h), chosen
 * here. Everything else in leakwatch is generic C for 64-bit Linux with
 * glibc. Each header defines:
 *
 *   LW_ARCH_NAME            "x86_64", "aarch64"
 *   LW_ARCH_ELF_MACHINE     the ELF header's e_machine for this architecture
 *                           (EM_X86_64, EM_AARCH64): 'leakwatch run' checks
 *                           that the library it preloads is built for it
 *   LW_ARCH_GLIBC_BASE      the symbol version of glibc's first release for
 *                           the architecture (what dlvsym() needs for a
 *                           function older than its current version)
 *   LW_ARCH_USER_ADDR_END   user-space addresses are below this (the
 *                           default 47/48-bit layouts; larger ones are only
 *                           handed out on request)
 *   LW_ARCH_FP_NEXT, LW_ARCH_FP_RA
 *                           frame records: with frame pointers, the frame
 *                           pointer points at {caller's frame pointer,
 *                           return address}; these are the byte offsets of
 *                           the two (the same on both: 0 and 8)
 *   LW_ARCH_RA_CFA          where the return address is saved, relative to
 *                           the canonical frame address (CFA) at a call: x86-64
 *                           pushes it at CFA-8; AArch64 keeps it in the link
 *                           register and a function saves it wherever its
 *                           prologue chooses (LW_ARCH_RA_CFA_NONE: use the
 *                           unwind information, or frame records)
 *   LW_ARCH_R_JUMP_SLOT, LW_ARCH_R_GLOB_DAT
 *                           the relocation types that put a function's
 *                           address in a global offset table entry
 *   lw_arch_strip_ra(ra)    a return address read from memory, as a plain
 *                           code address (AArch64: pointer-authentication
 *                           bits removed; x86-64: unchanged)
 */
#ifndef LW_ARCH_H
#define LW_ARCH_H

#include <stdint.h>

#define LW_ARCH_RA_CFA_NONE 1 /* never a valid offset: offsets are negative */

#if defined(__aarch64__)
#include "arch_aarch64.h"
#elif defined(__x86_64__) || !defined(__GNUC__)
/* (the second: static analysers such as cppcheck, which define no compiler
 * macros, read the x86-64 header) */
#include "arch_x86_64.h"
#else
#error "leakwatch is built for x86-64 and AArch64 Linux only (see src/base/arch.h)"
#endif

#endif
