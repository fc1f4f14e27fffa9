/* SPDX-License-Identifier: Apache-2.0 */
/* Unwind rules from DWARF call frame information (see unwind.h).
 *
 * Only what the fast walk in stack.c can use is interpreted: the CFA as
 * sp/fp + offset, the frame pointer's and the return address's "saved at
 * CFA + n" rules. The object holding an address is found with glibc's
 * _dl_find_object (lock-free, 2.35+) or dl_iterate_phdr; its FDE with the
 * binary search table of .eh_frame_hdr. Every read stays inside the FDE and
 * CIE being parsed (lengths are checked), so a corrupt table gives
 * LW_UNW_FAIL, not a fault. */
#include "unwind.h"

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

/* ---- readers bounded by [p, end) ---- */
typedef struct {
    const uint8_t *p, *end;
    int bad;
} cur;

static uint8_t rd8(cur *c) {
    if (c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}
static uint64_t rdn(cur *c, int n) {
    if (c->end - c->p < n) {
        c->bad = 1;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, (size_t)n); /* little-endian: x86-64 only here */
    c->p += n;
    return v;
}
static uint64_t uleb(cur *c) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = rd8(c);
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while ((b & 0x80) && !c->bad);
    return v;
}
static int64_t sleb(cur *c) {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = rd8(c);
        if (shift < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    } while ((b & 0x80) && !c->bad);
    if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
    return v;
}

/* DW_EH_PE_* pointer encodings. */
enum {
    PE_ABS = 0x00,
    PE_ULEB = 0x01,
    PE_U2 = 0x02,
    PE_U4 = 0x03,
    PE_U8 = 0x04,
    PE_SLEB = 0x09,
    PE_S2 = 0x0a,
    PE_S4 = 0x0b,
    PE_S8 = 0x0c,
    PE_PCREL = 0x10,
    PE_DATAREL = 0x30,
    PE_INDIRECT = 0x80,
    PE_OMIT = 0xff,
};

/* Reads a pointer encoded with enc; base is the section start for
 * DW_EH_PE_datarel. Indirect pointers are refused (never used for FDE
 * addresses in practice). */
static uintptr_t rd_enc(cur *c, uint8_t enc, uintptr_t datarel) {
    if (enc == PE_OMIT) return 0;
    uintptr_t at = (uintptr_t)c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case PE_ABS:
    case PE_U8:
    case PE_S8:
        v = rdn(c, 8);
        break;
    case PE_ULEB:
        v = uleb(c);
        break;
    case PE_SLEB:
        v = (uint64_t)sleb(c);
        break;
    case PE_U2:
        v = rdn(c, 2);
        break;
    case PE_S2:
        v = (uint64_t)(int64_t)(int16_t)rdn(c, 2);
        break;
    case PE_U4:
        v = rdn(c, 4);
        break;
    case PE_S4:
        v = (uint64_t)(int64_t)(int32_t)rdn(c, 4);
        break;
    default:
        c->bad = 1;
        return 0;
    }
    switch (enc & 0x70) {
    case 0:
        break;
    case PE_PCREL:
        v += at;
        break;
    case PE_DATAREL:
        v += datarel;
        break;
    default:
        c->bad = 1;
        return 0;
    }
    if (enc & PE_INDIRECT) c->bad = 1;
    return (uintptr_t)v;
}

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
    dl_iterate_phdr(phdr_cb, &pf);
    return pf.hdr;
}

/* ---- CFA programs ---- */
enum { R_UNDEF = 0, R_SAME, R_OFFSET, R_OTHER };
typedef struct {
    int64_t cfa_off;
    int cfa_reg; /* -1: an expression */
    uint8_t fp_how, ra_how;
    int64_t fp_off, ra_off;
} row;

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int signal, has_z;
    const uint8_t *insns, *end;
} cie_info;

static void set_reg(row *r, uint64_t reg, uint8_t how, int64_t off) {
    if (reg == LW_DW_REG_FP) {
        r->fp_how = how;
        r->fp_off = off;
    } else if (reg == LW_DW_REG_RA) {
        r->ra_how = how;
        r->ra_off = off;
    }
}

/* Runs a CFA program over *r until the row for pc; the CIE's initial row is
 * `init` (for DW_CFA_restore). Returns -1 on anything malformed. */
