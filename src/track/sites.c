/* SPDX-License-Identifier: Apache-2.0 */
#include "sites.h"

#include "hash.h"
#include "tracker_mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

_Thread_local int lw_uthash_oom;

/* New sites are rare after warm-up; striping keeps threads that meet new
 * stacks at the same moment from queueing on one lock. */
#define SITE_STRIPES 16

static struct {
    pthread_mutex_t lock;
    lw_site *table;
    char pad[64 - sizeof(pthread_mutex_t) % 64];
} stripes[SITE_STRIPES] = {
#define S                                                                                          \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, {                                                         \
            0                                                                                      \
        }                                                                                          \
    }
    S, S, S, S, S, S, S, S, S,
    S, S, S, S, S, S, S
#undef S
};

static _Atomic(lw_site *) all_sites;
static atomic_size_t nsites;
static atomic_uint next_id = 1;
static size_t cap = 16384;

static struct {
    lw_site site;
    uintptr_t key[1];
} overflow = {.site = {.id = 0, .nkey = 1}, .key = {0}};

lw_site *lw_site_overflow(void) {
    return &overflow.site;
}
void lw_sites_set_cap(size_t max_sites) {
    cap = max_sites;
}
lw_site *lw_sites_first(void) {
    return atomic_load_explicit(&all_sites, memory_order_acquire);
}
size_t lw_sites_count(void) {
    return atomic_load(&nsites);
}
uint64_t lw_sites_pooled(void) {
    lw_site_counts c;
    lw_site_get(&overflow.site, &c);
    return c.alloc_count;
}

lw_site *lw_site_intern(const uintptr_t *key, uint32_t nkey, uint64_t hash, int *created) {
    *created = 0;
    size_t keylen = nkey * sizeof *key;
    unsigned hv = (unsigned)hash;
    unsigned si = (unsigned)(hash >> 40) % SITE_STRIPES;
    lw_site *s = NULL;
    pthread_mutex_lock(&stripes[si].lock);
    HASH_FIND_BYHASHVALUE(hh, stripes[si].table, key, keylen, hv, s);
    if (s) goto out;
    if (atomic_load(&nsites) >= cap) goto full;
    s = lw_tracker_calloc(1, sizeof *s + keylen);
    if (!s) goto full;
    memcpy(s->key, key, keylen);
    s->nkey = nkey;
    s->hash = hash;
    s->nnative = (uint16_t)(key[0] & 0xffff);
    s->npy = (uint16_t)(key[0] >> 16);
    s->native_cut = (uint8_t)((key[0] >> LW_SITE_KEY_CUT_SHIFT) & 1);
    s->id = atomic_fetch_add(&next_id, 1);
    lw_uthash_oom = 0;
    HASH_ADD_KEYPTR_BYHASHVALUE(hh, stripes[si].table, s->key, keylen, hv, s);
    if (lw_uthash_oom) {
        free(s);
        goto full;
    }
    /* Publish on the list only once fully built: readers take no lock. */
    lw_site *head = atomic_load(&all_sites);
    do
        s->next = head;
    while (!atomic_compare_exchange_weak(&all_sites, &head, s));
    atomic_fetch_add(&nsites, 1);
    *created = 1;
out:
    pthread_mutex_unlock(&stripes[si].lock);
    return s;
full:
    pthread_mutex_unlock(&stripes[si].lock);
    return &overflow.site;
}

static void zero_cell(lw_site_cell *c) {
    atomic_store(&c->alloc_count, 0);
    atomic_store(&c->alloc_bytes, 0);
    atomic_store(&c->free_count, 0);
    atomic_store(&c->freed_bytes, 0);
}

static void zero_counts(lw_site *s) {
    zero_cell(&s->folded);
    atomic_store(&s->failed_count, 0);
    atomic_store(&s->floor, 0);
}

/* ---- per-thread shards of the counts ----
 *
 * A thread's first event makes its shard and registers an exit hook; the
 * hook adds the thread's cells to their sites' `folded` cells and frees the
 * shard, under the lock that readers hold while summing, so that a reader
 * sees each count once: in the shard or folded, never both or neither.
 * Memory: one 512-byte page of cells per 16 site ids a live thread has
 * counted on, plus its directory. Writers (the owning thread) take no lock
 * except to add a page. */
