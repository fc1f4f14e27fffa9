/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the base layer's utilities (src/base): the JSON writer read
 * back by the command's reader, output path templates, the control-socket
 * folder checks; and of the report's vocabulary (src/vocab): byte formatting
 * and the verdicts' names; the lock-order check of debug builds. */
#include "atomic_file.h"
#include "control_path.h"
#include "dynamic.h"
#include "fmt.h"
#include "json_doc.h"
#include "json_write.h"
#include "lock_order.h"
#include "path_template.h"
#include "verdict.h"

#include "../check_run.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(json_write_reads_back) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    lw_jw_object(&w, NULL);
    lw_jw_str(&w, "plain", "train.py");
    lw_jw_str(&w, "controls", "a\"b\\c\n\x1b[31m\x7f");
    lw_jw_strn(&w, "nul", "x\0y", 3);
    lw_jw_str(&w, "bad_utf8", "caf\xe9");
    lw_jw_str(&w, "none", NULL);
    lw_jw_int(&w, "min", INT64_MIN);
    lw_jw_uint(&w, "max", (uint64_t)INT64_MAX);
    lw_jw_double(&w, "half", 0.5);
    lw_jw_double(&w, "nan", NAN);
    lw_jw_double(&w, "inf", -INFINITY);
    lw_jw_bool(&w, "yes", 1);
    lw_jw_array(&w, "list");
    lw_jw_int(&w, NULL, 1);
    lw_jw_object(&w, NULL);
    lw_jw_end(&w);
    lw_jw_end(&w);
    lw_jw_end(&w);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    char err[200];
    lw_json *r = lw_json_parse(buf, len, NULL, err, sizeof err);
    ck_assert_msg(r != NULL, "%s in:\n%s", err, buf);
    ck_assert_str_eq(lw_json_string(lw_json_get(r, "controls")), "a\"b\\c\n\x1b[31m\x7f");
    ck_assert_uint_eq(lw_json_len(lw_json_get(r, "nul")), 3);
    ck_assert_str_eq(lw_json_string(lw_json_get(r, "bad_utf8")), "caf\xef\xbf\xbd");
    ck_assert(lw_json_is_null(lw_json_get(r, "none")));
    long long i;
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "min"), &i), 0);
    ck_assert(i == INT64_MIN);
    ck_assert_int_eq(lw_json_int64(lw_json_get(r, "max"), &i), 0);
    ck_assert(i == INT64_MAX);
    ck_assert(lw_json_number(lw_json_get(r, "half"), 0) == 0.5);
    ck_assert(lw_json_is_null(lw_json_get(r, "nan")));
    ck_assert(lw_json_is_null(lw_json_get(r, "inf")));
    ck_assert_int_eq(lw_json_bool(lw_json_get(r, "yes"), 0), 1);
    ck_assert_uint_eq(lw_json_len(lw_json_get(r, "list")), 2);
    /* Raw control bytes never reach the file. */
    for (size_t k = 0; k < len; k++)
        ck_assert_msg((unsigned char)buf[k] >= 0x20 || buf[k] == '\n' || buf[k] == ' ',
                      "raw control byte %#x at %zu", buf[k], k);
    lw_json_free(r);
    free(buf);
}
END_TEST

/* A document with every kind of value, long strings included. */
static void some_doc(lw_jw *w, long long *tells, int *ntells) {
    lw_jw_object(w, NULL);
    tells[(*ntells)++] = lw_jw_tell(w);
    lw_jw_str(w, "controls", "a\"b\\c\n\x1b[31m\x7f caf\xc3\xa9 caf\xe9 \xf0\x9f\x98\x80");
    char long_s[5000];
    for (size_t i = 0; i < sizeof long_s - 1; i++)
        long_s[i] = (char)('a' + i % 26);
    long_s[sizeof long_s - 1] = '\0';
    lw_jw_str(w, "long", long_s);
    tells[(*ntells)++] = lw_jw_tell(w);
    lw_jw_array(w, "list");
    for (int i = 0; i < 100; i++) {
        lw_jw_object(w, NULL);
        lw_jw_int(w, "i", -i);
        lw_jw_uint(w, "u", (uint64_t)i * 1000003u);
        lw_jw_double(w, "d", i / 7.0);
        lw_jw_bool(w, "b", i & 1);
        lw_jw_null(w, "n");
        lw_jw_raw(w, "r", "[1,2]", 5);
        lw_jw_end(w);
        tells[(*ntells)++] = lw_jw_tell(w);
    }
    lw_jw_end(w);
    lw_jw_end(w);
}

