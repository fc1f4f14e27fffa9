/* SPDX-License-Identifier: Apache-2.0 */
/* Report-time symbolisation: names from the symbol tables (elf_symbols.c),
 * source lines and inlined frames from addr2line (addr2line.c), one child
 * process per module that has debug information, one request per unique
 * address. Nothing here runs on the allocation path: the hooks keep raw
 * return addresses, and only a report being written calls in here. */
#include "symbolize.h"

#include "addr2line.h"
#include "clock.h"
#include "code_epoch.h"
#include "dl_walk.h"
#include "elf_symbols.h"
#include "lw_uthash.h"
#include "options.h"
#include "sandbox.h"
#include "real.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct entry {
    uintptr_t addr;
    lw_symbol sym;
    /* Source lines were wanted and the module has them, but none were got
     * (out of this report's time, addr2line failed): a later report tries
     * again, with a new entry (this one stays valid while a report may hold
     * it). */
    int lines_missing;
    struct entry *retired; /* next on the cache's list of replaced entries */
    UT_hash_handle hh;
} entry;

/* One per module met: its symbol table, read once, and its addr2line
 * process, started at its first address that needs one and kept for the
 * following reports. */
typedef struct module {
    char *path;
    lw_elf_syms *syms; /* NULL when unreadable */
    lw_a2l *a2l;
    unsigned a2l_report; /* the report that last started (or tried) it */
    UT_hash_handle hh;
} module;

/* Time given to source lines, so that a slow or hung addr2line delays the
 * job's exit by a bounded amount: one answer (the first includes reading the
 * module's debug information; seconds for a large C++ library), and all of
 * one report's. */
#define ANSWER_NS (5 * 1000000000ull)
#define REPORT_NS (15 * 1000000000ull)

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The names of the process's code, shared by every report, snapshot and
 * label for as long as no module is unloaded: each address is named once
 * for the life of the process, and each module's addr2line runs from its
 * first report to the next unload (or the end of the process). An unload
 * (dlclose: the loader's count of removed objects moves) starts a new
 * cache; the old one is freed when the last report holding it ends. */
typedef struct cache {
    entry *table;
    module *modules;
    entry *retired;
    unsigned long long subs; /* the loader's unload count when made */
    int source_lines;
    int refs; /* reports holding it, plus one while it is the current one */
} cache;

struct lw_symtab {
    cache *c;
    int shared;        /* c is the shared cache: lookups under the lock */
    unsigned report;   /* this table's number (addr2line restarts once per report) */
    uint64_t deadline; /* of this report's source lines; 0 before the first */
    int demangle_tried;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cache *current;
static unsigned reports;
static char *tool; /* lw_a2l_tool's cache */
static _Atomic(demangle_fn) demangle;
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;
static char *exe_path;
static uintptr_t exe_base;

static int find_exe(struct dl_phdr_info *info, size_t size, void *data) {
    /* The first object dl_iterate_phdr reports is the main program. */
    *(uintptr_t *)data = info->dlpi_addr;
    return 1;
}

static void exe_init(void) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
        exe_path = strdup(buf);
    }
    lw_dl_walk(find_exe, &exe_base);
}

static int get_subs(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *subs = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *subs = info->dlpi_subs;
    return 1;
}

/* What says that no code went away: the loader's count of unloaded objects
 * (it moves only when a dlclose really unmaps one, whoever calls it), or, on
 * a loader without it, leakwatch's own count of dlclose calls. */
static unsigned long long unload_count(void) {
    unsigned long long subs = ~0ull;
    lw_dl_walk(get_subs, &subs);
    return subs != ~0ull ? subs : (1ull << 63) | lw_code_epoch();
}

/* Which module holds an address, without dladdr: dladdr also looks for the
 * nearest exported symbol, a walk over the module's whole dynamic symbol
 * table (libtorch_cpu's 41,000 symbols, each lookup), where only the module
 * is wanted. A table of the loaded objects' PT_LOAD segments, from
 * dl_iterate_phdr, made again whenever the loader's counts of added or
 * removed objects move (checked at each lookup: the walk stops at the first
 * object, a few hundred instructions). dladdr's rule is the same one: the
 * object one of whose PT_LOAD segments holds the address. Addresses it does
 * not hold (another link-map namespace, the padding between segments, no
 * module) still go to dladdr, which then finds no symbol to scan or answers
 * as before. Under the lock. */
