/* SPDX-License-Identifier: Apache-2.0 */
#include "got.h"

#include "arch.h"
#include "dynamic.h"
#include "real.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- memory protections, from /proc/self/maps ---- */
typedef struct {
    uintptr_t lo, hi;
    int prot;
} region;
static region *regions;
static size_t nregions;

void lw_got_read_regions(void) {
    free(regions);
    regions = NULL;
    nregions = 0;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return;
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
        if (nregions == cap) {
            size_t nc = cap ? cap * 2 : 256;
            region *r = realloc(regions, nc * sizeof *r);
            if (!r) break;
            regions = r;
            cap = nc;
        }
        int prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                   (perms[2] == 'x' ? PROT_EXEC : 0);
        regions[nregions++] = (region){lo, hi, prot};
    }
    fclose(f);
}

int lw_got_prot_of(uintptr_t addr) {
    for (size_t i = 0; i < nregions; i++)
        if (addr >= regions[i].lo && addr < regions[i].hi) return regions[i].prot;
    return -1;
}

int lw_got_write_slot(void **slot, void *value) {
    uintptr_t a = (uintptr_t)slot;
    int prot = lw_got_prot_of(a);
    if (prot < 0 || !(prot & PROT_READ)) return -1;
    if (prot & PROT_WRITE) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 0;
    }
    uintptr_t page = a & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
    size_t len = (size_t)sysconf(_SC_PAGESIZE);
    if (mprotect((void *)page, len, prot | PROT_WRITE) != 0) return -1;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect((void *)page, len, prot);
    return 0;
}

static int is_dynamic_linker(const char *name) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so", 7) ||
           !strncmp(base, "linux-vdso", 10) || !strncmp(base, "linux-gate", 10);
}

static void walk_relocs(const struct dl_phdr_info *info, const ElfW(Rela) * r, size_t bytes,
                        const lw_dyn *d, lw_got_visit visit, void *arg) {
    for (size_t i = 0; r && i < bytes / sizeof *r; i++) {
        unsigned type = (unsigned)ELF64_R_TYPE(r[i].r_info);
        if (type != LW_ARCH_R_JUMP_SLOT && type != LW_ARCH_R_GLOB_DAT) continue;
        size_t sym = ELF64_R_SYM(r[i].r_info);
        if (!sym) continue;
        const char *name = lw_dyn_symbol_name(d, sym);
        if (!name) continue;
        void **slot = (void **)(info->dlpi_addr + r[i].r_offset);
        visit(info, name, slot, __atomic_load_n(slot, __ATOMIC_ACQUIRE),
              type == LW_ARCH_R_JUMP_SLOT, arg);
    }
}

void lw_got_walk_object(const struct dl_phdr_info *info, lw_got_visit visit, void *arg) {
    if (is_dynamic_linker(info->dlpi_name ? info->dlpi_name : "")) return;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t first = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_LOAD && !first) first = info->dlpi_addr + ph->p_vaddr;
    }
    if (!dyn || lw_is_own_address(first)) return;
    lw_dyn d;
    if (lw_dyn_read(info->dlpi_addr, dyn, &d) != 0) return;
    walk_relocs(info, d.jmprel, d.pltrelsz, &d, visit, arg);
    walk_relocs(info, d.rela, d.relasz, &d, visit, arg);
}
