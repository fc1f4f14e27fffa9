/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch out of the box, on the CPU stand-ins (no torch, no GPU here):
 *  - the environment the constructor prepares in Python processes (by
 *    default only the auto-start directory on PYTHONPATH; the allocator
 *    backend for LEAKWATCH_TORCH_MODE=tensors), and that it leaves every
 *    other process alone;
 *  - under default settings, with the stand-in torch (tests/python/
 *    faketorch, PyTorch 2.11's allocators and their refusals): the seed's
 *    leaks found from PyTorch's own counters and named through its
 *    allocation history (tests/python/torch_seed.py), their fixes clean,
 *    CUDA graphs in torch.compile and the memory-snapshot recipe still
 *    working (tests/python/torch_features.py), one step per iteration;
 *  - automatic steps: tests/python/faketorch stands in for torch's
 *    optimizer post-hooks; tests/python/torch_train.py reproduces the
 *    allocation pattern of each allocator configuration (per-tensor
 *    cudaMallocAsync_ptsz, cudaMalloc segments, expandable segments through
 *    cuMemCreate/cuMemMap) and never marks a step itself. */
#include "../check_run.h"
#include "../pythons.h"
#include "fmt.h"
#include "harness.h"

#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ASYNC "backend:cudaMallocAsync"

static char pythons[32][PATH_MAX];
static int npythons;

static void add_python(const char *path) {
    char real[PATH_MAX];
    if (npythons >= 32 || !realpath(path, real) || !lw_python_runs_here(real)) return;
    if (strstr(real, "python2") || strstr(real, "python3.6") || strstr(real, "python3.7")) return;
    for (int i = 0; i < npythons; i++)
        if (!strcmp(pythons[i], real)) return;
    snprintf(pythons[npythons++], PATH_MAX, "%s", real);
}

/* Every CPython >= 3.8 found; the first is the one the environment tests use. */
static int find_pythons(void) {
    if (npythons) return npythons;
    if (!lw_search_host_pythons()) {
        lw_listed_pythons(add_python);
        lw_cached_pythons(add_python);
        return npythons;
    }
    if (access("/usr/bin/python3", X_OK) == 0) add_python("/usr/bin/python3");
    glob_t g;
    const char *root = getenv("PYENV_ROOT");
    char pat[PATH_MAX];
    snprintf(pat, sizeof pat, "%s/versions/3.*/bin/python3", root ? root : "/root/.pyenv");
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            add_python(g.gl_pathv[i]);
        globfree(&g);
    }
    lw_cached_pythons(add_python); /* 3.14 from scripts/setup-python314.sh */
    lw_listed_pythons(add_python);
    return npythons;
}

static char cudart_env[PATH_MAX + 64];

static const char *script(const char *name) {
    static char path[4][PATH_MAX];
    static int k;
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "tests/python/%s", name);
    char *out = path[k++ % 4];
    ck_assert_msg(realpath(rel, out) != NULL, "%s missing", rel);
    return out;
}

static const char *autostart_dir(void) {
    static char dir[PATH_MAX];
    ck_assert_ptr_nonnull(realpath("python/leakwatch/_autostart", dir));
    return dir;
}

/* Runs tests/python/torch_env.py (arg: NULL or "cuda") with env added. */
static void run_env(lw_run *r, const char *arg, const char *const *env) {
    const char *all[24];
    int n = 0;
    all[n++] = cudart_env;
    all[n++] = "LEAKWATCH_WARN=0";
    all[n++] = "PYTHONDONTWRITEBYTECODE=1";
    for (int i = 0; env && env[i] && n < 23; i++)
        all[n++] = env[i];
    all[n] = NULL;
    const char *args[] = {script("torch_env.py"), arg, NULL};
    lw_run_exe(r, 1, pythons[0], args, all);
    RUN_OK(r);
}

/* The value printed for name: its text, or NULL for "name unset". */
static const char *printed(const lw_run *r, const char *name, char *buf, size_t len) {
    size_t nl = strlen(name);
    for (const char *p = r->out; p && *p;) {
        size_t l = strcspn(p, "\n");
        if (l > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            snprintf(buf, len, "%.*s", (int)(l - nl - 1), p + nl + 1);
            return buf;
        }
        if (l == nl + 6 && !strncmp(p, name, nl) && !strncmp(p + nl, " unset", 6)) return NULL;
        p += l + (p[l] == '\n');
    }
    ck_abort_msg("%s not printed; stdout: %s", name, r->out);
    return NULL;
}

