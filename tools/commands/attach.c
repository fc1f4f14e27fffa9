/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach PID: watch a job that was started without leakwatch.
 * The checks come first and change nothing; then the library is loaded into
 * the job (attach/inject.c) and the command waits, in the foreground, for
 * Ctrl-C (or the job's end); leakwatch attach --detach PID ends the watch
 * from elsewhere. The detach itself is asked of the library through its
 * control socket: it needs no ptrace. */
#include "cli.h"
#include "commands.h"
#include "attach.h"
#include "model.h"
#include "render.h"
#include "run_decisions.h"
#include "control_client.h"

#include "inject.h"
#include "elf_symbols.h"
#include "options.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch attach [options] PID\n"
    "       leakwatch attach --detach PID\n"
    "\n"
    "Loads leakwatch into a running process that was started without it, and\n"
    "follows its CUDA memory from now on: verdict, growth rate and the call sites\n"
    "that keep memory. Ctrl-C (or attach --detach PID from elsewhere) detaches:\n"
    "the hooks are removed, the final report is written and the job goes on as\n"
    "before. While attached, 'leakwatch top PID' and 'snapshot PID' work as for\n"
    "a job started under leakwatch. docs/cli.md (\"What an attached session cannot see\")\n"
    "says what it cannot see.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the report (default leakwatch-PID.json in the current\n"
    "                     folder; %p = pid, %h = host name)\n"
    "      --set NAME=VALUE  a LEAKWATCH_* setting (leakwatch help env)\n"
    "      --background   return once attached; detach later with --detach\n"
    "      --detach       detach from PID: hooks removed, final report written\n"
    "      --wait-ms N    how long to wait for a thread of PID that can be\n"
    "                     borrowed (default 5000)\n"
    "  -q, --quiet        no progress lines\n"
    "  -h, --help         this help\n"
    "\n"
    "exit status: 0 attached (and detached), 1 cannot attach (the process is\n"
    "left as it was), 2 bad option, 4 PID is not running or not watched.\n";

/* ---- checks (nothing is changed in the target) ---- */

int lw_attach_scope_problem(int scope, int privileged, char *err, size_t n) {
    switch (scope) {
    case 0:
        return 0;
    case 1:
        if (privileged) return 0;
        snprintf(err, n,
                 "ptrace is limited to a process's own descendants here "
                 "(/proc/sys/kernel/yama/ptrace_scope is 1): run 'sudo sysctl -w "
                 "kernel.yama.ptrace_scope=0' (until reboot), or run leakwatch attach as root "
                 "or with the CAP_SYS_PTRACE capability");
        return -1;
    case 2:
        if (privileged) return 0;
        snprintf(err, n,
                 "ptrace is limited to administrators here (/proc/sys/kernel/yama/ptrace_scope "
                 "is 2): run leakwatch attach as root or with the CAP_SYS_PTRACE capability, "
                 "or set it to 0 with 'sudo sysctl -w kernel.yama.ptrace_scope=0'");
        return -1;
    default:
        snprintf(err, n,
                 "ptrace is disabled on this machine (/proc/sys/kernel/yama/ptrace_scope is "
                 "%d, which only a reboot undoes): leakwatch attach cannot work; start the job "
                 "with 'leakwatch run' instead",
                 scope);
        return -1;
    }
}

/* 1 when we may trace any process: root, or CAP_SYS_PTRACE in effect. */
static int privileged(void) {
    if (geteuid() == 0) return 1;
    char line[256];
    const char *v = lw_proc_status_field("/proc/self/status", "CapEff:", line, sizeof line);
    unsigned long long caps = v ? strtoull(v, NULL, 16) : 0;
    return (int)((caps >> 19) & 1); /* CAP_SYS_PTRACE */
}

static int read_ids(long pid, const char *key, long ids[4]) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%ld/status", pid);
    const char *v = lw_proc_status_field(p, key, line, sizeof line);
    return v && sscanf(v, "%ld %ld %ld %ld", &ids[0], &ids[1], &ids[2], &ids[3]) == 4 ? 0 : -1;
}

/* 1 when the process's threads run with the user shadow stack (CET): the
 * injected calls' return to address 0 would not be a plain fault there. */
