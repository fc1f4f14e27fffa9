/* SPDX-License-Identifier: Apache-2.0 */
/* What 'leakwatch run' decides, separated from the process handling in
 * run.c so the tests can check each decision directly. */
#include "run_decisions.h"

#include "arch.h"
#include "cli.h"
#include "options.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const lw_option_def *table_def(const char *name) {
    size_t n = 0;
    const lw_option_def *t = lw_options_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].name && !strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

const char *lw_run_setting_name(const char *name) {
    char canon[128];
    size_t o = 0;
    if (strncasecmp(name, "LEAKWATCH_", 10) != 0) {
        memcpy(canon, "LEAKWATCH_", 10);
        o = 10;
    }
    for (const char *p = name; *p && o + 1 < sizeof canon; p++)
        canon[o++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    canon[o] = '\0';
    const lw_option_def *d = table_def(canon);
    return d ? d->name : NULL;
}

void lw_run_known_settings(char *out, size_t n) {
    size_t count = 0, o = 0;
    const lw_option_def *t = lw_options_table(&count);
    out[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        const char *name = t[i].name;
        int w = snprintf(out + o, n - o, "%s%s", o ? ", " : "", name);
        if (w < 0 || (size_t)w >= n - o) break;
        o += (size_t)w;
    }
}

/* Every setting is in the library's one options table, checked by its
 * parser: what `leakwatch run` accepts is what the library accepts. */
int lw_run_check_setting(const char *name, const char *value, char *err, size_t errlen) {
    const lw_option_def *d = table_def(name);
    long v;
    if (d) return lw_option_parse(d, value, &v, err, errlen);
    snprintf(err, errlen, "unknown setting");
    return -1;
}

int lw_run_quiet_env(void) {
    const lw_option_def *d = table_def("LEAKWATCH_QUIET");
    const char *q = getenv("LEAKWATCH_QUIET");
    long v = 0;
    char err[64];
    return d && q && lw_option_parse(d, q, &v, err, sizeof err) == 0 && v;
}

static int readable_file(const char *p) {
    return access(p, R_OK) == 0;
}

/* The folder of the running leakwatch binary (through /proc/self/exe, so a
 * symbolic link to the command still finds its own installation). */
static int self_dir(char *out, size_t n, char *err, size_t errlen) {
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) {
        snprintf(err, errlen,
                 "cannot find this program's own path (/proc/self/exe); is /proc "
                 "mounted? Pass --library PATH to libleakwatch.so");
        return -1;
    }
    exe[l] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(out, n, "%s", exe);
    return 0;
}

/* The first of dir + rel[i] that exists and is readable, made absolute. */
static int first_readable(const char *dir, const char *const *rel, size_t nrel, char *out,
                          size_t n) {
    for (size_t i = 0; i < nrel; i++) {
        char cand[PATH_MAX + 64], abs[PATH_MAX];
        snprintf(cand, sizeof cand, "%s%s", dir, rel[i]);
        if (realpath(cand, abs) && readable_file(abs)) {
            snprintf(out, n, "%s", abs);
            return 0;
        }
    }
    return -1;
}

/* ld.so splits LD_PRELOAD at spaces and colons, with no way to quote them:
 * such a path would load nothing, and every process would print an ld.so
 * error while the job ran unwatched. */
static int preloadable(const char *path, char *err, size_t errlen) {
    const char *bad = strpbrk(path, " :\t\n");
    if (!bad) return 0;
    snprintf(err, errlen,
             "the library path %s contains a %s, where LD_PRELOAD splits its list (it cannot be "
             "quoted); install leakwatch (or copy libleakwatch.so and "
             "pass --library) under a path without spaces or colons",
             path, *bad == ':' ? "colon" : "space");
    return -1;
}

