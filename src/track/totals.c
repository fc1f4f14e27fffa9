/* SPDX-License-Identifier: Apache-2.0 */
#include "totals.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

/* One lock-prefixed instruction per level and event (bench/perf/FINDINGS.md).
 * Counts (allocations, frees, failures) live in per-thread shards,
 * written by their own thread with plain loads and stores and summed when
 * read: no cache line bounces between threads for them. Live bytes stay one
 * atomic per level, since peaks need the instantaneous sum. */
#define NDEV (LW_MAX_DEVICES + 1)
typedef struct shard {
    struct shard *next;
    struct shard *next_free; /* on the free list: its thread has exited */
    _Atomic uint64_t alloc[NDEV][LW_KIND_COUNT];
    _Atomic uint64_t freed[NDEV][LW_KIND_COUNT];
    _Atomic uint64_t failed[NDEV][LW_KIND_COUNT];
} shard;

typedef struct {
    _Atomic int64_t live_bytes;
    _Atomic int64_t peak_live_bytes;
} level;

static level all_level;
/* All but pinned host memory (host RAM): the device floor and peak follow it,
 * from one counter rather than a difference of two read apart. */
static level device_level;
static level by_kind[LW_KIND_COUNT];
static level by_dev[NDEV];
static level cells[NDEV][LW_KIND_COUNT];
static _Atomic(shard *) shards;
static shard spill; /* for a thread whose shard could not be allocated */
/* Initial-exec: a load off the thread pointer per event, not a
 * __tls_get_addr call (8 bytes of the static TLS surplus under attach). */
static __thread shard *mine __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t devices_seen;
/* Which levels are kept: see account(). MULTI is the switch's bit on the
 * base levels' words (live bytes stay far below HALF). */
#define MULTI ((int64_t)1 << 62)
#define HALF ((int64_t)1 << 61)
enum { CELL_NONE = -1, CELL_ANY = -2 }; /* single_cell: none yet; switched (READY) */
static _Atomic int single_cell = CELL_NONE;
static atomic_flag switching = ATOMIC_FLAG_INIT;
/* Floor and peak of the step in progress (see analyze/growth.c): of device
 * memory (every kind but pinned host memory, which is host RAM), and of
 * pinned host memory on its own. */
static _Atomic int64_t step_floor;
static _Atomic int64_t step_peak;
static _Atomic int64_t host_floor;
static _Atomic int64_t host_peak;
static _Atomic uint64_t unknown_frees;
static _Atomic int64_t mapped_bytes;

static inline int dev_index(int device) {
    return device >= 0 && device < LW_MAX_DEVICES ? device + 1 : 0;
}

/* A shard outlives its thread: its counts are part of the sums. When the
 * thread exits, the shard goes on a free list and the next new thread takes
 * it and keeps adding to the same counters, so the number of shards is the
 * largest number of threads that counted at once, not the number of threads
 * ever started (a server with a thread per request). The free list is
 * touched only when a thread starts counting or exits. */
static atomic_flag free_lock = ATOMIC_FLAG_INIT;
static shard *free_shards;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

static void lock_free(void) {
    while (atomic_flag_test_and_set_explicit(&free_lock, memory_order_acquire))
        sched_yield();
}
static void unlock_free(void) {
    atomic_flag_clear_explicit(&free_lock, memory_order_release);
}

static void thread_exit(void *arg) {
    shard *s = arg;
    if (mine == s) mine = NULL;
    lock_free();
    s->next_free = free_shards;
    free_shards = s;
    unlock_free();
}

static void make_key(void) {
    key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* The first count of a thread: its shard. Out of line (my_shard below is the
 * per-event path: one load). */
__attribute__((noinline, cold)) static shard *new_shard(void) {
    shard *s;
    pthread_once(&key_once, make_key);
    /* Without the exit hook a shard could never be reused: the spill shard
     * then serves the thread. */
    if (!key_ok) return &spill;
    lock_free();
    s = free_shards;
    if (s) free_shards = s->next_free;
    unlock_free();
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return &spill;
        shard *head = atomic_load(&shards);
        do
            s->next = head;
        while (!atomic_compare_exchange_weak(&shards, &head, s));
    }
    if (pthread_setspecific(exit_key, s) != 0) {
        thread_exit(s);
        return &spill;
    }
    return mine = s;
}

static inline shard *my_shard(void) {
    shard *s = mine;
    return __builtin_expect(s != NULL, 1) ? s : new_shard();
}

