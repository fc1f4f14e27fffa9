/* SPDX-License-Identifier: Apache-2.0 */
#include "device.h"

#include "real.h"

#include "clock.h"

#include <leakwatch/cuda_api.h>

#include <stdatomic.h>

/* Driver functions, from libcuda.so.1 itself (lw_driver_symbol), which
 * leakwatch keeps loaded from the first lookup on. */
static void *_Atomic fn_get_current, *_Atomic fn_get_device, *_Atomic fn_push, *_Atomic fn_pop,
    *_Atomic fn_mem_info, *_Atomic fn_state, *_Atomic fn_retain, *_Atomic fn_release,
    *_Atomic fn_range;

static void *driver_fn(void *_Atomic *slot, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (!p) {
        p = lw_driver_symbol(name);
        if (p) atomic_store_explicit(slot, p, memory_order_release);
    }
    return p;
}

/* Context -> device, for the few contexts a process has. A context's device
 * never changes; a slot is written once (dev first, then the key). */
#define CTX_SLOTS 32
static void *_Atomic ctx_key[CTX_SLOTS];
static _Atomic int ctx_dev[CTX_SLOTS];
static atomic_flag ctx_adding = ATOMIC_FLAG_INIT;
static _Atomic int last_device = -1;
/* Moves on when the table is forgotten: the threads' own caches go too. */
static _Atomic unsigned ctx_gen;
/* This thread's last context and its device. Initial-exec: one load off
 * the thread pointer, where the default model would cost a __tls_get_addr
 * call per lookup, more than the table scan it saves (16 bytes of the
 * static TLS surplus when the library is loaded by attach, as stack.c's). */
static __thread struct {
    void *ctx;
    int dev;
    unsigned gen;
} mine __attribute__((tls_model("initial-exec")));

static int known_device(void *ctx) {
    for (int i = 0; i < CTX_SLOTS; i++) {
        void *k = atomic_load_explicit(&ctx_key[i], memory_order_acquire);
        if (!k) return -2;
        if (k == ctx) return atomic_load_explicit(&ctx_dev[i], memory_order_relaxed);
    }
    return -2;
}

static void remember_device(void *ctx, int dev) {
    /* Contended or full: the next allocation asks again, nothing worse. */
    if (atomic_flag_test_and_set_explicit(&ctx_adding, memory_order_acquire)) return;
    for (int i = 0; i < CTX_SLOTS; i++) {
        void *k = atomic_load_explicit(&ctx_key[i], memory_order_relaxed);
        if (k == ctx) break;
        if (!k) {
            atomic_store_explicit(&ctx_dev[i], dev, memory_order_relaxed);
            atomic_store_explicit(&ctx_key[i], ctx, memory_order_release);
            break;
        }
    }
    atomic_flag_clear_explicit(&ctx_adding, memory_order_release);
}

uint64_t lw_device_range_size(uint64_t ptr) {
    lw_pfn_cuMemGetAddressRange_v3020 range =
        (lw_pfn_cuMemGetAddressRange_v3020)driver_fn(&fn_range, "cuMemGetAddressRange_v2");
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!range || range(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS) return 0;
    return size;
}

int lw_device_current(void) {
    lw_pfn_cuCtxGetCurrent_v4000 get_current =
        (lw_pfn_cuCtxGetCurrent_v4000)driver_fn(&fn_get_current, "cuCtxGetCurrent");
    CUcontext ctx = NULL;
    /* No context on this thread (or a driver that failed to start): the
     * device is unknown, nothing more. */
    if (!get_current || get_current(&ctx) != CUDA_SUCCESS || !ctx) return -1;
    /* The context this thread keeps using: no table scan and no shared
     * write. */
    unsigned gen = atomic_load_explicit(&ctx_gen, memory_order_relaxed);
    if (ctx == mine.ctx && gen == mine.gen) return mine.dev;
    int dev = known_device(ctx);
    if (dev == -2) {
        lw_pfn_cuCtxGetDevice_v2000 get_device =
            (lw_pfn_cuCtxGetDevice_v2000)driver_fn(&fn_get_device, "cuCtxGetDevice");
        CUdevice d = -1;
        if (!get_device || get_device(&d) != CUDA_SUCCESS || d < 0) return -1;
        remember_device(ctx, d);
        dev = d;
    }
    if (atomic_load_explicit(&last_device, memory_order_relaxed) != dev)
        atomic_store_explicit(&last_device, dev, memory_order_relaxed);
    mine.ctx = ctx;
    mine.dev = dev;
    mine.gen = gen;
    return dev;
}

