#include "device.h"

#include "real.h"

#include "clock.h"

#include <leakwatch/cuda_api.h>

#include <stdatomic.h>

int lw_device_current(void) {
    lw_pfn_cuCtxGetDevice_v2000 fn =
        (lw_pfn_cuCtxGetDevice_v2000)lw_driver_symbol("cuCtxGetDevice");
    CUdevice dev = -1;
    /* Can fail on a thread without a context (seen in other interposers):
     * then the device is unknown, nothing more. */
    if (!fn || fn(&dev) != CUDA_SUCCESS || dev < 0) return -1;
    return dev;
}

int lw_device_mem_info(size_t *free_bytes, size_t *total_bytes) {
    lw_pfn_cuMemGetInfo_v3020 fn = (lw_pfn_cuMemGetInfo_v3020)lw_driver_symbol("cuMemGetInfo_v2");
    if (!fn || fn(free_bytes, total_bytes) != CUDA_SUCCESS) return -1;
    return 0;
}

static _Atomic int64_t dev_free = -1, dev_total = -1;
static _Atomic uint64_t meminfo_ns;

void lw_device_tick(void) {
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

void lw_device_last_mem(int64_t *free_bytes, int64_t *total_bytes) {
    *free_bytes = atomic_load(&dev_free);
    *total_bytes = atomic_load(&dev_total);
}

void lw_device_forget(void) {
    atomic_store(&dev_free, -1);
    atomic_store(&dev_total, -1);
    atomic_store(&meminfo_ns, 0);
}
