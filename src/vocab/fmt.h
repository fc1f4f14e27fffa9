/* SPDX-License-Identifier: Apache-2.0 */
/* Numbers as people read them, and the one-line answer built from them: the
 * same code in every output of the library (the live warning, the exit
 * summary) and of the command (text, HTML, top), so that the same state of a
 * run reads the same everywhere. */
#ifndef LW_FMT_H
#define LW_FMT_H

#include <stddef.h>

/* Each writes at most n bytes and returns out. Non-finite values print as
 * "?" so a hostile report can never produce "nan GiB". */
char *lw_fmt_bytes(double bytes, char *out, size_t n);                 /* "1.50 GiB", "512 B" */
char *lw_fmt_rate(double bytes, const char *per, char *out, size_t n); /* "+1.50 MiB/step" */
char *lw_fmt_duration(double seconds, char *out, size_t n);            /* "3 h 12 min", "450 ms" */
/* Appends printf-style text to out (n bytes) at *o, never past its end: a
 * sentence built in pieces; *o stays below n, the text cut where it ends. */
void lw_fmt_add(char *out, size_t n, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
char *lw_fmt_count(double v, char *out, size_t n); /* "12,345" */
char *lw_fmt_int(double v, char *out, size_t n);   /* "12345", "?" */

/* The library's older name for lw_fmt_bytes. */
void lw_format_bytes(double bytes, char *out, size_t outlen);

/* What a run concluded, as every output states it. Unknown numbers are NAN,
 * unknown strings NULL. */
typedef struct {
    const char *verdict; /* a verdict's name (verdict.h); else unknown */
    const char *where;   /* the place to look: "train.py:27 in train" */
    const char *unit;    /* "step" or "interval" */
    double rate, lo, hi; /* growth of the floor per unit, with its 95% interval */
    double per_second;   /* growth per second */
    double onset;        /* unit where growth began */
    double steps;        /* units seen */
    double free_bytes;   /* device memory free, and total */
    double total_bytes;
    double oom_seconds; /* time and units to out-of-memory at this rate */
    double oom_steps;
    double computed_at; /* the unit this was computed at, for an answer that may be older
                           than the state it is shown with (the live warning); NAN: now */
    double where_rate;  /* growth per unit of the named site (NAN: not a leaking site) */
    double where_live;  /* bytes the named site holds (shown when there is no leak) */
    double onset_hi;    /* the last unit of the onset's bin: the onset is a range
                           "within steps onset-onset_hi" when above onset; NAN: a point */
    /* An inconclusive answer: the decision's own reason ("the floor grows;
     * confirming (2 of 3 ...)"; NULL: unknown), the units still needed at the
     * current rate (NAN: unknown), and whether the named site is one that
     * grows (1) rather than the largest (0). */
    const char *reason;
    double more_steps;
    int where_grows;
    /* The kind of memory a leak is of: NULL or "device" (device memory, the
     * default), "pinned_host" (page-locked host RAM: free_bytes and
     * total_bytes are then the host's available and total memory). */
    const char *kind;
    /* The post-mortem of an out-of-memory (the report's "oom"): its cause
     * (model_and_optimizer, activations, leak, fragmentation,
     * outside_pytorch), evidence and remedy; NULL: none. The line then leads
     * with it and forecasts no out-of-memory. */
    const char *oom_cause, *oom_evidence, *oom_remedy;
    /* A "no leak" whose floor rose once and then held level (a jump, or a
     * ramp that ended: lw_answer_rose_once): said so, not "flat" (1), and
     * no per-step figure beside it. */
    int rose_once;
} lw_answer;

/* Whether a floor the detector found not growing step after step still rose
 * over its window: the window's straight-line fit (slope bytes per step
 * over span steps) climbs more than 8 times the noise of one bin's floor
 * (noise_bin; at least one 256-byte granule). That rise happened once: the
 * fit spreads it over the steps, so its slope is no rate of growth. The one
 * rule for the library's answer and the command's. */
int lw_answer_rose_once(double slope, double span, double noise_bin);

/* An out-of-memory cause in words ("the model and its optimizer do not
 * fit"); the name itself when unknown. */
const char *lw_oom_cause_text(const char *cause);

/* An answer with every number unknown. */
void lw_answer_init(lw_answer *a);

/* Time and steps until the free memory is used up at the given rates; NAN
 * when the free memory is unknown or the memory does not grow. The only place
 * the projection is computed. */
void lw_answer_oom(double free_bytes, double per_second, double per_step, double *seconds,
                   double *steps);

/* The answer in one line, without a trailing newline, e.g.
 * "LEAK in train.py:27 in train: +512 B/step (95% CI 510 B .. 514 B) since
 * step 300; out of memory in 6 h 10 min (43,210 steps) at this rate (79.9 GiB
 * free of 80.0 GiB)". Returns out. */
char *lw_answer_line(const lw_answer *a, char *out, size_t n);

#endif
