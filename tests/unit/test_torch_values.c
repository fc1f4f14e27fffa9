/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/output/torch_values.c: values handed over by their
 * report paths are resolved to the report's rows (abbreviations written
 * out), refused when no row allows them, kept as a tree and written as JSON
 * in the rows' order, whatever order they came in. */
#include "../check_run.h"
#include "json_write.h"
#include "report_fields.h"
#include "torch_values.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO                                                                                         \
    { -1, -1, -1 }
static lw_tv_value num(const char *path, int i0, int i1, double v) {
    return (lw_tv_value){path, {i0, i1, -1}, LW_TV_NUMBER, v, NULL};
}
static lw_tv_value str(const char *path, int i0, int i1, const char *s) {
    return (lw_tv_value){path, {i0, i1, -1}, LW_TV_STRING, 0, s};
}
static lw_tv_value of(const char *path, int i0, int i1, int type) {
    return (lw_tv_value){path, {i0, i1, -1}, type, 1, NULL};
}

/* n written as compact JSON under no key; the caller frees. */
static char *written(const lw_tv_node *n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 0);
    lw_tv_write(&w, NULL, n);
    ck_assert(!lw_jw_failed(&w));
    fclose(f);
    return buf;
}

START_TEST(paths_resolve_to_rows) {
    ck_assert_int_eq(lw_tv_find("sites[].owners[].count"), LW_FIELD_sites_owners_count);
    ck_assert_int_eq(lw_tv_find("sites[].where.file"), LW_FIELD_WHERE_file);
    ck_assert_int_eq(lw_tv_find("answer.where.file"), LW_FIELD_WHERE_file);
    ck_assert_int_eq(lw_tv_find("torch.diagnosis.state"), LW_FIELD_WINDOW_state);
    ck_assert_int_eq(lw_tv_find("torch.diagnosis.windows[].owner_search.roots"),
                     LW_FIELD_WINDOW_owner_search_roots);
    ck_assert_int_eq(lw_tv_find("torch.backend.mode"), LW_FIELD_torch_backend_mode);
    ck_assert_int_eq(lw_tv_find("sites[].where"), LW_FIELD_sites_where);
    /* The abbreviations' own spelling, half paths and strangers: no row. */
    ck_assert_int_eq(lw_tv_find("WHERE.file"), LW_FIELD_COUNT);
    ck_assert_int_eq(lw_tv_find("sites[].where.fil"), LW_FIELD_COUNT);
    ck_assert_int_eq(lw_tv_find("torch.diagnosis.windows[].windows"), LW_FIELD_COUNT);
    ck_assert_int_eq(lw_tv_find(""), LW_FIELD_COUNT);
    /* The table built once agrees with the scan of the rows, on every path
     * the scan resolves. */
    ck_assert_int_eq(lw_report_field_find("answer.where.label"), LW_FIELD_WHERE_label);
    ck_assert_int_eq(lw_report_field_find("torch.diagnosis.windows[].state"),
                     LW_FIELD_WINDOW_state);
    ck_assert_int_eq(lw_report_field_find("nope"), LW_FIELD_COUNT);
    ck_assert_int_eq(lw_report_field_find("WHERE.file"), LW_FIELD_COUNT);
    for (int f = 0; f < LW_FIELD_COUNT; f++) {
        const char *p = lw_report_fields[f].path;
        if ((int)lw_report_field_find(p) == f) ck_assert_int_eq(lw_tv_find(p), f);
    }
}
END_TEST

/* Refused, and nothing stored: a path without a row, a type its row does
 * not allow, positions that do not match its "[]", a member under a row
 * that is no object. */
