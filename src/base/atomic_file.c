/* SPDX-License-Identifier: Apache-2.0 */
#include "atomic_file.h"

#include "sandbox.h"
#include "sig_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long seq;

static int is_dev_null(const struct stat *st) {
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

int lw_atomic_check(const char *path, char *why, size_t whylen) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return LW_AF_WRITTEN; /* the folder's problems show at create */
        if (why) snprintf(why, whylen, "%s", strerror(errno));
        return LW_AF_FAILED;
    }
    if (S_ISREG(st.st_mode)) return LW_AF_WRITTEN;
    if (S_ISLNK(st.st_mode)) {
        struct stat target;
        /* A link to /dev/null asks for no file just as well. */
        if (stat(path, &target) == 0 && is_dev_null(&target)) return LW_AF_OFF;
        if (st.st_uid == geteuid()) return LW_AF_WRITTEN; /* ours: replaced, not followed */
        if (why)
            snprintf(why, whylen,
                     "it is a symbolic link owned by uid %ld, not by us (uid %ld): refusing to "
                     "replace it; remove it or choose another path",
                     (long)st.st_uid, (long)geteuid());
        errno = EEXIST;
        return LW_AF_FAILED;
    }
    if (is_dev_null(&st)) return LW_AF_OFF;
    if (why)
        snprintf(why, whylen,
                 "it is %s, not a regular file: nothing is written there; choose a file path",
                 kind_of(st.st_mode));
    errno = EEXIST;
    return LW_AF_FAILED;
}

/* The temporary file's stream. Two hazards shape it:
 * - A process forked while a report is being written holds a copy of the
 *   stream, buffer included, and its exit() flushes every stream: through a
 *   plain FILE those bytes would land in our file (the descriptor and its
 *   offset are shared). This stream writes only in the process that opened it.
 * - exit() on another thread flushes and unbuffers every stream without
 *   taking their locks; a stdio buffer being filled by the writing thread at
 *   that moment can be torn (a crash at the job's exit). So the FILE is
 *   unbuffered, which exit() leaves alone, and the buffering is ours, touched
 *   only by the writing thread. */
#define SINK_BUF 65536
typedef struct {
    int fd;
    pid_t pid;
    off64_t written; /* bytes accepted: flushed or in buf */
    char *buf;       /* NULL: no memory for one; every write goes straight out */
    size_t used;
    int failed; /* errno of a failed flush, reported at the end */
} sink;

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Bytes reach the file only here, so this is where the process is checked:
 * once per buffer written (64 KiB), not per write (a report makes millions
 * of small writes; a getpid each was most of its time). A forked child's
 * copy of the buffer is dropped. */
static int sink_out(sink *k, const char *p, size_t n) {
    if (getpid() != k->pid) return 0;
    return write_all(k->fd, p, n);
}

static int sink_flush(sink *k) {
    if (k->used && !k->failed) k->failed = sink_out(k, k->buf, k->used);
    k->used = 0;
    return k->failed;
}

static ssize_t sink_write(void *cookie, const char *buf, size_t n) {
    sink *k = cookie;
    if (k->failed) {
        errno = k->failed;
        return -1;
    }
    if (k->buf && n <= SINK_BUF - k->used) {
        memcpy(k->buf + k->used, buf, n);
        k->used += n;
    } else {
        if (sink_flush(k) || (k->failed = sink_out(k, buf, n)) != 0) {
            errno = k->failed;
            return -1;
        }
    }
    k->written += (off64_t)n;
    return (ssize_t)n;
}

/* Only where we are (ftello: the report measures what it wrote). */
static int sink_seek(void *cookie, off64_t *off, int whence) {
    sink *k = cookie;
    if (whence != SEEK_CUR || *off != 0) {
        errno = ESPIPE;
        return -1;
    }
    *off = k->written;
    return 0;
}

static int split(const char *path, int *dirlen, const char **base) {
    const char *slash = strrchr(path, '/');
    *dirlen = slash ? (int)(slash - path + 1) : 0;
    *base = slash ? slash + 1 : path;
    return **base ? 0 : -1;
}

/* Replaces path by tmp only where path is absent, or a regular file or a
 * link of ours (checked again right before): an absent path is taken with
 * RENAME_NOREPLACE, so a file planted meanwhile is not replaced unseen. */
static int place(const char *tmp, const char *path, char *why, size_t whylen) {
    for (int tries = 0; tries < 4; tries++) {
        struct stat st;
        int absent = lstat(path, &st) != 0 && errno == ENOENT;
        if (!absent) {
            int c = lw_atomic_check(path, why, whylen);
            if (c != LW_AF_WRITTEN) return c;
            return rename(tmp, path) == 0 ? LW_AF_WRITTEN : LW_AF_FAILED;
        }
#ifdef SYS_renameat2
        if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, 1 /* RENAME_NOREPLACE */) == 0)
            return LW_AF_WRITTEN;
        if (errno == EEXIST) continue; /* something appeared: look at it again */
        if (errno != ENOSYS && errno != EINVAL) return LW_AF_FAILED;
