/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/output/torch_info.c: what the PyTorch helper hands over
 * as values, section by section, replacing the section's earlier values;
 * values outside their section, or that the library says itself, skipped;
 * the places' labels, the owners' sentences and the summary's label
 * composed by the library; the sites written into a report. */
#include "../check_run.h"
#include "json_doc.h"
#include "json_write.h"
#include "torch_info.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lw_tv_value num(const char *path, int i0, int i1, double v) {
    return (lw_tv_value){path, {i0, i1, -1}, LW_TV_NUMBER, v, NULL};
}
static lw_tv_value str(const char *path, int i0, int i1, const char *s) {
    return (lw_tv_value){path, {i0, i1, -1}, LW_TV_STRING, 0, s};
}
static lw_tv_value nul(const char *path, int i0) {
    return (lw_tv_value){path, {i0, -1, -1}, LW_TV_NULL, 0, NULL};
}
#define N(a) (sizeof(a) / sizeof(a)[0])

/* What f writes (into an object when obj), parsed; the caller frees. */
typedef void (*writer)(lw_jw *w);
static lw_json *report_of(writer f, int obj) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, mf, 1);
    if (obj)
        lw_jw_object(&w, NULL);
    else
        lw_jw_array(&w, NULL);
    f(&w);
    lw_jw_end(&w);
    ck_assert(!lw_jw_failed(&w));
    fclose(mf);
    char err[128];
    lw_json *doc = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s in %s", err, buf);
    free(buf);
    return doc;
}

static void all_sites(lw_jw *w) {
    lw_torch_info_emit_sites(w, 100);
}
static void fields(lw_jw *w) {
    lw_torch_info_emit_fields(w);
}

/* An unknown section, a host_owner without its site, a batch of which
 * nothing is taken: -1, nothing stored. Values outside their section, or
 * that the library composes itself, skipped and counted. */
START_TEST(sections_and_refusals) {
    lw_tv_value one = num("sites[].id", 0, -1, 1);
    ck_assert_int_eq(lw_torch_info_values("nope", 0, &one, 1, NULL), -1);
    ck_assert_int_eq(lw_torch_info_values(NULL, 0, &one, 1, NULL), -1);
    ck_assert_int_eq(lw_torch_info_values("host_owner", 0, &one, 1, NULL), -1);
    lw_tv_value outside[] = {num("torch.steps.marks", -1, -1, 3),
                             str("sites[].where.label", 0, -1, "the helper's"),
                             str("sites[].owner.text", 0, -1, "the helper's"),
                             str("sites[].owners[].text", 0, 0, "the helper's")};
    ck_assert_int_eq(lw_torch_info_values("sites", 0, outside, N(outside), NULL), -1);
    ck_assert_int_eq(lw_torch_info_present(), 0);
    lw_tv_value mixed[] = {num("sites[].id", 0, -1, 1), outside[0], outside[1],
                           str("sites[].where.file", 0, -1, "/src/t.py")};
    ck_assert_int_eq(lw_torch_info_values("sites", 0, mixed, N(mixed), NULL), 2);
    ck_assert_uint_eq(lw_torch_info_sites(NULL), 1);
    char label[64];
    /* The label is where.c's, from the file alone: the helper's is not it. */
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "t.py in ??");
    /* A host owner's values only under the site's owner, at position 0. */
    lw_tv_value host[] = {str("sites[].owner.name", 1, -1, "x"), num("sites[].id", 0, -1, 3),
                          str("sites[].owner.name", 0, -1, "kept")};
    ck_assert_int_eq(lw_torch_info_values("host_owner", 7, host, N(host), NULL), 2);
    lw_torch_info_forget();
    ck_assert_int_eq(lw_torch_info_present(), 0);
}
END_TEST

