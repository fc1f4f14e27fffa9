/* SPDX-License-Identifier: Apache-2.0 */
/* Readable native frames: names for every function (demangled for C++),
 * module and offset always, file:line where debug information exists, and
 * nothing invented where it does not. Needs binutils' addr2line (or
 * llvm-addr2line) on PATH, as any machine with a compiler has. */
#include "../check_run.h"
#include "addr2line.h"
#include "harness.h"
#include "symbolize.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024LL * 1024LL)

/* The source file next to this one, e.g. "../programs/cxx_alloc.cpp". */
static void sibling(const char *rel, char *out, size_t n) {
    const char *slash = strrchr(__FILE__, '/');
    snprintf(out, n, "%.*s/%s", slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".", rel);
}

/* The number of the first line of file containing needle after the first
 * line containing after (or from the start when after is NULL). */
static int line_of(const char *rel, const char *after, const char *needle) {
    char path[PATH_MAX];
    sibling(rel, path, sizeof path);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s (run from the repository root)", path);
    char buf[1024];
    int n = 0, found = 0, armed = after == NULL;
    while (fgets(buf, sizeof buf, f)) {
        n++;
        if (!armed) {
            armed = strstr(buf, after) != NULL;
            continue;
        }
        if (strstr(buf, needle)) {
            found = n;
            break;
        }
    }
    fclose(f);
    ck_assert_msg(found > 0, "no \"%s\" in %s", needle, path);
    return found;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

static const char *str(const lw_json *frame, const char *key) {
    return lw_json_string(lw_json_get(frame, key));
}

static long long num(const lw_json *frame, const char *key) {
    long long v = -1;
    if (lw_json_int64(lw_json_get(frame, key), &v) != 0) return -1;
    return v;
}

/* The frame of site named fn. */
static const lw_json *frame_named(const lw_json *site, const char *fn) {
    const lw_json *frames = lw_json_get(site, "frames");
    for (size_t j = 0; j < lw_json_len(frames); j++) {
        const char *f = str(lw_json_at(frames, j), "function");
        if (f && !strcmp(f, fn)) return lw_json_at(frames, j);
    }
    return NULL;
}

/* Module and offset are there whatever else is missing. */
static void check_module(const lw_json *frame, const char *module_suffix) {
    ck_assert_msg(ends_with(str(frame, "module"), module_suffix), "module %s, expected *%s",
                  str(frame, "module"), module_suffix);
    const char *off = str(frame, "offset");
    ck_assert_msg(off && !strncmp(off, "0x", 2) && strtoull(off + 2, NULL, 16) > 0, "offset %s",
                  off ? off : "null");
}

static void check_line(const lw_json *frame, const char *file_suffix, int line) {
    ck_assert_msg(ends_with(str(frame, "file"), file_suffix), "%s: file %s, expected *%s",
                  str(frame, "function"), str(frame, "file"), file_suffix);
    ck_assert_msg(num(frame, "line") == line, "%s: line %lld, expected %d", str(frame, "function"),
                  num(frame, "line"), line);
}

static void check_no_line(const lw_json *frame) {
    ck_assert_msg(lw_json_is_null(lw_json_get(frame, "file")), "%s: file %s, expected null",
                  str(frame, "function"), str(frame, "file"));
    ck_assert_msg(lw_json_is_null(lw_json_get(frame, "line")), "%s: line %lld, expected null",
                  str(frame, "function"), num(frame, "line"));
}

#define GROW "ns::Widget<int>::grow(unsigned long)"

START_TEST(cxx_frames_demangled_with_lines) {
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, NULL);
    RUN_OK(&r);
    const lw_json *site = lw_rep_site_named(&r, GROW);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", GROW, r.err);
    long long live = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &live), 0);
    ck_assert_int_eq(live, 3 * MiB);

    /* The class template's method: where it calls the inlined helper. */
    const lw_json *grow = frame_named(site, GROW);
    check_line(grow, "/cxx_alloc.cpp", line_of("../programs/cxx_alloc.cpp", NULL, "LW_LINE_GROW"));
    check_module(grow, "/cxx_alloc");

    /* Its caller, the lambda, then main. */
    const lw_json *frames = lw_json_get(site, "frames");
    const lw_json *lambda = NULL, *main_frame = NULL;
    for (size_t j = 0; j + 1 < lw_json_len(frames); j++)
        if (lw_json_at(frames, j) == grow) lambda = lw_json_at(frames, j + 1);
    ck_assert_ptr_nonnull(lambda);
    const char *fn = str(lambda, "function");
    ck_assert_msg(fn && !strncmp(fn, "main::{lambda(", 14) && strstr(fn, "::operator()("),
                  "caller of grow: %s", fn ? fn : "null");
    check_line(lambda, "/cxx_alloc.cpp",
               line_of("../programs/cxx_alloc.cpp", NULL, "LW_LINE_LAMBDA"));
    check_module(lambda, "/cxx_alloc");
    main_frame = frame_named(site, "main");
    ck_assert_ptr_nonnull(main_frame);
    ck_assert(ends_with(str(main_frame, "file"), "/cxx_alloc.cpp"));
    ck_assert_int_gt(num(main_frame, "line"), 0);
    lw_run_free(&r);
}
END_TEST

