/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach: the injection (inject.h). The order of things is
 * chosen so that any failure leaves the target as it was: everything that can
 * be checked is checked before the thread is stopped; a thread is borrowed
 * only while it waits in a system call that the kernel restarts as if
 * nothing had happened; its registers, its errno and the stack bytes below
 * its stack pointer are saved first and put back at the end, whatever
 * happened in between; signals that arrive for it meanwhile are held back
 * and sent again once it runs. */
#include "inject.h"

#include "inject_arch.h"
#include "elf_symbols.h"
#include "callchain.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if LW_ATTACH_ARCH
#define RTLD_NOW_ 2              /* <dlfcn.h>: the target's glibc has the same values */
#define RTLD_DLOPEN_ 0x80000000u /* __libc_dlopen_mode's "as dlopen would" flag */
#define SAVE_BELOW (256 * 1024)  /* stack bytes below the thread's that our calls may use */
#define MSG_LEN 512

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* ---- the target's memory map ---- */
typedef struct {
    char path[PATH_MAX];
    uint64_t lo, hi;
} mapping;

/* The first mapping of the target that is wanted: with match, one at file
 * offset 0 of a file whose base name satisfies match; without, the one that
 * holds addr. 0, or -1 when there is none. */
static int find_mapping(pid_t pid, int (*match)(const char *base), uint64_t addr, mapping *out) {
    char p[64], line[PATH_MAX + 128];
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "re");
    if (!f) return -1;
    int found = -1;
    while (found != 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        int pos = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &pos) != 3) continue;
        line[strcspn(line, "\n")] = '\0';
        const char *path = pos ? line + pos : "";
        if (match ? path[0] != '/' || off != 0 || !match(strrchr(path, '/') + 1)
                  : addr < lo || addr >= hi)
            continue;
        snprintf(out->path, sizeof out->path, "%s", path);
        out->lo = lo;
        out->hi = hi;
        found = 0;
    }
    fclose(f);
    return found;
}

/* The first mapping (at file offset 0) of a file whose base name satisfies
 * match. */
static int find_file(pid_t pid, int (*match)(const char *base), mapping *out) {
    return find_mapping(pid, match, 0, out);
}

/* The mapping that holds addr (its bounds, and its path when it has one). */
static int find_addr(pid_t pid, uint64_t addr, mapping *out) {
    return find_mapping(pid, NULL, addr, out);
}

static int is_libc(const char *b) {
    return !strcmp(b, "libc.so.6") || (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}
static int is_libdl(const char *b) {
    return !strncmp(b, "libdl.so", 8) || !strncmp(b, "libdl-2.", 8);
}
static int is_leakwatch(const char *b) {
    return !strcmp(b, "libleakwatch.so");
}
static int is_ld(const char *b) {
    return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7) || !strncmp(b, "ld-2.", 5);
}

/* The file as the target sees it (its mount namespace), else as we do. */
static void target_path(pid_t pid, const char *path, char *out, size_t n) {
    snprintf(out, n, "/proc/%d/root%s", (int)pid, path);
    if (access(out, R_OK) != 0) snprintf(out, n, "%s", path);
}

/* The functions of the target's C library the attach calls. */
typedef struct {
    uint64_t dlopen, dlsym, dlerror, errno_location;
    /* mmap and munmap, and the C library's rt_sigreturn code (__restore_rt,
     * found by its bytes): the page the calls return to (kill_safe). */
    uint64_t mmap, munmap, sigreturn;
    char libc_path[PATH_MAX];
    /* libthread_db's description of struct pthread's tid field (as gdb
     * reads it): tells a thread of the C library from one made with a
     * bare clone (a sanitizer's, a language runtime's), whose thread
     * pointer is another thread's and where no C library call is safe. */
    uint64_t pthread_tid_desc;
    /* The same descriptions of the C library's lists of threads (each
     * thread's struct pthread, at the top of its stack): where the borrowed
     * thread's own stack ends below (own_stack_lo). 0 when not described. */
    uint64_t rtld_global, stack_used_desc, stack_user_desc, list_next_desc, pthread_list_desc,
        sizeof_pthread;
    int private_dlopen; /* __libc_dlopen_mode (glibc < 2.34 without libdl loaded) */
    /* The C library's functions that hold locks the attach needs while they
     * wait (stack_is_safe): fork, from its prepare handlers to its parent
     * handlers (the fork handlers' locks, leakwatch's own from an earlier
     * attach among them; the malloc and stdio locks; the list of handlers),
     * and __register_atfork (that list). */
    uint64_t busy_lo[2], busy_hi[2];
    int nbusy;
} target_fns;

static uint64_t sym_at(const lw_elf_syms *s, const mapping *m, const char *name) {
    uint64_t v = lw_elf_syms_lookup(s, name);
    return v ? m->lo + v : 0; /* shared objects are linked at address 0 */
}

static int find_functions(pid_t pid, target_fns *t, char *err, size_t en) {
    memset(t, 0, sizeof *t);
    mapping libc, libdl;
    char path[PATH_MAX + 32];
    if (find_file(pid, is_libc, &libc) != 0) {
        snprintf(err, en,
                 "process %d has no GNU C library (libc.so.6) loaded: leakwatch attach "
                 "works with glibc programs only",
                 (int)pid);
        return -1;
    }
    target_path(pid, libc.path, path, sizeof path);
    lw_elf_syms *s = lw_elf_syms_load_with_data(path);
    if (!s) {
        snprintf(err, en, "cannot read the symbols of %s", path);
        return -1;
    }
    t->dlopen = sym_at(s, &libc, "dlopen");
    t->dlsym = sym_at(s, &libc, "dlsym");
    t->dlerror = sym_at(s, &libc, "dlerror");
    t->errno_location = sym_at(s, &libc, "__errno_location");
    t->mmap = sym_at(s, &libc, "mmap");
    t->munmap = sym_at(s, &libc, "munmap");
    snprintf(t->libc_path, sizeof t->libc_path, "%s", libc.path);
    t->pthread_tid_desc = sym_at(s, &libc, "_thread_db_pthread_tid");
    t->stack_used_desc = sym_at(s, &libc, "_thread_db_rtld_global__dl_stack_used");
    t->stack_user_desc = sym_at(s, &libc, "_thread_db_rtld_global__dl_stack_user");
    t->list_next_desc = sym_at(s, &libc, "_thread_db_list_t_next");
    t->pthread_list_desc = sym_at(s, &libc, "_thread_db_pthread_list");
    t->sizeof_pthread = sym_at(s, &libc, "_thread_db_sizeof_pthread");
    static const char *const busy[] = {"fork", "__register_atfork"};
    for (size_t i = 0; i < sizeof busy / sizeof busy[0]; i++) {
        uint64_t size = 0, v = lw_elf_syms_lookup_sized(s, busy[i], &size);
        if (v && size) {
            t->busy_lo[t->nbusy] = libc.lo + v;
            t->busy_hi[t->nbusy++] = libc.lo + v + size;
        }
    }
    mapping ldm;
    if (find_file(pid, is_ld, &ldm) == 0) {
        target_path(pid, ldm.path, path, sizeof path);
        lw_elf_syms *l = lw_elf_syms_load_with_data(path);
        t->rtld_global = l ? sym_at(l, &ldm, "_rtld_global") : 0;
        lw_elf_syms_free(l);
    }
    if (!t->dlopen) {
        /* glibc before 2.34: dlopen is libdl's, when the program loaded it. */
        if (find_file(pid, is_libdl, &libdl) == 0) {
            target_path(pid, libdl.path, path, sizeof path);
            lw_elf_syms *d = lw_elf_syms_load(path);
            t->dlopen = sym_at(d, &libdl, "dlopen");
            t->dlsym = sym_at(d, &libdl, "dlsym");
            t->dlerror = sym_at(d, &libdl, "dlerror");
            lw_elf_syms_free(d);
        } else {
            t->dlopen = sym_at(s, &libc, "__libc_dlopen_mode");
            t->dlsym = sym_at(s, &libc, "__libc_dlsym");
            t->dlerror = 0;
            t->private_dlopen = 1;
        }
    }
    lw_elf_syms_free(s);
    if (!t->dlopen || !t->dlsym || !t->errno_location) {
        snprintf(err, en, "cannot find dlopen and dlsym in process %d's C library (%s)", (int)pid,
                 libc.path);
        return -1;
    }
    return 0;
}

