/* SPDX-License-Identifier: Apache-2.0 */
/* The report's fields, declared once (report_fields.def), as the options
 * are (options.c): each row is a field's path, its JSON types, its flags and
 * its meaning. The rows drive
 *   - docs/report-fields.md: its tables and abbreviations are the rows,
 *     written out (tests/unit/test_report_fields checks the file against
 *     them; `make report-fields-doc` writes them again);
 *   - tests/integration/test_report_schema: the library's reports hold every
 *     row, with a type the row allows, and no field without a row;
 *   - the command's reader (tools/model/model.c): every plain value reached
 *     through objects only (the top level's, growth's, oom's, torch's, ...;
 *     lw_report_field_plain) is read by its row, checked against the row's
 *     types, into a slot by id (lw_model_num/str/bool, LW_FIELD_...);
 *   - `leakwatch report --format json` (tools/render/render_json.c): those
 *     members flagged LW_RF_SHOWN are written back, in the rows' order, and
 *     the answer's (answer.*) when the report holds it whole (answer.unit).
 * The library's writer (src/output/report.c, answer.c, anatomy.c,
 * torch_info.c, torch_values.c) names its keys by their rows (LW_KEY,
 * below; torch_values.c: lw_report_field_key of each value's row), and
 * test_report_schema holds all it writes to the rows. */
#ifndef LW_REPORT_FIELDS_H
#define LW_REPORT_FIELDS_H

#include <stddef.h>

/* A field's JSON types, one bit each, in the order JSON readers list them
 * (null, boolean, number, string, array, object: 1 << the command's
 * lw_json_type). */
enum {
    LW_RF_NULL = 1u << 0,
    LW_RF_BOOL = 1u << 1,
    LW_RF_NUM = 1u << 2,
    LW_RF_STR = 1u << 3,
    LW_RF_ARR = 1u << 4,
    LW_RF_OBJ = 1u << 5,
};

/* Flags: LW_RF_PYTORCH, only reports of PyTorch jobs have it (listed in the
 * PyTorch table); LW_RF_SHOWN, `leakwatch report --format json` writes it
 * back (members of the top level, of "growth" and of "oom"). */
enum { LW_RF_PYTORCH = 1u << 0, LW_RF_SHOWN = 1u << 1 };

/* LW_FIELD_<id>: a row's index. */
typedef enum {
#define LW_RF(id, path, types, flags, doc) LW_FIELD_##id,
#define LW_RF_ABBREV(name, paths)
#include "report_fields.def"
#undef LW_RF
#undef LW_RF_ABBREV
    LW_FIELD_COUNT
} lw_field;

typedef struct {
    const char *path; /* "growth.p_value", "sites[].frames[].line"; "*": any key */
    unsigned types;   /* LW_RF_NULL | ... */
    unsigned flags;   /* LW_RF_PYTORCH | LW_RF_SHOWN */
    const char *doc;  /* its meaning, one line of Markdown */
} lw_report_field;

extern const lw_report_field lw_report_fields[LW_FIELD_COUNT];

/* Abbreviations: a row "NAME.x" stands for the rows "p.x", p each of paths
 * (", " between them). */
typedef struct {
    const char *name, *paths;
} lw_report_abbrev;
extern const lw_report_abbrev lw_report_abbrevs[];
extern const size_t lw_report_nabbrevs;

/* The key the writer writes for row id (LW_FIELD_<id>): a key without its
 * row does not compile. A member of an array's elements has its own row
 * ("sites[].frames[].line": sites_frames_line), and a member of an
 * abbreviation's objects the abbreviation's (WHERE_label). report.c,
 * answer.c and anatomy.c name so every key they write; what the PyTorch
 * helper hands over (torch's diagnosis, backend and steps, PyTorch's
 * sites[], owner) comes as values by their rows' paths
 * (leakwatch_torch_values), each refused without a row that allows it, and
 * torch_values.c writes them under their rows' keys. */
#define LW_KEY(id) lw_report_field_key(LW_FIELD_##id)

/* The row of a path as a report has it, abbreviations written out:
 * "growth.p_value", "sites[].owners[].count", "sites[].where.file"
 * (WHERE_file), "torch.diagnosis.windows[].state" (WINDOW_state); a "*"
 * row is matched only by its own path, an abbreviation's row ("WHERE.file")
 * never by its own. LW_FIELD_COUNT when no row has it.
 * A scan of the table: callers that resolve often keep what it found. */
lw_field lw_report_field_find(const char *path);
/* Calls fn for each path a report has for row f: the row's own path (head
 * the whole path, rest ""), or for an abbreviation's row ("WHERE.file")
 * each of its paths (head "sites[].where", n bytes of it, rest ".file");
 * stops when fn returns nonzero. */
typedef int (*lw_report_path_fn)(const char *head, size_t n, const char *rest, void *arg);
void lw_report_field_paths(lw_field f, lw_report_path_fn fn, void *arg);

/* The member's key, the path's last part ("p_value" of "growth.p_value");
 * NULL when the path ends in "[]". */
const char *lw_report_field_key(lw_field f);
/* 1 when f is a plain member of the object at path object ("" the top
 * level, "growth"): no "[]", "*" or abbreviation in between. */
int lw_report_field_in(lw_field f, const char *object);
/* 1 when f is a plain value (number, string, boolean or null) reached
 * through objects only: no "[]", "*" or abbreviation in its path
 * ("growth.cycles.count", "torch.backend.torch_version"). */
int lw_report_field_plain(lw_field f);
/* The type's word in docs/report-fields.md: "number", "string or null", ...
 * for the bit(s) of one row; out of n bytes. Returns out. */
char *lw_report_types_text(unsigned types, char *out, size_t n);

#endif
