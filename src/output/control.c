/* SPDX-License-Identifier: Apache-2.0 */
/* The control socket's server: one thread, one request per connection, no
 * state kept between requests. It runs only in processes that record (the
 * lifecycle starts it), and never runs CUDA calls, so the program's own
 * threads see nothing of it except the CPU a report costs when one is asked. */
#include "control.h"

#include "atomic_file.h"
#include "clock.h"
#include "growth.h"
#include "json_write.h"
#include "runstate.h"
#include "log.h"
#include "report.h"
#include "report_file.h"
#include "sandbox.h"
#include "thread.h"
#include "totals.h"
#include "verdict.h"

#include <leakwatch.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The one descriptor the live view holds for the job's whole life (no wake
 * pipe: stopping shuts the socket down, which wakes the thread's poll). */
static int listen_fd = -1;
static pthread_t thread;
static int running;
static pid_t owner;   /* the process that serves; a forked child must not use our fds */
static pid_t gave_up; /* a process for which starting failed: said once, not retried */
static int exit_hooked;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
/* What our descriptors are (device and inode): a job that closes descriptors
 * it did not open may get the same numbers for its own files, which we must
 * then never write to, read from or close. */
typedef struct {
    dev_t dev;
    ino_t ino;
} fd_id;
static fd_id listen_id;
/* The serving thread's own copy of its descriptors, written before it starts
 * and never while it runs: stopping closes and clears the globals above while
 * the thread may still be on its way out, and the two must not share memory
 * (pthread_timedjoin_np is not a synchronisation point for every checker). */
typedef struct {
    int listen_fd;
    fd_id listen_id;
} served_fds;
static served_fds served;

/* A client that stops reading must not hold the thread forever. */
#define IO_TIMEOUT_MS 10000
/* How long the job's exit waits for the server thread at most (README,
 * docs/safety.md): a client in the middle of a request is cut off. */
#define STOP_WAIT_MS 1000

static fd_id id_of(int fd) {
    struct stat st;
    fd_id id = {0, 0};
    if (fd >= 0 && fstat(fd, &st) == 0) id.dev = st.st_dev, id.ino = st.st_ino;
    return id;
}

static int ours(int fd, fd_id id) {
    if (fd < 0) return 0;
    fd_id now = id_of(fd);
    return now.ino != 0 && now.dev == id.dev && now.ino == id.ino;
}

/* 1 when the listening socket was shut down (a stop) or is gone: poll
 * reports POLLHUP (or POLLNVAL) for it whatever events were asked. */
static int stopped(short revents) {
    return (revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Waits for fd to be ready, or for the stop (the listening socket shut
 * down), or the timeout. */
static int wait_client(int fd, short events) {
    struct pollfd p[2] = {{fd, events, 0}, {served.listen_fd, 0, 0}};
    for (;;) {
        int r = poll(p, 2, IO_TIMEOUT_MS);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0 || stopped(p[1].revents)) return -1;
        return 0;
    }
}

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_client(fd, POLLOUT) != 0) return -1;
            continue;
        }
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static void reply_error(int fd, const char *msg) {
    char line[512];
    int n = snprintf(line, sizeof line, "error %s\n", msg);
    if (n > 0) send_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Builds a reply with build(f) into memory, then sends "ok\n" and it;
 * or one error line naming what could not be built. */
static void reply_built(int fd, int (*build)(FILE *f), const char *what) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        reply_error(fd, "out of memory");
        return;
    }
    int rc = build(f);
    if (fclose(f) != 0 || rc != 0 || !buf) {
        char msg[96];
        snprintf(msg, sizeof msg, "cannot build the %s", what);
        reply_error(fd, msg);
    } else if (send_all(fd, "ok\n", 3) == 0) {
        send_all(fd, buf, len);
    }
    free(buf);
}

static int build_report(FILE *f) {
    char final[PATH_MAX];
    lw_report_final_path(final, sizeof final);
    return lw_report_emit(f, "live", final);
}

static void num_or_null(lw_jw *w, const char *key, double v) {
    if (isfinite(v))
        lw_jw_double(w, key, v);
    else
        lw_jw_null(w, key);
}

