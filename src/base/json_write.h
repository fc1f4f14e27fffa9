/* SPDX-License-Identifier: Apache-2.0 */
/* A small streaming JSON writer: keys in order, commas handled, strings
 * escaped (bytes that are not valid UTF-8 become U+FFFD), non-finite numbers
 * written as null. Errors are sticky: check lw_jw_failed once at the end. */
#ifndef LW_JSON_WRITE_H
#define LW_JSON_WRITE_H

#include <stdint.h>
#include <stdio.h>

#define LW_JW_MAX_DEPTH 32

typedef struct {
    FILE *f;
    /* Optional (lw_jw_buffer): bytes gathered here and handed to f in large
     * writes. Without it every character is one call into f, which for an
     * unbuffered stream (the report's, atomic_file.c) is a trip through
     * stdio and the stream's write function per byte. */
    char *buf;
    size_t cap, used;
    int depth;
    int pretty;
    int failed;
    unsigned char has_items[LW_JW_MAX_DEPTH];
    char closer[LW_JW_MAX_DEPTH];
} lw_jw;

void lw_jw_init(lw_jw *w, FILE *f, int pretty);
/* Gathers the output in buf (cap bytes, the caller's) until it is full or
 * lw_jw_flush. Whoever writes to f directly, or asks where it is, flushes
 * first (or uses lw_jw_tell). */
void lw_jw_buffer(lw_jw *w, char *buf, size_t cap);
void lw_jw_flush(lw_jw *w);
/* Where the output stands: ftello(f) plus what is gathered; -1 if unknown. */
long long lw_jw_tell(lw_jw *w);
/* Flushes, then says whether anything failed. */
int lw_jw_failed(lw_jw *w);

/* key is NULL inside arrays and at the top level. */
void lw_jw_object(lw_jw *w, const char *key);
void lw_jw_array(lw_jw *w, const char *key);
void lw_jw_end(lw_jw *w);
void lw_jw_str(lw_jw *w, const char *key, const char *value); /* NULL value -> null */
void lw_jw_strn(lw_jw *w, const char *key, const char *value, size_t len);
void lw_jw_int(lw_jw *w, const char *key, int64_t value);
void lw_jw_uint(lw_jw *w, const char *key, uint64_t value);
void lw_jw_double(lw_jw *w, const char *key, double value);
/* A number as it reads best: an integral value as an integer ("512"),
 * else the fewest digits that read back as it ("0.1"); non-finite: null. */
void lw_jw_number(lw_jw *w, const char *key, double value);
/* [a, b]: an interval or a range of two numbers. */
void lw_jw_double_pair(lw_jw *w, const char *key, double a, double b);
void lw_jw_bool(lw_jw *w, const char *key, int value);
void lw_jw_null(lw_jw *w, const char *key);
/* A value already written as JSON text (the caller vouches for it). */
void lw_jw_raw(lw_jw *w, const char *key, const char *json, size_t len);

/* Writes s as the body of a JSON string (no quotes). Shared with the tools. */
void lw_json_escape(FILE *f, const char *s, size_t len);

#endif
