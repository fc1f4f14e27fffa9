/* SPDX-License-Identifier: Apache-2.0 */
#include "json_write.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void lw_jw_init(lw_jw *w, FILE *f, int pretty) {
    memset(w, 0, sizeof *w);
    w->f = f;
    w->pretty = pretty;
}

void lw_jw_buffer(lw_jw *w, char *buf, size_t cap) {
    lw_jw_flush(w);
    w->buf = cap ? buf : NULL;
    w->cap = buf ? cap : 0;
    w->used = 0;
}

void lw_jw_flush(lw_jw *w) {
    if (w->used && fwrite(w->buf, 1, w->used, w->f) != w->used) w->failed = 1;
    w->used = 0;
}

long long lw_jw_tell(lw_jw *w) {
    off_t at = ftello(w->f);
    return at < 0 ? -1 : (long long)at + (long long)w->used;
}

int lw_jw_failed(lw_jw *w) {
    lw_jw_flush(w);
    return w->failed || ferror(w->f);
}

static void put(lw_jw *w, const char *s, size_t n) {
    if (!w->buf) {
        fwrite(s, 1, n, w->f);
        return;
    }
    if (n > w->cap - w->used) {
        lw_jw_flush(w);
        if (n > w->cap) {
            if (fwrite(s, 1, n, w->f) != n) w->failed = 1;
            return;
        }
    }
    memcpy(w->buf + w->used, s, n);
    w->used += n;
}

static void putch(lw_jw *w, char c) {
    if (w->buf && w->used < w->cap)
        w->buf[w->used++] = c;
    else if (w->buf)
        put(w, &c, 1);
    else
        fputc(c, w->f);
}

static void puts_(lw_jw *w, const char *s) {
    put(w, s, strlen(s));
}

static void newline(lw_jw *w) {
    if (!w->pretty) return;
    putch(w, '\n');
    for (int i = 0; i < w->depth; i++)
        put(w, "  ", 2);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail) {
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    if (n > avail) return 0;
    unsigned cp = c & (0xff >> (n + 1));
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* The body of a JSON string: runs of plain characters go out in one piece. */
static void escape(lw_jw *w, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, run = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (i > run) put(w, str + run, i - run);
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(w, e, 2);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                put(w, "\\n", 2);
                break;
            case '\t':
                put(w, "\\t", 2);
                break;
            case '\r':
                put(w, "\\r", 2);
                break;
            default: {
                char u[8];
                snprintf(u, sizeof u, "\\u%04x", c);
                put(w, u, 6);
            }
            }
            i++;
        } else {
            size_t n = utf8_len(s + i, len - i);
            if (n == 0) {
                put(w, "\\ufffd", 6);
                i++;
            } else {
                put(w, str + i, n);
                i += n;
            }
        }
        run = i;
    }
    if (i > run) put(w, str + run, i - run);
}

void lw_json_escape(FILE *f, const char *str, size_t len) {
    lw_jw w;
    lw_jw_init(&w, f, 0);
    escape(&w, str, len);
}

static void begin_value(lw_jw *w, const char *key) {
    if (w->depth > 0) {
        if (w->has_items[w->depth]) putch(w, ',');
        w->has_items[w->depth] = 1;
        newline(w);
    }
    if (key) {
        putch(w, '"');
        escape(w, key, strlen(key));
        puts_(w, w->pretty ? "\": " : "\":");
    }
}

static void open(lw_jw *w, const char *key, char c) {
    begin_value(w, key);
    putch(w, c);
    if (w->depth + 1 >= LW_JW_MAX_DEPTH) {
        w->failed = 1;
        return;
    }
    w->depth++;
    w->has_items[w->depth] = 0;
    w->closer[w->depth] = c == '{' ? '}' : ']';
}

void lw_jw_object(lw_jw *w, const char *key) {
    open(w, key, '{');
}
void lw_jw_array(lw_jw *w, const char *key) {
    open(w, key, '[');
}

void lw_jw_end(lw_jw *w) {
    if (w->depth <= 0) {
        w->failed = 1;
        return;
    }
    int had = w->has_items[w->depth];
    char c = w->closer[w->depth];
    w->depth--;
    if (had) newline(w);
    putch(w, c);
}

void lw_jw_strn(lw_jw *w, const char *key, const char *value, size_t len) {
    begin_value(w, key);
    if (!value) {
        put(w, "null", 4);
        return;
    }
    putch(w, '"');
    escape(w, value, len);
    putch(w, '"');
}

void lw_jw_raw(lw_jw *w, const char *key, const char *json, size_t len) {
    begin_value(w, key);
    put(w, json, len);
}

void lw_jw_str(lw_jw *w, const char *key, const char *value) {
    lw_jw_strn(w, key, value, value ? strlen(value) : 0);
}

static void putf(lw_jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(lw_jw *w, const char *fmt, ...) {
    char b[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n > 0) put(w, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}

void lw_jw_int(lw_jw *w, const char *key, int64_t v) {
    begin_value(w, key);
    putf(w, "%" PRId64, v);
}

void lw_jw_uint(lw_jw *w, const char *key, uint64_t v) {
    begin_value(w, key);
    putf(w, "%" PRIu64, v);
}

void lw_jw_double(lw_jw *w, const char *key, double v) {
    begin_value(w, key);
    if (!isfinite(v))
        put(w, "null", 4);
    else
        putf(w, "%.17g", v);
}

void lw_jw_number(lw_jw *w, const char *key, double v) {
    begin_value(w, key);
    if (!isfinite(v)) {
        put(w, "null", 4);
        return;
    }
    if (v == (double)(int64_t)v && fabs(v) < 9007199254740992.0) {
        putf(w, "%lld", (long long)v);
        return;
    }
    /* The fewest digits that read back as v: 0.1, not 0.10000000000000001. */
    char b[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    puts_(w, b);
}

void lw_jw_double_pair(lw_jw *w, const char *key, double a, double b) {
    lw_jw_array(w, key);
    lw_jw_double(w, NULL, a);
    lw_jw_double(w, NULL, b);
    lw_jw_end(w);
}

void lw_jw_bool(lw_jw *w, const char *key, int v) {
    begin_value(w, key);
    puts_(w, v ? "true" : "false");
}

void lw_jw_null(lw_jw *w, const char *key) {
    begin_value(w, key);
    put(w, "null", 4);
}
