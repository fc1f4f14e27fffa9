/* SPDX-License-Identifier: Apache-2.0 */
/* 'leakwatch report --format html': one self-contained page (inline CSS and
 * SVG, no script, no network: a Content-Security-Policy forbids any fetch), so
 * it can be attached to a ticket or opened from a CI artifact anywhere. Its
 * header is the answer (verdict, the place to look, rate, onset, out-of-memory
 * time, device memory); the plot below shows the floor on its own scale. The
 * CSS and fixed markup are files in tools/render/templates/, built in. */
#include "cli.h"
#include "merge.h"
#include "render.h"
#include "lw_templates.h"
#include "verdict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void esc(FILE *o, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            fputs("&amp;", o);
            break;
        case '<':
            fputs("&lt;", o);
            break;
        case '>':
            fputs("&gt;", o);
            break;
        case '"':
            fputs("&quot;", o);
            break;
        case '\'':
            fputs("&#39;", o);
            break;
        default:
            fputc(c < 0x20 || c == 0x7f ? '?' : (int)c, o);
        }
    }
}

typedef struct {
    double x0, x1, y0, y1;  /* data ranges */
    double left, top, w, h; /* plot area in pixels */
} frame_t;

static double px(const frame_t *f, double x) {
    return f->left + (x - f->x0) / (f->x1 - f->x0) * f->w;
}
static double py(const frame_t *f, double y) {
    return f->top + f->h - (y - f->y0) / (f->y1 - f->y0) * f->h;
}

/* 1, 2 or 5 times a power of ten, about range/n. */
static double nice_step(double range, int n) {
    double raw = range / n;
    if (!(raw > 0) || !isfinite(raw)) return 1;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Byte ticks at round values of one unit: 192 MiB, 192.5 MiB, ... The unit
 * is that of the largest value, the step 1, 2 or 5 times a power of ten in
 * that unit. */
typedef struct {
    double unit, step; /* bytes */
    const char *name;
    int decimals;
} byte_ticks;

static byte_ticks ticks_for(double lo, double hi, int n) {
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    byte_ticks t = {1, 1, "B", 0};
    double a = fmax(fabs(lo), fabs(hi));
    int u = 0;
    while (a >= 1024 && u < 5)
        a /= 1024, t.unit *= 1024, u++;
    t.name = names[u];
    double s = nice_step((hi - lo) / t.unit, n);
    if (u == 0 && s < 1) s = 1;
    t.step = s * t.unit;
    t.decimals = s >= 1 ? 0 : (int)ceil(-log10(s) - 1e-9);
    if (t.decimals > 6) t.decimals = 6;
    return t;
}

static void polyline(FILE *o, const frame_t *f, const double *x, const double *y, size_t n,
                     const char *id, const char *style) {
    fprintf(o, "<polyline id=\"%s\" fill=\"none\" %s points=\"", id, style);
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]) && isfinite(px(f, x[i])) && isfinite(py(f, y[i])))
            fprintf(o, "%.1f,%.1f ", px(f, x[i]), py(f, y[i]));
    fputs("\"/>\n", o);
}

/* The time since start at step x, read off the series (NAN: unknown). */
static double time_at(const lw_model *m, double x) {
    if (!m->st) return NAN;
    for (size_t i = 1; i < m->nseries; i++) {
        double xa = m->sx[i - 1], xb = m->sx[i], ta = m->st[i - 1], tb = m->st[i];
        if (!isfinite(xa) || !isfinite(xb) || !isfinite(ta) || !isfinite(tb)) continue;
        if (x >= xa && x <= xb) return xb > xa ? ta + (tb - ta) * (x - xa) / (xb - xa) : ta;
    }
    return NAN;
}

static void y_axis(FILE *o, const frame_t *f) {
    byte_ticks t = ticks_for(f->y0, f->y1, 5);
    /* Counted loops: with huge values y += step may not move y at all. */
    for (int i = 0; i < 40; i++) {
        double y = ceil(f->y0 / t.step) * t.step + i * t.step;
        if (y > f->y1) break;
        fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e8ef\"/>",
                f->left, f->left + f->w, py(f, y), py(f, y));
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f %s</text>\n", f->left - 6,
                py(f, y) + 4, t.decimals, y / t.unit, t.name);
    }
}

/* Steps below the axis, and the time since start under them when known. */
static void x_axis(FILE *o, const frame_t *f, const lw_model *m, int steps) {
    double xs = nice_step(f->x1 - f->x0, 8);
    if (xs < 1) xs = 1;
    int any_time = 0;
    for (int i = 0; i < 40; i++) {
        double x = ceil(f->x0 / xs) * xs + i * xs;
        if (x > f->x1) break;
        char b[48];
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(f, x),
                f->top + f->h + 16, lw_fmt_count(x, b, sizeof b));
        double t = steps ? time_at(m, x) : NAN;
        if (isfinite(t)) {
            fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", px(f, x),
                    f->top + f->h + 30, lw_fmt_duration(t, b, sizeof b));
            any_time = 1;
        }
    }
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", f->left + f->w / 2,
            f->top + f->h + (any_time ? 46 : 32),
            steps ? (any_time ? "step (time since start below)" : "step") : "interval");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What the main plot draws: one series on a scale that fits it, with its
 * trend. For a leak whose site has its own series, the leaking site's live
 * bytes (hundreds of KiB of growth on a floor of 192 MiB would be a flat
 * line at the top); otherwise the floor, from the onset or, when growth began
 * at the start, from the second point (the first bin holds the start-up: the
 * weights loaded in step 1 would flatten the rest). */
