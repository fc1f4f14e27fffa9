/* SPDX-License-Identifier: Apache-2.0 */
#include "events.h"

#include "device.h"

#include <errno.h>

/* The start check, asked only for the outermost hook call (gate not NULL)
 * and after the event's own conditions (a free of address 0, a failed retain
 * or map: nothing to record, and no reason to start). */
static inline int recording(lw_event_gate gate) {
    return gate && gate();
}

/* ---- allocations ---- */

static void alloc(lw_event_gate gate, int result, lw_kind kind, lw_key_class cls, uint64_t key,
                  uint64_t size, int host) {
    /* A nested hook's event (the driver's call under the runtime's): nothing
     * to do, errno untouched, no frame. */
    if (!gate) return;
    int saved = errno;
    if (recording(gate)) {
        int device = host ? -1 : lw_device_current();
        if (result == 0)
            lw_record_alloc(kind, cls, key, size, device);
        else
            lw_record_failure(kind, size, device, result);
    }
    errno = saved;
}

void lw_event_alloc(lw_event_gate gate, int result, lw_kind kind, uint64_t key, uint64_t size) {
    alloc(gate, result, kind, LW_CLASS_DPTR, key, size, 0);
}

void lw_event_host_alloc(lw_event_gate gate, int result, uint64_t key, uint64_t size) {
    alloc(gate, result, LW_KIND_PINNED_HOST, LW_CLASS_HOST, key, size, 1);
}

void lw_event_vmm_create(lw_event_gate gate, int result, uint64_t handle, uint64_t size,
                         int device) {
    int saved = errno;
    if (recording(gate)) {
        if (result == 0) {
            lw_record_alloc(LW_KIND_PHYSICAL, LW_CLASS_HANDLE, handle, size, device);
            lw_vmm_created(handle);
        } else {
            lw_record_failure(LW_KIND_PHYSICAL, size, device, result);
        }
    }
    errno = saved;
}

/* ---- frees ---- */

static void free_begin(lw_event_gate gate, lw_key_class cls, uint64_t key,
                       lw_event_free_ticket *t) {
    if (!gate) { /* a nested hook's: see alloc */
        t->track = 0;
        return;
    }
    int saved = errno;
    t->track = key != 0 && recording(gate);
    if (t->track) lw_record_free_begin(cls, key, &t->t);
    errno = saved;
}

void lw_event_free_begin(lw_event_gate gate, uint64_t key, lw_event_free_ticket *t) {
    free_begin(gate, LW_CLASS_DPTR, key, t);
}

void lw_event_host_free_begin(lw_event_gate gate, uint64_t key, lw_event_free_ticket *t) {
    free_begin(gate, LW_CLASS_HOST, key, t);
}

void lw_event_free_end(lw_event_free_ticket *t, int result) {
    if (!t->track) return;
    int saved = errno;
    lw_record_free_end(&t->t, result == 0);
    errno = saved;
}

/* ---- virtual memory management ---- */

void lw_event_vmm_release_begin(lw_event_gate gate, uint64_t handle, lw_event_vmm_ticket *t) {
    int saved = errno;
    t->track = recording(gate);
    if (t->track) lw_vmm_release_begin(handle, &t->t);
    errno = saved;
}

void lw_event_vmm_release_end(lw_event_vmm_ticket *t, int result) {
    if (!t->track) return;
    int saved = errno;
    lw_vmm_release_end(&t->t, result == 0);
    errno = saved;
}

void lw_event_vmm_retain(lw_event_gate gate, int result, uint64_t handle) {
    if (result != 0) return;
    int saved = errno;
    if (recording(gate)) lw_vmm_retained(handle);
    errno = saved;
}

/* A mapping puts physical memory (counted at its creation) at an address:
 * mapped bytes, and the memory stays alive after its release. The mappings
 * of an imported handle count as imported. Counted only while recording, as
 * the unmaps are: a disabled or detached leakwatch moves no counter. */
void lw_event_vmm_map(lw_event_gate gate, int result, uint64_t addr, uint64_t size, uint64_t offset,
                      uint64_t handle) {
    if (result != 0) return;
    int saved = errno;
    if (recording(gate)) {
        if (lw_vmm_mapped(addr, size, handle)) {
            lw_imports_map_delta((int64_t)size);
            lw_import_mapped(handle, offset, size);
        } else {
            lw_totals_mapped((int64_t)size);
        }
    }
    errno = saved;
}

void lw_event_vmm_unmap_begin(lw_event_gate gate, uint64_t addr, uint64_t size,
                              lw_event_vmm_ticket *t) {
    int saved = errno;
    t->size = size;
    t->track = recording(gate);
    if (t->track) lw_vmm_unmap_begin(addr, size, &t->t);
    errno = saved;
}

void lw_event_vmm_unmap_end(lw_event_vmm_ticket *t, int result) {
    if (!t->track) return;
    int saved = errno;
    uint64_t imported = t->t.imported_bytes;
    lw_vmm_unmap_end(&t->t, result == 0);
    if (result == 0) {
        lw_totals_mapped(-(int64_t)(t->size - imported));
        if (imported) lw_imports_map_delta(-(int64_t)imported);
    }
    errno = saved;
}

/* ---- imports ---- */

/* An open that gave no address or handle counts as refused. */
static void import_opened(lw_event_gate gate, int result, int vmm_handle, uint64_t key) {
    int saved = errno;
    if (recording(gate)) {
        if (result != 0 || key == 0) {
            lw_import_failed();
        } else if (!vmm_handle) {
            lw_import_opened(LW_CLASS_DPTR, key, lw_device_range_size(key));
        } else {
            lw_import_opened(LW_CLASS_HANDLE, key, 0);
            lw_vmm_imported(key);
        }
    }
    errno = saved;
}

void lw_event_ipc_open(lw_event_gate gate, int result, uint64_t addr) {
    import_opened(gate, result, 0, addr);
}

void lw_event_vmm_import(lw_event_gate gate, int result, uint64_t handle) {
    import_opened(gate, result, 1, handle);
}

void lw_event_ipc_close_begin(lw_event_gate gate, uint64_t addr, lw_event_close_ticket *t) {
    int saved = errno;
    t->track = addr != 0 && recording(gate);
    if (t->track) lw_import_close_begin(LW_CLASS_DPTR, addr, &t->t);
    errno = saved;
}

void lw_event_ipc_close_end(lw_event_close_ticket *t, int result) {
    if (!t->track) return;
    int saved = errno;
    lw_import_close_end(&t->t, result == 0);
    errno = saved;
}
