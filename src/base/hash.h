/* SPDX-License-Identifier: Apache-2.0 */
/* Fast hashing of machine words (pointers, instruction addresses). */
#ifndef LW_HASH_H
#define LW_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t lw_mix64(uint64_t x) {
    /* splitmix64's finaliser: every input bit affects every output bit. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Four independent lanes: a single multiply chain costs its full latency per
 * word; four overlap (bench/perf/FINDINGS.md). */
static inline uint64_t lw_hash_lane(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static inline uint64_t lw_hash_words(const uintptr_t *w, size_t n) {
    uint64_t h0 = 0x9e3779b97f4a7c15ull ^ n, h1 = 0xc2b2ae3d27d4eb4full, h2 = 0x165667b19e3779f9ull,
             h3 = 0x27d4eb2f165667c5ull;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h0 = lw_hash_lane(h0, w[i]);
        h1 = lw_hash_lane(h1, w[i + 1]);
        h2 = lw_hash_lane(h2, w[i + 2]);
        h3 = lw_hash_lane(h3, w[i + 3]);
    }
    for (; i < n; i++)
        h0 = lw_hash_lane(h0, w[i]);
    return lw_mix64(h0 ^ (h1 << 17 | h1 >> 47) ^ (h2 << 31 | h2 >> 33) ^ (h3 << 47 | h3 >> 17));
}

#endif
