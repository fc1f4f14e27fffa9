/* SPDX-License-Identifier: Apache-2.0 */
/* The library is built with hidden visibility: only what is marked LW_EXPORT
 * (the CUDA functions it wraps, dlsym, the leakwatch_* API) is exported. */
#ifndef LW_EXPORT_H
#define LW_EXPORT_H

#define LW_EXPORT __attribute__((visibility("default")))

#endif