/* The executable mappings of the dynamic linker. */
typedef struct {
    uint64_t lo[16], hi[16];
    int n;
} ranges;

static void ld_text(pid_t pid, const char *ld_path, ranges *r) {
    char p[64], line[PATH_MAX + 128];
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "re");
    while (f && r->n < 16 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &pos) != 3 || !pos)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (perms[2] == 'x' && !strcmp(line + pos, ld_path)) {
            r->lo[r->n] = lo;
            r->hi[r->n++] = hi;
        }
    }
    if (f) fclose(f);
}

/* ---- threads ---- */
long lw_thread_syscall(pid_t pid, pid_t tid) {
    char p[96], buf[256];
    snprintf(p, sizeof p, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -2;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -2;
    buf[n] = '\0';
    if (!strncmp(buf, "running", 7)) return -1;
    char *end = NULL;
    long nr = strtol(buf, &end, 10);
    return end == buf ? -2 : nr;
}

/* The thread to borrow: waiting in the most harmless system call, the
 * lowest id (the main thread first) among equals. 0 when none is. */
typedef struct {
    pid_t tid[64];
    int n;
} tid_set;

static int in_set(const tid_set *s, pid_t t) {
    for (int i = 0; i < s->n; i++)
        if (s->tid[i] == t) return 1;
    return 0;
}

static pid_t pick_thread(pid_t pid, const tid_set *never) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    if (!d) return 0;
    struct dirent *e;
    pid_t best = 0;
    int best_rank = 0;
    while ((e = readdir(d))) {
        long tid = strtol(e->d_name, NULL, 10);
        if (tid <= 0 || in_set(never, (pid_t)tid)) continue;
        long nr = lw_thread_syscall(pid, (pid_t)tid);
        int rank = nr >= 0 ? lw_arch_safe_syscall(nr) : 0;
        if (rank > best_rank || (rank == best_rank && rank > 0 && tid < best)) {
            best = (pid_t)tid;
            best_rank = rank;
        }
    }
    closedir(d);
    return best;
}

/* ---- one stopped thread ---- */
typedef struct {
    pid_t pid, tid;
    int memfd;
    lw_regs orig;
    lw_fpregs fp;
    int have_fp;
    int exited;
    /* Where the calls return to: the system call instruction the thread
     * was stopped after (inject_arch.h). */
    uint64_t ret_to;
    /* The thread is stopped at the end of our return's system call (not
     * where the kernel restarts its own: restore() first stops it there). */
    int at_syscall_stop;
    /* Where the calls return to and how: the stub page's (kill_safe) or,
     * without one, the system call instruction ret_to. trap_pc: the
     * program counter at the entry of the system call that ends a call;
     * again_pc: where the thread is put then, so that let go it runs
     * rt_sigreturn (0: nowhere); result_below_sp: where the stub keeps
     * the result, below the stack pointer at the trap (0: it is the system
     * call's number, or lost). */
    int kill_safe;
    uint64_t ret_addr, trap_pc, again_pc, result_below_sp;
    lw_regs adj;      /* the thread's registers as rt_sigreturn puts them back */
    uint64_t sigmask; /* its signal mask, for that frame */
    int mask_checked; /* read again once it ran (a sigsuspend's mask is temporary) */
    /* Its own mask is known exactly (PTRACE_GETSIGMASK where no temporary
     * one is in force): sigmask is that. Then, while it runs our calls, the
     * signals a flood may bring are held off with its mask (blocked: set),
     * where they stay queued for it in order, rather than each stopping it
     * to be held and sent again: a flood of real-time signals kept the
     * thread in one signal stop after another (347 ms stopped). */
    int mask_known, blocked;
    int signal_stops; /* signal-delivery stops while it was held */
    uint64_t fpstate; /* its floating-point state (the legacy area), for that frame */
    int nsig;
    siginfo_t *sigs; /* held, in order of arrival */
    int sigcap;
} thread_ctx;

