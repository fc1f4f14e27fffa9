/* SPDX-License-Identifier: Apache-2.0 */
#include "thread.h"
#include "worker.h"

#include "clock.h"
#include "control.h"
#include "device.h"
#include "growth.h"
#include "log.h"
#include "options.h"
#include "prometheus.h"
#include "report.h"
#include "report_file.h"
#include "runstate.h"
#include "sandbox.h"
#include "warning.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static pid_t thread_pid;
/* Detach (leakwatch attach --detach) ends the thread: it leaves at its next
 * wake-up when its generation is no longer the current one. */
static atomic_uint generation;
typedef void (*tick_fn)(void);
static _Atomic(tick_fn) tick_hook;
/* When the worker last wrote the report and the metrics. A forked child's
 * worker starts its own clock: the parent's would make it write a periodic
 * report at once, while its exit report may be written. */
static uint64_t last_report_ns, last_metrics_ns;
/* The run's time when the worker was started: its intervals count from
 * there (under the test clock, the job may move the time before the new
 * thread first runs). */
static uint64_t started_ns;

/* Held while the worker writes; set once the process ends. */
static pthread_mutex_t outputs_lock = PTHREAD_MUTEX_INITIALIZER;
static int outputs_stopped;

void lw_worker_quiesce(void) {
    pthread_mutex_lock(&outputs_lock);
    outputs_stopped = 1;
    pthread_mutex_unlock(&outputs_lock);
}

void lw_worker_after_fork_child(void) {
    /* The worker thread that may have held it is the parent's. */
    pthread_mutex_init(&outputs_lock, NULL);
    outputs_stopped = 0;
}

/* What the worker writes on its own schedule: the report every
 * LEAKWATCH_REPORT_EVERY seconds (so a job killed by the OOM killer still
 * leaves a recent one), Prometheus metrics every interval. */
/* The first report comes early: once the first verdict is announced, or
 * FIRST_REPORT_S after the start, whichever comes first (at most
 * LEAKWATCH_REPORT_EVERY), so that a job the kernel's OOM killer ends with
 * SIGKILL in its first minute still leaves one; then every
 * LEAKWATCH_REPORT_EVERY seconds. */
#define FIRST_REPORT_S 10
static int first_report_written, decided_unwritten;

static void periodic_outputs_locked(void) {
    uint64_t now = lw_run_now_ns();
    long every = lw_opt_int(LW_OPT_REPORT_EVERY);
    long due = first_report_written || every < FIRST_REPORT_S ? every : FIRST_REPORT_S;
    if (!last_report_ns) last_report_ns = now;
    if (every > 0 && ((decided_unwritten && !first_report_written) ||
                      now - last_report_ns >= (uint64_t)due * 1000000000ull)) {
        last_report_ns = now;
        first_report_written = 1;
        lw_report_write("periodic", 0, NULL, 0);
    }
    decided_unwritten = 0;
    const char *prom = lw_opt_str(LW_OPT_PROMETHEUS);
    uint64_t interval = (uint64_t)lw_opt_int(LW_OPT_INTERVAL_MS) * 1000000ull;
    if (prom && now - last_metrics_ns >= interval) {
        last_metrics_ns = now;
        lw_prometheus_write(prom);
    }
}

static void periodic_outputs(void) {
    pthread_mutex_lock(&outputs_lock);
    if (!outputs_stopped) periodic_outputs_locked();
    pthread_mutex_unlock(&outputs_lock);
}