__thread lw_site_tls lw_my_sites __attribute__((tls_model("initial-exec")));
static pthread_mutex_t shards_lock = PTHREAD_MUTEX_INITIALIZER;
static lw_site_shard *shards; /* live threads' shards, under shards_lock */
static size_t nshards;        /* under shards_lock */
static pthread_key_t shard_key;
static pthread_once_t shard_key_once = PTHREAD_ONCE_INIT;
static int shard_key_ok;

static void add_cell(lw_site_cell *to, const lw_site_cell *c) {
    uint64_t ac = atomic_load_explicit(&c->alloc_count, memory_order_relaxed),
             ab = atomic_load_explicit(&c->alloc_bytes, memory_order_relaxed),
             fc = atomic_load_explicit(&c->free_count, memory_order_relaxed),
             fb = atomic_load_explicit(&c->freed_bytes, memory_order_relaxed);
    if (ac) atomic_fetch_add_explicit(&to->alloc_count, ac, memory_order_relaxed);
    if (ab) atomic_fetch_add_explicit(&to->alloc_bytes, ab, memory_order_relaxed);
    if (fc) atomic_fetch_add_explicit(&to->free_count, fc, memory_order_relaxed);
    if (fb) atomic_fetch_add_explicit(&to->freed_bytes, fb, memory_order_relaxed);
}

static lw_site_cell *cell_of(const lw_site_shard *sh, const lw_site *s) {
    uint32_t page = s->id / LW_SITE_PAGE;
    return page < sh->npages && sh->pages[page] ? &sh->pages[page][s->id % LW_SITE_PAGE] : NULL;
}

/* Under shards_lock: the shard's cells into their sites (every site a cell
 * can count is on the list, or the overflow), then it is gone. */
static void fold_shard(lw_site_shard *sh) {
    lw_site_cell *c = cell_of(sh, &overflow.site);
    if (c) add_cell(&overflow.site.folded, c);
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if ((c = cell_of(sh, s)) != NULL) add_cell(&s->folded, c);
    for (uint32_t p = 0; p < sh->npages; p++)
        free(sh->pages[p]);
    free(sh->pages);
    if (sh->prev)
        sh->prev->next = sh->next;
    else
        shards = sh->next;
    if (sh->next) sh->next->prev = sh->prev;
    nshards--;
    free(sh);
}

static void shard_exit(void *arg) {
    lw_site_shard *sh = arg;
    if (lw_my_sites.shard == sh) lw_my_sites = (lw_site_tls){NULL, NULL, NULL};
    pthread_mutex_lock(&shards_lock);
    fold_shard(sh);
    pthread_mutex_unlock(&shards_lock);
}

static void make_shard_key(void) {
    shard_key_ok = pthread_key_create(&shard_key, shard_exit) == 0;
}

lw_site_cell *lw_site_cell_slow(const lw_site *s) {
    lw_site_shard *sh = lw_my_sites.shard;
    uint32_t page = s->id / LW_SITE_PAGE;
    if (sh && page < sh->npages && sh->pages[page]) {
        /* Read without the lock: only this thread changes its directory. */
        lw_my_sites.last = s;
        return lw_my_sites.cell = &sh->pages[page][s->id % LW_SITE_PAGE];
    }
    if (!sh) {
        /* Without the exit hook a thread's counts would be lost with it:
         * such a thread counts into the sites' shared cells. */
        pthread_once(&shard_key_once, make_shard_key);
        if (!shard_key_ok) return NULL;
        sh = lw_tracker_calloc(1, sizeof *sh);
        if (!sh) return NULL;
        if (pthread_setspecific(shard_key, sh) != 0) {
            free(sh);
            return NULL;
        }
        pthread_mutex_lock(&shards_lock);
        sh->next = shards;
        if (shards) shards->prev = sh;
        shards = sh;
        nshards++;
        pthread_mutex_unlock(&shards_lock);
        lw_my_sites.shard = sh;
    }
    lw_site_cell *cell = NULL;
    pthread_mutex_lock(&shards_lock);
    if (page >= sh->npages) {
        uint32_t n = sh->npages ? sh->npages : 64;
        while (n <= page)
            n *= 2;
        lw_site_cell **dir = lw_tracker_calloc(n, sizeof *dir);
        if (!dir) goto out;
        if (sh->npages) memcpy(dir, sh->pages, sh->npages * sizeof *dir);
        free(sh->pages);
        sh->pages = dir;
        sh->npages = n;
    }
    if (!sh->pages[page]) sh->pages[page] = lw_tracker_calloc(LW_SITE_PAGE, sizeof **sh->pages);
    if (sh->pages[page]) cell = &sh->pages[page][s->id % LW_SITE_PAGE];
out:
    pthread_mutex_unlock(&shards_lock);
    if (cell) lw_my_sites.last = s, lw_my_sites.cell = cell;
    return cell;
}