START_TEST(fields_and_sites) {
    lw_tv_value sites[] = {num("sites[].id", 0, -1, 1),
                           num("sites[].bytes_per_step", 0, -1, 512.0),
                           str("sites[].where.file", 0, -1, "/w/t.py"),
                           num("sites[].where.line", 0, -1, 3),
                           str("sites[].where.function", 0, -1, "f"),
                           num("sites[].id", 1, -1, 2)};
    ck_assert_int_eq(lw_torch_info_values("sites", 0, sites, N(sites), NULL), 0);
    lw_tv_value diag[] = {str("torch.diagnosis.state", -1, -1, "done"),
                          str("torch.diagnosis.windows[].state", 0, -1, "done"),
                          num("torch.diagnosis.windows[].sites", 0, -1, 2)};
    ck_assert_int_eq(lw_torch_info_values("diagnosis", 0, diag, N(diag), NULL), 0);
    double top = 0;
    ck_assert_uint_eq(lw_torch_info_sites(&top), 2);
    ck_assert(top == 512.0);
    char label[32];
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "t.py:3 in f");
    lw_json *doc = report_of(all_sites, 0);
    ck_assert_uint_eq(lw_json_len(doc), 2);
    ck_assert_str_eq(lw_json_string(lw_json_path(lw_json_at(doc, 0), "where.label")),
                     "t.py:3 in f");
    ck_assert(lw_json_number(lw_json_get(lw_json_at(doc, 1), "id"), 0) == 2);
    lw_json_free(doc);
    doc = report_of(fields, 1);
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "diagnosis.state")), "done");
    ck_assert(lw_json_number(lw_json_path(doc, "diagnosis.windows[0].sites"), 0) == 2);
    ck_assert_ptr_null(lw_json_get(doc, "backend"));
    lw_json_free(doc);
    /* A later batch replaces the section: one site, the other gone. */
    ck_assert_int_eq(lw_torch_info_values("sites", 0, &sites[5], 1, NULL), 0);
    ck_assert_uint_eq(lw_torch_info_sites(&top), 1);
    ck_assert(top == 0);
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "?");
    doc = report_of(all_sites, 0);
    ck_assert_uint_eq(lw_json_len(doc), 1);
    ck_assert_ptr_null(lw_json_get(lw_json_at(doc, 0), "where"));
    lw_json_free(doc);
    lw_torch_info_forget();
    ck_assert_int_eq(lw_torch_info_present(), 0);
}
END_TEST

/* A pinned host leak's owner: written into the library site it is about,
 * its sentence composed by the library; another site gets nothing. */
static void host_sites(lw_jw *w) {
    for (uint32_t id = 6; id <= 7; id++) {
        lw_jw_object(w, NULL);
        lw_jw_uint(w, "id", id);
        ck_assert_int_eq(lw_torch_info_host_owner_emit(w, id), id == 7);
        lw_jw_end(w);
    }
}

START_TEST(host_owner_into_its_site) {
    lw_tv_value v[] = {str("sites[].owner.kind", 0, -1, "list"),
                       str("sites[].owner.name", 0, -1, "kept"),
                       str("sites[].owner.scope", 0, -1, "global of `__main__`"),
                       str("sites[].owner.file", 0, -1, "/w/offload.py"),
                       num("sites[].owner.line", 0, -1, 12),
                       num("sites[].owner.count", 0, -1, 3),
                       num("sites[].owner.bytes", 0, -1, 3072),
                       str("sites[].owner.shape", 0, -1, "pinned"),
                       str("sites[].owner.hint", 0, -1, "reuse them"),
                       str("sites[].owners[].name", 0, 0, "kept"),
                       nul("sites[].owner_search.stopped", 0),
                       num("sites[].owner_search.seconds", 0, -1, 0.5)};
    ck_assert_int_eq(lw_torch_info_values("host_owner", 7, v, N(v), NULL), 0);
    char text[256];
    const char *said = "kept by list `kept` (global of `__main__`, offload.py:12): 3 pinned host "
                       "tensors, 3.00 KiB; reuse them";
    ck_assert_ptr_null(lw_torch_info_host_owner_text(6, text, sizeof text));
    ck_assert_str_eq(lw_torch_info_host_owner_text(7, text, sizeof text), said);
    /* No site from PyTorch's history, no label: the device's answer is untouched. */
    ck_assert_ptr_null(lw_torch_info_label(text, sizeof text));
    ck_assert_uint_eq(lw_torch_info_sites(NULL), 0);
    lw_json *doc = report_of(host_sites, 0);
    const lw_json *other = lw_json_at(doc, 0), *it = lw_json_at(doc, 1);
    ck_assert_ptr_null(lw_json_get(other, "owner"));
    ck_assert_ptr_null(lw_json_get(it, "site"));
    ck_assert_str_eq(lw_json_string(lw_json_path(it, "owner.name")), "kept");
    ck_assert_str_eq(lw_json_string(lw_json_path(it, "owner.text")), said);
    ck_assert_uint_eq(lw_json_len(lw_json_get(it, "owners")), 1);
    ck_assert(lw_json_path(it, "owner_search.seconds") != NULL);
    ck_assert(lw_json_number(lw_json_get(it, "id"), 0) == 7);
    lw_json_free(doc);
    lw_torch_info_forget();
    ck_assert_ptr_null(lw_torch_info_host_owner_text(7, text, sizeof text));
}
END_TEST

/* Under PyTorch's signal the report's answer names the first of the
 * helper's sites, its id and where. */
static void answer(lw_jw *w) {
    ck_assert_int_eq(lw_torch_info_answer_members(w), 1);
}

