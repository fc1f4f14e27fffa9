/* SPDX-License-Identifier: Apache-2.0 */
/* Values by path, as a tree written by the report's rows (torch_values.h). */
#include "torch_values.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- every concrete path, to its row ---- */

/* A power of two, well above the rows and their abbreviations written out. */
#define SLOTS 4096

static struct {
    char *path;
    size_t len;
    lw_field row;
} slots[SLOTS];
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;

static uint32_t hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* One of the row's paths (head's n bytes, then rest) into the table. */
static int put_path(const char *head, size_t an, const char *rest, void *arg) {
    lw_field row = (lw_field)(intptr_t)arg;
    size_t n = an + strlen(rest);
    char *p = malloc(n + 1);
    if (!p) return 0;
    memcpy(p, head, an);
    strcpy(p + an, rest);
    for (uint32_t i = hash(p, n) & (SLOTS - 1), k = 0; k < SLOTS; k++, i = (i + 1) & (SLOTS - 1))
        if (!slots[i].path) {
            slots[i].path = p, slots[i].len = n, slots[i].row = row;
            return 0;
        }
    free(p);
    return 0;
}

/* Each row's paths, as lw_report_field_find resolves them. */
static void fill_slots(void) {
    for (int f = 0; f < LW_FIELD_COUNT; f++)
        lw_report_field_paths((lw_field)f, put_path, (void *)(intptr_t)f);
}

/* The row of path's first n bytes, or LW_FIELD_COUNT. */
static lw_field find(const char *path, size_t n) {
    pthread_once(&slots_once, fill_slots);
    for (uint32_t i = hash(path, n) & (SLOTS - 1), k = 0; k < SLOTS && slots[i].path;
         k++, i = (i + 1) & (SLOTS - 1))
        if (slots[i].len == n && !memcmp(slots[i].path, path, n)) return slots[i].row;
    return LW_FIELD_COUNT;
}

lw_field lw_tv_find(const char *path) {
    return path ? find(path, strlen(path)) : LW_FIELD_COUNT;
}

/* ---- the tree ---- */

struct lw_tv_node {
    lw_field row;
    int type;  /* LW_TV_* */
    int index; /* its position in its array; -1: an object's member */
    double num;
    char *text;
    lw_tv_node *first, *last, *next; /* children: by row (objects), by index (arrays) */
};

typedef struct chunk {
    struct chunk *prev;
    size_t used, cap;
    max_align_t data[];
} chunk;

struct lw_tv {
    chunk *mem;
    lw_tv_node root;
};

static void *arena(lw_tv *t, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!t->mem || t->mem->cap - t->mem->used < n) {
        /* Small first (most sections are a few values), then 64 KiB. */
        size_t cap = t->mem ? 65536 : 4096;
        if (cap < n) cap = n;
        chunk *c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->prev = t->mem, c->used = 0, c->cap = cap;
        t->mem = c;
    }
    void *p = (char *)t->mem->data + t->mem->used;
    t->mem->used += n;
    return p;
}

lw_tv *lw_tv_new(void) {
    lw_tv *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->root.row = LW_FIELD_COUNT;
    t->root.type = LW_TV_OBJECT;
    t->root.index = -1;
    return t;
}

void lw_tv_free(lw_tv *t) {
    if (!t) return;
    for (chunk *c = t->mem, *p; c; c = p) {
        p = c->prev;
        free(c);
    }
    free(t);
}

/* Where a child (row, or index in an array) goes among parent's children:
 * the one there already, else a new one in order (NULL: out of memory). */
