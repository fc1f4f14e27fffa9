/* SPDX-License-Identifier: Apache-2.0 */
#include "tracker_mem.h"

#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* -1: the hook is off. Otherwise the allocations still allowed to succeed. */
static _Atomic long fail_after = -1;

void lw_tracker_mem_init(void) {
    const char *v = secure_getenv("LEAKWATCH_TEST_FAIL_ALLOC");
    if (!v) return;
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno == ERANGE || n < 0) {
        lw_log("ignoring LEAKWATCH_TEST_FAIL_ALLOC=\"%.40s\": expected a whole number from 0 to "
               "%ld; no allocation failure is injected",
               v, LONG_MAX);
        return;
    }
    atomic_store(&fail_after, n);
}

/* 1 when this allocation is to fail. A relaxed load on the (rare) way to
 * malloc: new slabs, bucket arrays and sites, not every record. */
static int injected_failure(void) {
    long left = atomic_load_explicit(&fail_after, memory_order_relaxed);
    while (left >= 0) {
        if (left == 0) return 1;
        if (atomic_compare_exchange_weak(&fail_after, &left, left - 1)) return 0;
    }
    return 0;
}

void *lw_tracker_malloc(size_t n) {
    if (injected_failure()) {
        errno = ENOMEM;
        return NULL;
    }
    return malloc(n);
}

void *lw_tracker_calloc(size_t count, size_t size) {
    if (injected_failure()) {
        errno = ENOMEM;
        return NULL;
    }
    return calloc(count, size);
}
