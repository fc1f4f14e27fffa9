/* SPDX-License-Identifier: Apache-2.0 */
#include "warning.h"

#include "answer.h"

#include "dl_walk.h"
#include "torch_info.h"

#include "clock.h"
#include "fmt.h"
#include "growth.h"
#include "log.h"
#include "options.h"
#include "report.h"
#include "runstate.h"
#include "summary.h"
#include "sites.h"

#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define WARN_AGAIN_NS (30ull * 60 * 1000000000ull)

static uint64_t last_warn_ns;
static int warned;
/* The LEAK lines withdrawn (under warn_lock), and the step of the line
 * said last. */
static lw_withdrawn_alarm withdrawn_alarm;
/* withdrawn_alarm's own lock, a leaf held only to copy it: the report reads
 * it, also in a child forked while another thread held it (a row of
 * fork_locks.c), so not under warn_lock, which is held while an answer is
 * computed and which no fork handler takes. */
static pthread_mutex_t alarm_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long said_at_step;
static int growing_said;

/* The answer of this step (answer.c: the same rule and numbers as the exit
 * summary, the report and Prometheus). */
static void answer_now(lw_run_answer *r) {
    lw_run_answer_now(r);
    /* It says which step, as it may be read much later. */
    r->a.computed_at = (double)r->g.steps;
}

/* A LEAK line was printed and not withdrawn since. Changed under warn_lock
 * (or before the worker starts); read without it by the worker's check, a
 * cheap no on most ticks, so atomic. */
static atomic_int announced;

/* The worker's tick and the exit's report may both find a warning due: one
 * of them says it (the answer takes a while to compute); the other does not
 * wait (a try: never a deadlock, also in a child forked meanwhile). */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

static void warn_locked(void) {
    uint64_t now = lw_run_now_ns();
    if (warned && now - last_warn_ns < WARN_AGAIN_NS) return;
    lw_run_answer r;
    answer_now(&r);
    /* The verdict may have moved since the warning fell due (a withdrawal,
     * the end of the run): the live line says only a leak. */
    if (r.g.verdict != LW_VERDICT_LEAK) return;
    warned = 1;
    last_warn_ns = now;
    /* LEAKWATCH_QUIET: errors only. */
    if (lw_log_quiet) return;
    char line[1024];
    lw_log("%s", lw_answer_line(&r.a, line, sizeof line));
    atomic_store_explicit(&announced, 1, memory_order_relaxed);
    said_at_step = (unsigned long long)r.g.steps;
    /* Under PyTorch's signal, what keeps the named line's tensors alive. */
    for (const char *k = r.owner; *k;) {
        const char *nl = strchr(k, '\n');
        int len = nl ? (int)(nl - k) : (int)strlen(k);
        if (len > 0) lw_log("  %.*s", len, k);
        if (!nl) break;
        k = nl + 1;
    }
}

void lw_warning_leak(void) {
    if (!lw_opt_int(LW_OPT_WARN)) return;
    if (pthread_mutex_trylock(&warn_lock) != 0) return;
    warn_locked();
    pthread_mutex_unlock(&warn_lock);
}

static void check_locked(void);

void lw_warning_check(void) {
    if (!atomic_load_explicit(&announced, memory_order_relaxed) || !lw_opt_int(LW_OPT_WARN) ||
        lw_log_quiet)
        return;
    if (pthread_mutex_trylock(&warn_lock) != 0) return;
    check_locked();
    pthread_mutex_unlock(&warn_lock);
}

static void check_locked(void) {
    if (!atomic_load_explicit(&announced, memory_order_relaxed)) return;
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    if (g.verdict == LW_VERDICT_LEAK) return;
    /* The LEAK line printed earlier no longer holds (a warm-up that
     * levelled off): said once, when it happens; a new leak warns again. */
    char s[48];
    const char *why = g.reason;
    static const char prefix[] = "leak verdict withdrawn: ";
    if (!strncmp(why, prefix, sizeof prefix - 1)) why += sizeof prefix - 1;
    lw_log("leak verdict withdrawn at %s %s: %s",
           strcmp(g.step_source, "time") ? "step" : "interval",
           lw_fmt_count((double)g.steps, s, sizeof s), why);
    pthread_mutex_lock(&alarm_lock);
    lw_withdrawn_alarm a = withdrawn_alarm;
    pthread_mutex_unlock(&alarm_lock);
    a.count++;
    a.said_at = said_at_step;
    a.withdrawn_at = (unsigned long long)g.steps;
    a.unit = strcmp(g.step_source, "time") ? "step" : "interval";
    const char *pre = strstr(why, prefix);
    if (pre)
        snprintf(a.reason, sizeof a.reason, "%.*s%.120s", (int)(pre - why < 30 ? pre - why : 30),
                 why, pre + sizeof prefix - 1);
    else
        snprintf(a.reason, sizeof a.reason, "%.150s", why);
    pthread_mutex_lock(&alarm_lock);
    withdrawn_alarm = a;
    pthread_mutex_unlock(&alarm_lock);
    growing_said = 0;
    atomic_store_explicit(&announced, 0, memory_order_relaxed);
    warned = 0;
    last_warn_ns = 0;
}

