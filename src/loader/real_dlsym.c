/* SPDX-License-Identifier: Apache-2.0 */
/* glibc's own dlsym (real_dlsym.h), in a file of its own: real.c calls the
 * exported dlclose (code_epoch.c), and code_epoch.c finds glibc's dlclose
 * with this file's lw_real_dlsym, so the calls go one way (real.c ->
 * code_epoch.c -> real_dlsym.c), with no circle. */
#include "real_dlsym.h"

#include "arch.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym_fn;

static void *no_dlsym(void *handle, const char *name) {
    return NULL;
}

/* Runs inside our dlsym, which a sanitizer runtime calls before it has set
 * itself up: no instrumentation here. */
__attribute__((no_sanitize_address, no_sanitize("undefined"), no_sanitize("thread"))) dlsym_fn
lw_real_dlsym_function(void) {
    dlsym_fn fn = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
    if (!fn) {
        /* dlvsym is not interposed, so this cannot recurse. */
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!fn) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", LW_ARCH_GLIBC_BASE);
        if (!fn) return no_dlsym;
        atomic_store_explicit(&real_dlsym_fn, fn, memory_order_release);
    }
    return fn;
}

void *lw_real_dlsym(void *handle, const char *name) {
    return lw_real_dlsym_function()(handle, name);
}
