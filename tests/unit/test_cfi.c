/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for src/base/cfi.c, the reader of DWARF call frame information
 * that the shim's fast unwinder and leakwatch attach's call chain share:
 * LEB128 at its edges, encoded pointers relative to the address the bytes
 * describe (not where the copy lies), a CIE and an FDE assembled by hand
 * whose rows are checked at each address of the function, remember/restore
 * state, an unknown opcode, and the .eh_frame_hdr binary search. */
#include "cfi.h"

#include "../check_run.h"

#include <check.h>
#include <stdint.h>
#include <string.h>

static lw_cfi_cur cur_of(const uint8_t *b, size_t n) {
    return lw_cfi_cur_at(b, n, 0x10000);
}

static uint64_t uleb_of(const uint8_t *b, size_t n, int *bad, size_t *used) {
    lw_cfi_cur c = cur_of(b, n);
    uint64_t v = lw_cfi_uleb(&c);
    *bad = c.bad;
    *used = (size_t)(c.p - b);
    return v;
}

static int64_t sleb_of(const uint8_t *b, size_t n, int *bad, size_t *used) {
    lw_cfi_cur c = cur_of(b, n);
    int64_t v = lw_cfi_sleb(&c);
    *bad = c.bad;
    *used = (size_t)(c.p - b);
    return v;
}

START_TEST(leb128_edges) {
    int bad;
    size_t used;
    static const uint8_t zero[] = {0x00}, u127[] = {0x7f}, u128[] = {0x80, 0x01},
                         u624485[] = {0xe5, 0x8e, 0x26},
                         umax[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
                         /* a padded zero, longer than 10 bytes: still 0 */
        padded[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
                         cut[] = {0x80, 0x80};
    ck_assert_uint_eq(uleb_of(zero, 1, &bad, &used), 0);
    ck_assert(!bad && used == 1);
    ck_assert_uint_eq(uleb_of(u127, 1, &bad, &used), 127);
    ck_assert_uint_eq(uleb_of(u128, 2, &bad, &used), 128);
    ck_assert(!bad && used == 2);
    ck_assert_uint_eq(uleb_of(u624485, 3, &bad, &used), 624485);
    ck_assert_uint_eq(uleb_of(umax, sizeof umax, &bad, &used), UINT64_MAX);
    ck_assert(!bad && used == sizeof umax);
    ck_assert_uint_eq(uleb_of(padded, sizeof padded, &bad, &used), 0);
    ck_assert(!bad && used == sizeof padded);
    (void)uleb_of(cut, sizeof cut, &bad, &used); /* runs off the end */
    ck_assert(bad);

    static const uint8_t m1[] = {0x7f}, m64[] = {0x40}, p63[] = {0x3f}, m128[] = {0x80, 0x7f},
                         m123456[] = {0xc0, 0xbb, 0x78},
                         smin[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f},
                         smax[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00},
                         /* -1 in 9 bytes: the sign extends from bit 63 */
        m1_9[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    ck_assert_int_eq(sleb_of(m1, 1, &bad, &used), -1);
    ck_assert_int_eq(sleb_of(m64, 1, &bad, &used), -64);
    ck_assert_int_eq(sleb_of(p63, 1, &bad, &used), 63);
    ck_assert_int_eq(sleb_of(m128, 2, &bad, &used), -128);
    ck_assert_int_eq(sleb_of(m123456, 3, &bad, &used), -123456);
    ck_assert_int_eq(sleb_of(smin, sizeof smin, &bad, &used), INT64_MIN);
    ck_assert(!bad && used == sizeof smin);
    ck_assert_int_eq(sleb_of(smax, sizeof smax, &bad, &used), INT64_MAX);
    ck_assert_int_eq(sleb_of(m1_9, sizeof m1_9, &bad, &used), -1);
    ck_assert(!bad && used == sizeof m1_9);
    (void)sleb_of(cut, sizeof cut, &bad, &used);
    ck_assert(bad);
}
END_TEST

START_TEST(encoded_pointers) {
    /* -16 as sdata4, pc-relative: relative to the described address of
     * the field (0x10000), not to where this copy lies. */
    static const uint8_t s4[] = {0xf0, 0xff, 0xff, 0xff};
    lw_cfi_cur c = cur_of(s4, 4);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_PCREL | LW_DW_EH_PE_S4, 0), 0x10000 - 16);
    ck_assert(!c.bad && c.p == s4 + 4);
    c = cur_of(s4, 4);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_DATAREL | LW_DW_EH_PE_S4, 0x5000),
                      0x5000 - 16);
    c = cur_of(s4, 4);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_U2, 0), 0xfff0);
    c = cur_of(s4, 4);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_S2, 0), (uint64_t)-16);
    c = cur_of(s4, 4);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_OMIT, 0), 0);
    ck_assert(!c.bad && c.p == s4); /* nothing read */
    /* The second byte of a 2-byte field, pc-relative: its own address. */
    c = cur_of(s4, 4);
    (void)lw_cfi_u8(&c);
    ck_assert_uint_eq(lw_cfi_enc_ptr(&c, LW_DW_EH_PE_PCREL | LW_DW_EH_PE_U2, 0), 0x10001 + 0xffff);
    /* Refused: indirect, an unknown base (textrel), too short for udata8. */
    c = cur_of(s4, 4);
    (void)lw_cfi_enc_ptr(&c, LW_DW_EH_PE_INDIRECT | LW_DW_EH_PE_PCREL | LW_DW_EH_PE_S4, 0);
    ck_assert(c.bad);
    c = cur_of(s4, 4);
    (void)lw_cfi_enc_ptr(&c, 0x20 | LW_DW_EH_PE_S4, 0);
    ck_assert(c.bad);
    c = cur_of(s4, 4);
    (void)lw_cfi_enc_ptr(&c, LW_DW_EH_PE_U8, 0);
    ck_assert(c.bad);
}
END_TEST

