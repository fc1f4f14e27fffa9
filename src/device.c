#include "device.h"

#include "real.h"

#include <leakwatch/cuda_api.h>

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
