/* SPDX-License-Identifier: Apache-2.0 */
/* Plants symbolic links where leakwatch will write its report, as a hostile
 * user of a shared folder could, then allocates and exits.
 *
 *   rt_safety_files plant
 *
 * With LEAKWATCH_REPORT=DIR/report.json: DIR/victim-tmp and DIR/victim-report
 * hold "precious\n"; DIR/.report.json.PID.tmp (the temporary file this
 * process would use) links to the first, DIR/report.json to the second.
 *
 *   rt_safety_files plantfallback
 *
 * As another user of a shared $TMPDIR could: a folder at $TMPDIR/leakwatch-PID.json,
 * the fallback report's name when LEAKWATCH_REPORT cannot be written (issue
 * 43), and a link to $TMPDIR/victim ("precious\n") at
 * $TMPDIR/.leakwatch-PID.json.PID.tmp; then allocates and exits. */
#include "safety.h"

#include <sys/stat.h>
#include <unistd.h>

static void precious(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) exit(3);
    fputs("precious\n", f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "plantfallback")) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp) return 2;
        char path[4300], target[4300];
        snprintf(path, sizeof path, "%s/leakwatch-%ld.json", tmp, (long)getpid());
        if (mkdir(path, 0700) != 0) return 4;
        snprintf(target, sizeof target, "%s/victim", tmp);
        precious(target);
        snprintf(path, sizeof path, "%s/.leakwatch-%ld.json.%ld.tmp", tmp, (long)getpid(),
                 (long)getpid());
        if (symlink(target, path) != 0) return 5;
        void *p;
        CHECK(cudaMalloc(&p, 4096));
        printf("ok\n");
        return 0;
    }
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
