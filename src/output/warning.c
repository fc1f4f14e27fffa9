#include "warning.h"

#include "clock.h"
#include "fmt.h"
#include "growth.h"
#include "log.h"
#include "options.h"
#include "report.h"
#include "sites.h"

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

void lw_warning_leak(void) {
    if (!lw_opt_int(LW_OPT_WARN)) return;
    uint64_t now = lw_now_ns();
    if (warned && now - last_warn_ns < WARN_AGAIN_NS) return;
    warned = 1;
    last_warn_ns = now;
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    const lw_growth *last = &g.last;
    int marker_mode = g.step_source[0] == 'm';
    char rate[32], lo[32], hi[32], eta[96] = "";
    lw_format_bytes(last->slope, rate, sizeof rate);
    lw_format_bytes(last->lo, lo, sizeof lo);
    lw_format_bytes(last->hi, hi, sizeof hi);
    int64_t fr = g.device_free;
    if (fr >= 0 && last->bytes_per_second > 0) {
        double secs = (double)fr / last->bytes_per_second;
        char freeb[32];
        lw_format_bytes((double)fr, freeb, sizeof freeb);
        if (secs < 120)
            snprintf(eta, sizeof eta, "; out of memory in about %.0f s at this rate (%s free)",
                     secs, freeb);
        else if (secs < 7200)
            snprintf(eta, sizeof eta, "; out of memory in about %.0f min at this rate (%s free)",
                     secs / 60, freeb);
        else
            snprintf(eta, sizeof eta, "; out of memory in about %.1f h at this rate (%s free)",
                     secs / 3600, freeb);
    }
    top_sites top = {0};
    lw_growth_each_site(consider, &top);
    char where[512] = "";
    char label[400];
    if (top.leaking) {
        char srate[32];
        lw_report_site_label(top.leaking, label, sizeof label);
        lw_format_bytes(top.leaking_slope, srate, sizeof srate);
        snprintf(where, sizeof where, "; top site: %s (+%s/step)", label, srate);
    } else if (top.rising) {
        lw_report_site_label(top.rising, label, sizeof label);
        snprintf(where, sizeof where, "; fastest-growing site: %s", label);
    }
    lw_log("LEAK: GPU memory floor grows by %s per %s (95%% CI %s to %s) since %s %.0f%s%s", rate,
           marker_mode ? "step" : "interval", lo, hi, marker_mode ? "step" : "interval",
           last->onset_x, where, eta);
}

void lw_warning_forget(void) {
    warned = 0;
    last_warn_ns = 0;
}
