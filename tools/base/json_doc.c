/* SPDX-License-Identifier: Apache-2.0 */
#include "json_doc.h"

#include <jansson.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void limits_of(const lw_json_limits *in, lw_json_limits *out) {
    out->max_depth = in && in->max_depth ? in->max_depth : LW_JSON_DEFAULT_MAX_DEPTH;
    out->max_nodes = in && in->max_nodes ? in->max_nodes : LW_JSON_DEFAULT_MAX_NODES;
    out->max_bytes = in && in->max_bytes ? in->max_bytes : LW_JSON_DEFAULT_MAX_BYTES;
}

static void say(char *err, size_t errlen, const char *fmt, const char *a, const char *b) {
    if (err && errlen) snprintf(err, errlen, fmt, a, b);
}

/* Depth and size of a parsed document. jansson bounds the nesting while it
 * parses (2048 levels), so this walk's recursion is bounded too. */
static int within(const json_t *v, size_t depth, const lw_json_limits *lim, size_t *nodes) {
    if (++*nodes > lim->max_nodes) return -2;
    if (json_is_array(v) || json_is_object(v)) {
        if (depth + 1 > lim->max_depth) return -1;
        if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                int r = within(json_array_get(v, i), depth + 1, lim, nodes);
                if (r) return r;
            }
        } else {
            const char *k;
            json_t *m;
            json_object_foreach((json_t *)v, k, m) {
                ++*nodes; /* the member's name */
                int r = within(m, depth + 1, lim, nodes);
                if (r) return r;
            }
        }
    }
    return 0;
}

lw_json *lw_json_parse(const char *text, size_t len, const lw_json_limits *limits, char *err,
                       size_t errlen) {
    lw_json_limits lim;
    limits_of(limits, &lim);
    if (err && errlen) err[0] = '\0';
    if (len > lim.max_bytes) {
        char n[32], max[32];
        snprintf(n, sizeof n, "%zu", len);
        snprintf(max, sizeof max, "%zu", lim.max_bytes);
        say(err, errlen, "input of %s bytes is over the limit of %s bytes", n, max);
        return NULL;
    }
    /* A UTF-8 byte order mark is allowed before the value (RFC 8259, 8.1). */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3, len -= 3;
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!root) {
        if (err && errlen) {
            if (e.line > 0)
                snprintf(err, errlen, "line %d, column %d: %s", e.line, e.column, e.text);
            else
                snprintf(err, errlen, "%s", e.text);
        }
        return NULL;
    }
    size_t nodes = 0;
    int r = within(root, 0, &lim, &nodes);
    if (r) {
        char max[32];
        snprintf(max, sizeof max, "%zu", r == -1 ? lim.max_depth : lim.max_nodes);
        say(err, errlen, r == -1 ? "nested deeper than %s levels%s" : "more than %s values%s", max,
            "");
        json_decref(root);
        return NULL;
    }
    return root;
}

