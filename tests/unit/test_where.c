/* SPDX-License-Identifier: Apache-2.0 */
/* The place to look (src/vocab/where.c): the rule every output names a site
 * by, and the Python helper's copy of it. */
#include "../check_run.h"
#include "where.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Paths of Python frames that the helper and the library must judge alike:
 * the user's scripts (also relative, and code without a file), the standard
 * library, installed packages, torch, frozen modules, leakwatch's own
 * package. */
static const char *const rule_paths[] = {
    "/home/me/proj/train.py",
    "train.py",
    "<string>",
    "<autograd engine>",
    "<frozen runpy>",
    "/usr/lib/python3.13/json/encoder.py",
    "/opt/conda/lib64/python3.11/ctypes/__init__.py",
    "/venv/lib/python3.11/site-packages/torch/nn/functional.py",
    "/usr/local/lib/python3.11/dist-packages/numba/cuda/api.py",
    "/home/me/src/torch/utils/data.py",
    "/home/me/proj/torch.py",
    "/home/me/proj/torchvision_extra/x.py",
    "/home/me/proj/python3/lib.py",
    "/usr/lib/python3/dist-packages/leakwatch/_torch.py",
    "/work/leakwatch/python/leakwatch/__init__.py",
    "/work/leakwatch/python/leakwatch/mine.py",
    "/home/me/notleakwatch/_torch.py",
    "/venv/lib/python3.11/site-packages/mypkg/model.py",
    "/venv/lib/python3.11/site-packages/mypkg.py",
    "/opt/own/stuff/loop.py",
    "/srv/libmypkg-1.0/x.py",
    NULL,
};

/* One LEAKWATCH_USER_CODE value: the helper's copy of the rule (run in
 * python3 on the paths above), the library's export (leakwatch_user_code)
 * and the helper's own decision with the library loaded (which asks it),
 * each against lw_frame_classify. */
static void rule_agrees(const char *user_code) {
    char cmd[2048], in[] = "/tmp/lw-user-code-XXXXXX";
    int fd = mkstemp(in);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; rule_paths[i]; i++)
        fprintf(f, "%s\n", rule_paths[i]);
    fclose(f);
    const char *b = getenv("LW_BUILD");
    /* A sanitizer build's library loads only after its runtime (make
     * check-san sets LW_ASAN_RT); CPython's own leaks at exit are not ours. */
    const char *rt = getenv("LW_ASAN_RT");
    char pre[600] = "";
    if (rt && *rt) snprintf(pre, sizeof pre, "LD_PRELOAD=%s ASAN_OPTIONS=detect_leaks=0 ", rt);
    /* Cross-built (make check-aarch64): the target's CPython through qemu,
     * which can load the target's library; the host's cannot. */
    char py[600] = "python3";
    const char *ex = getenv("LW_TEST_EXEC"), *pys = getenv("LW_PYTHONS");
    if (ex && *ex && pys && *pys)
        snprintf(py, sizeof py, "%s %.*s", ex, (int)strcspn(pys, ": "), pys);
    snprintf(cmd, sizeof cmd,
             "%sLEAKWATCH_USER_CODE='%s' LW_LIB=%s/libleakwatch.so %s "
             "tests/python/user_code_rule.py <%s",
             pre, user_code ? user_code : "", b && *b ? b : "build", py, in);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, '\t');
        ck_assert_ptr_nonnull(path);
        *path++ = '\0';
        char *lib = strchr(path, '\t');
        ck_assert_ptr_nonnull(lib);
        *lib++ = '\0';
        char *helper = strchr(lib, '\t');
        ck_assert_ptr_nonnull(helper);
        *helper++ = '\0';
        ck_assert_str_eq(path, rule_paths[n]);
        lw_frame_ref fr = {1, "f", path, NULL, 1};
        int c = lw_frame_classify(&fr, user_code) == LW_FRAME_USER;
        ck_assert_msg(atoi(line) == c, "%s (LEAKWATCH_USER_CODE=%s): python %s, C %d", path,
                      user_code ? user_code : "", line, c);
        ck_assert_msg(atoi(lib) == c, "%s: the library's export says %s, where.c %d", path, lib, c);
        ck_assert_msg(atoi(helper) == c, "%s: the helper says %s with the library, where.c %d",
                      path, helper, c);
        n++;
    }
    ck_assert_int_eq(pclose(p), 0);
    unlink(in);
    int want = 0;
    while (rule_paths[want])
        want++;
    ck_assert_int_eq(n, want);
}

