/* The Prometheus textfile: the same counters the report shows, read through
 * the same getters (totals.h, growth.h), so the two never disagree. */
#include "prometheus.h"

#include "growth.h"
#include "report.h"
#include "totals.h"
#include "warning.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef enum { M_LIVE, M_PEAK, M_ALLOC, M_FREE, M_FAILED, M_COUNT } metric;
static const struct {
    const char *name, *type, *help;
} metrics[M_COUNT] = {
    {"leakwatch_live_bytes", "gauge", "CUDA memory allocated and not yet freed, in bytes."},
    {"leakwatch_peak_live_bytes", "gauge", "Highest live bytes seen since the start."},
    {"leakwatch_alloc_total", "counter", "Successful CUDA allocations."},
    {"leakwatch_free_total", "counter", "CUDA frees of tracked allocations."},
    {"leakwatch_failed_alloc_total", "counter",
     "CUDA allocations that failed (out of memory, ...)."},
};

static double value_of(metric m, const lw_counts *c) {
    switch (m) {
    case M_LIVE:
        return (double)c->live_bytes;
    case M_PEAK:
        return (double)c->peak_live_bytes;
    case M_ALLOC:
        return (double)c->alloc_count;
    case M_FREE:
        return (double)c->free_count;
    default:
        return (double)c->failed_count;
    }
}

static void header(FILE *f, const char *name, const char *type, const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int emit(FILE *f) {
    uint64_t seen = lw_totals_devices_seen();
    for (int m = 0; m < M_COUNT; m++) {
        header(f, metrics[m].name, metrics[m].type, metrics[m].help);
        for (int d = -1; d < LW_MAX_DEVICES; d++) {
            if (!(seen & (1ull << (d + 1)))) continue;
            for (int k = 0; k < LW_KIND_COUNT; k++) {
                lw_counts c = lw_totals_get(d, (lw_kind)k);
                fprintf(f, "%s{device=\"%d\",kind=\"%s\"} %.0f\n", metrics[m].name, d,
                        lw_kind_name((lw_kind)k), value_of((metric)m, &c));
            }
        }
    }
    struct lw_growth_view g;
    if (lw_growth_snapshot(&g) == 0) {
        if (isfinite(g.bytes_per_step)) {
            header(f, "leakwatch_floor_growth_bytes_per_step", "gauge",
                   "Growth of the floor of live memory per step, fitted by the detector.");
            fprintf(f, "leakwatch_floor_growth_bytes_per_step %.17g\n", g.bytes_per_step);
        }
        header(f, "leakwatch_leak", "gauge", "1 when the detector's verdict is leak, else 0.");
        fprintf(f, "leakwatch_leak %d\n", g.verdict == 1);
        char place[512];
        lw_warning_place(place, sizeof place);
        if (g.verdict == 1 && place[0]) {
            header(f, "leakwatch_leak_place_info", "gauge",
                   "The place to look of the leak (the live warning's), as the label where.");
            fputs("leakwatch_leak_place_info{where=\"", f);
            for (const char *p = place; *p; p++) {
                if (*p == '\\' || *p == '"')
                    fputc('\\', f), fputc(*p, f);
                else if (*p == '\n')
                    fputs("\\n", f);
                else
                    fputc(*p, f);
            }
            fputs("\"} 1\n", f);
        }
        if (isfinite(g.oom_eta_seconds)) {
            header(f, "leakwatch_oom_eta_seconds", "gauge",
                   "Projected seconds until device memory runs out at the fitted growth.");
            fprintf(f, "leakwatch_oom_eta_seconds %.17g\n", g.oom_eta_seconds);
        }
    }
    return ferror(f) ? -1 : 0;
}

int lw_prometheus_write(const char *tpl) {
    char path[PATH_MAX], tmp[PATH_MAX + 64];
    if (lw_path_expand(tpl, path, sizeof path) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    /* ".NAME.PID.tmp": node exporter reads only *.prom, so never this. */
    if (snprintf(tmp, sizeof tmp, "%.*s.%s.%ld.tmp", dirlen, path, slash ? slash + 1 : path,
                 (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    int rc = emit(f);
    if (fflush(f) != 0) rc = -1;
    int e = errno;
    if (fclose(f) != 0) rc = -1, e = errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -1, e = errno;
    if (rc != 0) {
        unlink(tmp);
        errno = e ? e : EIO;
    }
    return rc;
}
