/* SPDX-License-Identifier: Apache-2.0 */
/* DWARF call frame information as .eh_frame and .eh_frame_hdr hold it: the
 * byte-level format, read from bytes in this process's memory, whether they
 * are the live ones of a loaded module (the shim's fast unwinder,
 * src/track/unwind.c) or a copy read from another process (leakwatch
 * attach's call chain, tools/attach/callchain.c). A cursor knows the address
 * its bytes have in the process they describe, so that pc-relative pointers
 * come out right in both cases. Finding the module and its bytes, and what
 * to make of a row of rules, is the callers' part.
 *
 * No allocation, no I/O, no lock: usable inside the shim wherever it runs.
 * Every read is bounded by the cursor's end (a read past it marks the cursor
 * bad and gives 0), so malformed bytes give an error, never a fault. The
 * bytes are little-endian (x86-64 and AArch64). 32-bit DWARF only (64-bit
 * DWARF is never in .eh_frame). */
#ifndef LW_CFI_H
#define LW_CFI_H

#include <stddef.h>
#include <stdint.h>

/* ---- a cursor over bytes ---- */
typedef struct {
    const uint8_t *p, *end;
    uint64_t bias; /* the described address of the byte at p is p + bias */
    int bad;       /* a read went past end, or met something malformed */
} lw_cfi_cur;

/* The n bytes at p, whose first one is at addr in the process they
 * describe (addr == p for the live bytes of this process). */
static inline lw_cfi_cur lw_cfi_cur_at(const void *p, size_t n, uint64_t addr) {
    lw_cfi_cur c = {(const uint8_t *)p, (const uint8_t *)p + n, addr - (uint64_t)(uintptr_t)p, 0};
    return c;
}
/* The described address of the next byte. */
static inline uint64_t lw_cfi_addr(const lw_cfi_cur *c) {
    return (uint64_t)(uintptr_t)c->p + c->bias;
}

uint8_t lw_cfi_u8(lw_cfi_cur *c);
/* n (1..8) bytes, unsigned. */
uint64_t lw_cfi_fixed(lw_cfi_cur *c, size_t n);
/* LEB128: any length (bits past the 64th are dropped). */
uint64_t lw_cfi_uleb(lw_cfi_cur *c);
int64_t lw_cfi_sleb(lw_cfi_cur *c);
/* Skips n bytes (bad when fewer are left). */
void lw_cfi_skip(lw_cfi_cur *c, uint64_t n);

/* DW_EH_PE_* pointer encodings. */
enum {
    LW_DW_EH_PE_ABS = 0x00,
    LW_DW_EH_PE_ULEB = 0x01,
    LW_DW_EH_PE_U2 = 0x02,
    LW_DW_EH_PE_U4 = 0x03,
    LW_DW_EH_PE_U8 = 0x04,
    LW_DW_EH_PE_SLEB = 0x09,
    LW_DW_EH_PE_S2 = 0x0a,
    LW_DW_EH_PE_S4 = 0x0b,
    LW_DW_EH_PE_S8 = 0x0c,
    LW_DW_EH_PE_PCREL = 0x10,
    LW_DW_EH_PE_DATAREL = 0x30,
    LW_DW_EH_PE_INDIRECT = 0x80,
    LW_DW_EH_PE_OMIT = 0xff,
};

/* A pointer in the encoding enc: absolute, pc-relative (to the described
 * address of its first byte) or data-relative (to data_base). 0 for
 * DW_EH_PE_omit. Indirect pointers and other bases are refused (the cursor
 * goes bad): never used for code addresses. */
uint64_t lw_cfi_enc_ptr(lw_cfi_cur *c, uint8_t enc, uint64_t data_base);

/* ---- CIE and FDE ---- */
typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;  /* the return address column */
    uint8_t fde_enc;  /* the FDEs' pointer encoding ('R') */
    uint8_t signal;   /* 'S': a signal frame */
    uint8_t has_z;    /* 'z': FDEs have augmentation data */
    lw_cfi_cur insns; /* the initial instructions */
} lw_cfi_cie;

