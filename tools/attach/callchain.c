/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach: a stopped thread's call chain (callchain.h). Only what
 * compilers and the C library write in .eh_frame is followed: a rule it
 * does not know (a DWARF expression: the PLT's, a signal frame's) ends the
 * walk there, incomplete, and the caller treats the rest of the stack as
 * before (every word that could be a return address is taken for one).
 * The target's bytes are copied here and read by src/base/cfi.c, the
 * format's reader that the shim's fast unwinder uses too. */
#include "callchain.h"

#include "cfi.h"

#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES ((int)(sizeof(((lw_callchain *)0)->ra) / sizeof(uint64_t)))
#define ENTRY_MAX 4096 /* a CIE's or FDE's bytes */
_Static_assert(LW_CFI_NREGS == LW_CALLCHAIN_NREGS, "a row of rules has a rule for every register");

/* ---- the module that holds an address ---- */
/* The target's mappings of files (and the vDSO), read once per walk: each
 * with the start of its file's mapping at offset 0, and once looked up, its
 * module's load bias and .eh_frame_hdr. */
typedef struct {
    uint64_t lo, hi, base;
    int state; /* 0: not looked up yet; 1: hdr known; -1: none */
    uint64_t hdr;
} segment;

typedef struct {
    segment *v;
    int n, cap;
} segments;

static void load_segments(pid_t pid, segments *out) {
    char p[64], line[PATH_MAX + 128], prev_path[PATH_MAX] = "";
    uint64_t prev_base = 0;
    out->v = NULL;
    out->n = out->cap = 0;
    snprintf(p, sizeof p, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(p, "re");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &pos) != 4 || !pos)
            continue;
        char *name = line + pos;
        name[strcspn(name, "\n")] = '\0';
        if (name[0] != '/' && strcmp(name, "[vdso]") != 0) continue;
        /* The mapping at offset 0 of a file comes first in the list. */
        if (off == 0) {
            prev_base = lo;
            snprintf(prev_path, sizeof prev_path, "%s", name);
        }
        if (perms[2] != 'x' || strcmp(name, prev_path) != 0) continue;
        if (out->n == out->cap) {
            int nc = out->cap ? out->cap * 2 : 64;
            segment *v = realloc(out->v, (size_t)nc * sizeof *v);
            if (!v) break;
            out->v = v;
            out->cap = nc;
        }
        out->v[out->n++] = (segment){lo, hi, prev_base, 0, 0};
    }
    fclose(f);
}

/* The .eh_frame_hdr of the module whose code holds addr: 0, or -1 when addr
 * is in no file's executable mapping, or the file has none. */
static int module_hdr(segments *segs, lw_callchain_read_fn rd, void *ctx, uint64_t addr,
                      uint64_t *hdr) {
    segment *s = NULL;
    for (int i = 0; i < segs->n && !s; i++)
        if (addr >= segs->v[i].lo && addr < segs->v[i].hi) s = &segs->v[i];
    if (!s) return -1;
    if (s->state == 0) {
        s->state = -1;
        Elf64_Ehdr eh;
        Elf64_Phdr ph[64];
        if (rd(ctx, s->base, &eh, sizeof eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
            eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
            eh.e_phnum > 64 || rd(ctx, s->base + eh.e_phoff, ph, eh.e_phnum * sizeof *ph) != 0)
            return -1;
        uint64_t first_load = UINT64_MAX, eh_vaddr = 0;
        for (int i = 0; i < eh.e_phnum; i++) {
            if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0 && first_load == UINT64_MAX)
                first_load = ph[i].p_vaddr;
            if (ph[i].p_type == PT_GNU_EH_FRAME) eh_vaddr = ph[i].p_vaddr;
        }
        if (first_load == UINT64_MAX || !eh_vaddr) return -1;
        /* The load bias: where the segment at offset 0 is, less its address. */
        s->hdr = s->base - (first_load & ~(uint64_t)0xfff) + eh_vaddr;
        s->state = 1;
    }
    *hdr = s->hdr;
    return s->state == 1 ? 0 : -1;
}

/* ---- the call frame information, read from the target ---- */
/* One CIE or FDE at addr, read into buf: its body (after the length). */
static int read_entry(lw_callchain_read_fn rd, void *ctx, uint64_t addr, unsigned char *buf,
                      lw_cfi_cur *out) {
    uint32_t len;
    if (rd(ctx, addr, &len, 4) != 0 || len == 0 || len == 0xffffffffu || len > ENTRY_MAX) return -1;
    if (rd(ctx, addr + 4, buf, len) != 0) return -1;
    *out = lw_cfi_cur_at(buf, len, addr + 4);
    return 0;
}

typedef struct {
    lw_callchain_read_fn rd;
    void *ctx;
} reader;

static int hdr_entry(void *ctx, uint64_t addr, int32_t e[2]) {
    const reader *r = ctx;
    return r->rd(r->ctx, addr, e, 2 * sizeof *e);
}

