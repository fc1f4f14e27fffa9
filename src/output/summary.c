/* SPDX-License-Identifier: Apache-2.0 */
/* The few lines on stderr at exit: the answer line (fmt.h), what an
 * undecided run still needs, the counts, and where the report is. */
#include "summary.h"

#include "answer.h"

#include "growth.h"
#include "imports.h"
#include "log.h"
#include "sites.h"
#include "totals.h"
#include "warning.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Growth released at each cycle's end, under a clean verdict: what it is,
 * and how high it peaks (the memory the job needs at a cycle's end). */
static void cycles_line(const lw_growth_state *g) {
    lw_cycles_summary c;
    if (g->verdict != LW_VERDICT_NO_LEAK || !g->cycles_signal || !lw_cycles_get(&g->cycles_raw, &c))
        return;
    const char *unit = strcmp(g->step_source, "time") ? "step" : "interval";
    char rise[32], peak[32], floor[32];
    lw_fmt_bytes(c.rise_per_step, rise, sizeof rise);
    lw_fmt_bytes(c.peak, peak, sizeof peak);
    lw_fmt_bytes(c.floor, floor, sizeof floor);
    lw_log("no leak across cycles: %s grows by +%s/%s within each cycle of ~%.0f %ss and is "
           "released at its end (%llu cycles); it peaks at %s above the floor (%s)",
           strcmp(g->cycles_signal, "torch_allocated") ? "memory" : "tensor memory", rise, unit,
           c.period, unit, (unsigned long long)c.count, peak, floor);
}

/* What keeps the leak alive, under the line: one line each (the first
 * site's owner, then the other leaking sites, biggest first). */
static void owner_lines(const char *kept) {
    while (*kept) {
        const char *nl = strchr(kept, '\n');
        int len = nl ? (int)(nl - kept) : (int)strlen(kept);
        if (len > 0) lw_log("  %.*s", len, kept);
        if (!nl) break;
        kept = nl + 1;
    }
}

/* A LEAK said live and withdrawn later: the exit says it took it back. */
static void withdrawn_line(void) {
    lw_withdrawn_alarm a;
    if (!lw_warning_withdrawn(&a)) return;
    char s1[32], s2[32];
    lw_log("the LEAK said at %s %s while the job ran was withdrawn at %s %s (%s)%s", a.unit,
           lw_fmt_count((double)a.said_at, s1, sizeof s1), a.unit,
           lw_fmt_count((double)a.withdrawn_at, s2, sizeof s2), a.reason,
           a.count > 1 ? "; and earlier ones" : "");
}

/* A rate as small as a run can call (a fraction of a byte per step on a
 * long flat floor): never "0 B". */
static void small_bytes(double b, char *out, size_t n) {
    if (isfinite(b) && b > 0 && b < 10)
        snprintf(out, n, "%.2g B", b);
    else
        lw_fmt_bytes(b, out, n);
}

/* The floor's noise is the detector's least (one allocation granule, 256 B
 * per bin): nothing was measured, so no noise figure is said. */
static int flat_floor(const lw_growth_state *g) {
    return isfinite(g->last.noise_bin) && g->last.noise_bin <= 256.0 + 1e-6;
}

void lw_report_summary(const lw_run_answer *r, const char *path) {
    if (lw_log_quiet) return;
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    char live[32], peak[32];
    lw_fmt_bytes((double)c.live_bytes, live, sizeof live);
    lw_fmt_bytes((double)c.peak_live_bytes, peak, sizeof peak);
    /* The answer of the report written at this exit (answer.c): the same
     * site, rate, free memory and steps. */
    const lw_growth_state g = r->g;
    const lw_answer a = r->a;
    const char *kept = r->owner[0] ? r->owner : NULL;
    char line[1024];
    lw_log("%s", lw_answer_line(&a, line, sizeof line));
    if (kept) owner_lines(kept);
    cycles_line(&g);
    withdrawn_line();
    /* What an undecided run still needs, and what a clean one could have
     * seen (only once the detector has evaluated something). */
    const char *unit = lw_answer_unit_word(&g);
    /* Only a leak needs saying so: a clean job that frees its memory at
     * exit is the rule. */
    if (g.released_bytes > 0 && g.verdict == LW_VERDICT_LEAK) {
        char rel[32];
        lw_fmt_bytes((double)g.released_bytes, rel, sizeof rel);
        lw_log("%s released at exit (%s): the verdict is about the run before it", rel,
               strcmp(g.step_source, "time") ? "after the last step mark"
                                             : "in the last intervals");
    }
    char noise[32], minr[32];
    lw_fmt_bytes(g.last.noise_step, noise, sizeof noise);
    small_bytes(g.last.min_rate, minr, sizeof minr);
    if (!g.evaluations || !isfinite(g.last.noise_step)) {
    } else if (g.verdict == LW_VERDICT_INCONCLUSIVE && g.last.more_steps >= 1 &&
               isfinite(g.last.more_steps))
        lw_log("%s; about %.0f more %ss to decide at the current rate (floor noise %s per %s)",
               g.reason, ceil(g.last.more_steps), unit, noise, unit);
    else if (g.verdict == LW_VERDICT_NO_LEAK && isfinite(g.last.min_rate) && flat_floor(&g))
        lw_log("%s; this run could call a leak of %s per %s or more (the floor is flat: no "
               "noise beyond one allocation granule)",
               g.reason, minr, unit);
    else if (g.verdict == LW_VERDICT_NO_LEAK && isfinite(g.last.min_rate))
        lw_log("%s; this run could call a leak of %s per %s or more (floor noise %s per %s)",
               g.reason, minr, unit, noise, unit);
    char n1[32], n2[32], n3[32], n4[32], n5[32];
    lw_log("%s allocation%s live (%s, peak %s) in %s call site%s; %s allocated, %s freed, %s "
           "failed",
           lw_fmt_count((double)c.live_count, n1, sizeof n1), c.live_count == 1 ? "" : "s", live,
           peak, lw_fmt_count((double)lw_sites_count(), n2, sizeof n2),
           lw_sites_count() == 1 ? "" : "s", lw_fmt_count((double)c.alloc_count, n3, sizeof n3),
           lw_fmt_count((double)c.free_count, n4, sizeof n4),
           lw_fmt_count((double)c.failed_count, n5, sizeof n5));
    lw_counts imp = lw_imports_get();
    if (imp.alloc_count > 0) {
        char ib[32];
        lw_fmt_bytes((double)imp.live_bytes, ib, sizeof ib);
        lw_log("imported from other processes (not counted above): %s open (%s), %s opened",
               lw_fmt_count((double)imp.live_count, n1, sizeof n1), ib,
               lw_fmt_count((double)imp.alloc_count, n2, sizeof n2));
    }
    if (path && path[0]) {
        lw_log("report: %s", path);
        lw_log("see it: leakwatch report %s   (as a web page: leakwatch report --format html -o "
               "leakwatch-report.html %s)",
               path, path);
    }
}
