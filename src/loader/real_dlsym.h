/* SPDX-License-Identifier: Apache-2.0 */
/* glibc's own dlsym, the root of every lookup inside the library.
 *
 * leakwatch exports dlsym, so inside the library every lookup must go through
 * lw_real_dlsym: calling dlsym would come back into our own hook. (real.h
 * includes this header: its users need not name it.) */
#ifndef LW_REAL_DLSYM_H
#define LW_REAL_DLSYM_H

/* glibc's dlsym, found with dlvsym (glibc >= 2.34 has no __libc_dlsym). */
void *lw_real_dlsym(void *handle, const char *name);

/* glibc's dlsym itself, for a caller that must tail-call it. */
void *(*lw_real_dlsym_function(void))(void *, const char *);

#endif