typedef struct {
    uintptr_t start, end; /* [start, end) of one PT_LOAD segment */
    size_t obj;
} segment;

typedef struct {
    char *name;      /* dlpi_name (the link map's l_name); "" for the program */
    uintptr_t bias;  /* dlpi_addr: l_addr */
    uintptr_t start; /* where its mapping starts: dladdr's dli_fbase (l_map_start) */
} object;

static struct {
    object *objs;
    size_t nobjs;
    segment *segs;
    size_t nsegs;
    unsigned long long adds, subs; /* the loader's counts it was made at */
    int made;
} loaded;

static int get_counts(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *counts = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        counts[0] = info->dlpi_adds;
        counts[1] = info->dlpi_subs;
    }
    return 1;
}

static void loaded_clear(void) {
    for (size_t i = 0; i < loaded.nobjs; i++)
        free(loaded.objs[i].name);
    free(loaded.objs);
    free(loaded.segs);
    loaded.objs = NULL;
    loaded.segs = NULL;
    loaded.nobjs = loaded.nsegs = 0;
    loaded.made = 0;
}

typedef struct {
    size_t nobjs, nsegs, cap_objs, cap_segs;
    object *objs;
    segment *segs;
    /* The loader's counts, read in the same walk as the objects (the
     * loader's lock held throughout): the table is what they describe. */
    unsigned long long counts[2];
    int failed;
} collect;

