/* SPDX-License-Identifier: Apache-2.0 */
/* Growth: follows the floor of live memory from step to step in its tracked
 * series (tracked.h: the device's live bytes, pinned host memory, PyTorch's
 * tensors per device, the phases without marks), decides which one the
 * run's verdict comes from, and has the growth attributed to call sites
 * (attribution.h).
 *
 * Steps come from leakwatch_step() (marker), or, without marks, from time
 * intervals that the worker closes every LEAKWATCH_INTERVAL_MS (time). A step
 * mark only queues a point (lw_growth_step); the worker takes the queue in
 * (lw_growth_update). The hot path only updates the floor and peak counters
 * (totals.c) and each site's floor (record.c). No thread and no I/O here. */
#ifndef LW_GROWTH_H
#define LW_GROWTH_H

#include "attribution.h"
#include "cycles.h"
#include "detector.h"
#include "series.h"

#include <stdint.h>

struct lw_site;

/* A fresh series and verdict (at start, and in a forked child's start). */
void lw_growth_init(void);

/* A step mark from a training thread (after lw_step_mark): queues the floor
 * and peak since the last mark; wakes the worker only for the first marks
 * and when the queue is half full (it takes the queue in on its own
 * schedule otherwise: lw_growth_unmarked_tick). */
void lw_growth_step(void);
/* How many times a step mark woke the worker (tests). */
uint64_t lw_growth_wakes(void);

/* The worker's loop: waits until a step mark wakes it or the deadline passes
 * (on lw_run_now_ns()'s clock: CLOCK_MONOTONIC, or the test clock); returns
 * 1 when the deadline passed. */
struct timespec;
int lw_growth_wait(const struct timespec *deadline);
/* Wakes the worker's wait (the test clock moved). */
void lw_growth_wake_sampler(void);
/* Takes in the queued steps; with close_interval (time mode, the interval
 * ran out) closes one time interval as a step. */
void lw_growth_update(int close_interval);

/* A marked run's phases without marks (a validation loop): the worker wakes
 * every lw_growth_unmarked_period() seconds (0: no need) and calls
 * lw_growth_unmarked_tick(), which takes in the queued marks and adds a
 * point once no mark has come for a while. Returns the marks it took in:
 * the worker then goes on as if a mark had woken it (lw_growth_update: the
 * evaluations and the live line), so that marks that no longer wake it are
 * still judged within half a step's time. */
double lw_growth_unmarked_period(void);
int lw_growth_unmarked_tick(void);

/* The PyTorch helper marks a call of the job's outermost nn.Module as a step
 * (no optimizer): the time without marks is no phase of work, and a clean
 * series of it no longer turns an undecided verdict into "no leak". */
void lw_growth_steps_are_calls(void);

/* Takes in the steps not yet seen and evaluates once more (before a report). */
void lw_growth_flush(void);

/* The end of the run (the exit or end-signal report): takes in the steps
 * not yet seen and decides on all the evidence. A release after the last
 * step mark (or in the last intervals of a run without marks) down to about
 * the start-up level does not erase growth established before it: the
 * verdict and sites from before the release are kept, and the release is
 * reported (released_bytes). A leak the last evaluation decides is announced
 * even without LEAKWATCH_CONFIRM evaluations in a row (lw_decision_final). */
void lw_growth_finish(void);

/* 1 once each time a confirmed leak has run long enough to be announced on
 * stderr (output/warning.c says it, with its own rate limit). */
int lw_growth_take_warning(void);
/* 1 (once per call that finds it) when a series announced a leak that is
 * not yet said live (lw_tracked_alarm): the live line "growing, not yet a
 * leak" (warning.c). */
int lw_growth_take_growing(void);

