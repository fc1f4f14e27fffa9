/* libFuzzer target for tools/json_read.c.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Itools \
 *       tests/fuzz/fuzz_json_read.c tools/json_read.c -o build/fuzz_json_read
 *   build/fuzz_json_read -max_total_time=60 -max_len=4096 tests/fuzz/corpus_json
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks, for every document that
 * parses, properties an independent oracle can confirm:
 *   - every string is valid UTF-8 and NUL-terminated at its length;
 *   - every number's double equals strtod of its literal (checks the fast path), and an exact
 *     integer from lw_json_int64/uint64 equals that double after rounding;
 *   - lw_json_get returns the last member of that name (checks the sorted index);
 *   - a path built from member names and indexes leads back to the same node;
 *   - writing the tree back out and parsing it again gives an identical tree.
 * A failed parse must leave a one-line, NUL-terminated message. */
#include "json_read.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static int valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        unsigned cp;
        if (c >= 0xC0 && c < 0xE0) {
            k = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c < 0xF0) {
            k = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c < 0xF8) {
            k = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + k > n) return 0;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k;
    }
    return 1;
}

/* ---- writer for the round trip ---- */

typedef struct {
    char *buf;
    size_t len, cap;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2 + 64;
        o->buf = realloc(o->buf, o->cap);
        CHECK(o->buf != NULL);
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void put_str(out *o, const char *s, size_t n) {
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(o, e, 2);
        } else if (c < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            put(o, e, 6);
        } else {
            put(o, (const char *)&c, 1);
        }
    }
    put(o, "\"", 1);
}

static void write_value(out *o, const lw_json *v) {
    switch (lw_json_type_of(v)) {
    case LW_JSON_NULL:
        put(o, "null", 4);
        break;
    case LW_JSON_BOOL:
        lw_json_bool(v, 0) ? put(o, "true", 4) : put(o, "false", 5);
        break;
    case LW_JSON_NUMBER:
        put(o, lw_json_number_text(v), strlen(lw_json_number_text(v)));
        break;
    case LW_JSON_STRING:
        put_str(o, lw_json_string(v), lw_json_len(v));
        break;
    case LW_JSON_ARRAY:
        put(o, "[", 1);
        for (size_t i = 0; i < lw_json_len(v); i++) {
            if (i) put(o, ",", 1);
            write_value(o, lw_json_at(v, i)); /* depth <= max_depth (64) */
        }
        put(o, "]", 1);
        break;
    case LW_JSON_OBJECT:
        put(o, "{", 1);
        for (size_t i = 0; i < lw_json_len(v); i++) {
            if (i) put(o, ",", 1);
            put_str(o, lw_json_key_at(v, i), lw_json_key_len_at(v, i));
            put(o, ":", 1);
            write_value(o, lw_json_value_at(v, i));
        }
        put(o, "}", 1);
        break;
    }
}

