/* SPDX-License-Identifier: Apache-2.0 */
/* A job on the driver API (libcuda.so.1 linked) that leaks SIZE bytes per
 * step from leak_attach_drv. See attach.h. */
#include "attach.h"

CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t s);
CUresult cuMemFree_v2(CUdeviceptr d);

NOINLINE static int leak_attach_drv(size_t size) {
    CUdeviceptr p = 0;
    return (int)cuMemAlloc_v2(&p, size);
}

NOINLINE static int churn_attach_drv(size_t size) {
    CUdeviceptr p = 0;
    int r = (int)cuMemAlloc_v2(&p, size);
    return r ? r : (int)cuMemFree_v2(p);
}

static int attach_step(long i, size_t size) {
    (void)i;
    return leak_attach_drv(size) | churn_attach_drv(size);
}

int main(int argc, char **argv) {
    CUcontext ctx = NULL;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    return attach_main(argc, argv);
}
