/* SPDX-License-Identifier: Apache-2.0 */
/* The leakwatch command, end to end: run (status, signals, --fail-on-leak),
 * report (text, json, html; good, truncated and hostile files), the control
 * socket (ps, top, snapshot), the Prometheus file, and the HTML page drawn by
 * a real browser when one is installed. */
#include "../check_run.h"
#include "harness_cli.h"

#include "arch.h"
#include "model.h"
#include "run_decisions.h"
#include "control.h"
#include "options.h"
#include <leakwatch.h>
#include "imports.h"
#include "prometheus.h"
#include "totals.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024LL * 1024LL)

static char xdg[64]; /* private XDG_RUNTIME_DIR: sockets of these tests only */

/* A report as the detector will write it: a leak of about 1 MiB per step
 * over 60 steps, with series, Python frames, and a device of 8 GiB. */
static char *crafted_report(const char *verdict, double slope) {
    size_t cap = 1 << 20;
    char *s = malloc(cap);
    size_t o = 0;
#define P(...) o += (size_t)snprintf(s + o, cap - o, __VA_ARGS__)
    P("{\"tool\":\"leakwatch\",\"version\":\"0.1.0\",\"pid\":4242,\"command\":\"python train.py\","
      "\"host\":\"gpu-node-7\",\"reason\":\"exit\",\"written_at\":1700000000,\"duration_s\":120.5,"
      "\"verdict\":\"%s\",",
      verdict);
    P("\"totals\":{\"alloc_count\":5000,\"free_count\":4900,\"failed_alloc_count\":1,"
      "\"live_bytes\":%lld,\"live_count\":100,\"peak_live_bytes\":%lld,\"unknown_free_count\":0,"
      "\"mapped_bytes\":0,\"by_kind\":{\"device\":{\"alloc_count\":5000,\"free_count\":4900,"
      "\"failed_alloc_count\":1,\"live_bytes\":%lld,\"live_count\":100,\"peak_live_bytes\":%lld}},"
      "\"by_device\":[{\"device\":0,\"alloc_count\":5000,\"free_count\":4900,"
      "\"failed_alloc_count\":1,\"live_bytes\":%lld,\"live_count\":100,\"peak_live_bytes\":%lld,"
      "\"by_kind\":{}}]},",
      1024 * MiB, 1300 * MiB, 1024 * MiB, 1300 * MiB, 1024 * MiB, 1300 * MiB);
    P("\"growth\":{\"bytes_per_step\":%.1f,\"bytes_per_second\":%.1f,\"steps\":60,"
      "\"step_source\":\"marker\",\"p_value\":1e-9,\"slope_ci\":[%.1f,%.1f],\"onset_step\":3,"
      "\"oom_eta_seconds\":5400,\"oom_eta_steps\":90,\"device_free_bytes\":%lld,"
      "\"device_total_bytes\":%lld},",
      slope, slope / 2, slope * 0.9, slope * 1.1, 90 * MiB, 8192 * MiB);
    P("\"series\":{\"x\":[");
    for (int i = 0; i < 60; i++)
        P("%s%d", i ? "," : "", i);
    P("],\"time_s\":[");
    for (int i = 0; i < 60; i++)
        P("%s%.1f", i ? "," : "", i * 2.0);
    P("],\"floor\":[");
    for (int i = 0; i < 60; i++)
        P("%s%lld", i ? "," : "", 960 * MiB + (long long)(slope * i) + (i % 3) * MiB / 4);
    P("],\"peak\":[");
    for (int i = 0; i < 60; i++)
        P("%s%lld", i ? "," : "", 1200 * MiB + (long long)(slope * i) + (i % 5) * 8 * MiB);
    P("]},\"sites_total\":2,\"sites_reported\":2,\"sites\":[");
    P("{\"id\":7,\"live_bytes\":%lld,\"live_count\":60,\"alloc_count\":60,\"alloc_bytes\":%lld,"
      "\"free_count\":0,\"failed_alloc_count\":0,\"leak\":%s,\"bytes_per_step\":%.1f,"
      "\"pooled\":false,\"series\":{\"x\":[0,10,20,30,40,50],\"floor\":[0,10,20,30,40,50]},"
      "\"frames\":[{\"kind\":\"python\",\"function\":\"forward\",\"file\":\"model.py\",\"line\":"
      "42,\"module\":null,\"address\":null,\"offset\":null},{\"kind\":\"python\",\"function\":"
      "\"train_step\",\"file\":\"train.py\",\"line\":17,\"module\":null,\"address\":null,"
      "\"offset\":null},{\"kind\":\"native\",\"function\":\"c10_alloc\",\"file\":null,\"line\":"
      "null,\"module\":\"/x/libc10_cuda.so\",\"address\":\"0x1\",\"offset\":\"0x10\"},"
      "{\"kind\":\"native\",\"function\":\"c10_a\",\"file\":null,\"line\":null,\"module\":"
      "\"/x/libc10_cuda.so\",\"address\":\"0x2\",\"offset\":\"0x20\"},{\"kind\":\"native\","
      "\"function\":\"c10_b\",\"file\":null,\"line\":null,\"module\":\"/x/libc10_cuda.so\","
      "\"address\":\"0x3\",\"offset\":\"0x30\"}]},",
      60 * MiB, 60 * MiB, !strcmp(verdict, "leak") ? "true" : "false", slope);
    P("{\"id\":1,\"live_bytes\":%lld,\"live_count\":40,\"alloc_count\":4940,\"alloc_bytes\":1,"
      "\"free_count\":4900,\"failed_alloc_count\":1,\"leak\":false,\"bytes_per_step\":0,"
      "\"pooled\":false,\"frames\":[{\"kind\":\"native\",\"function\":\"weights_init\","
      "\"file\":\"init.c\",\"line\":9,\"module\":\"/x/app\",\"address\":\"0x4\",\"offset\":"
      "\"0x40\"}]}],",
      964 * MiB);
    P("\"failed_allocations\":[{\"size\":%lld,\"kind\":\"device\",\"device\":0,\"result\":2,"
      "\"step\":59,\"time_s\":118.2,\"site\":1}],\"tracker\":{\"live_records\":100}}\n",
      2048 * MiB);
#undef P
    return s;
}

static void write_crafted(const char *path, const char *verdict) {
    char *s = crafted_report(verdict, (double)MiB);
    lw_write_text(path, s);
    free(s);
}

/* ---- run ---- */

START_TEST(run_records_the_job_and_passes_its_status) {
    lw_run r;
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_paths", lw_build_dir());
    const char *args[] = {"run", "--", prog, "malloc", "3", "1048576", NULL};
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 3 * MiB);
    ck_assert_ptr_nonnull(lw_rep_site_named(&r, "leak_runtime"));
    /* A job that never called CUDA: one line says so (issue 42, item 6: run
     * said nothing after "watching PID"); a job that did gets none. */
    ck_assert_msg(!strstr(r.err, "nothing seen"), "%s", r.err);
    lw_run_free(&r);

    const char *exit7[] = {"run", "--", "/bin/sh", "-c", "exit 7", NULL};
    lw_cli_run(&r, exit7, NULL);
    ck_assert_int_eq(r.exit_code, 7);
    ck_assert_msg(strstr(r.err, "leakwatch: nothing seen: /bin/sh made no CUDA allocation"), "%s",
                  r.err);
    /* It failed: perhaps on CUDA itself, in a call leakwatch does not watch
     * (cudaSetDevice with no driver: error 35): the way to try it is said. */
    ck_assert_msg(strstr(r.err, "no GPU or no driver here: error 100 or 35") &&
                      strstr(r.err, "leakwatch run --cuda-stand-ins -- CMD"),
                  "%s", r.err);
    lw_run_free(&r);

    const char *missing[] = {"run", "--", "/nonexistent/program", NULL};
    lw_cli_run(&r, missing, NULL);
    ck_assert_int_eq(r.exit_code, 127);
    ck_assert_ptr_nonnull(strstr(r.err, "No such file"));
    lw_run_free(&r);

    const char *killed[] = {"run", "--", "/bin/sh", "-c", "kill -KILL $$", NULL};
    lw_cli_run(&r, killed, NULL);
    ck_assert_int_eq(r.exit_code, 128 + SIGKILL);
    lw_run_free(&r);
}
END_TEST

START_TEST(run_sets_the_preload_and_settings) {
    lw_run r;
    const char *args[] = {"run",
                          "--max-sites",
                          "100",
                          "--mode",
                          "segments",
                          "-s",
                          "report_sites=5",
                          "--",
                          "/bin/sh",
                          "-c",
                          "echo \"$LD_PRELOAD|$LEAKWATCH_MAX_SITES|$LEAKWATCH_TORCH_MODE|"
                          "$LEAKWATCH_REPORT_SITES\"",
                          NULL};
    /* Under the sanitizer build its runtime comes first; ours goes after it,
     * before /other/libx.so. */
    char pre[PATH_MAX + 64];
    const char *rt = getenv("LW_ASAN_RT");
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s%s/other/libx.so", rt && *rt ? rt : "",
             rt && *rt ? " " : "");
    const char *env[] = {pre, NULL};
    lw_cli_run(&r, args, env);
    RUN_OK(&r);
    char lib[PATH_MAX + 32];
    snprintf(lib, sizeof lib, "%s/libleakwatch.so /other/libx.so|100|segments|5", lw_build_dir());
    ck_assert_msg(strstr(r.out, lib) != NULL, "got %s, want ...%s", r.out, lib);
    lw_run_free(&r);
}
END_TEST

