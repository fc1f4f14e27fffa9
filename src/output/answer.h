/* SPDX-License-Identifier: Apache-2.0 */
/* The run's answer, chosen once: verdict, the site to name and its place to
 * look, rate with its interval, onset, time to out-of-memory, free memory and
 * steps, all from one snapshot of the detector's state. Every output renders
 * it: the live warning, the report's "answer", the exit summary (from the
 * report it wrote), Prometheus. */
#ifndef LW_ANSWER_H
#define LW_ANSWER_H

#include "fmt.h"
#include "growth.h"
#include "json_write.h"
#include "site_rank.h"

struct lw_site;

typedef struct {
    lw_growth_state g;          /* the snapshot everything here comes from */
    lw_answer a;                /* a.where points into where (lw_run_answer_copy) */
    const struct lw_site *site; /* the site named; NULL: none, or PyTorch's history */
    /* The site the report's "answer" lists: the site named, else the
     * report's first (its line then names no place: says_where false). */
    const struct lw_site *entry;
    int torch; /* named from PyTorch's allocation history */
    char where[512];
    char owner[1024]; /* under PyTorch: what keeps the named tensors alive; "" */
    /* An out-of-memory's post-mortem (anatomy.h): a.oom_* point here. */
    char oom_cause[32], oom_evidence[400], oom_remedy[400];
} lw_run_answer;

/* What one step of g is (the report's growth.step_unit): "interval" (time
 * intervals), "module_call" (a call of the job's outermost nn.Module, marked
 * by the PyTorch helper where no optimizer marks steps), "optimizer_step"
 * (the helper's optimizer hook), "leakwatch_step" (the job's own marks).
 * module, if not NULL, gets the module's class name ("" when none). */
const char *lw_answer_step_unit(const lw_growth_state *g, char *module, size_t mn);
/* The word for one step in every line: "interval", "call" or "step". */
const char *lw_answer_unit_word(const lw_growth_state *g);

/* The numbers of the answer from g, without a place to look. */
void lw_report_answer(lw_answer *a, const lw_growth_state *g);

/* The one rule for which site to name, for the state g:
 *  - a leak under PyTorch's signal: the first site of its allocation history
 *    (segment sites do not name tensors), with its owner sentence;
 *  - a leak: the site the report puts first (site_rank.h: the fastest
 *    leaking site; ties by live bytes, bytes allocated, site id); when no
 *    site has a leak verdict of its own yet (fast steps), the one whose floor
 *    rose most (ties: lowest id);
 *  - no leak: the site holding most live memory (the report's first site);
 *    none on a run with nothing live. */
void lw_run_answer_from(lw_run_answer *r, const lw_growth_state *g);

/* The same from a list of the sites ranked (site_rank.h): the report's own,
 * so that the answer names the site the report puts first and says what
 * its entry says (its live bytes as counted for the order). A site the
 * line would name for what it holds, holding nothing by then, is not named
 * (a.where NULL), though the report's answer still lists it (entry). */
void lw_run_answer_ranked(lw_run_answer *r, const lw_growth_state *g, const lw_ranked_site *all,
                          size_t n);

/* Writes the answer's line as members of w's current object (the report's
 * "answer"; docs/report-fields.md): its unit, whether it names the place,
 * the named site's rate or live bytes, the growth with its interval, onset,
 * time to out-of-memory, memory free, steps, and for an answer not decided
 * its reason and the steps still needed; for a no leak whether the floor
 * rose once. The command renders these and chooses nothing again. */
void lw_run_answer_emit(lw_jw *w, const lw_run_answer *r);

/* The same from the state now. */
void lw_run_answer_now(lw_run_answer *r);

/* *dst = *src with its where pointer into dst. */
void lw_run_answer_copy(lw_run_answer *dst, const lw_run_answer *src);

/* The answer of the latest final report written (report.c keeps it), so that
 * the exit summary says what the report says. 1 when there is one. */
void lw_run_answer_keep(const lw_run_answer *r);
int lw_run_answer_kept(lw_run_answer *r);
void lw_run_answer_forget(void);

#endif
