/* SPDX-License-Identifier: Apache-2.0 */
/* The answer first, in every output: for the C and the Python demo the first
 * line of the live warning, the exit summary, the text report and the HTML
 * page's header names the user's line; stacks read as tracebacks without
 * libc's start-up or libffi frames; reports of two ranks are labelled by
 * rank and merged. */
#include "../check_run.h"
#include "harness_cli.h"

#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

/* The line of file holding text. */
static int line_of(const char *file, const char *text) {
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    char buf[1024];
    int n = 0;
    while (fgets(buf, sizeof buf, f)) {
        n++;
        if (strstr(buf, text)) {
            fclose(f);
            return n;
        }
    }
    fclose(f);
    ck_abort_msg("no '%s' in %s", text, file);
    return 0;
}

/* The first line of text starting with prefix (NULL: the first line). */
static void first_line(const char *text, const char *prefix, char *out, size_t n) {
    out[0] = '\0';
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!prefix || !strncmp(p, prefix, strlen(prefix))) {
            snprintf(out, n, "%.*s", (int)len, p);
            return;
        }
        p = end ? end + 1 : NULL;
    }
}

/* No line of a text stack is a frame of libc's start-up or of libffi: they
 * are folded ("... N frames ..."). */
static void no_noise_frames(const char *text) {
    static const char *const noise[] = {"__libc_start", "_start (",         "libffi.so.8+",
                                        "(libffi",      "_ctypes_callproc", NULL};
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        for (int i = 0; noise[i]; i++)
            ck_assert_msg(!strstr(line, noise[i]), "a noise frame shown: %s\nin:\n%s", line, text);
        p = end ? end + 1 : NULL;
    }
}

/* Checks every output of one run's report: text, full stacks, HTML, JSON. */
static void check_outputs(const char *report, const char *want) {
    char line[2048];
    lw_run r;
    const char *text[] = {"report", report, NULL};
    lw_cli_run(&r, text, NULL);
    RUN_OK(&r);
    first_line(r.out, NULL, line, sizeof line);
    ck_assert_msg(!strncmp(line, "LEAK in ", 8) && strstr(line, want), "text: %s", line);
    ck_assert_msg(strstr(r.out, "-->"), "no marked place in:\n%s", r.out);
    no_noise_frames(r.out);
    lw_run_free(&r);

    const char *full[] = {"report", "--full-stacks", report, NULL};
    lw_cli_run(&r, full, NULL);
    RUN_OK(&r);
    /* A Python site's native frames stop at the interpreter (docs/stacks.md):
     * there the folded frames are ctypes' and libffi's. */
    ck_assert_msg(strstr(r.out, "__libc_start_main") || strstr(r.out, "_ctypes_callproc"),
                  "--full-stacks hides frames:\n%s", r.out);
    lw_run_free(&r);

    char html[PATH_MAX];
    snprintf(html, sizeof html, "%s.html", report);
    const char *h[] = {"report", "--format", "html", "-o", html, report, NULL};
    lw_cli_run(&r, h, NULL);
    RUN_OK(&r);
    char *page = lw_slurp_file(html);
    const char *title = strstr(page, "<title>");
    ck_assert_ptr_nonnull(title);
    first_line(title, NULL, line, sizeof line);
    ck_assert_msg(strstr(line, want), "title: %s", line);
    const char *answer = strstr(page, "id=\"answer\"");
    ck_assert_msg(answer != NULL, "no answer header");
    ck_assert_msg(strstr(answer, want) && strstr(answer, want) < strstr(answer, "</header>"),
                  "header lacks %s", want);
    free(page);
    lw_run_free(&r);
}

/* Runs the C demo (STEPS steps of STEP_US) with the Prometheus textfile on
 * and env_extra set; want gets the place the demo's leak must be named by.
 * Returns the textfile's last text (to free); r keeps the run. */
static char *demo_with_prometheus(lw_run *r, const char *steps, const char *step_us,
                                  const char *env_extra, char *want, size_t n) {
    char exe[PATH_MAX], pdir[64], prom[160], promenv[200];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    int line = line_of("examples/train_loop.c", "cudaMalloc(&history[step]");
    snprintf(want, n, "train_loop.c:%d in keep_loss_history", line);
    lw_temp_dir(pdir, sizeof pdir);
    snprintf(prom, sizeof prom, "%s/job.prom", pdir);
    snprintf(promenv, sizeof promenv, "LEAKWATCH_PROMETHEUS=%s", prom);
    const char *args[] = {"--steps", steps, "--step-us", step_us, NULL};
    /* Under the test clock the steps' time is the run's, and the sampler
     * follows each step: the live warning falls due while the job runs. */
    const char *env[] = {promenv, "LEAKWATCH_TEST_CLOCK=1", env_extra, NULL};
    lw_run_exe(r, 1, exe, args, env);
    RUN_OK(r);
    ck_assert_ptr_nonnull(r->report);
    char *text = lw_slurp_file(prom);
    lw_remove_dir(pdir);
    return text;
}

START_TEST(c_demo_names_the_users_line_everywhere) {
    char want[128], label[200];
    lw_run r;
    /* Steps of 2 ms and an evaluation every 50 ms: the textfile is written
     * and the live warning falls due while it runs (about 24 evaluations),
     * however fast the machine (0.5 ms steps left 6, too few under a
     * sanitizer's timing for the confirmations a live warning waits for). */
    char *text =
        demo_with_prometheus(&r, "600", "2000", "LEAKWATCH_INTERVAL_MS=50", want, sizeof want);
    /* Prometheus names the same place, as a label. */
    snprintf(label, sizeof label, "leakwatch_leak_place_info{where=\"%s\"} 1", want);
    ck_assert_msg(strstr(text, label), "no '%s' in:\n%s", label, text);
    free(text);
    /* The live warning and the exit summary: their first lines. */
    char first[2048];
    first_line(r.err, "leakwatch: ", first, sizeof first);
    ck_assert_msg(strstr(first, want), "first line on stderr: %s\n%s", first, r.err);
    ck_assert_msg(strstr(r.err, "[as of step"), "the warning says its step:\n%s", r.err);
    ck_assert_msg(strstr(r.err, "leakwatch report "), "no next step:\n%s", r.err);
    /* The report stores it, for the site and for the answer. */
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "sites[0].where.label")), want);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "answer.where.label")), want);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "sites[0].where.why")), "user code");
    check_outputs(r.report_path, want);
    lw_run_free(&r);
}
END_TEST

