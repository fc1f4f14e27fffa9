/* SPDX-License-Identifier: Apache-2.0 */
#include "options.h"

#include "log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const lw_option_def table[LW_OPT_COUNT] = {
    [LW_OPT_DISABLE] = {"LEAKWATCH_DISABLE", LW_OPT_BOOL, 0, NULL, 0, 1,
                        "1: pass every CUDA call through and record nothing", NULL},
    [LW_OPT_REPORT] = {"LEAKWATCH_REPORT", LW_OPT_STRING, 0, "leakwatch-%p.json", 0, 0,
                       "report path; %p = pid, %h = host name, %r = rank, %% = %", NULL},
    [LW_OPT_QUIET] = {"LEAKWATCH_QUIET", LW_OPT_BOOL, 0, NULL, 0, 1,
                      "1: no summary on stderr (errors are still printed)", NULL},
    [LW_OPT_STACKS] = {"LEAKWATCH_STACKS", LW_OPT_BOOL, 1, NULL, 0, 1,
                       "0: count bytes without call stacks (one site for everything)", NULL},
    [LW_OPT_MAX_FRAMES] = {"LEAKWATCH_MAX_FRAMES", LW_OPT_INT, 64, NULL, 4, 256,
                           "native frames kept per call stack", NULL},
    [LW_OPT_MAX_SITES] = {"LEAKWATCH_MAX_SITES", LW_OPT_INT, 16384, NULL, 16, 1048576,
                          "distinct call sites tracked; later ones are pooled and counted", NULL},
    [LW_OPT_REPORT_SITES] = {"LEAKWATCH_REPORT_SITES", LW_OPT_INT, 200, NULL, 1, 1000000,
                             "call sites written to the report, most relevant first", NULL},
    [LW_OPT_INTERVAL_MS] = {"LEAKWATCH_INTERVAL_MS", LW_OPT_INT, 1000, NULL, 10, 3600000,
                            "without step marks, one sample of the floor per this many ms", NULL},
    [LW_OPT_WARN] = {"LEAKWATCH_WARN", LW_OPT_BOOL, 1, NULL, 0, 1,
                     "1: print one line on stderr when a leak is established during the run", NULL},
    [LW_OPT_CONFIRM] = {"LEAKWATCH_CONFIRM", LW_OPT_INT, 3, NULL, 1, 100,
                        "consecutive evaluations that must agree before a leak is announced", NULL},
    [LW_OPT_REPORT_EVERY] = {"LEAKWATCH_REPORT_EVERY", LW_OPT_INT, 60, NULL, 0, 31536000,
                             "also rewrite the report every this many seconds (0: only at exit)",
                             NULL},
    [LW_OPT_PROMETHEUS] = {"LEAKWATCH_PROMETHEUS", LW_OPT_STRING, 0, NULL, 0, 0,
                           "write Prometheus textfile metrics to this path every interval", NULL},
    [LW_OPT_TORCH_MODE] = {"LEAKWATCH_TORCH_MODE", LW_OPT_STRING, 0, "segments", 0, 0,
                           "PyTorch: segments (its allocator untouched; tensor growth from its "
                           "own counters) or tensors (switches to backend:cudaMallocAsync, "
                           "under which PyTorch refuses CUDA graphs in torch.compile, memory "
                           "snapshots and history, CUDA tensors over torch.multiprocessing, "
                           "MemPool/use_mem_pool, symmetric memory, NCCL's allocator hooks, "
                           "and ignores max_split_size_mb and memory fractions)",
                           "segments tensors"},
    [LW_OPT_TORCH_STEPS] = {"LEAKWATCH_TORCH_STEPS", LW_OPT_STRING, 0, "iteration", 0, 0,
                            "in Python: iteration (one step per training iteration, whatever "
                            "the number of optimizers or skipped GradScaler steps), optimizer "
                            "(one per optimizer.step()), or 0 (none)",
                            "iteration optimizer 1 0 true false yes no on off"},
    [LW_OPT_TORCH_WINDOW] = {"LEAKWATCH_TORCH_WINDOW", LW_OPT_INT, 32, NULL, 0, 100000,
                             "PyTorch: steps of allocation history recorded once its tensor "
                             "memory grows, to name the leaking lines (0: never record)",
                             NULL},
    [LW_OPT_TORCH_MAX_ENTRIES] = {"LEAKWATCH_TORCH_MAX_ENTRIES", LW_OPT_INT, 100000, NULL, 1000,
                                  100000000,
                                  "PyTorch: allocation history events kept during that window "
                                  "(max_entries)",
                                  NULL},
    [LW_OPT_SOURCE_LINES] = {"LEAKWATCH_SOURCE_LINES", LW_OPT_BOOL, 1, NULL, 0, 1,
                             "0: no file:line or inlined frames in reports (no addr2line run)",
                             NULL},
    [LW_OPT_USER_CODE] = {"LEAKWATCH_USER_CODE", LW_OPT_STRING, 0, NULL, 0, 0,
                          "more code that counts as yours when naming the place to look: path "
                          "prefixes or package names, separated by ':' or ','",
                          NULL},
    [LW_OPT_VERIFY_STACKS] = {"LEAKWATCH_VERIFY_STACKS", LW_OPT_BOOL, 0, NULL, 0, 1,
                              "1 (debugging): unwind every stack a second time with the fallback "
                              "unwinder and count differences (tracker.stack_mismatches); slow",
                              NULL},
};

