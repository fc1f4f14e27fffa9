#include "report.h"

#include "clock.h"
#include "json_write.h"
#include "runstate.h"
#include "live.h"
#include "log.h"
#include "options.h"
#include "pystack.h"
#include "record.h"
#include "growth.h"
#include "sites.h"
#include "symbolize.h"
#include "totals.h"

#include <leakwatch.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void emit_counts(lw_jw *w, lw_counts c) {
    lw_jw_uint(w, "alloc_count", c.alloc_count);
    lw_jw_uint(w, "free_count", c.free_count);
    lw_jw_uint(w, "failed_alloc_count", c.failed_count);
    lw_jw_int(w, "live_bytes", c.live_bytes);
    lw_jw_int(w, "live_count", c.live_count);
    lw_jw_int(w, "peak_live_bytes", c.peak_live_bytes);
}

static void emit_totals(lw_jw *w) {
    lw_jw_object(w, "totals");
    emit_counts(w, lw_totals_get(-2, LW_KIND_COUNT));
    lw_jw_uint(w, "unknown_free_count", lw_totals_unknown_frees());
    lw_jw_int(w, "mapped_bytes", lw_totals_mapped_bytes());
    lw_jw_object(w, "by_kind");
    for (int k = 0; k < LW_KIND_COUNT; k++) {
        lw_jw_object(w, lw_kind_name((lw_kind)k));
        emit_counts(w, lw_totals_get(-2, (lw_kind)k));
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_array(w, "by_device");
    uint64_t seen = lw_totals_devices_seen();
    for (int d = -1; d < LW_MAX_DEVICES; d++) {
        if (!(seen & (1ull << (d + 1)))) continue;
        lw_jw_object(w, NULL);
        lw_jw_int(w, "device", d);
        emit_counts(w, lw_totals_get(d, LW_KIND_COUNT));
        lw_jw_object(w, "by_kind");
        for (int k = 0; k < LW_KIND_COUNT; k++) {
            lw_jw_object(w, lw_kind_name((lw_kind)k));
            emit_counts(w, lw_totals_get(d, (lw_kind)k));
            lw_jw_end(w);
        }
        lw_jw_end(w);
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_end(w);
}

/* One frame; inlined ones exist only in the debug information and share the
 * address, module and offset of the frame they were inlined into. */
static void emit_symbol(lw_jw *w, const lw_symbol *s, uintptr_t ip, int inlined) {
    char addr[32];
    snprintf(addr, sizeof addr, "0x%lx", (unsigned long)ip);
    lw_jw_object(w, NULL);
    lw_jw_str(w, "kind", "native");
    lw_jw_str(w, "function", s ? s->function : NULL);
    lw_jw_str(w, "file", s ? s->file : NULL);
    if (s && s->line > 0)
        lw_jw_int(w, "line", s->line);
    else
        lw_jw_null(w, "line");
    lw_jw_str(w, "module", s ? s->module : NULL);
    lw_jw_str(w, "address", addr);
    if (s && s->module) {
        snprintf(addr, sizeof addr, "0x%lx", (unsigned long)s->offset);
        lw_jw_str(w, "offset", addr);
    } else {
        lw_jw_null(w, "offset");
    }
    if (inlined) lw_jw_bool(w, "inlined", 1);
    lw_jw_end(w);
}

/* The frame at ip, preceded by the functions inlined there, innermost first. */
static void emit_native_frame(lw_jw *w, lw_symtab *syms, uintptr_t ip) {
    const lw_symbol *s = syms ? lw_symtab_lookup(syms, ip) : NULL;
    for (int k = 0; s && k < s->ninlined; k++)
        emit_symbol(w, &s->inlined[k], ip, 1);
    emit_symbol(w, s, ip, 0);
}

static void emit_python_frame(lw_jw *w, const lw_pystack_frame *f) {
    lw_jw_object(w, NULL);
    lw_jw_str(w, "kind", "python");
    lw_jw_str(w, "function", f->function);
    lw_jw_str(w, "file", f->file);
    if (f->line > 0)
        lw_jw_int(w, "line", f->line);
    else
        lw_jw_null(w, "line");
    lw_jw_null(w, "module");
    lw_jw_null(w, "address");
    lw_jw_null(w, "offset");
    lw_jw_end(w);
}

/* Emits the Python frames of the next native evaluation call: from *next up
 * to and including the first one that entered it. */
static void emit_python_group(lw_jw *w, const lw_pystack *py, int *next) {
    while (*next < py->n) {
        const lw_pystack_frame *f = &py->f[(*next)++];
        emit_python_frame(w, f);
        if (f->entry) break;
    }
}

static int is_eval_frame(const lw_symbol *sym) {
    return sym && sym->function && strcmp(sym->function, "_PyEval_EvalFrameDefault") == 0;
}

/* Innermost first. Python frames stand where the interpreter's evaluation
 * frames stand; the interpreter's other frames (calls, argument handling)
 * are hidden behind them. */
static void emit_frames(lw_jw *w, lw_symtab *syms, const lw_site *s) {
    const uintptr_t *ips = lw_site_native(s);
    const lw_pystack *py = lw_pystack_of(s);
    const char *interp = NULL;
    if (py && syms)
        for (int i = 0; i < s->nnative && !interp; i++) {
            const lw_symbol *sym = lw_symtab_lookup(syms, ips[i]);
            if (is_eval_frame(sym)) interp = sym->module;
        }
    lw_jw_array(w, "frames");
    int next = 0;
    for (int i = 0; i < s->nnative; i++) {
        const lw_symbol *sym = interp ? lw_symtab_lookup(syms, ips[i]) : NULL;
        if (interp && is_eval_frame(sym)) {
            emit_python_group(w, py, &next);
            continue;
        }
        if (interp && sym && sym->module && strcmp(sym->module, interp) == 0) continue;
        emit_native_frame(w, syms, ips[i]);
    }
    /* Python frames beyond the native stack kept (or all of them, when no
     * evaluation frame was found): outermost, at the end. */
    while (py && next < py->n)
        emit_python_frame(w, &py->f[next++]);
    lw_jw_end(w);
}

typedef struct {
    lw_site *site;
    int64_t live_bytes;
    uint64_t alloc_bytes;
    int leak;
    double slope;
} ranked_site;

/* Leaking sites first, fastest growth first; then by what they hold. */
static int by_relevance(const void *a, const void *b) {
    const ranked_site *x = a, *y = b;
    if (x->leak != y->leak) return x->leak ? -1 : 1;
    if (x->leak && x->slope != y->slope) return x->slope > y->slope ? -1 : 1;
    if (x->live_bytes != y->live_bytes) return x->live_bytes > y->live_bytes ? -1 : 1;
    if (x->alloc_bytes != y->alloc_bytes) return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
    return x->site->id < y->site->id ? -1 : x->site->id > y->site->id;
}

/* What the sampler concluded about each leaking site, copied under its lock:
 * its thread updates the tracks while a report is written from another. */
typedef struct {
    const lw_site *site;
    lw_growth growth;
    int nbins;
    lw_bin bins[LW_SITE_BINS + 1];
} site_view;

typedef struct {
    site_view *v;
    size_t n, cap;
} site_views;

static void copy_view(lw_site *s, const lw_site_track *t, void *arg) {
    site_views *vs = arg;
    if (!t->evaluated || t->growth.verdict != LW_VERDICT_LEAK) return;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 16;
        site_view *v = realloc(vs->v, cap * sizeof *v);
        if (!v) return;
        vs->v = v, vs->cap = cap;
    }
    site_view *v = &vs->v[vs->n++];
    v->site = s;
    v->growth = t->growth;
    v->nbins = lw_series_get(&t->series, v->bins, LW_SITE_BINS + 1);
}

static int by_site(const void *a, const void *b) {
    const lw_site *x = ((const site_view *)a)->site, *y = ((const site_view *)b)->site;
    return x < y ? -1 : x > y;
}

/* Only a process whose verdict is a leak has leaking sites. */
static void views_load(site_views *vs, int global_leak) {
    memset(vs, 0, sizeof *vs);
    if (!global_leak) return;
    lw_growth_each_site(copy_view, vs);
    if (vs->n) qsort(vs->v, vs->n, sizeof *vs->v, by_site);
}

static const site_view *view_of(const site_views *vs, const lw_site *s) {
    site_view key = {.site = s};
    return vs->n ? bsearch(&key, vs->v, vs->n, sizeof *vs->v, by_site) : NULL;
}

static void views_free(site_views *vs) {
    free(vs->v);
}

static void emit_site_series(lw_jw *w, const site_view *v) {
    lw_jw_object(w, "series");
    lw_jw_array(w, "x");
    for (int i = 0; i < v->nbins; i++)
        lw_jw_double(w, NULL, v->bins[i].x);
    lw_jw_end(w);
    lw_jw_array(w, "floor");
    for (int i = 0; i < v->nbins; i++)
        lw_jw_double(w, NULL, v->bins[i].floor);
    lw_jw_end(w);
    lw_jw_end(w);
}

static void emit_site(lw_jw *w, lw_symtab *syms, const lw_site *s, const site_view *v, int rank) {
    lw_jw_object(w, NULL);
    lw_jw_uint(w, "id", s->id);
    lw_jw_int(w, "live_bytes", atomic_load(&s->live_bytes));
    /* Derived: keeping a live count would cost the hot path an atomic. */
    lw_jw_int(w, "live_count",
              (int64_t)(atomic_load(&s->alloc_count) - atomic_load(&s->free_count)));
    lw_jw_uint(w, "alloc_count", atomic_load(&s->alloc_count));
    lw_jw_uint(w, "alloc_bytes", atomic_load(&s->alloc_bytes));
    lw_jw_uint(w, "free_count", atomic_load(&s->free_count));
    lw_jw_uint(w, "failed_alloc_count", atomic_load(&s->failed_count));
    lw_jw_bool(w, "leak", v != NULL);
    lw_jw_double(w, "bytes_per_step", v ? v->growth.slope : 0.0);
    if (v) {
        lw_jw_int(w, "rank", rank);
        lw_jw_array(w, "slope_ci");
        lw_jw_double(w, NULL, v->growth.lo);
        lw_jw_double(w, NULL, v->growth.hi);
        lw_jw_end(w);
        lw_jw_double(w, "p_value", v->growth.p_value);
    }
    lw_jw_bool(w, "pooled", s == lw_site_overflow());
    if (v) emit_site_series(w, v);
    emit_frames(w, syms, s);
    lw_jw_end(w);
}

static void emit_sites(lw_jw *w, lw_symtab *syms, int global_leak) {
    site_views vs;
    views_load(&vs, global_leak);
    size_t n = 0, cap = lw_sites_count() + 1;
    ranked_site *all = calloc(cap, sizeof *all);
    if (all) {
        for (lw_site *s = lw_sites_first(); s && n < cap - 1; s = s->next) {
            const site_view *v = view_of(&vs, s);
            all[n++] = (ranked_site){s, atomic_load(&s->live_bytes), atomic_load(&s->alloc_bytes),
                                     v != NULL, v ? v->growth.slope : 0};
        }
        lw_site *o = lw_site_overflow();
        if (atomic_load(&o->alloc_count) || atomic_load(&o->failed_count))
            all[n++] =
                (ranked_site){o, atomic_load(&o->live_bytes), atomic_load(&o->alloc_bytes), 0, 0};
        qsort(all, n, sizeof *all, by_relevance);
    }
    size_t limit = (size_t)lw_opt_int(LW_OPT_REPORT_SITES);
    lw_jw_uint(w, "sites_total", lw_sites_count());
    lw_jw_uint(w, "sites_reported", n < limit ? n : limit);
    lw_jw_array(w, "sites");
    for (size_t i = 0; i < n && i < limit; i++)
        emit_site(w, syms, all[i].site, view_of(&vs, all[i].site), all[i].leak ? (int)i + 1 : 0);
    lw_jw_end(w);
    free(all);
    views_free(&vs);
}

static void emit_failures(lw_jw *w) {
    lw_failure f[LW_FAILURES_KEPT];
    int n = lw_failures_get(f, LW_FAILURES_KEPT);
    lw_jw_array(w, "failed_allocations");
    for (int i = 0; i < n; i++) {
        lw_jw_object(w, NULL);
        lw_jw_uint(w, "size", f[i].size);
        lw_jw_str(w, "kind", lw_kind_name((lw_kind)f[i].kind));
        lw_jw_int(w, "device", f[i].device);
        lw_jw_int(w, "result", f[i].result);
        lw_jw_uint(w, "step", f[i].step);
        lw_jw_double(w, "time_s", (double)f[i].time_ns / 1e9);
        lw_jw_uint(w, "site", f[i].site->id);
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

static void emit_growth(lw_jw *w, const lw_growth_state *g) {
    const lw_growth *l = &g->last;
    int leak = g->verdict == LW_VERDICT_LEAK;
    lw_jw_object(w, "growth");
    lw_jw_double(w, "bytes_per_step", l->slope);
    lw_jw_double(w, "bytes_per_second", l->bytes_per_second);
    lw_jw_array(w, "slope_ci");
    lw_jw_double(w, NULL, l->lo);
    lw_jw_double(w, NULL, l->hi);
    lw_jw_end(w);
    lw_jw_double(w, "p_value", l->p_value);
    lw_jw_uint(w, "steps", g->steps);
    lw_jw_str(w, "step_source", g->step_source);
    if (leak)
        lw_jw_double(w, "onset_step", l->onset_x);
    else
        lw_jw_null(w, "onset_step");
    if (g->first_leak_step >= 0)
        lw_jw_int(w, "first_leak_step", g->first_leak_step);
    else
        lw_jw_null(w, "first_leak_step");
    double eta_s = NAN, eta_steps = NAN;
    if (leak && g->device_free >= 0) {
        if (l->bytes_per_second > 0) eta_s = (double)g->device_free / l->bytes_per_second;
        if (l->slope > 0) eta_steps = (double)g->device_free / l->slope;
    }
    lw_jw_double(w, "oom_eta_seconds", eta_s);
    lw_jw_double(w, "oom_eta_steps", eta_steps);
    if (g->device_free >= 0)
        lw_jw_int(w, "device_free_bytes", g->device_free);
    else
        lw_jw_null(w, "device_free_bytes");
    if (g->device_total >= 0)
        lw_jw_int(w, "device_total_bytes", g->device_total);
    else
        lw_jw_null(w, "device_total_bytes");
    if (!strcmp(g->step_source, "time")) lw_jw_double(w, "interval_seconds", g->interval_s);
    lw_jw_uint(w, "evaluations", g->evaluations);
    lw_jw_uint(w, "leak_verdicts_withdrawn", g->withdrawn);
    lw_jw_int(w, "window_bins", l->window);
    lw_jw_uint(w, "steps_per_bin", g->bin_width);
    lw_jw_str(w, "reason", l->reason ? l->reason : "not evaluated yet");
    lw_jw_end(w);
}

/* The floor and peak per step, downsampled, as columns (compact, easy to
 * plot). */
static void emit_series(lw_jw *w, const lw_bin *b, int n) {
    lw_jw_object(w, "series");
    lw_jw_array(w, "x");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].x);
    lw_jw_end(w);
    lw_jw_array(w, "time_s");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].t);
    lw_jw_end(w);
    lw_jw_array(w, "floor");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].floor);
    lw_jw_end(w);
    lw_jw_array(w, "peak");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].peak);
    lw_jw_end(w);
    lw_jw_end(w);
}