/* --cuda-stand-ins: the build folder's stand-ins go first on the job's
 * LD_LIBRARY_PATH, in front of the user's; without it the path is untouched. */
START_TEST(run_cuda_stand_ins) {
    lw_run r;
    const char *args[] = {
        "run", "--cuda-stand-ins", "--", "/bin/sh", "-c", "echo \"[$LD_LIBRARY_PATH]\"", NULL};
    const char *env[] = {"LD_LIBRARY_PATH=/other/lib", NULL};
    lw_cli_run(&r, args, env);
    RUN_OK(&r);
    char dir[PATH_MAX], rel[PATH_MAX + 16], want[PATH_MAX + 32];
    snprintf(rel, sizeof rel, "%s/tests/lib", lw_build_dir());
    ck_assert_ptr_nonnull(realpath(rel, dir));
    snprintf(want, sizeof want, "[%s:/other/lib]", dir);
    ck_assert_msg(strstr(r.out, want) != NULL, "got %s, want %s", r.out, want);
    lw_run_free(&r);

    const char *plain[] = {"run", "--", "/bin/sh", "-c", "echo \"[$LD_LIBRARY_PATH]\"", NULL};
    lw_cli_run(&r, plain, env);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.out, "[/other/lib]") != NULL, "got %s", r.out);
    lw_run_free(&r);

    char *p = lw_run_library_path("/a", NULL);
    ck_assert_str_eq(p, "/a");
    free(p);
    p = lw_run_library_path("/a", "");
    ck_assert_str_eq(p, "/a");
    free(p);
    p = lw_run_library_path("/a", "/b:/c");
    ck_assert_str_eq(p, "/a:/b:/c");
    free(p);
}
END_TEST

/* --version names the library run preloads; --library prints it alone;
 * help env lists every variable of the library's table. */
START_TEST(version_library_and_help_env) {
    lw_run r;
    const char *version[] = {"--version", NULL};
    lw_cli_run(&r, version, NULL);
    RUN_OK(&r);
    char lib[PATH_MAX], rel[PATH_MAX + 32], want[PATH_MAX + 64];
    snprintf(rel, sizeof rel, "%s/libleakwatch.so", lw_build_dir());
    ck_assert_ptr_nonnull(realpath(rel, lib));
    snprintf(want, sizeof want, "leakwatch %s\nlibrary: %s\n", LEAKWATCH_VERSION, lib);
    ck_assert_str_eq(r.out, want);
    lw_run_free(&r);

    const char *library[] = {"--library", NULL};
    lw_cli_run(&r, library, NULL);
    RUN_OK(&r);
    snprintf(want, sizeof want, "%s\n", lib);
    ck_assert_str_eq(r.out, want);
    lw_run_free(&r);

    const char *env[] = {"help", "env", NULL};
    lw_cli_run(&r, env, NULL);
    RUN_OK(&r);
    size_t n = 0;
    const lw_option_def *t = lw_options_table(&n);
    for (size_t i = 0; i < n; i++) {
        snprintf(want, sizeof want, "\n  %s (default ", t[i].name);
        ck_assert_msg(strstr(r.out, want) != NULL, "%s missing from: %s", t[i].name, r.out);
    }
    lw_run_free(&r);

    const char *bad[] = {"help", "nosuch", NULL};
    lw_cli_run(&r, bad, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "unknown command 'nosuch'"));
    lw_run_free(&r);
}
END_TEST

START_TEST(run_rejects_bad_values_with_one_line) {
    static const char *const bad[][4] = {
        {"--interval", "abc"},   {"--interval", "5"},  {"--mode", "bogus"}, {"--max-sites", "3"},
        {"-s", "nosuchthing=1"}, {"-s", "max_frames"}, {"--report", ""},    {"--bogus", "1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lw_run r;
        const char *args[] = {"run", bad[i][0], bad[i][1], "--", "/bin/true", NULL};
        lw_cli_run(&r, args, NULL);
        ck_assert_msg(r.exit_code == 125, "%s %s: exit %d", bad[i][0], bad[i][1], r.exit_code);
        char *nl = strchr(r.err, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "%s: not one line: %s", bad[i][0], r.err);
        ck_assert_ptr_nonnull(strstr(r.err, "leakwatch: "));
        lw_run_free(&r);
    }
}
END_TEST

/* A copy of src with the bytes at off replaced (an ELF header field). */
static void patched_copy(const char *src, const char *dst, long off, const void *bytes, size_t n) {
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, got, out), got);
    fclose(in);
    ck_assert_int_eq(fseek(out, off, SEEK_SET), 0);
    ck_assert_uint_eq(fwrite(bytes, 1, n, out), n);
    ck_assert_int_eq(fclose(out), 0);
}

/* leakwatch run --library LIB -- a job that leaves a mark: exit 125, one line
 * on stderr that names LIB and contains why, and the job never started. */
static void expect_refused(const char *dir, const char *lib, const char *why) {
    char mark[PATH_MAX + 16], cmd[PATH_MAX + 48];
    snprintf(mark, sizeof mark, "%s/job-ran", dir);
    unlink(mark);
    snprintf(cmd, sizeof cmd, "echo ran > %s", mark);
    const char *args[] = {"run", "--library", lib, "--", "/bin/sh", "-c", cmd, NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 125, "%s: exit %d\nstderr: %s", lib, r.exit_code, r.err);
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "%s: not one line: %s", lib, r.err);
    ck_assert_msg(!strncmp(r.err, "leakwatch: cannot preload ", 26) && strstr(r.err, lib) &&
                      strstr(r.err, why),
                  "%s: stderr lacks \"%s\": %s", lib, why, r.err);
    ck_assert_msg(access(mark, F_OK) != 0, "%s: the job ran", lib);
    lw_run_free(&r);
}

/* The library run preloads cannot be loaded: said in one line naming the
 * problem and the fix, before the job starts (the loader would otherwise run
 * it unwatched, or stop it with exit 127 as if it were not found). */
