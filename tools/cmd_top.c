/* leakwatch top PID: a live view of one watched process, refreshed like top.
 * Each refresh asks the process for its full report, so what is shown is
 * exactly what a report written at that moment would say. */
#include "cli.h"
#include "cli_model.h"
#include "cli_render.h"
#include "cli_sock.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch top [options] PID\n"
    "\n"
    "Shows a watched process live: live bytes by device, the floor's trend,\n"
    "verdict, growth rate, projected time to out-of-memory, top growing sites.\n"
    "Refreshes every second until Ctrl-C or until the process exits.\n"
    "\n"
    "options:\n"
    "  -d, --delay SECONDS  time between refreshes (default 1; fractions allowed)\n"
    "  -n, --iterations N   stop after N refreshes (no screen clearing)\n"
    "      --once           one refresh, plain output (same as -n 1)\n"
    "  -s, --sites N        call sites to show (default 5)\n"
    "  -h, --help           this help\n"
    "\n"
    "exit status: 0 done (also when the process exits while watched), 1 bad\n"
    "answer, 2 bad option, 4 PID is not running or not watched.\n";

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static int utf8_terminal(void) {
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8");
    }
    return 0;
}

/* The floor's recent history in one line of block characters. */
static void trend_line(FILE *out, const lw_model *m, int width) {
    static const char *blocks[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                   "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
    static const char ascii[] = "_.-~=+*#";
    size_t n = m->nseries, first = n > (size_t)width ? n - (size_t)width : 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = first; i < n; i++)
        if (isfinite(m->sfloor[i])) lo = fmin(lo, m->sfloor[i]), hi = fmax(hi, m->sfloor[i]);
    fprintf(out, "  floor     ");
    if (!isfinite(lo)) {
        fprintf(out, "(no samples yet)\n");
        return;
    }
    int utf8 = utf8_terminal();
    for (size_t i = first; i < n; i++) {
        if (!isfinite(m->sfloor[i])) {
            fputc(' ', out);
            continue;
        }
        int level = hi > lo ? (int)((m->sfloor[i] - lo) / (hi - lo) * 7.999) : 0;
        fputs(utf8 ? blocks[level] : (char[]){ascii[level], 0}, out);
    }
    char a[32], b[32];
    fprintf(out, "  %s .. %s\n", lw_fmt_bytes(lo, a, sizeof a), lw_fmt_bytes(hi, b, sizeof b));
}

static void screen(FILE *out, const lw_model *m, long pid, size_t max_sites, int width) {
    char a[64], b[64], c[64], cmd[200];
    time_t now = time(NULL);
    struct tm tm;
    char clock[16] = "";
    if (localtime_r(&now, &tm)) strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    lw_safe_text(m->command ? m->command : "?", cmd, sizeof cmd);
    if ((int)strlen(cmd) > width - 30 && width > 40) cmd[width - 30] = '\0';
    fprintf(out, "leakwatch top - %s  pid %ld  %s\n", clock, pid, cmd);
    const lw_m_growth *g = &m->growth;
    fprintf(out, "  verdict   %-13s growth %s", lw_mverdict_label(m->verdict),
            lw_fmt_rate(g->bytes_per_step, "step", a, sizeof a));
    if (isfinite(g->bytes_per_second))
        fprintf(out, ", %s", lw_fmt_rate(g->bytes_per_second, "s", b, sizeof b));
    if (isfinite(g->steps)) fprintf(out, "  steps %s", lw_fmt_count(g->steps, c, sizeof c));
    fputc('\n', out);
    if (isfinite(g->oom_eta_seconds))
        fprintf(out, "  OOM in    %s\n", lw_fmt_duration(g->oom_eta_seconds, a, sizeof a));
    else
        fprintf(out, "  OOM in    -\n");
    fprintf(out, "  live      %s in %s allocations, peak %s\n",
            lw_fmt_bytes(m->totals.live_bytes, a, sizeof a),
            lw_fmt_count(m->totals.live_count, b, sizeof b),
            lw_fmt_bytes(m->totals.peak_live_bytes, c, sizeof c));
    for (size_t i = 0; i < m->ndevices; i++) {
        const lw_m_device *d = &m->devices[i];
        char dev[24];
        snprintf(dev, sizeof dev,
                 !isfinite(d->device) ? "?"
                 : d->device < 0      ? "host"
                                      : "gpu %.0f",
                 d->device);
        fprintf(out, "  %-9s %s live, peak %s\n", dev, lw_fmt_bytes(d->c.live_bytes, a, sizeof a),
                lw_fmt_bytes(d->c.peak_live_bytes, b, sizeof b));
    }
    trend_line(out, m, width - 40 > 10 ? width - 40 : 10);
    size_t *order = m->nsites ? malloc(m->nsites * sizeof *order) : NULL;
    if (order) {
        lw_model_rank_sites(m, order);
        fprintf(out, "\n  %5s %11s %15s %9s  %s\n", "SITE", "LIVE", "GROWTH", "COUNT", "WHERE");
        for (size_t k = 0; k < m->nsites && k < max_sites; k++) {
            const lw_m_site *s = &m->sites[order[k]];
            char where[300] = "(no stack)";
            const lw_m_frame *best = s->nframes ? &s->frames[0] : NULL;
            for (size_t j = 0; j < s->nframes; j++)
                if (s->frames[j].kind && !strcmp(s->frames[j].kind, "python")) {
                    best = &s->frames[j];
                    break;
                }
            if (best) lw_frame_label(best, where, sizeof where);
            /* Too wide: the function matters more than the folders of its
             * file, so drop those first, then cut from the left. */
            int room = width > 60 ? width - 46 : 255;
            if ((int)strlen(where) > room) {
                const char *colon = strstr(where, ":");
                const char *slash = NULL;
                for (const char *q = where; colon && q < colon; q++)
                    if (*q == '/') slash = q;
                if (slash) memmove(where, slash + 1, strlen(slash + 1) + 1);
            }
            size_t len = strlen(where);
            if ((int)len > room && room > 4) {
                memmove(where + 3, where + len - (size_t)(room - 3), (size_t)(room - 3) + 1);
                memcpy(where, "...", 3);
            }
            fprintf(out, "  %5.0f %11s %15s %9s  %s%s\n", isfinite(s->id) ? s->id : -1,
                    lw_fmt_bytes(s->live_bytes, a, sizeof a),
                    isfinite(s->bytes_per_step) && s->bytes_per_step != 0
                        ? lw_fmt_rate(s->bytes_per_step, "step", b, sizeof b)
                        : "-",
                    lw_fmt_count(s->live_count, c, sizeof c), s->leak == 1 ? "LEAK " : "", where);
        }
        free(order);
    }
}

