/* SPDX-License-Identifier: Apache-2.0 */
/* Values handed over by path, kept as a small tree and written as JSON by
 * the report's rows (src/vocab/report_fields.def): the PyTorch helper hands
 * numbers, names and lines (leakwatch_torch_values), never JSON text; the
 * library decides the shape. A path is a row's path with its abbreviations
 * written out ("sites[].where.file", "torch.diagnosis.windows[].state"),
 * with one array position per "[]" in it. A tree holds no lock: its owner
 * (torch_info.c) does. */
#ifndef LW_TORCH_VALUES_H
#define LW_TORCH_VALUES_H

#include "json_write.h"
#include "report_fields.h"

#include <stddef.h>

/* A value's type (leakwatch.h's LEAKWATCH_VALUE_*). ARRAY and OBJECT say
 * that the container is there, empty unless members follow. */
enum { LW_TV_NULL, LW_TV_BOOL, LW_TV_NUMBER, LW_TV_STRING, LW_TV_ARRAY, LW_TV_OBJECT };

/* One value, laid out as leakwatch.h's leakwatch_value. */
typedef struct {
    const char *path; /* "sites[].owners[].count" */
    int index[3];     /* one per "[]" in path, outermost first; -1 for the rest */
    int type;         /* LW_TV_* */
    double number;    /* LW_TV_NUMBER; LW_TV_BOOL: nonzero is true */
    const char *text; /* LW_TV_STRING (UTF-8; invalid bytes are written as U+FFFD) */
} lw_tv_value;

/* Array positions at most (a path's index is below this). */
#define LW_TV_MAX_INDEX 65536

/* lw_report_field_find, from a table built once: a path's row, or
 * LW_FIELD_COUNT. */
lw_field lw_tv_find(const char *path);

typedef struct lw_tv_node lw_tv_node;
typedef struct lw_tv lw_tv;

/* An empty tree (its root: the report's top-level object), or NULL. */
lw_tv *lw_tv_new(void);
void lw_tv_free(lw_tv *t);

/* Adds v: 0, or -1 refused and nothing stored: a path no row has, a type
 * its row does not allow (nor a container's members under a row that is
 * no object or array), an index count other than the path's "[]", an index
 * out of range, out of memory. A later value at the same place replaces the
 * earlier one. */
int lw_tv_add(lw_tv *t, const lw_tv_value *v);

/* Reading: the root; an object's member by its row (NULL when absent); an
 * array's elements, in order (lw_tv_first, then lw_tv_next); a node's
 * type (LW_TV_*) and values. */
lw_tv_node *lw_tv_root(lw_tv *t);
lw_tv_node *lw_tv_member(const lw_tv_node *n, lw_field row);
lw_tv_node *lw_tv_first(const lw_tv_node *n);
lw_tv_node *lw_tv_next(const lw_tv_node *n);
size_t lw_tv_count(const lw_tv_node *n);
int lw_tv_type(const lw_tv_node *n); /* -1 for NULL */
/* An object's member by its key (LW_KEY(...): the same key under
 * different rows, "sites[].owner.name" and "sites[].owners[].name"), its
 * string (NULL: absent, or no string) and number (NAN: absent, or no
 * number). */
lw_tv_node *lw_tv_get(const lw_tv_node *n, const char *key);
const char *lw_tv_str(const lw_tv_node *n, const char *key);
double lw_tv_num(const lw_tv_node *n, const char *key);

/* Sets object n's member row to the string s (copied): for what the library
 * composes itself (a place's label, an owner's sentence). 0, or -1. */
int lw_tv_set_str(lw_tv *t, lw_tv_node *n, lw_field row, const char *s);

/* Writes n as a JSON value under key (NULL in arrays): an object's members
 * in the rows' order, keyed by their rows (lw_report_field_key), an
 * array's elements in index order. */
void lw_tv_write(lw_jw *w, const char *key, const lw_tv_node *n);
/* Writes object n's members into w's current object. */
void lw_tv_write_members(lw_jw *w, const lw_tv_node *n);

/* A batch packed (leakwatch_torch_values_packed): npaths distinct paths in
 * paths (paths_size bytes), each ended by a NUL; 6 ints per value in cells
 * (its path's number, its 3 positions, its type, its text's length in texts
 * or -1); a number per value; the texts end to end (ntexts bytes). Returns
 * the n values (a value whose path number or text lies outside these gets
 * no path: lw_tv_add refuses it), their texts in *copy; the caller frees
 * both. NULL: paths that do not end within their bytes, more paths than
 * values, out of memory. */
lw_tv_value *lw_tv_unpack(const char *paths, size_t paths_size, size_t npaths, const int *cells,
                          const double *numbers, const char *texts, size_t ntexts, size_t n,
                          char **copy);

#endif
