#include "symbolize.h"

#include "elf_symbols.h"
#include "lw_uthash.h"
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

/* One per module met: its symbol table, read once per report. */
typedef struct module {
    char *path;
    lw_elf_syms *syms; /* NULL when unreadable */
    UT_hash_handle hh;
} module;

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

struct lw_symtab {
    entry *table;
    module *modules;
    demangle_fn demangle;
    int demangle_tried;
    char *exe_path;
    uintptr_t exe_base;
};

static int find_exe(struct dl_phdr_info *info, size_t size, void *data) {
    /* The first object dl_iterate_phdr reports is the main program. */
    *(uintptr_t *)data = info->dlpi_addr;
    return 1;
}

lw_symtab *lw_symtab_new(void) {
    lw_symtab *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
        t->exe_path = strdup(buf);
    }
    dl_iterate_phdr(find_exe, &t->exe_base);
    return t;
}

static const lw_elf_syms *module_syms(lw_symtab *t, const char *path) {
    module *m = NULL;
    HASH_FIND_STR(t->modules, path, m);
    if (m) return m->syms;
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    m->syms = lw_elf_syms_load(path);
    lw_uthash_oom = 0;
    HASH_ADD_KEYPTR(hh, t->modules, m->path, strlen(m->path), m);
    if (lw_uthash_oom) {
        const lw_elf_syms *s = m->syms;
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
        (void)s;
        return NULL;
    }
    return m->syms;
}

/* C++ names, readable: the C++ runtime's demangler, if the process has one.
 * Found at report time only, never loaded into a process that lacks it. */
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
    return strdup(name);
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
            const char *name = lw_elf_syms_find(module_syms(t, path), pc - lm->l_addr);
            if (!name && info.dli_sname && info.dli_saddr) {
                /* No symbol table on disk (deleted file, or none): dladdr's
                 * exported name, if pc really lies inside that symbol. */
                const ElfW(Sym) *sym = NULL;
                Dl_info i2;
                if (dladdr1((void *)pc, &i2, (void **)&sym, RTLD_DL_SYMENT) && sym &&
                    pc < (uintptr_t)i2.dli_saddr + (sym->st_size ? sym->st_size : 1))
                    name = i2.dli_sname;
            }
            if (name) e->sym.function = demangled(t, name);
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
        free(e);
    }
    module *m, *mtmp;
    HASH_ITER(hh, t->modules, m, mtmp) {
        HASH_DEL(t->modules, m);
        lw_elf_syms_free(m->syms);
        free(m->path);
        free(m);
    }
    free(t->exe_path);
    free(t);
}
