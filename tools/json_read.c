/* json_read.c — strict, bounded, non-recursive JSON reader; see json_read.h for the contract.
 *
 * How it works: one left-to-right pass with an explicit stack of open containers (so nesting
 * depth costs heap, never C stack). Finished values are pushed onto a scratch vector; when a
 * container closes, its children (for objects: name, value, name, value, ...) are the top of
 * that vector and are copied in one block into the document's arena. Every container therefore
 * holds its children as one contiguous array, and the whole tree is a handful of large
 * allocations that lw_json_free releases together.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strtod_l/newlocale (locale-independent numbers), GNU strerror_r */
#endif
#include "json_read.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- nodes ---- */

enum { F_TRUE = 1, F_ROOT = 2 };

/* Objects with more members than this get a sorted index; below it a backwards linear scan is
 * as fast as a binary search and costs no memory. */
#define INDEX_MIN_MEMBERS 16

struct lw_json {
    unsigned char type;  /* lw_json_type */
    unsigned char flags; /* F_TRUE, F_ROOT */
    size_t len;          /* string bytes, literal bytes, element or member count */
    union {
        const char *s;  /* string (NUL-terminated) or number literal */
        lw_json *items; /* array: len nodes; object: 2*len nodes, name then value */
    } p;
    union {
        double d;              /* number */
        const lw_json **index; /* object: name nodes sorted by (bytes, position), or NULL */
    } x;
};

/* ---- arena ---- */

struct chunk {
    struct chunk *next;
    size_t cap, used;
    max_align_t data[];
};

typedef struct {
    struct chunk *head; /* the chunk being filled; dedicated big chunks sit behind it */
    size_t next_cap;
} arena;

#define ARENA_FIRST_CHUNK ((size_t)4096)
#define ARENA_MAX_CHUNK ((size_t)8 << 20)

static struct chunk *chunk_new(size_t cap) {
    if (cap > SIZE_MAX - sizeof(struct chunk)) return NULL;
    struct chunk *c = malloc(sizeof(struct chunk) + cap);
    if (!c) return NULL;
    c->next = NULL;
    c->cap = cap;
    c->used = 0;
    return c;
}

static void arena_free(arena *a) {
    struct chunk *c = a->head;
    while (c) {
        struct chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
}

/* align is 1 or 8 (nodes hold pointers and doubles; 8 suffices for them on every LP64/ILP32
 * target, and chunk data itself is max_align_t-aligned). */
static void *arena_alloc(arena *a, size_t size, size_t align) {
    struct chunk *c = a->head;
    if (c) {
        size_t off = (c->used + align - 1) & ~(align - 1);
        if (off <= c->cap && size <= c->cap - off) {
            c->used = off + size;
            return (char *)c->data + off;
        }
    }
    /* A big block (a wide array, a long string) gets a chunk of its own, linked behind the
     * current one, so the current chunk's free tail is not abandoned. */
    if (size > a->next_cap / 2) {
        c = chunk_new(size);
        if (!c) return NULL;
        if (a->head) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            a->head = c;
        }
        c->used = size;
        return c->data;
    }
    c = chunk_new(a->next_cap);
    if (!c) return NULL;
    if (a->next_cap < ARENA_MAX_CHUNK) a->next_cap *= 2;
    c->next = a->head;
    a->head = c;
    c->used = size;
    return c->data;
}

/* The root node lives next to the arena it owns, so lw_json_free needs only the root. */
struct doc {
    struct chunk *chunks;
    lw_json root;
};

/* ---- parser state ---- */

typedef struct {
    size_t start; /* scratch index of the container's first child */
    unsigned char type;
} frame;

typedef struct {
    const unsigned char *s;
    size_t len, pos;
    int bom; /* a skipped byte order mark shifts columns on line 1 */
    size_t max_depth, max_nodes, nodes;
    arena ar;
    lw_json *scratch;
    size_t nscratch, capscratch;
    frame *frames;
    size_t nframes, capframes;
    locale_t cloc; /* "C" locale for strtod_l, created on first need */
    char *err;
    size_t errlen;
} parser;

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Line and column (1-based; columns in code points) of byte offset pos. Only computed when an
 * error is reported, so the hot path never tracks newlines. */
static void line_col(const parser *p, size_t pos, size_t *line, size_t *col) {
    size_t l = 1, ls = 0;
    const unsigned char *nl;
    while (ls < pos && (nl = memchr(p->s + ls, '\n', pos - ls)) != NULL) {
        l++;
        ls = (size_t)(nl - p->s) + 1;
    }
    if (l == 1 && p->bom) ls = 3;
    size_t c = 1;
    for (size_t i = ls; i < pos; i++)
        if ((p->s[i] & 0xC0) != 0x80) c++;
    *line = l;
    *col = c;
}

