/* SPDX-License-Identifier: Apache-2.0 */
/* The processes of one job (issue 41): two processes never write the same
 * report file (the second gets its own name and says so, whether the first
 * still runs or has already ended), a later run still replaces an earlier
 * run's report, and the rank the job's process group gives (the PyTorch
 * helper's leakwatch_torch_rank, for launchers that set no variable, such as
 * mp.spawn) is the one %r, stderr and the report use. Processes are ordered
 * by pipes (a job says "ready" once it has started recording, and ends when
 * its standard input closes), never by time. */
#include "harness.h"
#include "harness_cli.h"
#include "../check_run.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* rt_sleeper in its stdin mode under the shim, writing its report to
 * report: started, and read up to its "ready" line (its allocations made:
 * recording). */
typedef struct {
    pid_t pid;
    int in, out; /* its standard input (ours to close) and output */
    char err_path[PATH_MAX];
} job;

static void job_start(job *j, const char *dir, const char *report, const char *const *extra) {
    char *argv[LW_EXEC_ARGV], exe[PATH_MAX + 256];
    const char *args[] = {"2", "4096", "stdin", NULL};
    lw_exec_argv(lw_program_path("rt_sleeper"), args, argv, exe, sizeof exe);
    static lw_child_env ce;
    lw_child_env_build(&ce, LW_PRELOAD_SHIM, report, extra);
    int in[2], out[2];
    ck_assert_int_eq(pipe(in), 0);
    ck_assert_int_eq(pipe(out), 0);
    snprintf(j->err_path, sizeof j->err_path, "%s/err-%d.txt", dir, in[0]);
    j->pid = fork();
    ck_assert_int_ge(j->pid, 0);
    if (j->pid == 0) {
        int e = open(j->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(e, 2);
        close(in[1]), close(out[0]);
        execve(argv[0], argv, ce.envp);
        _exit(127);
    }
    close(in[0]), close(out[1]);
    j->in = in[1], j->out = out[0];
    char line[64] = "";
    size_t n = 0;
    while (n + 1 < sizeof line && read(j->out, line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    ck_assert_msg(!strncmp(line, "ready", 5), "the job said \"%s\"", line);
}

/* Closes its input, waits for its end; its stderr (malloc'd). */
static char *job_end(job *j) {
    close(j->in);
    int status = 0;
    while (waitpid(j->pid, &status, 0) < 0) {
    }
    close(j->out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    return lw_slurp_file(j->err_path);
}

static long long report_pid(const char *path) {
    lw_json *doc = lw_json_parse_file(path, NULL, NULL, 0);
    long long pid = -1;
    if (doc) lw_json_int64(lw_json_get(doc, "pid"), &pid);
    lw_json_free(doc);
    return pid;
}

/* Two processes of one job whose template names the same file: the first to
 * write keeps it (here the one that ends first), the other, still running
 * then, gets its own name at its end and says so. */
START_TEST(the_first_writer_keeps_the_name) {
    char dir[256], same[PATH_MAX], own[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(same, sizeof same, "%s/same.json", dir);
    job a;
    job_start(&a, dir, same, NULL);
    lw_run b;
    char setting[PATH_MAX + 32];
    snprintf(setting, sizeof setting, "LEAKWATCH_REPORT=%s", same);
    const char *set[] = {setting, NULL};
    const char *args[] = {"1", "4096", "stdin", NULL};
    lw_run_set(&b, set, "rt_sleeper", args, NULL);
    RUN_OK(&b);
    long long b_pid = -1;
    ck_assert_msg(sscanf(b.out, "ready %lld", &b_pid) == 1, "%s", b.out);
    ck_assert_msg(!strstr(b.err, "another process"), "%s", b.err);
    ck_assert_int_eq(report_pid(same), b_pid);
    char *a_err = job_end(&a);
    snprintf(own, sizeof own, "%s/same.%ld.json", dir, (long)a.pid);
    ck_assert_msg(strstr(a_err, "is the report of another process") && strstr(a_err, own),
                  "stderr: %s", a_err);
    ck_assert_int_eq(report_pid(same), b_pid);
    ck_assert_int_eq(report_pid(own), a.pid);
    /* The locks go with the final reports. */
    ck_assert_int_eq(lw_files_matching(dir, ".same", ".lock"), 0);
    free(a_err);
    lw_run_free(&b);
    lw_remove_dir(dir);
}
END_TEST

/* A process that writes no report (a forked child leaving with _exit, as an
 * exporter of memory does) takes no name: the parent's report is at the
 * template's path. */
START_TEST(a_child_that_writes_nothing_takes_no_name) {
    lw_run r;
    const char *args[] = {"ipc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL && !strstr(r.err, "another process"), "stderr: %s", r.err);
    lw_run_free(&r);
}
END_TEST

/* With %r and no rank told (no launcher variable, no process group), two
 * processes expand to the same name: the one that ends second does not
 * replace the report of the one that ended first while it ran. */
START_TEST(a_sibling_that_ended_first_keeps_its_report) {
    char dir[256], tpl[PATH_MAX], same[PATH_MAX], own[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(tpl, sizeof tpl, "%s/leak-%%r.json", dir);
    snprintf(same, sizeof same, "%s/leak-0.json", dir);
    job b;
    job_start(&b, dir, tpl, NULL);
    lw_run a;
    char setting[PATH_MAX + 32];
    snprintf(setting, sizeof setting, "LEAKWATCH_REPORT=%s", tpl);
    const char *set[] = {setting, NULL};
    const char *args[] = {"1", "4096", "stdin", NULL};
    lw_run_set(&a, set, "rt_sleeper", args, NULL);
    RUN_OK(&a);
    long long a_pid = -1;
    ck_assert_msg(sscanf(a.out, "ready %lld", &a_pid) == 1, "%s", a.out);
    ck_assert_int_eq(report_pid(same), a_pid);
    char *b_err = job_end(&b);
    snprintf(own, sizeof own, "%s/leak-0.%ld.json", dir, (long)b.pid);
    ck_assert_msg(strstr(b_err, "is the report of another process") && strstr(b_err, own),
                  "stderr: %s", b_err);
    ck_assert_int_eq(report_pid(same), a_pid);
    ck_assert_int_eq(report_pid(own), b.pid);
    free(b_err);
    lw_run_free(&a);
    lw_remove_dir(dir);
}
END_TEST

/* A run after another replaces its report, as before: only processes that
 * ran together are kept apart. */
START_TEST(a_later_run_replaces_the_report) {
    char dir[256], same[PATH_MAX], setting[PATH_MAX + 32];
    lw_temp_dir(dir, sizeof dir);
    snprintf(same, sizeof same, "%s/same.json", dir);
    snprintf(setting, sizeof setting, "LEAKWATCH_REPORT=%s", same);
    const char *set[] = {setting, NULL};
    const char *args[] = {"1", "4096", "stdin", NULL};
    lw_run a, b;
    lw_run_set(&a, set, "rt_sleeper", args, NULL);
    RUN_OK(&a);
    lw_run_set(&b, set, "rt_sleeper", args, NULL);
    RUN_OK(&b);
    long long b_pid = -1;
    ck_assert_msg(sscanf(b.out, "ready %lld", &b_pid) == 1, "%s", b.out);
    ck_assert_int_eq(report_pid(same), b_pid);
    ck_assert_msg(!strstr(b.err, "another process"), "%s", b.err);
    ck_assert_int_eq(lw_files_matching(dir, "same.", ".json"), 1);
    lw_run_free(&a);
    lw_run_free(&b);
    lw_remove_dir(dir);
}
END_TEST

/* The process group's rank (leakwatch_torch_rank, what the PyTorch helper
 * calls once init_process_group has run) names the report file (%r), every
 * line on stderr and the report's rank, world_size and rank_source, where no
 * launcher variable says a rank. A report written before it (a dump, a
 * periodic one) does not take the name %r gives then (leak-0.json, another
 * rank's): it goes to leak-0.PID.json, removed once the real one is
 * written. */
START_TEST(the_process_groups_rank_is_used) {
    if (access("/usr/bin/python3", X_OK) != 0) return;
    char dir[256], tpl[PATH_MAX], want[PATH_MAX], cudart[PATH_MAX + 32];
    lw_temp_dir(dir, sizeof dir);
    snprintf(tpl, sizeof tpl, "%s/leak-%%r.json", dir);
    snprintf(want, sizeof want, "%s/leak-1.json", dir);
    snprintf(cudart, sizeof cudart, "%s/tests/lib/libcudart.so", lw_build_dir());
    const char *script =
        "import ctypes, sys\n"
        "rt = ctypes.CDLL(sys.argv[1])\n"
        "rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]\n"
        "p = ctypes.c_void_p()\n"
        "rt.cudaMalloc(ctypes.byref(p), 4096)\n"
        "ctypes.CDLL(None).leakwatch_dump()\n"
        "ctypes.CDLL(None).leakwatch_torch_rank(1, 2)\n"
        "sys.stderr.write('rank told\\n'); sys.stderr.flush()\n"
        "rt.cudaMalloc(ctypes.byref(p), 4096)\n";
    char setting[PATH_MAX + 32];
    snprintf(setting, sizeof setting, "LEAKWATCH_REPORT=%s", tpl);
    const char *args[] = {setting, "/usr/bin/python3", "-c", script, cudart, NULL};
    lw_run r;
    lw_run_exe(&r, 1, "/usr/bin/env", args, NULL);
    RUN_OK(&r);
    lw_json *doc = lw_json_parse_file(want, NULL, NULL, 0);
    ck_assert_msg(doc != NULL, "no report at %s; stderr: %s", want, r.err);
    long long rank = -1, world = -1;
    ck_assert_int_eq(lw_json_int64(lw_json_get(doc, "rank"), &rank), 0);
    ck_assert_int_eq(lw_json_int64(lw_json_get(doc, "world_size"), &world), 0);
    ck_assert(rank == 1 && world == 2);
    const char *source = lw_json_string(lw_json_get(doc, "rank_source"));
    ck_assert_msg(source && !strcmp(source, "process group"), "%s", source ? source : "null");
    /* Every line leakwatch printed once the rank was told names it. */
    int lines = 0;
    char *told = strstr(r.err, "rank told\n");
    ck_assert_msg(told != NULL, "stderr: %s", r.err);
    /* The dump before the rank was told did not take rank 0's name: it
     * went to a name of this process's own, removed at the end. */
    char early[PATH_MAX + 64];
    snprintf(early, sizeof early, "report: %s/leak-0.", dir);
    const char *at = strstr(r.err, early);
    ck_assert_msg(at && at < told && strncmp(at + strlen(early), "json", 4) != 0, "stderr: %s",
                  r.err);
    for (char *l = told; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "leakwatch", 9)) continue;
        lines++;
        ck_assert_msg(!strncmp(l, "leakwatch[rank 1]: ", 19), "stderr: %s", r.err);
    }
    ck_assert_msg(lines >= 2, "stderr: %s", r.err);
    ck_assert_int_eq(lw_files_matching(dir, "leak-0", ".json"), 0);
    ck_assert_int_eq(lw_files_matching(dir, ".leak-", ".lock"), 0);
    lw_json_free(doc);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

/* leakwatch run --fail-on-leak -r same.json over a job of two processes
 * that ran together: the clean one holds same.json, the leaking one writes
 * same.PID.json, and the run reads both (it read same.json only and exited
 * 0), then prints their merged view. The leaking process starts once the
 * clean one has said "ready" (a FIFO), and the clean one ends by SIGTERM
 * once the leaking one has ended. */
START_TEST(fail_on_leak_reads_every_process_report) {
    char dir[256], same[PATH_MAX], sleeper[PATH_MAX], train[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(same, sizeof same, "%s/same.json", dir);
    snprintf(sleeper, sizeof sleeper, "%s", lw_program_path("rt_sleeper"));
    snprintf(train, sizeof train, "%s/examples/train_loop", lw_build_dir());
    const char *script = "mkfifo \"$1/f\" || exit 9; \"$2\" 2 4096 sleep > \"$1/f\" & a=$!; "
                         "read r < \"$1/f\"; \"$3\" --steps 300; kill -TERM $a; wait $a; exit 0";
    const char *args[] = {"run",
                          "--cuda-stand-ins",
                          "--fail-on-leak",
                          "-r",
                          same,
                          "--",
                          "/bin/sh",
                          "-c",
                          script,
                          "sh",
                          dir,
                          sleeper,
                          train,
                          NULL};
    lw_run r;
    lw_cli_run(&r, args, NULL);
    ck_assert_msg(r.exit_code == 3, "exit %d\nstderr: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "is the report of another process"), "%s", r.err);
    ck_assert_msg(strstr(r.err, "leakwatch: 2 reports of this run: LEAK: train_loop.c:"), "%s",
                  r.err);
    ck_assert_int_eq(lw_files_matching(dir, "same.", ".json"), 2);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ranks");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, the_first_writer_keeps_the_name);
    tcase_add_test(tc, a_child_that_writes_nothing_takes_no_name);
    tcase_add_test(tc, a_sibling_that_ended_first_keeps_its_report);
    tcase_add_test(tc, a_later_run_replaces_the_report);
    tcase_add_test(tc, the_process_groups_rank_is_used);
    tcase_add_test(tc, fail_on_leak_reads_every_process_report);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
