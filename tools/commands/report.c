/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch report [--format text|json|html] [-o FILE] FILE...
 * Reads one report per process (one per rank of a distributed job) and shows
 * them together. */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "render.h"

#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch report [options] REPORT.json...\n"
    "\n"
    "Summarizes leakwatch reports: verdict, growth per step and per second,\n"
    "projected time to out-of-memory, the call sites that grow with their\n"
    "stacks, totals by device and kind, failed allocations. Give one file per\n"
    "process (e.g. one per rank of a torchrun job) to see them side by side.\n"
    "\n"
    "options:\n"
    "  -f, --format FMT   text (default), json (normalized report; an array\n"
    "                     for several files) or html (one self-contained page)\n"
    "  -o, --output FILE  write there instead of standard output (HTML without\n"
    "                     -o on a terminal: leakwatch-report.html)\n"
    "  -n, --top N        call sites to show (default 10)\n"
    "      --frames N     native frames per stack before folding (default 12)\n"
    "      --full-stacks  show every frame, unfolded\n"
    "      --user-code LIST  more code that counts as yours when naming the place\n"
    "                     to look: path prefixes or package names, separated by\n"
    "                     ':' or ',' (default: LEAKWATCH_USER_CODE)\n"
    "      --details      several reports: each one in full after the merged view\n"
    "      --rank N       several reports: rank N in full after the merged view\n"
    "      --fail-on-leak exit with status 3 when any report's verdict is leak, 5\n"
    "                     when none leaks but one is inconclusive, 1 when one saw\n"
    "                     nothing (nothing_seen: an attach that saw no allocation)\n"
    "      --allow-inconclusive  with --fail-on-leak: inconclusive passes\n"
    "  -h, --help         this help\n"
    "\n"
    "exit status: 0 done, 1 a file is missing or not a valid report (or, with\n"
    "--fail-on-leak, a report saw nothing), 2 bad option, 3 leak found (with\n"
    "--fail-on-leak), 5 no verdict (inconclusive, with --fail-on-leak).\n";

