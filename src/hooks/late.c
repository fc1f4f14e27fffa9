/* SPDX-License-Identifier: Apache-2.0 */
/* Hooks installed late: leakwatch loaded into a running process by
 * `leakwatch attach` (tools/commands/attach.c), which calls the target's own dlopen
 * (RTLD_LOCAL) and then leakwatch__attach below.
 *
 * Loaded that way, the library interposes nothing: every object already bound
 * its calls. So the global offset table entries through which the loaded
 * objects call the functions that preloading would interpose (exactly the
 * functions the library exports, read from its own dynamic symbol table: one
 * list, whatever the hook layer adds) are rewritten to point at our hooks, and
 * so is dlopen's, so that objects loaded later get theirs too. The hooks find
 * the real functions as they do preloaded (real.c, per caller), with "next
 * after us" meaning the global scope's first definition (lw_real_set_late).
 * A detach writes every entry back as it was. */
#include "hooks.h"

#include "arch.h"
#include "control.h"
#include "dynamic.h"
#include "export.h"
#include "got.h"
#include "lock_order.h"
#include "lifecycle.h"
#include "log.h"
#include "options.h"
#include "real.h"
#include "thread.h"
#include "torch_mode.h"
#include "worker.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the settings the command passed (NAME=VALUE lines) ---- */
#define MAX_SETTINGS 64
static char *settings_text;
static const char *setting_name[MAX_SETTINGS], *setting_value[MAX_SETTINGS];
static int nsettings;

static const char *setting(const char *name) {
    for (int i = 0; i < nsettings; i++)
        if (!strcmp(setting_name[i], name)) return setting_value[i];
    return NULL;
}

/* Kept for the rest of the process: the options table points into it. */
static int take_settings(const char *text) {
    char *copy = strdup(text ? text : "");
    if (!copy) return -1;
    settings_text = copy;
    nsettings = 0;
    for (char *line = copy; line && *line && nsettings < MAX_SETTINGS;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *eq = strchr(line, '=');
        if (eq) {
            *eq = '\0';
            setting_name[nsettings] = line;
            setting_value[nsettings++] = eq + 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* ---- the names: what preloading would interpose ---- */
typedef struct {
    const char *name;
    void *hook;
} hook_name;
static hook_name *hooks;
static size_t nhooks;

static void *late_dlopen(const char *file, int mode);

static int build_hooks(void) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)&build_hooks, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm) return -1;
    lw_dyn d;
    if (lw_dyn_read(lm->l_addr, lm->l_ld, &d) != 0) return -1;
    size_t n = lw_dyn_symbol_count(&d);
    hook_name *t = calloc(n + 1, sizeof *t);
    if (!t) return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const ElfW(Sym) *s = &d.symtab[i];
        if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
            ELF64_ST_BIND(s->st_info) == STB_LOCAL ||
            ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
            continue;
        const char *name = lw_dyn_symbol_name(&d, i);
        /* The public API (leakwatch_step, ...) is ours to offer, not a hook. */
        if (!name || !strncmp(name, "leakwatch", 9)) continue;
        t[k++] = (hook_name){name, (void *)(lm->l_addr + s->st_value)};
    }
    /* Late only: preloaded, an exported dlopen would take every caller's
     * identity (its RUNPATH, $ORIGIN) from dlopen. */
    t[k++] = (hook_name){"dlopen", (void *)late_dlopen};
    hooks = t;
    nhooks = k;
    return 0;
}

static void *hook_for(const char *name) {
    /* Every hook's name starts with "cu" or "dl". */
    if (!((name[0] == 'c' && name[1] == 'u') || (name[0] == 'd' && name[1] == 'l'))) return NULL;
    for (size_t i = 0; i < nhooks; i++)
        if (!strcmp(hooks[i].name, name)) return hooks[i].hook;
    return NULL;
}

/* ---- the rewritten entries ---- */
typedef struct {
    void **slot;
    void *orig; /* what it held: written back at detach */
    void *hook;
} patch;
static patch *patches;
static size_t npatches, patches_cap;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int installed;
static unsigned long long seen_adds;

/* One entry: rewritten to the hook of its name, when there is one and the
 * entry does not already lead into leakwatch. */
static void patch_entry(const struct dl_phdr_info *info, const char *name, void **slot, void *cur,
                        int jump_slot, void *arg) {
    (void)info;
    (void)jump_slot;
    (void)arg;
    void *hook = hook_for(name);
    if (!hook) return;
    if (cur == hook || lw_is_own_address((uintptr_t)cur)) return;
    if (npatches == patches_cap) {
        size_t nc = patches_cap ? patches_cap * 2 : 64;
        patch *p = realloc(patches, nc * sizeof *p);
        if (!p) return; /* fewer hooks, never a broken entry */
        patches = p;
        patches_cap = nc;
    }
    if (lw_got_write_slot(slot, hook) == 0) patches[npatches++] = (patch){slot, cur, hook};
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *adds = data;
    *adds = info->dlpi_adds;
    lw_got_walk_object(info, patch_entry, NULL);
    return 0;
}