/* ---- a CIE and an FDE assembled by hand ---- */
#define DESCRIBED 0x400000u /* where the bytes are in the process they describe */
#define FUNC 0x401000u      /* the function the FDE covers, 32 bytes */

typedef struct {
    uint8_t b[512];
    size_t n;
} bytes;

static void put(bytes *s, const uint8_t *v, size_t n) {
    memcpy(s->b + s->n, v, n);
    s->n += n;
}
static void put32(bytes *s, uint32_t v) {
    put(s, (const uint8_t *)&v, 4);
}
/* Ends an entry begun at `at` (its length field): pads it to 4 bytes with
 * nops and writes the length. */
static void end_entry(bytes *s, size_t at) {
    while ((s->n - at) % 4)
        s->b[s->n++] = 0x00;
    uint32_t len = (uint32_t)(s->n - at - 4);
    memcpy(s->b + at, &len, 4);
}

typedef struct {
    bytes eh;
    size_t cie, fde; /* offsets of their length fields */
} frame;

/* The CIE of x86-64's compilers (CFA = rsp + 8, return address at CFA - 8)
 * and an FDE of FUNC with insns after the usual push rbp; mov rsp, rbp. */
static void assemble(frame *f, const uint8_t *insns, size_t n) {
    memset(f, 0, sizeof *f);
    bytes *s = &f->eh;
    f->cie = s->n;
    put32(s, 0);
    put32(s, 0);                                       /* CIE id */
    static const uint8_t cie[] = {1,    'z',  'R',  0, /* version, augmentation */
                                  0x01, 0x78, 0x10,    /* code 1, data -8, ra 16 */
                                  0x01, 0x1b,          /* 'R': pcrel sdata4 */
                                  0x0c, 0x07, 0x08,    /* def_cfa rsp+8 */
                                  0x90, 0x01};         /* offset r16 at cfa-8 */
    put(s, cie, sizeof cie);
    end_entry(s, f->cie);
    f->fde = s->n;
    put32(s, 0);
    put32(s, (uint32_t)(s->n - f->cie));             /* CIE pointer: back to the CIE */
    put32(s, (uint32_t)(FUNC - (DESCRIBED + s->n))); /* pc_begin, pcrel */
    put32(s, 32);                                    /* pc_range */
    s->b[s->n++] = 0;                                /* augmentation data: none */
    put(s, insns, n);
    end_entry(s, f->fde);
}

