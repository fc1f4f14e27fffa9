/* SPDX-License-Identifier: Apache-2.0 */
/* "Never hurt the job": fork, exec, threads, re-entrancy, signals, failures
 * of leakwatch's own parts, bounded memory and hostile input, each checked on
 * a real program run under the shim on the CPU stand-ins. */
#include "../check_run.h"
#include "../test_exec.h"
#include "harness.h"

#include "options.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024LL * 1024LL)

extern char **environ;

static lw_json *parse(const char *path) {
    char err[256];
    lw_json *j = lw_json_parse_file(path, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s: %s", path, err);
    return j;
}

static long long jint(const lw_json *j, const char *path) {
    long long v = 0;
    ck_assert_msg(lw_json_int64(lw_json_path(j, path), &v) == 0, "no integer at %s", path);
    return v;
}

/* 1 when every site of the report has a frame named fn. */
static int all_sites_named(const lw_json *rep, const char *fn) {
    const lw_json *sites = lw_json_get(rep, "sites");
    if (!lw_json_len(sites)) return 0;
    for (size_t i = 0; i < lw_json_len(sites); i++) {
        const lw_json *frames = lw_json_get(lw_json_at(sites, i), "frames");
        int found = 0;
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const char *f = lw_json_string(lw_json_get(lw_json_at(frames, j), "function"));
            found |= f && !strcmp(f, fn);
        }
        if (!found) return 0;
    }
    return 1;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- fork ---- */

/* GCC 12's ASan allocator has no fork handler: under it the forks wait until
 * each thread's first call, whose set-up allocates outside leakwatch's fork
 * locks, is done (rt_safety_fork.c says more). Elsewhere they begin at once. */
#ifdef __SANITIZE_ADDRESS__
#define FORK_START "warm"
#else
#define FORK_START NULL
#endif

/* Each "cuda PID" child of the run: its report (the file fmt names from the
 * run's folder and the pid) is its own, its 2 allocations and the 1 MiB it
 * kept. Returns how many. */
static int cuda_children_reports(lw_run *r, const char *fmt) {
    int n = 0;
    char path[600];
    for (char *line = strtok(r->out, "\n"); line; line = strtok(NULL, "\n")) {
        long pid = 0;
        if (sscanf(line, "cuda %ld", &pid) != 1) continue;
        n++;
        snprintf(path, sizeof path, fmt, r->dir, pid);
        lw_json *c = parse(path);
        ck_assert_int_eq(jint(c, "pid"), pid);
        ck_assert_int_eq(jint(c, "totals.alloc_count"), 2);
        ck_assert_int_eq(jint(c, "totals.live_bytes"), MiB);
        lw_json_free(c);
    }
    return n;
}

START_TEST(fork_while_eight_threads_allocate) {
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer does not support threads created in the child of a
     * threaded parent ("dup thread with used id" when the child's first CUDA
     * call starts the sampler): the plain and ASan builds run this test. */
    printf("test_safety: fork_while_eight_threads_allocate skipped under ThreadSanitizer\n");
    return;
#endif
    lw_run r;
    const char *args[] = {"r-%p.json", "20", FORK_START, NULL};
    lw_run_prog(&r, 1, "rt_safety_fork", args, NULL);
    RUN_OK(&r); /* a child that hung on an inherited lock fails the run */
    long parent = 0;
    int quiet = 0, cuda = 0;
    char path[600];
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        long pid = 0;
        if (sscanf(line, "parent %ld", &pid) == 1) {
            parent = pid;
        } else if (sscanf(line, "quiet %ld", &pid) == 1) {
            /* Never used CUDA: no report, not one byte on stderr. */
            quiet++;
            snprintf(path, sizeof path, "%s/r-%ld.json", r.dir, pid);
            ck_assert_msg(access(path, F_OK) != 0, "a child without CUDA wrote %s", path);
            snprintf(path, sizeof path, "%s/child-%ld.err", r.dir, pid);
            const char *err = slurp(path);
            ck_assert_ptr_nonnull(err);
            ck_assert_msg(!*err, "a child without CUDA printed: %s", err);
        } else if (sscanf(line, "cuda %ld", &pid) == 1) {
            /* Its own report, with its own allocations only. */
            cuda++;
            snprintf(path, sizeof path, "%s/r-%ld.json", r.dir, pid);
            lw_json *c = parse(path);
            ck_assert_int_eq(jint(c, "pid"), pid);
            ck_assert_int_eq(jint(c, "totals.alloc_count"), 2);
            ck_assert_int_eq(jint(c, "totals.free_count"), 1);
            ck_assert_int_eq(jint(c, "totals.live_bytes"), MiB);
            ck_assert_int_eq(jint(c, "totals.peak_live_bytes"), 2 * MiB);
            ck_assert_int_eq(jint(c, "totals.unknown_free_count"), 0);
            ck_assert_int_eq(jint(c, "tracker.live_records"), 1);
            ck_assert_msg(all_sites_named(c, "leak_child"),
                          "the child's report has the parent's sites");
            ck_assert_uint_eq(lw_json_len(lw_json_get(c, "failed_allocations")), 0);
            lw_json_free(c);
        }
    }
    ck_assert_int_eq(quiet, 10);
    ck_assert_int_eq(cuda, 10);
    ck_assert_int_eq(lw_files_matching(r.dir, "", ".json"), 1 + cuda);
    ck_assert_int_eq(lw_files_matching(r.dir, "", ".tmp"), 0);
    snprintf(path, sizeof path, "%s/r-%ld.json", r.dir, parent);
    lw_json *p = parse(path);
    ck_assert_int_eq(jint(p, "totals.live_bytes"), 3 * MiB);
    ck_assert_int_eq(jint(p, "totals.live_count"), 3);
    ck_assert_int_eq(jint(p, "totals.alloc_count") - jint(p, "totals.free_count"), 3);
    lw_json_free(p);
    /* The parent's own summary, once. */
    ck_assert_int_eq(lw_count_substr(r.err, "leakwatch: report:"), 1);
    lw_run_free(&r);

    /* A template without %p: the parent keeps the name, each child that uses
     * CUDA writes its own file with its pid before ".json". */
    const char *same[] = {"same.json", "4", FORK_START, NULL};
    lw_run_prog(&r, 1, "rt_safety_fork", same, NULL);
    RUN_OK(&r);
    snprintf(path, sizeof path, "%s/same.json", r.dir);
    p = parse(path);
    ck_assert_int_eq(jint(p, "totals.live_bytes"), 3 * MiB);
    lw_json_free(p);
    ck_assert_int_eq(cuda_children_reports(&r, "%s/same.%ld.json"), 2);
    lw_run_free(&r);
}
END_TEST