static int run_cfa(cur *c, const cie_info *ci, uintptr_t loc, uintptr_t pc, row *r,
                   const row *init) {
    enum { STACK = 8 };
    row saved[STACK];
    int depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = rd8(c);
        uint64_t reg, delta;
        switch (op & 0xc0) {
        case 0x40: /* advance_loc */
            delta = (op & 0x3f) * ci->code_align;
            goto advance;
        case 0x80: /* offset */
            set_reg(r, op & 0x3f, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
            continue;
        case 0xc0: /* restore */
            reg = op & 0x3f;
            goto restore;
        default:
            break;
        }
        switch (op) {
        case 0x00: /* nop */
            continue;
        case 0x01: /* set_loc */
            delta = rd_enc(c, ci->fde_enc, 0);
            if (delta <= loc) return -1;
            if (delta > pc) return 0;
            loc = delta;
            continue;
        case 0x02:
            delta = rdn(c, 1) * ci->code_align;
            goto advance;
        case 0x03:
            delta = rdn(c, 2) * ci->code_align;
            goto advance;
        case 0x04:
            delta = rdn(c, 4) * ci->code_align;
            goto advance;
        case 0x05: /* offset_extended */
            reg = uleb(c);
            set_reg(r, reg, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
            continue;
        case 0x06: /* restore_extended */
            reg = uleb(c);
            goto restore;
        case 0x07: /* undefined */
            set_reg(r, uleb(c), R_UNDEF, 0);
            continue;
        case 0x08: /* same_value */
            set_reg(r, uleb(c), R_SAME, 0);
            continue;
        case 0x09: /* register */
            reg = uleb(c);
            (void)uleb(c);
            set_reg(r, reg, R_OTHER, 0);
            continue;
        case 0x0a: /* remember_state */
            if (depth == STACK) return -1;
            saved[depth++] = *r;
            continue;
        case 0x0b: /* restore_state: the CFA rule too, as GCC's epilogues expect */
            if (depth == 0) return -1;
            *r = saved[--depth];
            continue;
        case 0x0c: /* def_cfa */
            r->cfa_reg = (int)uleb(c);
            r->cfa_off = (int64_t)uleb(c);
            continue;
        case 0x0d: /* def_cfa_register */
            r->cfa_reg = (int)uleb(c);
            continue;
        case 0x0e: /* def_cfa_offset */
            r->cfa_off = (int64_t)uleb(c);
            continue;
        case 0x0f: /* def_cfa_expression */
            delta = uleb(c);
            if ((uint64_t)(c->end - c->p) < delta) return -1;
            c->p += delta;
            r->cfa_reg = -1;
            continue;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = uleb(c);
            delta = uleb(c);
            if ((uint64_t)(c->end - c->p) < delta) return -1;
            c->p += delta;
            set_reg(r, reg, R_OTHER, 0);
            continue;
        case 0x11: /* offset_extended_sf */
            reg = uleb(c);
            set_reg(r, reg, R_OFFSET, sleb(c) * ci->data_align);
            continue;
        case 0x12: /* def_cfa_sf */
            r->cfa_reg = (int)uleb(c);
            r->cfa_off = sleb(c) * ci->data_align;
            continue;
        case 0x13: /* def_cfa_offset_sf */
            r->cfa_off = sleb(c) * ci->data_align;
            continue;
        case 0x14: /* val_offset */
            reg = uleb(c);
            (void)uleb(c);
            set_reg(r, reg, R_OTHER, 0);
            continue;
        case 0x15: /* val_offset_sf */
            reg = uleb(c);
            (void)sleb(c);
            set_reg(r, reg, R_OTHER, 0);
            continue;
        case 0x2e: /* GNU_args_size */
            (void)uleb(c);
            continue;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = uleb(c);
            set_reg(r, reg, R_OFFSET, -(int64_t)uleb(c) * ci->data_align);
            continue;
        default:
            return -1;
        }
    advance:
        if (loc + delta > pc) return 0;
        loc += delta;
        continue;
    restore:
        if (reg == LW_DW_REG_FP) {
            r->fp_how = init->fp_how;
            r->fp_off = init->fp_off;
        } else if (reg == LW_DW_REG_RA) {
            r->ra_how = init->ra_how;
            r->ra_off = init->ra_off;
        }
    }
    return c->bad ? -1 : 0;
}

/* Parses the CIE at p (inside .eh_frame). */
static int parse_cie(const uint8_t *p, cie_info *ci) {
    uint32_t len;
    memcpy(&len, p, 4);
    if (len == 0 || len == 0xffffffffu) return -1; /* 64-bit DWARF: never in .eh_frame */
    cur c = {p + 4, p + 4 + len, 0};
    if (rdn(&c, 4) != 0) return -1; /* CIE id */
    uint8_t version = rd8(&c);
    if (version != 1 && version != 3) return -1;
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(c.end - c.p));
    if (alen == (size_t)(c.end - c.p)) return -1;
    c.p += alen + 1;
    if (aug[0] == 'e' && aug[1] == 'h') {
        (void)rdn(&c, 8);
        aug += 2;
    }
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? rd8(&c) : uleb(&c);
    ci->fde_enc = PE_ABS;
    ci->signal = 0;
    ci->has_z = aug[0] == 'z';
    if (ci->has_z) {
        uint64_t n = uleb(&c);
        if (c.bad || (uint64_t)(c.end - c.p) < n) return -1;
        cur a = {c.p, c.p + n, 0};
        c.p += n;
        for (const char *s = aug + 1; *s; s++) {
            switch (*s) {
            case 'R':
                ci->fde_enc = rd8(&a);
                break;
            case 'P': {
                uint8_t enc = rd8(&a);
                (void)rd_enc(&a, (uint8_t)(enc & ~PE_INDIRECT), 0);
                break;
            }
            case 'L':
                (void)rd8(&a);
                break;
            case 'S':
                ci->signal = 1;
                break;
            default:
                return -1;
            }
        }
        if (a.bad) return -1;
    } else if (aug[0] != 0) {
        return -1;
    }
    if (c.bad) return -1;
    ci->insns = c.p;
    ci->end = c.end;
    return 0;
}

