/* SPDX-License-Identifier: Apache-2.0 */
/* test_pyframes: runs tests/python/check_pyframes.py (which loads
 * $LW_BUILD/tests/python/pyprobe.so through ctypes and compares the raw
 * Python frame walk of src/track/pyframes.c with traceback.extract_stack()) under
 * every CPython >= 3.8 found:
 *   $PYENV_ROOT/versions/X/bin/python3 (PYENV_ROOT defaults to ~/.pyenv),
 *   /root/.pyenv/versions/X/bin/python3, `python3` on PATH, /usr/bin/python3,
 *   the interpreters scripts/setup-python314.sh unpacked (CPython 3.14 from
 *   Debian sid), and the colon-separated list in $LW_PYTHONS (see
 *   tests/pythons.h); only those built for this test's architecture.
 * Programs are started through $LW_TEST_EXEC when set (make check-aarch64:
 * qemu-user; see tests/test_exec.h).
 * The interpreters run at once, up to LW_PYFRAMES_JOBS (default: the number
 * of cores), before the cases, which read their results.
 * Interpreters are told apart by sys.executable (after realpath), so the
 * pyenv shim and the version it selects count once. With none found the test
 * prints so and passes.
 *
 * The script is found at $LW_SRCDIR/tests/python/check_pyframes.py, else
 * tests/python/check_pyframes.py from the current directory (make runs the
 * tests from the repository root).
 *
 * Sanitizer build (make check-san): pyprobe.so is then built with
 * -fsanitize=address,undefined, and the Pythons are not, so ASan's runtime
 * must come first in the process: when this test runs with ASan, it starts
 * each Python with LD_PRELOAD=<the libasan this test uses> and
 * ASAN_OPTIONS=detect_leaks=0 (CPython frees little at exit by design). That
 * works with the pyenv and Debian Pythons here; the script skips its one
 * deliberately racy check (shutdown around capturing threads) under ASan.
 */
#include "../check_run.h"
#include "../pythons.h"
#include "../test_exec.h"
#include "arch.h"
#include "pyframes.h"

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_PY 64
#define RUN_TIMEOUT_S 900

struct python {
    char path[PATH_MAX];                      /* what we run */
    char label[PATH_MAX];                     /* realpath(sys.executable) */
    char libpython[PATH_MAX], home[PATH_MAX]; /* shared libpython (if any), sys.base_prefix */
    unsigned long hexversion;
};
static struct python pythons[MAX_PY];
static int npythons;

static const char *build_dir(void) {
    const char *b = getenv("LW_BUILD");
    return b && *b ? b : "build";
}

/* Runs argv (with extra environment assignments) and returns its exit status
 * (or 128+signal), its output (stdout+stderr, malloc'd) in *out. */
static int run(char *const argv[], char *const env_extra[], unsigned timeout_s, char **out) {
    int fd[2];
    *out = NULL;
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        for (int i = 0; env_extra && env_extra[i]; i++)
            putenv(env_extra[i]);
        alarm(timeout_s); /* survives exec: SIGALRM ends a hung Python */
        char *full[80];
        int n = lw_test_exec_prefix(argv[0], full, 16);
        for (int i = 0; argv[i] && n < 79; i++)
            full[n++] = argv[i];
        full[n] = NULL;
        execv(full[0], full);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fd[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && len + 4096 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = buf ? read(fd[0], buf + len, cap - len - 1) : 0;
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd[0]);
    if (buf) buf[len] = '\0';
    *out = buf;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* Adds `path` if it runs, is CPython >= 3.8 and is not a duplicate. */
static void consider(const char *path) {
    if (npythons >= MAX_PY || access(path, X_OK) != 0 || !lw_python_runs_here(path)) return;
    char *argv[] = {(char *)path, "-c",
                    "import sys, os, platform, sysconfig as c\n"
                    "so = os.path.join(c.get_config_var('LIBDIR') or '', "
                    "c.get_config_var('INSTSONAME') or '')\n"
                    "print(sys.hexversion, platform.python_implementation())\n"
                    "print(os.path.realpath(sys.executable))\n"
                    "print(so if so.endswith('.so.1.0') and os.path.exists(so) else '-')\n"
                    "print(sys.base_prefix)",
                    NULL};
    char *out = NULL;
    int rc = run(argv, NULL, 60 * lw_test_time_scale(), &out);
    unsigned long hex = 0;
    char impl[32] = "", exe[PATH_MAX] = "", so[PATH_MAX] = "", home[PATH_MAX] = "";
    if (rc == 0 && out &&
        sscanf(out, "%lu %31s %4095[^\n] %4095[^\n] %4095[^\n]", &hex, impl, exe, so, home) == 5 &&
        strcmp(impl, "CPython") == 0 && hex >= 0x03080000UL) {
        for (int i = 0; i < npythons; i++)
            if (strcmp(pythons[i].label, exe) == 0) goto done;
        snprintf(pythons[npythons].path, PATH_MAX, "%s", path);
        snprintf(pythons[npythons].label, PATH_MAX, "%s", exe);
        snprintf(pythons[npythons].libpython, PATH_MAX, "%s", strcmp(so, "-") ? so : "");
        snprintf(pythons[npythons].home, PATH_MAX, "%s", home);
        pythons[npythons].hexversion = hex;
        npythons++;
    }
done:
    free(out);
}

static void consider_glob(const char *pattern) {
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0) return;
    for (size_t i = 0; i < g.gl_pathc; i++)
        consider(g.gl_pathv[i]);
    globfree(&g);
}

