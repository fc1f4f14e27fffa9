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
    int depth;
    int pretty;
    int failed;
    unsigned char has_items[LW_JW_MAX_DEPTH];
    char closer[LW_JW_MAX_DEPTH];
} lw_jw;

void lw_jw_init(lw_jw *w, FILE *f, int pretty);
int lw_jw_failed(const lw_jw *w);

/* key is NULL inside arrays and at the top level. */
void lw_jw_object(lw_jw *w, const char *key);
void lw_jw_array(lw_jw *w, const char *key);
void lw_jw_end(lw_jw *w);
void lw_jw_str(lw_jw *w, const char *key, const char *value); /* NULL value -> null */
void lw_jw_strn(lw_jw *w, const char *key, const char *value, size_t len);
void lw_jw_int(lw_jw *w, const char *key, int64_t value);
void lw_jw_uint(lw_jw *w, const char *key, uint64_t value);
void lw_jw_double(lw_jw *w, const char *key, double value);
void lw_jw_bool(lw_jw *w, const char *key, int value);
void lw_jw_null(lw_jw *w, const char *key);
/* A value already written as JSON text (the caller vouches for it). */
void lw_jw_raw(lw_jw *w, const char *key, const char *json, size_t len);

/* Writes s as the body of a JSON string (no quotes). Shared with the tools. */
void lw_json_escape(FILE *f, const char *s, size_t len);

#endif
