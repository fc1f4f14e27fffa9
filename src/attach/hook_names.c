/* SPDX-License-Identifier: Apache-2.0 */
#include "hook_names.h"

#include "dynamic.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    void *hook;
} hook_name;
static hook_name *hooks;
static size_t nhooks;

int lw_hook_names_build(const char *late_name, void *late_hook) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)&lw_hook_names_build, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return -1;
    lw_dyn d;
    if (lw_dyn_read(lm->l_addr, lm->l_ld, &d) != 0) return -1;
    size_t n = lw_dyn_symbol_count(&d);
    hook_name *t = calloc(n + 1, sizeof *t);
    if (!t) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ElfW(Sym) *s = &d.symtab[i];
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
            ELF64_ST_BIND(s->st_info) == STB_LOCAL ||
            ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
            continue;
        const char *name = lw_dyn_symbol_name(&d, i);
        /* The public API (leakwatch_step, ...) is ours to offer, not a hook. */
        if (!name || !strncmp(name, "leakwatch", 9)) continue;
        t[k++] = (hook_name){name, (void *)(lm->l_addr + s->st_value)};
    }
    /* Late only (dlopen, late_dlopen.h): preloaded, an exported dlopen would
     * take every caller's identity (its RUNPATH, $ORIGIN) from dlopen. */
    t[k++] = (hook_name){late_name, late_hook};
    hooks = t;
    nhooks = k;
    return 0;
}

int lw_hook_names_built(void) {
    return hooks != NULL;
}

void *lw_hook_for(const char *name) {
    /* Every hook's name starts with "cu" or "dl". */
    if (!((name[0] == 'c' && name[1] == 'u') || (name[0] == 'd' && name[1] == 'l'))) return NULL;
    for (size_t i = 0; i < nhooks; i++)
        if (!strcmp(hooks[i].name, name)) return hooks[i].hook;
    return NULL;
}
