/* SPDX-License-Identifier: Apache-2.0 */
/* The leaking line of Python, named: tests/python/leak_ctypes.py allocates
 * through the CPU stand-in runtime with ctypes (GIL held: PyDLL; released:
 * CDLL), under the shim, with every CPython >= 3.8 found on this machine
 * (and the CPython 3.14 that scripts/setup-python314.sh unpacks, if there). */
#include "../check_run.h"
#include "../pythons.h"
#include "harness.h"
#include "harness_cli.h"

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char pythons[32][PATH_MAX];
static int npythons;

static void add_python(const char *path) {
    char real[PATH_MAX];
    if (npythons >= 32 || !realpath(path, real) || !lw_python_runs_here(real)) return;
    /* Under 3.8 is not supported: skip by the version in the path. */
    if ((strstr(real, "python2") || strstr(real, "python3.6") || strstr(real, "python3.7"))) return;
    for (int i = 0; i < npythons; i++)
        if (!strcmp(pythons[i], real)) return;
    snprintf(pythons[npythons++], PATH_MAX, "%s", real);
}

static void find_pythons(void) {
    if (!lw_search_host_pythons()) {
        lw_listed_pythons(add_python);
        lw_cached_pythons(add_python);
        return;
    }
    glob_t g;
    const char *root = getenv("PYENV_ROOT");
    char pat[PATH_MAX];
    snprintf(pat, sizeof pat, "%s/versions/3.*/bin/python3", root ? root : "/root/.pyenv");
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            add_python(g.gl_pathv[i]);
        globfree(&g);
    }
    if (access("/usr/bin/python3", X_OK) == 0) add_python("/usr/bin/python3");
    lw_cached_pythons(add_python); /* 3.14 from scripts/setup-python314.sh */
    lw_listed_pythons(add_python);
}

/* The line of the leaking call, found by its marker comment. */
static int leak_line(const char *script, const char *marker) {
    FILE *f = fopen(script, "r");
    ck_assert_ptr_nonnull(f);
    char buf[512];
    int line = 0, found = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        if (strstr(buf, marker)) {
            found = line;
            break;
        }
    }
    fclose(f);
    ck_assert_int_gt(found, 0);
    return found;
}