/* The run's time (runstate.h: the monotonic clock or the test clock). */
static void run_now(struct timespec *ts) {
    uint64_t ns = lw_run_now_ns();
    ts->tv_sec = (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* Moves *until to now + ns when that comes first; 1 when it did. */
static int sooner(struct timespec *until, long ns) {
    struct timespec now;
    run_now(&now);
    now.tv_sec += ns / 1000000000L;
    now.tv_nsec += ns % 1000000000L;
    if (now.tv_nsec >= 1000000000L) now.tv_sec++, now.tv_nsec -= 1000000000L;
    if (now.tv_sec < until->tv_sec ||
        (now.tv_sec == until->tv_sec && now.tv_nsec < until->tv_nsec)) {
        *until = now;
        return 1;
    }
    return 0;
}

static void *run(void *arg) {
    unsigned gen = (unsigned)(uintptr_t)arg;
    long interval_ms = lw_opt_int(LW_OPT_INTERVAL_MS);
    struct timespec deadline;
    int first_polls = 0;
    deadline.tv_sec = (time_t)(started_ns / 1000000000u);
    deadline.tv_nsec = (long)(started_ns % 1000000000u);
    for (;;) {
        deadline.tv_sec += interval_ms / 1000;
        deadline.tv_nsec += (interval_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
        /* The free-memory reading is taken here, never on the program's
         * threads: a driver call inside an allocation hook could disturb
         * what the program is doing (a stream capture). Until the first
         * reading (and for at most a few seconds) the worker looks every
         * 20 ms, so that it comes right after the first allocation; the
         * interval clock is not affected. */
        int timed_out;
        for (;;) {
            struct timespec until = deadline;
            int early = 0;
            if (first_polls < 150 && !lw_device_have_reading()) {
                first_polls++;
                early |= sooner(&until, 20 * 1000000L);
            }
            /* A marked run between marks: a phase without them (a
             * validation loop) is sampled at about one step's time. */
            double period = lw_growth_unmarked_period();
            if (period > 0) early |= sooner(&until, (long)(period * 1e9));
            timed_out = lw_growth_wait(&until);
            if (atomic_load(&generation) != gen) {
                lw_test_clock_sampler_gone();
                return NULL;
            }
            lw_device_sample();
            if (timed_out && early && lw_growth_unmarked_tick() > 0) {
                /* Marks taken in (they wake the worker only at first):
                 * judged now, as if one had woken it. */
                timed_out = 0;
                break;
            }
            if (!timed_out || !early) break;
        }
        lw_growth_update(timed_out);
        if (timed_out) lw_warning_steps_hint();
        if (lw_growth_take_warning()) {
            lw_warning_leak();
            decided_unwritten = 1;
        }
        if (lw_growth_take_growing()) lw_warning_growing();
        lw_warning_check();
        periodic_outputs();
        tick_fn hook = atomic_load(&tick_hook);
        if (hook) hook();
        if (!timed_out) {
            /* Woken by a step: the interval clock did not run out. */
            deadline.tv_sec -= interval_ms / 1000;
            deadline.tv_nsec -= (interval_ms % 1000) * 1000000L;
            if (deadline.tv_nsec < 0) deadline.tv_sec--, deadline.tv_nsec += 1000000000L;
        }
    }
    return NULL;
}

void lw_worker_start(void) {
    pid_t me = getpid();
    if (thread_pid == me) return;
    lw_growth_init();
    lw_warning_forget();
    last_report_ns = last_metrics_ns = 0;
    first_report_written = decided_unwritten = 0;
    pthread_mutex_lock(&outputs_lock);
    outputs_stopped = 0;
    pthread_mutex_unlock(&outputs_lock);
    started_ns = lw_run_now_ns();
    /* Under the test clock, a move of the time waits for the new thread
     * from now on. */
    if (lw_test_clock_on()) lw_test_clock_sampler_works();
    if (lw_thread_start_arg(run, (void *)(uintptr_t)atomic_load(&generation)) != 0) {
        lw_test_clock_sampler_gone();
        lw_log("cannot start the sampler thread; without step marks no growth is followed");
    } else {
        thread_pid = me;
    }
    /* The live view (leakwatch top/snapshot/ps): a socket served by its own
     * thread (which blocks the job's signals itself), also only in processes
     * that use CUDA; LEAKWATCH_CONTROL=0 turns it off, and so does a seccomp
     * filter (sandbox.h; lifecycle.c said so once). */
    if (lw_opt_int(LW_OPT_CONTROL) && !lw_sandboxed()) lw_control_start();
}

void lw_worker_stop(void) {
    lw_worker_quiesce();
    atomic_fetch_add(&generation, 1);
    thread_pid = 0;
}

void lw_worker_set_tick(void (*fn)(void)) {
    atomic_store(&tick_hook, fn);
}