/* ---- exec ---- */

/* A fork while leakwatch walks the loaded objects for a report: glibc hands
 * the child its list lock as it was, and a child forked during a walk would
 * wait forever at its first CUDA call (leakwatch binds its entries by a
 * walk). The program holds the dumping thread's walk until the fork (or
 * 300 ms): leakwatch's fork handlers must wait for the walk to end. */
START_TEST(fork_while_a_report_walks_the_objects) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    /* ThreadSanitizer: threads started in the child of a threaded parent (as
     * above). GCC 12's ASan allocator has no fork handler, and the dumping
     * thread goes on writing its report (allocating) while the fork that
     * waited for its walk goes ahead. */
    printf("test_safety: fork_while_a_report_walks_the_objects skipped under a sanitizer\n");
    return;
#endif
    lw_run r;
    const char *args[] = {"r-%p.json", "3", "walk", NULL};
    lw_run_prog(&r, 1, "rt_safety_fork", args, NULL);
    RUN_OK(&r); /* a child that hung on the walk's lock fails the run */
    /* Each fork came while a walk of leakwatch's was held: else this test
     * proves nothing. */
    ck_assert_int_eq(lw_count_substr(r.out, "held\n"), 3);
    ck_assert_int_eq(cuda_children_reports(&r, "%s/r-%ld.json"), 3);
    lw_run_free(&r);
}
END_TEST

/* A fork while another thread's first CUDA call starts leakwatch: the
 * child, which uses CUDA, must not inherit leakwatch's start lock held by a
 * thread it does not have (its own first call would wait on it for ever:
 * seen once in about 300 runs of the test above, the child's futex at
 * start_lock). The program holds the starting thread inside the start (in
 * atexit, which the start calls under the lock) until the fork, or 300 ms. */
