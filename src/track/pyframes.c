/* SPDX-License-Identifier: Apache-2.0 */
/* pyframes.c - the calling thread's Python frames, read without the GIL.
 *
 * Called from inside a CUDA call (PyTorch has released the GIL and holds its
 * allocator lock there), so no CPython C API and no libpython link: symbols
 * are found at run time, structure offsets come from a table per minor
 * version (3.13 on: from the interpreter's _Py_DebugOffsets), and every
 * pointer is checked before it is followed; any doubt gives 0 frames.
 * Capture (the hot path) records code object and instruction offset per
 * frame; describe (off the hot path, while the thread is still in the hook)
 * decodes file, function and line itself. docs/python-frames.md gives each
 * choice and its reason: the per-version walk, the validation, strings and
 * line tables without the GIL, finalisation, sub-interpreters, and the
 * lock-free initialisation. */
#include "pyframes.h"
#include "arch.h"
#include "real.h" /* lw_real_dlsym: the library interposes dlsym */

#include <dlfcn.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LW_PY_MAX_STR (1 << 20) /* code points */
#define LW_PY_MAX_TABLE (1 << 28)

enum { WALK_FRAMEOBJ = 1, WALK_IFRAME = 2 };
enum { LINES_LNOTAB = 1, LINES_310 = 2, LINES_311 = 3 };
enum { OWNED_BY_GENERATOR = 1 };

struct layout {
    int walk, lines;
    /* PyObject / PyVarObject */
    uint32_t ob_type, ob_size;
    /* PyThreadState: interp; frame (3.8-3.10) / cframe (3.11, 3.12) /
     * current_frame (3.13); cf_current: current_frame in _PyCFrame, -1 when
     * ts_frame already holds the frame pointer. */
    uint32_t ts_interp, ts_frame;
    int32_t cf_current;
    /* frame */
    uint32_t fr_back, fr_code, fr_instr;
    int32_t fr_owner, fr_is_entry; /* -1: no such field */
    int32_t lasti_units;           /* 3.8-3.10: bytes per f_lasti unit */
    /* owner: largest valid value; from owner_shim up, a frame pushed by the
     * interpreter itself (no code object, never shown; -1: none) */
    int32_t owner_max, owner_shim;
    uintptr_t code_tag; /* 3.14: low bits of f_executable (a _PyStackRef) that are tags */
    /* code object */
    uint32_t co_filename, co_name, co_firstlineno, co_lines;
    uint32_t co_code;           /* 3.8-3.10: bytes object holding the bytecode */
    uint32_t co_adaptive;       /* 3.11+: inline bytecode */
    uint32_t co_firsttraceable; /* 3.11+ */
    /* bytes */
    uint32_t by_size, by_sval;
    /* str */
    uint32_t u_length, u_state, u_ascii_size, u_compact_size;
};

static struct {
    struct layout L;
    void *(*get_tstate)(void);
    void *(*main_interp)(void);
    int (*finalizing)(void);
    uintptr_t code_type, frame_type, str_type, bytes_type;
    /* The chain cache's four words of a frame (link, code, instruction,
     * word3), in the order kept; pairs: off[1] = off[0] + 8 and off[3] =
     * off[2] + 8 (3.12 on: two 16-byte loads a frame). */
    uint32_t off[4];
    int pairs;
    int version;
} g;

static _Atomic int g_state; /* 0 unknown, 2 busy, 1 ready, -1 none */
static _Atomic(const char *) g_status = "not initialised";

/* ---- raw reads (memcpy: no alignment or aliasing assumptions for the
 * compiler; compiles to plain loads) ---- */
#define READER(type, name)                                                                         \
    static inline type name(uintptr_t a) {                                                         \
        type v;                                                                                    \
        memcpy(&v, (const void *)a, sizeof v);                                                     \
        return v;                                                                                  \
    }
READER(uintptr_t, rd_ptr)
READER(int64_t, rd_i64)
READER(int32_t, rd_i32)
READER(uint32_t, rd_u32)
static inline uint8_t rd_u8(uintptr_t a) {
    return *(const uint8_t *)a;
}

/* Plausible pointer to an interpreter structure: non-NULL, not in the first
 * page, 8-aligned, inside user space. */
static inline int ptr_ok(uintptr_t p) {
    return p >= 4096 && (p & 7) == 0 && p < LW_ARCH_USER_ADDR_END;
}

static inline int is_code(const struct layout *L, uintptr_t code) {
    return ptr_ok(code) && rd_ptr(code + L->ob_type) == g.code_type;
}

/* ------------------------------------------------------------------------ */
/* Hot path                                                                 */
/* ------------------------------------------------------------------------ */

/* Brent's cycle detection over a frame chain: one compare per step. */
typedef struct {
    uintptr_t tortoise;
    unsigned lam, power;
} loop_check;
static inline int loops(loop_check *c, uintptr_t f) {
    if (f == c->tortoise) return 1;
    if (++c->lam == c->power) {
        c->tortoise = f;
        c->power <<= 1;
        c->lam = 0;
    }
    return 0;
}