lw_json *lw_json_parse_file(const char *path, const lw_json_limits *limits, char *err,
                            size_t errlen) {
    lw_json_limits lim;
    limits_of(limits, &lim);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular
     * files are read at all. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        say(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(err, errlen, "%s%s is not a regular file (a report is a file leakwatch wrote)", path,
            "");
        close(fd);
        return NULL;
    }
    if ((size_t)st.st_size > lim.max_bytes) {
        char n[64];
        snprintf(n, sizeof n, "%lld bytes, over the limit of %zu", (long long)st.st_size,
                 lim.max_bytes);
        say(err, errlen, "%s is %s bytes", path, n);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        say(err, errlen, "%s: out of memory reading it%s", path, "");
        close(fd);
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            /* The file grew while read: still bounded. */
            if (cap > lim.max_bytes) {
                say(err, errlen, "%s grew over the size limit while read%s", path, "");
                free(buf);
                close(fd);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                say(err, errlen, "%s: out of memory reading it%s", path, "");
                return NULL;
            }
            buf = nb, cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            say(err, errlen, "cannot read %s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    close(fd);
    char perr[200];
    lw_json *root = lw_json_parse(buf, len, &lim, perr, sizeof perr);
    free(buf);
    if (!root) say(err, errlen, "%s: %s", path, perr);
    return root;
}

void lw_json_free(lw_json *root) {
    json_decref(root);
}

lw_json_type lw_json_type_of(const lw_json *v) {
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_TRUE:
    case JSON_FALSE:
        return LW_JSON_BOOL;
    case JSON_INTEGER:
    case JSON_REAL:
        return LW_JSON_NUMBER;
    case JSON_STRING:
        return LW_JSON_STRING;
    case JSON_ARRAY:
        return LW_JSON_ARRAY;
    case JSON_OBJECT:
        return LW_JSON_OBJECT;
    default:
        return LW_JSON_NULL;
    }
}

const char *lw_json_type_name(lw_json_type t) {
    static const char *names[] = {"null", "bool", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

const lw_json *lw_json_get(const lw_json *obj, const char *key) {
    return json_is_object(obj) ? json_object_get(obj, key) : NULL;
}

const lw_json *lw_json_get_n(const lw_json *obj, const char *key, size_t keylen) {
    return json_is_object(obj) ? json_object_getn(obj, key, keylen) : NULL;
}

const lw_json *lw_json_at(const lw_json *arr, size_t i) {
    return json_is_array(arr) ? json_array_get(arr, i) : NULL;
}

size_t lw_json_len(const lw_json *v) {
    if (json_is_array(v)) return json_array_size(v);
    if (json_is_object(v)) return json_object_size(v);
    if (json_is_string(v)) return json_string_length(v);
    return 0;
}

static void *member_iter(const lw_json *obj, size_t i) {
    if (!json_is_object(obj)) return NULL;
    void *it = json_object_iter((json_t *)obj);
    while (it && i--)
        it = json_object_iter_next((json_t *)obj, it);
    return it;
}

const char *lw_json_key_at(const lw_json *obj, size_t i) {
    void *it = member_iter(obj, i);
    return it ? json_object_iter_key(it) : NULL;
}

size_t lw_json_key_len_at(const lw_json *obj, size_t i) {
    void *it = member_iter(obj, i);
    return it ? json_object_iter_key_len(it) : 0;
}

const lw_json *lw_json_value_at(const lw_json *obj, size_t i) {
    void *it = member_iter(obj, i);
    return it ? json_object_iter_value(it) : NULL;
}

const lw_json *lw_json_path(const lw_json *root, const char *path) {
    const lw_json *v = root;
    const char *p = path;
    if (!v || !p) return NULL;
    int first = 1;
    while (*p) {
        if (*p == '[') {
            char *end;
            if (p[1] < '0' || p[1] > '9') return NULL;
            errno = 0;
            unsigned long long i = strtoull(p + 1, &end, 10);
            if (errno || *end != ']') return NULL;
            v = lw_json_at(v, (size_t)i);
            p = end + 1;
        } else {
            if (!first) {
                if (*p != '.') return NULL;
                p++;
            }
            size_t n = strcspn(p, ".[");
            if (n == 0) return NULL;
            v = lw_json_get_n(v, p, n);
            p += n;
            if (*p == '.' && p[1] == '\0') return NULL;
        }
        first = 0;
        if (!v) return NULL;
    }
    return v;
}

double lw_json_number(const lw_json *v, double dflt) {
    return json_is_number(v) ? json_number_value(v) : dflt;
}

int lw_json_int64(const lw_json *v, long long *out) {
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (!json_is_real(v)) return -1;
    double d = json_real_value(v);
    /* Exactly representable integers only (|d| < 2^63 and no fraction). */
    if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return -1;
    *out = (long long)d;
    return 0;
}

int lw_json_uint64(const lw_json *v, unsigned long long *out) {
    long long i;
    if (lw_json_int64(v, &i) != 0 || i < 0) return -1;
    *out = (unsigned long long)i;
    return 0;
}

const char *lw_json_string(const lw_json *v) {
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int lw_json_bool(const lw_json *v, int dflt) {
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

int lw_json_is_null(const lw_json *v) {
    return v && json_is_null(v);
}
