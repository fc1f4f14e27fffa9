/* Unit tests for tools/json_read.c: every value type, paths, escapes and UTF-8, exact 64-bit
 * integers, each class of error with its message, the three limits, a 50 MB document and the
 * file reader. */
#include "../check_run.h"
#include "json_read.h"

#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char errbuf[512];

/* Parses a NUL-terminated document that must be valid. */
static lw_json *ok_parse(const char *text) {
    lw_json *r = lw_json_parse(text, strlen(text), NULL, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "parse of <%s> failed: %s", text, errbuf);
    ck_assert_str_eq(errbuf, "");
    return r;
}

/* Parses text[0..len) under lim, which must fail with exactly msg. */
static void bad_n(const char *text, size_t len, const lw_json_limits *lim, const char *msg) {
    strcpy(errbuf, "(unchanged)");
    lw_json *r = lw_json_parse(text, len, lim, errbuf, sizeof errbuf);
    ck_assert_msg(r == NULL, "parse of <%.*s> should have failed", (int)len, text);
    ck_assert_str_eq(errbuf, msg);
}

static void bad(const char *text, const char *msg) {
    bad_n(text, strlen(text), NULL, msg);
}

/* ---- valid documents ---- */

START_TEST(test_scalars) {
    lw_json *r = ok_parse("null");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_NULL);
    ck_assert_int_eq(lw_json_is_null(r), 1);
    lw_json_free(r);

    r = ok_parse(" \t\r\n true \n");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_BOOL);
    ck_assert_int_eq(lw_json_bool(r, -1), 1);
    ck_assert_int_eq(lw_json_is_null(r), 0);
    lw_json_free(r);

    r = ok_parse("false");
    ck_assert_int_eq(lw_json_bool(r, -1), 0);
    lw_json_free(r);

    r = ok_parse("-12.5e-1");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_NUMBER);
    ck_assert(lw_json_number(r, 0) == -1.25);
    ck_assert_str_eq(lw_json_number_text(r), "-12.5e-1");
    lw_json_free(r);

    r = ok_parse("\"hi there\"");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_STRING);
    ck_assert_str_eq(lw_json_string(r), "hi there");
    ck_assert_uint_eq(lw_json_len(r), 8);
    lw_json_free(r);

    r = ok_parse("\"\"");
    ck_assert_str_eq(lw_json_string(r), "");
    ck_assert_uint_eq(lw_json_len(r), 0);
    lw_json_free(r);
}
END_TEST

START_TEST(test_containers) {
    lw_json *r = ok_parse("[]");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_ARRAY);
    ck_assert_uint_eq(lw_json_len(r), 0);
    ck_assert_ptr_null(lw_json_at(r, 0));
    lw_json_free(r);

    r = ok_parse("{ }");
    ck_assert_int_eq(lw_json_type_of(r), LW_JSON_OBJECT);
    ck_assert_uint_eq(lw_json_len(r), 0);
    ck_assert_ptr_null(lw_json_get(r, "a"));
    lw_json_free(r);

    r = ok_parse("[1, \"a\", null, true, false, {\"k\": [[], {}]}, [0.5]]");
    ck_assert_uint_eq(lw_json_len(r), 7);
    ck_assert(lw_json_number(lw_json_at(r, 0), 0) == 1);
    ck_assert_str_eq(lw_json_string(lw_json_at(r, 1)), "a");
    ck_assert(lw_json_is_null(lw_json_at(r, 2)));
    ck_assert_int_eq(lw_json_bool(lw_json_at(r, 3), -1), 1);
    ck_assert_int_eq(lw_json_bool(lw_json_at(r, 4), -1), 0);
    const lw_json *o = lw_json_at(r, 5);
    ck_assert_int_eq(lw_json_type_of(o), LW_JSON_OBJECT);
    ck_assert_uint_eq(lw_json_len(o), 1);
    ck_assert_str_eq(lw_json_key_at(o, 0), "k");
    const lw_json *k = lw_json_get(o, "k");
    ck_assert_ptr_eq(k, lw_json_value_at(o, 0));
    ck_assert_int_eq(lw_json_type_of(lw_json_at(k, 0)), LW_JSON_ARRAY);
    ck_assert_int_eq(lw_json_type_of(lw_json_at(k, 1)), LW_JSON_OBJECT);
    ck_assert(lw_json_number(lw_json_path(r, "[6][0]"), 0) == 0.5);
    ck_assert_ptr_null(lw_json_at(r, 7));
    lw_json_free(r);

    r = ok_parse("{\"b\":1,\"a\":{\"x\":null},\"c\":[true]}");
    ck_assert_uint_eq(lw_json_len(r), 3);
    ck_assert_str_eq(lw_json_key_at(r, 0), "b");
    ck_assert_str_eq(lw_json_key_at(r, 1), "a");
    ck_assert_str_eq(lw_json_key_at(r, 2), "c");
    ck_assert_ptr_null(lw_json_key_at(r, 3));
    ck_assert_ptr_null(lw_json_value_at(r, 3));
    ck_assert(lw_json_is_null(lw_json_get(lw_json_get(r, "a"), "x")));
    lw_json_free(r);
}
END_TEST

