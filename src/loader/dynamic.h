/* SPDX-License-Identifier: Apache-2.0 */
/* A loaded object's dynamic section, read in memory as the dynamic linker
 * reads it: its symbols, their versions and its relocations; and the span of
 * its loaded segments. For the symbol
 * versions of real.c and for the hooks installed late (src/attach/), which
 * rewrite the global offset table entries that those relocations fill. */
#ifndef LW_DYNAMIC_H
#define LW_DYNAMIC_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uintptr_t base; /* load bias */
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz;
    const ElfW(Half) * versym;
    const char *verdef;
    const char *verneed;     /* DT_VERNEED: the versions this object asks of others */
    const ElfW(Rela) * rela; /* DT_RELA, relasz bytes */
    size_t relasz;
    const ElfW(Rela) * jmprel; /* DT_JMPREL (when its entries are Rela), pltrelsz bytes */
    size_t pltrelsz;
    const uint32_t *gnu_hash;
    const uint32_t *hash;
} lw_dyn;

/* The span [lo, hi) of one loaded object's PT_LOAD segments (lo >= hi when
 * it has none). */
void lw_dyn_object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

/* Reads the dynamic section ld of an object loaded at bias base. 0, or -1
 * when it has no symbol table. */
int lw_dyn_read(uintptr_t base, const ElfW(Dyn) * ld, lw_dyn *out);

/* The number of entries of the dynamic symbol table (from its hash table);
 * 0 when unknown. */
size_t lw_dyn_symbol_count(const lw_dyn *d);

/* The name of symbol index i, or NULL. */
const char *lw_dyn_symbol_name(const lw_dyn *d, size_t i);

/* The object's own definition of the function name (never one it imports),
 * as the dynamic linker would bind an unversioned reference to it: global or
 * weak, default visibility, of its default version when it has several
 * (a hidden version never answers). NULL when it has none; an indirect
 * function (whose address is its resolver's) counts as none. */
void *lw_dyn_defined(const lw_dyn *d, const char *name);

/* How the object refers to the undefined symbol name: 1 with *version set
 * (cudaMalloc@libcudart.so.13: only a definition of that version satisfies
 * it), 0 without a version (the first definition in scope order does), -1
 * when it has no such reference or the tables cannot tell. */
int lw_dyn_required_version(const lw_dyn *d, const char *name, const char **version);

#endif
