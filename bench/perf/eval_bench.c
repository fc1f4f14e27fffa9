/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's evaluations of one series whose floor does not move, in
 * instructions (issue 44: each evaluation of a flat series cost as much as a
 * moving one's). Feeds POINTS points into one tracked series (tracked.c, the
 * schedule and the decision the shim runs) and evaluates it whenever it is
 * due, as growth.c does; prints the evaluations, the verdict and a checksum
 * of every field of every evaluation and of the announced verdict, so that
 * two builds can be shown to give the same results. Count its instructions
 * with callgrind, the evaluations only:
 *
 *   valgrind --tool=callgrind --toggle-collect=lw_tracked_evaluate \
 *       build/bench/eval_bench KIND [POINTS]
 *
 * (instructions / evaluations: the cost of one). KIND:
 *   flat      every point 4 bytes (a steady job's tensors, its pinned memory
 *             had it been pinned before the first step)
 *   first     0 bytes at the first point, then 4 (pinned memory as a job
 *             shows it: the step that pinned it has a floor of 0)
 *   segments  2 MiB at the first point, then 68 MiB (a caching allocator's
 *             segments reserved in the first step, held from then on)
 *   noise     4 GiB and a few KiB of noise (the cost of a series that moves,
 *             for comparison)
 * POINTS: 260 by default (the 60 steps of warm-up and 200 steps). */
#include "tracked.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a over the bytes of each value (doubles by their bits). */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
static uint64_t mix_d(uint64_t h, double v) {
    return mix(h, &v, sizeof v);
}
static uint64_t mix_s(uint64_t h, const char *s) {
    return s ? mix(h, s, strlen(s) + 1) : mix(h, "", 1);
}

static uint64_t mix_eval(uint64_t h, const lw_tracked *t) {
    const lw_growth *g = &t->last;
    int ints[] = {(int)g->verdict, g->window, g->supports_leak, (int)t->decision.announced,
                  t->decision.consecutive};
    h = mix(h, ints, sizeof ints);
    double d[] = {g->slope,    g->lo,         g->hi,
                  g->p_value,  g->onset_x,    g->bytes_per_second,
                  g->guard_p,  g->p_recent,   g->onset_lo,
                  g->onset_hi, g->noise_bin,  g->noise_step,
                  g->min_rate, g->more_steps, t->decision.first_leak_x};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        h = mix_d(h, d[i]);
    h = mix_s(h, g->reason);
    h = mix_s(h, g->overruled_by);
    h = mix_s(h, g->guard_why);
    return mix_s(h, t->decision.reason);
}

static lw_tracked series;

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "flat";
    long points = argc > 2 ? strtol(argv[2], NULL, 10) : 260;
    if (points <= 0 || (strcmp(kind, "flat") && strcmp(kind, "first") && strcmp(kind, "segments") &&
                        strcmp(kind, "noise"))) {
        fprintf(stderr, "usage: eval_bench flat|first|segments|noise [POINTS]\n");
        return 2;
    }
    lw_tracked_init(&series, strcmp(kind, "first") ? 0 : LW_TRACKED_RISES);
    uint64_t h = 1469598103934665603ull, rng = 7;
    int evaluations = 0;
    for (long s = 1; s <= points; s++) {
        double floor = 4;
        if (!strcmp(kind, "first")) floor = s == 1 ? 0 : 4;
        if (!strcmp(kind, "segments")) floor = s == 1 ? 2097152 : 71303168;
        if (!strcmp(kind, "noise")) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            floor = 4294967296.0 + (double)((rng >> 33) % 8192);
        }
        lw_tracked_add(&series, (double)s, s * 0.001, floor, floor);
        if (lw_tracked_due(&series)) {
            lw_tracked_evaluate(&series);
            evaluations++;
            h = mix_eval(h, &series);
        }
    }
    printf("%s %ld points: %d evaluations, verdict %d, p %.17g, min_rate %.17g, checksum %016llx\n",
           kind, points, evaluations, (int)series.decision.announced, series.last.p_value,
           series.last.min_rate, (unsigned long long)h);
    return 0;
}