START_TEST(test_paths) {
    lw_json *r = ok_parse("{\"totals\": {\"live_bytes\": 123, \"\": 7},"
                          " \"sites\": [{\"frames\": [{\"function\": \"a\"}, {\"function\": \"b\"},"
                          " {\"function\": \"c\"}]}], \"m\": [[10, 11], [12]]}");
    long long v = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_path(r, "totals.live_bytes"), &v), 0);
    ck_assert_int_eq(v, 123);
    ck_assert_str_eq(lw_json_string(lw_json_path(r, "sites[0].frames[2].function")), "c");
    ck_assert_str_eq(lw_json_string(lw_json_path(r, "sites[0].frames[0].function")), "a");
    ck_assert(lw_json_number(lw_json_path(r, "m[1][0]"), 0) == 12);
    ck_assert(lw_json_number(lw_json_path(r, "m[0][01]"), 0) == 11);
    ck_assert_ptr_eq(lw_json_path(r, ""), r);
    /* Missing steps and malformed paths. */
    static const char *none[] = {"sites[1]",
                                 "sites[0].frames[3]",
                                 "totals.nope",
                                 "totals..live_bytes",
                                 "totals.",
                                 ".totals",
                                 "sites[x]",
                                 "sites[-1]",
                                 "sites[0]frames",
                                 "sites[",
                                 "sites[0",
                                 "sites[]",
                                 "sites[99999999999999999999999999]",
                                 "totals[0]",
                                 "sites.0",
                                 "totals.live_bytes.x",
                                 "[0]"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        ck_assert_msg(lw_json_path(r, none[i]) == NULL, "path %s should be NULL", none[i]);
    ck_assert_ptr_null(lw_json_path(NULL, "a"));
    ck_assert_ptr_null(lw_json_path(r, NULL));
    lw_json_free(r);

    r = ok_parse("[[1,2],[3]]");
    ck_assert(lw_json_number(lw_json_path(r, "[0][1]"), 0) == 2);
    ck_assert_ptr_null(lw_json_path(r, "a"));
    lw_json_free(r);
}
END_TEST

START_TEST(test_escapes_utf8) {
    lw_json *r = ok_parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"");
    ck_assert_str_eq(lw_json_string(r), "\"\\/\b\f\n\r\t");
    lw_json_free(r);

    /* BMP escapes (either hex case), a surrogate pair, raw UTF-8 of each length. */
    r = ok_parse(
        "[\"\\u00e9\\u20AC\\uD83D\\ude00\\u0041\", \"h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\","
        " \"\xF4\x8F\xBF\xBF\xEF\xBF\xBF\"]");
    ck_assert_str_eq(lw_json_string(lw_json_at(r, 0)), "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"
                                                       "A");
    ck_assert_str_eq(lw_json_string(lw_json_at(r, 1)), "h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    ck_assert_uint_eq(lw_json_len(lw_json_at(r, 2)), 7);
    lw_json_free(r);

    /* \u0000 is kept: full length in lw_json_len, C view stops at it; names likewise. */
    r = ok_parse("{\"k\\u0000x\": \"a\\u0000b\", \"k\": 1}");
    const lw_json *s = lw_json_value_at(r, 0);
    ck_assert_uint_eq(lw_json_len(s), 3);
    ck_assert(memcmp(lw_json_string(s), "a\0b", 4) == 0);
    ck_assert_ptr_eq(lw_json_get_n(r, "k\0x", 3), s);
    ck_assert(lw_json_number(lw_json_get(r, "k"), 0) == 1);
    lw_json_free(r);

    /* DEL and U+0080.. are fine raw; escaped control characters are fine. */
    r = ok_parse("\"\x7F\xC2\x80\\u001f\"");
    ck_assert_str_eq(lw_json_string(r), "\x7F\xC2\x80\x1F");
    lw_json_free(r);
}
END_TEST

START_TEST(test_numbers) {
    lw_json *r = ok_parse("[0, -0, 0.1, 1e308, 5e-324, 1.7976931348623157e308, 1e400, -1e400,"
                          " 123456789012345678901234567890, 1E+2, 2.5E-3, 1e-400, 9007199254740993,"
                          " 0.30000000000000004, 1.50e3]");
    ck_assert(lw_json_number(lw_json_at(r, 0), 1) == 0);
    ck_assert(signbit(lw_json_number(lw_json_at(r, 1), 1)));
    ck_assert(lw_json_number(lw_json_at(r, 2), 0) == 0.1);
    ck_assert(lw_json_number(lw_json_at(r, 3), 0) == 1e308);
    ck_assert(lw_json_number(lw_json_at(r, 4), 0) == 5e-324);
    ck_assert(lw_json_number(lw_json_at(r, 5), 0) == 1.7976931348623157e308);
    ck_assert(isinf(lw_json_number(lw_json_at(r, 6), 0)) &&
              lw_json_number(lw_json_at(r, 6), 0) > 0);
    ck_assert(isinf(lw_json_number(lw_json_at(r, 7), 0)) &&
              lw_json_number(lw_json_at(r, 7), 0) < 0);
    ck_assert(lw_json_number(lw_json_at(r, 8), 0) == 123456789012345678901234567890.0);
    ck_assert(lw_json_number(lw_json_at(r, 9), 0) == 100);
    ck_assert(lw_json_number(lw_json_at(r, 10), 0) == 2.5e-3);
    ck_assert(lw_json_number(lw_json_at(r, 11), 1) == 0);
    ck_assert(lw_json_number(lw_json_at(r, 12), 0) == 9007199254740992.0); /* ties to even */
    ck_assert(lw_json_number(lw_json_at(r, 13), 0) == 0.30000000000000004);
    ck_assert_str_eq(lw_json_number_text(lw_json_at(r, 14)), "1.50e3");
    ck_assert(lw_json_number(lw_json_at(r, 14), 0) == 1500);
    lw_json_free(r);
}
END_TEST

/* The decimal point must not depend on LC_NUMERIC (a ',' locale would read "1.5" as 1). */
START_TEST(test_numbers_locale) {
    static const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
    const char *got = NULL;
    for (size_t i = 0; i < sizeof locs / sizeof *locs && !got; i++)
        got = setlocale(LC_NUMERIC, locs[i]);
    lw_json *r = ok_parse("[1.5, 1.25e-300, 3.14159265358979323846]");
    ck_assert(lw_json_number(lw_json_at(r, 0), 0) == 1.5);
    ck_assert(lw_json_number(lw_json_at(r, 1), 0) == 1.25e-300);
    ck_assert(lw_json_number(lw_json_at(r, 2), 0) == 3.14159265358979323846);
    lw_json_free(r);
    setlocale(LC_NUMERIC, "C");
}
END_TEST