typedef struct {
    const double *x, *y;
    size_t n;
    double from;        /* first x counted in the y range */
    double slope, icpt; /* the trend (NAN: none) */
    const lw_m_site *site;
    char where[512];
} plot_series;

static double site_intercept(const lw_m_site *s, double slope) {
    double *r = malloc(s->nseries * sizeof *r);
    size_t k = 0;
    if (!r) return NAN;
    for (size_t i = 0; i < s->nseries; i++)
        if (isfinite(s->series_x[i]) && isfinite(s->series_floor[i]))
            r[k++] = s->series_floor[i] - slope * s->series_x[i];
    double v = NAN;
    if (k) {
        qsort(r, k, sizeof *r, cmp_double);
        v = k % 2 ? r[k / 2] : (r[k / 2 - 1] + r[k / 2]) / 2;
    }
    free(r);
    return v;
}

static void choose_series(const lw_model *m, plot_series *ps) {
    const lw_m_growth *g = &m->growth;
    memset(ps, 0, sizeof *ps);
    ps->slope = ps->icpt = NAN;
    const lw_m_site *top = m->verdict == LW_VERDICT_LEAK ? lw_model_top_site(m) : NULL;
    size_t good = 0;
    for (size_t i = 0; top && top->leak == 1 && i < top->nseries; i++)
        good += isfinite(top->series_x[i]) && isfinite(top->series_floor[i]);
    if (good >= 3) {
        ps->site = top;
        ps->x = top->series_x, ps->y = top->series_floor, ps->n = top->nseries;
        ps->from = -INFINITY;
        ps->slope = isfinite(top->bytes_per_step) && top->bytes_per_step > 0 ? top->bytes_per_step
                                                                             : g->bytes_per_step;
        if (isfinite(ps->slope)) ps->icpt = site_intercept(top, ps->slope);
        lw_model_where(top, ps->where, sizeof ps->where);
        return;
    }
    ps->x = m->sx, ps->y = m->sfloor, ps->n = m->nseries;
    ps->from = m->verdict == LW_VERDICT_LEAK && isfinite(g->onset_step) ? g->onset_step : -INFINITY;
    /* The first two points with values: when the range would start at the
     * first, start at the second (the start-up), given enough points. */
    double first = NAN, second = NAN;
    size_t have = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (!isfinite(ps->x[i]) || !isfinite(ps->y[i])) continue;
        if (have == 0) first = ps->x[i];
        if (have == 1) second = ps->x[i];
        have++;
    }
    if (have >= 4 && !(ps->from > first)) ps->from = second;
    if (m->verdict == LW_VERDICT_LEAK) {
        ps->slope = g->bytes_per_step;
        ps->icpt = lw_model_trend_intercept(m);
    }
}

/* The main plot: the leak on a scale that fits it (choose_series), its
 * fitted trend and onset, the out-of-memory point (or how far away it is),
 * each point's values on hover; the legend above the data. */