static const char *machine_name(unsigned m, char *buf, size_t n) {
    switch (m) {
    case EM_X86_64:
        return "x86-64";
    case EM_AARCH64:
        return "AArch64";
    case EM_386:
        return "32-bit x86";
    case EM_ARM:
        return "32-bit ARM";
    case EM_PPC64:
        return "POWER (ppc64)";
    case EM_S390:
        return "s390x";
    case EM_RISCV:
        return "RISC-V";
    default:
        snprintf(buf, n, "ELF machine %u", m);
        return buf;
    }
}

int lw_run_check_library(const char *path, char *err, size_t errlen) {
    static const char fix[] = "reinstall leakwatch on this machine (pip install leakwatch, or make "
                              "install) or pass --library with the path of its libleakwatch.so";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot preload %s: %s; %s", path, strerror(errno), fix);
        return -1;
    }
    unsigned char h[sizeof(Elf64_Ehdr)];
    ssize_t got;
    do
        got = read(fd, h, sizeof h);
    while (got < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (got < 0) {
        snprintf(err, errlen, "cannot preload %s: %s; %s", path, strerror(e), fix);
        return -1;
    }
    if ((size_t)got < EI_NIDENT || memcmp(h, ELFMAG, SELFMAG) != 0) {
        snprintf(err, errlen, "cannot preload %s: it is not a shared library (not an ELF file); %s",
                 path, fix);
        return -1;
    }
    if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB) {
        snprintf(err, errlen,
                 "cannot preload %s: it is a %s library, and leakwatch runs in little-endian "
                 "64-bit programs only; %s",
                 path, h[EI_CLASS] == ELFCLASS32 ? "32-bit" : "big-endian", fix);
        return -1;
    }
    if ((size_t)got < sizeof h) {
        snprintf(err, errlen, "cannot preload %s: the file is truncated; %s", path, fix);
        return -1;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, h, sizeof eh);
    if (eh.e_machine != LW_ARCH_ELF_MACHINE) {
        char b1[32], b2[32];
        const char *here = machine_name(LW_ARCH_ELF_MACHINE, b2, sizeof b2);
        snprintf(err, errlen,
                 "cannot preload %s: it is built for %s, and this leakwatch runs on %s; install "
                 "the %s build of leakwatch (pip install leakwatch, or make install on this "
                 "machine) or pass --library with its libleakwatch.so",
                 path, machine_name(eh.e_machine, b1, sizeof b1), here, here);
        return -1;
    }
    if (eh.e_type != ET_DYN) {
        snprintf(err, errlen,
                 "cannot preload %s: it is %s, not a shared library; pass --library with the "
                 "path of libleakwatch.so",
                 path, eh.e_type == ET_EXEC ? "a program" : "an object file");
        return -1;
    }
    return 0;
}

static int find_library(const char *override, char *out, size_t n, char *err, size_t errlen);

int lw_run_find_library(const char *override, char *out, size_t n, char *err, size_t errlen) {
    int rc = find_library(override, out, n, err, errlen);
    if (rc == 0) rc = preloadable(out, err, errlen);
    return rc == 0 ? lw_run_check_library(out, err, errlen) : rc;
}

static int find_library(const char *override, char *out, size_t n, char *err, size_t errlen) {
    if (override) {
        char abs[PATH_MAX];
        if (!realpath(override, abs) || !readable_file(abs)) {
            snprintf(err, errlen,
                     "--library %s: no such readable file; give the path of "
                     "libleakwatch.so",
                     override);
            return -1;
        }
        snprintf(out, n, "%s", abs);
        return 0;
    }
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir, err, errlen) != 0) return -1;
    /* Beside the command: the build folder and the Python package (_bin);
     * ../lib or ../lib64: make install. */
    static const char *const rel[] = {"/libleakwatch.so", "/../lib/libleakwatch.so",
                                      "/../lib64/libleakwatch.so"};
    if (first_readable(dir, rel, sizeof rel / sizeof rel[0], out, n) == 0) return 0;
    snprintf(err, errlen,
             "cannot find libleakwatch.so next to %s/leakwatch or in %s/../lib; reinstall "
             "leakwatch (pip install or make install) or pass --library PATH",
             dir, dir);
    return -1;
}