/* A few numbers, cheap enough for 'leakwatch ps' to ask every process. */
static int build_stats(FILE *f) {
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    int have = g.evaluations > 0;
    double oom_s = NAN, oom_steps;
    if (have) lw_growth_oom(&g, &oom_s, &oom_steps);
    lw_jw w;
    lw_jw_init(&w, f, 0);
    lw_jw_object(&w, NULL);
    lw_jw_int(&w, "pid", getpid());
    lw_jw_str(&w, "version", LEAKWATCH_VERSION);
    lw_jw_double(&w, "uptime_s", (double)(lw_run_now_ns() - lw_start_time_ns()) / 1e9);
    lw_jw_int(&w, "live_bytes", c.live_bytes);
    lw_jw_int(&w, "live_count", c.live_count);
    lw_jw_int(&w, "peak_live_bytes", c.peak_live_bytes);
    lw_jw_uint(&w, "alloc_count", c.alloc_count);
    lw_jw_uint(&w, "free_count", c.free_count);
    lw_jw_uint(&w, "failed_alloc_count", c.failed_count);
    lw_jw_str(&w, "verdict", lw_verdict_name(have ? g.verdict : LW_VERDICT_INCONCLUSIVE));
    num_or_null(&w, "bytes_per_step", have ? g.last.slope : NAN);
    num_or_null(&w, "oom_eta_seconds", oom_s);
    lw_jw_uint(&w, "steps", have ? g.steps : lw_step_now());
    lw_jw_end(&w);
    fputc('\n', f);
    return lw_jw_failed(&w) ? -1 : 0;
}

/* Writes the report to path through the shared atomic writer: readers never
 * see half of one, and nothing is written over a device, FIFO, socket,
 * directory or another user's link. */
static void reply_snapshot(int fd, const char *path) {
    char msg[PATH_MAX + 640], why[512] = "";
    if (path[0] != '/') {
        reply_error(fd, "snapshot needs an absolute path");
        return;
    }
    int rc = lw_report_snapshot(path, why, sizeof why);
    if (rc == LW_AF_FAILED) {
        snprintf(msg, sizeof msg, "cannot write %s: %s", path, why);
        reply_error(fd, msg);
        return;
    }
    snprintf(msg, sizeof msg, "ok %s\n", path);
    send_all(fd, msg, strlen(msg));
}

/* Detach (an attached process only): set by the attach, run on the serving
 * thread, which then stops serving. */
typedef int (*detach_fn_t)(char *msg, size_t n);
static _Atomic(detach_fn_t) detach_fn;
static int stop_serving;

void lw_control_set_detach(int (*fn)(char *msg, size_t n)) {
    atomic_store(&detach_fn, fn);
}

int lw_control_serving(void) {
    pthread_mutex_lock(&lock);
    int yes = running && owner == getpid();
    pthread_mutex_unlock(&lock);
    return yes;
}

static void reply_detach(int fd) {
    char msg[PATH_MAX + 64] = "", line[PATH_MAX + 80];
    detach_fn_t fn = atomic_load(&detach_fn);
    if (!fn) {
        reply_error(fd, "this process was started under leakwatch, not attached to: it has "
                        "nothing to detach (its report is written when it ends)");
        return;
    }
    if (fn(msg, sizeof msg) != 0) {
        reply_error(fd, msg[0] ? msg : "cannot detach");
        return;
    }
    stop_serving = 1;
    /* The socket goes before the answer: a client that asks again once it
     * has the answer finds no socket (not one that is still there, about to
     * go, and answers nothing: test_attach's second detach got exit 1 instead
     * of 4 now and then on a loaded machine). */
    pthread_mutex_lock(&lock);
    if (running && owner == getpid()) unlink(sock_path);
    pthread_mutex_unlock(&lock);
    snprintf(line, sizeof line, "ok\n%s\n", msg);
    send_all(fd, line, strlen(line));
}

static void serve_one(int fd) {
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
        (cred.uid != geteuid() && cred.uid != 0)) {
        reply_error(fd, "permission denied: only the same user or root may ask");
        return;
    }
    char req[PATH_MAX + 64];
    size_t n = 0;
    while (n < sizeof req - 1) {
        ssize_t r = recv(fd, req + n, sizeof req - 1 - n, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_client(fd, POLLIN) != 0) return;
            continue;
        }
        if (r <= 0) break;
        n += (size_t)r;
        if (memchr(req, '\n', n)) break;
    }
    req[n] = '\0';
    char *nl = strchr(req, '\n');
    if (!nl) {
        reply_error(fd, "expected one request line ending in a newline");
        return;
    }
    *nl = '\0';
    if (!strcmp(req, "ping")) {
        char line[96];
        snprintf(line, sizeof line, "ok leakwatch %s %ld\n", LEAKWATCH_VERSION, (long)getpid());
        send_all(fd, line, strlen(line));
    } else if (!strcmp(req, "report")) {
        reply_built(fd, build_report, "report");
    } else if (!strcmp(req, "stats")) {
        reply_built(fd, build_stats, "statistics");
    } else if (!strncmp(req, "snapshot ", 9)) {
        reply_snapshot(fd, req + 9);
    } else if (!strcmp(req, "detach")) {
        reply_detach(fd);
    } else {
        reply_error(fd, "unknown request; expected ping, stats, report, snapshot PATH or detach");
    }
}

static void stop_from_thread(void);

