#include "sampler.h"

#include "clock.h"
#include "device.h"
#include "live.h"
#include "lifecycle.h"
#include "log.h"
#include "options.h"
#include "control.h"
#include "growth_view.h"
#include "prometheus.h"
#include "report.h"
#include "sites.h"
#include "stats.h"
#include "totals.h"

#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GLOBAL_BINS 256
#define RING 4096
#define MAX_TRACKED_SITES 4096
#define WARN_AGAIN_NS (30ull * 60 * 1000000000ull)

typedef struct {
    double x, t;
    int64_t floor, peak;
} point;

/* Two locks: `ring_lock` guards only the queue of steps, so a training
 * thread marking a step never waits for an evaluation; `lock` guards the
 * series and the verdict. Order: lock, then ring_lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static point ring[RING];
static int ring_len;
static int marker_requested; /* set by the first step mark, under ring_lock */
static point batch[RING];    /* the sampler's copy of the queue, under lock */
static lw_series global;
static lw_bin global_bins[GLOBAL_BINS];
static lw_growth last;
static lw_verdict announced;
static int consecutive;
static uint64_t raw_leak_since;      /* points when the current run of leak verdicts began */
static int64_t first_leak_step = -1; /* when the current leak verdict was reached */
static uint64_t withdrawn;           /* leak verdicts later withdrawn */
static uint64_t evaluations, next_eval_at, points_at_eval;
static int marker_mode;
static _Atomic uint64_t intervals;
static int tracked;
static uint64_t last_warn_ns;
static int warned;
static pid_t thread_pid;

static _Atomic int64_t dev_free = -1, dev_total = -1;
static _Atomic uint64_t meminfo_ns;

uint32_t lw_sampler_clock(void) {
    uint32_t steps = lw_step_now();
    return steps ? steps : (uint32_t)atomic_load_explicit(&intervals, memory_order_relaxed);
}

static double now_s(void) {
    return (double)(lw_now_ns() - lw_start_time_ns()) / 1e9;
}

/* ---- per-site series ---- */

static lw_site_track *track_of(lw_site *s);

static void sites_point(double x, double t) {
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        int64_t live = atomic_load_explicit(&s->live_bytes, memory_order_relaxed);
        int64_t f = atomic_exchange_explicit(&s->floor, live, memory_order_relaxed);
        if (f > live) f = live;
        if (!s->track && (live <= 0 || !track_of(s))) continue;
        lw_series_add(&s->track->series, x, t, (double)f, (double)live);
    }
}

static lw_site_track *track_of(lw_site *s) {
    if (!s->track && tracked < MAX_TRACKED_SITES) {
        lw_site_track *tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        lw_series_init(&tr->series, tr->bins, LW_SITE_BINS);
        s->track = tr;
        tracked++;
    }
    return s->track;
}

static void count_kept(const lw_alloc *r, void *arg) {
    uint32_t since = *(const uint32_t *)arg;
    if (r->step < since) return;
    lw_site_track *tr = track_of(r->site);
    if (!tr) return;
    if (!tr->kept_count || r->step < tr->kept_first_step) tr->kept_first_step = r->step;
    if (!tr->kept_count || r->step > tr->kept_last_step) tr->kept_last_step = r->step;
    tr->kept_bytes += r->size;
    tr->kept_count++;
}

/* Which sites grow. Each live allocation carries the step it was made at, so
 * the bytes a site still holds from allocations made since the growth began,
 * divided by the steps since, is what the site keeps per step: exactly the
 * leak rate for a leaking site, about nothing for one whose allocations are
 * freed within the step, nothing for a cache filled before the growth. A
 * site leaks when it keeps at least a tenth of the global growth, from
 * allocations spread over at least a third of that span (not one burst). */
static void evaluate_sites(void) {
    double onset = isfinite(last.onset_x) ? last.onset_x : 0;
    uint32_t since = (uint32_t)ceil(onset), now = lw_sampler_clock();
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) s->track->kept_bytes = 0, s->track->kept_count = 0;
    lw_live_scan(count_kept, &since);
    double span = now > since ? (double)(now - since) : 1;
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        lw_site_track *tr = s->track;
        if (!tr) continue;
        tr->evaluated = 1;
        memset(&tr->growth, 0, sizeof tr->growth);
        tr->growth.verdict = LW_VERDICT_NO_LEAK;
        tr->growth.lo = tr->growth.hi = tr->growth.p_value = NAN;
        double rate = (double)tr->kept_bytes / span;
        tr->growth.slope = rate;
        if (tr->kept_count >= 3 && rate >= 0.1 * last.slope &&
            tr->kept_last_step - tr->kept_first_step >= span / 3) {
            tr->growth.verdict = LW_VERDICT_LEAK;
            tr->growth.onset_x = tr->kept_first_step;
            tr->growth.reason = "keeps memory from allocations made since the growth began";
        }
    }
}