static int mem_read(const thread_ctx *c, uint64_t addr, void *buf, size_t n) {
    return pread(c->memfd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}
static int mem_write(const thread_ctx *c, uint64_t addr, const void *buf, size_t n) {
    return pwrite(c->memfd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

#define STACK_ROOM (256 * 1024) /* what dlopen and the library's start may need */

static int read_u32(const thread_ctx *c, uint64_t addr, uint32_t *v) {
    return addr && pread(c->memfd, v, sizeof *v, (off_t)addr) == (ssize_t)sizeof *v ? 0 : -1;
}

/* A libthread_db field description's offset (its third word). */
static int desc_offset(const thread_ctx *c, uint64_t desc, uint64_t *off) {
    uint32_t d[3];
    if (!desc || pread(c->memfd, d, sizeof d, (off_t)desc) != (ssize_t)sizeof d) return -1;
    *off = d[2];
    return 0;
}

/* The lowest address of the held thread's own stack below sp, as far as
 * can be told: the bottom of its mapping, raised above the top of every
 * other thread's stack that lies below sp (the C library puts each thread's
 * struct pthread at the top of its stack, the program's own stacks given
 * with pthread_attr_setstack included). Stacks placed next to each other
 * without a guard page are one mapping: without this, the bytes saved and
 * written back below the stack pointer were a neighbour's live stack. */
static uint64_t own_stack_lo(const thread_ctx *c, const target_fns *f, uint64_t sp,
                             uint64_t map_lo) {
    uint64_t lo = map_lo, off_used, off_user, off_next, off_list;
    uint32_t size_pd;
    if (!f->rtld_global || desc_offset(c, f->stack_used_desc, &off_used) != 0 ||
        desc_offset(c, f->stack_user_desc, &off_user) != 0 ||
        desc_offset(c, f->list_next_desc, &off_next) != 0 ||
        desc_offset(c, f->pthread_list_desc, &off_list) != 0 ||
        read_u32(c, f->sizeof_pthread, &size_pd) != 0 || size_pd > 65536)
        return lo;
    uint64_t self = lw_arch_pthread_self(&c->orig);
    uint64_t heads[2] = {f->rtld_global + off_used, f->rtld_global + off_user};
    for (int h = 0; h < 2; h++) {
        uint64_t p = 0;
        if (mem_read(c, heads[h] + off_next, &p, sizeof p) != 0) continue;
        for (int n = 0; p && p != heads[h] && n < 100000; n++) {
            uint64_t pd = p - off_list, top = pd + size_pd;
            if (pd != self && top <= sp && top > lo) lo = top;
            if (mem_read(c, p + off_next, &p, sizeof p) != 0) break;
        }
    }
    return lo;
}

static int in_ranges(const ranges *r, uint64_t a) {
    for (int k = 0; k < r->n; k++)
        if (a >= r->lo[k] && a < r->hi[k]) return 1;
    return 0;
}

static int unwind_read(void *ctx, uint64_t addr, void *buf, size_t n) {
    return mem_read(ctx, addr, buf, n);
}

/* Whether the held thread may run our calls: its stack has room for them,
 * and it is not inside the dynamic linker, leakwatch or the C library's
 * fork (ld: a dlopen or a constructor in progress, a fork between its
 * handlers, leakwatch's own code: locks the calls need may be held by this
 * very thread). What it is inside is told by its program counter and the
 * return addresses of its call chain (callchain.h), not by every word of its
 * stack: a frame's bytes that its function has not written yet keep the
 * return addresses of the calls made before at that depth (the dynamic
 * linker's lazy binding of every first call of a function, a dlsym), and a
 * large frame over them (a buffer, ASan's recv interceptor's) made every
 * wait below it look like one inside the dynamic linker, for good. Where
 * the chain cannot be followed (code without call frame information, a
 * signal frame), every word of the rest of the stack that could be a
 * return address is taken for one, as before. 1 safe; 0 not now; -1 never
 * (its own stack is too small). */
static int stack_is_safe(const thread_ctx *c, const target_fns *fns, const ranges *ld) {
    uint64_t sp = lw_arch_sp(&c->orig), pc = lw_arch_pc(&c->orig);
    if (in_ranges(ld, pc)) return 0;
    mapping m;
    if (find_addr(c->pid, sp - 1, &m) != 0) return 0;
    /* The main thread's stack grows on demand; others' are fixed. */
    if (strcmp(m.path, "[stack]") != 0 &&
        sp - LW_ARCH_RED_ZONE - own_stack_lo(c, fns, sp, m.lo) < STACK_ROOM + 4096)
        return -1;
    if (find_addr(c->pid, sp, &m) != 0) return 1;
    uint64_t regs[LW_CALLCHAIN_NREGS];
    lw_arch_dwarf_regs(&c->orig, regs);
    lw_callchain *chain = malloc(sizeof *chain);
    if (!chain) return 0;
    lw_callchain_walk(c->pid, unwind_read, (void *)c, regs, pc, LW_ARCH_DWARF_SP, LW_ARCH_DWARF_RA,
                      sp, m.hi, chain);
    int inside = 0;
    for (int i = 0; i < chain->n && !inside; i++)
        inside = in_ranges(ld, chain->ra[i] - 1); /* inside the call instruction */
    uint64_t from = chain->complete ? m.hi : chain->stop_sp;
    free(chain);
    if (inside) return 0;
    uint64_t words[4096];
    uint64_t hi = from < m.hi ? (m.hi - from < sizeof words ? m.hi - from : sizeof words) : 0;
    if (hi && pread(c->memfd, words, hi, (off_t)from) != (ssize_t)hi) return 1;
    for (size_t i = 0; i < hi / 8; i++)
        if (in_ranges(ld, words[i])) return 0;
    return 1;
}

/* 1 when the held thread is one of the C library's: its thread pointer is
 * its own struct pthread, whose tid is its own. 1 also when the C library
 * does not describe the field (then nothing tells). */
static int libc_thread(const thread_ctx *c, const target_fns *fns) {
    uint32_t desc[3];
    if (!fns->pthread_tid_desc ||
        pread(c->memfd, desc, sizeof desc, (off_t)fns->pthread_tid_desc) != (ssize_t)sizeof desc ||
        desc[0] != 32 || desc[2] > 65536)
        return 1;
    uint64_t self = lw_arch_pthread_self(&c->orig);
    int32_t tid = 0;
    if (!self || pread(c->memfd, &tid, sizeof tid, (off_t)(self + desc[2])) != (ssize_t)sizeof tid)
        return 0;
    return tid == c->tid;
}

/* A signal for the thread while we hold it: kept, sent again at the end.
 * -1 when it cannot be kept (out of memory): then it is delivered now. */
static int hold_signal(thread_ctx *c, int sig) {
    if (c->nsig == c->sigcap) {
        int nc = c->sigcap ? c->sigcap * 2 : 32;
        siginfo_t *p = realloc(c->sigs, (size_t)nc * sizeof *p);
        if (!p) return -1;
        c->sigs = p;
        c->sigcap = nc;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (ptrace(PTRACE_GETSIGINFO, c->tid, 0, &si) != 0) si.si_signo = sig;
    si.si_signo = sig;
    c->sigs[c->nsig++] = si;
    return 0;
}

/* may_wait 0: the thread is still stopped (it cannot drain a full queue of
 * real-time signals): a signal that finds the queue full, and those after
 * it, are kept for a call after the thread is let go. */
static int requeue_signals_from(thread_ctx *c, int may_wait) {
    int n = 0, i = 0;
    for (; i < c->nsig; i++) {
        siginfo_t *si = &c->sigs[i];
        /* Only queued signals (si_code < 0) keep their information; others
         * come again as from us (sigqueue cannot fake a kernel's). */
        long r;
        for (int tries = 0; tries < 100; tries++) {
            r = si->si_code < 0 && si->si_code != SI_TKILL
                    ? syscall(SYS_rt_tgsigqueueinfo, c->pid, c->tid, si->si_signo, si)
                    : syscall(SYS_tgkill, c->pid, c->tid, si->si_signo);
            if (r == 0 || errno != EAGAIN || !may_wait) break;
            usleep(1000); /* the queue of real-time signals is full: let it drain */
        }
        if (r != 0 && errno == EAGAIN && !may_wait) break;
        if (r == 0) n++;
    }
    /* No signal held: c->sigs may be NULL, which memmove must not get even
     * for 0 bytes. */
    if (c->nsig > i) memmove(c->sigs, c->sigs + i, (size_t)(c->nsig - i) * sizeof *c->sigs);
    c->nsig -= i;
    return n;
}

/* LEAKWATCH_TEST_ATTACH_PAUSE_AFTER_DETACH_MS=N (tests only): the command
 * waits N ms once the thread is let go at the end, before anything else. */
static void pause_after_detach(void) {
    const char *v = secure_getenv("LEAKWATCH_TEST_ATTACH_PAUSE_AFTER_DETACH_MS");
    long ms = v ? strtol(v, NULL, 10) : 0;
    if (ms > 0 && ms < 10000) usleep((useconds_t)ms * 1000);
}

/* Lets the thread go. The signals held meanwhile are queued again first,
 * while it is still stopped: one that arrives from here on comes after them,
 * as it would have (queued after the thread ran again, a new one could be
 * taken first: real-time signals out of order). Returns how many. */
static int let_go(thread_ctx *c, int pause) {
    int n = requeue_signals_from(c, 0);
    ptrace(PTRACE_DETACH, c->tid, 0, 0);
    if (pause) pause_after_detach();
    return n + requeue_signals_from(c, 1);
}

/* 1 when the process has a handler of its own for sig (SigCgt). */
static int sig_caught(pid_t pid, int sig) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "re");
    unsigned long long caught = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SigCgt:", 7)) caught = strtoull(line + 7, NULL, 16);
    if (f) fclose(f);
    return sig >= 1 && sig <= 64 && ((caught >> (sig - 1)) & 1);
}

/* What to do with a signal the thread is about to take while we hold it:
 * the signal to deliver now (0: none). A stop signal whose action is the
 * default one is delivered: the process stops as it would have (our thread
 * takes part in the group stop and goes on with our call; once let go, the
 * kernel puts it back in the stop if the process is still stopped, not if
 * a SIGCONT came meanwhile). A SIGCONT without a handler has done its work
 * when it was sent: nothing to keep. Others are kept, sent again at the
 * end: a handler must not run inside our calls. */
static int signal_now(thread_ctx *c, int sig) {
    if ((sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) &&
        (sig == SIGSTOP || !sig_caught(c->pid, sig)))
        return sig;
    if (sig == SIGCONT && !sig_caught(c->pid, sig)) return 0;
    return hold_signal(c, sig) == 0 ? 0 : sig;
}

/* Waits for the thread's next stop. 0: stopped (*status); -1: it ended. */
static int wait_thread(thread_ctx *c, int *status) {
    for (;;) {
        int st = 0;
        pid_t r = waitpid(c->tid, &st, __WALL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
            c->exited = 1;
            return -1;
        }
        if (WIFSTOPPED(st)) {
            *status = st;
            return 0;
        }
    }
}

/* The thread's blocked signals (SigBlk of its status). */
static uint64_t thread_sigmask(const thread_ctx *c) {
    char p[96], line[256];
    snprintf(p, sizeof p, "/proc/%d/task/%d/status", (int)c->pid, (int)c->tid);
    const char *v = lw_proc_status_field(p, "SigBlk:", line, sizeof line);
    return v ? strtoull(v, NULL, 16) : 0;
}

/* The signals held off the borrowed thread while it runs our calls: all
 * but SIGKILL and SIGSTOP (which cannot be), those a fault raises (blocked,
 * the kernel resets the job's handler of one that a faulting call raises to
 * the default) and the other stop signals (delivered at once, as before). */
static uint64_t held_off(void) {
    static const int keep[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS,  SIGILL, SIGFPE,
                               SIGTRAP, SIGSYS,  SIGTSTP, SIGTTIN, SIGTTOU};
    uint64_t m = ~0ull;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        m &= ~(1ull << (keep[i] - 1));
    return m;
}

static int get_mask(pid_t tid, uint64_t *m) {
    return ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof *m, m) == 0 ? 0 : -1;
}

static int set_mask(pid_t tid, uint64_t m) {
    return ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof m, &m) == 0 ? 0 : -1;
}

