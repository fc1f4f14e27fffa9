/* SPDX-License-Identifier: Apache-2.0 */
/* The table of live allocations: what is allocated now, by whom.
 *
 * Keyed by (class, address or handle). Three classes keep namespaces apart
 * that can hold the same number: device addresses (device and managed
 * memory), pinned host addresses, and physical-memory handles (cuMemCreate).
 * The table is split into stripes, each with its own lock and hash table,
 * so that threads freeing and allocating different addresses rarely meet. */
#ifndef LW_LIVE_H
#define LW_LIVE_H

#include <stdint.h>

typedef enum { LW_CLASS_DPTR, LW_CLASS_HOST, LW_CLASS_HANDLE, LW_CLASS_COUNT } lw_key_class;

struct lw_site;

typedef struct lw_alloc {
    uint64_t key;
    uint64_t size;
    struct lw_site *site;
    uint32_t step;         /* training step at allocation */
    uint32_t age_s;        /* seconds since leakwatch started, at allocation */
    int16_t device;        /* -1: host or unknown */
    uint8_t kind;          /* lw_kind */
    uint8_t cls;           /* lw_key_class */
    struct lw_alloc *next; /* live.c's chain; 48 bytes in all */
} lw_alloc;

/* Records a copy of rec. If the key was already live (its free was never
 * seen: an unhooked path freed it), the old record is copied to *replaced and
 * 1 is returned; 0 when newly inserted; -1 when no memory could be had (the
 * allocation is then not tracked). */
int lw_live_insert(const lw_alloc *rec, lw_alloc *replaced);

/* Removes the record for (cls, key), copying it to *out. Returns 1 when it was
 * live, 0 when unknown. */
int lw_live_remove(lw_key_class cls, uint64_t key, lw_alloc *out);

/* Calls fn on every live record, one stripe at a time under its lock (off
 * the hot path: the detector's per-site analysis). fn must not call back. */
void lw_live_scan(void (*fn)(const lw_alloc *r, void *arg), void *arg);

/* Number of records and bytes the table itself holds (for the report). */
uint64_t lw_live_records(void);
uint64_t lw_live_overhead_bytes(void);

/* Empties the table (a forked child's first start: the parent's allocations
 * are not the child's). Callers make sure nothing records meanwhile. */
void lw_live_forget_all(void);

/* Fork: every stripe's lock, taken before fork and released in both
 * processes after it, so that no lock is inherited held. */
void lw_live_lock_all(void);
void lw_live_unlock_all(void);

#endif
