/* SPDX-License-Identifier: Apache-2.0 */
#include "rank.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

/* The job's process group, once it said (lw_rank_set_group). */
static _Atomic long group_rank = -1, group_world = -1;

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

static void overlay_group(lw_rank_info *r);

static void from_env(lw_rank_info *r) {
    static const char *const rank[] = {"RANK",     "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                       "PMI_RANK", "PMIX_RANK",    NULL};
    static const char *const local[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", NULL};
    static const char *const world[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE",
                                        "PMI_SIZE", NULL};
    r->rank = first_of(rank);
    r->local_rank = first_of(local);
    r->world_size = first_of(world);
    r->source = r->rank >= 0 || r->world_size >= 0 ? LW_RANK_LAUNCHER : LW_RANK_NONE;
}

void lw_rank_get(lw_rank_info *r) {
    from_env(r);
    overlay_group(r);
}

static void overlay_group(lw_rank_info *r) {
    long gr = atomic_load(&group_rank), gw = atomic_load(&group_world);
    if (gr >= 0) {
        r->rank = gr;
        r->world_size = gw;
        r->source = LW_RANK_GROUP;
    }
}

void lw_rank_get_cached(lw_rank_info *r) {
    /* The launcher's variables do not change in a process: read once (the
     * environment is not read again on every message, where a thread of the
     * job could be changing it). */
    static lw_rank_info env;
    static atomic_int state; /* 0 unread, 1 reading, 2 read */
    int expected = 0;
    if (atomic_compare_exchange_strong(&state, &expected, 1)) {
        from_env(&env);
        atomic_store(&state, 2);
    }
    if (atomic_load(&state) == 2) {
        *r = env;
    } else {
        r->rank = r->local_rank = r->world_size = -1;
        r->source = LW_RANK_NONE;
    }
    overlay_group(r);
}

void lw_rank_set_group(long rank, long world_size) {
    if (rank < 0 || rank >= 100000000) {
        atomic_store(&group_rank, -1);
        return;
    }
    atomic_store(&group_world, world_size > rank && world_size < 100000000 ? world_size : -1);
    atomic_store(&group_rank, rank);
}

const char *lw_rank_source_name(const lw_rank_info *r) {
    return r->source == LW_RANK_GROUP      ? "process group"
           : r->source == LW_RANK_LAUNCHER ? "launcher"
                                           : NULL;
}
