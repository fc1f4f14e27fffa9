/* SPDX-License-Identifier: Apache-2.0 */
#include "torch_info.h"

#include "fmt.h"
#include "log.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT (1u << 20)

enum { F_SITES, F_DIAGNOSIS, F_BACKEND, F_STEPS, F_ANSWER, F_STEP_UNIT, F_HOST_OWNER, F_COUNT };
static const char *const names[F_COUNT] = {"sites",  "diagnosis", "backend",   "steps",
                                           "answer", "step_unit", "host_owner"};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *texts[F_COUNT];
static char *label;
static char *owner;     /* what keeps the leak alive: the label's text after a newline */
static char *host_text; /* host_owner's message: what keeps the pinned host site alive */
static int said[F_COUNT];

/* ---- a strict JSON checker (RFC 8259), depth-limited ---- */

typedef struct {
    const char *p;
    int depth;
} scan;

static void ws(scan *s) {
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
        s->p++;
}

static int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int string(scan *s) {
    if (*s->p != '"') return 0;
    for (s->p++; *s->p != '"'; s->p++) {
        unsigned char c = (unsigned char)*s->p;
        if (c < 0x20) return 0;
        if (c != '\\') continue;
        c = (unsigned char)*++s->p;
        if (c == 'u') {
            for (int i = 1; i <= 4; i++)
                if (!is_hex(s->p[i])) return 0;
            s->p += 4;
        } else if (!strchr("\"\\/bfnrt", c) || !c) {
            return 0;
        }
    }
    s->p++;
    return 1;
}

static int digits(scan *s) {
    const char *start = s->p;
    while (*s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > start;
}

static int number(scan *s) {
    if (*s->p == '-') s->p++;
    if (*s->p == '0')
        s->p++;
    else if (!digits(s))
        return 0;
    if (*s->p == '.' && (s->p++, !digits(s))) return 0;
    if (*s->p == 'e' || *s->p == 'E') {
        s->p++;
        if (*s->p == '+' || *s->p == '-') s->p++;
        if (!digits(s)) return 0;
    }
    return 1;
}

static int value(scan *s);

static int items(scan *s, char close, int keyed) {
    if (++s->depth > 24) return 0;
    s->p++;
    ws(s);
    if (*s->p == close) {
        s->p++;
        s->depth--;
        return 1;
    }
    for (;;) {
        if (keyed) {
            if (!string(s)) return 0;
            ws(s);
            if (*s->p++ != ':') return 0;
            ws(s);
        }
        if (!value(s)) return 0;
        ws(s);
        if (*s->p == close) break;
        if (*s->p++ != ',') return 0;
        ws(s);
    }
    s->p++;
    s->depth--;
    return 1;
}

static int value(scan *s) {
    switch (*s->p) {
    case '{':
        return items(s, '}', 1);
    case '[':
        return items(s, ']', 0);
    case '"':
        return string(s);
    case 't':
        return strncmp(s->p, "true", 4) == 0 ? (s->p += 4, 1) : 0;
    case 'f':
        return strncmp(s->p, "false", 5) == 0 ? (s->p += 5, 1) : 0;
    case 'n':
        return strncmp(s->p, "null", 4) == 0 ? (s->p += 4, 1) : 0;
    default:
        return number(s);
    }
}

int lw_json_valid(const char *text, char type) {
    if (!text) return 0;
    scan s = {text, 0};
    ws(&s);
    if (*s.p != type || !value(&s)) return 0;
    ws(&s);
    return *s.p == '\0';
}

/* ---- the summary's label, from the sites ---- */

/* Four hex digits (checked). */
static unsigned hex4(const char *p) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++)
        v = v * 16 + (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    return v;
}

/* The JSON string at p (checked text, at its opening quote) into out as
 * UTF-8, at most n - 1 bytes: \uXXXX escapes (surrogate pairs joined) and
 * the one-letter ones decoded. */
