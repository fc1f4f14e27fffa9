/* SPDX-License-Identifier: Apache-2.0 */
/* How a lookup of a driver function (cuGetProcAddress by base name and
 * version, dlsym by versioned name) is answered: which entry of a table of
 * driver hooks it asks for, whether its signature is one leakwatch knows, and
 * which of the entry's slots (a wrapper bound to one real function) it gets.
 * The table is the caller's (driver.c hands in its own), so this file calls
 * no other file of the hooks: driver.c -> lookup.c, one way. */
#include "hooks.h"

#include "log.h"
#include "lookup.h"
#include "real.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static const lw_driver_entry *entry_named(const lw_driver_table *t, const char *name) {
    for (size_t i = 0; i < t->count; i++)
        if (strcmp(name, t->entries[i].name) == 0) return &t->entries[i];
    return NULL;
}

static void *wrap(const lw_driver_table *t, const lw_driver_entry *e, void *fn) {
    if (!fn) return fn;
    if (lw_is_own_address((uintptr_t)fn)) {
        /* A driver whose exports can be interposed (built without
         * -Bsymbolic) hands out the address of its exported function, which
         * under LD_PRELOAD is ours: wrap the driver's own function instead.
         * Anything else of ours (a slot) is a wrapper already. */
        const char *name = lw_own_export_name(fn);
        const lw_driver_entry *own = name ? entry_named(t, name) : NULL;
        void *real = own ? lw_driver_symbol(name) : NULL;
        if (!real) return fn; /* our export still reaches the driver */
        e = own;
        fn = real;
    }
    for (int i = 0; i < LW_SLOTS; i++) {
        void *cur = atomic_load_explicit(&e->real[i], memory_order_acquire);
        if (cur == fn) return e->slots[i];
        if (!cur) {
            void *expected = NULL;
            /* The object fn lies in stays loaded while the slot holds it. */
            lw_keep_loaded(fn);
            if (atomic_compare_exchange_strong(&e->real[i], &expected, fn) || expected == fn)
                return e->slots[i];
        }
    }
    lw_keep_loaded(fn);
    lw_log_once(slots_full,
                "more than %d different %s functions were looked up; the later ones "
                "are passed through untracked",
                LW_SLOTS, e->base);
    return fn;
}

void *lw_lookup_by_base(const lw_driver_table *t, const char *symbol, int version, cuuint64_t flags,
                        void *fn, lw_pfn_cuGetProcAddress_v12000 query_v2) {
    if (!lw_maybe_driver_name(symbol)) return fn;
    for (size_t i = 0; i < t->count; i++) {
        const lw_driver_entry *e = &t->entries[i];
        if (strcmp(symbol, e->base) != 0) continue;
        if (version < e->min_version || (e->below_version && version >= e->below_version)) continue;
        if (version > LW_CUDA_VERSION_KNOWN) {
            /* A newer CUDA may have a newer signature under this name. Wrap
             * only if the driver returns the same function for the version
             * whose signature we know. */
            void *known = NULL;
            if (!query_v2 ||
                query_v2(symbol, &known, LW_CUDA_VERSION_KNOWN, flags, NULL) != CUDA_SUCCESS ||
                known != fn) {
                lw_log_once(newer_abi,
                            "%s looked up for CUDA %d, newer than leakwatch knows: "
                            "passed through untracked",
                            symbol, version);
                return fn;
            }
        }
        return wrap(t, e, fn);
    }
    return fn;
}

void *lw_lookup_by_name(const lw_driver_table *t, const char *name, void *fn) {
    if (!fn || !lw_maybe_driver_name(name)) return fn;
    const lw_driver_entry *e = entry_named(t, name);
    return e ? wrap(t, e, fn) : fn;
}
