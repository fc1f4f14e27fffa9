/* SPDX-License-Identifier: Apache-2.0 */
#include "attach_settings.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SETTINGS 64
static char *settings_text;
static const char *setting_name[MAX_SETTINGS], *setting_value[MAX_SETTINGS];
static int nsettings;

const char *lw_attach_setting(const char *name) {
    for (int i = 0; i < nsettings; i++)
        if (!strcmp(setting_name[i], name)) return setting_value[i];
    return NULL;
}

int lw_attach_settings_take(const char *text) {
    char *copy = strdup(text ? text : "");
    if (!copy) return -1;
    settings_text = copy;
    nsettings = 0;
    for (char *line = copy; line && *line && nsettings < MAX_SETTINGS;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            setting_name[nsettings] = line;
            setting_value[nsettings++] = eq + 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}