/* How many signal numbers wait for the thread (its own pending ones and the
 * process's), not blocked by its own mask. */
static int signals_waiting(const thread_ctx *c) {
    char p[96], line[256];
    snprintf(p, sizeof p, "/proc/%d/task/%d/status", (int)c->pid, (int)c->tid);
    uint64_t pending = 0;
    const char *v = lw_proc_status_field(p, "SigPnd:", line, sizeof line);
    if (v) pending |= strtoull(v, NULL, 16);
    v = lw_proc_status_field(p, "ShdPnd:", line, sizeof line);
    if (v) pending |= strtoull(v, NULL, 16);
    return __builtin_popcountll(pending & ~c->sigmask);
}

/* LEAKWATCH_TEST_ATTACH_DIE_AT=POINT:WHAT (tests only): the command kills
 * itself (as kill -9 would) at that point of the call of WHAT: "call" (the
 * thread runs it), "return" (it returned; its end is being skipped),
 * "skipped" (stopped after that), "restore:" (before the thread's
 * registers are put back). */
static void die_at(const char *point, const char *what) {
    const char *v = secure_getenv("LEAKWATCH_TEST_ATTACH_DIE_AT");
    size_t n = strlen(point);
    if (v && !strncmp(v, point, n) && v[n] == ':' && !strcmp(v + n + 1, what)) raise(SIGKILL);
}

static int write_frame(thread_ctx *c, uint64_t ra_slot) {
    unsigned char frame[LW_ARCH_SIGFRAME_MAX];
    size_t n = lw_arch_sigframe(frame, c->ret_addr, &c->adj, c->sigmask, c->fpstate);
    return mem_write(c, ra_slot, frame, n);
}

/* Runs fn(args) on the thread. 0 and *ret; -1 with err.
 *
 * The call returns to the system call instruction that the thread was
 * stopped after, which it runs with our stack pointer: traced with
 * PTRACE_SYSCALL, that is the stop at the entry of a system call at exactly
 * that address and stack pointer, where the result is the system call's
 * number; the system call is then skipped. Nothing faults: the job's signal
 * handlers, dispositions and masks are never touched (a return to address
 * 0 made the kernel reset a blocked or ignored SIGSEGV to its default). */
