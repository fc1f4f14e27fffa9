/* The detector's current conclusion, as a plain copy: what the control socket
 * and the Prometheus writer show between reports. The detector (detector.c)
 * provides lw_growth_snapshot; until it does, a weak default in prometheus.c
 * answers -1 ("nothing known yet"). */
#ifndef LW_GROWTH_VIEW_H
#define LW_GROWTH_VIEW_H

#include <stdint.h>

struct lw_growth_view {
    int verdict; /* 0 inconclusive, 1 leak, 2 no_leak */
    double bytes_per_step, bytes_per_second, oom_eta_seconds, p_value; /* NAN when unknown */
    uint64_t steps;
};

/* Fills out; 0, or -1 when the detector has no view yet (out untouched). */
int lw_growth_snapshot(struct lw_growth_view *out);

#endif
