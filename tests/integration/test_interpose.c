/* SPDX-License-Identifier: Apache-2.0 */
/* Every path by which a program can reach CUDA memory, run under the shim on
 * the CPU stand-ins: each leaks a known number of bytes from a known function,
 * and the report must say exactly that. */
#include "../check_run.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MiB (1024LL * 1024LL)

/* Runs PROG PATH 3 1MiB under the shim and checks the common facts: the
 * report's live bytes and count, the leaking site named after FN, and exact
 * allocation counts (one record per user allocation, never two). */
static void check_leak(const char *prog, const char *path, const char *fn, const char *kind,
                       long long churn_allocs, long long live_allocs) {
    lw_run r;
    const char *args[] = {path, "3", "1048576", NULL};
    lw_run_prog(&r, 1, prog, args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "%s %s: no report; stderr: %s", prog, path, r.err);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), live_allocs * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_count"), live_allocs);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), live_allocs + churn_allocs);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), churn_allocs);
    ck_assert_int_eq(lw_rep_int(&r, "totals.failed_alloc_count"), 0);
    char p[128];
    snprintf(p, sizeof p, "totals.by_kind.%s.live_bytes", kind);
    ck_assert_int_eq(lw_rep_int(&r, p), live_allocs * MiB);
    const lw_json *site = lw_rep_site_named(&r, fn);
    ck_assert_msg(site != NULL, "%s %s: no site names %s", prog, path, fn);
    long long v = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &v), 0);
    ck_assert_int_eq(v, live_allocs * MiB);
    /* The most relevant site comes first. */
    ck_assert_ptr_eq(lw_json_at(lw_json_get(r.report, "sites"), 0), site);
    lw_run_free(&r);
}