START_TEST(test_integers) {
    static const struct {
        const char *lit;
        int irc;
        long long i;
        int urc;
        unsigned long long u;
    } t[] = {
        {"0", 0, 0, 0, 0},
        {"-0", 0, 0, 0, 0},
        {"42", 0, 42, 0, 42},
        {"-42", 0, -42, -1, 0},
        {"9223372036854775807", 0, 9223372036854775807LL, 0, 9223372036854775807ULL},
        {"-9223372036854775808", 0, -9223372036854775807LL - 1, -1, 0},
        {"9223372036854775808", -1, 0, 0, 9223372036854775808ULL},
        {"-9223372036854775809", -1, 0, -1, 0},
        {"18446744073709551615", -1, 0, 0, 18446744073709551615ULL},
        {"18446744073709551616", -1, 0, -1, 0},
        {"99999999999999999999999", -1, 0, -1, 0},
        {"1e3", 0, 1000, 0, 1000},
        {"1E+3", 0, 1000, 0, 1000},
        {"10.0", 0, 10, 0, 10},
        {"1200.00e-2", 0, 12, 0, 12},
        {"0.0012e4", 0, 12, 0, 12},
        {"0.000e-99999999999999999999", 0, 0, 0, 0},
        {"1.8446744073709551615e19", -1, 0, 0, 18446744073709551615ULL},
        {"1.8446744073709551616e19", -1, 0, -1, 0},
        {"1.5", -1, 0, -1, 0},
        {"1e-1", -1, 0, -1, 0},
        {"10e-1", 0, 1, 0, 1},
        {"1e19", -1, 0, 0, 10000000000000000000ULL},
        {"1e20", -1, 0, -1, 0},
        {"1e999999999999999999999", -1, 0, -1, 0},
        {"9007199254740993", 0, 9007199254740993LL, 0, 9007199254740993ULL}, /* not a double */
    };
    for (size_t k = 0; k < sizeof t / sizeof *t; k++) {
        lw_json *r = ok_parse(t[k].lit);
        long long i = 12345;
        unsigned long long u = 12345;
        ck_assert_msg(lw_json_int64(r, &i) == t[k].irc, "int64(%s)", t[k].lit);
        ck_assert_msg(i == (t[k].irc ? 12345 : t[k].i), "int64(%s) = %lld", t[k].lit, i);
        ck_assert_msg(lw_json_uint64(r, &u) == t[k].urc, "uint64(%s)", t[k].lit);
        ck_assert_msg(u == (t[k].urc ? 12345 : t[k].u), "uint64(%s) = %llu", t[k].lit, u);
        lw_json_free(r);
    }
    lw_json *r = ok_parse("[\"1\", null, true]");
    long long i;
    unsigned long long u;
    for (size_t k = 0; k < 3; k++) {
        ck_assert_int_eq(lw_json_int64(lw_json_at(r, k), &i), -1);
        ck_assert_int_eq(lw_json_uint64(lw_json_at(r, k), &u), -1);
    }
    ck_assert_int_eq(lw_json_int64(NULL, &i), -1);
    lw_json_free(r);
}
END_TEST

START_TEST(test_duplicates_and_index) {
    lw_json *r = ok_parse("{\"a\": 1, \"b\": 2, \"a\": 3}");
    ck_assert_uint_eq(lw_json_len(r), 3);
    ck_assert(lw_json_number(lw_json_get(r, "a"), 0) == 3);
    ck_assert_str_eq(lw_json_key_at(r, 2), "a");
    ck_assert(lw_json_number(lw_json_value_at(r, 0), 0) == 1);
    lw_json_free(r);

    /* Above 16 members the sorted index answers; duplicates still resolve to the last. */
    char doc[4096];
    size_t n = 0;
    n += (size_t)snprintf(doc + n, sizeof doc - n, "{");
    for (int i = 0; i < 40; i++) {
        int key = (i == 20 || i == 39) ? 5 : i;
        n += (size_t)snprintf(doc + n, sizeof doc - n, "%s\"k%d\": %d", i ? ", " : "", key, i);
    }
    n += (size_t)snprintf(doc + n, sizeof doc - n, ", \"\": -1, \"k\": -2, \"k50\\u0000\": -3}");
    r = ok_parse(doc);
    ck_assert_uint_eq(lw_json_len(r), 43);
    ck_assert(lw_json_number(lw_json_get(r, "k5"), 0) == 39);
    ck_assert(lw_json_number(lw_json_get(r, "k6"), 0) == 6);
    ck_assert(lw_json_number(lw_json_get(r, "k0"), 0) == 0);
    ck_assert(lw_json_number(lw_json_get(r, "k38"), 0) == 38);
    ck_assert(lw_json_number(lw_json_get(r, ""), 0) == -1);
    ck_assert(lw_json_number(lw_json_get(r, "k"), 0) == -2);
    ck_assert(lw_json_number(lw_json_get_n(r, "k50\0", 4), 0) == -3);
    ck_assert_ptr_null(lw_json_get(r, "k50"));
    ck_assert_ptr_null(lw_json_get(r, "k20"));
    ck_assert_ptr_null(lw_json_get(r, "k39"));
    ck_assert_ptr_null(lw_json_get(r, "k4 "));
    ck_assert_ptr_null(lw_json_get(r, "zzz"));
    ck_assert_ptr_null(lw_json_get(r, "a"));
    ck_assert_str_eq(lw_json_key_at(r, 20), "k5");
    ck_assert(lw_json_number(lw_json_value_at(r, 20), 0) == 20);
    lw_json_free(r);
}
END_TEST

