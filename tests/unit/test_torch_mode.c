/* SPDX-License-Identifier: Apache-2.0 */
/* The rewrite of PyTorch's allocator configuration (src/process/torch_mode.c): the
 * cudaMallocAsync backend is added to what the user wrote, unless a backend
 * is already chosen, which is then reported and left alone. */
#include "torch_mode.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#define ASYNC "backend:cudaMallocAsync"

START_TEST(rewrite_rules) {
    static const struct {
        const char *in;
        int rc;
        const char *out, *backend;
    } cases[] = {
        {NULL, 1, ASYNC, ""},
        {"", 1, ASYNC, ""},
        {"expandable_segments:True", 1, "expandable_segments:True," ASYNC, ""},
        {"expandable_segments:True, ", 1, "expandable_segments:True," ASYNC, ""},
        {"roundup_power2_divisions:[256:1,>:4],max_split_size_mb:128", 1,
         "roundup_power2_divisions:[256:1,>:4],max_split_size_mb:128," ASYNC, ""},
        {"backend:native", 0, NULL, "native"},
        {" backend : native ,expandable_segments:True", 0, NULL, "native"},
        {"expandable_segments:True,backend:cudaMallocAsync", 0, NULL, "cudaMallocAsync"},
        {"backend:native,backend:cudaMallocAsync", 0, NULL, "cudaMallocAsync"},
        /* a value named backend is not the key */
        {"pinned_use_cuda_host_register:True", 1, "pinned_use_cuda_host_register:True," ASYNC, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[256] = "", backend[32] = "x";
        int rc = lw_torch_conf_rewrite(cases[i].in, out, sizeof out, backend, sizeof backend);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d", i, rc);
        if (rc) ck_assert_str_eq(out, cases[i].out);
        ck_assert_str_eq(backend, cases[i].backend);
    }
    char small[8];
    char backend[32];
    ck_assert_int_eq(lw_torch_conf_rewrite("expandable_segments:True", small, sizeof small, backend,
                                           sizeof backend),
                     0);
}
END_TEST

/* The backend PyTorch would use is the last one written, with its spaces
 * dropped as PyTorch's tokenizer drops them; a value that reads "backend" is
 * not the key. */
START_TEST(backend_as_pytorch_reads_it) {
    char out[128], backend[32];
    ck_assert_int_eq(lw_torch_conf_rewrite("backend : cuda Malloc Async", out, sizeof out, backend,
                                           sizeof backend),
                     0);
    ck_assert_str_eq(backend, "cudaMallocAsync");
    ck_assert_int_eq(lw_torch_conf_rewrite("max_split_size_mb:backend", out, sizeof out, backend,
                                           sizeof backend),
                     1);
    ck_assert_str_eq(out, "max_split_size_mb:backend," ASYNC);
    ck_assert_str_eq(backend, "");
    /* Only separators: the value is replaced, never left with an empty key. */
    ck_assert_int_eq(lw_torch_conf_rewrite(", ,", out, sizeof out, backend, sizeof backend), 1);
    ck_assert_str_eq(out, ASYNC);
}
END_TEST

/* A result that would not fit is refused, never cut short: exactly fitting
 * is accepted. */
START_TEST(out_of_room_is_refused) {
    char backend[32];
    char exact[sizeof ASYNC];
    ck_assert_int_eq(lw_torch_conf_rewrite(NULL, exact, sizeof exact, backend, sizeof backend), 1);
    ck_assert_str_eq(exact, ASYNC);
    char short_by_one[sizeof ASYNC - 1];
    ck_assert_int_eq(
        lw_torch_conf_rewrite(NULL, short_by_one, sizeof short_by_one, backend, sizeof backend), 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("torch_mode");
    TCase *tc = tcase_create("rewrite");
    tcase_add_test(tc, rewrite_rules);
    tcase_add_test(tc, backend_as_pytorch_reads_it);
    tcase_add_test(tc, out_of_room_is_refused);
    suite_add_tcase(s, tc);
    return lw_check_run(s);
}
