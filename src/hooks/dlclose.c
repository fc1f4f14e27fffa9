/* dlclose: code may go away, and other code may later be mapped at the same
 * addresses. The stack walker caches unwind rules by code address
 * (track/stack.c), so every thread drops its caches at its next capture.
 * The call itself is glibc's, unchanged. */
#include "real.h"
#include "stack.h"

#include <dlfcn.h>

#define LW_EXPORT __attribute__((visibility("default")))

typedef int (*dlclose_fn)(void *);

LW_EXPORT int dlclose(void *handle) {
    static _Atomic(dlclose_fn) real;
    dlclose_fn fn = real;
    if (!fn) {
        fn = (dlclose_fn)lw_real_dlsym(RTLD_NEXT, "dlclose");
        if (!fn) return -1; /* cannot happen with glibc: dlclose is in libc */
        real = fn;
    }
    int rc = fn(handle);
    lw_stack_code_changed();
    return rc;
}