START_TEST(run_says_when_the_library_cannot_be_loaded) {
    char dir[PATH_MAX], lib[PATH_MAX + 32], real[PATH_MAX], rel[PATH_MAX + 32];
    lw_temp_dir(dir, sizeof dir);
    snprintf(rel, sizeof rel, "%s/libleakwatch.so", lw_build_dir());
    ck_assert_ptr_nonnull(realpath(rel, real));

    snprintf(lib, sizeof lib, "%s/text.so", dir);
    lw_write_text(lib, "not a library\n");
    expect_refused(dir, lib, "not an ELF file");

    /* Another architecture's build (the header's e_machine), a 32-bit one. */
    snprintf(lib, sizeof lib, "%s/other-arch.so", dir);
    uint16_t other = LW_ARCH_ELF_MACHINE == 62 ? 183 : 62;
    patched_copy(real, lib, 18, &other, sizeof other);
    expect_refused(dir, lib, other == 183 ? "built for AArch64" : "built for x86-64");
    snprintf(lib, sizeof lib, "%s/32-bit.so", dir);
    unsigned char cls = 1; /* ELFCLASS32 */
    patched_copy(real, lib, 4, &cls, 1);
    expect_refused(dir, lib, "32-bit");

    /* A dependency the loader cannot find (libunwind on a slim image, say). */
    snprintf(rel, sizeof rel, "%s/tests/lib-broken/libleakwatch.so", lw_build_dir());
    ck_assert_ptr_nonnull(realpath(rel, lib));
    expect_refused(dir, lib, "libleakwatch-missing-dep.so: cannot open shared object file");

    /* An object the loader ignores in LD_PRELOAD although its header passes:
     * a position-independent executable. */
    if (realpath("/bin/true", lib) && lw_run_check_library(lib, rel, sizeof rel) == 0)
        expect_refused(dir, lib, "cannot dynamically load position-independent executable");

    /* The library itself: the job runs. */
    char mark[PATH_MAX + 16], cmd[PATH_MAX + 48];
    snprintf(mark, sizeof mark, "%s/job-ran", dir);
    snprintf(cmd, sizeof cmd, "echo ran > %s", mark);
    const char *args[] = {"run", "--library", real, "--", "/bin/sh", "-c", cmd, NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    ck_assert_ptr_null(strstr(r.err, "cannot preload"));
    ck_assert_int_eq(access(mark, F_OK), 0);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(preload_keeps_sanitizer_runtimes_first) {
    char *p =
        lw_run_preload("/a/libleakwatch.so", "/usr/lib/libasan.so.8:/b/x.so /a/libleakwatch.so");
    ck_assert_str_eq(p, "/usr/lib/libasan.so.8 /a/libleakwatch.so /b/x.so");
    free(p);
    p = lw_run_preload("/a/libleakwatch.so", NULL);
    ck_assert_str_eq(p, "/a/libleakwatch.so");
    free(p);
    ck_assert_int_eq(lw_run_exit_code(0x0700), 7);
    ck_assert_int_eq(lw_run_exit_code(SIGTERM), 128 + SIGTERM);
    ck_assert_str_eq(lw_run_setting_name("max-sites"), "LEAKWATCH_MAX_SITES");
    ck_assert_ptr_null(lw_run_setting_name("nope"));
}
END_TEST

START_TEST(fail_on_leak_decision) {
    static const struct {
        const char *verdict;
        int leak;
    } cases[] = {{"leak", 1}, {"no_leak", 0}, {"inconclusive", 0}, {"maybe", 0}};
    for (size_t i = 0; i < 4; i++) {
        char *s = crafted_report(cases[i].verdict, (double)MiB);
        lw_model m;
        char err[512];
        ck_assert_int_eq(lw_model_load_text(&m, "crafted", s, strlen(s), err, sizeof err), 0);
        ck_assert_int_eq(lw_run_decide(&m), cases[i].leak);
        lw_model_free(&m);
        free(s);
    }
}
END_TEST

START_TEST(fail_on_leak_end_to_end) {
    /* A job that "writes" a leak report: the whole path from the job's exit
     * to reading the report and choosing the status. */
    char dir[64], src[128], dst[128], script[512];
    lw_temp_dir(dir, sizeof dir);
    snprintf(src, sizeof src, "%s/leak.json", dir);
    snprintf(dst, sizeof dst, "%s/out.json", dir);
    write_crafted(src, "leak");
    snprintf(script, sizeof script, "cp %s \"$LEAKWATCH_REPORT\"", src);
    lw_run r;
    const char *args[] = {"run", "--fail-on-leak", "--report", dst, "--", "/bin/sh",
                          "-c",  script,           NULL};
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    /* The job's own failure wins over the leak. */
    snprintf(script, sizeof script, "cp %s \"$LEAKWATCH_REPORT\"; exit 9", src);
    lw_cli_run(&r, args, NULL);
    ck_assert_int_eq(r.exit_code, 9);
    lw_run_free(&r);
    /* A real job too short to decide (inconclusive) does not pass the gate
     * (issue 42, item 5: it exited 0): status 5, unless the user accepts it;
     * the reason is given. */
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_paths", lw_build_dir());
    const char *real[] = {"run", "--fail-on-leak", "--", prog, "malloc", "3", "1048576", NULL};
    lw_cli_run(&r, real, NULL);
    ck_assert_msg(r.exit_code == 5, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "verdict inconclusive: ") && strstr(r.err, "; to decide: "), "%s",
                  r.err);
    ck_assert_msg(strstr(r.err, "--allow-inconclusive") != NULL, "%s", r.err);
    lw_run_free(&r);
    const char *allowed[] = {
        "run", "--fail-on-leak", "--allow-inconclusive", "--", prog, "malloc", "3", "1048576",
        NULL};
    lw_cli_run(&r, allowed, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "verdict inconclusive") != NULL, "%s", r.err);
    lw_run_free(&r);
    /* The same for leakwatch report: inconclusive fails the gate with 5. */
    write_crafted(src, "inconclusive");
    const char *rep[] = {"report", "--fail-on-leak", src, NULL};
    lw_cli_run(&r, rep, NULL);
    ck_assert_msg(r.exit_code == 5, "exit %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    const char *rep_ok[] = {"report", "--fail-on-leak", "--allow-inconclusive", src, NULL};
    lw_cli_run(&r, rep_ok, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

/* The CI gate without --report (issue 42, item 5): the reports go next to
 * the job (the folder it was started in), never only into a temporary
 * folder, and none is left under $TMPDIR; under --quiet the failing line
 * names the place to look; a report left there by an earlier run is not
 * read as this job's (run twice: the leak, then a clean job in the same
 * folder passes). */
START_TEST(fail_on_leak_reports_next_to_the_job) {
    char dir[64], tmp[64], src[128], tmpdir[128], script[PATH_MAX * 2 + 512], asan[PATH_MAX + 16];
    lw_temp_dir(dir, sizeof dir);
    lw_temp_dir(tmp, sizeof tmp);
    snprintf(src, sizeof src, "%s/leak.src", dir);
    write_crafted(src, "leak");
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
    const char *rt = getenv("LW_ASAN_RT");
    snprintf(asan, sizeof asan, "LD_PRELOAD=%s", rt ? rt : "");
    const char *env[] = {asan, NULL};
    /* The job copies the crafted report to where it was told, as the
     * library would write it. */
    snprintf(script, sizeof script,
             "cd %s && cp %s \"$(dirname \"$LEAKWATCH_REPORT\")/leakwatch-$$.json\"", dir, src);
    const char *args[] = {
        "-u", "LEAKWATCH_REPORT", tmpdir, lw_cli_exe(), "run", "-q", "--fail-on-leak",
        "--", "/bin/sh",          "-c",   script,       NULL};
    lw_run r;
    lw_run_exe(&r, 0, "/usr/bin/env", args, env);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "verdict leak in model.py:42 in forward"), "%s", r.err);
    /* In the job's folder (lw_run_exe starts it in r.dir), not under $TMPDIR. */
    ck_assert_int_eq(lw_files_matching(r.dir, "leakwatch-", ".json"), 1);
    ck_assert_int_eq(lw_files_matching(tmp, "leakwatch", ""), 0);
    /* Again in the same folder, a job that writes nothing: the earlier
     * run's report stays, and is not this job's verdict. */
    char job_dir[PATH_MAX];
    snprintf(job_dir, sizeof job_dir, "%s", r.dir);
    snprintf(script, sizeof script,
             "cd %s && exec %s -u LEAKWATCH_REPORT %s %s run -q --fail-on-leak -- /bin/true",
             job_dir, "/usr/bin/env", tmpdir, lw_cli_exe());
    lw_run r2;
    const char *again[] = {"-c", script, NULL};
    lw_run_exe(&r2, 0, "/bin/sh", again, env);
    ck_assert_msg(r2.exit_code == 0, "exit %d: %s", r2.exit_code, r2.err);
    ck_assert_int_eq(lw_files_matching(tmp, "leakwatch", ""), 0);
    lw_run_free(&r2);
    lw_run_free(&r);
    lw_remove_dir(tmp);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(fail_on_leak_reads_every_rank) {
    /* --report with %r: each process of a launched job writes its own rank's
     * report; a leak in any of them fails the run, as in the private folder
     * (before, run looked for a file named literally leak-%r.json and passed). */
    char dir[64], ok[128], leak[128], tpl[128], script[600];
    lw_temp_dir(dir, sizeof dir);
    snprintf(ok, sizeof ok, "%s/ok.json", dir);
    snprintf(leak, sizeof leak, "%s/leak.json", dir);
    snprintf(tpl, sizeof tpl, "%s/rep-%%r.json", dir);
    write_crafted(ok, "no_leak");
    write_crafted(leak, "leak");
    snprintf(script, sizeof script, "cp %s %s/rep-0.json && cp %s %s/rep-1.json", ok, dir, leak,
             dir);
    lw_run r;
    const char *args[] = {"run", "--fail-on-leak", "--report", tpl, "--", "/bin/sh",
                          "-c",  script,           NULL};
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "rep-1.json: verdict leak"), "%s", r.err);
    lw_run_free(&r);
    /* Every rank clean: the run passes, and each report was read. */
    snprintf(script, sizeof script, "cp %s %s/rep-0.json && cp %s %s/rep-1.json", ok, dir, ok, dir);
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "rep-0.json: verdict no_leak") &&
                      strstr(r.err, "rep-1.json: verdict no_leak"),
                  "%s", r.err);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(run_forwards_signals) {
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer defers asynchronous signals in an intercepted blocking
     * call, so the sleeping job may never see one within the wait: a property
     * of the sanitizer, not of `leakwatch run`. */
    printf("test_cli: run_forwards_signals skipped under ThreadSanitizer\n");
    return;
#endif
    char dir[64], out[128], prog[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_sleeper", lw_build_dir());
    static const int sigs[] = {SIGTERM, SIGUSR1, SIGHUP};
    for (size_t i = 0; i < 3; i++) {
        char rep[160];
        snprintf(out, sizeof out, "%s/out%zu", dir, i);
        snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s/r.json", dir);
        const char *env[] = {rep, NULL};
        const char *args[] = {"run", "--", prog, "2", "4096", "sleep", NULL};
        pid_t pid = lw_spawn(lw_cli_exe(), args, env, 0, out);
        ck_assert_msg(lw_wait_for_text(out, "ready", 20000), "the job never started: %s",
                      lw_slurp_file(out));
        kill(pid, sigs[i]);
        int st = 0;
        if (lw_wait_pid(pid, 20000, &st) != 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            ck_abort_msg("leakwatch run did not end after signal %d", sigs[i]);
        }
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sigs[i], "signal %d: status 0x%x",
                      sigs[i], st);
    }
    lw_remove_dir(dir);
}
END_TEST

/* ---- report ---- */

