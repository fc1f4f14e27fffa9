/* SPDX-License-Identifier: Apache-2.0 */
#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

typedef struct {
    uint64_t addr, size;
    const char *name; /* points into names */
} sym;

/* [lo, hi): addresses some .dynsym entry covers. */
typedef struct {
    uint64_t lo, hi;
} span;

struct lw_elf_syms {
    sym *syms;
    size_t n;
    char *names;
    int has_debug;
    /* What dladdr could name (lw_elf_syms_may_export): the union of the
     * .dynsym entries' ranges, sorted and disjoint; dyn_known is 0 when the
     * file's .dynsym was not read (then anything may be). */
    span *dyn;
    size_t ndyn;
    int dyn_known;
};

static int by_addr(const void *a, const void *b) {
    const sym *x = a, *y = b;
    if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
    /* Prefer a sized symbol over an alias of size 0 at the same address. */
    return (x->size < y->size) - (x->size > y->size);
}

/* Sorts v by by_addr, stably: symbols equal by it (C++ constructors'
 * C1/C2 aliases, of one address and size) stay in the table's order, as
 * glibc's qsort (a merge sort) left them, so that lw_elf_syms_find names
 * the same one. A radix sort of the addresses (11 bits a pass, from the
 * lowest address up: three passes for a module of up to 8 GiB), then
 * insertion by size within each run of one address: a few instructions a
 * symbol where qsort's comparisons through a pointer cost some 25 each
 * (libtorch_cpu: 29,000 functions). */
