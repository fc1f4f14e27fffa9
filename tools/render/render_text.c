/* SPDX-License-Identifier: Apache-2.0 */
/* The human summary of 'leakwatch report': what a person needs to decide
 * whether there is a leak and where to look, in the order they ask it:
 * verdict, how fast, when it runs out, which code, then the details. */
#include "cli.h"
#include "merge.h"
#include "render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *lw_mverdict_label(lw_verdict v) {
    switch (v) {
    case LW_VERDICT_LEAK:
        return "LEAK";
    case LW_VERDICT_NO_LEAK:
        return "no leak";
    case LW_VERDICT_INCONCLUSIVE:
        return "inconclusive";
    case LW_VERDICT_NOTHING_SEEN:
        return "nothing seen";
    default:
        return "unknown";
    }
}

static const char *verdict_explained(const lw_model *m, const lw_answer *a) {
    switch (m->verdict) {
    case LW_VERDICT_LEAK:
        return "the floor of live memory grows step after step";
    case LW_VERDICT_NO_LEAK:
        /* A one-time rise is no growth per step, and not flat either. */
        return a->rose_once ? "the floor of live memory rose, then held level"
                            : "the floor of live memory is flat";
    case LW_VERDICT_INCONCLUSIVE: {
        /* The decision's own reason (the answer line says what decides it). */
        static char safe[200];
        const char *why = lw_json_string(lw_json_path(m->doc, "growth.reason"));
        return why && why[0] ? lw_safe_text(why, safe, sizeof safe)
                             : "not enough steps or too much noise to decide";
    }
    case LW_VERDICT_NOTHING_SEEN:
        return "no CUDA allocation was seen since the attach: the job allocated nothing "
               "since, or calls the allocation functions through pointers it looked up "
               "before the attach (ctypes, a cached cudaMalloc), which an attach cannot see; "
               "start the job under 'leakwatch run' to see every allocation";
    default:
        return "the report does not say";
    }
}

static void text_stack_line(const char *label, int is_python, size_t folded, int marked,
                            void *ctx) {
    FILE *out = ctx;
    (void)folded;
    fprintf(out, "     %s %s%s\n",
            marked == LW_STACK_HERE  ? "-->"
            : marked == LW_STACK_VIA ? "via"
                                     : "   ",
            is_python ? "py  " : "    ", label);
}

/* The answer in one line: what every output of leakwatch says first. */
static void print_answer(FILE *out, const lw_model *m) {
    lw_answer a;
    char where[512], line[1200];
    lw_model_answer(m, &a, where, sizeof where);
    fprintf(out, "%s\n", lw_answer_line(&a, line, sizeof line));
    /* Under it, as the exit summary: what keeps the named site alive. */
    const lw_m_site *top = m->verdict == LW_VERDICT_LEAK ? lw_model_top_site(m) : NULL;
    if (top && top->owner_text) {
        char shown[1200];
        fprintf(out, "  %s\n", lw_safe_text(top->owner_text, shown, sizeof shown));
    }
}

static void print_header(FILE *out, const lw_model *m) {
    char a[64], b[64], c[64], shown[300];
    fprintf(out, "  report    %s\n", lw_safe_text(m->path, shown, sizeof shown));
    if (m->command) fprintf(out, "  command   %s\n", lw_safe_text(m->command, shown, sizeof shown));
    if (isfinite(m->pid)) snprintf(a, sizeof a, "%.0f", m->pid);
    fprintf(out, "  process   pid %s", isfinite(m->pid) ? a : "?");
    if (m->host) fprintf(out, " on %s", lw_safe_text(m->host, shown, sizeof shown));
    if (isfinite(m->rank)) fprintf(out, ", rank %.0f", m->rank);
    if (isfinite(m->world_size)) fprintf(out, " of %.0f", m->world_size);
    if (isfinite(m->local_rank)) fprintf(out, " (local rank %.0f)", m->local_rank);
    if (isfinite(m->device)) fprintf(out, ", device %.0f", m->device);
    if (isfinite(m->duration_s))
        fprintf(out, ", watched for %s", lw_fmt_duration(m->duration_s, b, sizeof b));
    if (isfinite(m->written_at) && m->written_at > 0 && m->written_at < 1e11) {
        time_t t = (time_t)m->written_at;
        struct tm tm;
        if (localtime_r(&t, &tm)) {
            strftime(c, sizeof c, "%Y-%m-%d %H:%M:%S", &tm);
            fprintf(out, "; written %s", c);
        }
    }
    if (m->reason) fprintf(out, " (%s)", lw_safe_text(m->reason, shown, sizeof shown));
    fputc('\n', out);
}

