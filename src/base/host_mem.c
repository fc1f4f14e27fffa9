/* SPDX-License-Identifier: Apache-2.0 */
#include "host_mem.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value in kB of the line "key: N kB" in text, as bytes; -1: absent. */
static int64_t field(const char *text, const char *key) {
    const char *p = strstr(text, key);
    if (!p) return -1;
    p += strlen(key);
    char *end;
    long long kb = strtoll(p, &end, 10);
    if (end == p || kb < 0) return -1;
    return (int64_t)kb * 1024;
}

int lw_host_mem(int64_t *available, int64_t *total) {
    *available = *total = -1;
    char buf[4096];
    int fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    *available = field(buf, "\nMemAvailable:");
    *total = field(buf, "MemTotal:");
    return *available >= 0 && *total >= 0;
}
