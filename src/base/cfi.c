/* SPDX-License-Identifier: Apache-2.0 */
/* DWARF call frame information, the byte-level format (cfi.h). */
#include "cfi.h"

#include <string.h>

/* ---- the cursor ---- */
uint8_t lw_cfi_u8(lw_cfi_cur *c) {
    if (c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    return *c->p++;
}

uint64_t lw_cfi_fixed(lw_cfi_cur *c, size_t n) {
    if ((size_t)(c->end - c->p) < n || n > 8) {
        c->bad = 1;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian */
    c->p += n;
    return v;
}

/* LEB128's value bits (those past the 64th dropped); *shift: how many the
 * bytes held, *last: the last byte (its 0x40 is a signed number's sign). */
static uint64_t leb128(lw_cfi_cur *c, unsigned *shift, uint8_t *last) {
    uint64_t v = 0;
    uint8_t b;
    *shift = 0;
    do {
        b = lw_cfi_u8(c);
        if (*shift < 64) v |= (uint64_t)(b & 0x7f) << *shift;
        *shift += 7;
    } while ((b & 0x80) && !c->bad);
    *last = b;
    return v;
}

uint64_t lw_cfi_uleb(lw_cfi_cur *c) {
    unsigned shift;
    uint8_t last;
    return leb128(c, &shift, &last);
}

int64_t lw_cfi_sleb(lw_cfi_cur *c) {
    unsigned shift;
    uint8_t last;
    uint64_t v = leb128(c, &shift, &last);
    if (shift < 64 && (last & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

void lw_cfi_skip(lw_cfi_cur *c, uint64_t n) {
    if ((uint64_t)(c->end - c->p) < n) {
        c->bad = 1;
        c->p = c->end;
        return;
    }
    c->p += n;
}

uint64_t lw_cfi_enc_ptr(lw_cfi_cur *c, uint8_t enc, uint64_t data_base) {
    if (enc == LW_DW_EH_PE_OMIT) return 0;
    uint64_t at = lw_cfi_addr(c), v;
    switch (enc & 0x0f) {
    case LW_DW_EH_PE_ABS:
    case LW_DW_EH_PE_U8:
    case LW_DW_EH_PE_S8:
        v = lw_cfi_fixed(c, 8);
        break;
    case LW_DW_EH_PE_ULEB:
        v = lw_cfi_uleb(c);
        break;
    case LW_DW_EH_PE_SLEB:
        v = (uint64_t)lw_cfi_sleb(c);
        break;
    case LW_DW_EH_PE_U2:
        v = lw_cfi_fixed(c, 2);
        break;
    case LW_DW_EH_PE_S2:
        v = (uint64_t)(int64_t)(int16_t)lw_cfi_fixed(c, 2);
        break;
    case LW_DW_EH_PE_U4:
        v = lw_cfi_fixed(c, 4);
        break;
    case LW_DW_EH_PE_S4:
        v = (uint64_t)(int64_t)(int32_t)lw_cfi_fixed(c, 4);
        break;
    default:
        c->bad = 1;
        return 0;
    }
    switch (enc & 0x70) {
    case 0:
        break;
    case LW_DW_EH_PE_PCREL:
        v += at;
        break;
    case LW_DW_EH_PE_DATAREL:
        v += data_base;
        break;
    default:
        c->bad = 1;
        return 0;
    }
    if (enc & LW_DW_EH_PE_INDIRECT) c->bad = 1;
    return v;
}

/* ---- CIE and FDE ---- */
int lw_cfi_parse_cie(lw_cfi_cur c, lw_cfi_cie *ci) {
    if (lw_cfi_fixed(&c, 4) != 0 || c.bad) return -1; /* CIE id */
    uint8_t version = lw_cfi_u8(&c);
    if (version != 1 && version != 3) return -1;
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(c.end - c.p));
    if (alen == (size_t)(c.end - c.p)) return -1;
    c.p += alen + 1;
    if (aug[0] == 'e' && aug[1] == 'h') { /* GCC 2's: a pointer follows */
        (void)lw_cfi_fixed(&c, 8);
        aug += 2;
    }
    ci->code_align = lw_cfi_uleb(&c);
    ci->data_align = lw_cfi_sleb(&c);
    ci->ra_reg = version == 1 ? lw_cfi_u8(&c) : lw_cfi_uleb(&c);
    ci->fde_enc = LW_DW_EH_PE_ABS;
    ci->signal = 0;
    ci->has_z = aug[0] == 'z';
    if (ci->has_z) {
        uint64_t n = lw_cfi_uleb(&c);
        if (c.bad || (uint64_t)(c.end - c.p) < n) return -1;
        lw_cfi_cur a = c;
        a.end = c.p + n;
        c.p += n;
        for (const char *s = aug + 1; *s; s++) {
            switch (*s) {
            case 'R':
                ci->fde_enc = lw_cfi_u8(&a);
                break;
            case 'P': { /* the personality routine: read past */
                uint8_t enc = lw_cfi_u8(&a);
                (void)lw_cfi_enc_ptr(&a, (uint8_t)(enc & ~LW_DW_EH_PE_INDIRECT), 0);
                break;
            }
            case 'L':
                (void)lw_cfi_u8(&a);
                break;
            case 'S':
                ci->signal = 1;
                break;
            case 'B': /* AArch64: return addresses signed with the B key */
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
    ci->insns = c;
    return 0;
}

int lw_cfi_parse_fde(lw_cfi_cur *c, const lw_cfi_cie *ci, uint64_t pc, uint64_t *start) {
    uint64_t s = lw_cfi_enc_ptr(c, ci->fde_enc, 0);
    uint64_t range = lw_cfi_enc_ptr(c, (uint8_t)(ci->fde_enc & 0x0f), 0);
    if (c->bad || pc < s || pc - s >= range) return -1;
    /* Augmentation data ('z' CIEs have a length first; the others carry
     * none that is parsed). */
    if (ci->has_z) {
        uint64_t n = lw_cfi_uleb(c);
        if (c->bad || (uint64_t)(c->end - c->p) < n) return -1;
        c->p += n;
    }
    *start = s;
    return 0;
}

/* ---- rows ---- */
void lw_cfi_row_init(lw_cfi_row *r, int cfa_reg) {
    memset(r, 0, sizeof *r); /* LW_CFI_SAME is 0 */
    r->cfa_reg = cfa_reg;
}

static void set_rule(lw_cfi_row *r, uint64_t reg, uint8_t how, int64_t arg) {
    if (reg < LW_CFI_NREGS) {
        r->how[reg] = how;
        r->arg[reg] = arg;
    }
}

int lw_cfi_run(lw_cfi_cur *c, const lw_cfi_cie *ci, uint64_t loc, uint64_t pc, lw_cfi_row *r,
               const lw_cfi_row *init) {
    enum { STACK = 8 };
    lw_cfi_row saved[STACK];
    int depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = lw_cfi_u8(c);
        uint64_t reg, delta;
        switch (op & 0xc0) {
        case 0x40: /* advance_loc */
            delta = (op & 0x3f) * ci->code_align;
            goto advance;
        case 0x80: /* offset */
            set_rule(r, op & 0x3f, LW_CFI_OFFSET, (int64_t)lw_cfi_uleb(c) * ci->data_align);
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
            delta = lw_cfi_enc_ptr(c, ci->fde_enc, 0);
            if (delta <= loc) return -1;
            if (delta > pc) return 0;
            loc = delta;
            continue;
        case 0x02: /* advance_loc1 */
            delta = lw_cfi_fixed(c, 1) * ci->code_align;
            goto advance;
        case 0x03: /* advance_loc2 */
            delta = lw_cfi_fixed(c, 2) * ci->code_align;
            goto advance;
        case 0x04: /* advance_loc4 */
            delta = lw_cfi_fixed(c, 4) * ci->code_align;
            goto advance;
        case 0x05: /* offset_extended */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_OFFSET, (int64_t)lw_cfi_uleb(c) * ci->data_align);
            continue;
        case 0x06: /* restore_extended */
            reg = lw_cfi_uleb(c);
            goto restore;
        case 0x07: /* undefined */
            set_rule(r, lw_cfi_uleb(c), LW_CFI_UNDEF, 0);
            continue;
        case 0x08: /* same_value */
            set_rule(r, lw_cfi_uleb(c), LW_CFI_SAME, 0);
            continue;
        case 0x09: /* register */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_REG, (int64_t)lw_cfi_uleb(c));
            continue;
        case 0x0a: /* remember_state */
            if (depth == STACK) return -1;
            saved[depth++] = *r;
            continue;
        case 0x0b: /* restore_state: the CFA rule too (DWARF 5; GCC's epilogues) */
            if (depth == 0) return -1;
            *r = saved[--depth];
            continue;
        case 0x0c: /* def_cfa */
            r->cfa_reg = (int)lw_cfi_uleb(c);
            r->cfa_off = (int64_t)lw_cfi_uleb(c);
            continue;
        case 0x0d: /* def_cfa_register */
            r->cfa_reg = (int)lw_cfi_uleb(c);
            continue;
        case 0x0e: /* def_cfa_offset */
            r->cfa_off = (int64_t)lw_cfi_uleb(c);
            continue;
        case 0x0f: /* def_cfa_expression */
            delta = lw_cfi_uleb(c);
            if ((uint64_t)(c->end - c->p) < delta) return -1;
            c->p += delta;
            r->cfa_reg = LW_CFI_CFA_EXPR;
            continue;
        case 0x10: /* expression */
        case 0x16: /* val_expression */
            reg = lw_cfi_uleb(c);
            delta = lw_cfi_uleb(c);
            if ((uint64_t)(c->end - c->p) < delta) return -1;
            c->p += delta;
            set_rule(r, reg, LW_CFI_UNKNOWN, 0);
            continue;
        case 0x11: /* offset_extended_sf */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_OFFSET, lw_cfi_sleb(c) * ci->data_align);
            continue;
        case 0x12: /* def_cfa_sf */
            r->cfa_reg = (int)lw_cfi_uleb(c);
            r->cfa_off = lw_cfi_sleb(c) * ci->data_align;
            continue;
        case 0x13: /* def_cfa_offset_sf */
            r->cfa_off = lw_cfi_sleb(c) * ci->data_align;
            continue;
        case 0x14: /* val_offset */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_VAL_OFFSET, (int64_t)lw_cfi_uleb(c) * ci->data_align);
            continue;
        case 0x15: /* val_offset_sf */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_VAL_OFFSET, lw_cfi_sleb(c) * ci->data_align);
            continue;
        case 0x2e: /* GNU_args_size */
            (void)lw_cfi_uleb(c);
            continue;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = lw_cfi_uleb(c);
            set_rule(r, reg, LW_CFI_OFFSET, -(int64_t)lw_cfi_uleb(c) * ci->data_align);
            continue;
        default:
            return -1;
        }
    advance:
        if (loc + delta > pc) return 0;
        loc += delta;
        continue;
    restore:
        if (reg < LW_CFI_NREGS) set_rule(r, reg, init->how[reg], init->arg[reg]);
    }
    return c->bad ? -1 : 0;
}

/* ---- .eh_frame_hdr ---- */
int lw_cfi_hdr_parse(const uint8_t *h, uint64_t hdr, lw_cfi_hdr *out) {
    if (h[0] != 1) return -1;
    uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
    if (table_enc != (LW_DW_EH_PE_DATAREL | LW_DW_EH_PE_S4) || count_enc == LW_DW_EH_PE_OMIT)
        return -1;
    lw_cfi_cur c = lw_cfi_cur_at(h + 4, LW_CFI_HDR_HEAD - 4, hdr + 4);
    (void)lw_cfi_enc_ptr(&c, ptr_enc, hdr); /* eh_frame_ptr */
    uint64_t count = lw_cfi_enc_ptr(&c, count_enc, hdr);
    if (c.bad || count == 0 || count > (1u << 28)) return -1;
    out->table = lw_cfi_addr(&c);
    out->count = count;
    return 0;
}

int lw_cfi_hdr_find(const lw_cfi_hdr *t, uint64_t hdr, uint64_t pc, lw_cfi_entry_fn rd, void *ctx,
                    uint64_t *fde) {
    int64_t rel = (int64_t)(pc - hdr);
    uint64_t lo = 0, hi = t->count;
    int32_t e[2];
    while (hi - lo > 1) { /* the last entry whose start is <= pc */
        uint64_t mid = lo + (hi - lo) / 2;
        if (rd(ctx, t->table + mid * 8, e) != 0) return -1;
        if (e[0] <= rel)
            lo = mid;
        else
            hi = mid;
    }
    if (rd(ctx, t->table + lo * 8, e) != 0 || e[0] > rel) return -1;
    *fde = hdr + (uint64_t)(int64_t)e[1];
    return 0;
}
