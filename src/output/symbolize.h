/* SPDX-License-Identifier: Apache-2.0 */
/* Turning instruction addresses into names, at report time only.
 *
 * Each unique address is looked up once for the life of the process: every
 * report, snapshot and label shares one cache, and each module's addr2line
 * process is started once and kept for the reports that follow. The cache
 * starts again when code is unloaded (dlclose), since other code may then
 * sit at the same addresses. Function names come from the
 * modules' own symbol tables (every function, not only exported ones), C++
 * names demangled; file:line and inlined frames from the debug information,
 * through addr2line (addr2line.c says why), unless LEAKWATCH_SOURCE_LINES=0. */
#ifndef LW_SYMBOLIZE_H
#define LW_SYMBOLIZE_H

#include <stdint.h>

typedef struct lw_symbol {
    const char *function; /* NULL when unknown */
    const char *module;   /* path of the executable or library; NULL when unknown */
    uintptr_t offset;     /* address - module load address */
    const char *file;     /* source file, NULL when no debug information */
    int line;             /* 0 when unknown */
    /* Functions the compiler inlined at this address, innermost first: frames
     * that exist only in the debug information, with the same module and
     * offset. The innermost one's file:line is where the code is; each other
     * one's is where it calls the one before. This frame itself is then the
     * function the code was compiled into, its file:line the place of the
     * outermost inlined call. A report writes them before this frame, each
     * marked "inlined": true. */
    const struct lw_symbol *inlined;
    int ninlined;
} lw_symbol;

typedef struct lw_symtab lw_symtab;

/* A report's view of the shared cache: its answers stay valid until
 * lw_symtab_free, even if code is unloaded meanwhile. */
lw_symtab *lw_symtab_new(void);
/* Names, modules and offsets only: never starts a process. For a one-line
 * label (a warning on stderr) that needs no source lines. */
lw_symtab *lw_symtab_new_names(void);
/* ret is a return address (as captured); the call instruction before it is
 * what gets named. Never NULL unless out of memory. */
const lw_symbol *lw_symtab_lookup(lw_symtab *t, uintptr_t ret);
void lw_symtab_free(lw_symtab *t);

/* Lets go of the shared cache: its addr2line processes end (once no report
 * holds it) and a later report starts again. After the last report (exit,
 * detach), so that no addr2line and its debug information outlive it. */
void lw_symtab_release(void);

/* In a forked child (report_file.c's fork handler): the parent's cache and
 * addr2line processes are left to the parent. */
void lw_symtab_after_fork_child(void);

#endif
