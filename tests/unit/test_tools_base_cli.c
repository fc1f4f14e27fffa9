/* SPDX-License-Identifier: Apache-2.0 */
/* The command's shared helpers (tools/base/cli.c): the text sanitizer and
 * the /proc status reader.
 * (Named with its folder: tests/integration/test_cli is the command's.) */
#include "cli.h"

#include "../check_run.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

START_TEST(command_text_drops_c1) {
    char out[64];
    ck_assert_str_eq(lw_safe_text("a\xc2\x9b[31mb", out, sizeof out), "a?[31mb");
    ck_assert_str_eq(lw_safe_text("\x1b\x7f\x9b", out, sizeof out), "???");
    ck_assert_str_eq(lw_safe_text("caf\xc3\xa9 \xc4\x81", out, sizeof out),
                     "caf\xc3\xa9 \xc4\x81"); /* 0x81 inside a character is kept */
}
END_TEST

/* The value after the key, from the line that starts with it; NULL for a key
 * that no line starts with, or a file that cannot be read. */
START_TEST(proc_status_field_reads_one_line) {
    char line[256];
    const char *v = lw_proc_status_field("/proc/self/status", "Pid:", line, sizeof line);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(strtol(v, NULL, 10), (long)getpid());
    v = lw_proc_status_field("/proc/self/status", "PPid:", line, sizeof line);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(strtol(v, NULL, 10), (long)getppid());
    ck_assert_ptr_null(lw_proc_status_field("/proc/self/status", "NoSuchKey:", line, sizeof line));
    ck_assert_ptr_null(lw_proc_status_field("/proc/0/status", "Pid:", line, sizeof line));
}
END_TEST

int main(void) {
    Suite *s = suite_create("tools_base_cli");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, command_text_drops_c1);
    tcase_add_test(tc, proc_status_field_reads_one_line);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