static int same(const lw_json *a, const lw_json *b) {
    lw_json_type t = lw_json_type_of(a);
    if (t != lw_json_type_of(b) || lw_json_len(a) != lw_json_len(b)) return 0;
    switch (t) {
    case LW_JSON_NULL:
        return 1;
    case LW_JSON_BOOL:
        return lw_json_bool(a, 0) == lw_json_bool(b, 0);
    case LW_JSON_NUMBER:
        return strcmp(lw_json_number_text(a), lw_json_number_text(b)) == 0;
    case LW_JSON_STRING:
        return memcmp(lw_json_string(a), lw_json_string(b), lw_json_len(a)) == 0;
    case LW_JSON_ARRAY:
        for (size_t i = 0; i < lw_json_len(a); i++)
            if (!same(lw_json_at(a, i), lw_json_at(b, i))) return 0;
        return 1;
    case LW_JSON_OBJECT:
        for (size_t i = 0; i < lw_json_len(a); i++) {
            if (lw_json_key_len_at(a, i) != lw_json_key_len_at(b, i) ||
                memcmp(lw_json_key_at(a, i), lw_json_key_at(b, i), lw_json_key_len_at(a, i)) ||
                !same(lw_json_value_at(a, i), lw_json_value_at(b, i)))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* ---- per-node checks ---- */

static void check_number(const lw_json *v) {
    const char *lit = lw_json_number_text(v);
    CHECK(lit != NULL);
    double d = lw_json_number(v, 0.5);
    CHECK(d == strtod(lit, NULL)); /* the fuzzer runs in the "C" locale */
    long long i;
    unsigned long long u;
    int irc = lw_json_int64(v, &i), urc = lw_json_uint64(v, &u);
    if (irc == 0) CHECK(d == (double)i);
    if (urc == 0) CHECK(d == (double)u);
    if (irc == 0 && i >= 0) CHECK(urc == 0 && u == (unsigned long long)i);
    if (urc == 0 && u <= (unsigned long long)LLONG_MAX)
        CHECK(irc == 0 && (unsigned long long)i == u);
}

static void check_object(const lw_json *v) {
    size_t n = lw_json_len(v);
    for (size_t i = 0; i < n; i++) {
        const char *k = lw_json_key_at(v, i);
        size_t kl = lw_json_key_len_at(v, i);
        CHECK(k != NULL && k[kl] == '\0');
        CHECK(valid_utf8((const unsigned char *)k, kl));
        /* The last member with this name, found by a plain scan. */
        size_t last = i;
        for (size_t j = i + 1; j < n; j++)
            if (lw_json_key_len_at(v, j) == kl && memcmp(lw_json_key_at(v, j), k, kl) == 0)
                last = j;
        CHECK(lw_json_get_n(v, k, kl) == lw_json_value_at(v, last));
        if (strlen(k) == kl) CHECK(lw_json_get(v, k) == lw_json_value_at(v, last));
    }
    /* A name that is absent: every present name with one extra byte. */
    if (n) {
        char probe[64];
        size_t kl = lw_json_key_len_at(v, 0);
        if (kl + 1 < sizeof probe) {
            memcpy(probe, lw_json_key_at(v, 0), kl);
            probe[kl] = '\x01'; /* cannot appear raw in a valid name without an escape */
            const lw_json *g = lw_json_get_n(v, probe, kl + 1);
            if (g) {
                size_t j = 0;
                while (j < n && lw_json_value_at(v, j) != g)
                    j++; /* must be one of this object's values, with exactly that name */
                CHECK(j < n && lw_json_key_len_at(v, j) == kl + 1 &&
                      memcmp(lw_json_key_at(v, j), probe, kl + 1) == 0);
            }
        }
    }
}

/* Walks the tree; path holds the lw_json_path spelling of v while every name on the way is
 * spellable (no '.', '[', NUL, not empty), else path_ok is 0. */
static void walk(const lw_json *root, const lw_json *v, char *path, size_t plen, int path_ok,
                 int depth) {
    CHECK(depth <= 64);
    if (path_ok) CHECK(lw_json_path(root, path) == v);
    switch (lw_json_type_of(v)) {
    case LW_JSON_NULL:
        CHECK(lw_json_is_null(v));
        break;
    case LW_JSON_BOOL:
        CHECK(lw_json_bool(v, 7) != 7);
        break;
    case LW_JSON_NUMBER:
        check_number(v);
        break;
    case LW_JSON_STRING: {
        const char *s = lw_json_string(v);
        CHECK(s != NULL && s[lw_json_len(v)] == '\0');
        CHECK(valid_utf8((const unsigned char *)s, lw_json_len(v)));
        break;
    }
    case LW_JSON_ARRAY:
        CHECK(lw_json_at(v, lw_json_len(v)) == NULL);
        for (size_t i = 0; i < lw_json_len(v); i++) {
            int n = snprintf(path + plen, 4096 - plen, "[%zu]", i);
            int ok = path_ok && n > 0 && plen + (size_t)n < 4096;
            walk(root, lw_json_at(v, i), path, ok ? plen + (size_t)n : plen, ok, depth + 1);
            path[plen] = '\0';
        }
        break;
    case LW_JSON_OBJECT:
        check_object(v);
        for (size_t i = 0; i < lw_json_len(v); i++) {
            const char *k = lw_json_key_at(v, i);
            size_t kl = lw_json_key_len_at(v, i);
            int ok =
                path_ok && kl > 0 && strlen(k) == kl && !strpbrk(k, ".[") && plen + kl + 2 < 4096;
            /* Only the last duplicate is reachable by name. */
            ok = ok && lw_json_get_n(v, k, kl) == lw_json_value_at(v, i);
            size_t np = plen;
            if (ok) {
                if (plen) path[np++] = '.';
                memcpy(path + np, k, kl);
                np += kl;
                path[np] = '\0';
            }
            walk(root, lw_json_value_at(v, i), path, ok ? np : plen, ok, depth + 1);
            path[plen] = '\0';
        }
        break;
    }
}

static void check_error(const char *err, size_t errlen) {
    size_t n = strnlen(err, errlen);
    CHECK(n < errlen);
    CHECK(n > 0);
    CHECK(memchr(err, '\n', n) == NULL);
    CHECK(strncmp(err, "line ", 5) == 0 || strncmp(err, "input is ", 9) == 0 ||
          strcmp(err, "out of memory") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    lw_json_limits lim = {64, 1 << 16, 1 << 20};
    char err[256];
    memset(err, 'Z', sizeof err);
    lw_json *r = lw_json_parse(text, size, &lim, err, sizeof err);
    if (!r) {
        check_error(err, sizeof err);
    } else {
        CHECK(err[0] == '\0');
        char *path = malloc(4096);
        CHECK(path != NULL);
        path[0] = '\0';
        walk(r, r, path, 0, 1, 0);

        out o = {NULL, 0, 0};
        write_value(&o, r);
        lw_json_limits lim2 = {64, 1 << 16, 64 << 20};
        lw_json *r2 = lw_json_parse(o.buf, o.len, &lim2, err, sizeof err);
        if (!r2) fprintf(stderr, "reparse failed: %s\n", err);
        CHECK(r2 != NULL);
        CHECK(same(r, r2));
        lw_json_free(r2);
        free(o.buf);

        /* Arbitrary bytes as a path must not crash. */
        size_t pl = size < 4095 ? size : 4095;
        memcpy(path, data, pl);
        path[pl] = '\0';
        (void)lw_json_path(r, path);
        free(path);
        lw_json_free(r);
    }

    /* Tight limits and a tiny error buffer exercise the limit and truncation paths. */
    if (size) {
        lw_json_limits small = {(size_t)(data[0] % 5) + 1, (size_t)(data[0] % 13) + 1,
                                (size_t)(data[0] % 64) + 1};
        size_t el = (size_t)(data[size - 1] % 24) + 1;
        char *e2 = malloc(el);
        CHECK(e2 != NULL);
        lw_json *r3 = lw_json_parse(text, size, &small, e2, el);
        if (!r3) {
            CHECK(strnlen(e2, el) < el);
        }
        lw_json_free(r3);
        free(e2);
    }
    return 0;
}