static int find_python(char *out, size_t n) {
    FILE *p = popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
    if (!p) return 0;
    int ok = fgets(out, (int)n, p) != NULL;
    pclose(p);
    if (ok) out[strcspn(out, "\n")] = '\0';
    return ok && out[0] == '/';
}

START_TEST(python_demo_names_the_users_line_everywhere) {
    char py[PATH_MAX], script[PATH_MAX], cudart[PATH_MAX + 64], want[128];
    if (!find_python(py, sizeof py)) {
        printf("test_answer: no python3; the Python demo is skipped\n");
        return;
    }
    const char *rt = getenv("LW_ASAN_RT");
    if (rt && strstr(rt, "tsan")) {
        /* CPython is not built with ThreadSanitizer (as for test_python). */
        printf("test_answer: the Python demo is skipped under ThreadSanitizer\n");
        return;
    }
    ck_assert_ptr_nonnull(realpath("tests/python/leak_ctypes.py", script));
    snprintf(want, sizeof want, "leak_ctypes.py:%d in train", line_of(script, "# LEAK-LINE"));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    lw_run r;
    const char *args[] = {script, NULL};
    const char *env[] = {cudart, "STEPS=300", NULL};
    lw_run_exe(&r, 1, py, args, env);
    RUN_OK(&r);
    char first[2048];
    first_line(r.err, "leakwatch: ", first, sizeof first);
    ck_assert_msg(strstr(first, want), "first line on stderr: %s\n%s", first, r.err);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "sites[0].where.label")), want);
    check_outputs(r.report_path, want);
    lw_run_free(&r);
}
END_TEST

/* The exit summary is rendered from the report written at the same exit: its
 * answer line is the first line of `leakwatch report` on that report, even
 * while another thread of the job goes on marking steps and moving the free
 * memory during the exit (the summary read the state again, later). */
/* The live line says only a leak (never "no leak ... [as of step N]", a
 * warning that fell due before the verdict moved). */
static void live_lines_are_leaks(const char *err) {
    for (const char *p = err; (p = strstr(p, "[as of "));) {
        const char *bol = p;
        while (bol > err && bol[-1] != '\n')
            bol--;
        ck_assert_msg(!strncmp(bol, "leakwatch: LEAK in ", 19), "live line: %.200s", bol);
        p++;
    }
}

static void summary_is_the_reports_answer(const char *const *args) {
    lw_run r;
    lw_run_prog(&r, 1, "rt_edges", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    lw_run t;
    const char *text[] = {"report", r.report_path, NULL};
    lw_cli_run(&t, text, NULL);
    RUN_OK(&t);
    char first[2048], want[2100];
    first_line(t.out, NULL, first, sizeof first);
    snprintf(want, sizeof want, "leakwatch: %s\n", first);
    live_lines_are_leaks(r.err);
    ck_assert_msg(strstr(r.err, want),
                  "exit summary differs from the report's answer:\n%s\nstderr:\n%s", first, r.err);
    lw_run_free(&t);
    lw_run_free(&r);
}

/* A floor that rose once (512 MiB at step 150 of 300) and held level: no
 * leak, said as a rise that stopped, not "flat" (issue 42, item 7: "flat"
 * beside the window's fit, +1.83 MiB/step here), by the library at exit and
 * by leakwatch report alike, and no per-step growth in the report's text. */
START_TEST(one_time_rise_is_said_as_one) {
    const char *args[] = {"--steps",     "300", "--base",      "64M",
                          "--transient", "16M", "--staircase", "512M:1000:200:150",
                          NULL};
    lw_run r;
    lw_run_prog(&r, 1, "rt_workload", args, NULL);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(lw_json_string(lw_json_get(r.report, "verdict")), "no_leak");
    lw_run t;
    const char *text[] = {"report", r.report_path, NULL};
    lw_cli_run(&t, text, NULL);
    RUN_OK(&t);
    char first[2048], want[2100];
    first_line(t.out, NULL, first, sizeof first);
    snprintf(want, sizeof want, "leakwatch: %s\n", first);
    ck_assert_msg(strstr(first, "no leak: the floor of live memory rose, then held level (no "
                                "growth per step) over 300 steps"),
                  "%s", first);
    ck_assert_msg(strstr(r.err, want), "exit summary differs from the report's answer:\n%s\n%s",
                  first, r.err);
    ck_assert_msg(strstr(t.out, "  growth    none per step: the rise stopped") &&
                      !strstr(t.out, "is flat"),
                  "%s", t.out);
    lw_run_free(&t);
    lw_run_free(&r);
}
END_TEST

/* Runs the C demo (examples/train_loop) under the shim with args and env. */
static void run_demo(lw_run *r, const char *const *args, const char *const *env) {
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    lw_run_exe(r, 1, exe, args, env);
}

/* LEAKWATCH_STACKS=0 keeps one site for everything: every output names it
 * "all allocations" (there is no line to name), never "site 1". */
START_TEST(no_stacks_names_all_allocations) {
    lw_run r;
    const char *args[] = {"--steps", "300", NULL};
    const char *env[] = {"LEAKWATCH_STACKS=0", NULL};
    run_demo(&r, args, env);
    RUN_OK(&r);
    ck_assert_ptr_nonnull(r.report);
    ck_assert_msg(strstr(r.err, "leakwatch: LEAK in all allocations: +512 B/step"), "%s", r.err);
    ck_assert_msg(!strstr(r.err, "site 1"), "%s", r.err);
    const lw_json *stacks = lw_json_path(r.report, "tracker.stacks");
    ck_assert_int_eq(lw_json_bool(stacks, 1), 0);
    lw_run t;
    const char *text[] = {"report", r.report_path, NULL};
    lw_cli_run(&t, text, NULL);
    RUN_OK(&t);
    char first[2048];
    first_line(t.out, NULL, first, sizeof first);
    ck_assert_msg(!strncmp(first, "LEAK in all allocations: ", 25), "%s", first);
    lw_run_free(&t);
    lw_run_free(&r);
    /* With stacks, the report says so. */
    const char *on[] = {"--steps", "20", NULL};
    run_demo(&r, on, NULL);
    RUN_OK(&r);
    ck_assert_int_eq(lw_json_bool(lw_json_path(r.report, "tracker.stacks"), 0), 1);
    lw_run_free(&r);
}
END_TEST

/* Without step marks one line says that intervals are the steps and how to
 * mark them: once, at the first interval (100 ms here; the job runs about
 * 1 s). Not with marks, nor under LEAKWATCH_QUIET. */
START_TEST(no_marks_says_how_steps_are_counted) {
    static const char hint[] =
        "leakwatch: no step marks yet: each 100 ms interval counts as a step";
    const char *unmarked[] = {"--steps", "400", "--step-us", "2500", "--no-marks", NULL};
    const char *marked[] = {"--steps", "400", "--step-us", "2500", NULL};
    /* The steps' 2.5 ms move the test clock: the first interval closes while
     * the job runs, however slow the machine. */
    const char *env[] = {"LEAKWATCH_INTERVAL_MS=100", "LEAKWATCH_TEST_CLOCK=1", NULL};
    const char *quiet[] = {"LEAKWATCH_INTERVAL_MS=100", "LEAKWATCH_QUIET=1",
                           "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run r;
    run_demo(&r, unmarked, env);
    RUN_OK(&r);
    ck_assert_msg(lw_count_substr(r.err, hint) == 1, "%s", r.err);
    ck_assert_msg(strstr(r.err, "leakwatch_step() in C, leakwatch.step() in Python"), "%s", r.err);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "growth.step_source")), "time");
    lw_run_free(&r);
    run_demo(&r, marked, env);
    RUN_OK(&r);
    ck_assert_msg(!strstr(r.err, "no step marks"), "%s", r.err);
    lw_run_free(&r);
    run_demo(&r, unmarked, quiet);
    RUN_OK(&r);
    ck_assert_msg(!strstr(r.err, "no step marks"), "%s", r.err);
    lw_run_free(&r);
}
END_TEST

