/* SPDX-License-Identifier: Apache-2.0 */
/* All of leakwatch's settings, in one table, read from LEAKWATCH_* environment
 * variables once, when the library first sees a CUDA allocation. The command
 * line tool reads the same table to document and forward them. */
#ifndef LW_OPTIONS_H
#define LW_OPTIONS_H

#include <stddef.h>

typedef enum {
    LW_OPT_DISABLE,
    LW_OPT_REPORT,
    LW_OPT_QUIET,
    LW_OPT_STACKS,
    LW_OPT_MAX_FRAMES,
    LW_OPT_MAX_SITES,
    LW_OPT_REPORT_SITES,
    LW_OPT_INTERVAL_MS,
    LW_OPT_WARN,
    LW_OPT_CONFIRM,
    LW_OPT_REPORT_EVERY,
    LW_OPT_PROMETHEUS,
    LW_OPT_TORCH_MODE,
    LW_OPT_TORCH_STEPS,
    LW_OPT_TORCH_WINDOW,
    LW_OPT_TORCH_MAX_ENTRIES,
    LW_OPT_TORCH_OWNER_MS,
    LW_OPT_TORCH_ANATOMY,
    LW_OPT_SOURCE_LINES,
    LW_OPT_USER_CODE,
    LW_OPT_VERIFY_STACKS,
    LW_OPT_TEST_CLOCK,
    LW_OPT_SECCOMP,
    LW_OPT_CONTROL,
    LW_OPT_LIVE_HOLD,
    LW_OPT_COUNT
} lw_option_id;

typedef enum { LW_OPT_BOOL, LW_OPT_INT, LW_OPT_STRING } lw_option_type;

typedef struct {
    const char *name; /* environment variable */
    lw_option_type type;
    long dflt;             /* bool and int */
    const char *dflt_text; /* string default */
    long min, max;         /* int range */
    const char *help;
    const char *choices; /* string: the accepted values, space-separated; NULL: any */
} lw_option_def;

const lw_option_def *lw_options_table(size_t *count);

/* 1 for 1/true/yes/on, 0 for 0/false/no/off (any case), -1 for anything
 * else: the words every boolean setting takes. */
int lw_option_bool_word(const char *text);

/* Parses text for def. Returns 0 and sets *out (bool/int), or -1 and writes a
 * one-line reason that names the accepted values into err. Pure. */
int lw_option_parse(const lw_option_def *def, const char *text, long *out, char *err,
                    size_t errlen);

/* The value of one bool or int setting as the environment gives it now,
 * parsed as lw_options_load does (a bad value gives the default), without
 * loading or printing anything. Returns 1 when the variable is set. */
int lw_option_env(lw_option_id id, long *out);

/* Reads the environment. A bad value prints one line naming the variable, the
 * problem and the default used instead. Idempotent. */
void lw_options_load(void);

/* Reads the settings from get (a variable's name -> its value, or NULL)
 * instead of the environment, from the next load on; NULL: the environment
 * again. For a library attached to a running process, whose environment the
 * command cannot set. The strings must stay valid. */
void lw_options_set_source(const char *(*get)(const char *name));

/* Read on every allocation event: inline, one load once loaded. The values
 * and the flag are options.c's, not to be written elsewhere. */
extern long lw_opt_values_[];
extern int lw_opt_loaded_;
static inline long lw_opt_int(lw_option_id id) {
    if (__builtin_expect(!lw_opt_loaded_, 0)) lw_options_load();
    return lw_opt_values_[id];
}
const char *lw_opt_str(lw_option_id id);

#endif
