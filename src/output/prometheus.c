/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus textfile: the same counters the report shows, read through
 * the same getters (totals.h, growth.h), so the two never disagree. */
#include "prometheus.h"

#include "answer.h"

#include "atomic_file.h"
#include "growth.h"
#include "log.h"
#include "imports.h"
#include "report.h"
#include "totals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef enum { M_LIVE, M_PEAK, M_ALLOC, M_FREE, M_FAILED, M_COUNT } metric;
static const struct {
    const char *name, *type, *help;
} metrics[M_COUNT] = {
    {"leakwatch_live_bytes", "gauge", "CUDA memory allocated and not yet freed, in bytes."},
    {"leakwatch_peak_live_bytes", "gauge", "Highest live bytes seen since the start."},
    {"leakwatch_alloc_total", "counter", "Successful CUDA allocations."},
    {"leakwatch_free_total", "counter", "CUDA frees of tracked allocations."},
    {"leakwatch_failed_alloc_total", "counter",
     "CUDA allocations that failed (out of memory, ...)."},
};

static double value_of(metric m, const lw_counts *c) {
    switch (m) {
    case M_LIVE:
        return (double)c->live_bytes;
    case M_PEAK:
        return (double)c->peak_live_bytes;
    case M_ALLOC:
        return (double)c->alloc_count;
    case M_FREE:
        return (double)c->free_count;
    default:
        return (double)c->failed_count;
    }
}

static void header(FILE *f, const char *name, const char *type, const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int emit(FILE *f, const lw_run_answer *given) {
    uint64_t seen = lw_totals_devices_seen();
    for (int m = 0; m < M_COUNT; m++) {
        header(f, metrics[m].name, metrics[m].type, metrics[m].help);
        for (int d = -1; d < LW_MAX_DEVICES; d++) {
            if (!(seen & (1ull << (d + 1)))) continue;
            for (int k = 0; k < LW_KIND_COUNT; k++) {
                lw_counts c = lw_totals_get(d, (lw_kind)k);
                fprintf(f, "%s{device=\"%d\",kind=\"%s\"} %.0f\n", metrics[m].name, d,
                        lw_kind_name((lw_kind)k), value_of((metric)m, &c));
            }
        }
    }
    /* Other processes' memory opened here: apart from the kinds above. */
    lw_counts imp = lw_imports_get();
    if (imp.alloc_count > 0 || imp.failed_count > 0) {
        header(f, "leakwatch_imported_bytes", "gauge",
               "Other processes' CUDA memory opened here (IPC, shareable handles), in bytes; "
               "not in leakwatch_live_bytes.");
        fprintf(f, "leakwatch_imported_bytes %lld\n", (long long)imp.live_bytes);
        header(f, "leakwatch_imported_open", "gauge",
               "Imports open now (an IPC handle opened twice counts twice).");
        fprintf(f, "leakwatch_imported_open %lld\n", (long long)imp.live_count);
    }
    /* The run's answer (answer.c): the one given (the exit's, the same as its
     * report), else the answer now, by the same rule as every other output
     * (not the place a live warning named, which may not have come yet, or
     * may have named another site since). */
    lw_run_answer now;
    lw_growth_state g;
    char place[512] = "";
    if (!given) {
        /* The place is said only for a leak: naming a site (symbolizing its
         * stack) every interval is spared on a clean run. */
        lw_growth_get(&g, NULL, 0, NULL);
        if (g.verdict == LW_VERDICT_LEAK) {
            lw_run_answer_now(&now);
            given = &now;
        }
    }
    if (given) {
        g = given->g;
        snprintf(place, sizeof place, "%s", given->a.where ? given->where : "");
    }
    if (g.evaluations) {
        double oom_s, oom_steps;
        lw_growth_oom(&g, &oom_s, &oom_steps);
        if (isfinite(g.last.slope)) {
            header(f, "leakwatch_floor_growth_bytes_per_step", "gauge",
                   "Growth of the floor of live memory per step, fitted by the detector.");
            fprintf(f, "leakwatch_floor_growth_bytes_per_step %.17g\n", g.last.slope);
        }
        header(f, "leakwatch_leak", "gauge", "1 when the detector's verdict is leak, else 0.");
        fprintf(f, "leakwatch_leak %d\n", g.verdict == LW_VERDICT_LEAK);
        if (g.verdict == LW_VERDICT_LEAK && place[0]) {
            header(f, "leakwatch_leak_place_info", "gauge",
                   "The place to look of the leak (the run's answer), as the label where.");
            fputs("leakwatch_leak_place_info{where=\"", f);
            for (const char *p = place; *p; p++) {
                if (*p == '\\' || *p == '"')
                    fputc('\\', f), fputc(*p, f);
                else if (*p == '\n')
                    fputs("\\n", f);
                else
                    fputc(*p, f);
            }
            fputs("\"} 1\n", f);
        }
        if (g.verdict == LW_VERDICT_LEAK) {
            header(f, "leakwatch_leak_memory_kind_info", "gauge",
                   "The kind of memory the leak is of (device, pinned_host), as the label kind.");
            fprintf(f, "leakwatch_leak_memory_kind_info{kind=\"%s\"} 1\n",
                    g.memory_kind ? g.memory_kind : "device");
        }
        if (isfinite(oom_s)) {
            header(f, "leakwatch_oom_eta_seconds", "gauge",
                   "Projected seconds until device memory runs out at the fitted growth.");
            fprintf(f, "leakwatch_oom_eta_seconds %.17g\n", oom_s);
        }
    }
    return ferror(f) ? -1 : 0;
}

static int emit_to(FILE *f, void *arg) {
    return emit(f, arg);
}

int lw_prometheus_write(const char *tpl) {
    return lw_prometheus_write_answer(tpl, NULL);
}

int lw_prometheus_write_answer(const char *tpl, const lw_run_answer *r) {
    char path[PATH_MAX];
    if (lw_path_expand(tpl, path, sizeof path) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* ".NAME.PID.SEQ.tmp": node exporter reads only *.prom, so never this.
     * Mode 0600 like every output; node exporter runs as root or as us. */
    char why[512] = "";
    int rc = lw_atomic_write(path, emit_to, (void *)r, why, sizeof why);
    if (rc != LW_AF_FAILED) return 0;
    /* Said once (the interval's rewrites fail the same way every time),
     * again only when the reason changes. */
    static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;
    static char said[512];
    pthread_mutex_lock(&said_lock);
    if (strcmp(why, said) != 0) {
        lw_log("cannot write the Prometheus file %s: %s; set LEAKWATCH_PROMETHEUS to a file in "
               "a writable folder (node exporter's textfile folder)",
               path, why[0] ? why : "unknown reason");
        snprintf(said, sizeof said, "%s", why);
    }
    pthread_mutex_unlock(&said_lock);
    return -1;
}
