/* SPDX-License-Identifier: Apache-2.0 */
/* The shared atomic writer (src/base/atomic_file.c): what it writes to, what
 * it refuses, and what a forked child or the exit can do to a file being
 * written. */
#include "atomic_file.h"

#include "../check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child forked while a report is written holds a copy of the writer's
 * buffer: what it writes, even enough to fill the buffer, never reaches the
 * file (the pid is checked where bytes go out). */
static int forking_emit(FILE *f, void *arg) {
    fputs("{\"a\": 1", f);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 200000; i++)
            fputc('x', f);
        fflush(f);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    fputs("}\n", f);
    return 0;
}

START_TEST(atomic_write_drops_forked_child_bytes) {
    char dir[] = "/tmp/lw-test-af.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/r.json", dir);
    ck_assert_int_eq(lw_atomic_write(path, forking_emit, NULL, NULL, 0), LW_AF_WRITTEN);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char got[64] = "";
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = '\0';
    ck_assert_str_eq(got, "{\"a\": 1}\n");
    unlink(path);
    rmdir(dir);
}
END_TEST

START_TEST(atomic_writer_targets) {
    char dir[] = "/tmp/lwopt.XXXXXX", p[128], why[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/out.json", dir);
    ck_assert_int_eq(lw_atomic_write_buf(p, "{}\n", 3, why, sizeof why), LW_AF_WRITTEN);
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(st.st_size, 3);
    unlink(p);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    ck_assert_int_eq(lw_atomic_write_buf(p, "{}\n", 3, why, sizeof why), LW_AF_FAILED);
    ck_assert_msg(strstr(why, "a FIFO") != NULL, "%s", why);
    unlink(p);
    ck_assert_int_eq(symlink("/dev/null", p), 0);
    ck_assert_int_eq(lw_atomic_write_buf(p, "{}\n", 3, why, sizeof why), LW_AF_OFF);
    ck_assert_int_eq(lstat(p, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    unlink(p);
    ck_assert_int_eq(lw_atomic_check("/dev/null", why, sizeof why), LW_AF_OFF);
    rmdir(dir);
}
END_TEST

/* Writes 200,000 numbered lines, checking after each that the stream holds
 * no buffered byte: exit() on another thread flushes and unbuffers every
 * stream without its lock, so a stdio buffer being filled while the job
 * exits could be torn. The writer buffers in memory of its own instead. */
static int emit_lines(FILE *f, void *arg) {
    long *pending = arg;
    for (int i = 0; i < 200000; i++) {
        if (fprintf(f, "%d\n", i) < 0) return -1;
        if (__fpending(f) > (size_t)*pending) *pending = (long)__fpending(f);
    }
    return ftello(f) > 0 ? 0 : -1;
}

START_TEST(atomic_writer_holds_nothing_for_exit_to_flush) {
    char dir[] = "/tmp/lwopt.XXXXXX", p[128], why[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/big.json", dir);
    long pending = 0;
    ck_assert_int_eq(lw_atomic_write(p, emit_lines, &pending, why, sizeof why), LW_AF_WRITTEN);
    ck_assert_int_eq(pending, 0);
    /* Every line, in order, across many of the writer's own flushes. */
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0, v;
    while (fscanf(f, "%d", &v) == 1) {
        ck_assert_int_eq(v, n);
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, 200000);
    unlink(p);
    rmdir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("atomic_file");
    TCase *tc = tcase_create("core");
    /* Forks and writes files: under ASan on a loaded machine it passed
     * Check's default 4 s once; the time is not what it tests. */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, atomic_write_drops_forked_child_bytes);
    tcase_add_test(tc, atomic_writer_targets);
    tcase_add_test(tc, atomic_writer_holds_nothing_for_exit_to_flush);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
