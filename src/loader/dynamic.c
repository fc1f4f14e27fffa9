/* SPDX-License-Identifier: Apache-2.0 */
#include "dynamic.h"

#include <elf.h>
#include <string.h>

void lw_dyn_object_span(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi) {
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < *lo) *lo = a;
        if (a + ph->p_memsz > *hi) *hi = a + ph->p_memsz;
    }
}

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

/* One definition of name at index i that an unversioned reference binds. */
static int binds(const lw_dyn *d, size_t i, const char *name) {
    const ElfW(Sym) *s = &d->symtab[i];
    if (s->st_shndx == SHN_UNDEF || s->st_value == 0) return 0;
    unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
    if (type != STT_FUNC || (bind != STB_GLOBAL && bind != STB_WEAK)) return 0;
    if (ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT) return 0;
    if (d->versym && (d->versym[i] & 0x8000)) return 0; /* a hidden (non-default) version */
    const char *sn = lw_dyn_symbol_name(d, i);
    return sn && strcmp(sn, name) == 0;
}

static uint32_t gnu_hash_of(const char *s) {
    uint32_t h = 5381;
    for (const unsigned char *u = (const unsigned char *)s; *u; u++)
        h = h * 33 + *u;
    return h;
}

static uint32_t sysv_hash_of(const char *s) {
    uint32_t h = 0;
    for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
        h = (h << 4) + *u;
        uint32_t g = h & 0xf0000000u;
        if (g) h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

void *lw_dyn_defined(const lw_dyn *d, const char *name) {
    if (d->gnu_hash) {
        const uint32_t *h = d->gnu_hash;
        uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], shift = h[3];
        if (!nbuckets || !bloom_size) return NULL;
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
        const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t hash = gnu_hash_of(name);
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
        ElfW(Addr) mask =
            ((ElfW(Addr))1 << (hash % bits)) | ((ElfW(Addr))1 << ((hash >> shift) % bits));
        if ((word & mask) != mask) return NULL;
        uint32_t i = buckets[hash % nbuckets];
        if (i < symoffset) return NULL;
        for (;; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((h2 | 1) == (hash | 1) && binds(d, i, name))
                return (void *)(d->base + d->symtab[i].st_value);
            if (h2 & 1) return NULL;
        }
    }
    if (d->hash) {
        uint32_t nbucket = d->hash[0];
        const uint32_t *bucket = d->hash + 2, *chain = bucket + nbucket;
        if (!nbucket) return NULL;
        uint32_t nchain = d->hash[1];
        for (uint32_t i = bucket[sysv_hash_of(name) % nbucket]; i && i < nchain; i = chain[i])
            if (binds(d, i, name)) return (void *)(d->base + d->symtab[i].st_value);
    }
    return NULL;
}
