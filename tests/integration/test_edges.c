/* SPDX-License-Identifier: Apache-2.0 */
/* The verdict at the edges of a run (issue 26): memory freed at teardown,
 * a fit decided only at the end, every way a Python job ends, and phases
 * without step marks inside a marked job. Programs: tests/programs/rt_edges.c,
 * rt_workload.c and tests/python/end_ways.py, on the CPU stand-ins. */
#include "../check_run.h"
#include "harness.h"
#include "harness_cli.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *str_at(const lw_run *r, const char *path) {
    const char *s = lw_json_string(lw_json_path(r->report, path));
    ck_assert_msg(s != NULL, "no string at %s", path);
    return s;
}

static double num_at(const lw_run *r, const char *path) {
    const lw_json *v = lw_json_path(r->report, path);
    ck_assert_msg(lw_json_type_of(v) == LW_JSON_NUMBER, "no number at %s", path);
    return lw_json_number(v, NAN);
}

static int bool_at(const lw_run *r, const char *path) {
    return lw_json_bool(lw_json_path(r->report, path), -1);
}

/* A job that leaks for 600 steps without marks (time intervals of 20 ms),
 * frees everything and works 250 ms more: the release is the teardown, not
 * the end of the growth. The verdict stays a leak, --fail-on-leak fails the
 * run, the summary still names the place and says the memory went back. */