/* Reports an error at byte offset pos; always returns 0 so callers can `return fail_at(...)`. */
static int fail_at(parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(parser *p, size_t pos, const char *fmt, ...) {
    if (!p->err || p->errlen == 0) return 0;
    size_t line, col;
    line_col(p, pos, &line, &col);
    int n = snprintf(p->err, p->errlen, "line %zu, column %zu: ", line, col);
    if (n > 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int fail_eof(parser *p, const char *expected) {
    return fail_at(p, p->len, "unexpected end of input, expected %s (file truncated?)", expected);
}

static int fail_oom(parser *p) {
    set_err(p->err, p->errlen, "out of memory");
    return 0;
}

/* "'x'" for a visible ASCII character, a word for blanks, "byte 0xNN" otherwise (control bytes and
 * stray UTF-8 would garble a one-line message). */
static const char *describe(unsigned char c, char buf[16]) {
    if (c == ' ') return "a space";
    if (c == '\t') return "a tab";
    if (c == '\n') return "a line break";
    if (c == '\r') return "a carriage return";
    if (c > 0x20 && c < 0x7F)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02X", c);
    return buf;
}

/* Fails with "expected <what>, found <char>" at pos, or the end-of-input variant. */
static int fail_expected(parser *p, const char *what) {
    if (p->pos >= p->len) return fail_eof(p, what);
    char b[16];
    return fail_at(p, p->pos, "expected %s, found %s", what, describe(p->s[p->pos], b));
}

static void skip_ws(parser *p) {
    const unsigned char *s = p->s;
    size_t i = p->pos, n = p->len;
    while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        i++;
    p->pos = i;
}

static int count_node(parser *p) {
    if (p->nodes >= p->max_nodes)
        return fail_at(p, p->pos, "more than %zu values and member names (max_nodes)",
                       p->max_nodes);
    p->nodes++;
    return 1;
}

static lw_json *scratch_push(parser *p) {
    if (p->nscratch == p->capscratch) {
        size_t cap = p->capscratch ? p->capscratch * 2 : 64;
        if (cap > SIZE_MAX / sizeof(lw_json)) return NULL;
        lw_json *n = realloc(p->scratch, cap * sizeof(lw_json));
        if (!n) return NULL;
        p->scratch = n;
        p->capscratch = cap;
    }
    lw_json *v = &p->scratch[p->nscratch++];
    memset(v, 0, sizeof *v);
    return v;
}

/* ---- strings ---- */

/* Length (2..4) of the valid UTF-8 sequence at s[0] (a byte >= 0x80) with n bytes available;
 * 0 if invalid; -1 if it is a valid prefix cut off by the end of input. Follows Unicode's table
 * of well-formed sequences, so overlong forms, surrogates and values above U+10FFFF fail. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int len;
    if (c < 0xC2) return 0;
    if (c < 0xE0) {
        len = 2;
    } else if (c < 0xF0) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c < 0xF5) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    for (int k = 1; k < len; k++) {
        if ((size_t)k >= n) return -1;
        unsigned char b = s[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return 0;
    }
    return len;
}

static int hex4(const unsigned char *s, unsigned *out) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = s[k];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

/* 1 if s[0..4) are hex digits, -1 if a non-hex byte comes first, 0 if the input (avail bytes)
 * ends before four of them. */
static int check_hex(const unsigned char *s, size_t avail) {
    for (size_t k = 0; k < 4; k++) {
        if (k >= avail) return 0;
        unsigned char c = s[k];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return -1;
    }
    return 1;
}

/* Decodes the string body starting at *ip (just after the opening quote). With out == NULL it
 * only validates and measures; with out it writes the unescaped bytes (the caller sized out from
 * the measuring run, which already validated everything). On success *ip is just past the
 * closing quote and *outlen the decoded length; *escaped says whether any escape occurred (if
 * not, the caller can memcpy the raw bytes instead of decoding again). */
static int decode_string(parser *p, size_t *ip, char *out, size_t *outlen, int *escaped) {
    const unsigned char *s = p->s;
    size_t n = p->len, i = *ip, o = 0;
    int esc = 0;
    for (;;) {
        /* Fast path: a run of plain ASCII. */
        size_t r = i;
        while (r < n && s[r] >= 0x20 && s[r] < 0x80 && s[r] != '"' && s[r] != '\\')
            r++;
        if (out) memcpy(out + o, s + i, r - i);
        o += r - i;
        i = r;
        if (i >= n) return fail_eof(p, "'\"' to close the string");
        unsigned char c = s[i];
        if (c == '"') break;
        if (c < 0x20)
            return fail_at(p, i, "control character U+%04X in string (must be escaped)", c);
        if (c >= 0x80) {
            int k = utf8_seq(s + i, n - i);
            if (k < 0) return fail_eof(p, "the rest of a UTF-8 character");
            if (k == 0) return fail_at(p, i, "invalid UTF-8 in string (byte 0x%02X)", c);
            if (out) memcpy(out + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
            continue;
        }
        /* c == '\\' */
        esc = 1;
        if (i + 1 >= n) return fail_eof(p, "an escape character after '\\'");
        unsigned char e = s[i + 1];
        char simple = 0;
        switch (e) {
        case '"':
            simple = '"';
            break;
        case '\\':
            simple = '\\';
            break;
        case '/':
            simple = '/';
            break;
        case 'b':
            simple = '\b';
            break;
        case 'f':
            simple = '\f';
            break;
        case 'n':
            simple = '\n';
            break;
        case 'r':
            simple = '\r';
            break;
        case 't':
            simple = '\t';
            break;
        case 'u':
            break;
        default: {
            char b[16];
            return fail_at(p, i, "invalid escape in string: '\\' followed by %s", describe(e, b));
        }
        }
        if (simple) {
            if (out) out[o] = simple;
            o++;
            i += 2;
            continue;
        }
        /* Check "\uXXXX" (and a following "\uXXXX" for a high surrogate) byte by byte, so
         * input that stops partway is reported as truncated and a wrong byte as what it is. */
        unsigned cp, lo = 0;
        int cut = check_hex(s + i + 2, n - i - 2);
        if (cut < 0) return fail_at(p, i, "invalid \\u escape in string: expected 4 hex digits");
        if (cut == 0) return fail_eof(p, "4 hex digits after '\\u'");
        hex4(s + i + 2, &cp);
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return fail_at(
                p, i, "lone surrogate \\u%04X in string (low surrogate without a high one)", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            /* A high surrogate is only meaningful followed by "\uDC00".."\uDFFF". */
            size_t rest = n - i - 6;
            int ok = 1;
            if (rest >= 1 && s[i + 6] != '\\') ok = 0;
            if (ok && rest >= 2 && s[i + 7] != 'u') ok = 0;
            if (ok) {
                if (rest < 2) return fail_eof(p, "a low surrogate after a high one");
                cut = check_hex(s + i + 8, rest - 2);
                if (cut == 0) return fail_eof(p, "a low surrogate after a high one");
                if (cut < 0 || !hex4(s + i + 8, &lo) || lo < 0xDC00 || lo > 0xDFFF) ok = 0;
            }
            if (!ok)
                return fail_at(p, i,
                               "lone surrogate \\u%04X in string (high surrogate not followed by "
                               "a low one)",
                               cp);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 12;
        } else {
            i += 6;
        }
        unsigned char u[4];
        size_t k;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            k = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            k = 4;
        }
        if (out) memcpy(out + o, u, k);
        o += k;
    }
    *ip = i + 1;
    *outlen = o;
    *escaped = esc;
    return 1;
}

/* Parses the string whose opening quote is at p->pos into a new scratch node. Two passes: the
 * first validates and measures, so the arena block is exactly the decoded size; the second is
 * a memcpy unless the string had escapes. */
static int parse_string(parser *p) {
    size_t start = p->pos + 1, i = start, olen;
    int escaped;
    if (!decode_string(p, &i, NULL, &olen, &escaped)) return 0;
    if (!count_node(p)) return 0;
    char *buf = arena_alloc(&p->ar, olen + 1, 1);
    if (!buf) return fail_oom(p);
    if (escaped) {
        size_t j = start, olen2;
        (void)decode_string(p, &j, buf, &olen2, &escaped); /* validated above: cannot fail */
    } else {
        memcpy(buf, p->s + start, olen);
    }
    buf[olen] = '\0';
    lw_json *v = scratch_push(p);
    if (!v) return fail_oom(p);
    v->type = LW_JSON_STRING;
    v->len = olen;
    v->p.s = buf;
    p->pos = i;
    return 1;
}

/* ---- numbers ---- */

static int is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

/* The double for a validated literal. Clinger's fast path when the decimal significand fits in
 * 53 bits and the power of ten is exact (|e| <= 22): one IEEE multiply or divide of two exact
 * values is correctly rounded. Everything else goes to strtod_l in the "C" locale, because plain
 * strtod would read "1.5" as 1 under a locale whose decimal separator is ','. */
static int number_value(parser *p, const char *lit, double *out) {
#if FLT_EVAL_METHOD == 0
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *c = lit;
    int neg = *c == '-';
    if (neg) c++;
    uint64_t m = 0;
    int ok = 1;
    long long e10 = 0;
    for (; is_digit((unsigned char)*c); c++) {
        if (m > ((uint64_t)1 << 53) / 10) ok = 0;
        m = m * 10 + (uint64_t)(*c - '0');
    }
    if (*c == '.') {
        for (c++; is_digit((unsigned char)*c); c++) {
            if (m > ((uint64_t)1 << 53) / 10) ok = 0;
            m = m * 10 + (uint64_t)(*c - '0');
            e10--;
        }
    }
    if (*c == 'e' || *c == 'E') {
        c++;
        int eneg = *c == '-';
        if (*c == '-' || *c == '+') c++;
        long long ev = 0;
        for (; is_digit((unsigned char)*c); c++)
            if (ev < 100000) ev = ev * 10 + (*c - '0');
        e10 += eneg ? -ev : ev;
    }
    if (ok && m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double d = (double)m;
        d = e10 < 0 ? d / pow10[-e10] : d * pow10[e10];
        *out = neg ? -d : d;
        return 1;
    }
#endif
    if (p->cloc == (locale_t)0) {
        p->cloc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (p->cloc == (locale_t)0) return fail_oom(p);
    }
    *out = strtod_l(lit, NULL, p->cloc);
    return 1;
}

static int parse_number(parser *p) {
    const unsigned char *s = p->s;
    size_t n = p->len, start = p->pos, i = start;
    if (s[i] == '-') {
        i++;
        if (i >= n) return fail_eof(p, "a digit after '-'");
        if (!is_digit(s[i])) {
            char b[16];
            if (s[i] == 'I') return fail_at(p, start, "-Infinity is not valid JSON");
            return fail_at(p, i, "expected a digit after '-', found %s", describe(s[i], b));
        }
    }
    if (s[i] == '0') {
        i++;
        if (i < n && is_digit(s[i]))
            return fail_at(p, start, "leading zeros are not allowed in numbers");
    } else {
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n) return fail_eof(p, "a digit after the decimal point");
        if (!is_digit(s[i])) {
            char b[16];
            return fail_at(p, i, "expected a digit after the decimal point, found %s",
                           describe(s[i], b));
        }
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n) return fail_eof(p, "a digit in the exponent");
        if (!is_digit(s[i])) {
            char b[16];
            return fail_at(p, i, "expected a digit in the exponent, found %s", describe(s[i], b));
        }
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (!count_node(p)) return 0;
    /* Keep the literal: exact 64-bit integers are read from it, and strtod_l needs a
     * NUL-terminated copy anyway (the input need not be terminated). */
    size_t ll = i - start;
    char *lit = arena_alloc(&p->ar, ll + 1, 1);
    if (!lit) return fail_oom(p);
    memcpy(lit, s + start, ll);
    lit[ll] = '\0';
    double d;
    if (!number_value(p, lit, &d)) return 0;
    lw_json *v = scratch_push(p);
    if (!v) return fail_oom(p);
    v->type = LW_JSON_NUMBER;
    v->len = ll;
    v->p.s = lit;
    v->x.d = d;
    p->pos = i;
    return 1;
}

/* ---- literals and the value dispatcher ---- */

static int parse_literal(parser *p, const char *word, lw_json_type t, int truth) {
    size_t wl = strlen(word), avail = p->len - p->pos;
    size_t k = 0;
    while (k < wl && k < avail && p->s[p->pos + k] == (unsigned char)word[k])
        k++;
    if (k < wl) {
        char what[16];
        snprintf(what, sizeof what, "'%s'", word);
        if (k == avail) return fail_eof(p, what);
        return fail_at(p, p->pos, "invalid literal, expected %s", what);
    }
    if (!count_node(p)) return 0;
    lw_json *v = scratch_push(p);
    if (!v) return fail_oom(p);
    v->type = (unsigned char)t;
    v->flags = truth ? F_TRUE : 0;
    p->pos += wl;
    return 1;
}

/* Explains a character that cannot start a value, naming the common non-JSON habits. */
static int fail_value(parser *p, int after_comma) {
    if (p->pos >= p->len) return fail_eof(p, "a value");
    unsigned char c = p->s[p->pos];
    char b[16];
    if (after_comma && (c == ']' || c == '}'))
        return fail_at(p, p->pos, "trailing comma before '%c' (a value must follow ',')", c);
    if (c == 'N' || c == 'I') return fail_at(p, p->pos, "NaN and Infinity are not valid JSON");
    if (c == '+') return fail_at(p, p->pos, "numbers must not start with '+'");
    if (c == '.') return fail_at(p, p->pos, "numbers must start with a digit, not '.'");
    if (c == '\'') return fail_at(p, p->pos, "strings must use double quotes, not '");
    if (c == '/') return fail_at(p, p->pos, "comments are not allowed in JSON");
    return fail_at(p, p->pos, "expected a value, found %s", describe(c, b));
}

/* Parses an object member name and its ':' (p->pos at the first non-blank after '{' or ','). */
static int parse_member_name(parser *p, int after_comma) {
    if (p->pos < p->len && p->s[p->pos] == '"') {
        if (!parse_string(p)) return 0;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ':') {
            p->pos++;
            return 1;
        }
        return fail_expected(p, "':' after object member name");
    }
    if (after_comma && p->pos < p->len && p->s[p->pos] == '}')
        return fail_at(p, p->pos, "trailing comma before '}' (a member must follow ',')");
    if (p->pos < p->len && p->s[p->pos] == '\'')
        return fail_at(p, p->pos, "member names must use double quotes, not '");
    return fail_expected(p, after_comma ? "a member name in double quotes after ','"
                                        : "a member name in double quotes or '}'");
}

static int cmp_name(const void *a, const void *b) {
    const lw_json *x = *(const lw_json *const *)a, *y = *(const lw_json *const *)b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p.s, y->p.s, m);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    /* Name nodes sit in document order in one array, so addresses order duplicates. */
    return x < y ? -1 : x > y;
}

