/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the allocation path's tables and counters (src/track) and
 * the binned series (src/analyze/series.c), each on its own, without the
 * hooks or a CUDA stand-in. */
#include "hash.h"
#include "imports.h"
#include "live.h"
#include "series.h"
#include "sites.h"
#include "totals.h"
#include "tracker_mem.h"

#include "../check_run.h"

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- series ---- */

START_TEST(series_bins_merge_and_keep_the_mean) {
    lw_bin storage[8];
    lw_series s;
    lw_series_init(&s, storage, 8);
    for (int i = 1; i <= 100; i++)
        lw_series_add(&s, i, i * 0.5, 10.0 * i, 20.0 * i);
    lw_bin out[9];
    int n = lw_series_get(&s, out, 9);
    ck_assert_int_le(n, 9);
    ck_assert_uint_eq(s.points, 100);
    /* Every point is in exactly one bin, bins are in order, and each bin's
     * floor is the mean of its points' floors (10 x), its peak the largest. */
    uint64_t total = 0;
    double prev = 0;
    for (int i = 0; i < n; i++) {
        total += out[i].n;
        ck_assert(out[i].x > prev);
        prev = out[i].x;
        ck_assert(fabs(out[i].floor - 10 * out[i].x) < 1e-9);
        ck_assert(out[i].peak >= 20 * out[i].x);
    }
    ck_assert_uint_eq(total, 100);
    ck_assert(out[n - 1].peak == 2000);
    /* The width doubled as the storage filled: a power of two. */
    ck_assert_uint_gt(s.width, 1);
    ck_assert_uint_eq(s.width & (s.width - 1), 0);
    lw_series_reset(&s);
    ck_assert_int_eq(lw_series_get(&s, out, 9), 0);
    ck_assert_uint_eq(s.points, 0);
}
END_TEST

/* ---- live table ---- */

static void count(const lw_alloc *r, void *arg) {
    uint64_t *sum = arg;
    sum[0]++;
    sum[1] += r->size;
}

START_TEST(live_insert_remove_replace) {
    lw_tracker_mem_init();
    lw_live_forget_all();
    lw_alloc a = {.key = 0x1000, .size = 64, .cls = LW_CLASS_DPTR}, old;
    ck_assert_int_eq(lw_live_insert(&a, &old), 0);
    /* The same address in another class is another record. */
    lw_alloc h = {.key = 0x1000, .size = 8, .cls = LW_CLASS_HOST};
    ck_assert_int_eq(lw_live_insert(&h, &old), 0);
    /* The same address again: the record is replaced and the old one given back. */
    lw_alloc b = {.key = 0x1000, .size = 128, .cls = LW_CLASS_DPTR};
    ck_assert_int_eq(lw_live_insert(&b, &old), 1);
    ck_assert_uint_eq(old.size, 64);
    ck_assert_uint_eq(lw_live_records(), 2);
    lw_alloc out;
    ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x1000, &out), 1);
    ck_assert_uint_eq(out.size, 128);
    ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x1000, &out), 0);
    ck_assert_int_eq(lw_live_remove(LW_CLASS_HOST, 0x1000, &out), 1);
    ck_assert_uint_eq(lw_live_records(), 0);
}
END_TEST

START_TEST(live_grows_and_scans_everything) {
    lw_tracker_mem_init();
    lw_live_forget_all();
    enum { N = 100000 };
    lw_alloc old;
    for (uint64_t i = 0; i < N; i++) {
        lw_alloc r = {.key = 0x7f0000000000ull + i * 512, .size = i % 7 + 1};
        ck_assert_int_eq(lw_live_insert(&r, &old), 0);
    }
    uint64_t sum[2] = {0, 0};
    lw_live_scan(count, sum);
    ck_assert_uint_eq(sum[0], N);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < N; i++)
        bytes += i % 7 + 1;
    ck_assert_uint_eq(sum[1], bytes);
    /* Bounded overhead per record (the README's figure is per live allocation). */
    ck_assert_uint_le(lw_live_overhead_bytes() / N, 64);
    for (uint64_t i = 0; i < N; i += 2) {
        lw_alloc r;
        ck_assert_int_eq(lw_live_remove(LW_CLASS_DPTR, 0x7f0000000000ull + i * 512, &r), 1);
    }
    ck_assert_uint_eq(lw_live_records(), N / 2);
    lw_live_forget_all();
    ck_assert_uint_eq(lw_live_records(), 0);
}
END_TEST

/* ---- sites ---- */