START_TEST(c_frames_with_lines) {
    lw_run r;
    const char *args[] = {"malloc", "3", "1048576", NULL};
    lw_run_prog(&r, 1, "rt_paths", args, NULL);
    RUN_OK(&r);
    const lw_json *site = lw_rep_site_named(&r, "leak_runtime");
    ck_assert_msg(site != NULL, "no site names leak_runtime\nstderr: %s", r.err);
    const lw_json *f = frame_named(site, "leak_runtime");
    check_line(
        f, "/rt_paths.c",
        line_of("../programs/rt_paths.c", "void leak_runtime(const char *path) {", "alloc_via("));
    check_module(f, "/rt_paths");
    lw_run_free(&r);
}
END_TEST

START_TEST(source_lines_off) {
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    const char *env[] = {"LEAKWATCH_SOURCE_LINES=0", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, env);
    RUN_OK(&r);
    const lw_json *site = lw_rep_site_named(&r, GROW);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", GROW, r.err);
    check_module(frame_named(site, GROW), "/cxx_alloc");
    const lw_json *sites = lw_json_get(r.report, "sites");
    for (size_t i = 0; i < lw_json_len(sites); i++) {
        const lw_json *frames = lw_json_get(lw_json_at(sites, i), "frames");
        for (size_t j = 0; j < lw_json_len(frames); j++)
            check_no_line(lw_json_at(frames, j));
    }
    lw_run_free(&r);
}
END_TEST

/* Runs a copy of rt_paths made by strip with option (in a private folder) and
 * returns the report; *copy gets the copy's path. $STRIP names the strip
 * program (make check-aarch64: the cross binutils' one). */
static void run_stripped(lw_run *r, const char *option, char *copy, size_t n) {
    char dir[] = "/tmp/lwstrip.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(copy, n, "%s/rt_paths", dir);
    char cmd[3 * PATH_MAX];
    const char *strip = getenv("STRIP");
    snprintf(cmd, sizeof cmd, "%s %s -o '%s' '%s/tests/programs/rt_paths'",
             strip && *strip ? strip : "strip", option, copy, lw_build_dir());
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    const char *args[] = {"malloc", "3", "1048576", NULL};
    lw_run_exe(r, 1, copy, args, NULL);
    unlink(copy);
    rmdir(dir);
    RUN_OK(r);
}

START_TEST(stripped_of_debug_information) {
    /* .symtab stays: every function keeps its name, none gets a line. */
    lw_run r;
    char copy[PATH_MAX];
    run_stripped(&r, "--strip-debug", copy, sizeof copy);
    const lw_json *site = lw_rep_site_named(&r, "leak_runtime");
    ck_assert_msg(site != NULL, "no site names leak_runtime\nstderr: %s", r.err);
    const lw_json *frames = lw_json_get(site, "frames");
    int mine = 0;
    for (size_t j = 0; j < lw_json_len(frames); j++) {
        const lw_json *f = lw_json_at(frames, j);
        if (!str(f, "module") || strcmp(str(f, "module"), copy) != 0) continue;
        mine++;
        ck_assert_ptr_nonnull(str(f, "function"));
        check_no_line(f);
    }
    ck_assert_int_ge(mine, 3); /* alloc_via, leak_runtime, main */
    check_module(frame_named(site, "leak_runtime"), "/rt_paths");
    lw_run_free(&r);
}
END_TEST