/* Every loaded object's entries that do not point at a hook yet. Under
 * patch_lock. */
static void patch_all_locked(void) {
    lw_got_read_regions();
    unsigned long long adds = 0;
    dl_iterate_phdr(patch_object, &adds);
    seen_adds = adds;
}

static int adds_of(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

/* Objects loaded since the last look (a dlopen our hook did not see, by a
 * bare name, or one that called dlopen through a table of its own). */
static void tick(void) {
    if (!atomic_load(&installed)) return;
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_of, &adds);
    if (adds == seen_adds) return;
    LW_LOCK_RANKED(&patch_lock, LW_RANK_PATCH);
    if (atomic_load(&installed)) patch_all_locked();
    LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
}

/* An entry still lies in a loaded object's writable or RELRO data: the object
 * may have been unloaded since (then its entry is gone with it). */
typedef struct {
    uintptr_t addr;
    int found;
} find_addr;

static int in_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    find_addr *f = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if ((ph->p_type == PT_LOAD || ph->p_type == PT_GNU_RELRO) && f->addr >= lo &&
            f->addr < lo + ph->p_memsz) {
            f->found = 1;
            return 1;
        }
    }
    return 0;
}

static size_t unpatch_all_locked(void) {
    lw_got_read_regions();
    size_t restored = 0;
    for (size_t i = npatches; i-- > 0;) {
        patch *p = &patches[i];
        find_addr f = {(uintptr_t)p->slot, 0};
        dl_iterate_phdr(in_object, &f);
        if (!f.found || lw_got_prot_of(f.addr) < 0) continue;
        /* The dynamic linker may have bound a lazy entry since: leave it. */
        if (__atomic_load_n(p->slot, __ATOMIC_ACQUIRE) != p->hook) continue;
        if (lw_got_write_slot(p->slot, p->orig) == 0) restored++;
    }
    npatches = 0;
    return restored;
}

/* ---- dlopen, late ---- */
typedef void *(*dlopen_fn)(const char *, int);
static _Atomic(dlopen_fn) real_dlopen;

/* glibc's dlopen takes the caller's RUNPATH and $ORIGIN from its return
 * address: a bare name, or one with '$', must reach it as a tail call (our
 * caller's identity), and its objects are hooked at the worker's next look. A
 * path is opened here, and what it loaded is hooked before it returns. */
__attribute__((optimize("optimize-sibling-calls"), noinline)) static void *
late_dlopen(const char *file, int mode) {
    dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
    const char *f = file;
    __asm__("" : "+r"(f));
    if (!f || !strchr(f, '/') || strchr(f, '$') || (mode & RTLD_NOLOAD) ||
        !atomic_load_explicit(&installed, memory_order_relaxed))
        return real(file, mode);
    void *h = real(file, mode);
    if (h) {
        int saved = errno;
        tick();
        errno = saved;
    }
    return h;
}

/* ---- the Python helper ----
 * In a Python process, the leakwatch package's optimizer hook
 * (leakwatch._torch) marks a step after every torch optimizer step, as under
 * the shim's auto-start: installed from a thread of ours that takes the GIL
 * the documented way (PyGILState_Ensure: any thread the interpreter did not
 * create), never from the borrowed thread, which may be waiting for the GIL
 * itself. The code runs in a dictionary of its own: the job's __main__ is not
 * touched. The package is this installation's, loaded by its absolute path:
 * nothing is looked up on the job's sys.path (where the script's folder and
 * the working directory come first, and another user's leakwatch/ would run
 * with the job's rights), under a name of its own (_leakwatch_helper: the
 * name leakwatch stays the job's, as under the preload; this package
 * imported later as leakwatch reuses that copy). The copy the preload's
 * auto-start loaded, or a leakwatch package the job imported itself, is
 * used when it is this one; another is left alone (no step marks from the
 * optimizer then). Python without torch: no hook fires; steps are time
 * intervals. */
typedef int (*py_initialized_fn)(void);
typedef int (*py_ensure_fn)(void);
typedef void (*py_release_fn)(int);
typedef int (*py_run_fn)(const char *, void *);