/* The FDE that covers pc, from .eh_frame_hdr's sorted table: its address. */
static int find_fde(lw_callchain_read_fn rd, void *ctx, uint64_t hdr, uint64_t pc, uint64_t *fde) {
    unsigned char h[LW_CFI_HDR_HEAD];
    lw_cfi_hdr t;
    reader r = {rd, ctx};
    if (rd(ctx, hdr, h, sizeof h) != 0 || lw_cfi_hdr_parse(h, hdr, &t) != 0) return -1;
    return lw_cfi_hdr_find(&t, hdr, pc, hdr_entry, &r, fde);
}

/* The rules at pc, from its FDE and that FDE's CIE. */
static int rules_at(lw_callchain_read_fn rd, void *ctx, uint64_t fde_addr, uint64_t pc,
                    lw_cfi_cie *ci, lw_cfi_row *r) {
    unsigned char fbuf[ENTRY_MAX], cbuf[ENTRY_MAX];
    lw_cfi_cur f, c;
    if (read_entry(rd, ctx, fde_addr, fbuf, &f) != 0) return -1;
    uint64_t id_at = lw_cfi_addr(&f);
    uint32_t cie_ptr = (uint32_t)lw_cfi_fixed(&f, 4);
    if (!cie_ptr) return -1; /* a CIE, not an FDE */
    if (read_entry(rd, ctx, id_at - cie_ptr, cbuf, &c) != 0 || lw_cfi_parse_cie(c, ci) != 0 ||
        ci->ra_reg >= LW_CFI_NREGS)
        return -1;
    uint64_t start;
    if (lw_cfi_parse_fde(&f, ci, pc, &start) != 0) return -1;
    lw_cfi_row none, init;
    lw_cfi_row_init(&none, LW_CFI_CFA_EXPR);
    init = none;
    lw_cfi_cur insns = ci->insns;
    if (lw_cfi_run(&insns, ci, start, UINT64_MAX, &init, &none) != 0) return -1;
    *r = init;
    return lw_cfi_run(&f, ci, start, pc, r, &init);
}

void lw_callchain_walk(pid_t pid, lw_callchain_read_fn rd, void *ctx,
                       const uint64_t regs[LW_CALLCHAIN_NREGS], uint64_t pc, int sp_reg, int ra_reg,
                       uint64_t stack_lo, uint64_t stack_hi, lw_callchain *out) {
    uint64_t cur[LW_CALLCHAIN_NREGS];
    int known[LW_CALLCHAIN_NREGS];
    for (int i = 0; i < LW_CALLCHAIN_NREGS; i++) {
        cur[i] = regs[i];
        known[i] = 1;
    }
    out->n = 0;
    out->complete = 0;
    out->stop_sp = cur[sp_reg];
    /* The innermost frame is where the thread stopped (a system call's
     * return address, in the middle of its function); the others are after
     * a call: looked up one byte before, inside the call. */
    uint64_t look = pc;
    segments segs;
    load_segments(pid, &segs);
    while (out->n < MAX_FRAMES) {
        uint64_t hdr, fde;
        lw_cfi_cie ci;
        lw_cfi_row r;
        if (module_hdr(&segs, rd, ctx, look, &hdr) != 0 ||
            find_fde(rd, ctx, hdr, look, &fde) != 0 || rules_at(rd, ctx, fde, look, &ci, &r) != 0 ||
            ci.ra_reg != (uint64_t)ra_reg)
            break;
        if (r.how[ra_reg] == LW_CFI_UNDEF) { /* the outermost frame (_start, a thread's start) */
            out->complete = 1;
            break;
        }
        if (r.cfa_reg < 0 || r.cfa_reg >= LW_CALLCHAIN_NREGS || !known[r.cfa_reg]) break;
        uint64_t cfa = cur[r.cfa_reg] + (uint64_t)r.cfa_off;
        if (cfa <= cur[sp_reg] || cfa > stack_hi || cfa < stack_lo) break;
        uint64_t next[LW_CALLCHAIN_NREGS];
        int next_known[LW_CALLCHAIN_NREGS];
        for (int i = 0; i < LW_CALLCHAIN_NREGS; i++) {
            next[i] = cur[i];
            next_known[i] = known[i];
            switch (r.how[i]) {
            case LW_CFI_SAME:
                break;
            case LW_CFI_UNDEF:
            case LW_CFI_UNKNOWN:
                next_known[i] = 0;
                break;
            case LW_CFI_OFFSET:
                if (rd(ctx, cfa + (uint64_t)r.arg[i], &next[i], 8) != 0) next_known[i] = 0;
                break;
            case LW_CFI_VAL_OFFSET:
                next[i] = cfa + (uint64_t)r.arg[i];
                break;
            case LW_CFI_REG:
                if (r.arg[i] < 0 || r.arg[i] >= LW_CALLCHAIN_NREGS) {
                    next_known[i] = 0;
                } else {
                    next[i] = cur[r.arg[i]];
                    next_known[i] = known[r.arg[i]];
                }
                break;
            }
        }
        if (!next_known[ra_reg]) break;
        next[sp_reg] = cfa;
        next_known[sp_reg] = 1;
        if (!next[ra_reg]) {
            out->complete = 1;
            break;
        }
        out->ra[out->n++] = next[ra_reg];
        memcpy(cur, next, sizeof cur);
        memcpy(known, next_known, sizeof known);
        out->stop_sp = cfa;
        look = next[ra_reg] - 1;
    }
    free(segs.v);
}