/* The writer's own buffer (the report's) changes nothing in the output, at
 * any buffer size, and lw_jw_tell counts what is still in it. */
START_TEST(json_write_buffered_same_bytes) {
    char *want = NULL, *got = NULL;
    size_t wlen = 0, glen = 0;
    long long wt[128], gt[128];
    int nw = 0, ng = 0;
    FILE *f = open_memstream(&want, &wlen);
    lw_jw w;
    lw_jw_init(&w, f, 1);
    some_doc(&w, wt, &nw);
    ck_assert_int_eq(lw_jw_failed(&w), 0);
    fclose(f);
    static const size_t sizes[] = {1, 2, 7, 64, 4096, 16384};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char *buf = malloc(sizes[k]);
        ng = 0;
        f = open_memstream(&got, &glen);
        lw_jw_init(&w, f, 1);
        lw_jw_buffer(&w, buf, sizes[k]);
        some_doc(&w, gt, &ng);
        ck_assert_int_eq(lw_jw_failed(&w), 0);
        fclose(f);
        ck_assert_uint_eq(glen, wlen);
        ck_assert_msg(memcmp(got, want, wlen) == 0, "buffer of %zu bytes: output differs",
                      sizes[k]);
        ck_assert_int_eq(ng, nw);
        for (int i = 0; i < nw; i++)
            ck_assert_int_eq(gt[i], wt[i]);
        free(got);
        free(buf);
    }
    free(want);
}
END_TEST

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

START_TEST(path_templates) {
    char out[256], want[256];
    ck_assert_int_eq(lw_path_expand("run-%p.json", out, sizeof out), 0);
    snprintf(want, sizeof want, "run-%ld.json", (long)getpid());
    ck_assert_str_eq(out, want);
    setenv("RANK", "3", 1);
    ck_assert_int_eq(lw_path_expand("r%r-100%%-%q.json", out, sizeof out), 0);
    ck_assert_str_eq(out, "r3-100%-%q.json");
    unsetenv("RANK");
    setenv("LOCAL_RANK", "5", 1);
    ck_assert_int_eq(lw_path_expand("%r", out, sizeof out), 0);
    ck_assert_str_eq(out, "5");
    unsetenv("LOCAL_RANK");
    ck_assert_int_eq(lw_path_expand("%r", out, sizeof out), 0);
    ck_assert_str_eq(out, "0");
    char host[256];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    ck_assert_int_eq(lw_path_expand("%h", out, sizeof out), 0);
    ck_assert_str_eq(out, host);
    /* Too long for the buffer: refused, never cut. */
    char small[8];
    ck_assert_int_eq(lw_path_expand("abcdefgh", small, sizeof small), -1);
    ck_assert_int_eq(lw_path_expand("abcdefg", small, sizeof small), 0);
    ck_assert_str_eq(small, "abcdefg");
}
END_TEST

/* The library's lines and the command's views share one format. */
START_TEST(byte_formats) {
    char b[32];
    lw_format_bytes(512, b, sizeof b);
    ck_assert_str_eq(b, "512 B");
    lw_format_bytes(1536, b, sizeof b);
    ck_assert_str_eq(b, "1.50 KiB");
    lw_format_bytes(-3.0 * 1024 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "-3.00 MiB");
    lw_format_bytes(150.0 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "150.0 KiB");
    lw_format_bytes(2.0 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, b, sizeof b);
    ck_assert_str_eq(b, "2.00 EiB");
    ck_assert_str_eq(lw_fmt_count(18002, b, sizeof b), "18,002");
    ck_assert_str_eq(lw_fmt_bytes(NAN, b, sizeof b), "?");
}
END_TEST

