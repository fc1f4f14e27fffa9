/* SPDX-License-Identifier: Apache-2.0 */
/* The control socket's folder (src/base/control_path.c): its checks and
 * XDG_RUNTIME_DIR/leakwatch. */
#include "control_path.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(control_dir_checks) {
    char dir[] = "/tmp/test_base_XXXXXX", err[512], link[200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(lw_control_check_dir(dir, err, sizeof err), 0);
    chmod(dir, 0755);
    ck_assert_int_ne(lw_control_check_dir(dir, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "chmod 700") != NULL, "%s", err);
    chmod(dir, 0700);
    snprintf(link, sizeof link, "%s.link", dir);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_ne(lw_control_check_dir(link, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "not a directory") != NULL, "%s", err);
    unlink(link);
    /* XDG_RUNTIME_DIR/leakwatch, created 0700 when missing. */
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char out[256];
    ck_assert_int_eq(lw_control_dir(1, out, sizeof out, err, sizeof err), 0);
    char want[256];
    snprintf(want, sizeof want, "%s/leakwatch", dir);
    ck_assert_str_eq(out, want);
    struct stat st;
    ck_assert_int_eq(stat(out, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    rmdir(out);
    rmdir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("control_path");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, control_dir_checks);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
