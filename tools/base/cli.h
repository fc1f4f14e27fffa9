/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the leakwatch command's subcommands: exit statuses, messages,
 * human formatting, number parsing. The subcommands themselves are in
 * tools/commands/, one file each (commands.h). */
#ifndef LW_CLI_H
#define LW_CLI_H

#include "fmt.h"

#include <stddef.h>
#include <stdio.h>

/* Exit statuses (docs/cli.md lists them; scripts depend on them). */
enum {
    LW_EXIT_OK = 0,
    LW_EXIT_ERROR = 1,        /* an input could not be used: file missing, corrupt, ... */
    LW_EXIT_USAGE = 2,        /* bad option or value */
    LW_EXIT_LEAK = 3,         /* --fail-on-leak and the verdict is "leak" */
    LW_EXIT_NO_PROCESS = 4,   /* the PID is not running, or not watched by leakwatch */
    LW_EXIT_INCONCLUSIVE = 5, /* --fail-on-leak, no leak, but a verdict is "inconclusive"
                                 (and --allow-inconclusive was not given) */
    LW_EXIT_RUN_FAILED = 125, /* leakwatch run itself failed (the job's status is unknown) */
    LW_EXIT_CANNOT_EXEC = 126,
    LW_EXIT_NOT_FOUND = 127,
};

/* "leakwatch: " + message + newline on stderr. */
void lw_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The message, then the usage hint for cmd ("leakwatch CMD --help"); returns LW_EXIT_USAGE. */
int lw_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The option getopt just rejected, as the user wrote it ("-x", "--bogus"). */
const char *lw_bad_option(char **argv);

/* getopt_long's answer c when it is none of command cmd's own options: 'h'
 * prints usage on stdout and returns LW_EXIT_OK; ':' (an option without its
 * value) and anything else (an unknown option) are usage errors
 * (LW_EXIT_USAGE). */
int lw_cli_other_option(const char *cmd, int c, char **argv, const char *usage);

/* Human formatting (lw_fmt_bytes, lw_fmt_rate, lw_fmt_duration, lw_fmt_count,
 * lw_fmt_int) is the library's own, shared with its warnings and summary. */

/* Copies s into out replacing control characters (terminal escapes from a
 * hostile report) with '?'. Returns out. */
char *lw_safe_text(const char *s, char *out, size_t n);

/* Parses a whole decimal number in [min, max]; 0 on success. */
int lw_parse_long(const char *text, long min, long max, long *out);
/* Parses a non-negative decimal with optional fraction in [min, max]. */
int lw_parse_double(const char *text, double min, double max, double *out);
/* Parses a process id: a positive whole number. */
int lw_parse_pid(const char *text, long *pid);

/* Writes data to path through the shared atomic writer (src/base/atomic_file.h:
 * private 0600 file, only over an absent path or a regular file). Returns
 * LW_AF_WRITTEN (0), LW_AF_OFF (1: /dev/null, nothing written) or LW_AF_FAILED
 * (-1) with the reason in why. */
int lw_write_file_atomic(const char *path, const char *data, size_t len, char *why, size_t whylen);

/* 0 when path is a regular file (or cannot be opened: the reader says why);
 * -1 with what it is in kind ("a FIFO") when it is not. Never blocks. */
int lw_regular_input(const char *path, char *kind, size_t n);

/* The rest of the line of a /proc status file (/proc/PID/status,
 * /proc/PID/task/TID/status) that starts with key ("TracerPid:"), read into
 * line (n bytes); NULL when the file cannot be read or has no such line. */
const char *lw_proc_status_field(const char *path, const char *key, char *line, size_t n);

/* 1 when stdout is a terminal that understands ANSI and colour is wanted. */
int lw_stdout_is_tty(void);

#endif
