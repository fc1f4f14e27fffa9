/* SPDX-License-Identifier: Apache-2.0 */
#include "sandbox.h"

#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static atomic_int seen; /* the mode once a filter (or strict mode) was seen */

/* The calling thread's own line: filters are per thread (a job's filter
 * installed without TSYNC binds its own threads, not ours made before). */
static int read_status(void) {
    int fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[8192];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 &&
           ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0) n += (size_t)r;
    close(fd);
    buf[n] = '\0';
    const char *line = strstr(buf, "\nSeccomp:");
    if (!line) return 0; /* a kernel without seccomp */
    return (int)strtol(line + 9, NULL, 10);
}

int lw_seccomp_mode(void) {
    int m = atomic_load(&seen);
    if (m > 0) return m;
    int saved = errno;
    m = read_status();
    if (m < 0) {
#ifdef PR_GET_SECCOMP
        m = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (m < 0) m = -1;
#endif
    }
    errno = saved;
    if (m > 0) atomic_store(&seen, m);
    return m;
}

int lw_sandboxed(void) {
    return lw_seccomp_mode() > 0 && strcmp(lw_opt_str(LW_OPT_SECCOMP), "full") != 0;
}
