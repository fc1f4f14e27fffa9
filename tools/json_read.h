/* json_read.h — a small, strict, bounded JSON reader (DOM) for leakwatch reports.
 *
 * Strict: exactly RFC 8259. One value, whitespace (space, tab, CR, LF) around it, nothing
 * else; UTF-8 is validated (overlong forms, UTF-16 surrogates and code points above U+10FFFF
 * are rejected); escapes are checked, including \uXXXX surrogate pairs (a lone surrogate is an
 * error); numbers follow the RFC grammar (no leading zeros, '+', '.5', '1.', hex, NaN or
 * Infinity); no comments, no trailing commas, no single quotes. The only leniency is that a
 * UTF-8 byte order mark before the value is skipped (RFC 8259 section 8.1 allows that).
 *
 * Bounded: the input size, the nesting depth and the number of nodes are limited (see
 * lw_json_limits), and the parser never recurses, so hostile input (a megabyte of '[', a huge
 * flat array, a truncated file) fails with a message instead of exhausting the C stack or
 * memory.
 *
 * Memory: a parsed document lives in one arena owned by its root; lw_json_free(root) releases
 * all of it. Every node pointer obtained from a document is valid until then. The input buffer
 * is not referenced after lw_json_parse returns.
 *
 * Threads: there is no global state. Different documents may be parsed and read concurrently;
 * one document may be read (never written) by many threads at once, because nothing in it is
 * built lazily.
 *
 * Absent values: every accessor accepts NULL (the result of a failed lookup) and then returns
 * its "not found" answer, so lookups chain: lw_json_int64(lw_json_path(r, "totals.n"), &n).
 */
#ifndef LW_JSON_READ_H
#define LW_JSON_READ_H

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

typedef struct lw_json lw_json; /* opaque node */

/* 0 in a field (or a NULL limits pointer) selects that field's default.
 *   max_depth  nested arrays/objects; default 64. "[[1]]" has depth 2; a scalar alone has 0.
 *   max_nodes  values plus object member names; default 10,000,000. Each costs 32 bytes, so
 *              this also bounds the tree's memory (about 320 MB at the default).
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

/* Frees a whole document. Takes only a root returned by a parse function (any other node is
 * ignored, so a mistaken call cannot corrupt the arena); NULL is allowed. */
void lw_json_free(lw_json *root);

/* LW_JSON_NULL also for an absent value (v == NULL); use lw_json_is_null or a pointer test to
 * tell an explicit null from a missing one. */
lw_json_type lw_json_type_of(const lw_json *v);
/* "null", "bool", "number", "string", "array", "object"; for messages. */
const char *lw_json_type_name(lw_json_type t);

/* Member lookup. Duplicate names are all kept (lw_json_key_at/lw_json_value_at see each one in
 * document order); lookup returns the LAST member with that name, as most JSON readers do.
 * Objects with more than 16 members get a sorted index at parse time, so a lookup costs
 * O(log n); smaller ones are scanned. A name containing "\u0000" can be found only with
 * lw_json_get_n. NULL if absent or obj is not an object. */
const lw_json *lw_json_get(const lw_json *obj, const char *key);
const lw_json *lw_json_get_n(const lw_json *obj, const char *key, size_t keylen);

const lw_json *lw_json_at(const lw_json *arr, size_t i); /* NULL if out of range / not array */
/* Element count of an array, member count of an object (duplicates included), byte length of a
 * string (embedded NULs included), 0 otherwise. */
size_t lw_json_len(const lw_json *v);
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
/* The number's literal text as written in the document ("1.50e3"); NULL if not a number. */
const char *lw_json_number_text(const lw_json *v);
/* 0 and *out set when v is a number whose exact decimal value is an integer in range; this is
 * computed from the literal, never through double, so 18446744073709551615 and
 * -9223372036854775808 are exact. "1e3" and "10.0" count as integers; "1.5", "1e-1" do not.
 * -1 otherwise, *out untouched. */
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
