/* SPDX-License-Identifier: Apache-2.0 */
#include "vmm.h"

#include "log.h"
#include "lw_uthash.h"
#include "tracker_mem.h"

#include <pthread.h>
#include <string.h>

typedef struct {
    uint64_t handle;
    uint32_t refs; /* cuMemCreate/import + retains - releases */
    uint32_t maps; /* live mappings */
    int imported;  /* cuMemImportFromShareableHandle: imports.h counts its memory */
    UT_hash_handle hh;
} vhandle;

typedef struct {
    uint64_t addr;
    uint64_t size;
    uint64_t handle;
    UT_hash_handle hh;
} vmap;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static vhandle *handles;
static vmap *maps;

static void said_oom(void) {
    lw_log_once(vmm_oom, "out of memory for tracking VMM mappings: physical memory released while "
                         "mapped may be counted as freed early; the program is not affected");
}

static vhandle *find_handle(uint64_t h) {
    vhandle *v = NULL;
    HASH_FIND(hh, handles, &h, sizeof h, v);
    return v;
}

static void add_handle(uint64_t handle, int imported) {
    vhandle *v = lw_tracker_calloc(1, sizeof *v);
    if (!v) {
        said_oom();
        return;
    }
    v->handle = handle;
    v->refs = 1;
    v->imported = imported;
    pthread_mutex_lock(&lock);
    vhandle *old = find_handle(handle);
    if (old) {
        /* A handle value the driver reused while we still held it: the old
         * one ended unseen. */
        HASH_DEL(handles, old);
        free(old);
    }
    lw_uthash_oom = 0;
    HASH_ADD(hh, handles, handle, sizeof v->handle, v);
    int oom = lw_uthash_oom;
    pthread_mutex_unlock(&lock);
    if (oom) {
        free(v);
        said_oom();
    }
}

void lw_vmm_created(uint64_t handle) {
    add_handle(handle, 0);
}

void lw_vmm_imported(uint64_t handle) {
    add_handle(handle, 1);
}

void lw_vmm_retained(uint64_t handle) {
    pthread_mutex_lock(&lock);
    vhandle *v = find_handle(handle);
    if (v) v->refs++;
    pthread_mutex_unlock(&lock);
}

int lw_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle) {
    pthread_mutex_lock(&lock);
    vhandle *v = find_handle(handle);
    if (!v) {
        pthread_mutex_unlock(&lock);
        return 0; /* not ours: nothing to keep alive */
    }
    int imported = v->imported;
    vmap *m = lw_tracker_calloc(1, sizeof *m);
    if (m) {
        m->addr = addr;
        m->size = size;
        m->handle = handle;
        lw_uthash_oom = 0;
        HASH_ADD(hh, maps, addr, sizeof m->addr, m);
        if (lw_uthash_oom) {
            free(m);
            m = NULL;
        }
    }
    if (m) v->maps++;
    pthread_mutex_unlock(&lock);
    if (!m) said_oom();
    return imported;
}

/* With the lock held: the handle's memory ends now if nothing holds it. */
static void maybe_dead(vhandle *v, lw_vmm_ticket *t, int max_dead) {
    if (v->refs != 0 || v->maps != 0) return;
    if (t->ndead < max_dead) {
        lw_vmm_end *e = &t->dead[t->ndead++];
        e->imported = v->imported;
        if (v->imported)
            lw_import_close_begin(LW_CLASS_HANDLE, v->handle, &e->imp);
        else
            lw_record_free_begin(LW_CLASS_HANDLE, v->handle, &e->rec);
    }
    HASH_DEL(handles, v);
    free(v);
}

static void ticket_init(lw_vmm_ticket *t) {
    memset(t, 0, sizeof *t);
    t->maps = t->maps_inline;
    t->dead = t->dead_inline;
}

void lw_vmm_release_begin(uint64_t handle, lw_vmm_ticket *t) {
    ticket_init(t);
    t->active = 1;
    t->handle = handle;
    pthread_mutex_lock(&lock);
    vhandle *v = find_handle(handle);
    if (!v || v->refs == 0) {
        /* Not ours (or already released: the driver will say no): the record
         * layer decides, as for any free. */
        t->unknown = 1;
        lw_record_free_begin(LW_CLASS_HANDLE, handle, &t->dead[0].rec);
        t->ndead = 1;
    } else {
        t->imported = v->imported;
        v->refs--;
        maybe_dead(v, t, 1);
    }
    pthread_mutex_unlock(&lock);
}

/* The second half of what maybe_dead began. */
static void ends(lw_vmm_ticket *t, int succeeded) {
    for (int i = 0; i < t->ndead; i++) {
        if (t->dead[i].imported)
            lw_import_close_end(&t->dead[i].imp, succeeded);
        else
            lw_record_free_end(&t->dead[i].rec, succeeded);
    }
}

