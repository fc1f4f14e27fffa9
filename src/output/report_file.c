/* SPDX-License-Identifier: Apache-2.0 */
/* The report's files: its path from LEAKWATCH_REPORT, one writer at a time
 * through the atomic writer, the fallback under $TMPDIR, a forked child's own
 * name, and the temporaries a killed writer left. */
#include "report_file.h"

#include "atomic_file.h"
#include "log.h"
#include "options.h"
#include "path_template.h"
#include "report.h"
#include "sandbox.h"
#include "symbolize.h"

#include "rank.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int emit_to(FILE *f, void *reason) {
    char final[PATH_MAX];
    lw_report_final_path(final, sizeof final);
    return lw_report_emit(f, reason, final);
}

/* One writer of the report at a time in this process: the exit report waits
 * for a periodic one in progress, and is then the last one written (a
 * periodic write after a final report is skipped). */
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static int final_written;
static struct stat final_st; /* the final report's file, once written */

/* Set in a forked child that uses CUDA itself (lifecycle.c). */
static int forked_child;

void lw_report_forked_child(void) {
    forked_child = 1;
}

static void claim_after_fork_child(void);

void lw_report_after_fork_child(void) {
    /* The thread that held it, if any, does not exist in the child. */
    pthread_mutex_init(&write_lock, NULL);
    final_written = 0;
    claim_after_fork_child();
    lw_symtab_after_fork_child();
}

/* A template without %p names the same file in a parent and in a forked
 * child that uses CUDA: the child's gets its pid, before ".json". */
static void child_path(const char *tpl, char *path, size_t n) {
    if (!forked_child || strstr(tpl, "%p")) return;
    size_t len = strlen(path);
    char pid[32];
    snprintf(pid, sizeof pid, ".%ld", (long)getpid());
    size_t plen = strlen(pid);
    if (len + plen + 1 > n) return;
    size_t at = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    memmove(path + at + plen, path + at, len - at + 1);
    memcpy(path + at, pid, plen);
}

/* ---- one process per report file ----
 * A process claims the path its template gives when it first writes there:
 * an exclusive lock (flock) on ".NAME.lock" beside it, held until its final
 * report (then removed). A path held by another process, or whose report
 * another process wrote since this one started recording (a sibling that
 * ended first), is not this process's: it writes NAME.PID.json instead and
 * says so once. So the first of a job's processes to write keeps the name,
 * a process that never writes (one that leaves with _exit) takes nothing,
 * and a later run still replaces an earlier run's report. Where no lock can
 * be taken (a read-only folder, a file system without locks) the path is
 * used as before. A template with %p names one file per process: nothing to
 * claim. */
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static char claimed[PATH_MAX]; /* the path claimed (the template's) */
static char own[PATH_MAX];     /* the path written: claimed, or this process's own name */
static char lock_path[PATH_MAX];
static int claim_fd = -1;
static int claim_wrote; /* a report was written at own */
/* A report written before the rank was known (a dump, a periodic report)
 * under NAME.PID.json: removed once one is written under the real name. */
static char early[PATH_MAX];
static struct timespec started_at;

static void claim_after_fork_child(void) {
    pthread_mutex_init(&claim_lock, NULL);
    /* The lock is the parent's (flock's is shared with the open file): closing
     * the child's descriptor leaves it held by the parent. */
    if (claim_fd >= 0) close(claim_fd);
    claim_fd = -1;
    claimed[0] = own[0] = lock_path[0] = '\0';
    claim_wrote = 0;
    early[0] = '\0';
}

static void lock_name(const char *path, char *out, size_t n) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    if (snprintf(out, n, "%.*s.%s.lock", (int)dl, path, slash ? slash + 1 : path) >= (int)n)
        out[0] = '\0';
}

/* The lock of path: its descriptor; -2 when another process holds it (who,
 * in holder); -1 when none can be taken. */
static int take_lock(const char *lock, char *holder, size_t hn) {
    for (int tries = 0; tries < 4 && lock[0]; tries++) {
        int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) return -1;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            if (e == EWOULDBLOCK) {
                ssize_t r = pread(fd, holder, hn - 1, 0);
                holder[r > 0 ? r : 0] = '\0';
                holder[strcspn(holder, "\n")] = '\0';
            }
            close(fd);
            return e == EWOULDBLOCK ? -2 : -1;
        }
        /* Locked: still the file at that name (not one a holder removed
         * meanwhile)? */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lock, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            char me[300], host[256] = "";
            gethostname(host, sizeof host - 1);
            int len = snprintf(me, sizeof me, "pid %ld on %s\n", (long)getpid(), host);
            if (ftruncate(fd, 0) == 0 && len > 0 && pwrite(fd, me, (size_t)len, 0) < 0) {
                /* the holder's name is only for messages */
            }
            return fd;
        }
        close(fd);
    }
    return -1;
}