START_TEST(control_dir_checks) {
    char dir[] = "/tmp/test_base_XXXXXX", err[512], link[200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(lw_control_check_dir(dir, err, sizeof err), 0);
    chmod(dir, 0755);
    ck_assert_int_ne(lw_control_check_dir(dir, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "chmod 700") != NULL, "%s", err);
    chmod(dir, 0700);
    snprintf(link, sizeof link, "%s.link", dir);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_ne(lw_control_check_dir(link, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "not a directory") != NULL, "%s", err);
    unlink(link);
    /* XDG_RUNTIME_DIR/leakwatch, created 0700 when missing. */
    setenv("XDG_RUNTIME_DIR", dir, 1);
    char out[256];
    ck_assert_int_eq(lw_control_dir(1, out, sizeof out, err, sizeof err), 0);
    char want[256];
    snprintf(want, sizeof want, "%s/leakwatch", dir);
    ck_assert_str_eq(out, want);
    struct stat st;
    ck_assert_int_eq(stat(out, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    rmdir(out);
    rmdir(dir);
}
END_TEST

/* The verdicts' names, spelled once (verdict.h), read back as written. */
START_TEST(verdict_names_read_back) {
    for (int v = 0; v < LW_VERDICT_COUNT; v++)
        ck_assert_int_eq(lw_verdict_parse(lw_verdict_name(v)), v);
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_LEAK), "leak");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_NO_LEAK), "no_leak");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_INCONCLUSIVE), "inconclusive");
    ck_assert_str_eq(lw_verdict_name(-1), "unknown");
    ck_assert_str_eq(lw_verdict_name(LW_VERDICT_COUNT), "unknown");
    ck_assert_int_eq(lw_verdict_parse("LEAK"), -1);
    ck_assert_int_eq(lw_verdict_parse("unknown"), -1);
    ck_assert_int_eq(lw_verdict_parse(""), -1);
    ck_assert_int_eq(lw_verdict_parse(NULL), -1);
}
END_TEST

/* The C library's dynamic section, as loaded in this process. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libc.so.6")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            const ElfW(Dyn) *ld = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            return lw_dyn_read(info->dlpi_addr, ld, data) == 0;
        }
    return 0;
}

/* lw_dyn_defined finds an object's own definition by its hash table, as the
 * dynamic linker binds an unversioned reference (the default version), and
 * never an indirect function's resolver. */
START_TEST(dynamic_definitions) {
    lw_dyn d;
    ck_assert_int_eq(dl_iterate_phdr(find_libc, &d), 1);
    void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    static const char *const names[] = {"fopen", "dlopen", "pthread_create", "qsort"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(lw_dyn_defined(&d, names[i]) == dlsym(h, names[i]), "%s", names[i]);
    ck_assert_ptr_null(lw_dyn_defined(&d, "no_such_function_in_libc"));
    ck_assert_ptr_null(lw_dyn_defined(&d, "cudaMalloc"));
    /* An indirect function (the string functions, chosen per CPU). */
    size_t n = lw_dyn_symbol_count(&d), ifuncs = 0;
    for (size_t i = 1; i < n; i++) {
        const ElfW(Sym) *sym = &d.symtab[i];
        if (ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC || sym->st_shndx == SHN_UNDEF) continue;
        const char *name = lw_dyn_symbol_name(&d, i);
        ck_assert_msg(lw_dyn_defined(&d, name) == NULL, "%s", name);
        ifuncs++;
    }
    ck_assert_uint_gt(ifuncs, 0);
    dlclose(h);
}
END_TEST

/* ---- the lock order (src/base/lock_order.h) ---- */

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_s = PTHREAD_MUTEX_INITIALIZER,
                       lock_p = PTHREAD_MUTEX_INITIALIZER;

static void take(pthread_mutex_t *m, int rank) {
    lw_lock_order_take(rank);
    pthread_mutex_lock(m);
}

static void drop(pthread_mutex_t *m, int rank) {
    pthread_mutex_unlock(m);
    lw_lock_order_drop(rank);
}

/* Runs fn in a forked child with its stderr in text: the child's wait
 * status. */
static int in_child(void (*fn)(void), char *text, size_t n) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fds[0], text + got, n - 1 - got)) > 0)
        got += (size_t)r;
    text[got] = '\0';
    close(fds[0]);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void patch_then_start(void) {
    take(&lock_p, LW_RANK_PATCH);
    take(&lock_s, LW_RANK_START); /* the inversion of issue 32 */
}

