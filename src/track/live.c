/* SPDX-License-Identifier: Apache-2.0 */
/* The live table as chained hashing with one link per record (48-byte
 * records: no hash-table handle), bucket arrays that double when a stripe
 * holds two records per bucket, and stripes whose locks need no run-time
 * initialisation (bench/perf/FINDINGS.md: half the memory of a uthash
 * table, and faster). */
#include "live.h"

#include "hash.h"
#include "tracker_mem.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64
#define SLAB_RECORDS 256
#define FIRST_BUCKETS 64

/* A stripe's lock: taken with one locked instruction and given back with a
 * plain release store (a mutex takes a locked instruction each way, behind
 * a call). Uncontended almost always (64 stripes, held for a bucket walk);
 * a waiter spins a little, then yields, so a holder that lost its core (the
 * record slab's allocation may fault) gets it back. Static zero: unlocked. */
typedef struct {
    atomic_int held;
} lock_t;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

__attribute__((noinline)) static void lock_wait(lock_t *l) {
    for (int spins = 0;; spins++) {
        if (!atomic_load_explicit(&l->held, memory_order_relaxed) &&
            !atomic_exchange_explicit(&l->held, 1, memory_order_acquire))
            return;
        if (spins < 64) {
            cpu_relax();
        } else {
            sched_yield();
            spins = 0;
        }
    }
}

/* Uncontended (almost always): one exchange, inline; else the wait above. */
static inline void LOCK(lock_t *l) {
    if (__builtin_expect(!atomic_exchange_explicit(&l->held, 1, memory_order_acquire), 1)) return;
    lock_wait(l);
}

static inline void UNLOCK(lock_t *l) {
    atomic_store_explicit(&l->held, 0, memory_order_release);
}

typedef struct stripe {
    lock_t lock;
    lw_alloc **buckets;
    size_t mask;          /* buckets - 1; 0 while there is no array */
    _Atomic size_t count; /* written under the lock; read without it (lw_live_records) */
    lw_alloc *free_list;  /* recycled records, linked through .next */
} stripe;

typedef union {
    stripe s;
    char pad[128];
} padded_stripe;

/* Zero bytes are an unlocked lock (glibc's PTHREAD_MUTEX_INITIALIZER too). */
static padded_stripe stripes[STRIPES];
static atomic_uint_fast64_t table_bytes;

static inline uint64_t hash_key(lw_key_class cls, uint64_t key) {
    return lw_mix64(key ^ ((uint64_t)cls << 62));
}

static inline stripe *stripe_of(uint64_t hv) {
    return &stripes[hv >> 58].s; /* top 6 bits: 64 stripes */
}

__attribute__((noinline, cold)) static void refill(stripe *st) {
    lw_alloc *slab = lw_tracker_malloc(SLAB_RECORDS * sizeof *slab);
    if (!slab) return;
    atomic_fetch_add(&table_bytes, SLAB_RECORDS * sizeof *slab);
    for (int i = 0; i < SLAB_RECORDS; i++) {
        slab[i].next = st->free_list;
        st->free_list = &slab[i];
    }
}

static inline lw_alloc *take_record(stripe *st) {
    if (__builtin_expect(!st->free_list, 0)) {
        refill(st);
        if (!st->free_list) return NULL;
    }
    lw_alloc *r = st->free_list;
    st->free_list = r->next;
    return r;
}

static void give_record(stripe *st, lw_alloc *r) {
    r->next = st->free_list;
    st->free_list = r;
}

/* Doubles the bucket array (or makes the first). On failure the chains just
 * grow longer. */
__attribute__((noinline, cold)) static void grow(stripe *st) {
    size_t n = st->mask ? (st->mask + 1) * 2 : FIRST_BUCKETS;
    lw_alloc **b = lw_tracker_calloc(n, sizeof *b);
    if (!b) return;
    for (size_t i = 0; st->mask && i <= st->mask; i++) {
        lw_alloc *r = st->buckets[i];
        while (r) {
            lw_alloc *next = r->next;
            size_t j = hash_key((lw_key_class)r->cls, r->key) & (n - 1);
            r->next = b[j];
            b[j] = r;
            r = next;
        }
    }
    if (st->mask) atomic_fetch_sub(&table_bytes, (st->mask + 1) * sizeof *b);
    atomic_fetch_add(&table_bytes, n * sizeof *b);
    free(st->buckets);
    st->buckets = b;
    st->mask = n - 1;
}

/* The table's operations run with the stripe's lock held: one body each,
 * inlined into the uncontended path, which takes the lock with one
 * exchange and calls nothing on its common path (no frame to set up), and
 * into the contended one, out of line, which waits for the lock first. */
/* Same key live twice in the bucket: the first one's free went by unseen;
 * the record is replaced in place (its old contents to *replaced). */
static inline __attribute__((always_inline)) int
replace_same_key(lw_alloc **head, const lw_alloc *rec, lw_alloc *replaced) {
    for (lw_alloc *old = *head; old; old = old->next) {
        if (old->key == rec->key && old->cls == rec->cls) {
            *replaced = *old;
            lw_alloc *next = old->next;
            *old = *rec;
            old->next = next;
            return 1;
        }
    }
    return 0;
}

/* r, a free record, holds rec at the head of the bucket; the stripe's count
 * goes up by a plain store (the lock is held, and the table's record count is
 * the sum of the stripes': no shared counter is touched per event). */
static inline __attribute__((always_inline)) void
push_record(stripe *st, lw_alloc **head, lw_alloc *r, const lw_alloc *rec, size_t count) {
    *r = *rec;
    r->next = *head;
    *head = r;
    atomic_store_explicit(&st->count, count, memory_order_relaxed);
}