/* Who marked the steps: PyTorch's optimizer (leakwatch's hook counted its
 * calls: the report's torch.steps.optimizer_calls), or the program's own
 * leakwatch_step() (issue 41: said of both). */
static const char *marker_label(const lw_model *m) {
    long long calls = 0;
    const lw_json *c = m->doc ? lw_json_path(m->doc, "torch.steps.optimizer_calls") : NULL;
    if (c && lw_json_int64(c, &calls) == 0 && calls > 0)
        return "marked by PyTorch's optimizer steps, through leakwatch's hook";
    return "marked by leakwatch_step()";
}

static void print_growth(FILE *out, const lw_model *m) {
    const lw_m_growth *g = &m->growth;
    char a[64], b[64], c[64], d[64], where[512];
    lw_answer ans;
    lw_model_answer(m, &ans, where, sizeof where);
    fprintf(out, "  verdict   %s: %s\n", lw_mverdict_label(m->verdict), verdict_explained(m, &ans));
    if (ans.rose_once) {
        /* The window's straight line spreads that rise over its steps: shown
         * for what it is, never as a rate of growth. */
        fprintf(out,
                "  growth    none per step: the rise stopped (a straight line through the "
                "window would say %s",
                lw_fmt_rate(g->bytes_per_step, "step", a, sizeof a));
        if (isfinite(g->p_value)) fprintf(out, ", p = %.2g", g->p_value);
        fputs(")\n", out);
    } else if (isfinite(g->bytes_per_step) || isfinite(g->bytes_per_second)) {
        fprintf(out, "  growth    %s", lw_fmt_rate(g->bytes_per_step, "step", a, sizeof a));
        if (isfinite(g->ci_lo))
            fprintf(out, " (95%% CI %s .. %s)", lw_fmt_bytes(g->ci_lo, b, sizeof b),
                    lw_fmt_bytes(g->ci_hi, c, sizeof c));
        if (isfinite(g->bytes_per_second))
            fprintf(out, ", %s", lw_fmt_rate(g->bytes_per_second, "s", d, sizeof d));
        if (isfinite(g->p_value)) fprintf(out, ", p = %.2g", g->p_value);
        fputc('\n', out);
    }
    if (isfinite(g->steps)) {
        char src[40];
        fprintf(out, "  steps     %s", lw_fmt_count(g->steps, a, sizeof a));
        if (g->step_source)
            fprintf(out, " (%s)",
                    !strcmp(g->step_source, "marker") ? marker_label(m)
                    : !strcmp(g->step_source, "auto") ? "detected from the allocation pattern"
                    : !strcmp(g->step_source, "time")
                        ? "time intervals: no step marker seen"
                        : lw_safe_text(g->step_source, src, sizeof src));
        if (isfinite(g->onset_step) && isfinite(g->onset_hi) && g->onset_hi > g->onset_step)
            fprintf(out, "; growth began within steps %.0f-%.0f", g->onset_step, g->onset_hi);
        else if (isfinite(g->onset_step))
            fprintf(out, "; growth began near step %.0f", g->onset_step);
        fputc('\n', out);
    }
    int host = g->memory_kind && !strcmp(g->memory_kind, "pinned_host");
    if (host && m->verdict == LW_VERDICT_LEAK)
        fprintf(out,
                "  memory    pinned host memory (page-locked RAM) leaks; the device's does not\n");
    if (host && (isfinite(g->oom_eta_seconds) || isfinite(g->oom_eta_steps))) {
        fprintf(out, "  host OOM  projected in ");
        if (isfinite(g->oom_eta_seconds))
            fprintf(out, "%s", lw_fmt_duration(g->oom_eta_seconds, a, sizeof a));
        if (isfinite(g->oom_eta_steps))
            fprintf(out, "%s%s steps%s", isfinite(g->oom_eta_seconds) ? " (" : "",
                    lw_fmt_count(g->oom_eta_steps, b, sizeof b),
                    isfinite(g->oom_eta_seconds) ? ")" : "");
        if (isfinite(g->host_available_bytes) && isfinite(g->host_total_bytes))
            fprintf(out, "; %s of host memory available of %s",
                    lw_fmt_bytes(g->host_available_bytes, c, sizeof c),
                    lw_fmt_bytes(g->host_total_bytes, d, sizeof d));
        fputc('\n', out);
    } else if (isfinite(g->oom_eta_seconds) || isfinite(g->oom_eta_steps)) {
        fprintf(out, "  OOM       projected in ");
        if (isfinite(g->oom_eta_seconds))
            fprintf(out, "%s", lw_fmt_duration(g->oom_eta_seconds, a, sizeof a));
        if (isfinite(g->oom_eta_steps))
            fprintf(out, "%s%s steps%s", isfinite(g->oom_eta_seconds) ? " (" : "",
                    lw_fmt_count(g->oom_eta_steps, b, sizeof b),
                    isfinite(g->oom_eta_seconds) ? ")" : "");
        if (isfinite(g->device_free_bytes) && isfinite(g->device_total_bytes))
            fprintf(out, "; %s free of %s", lw_fmt_bytes(g->device_free_bytes, c, sizeof c),
                    lw_fmt_bytes(g->device_total_bytes, d, sizeof d));
        fputc('\n', out);
    } else if (m->verdict == LW_VERDICT_LEAK) {
        fprintf(out, "  OOM       no projection (device capacity unknown)\n");
    }
    const lw_m_counts *t = &m->totals;
    char e[32], f[32];
    fprintf(out, "  live      %s in %s allocations (peak %s); %s allocated, %s freed, %s failed\n",
            lw_fmt_bytes(t->live_bytes, a, sizeof a), lw_fmt_count(t->live_count, b, sizeof b),
            lw_fmt_bytes(t->peak_live_bytes, c, sizeof c),
            lw_fmt_count(t->alloc_count, d, sizeof d), lw_fmt_count(t->free_count, e, sizeof e),
            lw_fmt_count(t->failed_alloc_count, f, sizeof f));
}

