/* SPDX-License-Identifier: Apache-2.0 */
/* The one parser of LEAKWATCH_* values (src/base/options.c), the escaping of
 * the shim's stderr lines (src/base/log.c), the command's text sanitizer and
 * the shared atomic writer (src/base/atomic_file.c). */
#include "../check_run.h"

#include "atomic_file.h"
#include "cli.h"
#include "log.h"
#include "options.h"

#include <check.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const lw_option_def *def(lw_option_id id) {
    return &lw_options_table(NULL)[id];
}

static int parse(lw_option_id id, const char *text, long *v) {
    char err[160];
    return lw_option_parse(def(id), text, v, err, sizeof err);
}

START_TEST(integers_are_strict) {
    long v = 0;
    ck_assert_int_eq(parse(LW_OPT_MAX_FRAMES, "32", &v), 0);
    ck_assert_int_eq(v, 32);
    static const char *const bad[] = {" 32", "+32", "32 ", "0x20", "", "3 2", "\t32", "-", NULL};
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(parse(LW_OPT_MAX_FRAMES, bad[i], &v) != 0, "accepted \"%s\"", bad[i]);
    ck_assert_int_ne(parse(LW_OPT_REPORT_EVERY, "-1", &v), 0); /* out of range */
    ck_assert_int_eq(parse(LW_OPT_REPORT_EVERY, "0", &v), 0);
}
END_TEST

START_TEST(booleans_as_documented) {
    long v = -1;
    static const char *const yes[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON", NULL};
    static const char *const no[] = {"0", "false", "no", "off", "OFF", NULL};
    static const char *const bad[] = {"10", " 1", "onn", "y", "", "2", NULL};
    for (int i = 0; yes[i]; i++) {
        ck_assert_int_eq(parse(LW_OPT_DISABLE, yes[i], &v), 0);
        ck_assert_int_eq(v, 1);
    }
    for (int i = 0; no[i]; i++) {
        ck_assert_int_eq(parse(LW_OPT_DISABLE, no[i], &v), 0);
        ck_assert_int_eq(v, 0);
    }
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(parse(LW_OPT_DISABLE, bad[i], &v) != 0, "accepted \"%s\"", bad[i]);
    /* The same words for a setting that also takes others (LEAKWATCH_TORCH_STEPS). */
    for (int i = 0; yes[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(yes[i]), 1);
    for (int i = 0; no[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(no[i]), 0);
    for (int i = 0; bad[i]; i++)
        ck_assert_int_eq(lw_option_bool_word(bad[i]), -1);
    ck_assert_int_eq(lw_option_bool_word("iteration"), -1);
    ck_assert_int_eq(lw_option_bool_word(NULL), -1);
}
END_TEST

/* What leakwatch_enabled() reads before the library starts. */
START_TEST(one_setting_from_the_environment) {
    long v = -1;
    unsetenv("LEAKWATCH_DISABLE");
    ck_assert_int_eq(lw_option_env(LW_OPT_DISABLE, &v), 0);
    ck_assert_int_eq(v, 0);
    setenv("LEAKWATCH_DISABLE", "on", 1);
    ck_assert_int_eq(lw_option_env(LW_OPT_DISABLE, &v), 1);
    ck_assert_int_eq(v, 1);
    setenv("LEAKWATCH_DISABLE", "10", 1); /* bad: the default */
    lw_option_env(LW_OPT_DISABLE, &v);
    ck_assert_int_eq(v, 0);
    unsetenv("LEAKWATCH_DISABLE");
}
END_TEST

START_TEST(log_lines_escape_controls) {
    char out[256];
    lw_log_escape("a\nb\x1b[1m", out, sizeof out);
    ck_assert_str_eq(out, "a\\x0ab\\x1b[1m");
    lw_log_escape("csi \xc2\x9b del \x7f lone \x9b", out, sizeof out);
    ck_assert_str_eq(out, "csi \\xc2\\x9b del \\x7f lone \\x9b");
    lw_log_escape("caf\xc3\xa9 \xe2\x82\xac \xc2\xa0", out, sizeof out); /* é, €, NBSP */
    ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x82\xac \xc2\xa0");
    /* Never cut in the middle of an escape. */
    char small[6];
    lw_log_escape("ab\ncd", small, sizeof small);
    ck_assert_str_eq(small, "ab");
}
END_TEST

START_TEST(command_text_drops_c1) {
    char out[64];
    ck_assert_str_eq(lw_safe_text("a\xc2\x9b[31mb", out, sizeof out), "a?[31mb");
    ck_assert_str_eq(lw_safe_text("\x1b\x7f\x9b", out, sizeof out), "???");
    ck_assert_str_eq(lw_safe_text("caf\xc3\xa9 \xc4\x81", out, sizeof out),
                     "caf\xc3\xa9 \xc4\x81"); /* 0x81 inside a character is kept */
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
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_test(tc, integers_are_strict);
    tcase_add_test(tc, booleans_as_documented);
    tcase_add_test(tc, one_setting_from_the_environment);
    tcase_add_test(tc, log_lines_escape_controls);
    tcase_add_test(tc, command_text_drops_c1);
    tcase_add_test(tc, atomic_writer_targets);
    tcase_add_test(tc, atomic_writer_holds_nothing_for_exit_to_flush);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
