/* SPDX-License-Identifier: Apache-2.0 */
#include "json_write.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void lw_jw_init(lw_jw *w, FILE *f, int pretty) {
    memset(w, 0, sizeof *w);
    w->f = f;
    w->pretty = pretty;
}

int lw_jw_failed(const lw_jw *w) {
    return w->failed || ferror(w->f);
}

static void newline(lw_jw *w) {
    if (!w->pretty) return;
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
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

void lw_json_escape(FILE *f, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                fputs("\\n", f);
                break;
            case '\t':
                fputs("\\t", f);
                break;
            case '\r':
                fputs("\\r", f);
                break;
            default:
                fprintf(f, "\\u%04x", c);
            }
            i++;
        } else if (c < 0x80) {
            fputc(c, f);
            i++;
        } else {
            size_t n = utf8_len(s + i, len - i);
            if (n == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(s + i, 1, n, f);
                i += n;
            }
        }
    }
}

static void begin_value(lw_jw *w, const char *key) {
    if (w->depth > 0) {
        if (w->has_items[w->depth]) fputc(',', w->f);
        w->has_items[w->depth] = 1;
        newline(w);
    }
    if (key) {
        fputc('"', w->f);
        lw_json_escape(w->f, key, strlen(key));
        fputs(w->pretty ? "\": " : "\":", w->f);
    }
}

static void open(lw_jw *w, const char *key, char c) {
    begin_value(w, key);
    fputc(c, w->f);
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
    fputc(c, w->f);
}

void lw_jw_strn(lw_jw *w, const char *key, const char *value, size_t len) {
    begin_value(w, key);
    if (!value) {
        fputs("null", w->f);
        return;
    }
    fputc('"', w->f);
    lw_json_escape(w->f, value, len);
    fputc('"', w->f);
}

void lw_jw_raw(lw_jw *w, const char *key, const char *json, size_t len) {
    begin_value(w, key);
    fwrite(json, 1, len, w->f);
}

void lw_jw_str(lw_jw *w, const char *key, const char *value) {
    lw_jw_strn(w, key, value, value ? strlen(value) : 0);
}

void lw_jw_int(lw_jw *w, const char *key, int64_t v) {
    begin_value(w, key);
    fprintf(w->f, "%" PRId64, v);
}

void lw_jw_uint(lw_jw *w, const char *key, uint64_t v) {
    begin_value(w, key);
    fprintf(w->f, "%" PRIu64, v);
}

void lw_jw_double(lw_jw *w, const char *key, double v) {
    begin_value(w, key);
    if (!isfinite(v))
        fputs("null", w->f);
    else
        fprintf(w->f, "%.17g", v);
}

void lw_jw_bool(lw_jw *w, const char *key, int v) {
    begin_value(w, key);
    fputs(v ? "true" : "false", w->f);
}

void lw_jw_null(lw_jw *w, const char *key) {
    begin_value(w, key);
    fputs("null", w->f);
}
