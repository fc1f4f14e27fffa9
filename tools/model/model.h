/* SPDX-License-Identifier: Apache-2.0 */
/* A leakwatch report read into plain C values, checked field by field, so
 * that the renderers (text, JSON, HTML, top) never touch raw JSON and a
 * hostile or older file can only ever produce "unknown" values and warnings.
 * Numbers are doubles; an absent, null, mistyped or non-finite value is NAN. */
#ifndef LW_MODEL_H
#define LW_MODEL_H

#include "fmt.h"
#include "json_doc.h"
#include "memory_kind.h"
#include "report_fields.h"
#include "verdict.h"

#include <stddef.h>

/* The kinds of memory (totals.by_kind): lw_kind_name(k) for k < LW_KIND_COUNT
 * (memory_kind.h, shared with the library). */

typedef struct {
    double alloc_count, free_count, failed_alloc_count, live_bytes, live_count, peak_live_bytes;
} lw_m_counts;

typedef struct {
    const char *kind, *function, *file, *module, *address, *offset; /* NULL when absent */
    double line;
} lw_m_frame;

typedef struct {
    double id, live_bytes, live_count, alloc_count, alloc_bytes, free_count, failed_alloc_count;
    double bytes_per_step, rank;
    int leak, pooled;        /* 0/1; -1 unknown */
    double where_frame;      /* index into frames of the place to look (NAN: not given) */
    const char *where_label; /* as the report names it */
    double where_distinct;   /* index into frames of the frame that tells the site apart
                                from others sharing its place (NAN: none) */
    const char *owner_text;  /* what keeps it alive (PyTorch's sites: owner.text), or NULL */
    int all_allocations;     /* 1: the one site of a run without stacks (tracker.stacks false) */
    lw_m_frame *frames;
    size_t nframes;
    double *series_x, *series_floor;
    size_t nseries;
} lw_m_site;

typedef struct {
    double size, device, result, step, time_s, site;
    const char *kind;
} lw_m_failure;

/* The plain fields of the report's repeated objects, each listed once: the
 * model reads them by these lists and `leakwatch report --format json`
 * writes them back in this order, so that a field added to a list is both
 * read and written. A field's value is at offset in its struct: a double
 * (NUM: NAN when unknown), a string (STR: NULL) or an int (BOOL: 0/1, -1
 * unknown). */
typedef enum { LW_MF_NUM, LW_MF_STR, LW_MF_BOOL } lw_m_field_type;
typedef struct {
    const char *key;
    lw_m_field_type type;
    size_t offset;
} lw_m_field;
typedef struct {
    const lw_m_field *f;
    size_t n;
} lw_m_fields;
/* lw_m_counts; lw_m_frame; lw_m_site's numbers and flags (not its where,
 * owner, frames, series); lw_m_failure. */
extern const lw_m_fields lw_m_counts_fields, lw_m_frame_fields, lw_m_site_fields,
    lw_m_failure_fields;

typedef struct {
    double device;
    lw_m_counts c, by_kind[LW_KIND_COUNT];
} lw_m_device;

typedef struct {
    double bytes_per_step, bytes_per_second, steps, p_value, ci_lo, ci_hi, onset_step;
    double oom_eta_seconds, oom_eta_steps, device_free_bytes, device_total_bytes;
    const char *step_source;
    double onset_lo, onset_hi; /* growth.onset_range; NAN when absent (older reports) */
    const char *step_unit;     /* growth.step_unit; NULL in older reports */
    /* growth.memory_kind ("device", "pinned_host"; NULL in older reports) and
     * the host's memory a pinned host leak runs out of (NAN: not given). */
    const char *memory_kind;
    double host_available_bytes, host_total_bytes;
} lw_m_growth;

/* The report's "anatomy" (issue 40): bytes by role per device, at the
 * report's moment and at the run's peak; NAN where unknown. */
enum { LW_ROLES = 7 };
extern const char *const lw_model_role_names[LW_ROLES];  /* weights, ..., leak (the JSON keys) */
extern const char *const lw_model_role_labels[LW_ROLES]; /* "weights", ..., "outside PyTorch" */
typedef struct {
    double device, total_bytes, at_step;
    double now[LW_ROLES], peak[LW_ROLES];
} lw_m_anatomy;

/* The report's "oom": the post-mortem of an out-of-memory (NULL strings and
 * have 0 when none). */
typedef struct {
    int have;
    const char *cause, *evidence, *remedy, *source;
    double device, step, time_s, count, request_bytes, device_free_bytes, device_total_bytes;
    double allocated_bytes, reserved_bytes, leak_bytes;
} lw_m_oom;

/* A plain value of the report reached through objects only (the top
 * level's, growth's, oom's, torch's, ...: lw_report_field_plain), read by its
 * row of the report's table of fields (report_fields.def): a number (NAN when
 * absent, null, mistyped or out of range), a string (NULL) or a boolean
 * (0/1, -1 unknown), as the row's type says. */
typedef struct {
    double num;
    const char *str;
    int b;
} lw_m_value;

