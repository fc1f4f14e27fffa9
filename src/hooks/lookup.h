/* SPDX-License-Identifier: Apache-2.0 */
/* The driver functions leakwatch hands out wrappers for (defined in driver.c,
 * next to the wrappers) and what lookup.c needs to pick one. */
#ifndef LW_HOOKS_LOOKUP_H
#define LW_HOOKS_LOOKUP_H

#include <leakwatch/cuda_api.h>

#include <stddef.h>

/* Wrappers per wrapped function, each bound to one real function: the plain
 * and _ptsz versions of an async function share a signature and each keep
 * their own. */
#define LW_SLOTS 3

typedef struct {
    const char *name;  /* exported, versioned name (dlsym) */
    const char *base;  /* name asked of cuGetProcAddress */
    int min_version;   /* lookups from this version on return this signature */
    int below_version; /* ... and before this one (0: no newer version known) */
    void *_Atomic *real;
    void *const *slots;
} lw_driver_entry;

/* A table of driver hooks (driver.c's, from hook_list.h). */
typedef struct {
    const lw_driver_entry *entries;
    size_t count;
} lw_driver_table;

/* The function a lookup hands out for fn, the real function found: the
 * wrapper of t's entry for it (by base name and version, as
 * cuGetProcAddress asks; or by versioned name, as dlsym does), or fn itself
 * when it is not one leakwatch wraps. */
void *lw_lookup_by_base(const lw_driver_table *t, const char *symbol, int version, cuuint64_t flags,
                        void *fn, lw_pfn_cuGetProcAddress_v12000 query_v2);
void *lw_lookup_by_name(const lw_driver_table *t, const char *name, void *fn);

#endif
