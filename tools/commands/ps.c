/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch ps: the processes leakwatch watches, with a line of numbers each;
 * sockets left by processes that died without cleaning up are removed. */
#include "cli.h"
#include "commands.h"
#include "control_client.h"

#include "json_doc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch ps [options]\n"
    "\n"
    "Lists the running processes that leakwatch watches (those that have\n"
    "allocated CUDA memory under it), with live and peak bytes, verdict and\n"
    "growth. Removes the sockets of processes that died without cleaning up.\n"
    "\n"
    "options:\n"
    "  -q, --quiet   print only the process ids\n"
    "  -h, --help    this help\n"
    "\n"
    "exit status: 0 done (also when none is watched), 1 the socket folder is\n"
    "unsafe or unreadable, 2 bad option.\n";

/* A socket whose process is gone, or that nobody has listened on for a
 * while (the process ran exec): removing it is safe. The age check leaves a
 * process that has just bound its socket and not yet listened alone. */
static int stale(const char *path, long pid, int refused) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
    struct stat st;
    return refused && lstat(path, &st) == 0 && time(NULL) - st.st_mtime > 2;
}

/* Every process is asked at once, each in its own thread, so that hung
 * processes cost the time of one, not one each in turn; the statistics are
 * cheap to make, so a process gets PS_TIMEOUT_MS to answer. */
#define PS_TIMEOUT_MS 5000
typedef struct {
    char path[8500];
    char *body;
    size_t len;
    char err[600];
} ps_query;

static ps_query *queries;
static size_t nqueries;

static void *ask(void *arg) {
    ps_query *q = arg;
    q->body =
        lw_sock_request_within(q->path, "stats", PS_TIMEOUT_MS, &q->len, q->err, sizeof q->err);
    return NULL;
}

static void ask_all(char dirs[2][4096], int nd) {
    size_t cap = 0;
    for (int i = 0; i < nd; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char *end = NULL;
            long pid = strtol(e->d_name, &end, 10);
            if (pid <= 0 || !end || strcmp(end, ".sock") != 0) continue;
            if (nqueries == cap) {
                size_t nc = cap ? 2 * cap : 16;
                ps_query *nq = realloc(queries, nc * sizeof *nq);
                if (!nq) break;
                queries = nq, cap = nc;
            }
            ps_query *q = &queries[nqueries++];
            memset(q, 0, sizeof *q);
            snprintf(q->path, sizeof q->path, "%s/%s", dirs[i], e->d_name);
        }
        if (d) closedir(d);
    }
    /* At most 64 at a time. */
    for (size_t at = 0; at < nqueries; at += 64) {
        pthread_t t[64];
        int started[64] = {0};
        for (size_t k = 0; k < 64 && at + k < nqueries; k++)
            started[k] = pthread_create(&t[k], NULL, ask, &queries[at + k]) == 0;
        for (size_t k = 0; k < 64 && at + k < nqueries; k++) {
            if (started[k])
                pthread_join(t[k], NULL);
            else
                ask(&queries[at + k]);
        }
    }
}

/* The answer asked for path by ask_all (taken: the caller frees it), or
 * asked now if it was not. */
static char *answer(const char *path, size_t *len, char *err, size_t errlen) {
    for (size_t i = 0; i < nqueries; i++) {
        ps_query *q = &queries[i];
        if (strcmp(q->path, path) != 0) continue;
        char *b = q->body;
        q->body = NULL;
        *len = q->len;
        snprintf(err, errlen, "%s", q->err);
        q->path[0] = '\0';
        return b;
    }
    return lw_sock_request_within(path, "stats", PS_TIMEOUT_MS, len, err, errlen);
}

int lw_cmd_ps(int argc, char **argv) {
    static const struct option longs[] = {
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c, quiet = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+qh", longs, NULL)) != -1) {
        if (c == 'q')
            quiet = 1;
        else /* -h, --help; a bad option */
            return lw_cli_other_option("ps", c, argv, usage);
    }
    if (optind < argc) return lw_cli_usage_error("ps", "unexpected argument %s", argv[optind]);
    char dirs[2][4096], err[600];
    int nd = lw_sock_dirs(dirs, err, sizeof err);
    if (err[0]) lw_cli_error("warning: %s", err);
    int shown = 0, removed = 0;
    ask_all(dirs, nd);
    for (int i = 0; i < nd; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end = NULL;
            long pid = strtol(e->d_name, &end, 10);
            if (pid <= 0 || !end || strcmp(end, ".sock") != 0) continue;
            char path[8500], rerr[600];
            snprintf(path, sizeof path, "%s/%s", dirs[i], e->d_name);
            size_t len = 0;
            char *body = answer(path, &len, rerr, sizeof rerr);
            if (!body) {
                if (stale(path, pid, strstr(rerr, "refused") != NULL)) {
                    if (unlink(path) == 0) removed++;
                } else if (!quiet) {
                    lw_cli_error("process %ld: %s", pid, rerr);
                }
                continue;
            }
            lw_json *j = lw_json_parse(body, len, NULL, rerr, sizeof rerr);
            free(body);
            if (quiet) {
                printf("%ld\n", pid);
                shown++;
                lw_json_free(j);
                continue;
            }
            if (!shown++)
                printf("%7s %11s %11s %-12s %15s %11s  %s\n", "PID", "LIVE", "PEAK", "VERDICT",
                       "GROWTH", "UPTIME", "COMMAND");
            char live[32], peak[32], rate[48], up[32], cmd[160], verdict[16];
            lw_fmt_bytes(lw_json_number(lw_json_get(j, "live_bytes"), NAN), live, sizeof live);
            lw_fmt_bytes(lw_json_number(lw_json_get(j, "peak_live_bytes"), NAN), peak, sizeof peak);
            double bps = lw_json_number(lw_json_get(j, "bytes_per_step"), NAN);
            if (isfinite(bps))
                lw_fmt_rate(bps, "step", rate, sizeof rate);
            else
                snprintf(rate, sizeof rate, "-");
            lw_fmt_duration(lw_json_number(lw_json_get(j, "uptime_s"), NAN), up, sizeof up);
            lw_safe_text(lw_json_string(lw_json_get(j, "verdict")), verdict, sizeof verdict);
            lw_proc_cmdline(pid, cmd, sizeof cmd);
            printf("%7ld %11s %11s %-12s %15s %11s  %s\n", pid, live, peak,
                   verdict[0] ? verdict : "?", rate, up, cmd);
            lw_json_free(j);
        }
        closedir(d);
    }
    if (!quiet && !shown)
        printf("no process is watched by leakwatch (start one with 'leakwatch run -- CMD')\n");
    if (removed && !quiet)
        fprintf(stderr, "leakwatch: removed %d stale socket%s of exited processes\n", removed,
                removed == 1 ? "" : "s");
    for (size_t i = 0; i < nqueries; i++)
        free(queries[i].body);
    free(queries);
    if (fflush(stdout) != 0) return LW_EXIT_ERROR;
    return nd == 0 && err[0] ? LW_EXIT_ERROR : LW_EXIT_OK;
}