/* On a machine without a GPU (the stand-in driver answers as one does) an
 * allocation fails: one line says why, also under LEAKWATCH_QUIET; the
 * result reaches the program unchanged. */
START_TEST(no_gpu_is_said_once) {
    const char *args[] = {"--steps", "3", NULL};
    for (int quiet = 0; quiet < 2; quiet++) {
        const char *env[] = {"FAKE_CUDA_DEVICES=0", quiet ? "LEAKWATCH_QUIET=1" : NULL, NULL};
        lw_run r;
        run_demo(&r, args, env);
        ck_assert_int_ne(r.exit_code, 0);
        ck_assert_msg(strstr(r.err, "failed: 100"), "the program's own error: %s", r.err);
        ck_assert_msg(lw_count_substr(r.err, "leakwatch: a CUDA allocation failed with error 100: "
                                             "no CUDA-capable GPU found") == 1,
                      "%s", r.err);
        lw_run_free(&r);
    }
}
END_TEST

START_TEST(exit_summary_is_the_reports_answer) {
    const char *args[] = {"busyexit", "400", "4096", NULL};
    summary_is_the_reports_answer(args);
}
END_TEST

/* Two sites hold 1 MiB each on a clean run: the summary names the one the
 * report puts first (ties in live bytes broken by the bytes allocated), not
 * the newer one. */
START_TEST(a_tie_is_named_as_the_report_names_it) {
    const char *args[] = {"tie", NULL};
    summary_is_the_reports_answer(args);
}
END_TEST

/* A warm-up ramp called a leak while it rises, then flat: the LEAK line
 * printed on stderr is withdrawn there, once, when it happens (before the
 * exit summary). */
START_TEST(withdrawn_leak_is_withdrawn_on_stderr) {
    lw_run r;
    const char *args[] = {"--steps", "3000", "--warmup", "16M:1000", "--step-ms", "1", NULL};
    /* The steps' 1 ms move the test clock, which waits for the sampler
     * after each step: the live line and its withdrawal come while the job
     * runs, however slow the machine (a sampler that ran late would see
     * the rise and the level in one batch). */
    const char *env[] = {"LEAKWATCH_WARN=1", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_prog(&r, 1, "rt_workload", args, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "verdict")), "no_leak");
    ck_assert_int_ge(lw_rep_int(&r, "growth.leak_verdicts_withdrawn"), 1);
    const char *leak = strstr(r.err, "leakwatch: LEAK in ");
    ck_assert_msg(leak != NULL, "no live LEAK line:\n%s", r.err);
    ck_assert_int_eq(lw_count_substr(r.err, "leakwatch: leak verdict withdrawn at step "), 1);
    const char *gone = strstr(r.err, "leakwatch: leak verdict withdrawn at step ");
    const char *final = strstr(r.err, "leakwatch: no leak: ");
    ck_assert_msg(final && leak < gone && gone < final, "order on stderr:\n%s", r.err);
    ck_assert_int_eq(lw_count_substr(r.err, "withdrawn: leak verdict withdrawn"), 0);
    live_lines_are_leaks(r.err);
    /* The report records the withdrawn alarm and the exit says it (issue 38). */
    ck_assert_int_eq(lw_rep_int(&r, "growth.live_alarms_withdrawn"), 1);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "growth.live_alarm_withdrawn.unit")),
                     "step");
    int said = lw_rep_int(&r, "growth.live_alarm_withdrawn.said_at"),
        took = lw_rep_int(&r, "growth.live_alarm_withdrawn.withdrawn_at");
    ck_assert_int_gt(said, 0);
    ck_assert_int_gt(took, said);
    const char *exit_line = strstr(r.err, "while the job ran was withdrawn at step ");
    ck_assert_msg(exit_line && exit_line > gone, "the exit does not say it:\n%s", r.err);
    lw_run_free(&r);
}
END_TEST