START_TEST(stripped_of_all_symbols) {
    /* Only .dynsym is left: main is there (the program is linked with
     * -rdynamic), its static functions are not. No lines. */
    lw_run r;
    char copy[PATH_MAX];
    run_stripped(&r, "--strip-all", copy, sizeof copy);
    ck_assert_msg(r.report != NULL, "no report; stderr: %s", r.err);
    const lw_json *site = lw_json_at(lw_json_get(r.report, "sites"), 0);
    long long live = 0;
    ck_assert_int_eq(lw_json_int64(lw_json_get(site, "live_bytes"), &live), 0);
    ck_assert_int_eq(live, 3 * MiB);
    ck_assert_ptr_null(frame_named(site, "leak_runtime"));
    const lw_json *m = frame_named(site, "main");
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(str(m, "module"), copy);
    check_module(m, "/rt_paths");
    check_no_line(m);
    lw_run_free(&r);
}
END_TEST

/* A folder holding an "addr2line" made of script (run by /bin/sh, with $DIR
 * its folder and $REAL the real tool), first on this test's PATH (each test
 * runs in its own process; the harness hands our environment down). */
static void fake_tool(char *dir, size_t n, const char *script) {
    char *cache = NULL;
    const char *real = lw_a2l_tool(&cache);
    ck_assert_msg(real != NULL, "no addr2line on PATH");
    snprintf(dir, n, "/tmp/lwtool.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[PATH_MAX], env[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/addr2line", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#!/bin/sh\nDIR='%s'\nREAL='%s'\n%s\n", dir, real, script);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0700), 0);
    const char *old = getenv("PATH");
    snprintf(env, sizeof env, "%s:%s", dir, old ? old : "/usr/bin:/bin");
    setenv("PATH", env, 1);
    lw_a2l_tool_free(cache);
}

static void remove_fake_tool(const char *dir) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/addr2line", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/env.txt", dir);
    unlink(path);
    rmdir(dir);
}

START_TEST(child_runs_without_the_shim) {
    /* Our addr2line, in between, records the environment it was given. */
    char dir[64];
    fake_tool(dir, sizeof dir, "env > \"$DIR/env.txt\"; exec \"$REAL\" \"$@\"");
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, NULL);
    RUN_OK(&r);
    const lw_json *site = lw_rep_site_named(&r, GROW);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", GROW, r.err);
    check_line(frame_named(site, GROW), "/cxx_alloc.cpp",
               line_of("../programs/cxx_alloc.cpp", NULL, "LW_LINE_GROW"));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/env.txt", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "the fake addr2line did not run");
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(strncmp(line, "LD_PRELOAD=", 11) != 0, "child got %s", line);
        ck_assert_msg(strncmp(line, "DEBUGINFOD_URLS=", 16) != 0, "child got %s", line);
    }
    fclose(f);
    remove_fake_tool(dir);
    lw_run_free(&r);
}
END_TEST

START_TEST(hung_tool_does_not_hang_the_job) {
    /* Reads nothing and never answers: the report waits one answer's time
     * (5 s) once, then goes on with names only. */
    char dir[64];
    fake_tool(dir, sizeof dir, "exec sleep 600");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    RUN_OK(&r);
    ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 30);
    const lw_json *site = lw_rep_site_named(&r, GROW);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", GROW, r.err);
    check_no_line(frame_named(site, GROW));
    check_module(frame_named(site, GROW), "/cxx_alloc");
    remove_fake_tool(dir);
    lw_run_free(&r);
}
END_TEST

START_TEST(no_tool_names_only) {
    /* An addr2line that cannot be run (as good as none on PATH): silently
     * no lines, names as before, no message. */
    char dir[64];
    fake_tool(dir, sizeof dir, "exit 1");
    setenv("PATH", dir, 1);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/addr2line", dir);
    unlink(path);
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, NULL);
    RUN_OK(&r);
    const lw_json *site = lw_rep_site_named(&r, GROW);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", GROW, r.err);
    check_no_line(frame_named(site, GROW));
    ck_assert_ptr_null(strstr(r.err, "addr2line"));
    remove_fake_tool(dir);
    lw_run_free(&r);
}
END_TEST

