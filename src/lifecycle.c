#include "lifecycle.h"

#include "clock.h"
#include "live.h"
#include "log.h"
#include "options.h"
#include "pyframes.h"
#include "record.h"
#include "report.h"
#include "device.h"
#include "growth.h"
#include "runstate.h"
#include "warning.h"
#include "worker.h"
#include "sites.h"
#include "torch_info.h"
#include "torch_mode.h"
#include "totals.h"
#include "tracker_mem.h"

#include <leakwatch.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define LW_EXPORT __attribute__((visibility("default")))

enum { NOT_STARTED = 0, RECORDING = 1, OFF = -1 };
static atomic_int state;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int handlers_registered;
static pid_t owner_pid; /* the process whose report this is */
/* Set in a forked child of a recording parent until the child's own start:
 * the parent's allocations, sites and counters are still in memory. */
static int forked;

static void at_exit(void);
static void before_fork(void);
static void after_fork_parent(void);
static void after_fork_child(void);

/* The child reports only what it allocates itself. Runs under start_lock
 * while the state is NOT_STARTED, so no thread records meanwhile. */
static void forget_parent(void) {
    lw_live_forget_all();
    lw_sites_forget_all();
    lw_totals_reset();
    lw_record_forget_all();
    lw_growth_forget_parent();
    lw_warning_forget();
    lw_torch_info_forget();
}

static void start(void) {
    lw_options_load();
    if (lw_opt_int(LW_OPT_DISABLE)) {
        atomic_store(&state, OFF);
        return;
    }
    lw_tracker_mem_init();
    if (forked) {
        forget_parent();
        lw_report_forked_child();
        forked = 0;
    }
    lw_torch_mode_started(); /* its deferred notice: this process uses CUDA */
    lw_sites_set_cap((size_t)lw_opt_int(LW_OPT_MAX_SITES));
    lw_set_start_time_ns(lw_now_ns());
    owner_pid = getpid();
    if (!handlers_registered) {
        if (atexit(at_exit) != 0)
            lw_log("cannot register the exit handler; call leakwatch_dump() for a report");
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        handlers_registered = 1;
    }
    lw_py_init();
    atomic_store_explicit(&state, RECORDING, memory_order_release);
    lw_worker_start();
}

int lw_started(void) {
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s != NOT_STARTED) return s == RECORDING;
    pthread_mutex_lock(&start_lock);
    if (atomic_load(&state) == NOT_STARTED) start();
    pthread_mutex_unlock(&start_lock);
    return atomic_load(&state) == RECORDING;
}

static void write_report(const char *reason, int fallback) {
    lw_growth_flush();
    if (lw_growth_take_warning()) lw_warning_leak();
    char path[PATH_MAX];
    int rc = lw_report_write(reason, fallback, path, sizeof path);
    lw_report_summary(rc == 0 ? path : NULL);
}

static void at_exit(void) {
    /* A forked child that never used CUDA itself has nothing to say, and must
     * not overwrite its parent's report. */
    if (atomic_load(&state) != RECORDING || owner_pid != getpid()) return;
    lw_hook_depth++; /* CUDA calls from here on are the runtime's teardown */
    write_report("exit", 1);
}

/* Fork: no lock of ours may be held by another thread at the moment of the
 * fork, or the child would inherit it locked forever. */
static void before_fork(void) {
    pthread_mutex_lock(&start_lock);
    lw_growth_lock_for_fork();
    lw_sites_lock_all();
    lw_live_lock_all();
    lw_record_lock_for_fork();
}

static void after_fork_parent(void) {
    lw_record_unlock_after_fork();
    lw_live_unlock_all();
    lw_sites_unlock_all();
    lw_growth_unlock_after_fork();
    pthread_mutex_unlock(&start_lock);
}

/* Only cheap work here (a DataLoader forks many workers that never touch
 * CUDA): forgetting the parent's history waits for the child's first CUDA
 * call (start), and never happens in a child that makes none. */
static void after_fork_child(void) {
    lw_record_unlock_after_fork();
    lw_live_unlock_all();
    lw_sites_unlock_all();
    lw_growth_unlock_after_fork();
    pthread_mutex_unlock(&start_lock);
    lw_record_after_fork_child();
    lw_step_reset(); /* the child's steps are its own */
    /* The child reports only if it uses CUDA itself (owner_pid stays the
     * parent's until then, so the exit handler stays silent). */
    if (atomic_load(&state) == RECORDING) {
        atomic_store(&state, NOT_STARTED);
        forked = 1;
    }
}

LW_EXPORT void leakwatch_step(void) {
    lw_step_mark();
    /* Steps before the first CUDA allocation are counted, nothing more. */
    if (atomic_load_explicit(&state, memory_order_acquire) == RECORDING && owner_pid == getpid()) {
        lw_growth_step();
        lw_device_tick();
    }
}

LW_EXPORT void leakwatch_dump(void) {
    if (atomic_load(&state) != RECORDING) return;
    write_report("dump", 0);
}

LW_EXPORT const char *leakwatch_version(void) {
    return LEAKWATCH_VERSION;
}

LW_EXPORT int leakwatch_enabled(void) {
    int s = atomic_load(&state);
    if (s != NOT_STARTED) return s == RECORDING;
    const char *d = getenv("LEAKWATCH_DISABLE");
    return !(d && (d[0] == '1' || d[0] == 't' || d[0] == 'T' || d[0] == 'y' || d[0] == 'Y'));
}

/* The PyTorch helper's entry points (python/leakwatch/_torch.py). Like
 * leakwatch_step, nothing is recorded before this process's own start. */
static int recording_here(void) {
    return atomic_load_explicit(&state, memory_order_acquire) == RECORDING && owner_pid == getpid();
}

LW_EXPORT int leakwatch_torch_counters(int device, long long allocated, long long reserved,
                                       long long device_free) {
    if (!recording_here()) return 0;
    return lw_growth_torch_counters(device, allocated, reserved, device_free);
}

LW_EXPORT void leakwatch_torch_backward(int entering) {
    if (!recording_here()) return;
    lw_record_backward(entering);
}

LW_EXPORT int leakwatch_torch_info(const char *field, const char *json, const char *message) {
    if (!recording_here()) return -1;
    return lw_torch_info_set(field, json, message);
}
