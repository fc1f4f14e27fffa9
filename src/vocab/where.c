/* SPDX-License-Identifier: Apache-2.0 */
#include "where.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *p) {
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

static int starts(const char *s, const char *prefix) {
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* "/lib/python3.11/" and the like: the standard library and every package
 * installed under it. */
static int under_python_lib(const char *p) {
    for (const char *q = p; q && (q = strstr(q, "python")) != NULL; q++) {
        if (q < p + 5 || (strncmp(q - 5, "/lib/", 5) && strncmp(q - 5, "lib64", 5))) continue;
        if (q[6] >= '0' && q[6] <= '9') return 1;
    }
    return 0;
}

static int has_component(const char *p, const char *name, size_t len) {
    for (const char *q = p; q && (q = strstr(q, name)) != NULL; q++) {
        if (q > p && q[-1] != '/') continue;
        char after = q[len];
        if (after == '/' || (!strncmp(q + len, ".py", 3) && q[len + 3] == '\0')) return 1;
    }
    return 0;
}

/* One entry of LEAKWATCH_USER_CODE against a path (a file or a module). */
static int entry_matches(const char *e, size_t len, const char *path) {
    if (!path || !len) return 0;
    char name[256];
    if (len >= sizeof name) return 0;
    memcpy(name, e, len);
    name[len] = '\0';
    if (memchr(e, '/', len)) return !strncmp(path, name, len);
    if (has_component(path, name, len)) return 1;
    const char *b = base_name(path);
    if (!strncmp(b, name, len) && (b[len] == '.' || b[len] == '\0' || b[len] == '-')) return 1;
    return !strncmp(b, "lib", 3) && !strncmp(b + 3, name, len) &&
           (b[3 + len] == '.' || b[3 + len] == '-' || b[3 + len] == '_');
}

static int user_listed(const lw_frame_ref *f, const char *user_code) {
    if (!user_code) return 0;
    for (const char *p = user_code; *p;) {
        size_t len = strcspn(p, ":,");
        if (entry_matches(p, len, f->file) || (!f->python && entry_matches(p, len, f->module)))
            return 1;
        p += len;
        if (*p) p++;
    }
    return 0;
}

static int any_prefix(const char *s, const char *const *list) {
    for (int i = 0; list[i]; i++)
        if (starts(s, list[i])) return 1;
    return 0;
}

static lw_frame_class classify_native(const lw_frame_ref *f, const char *user_code) {
    static const char *const cuda[] = {"libcuda.",   "libcudart",   "libcublas",    "libcudnn",
                                       "libnccl",    "libnvrtc",    "libcusparse",  "libcufft",
                                       "libcurand",  "libcusolver", "libnvJitLink", "libcupti",
                                       "libnvidia-", NULL};
    static const char *const libc[] = {"libc.so",    "libc-",    "ld-linux", "ld64.so",
                                       "libpthread", "libdl.so", NULL};
    static const char *const startup[] = {"__libc_start_main",
                                          "__libc_start_call_main",
                                          "_start",
                                          "start_thread",
                                          "clone",
                                          "clone3",
                                          NULL};
    const char *mod = base_name(f->module);
    if (starts(mod, "libleakwatch")) return LW_FRAME_LEAKWATCH;
    if (mod && any_prefix(mod, cuda)) return LW_FRAME_CUDA;
    if (starts(mod, "libffi") || starts(mod, "_ctypes")) return LW_FRAME_FFI;
    if (mod && any_prefix(mod, libc)) return LW_FRAME_LIBC;
    if (f->function) {
        for (int i = 0; startup[i]; i++)
            if (!strcmp(f->function, startup[i])) return LW_FRAME_LIBC;
    }
    if (starts(mod, "libpython") || (starts(mod, "python") && !strchr(mod, '/')))
        return LW_FRAME_INTERP;
    if (user_listed(f, user_code)) return LW_FRAME_USER;
    const char *m = f->module;
    if (m && (strstr(m, "/site-packages/") || strstr(m, "/dist-packages/") || under_python_lib(m)))
        return mod && starts(mod, "_ctypes") ? LW_FRAME_FFI : LW_FRAME_NATIVE_LIB;
    static const char *const system_dirs[] = {
        "/usr/lib",        "/lib/", "/lib64/",    "/usr/local/lib",
        "/usr/local/cuda", "/opt/", "/usr/lib64", NULL};
    if (m && any_prefix(m, system_dirs)) return LW_FRAME_NATIVE_LIB;
    static const char *const known[] = {"libtorch", "libc10",  "libstdc++", "libgcc",
                                        "libgomp",  "libm.so", NULL};
    if (mod && any_prefix(mod, known)) return LW_FRAME_NATIVE_LIB;
    /* The program itself, or a library of the user's own build: user code
     * when it is named. */
    return f->function || f->file ? LW_FRAME_USER : LW_FRAME_NATIVE_LIB;
}

/* A file of leakwatch's own Python package (python/leakwatch: the helper
 * imported into the job). */
static int leakwatch_python(const char *p) {
    static const char *const files[] = {"__init__.py", "__main__.py", "_torch.py", NULL};
    const char *b = base_name(p);
    if (b - p < 10 || strncmp(b - 10, "leakwatch/", 10) || (b - 10 > p && b[-11] != '/')) return 0;
    for (int i = 0; files[i]; i++)
        if (!strcmp(b, files[i])) return 1;
    return 0;
}

lw_frame_class lw_frame_classify(const lw_frame_ref *f, const char *user_code) {
    if (!f->python) return classify_native(f, user_code);
    if (user_listed(f, user_code)) return LW_FRAME_USER;
    const char *p = f->file;
    if (!p) return LW_FRAME_PYLIB;
    if (leakwatch_python(p)) return LW_FRAME_LEAKWATCH;
    /* Code without a file of its own: frozen modules, code generated by
     * exec() (dataclasses, namedtuple: "<string>"), and the frame that
     * stands for autograd's engine ("<autograd engine>", site_name.c and the
     * helper): never the user's line; the innermost Python frame rule still
     * names one when nothing else is left. */
    if (p[0] == '<') return LW_FRAME_PYLIB;
    if (strstr(p, "/site-packages/") || strstr(p, "/dist-packages/") || under_python_lib(p))
        return LW_FRAME_PYLIB;
    if (has_component(p, "torch", 5)) return LW_FRAME_PYLIB;
    return LW_FRAME_USER;
}

int lw_frame_class_is_noise(lw_frame_class c) {
    return c == LW_FRAME_INTERP || c == LW_FRAME_FFI || c == LW_FRAME_LIBC || c == LW_FRAME_CUDA ||
           c == LW_FRAME_LEAKWATCH;
}

int lw_where_pick(const lw_frame_ref *fr, size_t n, const char *user_code, const char **why) {
    const char *unused;
    if (!why) why = &unused;
    for (size_t i = 0; i < n; i++)
        if (lw_frame_classify(&fr[i], user_code) == LW_FRAME_USER) {
            *why = "user code";
            return (int)i;
        }
    for (size_t i = 0; i < n; i++)
        if (fr[i].python && fr[i].file) {
            *why = "innermost Python frame";
            return (int)i;
        }
    for (size_t i = 0; i < n; i++) {
        lw_frame_class c = lw_frame_classify(&fr[i], user_code);
        if (!fr[i].python && fr[i].function && c != LW_FRAME_CUDA && c != LW_FRAME_LEAKWATCH) {
            *why = "innermost native frame";
            return (int)i;
        }
    }
    *why = "innermost frame";
    return n ? 0 : -1;
}

char *lw_where_label(const lw_frame_ref *f, char *out, size_t n) {
    const char *fn = f->function ? f->function : "??";
    if (f->file && f->line > 0)
        snprintf(out, n, "%s:%d in %s", base_name(f->file), f->line, fn);
    else if (f->file)
        snprintf(out, n, "%s in %s", base_name(f->file), fn);
    else if (f->module)
        snprintf(out, n, "%s (%s)", fn, base_name(f->module));
    else
        snprintf(out, n, "%s", fn);
    return out;
}

static int same_text(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

static int same_frame(const lw_frame_ref *a, const lw_frame_ref *b) {
    return a->python == b->python && a->line == b->line && same_text(a->function, b->function) &&
           same_text(a->file, b->file) &&
           (a->python || same_text(base_name(a->module), base_name(b->module)));
}

int lw_where_same_place(const lw_frame_ref *a, const lw_frame_ref *b) {
    return same_frame(a, b);
}

/* The frames that may tell sites apart: those of the rule that chose the
 * place (user code, Python frames, named native frames). */
static int telling(const lw_frame_ref *f, lw_frame_class place_class, int place_python,
                   const char *user_code) {
    lw_frame_class c = lw_frame_classify(f, user_code);
    if (place_class == LW_FRAME_USER) return c == LW_FRAME_USER;
    if (place_python) return f->python && f->file;
    return !f->python && f->function && c != LW_FRAME_CUDA && c != LW_FRAME_LEAKWATCH;
}

static size_t next_telling(const lw_frame_ref *fr, size_t n, size_t i, lw_frame_class pc, int pp,
                           const char *user_code) {
    while (i < n && !telling(&fr[i], pc, pp, user_code))
        i++;
    return i;
}

/* lw_where_apart in two steps for many sites: the indices (at most cap, into
 * out) of fr's frames beyond its place that may tell it apart, once per site;
 * then each pair compared on them (apart_told). Two sites with the same place
 * share its class, hence the rule. */
static size_t telling_frames(const lw_frame_ref *fr, size_t n, int place, const char *user_code,
                             int *out, size_t cap) {
    if (place < 0 || (size_t)place >= n) return 0;
    lw_frame_class pc = lw_frame_classify(&fr[place], user_code);
    int pp = fr[place].python;
    size_t k = 0;
    for (size_t i = next_telling(fr, n, (size_t)place + 1, pc, pp, user_code); i < n && k < cap;
         i = next_telling(fr, n, i + 1, pc, pp, user_code))
        out[k++] = (int)i;
    return k;
}

static int apart_told(const lw_frame_ref *self, int place, const int *st, size_t sn,
                      const lw_frame_ref *other, int oplace, const int *ot, size_t on) {
    if (place < 0 || oplace < 0 || !same_frame(&self[place], &other[oplace])) return -2;
    for (size_t m = 0; m < sn; m++)
        if (m >= on || !same_frame(&self[st[m]], &other[ot[m]])) return st[m];
    return -1; /* its frames are all the other's too */
}

int lw_where_apart(const lw_frame_ref *self, size_t n, int place, const lw_frame_ref *other,
                   size_t on, int oplace, const char *user_code) {
    if (place < 0 || oplace < 0 || (size_t)place >= n || (size_t)oplace >= on) return -2;
    int *st = malloc(n * sizeof *st), *ot = malloc(on * sizeof *ot);
    int d = -2;
    if (st && ot) {
        size_t sn = telling_frames(self, n, place, user_code, st, n);
        /* The other's frames of the rule that chose self's place. */
        lw_frame_class pc = lw_frame_classify(&self[place], user_code);
        int pp = self[place].python;
        size_t on2 = 0;
        for (size_t j = next_telling(other, on, (size_t)oplace + 1, pc, pp, user_code); j < on;
             j = next_telling(other, on, j + 1, pc, pp, user_code))
            ot[on2++] = (int)j;
        d = apart_told(self, place, st, sn, other, oplace, ot, on2);
    }
    free(st);
    free(ot);
    return d;
}

int lw_where_apart_sites(const lw_frame_ref *frames, const size_t *nframes, const int *leak,
                         size_t n, const char *user_code, long *budget, int *out) {
    for (size_t i = 0; i < n; i++)
        out[i] = -1;
    if (!n) return 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += nframes[i];
    const lw_frame_ref **fr = malloc(n * sizeof *fr);
    int *at = malloc(n * sizeof *at), *told = malloc((total ? total : 1) * sizeof *told);
    const int **st = malloc(n * sizeof *st);
    size_t *ntold = malloc(n * sizeof *ntold);
    int rc = -1;
    if (fr && at && told && st && ntold) {
        /* Once per site: its place, and its frames that may tell it apart. */
        for (size_t i = 0, off = 0; i < n; off += nframes[i], i++) {
            fr[i] = nframes[i] ? frames + off : NULL;
            st[i] = told + off;
            at[i] = nframes[i] ? lw_where_pick(fr[i], nframes[i], user_code, NULL) : -1;
            ntold[i] = at[i] >= 0 ? telling_frames(fr[i], nframes[i], at[i], user_code, told + off,
                                                   nframes[i])
                                  : 0;
        }
        /* Then the pairs, within the budget. */
        for (size_t i = 0; i < n; i++) {
            int best = -1, cut = 0;
            for (size_t j = 0; j < n && at[i] >= 0; j++) {
                if (!leak[j] == !leak[i] || at[j] < 0) continue;
                if (*budget <= 0) {
                    cut = 1;
                    break;
                }
                (*budget)--;
                int d = apart_told(fr[i], at[i], st[i], ntold[i], fr[j], at[j], st[j], ntold[j]);
                if (d > best) best = d;
            }
            out[i] = cut ? -1 : best;
        }
        rc = 0;
    }
    free(fr);
    free(at);
    free(told);
    free(st);
    free(ntold);
    return rc;
}

char *lw_where_label_via(const lw_frame_ref *f, const lw_frame_ref *place, char *out, size_t n) {
    char own[400], via[300];
    lw_where_label(f, own, sizeof own);
    const char *fn = place->function ? place->function : "??";
    if (place->file && place->line > 0)
        snprintf(via, sizeof via, "%s, %s:%d", fn, base_name(place->file), place->line);
    else if (place->file)
        snprintf(via, sizeof via, "%s, %s", fn, base_name(place->file));
    else if (place->module)
        snprintf(via, sizeof via, "%s, %s", fn, base_name(place->module));
    else
        snprintf(via, sizeof via, "%s", fn);
    snprintf(out, n, "%s (via %s)", own, via);
    return out;
}