static void decode_string(const char *p, char *out, size_t n) {
    size_t o = 0;
    if (!n) return;
    for (p++; *p && *p != '"' && o + 4 < n; p++) {
        unsigned c = (unsigned char)*p;
        if (c == '\\') {
            c = (unsigned char)*++p;
            if (c == 'u') {
                unsigned u = hex4(p + 1);
                p += 4;
                if (u >= 0xd800 && u < 0xdc00 && p[1] == '\\' && p[2] == 'u') {
                    unsigned lo = hex4(p + 3);
                    if (lo >= 0xdc00 && lo < 0xe000) {
                        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                        p += 6;
                    }
                }
                if (u < 0x80) {
                    out[o++] = (char)u;
                } else if (u < 0x800) {
                    out[o++] = (char)(0xc0 | (u >> 6));
                    out[o++] = (char)(0x80 | (u & 0x3f));
                } else if (u < 0x10000) {
                    out[o++] = (char)(0xe0 | (u >> 12));
                    out[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                    out[o++] = (char)(0x80 | (u & 0x3f));
                } else {
                    out[o++] = (char)(0xf0 | (u >> 18));
                    out[o++] = (char)(0x80 | ((u >> 12) & 0x3f));
                    out[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
                    out[o++] = (char)(0x80 | (u & 0x3f));
                }
                continue;
            }
            c = c == 'n'   ? '\n'
                : c == 't' ? '\t'
                : c == 'r' ? '\r'
                : c == 'b' ? '\b'
                : c == 'f' ? '\f'
                           : c;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
}

static int member(const char *t, const char *key, const char **v, size_t *len);
static size_t each_element(const char *text, size_t limit,
                           void (*fn)(const char *start, size_t len, void *arg), void *arg);

/* The string member key of the object at t into out, newlines as spaces;
 * 0 when absent, null or not a string. */
static int member_text(const char *t, const char *key, char *out, size_t n) {
    const char *v;
    size_t len;
    if (!t || !member(t, key, &v, &len) || *v != '"') return 0;
    decode_string(v, out, n);
    for (char *c = out; *c; c++)
        if (*c == '\n') *c = ' ';
    return 1;
}

/* The number member key of the object at t, or 0. */
static double member_number(const char *t, const char *key) {
    const char *v;
    size_t len;
    if (!t || !member(t, key, &v, &len) || !(*v == '-' || (*v >= '0' && *v <= '9'))) return 0;
    return strtod(v, NULL);
}

/* The object member key of the object at t, or NULL. */
static const char *member_object(const char *t, const char *key) {
    const char *v;
    size_t len;
    return t && member(t, key, &v, &len) && *v == '{' ? v : NULL;
}

typedef struct {
    const char *el[3];
    size_t n;
} first_sites;

static void keep_site(const char *start, size_t len, void *arg) {
    (void)len;
    first_sites *f = arg;
    if (f->n < 3) f->el[f->n++] = start;
}

/* The summary's label of the sites (checked text): the first site's place
 * (and its note), then on lines of their own what keeps it alive (its
 * owner's sentence) and the other leaking sites of at least a tenth of its
 * rate, two at most ("also leaking: PLACE: +RATE/step; kept by ..."). The
 * text after the first newline is said under the exit line. */
static char *compose_label(const char *sites) {
    first_sites f = {{0}, 0};
    each_element(sites, 3, keep_site, &f);
    if (!f.n) return NULL;
    size_t cap = 8192, o = 0;
    char *out = malloc(cap), text[2048], note[512];
    if (!out) return NULL;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(out + o, cap - o, __VA_ARGS__);                                          \
        if (w_ > 0) o = o + (size_t)w_ < cap ? o + (size_t)w_ : cap - 1;                           \
    } while (0)
    if (!member_text(member_object(f.el[0], "where"), "label", text, sizeof text))
        snprintf(text, sizeof text, "?");
    PUT("%s", text);
    if (member_text(f.el[0], "note", note, sizeof note) && note[0]) PUT(" (%s)", note);
    int owned = member_text(member_object(f.el[0], "owner"), "text", text, sizeof text) && text[0];
    if (owned) PUT("\n%s", text);
    double top = member_number(f.el[0], "bytes_per_step");
    for (size_t i = 1; i < f.n; i++) {
        double rate = member_number(f.el[i], "bytes_per_step");
        if (!(top > 0) || rate < top / 10 || rate <= 0) break;
        char rs[64];
        if (!member_text(member_object(f.el[i], "where"), "label", text, sizeof text))
            snprintf(text, sizeof text, "?");
        PUT("%s\nalso leaking: %s: %s", i == 1 && !owned ? "\n" : "", text,
            lw_fmt_rate(rate, "step", rs, sizeof rs));
        const char *own = member_object(f.el[i], "owner");
        if (member_text(own, "name", note, sizeof note) && note[0] &&
            member_text(own, "text", text, sizeof text))
            PUT("; %s", text);
    }
#undef PUT
    return out;
}

/* ---- the store ---- */

int lw_torch_info_set(const char *field, const char *json, const char *message) {
    int f = -1;
    for (int i = 0; field && i < F_COUNT; i++)
        if (!strcmp(field, names[i])) f = i;
    if (f < 0 || !json || strlen(json) > MAX_TEXT) return -1;
    if (!lw_json_valid(json, f == F_SITES ? '[' : '{')) return -1;
    char *copy = strdup(json);
    /* The sites' label: the library's, from the sites (a message given
     * with them, as older helpers gave, is taken as is). */
    char *lab = f != F_SITES ? NULL : message ? strdup(message) : compose_label(json);
    char *own = f == F_HOST_OWNER && message ? strdup(message) : NULL;
    char *nl = lab ? strchr(lab, '\n') : NULL;
    if (nl) {
        *nl = '\0';
        own = nl[1] ? strdup(nl + 1) : NULL;
    }
    if (!copy) {
        free(lab);
        free(own);
        return -1;
    }
    pthread_mutex_lock(&lock);
    free(texts[f]);
    texts[f] = copy;
    if (f == F_SITES) {
        free(label);
        label = lab;
        free(owner);
        owner = own;
    } else if (f == F_HOST_OWNER) {
        free(host_text);
        host_text = own;
    }
    int say = f != F_SITES && f != F_HOST_OWNER && message && *message && !said[f];
    if (say) said[f] = 1;
    pthread_mutex_unlock(&lock);
    if (say && !lw_log_quiet) lw_log("%s", message);
    return 0;
}

int lw_torch_info_present(void) {
    pthread_mutex_lock(&lock);
    int any = 0;
    for (int f = 0; f < F_COUNT; f++)
        any |= texts[f] != NULL;
    pthread_mutex_unlock(&lock);
    return any;
}

/* Calls fn for each element of the array text (already checked). */
static size_t each_element(const char *text, size_t limit,
                           void (*fn)(const char *start, size_t len, void *arg), void *arg) {
    scan s = {text, 0};
    size_t n = 0;
    ws(&s);
    s.p++; /* [ */
    ws(&s);
    while (*s.p && *s.p != ']' && n < limit) {
        const char *start = s.p;
        if (!value(&s)) break;
        if (fn) fn(start, (size_t)(s.p - start), arg);
        n++;
        ws(&s);
        if (*s.p == ',') s.p++;
        ws(&s);
    }
    return n;
}

static void emit_one(const char *start, size_t len, void *arg) {
    lw_jw_raw(arg, NULL, start, len);
}

size_t lw_torch_info_emit_sites(lw_jw *w, size_t limit) {
    pthread_mutex_lock(&lock);
    size_t n = texts[F_SITES] ? each_element(texts[F_SITES], limit, emit_one, w) : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

size_t lw_torch_info_sites(double *top_bytes_per_step) {
    pthread_mutex_lock(&lock);
    size_t n = texts[F_SITES] ? each_element(texts[F_SITES], (size_t)-1, NULL, NULL) : 0;
    if (top_bytes_per_step) {
        *top_bytes_per_step = 0;
        const char *k = n ? strstr(texts[F_SITES], "\"bytes_per_step\":") : NULL;
        if (k) *top_bytes_per_step = strtod(k + strlen("\"bytes_per_step\":"), NULL);
    }
    pthread_mutex_unlock(&lock);
    return n;
}

void lw_torch_info_emit_fields(lw_jw *w) {
    pthread_mutex_lock(&lock);
    for (int f = F_DIAGNOSIS; f < F_ANSWER; f++)
        if (texts[f]) lw_jw_raw(w, names[f], texts[f], strlen(texts[f]));
    pthread_mutex_unlock(&lock);
}

const char *lw_torch_info_label(char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = NULL;
    if (label && n) {
        snprintf(out, n, "%s", label);
        r = out;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

const char *lw_torch_info_owner(char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = NULL;
    if (owner && n) {
        snprintf(out, n, "%s", owner);
        r = out;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- what keeps a pinned host leak's site alive ("host_owner") ---- */

/* The site the host_owner text is about: its top-level "site" (the helper
 * writes it first), or 0. */
static uint32_t host_owner_site(const char *text) {
    const char *k = "{\"site\":";
    if (!text || strncmp(text, k, strlen(k))) return 0;
    char *end;
    unsigned long v = strtoul(text + strlen(k), &end, 10);
    return end > text + strlen(k) && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* The members of the object text (checked) but skip, as members of w's
 * current object. */
static void emit_members(lw_jw *w, const char *t, const char *skip) {
    scan s = {t, 1};
    s.p++; /* { */
    ws(&s);
    while (*s.p == '"') {
        const char *key = s.p + 1;
        if (!string(&s)) break;
        size_t klen = (size_t)(s.p - 1 - key);
        ws(&s);
        if (*s.p++ != ':') break;
        ws(&s);
        const char *v = s.p;
        if (!value(&s)) break;
        char name[64];
        if (klen < sizeof name && !memchr(key, '\\', klen) &&
            !(skip && klen == strlen(skip) && !strncmp(key, skip, klen))) {
            memcpy(name, key, klen);
            name[klen] = '\0';
            lw_jw_raw(w, name, v, (size_t)(s.p - v));
        }
        ws(&s);
        if (*s.p != ',') break;
        s.p++;
        ws(&s);
    }
}

int lw_torch_info_host_owner_emit(lw_jw *w, uint32_t site_id) {
    pthread_mutex_lock(&lock);
    const char *t = texts[F_HOST_OWNER];
    int any = site_id && host_owner_site(t) == site_id;
    /* Its members but "site", as members of the site's own object. */
    if (any) emit_members(w, t, "site");
    pthread_mutex_unlock(&lock);
    return any;
}

/* The value of member key of the object at t (checked text): its start and
 * length, or 0. */
static int member(const char *t, const char *key, const char **v, size_t *len) {
    scan s = {t, 1};
    ws(&s);
    if (*s.p != '{') return 0;
    s.p++;
    ws(&s);
    while (*s.p == '"') {
        const char *k = s.p + 1;
        if (!string(&s)) return 0;
        size_t klen = (size_t)(s.p - 1 - k);
        ws(&s);
        if (*s.p++ != ':') return 0;
        ws(&s);
        const char *start = s.p;
        if (!value(&s)) return 0;
        if (klen == strlen(key) && !strncmp(k, key, klen)) {
            *v = start, *len = (size_t)(s.p - start);
            return 1;
        }
        ws(&s);
        if (*s.p != ',') return 0;
        s.p++;
        ws(&s);
    }
    return 0;
}

static void first_element(const char *start, size_t len, void *arg) {
    (void)len;
    *(const char **)arg = start;
}

int lw_torch_info_answer_members(lw_jw *w) {
    pthread_mutex_lock(&lock);
    const char *top = NULL, *id = NULL, *where = NULL;
    size_t nid = 0, nwhere = 0;
    if (texts[F_SITES]) each_element(texts[F_SITES], 1, first_element, &top);
    int any = top && member(top, "id", &id, &nid);
    if (any) {
        lw_jw_raw(w, "site", id, nid);
        if (member(top, "where", &where, &nwhere))
            lw_jw_raw(w, "where", where, nwhere);
        else
            lw_jw_null(w, "where");
    }
    pthread_mutex_unlock(&lock);
    return any;
}

const char *lw_torch_info_host_owner_text(uint32_t site_id, char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = NULL;
    if (site_id && host_text && n && host_owner_site(texts[F_HOST_OWNER]) == site_id) {
        snprintf(out, n, "%s", host_text);
        r = out;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* The string value of "key" in the helper's compact JSON text (json.dumps
 * with separators (",", ":"), so no space follows the colon), without
 * escapes: the unit and the module's class name are identifiers. */
static int string_value(const char *text, const char *key, char *out, size_t n) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *k = text ? strstr(text, pat) : NULL;
    if (!k || !n) return 0;
    k += strlen(pat);
    size_t i = 0;
    for (; k[i] && k[i] != '"' && k[i] != '\\' && i + 1 < n; i++)
        out[i] = k[i];
    out[i] = '\0';
    return i > 0;
}

int lw_torch_info_step_unit(char *unit, size_t un, char *module, size_t mn) {
    pthread_mutex_lock(&lock);
    const char *t = texts[F_STEP_UNIT];
    int have = string_value(t, "unit", unit, un);
    if (module && mn && !string_value(t, "module", module, mn)) module[0] = '\0';
    pthread_mutex_unlock(&lock);
    return have;
}

/* An identifier, dotted or not, shorter than 128 bytes (a class's name). */
static int plain_name(const char *s) {
    size_t n = 0;
    for (; s && s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
              (s[n] >= '0' && s[n] <= '9') || s[n] == '_' || s[n] == '.'))
            return 0;
    return n > 0 && n < 128;
}

int lw_torch_info_step_unit_set(const char *unit, const char *module) {
    if (!unit || (strcmp(unit, "module_call") && strcmp(unit, "optimizer_step"))) return -1;
    char json[200];
    if (plain_name(module))
        snprintf(json, sizeof json, "{\"unit\":\"%s\",\"module\":\"%s\"}", unit, module);
    else
        snprintf(json, sizeof json, "{\"unit\":\"%s\"}", unit);
    return lw_torch_info_set("step_unit", json, NULL);
}

void lw_torch_info_forget(void) {
    for (int f = 0; f < F_COUNT; f++) {
        free(texts[f]);
        texts[f] = NULL;
        said[f] = 0;
    }
    free(label);
    label = NULL;
    free(owner);
    owner = NULL;
    free(host_text);
    host_text = NULL;
}