static void plot(FILE *o, const lw_model *m, int idx) {
    const lw_m_growth *g = &m->growth;
    plot_series ps;
    choose_series(m, &ps);
    size_t n = ps.n, good = 0;
    const double *X = ps.x, *Y = ps.y;
    frame_t f = {INFINITY, -INFINITY, INFINITY, -INFINITY, 84, 44, 850, 280};
    double from = ps.from;
    int below = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(X[i]) || !isfinite(Y[i])) continue;
        f.x0 = fmin(f.x0, X[i]), f.x1 = fmax(f.x1, X[i]);
        if (X[i] < from) continue;
        good++;
        f.y0 = fmin(f.y0, Y[i]), f.y1 = fmax(f.y1, Y[i]);
    }
    if (!good) {
        fputs("<p class=\"note\">No time series in this report: it was written before the first "
              "sample, or by a leakwatch without the sampler. The totals below are at the time "
              "of writing.</p>\n",
              o);
        return;
    }
    int steps = !g->step_source || strcmp(g->step_source, "time") != 0;
    /* The projection counts from the run's last step (a site's series may
     * end before it). */
    double last_x = f.x1, slope = ps.slope, icpt = ps.icpt;
    for (size_t i = 0; i < m->nseries; i++)
        if (isfinite(m->sx[i])) last_x = fmax(last_x, m->sx[i]);
    int trend = m->verdict == LW_VERDICT_LEAK && isfinite(slope) && isfinite(icpt);
    double oom_x = NAN;
    int oom_beyond = 0;
    if (trend && isfinite(g->oom_eta_steps) && g->oom_eta_steps >= 0) {
        oom_x = last_x + g->oom_eta_steps;
        /* Stretch the axis to show the OOM point unless it is far away: the
         * data then still spans a quarter of the width or more. */
        double span = f.x1 - f.x0 > 0 ? f.x1 - f.x0 : 1;
        if (oom_x <= f.x1 + 3 * span)
            f.x1 = oom_x, f.y1 = fmax(f.y1, icpt + slope * oom_x);
        else
            oom_beyond = 1;
    }
    if (trend) {
        f.y1 = fmax(f.y1, icpt + slope * f.x1);
        f.y0 = fmin(f.y0, icpt + slope * fmax(f.x0, isfinite(from) ? from : f.x0));
    }
    if (!isfinite(f.x1 - f.x0) || !isfinite(f.y1 - f.y0) || !isfinite(f.y1 * 1.1) ||
        !isfinite(f.x1 * 4)) {
        fputs("<p class=\"note\">The series holds values too large to plot.</p>\n", o);
        return;
    }
    if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
    if (f.y1 <= f.y0) f.y1 = f.y0 + 1024, f.y0 -= 1024;
    double ypad = (f.y1 - f.y0) * 0.04;
    f.y1 += ypad;
    f.y0 -= ypad;
    for (size_t i = 0; i < n; i++)
        below |= isfinite(X[i]) && isfinite(Y[i]) && X[i] < from && Y[i] < f.y0;

    fprintf(o,
            "<svg id=\"plot-%d\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" "
            "viewBox=\"0 0 960 374\" width=\"960\" height=\"374\" role=\"img\" "
            "aria-label=\"%s per step\">\n",
            idx, ps.site ? "live bytes of the leaking site" : "floor of live memory");
    fprintf(o,
            "<defs><clipPath id=\"clip-%d\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
            "height=\"%.0f\"/></clipPath></defs>\n",
            idx, f.left, f.top, f.w, f.h);
    fprintf(o,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fbfcfe\" "
            "stroke=\"#d8dde6\"/>\n",
            f.left, f.top, f.w, f.h);
    y_axis(o, &f);
    x_axis(o, &f, m, steps);
    /* Device capacity, when in view (the floor's scale only). */
    double cap = g->device_total_bytes;
    if (!ps.site && isfinite(cap) && cap > f.y0 && cap < f.y1)
        fprintf(o,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" "
                "stroke-dasharray=\"2 3\"/><text x=\"%.1f\" y=\"%.1f\">device memory</text>\n",
                f.left, f.left + f.w, py(&f, cap), py(&f, cap), f.left + 4, py(&f, cap) - 4);
    fprintf(o, "<g clip-path=\"url(#clip-%d)\">\n", idx);
    polyline(o, &f, X, Y, n, ps.site ? "site-live" : "floor",
             "stroke=\"#1d4ed8\" stroke-width=\"2.2\"");
    if (trend) {
        double xa = fmax(f.x0, isfinite(from) ? from : f.x0), xb = f.x1;
        fprintf(o,
                "<line id=\"trend\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e65100\" stroke-width=\"1.6\" stroke-dasharray=\"7 4\"/>\n",
                px(&f, xa), py(&f, icpt + slope * xa), px(&f, xb), py(&f, icpt + slope * xb));
    }
    fputs("</g>\n", o);
    /* Where growth began (on the floor's scale: a site's own series starts
     * with the site). */
    if (!ps.site && m->verdict == LW_VERDICT_LEAK && isfinite(g->onset_step) &&
        g->onset_step >= f.x0 && g->onset_step <= f.x1) {
        char b[48];
        double x = px(&f, g->onset_step);
        fprintf(o,
                "<g id=\"onset\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#8a6d00\" stroke-dasharray=\"3 3\"/><text x=\"%.1f\" y=\"%.1f\" "
                "style=\"fill:#8a6d00\">growth began near %s %s</text></g>\n",
                x, x, f.top, f.top + f.h, x + 4, f.top + f.h - 6, steps ? "step" : "interval",
                lw_fmt_count(g->onset_step, b, sizeof b));
    }
    if (isfinite(oom_x) && !oom_beyond) {
        char d[48];
        double cx = px(&f, oom_x), cy = py(&f, icpt + slope * oom_x);
        fprintf(o,
                "<circle id=\"oom\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#c62828\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" style=\"fill:#c62828\">"
                "projected out of memory%s%s</text>\n",
                cx, cy, cx - 8, cy + 4, isfinite(g->oom_eta_seconds) ? " in " : "",
                isfinite(g->oom_eta_seconds) ? lw_fmt_duration(g->oom_eta_seconds, d, sizeof d)
                                             : "");
    } else if (oom_beyond) {
        char d[48], c[48];
        fprintf(
            o,
            "<text id=\"oom-far\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
            "style=\"fill:#c62828\">out of memory %s%s%s%s steps beyond the right edge at "
            "this rate &#8594;</text>\n",
            f.left + f.w - 6, f.top + f.h - 8, isfinite(g->oom_eta_seconds) ? "in " : "",
            isfinite(g->oom_eta_seconds) ? lw_fmt_duration(g->oom_eta_seconds, d, sizeof d) : "",
            isfinite(g->oom_eta_seconds) ? ", " : "", lw_fmt_count(g->oom_eta_steps, c, sizeof c));
    }
    /* Each point's values on hover. */
    fputs("<g id=\"points\">", o);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(X[i]) || !isfinite(Y[i])) continue;
        char a[48], b[48], c[48], t[48];
        fprintf(o, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%s %s: %s %s",
                px(&f, X[i]), py(&f, Y[i]), steps ? "step" : "interval",
                lw_fmt_count(X[i], a, sizeof a), ps.site ? "the site holds" : "floor",
                lw_fmt_bytes(Y[i], b, sizeof b));
        if (!ps.site && m->speak && isfinite(m->speak[i]))
            fprintf(o, ", peak %s", lw_fmt_bytes(m->speak[i], c, sizeof c));
        if (!ps.site && m->st && isfinite(m->st[i]))
            fprintf(o, ", %s since start", lw_fmt_duration(m->st[i], t, sizeof t));
        fputs("</title></circle>", o);
    }
    fputs("</g>\n", o);
    /* Legend, above the data. */
    fprintf(o,
            "<g id=\"legend\" transform=\"translate(%.0f,%.0f)\">"
            "<line x1=\"0\" x2=\"18\" y1=\"0\" y2=\"0\" stroke=\"#1d4ed8\" stroke-width=\"2.2\"/>"
            "<text x=\"22\" y=\"4\">",
            f.left, f.top - 26);
    if (ps.site) {
        fputs("live bytes of the leaking site, ", o);
        esc(o, ps.where);
    } else {
        fprintf(o, "floor (lowest live bytes in the %s)%s", steps ? "step" : "interval",
                below ? "; the start-up is below this scale" : "");
    }
    fputs("</text>", o);
    if (trend)
        fputs("<line x1=\"0\" x2=\"18\" y1=\"16\" y2=\"16\" stroke=\"#e65100\" "
              "stroke-dasharray=\"7 4\"/><text x=\"22\" y=\"20\">fitted trend</text>",
              o);
    fputs("</g>\n</svg>\n", o);
}

