/* SPDX-License-Identifier: Apache-2.0 */
#include "instance.h"

#include "dl_walk.h"
#include "dynamic.h"

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    uintptr_t self;  /* an address inside this library */
    int done;        /* the first object with the marker was seen */
    int other;       /* and it is not this library */
    char name[4096]; /* its path */
} walk;

/* Runs under the loader's list lock: reads memory only, asks the loader
 * nothing. */
static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    walk *w = arg;
    if (w->done) return 1;
    uintptr_t lo, hi;
    lw_dyn_object_span(info, &lo, &hi);
    int mine = lo < hi && w->self >= lo && w->self < hi;
    const ElfW(Dyn) *ld = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            ld = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    lw_dyn d;
    if (!mine && (!ld || lw_dyn_read(info->dlpi_addr, ld, &d) != 0 ||
                  !lw_dyn_defined(&d, LW_INSTANCE_MARKER)))
        return 0;
    w->done = 1;
    w->other = !mine;
    if (!mine) {
        const char *p = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "the program";
        snprintf(w->name, sizeof w->name, "%s", p);
    }
    return 1;
}

int lw_instance_other(char *path, size_t n) {
    walk w;
    memset(&w, 0, sizeof w);
    w.self = (uintptr_t)&lw_instance_other;
    lw_dl_walk(visit, &w);
    if (!w.other) return 0;
    if (path && n) snprintf(path, n, "%s", w.name);
    return 1;
}