static int shadow_stack(long pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%ld/status", pid);
    const char *v = lw_proc_status_field(p, "x86_Thread_features:", line, sizeof line);
    return v && strstr(v, "shstk");
}

/* ---- one leakwatch per process, whatever its file name ----
 * Every copy of the library exports the function leakwatch__instance
 * (src/loader/instance.h): a renamed copy, or another installation's, is
 * found by that export in the ELF file, not by its name. */

static int pread_all(int fd, void *buf, size_t n, off_t at) {
    return pread(fd, buf, n, at) == (ssize_t)n ? 0 : -1;
}

/* 1 when the dynamic symbol at index i of the file is a definition of name. */
static int dynsym_is(int fd, const Elf64_Shdr *sym, const Elf64_Shdr *str, uint32_t i,
                     const char *name) {
    Elf64_Sym e;
    if ((uint64_t)(i + 1) * sizeof e > sym->sh_size ||
        pread_all(fd, &e, sizeof e, (off_t)(sym->sh_offset + (uint64_t)i * sizeof e)) != 0)
        return 0;
    if (e.st_shndx == SHN_UNDEF || e.st_name >= str->sh_size) return 0;
    size_t len = strlen(name) + 1;
    char got[64];
    if (len > sizeof got || e.st_name + len > str->sh_size ||
        pread_all(fd, got, len, (off_t)(str->sh_offset + e.st_name)) != 0)
        return 0;
    return memcmp(got, name, len) == 0;
}

/* 1 when the 64-bit ELF file at path defines name in its dynamic symbol
 * table: through its GNU hash table (a few reads, whatever the file's
 * size), else by reading the table (at most 1 << 20 symbols). */
static int file_exports(const char *path, const char *name) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    int yes = 0;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    uint32_t *gh = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pread_all(fd, &eh, sizeof eh, 0) != 0 ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096)
        goto out;
    sh = malloc(eh.e_shnum * sizeof *sh);
    if (!sh || pread_all(fd, sh, eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) != 0) goto out;
    const Elf64_Shdr *sym = NULL, *hash = NULL;
    for (int i = 0; i < eh.e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_link < eh.e_shnum) sym = &sh[i];
        if (sh[i].sh_type == SHT_GNU_HASH) hash = &sh[i];
    }
    if (!sym) goto out;
    const Elf64_Shdr *str = &sh[sym->sh_link];
    uint64_t nsym = sym->sh_size / sizeof(Elf64_Sym);
    if (hash && hash->sh_size >= 16 && hash->sh_size <= (64u << 20)) {
        gh = malloc(hash->sh_size);
        if (!gh || pread_all(fd, gh, hash->sh_size, (off_t)hash->sh_offset) != 0) goto out;
        uint32_t nbuckets = gh[0], symoffset = gh[1], bloom = gh[2];
        uint64_t words = hash->sh_size / 4, buckets_at = 4 + (uint64_t)bloom * 2;
        if (nbuckets == 0 || buckets_at + nbuckets > words) goto out;
        uint32_t h = 5381;
        for (const unsigned char *u = (const unsigned char *)name; *u; u++)
            h = h * 33 + *u;
        uint32_t i = gh[buckets_at + h % nbuckets];
        const uint32_t *chain = gh + buckets_at + nbuckets;
        for (; i >= symoffset && buckets_at + nbuckets + (i - symoffset) < words && i < nsym; i++) {
            uint32_t ch = chain[i - symoffset];
            if ((ch | 1) == (h | 1) && dynsym_is(fd, sym, str, i, name)) {
                yes = 1;
                break;
            }
            if (ch & 1) break;
        }
        goto out;
    }
    for (uint32_t i = 1; i < nsym && i < (1u << 20) && !yes; i++)
        yes = dynsym_is(fd, sym, str, i, name);
out:
    free(gh);
    free(sh);
    close(fd);
    return yes;
}

/* What the target has mapped, by base name; and a copy of the library by
 * another name (other_copy: its path), found by its export. */
typedef struct {
    int leakwatch, cuda_driver, cuda_runtime;
    char leakwatch_path[PATH_MAX];
    char other_copy[PATH_MAX];
} target_maps;