static lw_site *intern(uintptr_t a, uintptr_t b, int *created) {
    uintptr_t key[3] = {2, a, b};
    return lw_site_intern(key, 3, lw_hash_words(key, 3), created);
}

START_TEST(sites_intern_once_and_pool_past_the_cap) {
    lw_tracker_mem_init();
    lw_sites_forget_all();
    lw_sites_set_cap(3);
    int created;
    lw_site *s1 = intern(1, 2, &created);
    ck_assert_int_eq(created, 1);
    ck_assert_ptr_eq(intern(1, 2, &created), s1);
    ck_assert_int_eq(created, 0);
    ck_assert_uint_eq(s1->nnative, 2);
    ck_assert_uint_ge(s1->id, 1);
    lw_site *s2 = intern(2, 1, &created);
    ck_assert_ptr_ne(s2, s1);
    intern(3, 3, &created);
    ck_assert_uint_eq(lw_sites_count(), 3);
    /* Past the cap: the overflow site, and it says so. */
    lw_site *o = intern(4, 4, &created);
    ck_assert_ptr_eq(o, lw_site_overflow());
    ck_assert_uint_eq(o->id, 0);
    ck_assert_uint_eq(lw_sites_count(), 3);
    size_t listed = 0;
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        listed++;
    ck_assert_uint_eq(listed, 3);
    /* Sites are never freed (pointers to them stay valid): they stay listed
     * here, which also keeps the leak checker of the sanitizer build quiet. */
    lw_sites_set_cap(100);
}
END_TEST

/* ---- per-thread shards of the sites' counts ---- */

static lw_site *shard_site_a, *shard_site_b;
static atomic_int shard_stop;

/* 1000 allocation+free pairs on site a, then two allocations of a and one
 * of b left live; the thread then exits (or, with arg, waits to be told). */
static void *count_and_leave(void *arg) {
    for (int i = 0; i < 1000; i++) {
        lw_site_count_alloc(shard_site_a, 3);
        lw_site_count_alloc(shard_site_b, 7); /* the last-site cache misses each time */
        lw_site_count_free(shard_site_a, 3);
        lw_site_count_free(shard_site_b, 7);
    }
    lw_site_count_alloc(shard_site_a, 5);
    lw_site_count_alloc(shard_site_a, 5);
    lw_site_count_alloc(shard_site_b, 11);
    /* A free of an allocation another thread made: counted here. */
    lw_site_count_free(shard_site_b, 2);
    atomic_fetch_add(&shard_stop, arg ? 1 : 0);
    while (arg && atomic_load(&shard_stop) < 1000)
        sched_yield();
    return NULL;
}

/* A reader while threads count and exit: each sum sees every count once
 * (in a live thread's shard or folded into the site), so the totals never
 * go back. */
static void *watch_counts(void *arg) {
    (void)arg;
    uint64_t last_alloc = 0, last_free = 0;
    while (!atomic_load(&shard_stop)) {
        lw_site_counts c;
        lw_site_get(shard_site_a, &c);
        ck_assert_uint_ge(c.alloc_count, last_alloc);
        ck_assert_uint_ge(c.free_count, last_free);
        last_alloc = c.alloc_count, last_free = c.free_count;
    }
    return NULL;
}

static void shard_sites(void) {
    lw_tracker_mem_init();
    lw_sites_forget_all();
    lw_sites_set_cap(100);
    int created;
    /* Ids 17 and 40: different pages of a thread's directory. */
    for (uintptr_t i = 0; i < 40; i++) {
        lw_site *s = intern(100, i, &created);
        if (s->id == 17) shard_site_a = s;
        if (s->id == 40) shard_site_b = s;
    }
    ck_assert_ptr_nonnull(shard_site_a);
    ck_assert_ptr_nonnull(shard_site_b);
}

