/* What 'leakwatch run' decides, separated from the process handling in
 * cmd_run.c so the tests can check each decision directly. */
#include "cli_run.h"

#include "cli.h"
#include "options.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

/* Settings the library reads (or is about to) that are not in its options
 * table yet. As soon as the table has one, the table's definition wins: see
 * lw_run_check_setting. */
typedef enum { EXTRA_INT, EXTRA_CHOICE, EXTRA_PATH } extra_type;
static const struct {
    const char *name;
    extra_type type;
    long min, max;
    const char *choices; /* EXTRA_CHOICE: space-separated */
} extras[] = {
    {"LEAKWATCH_INTERVAL_MS", EXTRA_INT, 1, 3600000, NULL},
    {"LEAKWATCH_TORCH_MODE", EXTRA_CHOICE, 0, 0, "segments tensors"},
    {"LEAKWATCH_REPORT_EVERY", EXTRA_INT, 0, 31536000, NULL},
    {"LEAKWATCH_PROMETHEUS", EXTRA_PATH, 0, 0, NULL},
};
enum { NEXTRAS = sizeof extras / sizeof extras[0] };

static const lw_option_def *table_def(const char *name) {
    size_t n = 0;
    const lw_option_def *t = lw_options_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].name && !strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

const char *lw_run_setting_name(const char *name) {
    char canon[128];
    size_t o = 0;
    if (strncasecmp(name, "LEAKWATCH_", 10) != 0) {
        memcpy(canon, "LEAKWATCH_", 10);
        o = 10;
    }
    for (const char *p = name; *p && o + 1 < sizeof canon; p++)
        canon[o++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    canon[o] = '\0';
    const lw_option_def *d = table_def(canon);
    if (d) return d->name;
    for (int i = 0; i < NEXTRAS; i++)
        if (!strcmp(extras[i].name, canon)) return extras[i].name;
    return NULL;
}

void lw_run_known_settings(char *out, size_t n) {
    size_t count = 0, o = 0;
    const lw_option_def *t = lw_options_table(&count);
    out[0] = '\0';
    for (size_t i = 0; i < count + NEXTRAS; i++) {
        const char *name = i < count ? t[i].name : extras[i - count].name;
        if (i >= count && table_def(name)) continue; /* now in the table */
        int w = snprintf(out + o, n - o, "%s%s", o ? ", " : "", name);
        if (w < 0 || (size_t)w >= n - o) break;
        o += (size_t)w;
    }
}

int lw_run_check_setting(const char *name, const char *value, char *err, size_t errlen) {
    const lw_option_def *d = table_def(name);
    long v;
    if (d) return lw_option_parse(d, value, &v, err, errlen);
    for (int i = 0; i < NEXTRAS; i++) {
        if (strcmp(extras[i].name, name)) continue;
        switch (extras[i].type) {
        case EXTRA_INT:
            if (lw_parse_long(value, extras[i].min, extras[i].max, &v) == 0) return 0;
            snprintf(err, errlen, "expected a whole number from %ld to %ld", extras[i].min,
                     extras[i].max);
            return -1;
        case EXTRA_CHOICE: {
            const char *c = extras[i].choices;
            size_t l = strlen(value);
            for (const char *p = c; *p;) {
                size_t wl = strcspn(p, " ");
                if (wl == l && l && !strncmp(p, value, l)) return 0;
                p += wl;
                while (*p == ' ')
                    p++;
            }
            snprintf(err, errlen, "expected one of: %s", c);
            return -1;
        }
        case EXTRA_PATH:
            if (!*value) {
                snprintf(err, errlen, "expected a file path");
                return -1;
            }
            if (strlen(value) >= PATH_MAX) {
                snprintf(err, errlen, "path longer than %d bytes", PATH_MAX - 1);
                return -1;
            }
            return 0;
        }
    }
    snprintf(err, errlen, "unknown setting");
    return -1;
}

int lw_run_quiet_env(void) {
    const lw_option_def *d = table_def("LEAKWATCH_QUIET");
    const char *q = getenv("LEAKWATCH_QUIET");
    long v = 0;
    char err[64];
    return d && q && lw_option_parse(d, q, &v, err, sizeof err) == 0 && v;
}

static int readable_file(const char *p) {
    return access(p, R_OK) == 0;
}

/* The folder of the running leakwatch binary (through /proc/self/exe, so a
 * symbolic link to the command still finds its own installation). */
static int self_dir(char *out, size_t n, char *err, size_t errlen) {
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) {
        snprintf(err, errlen,
                 "cannot find this program's own path (/proc/self/exe); is /proc "
                 "mounted? Pass --library PATH to libleakwatch.so");
        return -1;
    }
    exe[l] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(out, n, "%s", exe);
    return 0;
}

