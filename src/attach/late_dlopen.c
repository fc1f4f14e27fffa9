/* SPDX-License-Identifier: Apache-2.0 */
#include "late_dlopen.h"

#include "patch.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

typedef void *(*dlopen_fn)(const char *, int);
static _Atomic(dlopen_fn) real_dlopen;

int lw_late_dlopen_init(void) {
    if (!atomic_load(&real_dlopen))
        atomic_store(&real_dlopen, (dlopen_fn)lw_real_dlsym(RTLD_NEXT, "dlopen"));
    return atomic_load(&real_dlopen) ? 0 : -1;
}

/* glibc's dlopen takes the caller's RUNPATH and $ORIGIN from its return
 * address: a bare name, or one with '$', must reach it as a tail call (our
 * caller's identity), and its objects are hooked at the worker's next look. A
 * path is opened here, and what it loaded is hooked before it returns. */
__attribute__((optimize("optimize-sibling-calls"), noinline)) void *lw_late_dlopen(const char *file,
                                                                                   int mode) {
    dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
    const char *f = file;
    __asm__("" : "+r"(f));
    if (!f || !strchr(f, '/') || strchr(f, '$') || (mode & RTLD_NOLOAD) || !lw_patch_installed())
        return real(file, mode);
    void *h = real(file, mode);
    if (h) {
        int saved = errno;
        lw_patch_tick();
        errno = saved;
    }
    return h;
}