#define RADIX_BITS 11
#define BUCKETS ((size_t)1 << RADIX_BITS)
static void sort_syms(sym *v, size_t n) {
    if (n < 2) return;
    sym *tmp = malloc(n * sizeof *tmp);
    size_t *pos = malloc(BUCKETS * sizeof *pos); /* not on the report thread's small stack */
    if (!tmp || !pos) {
        free(tmp);
        free(pos);
        qsort(v, n, sizeof *v, by_addr); /* out of memory: as before */
        return;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].addr < lo) lo = v[i].addr;
        if (v[i].addr > hi) hi = v[i].addr;
    }
    sym *from = v, *to = tmp;
    for (unsigned shift = 0; shift < 64 && (hi - lo) >> shift; shift += RADIX_BITS) {
        memset(pos, 0, BUCKETS * sizeof *pos);
        for (size_t i = 0; i < n; i++)
            pos[((from[i].addr - lo) >> shift) & (BUCKETS - 1)]++;
        for (size_t d = 0, sum = 0; d < BUCKETS; d++) {
            size_t c = pos[d];
            pos[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            to[pos[((from[i].addr - lo) >> shift) & (BUCKETS - 1)]++] = from[i];
        sym *t = from;
        from = to;
        to = t;
    }
    if (from != v) memcpy(v, from, n * sizeof *v);
    free(tmp);
    free(pos);
    /* Within each run of one address, by size (insertion: stable, and the
     * runs are short). */
    for (size_t i = 1; i < n; i++) {
        if (by_addr(&v[i - 1], &v[i]) <= 0) continue;
        sym x = v[i];
        size_t j = i;
        for (; j > 0 && by_addr(&v[j - 1], &x) > 0; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Bounds-checked view of a mapped file: a corrupt or truncated file must not
 * make the report writer read outside the mapping. */
static int in_file(size_t file_size, uint64_t off, uint64_t len) {
    return off <= file_size && len <= file_size - off;
}

/* The name of section h, or "" (bounds-checked against the section names). */
static const char *section_name(const unsigned char *map, size_t size, const Elf64_Ehdr *eh,
                                const Elf64_Shdr *sh, const Elf64_Shdr *h) {
    if (eh->e_shstrndx == SHN_UNDEF || eh->e_shstrndx >= eh->e_shnum) return "";
    const Elf64_Shdr *names = &sh[eh->e_shstrndx];
    if (!in_file(size, names->sh_offset, names->sh_size) || h->sh_name >= names->sh_size) return "";
    const char *n = (const char *)map + names->sh_offset + h->sh_name;
    return memchr(n, '\0', names->sh_size - h->sh_name) ? n : "";
}

static int readable(const char *path) {
    return access(path, R_OK) == 0;
}

/* Whether source lines can be had for this file: line tables in the file
 * itself, or a separate debug file where the debuggers look for one (by
 * build id under /usr/lib/debug/.build-id, or by .gnu_debuglink name next to
 * the file, in its .debug folder, or under /usr/lib/debug). Asking addr2line
 * about a file without any would only cost a process. */
static int debug_info_exists(const char *path, const unsigned char *map, size_t size,
                             const Elf64_Ehdr *eh, const Elf64_Shdr *sh) {
    char cand[PATH_MAX];
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *h = &sh[i];
        const char *name = section_name(map, size, eh, sh, h);
        if ((!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line") ||
             !strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) &&
            h->sh_type != SHT_NOBITS)
            return 1;
        if (h->sh_type == SHT_NOTE && !strcmp(name, ".note.gnu.build-id") &&
            in_file(size, h->sh_offset, h->sh_size) && h->sh_size > sizeof(Elf64_Nhdr)) {
            const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(map + h->sh_offset);
            uint64_t desc = sizeof *nh + ((nh->n_namesz + 3ull) & ~3ull);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_descsz >= 2 && nh->n_descsz <= 64 &&
                desc + nh->n_descsz <= h->sh_size) {
                const unsigned char *id = map + h->sh_offset + desc;
                int n = snprintf(cand, sizeof cand, "/usr/lib/debug/.build-id/%02x/", id[0]);
                for (unsigned k = 1; k < nh->n_descsz; k++)
                    n += snprintf(cand + n, sizeof cand - (size_t)n, "%02x", id[k]);
                snprintf(cand + n, sizeof cand - (size_t)n, ".debug");
                if (readable(cand)) return 1;
            }
        }
        if (!strcmp(name, ".gnu_debuglink") && in_file(size, h->sh_offset, h->sh_size) &&
            h->sh_size > 1) {
            const char *link = (const char *)map + h->sh_offset;
            size_t len = strnlen(link, h->sh_size);
            const char *slash = strrchr(path, '/');
            int dir = slash ? (int)(slash - path) : 0;
            if (len == h->sh_size || memchr(link, '/', len)) continue;
            if ((snprintf(cand, sizeof cand, "%.*s/%s", dir, path, link) < (int)sizeof cand &&
                 readable(cand) && strcmp(cand, path) != 0) ||
                (snprintf(cand, sizeof cand, "%.*s/.debug/%s", dir, path, link) <
                     (int)sizeof cand &&
                 readable(cand)) ||
                (snprintf(cand, sizeof cand, "/usr/lib/debug%.*s/%s", dir, path, link) <
                     (int)sizeof cand &&
                 readable(cand)))
                return 1;
        }
    }
    return 0;
}

/* The union of the ranges of tab's entries that dladdr weighs (defined or
 * with a value, not absolute, not thread-local: glibc's determine_info),
 * each [value, value + size), or [value, value + 1) when it has no size
 * (dladdr matches those at their address only). A superset of where
 * dladdr finds a symbol; an address outside it gets no name from dladdr. */
static void dyn_spans(lw_elf_syms *out, const Elf64_Sym *es, size_t nsyms) {
    sym *v = malloc((nsyms ? nsyms : 1) * sizeof *v);
    if (!v) return;
    size_t n = 0;
    for (size_t i = 0; i < nsyms; i++) {
        if ((es[i].st_shndx == SHN_UNDEF && !es[i].st_value) || es[i].st_shndx == SHN_ABS ||
            ELF64_ST_TYPE(es[i].st_info) == STT_TLS)
            continue;
        uint64_t len = es[i].st_size ? es[i].st_size : 1;
        if (es[i].st_value > UINT64_MAX - len) len = UINT64_MAX - es[i].st_value;
        v[n++] = (sym){es[i].st_value, len, NULL};
    }
    sort_syms(v, n);
    span *d = malloc((n ? n : 1) * sizeof *d);
    if (d) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t hi = v[i].addr + v[i].size;
            if (m && v[i].addr <= d[m - 1].hi) {
                if (hi > d[m - 1].hi) d[m - 1].hi = hi;
            } else {
                d[m++] = (span){v[i].addr, hi};
            }
        }
        out->dyn = d;
        out->ndyn = m;
        out->dyn_known = 1;
    }
    free(v);
}

static lw_elf_syms *load(const char *path, int objects) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    const unsigned char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
#if defined(__SANITIZE_ADDRESS__)
    /* In a forked child of a threaded process, the mapping can land where a
     * parent thread's stack was, whose shadow still holds stack poison. */
    __asan_unpoison_memory_region(map, size);
