/* SPDX-License-Identifier: Apache-2.0 */
/* The report's files (src/output/report_file.c) in one process, without a
 * job: the control socket's "snapshot PATH" against the report's own path,
 * before the first report and after the final one. Both orders were seen
 * only as races in test_job_safety under ThreadSanitizer; here each is
 * driven step by step. */
#include "atomic_file.h"
#include "options.h"
#include "report_file.h"

#include "../check_run.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64], rep[128];

/* A fresh folder, LEAKWATCH_REPORT naming report.json in it. */
static void set_up(void) {
    snprintf(dir, sizeof dir, "/tmp/test_report_file_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(rep, sizeof rep, "%s/report.json", dir);
    setenv("LEAKWATCH_REPORT", rep, 1);
    setenv("LEAKWATCH_QUIET", "1", 1);
    lw_options_load();
    lw_report_claim_start();
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int has_reason(const char *path, const char *reason) {
    char want[64];
    snprintf(want, sizeof want, "\"reason\": \"%s\"", reason);
    const char *t = slurp(path);
    return t && strstr(t, want) != NULL;
}

static int files_in(const char *d) {
    DIR *dp = opendir(d);
    int n = 0;
    for (struct dirent *e; dp && (e = readdir(dp));)
        n += e->d_name[0] != '.';
    if (dp) closedir(dp);
    return n;
}

static void tear_down(void) {
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A snapshot to the report's own path before the process's first report:
 * the final report still goes there (the claim knows the file its own
 * snapshot wrote), not to report.PID.json beside it. */
START_TEST(snapshot_before_the_first_report_keeps_the_path) {
    set_up();
    char why[512] = "", written[512] = "";
    ck_assert_int_eq(lw_report_snapshot(rep, why, sizeof why), LW_AF_WRITTEN);
    ck_assert(has_reason(rep, "snapshot"));
    /* Its time well after the start: a file system's coarse clock can stamp
     * a write made a moment after the start as before it, which would hide
     * what this test is about (in a job, the first snapshot comes seconds
     * after the start). */
    struct timespec later[2] = {{0, UTIME_OMIT}, {0, 0}};
    clock_gettime(CLOCK_REALTIME, &later[1]);
    later[1].tv_sec += 10;
    ck_assert_int_eq(utimensat(AT_FDCWD, rep, later, 0), 0);
    ck_assert_int_eq(lw_report_write("exit", 0, written, sizeof written), 0);
    ck_assert_str_eq(written, rep);
    ck_assert(has_reason(rep, "exit"));
    ck_assert_int_eq(files_in(dir), 1);
    tear_down();
}
END_TEST

/* After the final report, a snapshot to that file is refused, saying why
 * and what to do; the final report stays; a snapshot elsewhere is
 * written. */
START_TEST(snapshot_after_the_final_report_is_refused) {
    set_up();
    char why[512] = "", written[512] = "", other[160];
    ck_assert_int_eq(lw_report_write("exit", 0, written, sizeof written), 0);
    ck_assert_str_eq(written, rep);
    ck_assert_int_eq(lw_report_snapshot(rep, why, sizeof why), LW_AF_FAILED);
    ck_assert_msg(strstr(why, "final report") && strstr(why, "another path"), "%s", why);
    ck_assert(has_reason(rep, "exit"));
    snprintf(other, sizeof other, "%s/snap.json", dir);
    ck_assert_int_eq(lw_report_snapshot(other, why, sizeof why), LW_AF_WRITTEN);
    ck_assert(has_reason(other, "snapshot"));
    ck_assert(has_reason(rep, "exit"));
    /* A periodic write after the final report is skipped. */
    ck_assert_int_eq(lw_report_write("periodic", 0, written, sizeof written), 0);
    ck_assert(has_reason(rep, "exit"));
    tear_down();
}
END_TEST

int main(void) {
    Suite *s = suite_create("report_file");
    TCase *tc = tcase_create("core");
    /* Each in a process of its own (Check's fork mode): the final report is
     * once per process. */
    tcase_add_test(tc, snapshot_before_the_first_report_keeps_the_path);
    tcase_add_test(tc, snapshot_after_the_final_report_is_refused);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