/* The peak of each step on its own, smaller axis: it can be far above the
 * floor (activations), which would flatten the floor on a shared one. */
static void peak_plot(FILE *o, const lw_model *m, int idx) {
    size_t n = m->nseries, good = 0;
    frame_t f = {INFINITY, -INFINITY, INFINITY, -INFINITY, 84, 10, 850, 90};
    for (size_t i = 0; m->speak && i < n; i++) {
        if (!isfinite(m->sx[i]) || !isfinite(m->speak[i])) continue;
        good++;
        f.x0 = fmin(f.x0, m->sx[i]), f.x1 = fmax(f.x1, m->sx[i]);
        f.y0 = fmin(f.y0, m->speak[i]), f.y1 = fmax(f.y1, m->speak[i]);
    }
    if (good < 2 || !isfinite(f.y1 - f.y0) || !isfinite(f.x1 - f.x0)) return;
    if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
    if (f.y1 <= f.y0) f.y1 = f.y0 + 1024, f.y0 -= 1024;
    double pad = (f.y1 - f.y0) * 0.08;
    f.y0 -= pad, f.y1 += pad;
    fprintf(o,
            "<details><summary>Peak of live memory per step (its own scale)</summary>"
            "<svg id=\"peak-%d\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 960 130\" "
            "width=\"960\" height=\"130\" role=\"img\" aria-label=\"peak per step\">\n",
            idx);
    fprintf(o,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fbfcfe\" "
            "stroke=\"#d8dde6\"/>\n",
            f.left, f.top, f.w, f.h);
    byte_ticks t = ticks_for(f.y0, f.y1, 3);
    for (int i = 0; i < 20; i++) {
        double y = ceil(f.y0 / t.step) * t.step + i * t.step;
        if (y > f.y1) break;
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*f %s</text>\n", f.left - 6,
                py(&f, y) + 4, t.decimals, y / t.unit, t.name);
    }
    polyline(o, &f, m->sx, m->speak, n, "peak", "stroke=\"#7f9cc9\" stroke-width=\"1.5\"");
    fputs("</svg></details>\n", o);
}

static void sparkline(FILE *o, const lw_m_site *s) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    size_t good = 0;
    for (size_t i = 0; i < s->nseries; i++)
        if (isfinite(s->series_x[i]) && isfinite(s->series_floor[i])) {
            good++;
            x0 = fmin(x0, s->series_x[i]), x1 = fmax(x1, s->series_x[i]);
            y0 = fmin(y0, s->series_floor[i]), y1 = fmax(y1, s->series_floor[i]);
        }
    if (good < 2) {
        fputs("<span class=\"note\">&#8212;</span>", o);
        return;
    }
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1, y0 -= 1;
    fputs("<svg class=\"spark\" xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"24\" "
          "viewBox=\"0 0 120 24\"><polyline fill=\"none\" stroke=\"#1a56a8\" stroke-width=\"1.5\" "
          "points=\"",
          o);
    for (size_t i = 0; i < s->nseries; i++)
        if (isfinite(s->series_x[i]) && isfinite(s->series_floor[i]))
            fprintf(o, "%.1f,%.1f ", 1 + (s->series_x[i] - x0) / (x1 - x0) * 118,
                    22 - (s->series_floor[i] - y0) / (y1 - y0) * 20);
    fputs("\"/></svg>", o);
}