/* A site's counts as plain numbers (a reader's sum). */
typedef struct {
    uint64_t alloc_count, alloc_bytes, free_count, freed_bytes;
} cell_sum;

static inline void sum_cell(cell_sum *to, const lw_site_cell *c) {
    to->alloc_count += atomic_load_explicit(&c->alloc_count, memory_order_relaxed);
    to->alloc_bytes += atomic_load_explicit(&c->alloc_bytes, memory_order_relaxed);
    to->free_count += atomic_load_explicit(&c->free_count, memory_order_relaxed);
    to->freed_bytes += atomic_load_explicit(&c->freed_bytes, memory_order_relaxed);
}

void lw_site_get(const lw_site *s, lw_site_counts *out) {
    cell_sum sum = {0, 0, 0, 0};
    pthread_mutex_lock(&shards_lock);
    sum_cell(&sum, &s->folded);
    for (const lw_site_shard *sh = shards; sh; sh = sh->next) {
        const lw_site_cell *c = cell_of(sh, s);
        if (c) sum_cell(&sum, c);
    }
    pthread_mutex_unlock(&shards_lock);
    out->alloc_count = sum.alloc_count;
    out->alloc_bytes = sum.alloc_bytes;
    out->free_count = sum.free_count;
    out->failed_count = atomic_load(&s->failed_count);
    out->live_bytes = (int64_t)(sum.alloc_bytes - sum.freed_bytes);
    out->live_count = (int64_t)(sum.alloc_count - sum.free_count);
}

int64_t lw_site_live_bytes(const lw_site *s) {
    lw_site_counts c;
    lw_site_get(s, &c);
    return c.live_bytes;
}

size_t lw_site_shards_count(void) {
    pthread_mutex_lock(&shards_lock);
    size_t n = nshards;
    pthread_mutex_unlock(&shards_lock);
    return n;
}

/* Every cell of every shard back to zero (the sites they counted are
 * forgotten; ids start again). Under shards_lock. */
static void zero_shards(void) {
    for (lw_site_shard *sh = shards; sh; sh = sh->next)
        for (uint32_t p = 0; p < sh->npages; p++)
            if (sh->pages[p])
                for (uint32_t i = 0; i < LW_SITE_PAGE; i++)
                    zero_cell(&sh->pages[p][i]);
}

void lw_sites_after_fork_child(void) {
    /* One thread in the child (this one); shards_lock was taken before the
     * fork and given back (lw_sites_unlock_all). */
    pthread_mutex_lock(&shards_lock);
    lw_site_shard *sh = shards;
    while (sh) {
        lw_site_shard *next = sh->next;
        if (sh != lw_my_sites.shard) fold_shard(sh);
        sh = next;
    }
    pthread_mutex_unlock(&shards_lock);
}

void lw_sites_forget_all(void) {
    /* The parent's sites are dropped from the table and the list, not freed:
     * their pages are shared with the parent until written, and freeing
     * would copy them. Pointers to them (thread caches, the failure ring)
     * are cleared by their owners (record.c). */
    lw_sites_lock_all();
    for (int i = 0; i < SITE_STRIPES; i++)
        HASH_CLEAR(hh, stripes[i].table);
    atomic_store(&all_sites, NULL);
    atomic_store(&nsites, 0);
    atomic_store(&next_id, 1);
    zero_counts(&overflow.site);
    zero_shards();
    lw_sites_unlock_all();
}

void lw_sites_lock_all(void) {
    for (int i = 0; i < SITE_STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
    pthread_mutex_lock(&shards_lock);
}

void lw_sites_unlock_all(void) {
    pthread_mutex_unlock(&shards_lock);
    for (int i = SITE_STRIPES - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripes[i].lock);
}
