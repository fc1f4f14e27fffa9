/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch run [options] -- CMD ARGS...
 * Runs CMD with this installation's libleakwatch.so preloaded and the options
 * turned into the library's LEAKWATCH_* variables; forwards signals; exits
 * with CMD's status. */
#include "cli.h"
#include "commands.h"
#include "merge.h"
#include "model.h"
#include "run_decisions.h"

#include "atomic_file.h"
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch run [options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD with leakwatch loaded (LD_PRELOAD), so that every CUDA allocation\n"
    "is recorded; a report is written when the program exits.\n"
    "\n"
    "options:\n"
    "  -r, --report PATH       report file (LEAKWATCH_REPORT); %p = pid, %h = host,\n"
    "                          %r = rank\n"
    "      --interval MS       sampling interval in ms (LEAKWATCH_INTERVAL_MS)\n"
    "      --mode MODE         PyTorch view (LEAKWATCH_TORCH_MODE): segments (default;\n"
    "                          PyTorch's allocator untouched, tensor growth from its\n"
    "                          counters, lines from its allocation history) or tensors\n"
    "                          (switches to backend:cudaMallocAsync, one record per\n"
    "                          tensor; PyTorch then refuses torch.compile with CUDA\n"
    "                          graphs (reduce-overhead, max-autotune, cudagraphs),\n"
    "                          memory history and snapshots, CUDA tensors through\n"
    "                          torch.multiprocessing, MemPool/use_mem_pool, symmetric\n"
    "                          memory, attachOutOfMemoryObserver and NCCL's allocator\n"
    "                          trace hook, and ignores max_split_size_mb,\n"
    "                          roundup_power2_divisions, garbage_collection_threshold\n"
    "                          and memory fractions)\n"
    "      --report-every S    also write the report every S seconds (LEAKWATCH_REPORT_EVERY)\n"
    "      --prometheus PATH   write Prometheus textfile metrics (LEAKWATCH_PROMETHEUS)\n"
    "      --no-stacks         count bytes without call stacks (LEAKWATCH_STACKS=0)\n"
    "      --max-frames N      native frames kept per stack (LEAKWATCH_MAX_FRAMES)\n"
    "      --max-sites N       distinct call sites tracked (LEAKWATCH_MAX_SITES)\n"
    "      --report-sites N    call sites written to the report (LEAKWATCH_REPORT_SITES)\n"
    "      --user-code LIST    more code that counts as yours when naming the place to\n"
    "                          look: path prefixes or package names, ':' or ','\n"
    "                          between them (LEAKWATCH_USER_CODE)\n"
    "  -s, --set NAME=VALUE    any LEAKWATCH_* setting (NAME with or without the\n"
    "                          prefix, any case); checked like the others\n"
    "  -q, --quiet             errors only, and the report's path at the end\n"
    "                          (LEAKWATCH_QUIET)\n"
    "      --fail-on-leak      exit with status 3 when the program succeeded but the\n"
    "                          report's verdict is leak, 5 when it is inconclusive\n"
    "      --allow-inconclusive  with --fail-on-leak: an inconclusive verdict passes\n"
    "      --library PATH      preload this libleakwatch.so instead of the one\n"
    "                          installed with this command\n"
    "      --cuda-stand-ins    run CMD on leakwatch's CPU stand-ins for libcuda.so.1\n"
    "                          and libcudart.so (put first on LD_LIBRARY_PATH): try\n"
    "                          leakwatch without a GPU\n"
    "  -h, --help              this help\n"
    "\n"
    "Signals INT, TERM, HUP, QUIT, USR1 and USR2 sent to leakwatch are passed on to\n"
    "CMD (Ctrl-C reaches CMD directly, once). Without --report the library writes\n"
    "leakwatch-PID.json in the current folder; with --fail-on-leak and no --report,\n"
    "every process writes it in the folder CMD was started in, and each one written\n"
    "there during the run is read.\n"
    "\n"
    "exit status: CMD's own status, 128+N when CMD was killed by signal N;\n"
    "3 with --fail-on-leak when CMD exited 0 and the verdict is leak, 5 when it is\n"
    "inconclusive (unless --allow-inconclusive);\n"
    "125 leakwatch run failed (bad option, library not found or not loadable,\n"
    "unreadable report; the program is not started when the library cannot be loaded);\n"
    "126 CMD cannot be executed; 127 CMD not found.\n";

enum { MAX_SETTINGS = 64 };

typedef struct {
    const char *name; /* LEAKWATCH_... */
    char *value;
} setting;

static setting settings[MAX_SETTINGS];
static int nsettings;

static int add_setting(const char *opt, const char *name, const char *value) {
    char err[200];
    if (lw_run_check_setting(name, value, err, sizeof err) != 0) {
        lw_cli_error("%s%s%s: %s (see 'leakwatch run --help')", opt ? opt : name, opt ? " " : "=",
                     value, err);
        return -1;
    }
    for (int i = 0; i < nsettings; i++)
        if (!strcmp(settings[i].name, name)) {
            free(settings[i].value);
            settings[i].value = strdup(value);
            return 0;
        }
    if (nsettings == MAX_SETTINGS) {
        lw_cli_error("too many settings (over %d)", MAX_SETTINGS);
        return -1;
    }
    settings[nsettings].name = name;
    settings[nsettings++].value = strdup(value);
    return 0;
}

static const char *setting_value(const char *name) {
    for (int i = 0; i < nsettings; i++)
        if (!strcmp(settings[i].name, name)) return settings[i].value;
    return NULL;
}

/* ---- signals ---- */

static volatile sig_atomic_t job_pid;
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
enum { NFORWARDED = sizeof forwarded / sizeof forwarded[0] };

static void forward(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    pid_t p = (pid_t)job_pid;
    if (p <= 0) return;
    /* A signal from the terminal (Ctrl-C, Ctrl-\) went to the whole foreground
     * process group, the job included: sending it again would interrupt the
     * job's own clean-up a second time. */
    if (si && si->si_code == SI_KERNEL && getpgid(p) == getpgrp()) return;
    int e = errno;
    kill(p, sig);
    errno = e;
}

static void install_forwarding(sigset_t *blocked) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigemptyset(blocked);
    for (int i = 0; i < NFORWARDED; i++) {
        sigaction(forwarded[i], &sa, NULL);
        sigaddset(blocked, forwarded[i]);
    }
}

