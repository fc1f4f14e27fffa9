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
    return atomic_load(&overflow.site.alloc_count);
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

static void zero_counts(lw_site *s) {
    atomic_store(&s->live_bytes, 0);
    atomic_store(&s->live_count, 0);
    atomic_store(&s->alloc_count, 0);
    atomic_store(&s->alloc_bytes, 0);
    atomic_store(&s->free_count, 0);
    atomic_store(&s->failed_count, 0);
    atomic_store(&s->floor, 0);
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
    lw_sites_unlock_all();
}

void lw_sites_lock_all(void) {
    for (int i = 0; i < SITE_STRIPES; i++)
        pthread_mutex_lock(&stripes[i].lock);
}

void lw_sites_unlock_all(void) {
    for (int i = SITE_STRIPES - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripes[i].lock);
}
