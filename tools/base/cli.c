/* SPDX-License-Identifier: Apache-2.0 */
/* Messages, human formatting and number parsing for the leakwatch command. */
#include "cli.h"

#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int lw_cli_other_option(const char *cmd, int c, char **argv, const char *usage) {
    if (c == 'h') {
        fputs(usage, stdout);
        return LW_EXIT_OK;
    }
    if (c == ':') return lw_cli_usage_error(cmd, "%s needs a value", argv[optind - 1]);
    return lw_cli_usage_error(cmd, "unknown option %s", lw_bad_option(argv));
}

const char *lw_proc_status_field(const char *path, const char *key, char *line, size_t n) {
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    size_t kl = strlen(key);
    const char *v = NULL;
    while (!v && fgets(line, (int)n, f))
        if (!strncmp(line, key, kl)) v = line + kl;
    fclose(f);
    return v;
}

/* Length of the valid UTF-8 sequence at s (2 to 4), or 0. */
static size_t utf8_len(const unsigned char *s) {
    size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (s[0] > 0xf4) return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}

char *lw_safe_text(const char *s, char *out, size_t n) {
    size_t o = 0;
    if (n == 0) return out;
    while (s && *s && o + 1 < n) {
        const unsigned char *u = (const unsigned char *)s;
        size_t len = u[0] >= 0x80 ? utf8_len(u) : 1;
        /* C0, DEL and C1 (U+0080-U+009F, UTF-8 C2 80 to C2 9F; e.g. U+009B is
         * CSI) become '?', as does a byte that is not valid UTF-8 (an 8-bit
         * terminal would take 0x9B alone as CSI). */
        if (len == 0 || (len == 1 && (u[0] < 0x20 || u[0] == 0x7f)) ||
            (len == 2 && u[0] == 0xc2 && u[1] <= 0x9f) || o + len >= n) {
            out[o++] = '?';
            s += len ? len : 1;
            continue;
        }
        memcpy(out + o, s, len);
        o += len;
        s += len;
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

int lw_write_file_atomic(const char *path, const char *data, size_t len, char *why, size_t whylen) {
    return lw_atomic_write_buf(path, data, len, why, whylen);
}

int lw_regular_input(const char *path, char *kind, size_t n) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return 0; /* the reader says why it cannot open it */
    struct stat st;
    int rc = fstat(fd, &st);
    close(fd);
    if (rc != 0 || S_ISREG(st.st_mode)) return 0;
    snprintf(kind, n, "%s",
             S_ISDIR(st.st_mode)    ? "a directory"
             : S_ISFIFO(st.st_mode) ? "a FIFO"
             : S_ISSOCK(st.st_mode) ? "a socket"
             : S_ISCHR(st.st_mode)  ? "a character device"
             : S_ISBLK(st.st_mode)  ? "a block device"
                                    : "not a regular file");
    return -1;
}

int lw_stdout_is_tty(void) {
    const char *term = getenv("TERM");
    return isatty(1) && !(term && !strcmp(term, "dumb"));
}
