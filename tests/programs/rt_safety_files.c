/* SPDX-License-Identifier: Apache-2.0 */
/* Plants symbolic links where leakwatch will write its report, as a hostile
 * user of a shared folder could, then allocates and exits.
 *
 *   rt_safety_files plant
 *
 * With LEAKWATCH_REPORT=DIR/report.json: DIR/victim-tmp and DIR/victim-report
 * hold "precious\n"; DIR/.report.json.PID.tmp (the temporary file this
 * process would use) links to the first, DIR/report.json to the second. */
#include "safety.h"

#include <unistd.h>

static void precious(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) exit(3);
    fputs("precious\n", f);
    fclose(f);
}

int main(int argc, char **argv) {
    const char *report = getenv("LEAKWATCH_REPORT");
    if (argc < 2 || !report) return 2;
    char dir[4096], path[4300], target[4300];
    snprintf(dir, sizeof dir, "%s", report);
    char *slash = strrchr(dir, '/');
    if (!slash) return 2;
    *slash = '\0';
    snprintf(target, sizeof target, "%s/victim-tmp", dir);
    precious(target);
    snprintf(path, sizeof path, "%s/.report.json.%ld.tmp", dir, (long)getpid());
    if (symlink(target, path) != 0) return 4;
    snprintf(target, sizeof target, "%s/victim-report", dir);
    precious(target);
    if (symlink(target, report) != 0) return 5;
    void *p;
    CHECK(cudaMalloc(&p, 4096));
    printf("ok\n");
    return 0;
}