static void emit_command(lw_jw *w) {
    char buf[4096];
    size_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)r;
        close(fd);
    }
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0') buf[i] = ' ';
    lw_jw_strn(w, "command", n ? buf : NULL, n);
}

int lw_report_emit(FILE *f, const char *reason) {
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_symtab *syms = lw_symtab_new();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t now = lw_now_ns();
    double uptime = (double)(now - lw_start_time_ns()) / 1e9;

    lw_jw_object(&w, NULL);
    lw_jw_str(&w, "tool", "leakwatch");
    lw_jw_str(&w, "version", LEAKWATCH_VERSION);
    lw_jw_int(&w, "pid", getpid());
    emit_command(&w);
    lw_jw_str(&w, "host", host);
    lw_jw_str(&w, "reason", reason);
    lw_jw_int(&w, "written_at", (int64_t)time(NULL));
    lw_jw_double(&w, "duration_s", uptime);
    static lw_bin bins[300];
    int nbins = 0;
    lw_growth_state g;
    lw_growth_get(&g, bins, 300, &nbins);
    lw_jw_str(&w, "verdict", lw_verdict_name(g.verdict));
    emit_totals(&w);
    emit_growth(&w, &g);
    emit_series(&w, bins, nbins);
    emit_sites(&w, syms, g.verdict == LW_VERDICT_LEAK);
    emit_failures(&w);
    lw_jw_object(&w, "tracker");
    lw_jw_uint(&w, "live_records", lw_live_records());
    lw_jw_uint(&w, "overhead_bytes", lw_live_overhead_bytes());
    lw_jw_uint(&w, "untracked_allocations", lw_record_untracked());
    lw_jw_uint(&w, "pooled_allocations", lw_sites_pooled());
    lw_jw_uint(&w, "reused_without_free", lw_record_reused_unseen());
    lw_jw_uint(&w, "truncated_stacks", lw_record_truncated_sites());
    lw_jw_end(&w);
    lw_jw_end(&w);
    fputc('\n', f);
    lw_symtab_free(syms);
    return lw_jw_failed(&w) ? -1 : 0;
}