START_TEST(report_text_json_html) {
    char dir[64], path[128], html[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/leak.json", dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    write_crafted(path, "leak");
    lw_run r;
    const char *text[] = {"report", path, NULL};
    lw_cli_run(&r, text, NULL);
    RUN_OK(&r);
    static const char *want[] = {"LEAK",
                                 "+1.00 MiB/step",
                                 "95% CI",
                                 "OOM",
                                 "1 h 30 min",
                                 "model.py:42 in forward",
                                 "2 frames in libc10_cuda.so",
                                 "Failed allocations",
                                 "2.00 GiB"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(r.out, want[i]) != NULL, "no '%s' in:\n%s", want[i], r.out);
    /* The answer first; then a traceback: outermost first, down to the
     * allocation. */
    ck_assert_msg(!strncmp(r.out, "LEAK in model.py:42 in forward", 30), "%s", r.out);
    const char *stack = strstr(r.out, "Top call sites");
    ck_assert_ptr_nonnull(stack);
    ck_assert(strstr(stack, "py  train.py:17") && strstr(stack, "py  model.py:42"));
    ck_assert(strstr(stack, "py  train.py:17") < strstr(stack, "py  model.py:42"));
    lw_run_free(&r);

    const char *json[] = {"report", "--format", "json", path, NULL};
    lw_cli_run(&r, json, NULL);
    RUN_OK(&r);
    char err[256];
    lw_json *j = lw_json_parse(r.out, strlen(r.out), NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "json output does not parse: %s", err);
    long long v = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_path(j, "totals.live_bytes"), &v), 0);
    ck_assert_int_eq(v, 1024 * MiB);
    ck_assert_str_eq(lw_json_string(lw_json_get(j, "verdict")), "leak");
    ck_assert_int_eq(lw_json_len(lw_json_path(j, "series.floor")), 60);
    lw_json_free(j);
    lw_run_free(&r);

    const char *h[] = {"report", "--format", "html", "-o", html, path, NULL};
    lw_cli_run(&r, h, NULL);
    RUN_OK(&r);
    char *page = lw_slurp_file(html);
    /* The leaking site's own series, on its scale (issue 42). */
    ck_assert_ptr_nonnull(strstr(page, "<polyline id=\"site-live\""));
    ck_assert_ptr_nonnull(strstr(page, "id=\"trend\""));
    ck_assert_ptr_nonnull(strstr(page, "id=\"oom\""));
    ck_assert_ptr_null(strstr(page, "<script"));
    ck_assert_ptr_null(strstr(page, "http://e")); /* nothing fetched */
    free(page);
    lw_run_free(&r);

    /* Several ranks: one view, and a summary of which leak. */
    char ok[128];
    snprintf(ok, sizeof ok, "%s/ok.json", dir);
    write_crafted(ok, "no_leak");
    const char *two[] = {"report", path, ok, NULL};
    lw_cli_run(&r, two, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.out, "1 of 2 leaks") != NULL, "%s", r.out);
    lw_run_free(&r);
    const char *fail[] = {"report", "--fail-on-leak", path, ok, NULL};
    lw_cli_run(&r, fail, NULL);
    ck_assert_int_eq(r.exit_code, 3);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(report_of_a_real_run) {
    lw_run r;
    const char *args[] = {"malloc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    lw_run r2;
    const char *rep[] = {"report", r.report_path, NULL};
    lw_cli_run(&r2, rep, NULL);
    RUN_OK(&r2);
    ck_assert_msg(strstr(r2.out, "leak_runtime") && strstr(r2.out, "3.00 MiB"), "%s", r2.out);
    lw_run_free(&r2);
    lw_run_free(&r);
}
END_TEST

/* Imports (other processes' memory opened here) have their own row in every
 * format, outside the totals; a report without them (older ones) has none. */
START_TEST(report_shows_imports) {
    lw_run r;
    const char *args[] = {"ipc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    lw_run r2;
    const char *text[] = {"report", r.report_path, NULL};
    lw_cli_run(&r2, text, NULL);
    RUN_OK(&r2);
    const char *row = strstr(r2.out, " imported ");
    ck_assert_msg(row && strstr(row, "2.00 MiB") && strstr(row, "not in the totals above"), "%s",
                  r2.out);
    lw_run_free(&r2);
    const char *json[] = {"report", "--format", "json", r.report_path, NULL};
    lw_cli_run(&r2, json, NULL);
    RUN_OK(&r2);
    lw_json *j = lw_json_parse(r2.out, strlen(r2.out), NULL, NULL, 0);
    ck_assert_ptr_nonnull(j);
    long long v = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_path(j, "totals.imported.live_bytes"), &v), 0);
    ck_assert_int_eq(v, 2 * MiB);
    ck_assert_int_eq(lw_json_int64(lw_json_path(j, "totals.imported.live_count"), &v), 0);
    ck_assert_int_eq(v, 2);
    ck_assert_int_eq(lw_json_int64(lw_json_path(j, "totals.live_bytes"), &v), 0);
    ck_assert_int_eq(v, 3 * MiB);
    lw_json_free(j);
    lw_run_free(&r2);
    char dir[64], html[128], old[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    const char *h[] = {"report", "--format", "html", "-o", html, r.report_path, NULL};
    lw_cli_run(&r2, h, NULL);
    RUN_OK(&r2);
    char *page = lw_slurp_file(html);
    ck_assert_ptr_nonnull(page);
    ck_assert_ptr_nonnull(strstr(page, "<td>imported (other processes&#39; memory"));
    free(page);
    lw_run_free(&r2);
    lw_run_free(&r);
    snprintf(old, sizeof old, "%s/old.json", dir);
    write_crafted(old, "leak");
    const char *o[] = {"report", old, NULL};
    lw_cli_run(&r2, o, NULL);
    RUN_OK(&r2);
    ck_assert_msg(strstr(r2.out, "imported") == NULL, "%s", r2.out);
    lw_run_free(&r2);
    lw_remove_dir(dir);
}
END_TEST

/* One line on stderr, naming the file, status 1, nothing on stdout. */
static void expect_file_error(const char *path, const char *words) {
    lw_run r;
    const char *args[] = {"report", path, NULL};
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 1, "%s: exit %d signal %d", path, r.exit_code, r.signal);
    ck_assert_msg(strstr(r.err, words) != NULL, "%s: no '%s' in: %s", path, words, r.err);
    ck_assert_msg(strstr(r.err, path) != NULL, "%s: file not named: %s", path, r.err);
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "not one line: %s", r.err);
    ck_assert_str_eq(r.out, "");
    lw_run_free(&r);
}