START_TEST(python_line_is_named) {
    find_pythons();
    if (!npythons) {
        printf("test_python: no CPython >= 3.8 found; skipped\n");
        return;
    }
    char script[PATH_MAX], cudart[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath("tests/python/leak_ctypes.py", script));
    int line = leak_line(script, "# LEAK-LINE");
    int init_line = leak_line(script, "# INIT-LINE");
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    for (int i = 0; i < npythons; i++) {
        for (int held = 0; held < 2; held++) {
            lw_run r;
            const char *args[] = {script, held ? "pydll" : "cdll", NULL};
            const char *env[] = {cudart, "LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0", NULL};
            lw_run_exe(&r, 1, pythons[i], args, env);
            ck_assert_msg(r.exit_code == 0, "%s: exit %d\n%s", pythons[i], r.exit_code, r.err);
            ck_assert_msg(r.report != NULL, "%s: no report", pythons[i]);
            const char *verdict = lw_json_string(lw_json_get(r.report, "verdict"));
            ck_assert_msg(verdict && !strcmp(verdict, "leak"), "%s: verdict %s", pythons[i],
                          verdict);
            /* The leaking site is first; its first Python frame is the line. */
            const lw_json *frames = lw_json_path(r.report, "sites[0].frames");
            const lw_json *py = NULL;
            for (size_t j = 0; j < lw_json_len(frames) && !py; j++) {
                const char *kind = lw_json_string(lw_json_get(lw_json_at(frames, j), "kind"));
                if (kind && !strcmp(kind, "python")) py = lw_json_at(frames, j);
            }
            ck_assert_msg(py != NULL, "%s (%s): no Python frame", pythons[i], args[1]);
            ck_assert_str_eq(lw_json_string(lw_json_get(py, "file")), script);
            ck_assert_str_eq(lw_json_string(lw_json_get(py, "function")), "train");
            long long got = 0;
            ck_assert_int_eq(lw_json_int64(lw_json_get(py, "line"), &got), 0);
            ck_assert_msg(got == line, "%s: line %lld, want %d", pythons[i], got, line);
            ck_assert_int_eq(lw_json_bool(lw_json_path(r.report, "sites[0].leak"), 0), 1);
            /* The native walk stopped at the interpreter, and says so. Not
             * for an interpreter started through the loader by a wrapper
             * script (the sid 3.14 of scripts/setup-python314.sh): there
             * /proc/self/exe is the loader and the executable's own frames
             * cannot be read by path (a known limit, README). */
            if (!lw_is_script(pythons[i]))
                ck_assert_msg(
                    lw_json_bool(lw_json_path(r.report, "sites[0].native_cut_at_python"), 0) == 1,
                    "%s: native stack not cut at the interpreter", pythons[i]);
            /* The interpreter's own frames are hidden behind the Python ones. */
            for (size_t j = 0; j < lw_json_len(frames); j++) {
                const char *fn = lw_json_string(lw_json_get(lw_json_at(frames, j), "function"));
                ck_assert_msg(!fn || strcmp(fn, "_PyEval_EvalFrameDefault"), "%s: eval frame shown",
                              pythons[i]);
            }
            lw_run_free(&r);
        }
        /* An allocation in a constructor: on 3.13 the class call enters
         * __init__ through a shim frame that must not cost the site its
         * Python frames (from the second call on, once specialised). */
        {
            lw_run r;
            const char *args[] = {script, "cdll", "init", NULL};
            const char *env[] = {cudart, "LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0", NULL};
            lw_run_exe(&r, 1, pythons[i], args, env);
            ck_assert_msg(r.exit_code == 0, "%s init: exit %d\n%s", pythons[i], r.exit_code, r.err);
            const lw_json *sites = lw_json_get(r.report, "sites");
            ck_assert_uint_gt(lw_json_len(sites), 0);
            for (size_t k = 0; k < lw_json_len(sites); k++) {
                const lw_json *frames = lw_json_get(lw_json_at(sites, k), "frames");
                const lw_json *py = NULL;
                for (size_t j = 0; j < lw_json_len(frames) && !py; j++) {
                    const char *kind = lw_json_string(lw_json_get(lw_json_at(frames, j), "kind"));
                    if (kind && !strcmp(kind, "python")) py = lw_json_at(frames, j);
                }
                ck_assert_msg(py != NULL, "%s init: site %zu has no Python frame", pythons[i], k);
                const char *fn = lw_json_string(lw_json_get(py, "function"));
                ck_assert_msg(fn && strstr(fn, "__init__"), "%s init: function %s", pythons[i], fn);
                long long got = 0;
                ck_assert_int_eq(lw_json_int64(lw_json_get(py, "line"), &got), 0);
                ck_assert_int_eq(got, init_line);
            }
            lw_run_free(&r);
        }
        printf("test_python: %s ok\n", pythons[i]);
    }
}
END_TEST

/* Live bytes of the sites that have a Python frame at line `line` of file
 * `file`, and one at line `via` (0: any). */
static long long live_at(const lw_run *r, const char *file, int line, int via) {
    long long sum = 0;
    const lw_json *sites = lw_json_get(r->report, "sites");
    for (size_t k = 0; k < lw_json_len(sites); k++) {
        const lw_json *site = lw_json_at(sites, k);
        const lw_json *frames = lw_json_get(site, "frames");
        int match = 0, via_seen = via == 0;
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const lw_json *f = lw_json_at(frames, j);
            const char *kind = lw_json_string(lw_json_get(f, "kind"));
            if (!kind || strcmp(kind, "python")) continue;
            const char *fl = lw_json_string(lw_json_get(f, "file"));
            long long ln = -1;
            lw_json_int64(lw_json_get(f, "line"), &ln);
            if (fl && !strcmp(fl, file) && ln == line) match = 1;
            if (ln == via) via_seen = 1;
        }
        long long v = 0;
        if (match && via_seen && lw_json_int64(lw_json_get(site, "live_bytes"), &v) == 0) sum += v;
    }
    return sum;
}