START_TEST(runtime_paths) {
    static const struct {
        const char *path, *kind;
    } paths[] = {
        {"malloc", "device"},         {"async", "device"},
        {"async_ptsz", "device"},     {"pool", "device"},
        {"pool_ptsz", "device"},      {"managed", "managed"},
        {"pitch", "device"},          {"host", "pinned_host"},
        {"hostalloc", "pinned_host"}, {"hostregister", "pinned_host"},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        check_leak("rt_paths", paths[i].path, "leak_runtime", paths[i].kind, 5, 3);
}
END_TEST

START_TEST(driver_paths) {
    static const struct {
        const char *path, *kind;
    } paths[] = {
        {"alloc", "device"},          {"pitch", "device"},
        {"managed", "managed"},       {"async", "device"},
        {"async_ptsz", "device"},     {"pool", "device"},
        {"pool_ptsz", "device"},      {"hostalloc", "pinned_host"},
        {"allochost", "pinned_host"}, {"hostregister", "pinned_host"},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        check_leak("drv_paths", paths[i].path, "leak_driver", paths[i].kind, 20, 3);
}
END_TEST

START_TEST(static_runtime_paths) {
    static const struct {
        const char *path, *kind;
    } paths[] = {
        {"malloc", "device"},
        {"async_ptsz", "device"},
        {"managed", "managed"},
        {"host", "pinned_host"},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        check_leak("static_paths", paths[i].path, "leak_static", paths[i].kind, 12, 3);
}
END_TEST

START_TEST(static_runtime_with_driver_lacking_get_proc_address) {
    /* The runtime then finds each driver function with dlsym by versioned
     * name: our dlsym must hand out the wrappers. */
    char lib[4200];
    snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s/tests/lib-legacy", lw_build_dir());
    const char *env[] = {lib, NULL};
    lw_run r;
    const char *args[] = {"async_ptsz", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "static_paths", args, env);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 15);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_static"));
    lw_run_free(&r);
}
END_TEST

START_TEST(driver_found_by_dlsym) {
    lw_run r;
    const char *args[] = {"dlsym", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_dlsym"));
    lw_run_free(&r);
}
END_TEST

START_TEST(driver_found_by_get_proc_address) {
    lw_run r;
    const char *args[] = {"procaddress", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    /* 3 per-thread-stream + 3 plain async + 1 through the legacy lookup (then
     * freed) + 1 through the cuGetProcAddress that cuGetProcAddress returned. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 7 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 8);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_procaddress"));
    lw_run_free(&r);
}
END_TEST

START_TEST(runtime_entry_points) {
    lw_run r;
    const char *args[] = {"entrypoint", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_entrypoint"));
    lw_run_free(&r);
}
END_TEST

START_TEST(virtual_memory_management) {
    lw_run r;
    const char *args[] = {"vmm", "3", "2097152", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.live_bytes"), 6 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 6 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.mapped_bytes"), 6 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_vmm"));
    lw_run_free(&r);

    const char *args2[] = {"vmm", "2", "2097152", NULL};
    lw_run_prog(&r, 1, "drv_paths", args2, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.live_bytes"), 4 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].device"), 1); /* prop.location.id */
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_vmm_direct"));
    lw_run_free(&r);
}
END_TEST

/* Physical memory lives until its last release AND its last unmap, as the
 * driver counts it: the samples' create-map-release idiom keeps it mapped,
 * NCCL's retain-release-unmap-release frees it exactly once. */
START_TEST(vmm_memory_lives_while_mapped) {
    lw_run r;
    const char *args[] = {"vmm_idioms", "4", "2097152", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    /* 4 pages released while mapped, 1 of them unmapped: 3 live. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.live_bytes"), 3 * 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.mapped_bytes"), 3 * 2 * MiB);
    /* 4 + 2 (NCCL) + 1 created; 1 + 2 + 1 ended. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.alloc_count"), 7);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.free_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.unknown_free_count"), 0);
    const lw_json *site = lw_rep_site_named(&r, "leak_vmm_released_mapped");
    ck_assert_ptr_nonnull(site);
    long long live = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &live), 0);
    ck_assert_int_eq(live, 3 * 2 * MiB);
    site = lw_rep_site_named(&r, "nccl_alloc_free");
    if (site) {
        ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &live), 0);
        ck_assert_int_eq(live, 0);
    }
    lw_run_free(&r);
}
END_TEST

/* Another process's memory opened here (tests/programs/exporter.h) is
 * imported: counted in totals.imported, never in this process's totals,
 * kinds, sites or live bytes. The driver refuses this process's own handle
 * and counts a second opening of a handle as one more reference to the same
 * mapping. */
static void check_ipc(const char *prog, const char *own_site, long long opens,
                      const char *const *env) {
    lw_run r;
    const char *args[] = {"ipc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, prog, args, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "%s ipc: no report; stderr: %s", prog, r.err);
    /* Own memory: the 3 leaked allocations, and the one exported and freed. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.device.live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.unknown_free_count"), 0);
    /* 3 opened and more again, as many closes but 2, the own handle refused:
     * 2 open, 2 MiB. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.alloc_count"), opens);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.free_count"), opens - 2);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.failed_alloc_count"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.live_count"), 2);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.live_bytes"), 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.peak_live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.failed_alloc_count"), 0);
    const lw_json *site = lw_rep_site_named(&r, own_site);
    ck_assert_ptr_nonnull(site);
    ck_assert_ptr_eq(lw_json_at(lw_json_get(r.report, "sites"), 0), site);
    site = lw_rep_site_named(&r, "import_ipc");
    long long live = -1;
    if (site) {
        ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &live), 0);
        ck_assert_int_eq(live, 0);
    }
    ck_assert_msg(strstr(r.err, "imported from other processes") != NULL, "%s", r.err);
    lw_run_free(&r);
}

START_TEST(ipc_imports_are_their_own_kind) {
    check_ipc("rt_paths", "leak_runtime", 4, NULL);
    check_ipc("drv_paths", "leak_driver", 5, NULL);
    /* A driver whose lookups hand out its (interposable) exports. */
    char lib[4200];
    snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s/tests/lib-interposable", lw_build_dir());
    const char *env[] = {lib, NULL};
    check_ipc("drv_paths", "leak_driver", 5, env);
    check_ipc("rt_paths", "leak_runtime", 4, env);
}
END_TEST

/* cuMemImportFromShareableHandle: the imported handle, its mappings and its
 * release are imported memory, not this process's physical memory (nor its
 * mapped bytes, nor frees of unknown handles). */
START_TEST(shareable_imports_count_as_imported) {
    lw_run r;
    const char *args[] = {"shareable", "3", "2097152", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    /* Own: one page, mapped. */
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.live_bytes"), 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_kind.physical.alloc_count"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.mapped_bytes"), 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.unknown_free_count"), 0);
    /* Imported: 3 pages, released at once and kept by their mappings; the
     * first unmapped (its import ends). */
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.alloc_count"), 3);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.free_count"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.live_count"), 2);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.live_bytes"), 2 * 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.peak_live_bytes"), 3 * 2 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.imported.mapped_bytes"), 2 * 2 * MiB);
    lw_run_free(&r);
}
END_TEST

START_TEST(devices_are_told_apart) {
    lw_run r;
    const char *args[] = {"device1", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    /* churn on device 1 too (the switch happens in alloc_via) */
    const lw_json *devs = lw_json_path(r.report, "totals.by_device");
    ck_assert_uint_eq(lw_json_len(devs), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].device"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].live_bytes"), 3 * MiB);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].by_kind.device.live_bytes"), 3 * MiB);
    lw_run_free(&r);
}
END_TEST

START_TEST(device_after_cuda13_context_lookup) {
    lw_run r;
    const char *args[] = {"ctxv2", "2", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_uint_eq(lw_json_len(lw_json_path(r.report, "totals.by_device")), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].device"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.by_device[0].live_bytes"), 2 * MiB);
    lw_run_free(&r);
}
END_TEST