/* Writes to a fresh private file beside path, then renames it over path, so a
 * reader never sees half a report and a failure leaves the old one intact. */
static int write_file(const char *path, const char *reason, int *err);

/* A job may run under a file-size limit (ulimit -f): writing past it raises
 * SIGXFSZ, whose default action would end the job. While the report is
 * written the signal is blocked, and one it raised is taken back; the write
 * then fails with EFBIG like any other, and the job goes on. */
static int write_atomically(const char *path, const char *reason, int *err) {
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGXFSZ);
    int rc = write_file(path, reason, err);
    sigpending(&pending);
    if (!was_pending && sigismember(&pending, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&xfsz, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static int write_file(const char *path, const char *reason, int *err) {
    char tmp[PATH_MAX + 64];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.%ld.tmp", dirlen, path, slash ? slash + 1 : path,
                 (long)getpid()) >= (int)sizeof tmp) {
        *err = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp); /* a leftover of ours from a crash; O_EXCL below refuses anything else */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        *err = errno;
        close(fd);
        unlink(tmp);
        return -1;
    }
    int rc = lw_report_emit(f, reason);
    if (fflush(f) != 0 || rc != 0) rc = -1, *err = errno ? errno : EIO;
    if (rc == 0 && fsync(fd) != 0 && errno != EINVAL) rc = -1, *err = errno;
    if (fclose(f) != 0 && rc == 0) rc = -1, *err = errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -1, *err = errno;
    if (rc != 0) unlink(tmp);
    return rc;
}