/* Python stacks written to defeat the cache of a thread's last Python
 * frames: each line's bytes are on its own sites, and every capture is
 * checked (LEAKWATCH_VERIFY_STACKS, which the harness sets; it fails the run
 * on any difference). Where leakwatch has its own stack walker (x86-64), each
 * walked stack is compared with the fallback unwinder's and the cached
 * Python frames with a fresh walk; without it (AArch64, or
 * LEAKWATCH_TEST_UNWIND=fallback) every stack comes from the fallback
 * unwinder, with no cache to verify, and must still put each line's bytes on
 * its own sites. */
static void adversarial_run(const char *python, int force_fallback) {
    char script[PATH_MAX], cudart[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath("tests/python/stacks_adversarial.py", script));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    int deep = leak_line(script, "# LINE-DEEP"), gen = leak_line(script, "# LINE-GEN");
    int ca = leak_line(script, "# LINE-CALLER-A"), cb = leak_line(script, "# LINE-CALLER-B");
    int ta = leak_line(script, "# LINE-TWO-A"), tb = leak_line(script, "# LINE-TWO-B");
#if defined(__x86_64__)
    int walker = !force_fallback;
#else
    int walker = 0;
#endif
    lw_run r;
    const char *args[] = {script, NULL};
    const char *env[] = {cudart,
                         "LEAKWATCH_QUIET=1",
                         "LEAKWATCH_WARN=0",
                         "ROUNDS=60",
                         force_fallback ? "LEAKWATCH_TEST_UNWIND=fallback" : NULL,
                         NULL};
    lw_run_exe(&r, 1, python, args, env);
    ck_assert_msg(r.exit_code == 0, "%s: exit %d\n%s", python, r.exit_code, r.err);
    ck_assert_msg(r.report != NULL, "%s: no report", python);
    const char *unwinder = lw_json_string(lw_json_path(r.report, "tracker.unwinder"));
    ck_assert_ptr_nonnull(unwinder);
    long long verified = lw_rep_int(&r, "tracker.stacks_verified");
    long long fallback = lw_rep_int(&r, "tracker.stacks_by_fallback_unwinder");
    if (walker) {
        ck_assert_msg(!strncmp(unwinder, "leakwatch CFI walker", 20), "%s: unwinder \"%s\"", python,
                      unwinder);
        ck_assert_int_gt(verified, 0);
    } else {
        ck_assert_msg(strncmp(unwinder, "leakwatch CFI walker", 20) != 0, "%s: unwinder \"%s\"",
                      python, unwinder);
        /* Nothing to verify against; every allocation's stack (at least the
         * 60 rounds of each leaking line) came from the fallback. */
        ck_assert_int_eq(verified, 0);
        ck_assert_int_ge(fallback, lw_rep_int(&r, "totals.alloc_count"));
    }
    ck_assert_int_eq(live_at(&r, script, deep, 0), 2 * 60 * 1001 + 15 * 5005);
    ck_assert_int_eq(live_at(&r, script, gen, ca), 30 * 2002);
    ck_assert_int_eq(live_at(&r, script, gen, cb), 30 * 2002);
    ck_assert_int_eq(live_at(&r, script, ta, 0), 60 * 3003);
    ck_assert_int_eq(live_at(&r, script, tb, 0), 60 * 3005);
    ck_assert_int_eq(live_at(&r, "<fresh>", 3, 0), 60 * 4004);
    lw_run_free(&r);
    printf("test_python: %s adversarial stacks ok (%s)\n", python,
           walker ? "leakwatch's walker, verified" : "fallback unwinder");
}

START_TEST(python_stacks_adversarial) {
    find_pythons();
    if (!npythons) return;
    for (int i = 0; i < npythons; i++)
        adversarial_run(pythons[i], 0);
#if defined(__x86_64__)
    /* The path AArch64 takes, on every build. */
    adversarial_run(pythons[0], 1);
#endif
}
END_TEST

/* A Python whose frames cannot be read: one line when leakwatch starts says
 * so and why; the report is written as usual, with native frames only. */