/* Repeated lookups in a 200,000-member object: must stay fast (index, not a linear scan). */
START_TEST(test_big_object_lookup) {
    enum { N = 200000 };
    size_t cap = (size_t)N * 24 + 16, n = 0;
    char *doc = malloc(cap);
    ck_assert_ptr_nonnull(doc);
    doc[n++] = '{';
    for (int i = 0; i < N; i++)
        n += (size_t)snprintf(doc + n, cap - n, "%s\"m%d\":%d", i ? "," : "", (i * 7919) % N, i);
    doc[n++] = '}';
    lw_json *r = lw_json_parse(doc, n, NULL, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    clock_t t0 = clock();
    char key[32];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "m%d", (i * 7919) % N);
        long long v = -1;
        ck_assert_int_eq(lw_json_int64(lw_json_get(r, key), &v), 0);
        ck_assert_int_eq(v, i);
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    ck_assert_msg(secs < 5.0, "200k lookups took %.2f s", secs);
    lw_json_free(r);
    free(doc);
}
END_TEST

START_TEST(test_accessors_wrong_type) {
    lw_json *r = ok_parse("[\"s\", 1, {\"a\": 1}, [1], true, null]");
    const lw_json *s = lw_json_at(r, 0), *num = lw_json_at(r, 1), *obj = lw_json_at(r, 2),
                  *arr = lw_json_at(r, 3), *b = lw_json_at(r, 4), *nul = lw_json_at(r, 5);
    ck_assert(lw_json_number(s, 7) == 7);
    ck_assert_ptr_null(lw_json_number_text(s));
    ck_assert_ptr_null(lw_json_string(num));
    ck_assert_int_eq(lw_json_bool(nul, -1), -1);
    ck_assert_int_eq(lw_json_bool(num, 5), 5);
    ck_assert_ptr_null(lw_json_at(obj, 0));
    ck_assert_ptr_null(lw_json_get(arr, "a"));
    ck_assert_ptr_null(lw_json_get(obj, NULL));
    ck_assert_ptr_null(lw_json_key_at(arr, 0));
    ck_assert_ptr_null(lw_json_value_at(arr, 0));
    ck_assert_uint_eq(lw_json_len(num), 0);
    ck_assert_uint_eq(lw_json_len(b), 0);
    ck_assert_int_eq(lw_json_is_null(b), 0);
    /* Absent values. */
    ck_assert_int_eq(lw_json_type_of(NULL), LW_JSON_NULL);
    ck_assert_int_eq(lw_json_is_null(NULL), 0);
    ck_assert(lw_json_number(NULL, 3) == 3);
    ck_assert_ptr_null(lw_json_string(NULL));
    ck_assert_int_eq(lw_json_bool(NULL, 9), 9);
    ck_assert_uint_eq(lw_json_len(NULL), 0);
    ck_assert_ptr_null(lw_json_get(NULL, "a"));
    ck_assert_ptr_null(lw_json_at(NULL, 0));
    ck_assert_uint_eq(lw_json_key_len_at(obj, 0), 1);
    ck_assert_uint_eq(lw_json_key_len_at(obj, 1), 0);
    ck_assert_uint_eq(lw_json_key_len_at(arr, 0), 0);
    static const char *names[] = {"null", "bool", "number", "string", "array", "object"};
    for (int t = LW_JSON_NULL; t <= LW_JSON_OBJECT; t++)
        ck_assert_str_eq(lw_json_type_name((lw_json_type)t), names[t]);
    ck_assert_str_eq(lw_json_type_name(lw_json_type_of(num)), "number");
    /* Only the root frees; a child or NULL is ignored. */
    lw_json_free((lw_json *)obj);
    lw_json_free(NULL);
    lw_json_free(r);
}
END_TEST

START_TEST(test_bom) {
    lw_json *r = ok_parse("\xEF\xBB\xBF {\"a\": 1}");
    ck_assert_uint_eq(lw_json_len(r), 1);
    lw_json_free(r);
    bad("\xEF\xBB\xBF{x", "line 1, column 2: expected a member name in double quotes or '}', "
                          "found 'x'");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_err_truncated) {
    bad("{\"a\": [1, 2", "line 1, column 12: unexpected end of input, expected ',' or ']' after "
                         "array element (file truncated?)");
    bad("{\"sites\": [\n  {\"id\": 1},\n  {\"id\"",
        "line 3, column 8: unexpected end of input, expected ':' after object member name (file "
        "truncated?)");
    bad("{\"a\": 1", "line 1, column 8: unexpected end of input, expected ',' or '}' after object "
                     "member (file truncated?)");
    bad("[", "line 1, column 2: unexpected end of input, expected a value (file truncated?)");
    bad("{\"a\":", "line 1, column 6: unexpected end of input, expected a value (file truncated?)");
    bad("{", "line 1, column 2: unexpected end of input, expected a member name in double quotes "
             "or '}' (file truncated?)");
    bad("[1,", "line 1, column 4: unexpected end of input, expected a value (file truncated?)");
    bad("\"abc", "line 1, column 5: unexpected end of input, expected '\"' to close the string "
                 "(file truncated?)");
    bad("[tr", "line 1, column 4: unexpected end of input, expected 'true' (file truncated?)");
    bad("nul", "line 1, column 4: unexpected end of input, expected 'null' (file truncated?)");
    bad("-", "line 1, column 2: unexpected end of input, expected a digit after '-' (file "
             "truncated?)");
    bad("[1.", "line 1, column 4: unexpected end of input, expected a digit after the decimal "
               "point (file truncated?)");
    bad("1e+", "line 1, column 4: unexpected end of input, expected a digit in the exponent (file "
               "truncated?)");
    bad("\"\\", "line 1, column 3: unexpected end of input, expected an escape character after "
                "'\\' (file truncated?)");
    bad("\"\\u12", "line 1, column 6: unexpected end of input, expected 4 hex digits after '\\u' "
                   "(file truncated?)");
    bad("\"\\ud83d", "line 1, column 8: unexpected end of input, expected a low surrogate after a "
                     "high one (file truncated?)");
    bad("\"\\ud83d\\ude", "line 1, column 12: unexpected end of input, expected a low surrogate "
                          "after a high one (file truncated?)");
    bad("\"\xE2\x82", "line 1, column 3: unexpected end of input, expected the rest of a UTF-8 "
                      "character (file truncated?)");
}
END_TEST

