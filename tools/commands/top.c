/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch top PID: a live view of one watched process, refreshed like top.
 * Each refresh asks the process for its full report, so what is shown is
 * exactly what a report written at that moment would say; its first line is
 * the same answer as every other output. On a terminal it is interactive:
 * q quits, l/g/c sort the sites by live bytes, growth or allocation count,
 * the arrow keys (or j/k) select a site and Enter opens its stack. Every line
 * fits the terminal's width. When the job exits, the last screen stays and
 * the path of the final report is printed. */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "render.h"
#include "control_client.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch top [options] PID\n"
    "\n"
    "Shows a watched process live: the answer (verdict and the place to look),\n"
    "growth rate, projected time to out-of-memory, device memory used of its\n"
    "total, the floor's trend and the top sites. Refreshes every second until\n"
    "q, Ctrl-C or the process exits (the last screen then stays, with the path\n"
    "of the final report).\n"
    "\n"
    "keys: q quit; l, g, c sort sites by live bytes, growth, allocation count;\n"
    "      up/down (or k/j) select a site; Enter shows its stack (Enter or Esc\n"
    "      returns)\n"
    "\n"
    "options:\n"
    "  -d, --delay SECONDS  time between refreshes (default 1; fractions allowed)\n"
    "  -n, --iterations N   stop after N refreshes (no screen clearing)\n"
    "      --once           one refresh, plain output (same as -n 1)\n"
    "  -s, --sites N        call sites to show (default 5)\n"
    "      --sort KEY       live, growth (default) or count\n"
    "      --user-code LIST more code that counts as yours (see leakwatch report)\n"
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

/* Screen lines are built in a buffer and cut to the width when printed: a
 * line never wraps, whatever a report holds. */
typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} screen_buf;

/* Writes the text's lines, each cut to width display columns (UTF-8 aware). */
static void print_cut(FILE *out, const char *text, int width, int clear_eol) {
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int cols = 0;
        size_t i = 0;
        for (; i < len; i++) {
            unsigned char c = (unsigned char)p[i];
            if ((c & 0xC0) == 0x80) continue; /* continuation byte */
            if (cols == width) break;
            cols++;
        }
        fwrite(p, 1, i, out);
        if (clear_eol) fputs("\033[K", out);
        fputc('\n', out);
        if (!end) break;
        p = end + 1;
    }
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
    fprintf(out, "floor   ");
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
    char a[32], b[32], d[32];
    lw_fmt_bytes(lo, a, sizeof a);
    lw_fmt_bytes(hi, b, sizeof b);
    /* A rise too small for the two ends to read apart (300 KiB on 192 MiB)
     * is said as the rise itself. */
    if (hi > lo && (!strcmp(a, b) || hi - lo < hi / 100))
        fprintf(out, " %s, +%s\n", a, lw_fmt_bytes(hi - lo, d, sizeof d));
    else
        fprintf(out, " %s .. %s\n", a, b);
}

/* The answer line, broken between words to width display columns (UTF-8
 * aware), its continuation lines indented: never cut mid-word. */
static void print_wrapped(FILE *out, const char *text, int width) {
    const char *p = text;
    int indent = 0;
    while (*p) {
        int room = width - indent, cols = 0;
        const char *q = p, *brk = NULL;
        for (; *q; q++) {
            if (((unsigned char)*q & 0xC0) == 0x80) continue;
            if (cols == room) break;
            if (*q == ' ') brk = q;
            cols++;
        }
        if (!*q || !brk) brk = q; /* the rest fits, or one word longer than a line */
        fprintf(out, "%*s%.*s\n", indent, "", (int)(brk - p), p);
        p = brk;
        while (*p == ' ')
            p++;
        indent = 2;
    }
}

/* Used of total memory of each device, as a bar; the total is known for the
 * device the process uses (the driver's answer). */
