/* SPDX-License-Identifier: Apache-2.0 */
/* Many distinct call sites with deep stacks, for a large report: N
 * allocations, each from a distinct stack (the bits of its number pick one of
 * two call sites at each of 15 levels, innermost), under PAD plain levels.
 *
 *   rt_safety_manysites N [PAD]   N up to 32768 */
#include "safety.h"

static long pad_levels;

NOINLINE static void bits(int level, unsigned n);

NOINLINE static void bit0(int level, unsigned n) {
    bits(level + 1, n);
    __asm__ volatile("");
}
NOINLINE static void bit1(int level, unsigned n) {
    bits(level + 1, n);
    __asm__ volatile("");
}

NOINLINE static void bits(int level, unsigned n) {
    if (level == 15) {
        void *p;
        CHECK(cudaMalloc(&p, 256));
        return;
    }
    if (n >> level & 1)
        bit1(level, n);
    else
        bit0(level, n);
    __asm__ volatile("");
}

NOINLINE static void pad(long depth, unsigned n) {
    if (depth > 0)
        pad(depth - 1, n);
    else
        bits(0, n);
    __asm__ volatile("");
}

int main(int argc, char **argv) {
    long count = arg_long(argc, argv, 1, 1000);
    pad_levels = arg_long(argc, argv, 2, 100);
    for (long i = 0; i < count && i < 32768; i++)
        pad(pad_levels, (unsigned)i);
    printf("ok\n");
    return 0;
}
