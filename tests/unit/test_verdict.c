/* SPDX-License-Identifier: Apache-2.0 */
/* The verdicts' names (src/vocab/verdict.c). */
#include "verdict.h"

#include "../check_run.h"

#include <check.h>
#include <stddef.h>

/* The verdicts' names, spelled once (verdict.h), read back as written. */
START_TEST(verdict_names_read_back) {
    for (int v = 0; v < LW_VERDICT_COUNT; v++)
        ck_assert_int_eq(lw_verdict_parse(lw_verdict_name(v)), v);
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_LEAK), "leak");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_NO_LEAK), "no_leak");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_INCONCLUSIVE), "inconclusive");
    ck_assert_str_eq(lw_verdict_name(-1), "unknown");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_COUNT), "unknown");
    ck_assert_int_eq(lw_verdict_parse("LEAK"), -1);
    ck_assert_int_eq(lw_verdict_parse("unknown"), -1);
    ck_assert_int_eq(lw_verdict_parse(""), -1);
    ck_assert_int_eq(lw_verdict_parse(NULL), -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("verdict");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, verdict_names_read_back);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