static void expect_unavailable(const char *python, const char *fake_ft, const char *why) {
    char script[PATH_MAX], cudart[PATH_MAX + 64], ft[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath("tests/python/leak_ctypes.py", script));
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    snprintf(ft, sizeof ft, "LW_FAKE_FREE_THREADED=%s/tests/python/fake_freethreaded.so",
             lw_build_dir());
    const char *args[] = {script, "cdll", NULL};
    const char *env[] = {cudart,     "LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0",
                         "STEPS=40", fake_ft ? ft : NULL, NULL};
    lw_run r;
    lw_run_exe(&r, 1, python, args, env);
    ck_assert_msg(r.exit_code == 0, "%s: exit %d\n%s", python, r.exit_code, r.err);
    ck_assert_msg(r.report != NULL, "%s: no report", python);
    int lines = 0;
    for (const char *p = r.err; (p = strstr(p, "leakwatch: no Python lines: ")); p++)
        lines++;
    ck_assert_msg(lines == 1, "%s: %d notices; stderr:\n%s", python, lines, r.err);
    ck_assert_msg(strstr(r.err, why) != NULL, "%s: stderr lacks \"%s\":\n%s", python, why, r.err);
    const lw_json *sites = lw_json_get(r.report, "sites");
    ck_assert_uint_gt(lw_json_len(sites), 0);
    for (size_t k = 0; k < lw_json_len(sites); k++) {
        const lw_json *frames = lw_json_get(lw_json_at(sites, k), "frames");
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const char *kind = lw_json_string(lw_json_get(lw_json_at(frames, j), "kind"));
            ck_assert_msg(!kind || strcmp(kind, "python"), "%s: site %zu shows a Python frame",
                          python, k);
        }
    }
    lw_run_free(&r);
}

START_TEST(free_threaded_python_is_said_once) {
    find_pythons();
    if (!npythons) {
        printf("test_python: no CPython >= 3.8 found; skipped\n");
        return;
    }
    expect_unavailable(pythons[0], "fake", "free-threaded CPython build");
}
END_TEST

START_TEST(old_python_is_said_once) {
    glob_t g;
    const char *root = getenv("PYENV_ROOT");
    char pat[PATH_MAX];
    snprintf(pat, sizeof pat, "%s/versions/3.7*/bin/python3", root ? root : "/root/.pyenv");
    if (glob(pat, 0, NULL, &g) != 0 || !lw_python_runs_here(g.gl_pathv[0])) {
        printf("test_python: no CPython 3.7 found; skipped\n");
        return;
    }
    expect_unavailable(g.gl_pathv[0], NULL, "CPython 3.7 is not supported");
    globfree(&g);
}
END_TEST

/* Occurrences of text in s. */
static int count_of(const char *s, const char *text) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, text)) != NULL; p += strlen(text))
        n++;
    return n;
}

/* A shared allocation wrapper (issue 26, item 6): in
 * tests/python/wrapped_alloc.py, stash() (the leak) and scratch() (clean)
 * both allocate through device_alloc(), every site's place to look. Every
 * view names the leaking caller's line, by way of the wrapper: the live line,
 * the exit summary, the report (its sites and its answer), leakwatch report
 * as text and as HTML, and leakwatch top. Before, all of them named
 * device_alloc's line for the leaking site and the clean one alike. */