START_TEST(fork_while_another_thread_starts_leakwatch) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    /* As the test above: the start goes on (its sampler thread allocates)
     * while the fork that waited for it goes ahead. */
    printf("test_safety: fork_while_another_thread_starts_leakwatch skipped under a sanitizer\n");
    return;
#endif
    lw_run r;
    const char *args[] = {"r-%p.json", "1", "start", NULL};
    lw_run_prog(&r, 1, "rt_safety_fork", args, NULL);
    RUN_OK(&r); /* a child that hung on the start lock fails the run */
    ck_assert_int_eq(lw_count_substr(r.out, "held\n"), 1); /* the fork came mid-start */
    ck_assert_int_eq(cuda_children_reports(&r, "%s/r-%ld.json"), 1);
    lw_run_free(&r);
}
END_TEST

START_TEST(exec_children_stay_inert) {
    /* Children inherit LD_PRELOAD: a shell pipeline and a compiler run under
     * the shim must see nothing of it: no file, no output, no thread. */
    lw_run r;
    const char *pipeline[] = {"-c", "echo hi | tr a-z A-Z; ls /proc/self/task | wc -l", NULL};
    lw_run_exe(&r, 1, "/bin/sh", pipeline, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, "HI\n1\n");
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(lw_run_stray_files(&r), 0);
    lw_run_free(&r);

    const char *compile[] = {
        "-c",
        "command -v cc >/dev/null || { echo built; exit 0; }; "
        "echo 'int main(void){return 0;}' | cc -x c - -o /dev/null && echo built",
        NULL};
    lw_run_exe(&r, 1, "/bin/sh", compile, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, "built\n");
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(lw_run_stray_files(&r), 0);
    lw_run_free(&r);
}
END_TEST

/* ---- threads ---- */

START_TEST(sixteen_threads_with_dumps_and_sampler) {
    lw_run r;
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=10", NULL};
    const char *args[] = {lw_sanitized() ? "300" : "2000", NULL};
    long long rounds = atoll(args[0]);
    lw_run_prog(&r, 1, "rt_safety_threads", args, env);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, "ok\n");
    ck_assert_str_eq(lw_json_string(lw_json_get(r.report, "reason")), "exit");
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 16 * (rounds * 8 + 2) + 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 16 * rounds * 8 + 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_count"), 32);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 32 * 4096);
    ck_assert_int_eq(lw_rep_int(&r, "tracker.live_records"), 32);
    const lw_json *site = lw_rep_site_named(&r, "leak_thread");
    ck_assert_ptr_nonnull(site);
    long long n = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_count"), &n), 0);
    ck_assert_int_eq(n, 32);
    ck_assert_int_eq(lw_files_matching(r.dir, "", ".tmp"), 0);
    lw_run_free(&r);
}
END_TEST

/* ---- re-entrancy ---- */

START_TEST(dlsym_and_dlopen_from_many_threads) {
    lw_run r;
    const char *args[] = {lw_sanitized() ? "60" : "300", NULL};
    long long rounds = atoll(args[0]);
    lw_run_prog(&r, 1, "rt_safety_dlsym", args, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, "ok\n");
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 4 * rounds * 3 + 1);
    ck_assert_int_eq(lw_rep_int(&r, "totals.free_count"), 4 * rounds * 3);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 4096);
    ck_assert_int_eq(lw_rep_int(&r, "totals.unknown_free_count"), 0);
    lw_run_free(&r);
}
END_TEST

/* ---- signals ---- */

START_TEST(job_signals_and_timers_keep_working) {
    static const char want[] = "alarms some\nusr1 ok\nforeign threads all block\n"
                               "handler on foreign thread 0\n";
    lw_run r;
    lw_run_prog(&r, 1, "rt_safety_signals", NULL, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, want);
    ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count"), 20001);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 8192);
    lw_run_free(&r);
    lw_run_prog(&r, 0, "rt_safety_signals", NULL, NULL);
    RUN_OK(&r);
    ck_assert_str_eq(r.out, want);
    lw_run_free(&r);
}
END_TEST

/* ---- failures of our own parts ---- */