void lw_totals_after_fork_child(void) {
    /* Only the forking thread exists in the child: the lock is free. */
    atomic_flag_clear(&free_lock);
    /* A switch to keeping every level cut short by the fork cannot be
     * finished here: the counts start again (as they do at the child's
     * first start anyway). */
    if (atomic_load(&single_cell) != CELL_ANY && atomic_flag_test_and_set(&switching))
        lw_totals_reset();
    else if (atomic_load(&single_cell) != CELL_ANY)
        atomic_flag_clear(&switching);
}

/* One writer per shard (the spill shard excepted: it takes atomic adds). */
static inline void bump(shard *s, _Atomic uint64_t *c) {
    if (s == &spill)
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
    else
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
}

/* Raises *peak to v if v is higher. The compare-and-swap runs only when v
 * is a new peak (rare once a program reaches its working set). */
static inline int raise_peak(_Atomic int64_t *peak, int64_t v) {
    int64_t p = atomic_load_explicit(peak, memory_order_relaxed);
    if (v <= p) return 0;
    while (v > p && !atomic_compare_exchange_weak(peak, &p, v)) {
    }
    return 1;
}

static inline int64_t add_live(level *l, int64_t delta) {
    int64_t live = atomic_fetch_add_explicit(&l->live_bytes, delta, memory_order_relaxed) + delta;
    if (delta > 0) raise_peak(&l->peak_live_bytes, live);
    return live;
}

static inline void note_device(int d) {
    uint64_t bit = 1ull << d;
    if (!(atomic_load_explicit(&devices_seen, memory_order_relaxed) & bit))
        atomic_fetch_or(&devices_seen, bit);
}

/* One shared read-modify-write per event on the common path.
 *
 * Every event adds to its base level: device memory's (every kind but pinned
 * host memory; the step floor and peak follow it) or pinned host memory's
 * (its own floor and peak). The finer levels (device x kind, device, kind,
 * all) are the same numbers as the base as long as the process has used only
 * one (device, kind) cell, which is the common case (one device, one kind
 * of memory): then they are read from the base and not kept at all. The
 * first event on a second cell switches, once and for good, to keeping them
 * all (five adds per event, as before).
 *
 * The switch is exact. The base's word carries a MULTI bit: the switcher
 * sets it with one add, which orders every event on the base before or
 * after it. An event whose add returned the word without the bit is in the
 * value the switcher read and copies into the finer levels; one that saw the
 * bit adds itself to them (after the copy: it waits for READY). Peaks:
 * before the switch each finer level's history is the base's, so its peak
 * is the base's peak; an event that raised the base's peak just before the
 * switch, after the switcher read that peak, sees the bit when it looks
 * again (sequentially consistent on both sides) and raises the finer peaks
 * itself. */

static inline int64_t decode(int64_t word, int *multi) {
    *multi = word >= HALF;
    return *multi ? word - MULTI : word;
}

static inline int64_t base_live(level *b) {
    int multi;
    return decode(atomic_load(&b->live_bytes), &multi);
}

static inline level *base_of(lw_kind kind) {
    return kind == LW_KIND_PINNED_HOST ? &by_kind[LW_KIND_PINNED_HOST] : &device_level;
}

/* The finer levels of an event on (d, kind): the base itself is not one. */
static void fine_add(int d, lw_kind kind, int64_t delta) {
    add_live(&cells[d][kind], delta);
    add_live(&by_dev[d], delta);
    if (kind != LW_KIND_PINNED_HOST) add_live(&by_kind[kind], delta);
    add_live(&all_level, delta);
}

static void fine_peak(int d, lw_kind kind, int64_t v) {
    raise_peak(&cells[d][kind].peak_live_bytes, v);
    raise_peak(&by_dev[d].peak_live_bytes, v);
    if (kind != LW_KIND_PINNED_HOST) raise_peak(&by_kind[kind].peak_live_bytes, v);
    raise_peak(&all_level.peak_live_bytes, v);
}

static inline void wait_ready(void) {
    while (atomic_load_explicit(&single_cell, memory_order_acquire) != CELL_ANY)
        sched_yield();
}

/* To keeping every level: done by the first event on a second cell, and
 * by nobody else (the others wait for it). c0 is the one cell used so far. */
static void switch_to_multi(void) {
    if (atomic_flag_test_and_set_explicit(&switching, memory_order_acquire)) {
        wait_ready();
        return;
    }
    int c0 = atomic_load(&single_cell);
    int d0 = c0 / LW_KIND_COUNT;
    lw_kind k0 = (lw_kind)(c0 % LW_KIND_COUNT);
    level *b0 = base_of(k0),
          *other = b0 == &device_level ? &by_kind[LW_KIND_PINNED_HOST] : &device_level;
    int multi;
    /* The other base has had no event (each would have switched first). */
    atomic_fetch_add(&other->live_bytes, MULTI);
    int64_t v = decode(atomic_fetch_add(&b0->live_bytes, MULTI), &multi);
    int64_t peak = atomic_load(&b0->peak_live_bytes);
    add_live(&cells[d0][k0], v);
    add_live(&by_dev[d0], v);
    if (k0 != LW_KIND_PINNED_HOST) add_live(&by_kind[k0], v);
    add_live(&all_level, v);
    fine_peak(d0, k0, peak);
    atomic_store_explicit(&single_cell, CELL_ANY, memory_order_release);
}