/* Set in a forked child that uses CUDA itself (lifecycle.c). */
static int forked_child;

void lw_report_forked_child(void) {
    forked_child = 1;
}

/* A template without %p names the same file in a parent and in a forked
 * child that uses CUDA: the child's gets its pid, before ".json". */
static void child_path(const char *tpl, char *path, size_t n) {
    if (!forked_child || strstr(tpl, "%p")) return;
    size_t len = strlen(path);
    char pid[32];
    snprintf(pid, sizeof pid, ".%ld", (long)getpid());
    size_t plen = strlen(pid);
    if (len + plen + 1 > n) return;
    size_t at = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
    memmove(path + at + plen, path + at, len - at + 1);
    memcpy(path + at, pid, plen);
}

int lw_report_write(const char *reason, int fallback, char *written, size_t writtenlen) {
    char path[PATH_MAX];
    const char *tpl = lw_opt_str(LW_OPT_REPORT);
    int err = 0;
    if (lw_path_expand(tpl, path, sizeof path) != 0) {
        lw_log("the report path from LEAKWATCH_REPORT is too long (over %d bytes); set a shorter "
               "one",
               PATH_MAX);
        path[0] = '\0';
    } else if (child_path(tpl, path, sizeof path), write_atomically(path, reason, &err) == 0) {
        if (written) snprintf(written, writtenlen, "%s", path);
        return 0;
    } else {
        /* Periodic rewrites fail the same way every time: say it once. */
        static int last_err;
        if (fallback || err != last_err)
            lw_log("cannot write the report to %s: %s; set LEAKWATCH_REPORT to a file in a "
                   "writable folder (an earlier report at that path is left unchanged)",
                   path, strerror(err));
        last_err = err;
    }
    if (!fallback) return -1;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    char alt[PATH_MAX];
    snprintf(alt, sizeof alt, "%s/leakwatch-%ld.json", dir, (long)getpid());
    if (write_atomically(alt, reason, &err) == 0) {
        lw_log("wrote the report to %s instead", alt);
        if (written) snprintf(written, writtenlen, "%s", alt);
        return 0;
    }
    lw_log("cannot write the report to %s either: %s; no report was written", alt, strerror(err));
    return -1;
}