START_TEST(report_errors_are_one_clear_line) {
    char dir[64], p[160];
    lw_temp_dir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/missing.json", dir);
    expect_file_error(p, "No such file");
    char *full = crafted_report("leak", (double)MiB);
    full[strlen(full) / 2] = '\0';
    snprintf(p, sizeof p, "%s/truncated.json", dir);
    lw_write_text(p, full);
    free(full);
    expect_file_error(p, "truncated");
    snprintf(p, sizeof p, "%s/empty.json", dir);
    lw_write_text(p, "");
    expect_file_error(p, "empty");
    snprintf(p, sizeof p, "%s/other.json", dir);
    lw_write_text(p, "{\"tool\":\"nvidia-smi\"}");
    expect_file_error(p, "not a leakwatch report");
    snprintf(p, sizeof p, "%s/array.json", dir);
    lw_write_text(p, "[1,2,3]");
    expect_file_error(p, "not a leakwatch report");
    snprintf(p, sizeof p, "%s/garbage.json", dir);
    lw_write_text(p, "\x7f"
                     "ELF\x01\x02");
    expect_file_error(p, "not valid JSON");
    /* Deep nesting: the reader's depth limit, not a crash. */
    size_t n = 200000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\0';
    snprintf(p, sizeof p, "%s/deep.json", dir);
    lw_write_text(p, deep);
    free(deep);
    expect_file_error(p, "not valid JSON");
    /* Numbers beyond a double or a 64-bit integer: refused by the parser, with the place. */
    snprintf(p, sizeof p, "%s/huge.json", dir);
    lw_write_text(p, "{\"tool\":\"leakwatch\",\"totals\":{\"live_bytes\":1e999}}");
    expect_file_error(p, "column");
    lw_write_text(
        p, "{\"tool\":\"leakwatch\",\"totals\":{\"live_count\":123456789012345678901234567890}}");
    expect_file_error(p, "column");

    lw_run r;
    const char *bad_opt[] = {"report", "--format", "pdf", p, NULL};
    lw_cli_run(&r, bad_opt, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(report_survives_hostile_fields) {
    static const char *const docs[] = {
        "{\"tool\":\"leakwatch\"}",
        "{\"tool\":\"leakwatch\",\"verdict\":7,\"totals\":\"lots\",\"sites\":{\"a\":1},"
        "\"growth\":[],\"series\":{\"x\":[1,2],\"floor\":\"no\"}}",
        "{\"tool\":\"leakwatch\",\"verdict\":\"leak\",\"totals\":{\"live_bytes\":1.5e308,"
        "\"peak_live_bytes\":-1e308,\"live_count\":-9223372036854775808},"
        "\"growth\":{\"bytes_per_step\":1e308,\"slope_ci\":[1,\"x\"],\"oom_eta_seconds\":-5,"
        "\"oom_eta_steps\":1e300},\"series\":{\"x\":[0,1,1e308,null],\"floor\":[1,2,3,4],"
        "\"peak\":[true]}}",
        "{\"tool\":\"leakwatch\",\"sites\":[1,\"s\",null,{\"id\":\"x\",\"frames\":[3,{\"kind\":"
        "\"python\",\"function\":\"\\u001b[31mred\\u0007\",\"file\":\"a\\u0000b\",\"line\":"
        "\"1\"}],\"series\":{\"x\":[1],\"floor\":[1,2]}}],\"failed_allocations\":[{}],"
        "\"totals\":{\"by_device\":[{\"device\":1e20,\"by_kind\":{\"device\":[]}}]}}",
    };
    char dir[64], p[160], html[160];
    lw_temp_dir(dir, sizeof dir);
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        snprintf(p, sizeof p, "%s/h%zu.json", dir, i);
        snprintf(html, sizeof html, "%s/h%zu.html", dir, i);
        lw_write_text(p, docs[i]);
        static const char *const formats[] = {"text", "json", "html"};
        for (int f = 0; f < 3; f++) {
            lw_run r;
            const char *args[] = {"report", "--format", formats[f], "-o", html, p, NULL};
            lw_cli_run(&r, args, NULL);
            ck_assert_msg(r.exit_code == 0, "doc %zu %s: exit %d signal %d: %s", i, formats[f],
                          r.exit_code, r.signal, r.err);
            char *out = lw_slurp_file(html);
            ck_assert_msg(!strchr(out, '\x1b') && !strchr(out, '\a'),
                          "doc %zu %s: control characters reach the output", i, formats[f]);
            if (f == 1) {
                char err[256];
                lw_json *j = lw_json_parse(out, strlen(out), NULL, err, sizeof err);
                ck_assert_msg(j != NULL, "doc %zu: json output does not parse: %s", i, err);
                lw_json_free(j);
            }
            ck_assert_ptr_null(strstr(out, "nan"));
            ck_assert_ptr_null(strstr(out, "inf "));
            free(out);
            lw_run_free(&r);
        }
    }
    lw_remove_dir(dir);
}
END_TEST

/* ---- live watching ---- */

/* A process that serves the control socket (this test binary, forked: the
 * same code the shim runs), with some bytes counted. */
static pid_t start_server(int *ready_fd) {
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        lw_totals_alloc(0, LW_KIND_DEVICE, 3 * MiB);
        lw_totals_alloc(1, LW_KIND_MANAGED, 1 * MiB);
        lw_control_start();
        lw_control_start(); /* idempotent */
        if (write(p[1], "r", 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    *ready_fd = p[0];
    return pid;
}

static void sock_path(pid_t pid, char *out, size_t n) {
    snprintf(out, n, "%s/leakwatch/%ld.sock", xdg, (long)pid);
}

/* One raw request, the answer as text. */
static char *raw_request(pid_t pid, const char *req) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    sock_path(pid, a.sun_path, sizeof a.sun_path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    shutdown(fd, SHUT_WR);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fd, buf + n, cap - n - 1)) > 0)
        if ((n += (size_t)got) + 1 >= cap) {
            char *nb = realloc(buf, cap *= 2);
            ck_assert_ptr_nonnull(nb);
            buf = nb;
        }
    buf[n] = '\0';
    close(fd);
    return buf;
}

START_TEST(control_socket_serves_top_snapshot_ps) {
    int rfd;
    pid_t pid = start_server(&rfd);
    char path[300], dir[64], pidtxt[32];
    sock_path(pid, path, sizeof path);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    char d[300];
    snprintf(d, sizeof d, "%s/leakwatch", xdg);
    ck_assert_int_eq(stat(d, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)pid);

    lw_run r;
    const char *top[] = {"top", "--once", pidtxt, NULL};
    lw_cli_run(&r, top, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.out, "leakwatch top") && strstr(r.out, "4.00 MiB") &&
                      strstr(r.out, "gpu 0") && strstr(r.out, "gpu 1"),
                  "%s", r.out);
    lw_run_free(&r);
    const char *top3[] = {"top", "-n", "2", "-d", "0.1", pidtxt, NULL};
    lw_cli_run(&r, top3, NULL);
    RUN_OK(&r);
    ck_assert_ptr_nonnull(strstr(strstr(r.out, "leakwatch top") + 1, "leakwatch top"));
    lw_run_free(&r);

    lw_temp_dir(dir, sizeof dir);
    char snap[128];
    snprintf(snap, sizeof snap, "%s/snap.json", dir);
    const char *sn[] = {"snapshot", pidtxt, "-o", snap, NULL};
    lw_cli_run(&r, sn, NULL);
    RUN_OK(&r);
    char err[256];
    lw_json *j = lw_json_parse_file(snap, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_str_eq(lw_json_string(lw_json_get(j, "tool")), "leakwatch");
    long long live = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_path(j, "totals.live_bytes"), &live), 0);
    ck_assert_int_eq(live, 4 * MiB);
    lw_json_free(j);
    lw_run_free(&r);

    const char *ps[] = {"ps", NULL};
    lw_cli_run(&r, ps, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.out, pidtxt) != NULL, "%s", r.out);
    lw_run_free(&r);

    /* The protocol itself. */
    char *a = raw_request(pid, "ping\n");
    ck_assert_msg(!strncmp(a, "ok leakwatch ", 13), "%s", a);
    free(a);
    a = raw_request(pid, "bogus\n");
    ck_assert_msg(!strncmp(a, "error ", 6), "%s", a);
    free(a);
    a = raw_request(pid, "snapshot relative.json\n");
    ck_assert_msg(!strncmp(a, "error ", 6), "%s", a);
    free(a);
    char req[200], want[200];
    snprintf(req, sizeof req, "snapshot %s/remote.json\n", dir);
    snprintf(want, sizeof want, "ok %s/remote.json\n", dir);
    a = raw_request(pid, req);
    ck_assert_str_eq(a, want);
    free(a);
    snprintf(snap, sizeof snap, "%s/remote.json", dir);
    j = lw_json_parse_file(snap, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    lw_json_free(j);

    /* Killed without clean-up: ps removes the stale socket. */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(rfd);
    ck_assert_int_eq(access(path, F_OK), 0);
    lw_cli_run(&r, ps, NULL);
    RUN_OK(&r);
    ck_assert_int_ne(access(path, F_OK), 0);
    lw_run_free(&r);
    /* ... and top names the problem. */
    lw_cli_run(&r, top, NULL);
    ck_assert_int_eq(r.exit_code, 4);
    ck_assert_ptr_nonnull(strstr(r.err, "not running"));
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(control_stops_cleanly) {
    pid_t pid = fork();
    if (pid == 0) {
        lw_control_start();
        char p[300];
        sock_path(getpid(), p, sizeof p);
        if (access(p, F_OK) != 0) _exit(2);
        exit(0); /* the atexit handler removes the socket */
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    char p[300];
    sock_path(pid, p, sizeof p);
    ck_assert_int_ne(access(p, F_OK), 0);
}
END_TEST

START_TEST(unwatched_and_bad_pids) {
    lw_run r;
    char me[32];
    snprintf(me, sizeof me, "%ld", (long)getpid());
    const char *top[] = {"top", "--once", me, NULL};
    lw_cli_run(&r, top, NULL);
    ck_assert_int_eq(r.exit_code, 4);
    ck_assert_ptr_nonnull(strstr(r.err, "not watched"));
    lw_run_free(&r);
    const char *bad[] = {"snapshot", "12abc", NULL};
    lw_cli_run(&r, bad, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    lw_run_free(&r);
    const char *none[] = {"top", NULL};
    lw_cli_run(&r, none, NULL);
    ck_assert_int_eq(r.exit_code, 2);
    lw_run_free(&r);
}
END_TEST

START_TEST(unsafe_socket_folder_is_refused) {
    char dir[64], err[512], out[512];
    lw_temp_dir(dir, sizeof dir);
    chmod(dir, 0755);
    ck_assert_int_ne(lw_control_check_dir(dir, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "chmod 700"));
    chmod(dir, 0700);
    ck_assert_int_eq(lw_control_check_dir(dir, err, sizeof err), 0);
    char link[128];
    snprintf(link, sizeof link, "%s.link", dir);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_ne(lw_control_check_dir(link, err, sizeof err), 0);
    unlink(link);
    ck_assert_int_eq(lw_control_dir(1, out, sizeof out, err, sizeof err), 0);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(watch_a_real_workload) {
    /* rt_sleeper under the shim: the socket exists once the lifecycle calls
     * lw_control_start. */
    char dir[64], out[128], prog[PATH_MAX], rep[160];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s/r.json", dir);
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_sleeper", lw_build_dir());
    const char *args[] = {"3", "1048576", "sleep", NULL};
    const char *env[] = {rep, NULL};
    pid_t pid = lw_spawn(prog, args, env, 1, out);
    ck_assert(lw_wait_for_text(out, "ready", 20000));
    char sp[300];
    sock_path(pid, sp, sizeof sp);
    int found = 0;
    for (int i = 0; i < 100 && !found; i++, usleep(20000))
        found = access(sp, F_OK) == 0;
    if (!found) {
        printf("test_cli: watch_a_real_workload skipped: the shim does not start the control "
               "socket yet (lw_control_start is not called at start-up)\n");
    } else {
        char pidtxt[32];
        snprintf(pidtxt, sizeof pidtxt, "%ld", (long)pid);
        lw_run r;
        const char *top[] = {"top", "--once", pidtxt, NULL};
        lw_cli_run(&r, top, NULL);
        RUN_OK(&r);
        ck_assert_msg(strstr(r.out, "3.00 MiB") && strstr(r.out, "leak_sleeper"), "%s", r.out);
        lw_run_free(&r);
        char snap[128];
        snprintf(snap, sizeof snap, "%s/s.json", dir);
        const char *sn[] = {"snapshot", pidtxt, "-o", snap, NULL};
        lw_cli_run(&r, sn, NULL);
        RUN_OK(&r);
        lw_run_free(&r);
    }
    kill(pid, SIGTERM);
    int st;
    if (lw_wait_pid(pid, 20000, &st) != 0) kill(pid, SIGKILL), waitpid(pid, &st, 0);
    if (found) {
        /* Killed by a signal, the job could not remove its socket (leakwatch
         * installs no signal handler in a job): `ps` clears what is stale. */
        lw_run r;
        const char *ps[] = {"ps", NULL};
        lw_cli_run(&r, ps, NULL);
        lw_run_free(&r);
        ck_assert_int_ne(access(sp, F_OK), 0);
    }
    lw_remove_dir(dir);
}
END_TEST

/* `leakwatch run CMD &` then `leakwatch top $!`: $! is the command run, not
 * the job; top and snapshot follow it to the watched child (before: "not
 * watched by leakwatch"). */
START_TEST(top_follows_run_to_its_job) {
    char dir[64], out[128], prog[PATH_MAX], cli[PATH_MAX], rep[160];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rep, sizeof rep, "%s/r.json", dir);
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_sleeper", lw_build_dir());
    snprintf(cli, sizeof cli, "%s/leakwatch", lw_build_dir());
    const char *args[] = {"run", "--cuda-stand-ins", "-r",    rep, "--", prog,
                          "3",   "1048576",          "sleep", NULL};
    pid_t run = lw_spawn(cli, args, NULL, 0, out);
    ck_assert(lw_wait_for_text(out, "ready", 20000));
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)run);
    lw_run r;
    /* The job's socket listens from its first allocation on (the lifecycle's
     * start binds it before the allocation returns), so before "ready". */
    const char *top[] = {"top", "--once", pidtxt, NULL};
    lw_cli_run(&r, top, NULL);
    ck_assert_msg(r.exit_code == 0, "top did not follow leakwatch run %s to its job: %s", pidtxt,
                  r.err);
    ck_assert_msg(strstr(r.out, "3.00 MiB") && strstr(r.err, "its child"), "%s\n%s", r.out, r.err);
    lw_run_free(&r);
    kill(run, SIGTERM);
    int st;
    if (lw_wait_pid(run, 20000, &st) != 0) kill(run, SIGKILL), waitpid(run, &st, 0);
    lw_remove_dir(dir);
}
END_TEST

/* top's floor line says a small rise (make demo's 512 B per step on 192 MiB)
 * as the rise itself: its two ends read the same (issue 42, item 7:
 * "192.2 MiB .. 192.2 MiB" under a rising sparkline). */
START_TEST(top_says_a_small_rise_of_the_floor) {
    char dir[64], out[128], prog[PATH_MAX], cli[PATH_MAX], rep[160];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rep, sizeof rep, "%s/r.json", dir);
    snprintf(prog, sizeof prog, "%s/examples/train_loop", lw_build_dir());
    snprintf(cli, sizeof cli, "%s/leakwatch", lw_build_dir());
    const char *args[] = {"run",     "-r",        rep,         "--",   prog,
                          "--steps", "100000000", "--step-us", "2000", NULL};
    pid_t run = lw_spawn(cli, args, NULL, 0, out);
    char pidtxt[32], floor_line[512] = "";
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)run);
    lw_run r;
    /* Until the floor has risen over several samples (or a minute). */
    for (int i = 0; i < 600 && !strstr(floor_line, ", +"); i++) {
        const char *top[] = {"top", "--once", pidtxt, NULL};
        lw_cli_run(&r, top, NULL);
        const char *f = strstr(r.out, "\nfloor ");
        if (f) snprintf(floor_line, sizeof floor_line, "%.*s", (int)strcspn(f + 1, "\n"), f + 1);
        lw_run_free(&r);
        if (!strstr(floor_line, ", +")) usleep(100000);
    }
    kill(run, SIGTERM);
    int st;
    if (lw_wait_pid(run, 20000, &st) != 0) kill(run, SIGKILL), waitpid(run, &st, 0);
    ck_assert_msg(strstr(floor_line, " MiB, +") && strstr(floor_line, "KiB"), "%s", floor_line);
    lw_remove_dir(dir);
}
END_TEST

