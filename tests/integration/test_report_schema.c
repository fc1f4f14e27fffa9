/* SPDX-License-Identifier: Apache-2.0 */
/* The report's schema against its one table, src/vocab/report_fields.def
 * (written out as docs/report-fields.md): reports written by the shim in
 * several situations together hold every field the table names, each with a
 * type its row allows, and no field without a row; and the command reads
 * each of them without a warning.
 *
 * LW_SCHEMA_DUMP=1 prints the fields and types the runs produced, for
 * writing a new field's row. */
#include "../check_run.h"
#include "../pythons.h"
#include "harness.h"
#include "harness_cli.h"
#include "report_fields.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 600
#define MAX_SEEN 1000

/* A row of the table: the field's path ("sites[].frames[].line"; "*" stands
 * for any key), the types it may have, and whether some run must show it. */
typedef struct {
    char path[160];
    unsigned types; /* 1 << lw_json_type */
    int seen;
    int pytorch; /* listed under a PyTorch heading: only reports of PyTorch jobs have it */
} row;

static row rows[MAX_ROWS];
static int nrows;
static int dumping; /* LW_SCHEMA_DUMP: print what the runs produced, check nothing */

/* What the runs produced, for LW_SCHEMA_DUMP. */
static struct {
    char path[160];
    unsigned types;
} seen[MAX_SEEN];
static int nseen;

/* Abbreviations: a row "NAME.x" is the rows "a.x", "b.x", ... for each
 * path of NAME (report_fields.h). */
static void add_row(const char *path, unsigned types, int pytorch) {
    for (size_t i = 0; i < lw_report_nabbrevs; i++) {
        size_t l = strlen(lw_report_abbrevs[i].name);
        if (!strncmp(path, lw_report_abbrevs[i].name, l) && path[l] == '.') {
            char full[160];
            for (const char *p = lw_report_abbrevs[i].paths; *p;) {
                size_t n = strcspn(p, ",");
                snprintf(full, sizeof full, "%.*s%s", (int)n, p, path + l);
                add_row(full, types, pytorch);
                p += n + (p[n] == ',');
                p += strspn(p, " ");
            }
            return;
        }
    }
    ck_assert_int_lt(nrows, MAX_ROWS);
    snprintf(rows[nrows].path, sizeof rows[nrows].path, "%s", path);
    rows[nrows].pytorch = pytorch;
    rows[nrows++].types = types;
}

/* The rows of the report's one table (src/vocab/report_fields.def, which
 * docs/report-fields.md writes out). Its type bits are 1 << lw_json_type. */
_Static_assert(LW_RF_NULL == 1u << LW_JSON_NULL && LW_RF_BOOL == 1u << LW_JSON_BOOL &&
                   LW_RF_NUM == 1u << LW_JSON_NUMBER && LW_RF_STR == 1u << LW_JSON_STRING &&
                   LW_RF_ARR == 1u << LW_JSON_ARRAY && LW_RF_OBJ == 1u << LW_JSON_OBJECT,
               "report_fields.h's type bits are lw_json_type's");
static void load_rows(void) {
    for (int i = 0; i < LW_FIELD_COUNT; i++)
        add_row(lw_report_fields[i].path, lw_report_fields[i].types,
                (lw_report_fields[i].flags & LW_RF_PYTORCH) != 0);
    ck_assert_int_gt(nrows, 50);
}

static int path_matches(const char *pattern, const char *path) {
    while (*pattern && *path) {
        size_t pl = strcspn(pattern, "."), l = strcspn(path, ".");
        if (!(pl == 1 && pattern[0] == '*') && (pl != l || strncmp(pattern, path, l))) return 0;
        pattern += pl + (pattern[pl] == '.');
        path += l + (path[l] == '.');
    }
    return !*pattern && !*path;
}

static void note_seen(const char *path, lw_json_type t) {
    for (int i = 0; i < nseen; i++)
        if (!strcmp(seen[i].path, path)) {
            seen[i].types |= 1u << t;
            return;
        }
    if (nseen < MAX_SEEN) {
        snprintf(seen[nseen].path, sizeof seen[nseen].path, "%s", path);
        seen[nseen++].types = 1u << t;
    }
}

