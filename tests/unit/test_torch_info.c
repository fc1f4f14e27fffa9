/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/output/torch_info.c: what the PyTorch helper hands over
 * is checked to be one JSON value of the expected shape before it is written
 * into a report as is, and the sites' elements are written one by one. */
#include "../check_run.h"
#include "json_doc.h"
#include "json_write.h"
#include "torch_info.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(valid_json_only) {
    static const char *const good_arrays[] = {"[]", " [1, 2.5e3, -0.5, \"a\\u00e9\\n\"] ",
                                              "[{\"a\":[true,false,null]},{}]"};
    static const char *const bad_arrays[] = {"",
                                             "[",
                                             "[1,]",
                                             "[1 2]",
                                             "{}",
                                             "[01]",
                                             "[1.]",
                                             "[\"a]",
                                             "[\"\\x\"]",
                                             "[\"\\u12g4\"]",
                                             "[nul]",
                                             "[1] x",
                                             "[\"tab\there\"]",
                                             "[{\"a\" 1}]",
                                             "[{1:2}]"};
    for (size_t i = 0; i < sizeof good_arrays / sizeof *good_arrays; i++)
        ck_assert_msg(lw_json_valid(good_arrays[i], '['), "rejected %s", good_arrays[i]);
    for (size_t i = 0; i < sizeof bad_arrays / sizeof *bad_arrays; i++)
        ck_assert_msg(!lw_json_valid(bad_arrays[i], '['), "accepted %s", bad_arrays[i]);
    ck_assert(lw_json_valid("{\"state\":\"done\",\"n\":3}", '{'));
    ck_assert(!lw_json_valid("[]", '{'));
    ck_assert(!lw_json_valid(NULL, '{'));
    /* Nesting is bounded. */
    char deep[128];
    memset(deep, '[', 60);
    memset(deep + 60, ']', 60);
    deep[120] = '\0';
    ck_assert(!lw_json_valid(deep, '['));
}
END_TEST

START_TEST(fields_and_sites) {
    ck_assert_int_eq(lw_torch_info_set("nope", "{}", NULL), -1);
    ck_assert_int_eq(lw_torch_info_set("sites", "{}", NULL), -1);
    ck_assert_int_eq(lw_torch_info_set("diagnosis", "[1]", NULL), -1);
    ck_assert_int_eq(lw_torch_info_present(), 0);
    ck_assert_int_eq(
        lw_torch_info_set("sites", "[{\"id\":1,\"bytes_per_step\":512.0},{\"id\":2}]", "t.py:3"),
        0);
    ck_assert_int_eq(lw_torch_info_set("diagnosis", "{\"state\":\"done\"}", NULL), 0);
    double top = 0;
    ck_assert_uint_eq(lw_torch_info_sites(&top), 2);
    ck_assert(top == 512.0);
    char label[32];
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "t.py:3");
    /* Written into a report: a valid document with both sites, then the field. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_object(&w, NULL);
    lw_jw_array(&w, "sites");
    ck_assert_uint_eq(lw_torch_info_emit_sites(&w, 1), 1);
    lw_jw_end(&w);
    lw_torch_info_emit_fields(&w);
    lw_jw_end(&w);
    fclose(f);
    char err[128];
    lw_json *doc = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s in %s", err, buf);
    ck_assert_uint_eq(lw_json_len(lw_json_path(doc, "sites")), 1);
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "diagnosis.state")), "done");
    lw_json_free(doc);
    free(buf);
    lw_torch_info_forget();
    ck_assert_int_eq(lw_torch_info_present(), 0);
}
END_TEST

/* A pinned host leak's owner: written into the library site it is about
 * (its members but "site"), its sentence kept and never said; another
 * site gets nothing. */
