/* SPDX-License-Identifier: Apache-2.0 */
#include "thread.h"

#include <pthread.h>
#include <signal.h>

int lw_thread_start(void *(*fn)(void *)) {
    return lw_thread_start_arg(fn, NULL);
}

int lw_thread_start_arg(void *(*fn)(void *), void *arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, LW_THREAD_STACK);
    pthread_t t;
    int rc = pthread_create(&t, &attr, fn, arg) == 0 ? 0 : -1;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
