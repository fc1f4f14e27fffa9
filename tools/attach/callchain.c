/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach: a stopped thread's call chain (callchain.h). Only what
 * compilers and the C library write in .eh_frame is followed: a rule it
 * does not know (a DWARF expression: the PLT's, a signal frame's) ends the
 * walk there, incomplete, and the caller treats the rest of the stack as
 * before (every word that could be a return address is taken for one). */
#include "callchain.h"

#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES ((int)(sizeof(((lw_callchain *)0)->ra) / sizeof(uint64_t)))
#define ENTRY_MAX 4096 /* a CIE's or FDE's bytes */
#define STATE_DEPTH 8

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

/* ---- reading DWARF ---- */
typedef struct {
    const unsigned char *p, *end;
    uint64_t addr; /* the target's address of p */
    int bad;
} cursor;

static uint64_t u8_(cursor *c) {
    if (c->p >= c->end) {
        c->bad = 1;
        return 0;
    }
    c->addr++;
    return *c->p++;
}

static uint64_t fixed(cursor *c, size_t n) {
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little endian */
    c->p += n;
    c->addr += n;
    return v;
}

static uint64_t uleb(cursor *c) {
    uint64_t v = 0;
    for (int s = 0; s < 64; s += 7) {
        uint64_t b = u8_(c);
        v |= (b & 0x7f) << s;
        if (!(b & 0x80)) return v;
    }
    c->bad = 1;
    return v;
}

static int64_t sleb(cursor *c) {
    uint64_t v = 0, b = 0;
    int s = 0;
    do {
        b = u8_(c);
        if (s < 64) v |= (b & 0x7f) << s;
        s += 7;
    } while ((b & 0x80) && !c->bad && s < 70);
    if (s < 64 && (b & 0x40)) v |= ~(uint64_t)0 << s;
    return (int64_t)v;
}

/* A pointer in the encoding enc (DW_EH_PE_*); data_base for datarel. */
static uint64_t enc_ptr(cursor *c, int enc, uint64_t data_base) {
    if (enc == 0xff) return 0; /* omit */
    uint64_t at = c->addr, v;
    switch (enc & 0x0f) {
    case 0x00:
        v = fixed(c, 8);
        break;
    case 0x01:
        v = uleb(c);
        break;
    case 0x02:
        v = fixed(c, 2);
        break;
    case 0x03:
        v = fixed(c, 4);
        break;
    case 0x04:
        v = fixed(c, 8);
        break;
    case 0x09:
        v = (uint64_t)sleb(c);
        break;
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)fixed(c, 2);
        break;
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)fixed(c, 4);
        break;
    case 0x0c:
        v = fixed(c, 8);
        break;
    default:
        c->bad = 1;
        return 0;
    }
    switch (enc & 0x70) {
    case 0x00:
        break;
    case 0x10:
        v += at;
        break;
    case 0x30:
        v += data_base;
        break;
    default:
        c->bad = 1;
        return 0;
    }
    if (enc & 0x80) c->bad = 1; /* indirect: not for code addresses */
    return v;
}

/* One CIE or FDE at addr, read into buf: its body (after the length). */
static int read_entry(lw_callchain_read_fn rd, void *ctx, uint64_t addr, unsigned char *buf,
                      cursor *out) {
    uint32_t len;
    if (rd(ctx, addr, &len, 4) != 0 || len == 0 || len == 0xffffffffu || len > ENTRY_MAX) return -1;
    if (rd(ctx, addr + 4, buf, len) != 0) return -1;
    out->p = buf;
    out->end = buf + len;
    out->addr = addr + 4;
    out->bad = 0;
    return 0;
}

