#include "live.h"

#include "hash.h"
#include "tracker_mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64
#define SLAB_RECORDS 256

typedef struct stripe {
    pthread_mutex_t lock;
    lw_alloc *table[LW_CLASS_COUNT];
    lw_alloc *free_list; /* recycled records, linked through .site */
} stripe;

/* One cache line per stripe, so neighbouring stripes do not share one. */
typedef union {
    stripe s;
    char pad[128];
} padded_stripe;

static padded_stripe stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t nrecords;
static atomic_uint_fast64_t slab_bytes;

static void init_stripes(void) {
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i].s.lock, NULL);
}

static inline unsigned hash_key(lw_key_class cls, uint64_t key) {
    return (unsigned)lw_mix64(key ^ ((uint64_t)cls << 62));
}

static inline stripe *stripe_of(unsigned hv) {
    return &stripes[(hv >> 20) % STRIPES].s;
}

/* Records come from slabs, so an allocation event rarely calls malloc. Called
 * with the stripe's lock held. */
static lw_alloc *take_record(stripe *st) {
    if (!st->free_list) {
        lw_alloc *slab = lw_tracker_malloc(SLAB_RECORDS * sizeof *slab);
        if (!slab) return NULL;
        atomic_fetch_add(&slab_bytes, SLAB_RECORDS * sizeof *slab);
        for (int i = 0; i < SLAB_RECORDS; i++) {
            slab[i].site = (struct lw_site *)st->free_list;
            st->free_list = &slab[i];
        }
    }
    lw_alloc *r = st->free_list;
    st->free_list = (lw_alloc *)r->site;
    return r;
}

static void give_record(stripe *st, lw_alloc *r) {
    r->site = (struct lw_site *)st->free_list;
    st->free_list = r;
}

int lw_live_insert(const lw_alloc *rec, lw_alloc *replaced) {
    pthread_once(&stripes_once, init_stripes);
    unsigned hv = hash_key(rec->cls, rec->key);
    stripe *st = stripe_of(hv);
    int result = 0;
    pthread_mutex_lock(&st->lock);
    lw_alloc *old = NULL;
    HASH_FIND_BYHASHVALUE(hh, st->table[rec->cls], &rec->key, sizeof rec->key, hv, old);
    if (old) {
        /* Same key live twice: the first one's free went by unseen. Keep the
         * newest, hand the old one back so its bytes are taken off its site. */
        *replaced = *old;
        UT_hash_handle hh = old->hh;
        *old = *rec;
        old->hh = hh;
        result = 1;
        goto out;
    }
    lw_alloc *r = take_record(st);
    if (!r) {
        result = -1;
        goto out;
    }
    *r = *rec;
    lw_uthash_oom = 0;
    HASH_ADD_KEYPTR_BYHASHVALUE(hh, st->table[rec->cls], &r->key, sizeof r->key, hv, r);
    if (lw_uthash_oom) {
        give_record(st, r);
        result = -1;
        goto out;
    }
    atomic_fetch_add_explicit(&nrecords, 1, memory_order_relaxed);
out:
    pthread_mutex_unlock(&st->lock);
    return result;
}

int lw_live_remove(lw_key_class cls, uint64_t key, lw_alloc *out) {
    pthread_once(&stripes_once, init_stripes);
    unsigned hv = hash_key(cls, key);
    stripe *st = stripe_of(hv);
    lw_alloc *r = NULL;
    pthread_mutex_lock(&st->lock);
    HASH_FIND_BYHASHVALUE(hh, st->table[cls], &key, sizeof key, hv, r);
    if (r) {
        *out = *r;
        HASH_DELETE(hh, st->table[cls], r);
        give_record(st, r);
        atomic_fetch_sub_explicit(&nrecords, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&st->lock);
    return r != NULL;
}

void lw_live_scan(void (*fn)(const lw_alloc *r, void *arg), void *arg) {
    pthread_once(&stripes_once, init_stripes);
    for (int i = 0; i < STRIPES; i++) {
        stripe *st = &stripes[i].s;
        pthread_mutex_lock(&st->lock);
        for (int c = 0; c < LW_CLASS_COUNT; c++)
            for (lw_alloc *r = st->table[c]; r; r = r->hh.next)
                fn(r, arg);
        pthread_mutex_unlock(&st->lock);
    }
}

uint64_t lw_live_records(void) {
    return atomic_load(&nrecords);
}

uint64_t lw_live_overhead_bytes(void) {
    /* Slabs plus uthash's bucket arrays (about one bucket, 16 B, per record). */
    return atomic_load(&slab_bytes) + 16 * atomic_load(&nrecords);
}

void lw_live_forget_all(void) {
    pthread_once(&stripes_once, init_stripes);
    for (int i = 0; i < STRIPES; i++) {
        stripe *st = &stripes[i].s;
        pthread_mutex_lock(&st->lock);
        for (int c = 0; c < LW_CLASS_COUNT; c++) {
            lw_alloc *r, *next;
            /* The records go back to the stripe's free list (their slabs are
             * kept: the child is likely to need as many); the buckets go. */
            HASH_ITER(hh, st->table[c], r, next) {
                HASH_DELETE(hh, st->table[c], r);
                give_record(st, r);
            }
        }
        pthread_mutex_unlock(&st->lock);
    }
    atomic_store(&nrecords, 0);
}

void lw_live_lock_all(void) {
    pthread_once(&stripes_once, init_stripes);
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_lock(&stripes[i].s.lock);
}

void lw_live_unlock_all(void) {
    for (int i = STRIPES - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripes[i].s.lock);
}