/* 3.8-3.10: PyFrameObject chain. */
static int walk_frameobj(const struct layout *L, uintptr_t f, lw_pyframe *out, int max) {
    int n = 0;
    loop_check loop = {f, 0, 1};
    while (f != 0) {
        if (!ptr_ok(f) || rd_ptr(f + L->ob_type) != g.frame_type) return 0;
        uintptr_t code = rd_ptr(f + L->fr_code);
        if (!is_code(L, code)) return 0;
        int32_t lasti = rd_i32(f + L->fr_instr);
        int32_t instr = -1;
        if (lasti >= 0) {
            uintptr_t bc = rd_ptr(code + L->co_code);
            if (!ptr_ok(bc) || rd_ptr(bc + L->ob_type) != g.bytes_type) return 0;
            int64_t nbytes = rd_i64(bc + L->by_size);
            int64_t off = (int64_t)lasti * L->lasti_units;
            if (off >= nbytes || off >= (1 << 28)) return 0;
            instr = (int32_t)off;
        } else if (lasti != -1) {
            return 0;
        }
        out[n].code = (const void *)code;
        out[n].instr = instr;
        out[n].entry = 1;
        if (++n == max) break;
        f = rd_ptr(f + L->fr_back);
        if (loops(&loop, f)) return 0;
    }
    return n;
}

/* 3.11+: _PyInterpreterFrame chain. */
static int walk_iframe(const struct layout *L, uintptr_t f, lw_pyframe *out, int max) {
    int n = 0;
    unsigned steps = 0, limit = 2u * (unsigned)max + 64u;
    loop_check loop = {f, 0, 1};
    while (f != 0) {
        if (!ptr_ok(f)) return 0;
        if (++steps > limit) break; /* bounded walk: keep the innermost frames */
        uintptr_t prev = rd_ptr(f + L->fr_back);
        int owner = rd_u8(f + (uint32_t)L->fr_owner);
        if (owner > L->owner_max) return 0;
        if (L->owner_shim < 0 || owner < L->owner_shim) {
            uintptr_t code = rd_ptr(f + L->fr_code) & ~L->code_tag;
            if (!is_code(L, code)) return 0;
            int64_t units = rd_i64(code + L->ob_size);
            if (units <= 0 || units > (1 << 28)) return 0;
            intptr_t off =
                (intptr_t)(rd_ptr(f + L->fr_instr) - (code + L->co_adaptive)); /* bytes */
            if ((off & 1) != 0 || off < -2 || off >= (intptr_t)units * 2) return 0;
            int skip = 0;
            if (owner != OWNED_BY_GENERATOR) {
                int32_t ft = rd_i32(code + L->co_firsttraceable);
                if (ft < 0) return 0;
                /* Not started yet, or never traceable at all: 3.13's
                 * _Py_InitCleanup shim (pushed when a class call enters
                 * __init__) has 3 code units and _co_firsttraceable 4.
                 * traceback shows neither; neither do we. */
                skip = ft >= units || off < (intptr_t)ft * 2;
            }
            if (!skip) {
                if (off < 0) return 0;
                uint8_t entry;
                if (L->fr_is_entry >= 0) {
                    entry = rd_u8(f + (uint32_t)L->fr_is_entry);
                    if (entry > 1) return 0;
                } else {
                    entry = ptr_ok(prev) && L->owner_shim >= 0 &&
                            rd_u8(prev + (uint32_t)L->fr_owner) >= (uint8_t)L->owner_shim;
                }
                out[n].code = (const void *)code;
                out[n].instr = (int32_t)off;
                out[n].entry = entry;
                if (++n == max) break;
            }
        }
        f = prev;
        if (loops(&loop, f)) return 0;
    }
    return n;
}

static int try_init(void);

/* The calling thread's innermost frame, or 0 (no Python on this thread, the
 * interpreter finalising, another interpreter). */
static inline uintptr_t innermost_frame(const struct layout *L) {
    uintptr_t ts = (uintptr_t)g.get_tstate();
    if (!ptr_ok(ts)) return 0; /* NULL: this thread never ran Python */
    if (g.finalizing() != 0) return 0;
    uintptr_t interp = rd_ptr(ts + L->ts_interp);
    if (interp == 0 || interp != (uintptr_t)g.main_interp()) return 0;
    uintptr_t f = rd_ptr(ts + L->ts_frame);
    if (L->cf_current >= 0) { /* 3.11, 3.12: through tstate->cframe */
        if (!ptr_ok(f)) return 0;
        f = rd_ptr(f + (uint32_t)L->cf_current);
    }
    return f;
}

static inline int walk(const struct layout *L, uintptr_t f, lw_pyframe *out, int max) {
    return L->walk == WALK_FRAMEOBJ ? walk_frameobj(L, f, out, max) : walk_iframe(L, f, out, max);
}

/* 1 when the library is ready to capture (starting it on the first call). */
static inline int ready(lw_pyframe *out, int max) {
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st != 1 && (st != 0 || try_init() != 1)) return 0;
    return out != NULL && max > 0;
}

int lw_py_capture(lw_pyframe *out, int max) {
    if (!ready(out, max)) return 0;
    uintptr_t f = innermost_frame(&g.L);
    return f ? walk(&g.L, f, out, max) : 0;
}

/* The words of one chain frame that the walk's result depends on, besides
 * the code object's immutable fields: the link, the code pointer, the
 * instruction (raw), and the aligned word holding the owner and entry bytes
 * (3.11+; the frame structure is 8-aligned, so the word is inside it) or
 * the frame's type (3.8-3.10): word3, from word3_offset(). */
static inline uint32_t word3_offset(const struct layout *L) {
    return L->walk == WALK_FRAMEOBJ ? L->ob_type : (uint32_t)L->fr_owner & ~7u;
}
/* The four words in the cache's order, g.off: with g.pairs, two pairs of
 * adjacent words (a 16-byte load each). */
static inline void frame_words(uintptr_t f, uintptr_t w[4]) {
    for (int k = 0; k < 4; k++)
        w[k] = rd_ptr(f + g.off[k]);
}

/* Is the live chain from c->f[0] (the innermost frame now) word for word
 * the recorded one? Each frame is read only once the live chain has led to
 * it, as in the walk, and it is at an address the walk validated: frame
 * i + 1 is read only once frame i's link compared equal to the recorded
 * one, which is c->f[i + 1] (so the loads do not wait for each other). One
 * branch a frame; nothing is stored, so the offsets stay in registers. */
