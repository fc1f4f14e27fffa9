/* SPDX-License-Identifier: Apache-2.0 */
/* A job with a thread held inside fork(), between the fork handlers, while
 * leakwatch attach looks for a thread to borrow (tests/integration/
 * test_attach.c): the job's own prepare handler, registered at start (so it
 * runs after the ones leakwatch registers at its first attach, which take
 * leakwatch's locks), waits for a mutex the main thread holds. The forking
 * thread then waits in a futex, a wait attach may borrow, holding leakwatch's
 * locks with no frame of leakwatch's on its stack. The main thread waits in
 * sigtimedwait, where attach never borrows a thread.
 *   DIR/fork     the forker forks once (and waits in the handler)
 *   DIR/release  the main thread lets the handler go on
 *   DIR/stop     the job ends, with "done, N forks"
 * It says "ready PID" and "forker TID".
 * Usage: rt_attach_forkgate DIR */
#include "paths.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop_flag;
static atomic_long forks;
static char fork_file[4096];

static void prepare(void) {
    pthread_mutex_lock(&gate);
    pthread_mutex_unlock(&gate);
}

static void *forker(void *arg) {
    (void)arg;
    printf("forker %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    struct timespec ts = {0, 2 * 1000 * 1000};
    while (access(fork_file, F_OK) != 0 && !atomic_load(&stop_flag))
        nanosleep(&ts, NULL);
    if (atomic_load(&stop_flag)) return NULL;
    pid_t c = fork();
    if (c == 0) _exit(0);
    if (c > 0) {
        while (waitpid(c, NULL, 0) < 0) {
        }
        atomic_fetch_add(&forks, 1);
    }
    while (!atomic_load(&stop_flag))
        nanosleep(&ts, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    char release[4096], stop[4096];
    snprintf(fork_file, sizeof fork_file, "%s/fork", dir);
    snprintf(release, sizeof release, "%s/release", dir);
    snprintf(stop, sizeof stop, "%s/stop", dir);
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    CHECK(cudaFree(p));
    pthread_mutex_lock(&gate);
    pthread_atfork(prepare, NULL, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, forker, NULL) != 0) return 2;
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    sigset_t none;
    sigemptyset(&none);
    int held = 1;
    while (access(stop, F_OK) != 0) {
        if (held && access(release, F_OK) == 0) {
            pthread_mutex_unlock(&gate);
            held = 0;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        sigtimedwait(&none, NULL, &ts);
    }
    if (held) pthread_mutex_unlock(&gate);
    atomic_store(&stop_flag, 1);
    pthread_join(t, NULL);
    printf("done, %ld forks\n", (long)atomic_load(&forks));
    return 0;
}
