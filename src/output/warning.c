/* SPDX-License-Identifier: Apache-2.0 */
#include "warning.h"

#include "answer.h"

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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define WARN_AGAIN_NS (30ull * 60 * 1000000000ull)

static uint64_t last_warn_ns;
static int warned;

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

/* The answer of this step (answer.c: the same rule and numbers as the exit
 * summary and the report), its place remembered for Prometheus. */
static void answer_now(lw_run_answer *r) {
    lw_run_answer_now(r);
    /* It says which step, as it may be read much later. */
    r->a.computed_at = (double)r->g.steps;
    if (r->a.where && r->g.verdict == LW_VERDICT_LEAK) set_place(r->where);
}

/* A LEAK line was printed and not withdrawn since. */
static int announced;

/* The worker's tick and the exit's report may both find a warning due: one
 * of them says it (the answer takes a while to compute); the other does not
 * wait (a try: never a deadlock, also in a child forked meanwhile). */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

static void warn_locked(void) {
    uint64_t now = lw_now_ns();
    if (warned && now - last_warn_ns < WARN_AGAIN_NS) return;
    lw_run_answer r;
    answer_now(&r);
    /* The verdict may have moved since the warning fell due (a withdrawal,
     * the end of the run): the live line says only a leak. */
    if (r.g.verdict != LW_VERDICT_LEAK) return;
    warned = 1;
    last_warn_ns = now;
    /* LEAKWATCH_QUIET: errors only; the place is still named for Prometheus. */
    if (!lw_opt_int(LW_OPT_WARN) || lw_log_quiet) return;
    char line[1024];
    lw_log("%s", lw_answer_line(&r.a, line, sizeof line));
    announced = 1;
    /* Under PyTorch's signal, what keeps the named line's tensors alive. */
    if (r.owner[0]) lw_log("  %s", r.owner);
}

void lw_warning_leak(void) {
    /* Without the line on stderr, the place is still named for Prometheus. */
    if (!lw_opt_int(LW_OPT_WARN) && !lw_opt_str(LW_OPT_PROMETHEUS)) return;
    if (pthread_mutex_trylock(&warn_lock) != 0) return;
    warn_locked();
    pthread_mutex_unlock(&warn_lock);
}

static void check_locked(void);

void lw_warning_check(void) {
    if (!announced || !lw_opt_int(LW_OPT_WARN) || lw_log_quiet) return;
    if (pthread_mutex_trylock(&warn_lock) != 0) return;
    check_locked();
    pthread_mutex_unlock(&warn_lock);
}

static void check_locked(void) {
    if (!announced) return;
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
    announced = 0;
    warned = 0;
    last_warn_ns = 0;
}

static int is_c10_cuda(struct dl_phdr_info *info, size_t size, void *found) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libc10_cuda.so")) *(int *)found = 1;
    return *(int *)found;
}

/* PyTorch's CUDA allocator is loaded in this process. */
static int torch_loaded(void) {
    int found = 0;
    dl_iterate_phdr(is_c10_cuda, &found);
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

void lw_warning_final_place(void) {
    if (!lw_opt_str(LW_OPT_PROMETHEUS)) return;
    /* The report's answer, written just before on this thread (answer.c). */
    lw_run_answer r;
    if (!lw_run_answer_kept(&r)) lw_run_answer_now(&r);
    if (r.g.verdict == LW_VERDICT_LEAK && r.a.where) set_place(r.where);
}

void lw_warning_forget(void) {
    place[0] = '\0';
    warned = 0;
    announced = 0;
    last_warn_ns = 0;
}