START_TEST(tracker_out_of_memory) {
    /* The tracker's own allocations fail after N: the program's results are
     * untouched, and what was lost is counted and said once. */
    const char *args[] = {"malloc", "3", "1048576", NULL};
    lw_run base;
    lw_run_prog(&base, 0, "rt_paths", args, NULL);
    RUN_OK(&base);
    static const int after[] = {0, 1, 2, 3, 5, 8, 1000};
    for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
        char set[64];
        snprintf(set, sizeof set, "LEAKWATCH_TEST_FAIL_ALLOC=%d", after[i]);
        const char *env[] = {set, NULL};
        lw_run r;
        lw_run_prog(&r, 1, "rt_paths", args, env);
        RUN_OK(&r);
        ck_assert_str_eq(r.out, base.out);
        long long untracked = lw_rep_int(&r, "tracker.untracked_allocations");
        /* 3 leaked + 5 churned: each is either tracked or counted as lost. */
        ck_assert_int_eq(lw_rep_int(&r, "totals.alloc_count") + untracked, 8);
        ck_assert_int_eq(lw_count_substr(r.err, "out of memory for tracking"), untracked ? 1 : 0);
        if (after[i] == 0) ck_assert_int_eq(untracked, 8);
        if (after[i] == 1000) ck_assert_int_eq(untracked, 0);
        lw_run_free(&r);
    }
    lw_run_free(&base);
}
END_TEST

/* A folder of our own, outside the harness's, for runs that need files in
 * place before the program starts. */
