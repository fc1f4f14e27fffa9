/* SPDX-License-Identifier: Apache-2.0 */
/* Imported memory: device memory another process allocated and exported,
 * opened here (cudaIpcOpenMemHandle, cuIpcOpenMemHandle, or
 * cuMemImportFromShareableHandle followed by cuMemMap). It is the exporter's
 * memory, so it is kept apart from this process's own: it is in none of the
 * kinds' totals, the live bytes the growth detector follows, the
 * out-of-memory projection or the call sites; it is counted here, and shown
 * in the report as totals.imported.
 *
 * IPC opens are reference-counted by the driver: opening a handle the
 * context already opened returns the same address, and the memory is unmapped
 * at the last cuIpcCloseMemHandle. An imported VMM handle lives as the
 * driver counts it (vmm.h): until its last release and its last unmap; its
 * size is what its mappings reach (the driver does not tell an importer the
 * size of the memory behind a handle). Imports are rare: one lock. */
#ifndef LW_IMPORTS_H
#define LW_IMPORTS_H

#include "live.h"
#include "totals.h"

#include <stdint.h>

/* After a successful open. cls LW_CLASS_DPTR: an IPC open at address key of
 * size bytes (0: unknown); LW_CLASS_HANDLE: an imported VMM handle (size 0
 * until mapped). */
void lw_import_opened(lw_key_class cls, uint64_t key, uint64_t size);
/* After a refused open. */
void lw_import_failed(void);
/* After a successful cuMemMap of [offset, offset+size) of handle: an
 * imported handle's bytes grow to what its mappings reach. */
void lw_import_mapped(uint64_t handle, uint64_t offset, uint64_t size);
/* 1 when handle is an imported VMM handle still open. */
int lw_import_is_handle(uint64_t handle);

/* A close, in two halves around the real call as frees are (record.h):
 * _begin takes one reference off, and the import out of the table when that
 * was its last; _end puts it back if the driver refused the call. */
typedef struct {
    int state; /* 0: not an open import; 1: a reference taken; 2: the import ended */
    uint8_t cls;
    uint64_t key, size;
} lw_import_ticket;
void lw_import_close_begin(lw_key_class cls, uint64_t key, lw_import_ticket *t);
void lw_import_close_end(lw_import_ticket *t, int succeeded);

/* The counters, in the kinds' shape: alloc_count = opens, free_count =
 * closes that ended an import, live_count = imports open now. */
lw_counts lw_imports_get(void);
/* Bytes of imported memory mapped now through cuMemMap (not in
 * totals.mapped_bytes). */
int64_t lw_imports_mapped_bytes(void);
void lw_imports_map_delta(int64_t delta);

/* Fork: the table's lock is held across fork; a forked child forgets the
 * parent's imports (its first start). */
void lw_imports_lock_for_fork(void);
void lw_imports_unlock_after_fork(void);
void lw_imports_forget_all(void);

#endif
