/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach: jobs started without leakwatch (tests/programs/..._attach,
 * on the CPU stand-ins) are attached while they run, diagnosed and detached,
 * and must finish as they would have without it; the refusals each give one
 * line and leave the job untouched. */
#include "harness_cli.h"

#include "../check_run.h"
#include "attach.h"
#include "control_client.h"
#include "inject.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char xdg[64];

/* ptrace as this user can reach a sibling process here. */
static int can_attach(void) {
#if !defined(__x86_64__)
    printf("test_attach: skipped: leakwatch attach is x86-64 only for now\n");
    return 0;
#endif
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = 0;
        fclose(f);
    }
    char err[512];
    if (lw_attach_scope_problem(scope, geteuid() == 0, err, sizeof err) != 0) {
        printf("test_attach: skipped: %s\n", err);
        return 0;
    }
    return 1;
}

typedef struct {
    pid_t pid;
    char dir[64], out[128], go[128], report[160];
} job;

/* Starts PROG STEPS STEP_MS GO [SIZE [extra]] (attach.h) and waits for its
 * "ready"; hold_at > 0: it stops after each hold_at steps until resume() (it
 * says "held I" then). */
static void start_job_held(job *j, const char *prog, const char *steps, const char *extra,
                           int go_now, int preload, long hold_at) {
    lw_temp_dir(j->dir, sizeof j->dir);
    snprintf(j->out, sizeof j->out, "%s/out.txt", j->dir);
    snprintf(j->go, sizeof j->go, "%s/go", j->dir);
    snprintf(j->report, sizeof j->report, "%s/report.json", j->dir);
    char exe[PATH_MAX], hold[200];
    snprintf(exe, sizeof exe, "%s/tests/programs/%s", lw_build_dir(), prog);
    snprintf(hold, sizeof hold, "ATTACH_HOLD=%ld:%s/resume", hold_at, j->dir);
    const char *args[] = {steps, "10", go_now ? "-" : j->go, "1048576", extra, NULL};
    const char *env[] = {hold, NULL};
    j->pid = lw_spawn(exe, args, hold_at > 0 ? env : NULL, preload, j->out);
    ck_assert_msg(lw_wait_for_text(j->out, "ready", 20000), "%s never started: %s", prog,
                  lw_slurp_file(j->out));
}

static void start_job(job *j, const char *prog, const char *steps, const char *extra, int go_now,
                      int preload) {
    start_job_held(j, prog, steps, extra, go_now, preload, 0);
}

static void go(const job *j) {
    lw_write_text(j->go, "go");
}

/* A job started with hold_at: waits until it holds after `steps` steps. */
static void wait_held(const job *j, long steps) {
    char want[32];
    snprintf(want, sizeof want, "held %ld\n", steps);
    ck_assert_msg(lw_wait_for_text(j->out, want, 120000), "the job never held: %s",
                  lw_slurp_file(j->out));
}

static void resume(const job *j) {
    char path[200];
    snprintf(path, sizeof path, "%s/resume", j->dir);
    lw_write_text(path, "go");
}

/* Waits for the job's end: it must exit 0. Returns its output (malloc'd). */
static char *finish_job(job *j) {
    int st = 0;
    if (lw_wait_pid(j->pid, 60000, &st) != 0) {
        kill(j->pid, SIGKILL);
        waitpid(j->pid, &st, 0);
        ck_abort_msg("the job did not end: %s", lw_slurp_file(j->out));
    }
    char *out = lw_slurp_file(j->out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "job status 0x%x: %s", st, out);
    return out;
}

static void attach_cli(lw_run *r, const char *a0, const char *a1, const char *a2, const char *a3,
                       const char *a4, const char *a5) {
    const char *args[] = {"attach", a0, a1, a2, a3, a4, a5, NULL};
    lw_cli_run(r, args, NULL);
}

static void pid_text(pid_t pid, char *out, size_t n) {
    snprintf(out, n, "%ld", (long)pid);
}

/* The line "done ..." of a job's output (the part that does not depend on
 * timing). */
static char *done_line(const char *out) {
    const char *d = strstr(out, "done ");
    ck_assert_msg(d != NULL, "no done line: %s", out);
    size_t n = strcspn(d, "\n");
    char *line = strndup(d, n);
    return line;
}

/* The same program, never attached. */
static char *reference_done(const char *prog, const char *steps, const char *extra) {
    job j;
    start_job(&j, prog, steps, extra, 1, 0);
    char *out = finish_job(&j);
    char *line = done_line(out);
    free(out);
    lw_remove_dir(j.dir);
    return line;
}

static int maps_have(pid_t pid, const char *what) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/maps", (long)pid);
    char *m = lw_slurp_file(p);
    int yes = strstr(m, what) != NULL;
    free(m);
    return yes;
}

static void load_report(lw_run *rep, const char *path) {
    memset(rep, 0, sizeof *rep);
    char err[512];
    rep->report = lw_json_parse_file(path, NULL, err, sizeof err);
    ck_assert_msg(rep->report != NULL, "no report: %s", err);
}

static double rep_number(const lw_run *rep, const char *path) {
    return lw_json_number(lw_json_path(rep->report, path), -1);
}

/* Attach, let the job leak for a while, detach: the report has the verdict,
 * the rate and the site; the job ends as it would have without the attach. */
/* The job's steps (10 ms each); it holds after DIAGNOSE_HOLD of them while
 * the test looks (top, ps) and detaches: the detach comes while it runs,
 * however slow the machine (a time-bound wait and 600 steps did not always
 * do it in a loaded sanitizer run). */
#define DIAGNOSE_STEPS 300
#define DIAGNOSE_HOLD 150
static void attach_diagnose_detach(const char *prog, const char *site, const char *extra,
                                   int live_view) {
    if (!can_attach()) return;
    char steps[16];
    snprintf(steps, sizeof steps, "%d", DIAGNOSE_STEPS);
    char *ref = reference_done(prog, steps, extra);
    job j;
    start_job_held(&j, prog, steps, extra, 0, 0, DIAGNOSE_HOLD);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "--set", "interval_ms=50", "-o", j.report, pid);
    ck_assert_msg(r.exit_code == 0, "attach: %d\n%s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "attached to process") && strstr(r.err, "stopped for"), "%s",
                  r.err);
    lw_run_free(&r);
    go(&j);
    wait_held(&j, DIAGNOSE_HOLD);
    if (live_view) {
        const char *top[] = {"top", "--once", pid, NULL};
        lw_cli_run(&r, top, NULL);
        RUN_OK(&r);
        ck_assert_msg(strstr(r.out, site), "top: %s", r.out);
        lw_run_free(&r);
        const char *ps[] = {"ps", NULL};
        lw_cli_run(&r, ps, NULL);
        RUN_OK(&r);
        ck_assert_msg(strstr(r.out, pid), "ps: %s\nstderr: %s", r.out, r.err);
        lw_run_free(&r);
    }
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0 && strstr(r.err, j.report), "detach: %d\n%s", r.exit_code,
                  r.err);
    lw_run_free(&r);
    /* Detached: nothing answers for it any more. */
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_int_eq(r.exit_code, 4);
    lw_run_free(&r);
    resume(&j);

    char *out = finish_job(&j);
    char *done = done_line(out);
    ck_assert_msg(!strcmp(done, ref), "attached: '%s'\nnever attached: '%s'", done, ref);
    /* The attach came before the first step and the detach put the job's
     * dlsym entry back: the steps before the hold found leakwatch_step,
     * none after it. */
    const char *m = strstr(out, "steps marked: ");
    long marked = m ? strtol(m + 14, NULL, 10) : -1;
    ck_assert_msg(marked == DIAGNOSE_HOLD, "steps marked: %ld\n%s", marked, out);

    lw_run rep;
    load_report(&rep, j.report);
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "reason")), "detach");
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "verdict")), "leak");
    /* The job marks steps through dlsym(RTLD_DEFAULT, "leakwatch_step"),
     * which finds the library after the attach: 1 MiB kept per step. */
    ck_assert_str_eq(lw_json_string(lw_json_path(rep.report, "growth.step_source")), "marker");
    ck_assert_msg(rep_number(&rep, "growth.bytes_per_step") == 1048576, "rate %g",
                  rep_number(&rep, "growth.bytes_per_step"));
    const lw_json *s = lw_rep_site_named(&rep, site);
    ck_assert_msg(s != NULL, "no site %s", site);
    ck_assert_msg(lw_json_number(lw_json_get(s, "live_bytes"), 0) >= 1048576, "site keeps nothing");
    lw_json_free(rep.report);
    free(done);
    free(out);
    free(ref);
    lw_remove_dir(j.dir);
}

START_TEST(runtime_job_attached_diagnosed_detached) {
    attach_diagnose_detach("rt_attach", "leak_attach_rt", NULL, 1);
}
END_TEST

START_TEST(driver_job_attached_diagnosed_detached) {
    attach_diagnose_detach("drv_attach", "leak_attach_drv", NULL, 0);
}
END_TEST

START_TEST(rtld_local_module_attached_diagnosed_detached) {
    attach_diagnose_detach("dl_attach", "leak_module", NULL, 0);
}
END_TEST

/* The module is opened after the attach: our dlopen hooks it. */
START_TEST(module_loaded_after_the_attach_is_hooked) {
    attach_diagnose_detach("dl_attach", "leak_module", "late", 0);
}
END_TEST

/* The module's wrappers end in a tail call (-O2): the runtime's return
 * address lies in the program, whose scope has no runtime. Every step's
 * allocations still succeed (the done line is the unattached job's) and
 * are counted. */
