/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle.h"

#include "clock.h"
#include "export.h"
#include "control.h"
#include "live.h"
#include "end_signals.h"
#include "fork_locks.h"
#include "lock_order.h"
#include "log.h"
#include "options.h"
#include "prometheus.h"
#include "pyframes.h"
#include "rank.h"
#include "record.h"
#include "vmm.h"
#include "imports.h"
#include "instance.h"
#include "report.h"
#include "summary.h"
#include "report_file.h"
#include "growth.h"
#include "host_leak.h"
#include "real.h"
#include "hook_depth.h"
#include "runstate.h"
#include "sandbox.h"
#include "warning.h"
#include "where.h"
#include "worker.h"
#include "sites.h"
#include "stack.h"
#include "torch_info.h"
#include "anatomy.h"
#include "torch_mode.h"
#include "totals.h"
#include "tracker_mem.h"

#include <leakwatch.h>

#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum {
    NOT_STARTED = LW_NOT_STARTED,
    RECORDING = LW_RECORDING,
    OFF = LW_OFF,
    DETACHED = LW_DETACHED
};
static atomic_int state;
/* Lock order: src/attach/attach_locks.h ("the locks of attach and detach"). */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int handlers_registered;
static pid_t owner_pid; /* the process whose report this is */
/* Set in a forked child of a recording parent until the child's own start:
 * the parent's allocations, sites and counters are still in memory. */
static int forked;
/* Loaded into a running process by leakwatch attach: the job's signal
 * dispositions are left alone (a detach must leave it as it was). */
static int attached;

static void at_exit(void);
static void end_signal_report(const char *signal_name);
static void on_failure(lw_kind kind, uint64_t size, int device, int result);

/* The child reports only what it allocates itself. Runs under start_lock
 * while the state is NOT_STARTED, so no thread records meanwhile. */
static void forget_parent(void) {
    lw_live_forget_all();
    lw_sites_forget_all();
    lw_totals_reset();
    lw_record_forget_all();
    lw_vmm_forget_all();
    lw_imports_forget_all();
    lw_growth_forget_parent();
    lw_warning_forget();
    lw_torch_info_forget();
    lw_anatomy_forget();
}

static void start(void) {
    lw_options_load();
    if (lw_opt_int(LW_OPT_DISABLE)) {
        atomic_store(&state, OFF);
        return;
    }
    char other[PATH_MAX];
    if (lw_instance_other(other, sizeof other)) {
        lw_log_once(said_other,
                    "another copy of the library is loaded first (%s): it watches "
                    "this process, this copy stays inert (one report per process)",
                    other);
        atomic_store(&state, OFF);
        return;
    }
    lw_tracker_mem_init();
    if (forked) {
        forget_parent();
        lw_report_forked_child();
        forked = 0;
    }
    /* A seccomp filter: no socket or helper process of ours (sandbox.h),
     * said once, before the first of them. */
    if (lw_sandboxed() && !lw_log_quiet)
        lw_log_once(said_seccomp,
                    "this process runs under a seccomp filter (Seccomp: %d in /proc/self/status): "
                    "leakwatch keeps to what a CUDA job itself does (memory, files, threads) and "
                    "opens no socket and starts no process, which the filter may punish by "
                    "killing the job: no live view (leakwatch top, ps, snapshot) and no source "
                    "lines; set LEAKWATCH_SECCOMP=full if the filter allows them",
                    lw_seccomp_mode());
    lw_torch_mode_started(); /* its deferred notice: this process uses CUDA */
    lw_sites_set_cap((size_t)lw_opt_int(LW_OPT_MAX_SITES));
    lw_test_clock_init();
    lw_set_start_time_ns(lw_run_now_ns());
    owner_pid = getpid();
    if (!handlers_registered) {
        if (atexit(at_exit) != 0)
            lw_log("cannot register the exit handler; call leakwatch_dump() for a report");
        lw_lifecycle_fork_handlers();
        handlers_registered = 1;
    }
    if (lw_py_init() != 0 && lw_py_unavailable() != NULL)
        lw_log("no Python lines: %s", lw_py_unavailable());
    lw_report_cleanup();     /* temporary files of a writer killed mid-write */
    lw_report_claim_start(); /* from now, another process's report is a sibling's */
    lw_stack_init();
    lw_record_set_failure_hook(on_failure);
    atomic_store_explicit(&state, RECORDING, memory_order_release);
    lw_worker_start();
    /* Attached too (issue 32): SIGTERM's final report and socket; the
     * detach puts the default dispositions back (lw_end_signals_stop). */
    lw_end_signals_start(end_signal_report);
}

