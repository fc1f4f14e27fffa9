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
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
static int run_in(const char *prog, const char *arg, const char *libdir, const char *env_kv,
                  rlim_t address_space) {
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
        struct rlimit as = {address_space, address_space};
        if (address_space != RLIM_INFINITY && setrlimit(RLIMIT_AS, &as) != 0) _exit(126);
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

static int run(const char *prog, const char *arg, const char *libdir, const char *env_kv) {
    return run_in(prog, arg, libdir, env_kv, RLIM_INFINITY);
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

/* Device memory is host memory also where the address space has no room for
 * the stand-in's 8 TiB reservation (ThreadSanitizer's layout holds about
 * 1 TiB in one piece): drv_paths writes the IPC memory it opened, which
 * faulted there. The room is taken away here with an address-space limit;
 * the sanitizer runtimes reserve more than that for their shadow before
 * main, so their builds run it without one (under ThreadSanitizer, the
 * layout is the limit). */
START_TEST(device_memory_with_less_address_space) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    rlim_t as = RLIM_INFINITY;
#else
    rlim_t as = (rlim_t)3 << 40;
#endif
    ck_assert_int_eq(run_in("drv_paths", "ipc", "lib", NULL, as), 0);
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

/* ---- the CUDA 12 stack that hosts Debian's real PyTorch 2.6 ----
 * Every symbol the real clients reference (the committed lists
 * tests/stubs/cuda12/<soname>.syms) is exported by the stand-in of that
 * soname, with the soname as symbol version (what PyTorch's references
 * require), NCCL's unversioned. Lists are read from the source tree: the
 * test runs from the repository's root, or finds it through $LW_SRC. */

static const char *const cuda12_libs[] = {
    "libcudart.so.12", "libcublas.so.12",    "libcublasLt.so.12", "libcudnn.so.9",
    "libcufft.so.11",  "libcurand.so.10",    "libcusparse.so.12", "libcusolver.so.11",
    "libnccl.so.2",    "libnvToolsExt.so.1", "libnvrtc.so.12"};

static void *open_stand_in(const char *soname) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/lib/%s", build_dir(), soname);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    return h;
}

START_TEST(cuda12_exports) {
    const char *src = getenv("LW_SRC");
    const char *lib = cuda12_libs[_i];
    char path[PATH_MAX], name[256];
    snprintf(path, sizeof path, "%s/tests/stubs/cuda12/%s.syms",
             src != NULL && *src != '\0' ? src : ".", lib);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s (run from the repository's root or set LW_SRC)", path);
    void *h = open_stand_in(lib);
    bool versioned = strcmp(lib, "libnccl.so.2") != 0;
    int n = 0;
    while (fscanf(f, "%255s", name) == 1) {
        void *p = versioned ? dlvsym(h, name, lib) : dlsym(h, name);
        ck_assert_msg(p != NULL, "%s lacks %s%s%s", lib, name, versioned ? "@" : "",
                      versioned ? lib : "");
        n++;
    }
    fclose(f);
    ck_assert_int_gt(n, 0);
    dlclose(h);
}
END_TEST

/* What PyTorch's driver table (c10/cuda/driver_api.cpp) dlsyms in libcuda.so.1:
 * torch.cuda._lazy_init fails on any one missing. */
START_TEST(driver_exports_for_pytorch) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/tests/lib/libcuda.so.1", build_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    const char *names[] = {"cuDeviceGetAttribute",
                           "cuGetErrorString",
                           "cuMemAddressFree",
                           "cuMemAddressReserve",
                           "cuMemCreate",
                           "cuMemExportToShareableHandle",
                           "cuMemImportFromShareableHandle",
                           "cuMemMap",
                           "cuMemRelease",
                           "cuMemSetAccess",
                           "cuMemUnmap",
                           "cuMemsetD32Async",
                           "cuStreamWriteValue32",
                           "cuMemGetAllocationGranularity"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(dlsym(h, names[i]) != NULL, "libcuda.so.1 lacks %s", names[i]);
    typedef int (*err_string_fn)(int, const char **);
    const char *msg = NULL;
    ck_assert_int_eq(((err_string_fn)dlsym(h, "cuGetErrorString"))(2, &msg), 0);
    ck_assert_str_eq(msg, "out of memory");
    dlclose(h);
}
END_TEST

/* The runtime on the driver, and cuBLAS/cuBLASLt, as PyTorch uses them: in a
 * program of their own (tests/programs/dl_cuda12.c), which loads them by
 * soname from LD_LIBRARY_PATH as a real client does. */
START_TEST(cuda12_runtime_behaviour) {
    ck_assert_int_eq(run("dl_cuda12", NULL, "lib", NULL), 0);
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
    tcase_add_test(tc, device_memory_with_less_address_space);
    tcase_add_test(tc, driver_selfcheck_configured);
    tcase_add_test(tc, runtime_shared);
    tcase_add_test(tc, runtime_static);
    tcase_add_test(tc, runtime_shared_legacy_driver);
    tcase_add_test(tc, runtime_static_legacy_driver);
    tcase_add_test(tc, runtime_export_table_failure);
    tcase_add_test(tc, runtime_no_device);
    tcase_add_test(tc, runtime_more_devices);
    tcase_add_test(tc, runtime_without_driver);
    tcase_add_loop_test(tc, cuda12_exports, 0, (int)(sizeof cuda12_libs / sizeof cuda12_libs[0]));
    tcase_add_test(tc, driver_exports_for_pytorch);
    tcase_add_test(tc, cuda12_runtime_behaviour);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    int failed = lw_check_run(stubs_suite());
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