/* `leakwatch run CMD &` leaves $! = run's own pid: run says the job's, once
 * it has started (the pid its report gives), and not under --quiet. */
START_TEST(run_says_the_jobs_pid) {
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_paths", lw_build_dir());
    lw_run r;
    const char *args[] = {"run", "--cuda-stand-ins", "--", prog, "malloc", "2", "4096", NULL};
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    const char *at = strstr(r.err, "leakwatch: watching PID ");
    ck_assert_msg(at != NULL, "no PID line: %s", r.err);
    long pid = strtol(at + strlen("leakwatch: watching PID "), NULL, 10);
    ck_assert_int_eq(pid, lw_rep_int(&r, "pid"));
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "watching PID %ld (%s malloc 2 4096); leakwatch top %ld\n", pid,
             prog, pid);
    ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
    ck_assert_int_eq(lw_count_substr(r.err, "watching PID"), 1);
    lw_run_free(&r);
    const char *quiet[] = {"run",  "-q", "--cuda-stand-ins", "--", prog, "malloc", "2",
                           "4096", NULL};
    lw_cli_run(&r, quiet, NULL);
    RUN_OK(&r);
    ck_assert_msg(!strstr(r.err, "watching PID"), "--quiet: %s", r.err);
    lw_run_free(&r);
    /* A program that cannot be started has no PID to watch. */
    const char *missing[] = {"run", "--", "/nonexistent/program", NULL};
    lw_cli_run(&r, missing, NULL);
    ck_assert_int_eq(r.exit_code, 127);
    ck_assert_msg(!strstr(r.err, "watching PID"), "%s", r.err);
    lw_run_free(&r);
}
END_TEST

/* --quiet (LEAKWATCH_QUIET=1): errors only, and the report's path. No live
 * line, no verdict or summary, no note such as a missing libunwind. */
START_TEST(run_quiet_is_errors_only) {
    char prog[PATH_MAX], dir[64], rep[128];
    snprintf(prog, sizeof prog, "%s/examples/train_loop", lw_build_dir());
    lw_temp_dir(dir, sizeof dir);
    snprintf(rep, sizeof rep, "%s/q.json", dir);
    const char *env[] = {"LEAKWATCH_TEST_NO_LIBUNWIND=1", NULL};
    lw_run r;
    const char *loud[] = {"run", "--cuda-stand-ins", "-r", rep, "--", prog, "--steps", "600", NULL};
    lw_cli_run(&r, loud, env);
    RUN_OK(&r);
    /* What --quiet silences is said without it. */
    ck_assert_msg(strstr(r.err, "leakwatch: LEAK in ") && strstr(r.err, "libunwind.so.8 not found"),
                  "%s", r.err);
    lw_run_free(&r);
    const char *quiet[] = {"run", "--cuda-stand-ins", "--quiet", "-r", rep, "--",
                           prog,  "--steps",          "600",     NULL};
    lw_cli_run(&r, quiet, env);
    RUN_OK(&r);
    /* Only where the report is: the library's summary, which says so
     * otherwise, is silent. */
    char want[200];
    snprintf(want, sizeof want, "leakwatch: report: %s\n", rep);
    ck_assert_msg(!strcmp(r.err, want), "--quiet printed: %s", r.err);
    lw_run_free(&r);
    struct stat st;
    ck_assert_int_eq(stat(rep, &st), 0);
    lw_remove_dir(dir);
}
END_TEST

/* attach --detach, like top and snapshot, given leakwatch run's own pid,
 * follows it to the job (which, started under run, has nothing to detach). */
