/* SPDX-License-Identifier: Apache-2.0 */
/* The command's reader of a report (tools/model/model.c): the plain values
 * reached through objects (the top level's, growth's, torch's, ...) are read
 * by the rows of the report's table of fields (src/vocab/report_fields.def),
 * each checked against its row's type, with no code of their own. */
#include "model.h"

#include "report_fields.h"

#include "../check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plain members the table lists in object ("" or "growth"). */
static int plain(int i, const char *object) {
    return lw_report_field_in((lw_field)i, object) &&
           !(lw_report_fields[i].types & (LW_RF_ARR | LW_RF_OBJ));
}

/* A report with every plain member of the top level and of growth, each a
 * value of its row's type (good) or of another (!good): numbers are the
 * row's index, strings "s<index>", booleans true. */
static char *report_of_rows(int good) {
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    ck_assert_ptr_nonnull(s);
    n += (size_t)snprintf(s + n, cap - n,
                          "{\"tool\": \"leakwatch\", \"verdict\": \"leak\", \"totals\": {}");
    for (int pass = 0; pass < 2; pass++) {
        const char *object = pass ? "growth" : "";
        if (pass) n += (size_t)snprintf(s + n, cap - n, ", \"growth\": {\"steps\": 1");
        for (int i = 0; i < LW_FIELD_COUNT; i++) {
            if (!plain(i, object) || i == LW_FIELD_tool || i == LW_FIELD_verdict ||
                i == LW_FIELD_growth_steps)
                continue;
            unsigned t = lw_report_fields[i].types;
            const char *key = lw_report_field_key((lw_field)i);
            if (!good) /* a number where a string is, a string elsewhere */
                n += (size_t)snprintf(s + n, cap - n,
                                      t & LW_RF_STR ? ", \"%s\": 7" : ", \"%s\": \"x\"", key);
            else if (t & LW_RF_NUM)
                n += (size_t)snprintf(s + n, cap - n, ", \"%s\": %d", key, i);
            else if (t & LW_RF_STR)
                n += (size_t)snprintf(s + n, cap - n, ", \"%s\": \"s%d\"", key, i);
            else
                n += (size_t)snprintf(s + n, cap - n, ", \"%s\": true", key);
            ck_assert_uint_lt(n, cap);
        }
        if (pass) n += (size_t)snprintf(s + n, cap - n, "}");
    }
    snprintf(s + n, cap - n, "}");
    return s;
}

/* Each row's member is read as its row's type says: a member added to the
 * table is read with no change to model.c. */
START_TEST(members_are_read_by_their_rows) {
    char *text = report_of_rows(1), err[512];
    lw_model m;
    ck_assert_msg(lw_model_load_text(&m, "rows", text, strlen(text), err, sizeof err) == 0, "%s",
                  err);
    int read = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < LW_FIELD_COUNT; i++) {
            if (!plain(i, pass ? "growth" : "") || i == LW_FIELD_tool || i == LW_FIELD_verdict ||
                i == LW_FIELD_growth_steps)
                continue;
            unsigned t = lw_report_fields[i].types;
            char want[32];
            snprintf(want, sizeof want, "s%d", i);
            if (t & LW_RF_NUM)
                ck_assert_msg(lw_model_num(&m, (lw_field)i) == i, "%s not read",
                              lw_report_fields[i].path);
            else if (t & LW_RF_STR)
                ck_assert_msg(lw_model_str(&m, (lw_field)i) &&
                                  !strcmp(lw_model_str(&m, (lw_field)i), want),
                              "%s not read", lw_report_fields[i].path);
            else
                ck_assert_msg(lw_model_bool(&m, (lw_field)i) == 1, "%s not read",
                              lw_report_fields[i].path);
            read++;
        }
    ck_assert_int_gt(read, 40);
    ck_assert_msg(m.nwarnings == 0, "warning: %s", m.nwarnings ? m.warnings[0] : "");
    /* The renderers' named copies are the same values. */
    ck_assert(m.pid == LW_FIELD_pid);
    ck_assert(m.growth.bytes_per_step == LW_FIELD_growth_bytes_per_step);
    ck_assert_int_eq(m.verdict, LW_VERDICT_LEAK);
    /* Values inside arrays or objects themselves are no slots. */
    ck_assert(isnan(lw_model_num(&m, LW_FIELD_growth_cycles)));
    ck_assert_ptr_null(lw_model_str(&m, LW_FIELD_WHERE_label));
    ck_assert_int_eq(lw_model_bool(&m, LW_FIELD_COUNT), -1);
    lw_model_free(&m);
    free(text);
}
END_TEST

