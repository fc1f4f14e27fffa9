/* SPDX-License-Identifier: Apache-2.0 */
/* The record layer: what the events (events.h) call after the real CUDA
 * function returned, once leakwatch has started (the event asks).
 * One allocation event: capture the stack, find its site (a thread-local cache
 * in front of the site table), insert into the live table, count. No I/O, no
 * symbol lookup. */
#ifndef LW_RECORD_H
#define LW_RECORD_H

#include "live.h"
#include "totals.h"

#include <stdint.h>

void lw_record_alloc(lw_kind kind, lw_key_class cls, uint64_t key, uint64_t size, int device);

/* A free takes the record out of the table BEFORE the real free runs: once
 * the driver has the address back it can hand it to another thread, whose
 * allocation must not be the one removed. If the real free fails, the record
 * is put back. */
typedef struct {
    lw_alloc rec;
    int tracked;
} lw_free_ticket;
void lw_record_free_begin(lw_key_class cls, uint64_t key, lw_free_ticket *t);
void lw_record_free_end(lw_free_ticket *t, int succeeded);

/* A failed allocation (out of memory, most often): counted, and kept with its
 * stack, since that is the moment users most want to see. */
void lw_record_failure(lw_kind kind, uint64_t size, int device, int result);
/* Called after each failure is recorded, on the failing thread (the
 * lifecycle's out-of-memory post-mortem); NULL: none. */
void lw_record_set_failure_hook(void (*fn)(lw_kind kind, uint64_t size, int device, int result));

/* The newest failed allocations, oldest first; returns how many were copied. */
typedef struct {
    uint64_t time_ns; /* since start */
    uint64_t size;
    struct lw_site *site;
    uint32_t step;
    int32_t result;
    int16_t device;
    uint8_t kind;
} lw_failure;
#define LW_FAILURES_KEPT 32
int lw_failures_get(lw_failure *out, int max);

/* Fork (lifecycle.c): the failure ring's lock is taken before fork and
 * released in both processes; in the child, the forking thread's site cache
 * is cleared. */
void lw_record_lock_for_fork(void);
void lw_record_unlock_after_fork(void);
void lw_record_after_fork_child(void);
/* A forked child's first start: the failure ring and the counters below go
 * back to zero. */
void lw_record_forget_all(void);

/* backward() in progress (PyTorch's helper wraps torch.autograd.backward):
 * entering captures the calling thread's Python frames; until the matching
 * exit, an allocation on a thread with a Python thread state but no frame
 * (autograd's engine threads) takes those frames as its own, and its site is
 * marked as made in backward. Nested and concurrent calls: the newest
 * caller's frames are used until every call has returned. */
void lw_record_backward(int entering);

/* 1 for a site whose Python frames are those of the thread that was waiting
 * in backward(). */
struct lw_site;
int lw_site_in_backward(const struct lw_site *s);

/* Allocations whose tracking was given up for lack of memory. */
uint64_t lw_record_untracked(void);
/* Call sites whose stack was cut at LEAKWATCH_MAX_FRAMES native or 48 Python
 * frames (the innermost ones are kept). */
uint64_t lw_record_truncated_sites(void);
/* Allocations whose address came back while still recorded as live. */
uint64_t lw_record_reused_unseen(void);

#endif