static void scan_maps(long pid, target_maps *t) {
    memset(t, 0, sizeof *t);
    char p[64], line[PATH_MAX + 128];
    snprintf(p, sizeof p, "/proc/%ld/maps", pid);
    FILE *f = fopen(p, "re");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *path = strchr(line, '/');
        if (!path) continue;
        const char *base = strrchr(path, '/') + 1;
        if (!strcmp(base, "libleakwatch.so")) {
            t->leakwatch = 1;
            snprintf(t->leakwatch_path, sizeof t->leakwatch_path, "%s", path);
        } else if (!t->other_copy[0] && strstr(line, " r-xp ") && !strstr(path, " (deleted)")) {
            /* Each object once (its code mapping), read as the job sees it. */
            char in_target[PATH_MAX + 64];
            snprintf(in_target, sizeof in_target, "/proc/%ld/root%s", pid, path);
            if (file_exports(in_target, "leakwatch__instance") ||
                (access(in_target, F_OK) != 0 && file_exports(path, "leakwatch__instance")))
                snprintf(t->other_copy, sizeof t->other_copy, "%s", path);
        }
        if (!strncmp(base, "libcuda.so", 10)) t->cuda_driver = 1;
        if (!strncmp(base, "libcudart", 9)) t->cuda_runtime = 1;
    }
    if (f) fclose(f);
}

/* 1 when the program itself has the CUDA runtime linked in (cudart_static). */
static int static_runtime(long pid) {
    char exe[64];
    snprintf(exe, sizeof exe, "/proc/%ld/exe", pid);
    lw_elf_syms *s = lw_elf_syms_load(exe);
    int yes = s && (lw_elf_syms_lookup(s, "cudaMalloc") || lw_elf_syms_lookup(s, "cudaFree"));
    lw_elf_syms_free(s);
    return yes;
}

/* 1 when the process was started with the library in LD_PRELOAD. */
static int preloaded(long pid) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld/environ", pid);
    FILE *f = fopen(p, "re");
    if (!f) return 0;
    char buf[8192];
    int yes = 0;
    size_t n;
    while (!yes && (n = fread(buf, 1, sizeof buf - 1, f)) > 0) {
        buf[n] = '\0';
        for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
            if (!strncmp(buf + i, "LD_PRELOAD=", 11) && strstr(buf + i, "libleakwatch")) yes = 1;
    }
    fclose(f);
    return yes;
}

/* The process that traces pid (TracerPid: of its status), 0 for none. */
static long tracer_of(long pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%ld/status", pid);
    const char *v = lw_proc_status_field(p, "TracerPid:", line, sizeof line);
    return v ? strtol(v, NULL, 10) : 0;
}