/* Checks v, found at path in the report of `what`, and everything in it. */
static void walk(const char *what, const char *path, const lw_json *v) {
    lw_json_type t = lw_json_type_of(v);
    if (*path) {
        note_seen(path, t);
        if (dumping) goto inside;
        row *r = NULL;
        for (int i = 0; i < nrows && !r; i++)
            if (path_matches(rows[i].path, path)) r = &rows[i];
        ck_assert_msg(r != NULL,
                      "%s: the report has \"%s\", which src/vocab/report_fields.def does not list",
                      what, path);
        ck_assert_msg(r->types & (1u << t),
                      "%s: \"%s\" is a %s, which src/vocab/report_fields.def does not allow", what,
                      path, lw_json_type_name(t));
        r->seen = 1;
    }
inside:;
    char sub[200];
    if (t == LW_JSON_OBJECT) {
        for (size_t i = 0; i < lw_json_len(v); i++) {
            snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", lw_json_key_at(v, i));
            walk(what, sub, lw_json_value_at(v, i));
        }
    } else if (t == LW_JSON_ARRAY) {
        snprintf(sub, sizeof sub, "%s[]", path);
        for (size_t i = 0; i < lw_json_len(v); i++)
            walk(what, sub, lw_json_at(v, i));
    }
}

static char python[PATH_MAX];

static int python_found(void) {
    static const char *const candidates[] = {"/usr/bin/python3", "/usr/local/bin/python3", NULL};
    for (int i = 0; candidates[i]; i++)
        if (lw_python_runs_here(candidates[i])) {
            snprintf(python, sizeof python, "%s", candidates[i]);
            return 1;
        }
    return 0;
}

/* tests/python/NAME ARG under the shim with the stand-in torch. */
static void run_torch(lw_run *r, const char *name, const char *arg, const char *const *extra) {
    char script[PATH_MAX], rel[PATH_MAX], faketorch[PATH_MAX], pypath[PATH_MAX + 16],
        cudart[PATH_MAX + 16];
    snprintf(rel, sizeof rel, "tests/python/%s", name);
    ck_assert_msg(realpath(rel, script) != NULL, "%s missing", rel);
    ck_assert_ptr_nonnull(realpath("tests/python/faketorch", faketorch));
    snprintf(pypath, sizeof pypath, "PYTHONPATH=%s", faketorch);
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    const char *env[16];
    int n = 0;
    for (int i = 0; extra && extra[i] && n < 10; i++)
        env[n++] = extra[i];
    env[n++] = cudart;
    env[n++] = pypath;
    env[n++] = "LEAKWATCH_QUIET=1";
    env[n++] = "LEAKWATCH_WARN=0";
    env[n++] = "PYTHONDONTWRITEBYTECODE=1";
    env[n] = NULL;
    const char *args[] = {script, arg, NULL};
    lw_run_exe(r, 1, python, args, env);
    ck_assert_msg(r->exit_code == 0, "%s %s: exit %d\n%s", name, arg ? arg : "", r->exit_code,
                  r->err);
}

/* The report of one run: walked, then read by the command (text and JSON)
 * without a warning. */
static void check_report(const char *what, lw_run *r) {
    ck_assert_msg(r->report != NULL, "%s: no report; stderr: %s", what, r->err);
    walk(what, "", r->report);
    static const char *const formats[] = {"text", "json"};
    for (int i = 0; i < 2; i++) {
        lw_run c;
        const char *args[] = {"report", "--format", formats[i], r->report_path, NULL};
        lw_cli_run(&c, args, NULL);
        RUN_OK(&c);
        ck_assert_msg(!strstr(c.err, "warning") && !strstr(c.out, "warning"),
                      "%s: leakwatch report --format %s warns:\n%s%s", what, formats[i], c.err,
                      c.out);
        lw_run_free(&c);
    }
    lw_run_free(r);
}