int lw_run_find_stand_ins(char *out, size_t n, char *err, size_t errlen) {
    char dir[PATH_MAX];
    if (self_dir(dir, sizeof dir, err, errlen) != 0) return -1;
    /* build/tests/lib in the build folder, stand-ins/ beside the command in
     * the Python package, lib/leakwatch/stand-ins after make install. */
    static const char *const rel[] = {"/tests/lib/libcuda.so.1", "/stand-ins/libcuda.so.1",
                                      "/../lib/leakwatch/stand-ins/libcuda.so.1"};
    char lib[PATH_MAX];
    if (first_readable(dir, rel, sizeof rel / sizeof rel[0], lib, sizeof lib) == 0) {
        *strrchr(lib, '/') = '\0';
        snprintf(out, n, "%s", lib);
        return 0;
    }
    snprintf(err, errlen,
             "--cuda-stand-ins: this installation has no CPU stand-ins for the CUDA libraries "
             "(looked in %s/tests/lib, %s/stand-ins and %s/../lib/leakwatch/stand-ins); "
             "build them with 'make stand-ins' or reinstall leakwatch",
             dir, dir, dir);
    return -1;
}

char *lw_run_library_path(const char *dir, const char *existing) {
    size_t dl = strlen(dir), el = existing ? strlen(existing) : 0;
    char *s = malloc(dl + el + 2);
    if (!s) return NULL;
    memcpy(s, dir, dl);
    if (el) {
        s[dl] = ':';
        memcpy(s + dl + 1, existing, el + 1);
    } else {
        s[dl] = '\0';
    }
    return s;
}

/* Sanitizer runtimes refuse to run unless loaded before everything else. */
static int must_stay_first(const char *entry, size_t len) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%.*s", (int)len, entry);
    const char *base = strrchr(tmp, '/');
    base = base ? base + 1 : tmp;
    return !strncmp(base, "libasan", 7) || !strncmp(base, "libclang_rt.asan", 16) ||
           !strncmp(base, "libtsan", 7) || !strncmp(base, "libclang_rt.tsan", 16);
}

/* What the dynamic loader says when a program of ours starts with lib
 * preloaded: this command itself (/proc/self/exe --version, output
 * discarded), with the job's environment. Sanitizer runtimes already in
 * existing stay in front of lib, as they will for the job; the user's other
 * preloads are left out: what they do is the job's own business, the same as
 * without leakwatch. */