static void device_bars(FILE *out, const lw_model *m, int width) {
    const lw_m_growth *g = &m->growth;
    int barw = width - 52;
    if (barw < 10) barw = 10;
    if (barw > 40) barw = 40;
    for (size_t i = 0; i < m->ndevices; i++) {
        const lw_m_device *d = &m->devices[i];
        char a[32], b[32], c[32];
        if (!isfinite(d->device) || d->device < 0) {
            fprintf(out, "host    %s pinned/managed live\n",
                    lw_fmt_bytes(d->c.live_bytes, a, sizeof a));
            continue;
        }
        int known = isfinite(g->device_total_bytes) && g->device_total_bytes > 0 &&
                    isfinite(g->device_free_bytes) &&
                    (!isfinite(m->device) || m->device == d->device);
        fprintf(out, "gpu %-3.0f ", d->device);
        if (known) {
            double used = g->device_total_bytes - g->device_free_bytes;
            int fill = (int)(used / g->device_total_bytes * barw + 0.5);
            if (fill > barw) fill = barw;
            fputc('[', out);
            for (int k = 0; k < barw; k++)
                fputc(k < fill ? '#' : '.', out);
            fprintf(out, "] %s of %s used, %s ours\n", lw_fmt_bytes(used, a, sizeof a),
                    lw_fmt_bytes(g->device_total_bytes, b, sizeof b),
                    lw_fmt_bytes(d->c.live_bytes, c, sizeof c));
        } else {
            fprintf(out, "%s live here (device total unknown)\n",
                    lw_fmt_bytes(d->c.live_bytes, a, sizeof a));
        }
    }
}

typedef enum { SORT_GROWTH, SORT_LIVE, SORT_COUNT } sort_key;

static const lw_model *sort_model; /* qsort has no context argument in C11 */
static sort_key sort_by;

static double or0(double v) {
    return isfinite(v) ? v : 0;
}

