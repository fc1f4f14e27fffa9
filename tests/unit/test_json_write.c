/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON writer (src/base/json_write.c), read back by the command's reader
 * (tools/base/json_doc.c). */
#include "json_doc.h"
#include "json_write.h"

#include "../check_run.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(json_write_reads_back) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_object(&w, NULL);
    lw_jw_str(&w, "plain", "train.py");
    lw_jw_str(&w, "controls", "a\"b\\c\n\x1b[31m\x7f");
    lw_jw_strn(&w, "nul", "x\0y", 3);
    lw_jw_str(&w, "bad_utf8", "caf\xe9");
    lw_jw_str(&w, "none", NULL);
    lw_jw_int(&w, "min", INT64_MIN);
    lw_jw_uint(&w, "max", (uint64_t)INT64_MAX);
    lw_jw_double(&w, "half", 0.5);
    lw_jw_double(&w, "nan", NAN);
    lw_jw_double(&w, "inf", -INFINITY);
    lw_jw_bool(&w, "yes", 1);
    lw_jw_array(&w, "list");
    lw_jw_int(&w, NULL, 1);
    lw_jw_object(&w, NULL);
    lw_jw_end(&w);
    lw_jw_end(&w);
    lw_jw_end(&w);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    char err[200];
    lw_json *r = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s in:\n%s", err, buf);
    ck_assert_str_eq(lw_json_string(lw_json_get(r, "controls")), "a\"b\\c\n\x1b[31m\x7f");
    ck_assert_uint_eq(lw_json_len(lw_json_get(r, "nul")), 3);
    ck_assert_str_eq(lw_json_string(lw_json_get(r, "bad_utf8")), "caf\xef\xbf\xbd");
    ck_assert(lw_json_is_null(lw_json_get(r, "none")));
    long long i;
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "min"), &i), 0);
    ck_assert(i == INT64_MIN);
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "max"), &i), 0);
    ck_assert(i == INT64_MAX);
    ck_assert(lw_json_number(lw_json_get(r, "half"), 0) == 0.5);
    ck_assert(lw_json_is_null(lw_json_get(r, "nan")));
    ck_assert(lw_json_is_null(lw_json_get(r, "inf")));
    ck_assert_int_eq(lw_json_bool(lw_json_get(r, "yes"), 0), 1);
    ck_assert_uint_eq(lw_json_len(lw_json_get(r, "list")), 2);
    /* Raw control bytes never reach the file. */
    for (size_t k = 0; k < len; k++)
        ck_assert_msg((unsigned char)buf[k] >= 0x20 || buf[k] == '\n' || buf[k] == ' ',
                      "raw control byte %#x at %zu", buf[k], k);
    lw_json_free(r);
    free(buf);
}
END_TEST

/* A document with every kind of value, long strings included. */
static void some_doc(lw_jw *w, long long *tells, int *ntells) {
    lw_jw_object(w, NULL);
    tells[(*ntells)++] = lw_jw_tell(w);
    lw_jw_str(w, "controls", "a\"b\\c\n\x1b[31m\x7f caf\xc3\xa9 caf\xe9 \xf0\x9f\x98\x80");
    char long_s[5000];
    for (size_t i = 0; i < sizeof long_s - 1; i++)
        long_s[i] = (char)('a' + i % 26);
    long_s[sizeof long_s - 1] = '\0';
    lw_jw_str(w, "long", long_s);
    tells[(*ntells)++] = lw_jw_tell(w);
    lw_jw_array(w, "list");
    for (int i = 0; i < 100; i++) {
        lw_jw_object(w, NULL);
        lw_jw_int(w, "i", -i);
        lw_jw_uint(w, "u", (uint64_t)i * 1000003u);
        lw_jw_double(w, "d", i / 7.0);
        lw_jw_bool(w, "b", i & 1);
        lw_jw_null(w, "n");
        lw_jw_raw(w, "r", "[1,2]", 5);
        lw_jw_end(w);
        tells[(*ntells)++] = lw_jw_tell(w);
    }
    lw_jw_end(w);
    lw_jw_end(w);
}

/* The writer's own buffer (the report's) changes nothing in the output, at
 * any buffer size, and lw_jw_tell counts what is still in it. */
START_TEST(json_write_buffered_same_bytes) {
    char *want = NULL, *got = NULL;
    size_t wlen = 0, glen = 0;
    long long wt[128], gt[128];
    int nw = 0, ng = 0;
    FILE *f = open_memstream(&want, &wlen);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    some_doc(&w, wt, &nw);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    static const size_t sizes[] = {1, 2, 7, 64, 4096, 16384};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char *buf = malloc(sizes[k]);
        ng = 0;
        f = open_memstream(&got, &glen);
        lw_jw_init(&w, f, 1);
        lw_jw_buffer(&w, buf, sizes[k]);
        some_doc(&w, gt, &ng);
        ck_assert_int_eq(lw_jw_failed(&w), 0);
        fclose(f);
        ck_assert_uint_eq(glen, wlen);
        ck_assert_msg(memcmp(got, want, wlen) == 0, "buffer of %zu bytes: output differs",
                      sizes[k]);
        ck_assert_int_eq(ng, nw);
        for (int i = 0; i < nw; i++)
            ck_assert_int_eq(gt[i], wt[i]);
        free(got);
        free(buf);
    }
    free(want);
}
END_TEST

/* A pair of numbers (an interval, a range): an array of two, an unknown
 * bound written as null as any number is. */
START_TEST(json_write_double_pair) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    lw_jw w;
    lw_jw_init(&w, f, 0);
    lw_jw_object(&w, NULL);
    lw_jw_double_pair(&w, "ci", 1.5, 2);
    lw_jw_double_pair(&w, "open", -1, NAN);
    lw_jw_end(&w);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    ck_assert_str_eq(out, "{\"ci\":[1.5,2],\"open\":[-1,null]}");
    free(out);
}
END_TEST

/* lw_jw_number: an integral value as an integer, else the fewest digits
 * that read back as it (as json.dumps writes a float), not finite: null. */
START_TEST(json_write_number_shortest) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    lw_jw w;
    lw_jw_init(&w, f, 0);
    lw_jw_array(&w, NULL);
    const double v[] = {512.0, 1073741824,         -3,  0.1,     0.0066, 1.0 / 3,
                        1e300, 9007199254740993.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        lw_jw_number(&w, NULL, v[i]);
    lw_jw_end(&w);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    ck_assert_str_eq(out, "[512,1073741824,-3,0.1,0.0066,0.3333333333333333,1e+300,"
                          "9007199254740992,null,null]");
    free(out);
}
END_TEST

int main(void) {
    Suite *s = suite_create("json_write");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, json_write_reads_back);
    tcase_add_test(tc, json_write_double_pair);
    tcase_add_test(tc, json_write_number_shortest);
    tcase_add_test(tc, json_write_buffered_same_bytes);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
