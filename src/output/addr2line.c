/* SPDX-License-Identifier: Apache-2.0 */
/* Source lines through an addr2line process, one per module, at report time.
 *
 * Why a child process and not a DWARF library (libdw, libbacktrace):
 *  - No new dependency. The shim is preloaded into every process of a job; a
 *    DWARF library would be loaded into all of them (libdw brings libelf, zlib,
 *    liblzma, libbz2, libzstd) and would have to exist on every machine that
 *    runs the shim. addr2line is optional: where it is missing, names still
 *    come from the symbol tables and only file:line is null.
 *  - Isolation. Reading DWARF is the largest and least trusted parsing the
 *    report does: the debug information of a big C++ library takes seconds and
 *    gigabytes, and a malformed file is somebody else's parser's crash. In a
 *    child those cost its memory and its life, not the training job's, and a
 *    deadline bounds the time.
 *  - It is well kept and does the hard parts already: DWARF 2 to 5, compressed
 *    sections, split and separate debug files (.gnu_debuglink, and
 *    /usr/lib/debug/.build-id/xx/yyyy.debug), inline chains (-i), demangling
 *    (-C).
 *
 * How, given that the report is written by an atexit handler or by the sampler
 * thread of a possibly large, multi-threaded process:
 *  - No child of the job's: addr2line is started by a short-lived
 *    intermediate process and runs as its orphan, so that the job sees
 *    nothing of it. A child that runs execve always sends SIGCHLD to its
 *    parent when it ends (the kernel resets its exit signal at exec), which
 *    would run the job's SIGCHLD handler, cut its sleeps short (EINTR) and
 *    let a waitpid(-1) of the job reap it. So:
 *      job thread --clone(CLONE_VM|CLONE_VFORK, exit signal 0)-->
 *      intermediate --clone(CLONE_VM|CLONE_VFORK, SIGCHLD)--> addr2line
 *    The intermediate never runs execve, so its exit signal stays none: it
 *    sends the job no SIGCHLD, and only waitpid(__WCLONE or __WALL) sees it,
 *    which we do at once (it exits as soon as addr2line has started, after
 *    sending us its pid through the socket). addr2line's
 *    parent is then init (or the nearest subreaper), which reaps it. Both
 *    clones suspend their parent until the child has run execve or exited,
 *    as posix_spawn does: nothing of the job is copied, no atfork handler or
 *    lock of the job runs, and only raw system calls run in the children.
 *    Both clones are the C library's own clone, looked up in it, never the
 *    first definition in the process: a preloaded runtime may wrap clone,
 *    and ThreadSanitizer's wrapper runs its fork bookkeeping in the child
 *    whatever the flags; with CLONE_VM that child shares the job's memory
 *    (and the calling thread's TLS), so it rewrote the job's ThreadSanitizer
 *    state (the thread then ignored its own locks, and every report written
 *    by it after a first addr2line showed a data race that was not there).
 *    We keep a pidfd of addr2line to wait for it and, on a timeout, kill it
 *    without the risk of signalling a reused pid. (A thread with a private
 *    signal disposition is not possible: dispositions are per process; a
 *    fork of the job would copy its page tables.) A job that made itself a
 *    subreaper (PR_SET_CHILD_SUBREAPER, init-like programs) does get
 *    addr2line as its child when the intermediate exits.
 *  - The child gets exactly fds 0 and 1 (one end of a socketpair) and 2
 *    (/dev/null); every other descriptor is closed in the child
 *    (close_range), so the job's sockets and files are not held open.
 *  - The child starts with every signal at its default action and none
 *    blocked; the parent blocks all signals around the clone so that no
 *    handler of the job runs in the child while it shares the job's memory.
 *  - LD_PRELOAD and LD_AUDIT are dropped from the child's environment, so it
 *    does not load this shim (nor, in the sanitizer build, the ASan runtime
 *    that LD_PRELOAD puts first); DEBUGINFOD_URLS too, so that writing a
 *    report never downloads anything.
 *  - A socket rather than a pipe, written with MSG_NOSIGNAL: if the child dies,
 *    writing to it must not raise SIGPIPE in the job.
 *  - Every read waits with poll until a deadline; on timeout the child is
 *    killed, and the report goes on without source lines for that module.
 *  - One address per request, followed by address 0, which no query uses: with
 *    -a each answer starts with the address it answers, so the echo of 0 marks
 *    where an answer with any number of inlined frames ends. addr2line flushes
 *    after each address it reads from its input. */
