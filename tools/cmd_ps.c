/* leakwatch ps: the processes leakwatch watches, with a line of numbers each;
 * sockets left by processes that died without cleaning up are removed. */
#include "cli.h"
#include "cli_sock.h"

#include "json_doc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
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

int lw_cmd_ps(int argc, char **argv) {
    static const struct option longs[] = {
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c, quiet = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+qh", longs, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage, stdout);
            return LW_EXIT_OK;
        }
        if (c == 'q')
            quiet = 1;
        else
            return lw_cli_usage_error("ps", "unknown option %s", lw_bad_option(argv));
    }
    if (optind < argc) return lw_cli_usage_error("ps", "unexpected argument %s", argv[optind]);
    char dirs[2][4096], err[600];
    int nd = lw_sock_dirs(dirs, err, sizeof err);
    if (err[0]) lw_cli_error("warning: %s", err);
    int shown = 0, removed = 0;
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
            char *body = lw_sock_request(path, "stats", &len, rerr, sizeof rerr);
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
    if (fflush(stdout) != 0) return LW_EXIT_ERROR;
    return nd == 0 && err[0] ? LW_EXIT_ERROR : LW_EXIT_OK;
}
