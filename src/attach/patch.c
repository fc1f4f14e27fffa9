/* SPDX-License-Identifier: Apache-2.0 */
#include "patch.h"

#include "attach_locks.h"
#include "dl_walk.h"
#include "got.h"
#include "hook_names.h"
#include "real.h"

#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    void **slot;
    void *orig; /* what it held: written back at detach */
    void *hook;
} patch;
static patch *patches;
static size_t npatches, patches_cap;
static atomic_int installed;
static unsigned long long seen_adds;

/* One entry: rewritten to the hook of its name, when there is one and the
 * entry does not already lead into leakwatch. */
static void patch_entry(const struct dl_phdr_info *info, const char *name, void **slot, void *cur,
                        int jump_slot, void *arg) {
    (void)info;
    (void)jump_slot;
    (void)arg;
    void *hook = lw_hook_for(name);
    if (!hook) return;
    if (cur == hook || lw_is_own_address((uintptr_t)cur)) return;
    if (npatches == patches_cap) {
        size_t nc = patches_cap ? patches_cap * 2 : 64;
        patch *p = realloc(patches, nc * sizeof *p);
        if (!p) return; /* fewer hooks, never a broken entry */
        patches = p;
        patches_cap = nc;
    }
    if (lw_got_write_slot(slot, hook) == 0) patches[npatches++] = (patch){slot, cur, hook};
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *adds = data;
    *adds = info->dlpi_adds;
    lw_got_walk_object(info, patch_entry, NULL);
    return 0;
}

/* Every loaded object's entries that do not point at a hook yet. Under
 * patch_lock. */
static void patch_all_locked(void) {
    lw_got_read_regions();
    unsigned long long adds = 0;
    lw_dl_walk(patch_object, &adds);
    seen_adds = adds;
}

static int adds_of(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

/* Objects loaded since the last look (a dlopen our hook did not see, by a
 * bare name, or one that called dlopen through a table of its own). */
void lw_patch_tick(void) {
    if (!atomic_load(&installed)) return;
    unsigned long long adds = 0;
    lw_dl_walk(adds_of, &adds);
    if (adds == seen_adds) return;
    lw_patch_lock();
    if (atomic_load(&installed)) patch_all_locked();
    lw_patch_unlock();
}

int lw_patch_installed(void) {
    return atomic_load_explicit(&installed, memory_order_relaxed);
}

size_t lw_patch_install(void) {
    lw_patch_lock();
    atomic_store(&installed, 1);
    patch_all_locked();
    size_t n = npatches;
    lw_patch_unlock();
    return n;
}

/* An entry still lies in a loaded object's writable or RELRO data: the object
 * may have been unloaded since (then its entry is gone with it). */
typedef struct {
    uintptr_t addr;
    int found;
} find_addr;

static int in_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    find_addr *f = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if ((ph->p_type == PT_LOAD || ph->p_type == PT_GNU_RELRO) && f->addr >= lo &&
            f->addr < lo + ph->p_memsz) {
            f->found = 1;
            return 1;
        }
    }
    return 0;
}

static size_t unpatch_all_locked(void) {
    lw_got_read_regions();
    size_t restored = 0;
    for (size_t i = npatches; i-- > 0;) {
        patch *p = &patches[i];
        find_addr f = {(uintptr_t)p->slot, 0};
        lw_dl_walk(in_object, &f);
        if (!f.found || lw_got_prot_of(f.addr) < 0) continue;
        /* The dynamic linker may have bound a lazy entry since: leave it. */
        if (__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) != p->hook) continue;
        if (lw_got_write_slot(p->slot, p->orig) == 0) restored++;
    }
    npatches = 0;
    return restored;
}

int lw_patch_uninstall(void) {
    lw_patch_lock();
    int was = atomic_load(&installed);
    if (was) {
        atomic_store(&installed, 0);
        unpatch_all_locked();
    }
    lw_patch_unlock();
    return was ? 0 : -1;
}