static int open_container(parser *p, lw_json_type t) {
    if (p->nframes >= p->max_depth)
        return fail_at(p, p->pos, "nesting deeper than %zu levels (max_depth)", p->max_depth);
    if (!count_node(p)) return 0;
    if (p->nframes == p->capframes) {
        size_t cap = p->capframes ? p->capframes * 2 : 16;
        frame *f = realloc(p->frames, cap * sizeof(frame));
        if (!f) return fail_oom(p);
        p->frames = f;
        p->capframes = cap;
    }
    p->frames[p->nframes].start = p->nscratch;
    p->frames[p->nframes].type = (unsigned char)t;
    p->nframes++;
    p->pos++;
    return 1;
}

/* Moves the open container's children from scratch into one arena block and replaces them with
 * the container node. Objects above INDEX_MIN_MEMBERS also get their sorted name index now, not
 * lazily, so reading a document never writes to it (thread safety). */
static int close_container(parser *p) {
    frame f = p->frames[--p->nframes];
    size_t n = p->nscratch - f.start;
    lw_json *items = NULL;
    if (n) {
        items = arena_alloc(&p->ar, n * sizeof(lw_json), 8);
        if (!items) return fail_oom(p);
        memcpy(items, p->scratch + f.start, n * sizeof(lw_json));
    }
    p->nscratch = f.start;
    const lw_json **index = NULL;
    size_t count = f.type == LW_JSON_OBJECT ? n / 2 : n;
    if (f.type == LW_JSON_OBJECT && count > INDEX_MIN_MEMBERS) {
        index = arena_alloc(&p->ar, count * sizeof(*index), 8);
        if (!index) return fail_oom(p);
        for (size_t i = 0; i < count; i++)
            index[i] = &items[2 * i];
        qsort(index, count, sizeof(*index), cmp_name);
    }
    lw_json *v = scratch_push(p);
    if (!v) return fail_oom(p);
    v->type = f.type;
    v->len = count;
    v->p.items = items;
    v->x.index = index;
    p->pos++;
    return 1;
}