/* Binary search of the .eh_frame_hdr table: the FDE that may cover pc. */
static const uint8_t *find_fde(uintptr_t hdr, uintptr_t pc) {
    const uint8_t *h = (const uint8_t *)hdr;
    if (h[0] != 1) return NULL;
    uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
    /* The table's entries must be fixed-size, section-relative: what every
     * linker writes (ld, gold, lld, mold). */
    if (table_enc != (PE_DATAREL | PE_S4) || count_enc == PE_OMIT) return NULL;
    cur c = {h + 4, h + 4 + 16, 0};
    (void)rd_enc(&c, ptr_enc, hdr);
    uint64_t count = rd_enc(&c, count_enc, hdr);
    if (c.bad || count == 0 || count > (1u << 28)) return NULL;
    const int32_t *tab = (const int32_t *)(const void *)c.p;
    int64_t rel = (int64_t)(pc - hdr);
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (tab[2 * mid] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    if (tab[2 * lo] > rel) return NULL;
    return h + tab[2 * lo + 1];
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
    cie_info ci;
    if (parse_cie(fde + 4 - cie_off, &ci) != 0) return fail_rule();
    /* A signal frame's registers are in the interrupted context, not in
     * rules of this kind. */
    if (ci.signal || ci.ra_reg != LW_DW_REG_RA) return fail_rule();
    cur c = {fde + 8, fde + 4 + len, 0};
    uintptr_t start = rd_enc(&c, ci.fde_enc, 0);
    uintptr_t range = rd_enc(&c, (uint8_t)(ci.fde_enc & 0x0f), 0);
    if (c.bad || pc < start || pc - start >= range) return fail_rule();
    /* FDE augmentation data ('z' CIEs have a length first; the others carry
     * none that we parse). */
    if (ci.has_z) {
        uint64_t n = uleb(&c);
        if (c.bad || (uint64_t)(c.end - c.p) < n) return fail_rule();
        c.p += n;
    }
    row init = {.cfa_off = 0, .cfa_reg = -2, .fp_how = R_SAME, .ra_how = R_UNDEF};
    cur ic = {ci.insns, ci.end, 0};
    if (run_cfa(&ic, &ci, start, start, &init, &init) != 0) return fail_rule();
    /* The CIE program describes the row at the function's first byte: run it
     * whole (advance_loc in a CIE is not expected). */
    row r = init;
    if (run_cfa(&c, &ci, start, pc, &r, &init) != 0) return fail_rule();

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
    if (r.ra_how == R_UNDEF) {
        out.kind = LW_UNW_LAST;
    } else if (r.ra_how != R_OFFSET || r.ra_off != LW_UNW_RA_SLOT) {
        return fail_rule();
    }
    if (r.fp_how == R_OFFSET) {
        if (r.fp_off < -32768 || r.fp_off > 32767) return fail_rule();
        out.flags |= LW_UNW_FP_SAVED;
        out.fp_off = (int16_t)r.fp_off;
    } else if (r.fp_how != R_SAME) {
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
