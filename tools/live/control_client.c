/* SPDX-License-Identifier: Apache-2.0 */
/* Talking to a watched process: finding its socket, one request, one answer.
 * Every failure becomes a sentence a person can act on. */
#include "control_client.h"

#include "cli.h"
#include "control_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A report of a big process takes a moment to symbolize; a hung one must
 * not hang the command. */
#define REPLY_TIMEOUT_MS 30000

int lw_sock_dirs(char dirs[2][4096], char *err, size_t errlen) {
    int n = 0;
    char cand[2][4096], why[512];
    err[0] = '\0';
    if (lw_control_dir(0, cand[0], sizeof cand[0], why, sizeof why) == 0) {
        snprintf(dirs[n++], 4096, "%s", cand[0]);
    } else if (access(cand[0], F_OK) == 0) {
        snprintf(err, errlen, "%s", why); /* exists but unsafe: say so */
    }
    if (lw_control_fallback_dir(cand[1], sizeof cand[1]) == 0 &&
        (n == 0 || strcmp(cand[1], dirs[0]) != 0)) {
        if (lw_control_check_dir(cand[1], why, sizeof why) == 0)
            snprintf(dirs[n++], 4096, "%s", cand[1]);
        else if (access(cand[1], F_OK) == 0 && !err[0])
            snprintf(err, errlen, "%s", why);
    }
    return n;
}

