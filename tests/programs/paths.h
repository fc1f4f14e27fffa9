/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the test programs: each reaches CUDA one way, leaks a known
 * number of bytes from a function named leak_<path>, and allocates and frees
 * more from churn_<path>. The integration tests check the report against it. */
#ifndef LW_TEST_PATHS_H
#define LW_TEST_PATHS_H

#include <leakwatch/cuda_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, rc_);            \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static inline long arg_long(int argc, char **argv, int i, long dflt) {
    return argc > i ? strtol(argv[i], NULL, 0) : dflt;
}

#endif
