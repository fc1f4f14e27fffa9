/* 'leakwatch report --format html': one self-contained page (inline CSS and
 * SVG, no script, no network: a Content-Security-Policy forbids any fetch), so
 * it can be attached to a ticket or opened from a CI artifact anywhere. */
#include "cli.h"
#include "cli_render.h"

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

static const char *css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
    "max-width:1100px;color:#1d2430;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid "
    "#d8dde6;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}"
    ".badge{display:inline-block;padding:2px 10px;border-radius:10px;font-weight:600;color:#fff}"
    ".leak{background:#c62828}.no_leak{background:#2e7d32}.inconclusive{background:#8a6d00}"
    ".unknown{background:#607080}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;margin:8px 0}"
    "dt{color:#5a6577}dd{margin:0}"
    "table{border-collapse:collapse;margin:6px 0;font-size:13px}"
    "th,td{padding:3px 10px;border-bottom:1px solid #e4e8ef;text-align:left;vertical-align:top}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}"
    ".py{color:#1b5e20}.fold{color:#7a8599;font-style:italic}.note{color:#5a6577}"
    "svg text{font:11px system-ui,sans-serif;fill:#5a6577}"
    "details summary{cursor:pointer;color:#1a56a8}";

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

/* 1, 2 or 5 times a power of ten (or of 1024 for bytes), about n per range. */
static double nice_step(double range, int n, int bytes) {
    double raw = range / n, base = 1;
    if (bytes) {
        while (base * 1024 <= raw)
            base *= 1024;
    }
    double p = pow(10, floor(log10(raw / base))) * base;
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void polyline(FILE *o, const frame_t *f, const double *x, const double *y, size_t n,
                     const char *id, const char *style) {
    fprintf(o, "<polyline id=\"%s\" fill=\"none\" %s points=\"", id, style);
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i]) && isfinite(px(f, x[i])) && isfinite(py(f, y[i])))
            fprintf(o, "%.1f,%.1f ", px(f, x[i]), py(f, y[i]));
    fputs("\"/>\n", o);
}