static _Atomic int64_t dev_free = -1, dev_total = -1;
static _Atomic uint64_t meminfo_ns;

/* The reading is taken in the device's primary context, and only while that
 * context is active (the program holds it, as the runtime does): retaining
 * an active primary context creates nothing, and our reference keeps it
 * valid while we use it, whatever the program does meanwhile. A context
 * handle remembered from the program's thread could have been destroyed
 * since; a primary context retained when inactive would be created. */
void lw_device_sample(void) {
    int dev = atomic_load_explicit(&last_device, memory_order_relaxed);
    if (dev < 0) return;
    uint64_t now = lw_now_coarse_ns(), then = atomic_load(&meminfo_ns);
    if (then && now - then < 1000000000ull) return;
    atomic_store(&meminfo_ns, now ? now : 1);
    lw_pfn_cuDevicePrimaryCtxGetState_v7000 state =
        (lw_pfn_cuDevicePrimaryCtxGetState_v7000)driver_fn(&fn_state, "cuDevicePrimaryCtxGetState");
    lw_pfn_cuDevicePrimaryCtxRetain_v7000 retain =
        (lw_pfn_cuDevicePrimaryCtxRetain_v7000)driver_fn(&fn_retain, "cuDevicePrimaryCtxRetain");
    lw_pfn_cuDevicePrimaryCtxRelease_v11000 release =
        (lw_pfn_cuDevicePrimaryCtxRelease_v11000)driver_fn(&fn_release,
                                                           "cuDevicePrimaryCtxRelease_v2");
    lw_pfn_cuCtxPushCurrent_v4000 push =
        (lw_pfn_cuCtxPushCurrent_v4000)driver_fn(&fn_push, "cuCtxPushCurrent_v2");
    lw_pfn_cuCtxPopCurrent_v4000 pop =
        (lw_pfn_cuCtxPopCurrent_v4000)driver_fn(&fn_pop, "cuCtxPopCurrent_v2");
    lw_pfn_cuMemGetInfo_v3020 info =
        (lw_pfn_cuMemGetInfo_v3020)driver_fn(&fn_mem_info, "cuMemGetInfo_v2");
    if (!state || !retain || !release || !push || !pop || !info) return;
    unsigned int flags = 0;
    int active = 0;
    if (state(dev, &flags, &active) != CUDA_SUCCESS || !active) return;
    CUcontext ctx = NULL;
    if (retain(&ctx, dev) != CUDA_SUCCESS) return;
    if (push(ctx) == CUDA_SUCCESS) {
        size_t fr = 0, total = 0;
        if (info(&fr, &total) == CUDA_SUCCESS) {
            atomic_store(&dev_free, (int64_t)fr);
            atomic_store(&dev_total, (int64_t)total);
        }
        CUcontext popped = NULL;
        pop(&popped);
    }
    release(dev);
}

void lw_device_sample_now(void) {
    atomic_store(&meminfo_ns, 0);
    lw_device_sample();
}

int lw_device_have_reading(void) {
    return atomic_load(&dev_total) >= 0;
}

void lw_device_last_mem(int64_t *free_bytes, int64_t *total_bytes) {
    *free_bytes = atomic_load(&dev_free);
    *total_bytes = atomic_load(&dev_total);
}

void lw_device_note_mem(int64_t free_bytes, int64_t total_bytes) {
    if (free_bytes < 0 || total_bytes <= 0) return;
    atomic_store(&dev_free, free_bytes);
    atomic_store(&dev_total, total_bytes);
}

void lw_device_forget(void) {
    atomic_store(&dev_free, -1);
    atomic_store(&dev_total, -1);
    atomic_store(&meminfo_ns, 0);
    /* A child's contexts are not its parent's (CUDA does not survive fork). */
    atomic_store(&last_device, -1);
    for (int i = 0; i < CTX_SLOTS; i++)
        atomic_store(&ctx_key[i], NULL);
    atomic_flag_clear(&ctx_adding);
    atomic_fetch_add(&ctx_gen, 1);
}
