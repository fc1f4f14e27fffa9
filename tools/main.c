/* leakwatch: the command line. One subcommand per tools/cmd_*.c file. */
#include "cli.h"

#include <leakwatch.h>

#include <signal.h>
#include <string.h>

static const char usage[] =
    "usage: leakwatch COMMAND [options] [args]\n"
    "\n"
    "Finds gradual GPU memory leaks: records every CUDA allocation with its\n"
    "call stack and tells whether live memory keeps growing, from where.\n"
    "\n"
    "commands:\n"
    "  run [options] -- CMD ARGS...   run a program under leakwatch\n"
    "  report [options] FILE...       summarize reports (text, json, html)\n"
    "  ps                             list processes leakwatch is watching\n"
    "  top PID                        watch a running process live\n"
    "  snapshot PID [-o FILE]         save a running process's report now\n"
    "\n"
    "'leakwatch COMMAND --help' describes each. 'leakwatch --version' prints\n"
    "the version. Exit status: 0 ok, 1 error, 2 bad usage, 3 leak found\n"
    "(--fail-on-leak), 4 no such watched process; 'run' exits with the\n"
    "program's own status.\n";

int main(int argc, char **argv) {
    /* A closed pipe (leakwatch report | head) ends us quietly with EPIPE on
     * the next write, not with SIGPIPE's "Broken pipe" noise. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        fputs(usage, stderr);
        return LW_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return LW_EXIT_OK;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("leakwatch %s\n", LEAKWATCH_VERSION);
        return LW_EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"run", lw_cmd_run},
                {"report", lw_cmd_report},
                {"ps", lw_cmd_ps},
                {"top", lw_cmd_top},
                {"snapshot", lw_cmd_snapshot}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    lw_cli_error("unknown command '%s'; commands: run, report, ps, top, snapshot (see "
                 "'leakwatch --help')",
                 cmd);
    return LW_EXIT_USAGE;
}