int lw_cmd_report(int argc, char **argv) {
    static const struct option longs[] = {{"format", required_argument, NULL, 'f'},
                                          {"output", required_argument, NULL, 'o'},
                                          {"top", required_argument, NULL, 'n'},
                                          {"frames", required_argument, NULL, 'F'},
                                          {"full-stacks", no_argument, NULL, 'S'},
                                          {"fail-on-leak", no_argument, NULL, 'L'},
                                          {"allow-inconclusive", no_argument, NULL, 'A'},
                                          {"user-code", required_argument, NULL, 'U'},
                                          {"details", no_argument, NULL, 'D'},
                                          {"rank", required_argument, NULL, 'R'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *format = "text", *output = NULL;
    int fail_on_leak = 0, allow_inconclusive = 0, c;
    long v;
    lw_render_opts ro;
    lw_render_opts_default(&ro);
    lw_model_set_user_code(getenv("LEAKWATCH_USER_CODE"));
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:f:o:n:h", longs, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "html"))
                return lw_cli_usage_error("report", "--format %s: expected text, json or html",
                                          optarg);
            format = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'n':
            if (lw_parse_long(optarg, 1, 1000000, &v) != 0)
                return lw_cli_usage_error("report", "--top %s: expected a whole number from 1",
                                          optarg);
            ro.top_sites = (size_t)v;
            break;
        case 'F':
            if (lw_parse_long(optarg, 1, 100000, &v) != 0)
                return lw_cli_usage_error("report", "--frames %s: expected a whole number from 1",
                                          optarg);
            ro.max_frames = (size_t)v;
            break;
        case 'S':
            ro.full_stacks = 1;
            break;
        case 'L':
            fail_on_leak = 1;
            break;
        case 'A':
            allow_inconclusive = 1;
            break;
        case 'U':
            lw_model_set_user_code(optarg);
            break;
        case 'D':
            ro.details = 1;
            break;
        case 'R':
            if (lw_parse_long(optarg, 0, 100000000, &v) != 0)
                return lw_cli_usage_error("report", "--rank %s: expected a whole number from 0",
                                          optarg);
            ro.only_rank = (double)v;
            break;
        default: /* -h, --help; a bad option */
            return lw_cli_other_option("report", c, argv, usage);
        }
    }
    int nfiles = argc - optind;
    if (nfiles <= 0)
        return lw_cli_usage_error("report", "no report file given (leakwatch writes "
                                            "leakwatch-PID.json, or LEAKWATCH_REPORT)");
    lw_model *ms = calloc((size_t)nfiles, sizeof *ms);
    if (!ms) return LW_EXIT_ERROR;
    int status = LW_EXIT_OK, loaded = 0;
    for (int i = 0; i < nfiles; i++) {
        char err[1024];
        if (lw_model_load(&ms[loaded], argv[optind + i], err, sizeof err) != 0) {
            lw_cli_error("%s", err);
            lw_model_free(&ms[loaded]);
            status = LW_EXIT_ERROR;
            continue;
        }
        lw_model_print_warnings(&ms[loaded], 5);
        loaded++;
    }
    /* A page is no use on a terminal: it goes to a file, and the path is
     * said (a pipe or redirection still gets it on standard output). */
    if (loaded > 0 && !output && !strcmp(format, "html") && isatty(1))
        output = "leakwatch-report.html";
    /* With several files, show those that could be read, but still fail. */
    if (loaded > 0) {
        /* A file is written whole through the shared atomic writer (never
         * through a link, never over a device or FIFO, mode 0600). */
        FILE *out = stdout;
        char *body = NULL;
        size_t blen = 0;
        int to_file = output && strcmp(output, "-") != 0;
        if (to_file && !(out = open_memstream(&body, &blen))) {
            lw_cli_error("cannot write %s: %s", output, strerror(errno));
            status = LW_EXIT_ERROR;
        }
        if (out) {
            if (!strcmp(format, "json"))
                lw_render_json(out, ms, (size_t)loaded);
            else if (!strcmp(format, "html"))
                lw_render_html(out, ms, (size_t)loaded, &ro);
            else
                lw_render_text(out, ms, (size_t)loaded, &ro);
            char why[512] = "";
            int werr = !to_file ? (fflush(out) != 0 || ferror(out)) : fclose(out) != 0;
            if (werr) snprintf(why, sizeof why, "%s", strerror(errno));
            int wrc = 0;
            if (!werr && to_file &&
                (wrc = lw_write_file_atomic(output, body, blen, why, sizeof why)) < 0)
                werr = 1;
            if (werr) {
                lw_cli_error("cannot write %s: %s%s", output ? output : "standard output", why,
                             to_file ? "; choose a writable path with -o" : "");
                status = LW_EXIT_ERROR;
            } else if (to_file && wrc == 0 && strcmp(format, "text")) {
                fprintf(stderr, "leakwatch: wrote %s\n", output);
            }
        }
        free(body);
    }
    int leak = 0, blind = 0, undecided = 0;
    for (int i = 0; i < loaded; i++) {
        leak |= ms[i].verdict == LW_VERDICT_LEAK;
        if (ms[i].verdict == LW_VERDICT_INCONCLUSIVE && fail_on_leak && !allow_inconclusive &&
            !undecided++) {
            char shown[PATH_MAX];
            lw_cli_error("%s has no verdict yet (inconclusive); with no leak elsewhere the gate "
                         "exits with status %d (--fail-on-leak; --allow-inconclusive accepts it)",
                         lw_safe_text(ms[i].path ? ms[i].path : "a report", shown, sizeof shown),
                         LW_EXIT_INCONCLUSIVE);
        }
        if (ms[i].verdict == LW_VERDICT_NOTHING_SEEN && fail_on_leak && !blind++) {
            char shown[PATH_MAX];
            lw_cli_error("%s saw no allocation (verdict nothing_seen): it cannot tell a leak "
                         "from none; exiting with status %d (--fail-on-leak)",
                         lw_safe_text(ms[i].path ? ms[i].path : "a report", shown, sizeof shown),
                         LW_EXIT_ERROR);
        }
        lw_model_free(&ms[i]);
    }
    free(ms);
    if (status == LW_EXIT_OK && fail_on_leak && leak) return LW_EXIT_LEAK;
    /* No answer is not a pass: a gate must not go green on it. */
    if (status == LW_EXIT_OK && fail_on_leak && blind) return LW_EXIT_ERROR;
    if (status == LW_EXIT_OK && fail_on_leak && undecided) return LW_EXIT_INCONCLUSIVE;
    return status;
}