/* Parses a CIE: c holds its bytes after the length field (from the CIE id
 * to the end the length gives). Versions 1 and 3; augmentations z, R, P, L,
 * S, B and the old "eh". 0, or -1 on anything else or malformed. */
int lw_cfi_parse_cie(lw_cfi_cur c, lw_cfi_cie *out);

/* Reads an FDE's address range and skips its augmentation data: *c holds
 * its bytes after the CIE pointer and is left at its instructions. 0 with
 * *start, the function's first address, when [start, start + range) holds
 * pc; -1 when it does not, or on malformed bytes. */
int lw_cfi_parse_fde(lw_cfi_cur *c, const lw_cfi_cie *ci, uint64_t pc, uint64_t *start);

/* ---- rows of rules ---- */
/* The registers a row follows: DWARF numbers 0 .. LW_CFI_NREGS - 1 (x86-64:
 * the 16 general registers and the return address column 16); rules for
 * the others are read and dropped. */
#define LW_CFI_NREGS 17
enum {
    LW_CFI_SAME = 0,   /* the caller's value is this frame's */
    LW_CFI_UNDEF,      /* undefined (the return address of the outermost frame) */
    LW_CFI_OFFSET,     /* saved at CFA + arg */
    LW_CFI_VAL_OFFSET, /* the value is CFA + arg */
    LW_CFI_REG,        /* in register arg */
    LW_CFI_UNKNOWN,    /* a DWARF expression: not followed */
};
#define LW_CFI_CFA_EXPR (-1) /* cfa_reg of a CFA given by a DWARF expression */
typedef struct {
    int64_t cfa_off;
    int cfa_reg; /* CFA = cfa_reg + cfa_off; LW_CFI_CFA_EXPR */
    uint8_t how[LW_CFI_NREGS];
    int64_t arg[LW_CFI_NREGS];
} lw_cfi_row;

/* Every register LW_CFI_SAME, the CFA's register cfa_reg (offset 0). */
void lw_cfi_row_init(lw_cfi_row *r, int cfa_reg);

/* Runs the CFA instructions of *c over *r, from the address loc, until the
 * row that applies at pc (up to the first advance past pc, or the end). The
 * rules DW_CFA_restore puts back are init's (the row after the CIE's
 * instructions; init may be r itself). remember_state/restore_state nest up
 * to 8 deep (restore_state puts the CFA rule back too, as GCC's epilogues
 * expect). 0, or -1 on an opcode it does not know, set_loc going backwards,
 * a state stack over- or underflow, or malformed bytes. */
int lw_cfi_run(lw_cfi_cur *c, const lw_cfi_cie *ci, uint64_t loc, uint64_t pc, lw_cfi_row *r,
               const lw_cfi_row *init);

/* ---- the .eh_frame_hdr search table ---- */
#define LW_CFI_HDR_HEAD 20 /* the bytes lw_cfi_hdr_parse reads */
typedef struct {
    uint64_t table; /* the described address of its first entry */
    uint64_t count;
} lw_cfi_hdr;

/* Parses the first LW_CFI_HDR_HEAD bytes at h of the .eh_frame_hdr at the
 * described address hdr. Only the table every linker writes (ld, gold, lld,
 * mold) is taken: version 1, entries of two section-relative 4-byte signed
 * words. 0, or -1. */
int lw_cfi_hdr_parse(const uint8_t *h, uint64_t hdr, lw_cfi_hdr *out);

/* Reads the table's entry at the described address addr (two int32: the
 * function's start and its FDE, relative to the .eh_frame_hdr): 0, or -1. */
typedef int (*lw_cfi_entry_fn)(void *ctx, uint64_t addr, int32_t e[2]);

/* Binary search of the table: the described address of the FDE of the last
 * function starting at or before pc (the caller checks that it covers pc:
 * lw_cfi_parse_fde). 0, or -1 when none does or a read fails. */
int lw_cfi_hdr_find(const lw_cfi_hdr *t, uint64_t hdr, uint64_t pc, lw_cfi_entry_fn rd, void *ctx,
                    uint64_t *fde);

#endif