/* The first live LEAK line of err ("[as of step N]") and the last LEAK
 * line, the exit's (without it); each must be there. */
static void live_and_exit_lines(const char *err, char *live, char *last, size_t n) {
    first_line(err, "leakwatch: LEAK in ", live, n);
    ck_assert_msg(strstr(live, "[as of step"), "no live line:\n%s", err);
    last[0] = '\0';
    for (const char *p = err; (p = strstr(p, "leakwatch: LEAK in "));) {
        first_line(p, NULL, last, n);
        p += 10;
    }
    ck_assert_msg(!strstr(last, "[as of"), "no exit line:\n%s", err);
}

/* Seconds of a duration as lw_fmt_duration writes it ("4 d 4 h",
 * "11 h 38 min", "5 min 22 s"), after "out of memory in " in line; NAN when
 * absent. */
static double oom_seconds_in(const char *line) {
    const char *p = strstr(line, "out of memory in ");
    if (!p) return NAN;
    p += strlen("out of memory in ");
    double total = 0;
    int parts = 0;
    for (;;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || *end != ' ') break;
        p = end + 1;
        double unit = !strncmp(p, "d", 1) && (p[1] == ' ' || p[1] == '(') ? 86400
                      : !strncmp(p, "h ", 2) || !strncmp(p, "h (", 3)     ? 3600
                      : !strncmp(p, "min", 3)                             ? 60
                      : !strncmp(p, "s ", 2) || !strncmp(p, "s (", 3)     ? 1
                      : !strncmp(p, "ms", 2)                              ? 1e-3
                                                                          : NAN;
        if (isnan(unit)) break;
        total += v * unit;
        parts++;
        while (*p && *p != ' ')
            p++;
        if (*p == ' ') p++;
    }
    return parts ? total : NAN;
}

/* A leak from the first step, behind 20 slow start-up steps (50 ms, then
 * 2 ms): the live line and the exit line project the same time to
 * out-of-memory (the pace now, not the start-up's), and both give the onset
 * as step 1 (or a range from it), not a bin's middle that drifts as the bins
 * widen. */