START_TEST(python_helper_has_the_same_user_code_rule) {
    if (system("command -v python3 >/dev/null 2>&1") != 0) {
        printf("test_where: no python3; the helper's rule is not compared\n");
        return;
    }
    rule_agrees(NULL);
    rule_agrees("mypkg:/opt/own/,numba");
    /* Leakwatch's own helper is never the place to look; the user's code is. */
    lw_frame_ref own[] = {PY("/x/python/leakwatch/_torch.py", "step", 5),
                          PY("/srv/job/run.py", "main", 3)};
    ck_assert_int_eq(lw_where_pick(own, 2, NULL, NULL), 1);
    /* A site made on autograd's thread (site_name.c): libtorch's frames, the
     * frame that stands for the engine, then the caller's: the caller's line
     * is the place, not "<autograd engine>". */
    lw_frame_ref engine[] = {
        NATIVE("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so", "at_empty", NULL,
               0),
        PY("<autograd engine>", "backward", 0),
        PY("/venv/lib/python3.11/site-packages/torch/_tensor.py", "backward", 298),
        PY("/home/me/proj/train.py", "train", 31)};
    ck_assert_int_eq(lw_where_pick(engine, 4, NULL, NULL), 3);
}
END_TEST

/* The distinguishing frame: stash() and scratch() allocate through
 * device_alloc(), which is every site's place to look. */
#define CUDA NATIVE("/usr/local/cuda/lib64/libcudart.so.12", "cudaMalloc", NULL, 0)
#define FFI NATIVE("/usr/lib/x86_64-linux-gnu/libffi.so.8", "ffi_call", NULL, 0)
static const lw_frame_ref via_stash[] = {CUDA,
                                         FFI,
                                         PY("/p/buffers.py", "device_alloc", 13),
                                         PY("/p/buffers.py", "stash", 30),
                                         PY("/p/train.py", "train", 50),
                                         PY("/p/train.py", "<module>", 60)};
static const lw_frame_ref via_scratch[] = {
    CUDA, PY("/p/buffers.py", "device_alloc", 13), PY("/p/buffers.py", "scratch", 40),
    PY("/p/train.py", "train", 51), PY("/p/train.py", "<module>", 60)};
/* stash() called once more, from another line of train(). */
static const lw_frame_ref via_stash_init[] = {
    CUDA, PY("/p/buffers.py", "device_alloc", 13), PY("/p/buffers.py", "stash", 30),
    PY("/p/train.py", "train", 45), PY("/p/train.py", "<module>", 60)};
static const lw_frame_ref elsewhere[] = {CUDA, PY("/p/model.py", "forward", 7),
                                         PY("/p/train.py", "train", 50)};
/* The same user frames as via_stash, other native frames. */
static const lw_frame_ref via_stash_async[] = {
    NATIVE("/usr/local/cuda/lib64/libcudart.so.12", "cudaMallocAsync", NULL, 0),
    PY("/p/buffers.py", "device_alloc", 13), PY("/p/buffers.py", "stash", 30),
    PY("/p/train.py", "train", 50), PY("/p/train.py", "<module>", 60)};
#define N(a) (sizeof a / sizeof a[0])

START_TEST(distinguishing_frame) {
    int k = lw_where_pick(via_stash, N(via_stash), NULL, NULL);
    ck_assert_int_eq(k, 2);
    int ko = lw_where_pick(via_scratch, N(via_scratch), NULL, NULL);
    ck_assert_int_eq(ko, 1);
    /* The first frame further out that differs: stash's line. */
    int d = lw_where_apart(via_stash, N(via_stash), k, via_scratch, N(via_scratch), ko, NULL);
    ck_assert_int_eq(d, 3);
    char label[256];
    ck_assert_str_eq(lw_where_label_via(&via_stash[d], &via_stash[k], label, sizeof label),
                     "buffers.py:30 in stash (via device_alloc, buffers.py:13)");
    /* The same caller, another line of train(): train's line tells them apart. */
    d = lw_where_apart(via_stash, N(via_stash), k, via_stash_init, N(via_stash_init), 1, NULL);
    ck_assert_int_eq(d, 4);
    ck_assert_str_eq(lw_where_label_via(&via_stash[d], &via_stash[k], label, sizeof label),
                     "train.py:50 in train (via device_alloc, buffers.py:13)");
    /* Another place: not compared. */
    ck_assert_int_eq(lw_where_apart(via_stash, N(via_stash), k, elsewhere, N(elsewhere), 1, NULL),
                     -2);
    /* Only native frames differ: no user frame tells them apart. */
    ck_assert_int_eq(
        lw_where_apart(via_stash, N(via_stash), k, via_stash_async, N(via_stash_async), 1, NULL),
        -1);
    /* A stack whose user frames are all the other's: none of its own. */
    ck_assert_int_eq(lw_where_apart(via_stash, 4, k, via_stash_async, N(via_stash_async), 1, NULL),
                     -1);
    /* No place. */
    ck_assert_int_eq(
        lw_where_apart(via_stash, N(via_stash), -1, via_scratch, N(via_scratch), ko, NULL), -2);
}
END_TEST

