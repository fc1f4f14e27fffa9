/* SPDX-License-Identifier: Apache-2.0 */
/* A program of our own linked to NVIDIA's real CUDA runtime (the toolkit's
 * libcudart.so, or libcudart_static.a as realstatic_main): it makes the calls
 * a job starts with and prints what each returned. On a stand-in driver the
 * real runtime fails its start; the tests check that the output is the same
 * with leakwatch as without it. */
#include "fake_common.h"

#include <stdio.h>

int main(void) {
    int dv = -1, rv = -1, n = -1;
    void *p = NULL, *q = NULL;
    cudaError_t e_dv = cudaDriverGetVersion(&dv);
    cudaError_t e_rv = cudaRuntimeGetVersion(&rv);
    cudaError_t e_n = cudaGetDeviceCount(&n);
    cudaError_t e_m = cudaMalloc(&p, 1 << 20);
    cudaError_t e_f = cudaFree(p);
    cudaError_t e_a = cudaMallocAsync(&q, 4096, NULL);
    cudaError_t e_h = cudaMallocHost(&q, 4096);
    cudaError_t e_l = cudaGetLastError();
    printf("driver_version=%d (%d) runtime_version=%d (%d) devices=%d (%d) malloc=%d free=%d "
           "async=%d host=%d last=%d\n",
           dv, e_dv, rv, e_rv, n, e_n, e_m, e_f, e_a, e_h, e_l);
    return 0;
}