static void html_stack_line(const char *label, int is_python, size_t folded, int marked,
                            void *ctx) {
    FILE *o = ctx;
    fprintf(o, "<tr%s><td class=\"mono%s\">",
            marked == LW_STACK_HERE  ? " class=\"here\""
            : marked == LW_STACK_VIA ? " class=\"via\""
                                     : "",
            is_python ? " py"
            : folded  ? " fold"
                      : "");
    esc(o, label);
    fprintf(o, "</td><td>%s</td></tr>\n",
            marked == LW_STACK_HERE  ? "the place to look"
            : marked == LW_STACK_VIA ? "via: the shared wrapper"
            : is_python              ? "python"
            : folded                 ? ""
                                     : "native");
}

static void cell_bytes(FILE *o, double v) {
    char b[48];
    fprintf(o, "<td class=\"n\">%s</td>", lw_fmt_bytes(v, b, sizeof b));
}
static void cell_count(FILE *o, double v) {
    char b[48];
    fprintf(o, "<td class=\"n\">%s</td>", lw_fmt_count(v, b, sizeof b));
}

static void sites(FILE *o, const lw_model *m, const lw_render_opts *ro) {
    if (!m->nsites) {
        fputs("<p class=\"note\">No call sites in this report.</p>\n", o);
        return;
    }
    size_t *order = malloc(m->nsites * sizeof *order);
    if (!order) return;
    lw_model_rank_sites(m, order);
    size_t n = m->nsites < ro->top_sites ? m->nsites : ro->top_sites;
    fprintf(o, "<h3>Top call sites (%zu of %zu, most worrying first)</h3>\n", n, m->nsites);
    fputs("<table class=\"sites\"><tr><th>#</th><th>place to look</th><th class=\"n\">live</th>"
          "<th class=\"n\">count</th><th class=\"n\">growth</th><th class=\"n\">allocs</th>"
          "<th class=\"n\">frees</th><th>floor</th><th>site</th></tr>\n",
          o);
    for (size_t k = 0; k < n; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        char b[64], where[512];
        lw_model_where(s, where, sizeof where);
        fprintf(o, "<tr><td>%zu</td><td class=\"mono\">", k + 1);
        esc(o, where);
        fprintf(o, "%s", s->leak == 1 ? " <span class=\"badge leak\">leak</span>" : "");
        if (s->owner_text) {
            /* What keeps it alive (PyTorch's sites): the owner and the fix. */
            fputs("<br><span class=\"owner\">", o);
            esc(o, s->owner_text);
            fputs("</span>", o);
        }
        fputs("</td>", o);
        cell_bytes(o, s->live_bytes);
        cell_count(o, s->live_count);
        fprintf(o, "<td class=\"n\">%s</td>",
                isfinite(s->bytes_per_step) ? lw_fmt_rate(s->bytes_per_step, "step", b, sizeof b)
                                            : "?");
        cell_count(o, s->alloc_count);
        cell_count(o, s->free_count);
        fputs("<td>", o);
        sparkline(o, s);
        fprintf(o, "</td><td>%.0f</td></tr>\n", isfinite(s->id) ? s->id : -1);
    }
    fputs("</table>\n", o);
    for (size_t k = 0; k < n; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        if (lw_site_is_quiet(s) || !s->nframes) continue; /* nothing live, no growth */
        char b[48], where[512];
        lw_model_where(s, where, sizeof where);
        fprintf(o, "<details%s><summary>#%zu ", k < 3 ? " open" : "", k + 1);
        esc(o, where);
        fprintf(o, ": %s live (site %.0f), stack outermost first</summary>\n",
                lw_fmt_bytes(s->live_bytes, b, sizeof b), isfinite(s->id) ? s->id : -1);
        fputs("<table class=\"stack\">\n", o);
        lw_stack_lines(s, ro, html_stack_line, o);
        fputs("</table></details>\n", o);
    }
    free(order);
}

static void counts_row(FILE *o, const char *dev, const char *kind, const lw_m_counts *c) {
    fputs("<tr><td>", o);
    esc(o, dev);
    fputs("</td><td>", o);
    esc(o, kind);
    fputs("</td>", o);
    cell_bytes(o, c->live_bytes);
    cell_count(o, c->live_count);
    cell_bytes(o, c->peak_live_bytes);
    cell_count(o, c->alloc_count);
    cell_count(o, c->free_count);
    cell_count(o, c->failed_alloc_count);
    fputs("</tr>\n", o);
}

