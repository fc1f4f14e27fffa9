/* SPDX-License-Identifier: Apache-2.0 */
/* Walking loaded objects' global offset tables: the entries (JUMP_SLOT and
 * GLOB_DAT relocations) through which an object calls a function by name.
 * Shared by attach (src/attach/patch.c: every hook's entry rewritten) and preloading
 * (bind.c: each object's CUDA runtime entries bound to a per-object entry). */
#ifndef LW_HOOKS_GOT_H
#define LW_HOOKS_GOT_H

#include <link.h>
#include <stdint.h>

/* Called for each entry of one object that refers to a symbol by name:
 * slot is the entry, cur what it holds now; jump_slot: a call's entry
 * (JUMP_SLOT, which lazy binding may not have filled yet), else an address's
 * (GLOB_DAT). */
typedef void (*lw_got_visit)(const struct dl_phdr_info *info, const char *name, void **slot,
                             void *cur, int jump_slot, void *arg);

/* Every entry of one object (the dynamic linker, the vDSO and leakwatch
 * itself are skipped). */
void lw_got_walk_object(const struct dl_phdr_info *info, lw_got_visit visit, void *arg);

/* Reads /proc/self/maps' protections (for lw_got_write_slot and
 * lw_got_prot_of). Not thread-safe: callers serialise. */
void lw_got_read_regions(void);

/* The protection of the page holding addr, per the last read; -1 when it is
 * not mapped. */
int lw_got_prot_of(uintptr_t addr);

/* Writes one entry: made writable for the store when it is read-only
 * (RELRO), then given its protection back. 0, or -1 (left as it was). */
int lw_got_write_slot(void **slot, void *value);

#endif