/* 1 when path holds a report another process wrote since this one started
 * recording: a sibling's, which this process must not replace. */
static int written_since_start(const char *path) {
    struct stat st;
    if (started_at.tv_sec == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    return st.st_mtim.tv_sec > started_at.tv_sec ||
           (st.st_mtim.tv_sec == started_at.tv_sec && st.st_mtim.tv_nsec >= started_at.tv_nsec);
}

/* NAME.json -> NAME.PID.json (NAME -> NAME.PID). */
static void own_name(const char *path, char *out, size_t n) {
    size_t len = strlen(path);
    size_t at = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    if (snprintf(out, n, "%.*s.%ld%s", (int)at, path, (long)getpid(), path + at) >= (int)n)
        snprintf(out, n, "%s", path);
}

static void release_claim(void) {
    if (claim_fd < 0) return;
    unlink(lock_path); /* ours while held (take_lock checks the name after locking) */
    close(claim_fd);
    claim_fd = -1;
}

/* The file this process's last snapshot wrote (the control socket's
 * "snapshot PATH"): a snapshot to the report's own path before the first
 * report is this process's, not "another process's report". Under
 * claim_lock. */
static struct stat snapshot_st;
static int snapshot_known;

static int snapshot_wrote(const char *path) {
    struct stat st;
    return snapshot_known && stat(path, &st) == 0 && st.st_dev == snapshot_st.st_dev &&
           st.st_ino == snapshot_st.st_ino;
}

/* path: the template expanded for this process. Under claim_lock. */
static void claim(const char *path) {
    release_claim();
    snprintf(claimed, sizeof claimed, "%s", path);
    snprintf(own, sizeof own, "%s", path);
    claim_wrote = 0;
    char holder[300] = "";
    lock_name(path, lock_path, sizeof lock_path);
    int fd = take_lock(lock_path, holder, sizeof holder);
    if (fd >= 0 && (!written_since_start(path) || snapshot_wrote(path))) {
        claim_fd = fd;
        return;
    }
    if (fd == -1) return; /* no lock here: as before */
    if (fd >= 0) {
        unlink(lock_path); /* held: ours to remove, the path is not ours to take */
        close(fd);
        snprintf(holder, sizeof holder, "a process that ended before this one");
    }
    own_name(path, own, sizeof own);
    char own_lock[PATH_MAX], h2[300];
    lock_name(own, own_lock, sizeof own_lock);
    fd = take_lock(own_lock, h2, sizeof h2);
    if (fd >= 0) {
        claim_fd = fd;
        snprintf(lock_path, sizeof lock_path, "%s", own_lock);
    }
    lw_log("%s is the report of another process (%s); this process's report goes to %s "
           "instead",
           path, holder[0] ? holder : "unknown", own);
}

/* The path this process writes for the template's expansion path (in
 * place). */
static void claimed_path(char *path, size_t n, int claim_it) {
    pthread_mutex_lock(&claim_lock);
    if (strcmp(path, claimed) != 0 && claim_it) claim(path);
    if (!strcmp(path, claimed)) snprintf(path, n, "%s", own);
    pthread_mutex_unlock(&claim_lock);
}

static void note_written(const char *path, int final) {
    pthread_mutex_lock(&claim_lock);
    if (early[0] && strcmp(path, early) != 0) {
        unlink(early); /* the real name has the report now */
        early[0] = '\0';
    } else if (early[0]) {
        pthread_mutex_unlock(&claim_lock);
        return;
    }
    if (!strcmp(path, own)) {
        claim_wrote = 1;
        if (final && claim_fd >= 0) {
            unlink(lock_path);
            close(claim_fd);
            claim_fd = -1;
        }
    }
    pthread_mutex_unlock(&claim_lock);
}

void lw_report_claim_start(void) {
    pthread_mutex_lock(&claim_lock);
    if (started_at.tv_sec == 0) clock_gettime(CLOCK_REALTIME, &started_at);
    pthread_mutex_unlock(&claim_lock);
}

void lw_report_final_path(char *path, size_t n) {
    const char *tpl = lw_opt_str(LW_OPT_REPORT);
    if (!strcmp(tpl, "none") || lw_path_expand(tpl, path, n) != 0) {
        path[0] = '\0';
        return;
    }
    child_path(tpl, path, n);
    if (!strstr(tpl, "%p")) claimed_path(path, n, 0);
    if (path[0] != '/') {
        /* Absolute, so that it means the same to a reader elsewhere. */
        char cwd[PATH_MAX], abs[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) &&
            snprintf(abs, sizeof abs, "%s/%s", cwd, path) < (int)sizeof abs)
            snprintf(path, n, "%s", abs);
    }
}

int lw_report_off(void) {
    return strcmp(lw_opt_str(LW_OPT_REPORT), "none") == 0;
}

