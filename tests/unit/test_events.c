/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the tracking events (src/track/events.c): an event moves
 * nothing for a nested hook call (no gate) or while leakwatch does not
 * record (a gate that says no), asks the gate only when there is something
 * to record, and leaves errno as it was. */
#include "events.h"
#include "imports.h"
#include "totals.h"

#include "../check_run.h"

#include <check.h>
#include <errno.h>

static int gate_calls;
static int gate_no(void) {
    gate_calls++;
    errno = EIO; /* starting may touch errno: the event puts it back */
    return 0;
}
static int gate_yes(void) {
    gate_calls++;
    errno = EIO;
    return 1;
}

static void fresh(void) {
    lw_totals_reset();
    lw_imports_forget_all();
    lw_vmm_forget_all();
    gate_calls = 0;
}

static void assert_nothing_moved(void) {
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    ck_assert_int_eq(lw_imports_mapped_bytes(), 0);
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    ck_assert_uint_eq(c.alloc_count, 0);
    ck_assert_uint_eq(c.failed_count, 0);
    ck_assert_uint_eq(c.free_count, 0);
    lw_counts i = lw_imports_get();
    ck_assert_uint_eq(i.alloc_count, 0);
    ck_assert_uint_eq(i.failed_count, 0);
}

/* Every event, with a gate that says no or none at all. */
static void every_event(lw_event_gate gate) {
    lw_event_alloc(gate, 2 /* out of memory */, LW_KIND_DEVICE, 0, 4096);
    lw_event_host_alloc(gate, 2, 0, 4096);
    lw_event_vmm_create(gate, 2, 0, 4096, 0);
    lw_event_vmm_map(gate, 0, 0x200000, 4096, 0, 77);
    lw_event_vmm_retain(gate, 0, 77);
    lw_event_vmm_ticket v;
    lw_event_vmm_unmap_begin(gate, 0x200000, 4096, &v);
    lw_event_vmm_unmap_end(&v, 0);
    lw_event_vmm_release_begin(gate, 77, &v);
    lw_event_vmm_release_end(&v, 0);
    lw_event_ipc_open(gate, 0, 0x9000);
    lw_event_ipc_open(gate, 1, 0);
    lw_event_vmm_import(gate, 0, 78);
    lw_event_close_ticket c;
    lw_event_ipc_close_begin(gate, 0x9000, &c);
    lw_event_ipc_close_end(&c, 0);
    lw_event_free_ticket f;
    lw_event_free_begin(gate, 0x1000, &f);
    lw_event_free_end(&f, 0);
    lw_event_host_free_begin(gate, 0x1000, &f);
    lw_event_free_end(&f, 0);
}

START_TEST(nested_hook_calls_move_nothing) {
    fresh();
    errno = 1234;
    every_event(NULL);
    ck_assert_int_eq(errno, 1234);
    assert_nothing_moved();
}
END_TEST

/* Disabled, detached, or a forked child not started: the map and the unmap
 * moved the mapped bytes anyway before the counters moved into the events. */
START_TEST(not_recording_moves_nothing) {
    fresh();
    errno = 1234;
    every_event(gate_no);
    ck_assert_int_eq(errno, 1234);
    assert_nothing_moved();
}
END_TEST

START_TEST(mapped_bytes_move_while_recording) {
    fresh();
    errno = 1234;
    lw_event_vmm_map(gate_yes, 0, 0x200000, 4096, 0, 77); /* a handle not created here */
    ck_assert_int_eq(errno, 1234);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 4096);
    lw_event_vmm_ticket v;
    lw_event_vmm_unmap_begin(gate_yes, 0x200000, 4096, &v);
    lw_event_vmm_unmap_end(&v, 1 /* refused */);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 4096);
    lw_event_vmm_unmap_begin(gate_yes, 0x200000, 4096, &v);
    lw_event_vmm_unmap_end(&v, 0);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    ck_assert_int_eq(errno, 1234);
}
END_TEST

/* Nothing to record: the start check is not asked (it would start leakwatch
 * for a call that allocated nothing). */
START_TEST(gate_asked_only_when_there_is_something) {
    fresh();
    lw_event_vmm_map(gate_yes, 1, 0x200000, 4096, 0, 77); /* refused */
    lw_event_vmm_retain(gate_yes, 1, 77);
    lw_event_free_ticket f;
    lw_event_free_begin(gate_yes, 0, &f); /* cudaFree(NULL) */
    lw_event_free_end(&f, 0);
    lw_event_close_ticket c;
    lw_event_ipc_close_begin(gate_yes, 0, &c);
    lw_event_ipc_close_end(&c, 0);
    ck_assert_int_eq(gate_calls, 0);
    assert_nothing_moved();
    /* A refused allocation is something: a failure. */
    lw_event_alloc(gate_no, 2, LW_KIND_DEVICE, 0, 4096);
    ck_assert_int_eq(gate_calls, 1);
}
END_TEST

START_TEST(imports_counted_while_recording) {
    fresh();
    lw_event_ipc_open(gate_yes, 0, 0x9000);
    lw_event_ipc_open(gate_yes, 3, 0);
    lw_counts i = lw_imports_get();
    ck_assert_uint_eq(i.alloc_count, 1);
    ck_assert_uint_eq(i.failed_count, 1);
    lw_event_close_ticket c;
    lw_event_ipc_close_begin(gate_yes, 0x9000, &c);
    lw_event_ipc_close_end(&c, 0);
    ck_assert_int_eq(lw_imports_get().live_count, 0);
    /* An imported VMM handle's mappings count as imported, not as mapped. */
    lw_event_vmm_import(gate_yes, 0, 78);
    lw_event_vmm_map(gate_yes, 0, 0x400000, 8192, 0, 78);
    ck_assert_int_eq(lw_imports_mapped_bytes(), 8192);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    lw_event_vmm_ticket v;
    lw_event_vmm_unmap_begin(gate_yes, 0x400000, 8192, &v);
    lw_event_vmm_unmap_end(&v, 0);
    ck_assert_int_eq(lw_imports_mapped_bytes(), 0);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    lw_imports_forget_all();
    lw_vmm_forget_all();
}
END_TEST

static Suite *events_suite(void) {
    Suite *s = suite_create("events");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, nested_hook_calls_move_nothing);
    tcase_add_test(tc, not_recording_moves_nothing);
    tcase_add_test(tc, mapped_bytes_move_while_recording);
    tcase_add_test(tc, gate_asked_only_when_there_is_something);
    tcase_add_test(tc, imports_counted_while_recording);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(events_suite());
}