static int by_key(const void *a, const void *b) {
    const lw_m_site *x = &sort_model->sites[*(const size_t *)a];
    const lw_m_site *y = &sort_model->sites[*(const size_t *)b];
    double vx = sort_by == SORT_LIVE ? or0(x->live_bytes) : or0(x->alloc_count);
    double vy = sort_by == SORT_LIVE ? or0(y->live_bytes) : or0(y->alloc_count);
    if (vx != vy) return vx > vy ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void order_sites(const lw_model *m, size_t *order, sort_key key) {
    lw_model_rank_sites(m, order); /* growth: the report's order, leaks first */
    if (key == SORT_GROWTH || m->nsites < 2) return;
    sort_model = m, sort_by = key;
    qsort(order, m->nsites, sizeof *order, by_key);
    sort_model = NULL;
}

typedef struct {
    sort_key sort;
    double selected_id; /* the site selected, by id (NAN: the first) */
    int stack_view;     /* 1: the selected site's stack */
    int interactive;
} view_state;

static void stack_line(const char *label, int is_python, size_t folded, int marked, void *ctx) {
    (void)folded;
    fprintf(ctx, "%s %s%s\n",
            marked == LW_STACK_HERE  ? "-->"
            : marked == LW_STACK_VIA ? "via"
                                     : "   ",
            is_python ? "py " : "   ", label);
}

static void screen(FILE *out, const lw_model *m, long pid, size_t max_sites, int width,
                   view_state *vs) {
    char a[64], b[64], c[64], cmd[200], line[1200], where[512];
    lw_answer ans;
    lw_model_answer(m, &ans, where, sizeof where);
    /* On a terminal, broken between words; piped, whole (as print_cut). */
    print_wrapped(out, lw_answer_line(&ans, line, sizeof line),
                  isatty(1) ? (width > 20 ? width : 20) : 1 << 20);
    /* What keeps the named site alive (PyTorch's sites), as the exit line. */
    const lw_m_site *named = m->verdict == LW_VERDICT_LEAK ? lw_model_top_site(m) : NULL;
    if (named && named->owner_text)
        fprintf(out, "  %s\n", lw_safe_text(named->owner_text, line, sizeof line));
    time_t now = time(NULL);
    struct tm tm;
    char clock[16] = "";
    if (localtime_r(&now, &tm)) strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    lw_safe_text(m->command ? m->command : "?", cmd, sizeof cmd);
    fprintf(out, "leakwatch top %s  pid %ld", clock, pid);
    if (isfinite(m->rank)) fprintf(out, "  rank %.0f", m->rank);
    if (m->host) fprintf(out, "  %s", lw_safe_text(m->host, c, sizeof c));
    fprintf(out, "  %s\n", cmd);
    const lw_m_growth *g = &m->growth;
    fprintf(out, "verdict %-12s growth %s", lw_mverdict_label(m->verdict),
            ans.rose_once ? "none per step (rose, then level)"
                          : lw_fmt_rate(g->bytes_per_step, "step", a, sizeof a));
    if (isfinite(g->steps)) fprintf(out, "  steps %s", lw_fmt_count(g->steps, c, sizeof c));
    fprintf(out, "  %s in %s\n",
            g->memory_kind && !strcmp(g->memory_kind, "pinned_host") ? "host memory full" : "OOM",
            isfinite(g->oom_eta_seconds) ? lw_fmt_duration(g->oom_eta_seconds, b, sizeof b) : "-");
    fprintf(out, "live    %s in %s allocations, peak %s",
            lw_fmt_bytes(m->totals.live_bytes, a, sizeof a),
            lw_fmt_count(m->totals.live_count, b, sizeof b),
            lw_fmt_bytes(m->totals.peak_live_bytes, c, sizeof c));
    /* Other processes' memory opened here: not part of the live bytes. */
    if (m->have_imported && isfinite(m->imported.live_count) && m->imported.live_count > 0)
        fprintf(out, "  imported %s (%s open)", lw_fmt_bytes(m->imported.live_bytes, a, sizeof a),
                lw_fmt_count(m->imported.live_count, b, sizeof b));
    fputc('\n', out);
    device_bars(out, m, width);
    /* What fills each device, by role (the report's anatomy). */
    for (size_t i = 0; i < m->nanatomy; i++) {
        char roles[600];
        fprintf(out, "roles %-3.0f %s\n", m->anatomy[i].device,
                lw_model_anatomy_line(&m->anatomy[i], 0, roles, sizeof roles));
    }
    trend_line(out, m, width - 36 > 10 ? width - 36 : 10);
    if (!m->nsites) {
        fprintf(out, "\n(no call sites yet)\n");
        return;
    }
    size_t *order = malloc(m->nsites * sizeof *order);
    if (!order) return;
    order_sites(m, order, vs->sort);
    size_t sel = 0;
    for (size_t k = 0; k < m->nsites; k++)
        if (m->sites[order[k]].id == vs->selected_id) sel = k;
    if (sel >= max_sites && max_sites) sel = max_sites - 1;
    if (m->nsites) vs->selected_id = m->sites[order[sel]].id;
    if (vs->stack_view) {
        const lw_m_site *s = &m->sites[order[sel]];
        lw_model_where(s, where, sizeof where);
        fprintf(out, "\nsite %.0f: %s, %s live, %s\nstack, outermost first:\n",
                isfinite(s->id) ? s->id : -1, where, lw_fmt_bytes(s->live_bytes, a, sizeof a),
                isfinite(s->bytes_per_step) && s->bytes_per_step != 0
                    ? lw_fmt_rate(s->bytes_per_step, "step", b, sizeof b)
                    : "no growth");
        lw_render_opts ro;
        lw_render_opts_default(&ro);
        ro.short_paths = 1;
        if (s->owner_text) fprintf(out, "%s\n", lw_safe_text(s->owner_text, line, sizeof line));
        lw_stack_lines(s, &ro, stack_line, out);
        fprintf(out, "\nEnter or Esc: back to the sites   q: quit\n");
        free(order);
        return;
    }
    static const char *sort_names[] = {"growth", "live", "count"};
    fprintf(out, "\n  %-10s %-14s %7s  PLACE TO LOOK (sorted by %s)\n", "LIVE", "GROWTH", "COUNT",
            sort_names[vs->sort]);
    for (size_t k = 0; k < m->nsites && k < max_sites; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        lw_model_where(s, where, sizeof where);
        fprintf(out, "%c %-10s %-14s %7s  %s%s\n", vs->interactive && k == sel ? '>' : ' ',
                lw_fmt_bytes(s->live_bytes, a, sizeof a),
                isfinite(s->bytes_per_step) && s->bytes_per_step != 0
                    ? lw_fmt_rate(s->bytes_per_step, "step", b, sizeof b)
                    : "-",
                lw_fmt_count(vs->sort == SORT_COUNT ? s->alloc_count : s->live_count, c, sizeof c),
                s->leak == 1 ? "LEAK " : "", where);
    }
    if (vs->interactive)
        fprintf(out, "\nq quit  l/g/c sort by live/growth/count  up/down select  Enter stack\n");
    free(order);
}

/* Keys from a terminal in raw mode; returns 1 to quit. */
static int handle_keys(view_state *vs, int delay_ms) {
    struct pollfd p = {0, POLLIN, 0};
    int r = poll(&p, 1, delay_ms);
    if (r <= 0) return 0;
    char k[16];
    ssize_t n = read(0, k, sizeof k);
    if (n <= 0) return 0;
    for (ssize_t i = 0; i < n; i++) {
        if (k[i] == 'q' || k[i] == 'Q') return 1;
        if (k[i] == 'l') vs->sort = SORT_LIVE, vs->selected_id = NAN;
        if (k[i] == 'g') vs->sort = SORT_GROWTH, vs->selected_id = NAN;
        if (k[i] == 'c') vs->sort = SORT_COUNT, vs->selected_id = NAN;
        if (k[i] == '\r' || k[i] == '\n') vs->stack_view = !vs->stack_view;
        if (k[i] == 'j' || k[i] == 'k' ||
            (k[i] == '\033' && i + 2 < n && k[i + 1] == '[' &&
             (k[i + 2] == 'A' || k[i + 2] == 'B'))) {
            int down = k[i] == 'j' || (k[i] == '\033' && k[i + 2] == 'B');
            vs->selected_id = down ? INFINITY : -INFINITY; /* resolved below */
            if (k[i] == '\033') i += 2;
        } else if (k[i] == '\033') {
            vs->stack_view = 0;
        }
    }
    return 0;
}

/* Moves the selection one row (selected_id = +/-INFINITY), by the order of
 * the screen about to be drawn. */
static void resolve_move(view_state *vs, const lw_model *m, double prev_id, size_t max_sites) {
    if (!isinf(vs->selected_id) || !m->nsites) return;
    size_t *order = malloc(m->nsites * sizeof *order);
    if (!order) return;
    order_sites(m, order, vs->sort);
    size_t cur = 0, last = (m->nsites < max_sites ? m->nsites : max_sites);
    for (size_t k = 0; k < m->nsites; k++)
        if (m->sites[order[k]].id == prev_id) cur = k;
    if (vs->selected_id > 0 && cur + 1 < last) cur++;
    if (vs->selected_id < 0 && cur > 0) cur--;
    vs->selected_id = m->sites[order[cur]].id;
    free(order);
}

int lw_cmd_top(int argc, char **argv) {
    enum { O_ONCE = 256, O_SORT, O_USER_CODE };
    static const struct option longs[] = {{"delay", required_argument, NULL, 'd'},
                                          {"iterations", required_argument, NULL, 'n'},
                                          {"once", no_argument, NULL, O_ONCE},
                                          {"sites", required_argument, NULL, 's'},
                                          {"sort", required_argument, NULL, O_SORT},
                                          {"user-code", required_argument, NULL, O_USER_CODE},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    double delay = 1;
    long iterations = -1, sites = 5;
    view_state vs = {SORT_GROWTH, NAN, 0, 0};
    int c;
    lw_model_set_user_code(getenv("LEAKWATCH_USER_CODE"));
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
        case O_SORT:
            if (!strcmp(optarg, "live"))
                vs.sort = SORT_LIVE;
            else if (!strcmp(optarg, "growth"))
                vs.sort = SORT_GROWTH;
            else if (!strcmp(optarg, "count"))
                vs.sort = SORT_COUNT;
            else
                return lw_cli_usage_error("top", "--sort %s: expected live, growth or count",
                                          optarg);
            break;
        case O_USER_CODE:
            lw_model_set_user_code(optarg);
            break;
        case 's':
            if (lw_parse_long(optarg, 0, 10000, &sites) != 0)
                return lw_cli_usage_error("top", "--sites %s: expected a whole number from 0",
                                          optarg);
            break;
        default: /* -h, --help; a bad option */
            return lw_cli_other_option("top", c, argv, usage);
        }
    }
    long pid;
    char sock[4200];
    char err[1200];
    int st = lw_sock_for_args("top", argc, argv, optind, &pid, sock, sizeof sock);
    if (st != 0) return st;
    int interactive = iterations < 0 && lw_stdout_is_tty();
    vs.interactive = interactive && isatty(0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct termios saved;
    int raw = 0;
    if (vs.interactive && tcgetattr(0, &saved) == 0) {
        struct termios t = saved;
        t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        raw = tcsetattr(0, TCSANOW, &t) == 0;
    }
    if (interactive) fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, no cursor */
    int rc = LW_EXIT_OK;
    char *last = NULL;           /* the last screen, kept when the job exits */
    char report_path[4200] = ""; /* where the job writes its final report */
    int last_width = 80;
    for (long i = 0; !stop && (iterations < 0 || i < iterations); i++) {
        size_t len = 0;
        char *body = lw_sock_request(sock, "report", &len, err, sizeof err);
        if (!body) {
            /* The alternate screen goes with the job: its last screen is
             * printed again on the normal one. */
            int reprint = interactive;
            if (interactive) fputs("\033[?25h\033[?1049l", stdout), interactive = 0;
            /* An exiting job closes its socket before it is gone (it writes
             * its final report in between): give it a moment. */
            int gone = 0;
            for (int w = 0; w < 100 && !gone; w++) {
                gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
                if (!gone) {
                    struct timespec ts = {0, 50 * 1000000L};
                    nanosleep(&ts, NULL);
                }
            }
            if (gone) {
                /* The job is gone: its last screen stays, and where its final
                 * report is. */
                if (last && reprint) print_cut(stdout, last, last_width, 0);
                fflush(stdout);
                if (report_path[0] && access(report_path, R_OK) == 0)
                    fprintf(stderr,
                            "leakwatch: process %ld has exited; its final report: %s\n"
                            "leakwatch: see it: leakwatch report %s\n",
                            pid, report_path, report_path);
                else if (report_path[0])
                    fprintf(stderr,
                            "leakwatch: process %ld has exited without writing its final report "
                            "to %s (killed?); a periodic one may be there\n",
                            pid, report_path);
                else
                    fprintf(stderr, "leakwatch: process %ld has exited\n", pid);
                rc = i == 0 ? LW_EXIT_NO_PROCESS : LW_EXIT_OK;
            } else {
                if (last && reprint) print_cut(stdout, last, last_width, 0);
                fflush(stdout);
                lw_cli_error("process %ld: %s", pid, err);
                rc = LW_EXIT_ERROR;
            }
            break;
        }
        lw_model m;
        if (lw_model_load_answer(&m, pid, body, len) != 0) {
            free(body);
            rc = LW_EXIT_ERROR;
            break;
        }
        if (m.report_path) lw_safe_text(m.report_path, report_path, sizeof report_path);
        struct winsize ws;
        int width = ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 80;
        last_width = width;
        screen_buf sb = {0};
        sb.f = open_memstream(&sb.buf, &sb.len);
        if (!sb.f) {
            lw_model_free(&m);
            free(body);
            rc = LW_EXIT_ERROR;
            break;
        }
        screen(sb.f, &m, pid, (size_t)sites, width, &vs);
        fclose(sb.f);
        if (interactive)
            fputs("\033[H", stdout);
        else if (i > 0)
            fputc('\n', stdout);
        /* Cut to the terminal; into a pipe or file, whole lines. */
        print_cut(stdout, sb.buf, isatty(1) ? width : 1 << 20, interactive);
        if (interactive) fputs("\033[J", stdout); /* clear what the last screen left below */
        fflush(stdout);
        free(last);
        last = sb.buf;
        if (iterations >= 0 && i + 1 >= iterations) {
            lw_model_free(&m);
            free(body);
            break;
        }
        /* Wait for the next refresh, or a key. */
        int64_t wait_ms = (int64_t)(delay * 1000);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            struct timespec t1;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            int64_t spent = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000 +
                            (int64_t)((t1.tv_nsec - t0.tv_nsec) / 1000000);
            if (stop || spent >= wait_ms) break;
            if (!vs.interactive) {
                struct timespec ts = {(time_t)((wait_ms - spent) / 1000),
                                      (long)((wait_ms - spent) % 1000) * 1000000L};
                nanosleep(&ts, NULL);
                continue;
            }
            double prev = vs.selected_id;
            int stack_before = vs.stack_view;
            sort_key sort_before = vs.sort;
            if (handle_keys(&vs, (int)(wait_ms - spent))) {
                stop = 1;
                break;
            }
            if (vs.selected_id != prev || vs.stack_view != stack_before || vs.sort != sort_before) {
                resolve_move(&vs, &m, prev, (size_t)sites);
                break; /* redraw now */
            }
        }
        lw_model_free(&m);
        free(body);
    }
    if (interactive) fputs("\033[?25h\033[?1049l", stdout);
    if (raw) tcsetattr(0, TCSANOW, &saved);
    free(last);
    if (fflush(stdout) != 0 && rc == LW_EXIT_OK) rc = LW_EXIT_ERROR;
    return rc;
}