/* The path of a write; final: the process's last report. A %r that nobody
 * has told yet (mp.spawn sets no variable; the process group comes later)
 * would name rank 0's file: a report before the final one goes to
 * NAME.PID.json instead, claiming nothing, and is removed once a report is
 * written under the real name. The final report claims the name %r gives
 * then. */
static int write_path(char *path, size_t n, int final) {
    const char *tpl = lw_opt_str(LW_OPT_REPORT);
    if (lw_path_expand(tpl, path, n) != 0) return -1;
    child_path(tpl, path, n);
    /* /dev/null and other non-files are the atomic writer's to judge. */
    if (!strcmp(tpl, "none") || !strcmp(path, "/dev/null") || strstr(tpl, "%p")) return 0;
    lw_rank_info r;
    lw_rank_get(&r);
    if (!final && r.source == LW_RANK_NONE && strstr(tpl, "%r")) {
        char tmp[PATH_MAX];
        own_name(path, tmp, sizeof tmp);
        snprintf(path, n, "%s", tmp);
        pthread_mutex_lock(&claim_lock);
        snprintf(early, sizeof early, "%s", path);
        pthread_mutex_unlock(&claim_lock);
        return 0;
    }
    claimed_path(path, n, 1);
    return 0;
}

int lw_report_path(char *path, size_t n) {
    return write_path(path, n, 1);
}

/* The output names a template can give, as a glob: %p, %h and %r match
 * anything. Only the last part of the path may vary: a folder with a %
 * escape gives no cleanup. */
static int template_glob(const char *tpl, char *dir, size_t dn, char *glob, size_t gn) {
    const char *slash = strrchr(tpl, '/');
    size_t dl = slash ? (size_t)(slash - tpl) : 0;
    if (dl >= dn || memchr(tpl, '%', dl)) return -1;
    memcpy(dir, slash ? tpl : ".", slash ? dl : 1);
    dir[slash ? dl : 1] = '\0';
    if (slash && dl == 0) snprintf(dir, dn, "/");
    size_t o = 0;
    for (const char *p = slash ? slash + 1 : tpl; *p; p++) {
        if (o + 3 >= gn) return -1;
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'h' || p[1] == 'r')) {
            glob[o++] = '*';
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            glob[o++] = '%';
            p++;
        } else {
            if (strchr("*?[\\", *p)) glob[o++] = '\\';
            glob[o++] = *p;
        }
    }
    glob[o] = '\0';
    return 0;
}

void lw_report_cleanup(void) {
    char dir[PATH_MAX], glob[PATH_MAX];
    const char *tpls[] = {lw_report_off() ? NULL : lw_opt_str(LW_OPT_REPORT),
                          lw_opt_str(LW_OPT_PROMETHEUS)};
    for (int i = 0; i < 2; i++) {
        if (!tpls[i] || template_glob(tpls[i], dir, sizeof dir, glob, sizeof glob) != 0) continue;
        lw_atomic_cleanup(dir, glob);
        /* A forked child's name without %p: NAME.PID.json. */
        size_t gl = strlen(glob);
        if (!strstr(tpls[i], "%p") && gl > 5 && !strcmp(glob + gl - 5, ".json") &&
            gl + 3 < sizeof glob) {
            memmove(glob + gl - 3, glob + gl - 5, 6);
            memcpy(glob + gl - 5, ".*", 2);
            lw_atomic_cleanup(dir, glob);
        }
    }
}

int lw_report_write_path(const char *path, const char *reason, char *why, size_t whylen) {
    return lw_atomic_write(path, emit_to, (void *)reason, why, whylen);
}

/* The fallback's name under $TMPDIR (or /tmp): leakwatch-PID-RANDOM.json,
 * 64 random bits, so that another user of a shared folder cannot plant a
 * link, a folder or a FIFO at the name this process will use (issue 43: at
 * leakwatch-PID.json, the result was "no report was written"). The name is
 * reserved by creating the file, exclusively and without following a link
 * (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600): the atomic writer then
 * replaces a regular file of ours. A name already taken is never used: the
 * next try draws another. A later fallback of the same process reuses its
 * file while it is still that file. Under write_lock. */
static char fallback_name[PATH_MAX];
static pid_t fallback_pid;
static struct stat fallback_st; /* the file reserved, to remove it unused */