/* In this very program: a frame with a function inlined into it. The report
 * shows inlined frames where site_name.c collects lw_symbol.inlined; the
 * symboliser's answer is checked here directly. */
__attribute__((noinline)) static uintptr_t return_address(void) {
    uintptr_t r = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return r;
}

enum { INNER_LINE = __LINE__ + 2 };
static inline __attribute__((always_inline)) uintptr_t inlined_helper(void) {
    uintptr_t r = return_address();
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return r;
}

enum { OUTER_LINE = __LINE__ + 2 };
__attribute__((noinline)) static uintptr_t outer_function(void) {
    uintptr_t r = inlined_helper();
    __asm__ volatile("" ::: "memory");
    return r;
}

START_TEST(inlined_frames) {
    lw_symtab *t = lw_symtab_new();
    ck_assert_ptr_nonnull(t);
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(s->function && !strncmp(s->function, "outer_function", 14), "function %s",
                  s->function ? s->function : "null");
    ck_assert_msg(ends_with(s->file, "/test_symbols.c"), "file %s", s->file ? s->file : "null");
    ck_assert_int_eq(s->line, OUTER_LINE);
    ck_assert_int_eq(s->ninlined, 1);
    ck_assert_str_eq(s->inlined[0].function, "inlined_helper");
    ck_assert(ends_with(s->inlined[0].file, "/test_symbols.c"));
    ck_assert_int_eq(s->inlined[0].line, INNER_LINE);
    ck_assert_ptr_eq(s->inlined[0].module, s->module);
    ck_assert_uint_eq(s->inlined[0].offset, s->offset);
    /* One lookup per address: the same answer, not a second request. */
    ck_assert_ptr_eq(lw_symtab_lookup(t, outer_function()), s);
    lw_symtab_free(t);
}
END_TEST

/* Reports share one cache of names and keep each module's addr2line: a
 * second report names a known address from the cache and a new one through
 * the addr2line the first report started, without starting another. */
START_TEST(second_report_starts_no_addr2line) {
    unsigned long before = lw_a2l_started();
    lw_symtab *t = lw_symtab_new();
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert_msg(s && ends_with(s->file, "/test_symbols.c"), "no source line: %s",
                  s && s->file ? s->file : "null");
    lw_symtab_free(t);
    unsigned long first = lw_a2l_started();
    ck_assert_uint_eq(first, before + 1);
    t = lw_symtab_new();
    ck_assert_ptr_eq(lw_symtab_lookup(t, outer_function()), s);
    const lw_symbol *n = lw_symtab_lookup(t, return_address());
    ck_assert_msg(n && ends_with(n->file, "/test_symbols.c") && n->line > 0,
                  "new address: no source line");
    ck_assert_msg(n->function && !strncmp(n->function, "second_report_starts_no_addr2line", 33),
                  "function %s", n->function ? n->function : "null");
    lw_symtab_free(t);
    ck_assert_uint_eq(lw_a2l_started(), first);
}
END_TEST

/* dlclose renews the cache: a library unloaded and another loaded at the
 * same address gets its own names; a report that held the old answers
 * across the unload can still read them. */