START_TEST(tail_calling_module_attached_diagnosed_detached) {
    attach_diagnose_detach("dl_attach", "leak_tail_attach", "tail", 0);
}
END_TEST

/* The runtime linked in statically, attached before its first call: it finds
 * the driver through the hooked dlsym. */
START_TEST(static_runtime_attached_before_its_start) {
    attach_diagnose_detach("static_attach", "leak_attach_static", NULL, 0);
}
END_TEST

/* Allocations made before the attach are not in the floor; their frees are
 * counted apart. A second attach after a detach is a new session. */
START_TEST(earlier_allocations_and_a_second_session) {
    if (!can_attach()) return;
    job j;
    /* It holds after 10 steps (past step 5) and after 20: each session
     * ends while the job runs. */
    start_job_held(&j, "rt_attach", "30", NULL, 0, 0, 10);
    char pid[32], rep2[200];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "-o", j.report, pid, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    go(&j);
    wait_held(&j, 10);
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    lw_run rep;
    load_report(&rep, j.report);
    /* rt_attach frees its 4 early blocks at step 5. */
    ck_assert_int_eq((int)rep_number(&rep, "totals.unknown_free_count"), 4);
    lw_json_free(rep.report);
    ck_assert(maps_have(j.pid, "libleakwatch.so")); /* stays mapped, inert */

    snprintf(rep2, sizeof rep2, "%s/second.json", j.dir);
    attach_cli(&r, "--background", "-o", rep2, pid, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "second attach: %s", r.err);
    lw_run_free(&r);
    resume(&j);
    wait_held(&j, 20);
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    load_report(&rep, rep2);
    ck_assert_int_eq((int)rep_number(&rep, "totals.unknown_free_count"), 0);
    ck_assert_msg(rep_number(&rep, "totals.alloc_count") > 0, "second session saw nothing");
    lw_json_free(rep.report);
    resume(&j);
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* Ctrl-C of a foreground attach detaches and names the report. */
START_TEST(ctrl_c_of_a_foreground_attach_detaches) {
    if (!can_attach()) return;
    job j;
    /* It holds after 150 steps until the test is done with it: the attach
     * and the detach find it running, however slow the machine. */
    start_job_held(&j, "rt_attach", "300", NULL, 1, 0, 150);
    char pid[32], out[160];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    const char *args[] = {"attach", "-o", j.report, pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
    ck_assert_msg(lw_wait_for_text(out, "Ctrl-C", 20000), "%s", lw_slurp_file(out));
    usleep(200 * 1000);
    kill(a, SIGINT);
    int st = 0;
    ck_assert_msg(lw_wait_pid(a, 20000, &st) == 0, "attach did not end");
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(text, "detached") &&
                      strstr(text, j.report),
                  "status 0x%x: %s", st, text);
    free(text);
    ck_assert_int_eq(access(j.report, F_OK), 0);
    resume(&j);
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* A job that ends under a foreground attach: the last line names the file
 * the job wrote, its %p expanded, once it is there (issue 43: it named the
 * template, leakwatch-%p.json, before the file existed). */
START_TEST(the_end_of_a_foreground_attach_names_the_real_file) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_attach", "100", NULL, 0, 0);
    char pid[32], out[160], tpl[200], want[200];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    snprintf(tpl, sizeof tpl, "%s/r-%%p.json", j.dir);
    snprintf(want, sizeof want, "%s/r-%s.json", j.dir, pid);
    const char *args[] = {"attach", "-o", tpl, pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
    ck_assert_msg(lw_wait_for_text(out, "Ctrl-C", 20000), "%s", lw_slurp_file(out));
    go(&j);
    int st = 0;
    ck_assert_msg(lw_wait_pid(a, 60000, &st) == 0, "attach did not end");
    /* Right when the command ends, the file it names is there. */
    int there = access(want, F_OK) == 0;
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x: %s", st, text);
    const char *last = strstr(text, "ended or was detached");
    ck_assert_msg(last && strstr(last, want) && !strstr(last, "%p"), "want %s in: %s", want, text);
    ck_assert_msg(there, "%s is not there when the command ends: %s", want, text);
    free(text);
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* A foreground attach says what run says while the job runs (issue 42, item
 * 3: it was silent until Ctrl-C): the LEAK line, "[as of step N]", once the
 * leak is established, before any detach. */
START_TEST(a_foreground_attach_prints_the_live_line) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_attach", "100000", NULL, 1, 0);
    char pid[32], out[160];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    const char *args[] = {"attach", "-o", j.report, pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
    int seen = lw_wait_for_text(out, "[as of step ", 120000);
    char *text = lw_slurp_file(out);
    kill(a, SIGINT);
    int st = 0;
    ck_assert_msg(lw_wait_pid(a, 30000, &st) == 0, "attach did not end");
    ck_assert_msg(seen && strstr(text, "leakwatch: LEAK in rt_attach.c:") &&
                      !strstr(text, "detached"),
                  "no live line before the detach: %s", text);
    free(text);
    kill(j.pid, SIGKILL);
    waitpid(j.pid, &st, 0);
    lw_remove_dir(j.dir);
}
END_TEST

/* The recipe to try attach on the stand-ins (README, docs/cli.md): make
 * demo's C loop started on its own, then a foreground attach: the leak is
 * seen after the attach, named at its line, before any detach. */
START_TEST(the_attach_recipe_on_the_stand_ins) {
    if (!can_attach()) return;
    char dir[64], exe[PATH_MAX], out[160], jout[160], pid[32];
    lw_temp_dir(dir, sizeof dir);
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    snprintf(out, sizeof out, "%s/attach.txt", dir);
    snprintf(jout, sizeof jout, "%s/job.txt", dir);
    const char *jargs[] = {"--steps", "1000000", "--step-us", "5000", NULL};
    pid_t jp = lw_spawn(exe, jargs, NULL, 0, jout); /* the stand-ins on LD_LIBRARY_PATH */
    pid_text(jp, pid, sizeof pid);
    /* Started: the program runs, its runtime is loaded. */
    for (int i = 0; i < 20000 && !maps_have(jp, "libcudart"); i++)
        usleep(1000);
    ck_assert_msg(maps_have(jp, "libcudart"), "the example never started: %s", lw_slurp_file(jout));
    const char *args[] = {"attach", "-o", "none", pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
    int seen = lw_wait_for_text(out, "[as of step ", 120000);
    char *text = lw_slurp_file(out);
    kill(a, SIGINT);
    int st = 0;
    ck_assert_msg(lw_wait_pid(a, 30000, &st) == 0, "attach did not end");
    ck_assert_msg(seen && strstr(text, "leakwatch: LEAK in train_loop.c:46 in keep_loss_history"),
                  "the example's leak was not seen after the attach: %s", text);
    free(text);
    kill(jp, SIGKILL);
    waitpid(jp, &st, 0);
    lw_remove_dir(dir);
}
END_TEST

/* Real-time signals sent all through the attach all arrive. */
START_TEST(signals_during_the_attach_are_not_lost) {
    if (!can_attach()) return;
    const char *san = getenv("LW_ASAN_RT");
    if (san && strstr(san, "tsan")) {
        /* TSan delivers a signal that arrives outside a blocking call later,
         * from one pending slot per signal number: queued real-time signals
         * that arrive while the thread runs instrumented code (the hooked
         * job, slow under TSan) are merged by TSan itself. */
        printf("test_attach: signal counting skipped under TSan (it merges pending signals)\n");
        return;
    }
    job j;
    /* It holds after 100 steps until detached (the signals go on). */
    start_job_held(&j, "rt_attach", "200", NULL, 1, 0, 100);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    enum { N = 400 };
    pid_t sender = fork();
    ck_assert_int_ge(sender, 0);
    if (sender == 0) {
        union sigval v = {.sival_int = 7};
        for (int i = 0; i < N; i++) {
            while (sigqueue(j.pid, SIGRTMIN, v) != 0 && errno == EAGAIN)
                usleep(100);
            usleep(250);
        }
        _exit(0);
    }
    usleep(20 * 1000);
    lw_run r;
    attach_cli(&r, "--background", "-o", j.report, pid, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    int st;
    waitpid(sender, &st, 0);
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    lw_run_free(&r);
    resume(&j);
    char *out = finish_job(&j);
    char want[64];
    snprintf(want, sizeof want, "signals %d\n", N);
    ck_assert_msg(strstr(out, want), "want '%s': %s", want, out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

/* One line on stderr, exit status st, and the job goes on untouched. */
static void refused(const job *j, const lw_run *r, int st, const char *text) {
    ck_assert_msg(r->exit_code == st, "exit %d, want %d: %s", r->exit_code, st, r->err);
    ck_assert_msg(strstr(r->err, text), "want '%s' in: %s", text, r->err);
    const char *nl = strchr(r->err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "more than one line: %s", r->err);
    if (j) {
        ck_assert_msg(kill(j->pid, 0) == 0, "the job is gone");
    }
}

/* A job preloaded with a copy of the library under another name: attach
 * refuses it (issue 43: it injected a second leakwatch, two instances, two
 * reports), and the job ends with its one report, from the copy. */
START_TEST(a_renamed_copy_already_watching_is_refused) {
    if (!can_attach()) return;
    job j;
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    snprintf(j.report, sizeof j.report, "%s/report.json", j.dir);
    char copy[PATH_MAX], cmd[PATH_MAX * 2 + 32], preload[PATH_MAX + 600], rep[PATH_MAX];
    snprintf(copy, sizeof copy, "%s/libwatchcopy.so", j.dir);
    snprintf(cmd, sizeof cmd, "cp '%s/libleakwatch.so' '%s'", lw_build_dir(), copy);
    ck_assert_int_eq(system(cmd), 0);
    const char *rt = getenv("LW_ASAN_RT");
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s%s", rt && *rt ? rt : "",
             rt && *rt ? " " : "", copy);
    snprintf(rep, sizeof rep, "LEAKWATCH_REPORT=%s", j.report);
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/tests/programs/rt_attach", lw_build_dir());
    const char *args[] = {preload, rep, exe, "300", "10", "-", "1048576", NULL};
    j.pid = lw_spawn("/usr/bin/env", args, NULL, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "never started: %s",
                  lw_slurp_file(j.out));
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", pid, NULL, NULL, NULL, NULL);
    refused(&j, &r, 1, "under another name");
    ck_assert_msg(strstr(r.err, "libwatchcopy.so"), "%s", r.err);
    ck_assert(!maps_have(j.pid, "libleakwatch.so"));
    lw_run_free(&r);
    free(finish_job(&j));
    lw_run rp;
    load_report(&rp, j.report);
    ck_assert_str_eq(lw_json_string(lw_json_get(rp.report, "reason")), "exit");
    lw_json_free(rp.report);
    lw_remove_dir(j.dir);
}
END_TEST

/* A job whose seccomp filter kills the process at socket(): attach refuses
 * it, naming the filter, and the job runs on untouched (issue 43: the
 * attach went on and the job died with SIGSYS at the library's socket). */
START_TEST(a_seccomp_filtered_job_is_refused) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_seccomp", "50", NULL, 0, 0);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "-o", j.report, pid, NULL, NULL);
    refused(&j, &r, 1, "seccomp filter");
    ck_assert_msg(strstr(r.err, "Seccomp: 2") && strstr(r.err, "--set seccomp=full"), "%s", r.err);
    ck_assert(!maps_have(j.pid, "libleakwatch"));
    lw_run_free(&r);
    go(&j);
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done 50 steps, 0 failed"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

/* A second attach (or a debugger) takes the thread the attach would borrow
 * after the checks, as two attaches at once do: the refusal names the
 * tracer (issue 43: "it may have been made undumpable"). The test traces the
 * job's one borrowable thread, a second thread, itself. */
START_TEST(a_thread_traced_since_the_checks_names_its_tracer) {
    if (!can_attach()) return;
    char dir[64], out[160], exe[PATH_MAX];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(exe, sizeof exe, "%s/tests/programs/rt_attach_sidesleep", lw_build_dir());
    const char *args[] = {"60000", NULL};
    pid_t pid = lw_spawn(exe, args, NULL, 0, out);
    ck_assert_msg(lw_wait_for_text(out, "ready", 20000), "%s", lw_slurp_file(out));
    char *text = lw_slurp_file(out);
    long p = 0, tid = 0;
    ck_assert_int_eq(sscanf(strstr(text, "ready"), "ready %ld %ld", &p, &tid), 2);
    free(text);
    ck_assert_int_eq(ptrace(PTRACE_SEIZE, (pid_t)tid, 0, 0), 0);
    char pid_s[32], want[96];
    pid_text(pid, pid_s, sizeof pid_s);
    snprintf(want, sizeof want, "is being traced by process %ld", (long)getpid());
    lw_run r;
    attach_cli(&r, "--background", "--wait-ms", "3000", pid_s, NULL, NULL);
    ck_assert_msg(r.exit_code == 1 && strstr(r.err, want) && !strstr(r.err, "undumpable"),
                  "exit %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    int st;
    kill(pid, SIGKILL);
    waitpid((pid_t)tid, &st, __WALL);
    waitpid(pid, &st, 0);
    lw_remove_dir(dir);
}
END_TEST

START_TEST(refusals_leave_the_job_untouched) {
    if (!can_attach()) return;
    lw_run r;
    char pid[32];

    /* A process that never loaded CUDA. */
    job plain;
    lw_temp_dir(plain.dir, sizeof plain.dir);
    snprintf(plain.out, sizeof plain.out, "%s/out.txt", plain.dir);
    const char *sl[] = {"30", NULL};
    plain.pid = lw_spawn("/bin/sleep", sl, NULL, 0, plain.out);
    usleep(100 * 1000);
    pid_text(plain.pid, pid, sizeof pid);
    attach_cli(&r, pid, NULL, NULL, NULL, NULL, NULL);
    refused(&plain, &r, 1, "has not loaded CUDA");
    ck_assert(!maps_have(plain.pid, "libleakwatch"));
    lw_run_free(&r);
    kill(plain.pid, SIGKILL);
    waitpid(plain.pid, NULL, 0);
    lw_remove_dir(plain.dir);

    /* A job started under leakwatch, and a second attach. */
    job pre;
    /* Each job below holds after 150 steps until the test is done with it:
     * the refusals find it running, however slow the machine. */
    start_job_held(&pre, "rt_attach", "300", NULL, 1, 1, 150);
    pid_text(pre.pid, pid, sizeof pid);
    usleep(300 * 1000);
    attach_cli(&r, pid, NULL, NULL, NULL, NULL, NULL);
    refused(&pre, &r, 1, "leakwatch top");
    lw_run_free(&r);
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    refused(&pre, &r, 1, "not attached to");
    lw_run_free(&r);
    resume(&pre);
    free(finish_job(&pre));
    lw_remove_dir(pre.dir);

    job j;
    start_job_held(&j, "rt_attach", "300", NULL, 1, 0, 150);
    pid_text(j.pid, pid, sizeof pid);
    attach_cli(&r, "--background", "-o", j.report, pid, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    attach_cli(&r, "--background", pid, NULL, NULL, NULL, NULL);
    refused(&j, &r, 1, "leakwatch top");
    lw_run_free(&r);

    /* Another user's process. */
    if (geteuid() == 0) {
        char out[160];
        snprintf(out, sizeof out, "%s/other.txt", j.dir);
        chmod(j.dir, 0755);
        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
            int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
            if (fd < 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
            dup2(fd, 1);
            dup2(fd, 2);
            execl(lw_cli_exe(), "leakwatch", "attach", pid, (char *)NULL);
            _exit(98);
        }
        int st = 0;
        waitpid(c, &st, 0);
        char *text = lw_slurp_file(out);
        if (WIFEXITED(st) && WEXITSTATUS(st) < 90) {
            ck_assert_msg(WEXITSTATUS(st) == 1 && strstr(text, "belongs to another user"),
                          "status 0x%x: %s", st, text);
        } else {
            printf("test_attach: another user's attempt skipped (cannot run the command as "
                   "nobody: status 0x%x)\n",
                   st);
        }
        free(text);
    }
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    lw_run_free(&r);
    resume(&j);
    free(finish_job(&j));

    /* A statically linked runtime that has started: refused. */
    job st;
    start_job_held(&st, "static_attach", "300", NULL, 1, 0, 150);
    usleep(100 * 1000);
    pid_text(st.pid, pid, sizeof pid);
    attach_cli(&r, pid, NULL, NULL, NULL, NULL, NULL);
    refused(&st, &r, 1, "linked in statically");
    ck_assert(!maps_have(st.pid, "libleakwatch"));
    lw_run_free(&r);
    resume(&st);
    free(finish_job(&st));
    lw_remove_dir(st.dir);

    /* No such process; a process that ends during the attach. */
    attach_cli(&r, "2147483646", NULL, NULL, NULL, NULL, NULL);
    refused(NULL, &r, 4, "no process");
    lw_run_free(&r);
    job quick;
    start_job(&quick, "rt_attach", "1", NULL, 1, 0);
    pid_text(quick.pid, pid, sizeof pid);
    attach_cli(&r, "--background", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 4, "%d: %s", r.exit_code,
                  r.err);
    lw_run_free(&r);
    free(finish_job(&quick));
    lw_remove_dir(quick.dir);
    lw_remove_dir(j.dir);
}
END_TEST

/* A Python job: the attach's helper marks steps from the (stand-in) torch
 * optimizer; a job that imported the leakwatch package before the attach
 * gets its leakwatch.step() calls; without either, time intervals. */
static void python_job_in(const char *mode, int want_steps, int planted);
static void python_job(const char *mode, int want_steps) {
    python_job_in(mode, want_steps, 0);
}

/* Waits until a live report of the attached job (leakwatch snapshot) says
 * leak and, with want_steps, counts 20 marked steps; without, time
 * intervals. The bound only turns a hang into a failure. */
static void wait_live_state(const job *j, int want_steps) {
    char pid[32], snap[200];
    pid_text(j->pid, pid, sizeof pid);
    snprintf(snap, sizeof snap, "%s/live.json", j->dir);
    const char *args[] = {"snapshot", pid, "-o", snap, NULL};
    char last[256] = "no snapshot";
    for (int i = 0; i < 600; i++) {
        lw_run r;
        lw_cli_run(&r, args, NULL);
        int ok = r.exit_code == 0;
        if (ok) {
            lw_run rep;
            load_report(&rep, snap);
            const char *verdict = lw_json_string(lw_json_get(rep.report, "verdict"));
            const char *source = lw_json_string(lw_json_path(rep.report, "growth.step_source"));
            double steps = rep_number(&rep, "growth.steps");
            snprintf(last, sizeof last, "verdict %s, step_source %s, %g steps",
                     verdict ? verdict : "?", source ? source : "?", steps);
            int there =
                verdict && source && !strcmp(verdict, "leak") &&
                (want_steps ? strcmp(source, "time") != 0 && steps >= 20 : !strcmp(source, "time"));
            lw_json_free(rep.report);
            if (there) {
                lw_run_free(&r);
                return;
            }
        } else {
            snprintf(last, sizeof last, "snapshot exit %d: %.200s", r.exit_code, r.err);
        }
        lw_run_free(&r);
        usleep(50 * 1000);
    }
    ck_abort_msg("the attached job's live report never had its state: %s\njob: %s", last,
                 lw_slurp_file(j->out));
}

/* planted: the script runs from a folder that holds a package named
 * leakwatch (another user's, say), which records that it ran. */
static void python_job_in(const char *mode, int want_steps, int planted) {
    if (!can_attach()) return;
    const char *rt = getenv("LW_ASAN_RT");
    if (rt && strstr(rt, "tsan")) {
        printf("test_attach: Python jobs skipped under TSan (CPython is not built with it)\n");
        return;
    }
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("test_attach: no /usr/bin/python3: Python jobs skipped\n");
        return;
    }
    char script[PATH_MAX], torch[PATH_MAX], pkg[PATH_MAX];
    ck_assert_ptr_nonnull(realpath("tests/python/attach_job.py", script));
    ck_assert_ptr_nonnull(realpath("tests/python/faketorch", torch));
    ck_assert_ptr_nonnull(realpath("python", pkg));
    char cudart[PATH_MAX + 64], pypath[2 * PATH_MAX + 32];
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    /* The torch job's environment does not have the leakwatch package: the
     * attach brings its own. */
    snprintf(pypath, sizeof pypath, "PYTHONPATH=%s", !strcmp(mode, "package") ? pkg : torch);
    job j;
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    snprintf(j.go, sizeof j.go, "%s/go", j.dir);
    snprintf(j.report, sizeof j.report, "%s/report.json", j.dir);
    char marker[PATH_MAX];
    snprintf(marker, sizeof marker, "%s/planted-ran", j.dir);
    if (planted) {
        char copy[PATH_MAX], pk[PATH_MAX], f[PATH_MAX + 32], code[PATH_MAX + 128];
        snprintf(copy, sizeof copy, "%s/attach_job.py", j.dir);
        char *text = lw_slurp_file(script);
        lw_write_text(copy, text);
        free(text);
        snprintf(script, sizeof script, "%s", copy);
        snprintf(pk, sizeof pk, "%s/leakwatch", j.dir);
        ck_assert_int_eq(mkdir(pk, 0755), 0);
        snprintf(code, sizeof code, "open('%s', 'w').write('ran')\n", marker);
        snprintf(f, sizeof f, "%s/__init__.py", pk);
        lw_write_text(f, code);
        snprintf(f, sizeof f, "%s/_torch.py", pk);
        lw_write_text(f, code);
    }
    /* The job runs until told to stop (ATTACH_STOP): the test detaches once
     * a live report has what it checks (the verdict, and the steps marked
     * once the attach's helper has hooked the optimizer or the package is
     * there), however slow the machine; a time-bound wait gave too few
     * marked steps, or a job that had ended, under load. */
    char stop[PATH_MAX + 16], stopenv[PATH_MAX + 32];
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    snprintf(stopenv, sizeof stopenv, "ATTACH_STOP=%s", stop);
    const char *args[] = {script, mode, "1000000", j.go, NULL};
    const char *env[] = {cudart, pypath, stopenv, NULL};
    j.pid = lw_spawn("/usr/bin/python3", args, env, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "%s", lw_slurp_file(j.out));
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "--set", "interval_ms=50", "-o", j.report, pid);
    ck_assert_msg(r.exit_code == 0, "attach: %s", r.err);
    lw_run_free(&r);
    go(&j);
    wait_live_state(&j, want_steps);
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %s", r.err);
    lw_run_free(&r);
    lw_write_text(stop, "stop");
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done ") && strstr(out, " steps"), "%s", out);
    free(out);
    lw_run rep;
    load_report(&rep, j.report);
    const char *source = lw_json_string(lw_json_path(rep.report, "growth.step_source"));
    ck_assert_ptr_nonnull(source);
    if (want_steps)
        ck_assert_msg(strcmp(source, "time") != 0 && rep_number(&rep, "growth.steps") >= 20,
                      "%s: step_source %s, %g steps", mode, source,
                      rep_number(&rep, "growth.steps"));
    else
        ck_assert_str_eq(source, "time");
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "verdict")), "leak");
    ck_assert_msg(lw_rep_site_named(&rep, "leak_attach_py") != NULL, "no Python site");
    lw_json_free(rep.report);
    ck_assert_msg(access(marker, F_OK) != 0, "the leakwatch package in the job's folder ran");
    lw_remove_dir(j.dir);
}

START_TEST(python_torch_job_gets_step_marks) {
    python_job("torch", 1);
}
END_TEST

START_TEST(python_package_job_gets_step_marks) {
    python_job("package", 1);
}
END_TEST

/* The attach's helper is this installation's, loaded by its path: a
 * leakwatch package in the job's folder (first on its sys.path) never runs. */
START_TEST(python_package_in_the_jobs_folder_is_not_imported) {
    python_job_in("torch", 1, 1);
}
END_TEST

/* The package imported after the attach, where the job's sys.path does not
 * have it: the attach's helper (loaded under a name of its own) answers
 * "import leakwatch", after Python's own finders. */
START_TEST(python_package_imported_after_the_attach_gets_step_marks) {
    python_job("late", 1);
}
END_TEST

START_TEST(python_job_without_torch_uses_intervals) {
    python_job("plain", 0);
}
END_TEST

/* A job whose threads all compute or wait in epoll_wait (not restarted when
 * interrupted): no thread is borrowed; the attach says so and the job never
 * sees an EINTR. */
static void no_safe_thread(const char *prog, const char *want_out) {
    if (!can_attach()) return;
    const char *san = getenv("LW_ASAN_RT");
    if (san && strstr(san, "tsan")) {
        /* TSan's own background thread sleeps in nanosleep: a C library
         * thread, but calling anything intercepted on it crashes TSan. */
        printf("test_attach: %s skipped under TSan\n", prog);
        return;
    }
    job j;
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/tests/programs/%s", lw_build_dir(), prog);
    const char *args[] = {"2500", NULL};
    j.pid = lw_spawn(exe, args, NULL, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "%s", lw_slurp_file(j.out));
    usleep(100 * 1000);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--wait-ms", "500", pid, NULL, NULL, NULL);
    refused(&j, &r, 1, "no thread of process");
    ck_assert(!maps_have(j.pid, "libleakwatch"));
    lw_run_free(&r);
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, want_out), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}

START_TEST(no_thread_at_a_safe_point_is_refused) {
    no_safe_thread("rt_attach_busy", "interrupted 0 times");
}
END_TEST

/* A thread made by a bare clone(), sleeping: never borrowed (its thread
 * pointer is another thread's: libthread_db's tid check). */
START_TEST(bare_clone_thread_is_never_borrowed) {
    no_safe_thread("dl_attach_rawthread", "done");
}
END_TEST

START_TEST(ptrace_scope_messages_say_what_to_change) {
    char err[512];
    ck_assert_int_eq(lw_attach_scope_problem(0, 0, err, sizeof err), 0);
    ck_assert_int_eq(lw_attach_scope_problem(1, 1, err, sizeof err), 0);
    ck_assert_int_eq(lw_attach_scope_problem(1, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "sysctl -w kernel.yama.ptrace_scope=0") &&
                      strstr(err, "CAP_SYS_PTRACE"),
                  "%s", err);
    ck_assert_int_eq(lw_attach_scope_problem(2, 0, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "root") && strstr(err, "is 2"), "%s", err);
    ck_assert_int_eq(lw_attach_scope_problem(3, 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "reboot") && strstr(err, "leakwatch run"), "%s", err);
}
END_TEST

/* ---- an attach that can never hurt the job (issue 32) ---- */

/* Starts tests/programs/PROG ARGS... (its output in j->out, in j->dir, which
 * the caller made with lw_temp_dir) and waits for its "ready". */
static void start_prog(job *j, const char *prog, const char *const *args) {
    snprintf(j->out, sizeof j->out, "%s/out.txt", j->dir);
    snprintf(j->go, sizeof j->go, "%s/go", j->dir);
    snprintf(j->report, sizeof j->report, "%s/report.json", j->dir);
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/tests/programs/%s", lw_build_dir(), prog);
    j->pid = lw_spawn(exe, args, NULL, 0, j->out);
    ck_assert_msg(lw_wait_for_text(j->out, "ready", 20000), "%s never started: %s", prog,
                  lw_slurp_file(j->out));
}

/* A job that forks all the time, attached and detached 50 times. Two hangs
 * of the job and the command for good: the attach took the library's locks
 * in one order (patch_lock, then start_lock) and the fork handlers in the
 * other; and a thread borrowed while inside fork, waiting in a futex between
 * the fork handlers with leakwatch's start_lock held (its prepare handler
 * had returned, or tail-called pthread_mutex_lock: no frame of leakwatch's
 * on its stack), waited for the attach, which waited for start_lock (1 run
 * of 50 cycles in 3 to 8 hung; thread_inside_fork_is_never_borrowed is the
 * same, every time). */
START_TEST(fork_heavy_job_survives_attach_detach_cycles) {
    if (!can_attach()) return;
    job j;
    char stop[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {stop, NULL};
    start_prog(&j, "rt_attach_fork", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    for (int i = 0; i < 50; i++) {
        lw_run r;
        attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: attach exit %d signal %d: %s", i, r.exit_code,
                      r.signal, r.err);
        lw_run_free(&r);
        attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: detach exit %d signal %d: %s", i, r.exit_code,
                      r.signal, r.err);
        lw_run_free(&r);
    }
    lw_write_text(stop, "stop");
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done, ") && !strstr(out, "done, 0 forks"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

/* A thread held inside fork (the job's own prepare handler waits for a
 * mutex, after leakwatch's handlers took start_lock and the others) is
 * never borrowed: the attach is refused for want of a thread (it hung for
 * good, the command and the job), and succeeds once the fork is done. */
START_TEST(thread_inside_fork_is_never_borrowed) {
    if (!can_attach()) return;
    job j;
    char file[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    const char *args[] = {j.dir, NULL};
    start_prog(&j, "rt_attach_forkgate", args);
    ck_assert_msg(lw_wait_for_text(j.out, "forker ", 20000), "%s", lw_slurp_file(j.out));
    char *out = lw_slurp_file(j.out);
    pid_t forker = (pid_t)strtol(strstr(out, "forker ") + 7, NULL, 10);
    free(out);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    /* Once attached: leakwatch's fork handlers run before the job's. */
    lw_run r;
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    snprintf(file, sizeof file, "%s/fork", j.dir);
    lw_write_text(file, "fork");
    long nr = -1;
    for (int i = 0; i < 20000 && nr != SYS_futex; i += 5) {
        nr = lw_thread_syscall(j.pid, forker);
        if (nr != SYS_futex) usleep(5000);
    }
    ck_assert_msg(nr == SYS_futex, "the forker never waited in its fork handler (%ld)", nr);
    attach_cli(&r, "--wait-ms", "500", "-q", "-o", j.report, pid);
    refused(&j, &r, 1, "no thread of process");
    lw_run_free(&r);
    snprintf(file, sizeof file, "%s/release", j.dir);
    lw_write_text(file, "release");
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach after the fork: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach after the fork: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    snprintf(file, sizeof file, "%s/stop", j.dir);
    lw_write_text(file, "stop");
    out = finish_job(&j);
    ck_assert_msg(strstr(out, "done, 1 forks"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

/* A line of /proc/PID[/task/TID]/status ("SigCgt:" ...), malloc'd. */
static char *status_line(pid_t pid, pid_t tid, const char *key) {
    char p[96];
    if (tid)
        snprintf(p, sizeof p, "/proc/%ld/task/%ld/status", (long)pid, (long)tid);
    else
        snprintf(p, sizeof p, "/proc/%ld/status", (long)pid);
    char *text = lw_slurp_file(p);
    const char *at = strstr(text, key);
    char *line = strndup(at ? at : "", at ? strcspn(at, "\n") : 0);
    free(text);
    return line;
}

/* The job's SIGSEGV disposition, and the borrowed thread's mask, are as
 * before the attach: the injected calls returned by faulting at address 0,
 * and the kernel resets a blocked or ignored SIGSEGV that faults to its
 * default (and unblocks it). */
static void sigsegv_state_kept(const char *mode) {
    if (!can_attach()) return;
    job j;
    char stop[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {mode, stop, NULL};
    start_prog(&j, "rt_attach_sigstate", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    const char *keys[] = {"SigCgt:", "SigIgn:", "SigBlk:"};
    char *before[3], *after[3];
    for (int k = 0; k < 3; k++)
        before[k] = status_line(j.pid, k == 2 ? j.pid : 0, keys[k]);
    lw_run r;
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    for (int k = 0; k < 3; k++) {
        after[k] = status_line(j.pid, k == 2 ? j.pid : 0, keys[k]);
        ck_assert_msg(before[k][0] && !strcmp(before[k], after[k]), "%s: before '%s', after '%s'",
                      mode, before[k], after[k]);
        free(before[k]);
        free(after[k]);
    }
    lw_write_text(stop, "stop");
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}

START_TEST(sigsegv_handler_blocked_in_the_borrowed_thread_is_kept) {
    sigsegv_state_kept("handler");
}
END_TEST

START_TEST(ignored_sigsegv_is_kept) {
    sigsegv_state_kept("ignore");
}
END_TEST

START_TEST(sigsegv_blocked_in_the_borrowed_thread_stays_blocked) {
    sigsegv_state_kept("blocked");
}
END_TEST

/* SIGTERM (as timeout sends it) stops an attach that waits for a thread it
 * can borrow: the command used to block it for as long as it waited. The
 * job is left as it was. */
START_TEST(sigterm_stops_a_waiting_attach) {
    if (!can_attach()) return;
    job j;
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    char exe[PATH_MAX], pid[32], out[160];
    snprintf(exe, sizeof exe, "%s/tests/programs/rt_attach_busy", lw_build_dir());
    const char *args[] = {"4000", NULL};
    j.pid = lw_spawn(exe, args, NULL, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "%s", lw_slurp_file(j.out));
    pid_text(j.pid, pid, sizeof pid);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    const char *a_args[] = {"attach", "--wait-ms", "600000", pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), a_args, NULL, 0, out);
    /* It waits for a thread that never comes. SIGTERM once the command
     * catches it (a fixed pause raced the command's start on a loaded
     * machine: the signal's default action killed it). */
    for (int i = 0; i < 2000; i++) {
        char *cgt = status_line(a, 0, "SigCgt:");
        const char *hex = strchr(cgt, ':');
        unsigned long long mask = hex ? strtoull(hex + 1, NULL, 16) : 0;
        free(cgt);
        if (mask & (1ull << (SIGTERM - 1))) break;
        usleep(10 * 1000);
    }
    usleep(200 * 1000);
    kill(a, SIGTERM);
    int st = 0;
    if (lw_wait_pid(a, 30000, &st) != 0) {
        kill(a, SIGKILL);
        waitpid(a, &st, 0);
        ck_abort_msg("SIGTERM did not stop leakwatch attach: %s", lw_slurp_file(out));
    }
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(text, "interrupted"),
                  "status 0x%x: %s", st, text);
    free(text);
    ck_assert(!maps_have(j.pid, "libleakwatch"));
    char *jo = finish_job(&j);
    ck_assert_msg(strstr(jo, "interrupted 0 times"), "%s", jo);
    free(jo);
    lw_remove_dir(j.dir);
}
END_TEST

/* Starts prog (its one argument: a file whose appearance stops it), attaches
 * and detaches n times (each must succeed), stops it and returns what it
 * printed (to free). */
static char *cycles_then_stop(const char *prog, int n) {
    job j;
    char stop[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {stop, NULL};
    start_prog(&j, prog, args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    for (int i = 0; i < n; i++) {
        lw_run r;
        attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: attach %d: %s", i, r.exit_code, r.err);
        lw_run_free(&r);
        attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: detach %d: %s", i, r.exit_code, r.err);
        lw_run_free(&r);
    }
    lw_write_text(stop, "stop");
    char *out = finish_job(&j);
    lw_remove_dir(j.dir);
    return out;
}

/* Stacks the program placed next to each other without a guard page: the
 * bytes the attach saves below the borrowed thread's stack pointer and
 * writes back at the end stay within that thread's own stack (256 KiB were
 * written back whatever lay there: the neighbour's live stack). */
START_TEST(adjacent_stacks_of_other_threads_are_not_written_back) {
    if (!can_attach()) return;
    char *out = cycles_then_stop("rt_attach_adjstack", 20);
    ck_assert_msg(strstr(out, "reverted 0 times"), "%s", out);
    free(out);
}
END_TEST

/* An attach that saw no allocation says so: "nothing_seen", with the
 * reason and what to do, never "no_leak" (a flat floor of nothing); and a
 * gate with --fail-on-leak does not pass it (issue 26, item 3). */
START_TEST(an_attach_that_saw_nothing_says_nothing_seen) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_attach", "20", NULL, 0, 0); /* waits for go: allocates nothing */
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "--set", "interval_ms=20", "-o", j.report, pid);
    ck_assert_msg(r.exit_code == 0, "attach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    usleep(1000 * 1000); /* some intervals, all of nothing */
    attach_cli(&r, "--detach", pid, NULL, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.out, "nothing seen") && !strstr(r.out, "no leak"), "detach: %s", r.out);
    lw_run_free(&r);
    go(&j);
    free(finish_job(&j));

    lw_run rep;
    load_report(&rep, j.report);
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "verdict")), "nothing_seen");
    const char *greason = lw_json_string(lw_json_path(rep.report, "growth.reason"));
    ck_assert_msg(greason && strstr(greason, "since the attach") &&
                      strstr(greason, "leakwatch run"),
                  "growth.reason %s", greason ? greason : "(none)");
    lw_json_free(rep.report);

    const char *plain[] = {"report", j.report, NULL};
    lw_cli_run(&r, plain, NULL);
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, "nothing seen") && !strstr(r.out, "no leak"),
                  "report: %d: %s%s", r.exit_code, r.out, r.err);
    lw_run_free(&r);
    const char *gate[] = {"report", "--fail-on-leak", j.report, NULL};
    lw_cli_run(&r, gate, NULL);
    ck_assert_msg(r.exit_code == 1 && strstr(r.err, "saw no allocation"),
                  "report --fail-on-leak: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    lw_remove_dir(j.dir);
}
END_TEST

/* The state letter of /proc/PID/stat. */
static char proc_state(pid_t pid) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
    char *text = lw_slurp_file(p);
    const char *rp = strrchr(text, ')');
    char c = rp && rp[1] == ' ' ? rp[2] : '?';
    free(text);
    return c;
}

/* SIGSTOP and SIGCONT pairs all through attaches: the job is never left
 * stopped (a stop held back during the attach was sent again after the
 * SIGCONT that had ended it). */
START_TEST(stop_and_cont_during_an_attach_leave_the_job_running) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_attach", "100000", NULL, 1, 0);
    char pid[32], out[160];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    int stopped = 0, attached = 0;
    for (int i = 0; i < 20 && !stopped; i++) {
        const char *args[] = {"attach", "--background", "-q", "-o", j.report, pid, NULL};
        pid_t a = lw_spawn(lw_cli_exe(), args, NULL, 0, out);
        int st = 0;
        while (waitpid(a, &st, WNOHANG) == 0) {
            kill(j.pid, SIGSTOP);
            usleep(100);
            kill(j.pid, SIGCONT);
            usleep(100);
        }
        /* The last signal was a SIGCONT: the job runs, unless the attach
         * stops it again afterwards. */
        for (int k = 0; k < 50 && !stopped; k++) {
            stopped = proc_state(j.pid) == 'T';
            usleep(2000);
        }
        kill(j.pid, SIGCONT);
        ck_assert_msg(!stopped, "cycle %d: the attach left the job stopped", i);
        /* An attach may also give up (no thread at a safe point while the
         * job was stopped): the job is left as it was either way. */
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            char *text = lw_slurp_file(out);
            printf("test_attach: stop/cont cycle %d: attach status 0x%x: %s", i, st, text);
            free(text);
            continue;
        }
        attached++;
        lw_run r;
        attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: detach %d: %s", i, r.exit_code, r.err);
        lw_run_free(&r);
    }
    ck_assert_msg(attached > 0, "no attach succeeded");
    kill(j.pid, SIGKILL);
    waitpid(j.pid, NULL, 0);
    lw_remove_dir(j.dir);
}
END_TEST

