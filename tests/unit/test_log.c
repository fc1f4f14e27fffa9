/* SPDX-License-Identifier: Apache-2.0 */
/* The escaping of the shim's stderr lines (src/base/log.c). */
#include "log.h"

#include "../check_run.h"

#include <check.h>

START_TEST(log_lines_escape_controls) {
    char out[256];
    lw_log_escape("a\nb\x1b[1m", out, sizeof out);
    ck_assert_str_eq(out, "a\\x0ab\\x1b[1m");
    lw_log_escape("csi \xc2\x9b del \x7f lone \x9b", out, sizeof out);
    ck_assert_str_eq(out, "csi \\xc2\\x9b del \\x7f lone \\x9b");
    lw_log_escape("caf\xc3\xa9 \xe2\x82\xac \xc2\xa0", out, sizeof out); /* é, €, NBSP */
    ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x82\xac \xc2\xa0");
    /* Never cut in the middle of an escape. */
    char small[6];
    lw_log_escape("ab\ncd", small, sizeof small);
    ck_assert_str_eq(small, "ab");
}
END_TEST

int main(void) {
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, log_lines_escape_controls);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