static inline int same_chain(const lw_py_cache *c, int steps) {
    const uintptr_t *fs = c->f;
    const uintptr_t(*w)[4] = (const uintptr_t(*)[4])c->w;
#if defined(__SSE2__)
    /* Two 16-byte compares a frame, with the cache's copy (16-aligned when
     * the cache is: calloc'd, always, but checked). Unrolled: still one
     * branch a frame, taken before the next frame is read, but no loop
     * count between them. */
    if (((uintptr_t)w & 15) == 0) {
        const uintptr_t o0 = g.off[0], o1 = g.off[1], o2 = g.off[2], o3 = g.off[3];
        if (g.pairs) { /* 3.12 on: a 16-byte load for each pair */
#pragma GCC unroll 4
            for (int i = 0; i < steps; i++) {
                const uintptr_t x = fs[i];
                __m128i e = _mm_and_si128(
                    _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(x + o0)),
                                    _mm_load_si128((const __m128i *)(const void *)&w[i][0])),
                    _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(x + o2)),
                                    _mm_load_si128((const __m128i *)(const void *)&w[i][2])));
                if (_mm_movemask_epi8(e) != 0xFFFF) return 0;
            }
            return 1;
        }
        /* Words apart: each pair made of two 8-byte loads (movq, movhpd). */
#pragma GCC unroll 4
        for (int i = 0; i < steps; i++) {
            const uintptr_t x = fs[i];
            __m128d v0 = _mm_loadh_pd(_mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(x + o0))),
                                      (const double *)(x + o1));
            __m128d v1 = _mm_loadh_pd(_mm_castsi128_pd(_mm_loadl_epi64((const __m128i *)(x + o2))),
                                      (const double *)(x + o3));
            __m128i e = _mm_and_si128(
                _mm_cmpeq_epi32(_mm_castpd_si128(v0),
                                _mm_load_si128((const __m128i *)(const void *)&w[i][0])),
                _mm_cmpeq_epi32(_mm_castpd_si128(v1),
                                _mm_load_si128((const __m128i *)(const void *)&w[i][2])));
            if (_mm_movemask_epi8(e) != 0xFFFF) return 0;
        }
        return 1;
    }
#endif
    const uintptr_t o0 = g.off[0], o1 = g.off[1], o2 = g.off[2], o3 = g.off[3];
    for (int i = 0; i < steps; i++) {
        const uintptr_t x = fs[i];
        uintptr_t d = (rd_ptr(x + o0) ^ w[i][0]) | (rd_ptr(x + o1) ^ w[i][1]) |
                      (rd_ptr(x + o2) ^ w[i][2]) | (rd_ptr(x + o3) ^ w[i][3]);
        if (d != 0) return 0;
    }
    return 1;
}

__attribute__((noinline)) static int capture_cached(lw_pyframe *out, int max, lw_py_cache *c,
                                                    const lw_pyframe **frames) {
    *frames = out;
    if (!ready(out, max)) return 0;
    if (c == NULL) return lw_py_capture(out, max);
    uintptr_t f = innermost_frame(&g.L);
    if (f == 0) return 0;
    /* The same chain as last time, frame for frame and word for word? Each
     * frame is read only once the live chain has led to it, as in the
     * walk, and it is at an address the walk validated: frame i + 1 is read
     * only once frame i's link compared equal to the recorded one, which is
     * c->f[i + 1]. The four words of a frame are compared together (one
     * branch a frame), and the next frame's address is the recorded link,
     * so the loads do not wait for each other. The loop stores nothing: the
     * offsets stay in registers. */
    const int steps = c->steps;
    if (steps > 0 && c->n <= max && f == c->f[0] && same_chain(c, steps)) {
        /* The last result, where it is kept: no copy. */
        *frames = c->out;
        return c->n;
    }
    /* A local copy: byte stores into out may alias g, and the compiler
     * would reload every offset after each frame. */
    const struct layout Lc = g.L;
    const struct layout *L = &Lc;
    int n = walk(L, f, out, max);
    /* Remember a whole chain (not one cut at max, nor one longer than the
     * cache) and what it gave. */
    c->gen++;
    c->steps = 0;
    if (n >= max || n > LW_PY_CACHE_FRAMES) return n;
    int nsteps = 0;
    uintptr_t x = f;
    while (x != 0 && nsteps < LW_PY_CACHE_FRAMES) {
        c->f[nsteps] = x;
        frame_words(x, c->w[nsteps]);
        x = rd_ptr(x + L->fr_back);
        nsteps++;
    }
    if (x != 0) return n;
    memcpy(c->out, out, (size_t)n * sizeof *out);
    c->n = n;
    c->steps = nsteps;
    return n;
}

/* A process without Python (a C or C++ job) returns here, with no frame of
 * its own: the state says so, as ready() would. */
int lw_py_capture_cached(lw_pyframe *out, int max, lw_py_cache *c, const lw_pyframe **frames) {
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    if (st != 1 && st != 0) {
        *frames = out;
        return 0;
    }
    return capture_cached(out, max, c, frames);
}

