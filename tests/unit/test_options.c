/* SPDX-License-Identifier: Apache-2.0 */
/* The one parser of LEAKWATCH_* values (src/base/options.c). */
#include "../check_run.h"

#include "options.h"

#include <check.h>
#include <stdlib.h>

static const lw_option_def *def(lw_option_id id) {
    return &lw_options_table(NULL)[id];
}

static int parse(lw_option_id id, const char *text, long *v) {
    char err[160];
    return lw_option_parse(def(id), text, v, err, sizeof err);
}

START_TEST(integers_are_strict) {
    long v = 0;
    ck_assert_int_eq(parse(LW_OPT_MAX_FRAMES, "32", &v), 0);
    ck_assert_int_eq(v, 32);
    static const char *const bad[] = {" 32", "+32", "32 ", "0x20", "", "3 2", "\t32", "-", NULL};
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(parse(LW_OPT_MAX_FRAMES, bad[i], &v) != 0, "accepted \"%s\"", bad[i]);
    ck_assert_int_ne(parse(LW_OPT_REPORT_EVERY, "-1", &v), 0); /* out of range */
    ck_assert_int_eq(parse(LW_OPT_REPORT_EVERY, "0", &v), 0);
}
END_TEST

START_TEST(booleans_as_documented) {
    long v = -1;
    static const char *const yes[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON", NULL};
    static const char *const no[] = {"0", "false", "no", "off", "OFF", NULL};
    static const char *const bad[] = {"10", " 1", "onn", "y", "", "2", NULL};
    for (int i = 0; yes[i]; i++) {
        ck_assert_int_eq(parse(LW_OPT_DISABLE, yes[i], &v), 0);
        ck_assert_int_eq(v, 1);
    }
    for (int i = 0; no[i]; i++) {
        ck_assert_int_eq(parse(LW_OPT_DISABLE, no[i], &v), 0);
        ck_assert_int_eq(v, 0);
    }
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(parse(LW_OPT_DISABLE, bad[i], &v) != 0, "accepted \"%s\"", bad[i]);
    /* The same words for a setting that also takes others (LEAKWATCH_TORCH_STEPS). */
    for (int i = 0; yes[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(yes[i]), 1);
    for (int i = 0; no[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(no[i]), 0);
    for (int i = 0; bad[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(bad[i]), -1);
    ck_assert_int_eq(lw_option_bool_word("iteration"), -1);
    ck_assert_int_eq(lw_option_bool_word(NULL), -1);
}
END_TEST

/* What leakwatch_enabled() reads before the library starts. */
START_TEST(one_setting_from_the_environment) {
    long v = -1;
    unsetenv("LEAKWATCH_DISABLE");
    ck_assert_int_eq(lw_option_env(LW_OPT_DISABLE, &v), 0);
    ck_assert_int_eq(v, 0);
    setenv("LEAKWATCH_DISABLE", "on", 1);
    ck_assert_int_eq(lw_option_env(LW_OPT_DISABLE, &v), 1);
    ck_assert_int_eq(v, 1);
    setenv("LEAKWATCH_DISABLE", "10", 1); /* bad: the default */
    lw_option_env(LW_OPT_DISABLE, &v);
    ck_assert_int_eq(v, 0);
    unsetenv("LEAKWATCH_DISABLE");
}
END_TEST

int main(void) {
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, integers_are_strict);
    tcase_add_test(tc, booleans_as_documented);
    tcase_add_test(tc, one_setting_from_the_environment);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