/* ---- the job ---- */

/* `leakwatch run CMD &` gives the shell the wrapper's pid: the job's own,
 * once it has started, so that `leakwatch top` can be pointed at it (it
 * follows the wrapper's too). */
static void say_pid(char **argv, pid_t pid) {
    char cmd[160], shown[200];
    size_t o = 0;
    cmd[0] = '\0';
    for (int i = 0; argv[i] && o + 1 < sizeof cmd; i++) {
        int w = snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", argv[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o >= sizeof cmd - 1) memcpy(cmd + sizeof cmd - 4, "...", 4);
    fprintf(stderr, "leakwatch: watching PID %ld (%s); leakwatch top %ld\n", (long)pid,
            lw_safe_text(cmd, shown, sizeof shown), (long)pid);
}

/* Runs argv; returns its wait status, or -1 (then *exec_errno says why the
 * exec failed, or is 0 when fork itself failed). Says the job's pid once it
 * has started, unless quiet. */
static void expand(const char *tpl, pid_t pid, const char *rank, char *out, size_t n);

/* The temporary files of the job's report that it left, killed between
 * creating one and renaming it (a writer on a filesystem without O_TMPFILE,
 * or in the moment between naming and renaming): removed once it has ended,
 * while its pid is still its own (not reaped yet). The library's own
 * cleanup at start leaves those of a minute or less (a writer on another
 * machine sharing the folder may still be writing its own). */
static void forget_temporaries(const char *tpl, pid_t pid) {
    if (!tpl) tpl = "leakwatch-%p.json"; /* the library's own default, in this folder */
    if (!strcmp(tpl, "none") || strstr(tpl, "%r")) return;
    char path[PATH_MAX];
    expand(tpl, pid, "0", path, sizeof path);
    lw_atomic_forget(path, (long)pid);
}

static int run_job(char **argv, int *exec_errno, pid_t *job, int quiet, const char *tpl) {
    sigset_t blocked, old;
    install_forwarding(&blocked);
    /* Signals that arrive before job_pid is known stay pending, then go on. */
    sigprocmask(SIG_BLOCK, &blocked, &old);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        *exec_errno = 0;
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        *exec_errno = 0;
        close(pipefd[0]);
        close(pipefd[1]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return -1;
    }
    if (pid == 0) {
        for (int i = 0; i < NFORWARDED; i++)
            signal(forwarded[i], SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pipefd[0]);
        execvp(argv[0], argv);
        int e = errno;
        if (write(pipefd[1], &e, sizeof e) < 0) _exit(LW_EXIT_CANNOT_EXEC);
        _exit(e == ENOENT ? LW_EXIT_NOT_FOUND : LW_EXIT_CANNOT_EXEC);
    }
    job_pid = pid;
    *job = pid;
    close(pipefd[1]);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int e = 0;
    ssize_t got;
    do
        got = read(pipefd[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got != (ssize_t)sizeof e && !quiet) say_pid(argv, pid);
    int status = 0;
    siginfo_t ended;
    while (waitid(P_PID, (id_t)pid, &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    if (got != (ssize_t)sizeof e) forget_temporaries(tpl, pid);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    job_pid = 0;
    if (got == (ssize_t)sizeof e) {
        *exec_errno = e;
        return -1;
    }
    return status;
}

/* ---- the report afterwards ---- */

/* %p, %h and %% as the library expands them, with the job's pid; %r as
 * rank (each process of a job expands it to its own rank: "*" to find them
 * all with glob). */
static void expand(const char *tpl, pid_t pid, const char *rank, char *out, size_t n) {
    size_t o = 0;
    char host[256] = "unknown-host", tmp[300];
    gethostname(host, sizeof host - 1);
    for (const char *p = tpl; *p && o + 1 < n; p++) {
        const char *add = NULL;
        if (p[0] == '%' && p[1] == 'p')
            snprintf(tmp, sizeof tmp, "%ld", (long)pid), add = tmp, p++;
        else if (p[0] == '%' && p[1] == 'h')
            add = host, p++;
        else if (p[0] == '%' && p[1] == 'r')
            add = rank, p++;
        else if (p[0] == '%' && p[1] == '%')
            add = "%", p++;
        if (add) {
            size_t l = strlen(add);
            if (o + l >= n) break;
            memcpy(out + o, add, l), o += l;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* --quiet: errors only, and where the report is (the library's summary, which
 * names it otherwise, is silent then): its path, when this run wrote it. */
static void say_report_path(const char *tpl, pid_t pid, time_t started) {
    if (!strcmp(tpl, "none") || !strcmp(tpl, "/dev/null")) return;
    char path[PATH_MAX], shown[PATH_MAX];
    expand(tpl, pid, "0", path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < started) return;
    fprintf(stderr, "leakwatch: report: %s\n", lw_safe_text(path, shown, sizeof shown));
}

static int allow_inconclusive; /* --allow-inconclusive */

/* The verdict of one report, as the gate reads it: with the place to look
 * for a leak (a CI log under --quiet must still name the line), with the
 * reason for an inconclusive one. */
static void say_verdict(const char *path, const lw_model *m) {
    char where[512] = "", shown[PATH_MAX], reason[1200], line[1200];
    lw_answer a;
    lw_model_answer(m, &a, where, sizeof where);
    lw_safe_text(path, shown, sizeof shown);
    if (m->verdict == LW_VERDICT_LEAK && a.where)
        fprintf(stderr, "leakwatch: %s: verdict leak in %s\n", shown, a.where);
    else if (m->verdict == LW_VERDICT_INCONCLUSIVE) /* its reason, and what would decide it */
        fprintf(stderr, "leakwatch: %s: verdict %s\n", shown,
                lw_safe_text(lw_answer_line(&a, line, sizeof line), reason, sizeof reason));
    else
        fprintf(stderr, "leakwatch: %s: verdict %s\n", shown, lw_verdict_name(m->verdict));
}

/* Checks one report: its gate status (lw_run_gate), -1 unreadable (message
 * printed), -2 none written since the start. */
static int report_leaks(const char *path, time_t started, int quiet) {
    struct stat st;
    if (stat(path, &st) != 0) return -2;
    if (st.st_mtime < started) return -2; /* left from an earlier run */
    char err[1024];
    lw_model m;
    if (lw_model_load(&m, path, err, sizeof err) != 0) {
        lw_cli_error("%s", err);
        lw_model_free(&m);
        return -1;
    }
    int gate = lw_run_gate(&m, allow_inconclusive);
    if (!quiet || gate) say_verdict(path, &m);
    lw_model_free(&m);
    return gate;
}

/* The reports of this run counted so far (their paths), for the merged
 * view at the end. */
static char **counted;
static size_t ncounted;

/* One more of a job's reports into the tally: *found counts the reports
 * written since the start; *leak joins their gate statuses
 * (lw_run_gate_join: -1 once one cannot be read). */
static void tally(const char *path, time_t started, int quiet, int *found, int *leak) {
    for (size_t i = 0; i < ncounted; i++)
        if (!strcmp(counted[i], path)) return; /* matched by two patterns */
    int r = report_leaks(path, started, quiet);
    if (r == -2) return;
    ++*found;
    *leak = lw_run_gate_join(*leak, r);
    char **more = realloc(counted, (ncounted + 1) * sizeof *more);
    if (!more) return;
    counted = more;
    if ((counted[ncounted] = strdup(path)) != NULL) ncounted++;
}

/* Several reports of one run (ranks, processes): the merged view's first
 * line, the skew of a leaking rank against the others, and how to see them
 * together. */
static void say_merged(int quiet) {
    if (ncounted < 2) return;
    lw_model *ms = calloc(ncounted, sizeof *ms);
    size_t n = 0;
    char err[1024], line[1400], shown[1400];
    for (size_t i = 0; ms && i < ncounted; i++) {
        if (lw_model_load(&ms[n], counted[i], err, sizeof err) == 0)
            n++;
        else
            lw_model_free(&ms[n]);
    }
    if (n >= 2) {
        int kind = lw_merge_headline(ms, n, line, sizeof line);
        if (!quiet || kind == 1) {
            fprintf(stderr, "leakwatch: %zu reports of this run: %s\n", n,
                    lw_safe_text(line, shown, sizeof shown));
            if (lw_merge_skew(ms, n, line, sizeof line))
                fprintf(stderr, "leakwatch: %s\n", lw_safe_text(line, shown, sizeof shown));
            fprintf(stderr, "leakwatch: see them together: leakwatch report");
            for (size_t i = 0; i < ncounted && i < 16; i++)
                fprintf(stderr, " %s", lw_safe_text(counted[i], shown, sizeof shown));
            fprintf(stderr, "%s\n", ncounted > 16 ? " ..." : "");
        }
    }
    for (size_t i = 0; i < n; i++)
        lw_model_free(&ms[i]);
    free(ms);
}

/* The reports of processes that found the template's file taken (NAME.PID.json,
 * the library's report_file.c) or forked children: written since the start. */
static void tally_own_names(const char *path, time_t started, int quiet, int *found, int *leak) {
    char pattern[PATH_MAX + 8];
    size_t len = strlen(path);
    size_t at = len >= 5 && !strcmp(path + len - 5, ".json") ? len - 5 : len;
    size_t o = 0;
    for (size_t i = 0; i < at && o + 2 < PATH_MAX; i++) {
        if (strchr("*?[\\", path[i])) pattern[o++] = '\\';
        pattern[o++] = path[i];
    }
    snprintf(pattern + o, sizeof pattern - o, ".[0-9]*%s", path + at);
    glob_t g;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            tally(g.gl_pathv[i], started, quiet, found, leak);
    }
    globfree(&g);
}

/* A --report with %r: every process of the job wrote the report of its own
 * rank (a launcher's workers), so every rank's report written since the start
 * counts, as in the folder of --fail-on-leak without --report. */
static int ranks_leak(const char *tpl, pid_t pid, time_t started, int quiet) {
    char pattern[PATH_MAX];
    expand(tpl, pid, "*", pattern, sizeof pattern);
    glob_t g;
    int leak = 0, found = 0;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            tally(g.gl_pathv[i], started, quiet, &found, &leak);
    }
    globfree(&g);
    if (!found && !quiet)
        fprintf(stderr, "leakwatch: no new report at %s: the program never allocated CUDA memory\n",
                pattern);
    return leak;
}

/* --fail-on-leak without --report: every process of the job writes
 * leakwatch-PID.json in the folder the job was started in (the pattern is
 * that folder's leakwatch-*.json). The files there before the start are
 * remembered (name, inode, modification time to the nanosecond), so that a
 * report left by an earlier run, even one in the same second, is never read
 * as this job's, whatever the clock. */
typedef struct {
    char *path;
    ino_t ino;
    struct timespec mtime;
} seen_file;
static seen_file *before_start;
static size_t nbefore_start;

static void remember_folder(const char *pattern) {
    glob_t g;
    if (glob(pattern, 0, NULL, &g) == 0 &&
        (before_start = calloc(g.gl_pathc, sizeof *before_start))) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct stat st;
            if (stat(g.gl_pathv[i], &st) != 0 ||
                !(before_start[nbefore_start].path = strdup(g.gl_pathv[i])))
                continue;
            before_start[nbefore_start].ino = st.st_ino;
            before_start[nbefore_start++].mtime = st.st_mtim;
        }
    }
    globfree(&g);
}

/* 1 when path was written since the start (new, or changed). */
static int written_since_start(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    for (size_t i = 0; i < nbefore_start; i++)
        if (!strcmp(before_start[i].path, path))
            return before_start[i].ino != st.st_ino ||
                   before_start[i].mtime.tv_sec != st.st_mtim.tv_sec ||
                   before_start[i].mtime.tv_nsec != st.st_mtim.tv_nsec;
    return 1;
}

/* Under --quiet, where the reports are is said when the gate passes (a
 * failing one was named). */
static int folder_leaks(const char *pattern, int quiet) {
    glob_t g;
    int leak = 0, found = 0;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            if (!written_since_start(g.gl_pathv[i])) continue;
            tally(g.gl_pathv[i], 0, quiet, &found, &leak);
            if (quiet && leak == 0) fprintf(stderr, "leakwatch: report: %s\n", g.gl_pathv[i]);
        }
    }
    globfree(&g);
    for (size_t i = 0; i < nbefore_start; i++)
        free(before_start[i].path);
    free(before_start);
    before_start = NULL, nbefore_start = 0;
    if (!found && !quiet)
        fprintf(stderr, "leakwatch: no report was written: the program never allocated CUDA "
                        "memory (leakwatch starts at the first allocation)\n");
    return leak;
}

/* The gate status of the job's reports (lw_run_gate_join of each). */
static int job_leaks(const char *tpl, const char *folder_pattern, pid_t pid, time_t started,
                     int quiet) {
    if (folder_pattern) return folder_leaks(folder_pattern, quiet);
    char path[PATH_MAX];
    if (strstr(tpl, "%r")) return ranks_leak(tpl, pid, started, quiet);
    expand(tpl, pid, "0", path, sizeof path);
    int found = 0, r = 0;
    tally(path, started, quiet, &found, &r);
    if (!found) r = -2;
    if (!strstr(tpl, "%p")) {
        int more = 0, leak = r == -2 ? 0 : r;
        tally_own_names(path, started, quiet, &more, &leak);
        if (more) r = leak;
    }
    if (r == LW_EXIT_OK && quiet) say_report_path(tpl, pid, started);
    if (r == -2) {
        if (!quiet)
            fprintf(stderr,
                    "leakwatch: no new report at %s: the program never allocated CUDA memory%s\n",
                    path,
                    strstr(tpl, "%p") ? ", or a child process wrote its own (%p is each "
                                        "process's pid)"
                                      : "");
        return 0;
    }
    return r;
}

/* A job that never called CUDA gets no report and no word from the
 * library (it must not print in such a process): run says so, once, when no
 * report of the job (nor of a child, with %p) was written since the start. */
static int on_stand_ins; /* --cuda-stand-ins */

static void say_if_nothing_seen(const char *tpl, const char *prog, pid_t pid, time_t started,
                                int failed) {
    if (!strcmp(tpl, "none") || !strcmp(tpl, "/dev/null") || strstr(tpl, "%r")) return;
    char any[PATH_MAX], pattern[PATH_MAX], shown[256];
    size_t o = 0;
    for (const char *p = tpl; *p && o + 2 < sizeof any; p++) {
        if (p[0] == '%' && p[1] == 'p')
            any[o++] = '*', p++;
        else
            any[o++] = *p;
    }
    any[o] = '\0';
    expand(any, pid, "0", pattern, sizeof pattern);
    glob_t g;
    int seen = 0;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc && !seen; i++) {
            struct stat st;
            seen = stat(g.gl_pathv[i], &st) == 0 && st.st_mtime >= started;
        }
    globfree(&g);
    /* A job that failed without one allocation seen may have failed on
     * CUDA itself: no GPU or no driver here (error 100, 35), in a call
     * leakwatch does not watch (cudaSetDevice, cudaGetDeviceCount) before
     * any allocation. */
    if (!seen)
        fprintf(stderr,
                "leakwatch: nothing seen: %s made no CUDA allocation, so no report was written "
                "(leakwatch starts at the first allocation)%s\n",
                lw_safe_text(prog, shown, sizeof shown),
                failed && !on_stand_ins
                    ? "; if it failed on CUDA itself (no GPU or no driver here: error 100 or "
                      "35), try it on the CPU stand-ins: leakwatch run --cuda-stand-ins -- CMD"
                    : "");
}