/* ---- the verdict ---- */

static void warn_leak(void) {
    if (!lw_opt_int(LW_OPT_WARN)) return;
    uint64_t now = lw_now_ns();
    if (warned && now - last_warn_ns < WARN_AGAIN_NS) return;
    warned = 1;
    last_warn_ns = now;
    char rate[32], lo[32], hi[32], eta[96] = "";
    lw_format_bytes(last.slope, rate, sizeof rate);
    lw_format_bytes(last.lo, lo, sizeof lo);
    lw_format_bytes(last.hi, hi, sizeof hi);
    int64_t fr = atomic_load(&dev_free);
    if (fr >= 0 && last.bytes_per_second > 0) {
        double secs = (double)fr / last.bytes_per_second;
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
    lw_site *top = NULL;
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track && s->track->growth.verdict == LW_VERDICT_LEAK &&
            (!top || s->track->growth.slope > top->track->growth.slope))
            top = s;
    if (!top) {
        /* No site has enough points of its own yet (fast steps): name the
         * one whose floor rose most. */
        double best = 0;
        lw_bin b[LW_SITE_BINS + 1];
        for (lw_site *s = lw_sites_first(); s; s = s->next) {
            if (!s->track) continue;
            int n = lw_series_get(&s->track->series, b, LW_SITE_BINS + 1);
            if (n >= 2 && b[n - 1].floor - b[0].floor > best)
                best = b[n - 1].floor - b[0].floor, top = s;
        }
    }
    char where[512] = "";
    if (top && top->track->growth.verdict != LW_VERDICT_LEAK) {
        char label[400];
        lw_report_site_label(top, label, sizeof label);
        snprintf(where, sizeof where, "; fastest-growing site: %s", label);
    } else if (top) {
        char label[400], srate[32];
        lw_report_site_label(top, label, sizeof label);
        lw_format_bytes(top->track->growth.slope, srate, sizeof srate);
        snprintf(where, sizeof where, "; top site: %s (+%s/step)", label, srate);
    }
    lw_log("LEAK: GPU memory floor grows by %s per %s (95%% CI %s to %s) since %s %.0f%s%s", rate,
           marker_mode ? "step" : "interval", lo, hi, marker_mode ? "step" : "interval",
           last.onset_x, where, eta);
}

static void evaluate(void) {
    lw_bin bins[GLOBAL_BINS + 1];
    int n = lw_series_get(&global, bins, GLOBAL_BINS + 1);
    lw_detect_params p = lw_detect_defaults();
    lw_detect(bins, n, &p, &last);
    evaluations++;
    points_at_eval = global.points;
    consecutive = last.verdict == LW_VERDICT_LEAK ? consecutive + 1 : 0;
    if (consecutive == 1) raw_leak_since = global.points;
    /* Confirmed: several evaluations in a row, over a stretch of data half as
     * long again as when growth was first seen (a warm-up that is still
     * rising early on has time to show that it slows down). */
    if (consecutive >= lw_opt_int(LW_OPT_CONFIRM) &&
        (announced == LW_VERDICT_LEAK || 2 * global.points >= 3 * raw_leak_since)) {
        if (announced != LW_VERDICT_LEAK) first_leak_step = (int64_t)llround(bins[n - 1].x);
        announced = LW_VERDICT_LEAK;
        evaluate_sites();
        /* The warning on stderr waits longer than the verdict: a job's log is
         * no place for a warm-up mistaken for a leak. */
        if (global.points >= 64 && global.points >= 2 * raw_leak_since) warn_leak();
    } else {
        if (announced == LW_VERDICT_LEAK) withdrawn++, first_leak_step = -1;
        /* Growth seen but not yet confirmed is not yet a verdict. */
        announced = last.verdict == LW_VERDICT_LEAK ? LW_VERDICT_INCONCLUSIVE : last.verdict;
    }
}

/* Evaluations follow the data, not the clock: at every point early on, then
 * every 1/32 of the points seen. The verdict thus does not depend on how
 * promptly this thread was scheduled. */
