/* SPDX-License-Identifier: Apache-2.0 */
/* Output path templates (src/base/path_template.c): %p, %r, %h, %%. */
#include "path_template.h"
#include "rank.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

START_TEST(path_templates) {
    char out[256], want[256];
    ck_assert_int_eq(lw_path_expand("run-%p.json", out, sizeof out), 0);
    snprintf(want, sizeof want, "run-%ld.json", (long)getpid());
    ck_assert_str_eq(out, want);
    setenv("RANK", "3", 1);
    ck_assert_int_eq(lw_path_expand("r%r-100%%-%q.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "r3-100%-%q.json");
    unsetenv("RANK");
    setenv("LOCAL_RANK", "5", 1);
    ck_assert_int_eq(lw_path_expand("%r", out, sizeof out), 0);
    ck_assert_str_eq(out, "5");
    unsetenv("LOCAL_RANK");
    ck_assert_int_eq(lw_path_expand("%r", out, sizeof out), 0);
    ck_assert_str_eq(out, "0");
    char host[256];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    ck_assert_int_eq(lw_path_expand("%h", out, sizeof out), 0);
    ck_assert_str_eq(out, host);
    /* Too long for the buffer: refused, never cut. */
    char small[8];
    ck_assert_int_eq(lw_path_expand("abcdefgh", small, sizeof small), -1);
    ck_assert_int_eq(lw_path_expand("abcdefg", small, sizeof small), 0);
    ck_assert_str_eq(small, "abcdefg");
}
END_TEST

/* %r is the process group's rank once the job told it (mp.spawn: no RANK). */
START_TEST(rank_of_the_process_group) {
    char out[256];
    unsetenv("RANK"), unsetenv("LOCAL_RANK"), unsetenv("SLURM_PROCID"), unsetenv("PMI_RANK");
    ck_assert_int_eq(lw_path_expand("leak-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "leak-0.json");
    lw_rank_set_group(1, 2);
    ck_assert_int_eq(lw_path_expand("leak-%r.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "leak-1.json");
    lw_rank_set_group(-1, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("path_template");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, path_templates);
    tcase_add_test(tc, rank_of_the_process_group);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
