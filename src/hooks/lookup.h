/* SPDX-License-Identifier: Apache-2.0 */
/* The driver functions leakwatch hands out wrappers for (defined in driver.c,
 * next to the wrappers) and what lookup.c needs to pick one. */
#ifndef LW_HOOKS_LOOKUP_H
#define LW_HOOKS_LOOKUP_H

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

extern const lw_driver_entry lw_driver_entries[];
extern const size_t lw_driver_entry_count;

#endif