START_TEST(detach_follows_run_to_its_job) {
    char dir[64], out[128], prog[PATH_MAX], cli[PATH_MAX], rep[160];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rep, sizeof rep, "%s/r.json", dir);
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_sleeper", lw_build_dir());
    snprintf(cli, sizeof cli, "%s/leakwatch", lw_build_dir());
    const char *args[] = {"run", "--cuda-stand-ins", "-r",    rep, "--", prog,
                          "3",   "1048576",          "sleep", NULL};
    pid_t run = lw_spawn(cli, args, NULL, 0, out);
    ck_assert(lw_wait_for_text(out, "ready", 20000));
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)run);
    lw_run r;
    int ok = 0;
    for (int i = 0; i < 100 && !ok; i++) {
        const char *top[] = {"top", "--once", pidtxt, NULL};
        lw_cli_run(&r, top, NULL);
        ok = r.exit_code == 0;
        lw_run_free(&r);
        if (!ok) usleep(20000);
    }
    ck_assert_msg(ok, "the job of leakwatch run %s never served its socket", pidtxt);
    const char *detach[] = {"attach", "--detach", pidtxt, NULL};
    lw_cli_run(&r, detach, NULL);
    ck_assert_msg(strstr(r.err, "is not watched itself; its child"), "%s", r.err);
    ck_assert_msg(strstr(r.err, "not attached to"), "%s", r.err);
    lw_run_free(&r);
    kill(run, SIGTERM);
    int st;
    if (lw_wait_pid(run, 20000, &st) != 0) kill(run, SIGKILL), waitpid(run, &st, 0);
    lw_remove_dir(dir);
}
END_TEST

/* ---- Prometheus ---- */

/* A strict reader of the text exposition format (version 0.0.4): comments
 * are HELP or TYPE lines (at most one each per metric, before its samples),
 * names and labels follow the grammar, values are floats, no series twice. */
typedef struct {
    char series[256][256];
    double values[256];
    int n;
} prom_doc;

static int name_ok(const char *s, size_t n) {
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':')) return 0;
    return 1;
}

static const char *prom_parse(const char *text, prom_doc *d) {
    static char why[256];
    static char typed[64][128], helped[64][128];
    int ntyped = 0, nhelped = 0;
    memset(d, 0, sizeof *d);
    size_t len = strlen(text);
    if (!len || text[len - 1] != '\n') return "does not end with a newline";
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        size_t ll = strcspn(line, "\n");
        char l[1024];
        snprintf(l, sizeof l, "%.*s", (int)ll, line);
        if (l[0] == '#') {
            char kw[8], name[128], rest[512];
            if (sscanf(l, "# %7s %127s %511[^\n]", kw, name, rest) != 3) return "bad comment";
            if (!name_ok(name, strlen(name))) return "bad name in comment";
            char(*list)[128] = !strcmp(kw, "TYPE") ? typed : !strcmp(kw, "HELP") ? helped : NULL;
            int *cnt = !strcmp(kw, "TYPE") ? &ntyped : &nhelped;
            if (!list) return "comment is neither HELP nor TYPE";
            for (int i = 0; i < *cnt; i++)
                if (!strcmp(list[i], name)) return "HELP or TYPE given twice";
            if (!strcmp(kw, "TYPE") && strcmp(rest, "gauge") && strcmp(rest, "counter"))
                return "unknown TYPE";
            for (int i = 0; i < d->n; i++)
                if (!strncmp(d->series[i], name, strlen(name)) &&
                    (d->series[i][strlen(name)] == '{' || !d->series[i][strlen(name)]))
                    return "TYPE after samples";
            snprintf(list[(*cnt)++], 128, "%s", name);
            continue;
        }
        size_t nl = strcspn(l, "{ ");
        if (!name_ok(l, nl)) return "bad metric name";
        int declared = 0;
        for (int i = 0; i < ntyped; i++)
            declared |= strlen(typed[i]) == nl && !strncmp(typed[i], l, nl);
        if (!declared) return "sample without TYPE";
        const char *p = l + nl;
        if (*p == '{') {
            p++;
            while (*p != '}') {
                size_t ln = strcspn(p, "=");
                if (!name_ok(p, ln) || p[ln] != '=' || p[ln + 1] != '"') return "bad label";
                p += ln + 2;
                while (*p && *p != '"') {
                    if (*p == '\\') {
                        if (p[1] != '\\' && p[1] != '"' && p[1] != 'n') return "bad escape";
                        p++;
                    }
                    p++;
                }
                if (*p != '"') return "unterminated label value";
                p++;
                if (*p == ',')
                    p++;
                else if (*p != '}')
                    return "expected , or }";
            }
            p++;
        }
        if (*p != ' ') return "expected a space before the value";
        size_t keylen = (size_t)(p - l);
        p++;
        char *end;
        double v = strtod(p, &end);
        if (!strcmp(p, "NaN") || !strcmp(p, "+Inf") || !strcmp(p, "-Inf")) {
            v = NAN, end = (char *)p + strlen(p);
        }
        if (end == p || *end) {
            snprintf(why, sizeof why, "bad value in: %.200s", l);
            return why;
        }
        for (int i = 0; i < d->n; i++)
            if (strlen(d->series[i]) == keylen && !strncmp(d->series[i], l, keylen))
                return "series given twice";
        if (d->n == 256) return "too many series";
        snprintf(d->series[d->n], 256, "%.*s", (int)keylen, l);
        d->values[d->n++] = v;
    }
    return NULL;
}

static double prom_value(const prom_doc *d, const char *series) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->series[i], series)) return d->values[i];
    ck_abort_msg("no series %s", series);
    return NAN;
}

START_TEST(prometheus_textfile_is_valid) {
    char dir[64], path[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/leakwatch.prom", dir);
    lw_totals_alloc(0, LW_KIND_DEVICE, 5 * MiB);
    lw_totals_alloc(0, LW_KIND_DEVICE, 1 * MiB);
    lw_totals_free(0, LW_KIND_DEVICE, 1 * MiB);
    lw_totals_failed(2, LW_KIND_PINNED_HOST);
    lw_import_opened(LW_CLASS_DPTR, 0x7000, 3 * MiB);
    ck_assert_int_eq(lw_prometheus_write(path), 0);
    char *text = lw_slurp_file(path);
    prom_doc d;
    const char *err = prom_parse(text, &d);
    ck_assert_msg(err == NULL, "%s in:\n%s", err, text);
    ck_assert_double_eq(prom_value(&d, "leakwatch_live_bytes{device=\"0\",kind=\"device\"}"),
                        5.0 * MiB);
    ck_assert_double_eq(prom_value(&d, "leakwatch_peak_live_bytes{device=\"0\",kind=\"device\"}"),
                        6.0 * MiB);
    ck_assert_double_eq(prom_value(&d, "leakwatch_alloc_total{device=\"0\",kind=\"device\"}"), 2);
    ck_assert_double_eq(prom_value(&d, "leakwatch_free_total{device=\"0\",kind=\"device\"}"), 1);
    ck_assert_double_eq(
        prom_value(&d, "leakwatch_failed_alloc_total{device=\"2\",kind=\"pinned_host\"}"), 1);
    /* Imports: their own metrics, in none of the kinds. */
    ck_assert_double_eq(prom_value(&d, "leakwatch_imported_bytes"), 3.0 * MiB);
    ck_assert_double_eq(prom_value(&d, "leakwatch_imported_open"), 1);
    free(text);
    /* Rewritten in place, with no temporary left behind. */
    ck_assert_int_eq(lw_prometheus_write(path), 0);
    lw_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.dir, sizeof r.dir, "%s", dir);
    ck_assert_int_eq(lw_run_stray_files(&r), 1);
    /* An unwritable place is an error, not a crash. */
    ck_assert_int_ne(lw_prometheus_write("/nonexistent-dir/x.prom"), 0);
    lw_remove_dir(dir);
}
END_TEST

/* A run too short to decide names the site that grows, not the largest (the
 * weights), its reason and what would decide it (issue 42, item 4). */
START_TEST(inconclusive_names_the_growing_site) {
    char prog[PATH_MAX], rep[PATH_MAX], dir[64];
    lw_temp_dir(dir, sizeof dir);
    snprintf(prog, sizeof prog, "%s/examples/train_loop", lw_build_dir());
    snprintf(rep, sizeof rep, "%s/short.json", dir);
    lw_run r;
    const char *args[] = {"run", "--report", rep, "--", prog, "--steps", "20", NULL};
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.err, "leakwatch: inconclusive: too few steps yet over 20 steps; "
                                "growing site: train_loop.c:46 in keep_loss_history") &&
                      strstr(r.err, "; to decide: run "),
                  "%s", r.err);
    lw_run_free(&r);
    const char *rargs[] = {"report", rep, NULL};
    lw_cli_run(&r, rargs, NULL);
    RUN_OK(&r);
    static const char want[] = "inconclusive: too few steps yet over 20 steps; growing site: "
                               "train_loop.c:46 in keep_loss_history";
    ck_assert_msg(!strncmp(r.out, want, strlen(want)), "%s", r.out);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

/* A job the kernel's OOM killer ends (SIGKILL: no handler, no exit report)
 * right after its LEAK line still leaves a report (issue 42, item 6): the
 * first one is written at the first verdict (or 10 s in), not only after
 * LEAKWATCH_REPORT_EVERY (here an hour; 60 s by default). */