START_TEST(test_err_syntax) {
    bad("[1,2,]", "line 1, column 6: trailing comma before ']' (a value must follow ',')");
    bad("{\"a\":1,}", "line 1, column 8: trailing comma before '}' (a member must follow ',')");
    bad("{\n  \"a\": 1,\n  \"b\": 2\n  \"c\": 3\n}",
        "line 4, column 3: expected ',' or '}' after object member, found '\"'");
    bad("[1 2]", "line 1, column 4: expected ',' or ']' after array element, found '2'");
    bad("{\"a\" 1}", "line 1, column 6: expected ':' after object member name, found '1'");
    bad("{1: 2}", "line 1, column 2: expected a member name in double quotes or '}', found '1'");
    bad("{\"a\":1, 2}", "line 1, column 9: expected a member name in double quotes after ',', "
                        "found '2'");
    bad("{'a': 1}", "line 1, column 2: member names must use double quotes, not '");
    bad("['a']", "line 1, column 2: strings must use double quotes, not '");
    bad("[1] // c", "line 1, column 5: unexpected '/' after the JSON value (trailing garbage)");
    bad("/* c */ 1", "line 1, column 1: comments are not allowed in JSON");
    bad("1 2", "line 1, column 3: unexpected '2' after the JSON value (trailing garbage)");
    bad("{}}", "line 1, column 3: unexpected '}' after the JSON value (trailing garbage)");
    bad_n("[1]\0", 4, NULL,
          "line 1, column 4: unexpected byte 0x00 after the JSON value (trailing garbage)");
    bad("[1]]", "line 1, column 4: unexpected ']' after the JSON value (trailing garbage)");
    bad("]", "line 1, column 1: expected a value, found ']'");
    bad("[,1]", "line 1, column 2: expected a value, found ','");
    bad("{\"a\":1,,}", "line 1, column 8: expected a member name in double quotes after ',', "
                       "found ','");
    bad("[truex]", "line 1, column 6: expected ',' or ']' after array element, found 'x'");
    bad("[tru]", "line 1, column 2: invalid literal, expected 'true'");
    bad("nUll", "line 1, column 1: invalid literal, expected 'null'");
    bad("True", "line 1, column 1: expected a value, found 'T'");
    bad("\xC3\xA9", "line 1, column 1: expected a value, found byte 0xC3");
    bad("[1]\n\xC3\xA9", "line 2, column 1: unexpected byte 0xC3 after the JSON value (trailing "
                         "garbage)");
    /* Columns count characters: "é" is one column though two bytes. */
    bad("[\"\xC3\xA9\", x]", "line 1, column 7: expected a value, found 'x'");
    bad("\r\n\t[1,\r\n\t\tx]", "line 3, column 3: expected a value, found 'x'");
    /* Whitespace is only the four RFC characters. */
    bad("\v1", "line 1, column 1: expected a value, found byte 0x0B");
    bad("[1,\xC2\xA0"
        "2]",
        "line 1, column 4: expected a value, found byte 0xC2");
}
END_TEST

START_TEST(test_err_numbers) {
    bad("01", "line 1, column 1: leading zeros are not allowed in numbers");
    bad("[-01]", "line 1, column 2: leading zeros are not allowed in numbers");
    bad("[00.5]", "line 1, column 2: leading zeros are not allowed in numbers");
    bad("1.", "line 1, column 3: unexpected end of input, expected a digit after the decimal point "
              "(file truncated?)");
    bad("[1.]", "line 1, column 4: expected a digit after the decimal point, found ']'");
    bad("1.e5", "line 1, column 3: expected a digit after the decimal point, found 'e'");
    bad("[1e]", "line 1, column 4: expected a digit in the exponent, found ']'");
    bad("[1e+-1]", "line 1, column 5: expected a digit in the exponent, found '-'");
    bad("[-]", "line 1, column 3: expected a digit after '-', found ']'");
    bad("[.5]", "line 1, column 2: numbers must start with a digit, not '.'");
    bad("+1", "line 1, column 1: numbers must not start with '+'");
    bad("NaN", "line 1, column 1: NaN and Infinity are not valid JSON");
    bad("[Infinity]", "line 1, column 2: NaN and Infinity are not valid JSON");
    bad("[-Infinity]", "line 1, column 2: -Infinity is not valid JSON");
    bad("0x10", "line 1, column 2: unexpected 'x' after the JSON value (trailing garbage)");
    bad("[1.5.3]", "line 1, column 5: expected ',' or ']' after array element, found '.'");
    bad("- 1", "line 1, column 2: expected a digit after '-', found a space");
    bad("[1.\n5]", "line 1, column 4: expected a digit after the decimal point, found a line "
                   "break");
}
END_TEST

