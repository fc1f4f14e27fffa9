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
        case DT_VERNEED:
            out->verneed = (const char *)p;
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

int lw_dyn_required_version(const lw_dyn *d, const char *name, const char **version) {
    size_t n = lw_dyn_symbol_count(d);
    for (size_t i = 1; i < n; i++) {
        const ElfW(Sym) *s = &d->symtab[i];
        if (s->st_shndx != SHN_UNDEF) continue;
        const char *sn = lw_dyn_symbol_name(d, i);
        if (!sn || strcmp(sn, name) != 0) continue;
        ElfW(Half) v = d->versym ? d->versym[i] & 0x7fff : 0;
        if (v <= 1) return 0; /* local or global: no version asked */
        for (const char *p = d->verneed; p;) {
            const ElfW(Verneed) *vn = (const ElfW(Verneed) *)p;
            const char *a = p + vn->vn_aux;
            for (unsigned k = 0; k < vn->vn_cnt; k++) {
                const ElfW(Vernaux) *aux = (const ElfW(Vernaux) *)a;
                if (aux->vna_other == v) {
                    if (d->strsz && aux->vna_name >= d->strsz) return -1;
                    *version = d->strtab + aux->vna_name;
                    return 1;
                }
                if (!aux->vna_next) break;
                a += aux->vna_next;
            }
            if (!vn->vn_next) break;
            p += vn->vn_next;
        }
        return -1;
    }
    return -1;
}
