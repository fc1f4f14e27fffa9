/* Native call stacks: instruction addresses only, captured with libunwind's
 * unw_backtrace (the fast path: no syscalls, ~9 ns a frame). Names are found
 * at report time (symbolize.c), never here. */
#ifndef LW_STACK_H
#define LW_STACK_H

#include <stdint.h>

#define LW_STACK_MAX 256

/* Fills ips with up to max return addresses, innermost first, leaving out
 * leakwatch's own frames. Returns the count (0 when unwinding fails). */
int lw_stack_capture(uintptr_t *ips, int max);

#endif