START_TEST(host_owner_into_its_site) {
    const char *js = "{\"site\":7,\"owner\":{\"name\":\"kept\",\"kind\":\"list\","
                     "\"text\":\"kept by list `kept`\"},\"owners\":[{\"name\":\"kept\"}],"
                     "\"owner_search\":{\"stopped\":null,\"seconds\":0.5}}";
    ck_assert_int_eq(lw_torch_info_set("host_owner", "[1]", "x"), -1);
    ck_assert_int_eq(lw_torch_info_set("host_owner", js, "kept by list `kept`"), 0);
    char text[64];
    ck_assert_ptr_null(lw_torch_info_host_owner_text(6, text, sizeof text));
    ck_assert_str_eq(lw_torch_info_host_owner_text(7, text, sizeof text), "kept by list `kept`");
    /* No site from PyTorch's history, no label: the device's answer is untouched. */
    ck_assert_ptr_null(lw_torch_info_label(text, sizeof text));
    ck_assert_uint_eq(lw_torch_info_sites(NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_array(&w, NULL);
    for (uint32_t id = 6; id <= 7; id++) {
        lw_jw_object(&w, NULL);
        lw_jw_uint(&w, "id", id);
        ck_assert_int_eq(lw_torch_info_host_owner_emit(&w, id), id == 7);
        lw_jw_end(&w);
    }
    lw_jw_end(&w);
    fclose(f);
    char err[128];
    lw_json *doc = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s in %s", err, buf);
    const lw_json *other = lw_json_at(doc, 0), *it = lw_json_at(doc, 1);
    ck_assert_ptr_null(lw_json_get(other, "owner"));
    ck_assert_ptr_null(lw_json_get(it, "site"));
    ck_assert_str_eq(lw_json_string(lw_json_path(it, "owner.name")), "kept");
    ck_assert_uint_eq(lw_json_len(lw_json_get(it, "owners")), 1);
    ck_assert(lw_json_path(it, "owner_search.seconds") != NULL);
    ck_assert(lw_json_number(lw_json_get(it, "id"), 0) == 7);
    lw_json_free(doc);
    free(buf);
    lw_torch_info_forget();
    ck_assert_ptr_null(lw_torch_info_host_owner_text(7, text, sizeof text));
}
END_TEST

/* Under PyTorch's signal the report's answer names the first of the
 * helper's sites, its id and where, from the sites themselves (answer.c's
 * answer; the helper's own "answer", if told, is not what is written). */
START_TEST(answer_is_the_first_site) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_object(&w, NULL);
    ck_assert_int_eq(lw_torch_info_answer_members(&w), 0); /* no sites: nothing */
    ck_assert_int_eq(lw_torch_info_set("sites",
                                       "[{\"source\":\"pytorch_history\",\"id\":100001,"
                                       "\"where\":{\"label\":\"t.py:3 in f\",\"frame\":0}},"
                                       "{\"id\":100002,\"where\":null}]",
                                       "t.py:3 in f"),
                     0);
    ck_assert_int_eq(lw_torch_info_set("answer", "{\"site\":9,\"where\":null}", NULL), 0);
    ck_assert_int_eq(lw_torch_info_answer_members(&w), 1);
    lw_jw_end(&w);
    fclose(f);
    char err[128];
    lw_json *doc = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s in %s", err, buf);
    ck_assert(lw_json_number(lw_json_get(doc, "site"), 0) == 100001);
    ck_assert_str_eq(lw_json_string(lw_json_path(doc, "where.label")), "t.py:3 in f");
    lw_json_free(doc);
    free(buf);
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
    lw_torch_info_forget();
}
END_TEST

/* The summary's label is the library's, from the sites the helper handed
 * over: the first site's place and note, its owner's sentence on a line of
 * its own, then the other leaking sites of at least a tenth of its rate
 * (two at most), their rate as every output prints one. */
START_TEST(label_from_the_sites) {
    const char *sites =
        "[{\"id\":1,\"bytes_per_step\":1536,\"where\":{\"label\":\"t\\u00e9.py:3 in f\"},"
        "\"note\":\"in backward\",\"owner\":{\"name\":\"a\",\"text\":\"kept by list `a`\\nnow\"}},"
        "{\"id\":2,\"bytes_per_step\":512,\"where\":{\"label\":\"t.py:4 in f\"},"
        "\"note\":null,\"owner\":{\"name\":\"b\",\"text\":\"kept by list `b`\"}},"
        "{\"id\":3,\"bytes_per_step\":100,\"where\":{\"label\":\"t.py:5 in f\"}}]";
    ck_assert_int_eq(lw_torch_info_set("sites", sites, NULL), 0);
    char label[256], owner[512];
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "t\xc3\xa9.py:3 in f (in backward)");
    ck_assert_str_eq(lw_torch_info_owner(owner, sizeof owner),
                     "kept by list `a` now\nalso leaking: t.py:4 in f: +512 B/step; kept by list "
                     "`b`");
    /* No owner found for the first: the other leaks still on lines of their own. */
    const char *bare = "[{\"id\":1,\"bytes_per_step\":4096,\"where\":null,\"note\":null},"
                       "{\"id\":2,\"bytes_per_step\":2048,\"where\":{\"label\":\"u.py:9 in g\"}}]";
    ck_assert_int_eq(lw_torch_info_set("sites", bare, NULL), 0);
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "?");
    ck_assert_str_eq(lw_torch_info_owner(owner, sizeof owner),
                     "\nalso leaking: u.py:9 in g: +2.00 KiB/step");
    /* A label handed over with them is taken as is. */
    ck_assert_int_eq(lw_torch_info_set("sites", bare, "given"), 0);
    ck_assert_str_eq(lw_torch_info_label(label, sizeof label), "given");
    ck_assert_ptr_null(lw_torch_info_owner(owner, sizeof owner));
    lw_torch_info_forget();
}
END_TEST

int main(void) {
    Suite *s = suite_create("torch_info");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, valid_json_only);
    tcase_add_test(tc, fields_and_sites);
    tcase_add_test(tc, host_owner_into_its_site);
    tcase_add_test(tc, answer_is_the_first_site);
    tcase_add_test(tc, step_unit_by_names);
    tcase_add_test(tc, label_from_the_sites);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