START_TEST(sigkill_after_the_first_verdict_leaves_a_report) {
    char dir[64], out[128], rep[128], env_rep[160], exe[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(rep, sizeof rep, "%s/r.json", dir);
    snprintf(env_rep, sizeof env_rep, "LEAKWATCH_REPORT=%s", rep);
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    const char *args[] = {"--steps", "100000000", "--step-us", "1000", NULL};
    const char *env[] = {env_rep, "LEAKWATCH_REPORT_EVERY=3600", NULL};
    pid_t p = lw_spawn(exe, args, env, 1, out);
    int said = lw_wait_for_text(out, "leakwatch: LEAK in train_loop.c:46", 120000);
    int written = 0;
    for (int i = 0; said && i < 600 && !written; i++) {
        struct stat st;
        written = stat(rep, &st) == 0 && st.st_size > 0;
        if (!written) usleep(100 * 1000);
    }
    kill(p, SIGKILL);
    int st = 0;
    waitpid(p, &st, 0);
    ck_assert_msg(said, "no LEAK line: %s", lw_slurp_file(out));
    ck_assert_msg(written, "no report before the SIGKILL: %s", lw_slurp_file(out));
    char *text = lw_slurp_file(rep);
    ck_assert_msg(strstr(text, "\"verdict\": \"leak\"") || strstr(text, "\"verdict\":\"leak\""),
                  "%.300s", text);
    free(text);
    lw_remove_dir(dir);
}
END_TEST

/* The y coordinates of the main plot's data line (the first polyline of
 * plot-0) into y (at most max); their count. *height: the plot's height. */
static size_t main_plot_ys(const char *page, double *y, size_t max, double *height) {
    const char *svg = strstr(page, "<svg id=\"plot-0\"");
    ck_assert_msg(svg != NULL, "no main plot");
    const char *clip = strstr(svg, "<clipPath");
    ck_assert_ptr_nonnull(clip);
    const char *hh = strstr(clip, "height=\"");
    ck_assert_ptr_nonnull(hh);
    *height = strtod(hh + 8, NULL);
    const char *pl = strstr(svg, "<polyline");
    ck_assert_ptr_nonnull(pl);
    const char *p = strstr(pl, "points=\"");
    ck_assert_ptr_nonnull(p);
    p += 8;
    size_t n = 0;
    while (*p && *p != '"' && n < max) {
        char *end;
        strtod(p, &end); /* x */
        if (end == p || *end != ',') break;
        y[n++] = strtod(end + 1, &end);
        p = end;
        while (*p == ' ')
            p++;
    }
    return n;
}

/* The HTML report of make demo's C loop shows the leak (issue 42, item 1):
 * from its second point (the first holds the start-up) to its last, the main
 * plot's line rises over at least half the plot's height. Before, the floor
 * was drawn on a scale from the start-up: 300 KiB of growth on 192 MiB was a
 * flat line at the top. The legend is above the data, outside the plot. */
START_TEST(html_plot_shows_the_demo_leak) {
    char prog[PATH_MAX], rep[PATH_MAX], html[PATH_MAX], dir[64];
    lw_temp_dir(dir, sizeof dir);
    snprintf(prog, sizeof prog, "%s/examples/train_loop", lw_build_dir());
    snprintf(rep, sizeof rep, "%s/train_loop.json", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    lw_run r;
    const char *args[] = {"run",     "--report", rep,         "--",   prog,
                          "--steps", "600",      "--step-us", "2000", NULL};
    lw_cli_run(&r, args, NULL);
    RUN_OK(&r);
    lw_run_free(&r);
    const char *h[] = {"report", "--format", "html", "-o", html, rep, NULL};
    lw_cli_run(&r, h, NULL);
    RUN_OK(&r);
    lw_run_free(&r);
    char *page = lw_slurp_file(html);
    ck_assert_msg(strstr(page, "class=\"answer leak\"") || strstr(page, "LEAK"), "no leak");
    double y[4096], height = 0;
    size_t n = main_plot_ys(page, y, 4096, &height);
    ck_assert_msg(n >= 3, "%zu points", n);
    /* SVG's y grows downwards: a rise is a smaller y. */
    double rise = y[1] - y[n - 1];
    ck_assert_msg(rise >= height / 2, "the leak rises %.1f px of a plot %.1f px high", rise,
                  height);
    /* The legend sits above the plot's frame, not on the data. */
    const char *legend = strstr(page, "<g id=\"legend\" transform=\"translate(");
    ck_assert_msg(legend != NULL, "no legend");
    const char *clip = strstr(page, "<clipPath");
    const char *top = strstr(clip, " y=\"");
    double frame_top = strtod(top + 4, NULL), ly = 0;
    const char *comma = strchr(legend, ',');
    ly = strtod(comma + 1, NULL);
    ck_assert_msg(ly + 24 <= frame_top, "legend at %.1f, plot from %.1f", ly, frame_top);
    free(page);
    lw_remove_dir(dir);
}
END_TEST

/* ---- the page in a browser ---- */

START_TEST(html_renders_in_chromium) {
    const char *chrome = lw_find_chromium();
    if (!chrome) {
        printf("test_cli: html_renders_in_chromium skipped: chromium is not installed "
               "(apt-get install chromium)\n");
        return;
    }
    char dir[64], rep[128], png[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(rep, sizeof rep, "%s/leak.json", dir);
    snprintf(png, sizeof png, "%s/shot.png", dir);
    write_crafted(rep, "leak");
    char *d = lw_html_in_chromium(chrome, dir, rep);
    const char *floor_line = strstr(d, "id=\"site-live\"");
    ck_assert_msg(floor_line != NULL, "no polyline of the leaking site in the DOM");
    const char *pts = strstr(floor_line, "points=\"");
    if (!pts) { /* attribute order may differ: look before the id */
        const char *start = floor_line;
        while (start > d && strncmp(start, "<polyline", 9))
            start--;
        pts = strstr(start, "points=\"");
    }
    ck_assert_ptr_nonnull(pts);
    int commas = 0;
    for (const char *c = pts + 8; *c && *c != '"'; c++)
        commas += *c == ',';
    ck_assert_msg(commas >= 6, "the site's line has %d points", commas);
    ck_assert_ptr_nonnull(strstr(d, "projected out of memory"));
    free(d);
    struct stat st;
    ck_assert_int_eq(stat(png, &st), 0);
    ck_assert_int_gt(st.st_size, 10000);
    /* Kept for the README when asked to (LW_SCREENSHOT=docs/report-screenshot.png). */
    lw_keep_screenshot(png);
    lw_remove_dir(dir);
}
END_TEST

int main(void) {
    snprintf(xdg, sizeof xdg, "/tmp/lwxdg.XXXXXX");
    if (!mkdtemp(xdg)) return 1;
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, run_records_the_job_and_passes_its_status);
    tcase_add_test(tc, run_sets_the_preload_and_settings);
    tcase_add_test(tc, run_cuda_stand_ins);
    tcase_add_test(tc, version_library_and_help_env);
    tcase_add_test(tc, run_rejects_bad_values_with_one_line);
    tcase_add_test(tc, run_says_when_the_library_cannot_be_loaded);
    tcase_add_test(tc, preload_keeps_sanitizer_runtimes_first);
    tcase_add_test(tc, fail_on_leak_decision);
    tcase_add_test(tc, fail_on_leak_end_to_end);
    tcase_add_test(tc, fail_on_leak_reads_every_rank);
    tcase_add_test(tc, fail_on_leak_reports_next_to_the_job);
    tcase_add_test(tc, run_forwards_signals);
    tcase_add_test(tc, report_text_json_html);
    tcase_add_test(tc, report_of_a_real_run);
    tcase_add_test(tc, report_shows_imports);
    tcase_add_test(tc, report_errors_are_one_clear_line);
    tcase_add_test(tc, report_survives_hostile_fields);
    tcase_add_test(tc, control_socket_serves_top_snapshot_ps);
    tcase_add_test(tc, control_stops_cleanly);
    tcase_add_test(tc, unwatched_and_bad_pids);
    tcase_add_test(tc, unsafe_socket_folder_is_refused);
    tcase_add_test(tc, watch_a_real_workload);
    tcase_add_test(tc, top_follows_run_to_its_job);
    tcase_add_test(tc, prometheus_textfile_is_valid);
    tcase_add_test(tc, html_renders_in_chromium);
    tcase_add_test(tc, html_plot_shows_the_demo_leak);
    tcase_add_test(tc, inconclusive_names_the_growing_site);
    tcase_add_test(tc, sigkill_after_the_first_verdict_leaves_a_report);
    tcase_add_test(tc, top_says_a_small_rise_of_the_floor);
    suite_add_tcase(s, tc);
    /* What a newcomer's first run says (issue 30): CK_RUN_CASE=first-run. */
    TCase *first = tcase_create("first-run");
    tcase_set_timeout(first, 300);
    tcase_add_test(first, run_says_the_jobs_pid);
    tcase_add_test(first, run_quiet_is_errors_only);
    tcase_add_test(first, detach_follows_run_to_its_job);
    suite_add_tcase(s, first);
    int failed = lw_check_run(s);
    lw_remove_dir(xdg);
    return failed ? 1 : 0;
}
