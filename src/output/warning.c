/* SPDX-License-Identifier: Apache-2.0 */
#include "warning.h"

#include "torch_info.h"

#include "clock.h"
#include "fmt.h"
#include "growth.h"
#include "log.h"
#include "options.h"
#include "report.h"
#include "summary.h"
#include "sites.h"

#include <pthread.h>
#include <stdio.h>

#define WARN_AGAIN_NS (30ull * 60 * 1000000000ull)

static uint64_t last_warn_ns;
static int warned;

typedef struct {
    const lw_site *leaking; /* the fastest site with a leak verdict of its own */
    const lw_site *rising;  /* else the one whose floor rose most */
    double leaking_slope, rising_by;
} top_sites;

static void consider(lw_site *s, const lw_site_track *t, void *arg) {
    top_sites *top = arg;
    if (t->growth.verdict == LW_VERDICT_LEAK) {
        if (!top->leaking || t->growth.slope > top->leaking_slope)
            top->leaking = s, top->leaking_slope = t->growth.slope;
        return;
    }
    /* No site has enough points of its own yet (fast steps): name the one
     * whose floor rose most. */
    lw_bin b[LW_SITE_BINS + 1];
    int n = lw_series_get(&t->series, b, LW_SITE_BINS + 1);
    if (n >= 2 && b[n - 1].floor - b[0].floor > top->rising_by)
        top->rising_by = b[n - 1].floor - b[0].floor, top->rising = s;
}

/* The place the latest warning named, for the Prometheus textfile (written
 * by the worker; the warning also runs at exit on another thread). */
static pthread_mutex_t place_lock = PTHREAD_MUTEX_INITIALIZER;
static char place[512];

void lw_warning_place(char *out, size_t n) {
    pthread_mutex_lock(&place_lock);
    snprintf(out, n, "%s", place);
    pthread_mutex_unlock(&place_lock);
}

static void set_place(const char *label) {
    pthread_mutex_lock(&place_lock);
    snprintf(place, sizeof place, "%s", label);
    pthread_mutex_unlock(&place_lock);
}

/* The answer of this step (g), its place remembered for Prometheus. */
static void answer_now(const lw_growth_state *g, lw_answer *a, char *label, size_t n) {
    /* The same answer as the exit summary and the report, from the state of
     * this step; it says which step, as it may be read much later. */
    lw_report_answer(a, g);
    a->computed_at = (double)g->steps;
    top_sites top = {0};
    if (g->signal_device >= 0) {
        /* PyTorch's tensor series decided: segment sites do not name tensors;
         * the line comes from PyTorch's allocation history once the diagnosis
         * window has closed. */
        double rate = 0;
        if (lw_torch_info_sites(&rate) && lw_torch_info_label(label, n)) {
            a->where = label;
            a->where_rate = rate;
            set_place(label);
        }
    } else {
        lw_growth_each_site(consider, &top);
    }
    if (top.leaking || top.rising) {
        lw_report_site_label(top.leaking ? top.leaking : top.rising, label, n);
        a->where = label;
        if (top.leaking) a->where_rate = top.leaking_slope;
        set_place(label);
    }
}

void lw_warning_leak(void) {
    /* Without the line on stderr, the place is still named for Prometheus. */
    if (!lw_opt_int(LW_OPT_WARN) && !lw_opt_str(LW_OPT_PROMETHEUS)) return;
    uint64_t now = lw_now_ns();
    if (warned && now - last_warn_ns < WARN_AGAIN_NS) return;
    warned = 1;
    last_warn_ns = now;
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    lw_answer a;
    char label[512];
    answer_now(&g, &a, label, sizeof label);
    if (!lw_opt_int(LW_OPT_WARN)) return;
    char line[1024];
    lw_log("%s", lw_answer_line(&a, line, sizeof line));
    /* Under PyTorch's signal, what keeps the named line's tensors alive. */
    char owner[512];
    if (a.where == label && g.signal_device >= 0 && lw_torch_info_owner(owner, sizeof owner))
        lw_log("  %s", owner);
}

void lw_warning_final_place(void) {
    if (!lw_opt_str(LW_OPT_PROMETHEUS)) return;
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    if (g.verdict != LW_VERDICT_LEAK) return;
    lw_answer a;
    char label[512];
    answer_now(&g, &a, label, sizeof label);
}

void lw_warning_forget(void) {
    place[0] = '\0';
    warned = 0;
    last_warn_ns = 0;
}