/* The first event on a cell other than the one in use (or the very first):
 * out of line, as is everything account() does rarely, so that the common
 * path is inlined into the event with no frame of its own. */
__attribute__((noinline)) static void enter_cell(int cell, int sc) {
    if (sc == CELL_NONE) {
        int none = CELL_NONE;
        sc = atomic_compare_exchange_strong(&single_cell, &none, cell) ? cell : none;
    }
    if (sc != cell && sc != CELL_ANY) switch_to_multi();
}

/* An event that found the MULTI bit on its base (live: the base's bytes). */
__attribute__((noinline)) static int64_t account_multi(level *b, int d, lw_kind kind, int64_t delta,
                                                       int64_t live) {
    if (delta > 0) raise_peak(&b->peak_live_bytes, live);
    wait_ready();
    fine_add(d, kind, delta);
    return live;
}

/* A new peak set while the finer levels are the base: if the switch came
 * meanwhile, the switcher may have read the peak before it. */
__attribute__((noinline)) static void new_single_peak(level *b, int d, lw_kind kind, int64_t live) {
    int multi;
    if (decode(atomic_load(&b->live_bytes), &multi), multi) fine_peak(d, kind, live);
}

/* Adds delta to every level of (d, kind); returns the base's live bytes. */
static inline __attribute__((always_inline)) int64_t account(int d, lw_kind kind, int64_t delta) {
    int cell = d * LW_KIND_COUNT + (int)kind;
    int sc = atomic_load_explicit(&single_cell, memory_order_acquire);
    if (__builtin_expect(sc != cell && sc != CELL_ANY, 0)) enter_cell(cell, sc);
    level *b = base_of(kind);
    int multi;
    int64_t live = decode(atomic_fetch_add(&b->live_bytes, delta), &multi) + delta;
    if (__builtin_expect(multi, 0)) return account_multi(b, d, kind, delta, live);
    if (delta > 0 && __builtin_expect(raise_peak(&b->peak_live_bytes, live), 0))
        new_single_peak(b, d, kind, live);
    return live;
}

void lw_totals_alloc(int device, lw_kind kind, uint64_t size) {
    int d = dev_index(device);
    note_device(d);
    shard *s = my_shard();
    bump(s, &s->alloc[d][kind]);
    int64_t live = account(d, kind, (int64_t)size);
    raise_peak(kind == LW_KIND_PINNED_HOST ? &host_peak : &step_peak, live);
}

void lw_totals_free(int device, lw_kind kind, uint64_t size) {
    int d = dev_index(device);
    shard *s = my_shard();
    bump(s, &s->freed[d][kind]);
    int64_t live = account(d, kind, -(int64_t)size);
    /* Only a free can lower the floor. */
    _Atomic int64_t *floor = kind == LW_KIND_PINNED_HOST ? &host_floor : &step_floor;
    int64_t f = atomic_load_explicit(floor, memory_order_relaxed);
    while (live < f && !atomic_compare_exchange_weak_explicit(floor, &f, live, memory_order_relaxed,
                                                              memory_order_relaxed)) {
    }
}

static void take(int64_t live, _Atomic int64_t *fl, _Atomic int64_t *pk, int64_t *floor,
                 int64_t *peak) {
    *floor = atomic_exchange(fl, live);
    *peak = atomic_exchange(pk, live);
    if (*floor > live) *floor = live;
    if (*peak < live) *peak = live;
}

void lw_totals_take_floor_peak(int64_t *floor, int64_t *peak) {
    take(base_live(&device_level), &step_floor, &step_peak, floor, peak);
}

void lw_totals_take_host_floor_peak(int64_t *floor, int64_t *peak) {
    take(base_live(&by_kind[LW_KIND_PINNED_HOST]), &host_floor, &host_peak, floor, peak);
}

void lw_totals_failed(int device, lw_kind kind) {
    int d = dev_index(device);
    note_device(d);
    shard *s = my_shard();
    bump(s, &s->failed[d][kind]);
}

void lw_totals_unknown_free(void) {
    atomic_fetch_add(&unknown_frees, 1);
}
void lw_totals_mapped(int64_t delta) {
    atomic_fetch_add(&mapped_bytes, delta);
}
uint64_t lw_totals_unknown_frees(void) {
    return atomic_load(&unknown_frees);
}
int64_t lw_totals_mapped_bytes(void) {
    return atomic_load(&mapped_bytes);
}
uint64_t lw_totals_devices_seen(void) {
    return atomic_load(&devices_seen);
}