#include "addr2line.h"

#include "clock.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnu/lib-names.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A line longer than this (a C++ name can be long, not this long) means the
 * conversation is lost. */
#define MAX_LINE (1u << 20)
/* Inlined frames kept per address, the innermost ones. */
#define MAX_FRAMES 64

struct lw_a2l {
    pid_t pid;     /* addr2line, not our child (see the top of this file) */
    int pidfd;     /* a pidfd of it, or -1 */
    int fd;        /* our end of the socket; -1 once stopped */
    dev_t dev;     /* what fd and pidfd are (device, inode): a job that */
    ino_t ino;     /* closes descriptors it did not open may get these */
    dev_t pdev;    /* numbers back for its own files, which we must then */
    ino_t pino;    /* never write to or close */
    int timed_out; /* it was stopped for not answering in time */
    int slot;      /* in the fork registry, or -1 */
    char *buf;     /* bytes read, not yet consumed: buf[start, len) */
    size_t cap, len, start;
};

static _Atomic unsigned long started;

/* The descriptors of every running process, for lw_a2l_forget_after_fork:
 * slots taken and given back with atomic stores only, so that a fork at any
 * moment finds them readable. A process beyond the last slot is simply not
 * let go of in a child. */
#define SLOTS 64
static _Atomic int slot_fd[SLOTS], slot_pidfd[SLOTS];
static _Atomic int slot_used[SLOTS];

static int slot_take(int fd, int pidfd) {
    for (int i = 0; i < SLOTS; i++) {
        int z = 0;
        if (atomic_compare_exchange_strong(&slot_used[i], &z, 1)) {
            atomic_store(&slot_fd[i], fd);
            atomic_store(&slot_pidfd[i], pidfd);
            atomic_store(&slot_used[i], 2);
            return i;
        }
    }
    return -1;
}

static void slot_give(int i) {
    if (i < 0) return;
    atomic_store(&slot_used[i], 0);
}

void lw_a2l_forget_after_fork(void) {
    for (int i = 0; i < SLOTS; i++) {
        if (atomic_load(&slot_used[i]) != 2) continue;
        int fd = atomic_load(&slot_fd[i]), pidfd = atomic_load(&slot_pidfd[i]);
        if (fd >= 0) close(fd);
        if (pidfd >= 0) close(pidfd);
        atomic_store(&slot_used[i], 0);
    }
}

unsigned long lw_a2l_started(void) {
    return atomic_load(&started);
}

int lw_a2l_alive(const lw_a2l *a) {
    return a && a->fd >= 0;
}

const char *lw_a2l_tool(char **cache) {
    if (*cache) return **cache ? *cache : NULL;
    /* Binutils' first: it is the one installed with the compiler almost
     * everywhere. Both answer the same options in the same format. */
    static const char *const names[] = {"addr2line", "llvm-addr2line"};
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/bin:/bin";
    char cand[PATH_MAX];
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        for (const char *p = path; *p;) {
            const char *end = strchr(p, ':');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            /* Only absolute directories: a relative one would depend on the
             * job's working directory. */
            if (len && p[0] == '/' &&
                snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, names[n]) < (int)sizeof cand &&
                access(cand, X_OK) == 0) {
                *cache = strdup(cand);
                return *cache;
            }
            p += len + (end ? 1 : 0);
        }
    }
    *cache = strdup(""); /* remembered: none */
    return NULL;
}

void lw_a2l_tool_free(char *cache) {
    free(cache);
}

static int dropped_var(const char *e) {
    static const char *const names[] = {"LD_PRELOAD=", "LD_AUDIT=", "DEBUGINFOD_URLS="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(e, names[i], strlen(names[i])) == 0) return 1;
    return 0;
}

