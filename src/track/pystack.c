/* SPDX-License-Identifier: Apache-2.0 */
#include "pystack.h"

#include "sites.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

void lw_pystack_key(const lw_pyframe *f, int n, uintptr_t *words) {
    for (int i = 0; i < n; i++) {
        words[2 * i] = (uintptr_t)f[i].code;
        words[2 * i + 1] = (uintptr_t)(uint32_t)f[i].instr | (uintptr_t)f[i].entry << 32;
    }
}

void lw_pystack_attach(lw_site *s, const lw_pyframe *f, int n) {
    lw_pystack *p = calloc(1, sizeof *p + (size_t)n * sizeof p->f[0]);
    if (!p) return;
    p->n = n;
    for (int i = 0; i < n; i++) {
        lw_py_location loc;
        p->f[i].entry = f[i].entry;
        p->f[i].line = -1;
        if (lw_py_describe(&f[i], &loc) == 0) {
            p->f[i].file = loc.file;
            p->f[i].function = loc.function;
            p->f[i].line = loc.line;
        }
    }
    /* The report may read the site concurrently: publish once, whole. */
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&s->py_info, &expected, p)) {
        for (int i = 0; i < n; i++)
            free(p->f[i].file), free(p->f[i].function);
        free(p);
    }
}

const lw_pystack *lw_pystack_of(const lw_site *s) {
    return atomic_load((void *_Atomic *)&s->py_info);
}