START_TEST(reports_hold_the_listed_fields) {
    const char *dump = getenv("LW_SCHEMA_DUMP");
    dumping = dump && *dump;
    if (!dumping) load_rows();
    lw_run r;
    /* A leak, with step marks: growth, series, leaking sites, the answer. */
    char exe[4200];
    snprintf(exe, sizeof exe, "%s/examples/train_loop", lw_build_dir());
    const char *leak_args[] = {"--steps", "600", "--step-us", "200", NULL};
    lw_run_exe(&r, 1, exe, leak_args, NULL);
    RUN_OK(&r);
    check_report("train_loop", &r);
    /* Without step marks: time steps. */
    const char *time_args[] = {"--steps", "300", "--step-us", "2000", "--no-marks", NULL};
    /* The steps' 2 ms move the test clock: intervals are closed however slow
     * the machine. */
    const char *time_env[] = {"LEAKWATCH_INTERVAL_MS=10", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_exe(&r, 1, exe, time_args, time_env);
    RUN_OK(&r);
    check_report("train_loop --no-marks", &r);
    /* Growth released at each cycle's end: growth.cycles. */
    const char *saw_args[] = {"--steps", "600", "--sawtooth", "400K:period100", NULL};
    lw_run_prog(&r, 1, "rt_workload", saw_args, NULL);
    RUN_OK(&r);
    check_report("rt_workload --sawtooth", &r);
    /* A failed allocation. */
    const char *oom_env[] = {"FAKE_CUDA_MEM_BYTES=1073741824", NULL};
    const char *oom_args[] = {"oom", "1", "4294967296", NULL};
    lw_run_prog(&r, 1, "rt_paths", oom_args, oom_env);
    RUN_OK(&r);
    check_report("rt_paths oom", &r);
    /* Every kind of memory, on the driver's paths. */
    const char *drv_args[] = {"alloc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "drv_paths", drv_args, NULL);
    RUN_OK(&r);
    check_report("drv_paths alloc", &r);
    /* Inlined frames, with source lines. */
    const char *cxx_args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", cxx_args, NULL);
    RUN_OK(&r);
    check_report("cxx_alloc", &r);
    /* Ended by a signal. */
    const char *sig_args[] = {"raise", "15", NULL};
    lw_run_prog(&r, 1, "rt_safety_job", sig_args, NULL);
    ck_assert_msg(r.signal == 15, "rt_safety_job raise: signal %d", r.signal);
    check_report("rt_safety_job raise", &r);

    /* A LEAK said live and withdrawn (a warm-up that levels off, on the test
     * clock: said and withdrawn while the job runs): growth.live_alarm_withdrawn. */
    const char *warm_args[] = {"--steps", "3000", "--warmup", "16M:1000", "--step-ms", "1", NULL};
    const char *warm_env[] = {"LEAKWATCH_WARN=1", "LEAKWATCH_TEST_CLOCK=1", NULL};
    lw_run_prog(&r, 1, "rt_workload", warm_args, warm_env);
    check_report("rt_workload warm-up", &r);

    /* PyTorch jobs, with the stand-in torch (tests/python/faketorch): the
     * default (segments) with a diagnosis window, a leak in backward(), the
     * tensors mode whose switch did not take, pinned host memory, an owner
     * found by no name, a window PyTorch refused and one cut short. */
    int pytorch = python_found();
    if (pytorch) {
        run_torch(&r, "torch_seed.py", "loss", NULL);
        check_report("torch_seed.py loss", &r);
        run_torch(&r, "torch_seed.py", "gradients", NULL);
        check_report("torch_seed.py gradients", &r);
        const char *fell_back[] = {"LEAKWATCH_TORCH_MODE=tensors",
                                   "JOB_ALLOC_CONF=expandable_segments:False", NULL};
        run_torch(&r, "torch_seed.py", "loss", fell_back);
        check_report("torch_seed.py loss, tensors mode", &r);
        run_torch(&r, "pinned_leak.py", "device", NULL);
        check_report("pinned_leak.py device", &r);
        /* A pinned host leak whose owner is found: the site's owner_search. */
        run_torch(&r, "torch_offload.py", NULL, NULL);
        check_report("torch_offload.py", &r);
        /* An owner no name of the user's code leads to: owner.unnamed_*. */
        run_torch(&r, "torch_owner_shapes.py", "hidden", NULL);
        check_report("torch_owner_shapes.py hidden", &r);
        /* The window's other states: torch.diagnosis.error and .window. */
        run_torch(&r, "torch_diagnosis_states.py", "unavailable", NULL);
        check_report("torch_diagnosis_states.py unavailable", &r);
        run_torch(&r, "torch_diagnosis_states.py", "recording", NULL);
        check_report("torch_diagnosis_states.py recording", &r);
    } else {
        printf("test_report_schema: no CPython >= 3.8: the PyTorch fields are not checked\n");
    }

    if (dumping) {
        for (int i = 0; i < nseen; i++) {
            printf("%s", seen[i].path);
            for (int t = LW_JSON_NULL; t <= LW_JSON_OBJECT; t++)
                if (seen[i].types & (1u << t)) printf(" %s", lw_json_type_name(t));
            printf("\n");
        }
        return;
    }
    for (int i = 0; i < nrows; i++)
        ck_assert_msg(rows[i].seen || (rows[i].pytorch && !pytorch),
                      "src/vocab/report_fields.def lists \"%s\", which no report had",
                      rows[i].path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("report_schema");
    TCase *tc = tcase_create("schema");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, reports_hold_the_listed_fields);
    suite_add_tcase(s, tc);
    return lw_check_run(s);
}