typedef struct {
    lw_verdict verdict; /* as announced: a leak needs LEAKWATCH_CONFIRM agreeing evaluations */
    /* Which series the verdict above comes from: "live_bytes" (the CUDA
     * allocations leakwatch records itself: segments under PyTorch's own
     * allocator) or "torch_allocated" (PyTorch's memory_allocated() per
     * device, from leakwatch_torch_counters; primary once it has points). */
    const char *signal;
    int signal_device; /* torch_allocated: the device whose series decided; -1 otherwise */
    /* The kind of memory the verdict is about: "device" (device and managed
     * memory), or "pinned_host" when a leak of pinned host memory (its own
     * series, signal "pinned_host") is the run's leak and the device gives
     * none. */
    const char *memory_kind;
    /* pinned_host: the host's available and total memory, read now (what
     * `available` is then); -1: unknown or not asked. */
    int64_t host_available, host_total;
    lw_growth last; /* the latest evaluation */
    const char *step_source;
    uint64_t steps;
    int64_t first_leak_step; /* step the current leak verdict was reached; -1: none */
    uint64_t withdrawn;      /* leak verdicts reached, then withdrawn (growth stopped) */
    uint64_t evaluations;
    int64_t device_free, device_total; /* -1: unknown */
    /* What the out-of-memory projection counts as available (-1: unknown):
     * device_free, or under PyTorch's signal, that device's free memory plus
     * what PyTorch's cache holds unused. */
    int64_t available;
    double interval_s; /* time mode: seconds per interval */
    uint32_t bin_width;
    char reason[160]; /* why `verdict`: never contradicts it */
    /* Set by lw_growth_finish (-1 / 0 before it): the bytes released after
     * the last step (or in the last intervals) when the run ended within a
     * release, and whether the verdict was decided at the end, on all data. */
    int64_t released_bytes;
    int decided_at_exit;
    int growing; /* an announced leak not yet said while the run goes on: verdict
                    inconclusive, reason "growing, not yet a leak (...)" */
    /* A marked run's phases without marks (growth.h, gap): the intervals
     * closed in them, and whether their series gave the verdict (then
     * step_source is "time", steps and last are theirs). */
    uint64_t unmarked_intervals;
    int from_unmarked;
    /* Growth released at each cycle's end (cycles.h) in the series the
     * verdict comes from (cycles_signal, NULL: none); lw_cycles_get reads
     * it. */
    lw_cycles cycles_raw;
    const char *cycles_signal;
} lw_growth_state;

/* A consistent copy of the detector's state and, if bins is not NULL, of the
 * floor series (up to max bins; *nbins set). */
void lw_growth_get(lw_growth_state *st, lw_bin *bins, int max, int *nbins);

/* Time and steps to out-of-memory at the current rate (lw_answer_oom), NAN
 * unless the verdict is a leak and the device's free memory is known. Every
 * output's projection comes from here. */
void lw_growth_oom(const lw_growth_state *g, double *seconds, double *steps);
/* The device ran out of memory (output/anatomy.c): from then on no
 * projection of device memory (a run that died of it never forecasts it). */
void lw_growth_note_oom(void);

/* ---- PyTorch's own counters, per device (leakwatch_torch_counters) ----
 * device >= 0: bytes of live tensors (torch.cuda.memory_allocated) and
 * reserved bytes (memory_reserved) at the step just marked; device_free: the
 * driver's free bytes on that device, or -1 when not read this time. Queued
 * like a step mark (no evaluation on the caller's thread). Returns bit 0 (1)
 * when the latest evaluation of that device's series sees growth (confirmed
 * or not): the helper's cue to open a diagnosis window; bit 1 (2) when a
 * pinned host leak's sites are judged (the run's leak is pinned host memory
 * and a leaking site was found): the cue to look for what keeps that site's
 * blocks (leakwatch_torch_host_blocks). */
int lw_growth_torch_counters(int device, int64_t allocated, int64_t reserved, int64_t device_free);

#define LW_TORCH_MAX_DEVICES 64
typedef struct {
    int device;
    lw_verdict verdict; /* confirmed as for the global series */
    lw_growth last;
    uint64_t points;
    int64_t first_leak_step;
    int64_t allocated, reserved, device_free; /* latest; device_free -1: unknown */
    uint32_t bin_width;
    char reason[160]; /* why `verdict`: never contradicts it */
} lw_torch_device_state;

/* The devices with tensor series, in device order; bins (if not NULL) gets
 * up to max bins of device k's series at bins[k * max] (nbins[k] set).
 * Returns how many devices. */
int lw_growth_torch_get(lw_torch_device_state *out, int max_devices, lw_bin *bins, int max,
                        int *nbins);

/* Pinned host memory (cudaHostAlloc and friends): host RAM, never in the
 * device floor; its own series and verdict. */
typedef struct {
    int seen; /* any pinned host memory held at a step's end */
    lw_verdict verdict;
    lw_growth last;
    uint64_t points;
    char reason[160]; /* why `verdict`: never contradicts it */
} lw_host_state;
void lw_growth_host_get(lw_host_state *out, lw_bin *bins, int max, int *nbins);

/* Runs fn for each tracked site under the sampler's lock. */
void lw_growth_each_site(void (*fn)(struct lw_site *s, const lw_site_track *t, void *arg),
                         void *arg);

/* A forked child's first CUDA call: forget the parent's series and verdict. */
void lw_growth_forget_parent(void);

/* Fork safety (lifecycle.c): no lock of ours held across fork. */
void lw_growth_lock_for_fork(void);
void lw_growth_unlock_after_fork(void);

#endif
