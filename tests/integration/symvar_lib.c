/* SPDX-License-Identifier: Apache-2.0 */
/* One library built twice (VARIANT 1 and 2, libsymvar1.so and
 * libsymvar2.so): the same code at the same offsets under other names, so
 * that one loaded where the other was unloaded puts another function's name
 * at the same address. test_symbols checks that the shared symbol cache is
 * renewed at dlclose (symbolize.c). */
#include <stdint.h>

#if VARIANT == 1
#define NAME symvar_first_one
#else
#define NAME symvar_other_two
#endif

__attribute__((noinline, visibility("default"))) int NAME(int x) {
    __asm__ volatile("" : "+r"(x));
    return x * 3 + 1;
}

/* An address inside NAME, as a return address would be (one past). */
__attribute__((visibility("default"))) uintptr_t symvar_probe(void) {
    return (uintptr_t)&NAME + 1;
}

/* A function only .symtab names (not exported): a stripped copy of the
 * library has no name for it, in its .dynsym or from dladdr. */
__attribute__((noinline)) static int symvar_unexported(int x) {
    __asm__ volatile("" : "+r"(x));
    return x * 5 + 2;
}

/* An address inside symvar_unexported, as symvar_probe's. */
__attribute__((visibility("default"))) uintptr_t symvar_unexported_probe(void) {
    return (uintptr_t)&symvar_unexported + 1;
}

/* Code under an exported symbol without a type (as hand-written assembly
 * often has): the symbol tables' reader names functions only, dladdr names
 * it (symbolize.c's fallback). Never run: only its address is used. */
__asm__(".text\n"
        ".globl symvar_untyped\n"
        "symvar_untyped:\n"
        ".skip 32\n"
        ".size symvar_untyped, 32\n");
extern const char symvar_untyped[];

__attribute__((visibility("default"))) uintptr_t symvar_untyped_probe(void) {
    return (uintptr_t)symvar_untyped + 8;
}