START_TEST(shared_wrapper_names_the_caller) {
    find_pythons();
    if (!npythons) {
        printf("test_python: no CPython >= 3.8 found; skipped\n");
        return;
    }
    const char *python = pythons[0];
    char script[PATH_MAX], cudart[PATH_MAX + 64], dir[64], report[128], out[128], go[128];
    ck_assert_ptr_nonnull(realpath("tests/python/wrapped_alloc.py", script));
    int wrapper = leak_line(script, "# WRAPPER-LINE"), stash = leak_line(script, "# STASH-LINE"),
        scratch = leak_line(script, "# SCRATCH-LINE");
    char want[200], clean[200], place[200], bad[300];
    snprintf(want, sizeof want,
             "wrapped_alloc.py:%d in stash (via device_alloc, wrapped_alloc.py:%d)", stash,
             wrapper);
    snprintf(clean, sizeof clean,
             "wrapped_alloc.py:%d in scratch (via device_alloc, wrapped_alloc.py:%d)", scratch,
             wrapper);
    snprintf(place, sizeof place, "wrapped_alloc.py:%d in device_alloc", wrapper);
    snprintf(bad, sizeof bad, "LEAK in %s", place);

    lw_temp_dir(dir, sizeof dir);
    setenv("XDG_RUNTIME_DIR", dir, 1); /* the job's control socket, for top */
    snprintf(report, sizeof report, "%s/r.json", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(go, sizeof go, "%s/go", dir);
    snprintf(cudart, sizeof cudart, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    char rep_env[200], go_env[200];
    snprintf(rep_env, sizeof rep_env, "LEAKWATCH_REPORT=%s", report);
    snprintf(go_env, sizeof go_env, "LW_WAIT_FILE=%s", go);
    const char *args[] = {script, NULL};
    const char *env[] = {cudart, rep_env, go_env, NULL};
    pid_t pid = lw_spawn(python, args, env, 1, out);
    /* The live line, said while the job runs; then top on the live job. */
    int live = lw_wait_for_text(out, "[as of step", 60000);
    char *text = lw_slurp_file(out);
    if (!live) {
        kill(pid, SIGKILL);
        ck_abort_msg("%s: no live line\n%s", python, text);
    }
    free(text);
    char pidtxt[32];
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)pid);
    lw_run r;
    const char *top[] = {"top", "--once", pidtxt, NULL};
    lw_cli_run(&r, top, NULL);
    lw_write_text(go, "go\n");
    int status = 0;
    if (lw_wait_pid(pid, 60000, &status)) {
        kill(pid, SIGKILL);
        ck_abort_msg("%s: the job did not end", python);
    }
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, want) && strstr(r.out, clean) &&
                      !strstr(r.out, place),
                  "top:\n%s%s", r.out, r.err);
    lw_run_free(&r);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: status %d", python, status);

    /* The live line and the exit summary. */
    text = lw_slurp_file(out);
    char line[300];
    snprintf(line, sizeof line, "LEAK in %s", want);
    ck_assert_msg(count_of(text, line) >= 2 && !strstr(text, bad), "stderr:\n%s", text);
    free(text);

    /* The report: the leaking site, the clean one, the answer. */
    char err[256];
    lw_json *j = lw_json_parse_file(report, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    ck_assert_str_eq(lw_json_string(lw_json_get(j, "verdict")), "leak");
    ck_assert_str_eq(lw_json_string(lw_json_path(j, "answer.where.label")), want);
    ck_assert_str_eq(lw_json_string(lw_json_path(j, "answer.where.place_label")), place);
    const lw_json *sites = lw_json_get(j, "sites");
    int seen_leak = 0, seen_clean = 0;
    for (size_t k = 0; k < lw_json_len(sites); k++) {
        const lw_json *site = lw_json_at(sites, k);
        const lw_json *where = lw_json_get(site, "where");
        int leak = lw_json_bool(lw_json_get(site, "leak"), 0);
        ck_assert_str_eq(lw_json_string(lw_json_get(where, "place_label")), place);
        ck_assert_str_eq(lw_json_string(lw_json_get(where, "function")), "device_alloc");
        ck_assert_str_eq(lw_json_string(lw_json_get(where, "label")), leak ? want : clean);
        /* distinct_frame: the caller's frame among the site's frames. */
        long long d = -1;
        ck_assert_int_eq(lw_json_int64(lw_json_get(where, "distinct_frame"), &d), 0);
        const lw_json *f = lw_json_at(lw_json_get(site, "frames"), (size_t)d);
        ck_assert_str_eq(lw_json_string(lw_json_get(f, "function")), leak ? "stash" : "scratch");
        long long fl = 0;
        ck_assert_int_eq(lw_json_int64(lw_json_get(f, "line"), &fl), 0);
        ck_assert_int_eq(fl, leak ? stash : scratch);
        seen_leak |= leak;
        seen_clean |= !leak;
    }
    ck_assert(seen_leak && seen_clean);
    lw_json_free(j);

    /* leakwatch report, as text and as a web page. */
    const char *txt[] = {"report", report, NULL};
    lw_cli_run(&r, txt, NULL);
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, line) && strstr(r.out, clean) &&
                      !strstr(r.out, bad),
                  "report:\n%s%s", r.out, r.err);
    lw_run_free(&r);
    /* With a user code of the command's own, it finds the places, and the
     * frames that tell the sites apart, itself. */
    char ucode[PATH_MAX];
    snprintf(ucode, sizeof ucode, "%s", script);
    *strrchr(ucode, '/') = '\0';
    const char *uc[] = {"report", "--user-code", ucode, report, NULL};
    lw_cli_run(&r, uc, NULL);
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, line) && strstr(r.out, clean) &&
                      !strstr(r.out, bad),
                  "report --user-code:\n%s%s", r.out, r.err);
    lw_run_free(&r);
    char html[128];
    snprintf(html, sizeof html, "%s/r.html", dir);
    const char *h[] = {"report", "--format", "html", "-o", html, report, NULL};
    lw_cli_run(&r, h, NULL);
    ck_assert_msg(r.exit_code == 0, "report --format html:\n%s", r.err);
    lw_run_free(&r);
    text = lw_slurp_file(html);
    ck_assert_msg(strstr(text, line) && strstr(text, clean) && !strstr(text, bad),
                  "the page does not name %s", want);
    free(text);
    unsetenv("XDG_RUNTIME_DIR");
    lw_remove_dir(dir);
}
END_TEST