/* The whole grammar as a loop over two states: expecting a value, and after a value (where the
 * innermost open container decides what may follow). */
static int parse_all(parser *p) {
    int after_comma = 0;
    for (;;) {
        /* State 1: a value is expected at p->pos. */
        skip_ws(p);
        if (p->pos >= p->len) return fail_eof(p, "a value");
        int ok;
        switch (p->s[p->pos]) {
        case '[':
            if (!open_container(p, LW_JSON_ARRAY)) return 0;
            skip_ws(p);
            if (p->pos < p->len && p->s[p->pos] == ']') {
                ok = close_container(p);
                break;
            }
            after_comma = 0;
            continue;
        case '{':
            if (!open_container(p, LW_JSON_OBJECT)) return 0;
            skip_ws(p);
            if (p->pos < p->len && p->s[p->pos] == '}') {
                ok = close_container(p);
                break;
            }
            if (!parse_member_name(p, 0)) return 0;
            after_comma = 0;
            continue;
        case '"':
            ok = parse_string(p);
            break;
        case '-':
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
        case '8':
        case '9':
            ok = parse_number(p);
            break;
        case 't':
            ok = parse_literal(p, "true", LW_JSON_BOOL, 1);
            break;
        case 'f':
            ok = parse_literal(p, "false", LW_JSON_BOOL, 0);
            break;
        case 'n':
            ok = parse_literal(p, "null", LW_JSON_NULL, 0);
            break;
        default:
            return fail_value(p, after_comma);
        }
        if (!ok) return 0;

        /* State 2: a value just ended; close containers until one wants another value. */
        for (;;) {
            skip_ws(p);
            if (p->nframes == 0) {
                if (p->pos < p->len) {
                    char b[16];
                    return fail_at(p, p->pos,
                                   "unexpected %s after the JSON value (trailing garbage)",
                                   describe(p->s[p->pos], b));
                }
                return 1;
            }
            int is_arr = p->frames[p->nframes - 1].type == LW_JSON_ARRAY;
            unsigned char c = p->pos < p->len ? p->s[p->pos] : 0;
            if (p->pos < p->len && c == (is_arr ? ']' : '}')) {
                if (!close_container(p)) return 0;
                continue;
            }
            if (p->pos < p->len && c == ',') {
                p->pos++;
                if (!is_arr) {
                    skip_ws(p);
                    if (!parse_member_name(p, 1)) return 0;
                }
                after_comma = 1;
                break;
            }
            return fail_expected(p, is_arr ? "',' or ']' after array element"
                                           : "',' or '}' after object member");
        }
    }
}