static int finish(int status, int exec_errno, const char *prog, int fail_on_leak, const char *tpl,
                  const char *folder_pattern, pid_t pid, time_t started, int quiet);

/* ---- options ---- */

int lw_cmd_run(int argc, char **argv) {
    enum {
        O_INTERVAL = 256,
        O_MODE,
        O_EVERY,
        O_PROM,
        O_NOSTACKS,
        O_FRAMES,
        O_SITES,
        O_RSITES,
        O_FAIL,
        O_LIB,
        O_STANDINS,
        O_USER_CODE,
        O_ALLOW
    };
    static const struct option longs[] = {{"report", required_argument, NULL, 'r'},
                                          {"interval", required_argument, NULL, O_INTERVAL},
                                          {"mode", required_argument, NULL, O_MODE},
                                          {"report-every", required_argument, NULL, O_EVERY},
                                          {"prometheus", required_argument, NULL, O_PROM},
                                          {"no-stacks", no_argument, NULL, O_NOSTACKS},
                                          {"max-frames", required_argument, NULL, O_FRAMES},
                                          {"max-sites", required_argument, NULL, O_SITES},
                                          {"report-sites", required_argument, NULL, O_RSITES},
                                          {"set", required_argument, NULL, 's'},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"fail-on-leak", no_argument, NULL, O_FAIL},
                                          {"allow-inconclusive", no_argument, NULL, O_ALLOW},
                                          {"library", required_argument, NULL, O_LIB},
                                          {"cuda-stand-ins", no_argument, NULL, O_STANDINS},
                                          {"user-code", required_argument, NULL, O_USER_CODE},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    int c, fail_on_leak = 0, quiet = 0, stand_ins = 0, li = -1;
    const char *library = NULL;
    char optname[64];
    opterr = 0;
    while ((li = -1, c = getopt_long(argc, argv, "+:r:s:qh", longs, &li)) != -1) {
        const char *env = NULL, *value = optarg;
        switch (c) {
        case 'r':
            env = "LEAKWATCH_REPORT";
            break;
        case O_INTERVAL:
            env = "LEAKWATCH_INTERVAL_MS";
            break;
        case O_MODE:
            env = "LEAKWATCH_TORCH_MODE";
            break;
        case O_EVERY:
            env = "LEAKWATCH_REPORT_EVERY";
            break;
        case O_PROM:
            env = "LEAKWATCH_PROMETHEUS";
            break;
        case O_NOSTACKS:
            env = "LEAKWATCH_STACKS", value = "0";
            break;
        case O_FRAMES:
            env = "LEAKWATCH_MAX_FRAMES";
            break;
        case O_SITES:
            env = "LEAKWATCH_MAX_SITES";
            break;
        case O_RSITES:
            env = "LEAKWATCH_REPORT_SITES";
            break;
        case O_USER_CODE:
            env = "LEAKWATCH_USER_CODE";
            break;
        case 'q':
            env = "LEAKWATCH_QUIET", value = "1", quiet = 1;
            break;
        case 's': {
            const char *eq = strchr(optarg, '=');
            char name[128];
            if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof name) {
                lw_cli_error("--set %s: expected NAME=VALUE (see 'leakwatch run --help')", optarg);
                return LW_EXIT_RUN_FAILED;
            }
            snprintf(name, sizeof name, "%.*s", (int)(eq - optarg), optarg);
            env = lw_run_setting_name(name);
            if (!env) {
                char known[1024];
                lw_run_known_settings(known, sizeof known);
                lw_cli_error("--set %s: unknown setting %s; known: %s", optarg, name, known);
                return LW_EXIT_RUN_FAILED;
            }
            value = eq + 1;
            if (!strcmp(env, "LEAKWATCH_QUIET")) quiet = 1;
            break;
        }
        case O_FAIL:
            fail_on_leak = 1;
            break;
        case O_ALLOW:
            allow_inconclusive = 1;
            break;
        case O_LIB:
            library = optarg;
            break;
        case O_STANDINS:
            stand_ins = on_stand_ins = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return LW_EXIT_OK;
        case ':':
            lw_cli_error("%s needs a value (see 'leakwatch run --help')", argv[optind - 1]);
            return LW_EXIT_RUN_FAILED;
        default:
            lw_cli_error("unknown option %s (see 'leakwatch run --help'); to pass options to the "
                         "program, put them after --",
                         lw_bad_option(argv));
            return LW_EXIT_RUN_FAILED;
        }
        if (env) {
            /* The option as the user wrote it, for messages: --name or -c. */
            if (li >= 0)
                snprintf(optname, sizeof optname, "--%s", longs[li].name);
            else
                snprintf(optname, sizeof optname, "-%c", c);
            if (add_setting(c == 's' ? NULL : optname, env, value) != 0) return LW_EXIT_RUN_FAILED;
        }
    }
    if (optind >= argc) {
        lw_cli_error("no program given: leakwatch run [options] -- CMD [ARGS...]");
        return LW_EXIT_RUN_FAILED;
    }
    if (lw_run_quiet_env()) quiet = 1;

    char lib[PATH_MAX];
    char err[PATH_MAX + 256];
    if (lw_run_find_library(library, lib, sizeof lib, err, sizeof err) != 0) {
        lw_cli_error("%s", err);
        return LW_EXIT_RUN_FAILED;
    }
    char *preload = lw_run_preload(lib, getenv("LD_PRELOAD"));
    if (!preload || setenv("LD_PRELOAD", preload, 1) != 0) {
        lw_cli_error("cannot set LD_PRELOAD: out of memory");
        free(preload);
        return LW_EXIT_RUN_FAILED;
    }
    free(preload);
    if (stand_ins) {
        char dir[PATH_MAX];
        if (lw_run_find_stand_ins(dir, sizeof dir, err, sizeof err) != 0) {
            lw_cli_error("%s", err);
            return LW_EXIT_RUN_FAILED;
        }
        char *path = lw_run_library_path(dir, getenv("LD_LIBRARY_PATH"));
        if (!path || setenv("LD_LIBRARY_PATH", path, 1) != 0) {
            lw_cli_error("cannot set LD_LIBRARY_PATH: out of memory");
            free(path);
            return LW_EXIT_RUN_FAILED;
        }
        free(path);
    }

    /* The loader would refuse the library: say so and start nothing (the job
     * would otherwise run unwatched, or fail as if it were not found). */
    if (lw_run_probe_preload(lib, getenv("LD_PRELOAD"), err, sizeof err) < 0) {
        lw_cli_error("%s", err);
        return LW_EXIT_RUN_FAILED;
    }

    /* --fail-on-leak must find the reports afterwards: without a path of the
     * user's, each process writes leakwatch-PID.json in the folder the job
     * is started in (named whole, so a job that changes folder still writes
     * there), where a CI job keeps its files: never only in a temporary
     * folder. */
    char folder_pattern[PATH_MAX] = "";
    const char *tpl = setting_value("LEAKWATCH_REPORT");
    if (!tpl) tpl = getenv("LEAKWATCH_REPORT");
    if (fail_on_leak && !tpl) {
        char cwd[PATH_MAX - 32];
        if (!getcwd(cwd, sizeof cwd)) {
            lw_cli_error("cannot tell the current folder for the report: %s; pass --report PATH",
                         strerror(errno));
            return LW_EXIT_RUN_FAILED;
        }
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/leakwatch-%%p.json", cwd);
        if (add_setting(NULL, "LEAKWATCH_REPORT", p) != 0) return LW_EXIT_RUN_FAILED;
        tpl = setting_value("LEAKWATCH_REPORT");
        snprintf(folder_pattern, sizeof folder_pattern, "%s/leakwatch-*.json", cwd);
        remember_folder(folder_pattern);
    }
    if (!tpl) tpl = "leakwatch-%p.json";
    for (int i = 0; i < nsettings; i++)
        setenv(settings[i].name, settings[i].value, 1);

    time_t started = time(NULL);
    int exec_errno = 0;
    pid_t pid = 0;
    int status = run_job(argv + optind, &exec_errno, &pid, quiet, tpl);
    int rc = finish(status, exec_errno, argv[optind], fail_on_leak, tpl,
                    folder_pattern[0] ? folder_pattern : NULL, pid, started, quiet);
    for (int i = 0; i < nsettings; i++)
        free(settings[i].value);
    return rc;
}

