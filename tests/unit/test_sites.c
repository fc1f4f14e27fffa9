/* SPDX-License-Identifier: Apache-2.0 */
/* The call sites (src/track/sites.c), on their own: one site per stack key,
 * the overflow site past the cap. */
#include "hash.h"
#include "sites.h"
#include "tracker_mem.h"

#include "../check_run.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

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

int main(void) {
    Suite *s = suite_create("sites");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sites_intern_once_and_pool_past_the_cap);
    tcase_add_test(tc, site_counts_exact_after_threads_exit);
    tcase_add_test(tc, site_counts_exact_in_a_forked_child);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
