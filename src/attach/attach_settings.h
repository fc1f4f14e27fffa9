/* SPDX-License-Identifier: Apache-2.0 */
/* The settings `leakwatch attach` passed: LEAKWATCH_* NAME=VALUE lines, read
 * by the options table in place of the environment (lw_options_set_source). */
#ifndef LW_ATTACH_SETTINGS_H
#define LW_ATTACH_SETTINGS_H

/* Takes text (NAME=VALUE lines, at most 64) as the settings from now on; kept
 * for the rest of the process (the options table points into it). 0, or -1
 * (out of memory: the settings are as they were). */
int lw_attach_settings_take(const char *text);

/* The value of the setting name, or NULL. */
const char *lw_attach_setting(const char *name);

#endif
