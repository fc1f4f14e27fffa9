/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual memory management (cuMemCreate & co.) as the driver counts it:
 * physical memory lives while its handle has a reference (cuMemCreate,
 * cuMemRetainAllocationHandle, an import) OR a mapping (cuMemMap), and goes
 * at the last cuMemRelease or cuMemUnmap, whichever comes last. So the idiom
 * cuMemCreate -> cuMemMap -> cuMemRelease keeps its memory until cuMemUnmap,
 * and NCCL's free (retain + release + unmap + release) ends it at the last
 * release.
 *
 * The record of a handle (lw_record_alloc, class LW_CLASS_HANDLE) is made at
 * its creation; this table keeps its references and mappings and takes the
 * record out when the memory goes. Handles it does not know (created before
 * leakwatch started, or untracked) are left to the record layer as before. */
#ifndef LW_VMM_H
#define LW_VMM_H

#include "imports.h"
#include "record.h"

#include <stdint.h>

/* After a successful, recorded cuMemCreate: one reference. */
void lw_vmm_created(uint64_t handle);
/* After a successful cuMemImportFromShareableHandle (imports.h has its
 * record): one reference; its end closes the import. */
void lw_vmm_imported(uint64_t handle);
/* After a successful cuMemRetainAllocationHandle: one more reference. */
void lw_vmm_retained(uint64_t handle);
/* After a successful cuMemMap of [addr, addr+size). Returns 1 when the
 * handle is an imported one. */
int lw_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle);

/* Release and unmap, in two halves around the real call, as frees are (see
 * record.h): _begin takes the reference or the mappings off and, when that
 * ends a handle's memory, its record out of the live table; _end puts it all
 * back if the driver refused the call. */
#define LW_VMM_TICKET_INLINE 4
typedef struct {
    int imported;         /* the memory of an imported handle: imp, else rec */
    lw_free_ticket rec;   /* this process's physical memory */
    lw_import_ticket imp; /* imported */
} lw_vmm_end;
typedef struct {
    int active;              /* 0: nothing of ours to finish */
    int unknown;             /* release: a handle this table does not know */
    int imported;            /* release: the handle is an imported one */
    uint64_t handle;         /* release */
    int nmaps;               /* unmap: the mappings taken off */
    int ndead;               /* handles whose memory this call ends */
    uint64_t imported_bytes; /* unmap: bytes of imported handles' mappings taken off */
    struct lw_vmm_map_copy {
        uint64_t addr, size, handle;
        int imported;
    } * maps, maps_inline[LW_VMM_TICKET_INLINE];
    lw_vmm_end *dead, dead_inline[LW_VMM_TICKET_INLINE];
} lw_vmm_ticket;

void lw_vmm_release_begin(uint64_t handle, lw_vmm_ticket *t);
void lw_vmm_release_end(lw_vmm_ticket *t, int succeeded);
void lw_vmm_unmap_begin(uint64_t addr, uint64_t size, lw_vmm_ticket *t);
void lw_vmm_unmap_end(lw_vmm_ticket *t, int succeeded);

/* Fork: the table's lock is held across fork; a forked child forgets the
 * parent's handles (VMM memory does not survive into a child). */
void lw_vmm_lock_for_fork(void);
void lw_vmm_unlock_after_fork(void);
void lw_vmm_forget_all(void);

#endif