START_TEST(test_err_strings) {
    bad("\"\\x\"", "line 1, column 2: invalid escape in string: '\\' followed by 'x'");
    bad("\"\\U00e9\"", "line 1, column 2: invalid escape in string: '\\' followed by 'U'");
    bad("[\"ok\", \"\\u12G4\"]", "line 1, column 9: invalid \\u escape in string: expected 4 hex "
                                 "digits");
    bad("\"\\u12\"", "line 1, column 2: invalid \\u escape in string: expected 4 hex digits");
    bad("\"a\tb\"", "line 1, column 3: control character U+0009 in string (must be escaped)");
    bad("\"line\nbreak\"", "line 1, column 6: control character U+000A in string (must be "
                           "escaped)");
    bad_n("\"a\0b\"", 5, NULL,
          "line 1, column 3: control character U+0000 in string (must be escaped)");
    bad("\"\\\n\"", "line 1, column 2: invalid escape in string: '\\' followed by a line break");
    /* Invalid UTF-8: overlong, encoded surrogate, above U+10FFFF, stray continuation, bad lead,
     * sequence cut short by the closing quote. */
    bad("\"\xC0\x80\"", "line 1, column 2: invalid UTF-8 in string (byte 0xC0)");
    bad("\"\xE0\x80\xAF\"", "line 1, column 2: invalid UTF-8 in string (byte 0xE0)");
    bad("\"ab\xED\xA0\x80\"", "line 1, column 4: invalid UTF-8 in string (byte 0xED)");
    bad("\"\xF4\x90\x80\x80\"", "line 1, column 2: invalid UTF-8 in string (byte 0xF4)");
    bad("\"\xF5\x80\x80\x80\"", "line 1, column 2: invalid UTF-8 in string (byte 0xF5)");
    bad("\"\x80\"", "line 1, column 2: invalid UTF-8 in string (byte 0x80)");
    bad("\"\xFF\"", "line 1, column 2: invalid UTF-8 in string (byte 0xFF)");
    bad("\"\xE2\x82\"", "line 1, column 2: invalid UTF-8 in string (byte 0xE2)");
    bad("{\"k\xC3\": 1}", "line 1, column 4: invalid UTF-8 in string (byte 0xC3)");
    /* Lone surrogates. */
    bad("\"\\ud800\"", "line 1, column 2: lone surrogate \\uD800 in string (high surrogate not "
                       "followed by a low one)");
    bad("\"\\uDBFFx\"", "line 1, column 2: lone surrogate \\uDBFF in string (high surrogate not "
                        "followed by a low one)");
    bad("\"\\ud800\\u0041\"", "line 1, column 2: lone surrogate \\uD800 in string (high "
                              "surrogate not followed by a low one)");
    bad("\"\\ud800\\ud800\"", "line 1, column 2: lone surrogate \\uD800 in string (high "
                              "surrogate not followed by a low one)");
    bad("\"\\ud800\\n\"", "line 1, column 2: lone surrogate \\uD800 in string (high surrogate "
                          "not followed by a low one)");
    bad("\"x\\udc00\"", "line 1, column 3: lone surrogate \\uDC00 in string (low surrogate "
                        "without a high one)");
    /* The first error in document order wins even inside an unterminated string. */
    bad("\"\\q", "line 1, column 2: invalid escape in string: '\\' followed by 'q'");
}
END_TEST

START_TEST(test_err_empty) {
    bad("", "line 1, column 1: empty input, expected a JSON value");
    bad("  \n ", "line 2, column 2: empty input, expected a JSON value");
    bad("\xEF\xBB\xBF", "line 1, column 1: empty input, expected a JSON value");
    ck_assert_ptr_null(lw_json_parse(NULL, 1, NULL, errbuf, sizeof errbuf));
    ck_assert_str_eq(errbuf, "no input text");
    ck_assert_ptr_null(lw_json_parse(NULL, 0, NULL, errbuf, sizeof errbuf));
    ck_assert_str_eq(errbuf, "line 1, column 1: empty input, expected a JSON value");
    /* No error buffer, or a tiny one: still fails cleanly, message truncated and terminated. */
    ck_assert_ptr_null(lw_json_parse("[", 1, NULL, NULL, 0));
    ck_assert_ptr_null(lw_json_parse("[", 1, NULL, errbuf, 0));
    char tiny[9];
    memset(tiny, 'X', sizeof tiny);
    ck_assert_ptr_null(lw_json_parse("[", 1, NULL, tiny, sizeof tiny));
    ck_assert_str_eq(tiny, "line 1, ");
}
END_TEST