static void totals(FILE *o, const lw_model *m) {
    fputs("<h3>By device and kind</h3><table><tr><th>device</th><th>kind</th>"
          "<th class=\"n\">live</th><th class=\"n\">count</th><th class=\"n\">peak</th>"
          "<th class=\"n\">allocs</th><th class=\"n\">frees</th><th class=\"n\">failed</th></tr>\n",
          o);
    for (size_t i = 0; i < m->ndevices; i++) {
        const lw_m_device *d = &m->devices[i];
        char dev[24];
        snprintf(dev, sizeof dev,
                 !isfinite(d->device) ? "?"
                 : d->device < 0      ? "host"
                                      : "%.0f",
                 d->device);
        for (int k = 0; k < LW_KIND_COUNT; k++)
            if (isfinite(d->by_kind[k].alloc_count) && d->by_kind[k].alloc_count > 0)
                counts_row(o, dev, lw_kind_name((lw_kind)k), &d->by_kind[k]);
    }
    counts_row(o, "all", "all", &m->totals);
    if (m->have_imported && isfinite(m->imported.alloc_count) && m->imported.alloc_count > 0)
        counts_row(o, "-", "imported (other processes' memory, not in the totals)", &m->imported);
    fputs("</table>\n", o);
    if (!m->nfailures) return;
    fputs("<h3>Failed allocations</h3><table><tr><th class=\"n\">size</th><th>kind</th>"
          "<th class=\"n\">device</th><th class=\"n\">step</th><th class=\"n\">time</th>"
          "<th class=\"n\">CUDA error</th><th class=\"n\">site</th></tr>\n",
          o);
    for (size_t i = 0; i < m->nfailures; i++) {
        const lw_m_failure *f = &m->failures[i];
        char b[48];
        fputs("<tr>", o);
        cell_bytes(o, f->size);
        fputs("<td>", o);
        esc(o, f->kind ? f->kind : "?");
        char dev[32], step[32], res[32], site[32];
        fprintf(o,
                "</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                "<td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n",
                lw_fmt_int(f->device, dev, sizeof dev), lw_fmt_int(f->step, step, sizeof step),
                lw_fmt_duration(f->time_s, b, sizeof b), lw_fmt_int(f->result, res, sizeof res),
                lw_fmt_int(f->site, site, sizeof site));
    }
    fputs("</table>\n", o);
}

static void fact(FILE *o, const char *k, const char *v) {
    fprintf(o, "<dt>%s</dt><dd>", k);
    esc(o, v);
    fputs("</dd>\n", o);
}

/* The header of one report: the answer. */
static void answer_header(FILE *o, const lw_model *m) {
    const lw_m_growth *g = &m->growth;
    lw_answer a;
    char where[512], line[1200], b[160], c[64], d[64];
    lw_model_answer(m, &a, where, sizeof where);
    fprintf(o, "<header id=\"answer\" class=\"answer %s\">\n<div class=\"verdict\">%s</div>\n",
            lw_verdict_name(m->verdict),
            m->verdict == LW_VERDICT_LEAK && a.kind ? "Leak: pinned host memory grows"
            : m->verdict == LW_VERDICT_LEAK         ? "Leak: the floor of GPU memory grows"
            : m->verdict == LW_VERDICT_NO_LEAK      ? "No leak"
            : m->verdict == LW_VERDICT_INCONCLUSIVE ? "Inconclusive"
            : m->verdict == LW_VERDICT_NOTHING_SEEN ? "Nothing seen since the attach"
                                                    : "Verdict unknown");
    fputs("<h1>", o);
    esc(o, a.where ? a.where : "no call site named");
    fputs("</h1>\n<p class=\"line\">", o);
    esc(o, lw_answer_line(&a, line, sizeof line));
    fputs("</p>\n<dl>\n", o);
    if (m->verdict == LW_VERDICT_LEAK) {
        lw_fmt_rate(g->bytes_per_step, a.unit, b, sizeof b);
        if (isfinite(g->ci_lo)) {
            size_t len = strlen(b);
            snprintf(b + len, sizeof b - len, " (95%% CI %s .. %s)",
                     lw_fmt_bytes(g->ci_lo, c, sizeof c), lw_fmt_bytes(g->ci_hi, d, sizeof d));
        }
        fact(o, "rate", b);
        if (isfinite(g->onset_step) && isfinite(g->onset_hi) && g->onset_hi > g->onset_step) {
            /* Coarse bins: the onset is known to the steps of one bin. */
            size_t len = (size_t)snprintf(b, sizeof b, "%ss %s", a.unit,
                                          lw_fmt_count(g->onset_step, c, sizeof c));
            if (len < sizeof b)
                snprintf(b + len, sizeof b - len, "-%s", lw_fmt_count(g->onset_hi, c, sizeof c));
            fact(o, "growth began within", b);
        } else if (isfinite(g->onset_step)) {
            snprintf(b, sizeof b, "%s %s", a.unit, lw_fmt_count(g->onset_step, c, sizeof c));
            fact(o, "growth began near", b);
        }
        if (isfinite(g->oom_eta_seconds) || isfinite(g->oom_eta_steps)) {
            snprintf(b, sizeof b, "%s (%s %ss)", lw_fmt_duration(g->oom_eta_seconds, c, sizeof c),
                     lw_fmt_count(g->oom_eta_steps, d, sizeof d), a.unit);
            fact(o,
                 a.kind && !strcmp(a.kind, "pinned_host") ? "host memory used up in"
                                                          : "out of memory in",
                 b);
        } else {
            fact(o, "out of memory in", "unknown (device memory not known)");
        }
    }
    if (isfinite(g->device_free_bytes)) {
        snprintf(b, sizeof b, "%s free of %s", lw_fmt_bytes(g->device_free_bytes, c, sizeof c),
                 lw_fmt_bytes(g->device_total_bytes, d, sizeof d));
        fact(o, "device memory", b);
    }
    if (isfinite(g->steps)) {
        snprintf(b, sizeof b, "%s %ss", lw_fmt_count(g->steps, c, sizeof c), a.unit);
        fact(o, "seen", b);
    }
    snprintf(b, sizeof b, "%s (peak %s)", lw_fmt_bytes(m->totals.live_bytes, c, sizeof c),
             lw_fmt_bytes(m->totals.peak_live_bytes, d, sizeof d));
    fact(o, "live now", b);
    fputs("</dl>\n<p class=\"context\">", o);
    char name[200];
    lw_model_name(m, name, sizeof name);
    if (isfinite(m->rank)) {
        esc(o, name);
        if (isfinite(m->world_size)) fprintf(o, " of %.0f", m->world_size);
        fputs(" &#183; ", o);
    }
    if (m->command) esc(o, m->command);
    if (m->host) {
        fputs(" on ", o);
        esc(o, m->host);
    }
    if (isfinite(m->device)) fprintf(o, ", device %.0f", m->device);
    if (isfinite(m->pid)) fprintf(o, ", pid %.0f", m->pid);
    if (isfinite(m->duration_s))
        fprintf(o, ", watched for %s", lw_fmt_duration(m->duration_s, b, sizeof b));
    fputs(" &#183; ", o);
    esc(o, m->path);
    fputs("</p>\n</header>\n", o);
}