static void *serve(void *arg) {
    (void)arg;
    const served_fds *s = &served;
    struct pollfd p[1] = {{s->listen_fd, POLLIN, 0}};
    for (;;) {
        if (poll(p, 1, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (stopped(p[0].revents)) break;
        if (!(p[0].revents & POLLIN)) continue;
        /* The job may have closed our socket and got the number back for a
         * socket of its own: never accept its connections. */
        if (!ours(s->listen_fd, s->listen_id)) break;
        /* A seccomp filter installed since the start (the job's own sandbox,
         * sandbox.h): accepting may be what it punishes by killing the job.
         * The live view ends here. */
        if (lw_sandboxed()) {
            stop_from_thread();
            return NULL;
        }
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        serve_one(fd);
        close(fd);
        if (stop_serving) {
            stop_from_thread();
            return NULL;
        }
    }
    return NULL;
}

/* Closes only what is still ours; a number the job reuses is left to it. */
static void close_fds(void) {
    if (ours(listen_fd, listen_id)) close(listen_fd);
    listen_fd = -1;
}

/* After a detach, on the serving thread: the socket goes, the thread ends
 * (nobody joins it). lw_control_start serves again at a later attach. */
static void stop_from_thread(void) {
    pthread_mutex_lock(&lock);
    stop_serving = 0;
    if (running && owner == getpid()) {
        unlink(sock_path);
        close_fds();
        running = 0;
        pthread_detach(pthread_self());
    }
    pthread_mutex_unlock(&lock);
}

/* Sockets of processes that are gone (a child that left with _exit, a job
 * killed with SIGKILL): the folder is ours and private, so they are ours. */
static void remove_stale(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (pid <= 0 || pid > INT_MAX || !end || strcmp(end, ".sock") != 0) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
            st.st_uid == geteuid())
            unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d) closedir(d);
}

static void stop_at_exit(void) {
    lw_control_stop();
}

static int start_locked(void) {
    char dir[PATH_MAX], err[PATH_MAX + 128];
    if (lw_control_dir(1, dir, sizeof dir, err, sizeof err) != 0) {
        lw_log("live watching is off: %s", err);
        return -1;
    }
    if (snprintf(sock_path, sizeof sock_path, "%s/%ld.sock", dir, (long)getpid()) >=
        (int)sizeof sock_path) {
        lw_log("live watching is off: the socket path in %s is too long; set XDG_RUNTIME_DIR to "
               "a shorter folder",
               dir);
        return -1;
    }
    remove_stale(dir);
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) goto fail;
    listen_id = id_of(listen_fd);
    unlink(sock_path); /* left by a dead process that had our pid */
    if (bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0) goto fail;
    if (chmod(sock_path, 0600) != 0 || listen(listen_fd, 16) != 0) goto fail_unlink;
    listen_id = id_of(listen_fd);
    served = (served_fds){listen_fd, listen_id};
    /* The thread takes no signal: they belong to the program's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Joinable (lw_control_stop waits for it), with our threads' small
     * stack rather than the default 8 MiB of address space. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, LW_THREAD_STACK);
    int rc = pthread_create(&thread, &attr, serve, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        goto fail_unlink;
    }
    return 0;
fail_unlink:;
    int e = errno;
    unlink(sock_path);
    errno = e;
fail:
    lw_log("live watching is off: cannot serve %s: %s", sock_path, strerror(errno));
    close_fds();
    return -1;
}

void lw_control_start(void) {
    pthread_mutex_lock(&lock);
    pid_t me = getpid();
    if (running && owner != me) {
        /* A forked child: the thread and the socket are the parent's. */
        close_fds();
        running = 0;
    }
    if (!running && gave_up != me) {
        if (start_locked() == 0) {
            running = 1;
            owner = me;
            if (!exit_hooked && atexit(stop_at_exit) == 0) exit_hooked = 1;
        } else {
            gave_up = me;
        }
    }
    pthread_mutex_unlock(&lock);
}

void lw_control_stop(void) {
    pthread_mutex_lock(&lock);
    if (running && owner == getpid()) {
        /* Shut down, the socket wakes the thread's poll (POLLHUP) and
         * refuses new clients; a closed one wakes it with POLLNVAL. */
        if (ours(listen_fd, listen_id)) shutdown(listen_fd, SHUT_RDWR);
        /* A thread busy with a client (or one polling a number the job
         * reused for a file of its own) is not waited for longer than
         * STOP_WAIT_MS: the process ends it when it exits. Its descriptor is
         * then left open. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += STOP_WAIT_MS / 1000;
        until.tv_nsec += (STOP_WAIT_MS % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        int joined = pthread_timedjoin_np(thread, NULL, &until) == 0;
        /* Not waited for: detached, so that its end frees it (it is no
         * longer ours to join; a later start makes a new one). */
        if (!joined) pthread_detach(thread);
        unlink(sock_path);
        if (joined) close_fds();
        running = 0;
    }
    pthread_mutex_unlock(&lock);
}