int lw_cmd_top(int argc, char **argv) {
    enum { O_ONCE = 256 };
    static const struct option longs[] = {
        {"delay", required_argument, NULL, 'd'}, {"iterations", required_argument, NULL, 'n'},
        {"once", no_argument, NULL, O_ONCE},     {"sites", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    double delay = 1;
    long iterations = -1, sites = 5;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:n:s:h", longs, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (lw_parse_double(optarg, 0.1, 86400, &delay) != 0)
                return lw_cli_usage_error("top", "--delay %s: expected seconds from 0.1 to 86400",
                                          optarg);
            break;
        case 'n':
            if (lw_parse_long(optarg, 1, 100000000, &iterations) != 0)
                return lw_cli_usage_error("top", "-n %s: expected a whole number from 1", optarg);
            break;
        case O_ONCE:
            iterations = 1;
            break;
        case 's':
            if (lw_parse_long(optarg, 0, 10000, &sites) != 0)
                return lw_cli_usage_error("top", "--sites %s: expected a whole number from 0",
                                          optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            return LW_EXIT_OK;
        case ':':
            return lw_cli_usage_error("top", "%s needs a value", argv[optind - 1]);
        default:
            return lw_cli_usage_error("top", "unknown option %s", lw_bad_option(argv));
        }
    }
    long pid;
    char sock[4200];
    char err[1200];
    int st = lw_sock_for_args("top", argc, argv, optind, &pid, sock, sizeof sock);
    if (st != 0) return st;
    int interactive = iterations < 0 && lw_stdout_is_tty();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (interactive) fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, no cursor */
    int rc = LW_EXIT_OK;
    for (long i = 0; !stop && (iterations < 0 || i < iterations); i++) {
        size_t len = 0;
        char *body = lw_sock_request(sock, "report", &len, err, sizeof err);
        if (!body) {
            if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
                if (interactive) fputs("\033[?25h\033[?1049l", stdout), interactive = 0;
                fprintf(stderr, "leakwatch: process %ld has exited\n", pid);
                rc = i == 0 ? LW_EXIT_NO_PROCESS : LW_EXIT_OK;
            } else {
                if (interactive) fputs("\033[?25h\033[?1049l", stdout), interactive = 0;
                lw_cli_error("process %ld: %s", pid, err);
                rc = LW_EXIT_ERROR;
            }
            break;
        }
        lw_model m;
        char name[64];
        snprintf(name, sizeof name, "the answer of process %ld", pid);
        if (lw_model_load_text(&m, name, body, len, err, sizeof err) != 0) {
            lw_cli_error("%s", err);
            lw_model_free(&m);
            free(body);
            rc = LW_EXIT_ERROR;
            break;
        }
        struct winsize ws;
        int width = ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 100;
        if (interactive)
            fputs("\033[H\033[2J", stdout);
        else if (i > 0)
            fputc('\n', stdout);
        screen(stdout, &m, pid, (size_t)sites, width);
        fflush(stdout);
        lw_model_free(&m);
        free(body);
        if (iterations >= 0 && i + 1 >= iterations) break;
        struct timespec ts = {(time_t)delay, (long)((delay - floor(delay)) * 1e9)};
        while (!stop && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    if (interactive) fputs("\033[?25h\033[?1049l", stdout);
    if (fflush(stdout) != 0 && rc == LW_EXIT_OK) rc = LW_EXIT_ERROR;
    return rc;
}
