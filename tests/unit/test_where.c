/* SPDX-License-Identifier: Apache-2.0 */
/* The place to look (src/base/where.c), the answer line and the launcher's
 * rank (src/base/fmt.c, rank.c): the rules every output names a site by. */
#include "../check_run.h"
#include "fmt.h"
#include "rank.h"
#include "where.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PY(file, fn, line)                                                                         \
    { 1, fn, file, NULL, line }
#define NATIVE(mod, fn, file, line)                                                                \
    { 0, fn, file, mod, line }

/* A PyTorch stack, innermost first: the CUDA runtime, libtorch, torch's
 * Python code, then the user's script, the interpreter and libc. */
static const lw_frame_ref torch_stack[] = {
    NATIVE("/usr/local/cuda/lib64/libcudart.so.12", "cudaMallocAsync", NULL, 0),
    NATIVE("/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so", "c10_alloc", NULL, 0),
    NATIVE("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so", "at_empty", NULL, 0),
    PY("/venv/lib/python3.11/site-packages/torch/nn/functional.py", "cross_entropy", 3104),
    PY("/venv/lib/python3.11/site-packages/torch/nn/modules/loss.py", "forward", 1188),
    PY("/home/me/proj/train.py", "train", 27),
    PY("/home/me/proj/train.py", "<module>", 40),
    NATIVE("/usr/bin/python3.11", "Py_RunMain", NULL, 0),
    NATIVE("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_main", NULL, 0),
};
#define NTORCH (sizeof torch_stack / sizeof torch_stack[0])

START_TEST(user_line_beats_torch_and_stdlib) {
    const char *why = NULL;
    int k = lw_where_pick(torch_stack, NTORCH, NULL, &why);
    ck_assert_int_eq(k, 5);
    ck_assert_str_eq(why, "user code");
    char label[256];
    ck_assert_str_eq(lw_where_label(&torch_stack[k], label, sizeof label), "train.py:27 in train");
    /* The standard library and frozen modules are not the user's either. */
    lw_frame_ref std[] = {PY("/usr/lib/python3.12/json/encoder.py", "encode", 10),
                          PY("<frozen runpy>", "_run_code", 88), PY("/srv/job/run.py", "main", 3)};
    ck_assert_int_eq(lw_where_pick(std, 3, NULL, NULL), 2);
}
END_TEST

START_TEST(user_code_option_widens) {
    /* A package of the user's own, installed: named, its line is the place. */
    ck_assert_int_eq(lw_where_pick(torch_stack, NTORCH, "torch", NULL), 1);
    ck_assert_int_eq(
        lw_where_pick(torch_stack, NTORCH, "/venv/lib/python3.11/site-packages/torch/nn", NULL), 3);
    ck_assert_int_eq(lw_where_pick(torch_stack, NTORCH, "nomatch:,other", NULL), 5);
}
END_TEST

START_TEST(fallbacks) {
    /* Only library Python: the innermost Python frame. */
    const char *why = NULL;
    ck_assert_int_eq(lw_where_pick(torch_stack, 5, NULL, &why), 3);
    ck_assert_str_eq(why, "innermost Python frame");
    /* Only native library frames: the innermost named one outside CUDA. */
    ck_assert_int_eq(lw_where_pick(torch_stack, 3, NULL, &why), 1);
    ck_assert_str_eq(why, "innermost native frame");
    ck_assert_int_eq(lw_where_pick(torch_stack, 0, NULL, NULL), -1);
}
END_TEST

