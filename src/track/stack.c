#include "stack.h"

#include "real.h"

#include <execinfo.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

int lw_stack_capture(uintptr_t *ips, int max) {
    /* Our own frames (the hook, the recorder) sit on top: capture a few more
     * than asked and drop them. */
    enum { OWN_FRAMES_MAX = 8 };
    void *buf[LW_STACK_MAX + OWN_FRAMES_MAX];
    if (max > LW_STACK_MAX) max = LW_STACK_MAX;
#ifdef __SANITIZE_THREAD__
    /* Under ThreadSanitizer (make check-tsan) only: libunwind frees its
     * per-thread trace cache from a thread-specific-data destructor that runs
     * after TSan has torn the exiting thread down, and crashes there. glibc's
     * backtrace keeps no such state. */
    int n = backtrace(buf, max + OWN_FRAMES_MAX);
#else
    int n = unw_backtrace(buf, max + OWN_FRAMES_MAX);
#endif
    if (n <= 0) return 0;
    int skip = 0;
#ifdef __SANITIZE_THREAD__
    /* The sanitizer's backtrace interceptor is the innermost frame. */
    while (skip < n && !lw_is_own_address((uintptr_t)buf[skip]))
        skip++;
#endif
    while (skip < n && lw_is_own_address((uintptr_t)buf[skip]))
        skip++;
    int out = 0;
    for (int i = skip; i < n && out < max; i++)
        ips[out++] = (uintptr_t)buf[i];
    return out;
}