START_TEST(refusals_store_nothing) {
    lw_tv *t = lw_tv_new();
    ck_assert_ptr_nonnull(t);
    lw_tv_value bad[] = {
        num("sites[].nope", 0, -1, 1),
        num("WHERE.line", -1, -1, 3),
        str("sites[].id", 0, -1, "7"),             /* a number's row */
        of("sites[].owner", 0, -1, LW_TV_NULL),    /* an object, never null */
        of("sites[].leak", 0, -1, LW_TV_OBJECT),   /* a boolean */
        num("sites[].id", -1, -1, 7),              /* one "[]", no position */
        num("sites[].id", 0, 0, 7),                /* one "[]", two positions */
        num("sites[].id", LW_TV_MAX_INDEX, -1, 7), /* out of range */
        num("sites[]", 0, -1, 7),                  /* an element is an object */
        num("sites[].id.x", 0, -1, 1),
        num("sites[].frames[][]", 0, 0, 1),
        num("sites[]..id", 0, -1, 1),
        num(".sites", -1, -1, 1),
        {NULL, NO, LW_TV_NUMBER, 1, NULL},
        {"sites[].id", {0, -1, -1}, 9, 1, NULL},             /* no such type */
        {"sites[].note", {0, -1, -1}, LW_TV_STRING, 0, NULL} /* a string without text */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(lw_tv_add(t, &bad[i]) == -1, "took bad[%zu] %s", i,
                      bad[i].path ? bad[i].path : "NULL");
    char *s = written(lw_tv_root(t));
    ck_assert_str_eq(s, "{}");
    free(s);
    /* null where its row allows it; a number of a boolean's row is refused. */
    lw_tv_value good = of("sites[].where", 0, -1, LW_TV_NULL);
    ck_assert_int_eq(lw_tv_add(t, &good), 0);
    lw_tv_value b = {"sites[].leak", {0, -1, -1}, LW_TV_BOOL, 2, NULL};
    ck_assert_int_eq(lw_tv_add(t, &b), 0);
    s = written(lw_tv_root(t));
    ck_assert_str_eq(s, "{\"sites\":[{\"leak\":true,\"where\":null}]}");
    free(s);
    lw_tv_free(t);
}
END_TEST

/* Written in the rows' order (an object's members) and the positions'
 * (an array's elements), whatever order the values came in; containers
 * named empty are written empty; a later value at the same place wins. */
START_TEST(written_by_the_rows) {
    lw_tv *t = lw_tv_new();
    lw_tv_value v[] = {
        str("sites[].frames[].file", 0, 1, "b.py"),
        num("sites[].frames[].line", 0, 1, 9),
        str("sites[].frames[].file", 0, 0, "a.py"),
        of("sites[].frames[].line", 0, 0, LW_TV_NULL),
        num("sites[].bytes_per_step", 0, -1, 0.1),
        num("sites[].id", 0, -1, 1073741824),
        of("sites[].owners", 0, -1, LW_TV_ARRAY),
        num("sites[].id", 1, -1, 5),
        num("sites[].id", 1, -1, 6), /* again: replaces */
        of("sites[].place_to_look", 1, -1, LW_TV_NULL),
        str("sites[].place_to_look.file", 1, -1, "c.py"), /* then members: an object */
        num("sites[].live_bytes", 1, -1, NAN),
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ck_assert_int_eq(lw_tv_add(t, &v[i]), 0);
    char *s = written(lw_tv_root(t));
    ck_assert_str_eq(s, "{\"sites\":[{\"id\":1073741824,\"bytes_per_step\":0.1,\"frames\":[{"
                        "\"file\":\"a.py\",\"line\":null},{\"file\":\"b.py\",\"line\":9}],"
                        "\"owners\":[]},{\"id\":6,\"live_bytes\":null,\"place_to_look\":{"
                        "\"file\":\"c.py\"}}]}");
    free(s);
    /* Reading back, by row and by key. */
    lw_tv_node *sites = lw_tv_member(lw_tv_root(t), LW_FIELD_sites);
    ck_assert_uint_eq(lw_tv_count(sites), 2);
    lw_tv_node *first = lw_tv_first(sites);
    ck_assert(lw_tv_num(first, "bytes_per_step") == 0.1);
    ck_assert(isnan(lw_tv_num(first, "nope")));
    ck_assert_ptr_null(lw_tv_str(first, "id"));
    ck_assert_int_eq(lw_tv_type(lw_tv_member(first, LW_FIELD_sites_owners)), LW_TV_ARRAY);
    ck_assert_str_eq(
        lw_tv_str(lw_tv_member(lw_tv_next(first), LW_FIELD_sites_place_to_look), "file"), "c.py");
    /* The library's own words, set into an object. */
    lw_tv_node *frame = lw_tv_first(lw_tv_member(first, LW_FIELD_sites_frames));
    ck_assert_int_eq(lw_tv_set_str(t, frame, LW_FIELD_sites_frames_function, "f"), 0);
    ck_assert_int_eq(lw_tv_set_str(t, sites, LW_FIELD_sites_id, "x"), -1); /* an array */
    s = written(frame);
    ck_assert_str_eq(s, "{\"function\":\"f\",\"file\":\"a.py\",\"line\":null}");
    free(s);
    lw_tv_free(t);
}
END_TEST

/* Strings are the writer's to escape: quotes, backslashes, control
 * characters, non-ASCII as UTF-8, bytes that are not UTF-8 as \ufffd. */
START_TEST(odd_strings_escaped) {
    lw_tv *t = lw_tv_new();
    lw_tv_value v[] = {
        str("torch.backend.torch_version", -1, -1, "a\"b\\c\nd\te\x01"),
        str("torch.backend.mode", -1, -1, "t\xc3\xa9st \xe2\x9c\x93"),
        str("torch.backend.in_effect", -1, -1, "bad \xff\xfe end"),
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        ck_assert_int_eq(lw_tv_add(t, &v[i]), 0);
    char *s =
        written(lw_tv_member(lw_tv_member(lw_tv_root(t), LW_FIELD_torch), LW_FIELD_torch_backend));
    ck_assert_str_eq(s, "{\"in_effect\":\"bad \\ufffd\\ufffd end\",\"mode\":\"t\xc3\xa9st "
                        "\xe2\x9c\x93\",\"torch_version\":\"a\\\"b\\\\c\\nd\\te\\u0001\"}");
    free(s);
    lw_tv_free(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("torch_values");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, paths_resolve_to_rows);
    tcase_add_test(tc, refusals_store_nothing);
    tcase_add_test(tc, written_by_the_rows);
    tcase_add_test(tc, odd_strings_escaped);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