/* The state letter of /proc/PID/stat ('?' when unknown). */
static char proc_state_letter(long pid) {
    char p[64], buf[1024];
    snprintf(p, sizeof p, "/proc/%ld/stat", pid);
    FILE *f = fopen(p, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the command name may hold ')' */
    return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/* 0 when pid may be attached; else the exit status, after one line. */
static int check_target(long pid, const char *lib) {
    char err[1024], p[64];
    struct stat st;
    snprintf(p, sizeof p, "/proc/%ld", pid);
    if (pid == (long)getpid() || stat(p, &st) != 0) {
        lw_cli_error("no process %ld", pid);
        return LW_EXIT_NO_PROCESS;
    }
    long uid[4], gid[4];
    if (read_ids(pid, "Uid:", uid) != 0 || read_ids(pid, "Gid:", gid) != 0) {
        lw_cli_error("cannot read /proc/%ld/status", pid);
        return LW_EXIT_NO_PROCESS;
    }
    if (uid[0] != uid[1] || uid[1] != uid[2] || gid[0] != gid[1] || gid[1] != gid[2]) {
        lw_cli_error("process %ld runs set-user-ID or set-group-ID (real uid %ld, effective "
                     "uid %ld): leakwatch does not attach to such processes",
                     pid, uid[0], uid[1]);
        return LW_EXIT_ERROR;
    }
    if (geteuid() != 0 && (uid_t)uid[1] != geteuid()) {
        struct passwd *pw = getpwuid((uid_t)uid[1]);
        lw_cli_error("process %ld belongs to another user (%s, uid %ld): attach as that user, "
                     "or as root",
                     pid, pw ? pw->pw_name : "?", uid[1]);
        return LW_EXIT_ERROR;
    }
    /* The refusals that ptrace would give later name their own cause here. */
    long tracer[1] = {tracer_of(pid)};
    char state = proc_state_letter(pid);
    if (tracer[0] > 0) {
        char cmd[256];
        lw_proc_cmdline(tracer[0], cmd, sizeof cmd);
        lw_cli_error("process %ld is being traced by process %ld (%s), a debugger or strace: a "
                     "process has one tracer at a time; attach once that one has let it go",
                     pid, tracer[0], cmd);
        return LW_EXIT_ERROR;
    }
    if (state == 'T' || state == 't') {
        lw_cli_error("process %ld is stopped (Ctrl-Z or SIGSTOP): none of its threads waits "
                     "where it can be borrowed; continue it first ('kill -CONT %ld', or 'fg' in "
                     "its shell)",
                     pid, pid);
        return LW_EXIT_ERROR;
    }
    char maps_path[64];
    snprintf(maps_path, sizeof maps_path, "/proc/%ld/maps", pid);
    FILE *mf = fopen(maps_path, "re");
    if (!mf) {
        lw_cli_error("cannot read process %ld's memory map (%s: %s): the process is not "
                     "dumpable (it called prctl(PR_SET_DUMPABLE, 0), or changed its user "
                     "ids), or a security module forbids tracing it; only root may attach to it",
                     pid, maps_path, strerror(errno));
        return LW_EXIT_ERROR;
    }
    fclose(mf);
    if (shadow_stack(pid)) {
        lw_cli_error("process %ld runs with the x86 shadow stack enabled (x86_Thread_features: "
                     "shstk in /proc/%ld/status): leakwatch attach cannot make calls in it yet; "
                     "start the job with 'leakwatch run' instead",
                     pid, pid);
        return LW_EXIT_ERROR;
    }
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = 0;
        fclose(f);
    }
    if (lw_attach_scope_problem(scope, privileged(), err, sizeof err) != 0) {
        lw_cli_error("%s", err);
        return LW_EXIT_ERROR;
    }
    target_maps t;
    scan_maps(pid, &t);
    if (t.other_copy[0]) {
        /* Two copies would hook the same calls and write two reports. */
        char safe[PATH_MAX];
        lw_cli_error("process %ld already has a copy of leakwatch's library loaded under "
                     "another name (%s): one leakwatch per process; see it with "
                     "'leakwatch top %ld', or use that copy's leakwatch",
                     pid, lw_safe_text(t.other_copy, safe, sizeof safe), pid);
        return LW_EXIT_ERROR;
    }
    if (t.leakwatch) {
        char sock[4200];
        if (lw_sock_find(pid, sock, sizeof sock, err, sizeof err) == 0) {
            lw_cli_error("process %ld is already watched by leakwatch: see it with "
                         "'leakwatch top %ld'",
                         pid, pid);
            return LW_EXIT_ERROR;
        }
        if (preloaded(pid)) {
            lw_cli_error("process %ld was started under leakwatch, which starts recording at "
                         "its first CUDA allocation: then 'leakwatch top %ld' shows it",
                         pid, pid);
            return LW_EXIT_ERROR;
        }
        /* Else: attached before and detached since; the library is there,
         * inert, and a new attach starts a new session. */
    }
    int stat_rt = static_runtime(pid);
    if (!t.cuda_driver && !t.cuda_runtime && !stat_rt) {
        lw_cli_error("process %ld has not loaded CUDA (no libcuda.so.1 or libcudart in "
                     "/proc/%ld/maps): leakwatch has nothing to watch there; attach once it "
                     "uses the GPU",
                     pid, pid);
        return LW_EXIT_ERROR;
    }
    if (stat_rt && t.cuda_driver && !t.cuda_runtime) {
        lw_cli_error("process %ld has the CUDA runtime linked in statically, and it has "
                     "started: it found the driver's functions before the attach, where "
                     "leakwatch cannot follow them; start the job with 'leakwatch run' instead",
                     pid);
        return LW_EXIT_ERROR;
    }
    if (t.leakwatch && strcmp(t.leakwatch_path, lib) != 0) {
        char safe[PATH_MAX];
        lw_cli_error("process %ld has another libleakwatch.so loaded (%s); use that "
                     "installation's leakwatch",
                     pid, lw_safe_text(t.leakwatch_path, safe, sizeof safe));
        return LW_EXIT_ERROR;
    }
    char in_target[PATH_MAX + 64];
    snprintf(in_target, sizeof in_target, "/proc/%ld/root%s", pid, lib);
    if (access(in_target, F_OK) != 0 && errno == ENOENT) {
        lw_cli_error("process %ld cannot see %s (it runs in another mount namespace, a "
                     "container?): make the library visible there at the same path",
                     pid, lib);
        return LW_EXIT_ERROR;
    }
    return 0;
}

/* 0 when pid runs without a seccomp filter; else the exit status, after one
 * line. A filter may kill the job at the library's first socket or thread
 * (systemd's SystemCallFilter= does, with SIGSYS): refused unless the user
 * says the filter allows them (--set seccomp=full). */
static int check_seccomp(long pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%ld/status", pid);
    const char *v = lw_proc_status_field(p, "Seccomp:", line, sizeof line);
    long mode = v ? strtol(v, NULL, 10) : 0;
    if (mode <= 0) return 0;
    lw_cli_error("process %ld runs under a seccomp %s (Seccomp: %ld in /proc/%ld/status), which "
                 "may kill it at leakwatch's first socket or thread (systemd's "
                 "SystemCallFilter= does): not attached; if its filter allows sockets and "
                 "threads, attach with --set seccomp=full, or start the job under 'leakwatch run', "
                 "which opens no socket under a filter",
                 pid, mode == 1 ? "strict mode" : "filter", mode, pid);
    return LW_EXIT_ERROR;
}

/* ---- settings ---- */
static int add_setting(char *buf, size_t n, const char *name, const char *value) {
    size_t used = strlen(buf);
    int w = snprintf(buf + used, n - used, "%s=%s\n", name, value);
    return w < 0 || (size_t)w >= n - used ? -1 : 0;
}

/* ---- detach ---- */
static int do_detach(long pid, int quiet) {
    char sock[4200], err[1200];
    /* Also given `leakwatch run`'s pid: its job is detached. */
    int st = lw_sock_find_follow(&pid, sock, sizeof sock);
    if (st != 0) return st;
    size_t len = 0;
    char *body = lw_sock_request(sock, "detach", &len, err, sizeof err);
    if (!body) {
        lw_cli_error("process %ld: %s", pid, err);
        return LW_EXIT_ERROR;
    }
    body[strcspn(body, "\n")] = '\0';
    if (!quiet) {
        /* The diagnosis, as 'leakwatch report' gives it. */
        lw_model m;
        if (lw_model_load(&m, body, err, sizeof err) == 0) {
            lw_render_opts o;
            lw_render_opts_default(&o);
            o.top_sites = 3;
            lw_render_text(stdout, &m, 1, &o);
            fflush(stdout);
        }
        lw_model_free(&m);
    }
    char safe[PATH_MAX];
    if (!quiet)
        fprintf(stderr, "leakwatch: detached from process %ld; report: %s\n", pid,
                lw_safe_text(body, safe, sizeof safe));
    free(body);
    return LW_EXIT_OK;
}

/* ---- the foreground attach's last line ---- */
/* The live lines of `leakwatch run`, for a foreground attach: the job's
 * library is told to print nothing in the job's own output (LEAKWATCH_QUIET,
 * LEAKWATCH_WARN=0), so this command asks the job for its answer now and then
 * and prints what run's library would have: the LEAK line once a leak is
 * established ("[as of step N]"), its withdrawal, and once, that steps are
 * not marked. *state: bit 0 a LEAK line stands, bit 1 the note was said. */
static void live_lines(const char *sock, int *state) {
    size_t len = 0;
    char err[1200];
    char *body = lw_sock_request_within(sock, "report", 5000, &len, err, sizeof err);
    if (!body) return;
    lw_model m;
    if (lw_model_load_text(&m, "the job's answer", body, len, err, sizeof err) == 0) {
        const lw_m_growth *g = &m.growth;
        int by_time = g->step_source && !strcmp(g->step_source, "time");
        char line[1400], where[512], n[48];
        if (m.verdict == LW_VERDICT_LEAK && !(*state & 1)) {
            lw_answer a;
            lw_model_answer(&m, &a, where, sizeof where);
            a.computed_at = g->steps;
            fprintf(stderr, "leakwatch: %s\n", lw_answer_line(&a, line, sizeof line));
            *state |= 1;
        } else if (m.verdict != LW_VERDICT_LEAK && (*state & 1)) {
            const char *why = lw_json_string(lw_json_path(m.doc, "growth.reason"));
            fprintf(stderr, "leakwatch: leak verdict withdrawn at %s %s: %s\n",
                    by_time ? "interval" : "step", lw_fmt_count(g->steps, n, sizeof n),
                    lw_safe_text(why ? why : "the growth stopped", line, sizeof line));
            *state &= ~1;
        }
        if (by_time && g->steps >= 1 && !(*state & 2)) {
            fprintf(stderr,
                    "leakwatch: no step marks yet: each interval counts as a step "
                    "(--set interval_ms=MS); for a faster answer mark steps: "
                    "leakwatch_step() in C, leakwatch.step() in Python (in PyTorch an optimizer "
                    "marks them)\n");
            *state |= 2;
        }
    }
    lw_model_free(&m);
    free(body);
}

static volatile sig_atomic_t got_signal;

/* The report's path as the library in the job expands it: %p the job's pid,
 * %h the host name, %% a %. (%r, the job's rank, is left as written.) */
static void job_report_path(const char *tpl, long pid, char *out, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    for (const char *p = tpl; *p && o + 1 < n; p++) {
        char add[300];
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(add, sizeof add, "%ld", pid);
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            if (gethostname(add, sizeof add - 1) != 0) snprintf(add, sizeof add, "localhost");
            add[sizeof add - 1] = '\0';
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            snprintf(add, sizeof add, "%%");
            p++;
        } else {
            add[0] = *p, add[1] = '\0';
        }
        size_t al = strlen(add);
        if (o + al >= n) break;
        memcpy(out + o, add, al + 1);
        o += al;
    }
}

