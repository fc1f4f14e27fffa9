/* SPDX-License-Identifier: Apache-2.0 */
/* The subcommands of leakwatch, one file each in tools/commands/; main.c
 * dispatches to them. Each returns the command's exit status (cli.h). */
#ifndef LW_COMMANDS_H
#define LW_COMMANDS_H

int lw_cmd_run(int argc, char **argv);
int lw_cmd_report(int argc, char **argv);
int lw_cmd_ps(int argc, char **argv);
int lw_cmd_top(int argc, char **argv);
int lw_cmd_snapshot(int argc, char **argv);
int lw_cmd_attach(int argc, char **argv);
int lw_cmd_doctor(int argc, char **argv);

#endif