static void plot(FILE *o, const lw_model *m, int idx) {
    const lw_m_growth *g = &m->growth;
    size_t n = m->nseries, good = 0;
    frame_t f = {INFINITY, -INFINITY, INFINITY, -INFINITY, 78, 16, 860, 290};
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(m->sx[i])) continue;
        double ys[2] = {m->sfloor[i], m->speak[i]};
        for (int k = 0; k < 2; k++) {
            if (!isfinite(ys[k])) continue;
            good++;
            f.x0 = fmin(f.x0, m->sx[i]), f.x1 = fmax(f.x1, m->sx[i]);
            f.y0 = fmin(f.y0, ys[k]), f.y1 = fmax(f.y1, ys[k]);
        }
    }
    if (!good) {
        fputs("<p class=\"note\">No time series in this report: it was written before the first "
              "sample, or by a leakwatch without the sampler. The totals below are at the time "
              "of writing.</p>\n",
              o);
        return;
    }
    double last_x = f.x1, slope = g->bytes_per_step, icpt = lw_model_trend_intercept(m);
    int trend = isfinite(slope) && isfinite(icpt);
    double oom_x = NAN;
    int oom_beyond = 0;
    if (trend && isfinite(g->oom_eta_steps) && g->oom_eta_steps >= 0) {
        oom_x = last_x + g->oom_eta_steps;
        /* Stretch the axis to show the OOM point unless it is far away. */
        double span = f.x1 - f.x0 > 0 ? f.x1 - f.x0 : 1;
        if (oom_x <= f.x1 + 3 * span)
            f.x1 = oom_x, f.y1 = fmax(f.y1, icpt + slope * oom_x);
        else
            oom_beyond = 1;
    }
    if (trend) {
        f.y1 = fmax(f.y1, icpt + slope * f.x1);
        f.y0 = fmin(f.y0, icpt + slope * f.x0);
    }
    if (!isfinite(f.x1 - f.x0) || !isfinite(f.y1 - f.y0) || !isfinite(f.y1 * 1.1) ||
        !isfinite(f.x1 * 4)) {
        fputs("<p class=\"note\">The series holds values too large to plot.</p>\n", o);
        return;
    }
    if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
    if (f.y1 <= f.y0) f.y1 = f.y0 + 1024;
    double ypad = (f.y1 - f.y0) * 0.06;
    f.y1 += ypad;
    f.y0 = f.y0 - ypad < 0 && f.y0 >= 0 ? 0 : f.y0 - ypad;

    fprintf(o,
            "<svg id=\"plot-%d\" class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" "
            "viewBox=\"0 0 960 340\" width=\"960\" height=\"340\" role=\"img\" "
            "aria-label=\"live memory per step\">\n",
            idx);
    fprintf(o,
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fbfcfe\" "
            "stroke=\"#d8dde6\"/>\n",
            f.left, f.top, f.w, f.h);
    /* Grid and labels. */
    double ys = nice_step(f.y1 - f.y0, 5, 1);
    /* Counted loops: with huge values y += ys may not move y at all. */
    for (int i = 0; i < 40; i++) {
        double y = ceil(f.y0 / ys) * ys + i * ys;
        if (y > f.y1) break;
        char b[32];
        fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e8ef\"/>",
                f.left, f.left + f.w, py(&f, y), py(&f, y));
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", f.left - 6,
                py(&f, y) + 4, lw_fmt_bytes(y, b, sizeof b));
    }
    double xs = nice_step(f.x1 - f.x0, 8, 0);
    if (xs < 1) xs = 1;
    for (int i = 0; i < 40; i++) {
        double x = ceil(f.x0 / xs) * xs + i * xs;
        if (x > f.x1) break;
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", px(&f, x),
                f.top + f.h + 16, x);
    }
    int steps = !g->step_source || strcmp(g->step_source, "time") != 0;
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", f.left + f.w / 2,
            f.top + f.h + 32, steps ? "step" : "interval");
    /* Device capacity, when known and in view. */
    double cap = g->device_total_bytes;
    if (isfinite(cap) && cap > f.y0 && cap < f.y1)
        fprintf(o,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c62828\" "
                "stroke-dasharray=\"2 3\"/><text x=\"%.1f\" y=\"%.1f\">device memory</text>\n",
                f.left, f.left + f.w, py(&f, cap), py(&f, cap), f.left + 4, py(&f, cap) - 4);
    polyline(o, &f, m->sx, m->speak, n, "peak", "stroke=\"#9fb7dd\" stroke-width=\"1.5\"");
    polyline(o, &f, m->sx, m->sfloor, n, "floor", "stroke=\"#1a56a8\" stroke-width=\"2.2\"");
    if (trend) {
        double xa = f.x0, xb = f.x1;
        fprintf(o,
                "<line id=\"trend\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#e65100\" stroke-width=\"1.6\" stroke-dasharray=\"7 4\"/>\n",
                px(&f, xa), py(&f, icpt + slope * xa), px(&f, xb), py(&f, icpt + slope * xb));
    }
    if (isfinite(oom_x) && !oom_beyond) {
        char d[48];
        double cx = px(&f, oom_x), cy = py(&f, icpt + slope * oom_x);
        fprintf(o,
                "<circle id=\"oom\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#c62828\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" style=\"fill:#c62828\">"
                "projected OOM%s%s</text>\n",
                cx, cy, cx - 8, cy + 4, isfinite(g->oom_eta_seconds) ? " in " : "",
                isfinite(g->oom_eta_seconds) ? lw_fmt_duration(g->oom_eta_seconds, d, sizeof d)
                                             : "");
    } else if (oom_beyond) {
        char d[48];
        fprintf(o,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" style=\"fill:#c62828\">projected "
                "OOM beyond the plot, in %.0f steps%s%s &#8594;</text>\n",
                f.left + f.w - 6, f.top + 14, g->oom_eta_steps,
                isfinite(g->oom_eta_seconds) ? " / " : "",
                isfinite(g->oom_eta_seconds) ? lw_fmt_duration(g->oom_eta_seconds, d, sizeof d)
                                             : "");
    }
    /* Legend. */
    fprintf(
        o,
        "<g transform=\"translate(%.0f,%.0f)\">"
        "<line x1=\"0\" x2=\"18\" y1=\"0\" y2=\"0\" stroke=\"#1a56a8\" stroke-width=\"2.2\"/>"
        "<text x=\"22\" y=\"4\">floor (lowest live bytes in the step)</text>"
        "<line x1=\"230\" x2=\"248\" y1=\"0\" y2=\"0\" stroke=\"#9fb7dd\" stroke-width=\"1.5\"/>"
        "<text x=\"252\" y=\"4\">peak</text>%s</g>\n",
        f.left + 8, f.top + 12,
        trend ? "<line x1=\"300\" x2=\"318\" y1=\"0\" y2=\"0\" stroke=\"#e65100\" "
                "stroke-dasharray=\"7 4\"/><text x=\"322\" y=\"4\">fitted trend</text>"
              : "");
    fputs("</svg>\n", o);
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
    fprintf(o, "<tr%s><td class=\"mono%s\">", marked ? " class=\"here\"" : "",
            is_python ? " py"
            : folded  ? " fold"
                      : "");
    esc(o, label);
    fprintf(o, "</td><td>%s</td></tr>\n", is_python ? "python" : folded ? "" : "native");
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
    fputs("<table class=\"sites\"><tr><th>#</th><th>site</th><th class=\"n\">live</th>"
          "<th class=\"n\">count</th><th class=\"n\">growth</th><th class=\"n\">allocs</th>"
          "<th class=\"n\">frees</th><th>floor</th><th>where</th></tr>\n",
          o);
    for (size_t k = 0; k < n; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        char b[64], label[512] = "(no stack)";
        fprintf(o, "<tr><td>%zu</td><td>%.0f%s</td>", k + 1, isfinite(s->id) ? s->id : -1,
                s->leak == 1 ? " <span class=\"badge leak\">leak</span>" : "");
        cell_bytes(o, s->live_bytes);
        cell_count(o, s->live_count);
        fprintf(o, "<td class=\"n\">%s</td>",
                isfinite(s->bytes_per_step) ? lw_fmt_rate(s->bytes_per_step, "step", b, sizeof b)
                                            : "?");
        cell_count(o, s->alloc_count);
        cell_count(o, s->free_count);
        fputs("<td>", o);
        sparkline(o, s);
        fputs("</td><td class=\"mono\">", o);
        /* The innermost Python frame, else the innermost native one. */
        const lw_m_frame *best = s->nframes ? &s->frames[0] : NULL;
        for (size_t j = 0; j < s->nframes; j++)
            if (s->frames[j].kind && !strcmp(s->frames[j].kind, "python")) {
                best = &s->frames[j];
                break;
            }
        if (best) lw_frame_label(best, label, sizeof label);
        esc(o, label);
        fputs("</td></tr>\n", o);
    }
    fputs("</table>\n", o);
    for (size_t k = 0; k < n; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        char b[48];
        fprintf(o, "<details%s><summary>#%zu site %.0f: %s live</summary>\n", k < 3 ? " open" : "",
                k + 1, isfinite(s->id) ? s->id : -1, lw_fmt_bytes(s->live_bytes, b, sizeof b));
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
        for (int k = 0; k < LW_KINDS; k++)
            if (isfinite(d->by_kind[k].alloc_count) && d->by_kind[k].alloc_count > 0)
                counts_row(o, dev, lw_model_kind_names[k], &d->by_kind[k]);
    }
    counts_row(o, "all", "all", &m->totals);
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

