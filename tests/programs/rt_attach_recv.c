/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread waits in recv on a socket with a receive timeout
 * (SO_RCVTIMEO), the wait that an interruption ends with EINTR instead of
 * restarting it (issue 32, item 6). It says "ready PID", waits in recv (100
 * ms at a time) until the file STOP exists, and reports how often recv
 * failed with EINTR: 0, attached or not. MAP: a file it maps first (a name
 * that the attach's messages print). SIGRTMIN, sent with sigqueue and the
 * values 1, 2, 3...: counted, and those that come out of order.
 * RT_ATTACH_BECOME=UID (run as root): it then runs as that user and group,
 * not dumpable (as a set-user-ID program, or one that drops its rights, is).
 * Usage: rt_attach_recv STOP [MAP] */
#include "paths.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static volatile long sig_count, sig_last, sig_disorder;

static void on_rt(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    long v = si->si_value.sival_int;
    if (v != sig_last + 1) sig_disorder++;
    sig_last = v;
    sig_count++;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    if (argc > 2) {
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0 || mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) return 4;
        close(fd);
    }
    const char *become = getenv("RT_ATTACH_BECOME");
    if (become) {
        int id = atoi(become);
        if (setgid((gid_t)id) != 0 || setuid((uid_t)id) != 0) return 5;
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &sa, NULL);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 3;
    struct timeval tv = {0, 100 * 1000};
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    long interrupted = 0, waits = 0;
    char c;
    while (access(argv[1], F_OK) != 0) {
        if (recv(sv[0], &c, 1, 0) < 0 && errno == EINTR) interrupted++;
        waits++;
    }
    printf("done, recv interrupted %ld times (%s), signals %ld, out of order %ld\n", interrupted,
           waits ? "waited" : "never", sig_count, sig_disorder);
    return 0;
}