/* Our environment without the variables the child must not see. The strings
 * are shared with environ; only the array is new. */
static char **child_env(void) {
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!dropped_var(environ[i])) env[k++] = environ[i];
    /* Untranslated messages and "??" in the answers we parse. */
    env[k++] = "LC_ALL=C";
    env[k] = NULL;
    return env;
}

typedef int (*clone_fn)(int (*)(void *), void *, int, void *, ...);

/* The C library's clone (see the top of this file); the one this file would
 * call otherwise if the C library cannot be asked. */
static clone_fn libc_clone;
static pthread_once_t libc_clone_once = PTHREAD_ONCE_INIT;

static void libc_clone_init(void) {
    /* The reference RTLD_NOLOAD takes is kept: the C library is never
     * unloaded, and a dlclose here would count as code going away. */
    void *h = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    if (h) libc_clone = (clone_fn)lw_real_dlsym(h, "clone");
    if (!libc_clone) libc_clone = clone;
}

typedef struct {
    clone_fn clone; /* the C library's */
    int sock;       /* the child's end of the socketpair */
    const char *tool;
    char **argv, **env;
    char *stack2; /* the grandchild's stack (top) */
} spawn_args;

#define NO_SAN __attribute__((no_sanitize("address", "undefined"), no_sanitize_thread))

/* addr2line's side: the job's descriptors and signal mask are left behind. */
NO_SAN static int grandchild_main(void *p) {
    const spawn_args *a = p;
    int sock = a->sock;
    if (sock < 3) sock = (int)syscall(SYS_fcntl, sock, F_DUPFD, 3);
    int null = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY, 0);
    if (sock < 0 || null < 0 || syscall(SYS_dup3, sock, 0, 0) < 0 ||
        syscall(SYS_dup3, sock, 1, 0) < 0 || (null != 2 && syscall(SYS_dup3, null, 2, 0) < 0))
        syscall(SYS_exit, 127);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
#endif
        for (int fd = 3; fd < 65536; fd++)
            syscall(SYS_close, fd);
    unsigned long none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
    syscall(SYS_execve, a->tool, a->argv, a->env);
    syscall(SYS_exit, 127);
    return 127;
}

/* The intermediate: every signal at its default action (its own copy of the
 * dispositions: no CLONE_SIGHAND), all still blocked, then addr2line. */