static uint64_t random64(void) {
    uint64_t r = 0;
    if (!lw_sandboxed() && getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
    /* No entropy yet (very early boot), no system call, or a seccomp
     * filter that may not allow it: what cannot be told from outside the
     * process, mixed. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&r;
    x ^= (uint64_t)getpid() << 17;
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull, x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int fallback_path(char *alt, size_t n, char *why, size_t whylen) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    struct stat st;
    if (fallback_pid == getpid() && lstat(fallback_name, &st) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == geteuid()) {
        snprintf(alt, n, "%s", fallback_name);
        return 0;
    }
    int e = EEXIST;
    for (int tries = 0; tries < 8; tries++) {
        if (snprintf(alt, n, "%s/leakwatch-%ld-%016llx.json", dir, (long)getpid(),
                     (unsigned long long)random64()) >= (int)n) {
            e = ENAMETOOLONG;
            break;
        }
        int fd = open(alt, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            fstat(fd, &fallback_st);
            close(fd);
            snprintf(fallback_name, sizeof fallback_name, "%s", alt);
            fallback_pid = getpid();
            return 0;
        }
        e = errno;
        if (e != EEXIST) break; /* EEXIST: planted or taken; draw another name */
    }
    if (why) snprintf(why, whylen, "%s", strerror(e));
    return -1;
}

static int is_final(const char *reason) {
    return !strcmp(reason, "exit") || !strncmp(reason, "signal", 6);
}

static int write_locked(const char *reason, int fallback, char *written, size_t writtenlen) {
    char path[PATH_MAX], why[512] = "";
    if (written && writtenlen) written[0] = '\0';
    if (lw_report_off()) return 0;
    if (!strcmp(reason, "periodic") && final_written) return 0;
    if (write_path(path, sizeof path, is_final(reason) || !strcmp(reason, "detach")) != 0) {
        lw_log("the report path from LEAKWATCH_REPORT is too long (over %d bytes); set a shorter "
               "one",
               PATH_MAX);
        path[0] = '\0';
    } else {
        int rc = lw_report_write_path(path, reason, why, sizeof why);
        if (rc == LW_AF_OFF) return 0; /* /dev/null: no file, as asked */
        if (rc == LW_AF_WRITTEN) {
            note_written(path, is_final(reason));
            if (written) snprintf(written, writtenlen, "%s", path);
            if (is_final(reason)) final_written = stat(path, &final_st) == 0 ? 2 : 1;
            return 0;
        }
        /* Periodic rewrites fail the same way every time: say it once. */
        static char last_why[512];
        if (fallback || strcmp(why, last_why) != 0)
            lw_log("cannot write the report to %s: %s; set LEAKWATCH_REPORT to a file in a "
                   "writable folder, or to none for no file (an earlier report at that path is "
                   "left unchanged)",
                   path, why);
        snprintf(last_why, sizeof last_why, "%s", why);
    }
    if (!fallback) return -1;
    char alt[PATH_MAX];
    if (fallback_path(alt, sizeof alt, why, sizeof why) != 0) {
        const char *dir = getenv("TMPDIR");
        lw_log("cannot write the report to %s either: %s; no report was written",
               dir && *dir ? dir : "/tmp", why);
        return -1;
    }
    if (lw_report_write_path(alt, reason, why, sizeof why) == LW_AF_WRITTEN) {
        lw_log("wrote the report to %s instead", alt);
        if (written) snprintf(written, writtenlen, "%s", alt);
        if (is_final(reason)) final_written = stat(alt, &final_st) == 0 ? 2 : 1;
        return 0;
    }
    /* The name reserved and nothing written there: the empty file goes
     * (only while it is still the one created). */
    struct stat st;
    if (lstat(alt, &st) == 0 && st.st_dev == fallback_st.st_dev &&
        st.st_ino == fallback_st.st_ino && st.st_size == 0) {
        unlink(alt);
        fallback_pid = 0;
    }
    lw_log("cannot write the report to %s either: %s; no report was written", alt, why);
    return -1;
}

int lw_report_snapshot(const char *path, char *why, size_t whylen) {
    pthread_mutex_lock(&write_lock);
    struct stat st;
    int rc;
    if (final_written == 2 && stat(path, &st) == 0 && st.st_dev == final_st.st_dev &&
        st.st_ino == final_st.st_ino) {
        snprintf(why, whylen,
                 "it is this process's final report, written as the job ends; give the snapshot "
                 "another path");
        rc = LW_AF_FAILED;
    } else {
        rc = lw_report_write_path(path, "snapshot", why, whylen);
        if (rc == LW_AF_WRITTEN) {
            pthread_mutex_lock(&claim_lock);
            snapshot_known = stat(path, &snapshot_st) == 0;
            pthread_mutex_unlock(&claim_lock);
        }
    }
    pthread_mutex_unlock(&write_lock);
    return rc;
}

int lw_report_write(const char *reason, int fallback, char *written, size_t writtenlen) {
    pthread_mutex_lock(&write_lock);
    int rc = write_locked(reason, fallback, written, writtenlen);
    pthread_mutex_unlock(&write_lock);
    /* The last report: the symbol cache's addr2line processes, kept for the
     * reports that follow one another, end now, not with the process. */
    if (is_final(reason) || !strcmp(reason, "detach")) lw_symtab_release();
    return rc;
}