START_TEST(site_counts_exact_after_threads_exit) {
    shard_sites();
    atomic_store(&shard_stop, 0);
    size_t shards_before = lw_site_shards_count();
    /* The main thread's own counts stay in its shard throughout. */
    lw_site_count_alloc(shard_site_b, 2);
    pthread_t watcher, t[8];
    pthread_create(&watcher, NULL, watch_counts, NULL);
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, count_and_leave, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    atomic_store(&shard_stop, 1);
    pthread_join(watcher, NULL);
    /* Every exited thread's shard was folded into its sites and freed. */
    ck_assert_uint_le(lw_site_shards_count(), shards_before + 1);
    lw_site_counts a, b;
    lw_site_get(shard_site_a, &a);
    lw_site_get(shard_site_b, &b);
    ck_assert_uint_eq(a.alloc_count, 8 * 1002);
    ck_assert_uint_eq(a.free_count, 8 * 1000);
    ck_assert_uint_eq(a.alloc_bytes, 8 * (3000 + 10));
    ck_assert_int_eq(a.live_bytes, 8 * 10);
    ck_assert_int_eq(a.live_count, 8 * 2);
    ck_assert_uint_eq(b.alloc_count, 8 * 1001 + 1);
    ck_assert_uint_eq(b.free_count, 8 * 1001);
    ck_assert_int_eq(b.live_bytes, 8 * 11 + 2 - 8 * 2);
    ck_assert_int_eq(lw_site_live_bytes(shard_site_a), 8 * 10);
    /* The sites forgotten (a forked child's start): the new sites that
     * take the same ids start from nothing (the main thread's shard still
     * had counts under id 40). */
    lw_sites_forget_all();
    shard_sites();
    lw_site_get(shard_site_b, &b);
    ck_assert_uint_eq(b.alloc_count, 0);
    ck_assert_int_eq(b.live_bytes, 0);
}
END_TEST

START_TEST(site_counts_exact_in_a_forked_child) {
    shard_sites();
    atomic_store(&shard_stop, 0);
    lw_site_count_alloc(shard_site_a, 1);
    /* Four threads that count and stay alive across the fork. */
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, count_and_leave, (void *)1);
    while (atomic_load(&shard_stop) < 4)
        sched_yield();
    lw_sites_lock_all(); /* as lifecycle.c's fork handlers do */
    pid_t pid = fork();
    if (pid == 0) {
        lw_sites_unlock_all();
        lw_sites_after_fork_child();
        /* The parent's threads are gone; their counts are not. */
        lw_site_counts a;
        lw_site_get(shard_site_a, &a);
        int ok = a.alloc_count == 4 * 1002 + 1 && a.live_bytes == 4 * 10 + 1 &&
                 lw_site_shards_count() == 1;
        lw_site_count_free(shard_site_a, 1);
        lw_site_get(shard_site_a, &a);
        ok = ok && a.live_bytes == 4 * 10 && a.free_count == 4 * 1000 + 1;
        _exit(ok ? 0 : 1);
    }
    lw_sites_unlock_all();
    ck_assert_int_gt(pid, 0);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    atomic_store(&shard_stop, 1000);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    lw_site_counts a;
    lw_site_get(shard_site_a, &a);
    ck_assert_int_eq(a.live_bytes, 4 * 10 + 1);
}
END_TEST

/* ---- totals ---- */

START_TEST(totals_levels_and_peaks) {
    lw_totals_reset();
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(1, LW_KIND_DEVICE, 50);
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 10);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    lw_totals_failed(0, LW_KIND_DEVICE);
    lw_totals_unknown_free();
    lw_counts d0 = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_uint_eq(d0.alloc_count, 1);
    ck_assert_uint_eq(d0.free_count, 1);
    ck_assert_uint_eq(d0.failed_count, 1);
    ck_assert_int_eq(d0.live_bytes, 0);
    ck_assert_int_eq(d0.peak_live_bytes, 100);
    lw_counts d1 = lw_totals_get(1, LW_KIND_DEVICE);
    ck_assert_int_eq(d1.live_bytes, 50);
    ck_assert_uint_eq(lw_totals_unknown_frees(), 1);
    ck_assert_str_eq(lw_kind_name(LW_KIND_PHYSICAL), "physical");
}
END_TEST

/* The step floor and peak are device memory's; pinned host memory (host RAM)
 * has its own. */
START_TEST(totals_pinned_host_floor_apart) {
    lw_totals_reset();
    int64_t fl, pk;
    lw_totals_take_floor_peak(&fl, &pk);
    lw_totals_take_host_floor_peak(&fl, &pk);
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 1000);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(0, LW_KIND_DEVICE, 40);
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 100);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 1000);
    lw_totals_free(-1, LW_KIND_PINNED_HOST, 1000);
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 40);
    ck_assert_int_eq(pk, 40);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0);
    ck_assert_int_eq(pk, 1000);
}
END_TEST

static void *alloc_free_many(void *arg) {
    (void)arg;
    for (int i = 0; i < 10000; i++) {
        lw_totals_alloc(2, LW_KIND_DEVICE, 3);
        lw_totals_free(2, LW_KIND_DEVICE, 3);
    }
    lw_totals_alloc(2, LW_KIND_DEVICE, 1);
    return NULL;
}