static void start_twice(void) {
    take(&lock_s, LW_RANK_START);
    take(&lock_s, LW_RANK_START);
}

static void start_then_attach(void) {
    take(&lock_s, LW_RANK_START);
    take(&lock_a, LW_RANK_ATTACH);
}

START_TEST(lock_taken_out_of_order_aborts) {
    static const struct {
        void (*fn)(void);
        const char *want;
    } cases[] = {
        {patch_then_start, "lock order violated: taking start_lock while holding patch_lock"},
        {start_twice, "lock order violated: taking start_lock while holding start_lock"},
        {start_then_attach, "lock order violated: taking attach_lock while holding start_lock"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        int status = in_child(cases[i].fn, text, sizeof text);
        ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
                      "case %zu: status 0x%x, stderr: %s", i, status, text);
        ck_assert_msg(strstr(text, cases[i].want), "case %zu: stderr: %s", i, text);
    }
}
END_TEST

/* The order of attach (attach_lock, start_lock, then patch_lock after
 * start_lock's release) and of the fork handlers (start_lock, patch_lock;
 * released in any order; in the child patch_lock is made new). */
static void in_order(void) {
    take(&lock_a, LW_RANK_ATTACH);
    take(&lock_s, LW_RANK_START);
    drop(&lock_s, LW_RANK_START);
    take(&lock_p, LW_RANK_PATCH);
    drop(&lock_p, LW_RANK_PATCH);
    drop(&lock_a, LW_RANK_ATTACH);
    take(&lock_s, LW_RANK_START);
    take(&lock_p, LW_RANK_PATCH);
    pid_t pid = fork();
    if (pid == 0) {
        pthread_mutex_init(&lock_p, NULL);
        lw_lock_order_drop(LW_RANK_PATCH);
        drop(&lock_s, LW_RANK_START);
        take(&lock_a, LW_RANK_ATTACH);
        drop(&lock_a, LW_RANK_ATTACH);
        _exit(lw_lock_order_held() == 0 ? 0 : 3);
    }
    drop(&lock_s, LW_RANK_START); /* the parent's handlers: start_lock first */
    drop(&lock_p, LW_RANK_PATCH);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        _exit(4);
    _exit(lw_lock_order_held() == 0 ? 0 : 5);
}

START_TEST(locks_taken_in_order_pass) {
    char text[512];
    int status = in_child(in_order, text, sizeof text);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x, stderr: %s", status,
                  text);
    ck_assert_str_eq(text, "");
}
END_TEST

static Suite *base_suite(void) {
    Suite *s = suite_create("base");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, json_write_reads_back);
    tcase_add_test(tc, json_write_buffered_same_bytes);
    tcase_add_test(tc, atomic_write_drops_forked_child_bytes);
    tcase_add_test(tc, path_templates);
    tcase_add_test(tc, byte_formats);
    tcase_add_test(tc, control_dir_checks);
    tcase_add_test(tc, verdict_names_read_back);
    tcase_add_test(tc, dynamic_definitions);
    tcase_add_test(tc, lock_taken_out_of_order_aborts);
    tcase_add_test(tc, locks_taken_in_order_pass);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(base_suite());
}