int lw_started(void) {
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s != NOT_STARTED) return s == RECORDING;
    /* The fork handlers before start_lock is taken: a fork while this thread
     * starts then waits for the start (the table's first row takes
     * start_lock) instead of handing the child start_lock held by a thread
     * it does not have, on which its own first CUDA call would wait for
     * ever. Once per process (pthread_once). */
    lw_lifecycle_fork_handlers();
    LW_LOCK_RANKED(&start_lock, LW_RANK_START);
    if (atomic_load(&state) == NOT_STARTED) start();
    LW_UNLOCK_RANKED(&start_lock, LW_RANK_START);
    return atomic_load(&state) == RECORDING;
}

/* This process started recording (not a forked child of one that did). */
static int recording_here(void) {
    return atomic_load_explicit(&state, memory_order_acquire) == RECORDING && owner_pid == getpid();
}

static void write_report(const char *reason, int fallback) {
    /* The report at the end of the run decides on all its evidence; a dump
     * is a look at a run that goes on. */
    if (strcmp(reason, "dump"))
        lw_growth_finish();
    else
        lw_growth_flush();
    if (lw_growth_take_warning()) lw_warning_leak();
    char path[PATH_MAX];
    /* The summary renders the answer of the report written here (answer.c),
     * or the state now when no report was emitted. */
    lw_run_answer_forget();
    int rc = lw_report_write(reason, fallback, path, sizeof path);
    lw_run_answer ans;
    if (!lw_run_answer_kept(&ans)) lw_run_answer_now(&ans);
    lw_report_summary(&ans, rc == 0 ? path : NULL);
    /* The metrics end on the state the report gives, not on the worker's last
     * tick (which may predate the final verdict). */
    const char *prom = lw_opt_str(LW_OPT_PROMETHEUS);
    if (prom) lw_prometheus_write_answer(prom, &ans);
}

/* An out-of-memory (anatomy.h): the report now, with its post-mortem, and
 * one line on stderr that leads with it; the run goes on (a job may catch
 * the error), so the verdict is not final. */
static void write_oom_report(void) {
    lw_hook_depth++; /* CUDA calls from here are not the job's */
    lw_growth_flush();
    char path[PATH_MAX];
    lw_run_answer_forget();
    int rc = lw_report_write("oom", 0, path, sizeof path);
    char cause[32], evidence[400], remedy[400];
    if (!lw_log_quiet &&
        lw_anatomy_oom_get(cause, sizeof cause, evidence, sizeof evidence, remedy, sizeof remedy))
        lw_log("out of memory: %s: %s; remedy: %s%s%s", lw_oom_cause_text(cause), evidence, remedy,
               rc == 0 ? "; report: " : "", rc == 0 ? path : "");
    lw_hook_depth--;
}

static void on_failure(lw_kind kind, uint64_t size, int device, int result) {
    if (recording_here() && lw_anatomy_alloc_failed((int)kind, size, device, result))
        write_oom_report();
}

/* The process whose final report is written: at most one per process
 * (CPython's finalisation and then exit() may both call for it). */
static pid_t final_written_by;

static void at_exit(void) {
    /* A forked child that never used CUDA itself has nothing to say, and must
     * not overwrite its parent's report. */
    if (!recording_here() || final_written_by == getpid()) return;
    final_written_by = getpid();
    lw_hook_depth++; /* CUDA calls from here on are the runtime's teardown */
    lw_worker_quiesce();
    write_report("exit", 1);
}