static void own_dir(char *dir, size_t n) {
    snprintf(dir, n, "/tmp/lwsafety.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX + 300];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) rmdir(p); /* a planted folder */
    }
    if (d) closedir(d);
    rmdir(dir);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(report_cannot_be_written) {
    const char *args[] = {"malloc", "2", "1048576", NULL};
    char dir[64], rep[PATH_MAX], tmpdir[PATH_MAX];
    own_dir(dir, sizeof dir);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", dir);

    /* A folder that does not exist: said once, written to $TMPDIR instead. */
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s/missing/report.json", dir);
    const char *set1[] = {rep, tmpdir, NULL};
    lw_run r;
    lw_run_set(&r, set1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_count_substr(r.err, "cannot write the report to"), 1);
    ck_assert_int_eq(lw_count_substr(r.err, "No such file or directory"), 1);
    ck_assert_int_eq(lw_count_substr(r.err, "instead"), 1);
    ck_assert_int_eq(lw_files_matching(dir, "", ".json"), 1);
    lw_run_free(&r);

    /* A name longer than the file system allows. */
    char longname[400];
    memset(longname, 'a', 300);
    longname[300] = '\0';
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s/%s.json", dir, longname);
    lw_run_set(&r, set1, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_count_substr(r.err, "File name too long"), 1);
    ck_assert_int_eq(lw_files_matching(dir, "", ".json"), 2);
    lw_run_free(&r);

    /* A template that expands beyond PATH_MAX. */
    char tpl[3600];
    int o = snprintf(tpl, sizeof tpl, "LEAKWATCH_REPORT=%s/", dir);
    while (o < 3500)
        tpl[o++] = '%', tpl[o++] = 'p'; /* pids have 2 or more digits */
    tpl[o] = '\0';
    const char *set2[] = {tpl, tmpdir, NULL};
    lw_run_set(&r, set2, "rt_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_count_substr(r.err, "too long"), 1);
    ck_assert_int_eq(lw_files_matching(dir, "", ".json"), 3);
    lw_run_free(&r);
    remove_dir(dir);
}
END_TEST

/* The job's output and a report written before must survive a write that
 * runs out of room half-way. */
static void check_full(const char *dir, const char *const *prefix, int fill) {
    char old[PATH_MAX], rep[PATH_MAX + 32], tmpdir[PATH_MAX];
    snprintf(old, sizeof old, "%s/report.json", dir);
    write_file(old, "{\"earlier\": true}\n");
    if (fill) {
        char filler[PATH_MAX + 16];
        snprintf(filler, sizeof filler, "%s/filler", dir);
        int fd = open(filler, O_WRONLY | O_CREAT, 0600);
        static char block[512];
        while (write(fd, block, sizeof block) > 0) {
        }
        close(fd);
    }
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s", old);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", dir);
    const char *argv[32];
    int n = 0;
    for (int i = 0; prefix[i]; i++)
        argv[n++] = prefix[i];
    argv[n++] = "/usr/bin/env";
    argv[n++] = rep;
    argv[n++] = tmpdir;
    argv[n++] = lw_program_path("rt_paths");
    argv[n++] = "malloc";
    argv[n++] = "2";
    argv[n++] = "1048576";
    argv[n] = NULL;
    lw_run r;
    lw_run_exe(&r, 1, argv[0], argv + 1, NULL);
    RUN_OK(&r);
    /* The path asked for, then $TMPDIR: two lines, one verdict. */
    ck_assert_int_eq(lw_count_substr(r.err, "cannot write the report to"), 2);
    ck_assert_int_eq(lw_count_substr(r.err, "no report was written"), 1);
    ck_assert_str_eq(slurp(old), "{\"earlier\": true}\n");
    ck_assert_int_eq(lw_files_matching(dir, "", ".tmp"), 0);
    lw_run_free(&r);
}

START_TEST(disk_full_keeps_the_earlier_report) {
    char dir[64];
    own_dir(dir, sizeof dir);
    /* A file size limit (any user): writes fail with EFBIG, as on a full
     * disk. The job ignores SIGXFSZ, as a job that sets such a limit does. */
    const char *ulimit[] = {"/bin/sh", "-c", "ulimit -f 1 && trap '' XFSZ && exec \"$@\"", "sh",
                            NULL};
    check_full(dir, ulimit, 0);
    remove_dir(dir);

    /* The same limit in a job that keeps SIGXFSZ's default action (which
     * ends the process): the report writer must not raise it on the job. */
    own_dir(dir, sizeof dir);
    const char *ulimit_default[] = {"/bin/sh", "-c", "ulimit -f 1 && exec \"$@\"", "sh", NULL};
    check_full(dir, ulimit_default, 0);
    remove_dir(dir);

    /* A full file system (root only: a 64 KiB tmpfs, filled up). */
    own_dir(dir, sizeof dir);
    if (geteuid() != 0 || mount("lwfull", dir, "tmpfs", 0, "size=64k,mode=0700") != 0) {
        printf("test_safety: full tmpfs case skipped: mounting a tmpfs needs root\n");
    } else {
        const char *none[] = {NULL};
        check_full(dir, none, 1);
        umount2(dir, MNT_DETACH);
    }
    remove_dir(dir);
}
END_TEST

/* ---- hostile input ---- */

START_TEST(planted_links_are_not_followed) {
    lw_run r;
    const char *args[] = {"plant", NULL};
    lw_run_prog(&r, 1, "rt_safety_files", args, NULL);
    RUN_OK(&r);
    char p[600];
    snprintf(p, sizeof p, "%s/victim-tmp", r.dir);
    ck_assert_str_eq(slurp(p), "precious\n");
    snprintf(p, sizeof p, "%s/victim-report", r.dir);
    ck_assert_str_eq(slurp(p), "precious\n");
    /* The link at the report path was replaced by the report, which is a
     * private regular file. */
    struct stat st;
    ck_assert_int_eq(lstat(r.report_path, &st), 0);
    ck_assert_msg(S_ISREG(st.st_mode), "the report path is not a regular file");
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_ptr_nonnull(r.report);
    lw_run_free(&r);
}
END_TEST

/* Another user of a shared $TMPDIR plants a folder at the fallback report's
 * name, leakwatch-PID.json (the job's pid is easy to guess ahead): the
 * report is still written, under a name that cannot be guessed, and nothing
 * planted is followed (issue 43: "no report was written"). */
START_TEST(planted_fallback_names_never_win) {
    char dir[64], rep[PATH_MAX], tmpdir[PATH_MAX];
    own_dir(dir, sizeof dir);
    snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", dir);
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s/missing/report.json", dir);
    const char *set[] = {rep, tmpdir, "LEAKWATCH_QUIET=0", NULL};
    const char *args[] = {"plantfallback", NULL};
    lw_run r;
    lw_run_set(&r, set, "rt_safety_files", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(!strstr(r.err, "no report was written"), "stderr: %s", r.err);
    ck_assert_msg(lw_count_substr(r.err, "instead") == 1, "stderr: %s", r.err);
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/victim", dir);
    ck_assert_str_eq(slurp(p), "precious\n");
    /* The report: the one leakwatch-PID-*.json file, complete, private. */
    const char *at = strstr(r.err, "wrote the report to ");
    ck_assert_ptr_nonnull(at);
    char path[PATH_MAX];
    ck_assert_int_eq(sscanf(at + 20, "%4095s", path), 1);
    ck_assert_msg(!strncmp(path, dir, strlen(dir)) && strstr(path, "/leakwatch-") &&
                      strlen(path) > 5 && !strcmp(path + strlen(path) - 5, ".json"),
                  "%s", path);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    char err[256];
    lw_json *j = lw_json_parse_file(path, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s: %s", path, err);
    lw_json_free(j);
    lw_run_free(&r);
    remove_dir(dir);
}
END_TEST

START_TEST(bad_option_values) {
    /* Each LEAKWATCH_* setting with bad values: one line naming it, the
     * default used, the job untouched. */
    static const char *const bool_bad[] = {"maybe", "2", "", NULL};
    static const char *const int_bad[] = {"abc", "12x", "-5", "99999999999999999999999", "", NULL};
    static const char *const str_bad[] = {"", NULL};
    const char *args[] = {"malloc", "1", "4096", NULL};
    size_t n = 0;
    const lw_option_def *defs = lw_options_table(&n);
    for (size_t i = 0; i <= n; i++) {
        const char *name = i < n ? defs[i].name : "LEAKWATCH_TEST_FAIL_ALLOC";
        const char *const *bad = i == n                        ? int_bad
                                 : defs[i].type == LW_OPT_BOOL ? bool_bad
                                 : defs[i].type == LW_OPT_INT  ? int_bad
                                                               : str_bad;
        for (int b = 0; bad[b]; b++) {
            if (i == n && !strcmp(bad[b], "")) continue; /* empty: not a number, but see below */
            char set[256], want[300];
            snprintf(set, sizeof set, "%s=%s", name, bad[b]);
            snprintf(want, sizeof want, "leakwatch: ignoring %s=", name);
            const char *sets[] = {set, NULL};
            lw_run r;
            lw_run_set(&r, sets, "rt_paths", args, NULL);
            RUN_OK(&r);
            ck_assert_msg(lw_count_substr(r.err, want) == 1, "%s: stderr: %s", set, r.err);
            ck_assert_msg(lw_count_substr(r.err, "leakwatch: ignoring") == 1, "%s: stderr: %s", set,
                          r.err);
            /* Recording went on with the defaults: a report exists (at the
             * default path when the path itself was the bad value). */
            if (!strcmp(name, "LEAKWATCH_REPORT"))
                ck_assert_int_eq(lw_files_matching(r.dir, "", ".json"), 1);
            else
                ck_assert_msg(r.report != NULL, "%s: no report", set);
            lw_run_free(&r);
        }
    }
}
END_TEST

/* ---- bounded memory ---- */

START_TEST(site_cap_pools_the_rest) {
    lw_run r;
    const char *args[] = {"40", NULL};
    const char *env[] = {"LEAKWATCH_MAX_SITES=16", NULL};
    lw_run_prog(&r, 1, "rt_safety_sites", args, env);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "sites_total"), 16);
    ck_assert_int_eq(lw_rep_int(&r, "tracker.pooled_allocations"), 24);
    ck_assert_int_eq(lw_rep_int(&r, "totals.live_count"), 40);
    int pooled = 0;
    const lw_json *sites = lw_json_get(r.report, "sites");
    for (size_t i = 0; i < lw_json_len(sites); i++)
        if (lw_json_bool(lw_json_get(lw_json_at(sites, i), "pooled"), 0)) {
            pooled++;
            ck_assert_int_eq(jint(lw_json_at(sites, i), "alloc_count"), 24);
        }
    ck_assert_int_eq(pooled, 1);
    lw_run_free(&r);

    /* Without the cap every stack has its site. */
    lw_run_prog(&r, 1, "rt_safety_sites", args, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_rep_int(&r, "sites_total"), 40);
    ck_assert_int_eq(lw_rep_int(&r, "tracker.pooled_allocations"), 0);
    lw_run_free(&r);
}
END_TEST

START_TEST(tracker_bytes_per_live_allocation) {
    lw_run r;
    const char *args[] = {"malloc", "100000", "256", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    long long records = lw_rep_int(&r, "tracker.live_records");
    long long bytes = lw_rep_int(&r, "tracker.overhead_bytes");
    ck_assert_int_eq(records, 100000);
    printf("test_safety: tracker overhead %.1f bytes per live allocation (%lld records)\n",
           (double)bytes / (double)records, records);
    /* The goal is 64; a record is 96 bytes today (see docs/safety.md). */
    ck_assert_int_le(bytes / records, 128);
    lw_run_free(&r);
}
END_TEST

static long rss_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    if (f) fclose(f);
    return kib;
}

/* Runs examples/train_loop ARGS under the shim, sampling its resident size
 * every 20 ms; the largest value in the first and last quarter of the run. */
static void train_rss(const char *steps, const char *leak, long *early, long *late) {
    char exe[PATH_MAX + 64], pre[PATH_MAX + 300], lib[PATH_MAX + 64], rep[64];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    const char *asan = getenv("LW_ASAN_RT");
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s%s%s/libleakwatch.so", asan && *asan ? asan : "",
             asan && *asan ? " " : "", lw_build_dir());
    snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s/tests/lib", lw_build_dir());
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=/tmp/lwsafety-rss-%ld.json", (long)getpid());
    char *envp[] = {pre, lib, rep, "LEAKWATCH_QUIET=1", "ASAN_OPTIONS=detect_leaks=0", NULL};
    char *argv[24];
    int ac = lw_test_exec_prefix(exe, argv, 16);
    char *rest[] = {exe, "--steps", (char *)steps, "--leak", (char *)leak, NULL};
    for (int i = 0; i < 6; i++)
        argv[ac++] = rest[i];
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    static long samples[100000];
    int n = 0, status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        long k = rss_kib(pid);
        if (k > 0 && n < 100000) samples[n++] = k;
        usleep(20000);
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "train_loop failed");
    ck_assert_int_ge(n, 8);
    *early = *late = 0;
    for (int i = 0; i < n / 4; i++)
        if (samples[i] > *early) *early = samples[i];
    for (int i = n - n / 4; i < n; i++)
        if (samples[i] > *late) *late = samples[i];
    unlink(rep + strlen("LEAKWATCH_REPORT="));
}