/* Sites' frames one after another, as lw_where_apart_sites takes them. */
static size_t flatten(lw_frame_ref *out, size_t *nf, const lw_frame_ref *const *sites,
                      const size_t *n, size_t count) {
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(out + k, sites[i], n[i] * sizeof *out);
        nf[i] = n[i];
        k += n[i];
    }
    return k;
}

/* The distinguishing frame of many sites at once (the reports' and the
 * command's one code): each site against the sites of the other kind. */
START_TEST(distinguishing_frames_of_sites) {
    lw_frame_ref all[64];
    size_t nf[4];
    int out[4];
    /* Two sites sharing device_alloc, stash's leaking: each one's caller. */
    const lw_frame_ref *two[] = {via_stash, via_scratch};
    const size_t ntwo[] = {N(via_stash), N(via_scratch)};
    flatten(all, nf, two, ntwo, 2);
    long budget = LW_WHERE_APART_BUDGET;
    ck_assert_int_eq(lw_where_apart_sites(all, nf, (const int[]){1, 0}, 2, NULL, &budget, out), 0);
    ck_assert_int_eq(out[0], 3); /* stash, buffers.py:30 */
    ck_assert_int_eq(out[1], 2); /* scratch, buffers.py:40 */
    ck_assert_int_eq(budget, LW_WHERE_APART_BUDGET - 2);
    /* Both leaking: never compared, no frame named. */
    budget = LW_WHERE_APART_BUDGET;
    ck_assert_int_eq(lw_where_apart_sites(all, nf, (const int[]){1, 1}, 2, NULL, &budget, out), 0);
    ck_assert_int_eq(out[0], -1);
    ck_assert_int_eq(out[1], -1);
    ck_assert_int_eq(budget, LW_WHERE_APART_BUDGET);
    /* Two leaking stash() calls and the clean scratch(): the leaking ones are
     * told apart from scratch() by stash's line, not from each other by
     * train's (4 for via_stash, were they compared). */
    const lw_frame_ref *three[] = {via_stash, via_stash_init, via_scratch, elsewhere};
    const size_t nthree[] = {N(via_stash), N(via_stash_init), N(via_scratch), N(elsewhere)};
    flatten(all, nf, three, nthree, 4);
    const int leak3[] = {1, 1, 0, 0};
    budget = LW_WHERE_APART_BUDGET;
    ck_assert_int_eq(lw_where_apart_sites(all, nf, leak3, 4, NULL, &budget, out), 0);
    ck_assert_int_eq(out[0], 3);
    ck_assert_int_eq(out[1], 2);
    ck_assert_int_eq(out[2], 2);
    ck_assert_int_eq(out[3], -1); /* another place: nothing to tell apart */
    ck_assert_int_eq(budget, LW_WHERE_APART_BUDGET - 8);
    /* Budget 0: nothing compared, every site keeps its plain place. */
    budget = 0;
    ck_assert_int_eq(lw_where_apart_sites(all, nf, leak3, 4, NULL, &budget, out), 0);
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(out[i], -1);
    ck_assert_int_eq(budget, 0);
    /* A budget that runs out within the third site's comparisons: the first
     * two keep their frame, the third (cut short) and the rest none. */
    budget = 5;
    ck_assert_int_eq(lw_where_apart_sites(all, nf, leak3, 4, NULL, &budget, out), 0);
    ck_assert_int_eq(out[0], 3);
    ck_assert_int_eq(out[1], 2);
    ck_assert_int_eq(out[2], -1);
    ck_assert_int_eq(out[3], -1);
    ck_assert_int_eq(budget, 0);
    /* No sites, and a site without frames. */
    budget = LW_WHERE_APART_BUDGET;
    ck_assert_int_eq(lw_where_apart_sites(NULL, NULL, NULL, 0, NULL, &budget, out), 0);
    nf[0] = 0;
    ck_assert_int_eq(lw_where_apart_sites(NULL, nf, (const int[]){1}, 1, NULL, &budget, out), 0);
    ck_assert_int_eq(out[0], -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("where");
    TCase *tc = tcase_create("where");
    tcase_add_test(tc, user_line_beats_torch_and_stdlib);
    tcase_add_test(tc, user_code_option_widens);
    tcase_add_test(tc, fallbacks);
    tcase_add_test(tc, native_classes);
    tcase_add_test(tc, distinguishing_frame);
    tcase_add_test(tc, distinguishing_frames_of_sites);
    suite_add_tcase(s, tc);
    /* Two CPython runs, under qemu in make check-aarch64 (Check's time
     * limit is multiplied there): on a loaded machine they passed Check's
     * default 4 s (40 s under qemu). */
    TCase *py = tcase_create("python");
    tcase_set_timeout(py, 60);
    tcase_add_test(py, python_helper_has_the_same_user_code_rule);
    suite_add_tcase(s, py);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