int lw_py_thread_without_frames(void) {
    if (atomic_load_explicit(&g_state, memory_order_acquire) != 1) return 0;
    const struct layout *L = &g.L;
    uintptr_t ts = (uintptr_t)g.get_tstate();
    if (!ptr_ok(ts) || g.finalizing() != 0) return 0;
    uintptr_t interp = rd_ptr(ts + L->ts_interp);
    if (interp == 0 || interp != (uintptr_t)g.main_interp()) return 0;
    uintptr_t f = rd_ptr(ts + L->ts_frame);
    if (L->cf_current >= 0) {
        if (!ptr_ok(f)) return 0;
        f = rd_ptr(f + (uint32_t)L->cf_current);
    }
    if (f == 0) return 1;
    /* A chain of only the interpreter's own shim frames (3.12+ entry
     * frames) has no frame of the job either: the walk skips them. */
    lw_pyframe one;
    int n = L->walk == WALK_FRAMEOBJ ? walk_frameobj(L, f, &one, 1) : walk_iframe(L, f, &one, 1);
    return n == 0;
}

/* ------------------------------------------------------------------------ */
/* Describe (off the hot path)                                              */
/* ------------------------------------------------------------------------ */

/* Bytes object -> data and size, validated. */
static int bytes_of(const struct layout *L, uintptr_t b, const uint8_t **data, int64_t *len) {
    if (!ptr_ok(b) || rd_ptr(b + L->ob_type) != g.bytes_type) return -1;
    int64_t n = rd_i64(b + L->by_size);
    if (n < 0 || n > LW_PY_MAX_TABLE) return -1;
    *data = (const uint8_t *)(b + L->by_sval);
    *len = n;
    return 0;
}

static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c >= 0xDC80 && c <= 0xDCFF) { /* surrogateescape: the original byte */
        o[0] = (char)(c - 0xDC00);
        return 1;
    }
    if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD; /* other lone surrogate */
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* A compact str object -> malloc'd UTF-8, or NULL. */
static char *str_utf8(const struct layout *L, uintptr_t s) {
    if (!ptr_ok(s) || rd_ptr(s + L->ob_type) != g.str_type) return NULL;
    int64_t n = rd_i64(s + L->u_length);
    if (n < 0 || n > LW_PY_MAX_STR) return NULL;
    /* state bitfield: interned:2, kind:3, compact:1, ascii:1 (3.8-3.14,
     * default builds) */
    uint32_t st = rd_u32(s + L->u_state);
    unsigned kind = (st >> 2) & 7, compact = (st >> 5) & 1, ascii = (st >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) return NULL;
    uintptr_t data = s + (ascii ? L->u_ascii_size : L->u_compact_size);
    char *buf = malloc((size_t)n * 4 + 1);
    if (buf == NULL) return NULL;
    size_t o = 0;
    if (ascii) {
        memcpy(buf, (const void *)data, (size_t)n);
        o = (size_t)n;
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint32_t c;
            if (kind == 1) {
                c = ((const uint8_t *)data)[i];
            } else if (kind == 2) {
                uint16_t u;
                memcpy(&u, (const void *)(data + (uintptr_t)i * 2), 2);
                c = u;
            } else {
                memcpy(&c, (const void *)(data + (uintptr_t)i * 4), 4);
                if (c > 0x10FFFF) {
                    free(buf);
                    return NULL;
                }
            }
            o += put_utf8(buf + o, c);
        }
    }
    buf[o] = '\0';
    return buf;
}

/* 3.8, 3.9: co_lnotab, pairs (address increment, signed line increment);
 * same algorithm as their PyCode_Addr2Line(). */
static int line_lnotab(const uint8_t *p, int64_t len, int line, int addr) {
    int a = 0;
    for (int64_t i = 0; i + 1 < len; i += 2) {
        a += p[i];
        if (a > addr) break;
        line += (int8_t)p[i + 1];
    }
    return line;
}

/* 3.10: co_linetable, pairs (bytes covered, signed line delta; -128: none). */
static int line_310(const uint8_t *p, int64_t len, int line, int addr) {
    int start = 0;
    for (int64_t i = 0; i + 1 < len; i += 2) {
        int end = start + p[i];
        int ld = (int8_t)p[i + 1], cur = -1;
        if (ld != -128) {
            line += ld;
            cur = line;
        }
        if (addr >= start && addr < end) return cur;
        start = end;
    }
    return -1;
}

/* 3.11+: location table. Each entry starts with a byte 1cccclll: code c,
 * l+1 code units. c 15: no location; 14 (long), 13 (no columns): signed
 * varint line delta follows; 10-12: line delta c-10; 0-9: same line. */