/* leakwatch attach killed (kill -9) at each point of an injection: the job
 * goes on and finishes as it would have. The calls returned to the system
 * call instruction the borrowed thread was stopped after, and only the
 * command could put the thread back: killed while the thread ran dlopen, or
 * between two calls, the thread went on with the calls' registers and stack
 * pointer and the job crashed (a return into its own code with a stack
 * pointer 300 KiB too low). Now every call returns to a stub that puts the
 * thread back on its own (rt_sigreturn with its registers). The command
 * kills itself at each point (LEAKWATCH_TEST_ATTACH_DIE_AT), which is what
 * kill -9 from outside does at that moment. */
START_TEST(a_command_killed_mid_injection_leaves_the_job_running) {
    if (!can_attach()) return;
    static const char *const points[] = {"call:mmap",
                                         "return:mmap",
                                         "skipped:mmap",
                                         "call:dlopen",
                                         "return:dlopen",
                                         "skipped:dlopen",
                                         "call:dlsym",
                                         "call:leakwatch__attach",
                                         "return:leakwatch__attach",
                                         "skipped:leakwatch__attach",
                                         "call:munmap",
                                         "restore:"};
    char *ref = reference_done("rt_attach", "150", NULL);
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        job j;
        /* It holds after 100 steps until the attach has died: the attach
         * reaches its point while the job runs, however slow the machine. */
        start_job_held(&j, "rt_attach", "150", NULL, 1, 0, 100);
        char pid[32], out[160], env_kill[96];
        pid_text(j.pid, pid, sizeof pid);
        snprintf(out, sizeof out, "%s/attach.txt", j.dir);
        snprintf(env_kill, sizeof env_kill, "LEAKWATCH_TEST_ATTACH_DIE_AT=%s", points[i]);
        const char *env[] = {env_kill, NULL};
        const char *args[] = {"attach", "--background", "-q", "-o", j.report, pid, NULL};
        pid_t a = lw_spawn(lw_cli_exe(), args, env, 0, out);
        int st = 0;
        if (lw_wait_pid(a, 60000, &st) != 0) {
            kill(a, SIGKILL);
            waitpid(a, &st, 0);
            ck_abort_msg("%s: the attach did not end: %s", points[i], lw_slurp_file(out));
        }
        /* The point was reached (a test that kills nothing proves nothing). */
        ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: attach status 0x%x: %s",
                      points[i], st, lw_slurp_file(out));
        resume(&j);
        char *jo = finish_job(&j);
        char *done = done_line(jo);
        ck_assert_msg(!strcmp(done, ref), "%s: '%s'\nnever attached: '%s'", points[i], done, ref);
        free(done);
        free(jo);
        lw_remove_dir(j.dir);
    }
    free(ref);
}
END_TEST

