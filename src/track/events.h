/* SPDX-License-Identifier: Apache-2.0 */
/* The tracking events: what a hook reports once the real CUDA function has
 * returned (the hooks are in src/hooks; each wrapper calls the real function,
 * then one of these, in the shape of heaptrack's libheaptrack.h). Each event
 * owns the whole policy: whether to record at all (the outermost hook of the
 * thread only, and only while leakwatch records: the start check, which
 * starts it at the first event), the caller's errno (left as it was), the
 * device, and which tables and counters move (record.h, vmm.h, imports.h,
 * totals.h).
 *
 * result: the CUDA call's result, 0 for success (CUDA_SUCCESS and
 * cudaSuccess are both 0). A key or size read from the call's output is
 * only looked at when result is 0.
 *
 * Frees, releases, unmaps and closes come in two halves around the real
 * call (see record.h: the record leaves the table before the memory goes
 * back to the driver, and comes back if the driver refuses). */
#ifndef LW_EVENTS_H
#define LW_EVENTS_H

#include "imports.h"
#include "live.h"
#include "record.h"
#include "totals.h"
#include "vmm.h"

#include <stdint.h>

/* Who reports the event. The outermost hook call of the thread passes the
 * start check (the lifecycle's lw_started: 1 when leakwatch records, and it
 * starts leakwatch at the first event); a hook called from inside another one
 * (the runtime's cudaMalloc reaches the driver's cuMemAlloc_v2 through our
 * wrapper too) passes NULL, and its event is ignored: the outer one records.
 * The start check is passed in because this layer lies below the lifecycle
 * and cannot name it (hooks/guard.h hands it out). */
typedef int (*lw_event_gate)(void);

/* ---- allocations ---- */

/* Device memory at address key (cudaMalloc, cuMemAlloc_v2, the async and
 * pool allocations, managed memory: kind), on the calling thread's current
 * device. A failed call (result != 0) is recorded as a failure of size. */
void lw_event_alloc(lw_event_gate gate, int result, lw_kind kind, uint64_t key, uint64_t size);

/* Pinned host memory at address key (cudaMallocHost, cuMemHostAlloc, and
 * host memory registered: cudaHostRegister, cuMemHostRegister). */
void lw_event_host_alloc(lw_event_gate gate, int result, uint64_t key, uint64_t size);

/* Physical memory (cuMemCreate) of handle, on device (-1: not a device's):
 * recorded, and its references counted from here (vmm.h). */
void lw_event_vmm_create(lw_event_gate gate, int result, uint64_t handle, uint64_t size,
                         int device);

/* ---- frees ---- */
typedef struct {
    int track;
    lw_free_ticket t;
} lw_event_free_ticket;

/* Before the real free of device memory (cudaFree, cuMemFree_v2, async) or
 * pinned host memory (cudaFreeHost, cuMemFreeHost, the unregisters) at key.
 * A free of address 0 records nothing. */
void lw_event_free_begin(lw_event_gate gate, uint64_t key, lw_event_free_ticket *t);
void lw_event_host_free_begin(lw_event_gate gate, uint64_t key, lw_event_free_ticket *t);
/* After it. */
void lw_event_free_end(lw_event_free_ticket *t, int result);

/* ---- virtual memory management (vmm.h) ---- */
typedef struct {
    int track;
    uint64_t size; /* unmap: the range's size */
    lw_vmm_ticket t;
} lw_event_vmm_ticket;

/* Around cuMemRelease of handle. */
void lw_event_vmm_release_begin(lw_event_gate gate, uint64_t handle, lw_event_vmm_ticket *t);
void lw_event_vmm_release_end(lw_event_vmm_ticket *t, int result);

/* After cuMemRetainAllocationHandle: one more reference to handle. */
void lw_event_vmm_retain(lw_event_gate gate, int result, uint64_t handle);

/* After cuMemMap of [addr, addr+size) to [offset, offset+size) of handle:
 * mapped bytes (the imported ones apart, imports.h). */
void lw_event_vmm_map(lw_event_gate gate, int result, uint64_t addr, uint64_t size, uint64_t offset,
                      uint64_t handle);

/* Around cuMemUnmap of [addr, addr+size). */
void lw_event_vmm_unmap_begin(lw_event_gate gate, uint64_t addr, uint64_t size,
                              lw_event_vmm_ticket *t);
void lw_event_vmm_unmap_end(lw_event_vmm_ticket *t, int result);

/* ---- imports: another process's memory, opened here (imports.h) ---- */

/* After cudaIpcOpenMemHandle or cuIpcOpenMemHandle: the address opened. */
void lw_event_ipc_open(lw_event_gate gate, int result, uint64_t addr);

/* After cuMemImportFromShareableHandle: the handle imported. */
void lw_event_vmm_import(lw_event_gate gate, int result, uint64_t handle);

/* Around cudaIpcCloseMemHandle and cuIpcCloseMemHandle of addr. */
typedef struct {
    int track;
    lw_import_ticket t;
} lw_event_close_ticket;
void lw_event_ipc_close_begin(lw_event_gate gate, uint64_t addr, lw_event_close_ticket *t);
void lw_event_ipc_close_end(lw_event_close_ticket *t, int result);

#endif
