#include "fmt.h"

#include <stdio.h>

void lw_format_bytes(double b, char *out, size_t n) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    double a = b < 0 ? -b : b;
    while (a >= 1024 && u < 5)
        a /= 1024, b /= 1024, u++;
    if (u == 0)
        snprintf(out, n, "%.0f B", b);
    else
        snprintf(out, n, "%.1f %s", b, units[u]);
}