START_TEST(cache_renewed_after_dlclose) {
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/tests/lib/libsymvar1.so", lw_build_dir());
    snprintf(p2, sizeof p2, "%s/tests/lib/libsymvar2.so", lw_build_dir());
    void *h = dlopen(p1, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_probe");
    uintptr_t a1 = probe();
    lw_symtab *held = lw_symtab_new();
    const lw_symbol *s1 = lw_symtab_lookup(held, a1);
    ck_assert_msg(s1 && s1->function && !strcmp(s1->function, "symvar_first_one"), "function %s",
                  s1 && s1->function ? s1->function : "null");
    ck_assert(ends_with(s1->module, "/libsymvar1.so"));
    dlclose(h);
    h = dlopen(p2, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    probe = (uintptr_t(*)(void))dlsym(h, "symvar_probe");
    uintptr_t a2 = probe();
    if (a2 != a1) {
        /* The case needs the second library where the first was (the
         * loader reuses the range on x86-64; qemu-user's may not). */
        printf("test_symbols: cache_renewed_after_dlclose skipped: libsymvar2.so loaded at "
               "another address (%#lx, not %#lx)\n",
               (unsigned long)a2, (unsigned long)a1);
        dlclose(h);
        lw_symtab_free(held);
        return;
    }
    lw_symtab *t = lw_symtab_new();
    const lw_symbol *s2 = lw_symtab_lookup(t, a2);
    ck_assert_msg(s2 && s2->function && !strcmp(s2->function, "symvar_other_two"),
                  "stale name after dlclose: %s", s2 && s2->function ? s2->function : "null");
    ck_assert(ends_with(s2->module, "/libsymvar2.so"));
    lw_symtab_free(t);
    /* The report that started before the unload still reads its answers. */
    ck_assert_str_eq(s1->function, "symvar_first_one");
    ck_assert(ends_with(s1->module, "/libsymvar1.so"));
    lw_symtab_free(held);
    dlclose(h);
}
END_TEST

/* Where each module is found without dladdr (a table of the loaded
 * objects' segments, made again when objects come or go), the answer is
 * dladdr's: the same module and offset for addresses in every loaded
 * object's code (the program, the loader, the vDSO, the C library), in a
 * library loaded after the table was made, and none where a library was
 * unloaded. */
static const char *exe_of_test(void) {
    static char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static uintptr_t first_object_bias;
static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    first_object_bias = info->dlpi_addr;
    return 1;
}

/* t's answer for return address ret agrees with dladdr on ret - 1. */
static void check_as_dladdr(lw_symtab *t, uintptr_t ret) {
    const lw_symbol *s = lw_symtab_lookup(t, ret);
    ck_assert_ptr_nonnull(s);
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)(ret - 1), &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) {
        ck_assert_msg(s->module == NULL, "%#lx: module %s where dladdr has none",
                      (unsigned long)ret, s->module);
        return;
    }
    const char *want = lm->l_name && lm->l_name[0] ? lm->l_name : NULL;
    if (!want && (uintptr_t)info.dli_fbase == first_object_bias) want = exe_of_test();
    ck_assert_msg(want ? s->module && !strcmp(s->module, want) : s->module == NULL,
                  "%#lx: module %s, dladdr's %s", (unsigned long)ret,
                  s->module ? s->module : "null", want ? want : "null");
    ck_assert_msg(s->offset == ret - 1 - (uintptr_t)info.dli_fbase,
                  "%#lx in %s: offset %#lx, dladdr's %#lx", (unsigned long)ret, want ? want : "?",
                  (unsigned long)s->offset, (unsigned long)(ret - 1 - (uintptr_t)info.dli_fbase));
}

typedef struct {
    lw_symtab *t;
    int objects, checked;
} walk;

/* 64 addresses spread over each executable segment, its first and last
 * bytes among them. */
static int check_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    walk *w = data;
    w->objects++;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        for (uintptr_t k = 0; k <= 64; k++) {
            check_as_dladdr(w->t, lo + 1 + (ph->p_memsz - 1) * k / 64);
            w->checked++;
        }
    }
    return 0;
}