static void print_sites(FILE *out, const lw_model *m, const lw_render_opts *o) {
    if (!m->nsites) {
        fprintf(out, "\nNo call sites in this report.\n");
        return;
    }
    size_t order_stack[64];
    size_t *order = m->nsites <= 64 ? order_stack : malloc(m->nsites * sizeof *order);
    if (!order) return;
    lw_model_rank_sites(m, order);
    size_t n = m->nsites < o->top_sites ? m->nsites : o->top_sites;
    char a[64], b[64], c[64];
    fprintf(out, "\nTop call sites (%zu of %s", n, lw_fmt_count((double)m->nsites, a, sizeof a));
    if (isfinite(m->sites_total) && m->sites_total > (double)m->nsites)
        fprintf(out, " in the report, %s seen", lw_fmt_count(m->sites_total, b, sizeof b));
    fprintf(out, "), most worrying first:\n");
    for (size_t k = 0; k < n; k++) {
        const lw_m_site *s = &m->sites[order[k]];
        char where[512];
        lw_model_where(s, where, sizeof where);
        if (lw_site_is_quiet(s)) {
            /* Nothing live, no growth: one line. */
            fprintf(out, "  #%zu %s: nothing live; %s allocs, %s frees\n", k + 1, where,
                    lw_fmt_count(s->alloc_count, a, sizeof a),
                    lw_fmt_count(s->free_count, b, sizeof b));
            continue;
        }
        fprintf(out, "  #%zu %s (site %s)%s%s: %s live in %s allocations", k + 1, where,
                isfinite(s->id) ? (snprintf(a, sizeof a, "%.0f", s->id), a) : "?",
                s->leak == 1 ? "  LEAK" : "", s->pooled == 1 ? " (pooled: over the site cap)" : "",
                lw_fmt_bytes(s->live_bytes, b, sizeof b), lw_fmt_count(s->live_count, c, sizeof c));
        if (isfinite(s->bytes_per_step) && s->bytes_per_step != 0)
            fprintf(out, ", %s", lw_fmt_rate(s->bytes_per_step, "step", a, sizeof a));
        fprintf(out, "; %s allocs", lw_fmt_count(s->alloc_count, a, sizeof a));
        fprintf(out, ", %s frees", lw_fmt_count(s->free_count, b, sizeof b));
        if (isfinite(s->failed_alloc_count) && s->failed_alloc_count > 0)
            fprintf(out, ", %s failed", lw_fmt_count(s->failed_alloc_count, c, sizeof c));
        fputc('\n', out);
        if (s->owner_text) {
            char shown[1200];
            fprintf(out, "        %s\n", lw_safe_text(s->owner_text, shown, sizeof shown));
        }
        if (s->nframes == 0)
            fprintf(out, "        (no stack: LEAKWATCH_STACKS=0, or the report has none)\n");
        lw_stack_lines(s, o, text_stack_line, out);
    }
    if (order != order_stack) free(order);
}

