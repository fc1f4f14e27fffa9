/* SPDX-License-Identifier: Apache-2.0 */
/* Several reports read as one (tools/model/merge.c), as the merged text view
 * shows it (issue 41): only ranks whose verdict is a leak leak somewhere, an
 * inconclusive merge says so instead of "LEAK ... (0 of 2 reports leak)",
 * and the leaking rank's growth is set against the others'. The reports are
 * the golden inputs (tests/tools/golden/inputs), their verdicts and ranks
 * changed in memory. */
#include "merge.h"
#include "model.h"
#include "render.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUTS "tests/tools/golden/inputs/"

/* The golden input with a leak named at a Python line, as rank `rank`. */
static void load(lw_model *m, double rank) {
    char err[1024];
    ck_assert_msg(lw_model_load(m, INPUTS "leak_python.json", err, sizeof err) == 0, "%s", err);
    m->rank = rank;
}

/* The merged text view of ms. */
static char *merged_text(lw_model *ms, size_t n) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    lw_render_opts o;
    lw_render_opts_default(&o);
    lw_render_text(f, ms, n, &o);
    fclose(f);
    return text;
}

static void unflag(lw_model *m) {
    for (size_t i = 0; i < m->nsites; i++)
        m->sites[i].leak = 0;
}

/* Rank 0 undecided with a site it flags, rank 1 clean: nothing is called a
 * leak (it was "LEAK: ... +512 B/step (0 of 2 reports leak)"). */
START_TEST(inconclusive_merge_says_so) {
    lw_model ms[2];
    load(&ms[0], 0);
    load(&ms[1], 1);
    ms[0].verdict = LW_VERDICT_INCONCLUSIVE;
    ms[1].verdict = LW_VERDICT_NO_LEAK;
    unflag(&ms[1]);
    char *text = merged_text(ms, 2);
    ck_assert_msg(!strstr(text, "LEAK"), "%s", text);
    ck_assert_msg(!strncmp(text,
                           "inconclusive: no leak called in 2 reports; undecided on rank 0 "
                           "(1 of 2)\n",
                           strlen("inconclusive: no leak called in 2 reports; undecided on rank 0 "
                                  "(1 of 2)\n")),
                  "%s", text);
    char head[1200];
    ck_assert_int_eq(lw_merge_headline(ms, 2, head, sizeof head), 2);
    free(text);
    lw_model_free(&ms[0]);
    lw_model_free(&ms[1]);
}
END_TEST

/* Rank 0 leaks; rank 1, undecided, flags the same place: the place leaks on
 * rank 0 only (it was "leaks on ranks 0, 1"). */
START_TEST(only_leaking_ranks_leak_at_a_place) {
    lw_model ms[2];
    load(&ms[0], 0);
    load(&ms[1], 1);
    ms[1].verdict = LW_VERDICT_INCONCLUSIVE;
    char *text = merged_text(ms, 2);
    ck_assert_msg(strstr(text, "leaks on rank 0, +512 B/step (1 of 2 reports leak)\n"), "%s", text);
    ck_assert_msg(!strstr(text, "ranks 0, 1") && !strstr(text, "ranks 0\xe2\x80\x93"
                                                               "1"),
                  "%s", text);
    free(text);
    lw_model_free(&ms[0]);
    lw_model_free(&ms[1]);
}
END_TEST

/* One rank of eight grows: its growth against the others' is the line under
 * the answer. */
START_TEST(skew_against_the_others) {
    lw_model ms[8];
    for (int i = 0; i < 8; i++) {
        load(&ms[i], i);
        if (i == 3) continue;
        ms[i].verdict = LW_VERDICT_NO_LEAK;
        ms[i].growth.bytes_per_step = i == 5 ? 8 : 0;
        unflag(&ms[i]);
    }
    char *text = merged_text(ms, 8);
    ck_assert_msg(strstr(text, "leaks on rank 3, +512 B/step (1 of 8 reports leak)\nskew: rank 3 "
                               "grows +512 B/step; the 7 other ranks, which do not leak: median 0 "
                               "B/step, highest +8 B/step\n"),
                  "%s", text);
    /* The leaking rank first in the table. */
    char *table = strstr(text, "Verdict per rank");
    ck_assert_ptr_nonnull(table);
    ck_assert_msg(!strncmp(strchr(table, '\n') + 1, "  rank 3 ", 9), "%s", text);
    free(text);
    lw_model ms2[2] = {ms[3], ms[0]};
    ck_assert_int_eq(lw_merge_skew(ms2, 2, (char[400]){0}, 400), 1);
    for (int i = 0; i < 8; i++)
        lw_model_free(&ms[i]);
}
END_TEST

int main(void) {
    Suite *s = suite_create("merge");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, inconclusive_merge_says_so);
    tcase_add_test(tc, only_leaking_ranks_leak_at_a_place);
    tcase_add_test(tc, skew_against_the_others);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
