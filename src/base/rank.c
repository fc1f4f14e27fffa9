/* SPDX-License-Identifier: Apache-2.0 */
#include "rank.h"

#include <errno.h>
#include <stdlib.h>

/* The first of the variables that holds a whole number >= 0. */
static long first_of(const char *const *names) {
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (!*end && errno == 0 && x >= 0 && x < 100000000) return x;
    }
    return -1;
}

void lw_rank_get(lw_rank_info *r) {
    static const char *const rank[] = {"RANK",     "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                       "PMI_RANK", "PMIX_RANK",    NULL};
    static const char *const local[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", NULL};
    static const char *const world[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                                        "PMI_SIZE", NULL};
    r->rank = first_of(rank);
    r->local_rank = first_of(local);
    r->world_size = first_of(world);
}
