/* SPDX-License-Identifier: Apache-2.0 */
#include "lock_order.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __thread unsigned held;

static const char *const names[] = {"?", "attach_lock", "start_lock", "patch_lock"};

static const char *name_of(int rank) {
    return rank > 0 && rank < (int)(sizeof names / sizeof names[0]) ? names[rank] : names[0];
}

static void say(const char *s) {
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

void lw_lock_order_take(int rank) {
    unsigned above = held & ~((1u << rank) - 1); /* rank and higher */
    if (above) {
        int worst = 31 - __builtin_clz(above);
        /* write(2) only: this may run in a fork handler. */
        say("leakwatch: lock order violated: taking ");
        say(name_of(rank));
        say(" while holding ");
        say(name_of(worst));
        say(" (order: attach_lock, start_lock, patch_lock; src/attach/attach_locks.h)\n");
        abort();
    }
    held |= 1u << rank;
}

void lw_lock_order_drop(int rank) {
    held &= ~(1u << rank);
}

unsigned lw_lock_order_held(void) {
    return held;
}