void lw_warning_growing(void) {
    if (!lw_opt_int(LW_OPT_WARN) || lw_log_quiet) return;
    if (pthread_mutex_trylock(&warn_lock) != 0) return;
    lw_growth_state g;
    if (!growing_said && !atomic_load_explicit(&announced, memory_order_relaxed)) {
        lw_growth_get(&g, NULL, 0, NULL);
        if (g.growing) {
            growing_said = 1;
            const char *unit = strcmp(g.step_source, "time") ? "step" : "interval";
            char rate[48], lo[32], s[32], hold[32], from[32];
            lw_fmt_rate(g.last.slope, unit, rate, sizeof rate);
            lw_fmt_count(isfinite(g.last.onset_x) && g.last.onset_x >= 1 ? g.last.onset_x : 1, from,
                         sizeof from);
            lw_fmt_bytes(g.last.lo, lo, sizeof lo);
            long h = lw_opt_int(LW_OPT_LIVE_HOLD);
            if (strcmp(unit, "step") || h <= 0)
                snprintf(hold, sizeof hold, "a little longer");
            else
                snprintf(hold, sizeof hold, "over %ld steps", h);
            lw_log("growing, not yet a leak: %s since %s %s (95%% CI from %s, p = %.1e); said as a "
                   "leak once it holds %s without slowing or cycling [as of %s %s]",
                   rate, unit, from, lo, g.last.p_value, hold, unit,
                   lw_fmt_count((double)g.steps, s, sizeof s));
        }
    }
    pthread_mutex_unlock(&warn_lock);
}

unsigned lw_warning_withdrawn(lw_withdrawn_alarm *out) {
    pthread_mutex_lock(&alarm_lock);
    *out = withdrawn_alarm;
    pthread_mutex_unlock(&alarm_lock);
    return out->count;
}

void lw_warning_lock_for_fork(void) {
    pthread_mutex_lock(&alarm_lock);
}

void lw_warning_unlock_after_fork(void) {
    pthread_mutex_unlock(&alarm_lock);
}

static int is_c10_cuda(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libc10_cuda.so")) *(int *)found = 1;
    return *(int *)found;
}

/* PyTorch's CUDA allocator is loaded in this process. */
static int torch_loaded(void) {
    int found = 0;
    lw_dl_walk(is_c10_cuda, &found);
    return found;
}

/* In a PyTorch process the optimizer marks the steps once training begins,
 * which can be seconds after the first CUDA allocation (the model and the
 * data loaded, the first step's kernels chosen): the line waits this long. */
#define TORCH_HINT_AFTER_MS 10000

void lw_warning_steps_hint(void) {
    /* Once per process, at the first interval closed without a step mark
     * (about LEAKWATCH_INTERVAL_MS after the first CUDA allocation; 10 s in
     * a PyTorch process): a job of a few seconds learns how it is being
     * measured. Not once PyTorch's helper has reported in, nor under
     * LEAKWATCH_QUIET. */
    static atomic_flag said = ATOMIC_FLAG_INIT;
    uint64_t closed = lw_intervals_now();
    long ms = lw_opt_int(LW_OPT_INTERVAL_MS);
    if (lw_log_quiet || lw_step_now() != 0 || closed == 0 || lw_torch_info_present()) return;
    if (closed * (uint64_t)ms < TORCH_HINT_AFTER_MS && torch_loaded()) return;
    if (atomic_flag_test_and_set(&said)) return;
    char every[32];
    if (ms % 1000 == 0)
        snprintf(every, sizeof every, "%ld s", ms / 1000);
    else
        snprintf(every, sizeof every, "%ld ms", ms);
    lw_log("no step marks yet: each %s interval counts as a step (LEAKWATCH_INTERVAL_MS); for a "
           "faster answer mark steps: leakwatch_step() in C, leakwatch.step() in Python (in "
           "PyTorch an optimizer marks them)",
           every);
}

void lw_warning_forget(void) {
    warned = 0;
    memset(&withdrawn_alarm, 0, sizeof withdrawn_alarm);
    said_at_step = 0;
    growing_said = 0;
    atomic_store_explicit(&announced, 0, memory_order_relaxed);
    last_warn_ns = 0;
}
