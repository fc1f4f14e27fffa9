/* SPDX-License-Identifier: Apache-2.0 */
/* The call sites (src/track/sites.c), on their own: one site per stack key,
 * the overflow site past the cap. */
#include "hash.h"
#include "sites.h"
#include "tracker_mem.h"

#include "../check_run.h"

#include <check.h>
#include <stdint.h>

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

int main(void) {
    Suite *s = suite_create("sites");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sites_intern_once_and_pool_past_the_cap);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
