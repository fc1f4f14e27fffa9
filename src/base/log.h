/* SPDX-License-Identifier: Apache-2.0 */
/* Messages to stderr. leakwatch speaks only in processes that use CUDA, and
 * says each kind of problem once: a job's log must not fill with our lines. */
#ifndef LW_LOG_H
#define LW_LOG_H

#include <stdatomic.h>
#include <stddef.h>

/* Prints the prefix (lw_log_prefix) + message + newline with one write(2), no allocation.
 * Always one line: control characters (C0, DEL, C1) and bytes that are not
 * UTF-8 are written as \xNN. Never raises SIGPIPE or SIGXFSZ; a failed
 * write is dropped, and so is a line when descriptor 2 is no longer the
 * stderr the library found at load (lw_log_stderr_is_ours). */
void lw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "leakwatch: ", or "leakwatch[rank N]: " in a process of a job of several
 * ranks (rank.h: the process group's rank once the job created it, else the
 * launcher's), so that every line names the rank it comes from. Writes at most
 * n - 1 bytes and a NUL into out; returns the length. */
size_t lw_log_prefix(char *out, size_t n);
/* 1 when descriptor 2 is still the file it was when the library was loaded
 * (same device and inode): lw_log writes nothing otherwise, so that a job
 * that closed its stderr and got 2 back for a data file never finds our
 * lines in it. */
int lw_log_stderr_is_ours(void);

/* Prints only the first time *once is seen clear. */
#define lw_log_once(flag_, ...)                                                                    \
    do {                                                                                           \
        static atomic_flag flag_ = ATOMIC_FLAG_INIT;                                               \
        if (!atomic_flag_test_and_set(&flag_)) lw_log(__VA_ARGS__);                                \
    } while (0)

/* Copies in to out (n bytes, NUL-terminated), escaping as lw_log does;
 * returns the length written. */
size_t lw_log_escape(const char *in, char *out, size_t n);

/* 1 when LEAKWATCH_QUIET asks for silence except errors. */
extern int lw_log_quiet;

#endif
