/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the rt_safety_* programs (tests/integration/test_safety.c): the
 * runtime calls they make, and leakwatch's own functions found at run time,
 * so that each program also runs without the shim. */
#ifndef LW_TEST_SAFETY_H
#define LW_TEST_SAFETY_H

#include "paths.h"

#include <dlfcn.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

/* leakwatch_step / leakwatch_dump when the shim is loaded; else nothing. */
static inline void lw_call(const char *name) {
    void (*fn)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, name);
    if (fn) fn();
}

#endif