lw_json *lw_json_parse(const char *text, size_t len, const lw_json_limits *limits, char *err,
                       size_t errlen) {
    size_t max_bytes = limits && limits->max_bytes ? limits->max_bytes : LW_JSON_DEFAULT_MAX_BYTES;
    if (err && errlen) err[0] = '\0';
    if (len > max_bytes) {
        set_err(err, errlen, "input is %zu bytes, larger than the limit of %zu bytes (max_bytes)",
                len, max_bytes);
        return NULL;
    }
    if (!text && len) {
        set_err(err, errlen, "no input text");
        return NULL;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)(text ? text : "");
    p.len = len;
    p.max_depth = limits && limits->max_depth ? limits->max_depth : LW_JSON_DEFAULT_MAX_DEPTH;
    p.max_nodes = limits && limits->max_nodes ? limits->max_nodes : LW_JSON_DEFAULT_MAX_NODES;
    p.ar.next_cap = ARENA_FIRST_CHUNK;
    p.err = err;
    p.errlen = errlen;
    p.cloc = (locale_t)0;

    if (len >= 3 && memcmp(p.s, "\xEF\xBB\xBF", 3) == 0) {
        p.pos = 3;
        p.bom = 1;
    }
    skip_ws(&p);
    struct doc *d = NULL;
    if (p.pos >= len) {
        fail_at(&p, p.pos, "empty input, expected a JSON value");
    } else if (parse_all(&p)) {
        d = malloc(sizeof *d);
        if (d) {
            d->chunks = p.ar.head;
            p.ar.head = NULL;
            d->root = p.scratch[0];
            d->root.flags |= F_ROOT;
        } else {
            fail_oom(&p);
        }
    }
    arena_free(&p.ar);
    free(p.scratch);
    free(p.frames);
    if (p.cloc != (locale_t)0) freelocale(p.cloc);
    /* Not a leak: lw_json_free recovers d from &d->root. */
    // cppcheck-suppress memleak
    return d ? &d->root : NULL;
}