/* The row at pc, as both callers compute it: 0, or -1. */
static int row_at(const frame *f, uint64_t pc, lw_cfi_row *r) {
    const uint8_t *fde = f->eh.b + f->fde;
    uint32_t len, cie_ptr, cie_len;
    memcpy(&len, fde, 4);
    memcpy(&cie_ptr, fde + 4, 4);
    const uint8_t *cie = fde + 4 - cie_ptr;
    memcpy(&cie_len, cie, 4);
    lw_cfi_cie ci;
    if (lw_cfi_parse_cie(lw_cfi_cur_at(cie + 4, cie_len, DESCRIBED + (uint64_t)(cie + 4 - f->eh.b)),
                         &ci) != 0)
        return -1;
    ck_assert_uint_eq(ci.code_align, 1);
    ck_assert_int_eq(ci.data_align, -8);
    ck_assert_uint_eq(ci.ra_reg, 16);
    ck_assert_uint_eq(ci.fde_enc, 0x1b);
    ck_assert(ci.has_z && !ci.signal);
    lw_cfi_cur c = lw_cfi_cur_at(fde + 8, len - 4, DESCRIBED + f->fde + 8);
    uint64_t start;
    if (lw_cfi_parse_fde(&c, &ci, pc, &start) != 0) return -1;
    ck_assert_uint_eq(start, FUNC);
    lw_cfi_row init;
    lw_cfi_row_init(&init, LW_CFI_CFA_EXPR);
    lw_cfi_cur ic = ci.insns;
    if (lw_cfi_run(&ic, &ci, start, start, &init, &init) != 0) return -1;
    *r = init;
    return lw_cfi_run(&c, &ci, start, pc, r, &init);
}

static void check_row(const frame *f, uint64_t pc, int cfa_reg, int64_t cfa_off, int rbp_how,
                      int64_t rbp_off) {
    lw_cfi_row r;
    ck_assert_msg(row_at(f, pc, &r) == 0, "no row at +%d", (int)(pc - FUNC));
    ck_assert_msg(r.cfa_reg == cfa_reg && r.cfa_off == cfa_off, "at +%d: CFA r%d%+d",
                  (int)(pc - FUNC), r.cfa_reg, (int)r.cfa_off);
    ck_assert_int_eq(r.how[16], LW_CFI_OFFSET); /* the return address */
    ck_assert_int_eq(r.arg[16], -8);
    ck_assert_msg(r.how[6] == rbp_how, "at +%d: rbp's rule %d", (int)(pc - FUNC), r.how[6]);
    if (rbp_how == LW_CFI_OFFSET) ck_assert_int_eq(r.arg[6], rbp_off);
}

START_TEST(cie_fde_rows) {
    static const uint8_t insns[] = {
        0x41,                         /* +1: after push rbp */
        0x0e, 0x10,                   /* def_cfa_offset 16 */
        0x86, 0x02,                   /* offset rbp at cfa-16 */
        0x43,                         /* +4: after mov rsp, rbp */
        0x0d, 0x06,                   /* def_cfa_register rbp */
        0x4a,                         /* +14: an early return's epilogue */
        0x0a,                         /* remember_state */
        0x0c, 0x07, 0x08,             /* def_cfa rsp+8 */
        0xc6,                         /* restore rbp: the CIE's rule (same value) */
        0x41,                         /* +15: the code after the early return */
        0x0b,                         /* restore_state */
        0x02, 0x08,                   /* advance_loc1 +8: +23 */
        0x14, 0x03, 0x02,             /* val_offset rbx = cfa-16 */
        0x09, 0x0c, 0x0d,             /* register r12 in r13 */
        0x10, 0x0e, 0x02, 0x77, 0x00, /* expression r14: unknown */
    };
    frame f;
    assemble(&f, insns, sizeof insns);
    check_row(&f, FUNC, 7, 8, LW_CFI_SAME, 0);
    for (uint64_t pc = FUNC + 1; pc < FUNC + 4; pc++)
        check_row(&f, pc, 7, 16, LW_CFI_OFFSET, -16);
    for (uint64_t pc = FUNC + 4; pc < FUNC + 14; pc++)
        check_row(&f, pc, 6, 16, LW_CFI_OFFSET, -16);
    check_row(&f, FUNC + 14, 7, 8, LW_CFI_SAME, 0);
    for (uint64_t pc = FUNC + 15; pc < FUNC + 32; pc++)
        check_row(&f, pc, 6, 16, LW_CFI_OFFSET, -16);
    lw_cfi_row r;
    ck_assert_int_eq(row_at(&f, FUNC + 22, &r), 0);
    ck_assert_int_eq(r.how[3], LW_CFI_SAME);
    ck_assert_int_eq(r.how[14], LW_CFI_SAME);
    ck_assert_int_eq(row_at(&f, FUNC + 23, &r), 0);
    ck_assert_int_eq(r.how[3], LW_CFI_VAL_OFFSET);
    ck_assert_int_eq(r.arg[3], -16);
    ck_assert_int_eq(r.how[12], LW_CFI_REG);
    ck_assert_int_eq(r.arg[12], 13);
    ck_assert_int_eq(r.how[14], LW_CFI_UNKNOWN);
    /* Outside the FDE's range. */
    ck_assert_int_eq(row_at(&f, FUNC - 1, &r), -1);
    ck_assert_int_eq(row_at(&f, FUNC + 32, &r), -1);
}
END_TEST