START_TEST(release_at_teardown_keeps_the_leak_unmarked) {
    lw_run r;
    const char *args[] = {"run",     "--fail-on-leak",
                          "--",      lw_program_path("rt_edges"),
                          "release", "600",
                          "4096",    "2000",
                          "0",       "250",
                          NULL};
    /* Time intervals measure growth per second: on the wall clock a loaded
     * machine that stalls the job or the sampler changes the growth per
     * interval. The job's pauses move the test clock instead
     * (LEAKWATCH_TEST_CLOCK), so every run sees the same intervals. */
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=20", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_cli_run(&r, args, env);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "time");
    ck_assert_msg(!strcmp(str_at(&r, "verdict"), "leak"), "verdict %s\n%s", str_at(&r, "verdict"),
                  r.err);
    ck_assert_int_eq(r.exit_code, 3);
    /* The same intervals in every run: 600 steps of 2 ms and 250 ms after
     * the release, in 20 ms intervals; 4 KiB kept each 2 ms. */
    ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 72);
    ck_assert_double_eq_tol(num_at(&r, "growth.bytes_per_second"), 2048000, 1e-3);
    ck_assert_int_eq(bool_at(&r, "growth.released_at_exit"), 1);
    ck_assert(num_at(&r, "growth.released_at_exit_bytes") > 0);
    ck_assert_msg(strstr(r.err, "leakwatch: LEAK in rt_edges.c:"), "stderr: %s", r.err);
    ck_assert_msg(strstr(r.err, "released at exit"), "stderr: %s", r.err);
    const lw_json *site = lw_rep_site_named(&r, "leak_kept");
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* The same with step marks: the release comes after the last mark. */
START_TEST(release_at_teardown_keeps_the_place_marked) {
    lw_run r;
    const char *args[] = {"run",     "--fail-on-leak",
                          "--",      lw_program_path("rt_edges"),
                          "release", "300",
                          "4096",    "1000",
                          "1",       "250",
                          NULL};
    /* On the test clock: on the wall clock a loaded machine stretched the
     * teardown's 250 ms over few enough steps' worth of pace that a phase
     * without marks could take the tail first (seen once under load). */
    const char *env[] = {"LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_cli_run(&r, args, env);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "marker");
    ck_assert_str_eq(str_at(&r, "verdict"), "leak");
    ck_assert_int_eq(r.exit_code, 3);
    /* The exit summary's answer (the live warning, "[as of step N]", aside)
     * names the place. */
    const char *line = r.err, *answer = NULL;
    while ((line = strstr(line, "leakwatch: LEAK")) != NULL) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        const char *as_of = strstr(line, "[as of step");
        if (!as_of || as_of > end) answer = line;
        line = end;
    }
    ck_assert_msg(answer && !strncmp(answer, "leakwatch: LEAK in rt_edges.c:", 30), "stderr: %s",
                  r.err);
    ck_assert_msg(strstr(r.err, "released at exit"), "stderr: %s", r.err);
    ck_assert_int_eq(bool_at(&r, "growth.released_at_exit"), 1);
    ck_assert_double_eq_tol(num_at(&r, "growth.bytes_per_step"), 4096, 1e-6);
    const lw_json *site = lw_rep_site_named(&r, "leak_kept");
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* 3,000 fast marked steps, a 512 B/step leak behind a long warm-up ramp:
 * the fit at the end is decided (CI [512, 512]) and is reported so, not
 * "confirming (2 of 3 evaluations in a row)". */
START_TEST(decided_fit_is_decided_at_exit) {
    lw_run r;
    const char *args[] = {"--steps", "3000", "--leak", "512", "--warmup", "16M:2200", NULL};
    lw_run_prog(&r, 1, "rt_workload", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 3000);
    ck_assert_msg(!strcmp(str_at(&r, "verdict"), "leak"), "verdict %s: %s", str_at(&r, "verdict"),
                  str_at(&r, "growth.reason"));
    ck_assert_double_eq_tol(num_at(&r, "growth.bytes_per_step"), 512, 1e-6);
    ck_assert(num_at(&r, "growth.slope_ci[0]") <= 512 && num_at(&r, "growth.slope_ci[1]") >= 512);
    ck_assert_int_eq(bool_at(&r, "growth.released_at_exit"), 0);
    const lw_json *site = lw_rep_site_named(&r, "leak_site");
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* A cache that grows by 4 KiB per step and is emptied every 100 steps (an
 * epoch's local list of losses): no leak, and the summary and report say
 * what it is, with the peak it reaches at a cycle's end. */
START_TEST(growth_released_at_each_cycle_end_is_described) {
    lw_run r;
    /* On the test clock, each step 1 ms of the run's time: on the wall
     * clock a stall of the job under load (8 mean steps without a mark)
     * opened a phase without marks whose interval point took the floor of
     * the step under way, and one cycle measured 47 steps (.ci/run,
     * period 93.375). */
    const char *clock[] = {"LEAKWATCH_TEST_CLOCK=1", NULL};
    const char *args[] = {"--steps",        "1000",      "--base", "64M", "--sawtooth",
                          "400K:period100", "--step-ms", "1",      NULL};
    lw_run_prog(&r, 1, "rt_workload", args, clock);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(str_at(&r, "verdict"), "no_leak");
    ck_assert_int_eq(lw_rep_int(&r, "growth.unmarked_intervals"), 0);
    ck_assert_int_eq(lw_rep_int(&r, "growth.cycles.count"), 8);
    ck_assert_double_eq_tol(num_at(&r, "growth.cycles.period_steps"), 100, 1e-9);
    ck_assert_double_eq_tol(num_at(&r, "growth.cycles.rise_bytes_per_step"), 4096, 1e-9);
    ck_assert_double_eq_tol(num_at(&r, "growth.cycles.peak_bytes"), 99 * 4096, 1e-9);
    ck_assert_double_eq_tol(num_at(&r, "growth.cycles.last_release_step"), 901, 1e-9);
    ck_assert(num_at(&r, "growth.cycles.floor_bytes") >= 64 << 20);
    ck_assert_str_eq(str_at(&r, "growth.cycles.signal"), "live_bytes");
    ck_assert_msg(strstr(r.err, "leakwatch: no leak across cycles: memory grows by +4.00 KiB/step "
                                "within each cycle of ~100 steps and is released at its end (8 "
                                "cycles); it peaks at 396.0 KiB above the floor"),
                  "stderr: %s", r.err);
    lw_run_free(&r);
    /* A steady leak has no cycles, and a flat run none either. */
    const char *leak_args[] = {"--steps", "1000",      "--base", "64M", "--leak",
                               "4096",    "--step-ms", "1",      NULL};
    lw_run_prog(&r, 1, "rt_workload", leak_args, clock);
    RUN_OK(&r);
    ck_assert_str_eq(str_at(&r, "verdict"), "leak");
    ck_assert_int_eq(lw_json_type_of(lw_json_path(r.report, "growth.cycles")), LW_JSON_NULL);
    ck_assert_ptr_null(strstr(r.err, "across cycles"));
    lw_run_free(&r);
}
END_TEST

/* A marked job whose last phase makes no step mark (a validation loop: no
 * optimizer step) and keeps 64 KiB per batch: once no mark has come for a
 * while, time intervals (20 ms) give the verdict, which says its unit. */
static void unmarked_phase(const char *leak, lw_run *r) {
    const char *args[] = {"unmarked", "200", "600", leak, "2000", NULL};
    /* The job's 2 ms move the test clock: the same run on any machine. */
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=20", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_prog(r, 1, "rt_edges", args, env);
    RUN_OK(r);
    ck_assert_msg(r->report != NULL, "no report; stderr: %s", r->err);
    ck_assert(num_at(r, "growth.unmarked_intervals") > 0);
}

START_TEST(unmarked_phase_in_a_marked_job_gets_a_verdict) {
    lw_run r;
    unmarked_phase("65536", &r);
    ck_assert_msg(!strcmp(str_at(&r, "verdict"), "leak"), "verdict %s: %s\n%s",
                  str_at(&r, "verdict"), str_at(&r, "growth.reason"), r.err);
    ck_assert_int_eq(bool_at(&r, "growth.verdict_from_unmarked_phases"), 1);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "time");
    ck_assert(num_at(&r, "growth.bytes_per_step") > 0);
    ck_assert_msg(strstr(r.err, "leakwatch: LEAK in rt_edges.c:") && strstr(r.err, "/interval"),
                  "stderr: %s", r.err);
    const lw_json *site = lw_rep_site_named(&r, "leak_unmarked");
    ck_assert_ptr_nonnull(site);
    ck_assert_int_eq(lw_json_bool(lw_json_get(site, "leak"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* The same phase without a leak: intervals are closed, no leak is called. */
START_TEST(flat_unmarked_phase_is_no_leak) {
    lw_run r;
    unmarked_phase("0", &r);
    ck_assert_str_ne(str_at(&r, "verdict"), "leak");
    ck_assert_int_eq(bool_at(&r, "growth.verdict_from_unmarked_phases"), 0);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "marker");
    lw_run_free(&r);
}
END_TEST

static int find_python(char *out, size_t n);
static int no_python(char *py, size_t n);

/* The line of a marker comment in a script. */
static int marker_line(const char *file, const char *marker) {
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    char buf[512];
    int line = 0, found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        line++;
        if (strstr(buf, marker)) found = line;
    }
    fclose(f);
    ck_assert_int_gt(found, 0);
    return found;
}

/* The Python side, on the stand-in torch: training marks steps through the
 * optimizer hook, then a long validation pass without torch.no_grad() keeps
 * every batch's graph and makes no optimizer step. Its growth is called, in
 * intervals, at the validation line (torch_seed.py validation-only, 400
 * batches 2 ms apart); the fixed version is clean. */
START_TEST(python_validation_without_steps_gets_a_verdict) {
    char py[PATH_MAX], script[PATH_MAX], fake[PATH_MAX], cudart[PATH_MAX + 64], path[PATH_MAX + 16];
    if (no_python(py, sizeof py)) return;
    ck_assert_ptr_nonnull(realpath("tests/python/torch_seed.py", script));
    ck_assert_ptr_nonnull(realpath("tests/python/faketorch", fake));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    snprintf(path, sizeof path, "PYTHONPATH=%s", fake);
    const char *env[] = {
        cudart,      path,         "LEAKWATCH_INTERVAL_MS=20", "PYTHONDONTWRITEBYTECODE=1",
        "STEPS=400", "SLEEP_MS=2", "LEAKWATCH_TEST_CLOCK=1",   NULL};
    lw_run r;
    /* The batches' 2 ms move the test clock (torch_seed.py's pause): the
     * same intervals on any machine. */
    const char *args[] = {script, "validation-only", NULL};
    lw_run_exe(&r, 1, py, args, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_msg(!strcmp(str_at(&r, "verdict"), "leak"), "verdict %s: %s\n%s",
                  str_at(&r, "verdict"), str_at(&r, "growth.reason"), r.err);
    ck_assert_int_eq(bool_at(&r, "growth.verdict_from_unmarked_phases"), 1);
    ck_assert_str_eq(str_at(&r, "growth.step_source"), "time");
    char want[64];
    snprintf(want, sizeof want, "torch_seed.py:%d", marker_line(script, "# LEAK-VALIDATION"));
    ck_assert_msg(!strncmp(str_at(&r, "sites[0].where.label"), want, strlen(want)),
                  "first site %s, want %s", str_at(&r, "sites[0].where.label"), want);
    lw_run_free(&r);
    const char *fixed[] = {script, "validation-only", "fixed", NULL};
    lw_run_exe(&r, 1, py, fixed, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(str_at(&r, "verdict"), "no_leak");
    ck_assert(num_at(&r, "growth.unmarked_intervals") > 0);
    lw_run_free(&r);
}
END_TEST

/* ---- every way a Python job ends ---- */

static int find_python(char *out, size_t n) {
    FILE *p = popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
    if (!p) return 0;
    int ok = fgets(out, (int)n, p) != NULL;
    pclose(p);
    if (ok) out[strcspn(out, "\n")] = '\0';
    return ok && out[0] == '/';
}

static int no_python(char *py, size_t n) {
    const char *rt = getenv("LW_ASAN_RT");
    if (rt && strstr(rt, "tsan")) {
        printf("test_edges: the Python endings are skipped under ThreadSanitizer\n");
        return 1;
    }
    if (!find_python(py, n)) {
        printf("test_edges: no python3; the Python endings are skipped\n");
        return 1;
    }
    return 0;
}

/* The job under `leakwatch run`, ending by itself. */
static void python_ends(const char *mode, int want_exit) {
    char py[PATH_MAX], script[PATH_MAX], cudart[PATH_MAX + 64];
    if (no_python(py, sizeof py)) return;
    ck_assert_ptr_nonnull(realpath("tests/python/end_ways.py", script));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    lw_run r;
    const char *args[] = {"run", "--", py, script, mode, NULL};
    const char *env[] = {cudart, NULL};
    lw_cli_run(&r, args, env);
    ck_assert_msg(r.exit_code == want_exit, "%s: exit %d, want %d\n%s", mode, r.exit_code,
                  want_exit, r.err);
    ck_assert_msg(lw_count_substr(r.err, "leakwatch: report: ") == 1, "%s: not one report line\n%s",
                  mode, r.err);
    ck_assert_msg(r.report != NULL, "%s: no report file\n%s", mode, r.err);
    ck_assert_str_eq(str_at(&r, "verdict"), "leak");
    lw_run_free(&r);
}

START_TEST(python_normal_exit_reports) {
    python_ends("normal", 0);
}
END_TEST

START_TEST(python_sys_exit_reports) {
    python_ends("sys_exit", 3);
}
END_TEST

START_TEST(python_uncaught_exception_reports) {
    python_ends("exception", 1);
}
END_TEST

/* The job under `leakwatch run`, stopped by sig sent to leakwatch run (which
 * forwards it, as Ctrl-C reaches both): the report and the summary are
 * written, and the job still ends by that signal (leakwatch run: 128 + sig). */
static void python_signalled(int sig) {
    char py[PATH_MAX], script[PATH_MAX], cudart[PATH_MAX + 64], dir[256], out[320], rep[320],
        repenv[340];
    if (no_python(py, sizeof py)) return;
    ck_assert_ptr_nonnull(realpath("tests/python/end_ways.py", script));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(rep, sizeof rep, "%s/report.json", dir);
    snprintf(repenv, sizeof repenv, "LEAKWATCH_REPORT=%s", rep);
    const char *args[] = {"run", "--", py, script, "interrupt", NULL};
    const char *env[] = {cudart, repenv, NULL};
    pid_t pid = lw_spawn(lw_cli_exe(), args, env, 0, out);
    ck_assert_msg(lw_wait_for_text(out, "ready", 60000), "the job never started: %s",
                  lw_slurp_file(out));
    kill(pid, sig);
    int st = 0;
    ck_assert_int_eq(lw_wait_pid(pid, 60000, &st), 0);
    char *text = lw_slurp_file(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sig, "status %#x, want exit %d\n%s", st,
                  128 + sig, text);
    ck_assert_msg(lw_count_substr(text, "leakwatch: report: ") == 1, "not one report line\n%s",
                  text);
    ck_assert_msg(strstr(text, "leakwatch: LEAK in end_ways.py:"), "no answer\n%s", text);
    char *json = lw_slurp_file(rep);
    ck_assert_msg(json[0] == '{' && strstr(json, "\"verdict\": \"leak\""), "report: %.200s", json);
    free(json);
    free(text);
    lw_remove_dir(dir);
}

START_TEST(python_ctrl_c_reports) {
    python_signalled(SIGINT);
}
END_TEST

START_TEST(python_sigterm_reports) {
    python_signalled(SIGTERM);
}
END_TEST

START_TEST(python_sighup_reports) {
    python_signalled(SIGHUP);
}
END_TEST

/* A Python process that never used CUDA says nothing, whatever ends it, and
 * still dies of SIGINT after an uncaught KeyboardInterrupt. */
START_TEST(python_without_cuda_stays_silent) {
    char py[PATH_MAX], script[PATH_MAX];
    if (no_python(py, sizeof py)) return;
    ck_assert_ptr_nonnull(realpath("tests/python/end_ways.py", script));
    lw_run r;
    const char *args[] = {script, "nocuda", NULL};
    lw_run_exe(&r, 1, py, args, NULL);
    ck_assert_msg(r.exit_code == -1 && r.signal == SIGINT, "exit %d signal %d\n%s", r.exit_code,
                  r.signal, r.err);
    ck_assert_msg(!strstr(r.err, "leakwatch"), "stderr: %s", r.err);
    ck_assert_ptr_null(r.report);
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("edges");
    TCase *tc = tcase_create("end_of_run");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, release_at_teardown_keeps_the_leak_unmarked);
    tcase_add_test(tc, release_at_teardown_keeps_the_place_marked);
    tcase_add_test(tc, decided_fit_is_decided_at_exit);
    tcase_add_test(tc, growth_released_at_each_cycle_end_is_described);
    tcase_add_test(tc, unmarked_phase_in_a_marked_job_gets_a_verdict);
    tcase_add_test(tc, flat_unmarked_phase_is_no_leak);
    tcase_add_test(tc, python_validation_without_steps_gets_a_verdict);
    tcase_add_test(tc, python_normal_exit_reports);
    tcase_add_test(tc, python_sys_exit_reports);
    tcase_add_test(tc, python_uncaught_exception_reports);
    tcase_add_test(tc, python_ctrl_c_reports);
    tcase_add_test(tc, python_sigterm_reports);
    tcase_add_test(tc, python_sighup_reports);
    tcase_add_test(tc, python_without_cuda_stays_silent);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