void lw_json_free(lw_json *root) {
    if (!root || !(root->flags & F_ROOT)) return;
    struct doc *d = (struct doc *)(void *)((char *)root - offsetof(struct doc, root));
    arena a = {d->chunks, 0};
    arena_free(&a);
    free(d);
}

/* ---- files ---- */

static const char *errno_text(int e, char *buf, size_t n) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, n); /* GNU variant: returns the text, thread-safe */
#else
    if (strerror_r(e, buf, n) != 0) snprintf(buf, n, "error %d", e);
    return buf;
#endif
}

lw_json *lw_json_parse_file(const char *path, const lw_json_limits *limits, char *err,
                            size_t errlen) {
    size_t max = limits && limits->max_bytes ? limits->max_bytes : LW_JSON_DEFAULT_MAX_BYTES;
    char eb[128];
    if (err && errlen) err[0] = '\0';
    if (!path) {
        set_err(err, errlen, "no file name");
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        set_err(err, errlen, "cannot open %s: %s", path, errno_text(e, eb, sizeof eb));
        return NULL;
    }
    struct stat st;
    size_t cap = 65536;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        /* Refuse an oversized regular file before reading any of it. */
        if ((unsigned long long)st.st_size > (unsigned long long)max) {
            set_err(err, errlen,
                    "%s: file is %lld bytes, larger than the limit of %zu bytes "
                    "(max_bytes)",
                    path, (long long)st.st_size, max);
            close(fd);
            return NULL;
        }
        cap = (size_t)st.st_size + 1; /* +1 sees growth since fstat without a realloc */
    }
    /* Pipes and /proc files report no size: read until EOF, but never more than max + 1. */
    size_t stop = max < SIZE_MAX ? max + 1 : max;
    if (cap > stop) cap = stop;
    char *buf = malloc(cap ? cap : 1);
    size_t n = 0;
    lw_json *root = NULL;
    if (!buf) {
        set_err(err, errlen, "%s: out of memory", path);
        goto out;
    }
    while (n < stop) {
        if (n == cap) {
            size_t nc = cap > stop / 2 ? stop : cap * 2;
            char *nb = realloc(buf, nc);
            if (!nb) {
                set_err(err, errlen, "%s: out of memory", path);
                goto out;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            set_err(err, errlen, "cannot read %s: %s", path, errno_text(e, eb, sizeof eb));
            goto out;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    if (n > max) {
        set_err(err, errlen, "%s: file is larger than the limit of %zu bytes (max_bytes)", path,
                max);
        goto out;
    }
    char pe[384];
    root = lw_json_parse(buf, n, limits, pe, sizeof pe);
    if (!root) set_err(err, errlen, "%s: %s", path, pe);
out:
    free(buf);
    close(fd);
    return root;
}

/* ---- accessors ---- */

lw_json_type lw_json_type_of(const lw_json *v) {
    return v ? (lw_json_type)v->type : LW_JSON_NULL;
}

const char *lw_json_type_name(lw_json_type t) {
    switch (t) {
    case LW_JSON_NULL:
        return "null";
    case LW_JSON_BOOL:
        return "bool";
    case LW_JSON_NUMBER:
        return "number";
    case LW_JSON_STRING:
        return "string";
    case LW_JSON_ARRAY:
        return "array";
    case LW_JSON_OBJECT:
        return "object";
    }
    return "?";
}

static int name_eq(const lw_json *name, const char *key, size_t keylen) {
    return name->len == keylen && memcmp(name->p.s, key, keylen) == 0;
}

const lw_json *lw_json_get_n(const lw_json *obj, const char *key, size_t keylen) {
    if (!obj || obj->type != LW_JSON_OBJECT || (!key && keylen)) return NULL;
    if (!key) key = "";
    if (!obj->x.index) {
        /* Backwards, so the last duplicate wins. */
        for (size_t i = obj->len; i-- > 0;)
            if (name_eq(&obj->p.items[2 * i], key, keylen)) return &obj->p.items[2 * i + 1];
        return NULL;
    }
    /* Upper bound: first index entry whose name sorts after key. Equal names are ordered by
     * position, so the entry just before it is the last duplicate. */
    size_t lo = 0, hi = obj->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const lw_json *nm = obj->x.index[mid];
        size_t m = nm->len < keylen ? nm->len : keylen;
        int c = memcmp(nm->p.s, key, m);
        if (c == 0) c = nm->len < keylen ? -1 : nm->len > keylen;
        if (c <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || !name_eq(obj->x.index[lo - 1], key, keylen)) return NULL;
    return obj->x.index[lo - 1] + 1;
}

const lw_json *lw_json_get(const lw_json *obj, const char *key) {
    return key ? lw_json_get_n(obj, key, strlen(key)) : NULL;
}

const lw_json *lw_json_at(const lw_json *arr, size_t i) {
    if (!arr || arr->type != LW_JSON_ARRAY || i >= arr->len) return NULL;
    return &arr->p.items[i];
}

size_t lw_json_len(const lw_json *v) {
    if (!v) return 0;
    switch (v->type) {
    case LW_JSON_STRING:
    case LW_JSON_ARRAY:
    case LW_JSON_OBJECT:
        return v->len;
    default:
        return 0;
    }
}

const char *lw_json_key_at(const lw_json *obj, size_t i) {
    if (!obj || obj->type != LW_JSON_OBJECT || i >= obj->len) return NULL;
    return obj->p.items[2 * i].p.s;
}

size_t lw_json_key_len_at(const lw_json *obj, size_t i) {
    if (!obj || obj->type != LW_JSON_OBJECT || i >= obj->len) return 0;
    return obj->p.items[2 * i].len;
}

const lw_json *lw_json_value_at(const lw_json *obj, size_t i) {
    if (!obj || obj->type != LW_JSON_OBJECT || i >= obj->len) return NULL;
    return &obj->p.items[2 * i + 1];
}

const lw_json *lw_json_path(const lw_json *root, const char *path) {
    if (!root || !path) return NULL;
    const lw_json *v = root;
    const char *s = path;
    int first = 1;
    while (*s) {
        if (*s == '[') {
            s++;
            if (!is_digit((unsigned char)*s)) return NULL;
            size_t idx = 0;
            for (; is_digit((unsigned char)*s); s++) {
                size_t d = (size_t)(*s - '0');
                if (idx > (SIZE_MAX - d) / 10) return NULL;
                idx = idx * 10 + d;
            }
            if (*s != ']') return NULL;
            s++;
            v = lw_json_at(v, idx);
        } else {
            if (!first) {
                if (*s != '.') return NULL;
                s++;
            }
            const char *e = s;
            while (*e && *e != '.' && *e != '[')
                e++;
            if (e == s) return NULL;
            v = lw_json_get_n(v, s, (size_t)(e - s));
            s = e;
        }
        if (!v) return NULL;
        first = 0;
    }
    return v;
}

double lw_json_number(const lw_json *v, double dflt) {
    return v && v->type == LW_JSON_NUMBER ? v->x.d : dflt;
}

const char *lw_json_number_text(const lw_json *v) {
    return v && v->type == LW_JSON_NUMBER ? v->p.s : NULL;
}

/* Exact magnitude of a validated number literal if it is an integer below 2^64. Works on the
 * decimal digits: value = D * 10^e, where D is the significand's digits without leading and
 * trailing zeros, so "1200.00e-2" is 12 and "1e3" is 1000 with no rounding anywhere. */
static int literal_magnitude(const lw_json *v, int *neg, unsigned long long *mag) {
    const char *s = v->p.s;
    size_t i = 0;
    *neg = s[0] == '-';
    if (*neg) i++;
    size_t ib = i;
    while (is_digit((unsigned char)s[i]))
        i++;
    size_t ie = i, fb = i, fe = i;
    if (s[i] == '.') {
        fb = ++i;
        while (is_digit((unsigned char)s[i]))
            i++;
        fe = i;
    }
    long long ex = 0;
    if (s[i] == 'e' || s[i] == 'E') {
        i++;
        int eneg = s[i] == '-';
        if (s[i] == '-' || s[i] == '+') i++;
        /* Saturate: any exponent this large means "not an integer" or "out of range". */
        for (; is_digit((unsigned char)s[i]); i++)
            if (ex < 1000000000LL) ex = ex * 10 + (s[i] - '0');
        if (eneg) ex = -ex;
    }
    size_t il = ie - ib, fl = fe - fb, total = il + fl;
#define DIGIT(k) ((k) < il ? s[ib + (k)] : s[fb + (k)-il])
    size_t first = 0;
    while (first < total && DIGIT(first) == '0')
        first++;
    if (first == total) {
        *mag = 0;
        return 1;
    }
    size_t last = total - 1;
    while (DIGIT(last) == '0')
        last--;
    /* Literals are at most max_bytes long, far below 2^62, so this cannot overflow. */
    long long e = ex - (long long)fl + (long long)(total - 1 - last);
    if (e < 0) return 0;
    size_t nd = last - first + 1;
    if ((long long)nd + e > 20) return 0; /* >= 10^20 > 2^64 */
    unsigned long long m = 0;
    for (size_t k = first; k <= last; k++) {
        unsigned d = (unsigned)(DIGIT(k) - '0');
        if (m > (ULLONG_MAX - d) / 10) return 0;
        m = m * 10 + d;
    }
#undef DIGIT
    for (long long k = 0; k < e; k++) {
        if (m > ULLONG_MAX / 10) return 0;
        m *= 10;
    }
    *mag = m;
    return 1;
}

int lw_json_int64(const lw_json *v, long long *out) {
    int neg;
    unsigned long long m;
    if (!v || v->type != LW_JSON_NUMBER || !literal_magnitude(v, &neg, &m)) return -1;
    if (neg) {
        if (m > (unsigned long long)LLONG_MAX + 1) return -1;
        /* -(m - 1) - 1 reaches LLONG_MIN without overflowing. */
        *out = m == 0 ? 0 : -(long long)(m - 1) - 1;
    } else {
        if (m > (unsigned long long)LLONG_MAX) return -1;
        *out = (long long)m;
    }
    return 0;
}

int lw_json_uint64(const lw_json *v, unsigned long long *out) {
    int neg;
    unsigned long long m;
    if (!v || v->type != LW_JSON_NUMBER || !literal_magnitude(v, &neg, &m)) return -1;
    if (neg && m != 0) return -1;
    *out = m;
    return 0;
}

const char *lw_json_string(const lw_json *v) {
    return v && v->type == LW_JSON_STRING ? v->p.s : NULL;
}

int lw_json_bool(const lw_json *v, int dflt) {
    return v && v->type == LW_JSON_BOOL ? (v->flags & F_TRUE) != 0 : dflt;
}

int lw_json_is_null(const lw_json *v) {
    return v && v->type == LW_JSON_NULL;
}