START_TEST(state_stack_and_unknown_opcodes) {
    lw_cfi_row r;
    frame f;
    /* restore_state with nothing remembered. */
    static const uint8_t underflow[] = {0x41, 0x0b};
    assemble(&f, underflow, sizeof underflow);
    ck_assert_int_eq(row_at(&f, FUNC, &r), 0); /* the row before it */
    ck_assert_int_eq(row_at(&f, FUNC + 1, &r), -1);
    /* Eight states nest; a ninth is refused. */
    static const uint8_t eight[] = {0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
                                    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b};
    assemble(&f, eight, sizeof eight);
    ck_assert_int_eq(row_at(&f, FUNC, &r), 0);
    static const uint8_t nine[] = {0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a};
    assemble(&f, nine, sizeof nine);
    ck_assert_int_eq(row_at(&f, FUNC, &r), -1);
    /* An opcode it does not know (DW_CFA_hi_user, 0x3f): no row for the
     * addresses it would apply at (the callers must not guess); the rows
     * before it are still read. */
    static const uint8_t unknown[] = {0x41, 0x0e, 0x10, 0x3f};
    assemble(&f, unknown, sizeof unknown);
    ck_assert_int_eq(row_at(&f, FUNC + 1, &r), -1);
    ck_assert_int_eq(row_at(&f, FUNC, &r), 0); /* stops at the advance first */
    /* A CFA given by an expression. */
    static const uint8_t expr[] = {0x0f, 0x02, 0x77, 0x08};
    assemble(&f, expr, sizeof expr);
    ck_assert_int_eq(row_at(&f, FUNC, &r), 0);
    ck_assert_int_eq(r.cfa_reg, LW_CFI_CFA_EXPR);
    /* An expression longer than the FDE. */
    static const uint8_t cut[] = {0x10, 0x06, 0x20, 0x77};
    assemble(&f, cut, sizeof cut);
    ck_assert_int_eq(row_at(&f, FUNC, &r), -1);
}
END_TEST

START_TEST(cie_refusals) {
    lw_cfi_cie ci;
    /* An augmentation it does not know, a version .eh_frame never has, an
     * FDE's id where the CIE id should be. */
    static const uint8_t aug_x[] = {0, 0, 0, 0, 1, 'z', 'X', 0, 1, 0x78, 0x10, 1, 0};
    static const uint8_t v2[] = {0, 0, 0, 0, 2, 0, 1, 0x78, 0x10};
    static const uint8_t not_cie[] = {4, 0, 0, 0, 1, 0, 1, 0x78, 0x10};
    static const uint8_t ok[] = {0, 0, 0, 0, 1, 0, 1, 0x78, 0x10, 0x0c, 0x07, 0x08};
    ck_assert_int_eq(lw_cfi_parse_cie(cur_of(aug_x, sizeof aug_x), &ci), -1);
    ck_assert_int_eq(lw_cfi_parse_cie(cur_of(v2, sizeof v2), &ci), -1);
    ck_assert_int_eq(lw_cfi_parse_cie(cur_of(not_cie, sizeof not_cie), &ci), -1);
    ck_assert_int_eq(lw_cfi_parse_cie(cur_of(ok, sizeof ok), &ci), 0);
    ck_assert(!ci.has_z);
    ck_assert_uint_eq(ci.fde_enc, LW_DW_EH_PE_ABS);
    ck_assert_ptr_eq(ci.insns.p, ok + 9);
    /* Augmentation data longer than the CIE. */
    static const uint8_t long_aug[] = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 9, 0x1b};
    ck_assert_int_eq(lw_cfi_parse_cie(cur_of(long_aug, sizeof long_aug), &ci), -1);
    /* Cut short anywhere: refused, never read past the end. */
    for (size_t n = 0; n < 9; n++)
        ck_assert_int_eq(lw_cfi_parse_cie(cur_of(ok, n), &ci), -1);
}
END_TEST

