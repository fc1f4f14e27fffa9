/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch: the command line. One subcommand per file in tools/commands/. The
 * help texts printed here and by each subcommand's --help are also the source
 * of the man page and the bash completion (scripts/gen-docs.sh). */
#include "cli.h"
#include "commands.h"
#include "run_decisions.h"

#include "options.h"

#include <leakwatch.h>

#include <limits.h>
#include <signal.h>
#include <string.h>

static const struct {
    const char *name;
    const char *synopsis; /* after "leakwatch NAME " */
    const char *summary;
    int (*fn)(int, char **);
} cmds[] = {
    {"run", "[options] [--] CMD [ARGS...]", "run a program under leakwatch", lw_cmd_run},
    {"report", "[options] FILE...", "summarize reports (text, json, html)", lw_cmd_report},
    {"ps", "[options]", "list the processes leakwatch watches", lw_cmd_ps},
    {"top", "[options] PID", "watch a running process live", lw_cmd_top},
    {"snapshot", "PID [-o FILE]", "save a running process's report now", lw_cmd_snapshot},
    {"attach", "[options] PID", "watch a running process started without leakwatch", lw_cmd_attach},
    {"doctor", "[options]", "check that leakwatch sees this machine's CUDA", lw_cmd_doctor},
};
enum { NCMDS = sizeof cmds / sizeof cmds[0] };

static void usage(FILE *f) {
    fputs("usage: leakwatch COMMAND [options] [args]\n"
          "\n"
          "Finds gradual GPU memory leaks: records every CUDA allocation with its\n"
          "call stack and tells whether live memory keeps growing, from where.\n"
          "\n"
          "commands:\n",
          f);
    for (int i = 0; i < NCMDS; i++) {
        char head[80];
        snprintf(head, sizeof head, "%s %s", cmds[i].name, cmds[i].synopsis);
        fprintf(f, "  %-33s %s\n", head, cmds[i].summary);
    }
    fputs("  help [COMMAND | env]              a command's help; env: the LEAKWATCH_*\n"
          "                                    variables the library reads\n"
          "\n"
          "options:\n"
          "  -h, --help                        this help\n"
          "  -V, --version                     the version and the library 'run' preloads\n"
          "      --library                     the path of that library, alone (for\n"
          "                                    LD_PRELOAD=$(leakwatch --library) CMD)\n"
          "\n"
          "exit status: 0 ok, 1 error, 2 bad usage, 3 leak found (--fail-on-leak),\n"
          "4 no such watched process; 'run' exits with the program's own status.\n",
          f);
}

/* Every variable of the library's options table, its default and meaning. */
static void env_help(void) {
    size_t n = 0;
    const lw_option_def *t = lw_options_table(&n);
    fputs("usage: leakwatch help env\n"
          "\n"
          "The settings of libleakwatch.so, read from the environment once, when the\n"
          "library first sees a CUDA allocation. 'leakwatch run' sets them from its\n"
          "options (--set NAME=VALUE for any). A bad value is reported in one line and\n"
          "the default is used. Booleans accept 1/0, true/false, yes/no, on/off.\n"
          "\n"
          "variables:\n",
          stdout);
    for (size_t i = 0; i < n; i++) {
        const lw_option_def *d = &t[i];
        char dflt[64];
        if (d->type == LW_OPT_STRING)
            snprintf(dflt, sizeof dflt, "%s", d->dflt_text ? d->dflt_text : "unset");
        else
            snprintf(dflt, sizeof dflt, "%ld", d->dflt);
        char range[96] = "";
        if (d->type == LW_OPT_INT)
            snprintf(range, sizeof range, "; %ld to %ld", d->min, d->max);
        else if (d->type == LW_OPT_BOOL)
            snprintf(range, sizeof range, "; 0 or 1");
        else if (d->choices)
            snprintf(range, sizeof range, "; one of: %s", d->choices);
        printf("  %s (default %s%s)\n      %s\n", d->name, dflt, range, d->help ? d->help : "");
    }
}

static int version(void) {
    char lib[PATH_MAX], err[PATH_MAX + 256];
    printf("leakwatch %s\n", LEAKWATCH_VERSION);
    if (lw_run_find_library(NULL, lib, sizeof lib, err, sizeof err) == 0)
        printf("library: %s\n", lib);
    else
        printf("library: not found: %s\n", err);
    return LW_EXIT_OK;
}

static int library(void) {
    char lib[PATH_MAX], err[PATH_MAX + 256];
    if (lw_run_find_library(NULL, lib, sizeof lib, err, sizeof err) != 0) {
        lw_cli_error("%s", err);
        return LW_EXIT_ERROR;
    }
    printf("%s\n", lib);
    return LW_EXIT_OK;
}

static int help(int argc, char **argv) {
    if (argc < 2) {
        usage(stdout);
        return LW_EXIT_OK;
    }
    if (!strcmp(argv[1], "env")) {
        env_help();
        return LW_EXIT_OK;
    }
    for (int i = 0; i < NCMDS; i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            char *sub[] = {argv[1], "--help", NULL};
            return cmds[i].fn(2, sub);
        }
    lw_cli_error(
        "help: unknown command '%s'; commands: run, report, ps, top, snapshot, attach, doctor, env",
        argv[1]);
    return LW_EXIT_USAGE;
}

int main(int argc, char **argv) {
    /* A closed pipe (leakwatch report | head) ends us quietly with EPIPE on
     * the next write, not with SIGPIPE's "Broken pipe" noise. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return LW_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        usage(stdout);
        return LW_EXIT_OK;
    }
    if (!strcmp(cmd, "help")) return help(argc - 1, argv + 1);
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version"))
        return version();
    if (!strcmp(cmd, "--library")) return library();
    for (int i = 0; i < NCMDS; i++)
        if (!strcmp(cmd, cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    lw_cli_error(
        "unknown command '%s'; commands: run, report, ps, top, snapshot, attach, doctor, help (see "
        "'leakwatch --help')",
        cmd);
    return LW_EXIT_USAGE;
}