START_TEST(frame_cap_is_counted) {
    lw_run r;
    const char *args[] = {"malloc", "2", "4096", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "tracker.truncated_stacks"), 0);
    lw_run_free(&r);

    const char *env[] = {"LEAKWATCH_MAX_FRAMES=4", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, env);
    RUN_OK(&r);
    /* Both sites (churn and leak) are deeper than 4 frames. */
    ck_assert_int_eq(lw_rep_int(&r, "tracker.truncated_stacks"), 2);
    ck_assert_uint_eq(lw_json_len(lw_json_path(r.report, "sites[0].frames")), 4);
    lw_run_free(&r);
}
END_TEST

START_TEST(unknown_free_reaches_the_driver) {
    lw_run with, without;
    const char *args[] = {"unknown_free", NULL};
    lw_run_prog(&without, 0, "rt_paths", args, NULL);
    lw_run_prog(&with, 1, "rt_paths", args, NULL);
    RUN_OK(&with);
    /* The driver's own answer (an error) comes back unchanged. */
    ck_assert_str_eq(with.out, without.out);
    ck_assert_str_ne(with.out, "free result 0\n");
    lw_run_free(&with);
    lw_run_free(&without);
}
END_TEST

START_TEST(failed_allocation_is_recorded) {
    const char *env[] = {"FAKE_CUDA_MEM_BYTES=1073741824", NULL};
    const char *args[] = {"oom", "1", "4294967296", NULL};
    lw_run with, without;
    lw_run_prog(&without, 0, "rt_paths", args, env);
    lw_run_prog(&with, 1, "rt_paths", args, env);
    RUN_OK(&with);
    ck_assert_str_eq(with.out, "oom result 2\n");
    ck_assert_str_eq(with.out, without.out);
    ck_assert_int_eq(lw_rep_int(&with, "totals.failed_alloc_count"), 1);
    ck_assert_int_eq(lw_rep_int(&with, "totals.live_bytes"), 0);
    ck_assert_int_eq(lw_rep_int(&with, "failed_allocations[0].size"), 4294967296LL);
    ck_assert_int_eq(lw_rep_int(&with, "failed_allocations[0].result"), 2);
    const lw_json *site = lw_rep_site_named(&with, "leak_oom");
    ck_assert_ptr_nonnull(site);
    long long failed = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "failed_alloc_count"), &failed), 0);
    ck_assert_int_eq(failed, 1);
    /* The post-mortem (issue 40): written at that moment, said on stderr;
     * without PyTorch the cause comes from the step (none made yet). */
    const char *cause = lw_json_string(lw_json_path(with.report, "oom.cause"));
    ck_assert_msg(cause && !strcmp(cause, "model_and_optimizer"), "oom.cause %s",
                  cause ? cause : "(none)");
    ck_assert_str_eq(lw_json_string(lw_json_path(with.report, "oom.source")), "allocation_failure");
    ck_assert_int_eq(lw_rep_int(&with, "oom.request_bytes"), 4294967296LL);
    ck_assert_msg(strstr(with.err, "leakwatch: out of memory: the model and its optimizer"),
                  "stderr: %s", with.err);
    ck_assert_str_eq(lw_json_string(lw_json_path(with.report, "anatomy.method")), "call_site");
    lw_run_free(&with);
    lw_run_free(&without);

    /* Static runtime: seen at the driver. */
    lw_run_prog(&with, 1, "static_paths", args, env);
    RUN_OK(&with);
    ck_assert_str_eq(with.out, "oom result 2\n");
    ck_assert_int_eq(lw_rep_int(&with, "totals.failed_alloc_count"), 1);
    ck_assert_ptr_nonnull(lw_rep_site_named(&with, "oom_static"));
    lw_run_free(&with);
}
END_TEST

