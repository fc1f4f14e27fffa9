/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of memory's names (src/vocab/memory_kind.c). */
#include "memory_kind.h"

#include "../check_run.h"

#include <check.h>
#include <stddef.h>

/* The kinds' names, spelled once (memory_kind.h), read back as written:
 * the names the report has always used (totals.by_kind's keys). */
START_TEST(kind_names_read_back) {
    for (int k = 0; k < LW_KIND_COUNT; k++)
        ck_assert_int_eq(lw_kind_parse(lw_kind_name((lw_kind)k)), k);
    ck_assert_str_eq(lw_kind_name(LW_KIND_DEVICE), "device");
    ck_assert_str_eq(lw_kind_name(LW_KIND_MANAGED), "managed");
    ck_assert_str_eq(lw_kind_name(LW_KIND_PINNED_HOST), "pinned_host");
    ck_assert_str_eq(lw_kind_name(LW_KIND_PHYSICAL), "physical");
    ck_assert_str_eq(lw_kind_name(LW_KIND_COUNT), "unknown");
    ck_assert_str_eq(lw_kind_name((lw_kind)-1), "unknown");
    ck_assert_int_eq(lw_kind_parse("host"), -1);
    ck_assert_int_eq(lw_kind_parse(NULL), -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("memory_kind");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, kind_names_read_back);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