START_TEST(answer_is_the_first_site) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_object(&w, NULL);
    ck_assert_int_eq(lw_torch_info_answer_members(&w), 0); /* no sites: nothing */
    lw_jw_end(&w);
    fclose(f);
    free(buf);
    lw_tv_value v[] = {str("sites[].source", 0, -1, "pytorch_history"),
                       num("sites[].id", 0, -1, 100001),
                       num("sites[].where.frame", 0, -1, 0),
                       str("sites[].where.file", 0, -1, "t.py"),
                       num("sites[].where.line", 0, -1, 3),
                       str("sites[].where.function", 0, -1, "f"),
                       num("sites[].id", 1, -1, 100002),
                       nul("sites[].where", 1)};
    ck_assert_int_eq(lw_torch_info_values("sites", 0, v, N(v), NULL), 0);
    lw_json *doc = report_of(answer, 1);
    ck_assert(lw_json_number(lw_json_get(doc, "site"), 0) == 100001);
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "where.label")), "t.py:3 in f");
    ck_assert(lw_json_number(lw_json_path(doc, "where.frame"), -1) == 0);
    lw_json_free(doc);
    lw_torch_info_forget();
}
END_TEST

/* What a step is, handed over as names (lw_torch_info_step_unit_set, behind
 * leakwatch_torch_step_unit): the library writes the text; another unit is
 * refused, a module's name that is no identifier left out. */
START_TEST(step_unit_by_names) {
    char unit[32], module[128];
    ck_assert_int_eq(lw_torch_info_step_unit(unit, sizeof unit, module, sizeof module), 0);
    ck_assert_int_eq(lw_torch_info_step_unit_set("epoch", NULL), -1);
    ck_assert_int_eq(lw_torch_info_step_unit_set(NULL, NULL), -1);
    ck_assert_int_eq(lw_torch_info_step_unit_set("module_call", "nn.TinyLM"), 0);
    ck_assert_int_eq(lw_torch_info_step_unit(unit, sizeof unit, module, sizeof module), 1);
    ck_assert_str_eq(unit, "module_call");
    ck_assert_str_eq(module, "nn.TinyLM");
    ck_assert_int_eq(lw_torch_info_step_unit_set("module_call", "Tiny\"LM"), 0);
    ck_assert_int_eq(lw_torch_info_step_unit(unit, sizeof unit, module, sizeof module), 1);
    ck_assert_str_eq(module, "");
    ck_assert_int_eq(lw_torch_info_step_unit_set("optimizer_step", NULL), 0);
    ck_assert_int_eq(lw_torch_info_step_unit(unit, sizeof unit, module, sizeof module), 1);
    ck_assert_str_eq(unit, "optimizer_step");
    ck_assert_str_eq(module, "");
    ck_assert_int_eq(lw_torch_info_present(), 1);
    /* As older helpers gave it, JSON text. */
    ck_assert_int_eq(lw_torch_info_step_unit_json("{\"unit\":\"module_call\",\"module\":\"M\"}"),
                     0);
    ck_assert_int_eq(lw_torch_info_step_unit(unit, sizeof unit, module, sizeof module), 1);
    ck_assert_str_eq(unit, "module_call");
    ck_assert_str_eq(module, "M");
    ck_assert_int_eq(lw_torch_info_step_unit_json("{\"unit\":\"epoch\"}"), -1);
    ck_assert_int_eq(lw_torch_info_step_unit_json("[1]"), -1);
    lw_torch_info_forget();
}
END_TEST

/* The summary's label is the library's, from the sites' values: the first
 * site's place and note, its owner's sentence on a line of its own, then
 * the other leaking sites of at least a tenth of its rate (two at most),
 * their rate as every output prints one, and their named owner's sentence. */