static void expect(const lw_run *r, const char *name, const char *want) {
    char buf[4200];
    const char *got = printed(r, name, buf, sizeof buf);
    if (!want)
        ck_assert_msg(got == NULL, "%s: got \"%s\", want unset", name, got);
    else
        ck_assert_msg(got && !strcmp(got, want), "%s: got \"%s\", want \"%s\"", name,
                      got ? got : "(unset)", want);
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

#define NEED_PYTHON()                                                                              \
    do {                                                                                           \
        if (!find_pythons()) {                                                                     \
            printf("test_torch: no CPython >= 3.8 found; skipped\n");                              \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The default: the job's allocator configuration stays exactly as it was. */
START_TEST(default_leaves_the_allocator_alone) {
    NEED_PYTHON();
    lw_run r;
    run_env(&r, NULL, NULL);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", NULL);
    expect(&r, "PYTORCH_ALLOC_CONF", NULL);
    expect(&r, "PYTHONPATH", autostart_dir());
    ck_assert_msg(strstr(r.out, "leakwatch loaded"), "stdout: %s", r.out);
    ck_assert_msg(r.err[0] == '\0', "the constructor printed: %s", r.err);
    lw_run_free(&r);
    const char *user[][2] = {{"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", NULL},
                             {"PYTORCH_ALLOC_CONF=max_split_size_mb:128", NULL},
                             {"LEAKWATCH_TORCH_MODE=segments", NULL}};
    for (int i = 0; i < 3; i++) {
        run_env(&r, "cuda", user[i]);
        expect(&r, "PYTORCH_CUDA_ALLOC_CONF", i == 0 ? "expandable_segments:True" : NULL);
        expect(&r, "PYTORCH_ALLOC_CONF", i == 1 ? "max_split_size_mb:128" : NULL);
        ck_assert_msg(!strstr(r.err, "backend"), "stderr: %s", r.err);
        lw_run_free(&r);
    }
}
END_TEST

START_TEST(tensors_mode_gets_the_async_backend) {
    NEED_PYTHON();
    lw_run r;
    const char *tensors[] = {"LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, NULL, tensors);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", ASYNC);
    expect(&r, "PYTORCH_ALLOC_CONF", NULL);
    ck_assert_msg(r.err[0] == '\0', "the constructor printed: %s", r.err);
    lw_run_free(&r);
}
END_TEST

START_TEST(user_settings_are_kept) {
    NEED_PYTHON();
    lw_run r;
    const char *env[] = {"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                         "LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, NULL, env);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True," ASYNC);
    expect(&r, "PYTORCH_ALLOC_CONF", NULL);
    lw_run_free(&r);
    /* PyTorch >= 2.8's name, used when the old one is unset. */
    const char *env2[] = {"PYTORCH_ALLOC_CONF=expandable_segments:True",
                          "LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, NULL, env2);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", NULL);
    expect(&r, "PYTORCH_ALLOC_CONF", "expandable_segments:True," ASYNC);
    lw_run_free(&r);
    /* Both: PyTorch reads PYTORCH_CUDA_ALLOC_CONF only; the other stays. */
    const char *env3[] = {"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128",
                          "PYTORCH_ALLOC_CONF=backend:native", "LEAKWATCH_TORCH_MODE=tensors",
                          NULL};
    run_env(&r, NULL, env3);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128," ASYNC);
    expect(&r, "PYTORCH_ALLOC_CONF", "backend:native");
    lw_run_free(&r);
}
END_TEST

START_TEST(native_backend_is_left_and_said_once_cuda_is_used) {
    NEED_PYTHON();
    const char *envs[2][3] = {
        {"PYTORCH_CUDA_ALLOC_CONF=backend:native", "LEAKWATCH_TORCH_MODE=tensors", NULL},
        {"PYTORCH_ALLOC_CONF=expandable_segments:True,backend:native",
         "LEAKWATCH_TORCH_MODE=tensors", NULL}};
    for (int k = 0; k < 2; k++) {
        lw_run r;
        run_env(&r, NULL, envs[k]);
        const char *value = strchr(envs[k][0], '=') + 1;
        expect(&r, k ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF", value);
        expect(&r, k ? "PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_ALLOC_CONF", NULL);
        /* No CUDA call, no word from leakwatch. */
        ck_assert_msg(r.err[0] == '\0', "stderr: %s", r.err);
        lw_run_free(&r);
        run_env(&r, "cuda", envs[k]);
        expect(&r, k ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF", value);
        ck_assert_msg(count(r.err, "backend:native") == 1, "stderr: %s", r.err);
        ck_assert_msg(strstr(r.err, "leakwatch: ") && strstr(r.err, "segments"), "stderr: %s",
                      r.err);
        lw_run_free(&r);
    }
    /* Quiet means quiet. */
    lw_run r;
    const char *quiet[] = {"PYTORCH_CUDA_ALLOC_CONF=backend:native", "LEAKWATCH_QUIET=1",
                           "LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, "cuda", quiet);
    ck_assert_msg(!strstr(r.err, "backend:native"), "stderr: %s", r.err);
    lw_run_free(&r);
    /* The async backend chosen by the user: left, nothing to say. */
    const char *async[] = {"PYTORCH_CUDA_ALLOC_CONF=" ASYNC, "LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, "cuda", async);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", ASYNC);
    ck_assert_msg(!strstr(r.err, "backend:"), "stderr: %s", r.err);
    lw_run_free(&r);
}
END_TEST

START_TEST(segments_mode_and_uncached_change_nothing) {
    NEED_PYTHON();
    const char *cases[][3] = {
        {"LEAKWATCH_TORCH_MODE=segments", NULL, NULL},
        {"LEAKWATCH_TORCH_MODE=segments", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", NULL},
        {"PYTORCH_NO_CUDA_MEMORY_CACHING=1", "LEAKWATCH_TORCH_MODE=tensors", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lw_run r;
        run_env(&r, "cuda", cases[i]);
        expect(&r, "PYTORCH_CUDA_ALLOC_CONF", i == 1 ? "expandable_segments:True" : NULL);
        expect(&r, "PYTORCH_ALLOC_CONF", NULL);
        /* Steps still come. */
        expect(&r, "PYTHONPATH", autostart_dir());
        ck_assert_msg(!strstr(r.err, "backend"), "stderr: %s", r.err);
        lw_run_free(&r);
    }
    /* A bad mode is named once leakwatch starts, and the default applies. */
    lw_run r;
    const char *bad[] = {"LEAKWATCH_TORCH_MODE=tensor", NULL};
    run_env(&r, "cuda", bad);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", NULL);
    ck_assert_msg(strstr(r.err, "LEAKWATCH_TORCH_MODE") && strstr(r.err, "segments tensors"),
                  "stderr: %s", r.err);
    lw_run_free(&r);
}
END_TEST

START_TEST(disabled_changes_nothing) {
    NEED_PYTHON();
    lw_run r;
    const char *env[] = {"LEAKWATCH_DISABLE=1", NULL};
    run_env(&r, NULL, env);
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", NULL);
    expect(&r, "PYTHONPATH", NULL);
    ck_assert_msg(strstr(r.out, "leakwatch not loaded"), "stdout: %s", r.out);
    lw_run_free(&r);
}
END_TEST

/* Not Python: a compiler, a shell, env(1) itself. */
START_TEST(other_programs_are_untouched) {
    const char *cases[][3] = {
        {NULL, NULL, NULL},
        {"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "PYTHONPATH=/x/y", NULL},
    };
    for (size_t i = 0; i < 2; i++) {
        lw_run r;
        lw_run_exe(&r, 1, "/usr/bin/env", NULL, cases[i]);
        RUN_OK(&r);
        if (!cases[i][0]) {
            ck_assert_msg(!strstr(r.out, "PYTORCH_"), "stdout: %s", r.out);
            ck_assert_msg(!strstr(r.out, "\nPYTHONPATH=") && strncmp(r.out, "PYTHONPATH=", 11),
                          "stdout: %s", r.out);
        } else {
            ck_assert_int_eq(count(r.out, "PYTORCH_CUDA_ALLOC_CONF"), 1);
            ck_assert_msg(strstr(r.out, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"),
                          "stdout: %s", r.out);
            ck_assert_msg(strstr(r.out, "PYTHONPATH=/x/y\n"), "stdout: %s", r.out);
        }
        ck_assert_msg(r.err[0] == '\0', "stderr: %s", r.err);
        lw_run_free(&r);
    }
}
END_TEST

START_TEST(pythonpath_is_prepended_once) {
    NEED_PYTHON();
    char want[PATH_MAX + 64], given[PATH_MAX + 64];
    lw_run r;
    const char *env[] = {"PYTHONPATH=/x/y:/z", NULL};
    run_env(&r, NULL, env);
    snprintf(want, sizeof want, "%s:/x/y:/z", autostart_dir());
    expect(&r, "PYTHONPATH", want);
    lw_run_free(&r);
    /* A child Python inherits it: not added again. */
    snprintf(given, sizeof given, "PYTHONPATH=/x/y:%s", autostart_dir());
    const char *env2[] = {given, NULL};
    run_env(&r, NULL, env2);
    expect(&r, "PYTHONPATH", given + 11);
    lw_run_free(&r);
    /* Steps off: PYTHONPATH untouched, the allocator still switched. */
    const char *env3[] = {"PYTHONPATH=/x/y", "LEAKWATCH_TORCH_STEPS=0",
                          "LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_env(&r, NULL, env3);
    expect(&r, "PYTHONPATH", "/x/y");
    expect(&r, "PYTORCH_CUDA_ALLOC_CONF", ASYNC);
    ck_assert_msg(strstr(r.out, "leakwatch not loaded"), "stdout: %s", r.out);
    lw_run_free(&r);
}
END_TEST

/* ---- automatic steps ---- */

static char user_site[64];

/* A user's own sitecustomize, which leakwatch's must not shadow. */
static void make_user_site(void) {
    if (user_site[0]) return;
    snprintf(user_site, sizeof user_site, "/tmp/lwsite.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(user_site));
    char path[128];
    snprintf(path, sizeof path, "%s/sitecustomize.py", user_site);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("import sys\nprint('user sitecustomize ran:', __name__)\nsys.stdout.flush()\n", f);
    fclose(f);
}

static void remove_user_site(void) {
    if (!user_site[0]) return;
    char path[128];
    snprintf(path, sizeof path, "%s/sitecustomize.py", user_site);
    unlink(path);
    rmdir(user_site);
    user_site[0] = '\0';
}

static int marker_line(const char *file, const char *marker) {
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    char buf[512];
    int line = 0, found = 0;
    while (!found && fgets(buf, sizeof buf, f)) {
        line++;
        if (strstr(buf, marker)) found = line;
    }
    fclose(f);
    ck_assert_msg(found, "no %s in %s", marker, file);
    return found;
}

/* The leaking site (first) has a frame at file:line. */
static void expect_leak_line(const lw_run *r, const char *file, int line, const char *who) {
    const lw_json *frames = lw_json_path(r->report, "sites[0].frames");
    for (size_t j = 0; j < lw_json_len(frames); j++) {
        const lw_json *f = lw_json_at(frames, j);
        const char *kind = lw_json_string(lw_json_get(f, "kind"));
        const char *fl = lw_json_string(lw_json_get(f, "file"));
        long long got = 0;
        if (kind && !strcmp(kind, "python") && fl && !strcmp(fl, file) &&
            lw_json_int64(lw_json_get(f, "line"), &got) == 0 && got == line)
            return;
    }
    ck_abort_msg("%s: no frame at %s:%d in the first site", who, file, line);
}

static void run_train(lw_run *r, const char *python, const char *pattern, const char *opt) {
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "PYTHONPATH=%s:%s", script("faketorch"), user_site);
    const char *env[] = {cudart_env,
                         path,
                         "STEPS=120",
                         "LEAKWATCH_QUIET=1",
                         "LEAKWATCH_WARN=0",
                         "PYTHONDONTWRITEBYTECODE=1",
                         NULL};
    const char *args[] = {script("torch_train.py"), pattern, opt, NULL};
    lw_run_exe(r, 1, python, args, env);
    ck_assert_msg(r->exit_code == 0, "%s %s: exit %d\n%s", python, pattern, r->exit_code, r->err);
    ck_assert_msg(r->report != NULL, "%s %s: no report\n%s", python, pattern, r->err);
    ck_assert_msg(strstr(r->out, "user sitecustomize ran: sitecustomize"),
                  "%s: the user's sitecustomize did not run; stdout: %s", python, r->out);
    ck_assert_int_eq(lw_rep_int(r, "growth.steps"), 120);
    ck_assert_str_eq(lw_json_string(lw_json_path(r->report, "growth.step_source")), "marker");
}

static const char *verdict(const lw_run *r) {
    const char *v = lw_json_string(lw_json_get(r->report, "verdict"));
    return v ? v : "(none)";
}

START_TEST(optimizer_steps_are_marked) {
    NEED_PYTHON();
    make_user_site();
    const char *train = script("torch_train.py");
    static const struct {
        const char *pattern, *marker;
    } leaks[] = {
        {"tensors", "# LEAK-TENSORS"}, {"segments", "# LEAK-SEGMENTS"}, {"vmm", "# LEAK-VMM"}};
    for (int p = 0; p < npythons; p++) {
        for (size_t i = 0; i < sizeof leaks / sizeof leaks[0]; i++) {
            lw_run r;
            run_train(&r, pythons[p], leaks[i].pattern, NULL);
            ck_assert_msg(!strcmp(verdict(&r), "leak"), "%s %s: verdict %s", pythons[p],
                          leaks[i].pattern, verdict(&r));
            expect_leak_line(&r, train, marker_line(train, leaks[i].marker), pythons[p]);
            lw_run_free(&r);
        }
        lw_run r;
        run_train(&r, pythons[p], "tensors", "fixed");
        ck_assert_msg(!strcmp(verdict(&r), "no_leak"), "%s fixed: verdict %s", pythons[p],
                      verdict(&r));
        lw_run_free(&r);
        /* importlib.reload(torch.optim.optimizer) empties its hook dict. */
        run_train(&r, pythons[p], "tensors", "reload");
        lw_run_free(&r);
        printf("test_torch: steps with %s ok\n", pythons[p]);
    }
    remove_user_site();
}
END_TEST

/* ---- default settings with the stand-in torch ---- */

/* Runs tests/python/SCRIPT ARG OPT under the shim with the stand-in torch. */
static void run_torch_with(lw_run *r, const char *python, const char *name, const char *arg,
                           const char *opt, const char *const *extra) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "PYTHONPATH=%s", script("faketorch"));
    const char *env[24];
    int n = 0;
    for (int i = 0; extra && extra[i] && n < 18; i++)
        env[n++] = extra[i];
    /* The defaults, each unless extra sets it: one entry per name (qemu-user
     * keeps the last of two, getenv finds the first). */
    const char *const dflt[] = {cudart_env, path, "LEAKWATCH_QUIET=1", "LEAKWATCH_WARN=0",
                                "PYTHONDONTWRITEBYTECODE=1"};
    int given = n;
    for (size_t d = 0; d < sizeof dflt / sizeof dflt[0]; d++) {
        size_t len = strcspn(dflt[d], "=") + 1;
        int set = 0;
        for (int i = 0; i < given; i++)
            set |= !strncmp(env[i], dflt[d], len);
        if (!set) env[n++] = dflt[d];
    }
    env[n] = NULL;
    const char *args[] = {script(name), arg, opt, NULL};
    lw_run_exe(r, 1, python, args, env);
}

static void run_torch(lw_run *r, const char *name, const char *arg, const char *opt,
                      const char *const *extra) {
    run_torch_with(r, pythons[0], name, arg, opt, extra);
}

static const char *rep_str(const lw_run *r, const char *path) {
    const char *s = lw_json_string(lw_json_path(r->report, path));
    return s ? s : "(none)";
}

/* The first site comes from PyTorch's allocation history and names
 * file:line (its place to look). */
static void expect_named(const lw_run *r, const char *file, int line, const char *who) {
    ck_assert_msg(!strcmp(rep_str(r, "sites[0].source"), "pytorch_history"),
                  "%s: first site's source %s\n%s", who, rep_str(r, "sites[0].source"), r->err);
    ck_assert_str_eq(rep_str(r, "sites[0].kind"), "pytorch_allocator");
    const char *f = rep_str(r, "sites[0].place_to_look.file");
    long long l = lw_rep_int(r, "sites[0].place_to_look.line");
    ck_assert_msg(!strcmp(f, file) && l == line, "%s: place to look %s:%lld, want %s:%d", who, f, l,
                  file, line);
    ck_assert_msg(lw_json_number(lw_json_path(r->report, "sites[0].bytes_per_step"), 0) > 0,
                  "%s: no rate", who);
}

/* The seed's leaks under default settings (each named at its line from
 * PyTorch's allocation history, the verdict from its own counters, the fixed
 * loops clean) are checked on real PyTorch 2.6: tests/real/test_torch_seed.py
 * (make check-real). What the stand-in torch still checks here is what the
 * real one cannot show on this CPU, or under other Pythons. */

/* A job whose own folder (first on its sys.path) holds a module named
 * leakwatch, a leakwatch.py or a leakwatch/ package (issue 32): under the
 * preload the job imports its own; the library's helper, loaded under a
 * name of its own, still records the job's allocations and marks a step
 * after each optimizer step. */
START_TEST(jobs_own_leakwatch_module_is_its_own) {
    NEED_PYTHON();
    static const struct {
        const char *job, *want;
    } jobs[] = {
        {"own_leakwatch/job.py", "imported leakwatch: the job's own leakwatch.py"},
        {"own_leakwatch_pkg/job.py", "imported leakwatch: the job's own leakwatch package"}};
    for (int p = 0; p < npythons; p++) {
        for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
            /* 40 marked steps: enough for the marked series to decide
             * (a leak of 1 MiB a step), so a slow interpreter exit under
             * load, a phase without marks, can never give the verdict
             * and its own count of points (it did with 12, below the 24
             * a verdict needs). */
            const char *env[] = {"COUNT=40", NULL};
            lw_run r;
            run_torch_with(&r, pythons[p], jobs[i].job, "torch", NULL, env);
            ck_assert_msg(r.exit_code == 0 && r.report, "%s %s: exit %d\n%s", pythons[p],
                          jobs[i].job, r.exit_code, r.err);
            ck_assert_msg(strstr(r.out, jobs[i].want),
                          "%s: the job did not get its own leakwatch; stdout: %s", pythons[p],
                          r.out);
            ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 40LL << 20);
            ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 40);
            ck_assert_str_eq(rep_str(&r, "growth.step_source"), "marker");
            lw_run_free(&r);
        }
    }
}
END_TEST

/* A job that imports leakwatch's package and marks its own steps: the import
 * gives the copy the auto-start loaded (one optimizer hook, which sees the
 * manual marks): each step is counted once. Found on PYTHONPATH, or, where
 * nothing on sys.path has it (leakwatch run without the package installed),
 * found last, after Python's own finders. */
START_TEST(manual_steps_with_the_package_count_once) {
    NEED_PYTHON();
    char python_dir[PATH_MAX], path[2][2 * PATH_MAX + 16];
    ck_assert_ptr_nonnull(realpath("python", python_dir));
    snprintf(path[0], sizeof path[0], "PYTHONPATH=%s:%s", script("faketorch"), python_dir);
    snprintf(path[1], sizeof path[1], "PYTHONPATH=%s", script("faketorch"));
    for (int p = 0; p < npythons; p++) {
        for (int k = 0; k < 2; k++) {
            const char *env[] = {path[k], "STEPS=30", NULL};
            lw_run r;
            run_torch_with(&r, pythons[p], "manual_steps.py", NULL, NULL, env);
            ck_assert_msg(r.exit_code == 0 && r.report, "%s %s: exit %d\n%s", pythons[p], path[k],
                          r.exit_code, r.err);
            ck_assert_msg(strstr(r.out, "leakwatch hooks: 1\n"), "%s: stdout: %s", pythons[p],
                          r.out);
            ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 30);
            /* The hook counts the optimizer's first step, before the first
             * leakwatch.step(), then sees the job's marks and stops. */
            ck_assert_int_eq(lw_rep_int(&r, "torch.steps.optimizer_calls"), 1);
            ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 30LL << 20);
            lw_run_free(&r);
        }
    }
}
END_TEST

/* The helper marks steps and brackets backward through Python builtins over
 * the library (leakwatch_py_*), under every CPython found: a ctypes call
 * costs one to three microseconds, a builtin's tens of nanoseconds. */
START_TEST(per_step_calls_are_builtins) {
    NEED_PYTHON();
    for (int p = 0; p < npythons; p++) {
        const char *env[] = {"STEPS=30", NULL};
        lw_run r;
        run_torch_with(&r, pythons[p], "torch_builtins.py", NULL, NULL, env);
        ck_assert_msg(r.exit_code == 0 && r.report, "%s: exit %d\n%s", pythons[p], r.exit_code,
                      r.err);
        ck_assert_msg(strstr(r.out, "calls: builtin_function_or_method builtin_function_or_method "
                                    "builtin_function_or_method\n"),
                      "%s: stdout: %s", pythons[p], r.out);
        ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), 30);
        ck_assert_int_eq(lw_rep_int(&r, "totals.live_bytes"), 30LL << 20);
        lw_run_free(&r);
    }
}
END_TEST

/* The helper under every CPython found (frame layouts, relative paths). */
START_TEST(seed_leak_named_with_every_python) {
    NEED_PYTHON();
    const char *seed = script("torch_seed.py");
    for (int p = 0; p < npythons; p++) {
        lw_run r;
        run_torch_with(&r, pythons[p], "torch_seed.py", "gradients", NULL, NULL);
        ck_assert_msg(r.exit_code == 0 && r.report, "%s: exit %d\n%s", pythons[p], r.exit_code,
                      r.err);
        ck_assert_msg(!strcmp(verdict(&r), "leak"), "%s: verdict %s", pythons[p], verdict(&r));
        expect_named(&r, seed, marker_line(seed, "# LEAK-BACKWARD"), pythons[p]);
        lw_run_free(&r);
    }
}
END_TEST

/* What PyTorch's cudaMallocAsync backend refuses works under the default;
 * under tensors mode the same job fails with PyTorch's own error (which is
 * why tensors mode is opt-in). */
START_TEST(refused_features_work_in_default_mode) {
    NEED_PYTHON();
    static const char *const features[] = {"compile", "snapshot", "ipc", "mempool"};
    static const char *const refused[] = {"checkPoolLiveAllocations", "recordHistory",
                                          "shareIpcHandle", "createOrIncrefPool"};
    const char *tensors[] = {"LEAKWATCH_TORCH_MODE=tensors", NULL};
    for (int i = 0; i < 4; i++) {
        lw_run r;
        run_torch(&r, "torch_features.py", features[i], NULL, NULL);
        char want[64];
        snprintf(want, sizeof want, "%s ok", features[i]);
        ck_assert_msg(r.exit_code == 0 && strstr(r.out, want), "%s: exit %d\n%s\n%s", features[i],
                      r.exit_code, r.out, r.err);
        ck_assert_msg(!strcmp(verdict(&r), "leak"), "%s: verdict %s", features[i], verdict(&r));
        expect_named(&r, script("torch_features.py"),
                     marker_line(script("torch_features.py"), "loss = criterion"), features[i]);
        /* The user's own recording was read, never turned on or off. */
        if (!strcmp(features[i], "snapshot"))
            ck_assert_str_eq(rep_str(&r, "torch.diagnosis.recorded_by"), "user");
        lw_run_free(&r);
        run_torch(&r, "torch_features.py", features[i], NULL, tensors);
        char err[160];
        snprintf(err, sizeof err,
                 "cudaMallocAsync does not yet support %s. If you need it, please file an issue "
                 "describing your use case.",
                 refused[i]);
        ck_assert_msg(r.exit_code == 1 && strstr(r.out, err), "%s in tensors mode: exit %d\n%s",
                      features[i], r.exit_code, r.out);
        lw_run_free(&r);
    }
}
END_TEST

/* One step per training iteration: k optimizers, a GradScaler that skips
 * updates, gradient accumulation; LEAKWATCH_TORCH_STEPS=optimizer counts
 * each optimizer.step(). */
START_TEST(steps_are_iterations) {
    NEED_PYTHON();
    static const struct {
        const char *env[4];
        long long steps, calls, skipped;
    } cases[] = {
        {{"OPTIMIZERS=2", NULL}, 160, 320, 0},
        {{"SCALER=1", "FAKETORCH_INF_EVERY=3", NULL}, 160, 160, 53},
        {{"OPTIMIZERS=2", "SCALER=1", "FAKETORCH_INF_EVERY=2", NULL}, 160, 320, 160},
        {{"ACCUM=4", NULL}, 40, 40, 0},
        {{"OPTIMIZERS=2", "LEAKWATCH_TORCH_STEPS=optimizer", NULL}, 320, 320, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lw_run r;
        run_torch(&r, "torch_seed.py", "loss", NULL, cases[i].env);
        ck_assert_msg(r.exit_code == 0 && r.report, "case %zu: exit %d\n%s", i, r.exit_code, r.err);
        ck_assert_int_eq(lw_rep_int(&r, "growth.steps"), cases[i].steps);
        ck_assert_int_eq(lw_rep_int(&r, "torch.steps.marks"), cases[i].steps);
        ck_assert_int_eq(lw_rep_int(&r, "torch.steps.optimizer_calls"), cases[i].calls);
        ck_assert_int_eq(lw_rep_int(&r, "torch.steps.skipped_by_grad_scaler"), cases[i].skipped);
        ck_assert_str_eq(rep_str(&r, "growth.step_source"), "marker");
        lw_run_free(&r);
    }
}
END_TEST

/* Tensors mode whose switch does not take (the job sets its own allocator
 * configuration before importing torch): said once, recorded, and the
 * helper works as in segments mode. */
START_TEST(tensors_mode_checks_the_backend_in_effect) {
    NEED_PYTHON();
    const char *seed = script("torch_seed.py");
    const char *env[] = {"LEAKWATCH_TORCH_MODE=tensors", "JOB_ALLOC_CONF=expandable_segments:False",
                         "LEAKWATCH_QUIET=0", NULL};
    lw_run r;
    run_torch(&r, "torch_seed.py", "loss", NULL, env);
    ck_assert_msg(r.exit_code == 0 && r.report, "exit %d\n%s", r.exit_code, r.err);
    ck_assert_msg(count(r.err, "did not take") == 1, "stderr: %s", r.err);
    ck_assert_str_eq(rep_str(&r, "torch.backend.in_effect"), "native");
    ck_assert_str_eq(rep_str(&r, "torch.backend.mode"), "segments");
    ck_assert_int_eq(lw_json_bool(lw_json_path(r.report, "torch.backend.fell_back"), 0), 1);
    expect_named(&r, seed, marker_line(seed, "# LEAK-LOSS"), "fallback");
    lw_run_free(&r);
    /* When it takes: recorded, and no window (the backend refuses history). */
    const char *env2[] = {"LEAKWATCH_TORCH_MODE=tensors", NULL};
    run_torch(&r, "torch_seed.py", "loss", NULL, env2);
    ck_assert_msg(r.exit_code == 0 && r.report, "exit %d\n%s", r.exit_code, r.err);
    ck_assert_str_eq(rep_str(&r, "torch.backend.in_effect"), "cudaMallocAsync");
    ck_assert_str_eq(rep_str(&r, "torch.backend.mode"), "tensors");
    ck_assert_msg(!strcmp(verdict(&r), "leak"), "verdict %s", verdict(&r));
    ck_assert_ptr_null(lw_json_path(r.report, "torch.diagnosis"));
    lw_run_free(&r);
}
END_TEST

/* Memory allocated in backward() on a thread with a Python thread state but
 * no frame (autograd's engine) takes the frames of the thread waiting in
 * backward(); here the tensors do not grow, so leakwatch's own series
 * decides. */
START_TEST(backward_allocations_name_the_caller) {
    NEED_PYTHON();
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "LW_PYPROBE=%s/tests/python/pyprobe.so", lw_build_dir());
    const char *env[] = {probe, NULL};
    const char *file = script("backward_engine.py");
    int line = marker_line(file, "# LEAK-ENGINE");
    lw_run r;
    run_torch(&r, "backward_engine.py", NULL, NULL, env);
    ck_assert_msg(r.exit_code == 0 && r.report, "exit %d\n%s", r.exit_code, r.err);
    ck_assert_str_eq(verdict(&r), "leak");
    ck_assert_str_eq(rep_str(&r, "growth.signal"), "live_bytes");
    ck_assert_msg(
        !strncmp(rep_str(&r, "sites[0].note"), "in backward, called from backward_engine.py:", 44),
        "note: %s", rep_str(&r, "sites[0].note"));
    expect_leak_line(&r, file, line, "backward");
    int engine = 0;
    const lw_json *frames = lw_json_path(r.report, "sites[0].frames");
    for (size_t j = 0; j < lw_json_len(frames); j++) {
        const char *fl = lw_json_string(lw_json_get(lw_json_at(frames, j), "file"));
        if (fl && !strcmp(fl, "<autograd engine>")) engine = 1;
        ck_assert_msg(!fl || !strstr(fl, "leakwatch/_torch.py"), "helper frame shown");
    }
    ck_assert_msg(engine, "no <autograd engine> frame");
    lw_run_free(&r);
}
END_TEST

/* The helper's read of PyTorch's counters stays within its time budget
 * (tests/python/counter_budget.py, on a clock of its own): the first marks
 * are all read, then every eighth (each mark 1 ms after the last, each read
 * 18.75 us: 400 times that is 7.5 ms). */
START_TEST(counters_are_read_within_a_budget) {
    NEED_PYTHON();
    lw_run r;
    /* The anatomy's sparse samples (issue 40) read the same counters: off
     * here, where every read is counted. */
    const char *no_anatomy[] = {"LEAKWATCH_TORCH_ANATOMY=0", NULL};
    run_torch(&r, "counter_budget.py", NULL, NULL, no_anatomy);
    ck_assert_msg(r.exit_code == 0, "exit %d\n%s", r.exit_code, r.err);
    int marks = 0, reads = 0, always = 0, budget = 0;
    const char *p = strstr(r.out, "marks ");
    ck_assert_msg(p && sscanf(p, "marks %d reads %d always %d budget %d", &marks, &reads, &always,
                              &budget) == 4,
                  "stdout: %s", r.out);
    ck_assert_int_eq(budget, 400);
    /* After the first `always`, one read per 7.5 ms: every eighth mark, less
     * the few the once-a-second free-memory reading stretches. */
    int rest = (marks - always) / 8;
    ck_assert_msg(reads <= always + rest + 1 && reads >= always + rest - 4,
                  "%d reads of %d marks (%d always read)", reads, marks, always);
    lw_run_free(&r);
}
END_TEST

/* A device PyTorch has not used yet is looked at on the helper's first
 * reads and then at every 16th (each look builds the allocator's whole
 * statistics dictionary, ~20 us under real PyTorch), not at every read; a
 * device taken into use later is read at every read from the next look
 * (tests/python/unused_device_reads.py: two devices, the second used from
 * mark 100 of 180). */
START_TEST(an_unused_device_is_looked_at_sparsely) {
    NEED_PYTHON();
    lw_run r;
    const char *env[] = {"LEAKWATCH_TORCH_ANATOMY=0", "FAKETORCH_DEVICES=2", NULL};
    run_torch(&r, "unused_device_reads.py", NULL, NULL, env);
    ck_assert_msg(r.exit_code == 0, "exit %d\n%s", r.exit_code, r.err);
    int reads = 0, dev0 = 0, before = 0, after = 0, used = 0, first = 0, every = 0, always = 0;
    const char *p = strstr(r.out, "reads ");
    ck_assert_msg(
        p &&
            sscanf(
                p,
                "reads %d dev0 %d dev1_before %d dev1_after %d used %d first %d every %d always %d",
                &reads, &dev0, &before, &after, &used, &first, &every, &always) == 8,
        "stdout: %s", r.out);
    ck_assert_int_ge(always, 180);
    ck_assert_int_eq(reads, 180);
    ck_assert_int_eq(dev0, reads);
    /* Reads 1-99: the first 8, then 16, 32, ..., 96 (99 before). */
    ck_assert_msg(before == 8 + 6, "device 1 looked at %d times in 99 reads before its use",
                  before);
    ck_assert_int_eq(first, 8);
    ck_assert_int_eq(every, 16);
    /* Used from mark 100: seen at read 112, then read at every read. */
    ck_assert_int_eq(used, 1);
    ck_assert_msg(after == 180 - 112 + 1, "device 1 read %d times after its use", after);
    lw_run_free(&r);
}
END_TEST

/* The anatomy's walks of the job's objects (issue 40) keep within 0.25 %
 * of the job's time (tests/python/anatomy_budget.py, on a clock of its own:
 * a mark each 1 ms, a walk 60 ms): over 60,000 marks the schedule alone
 * (steps 1, 2, 4, ..., 1024, then every 1024) would walk 68 times, 4 s of
 * a 64 s job. */
START_TEST(anatomy_walks_keep_within_a_budget) {
    NEED_PYTHON();
    lw_run r;
    run_torch(&r, "anatomy_budget.py", NULL, NULL, NULL);
    ck_assert_msg(r.exit_code == 0, "exit %d\n%s", r.exit_code, r.err);
    int marks = 0, walks = 0, budget = 0;
    double walk_s = 0, total_s = 0;
    const char *p = strstr(r.out, "marks ");
    ck_assert_msg(p && sscanf(p, "marks %d walks %d walk_s %lf total_s %lf budget %d", &marks,
                              &walks, &walk_s, &total_s, &budget) == 5,
                  "stdout: %s", r.out);
    /* The first walk at step 1; each later one after 399 times a walk. */
    ck_assert_msg(walks >= 2 && walks <= 4, "%d walks in %d marks", walks, marks);
    ck_assert_msg(walk_s - 0.060 <= total_s / 399, "walks %.3f s of %.3f s", walk_s, total_s);
    ck_assert_int_eq(budget, 399);
    lw_run_free(&r);
}
END_TEST

/* Pinned host memory is host RAM: its own series and verdict, never in the
 * device floor; its leak is the run's leak when the device's memory shows
 * none (issue 40: it was "no_leak"), with its own rate, named at its line;
 * a ring of buffers is clean. */
START_TEST(pinned_host_has_its_own_verdict) {
    NEED_PYTHON();
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s", script("pinned_leak.py"));
    int line = marker_line(file, "# LEAK-PINNED");
    for (int both = 0; both < 3; both++) {
        lw_run r;
        run_torch(&r, "pinned_leak.py",
                  both == 1   ? "device"
                  : both == 2 ? "ring"
                              : NULL,
                  NULL, NULL);
        ck_assert_msg(r.exit_code == 0 && r.report, "exit %d\n%s", r.exit_code, r.err);
        if (both == 2) {
            ck_assert_str_eq(rep_str(&r, "growth.pinned_host.verdict"), "no_leak");
            ck_assert_str_eq(verdict(&r), "no_leak");
            ck_assert_str_eq(rep_str(&r, "growth.memory_kind"), "device");
            lw_run_free(&r);
            continue;
        }
        ck_assert_str_eq(rep_str(&r, "growth.pinned_host.verdict"), "leak");
        ck_assert_int_eq((long long)lw_json_number(
                             lw_json_path(r.report, "growth.pinned_host.bytes_per_step"), 0),
                         64 * 1024);
        ck_assert_str_eq(verdict(&r), "leak");
        ck_assert_int_eq(
            (long long)lw_json_number(lw_json_path(r.report, "growth.bytes_per_step"), 0),
            both ? 1 << 20 : 64 * 1024);
        ck_assert_str_eq(rep_str(&r, "growth.signal"), both ? "live_bytes" : "pinned_host");
        ck_assert_str_eq(rep_str(&r, "growth.memory_kind"), both ? "device" : "pinned_host");
        if (!both) {
            ck_assert_str_eq(rep_str(&r, "answer.kind"), "pinned_host");
            expect_leak_line(&r, file, line, "pinned");
        }
        lw_run_free(&r);
    }
}
END_TEST

/* What keeps a pinned host leak alive (issue 40): the stand-in torch's
 * pin_memory=True buffers, one kept per step in a list, are found by the
 * owner search from the leaking pinned site's live blocks
 * (leakwatch_torch_host_blocks) and named in that site's entry, under the
 * exit line and with the pinned hint; the ring of buffers is clean and names
 * none. On real PyTorch: tests/real/test_memory_kinds.py. */
START_TEST(pinned_host_owner_is_named) {
    NEED_PYTHON();
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s", script("torch_offload.py"));
    const char *const loud[] = {"LEAKWATCH_QUIET=0", NULL};
    for (int fixed = 0; fixed < 2; fixed++) {
        lw_run r;
        run_torch(&r, "torch_offload.py", fixed ? "fixed" : NULL, NULL, loud);
        ck_assert_msg(r.exit_code == 0 && r.report, "exit %d\n%s", r.exit_code, r.err);
        if (fixed) {
            ck_assert_str_eq(verdict(&r), "no_leak");
            ck_assert_msg(!strstr(r.err, "kept by"), "%s", r.err);
            lw_run_free(&r);
            continue;
        }
        ck_assert_str_eq(verdict(&r), "leak");
        ck_assert_str_eq(rep_str(&r, "growth.memory_kind"), "pinned_host");
        ck_assert_msg(!strcmp(rep_str(&r, "sites[0].owner.name"), "buffers"), "owner %s\n%s",
                      rep_str(&r, "sites[0].owner.text"), r.err);
        ck_assert_str_eq(rep_str(&r, "sites[0].owner.kind"), "list");
        ck_assert_str_eq(rep_str(&r, "sites[0].owner.shape"), "pinned");
        ck_assert_str_eq(rep_str(&r, "sites[0].owners[0].name"), "buffers");
        ck_assert_int_eq(lw_rep_int(&r, "sites[0].owner.line"),
                         marker_line(file, "buffers.append(buf)"));
        ck_assert_int_ge(lw_rep_int(&r, "sites[0].owner.window_count"), 3);
        ck_assert_ptr_nonnull(lw_json_path(r.report, "sites[0].owner_search.seconds"));
        /* Its size as every output prints sizes (fmt.c's rule, through
         * leakwatch_format_bytes): the helper prints none of its own. */
        char size[48], said[64];
        lw_fmt_bytes(lw_json_number(lw_json_path(r.report, "sites[0].owner.bytes"), NAN), size,
                     sizeof size);
        snprintf(said, sizeof said, ", %s;", size);
        ck_assert_msg(strstr(rep_str(&r, "sites[0].owner.text"), said), "%s not in %s", said,
                      rep_str(&r, "sites[0].owner.text"));
        ck_assert_msg(
            strstr(r.err, "kept by list `buffers` (local of `offload`, torch_offload.py:") &&
                strstr(r.err, "ring of"),
            "%s", r.err);
        lw_run_free(&r);
    }
}
END_TEST

/* What keeps each seed leak alive (issue 31: the owner, its scope, shape and
 * line, the fix hint, the summary and leakwatch report; the attribute,
 * closure and not-found shapes; off with LEAKWATCH_TORCH_OWNER_MS=0) is
 * checked on real PyTorch 2.6: tests/real/test_torch_owner.py. */

int main(void) {
    /* The runs inherit this environment: start them from a known one. */
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    unsetenv("PYTORCH_ALLOC_CONF");
    unsetenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    unsetenv("PYTHONPATH");
    snprintf(cudart_env, sizeof cudart_env, "LW_CUDART=%s/tests/lib/libcudart.so", lw_build_dir());
    Suite *s = suite_create("torch");
    TCase *env = tcase_create("environment");
    tcase_set_timeout(env, 120);
    tcase_add_test(env, default_leaves_the_allocator_alone);
    tcase_add_test(env, tensors_mode_gets_the_async_backend);
    tcase_add_test(env, user_settings_are_kept);
    tcase_add_test(env, native_backend_is_left_and_said_once_cuda_is_used);
    tcase_add_test(env, segments_mode_and_uncached_change_nothing);
    tcase_add_test(env, disabled_changes_nothing);
    tcase_add_test(env, other_programs_are_untouched);
    tcase_add_test(env, pythonpath_is_prepended_once);
    suite_add_tcase(s, env);
    TCase *steps = tcase_create("steps");
    tcase_set_timeout(steps, 300);
    tcase_add_test(steps, optimizer_steps_are_marked);
    tcase_add_test(steps, jobs_own_leakwatch_module_is_its_own);
    tcase_add_test(steps, manual_steps_with_the_package_count_once);
    tcase_add_test(steps, per_step_calls_are_builtins);
    suite_add_tcase(s, steps);
    TCase *dflt = tcase_create("default");
    tcase_set_timeout(dflt, 600);
    tcase_add_test(dflt, seed_leak_named_with_every_python);
    tcase_add_test(dflt, refused_features_work_in_default_mode);
    tcase_add_test(dflt, steps_are_iterations);
    tcase_add_test(dflt, tensors_mode_checks_the_backend_in_effect);
    tcase_add_test(dflt, pinned_host_has_its_own_verdict);
    tcase_add_test(dflt, pinned_host_owner_is_named);
    tcase_add_test(dflt, backward_allocations_name_the_caller);
    tcase_add_test(dflt, counters_are_read_within_a_budget);
    tcase_add_test(dflt, an_unused_device_is_looked_at_sparsely);
    tcase_add_test(dflt, anatomy_walks_keep_within_a_budget);
    suite_add_tcase(s, dflt);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
