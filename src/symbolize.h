/* Turning instruction addresses into names, at report time only.
 *
 * Each unique address is looked up once per report and kept in a table that
 * lives as long as the report being written. */
#ifndef LW_SYMBOLIZE_H
#define LW_SYMBOLIZE_H

#include <stdint.h>

typedef struct {
    const char *function; /* NULL when unknown */
    const char *module;   /* path of the executable or library; NULL when unknown */
    uintptr_t offset;     /* address - module load address */
    const char *file;     /* source file, NULL when no debug information */
    int line;             /* 0 when unknown */
} lw_symbol;

typedef struct lw_symtab lw_symtab;

lw_symtab *lw_symtab_new(void);
/* ret is a return address (as captured); the call instruction before it is
 * what gets named. Never NULL unless out of memory. */
const lw_symbol *lw_symtab_lookup(lw_symtab *t, uintptr_t ret);
void lw_symtab_free(lw_symtab *t);

#endif