static int call(thread_ctx *c, uint64_t fn, const uint64_t *args, int n, uint64_t sp, uint64_t *ret,
                const char *what, char *err, size_t en) {
    lw_regs r = c->orig;
    uint64_t ra_slot = 0;
    lw_arch_prepare_call(&r, fn, args, n, sp, &ra_slot);
    c->at_syscall_stop = 0;
    /* Everything the thread needs to go back on its own is in place before
     * it may run: the command may be killed at any moment from here. */
    if ((ra_slot && (c->kill_safe ? write_frame(c, ra_slot)
                                  : mem_write(c, ra_slot, &c->ret_to, sizeof c->ret_to)) != 0) ||
        lw_arch_set_regs(c->tid, &r) != 0) {
        snprintf(err, en, "cannot set up the call of %s: %s", what, strerror(errno));
        return -1;
    }
    /* Signals held off from here, once the frame that puts the thread's own
     * mask back (kill_safe) is where the call returns: a command killed at
     * any moment leaves its mask as it was. Without that frame, not. */
    if (c->mask_known && c->kill_safe && !c->blocked)
        c->blocked = set_mask(c->tid, c->sigmask | held_off()) == 0;
    else if (c->blocked && !c->kill_safe && set_mask(c->tid, c->sigmask) == 0)
        c->blocked = 0;
    if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) != 0) {
        snprintf(err, en, "cannot set up the call of %s: %s", what, strerror(errno));
        return -1;
    }
    die_at("call", what);
    uint64_t back_sp = lw_arch_sp(&r) + 8; /* after the return */
    int returned = 0;
    for (;;) {
        int st;
        if (wait_thread(c, &st) != 0) {
            snprintf(err, en, "process %d ended during the attach", (int)c->pid);
            return -1;
        }
        int sig = WSTOPSIG(st), event = st >> 16;
        if (event) {
            /* A group stop, or our interrupt: go on with the call. */
            ptrace(PTRACE_SYSCALL, c->tid, 0, 0);
            continue;
        }
        lw_regs now;
        if (lw_arch_get_regs(c->tid, &now) != 0) {
            snprintf(err, en, "cannot read the registers of thread %d", (int)c->tid);
            return -1;
        }
        if (sig == (SIGTRAP | 0x80)) {
            if (returned) {
                /* The end of the skipped system call: the thread is ours. */
                c->at_syscall_stop = 1;
                die_at("skipped", what);
                return 0;
            }
            if (lw_arch_pc(&now) == c->trap_pc && lw_arch_sp(&now) == back_sp) {
                *ret = 0;
                if (c->result_below_sp)
                    mem_read(c, back_sp - c->result_below_sp, ret, sizeof *ret);
                else if (!c->kill_safe)
                    *ret = lw_arch_syscall_number(&now);
                lw_arch_skip_syscall(&now);
                /* Let go from here on, it runs rt_sigreturn (again). */
                if (c->again_pc) lw_arch_set_pc(&now, c->again_pc);
                if (lw_arch_set_regs(c->tid, &now) != 0) {
                    snprintf(err, en, "cannot set the registers of thread %d", (int)c->tid);
                    return -1;
                }
                returned = 1;
                die_at("return", what);
            } else if (c->kill_safe && !c->mask_checked) {
                /* The thread runs with its own mask now (a sigsuspend's or
                 * ppoll's temporary one is gone): the frame gets that. */
                c->mask_checked = 1;
                uint64_t m = thread_sigmask(c);
                if (m != c->sigmask) {
                    c->sigmask = m;
                    write_frame(c, back_sp - 8);
                }
            }
            ptrace(PTRACE_SYSCALL, c->tid, 0, 0);
            continue;
        }
        siginfo_t si;
        if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) &&
            ptrace(PTRACE_GETSIGINFO, c->tid, 0, &si) == 0 && si.si_code > 0) {
            snprintf(err, en,
                     "the call of %s faulted in process %d (signal %d at 0x%llx); its thread "
                     "was put back where it was, but the process may be unstable",
                     what, (int)c->pid, sig, (unsigned long long)lw_arch_pc(&now));
            return -1;
        }
        /* Held, not delivered now (its handler would run inside our call). */
        c->signal_stops++;
        int deliver = signal_now(c, sig);
        ptrace(PTRACE_SYSCALL, c->tid, 0, (void *)(intptr_t)deliver);
    }
}

/* Brings the thread from the end of our return's system call to a stop
 * where putting its registers back makes the kernel restart its own system
 * call as if nothing had happened (a ptrace interrupt: the stop it was
 * seized in). 0, or -1 (it ended). */
static int to_restart_point(thread_ctx *c) {
    if (!c->at_syscall_stop) return 0;
    c->at_syscall_stop = 0;
    if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) != 0 || ptrace(PTRACE_CONT, c->tid, 0, 0) != 0)
        return -1;
    for (;;) {
        int st;
        if (wait_thread(c, &st) != 0) return -1;
        if ((st >> 16) == PTRACE_EVENT_STOP) return 0;
        if (!(st >> 16)) c->signal_stops++;
        int deliver = (st >> 16) ? 0 : signal_now(c, WSTOPSIG(st));
        ptrace(PTRACE_CONT, c->tid, 0, (void *)(intptr_t)deliver);
    }
}

/* Stops tid and checks that it waits in a system call it can be borrowed
 * from. 1: held (c->orig read); 0: not at a safe point now (let go, nothing
 * changed); -1: error in err. */
static int seize(thread_ctx *c, char *err, size_t en) {
    if (ptrace(PTRACE_SEIZE, c->tid, 0, (void *)(intptr_t)PTRACE_O_TRACESYSGOOD) != 0) {
        if (errno == ESRCH) return 0; /* the thread ended: pick another */
        int e = errno;
        char st[96], line[256];
        snprintf(st, sizeof st, "/proc/%d/task/%d/status", (int)c->pid, (int)c->tid);
        const char *tp = lw_proc_status_field(st, "TracerPid:", line, sizeof line);
        long tracer = tp ? strtol(tp, NULL, 10) : 0;
        if (e == EPERM && tracer > 0) {
            /* Another attach (or a debugger) took the thread since the
             * checks: two attaches at once. */
            snprintf(err, en,
                     "thread %d of process %d is being traced by process %ld (another leakwatch "
                     "attach, a debugger or strace): a thread has one tracer at a time; attach "
                     "once that one has let it go",
                     (int)c->tid, (int)c->pid, tracer);
            return -1;
        }
        errno = e;
        snprintf(err, en,
                 "not permitted to trace process %d (ptrace: %s): it may have been made "
                 "undumpable (prctl PR_SET_DUMPABLE), or a security module forbids it",
                 (int)c->pid, strerror(errno));
        return -1;
    }
    if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) != 0) {
        ptrace(PTRACE_DETACH, c->tid, 0, 0);
        return 0;
    }
    for (;;) {
        int st;
        if (wait_thread(c, &st) != 0) return 0;
        if ((st >> 16) == PTRACE_EVENT_STOP) break;
        if (st >> 16) {
            ptrace(PTRACE_CONT, c->tid, 0, 0);
            continue;
        }
        /* A signal on its way to the thread before it stopped: delivered
         * as without us, and the thread is not borrowed this time (held and
         * sent again, it would come after the ones queued meanwhile). */
        ptrace(PTRACE_DETACH, c->tid, 0, (void *)(intptr_t)WSTOPSIG(st));
        return 0;
    }
    if (lw_arch_get_regs(c->tid, &c->orig) != 0) {
        let_go(c, 0);
        return 0;
    }
    if (lw_arch_restart_eintr(&c->orig)) lw_arch_set_regs(c->tid, &c->orig);
    long nr = lw_arch_syscall(&c->orig);
    if (nr < 0 || !lw_arch_safe_syscall(nr)) {
        let_go(c, 0);
        return 0;
    }
    return 1;
}

