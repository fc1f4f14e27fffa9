/* SPDX-License-Identifier: Apache-2.0 */
/* The one way leakwatch writes an output file (the report, a snapshot, the
 * Prometheus textfile, `leakwatch report -o`), shared by the shim and the
 * command.
 *
 * - The content goes to a temporary file in the final path's folder, flushed
 *   and fsynced, then put in place: a reader sees the previous complete file
 *   or the new complete one, never a part, and two writers never touch each
 *   other's temporary file. Where the filesystem allows (O_TMPFILE, /proc,
 *   no seccomp filter), the temporary has no name while it is written: a
 *   writer killed meanwhile leaves nothing; once complete it is linked at
 *   the final path when that is absent, else given a temporary name and
 *   renamed over it at once. Elsewhere it is created exclusively
 *   (O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600) under a name no other
 *   writer uses (".NAME.PID.SEQ.tmp") and renamed over the final path.
 * - Only where the final path is absent, a regular file, or a symbolic link
 *   of our own (replaced, never followed). A directory, FIFO, socket, device
 *   or another user's link is refused with a message and nothing is written.
 *   /dev/null (the device, however named) means "no file": nothing is
 *   written, the device is left as it is, and the result says so.
 * - SIGPIPE and SIGXFSZ are blocked while writing (sig_guard.h): a file-size
 *   limit makes the write fail with EFBIG instead of ending the job.
 * - On any failure the temporary file is removed and an earlier file at the
 *   path is left as it was. */
#ifndef LW_ATOMIC_FILE_H
#define LW_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

enum {
    LW_AF_WRITTEN = 0,
    LW_AF_OFF = 1, /* the path is /dev/null: nothing written, on purpose */
    LW_AF_FAILED = -1,
};

/* Writes the content into f; returns 0, or -1 when it could not be made. */
typedef int (*lw_af_emit)(FILE *f, void *arg);

/* Writes what emit produces to path. On LW_AF_FAILED, why (when not NULL)
 * holds a short reason ("No such file or directory", "it is a FIFO, not a
 * regular file") for a message that names the path. */
int lw_atomic_write(const char *path, lw_af_emit emit, void *arg, char *why, size_t whylen);

/* The same for bytes already in memory. */
int lw_atomic_write_buf(const char *path, const void *data, size_t len, char *why, size_t whylen);

/* Checks the final path only: LW_AF_WRITTEN when a write may go ahead,
 * LW_AF_OFF for /dev/null, LW_AF_FAILED (with why) when it must not. */
int lw_atomic_check(const char *path, char *why, size_t whylen);

/* Removes, in dir, the temporary files (".NAME.PID.SEQ.tmp") of outputs
 * whose NAME matches name_glob (fnmatch) that a writer killed with SIGKILL
 * left behind: only regular files of ours whose process is gone and that
 * were last written at least a minute ago (a writer on another machine
 * sharing the folder may still be writing its own). Returns how many. */
int lw_atomic_cleanup(const char *dir, const char *name_glob);

/* Removes the temporary files (".NAME.PID.SEQ.tmp", regular files of ours)
 * that process pid left beside path: for a caller that knows pid ended and
 * is not reused yet (leakwatch run, its job ended and not yet reaped), at
 * any age. Returns how many. */
int lw_atomic_forget(const char *path, long pid);

#endif
