/* SPDX-License-Identifier: Apache-2.0 */
#include "dynamic.h"

#include <elf.h>
#include <string.h>

int lw_dyn_read(uintptr_t base, const ElfW(Dyn) * ld, lw_dyn *out) {
    memset(out, 0, sizeof *out);
    out->base = base;
    int pltrel_rela = 1;
    const ElfW(Rela) *jmprel = NULL;
    for (const ElfW(Dyn) *d = ld; d && d->d_tag != DT_NULL; d++) {
        /* glibc relocates the addresses in place on most targets, not on all. */
        uintptr_t p = d->d_un.d_ptr;
        if (p < base) p += base;
        switch (d->d_tag) {
        case DT_SYMTAB:
            out->symtab = (const ElfW(Sym) *)p;
            break;
        case DT_STRTAB:
            out->strtab = (const char *)p;
            break;
        case DT_STRSZ:
            out->strsz = d->d_un.d_val;
            break;
        case DT_VERSYM:
            out->versym = (const ElfW(Half) *)p;
            break;
        case DT_VERDEF:
            out->verdef = (const char *)p;
            break;
        case DT_RELA:
            out->rela = (const ElfW(Rela) *)p;
            break;
        case DT_RELASZ:
            out->relasz = d->d_un.d_val;
            break;
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)p;
            break;
        case DT_PLTRELSZ:
            out->pltrelsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel_rela = d->d_un.d_val == DT_RELA;
            break;
        case DT_GNU_HASH:
            out->gnu_hash = (const uint32_t *)p;
            break;
        case DT_HASH:
            out->hash = (const uint32_t *)p;
            break;
        default:
            break;
        }
    }
    if (pltrel_rela)
        out->jmprel = jmprel;
    else
        out->pltrelsz = 0;
    if (!out->rela) out->relasz = 0;
    return out->symtab && out->strtab ? 0 : -1;
}

size_t lw_dyn_symbol_count(const lw_dyn *d) {
    if (d->hash) return d->hash[1]; /* nchain */
    if (!d->gnu_hash) return 0;
    /* GNU hash: the highest index in any chain, plus one. */
    const uint32_t *h = d->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
    const uint32_t *buckets = h + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last) last = buckets[i];
    if (last < symoffset) return symoffset;
    while (!(chain[last - symoffset] & 1))
        last++;
    return (size_t)last + 1;
}

const char *lw_dyn_symbol_name(const lw_dyn *d, size_t i) {
    const ElfW(Sym) *s = &d->symtab[i];
    if (d->strsz && s->st_name >= d->strsz) return NULL;
    return d->strtab + s->st_name;
}