static int add_object(struct dl_phdr_info *info, size_t size, void *data) {
    collect *c = data;
    if (c->failed) return 1;
    if (!c->nobjs) get_counts(info, size, c->counts);
    if (c->nobjs == c->cap_objs) {
        size_t cap = c->cap_objs ? 2 * c->cap_objs : 64;
        object *o = realloc(c->objs, cap * sizeof *o);
        if (!o) return c->failed = 1;
        c->objs = o;
        c->cap_objs = cap;
    }
    /* The loader's own formula for where the mapping starts (l_map_start):
     * the lowest PT_LOAD segment's start, rounded down to the page. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = UINTPTR_MAX;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !ph->p_memsz) continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + (ph->p_vaddr & ~(page - 1)) < start)
            start = info->dlpi_addr + (ph->p_vaddr & ~(page - 1));
        if (c->nsegs == c->cap_segs) {
            size_t cap = c->cap_segs ? 2 * c->cap_segs : 256;
            segment *sg = realloc(c->segs, cap * sizeof *sg);
            if (!sg) return c->failed = 1;
            c->segs = sg;
            c->cap_segs = cap;
        }
        c->segs[c->nsegs++] = (segment){s, s + ph->p_memsz, c->nobjs};
    }
    char *name = strdup(info->dlpi_name ? info->dlpi_name : "");
    if (!name) return c->failed = 1;
    c->objs[c->nobjs++] = (object){name, info->dlpi_addr, start};
    return 0;
}

static int by_start(const void *a, const void *b) {
    const segment *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The table brought up to date with the loader (the lock held); 0 when it
 * cannot be had (no counts from this loader, out of memory): dladdr then. */
static int loaded_current(void) {
    unsigned long long counts[2] = {~0ull, ~0ull};
    lw_dl_walk(get_counts, counts);
    if (counts[1] == ~0ull) return 0;
    if (loaded.made && loaded.adds == counts[0] && loaded.subs == counts[1]) return 1;
    loaded_clear();
    collect c = {0};
    lw_dl_walk(add_object, &c);
    if (c.failed) {
        for (size_t i = 0; i < c.nobjs; i++)
            free(c.objs[i].name);
        free(c.objs);
        free(c.segs);
        return 0;
    }
    qsort(c.segs, c.nsegs, sizeof *c.segs, by_start);
    loaded.objs = c.objs;
    loaded.nobjs = c.nobjs;
    loaded.segs = c.segs;
    loaded.nsegs = c.nsegs;
    loaded.adds = c.counts[0];
    loaded.subs = c.counts[1];
    loaded.made = 1;
    return 1;
}

/* The loaded object one of whose segments holds pc, or NULL. */
static const object *loaded_find(uintptr_t pc) {
    size_t lo = 0, hi = loaded.nsegs; /* first segment starting above pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (loaded.segs[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= loaded.segs[lo - 1].end) return NULL;
    return &loaded.objs[loaded.segs[lo - 1].obj];
}

static void entry_free(entry *e) {
    free((char *)e->sym.function);
    free((char *)e->sym.module);
    free((char *)e->sym.file);
    for (int i = 0; i < e->sym.ninlined; i++) {
        free((char *)e->sym.inlined[i].function);
        free((char *)e->sym.inlined[i].file);
    }
    free((void *)e->sym.inlined);
    free(e);
}

static void cache_free(cache *c) {
    if (!c) return;
    entry *e, *tmp;
    HASH_ITER(hh, c->table, e, tmp) {
        HASH_DEL(c->table, e);
        entry_free(e);
    }
    while (c->retired) {
        e = c->retired;
        c->retired = e->retired;
        entry_free(e);
    }
    module *m, *mtmp;
    HASH_ITER(hh, c->modules, m, mtmp) {
        HASH_DEL(c->modules, m);
        lw_a2l_close(m->a2l);
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
    }
    free(c);
}

static cache *cache_new(int source_lines, unsigned long long subs) {
    cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->source_lines = source_lines;
    c->subs = subs;
    return c;
}

/* Drops one hold on c (the lock held); the last one frees it. */
static void cache_put(cache *c) {
    if (c && --c->refs == 0) cache_free(c);
}

lw_symtab *lw_symtab_new(void) {
    pthread_once(&exe_once, exe_init);
    lw_symtab *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    /* Under a seccomp filter no addr2line process (clone, execve,
     * socketpair: calls a filter may punish by killing the job). */
    int source_lines = lw_opt_int(LW_OPT_SOURCE_LINES) != 0 && !lw_sandboxed();
    unsigned long long subs = unload_count();
    pthread_mutex_lock(&lock);
    if (current && (current->subs != subs || current->source_lines != source_lines)) {
        cache_put(current);
        current = NULL;
    }
    if (!current && (current = cache_new(source_lines, subs)) != NULL) current->refs = 1;
    if (current) {
        current->refs++;
        t->c = current;
        t->shared = 1;
    }
    t->report = ++reports;
    pthread_mutex_unlock(&lock);
    if (!t->c) {
        free(t);
        return NULL;
    }
    return t;
}

/* Names only, in a table of its own (the shared one holds source lines). */
lw_symtab *lw_symtab_new_names(void) {
    pthread_once(&exe_once, exe_init);
    lw_symtab *t = calloc(1, sizeof *t);
    if (t && !(t->c = cache_new(0, 0))) {
        free(t);
        return NULL;
    }
    if (t) t->c->refs = 1;
    return t;
}

void lw_symtab_release(void) {
    pthread_mutex_lock(&lock);
    cache_put(current);
    current = NULL;
    loaded_clear();
    pthread_mutex_unlock(&lock);
}

void lw_symtab_after_fork_child(void) {
    /* The parent's cache is left as it is (another thread may have been
     * changing it): the child starts its own. The parent's addr2line
     * processes are the parent's: the child only lets go of its copies of
     * their sockets, so that they still end when the parent closes them. */
    pthread_mutex_init(&lock, NULL);
    current = NULL;
    /* The table of loaded objects too: another thread may have been making
     * it (left, as the cache is). */
    memset(&loaded, 0, sizeof loaded);
    lw_a2l_forget_after_fork();
}

static module *module_of(cache *c, const char *path) {
    module *m = NULL;
    HASH_FIND_STR(c->modules, path, m);
    if (m) return m;
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    m->syms = lw_elf_syms_load(path);
    lw_uthash_oom = 0;
    HASH_ADD_KEYPTR(hh, c->modules, m->path, strlen(m->path), m);
    if (lw_uthash_oom) {
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
        return NULL;
    }
    return m;
}

/* C++ names, readable: the C++ runtime's demangler, if the process has one.
 * Found at report time only, never loaded into a process that lacks it
 * (looked for again by each report until found: it may be loaded later).
 * NULL when name is mangled and cannot be demangled here. */
static char *demangled(lw_symtab *t, const char *name) {
    if (strncmp(name, "_Z", 2) != 0) return strdup(name);
    demangle_fn fn = atomic_load_explicit(&demangle, memory_order_acquire);
    if (!fn && !t->demangle_tried) {
        t->demangle_tried = 1;
        fn = (demangle_fn)lw_real_dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (fn) atomic_store_explicit(&demangle, fn, memory_order_release);
    }
    int status = -1;
    char *d = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (d && status == 0) return d;
    free(d);
    return NULL;
}

/* The frames addr2line gives for vaddr in m; 0 when none. *missing is set
 * when the module has source lines that were not got this time (no
 * addr2line running, out of time): a later report asks again. */
static int source_frames(lw_symtab *t, module *m, uint64_t vaddr, lw_a2l_frame **out,
                         int *missing) {
    *out = NULL;
    *missing = 0;
    if (!t->c->source_lines || !m || !lw_elf_syms_has_debug(m->syms) || !lw_a2l_tool(&tool))
        return 0;
    uint64_t now = lw_now_ns();
    if (!t->deadline) t->deadline = now + REPORT_NS;
    /* Started at the module's first address, kept for the reports after;
     * one that died or was stopped is started again once per report. */
    if ((!m->a2l || !lw_a2l_alive(m->a2l)) && m->a2l_report != t->report && now < t->deadline) {
        m->a2l_report = t->report;
        lw_a2l_close(m->a2l);
        m->a2l = lw_a2l_open(lw_a2l_tool(&tool), m->path);
    }
    *missing = 1;
    if (!m->a2l || now >= t->deadline) return 0;
    uint64_t deadline = now + ANSWER_NS < t->deadline ? now + ANSWER_NS : t->deadline;
    int n = lw_a2l_query(m->a2l, vaddr, deadline, out);
    /* A tool that kept us waiting once is not waited on again in this report:
     * a hung one delays the report by one answer's time, not one per module. */
    if (n == -2) t->deadline = now;
    if (n >= 0) *missing = 0;
    return n > 0 ? n : 0;
}

/* Fills e->sym's name, file:line and inlined frames from the symbol table's
 * name (may be NULL) and addr2line's frames (innermost first; consumed). */
static void fill(lw_symtab *t, entry *e, const char *name, lw_a2l_frame *fr, int n) {
    /* The symbol table's name for the frame itself: it names the code that
     * actually ran (a clone, a cold part). The debug information's name where
     * the symbol table has none or it cannot be demangled in this process. */
    char *fn = name ? demangled(t, name) : NULL;
    if (!fn && n > 0 && fr[n - 1].function) {
        fn = fr[n - 1].function;
        fr[n - 1].function = NULL;
    }
    if (!fn && name) fn = strdup(name);
    e->sym.function = fn;
    if (n > 0) {
        e->sym.file = fr[n - 1].file;
        e->sym.line = fr[n - 1].line;
        fr[n - 1].file = NULL;
    }
    lw_symbol *in = n > 1 ? calloc((size_t)(n - 1), sizeof *in) : NULL;
    for (int i = 0; in && i < n - 1; i++) {
        in[i] = (lw_symbol){.function = fr[i].function,
                            .module = e->sym.module,
                            .offset = e->sym.offset,
                            .file = fr[i].file,
                            .line = fr[i].line};
        fr[i].function = fr[i].file = NULL;
    }
    if (in) {
        e->sym.inlined = in;
        e->sym.ninlined = n - 1;
    }
    lw_a2l_frames_free(fr, n);
}

/* A new entry for ret. */
static entry *resolve(lw_symtab *t, uintptr_t ret) {
    entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->addr = ret;
    /* ret - 1 lies inside the call instruction, so a call that is the last
     * instruction of a function is not named after the next function. */
    uintptr_t pc = ret ? ret - 1 : 0;
    /* The module: name (l_name), where it starts (dladdr's dli_fbase) and
     * its load bias (l_addr). */
    const char *lname = NULL;
    uintptr_t base = 0, bias = 0;
    const object *o = loaded_current() ? loaded_find(pc) : NULL;
    Dl_info info;
    struct link_map *lm = NULL;
    if (o) {
        lname = o->name;
        base = o->start;
        bias = o->bias;
    } else if (dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        lname = lm->l_name;
        base = (uintptr_t)info.dli_fbase;
        bias = lm->l_addr;
    } else {
        return e;
    }
    e->sym.offset = pc - base;
    const char *path = lname && lname[0] ? lname : NULL;
    if (!path && base == exe_base) path = exe_path;
    if (path) {
        e->sym.module = strdup(path);
        module *m = module_of(t->c, path);
        const char *name = lw_elf_syms_find(m ? m->syms : NULL, pc - bias);
        /* No name in the symbol table on disk (deleted file, or none):
         * dladdr's exported name, if pc really lies inside that symbol. Its
         * walk over every exported symbol (libtorch_cpu: 41,000) is made
         * only where the file's own .dynsym, which the loader mapped, has
         * an entry over pc. */
        const ElfW(Sym) *sym = NULL;
        Dl_info i2;
        if (!name && lw_elf_syms_may_export(m ? m->syms : NULL, pc - bias) &&
            dladdr1((void *)pc, &i2, (void **)&sym, RTLD_DL_SYMENT) && sym && i2.dli_sname &&
            i2.dli_saddr && pc < (uintptr_t)i2.dli_saddr + (sym->st_size ? sym->st_size : 1))
            name = i2.dli_sname;
        lw_a2l_frame *fr = NULL;
        int n = source_frames(t, m, pc - bias, &fr, &e->lines_missing);
        fill(t, e, name, fr, n);
    }
    return e;
}

static const lw_symbol *lookup_locked(lw_symtab *t, uintptr_t ret) {
    cache *c = t->c;
    entry *e = NULL;
    HASH_FIND(hh, c->table, &ret, sizeof ret, e);
    /* Lines missing: asked again while this report has time for them. The
     * old entry stays (another report may be writing it) until the cache
     * goes. */
    if (e && (!e->lines_missing || (t->deadline && lw_now_ns() >= t->deadline))) return &e->sym;
    entry *n = resolve(t, ret);
    if (!n) return e ? &e->sym : NULL;
    if (e) {
        if (n->lines_missing) {
            entry_free(n); /* no better than what is there */
            return &e->sym;
        }
        HASH_DEL(c->table, e);
        e->retired = c->retired;
        c->retired = e;
    }
    lw_uthash_oom = 0;
    HASH_ADD(hh, c->table, addr, sizeof n->addr, n);
    if (lw_uthash_oom) {
        /* Not in the table: kept on the retired list, freed with the
         * cache, so the answer stays valid for this report. */
        n->retired = c->retired;
        c->retired = n;
    }
    return &n->sym;
}

const lw_symbol *lw_symtab_lookup(lw_symtab *t, uintptr_t ret) {
    if (!t) return NULL;
    /* A names-only table can be read by two report writers at once (the
     * worker's and the exit's): every lookup under the lock. */
    pthread_mutex_lock(&lock);
    const lw_symbol *s = lookup_locked(t, ret);
    pthread_mutex_unlock(&lock);
    return s;
}

void lw_symtab_free(lw_symtab *t) {
    if (!t) return;
    if (t->shared) {
        pthread_mutex_lock(&lock);
        cache_put(t->c);
        pthread_mutex_unlock(&lock);
    } else {
        cache_free(t->c);
    }
    free(t);
}