/* The FDE that covers pc, from .eh_frame_hdr's sorted table: its address. */
static int find_fde(lw_callchain_read_fn rd, void *ctx, uint64_t hdr, uint64_t pc, uint64_t *fde) {
    unsigned char h[4];
    if (rd(ctx, hdr, h, 4) != 0 || h[0] != 1) return -1;
    unsigned char rest[16];
    if (rd(ctx, hdr + 4, rest, sizeof rest) != 0) return -1;
    cursor c = {rest, rest + sizeof rest, hdr + 4, 0};
    enc_ptr(&c, h[1], hdr); /* eh_frame_ptr */
    uint64_t count = enc_ptr(&c, h[2], hdr);
    if (c.bad || h[3] != 0x3b || !count || count > (1u << 24)) return -1; /* datarel sdata4 */
    uint64_t table = c.addr, lo = 0, hi = count;
    while (hi - lo > 1) { /* the last entry whose start is <= pc */
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t e[2];
        if (rd(ctx, table + mid * 8, e, sizeof e) != 0) return -1;
        if (hdr + (uint64_t)(int64_t)e[0] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    int32_t e[2];
    if (rd(ctx, table + lo * 8, e, sizeof e) != 0 || hdr + (uint64_t)(int64_t)e[0] > pc) return -1;
    *fde = hdr + (uint64_t)(int64_t)e[1];
    return 0;
}

/* ---- the rules ---- */
enum { R_SAME, R_UNDEF, R_OFFSET, R_VAL_OFFSET, R_REG, R_UNKNOWN };
typedef struct {
    int how[LW_CALLCHAIN_NREGS];
    int64_t arg[LW_CALLCHAIN_NREGS];
    int cfa_reg; /* -1: an expression (not followed) */
    int64_t cfa_off;
} rules;

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    int ra_reg, fde_enc;
} cie_info;

static void set_rule(rules *r, uint64_t reg, int how, int64_t arg) {
    if (reg < LW_CALLCHAIN_NREGS) {
        r->how[reg] = how;
        r->arg[reg] = arg;
    }
}

/* Runs the instructions of c up to the one that applies at pc (loc: where
 * they start). -1 on one it does not know. */
static int run_cfa(cursor *c, const cie_info *ci, const rules *initial, rules *r, uint64_t loc,
                   uint64_t pc) {
    rules stack[STATE_DEPTH];
    int depth = 0;
    while (c->p < c->end && !c->bad) {
        unsigned op = (unsigned)u8_(c), low = op & 0x3f;
        uint64_t reg, delta = 0;
        switch (op & 0xc0) {
        case 0x40:
            delta = low * ci->code_align;
            goto advance;
        case 0x80:
            set_rule(r, low, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
            continue;
        case 0xc0:
            if (low < LW_CALLCHAIN_NREGS) set_rule(r, low, initial->how[low], initial->arg[low]);
            continue;
        default:
            break;
        }
        switch (op) {
        case 0x00:
            continue; /* nop */
        case 0x01:
            return -1; /* set_loc: not written by compilers for .eh_frame */
        case 0x02:
            delta = fixed(c, 1) * ci->code_align;
            goto advance;
        case 0x03:
            delta = fixed(c, 2) * ci->code_align;
            goto advance;
        case 0x04:
            delta = fixed(c, 4) * ci->code_align;
            goto advance;
        case 0x05:
            reg = uleb(c);
            set_rule(r, reg, R_OFFSET, (int64_t)uleb(c) * ci->data_align);
            continue;
        case 0x06:
            reg = uleb(c);
            if (reg < LW_CALLCHAIN_NREGS) set_rule(r, reg, initial->how[reg], initial->arg[reg]);
            continue;
        case 0x07:
            set_rule(r, uleb(c), R_UNDEF, 0);
            continue;
        case 0x08:
            set_rule(r, uleb(c), R_SAME, 0);
            continue;
        case 0x09:
            reg = uleb(c);
            set_rule(r, reg, R_REG, (int64_t)uleb(c));
            continue;
        case 0x0a:
            if (depth == STATE_DEPTH) return -1;
            stack[depth++] = *r;
            continue;
        case 0x0b: /* the CFA's rule comes back too (DWARF 5; GCC's epilogues) */
            if (!depth) return -1;
            *r = stack[--depth];
            continue;
        case 0x0c:
            r->cfa_reg = (int)uleb(c);
            r->cfa_off = (int64_t)uleb(c);
            continue;
        case 0x0d:
            r->cfa_reg = (int)uleb(c);
            continue;
        case 0x0e:
            r->cfa_off = (int64_t)uleb(c);
            continue;
        case 0x0f: { /* def_cfa_expression */
            uint64_t n = uleb(c);
            r->cfa_reg = -1;
            if (n > (uint64_t)(c->end - c->p)) return -1;
            c->p += n;
            c->addr += n;
            continue;
        }
        case 0x10:
        case 0x16: { /* expression, val_expression: the register is unknown */
            reg = uleb(c);
            uint64_t n = uleb(c);
            set_rule(r, reg, R_UNKNOWN, 0);
            if (n > (uint64_t)(c->end - c->p)) return -1;
            c->p += n;
            c->addr += n;
            continue;
        }
        case 0x11:
            reg = uleb(c);
            set_rule(r, reg, R_OFFSET, sleb(c) * ci->data_align);
            continue;
        case 0x12:
            r->cfa_reg = (int)uleb(c);
            r->cfa_off = sleb(c) * ci->data_align;
            continue;
        case 0x13:
            r->cfa_off = sleb(c) * ci->data_align;
            continue;
        case 0x14:
            reg = uleb(c);
            set_rule(r, reg, R_VAL_OFFSET, (int64_t)uleb(c) * ci->data_align);
            continue;
        case 0x15:
            reg = uleb(c);
            set_rule(r, reg, R_VAL_OFFSET, sleb(c) * ci->data_align);
            continue;
        case 0x2e:
            uleb(c);
            continue; /* GNU_args_size */
        case 0x2f:
            reg = uleb(c);
            set_rule(r, reg, R_OFFSET, -(int64_t)uleb(c) * ci->data_align);
            continue;
        default:
            return -1;
        }
    advance:
        loc += delta;
        if (loc > pc) return 0;
    }
    return c->bad ? -1 : 0;
}

/* The rules at pc, from its FDE and that FDE's CIE. */
static int rules_at(lw_callchain_read_fn rd, void *ctx, uint64_t fde_addr, uint64_t pc,
                    cie_info *ci, rules *r) {
    unsigned char fbuf[ENTRY_MAX], cbuf[ENTRY_MAX];
    cursor f;
    if (read_entry(rd, ctx, fde_addr, fbuf, &f) != 0) return -1;
    uint64_t id_at = f.addr;
    uint32_t cie_ptr = (uint32_t)fixed(&f, 4);
    if (!cie_ptr) return -1; /* a CIE, not an FDE */
    cursor c;
    if (read_entry(rd, ctx, id_at - cie_ptr, cbuf, &c) != 0 || fixed(&c, 4) != 0) return -1;
    int version = (int)u8_(&c);
    const char *aug = (const char *)c.p;
    size_t alen = strnlen(aug, (size_t)(c.end - c.p));
    if (alen == (size_t)(c.end - c.p)) return -1;
    c.p += alen + 1;
    c.addr += alen + 1;
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? (int)u8_(&c) : (int)uleb(&c);
    ci->fde_enc = 0;
    int has_z = aug[0] == 'z';
    if (has_z) {
        uint64_t n = uleb(&c);
        const unsigned char *end = c.p + n;
        if (n > (uint64_t)(c.end - c.p)) return -1;
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R')
                ci->fde_enc = (int)u8_(&c);
            else if (*a == 'L')
                u8_(&c);
            else if (*a == 'P') {
                int penc = (int)u8_(&c);
                enc_ptr(&c, penc & 0x7f, 0);
            } else if (*a == 'S' || *a == 'B')
                ;
            else
                return -1;
        }
        c.addr += (uint64_t)(end - c.p);
        c.p = end;
    } else if (aug[0]) {
        return -1;
    }
    if (c.bad || ci->ra_reg >= LW_CALLCHAIN_NREGS) return -1;
    uint64_t start = enc_ptr(&f, ci->fde_enc, 0);
    uint64_t range = enc_ptr(&f, ci->fde_enc & 0x0f, 0);
    if (f.bad || pc < start || pc >= start + range) return -1;
    if (has_z) {
        uint64_t n = uleb(&f);
        if (n > (uint64_t)(f.end - f.p)) return -1;
        f.p += n;
        f.addr += n;
    }
    rules init;
    for (int i = 0; i < LW_CALLCHAIN_NREGS; i++) {
        init.how[i] = R_SAME;
        init.arg[i] = 0;
    }
    init.cfa_reg = -1;
    init.cfa_off = 0;
    rules none = init;
    if (run_cfa(&c, ci, &none, &init, start, UINT64_MAX) != 0) return -1;
    *r = init;
    return run_cfa(&f, ci, &init, r, start, pc);
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
        cie_info ci;
        rules r;
        if (module_hdr(&segs, rd, ctx, look, &hdr) != 0 ||
            find_fde(rd, ctx, hdr, look, &fde) != 0 || rules_at(rd, ctx, fde, look, &ci, &r) != 0 ||
            ci.ra_reg != ra_reg)
            break;
        if (r.how[ra_reg] == R_UNDEF) { /* the outermost frame (_start, a thread's start) */
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
            case R_SAME:
                break;
            case R_UNDEF:
            case R_UNKNOWN:
                next_known[i] = 0;
                break;
            case R_OFFSET:
                if (rd(ctx, cfa + (uint64_t)r.arg[i], &next[i], 8) != 0) next_known[i] = 0;
                break;
            case R_VAL_OFFSET:
                next[i] = cfa + (uint64_t)r.arg[i];
                break;
            case R_REG:
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