static void section(FILE *o, const lw_model *m, int idx, size_t n, const lw_render_opts *ro) {
    const lw_m_growth *g = &m->growth;
    char b[96], c[64], d[64];
    fprintf(o, "<section id=\"report-%d\">\n<h2>", idx);
    if (n > 1 && isfinite(m->rank))
        fprintf(o, "Rank %.0f: ", m->rank);
    else if (n > 1)
        fprintf(o, "Report %d: ", idx + 1);
    esc(o, m->path);
    fprintf(o, " <span class=\"badge %s\">%s</span></h2>\n<dl>\n", lw_mverdict_name(m->verdict),
            lw_mverdict_label(m->verdict));
    if (m->command) fact(o, "command", m->command);
    snprintf(b, sizeof b, "%.0f", m->pid);
    if (isfinite(m->pid)) fact(o, "pid", b);
    if (m->host) fact(o, "host", m->host);
    if (isfinite(m->duration_s))
        fact(o, "watched for", lw_fmt_duration(m->duration_s, b, sizeof b));
    if (isfinite(g->bytes_per_step)) {
        char r[160];
        lw_fmt_rate(g->bytes_per_step, "step", b, sizeof b);
        if (isfinite(g->ci_lo))
            snprintf(r, sizeof r, "%s (95%% CI %s .. %s)", b, lw_fmt_bytes(g->ci_lo, c, sizeof c),
                     lw_fmt_bytes(g->ci_hi, d, sizeof d));
        else
            snprintf(r, sizeof r, "%s", b);
        fact(o, "growth per step", r);
    }
    if (isfinite(g->bytes_per_second))
        fact(o, "growth per second", lw_fmt_rate(g->bytes_per_second, "s", b, sizeof b));
    if (isfinite(g->p_value)) {
        snprintf(b, sizeof b, "%.2g", g->p_value);
        fact(o, "p-value", b);
    }
    if (isfinite(g->steps)) fact(o, "steps", lw_fmt_count(g->steps, b, sizeof b));
    if (isfinite(g->oom_eta_seconds))
        fact(o, "projected OOM in", lw_fmt_duration(g->oom_eta_seconds, b, sizeof b));
    else if (isfinite(g->oom_eta_steps)) {
        lw_fmt_count(g->oom_eta_steps, c, sizeof c);
        snprintf(b, sizeof b, "%s steps", c);
        fact(o, "projected OOM in", b);
    }
    snprintf(b, sizeof b, "%s (peak %s)", lw_fmt_bytes(m->totals.live_bytes, c, sizeof c),
             lw_fmt_bytes(m->totals.peak_live_bytes, d, sizeof d));
    fact(o, "live now", b);
    fputs("</dl>\n", o);
    plot(o, m, idx);
    sites(o, m, ro);
    totals(o, m);
    fputs("</section>\n", o);
}