START_TEST(native_classes) {
    lw_frame_ref f[] = {
        NATIVE("/build/train_loop", "keep_loss_history", "/src/train_loop.c", 45),
        NATIVE("/usr/lib/x86_64-linux-gnu/libffi.so.8", NULL, NULL, 0),
        NATIVE("/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so",
               "_ctypes_callproc", "callproc.c", 1262),
        NATIVE("/build/train_loop", "_start", NULL, 0),
        NATIVE("/lib/x86_64-linux-gnu/libc.so.6", "__libc_start_call_main", NULL, 0),
        NATIVE("/opt/lw/libleakwatch.so", "cudaMalloc", "runtime.c", 40),
        NATIVE("/build/tests/lib/libcudart.so", "cudaMalloc", "fake_cudart.c", 266),
        NATIVE("/usr/lib/libpython3.11.so.1.0", "PyObject_Call", NULL, 0),
    };
    ck_assert_int_eq(lw_frame_classify(&f[0], NULL), LW_FRAME_USER);
    ck_assert_int_eq(lw_frame_classify(&f[1], NULL), LW_FRAME_FFI);
    ck_assert_int_eq(lw_frame_classify(&f[2], NULL), LW_FRAME_FFI);
    ck_assert_int_eq(lw_frame_classify(&f[3], NULL), LW_FRAME_LIBC);
    ck_assert_int_eq(lw_frame_classify(&f[4], NULL), LW_FRAME_LIBC);
    ck_assert_int_eq(lw_frame_classify(&f[5], NULL), LW_FRAME_LEAKWATCH);
    ck_assert_int_eq(lw_frame_classify(&f[6], NULL), LW_FRAME_CUDA);
    ck_assert_int_eq(lw_frame_classify(&f[7], NULL), LW_FRAME_INTERP);
    for (int i = 1; i < 8; i++)
        ck_assert(lw_frame_class_is_noise(lw_frame_classify(&f[i], NULL)));
    /* Under the Python demo: the stand-in runtime has a source line, the
     * ctypes glue too; the user's Python line wins. */
    lw_frame_ref demo[] = {f[6], f[1], f[2], PY("/work/tests/python/leak_ctypes.py", "train", 29),
                           f[4]};
    ck_assert_int_eq(lw_where_pick(demo, 5, NULL, NULL), 3);
}
END_TEST

START_TEST(answer_line_is_one_format) {
    lw_answer a;
    lw_answer_init(&a);
    a.verdict = "leak";
    a.where = "train.py:27 in train";
    a.rate = a.lo = a.hi = 512;
    a.onset = 2;
    a.free_bytes = 80.0 * 1024 * 1024 * 1024;
    a.total_bytes = 80.0 * 1024 * 1024 * 1024;
    lw_answer_oom(a.free_bytes, 1024, 512, &a.oom_seconds, &a.oom_steps);
    char line[512];
    lw_answer_line(&a, line, sizeof line);
    ck_assert_msg(!strncmp(line,
                           "LEAK in train.py:27 in train: +512 B/step (95% CI 512 B .. "
                           "512 B) since step 2; out of memory in 970 d 21 h "
                           "(167,772,160 steps) at this rate (80.0 GiB free of 80.0 GiB)",
                           200),
                  "%s", line);
    a.computed_at = 64;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "[as of step 64]"));
    double s, st;
    lw_answer_oom(NAN, 1, 1, &s, &st);
    ck_assert(isnan(s) && isnan(st));
    lw_answer_oom(100, -1, 0, &s, &st);
    ck_assert(isnan(s) && isnan(st));
    a.verdict = "no_leak";
    a.where_live = 1024;
    a.computed_at = NAN;
    a.steps = 300;
    lw_answer_line(&a, line, sizeof line);
    ck_assert_str_eq(line, "no leak: the floor of live memory is flat over 300 steps; largest "
                           "site: train.py:27 in train (1.00 KiB live)");
}
END_TEST

START_TEST(rank_from_launchers) {
    const char *vars[] = {"RANK",
                          "LOCAL_RANK",
                          "WORLD_SIZE",
                          "SLURM_PROCID",
                          "SLURM_LOCALID",
                          "SLURM_NTASKS",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_SIZE",
                          "PMI_RANK",
                          "PMI_SIZE",
                          "PMIX_RANK",
                          "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    lw_rank_info r;
    lw_rank_get(&r);
    ck_assert(r.rank == -1 && r.local_rank == -1 && r.world_size == -1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS", "8", 1);
    lw_rank_get(&r);
    ck_assert(r.rank == 5 && r.local_rank == 1 && r.world_size == 8);
    setenv("RANK", "3", 1); /* torchrun's wins */
    setenv("OMPI_COMM_WORLD_SIZE", "junk", 1);
    lw_rank_get(&r);
    ck_assert_int_eq(r.rank, 3);
    unsetenv("RANK"), unsetenv("SLURM_PROCID");
    setenv("PMI_RANK", "2", 1);
    setenv("RANK", "-4", 1); /* not a rank: ignored */
    lw_rank_get(&r);
    ck_assert_int_eq(r.rank, 2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("where");
    TCase *tc = tcase_create("where");
    tcase_add_test(tc, user_line_beats_torch_and_stdlib);
    tcase_add_test(tc, user_code_option_widens);
    tcase_add_test(tc, fallbacks);
    tcase_add_test(tc, native_classes);
    tcase_add_test(tc, answer_line_is_one_format);
    tcase_add_test(tc, rank_from_launchers);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