#endif

    lw_elf_syms *out = NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        goto done;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);

    out = calloc(1, sizeof *out);
    if (!out) goto done;
    out->has_debug = debug_info_exists(path, map, size, eh, sh);
    /* Names: what dladdr could give for an address the symbol table leaves
     * unnamed (symbolize.c asks it only when this says it may). */
    for (unsigned i = 0; !objects && i < eh->e_shnum; i++)
        if (sh[i].sh_type == SHT_DYNSYM) {
            if (sh[i].sh_entsize == sizeof(Elf64_Sym) &&
                in_file(size, sh[i].sh_offset, sh[i].sh_size))
                dyn_spans(out, (const Elf64_Sym *)(map + sh[i].sh_offset),
                          sh[i].sh_size / sizeof(Elf64_Sym));
            break;
        }

    /* Prefer .symtab (has every function); fall back to .dynsym. */
    const Elf64_Shdr *tab = NULL;
    for (int pass = 0; pass < 2 && !tab; pass++)
        for (unsigned i = 0; i < eh->e_shnum; i++)
            if (sh[i].sh_type == (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) && sh[i].sh_size) {
                tab = &sh[i];
                break;
            }
    /* No symbols is still an answer: the debug information may name things. */
    if (!tab || tab->sh_link >= eh->e_shnum || tab->sh_entsize != sizeof(Elf64_Sym)) goto done;
    const Elf64_Shdr *strs = &sh[tab->sh_link];
    if (!in_file(size, tab->sh_offset, tab->sh_size) ||
        !in_file(size, strs->sh_offset, strs->sh_size) || strs->sh_size == 0)
        goto done;
    const Elf64_Sym *es = (const Elf64_Sym *)(map + tab->sh_offset);
    size_t nsyms = tab->sh_size / sizeof(Elf64_Sym);
    const char *strtab = (const char *)(map + strs->sh_offset);

    size_t count = 0;
    for (size_t i = 0; i < nsyms; i++) {
        unsigned type = ELF64_ST_TYPE(es[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC && !(objects && type == STT_OBJECT)) ||
            !es[i].st_value || es[i].st_name >= strs->sh_size)
            continue;
        count++;
    }
    if (!count) goto done;
    /* The string table copied whole, one terminator added after it (a name
     * running off a corrupt table's end stops there): one copy, where a
     * measure and a copy of each name cost a few calls per symbol. The
     * table holds a few names besides the functions' (data, files). */
    if (!(out->syms = malloc(count * sizeof *out->syms)) ||
        !(out->names = malloc(strs->sh_size + 1))) {
        lw_elf_syms_free(out);
        out = NULL;
        goto done;
    }
    memcpy(out->names, strtab, strs->sh_size);
    out->names[strs->sh_size] = '\0';
    for (size_t i = 0; i < nsyms; i++) {
        unsigned type = ELF64_ST_TYPE(es[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC && !(objects && type == STT_OBJECT)) ||
            !es[i].st_value || es[i].st_name >= strs->sh_size)
            continue;
        out->syms[out->n++] = (sym){es[i].st_value, es[i].st_size, out->names + es[i].st_name};
    }
    sort_syms(out->syms, out->n);
done:
    munmap((void *)map, size);
    return out;
}

lw_elf_syms *lw_elf_syms_load(const char *path) {
    return load(path, 0);
}

lw_elf_syms *lw_elf_syms_load_with_data(const char *path) {
    return load(path, 1);
}

const char *lw_elf_syms_find(const lw_elf_syms *s, uint64_t vaddr) {
    if (!s || !s->n) return NULL;
    size_t lo = 0, hi = s->n; /* first symbol with addr > vaddr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Among the symbols starting at or below vaddr, the nearest ones first;
     * the first that covers vaddr wins (symbols can nest: aliases, cold parts). */
    for (size_t i = lo; i > 0 && lo - i < 8; i--) {
        const sym *c = &s->syms[i - 1];
        if (vaddr < c->addr + (c->size ? c->size : 1)) return c->name;
    }
    return NULL;
}

uint64_t lw_elf_syms_lookup_sized(const lw_elf_syms *s, const char *name, uint64_t *size) {
    if (size) *size = 0;
    if (!s) return 0;
    size_t len = strlen(name);
    for (size_t i = 0; i < s->n; i++) {
        /* .symtab spells versioned definitions "dlopen@@GLIBC_2.34". */
        const char *n = s->syms[i].name;
        if (!strncmp(n, name, len) && (n[len] == '\0' || n[len] == '@')) {
            if (size) *size = s->syms[i].size;
            return s->syms[i].addr;
        }
    }
    return 0;
}

uint64_t lw_elf_syms_lookup(const lw_elf_syms *s, const char *name) {
    return lw_elf_syms_lookup_sized(s, name, NULL);
}

int lw_elf_syms_may_export(const lw_elf_syms *s, uint64_t vaddr) {
    if (!s || !s->dyn_known) return 1;
    size_t lo = 0, hi = s->ndyn; /* first span starting above vaddr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->dyn[mid].lo <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && vaddr < s->dyn[lo - 1].hi;
}

int lw_elf_syms_has_debug(const lw_elf_syms *s) {
    return s && s->has_debug;
}

void lw_elf_syms_free(lw_elf_syms *s) {
    if (!s) return;
    free(s->syms);
    free(s->names);
    free(s->dyn);
    free(s);
}