START_TEST(totals_threads_sum_exactly) {
    lw_totals_reset();
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, alloc_free_many, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    lw_counts c = lw_totals_get(2, LW_KIND_DEVICE);
    ck_assert_uint_eq(c.alloc_count, 8 * 10001);
    ck_assert_uint_eq(c.free_count, 8 * 10000);
    ck_assert_int_eq(c.live_bytes, 8);
}
END_TEST

/* One (device, kind) cell: the finer levels are read from the base; the
 * first event on a second cell starts keeping them, with the history so far
 * (live and peak) carried over exactly. */
START_TEST(totals_exact_across_the_switch) {
    lw_totals_reset();
    lw_totals_alloc(0, LW_KIND_DEVICE, 100);
    lw_totals_alloc(0, LW_KIND_DEVICE, 50);
    lw_totals_free(0, LW_KIND_DEVICE, 50);
    lw_counts c = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 100);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).peak_live_bytes, 150);
    ck_assert_int_eq(lw_totals_get(1, LW_KIND_COUNT).live_bytes, 0);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_MANAGED).peak_live_bytes, 0);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_PINNED_HOST).live_bytes, 0);
    lw_totals_alloc(1, LW_KIND_DEVICE, 10); /* a second cell */
    lw_totals_alloc(0, LW_KIND_MANAGED, 5);
    lw_totals_free(0, LW_KIND_DEVICE, 100);
    c = lw_totals_get(0, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 0);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_uint_eq(c.alloc_count, 2);
    c = lw_totals_get(0, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 5);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    c = lw_totals_get(1, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 10);
    ck_assert_int_eq(c.peak_live_bytes, 10);
    c = lw_totals_get(-2, LW_KIND_DEVICE);
    ck_assert_int_eq(c.live_bytes, 10);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    c = lw_totals_get(-2, LW_KIND_MANAGED);
    ck_assert_int_eq(c.live_bytes, 5);
    ck_assert_int_eq(c.peak_live_bytes, 5);
    c = lw_totals_get(-2, LW_KIND_COUNT);
    ck_assert_int_eq(c.live_bytes, 15);
    ck_assert_int_eq(c.peak_live_bytes, 150);
    ck_assert_uint_eq(c.alloc_count, 4);
    int64_t fl, pk;
    lw_totals_take_floor_peak(&fl, &pk);
    ck_assert_int_eq(fl, 0); /* since the reset: the floor started at 0 */
    ck_assert_int_eq(pk, 150);
    /* Pinned host memory first: every level that holds it is its base. */
    lw_totals_reset();
    lw_totals_alloc(-1, LW_KIND_PINNED_HOST, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-1, LW_KIND_PINNED_HOST).peak_live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_DEVICE).live_bytes, 0);
    lw_totals_alloc(0, LW_KIND_DEVICE, 10);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).live_bytes, 1010);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_COUNT).peak_live_bytes, 1010);
    ck_assert_int_eq(lw_totals_get(-1, LW_KIND_COUNT).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(-2, LW_KIND_PINNED_HOST).live_bytes, 1000);
    ck_assert_int_eq(lw_totals_get(0, LW_KIND_COUNT).live_bytes, 10);
    lw_totals_take_host_floor_peak(&fl, &pk);
    ck_assert_int_eq(pk, 1000);
}
END_TEST

/* Threads allocating (never freeing) on one cell while another thread's
 * event on a second cell switches to keeping every level: no byte is lost
 * or counted twice, and since every level only grows, each peak is its
 * final live bytes. Repeated, so the switch lands at many points. */
static _Atomic int switch_go;
static void *grow_cell0(void *arg) {
    (void)arg;
    while (!atomic_load(&switch_go)) {
    }
    for (int i = 0; i < 3000; i++)
        lw_totals_alloc(0, LW_KIND_DEVICE, 7);
    return NULL;
}

START_TEST(totals_switch_under_threads_is_exact) {
    for (int round = 0; round < 20; round++) {
        lw_totals_reset();
        lw_totals_alloc(0, LW_KIND_DEVICE, 1);
        atomic_store(&switch_go, 0);
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, grow_cell0, NULL);
        atomic_store(&switch_go, 1);
        for (volatile int spin = 0; spin < round * 2000; spin++) {
        }
        lw_totals_alloc(1, LW_KIND_DEVICE, 1000);
        lw_totals_alloc(0, LW_KIND_PINNED_HOST, 3);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        int64_t c0 = 1 + 4 * 3000 * 7;
        lw_counts c = lw_totals_get(0, LW_KIND_DEVICE);
        ck_assert_int_eq(c.live_bytes, c0);
        ck_assert_int_eq(c.peak_live_bytes, c0);
        c = lw_totals_get(0, LW_KIND_COUNT);
        ck_assert_int_eq(c.live_bytes, c0 + 3);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 3);
        c = lw_totals_get(-2, LW_KIND_DEVICE);
        ck_assert_int_eq(c.live_bytes, c0 + 1000);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 1000);
        c = lw_totals_get(-2, LW_KIND_COUNT);
        ck_assert_int_eq(c.live_bytes, c0 + 1003);
        ck_assert_int_eq(c.peak_live_bytes, c0 + 1003);
        ck_assert_uint_eq(c.alloc_count, 1 + 4 * 3000 + 2);
    }
}
END_TEST