NO_SAN static int intermediate_main(void *p) {
    spawn_args *a = p;
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        unsigned long mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    for (int sig = 1; sig < 65; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
    pid_t pid = a->clone(grandchild_main, a->stack2, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    /* addr2line's pid, as the first bytes its reader gets (through the
     * socket, not memory: under valgrind, this process is a fork). */
    if (pid > 0) syscall(SYS_write, a->sock, &pid, sizeof pid);
    syscall(SYS_exit, 0);
    return 0;
}

#define CHILD_STACK (64 * 1024)

/* Starts addr2line as described at the top; its pid, or -1. */
static pid_t spawn(const char *tool, char **argv, char **env, int sock, int reader) {
    char *stack = mmap(NULL, 2 * CHILD_STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return -1;
    pthread_once(&libc_clone_once, libc_clone_init);
    spawn_args a = {libc_clone, sock, tool, argv, env, stack + 2 * CHILD_STACK};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int saved = errno; /* the children share it until they exec or exit */
    pid_t mid = a.clone(intermediate_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK, &a);
    /* qemu-user (running leakwatch for another architecture) emulates the
     * clone as a fork and refuses any exit signal but SIGCHLD (EINVAL); Linux
     * itself never does. There the intermediate is a fork that sends the job
     * one SIGCHLD as it exits at once, which beats no source lines. */
    if (mid < 0 && errno == EINVAL)
        mid = a.clone(intermediate_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
    pid_t pid = -1;
    if (mid > 0) {
        int st;
        /* __WALL: valgrind turns the clone into a fork with SIGCHLD. */
        while (waitpid(mid, &st, __WALL) < 0 && errno == EINTR) {
        }
        pid_t got;
        if (recv(reader, &got, sizeof got, MSG_DONTWAIT) == (ssize_t)sizeof got && got > 0)
            pid = got;
    }
    errno = saved;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(stack, 2 * CHILD_STACK);
    return pid;
}

lw_a2l *lw_a2l_open(const char *tool, const char *module) {
    if (!tool || !module || module[0] != '/') return NULL;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return NULL;
    lw_a2l *a = calloc(1, sizeof *a);
    char **env = child_env();
    pid_t pid = -1;
    if (a && env) {
        char *argv[] = {(char *)tool, "-f", "-C", "-i", "-a", "-e", (char *)module, NULL};
        pid = spawn(tool, argv, env, sv[1], sv[0]);
    }
    free(env);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        free(a);
        return NULL;
    }
    atomic_fetch_add(&started, 1);
    a->pid = pid;
    a->fd = sv[0];
    struct stat st;
    if (fstat(a->fd, &st) == 0) a->dev = st.st_dev, a->ino = st.st_ino;
#ifdef SYS_pidfd_open
    a->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (a->pidfd >= 0) fcntl(a->pidfd, F_SETFD, FD_CLOEXEC);
    if (a->pidfd >= 0 && fstat(a->pidfd, &st) == 0) a->pdev = st.st_dev, a->pino = st.st_ino;
#else
    a->pidfd = -1;
#endif
    a->slot = slot_take(a->fd, a->pidfd);
    return a;
}

static int wait_fd(lw_a2l *a, short events, uint64_t deadline_ns) {
    for (;;) {
        uint64_t now = lw_now_ns();
        if (now >= deadline_ns) {
            a->timed_out = 1;
            return -1;
        }
        uint64_t ms = (deadline_ns - now + 999999) / 1000000;
        struct pollfd p = {.fd = a->fd, .events = events};
        int r = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int is_ours(int fd, dev_t dev, ino_t ino) {
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static int send_all(lw_a2l *a, const char *s, size_t n, uint64_t deadline_ns) {
    if (!is_ours(a->fd, a->dev, a->ino)) return -1;
    while (n) {
        ssize_t w = send(a->fd, s, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(a, POLLOUT, deadline_ns) != 0) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

/* The next line, without its newline; valid until the next call. NULL on end
 * of file, error or deadline. */
static char *read_line(lw_a2l *a, uint64_t deadline_ns) {
    for (;;) {
        char *nl = a->len > a->start ? memchr(a->buf + a->start, '\n', a->len - a->start) : NULL;
        if (nl) {
            *nl = '\0';
            char *line = a->buf + a->start;
            a->start = (size_t)(nl - a->buf) + 1;
            return line;
        }
        if (a->start) {
            memmove(a->buf, a->buf + a->start, a->len - a->start);
            a->len -= a->start;
            a->start = 0;
        }
        if (a->len == a->cap) {
            if (a->cap >= MAX_LINE) return NULL;
            size_t cap = a->cap ? a->cap * 2 : 4096;
            char *nb = realloc(a->buf, cap);
            if (!nb) return NULL;
            a->buf = nb;
            a->cap = cap;
        }
        if (wait_fd(a, POLLIN, deadline_ns) != 0) return NULL;
        ssize_t r = recv(a->fd, a->buf + a->len, a->cap - a->len, MSG_DONTWAIT);
        if (r == 0) return NULL;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return NULL;
        }
        a->len += (size_t)r;
    }
}

/* Whether line is the echo of an address (-a): "0x" and hex digits only.
 * No function name has that form. */
static int echo_of(const char *line, uint64_t *addr) {
    if (strncmp(line, "0x", 2) != 0 || !line[2]) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(line + 2, &end, 16);
    if (*end != '\0' || errno) return 0;
    *addr = v;
    return 1;
}

/* "FILE:LINE", possibly followed by " (discriminator N)"; "??" and "?" mean
 * unknown. */
static void parse_location(char *loc, lw_a2l_frame *f) {
    char *disc = strstr(loc, " (discriminator");
    if (disc) *disc = '\0';
    char *colon = strrchr(loc, ':');
    if (!colon) return;
    *colon = '\0';
    char *end = NULL;
    long line = strtol(colon + 1, &end, 10);
    if (end != colon + 1 && *end == '\0' && line > 0 && line <= INT_MAX) f->line = (int)line;
    if (loc[0] && strcmp(loc, "??") != 0) f->file = strdup(loc);
}

void lw_a2l_frames_free(lw_a2l_frame *f, int n) {
    for (int i = 0; f && i < n; i++) {
        free(f[i].function);
        free(f[i].file);
    }
    free(f);
}

/* Ends the conversation: EOF makes addr2line exit by itself; one that does
 * not within the grace period is killed, through its pidfd (never a pid that
 * may be another process's by now). Its parent, not us, reaps it. */
static void stop(lw_a2l *a, uint64_t grace_ns) {
    if (a->fd < 0) return;
    slot_give(a->slot);
    a->slot = -1;
    if (is_ours(a->fd, a->dev, a->ino)) close(a->fd);
    a->fd = -1;
    if (a->pidfd >= 0 && !is_ours(a->pidfd, a->pdev, a->pino)) a->pidfd = -1;
    if (a->pidfd < 0) return; /* no pidfd (kernel before 5.3): left to exit at EOF */
    uint64_t until = lw_now_ns() + grace_ns;
    for (;;) {
        uint64_t now = lw_now_ns();
        int ms = now >= until ? 0 : (int)((until - now + 999999) / 1000000);
        struct pollfd p = {.fd = a->pidfd, .events = POLLIN};
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) {
#ifdef SYS_pidfd_send_signal
            syscall(SYS_pidfd_send_signal, a->pidfd, SIGKILL, NULL, 0);
#endif
        }
        break;
    }
    if (is_ours(a->pidfd, a->pdev, a->pino)) close(a->pidfd);
    a->pidfd = -1;
}

int lw_a2l_query(lw_a2l *a, uint64_t vaddr, uint64_t deadline_ns, lw_a2l_frame **out) {
    *out = NULL;
    if (!a || a->fd < 0) return a && a->timed_out ? -2 : -1;
    if (vaddr == 0) return 0; /* 0 is the end marker */
    char req[48];
    int n = snprintf(req, sizeof req, "0x%llx\n0x0\n", (unsigned long long)vaddr);
    lw_a2l_frame *f = NULL;
    int nf = 0;
    uint64_t echo = 1;
    char *line;
    if (send_all(a, req, (size_t)n, deadline_ns) != 0) goto fail;
    if (!(line = read_line(a, deadline_ns)) || !echo_of(line, &echo) || echo != vaddr) goto fail;
    for (;;) {
        if (!(line = read_line(a, deadline_ns))) goto fail;
        if (echo_of(line, &echo)) {
            if (echo != 0) goto fail;
            break;
        }
        char *fn = strcmp(line, "??") != 0 ? strdup(line) : NULL;
        if (!(line = read_line(a, deadline_ns))) {
            free(fn);
            goto fail;
        }
        if (nf == MAX_FRAMES) {
            /* Too deep: keep the innermost frames and the outermost one,
             * which is the function the address belongs to. */
            free(f[nf - 1].function);
            free(f[nf - 1].file);
            nf--;
        }
        lw_a2l_frame *nfp = realloc(f, (size_t)(nf + 1) * sizeof *f);
        if (!nfp) {
            free(fn);
            goto fail;
        }
        f = nfp;
        f[nf] = (lw_a2l_frame){fn, NULL, 0};
        parse_location(line, &f[nf]);
        nf++;
    }
    /* The marker's own answer: a name line and a location line. */
    if (!read_line(a, deadline_ns) || !read_line(a, deadline_ns)) goto fail;
    /* Nothing known at all reads as no frame. */
    if (nf == 1 && !f[0].function && !f[0].file) {
        lw_a2l_frames_free(f, nf);
        return 0;
    }
    *out = f;
    return nf;
fail:
    lw_a2l_frames_free(f, nf);
    stop(a, 0);
    return a->timed_out ? -2 : -1;
}

void lw_a2l_close(lw_a2l *a) {
    if (!a) return;
    stop(a, 200000000u);
    free(a->buf);
    free(a);
}
