/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU stand-ins for libcuda.so.1 / libcudart (tests/stubs) behave as the
 * tests of leakwatch assume: runs their self-check programs, without the shim,
 * in every configuration, and checks the legacy driver's exports.
 *
 * Programs are found in $LW_BUILD/tests/programs (LW_BUILD defaults to
 * "build"); stand-ins in $LW_BUILD/tests/lib and $LW_BUILD/tests/lib-legacy. */
#include "../check_run.h"
#include "../test_exec.h"
#include <check.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *build_dir(void) {
    const char *b = getenv("LW_BUILD");
    return b != NULL && *b != '\0' ? b : "build";
}

/* Runs $LW_BUILD/tests/programs/<prog> [arg] with LD_LIBRARY_PATH set to
 * $LW_BUILD/tests/<libdir> (unset when libdir is NULL) and env_kv ("NAME=value",
 * may be NULL) added; every other FAKE_CUDA_* knob and LD_PRELOAD removed so
 * the result does not depend on the caller's environment. Returns the exit
 * status, or -1 if it did not exit normally. */
static int run(const char *prog, const char *arg, const char *libdir, const char *env_kv) {
    char path[PATH_MAX], libpath[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/programs/%s", build_dir(), prog);
    snprintf(libpath, sizeof libpath, "%s/tests/%s", build_dir(), libdir ? libdir : "");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("LD_PRELOAD");
        unsetenv("FAKE_CUDA_DEVICES");
        unsetenv("FAKE_CUDA_MEM_BYTES");
        unsetenv("FAKE_CUDA_FAIL_EXPORT_TABLE");
        if (libdir != NULL)
            setenv("LD_LIBRARY_PATH", libpath, 1);
        else
            unsetenv("LD_LIBRARY_PATH");
        if (env_kv != NULL) putenv((char *)env_kv);
        char *argv[20];
        int ac = lw_test_exec_prefix(path, argv, 16);
        argv[ac++] = (char *)path;
        argv[ac++] = (char *)arg;
        argv[ac] = NULL;
        execv(argv[0], argv);
        perror(path);
        _exit(127);
    }
    ck_assert_int_gt(pid, 0);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The stand-ins' IPC and shareable handles, without the shim: the program
 * checks what the driver answers (a handle of its own refused, a second
 * opening the same address, a closed handle refused) and exits non-zero if
 * anything differs. */
START_TEST(ipc_and_shareable_handles) {
    ck_assert_int_eq(run("drv_paths", "ipc", "lib", NULL), 0);
    ck_assert_int_eq(run("rt_paths", "ipc", "lib", NULL), 0);
    ck_assert_int_eq(run("drv_paths", "shareable", "lib", NULL), 0);
}
END_TEST

START_TEST(driver_selfcheck) {
    ck_assert_int_eq(run("drv_stubcheck", NULL, NULL, NULL), 0);
}
END_TEST

/* The client half (fake_cuda_clients.c): what numba and PyCUDA need, on the
 * CUDA 13 driver and on its CUDA 12.8 variant (no cuCtxGetDevice_v2). */
START_TEST(driver_clients) {
    ck_assert_int_eq(run("drv_clients", NULL, NULL, NULL), 0);
    ck_assert_int_eq(run("drv_clients", "cuda12", "lib-cuda12", NULL), 0);
}
END_TEST

START_TEST(driver_selfcheck_configured) {
    ck_assert_int_eq(run("drv_stubcheck", NULL, NULL, "FAKE_CUDA_MEM_BYTES=3G"), 0);
    ck_assert_int_eq(run("drv_stubcheck", NULL, NULL, "FAKE_CUDA_DEVICES=5"), 0);
}
END_TEST

START_TEST(runtime_shared) {
    ck_assert_int_eq(run("rt_stubcheck", NULL, "lib", NULL), 0);
}
END_TEST

START_TEST(runtime_static) {
    /* No LD_LIBRARY_PATH: the static runtime's dlopen uses the program's RUNPATH. */
    ck_assert_int_eq(run("static_stubcheck", NULL, NULL, NULL), 0);
}
END_TEST

START_TEST(runtime_shared_legacy_driver) {
    ck_assert_int_eq(run("rt_stubcheck", "legacy", "lib-legacy", NULL), 0);
}
END_TEST

START_TEST(runtime_static_legacy_driver) {
    ck_assert_int_eq(run("static_stubcheck", "legacy", "lib-legacy", NULL), 0);
}
END_TEST

START_TEST(runtime_export_table_failure) {
    const char *env = "FAKE_CUDA_FAIL_EXPORT_TABLE=1";
    ck_assert_int_eq(run("rt_stubcheck", "export-fail", "lib", env), 0);
    ck_assert_int_eq(run("static_stubcheck", "export-fail", "lib", env), 0);
}
END_TEST

START_TEST(runtime_no_device) {
    ck_assert_int_eq(run("rt_stubcheck", "no-device", "lib", "FAKE_CUDA_DEVICES=0"), 0);
    ck_assert_int_eq(run("static_stubcheck", "no-device", NULL, "FAKE_CUDA_DEVICES=0"), 0);
}
END_TEST

START_TEST(runtime_more_devices) {
    ck_assert_int_eq(run("rt_stubcheck", NULL, "lib", "FAKE_CUDA_DEVICES=4"), 0);
}
END_TEST

/* No libcuda.so.1 anywhere (an empty LD_LIBRARY_PATH folder, and libcudart.so
 * has no RUNPATH): cudaErrorInsufficientDriver, as on a machine without the
 * NVIDIA driver. The program skips itself if a real driver is installed. */
START_TEST(runtime_without_driver) {
    ck_assert_int_eq(run("rt_stubcheck", "no-driver", "no-such-folder", NULL), 0);
}
END_TEST

START_TEST(legacy_driver_exports) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/lib-legacy/libcuda.so.1", build_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    ck_assert_ptr_null(dlsym(h, "cuGetProcAddress_v2"));
    ck_assert_ptr_null(dlsym(h, "cuGetProcAddress"));
    ck_assert_ptr_nonnull(dlsym(h, "cuMemAlloc_v2"));
    ck_assert_ptr_nonnull(dlsym(h, "cuMemAllocAsync_ptsz"));
    ck_assert_ptr_nonnull(dlsym(h, "cuGetExportTable"));
    ck_assert_ptr_nonnull(dlsym(h, "fake_cuda_calls"));
    dlclose(h);
}
END_TEST