START_TEST(test_limit_depth) {
    char doc[256];
    /* Default 64: 64 nested arrays parse, 65 do not. */
    for (int i = 0; i < 64; i++)
        doc[i] = '[';
    for (int i = 0; i < 64; i++)
        doc[64 + i] = ']';
    lw_json *r = lw_json_parse(doc, 128, NULL, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    lw_json_free(r);
    for (int i = 0; i < 65; i++)
        doc[i] = '[';
    for (int i = 0; i < 65; i++)
        doc[65 + i] = ']';
    bad_n(doc, 130, NULL, "line 1, column 65: nesting deeper than 64 levels (max_depth)");

    lw_json_limits lim = {3, 0, 0};
    r = lw_json_parse("{\"a\":[{}]}", 10, &lim, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    lw_json_free(r);
    bad_n("{\"a\":[{\"b\":[]}]}", 16, &lim,
          "line 1, column 12: nesting deeper than 3 levels (max_depth)");
    lim.max_depth = 1;
    bad_n("[[]]", 4, &lim, "line 1, column 2: nesting deeper than 1 levels (max_depth)");
}
END_TEST

/* A megabyte of '[' must fail with a message, not a stack overflow; with the depth limit raised
 * it even parses, since neither the parser nor lw_json_free recurses. */
START_TEST(test_limit_depth_megabyte) {
    size_t n = (size_t)1 << 20;
    char *doc = malloc(2 * n);
    ck_assert_ptr_nonnull(doc);
    memset(doc, '[', n);
    memset(doc + n, ']', n);
    bad_n(doc, n, NULL, "line 1, column 65: nesting deeper than 64 levels (max_depth)");
    lw_json_limits lim = {n, 0, 0};
    bad_n(doc, n, &lim,
          "line 1, column 1048577: unexpected end of input, expected a value (file "
          "truncated?)");
    lw_json *r = lw_json_parse(doc, 2 * n, &lim, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    const lw_json *v = r;
    size_t depth = 0;
    while (lw_json_len(v) == 1) {
        v = lw_json_at(v, 0);
        depth++;
    }
    ck_assert_uint_eq(depth, n - 1);
    lw_json_free(r);
    free(doc);
}
END_TEST

START_TEST(test_limit_nodes) {
    lw_json_limits lim = {0, 5, 0};
    lw_json *r = lw_json_parse("[1,2,3,4]", 9, &lim, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    lw_json_free(r);
    bad_n("[1,2,3,4,5]", 11, &lim,
          "line 1, column 10: more than 5 values and member names "
          "(max_nodes)");
    /* Member names count: {} + 2 names + 2 values = 5. */
    r = lw_json_parse("{\"a\":1,\"b\":2}", 13, &lim, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    lw_json_free(r);
    bad_n("{\"a\":1,\"b\":2,\"c\":3}", 19, &lim,
          "line 1, column 14: more than 5 values and member names (max_nodes)");
    lim.max_nodes = 1;
    bad_n("[1]", 3, &lim, "line 1, column 2: more than 1 values and member names (max_nodes)");
}
END_TEST

START_TEST(test_limit_bytes) {
    lw_json_limits lim = {0, 0, 10};
    lw_json *r = lw_json_parse("[1,2,3,45]", 10, &lim, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    lw_json_free(r);
    bad_n("[1,2,3,456]", 11, &lim,
          "input is 11 bytes, larger than the limit of 10 bytes "
          "(max_bytes)");
}
END_TEST

/* ---- a 50 MB report-shaped document ---- */

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
    if (*len + n > *cap) {
        *cap = (*len + n) * 2;
        *buf = realloc(*buf, *cap);
        ck_assert_ptr_nonnull(*buf);
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}

START_TEST(test_50mb_document) {
    size_t len = 0, cap = (size_t)56 << 20;
    char *doc = malloc(cap);
    ck_assert_ptr_nonnull(doc);
    char tmp[512];
    const char *head = "{\"version\": 1, \"tool\": \"leakwatch\", \"sites\": [\n";
    append(&doc, &len, &cap, head, strlen(head));
    size_t nsites = 0;
    unsigned long long total = 0;
    while (len < (size_t)50 << 20) {
        unsigned long long bytes = 18446744073709551000ULL / 1000000 + nsites * 4096;
        total += nsites;
        int k =
            snprintf(tmp, sizeof tmp,
                     "%s{\"id\": %zu, \"live_bytes\": %llu, \"ratio\": %zu.%03zue-2,"
                     " \"kind\": \"cudaMalloc\", \"note\": \"tab\\there \\u00e9\\ud83d\\ude00\","
                     " \"leaked\": %s, \"stream\": null, \"frames\": [",
                     nsites ? ",\n" : "", nsites, bytes, nsites % 1000, nsites % 997,
                     nsites % 3 ? "true" : "false");
        append(&doc, &len, &cap, tmp, (size_t)k);
        for (int f = 0; f < 4; f++) {
            k = snprintf(tmp, sizeof tmp,
                         "%s{\"function\": \"fn_%zu_%d\", \"file\": \"/src/module_%d/file.cu\","
                         " \"line\": %d, \"pc\": 140737488355328}",
                         f ? ", " : "", nsites, f, f, 100 + f);
            append(&doc, &len, &cap, tmp, (size_t)k);
        }
        append(&doc, &len, &cap, "]}", 2);
        nsites++;
    }
    const char *tail = "],\n\"totals\": {\"sites\": 0}}\n";
    append(&doc, &len, &cap, tail, strlen(tail));

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lw_json *r = lw_json_parse(doc, len, NULL, errbuf, sizeof errbuf);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_msg(r != NULL, "%s", errbuf);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "test_json_read: parsed %.1f MB (%zu sites) in %.2f s\n",
            (double)len / (1 << 20), nsites, secs);

    const lw_json *sites = lw_json_get(r, "sites");
    ck_assert_uint_eq(lw_json_len(sites), nsites);
    char path[128];
    size_t last = nsites - 1;
    snprintf(path, sizeof path, "sites[%zu].frames[3].function", last);
    snprintf(tmp, sizeof tmp, "fn_%zu_3", last);
    ck_assert_str_eq(lw_json_string(lw_json_path(r, path)), tmp);
    unsigned long long u = 0;
    snprintf(path, sizeof path, "sites[%zu].live_bytes", last);
    ck_assert_int_eq(lw_json_uint64(lw_json_path(r, path), &u), 0);
    ck_assert(u == 18446744073709551000ULL / 1000000 + last * 4096);
    ck_assert_str_eq(lw_json_string(lw_json_path(r, "sites[0].note")),
                     "tab\there \xC3\xA9\xF0\x9F\x98\x80");
    unsigned long long sum = 0;
    for (size_t i = 0; i < nsites; i++) {
        long long id = -1;
        ck_assert_int_eq(lw_json_int64(lw_json_get(lw_json_at(sites, i), "id"), &id), 0);
        sum += (unsigned long long)id;
    }
    ck_assert(sum == total);
    lw_json_free(r);

    /* The same document cut in half: a clean truncation error. */
    r = lw_json_parse(doc, len / 2, NULL, errbuf, sizeof errbuf);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(errbuf, "(file truncated?)") != NULL, "%s", errbuf);
    free(doc);
}
END_TEST

/* ---- files ---- */

static char *write_temp(const char *content, size_t len) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_json_read_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
    close(fd);
    return path;
}

START_TEST(test_file) {
    ck_assert_ptr_null(lw_json_parse_file("/nonexistent/report.json", NULL, errbuf, sizeof errbuf));
    ck_assert_str_eq(errbuf, "cannot open /nonexistent/report.json: No such file or directory");

    char *path = write_temp("{\"totals\": {\"live_bytes\": 18446744073709551615}}\n", 48);
    lw_json *r = lw_json_parse_file(path, NULL, errbuf, sizeof errbuf);
    ck_assert_msg(r != NULL, "%s", errbuf);
    unsigned long long u = 0;
    ck_assert_int_eq(lw_json_uint64(lw_json_path(r, "totals.live_bytes"), &u), 0);
    ck_assert(u == 18446744073709551615ULL);
    lw_json_free(r);

    char want[256];
    lw_json_limits lim = {0, 0, 20};
    ck_assert_ptr_null(lw_json_parse_file(path, &lim, errbuf, sizeof errbuf));
    snprintf(want, sizeof want,
             "%s: file is 48 bytes, larger than the limit of 20 bytes "
             "(max_bytes)",
             path);
    ck_assert_str_eq(errbuf, want);
    unlink(path);

    path = write_temp("{\"a\": [1,\n 2,]}", 15);
    ck_assert_ptr_null(lw_json_parse_file(path, NULL, errbuf, sizeof errbuf));
    snprintf(want, sizeof want,
             "%s: line 2, column 4: trailing comma before ']' (a value must "
             "follow ',')",
             path);
    ck_assert_str_eq(errbuf, want);
    unlink(path);

    path = write_temp("", 0);
    ck_assert_ptr_null(lw_json_parse_file(path, NULL, errbuf, sizeof errbuf));
    snprintf(want, sizeof want, "%s: line 1, column 1: empty input, expected a JSON value", path);
    ck_assert_str_eq(errbuf, want);
    unlink(path);

    ck_assert_ptr_null(lw_json_parse_file("/tmp", NULL, errbuf, sizeof errbuf));
    ck_assert_str_eq(errbuf, "cannot read /tmp: Is a directory");
}
END_TEST

/* Pipes report no size, so the reader grows its buffer and stops at max_bytes + 1. */
typedef struct {
    int fd;
    const char *data;
    size_t len;
} pipe_job;

static void *pipe_writer(void *arg) {
    pipe_job *j = arg;
    size_t off = 0;
    while (off < j->len) {
        ssize_t w = write(j->fd, j->data + off, j->len - off);
        if (w <= 0) break; /* EPIPE once the reader has stopped early */
        off += (size_t)w;
    }
    close(j->fd);
    return NULL;
}

static lw_json *parse_through_pipe(const char *data, size_t len, const lw_json_limits *lim) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pipe_job job = {fds[1], data, len};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, pipe_writer, &job), 0);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    lw_json *r = lw_json_parse_file(path, lim, errbuf, sizeof errbuf);
    close(fds[0]);
    pthread_join(th, NULL);
    return r;
}