void lw_render_html(FILE *o, const lw_model *ms, size_t n, const lw_render_opts *ro) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; img-src data:\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
          "<title>leakwatch report</title>\n<style>",
          o);
    fputs(css, o);
    fputs("</style></head><body>\n<h1>leakwatch report</h1>\n", o);
    if (n > 1) {
        size_t leaking = 0;
        for (size_t i = 0; i < n; i++)
            leaking += ms[i].verdict == LW_MV_LEAK;
        fprintf(o, "<p><b>%zu of %zu</b> processes leak.</p>\n", leaking, n);
        fputs("<table><tr><th>rank</th><th>verdict</th><th class=\"n\">growth</th>"
              "<th class=\"n\">live</th><th class=\"n\">OOM in</th><th>file</th></tr>\n",
              o);
        for (size_t i = 0; i < n; i++) {
            const lw_model *m = &ms[i];
            char b[64];
            if (isfinite(m->rank))
                snprintf(b, sizeof b, "%.0f", m->rank);
            else
                snprintf(b, sizeof b, "#%zu", i + 1);
            fprintf(o,
                    "<tr><td><a href=\"#report-%zu\">%s</a></td><td><span class=\"badge %s\">%s"
                    "</span></td>",
                    i, b, lw_mverdict_name(m->verdict), lw_mverdict_label(m->verdict));
            fprintf(o, "<td class=\"n\">%s</td>",
                    lw_fmt_rate(m->growth.bytes_per_step, "step", b, sizeof b));
            cell_bytes(o, m->totals.live_bytes);
            fprintf(o, "<td class=\"n\">%s</td><td>",
                    isfinite(m->growth.oom_eta_seconds)
                        ? lw_fmt_duration(m->growth.oom_eta_seconds, b, sizeof b)
                        : "&#8212;");
            esc(o, m->path);
            fputs("</td></tr>\n", o);
        }
        fputs("</table>\n", o);
    }
    for (size_t i = 0; i < n; i++)
        section(o, &ms[i], (int)i, n, ro);
    fputs("<p class=\"note\">Written by leakwatch. Floor: the lowest live bytes within each step; "
          "a floor that keeps rising is memory the program never gives back.</p>\n</body></html>\n",
          o);
}
