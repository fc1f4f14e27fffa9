/* SPDX-License-Identifier: Apache-2.0 */
/* dlclose is interposed only to count: the call is glibc's, unchanged, and
 * the epoch moves on after it (code_epoch.h). It lives in the loader layer,
 * below every layer that may call dlclose, so that their own calls count too
 * (make check-layers fails if a base file calls it). */
#include "code_epoch.h"

#include "real_dlsym.h"

#include <dlfcn.h>

_Atomic unsigned lw_code_epoch_value;

typedef int (*dlclose_fn)(void *);

__attribute__((visibility("default"))) int dlclose(void *handle) {
    static _Atomic(dlclose_fn) real;
    dlclose_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (!fn) {
        fn = (dlclose_fn)lw_real_dlsym(RTLD_NEXT, "dlclose");
        if (!fn) return -1; /* cannot happen with glibc: dlclose is in libc */
        atomic_store_explicit(&real, fn, memory_order_release);
    }
    int rc = fn(handle);
    atomic_fetch_add_explicit(&lw_code_epoch_value, 1, memory_order_acq_rel);
    return rc;
}
