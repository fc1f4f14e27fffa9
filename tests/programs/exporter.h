/* SPDX-License-Identifier: Apache-2.0 */
/* A second process that exports device memory to the test program, as a
 * data-loader worker, a serving process or another rank does: it runs in a
 * forked child, sends its handles (bytes, or file descriptors with
 * SCM_RIGHTS) over a socket, and keeps the memory until the parent is done
 * with it. The child leaves with _exit, so it writes no report of its own. */
#ifndef LW_TEST_EXPORTER_H
#define LW_TEST_EXPORTER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void xfer_all(int s, void *p, size_t n, int sending) {
    char *c = p;
    while (n > 0) {
        ssize_t k = sending ? write(s, c, n) : read(s, c, n);
        if (k <= 0) {
            fprintf(stderr, "exporter: the socket broke\n");
            exit(9);
        }
        c += k, n -= (size_t)k;
    }
}

static inline void send_fd(int s, int fd) {
    char byte = 'f';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.buf;
    m.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(s, &m, 0) != 1) exit(9);
}

static inline int recv_fd(int s) {
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.buf;
    m.msg_controllen = sizeof u.buf;
    if (recvmsg(s, &m, 0) != 1) exit(9);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) exit(9);
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* Starts export_fn(sock) in a child; returns the parent's end of the socket. */
static inline int exporter_start(void (*export_fn)(int sock), pid_t *pid) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) exit(9);
    fflush(NULL);
    *pid = fork();
    if (*pid < 0) exit(9);
    if (*pid == 0) {
        close(sv[0]);
        export_fn(sv[1]);
        char done;
        xfer_all(sv[1], &done, 1, 0); /* the importer is done with the memory */
        _exit(0);
    }
    close(sv[1]);
    return sv[0];
}

static inline void exporter_stop(int sock, pid_t pid) {
    char done = 'd';
    xfer_all(sock, &done, 1, 1);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "exporter: the child failed (status %d)\n", status);
        exit(9);
    }
    close(sock);
}

#endif