/* Learns the held thread's own signal mask (c->sigmask, c->mask_known). A
 * thread in sigsuspend, ppoll or pselect6 has a temporary mask that the
 * kernel puts back only as it leaves for its own code, and PTRACE_SETSIGMASK
 * would forget the one to put back: it is first let run into the restart of
 * its own system call, where its own mask is in force, which is then
 * skipped; it stays stopped there, ready to restart it (at_syscall_stop). A
 * signal that comes first is delivered as without us, and the thread let
 * go. 1: held; 0: let go (or it ended). */
static int learn_mask(thread_ctx *c) {
    uint64_t m = 0;
    if (!lw_arch_temp_mask_wait(&c->orig)) {
        if (get_mask(c->tid, &m) == 0) {
            c->sigmask = m;
            c->mask_known = c->mask_checked = 1;
        }
        return 1;
    }
    uint64_t ret_to = lw_arch_pc(&c->orig) - LW_ARCH_SYSCALL_LEN;
    long nr = lw_arch_syscall(&c->orig);
    lw_regs adj, now;
    lw_arch_restart_regs(&c->orig, ret_to, &adj);
    if (ptrace(PTRACE_SYSCALL, c->tid, 0, 0) != 0) {
        let_go(c, 0);
        return 0;
    }
    for (int entered = 0;;) {
        int st;
        if (wait_thread(c, &st) != 0) return 0;
        int sig = WSTOPSIG(st);
        if (!(st >> 16) && sig != (SIGTRAP | 0x80)) {
            if (!entered) {
                ptrace(PTRACE_DETACH, c->tid, 0, (void *)(intptr_t)sig);
                return 0;
            }
            c->signal_stops++;
            ptrace(PTRACE_SYSCALL, c->tid, 0, (void *)(intptr_t)signal_now(c, sig));
            continue;
        }
        if (st >> 16) {
            ptrace(PTRACE_SYSCALL, c->tid, 0, 0);
            continue;
        }
        if (entered) {
            c->at_syscall_stop = 1;
            return 1;
        }
        /* The entry of its own system call, restarted: skipped, and the
         * thread put where resuming restarts it again. */
        if (lw_arch_get_regs(c->tid, &now) != 0 ||
            lw_arch_pc(&now) != ret_to + LW_ARCH_SYSCALL_LEN ||
            (long)lw_arch_syscall_number(&now) != nr || get_mask(c->tid, &m) != 0 ||
            lw_arch_set_regs(c->tid, &adj) != 0) {
            ptrace(PTRACE_DETACH, c->tid, 0, 0);
            return 0;
        }
        c->sigmask = m;
        c->mask_known = c->mask_checked = 1;
        entered = 1;
        ptrace(PTRACE_SYSCALL, c->tid, 0, 0);
    }
}

/* LEAKWATCH_TEST_ATTACH_HOLD_DIR=DIR (tests only): once a thread is held,
 * before the first call, the command writes "held TID" to DIR/held and
 * waits until DIR/go (a FIFO) is opened and closed by a writer. */
static void hold_for_test(pid_t tid) {
    const char *d = secure_getenv("LEAKWATCH_TEST_ATTACH_HOLD_DIR");
    if (!d || !*d) return;
    char tmp[PATH_MAX], path[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/held.tmp", d);
    snprintf(path, sizeof path, "%s/held", d);
    FILE *f = fopen(tmp, "we");
    if (!f) return;
    fprintf(f, "held %d\n", (int)tid);
    if (fclose(f) != 0 || rename(tmp, path) != 0) return;
    snprintf(path, sizeof path, "%s/go", d);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char b[16];
    for (ssize_t n = 1; fd >= 0 && n != 0;) {
        n = read(fd, b, sizeof b);
        if (n < 0 && errno != EINTR) break;
    }
    if (fd >= 0) close(fd);
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* The C library's rt_sigreturn code (__restore_rt, not exported): found
 * by its bytes in its executable mappings. 0 when it is not there. */
static uint64_t find_sigreturn(const thread_ctx *c, const target_fns *f) {
    ranges r = {.n = 0};
    ld_text(c->pid, f->libc_path, &r);
    uint64_t found = 0;
    for (int i = 0; i < r.n && !found; i++) {
        size_t n = (size_t)(r.hi[i] - r.lo[i]);
        unsigned char *b = n <= (64u << 20) ? malloc(n) : NULL;
        if (b && mem_read(c, r.lo[i], b, n) == 0) {
            const unsigned char *at = memmem(b, n, lw_arch_sigreturn_code, lw_arch_sigreturn_len);
            if (at) found = r.lo[i] + (uint64_t)(at - b);
        }
        free(b);
    }
    return found;
}

/* An address for the stub's page far from everything (the middle of the
 * largest hole of the address space, where neither the heap nor the
 * kernel's placement of mappings reaches soon). 0 when there is none. */
static uint64_t stub_address(pid_t pid, uint64_t page) {
    char p[64], line[PATH_MAX + 128];
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "re");
    if (!f) return 0;
    uint64_t prev = 1ull << 24, best = 0, best_len = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        if (lo >= 0x7ff000000000ull) break;
        if (lo > prev && lo - prev > best_len) {
            best_len = lo - prev;
            best = prev + (lo - prev) / 2;
        }
        if (hi > prev) prev = hi;
    }
    fclose(f);
    return best_len >= (1ull << 30) ? best & ~(page - 1) : 0;
}

/* Whether [addr, addr + len) is one anonymous r-x mapping (the one the
 * stub's mmap made). */
static int stub_mapped(pid_t pid, uint64_t addr, uint64_t len) {
    char p[64], line[PATH_MAX + 128];
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "re");
    int yes = 0;
    while (f && !yes && fgets(line, sizeof line, f)) {
        unsigned long lo, hi, ino;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &ino, &pos) == 4 &&
            lo == addr && hi == addr + len && !strcmp(perms, "r-xp") && ino == 0)
            yes = line[pos] == '\0' || line[pos] == '\n';
    }
    if (f) fclose(f);
    return yes;
}

static int cancelled(const lw_inject *q) {
    return q->cancel && *q->cancel;
}

/* Between two calls: 1 (err set) when the command was asked to stop. */
static int stop_here(const lw_inject *q, const char *after, char *err, size_t en) {
    if (!cancelled(q)) return 0;
    snprintf(err, en, "interrupted after %s; process %d's thread was put back as it was", after,
             (int)q->pid);
    return 1;
}