#endif
        return rename(tmp, path) == 0 ? LW_AF_WRITTEN : LW_AF_FAILED;
    }
    errno = EEXIST;
    return LW_AF_FAILED;
}

/* LEAKWATCH_TEST_WRITE_KILL_AT=POINT (tests only): the writing process
 * kills itself (as kill -9 would) at that point of a write: "written" (the
 * content is in the temporary file, not yet in place), "linked" (an unnamed
 * temporary has its name beside the path, not yet renamed). */
static void kill_for_test(const char *point) {
    const char *v = secure_getenv("LEAKWATCH_TEST_WRITE_KILL_AT");
    if (v && !strcmp(v, point)) raise(SIGKILL);
}

/* A temporary file without a name (O_TMPFILE) in the path's folder: a
 * writer killed while writing leaves nothing behind (the kernel frees it
 * with its last descriptor), where a named temporary stayed until a later
 * run removed it, a minute old (issue 43). Given its name only when
 * complete, through /proc/self/fd (linkat without privileges). -1 where the
 * filesystem has no O_TMPFILE, /proc is not there, or a seccomp filter may
 * forbid linkat: then a named temporary, as before. */
static int open_unnamed(const char *path, int dirlen) {
#ifdef O_TMPFILE
    if (lw_sandboxed()) return -1;
    char dir[PATH_MAX];
    if (dirlen >= (int)sizeof dir) return -1;
    if (dirlen)
        snprintf(dir, sizeof dir, "%.*s", dirlen, path);
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    char self[64];
    struct stat st;
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    if (lstat(self, &st) != 0) {
        close(fd);
        return -1;
    }
    return fd;
#else
    (void)path;
    (void)dirlen;
    return -1;
#endif
}

/* The temporary's name beside path: ".NAME.PID.SEQ.tmp". -1 (errno) when
 * it does not fit. */
static int temp_name(const char *path, int dirlen, const char *base, char *tmp, size_t n) {
    unsigned long k = atomic_fetch_add(&seq, 1);
    if (snprintf(tmp, n, "%.*s.%s.%ld.%lu.tmp", dirlen, path, base, (long)getpid(), k) >= (int)n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* Gives the unnamed temporary fd its place: path itself where path is
 * absent (linkat never replaces: a file planted meanwhile is looked at
 * again, as place does), else a temporary name beside it (tmp), for place
 * to rename over path. LW_AF_WRITTEN with tmp empty when it is in place,
 * with tmp set when it has that name; LW_AF_FAILED (errno). */
static int link_unnamed(int fd, const char *path, int dirlen, const char *base, char *tmp,
                        size_t n) {
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    tmp[0] = '\0';
    struct stat st;
    if (lstat(path, &st) != 0 && errno == ENOENT) {
        if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) return LW_AF_WRITTEN;
        if (errno != EEXIST) return LW_AF_FAILED;
    }
    for (int tries = 0; tries < 16; tries++) {
        if (temp_name(path, dirlen, base, tmp, n) != 0) break;
        if (linkat(AT_FDCWD, self, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) {
            kill_for_test("linked");
            return LW_AF_WRITTEN;
        }
        if (errno != EEXIST) break;
    }
    tmp[0] = '\0';
    return LW_AF_FAILED;
}

static int write_file(const char *path, lw_af_emit emit, void *arg, char *why, size_t whylen) {
    int c = lw_atomic_check(path, why, whylen);
    if (c != LW_AF_WRITTEN) return c;
    int dirlen;
    const char *base;
    if (split(path, &dirlen, &base) != 0) {
        errno = EISDIR;
        if (why) snprintf(why, whylen, "the path names a folder, not a file");
        return LW_AF_FAILED;
    }
    char tmp[PATH_MAX + 96];
    tmp[0] = '\0';
    int fd = open_unnamed(path, dirlen), unnamed = fd >= 0;
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        if (temp_name(path, dirlen, base, tmp, sizeof tmp) != 0) break;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno != EEXIST) break; /* EEXIST: planted or left; try the next name */
    }
    if (fd < 0) {
        if (why) snprintf(why, whylen, "%s", strerror(errno));
        return LW_AF_FAILED;
    }
    sink k = {fd, getpid(), 0, malloc(SINK_BUF), 0, 0};
    cookie_io_functions_t io = {NULL, sink_write, sink_seek, NULL};
    FILE *f = fopencookie(&k, "w", io);
    if (!f) {
        int e = errno;
        free(k.buf);
        close(fd);
        if (!unnamed) unlink(tmp);
        if (why) snprintf(why, whylen, "%s", strerror(e));
        errno = e;
        return LW_AF_FAILED;
    }
    setvbuf(f, NULL, _IONBF, 0);
    errno = 0;
    int rc = emit(f, arg) == 0 ? 0 : -1;
    int e = errno;
    if (fflush(f) != 0) rc = -1, e = errno;
    if (fclose(f) != 0 && rc == 0) rc = -1, e = errno;
    if (sink_flush(&k) != 0 && rc == 0) rc = -1, e = k.failed;
    free(k.buf);
    if (rc == 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS) rc = -1, e = errno;
    if (rc == 0) kill_for_test("written");
    if (rc == 0 && unnamed &&
        link_unnamed(fd, path, dirlen, base, tmp, sizeof tmp) != LW_AF_WRITTEN)
        rc = -1, e = errno;
    if (close(fd) != 0 && rc == 0) rc = -1, e = errno;
    if (unnamed && rc == 0 && !tmp[0]) return LW_AF_WRITTEN; /* in place already */
    if (rc != 0) {
        if (tmp[0]) unlink(tmp);
        if (!e) e = EIO;
        if (why) snprintf(why, whylen, "%s", strerror(e));
        errno = e;
        return LW_AF_FAILED;
    }
    char reason[256] = "";
    c = place(tmp, path, reason, sizeof reason);
    if (c != LW_AF_WRITTEN) {
        e = errno;
        unlink(tmp);
        if (why) snprintf(why, whylen, "%s", reason[0] ? reason : strerror(e));
        errno = e;
    }
    return c;
}

