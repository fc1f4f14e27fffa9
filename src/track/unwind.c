/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind rules from DWARF call frame information (see unwind.h).
 *
 * Only what the fast walk in stack.c can use is interpreted: the CFA as
 * sp/fp + offset, the frame pointer's and the return address's "saved at
 * CFA + n" rules. The object holding an address is found with glibc's
 * _dl_find_object (lock-free, 2.35+) or dl_iterate_phdr; its FDE with the
 * binary search table of .eh_frame_hdr. The bytes are read in place, by
 * src/base/cfi.c (also attach's reader of another process's call frames).
 * Every read stays inside the FDE and CIE being parsed (lengths are
 * checked), so a corrupt table gives LW_UNW_FAIL, not a fault. */
#include "unwind.h"

#include "cfi.h"
#include "dl_walk.h"
#include "real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#if LW_UNW_FAST

/* glibc's struct dl_find_object (dlfcn.h, 2.35+), declared here so that the
 * library also loads where the function is missing. */
struct lw_dl_find_object {
    unsigned long long flags;
    void *map_start;
    void *map_end;
    struct link_map *link_map;
    void *eh_frame; /* the PT_GNU_EH_FRAME segment: .eh_frame_hdr */
    unsigned long long reserved[7];
};
typedef int (*find_object_fn)(void *, struct lw_dl_find_object *);
static _Atomic(find_object_fn) find_object;
static atomic_int find_object_state; /* 0 unknown, 1 looked up */

/* ---- finding the .eh_frame_hdr of the object holding ip ---- */
struct phdr_find {
    uintptr_t ip, hdr;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
    struct phdr_find *f = data;
    const ElfW(Phdr) *eh = NULL;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->ip >= a && f->ip < a + ph->p_memsz) inside = 1;
        if (ph->p_type == PT_GNU_EH_FRAME) eh = ph;
    }
    if (!inside) return 0;
    if (eh) f->hdr = info->dlpi_addr + eh->p_vaddr;
    return 1;
}

static uintptr_t eh_frame_hdr_of(uintptr_t ip) {
    if (!atomic_load_explicit(&find_object_state, memory_order_acquire)) {
        /* Looked up through the real dlsym: the library interposes dlsym. */
        find_object_fn f = (find_object_fn)lw_real_dlsym(RTLD_DEFAULT, "_dl_find_object");
        atomic_store_explicit(&find_object, f, memory_order_relaxed);
        atomic_store_explicit(&find_object_state, 1, memory_order_release);
    }
    find_object_fn f = atomic_load_explicit(&find_object, memory_order_relaxed);
    if (f) {
        struct lw_dl_find_object r;
        if (f((void *)ip, &r) != 0) return 0;
        return (uintptr_t)r.eh_frame;
    }
    struct phdr_find pf = {.ip = ip, .hdr = 0};
    lw_dl_walk(phdr_cb, &pf);
    return pf.hdr;
}

/* Reads an entry of the .eh_frame_hdr table in place. */
static int hdr_entry(void *ctx, uint64_t addr, int32_t e[2]) {
    (void)ctx;
    memcpy(e, (const void *)(uintptr_t)addr, 2 * sizeof *e);
    return 0;
}

/* The FDE in the .eh_frame_hdr at hdr that may cover pc. */
static const uint8_t *find_fde(uintptr_t hdr, uintptr_t pc) {
    lw_cfi_hdr t;
    uint64_t fde;
    if (lw_cfi_hdr_parse((const uint8_t *)hdr, hdr, &t) != 0 ||
        lw_cfi_hdr_find(&t, hdr, pc, hdr_entry, NULL, &fde) != 0)
        return NULL;
    return (const uint8_t *)(uintptr_t)fde;
}

/* The CIE at p (inside .eh_frame, in place). */
static int parse_cie(const uint8_t *p, lw_cfi_cie *ci) {
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu) return -1; /* 64-bit DWARF: never in .eh_frame */
    return lw_cfi_parse_cie(lw_cfi_cur_at(p + 4, len, (uintptr_t)(p + 4)), ci);
}

static lw_unw_rule fail_rule(void) {
    lw_unw_rule r = {0, 0, 0, LW_UNW_FAIL};
    return r;
}

lw_unw_rule lw_unw_rule_lookup(uintptr_t ip) {
    if (ip == 0) return fail_rule();
    uintptr_t pc = ip - 1; /* inside the call instruction */
    uintptr_t hdr = eh_frame_hdr_of(pc);
    if (!hdr) return fail_rule();
    const uint8_t *fde = find_fde(hdr, pc);
    if (!fde) return fail_rule();
    uint32_t len, cie_off;
    memcpy(&len, fde, 4);
    if (len < 8 || len == 0xffffffffu) return fail_rule();
    memcpy(&cie_off, fde + 4, 4);
    if (cie_off == 0) return fail_rule(); /* that is a CIE */
    lw_cfi_cie ci;
    if (parse_cie(fde + 4 - cie_off, &ci) != 0) return fail_rule();
    /* A signal frame's registers are in the interrupted context, not in
     * rules of this kind. */
    if (ci.signal || ci.ra_reg != LW_DW_REG_RA) return fail_rule();
    lw_cfi_cur c = lw_cfi_cur_at(fde + 8, len - 4, (uintptr_t)(fde + 8));
    uint64_t start;
    if (lw_cfi_parse_fde(&c, &ci, pc, &start) != 0) return fail_rule();
    lw_cfi_row init;
    lw_cfi_row_init(&init, -2);
    init.how[LW_DW_REG_RA] = LW_CFI_UNDEF;
    /* The CIE program describes the row at the function's first byte: run it
     * whole (advance_loc in a CIE is not expected); its restores are no-ops. */
    lw_cfi_cur ic = ci.insns;
    if (lw_cfi_run(&ic, &ci, start, start, &init, &init) != 0) return fail_rule();
    lw_cfi_row r = init;
    if (lw_cfi_run(&c, &ci, start, pc, &r, &init) != 0) return fail_rule();

    lw_unw_rule out = {0, 0, 0, LW_UNW_STEP};
    if (r.cfa_reg == LW_DW_REG_SP) {
        /* nothing */
    } else if (r.cfa_reg == LW_DW_REG_FP) {
        out.flags |= LW_UNW_CFA_FP;
    } else {
        return fail_rule(); /* an expression, or realigned through another register */
    }
    if (r.cfa_off < -(1 << 30) || r.cfa_off > (1 << 30)) return fail_rule();
    out.cfa_off = (int32_t)r.cfa_off;
    uint8_t ra_how = r.how[LW_DW_REG_RA], fp_how = r.how[LW_DW_REG_FP];
    int64_t ra_off = r.arg[LW_DW_REG_RA], fp_off = r.arg[LW_DW_REG_FP];
    if (ra_how == LW_CFI_UNDEF) {
        out.kind = LW_UNW_LAST;
    } else if (ra_how != LW_CFI_OFFSET || ra_off != LW_UNW_RA_SLOT) {
        return fail_rule();
    }
    if (fp_how == LW_CFI_OFFSET) {
        if (fp_off < -32768 || fp_off > 32767) return fail_rule();
        out.flags |= LW_UNW_FP_SAVED;
        out.fp_off = (int16_t)fp_off;
    } else if (fp_how != LW_CFI_SAME) {
        return fail_rule();
    }
    return out;
}

#else

lw_unw_rule lw_unw_rule_lookup(uintptr_t ip) {
    lw_unw_rule r = {0, 0, 0, LW_UNW_FAIL};
    return r;
}

#endif
