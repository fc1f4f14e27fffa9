/* SPDX-License-Identifier: Apache-2.0 */
/* Function names from an ELF file's own symbol tables (.symtab, and .dynsym
 * for stripped files), for report time: dladdr knows only exported symbols,
 * and most functions (static ones, C++ internals) are not exported. The
 * command's attach uses the same reader the other way round: where a function
 * of the target's C library lies. */
#ifndef LW_ELF_SYMBOLS_H
#define LW_ELF_SYMBOLS_H

#include <stdint.h>

typedef struct lw_elf_syms lw_elf_syms;

/* Reads the function symbols of the ELF file at path (none is possible). NULL
 * when it cannot be read or is not a 64-bit ELF file. */
lw_elf_syms *lw_elf_syms_load(const char *path);

/* The same with the data objects too (for lw_elf_syms_lookup by name only:
 * lw_elf_syms_find would then name data). */
lw_elf_syms *lw_elf_syms_load_with_data(const char *path);

/* The function containing vaddr (an address as the file numbers it, i.e.
 * runtime address minus the load bias), or NULL. */
const char *lw_elf_syms_find(const lw_elf_syms *s, uint64_t vaddr);

/* 1 when source lines can be had for the file: it has DWARF line tables, or a
 * separate debug file is installed for it (by build id or .gnu_debuglink). */
/* The address (as the file numbers it) of the function (or, loaded with
 * data, the object) named name; 0 when the file has none. */
uint64_t lw_elf_syms_lookup(const lw_elf_syms *s, const char *name);

/* The same, and the symbol's size in bytes (0 when the table gives none). */
uint64_t lw_elf_syms_lookup_sized(const lw_elf_syms *s, const char *name, uint64_t *size);

int lw_elf_syms_has_debug(const lw_elf_syms *s);

/* 0 when no entry of the file's .dynsym covers vaddr, so that dladdr (which
 * reads the loaded copy of that table) can name nothing there: its walk
 * over every exported symbol is then not worth making. 1 when one may, or
 * when the file's .dynsym was not read (NULL, loaded with data, none). */
int lw_elf_syms_may_export(const lw_elf_syms *s, uint64_t vaddr);

void lw_elf_syms_free(lw_elf_syms *s);

#endif