void lw_proc_cmdline(long pid, char *out, size_t n) {
    char p[64], buf[4096];
    snprintf(p, sizeof p, "/proc/%ld/cmdline", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (r <= 0) {
        snprintf(out, n, "?");
        return;
    }
    while (r > 0 && buf[r - 1] == '\0')
        r--;
    for (ssize_t i = 0; i < r; i++)
        if (buf[i] == '\0') buf[i] = ' ';
    buf[r] = '\0';
    lw_safe_text(buf, out, n);
}

/* The parent of process pid, from /proc/pid/stat (0 when unknown). */
static long parent_of(long pid) {
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may hold spaces and ')' */
    long ppid = 0;
    char state;
    if (rp == NULL || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2) return 0;
    return ppid;
}

/* A watched process among pid's descendants: `leakwatch run CMD &` then
 * `leakwatch top $!` names the command run is, not the job it started (nor
 * the interpreter a shell wrapper starts). Breadth first, a few generations;
 * the first found (lowest pid of the nearest generation). */
static int descendant_socket(long pid, char dirs[][4096], int nd, char *path, size_t n,
                             long *found) {
    long gen[64], next[64];
    int ng = 1;
    gen[0] = pid;
    for (int depth = 0; depth < 4 && ng > 0; depth++) {
        int nn = 0;
        DIR *d = opendir("/proc");
        if (d == NULL) return -1;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && nn < 64) {
            char *end;
            long c = strtol(e->d_name, &end, 10);
            if (*end != '\0' || c <= 0) continue;
            long pp = parent_of(c);
            for (int i = 0; i < ng; i++)
                if (pp == gen[i]) next[nn++] = c;
        }
        closedir(d);
        long best = 0;
        for (int k = 0; k < nn; k++)
            for (int i = 0; i < nd; i++) {
                struct stat st;
                if ((best == 0 || next[k] < best) &&
                    snprintf(path, n, "%s/%ld.sock", dirs[i], next[k]) < (int)n &&
                    lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                    best = next[k];
            }
        if (best != 0) {
            for (int i = 0; i < nd; i++) {
                struct stat st;
                if (snprintf(path, n, "%s/%ld.sock", dirs[i], best) < (int)n &&
                    lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
                    break;
            }
            *found = best;
            return 0;
        }
        memcpy(gen, next, sizeof next[0] * (size_t)nn);
        ng = nn;
    }
    return -1;
}

int lw_sock_for_args(const char *cmd, int argc, char **argv, int optind_, long *pid, char *path,
                     size_t n) {
    if (optind_ != argc - 1) return lw_cli_usage_error(cmd, "expected one PID");
    if (lw_parse_pid(argv[optind_], pid) != 0)
        return lw_cli_usage_error(cmd, "'%s' is not a process id", argv[optind_]);
    return lw_sock_find_follow(pid, path, n);
}

int lw_sock_find_follow(long *pid, char *path, size_t n) {
    char err[1200];
    int st = lw_sock_find(*pid, path, n, err, sizeof err);
    if (st != 0 && kill((pid_t)*pid, 0) == 0) {
        char dirs[2][4096], why[600];
        int nd = lw_sock_dirs(dirs, why, sizeof why);
        long child = 0;
        if (descendant_socket(*pid, dirs, nd, path, n, &child) == 0) {
            fprintf(stderr, "leakwatch: process %ld is not watched itself; its child %ld is\n",
                    *pid, child);
            *pid = child;
            return 0;
        }
    }
    if (st != 0) lw_cli_error("%s", err);
    return st;
}

/* The folder must be the user's own and private, as the library makes it:
 * then only that user (or root) can have put a socket there. */
static int users_dir(const char *dir, uid_t uid) {
    struct stat st;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid && !(st.st_mode & 077)
               ? 0
               : -1;
}

/* Root watching another user's process: its socket is in that user's
 * folder, $XDG_RUNTIME_DIR/leakwatch as the process sees it (read from
 * /proc/PID/environ), else /tmp/leakwatch-UID. */
static int other_users_socket(long pid, uid_t uid, char *path, size_t n) {
    char dirs[2][4096];
    int nd = 0;
    char envp[64], buf[65536];
    snprintf(envp, sizeof envp, "/proc/%ld/environ", pid);
    int fd = open(envp, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    for (ssize_t i = 0; r > 0 && i < r; i += (ssize_t)strlen(buf + i) + 1) {
        buf[r] = '\0';
        if (!strncmp(buf + i, "XDG_RUNTIME_DIR=/", 17)) {
            snprintf(dirs[nd++], sizeof dirs[0], "%s/leakwatch", buf + i + 16);
            break;
        }
    }
    snprintf(dirs[nd++], sizeof dirs[0], "/tmp/leakwatch-%ld", (long)uid);
    for (int i = 0; i < nd; i++) {
        struct stat st;
        if (users_dir(dirs[i], uid) == 0 &&
            snprintf(path, n, "%s/%ld.sock", dirs[i], pid) < (int)n && lstat(path, &st) == 0 &&
            S_ISSOCK(st.st_mode) && st.st_uid == uid)
            return 0;
    }
    return -1;
}

int lw_sock_find(long pid, char *path, size_t n, char *err, size_t errlen) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
        snprintf(err, errlen,
                 "process %ld is not running; 'leakwatch ps' lists the processes leakwatch "
                 "watches",
                 pid);
        return LW_EXIT_NO_PROCESS;
    }
    char dirs[2][4096], why[600];
    int nd = lw_sock_dirs(dirs, why, sizeof why);
    for (int i = 0; i < nd; i++) {
        struct stat st;
        if (snprintf(path, n, "%s/%ld.sock", dirs[i], pid) < (int)n && lstat(path, &st) == 0 &&
            S_ISSOCK(st.st_mode))
            return 0;
    }
    char cmd[200];
    lw_proc_cmdline(pid, cmd, sizeof cmd);
    struct stat pst;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%ld", pid);
    if (geteuid() == 0 && stat(proc, &pst) == 0 && pst.st_uid != 0 &&
        other_users_socket(pid, pst.st_uid, path, n) == 0)
        return 0;
    if (stat(proc, &pst) == 0 && pst.st_uid != geteuid() && geteuid() != 0) {
        snprintf(err, errlen,
                 "process %ld (%s) belongs to uid %ld: run leakwatch as that user to watch it", pid,
                 cmd, (long)pst.st_uid);
        return LW_EXIT_NO_PROCESS;
    }
    snprintf(err, errlen,
             "process %ld (%s) is not watched by leakwatch: start it with 'leakwatch run -- CMD' "
             "(its socket appears once it allocates CUDA memory)%s%s%s%s",
             pid, cmd, nd ? "; looked in " : "", nd ? dirs[0] : "", nd > 1 ? " and " : "",
             nd > 1 ? dirs[1] : "");
    if (why[0] && strlen(err) + strlen(why) + 8 < errlen) {
        strcat(err, "; ");
        strcat(err, why);
    }
    return LW_EXIT_NO_PROCESS;
}

static int wait_io(int fd, short ev, int ms) {
    struct pollfd p = {fd, ev, 0};
    int r;
    do
        r = poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r;
}

/* 1 when process pid is stopped (Ctrl-Z, SIGSTOP, a debugger): its server
 * thread cannot answer until it is continued. */
static int process_stopped(pid_t pid) {
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%ld/stat", (long)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may hold ')' */
    return rp && rp[1] == ' ' && (rp[2] == 'T' || rp[2] == 't');
}

/* Waits for an answer on fd for at most ms, looking every 200 ms whether the
 * serving process (server, 0: unknown) was stopped meanwhile: then 1 at
 * once, not a wait of 30 s that ends in "may be stuck". */
static int wait_answer(int fd, int ms, pid_t server, int *stopped) {
    *stopped = 0;
    for (int left = ms; left > 0;) {
        int slice = left < 200 ? left : 200;
        int r = wait_io(fd, POLLIN, slice);
        if (r != 0) return r;
        left -= slice;
        if (server > 0 && process_stopped(server)) {
            *stopped = 1;
            return 0;
        }
    }
    return 0;
}

char *lw_sock_request(const char *path, const char *req, size_t *len, char *err, size_t errlen) {
    return lw_sock_request_within(path, req, REPLY_TIMEOUT_MS, len, err, errlen);
}

char *lw_sock_request_within(const char *path, const char *req, int timeout_ms, size_t *len,
                             char *err, size_t errlen) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(err, errlen, "socket path %s is too long", path);
        return NULL;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        snprintf(err, errlen,
                 "cannot connect to %s: %s (the process may be exiting, or ran exec without "
                 "leakwatch)",
                 path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
        (cred.uid != geteuid() && cred.uid != 0 && geteuid() != 0)) {
        snprintf(err, errlen, "%s is served by another user (uid %ld); refusing to talk to it",
                 path, (long)cred.uid);
        close(fd);
        return NULL;
    }
    char line[4200];
    int ll = snprintf(line, sizeof line, "%s\n", req);
    if (ll <= 0 || ll >= (int)sizeof line || send(fd, line, (size_t)ll, MSG_NOSIGNAL) != ll) {
        snprintf(err, errlen, "cannot send the request to %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }
    for (;;) {
        int stopped = 0;
        if (wait_answer(fd, timeout_ms, cred.pid, &stopped) <= 0) {
            if (stopped)
                snprintf(err, errlen,
                         "the process is stopped (Ctrl-Z or SIGSTOP): it cannot answer until it "
                         "is continued ('kill -CONT %ld', or 'fg' in its shell)",
                         (long)cred.pid);
            else
                snprintf(err, errlen, "no answer from %s within %d s; the process may be stuck",
                         path, timeout_ms / 1000);
            free(buf);
            close(fd);
            return NULL;
        }
        if (n + 1 >= cap) {
            char *nb = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                snprintf(err, errlen, "the answer from %s is too large", path);
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb, cap *= 2;
        }
        ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    char *nl = memchr(buf, '\n', n);
    if (!nl || strncmp(buf, "ok", 2) != 0) {
        char shown[300];
        if (nl) *nl = '\0';
        snprintf(err, errlen, "%s answered: %s", path,
                 n ? lw_safe_text(!strncmp(buf, "error ", 6) ? buf + 6 : buf, shown, sizeof shown)
                   : "nothing (it closed the connection)");
        free(buf);
        return NULL;
    }
    /* "ok ...\n" then the body. */
    size_t head = (size_t)(nl - buf) + 1;
    if (!strcmp(req, "ping") || !strncmp(req, "snapshot ", 9))
        head = 0; /* the line is the answer */
    memmove(buf, buf + head, n - head + 1);
    *len = n - head;
    return buf;
}