static void find_pythons(void) {
    if (!lw_search_host_pythons()) {
        lw_listed_pythons(consider);
        lw_cached_pythons(consider);
        return;
    }
    char pat[PATH_MAX];
    const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");
    if (root && *root) {
        snprintf(pat, sizeof pat, "%s/versions/*/bin/python3", root);
        consider_glob(pat);
    } else if (home && *home) {
        snprintf(pat, sizeof pat, "%s/.pyenv/versions/*/bin/python3", home);
        consider_glob(pat);
    }
    consider_glob("/root/.pyenv/versions/*/bin/python3");
    const char *path = getenv("PATH");
    if (path) {
        char *copy = strdup(path), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/python3", *d ? d : ".");
            if (access(p, X_OK) == 0) {
                consider(p);
                break;
            }
        }
        free(copy);
    }
    consider("/usr/bin/python3");
    lw_cached_pythons(consider);
    lw_listed_pythons(consider);
}

/* The libasan this test runs with, or NULL when it is not a sanitizer build.
 * (Through a weak reference, not dlsym(): liblw_core.a defines dlsym, and a
 * reference to it here would link leakwatch's hook into this test.) */
extern void __asan_init(void) __attribute__((weak));
static const char *asan_runtime(void) {
    Dl_info info;
    if (__asan_init == NULL || dladdr((void *)__asan_init, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    return info.dli_fname;
}

static const char *last_line(const char *s, char *buf, size_t n) {
    size_t len = strlen(s);
    while (len > 0 && s[len - 1] == '\n')
        len--;
    size_t b = len;
    while (b > 0 && s[b - 1] != '\n')
        b--;
    snprintf(buf, n, "%.*s", (int)(len - b), s + b);
    return buf;
}

/* The sweep: tests/python/check_pyframes.py under every CPython found, run
 * before the Check cases (which only read the results), up to
 * LW_PYFRAMES_JOBS at once (default: the number of cores). Each run is one
 * CPU-bound process; one at a time, the sweep of the eight CPythons here
 * took most of this test's time, and under qemu (make check-aarch64) most
 * of that tier's. */
static char sweep_script[PATH_MAX], sweep_so[PATH_MAX];
static int sweep_rc[MAX_PY];
static char *sweep_out[MAX_PY];

static char *slurp_fd(int fd) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    lseek(fd, 0, SEEK_SET);
    for (;;) {
        if (len + 4096 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return buf;
}

static void sweep(void) {
    const char *src = getenv("LW_SRCDIR");
    snprintf(sweep_script, sizeof sweep_script, "%s/tests/python/check_pyframes.py",
             src && *src ? src : ".");
    snprintf(sweep_so, sizeof sweep_so, "%s/tests/python/pyprobe.so", build_dir());
    if (access(sweep_script, R_OK) != 0 || access(sweep_so, R_OK) != 0) return; /* the cases say */
    static char preload[PATH_MAX + 16];
    char *env[4] = {NULL, NULL, NULL, NULL};
    int ne = 0;
    const char *asan = asan_runtime();
    if (asan) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", asan);
        env[ne++] = preload;
        env[ne++] = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0";
    }
    const char *j = getenv("LW_PYFRAMES_JOBS");
    long jobs = j && *j ? strtol(j, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    pid_t pid[MAX_PY];
    int fd[MAX_PY], running = 0, next = 0, done = 0;
    fflush(stdout);
    fflush(stderr);
    while (done < npythons) {
        while (running < jobs && next < npythons) {
            int i = next++;
            char tmpl[] = "/tmp/lwpyframes.XXXXXX";
            fd[i] = mkostemp(tmpl, O_CLOEXEC);
            sweep_rc[i] = -1;
            if (fd[i] < 0) {
                done++;
                continue;
            }
            unlink(tmpl);
            pid[i] = fork();
            if (pid[i] == 0) {
                dup2(fd[i], 1);
                dup2(fd[i], 2);
                for (int k = 0; env[k]; k++)
                    putenv(env[k]);
                alarm(RUN_TIMEOUT_S * lw_test_time_scale()); /* survives exec: ends a hung Python */
                char *full[80];
                int n = lw_test_exec_prefix(pythons[i].path, full, 16);
                char *argv[] = {pythons[i].path, "-X",     "faulthandler",
                                sweep_script,    sweep_so, NULL};
                for (int k = 0; argv[k] && n < 79; k++)
                    full[n++] = argv[k];
                full[n] = NULL;
                execv(full[0], full);
                fprintf(stderr, "cannot run %s: %s\n", pythons[i].path, strerror(errno));
                _exit(127);
            }
            if (pid[i] < 0) {
                close(fd[i]);
                done++;
                continue;
            }
            running++;
        }
        if (running == 0) break;
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < next; i++) {
            if (pid[i] != w || fd[i] < 0) continue;
            sweep_rc[i] = WIFEXITED(st)     ? WEXITSTATUS(st)
                          : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                            : -1;
            sweep_out[i] = slurp_fd(fd[i]);
            close(fd[i]);
            fd[i] = -1;
            running--;
            done++;
        }
    }
}

START_TEST(test_python_frames_match_traceback) {
    const struct python *py = &pythons[_i];
    ck_assert_msg(access(sweep_script, R_OK) == 0,
                  "%s not found: run from the repository root or set LW_SRCDIR", sweep_script);
    ck_assert_msg(access(sweep_so, R_OK) == 0, "%s not found: build it with make test-bins",
                  sweep_so);
    int rc = sweep_rc[_i];
    const char *text = sweep_out[_i] ? sweep_out[_i] : "";
    char line[1024];
    printf("test_pyframes: %s: %s\n", py->path, last_line(text, line, sizeof line));
    fflush(stdout);
    size_t len = strlen(text);
    ck_assert_msg(rc == 0, "%s (%s) %s: exit status %d; output (tail):\n%s", py->path, py->label,
                  sweep_script, rc, text + (len > 6000 ? len - 6000 : 0));
}
END_TEST

/* ---- this test process itself has no Python ---- */

/* pyframes.o (from liblw_core.a) needs lw_real_dlsym, which the library
 * defines in real_dlsym.c; this trivial one keeps the rest of the library (and its
 * dlsym hook) out of this test. */
void *lw_real_dlsym(void *handle, const char *name) {
    typedef void *(*dlsym_fn)(void *, const char *);
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == NULL) p = dlvsym(RTLD_NEXT, "dlsym", LW_ARCH_GLIBC_BASE);
    return p ? ((dlsym_fn)p)(handle, name) : NULL;
}

START_TEST(test_no_python_in_process) {
    lw_pyframe fr[8];
    ck_assert_int_eq(lw_py_version(), 0);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0); /* initialises lazily, finds nothing */
    ck_assert_int_eq(lw_py_init(), -1);
    ck_assert_int_eq(lw_py_init(), -1);
    ck_assert_str_eq(lw_py_status(), "no Python in this process");
    ck_assert_int_eq(lw_py_version(), 0);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0);
    int x = 0;
    lw_pyframe f = {&x, 0, 0};
    lw_py_location loc = {(char *)"junk", (char *)"junk", 7};
    ck_assert_int_eq(lw_py_describe(&f, &loc), -1);
    ck_assert_ptr_null(loc.file);
    ck_assert_ptr_null(loc.function);
    ck_assert_int_eq(loc.line, -1);
    lw_py_location_free(&loc);
    lw_py_location_free(NULL);
    ck_assert_int_eq(lw_py_describe(NULL, &loc), -1);
    ck_assert_int_eq(lw_py_describe(&f, NULL), -1);
    ck_assert_int_eq(lw_py_reinit(), -1);
}
END_TEST

