/* SPDX-License-Identifier: Apache-2.0 */
/* The cost of naming a report's frames (issue 44): a first report symbolises
 * N distinct return addresses inside one large library, through the shared
 * cache as report.c does (source lines off: addr2line's work is its own
 * process's). Run under callgrind by bench/perf/callgrind_sym.sh, which
 * counts only sym_bench_symbolise's instructions (--toggle-collect).
 *
 *   sym_bench LIBRARY N
 *
 * LIBRARY is dlopened (RTLD_LOCAL); the addresses are spread evenly over its
 * executable segments, as a job's return addresses land anywhere in its code.
 * Prints how many of them got a function name (the same before and after a
 * change that only makes it cheaper); with LW_SYM_PRINT set, every answer. */
#include "symbolize.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name; /* the library's path as given to dlopen */
    uintptr_t lo[8], hi[8];
    int n;
} text;

static int find_text(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    text *t = data;
    if (!info->dlpi_name || strcmp(info->dlpi_name, t->name) != 0) return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum && t->n < 8; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            t->lo[t->n] = info->dlpi_addr + ph->p_vaddr;
            t->hi[t->n++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        }
    }
    return 1;
}

/* What the callgrind run counts: a first report's lookups. */
__attribute__((noinline)) int sym_bench_symbolise(const uintptr_t *addrs, int n) {
    lw_symtab *t = lw_symtab_new();
    int named = 0;
    for (int i = 0; i < n; i++) {
        const lw_symbol *s = lw_symtab_lookup(t, addrs[i]);
        named += s && s->function;
    }
    lw_symtab_free(t);
    return named;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sym_bench LIBRARY N\n");
        return 2;
    }
    int n = atoi(argv[2]);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h || n <= 0) {
        fprintf(stderr, "sym_bench: %s\n", h ? "N must be positive" : dlerror());
        return 2;
    }
    /* Its name as the loader has it (libc: already loaded, under the path
     * the loader found it by). */
    struct link_map *lm = NULL;
    text t = {.name = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm ? lm->l_name : argv[1]};
    dl_iterate_phdr(find_text, &t);
    uintptr_t total = 0;
    for (int i = 0; i < t.n; i++)
        total += t.hi[i] - t.lo[i];
    uintptr_t *addrs = calloc((size_t)n, sizeof *addrs);
    if (!t.n || !addrs || total < (uintptr_t)n) {
        fprintf(stderr, "sym_bench: no code in %s to spread %d addresses over\n", argv[1], n);
        return 2;
    }
    /* Evenly spaced, distinct, each one past a byte of code (a return
     * address follows its call). */
    for (int i = 0; i < n; i++) {
        uintptr_t at = total / (uintptr_t)n * (uintptr_t)i, seg = 0;
        while (at >= t.hi[seg] - t.lo[seg])
            at -= t.hi[seg] - t.lo[seg], seg++;
        addrs[i] = t.lo[seg] + at + 1;
    }
    setenv("LEAKWATCH_SOURCE_LINES", "0", 1);
    int named = sym_bench_symbolise(addrs, n);
    printf("sym_bench: %d of %d addresses named in %s\n", named, n, argv[1]);
    if (getenv("LW_SYM_PRINT")) {
        /* Every answer, to compare two builds' (the same names, modules and
         * offsets before and after a change for speed). */
        lw_symtab *tab = lw_symtab_new();
        for (int i = 0; i < n; i++) {
            const lw_symbol *s = lw_symtab_lookup(tab, addrs[i]);
            printf("%d %s %s+%#lx\n", i, s && s->function ? s->function : "-",
                   s && s->module ? s->module : "-", s ? (unsigned long)s->offset : 0ul);
        }
        lw_symtab_free(tab);
    }
    free(addrs);
    lw_symtab_release();
    dlclose(h);
    return 0;
}