int lw_inject_library(lw_inject *q, char *err, size_t en) {
    double t0 = now_us();
    target_fns fns;
    if (find_functions(q->pid, &fns, err, en) != 0) return -1;
    mapping ld;
    ranges ld_ranges = {.n = 0};
    /* A thread inside fork holds the fork handlers' locks (leakwatch's
     * start_lock, taken by its prepare handler, and the C library's malloc
     * and stdio locks) while it waits in a futex for the next one, with no
     * frame of leakwatch's own on its stack once the handler returned or
     * tail-called pthread_mutex_lock: borrowed, it waited for the attach,
     * which waited for start_lock (the fork-heavy attach/detach hang). */
    for (int i = 0; i < fns.nbusy; i++) {
        ld_ranges.lo[ld_ranges.n] = fns.busy_lo[i];
        ld_ranges.hi[ld_ranges.n++] = fns.busy_hi[i];
    }
    if (find_file(q->pid, is_ld, &ld) == 0) ld_text(q->pid, ld.path, &ld_ranges);
    /* A thread inside leakwatch's own code (loaded by an earlier attach) may
     * hold one of its locks, which the attach takes: never borrowed. */
    mapping own;
    if (find_file(q->pid, is_leakwatch, &own) == 0) ld_text(q->pid, own.path, &ld_ranges);

    thread_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, en, "out of memory");
        return -1;
    }
    c->pid = q->pid;
    char mp[64];
    snprintf(mp, sizeof mp, "/proc/%d/mem", (int)q->pid);
    c->memfd = open(mp, O_RDWR | O_CLOEXEC);
    if (c->memfd < 0) {
        snprintf(err, en, "cannot open %s: %s", mp, strerror(errno));
        free(c->sigs);
        free(c);
        return -1;
    }
    double deadline = now_us() + (double)(q->wait_ms > 0 ? q->wait_ms : 2000) * 1000.0;
    double stopped_at = 0;
    int held = 0;
    tid_set never = {.n = 0};
    while (!held) {
        pid_t tid = pick_thread(q->pid, &never);
        if (tid > 0) {
            c->tid = tid;
            c->nsig = 0;
            c->exited = c->at_syscall_stop = 0;
            c->mask_known = c->mask_checked = c->blocked = 0;
            stopped_at = now_us();
            int r = seize(c, err, en);
            if (r < 0) {
                close(c->memfd);
                free(c->sigs);
                free(c);
                return -1;
            }
            if (r > 0 && !libc_thread(c, &fns)) {
                let_go(c, 0);
                if (never.n < 64) never.tid[never.n++] = c->tid;
                r = 0;
            }
            int safe = r > 0 ? stack_is_safe(c, &fns, &ld_ranges) : 1;
            if (safe <= 0) {
                let_go(c, 0);
                if (safe < 0 && never.n < 64) never.tid[never.n++] = c->tid;
                r = 0;
            }
            held = r > 0 && learn_mask(c) > 0;
        }
        if (!held) {
            if (cancelled(q)) {
                snprintf(err, en, "interrupted before a thread of process %d was borrowed",
                         (int)q->pid);
                close(c->memfd);
                free(c->sigs);
                free(c);
                return -1;
            }
            if (kill(q->pid, 0) != 0 && errno == ESRCH) {
                snprintf(err, en, "process %d ended during the attach", (int)q->pid);
                close(c->memfd);
                free(c->sigs);
                free(c);
                return -1;
            }
            if (now_us() > deadline) {
                snprintf(err, en,
                         "no thread of process %d is waiting in a system call where it can be "
                         "borrowed safely (all are computing, or inside the GPU driver): try "
                         "again in a moment",
                         (int)q->pid);
                close(c->memfd);
                free(c->sigs);
                free(c);
                return -1;
            }
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    q->tid = c->tid;

    /* From here the thread is ours: every path ends in "restore". */
    c->ret_to = lw_arch_pc(&c->orig) - LW_ARCH_SYSCALL_LEN;
    c->have_fp = lw_arch_get_fpregs(c->tid, &c->fp) == 0;
    int rc = -1;
    unsigned char *saved = NULL;
    uint64_t save_lo = 0, save_hi = 0;
    int have_errno = 0, errno_val = 0;
    uint64_t errno_addr = 0;
    uint64_t sigret = 0, stub_page = 0, page = (uint64_t)sysconf(_SC_PAGESIZE);
    /* The strings, below the red zone; our calls' frames below them. */
    const char *entry = "leakwatch__attach";
    size_t lib_len = strlen(q->library) + 1, set_len = strlen(q->settings) + 1;
    size_t ent_len = strlen(entry) + 1;
    uint64_t sp0 = lw_arch_sp(&c->orig);
    uint64_t top = sp0 - LW_ARCH_RED_ZONE;
    uint64_t a_lib = (top - lib_len) & ~(uint64_t)15;
    uint64_t a_set = (a_lib - set_len) & ~(uint64_t)15;
    uint64_t a_ent = (a_set - ent_len) & ~(uint64_t)15;
    uint64_t a_msg = (a_ent - MSG_LEN) & ~(uint64_t)15;
    uint64_t a_fp = (a_msg - 512) & ~(uint64_t)63;
    /* rt_sigreturn's frame lies above the calls' return address. */
    uint64_t call_sp = (a_fp - 512) & ~(uint64_t)15;
    mapping stack;
    unsigned char insn[LW_ARCH_SYSCALL_LEN];
    if (mem_read(c, c->ret_to, insn, sizeof insn) != 0 || !lw_arch_is_syscall(insn)) {
        snprintf(err, en, "thread %d is not stopped after a system call instruction", (int)c->tid);
        goto restore;
    }
    if (find_addr(q->pid, sp0 - 1, &stack) == 0)
        stack.lo = own_stack_lo(c, &fns, sp0, stack.lo);
    else
        stack.lo = sp0; /* unknown: no room */
    if (call_sp < stack.lo + 4096) {
        snprintf(err, en, "thread %d's stack has no room for the calls", (int)c->tid);
        goto restore;
    }
    save_hi = sp0;
    save_lo = call_sp > stack.lo + SAVE_BELOW ? call_sp - SAVE_BELOW : stack.lo;
    saved = malloc(save_hi - save_lo);
    if (!saved || mem_read(c, save_lo, saved, save_hi - save_lo) != 0) {
        free(saved);
        saved = NULL;
        snprintf(err, en, "cannot read thread %d's stack", (int)c->tid);
        goto restore;
    }
    char zero_msg[MSG_LEN];
    memset(zero_msg, 0, sizeof zero_msg);
    if (mem_write(c, a_lib, q->library, lib_len) != 0 ||
        mem_write(c, a_set, q->settings, set_len) != 0 ||
        mem_write(c, a_ent, entry, ent_len) != 0 || mem_write(c, a_msg, zero_msg, MSG_LEN) != 0) {
        snprintf(err, en, "cannot write to process %d's memory", (int)q->pid);
        goto restore;
    }

    uint64_t r = 0;
    /* The way back (kill_safe): every call returns to a stub in a page of
     * its own that runs rt_sigreturn with the thread's registers; killed,
     * the command leaves the thread to go back on its own. Without that
     * page (no rt_sigreturn code found, no room, a kernel without
     * MAP_FIXED_NOREPLACE) the calls return to the system call
     * instruction, where the thread depends on the command. */
    c->ret_addr = c->ret_to;
    c->trap_pc = c->ret_to + LW_ARCH_SYSCALL_LEN;
    lw_arch_restart_regs(&c->orig, c->ret_to, &c->adj);
    if (!c->mask_known) c->sigmask = thread_sigmask(c);
    hold_for_test(c->tid);
    if (c->have_fp) {
        unsigned char fx[512];
        memcpy(fx, c->fp.data, sizeof fx);
        memset(fx + 464, 0, 48); /* no extended state: the kernel restores the legacy area */
        if (mem_write(c, a_fp, fx, sizeof fx) == 0) c->fpstate = a_fp;
    }
    sigret = fns.mmap && fns.munmap ? find_sigreturn(c, &fns) : 0;
    uint64_t want = sigret ? stub_address(q->pid, page) : 0;
    if (want) {
        c->kill_safe = 1;
        c->ret_addr = c->again_pc = sigret;
        c->trap_pc = sigret + lw_arch_sigreturn_len;
        c->result_below_sp = 0;
        uint64_t margs[6] = {want,
                             page,
                             PROT_READ | PROT_EXEC,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                             (uint64_t)-1,
                             0};
        if (call(c, fns.mmap, margs, 6, call_sp, &r, "mmap", err, en) != 0) goto restore;
        unsigned char stub[64];
        size_t again = 0, trap = 0, result = 0, n = lw_arch_stub(stub, &again, &trap, &result);
        if (stub_mapped(q->pid, want, page) && mem_write(c, want, stub, n) == 0) {
            stub_page = want;
            c->ret_addr = want;
            c->again_pc = want + again;
            c->trap_pc = want + trap;
            c->result_below_sp = result;
        } else {
            c->kill_safe = 0;
            c->ret_addr = c->ret_to;
            c->trap_pc = c->ret_to + LW_ARCH_SYSCALL_LEN;
            c->again_pc = c->result_below_sp = 0;
        }
    }
    if (stop_here(q, "the thread was stopped", err, en)) goto restore;
    if (call(c, fns.errno_location, NULL, 0, call_sp, &r, "__errno_location", err, en) != 0)
        goto restore;
    errno_addr = r;
    if (mem_read(c, errno_addr, &errno_val, sizeof errno_val) == 0) have_errno = 1;

    if (stop_here(q, "the thread was stopped", err, en)) goto restore;
    uint64_t args[3] = {a_lib, RTLD_NOW_ | (fns.private_dlopen ? RTLD_DLOPEN_ : 0), 0};
    if (call(c, fns.dlopen, args, 2, call_sp, &r, "dlopen", err, en) != 0) goto restore;
    uint64_t handle = r;
    if (!handle) {
        char why[400] = "";
        if (fns.dlerror && call(c, fns.dlerror, NULL, 0, call_sp, &r, "dlerror", err, en) == 0 &&
            r) {
            mem_read(c, r, why, sizeof why - 1);
            why[sizeof why - 1] = '\0';
        }
        snprintf(err, en, "process %d could not load %s: %s%s", (int)q->pid, q->library,
                 why[0] ? why : "dlopen failed",
                 strstr(why, "static TLS")
                     ? " (the library needs about 1 KiB of the process's static TLS reserve, "
                       "which its other libraries have used up; start the job with "
                       "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096 to attach later, or "
                       "under leakwatch run)"
                     : "");
        goto restore;
    }
    if (stop_here(q, "the library was loaded (it stays, inert)", err, en)) goto restore;
    args[0] = handle;
    args[1] = a_ent;
    if (call(c, fns.dlsym, args, 2, call_sp, &r, "dlsym", err, en) != 0) goto restore;
    if (!r) {
        snprintf(err, en, "%s has no leakwatch__attach: it is not this version's library",
                 q->library);
        goto restore;
    }
    uint64_t attach_fn = r;
    if (stop_here(q, "the library was loaded (it stays, inert)", err, en)) goto restore;
    args[0] = a_set;
    args[1] = a_msg;
    args[2] = MSG_LEN;
    if (call(c, attach_fn, args, 3, call_sp, &r, "leakwatch__attach", err, en) != 0) goto restore;
    q->library_rc = (int)(int32_t)(uint32_t)r;
    mem_read(c, a_msg, q->library_msg, sizeof q->library_msg);
    q->library_msg[sizeof q->library_msg - 1] = '\0';
    rc = 0;

restore:
    if (stub_page && !c->exited && c->at_syscall_stop) {
        /* The stub's page goes; this call returns to the C library's
         * rt_sigreturn code. */
        char ignored[256];
        uint64_t uargs[2] = {stub_page, page}, u = 0;
        c->ret_addr = c->again_pc = sigret;
        c->trap_pc = sigret + lw_arch_sigreturn_len;
        c->result_below_sp = 0;
        call(c, fns.munmap, uargs, 2, call_sp, &u, "munmap", ignored, sizeof ignored);
    }
    if (!c->exited && to_restart_point(c) != 0) c->exited = 1;
    if (!c->exited) {
        /* Its own mask back first: the signals held off are its again, in
         * the order they came, once it runs. */
        if (c->blocked) {
            q->signals_waiting = signals_waiting(c);
            if (set_mask(c->tid, c->sigmask) == 0) c->blocked = 0;
        }
        die_at("restore", "");
        if (have_errno) mem_write(c, errno_addr, &errno_val, sizeof errno_val);
        if (saved) mem_write(c, save_lo, saved, save_hi - save_lo);
        lw_arch_set_regs(c->tid, &c->orig);
        if (c->have_fp) lw_arch_set_fpregs(c->tid, &c->fp);
        q->stop_us = now_us() - stopped_at;
        q->signals_requeued = let_go(c, 1);
    }
    q->signal_stops = c->signal_stops;
    free(saved);
    if (c->memfd >= 0) close(c->memfd);
    free(c->sigs);
    free(c);
    q->total_ms = (now_us() - t0) / 1000.0;
    return rc;
}
#else
/* No processor part yet (inject_arch.h): the command says so. */
long lw_thread_syscall(pid_t pid, pid_t tid) {
    (void)pid;
    (void)tid;
    return -2;
}

int lw_inject_library(lw_inject *q, char *err, size_t en) {
    (void)q;
    snprintf(err, en, "leakwatch attach is not available on this processor yet (x86-64 only)");
    return -1;
}
#endif
