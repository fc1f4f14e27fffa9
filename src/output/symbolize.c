/* SPDX-License-Identifier: Apache-2.0 */
/* Report-time symbolisation: names from the symbol tables (elf_symbols.c),
 * source lines and inlined frames from addr2line (addr2line.c), one child
 * process per module that has debug information, one request per unique
 * address. Nothing here runs on the allocation path: the hooks keep raw
 * return addresses, and only a report being written calls in here. */
#include "symbolize.h"

#include "addr2line.h"
#include "clock.h"
#include "elf_symbols.h"
#include "lw_uthash.h"
#include "options.h"
#include "real.h"

#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct entry {
    uintptr_t addr;
    lw_symbol sym;
    UT_hash_handle hh;
} entry;

/* One per module met: its symbol table, read once per report, and its
 * addr2line process, started at its first address that needs one. */
typedef struct module {
    char *path;
    lw_elf_syms *syms; /* NULL when unreadable */
    lw_a2l *a2l;
    int a2l_tried;
    UT_hash_handle hh;
} module;

/* Time given to source lines, so that a slow or hung addr2line delays the
 * job's exit by a bounded amount: one answer (the first includes reading the
 * module's debug information; seconds for a large C++ library), and all of
 * one report's. */
#define ANSWER_NS (5 * 1000000000ull)
#define REPORT_NS (15 * 1000000000ull)

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

struct lw_symtab {
    entry *table;
    module *modules;
    demangle_fn demangle;
    int demangle_tried;
    char *exe_path;
    uintptr_t exe_base;
    int source_lines;  /* LEAKWATCH_SOURCE_LINES */
    char *tool;        /* lw_a2l_tool's cache */
    uint64_t deadline; /* of this report's source lines; 0 before the first */
};

static int find_exe(struct dl_phdr_info *info, size_t size, void *data) {
    /* The first object dl_iterate_phdr reports is the main program. */
    *(uintptr_t *)data = info->dlpi_addr;
    return 1;
}

static lw_symtab *symtab_new(int source_lines) {
    lw_symtab *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->source_lines = source_lines;
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
        t->exe_path = strdup(buf);
    }
    dl_iterate_phdr(find_exe, &t->exe_base);
    return t;
}

lw_symtab *lw_symtab_new(void) {
    return symtab_new(lw_opt_int(LW_OPT_SOURCE_LINES) != 0);
}

lw_symtab *lw_symtab_new_names(void) {
    return symtab_new(0);
}

static module *module_of(lw_symtab *t, const char *path) {
    module *m = NULL;
    HASH_FIND_STR(t->modules, path, m);
    if (m) return m;
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    m->syms = lw_elf_syms_load(path);
    lw_uthash_oom = 0;
    HASH_ADD_KEYPTR(hh, t->modules, m->path, strlen(m->path), m);
    if (lw_uthash_oom) {
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
        return NULL;
    }
    return m;
}

/* C++ names, readable: the C++ runtime's demangler, if the process has one.
 * Found at report time only, never loaded into a process that lacks it.
 * NULL when name is mangled and cannot be demangled here. */
static char *demangled(lw_symtab *t, const char *name) {
    if (strncmp(name, "_Z", 2) != 0) return strdup(name);
    if (!t->demangle_tried) {
        t->demangle_tried = 1;
        t->demangle = (demangle_fn)lw_real_dlsym(RTLD_DEFAULT, "__cxa_demangle");
    }
    int status = -1;
    char *d = t->demangle ? t->demangle(name, NULL, NULL, &status) : NULL;
    if (d && status == 0) return d;
    free(d);
    return NULL;
}

/* The frames addr2line gives for vaddr in m; 0 when none (no debug
 * information, no addr2line, out of time). */
static int source_frames(lw_symtab *t, module *m, uint64_t vaddr, lw_a2l_frame **out) {
    *out = NULL;
    if (!t->source_lines || !m || !lw_elf_syms_has_debug(m->syms)) return 0;
    uint64_t now = lw_now_ns();
    if (!m->a2l_tried) {
        m->a2l_tried = 1;
        if (!t->deadline) t->deadline = now + REPORT_NS;
        if (now < t->deadline) m->a2l = lw_a2l_open(lw_a2l_tool(&t->tool), m->path);
    }
    if (!m->a2l || now >= t->deadline) return 0;
    uint64_t deadline = now + ANSWER_NS < t->deadline ? now + ANSWER_NS : t->deadline;
    int n = lw_a2l_query(m->a2l, vaddr, deadline, out);
    /* A tool that kept us waiting once is not waited on again in this report:
     * a hung one delays the report by one answer's time, not one per module. */
    if (n == -2) t->deadline = now;
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

const lw_symbol *lw_symtab_lookup(lw_symtab *t, uintptr_t ret) {
    entry *e = NULL;
    HASH_FIND(hh, t->table, &ret, sizeof ret, e);
    if (e) return &e->sym;
    e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->addr = ret;
    Dl_info info;
    struct link_map *lm = NULL;
    /* ret - 1 lies inside the call instruction, so a call that is the last
     * instruction of a function is not named after the next function. */
    uintptr_t pc = ret ? ret - 1 : 0;
    if (dladdr1((void *)pc, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        uintptr_t base = (uintptr_t)info.dli_fbase;
        e->sym.offset = pc - base;
        const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : NULL;
        if (!path && base == t->exe_base) path = t->exe_path;
        if (path) {
            e->sym.module = strdup(path);
            module *m = module_of(t, path);
            const char *name = lw_elf_syms_find(m ? m->syms : NULL, pc - lm->l_addr);
            if (!name && info.dli_sname && info.dli_saddr) {
                /* No symbol table on disk (deleted file, or none): dladdr's
                 * exported name, if pc really lies inside that symbol. */
                const ElfW(Sym) *sym = NULL;
                Dl_info i2;
                if (dladdr1((void *)pc, &i2, (void **)&sym, RTLD_DL_SYMENT) && sym &&
                    pc < (uintptr_t)i2.dli_saddr + (sym->st_size ? sym->st_size : 1))
                    name = i2.dli_sname;
            }
            lw_a2l_frame *fr = NULL;
            int n = source_frames(t, m, pc - lm->l_addr, &fr);
            fill(t, e, name, fr, n);
        }
    }
    lw_uthash_oom = 0;
    HASH_ADD(hh, t->table, addr, sizeof e->addr, e);
    if (lw_uthash_oom) {
        /* Still answer; the entry is simply not cached. Leak-free: keep it
         * reachable by freeing on the next miss is not worth it here. */
    }
    return &e->sym;
}

void lw_symtab_free(lw_symtab *t) {
    if (!t) return;
    entry *e, *tmp;
    HASH_ITER(hh, t->table, e, tmp) {
        HASH_DEL(t->table, e);
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
    module *m, *mtmp;
    HASH_ITER(hh, t->modules, m, mtmp) {
        HASH_DEL(t->modules, m);
        lw_a2l_close(m->a2l);
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
    }
    lw_a2l_tool_free(t->tool);
    free(t->exe_path);
    free(t);
}
