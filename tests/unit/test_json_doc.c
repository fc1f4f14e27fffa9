/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for tools/base/json_doc.c: what leakwatch adds on top of jansson (limits, the byte
 * order mark, regular files only, messages with line and column, exact integers, paths). The
 * JSON grammar itself is jansson's. */
#include "json_doc.h"

#include "../check_run.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static lw_json *parse(const char *s, const lw_json_limits *lim, char *err, size_t n) {
    return lw_json_parse(s, strlen(s), lim, err, n);
}

START_TEST(values_and_paths) {
    char err[200];
    lw_json *r = parse("{\"a\": {\"b\": [1, 2.5, \"x\", true, null]}, \"n\": 9223372036854775807,"
                       " \"neg\": -9223372036854775808, \"e\": 1e3, \"f\": 1.5}",
                       NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(lw_json_type_of(lw_json_path(r, "a.b")), LW_JSON_ARRAY);
    ck_assert_uint_eq(lw_json_len(lw_json_path(r, "a.b")), 5);
    ck_assert(lw_json_number(lw_json_path(r, "a.b[1]"), 0) == 2.5);
    ck_assert_str_eq(lw_json_string(lw_json_path(r, "a.b[2]")), "x");
    ck_assert_int_eq(lw_json_bool(lw_json_path(r, "a.b[3]"), -1), 1);
    ck_assert(lw_json_is_null(lw_json_path(r, "a.b[4]")));
    ck_assert(!lw_json_is_null(lw_json_path(r, "a.b[5]"))); /* absent is not null */
    long long i;
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "n"), &i), 0);
    ck_assert(i == 9223372036854775807LL);
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "neg"), &i), 0);
    ck_assert(i == (-9223372036854775807LL - 1));
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "e"), &i), 0);
    ck_assert(i == 1000);
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "f"), &i), -1);
    unsigned long long u;
    ck_assert_int_eq(lw_json_uint64(lw_json_get(r, "neg"), &u), -1);
    /* Malformed paths find nothing. */
    ck_assert_ptr_null(lw_json_path(r, "a..b"));
    ck_assert_ptr_null(lw_json_path(r, "a."));
    ck_assert_ptr_null(lw_json_path(r, "a.b[x]"));
    ck_assert_ptr_null(lw_json_path(r, "a.b[-1]"));
    ck_assert_ptr_eq(lw_json_path(r, ""), r);
    /* Members in document order. */
    ck_assert_str_eq(lw_json_key_at(r, 0), "a");
    ck_assert_str_eq(lw_json_key_at(r, 4), "f");
    ck_assert_ptr_null(lw_json_key_at(r, 5));
    ck_assert(lw_json_number(lw_json_value_at(r, 4), 0) == 1.5);
    lw_json_free(r);
}
END_TEST

START_TEST(strict_with_line_and_column) {
    char err[200];
    static const char *bad[] = {"{\"a\": 1,}", "[1, 2",         "{'a': 1}", "[01]",
                                "[1] x",       "[\"\\ud800\"]", "[NaN]",    "[\"\xC0\xAF\"]"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        lw_json *r = parse(bad[k], NULL, err, sizeof err);
        ck_assert_msg(r == NULL, "accepted %s", bad[k]);
        ck_assert_msg(strstr(err, "line 1, column ") == err, "%s: %s", bad[k], err);
    }
    lw_json *r = parse("{\n  \"a\": 1\n  \"b\": 2\n}", NULL, err, sizeof err);
    ck_assert_ptr_null(r);
    ck_assert_msg(strncmp(err, "line 3, column ", 15) == 0, "%s", err);
}
END_TEST

START_TEST(byte_order_mark_and_nul) {
    char err[200];
    lw_json *r = parse("\xEF\xBB\xBF{\"a\": \"x\\u0000y\"}", NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    ck_assert_uint_eq(lw_json_len(lw_json_get(r, "a")), 3);
    lw_json_free(r);
}
END_TEST

START_TEST(limits) {
    char err[200];
    lw_json_limits depth = {.max_depth = 3};
    lw_json *r = parse("[[[1]]]", &depth, err, sizeof err);
    ck_assert_ptr_nonnull(r);
    lw_json_free(r);
    ck_assert_ptr_null(parse("[[[[1]]]]", &depth, err, sizeof err));
    ck_assert_msg(strstr(err, "deeper than 3") != NULL, "%s", err);
    /* Beyond what any parser should recurse into: refused, no crash. */
    size_t n = 100000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\0';
    ck_assert_ptr_null(parse(deep, NULL, err, sizeof err));
    free(deep);
    lw_json_limits nodes = {.max_nodes = 4};
    ck_assert_ptr_null(parse("[1, 2, 3, 4]", &nodes, err, sizeof err));
    ck_assert_msg(strstr(err, "more than 4 values") != NULL, "%s", err);
    lw_json_limits bytes = {.max_bytes = 4};
    ck_assert_ptr_null(parse("[1, 2]", &bytes, err, sizeof err));
    ck_assert_msg(strstr(err, "over the limit") != NULL, "%s", err);
}
END_TEST

START_TEST(files) {
    char err[300], dir[] = "/tmp/test_json_doc_XXXXXX", path[200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"version\": \"1\"}\n", f);
    fclose(f);
    lw_json *r = lw_json_parse_file(path, NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s", err);
    lw_json_free(r);
    /* Truncated: the message names the file and the place. */
    f = fopen(path, "w");
    fputs("{\"version\": ", f);
    fclose(f);
    ck_assert_ptr_null(lw_json_parse_file(path, NULL, err, sizeof err));
    ck_assert_msg(strncmp(err, path, strlen(path)) == 0 && strstr(err, "line 1"), "%s", err);
    /* A FIFO is refused at once, never waited on. */
    snprintf(path, sizeof path, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_ptr_null(lw_json_parse_file(path, NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
    unlink(path);
    ck_assert_ptr_null(lw_json_parse_file(dir, NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
    snprintf(path, sizeof path, "%s/missing.json", dir);
    ck_assert_ptr_null(lw_json_parse_file(path, NULL, err, sizeof err));
    ck_assert_msg(strstr(err, "cannot open") == err, "%s", err);
    snprintf(path, sizeof path, "%s/r.json", dir);
    unlink(path);
    rmdir(dir);
}
END_TEST

static Suite *json_doc_suite(void) {
    Suite *s = suite_create("json_doc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, values_and_paths);
    tcase_add_test(tc, strict_with_line_and_column);
    tcase_add_test(tc, byte_order_mark_and_nul);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, files);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(json_doc_suite());
}