/* A thread borrowed from a recv on a socket with a receive timeout goes on
 * waiting: the kernel ends such a wait with EINTR, not a restart, when it is
 * interrupted (the attach's PTRACE_INTERRUPT is), and the job's recv failed
 * with EINTR once per attach and detach (issue 32, item 6). */
START_TEST(recv_with_a_timeout_is_not_interrupted) {
    if (!can_attach()) return;
    char *out = cycles_then_stop("rt_attach_recv", 5);
    ck_assert_msg(strstr(out, "recv interrupted 0 times (waited)"), "%s", out);
    free(out);
}
END_TEST

/* A thread whose stack holds words that point into the dynamic linker's
 * code without being return addresses (a pointer to one of its functions
 * in a local; stale return addresses of the lazy binding under a large
 * frame left unwritten) is borrowed: what it is inside is told by its call
 * chain. Every word of the stack was taken for a return address, and the
 * thread for one inside the dynamic linker, for good: the attach refused
 * that job ("no thread ... can be borrowed safely"), and under ASan every
 * job waiting in recv (its interceptor's frame is such a frame). */
START_TEST(stale_linker_addresses_on_the_stack_do_not_refuse_a_thread) {
    if (!can_attach()) return;
    char *out = cycles_then_stop("rt_attach_ldword", 3);
    ck_assert_msg(strstr(out, "done, kept a linker word"), "%s", out);
    free(out);
}
END_TEST