void lw_vmm_release_end(lw_vmm_ticket *t, int succeeded) {
    if (!t->active) return;
    if (!succeeded && !t->unknown) {
        pthread_mutex_lock(&lock);
        vhandle *v = find_handle(t->handle);
        if (v) {
            v->refs++;
        } else if ((v = lw_tracker_calloc(1, sizeof *v)) != NULL) {
            v->handle = t->handle;
            v->refs = 1;
            v->imported = t->imported;
            HASH_ADD(hh, handles, handle, sizeof v->handle, v);
        }
        pthread_mutex_unlock(&lock);
    }
    ends(t, succeeded);
}

/* With the lock held: one mapping goes. */
static void take(vmap *m, lw_vmm_ticket *t, int max_dead) {
    vhandle *v = find_handle(m->handle);
    int imported = v && v->imported;
    if (imported) t->imported_bytes += m->size;
    if (t->maps)
        t->maps[t->nmaps++] = (struct lw_vmm_map_copy){m->addr, m->size, m->handle, imported};
    HASH_DEL(maps, m);
    free(m);
    if (v && v->maps > 0) {
        v->maps--;
        maybe_dead(v, t, max_dead);
    }
}

void lw_vmm_unmap_begin(uint64_t addr, uint64_t size, lw_vmm_ticket *t) {
    ticket_init(t);
    t->active = 1;
    if (size == 0 || addr + size < addr) return;
    pthread_mutex_lock(&lock);
    vmap *m = NULL, *tmp;
    HASH_FIND(hh, maps, &addr, sizeof addr, m);
    int count = 0;
    if (m && m->size == size) {
        count = 1; /* the common case: one mapping, unmapped as it was mapped */
    } else {
        m = NULL;
        HASH_ITER(hh, maps, m, tmp) {
            if (m->addr >= addr && m->addr - addr <= size && m->size <= size - (m->addr - addr))
                count++;
        }
        m = NULL;
    }
    if (count == 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    if (count > LW_VMM_TICKET_INLINE) {
        t->maps = lw_tracker_malloc((size_t)count * sizeof *t->maps);
        t->dead = lw_tracker_malloc((size_t)count * sizeof *t->dead);
        if (!t->maps || !t->dead) {
            /* Cannot keep what a refused unmap would need back: count the
             * unmap as done (the driver refuses only invalid ranges). */
            free(t->maps);
            free(t->dead);
            t->maps = NULL;
            t->dead = t->dead_inline;
            said_oom();
        }
    }
    int max_dead = t->maps == NULL ? LW_VMM_TICKET_INLINE : count;
    vmap *one = NULL;
    if (count == 1) HASH_FIND(hh, maps, &addr, sizeof addr, one);
    if (one && one->size == size) {
        take(one, t, max_dead);
    } else {
        HASH_ITER(hh, maps, m, tmp) {
            if (m->addr >= addr && m->addr - addr <= size && m->size <= size - (m->addr - addr))
                take(m, t, max_dead);
        }
    }
    pthread_mutex_unlock(&lock);
}

void lw_vmm_unmap_end(lw_vmm_ticket *t, int succeeded) {
    if (!t->active) return;
    if (!succeeded && t->maps) {
        /* The mappings are still there: put them back, and their handles with
         * them (a handle whose memory seemed to end is alive again). */
        for (int i = 0; i < t->nmaps; i++) {
            struct lw_vmm_map_copy *c = &t->maps[i];
            pthread_mutex_lock(&lock);
            vhandle *v = find_handle(c->handle);
            if (!v && (v = lw_tracker_calloc(1, sizeof *v)) != NULL) {
                v->handle = c->handle;
                v->imported = c->imported;
                HASH_ADD(hh, handles, handle, sizeof v->handle, v);
            }
            pthread_mutex_unlock(&lock);
            if (v) lw_vmm_mapped(c->addr, c->size, c->handle);
        }
    }
    ends(t, succeeded);
    if (t->maps != t->maps_inline) free(t->maps);
    if (t->dead != t->dead_inline) free(t->dead);
}

void lw_vmm_lock_for_fork(void) {
    pthread_mutex_lock(&lock);
}

void lw_vmm_unlock_after_fork(void) {
    pthread_mutex_unlock(&lock);
}

void lw_vmm_forget_all(void) {
    pthread_mutex_lock(&lock);
    vhandle *v, *vt;
    HASH_ITER(hh, handles, v, vt) {
        HASH_DEL(handles, v);
        free(v);
    }
    vmap *m, *mt;
    HASH_ITER(hh, maps, m, mt) {
        HASH_DEL(maps, m);
        free(m);
    }
    pthread_mutex_unlock(&lock);
}