START_TEST(test_file_pipe) {
    signal(SIGPIPE, SIG_IGN);
    size_t cap = 300000, n = 0;
    char *doc = malloc(cap);
    ck_assert_ptr_nonnull(doc);
    doc[n++] = '[';
    for (int i = 0; n < 200000; i++)
        n += (size_t)snprintf(doc + n, cap - n, "%s%d", i ? "," : "", i);
    doc[n++] = ']';
    lw_json *r = parse_through_pipe(doc, n, NULL);
    ck_assert_msg(r != NULL, "%s", errbuf);
    ck_assert(lw_json_number(lw_json_at(r, 1000), 0) == 1000);
    lw_json_free(r);

    lw_json_limits lim = {0, 0, 100000};
    ck_assert_ptr_null(parse_through_pipe(doc, n, &lim));
    ck_assert_msg(strstr(errbuf, ": file is larger than the limit of 100000 bytes (max_bytes)"),
                  "%s", errbuf);
    free(doc);
}
END_TEST

/* ---- threads: independent parses and shared reads need no locking ---- */

static const char *thread_doc = "{\"a\": [1.5, 2.25e-300, \"x\\u00e9\"], \"k0\": 0, \"k1\": 1,"
                                " \"k2\": 2, \"k3\": 3, \"k4\": 4, \"k5\": 5, \"k6\": 6, \"k7\": 7,"
                                " \"k8\": 8, \"k9\": 9, \"k10\": 10, \"k11\": 11, \"k12\": 12,"
                                " \"k13\": 13, \"k14\": 14, \"k15\": 15, \"k16\": 16}";

static void *thread_main(void *arg) {
    const lw_json *shared = arg;
    for (int i = 0; i < 200; i++) {
        char e[128];
        lw_json *r = lw_json_parse(thread_doc, strlen(thread_doc), NULL, e, sizeof e);
        if (!r || lw_json_number(lw_json_path(r, "a[1]"), 0) != 2.25e-300 ||
            lw_json_number(lw_json_get(shared, "k16"), 0) != 16 ||
            lw_json_number(lw_json_get(r, "k7"), 0) != 7)
            return (void *)1;
        lw_json_free(r);
    }
    return NULL;
}

START_TEST(test_threads) {
    lw_json *shared = ok_parse(thread_doc);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main, shared), 0);
    for (int i = 0; i < 4; i++) {
        void *rv = (void *)1;
        pthread_join(th[i], &rv);
        ck_assert_ptr_null(rv);
    }
    lw_json_free(shared);
}
END_TEST

static Suite *json_read_suite(void) {
    Suite *s = suite_create("json_read");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, test_scalars);
    tcase_add_test(tc, test_containers);
    tcase_add_test(tc, test_paths);
    tcase_add_test(tc, test_escapes_utf8);
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_numbers_locale);
    tcase_add_test(tc, test_integers);
    tcase_add_test(tc, test_duplicates_and_index);
    tcase_add_test(tc, test_accessors_wrong_type);
    tcase_add_test(tc, test_bom);
    tcase_add_test(tc, test_threads);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_err_truncated);
    tcase_add_test(tc, test_err_syntax);
    tcase_add_test(tc, test_err_numbers);
    tcase_add_test(tc, test_err_strings);
    tcase_add_test(tc, test_err_empty);
    tcase_add_test(tc, test_limit_depth);
    tcase_add_test(tc, test_limit_nodes);
    tcase_add_test(tc, test_limit_bytes);
    tcase_add_test(tc, test_file);
    tcase_add_test(tc, test_file_pipe);
    suite_add_tcase(s, tc);

    /* Big inputs: generous timeouts because the sanitizer build (make check-san) is several
     * times slower than -O2. */
    tc = tcase_create("big");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_limit_depth_megabyte);
    tcase_add_test(tc, test_big_object_lookup);
    tcase_add_test(tc, test_50mb_document);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    int failed = lw_check_run(json_read_suite());
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
