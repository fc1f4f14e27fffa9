/* The answer first, in every output: for the C and the Python demo the first
 * line of the live warning, the exit summary, the text report and the HTML
 * page's header names the user's line; stacks read as tracebacks without
 * libc's start-up or libffi frames; reports of two ranks are labelled by
 * rank and merged. */
#include "../check_run.h"
#include "harness_cli.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    ck_assert_msg(strstr(r.out, "__libc_start_main"), "--full-stacks hides frames:\n%s", r.out);
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

START_TEST(c_demo_names_the_users_line_everywhere) {
    char exe[PATH_MAX], want[128];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    int line = line_of("examples/train_loop.c", "cudaMalloc(&history[step]");
    snprintf(want, sizeof want, "train_loop.c:%d in keep_loss_history", line);
    lw_run r;
    const char *args[] = {"--steps", "600", NULL};
    lw_run_exe(&r, 1, exe, args, NULL);
    RUN_OK(&r);
    ck_assert_ptr_nonnull(r.report);
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

int main(void) {
    Suite *s = suite_create("answer");
    TCase *tc = tcase_create("answer");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, c_demo_names_the_users_line_everywhere);
    tcase_add_test(tc, python_demo_names_the_users_line_everywhere);
    tcase_add_test(tc, two_ranks_are_labelled_and_merged);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
