/* SPDX-License-Identifier: Apache-2.0 */
/* The command's shared helpers (tools/base/cli.c): the text sanitizer.
 * (Named with its folder: tests/integration/test_cli is the command's.) */
#include "cli.h"

#include "../check_run.h"

#include <check.h>

START_TEST(command_text_drops_c1) {
    char out[64];
    ck_assert_str_eq(lw_safe_text("a\xc2\x9b[31mb", out, sizeof out), "a?[31mb");
    ck_assert_str_eq(lw_safe_text("\x1b\x7f\x9b", out, sizeof out), "???");
    ck_assert_str_eq(lw_safe_text("caf\xc3\xa9 \xc4\x81", out, sizeof out),
                     "caf\xc3\xa9 \xc4\x81"); /* 0x81 inside a character is kept */
}
END_TEST

int main(void) {
    Suite *s = suite_create("tools_base_cli");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, command_text_drops_c1);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