static lw_tv_node *child(lw_tv *t, lw_tv_node *parent, lw_field row, int index) {
    long key = index >= 0 ? index : (long)row;
#define KEY(c) ((c)->index >= 0 ? (long)(c)->index : (long)(c)->row)
    lw_tv_node *prev = NULL, *c = parent->first;
    if (parent->last && KEY(parent->last) < key) {
        prev = parent->last, c = NULL; /* in order: appended */
    } else {
        for (; c && KEY(c) < key; prev = c, c = c->next)
            ;
        if (c && KEY(c) == key) return c;
    }
#undef KEY
    lw_tv_node *n = arena(t, sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->row = row, n->index = index, n->type = LW_TV_NULL;
    n->next = c;
    if (prev)
        prev->next = n;
    else
        parent->first = n;
    if (!c) parent->last = n;
    return n;
}

static const unsigned type_bits[] = {LW_RF_NULL, LW_RF_BOOL, LW_RF_NUM,
                                     LW_RF_STR,  LW_RF_ARR,  LW_RF_OBJ};

/* The path's steps: each member's row and whether an array's element
 * follows it (its row: the path up to that "[]"). */
typedef struct {
    lw_field row, item; /* item: LW_FIELD_COUNT when no "[]" follows */
} step;

/* Checks v against the rows; fills the steps (at most 16). Returns how
 * many, or -1. */
static int plan(const lw_tv_value *v, step *s) {
    if (!v->path || v->type < LW_TV_NULL || v->type > LW_TV_OBJECT) return -1;
    const char *p = v->path;
    int ns = 0, k = 0;
    for (size_t i = 0;; i++) {
        char c = p[i];
        if (c != '.' && c != '[' && c) continue;
        if (ns == 16 || i == 0 || p[i - 1] == '.') return -1;
        /* p[0..i): a member (after "[]" the element, already stepped). */
        if (i >= 2 && p[i - 1] == ']') {
            if (c == '[') return -1; /* "[][]": no row has it */
        } else {
            s[ns].row = find(p, i);
            s[ns].item = LW_FIELD_COUNT;
            if (s[ns].row == LW_FIELD_COUNT) return -1;
            ns++;
        }
        if (c == '[') {
            if (p[i + 1] != ']' || k == 3) return -1;
            s[ns - 1].item = find(p, i + 2);
            if (s[ns - 1].item == LW_FIELD_COUNT) return -1;
            if (v->index[k] < 0 || v->index[k] >= LW_TV_MAX_INDEX) return -1;
            k++;
            i++;
            continue;
        }
        if (!c) break;
    }
    for (int j = k; j < 3; j++)
        if (v->index[j] != -1) return -1;
    /* Each container what its row allows; the value's type its own row's. */
    for (int j = 0; j < ns; j++) {
        const lw_report_field *r = &lw_report_fields[s[j].row];
        int last = j == ns - 1;
        if (s[j].item != LW_FIELD_COUNT) {
            if (!(r->types & LW_RF_ARR)) return -1;
            unsigned want = last ? type_bits[v->type] : LW_RF_OBJ;
            if (!(lw_report_fields[s[j].item].types & want)) return -1;
        } else if (!(r->types & (last ? type_bits[v->type] : LW_RF_OBJ))) {
            return -1;
        }
    }
    return ns;
}

static void make(lw_tv_node *n, int type) {
    if (n->type != type) n->first = n->last = NULL;
    n->type = type;
}

int lw_tv_add(lw_tv *t, const lw_tv_value *v) {
    step s[16];
    int ns = t && v ? plan(v, s) : -1;
    if (ns <= 0) return -1;
    char *text = NULL;
    if (v->type == LW_TV_STRING) {
        size_t l = v->text ? strlen(v->text) : 0;
        if (!v->text || !(text = arena(t, l + 1))) return -1;
        memcpy(text, v->text, l + 1);
    }
    lw_tv_node *n = &t->root;
    for (int j = 0, k = 0; j < ns; j++) {
        int last = j == ns - 1;
        n = child(t, n, s[j].row, -1);
        if (!n) return -1;
        if (s[j].item != LW_FIELD_COUNT) {
            make(n, LW_TV_ARRAY);
            n = child(t, n, s[j].item, v->index[k++]);
            if (!n) return -1;
        }
        if (!last) make(n, LW_TV_OBJECT);
    }
    make(n, v->type);
    n->num = v->type == LW_TV_BOOL ? (v->number != 0) : v->number;
    n->text = text;
    return 0;
}

lw_tv_node *lw_tv_root(lw_tv *t) {
    return t ? &t->root : NULL;
}

lw_tv_node *lw_tv_member(const lw_tv_node *n, lw_field row) {
    if (!n || n->type != LW_TV_OBJECT) return NULL;
    for (lw_tv_node *c = n->first; c && c->row <= row; c = c->next)
        if (c->row == row) return c;
    return NULL;
}

lw_tv_node *lw_tv_first(const lw_tv_node *n) {
    return n && n->type == LW_TV_ARRAY ? n->first : NULL;
}

lw_tv_node *lw_tv_next(const lw_tv_node *n) {
    return n ? n->next : NULL;
}

size_t lw_tv_count(const lw_tv_node *n) {
    size_t k = 0;
    for (const lw_tv_node *c = lw_tv_first(n); c; c = c->next)
        k++;
    return k;
}

int lw_tv_type(const lw_tv_node *n) {
    return n ? n->type : -1;
}

lw_tv_node *lw_tv_get(const lw_tv_node *n, const char *key) {
    if (!n || !key || n->type != LW_TV_OBJECT) return NULL;
    for (lw_tv_node *c = n->first; c; c = c->next) {
        const char *k = lw_report_field_key(c->row);
        if (k && !strcmp(k, key)) return c;
    }
    return NULL;
}

const char *lw_tv_str(const lw_tv_node *n, const char *key) {
    const lw_tv_node *m = lw_tv_get(n, key);
    return m && m->type == LW_TV_STRING ? m->text : NULL;
}

double lw_tv_num(const lw_tv_node *n, const char *key) {
    const lw_tv_node *m = lw_tv_get(n, key);
    return m && m->type == LW_TV_NUMBER ? m->num : NAN;
}

int lw_tv_set_str(lw_tv *t, lw_tv_node *n, lw_field row, const char *s) {
    if (!t || !n || !s || n->type != LW_TV_OBJECT || (unsigned)row >= LW_FIELD_COUNT) return -1;
    size_t l = strlen(s);
    char *text = arena(t, l + 1);
    lw_tv_node *c = text ? child(t, n, row, -1) : NULL;
    if (!c) return -1;
    memcpy(text, s, l + 1);
    make(c, LW_TV_STRING);
    c->text = text;
    return 0;
}

void lw_tv_write(lw_jw *w, const char *key, const lw_tv_node *n) {
    switch (n->type) {
    case LW_TV_OBJECT:
        lw_jw_object(w, key);
        lw_tv_write_members(w, n);
        lw_jw_end(w);
        break;
    case LW_TV_ARRAY:
        lw_jw_array(w, key);
        for (const lw_tv_node *c = n->first; c; c = c->next)
            lw_tv_write(w, NULL, c);
        lw_jw_end(w);
        break;
    case LW_TV_NUMBER:
        lw_jw_number(w, key, n->num);
        break;
    case LW_TV_STRING:
        lw_jw_str(w, key, n->text);
        break;
    case LW_TV_BOOL:
        lw_jw_bool(w, key, n->num != 0);
        break;
    default:
        lw_jw_null(w, key);
    }
}

void lw_tv_write_members(lw_jw *w, const lw_tv_node *n) {
    if (!n || n->type != LW_TV_OBJECT) return;
    for (const lw_tv_node *c = n->first; c; c = c->next)
        lw_tv_write(w, lw_report_field_key(c->row), c);
}

lw_tv_value *lw_tv_unpack(const char *paths, size_t paths_size, size_t npaths, const int *cells,
                          const double *numbers, const char *texts, size_t ntexts, size_t n,
                          char **copy) {
    *copy = NULL;
    if (npaths > n || (n && (!cells || !numbers || !paths))) return NULL;
    const char **pv = calloc(npaths ? npaths : 1, sizeof *pv);
    lw_tv_value *v = calloc(n ? n : 1, sizeof *v);
    char *tx = malloc(ntexts + n + 1);
    if (!pv || !v || !tx) goto fail;
    /* The paths, each ended by a NUL within paths_size bytes. */
    for (size_t i = 0, at = 0; i < npaths; i++) {
        const char *end = at < paths_size ? memchr(paths + at, '\0', paths_size - at) : NULL;
        if (!end) goto fail;
        pv[i] = paths + at;
        at = (size_t)(end - paths) + 1;
    }
    /* The texts, each copied with its NUL; a path number or a length past
     * the end: no path (the value is refused). */
    size_t from = 0, to = 0;
    for (size_t k = 0; k < n; k++) {
        const int *c = cells + 6 * k;
        v[k] = (lw_tv_value){c[0] >= 0 && (size_t)c[0] < npaths ? pv[c[0]] : NULL,
                             {c[1], c[2], c[3]},
                             c[4],
                             numbers[k],
                             NULL};
        if (c[5] >= 0 && (!texts || (size_t)c[5] > ntexts - from)) {
            v[k].path = NULL;
        } else if (c[5] >= 0) {
            memcpy(tx + to, texts + from, (size_t)c[5]);
            tx[to + (size_t)c[5]] = '\0';
            v[k].text = tx + to;
            from += (size_t)c[5];
            to += (size_t)c[5] + 1;
        }
    }
    free(pv);
    *copy = tx;
    return v;
fail:
    free(pv);
    free(v);
    free(tx);
    return NULL;
}