static void zero_level(level *l) {
    atomic_store(&l->live_bytes, 0);
    atomic_store(&l->peak_live_bytes, 0);
}

static void zero_shard(shard *sh) {
    for (int d = 0; d < NDEV; d++)
        for (int k = 0; k < LW_KIND_COUNT; k++) {
            atomic_store(&sh->alloc[d][k], 0);
            atomic_store(&sh->freed[d][k], 0);
            atomic_store(&sh->failed[d][k], 0);
        }
}

/* A forked child's start (lifecycle.c): single-threaded, so plain resets.
 * The shards of the parent's other threads stay listed, emptied. */
void lw_totals_reset(void) {
    zero_level(&all_level);
    zero_level(&device_level);
    for (int k = 0; k < LW_KIND_COUNT; k++)
        zero_level(&by_kind[k]);
    for (int d = 0; d < NDEV; d++) {
        zero_level(&by_dev[d]);
        for (int k = 0; k < LW_KIND_COUNT; k++)
            zero_level(&cells[d][k]);
    }
    for (shard *sh = atomic_load(&shards); sh; sh = sh->next)
        zero_shard(sh);
    zero_shard(&spill);
    atomic_store(&devices_seen, 0);
    atomic_store(&step_floor, 0);
    atomic_store(&step_peak, 0);
    atomic_store(&host_floor, 0);
    atomic_store(&host_peak, 0);
    atomic_store(&unknown_frees, 0);
    atomic_store(&mapped_bytes, 0);
    atomic_store(&single_cell, CELL_NONE);
    atomic_flag_clear(&switching);
}

/* The level a query names, as live and peak bytes. */
static void level_get(int device, lw_kind kind, int64_t *live, int64_t *peak) {
    int sc = atomic_load_explicit(&single_cell, memory_order_acquire);
    if (sc >= 0) {
        /* The bit on the cell's base means a switch under way: its end. */
        int multi;
        decode(atomic_load(&base_of((lw_kind)(sc % LW_KIND_COUNT))->live_bytes), &multi);
        if (multi) {
            wait_ready();
            sc = CELL_ANY;
        }
    }
    int d = dev_index(device);
    if (kind == LW_KIND_PINNED_HOST && device == -2) {
        *live = base_live(&by_kind[kind]);
        *peak = atomic_load(&by_kind[kind].peak_live_bytes);
        return;
    }
    if (sc != CELL_ANY) {
        /* One cell or none: every level that holds it is the base. */
        int d0 = sc / LW_KIND_COUNT, k0 = sc % LW_KIND_COUNT;
        int holds =
            sc >= 0 && (device == -2 || d == d0) && (kind == LW_KIND_COUNT || (int)kind == k0);
        level *b = sc >= 0 ? base_of((lw_kind)k0) : NULL;
        *live = holds ? base_live(b) : 0;
        *peak = holds ? atomic_load(&b->peak_live_bytes) : 0;
        return;
    }
    const level *l;
    if (device == -2)
        l = kind == LW_KIND_COUNT ? &all_level : &by_kind[kind];
    else
        l = kind == LW_KIND_COUNT ? &by_dev[d] : &cells[d][kind];
    *live = atomic_load(&l->live_bytes);
    *peak = atomic_load(&l->peak_live_bytes);
}

lw_counts lw_totals_get(int device, lw_kind kind) {
    int d0 = 0, d1 = NDEV, k0 = 0, k1 = LW_KIND_COUNT;
    if (device != -2) d0 = dev_index(device), d1 = d0 + 1;
    if (kind != LW_KIND_COUNT) k0 = kind, k1 = kind + 1;
    lw_counts r = {0, 0, 0, 0, 0, 0};
    level_get(device, kind, &r.live_bytes, &r.peak_live_bytes);
    for (int pass = 0; pass < 2; pass++) {
        const shard *s = pass ? &spill : atomic_load(&shards);
        for (; s; s = pass ? NULL : s->next)
            for (int d = d0; d < d1; d++)
                for (int k = k0; k < k1; k++) {
                    r.alloc_count += atomic_load_explicit(&s->alloc[d][k], memory_order_relaxed);
                    r.free_count += atomic_load_explicit(&s->freed[d][k], memory_order_relaxed);
                    r.failed_count += atomic_load_explicit(&s->failed[d][k], memory_order_relaxed);
                }
    }
    r.live_count = (int64_t)(r.alloc_count - r.free_count);
    return r;
}