/* What fills each device, by role (the report's anatomy): one stacked bar
 * per device, the bytes beside it. */
static void anatomy(FILE *o, const lw_model *m) {
    static const char *const colors[LW_ROLES] = {"#4e79a7", "#76b7b2", "#59a14f", "#edc948",
                                                 "#bab0ac", "#b07aa1", "#e15759"};
    if (!m->nanatomy) return;
    fputs("<div class=\"anatomy\" id=\"anatomy\">\n<h3>What fills the device</h3>\n", o);
    for (size_t i = 0; i < m->nanatomy; i++) {
        const lw_m_anatomy *a = &m->anatomy[i];
        double total = a->total_bytes, sum = 0;
        for (int k = 0; k < LW_ROLES; k++)
            if (isfinite(a->now[k]) && a->now[k] > 0) sum += a->now[k];
        if (!isfinite(total) || total < sum) total = sum;
        fprintf(o,
                "<div>gpu %.0f</div><div style=\"display:flex;height:1.2em;width:100%%;"
                "border:1px solid #888;background:#fff\">",
                a->device);
        for (int k = 0; k < LW_ROLES && total > 0; k++) {
            if (!isfinite(a->now[k]) || a->now[k] <= 0) continue;
            char b[32];
            fprintf(o, "<span style=\"width:%.2f%%;background:%s\" title=\"%s %s\"></span>",
                    100 * a->now[k] / total, colors[k], lw_model_role_labels[k],
                    lw_fmt_bytes(a->now[k], b, sizeof b));
        }
        fputs("</div>\n<p>", o);
        for (int k = 0; k < LW_ROLES; k++) {
            if (!isfinite(a->now[k])) continue;
            char b[32];
            fprintf(o, "<span style=\"color:%s\">&#9632;</span> %s %s &#160; ", colors[k],
                    lw_model_role_labels[k], lw_fmt_bytes(a->now[k], b, sizeof b));
        }
        if (isfinite(total)) {
            char b[32];
            fprintf(o, "of %s", lw_fmt_bytes(a->total_bytes, b, sizeof b));
        }
        char line[600];
        if (m->anatomy_method && !strcmp(m->anatomy_method, "pytorch")) {
            fputs("<br>at the peak: ", o);
            esc(o, lw_model_anatomy_line(a, 1, line, sizeof line));
        }
        fputs("</p>\n", o);
    }
    if (m->anatomy_method && strcmp(m->anatomy_method, "pytorch"))
        fputs("<p>No PyTorch: the roles are unknown; the memory by call site is below.</p>\n", o);
    fputs("</div>\n", o);
}

static void section(FILE *o, const lw_model *m, int idx, const lw_render_opts *ro) {
    fprintf(o, "<section id=\"report-%d\">\n", idx);
    answer_header(o, m);
    anatomy(o, m);
    plot(o, m, idx);
    peak_plot(o, m, idx);
    sites(o, m, ro);
    totals(o, m);
    fputs("</section>\n", o);
}

static void title(FILE *o, const lw_model *m, const char *answer) {
    char cmd[120];
    fputs("<title>", o);
    esc(o, answer);
    if (m->command) {
        /* The program, not its whole command line. */
        lw_safe_text(m->command, cmd, sizeof cmd);
        fputs(" &#8212; ", o);
        esc(o, cmd);
    }
    if (m->host) {
        fputs(" on ", o);
        esc(o, m->host);
    }
    fputs(" (leakwatch)</title>\n", o);
}

