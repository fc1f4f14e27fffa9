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

/* A site's counts as one thread made them. Each thread keeps its own cell
 * per site (a shard: written by that thread alone, with plain loads and
 * stores, no locked instruction), and a site's counts are the sum of every
 * live thread's cell and the site's `folded` cell, to which an exiting
 * thread's cells are added (lw_site_get). Live bytes are alloc_bytes -
 * freed_bytes; a free counts in the freeing thread's cell. */
typedef struct {
    _Atomic uint64_t alloc_count;
    _Atomic uint64_t alloc_bytes;
    _Atomic uint64_t free_count;
    _Atomic uint64_t freed_bytes;
} lw_site_cell;

typedef struct lw_site {
    UT_hash_handle hh;
    struct lw_site *next; /* every site, newest first (lock-free list) */
    uint64_t hash;
    uint32_t id; /* 1, 2, ... in order of first sight; 0 = overflow */
    uint16_t nnative;
    uint16_t npy;
    uint8_t native_cut; /* the native stack stops at the Python interpreter */
    /* The counts of threads that have exited, and of events that found no
     * shard of their own (see lw_site_cell below); read with lw_site_get. */
    lw_site_cell folded;
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

/* ---- per-thread shards of the sites' counts ---- */

/* A site's counts, summed over the threads' shards: exact once the events
 * counted have returned (one in progress on another thread may be in or
 * out). */
typedef struct {
    uint64_t alloc_count, alloc_bytes, free_count, failed_count;
    int64_t live_bytes, live_count;
} lw_site_counts;
void lw_site_get(const lw_site *s, lw_site_counts *out);
int64_t lw_site_live_bytes(const lw_site *s);

/* A thread's shard: a directory of pages of cells, indexed by site id. The
 * directory and pages change only under the shards' lock (a reader may be
 * walking them); the cells only by the owning thread. */
#define LW_SITE_PAGE 16
typedef struct lw_site_shard {
    struct lw_site_shard *next, *prev; /* every live thread's, under the lock */
    uint32_t npages;
    lw_site_cell **pages;
} lw_site_shard;

/* This thread's shard, and the cell of the site it counted last (most
 * events repeat the last one's site: then the cell is found with two loads
 * off the thread pointer and a compare, no directory walk). Initial-exec: no
 * __tls_get_addr call (24 bytes of the static TLS surplus when the library
 * is loaded by attach). */
typedef struct {
    lw_site_shard *shard;
    const struct lw_site *last;
    lw_site_cell *cell;
} lw_site_tls;
extern __thread lw_site_tls lw_my_sites __attribute__((tls_model("initial-exec")));

/* This thread's cell for s, found in its shard's directory (made on the
 * thread's first event, a page of cells on its first event on one of 16
 * site ids): out of line. NULL when none could be had: the caller then
 * counts into s->folded with atomic adds. */
lw_site_cell *lw_site_cell_slow(const lw_site *s);
static inline lw_site_cell *lw_site_my_cell(const lw_site *s) {
    if (__builtin_expect(lw_my_sites.last == s, 1)) return lw_my_sites.cell;
    return lw_site_cell_slow(s);
}

/* One writer per cell: a relaxed load and store, no lock prefix. */
static inline void lw_cell_bump(_Atomic uint64_t *c, uint64_t v) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static inline void lw_site_count_alloc(lw_site *s, uint64_t size) {
    lw_site_cell *c = lw_site_my_cell(s);
    if (__builtin_expect(c != NULL, 1)) {
        lw_cell_bump(&c->alloc_count, 1);
        lw_cell_bump(&c->alloc_bytes, size);
        return;
    }
    atomic_fetch_add_explicit(&s->folded.alloc_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->folded.alloc_bytes, size, memory_order_relaxed);
}

static inline void lw_site_count_free(lw_site *s, uint64_t size) {
    lw_site_cell *c = lw_site_my_cell(s);
    if (__builtin_expect(c != NULL, 1)) {
        lw_cell_bump(&c->free_count, 1);
        lw_cell_bump(&c->freed_bytes, size);
        return;
    }
    atomic_fetch_add_explicit(&s->folded.free_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->folded.freed_bytes, size, memory_order_relaxed);
}

/* Fork, in the child at once: the other threads are gone, and their shards
 * are folded into the sites (their exit hooks will never run). */
void lw_sites_after_fork_child(void);

/* Shards alive (tests). */
size_t lw_site_shards_count(void);

static inline const uintptr_t *lw_site_native(const lw_site *s) {
    return s->key + 1;
}
static inline const uintptr_t *lw_site_py(const lw_site *s) {
    return s->key + 1 + s->nnative;
}

#endif