static void add_point(const point *pt) {
    lw_series_add(&global, pt->x, pt->t, (double)pt->floor, (double)pt->peak);
    if (global.points >= next_eval_at) {
        evaluate();
        uint64_t gap = global.points / 32;
        next_eval_at = global.points + (gap ? gap : 1);
    }
}

static void forget_history(void);

/* Moves the queued steps into the series. Called with `lock` held. */
static void drain_ring(void) {
    pthread_mutex_lock(&ring_lock);
    int n = ring_len, switch_to_markers = marker_requested && !marker_mode;
    memcpy(batch, ring, (size_t)n * sizeof *batch);
    ring_len = 0;
    pthread_mutex_unlock(&ring_lock);
    if (switch_to_markers) {
        /* Marked steps from now on: time intervals would mix two scales. */
        marker_mode = 1;
        forget_history();
    }
    if (!n) return;
    for (int i = 0; i < n; i++)
        add_point(&batch[i]);
    sites_point(batch[n - 1].x, batch[n - 1].t);
}

static void close_interval(void) {
    point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    pt.x = (double)atomic_fetch_add(&intervals, 1) + 1;
    pt.t = now_s();
    add_point(&pt);
    sites_point(pt.x, pt.t);
}

static void forget_history(void) {
    lw_series_reset(&global);
    consecutive = 0;
    announced = LW_VERDICT_INCONCLUSIVE;
    memset(&last, 0, sizeof last);
    first_leak_step = -1;
    withdrawn = 0;
    next_eval_at = 0;
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) lw_series_reset(&s->track->series);
}

/* What the sampler writes on its own schedule, outside its lock: the report
 * every LEAKWATCH_REPORT_EVERY seconds (so a job killed by the OOM killer
 * still leaves a recent one), Prometheus metrics every interval. */
static void periodic_outputs(void) {
    static uint64_t last_report_ns, last_metrics_ns;
    uint64_t now = lw_now_ns();
    long every = lw_opt_int(LW_OPT_REPORT_EVERY);
    if (!last_report_ns) last_report_ns = now;
    if (every > 0 && now - last_report_ns >= (uint64_t)every * 1000000000ull) {
        last_report_ns = now;
        lw_report_write("periodic", 0, NULL, 0);
    }
    const char *prom = lw_opt_str(LW_OPT_PROMETHEUS);
    uint64_t interval = (uint64_t)lw_opt_int(LW_OPT_INTERVAL_MS) * 1000000ull;
    if (prom && now - last_metrics_ns >= interval) {
        last_metrics_ns = now;
        lw_prometheus_write(prom);
    }
}

static void *run(void *arg) {
    (void)arg;
    long interval_ms = lw_opt_int(LW_OPT_INTERVAL_MS);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    for (;;) {
        deadline.tv_sec += interval_ms / 1000;
        deadline.tv_nsec += (interval_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
        int timed_out = 0;
        pthread_mutex_lock(&ring_lock);
        while (!ring_len && !timed_out)
            timed_out = pthread_cond_timedwait(&wake, &ring_lock, &deadline) != 0;
        pthread_mutex_unlock(&ring_lock);
        pthread_mutex_lock(&lock);
        drain_ring();
        if (timed_out && !marker_mode) close_interval();
        pthread_mutex_unlock(&lock);
        periodic_outputs();
        if (!timed_out) {
            /* Woken by a step: the interval clock did not run out. */
            deadline.tv_sec -= interval_ms / 1000;
            deadline.tv_nsec -= (interval_ms % 1000) * 1000000L;
            if (deadline.tv_nsec < 0) deadline.tv_sec--, deadline.tv_nsec += 1000000000L;
        }
    }
    return NULL;
}

void lw_sampler_start(void) {
    pid_t me = getpid();
    if (thread_pid == me) return;
    pthread_mutex_lock(&lock);
    lw_series_init(&global, global_bins, GLOBAL_BINS);
    forget_history();
    marker_mode = 0;
    intervals = 0;
    pthread_mutex_lock(&ring_lock);
    ring_len = 0;
    marker_requested = 0;
    pthread_mutex_unlock(&ring_lock);
    pthread_mutex_unlock(&lock);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &ca);
    pthread_condattr_destroy(&ca);
    /* The job's signals must go to the job's own threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t t;
    if (pthread_create(&t, &attr, run, NULL) != 0)
        lw_log("cannot start the sampler thread; without step marks no growth is followed");
    else
        thread_pid = me;
    /* The live view (leakwatch top/snapshot/ps): a socket served by its own
     * thread, also only in processes that use CUDA. */
    lw_control_start();
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void lw_sampler_step(void) {
    point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    pt.x = (double)lw_step_now();
    pt.t = now_s();
    pthread_mutex_lock(&ring_lock);
    if (!marker_requested) {
        /* Intervals queued before the first mark are dropped with the time
         * series (drain_ring). */
        marker_requested = 1;
        ring_len = 0;
    }
    if (ring_len == RING) {
        /* The sampler is behind: fold this step into the newest one. */
        point *q = &ring[RING - 1];
        q->x = pt.x;
        q->t = pt.t;
        if (pt.floor < q->floor) q->floor = pt.floor;
        if (pt.peak > q->peak) q->peak = pt.peak;
    } else {
        ring[ring_len++] = pt;
    }
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&ring_lock);
    lw_sampler_tick();
}