/* Several reports: the merged view is the header; each rank's page below. */
static void merged(FILE *o, const lw_model *ms, size_t n) {
    size_t *order = malloc(n * sizeof *order);
    if (!order) return;
    lw_merge_order(ms, n, order);
    lw_merge_group *g = NULL;
    size_t ng = lw_merge_groups(ms, n, &g), leaking = 0;
    for (size_t i = 0; i < n; i++)
        leaking += ms[i].verdict == LW_VERDICT_LEAK;
    char line[1200];
    char head[1200];
    int kind = lw_merge_headline(ms, n, head, sizeof head);
    fprintf(o, "<header id=\"answer\" class=\"answer %s\">\n<div class=\"verdict\">",
            lw_verdict_name(kind == 1   ? LW_VERDICT_LEAK
                            : kind == 2 ? LW_VERDICT_INCONCLUSIVE
                                        : LW_VERDICT_NO_LEAK));
    fprintf(o, "%zu of %zu processes leak</div>\n<h1>", leaking, n);
    if (ng) {
        lw_merge_group_line(ms, &g[0], line, sizeof line);
        esc(o, line);
    } else {
        esc(o, leaking ? "no call site named" : kind == 2 ? head : "no leak");
    }
    fputs("</h1>\n", o);
    if (lw_merge_skew(ms, n, head, sizeof head)) {
        fputs("<p class=\"skew\">", o);
        esc(o, head);
        fputs("</p>\n", o);
    }
    if (ng) {
        fputs("<ul class=\"places\">\n", o);
        for (size_t i = 0; i < ng; i++) {
            lw_merge_group_line(ms, &g[i], line, sizeof line);
            fputs("<li>", o);
            esc(o, line);
            fputs("</li>\n", o);
        }
        fputs("</ul>\n", o);
    }
    fputs("</header>\n<table><tr><th>rank</th><th>verdict</th><th class=\"n\">growth</th>"
          "<th class=\"n\">OOM in</th><th>place to look</th><th class=\"n\">live</th>"
          "<th>host</th><th>file</th></tr>\n",
          o);
    for (size_t k = 0; k < n; k++) {
        const lw_model *m = &ms[order[k]];
        char name[200], b[64], where[512];
        lw_answer a;
        lw_model_answer(m, &a, where, sizeof where);
        lw_model_name(m, name, sizeof name);
        fprintf(o, "<tr><td><a href=\"#report-%zu\">", order[k]);
        esc(o, name);
        fprintf(o, "</a></td><td><span class=\"badge %s\">%s</span></td>",
                lw_verdict_name(m->verdict), lw_mverdict_label(m->verdict));
        fprintf(o, "<td class=\"n\">%s</td>",
                m->verdict == LW_VERDICT_LEAK
                    ? lw_fmt_rate(m->growth.bytes_per_step, a.unit, b, sizeof b)
                    : "&#8212;");
        fprintf(o, "<td class=\"n\">%s</td><td class=\"mono\">",
                isfinite(m->growth.oom_eta_seconds)
                    ? lw_fmt_duration(m->growth.oom_eta_seconds, b, sizeof b)
                    : "&#8212;");
        esc(o, a.where ? a.where : "");
        fputs("</td>", o);
        cell_bytes(o, m->totals.live_bytes);
        fputs("<td>", o);
        esc(o, m->host ? m->host : "");
        fputs("</td><td>", o);
        esc(o, m->path);
        fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
    lw_merge_free(g, ng);
    free(order);
}

void lw_render_html(FILE *o, const lw_model *ms, size_t n, const lw_render_opts *ro) {
    fputs(page_head, o);
    char where[512], line[1200];
    if (n == 1) {
        lw_answer a;
        lw_model_answer(&ms[0], &a, where, sizeof where);
        title(o, &ms[0], lw_answer_line(&a, line, sizeof line));
    } else {
        lw_merge_group *g = NULL;
        size_t ng = lw_merge_groups(ms, n, &g);
        if (ng)
            lw_merge_group_line(ms, &g[0], line, sizeof line);
        else
            snprintf(line, sizeof line, "%zu reports", n);
        lw_merge_free(g, ng);
        title(o, &ms[0], line);
    }
    fputs("<style>", o);
    fputs(report_css, o);
    fputs("</style></head><body>\n", o);
    if (n == 1) {
        section(o, &ms[0], 0, ro);
    } else {
        merged(o, ms, n);
        for (size_t i = 0; i < n; i++) {
            char name[200];
            lw_model_name(&ms[i], name, sizeof name);
            fprintf(o, "<details class=\"rank\"%s><summary>",
                    ms[i].verdict == LW_VERDICT_LEAK && i == 0 ? " open" : "");
            esc(o, name);
            fprintf(o, ": %s</summary>\n", lw_mverdict_label(ms[i].verdict));
            section(o, &ms[i], (int)i, ro);
            fputs("</details>\n", o);
        }
    }
    fputs(page_foot, o);
}