/* The first of dir + rel[i] that exists and is readable, made absolute. */
static int first_readable(const char *dir, const char *const *rel, size_t nrel, char *out,
                          size_t n) {
    for (size_t i = 0; i < nrel; i++) {
        char cand[PATH_MAX + 64], abs[PATH_MAX];
        snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
        if (realpath(cand, abs) && readable_file(abs)) {
            snprintf(out, n, "%s", abs);
            return 0;
        }
    }
    return -1;
}

int lw_run_find_library(const char *override, char *out, size_t n, char *err, size_t errlen) {
    if (override) {
        char abs[PATH_MAX];
        if (!realpath(override, abs) || !readable_file(abs)) {
            snprintf(err, errlen,
                     "--library %s: no such readable file; give the path of "
                     "libleakwatch.so",
                     override);
            return -1;
        }
        snprintf(out, n, "%s", abs);
        return 0;
    }
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir, err, errlen) != 0) return -1;
    /* Beside the command: the build folder and the Python package (_bin);
     * ../lib or ../lib64: make install. */
    static const char *const rel[] = {"/libleakwatch.so", "/../lib/libleakwatch.so",
                                      "/../lib64/libleakwatch.so"};
    if (first_readable(dir, rel, sizeof rel / sizeof rel[0], out, n) == 0) return 0;
    snprintf(err, errlen,
             "cannot find libleakwatch.so next to %s/leakwatch or in %s/../lib; reinstall "
             "leakwatch (pip install or make install) or pass --library PATH",
             dir, dir);
    return -1;
}

int lw_run_find_stand_ins(char *out, size_t n, char *err, size_t errlen) {
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir, err, errlen) != 0) return -1;
    /* build/tests/lib in the build folder, stand-ins/ beside the command in
     * the Python package, lib/leakwatch/stand-ins after make install. */
    static const char *const rel[] = {"/tests/lib/libcuda.so.1", "/stand-ins/libcuda.so.1",
                                      "/../lib/leakwatch/stand-ins/libcuda.so.1"};
    char lib[PATH_MAX];
    if (first_readable(dir, rel, sizeof rel / sizeof rel[0], lib, sizeof lib) == 0) {
        *strrchr(lib, '/') = '\0';
        snprintf(out, n, "%s", lib);
        return 0;
    }
    snprintf(err, errlen,
             "--cuda-stand-ins: this installation has no CPU stand-ins for the CUDA libraries "
             "(looked in %s/tests/lib, %s/stand-ins and %s/../lib/leakwatch/stand-ins); "
             "build them with 'make stand-ins' or reinstall leakwatch",
             dir, dir, dir);
    return -1;
}

char *lw_run_library_path(const char *dir, const char *existing) {
    size_t dl = strlen(dir), el = existing ? strlen(existing) : 0;
    char *s = malloc(dl + el + 2);
    if (!s) return NULL;
    memcpy(s, dir, dl);
    if (el) {
        s[dl] = ':';
        memcpy(s + dl + 1, existing, el + 1);
    } else {
        s[dl] = '\0';
    }
    return s;
}

/* Sanitizer runtimes refuse to run unless loaded before everything else. */
static int must_stay_first(const char *entry, size_t len) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%.*s", (int)len, entry);
    const char *base = strrchr(tmp, '/');
    base = base ? base + 1 : tmp;
    return !strncmp(base, "libasan", 7) || !strncmp(base, "libclang_rt.asan", 16) ||
           !strncmp(base, "libtsan", 7) || !strncmp(base, "libclang_rt.tsan", 16);
}

char *lw_run_preload(const char *lib, const char *existing) {
    size_t cap = strlen(lib) + (existing ? strlen(existing) : 0) + 4;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = 0;
    /* Two passes over the entries (separated by spaces or colons): sanitizer
     * runtimes, then our library, then the rest in their order. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? " " : "", lib);
        }
        for (const char *p = existing ? existing : ""; *p;) {
            size_t len = strcspn(p, " :");
            if (len && (must_stay_first(p, len) == (pass == 0)) &&
                !(len == strlen(lib) && !strncmp(p, lib, len)))
                o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)len, p);
            p += len;
            while (*p == ' ' || *p == ':')
                p++;
        }
    }
    return out;
}

int lw_run_exit_code(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return LW_EXIT_RUN_FAILED;
}

int lw_run_decide(const lw_model *m) {
    return m->verdict == LW_MV_LEAK;
}