/* ---- the .eh_frame_hdr table ---- */
typedef struct {
    const uint8_t *b;
    uint64_t addr; /* described address of b[0] */
    size_t n;
    int reads;
} image;

static int image_entry(void *ctx, uint64_t addr, int32_t e[2]) {
    image *im = ctx;
    im->reads++;
    if (addr < im->addr || addr - im->addr + 8 > im->n) return -1;
    memcpy(e, im->b + (addr - im->addr), 8);
    return 0;
}

START_TEST(hdr_search) {
    enum { N = 5 };
    uint8_t h[LW_CFI_HDR_HEAD + 8 * N];
    const uint64_t hdr = 0x500000;
    h[0] = 1;
    h[1] = LW_DW_EH_PE_PCREL | LW_DW_EH_PE_S4; /* eh_frame_ptr */
    h[2] = LW_DW_EH_PE_U4;                     /* fde_count */
    h[3] = LW_DW_EH_PE_DATAREL | LW_DW_EH_PE_S4;
    int32_t ptr = 0x100, count = N;
    memcpy(h + 4, &ptr, 4);
    memcpy(h + 8, &count, 4);
    /* Functions at 0x401000 + 0x100 * i (below the hdr: negative offsets),
     * their FDEs at hdr + 0x1000 + 0x20 * i. */
    for (int i = 0; i < N; i++) {
        int32_t e[2] = {(int32_t)(0x401000 + 0x100 * i - (int64_t)hdr), 0x1000 + 0x20 * i};
        memcpy(h + 12 + 8 * i, e, 8);
    }
    lw_cfi_hdr t;
    ck_assert_int_eq(lw_cfi_hdr_parse(h, hdr, &t), 0);
    ck_assert_uint_eq(t.count, N);
    ck_assert_uint_eq(t.table, hdr + 12);
    image im = {h, hdr, sizeof h, 0};
    uint64_t fde;
    ck_assert_int_eq(lw_cfi_hdr_find(&t, hdr, 0x400fff, image_entry, &im, &fde), -1);
    for (int i = 0; i < N; i++) {
        for (uint64_t off = 0; off < 0x100; off += 0x7f) {
            ck_assert_int_eq(lw_cfi_hdr_find(&t, hdr, 0x401000 + 0x100 * (uint64_t)i + off,
                                             image_entry, &im, &fde),
                             0);
            ck_assert_uint_eq(fde, hdr + 0x1000 + 0x20 * (uint64_t)i);
        }
    }
    /* Past the last function: its FDE (whose range the caller checks). */
    ck_assert_int_eq(lw_cfi_hdr_find(&t, hdr, 0x600000, image_entry, &im, &fde), 0);
    ck_assert_uint_eq(fde, hdr + 0x1000 + 0x20 * (N - 1));
    /* A failed read is a failed search. */
    image none = {h, 0, 0, 0};
    ck_assert_int_eq(lw_cfi_hdr_find(&t, hdr, 0x401000, image_entry, &none, &fde), -1);
    /* Tables it does not take: another version, entries of another
     * encoding, no count. */
    h[0] = 2;
    ck_assert_int_eq(lw_cfi_hdr_parse(h, hdr, &t), -1);
    h[0] = 1;
    h[3] = LW_DW_EH_PE_DATAREL | LW_DW_EH_PE_S8;
    ck_assert_int_eq(lw_cfi_hdr_parse(h, hdr, &t), -1);
    h[3] = LW_DW_EH_PE_DATAREL | LW_DW_EH_PE_S4;
    h[2] = LW_DW_EH_PE_OMIT;
    ck_assert_int_eq(lw_cfi_hdr_parse(h, hdr, &t), -1);
    h[2] = LW_DW_EH_PE_U4;
    count = 0;
    memcpy(h + 8, &count, 4);
    ck_assert_int_eq(lw_cfi_hdr_parse(h, hdr, &t), -1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cfi");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, leb128_edges);
    tcase_add_test(tc, encoded_pointers);
    tcase_add_test(tc, cie_fde_rows);
    tcase_add_test(tc, state_stack_and_unknown_opcodes);
    tcase_add_test(tc, cie_refusals);
    tcase_add_test(tc, hdr_search);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
