/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include "rank.h"
#include "sig_guard.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lw_log_quiet;

/* The descriptor 2 leakwatch found when it was loaded (device and inode): a
 * job that closes its stderr and opens a file of its own, which gets the
 * number 2, must find none of our lines among its data. 0: not looked yet;
 * 1: a file to write to; -1: none was open, nothing is ever written. */
static int stderr_known;
static dev_t stderr_dev;
static ino_t stderr_ino;

__attribute__((constructor(101))) static void remember_stderr(void) {
    int saved = errno;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) == 0) {
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
        stderr_known = 1;
    } else {
        stderr_known = -1;
    }
    errno = saved;
}

int lw_log_stderr_is_ours(void) {
    if (!stderr_known) remember_stderr();
    struct stat st;
    return stderr_known > 0 && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == stderr_dev &&
           st.st_ino == stderr_ino;
}

/* Length of the valid UTF-8 sequence at s (2 to 4), or 0. */
static size_t utf8_len(const unsigned char *s) {
    if (s[0] < 0xc2 || s[0] > 0xf4) return 0;
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}

size_t lw_log_escape(const char *in, char *out, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (n == 0) return 0;
    for (const unsigned char *u = (const unsigned char *)in; *u;) {
        size_t len = u[0] < 0x80 ? 1 : utf8_len(u);
        int bad = len == 0 || (len == 1 && (u[0] < 0x20 || u[0] == 0x7f)) ||
                  (len == 2 && u[0] == 0xc2 && u[1] <= 0x9f);
        if (!bad) {
            if (o + len >= n) break;
            memcpy(out + o, u, len);
            o += len, u += len;
            continue;
        }
        /* A control (C0, DEL, C1) or a byte that is not UTF-8: written as
         * \xNN, so that a message stays one line and sends the terminal no
         * command. A C1 character in UTF-8 shows both of its bytes. */
        size_t nb = len ? len : 1;
        if (o + 4 * nb >= n) break;
        for (size_t i = 0; i < nb; i++) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[u[i] >> 4];
            out[o++] = hex[u[i] & 15];
        }
        u += nb;
    }
    out[o] = '\0';
    return o;
}

size_t lw_log_prefix(char *out, size_t n) {
    lw_rank_info r;
    lw_rank_get_cached(&r);
    int w = r.rank >= 0 && r.world_size != 1 ? snprintf(out, n, "leakwatch[rank %ld]: ", r.rank)
                                             : snprintf(out, n, "leakwatch: ");
    return w < 0 ? 0 : (size_t)w >= n ? n - 1 : (size_t)w;
}

void lw_log(const char *fmt, ...) {
    char msg[1024], buf[1200];
    int saved = errno; /* never disturb the caller's errno */
    if (!lw_log_stderr_is_ours()) {
        errno = saved;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m < 0) msg[0] = '\0';
    size_t pre = lw_log_prefix(buf, 64);
    size_t len = pre + lw_log_escape(msg, buf + pre, sizeof buf - pre - 1);
    buf[len++] = '\n';
    /* A pipe whose reader has gone or a file over its size limit must not end
     * the job: the line is dropped instead. */
    lw_sig_guard g;
    lw_sig_guard_begin(&g);
    ssize_t w;
    do
        w = write(STDERR_FILENO, buf, len);
    while (w < 0 && errno == EINTR);
    lw_sig_guard_end(&g);
    errno = saved;
}