/* IPC opens are references on one mapping; a refused close leaves the
 * import as it was; an imported VMM handle's bytes are what its mappings
 * reach. Nothing of it reaches the process's own totals. */
START_TEST(imports_count_references_and_bytes) {
    lw_totals_reset();
    lw_imports_forget_all();
    lw_import_opened(LW_CLASS_DPTR, 0x1000, 512);
    lw_import_opened(LW_CLASS_DPTR, 0x1000, 512); /* opened again: the same mapping */
    lw_import_opened(LW_CLASS_DPTR, 0x9000, 1024);
    lw_import_failed();
    lw_counts c = lw_imports_get();
    ck_assert_uint_eq(c.alloc_count, 3);
    ck_assert_uint_eq(c.failed_count, 1);
    ck_assert_int_eq(c.live_count, 3);
    ck_assert_int_eq(c.live_bytes, 1536);
    lw_import_ticket t;
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    lw_import_close_end(&t, 1);
    ck_assert_int_eq(lw_imports_get().live_bytes, 1536); /* one reference left */
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024);
    lw_import_close_end(&t, 0); /* refused: still open */
    c = lw_imports_get();
    ck_assert_int_eq(c.live_bytes, 1536);
    ck_assert_int_eq(c.live_count, 2);
    ck_assert_uint_eq(c.alloc_count, 3);
    ck_assert_uint_eq(c.free_count, 1);
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    lw_import_close_end(&t, 1);
    lw_import_close_begin(LW_CLASS_DPTR, 0x5555, &t); /* never opened */
    lw_import_close_end(&t, 1);
    c = lw_imports_get();
    ck_assert_uint_eq(c.free_count, 2);
    ck_assert_int_eq(c.live_count, 1);
    ck_assert_int_eq(c.live_bytes, 1024);
    ck_assert_int_eq(c.peak_live_bytes, 1536);
    /* A VMM handle: 0 bytes until mapped, then what the mappings reach. */
    lw_import_opened(LW_CLASS_HANDLE, 7, 0);
    ck_assert(lw_import_is_handle(7));
    ck_assert(!lw_import_is_handle(0x9000)); /* an address, not a handle */
    lw_import_mapped(7, 0, 4096);
    lw_import_mapped(7, 4096, 4096);
    lw_import_mapped(7, 0, 4096);    /* no further */
    lw_import_mapped(8, 0, 1 << 20); /* not imported */
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024 + 8192);
    lw_import_close_begin(LW_CLASS_HANDLE, 7, &t);
    lw_import_close_end(&t, 1);
    ck_assert(!lw_import_is_handle(7));
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024);
    /* The process's own totals never moved. */
    lw_counts own = lw_totals_get(-2, LW_KIND_COUNT);
    ck_assert_int_eq(own.live_bytes, 0);
    ck_assert_uint_eq(own.alloc_count, 0);
    lw_imports_forget_all();
    ck_assert_uint_eq(lw_imports_get().alloc_count, 0);
}
END_TEST

static Suite *track_suite(void) {
    Suite *s = suite_create("track");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, series_bins_merge_and_keep_the_mean);
    tcase_add_test(tc, live_insert_remove_replace);
    tcase_add_test(tc, live_grows_and_scans_everything);
    tcase_add_test(tc, sites_intern_once_and_pool_past_the_cap);
    tcase_add_test(tc, site_counts_exact_after_threads_exit);
    tcase_add_test(tc, site_counts_exact_in_a_forked_child);
    tcase_add_test(tc, totals_levels_and_peaks);
    tcase_add_test(tc, totals_pinned_host_floor_apart);
    tcase_add_test(tc, totals_exact_across_the_switch);
    tcase_add_test(tc, totals_switch_under_threads_is_exact);
    tcase_add_test(tc, totals_threads_sum_exactly);
    tcase_add_test(tc, imports_count_references_and_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(track_suite());
}
