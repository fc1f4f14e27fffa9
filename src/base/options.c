/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One row per setting: a boolean, a whole number in [lo, hi], or a text
 * (choices: the accepted words, or NULL for any). */
#define BOOL(name, dflt, help)                                                                     \
    { "LEAKWATCH_" name, LW_OPT_BOOL, dflt, NULL, 0, 1, help, NULL }
#define INT(name, dflt, lo, hi, help)                                                              \
    { "LEAKWATCH_" name, LW_OPT_INT, dflt, NULL, lo, hi, help, NULL }
#define TEXT(name, dflt, help, choices)                                                            \
    { "LEAKWATCH_" name, LW_OPT_STRING, 0, dflt, 0, 0, help, choices }

static const lw_option_def table[LW_OPT_COUNT] = {
    [LW_OPT_DISABLE] = BOOL("DISABLE", 0, "1: pass every CUDA call through and record nothing"),
    [LW_OPT_REPORT] = TEXT("REPORT", "leakwatch-%p.json",
                           "report path; %p = pid, %h = host name, %r = rank, %% = %", NULL),
    [LW_OPT_QUIET] = BOOL("QUIET", 0, "1: errors only on stderr (no live line, summary or notes)"),
    [LW_OPT_STACKS] =
        BOOL("STACKS", 1, "0: count bytes without call stacks (one site for everything)"),
    [LW_OPT_MAX_FRAMES] = INT("MAX_FRAMES", 64, 4, 256, "native frames kept per call stack"),
    [LW_OPT_MAX_SITES] = INT("MAX_SITES", 16384, 16, 1048576,
                             "distinct call sites tracked; later ones are pooled and counted"),
    [LW_OPT_REPORT_SITES] = INT("REPORT_SITES", 200, 1, 1000000,
                                "call sites written to the report, most relevant first"),
    [LW_OPT_INTERVAL_MS] = INT("INTERVAL_MS", 1000, 10, 3600000,
                               "without step marks, one sample of the floor per this many ms"),
    [LW_OPT_WARN] =
        BOOL("WARN", 1, "1: print one line on stderr when a leak is established during the run"),
    [LW_OPT_CONFIRM] = INT("CONFIRM", 3, 1, 100,
                           "consecutive evaluations that must agree before a leak is announced"),
    [LW_OPT_REPORT_EVERY] =
        INT("REPORT_EVERY", 60, 0, 31536000,
            "also rewrite the report every this many seconds (0: only at exit)"),
    [LW_OPT_PROMETHEUS] = TEXT(
        "PROMETHEUS", NULL, "write Prometheus textfile metrics to this path every interval", NULL),
    [LW_OPT_TORCH_MODE] = TEXT("TORCH_MODE", "segments",
                               "PyTorch: segments (its allocator untouched; tensor growth from its "
                               "own counters) or tensors (switches to backend:cudaMallocAsync, "
                               "under which PyTorch refuses CUDA graphs in torch.compile, memory "
                               "snapshots and history, CUDA tensors over torch.multiprocessing, "
                               "MemPool/use_mem_pool, symmetric memory, NCCL's allocator hooks, "
                               "and ignores max_split_size_mb and memory fractions)",
                               "segments tensors"),
    [LW_OPT_TORCH_STEPS] = TEXT("TORCH_STEPS", "iteration",
                                "in Python: iteration (one step per training iteration, whatever "
                                "the number of optimizers or skipped GradScaler steps), optimizer "
                                "(one per optimizer.step()), or 0 (none)",
                                "iteration optimizer 1 0 true false yes no on off"),
    [LW_OPT_TORCH_WINDOW] = INT("TORCH_WINDOW", 32, 0, 100000,
                                "PyTorch: steps of allocation history recorded once its tensor "
                                "memory grows, to name the leaking lines (0: never record)"),
    [LW_OPT_TORCH_MAX_ENTRIES] = INT("TORCH_MAX_ENTRIES", 100000, 1000, 100000000,
                                     "PyTorch: allocation history events kept during that window "
                                     "(max_entries)"),
    [LW_OPT_TORCH_OWNER_MS] = INT("TORCH_OWNER_MS", 1000, 0, 600000,
                                  "PyTorch: time budget in ms of the search for what keeps a leak "
                                  "alive, at the window's close (0: no search)"),
    [LW_OPT_TORCH_ANATOMY] = BOOL("TORCH_ANATOMY", 1,
                                  "PyTorch: 0: no memory by role (the report's anatomy) and no "
                                  "out-of-memory observer (an out-of-memory is then seen at the "
                                  "driver only)"),
    [LW_OPT_SOURCE_LINES] =
        BOOL("SOURCE_LINES", 1, "0: no file:line or inlined frames in reports (no addr2line run)"),
    [LW_OPT_USER_CODE] = TEXT("USER_CODE", NULL,
                              "more code that counts as yours when naming the place to look: path "
                              "prefixes or package names, separated by ':' or ','",
                              NULL),
    [LW_OPT_VERIFY_STACKS] =
        BOOL("VERIFY_STACKS", 0,
             "1 (debugging): unwind every stack a second time with the fallback "
             "unwinder and count differences (tracker.stack_mismatches); slow"),
    [LW_OPT_TEST_CLOCK] = BOOL("TEST_CLOCK", 0,
                               "1 (for tests): the run's time moves only when the job calls "
                               "leakwatch__test_clock_advance(ns), which waits for the sampler"),
    [LW_OPT_SECCOMP] = TEXT("SECCOMP", "safe",
                            "under a seccomp filter (Seccomp: in /proc/self/status): safe (no "
                            "socket and no helper process, which the filter may punish by killing "
                            "the job: no live view and no source lines) or full (both, as without "
                            "a filter)",
                            "safe full"),
    [LW_OPT_CONTROL] = BOOL("CONTROL", 1,
                            "0: no control socket (no leakwatch top, ps, snapshot or attach "
                            "--detach for this job; one descriptor fewer)"),
    [LW_OPT_LIVE_HOLD] = INT("LIVE_HOLD", 256, 0, 100000000,
                             "PyTorch: steps a leak must hold, not slowing nor cycling, before "
                             "it is said while the job runs (0: as soon as it is announced)"),
};

