/* SPDX-License-Identifier: Apache-2.0 */
/* The report's fields (src/vocab/report_fields.c, report_fields.def):
 * docs/report-fields.md is the rows written out, the rows are well formed,
 * and the helpers the command reads them with.
 *
 * LW_REPORT_FIELDS_WRITE=1 (make report-fields-doc) writes the file again
 * from the rows instead of comparing: its prose is kept, its abbreviation
 * lines and table rows replaced. Run from the repository root. */
#include "report_fields.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOC "docs/report-fields.md"

typedef struct {
    char *s;
    size_t n, cap;
} buf;

static void put(buf *b, const char *s) {
    size_t l = strlen(s);
    if (b->n + l + 1 > b->cap) {
        b->cap = (b->n + l + 1) * 2;
        b->s = realloc(b->s, b->cap);
        ck_assert_ptr_nonnull(b->s);
    }
    memcpy(b->s + b->n, s, l + 1);
    b->n += l;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s (run from the repository root)", path);
    buf b = {0};
    char chunk[4096];
    size_t r;
    put(&b, "");
    while ((r = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[r] = '\0';
        put(&b, chunk);
    }
    fclose(f);
    return b.s;
}

static void put_rows(buf *b, unsigned pytorch) {
    char line[4096], types[64];
    for (int i = 0; i < LW_FIELD_COUNT; i++) {
        const lw_report_field *f = &lw_report_fields[i];
        if (!!(f->flags & LW_RF_PYTORCH) != pytorch) continue;
        snprintf(line, sizeof line, "| `%s` | %s | %s |\n", f->path,
                 lw_report_types_text(f->types, types, sizeof types), f->doc);
        put(b, line);
    }
}

static void put_abbrevs(buf *b) {
    char line[1024];
    for (size_t i = 0; i < lw_report_nabbrevs; i++) {
        snprintf(line, sizeof line, "- `%s` stands for ", lw_report_abbrevs[i].name);
        put(b, line);
        const char *p = lw_report_abbrevs[i].paths;
        while (*p) {
            size_t l = strcspn(p, ",");
            snprintf(line, sizeof line, "`%.*s`%s", (int)l, p, p[l] ? ", " : "\n");
            put(b, line);
            p += l + (p[l] == ',');
            p += strspn(p, " ");
        }
    }
}

/* The file with its abbreviation lines and table rows made from the rows:
 * the first block of rows is the core table, the second PyTorch's. */
static char *regenerate(const char *doc) {
    buf b = {0};
    put(&b, "");
    int in_abbrev = 0, in_rows = 0, tables = 0;
    for (const char *l = doc; *l;) {
        size_t len = strcspn(l, "\n");
        int abbrev = !strncmp(l, "- `", 3) && memmem(l, len, "stands for", 10) != NULL;
        int row = !strncmp(l, "| `", 3);
        if (abbrev && !in_abbrev) put_abbrevs(&b);
        if (row && !in_rows) put_rows(&b, (unsigned)tables++);
        in_abbrev = abbrev, in_rows = row;
        if (!abbrev && !row) {
            char *line = strndup(l, len + (l[len] == '\n'));
            put(&b, line);
            free(line);
        }
        l += len + (l[len] == '\n');
    }
    ck_assert_msg(tables == 2, DOC ": %d tables of fields, expected 2 (core, PyTorch)", tables);
    return b.s;
}

START_TEST(doc_is_the_rows) {
    char *doc = slurp(DOC), *want = regenerate(doc);
    const char *write = getenv("LW_REPORT_FIELDS_WRITE");
    if (write && *write) {
        FILE *f = fopen(DOC, "wb");
        ck_assert_ptr_nonnull(f);
        fputs(want, f);
        ck_assert_int_eq(fclose(f), 0);
        printf("test_report_fields: wrote " DOC " from src/vocab/report_fields.def\n");
    } else if (strcmp(doc, want) != 0) {
        size_t i = 0;
        while (doc[i] && doc[i] == want[i])
            i++;
        size_t at = i;
        while (at > 0 && doc[at - 1] != '\n')
            at--;
        ck_abort_msg(DOC " differs from src/vocab/report_fields.def (run make report-fields-doc "
                         "and read the diff); from:\n  file: %.200s\n  rows: %.200s",
                     doc + at, want + at);
    }
    free(doc);
    free(want);
}
END_TEST

/* Every path's parent has its row (or an abbreviation's), each row has a
 * type and a meaning, and no path is listed twice. */
START_TEST(rows_are_well_formed) {
    for (int i = 0; i < LW_FIELD_COUNT; i++) {
        const lw_report_field *f = &lw_report_fields[i];
        ck_assert_msg(f->path && *f->path, "row %d has no path", i);
        ck_assert_msg(f->types != 0, "%s has no type", f->path);
        ck_assert_msg(f->doc && *f->doc && !strchr(f->doc, '|') && !strchr(f->doc, '\n'),
                      "%s: its meaning must be one line without '|'", f->path);
        for (int j = 0; j < i; j++)
            ck_assert_msg(strcmp(lw_report_fields[j].path, f->path) != 0, "%s listed twice",
                          f->path);
        char parent[160];
        snprintf(parent, sizeof parent, "%s", f->path);
        size_t l = strlen(parent);
        if (l > 2 && !strcmp(parent + l - 2, "[]"))
            parent[l - 2] = '\0';
        else if (strrchr(parent, '.'))
            *strrchr(parent, '.') = '\0';
        else
            continue;
        int found = 0;
        for (int j = 0; j < LW_FIELD_COUNT && !found; j++)
            found = !strcmp(lw_report_fields[j].path, parent);
        for (size_t a = 0; a < lw_report_nabbrevs && !found; a++)
            found = !strcmp(lw_report_abbrevs[a].name, parent);
        ck_assert_msg(found, "%s: no row for its parent %s", f->path, parent);
        /* A shown field is a plain member of the top level or of growth. */
        if (f->flags & LW_RF_SHOWN)
            ck_assert_msg(lw_report_field_in((lw_field)i, "") ||
                              lw_report_field_in((lw_field)i, "growth") ||
                              lw_report_field_in((lw_field)i, "oom"),
                          "%s: LW_RF_SHOWN on a field the JSON renderer does not write", f->path);
    }
}
END_TEST

START_TEST(keys_and_members) {
    ck_assert_str_eq(lw_report_field_key(LW_FIELD_growth_p_value), "p_value");
    ck_assert_str_eq(lw_report_field_key(LW_FIELD_verdict), "verdict");
    ck_assert_ptr_null(lw_report_field_key(LW_FIELD_growth_slope_ci_item));
    ck_assert_ptr_null(lw_report_field_key(LW_FIELD_COUNT));
    ck_assert(lw_report_field_in(LW_FIELD_growth_p_value, "growth"));
    ck_assert(!lw_report_field_in(LW_FIELD_growth_p_value, ""));
    ck_assert(lw_report_field_in(LW_FIELD_verdict, ""));
    ck_assert(lw_report_field_in(LW_FIELD_growth, ""));
    ck_assert(!lw_report_field_in(LW_FIELD_growth_cycles_count, "growth"));
    ck_assert(!lw_report_field_in(LW_FIELD_growth_slope_ci_item, "growth"));
    ck_assert(!lw_report_field_in(LW_FIELD_COUNTS_live_bytes, ""));
    ck_assert(lw_report_field_plain(LW_FIELD_torch_backend_torch_version));
    ck_assert(lw_report_field_plain(LW_FIELD_verdict));
    ck_assert(!lw_report_field_plain(LW_FIELD_growth_cycles));
    ck_assert(!lw_report_field_plain(LW_FIELD_sites_id));
    ck_assert(!lw_report_field_plain(LW_FIELD_WINDOW_state));
    ck_assert(!lw_report_field_plain(LW_FIELD_totals_by_kind_any));
    char t[64];
    ck_assert_str_eq(lw_report_types_text(LW_RF_NUM | LW_RF_NULL, t, sizeof t), "number or null");
    ck_assert_str_eq(lw_report_types_text(LW_RF_OBJ, t, sizeof t), "object");
}
END_TEST

int main(void) {
    Suite *s = suite_create("report_fields");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, doc_is_the_rows);
    tcase_add_test(tc, rows_are_well_formed);
    tcase_add_test(tc, keys_and_members);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
