/* SPDX-License-Identifier: Apache-2.0 */
/* Call sites: one per distinct call stack, with the bytes it holds.
 *
 * A site's key is its stack (native return addresses, then Python frames as
 * (code, offset) pairs). Sites are never freed, so a pointer to one stays valid
 * for the life of the process and readers (the report) need no lock. Their
 * number is capped (LEAKWATCH_MAX_SITES); stacks beyond the cap are pooled
 * into one overflow site, and counted. */
#ifndef LW_SITES_H
#define LW_SITES_H

#include "lw_uthash.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lw_site {
    UT_hash_handle hh;
    struct lw_site *next; /* every site, newest first (lock-free list) */
    uint64_t hash;
    uint32_t id; /* 1, 2, ... in order of first sight; 0 = overflow */
    uint16_t nnative;
    uint16_t npy;
    uint8_t native_cut; /* the native stack stops at the Python interpreter */
    _Atomic int64_t live_bytes;
    _Atomic int64_t live_count;
    _Atomic uint64_t alloc_count;
    _Atomic uint64_t alloc_bytes;
    _Atomic uint64_t free_count;
    _Atomic uint64_t failed_count;
    _Atomic int64_t floor;       /* lowest live_bytes since the sampler last looked */
    struct lw_site_track *track; /* growth series, kept by the sampler */
    void *py_info;               /* what the Python frames mean, filled once at creation */
    uint32_t nkey;               /* words in key */
    uintptr_t
        key[]; /* key[0] = nnative | npy << 16 | cut << 32 | backward << 33; then the frames */
} lw_site;

/* key[0] bit: the native walk stopped at the interpreter's evaluation frame
 * (stack.h), so the frames below it are not in the key. */
#define LW_SITE_KEY_CUT_SHIFT 32
/* key[0] bit: the Python frames are those of the thread waiting in
 * backward() (record.h), not the allocating thread's own. */
#define LW_SITE_KEY_BACKWARD_SHIFT 33

/* Number of key words for a stack of nnative addresses and npy Python frames. */
#define LW_SITE_KEY_WORDS(nnative, npy) (1u + (unsigned)(nnative) + 2u * (unsigned)(npy))

/* Finds or adds the site for key. Never NULL: past the cap, or when memory
 * cannot be had, it returns the overflow site. *created is set to 1 when the
 * site is new. */
lw_site *lw_site_intern(const uintptr_t *key, uint32_t nkey, uint64_t hash, int *created);

void lw_sites_set_cap(size_t max_sites);
lw_site *lw_sites_first(void); /* then ->next */
size_t lw_sites_count(void);
uint64_t lw_sites_pooled(void); /* allocations attributed to the overflow site */
lw_site *lw_site_overflow(void);

/* Forgets every site (a forked child's first start), so that the child's
 * report holds only its own call sites. Callers make sure nothing records
 * meanwhile. */
void lw_sites_forget_all(void);

/* Fork: all the table's locks, taken before fork and released in both
 * processes after it (lifecycle.c). */
void lw_sites_lock_all(void);
void lw_sites_unlock_all(void);

static inline const uintptr_t *lw_site_native(const lw_site *s) {
    return s->key + 1;
}
static inline const uintptr_t *lw_site_py(const lw_site *s) {
    return s->key + 1 + s->nnative;
}

#endif
