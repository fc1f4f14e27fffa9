/* SPDX-License-Identifier: Apache-2.0 */
#include "fmt.h"

#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

char *lw_fmt_bytes(double b, char *out, size_t n) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (!isfinite(b)) {
        snprintf(out, n, "?");
        return out;
    }
    int u = 0;
    double a = fabs(b);
    while (a >= 1024 && u < 6)
        a /= 1024, b /= 1024, u++;
    if (u == 0)
        snprintf(out, n, "%.0f B", b);
    else
        snprintf(out, n, "%.*f %s", a < 10 ? 2 : 1, b, units[u]);
    return out;
}

void lw_format_bytes(double b, char *out, size_t n) {
    lw_fmt_bytes(b, out, n);
}

char *lw_fmt_rate(double b, const char *per, char *out, size_t n) {
    char tmp[48];
    if (!isfinite(b)) {
        snprintf(out, n, "?/%s", per);
        return out;
    }
    lw_fmt_bytes(b, tmp, sizeof tmp);
    snprintf(out, n, "%s%s/%s", b > 0 ? "+" : "", tmp, per);
    return out;
}

char *lw_fmt_duration(double s, char *out, size_t n) {
    if (!isfinite(s) || s < 0) {
        snprintf(out, n, "?");
    } else if (s < 1) {
        snprintf(out, n, "%.0f ms", s * 1000);
    } else if (s < 60) {
        snprintf(out, n, "%.1f s", s);
    } else if (s < 3600) {
        snprintf(out, n, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
    } else if (s < 86400) {
        snprintf(out, n, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
    } else if (s < 86400.0 * 1000) {
        snprintf(out, n, "%d d %d h", (int)(s / 86400), (int)fmod(s / 3600, 24));
    } else {
        snprintf(out, n, "over 1000 days");
    }
    return out;
}

char *lw_fmt_count(double v, char *out, size_t n) {
    if (!isfinite(v) || fabs(v) >= 1e18) {
        snprintf(out, n, isfinite(v) ? "%.3g" : "?", v);
        return out;
    }
    char digits[32];
    long long x = llround(v);
    snprintf(digits, sizeof digits, "%lld", x < 0 ? -x : x);
    size_t len = strlen(digits), o = 0;
    if (n == 0) return out;
    if (x < 0 && o + 1 < n) out[o++] = '-';
    for (size_t i = 0; i < len && o + 1 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0 && o + 1 < n) out[o++] = ',';
        if (o + 1 < n) out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}

char *lw_fmt_int(double v, char *out, size_t n) {
    if (isfinite(v) && fabs(v) < 1e18)
        snprintf(out, n, "%.0f", v);
    else
        snprintf(out, n, isfinite(v) ? "%.3g" : "?", v);
    return out;
}

int lw_answer_rose_once(double slope, double span, double noise_bin) {
    if (!isfinite(slope) || !(slope > 0) || !isfinite(span) || !(span > 0)) return 0;
    double noise = isfinite(noise_bin) && noise_bin > 256 ? noise_bin : 256;
    return slope * span > 8 * noise;
}

void lw_answer_init(lw_answer *a) {
    memset(a, 0, sizeof *a);
    a->unit = "step";
    a->rate = a->lo = a->hi = a->per_second = a->onset = a->steps = NAN;
    a->free_bytes = a->total_bytes = a->oom_seconds = a->oom_steps = NAN;
    a->computed_at = a->where_rate = a->where_live = a->onset_hi = NAN;
    a->more_steps = NAN;
}

void lw_answer_oom(double free_bytes, double per_second, double per_step, double *seconds,
                   double *steps) {
    *seconds = *steps = NAN;
    if (!isfinite(free_bytes) || free_bytes < 0) return;
    if (isfinite(per_second) && per_second > 0) *seconds = free_bytes / per_second;
    if (isfinite(per_step) && per_step > 0) *steps = free_bytes / per_step;
}

void lw_fmt_add(char *out, size_t n, size_t *o, const char *fmt, ...) {
    if (*o >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0) *o = *o + (size_t)w < n ? *o + (size_t)w : n - 1;
}

/* ", +97.6 KiB/s": the growth per second beside the growth per unit (a
 * server's user thinks in requests and in hours); nothing when unknown or
 * the unit is already a second's worth of time. */
static int add_per_second(char *out, size_t n, size_t *o, const lw_answer *a) {
    char ps[64];
    if (!(isfinite(a->per_second) && a->per_second > 0)) return 0;
    lw_fmt_add(out, n, o, ", %s", lw_fmt_rate(a->per_second, "s", ps, sizeof ps));
    return 1;
}

const char *lw_oom_cause_text(const char *cause) {
    static const char *const words[][2] = {
        {"model_and_optimizer", "the model and its optimizer do not fit"},
        {"activations", "activations: the step needs more than the device has"},
        {"leak", "a leak filled the device"},
        {"fragmentation", "fragmentation"},
        {"outside_pytorch", "memory held outside PyTorch"},
    };
    for (size_t i = 0; cause && i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(cause, words[i][0])) return words[i][1];
    return cause ? cause : "?";
}

char *lw_answer_line(const lw_answer *a, char *out, size_t n) {
    size_t o = 0;
    char r[64], lo[48], hi[48], d[48], s[48], f[48], t[48];
    const char *unit = a->unit ? a->unit : "step";
    if (n == 0) return out;
    out[0] = '\0';
    int verdict = lw_verdict_parse(a->verdict);
    int host = a->kind && !strcmp(a->kind, "pinned_host");
    if (a->oom_cause) {
        lw_fmt_add(out, n, &o, "out of memory: %s", lw_oom_cause_text(a->oom_cause));
        if (a->oom_evidence) lw_fmt_add(out, n, &o, ": %s", a->oom_evidence);
        if (a->oom_remedy) lw_fmt_add(out, n, &o, "; remedy: %s", a->oom_remedy);
        lw_fmt_add(out, n, &o, ". ");
    }
    if (verdict == LW_VERDICT_LEAK) {
        lw_fmt_add(out, n, &o, host ? "LEAK of pinned host memory" : "LEAK");
        if (a->where) lw_fmt_add(out, n, &o, " in %s", a->where);
        lw_fmt_add(out, n, &o, ": %s", lw_fmt_rate(a->rate, unit, r, sizeof r));
        if (isfinite(a->lo) && isfinite(a->hi))
            lw_fmt_add(out, n, &o, " (95%% CI %s .. %s)", lw_fmt_bytes(a->lo, lo, sizeof lo),
                       lw_fmt_bytes(a->hi, hi, sizeof hi));
        const char *sep = add_per_second(out, n, &o, a) ? "," : "";
        if (isfinite(a->onset) && isfinite(a->onset_hi) && a->onset_hi > a->onset) {
            /* Coarse bins: the onset is known to a bin's steps. */
            lw_fmt_add(out, n, &o, "%s starting within %ss %s", sep, unit,
                       lw_fmt_count(a->onset, s, sizeof s));
            lw_fmt_add(out, n, &o, "-%s", lw_fmt_count(a->onset_hi, s, sizeof s));
        } else if (isfinite(a->onset)) {
            lw_fmt_add(out, n, &o, "%s since %s %s", sep, unit,
                       lw_fmt_count(a->onset, s, sizeof s));
        }
        if (isfinite(a->oom_seconds) || isfinite(a->oom_steps)) {
            lw_fmt_add(out, n, &o, host ? "; host memory used up in " : "; out of memory in ");
            if (isfinite(a->oom_seconds))
                lw_fmt_add(out, n, &o, "%s", lw_fmt_duration(a->oom_seconds, d, sizeof d));
            if (isfinite(a->oom_steps))
                lw_fmt_add(out, n, &o, isfinite(a->oom_seconds) ? " (%s %ss)" : "%s %ss",
                           lw_fmt_count(a->oom_steps, s, sizeof s), unit);
            lw_fmt_add(out, n, &o, " at this rate");
        } else if (a->oom_cause && !host) {
            /* It ran out already: no projection. */
        } else {
            lw_fmt_add(out, n, &o,
                       host ? "; no out-of-memory projection (host memory unknown)"
                            : "; no out-of-memory projection (device memory unknown)");
        }
        if (isfinite(a->free_bytes)) {
            lw_fmt_add(out, n, &o, host ? " (%s of host memory available" : " (%s free",
                       lw_fmt_bytes(a->free_bytes, f, sizeof f));
            if (isfinite(a->total_bytes))
                lw_fmt_add(out, n, &o, " of %s", lw_fmt_bytes(a->total_bytes, t, sizeof t));
            lw_fmt_add(out, n, &o, ")");
        }
    } else {
        const char *v = verdict == LW_VERDICT_NO_LEAK        ? "no leak"
                        : verdict == LW_VERDICT_INCONCLUSIVE ? "inconclusive"
                        : verdict == LW_VERDICT_NOTHING_SEEN ? "nothing seen"
                                                             : "unknown verdict";
        lw_fmt_add(out, n, &o, "%s", v);
        if (verdict == LW_VERDICT_NOTHING_SEEN)
            lw_fmt_add(out, n, &o, ": no CUDA allocation was seen since the attach");
        else if (verdict == LW_VERDICT_NO_LEAK && a->rose_once)
            lw_fmt_add(out, n, &o,
                       ": the floor of live memory rose, then held level (no growth per %s)", unit);
        else if (verdict == LW_VERDICT_NO_LEAK)
            lw_fmt_add(out, n, &o, ": the floor of live memory is flat");
        else if (verdict == LW_VERDICT_INCONCLUSIVE &&
                 ((isfinite(a->rate) && a->rate > 0) || (a->reason && a->reason[0]))) {
            if (isfinite(a->rate) && a->rate > 0) {
                /* Growth seen but not yet confirmed: its size, never hidden. */
                lw_fmt_add(out, n, &o, ": the floor rises %s",
                           lw_fmt_rate(a->rate, unit, r, sizeof r));
                if (isfinite(a->lo) && isfinite(a->hi))
                    lw_fmt_add(out, n, &o, " (95%% CI %s .. %s)",
                               lw_fmt_bytes(a->lo, lo, sizeof lo),
                               lw_fmt_bytes(a->hi, hi, sizeof hi));
                add_per_second(out, n, &o, a);
                lw_fmt_add(out, n, &o, ", not yet confirmed");
            }
            if (a->reason && a->reason[0]) {
                /* A report's text, read back: no control character gets through. */
                char why[200];
                size_t k = 0;
                for (const char *c = a->reason; *c && k + 1 < sizeof why; c++)
                    why[k++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
                why[k] = '\0';
                lw_fmt_add(out, n, &o, isfinite(a->rate) && a->rate > 0 ? " (%s)" : ": %s", why);
            }
        } else if (verdict == LW_VERDICT_INCONCLUSIVE)
            lw_fmt_add(out, n, &o, ": not enough %ss or too much noise to decide", unit);
        if (isfinite(a->steps))
            lw_fmt_add(out, n, &o, " over %s %ss", lw_fmt_count(a->steps, s, sizeof s), unit);
        if (a->where) {
            lw_fmt_add(out, n, &o, "; %s site: %s", a->where_grows ? "growing" : "largest",
                       a->where);
            if (isfinite(a->where_live))
                lw_fmt_add(out, n, &o, " (%s live)", lw_fmt_bytes(a->where_live, f, sizeof f));
        }
        /* The one thing that would decide it. */
        if (verdict == LW_VERDICT_INCONCLUSIVE) {
            int more = isfinite(a->more_steps) && a->more_steps >= 1;
            if (!strcmp(unit, "interval"))
                lw_fmt_add(out, n, &o,
                           "; to decide: mark steps (leakwatch_step() in C, leakwatch.step() in "
                           "Python) or a shorter --interval");
            else
                lw_fmt_add(out, n, &o, "; to decide: run %s", more ? "about " : "more steps");
            if (more)
                lw_fmt_add(out, n, &o, "%s%s more %ss",
                           strcmp(unit, "interval") ? "" : ", or about ",
                           lw_fmt_count(ceil(a->more_steps), s, sizeof s), unit);
        }
    }
    if (isfinite(a->computed_at))
        lw_fmt_add(out, n, &o, " [as of %s %s]", unit, lw_fmt_count(a->computed_at, s, sizeof s));
    return out;
}
