/* SPDX-License-Identifier: Apache-2.0 */
/* The shared atomic writer (src/base/atomic_file.c): what it writes to, what
 * it refuses, and what a forked child or the exit can do to a file being
 * written. */
#include "atomic_file.h"

#include "../check_run.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
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

/* The names in dir that end in ".tmp". */
static int temporaries_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        n += l > 4 && !strcmp(e->d_name + l - 4, ".tmp");
    }
    if (d) closedir(d);
    return n;
}

static int emit_seeing_folder(FILE *f, void *dir) {
    fprintf(f, "{\"temporaries\": %d}\n", temporaries_in(dir));
    return 0;
}

/* While the content is written, its temporary has no name in the folder
 * (O_TMPFILE): a writer killed then leaves nothing (issue 43, item 9: a
 * named one stayed). A new file and the replacement of an earlier one. */
START_TEST(the_temporary_has_no_name_while_written) {
    char dir[] = "/tmp/lwopt.XXXXXX", p[128], why[512], buf[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
#ifdef O_TMPFILE
    int probe = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
#else
    int probe = -1;
#endif
    if (probe < 0) {
        printf("test_atomic_file: no O_TMPFILE on /tmp here: named temporaries\n");
        rmdir(dir);
        return;
    }
    close(probe);
    snprintf(p, sizeof p, "%s/r.json", dir);
    for (int round = 0; round < 2; round++) {
        ck_assert_int_eq(lw_atomic_write(p, emit_seeing_folder, dir, why, sizeof why),
                         LW_AF_WRITTEN);
        FILE *f = fopen(p, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
        fclose(f);
        ck_assert_str_eq(buf, "{\"temporaries\": 0}\n");
        ck_assert_int_eq(temporaries_in(dir), 0);
        struct stat st;
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
    }
    unlink(p);
    rmdir(dir);
}
END_TEST

/* lw_atomic_forget removes the temporaries of that pid for that path
 * only: regular files of ours named .NAME.PID.SEQ.tmp. */
START_TEST(forget_removes_one_process_temporaries) {
    char dir[] = "/tmp/lwopt.XXXXXX", p[128], f[6][160];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/r.json", dir);
    const char *names[] = {".r.json.4242.0.tmp", ".r.json.4242.17.tmp", ".r.json.4243.0.tmp",
                           ".r.json.4242.x.tmp", ".q.json.4242.0.tmp",  ".r.json.42420.1.tmp"};
    for (int i = 0; i < 6; i++) {
        snprintf(f[i], sizeof f[i], "%s/%s", dir, names[i]);
        FILE *o = fopen(f[i], "w");
        ck_assert_ptr_nonnull(o);
        fclose(o);
    }
    ck_assert_int_eq(lw_atomic_forget(p, 4242), 2);
    for (int i = 0; i < 6; i++)
        ck_assert_msg((access(f[i], F_OK) == 0) == (i >= 2), "%s", names[i]);
    for (int i = 2; i < 6; i++)
        unlink(f[i]);
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
    tcase_add_test(tc, the_temporary_has_no_name_while_written);
    tcase_add_test(tc, forget_removes_one_process_temporaries);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