/* libpython dlopen'ed after the first lw_py_init (an embedding program):
 * lw_py_reinit finds it; capture gives 0 frames before Py_Initialize, with a
 * thread state but no frames, and after Py_FinalizeEx. */
static int late_py = -1;
START_TEST(test_libpython_loaded_later) {
    const struct python *py = &pythons[late_py];
    lw_pyframe fr[8];
    ck_assert_int_eq(lw_py_init(), -1);
    void *h = dlopen(py->libpython, RTLD_NOW | RTLD_GLOBAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", py->libpython, dlerror());
    ck_assert_int_eq(lw_py_init(), -1); /* not looked at again until reinit */
    ck_assert_msg(lw_py_reinit() == 0, "reinit: %s", lw_py_status());
    ck_assert_int_eq((unsigned long)lw_py_version() >> 16, py->hexversion >> 16);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0); /* Python not initialised */

    void (*init)(int) = (void (*)(int))lw_real_dlsym(h, "Py_InitializeEx");
    int (*fini)(void) = (int (*)(void))lw_real_dlsym(h, "Py_FinalizeEx");
    int (*run_string)(const char *) = (int (*)(const char *))lw_real_dlsym(h, "PyRun_SimpleString");
    ck_assert(init && fini && run_string);
    setenv("PYTHONHOME", py->home, 1);
    init(0);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0); /* thread state, no frames */
    ck_assert_int_eq(run_string("import sys\nx = sum(range(10))\n"), 0);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0);
    ck_assert_int_eq(fini(), 0);
    ck_assert_int_eq(lw_py_capture(fr, 8), 0); /* finalised */
}
END_TEST