/* A thread inside the dynamic linker is still never borrowed, told by its
 * call chain: here an IFUNC resolver of the program's that the dynamic
 * linker calls while it relocates the program waits in nanosleep (the
 * program counter in the program's code, the dynamic linker's frames live
 * above it). The attach is refused for want of a thread, and succeeds once
 * main runs. */
START_TEST(a_thread_inside_the_dynamic_linker_is_never_borrowed) {
    if (!can_attach()) return;
    job j;
    char gate[160], stop[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(gate, sizeof gate, "%s/gate", j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {gate, stop, NULL};
    start_prog(&j, "rt_attach_ifunc", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--wait-ms", "500", "-q", "-o", j.report, pid);
    refused(&j, &r, 1, "no thread of process");
    lw_run_free(&r);
    lw_write_text(gate, "go");
    ck_assert_msg(lw_wait_for_text(j.out, "main", 20000), "%s", lw_slurp_file(j.out));
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    lw_write_text(stop, "stop");
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

/* A job the attach refuses for a cause of its own names that cause: traced
 * by another tracer (it said "not permitted ... undumpable"), stopped (it
 * waited, then said no thread could be borrowed "right now"). The job goes
 * on untouched. */
START_TEST(refusals_name_the_right_cause) {
    if (!can_attach()) return;
    job j;
    char stop[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {stop, NULL};
    start_prog(&j, "rt_attach_recv", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;

    /* Traced by someone else (as strace or gdb would). */
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t tracer = fork();
    ck_assert_int_ge(tracer, 0);
    if (tracer == 0) {
        char ok = ptrace(PTRACE_SEIZE, j.pid, 0, 0) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    char ok = 0;
    ck_assert_int_eq(read(ready[0], &ok, 1), 1);
    close(ready[0]);
    close(ready[1]);
    ck_assert_msg(ok == 'y', "the test's tracer could not trace the job");
    attach_cli(&r, "--wait-ms", "500", "-o", j.report, pid, NULL);
    refused(&j, &r, 1, "is being traced by process");
    lw_run_free(&r);
    kill(tracer, SIGKILL);
    waitpid(tracer, NULL, 0);

    /* Stopped. */
    kill(j.pid, SIGSTOP);
    for (int i = 0; i < 2000 && proc_state(j.pid) != 'T'; i++)
        usleep(1000);
    attach_cli(&r, "--wait-ms", "500", "-o", j.report, pid, NULL);
    refused(&j, &r, 1, "is stopped");
    lw_run_free(&r);
    kill(j.pid, SIGCONT);
    ck_assert(!maps_have(j.pid, "libleakwatch"));

    lw_write_text(stop, "stop");
    /* (SIGSTOP itself ends a recv with a timeout with EINTR: not counted.) */
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* A process that is not dumpable (it dropped root's rights, or called
 * prctl(PR_SET_DUMPABLE, 0)), attached by its own user: the kernel lets only
 * root read its memory map or trace it. Refused as such (it said "has not
 * loaded CUDA": the map it could not read held nothing). Root only: the
 * test makes the job and the attach another user's. */
START_TEST(a_non_dumpable_process_is_refused_as_such) {
    if (!can_attach()) return;
    if (geteuid() != 0) {
        printf("test_attach: non-dumpable case skipped: it needs root\n");
        return;
    }
    job j;
    char stop[160], out[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    chmod(j.dir, 0777);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/tests/programs/rt_attach_recv", lw_build_dir());
    const char *args[] = {stop, NULL};
    const char *env[] = {"RT_ATTACH_BECOME=65534", NULL};
    j.pid = lw_spawn(exe, args, env, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "%s", lw_slurp_file(j.out));
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    pid_t c = fork();
    ck_assert_int_ge(c, 0);
    if (c == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd < 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(99);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(lw_cli_exe(), "leakwatch", "attach", "--wait-ms", "500", pid, (char *)NULL);
        _exit(98);
    }
    int st = 0;
    ck_assert_int_eq(lw_wait_pid(c, 60000, &st), 0);
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(text, "not dumpable"),
                  "status 0x%x: %s", st, text);
    free(text);
    ck_assert_msg(kill(j.pid, 0) == 0, "the job is gone");
    lw_write_text(stop, "stop");
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* A file name from the job (another user's, maybe) reaches the terminal as
 * text: an escape sequence in the path of a mapped libleakwatch.so came out
 * raw in the refusal. */
START_TEST(paths_from_the_job_are_printed_escaped) {
    if (!can_attach()) return;
    job j;
    char stop[160], dir[200], lib[260];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    snprintf(dir, sizeof dir, "%s/\033[31mred\033]0;title\007", j.dir);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(lib, sizeof lib, "%s/libleakwatch.so", dir);
    lw_write_text(lib, "not a library, but a page of text to map\n");
    const char *args[] = {stop, lib, NULL};
    start_prog(&j, "rt_attach_recv", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "-o", j.report, pid, NULL, NULL, NULL);
    refused(&j, &r, 1, "another libleakwatch.so");
    ck_assert_msg(strstr(r.err, "red") && !strchr(r.err, '\033') && !strchr(r.err, '\007'),
                  "raw control characters in: %s", r.err);
    lw_run_free(&r);
    lw_write_text(stop, "stop");
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* attach -o with a line break: refused as a usage error (the settings
 * reach the library as NAME=VALUE lines, and the rest of the path was read
 * as a setting of its own). */
START_TEST(a_report_path_with_a_line_break_is_refused) {
    if (!can_attach()) return;
    job j;
    char stop[160], bad[300];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    const char *args[] = {stop, NULL};
    start_prog(&j, "rt_attach_recv", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(bad, sizeof bad, "%s/r.json\nLEAKWATCH_PROMETHEUS=%s/injected.prom", j.dir, j.dir);
    lw_run r;
    attach_cli(&r, "--background", "-o", bad, pid, NULL, NULL);
    ck_assert_msg(r.exit_code == 2 && strstr(r.err, "line break"), "exit %d: %s", r.exit_code,
                  r.err);
    lw_run_free(&r);
    ck_assert(!maps_have(j.pid, "libleakwatch"));
    lw_write_text(stop, "stop");
    free(finish_job(&j));
    lw_remove_dir(j.dir);
}
END_TEST

/* An attached job ended by SIGTERM (SLURM, Kubernetes, kill) leaves its
 * final report and removes its control socket, as one started under
 * leakwatch does, and still ends by SIGTERM; the attach set no handler for
 * it (no report, the socket left behind). */
START_TEST(an_attached_job_ended_by_sigterm_leaves_its_report) {
    if (!can_attach()) return;
    job j;
    start_job(&j, "rt_attach", "100000", NULL, 1, 0);
    char pid[32], sock[4200], err[512];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    ck_assert_msg(lw_sock_find(j.pid, sock, sizeof sock, err, sizeof err) == 0, "no socket: %s",
                  err);
    usleep(300 * 1000);
    kill(j.pid, SIGTERM);
    int st = 0;
    if (lw_wait_pid(j.pid, 60000, &st) != 0) {
        kill(j.pid, SIGKILL);
        waitpid(j.pid, &st, 0);
        ck_abort_msg("the job did not end on SIGTERM");
    }
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "job status 0x%x", st);
    ck_assert_msg(access(sock, F_OK) != 0, "the socket was left: %s", sock);
    lw_run rep;
    load_report(&rep, j.report);
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "reason")), "signal");
    ck_assert_str_eq(lw_json_string(lw_json_get(rep.report, "end_signal")), "SIGTERM");
    lw_json_free(rep.report);
    lw_remove_dir(j.dir);
}
END_TEST

/* Real-time signals queued all through attaches arrive in the order they
 * were sent. Those that came for the borrowed thread meanwhile are held and
 * sent again; they were sent once the thread ran again, when a newer one
 * could already have been taken (3 of 60,000 out of order). The command
 * waits a moment right after letting the thread go
 * (LEAKWATCH_TEST_ATTACH_PAUSE_AFTER_DETACH_MS), which made that every time:
 * the held ones are queued again before the thread is let go now. */
START_TEST(signals_held_during_an_attach_keep_their_order) {
    if (!can_attach()) return;
    job j;
    char stop[160], out[160];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    const char *args[] = {stop, NULL};
    start_prog(&j, "rt_attach_recv", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    int done_pipe[2];
    ck_assert_int_eq(pipe(done_pipe), 0);
    pid_t sender = fork();
    ck_assert_int_ge(sender, 0);
    if (sender == 0) {
        close(done_pipe[1]);
        fcntl(done_pipe[0], F_SETFL, O_NONBLOCK);
        char c;
        for (int i = 1; read(done_pipe[0], &c, 1) != 0; i++) {
            union sigval v = {.sival_int = i};
            while (sigqueue(j.pid, SIGRTMIN, v) != 0 && errno == EAGAIN)
                usleep(100);
            usleep(20);
        }
        _exit(0);
    }
    close(done_pipe[0]);
    const char *env[] = {"LEAKWATCH_TEST_ATTACH_PAUSE_AFTER_DETACH_MS=50", NULL};
    int held = 0;
    for (int i = 0; i < 30 && held < 3; i++) {
        const char *a_args[] = {"attach", "--background", "-o", j.report, pid, NULL};
        pid_t a = lw_spawn(lw_cli_exe(), a_args, env, 0, out);
        int st = 0;
        ck_assert_msg(lw_wait_pid(a, 60000, &st) == 0, "the attach did not end");
        char *text = lw_slurp_file(out);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cycle %d: 0x%x: %s", i, st, text);
        if (strstr(text, "arrived meanwhile")) held++;
        free(text);
        lw_run r;
        attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
        ck_assert_msg(r.exit_code == 0, "cycle %d: detach %d: %s", i, r.exit_code, r.err);
        lw_run_free(&r);
    }
    close(done_pipe[1]);
    waitpid(sender, NULL, 0);
    ck_assert_msg(held > 0, "no signal arrived during an attach");
    usleep(200 * 1000);
    lw_write_text(stop, "stop");
    char *o = finish_job(&j);
    ck_assert_msg(strstr(o, "out of order 0\n"), "%d attaches held signals: %s", held, o);
    free(o);
    lw_remove_dir(j.dir);
}
END_TEST

/* A flood of real-time signals for the thread an attach holds (issue 43,
 * item 9): each one stopped it once more on its way back into our calls, to
 * be held and sent again (347 ms stopped in the report). The command holds
 * the thread before its first call (LEAKWATCH_TEST_ATTACH_HOLD_DIR) while
 * 2,000 signals are queued for the job; they are held off by the thread's
 * mask now: the attach succeeds, it says how many signal stops the thread
 * met (before: one per signal), and the job gets every signal, in order,
 * with its own mask as it was (as the job reads it: /proc's changes while
 * it takes the 2,000 signals, one handler at a time). MODE "sigsuspend": the thread waits with a
 * temporary mask that lets the signals in, which the kernel puts back only
 * as the thread leaves. */
static void flood_while_held(const char *mode) {
    if (!can_attach()) return;
    const char *san = getenv("LW_ASAN_RT");
    if (san && strstr(san, "tsan")) {
        printf("test_attach: signal counting skipped under TSan (it merges pending signals)\n");
        return;
    }
    job j;
    char stop[160], hold[160], go[200], held[200], out[200], env0[220];
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(stop, sizeof stop, "%s/stop", j.dir);
    snprintf(hold, sizeof hold, "%s/hold", j.dir);
    snprintf(go, sizeof go, "%s/go", hold);
    snprintf(held, sizeof held, "%s/held", hold);
    snprintf(out, sizeof out, "%s/attach.txt", j.dir);
    ck_assert_int_eq(mkdir(hold, 0700), 0);
    ck_assert_int_eq(mkfifo(go, 0600), 0);
    const char *args[] = {mode, stop, NULL};
    start_prog(&j, "rt_attach_sigflood", args);
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    snprintf(env0, sizeof env0, "LEAKWATCH_TEST_ATTACH_HOLD_DIR=%s", hold);
    const char *env[] = {env0, NULL};
    const char *a_args[] = {"attach", "--background", "-o", j.report, pid, NULL};
    pid_t a = lw_spawn(lw_cli_exe(), a_args, env, 0, out);
    ck_assert_msg(lw_wait_for_text(held, "held ", 60000), "the attach never held a thread: %s",
                  lw_slurp_file(out));
    char *h = lw_slurp_file(held);
    ck_assert_msg(atol(h + 5) == (long)j.pid, "held thread: %s", h);
    free(h);
    enum { N = 2000 };
    for (int i = 1; i <= N; i++) {
        union sigval v = {.sival_int = i};
        ck_assert_msg(sigqueue(j.pid, SIGRTMIN, v) == 0, "sigqueue %d: %s", i, strerror(errno));
    }
    int fd = open(go, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    close(fd);
    int st = 0;
    ck_assert_msg(lw_wait_pid(a, 60000, &st) == 0, "the attach did not end");
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "attach 0x%x: %s", st, text);
    const char *at = strstr(text, " met ");
    int stops = at ? atoi(at + 5) : 0;
    ck_assert_msg(stops < 16, "%s: the held thread met %d signal stops for %d signals: %s", mode,
                  stops, N, text);
    /* (Those for a thread in sigsuspend wait for its temporary mask: its
     * own blocks them, it takes them once back in sigsuspend.) */
    ck_assert_msg(!strcmp(mode, "sigsuspend") || strstr(text, "arrived meanwhile"), "%s", text);
    free(text);
    lw_run r;
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    lw_write_text(stop, "stop");
    if (!strcmp(mode, "sigsuspend")) kill(j.pid, SIGUSR1);
    char *o = finish_job(&j);
    char want[96];
    snprintf(want, sizeof want, "done, signals %d, out of order 0, mask kept\n", N);
    ck_assert_msg(strstr(o, want), "%s: want '%s': %s", mode, want, o);
    free(o);
    lw_remove_dir(j.dir);
}

START_TEST(a_signal_flood_for_the_held_thread_does_not_stretch_its_stop) {
    flood_while_held("nanosleep");
}
END_TEST

START_TEST(a_signal_flood_for_a_thread_in_sigsuspend_keeps_its_mask) {
    flood_while_held("sigsuspend");
}
END_TEST

/* Detaching a Python job that holds the GIL (here in a C call made through
 * ctypes.PyDLL, which keeps it) does not wait for it: the helper's hook is
 * removed from a thread of the library's once the GIL is free. The detach
 * waited for the GIL (13 s in the report of the issue; snapshot, behind it
 * on the control socket, blocked and failed): here it returned only after
 * the job let go of the GIL 20 s later. */
START_TEST(detach_does_not_wait_for_the_gil) {
    if (!can_attach()) return;
    const char *rt = getenv("LW_ASAN_RT");
    if ((rt && strstr(rt, "tsan")) || access("/usr/bin/python3", X_OK) != 0) {
        printf("test_attach: GIL case skipped (no /usr/bin/python3, or TSan)\n");
        return;
    }
    job j;
    lw_temp_dir(j.dir, sizeof j.dir);
    snprintf(j.out, sizeof j.out, "%s/out.txt", j.dir);
    snprintf(j.go, sizeof j.go, "%s/go", j.dir);
    snprintf(j.report, sizeof j.report, "%s/report.json", j.dir);
    char script[200], holding[200], released[200], cudart[PATH_MAX + 64], code[2048];
    snprintf(script, sizeof script, "%s/gil_job.py", j.dir);
    snprintf(holding, sizeof holding, "%s/holding", j.dir);
    snprintf(released, sizeof released, "%s/released", j.dir);
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    snprintf(code, sizeof code,
             "import ctypes, os, sys, time\n"
             "rt = ctypes.CDLL(os.environ['LW_CUDART'])\n"
             "p = ctypes.c_void_p()\n"
             "rt.cudaMalloc(ctypes.byref(p), 4096)\n"
             "print('ready', os.getpid(), flush=True)\n"
             "while not os.path.exists('%s'):\n"
             "    time.sleep(0.01)\n"
             "open('%s', 'w').write('1')\n"
             "ctypes.PyDLL(None).sleep(20)  # the GIL is held through the call\n"
             "open('%s', 'w').write('1')\n"
             "print('done', flush=True)\n",
             j.go, holding, released);
    lw_write_text(script, code);
    const char *args[] = {script, NULL};
    const char *env[] = {cudart, NULL};
    j.pid = lw_spawn("/usr/bin/python3", args, env, 0, j.out);
    ck_assert_msg(lw_wait_for_text(j.out, "ready", 20000), "%s", lw_slurp_file(j.out));
    char pid[32];
    pid_text(j.pid, pid, sizeof pid);
    lw_run r;
    attach_cli(&r, "--background", "-q", "-o", j.report, pid, NULL);
    ck_assert_msg(r.exit_code == 0, "attach: %s", r.err);
    lw_run_free(&r);
    usleep(300 * 1000); /* the helper's thread takes the GIL once */
    go(&j);
    for (int i = 0; i < 2000 && access(holding, F_OK) != 0; i++)
        usleep(10 * 1000);
    ck_assert_msg(access(holding, F_OK) == 0, "%s", lw_slurp_file(j.out));
    usleep(200 * 1000); /* inside the call */
    attach_cli(&r, "--detach", "-q", pid, NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "detach: %d: %s", r.exit_code, r.err);
    lw_run_free(&r);
    ck_assert_msg(access(released, F_OK) != 0,
                  "the detach returned only after the job let go of the GIL");
    ck_assert_int_eq(access(j.report, F_OK), 0);
    char *out = finish_job(&j);
    ck_assert_msg(strstr(out, "done"), "%s", out);
    free(out);
    lw_remove_dir(j.dir);
}
END_TEST

int main(void) {
    snprintf(xdg, sizeof xdg, "/tmp/lwxdg.XXXXXX");
    if (!mkdtemp(xdg)) return 1;
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    Suite *s = suite_create("attach");
    TCase *tc = tcase_create("attach");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ptrace_scope_messages_say_what_to_change);
    tcase_add_test(tc, runtime_job_attached_diagnosed_detached);
    tcase_add_test(tc, driver_job_attached_diagnosed_detached);
    tcase_add_test(tc, rtld_local_module_attached_diagnosed_detached);
    tcase_add_test(tc, module_loaded_after_the_attach_is_hooked);
    tcase_add_test(tc, tail_calling_module_attached_diagnosed_detached);
    tcase_add_test(tc, static_runtime_attached_before_its_start);
    tcase_add_test(tc, earlier_allocations_and_a_second_session);
    tcase_add_test(tc, ctrl_c_of_a_foreground_attach_detaches);
    tcase_add_test(tc, the_end_of_a_foreground_attach_names_the_real_file);
    tcase_add_test(tc, a_foreground_attach_prints_the_live_line);
    tcase_add_test(tc, the_attach_recipe_on_the_stand_ins);
    tcase_add_test(tc, signals_during_the_attach_are_not_lost);
    tcase_add_test(tc, refusals_leave_the_job_untouched);
    tcase_add_test(tc, a_renamed_copy_already_watching_is_refused);
    tcase_add_test(tc, a_seccomp_filtered_job_is_refused);
    tcase_add_test(tc, a_thread_traced_since_the_checks_names_its_tracer);
    tcase_add_test(tc, no_thread_at_a_safe_point_is_refused);
    tcase_add_test(tc, bare_clone_thread_is_never_borrowed);
    tcase_add_test(tc, python_torch_job_gets_step_marks);
    tcase_add_test(tc, python_package_job_gets_step_marks);
    tcase_add_test(tc, python_package_imported_after_the_attach_gets_step_marks);
    tcase_add_test(tc, python_job_without_torch_uses_intervals);
    suite_add_tcase(s, tc);
    /* CK_RUN_CASE=safety runs these alone. */
    TCase *safety = tcase_create("safety");
    tcase_set_timeout(safety, 600);
    tcase_add_test(safety, fork_heavy_job_survives_attach_detach_cycles);
    tcase_add_test(safety, thread_inside_fork_is_never_borrowed);
    tcase_add_test(safety, sigsegv_handler_blocked_in_the_borrowed_thread_is_kept);
    tcase_add_test(safety, ignored_sigsegv_is_kept);
    tcase_add_test(safety, sigsegv_blocked_in_the_borrowed_thread_stays_blocked);
    tcase_add_test(safety, sigterm_stops_a_waiting_attach);
    tcase_add_test(safety, python_package_in_the_jobs_folder_is_not_imported);
    tcase_add_test(safety, adjacent_stacks_of_other_threads_are_not_written_back);
    tcase_add_test(safety, an_attach_that_saw_nothing_says_nothing_seen);
    suite_add_tcase(s, safety);
    safety = tcase_create("stopcont"); /* CK_RUN_CASE=stopcont */
    tcase_set_timeout(safety, 600);
    tcase_add_test(safety, stop_and_cont_during_an_attach_leave_the_job_running);
    suite_add_tcase(s, safety);
    safety = tcase_create("killed"); /* CK_RUN_CASE=killed */
    tcase_set_timeout(safety, 600);
    tcase_add_test(safety, a_command_killed_mid_injection_leaves_the_job_running);
    suite_add_tcase(s, safety);
    safety = tcase_create("small"); /* CK_RUN_CASE=small: issue 32's item 6 */
    tcase_set_timeout(safety, 600);
    tcase_add_test(safety, recv_with_a_timeout_is_not_interrupted);
    tcase_add_test(safety, stale_linker_addresses_on_the_stack_do_not_refuse_a_thread);
    tcase_add_test(safety, a_thread_inside_the_dynamic_linker_is_never_borrowed);
    tcase_add_test(safety, refusals_name_the_right_cause);
    tcase_add_test(safety, a_non_dumpable_process_is_refused_as_such);
    tcase_add_test(safety, paths_from_the_job_are_printed_escaped);
    tcase_add_test(safety, a_report_path_with_a_line_break_is_refused);
    tcase_add_test(safety, an_attached_job_ended_by_sigterm_leaves_its_report);
    tcase_add_test(safety, signals_held_during_an_attach_keep_their_order);
    tcase_add_test(safety, a_signal_flood_for_the_held_thread_does_not_stretch_its_stop);
    tcase_add_test(safety, a_signal_flood_for_a_thread_in_sigsuspend_keeps_its_mask);
    tcase_add_test(safety, detach_does_not_wait_for_the_gil);
    suite_add_tcase(s, safety);
    int failed = lw_check_run(s);
    lw_remove_dir(xdg);
    return failed ? 1 : 0;
}
