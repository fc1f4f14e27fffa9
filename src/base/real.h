/* Finding the real functions behind the ones leakwatch interposes.
 *
 * leakwatch exports dlsym, so inside the library every lookup must go through
 * lw_real_dlsym: calling dlsym would come back into our own hook. */
#ifndef LW_REAL_H
#define LW_REAL_H

#include <stdint.h>

/* glibc's dlsym, found with dlvsym (glibc >= 2.34 has no __libc_dlsym). */
void *lw_real_dlsym(void *handle, const char *name);

/* glibc's dlsym itself, for a caller that must tail-call it. */
void *(*lw_real_dlsym_function(void))(void *, const char *);

/* The next definition of name after this library (RTLD_NEXT), cached in *slot.
 * Returns NULL when there is none (for example a runtime symbol in a program
 * that never loaded libcudart). */
void *lw_real_next(void *_Atomic *slot, const char *name);

/* 1 when addr lies in libleakwatch.so itself: such pointers are never wrapped
 * again and such frames are dropped from call stacks. */
int lw_is_own_address(uintptr_t addr);

/* A driver function leakwatch itself calls (cuCtxGetDevice, cuMemGetInfo_v2),
 * noted when the program looks it up, else found in the loaded libcuda.so.1. */
void lw_note_driver_symbol(const char *versioned_name, void *fn);
void *lw_driver_symbol(const char *versioned_name);

#endif
