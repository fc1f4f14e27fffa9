/* SPDX-License-Identifier: Apache-2.0 */
/* CPU stand-in for libcurand.so.10 (tests only): the five functions that
 * PyCUDA's _driver extension links (it has NEEDED libcurand.so.10, so without
 * this library `import pycuda.driver` fails). Only pycuda.curandom calls them;
 * there are no quasi-random tables here, so those calls fail cleanly. */
#include <stddef.h>

typedef int curandStatus_t;
#define CURAND_STATUS_SUCCESS 0
#define CURAND_STATUS_NOT_INITIALIZED 101
#define CURAND_STATUS_OUT_OF_RANGE 104

/* cuRAND 10.3.5, the one of CUDA 12.4 (what Debian's PyCUDA is built against). */
curandStatus_t curandGetVersion(int *version) {
    if (version == NULL) return CURAND_STATUS_OUT_OF_RANGE;
    *version = 10305;
    return CURAND_STATUS_SUCCESS;
}

curandStatus_t curandGetDirectionVectors32(void **vectors, int set) {
    if (vectors != NULL) *vectors = NULL;
    return CURAND_STATUS_NOT_INITIALIZED;
}

curandStatus_t curandGetDirectionVectors64(void **vectors, int set) {
    if (vectors != NULL) *vectors = NULL;
    return CURAND_STATUS_NOT_INITIALIZED;
}

curandStatus_t curandGetScrambleConstants32(unsigned int **constants) {
    if (constants != NULL) *constants = NULL;
    return CURAND_STATUS_NOT_INITIALIZED;
}

curandStatus_t curandGetScrambleConstants64(unsigned long long **constants) {
    if (constants != NULL) *constants = NULL;
    return CURAND_STATUS_NOT_INITIALIZED;
}
