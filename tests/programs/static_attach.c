/* SPDX-License-Identifier: Apache-2.0 */
/* A job with the CUDA runtime linked in statically that makes its first CUDA
 * call only after GO_FILE appears (an attach before it sees everything; one
 * after it is refused: the runtime has found the driver's functions by
 * then). Leaks SIZE bytes per step from leak_attach_static. See attach.h. */
#include "attach.h"

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

NOINLINE static int leak_attach_static(size_t size) {
    void *p = NULL;
    return (int)cudaMalloc(&p, size);
}

static int attach_step(long i, size_t size) {
    (void)i;
    return leak_attach_static(size);
}

int main(int argc, char **argv) {
    return attach_main(argc, argv);
}
