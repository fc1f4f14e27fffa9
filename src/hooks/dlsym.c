/* dlsym: where libraries that load libcuda.so.1 themselves (the CUDA runtime,
 * static or shared, and PyTorch before 2.5) find the driver's functions.
 *
 * Every other lookup must be exactly glibc's. For RTLD_NEXT that means glibc
 * must see our caller's return address, not ours (RTLD_NEXT is "next after the
 * object that called dlsym"): so this function ends in a tail call to the real
 * dlsym, compiled without instrumentation that could prevent one. Lookups
 * with RTLD_NEXT are never wrapped: they come from other interposers, which
 * want the next function, not ours. */
#include "hooks.h"
#include "real.h"

#include <dlfcn.h>

#define LW_EXPORT __attribute__((visibility("default")))

typedef void *(*dlsym_fn)(void *, const char *);

LW_EXPORT __attribute__((optimize("optimize-sibling-calls"), no_sanitize_address,
                         no_sanitize("undefined"), no_sanitize("thread"))) void *
dlsym(void *handle, const char *name) {
    /* glibc declares name nonnull; a buggy caller may still pass NULL, and
     * that must reach glibc, not crash in here. Hide it from the optimiser. */
    const char *n = name;
    __asm__("" : "+r"(n));
    if (handle == RTLD_NEXT || !n || !lw_maybe_cuda_name(n)) {
        dlsym_fn real = (dlsym_fn)lw_real_dlsym_function();
        return real(handle, name); /* tail call: keeps the caller's identity */
    }
    void *fn = lw_real_dlsym(handle, name);
    /* Our own export answered (RTLD_DEFAULT finds us first). If nothing real
     * stands behind it, say so, as the process would without us: programs
     * probe for CUDA this way. */
    if (fn && lw_is_own_address((uintptr_t)fn)) return lw_real_dlsym(RTLD_NEXT, name) ? fn : NULL;
    return lw_wrap_by_name(name, fn);
}
