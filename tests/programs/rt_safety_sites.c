/* SPDX-License-Identifier: Apache-2.0 */
/* Allocations from many distinct call stacks: one allocation at each
 * recursion depth 1..DEPTHS (each depth is a different stack).
 *
 *   rt_safety_sites DEPTHS */
#include "safety.h"

NOINLINE static void *descend(int depth) {
    void *p = NULL;
    if (depth > 1) return descend(depth - 1);
    CHECK(cudaMalloc(&p, 4096));
    return p;
}

int main(int argc, char **argv) {
    long depths = arg_long(argc, argv, 1, 40);
    for (int d = 1; d <= depths; d++)
        descend(d);
    printf("ok\n");
    return 0;
}
