/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch snapshot PID [-o FILE]: the report of a running process, now,
 * written by this command (so the file lands where the user is, with the
 * user's permissions, even when the process runs in another mount namespace). */
#include "cli.h"
#include "commands.h"
#include "model.h"
#include "control_client.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: leakwatch snapshot PID [-o FILE]\n"
    "\n"
    "Saves the report of a running watched process without stopping it.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  where to write (default leakwatch-PID-YYYYmmdd-HHMMSS.json\n"
    "                     in the current folder; - for standard output)\n"
    "  -h, --help         this help\n"
    "\n"
    "exit status: 0 written, 1 cannot write or bad answer, 2 bad option,\n"
    "4 PID is not running or not watched.\n";

int lw_cmd_snapshot(int argc, char **argv) {
    static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longs, NULL)) != -1) {
        if (c == 'o')
            output = optarg;
        else /* -h, --help; a bad option */
            return lw_cli_other_option("snapshot", c, argv, usage);
    }
    long pid;
    char sock[4200];
    char err[1200];
    int st = lw_sock_for_args("snapshot", argc, argv, optind, &pid, sock, sizeof sock);
    if (st != 0) return st;
    size_t len = 0;
    char *body = lw_sock_request(sock, "report", &len, err, sizeof err);
    if (!body) {
        lw_cli_error("process %ld: %s", pid, err);
        return LW_EXIT_ERROR;
    }
    /* Check before writing: a file that is not a whole report is worse than
     * none. */
    lw_model m;
    if (lw_model_load_answer(&m, pid, body, len) != 0) {
        free(body);
        return LW_EXIT_ERROR;
    }
    char def[128];
    if (!output) {
        time_t t = time(NULL);
        struct tm tm;
        char stamp[32] = "now";
        if (localtime_r(&t, &tm)) strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(def, sizeof def, "leakwatch-%ld-%s.json", pid, stamp);
        output = def;
    }
    int rc = LW_EXIT_OK, wrc = 0;
    char why[512];
    if (!strcmp(output, "-")) {
        if (fwrite(body, 1, len, stdout) != len || fflush(stdout) != 0) rc = LW_EXIT_ERROR;
    } else if ((wrc = lw_write_file_atomic(output, body, len, why, sizeof why)) < 0) {
        lw_cli_error("cannot write %s: %s; choose a writable path with -o", output, why);
        rc = LW_EXIT_ERROR;
    } else if (wrc == 0) {
        char live[32];
        fprintf(stderr, "leakwatch: wrote %s (verdict %s, %s live)\n", output,
                lw_verdict_name(m.verdict), lw_fmt_bytes(m.totals.live_bytes, live, sizeof live));
    }
    lw_model_free(&m);
    free(body);
    return rc;
}
