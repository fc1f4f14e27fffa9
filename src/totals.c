#include "totals.h"

static const char *const kind_names[LW_KIND_COUNT] = {"device", "managed", "pinned_host",
                                                      "physical"};

const char *lw_kind_name(lw_kind k) {
    return k < LW_KIND_COUNT ? kind_names[k] : "unknown";
}

/* Peaks need the instantaneous sum at each level, so each level keeps its own
 * counter rather than summing cells at report time. */
static lw_counter all_counter;
static lw_counter by_kind[LW_KIND_COUNT];
static lw_counter by_dev[LW_MAX_DEVICES + 1];
static lw_counter cells[LW_MAX_DEVICES + 1][LW_KIND_COUNT];
static _Atomic uint64_t devices_seen;
/* Floor and peak of the step in progress (see sampler.c). */
static _Atomic int64_t step_floor;
static _Atomic int64_t step_peak;
static _Atomic uint64_t unknown_frees;
static _Atomic int64_t mapped_bytes;

static inline int dev_index(int device) {
    return device >= 0 && device < LW_MAX_DEVICES ? device + 1 : 0;
}

static inline void raise_peak(lw_counter *c, int64_t live) {
    int64_t peak = atomic_load_explicit(&c->peak_live_bytes, memory_order_relaxed);
    while (live > peak &&
           !atomic_compare_exchange_weak_explicit(&c->peak_live_bytes, &peak, live,
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

static inline void count_alloc(lw_counter *c, uint64_t size) {
    atomic_fetch_add_explicit(&c->alloc_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->live_count, 1, memory_order_relaxed);
    int64_t live = atomic_fetch_add_explicit(&c->live_bytes, (int64_t)size, memory_order_relaxed) +
                   (int64_t)size;
    raise_peak(c, live);
}

static inline void count_free(lw_counter *c, uint64_t size) {
    atomic_fetch_add_explicit(&c->free_count, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->live_count, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c->live_bytes, (int64_t)size, memory_order_relaxed);
}

void lw_totals_alloc(int device, lw_kind kind, uint64_t size) {
    int d = dev_index(device);
    uint64_t bit = 1ull << d;
    if (!(atomic_load_explicit(&devices_seen, memory_order_relaxed) & bit))
        atomic_fetch_or(&devices_seen, bit);
    count_alloc(&cells[d][kind], size);
    count_alloc(&by_dev[d], size);
    count_alloc(&by_kind[kind], size);
    count_alloc(&all_counter, size);
    int64_t live = atomic_load_explicit(&all_counter.live_bytes, memory_order_relaxed);
    int64_t p = atomic_load_explicit(&step_peak, memory_order_relaxed);
    while (live > p && !atomic_compare_exchange_weak_explicit(
                           &step_peak, &p, live, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void lw_totals_free(int device, lw_kind kind, uint64_t size) {
    int d = dev_index(device);
    count_free(&cells[d][kind], size);
    count_free(&by_dev[d], size);
    count_free(&by_kind[kind], size);
    count_free(&all_counter, size);
    /* Only a free can lower the floor. */
    int64_t live = atomic_load_explicit(&all_counter.live_bytes, memory_order_relaxed);
    int64_t f = atomic_load_explicit(&step_floor, memory_order_relaxed);
    while (live < f && !atomic_compare_exchange_weak_explicit(
                           &step_floor, &f, live, memory_order_relaxed, memory_order_relaxed)) {
    }
}

void lw_totals_take_floor_peak(int64_t *floor, int64_t *peak) {
    int64_t live = atomic_load(&all_counter.live_bytes);
    *floor = atomic_exchange(&step_floor, live);
    *peak = atomic_exchange(&step_peak, live);
    if (*floor > live) *floor = live;
    if (*peak < live) *peak = live;
}

void lw_totals_failed(int device, lw_kind kind) {
    int d = dev_index(device);
    uint64_t bit = 1ull << d;
    if (!(atomic_load_explicit(&devices_seen, memory_order_relaxed) & bit))
        atomic_fetch_or(&devices_seen, bit);
    atomic_fetch_add_explicit(&cells[d][kind].failed_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&by_dev[d].failed_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&by_kind[kind].failed_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&all_counter.failed_count, 1, memory_order_relaxed);
}

void lw_totals_unknown_free(void) {
    atomic_fetch_add(&unknown_frees, 1);
}
void lw_totals_mapped(int64_t delta) {
    atomic_fetch_add(&mapped_bytes, delta);
}
uint64_t lw_totals_unknown_frees(void) {
    return atomic_load(&unknown_frees);
}
int64_t lw_totals_mapped_bytes(void) {
    return atomic_load(&mapped_bytes);
}
uint64_t lw_totals_devices_seen(void) {
    return atomic_load(&devices_seen);
}

static void zero_counter(lw_counter *c) {
    atomic_store(&c->alloc_count, 0);
    atomic_store(&c->free_count, 0);
    atomic_store(&c->failed_count, 0);
    atomic_store(&c->live_bytes, 0);
    atomic_store(&c->live_count, 0);
    atomic_store(&c->peak_live_bytes, 0);
}

void lw_totals_reset(void) {
    zero_counter(&all_counter);
    for (int k = 0; k < LW_KIND_COUNT; k++)
        zero_counter(&by_kind[k]);
    for (int d = 0; d <= LW_MAX_DEVICES; d++) {
        zero_counter(&by_dev[d]);
        for (int k = 0; k < LW_KIND_COUNT; k++)
            zero_counter(&cells[d][k]);
    }
    atomic_store(&devices_seen, 0);
    atomic_store(&step_floor, 0);
    atomic_store(&step_peak, 0);
    atomic_store(&unknown_frees, 0);
    atomic_store(&mapped_bytes, 0);
}

lw_counts lw_totals_get(int device, lw_kind kind) {
    const lw_counter *c;
    if (device == -2)
        c = kind == LW_KIND_COUNT ? &all_counter : &by_kind[kind];
    else
        c = kind == LW_KIND_COUNT ? &by_dev[dev_index(device)] : &cells[dev_index(device)][kind];
    lw_counts r = {atomic_load(&c->alloc_count),  atomic_load(&c->free_count),
                   atomic_load(&c->failed_count), atomic_load(&c->live_bytes),
                   atomic_load(&c->live_count),   atomic_load(&c->peak_live_bytes)};
    return r;
}