/* The README's Python example on a machine with the CUDA runtime but no
 * driver (issue 42, item 6): the runtime's cudaMalloc fails with 35. ctypes
 * finds it with dlsym in the runtime's handle, which reached the real one
 * past the hooks: leakwatch said nothing and wrote no report, while the C
 * example got the hint and a report. Now the lookup hands out a wrapper
 * bound to that function: the same hint, once, and a report counting the
 * failure; the job's own error and status unchanged. The runtime alone in a
 * folder (it has no RUNPATH) and no LD_LIBRARY_PATH to the stand-in driver;
 * skipped where a real driver is installed. */
START_TEST(ctypes_without_driver_gets_the_hint) {
    find_pythons();
    if (!npythons) {
        printf("test_python: no CPython >= 3.8 found; skipped\n");
        return;
    }
    char script[PATH_MAX], dir[64], lib[PATH_MAX], target[PATH_MAX], cudart[PATH_MAX + 64],
        path[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath("examples/train_loop.py", script));
    lw_temp_dir(dir, sizeof dir);
    snprintf(target, sizeof target, "%s/tests/lib/libcudart.so", lw_build_dir());
    snprintf(lib, sizeof lib, "%s/libcudart.so", dir);
    ck_assert_int_eq(symlink(target, lib), 0);
    snprintf(cudart, sizeof cudart, "LEAKWATCH_CUDART=%s", lib);
    snprintf(path, sizeof path, "LD_LIBRARY_PATH=%s", dir);
    const char *args[] = {script, "--steps", "3", NULL};
    const char *env[] = {cudart, path, NULL};
    lw_run r;
    lw_run_exe(&r, 1, pythons[0], args, env);
    if (r.exit_code == 0) {
        printf("test_python: a CUDA driver is installed here; skipped\n");
        lw_run_free(&r);
        lw_remove_dir(dir);
        return;
    }
    ck_assert_msg(r.exit_code == 1 && strstr(r.err, "failed: error 35"), "exit %d\n%s", r.exit_code,
                  r.err);
    ck_assert_msg(count_of(r.err, "leakwatch: a CUDA allocation failed with error 35: no CUDA "
                                  "driver found") == 1,
                  "%s", r.err);
    ck_assert_msg(r.report != NULL, "no report\n%s", r.err);
    ck_assert_int_eq(lw_rep_int(&r, "totals.failed_alloc_count"), 1);
    lw_run_free(&r);
    lw_remove_dir(dir);
}
END_TEST

int main(void) {
    Suite *s = suite_create("python");
    TCase *tc = tcase_create("frames");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, python_line_is_named);
    tcase_add_test(tc, python_stacks_adversarial);
    tcase_add_test(tc, free_threaded_python_is_said_once);
    tcase_add_test(tc, old_python_is_said_once);
    tcase_add_test(tc, shared_wrapper_names_the_caller);
    tcase_add_test(tc, ctypes_without_driver_gets_the_hint);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