static const char py_install[] =
    "import sys, os, importlib, importlib.util\n"
    "d = DIR\n"
    "here = os.path.join(d, 'leakwatch') if d else ''\n"
    "name = '_leakwatch_helper'\n"
    "def ours(m):\n"
    "    f = getattr(m, '__file__', None) or ''\n"
    "    return bool(here) and os.path.realpath(os.path.dirname(f)) == os.path.realpath(here)\n"
    "added = False\n"
    "try:\n"
    "    pkg = sys.modules.get(name) or sys.modules.get('leakwatch')\n"
    "    if pkg is None and here:\n"
    "        spec = importlib.util.spec_from_file_location(name, os.path.join(here, "
    "'__init__.py'), submodule_search_locations=[here])\n"
    "        pkg = importlib.util.module_from_spec(spec)\n"
    "        sys.modules[name] = pkg\n"
    "        added = True\n"
    "        spec.loader.exec_module(pkg)\n"
    "    if pkg is not None and ours(pkg):\n"
    "        importlib.import_module(pkg.__name__ + '._torch').install()\n"
    "except Exception:\n"
    "    if added and sys.modules.get(name) is pkg:\n"
    "        del sys.modules[name]\n";
static const char py_uninstall[] = "import sys\n"
                                   "for n in ('_leakwatch_helper._torch', 'leakwatch._torch'):\n"
                                   "    t = sys.modules.get(n)\n"
                                   "    if t is not None and hasattr(t, 'uninstall'):\n"
                                   "        t.uninstall()\n"
                                   "        break\n";

/* One per attach and per detach: a Python thread of ours that gets the GIL
 * after the next attach or detach has begun does nothing (the uninstall of
 * a detach, run late, must not remove the next attach's hook). */
static atomic_long py_generation;

/* Runs src (Python) in the interpreter, if there is one, once it has the
 * GIL, unless another attach or detach came since generation gen: 0, or -1. */
static int run_python(const char *src, long gen) {
    py_initialized_fn initialized =
        (py_initialized_fn)lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    py_ensure_fn ensure = (py_ensure_fn)lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    py_release_fn release = (py_release_fn)lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Release");
    py_run_fn run = (py_run_fn)lw_real_dlsym(RTLD_DEFAULT, "PyRun_SimpleStringFlags");
    if (!initialized || !ensure || !release || !run || !initialized()) return -1;
    /* exec(bytes.fromhex("...").decode(), {}): no quoting to get wrong, no
     * name left behind in __main__. */
    size_t n = strlen(src);
    char *code = malloc(n * 2 + 64);
    if (!code) return -1;
    char *p = code + sprintf(code, "exec(bytes.fromhex('");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%02x", (unsigned char)src[i]);
    sprintf(p, "').decode(), {})");
    int st = ensure();
    int rc = atomic_load(&py_generation) == gen ? run(code, NULL) : 0;
    release(st);
    free(code);
    return rc == 0 ? 0 : -1;
}

static void *python_install_thread(void *arg) {
    long gen = (long)(intptr_t)arg;
    char dir[PATH_MAX], quoted[2 * PATH_MAX + 8];
    if (!lw_torch_package_dir(dir, sizeof dir)) dir[0] = '\0';
    /* DIR as a Python bytes literal, decoded: any byte in a path is fine. */
    char *q = quoted + sprintf(quoted, "bytes.fromhex('");
    for (const char *c = dir; *c; c++)
        q += sprintf(q, "%02x", (unsigned char)*c);
    sprintf(q, "').decode()");
    size_t len = sizeof py_install + strlen(quoted);
    char *src = malloc(len);
    if (src) {
        const char *at = strstr(py_install, "DIR");
        snprintf(src, len, "%.*s%s%s", (int)(at - py_install), py_install, quoted, at + 3);
        run_python(src, gen);
        free(src);
    }
    return NULL;
}

/* The detach's part in Python, on a thread of ours: the detach does not
 * wait for the GIL (a job that held it kept the detach, and the control
 * socket with it, waiting for seconds: snapshot blocked, then failed). Until
 * it runs, the hook's calls find the library not recording. */
static void *python_uninstall_thread(void *arg) {
    run_python(py_uninstall, (long)(intptr_t)arg);
    return NULL;
}

/* ---- the locks of attach and detach, in one order ----
 *
 *   attach_lock  (here: one attach or detach at a time)
 *     -> start_lock  (lifecycle.c: lw_lifecycle_attach/detach, and the fork
 *                     handlers' before_fork)
 *       -> patch_lock  (here: the rewritten entries; a leaf: nothing is
 *                       taken while it is held)
 *
 * The fork handlers take start_lock, then patch_lock: ours are registered
 * before lifecycle.c's (attach_now registers them before its first
 * lw_lifecycle_attach), and prepare handlers run in the reverse order of
 * registration. So attach and detach never hold patch_lock while they take
 * start_lock (that inversion hung a job forking during an attach for good),
 * and attach_lock, which no fork handler takes, is made new in a child
 * (the attach or detach that held it runs in the parent only).
 *
 * Debug builds check this order at every take (src/base/lock_order.h:
 * LW_LOCK_RANKED, an abort naming both locks). */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread holds patch_lock must not leave the child
 * with it locked (its dlopen hook takes it). */