START_TEST(memory_stays_flat_over_a_long_run) {
    if (lw_sanitized()) {
        /* ASan's quarantine holds freed memory back (up to 256 MiB) and a
         * sanitizer's shadow grows with what it has seen: RSS says nothing. */
        printf("test_safety: memory_stays_flat_over_a_long_run skipped under a sanitizer\n");
        return;
    }
    const char *steps = "1000000";
    long early, late;
    train_rss(steps, "0", &early, &late);
    printf("test_safety: train_loop --steps %s --leak 0: RSS %ld KiB early, %ld KiB late\n", steps,
           early, late);
    ck_assert_msg(late - early < 1024, "RSS grew from %ld to %ld KiB", early, late);
    /* The same measure sees a tracked leak: each leaked allocation's record
     * (and the stand-in's own bookkeeping) costs memory. */
    train_rss("200000", "512", &early, &late);
    printf("test_safety: train_loop --steps 200000 --leak 512: RSS %ld KiB early, %ld KiB late\n",
           early, late);
    ck_assert_msg(late - early > 4096, "RSS did not grow under a leak: %ld -> %ld KiB", early,
                  late);
}
END_TEST

int main(void) {
    Suite *s = suite_create("safety");
    TCase *tc = tcase_create("safety");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, fork_while_eight_threads_allocate);
    tcase_add_test(tc, fork_while_a_report_walks_the_objects);
    tcase_add_test(tc, fork_while_another_thread_starts_leakwatch);
    tcase_add_test(tc, exec_children_stay_inert);
    tcase_add_test(tc, sixteen_threads_with_dumps_and_sampler);
    tcase_add_test(tc, dlsym_and_dlopen_from_many_threads);
    tcase_add_test(tc, job_signals_and_timers_keep_working);
    tcase_add_test(tc, tracker_out_of_memory);
    tcase_add_test(tc, report_cannot_be_written);
    tcase_add_test(tc, disk_full_keeps_the_earlier_report);
    tcase_add_test(tc, planted_links_are_not_followed);
    tcase_add_test(tc, planted_fallback_names_never_win);
    tcase_add_test(tc, bad_option_values);
    tcase_add_test(tc, site_cap_pools_the_rest);
    tcase_add_test(tc, tracker_bytes_per_live_allocation);
    tcase_add_test(tc, memory_stays_flat_over_a_long_run);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