START_TEST(modules_and_offsets_as_dladdr_finds_them) {
    dl_iterate_phdr(first_object, NULL);
    lw_symtab *t = lw_symtab_new_names();
    /* A first lookup makes the table of loaded objects... */
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert_msg(s && s->function && !strncmp(s->function, "outer_function", 14), "function %s",
                  s && s->function ? s->function : "null");
    check_as_dladdr(t, outer_function());
    /* ...then a library comes, loaded on its own (RTLD_LOCAL): the same
     * report names it. */
    char p1[4200];
    snprintf(p1, sizeof p1, "%s/tests/lib/libsymvar1.so", lw_build_dir());
    void *h = dlopen(p1, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_probe");
    uintptr_t (*hidden)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_unexported_probe");
    uintptr_t a = probe();
    s = lw_symtab_lookup(t, a);
    ck_assert_msg(s && s->function && !strcmp(s->function, "symvar_first_one"), "function %s",
                  s && s->function ? s->function : "null");
    ck_assert(ends_with(s->module, "/libsymvar1.so"));
    s = lw_symtab_lookup(t, hidden());
    ck_assert_msg(s && s->function && !strcmp(s->function, "symvar_unexported"), "function %s",
                  s && s->function ? s->function : "null");
    /* Named by dladdr alone (an exported symbol of no type). */
    uintptr_t (*untyped)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_untyped_probe");
    s = lw_symtab_lookup(t, untyped());
    ck_assert_msg(s && s->function && !strcmp(s->function, "symvar_untyped"), "function %s",
                  s && s->function ? s->function : "null");
    check_as_dladdr(t, untyped());
    walk w = {.t = t};
    dl_iterate_phdr(check_object, &w);
    ck_assert_int_ge(w.objects, 4); /* the program, libc, the loader, libsymvar1 at least */
    ck_assert_int_ge(w.checked, 4 * 65);
    lw_symtab_free(t);
    /* Unloaded (and nothing loaded since): the address is no module's. */
    ck_assert_int_eq(dlclose(h), 0);
    t = lw_symtab_new_names();
    if (dladdr1((void *)(a - 1), &(Dl_info){0}, (void **)&(struct link_map *){NULL},
                RTLD_DL_LINKMAP) == 0) {
        s = lw_symtab_lookup(t, a);
        ck_assert_msg(s && !s->module && !s->function,
                      "an unloaded library's address still named: %s in %s",
                      s && s->function ? s->function : "null", s && s->module ? s->module : "null");
    }
    check_as_dladdr(t, a);
    lw_symtab_free(t);
}
END_TEST

/* A copy of libsymvar1.so in a folder of its own, made by strip with
 * option; *dir gets the folder (for the caller to remove). */
static void stripped_copy(const char *option, char *dir, size_t ndir, char *copy, size_t n) {
    snprintf(dir, ndir, "/tmp/lwsymstrip.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(copy, n, "%s/libsymcopy.so", dir);
    char cmd[3 * PATH_MAX];
    const char *strip = getenv("STRIP");
    snprintf(cmd, sizeof cmd, "%s %s -o '%s' '%s/tests/lib/libsymvar1.so'",
             strip && *strip ? strip : "strip", option, copy, lw_build_dir());
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* Without .symtab the names come from .dynsym: the exported function is
 * named, the static one is not (nothing invented for it, by the table or by
 * dladdr's fallback). Deleted before its first lookup, the library's file
 * gives no table at all: dladdr's exported name, still none for the static
 * function. */
START_TEST(stripped_and_deleted_libraries) {
    char dir[64], copy[PATH_MAX];
    stripped_copy("--strip-all", dir, sizeof dir, copy, sizeof copy);
    void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "%s", dlerror());
    uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_probe");
    uintptr_t (*hidden)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_unexported_probe");
    for (int deleted = 0; deleted < 2; deleted++) {
        if (deleted) {
            /* Again after the file went: a new table for the same module
             * would read it, so a names-only table (a cache of its own). */
            ck_assert_int_eq(unlink(copy), 0);
            ck_assert_int_eq(rmdir(dir), 0);
        }
        lw_symtab *t = lw_symtab_new_names();
        const lw_symbol *s = lw_symtab_lookup(t, probe());
        ck_assert_msg(s && s->function && !strcmp(s->function, "symvar_first_one"),
                      "deleted %d: function %s", deleted, s && s->function ? s->function : "null");
        ck_assert_str_eq(s->module, copy);
        check_as_dladdr(t, probe());
        s = lw_symtab_lookup(t, hidden());
        ck_assert_msg(s && !s->function, "deleted %d: static function named %s", deleted,
                      s && s->function ? s->function : "null");
        ck_assert_str_eq(s->module, copy);
        check_as_dladdr(t, hidden());
        lw_symtab_free(t);
    }
    dlclose(h);
}
END_TEST

/* Reports on several threads share the cache while another thread loads
 * and unloads a library (each unload renews the cache under them): every
 * answer stays right and readable until its report ends (the TSan build
 * checks the sharing). */
static _Atomic int unloads_stop;
static const char *unload_lib;

__attribute__((noinline)) static void *sharing_reporter(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        lw_symtab *t = lw_symtab_new();
        const lw_symbol *s = lw_symtab_lookup(t, return_address());
        const lw_symbol *o = lw_symtab_lookup(t, outer_function());
        ck_assert(s && s->function && !strcmp(s->function, "sharing_reporter"));
        ck_assert(o && o->function && !strncmp(o->function, "outer_function", 14));
        lw_symtab_free(t);
    }
    return NULL;
}

static void *unloader(void *arg) {
    (void)arg;
    while (!atomic_load(&unloads_stop)) {
        void *h = dlopen(unload_lib, RTLD_NOW | RTLD_LOCAL);
        if (!h) break;
        uintptr_t (*probe)(void) = (uintptr_t(*)(void))dlsym(h, "symvar_probe");
        lw_symtab *t = lw_symtab_new();
        const lw_symbol *s = lw_symtab_lookup(t, probe());
        ck_assert(s && s->function && !strcmp(s->function, "symvar_first_one"));
        dlclose(h);
        ck_assert_str_eq(s->function, "symvar_first_one"); /* still this report's */
        lw_symtab_free(t);
    }
    return NULL;
}

START_TEST(reports_share_the_cache_across_threads_and_unloads) {
    char path[4200];
    snprintf(path, sizeof path, "%s/tests/lib/libsymvar1.so", lw_build_dir());
    unload_lib = path;
    /* Names only (the .symtab): no addr2line per renewed cache, which took
     * minutes under qemu-user (check-aarch64). */
    setenv("LEAKWATCH_SOURCE_LINES", "0", 1);
    lw_symtab_free(lw_symtab_new()); /* options read before the threads, as at start */
    pthread_t u, r[4];
    ck_assert_int_eq(pthread_create(&u, NULL, unloader, NULL), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&r[i], NULL, sharing_reporter, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(r[i], NULL);
    atomic_store(&unloads_stop, 1);
    pthread_join(u, NULL);
}
END_TEST

/* After the last report the cache is let go (its addr2line processes end):
 * a report after that names the address again with a new addr2line. */
START_TEST(release_after_the_last_report) {
    lw_symtab *t = lw_symtab_new();
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert(s && s->file);
    lw_symtab_free(t);
    unsigned long started = lw_a2l_started();
    lw_symtab_release();
    t = lw_symtab_new();
    s = lw_symtab_lookup(t, outer_function());
    ck_assert(s && ends_with(s->file, "/test_symbols.c"));
    lw_symtab_free(t);
    ck_assert_uint_eq(lw_a2l_started(), started + 1);
    lw_symtab_release();
}
END_TEST

/* A clone defined ahead of the C library's, as a preloaded runtime's wrapper
 * is (ThreadSanitizer's runs its fork bookkeeping in a child that, with
 * CLONE_VM, shares the job's memory and rewrote the job's state: every
 * report after a first addr2line then showed a false data race). It counts
 * its calls and hands them on. */
static atomic_int interposed_clones;

int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
    atomic_fetch_add(&interposed_clones, 1);
    va_list ap;
    va_start(ap, arg);
    pid_t *parent_tid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *child_tid = va_arg(ap, pid_t *);
    va_end(ap);
    int (*next)(int (*)(void *), void *, int, void *, ...) =
        (int (*)(int (*)(void *), void *, int, void *, ...))dlsym(RTLD_NEXT, "clone");
    return next(fn, stack, flags, arg, parent_tid, tls, child_tid);
}

/* addr2line is started with the C library's own clone, never through a
 * wrapper of it. */
START_TEST(addr2line_started_without_a_clone_wrapper) {
    unsigned long started = lw_a2l_started();
    lw_symtab *t = lw_symtab_new();
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert_msg(s && ends_with(s->file, "/test_symbols.c"), "no source line: %s",
                  s && s->file ? s->file : "null");
    lw_symtab_free(t);
    ck_assert_uint_eq(lw_a2l_started(), started + 1);
    int wrapped = atomic_load(&interposed_clones);
    ck_assert_msg(wrapped == 0, "%d clone calls went through the wrapper", wrapped);
    lw_symtab_release();
}
END_TEST

/* A forked child starts its own cache and addr2line and lets go of its
 * copies of the parent's sockets: the parent's addr2line goes on answering
 * the parent. */
START_TEST(forked_child_leaves_the_parents_addr2line) {
    lw_symtab *t = lw_symtab_new();
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert(s && s->file);
    lw_symtab_free(t);
    unsigned long started = lw_a2l_started();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        lw_symtab_after_fork_child(); /* as the shim's fork handler does */
        lw_symtab *c = lw_symtab_new();
        const lw_symbol *cs = lw_symtab_lookup(c, outer_function());
        int ok = cs && ends_with(cs->file, "/test_symbols.c") && lw_a2l_started() == started + 1;
        lw_symtab_free(c);
        lw_symtab_release();
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %#x", st);
    t = lw_symtab_new();
    const lw_symbol *n = lw_symtab_lookup(t, return_address());
    ck_assert_msg(n && ends_with(n->file, "/test_symbols.c"), "parent lost its addr2line");
    lw_symtab_free(t);
    ck_assert_uint_eq(lw_a2l_started(), started);
}
END_TEST

START_TEST(names_only_table_has_no_lines) {
    lw_symtab *t = lw_symtab_new_names();
    const lw_symbol *s = lw_symtab_lookup(t, outer_function());
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(s->function && !strncmp(s->function, "outer_function", 14), "function %s",
                  s->function ? s->function : "null");
    ck_assert_ptr_null(s->file);
    ck_assert_int_eq(s->line, 0);
    ck_assert_int_eq(s->ninlined, 0);
    lw_symtab_free(t);
}
END_TEST

START_TEST(cxx_inlined_frame_in_report) {
    lw_run r;
    const char *args[] = {"3", "1048576", NULL};
    lw_run_prog(&r, 1, "cxx_alloc", args, NULL);
    RUN_OK(&r);
    const char *helper = "ns::device_alloc(unsigned long)";
    const lw_json *site = lw_rep_site_named(&r, helper);
    ck_assert_msg(site != NULL, "no site names %s\nstderr: %s", helper, r.err);
    const lw_json *frames = lw_json_get(site, "frames");
    size_t j = 0;
    while (lw_json_at(frames, j) != frame_named(site, helper))
        j++;
    const lw_json *in = lw_json_at(frames, j), *grow = lw_json_at(frames, j + 1);
    ck_assert_int_eq(lw_json_bool(lw_json_get(in, "inlined"), 0), 1);
    check_line(in, "/cxx_alloc.cpp", line_of("../programs/cxx_alloc.cpp", NULL, "LW_LINE_ALLOC"));
    ck_assert_str_eq(str(grow, "function"), GROW);
    ck_assert_int_eq(lw_json_bool(lw_json_get(grow, "inlined"), 0), 0);
    ck_assert_str_eq(str(in, "offset"), str(grow, "offset"));
    ck_assert_str_eq(str(in, "module"), str(grow, "module"));
    lw_run_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("symbols");
    TCase *tc = tcase_create("frames");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cxx_frames_demangled_with_lines);
    tcase_add_test(tc, c_frames_with_lines);
    tcase_add_test(tc, source_lines_off);
    tcase_add_test(tc, stripped_of_debug_information);
    tcase_add_test(tc, stripped_of_all_symbols);
    tcase_add_test(tc, child_runs_without_the_shim);
    tcase_add_test(tc, hung_tool_does_not_hang_the_job);
    tcase_add_test(tc, no_tool_names_only);
    tcase_add_test(tc, inlined_frames);
    tcase_add_test(tc, names_only_table_has_no_lines);
    tcase_add_test(tc, second_report_starts_no_addr2line);
    tcase_add_test(tc, cache_renewed_after_dlclose);
    tcase_add_test(tc, modules_and_offsets_as_dladdr_finds_them);
    tcase_add_test(tc, stripped_and_deleted_libraries);
    tcase_add_test(tc, release_after_the_last_report);
    tcase_add_test(tc, addr2line_started_without_a_clone_wrapper);
    tcase_add_test(tc, forked_child_leaves_the_parents_addr2line);
    tcase_add_test(tc, reports_share_the_cache_across_threads_and_unloads);
    tcase_add_test(tc, cxx_inlined_frame_in_report);
    suite_add_tcase(s, tc);
    int failed = lw_check_run(s);
    return failed ? 1 : 0;
}