START_TEST(live_and_exit_lines_agree) {
    lw_run r;
    const char *args[] = {"slowstart", "1500", "4096", "2000", "20", "50000", NULL};
    /* The steps' times move the test clock: the slow start is exactly that
     * in every run, and the sampler follows each step. */
    const char *env[] = {"LEAKWATCH_WARN=1", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_prog(&r, 1, "rt_edges", args, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    char live[2048], last[2048] = "";
    live_and_exit_lines(r.err, live, last, sizeof live);
    double a = oom_seconds_in(live), b = oom_seconds_in(last);
    ck_assert_msg(isfinite(a) && isfinite(b) && a < 2 * b && b < 2 * a,
                  "time to out-of-memory: live %s\nexit %s", live, last);
    ck_assert_msg(strstr(live, "since step 1;") || strstr(live, "within steps 1-"),
                  "live onset: %s", live);
    ck_assert_msg(strstr(last, "since step 1;") || strstr(last, "within steps 1-"),
                  "exit onset: %s", last);
    ck_assert_int_eq(lw_rep_int(&r, "growth.onset_step"), 1);
    ck_assert_int_eq(lw_json_number(lw_json_path(r.report, "growth.onset_range[0]"), -1), 1);
    /* `leakwatch report` says the same onset, as a range when the bins are
     * coarse, in its answer line and its growth line. */
    lw_run t;
    const char *text[] = {"report", r.report_path, NULL};
    lw_cli_run(&t, text, NULL);
    RUN_OK(&t);
    char first[2048];
    first_line(t.out, NULL, first, sizeof first);
    ck_assert_msg(!strcmp(first, last + strlen("leakwatch: ")), "report: %s\nexit: %s", first,
                  last);
    if (strstr(last, "within steps 1-"))
        ck_assert_msg(strstr(t.out, "growth began within steps 1-"), "%s", t.out);
    else
        ck_assert_msg(strstr(t.out, "growth began near step 1\n"), "%s", t.out);
    lw_run_free(&t);
    lw_run_free(&r);
}
END_TEST

/* The onset an answer line says: "since step 1" or "starting within steps
 * 5-8", up to the ';' after it ("" when none). */
static void onset_in(const char *line, char *out, size_t n) {
    const char *p = strstr(line, " since ");
    if (!p) p = strstr(line, " starting within ");
    out[0] = '\0';
    if (p) snprintf(out, n, "%.*s", (int)strcspn(p, ";"), p);
}

/* make demo's C loop with steps of 25 us, as fast as an idle machine runs it,
 * here on the test clock. The live line and the exit line, compared with
 * each other (not with the clock): the same onset, step 1 (the leaking
 * allocation is made in the first step), and the same time to out-of-memory
 * within well under a factor of 2 (the pace is the recent steps' own, not
 * the bins'; before, 2.5 to 3 times apart). */
START_TEST(live_and_exit_lines_agree_with_very_fast_steps) {
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    lw_run r;
    /* Steps of 25 us of the test clock's time: on the wall clock a sampler
     * starved for the job's 50 ms gave its live line only at the exit, before
     * its first device reading ("no out-of-memory projection", seen on a
     * loaded machine); the test clock waits for the sampler at each step. */
    const char *args[] = {"--steps", "2000", "--step-us", "25", NULL};
    const char *env[] = {"LEAKWATCH_WARN=1", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_exe(&r, 1, exe, args, env);
    RUN_OK(&r);
    char live[2048], last[2048] = "", a_on[128], b_on[128];
    live_and_exit_lines(r.err, live, last, sizeof live);
    onset_in(live, a_on, sizeof a_on);
    onset_in(last, b_on, sizeof b_on);
    ck_assert_msg(a_on[0] && !strcmp(a_on, b_on), "onsets differ:\nlive %s\nexit %s", live, last);
    ck_assert_msg(!strcmp(b_on, " since step 1"), "onset: %s", last);
    double a = oom_seconds_in(live), b = oom_seconds_in(last);
    ck_assert_msg(isfinite(a) && isfinite(b) && a < 2 * b && b < 2 * a,
                  "time to out-of-memory: live %s\nexit %s", live, last);
    lw_run_free(&r);
}
END_TEST

START_TEST(two_ranks_are_labelled_and_merged) {
    char exe[PATH_MAX], want[160];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    int line = line_of("examples/train_loop.c", "cudaMalloc(&history[step]");
    snprintf(want, sizeof want,
             "train_loop.c:%d in keep_loss_history leaks on ranks 0\xe2\x80\x93"
             "1, +512 B/step each",
             line);
    lw_run r0, r1;
    const char *args[] = {"--steps", "300", NULL};
    const char *e0[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", "LEAKWATCH_QUIET=1", NULL};
    const char *e1[] = {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LEAKWATCH_QUIET=1", NULL};
    lw_run_exe(&r0, 1, exe, args, e0);
    lw_run_exe(&r1, 1, exe, args, e1);
    RUN_OK(&r0);
    RUN_OK(&r1);
    long long v = -1;
    ck_assert_int_eq(lw_json_int64(lw_json_get(r1.report, "rank"), &v), 0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(lw_json_int64(lw_json_get(r1.report, "world_size"), &v), 0);
    ck_assert_int_eq(v, 2);

    /* Given rank 1 first: the merged view still lists rank 0 first. */
    lw_run r;
    const char *text[] = {"report", r1.report_path, r0.report_path, NULL};
    lw_cli_run(&r, text, NULL);
    RUN_OK(&r);
    char line1[1024];
    first_line(r.out, NULL, line1, sizeof line1);
    ck_assert_msg(strstr(line1, want), "first line: %s\n%s", line1, r.out);
    const char *a = strstr(r.out, "  rank 0 "), *b = strstr(r.out, "  rank 1 ");
    ck_assert_msg(a && b && a < b, "ranks not labelled 0 and 1:\n%s", r.out);
    ck_assert_msg(!strstr(r.out, "#1") && !strstr(r.out, "#0"), "positions as ranks:\n%s", r.out);
    lw_run_free(&r);

    /* One rank's details on request. */
    const char *one[] = {"report", "--rank", "1", r0.report_path, r1.report_path, NULL};
    lw_cli_run(&r, one, NULL);
    RUN_OK(&r);
    ck_assert_msg(strstr(r.out, "rank 1 of 2") && !strstr(r.out, "rank 0 of 2"), "%s", r.out);
    lw_run_free(&r);

    /* HTML: the same labels and the same merged line. */
    char html[PATH_MAX];
    snprintf(html, sizeof html, "%s/ranks.html", r0.dir);
    const char *h[] = {"report", "--format",     "html",         "-o",
                       html,     r0.report_path, r1.report_path, NULL};
    lw_cli_run(&r, h, NULL);
    RUN_OK(&r);
    char *page = lw_slurp_file(html);
    ck_assert_msg(strstr(page, "leaks on ranks 0&#8211;1") ||
                      strstr(page, "leaks on ranks 0\xe2\x80\x93"
                                   "1"),
                  "no merged line in the page");
    ck_assert_ptr_nonnull(strstr(page, ">rank 0<"));
    ck_assert_ptr_nonnull(strstr(page, ">rank 1<"));
    ck_assert_ptr_null(strstr(page, ">#1<"));
    free(page);
    lw_run_free(&r);

    /* JSON: each report keeps its rank. */
    const char *j[] = {"report", "--format", "json", r0.report_path, r1.report_path, NULL};
    lw_cli_run(&r, j, NULL);
    RUN_OK(&r);
    char err[256];
    lw_json *doc = lw_json_parse(r.out, strlen(r.out), NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s", err);
    ck_assert_int_eq(lw_json_int64(lw_json_get(lw_json_at(doc, 0), "rank"), &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(lw_json_int64(lw_json_get(lw_json_at(doc, 1), "rank"), &v), 0);
    ck_assert_int_eq(v, 1);
    ck_assert_int_eq(lw_json_int64(lw_json_get(lw_json_at(doc, 1), "world_size"), &v), 0);
    ck_assert_int_eq(v, 2);
    lw_json_free(doc);
    lw_run_free(&r);
    lw_run_free(&r0);
    lw_run_free(&r1);
}
END_TEST

/* ---- the HTML page as a user sees it ---- */

/* A PyTorch run as a report: 1 MiB of growth over 256 steps on a 193 MiB
 * floor, peaks above 1 GiB, the leak allocated in torch's code called from
 * the user's train.py:27. */
static void write_torch_report(const char *path) {
    size_t cap = 1 << 20;
    char *s = malloc(cap);
    size_t o = 0;
    const double MiB = 1024.0 * 1024.0;
#define P(...) o += (size_t)snprintf(s + o, cap - o, __VA_ARGS__)
    P("{\"tool\":\"leakwatch\",\"version\":\"0.1.0\",\"pid\":77,\"command\":\"python train.py\","
      "\"host\":\"node-3\",\"rank\":0,\"world_size\":1,\"device\":0,\"verdict\":\"leak\","
      "\"totals\":{\"live_bytes\":%.0f,\"peak_live_bytes\":%.0f},",
      194 * MiB, 1400 * MiB);
    P("\"growth\":{\"bytes_per_step\":4096,\"bytes_per_second\":2048,\"slope_ci\":[4000,4200],"
      "\"p_value\":1e-30,\"steps\":256,\"step_source\":\"marker\",\"onset_step\":8,"
      "\"oom_eta_seconds\":40000000,\"oom_eta_steps\":20000000,\"device_free_bytes\":%.0f,"
      "\"device_total_bytes\":%.0f},",
      78000 * MiB, 81920 * MiB);
    P("\"series\":{\"x\":[");
    for (int i = 0; i < 256; i++)
        P("%s%d", i ? "," : "", i);
    P("],\"time_s\":[");
    for (int i = 0; i < 256; i++)
        P("%s%.1f", i ? "," : "", i * 0.5);
    P("],\"floor\":[");
    for (int i = 0; i < 256; i++)
        P("%s%.0f", i ? "," : "", 193 * MiB + (i < 8 ? 0 : 4096.0 * i));
    P("],\"peak\":[");
    for (int i = 0; i < 256; i++)
        P("%s%.0f", i ? "," : "", 1100 * MiB + (i % 7) * 40 * MiB);
    P("]},\"sites\":[{\"id\":3,\"live_bytes\":1048576,\"live_count\":248,\"alloc_count\":248,"
      "\"free_count\":0,\"leak\":true,\"bytes_per_step\":4096,\"frames\":["
      "{\"kind\":\"native\",\"function\":\"cudaMallocAsync\",\"module\":"
      "\"/usr/local/cuda/lib64/libcudart.so.12\"},"
      "{\"kind\":\"python\",\"function\":\"cross_entropy\",\"file\":"
      "\"/venv/lib/python3.11/site-packages/torch/nn/functional.py\",\"line\":3104},"
      "{\"kind\":\"python\",\"function\":\"train\",\"file\":\"/home/me/train.py\",\"line\":27},"
      "{\"kind\":\"python\",\"function\":\"<module>\",\"file\":\"/home/me/train.py\","
      "\"line\":40},"
      "{\"kind\":\"native\",\"function\":\"__libc_start_main\",\"module\":"
      "\"/lib/x86_64-linux-gnu/libc.so.6\"}]}]}\n");
#undef P
    lw_write_text(path, s);
    free(s);
}

/* "count=N ymin=A ymax=B ..." of tests/tools/png_extent.py. */
static void extent(const char *png, const char *colour, const char *box, int *count, int *ymin,
                   int *ymax) {
    char cmd[1024], out[256] = "";
    snprintf(cmd, sizeof cmd, "python3 tests/tools/png_extent.py %s %s 30 %s", png, colour, box);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(out, sizeof out, p));
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(sscanf(out, "count=%d ymin=%d ymax=%d", count, ymin, ymax), 3);
}

START_TEST(html_header_and_floor_in_a_browser) {
    const char *chrome = lw_find_chromium();
    char py[PATH_MAX];
    if (!chrome || !find_python(py, sizeof py)) {
        printf("test_answer: html_header_and_floor_in_a_browser skipped: %s is not installed "
               "(scripts/install-deps.sh test installs it where available)\n",
               chrome ? "python3" : "chromium");
        return;
    }
    char dir[64], rep[128], png[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(rep, sizeof rep, "%s/leak.json", dir);
    snprintf(png, sizeof png, "%s/shot.png", dir);
    write_torch_report(rep);
    /* What the browser built: the header holds the place to look. */
    char *d = lw_html_in_chromium(chrome, dir, rep);
    const char *h = strstr(d, "id=\"answer\"");
    ck_assert_msg(h != NULL, "no answer header in the DOM");
    const char *end = strstr(h, "</header>");
    const char *where = strstr(h, "train.py:27 in train");
    ck_assert_msg(where && end && where < end, "the header does not name train.py:27 in train");
    ck_assert_msg(strstr(h, "4.00 KiB/step") && strstr(h, "out of memory"), "header lacks rate");
    free(d);
    /* What the user sees: the header band at the top of the screen, and a
     * floor line that rises across the plot (not flattened by the peaks). */
    int n, y0, y1;
    extent(png, "c62828", "0 0 1200 320", &n, &y0, &y1); /* the leak's red band */
    ck_assert_msg(n > 500, "no red header band in the top of the screenshot (%d pixels)", n);
    /* The floor's colour right of the legend, inside the plot. */
    extent(png, "1d4ed8", "400 250 1000 900", &n, &y0, &y1);
    ck_assert_msg(n > 100, "no floor line drawn (%d pixels)", n);
    ck_assert_msg(y1 - y0 >= 100, "the floor line is flat: it spans %d pixels", y1 - y0);
    printf("test_answer: floor line spans %d pixels of the plot's 280\n", y1 - y0);
    lw_keep_screenshot(png);
    lw_remove_dir(dir);
}
END_TEST

/* On a terminal, --format html without -o writes leakwatch-report.html. */
START_TEST(html_on_a_terminal_goes_to_a_file) {
    char dir[64], rep[128], cmd[1024];
    if (access("/usr/bin/script", X_OK) != 0) {
        printf("test_answer: html_on_a_terminal_goes_to_a_file skipped: no script(1)\n");
        return;
    }
    lw_temp_dir(dir, sizeof dir);
    snprintf(rep, sizeof rep, "%s/leak.json", dir);
    write_torch_report(rep);
    snprintf(cmd, sizeof cmd,
             "cd %s && timeout 60 script -qec '%s report --format html leak.json' /dev/null "
             ">out.txt 2>&1",
             dir, lw_cli_exe());
    ck_assert_int_eq(system(cmd), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/leakwatch-report.html", dir);
    char *page = lw_slurp_file(path);
    ck_assert_msg(strstr(page, "<title>"), "no page written to %s", path);
    free(page);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *out = lw_slurp_file(path);
    ck_assert_msg(strstr(out, "wrote leakwatch-report.html") && !strstr(out, "<html"), "%s", out);
    free(out);
    lw_remove_dir(dir);
}
END_TEST

/* ---- leakwatch top, driven through tmux ---- */

static void tmux(const char *sock, const char *args, char *out, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "tmux -L %s %s 2>&1", sock, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t o = 0;
    if (out) {
        size_t r;
        while (o + 1 < n && (r = fread(out + o, 1, n - 1 - o, p)) > 0)
            o += r;
        out[o] = '\0';
    } else {
        char sink[4096];
        while (fread(sink, 1, sizeof sink, p) > 0) {
        }
    }
    pclose(p);
}

/* The pane's text, wrapped lines joined (-J), once it holds want (up to 60 s:
 * top under a sanitizer on a loaded machine draws its first screen late).
 * Targets are "=NAME:", session NAME exactly: tmux also matches a bare name
 * against the start of window names. */
static void pane_until(const char *sock, const char *target, const char *want, char *out,
                       size_t n) {
    char args[128];
    snprintf(args, sizeof args, "capture-pane -p -J -t %s", target);
    for (int i = 0; i < 600; i++) {
        tmux(sock, args, out, n);
        if (strstr(out, want)) return;
        usleep(100000);
    }
    ck_abort_msg("the pane never showed '%s':\n%s", want, out);
}

/* No line wider than cols display columns. */
static void fits(const char *text, int cols) {
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int w = 0;
        for (size_t i = 0; i < len; i++)
            w += ((unsigned char)p[i] & 0xC0) != 0x80;
        ck_assert_msg(w <= cols, "a line of %d columns: %.*s", w, (int)len, p);
        if (!end) break;
        p = end + 1;
    }
}

/* The metrics file ends on the final verdict, its place named, even when the
 * worker's timer never came round during the run (an interval of an hour)
 * and the live warning, which waits longer than the verdict, was not due
 * (60 steps). */
START_TEST(prometheus_ends_on_the_final_verdict) {
    char want[128], label[200];
    lw_run r;
    char *text =
        demo_with_prometheus(&r, "60", "0", "LEAKWATCH_INTERVAL_MS=3600000", want, sizeof want);
    ck_assert_str_eq(lw_json_string(lw_json_path(r.report, "verdict")), "leak");
    snprintf(label, sizeof label, "leakwatch_leak_place_info{where=\"%s\"} 1", want);
    ck_assert_msg(strstr(text, "leakwatch_leak 1") && strstr(text, label), "%s", text);
    free(text);
    lw_run_free(&r);
}
END_TEST

/* The textfile written while the job runs names the run's answer too, by the
 * same rule (answer.c), not the place of a live warning: here 40 steps, a
 * leak verdict, and no live warning yet (it waits for 64 steps); the job
 * copies the first textfile that says leak (rt_edges promwait). */
START_TEST(prometheus_names_the_answer_while_running) {
    char dir[64], prom[160], promenv[200], mid[200], label[600];
    lw_temp_dir(dir, sizeof dir);
    snprintf(prom, sizeof prom, "%s/job.prom", dir);
    snprintf(promenv, sizeof promenv, "LEAKWATCH_PROMETHEUS=%s", prom);
    snprintf(mid, sizeof mid, "%s.mid", prom);
    lw_run r;
    const char *args[] = {"promwait", "40", "4096", NULL};
    const char *env[] = {promenv, "LEAKWATCH_INTERVAL_MS=50", NULL};
    lw_run_prog(&r, 1, "rt_edges", args, env);
    RUN_OK(&r);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    ck_assert_msg(!strstr(r.err, "[as of step"), "a live warning came:\n%s", r.err);
    char *text = lw_slurp_file(mid);
    ck_assert_ptr_nonnull(text);
    const char *where = lw_json_string(lw_json_path(r.report, "answer.where.label"));
    ck_assert_ptr_nonnull(where);
    snprintf(label, sizeof label, "leakwatch_leak_place_info{where=\"%s\"} 1", where);
    ck_assert_msg(strstr(text, label), "no '%s' in:\n%s", label, text);
    free(text);
    lw_remove_dir(dir);
    lw_run_free(&r);
}
END_TEST

START_TEST(top_keys_and_job_exit_in_tmux) {
    if (system("command -v tmux >/dev/null 2>&1") != 0) {
        printf("test_answer: top_keys_and_job_exit_in_tmux skipped: tmux is not installed\n");
        return;
    }
    char dir[64], out[160], rep[160], prog[PATH_MAX], sock[64];
    lw_temp_dir(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(rep, sizeof rep, "%s/final.json", dir);
    snprintf(prog, sizeof prog, "%s/tests/programs/rt_sleeper", lw_build_dir());
    snprintf(sock, sizeof sock, "lwtest%ld", (long)getpid());
    /* The job ends when its standard input closes. */
    int in[2];
    ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0); /* not inherited by tmux */
    /* Under the test clock rt_sleeper moves the run's time on by a second
     * before it says "ready", and that returns once leakwatch's sampler has
     * taken its first samples (the device's memory, the first interval):
     * top's first frame has them, however fast tmux starts. */
    static lw_child_env ce;
    const char *extra[] = {"LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_child_env_build(&ce, LW_PRELOAD_SHIM, rep, extra);
    pid_t job = fork();
    ck_assert_int_ge(job, 0);
    if (job == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(in[0], 0);
        dup2(o, 1);
        dup2(o, 2);
        close(in[1]);
        char *argv[] = {prog, "3", "1048576", "stdin", NULL};
        execve(prog, argv, ce.envp);
        _exit(127);
    }
    close(in[0]);
    ck_assert(lw_wait_for_text(out, "ready", 20000));
    char cmd[1024], pane[16384];
    snprintf(cmd, sizeof cmd,
             "new-session -d -x 80 -y 30 -s t \"LANG=C.UTF-8 %s top %ld; echo TOP-EXITED \\$?; "
             "sleep 60\"",
             lw_cli_exe(), (long)job);
    tmux(sock, cmd, NULL, 0);
    pane_until(sock, "=t:", "PLACE TO LOOK", pane, sizeof pane);
    /* The first line is the answer, naming the place to look. */
    ck_assert_msg(strstr(pane, "leak_sleeper") && strstr(pane, "gpu 0   ["), "%s", pane);
    ck_assert_msg(strncmp(pane, "inconclusive", 12) == 0 || strncmp(pane, "no leak", 7) == 0 ||
                      strncmp(pane, "LEAK", 4) == 0,
                  "the first line is not the answer:\n%s", pane);
    fits(pane, 80);
    tmux(sock, "send-keys -t =t: c", NULL, 0);
    pane_until(sock, "=t:", "sorted by count", pane, sizeof pane);
    tmux(sock, "send-keys -t =t: Enter", NULL, 0);
    pane_until(sock, "=t:", "stack, outermost first", pane, sizeof pane);
    ck_assert_msg(strstr(pane, "--> ") && strstr(pane, "in leak_sleeper"), "%s", pane);
    ck_assert_msg(!strstr(pane, "__libc_start"), "start-up frames shown:\n%s", pane);
    fits(pane, 80);
    tmux(sock, "send-keys -t =t: Escape", NULL, 0);
    pane_until(sock, "=t:", "PLACE TO LOOK", pane, sizeof pane);
    /* q quits a second viewer. */
    snprintf(cmd, sizeof cmd,
             "new-session -d -x 80 -y 30 -s q \"%s top %ld; echo TOP-EXITED \\$?; sleep 60\"",
             lw_cli_exe(), (long)job);
    tmux(sock, cmd, NULL, 0);
    pane_until(sock, "=q:", "PLACE TO LOOK", pane, sizeof pane);
    tmux(sock, "send-keys -t =q: q", NULL, 0);
    pane_until(sock, "=q:", "TOP-EXITED 0", pane, sizeof pane);
    /* The job ends: the last screen stays, with the final report's path. */
    close(in[1]);
    int st;
    ck_assert_int_eq(lw_wait_pid(job, 20000, &st), 0);
    pane_until(sock, "=t:", "TOP-EXITED 0", pane, sizeof pane);
    ck_assert_msg(strstr(pane, "PLACE TO LOOK") && strstr(pane, "final report: ") &&
                      strstr(pane, rep),
                  "%s", pane);
    tmux(sock, "kill-server", NULL, 0);
    lw_remove_dir(dir);
}
END_TEST

/* A report carries its answer, whole (answer.c): leakwatch report renders it
 * and chooses nothing again. Here the library named site 1 as the growing
 * site of an undecided run (its rule: the floor's rise from its second
 * point), where the command's own older rule (the fastest bytes_per_step)
 * would have named site 2; and the sites are listed in the report's order,
 * not ranked again. */
START_TEST(the_reports_answer_is_rendered_not_chosen_again) {
    char dir[64], rep[128];
    lw_temp_dir(dir, sizeof dir);
    snprintf(rep, sizeof rep, "%s/answer.json", dir);
    FILE *f = fopen(rep, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"tool\": \"leakwatch\", \"version\": \"0.1.0\", \"pid\": 7, \"verdict\": "
          "\"inconclusive\",\n"
          " \"growth\": {\"bytes_per_step\": 64, \"steps\": 50, \"step_source\": \"marks\",\n"
          "  \"step_unit\": \"leakwatch_step\", \"reason\": \"the floor grows; confirming\",\n"
          "  \"steps_to_decide\": 30},\n"
          " \"sites\": [\n"
          "  {\"id\": 1, \"live_bytes\": 1048576, \"bytes_per_step\": 0, \"leak\": false,\n"
          "   \"series\": {\"x\": [1, 2, 3], \"floor\": [0, 1024, 1048576]}},\n"
          "  {\"id\": 2, \"live_bytes\": 4096, \"bytes_per_step\": 100, \"leak\": false}],\n"
          " \"answer\": {\"site\": 1, \"grows\": true, \"kind\": null, \"unit\": \"step\",\n"
          "  \"says_where\": true, \"site_bytes_per_step\": null, \"site_live_bytes\": 1048576,\n"
          "  \"bytes_per_step\": 64, \"slope_ci\": [0, 128], \"bytes_per_second\": null,\n"
          "  \"onset_step\": null, \"onset_end_step\": null, \"steps\": 50, \"free_bytes\": null,\n"
          "  \"total_bytes\": null, \"oom_eta_seconds\": null, \"oom_eta_steps\": null,\n"
          "  \"reason\": \"the floor grows; confirming\", \"steps_to_decide\": 30,\n"
          "  \"rose_once\": false}}\n",
          f);
    ck_assert_int_eq(fclose(f), 0);
    lw_run r;
    const char *text[] = {"report", rep, NULL};
    lw_cli_run(&r, text, NULL);
    RUN_OK(&r);
    char line[2048];
    first_line(r.out, NULL, line, sizeof line);
    ck_assert_msg(strstr(line, "growing site: site 1 (1.00 MiB live)") &&
                      strstr(line, "the floor rises +64 B/step"),
                  "the report's answer is not the one shown: %s", line);
    const char *list = strstr(r.out, "most worrying first");
    ck_assert_ptr_nonnull(list);
    const char *s1 = strstr(list, "site 1"), *s2 = strstr(list, "site 2");
    ck_assert_msg(s1 && s2 && s1 < s2, "not in the report's order:\n%s", list);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

int main(void) {
    /* A private folder for the watched jobs' sockets. */
    static char xdg[64] = "/tmp/lwxdg.XXXXXX";
    if (!mkdtemp(xdg)) return 1;
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    Suite *s = suite_create("answer");
    TCase *tc = tcase_create("answer");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, c_demo_names_the_users_line_everywhere);
    tcase_add_test(tc, python_demo_names_the_users_line_everywhere);
    tcase_add_test(tc, two_ranks_are_labelled_and_merged);
    tcase_add_test(tc, exit_summary_is_the_reports_answer);
    tcase_add_test(tc, a_tie_is_named_as_the_report_names_it);
    tcase_add_test(tc, one_time_rise_is_said_as_one);
    tcase_add_test(tc, the_reports_answer_is_rendered_not_chosen_again);
    tcase_add_test(tc, live_and_exit_lines_agree);
    tcase_add_test(tc, live_and_exit_lines_agree_with_very_fast_steps);
    tcase_add_test(tc, withdrawn_leak_is_withdrawn_on_stderr);
    tcase_add_test(tc, html_header_and_floor_in_a_browser);
    tcase_add_test(tc, html_on_a_terminal_goes_to_a_file);
    tcase_add_test(tc, top_keys_and_job_exit_in_tmux);
    tcase_add_test(tc, prometheus_ends_on_the_final_verdict);
    tcase_add_test(tc, prometheus_names_the_answer_while_running);
    suite_add_tcase(s, tc);
    /* What a newcomer's first run says (issue 30): CK_RUN_CASE=first-run. */
    TCase *first = tcase_create("first-run");
    tcase_set_timeout(first, 300);
    tcase_add_test(first, no_stacks_names_all_allocations);
    tcase_add_test(first, no_marks_says_how_steps_are_counted);
    tcase_add_test(first, no_gpu_is_said_once);
    suite_add_tcase(s, first);
    int failed = lw_check_run(s);
    lw_remove_dir(xdg);
    return failed ? 1 : 0;
}