long lw_opt_values_[LW_OPT_COUNT];
#define values lw_opt_values_
static const char *texts[LW_OPT_COUNT];
int lw_opt_loaded_;
#define loaded lw_opt_loaded_
/* Where the values come from: the environment, or (attach) the settings the
 * command passed in. */
static const char *env_source(const char *name) {
    return getenv(name);
}
static const char *(*source)(const char *name) = env_source;

const lw_option_def *lw_options_table(size_t *count) {
    if (count) *count = LW_OPT_COUNT;
    return table;
}

int lw_option_bool_word(const char *text) {
    static const char *yes[] = {"1", "true", "yes", "on"};
    static const char *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; text && i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) return 1;
        if (strcasecmp(text, no[i]) == 0) return 0;
    }
    return -1;
}

int lw_option_parse(const lw_option_def *def, const char *text, long *out, char *err,
                    size_t errlen) {
    if (def->type == LW_OPT_BOOL) {
        int b = lw_option_bool_word(text);
        if (b >= 0) return *out = b, 0;
        snprintf(err, errlen, "expected 1 or 0 (or true/false, yes/no, on/off)");
        return -1;
    }
    if (def->type == LW_OPT_INT) {
        char *end = NULL;
        errno = 0;
        /* strtol would take leading spaces and a '+': the documented form is
         * digits with an optional '-'. */
        long v = 0;
        if (text[0] == '-' ? (text[1] >= '0' && text[1] <= '9')
                           : (text[0] >= '0' && text[0] <= '9'))
            v = strtol(text, &end, 10);
        else
            end = (char *)text;
        if (end == text || *end != '\0' || errno == ERANGE || v < def->min || v > def->max) {
            snprintf(err, errlen, "expected a whole number from %ld to %ld", def->min, def->max);
            return -1;
        }
        *out = v;
        return 0;
    }
    if (text[0] == '\0') {
        snprintf(err, errlen, "expected a non-empty value");
        return -1;
    }
    if (strlen(text) > 4000) {
        snprintf(err, errlen, "value longer than 4000 characters");
        return -1;
    }
    if (def->choices) {
        size_t len = strlen(text);
        for (const char *p = def->choices; *p;) {
            size_t wl = strcspn(p, " ");
            if (wl == len && !strncmp(p, text, len)) return 0;
            p += wl + strspn(p + wl, " ");
        }
        snprintf(err, errlen, "expected one of: %s", def->choices);
        return -1;
    }
    return 0;
}

/* The setting d as the environment gives it: 0 when unset, 1 when set to a
 * valid value (*v for a bool or int, *text for a text), -1 when set to a bad
 * one (err says why). */
static int from_env(const lw_option_def *d, long *v, const char **text, char *err, size_t errlen) {
    const char *env = source(d->name);
    if (!env) return 0;
    if (lw_option_parse(d, env, v, err, errlen) != 0) return -1;
    *text = env;
    return 1;
}

int lw_option_env(lw_option_id id, long *out) {
    char err[160];
    const char *text = NULL;
    long v = table[id].dflt;
    int set = from_env(&table[id], &v, &text, err, sizeof err);
    *out = set == 1 ? v : table[id].dflt;
    return set != 0;
}

void lw_options_load(void) {
    if (loaded) return;
    for (int i = 0; i < LW_OPT_COUNT; i++) {
        const lw_option_def *d = &table[i];
        values[i] = d->dflt;
        texts[i] = d->dflt_text;
        char err[160];
        const char *env = NULL;
        long v = 0;
        int set = from_env(d, &v, &env, err, sizeof err);
        if (set < 0) {
            char shown[64];
            snprintf(shown, sizeof shown, "%s", source(d->name));
            if (d->type == LW_OPT_STRING)
                lw_log("ignoring %s=\"%s\": %s; using the default \"%s\"", d->name, shown, err,
                       d->dflt_text);
            else
                lw_log("ignoring %s=\"%s\": %s; using the default %ld", d->name, shown, err,
                       d->dflt);
        } else if (set > 0 && d->type == LW_OPT_STRING) {
            texts[i] = env;
        } else if (set > 0) {
            values[i] = v;
        }
    }
    lw_log_quiet = (int)values[LW_OPT_QUIET];
    loaded = 1;
}

const char *lw_opt_str(lw_option_id id) {
    if (!loaded) lw_options_load();
    return texts[id];
}

void lw_options_set_source(const char *(*get)(const char *name)) {
    source = get ? get : env_source;
    loaded = 0;
}