static long values[LW_OPT_COUNT];
static const char *texts[LW_OPT_COUNT];
static int loaded;

const lw_option_def *lw_options_table(size_t *count) {
    if (count) *count = LW_OPT_COUNT;
    return table;
}

int lw_option_parse(const lw_option_def *def, const char *text, long *out, char *err,
                    size_t errlen) {
    if (def->type == LW_OPT_BOOL) {
        static const char *yes[] = {"1", "true", "yes", "on"};
        static const char *no[] = {"0", "false", "no", "off"};
        for (size_t i = 0; i < 4; i++) {
            if (strcasecmp(text, yes[i]) == 0) return *out = 1, 0;
            if (strcasecmp(text, no[i]) == 0) return *out = 0, 0;
        }
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

int lw_option_env(lw_option_id id, long *out) {
    const char *env = getenv(table[id].name);
    char err[160];
    long v = table[id].dflt;
    if (env && lw_option_parse(&table[id], env, &v, err, sizeof err) != 0) v = table[id].dflt;
    *out = v;
    return env != NULL;
}

void lw_options_load(void) {
    if (loaded) return;
    for (int i = 0; i < LW_OPT_COUNT; i++) {
        const lw_option_def *d = &table[i];
        values[i] = d->dflt;
        texts[i] = d->dflt_text;
        const char *env = getenv(d->name);
        if (!env) continue;
        char err[160];
        long v = 0;
        if (lw_option_parse(d, env, &v, err, sizeof err) != 0) {
            char shown[64];
            snprintf(shown, sizeof shown, "%s", env);
            if (d->type == LW_OPT_STRING)
                lw_log("ignoring %s=\"%s\": %s; using the default \"%s\"", d->name, shown, err,
                       d->dflt_text);
            else
                lw_log("ignoring %s=\"%s\": %s; using the default %ld", d->name, shown, err,
                       d->dflt);
            continue;
        }
        if (d->type == LW_OPT_STRING)
            texts[i] = env;
        else
            values[i] = v;
    }
    lw_log_quiet = (int)values[LW_OPT_QUIET];
    loaded = 1;
}

long lw_opt_int(lw_option_id id) {
    if (!loaded) lw_options_load();
    return values[id];
}

const char *lw_opt_str(lw_option_id id) {
    if (!loaded) lw_options_load();
    return texts[id];
}
