/* SPDX-License-Identifier: Apache-2.0 */
/* json_doc.h — reading leakwatch reports (and socket answers) as JSON documents, on top of
 * jansson (a maintained JSON library: strict RFC 8259 by default, UTF-8 validated, line and
 * column in its messages, nesting bounded).
 *
 * What this layer adds: limits checked before and after parsing (input size, nesting depth,
 * number of values), so a hostile or enormous file fails with a message instead of exhausting
 * memory; a UTF-8 byte order mark before the value is skipped (RFC 8259 section 8.1); files
 * are read only when they are regular files (a FIFO or device would block or never end);
 * accessors that accept NULL (a failed lookup) and return their "not found" answer, so lookups
 * chain: lw_json_int64(lw_json_path(r, "totals.n"), &n); and path lookups.
 *
 * Memory: a parsed document is owned by its root; lw_json_free(root) releases all of it.
 * Threads: different documents may be used concurrently; one document may be read by many
 * threads at once.
 *
 * Integers are exact within the signed 64-bit range (jansson keeps them as integers);
 * larger ones are refused by the parser. Duplicate member names: the last one wins.
 */
#ifndef LW_JSON_DOC_H
#define LW_JSON_DOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    LW_JSON_NULL,
    LW_JSON_BOOL,
    LW_JSON_NUMBER,
    LW_JSON_STRING,
    LW_JSON_ARRAY,
    LW_JSON_OBJECT
} lw_json_type;

typedef struct json_t lw_json; /* a jansson value */

/* 0 in a field (or a NULL limits pointer) selects that field's default.
 *   max_depth  nested arrays/objects; default 64. "[[1]]" has depth 2; a scalar alone has 0.
 *   max_nodes  values plus object member names; default 10,000,000.
 *   max_bytes  input size in bytes; default 1 GiB. */
typedef struct {
    size_t max_depth;
    size_t max_nodes;
    size_t max_bytes;
} lw_json_limits;

#define LW_JSON_DEFAULT_MAX_DEPTH ((size_t)64)
#define LW_JSON_DEFAULT_MAX_NODES ((size_t)10000000)
#define LW_JSON_DEFAULT_MAX_BYTES ((size_t)1 << 30)

/* Parses exactly one JSON value from text[0..len) (need not be NUL-terminated).
 * Returns the root, or NULL on error with a one-line message in err (when err is not NULL and
 * errlen > 0; truncated to fit, always NUL-terminated; set to "" on success), e.g.
 *   "line 3, column 17: expected ',' or '}' after object member, found 'x'"
 *   "line 9, column 1: unexpected end of input, expected ',' or ']' after array element
 *    (file truncated?)"
 * Lines and columns start at 1; columns count characters (UTF-8 code points), not bytes. */
lw_json *lw_json_parse(const char *text, size_t len, const lw_json_limits *limits, char *err,
                       size_t errlen);

/* Reads a whole file (at most limits->max_bytes; larger files are refused without being read
 * to the end) and parses it. Every message starts with the file name:
 *   "cannot open reports/a.json: No such file or directory"
 *   "reports/a.json: line 3, column 17: ..." */
lw_json *lw_json_parse_file(const char *path, const lw_json_limits *limits, char *err,
                            size_t errlen);

/* Frees a whole document. Takes only a root returned by a parse function; NULL is allowed. */
void lw_json_free(lw_json *root);

/* LW_JSON_NULL also for an absent value (v == NULL); use lw_json_is_null or a pointer test to
 * tell an explicit null from a missing one. */
lw_json_type lw_json_type_of(const lw_json *v);
/* "null", "bool", "number", "string", "array", "object"; for messages. */
const char *lw_json_type_name(lw_json_type t);

/* Member lookup (a hash lookup). Of duplicate names the last one is kept. A name containing
 * "\u0000" can be found only with lw_json_get_n. NULL if absent or obj is not an object. */
const lw_json *lw_json_get(const lw_json *obj, const char *key);
const lw_json *lw_json_get_n(const lw_json *obj, const char *key, size_t keylen);

const lw_json *lw_json_at(const lw_json *arr, size_t i); /* NULL if out of range / not array */
/* Element count of an array, member count of an object, byte length of a string (embedded NULs
 * included), 0 otherwise. */
size_t lw_json_len(const lw_json *v);
/* Members in document order (a walk: O(i) each). */
const char *lw_json_key_at(const lw_json *obj, size_t i); /* i-th member name; NULL if none */
size_t lw_json_key_len_at(const lw_json *obj, size_t i);  /* its byte length (NULs included) */
const lw_json *lw_json_value_at(const lw_json *obj, size_t i);

/* Path lookup: member names separated by '.', array indexes in brackets, e.g.
 * "totals.live_bytes", "sites[0].frames[2].function", "[3]" (root array); "" is the root.
 * A name runs up to the next '.' or '[' (names containing those need lw_json_get). Returns NULL
 * if any step is missing or the path is malformed ("a..b", "a.", "a[x]", "a[-1]"). */
const lw_json *lw_json_path(const lw_json *root, const char *path);

/* The number as a double (correctly rounded; beyond the double range it is +-HUGE_VAL), or dflt
 * if v is not a number. */
double lw_json_number(const lw_json *v, double dflt);
/* 0 and *out set when v is a number whose value is an integer in range: an integer literal
 * (exact over the whole signed 64-bit range), or a real such as "1e3" or "10.0" that is
 * integral and exactly representable. "1.5", "1e-1" are not. -1 otherwise, *out untouched. */
int lw_json_int64(const lw_json *v, long long *out);
int lw_json_uint64(const lw_json *v, unsigned long long *out);

/* The unescaped UTF-8 text, NUL-terminated; NULL if not a string. A "\u0000" escape is kept as
 * a 0 byte inside the string: lw_json_len gives the full length, while C string functions see
 * the text only up to that byte. */
const char *lw_json_string(const lw_json *v);

int lw_json_bool(const lw_json *v, int dflt); /* 1/0 for true/false, dflt if not a bool */
int lw_json_is_null(const lw_json *v);        /* 1 only for an explicit null */

#ifdef __cplusplus
}
#endif

#endif