START_TEST(test_no_python_found) {
    printf("test_pyframes: no CPython >= 3.8 found; nothing tested\n");
}
END_TEST

int main(void) {
    find_pythons();
    printf("test_pyframes: %d CPython interpreter(s) >= 3.8%s\n", npythons,
           asan_runtime() ? " (sanitizer build: LD_PRELOAD of libasan)" : "");
    for (int i = 0; i < npythons; i++)
        printf("  %lu.%lu.%lu  %s (%s)\n", pythons[i].hexversion >> 24,
               (pythons[i].hexversion >> 16) & 0xFF, (pythons[i].hexversion >> 8) & 0xFF,
               pythons[i].path, pythons[i].label);
    fflush(stdout);
    sweep();

    Suite *s = suite_create("pyframes");
    TCase *own = tcase_create("this_process");
    tcase_add_test(own, test_no_python_in_process);
    for (int i = 0; i < npythons && late_py < 0; i++)
        if (pythons[i].libpython[0] && (pythons[i].hexversion >> 16) == 0x030C) late_py = i;
    for (int i = 0; i < npythons && late_py < 0; i++)
        if (pythons[i].libpython[0]) late_py = i;
    if (late_py >= 0) {
        printf("  libpython loaded late: %s\n", pythons[late_py].libpython);
        tcase_add_test(own, test_libpython_loaded_later);
    }
    suite_add_tcase(s, own);
    TCase *tc = tcase_create("python");
    tcase_set_timeout(tc, RUN_TIMEOUT_S + 60);
    if (npythons > 0)
        tcase_add_loop_test(tc, test_python_frames_match_traceback, 0, npythons);
    else
        tcase_add_test(tc, test_no_python_found);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
