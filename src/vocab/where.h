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

/* The same over many sites, the distinguishing frame of each of n: the
 * frames of site i are frames[off_i .. off_i + nframes[i]),
 * off_i the sum of nframes[0..i) (all sites' frames one after another),
 * innermost first; leak[i] nonzero when it leaks. Each site is compared with
 * every site of the other kind (leaking against not leaking, never two of
 * the same kind); out[i] gets the frame that tells it apart from all of
 * those sharing its place to look, the outermost of lw_where_apart's
 * answers, or -1 (no place; none of the other kind shares it; no frame of
 * its own tells them apart). Sites are taken in the given order, the most
 * relevant first. Every pair compared costs one from *budget (shared by the
 * calls of one report: LW_WHERE_APART_BUDGET). When it runs out the
 * comparisons stop: the site whose comparisons it cuts short, and every
 * later one with a site to compare, get -1 and keep their plain place (a
 * frame found against only some of the others may not tell the site apart
 * from the rest). Returns 0, or -1 out of memory (out all -1). The library's
 * reports and the command (under a LEAKWATCH_USER_CODE of its own) both
 * call it. */
#define LW_WHERE_APART_BUDGET 2000000L
int lw_where_apart_sites(const lw_frame_ref *frames, const size_t *nframes, const int *leak,
                         size_t n, const char *user_code, long *budget, int *out);

/* "buffers.py:30 in stash (via device_alloc, buffers.py:13)": the
 * distinguishing frame f, by way of the place to look. Returns out. */
char *lw_where_label_via(const lw_frame_ref *f, const lw_frame_ref *place, char *out, size_t n);

#endif