static void counts_row(FILE *out, const char *dev, const char *kind, const lw_m_counts *c) {
    char a[32], b[32], d[32], e[32], f[32], g[32];
    fprintf(out, "  %-7s %-12s %11s %9s %11s %10s %10s %7s\n", dev, kind,
            lw_fmt_bytes(c->live_bytes, a, sizeof a), lw_fmt_count(c->live_count, b, sizeof b),
            lw_fmt_bytes(c->peak_live_bytes, d, sizeof d),
            lw_fmt_count(c->alloc_count, e, sizeof e), lw_fmt_count(c->free_count, f, sizeof f),
            lw_fmt_count(c->failed_alloc_count, g, sizeof g));
}

static int counts_used(const lw_m_counts *c) {
    return (isfinite(c->alloc_count) && c->alloc_count > 0) ||
           (isfinite(c->failed_alloc_count) && c->failed_alloc_count > 0) ||
           (isfinite(c->live_bytes) && c->live_bytes != 0);
}

static void print_totals(FILE *out, const lw_model *m) {
    if (!m->have_totals) return;
    fprintf(out, "\nBy device and kind:\n");
    fprintf(out, "  %-7s %-12s %11s %9s %11s %10s %10s %7s\n", "device", "kind", "live", "count",
            "peak", "allocs", "frees", "failed");
    for (size_t i = 0; i < m->ndevices; i++) {
        const lw_m_device *d = &m->devices[i];
        char dev[24];
        if (!isfinite(d->device))
            snprintf(dev, sizeof dev, "?");
        else if (d->device < 0)
            snprintf(dev, sizeof dev, "host");
        else
            snprintf(dev, sizeof dev, "%.0f", d->device);
        int any = 0;
        for (int k = 0; k < LW_KIND_COUNT; k++)
            if (counts_used(&d->by_kind[k]))
                counts_row(out, dev, lw_kind_name((lw_kind)k), &d->by_kind[k]), any = 1;
        if (!any) counts_row(out, dev, "all", &d->c);
    }
    counts_row(out, "all", "all", &m->totals);
    if (m->have_imported && counts_used(&m->imported)) {
        counts_row(out, "-", "imported", &m->imported);
        fprintf(out, "  imported: other processes' memory opened here (IPC, shareable handles); "
                     "not in the totals above\n");
    }
    if (isfinite(m->unknown_free_count) && m->unknown_free_count > 0) {
        char a[32];
        fprintf(out,
                "  %s frees of addresses never seen allocated (allocated before leakwatch "
                "started, or by an unhooked path)\n",
                lw_fmt_count(m->unknown_free_count, a, sizeof a));
    }
}

static void print_failures(FILE *out, const lw_model *m) {
    if (!m->nfailures) return;
    fprintf(out, "\nFailed allocations (%zu, newest last):\n", m->nfailures);
    for (size_t i = 0; i < m->nfailures; i++) {
        const lw_m_failure *f = &m->failures[i];
        char a[32], b[32], k[32];
        char dev[32], step[32], res[32], site[32];
        fprintf(out, "  %s %s on device %s at %s, step %s: CUDA error %s (site %s)\n",
                lw_fmt_bytes(f->size, a, sizeof a),
                f->kind ? lw_safe_text(f->kind, k, sizeof k) : "?",
                lw_fmt_int(f->device, dev, sizeof dev), lw_fmt_duration(f->time_s, b, sizeof b),
                lw_fmt_int(f->step, step, sizeof step), lw_fmt_int(f->result, res, sizeof res),
                lw_fmt_int(f->site, site, sizeof site));
    }
}

/* What fills each device, by role (the report's anatomy): a bar and the
 * bytes, now and at the run's peak. */