START_TEST(label_from_the_sites) {
    lw_tv_value v[] = {
        num("sites[].id", 0, -1, 1),
        num("sites[].bytes_per_step", 0, -1, 1536),
        str("sites[].where.file", 0, -1, "/w/t\xc3\xa9.py"),
        num("sites[].where.line", 0, -1, 3),
        str("sites[].where.function", 0, -1, "f"),
        str("sites[].note", 0, -1, "in backward"),
        str("sites[].owner.kind", 0, -1, "list"),
        str("sites[].owner.name", 0, -1, "a"),
        str("sites[].owner.scope", 0, -1, "local of `f`"),
        num("sites[].owner.count", 0, -1, 1),
        num("sites[].owner.bytes", 0, -1, 512),
        str("sites[].owner.shape", 0, -1, "cpu"),
        str("sites[].owner.hint", 0, -1, "keep .cpu()\nnow"),
        num("sites[].id", 1, -1, 2),
        num("sites[].bytes_per_step", 1, -1, 512),
        str("sites[].where.file", 1, -1, "t.py"),
        num("sites[].where.line", 1, -1, 4),
        str("sites[].where.function", 1, -1, "f"),
        nul("sites[].note", 1),
        str("sites[].owner.kind", 1, -1, "list"),
        str("sites[].owner.name", 1, -1, "b"),
        str("sites[].owner.scope", 1, -1, "local of `f`"),
        num("sites[].owner.count", 1, -1, 2),
        num("sites[].owner.bytes", 1, -1, 2048),
        str("sites[].owner.shape", 1, -1, "cpu"),
        str("sites[].owner.hint", 1, -1, "drop it"),
        num("sites[].id", 2, -1, 3),
        num("sites[].bytes_per_step", 2, -1, 100),
        str("sites[].where.file", 2, -1, "t.py"),
    };
    ck_assert_int_eq(lw_torch_info_values("sites", 0, v, N(v), NULL), 0);
    char label[256], owner[512];
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "t\xc3\xa9.py:3 in f (in backward)");
    ck_assert_str_eq(lw_torch_info_owner(owner, sizeof owner),
                     "kept by list `a` (local of `f`): 1 tensor, 512 B; keep .cpu() now\n"
                     "also leaking: t.py:4 in f: +512 B/step; kept by list `b` (local of `f`): 2 "
                     "tensors, 2.00 KiB; drop it");
    /* No owner found for the first (no name: not said after the others),
     * no where: the other leaks still on lines of their own. */
    lw_tv_value bare[] = {num("sites[].bytes_per_step", 0, -1, 4096),
                          nul("sites[].where", 0),
                          num("sites[].bytes_per_step", 1, -1, 2048),
                          str("sites[].where.file", 1, -1, "u.py"),
                          num("sites[].where.line", 1, -1, 9),
                          str("sites[].where.function", 1, -1, "g"),
                          nul("sites[].owner.name", 1)};
    ck_assert_int_eq(lw_torch_info_values("sites", 0, bare, N(bare), NULL), 0);
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "?");
    ck_assert_str_eq(lw_torch_info_owner(owner, sizeof owner),
                     "\nalso leaking: u.py:9 in g: +2.00 KiB/step");
    lw_torch_info_forget();
}
END_TEST

/* The batch packed, as the Python helper hands it: the distinct paths once,
 * 6 ints per value, the texts end to end; a path number or a text outside
 * them skips that value. */
START_TEST(packed_batch) {
    static const char paths[] = "torch.backend.mode\0torch.backend.fell_back\0"
                                "torch.backend.torch_version\0";
    const int cells[] = {
        0, -1, -1, -1, LW_TV_STRING, 8,                                  /* "segments" */
        1, -1, -1, -1, LW_TV_BOOL,   -1, 2, -1, -1, -1, LW_TV_STRING, 5, /* "2.6.0" */
        3, -1, -1, -1, LW_TV_NUMBER, -1,                                 /* no path 3 */
        2, -1, -1, -1, LW_TV_STRING, 99,                                 /* past the texts */
    };
    const double nums[] = {0, 1, 0, 7, 0};
    const char *texts = "segments2.6.0";
    ck_assert_int_eq(lw_torch_info_values_packed("backend", 0, paths, sizeof paths, 3, cells, nums,
                                                 texts, strlen(texts), 5, NULL),
                     2);
    lw_json *doc = report_of(fields, 1);
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "backend.mode")), "segments");
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "backend.torch_version")), "2.6.0");
    ck_assert(lw_json_bool(lw_json_path(doc, "backend.fell_back"), 0) == 1);
    lw_json_free(doc);
    /* Paths that do not end within their bytes: nothing. */
    ck_assert_int_eq(lw_torch_info_values_packed("backend", 0, paths, 5, 1, cells, nums, texts,
                                                 strlen(texts), 1, NULL),
                     -1);
    ck_assert_int_eq(lw_torch_info_values_packed("backend", 0, paths, sizeof paths, 4, cells, nums,
                                                 texts, strlen(texts), 1, NULL),
                     -1);
    lw_torch_info_forget();
}
END_TEST

int main(void) {
    Suite *s = suite_create("torch_info");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, sections_and_refusals);
    tcase_add_test(tc, fields_and_sites);
    tcase_add_test(tc, host_owner_into_its_site);
    tcase_add_test(tc, answer_is_the_first_site);
    tcase_add_test(tc, step_unit_by_names);
    tcase_add_test(tc, label_from_the_sites);
    tcase_add_test(tc, packed_batch);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
