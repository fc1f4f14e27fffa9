/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of the control socket (see src/output/control.h). */
#ifndef LW_CONTROL_CLIENT_H
#define LW_CONTROL_CLIENT_H

#include <stddef.h>

/* The folders to search, in order: this user's socket folder, then the
 * fallback; duplicates and missing folders are left out. Returns how many. */
int lw_sock_dirs(char dirs[2][4096], char *err, size_t errlen);

/* Finds the socket of process pid. 0, or an exit status (LW_EXIT_NO_PROCESS,
 * LW_EXIT_ERROR) with one line in err saying what is wrong and what to do. */
int lw_sock_find(long pid, char *path, size_t n, char *err, size_t errlen);

/* For `top` and `snapshot`: the one PID left on the command line after the
 * options (argv[optind..argc)), and its socket. 0, or the exit status to
 * return, after one line on stderr. */
int lw_sock_for_args(const char *cmd, int argc, char **argv, int optind_, long *pid, char *path,
                     size_t n);

/* lw_sock_find, and when pid itself is not watched but a descendant is
 * (`leakwatch run`'s own pid), that one: *pid becomes it, with one line on
 * stderr saying so. 0, or the exit status after one line on stderr. */
int lw_sock_find_follow(long *pid, char *path, size_t n);

/* Sends one request line (without newline) and returns the answer's body
 * after its "ok" line (malloc'd, NUL-terminated, *len bytes), or NULL with a
 * message in err. The peer must run as our user (or root). */
char *lw_sock_request(const char *path, const char *req, size_t *len, char *err, size_t errlen);

/* The same, waiting at most timeout_ms for the answer (lw_sock_request: 30 s). */
char *lw_sock_request_within(const char *path, const char *req, int timeout_ms, size_t *len,
                             char *err, size_t errlen);

/* The command line of pid from /proc, spaces between arguments, control
 * characters replaced; "?" when unknown. */
void lw_proc_cmdline(long pid, char *out, size_t n);

#endif