START_TEST(address_reuse) {
    lw_run r;
    const char *args[] = {"reuse", "4", "65536", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, "reused 1\n"); /* the stand-in did hand the address out again */
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 4 * 65536);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_count"), 4);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 5);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 1);
    ck_assert_int_eq(lw_rep_int(&r, "tracker.reused_without_free"), 0);
    lw_run_free(&r);
}
END_TEST

START_TEST(eight_threads) {
    lw_run r;
    const char *args[] = {"threads", "5", "4096", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 8 * 5 * 4096);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_count"), 40);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 8 * (2000 + 5));
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 8 * 2000);
    const lw_json *site = lw_rep_site_named(&r, "leak_thread");
    ck_assert_ptr_nonnull(site);
    lw_run_free(&r);
}
END_TEST

START_TEST(no_cuda_no_trace) {
    /* The same program without the shim gives the thread count to expect (1;
     * an emulator such as qemu-user may add its own threads). */
    lw_run base;
    lw_run_prog(&base, 0, "plain_nocuda", NULL, NULL);
    RUN_OK(&base);
    lw_run r;
    lw_run_prog(&r, 1, "plain_nocuda", NULL, NULL);
    RUN_OK(&r);
    if (!getenv("LW_TEST_EXEC")) ck_assert_str_eq(base.out, "threads 1\n");
    ck_assert_str_eq(r.out, base.out);
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(lw_run_stray_files(&r), 0);
    lw_run_free(&base);
    lw_run_free(&r);
}
END_TEST

START_TEST(rtld_next_keeps_the_callers_identity) {
    lw_run r;
    lw_run_prog(&r, 2, "plain_getuid", NULL, NULL);
    RUN_OK(&r);
    char want[64];
    snprintf(want, sizeof want, "uid %ld\n", (long)getuid());
    ck_assert_str_eq(r.out, want);
    lw_run_free(&r);
}
END_TEST

START_TEST(summary_on_stderr) {
    lw_run r;
    const char *args[] = {"malloc", "2", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.err, "leakwatch: 2 allocations live (2.00 MiB"), "stderr: %s", r.err);
    /* The site the report names, with what it holds (its label has file:line
     * where addr2line could be run, else function and module). */
    const char *label = lw_json_string(lw_json_path(r.report, "answer.where.label"));
    ck_assert_msg(label && strstr(label, "alloc_via"), "answer: %s", label ? label : "none");
    char want[512];
    snprintf(want, sizeof want, "; largest site: %s (2.00 MiB live)", label);
    ck_assert_msg(strstr(r.err, want), "stderr lacks \"%s\": %s", want, r.err);
    ck_assert_msg(strstr(r.err, r.report_path), "stderr: %s", r.err);
    lw_run_free(&r);

    const char *quiet[] = {"LEAKWATCH_QUIET=1", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, quiet);
    RUN_OK(&r);
    ck_assert_str_eq(r.err, "");
    ck_assert_ptr_nonnull(r.report);
    lw_run_free(&r);
}
END_TEST

START_TEST(disabled_passes_through) {
    lw_run r;
    const char *env[] = {"LEAKWATCH_DISABLE=1", NULL};
    const char *args[] = {"malloc", "2", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, env);
    RUN_OK(&r);
    ck_assert_ptr_null(r.report);
    ck_assert_str_eq(r.err, "");
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("interpose");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, runtime_paths);
    tcase_add_test(tc, driver_paths);
    tcase_add_test(tc, static_runtime_paths);
    tcase_add_test(tc, static_runtime_with_driver_lacking_get_proc_address);
    tcase_add_test(tc, driver_found_by_dlsym);
    tcase_add_test(tc, driver_found_by_get_proc_address);
    tcase_add_test(tc, runtime_entry_points);
    tcase_add_test(tc, virtual_memory_management);
    tcase_add_test(tc, devices_are_told_apart);
    tcase_add_test(tc, device_after_cuda13_context_lookup);
    tcase_add_test(tc, frame_cap_is_counted);
    tcase_add_test(tc, unknown_free_reaches_the_driver);
    tcase_add_test(tc, vmm_memory_lives_while_mapped);
    tcase_add_test(tc, ipc_imports_are_their_own_kind);
    tcase_add_test(tc, shareable_imports_count_as_imported);
    tcase_add_test(tc, failed_allocation_is_recorded);
    tcase_add_test(tc, address_reuse);
    tcase_add_test(tc, eight_threads);
    tcase_add_test(tc, no_cuda_no_trace);
    tcase_add_test(tc, rtld_next_keeps_the_callers_identity);
    tcase_add_test(tc, summary_on_stderr);
    tcase_add_test(tc, disabled_passes_through);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
