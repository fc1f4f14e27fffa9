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

static inline uint64_t lw_hash_words(const uintptr_t *w, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 0x100000001b3ull + (h >> 29);
    return lw_mix64(h);
}

#endif