START_TEST(driver_exports) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/lib/libcuda.so.1", build_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    const char *names[] = {"cuInit",
                           "cuDriverGetVersion",
                           "cuDeviceGetCount",
                           "cuDeviceGet",
                           "cuDevicePrimaryCtxRetain",
                           "cuDevicePrimaryCtxRelease_v2",
                           "cuDevicePrimaryCtxGetState",
                           "cuCtxSetCurrent",
                           "cuCtxGetCurrent",
                           "cuCtxPushCurrent_v2",
                           "cuCtxPopCurrent_v2",
                           "cuCtxGetDevice",
                           "cuMemGetInfo_v2",
                           "cuMemAlloc_v2",
                           "cuMemAlloc",
                           "cuMemFree_v2",
                           "cuMemAllocPitch_v2",
                           "cuMemAllocManaged",
                           "cuMemAllocAsync",
                           "cuMemAllocAsync_ptsz",
                           "cuMemFreeAsync",
                           "cuMemFreeAsync_ptsz",
                           "cuMemAllocFromPoolAsync",
                           "cuMemAllocFromPoolAsync_ptsz",
                           "cuMemCreate",
                           "cuMemRelease",
                           "cuMemAddressReserve",
                           "cuMemAddressFree",
                           "cuMemMap",
                           "cuMemRetainAllocationHandle",
                           "cuMemUnmap",
                           "cuMemSetAccess",
                           "cuMemHostAlloc",
                           "cuMemAllocHost_v2",
                           "cuMemFreeHost",
                           "cuGetExportTable",
                           "cuGetProcAddress",
                           "cuGetProcAddress_v2",
                           "fake_cuda_calls",
                           "fake_cuda_used_bytes",
                           "fake_cuda_live_allocations"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(dlsym(h, names[i]) != NULL, "libcuda.so.1 lacks %s", names[i]);
    /* The unversioned macro names of cuda.h are not symbols of the real library. */
    ck_assert_ptr_null(dlsym(h, "cuMemAllocHost"));
    ck_assert_ptr_null(dlsym(h, "cuMemAllocPitch"));
    dlclose(h);
}
END_TEST

static Suite *stubs_suite(void) {
    Suite *s = suite_create("stubs");
    TCase *tc = tcase_create("stand-ins");
    /* The programs start threads and "allocate" tens of GiB: give them time
     * on a loaded machine or under a sanitizer build of this binary. */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, driver_exports);
    tcase_add_test(tc, legacy_driver_exports);
    tcase_add_test(tc, driver_selfcheck);
    tcase_add_test(tc, driver_clients);
    tcase_add_test(tc, ipc_and_shareable_handles);
    tcase_add_test(tc, driver_selfcheck_configured);
    tcase_add_test(tc, runtime_shared);
    tcase_add_test(tc, runtime_static);
    tcase_add_test(tc, runtime_shared_legacy_driver);
    tcase_add_test(tc, runtime_static_legacy_driver);
    tcase_add_test(tc, runtime_export_table_failure);
    tcase_add_test(tc, runtime_no_device);
    tcase_add_test(tc, runtime_more_devices);
    tcase_add_test(tc, runtime_without_driver);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    int failed = lw_check_run(stubs_suite());
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