/* SIGINT, SIGTERM or SIGHUP at its default action (end_signals.h): the final
 * report, on end_signals.c's thread, before the signal ends the process. */
static void end_signal_report(const char *signal_name) {
    if (!recording_here()) return;
    lw_hook_depth++;
    lw_report_set_end_signal(signal_name);
    lw_worker_quiesce();
    lw_control_stop(); /* its socket goes with the process */
    write_report("signal", 1);
    if (!lw_log_quiet) lw_log("ended by %s", signal_name);
}

/* The final report, once per process (public_api.c: CPython's finalisation,
 * leakwatch_python_exit_hook). */
void lw_lifecycle_exit_report(void) {
    at_exit();
}

/* Fork (fork_locks.c: the first row of the table, so start_lock is taken
 * before every other lock of ours and released after them). */
static void lock_for_fork(void) {
    LW_LOCK_RANKED(&start_lock, LW_RANK_START);
}

static void unlock_after_fork(void) {
    LW_UNLOCK_RANKED(&start_lock, LW_RANK_START);
}

/* Only cheap work here (a DataLoader forks many workers that never touch
 * CUDA): forgetting the parent's history waits for the child's first CUDA
 * call (start), and never happens in a child that makes none. */
static void after_fork_child(void) {
    LW_UNLOCK_RANKED(&start_lock, LW_RANK_START);
    lw_record_after_fork_child();
    lw_report_after_fork_child();
    lw_totals_after_fork_child();
    lw_worker_after_fork_child();
    lw_step_reset(); /* the child's steps are its own */
    /* The child reports only if it uses CUDA itself (owner_pid stays the
     * parent's until then, so the exit handler stays silent). */
    if (atomic_load(&state) == RECORDING) {
        atomic_store(&state, NOT_STARTED);
        forked = 1;
    }
}

static const lw_fork_row fork_row = {lock_for_fork, unlock_after_fork, after_fork_child};

void lw_lifecycle_fork_handlers(void) {
    lw_fork_locks_register(&fork_row);
}

int lw_lifecycle_state(void) {
    return atomic_load(&state);
}

int lw_lifecycle_recording_here(void) {
    return recording_here();
}

void lw_lifecycle_dump(void) {
    write_report("dump", 0);
}

void lw_lifecycle_oom_report(void) {
    write_oom_report();
}

int lw_lifecycle_attach(void) {
    lw_lifecycle_fork_handlers(); /* before start_lock, as lw_started says */
    LW_LOCK_RANKED(&start_lock, LW_RANK_START);
    int s = atomic_load(&state);
    int rc = 0;
    if (s == RECORDING) {
        rc = 1;
    } else {
        attached = 1;
        lw_report_set_attached(1);
        if (s == DETACHED || s == OFF) {
            /* A new attach after a detach (or one refused by its settings):
             * a session of its own, with this attach's settings. */
            forget_parent();
            atomic_store(&state, NOT_STARTED);
        }
        if (atomic_load(&state) == NOT_STARTED) start();
        rc = atomic_load(&state) == RECORDING ? 0 : -1;
    }
    LW_UNLOCK_RANKED(&start_lock, LW_RANK_START);
    return rc;
}

int lw_lifecycle_detach(char *path, size_t n) {
    LW_LOCK_RANKED(&start_lock, LW_RANK_START);
    int rc = -1;
    if (attached && recording_here()) {
        lw_worker_stop();
        lw_growth_flush();
        if (lw_growth_take_warning()) lw_warning_leak();
        rc = lw_report_write("detach", 1, path, n);
        lw_end_signals_stop();
        /* Calls from here on pass through; the ones already inside a hook
         * finish recording into tables nobody reads again. */
        atomic_store(&state, DETACHED);
    }
    LW_UNLOCK_RANKED(&start_lock, LW_RANK_START);
    return rc;
}
