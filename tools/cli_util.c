/* Messages, human formatting and number parsing for the leakwatch command. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void lw_cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("leakwatch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int lw_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("leakwatch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'leakwatch %s --help')\n", cmd);
    va_end(ap);
    return LW_EXIT_USAGE;
}

const char *lw_bad_option(char **argv) {
    static char buf[8];
    /* getopt sets optopt for a bad short option, and leaves 0 for a long one. */
    if (optopt) {
        snprintf(buf, sizeof buf, "-%c", optopt);
        return buf;
    }
    return argv[optind - 1];
}

char *lw_safe_text(const char *s, char *out, size_t n) {
    size_t o = 0;
    if (n == 0) return out;
    for (; s && *s && o + 1 < n; s++) {
        unsigned char c = (unsigned char)*s;
        out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    out[o] = '\0';
    return out;
}

int lw_parse_long(const char *text, long min, long max, long *out) {
    char *end = NULL;
    if (!text || !*text) return -1;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int lw_parse_double(const char *text, double min, double max, double *out) {
    char *end = NULL;
    /* Digits and one optional '.': no exponents, hex, inf or nan. */
    if (!text || !*text || strspn(text, "0123456789.") != strlen(text)) return -1;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(v) || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int lw_parse_pid(const char *text, long *pid) {
    return lw_parse_long(text, 1, INT_MAX, pid);
}

int lw_write_file_atomic(const char *path, const char *data, size_t len, int mode) {
    char tmp[PATH_MAX + 64];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.%ld.tmp", dirlen, path, slash ? slash + 1 : path,
                 (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e ? e : EIO;
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int lw_stdout_is_tty(void) {
    const char *term = getenv("TERM");
    return isatty(1) && !(term && !strcmp(term, "dumb"));
}