void lw_report_site_label(const lw_site *site, char *out, size_t n) {
    snprintf(out, n, "site %u", site->id);
    const lw_pystack *py = lw_pystack_of(site);
    for (int i = 0; py && i < py->n; i++) {
        const lw_pystack_frame *f = &py->f[i];
        if (!f->file) continue;
        const char *base = strrchr(f->file, '/');
        snprintf(out, n, "%s:%d in %s", base ? base + 1 : f->file, f->line,
                 f->function ? f->function : "?");
        return;
    }
    lw_symtab *syms = lw_symtab_new_names(); /* a label needs no source lines */
    for (int i = 0; syms && i < site->nnative; i++) {
        const lw_symbol *s = lw_symtab_lookup(syms, lw_site_native(site)[i]);
        if (s && s->function) {
            const char *mod = s->module ? strrchr(s->module, '/') : NULL;
            snprintf(out, n, "%s (%s+0x%lx)", s->function, mod ? mod + 1 : "?",
                     (unsigned long)s->offset);
            break;
        }
    }
    lw_symtab_free(syms);
}

void lw_report_summary(const char *path) {
    if (lw_log_quiet) return;
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    char live[32], peak[32];
    lw_format_bytes((double)c.live_bytes, live, sizeof live);
    lw_format_bytes((double)c.peak_live_bytes, peak, sizeof peak);
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    lw_log("%lld allocation%s live (%s, peak %s) in %zu call site%s; %llu allocated, %llu freed, "
           "%llu failed; verdict: %s",
           (long long)c.live_count, c.live_count == 1 ? "" : "s", live, peak, lw_sites_count(),
           lw_sites_count() == 1 ? "" : "s", (unsigned long long)c.alloc_count,
           (unsigned long long)c.free_count, (unsigned long long)c.failed_count,
           lw_verdict_name(g.verdict));
    site_views vs;
    views_load(&vs, g.verdict == LW_VERDICT_LEAK);
    const site_view *fastest = NULL;
    for (size_t i = 0; i < vs.n; i++)
        if (!fastest || vs.v[i].growth.slope > fastest->growth.slope) fastest = &vs.v[i];
    const lw_site *top = fastest ? fastest->site : NULL;
    int leaking = fastest != NULL;
    for (lw_site *s = lw_sites_first(); s && !leaking; s = s->next)
        if (!top || atomic_load(&s->live_bytes) > atomic_load(&top->live_bytes)) top = s;
    char label[400], b[32], ci[80];
    if (g.verdict == LW_VERDICT_LEAK) {
        char lo[32], hi[32];
        lw_format_bytes(g.last.slope, b, sizeof b);
        lw_format_bytes(g.last.lo, lo, sizeof lo);
        lw_format_bytes(g.last.hi, hi, sizeof hi);
        snprintf(ci, sizeof ci, "%s to %s", lo, hi);
        lw_log("the floor of live memory grows by %s per %s (95%% CI %s) since %s %.0f", b,
               strcmp(g.step_source, "time") ? "step" : "interval", ci,
               strcmp(g.step_source, "time") ? "step" : "interval", g.last.onset_x);
    }
    if (top && leaking) {
        lw_report_site_label(top, label, sizeof label);
        lw_format_bytes(fastest->growth.slope, b, sizeof b);
        lw_log("leaking site: %s, +%s per step", label, b);
    } else if (top && atomic_load(&top->live_bytes) > 0) {
        lw_report_site_label(top, label, sizeof label);
        lw_format_bytes((double)atomic_load(&top->live_bytes), b, sizeof b);
        lw_log("largest site: %s live from %s", b, label);
    }
    views_free(&vs);
    if (path) lw_log("report: %s", path);
}
