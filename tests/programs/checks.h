/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of the stand-in test programs (drv_stubcheck, drv_clients,
 * dl_cuda12): each failed check is printed with its place and counted in
 * `failures`; the program exits non-zero when any failed. */
#ifndef LW_TEST_PROGRAM_CHECKS_H
#define LW_TEST_PROGRAM_CHECKS_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* a == b as integers, both values printed when not. */
#define EQ(a, b)                                                                                   \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, a_, b_);                                                               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