/* The status to exit with, once the job has ended. */
static int finish(int status, int exec_errno, const char *prog, int fail_on_leak, const char *tpl,
                  const char *folder_pattern, pid_t pid, time_t started, int quiet) {
    if (status < 0) {
        char shown[256];
        if (exec_errno == 0) {
            lw_cli_error("cannot start %s: %s", lw_safe_text(prog, shown, sizeof shown),
                         strerror(errno));
            return LW_EXIT_RUN_FAILED;
        }
        size_t pl = strlen(prog);
        lw_safe_text(prog, shown, sizeof shown);
        if (pl > 3 && !strcmp(prog + pl - 3, ".py"))
            lw_cli_error("cannot run %s: %s; run a Python script as 'leakwatch run -- python %s'",
                         shown, strerror(exec_errno), shown);
        else
            lw_cli_error("cannot run %s: %s%s", shown, strerror(exec_errno),
                         exec_errno == ENOENT ? " (check the name and PATH)" : "");
        return exec_errno == ENOENT ? LW_EXIT_NOT_FOUND : LW_EXIT_CANNOT_EXEC;
    }
    int code = lw_run_exit_code(status);
    if (!fail_on_leak) {
        if (quiet)
            say_report_path(tpl, pid, started);
        else
            say_if_nothing_seen(tpl, prog, pid, started, code != 0);
        return code;
    }
    int leak = job_leaks(tpl, folder_pattern, pid, started, quiet);
    say_merged(quiet);
    if (code != 0) {
        if (leak == LW_EXIT_LEAK) lw_cli_error("the program failed (status %d) and leaks", code);
        return code;
    }
    if (leak < 0) return LW_EXIT_RUN_FAILED;
    if (leak == LW_EXIT_LEAK) {
        lw_cli_error("leak found: exiting with status %d (--fail-on-leak)", LW_EXIT_LEAK);
        return LW_EXIT_LEAK;
    }
    /* Too short to decide is not clean: a gate that passed it would pass a
     * leak whenever the job was cut short. */
    if (leak == LW_EXIT_INCONCLUSIVE) {
        lw_cli_error("no verdict yet (inconclusive): exiting with status %d (--fail-on-leak); "
                     "decide it as said above, or accept it with --allow-inconclusive",
                     LW_EXIT_INCONCLUSIVE);
        return LW_EXIT_INCONCLUSIVE;
    }
    return LW_EXIT_OK;
}