int lw_run_probe_preload(const char *lib, const char *existing, char *err, size_t errlen) {
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) return 1;
    self[l] = '\0';
    size_t cap = strlen(lib) + (existing ? strlen(existing) : 0) + 2, o = 0;
    char *pre = malloc(cap);
    if (!pre) return 1;
    for (const char *p = existing ? existing : ""; *p;) {
        size_t len = strcspn(p, " :");
        if (len && must_stay_first(p, len))
            o += (size_t)snprintf(pre + o, cap - o, "%.*s ", (int)len, p);
        p += len;
        while (*p == ' ' || *p == ':')
            p++;
    }
    snprintf(pre + o, cap - o, "%s", lib);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        free(pre);
        return 1;
    }
    static const char tag[] = "leakwatch-preload-check";
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(fds[1], 2) < 0) _exit(126);
        setenv("LD_PRELOAD", pre, 1);
        char *argv[] = {(char *)tag, "--version", NULL};
        execv(self, argv);
        _exit(126);
    }
    free(pre);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return 1;
    }
    /* The loader's messages come first; the rest is read and dropped. A probe
     * that does not end within 30 s tells nothing: the job is started. */
    char buf[2048];
    size_t got = 0;
    int timed_out = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = 30000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int r = poll(&pf, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char tmp[512];
        ssize_t n = read(fds[0], tmp, sizeof tmp);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        size_t take = (size_t)n < sizeof buf - 1 - got ? (size_t)n : sizeof buf - 1 - got;
        memcpy(buf + got, tmp, take);
        got += take;
    }
    buf[got] = '\0';
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) return 1;

    char reason[600] = "";
    const char *fix = "pass --library with the path of libleakwatch.so, or reinstall leakwatch";
    /* ld.so: "ERROR: ld.so: object 'LIB' from LD_PRELOAD cannot be preloaded
     * (why): ignored." The job would run, unwatched. */
    char needle[PATH_MAX + 64];
    snprintf(needle, sizeof needle, "object '%s' from LD_PRELOAD cannot be preloaded (", lib);
    const char *m = strstr(buf, needle);
    if (m) {
        m += strlen(needle);
        const char *end = strstr(m, "): ignored");
        size_t len = end ? (size_t)(end - m) : strcspn(m, "\n");
        snprintf(reason, sizeof reason, "%.*s", (int)len, m);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !strncmp(buf, tag, sizeof tag - 1) &&
               !strncmp(buf + sizeof tag - 1, ": ", 2)) {
        /* "PROG: error while loading shared libraries: libx.so.1: cannot
         * open ...", "PROG: /lib/libc.so.6: version `GLIBC_2.99' not found
         * (required by LIB)", "PROG: symbol lookup error: ...": the loader
         * stops every program with it, the job too (exit 127, as if it were
         * not found). */
        const char *r = buf + sizeof tag + 1;
        static const char els[] = "error while loading shared libraries: ";
        if (!strncmp(r, els, sizeof els - 1)) r += sizeof els - 1;
        snprintf(reason, sizeof reason, "%.*s", (int)strcspn(r, "\n"), r);
        fix = "install what it names (or add its folder to LD_LIBRARY_PATH), or reinstall "
              "leakwatch built for this system";
    } else if (WIFSIGNALED(st)) {
        snprintf(err, errlen,
                 "cannot preload %s: a program started with it preloaded was killed by signal %d "
                 "(%s) as it loaded; reinstall leakwatch, and report it if it stays",
                 lib, WTERMSIG(st), strsignal(WTERMSIG(st)));
        return -1;
    } else {
        return 0;
    }
    snprintf(err, errlen, "cannot preload %s: the dynamic loader says: %s; %s", lib, reason, fix);
    return -1;
}

char *lw_run_preload(const char *lib, const char *existing) {
    size_t cap = strlen(lib) + (existing ? strlen(existing) : 0) + 4;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = 0;
    /* Two passes over the entries (separated by spaces or colons): sanitizer
     * runtimes, then our library, then the rest in their order. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? " " : "", lib);
        }
        for (const char *p = existing ? existing : ""; *p;) {
            size_t len = strcspn(p, " :");
            if (len && (must_stay_first(p, len) == (pass == 0)) &&
                !(len == strlen(lib) && !strncmp(p, lib, len)))
                o += (size_t)snprintf(out + o, cap - o, "%s%.*s", o ? " " : "", (int)len, p);
            p += len;
            while (*p == ' ' || *p == ':')
                p++;
        }
    }
    return out;
}

int lw_run_exit_code(int st) {
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return LW_EXIT_RUN_FAILED;
}

int lw_run_decide(const lw_model *m) {
    return m->verdict == LW_VERDICT_LEAK;
}

int lw_run_gate(const lw_model *m, int allow_inconclusive) {
    if (m->verdict == LW_VERDICT_LEAK) return LW_EXIT_LEAK;
    if (m->verdict == LW_VERDICT_INCONCLUSIVE && !allow_inconclusive) return LW_EXIT_INCONCLUSIVE;
    return LW_EXIT_OK;
}

int lw_run_gate_join(int a, int b) {
    if (a < 0 || b < 0) return -1;
    if (a == LW_EXIT_LEAK || b == LW_EXIT_LEAK) return LW_EXIT_LEAK;
    if (a == LW_EXIT_INCONCLUSIVE || b == LW_EXIT_INCONCLUSIVE) return LW_EXIT_INCONCLUSIVE;
    return LW_EXIT_OK;
}
