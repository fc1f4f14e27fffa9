/* SPDX-License-Identifier: Apache-2.0 */
/* The report's fields (report_fields.def, report_fields.h). */
#include "report_fields.h"

#include <stdio.h>
#include <string.h>

const lw_report_field lw_report_fields[LW_FIELD_COUNT] = {
#define LW_RF(id, path, types, flags, doc) [LW_FIELD_##id] = {path, types, flags, doc},
#define LW_RF_ABBREV(name, paths)
#include "report_fields.def"
#undef LW_RF
#undef LW_RF_ABBREV
};

const lw_report_abbrev lw_report_abbrevs[] = {
#define LW_RF(id, path, types, flags, doc)
#define LW_RF_ABBREV(name, paths) {#name, paths},
#include "report_fields.def"
#undef LW_RF
#undef LW_RF_ABBREV
};
const size_t lw_report_nabbrevs = sizeof lw_report_abbrevs / sizeof lw_report_abbrevs[0];

const char *lw_report_field_key(lw_field f) {
    if ((unsigned)f >= LW_FIELD_COUNT) return NULL;
    const char *p = lw_report_fields[f].path, *dot = strrchr(p, '.');
    size_t l = strlen(p);
    if (l >= 2 && !strcmp(p + l - 2, "[]")) return NULL;
    return dot ? dot + 1 : p;
}

int lw_report_field_in(lw_field f, const char *object) {
    if ((unsigned)f >= LW_FIELD_COUNT) return 0;
    const char *p = lw_report_fields[f].path;
    size_t ol = strlen(object);
    if (ol) {
        if (strncmp(p, object, ol) != 0 || p[ol] != '.') return 0;
        p += ol + 1;
    }
    return *p && !strpbrk(p, ".[*");
}

int lw_report_field_plain(lw_field f) {
    if ((unsigned)f >= LW_FIELD_COUNT) return 0;
    const char *p = lw_report_fields[f].path;
    if (lw_report_fields[f].types & (LW_RF_ARR | LW_RF_OBJ) || strpbrk(p, "[*")) return 0;
    for (size_t i = 0; i < lw_report_nabbrevs; i++) {
        size_t l = strlen(lw_report_abbrevs[i].name);
        if (!strncmp(p, lw_report_abbrevs[i].name, l) && p[l] == '.') return 0;
    }
    return 1;
}

char *lw_report_types_text(unsigned types, char *out, size_t n) {
    static const char *const words[] = {"null", "boolean", "number", "string", "array", "object"};
    size_t o = 0;
    out[0] = '\0';
    /* The value's type first, "or null" last, as the list writes them. */
    for (int pass = 0; pass < 2; pass++)
        for (unsigned b = 0; b < sizeof words / sizeof words[0]; b++) {
            if (!(types & (1u << b)) || (pass == 0) == (b == 0)) continue;
            int w = snprintf(out + o, n - o, "%s%s", o ? " or " : "", words[b]);
            if (w < 0 || (size_t)w >= n - o) return out;
            o += (size_t)w;
        }
    return out;
}

void lw_report_field_paths(lw_field f, lw_report_path_fn fn, void *arg) {
    const char *p = lw_report_fields[f].path;
    for (size_t i = 0; i < lw_report_nabbrevs; i++) {
        size_t l = strlen(lw_report_abbrevs[i].name);
        if (strncmp(p, lw_report_abbrevs[i].name, l) || p[l] != '.') continue;
        /* "NAME.x": each of NAME's paths, then ".x". */
        for (const char *e = lw_report_abbrevs[i].paths; *e;) {
            size_t n = strcspn(e, ",");
            if (fn(e, n, p + l, arg)) return;
            e += n + (e[n] == ',');
            e += strspn(e, " ");
        }
        return;
    }
    fn(p, strlen(p), "", arg);
}

static int is_path(const char *head, size_t n, const char *rest, void *arg) {
    const char *path = ((const char **)arg)[0];
    if (strncmp(path, head, n) || strcmp(path + n, rest)) return 0;
    ((const char **)arg)[1] = path; /* found */
    return 1;
}

lw_field lw_report_field_find(const char *path) {
    if (!path) return LW_FIELD_COUNT;
    for (int f = 0; f < LW_FIELD_COUNT; f++) {
        const char *look[2] = {path, NULL};
        lw_report_field_paths((lw_field)f, is_path, look);
        if (look[1]) return (lw_field)f;
    }
    return LW_FIELD_COUNT;
}