static void print_anatomy(FILE *out, const lw_model *m) {
    if (!m->nanatomy) return;
    for (size_t i = 0; i < m->nanatomy; i++) {
        const lw_m_anatomy *a = &m->anatomy[i];
        char bar[48], line[600];
        fprintf(out, "  anatomy   gpu %.0f [%s] %s\n", a->device,
                lw_model_anatomy_bar(a, 40, bar, sizeof bar),
                lw_model_anatomy_line(a, 0, line, sizeof line));
        if (m->anatomy_method && !strcmp(m->anatomy_method, "pytorch"))
            fprintf(out, "            at the peak: %s\n",
                    lw_model_anatomy_line(a, 1, line, sizeof line));
    }
    if (m->anatomy_method && strcmp(m->anatomy_method, "pytorch"))
        fprintf(out, "            (no PyTorch: roles unknown, the memory by call site is below)\n");
    else
        fprintf(out, "            (W weights, G gradients, O optimizer state, A activations, "
                     "c cached free, X outside PyTorch, L leak)\n");
}

static void render_one(FILE *out, const lw_model *m, const lw_render_opts *o) {
    print_answer(out, m);
    print_anatomy(out, m);
    print_header(out, m);
    print_growth(out, m);
    print_sites(out, m, o);
    print_totals(out, m);
    print_failures(out, m);
}

/* Several reports (one per rank): one merged view first, the details of each
 * on request (--details, --rank N). */
static void render_merged(FILE *out, const lw_model *ms, size_t n) {
    size_t *order = malloc(n * sizeof *order);
    if (!order) return;
    lw_merge_order(ms, n, order);
    lw_merge_group *g = NULL;
    size_t ng = lw_merge_groups(ms, n, &g);
    size_t leaking = 0;
    for (size_t i = 0; i < n; i++)
        leaking += ms[i].verdict == LW_VERDICT_LEAK;
    char line[1200];
    lw_merge_headline(ms, n, line, sizeof line);
    fprintf(out, "%s\n", line);
    if (lw_merge_skew(ms, n, line, sizeof line)) fprintf(out, "%s\n", line);
    fprintf(out, "\nVerdict per rank, leaking ranks first:\n");
    /* A report without a rank is named by its file: the column is as wide as
     * the widest name (up to 40), so the rows stay aligned. */
    int width = 8;
    for (size_t k = 0; k < n; k++) {
        char name[200];
        lw_model_name(&ms[k], name, sizeof name);
        int len = (int)strlen(name);
        if (len > width) width = len < 40 ? len : 40;
    }
    for (size_t k = 0; k < n; k++) {
        const lw_model *m = &ms[order[k]];
        char name[200], a[48], b[48], where[512] = "", shown[300];
        lw_model_name(m, name, sizeof name);
        lw_answer ans;
        lw_model_answer(m, &ans, where, sizeof where);
        fprintf(out, "  %-*s %-12s %-15s OOM %-13s %s  (%s)\n", width, name,
                lw_mverdict_label(m->verdict),
                m->verdict == LW_VERDICT_LEAK
                    ? lw_fmt_rate(m->growth.bytes_per_step, "step", a, sizeof a)
                    : "-",
                isfinite(m->growth.oom_eta_seconds)
                    ? lw_fmt_duration(m->growth.oom_eta_seconds, b, sizeof b)
                    : "-",
                ans.where ? ans.where : "-", lw_safe_text(m->path, shown, sizeof shown));
    }
    fprintf(out, "%zu of %zu leak%s\n", leaking, n, leaking == 1 ? "s" : "");
    if (ng) {
        fprintf(out, "\nPlaces that leak, across ranks:\n");
        for (size_t i = 0; i < ng; i++) {
            lw_merge_group_line(ms, &g[i], line, sizeof line);
            fprintf(out, "  %s\n", line);
        }
    }
    lw_merge_free(g, ng);
    free(order);
}

void lw_render_text(FILE *out, const lw_model *ms, size_t n, const lw_render_opts *o) {
    if (n == 1) {
        render_one(out, &ms[0], o);
        return;
    }
    render_merged(out, ms, n);
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        if (!o->details && !(isfinite(o->only_rank) && ms[i].rank == o->only_rank)) continue;
        fprintf(out, "\n================================================\n");
        render_one(out, &ms[i], o);
        shown = 1;
    }
    if (!shown)
        fprintf(out, "\nEach report in full: leakwatch report --details FILE...; one rank: "
                     "--rank N\n");
}