/* A member of another type than its row's is unknown, with a warning naming
 * it. */
START_TEST(mistyped_members_warn) {
    char *text = report_of_rows(0), err[512];
    lw_model m;
    ck_assert_msg(lw_model_load_text(&m, "rows", text, strlen(text), err, sizeof err) == 0, "%s",
                  err);
    ck_assert(isnan(lw_model_num(&m, LW_FIELD_growth_p_value)));
    ck_assert_ptr_null(lw_model_str(&m, LW_FIELD_growth_reason));
    ck_assert_int_eq(lw_model_bool(&m, LW_FIELD_growth_decided_at_exit), -1);
    int p_value = 0, reason = 0;
    for (size_t i = 0; i < m.nwarnings; i++) {
        p_value |= strstr(m.warnings[i], "growth.p_value is a string") != NULL;
        reason |= strstr(m.warnings[i], "growth.reason is a number") != NULL;
    }
    ck_assert(p_value && reason);
    lw_model_free(&m);
    free(text);
}
END_TEST

/* The command's lists of the fields of repeated objects (model.h: counts,
 * frames, sites, failures) name only fields the table has, with the type
 * the row gives: the reader cannot read a field the report does not list. */
static void list_in_table(const lw_m_fields *fs, const char *object) {
    for (size_t i = 0; i < fs->n; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s.%s", object, fs->f[i].key);
        int found = 0;
        for (int r = 0; r < LW_FIELD_COUNT && !found; r++) {
            if (strcmp(lw_report_fields[r].path, path) != 0) continue;
            found = 1;
            unsigned want = fs->f[i].type == LW_MF_NUM   ? LW_RF_NUM
                            : fs->f[i].type == LW_MF_STR ? LW_RF_STR
                                                         : LW_RF_BOOL;
            ck_assert_msg(lw_report_fields[r].types & want, "%s: model.h reads it as another type",
                          path);
        }
        ck_assert_msg(found, "model.h reads %s, which src/vocab/report_fields.def does not list",
                      path);
    }
}

/* Plain values deeper than the top level, growth and oom, which the reader
 * has no code of its own for: read by their rows too. */
START_TEST(deeper_values_are_read_by_their_rows) {
    static const char text[] =
        "{\"tool\": \"leakwatch\", \"verdict\": \"no_leak\", \"totals\": {},"
        " \"growth\": {\"cycles\": {\"count\": 3, \"signal\": \"live_bytes\"}},"
        " \"torch\": {\"mode\": \"segments\", \"backend\": {\"torch_version\": \"2.6\","
        " \"fell_back\": false}, \"steps\": {\"marks\": \"many\"}}}";
    char err[512];
    lw_model m;
    ck_assert_msg(lw_model_load_text(&m, "deep", text, strlen(text), err, sizeof err) == 0, "%s",
                  err);
    ck_assert(lw_model_num(&m, LW_FIELD_growth_cycles_count) == 3);
    ck_assert_str_eq(lw_model_str(&m, LW_FIELD_growth_cycles_signal), "live_bytes");
    ck_assert_str_eq(lw_model_str(&m, LW_FIELD_torch_mode), "segments");
    ck_assert_str_eq(lw_model_str(&m, LW_FIELD_torch_backend_torch_version), "2.6");
    ck_assert_int_eq(lw_model_bool(&m, LW_FIELD_torch_backend_fell_back), 0);
    /* Absent: unknown, silently; mistyped: unknown, with a warning. */
    ck_assert(isnan(lw_model_num(&m, LW_FIELD_growth_cycles_period_steps)));
    ck_assert(isnan(lw_model_num(&m, LW_FIELD_tracker_live_records)));
    ck_assert(isnan(lw_model_num(&m, LW_FIELD_torch_steps_marks)));
    ck_assert_uint_eq(m.nwarnings, 1);
    ck_assert_ptr_nonnull(strstr(m.warnings[0], "torch.steps.marks is a string"));
    lw_model_free(&m);
}
END_TEST

START_TEST(field_lists_are_in_the_table) {
    list_in_table(&lw_m_counts_fields, "COUNTS");
    list_in_table(&lw_m_frame_fields, "sites[].frames[]");
    list_in_table(&lw_m_site_fields, "sites[]");
    list_in_table(&lw_m_failure_fields, "failed_allocations[]");
}
END_TEST

int main(void) {
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, members_are_read_by_their_rows);
    tcase_add_test(tc, mistyped_members_warn);
    tcase_add_test(tc, deeper_values_are_read_by_their_rows);
    tcase_add_test(tc, field_lists_are_in_the_table);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
