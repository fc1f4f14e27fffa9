/* SPDX-License-Identifier: Apache-2.0 */
#include "imports.h"

#include "log.h"
#include "lw_uthash.h"
#include "tracker_mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

typedef struct {
    uint64_t key, cls; /* the hash key: both words */
} import_key;

typedef struct {
    import_key k;
    uint64_t size;
    uint32_t refs; /* opens - closes (IPC); 1 for a VMM handle (vmm.c counts the rest) */
    UT_hash_handle hh;
} import;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static import *imports;
static uint64_t opens, closes, failures;
static int64_t live_bytes, peak_bytes, live_refs;
static _Atomic int64_t mapped_bytes;

static import *find(lw_key_class cls, uint64_t key) {
    import_key k;
    memset(&k, 0, sizeof k);
    k.key = key;
    k.cls = (uint64_t)cls;
    import *im = NULL;
    HASH_FIND(hh, imports, &k, sizeof k, im);
    return im;
}

static void add_bytes(int64_t delta) {
    live_bytes += delta;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
}

void lw_import_opened(lw_key_class cls, uint64_t key, uint64_t size) {
    import *fresh = lw_tracker_calloc(1, sizeof *fresh);
    pthread_mutex_lock(&lock);
    opens++;
    live_refs++;
    import *im = find(cls, key);
    if (im && cls == LW_CLASS_DPTR) {
        /* The context opened this handle before: the driver returned the same
         * mapping and took one more reference on it. */
        im->refs++;
    } else {
        if (im) {
            /* A handle value the driver reused while we still held it: the
             * old import ended unseen. */
            add_bytes(-(int64_t)im->size);
            live_refs -= im->refs;
            HASH_DEL(imports, im);
            free(im);
        }
        if (fresh) {
            fresh->k.key = key;
            fresh->k.cls = (uint64_t)cls;
            fresh->size = size;
            fresh->refs = 1;
            lw_uthash_oom = 0;
            HASH_ADD(hh, imports, k, sizeof fresh->k, fresh);
            if (lw_uthash_oom) {
                free(fresh);
                fresh = NULL;
            } else {
                add_bytes((int64_t)size);
            }
        }
        if (!fresh) {
            live_refs--; /* counted as opened, not as held: its close will be unknown */
            pthread_mutex_unlock(&lock);
            lw_log_once(imports_oom, "out of memory for tracking imported memory: some imports "
                                     "go uncounted; the program is not affected");
            return;
        }
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(fresh);
}

void lw_import_failed(void) {
    pthread_mutex_lock(&lock);
    failures++;
    pthread_mutex_unlock(&lock);
}

void lw_import_mapped(uint64_t handle, uint64_t offset, uint64_t size) {
    pthread_mutex_lock(&lock);
    import *im = find(LW_CLASS_HANDLE, handle);
    if (im && offset + size >= offset && offset + size > im->size) {
        add_bytes((int64_t)(offset + size - im->size));
        im->size = offset + size;
    }
    pthread_mutex_unlock(&lock);
}

int lw_import_is_handle(uint64_t handle) {
    pthread_mutex_lock(&lock);
    int yes = find(LW_CLASS_HANDLE, handle) != NULL;
    pthread_mutex_unlock(&lock);
    return yes;
}

void lw_import_close_begin(lw_key_class cls, uint64_t key, lw_import_ticket *t) {
    memset(t, 0, sizeof *t);
    t->cls = (uint8_t)cls;
    t->key = key;
    pthread_mutex_lock(&lock);
    import *im = find(cls, key);
    if (im) {
        live_refs--;
        if (--im->refs == 0) {
            t->state = 2;
            t->size = im->size;
            add_bytes(-(int64_t)im->size);
            HASH_DEL(imports, im);
            free(im);
        } else {
            t->state = 1;
        }
    }
    pthread_mutex_unlock(&lock);
}

void lw_import_close_end(lw_import_ticket *t, int succeeded) {
    if (!t->state) return;
    if (succeeded) {
        pthread_mutex_lock(&lock);
        closes++;
        pthread_mutex_unlock(&lock);
        return;
    }
    /* The driver refused: the import is still open. */
    if (t->state == 1) {
        pthread_mutex_lock(&lock);
        import *im = find((lw_key_class)t->cls, t->key);
        if (im) im->refs++;
        live_refs++;
        pthread_mutex_unlock(&lock);
        return;
    }
    pthread_mutex_lock(&lock);
    opens--; /* lw_import_opened counts it again */
    pthread_mutex_unlock(&lock);
    lw_import_opened((lw_key_class)t->cls, t->key, t->size);
}

lw_counts lw_imports_get(void) {
    pthread_mutex_lock(&lock);
    lw_counts c = {
        .alloc_count = opens,
        .free_count = closes,
        .failed_count = failures,
        .live_bytes = live_bytes,
        .live_count = live_refs,
        .peak_live_bytes = peak_bytes,
    };
    pthread_mutex_unlock(&lock);
    return c;
}

int64_t lw_imports_mapped_bytes(void) {
    return atomic_load(&mapped_bytes);
}

void lw_imports_map_delta(int64_t delta) {
    atomic_fetch_add(&mapped_bytes, delta);
}

void lw_imports_lock_for_fork(void) {
    pthread_mutex_lock(&lock);
}

void lw_imports_unlock_after_fork(void) {
    pthread_mutex_unlock(&lock);
}

void lw_imports_forget_all(void) {
    pthread_mutex_lock(&lock);
    import *im, *tmp;
    HASH_ITER(hh, imports, im, tmp) {
        HASH_DEL(imports, im);
        free(im);
    }
    opens = closes = failures = 0;
    live_bytes = peak_bytes = live_refs = 0;
    atomic_store(&mapped_bytes, 0);
    pthread_mutex_unlock(&lock);
}
