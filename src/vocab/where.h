/* SPDX-License-Identifier: Apache-2.0 */
/* Where to look: which frame of a call stack is the user's own code.
 *
 * A stack of a deep-learning job runs through the user's script, installed
 * packages (torch), the standard library, the interpreter, ctypes and libffi,
 * the CUDA libraries and libc's start-up code. The place to look is the
 * innermost frame in the user's own code; without one, the innermost Python
 * frame; without one, the innermost named native frame outside the CUDA
 * libraries. The library (report, warning, summary) and the command (text,
 * HTML, top) both decide with this code, from the same frames. */
#ifndef LW_WHERE_H
#define LW_WHERE_H

#include <stddef.h>

typedef struct {
    int python;           /* 1: a Python frame */
    const char *function; /* NULL when unknown */
    const char *file;     /* source file, NULL when unknown */
    const char *module;   /* native: the executable or library */
    int line;             /* 0 when unknown */
} lw_frame_ref;

typedef enum {
    LW_FRAME_USER,       /* the user's code (or a path the user named) */
    LW_FRAME_PYLIB,      /* Python: installed packages, the standard library */
    LW_FRAME_NATIVE_LIB, /* native: installed libraries (libtorch, libstdc++, ...) */
    LW_FRAME_INTERP,     /* the Python interpreter */
    LW_FRAME_FFI,        /* libffi and ctypes' glue */
    LW_FRAME_LIBC,       /* libc, the dynamic loader, process and thread start-up */
    LW_FRAME_CUDA,       /* the CUDA libraries */
    LW_FRAME_LEAKWATCH,  /* leakwatch itself */
} lw_frame_class;

/* user_code: what the user counts as their own code beyond the default,
 * LEAKWATCH_USER_CODE's syntax: entries separated by ':' or ',', each a path
 * prefix (it has a '/') or a package or library name ("mypkg" matches
 * .../mypkg/... and libmypkg.so). NULL or "": none. */
lw_frame_class lw_frame_classify(const lw_frame_ref *f, const char *user_code);

/* 1 for the classes a readable stack folds by default: the interpreter,
 * libffi/ctypes, libc start-up, leakwatch and the CUDA libraries. */
int lw_frame_class_is_noise(lw_frame_class c);

/* The place to look in frames[0..n) (innermost first): its index, or -1 when
 * n is 0. *why (may be NULL) says which rule chose it: "user code",
 * "innermost Python frame", "innermost native frame", "innermost frame". */
int lw_where_pick(const lw_frame_ref *frames, size_t n, const char *user_code, const char **why);

/* "train.py:27 in train" (the file's base name), "keep_loss_history
 * (train_loop)" for a native frame without a source line. Returns out. */
char *lw_where_label(const lw_frame_ref *f, char *out, size_t n);

/* 1 when a and b are the same frame (function, file, line; module when
 * native): two sites with the same place to look. */
int lw_where_same_place(const lw_frame_ref *a, const lw_frame_ref *b);

/* The distinguishing frame. A shared allocation wrapper (stash() and
 * scratch() both calling device_alloc()) gives its callers' sites one place
 * to look; what tells a leaking site from a clean one is a frame further out.
 * self[0..n) with its place at index place, other[0..on) with its own at
 * oplace: -2 when the two places are not the same frame; -1 when no frame of
 * self tells it apart (beyond the place, self's frames of the rule that chose
 * the place are all other's too); else the index in self of the innermost
 * such frame that differs from other's at the same depth. Over several
 * others, the frame that tells self apart from all of them is the outermost
 * of these (the largest index). Never on the allocation path: reports,
 * warnings and the command call it. */
int lw_where_apart(const lw_frame_ref *self, size_t n, int place, const lw_frame_ref *other,
                   size_t on, int oplace, const char *user_code);

/* The same, in two steps for many sites: the indices (at most cap, into
 * out) of fr's frames beyond its place that may tell it apart, once per site;
 * then each pair compared on them. Two sites with the same place share its
 * class, hence the rule. */
size_t lw_where_telling(const lw_frame_ref *fr, size_t n, int place, const char *user_code,
                        int *out, size_t cap);
int lw_where_apart_told(const lw_frame_ref *self, int place, const int *st, size_t sn,
                        const lw_frame_ref *other, int oplace, const int *ot, size_t on);

/* "buffers.py:30 in stash (via device_alloc, buffers.py:13)": the
 * distinguishing frame f, by way of the place to look. Returns out. */
char *lw_where_label_via(const lw_frame_ref *f, const lw_frame_ref *place, char *out, size_t n);

#endif