int lw_atomic_write(const char *path, lw_af_emit emit, void *arg, char *why, size_t whylen) {
    if (why && whylen) why[0] = '\0';
    lw_sig_guard g;
    lw_sig_guard_begin(&g);
    int rc = write_file(path, emit, arg, why, whylen);
    int e = errno;
    lw_sig_guard_end(&g);
    errno = e;
    return rc;
}

typedef struct {
    const void *data;
    size_t len;
} buf_arg;

static int emit_buf(FILE *f, void *arg) {
    const buf_arg *b = arg;
    return b->len && fwrite(b->data, 1, b->len, f) != b->len ? -1 : 0;
}

int lw_atomic_write_buf(const char *path, const void *data, size_t len, char *why, size_t whylen) {
    buf_arg b = {data, len};
    return lw_atomic_write(path, emit_buf, &b, why, whylen);
}

int lw_atomic_cleanup(const char *dir, const char *name_glob) {
    DIR *d = opendir(dir && *dir ? dir : ".");
    if (!d) return 0;
    time_t now = time(NULL);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        /* ".NAME.PID.SEQ.tmp" (".NAME.PID.tmp" from earlier versions). */
        char name[NAME_MAX + 1];
        size_t len = strlen(e->d_name);
        if (e->d_name[0] != '.' || len < 7 || len > NAME_MAX ||
            strcmp(e->d_name + len - 4, ".tmp") != 0)
            continue;
        memcpy(name, e->d_name + 1, len - 5);
        name[len - 5] = '\0';
        long pid = 0;
        char *dot = strrchr(name, '.');
        for (int fields = 0; dot && fields < 2; fields++) {
            char *end = NULL;
            errno = 0;
            long v = strtol(dot + 1, &end, 10);
            if (errno || end == dot + 1 || *end) break;
            pid = v; /* the last number read before NAME is the pid */
            *dot = '\0';
            if (fnmatch(name_glob, name, FNM_PERIOD) == 0) break;
            dot = strrchr(name, '.');
        }
        if (pid <= 0 || pid > INT_MAX || fnmatch(name_glob, name, FNM_PERIOD) != 0) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || now - st.st_mtime < 60)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

int lw_atomic_forget(const char *path, long pid) {
    int dirlen;
    const char *base;
    if (pid <= 0 || split(path, &dirlen, &base) != 0) return 0;
    char dir[PATH_MAX], prefix[NAME_MAX + 32];
    if (dirlen >= (int)sizeof dir) return 0;
    snprintf(dir, sizeof dir, "%.*s", dirlen ? dirlen : 1, dirlen ? path : ".");
    int pl = snprintf(prefix, sizeof prefix, ".%s.%ld.", base, pid);
    if (pl < 0 || pl >= (int)sizeof prefix) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        /* ".NAME.PID.SEQ.tmp", SEQ a number. */
        size_t len = strlen(e->d_name);
        if (len <= (size_t)pl + 4 || strncmp(e->d_name, prefix, (size_t)pl) != 0 ||
            strcmp(e->d_name + len - 4, ".tmp") != 0 ||
            strspn(e->d_name + pl, "0123456789") != len - (size_t)pl - 4)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}