/* 1 once the process is gone or a zombie: its exit handlers have run. */
static int process_over(long pid) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) return 1;
    char s = proc_state_letter(pid);
    return s == 'Z' || s == 'X';
}

/* 1 when the report at path is this session's detach report (written
 * after since, with reason "detach"). */
static int detached_since(const char *path, const struct timespec *since) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    if (st.st_mtim.tv_sec < since->tv_sec ||
        (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))
        return 0;
    char err[256];
    lw_json *j = lw_json_parse_file(path, NULL, err, sizeof err);
    const char *reason = j ? lw_json_string(lw_json_get(j, "reason")) : NULL;
    int yes = reason && !strcmp(reason, "detach");
    lw_json_free(j);
    return yes;
}

/* The socket went: the job is ending (the library writes its exit report
 * after its socket is gone) or was detached from elsewhere (the report
 * written before). Waits for the process to be over, or at most 60 s for a
 * report of this session at path while it runs on (a detach). */
static void wait_for_the_end(long pid, const char *path, const struct timespec *since) {
    for (int i = 0; i < 600 && !got_signal; i++) {
        if (process_over(pid)) return;
        if (detached_since(path, since)) return; /* detached from elsewhere: it runs on */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void on_signal(int sig) {
    got_signal = sig;
}

int lw_cmd_attach(int argc, char **argv) {
    enum { O_SET = 256, O_BACKGROUND, O_DETACH, O_WAIT };
    static const struct option longs[] = {{"output", required_argument, NULL, 'o'},
                                          {"set", required_argument, NULL, O_SET},
                                          {"background", no_argument, NULL, O_BACKGROUND},
                                          {"detach", no_argument, NULL, O_DETACH},
                                          {"wait-ms", required_argument, NULL, O_WAIT},
                                          {"quiet", no_argument, NULL, 'q'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    const char *output = NULL;
    int background = 0, detach_only = 0, quiet = 0;
    long wait_ms = 5000;
    char settings[8192] = "";
    char err[1200];
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:qh", longs, NULL)) != -1) {
        if (c == 'o') {
            output = optarg;
        } else if (c == 'q') {
            quiet = 1;
        } else if (c == O_BACKGROUND) {
            background = 1;
        } else if (c == O_DETACH) {
            detach_only = 1;
        } else if (c == O_WAIT) {
            if (lw_parse_long(optarg, 1, 600000, &wait_ms) != 0)
                return lw_cli_usage_error("attach", "--wait-ms needs a number of milliseconds");
        } else if (c == O_SET) {
            const char *eq = strchr(optarg, '=');
            char name[128];
            if (!eq || (size_t)(eq - optarg) >= sizeof name)
                return lw_cli_usage_error("attach", "--set needs NAME=VALUE, not '%s'", optarg);
            memcpy(name, optarg, (size_t)(eq - optarg));
            name[eq - optarg] = '\0';
            const char *var = lw_run_setting_name(name);
            if (!var) {
                char known[2048];
                lw_run_known_settings(known, sizeof known);
                return lw_cli_usage_error("attach", "no setting '%s'; known: %s", name, known);
            }
            if (lw_run_check_setting(var, eq + 1, err, sizeof err) != 0)
                return lw_cli_usage_error("attach", "%s=%s: %s", var, eq + 1, err);
            if (strchr(eq + 1, '\n') || add_setting(settings, sizeof settings, var, eq + 1) != 0)
                return lw_cli_usage_error("attach", "--set %s: value too long", var);
        } else { /* -h, --help; a bad option */
            return lw_cli_other_option("attach", c, argv, usage);
        }
    }
    if (optind != argc - 1)
        return lw_cli_usage_error("attach", optind >= argc ? "which PID?" : "one PID only");
    long pid;
    if (lw_parse_pid(argv[optind], &pid) != 0)
        return lw_cli_usage_error("attach", "'%s' is not a process id", argv[optind]);
    if (detach_only) {
        return do_detach(pid, quiet);
    }

    char lib[PATH_MAX];
    if (lw_run_find_library(NULL, lib, sizeof lib, err, sizeof err) != 0) {
        lw_cli_error("%s", err);
        return LW_EXIT_ERROR;
    }
    int st = check_target(pid, lib);
    if (st != 0) return st;
    if (!strstr(settings, "LEAKWATCH_SECCOMP=full\n") && (st = check_seccomp(pid)) != 0) return st;

    /* The report lands where the user is, not in the job's folder. */
    char report[PATH_MAX + 64], cwd[PATH_MAX];
    const char *rep = output ? output : "leakwatch-%p.json";
    if (rep[0] != '/' && strcmp(rep, "none") != 0) {
        if (!getcwd(cwd, sizeof cwd)) {
            lw_cli_error("cannot read the current folder: %s", strerror(errno));
            return LW_EXIT_ERROR;
        }
        snprintf(report, sizeof report, "%s/%s", cwd, rep);
    } else {
        snprintf(report, sizeof report, "%s", rep);
    }
    /* The settings reach the library as NAME=VALUE lines: a line break in
     * the report's path would make the rest of it another setting. */
    if (strpbrk(report, "\n\r"))
        return lw_cli_usage_error("attach",
                                  "the report's path has a line break in it (-o, or the current "
                                  "folder's name): give one without");
    char with_defaults[8192 + PATH_MAX + 256] = "";
    /* The job's own output stays as it was: no warning or summary printed in
     * it (this command prints them), unless --set asks. */
    if (!strstr(settings, "LEAKWATCH_QUIET="))
        add_setting(with_defaults, sizeof with_defaults, "LEAKWATCH_QUIET", "1");
    if (!strstr(settings, "LEAKWATCH_WARN="))
        add_setting(with_defaults, sizeof with_defaults, "LEAKWATCH_WARN", "0");
    if (!strstr(settings, "LEAKWATCH_REPORT="))
        add_setting(with_defaults, sizeof with_defaults, "LEAKWATCH_REPORT", report);
    strncat(with_defaults, settings, sizeof with_defaults - strlen(with_defaults) - 1);

    lw_inject q;
    memset(&q, 0, sizeof q);
    q.pid = (pid_t)pid;
    q.library = lib;
    q.settings = with_defaults;
    q.wait_ms = (int)wait_ms;
    /* Ctrl-C, timeout's SIGTERM, a hang-up: the attach stops at once while
     * no thread of the job is held, else once the thread is back from the
     * call it is in (the job is left as it was: a finished attach is
     * detached again). Handled, never blocked, so that nothing waits
     * longer than the injection itself. Ctrl-Z is held back meanwhile: a
     * stopped command would keep the job's thread stopped. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: waits end with EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTSTP);
    sigprocmask(SIG_BLOCK, &block, &old);
    q.cancel = &got_signal;
    int rc = lw_inject_library(&q, err, sizeof err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    /* What the job's memory and its mapped files' names said reaches the
     * terminal as text only (another user's path may hold escapes). */
    char safe[sizeof err > sizeof q.library_msg ? sizeof err : sizeof q.library_msg];
    if (rc != 0) {
        lw_cli_error("cannot attach to process %ld: %s", pid, lw_safe_text(err, safe, sizeof safe));
        return LW_EXIT_ERROR;
    }
    if (got_signal && q.library_rc == 0) {
        /* Asked to stop while the job was being attached: undone. */
        int d = do_detach(pid, 1);
        lw_cli_error("interrupted: process %ld was attached meanwhile, and %s", pid,
                     d == LW_EXIT_OK ? "is detached again" : "could not be detached again");
        return LW_EXIT_ERROR;
    }
    if (q.library_rc != 0) {
        if (q.library_rc > 0)
            lw_cli_error("process %ld: %s: see it with 'leakwatch top %ld'", pid,
                         lw_safe_text(q.library_msg, safe, sizeof safe), pid);
        else
            lw_cli_error("process %ld: %s", pid, lw_safe_text(q.library_msg, safe, sizeof safe));
        return LW_EXIT_ERROR;
    }
    if (!quiet) {
        char cmd[256];
        lw_proc_cmdline(pid, cmd, sizeof cmd);
        fprintf(stderr,
                "leakwatch: attached to process %ld (%s) in %.1f ms; thread %d was stopped for "
                "%.0f us; %s call entries hooked\n",
                pid, cmd, q.total_ms, (int)q.tid, q.stop_us,
                lw_safe_text(q.library_msg, safe, sizeof safe));
        if (q.signals_requeued)
            fprintf(stderr, "leakwatch: %d signal(s) that arrived meanwhile were sent again\n",
                    q.signals_requeued);
        /* How often a signal stopped the held thread: a flood of them once
         * kept it stopped for 347 ms; held off by its mask now, they wait. */
        if (q.signal_stops)
            fprintf(stderr, "leakwatch: thread %d met %d signal stop(s) while it was held\n",
                    (int)q.tid, q.signal_stops);
        if (q.signals_waiting)
            fprintf(stderr,
                    "leakwatch: signals that arrived meanwhile (%d kind(s)) were left queued for "
                    "it, in order\n",
                    q.signals_waiting);
    }
    if (background) {
        if (!quiet)
            fprintf(stderr,
                    "leakwatch: watching; 'leakwatch top %ld' to see it, 'leakwatch attach "
                    "--detach %ld' to stop\n",
                    pid, pid);
        return LW_EXIT_OK;
    }
    if (!quiet) fprintf(stderr, "leakwatch: watching; Ctrl-C detaches and writes the report\n");
    struct timespec since;
    clock_gettime(CLOCK_REALTIME, &since);
    char sock[4200];
    int live = 0;
    for (long tick = 0;; tick++) {
        if (got_signal) {
            return do_detach(pid, quiet);
        }
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) break;
        if (lw_sock_find(pid, sock, sizeof sock, err, sizeof err) != 0) break;
        /* The job's answer every second, as top reads it. */
        if (!quiet && tick % 10 == 9) live_lines(sock, &live);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    /* The file the job writes, once it is there (issue 43: the template,
     * leakwatch-%p.json, was named before the file existed). */
    char path[PATH_MAX + 64];
    job_report_path(report, pid, path, sizeof path);
    if (strcmp(report, "none") != 0) wait_for_the_end(pid, path, &since);
    if (!quiet) {
        char shown[PATH_MAX + 64];
        lw_safe_text(path, shown, sizeof shown);
        if (!strcmp(report, "none"))
            fprintf(stderr,
                    "leakwatch: process %ld ended or was detached; no report file (-o none)\n",
                    pid);
        else if (access(path, F_OK) == 0)
            fprintf(stderr, "leakwatch: process %ld ended or was detached; its report: %s\n", pid,
                    shown);
        else
            fprintf(stderr,
                    "leakwatch: process %ld ended or was detached; no report at %s (the job's "
                    "stderr says where it went)\n",
                    pid, shown);
    }
    return LW_EXIT_OK;
}