static inline __attribute__((always_inline)) int
insert_held(stripe *st, uint64_t hv, const lw_alloc *rec, lw_alloc *replaced) {
    int result = 0;
    if (__builtin_expect(!st->mask, 0)) grow(st);
    if (!st->mask) {
        result = -1;
        goto out;
    }
    lw_alloc **head = &st->buckets[hv & st->mask];
    if (replace_same_key(head, rec, replaced)) {
        result = 1;
        goto out;
    }
    lw_alloc *r = take_record(st);
    if (!r) {
        result = -1;
        goto out;
    }
    size_t count = atomic_load_explicit(&st->count, memory_order_relaxed) + 1;
    push_record(st, head, r, rec, count);
    if (__builtin_expect(count > 2 * (st->mask + 1), 0)) grow(st);
out:
    UNLOCK(&st->lock);
    return result;
}

__attribute__((noinline)) static int insert_contended(stripe *st, uint64_t hv, const lw_alloc *rec,
                                                      lw_alloc *replaced) {
    lock_wait(&st->lock);
    return insert_held(st, hv, rec, replaced);
}

/* The lock held, when the insert may need memory (no bucket array, no free
 * record, or a table due to grow): the whole body, out of line. */
__attribute__((noinline)) static int insert_growing(stripe *st, uint64_t hv, const lw_alloc *rec,
                                                    lw_alloc *replaced) {
    return insert_held(st, hv, rec, replaced);
}

int lw_live_insert(const lw_alloc *rec, lw_alloc *replaced) {
    uint64_t hv = hash_key((lw_key_class)rec->cls, rec->key);
    stripe *st = stripe_of(hv);
    if (__builtin_expect(atomic_exchange_explicit(&st->lock.held, 1, memory_order_acquire), 0))
        return insert_contended(st, hv, rec, replaced);
    size_t count = atomic_load_explicit(&st->count, memory_order_relaxed) + 1;
    if (__builtin_expect(!st->mask || !st->free_list || count > 2 * (st->mask + 1), 0))
        return insert_growing(st, hv, rec, replaced);
    /* The common case, calling nothing: insert_held's body where neither
     * grow() nor the slab refill can run. */
    lw_alloc **head = &st->buckets[hv & st->mask];
    int result = 0;
    if (replace_same_key(head, rec, replaced)) {
        result = 1;
    } else {
        lw_alloc *r = st->free_list;
        st->free_list = r->next;
        push_record(st, head, r, rec, count);
    }
    UNLOCK(&st->lock);
    return result;
}

static inline __attribute__((always_inline)) int
remove_held(stripe *st, uint64_t hv, lw_key_class cls, uint64_t key, lw_alloc *out) {
    int found = 0;
    if (st->mask) {
        for (lw_alloc **pp = &st->buckets[hv & st->mask]; *pp; pp = &(*pp)->next) {
            lw_alloc *r = *pp;
            if (r->key == key && r->cls == cls) {
                *out = *r;
                *pp = r->next;
                give_record(st, r);
                atomic_store_explicit(&st->count,
                                      atomic_load_explicit(&st->count, memory_order_relaxed) - 1,
                                      memory_order_relaxed);
                found = 1;
                break;
            }
        }
    }
    UNLOCK(&st->lock);
    return found;
}

__attribute__((noinline)) static int remove_contended(stripe *st, uint64_t hv, lw_key_class cls,
                                                      uint64_t key, lw_alloc *out) {
    lock_wait(&st->lock);
    return remove_held(st, hv, cls, key, out);
}

int lw_live_remove(lw_key_class cls, uint64_t key, lw_alloc *out) {
    uint64_t hv = hash_key(cls, key);
    stripe *st = stripe_of(hv);
    if (__builtin_expect(atomic_exchange_explicit(&st->lock.held, 1, memory_order_acquire), 0))
        return remove_contended(st, hv, cls, key, out);
    return remove_held(st, hv, cls, key, out);
}

void lw_live_scan(void (*fn)(const lw_alloc *r, void *arg), void *arg) {
    for (int i = 0; i < STRIPES; i++) {
        stripe *st = &stripes[i].s;
        LOCK(&st->lock);
        for (size_t b = 0; st->mask && b <= st->mask; b++)
            for (lw_alloc *r = st->buckets[b]; r; r = r->next)
                fn(r, arg);
        UNLOCK(&st->lock);
    }
}

uint64_t lw_live_records(void) {
    uint64_t n = 0;
    for (int i = 0; i < STRIPES; i++)
        n += atomic_load_explicit(&stripes[i].s.count, memory_order_relaxed);
    return n;
}

uint64_t lw_live_overhead_bytes(void) {
    return atomic_load(&table_bytes);
}

void lw_live_lock_all(void) {
    for (int i = 0; i < STRIPES; i++)
        LOCK(&stripes[i].s.lock);
}

void lw_live_unlock_all(void) {
    for (int i = STRIPES - 1; i >= 0; i--)
        UNLOCK(&stripes[i].s.lock);
}

void lw_live_forget_all(void) {
    for (int i = 0; i < STRIPES; i++) {
        stripe *st = &stripes[i].s;
        LOCK(&st->lock);
        /* The records go back to the stripe's free list (their slabs are
         * kept: the child is likely to need as many); the buckets empty. */
        for (size_t b = 0; st->mask && b <= st->mask; b++) {
            lw_alloc *r = st->buckets[b];
            while (r) {
                lw_alloc *next = r->next;
                give_record(st, r);
                r = next;
            }
            st->buckets[b] = NULL;
        }
        atomic_store(&st->count, 0);
        UNLOCK(&st->lock);
    }
}