void lw_sampler_tick(void) {
    static _Thread_local unsigned n;
    if ((n++ & 255) != 0) return;
    uint64_t now = lw_now_coarse_ns(), then = atomic_load(&meminfo_ns);
    if (then && now - then < 1000000000ull) return;
    if (!atomic_compare_exchange_strong(&meminfo_ns, &then, now ? now : 1)) return;
    size_t fr, total;
    if (lw_device_mem_info(&fr, &total) == 0) {
        atomic_store(&dev_free, (int64_t)fr);
        atomic_store(&dev_total, (int64_t)total);
    }
}

void lw_sampler_flush(void) {
    pthread_mutex_lock(&lock);
    drain_ring();
    /* One more point for each site: the state now. */
    sites_point((double)lw_sampler_clock(), now_s());
    if (global.points != points_at_eval)
        evaluate();
    else if (announced == LW_VERDICT_LEAK)
        evaluate_sites(); /* sites may have gained points since */
    pthread_mutex_unlock(&lock);
}

void lw_sampler_snapshot(lw_growth_state *st, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lock);
    memset(st, 0, sizeof *st);
    st->verdict = announced;
    st->last = last;
    st->step_source = marker_mode ? "marker" : "time";
    st->steps = marker_mode ? lw_step_now() : atomic_load(&intervals);
    st->first_leak_step = first_leak_step;
    st->withdrawn = withdrawn;
    st->evaluations = evaluations;
    st->device_free = atomic_load(&dev_free);
    st->device_total = atomic_load(&dev_total);
    st->interval_s = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    st->bin_width = global.width;
    if (bins && nbins) *nbins = lw_series_get(&global, bins, max);
    pthread_mutex_unlock(&lock);
}

void lw_sampler_each_site(void (*fn)(lw_site *s, const lw_site_track *t, void *arg), void *arg) {
    pthread_mutex_lock(&lock);
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) fn(s, s->track, arg);
    pthread_mutex_unlock(&lock);
}

/* Both locks, in their order: a thread marking a step holds ring_lock, and a
 * child that inherited it held would hang at its first CUDA call. */
void lw_sampler_lock_for_fork(void) {
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&ring_lock);
}

void lw_sampler_unlock_after_fork(void) {
    pthread_mutex_unlock(&ring_lock);
    pthread_mutex_unlock(&lock);
}

int lw_growth_snapshot(struct lw_growth_view *out) {
    lw_growth_state g;
    lw_sampler_snapshot(&g, NULL, 0, NULL);
    if (!g.evaluations) return -1;
    out->verdict = g.verdict;
    out->bytes_per_step = g.last.slope;
    out->bytes_per_second = g.last.bytes_per_second;
    out->p_value = g.last.p_value;
    out->oom_eta_seconds =
        g.verdict == LW_VERDICT_LEAK && g.device_free >= 0 && g.last.bytes_per_second > 0
            ? (double)g.device_free / g.last.bytes_per_second
            : NAN;
    out->steps = g.steps;
    return 0;
}

/* In a forked child, at its own first CUDA call (lifecycle.c): the parent's
 * series, verdict and readings are not the child's. The sites themselves,
 * with their tracks, are forgotten by sites.c. Single-threaded here. */
void lw_sampler_forget_parent(void) {
    forget_history();
    tracked = 0;
    marker_mode = 0;
    ring_len = 0;
    marker_requested = 0;
    atomic_store(&intervals, 0);
    atomic_store(&dev_free, -1);
    atomic_store(&dev_total, -1);
    atomic_store(&meminfo_ns, 0);
    evaluations = 0;
    points_at_eval = 0;
    warned = 0;
    last_warn_ns = 0;
    raw_leak_since = 0;
}