static int line_311(const uint8_t *p, int64_t len, int line, int addr) {
    int64_t i = 0;
    int start = 0;
    while (i < len) {
        uint8_t b = p[i];
        if ((b & 0x80) == 0) return -1; /* corrupt */
        int code = (b >> 3) & 15;
        int end = start + ((b & 7) + 1) * 2;
        int delta = 0;
        if (code == 13 || code == 14) {
            uint32_t v = 0;
            unsigned shift = 0;
            int64_t j = i + 1;
            uint8_t r;
            do {
                if (j >= len || shift > 24) return -1;
                r = p[j++];
                v |= (uint32_t)(r & 63) << shift;
                shift += 6;
            } while (r & 64);
            delta = (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
        } else if (code >= 10 && code <= 12) {
            delta = code - 10;
        }
        line += delta;
        if (addr >= start && addr < end) return code == 15 ? -1 : line;
        start = end;
        do
            i++;
        while (i < len && (p[i] & 0x80) == 0);
    }
    return -1;
}

static int code_line(const struct layout *L, uintptr_t code, int32_t instr, int *line) {
    int first = rd_i32(code + L->co_firstlineno);
    int64_t nbytes;
    if (L->walk == WALK_FRAMEOBJ) {
        const uint8_t *bc;
        if (bytes_of(L, rd_ptr(code + L->co_code), &bc, &nbytes) != 0) return -1;
    } else {
        nbytes = rd_i64(code + L->ob_size);
        if (nbytes <= 0 || nbytes > (1 << 28)) return -1;
        nbytes *= 2;
    }
    if (instr >= nbytes) return -1;
    if (instr < 0) { /* not started: PyCode_Addr2Line(co, -1) gives this too */
        *line = first;
        return 0;
    }
    const uint8_t *t;
    int64_t len;
    if (bytes_of(L, rd_ptr(code + L->co_lines), &t, &len) != 0) return -1;
    switch (L->lines) {
    case LINES_LNOTAB:
        *line = line_lnotab(t, len, first, instr);
        break;
    case LINES_310:
        *line = line_310(t, len, first, instr);
        break;
    default:
        *line = line_311(t, len, first, instr);
        break;
    }
    return 0;
}

int lw_py_describe(const lw_pyframe *f, lw_py_location *out) {
    if (out == NULL) return -1;
    out->file = out->function = NULL;
    out->line = -1;
    if (f == NULL || atomic_load_explicit(&g_state, memory_order_acquire) != 1) return -1;
    const struct layout *L = &g.L;
    uintptr_t code = (uintptr_t)f->code;
    if (!is_code(L, code)) return -1;
    int line = -1;
    if (code_line(L, code, f->instr, &line) != 0) return -1;
    char *file = str_utf8(L, rd_ptr(code + L->co_filename));
    char *func = str_utf8(L, rd_ptr(code + L->co_name));
    if (file == NULL || func == NULL) {
        free(file);
        free(func);
        return -1;
    }
    out->file = file;
    out->function = func;
    out->line = line;
    return 0;
}

void lw_py_location_free(lw_py_location *loc) {
    if (loc == NULL) return;
    free(loc->file);
    free(loc->function);
    loc->file = loc->function = NULL;
}

/* ------------------------------------------------------------------------ */
/* Initialisation                                                           */
/* ------------------------------------------------------------------------ */

/* _Py_DebugOffsets: the first member of _PyRuntime from 3.13 on, which the
 * interpreter fills with the offsets of its own structures for debuggers
 * (Include/internal/pycore_runtime.h in 3.13, pycore_debug_offsets.h in
 * 3.14). Declared here up to the last member we read; only *where* each
 * member sits changes between versions (3.14 added members in the middle),
 * so a version is one row of dbg_versions below, built with offsetof() on
 * that version's declaration. A new version whose declaration is unchanged
 * is one more row naming an existing declaration. */
/* What the versions declare alike: the members before interpreter_state,
 * then thread_state; the members of interpreter_frame and code_object that
 * 3.14 extends; the objects from pyobject to list_object, and from
 * dict_object on. */
#define DBG_HEAD                                                                                   \
    char cookie[8];                                                                                \
    uint64_t version, free_threaded;                                                               \
    struct {                                                                                       \
        uint64_t size, finalizing, interpreters_head;                                              \
    } runtime_state
#define DBG_THREAD                                                                                 \
    struct {                                                                                       \
        uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,             \
            datastack_chunk, status;                                                               \
    } thread_state
#define DBG_FRAME_313 uint64_t size, previous, executable, instr_ptr, localsplus, owner
#define DBG_CODE_313                                                                               \
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,    \
        localspluskinds, co_code_adaptive
#define DBG_OBJECTS                                                                                \
    struct {                                                                                       \
        uint64_t size, ob_type;                                                                    \
    } pyobject;                                                                                    \
    struct {                                                                                       \
        uint64_t size, tp_name, tp_repr, tp_flags;                                                 \
    } type_object;                                                                                 \
    struct {                                                                                       \
        uint64_t size, ob_item, ob_size;                                                           \
    } tuple_object, list_object
#define DBG_SCALARS                                                                                \
    struct {                                                                                       \
        uint64_t size, ma_keys, ma_values;                                                         \
    } dict_object;                                                                                 \
    struct {                                                                                       \
        uint64_t size, ob_fval;                                                                    \
    } float_object;                                                                                \
    struct {                                                                                       \
        uint64_t size, lv_tag, ob_digit;                                                           \
    } long_object;                                                                                 \
    struct {                                                                                       \
        uint64_t size, ob_size, ob_sval;                                                           \
    } bytes_object;                                                                                \
    struct {                                                                                       \
        uint64_t size, state, length, asciiobject_size;                                            \
    } unicode_object

struct dbg313 {
    DBG_HEAD;
    struct {
        uint64_t v[13];
    } interpreter_state;
    DBG_THREAD;
    struct {
        DBG_FRAME_313;
    } interpreter_frame;
    struct {
        DBG_CODE_313;
    } code_object;
    DBG_OBJECTS;
    DBG_SCALARS;
};

/* 3.14: interpreter_state, interpreter_frame and code_object grew (thread-
 * local bytecode, stack pointer); set_object is new before dict_object. */
struct dbg314 {
    DBG_HEAD;
    struct {
        uint64_t v[16];
    } interpreter_state;
    DBG_THREAD;
    struct {
        DBG_FRAME_313, stackpointer, tlbc_index;
    } interpreter_frame;
    struct {
        DBG_CODE_313, co_tlbc;
    } code_object;
    DBG_OBJECTS;
    struct {
        uint64_t size, used, table, mask;
    } set_object;
    DBG_SCALARS;
};

/* One version: where the members we read sit in its _Py_DebugOffsets, and
 * the few facts the interpreter does not publish. */
struct dbg_version {
    uint8_t minor;
    uint8_t owner_max, owner_shim; /* see struct layout */
    uint8_t code_tag;              /* tag bits of f_executable */
    uint8_t firsttraceable_back;   /* _co_firsttraceable: bytes before co_code_adaptive */
    uint16_t free_threaded;
    uint16_t ts_size, ts_interp, ts_frame;
    uint16_t fr_size, fr_back, fr_code, fr_instr, fr_owner;
    uint16_t co_size, co_filename, co_qualname, co_lines, co_firstlineno, co_adaptive;
    uint16_t ob_size, ob_type;
    uint16_t var_size, var_ob_size; /* a PyVarObject (the tuple's) */
    uint16_t by_size, by_ob_size, by_sval;
    uint16_t u_size, u_state, u_length, u_ascii;
};

#define DBG_VERSION(T, minor_, owner_max_, owner_shim_, tag_, ft_back_)                            \
    {                                                                                              \
        minor_, owner_max_, owner_shim_, tag_, ft_back_, offsetof(T, free_threaded),               \
            offsetof(T, thread_state.size), offsetof(T, thread_state.interp),                      \
            offsetof(T, thread_state.current_frame), offsetof(T, interpreter_frame.size),          \
            offsetof(T, interpreter_frame.previous), offsetof(T, interpreter_frame.executable),    \
            offsetof(T, interpreter_frame.instr_ptr), offsetof(T, interpreter_frame.owner),        \
            offsetof(T, code_object.size), offsetof(T, code_object.filename),                      \
            offsetof(T, code_object.qualname), offsetof(T, code_object.linetable),                 \
            offsetof(T, code_object.firstlineno), offsetof(T, code_object.co_code_adaptive),       \
            offsetof(T, pyobject.size), offsetof(T, pyobject.ob_type),                             \
            offsetof(T, tuple_object.size), offsetof(T, tuple_object.ob_size),                     \
            offsetof(T, bytes_object.size), offsetof(T, bytes_object.ob_size),                     \
            offsetof(T, bytes_object.ob_sval), offsetof(T, unicode_object.size),                   \
            offsetof(T, unicode_object.state), offsetof(T, unicode_object.length),                 \
            offsetof(T, unicode_object.asciiobject_size)                                           \
    }

/* owner: 3.13 0 thread, 1 generator, 2 frame object, 3 C stack (the entry
 * shim of each _PyEval_EvalFrameDefault call); 3.14 inserts 3 interpreter
 * (now the entry shim) before 4 C stack, and CPython's own readers treat
 * both as "not a Python frame" (_PyFrame_IsIncomplete: owner >= 3).
 * f_executable: a plain pointer in 3.13; a _PyStackRef in 3.14 whose low
 * bits tag deferred/immortal references (Py_TAG_BITS 1, free-threaded 3).
 * _co_firsttraceable: int, padding, void *co_extra, then co_code_adaptive
 * (default build; free-threaded builds are refused). */
static const struct dbg_version dbg_versions[] = {
    DBG_VERSION(struct dbg313, 13, 3, 3, 0, 16),
    DBG_VERSION(struct dbg314, 14, 4, 3, 3, 16),
};

static uint64_t dbg_get(const void *d, uint16_t at) {
    uint64_t v;
    memcpy(&v, (const char *)d + at, sizeof v);
    return v;
}

/* Field `off` of a structure of `size` bytes, holding `width` bytes. */
static int fits(uint64_t off, uint64_t width, uint64_t size) {
    return size > 0 && size < 65536 && off + width <= size && off % (width < 8 ? width : 8) == 0;
}

/* Fills L from the debug offsets at d (the start of _PyRuntime) for Python
 * 3.minor. Returns 0, -1 when they are absent or not sane (the caller then
 * uses its built-in table, if any), -2 for a free-threaded build. */
static int apply_debug_offsets(const void *d, int minor, struct layout *L) {
    const struct dbg_version *v = NULL;
    for (size_t i = 0; i < sizeof dbg_versions / sizeof dbg_versions[0]; i++)
        if (dbg_versions[i].minor == minor) v = &dbg_versions[i];
    if (v == NULL || d == NULL || memcmp(d, "xdebugpy", 8) != 0) return -1;
    if ((dbg_get(d, 8) >> 16) != (0x0300u | (unsigned)minor)) return -1;
    if (dbg_get(d, v->free_threaded) != 0) return -2;
#define G(f) dbg_get(d, v->f)
    uint64_t ts = G(ts_size), fr = G(fr_size), co = G(co_size), ob = G(ob_size), var = G(var_size),
             by = G(by_size), u = G(u_size);
    int ok = fits(G(ts_interp), 8, ts) && fits(G(ts_frame), 8, ts) && fits(G(fr_back), 8, fr) &&
             fits(G(fr_code), 8, fr) && fits(G(fr_instr), 8, fr) && fits(G(fr_owner), 1, fr) &&
             fits(G(co_filename), 8, co) && fits(G(co_qualname), 8, co) &&
             fits(G(co_lines), 8, co) && fits(G(co_firstlineno), 4, co) &&
             G(co_adaptive) >= 32u + v->firsttraceable_back && G(co_adaptive) <= co &&
             fits(G(ob_type), 8, ob) && fits(G(var_ob_size), 8, var) &&
             fits(G(by_ob_size), 8, by) && G(by_sval) < by && fits(G(u_state), 4, u) &&
             fits(G(u_length), 8, u) && G(u_ascii) <= u && G(u_ascii) >= 24;
    if (!ok) return -1;
    memset(L, 0, sizeof *L);
    L->walk = WALK_IFRAME;
    L->lines = LINES_311;
    L->ob_type = (uint32_t)G(ob_type);
    L->ob_size = (uint32_t)G(var_ob_size);
    L->ts_interp = (uint32_t)G(ts_interp);
    L->ts_frame = (uint32_t)G(ts_frame);
    L->cf_current = -1;
    L->fr_back = (uint32_t)G(fr_back);
    L->fr_code = (uint32_t)G(fr_code);
    L->fr_instr = (uint32_t)G(fr_instr);
    L->fr_owner = (int32_t)G(fr_owner);
    L->fr_is_entry = -1;
    L->owner_max = v->owner_max;
    L->owner_shim = v->owner_shim;
    L->code_tag = v->code_tag;
    L->co_filename = (uint32_t)G(co_filename);
    L->co_name = (uint32_t)G(co_qualname);
    L->co_firstlineno = (uint32_t)G(co_firstlineno);
    L->co_lines = (uint32_t)G(co_lines);
    L->co_adaptive = (uint32_t)G(co_adaptive);
    L->co_firsttraceable = L->co_adaptive - v->firsttraceable_back;
    L->by_size = (uint32_t)G(by_ob_size);
    L->by_sval = (uint32_t)G(by_sval);
    L->u_state = (uint32_t)G(u_state);
    L->u_length = (uint32_t)G(u_length);
    L->u_ascii_size = (uint32_t)G(u_ascii);
    /* PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 */
    L->u_compact_size = L->u_ascii_size + 16;
#undef G
    return 0;
}

/* Built-in tables (64-bit, default build). */
static int pick_layout(int minor, struct layout *L) {
    memset(L, 0, sizeof *L);
    L->ob_type = 8;
    L->ob_size = 16;
    L->ts_interp = 16;
    L->by_size = 16;
    L->by_sval = 32;
    L->u_length = 16;
    L->u_state = 32;
    L->fr_owner = L->fr_is_entry = L->owner_shim = -1;
    L->cf_current = -1;
    if (minor >= 8 && minor <= 10) {
        L->walk = WALK_FRAMEOBJ;
        L->lines = minor == 10 ? LINES_310 : LINES_LNOTAB;
        L->ts_frame = 24;
        L->fr_back = 24;
        L->fr_code = 32;
        L->fr_instr = minor == 10 ? 96 : 104;
        L->lasti_units = minor == 10 ? 2 : 1;
        L->co_firstlineno = 40;
        L->co_code = 48;
        L->co_filename = 104;
        L->co_name = 112;
        L->co_lines = 120; /* co_lnotab (3.8, 3.9) / co_linetable (3.10) */
        L->u_ascii_size = 48;
        L->u_compact_size = 72;
        return 0;
    }
    L->walk = WALK_IFRAME;
    L->lines = LINES_311;
    L->co_filename = 112;
    L->co_name = 128; /* co_qualname */
    L->co_lines = 136;
    L->fr_instr = 56;
    switch (minor) {
    case 11:
        L->ts_frame = 56; /* cframe */
        L->cf_current = 8;
        L->fr_code = 32;
        L->fr_back = 48;
        L->fr_is_entry = 68;
        L->fr_owner = 69;
        L->owner_max = 2;
        L->co_firstlineno = 72;
        L->co_firsttraceable = 168;
        L->co_adaptive = 184;
        L->u_ascii_size = 48;
        L->u_compact_size = 72;
        return 0;
    case 12:
    case 13:
        L->ts_frame = minor == 12 ? 56 : 72; /* cframe / current_frame */
        L->cf_current = minor == 12 ? 0 : -1;
        L->fr_code = 0;
        L->fr_back = 8;
        L->fr_owner = 70;
        L->owner_max = 3;
        L->owner_shim = 3;
        L->co_firstlineno = 68;
        L->co_firsttraceable = minor == 12 ? 176 : 184;
        L->co_adaptive = minor == 12 ? 192 : 200;
        L->u_ascii_size = 40;
        L->u_compact_size = 56;
        return 0;
    default:
        return -1;
    }
}

/* "3.10.13 (main, ...)" / "3.13.0rc1+ ..." -> PY_VERSION_HEX, 0 if unparsable */
static int parse_version(const char *s) {
    unsigned part[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (*s < '0' || *s > '9') {
            if (k < 2) return 0;
            break;
        }
        while (*s >= '0' && *s <= '9') {
            part[k] = part[k] * 10 + (unsigned)(*s++ - '0');
            if (part[k] > 255) return 0;
        }
        if (k < 2 && *s++ != '.') return 0;
    }
    unsigned level = 0xF, serial = 0;
    if (*s == 'a' || *s == 'b' || (s[0] == 'r' && s[1] == 'c')) {
        level = *s == 'a' ? 0xA : *s == 'b' ? 0xB : 0xC;
        s += level == 0xC ? 2 : 1;
        while (*s >= '0' && *s <= '9' && serial < 16)
            serial = serial * 10 + (unsigned)(*s++ - '0');
    }
    if (part[0] > 127) return 0;
    return (int)((part[0] << 24) | (part[1] << 16) | (part[2] << 8) | (level << 4) |
                 (serial & 0xF));
}

static void *sym(const char *name) {
    return lw_real_dlsym(RTLD_DEFAULT, name);
}

/* Base address of the object that defines `p` (0 if unknown). */
static uintptr_t object_of(const void *p) {
    Dl_info info;
    if (p == NULL || dladdr(p, &info) == 0) return 0;
    return (uintptr_t)info.dli_fbase;
}

static int fail(const char *why) {
    atomic_store(&g_status, why);
    return -1;
}

/* Newest minor version read (3.8 .. 3.LW_PY_NEWEST). */
#define LW_PY_NEWEST 14
#define STR_(x) #x
#define STR(x) STR_(x)

/* A Python that cannot be read: the reason, for the one line at start. */
static _Atomic int g_found; /* a Python was seen by the last initialisation */
static char g_why[200];

static int unsupported_version(int major, int minor) {
    snprintf(g_why, sizeof g_why,
             "CPython %d.%d is not supported (Python frames are read on 3.8-3." STR(
                 LW_PY_NEWEST) "): reports show native frames only",
             major, minor);
    return fail(g_why);
}

static const char free_threaded_why[] =
    "free-threaded CPython build (Py_GIL_DISABLED): Python lines are unavailable there "
    "(its frames point into per-thread bytecode copies that another thread may reallocate, "
    "so they cannot be read safely without locking); reports show native frames only";

/* The order in which the chain cache keeps a frame's four words. */
static void set_cache_words(const struct layout *L) {
    uint32_t bk = L->fr_back, co = L->fr_code, in = L->fr_instr, w3 = word3_offset(L);
    uint32_t lo1 = bk < co ? bk : co, hi1 = bk < co ? co : bk;
    uint32_t lo2 = in < w3 ? in : w3, hi2 = in < w3 ? w3 : in;
    g.pairs = hi1 == lo1 + 8 && hi2 == lo2 + 8 && (hi1 < lo2 || hi2 < lo1);
    if (g.pairs) {
        g.off[0] = lo1, g.off[1] = hi1, g.off[2] = lo2, g.off[3] = hi2;
    } else {
        g.off[0] = bk, g.off[1] = co, g.off[2] = in, g.off[3] = w3;
    }
}

static int do_init(void) {
    if (sizeof(void *) != 8) return fail("32-bit process: unsupported");
    atomic_store(&g_found, 0);
    void *gts = sym("PyGILState_GetThisThreadState");
    if (gts == NULL) return fail("no Python in this process");
    atomic_store(&g_found, 1);
    int version = 0;
    const unsigned long *pv = sym("Py_Version"); /* 3.11+ */
    void *getv = sym("Py_GetVersion");
    if (pv != NULL) {
        version = (int)*pv;
    } else if (getv != NULL) {
        version = parse_version(((const char *(*)(void))getv)());
    }
    if (version == 0) return fail("cannot tell the Python version");
    int major = (version >> 24) & 0xFF, minor = (version >> 16) & 0xFF;
    /* Exported by free-threaded builds only (3.13t on): found even where the
     * debug offsets are not usable. */
    if (sym("_Py_MergeZeroLocalRefcount") != NULL) return fail(free_threaded_why);
    if (major != 3 || minor < 8 || minor > LW_PY_NEWEST) return unsupported_version(major, minor);

    struct layout L;
    int used_debug_offsets = 0, have_table = pick_layout(minor, &L) == 0;
    if (minor >= 13) {
        /* The interpreter's own offsets (3.13 on); 3.13 also has a built-in
         * table, later versions only this. */
        struct layout D;
        int r = apply_debug_offsets(sym("_PyRuntime"), minor, &D);
        if (r == -2) return fail(free_threaded_why);
        if (r == 0) {
            L = D;
            used_debug_offsets = 1;
        } else if (!have_table) {
            return fail("CPython 3.14+ without usable debug offsets (_PyRuntime): unsupported");
        }
    } else if (!have_table) {
        return unsupported_version(major, minor);
    } else if (sym("_Py_PrintReferenceAddresses") != NULL) {
        return fail("Py_TRACE_REFS build: unsupported");
    }

    void *main_interp = sym("PyInterpreterState_Main");
    void *fin = sym(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
    void *code_type = sym("PyCode_Type");
    void *str_type = sym("PyUnicode_Type");
    void *bytes_type = sym("PyBytes_Type");
    void *frame_type = sym("PyFrame_Type");
    if (!main_interp || !fin || !getv || !code_type || !str_type || !bytes_type ||
        (L.walk == WALK_FRAMEOBJ && !frame_type))
        return fail("missing Python symbols");
    /* The functions must all come from one object (two Pythons loaded: the
     * first in search order provides every symbol, unless it lacks one).
     * Data symbols are not checked: a copy relocation may legitimately put
     * them into the executable. */
    uintptr_t obj = object_of(gts);
    if (obj == 0 || object_of(main_interp) != obj || object_of(fin) != obj ||
        object_of(getv) != obj)
        return fail("Python symbols come from different objects");

    g.L = L;
    set_cache_words(&L);
    g.get_tstate = (void *(*)(void))gts;
    g.main_interp = (void *(*)(void))main_interp;
    g.finalizing = (int (*)(void))fin;
    g.code_type = (uintptr_t)code_type;
    g.str_type = (uintptr_t)str_type;
    g.bytes_type = (uintptr_t)bytes_type;
    g.frame_type = (uintptr_t)frame_type;
    g.version = version;
    atomic_store(&g_status, used_debug_offsets ? "ok (debug offsets)" : "ok");
    return 1;
}

/* Never waits: returns the state after trying (2 if another thread is at it). */
static int try_init(void) {
    int expect = 0;
    if (!atomic_compare_exchange_strong(&g_state, &expect, 2)) return expect;
    int r = do_init();
    atomic_store_explicit(&g_state, r, memory_order_release);
    return r;
}

int lw_py_init(void) {
    for (;;) {
        int st = try_init();
        if (st == 1) return 0;
        if (st == -1) return -1;
        sched_yield(); /* another thread is initialising (microseconds) */
    }
}

int lw_py_reinit(void) {
    int expect = -1;
    atomic_compare_exchange_strong(&g_state, &expect, 0);
    return lw_py_init();
}

const char *lw_py_unavailable(void) {
    int st = atomic_load_explicit(&g_state, memory_order_acquire);
    return st == -1 && atomic_load(&g_found) ? atomic_load(&g_status) : NULL;
}

int lw_py_version(void) {
    return atomic_load_explicit(&g_state, memory_order_acquire) == 1 ? g.version : 0;
}

const char *lw_py_status(void) {
    return atomic_load(&g_status);
}