typedef struct {
    char *path; /* as given */
    lw_json *doc;
    /* Every such plain value the table lists, by its row (LW_FIELD_...):
     * lw_model_num/str/bool. The named members below are copies of some,
     * for the renderers. */
    lw_m_value field[LW_FIELD_COUNT];
    const char *tool, *version, *command, *host, *reason, *verdict_text;
    lw_verdict verdict;
    double pid, written_at, duration_s, rank;
    double local_rank, world_size, device; /* NAN when the report does not say */
    const char *report_path;               /* where the process writes its final report */
    double answer_site;                    /* id of the site the answer names */
    /* The answer's line as the library built it (answer.c; the report's
     * "answer" since answer.unit): answer_whole 0 in older reports, which
     * the command answers from the rest of the report as the library did.
     * answer_says_where: the line names the site's place; answer_label: its
     * label as the report wrote it (for a site the report does not list). */
    int answer_whole, answer_says_where;
    lw_answer answer;
    const char *answer_label;
    lw_m_counts totals, by_kind[LW_KIND_COUNT];
    double unknown_free_count, mapped_bytes;
    /* totals.imported: other processes' memory opened here (in none of the
     * counters above); have_imported 0 in reports older than the field. */
    lw_m_counts imported;
    double imported_mapped_bytes;
    int have_totals, have_imported;
    lw_m_device *devices;
    size_t ndevices;
    lw_m_growth growth;
    double sites_total, sites_reported;
    lw_m_site *sites;
    size_t nsites;
    lw_m_failure *failures;
    size_t nfailures;
    double *sx, *st, *sfloor, *speak; /* the live-memory series */
    size_t nseries;
    const lw_json *tracker;                    /* passed through as is */
    const char *anatomy_method, *anatomy_note; /* NULL: no anatomy (older reports) */
    lw_m_anatomy *anatomy;
    size_t nanatomy;
    lw_m_oom oom;
    char **warnings;
    size_t nwarnings;
} lw_model;

/* Reads and checks a report. Returns 0, or -1 with one line in err that names
 * the file, the problem and what to do. Warnings (mistyped fields, ...) are
 * kept in m->warnings. */
int lw_model_load(lw_model *m, const char *path, char *err, size_t errlen);
/* Same, from text in memory (name is used in messages). */
int lw_model_load_text(lw_model *m, const char *name, const char *text, size_t len, char *err,
                       size_t errlen);
/* Same, for the report process pid answered on its control socket (named
 * "the answer of process PID"); on failure the line goes to stderr and m is
 * freed. */
int lw_model_load_answer(lw_model *m, long pid, const char *text, size_t len);
void lw_model_free(lw_model *m);

/* A plain value by its row (lw_report_field_plain: "growth.reason",
 * "torch.backend.torch_version", "growth.cycles.count"): adding a row to
 * report_fields.def makes it readable here, checked against the row's type,
 * with no change to the reader. Unknown (NAN, NULL, -1) when the report does
 * not have it or f is no such value. */
double lw_model_num(const lw_model *m, lw_field f);
const char *lw_model_str(const lw_model *m, lw_field f);
int lw_model_bool(const lw_model *m, lw_field f);

/* Prints each warning on stderr, at most max of them, then a count. */
void lw_model_print_warnings(const lw_model *m, size_t max);

/* Sites ordered most worrying first: the report's own order (site_rank.c's,
 * the order the library wrote them in); for a report older than answer.unit,
 * flagged leaks, then growth per step, then live bytes. Fills
 * order[0..nsites). */
void lw_model_rank_sites(const lw_model *m, size_t *order);

/* Median intercept of the floor series (since the onset) for the report's slope
 * (growth.bytes_per_step), so the trend line goes through the data. NAN if
 * there is no series or no slope. */
double lw_model_trend_intercept(const lw_model *m);

/* What counts as the user's own code beyond the default (where.h's syntax):
 * --user-code, else LEAKWATCH_USER_CODE. With one set, the place to look is
 * recomputed from the frames instead of taken from the report. */
void lw_model_set_user_code(const char *user_code);
const char *lw_model_user_code(void);

/* The place to look of a site: the index of its frame (-1: none) and its
 * label in out ("train.py:27 in train"; "site N" without frames). */
int lw_model_where(const lw_m_site *s, char *out, size_t n);

/* The frame that tells the site apart from others sharing its place to look
 * (frame k, lw_model_where's answer): the caller of a shared wrapper, which
 * the label names first ("train.py:30 in stash (via device_alloc, ...)");
 * -1 when the label names frame k alone. */
int lw_model_where_distinct(const lw_m_site *s, int k);

/* The site the answer names: the report's "answer"; NULL when it names
 * none of the report's sites. A report older than answer.unit without an
 * answer: the most worrying site (NULL when the report has none). */
const lw_m_site *lw_model_top_site(const lw_model *m);

/* The report's answer as every output states it (fmt.h): as the library
 * built it (answer.c), the command choosing nothing; for a report older than
 * answer.unit, from its other sections by the rule answer.c followed then.
 * where is the buffer for the place to look. */
void lw_model_answer(const lw_model *m, lw_answer *a, char *where, size_t wn);

/* One device's anatomy in one line: "weights 4.00 MiB, gradients ..., of
 * 1.00 GiB" (roles unknown are left out); peak: the run's peak. Returns out. */
char *lw_model_anatomy_line(const lw_m_anatomy *a, int peak, char *out, size_t n);
/* The same as a bar of width cells, one letter per role (W weights, G
 * gradients, O optimizer state, A activations, c cached free, X outside
 * PyTorch, L leak, '.' free or unknown). Returns out. */
char *lw_model_anatomy_bar(const lw_m_anatomy *a, int width, char *out, size_t n);

/* A site with nothing live and no growth: shown in one line, no stack. */
int lw_site_is_quiet(const lw_m_site *s);

/* "rank 3", or the file's base name when the report has no rank. */
void lw_model_name(const lw_model *m, char *out, size_t n);

/* A short label for a frame: "train.py:42 in step" or "alloc_via (libfoo.so)". */
void lw_frame_label(const lw_m_frame *f, char *out, size_t n);

#endif