static void fork_prepare(void) {
    LW_LOCK_RANKED(&patch_lock, LW_RANK_PATCH);
}
static void fork_parent(void) {
    LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
}
static void fork_child(void) {
    pthread_mutex_init(&patch_lock, NULL);
    LW_LOCK_FORGET(LW_RANK_PATCH);
    pthread_mutex_init(&attach_lock, NULL);
    LW_LOCK_FORGET(LW_RANK_ATTACH);
}

/* ---- attach and detach ---- */
static int detach(char *msg, size_t n) {
    LW_LOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
    LW_LOCK_RANKED(&patch_lock, LW_RANK_PATCH);
    if (!atomic_load(&installed)) {
        LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
        LW_UNLOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
        snprintf(msg, n, "leakwatch is not attached to this process");
        return -1;
    }
    atomic_store(&installed, 0);
    unpatch_all_locked();
    LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
    long gen = atomic_fetch_add(&py_generation, 1) + 1;
    if (lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
        lw_thread_start_arg(python_uninstall_thread, (void *)(intptr_t)gen);
    char path[PATH_MAX] = "";
    if (lw_lifecycle_detach(path, sizeof path) != 0 || !path[0])
        snprintf(msg, n, "(no report written: LEAKWATCH_REPORT is none, or see the job's stderr)");
    else
        snprintf(msg, n, "%s", path);
    LW_UNLOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
    return 0;
}

static int attach_now(const char *settings, char *msg, size_t n) {
    int rc = -1;
    LW_LOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
    if (atomic_load(&installed)) {
        snprintf(msg, n, "leakwatch is already attached");
        rc = 1;
        goto out;
    }
    if (!hooks) {
        if (build_hooks() != 0) {
            snprintf(msg, n, "cannot read leakwatch's own symbol table");
            goto out;
        }
        pthread_atfork(fork_prepare, fork_parent, fork_child);
    }
    if (!atomic_load(&real_dlopen))
        atomic_store(&real_dlopen, (dlopen_fn)lw_real_dlsym(RTLD_NEXT, "dlopen"));
    if (!atomic_load(&real_dlopen) || take_settings(settings) != 0) {
        snprintf(msg, n, "cannot find the C library's dlopen");
        goto out;
    }
    lw_options_set_source(setting);
    lw_real_set_late();
    lw_control_set_detach(detach);
    lw_worker_set_tick(tick);
    int started = lw_lifecycle_attach();
    if (started != 0) {
        snprintf(msg, n,
                 started > 0 ? "leakwatch already records in this process"
                             : "leakwatch is disabled (LEAKWATCH_DISABLE) or could not "
                               "start");
        rc = started > 0 ? 1 : -1;
        goto out;
    }
    if (!lw_control_serving()) {
        /* Without the socket there is no detach: recording ends here. */
        char path[PATH_MAX];
        lw_lifecycle_detach(path, sizeof path);
        snprintf(msg, n,
                 "the library could not serve its control socket (see the job's stderr), "
                 "so it could not be detached: not attached");
        goto out;
    }
    LW_LOCK_RANKED(&patch_lock, LW_RANK_PATCH);
    atomic_store(&installed, 1);
    patch_all_locked();
    snprintf(msg, n, "%zu", npatches);
    LW_UNLOCK_RANKED(&patch_lock, LW_RANK_PATCH);
    long gen = atomic_fetch_add(&py_generation, 1) + 1;
    if (lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
        lw_thread_start_arg(python_install_thread, (void *)(intptr_t)gen);
    rc = 0;
out:
    LW_UNLOCK_RANKED(&attach_lock, LW_RANK_ATTACH);
    return rc;
}

typedef struct {
    const char *settings;
    char *msg;
    size_t n;
} attach_args;

static void *attach_thread(void *p) {
    const attach_args *a = p;
    return (void *)(intptr_t)(attach_now(a->settings, a->msg, a->n) + 2);
}

/* Called by leakwatch attach on one of the job's threads, stopped in a system
 * call, right after the dlopen that loaded us. settings: the LEAKWATCH_*
 * settings, NAME=VALUE lines. 0: attached (msg: how many entries were
 * rewritten); 1: leakwatch already records here; -1: not attached, msg says
 * why (nothing changed). The work is done on a thread of ours (every signal
 * blocked, a stack of its own), which the borrowed thread waits for: that
 * thread runs as little as possible of ours. errno is left as it was. */
LW_EXPORT int leakwatch__attach(const char *settings, char *msg, size_t n) {
    int saved = errno;
    attach_args a = {settings, msg, n};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int created = pthread_create(&t, NULL, attach_thread, &a) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int rc;
    if (created) {
        void *r = NULL;
        pthread_join(t, &r);
        rc = (int)(intptr_t)r - 2;
    } else {
        rc = attach_now(settings, msg, n);
    }
    errno = saved;
    return rc;
}
