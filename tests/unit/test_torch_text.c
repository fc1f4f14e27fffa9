/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/output/torch_text.c: the owner's sentence and a
 * place's label, composed by the library from the values the PyTorch helper
 * handed over, word for word as the helper said them before (its
 * _describe, _searched and _unnamed_holder, which tests/real check). */
#include "../check_run.h"
#include "torch_text.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

static lw_tv *t;

static void num(const char *path, double v) {
    lw_tv_value x = {path, {0, -1, -1}, LW_TV_NUMBER, v, NULL};
    ck_assert_msg(lw_tv_add(t, &x) == 0, "%s", path);
}
static void str(const char *path, const char *s) {
    lw_tv_value x = {path, {0, -1, -1}, LW_TV_STRING, 0, s};
    ck_assert_msg(lw_tv_add(t, &x) == 0, "%s", path);
}

static lw_tv_node *site(void) {
    return lw_tv_first(lw_tv_member(lw_tv_root(t), LW_FIELD_sites));
}

static const char *text_of(char *out, size_t n) {
    lw_tv_node *s = site();
    return lw_owner_text(lw_tv_member(s, LW_FIELD_sites_owner),
                         lw_tv_member(s, LW_FIELD_sites_owner_search), out, n);
}

static void owner(const char *kind, const char *shape) {
    str("sites[].owner.kind", kind);
    str("sites[].owner.name", "self.history['loss']");
    str("sites[].owner.scope", "local of `Trainer.fit`");
    str("sites[].owner.file", "/w/shapes.py");
    num("sites[].owner.line", 41);
    num("sites[].owner.count", 1234);
    num("sites[].owner.bytes", 3 * 1048576);
    str("sites[].owner.shape", shape);
    str("sites[].owner.hint", "the hint");
}

START_TEST(named_owners) {
    char out[1024];
    t = lw_tv_new();
    owner("list", "cpu");
    ck_assert_str_eq(text_of(out, sizeof out),
                     "kept by list `self.history['loss']` (local of `Trainer.fit`, shapes.py:41): "
                     "1,234 tensors, 3.00 MiB; the hint");
    /* The saved tensors of graphs, with the forward passes when known. */
    str("sites[].owner.shape", "no_grad");
    num("sites[].owner.graph_nodes", 5000);
    num("sites[].owner.passes", 32);
    ck_assert_str_eq(text_of(out, sizeof out),
                     "kept by list `self.history['loss']` (local of `Trainer.fit`, shapes.py:41): "
                     "1,234 tensors, 3.00 MiB in the saved tensors of autograd graphs of 5,000 "
                     "nodes (32 forward passes) (grad mode on, no backward); the hint");
    lw_tv_value none = {"sites[].owner.passes", {0, -1, -1}, LW_TV_NULL, 0, NULL};
    ck_assert_int_eq(lw_tv_add(t, &none), 0);
    str("sites[].owner.shape", "retain_graph");
    ck_assert(strstr(text_of(out, sizeof out),
                     "graphs of 5,000 nodes (backward ran with retain_graph=True); the hint"));
    /* One pinned host tensor, no line: no place after the scope. */
    lw_tv_free(t);
    t = lw_tv_new();
    owner("dict", "pinned");
    num("sites[].owner.count", 1);
    lw_tv_value noline = {"sites[].owner.line", {0, -1, -1}, LW_TV_NULL, 0, NULL};
    ck_assert_int_eq(lw_tv_add(t, &noline), 0);
    ck_assert_str_eq(text_of(out, sizeof out),
                     "kept by dict `self.history['loss']` (local of `Trainer.fit`): 1 pinned host "
                     "tensor, 3.00 MiB; the hint");
    /* An accumulator whose graph grows. */
    lw_tv_free(t);
    t = lw_tv_new();
    owner("tensor", "graph_item");
    num("sites[].owner.graph_nodes", 12000);
    num("sites[].owner.graph_top_count", 4000);
    str("sites[].owner.graph_top", "AddBackward0");
    num("sites[].owner.passes", 1000);
    ck_assert_str_eq(text_of(out, sizeof out),
                     "`self.history['loss']` (local of `Trainer.fit`, shapes.py:41) is a tensor "
                     "holding an autograd graph of 12,000 nodes (4,000 AddBackward0, 1,000 forward "
                     "passes): the hint");
    /* Cut at the buffer, terminated. */
    ck_assert_uint_eq(
        strlen(lw_owner_text(lw_tv_member(site(), LW_FIELD_sites_owner), NULL, out, 10)), 9);
    lw_tv_free(t);
}
END_TEST

static void searched(void) {
    num("sites[].owner_search.roots", 1500);
    num("sites[].owner_search.frames", 3);
    num("sites[].owner_search.modules", 2);
    num("sites[].owner_search.objects", 250000);
    num("sites[].owner_search.graph_nodes", 0);
}

START_TEST(owner_not_found) {
    char out[1024];
    const char *what =
        "; searched 1,500 names (the locals of 3 of your functions on the stack, the "
        "globals of 2 of your modules), 250,000 objects below them (attributes, "
        "containers, closures, default arguments) and 0 autograd graph nodes";
    char want[1024];
    t = lw_tv_new();
    lw_tv_value null_name = {"sites[].owner.name", {0, -1, -1}, LW_TV_NULL, 0, NULL};
    ck_assert_int_eq(lw_tv_add(t, &null_name), 0);
    searched();
    snprintf(want, sizeof want, "owner not found: none of them leads to these blocks%s", what);
    ck_assert_str_eq(text_of(out, sizeof out), want);
    /* Tensors in the blocks that no name leads to, and their container. */
    num("sites[].owner.unnamed_tensors", 1);
    snprintf(want, sizeof want,
             "owner not found: 1 tensor in its blocks that no local of your frames or global of "
             "your modules leads to%s",
             what);
    ck_assert_str_eq(text_of(out, sizeof out), want);
    num("sites[].owner.unnamed_tensors", 96);
    str("sites[].owner.unnamed_holder", "list");
    num("sites[].owner.unnamed_held", 96);
    num("sites[].owner.unnamed_elements", 1200);
    str("sites[].owner_search.stopped", "time");
    snprintf(want, sizeof want,
             "owner not found: 96 tensors in its blocks, 96 of them held by a list of 1,200 "
             "elements that no local of your frames or global of your modules leads to%s (search "
             "stopped: time budget)",
             what);
    ck_assert_str_eq(text_of(out, sizeof out), want);
    str("sites[].owner_search.stopped", "error: KeyError: 'x'");
    ck_assert(strstr(text_of(out, sizeof out), " (search stopped: error: KeyError: 'x')"));
    lw_tv_free(t);
}
END_TEST

/* A place's label: where.c's rule, from the file, line and function. */
START_TEST(where_labels) {
    char out[256];
    t = lw_tv_new();
    str("sites[].where.file", "/home/u/train.py");
    num("sites[].where.line", 27);
    str("sites[].where.function", "train");
    lw_tv_node *where = lw_tv_member(site(), LW_FIELD_sites_where);
    ck_assert_str_eq(lw_owner_where_label(where, out, sizeof out), "train.py:27 in train");
    lw_tv_value noline = {"sites[].where.line", {0, -1, -1}, LW_TV_NULL, 0, NULL};
    ck_assert_int_eq(lw_tv_add(t, &noline), 0);
    ck_assert_str_eq(lw_owner_where_label(where, out, sizeof out), "train.py in train");
    lw_tv_free(t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("torch_text");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, named_owners);
    tcase_add_test(tc, owner_not_found);
    tcase_add_test(tc, where_labels);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
