/* Numbers as people read them, the same in every output of the library and
 * the command. */
#ifndef LW_FMT_H
#define LW_FMT_H

#include <stddef.h>

/* "1.5 GiB", "512 B" */
void lw_format_bytes(double bytes, char *out, size_t outlen);

#endif
